//! Server-side apply of rendered objects, the inventory of what was applied,
//! and pruning of what a later revision no longer renders.
//!
//! Applying is split in two so that the caller can act between them:
//!
//! 1. [`Applier::plan`] validates the whole set and observes, without
//!    writing, what the cluster holds for every object: absent, already
//!    ours, unowned (it will be *adopted*), or owned by another
//!    Kustomization (see [`Live`]). The caller decides what to do about
//!    foreign owners and records the plan's inventory before any write.
//! 2. [`Applier::apply_plan`] sends a server-side dry-run of every object
//!    first (admission and schema errors surface before anything is
//!    written), then applies CustomResourceDefinitions and Namespaces,
//!    waits for the CRDs to be Established, refreshes discovery and applies
//!    everything else. When a request fails, no new one starts and the ones
//!    in flight are awaited: none is abandoned half-way.
//!
//! Every applied object carries the owner labels (`krmsync.dev/name`, a
//! hashed form for names over 63 characters, and `krmsync.dev/namespace`)
//! and the annotation `krmsync.dev/owner: <namespace>/<name>`. Objects that
//! did not exist before krmsync applied them also carry
//! `krmsync.dev/created-by`; only those are ever deleted by
//! [`Applier::prune`] (adopted ones are released).

mod defaults;
mod discovery;
mod inert;
mod inventory;
mod prune;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams, ObjectMeta, Patch, PatchParams};
use kube::discovery::ApiResource;
use serde_json::Value;

use crate::api::kustomization::{Inventory, InventoryEntry};
use crate::api::{
    CREATED_BY_ANNOTATION, NAME_LABEL, NAMESPACE_LABEL, OWNER_ANNOTATION, owner_id,
    owner_label_value,
};

pub use discovery::{DiscoveryCache, Resolved};
pub use inventory::{ObjectRef, inventory_entry, parse_inventory_entry};
pub use prune::PruneReport;

/// How to apply and prune a set of objects.
#[derive(Clone, Debug)]
pub struct ApplyOptions {
    /// Field manager of server-side apply (`krmsync`).
    pub field_manager: String,
    /// Name of the owning Kustomization (label `krmsync.dev/name` holds
    /// [`owner_label_value`] of it).
    pub owner_name: String,
    /// Namespace of the owning Kustomization: value of label `krmsync.dev/namespace`.
    pub owner_namespace: String,
    /// Namespace of namespaced objects that have none.
    pub default_namespace: String,
    /// How long to wait for each applied CRD to become Established.
    pub crd_establish_timeout: Duration,
    /// Prune may delete Namespaces and CRDs that krmsync created (otherwise
    /// they are released).
    pub delete_namespaces_and_crds: bool,
    /// Prune may delete every Namespace of the previous inventory at once
    /// (when there are two or more).
    pub allow_namespace_mass_deletion: bool,
}

impl ApplyOptions {
    /// Options for the Kustomization `namespace/name`: field manager
    /// `krmsync`, objects without a namespace go to `namespace`, CRDs get
    /// 60 s to be Established, Namespaces and CRDs are never deleted.
    pub fn new(namespace: &str, name: &str) -> ApplyOptions {
        ApplyOptions {
            field_manager: crate::api::FIELD_MANAGER.to_string(),
            owner_name: name.to_string(),
            owner_namespace: namespace.to_string(),
            default_namespace: namespace.to_string(),
            crd_establish_timeout: Duration::from_secs(60),
            delete_namespaces_and_crds: false,
            allow_namespace_mass_deletion: false,
        }
    }

    /// `<namespace>/<name>` of the owner.
    pub fn owner_id(&self) -> String {
        owner_id(&self.owner_namespace, &self.owner_name)
    }

    /// The label selector matching the owner's objects.
    pub fn selector(&self) -> String {
        format!(
            "{NAME_LABEL}={},{NAMESPACE_LABEL}={}",
            owner_label_value(&self.owner_name),
            self.owner_namespace
        )
    }

    /// Who owns an object, judged by its metadata.
    pub fn ownership(&self, meta: &ObjectMeta) -> Ownership {
        let labels = meta.labels.clone().unwrap_or_default();
        let annotations = meta.annotations.clone().unwrap_or_default();
        let (Some(name), Some(ns)) = (labels.get(NAME_LABEL), labels.get(NAMESPACE_LABEL)) else {
            return Ownership::None;
        };
        let full = annotations
            .get(OWNER_ANNOTATION)
            .cloned()
            .unwrap_or_else(|| owner_id(ns, name));
        if *name == owner_label_value(&self.owner_name)
            && *ns == self.owner_namespace
            && full == self.owner_id()
        {
            Ownership::Ours {
                created: annotations.get(CREATED_BY_ANNOTATION) == Some(&self.owner_id()),
            }
        } else {
            let (namespace, name) = match full.split_once('/') {
                Some((n, m)) => (n.to_string(), m.to_string()),
                None => (ns.clone(), name.clone()),
            };
            Ownership::Other { namespace, name }
        }
    }
}

/// Who owns a live object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ownership {
    /// No krmsync owner labels.
    None,
    /// Ours; `created`: krmsync created it (rather than adopted it).
    Ours { created: bool },
    /// Another Kustomization's.
    Other { namespace: String, name: String },
}

