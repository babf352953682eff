//! Random histories. `crash_points.rs` kills one reconcile of a fixed
//! scenario at every write; here three Kustomizations, `a`, `b` and `c`, share a
//! pool of object names (ConfigMaps, a Service, a Namespace and a
//! ConfigMap in it, a CRD and a custom resource of it) and live through
//! random sequences of what happens in a cluster: new revisions,
//! reconciles, the controller killed at a random write (its answer
//! sometimes lost) more than once in a row, an API server refusing one
//! request, objects deleted or edited by someone else, `prune`, `suspend`
//! and `deleteNamespacesAndCRDs` switched, `targetNamespace` set to `apps`
//! or `n2` or removed (every namespaced object moves, and the Namespace `n2`
//! of a revision becomes the target: `apps`, the Kustomizations' own,
//! which exists before), Kustomizations deleted (either deletion policy,
//! sometimes while a reconcile of theirs runs) and created again. The
//! namespace lifecycle is on: deleting the Namespace deletes what is in
//! it, nothing is created in a Namespace that does not exist.
//! In half the histories RBAC is on and the Kustomizations act as
//! ServiceAccounts: `a` as a cluster-admin, `b` and `c` usually as admins
//! of `apps` only. Two or all three are sometimes reconciled at once.
//! After each history every fault is cleared and the controller reconciles
//! each Kustomization a few times, then again after a restart; each time:
//!
//! - the unmanaged ConfigMap `user` was never written, and `pre` and the
//!   Namespace `apps` (which exist before krmsync and which any
//!   Kustomization may adopt) were never deleted; no Namespace or CRD was
//!   deleted by krmsync unless a Kustomization had
//!   `deleteNamespacesAndCRDs`; with ServiceAccounts, the controller's own
//!   identity never wrote (nor dry-ran) a pool object;
//! - a `Ready` Kustomization owns exactly its revision's objects, with that
//!   revision's content, whatever someone else edited or deleted (without
//!   prune: those and objects it still lists), but for objects it held that
//!   another one took over explicitly; a suspended one says so;
//! - a Kustomization that is not `Ready` is so only because another one
//!   owns an object of its revision (`OwnershipConflict`), because its
//!   bundle does not render (`RenderFailed`: then it deleted nothing), or
//!   because an object's Namespace or CRD is neither in the cluster nor in
//!   its revision or its ServiceAccount may not write an object
//!   (`ApplyFailed`), and still records (in its status or
//!   pending inventory) everything it owns;
//! - every object krmsync created is owned by an existing Kustomization
//!   (nothing leaks, nothing is left by a deletion), marked as created; an
//!   adopted object is not marked so; a Namespace or CRD that prune or a
//!   deletion released may stay, owned by nobody;
//! - no deletion is left hanging on its finalizer.
//!
//! `KRMSYNC_HISTORIES` sets the number of histories (default 40) and
//! `KRMSYNC_HISTORY_SEED` the first seed; a failure prints the seed and the
//! history that led to it.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::future::join_all;

use krmsync::api::{
    ADOPT_ANNOTATION, CREATED_BY_ANNOTATION, NAME_LABEL, PENDING_INVENTORY_ANNOTATION,
};
use krmsync::apply::inventory_entry;
use krmsync::controller::{Settings, kustomization};
use kube::Api;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{Value, json};
use support::{Harness, Recorded, crash_point};

const NS: &str = "apps";
const OWNERS: [&str; 3] = ["a", "b", "c"];
/// Names a revision picks from: `pre` exists before any Kustomization; `s`
/// is a Service; `n2` is the Namespace `n2` and `y` a ConfigMap in it;
/// `crd` is the CRD of `Widget`s and `w` a Widget; the others are
/// ConfigMaps. Everything namespaced but `y` is in `apps`.
const POOL: [&str; 10] = ["x0", "x1", "x2", "x3", "s", "pre", "n2", "y", "crd", "w"];
/// Where a `spec.targetNamespace` moves pool objects (`name@namespace`):
/// every namespaced object into it, and the Namespace `n2` renamed to it
/// (kustomize's `namespace:`), so `n2@apps` is the Namespace `apps` the
/// Kustomizations live in.
const MOVED: [&str; 9] = [
    "x0@n2", "x1@n2", "x2@n2", "x3@n2", "s@n2", "pre@n2", "w@n2", "y@apps", "n2@apps",
];
/// Every object a revision may stand for.
fn everything() -> impl Iterator<Item = &'static str> {
    POOL.into_iter().chain(MOVED)
}
/// The objects that exist before any Kustomization: never deleted.
const PRE_EXISTING: [&str; 2] = ["pre", "n2@apps"];
/// The pool objects that prune releases unless `deleteNamespacesAndCRDs`.
const RELEASED_BY_DEFAULT: [&str; 3] = ["n2", "crd", "n2@apps"];
const CRD_NAME: &str = "widgets.example.com";

