//! The in-cluster controller: reconciles `Kustomization`s and `Catalog`s.
//!
//! * [`kustomization`]: the fetch, render, apply, prune and store pipeline;
//! * [`catalog`]: validation and status of `Catalog`s;
//! * [`context`]: what reconciles share (clients, workspace, caches, metrics);
//! * [`status`]: the one path status is written through;
//! * [`storage`]: rendered manifests in Secrets;
//! * [`events`]: Events about Kustomizations;
//! * [`render`]: the engine, confined to a fetched bundle;
//! * [`functions`]: KRM functions approved by Catalogs, sandboxed, metered;
//! * [`drift`]: self-healing watches of the applied kinds;
//! * [`leader`]: Lease-based leader election;
//! * [`metrics`]: Prometheus metrics and health endpoints;
//! * [`run`]: wiring it together (`krmsync controller`).

pub mod catalog;
pub mod context;
pub mod drift;
pub mod error;
pub mod events;
pub mod functions;
pub mod kustomization;
pub mod leader;
pub mod metrics;
pub mod render;
pub mod run;
pub mod status;
pub mod storage;

pub use context::{Context, Settings};
pub use error::{Error, Failure};