/// What the cluster held for a planned object before any write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Live {
    /// It does not exist: applying creates it.
    Absent,
    /// It exists and is ours (`created`: we created it). `fields`: a
    /// digest of krmsync's own `managedFields` entry (see [`AppliedMemory`]),
    /// empty when it has none.
    Ours {
        created: bool,
        resource_version: String,
        fields: String,
    },
    /// It exists without an owner: applying adopts it.
    Unowned,
    /// It exists and another Kustomization owns it. `handed_over`: that
    /// Kustomization took it over explicitly (the live object carries
    /// `krmsync.dev/adopt: "true"`). `created`: that Kustomization created
    /// it (its `krmsync.dev/created-by` names it), so one that takes it
    /// over explicitly may delete it too.
    Foreign {
        owner_namespace: String,
        owner_name: String,
        handed_over: bool,
        created: bool,
    },
    /// Its kind is defined by a CRD of the same set and not served yet.
    Unknown,
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
    /// It existed without being ours and is now ours (adopted, not created).
    pub adopted: bool,
    /// See [`AppliedMemory`]; `None` when the API server returned no
    /// managed fields of ours.
    pub fingerprint: Option<String>,
}

/// The objects applied, in apply order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ApplyReport {
    pub objects: Vec<AppliedObject>,
}

impl ApplyReport {
    /// The inventory of the applied objects (sorted, deduplicated), with
    /// each object's fingerprint.
    pub fn inventory(&self) -> Inventory {
        let entries: BTreeSet<InventoryEntry> = self
            .objects
            .iter()
            .map(|o| InventoryEntry {
                h: o.fingerprint.clone(),
                ..o.entry.clone()
            })
            .collect();
        Inventory {
            entries: entries.into_iter().collect(),
        }
    }

    /// How many objects had this action.
    pub fn count(&self, a: Action) -> usize {
        self.objects.iter().filter(|o| o.action == a).count()
    }

    /// `2 created, 1 configured, 5 unchanged` (and `, 1 adopted`).
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} created, {} configured, {} unchanged",
            self.count(Action::Created),
            self.count(Action::Configured),
            self.count(Action::Unchanged)
        );
        let adopted = self.objects.iter().filter(|o| o.adopted).count();
        if adopted > 0 {
            s.push_str(&format!(", {adopted} adopted"));
        }
        s
    }
}

/// An object of the plan that another Kustomization owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignObject {
    /// How errors name the object (`apps/v1 Deployment prod/web`).
    pub object: String,
    pub owner_namespace: String,
    pub owner_name: String,
    /// The rendered object asks to take it over (`krmsync.dev/adopt: "true"`).
    pub adopt: bool,
    /// Its owner took it over explicitly (the live object asks to be adopted).
    pub handed_over: bool,
    /// Its inventory entry.
    pub entry: InventoryEntry,
}

/// A validated set of objects with what the cluster held for each; nothing
/// has been written. See [`Applier::plan`].
#[derive(Clone, Debug, Default)]
pub struct Plan {
    items: Vec<Planned>,
}

impl Plan {
    /// The inventory the plan will have applied when it succeeds.
    pub fn inventory(&self) -> Inventory {
        let entries: BTreeSet<InventoryEntry> = self.items.iter().map(|p| p.oref.entry()).collect();
        Inventory {
            entries: entries.into_iter().collect(),
        }
    }

    /// Objects owned by other Kustomizations.
    pub fn foreign(&self) -> Vec<ForeignObject> {
        self.items.iter().filter_map(foreign_of).collect()
    }

    /// Removes the objects that another Kustomization took over explicitly
    /// from this one (`held(entry)`: this one held the object) and that this
    /// render does not ask to take back, while that Kustomization exists
    /// (`owner_alive(namespace, name)`): they are neither applied nor kept in
    /// the inventory. Returns them. Objects handed over to a Kustomization
    /// that is gone stay (adopted back); objects this one never held stay
    /// foreign (see [`Plan::foreign`]).
    pub fn take_handed_over(
        &mut self,
        owner_alive: impl Fn(&str, &str) -> bool,
        held: impl Fn(&InventoryEntry) -> bool,
    ) -> Vec<ForeignObject> {
        let taken = |p: &Planned| match &p.live {
            Live::Foreign {
                owner_namespace,
                owner_name,
                handed_over: true,
                ..
            } => {
                !asks_adoption(&p.obj)
                    && held(&p.oref.entry())
                    && owner_alive(owner_namespace, owner_name)
            }
            _ => false,
        };
        let gone: Vec<ForeignObject> = self
            .items
            .iter()
            .filter(|p| taken(p))
            .filter_map(foreign_of)
            .collect();
        self.items.retain(|p| !taken(p));
        gone
    }

    /// The Kustomizations (namespace, name) owning objects of the plan.
    pub fn foreign_owners(&self) -> BTreeSet<(String, String)> {
        self.items
            .iter()
            .filter_map(|p| match &p.live {
                Live::Foreign {
                    owner_namespace,
                    owner_name,
                    ..
                } => Some((owner_namespace.clone(), owner_name.clone())),
                _ => None,
            })
            .collect()
    }
}

