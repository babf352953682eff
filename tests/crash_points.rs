//! Crash at every step. `crash_consistency.rs` kills a reconcile at chosen
//! points; this file kills it at *every* point: for each k, the controller
//! dies right before its k-th write (or right after it, the answer lost),
//! starts again with nothing in memory, and goes on. Whatever k, the end
//! state must be the one an uninterrupted controller reaches:
//!
//! - the Kustomization owns exactly what its last revision renders, with
//!   that revision's content;
//! - an object it adopted is released (left in place, unlabelled), never
//!   deleted;
//! - an object of another Kustomization and an unmanaged object are never
//!   written;
//! - deleting the Kustomization deletes what it created and nothing else.
//!
//! Three phases are explored: a first apply, a later revision (update,
//! create, adopt, release and delete in one), and the deletion. After a
//! crash, recovery goes on either with the same revision or with a new one
//! that drops everything, so objects of the crashed attempt that no
//! status lists yet must still be found and pruned.

mod support;

use krmsync::api::{ADOPT_ANNOTATION, CREATED_BY_ANNOTATION, NAME_LABEL};
use krmsync::controller::Settings;
use kube::ResourceExt;
use serde_json::{Value, json};
use support::{Harness, condition, crash_point};

const NS: &str = "apps";

/// One object of a revision: `(kind, name, value)`; a ConfigMap holds the
/// value as `data.v`, a Service as its port.
type Obj = (&'static str, &'static str, &'static str);

/// First revision: creates `a` and `b`, adopts the existing `pre`.
const R1: &[Obj] = &[
    ("ConfigMap", "a", "1"),
    ("ConfigMap", "b", "1"),
    ("ConfigMap", "pre", "new"),
];
/// Second revision: changes `b`, creates `c` and the Service `s`, deletes
/// `a`, releases `pre`.
const R2: &[Obj] = &[
    ("ConfigMap", "b", "2"),
    ("ConfigMap", "c", "2"),
    ("Service", "s", "8080"),
];
/// A revision sharing nothing with the others.
const R3: &[Obj] = &[("ConfigMap", "z", "3")];

fn manifest(&(kind, name, value): &Obj) -> String {
    match kind {
        "ConfigMap" => format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  v: \"{value}\"\n"
        ),
        "Service" => format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\nspec:\n  selector:\n    app: {name}\n  ports:\n  - port: {value}\n    protocol: TCP\n"
        ),
        other => unreachable!("{other}"),
    }
}

/// Stores `objs` as the bundle of the Kustomization `app`.
fn revision(h: &Harness, objs: &[Obj]) {
    let files: Vec<(String, String)> = objs
        .iter()
        .map(|o| (format!("{}-{}.yaml", o.0, o.1), manifest(o)))
        .collect();
    let kust = format!(
        "resources:\n{}",
        files
            .iter()
            .map(|(f, _)| format!("- {f}\n"))
            .collect::<String>()
    );
    let mut refs: Vec<(&str, &str)> = vec![("kustomization.yaml", &kust)];
    refs.extend(files.iter().map(|(f, t)| (f.as_str(), t.as_str())));
    h.bundle(NS, "app", &refs);
}

fn live(h: &Harness, kind: &str, name: &str) -> Option<Value> {
    h.object("v1", kind, Some(NS), name)
}

/// `(kind, name)` of the objects labelled as `app`'s.
fn owned(h: &Harness) -> Vec<(String, String)> {
    owned_by(h, "app")
}

/// `(kind, name)` of the objects labelled as the Kustomization `ks`'s.
fn owned_by(h: &Harness, ks: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for kind in ["ConfigMap", "Service"] {
        for o in h.fake.list("v1", kind) {
            if o["metadata"]["labels"][NAME_LABEL] == ks {
                out.push((
                    kind.to_string(),
                    o["metadata"]["name"].as_str().unwrap().to_string(),
                ));
            }
        }
    }
    out.sort();
    out
}

