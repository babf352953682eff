//! Server-side apply of rendered objects, the inventory of what was applied,
//! and pruning of what a later revision no longer renders.
//!
//! [`Applier::apply`] validates the whole set before writing anything, then
//! applies CustomResourceDefinitions and Namespaces first, waits for the CRDs
//! to be Established, refreshes discovery and applies everything else.
//! [`Applier::prune`] deletes objects of a previous inventory that are not in
//! the current one, but only those labelled as ours.

mod discovery;
mod inventory;
mod prune;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use kube::discovery::ApiResource;
use serde_json::Value;

use crate::api::kustomization::{Inventory, InventoryEntry};
use crate::api::{NAME_LABEL, NAMESPACE_LABEL};

pub use discovery::Resolved;
pub use inventory::{ObjectRef, inventory_entry, parse_inventory_entry};
pub use prune::PruneReport;

use discovery::DiscoveryCache;

/// How to apply a set of objects.
#[derive(Clone, Debug)]
pub struct ApplyOptions {
    /// Field manager of server-side apply (`krmsync`).
    pub field_manager: String,
    /// Name of the owning Kustomization: value of label `krmsync.dev/name`.
    pub owner_name: String,
    /// Namespace of the owning Kustomization: value of label `krmsync.dev/namespace`.
    pub owner_namespace: String,
    /// Namespace of namespaced objects that have none.
    pub default_namespace: String,
    /// How long to wait for each applied CRD to become Established.
    pub crd_establish_timeout: Duration,
}

/// What applying an object did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Created,
    Configured,
    Unchanged,
}

/// One applied object.
#[derive(Clone, Debug, PartialEq)]
pub struct AppliedObject {
    pub entry: InventoryEntry,
    /// `[group/]Kind/[namespace/]name`, e.g. `apps/Deployment/prod/web`.
    pub display: String,
    pub action: Action,
}

/// The objects applied, in apply order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ApplyReport {
    pub objects: Vec<AppliedObject>,
}

impl ApplyReport {
    /// The inventory of the applied objects (sorted, deduplicated).
    pub fn inventory(&self) -> Inventory {
        let entries: BTreeSet<InventoryEntry> =
            self.objects.iter().map(|o| o.entry.clone()).collect();
        Inventory {
            entries: entries.into_iter().collect(),
        }
    }

    /// How many objects had this action.
    pub fn count(&self, a: Action) -> usize {
        self.objects.iter().filter(|o| o.action == a).count()
    }

    /// `2 created, 1 configured, 5 unchanged`.
    pub fn summary(&self) -> String {
        format!(
            "{} created, {} configured, {} unchanged",
            self.count(Action::Created),
            self.count(Action::Configured),
            self.count(Action::Unchanged)
        )
    }
}

/// Why an apply or prune failed. Each message names the object (or the
/// group-version) concerned.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The object lacks apiVersion, kind or metadata.name, or is malformed.
    #[error("{object}: invalid object: {reason}")]
    InvalidObject { object: String, reason: String },
    /// Neither the cluster nor a CRD of the same set defines the kind.
    #[error(
        "{object}: unknown kind: the cluster serves no {kind} in {api_version} and no CustomResourceDefinition of this set defines it"
    )]
    UnknownKind {
        object: String,
        api_version: String,
        kind: String,
    },
    /// Discovery failed (other than "not found").
    #[error("{0}")]
    Discovery(String),
    /// The API server refused a request about the object.
    #[error("{object}: {}", describe_kube_error(.source))]
    Api {
        object: String,
        #[source]
        source: kube::Error,
    },
    /// An applied CRD did not become Established in time.
    #[error("{object}: not Established within {}s{}", .timeout.as_secs_f64(), detail_suffix(.detail))]
    CrdNotEstablished {
        object: String,
        timeout: Duration,
        /// The last Established condition message, if any.
        detail: Option<String>,
    },
    /// Something else did not happen in time (e.g. the kinds of an
    /// Established CRD never appeared in discovery).
    #[error("timed out: {0}")]
    Timeout(String),
}