/// What krmsync last applied to each object of a set: for each inventory
/// id, a *fingerprint* of the applied configuration (its hash) together
/// with krmsync's own `managedFields` entry right after the apply (its
/// field set, API version and time).
///
/// An object is neither dry-run nor applied again when its desired
/// configuration and its live entry give the recorded fingerprint. That
/// holds exactly while nobody took any of our fields: server-side apply
/// moves a field to whoever changes its value (an update, or a forced
/// apply), and our entry's time changes whenever our own apply changes a
/// value. Writes by others to fields we do not own (a Deployment's status,
/// a scaler's replicas) leave it alone, so they no longer cost an apply.
/// A deleted object is absent and applied as usual.
///
/// Kept in memory between reconciles and persisted in the inventory
/// (`status.inventory.entries[].h`), from which a restarted controller
/// seeds it ([`AppliedMemory::from_inventory`]): a restart costs one
/// LIST per kind and namespace, not an apply per object.
#[derive(Clone, Debug, Default)]
pub struct AppliedMemory {
    entries: HashMap<String, String>,
}

impl AppliedMemory {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The fingerprints recorded in an inventory.
    pub fn from_inventory(inventory: &Inventory) -> AppliedMemory {
        AppliedMemory {
            entries: inventory
                .entries
                .iter()
                .filter_map(|e| Some((e.id.clone(), e.h.clone()?)))
                .collect(),
        }
    }
}

/// sha256 of an object's JSON.
fn config_hash(obj: &Value) -> String {
    crate::source::sha256_hex(&serde_json::to_vec(obj).unwrap_or_default())
}

/// Digest of the `managedFields` entry of `manager`'s apply (no
/// subresource): API version, time and field set. Empty when there is none.
fn owned_fields(meta: &ObjectMeta, manager: &str) -> String {
    let Some(entry) = meta.managed_fields.iter().flatten().find(|m| {
        m.manager.as_deref() == Some(manager)
            && m.operation.as_deref() == Some("Apply")
            && m.subresource.as_deref().unwrap_or_default().is_empty()
    }) else {
        return String::new();
    };
    let text = serde_json::to_string(&(
        &entry.api_version,
        &entry.time,
        &entry.fields_v1.as_ref().map(|f| &f.0),
    ))
    .unwrap_or_default();
    crate::source::sha256_hex(text.as_bytes())
}

/// The fingerprint of a configuration (its [`config_hash`]) applied with
/// our field set `fields` ([`owned_fields`]); `None` without one.
fn fingerprint(config_hash: &str, fields: &str) -> Option<String> {
    if fields.is_empty() {
        return None;
    }
    let digest = crate::source::sha256_hex(format!("{config_hash}\0{fields}").as_bytes());
    Some(digest[..32].to_string())
}

