//! Inventory entries: `<namespace>_<name>_<group>_<kind>` plus the version.

use std::fmt;

use crate::api::kustomization::InventoryEntry;

/// A reference to one object, as recorded in an inventory.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef {
    /// API group, empty for the core group.
    pub group: String,
    pub version: String,
    pub kind: String,
    /// `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectRef {
    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The inventory entry of this object.
    pub fn entry(&self) -> InventoryEntry {
        inventory_entry(
            &self.group,
            &self.version,
            &self.kind,
            self.namespace.as_deref(),
            &self.name,
        )
    }

    /// Short form for logs and status: `[group/]Kind/[namespace/]name`,
    /// e.g. `apps/Deployment/prod/web`, `Namespace/prod`.
    pub fn display(&self) -> String {
        let mut s = String::new();
        if !self.group.is_empty() {
            s.push_str(&self.group);
            s.push('/');
        }
        s.push_str(&self.kind);
        s.push('/');
        if let Some(ns) = &self.namespace {
            s.push_str(ns);
            s.push('/');
        }
        s.push_str(&self.name);
        s
    }

    pub(crate) fn is_crd(&self) -> bool {
        self.group == "apiextensions.k8s.io" && self.kind == "CustomResourceDefinition"
    }

    pub(crate) fn is_namespace(&self) -> bool {
        self.group.is_empty() && self.kind == "Namespace"
    }
}

/// `apps/v1 Deployment prod/web`, `v1 Namespace prod`: how errors name objects.
impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(
                f,
                "{} {} {}/{}",
                self.api_version(),
                self.kind,
                ns,
                self.name
            ),
            None => write!(f, "{} {} {}", self.api_version(), self.kind, self.name),
        }
    }
}

/// The inventory entry of an object: id `<namespace>_<name>_<group>_<kind>`
/// (empty namespace for cluster-scoped objects, empty group for the core
/// group), `v` the version.
pub fn inventory_entry(
    group: &str,
    version: &str,
    kind: &str,
    namespace: Option<&str>,
    name: &str,
) -> InventoryEntry {
    InventoryEntry {
        id: format!(
            "{}_{}_{}_{}",
            namespace.unwrap_or_default(),
            name,
            group,
            kind
        ),
        v: version.to_string(),
        h: None,
    }
}

/// Parses an inventory entry. Namespaces, groups and kinds cannot contain
/// `_`, so the name is everything between the first and the last two `_`
/// (some kinds allow `_` in names). `None` when the id is malformed.
pub fn parse_inventory_entry(e: &InventoryEntry) -> Option<ObjectRef> {
    let (namespace, rest) = e.id.split_once('_')?;
    let (rest, kind) = rest.rsplit_once('_')?;
    let (name, group) = rest.rsplit_once('_')?;
    if name.is_empty() || kind.is_empty() || e.v.is_empty() || e.v.contains('/') {
        return None;
    }
    Some(ObjectRef {
        group: group.to_string(),
        version: e.v.clone(),
        kind: kind.to_string(),
        namespace: (!namespace.is_empty()).then(|| namespace.to_string()),
        name: name.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, v: &str) -> InventoryEntry {
        InventoryEntry {
            id: id.into(),
            v: v.into(),
            h: None,
        }
    }

    #[test]
    fn formats_namespaced_and_cluster_scoped() {
        assert_eq!(
            inventory_entry("apps", "v1", "Deployment", Some("prod"), "web"),
            entry("prod_web_apps_Deployment", "v1")
        );
        assert_eq!(
            inventory_entry("", "v1", "Namespace", None, "prod"),
            entry("_prod__Namespace", "v1")
        );
        assert_eq!(
            inventory_entry("", "v1", "ConfigMap", Some("prod"), "cfg"),
            entry("prod_cfg__ConfigMap", "v1")
        );
    }

    #[test]
    fn round_trips() {
        let refs = [
            ObjectRef {
                group: "apps".into(),
                version: "v1".into(),
                kind: "Deployment".into(),
                namespace: Some("prod".into()),
                name: "web".into(),
            },
            ObjectRef {
                group: "".into(),
                version: "v1".into(),
                kind: "Namespace".into(),
                namespace: None,
                name: "prod".into(),
            },
            ObjectRef {
                group: "rbac.authorization.k8s.io".into(),
                version: "v1".into(),
                kind: "ClusterRole".into(),
                namespace: None,
                name: "system:odd_name_with_underscores".into(),
            },
            ObjectRef {
                group: "apiextensions.k8s.io".into(),
                version: "v1".into(),
                kind: "CustomResourceDefinition".into(),
                namespace: None,
                name: "widgets.example.com".into(),
            },
        ];
        for r in refs {
            let e = r.entry();
            assert_eq!(parse_inventory_entry(&e).as_ref(), Some(&r), "{e:?}");
        }
    }

    #[test]
    fn parses_fields() {
        let r = parse_inventory_entry(&entry("prod_web_apps_Deployment", "v1")).unwrap();
        assert_eq!(r.group, "apps");
        assert_eq!(r.version, "v1");
        assert_eq!(r.kind, "Deployment");
        assert_eq!(r.namespace.as_deref(), Some("prod"));
        assert_eq!(r.name, "web");
        assert_eq!(r.api_version(), "apps/v1");
        assert_eq!(r.display(), "apps/Deployment/prod/web");
        assert_eq!(r.to_string(), "apps/v1 Deployment prod/web");

        let ns = parse_inventory_entry(&entry("_prod__Namespace", "v1")).unwrap();
        assert_eq!(ns.namespace, None);
        assert_eq!(ns.group, "");
        assert_eq!(ns.api_version(), "v1");
        assert_eq!(ns.display(), "Namespace/prod");
        assert_eq!(ns.to_string(), "v1 Namespace prod");
        assert!(ns.is_namespace());
    }

    #[test]
    fn rejects_malformed() {
        for (id, v) in [
            ("", "v1"),
            ("prod_web", "v1"),
            ("prod_web_apps", "v1"),
            ("prod__apps_Deployment", "v1"),
            ("prod_web_apps_", "v1"),
            ("prod_web_apps_Deployment", ""),
            ("prod_web_apps_Deployment", "apps/v1"),
        ] {
            assert_eq!(parse_inventory_entry(&entry(id, v)), None, "{id} {v}");
        }
    }
}
