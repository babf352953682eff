//! Random histories. `crash_points.rs` kills one reconcile of a fixed
//! scenario at every write; here two Kustomizations, `a` and `b`, share a
//! pool of object names and live through random sequences of what happens
//! in a cluster: new revisions, reconciles, the controller killed at a
//! random write (its answer sometimes lost) more than once in a row, an API
//! server refusing one request, objects deleted or edited by someone else,
//! `prune` and `suspend` switched, Kustomizations deleted (either deletion
//! policy, sometimes while a reconcile of theirs runs) and created again. After each history every fault
//! is cleared, the controller restarts and reconciles each Kustomization a
//! few times; then:
//!
//! - the unmanaged ConfigMap `user` was never written, and `pre` (which
//!   exists before krmsync and which either Kustomization may adopt) was
//!   never deleted;
//! - a `Ready` Kustomization owns exactly its revision's objects, with that
//!   revision's content, whatever someone else edited or deleted (without
//!   prune: those and objects it still lists); a suspended one says so;
//! - a Kustomization that is not `Ready` is so only because another one
//!   owns an object of its revision (`OwnershipConflict`) or because its
//!   bundle does not render (`RenderFailed`: then it deleted nothing), and
//!   still records (in its status or pending inventory) everything it owns;
//! - every object krmsync created is owned by an existing Kustomization
//!   (nothing leaks, nothing is left by a deletion), marked as created; an
//!   adopted object is not marked so;
//! - no deletion is left hanging on its finalizer.
//!
//! `KRMSYNC_HISTORIES` sets the number of histories (default 40) and
//! `KRMSYNC_HISTORY_SEED` the first seed; a failure prints the seed and the
//! history that led to it.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use krmsync::api::{ADOPT_ANNOTATION, CREATED_BY_ANNOTATION, NAME_LABEL};
use krmsync::controller::{Settings, kustomization};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};
use support::{Harness, crash_point};

const NS: &str = "apps";
const OWNERS: [&str; 2] = ["a", "b"];
/// Names a revision picks from; `pre` exists before any Kustomization;
/// `s` is a Service, the others are ConfigMaps.
const POOL: [&str; 6] = ["x0", "x1", "x2", "x3", "s", "pre"];

/// One object of a revision: name, value (a ConfigMap's `data.v`, a
/// Service's port), and whether it asks to be handed over
/// (`krmsync.dev/adopt: "true"`).
type Obj = (&'static str, String, bool);

fn kind_of(name: &str) -> &'static str {
    if name == "s" { "Service" } else { "ConfigMap" }
}

fn manifest((name, v, adopt): &Obj) -> String {
    let meta = if *adopt {
        format!("metadata:\n  name: {name}\n  annotations:\n    {ADOPT_ANNOTATION}: \"true\"\n")
    } else {
        format!("metadata:\n  name: {name}\n")
    };
    match kind_of(name) {
        "Service" => format!(
            "apiVersion: v1\nkind: Service\n{meta}spec:\n  selector:\n    app: {name}\n  ports:\n  - port: {v}\n    protocol: TCP\n"
        ),
        _ => format!("apiVersion: v1\nkind: ConfigMap\n{meta}data:\n  v: {v}\n"),
    }
}

/// The value of `obj` as [`Obj`] holds it.
fn value_of(obj: &Value) -> String {
    match obj["kind"].as_str() {
        Some("Service") => obj["spec"]["ports"][0]["port"].to_string(),
        _ => obj["data"]["v"].as_str().unwrap_or_default().to_string(),
    }
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
    /// Objects an `Orphan` deletion left: they may stay, owned by a
    /// Kustomization that is gone or (once adopted and dropped) by nobody.
    orphaned: BTreeSet<&'static str>,
    /// The Kustomizations whose bundle does not render (it lists a file it
    /// lacks).
    broken: BTreeSet<&'static str>,
    /// At the start of [`World::settle`]: the objects each broken one owned.
    owned_when_broken: Vec<(&'static str, &'static str)>,
    log: Vec<String>,
}

