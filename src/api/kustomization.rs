//! The `Kustomization` resource: a localized bundle to render and apply.

// The `#[kube(printcolumn(...))]` entries repeat `type_ = "string"` by design.
#![allow(clippy::duplicated_attributes)]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use kube::core::Duration;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Fetch a localized kustomization bundle, render it in-cluster (no network),
/// server-side apply the result and prune what left.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "krmsync.dev",
    version = "v1alpha1",
    kind = "Kustomization",
    plural = "kustomizations",
    namespaced,
    status = "KustomizationStatus",
    shortname = "ksy",
    category = "krmsync",
    derive = "PartialEq",
    doc = "A localized kustomization bundle that krmsync fetches, renders in-cluster, server-side applies and prunes.",
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Revision",
        type_ = "string",
        json_path = ".status.lastAppliedRevision"
    ),
    printcolumn(
        name = "Resources",
        type_ = "integer",
        json_path = ".status.resourceCount"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    printcolumn(
        name = "Status",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].message"
    ),
    printcolumn(
        name = "Rendered",
        type_ = "string",
        priority = "1",
        json_path = ".status.conditions[?(@.type==\"Rendered\")].status"
    ),
    printcolumn(
        name = "Applied",
        type_ = "string",
        priority = "1",
        json_path = ".status.conditions[?(@.type==\"Applied\")].status"
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!has(self.interval) || duration(self.interval) >= duration('10s')",
     "message": "spec.interval must be at least 10s"},
    {"rule": "!has(self.retryInterval) || duration(self.retryInterval) >= duration('5s')",
     "message": "spec.retryInterval must be at least 5s"},
    {"rule": "!has(self.timeout) || duration(self.timeout) >= duration('5s')",
     "message": "spec.timeout must be at least 5s"}
]))]
pub struct KustomizationSpec {
    /// Where the localized bundle comes from: exactly one of `git`, `http`
    /// or `bundle`.
    pub source: Source,
    /// Directory of the kustomization inside the bundle (default: its root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// How often to fetch, render and apply (a Go duration, e.g. `10m`; at
    /// least `10s`).
    #[serde(default = "default_interval")]
    #[schemars(schema_with = "duration_schema")]
    pub interval: Duration,
    /// How soon to retry after a failure (default: `interval`; at least `5s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "duration_schema")]
    pub retry_interval: Option<Duration>,
    /// Time limit of one fetch, render and apply (default: `interval`, at
    /// most 10m; at least `5s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "duration_schema")]
    pub timeout: Option<Duration>,
    /// Stop reconciling (nothing is fetched, applied or pruned).
    #[serde(default)]
    pub suspend: bool,
    /// Delete objects that a previous revision applied and the current one
    /// no longer renders (only objects labelled as ours, only after a fully
    /// successful apply).
    #[serde(default = "default_true")]
    pub prune: bool,
    /// What happens to the applied objects when this Kustomization is
    /// deleted. Either way, only objects krmsync created are ever deleted:
    /// objects it adopted (they existed before) and objects annotated
    /// `krmsync.dev/prune: disabled` are released (left in place, owner
    /// labels removed).
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
    /// Also delete Namespaces and CustomResourceDefinitions that krmsync
    /// created, when they leave the render or on deletion (deleting a
    /// Namespace deletes everything in it, deleting a CRD every custom
    /// resource of it). Default false: they are released instead. A revision
    /// that would delete every Namespace this Kustomization applied (two or
    /// more) is refused unless the Kustomization is annotated
    /// `krmsync.dev/allow-namespace-mass-deletion: "true"`.
    #[serde(
        default,
        rename = "deleteNamespacesAndCRDs",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub delete_namespaces_and_crds: bool,
    /// Namespace set on every namespaced rendered object (overrides the bundle's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_namespace: Option<String>,
    /// Fetch, apply, prune and store as this ServiceAccount of this
    /// namespace (impersonated); its RBAC bounds what this Kustomization can
    /// read and write. Default: the controller's `--default-service-account`
    /// if set; otherwise the controller's own identity, which a controller
    /// run with `--require-service-account` refuses
    /// (`Ready=False`, reason `ServiceAccountRequired`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Names of the (cluster-scoped) `Catalog`s whose KRM functions this
    /// Kustomization may use. Each must exist, be Ready and allow this namespace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub catalogs: Vec<String>,
}

/// Smallest accepted `spec.interval` (also enforced by the CRD schema).
pub const MIN_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);
/// Smallest accepted `spec.retryInterval`.
pub const MIN_RETRY_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);
/// Smallest accepted `spec.timeout`.
pub const MIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

