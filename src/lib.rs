//! krmsync: a Kubernetes config-sync controller and a kustomize-compatible
//! render engine.
//!
//! * [`kustomize`]: the render engine (`krmsync build`), pure and
//!   network-free.
//! * [`api`]: the `Kustomization` and `Catalog` custom resources.
//! * [`apply`]: server-side apply, inventory and prune.
//! * [`cli`]: the command-line interface.
//! * [`localize`]: `krmsync localize`, making a kustomization self-contained.
//! * [`controller`]: the reconcilers, leader election, metrics.
//! * [`krm`]: the KRM function runtime (exec/container functions, legacy
//!   exec plugins) behind the engine's function hook.
//! * [`source`]: fetching git, HTTP and in-cluster bundles into a workspace.

pub mod api;
pub mod apply;
pub mod catalog;
pub mod cli;
pub mod controller;
pub mod krm;
pub mod kustomize;
pub mod localize;
pub mod source;