/// The planned object as a [`ForeignObject`], when another Kustomization owns it.
fn foreign_of(p: &Planned) -> Option<ForeignObject> {
    match &p.live {
        Live::Foreign {
            owner_namespace,
            owner_name,
            handed_over,
            ..
        } => Some(ForeignObject {
            object: p.oref.to_string(),
            owner_namespace: owner_namespace.clone(),
            owner_name: owner_name.clone(),
            adopt: asks_adoption(&p.obj),
            handed_over: *handed_over,
            entry: p.oref.entry(),
        }),
        _ => None,
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
    /// The server-side dry-run refused objects: nothing was written.
    #[error("server-side dry-run refused {count} object(s), nothing was applied: {first}")]
    DryRun { count: usize, first: String },
    /// The object belongs to another Kustomization.
    #[error("{object} belongs to Kustomization {owner}")]
    OwnedElsewhere { object: String, owner: String },
    /// Prune would delete every Namespace of the previous revision.
    #[error("{0}")]
    DeletionRefused(String),
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

impl ApplyError {
    /// Whether the API server answered 401 or 403 (the identity may not act).
    pub fn is_forbidden(&self) -> bool {
        matches!(self, ApplyError::Api { source: kube::Error::Api(s), .. } if s.code == 401 || s.code == 403)
    }
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
    live: Live,
    /// The live object as observed (for comparison with its dry-run).
    current: Option<Value>,
}

/// Server-side applies in flight at once within a phase.
pub const APPLY_CONCURRENCY: usize = 8;

/// Runs `jobs` (lazy futures) with at most [`APPLY_CONCURRENCY`] in flight.
/// After the first error no further job starts, but every job that started
/// runs to completion: nothing is abandoned mid-request. Returns the
/// results in input order, or the first error.
async fn run_all<T, F>(jobs: Vec<F>) -> Result<Vec<T>, ApplyError>
where
    F: std::future::Future<Output = Result<T, ApplyError>>,
{
    let stop = AtomicBool::new(false);
    let stop = &stop;
    let guarded: Vec<_> = jobs
        .into_iter()
        .map(|job| async move {
            if stop.load(Ordering::SeqCst) {
                return None;
            }
            let r = job.await;
            if r.is_err() {
                stop.store(true, Ordering::SeqCst);
            }
            Some(r)
        })
        .collect();
    let results: Vec<Option<Result<T, ApplyError>>> = futures::stream::iter(guarded)
        .buffered(APPLY_CONCURRENCY)
        .collect()
        .await;
    results.into_iter().flatten().collect()
}

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
        Applier::with_discovery(client.clone(), Arc::new(DiscoveryCache::new(client)))
    }

    /// An applier using `client` for its requests and `discovery` (shared
    /// with other appliers, see [`DiscoveryCache::with_max_age`]) for kinds.
    pub fn with_discovery(client: Client, discovery: Arc<DiscoveryCache>) -> Applier {
        Applier {
            discovery,
            client,
            poll_interval: Duration::from_millis(200),
        }
    }

    /// [`Applier::plan`] then [`Applier::apply_plan`], refusing objects owned
    /// by another Kustomization unless they ask to be adopted.
    pub async fn apply(
        &self,
        objects: Vec<Value>,
        opts: &ApplyOptions,
    ) -> Result<ApplyReport, ApplyError> {
        let mut plan = self.plan(objects, opts, None).await?;
        // without a way to tell whether owners exist or what was held: every
        // owner is alive and every handed-over object was ours
        plan.take_handed_over(|_, _| true, |_| true);
        if let Some(f) = plan
            .foreign()
            .into_iter()
            .find(|f| !f.adopt && !f.handed_over)
        {
            return Err(ApplyError::OwnedElsewhere {
                object: f.object,
                owner: owner_id(&f.owner_namespace, &f.owner_name),
            });
        }
        self.apply_plan(plan, opts, &mut AppliedMemory::default())
            .await
    }

    /// Validates all objects, resolves their kinds and observes what the
    /// cluster holds for each (one labelled LIST per kind and namespace for
    /// the objects already ours, then an unlabelled LIST of metadata per
    /// kind and namespace with several others, or a GET for each other
    /// one). Writes nothing. `previous`, the inventory recorded by the last
    /// reconcile, saves the labelled LIST of the kinds and namespaces it
    /// has nothing of (a first apply).
    pub async fn plan(
        &self,
        objects: Vec<Value>,
        opts: &ApplyOptions,
        previous: Option<&Inventory>,
    ) -> Result<Plan, ApplyError> {
        self.discovery.forget_missing();
        let mut items = self.validate(objects, opts).await?;
        let recorded: Option<HashSet<(String, String, Option<String>)>> = previous.map(|inv| {
            inv.entries
                .iter()
                .filter_map(parse_inventory_entry)
                .map(|r| (r.group, r.kind, r.namespace))
                .collect()
        });
        self.observe(&mut items, opts, recorded.as_ref()).await?;
        Ok(Plan { items })
    }

    /// Applies a plan (see the module documentation). Nothing is written
    /// when any object fails validation or the dry-run. `memory` (see
    /// [`AppliedMemory`]) is read and updated.
    pub async fn apply_plan(
        &self,
        plan: Plan,
        opts: &ApplyOptions,
        memory: &mut AppliedMemory,
    ) -> Result<ApplyReport, ApplyError> {
        let mut items = plan.items;
        for p in items.iter_mut() {
            mark_ownership(p, opts);
        }
        let previous = std::mem::take(&mut memory.entries);
        let recorded: Mutex<HashMap<String, String>> = Mutex::new(HashMap::new());
        // unchanged since krmsync applied them: no dry-run, no apply
        let mut unchanged: HashSet<String> = HashSet::new();
        for p in &items {
            if let Live::Ours { fields, .. } = &p.live
                && let Some(f) = fingerprint(&config_hash(&p.obj), fields)
                && previous.get(&p.oref.entry().id) == Some(&f)
            {
                unchanged.insert(p.oref.entry().id);
            }
        }
        // New ConfigMaps and Secrets of the owner's own namespace: checked
        // here instead of dry-run (see `inert`), and created before anything
        // else of their phase. Elsewhere (where the owner's rights are
        // least likely to reach) they are dry-run with the rest.
        let mut fresh_inert: HashSet<String> = HashSet::new();
        for p in &items {
            if p.live == Live::Absent
                && inert::is_inert(&p.oref)
                && p.oref.namespace.as_deref() == Some(opts.default_namespace.as_str())
            {
                inert::validate(&p.obj).map_err(|reason| ApplyError::InvalidObject {
                    object: p.oref.to_string(),
                    reason,
                })?;
                fresh_inert.insert(p.oref.entry().id);
            }
        }
        // Namespaces this set creates: objects in them cannot be dry-run yet.
        let new_namespaces: HashSet<String> = items
            .iter()
            .filter(|p| p.oref.is_namespace() && p.live == Live::Absent)
            .map(|p| p.oref.name.clone())
            .collect();
        let dry_now = |p: &Planned| {
            p.resource.is_some()
                && p.oref
                    .namespace
                    .as_ref()
                    .is_none_or(|ns| !new_namespaces.contains(ns))
        };
        let (now, later): (Vec<&Planned>, Vec<&Planned>) = items
            .iter()
            .filter(|p| {
                let id = p.oref.entry().id;
                !unchanged.contains(&id) && !fresh_inert.contains(&id)
            })
            .partition(|p| dry_now(p));
        unchanged.extend(self.dry_run(&now, opts).await?);
        // dry-run once the first phase created their namespaces and kinds
        let deferred: HashSet<String> = later.iter().map(|p| p.oref.entry().id).collect();

        let (first, rest): (Vec<Planned>, Vec<Planned>) = items
            .into_iter()
            .partition(|p| p.oref.is_crd() || p.oref.is_namespace());
        let mut report = ApplyReport::default();
        let crds: Vec<Planned> = first.iter().filter(|p| p.oref.is_crd()).cloned().collect();
        let first_phase = self.apply_phase(&first, &unchanged, &recorded, opts).await;
        memory.entries = recorded.lock().unwrap_or_else(|e| e.into_inner()).clone();
        report.objects.extend(first_phase?);
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
        let deferred: Vec<&Planned> = rest
            .iter()
            .filter(|p| deferred.contains(&p.oref.entry().id))
            .collect();
        unchanged.extend(self.dry_run(&deferred, opts).await?);
        // a refused ConfigMap or Secret stops the reconcile before anything
        // else of the phase is written
        let (inert_first, rest): (Vec<Planned>, Vec<Planned>) = rest
            .into_iter()
            .partition(|p| fresh_inert.contains(&p.oref.entry().id));
        let mut second_phase = self
            .apply_phase(&inert_first, &unchanged, &recorded, opts)
            .await;
        if let Ok(done) = &mut second_phase {
            let others = self.apply_phase(&rest, &unchanged, &recorded, opts).await;
            match others {
                Ok(more) => done.extend(more),
                Err(e) => second_phase = Err(e),
            }
        }
        memory.entries = recorded.into_inner().unwrap_or_else(|e| e.into_inner());
        report.objects.extend(second_phase?);
        Ok(report)
    }

    /// Deletes (or releases) the entries of `previous` that are not in
    /// `current`; see [`prune::prune`].
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
            defaults::fill_port_protocols(&mut obj, &oref);
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
            let live = if resource.is_some() {
                Live::Absent
            } else {
                Live::Unknown
            };
            plan.push(Planned {
                obj,
                oref,
                resource,
                live,
                current: None,
            });
        }
        Ok(plan)
    }

    /// Fills in [`Planned::live`]: one labelled LIST of metadata per kind and
    /// namespace finds the objects already ours; every other object is
    /// looked up with a GET (at most [`APPLY_CONCURRENCY`] at once).
    async fn observe(
        &self,
        items: &mut [Planned],
        opts: &ApplyOptions,
        recorded: Option<&HashSet<(String, String, Option<String>)>>,
    ) -> Result<(), ApplyError> {
        let mut ours: HashMap<(String, String, Option<String>), HashMap<String, DynamicObject>> =
            HashMap::new();
        for p in items.iter() {
            let Some(resource) = &p.resource else {
                continue;
            };
            let key = (
                resource.api_version.clone(),
                resource.plural.clone(),
                p.oref.namespace.clone(),
            );
            if ours.contains_key(&key) {
                continue;
            }
            let kind_key = (
                p.oref.group.clone(),
                p.oref.kind.clone(),
                p.oref.namespace.clone(),
            );
            if recorded.is_some_and(|r| !r.contains(&kind_key)) {
                // nothing of this kind and namespace was ever ours
                ours.insert(key, HashMap::new());
                continue;
            }
            let api = self.api_for(resource, &p.oref);
            let lp = ListParams::default().labels(&opts.selector());
            let found = match api.list(&lp).await {
                Ok(list) => list
                    .items
                    .into_iter()
                    .filter_map(|o| Some((o.metadata.name.clone()?, o)))
                    .collect(),
                // not listable with these rights: a GET per object instead
                Err(_) => HashMap::new(),
            };
            ours.insert(key, found);
        }
        let mut unknown = Vec::new();
        for (i, p) in items.iter_mut().enumerate() {
            let Some(resource) = &p.resource else {
                continue;
            };
            let listed = ours
                .get(&(
                    resource.api_version.clone(),
                    resource.plural.clone(),
                    p.oref.namespace.clone(),
                ))
                .and_then(|m| m.get(&p.oref.name));
            match listed {
                Some(o) => {
                    p.live = live_of(&o.metadata, opts);
                    p.current = serde_json::to_value(o).ok();
                }
                None => unknown.push(i),
            }
        }
        // several objects of one kind and namespace not ours yet (a first
        // apply): one unlabelled LIST of metadata instead of a GET each
        let mut groups: HashMap<(String, String, Option<String>), Vec<usize>> = HashMap::new();
        for &i in &unknown {
            if let Some(r) = &items[i].resource {
                groups
                    .entry((
                        r.api_version.clone(),
                        r.plural.clone(),
                        items[i].oref.namespace.clone(),
                    ))
                    .or_default()
                    .push(i);
            }
        }
        let mut listed_all = HashSet::new();
        for indices in groups.values().filter(|v| v.len() > 2) {
            let p = &items[indices[0]];
            let Some(resource) = &p.resource else {
                continue;
            };
            let api = self.api_for(resource, &p.oref);
            // not listable with these rights: a GET per object instead
            let Ok(list) = api.list_metadata(&ListParams::default()).await else {
                continue;
            };
            let found: HashMap<String, ObjectMeta> = list
                .items
                .into_iter()
                .filter_map(|o| Some((o.metadata.name.clone()?, o.metadata)))
                .collect();
            for &i in indices {
                items[i].live = match found.get(&items[i].oref.name) {
                    Some(meta) => live_of(meta, opts),
                    None => Live::Absent,
                };
                listed_all.insert(i);
            }
        }
        // an object listed here as ours after all (its labels changed
        // since the labelled LIST) is looked up again for its content
        let unknown: Vec<usize> = unknown
            .into_iter()
            .filter(|i| !listed_all.contains(i) || matches!(items[*i].live, Live::Ours { .. }))
            .collect();
        let mut jobs = Vec::with_capacity(unknown.len());
        for &i in &unknown {
            let p = &items[i];
            jobs.push(async move { self.get_live(p, opts).await.map(|l| (i, l)) });
        }
        for (i, (live, current)) in run_all(jobs).await? {
            items[i].live = live;
            items[i].current = current;
        }
        Ok(())
    }

    /// What the cluster holds for one object (a GET).
    async fn get_live(
        &self,
        p: &Planned,
        opts: &ApplyOptions,
    ) -> Result<(Live, Option<Value>), ApplyError> {
        let Some(resource) = &p.resource else {
            return Ok((Live::Unknown, None));
        };
        let api = self.api_for(resource, &p.oref);
        match api.get_opt(&p.oref.name).await {
            Ok(Some(o)) => Ok((live_of(&o.metadata, opts), serde_json::to_value(&o).ok())),
            Ok(None) => Ok((Live::Absent, None)),
            Err(source) => Err(ApplyError::Api {
                object: p.oref.to_string(),
                source,
            }),
        }
    }

    fn api_for(&self, resource: &ApiResource, oref: &ObjectRef) -> Api<DynamicObject> {
        match &oref.namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, resource),
            None => Api::all_with(self.client.clone(), resource),
        }
    }

    /// Server-side dry-run of `items` (all of them, even after a refusal,
    /// so the error counts them); writes nothing. Returns the inventory ids
    /// of the objects whose dry-run result equals the live object: applying
    /// them would change nothing, so the real apply is skipped.
    async fn dry_run(
        &self,
        items: &[&Planned],
        opts: &ApplyOptions,
    ) -> Result<HashSet<String>, ApplyError> {
        let params = PatchParams {
            dry_run: true,
            ..PatchParams::apply(&opts.field_manager).force()
        };
        let mut jobs = Vec::with_capacity(items.len());
        for p in items {
            let params = &params;
            jobs.push(async move {
                let resource = p.resource.as_ref()?;
                let api = self.api_for(resource, &p.oref);
                match api.patch(&p.oref.name, params, &Patch::Apply(&p.obj)).await {
                    Ok(after) => {
                        let same = matches!(p.live, Live::Ours { .. })
                            && p.current.as_ref().is_some_and(|c| {
                                serde_json::to_value(&after)
                                    .is_ok_and(|a| comparable(&a) == comparable(c))
                            });
                        same.then(|| Ok(p.oref.entry().id))
                    }
                    Err(source) => Some(Err(self.api_error(&p.oref, source).await)),
                }
            });
        }
        let results: Vec<Result<String, ApplyError>> = futures::stream::iter(jobs)
            .buffered(APPLY_CONCURRENCY)
            .filter_map(|e| async move { e })
            .collect()
            .await;
        let mut unchanged = HashSet::new();
        let mut errors = Vec::new();
        for r in results {
            match r {
                Ok(id) => {
                    unchanged.insert(id);
                }
                Err(e) => errors.push(e),
            }
        }
        match errors.len() {
            0 => Ok(unchanged),
            // one refusal: report it as is (its kind and status code matter)
            1 => Err(errors.into_iter().next().expect("one error")),
            count => Err(ApplyError::DryRun {
                count,
                first: errors[0].to_string(),
            }),
        }
    }

    /// Applies a phase, up to [`APPLY_CONCURRENCY`] at once; results keep
    /// the input order. After a failure no new apply starts and the ones in
    /// flight complete; the first error is returned.
    async fn apply_phase(
        &self,
        phase: &[Planned],
        unchanged: &HashSet<String>,
        recorded: &Mutex<HashMap<String, String>>,
        opts: &ApplyOptions,
    ) -> Result<Vec<AppliedObject>, ApplyError> {
        let record = |id: String, fingerprint: &Option<String>| {
            if let Some(f) = fingerprint {
                recorded
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(id, f.clone());
            }
        };
        // collected first: a lazy iterator of borrowing futures would make
        // the stream's Send bound unprovable for the controller's task
        let mut jobs = Vec::with_capacity(phase.len());
        for p in phase {
            jobs.push(async move {
                if unchanged.contains(&p.oref.entry().id)
                    && let Live::Ours { fields, .. } = &p.live
                {
                    let fingerprint = fingerprint(&config_hash(&p.obj), fields);
                    record(p.oref.entry().id, &fingerprint);
                    return Ok(AppliedObject {
                        entry: p.oref.entry(),
                        display: p.oref.display(),
                        action: Action::Unchanged,
                        adopted: false,
                        fingerprint,
                    });
                }
                let applied = self.apply_one(p, opts).await?;
                record(p.oref.entry().id, &applied.fingerprint);
                Ok(applied)
            });
        }
        run_all(jobs).await
    }

    /// Applies one object; returns it with its fingerprint (see
    /// [`AppliedMemory`]).
    async fn apply_one(
        &self,
        p: &Planned,
        opts: &ApplyOptions,
    ) -> Result<AppliedObject, ApplyError> {
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
        // kinds of this set's CRDs were not observed during planning
        let mut obj = p.obj.clone();
        let live = match &p.live {
            Live::Unknown => {
                let mut q = p.clone();
                q.resource = Some(resource.clone());
                let (live, _) = self.get_live(&q, opts).await?;
                q.live = live.clone();
                mark_ownership(&mut q, opts);
                obj = q.obj;
                live
            }
            l => l.clone(),
        };
        let before = match &live {
            Live::Foreign {
                owner_namespace,
                owner_name,
                ..
            } if !asks_adoption(&p.obj) && matches!(p.live, Live::Unknown) => {
                return Err(ApplyError::OwnedElsewhere {
                    object: p.oref.to_string(),
                    owner: owner_id(owner_namespace, owner_name),
                });
            }
            Live::Ours {
                resource_version, ..
            } => Some(resource_version.clone()),
            Live::Absent => None,
            _ => Some(String::new()),
        };
        let params = PatchParams::apply(&opts.field_manager).force();
        let after = match api.patch(&p.oref.name, &params, &Patch::Apply(&obj)).await {
            Ok(after) => after,
            Err(e) => {
                return Err(self.api_error(&p.oref, e).await);
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
            adopted: matches!(live, Live::Unowned | Live::Foreign { .. }),
            fingerprint: fingerprint(
                &config_hash(&obj),
                &owned_fields(&after.metadata, &opts.field_manager),
            ),
        })
    }

    /// The error of a request about `oref`. An apply creates what is
    /// missing, so its 404 means a missing namespace or a kind no longer
    /// served (the shared discovery entry can be older than that change):
    /// discovery is asked again, and a kind it no longer finds is reported
    /// as such rather than as a bare "not found".
    async fn api_error(&self, oref: &ObjectRef, source: kube::Error) -> ApplyError {
        if matches!(&source, kube::Error::Api(s) if s.code == 404) {
            self.discovery.forget(&oref.group, &oref.version);
            if let Ok(None) = self
                .discovery
                .resolve(&oref.group, &oref.version, &oref.kind)
                .await
            {
                return ApplyError::UnknownKind {
                    object: oref.to_string(),
                    api_version: oref.api_version(),
                    kind: oref.kind.clone(),
                };
            }
        }
        ApplyError::Api {
            object: oref.to_string(),
            source,
        }
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
        labels.insert(
            NAME_LABEL.into(),
            Value::String(owner_label_value(&opts.owner_name)),
        );
        labels.insert(
            NAMESPACE_LABEL.into(),
            Value::String(opts.owner_namespace.clone()),
        );
    }
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Default::default()));
    if !annotations.is_object() {
        *annotations = Value::Object(Default::default());
    }
    if let Some(a) = annotations.as_object_mut() {
        a.insert(OWNER_ANNOTATION.into(), Value::String(opts.owner_id()));
        // only krmsync decides what it created (see mark_ownership): a
        // rendered object cannot claim it and so get a pre-existing object
        // deleted later
        a.remove(CREATED_BY_ANNOTATION);
    }
}