impl World {
    async fn new(seed: u64) -> World {
        let h = Harness::new(Settings::default()).await;
        h.namespace(NS);
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
            user_rv,
            revisions: BTreeMap::new(),
            orphaning: Default::default(),
            unpruned: Default::default(),
            suspended: Default::default(),
            orphaned: Default::default(),
            broken: Default::default(),
            owned_when_broken: Vec::new(),
            log: Vec::new(),
        }
    }

    fn fail(&self, what: String) -> ! {
        panic!(
            "history with seed {}: {what}\nhistory:\n  {}",
            self.seed,
            self.log.join("\n  ")
        )
    }

    fn live(&self, name: &str) -> Option<Value> {
        self.h.object("v1", kind_of(name), Some(NS), name)
    }

    fn configmaps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.h.fake.client(), NS)
    }

    /// A new revision of `ks`: up to three objects of the pool with random
    /// values; creates the Kustomization if it does not exist.
    async fn new_revision(&mut self, rng: &mut Rng, ks: &'static str) {
        let mut objs: Vec<Obj> = Vec::new();
        for _ in 0..rng.below(4) {
            let name = *rng.pick(&POOL);
            if !objs.iter().any(|o| o.0 == name) {
                let v = match kind_of(name) {
                    "Service" => format!("{}", 8000 + rng.below(10)),
                    _ => format!("{ks}{}", rng.below(10)),
                };
                objs.push((name, v, rng.below(4) == 0));
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
            self.h
                .kustomization(NS, ks, json!({"deletionPolicy": policy}));
            if orphan {
                self.orphaning.insert(ks);
            } else {
                self.orphaning.remove(ks);
            }
            self.unpruned.remove(ks);
            self.suspended.remove(ks);
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
        match rng.below(13) {
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
                let name = *rng.pick(&POOL[..4]);
                if self.live(name).is_some() {
                    self.log.push(format!("someone deletes {name}"));
                    self.configmaps()
                        .delete(name, &DeleteParams::default())
                        .await
                        .unwrap();
                }
            }
            8 => {
                let name = *rng.pick(&POOL);
                if name != "s" && self.live(name).is_some() {
                    self.log
                        .push(format!("someone else's field manager edits {name}"));
                    let patch = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": name}, "data": {"v": "edited"}});
                    self.configmaps()
                        .patch(
                            name,
                            &PatchParams::apply("someone").force(),
                            &Patch::Apply(&patch),
                        )
                        .await
                        .unwrap();
                }
            }
            9 => {
                let crash = (rng.below(2) == 1).then(|| (rng.below(10), rng.below(2) == 1));
                self.log
                    .push(format!("a and b: reconciled at once{}", killed(crash)));
                let (a, b) = tokio::join!(self.ask("a"), self.ask("b"));
                if let Some((k, lose)) = crash {
                    self.h.fake.crash_after(k, lose);
                }
                tokio::join!(
                    async {
                        if a {
                            self.run("a").await
                        }
                    },
                    async {
                        if b {
                            self.run("b").await
                        }
                    }
                );
                if crash.is_some() {
                    self.h.fake.clear_failures();
                    self.h.restart();
                }
            }
            11 | 12 => {
                let live = self.h.get_opt(NS, ks).await;
                if live.is_some_and(|k| k.metadata.deletion_timestamp.is_none()) {
                    let (field, set) = if rng.below(2) == 0 {
                        ("prune", &mut self.unpruned)
                    } else {
                        ("suspend", &mut self.suspended)
                    };
                    // each set holds the Kustomizations whose field is off
                    // its default
                    let off_default = !set.contains(ks);
                    if off_default {
                        set.insert(ks);
                    } else {
                        set.remove(ks);
                    }
                    let value = (field == "suspend") == off_default;
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
        POOL.into_iter()
            .filter(|name| {
                self.live(name)
                    .is_some_and(|o| o["metadata"]["labels"][NAME_LABEL] == ks)
            })
            .collect()
    }

    /// What holds after every step.
    fn check_always(&self) {
        let user = self
            .live("user")
            .unwrap_or_else(|| self.fail("the unmanaged `user` was deleted".into()));
        if user["metadata"]["resourceVersion"] != self.user_rv.as_str() {
            self.fail(format!("the unmanaged `user` was written: {user}"));
        }
        if self.live("pre").is_none() {
            self.fail("the pre-existing `pre` was deleted".into());
        }
    }

    /// Clears every fault, restarts the controller and reconciles each
    /// Kustomization three times over.
    async fn settle(&mut self) {
        self.h.fake.clear_failures();
        self.h.restart();
        self.log
            .push("settle: restart, reconcile a, b three times".into());
        for &ks in &self.broken {
            for name in self.labelled_by(ks) {
                self.owned_when_broken.push((ks, name));
            }
        }
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
        for name in POOL {
            let Some(o) = self.live(name) else { continue };
            let orphaned = self.orphaned.contains(name);
            let owner = o["metadata"]["labels"][NAME_LABEL].as_str();
            let created = &o["metadata"]["annotations"][CREATED_BY_ANNOTATION];
            match owner {
                None if name != "pre" && !orphaned => {
                    self.fail(format!("{name} left behind, owned by nobody: {o}"))
                }
                None => {}
                Some(ks) => {
                    labelled.entry(ks.to_string()).or_default().push(name);
                    if !orphaned && created.is_null() != (name == "pre") {
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
                    if self.live(name).is_none() {
                        self.fail(format!("{ks}: {name} deleted after a failed render"));
                    }
                }
            } else if ready.status == "True" {
                // an object another existing Kustomization took over
                // explicitly (`krmsync.dev/adopt`) is skipped by every other
                // one that renders it: a Ready status then says "handed over"
                let taken =
                    |name: &str| {
                        self.live(name).is_some_and(|o| {
                            o["metadata"]["annotations"][ADOPT_ANNOTATION] == "true"
                                && o["metadata"]["labels"][NAME_LABEL].as_str().is_some_and(
                                    |other| other != ks && self.revisions.contains_key(other),
                                )
                        })
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
                            .all(|n| want.contains(n) || listed.contains(&inventory_id(n)))
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
                if ready.reason != "OwnershipConflict" || !foreign {
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
                    if !listed.contains(&inventory_id(name)) {
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

/// The inventory id of the pool object `name`.
fn inventory_id(name: &str) -> String {
    format!("{NS}_{name}__{}", kind_of(name))
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test]
async fn random_histories_of_two_owners_converge() {
    let histories = env_number("KRMSYNC_HISTORIES", 40);
    let first = env_number("KRMSYNC_HISTORY_SEED", 1);
    let mut steps = 0;
    for seed in first..first + histories {
        let mut rng = Rng::new(seed);
        let mut w = World::new(seed).await;
        for _ in 0..8 + rng.below(12) {
            w.step(&mut rng).await;
            steps += 1;
        }
        w.settle().await;
        w.check_settled().await;
    }
    eprintln!("random histories: {histories} histories, {steps} steps, seeds {first}..");
}