fn names(objs: &[Obj]) -> Vec<(String, String)> {
    let mut out: Vec<_> = objs
        .iter()
        .map(|o| (o.0.to_string(), o.1.to_string()))
        .collect();
    out.sort();
    out
}

/// The objects of `app` are exactly `objs`, with their content.
fn assert_converged(h: &Harness, objs: &[Obj], at: &str) {
    assert_eq!(owned(h), names(objs), "{at}: owned objects");
    for &(kind, name, value) in objs {
        let o = live(h, kind, name).unwrap_or_else(|| panic!("{at}: {kind} {name} missing"));
        let got = match kind {
            "ConfigMap" => o["data"]["v"].as_str().map(str::to_string),
            _ => o["spec"]["ports"][0]["port"]
                .as_i64()
                .map(|p| p.to_string()),
        };
        assert_eq!(got.as_deref(), Some(value), "{at}: {kind} {name}");
    }
}

/// `pre`, adopted by the first revision, is in place and carries nothing of
/// krmsync unless the Kustomization still renders it.
fn assert_pre_released(h: &Harness, at: &str) {
    let pre = live(h, "ConfigMap", "pre").unwrap_or_else(|| panic!("{at}: adopted `pre` deleted"));
    assert!(
        pre["metadata"]["labels"][NAME_LABEL].is_null(),
        "{at}: `pre` still labelled: {pre}"
    );
    assert!(
        pre["metadata"]["annotations"][CREATED_BY_ANNOTATION].is_null(),
        "{at}: `pre` marked as created: {pre}"
    );
}