/// The live state of an object from its metadata.
fn live_of(meta: &ObjectMeta, opts: &ApplyOptions) -> Live {
    match opts.ownership(meta) {
        Ownership::None => Live::Unowned,
        Ownership::Ours { created } => Live::Ours {
            created,
            resource_version: meta.resource_version.clone().unwrap_or_default(),
            fields: owned_fields(meta, &opts.field_manager),
        },
        Ownership::Other { namespace, name } => {
            let annotation = |key: &str| meta.annotations.as_ref().and_then(|a| a.get(key));
            Live::Foreign {
                handed_over: annotation(crate::api::ADOPT_ANNOTATION).is_some_and(|v| v == "true"),
                created: annotation(CREATED_BY_ANNOTATION) == Some(&owner_id(&namespace, &name)),
                owner_namespace: namespace,
                owner_name: name,
            }
        }
    }
}

/// An object without what changes on every write (managedFields
/// timestamps, resourceVersion), to tell whether an apply changes anything.
fn comparable(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
        m.remove("resourceVersion");
    }
    o
}

/// Whether a (rendered) object carries `krmsync.dev/adopt: "true"`.
fn asks_adoption(obj: &Value) -> bool {
    obj["metadata"]["annotations"][crate::api::ADOPT_ANNOTATION] == "true"
}

