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
/// Annotation with the full `<namespace>/<name>` of the owning Kustomization
/// (the owner labels hold a hashed form of names over 63 characters).
pub const OWNER_ANNOTATION: &str = "krmsync.dev/owner";
/// Annotation set on objects krmsync created (rather than adopted): the
/// `<namespace>/<name>` of the Kustomization that created them. Only such
/// objects are ever deleted by prune or deletion.
pub const CREATED_BY_ANNOTATION: &str = "krmsync.dev/created-by";
/// Annotation on a rendered object: `"true"` takes the object over from
/// another Kustomization that still exists (an explicit hand-over).
pub const ADOPT_ANNOTATION: &str = "krmsync.dev/adopt";
/// Annotation on a rendered or live object: `"disabled"` means prune and
/// deletion never delete it (it is released instead).
pub const PRUNE_ANNOTATION: &str = "krmsync.dev/prune";
/// Annotation krmsync sets on a Kustomization before it applies objects
/// that `status.inventory` does not list yet: a JSON
/// [`kustomization::PendingInventory`] (crash consistency; see there).
pub const PENDING_INVENTORY_ANNOTATION: &str = "krmsync.dev/pending-inventory";
/// Annotation on a Kustomization acknowledging that the next revision may
/// delete every Namespace it applied (two or more) at once.
pub const ALLOW_NAMESPACE_MASS_DELETION_ANNOTATION: &str =
    "krmsync.dev/allow-namespace-mass-deletion";

/// The value of a `krmsync.dev/name` (or `krmsync.dev/rendered-for`) label
/// for a Kustomization name: the name itself when it fits a label value (63
/// characters), otherwise its first 46 characters and 16 hex digits of its
/// sha256, so every name maps to a valid, practically unique label value.
pub fn owner_label_value(name: &str) -> String {
    if name.len() <= 63 {
        return name.to_string();
    }
    let hash = crate::source::sha256_hex(name.as_bytes());
    let prefix: String = name.chars().take(46).collect();
    let prefix = prefix.trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
    format!("{prefix}-{}", &hash[..16])
}

/// `<namespace>/<name>`: how annotations and messages name a Kustomization.
pub fn owner_id(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_label_values_are_valid_and_distinct() {
        assert_eq!(owner_label_value("app"), "app");
        let exact = "a".repeat(63);
        assert_eq!(owner_label_value(&exact), exact);
        let long1 = format!("{}-one", "x".repeat(70));
        let long2 = format!("{}-two", "x".repeat(70));
        let (v1, v2) = (owner_label_value(&long1), owner_label_value(&long2));
        assert_ne!(v1, v2);
        for v in [&v1, &v2] {
            assert!(v.len() <= 63, "{v}");
            assert!(v.starts_with("xxxx") && v.chars().last().unwrap().is_ascii_alphanumeric());
            assert!(
                v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            );
        }
        // a prefix ending in '-' or '.' is trimmed so the value stays valid
        let dashy = format!("{}-.{}", "b".repeat(44), "c".repeat(40));
        let v = owner_label_value(&dashy);
        assert!(!v.contains("-.-") && !v.contains("--"), "{v}");
        assert_eq!(owner_label_value(&dashy), v, "deterministic");
    }
}