fn detail_suffix(d: &Option<String>) -> String {
    match d {
        Some(d) if !d.is_empty() => format!(": {d}"),
        _ => String::new(),
    }
}

/// A readable message for a kube error: `403 Forbidden: <message>` for API
/// errors, the error text otherwise.
pub(crate) fn describe_kube_error(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => format!("{} {}: {}", s.code, s.reason, s.message),
        other => other.to_string(),
    }
}

const CRD_GROUP: &str = "apiextensions.k8s.io";
const CRD_KIND: &str = "CustomResourceDefinition";

/// A kind defined by a CRD of the set being applied.
#[derive(Clone, Debug)]
struct CrdKind {
    group: String,
    versions: Vec<String>,
    kind: String,
    namespaced: bool,
}

/// One validated object, ready to apply.
#[derive(Clone, Debug)]
struct Planned {
    obj: Value,
    oref: ObjectRef,
    /// `None` until discovery knows the kind (CRD of the same set).
    resource: Option<ApiResource>,
}

/// Server-side applies in flight at once within a phase.
pub const APPLY_CONCURRENCY: usize = 8;

/// Applies and prunes through one client (possibly impersonating).
#[derive(Clone)]
pub struct Applier {
    client: Client,
    discovery: Arc<DiscoveryCache>,
    poll_interval: Duration,
}

impl Applier {
    /// An applier using `client` for every request (discovery included).
    pub fn new(client: Client) -> Applier {
        Applier {
            discovery: Arc::new(DiscoveryCache::new(client.clone())),
            client,
            poll_interval: Duration::from_millis(200),
        }
    }

    /// Validates all objects, then server-side applies them in phases (see
    /// the module documentation). Nothing is written when any object is
    /// invalid or of an unknown kind.
    pub async fn apply(
        &self,
        objects: Vec<Value>,
        opts: &ApplyOptions,
    ) -> Result<ApplyReport, ApplyError> {
        self.discovery.forget_missing();
        let plan = self.validate(objects, opts).await?;
        let (first, rest): (Vec<Planned>, Vec<Planned>) = plan
            .into_iter()
            .partition(|p| p.oref.is_crd() || p.oref.is_namespace());
        let mut report = ApplyReport::default();
        let crds: Vec<Planned> = first.iter().filter(|p| p.oref.is_crd()).cloned().collect();
        report.objects.extend(self.apply_phase(&first, opts).await?);
        let deadline = tokio::time::Instant::now() + opts.crd_establish_timeout;
        for crd in &crds {
            self.wait_established(crd, deadline, opts.crd_establish_timeout)
                .await?;
        }
        for crd in &crds {
            if let Some(k) = crd_kind(&crd.obj) {
                for v in &k.versions {
                    self.discovery.forget(&k.group, v);
                }
            }
        }
        let mut rest = rest;
        for p in rest.iter_mut() {
            if p.resource.is_none() {
                p.resource = Some(self.await_discovery(&p.oref, deadline).await?);
            }
        }
        report.objects.extend(self.apply_phase(&rest, opts).await?);
        Ok(report)
    }

    /// Deletes the entries of `previous` that are not in `current`; see
    /// [`prune::prune`].
    pub async fn prune(
        &self,
        previous: &Inventory,
        current: &Inventory,
        opts: &ApplyOptions,
    ) -> Result<PruneReport, ApplyError> {
        prune::prune(self, previous, current, opts).await
    }