/// Objects nobody but their owners may write, and their resourceVersions.
struct Bystanders(Vec<(&'static str, String)>);

impl Bystanders {
    fn check(&self, h: &Harness, at: &str) {
        for (name, rv) in &self.0 {
            let o = live(h, "ConfigMap", name)
                .unwrap_or_else(|| panic!("{at}: bystander {name} deleted"));
            assert_eq!(
                o["metadata"]["resourceVersion"].as_str(),
                Some(rv.as_str()),
                "{at}: bystander {name} written"
            );
        }
    }
}

/// The namespace with an unmanaged ConfigMap `user`, the ConfigMap `pre`
/// that the first revision adopts, and a Kustomization `other` that owns
/// `o1`; `app` is stored with `first` but not created.
async fn world(first: &[Obj]) -> (Harness, Bystanders) {
    let h = Harness::new(Settings::default()).await;
    h.namespace(NS);
    h.configmap(NS, "user", "mine");
    h.configmap(NS, "pre", "old");
    h.bundle(
        NS,
        "other",
        &[
            ("kustomization.yaml", "resources: [o1.yaml]\n"),
            ("o1.yaml", &manifest(&("ConfigMap", "o1", "theirs"))),
        ],
    );
    h.kustomization(NS, "other", json!({}));
    h.reconcile_ready(NS, "other").await;
    revision(&h, first);
    h.kustomization(NS, "app", json!({}));
    let rv = |name: &str| {
        live(&h, "ConfigMap", name).unwrap()["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let bystanders = Bystanders(vec![("user", rv("user")), ("o1", rv("o1"))]);
    (h, bystanders)
}

/// Runs `app`'s reconciles (up to three, as the controller runtime would
/// requeue a first apply) with the controller dying at write `k`; returns
/// whether it died (false: the reconcile needs fewer writes than `k`).
async fn run_until_crash(h: &Harness, k: usize, lose_response: bool) -> bool {
    run_until_crash_of(h, "app", k, lose_response).await
}

/// [`run_until_crash`] for the Kustomization `ks`.
async fn run_until_crash_of(h: &Harness, ks: &str, k: usize, lose_response: bool) -> bool {
    h.poke(NS, ks).await;
    h.fake.crash_after(k, lose_response);
    for _ in 0..3 {
        let finalized = h
            .get_opt(NS, ks)
            .await
            .is_none_or(|a| a.finalizers().iter().any(|f| f == "krmsync.dev/finalizer"));
        let _ = h.reconcile_once(NS, ks).await;
        if h.fake.crashed() || finalized {
            break;
        }
    }
    let crashed = h.fake.crashed();
    h.fake.clear_failures();
    crashed
}

/// Runs `case(k, lose_response)` for k = 0, 1, ..., with and without the
/// answer of the k-th write lost, until it reports that the controller did
/// not crash (the phase needs fewer than k writes); returns the number of
/// crash points explored.
async fn each_crash_point(mut case: impl AsyncFnMut(usize, bool) -> bool) -> usize {
    let mut points = 0;
    for lose_response in [false, true] {
        for k in 0.. {
            if !case(k, lose_response).await {
                break;
            }
            points += 1;
        }
    }
    points
}

/// What the restarted controller is given after a crash.
#[derive(Clone, Copy, Debug)]
enum Recovery {
    /// The revision that crashed, again.
    Same,
    /// R3, which shares nothing with the earlier revisions.
    NewRevision,
    /// No revision: the Kustomization is deleted at once.
    Delete,
}

/// Recovery after a crash: a new controller process reconciles the
/// revision that crashed (`same`) or R3 to Ready and checks the end state,
/// unless `recovery` deletes at once; then the Kustomization is deleted
/// and what is left is checked.
async fn recover_and_check(
    mut h: Harness,
    bystanders: &Bystanders,
    same: &[Obj],
    recovery: Recovery,
    at: &str,
) {
    h.restart();
    let target = match recovery {
        Recovery::Delete => None,
        Recovery::NewRevision => {
            revision(&h, R3);
            Some(R3)
        }
        Recovery::Same => Some(same),
    };
    if let Some(target) = target {
        h.reconcile_ready(NS, "app").await;
        assert_converged(&h, target, at);
        if !target.iter().any(|o| o.1 == "pre") {
            assert_pre_released(&h, at);
        }
        for gone in ["a", "b", "c", "z"] {
            if !target.iter().any(|o| o.1 == gone) {
                assert!(
                    live(&h, "ConfigMap", gone).is_none(),
                    "{at}: {gone} left behind"
                );
            }
        }
        if !target.iter().any(|o| o.1 == "s") {
            assert!(
                live(&h, "Service", "s").is_none(),
                "{at}: Service s left behind"
            );
        }
        bystanders.check(&h, at);
        let other = h.get(NS, "other").await;
        assert_eq!(condition(&other, "Ready").status, "True", "{at}");
    }

    h.delete(NS, "app").await;
    assert!(h.get_opt(NS, "app").await.is_none(), "{at}: finalizer kept");
    assert!(
        owned(&h).is_empty(),
        "{at}: left after deletion: {:?}",
        owned(&h)
    );
    for name in ["a", "b", "c", "z"] {
        assert!(
            live(&h, "ConfigMap", name).is_none(),
            "{at}: {name} left after deletion"
        );
    }
    assert!(
        live(&h, "Service", "s").is_none(),
        "{at}: s left after deletion"
    );
    assert_pre_released(&h, at);
    bystanders.check(&h, at);
}

/// Explores every crash point of a first apply (of R1) or of a later
/// revision (R2 after R1), each with and without the last answer lost, and
/// each recovered with the same revision, with R3, and by deleting the
/// Kustomization.
async fn explore_revision(first_apply: bool) {
    let mut points = 0;
    for recovery in [Recovery::Same, Recovery::NewRevision, Recovery::Delete] {
        points += each_crash_point(async |k, lose_response| {
            let (h, bystanders) = world(R1).await;
            let crashing = if first_apply {
                R1
            } else {
                h.reconcile_ready(NS, "app").await;
                revision(&h, R2);
                R2
            };
            let at = format!(
                "{} crashed at {}, recovered with {}",
                if first_apply {
                    "first apply"
                } else {
                    "second revision"
                },
                crash_point(k, lose_response),
                match recovery {
                    Recovery::Same => "the same revision",
                    Recovery::NewRevision => "a new revision",
                    Recovery::Delete => "a deletion",
                },
            );
            let crashed = run_until_crash(&h, k, lose_response).await;
            recover_and_check(h, &bystanders, crashing, recovery, &at).await;
            crashed
        })
        .await;
    }
    // a first apply writes at least the finalizer, two objects and the
    // status; a later revision at least three objects, a prune and the status
    assert!(points >= 6 * 4, "only {points} crash points explored");
}

#[tokio::test]
async fn a_first_apply_killed_at_any_write_converges() {
    explore_revision(true).await;
}

#[tokio::test]
async fn a_later_revision_killed_at_any_write_converges() {
    explore_revision(false).await;
}

/// The deletion's finalizer killed at any write: the restarted controller
/// finishes it, deleting what `app` created and releasing what it adopted.
#[tokio::test]
async fn a_deletion_killed_at_any_write_completes() {
    let points = each_crash_point(async |k, lose_response| {
        let (mut h, bystanders) = world(R1).await;
        h.reconcile_ready(NS, "app").await;
        revision(&h, R2);
        h.reconcile_ready(NS, "app").await;
        let at = format!("deletion crashed at {}", crash_point(k, lose_response));
        h.api(NS).delete("app", &Default::default()).await.unwrap();
        h.fake.crash_after(k, lose_response);
        let _ = h.reconcile_once(NS, "app").await;
        let crashed = h.fake.crashed();
        h.fake.clear_failures();
        h.restart();
        for _ in 0..3 {
            if h.get_opt(NS, "app").await.is_none() {
                break;
            }
            let _ = h.reconcile_once(NS, "app").await;
        }
        assert!(h.get_opt(NS, "app").await.is_none(), "{at}: finalizer kept");
        assert!(owned(&h).is_empty(), "{at}: left: {:?}", owned(&h));
        for name in ["a", "b", "c"] {
            assert!(live(&h, "ConfigMap", name).is_none(), "{at}: {name} left");
        }
        assert!(live(&h, "Service", "s").is_none(), "{at}: s left");
        assert_pre_released(&h, &at);
        bystanders.check(&h, &at);
        crashed
    })
    .await;
    assert!(points >= 2 * 3, "only {points} crash points explored");
}

/// A hand-over killed at any write. `old` owns `moving`; `new` renders it
/// with `krmsync.dev/adopt: "true"`. Either reconcile is killed at each of
/// its writes (`new` taking the object, `old` then dropping it), the
/// controller restarts and both reconcile. The object is never deleted,
/// ends with `new`'s labels and content, and `old` no longer lists it;
/// deleting `old` leaves it, deleting `new` leaves nobody's labels on it.
#[tokio::test]
async fn a_hand_over_killed_at_any_write_converges() {
    let mut points = 0;
    for crashing in ["new", "old"] {
        points += each_crash_point(async |k, lose_response| {
                let mut h = Harness::new(Settings::default()).await;
                h.namespace(NS);
                let moving = |v: &str, adopt: bool| {
                    let anno = if adopt {
                        format!("  annotations:\n    {ADOPT_ANNOTATION}: \"true\"\n")
                    } else {
                        String::new()
                    };
                    format!(
                        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: moving\n{anno}data:\n  v: {v}\n"
                    )
                };
                for (ks, adopt) in [("old", false), ("new", true)] {
                    h.bundle(
                        NS,
                        ks,
                        &[
                            (
                                "kustomization.yaml",
                                "resources: [moving.yaml, keep.yaml]\n",
                            ),
                            ("moving.yaml", &moving(ks, adopt)),
                            (
                                "keep.yaml",
                                &manifest(&(
                                    "ConfigMap",
                                    if ks == "old" { "keep-old" } else { "keep-new" },
                                    ks,
                                )),
                            ),
                        ],
                    );
                }
                h.kustomization(NS, "old", json!({}));
                h.reconcile_ready(NS, "old").await;
                h.kustomization(NS, "new", json!({}));
                if crashing == "old" {
                    h.reconcile_ready(NS, "new").await;
                }
                let at = format!(
                    "hand-over: {crashing} crashed at {}",
                    crash_point(k, lose_response)
                );
                let crashed = run_until_crash_of(&h, crashing, k, lose_response).await;
                h.restart();
                for ks in ["old", "new", "old"] {
                    h.reconcile_ready(NS, ks).await;
                }
                let obj = live(&h, "ConfigMap", "moving")
                    .unwrap_or_else(|| panic!("{at}: handed-over object deleted"));
                assert_eq!(obj["metadata"]["labels"][NAME_LABEL], "new", "{at}: {obj}");
                assert_eq!(obj["data"]["v"], "new", "{at}");
                let pair = |n: &str| ("ConfigMap".to_string(), n.to_string());
                assert_eq!(owned_by(&h, "old"), vec![pair("keep-old")], "{at}");
                assert_eq!(
                    owned_by(&h, "new"),
                    vec![pair("keep-new"), pair("moving")],
                    "{at}"
                );
                let old = h.get(NS, "old").await;
                let inventory = old.status.and_then(|s| s.inventory).unwrap_or_default();
                assert!(
                    inventory.entries.iter().all(|e| !e.id.contains("moving")),
                    "{at}: old still lists it: {inventory:?}"
                );

                h.delete(NS, "old").await;
                assert!(
                    h.get_opt(NS, "old").await.is_none(),
                    "{at}: old's finalizer kept"
                );
                assert!(live(&h, "ConfigMap", "keep-old").is_none(), "{at}");
                let obj = live(&h, "ConfigMap", "moving")
                    .unwrap_or_else(|| panic!("{at}: deleting old deleted the handed-over object"));
                assert_eq!(obj["metadata"]["labels"][NAME_LABEL], "new", "{at}");

                h.delete(NS, "new").await;
                assert!(
                    h.get_opt(NS, "new").await.is_none(),
                    "{at}: new's finalizer kept"
                );
                assert!(live(&h, "ConfigMap", "keep-new").is_none(), "{at}");
                if let Some(obj) = live(&h, "ConfigMap", "moving") {
                    assert!(
                        obj["metadata"]["labels"][NAME_LABEL].is_null(),
                        "{at}: {obj}"
                    );
                }
                crashed
        })
        .await;
    }
    assert!(points >= 2 * 3, "only {points} crash points explored");
}

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n  names:\n    kind: Widget\n    plural: widgets\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n";

/// `app`'s bundle: the Namespace `team` with the ConfigMap `inside` in it,
/// the CRD of `Widget` and the Widget `w`.
fn namespace_and_crd_revision(h: &Harness) {
    h.bundle(
        NS,
        "app",
        &[
            (
                "kustomization.yaml",
                "resources: [ns.yaml, inside.yaml, crd.yaml, widget.yaml]\n",
            ),
            ("ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n"),
            (
                "inside.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: inside\n  namespace: team\ndata:\n  v: x\n",
            ),
            ("crd.yaml", CRD),
            (
                "widget.yaml",
                "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 3\n",
            ),
        ],
    );
}

/// The ConfigMap in `team` and the Widget of [`namespace_and_crd_revision`]
/// are gone.
fn assert_contents_gone(h: &Harness, at: &str) {
    assert!(
        h.object("v1", "ConfigMap", Some("team"), "inside")
            .is_none(),
        "{at}: ConfigMap in the Namespace left behind"
    );
    assert!(
        h.object("example.com/v1", "Widget", Some(NS), "w")
            .is_none(),
        "{at}: custom resource left behind"
    );
}

/// Whether the object carries `app`'s labels.
fn labelled(o: &Value) -> bool {
    o["metadata"]["labels"][NAME_LABEL] == "app"
}

/// A first apply of cluster-scoped objects and what depends on them (a
/// Namespace with a ConfigMap in it, a CRD with a custom resource; CRDs and
/// Namespaces go first, the CRD awaited until Established) killed at every
/// write, then a new revision that drops them all. The ConfigMap and the
/// custom resource krmsync created are deleted; the Namespace and the CRD
/// are released (left in place, unlabelled), as they are without a crash
/// unless `deleteNamespacesAndCRDs`; the deletion of the Kustomization
/// then leaves them too.
#[tokio::test]
async fn a_first_apply_of_namespaces_and_crds_killed_at_any_write_converges() {
    let points = each_crash_point(async |k, lose_response| {
        let mut h = Harness::new(Settings::default()).await;
        h.namespace(NS);
        namespace_and_crd_revision(&h);
        h.kustomization(NS, "app", json!({}));
        let at = format!(
            "namespace and CRD first apply crashed at {}",
            crash_point(k, lose_response)
        );
        let crashed = run_until_crash(&h, k, lose_response).await;
        h.restart();
        revision(&h, R3);
        h.reconcile_ready(NS, "app").await;
        assert_converged(&h, R3, &at);

        let get_ns = || h.object("v1", "Namespace", None, "team");
        let get_crd = || {
            h.object(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                None,
                "widgets.example.com",
            )
        };
        for (what, o) in [("Namespace", get_ns()), ("CRD", get_crd())] {
            if let Some(o) = o {
                assert!(!labelled(&o), "{at}: {what} not released: {o}");
            }
        }
        assert_contents_gone(&h, &at);

        h.delete(NS, "app").await;
        assert!(h.get_opt(NS, "app").await.is_none(), "{at}: finalizer kept");
        assert!(owned(&h).is_empty(), "{at}");
        if !crashed {
            // without a crash both were created: both were released
            assert!(get_ns().is_some_and(|o| !labelled(&o)), "{at}");
            assert!(get_crd().is_some_and(|o| !labelled(&o)), "{at}");
        }
        crashed
    })
    .await;
    assert!(points >= 2 * 5, "only {points} crash points explored");
}

/// The way back: a Kustomization with `deleteNamespacesAndCRDs` that
/// applied a Namespace with a ConfigMap in it and a CRD with a custom
/// resource moves to a revision without them, and the prune (objects
/// first, then the CRD and the Namespace) is killed at every write. After
/// a restart the prune finishes: nothing of the old revision is left.
#[tokio::test]
async fn a_prune_of_namespaces_and_crds_killed_at_any_write_completes() {
    let points = each_crash_point(async |k, lose_response| {
        let mut h = Harness::new(Settings::default()).await;
        h.namespace(NS);
        namespace_and_crd_revision(&h);
        h.kustomization(NS, "app", json!({"deleteNamespacesAndCRDs": true}));
        h.reconcile_ready(NS, "app").await;
        revision(&h, R3);
        let at = format!(
            "prune of a Namespace and a CRD crashed at {}",
            crash_point(k, lose_response)
        );
        let crashed = run_until_crash(&h, k, lose_response).await;
        h.restart();
        h.reconcile_ready(NS, "app").await;
        assert_converged(&h, R3, &at);
        assert!(
            h.object("v1", "Namespace", None, "team").is_none(),
            "{at}: Namespace left"
        );
        assert!(
            h.object(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                None,
                "widgets.example.com"
            )
            .is_none(),
            "{at}: CRD left"
        );
        assert_contents_gone(&h, &at);
        h.delete(NS, "app").await;
        assert!(h.get_opt(NS, "app").await.is_none(), "{at}: finalizer kept");
        assert!(owned(&h).is_empty(), "{at}");
        crashed
    })
    .await;
    assert!(points >= 2 * 4, "only {points} crash points explored");
}