fn default_interval() -> Duration {
    Duration::from(std::time::Duration::from_secs(600))
}

fn default_true() -> bool {
    true
}

fn duration_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "pattern": "^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
    })
}

/// What to do with applied objects when the Kustomization is deleted.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum DeletionPolicy {
    /// Delete every object of the inventory (the default).
    #[default]
    Delete,
    /// Leave the objects in place.
    Orphan,
}

/// The source of a bundle: exactly one field is set.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "[has(self.git), has(self.http), has(self.bundle)].filter(x, x).size() == 1",
    "message": "exactly one of git, http or bundle must be set"
}]))]
pub struct Source {
    /// A git repository (`https://`; `http://` and `file://` only when the
    /// controller runs with `--allow-insecure-sources`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitSource>,
    /// A `.tar.gz` bundle served over HTTP(S), verified by its sha256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpSource>,
    /// A `.tar.gz` bundle stored in a ConfigMap or Secret of this namespace
    /// (see `krmsync bundle push`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<BundleSource>,
}

/// A git repository.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GitSource {
    /// Repository URL: `https://` (`http://` and `file://` only when the
    /// controller runs with `--allow-insecure-sources`).
    pub url: String,
    /// What to check out (default: the remote's default branch).
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<GitRef>,
    /// Secret with `username` and `password`, or `bearerToken`, for HTTPS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// Secret whose `ca.crt` is the certificate authority of the git server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_secret_ref: Option<LocalObjectReference>,
}

/// A git reference: one of branch, tag or commit.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "[has(self.branch), has(self.tag), has(self.commit)].filter(x, x).size() <= 1",
    "message": "at most one of branch, tag or commit may be set"
}]))]
pub struct GitRef {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// A full 40-character commit SHA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

/// A bundle on an HTTP(S) server.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HttpSource {
    /// URL of a `.tar.gz` bundle.
    pub url: String,
    /// Hex sha256 of the bundle; a mismatch is refused before unpacking.
    pub sha256: String,
}

/// A bundle stored in the cluster.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "has(self.configMapRef) != has(self.secretRef)",
    "message": "exactly one of configMapRef or secretRef must be set"
}]))]
pub struct BundleSource {
    /// ConfigMap holding the bundle under `key` (in `binaryData`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map_ref: Option<LocalObjectReference>,
    /// Secret holding the bundle under `key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalObjectReference>,
    /// Key of the `.tar.gz` data (default `bundle.tar.gz`).
    #[serde(default = "default_bundle_key")]
    pub key: String,
}

/// The key `krmsync bundle push` writes.
pub const DEFAULT_BUNDLE_KEY: &str = "bundle.tar.gz";

fn default_bundle_key() -> String {
    DEFAULT_BUNDLE_KEY.to_string()
}

/// A reference to an object in the same namespace.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct LocalObjectReference {
    pub name: String,
}

/// What the controller observed and did.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KustomizationStatus {
    /// The generation of the spec the conditions describe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready`, `Stalled`, `Rendered`, `Applied` (a `Reconciling` left by an
    /// older version is removed by the next report).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Revision of the last fetch (git commit SHA, or `sha256:<digest>` of a bundle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_attempted_revision: Option<String>,
    /// Revision of the last successful apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_revision: Option<String>,
    /// `sha256:<hex>` of the rendered YAML stream last applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rendered_digest: Option<String>,
    /// Number of objects applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_count: Option<i64>,
    /// The objects applied by the last successful reconcile (used to prune).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inventory: Option<Inventory>,
    /// Objects this Kustomization held that another one took over
    /// explicitly (`krmsync.dev/adopt`) and that it still renders: it skips
    /// them (reporting them as handed over) instead of being refused for
    /// them. Another Kustomization that renders such an object without ever
    /// having held it is refused (`OwnershipConflict`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handed_over: Option<Inventory>,
    /// Where the rendered manifests of the last successful apply are stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rendered: Option<RenderedRef>,
    /// Duration of the last render that changed the output (or the first),
    /// e.g. `0.042s`. Renders of an unchanged output (after a restart, say)
    /// do not update it: that would be a status write each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_render_duration: Option<String>,
    /// Duration of the last apply and prune.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_apply_duration: Option<String>,
    /// The last `krmsync.dev/reconcile-at` annotation value handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_handled_reconcile_at: Option<String>,
    /// The `attempt` of the `krmsync.dev/pending-inventory` annotation that
    /// `inventory` accounts for. A pending inventory of another attempt was
    /// recorded by a reconcile that did not report: its objects count as
    /// part of the inventory until a later status write settles them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_attempt: Option<String>,
}