    /// Checks every object and resolves its kind; writes nothing.
    async fn validate(
        &self,
        objects: Vec<Value>,
        opts: &ApplyOptions,
    ) -> Result<Vec<Planned>, ApplyError> {
        // Basic shape first, so that the CRDs of the set are known.
        let mut shaped = Vec::with_capacity(objects.len());
        for (i, obj) in objects.into_iter().enumerate() {
            let (group, version, kind, name) = shape(&obj, i)?;
            shaped.push((obj, group, version, kind, name));
        }
        let mut defined: Vec<CrdKind> = Vec::new();
        for (obj, group, _, kind, name) in &shaped {
            if group == CRD_GROUP && kind == CRD_KIND {
                match crd_kind(obj) {
                    Some(k) => defined.push(k),
                    None => {
                        return Err(ApplyError::InvalidObject {
                            object: format!("{CRD_GROUP} {CRD_KIND} {name}"),
                            reason: "spec.group, spec.names.kind, spec.names.plural and spec.versions[].name are required".into(),
                        });
                    }
                }
            }
        }
        let mut plan = Vec::with_capacity(shaped.len());
        let mut seen = HashSet::new();
        for (mut obj, group, version, kind, name) in shaped {
            let resolved = self.discovery.resolve(&group, &version, &kind).await?;
            let (namespaced, resource) = match resolved {
                Some(r) => (r.namespaced, Some(r.resource)),
                None => match defined
                    .iter()
                    .find(|d| d.group == group && d.kind == kind && d.versions.contains(&version))
                {
                    Some(d) => (d.namespaced, None),
                    None => {
                        let api_version = api_version(&group, &version);
                        let ns = obj["metadata"]["namespace"].as_str().unwrap_or_default();
                        let object = if ns.is_empty() {
                            format!("{api_version} {kind} {name}")
                        } else {
                            format!("{api_version} {kind} {ns}/{name}")
                        };
                        return Err(ApplyError::UnknownKind {
                            object,
                            api_version,
                            kind,
                        });
                    }
                },
            };
            let namespace = if namespaced {
                let ns = match obj["metadata"]["namespace"].as_str() {
                    Some(ns) if !ns.is_empty() => ns.to_string(),
                    _ => opts.default_namespace.clone(),
                };
                if ns.is_empty() {
                    return Err(ApplyError::InvalidObject {
                        object: format!("{} {kind} {name}", api_version(&group, &version)),
                        reason: "namespaced object without a namespace, and no default namespace"
                            .into(),
                    });
                }
                Some(ns)
            } else {
                None
            };
            let oref = ObjectRef {
                group,
                version,
                kind,
                namespace,
                name,
            };
            prepare(&mut obj, &oref, opts);
            if !seen.insert((
                oref.group.clone(),
                oref.kind.clone(),
                oref.namespace.clone(),
                oref.name.clone(),
            )) {
                return Err(ApplyError::InvalidObject {
                    object: oref.to_string(),
                    reason: "the object appears more than once in the set".into(),
                });
            }
            plan.push(Planned {
                obj,
                oref,
                resource,
            });
        }
        Ok(plan)
    }

