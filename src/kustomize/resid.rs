//! Resource identity: group/version/kind plus name and namespace.

use std::fmt;

/// Group, version and kind of a resource. An empty group is the core group.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl Gvk {
    pub fn new(group: &str, version: &str, kind: &str) -> Gvk {
        Gvk {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
        }
    }

    /// Splits an `apiVersion` (`apps/v1`, `v1`) into group and version.
    pub fn from_api_version(api_version: &str, kind: &str) -> Gvk {
        let (group, version) = match api_version.rsplit_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        Gvk::new(group, version, kind)
    }

    /// `apps/v1` or `v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// kustomize's string form: `group_version_kind` with `~G`/`~V`/`~K`
    /// standing for empty parts.
    pub fn legacy_string(&self) -> String {
        let g = if self.group.is_empty() {
            "~G"
        } else {
            &self.group
        };
        let v = if self.version.is_empty() {
            "~V"
        } else {
            &self.version
        };
        let k = if self.kind.is_empty() {
            "~K"
        } else {
            &self.kind
        };
        format!("{g}_{v}_{k}")
    }

    /// kyaml's `Gvk.String()`: `Kind.version.group`, with `[noKind]`,
    /// `[noVer]` and `[noGrp]` for empty parts.
    pub fn go_string(&self) -> String {
        let or = |s: &str, none: &str| {
            if s.is_empty() {
                none.to_string()
            } else {
                s.to_string()
            }
        };
        format!(
            "{}.{}.{}",
            or(&self.kind, "[noKind]"),
            or(&self.version, "[noVer]"),
            or(&self.group, "[noGrp]")
        )
    }

    /// True when `self` (a selector) matches `other`: empty fields match anything.
    pub fn selects(&self, other: &Gvk) -> bool {
        (self.group.is_empty() || self.group == other.group)
            && (self.version.is_empty() || self.version == other.version)
            && (self.kind.is_empty() || self.kind == other.kind)
    }
}

impl fmt::Display for Gvk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.legacy_string())
    }
}

/// Full identity of a resource.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ResId {
    pub gvk: Gvk,
    pub name: String,
    /// Empty for cluster-scoped resources and for the default namespace.
    pub namespace: String,
}

impl ResId {
    pub fn new(gvk: Gvk, name: &str, namespace: &str) -> ResId {
        ResId {
            gvk,
            name: name.to_string(),
            namespace: namespace.to_string(),
        }
    }

    /// Namespace with `default` folded to empty, as kustomize compares ids.
    pub fn effective_namespace(&self) -> &str {
        if self.namespace == "default" {
            ""
        } else {
            &self.namespace
        }
    }

    /// True when both ids denote the same object (`default` namespace == none).
    pub fn same_object(&self, other: &ResId) -> bool {
        self.gvk == other.gvk
            && self.name == other.name
            && self.effective_namespace() == other.effective_namespace()
    }

    /// kustomize's `ResId.String()`: `Kind.version.group/name.namespace`
    /// with `[noGrp]`/`[noVer]`/`[noNs]` for empty parts.
    pub fn kustomize_string(&self) -> String {
        let ns = if self.namespace.is_empty() {
            "[noNs]"
        } else {
            &self.namespace
        };
        format!("{}/{}.{ns}", self.gvk.go_string(), self.name)
    }
}

impl fmt::Display for ResId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.kustomize_string())
    }
}