/// One object of a revision: name, value (a ConfigMap's `data.v`, a
/// Service's port, a Widget's `spec.v`, a Namespace's or CRD's annotation
/// `v`), and whether it asks to be handed over
/// (`krmsync.dev/adopt: "true"`).
type Obj = (&'static str, String, bool);

/// What a pool name stands for.
struct Target {
    api_version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespace: Option<&'static str>,
    name: &'static str,
}

impl Target {
    fn group_version(&self) -> (&'static str, &'static str) {
        self.api_version
            .split_once('/')
            .unwrap_or(("", self.api_version))
    }

    fn resource(&self) -> ApiResource {
        let (group, version) = self.group_version();
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(group, version, self.kind),
            self.plural,
        )
    }

    /// The object's API path.
    fn path(&self) -> String {
        let root = if self.api_version.contains('/') {
            "apis"
        } else {
            "api"
        };
        let Target {
            api_version,
            plural,
            name,
            ..
        } = self;
        match self.namespace {
            Some(ns) => format!("/{root}/{api_version}/namespaces/{ns}/{plural}/{name}"),
            None => format!("/{root}/{api_version}/{plural}/{name}"),
        }
    }

    /// Its id in an inventory.
    fn inventory_id(&self) -> String {
        let (group, version) = self.group_version();
        inventory_entry(group, version, self.kind, self.namespace, self.name).id
    }
}

fn what(name: &'static str) -> Target {
    let (base, moved_to) = match name.split_once('@') {
        Some((base, ns)) => (base, Some(ns)),
        None => (name, None),
    };
    let mut t = what_unmoved(base);
    if let Some(ns) = moved_to {
        match t.namespace {
            Some(_) => t.namespace = Some(ns),
            None => t.name = ns,
        }
    }
    t
}

/// The pool object `name` (without `@`).
fn what_unmoved(name: &'static str) -> Target {
    let (api_version, kind, plural, namespace, object) = match name {
        "s" => ("v1", "Service", "services", Some(NS), name),
        "n2" => ("v1", "Namespace", "namespaces", None, name),
        "y" => ("v1", "ConfigMap", "configmaps", Some("n2"), name),
        "crd" => (
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            None,
            CRD_NAME,
        ),
        "w" => ("example.com/v1", "Widget", "widgets", Some(NS), name),
        _ => ("v1", "ConfigMap", "configmaps", Some(NS), name),
    };
    Target {
        api_version,
        kind,
        plural,
        namespace,
        name: object,
    }
}