    fn api_for(&self, resource: &ApiResource, oref: &ObjectRef) -> Api<DynamicObject> {
        match &oref.namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, resource),
            None => Api::all_with(self.client.clone(), resource),
        }
    }

    /// Applies a phase: the `resourceVersion`s of objects already ours come
    /// from one labelled LIST per kind and namespace (so a steady-state
    /// apply costs one request per object), then up to
    /// [`APPLY_CONCURRENCY`] server-side applies run at once; results keep
    /// the input order and the first error is returned.
    async fn apply_phase(
        &self,
        phase: &[Planned],
        opts: &ApplyOptions,
    ) -> Result<Vec<AppliedObject>, ApplyError> {
        let mut known: HashMap<(String, String, Option<String>), HashMap<String, String>> =
            HashMap::new();
        for p in phase {
            let Some(resource) = &p.resource else {
                continue;
            };
            let key = (
                resource.api_version.clone(),
                resource.plural.clone(),
                p.oref.namespace.clone(),
            );
            if known.contains_key(&key) {
                continue;
            }
            let api = self.api_for(resource, &p.oref);
            let lp = ListParams::default().labels(&format!(
                "{NAME_LABEL}={},{NAMESPACE_LABEL}={}",
                opts.owner_name, opts.owner_namespace
            ));
            let versions = match api.list_metadata(&lp).await {
                Ok(list) => list
                    .items
                    .into_iter()
                    .filter_map(|o| Some((o.metadata.name?, o.metadata.resource_version?)))
                    .collect(),
                // not listable with these rights: fall back to a GET per object
                Err(_) => HashMap::new(),
            };
            known.insert(key, versions);
        }
        // collected first: a lazy iterator of borrowing futures would make
        // the stream's Send bound unprovable for the controller's task
        let mut jobs = Vec::with_capacity(phase.len());
        for p in phase {
            let before = p.resource.as_ref().and_then(|r| {
                known
                    .get(&(
                        r.api_version.clone(),
                        r.plural.clone(),
                        p.oref.namespace.clone(),
                    ))
                    .and_then(|m| m.get(&p.oref.name).cloned())
            });
            jobs.push(self.apply_one(p, before, opts));
        }
        futures::stream::iter(jobs)
            .buffered(APPLY_CONCURRENCY)
            .try_collect()
            .await
    }

    /// Applies one object. `known_version`: its `resourceVersion` when a
    /// LIST already found it (otherwise a GET tells created from updated).
    async fn apply_one(
        &self,
        p: &Planned,
        known_version: Option<String>,
        opts: &ApplyOptions,
    ) -> Result<AppliedObject, ApplyError> {
        let api_err = |source| ApplyError::Api {
            object: p.oref.to_string(),
            source,
        };
        let resource = match &p.resource {
            Some(r) => r.clone(),
            None => {
                return Err(ApplyError::UnknownKind {
                    object: p.oref.to_string(),
                    api_version: p.oref.api_version(),
                    kind: p.oref.kind.clone(),
                });
            }
        };
        let api = self.api_for(&resource, &p.oref);
        let before = match known_version {
            Some(v) => Some(v),
            None => api
                .get_metadata_opt(&p.oref.name)
                .await
                .map_err(api_err)?
                .and_then(|o| o.metadata.resource_version),
        };
        let params = PatchParams::apply(&opts.field_manager).force();
        let after = match api
            .patch(&p.oref.name, &params, &Patch::Apply(&p.obj))
            .await
        {
            Ok(after) => after,
            Err(e) => {
                if matches!(&e, kube::Error::Api(s) if s.code == 404) {
                    // The kind may no longer be served: ask discovery again next time.
                    self.discovery.forget(&p.oref.group, &p.oref.version);
                }
                return Err(api_err(e));
            }
        };
        let action = match before {
            None => Action::Created,
            Some(b) if Some(&b) == after.metadata.resource_version.as_ref() => Action::Unchanged,
            Some(_) => Action::Configured,
        };
        Ok(AppliedObject {
            entry: p.oref.entry(),
            display: p.oref.display(),
            action,
        })
    }

    /// Polls the CRD until its Established condition is True.
    async fn wait_established(
        &self,
        crd: &Planned,
        deadline: tokio::time::Instant,
        timeout: Duration,
    ) -> Result<(), ApplyError> {
        let Some(resource) = &crd.resource else {
            return Err(ApplyError::UnknownKind {
                object: crd.oref.to_string(),
                api_version: crd.oref.api_version(),
                kind: crd.oref.kind.clone(),
            });
        };
        let api = self.api_for(resource, &crd.oref);
        loop {
            let current = api
                .get_opt(&crd.oref.name)
                .await
                .map_err(|source| ApplyError::Api {
                    object: crd.oref.to_string(),
                    source,
                })?;
            let cond = current.as_ref().and_then(|o| {
                o.data["status"]["conditions"]
                    .as_array()
                    .and_then(|cs| cs.iter().find(|c| c["type"] == "Established"))
                    .cloned()
            });
            if cond.as_ref().is_some_and(|c| c["status"] == "True") {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                let detail = match (&current, &cond) {
                    (None, _) => Some("the CustomResourceDefinition is gone".to_string()),
                    (_, Some(c)) => c["message"].as_str().map(str::to_string),
                    (_, None) => Some("no Established condition".to_string()),
                };
                return Err(ApplyError::CrdNotEstablished {
                    object: crd.oref.to_string(),
                    timeout,
                    detail,
                });
            }
            tokio::time::sleep(self.poll_interval).await;
        }
    }

    /// Waits (until `deadline`) for discovery to serve a kind whose CRD was
    /// just applied and Established.
    async fn await_discovery(
        &self,
        oref: &ObjectRef,
        deadline: tokio::time::Instant,
    ) -> Result<ApiResource, ApplyError> {
        loop {
            if let Some(r) = self
                .discovery
                .resolve(&oref.group, &oref.version, &oref.kind)
                .await?
            {
                return Ok(r.resource);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ApplyError::Timeout(format!(
                    "{oref}: the cluster does not serve {} {} although its CustomResourceDefinition is Established",
                    oref.api_version(),
                    oref.kind
                )));
            }
            tokio::time::sleep(self.poll_interval).await;
            self.discovery.forget(&oref.group, &oref.version);
        }
    }

    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    pub(crate) fn discovery(&self) -> &DiscoveryCache {
        &self.discovery
    }
}

fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// Checks apiVersion, kind and metadata.name; returns (group, version, kind, name).
fn shape(obj: &Value, index: usize) -> Result<(String, String, String, String), ApplyError> {
    let av = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = obj
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let object = || {
        let mut s = format!("object #{}", index + 1);
        if !kind.is_empty() || !name.is_empty() {
            s.push_str(&format!(" ({} {} {})", av, kind, name));
        }
        s
    };
    let invalid = |reason: &str| ApplyError::InvalidObject {
        object: object(),
        reason: reason.to_string(),
    };
    if !obj.is_object() {
        return Err(invalid("not a mapping"));
    }
    if av.is_empty() {
        return Err(invalid("apiVersion is missing"));
    }
    if kind.is_empty() {
        return Err(invalid("kind is missing"));
    }
    if name.is_empty() {
        return Err(invalid("metadata.name is missing"));
    }
    let (group, version) = match av.split_once('/') {
        Some((g, v)) if !g.is_empty() && !v.is_empty() && !v.contains('/') => (g, v),
        Some(_) => return Err(invalid(&format!("apiVersion '{av}' is malformed"))),
        None => ("", av),
    };
    if let Some(ns) = obj.get("metadata").and_then(|m| m.get("namespace"))
        && !(ns.is_string() || ns.is_null())
    {
        return Err(invalid("metadata.namespace is not a string"));
    }
    if let Some(l) = obj.get("metadata").and_then(|m| m.get("labels"))
        && !(l.is_object() || l.is_null())
    {
        return Err(invalid("metadata.labels is not a mapping"));
    }
    Ok((
        group.to_string(),
        version.to_string(),
        kind.to_string(),
        name.to_string(),
    ))
}

/// The kind a CRD object defines, if it is well-formed.
fn crd_kind(obj: &Value) -> Option<CrdKind> {
    let spec = obj.get("spec")?;
    let group = spec.get("group")?.as_str()?.to_string();
    let names = spec.get("names")?;
    let kind = names.get("kind")?.as_str()?.to_string();
    let plural = names.get("plural")?.as_str()?;
    let versions: Vec<String> = spec
        .get("versions")?
        .as_array()?
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) != Some(false))
        .filter_map(|v| v.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
    if group.is_empty() || kind.is_empty() || plural.is_empty() || versions.is_empty() {
        return None;
    }
    let namespaced = spec.get("scope").and_then(Value::as_str) != Some("Cluster");
    Some(CrdKind {
        group,
        versions,
        kind,
        namespaced,
    })
}

