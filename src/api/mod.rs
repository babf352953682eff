//! The custom resources krmsync serves (`krmsync.dev/v1alpha1`).
//!
//! The CRD manifests in `crds/` are generated from these types
//! (`krmsync crd`); a test fails when they drift.

pub mod catalog;
pub mod condition;
pub mod kustomization;

pub use catalog::{Catalog, CatalogSpec, CatalogStatus};
pub use condition::{ConditionType, Reason};
pub use kustomization::{Kustomization, KustomizationSpec, KustomizationStatus};

use kube::CustomResourceExt;

/// The API group of every krmsync resource.
pub const GROUP: &str = "krmsync.dev";
/// The field manager used for server-side apply and status writes.
pub const FIELD_MANAGER: &str = "krmsync";
/// Label naming the Kustomization that applied an object.
pub const NAME_LABEL: &str = "krmsync.dev/name";
/// Label naming the namespace of the Kustomization that applied an object.
pub const NAMESPACE_LABEL: &str = "krmsync.dev/namespace";
/// Annotation requesting an immediate reconcile (any new value).
pub const RECONCILE_AT_ANNOTATION: &str = "krmsync.dev/reconcile-at";
/// Finalizer that prunes (or orphans) a Kustomization's objects on deletion.
pub const FINALIZER: &str = "krmsync.dev/finalizer";

/// The CRD manifests, as one YAML stream (the content of `crds/`), printed
/// the way `kustomize build` prints (sorted keys, stable bytes).
pub fn crd_files() -> Result<Vec<(&'static str, String)>, String> {
    let docs = [
        ("krmsync.dev_kustomizations.yaml", Kustomization::crd()),
        ("krmsync.dev_catalogs.yaml", Catalog::crd()),
    ];
    docs.into_iter()
        .map(|(file, crd)| {
            let json = serde_json::to_value(&crd).map_err(|e| format!("{file}: {e}"))?;
            let mut out = String::new();
            crate::kustomize::yaml::write_document(
                &mut out,
                &crate::kustomize::yaml::Value::from(&json),
            )
            .map_err(|e| format!("{file}: {}", e.0))?;
            Ok((file, out))
        })
        .collect()
}