/// Adds `krmsync.dev/created-by` to an object krmsync creates (or created
/// earlier), so that prune and deletion know it may be deleted. An object
/// taken over explicitly from the Kustomization that created it counts as
/// created: the hand-over moves the right to delete it with the object
/// (otherwise the new owner would release it, unowned, when its revision
/// drops it). One adopted without asking, from an owner that is gone (as
/// after an `Orphan` deletion), counts as adopted, as a pre-existing object
/// does.
fn mark_ownership(p: &mut Planned, opts: &ApplyOptions) {
    let created = match p.live {
        Live::Absent | Live::Ours { created: true, .. } => true,
        Live::Foreign { created, .. } => created && asks_adoption(&p.obj),
        _ => false,
    };
    if created && let Some(a) = p.obj["metadata"]["annotations"].as_object_mut() {
        a.insert(CREATED_BY_ANNOTATION.into(), Value::String(opts.owner_id()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opts() -> ApplyOptions {
        ApplyOptions {
            default_namespace: "prod".into(),
            crd_establish_timeout: Duration::from_secs(1),
            ..ApplyOptions::new("flux", "app")
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

    /// ConfigMap `c` of `namespace`.
    fn configmap_ref(namespace: &str) -> ObjectRef {
        ObjectRef {
            group: "".into(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some(namespace.into()),
            name: "c".into(),
        }
    }

    #[test]
    fn prepare_sets_labels_and_namespace() {
        let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "c", "resourceVersion": "7", "labels": {"a": "b"}}});
        let oref = configmap_ref("prod");
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
        assert_eq!(ns["metadata"]["annotations"][OWNER_ANNOTATION], "flux/app");
    }

    #[test]
    fn rendered_objects_cannot_claim_to_be_created_by_krmsync() {
        let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "annotations": {CREATED_BY_ANNOTATION: "flux/app"}}});
        let oref = configmap_ref("prod");
        prepare(&mut obj, &oref, &opts());
        assert!(
            obj["metadata"]["annotations"]
                .get(CREATED_BY_ANNOTATION)
                .is_none()
        );
        let mut p = Planned {
            obj,
            oref,
            resource: None,
            live: Live::Unowned,
            current: None,
        };
        mark_ownership(&mut p, &opts());
        assert!(
            p.obj["metadata"]["annotations"]
                .get(CREATED_BY_ANNOTATION)
                .is_none()
        );
        p.live = Live::Absent;
        mark_ownership(&mut p, &opts());
        assert_eq!(
            p.obj["metadata"]["annotations"][CREATED_BY_ANNOTATION],
            "flux/app"
        );
    }

    #[test]
    fn long_owner_names_are_hashed_in_labels_and_kept_whole_in_the_annotation() {
        let long = "k".repeat(80);
        let o = ApplyOptions::new("team-a", &long);
        let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let oref = configmap_ref("team-a");
        prepare(&mut obj, &oref, &o);
        let label = obj["metadata"]["labels"][NAME_LABEL].as_str().unwrap();
        assert!(label.len() <= 63);
        assert_eq!(
            obj["metadata"]["annotations"][OWNER_ANNOTATION],
            format!("team-a/{long}")
        );
        assert!(o.selector().contains(label));
        let meta: ObjectMeta = serde_json::from_value(obj["metadata"].clone()).unwrap();
        assert_eq!(o.ownership(&meta), Ownership::Ours { created: false });
        // same hashed label, another full name: not ours
        let other = ApplyOptions::new("team-a", &format!("{long}x"));
        assert!(matches!(other.ownership(&meta), Ownership::Other { .. }));
    }

    #[test]
    fn ownership_reads_labels_and_annotations() {
        let o = ApplyOptions::new("flux", "app");
        let meta = |v: Value| -> ObjectMeta { serde_json::from_value(v).unwrap() };
        assert_eq!(o.ownership(&meta(json!({"name": "x"}))), Ownership::None);
        assert_eq!(
            o.ownership(&meta(
                json!({"labels": {NAME_LABEL: "app", NAMESPACE_LABEL: "flux"},
                "annotations": {CREATED_BY_ANNOTATION: "flux/app"}})
            )),
            Ownership::Ours { created: true }
        );
        assert_eq!(
            o.ownership(&meta(
                json!({"labels": {NAME_LABEL: "app", NAMESPACE_LABEL: "flux"},
                "annotations": {CREATED_BY_ANNOTATION: "other/app"}})
            )),
            Ownership::Ours { created: false }
        );
        assert_eq!(
            o.ownership(&meta(
                json!({"labels": {NAME_LABEL: "app", NAMESPACE_LABEL: "team-b"}})
            )),
            Ownership::Other {
                namespace: "team-b".into(),
                name: "app".into()
            }
        );
    }

    #[test]
    fn report_summary_and_inventory() {
        let e = |id: &str| InventoryEntry {
            id: id.into(),
            v: "v1".into(),
            h: None,
        };
        let report = ApplyReport {
            objects: vec![
                AppliedObject {
                    entry: e("b_x__ConfigMap"),
                    display: "ConfigMap/b/x".into(),
                    action: Action::Created,
                    adopted: false,
                    fingerprint: None,
                },
                AppliedObject {
                    entry: e("a_x__ConfigMap"),
                    display: "ConfigMap/a/x".into(),
                    action: Action::Unchanged,
                    adopted: false,
                    fingerprint: None,
                },
                AppliedObject {
                    entry: e("a_x__ConfigMap"),
                    display: "ConfigMap/a/x".into(),
                    action: Action::Unchanged,
                    adopted: false,
                    fingerprint: None,
                },
                AppliedObject {
                    entry: e("c_x__ConfigMap"),
                    display: "ConfigMap/c/x".into(),
                    action: Action::Configured,
                    adopted: true,
                    fingerprint: None,
                },
            ],
        };
        assert_eq!(
            report.summary(),
            "1 created, 1 configured, 2 unchanged, 1 adopted"
        );
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