/// Sets the namespace (or drops it for cluster-scoped kinds), adds the owner
/// labels and drops server-owned metadata that would make the apply a
/// precondition (resourceVersion, uid) or be refused (managedFields).
fn prepare(obj: &mut Value, oref: &ObjectRef, opts: &ApplyOptions) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let meta = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()));
    if !meta.is_object() {
        *meta = Value::Object(Default::default());
    }
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    match &oref.namespace {
        Some(ns) => {
            meta.insert("namespace".into(), Value::String(ns.clone()));
        }
        None => {
            meta.remove("namespace");
        }
    }
    for f in [
        "resourceVersion",
        "uid",
        "creationTimestamp",
        "generation",
        "managedFields",
        "selfLink",
        "deletionTimestamp",
    ] {
        meta.remove(f);
    }
    let labels = meta
        .entry("labels")
        .or_insert_with(|| Value::Object(Default::default()));
    if !labels.is_object() {
        *labels = Value::Object(Default::default());
    }
    if let Some(labels) = labels.as_object_mut() {
        labels.insert(NAME_LABEL.into(), Value::String(opts.owner_name.clone()));
        labels.insert(
            NAMESPACE_LABEL.into(),
            Value::String(opts.owner_namespace.clone()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opts() -> ApplyOptions {
        ApplyOptions {
            field_manager: "krmsync".into(),
            owner_name: "app".into(),
            owner_namespace: "flux".into(),
            default_namespace: "prod".into(),
            crd_establish_timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn shape_checks_required_fields() {
        let ok =
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}});
        assert_eq!(
            shape(&ok, 0).unwrap(),
            (
                "apps".into(),
                "v1".into(),
                "Deployment".into(),
                "web".into()
            )
        );
        let core = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert_eq!(shape(&core, 0).unwrap().0, "");
        for (bad, why) in [
            (
                json!({"kind": "X", "metadata": {"name": "a"}}),
                "apiVersion",
            ),
            (
                json!({"apiVersion": "v1", "metadata": {"name": "a"}}),
                "kind",
            ),
            (
                json!({"apiVersion": "v1", "kind": "X", "metadata": {}}),
                "metadata.name",
            ),
            (
                json!({"apiVersion": "a/b/c", "kind": "X", "metadata": {"name": "a"}}),
                "malformed",
            ),
            (json!("text"), "mapping"),
        ] {
            let e = shape(&bad, 2).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
            assert!(e.starts_with("object #3"), "{e}");
        }
    }

    #[test]
    fn prepare_sets_labels_and_namespace() {
        let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "c", "resourceVersion": "7", "labels": {"a": "b"}}});
        let oref = ObjectRef {
            group: "".into(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("prod".into()),
            name: "c".into(),
        };
        prepare(&mut obj, &oref, &opts());
        assert_eq!(obj["metadata"]["namespace"], "prod");
        assert_eq!(obj["metadata"]["labels"]["a"], "b");
        assert_eq!(obj["metadata"]["labels"][NAME_LABEL], "app");
        assert_eq!(obj["metadata"]["labels"][NAMESPACE_LABEL], "flux");
        assert!(obj["metadata"].get("resourceVersion").is_none());

        let mut ns = json!({"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": "x", "namespace": "oops"}});
        let oref = ObjectRef {
            namespace: None,
            kind: "Namespace".into(),
            name: "x".into(),
            ..oref
        };
        prepare(&mut ns, &oref, &opts());
        assert!(ns["metadata"].get("namespace").is_none());
    }

    #[test]
    fn report_summary_and_inventory() {
        let e = |id: &str| InventoryEntry {
            id: id.into(),
            v: "v1".into(),
        };
        let report = ApplyReport {
            objects: vec![
                AppliedObject {
                    entry: e("b_x__ConfigMap"),
                    display: "ConfigMap/b/x".into(),
                    action: Action::Created,
                },
                AppliedObject {
                    entry: e("a_x__ConfigMap"),
                    display: "ConfigMap/a/x".into(),
                    action: Action::Unchanged,
                },
                AppliedObject {
                    entry: e("a_x__ConfigMap"),
                    display: "ConfigMap/a/x".into(),
                    action: Action::Unchanged,
                },
                AppliedObject {
                    entry: e("c_x__ConfigMap"),
                    display: "ConfigMap/c/x".into(),
                    action: Action::Configured,
                },
            ],
        };
        assert_eq!(report.summary(), "1 created, 1 configured, 2 unchanged");
        assert_eq!(
            report.inventory().entries,
            vec![
                e("a_x__ConfigMap"),
                e("b_x__ConfigMap"),
                e("c_x__ConfigMap")
            ]
        );
    }

    #[test]
    fn crd_kind_reads_spec() {
        let crd = json!({"spec": {"group": "example.com", "scope": "Cluster",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": true}, {"name": "v0", "served": false}]}});
        let k = crd_kind(&crd).unwrap();
        assert_eq!(k.group, "example.com");
        assert_eq!(k.versions, vec!["v1".to_string()]);
        assert!(!k.namespaced);
        assert!(crd_kind(&json!({"spec": {"group": "g"}})).is_none());
    }
}