/// The objects a reconcile is about to apply that `status.inventory` does
/// not list yet, recorded in the Kustomization's
/// `krmsync.dev/pending-inventory` annotation (in the same write that adds
/// the finalizer, on a first apply) before anything is applied. Until a
/// status write names its `attempt` in `status.settledAttempt`, the next
/// reconcile and the deletion treat these objects as part of the inventory,
/// so a reconcile that dies midway leaves nothing behind that a later
/// revision no longer renders.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
pub struct PendingInventory {
    /// Unique to the reconcile that wrote it.
    pub attempt: String,
    pub entries: Vec<InventoryEntry>,
}

/// The applied objects.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct Inventory {
    pub entries: Vec<InventoryEntry>,
}

impl Inventory {
    /// `self ∪ other`, sorted by id (`other`'s version wins; a fingerprint
    /// only `self` has stays).
    pub fn union(&self, other: &Inventory) -> Inventory {
        let mut by_id: std::collections::BTreeMap<String, InventoryEntry> =
            std::collections::BTreeMap::new();
        for e in self.entries.iter().chain(&other.entries) {
            let mut e = e.clone();
            // an entry without a fingerprint (planned) keeps the recorded one
            if e.h.is_none() {
                e.h = by_id.get(&e.id).and_then(|old| old.h.clone());
            }
            by_id.insert(e.id.clone(), e);
        }
        Inventory {
            entries: by_id.into_values().collect(),
        }
    }

    /// Whether every entry of `other` is in `self` (same id and version).
    pub fn covers(&self, other: &Inventory) -> bool {
        let mine: std::collections::HashSet<(&str, &str)> = self
            .entries
            .iter()
            .map(|e| (e.id.as_str(), e.v.as_str()))
            .collect();
        other
            .entries
            .iter()
            .all(|e| mine.contains(&(e.id.as_str(), e.v.as_str())))
    }
}

/// One applied object: `id` is `<namespace>_<name>_<group>_<kind>` (the
/// namespace is empty for cluster-scoped objects), `v` its API version,
/// `h` its fingerprint.
#[derive(
    Deserialize, Serialize, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, JsonSchema,
)]
pub struct InventoryEntry {
    pub id: String,
    pub v: String,
    /// Fingerprint of what krmsync last applied to the object and of its
    /// managed fields right after: when the live object still gives it,
    /// nothing changed and the object is not applied again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h: Option<String>,
}

/// The Secrets holding the rendered manifests (gzip, split below 1 MiB).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RenderedRef {
    /// Names of the Secrets, in order; concatenated they form the gzip stream.
    pub secrets: Vec<String>,
    /// Revision that was rendered.
    pub revision: String,
    /// `sha256:<hex>` of the uncompressed YAML stream.
    pub digest: String,
}