fn kind_of(name: &'static str) -> &'static str {
    what(name).kind
}

/// The pool objects `name` needs: the Namespace `n2` for what is in it,
/// the CRD for a Widget.
fn needs(name: &'static str) -> Vec<&'static str> {
    let t = what(name);
    let mut needed = Vec::new();
    if t.namespace == Some("n2") {
        needed.push("n2");
    }
    if t.kind == "Widget" {
        needed.push("crd");
    }
    needed
}

/// The pool name without where a `spec.targetNamespace` moved it.
fn unmoved(name: &'static str) -> &'static str {
    name.split_once('@').map_or(name, |(base, _)| base)
}

/// Where `spec.targetNamespace: target` puts the pool object `name`.
fn moved(name: &'static str, target: Option<&'static str>) -> &'static str {
    let base = unmoved(name);
    let Some(target) = target else { return base };
    let t = what_unmoved(base);
    let landing = match t.kind {
        "Namespace" => (None, target),
        _ if t.namespace.is_some() => (Some(target), t.name),
        _ => return base,
    };
    everything()
        .find(|n| {
            unmoved(n) == base && {
                let m = what(n);
                (m.namespace, m.name) == landing
            }
        })
        .unwrap_or_else(|| panic!("no pool name for {base} in {target}"))
}

fn manifest((name, v, adopt): &Obj) -> String {
    let name = unmoved(name);
    let Target {
        api_version,
        kind,
        namespace,
        name: object,
        ..
    } = what(name);
    let mut meta = format!("metadata:\n  name: {object}\n");
    if let Some(ns) = namespace.filter(|ns| *ns != NS) {
        meta += &format!("  namespace: {ns}\n");
    }
    let value_annotation = matches!(kind, "Namespace" | "CustomResourceDefinition");
    if *adopt || value_annotation {
        meta += "  annotations:\n";
    }
    if *adopt {
        meta += &format!("    {ADOPT_ANNOTATION}: \"true\"\n");
    }
    if value_annotation {
        meta += &format!("    v: \"{v}\"\n");
    }
    let head = format!("apiVersion: {api_version}\nkind: {kind}\n{meta}");
    match kind {
        "Service" => format!(
            "{head}spec:\n  selector:\n    app: {name}\n  ports:\n  - port: {v}\n    protocol: TCP\n"
        ),
        "Namespace" => head,
        "CustomResourceDefinition" => format!(
            "{head}spec:\n  group: example.com\n  names:\n    kind: Widget\n    listKind: WidgetList\n    plural: widgets\n    singular: widget\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n"
        ),
        "Widget" => format!("{head}spec:\n  v: \"{v}\"\n"),
        _ => format!("{head}data:\n  v: \"{v}\"\n"),
    }
}

/// The value of `obj` as [`Obj`] holds it.
fn value_of(obj: &Value) -> String {
    let v = match obj["kind"].as_str() {
        Some("Service") => return obj["spec"]["ports"][0]["port"].to_string(),
        Some("Namespace" | "CustomResourceDefinition") => &obj["metadata"]["annotations"]["v"],
        Some("Widget") => &obj["spec"]["v"],
        _ => &obj["data"]["v"],
    };
    v.as_str().unwrap_or_default().to_string()
}

/// xorshift64*: small, seedable, enough to pick operations.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// One history: the cluster, what each Kustomization's bundle holds now,
/// and what happened so far (printed on failure).
struct World {
    h: Harness,
    seed: u64,
    user_rv: String,
    revisions: BTreeMap<&'static str, Vec<Obj>>,
    /// The Kustomizations created with `deletionPolicy: Orphan`.
    orphaning: BTreeSet<&'static str>,
    /// The Kustomizations with `spec.prune: false`.
    unpruned: BTreeSet<&'static str>,
    /// The suspended Kustomizations (`spec.suspend`).
    suspended: BTreeSet<&'static str>,
    /// The Kustomizations with `spec.deleteNamespacesAndCRDs: true`.
    deleting_kinds: BTreeSet<&'static str>,
    /// Whether any Kustomization ever had it.
    ever_deleting_kinds: bool,
    /// Objects an `Orphan` deletion left: they may stay, owned by a
    /// Kustomization that is gone or (once adopted and dropped) by nobody.
    orphaned: BTreeSet<&'static str>,
    /// The Kustomizations whose bundle does not render (it lists a file it
    /// lacks).
    broken: BTreeSet<&'static str>,
    /// At the start of [`World::settle`]: the objects each broken one owned.
    owned_when_broken: Vec<(&'static str, &'static str)>,
    log: Vec<String>,
    /// The ServiceAccount each Kustomization acts as (none: the
    /// controller's own identity, RBAC off).
    identities: BTreeMap<&'static str, &'static str>,
    /// How many requests the fake had received when each Kustomization was
    /// last created.
    born: BTreeMap<&'static str, usize>,
    /// The Kustomizations with a `spec.targetNamespace`, and its value.
    targets: BTreeMap<&'static str, &'static str>,
}

impl World {
    /// A new cluster; in half the histories RBAC is on and each
    /// Kustomization acts as a ServiceAccount: `a` as `operator`
    /// (cluster-admin), `b` and `c` each as `deployer` (admin of `apps`
    /// only) or, one time in four, as `operator` too.
    async fn new(seed: u64, rng: &mut Rng) -> World {
        let h = Harness::new(Settings::default()).await;
        h.fake.set_namespace_lifecycle(true);
        h.namespace(NS);
        let mut identities = BTreeMap::new();
        if rng.below(2) == 0 {
            h.fake.set_rbac(true);
            for (kind, name, namespace) in [
                ("User", "someone", None),
                ("ServiceAccount", "operator", Some(NS)),
            ] {
                h.fake.insert(json!({
                    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                    "metadata": {"name": format!("{name}-cluster-admin")},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole", "name": "cluster-admin"},
                    "subjects": [{"kind": kind, "name": name, "namespace": namespace}],
                }));
            }
            h.service_account(NS, "operator", "view");
            h.service_account(NS, "deployer", "admin");
            identities.insert("a", "operator");
            for ks in ["b", "c"] {
                let sa = if rng.below(4) == 0 {
                    "operator"
                } else {
                    "deployer"
                };
                identities.insert(ks, sa);
            }
        }
        h.configmap(NS, "user", "mine");
        h.configmap(NS, "pre", "old");
        let user_rv =
            h.object("v1", "ConfigMap", Some(NS), "user").unwrap()["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .to_string();
        World {
            h,
            seed,
            identities,
            user_rv,
            revisions: BTreeMap::new(),
            orphaning: Default::default(),
            unpruned: Default::default(),
            suspended: Default::default(),
            deleting_kinds: Default::default(),
            ever_deleting_kinds: false,
            orphaned: Default::default(),
            broken: Default::default(),
            owned_when_broken: Vec::new(),
            log: Vec::new(),
            born: BTreeMap::new(),
            targets: BTreeMap::new(),
        }
    }

    fn fail(&self, what: String) -> ! {
        panic!(
            "history with seed {}: {what}\nhistory:\n  {}",
            self.seed,
            self.log.join("\n  ")
        )
    }

    fn live(&self, name: &'static str) -> Option<Value> {
        let t = what(name);
        self.h.object(t.api_version, t.kind, t.namespace, t.name)
    }

    /// The API of the pool object `name`, as someone else (user
    /// `someone`) uses it.
    fn api_of(&self, name: &'static str) -> Api<DynamicObject> {
        let t = what(name);
        let resource = t.resource();
        let client = self.h.fake.client_as("someone");
        match t.namespace {
            Some(ns) => Api::namespaced_with(client, ns, &resource),
            None => Api::all_with(client, &resource),
        }
    }

    /// A new revision of `ks`: up to three objects of the pool with random
    /// values; creates the Kustomization if it does not exist.
    async fn new_revision(&mut self, rng: &mut Rng, ks: &'static str) {
        let mut objs: Vec<Obj> = Vec::new();
        for _ in 0..rng.below(4) {
            let name = *rng.pick(&POOL);
            // half the time with its Namespace or CRD
            let with = if rng.below(2) == 0 {
                needs(name)
            } else {
                Vec::new()
            };
            for name in with.into_iter().chain([name]) {
                if !objs.iter().any(|o| o.0 == name) {
                    let v = match kind_of(name) {
                        "Service" => format!("{}", 8000 + rng.below(10)),
                        _ => format!("{ks}{}", rng.below(10)),
                    };
                    objs.push((name, v, rng.below(4) == 0));
                }
            }
        }
        let files: Vec<(String, String)> = objs
            .iter()
            .map(|o| (format!("{}.yaml", o.0), manifest(o)))
            .collect();
        let broken = rng.below(8) == 0;
        let kust = format!(
            "resources: [{}]\n",
            files
                .iter()
                .map(|(f, _)| f.as_str())
                .chain(broken.then_some("missing.yaml"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut refs: Vec<(&str, &str)> = vec![("kustomization.yaml", &kust)];
        refs.extend(files.iter().map(|(f, t)| (f.as_str(), t.as_str())));
        self.h.bundle(NS, ks, &refs);
        let created = self.h.get_opt(NS, ks).await.is_none();
        let orphan = created && rng.below(6) == 0;
        if created {
            let policy = if orphan { "Orphan" } else { "Delete" };
            let mut spec = json!({"deletionPolicy": policy});
            if let Some(sa) = self.identities.get(ks) {
                spec["serviceAccountName"] = json!(sa);
            }
            self.born.insert(ks, self.h.fake.requests().len());
            self.h.kustomization(NS, ks, spec);
            if orphan {
                self.orphaning.insert(ks);
            } else {
                self.orphaning.remove(ks);
            }
            self.unpruned.remove(ks);
            self.suspended.remove(ks);
            self.deleting_kinds.remove(ks);
            self.targets.remove(ks);
        }
        // where the Kustomization's spec.targetNamespace puts them
        let target = self.targets.get(ks).copied();
        for o in &mut objs {
            o.0 = moved(o.0, target);
        }
        if broken {
            self.broken.insert(ks);
        } else {
            self.broken.remove(ks);
        }
        self.log.push(format!(
            "{ks}: {}revision {objs:?}{}",
            if broken { "unrenderable " } else { "" },
            match (created, orphan) {
                (true, true) => " (Kustomization created, deletionPolicy Orphan)",
                (true, false) => " (Kustomization created)",
                _ => "",
            }
        ));
        self.revisions.insert(ks, objs);
    }

    /// A full reconcile of `ks` (as after a new revision or a requeue: up
    /// to three passes while the finalizer is being added), or of its
    /// deletion; errors are the history's, not the test's.
    async fn reconcile(&self, ks: &str) {
        self.reconcile_with(ks, |_| {}).await
    }

    /// [`World::reconcile`] with the faults `arm` sets once the reconcile
    /// was asked for.
    async fn reconcile_with(&self, ks: &str, arm: impl FnOnce(&support::FakeApi)) {
        if self.ask(ks).await {
            arm(&self.h.fake);
            self.run(ks).await;
        }
    }

    /// Asks for a full reconcile of `ks` (a new `krmsync.dev/reconcile-at`)
    /// unless it is being deleted; false when it does not exist.
    async fn ask(&self, ks: &str) -> bool {
        let Some(k) = self.h.get_opt(NS, ks).await else {
            return false;
        };
        if k.metadata.deletion_timestamp.is_none() {
            self.h.poke(NS, ks).await;
        }
        true
    }

    /// Reconciles `ks` as the API server has it, up to three passes (as the
    /// runtime requeues a first apply) until the finalizer was in place for
    /// a whole pass; stops when the controller died (every request fails
    /// then, this loop's reads too: a concurrent reconcile may have died).
    async fn run(&self, ks: &str) {
        for _ in 0..3 {
            let Ok(Some(k)) = self.h.api(NS).get_opt(ks).await else {
                return;
            };
            let finalized = k
                .metadata
                .finalizers
                .iter()
                .flatten()
                .any(|f| f == "krmsync.dev/finalizer");
            let _ = kustomization::reconcile(Arc::new(k), self.h.ctx.clone()).await;
            if self.h.fake.crashed() || finalized {
                return;
            }
        }
    }

    async fn step(&mut self, rng: &mut Rng) {
        let ks = *rng.pick(&OWNERS);
        match rng.below(14) {
            0 | 1 => self.new_revision(rng, ks).await,
            2 | 3 => {
                self.log.push(format!("{ks}: reconcile"));
                self.reconcile(ks).await;
            }
            4 | 5 => {
                let k = rng.below(8);
                let lose = rng.below(2) == 1;
                self.log
                    .push(format!("{ks}: reconcile{}", killed(Some((k, lose)))));
                self.reconcile_with(ks, |f| f.crash_after(k, lose)).await;
                self.h.fake.clear_failures();
                self.h.restart();
            }
            6 => {
                let (method, path) = *rng.pick(&[
                    ("PATCH", "/configmaps/"),
                    ("DELETE", "/configmaps/"),
                    ("GET", "/configmaps"),
                    ("PATCH", "/namespaces/n2"),
                    ("DELETE", "/namespaces/n2"),
                    ("PATCH", "/customresourcedefinitions/"),
                    ("DELETE", "/customresourcedefinitions/"),
                    ("PATCH", "/widgets/"),
                    ("PATCH", "/kustomizations/"),
                    ("POST", "/secrets"),
                    ("PATCH", "/secrets/"),
                    ("POST", "/events"),
                ]);
                let code = *rng.pick(&[500u16, 409, 403, 422]);
                let n = 1 + rng.below(3);
                self.log.push(format!(
                    "{ks}: reconcile, request {n} of {method} {path} refused with {code}"
                ));
                self.reconcile_with(ks, |f| f.fail_nth(method, path, n, code, "injected"))
                    .await;
                self.h.fake.clear_failures();
            }
            7 => {
                let name = *rng.pick(&[
                    "x0", "x1", "x2", "x3", "n2", "y", "w", "x0@n2", "y@apps", "w@n2",
                ]);
                if self.live(name).is_some() {
                    self.log.push(format!("someone deletes {name}"));
                    self.api_of(name)
                        .delete(what(name).name, &DeleteParams::default())
                        .await
                        .unwrap();
                }
            }
            8 => {
                let name = *rng.pick(&everything().collect::<Vec<_>>());
                if what(name).kind != "Service" && self.live(name).is_some() {
                    self.log
                        .push(format!("someone else's field manager edits {name}"));
                    let t = what(name);
                    let mut patch = json!({"apiVersion": t.api_version, "kind": t.kind,
                        "metadata": {"name": t.name}});
                    match t.kind {
                        "Namespace" | "CustomResourceDefinition" => {
                            patch["metadata"]["annotations"] = json!({"v": "edited"})
                        }
                        "Widget" => patch["spec"] = json!({"v": "edited"}),
                        _ => patch["data"] = json!({"v": "edited"}),
                    }
                    self.api_of(name)
                        .patch(
                            t.name,
                            &PatchParams::apply("someone").force(),
                            &Patch::Apply(&patch),
                        )
                        .await
                        .unwrap();
                }
            }
            9 => {
                // all three, or two of them
                let together: Vec<&str> = match rng.below(4) {
                    0 => OWNERS.to_vec(),
                    n => OWNERS
                        .iter()
                        .copied()
                        .filter(|o| *o != OWNERS[n - 1])
                        .collect(),
                };
                let crash = (rng.below(2) == 1).then(|| (rng.below(10), rng.below(2) == 1));
                self.log.push(format!(
                    "{}: reconciled at once{}",
                    together.join(", "),
                    killed(crash)
                ));
                let asked = join_all(together.iter().map(|ks| self.ask(ks))).await;
                if let Some((k, lose)) = crash {
                    self.h.fake.crash_after(k, lose);
                }
                join_all(
                    together
                        .iter()
                        .zip(asked)
                        .filter(|(_, exists)| *exists)
                        .map(|(ks, _)| self.run(ks)),
                )
                .await;
                if crash.is_some() {
                    self.h.fake.clear_failures();
                    self.h.restart();
                }
            }
            11 | 12 => {
                let live = self.h.get_opt(NS, ks).await;
                if live.is_some_and(|k| k.metadata.deletion_timestamp.is_none()) {
                    let (field, default, set) = match rng.below(3) {
                        0 => ("prune", true, &mut self.unpruned),
                        1 => ("suspend", false, &mut self.suspended),
                        _ => ("deleteNamespacesAndCRDs", false, &mut self.deleting_kinds),
                    };
                    // each set holds the Kustomizations whose field is off
                    // its default
                    let off_default = !set.contains(ks);
                    if off_default {
                        set.insert(ks);
                    } else {
                        set.remove(ks);
                    }
                    let value = default != off_default;
                    self.ever_deleting_kinds |= !self.deleting_kinds.is_empty();
                    self.log.push(format!("{ks}: spec.{field} set to {value}"));
                    self.h
                        .api(NS)
                        .patch(
                            ks,
                            &PatchParams::default(),
                            &Patch::Merge(&json!({"spec": {field: value}})),
                        )
                        .await
                        .unwrap();
                }
            }
            13 => {
                let live = self.h.get_opt(NS, ks).await;
                if live.is_some_and(|k| k.metadata.deletion_timestamp.is_none()) {
                    // objects move to the new target namespace (or back)
                    let target = *rng.pick(&[None, Some(NS), Some("n2")]);
                    match target {
                        Some(t) => self.targets.insert(ks, t),
                        None => self.targets.remove(ks),
                    };
                    if let Some(objs) = self.revisions.get_mut(ks) {
                        for o in objs {
                            o.0 = moved(o.0, target);
                        }
                    }
                    self.log
                        .push(format!("{ks}: spec.targetNamespace set to {target:?}"));
                    self.h
                        .api(NS)
                        .patch(
                            ks,
                            &PatchParams::default(),
                            &Patch::Merge(&json!({"spec": {"targetNamespace": target}})),
                        )
                        .await
                        .unwrap();
                }
            }
            _ => {
                if let Some(k) = self.h.get_opt(NS, ks).await
                    && k.metadata.deletion_timestamp.is_none()
                {
                    // noted now too: once the deletion is over, another
                    // Kustomization may have adopted them
                    self.note_orphans(ks);
                    let crash = (rng.below(2) == 1).then(|| (rng.below(4), rng.below(2) == 1));
                    // without a crash, half the deletions land somewhere in
                    // a running reconcile
                    let during = (crash.is_none() && rng.below(2) == 1).then(|| rng.below(200));
                    self.log.push(match during {
                        Some(yields) => format!(
                            "{ks}: deleted while a reconcile runs (after {yields} yields), its finalizer run"
                        ),
                        None => format!("{ks}: deleted, its finalizer run{}", killed(crash)),
                    });
                    let delete = async |yields: usize| {
                        for _ in 0..yields {
                            tokio::task::yield_now().await;
                        }
                        self.h
                            .api(NS)
                            .delete(ks, &DeleteParams::default())
                            .await
                            .unwrap();
                    };
                    if let Some(yields) = during
                        && self.ask(ks).await
                    {
                        tokio::join!(self.run(ks), delete(yields));
                    } else {
                        delete(0).await;
                    }
                    self.reconcile_with(ks, |f| {
                        if let Some((k, lose)) = crash {
                            f.crash_after(k, lose);
                        }
                    })
                    .await;
                    if crash.is_some() {
                        self.h.fake.clear_failures();
                        self.h.restart();
                    }
                }
            }
        }
        self.note_deletions().await;
        self.check_always();
    }

    /// Forgets the revisions of the Kustomizations whose deletion finished;
    /// notes what an `Orphan` one left.
    async fn note_deletions(&mut self) {
        for ks in OWNERS {
            if self.revisions.contains_key(ks) && self.h.get_opt(NS, ks).await.is_none() {
                self.revisions.remove(ks);
                self.note_orphans(ks);
            }
        }
    }

    /// When `ks` leaves its objects on deletion (`deletionPolicy: Orphan`,
    /// or suspended), notes those it owns now.
    fn note_orphans(&mut self, ks: &str) {
        if self.orphaning.contains(ks) || self.suspended.contains(ks) {
            self.orphaned.extend(self.labelled_by(ks));
        }
    }

    /// The pool objects that carry `ks`'s owner label.
    fn labelled_by(&self, ks: &str) -> Vec<&'static str> {
        everything()
            .filter(|name| {
                self.live(name)
                    .is_some_and(|o| o["metadata"]["labels"][NAME_LABEL] == ks)
            })
            .collect()
    }

    /// The first `method` request the fake received for the pool object
    /// `name` itself (not a subresource) that also matches `and`.
    fn request_to(
        &self,
        method: &str,
        name: &'static str,
        and: impl Fn(&Recorded) -> bool,
    ) -> Option<Recorded> {
        let path = what(name).path();
        self.h
            .fake
            .requests()
            .into_iter()
            .find(|r| r.method == method && r.path == path && and(r))
    }

    /// Whether `ks`, since it was last created, recorded the pool object
    /// `name` as its own (in its pending inventory or its status): only then
    /// may it have held it.
    fn ever_recorded(&self, ks: &str, name: &'static str) -> bool {
        let path = format!("/apis/krmsync.dev/v1alpha1/namespaces/{NS}/kustomizations/{ks}");
        let status = format!("{path}/status");
        let id = what(name).inventory_id();
        let born = self.born.get(ks).copied().unwrap_or_default();
        self.h.fake.requests()[born..].iter().any(|r| {
            r.method == "PATCH"
                && (r.path == path || r.path == status)
                && r.body.as_ref().is_some_and(|b| {
                    let pending = &b["metadata"]["annotations"][PENDING_INVENTORY_ANNOTATION];
                    [pending, &b["status"]["inventory"]]
                        .iter()
                        .any(|v| v.to_string().contains(&id))
                })
        })
    }

    /// Whether the fake ever received a `method` request for `name`.
    fn ever(&self, method: &str, name: &'static str) -> bool {
        self.request_to(method, name, |_| true).is_some()
    }

    /// Whether prune or a deletion ever released the pool object `name`
    /// (a patch removing krmsync's labels).
    fn ever_released(&self, name: &'static str) -> bool {
        self.request_to("PATCH", name, |r| {
            r.body.as_ref().is_some_and(|b| {
                b["metadata"]["labels"]
                    .get(NAME_LABEL)
                    .is_some_and(Value::is_null)
            })
        })
        .is_some()
    }

    /// What holds after every step.
    fn check_always(&self) {
        let user = self
            .live("user")
            .unwrap_or_else(|| self.fail("the unmanaged `user` was deleted".into()));
        if user["metadata"]["resourceVersion"] != self.user_rv.as_str() {
            self.fail(format!("the unmanaged `user` was written: {user}"));
        }
        for name in PRE_EXISTING {
            if self.live(name).is_none() {
                self.fail(format!("the pre-existing `{name}` was deleted"));
            }
        }
        // with ServiceAccounts, the controller's own identity never writes
        // (nor dry-runs) an object of a Kustomization
        if !self.identities.is_empty() {
            let paths: Vec<String> = everything().map(|n| what(n).path()).collect();
            let collections: Vec<&str> = paths
                .iter()
                .map(|p| p.rsplit_once('/').unwrap().0)
                .collect();
            if let Some(r) = self.h.fake.requests().iter().find(|r| {
                r.user == "system:admin"
                    && match r.method.as_str() {
                        "POST" => collections.contains(&r.path.as_str()),
                        "PATCH" | "PUT" | "DELETE" => paths.contains(&r.path),
                        _ => false,
                    }
            }) {
                self.fail(format!("written with the controller's own identity: {r:?}"));
            }
        }
        // Namespaces and CRDs are released, not deleted, unless asked
        if !self.ever_deleting_kinds {
            for name in RELEASED_BY_DEFAULT {
                if let Some(r) = self.request_to("DELETE", name, |r| r.user != "someone") {
                    self.fail(format!(
                        "{name} deleted without deleteNamespacesAndCRDs: {r:?}"
                    ));
                }
            }
        }
    }

    /// Clears every fault, restarts the controller when `restart` (or goes
    /// on with what it keeps in memory) and reconciles each Kustomization
    /// three times over.
    async fn settle(&mut self, restart: bool) {
        self.h.fake.clear_failures();
        if restart {
            self.h.restart();
        } else {
            for &ks in &self.broken {
                for name in self.labelled_by(ks) {
                    self.owned_when_broken.push((ks, name));
                }
            }
        }
        self.log.push(format!(
            "settle: {}reconcile each Kustomization three times",
            if restart { "restart, " } else { "" }
        ));
        for _ in 0..3 {
            for ks in OWNERS {
                self.reconcile(ks).await;
                self.note_deletions().await;
            }
        }
    }

    /// What holds once the history settled.
    async fn check_settled(&self) {
        self.check_always();
        let mut labelled: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for name in everything() {
            let Some(o) = self.live(name) else { continue };
            let pre_existing = PRE_EXISTING.contains(&name);
            let orphaned = self.orphaned.contains(name);
            // a Namespace or CRD released by prune or deletion stays, owned
            // by nobody, and may be adopted (not created) by another
            let released = RELEASED_BY_DEFAULT.contains(&name) && self.ever_released(name);
            let owner = o["metadata"]["labels"][NAME_LABEL].as_str();
            let created = &o["metadata"]["annotations"][CREATED_BY_ANNOTATION];
            match owner {
                None if !pre_existing && !orphaned && !released => {
                    self.fail(format!("{name} left behind, owned by nobody: {o}"))
                }
                None => {}
                Some(ks) => {
                    labelled.entry(ks.to_string()).or_default().push(name);
                    if !orphaned && !released && created.is_null() != pre_existing {
                        self.fail(format!("{name}: wrong created-by annotation: {o}"));
                    }
                }
            }
        }
        for ks in OWNERS {
            // what an `Orphan` deletion left keeps the labels of a
            // Kustomization that is gone (or of the one now of that name,
            // which does not list it)
            let owned: Vec<&str> = labelled
                .remove(ks)
                .unwrap_or_default()
                .into_iter()
                .filter(|name| {
                    !self.orphaned.contains(name)
                        || self
                            .revisions
                            .get(ks)
                            .is_some_and(|r| r.iter().any(|o| o.0 == *name))
                })
                .collect();
            let Some(k) = self.h.get_opt(NS, ks).await else {
                if !owned.is_empty() {
                    self.fail(format!("{ks} is gone but still owns {owned:?}"));
                }
                continue;
            };
            if k.metadata.deletion_timestamp.is_some() {
                self.fail(format!("{ks}: deletion stuck: {:?}", k.status));
            }
            let revision = &self.revisions[ks];
            let ready = k
                .status
                .as_ref()
                .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"))
                .unwrap_or_else(|| self.fail(format!("{ks}: no Ready condition")));
            if self.suspended.contains(ks) {
                if (ready.status.as_str(), ready.reason.as_str()) != ("Unknown", "Suspended") {
                    self.fail(format!("{ks}: suspended, but {ready:?}"));
                }
            } else if self.broken.contains(ks) {
                // nothing applied, nothing pruned
                if (ready.status.as_str(), ready.reason.as_str()) != ("False", "RenderFailed") {
                    self.fail(format!("{ks}: an unrenderable revision gave {ready:?}"));
                }
                for &(_, name) in self.owned_when_broken.iter().filter(|o| o.0 == ks) {
                    // (an object whose Namespace or CRD someone else deleted
                    // went with it)
                    let cascaded = needs(name).iter().any(|p| self.ever("DELETE", p));
                    if self.live(name).is_none() && !cascaded {
                        self.fail(format!("{ks}: {name} deleted after a failed render"));
                    }
                }
            } else if ready.status == "True" {
                // an object another existing Kustomization took over
                // explicitly (`krmsync.dev/adopt`) is skipped by the ones
                // that held it and still render it: a Ready status then
                // says "handed over" (one that never held it is refused)
                let taken =
                    |name: &'static str| {
                        self.live(name).is_some_and(|o| {
                            o["metadata"]["annotations"][ADOPT_ANNOTATION] == "true"
                                && o["metadata"]["labels"][NAME_LABEL].as_str().is_some_and(
                                    |other| other != ks && self.revisions.contains_key(other),
                                )
                        }) && self.ever_recorded(ks, name)
                    };
                let mut want: Vec<&str> = revision
                    .iter()
                    .map(|o| o.0)
                    .filter(|name| !taken(name))
                    .collect();
                want.sort();
                let mut got = owned.clone();
                got.sort();
                if self.unpruned.contains(ks) {
                    // without prune, what left the render stays, still listed
                    let listed = listed(&k);
                    if !want.iter().all(|n| got.contains(n))
                        || !got
                            .iter()
                            .all(|n| want.contains(n) || listed.contains(&what(n).inventory_id()))
                    {
                        self.fail(format!(
                            "{ks} (no prune) is Ready with {want:?} but owns {got:?}, lists {listed:?}"
                        ));
                    }
                } else if want != got {
                    self.fail(format!("{ks} is Ready with {want:?} but owns {got:?}"));
                }
                for (name, v, _) in revision.iter().filter(|o| !taken(o.0)) {
                    let o = self.live(name).unwrap();
                    if value_of(&o) != *v {
                        self.fail(format!("{ks}: {name} should hold {v}: {o}"));
                    }
                }
            } else {
                let foreign = revision.iter().any(|(name, _, _)| {
                    self.live(name).is_some_and(|o| {
                        o["metadata"]["labels"][NAME_LABEL]
                            .as_str()
                            .is_some_and(|owner| owner != ks)
                    })
                });
                // an object whose Namespace or CRD neither exists nor is in
                // the revision cannot be applied
                let unservable = revision.iter().any(|(name, _, _)| {
                    needs(name)
                        .iter()
                        .any(|p| self.live(p).is_none() && !revision.iter().any(|o| o.0 == *p))
                });
                // `deployer` may write nothing outside `apps`
                let forbidden = self.identities.get(ks) == Some(&"deployer")
                    && revision
                        .iter()
                        .any(|(name, _, _)| what(name).namespace != Some(NS));
                let explained = match ready.reason.as_str() {
                    "OwnershipConflict" => foreign,
                    "ApplyFailed" => unservable || forbidden,
                    _ => false,
                };
                if !explained {
                    self.fail(format!(
                        "{ks} is not Ready for another reason than a conflict: {ready:?}"
                    ));
                }
            }
            if ready.status != "True" {
                // a failed reconcile keeps what it may have created in its
                // pending inventory, for the next one (or the deletion) to prune
                let listed = listed(&k);
                for name in owned.iter().filter(|n| !self.orphaned.contains(*n)) {
                    if !listed.contains(&what(name).inventory_id()) {
                        self.fail(format!(
                            "{ks} owns {name}, which it does not list: {listed:?}"
                        ));
                    }
                }
            }
        }
        if !labelled.is_empty() {
            self.fail(format!("objects of unknown owners: {labelled:?}"));
        }
    }
}

/// How the log tells a crash at write `k` (`lose`: its answer lost).
fn killed(crash: Option<(usize, bool)>) -> String {
    match crash {
        Some((k, lose)) => format!(", killed at {}, restart", crash_point(k, lose)),
        None => String::new(),
    }
}

/// The inventory ids a Kustomization records, in its status or its
/// pending inventory.
fn listed(k: &krmsync::api::Kustomization) -> Vec<String> {
    k.recorded_inventory()
        .entries
        .iter()
        .map(|e| e.id.clone())
        .collect()
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test]
async fn random_histories_of_three_owners_converge() {
    let histories = env_number("KRMSYNC_HISTORIES", 40);
    let first = env_number("KRMSYNC_HISTORY_SEED", 1);
    let mut steps = 0;
    for seed in first..first + histories {
        let mut rng = Rng::new(seed);
        let mut w = World::new(seed, &mut rng).await;
        for _ in 0..8 + rng.below(12) {
            w.step(&mut rng).await;
            steps += 1;
        }
        // the same state with the controller's memory, then without it
        for restart in [false, true] {
            w.settle(restart).await;
            w.check_settled().await;
        }
    }
    eprintln!("random histories: {histories} histories, {steps} steps, seeds {first}..");
}