impl Kustomization {
    /// The pending inventory (see [`PendingInventory`]) no status write
    /// settled yet; an error names the annotation when it cannot be read.
    pub fn unsettled_pending_inventory(&self) -> Result<Option<PendingInventory>, String> {
        let Some(raw) = self
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(super::PENDING_INVENTORY_ANNOTATION))
        else {
            return Ok(None);
        };
        let pending: PendingInventory = serde_json::from_str(raw).map_err(|e| {
            format!(
                "annotation {}: {e} (krmsync writes it; if it was edited by hand, remove \
                 it: objects it lists that no later revision renders are then left in place)",
                super::PENDING_INVENTORY_ANNOTATION
            )
        })?;
        let settled = self
            .status
            .as_ref()
            .and_then(|s| s.settled_attempt.as_deref());
        Ok((settled != Some(pending.attempt.as_str())).then_some(pending))
    }

    /// `status.inventory` with the unsettled pending inventory added (what
    /// prune and deletion must consider ours). A pending inventory that
    /// cannot be read is left out.
    pub fn recorded_inventory(&self) -> Inventory {
        let inv = self
            .status
            .as_ref()
            .and_then(|s| s.inventory.clone())
            .unwrap_or_default();
        match self.unsettled_pending_inventory() {
            Ok(Some(p)) => inv.union(&Inventory { entries: p.entries }),
            _ => inv,
        }
    }

    /// The namespace (a Kustomization is always namespaced).
    pub fn ns(&self) -> String {
        self.metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_string())
    }

    /// The name.
    pub fn name_str(&self) -> String {
        self.metadata.name.clone().unwrap_or_default()
    }

    /// Checks what the schema cannot: exactly one source, usable URLs and
    /// a relative `path`. The message names the field.
    pub fn validate(&self) -> Result<(), String> {
        let s = &self.spec.source;
        let set = [s.git.is_some(), s.http.is_some(), s.bundle.is_some()]
            .iter()
            .filter(|x| **x)
            .count();
        if set != 1 {
            return Err(format!(
                "spec.source: exactly one of git, http or bundle must be set ({set} are)"
            ));
        }
        if let Some(g) = &s.git {
            if !(g.url.starts_with("https://")
                || g.url.starts_with("http://")
                || g.url.starts_with("file://"))
            {
                return Err(format!(
                    "spec.source.git.url: '{}' must start with https://, http:// or file://",
                    g.url
                ));
            }
            if let Some(r) = &g.reference {
                let n = [r.branch.is_some(), r.tag.is_some(), r.commit.is_some()]
                    .iter()
                    .filter(|x| **x)
                    .count();
                if n > 1 {
                    return Err("spec.source.git.ref: set only one of branch, tag or commit".into());
                }
                if let Some(c) = &r.commit
                    && !(c.len() == 40 && c.chars().all(|ch| ch.is_ascii_hexdigit()))
                {
                    return Err(format!(
                        "spec.source.git.ref.commit: '{c}' is not a full 40-character commit SHA"
                    ));
                }
            }
        }
        if let Some(h) = &s.http {
            if !(h.url.starts_with("https://") || h.url.starts_with("http://")) {
                return Err(format!(
                    "spec.source.http.url: '{}' must start with https:// or http://",
                    h.url
                ));
            }
            if !(h.sha256.len() == 64 && h.sha256.chars().all(|ch| ch.is_ascii_hexdigit())) {
                return Err(format!(
                    "spec.source.http.sha256: '{}' is not a 64-character hex sha256",
                    h.sha256
                ));
            }
        }
        if let Some(b) = &s.bundle
            && b.config_map_ref.is_some() == b.secret_ref.is_some()
        {
            return Err(
                "spec.source.bundle: exactly one of configMapRef or secretRef must be set".into(),
            );
        }
        if let Some(p) = &self.spec.path {
            let path = std::path::Path::new(p);
            if path.is_absolute()
                || path
                    .components()
                    .any(|c| matches!(c, std::path::Component::ParentDir))
            {
                return Err(format!(
                    "spec.path: '{p}' must be relative to the bundle root, without '..'"
                ));
            }
        }
        for (field, value, min) in [
            ("spec.interval", Some(self.spec.interval), MIN_INTERVAL),
            (
                "spec.retryInterval",
                self.spec.retry_interval,
                MIN_RETRY_INTERVAL,
            ),
            ("spec.timeout", self.spec.timeout, MIN_TIMEOUT),
        ] {
            if let Some(v) = value
                && (v.is_negative() || std::time::Duration::from(v) < min)
            {
                return Err(format!(
                    "{field}: must be at least {}s (got {v})",
                    min.as_secs()
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(extra: serde_json::Value) -> Kustomization {
        let mut spec = serde_json::json!({"source": {"bundle": {"configMapRef": {"name": "b"}}}});
        if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                s.insert(k.clone(), v.clone());
            }
        }
        let spec: KustomizationSpec = serde_json::from_value(spec).unwrap();
        Kustomization::new("k", spec)
    }

    #[test]
    fn durations_below_the_minimums_are_refused() {
        for (extra, field) in [
            (serde_json::json!({"interval": "1ms"}), "spec.interval"),
            (serde_json::json!({"interval": "9s"}), "spec.interval"),
            (
                serde_json::json!({"retryInterval": "0s"}),
                "spec.retryInterval",
            ),
            (serde_json::json!({"timeout": "0s"}), "spec.timeout"),
            (serde_json::json!({"timeout": "4s"}), "spec.timeout"),
        ] {
            let err = with(extra.clone()).validate().unwrap_err();
            assert!(err.starts_with(field), "{extra}: {err}");
        }
        for extra in [
            serde_json::json!({"interval": "10s", "retryInterval": "5s", "timeout": "5s"}),
            serde_json::json!({}),
        ] {
            assert_eq!(with(extra.clone()).validate(), Ok(()), "{extra}");
        }
    }

    #[test]
    fn the_schema_carries_the_minimums() {
        let crd =
            serde_json::to_string(&<Kustomization as kube::CustomResourceExt>::crd()).unwrap();
        for rule in ["duration('10s')", "duration('5s')"] {
            assert!(crd.contains(rule), "{rule} missing from the CRD");
        }
    }
}
