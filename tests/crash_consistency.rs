//! Crash consistency: whatever fails or dies between the first write of a
//! revision and its final status write, the next successful revision leaves
//! nothing of the Kustomization that its render does not contain. Faults
//! are injected by the in-memory API server.

mod support;

use std::time::Duration;

use krmsync::controller::Settings;
use kube::ResourceExt;
use serde_json::json;
use support::{Harness, condition};

const NS: &str = "apps";

fn cm(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n")
}

/// A bundle of ConfigMaps named `names`.
fn revision(h: &Harness, names: &[&str]) {
    revision_with(h, names, "v");
}

/// The ConfigMaps labelled as the Kustomization's (bundle and stored
/// manifests excluded).
fn owned(h: &Harness) -> Vec<String> {
    let mut names: Vec<String> = h
        .fake
        .list("v1", "ConfigMap")
        .into_iter()
        .filter(|o| o["metadata"]["labels"]["krmsync.dev/name"] == "app")
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

/// Clears the faults and applies a revision of `a` only: afterwards the
/// Kustomization owns exactly `a`.
async fn next_revision_leaks_nothing(h: &Harness) {
    h.fake.clear_failures();
    revision(h, &["a"]);
    h.reconcile_ready(NS, "app").await;
    assert_eq!(owned(h), vec!["a"]);
}

async fn harness() -> Harness {
    let h = Harness::new(Settings::default()).await;
    h.namespace(NS);
    revision(&h, &["a"]);
    h.kustomization(NS, "app", json!({}));
    h.reconcile_ready(NS, "app").await;
    h
}

#[tokio::test]
async fn an_apply_that_fails_midway_leaks_nothing_after_the_next_revision() {
    let h = harness().await;
    revision(&h, &["a", "b", "c", "d", "e"]);
    // the creation of d fails (a new ConfigMap is not dry-run: its first
    // PATCH is the real apply)
    h.fake
        .fail_nth("PATCH", "/configmaps/d", 1, 500, "etcd timeout");
    let (k, ready) = h.reconcile_failing(NS, "app", "ApplyFailed").await;
    assert!(ready.message.contains("apps/d"), "{}", ready.message);
    // what was written is recorded, with everything else this revision may create
    let inv: Vec<String> = k
        .status
        .unwrap()
        .inventory
        .unwrap()
        .entries
        .into_iter()
        .map(|e| e.id)
        .collect();
    for n in ["a", "b", "c", "d", "e"] {
        assert!(
            inv.contains(&format!("apps_{n}__ConfigMap")),
            "{n} missing from {inv:?}"
        );
    }
    assert!(!owned(&h).is_empty());

    next_revision_leaks_nothing(&h).await;
}

/// A bundle of ConfigMaps named `names` whose data is `k: value`.
fn revision_with(h: &Harness, names: &[&str], value: &str) {
    let mut files = vec![(
        "kustomization.yaml".to_string(),
        format!(
            "resources: [{}]\n",
            names
                .iter()
                .map(|n| format!("{n}.yaml"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )];
    for n in names {
        files.push((
            format!("{n}.yaml"),
            cm(n).replace("k: v", &format!("k: {value}")),
        ));
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    h.bundle(NS, "app", &refs);
}

#[tokio::test]
async fn a_dry_run_refusal_writes_nothing() {
    let h = harness().await;
    // a changes (an update: dry-run), b, c and d are new
    revision_with(&h, &["a", "b", "c", "d"], "changed");
    h.fake.fail(
        "PATCH",
        "/configmaps/a",
        422,
        "ConfigMap \"a\" is invalid: data: Too long",
    );
    h.fake.clear_requests();
    let (_, ready) = h.reconcile_failing(NS, "app", "ApplyFailed").await;
    assert!(ready.message.contains("is invalid"), "{}", ready.message);
    let real_writes: Vec<String> = h
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "PATCH" && r.path.contains("/configmaps/"))
        .filter(|r| r.query_param("dryRun").as_deref() != Some("All"))
        .map(|r| r.path)
        .collect();
    assert!(
        real_writes.is_empty(),
        "written despite the dry-run refusal: {real_writes:?}"
    );
    assert_eq!(owned(&h), vec!["a"]);
}

/// A new ConfigMap is not dry-run (it is checked locally) and new
/// ConfigMaps are created before anything else: when the API server refuses
/// one anyway, only new ConfigMaps were written, no existing object was
/// changed, and the next revision leaks nothing.
#[tokio::test]
async fn a_refused_new_configmap_changes_no_existing_object() {
    let h = harness().await;
    revision_with(&h, &["a", "b", "c", "d"], "changed");
    h.fake
        .fail("PATCH", "/configmaps/c", 403, "denied by a policy webhook");
    let (_, ready) = h.reconcile_failing(NS, "app", "ApplyFailed").await;
    assert!(
        ready.message.contains("policy webhook"),
        "{}",
        ready.message
    );
    let a = h.fake.get("v1", "ConfigMap", Some(NS), "a").unwrap();
    assert_eq!(a["data"]["k"], "v", "the existing object must not change");
    next_revision_leaks_nothing(&h).await;
}

#[tokio::test]
async fn lost_status_writes_leak_nothing() {
    let h = harness().await;
    revision(&h, &["a", "b"]);
    // every status write of this reconcile is lost
    h.fake.fail(
        "PATCH",
        "/kustomizations/app/status",
        500,
        "etcdserver: request timed out",
    );
    h.poke(NS, "app").await;
    let err = h.reconcile_once(NS, "app").await;
    assert!(err.is_err(), "the final status write failed: {err:?}");

    next_revision_leaks_nothing(&h).await;
}

/// The process dies after applying and before its final status write (as a
/// SIGKILL would): the reconcile is dropped mid-flight.
#[tokio::test]
async fn a_reconcile_killed_between_apply_and_status_leaks_nothing() {
    let h = harness().await;
    revision(&h, &["a", "b", "c"]);
    h.poke(NS, "app").await;
    kill_after_apply(&h, &["a", "b", "c"]).await;

    next_revision_leaks_nothing(&h).await;
}

/// A locked-down controller and a Kustomization of `team-a` acting as its
/// `deployer` (admin of `team-a`), Ready with one ConfigMap.
async fn tenant_app(namespace_lifecycle: bool) -> Harness {
    let h = Harness::locked_down(Settings {
        require_service_account: true,
        ..Settings::default()
    })
    .await;
    h.fake.set_namespace_lifecycle(namespace_lifecycle);
    h.namespace("team-a");
    h.service_account("team-a", "deployer", "admin");
    h.bundle(
        "team-a",
        "app",
        &[
            ("kustomization.yaml", "resources: [cm.yaml]\n"),
            ("cm.yaml", &cm("x")),
        ],
    );
    h.kustomization("team-a", "app", json!({"serviceAccountName": "deployer"}));
    h.reconcile_ready("team-a", "app").await;
    h
}

/// Deleting the namespace deletes the ServiceAccount and its RoleBinding
/// with it; the finalizer must not wait forever for a prune that can no
/// longer be allowed.
#[tokio::test]
async fn deleting_the_namespace_does_not_hang_on_the_finalizer() {
    let h = tenant_app(true).await;

    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
        kube::Api::all(h.fake.client());
    namespaces
        .delete("team-a", &Default::default())
        .await
        .unwrap();
    assert!(
        h.get_opt("team-a", "app").await.is_some(),
        "held by the finalizer"
    );
    h.reconcile_once("team-a", "app").await.unwrap();
    assert!(
        h.get_opt("team-a", "app").await.is_none(),
        "finalizer released"
    );
    assert!(
        h.object("v1", "Namespace", None, "team-a").is_none(),
        "the namespace is gone"
    );
    // the Event saying what was left was attempted (a terminating namespace
    // refuses new Events, as a real one does)
    assert!(
        h.fake.requests().iter().any(|r| r.method == "POST"
            && r.path.contains("events")
            && r.body
                .as_ref()
                .is_some_and(|b| b["reason"] == "PruneAbandoned")),
        "no PruneAbandoned event"
    );
}

/// A forbidden prune for a ServiceAccount that still exists keeps retrying.
#[tokio::test]
async fn a_forbidden_prune_with_a_live_identity_keeps_the_finalizer() {
    let h = tenant_app(false).await;
    // its rights are revoked, but it still exists
    let rb: kube::Api<k8s_openapi::api::rbac::v1::RoleBinding> =
        kube::Api::namespaced(h.fake.client(), "team-a");
    rb.delete("deployer-admin", &Default::default())
        .await
        .unwrap();
    h.api("team-a")
        .delete("app", &Default::default())
        .await
        .unwrap();
    h.reconcile_once("team-a", "app").await.unwrap();
    let k = h.get("team-a", "app").await;
    assert_eq!(condition(&k, "Ready").reason, "PruneFailed");
    assert!(h.object("v1", "ConfigMap", Some("team-a"), "x").is_some());
}

/// Runs one reconcile of `app` and kills it once `names` are applied,
/// before its final status write (which is held back).
async fn kill_after_apply(h: &Harness, names: &[&str]) {
    kill_when(h, |owned| owned == names).await;
}

/// Runs one reconcile of `app`, its status writes held back, and kills it
/// once the objects it owns satisfy `done`; the faults are cleared after.
async fn kill_when(h: &Harness, done: impl Fn(&[String]) -> bool) {
    h.fake.delay(
        "PATCH",
        "/kustomizations/app/status",
        Duration::from_millis(1500),
    );
    let k = h.get(NS, "app").await;
    let ctx = h.ctx.clone();
    let task = tokio::spawn(async move {
        krmsync::controller::kustomization::reconcile(std::sync::Arc::new(k), ctx).await
    });
    let started = std::time::Instant::now();
    while !done(&owned(h)) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "apply never happened"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort();
    let _ = task.await;
    h.fake.clear_failures();
}

/// A first apply killed before its only status write: nothing in status
/// names the objects, the pending inventory written with the finalizer does.
/// The next revision prunes them.
#[tokio::test]
async fn a_first_apply_killed_before_its_status_leaks_nothing() {
    let h = Harness::new(Settings::default()).await;
    h.namespace(NS);
    revision(&h, &["a", "b", "c"]);
    h.kustomization(NS, "app", json!({}));
    kill_after_apply(&h, &["a", "b", "c"]).await;
    let k = h.get(NS, "app").await;
    assert!(
        k.status
            .as_ref()
            .and_then(|s| s.inventory.as_ref())
            .is_none()
    );
    assert!(
        k.finalizers()
            .contains(&"krmsync.dev/finalizer".to_string())
    );

    revision(&h, &["d"]);
    let k = h.reconcile_ready(NS, "app").await;
    assert_eq!(owned(&h), vec!["d"]);
    // settled: a later reconcile has nothing left to prune
    let st = k.status.unwrap();
    assert!(st.settled_attempt.is_some());
    h.fake.clear_requests();
    h.reconcile_ready(NS, "app").await;
    let deletes: Vec<String> = h
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "DELETE")
        .map(|r| r.path)
        .collect();
    assert!(deletes.is_empty(), "{deletes:?}");
}

/// Deleting the Kustomization after a killed first apply deletes what that
/// apply created.
#[tokio::test]
async fn deletion_after_a_killed_first_apply_deletes_what_it_created() {
    let h = Harness::new(Settings::default()).await;
    h.namespace(NS);
    revision(&h, &["a", "b"]);
    h.kustomization(NS, "app", json!({}));
    kill_after_apply(&h, &["a", "b"]).await;
    h.delete(NS, "app").await;
    assert!(h.get_opt(NS, "app").await.is_none(), "finalizer released");
    assert!(owned(&h).is_empty(), "{:?}", owned(&h));
}

/// A pruned object recreated by someone else is not pruned again by a
/// stale pending inventory: once settled, it is history.
#[tokio::test]
async fn a_settled_pending_inventory_is_not_pruned_again() {
    let h = harness().await;
    revision(&h, &["a", "b"]);
    h.reconcile_ready(NS, "app").await;
    revision(&h, &["a"]);
    h.reconcile_ready(NS, "app").await;
    assert_eq!(owned(&h), vec!["a"]);
    // b is created again, by hand, with krmsync's labels still on it
    h.fake
        .insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "b", "namespace": NS,
            "labels": {"krmsync.dev/name": "app", "krmsync.dev/namespace": NS},
            "annotations": {"krmsync.dev/created-by": format!("{NS}/app")}},
        "data": {"k": "v"}}));
    h.reconcile_ready(NS, "app").await;
    assert_eq!(owned(&h), vec!["a", "b"], "b must not be pruned again");
}

/// The first write (finalizer and pending inventory) conflicts with a
/// concurrent change: it is read again and sent again, nothing fails.
#[tokio::test]
async fn a_conflicting_first_write_is_retried() {
    let h = Harness::new(Settings::default()).await;
    h.namespace(NS);
    revision(&h, &["a"]);
    h.kustomization(NS, "app", json!({}));
    h.fake.fail_nth(
        "PATCH",
        "/kustomizations/app",
        1,
        409,
        "the object has been modified",
    );
    h.reconcile_once(NS, "app").await.unwrap();
    let k = h.get(NS, "app").await;
    assert_eq!(condition(&k, "Ready").status, "True", "{:?}", k.status);
    assert!(
        h.fake
            .requests()
            .iter()
            .filter(|r| r.method == "PATCH" && r.path.ends_with("/kustomizations/app"))
            .count()
            >= 2,
        "the conflict was injected"
    );
    assert!(
        k.finalizers()
            .contains(&"krmsync.dev/finalizer".to_string())
    );
    assert_eq!(owned(&h), vec!["a"]);
}

/// The first write refused (403) or failing (500): the reconcile fails
/// saying nothing was applied, and nothing was; the next one succeeds.
#[tokio::test]
async fn a_failed_first_write_applies_nothing() {
    for (code, message) in [
        (403, "denied by a policy webhook"),
        (500, "etcdserver: timeout"),
    ] {
        let h = Harness::new(Settings::default()).await;
        h.namespace(NS);
        revision(&h, &["a", "b"]);
        h.kustomization(NS, "app", json!({}));
        h.fake
            .fail_nth("PATCH", "/kustomizations/app", 1, code, message);
        h.reconcile_once(NS, "app").await.unwrap();
        let k = h.get(NS, "app").await;
        let ready = condition(&k, "Ready");
        assert_eq!(ready.status, "False", "{code}: {ready:?}");
        assert!(
            ready.message.contains("nothing was applied") && ready.message.contains(message),
            "{code}: {}",
            ready.message
        );
        assert!(owned(&h).is_empty(), "{code}: {:?}", owned(&h));
        assert!(k.finalizers().is_empty(), "{code}");

        h.fake.clear_failures();
        h.reconcile_ready(NS, "app").await;
        assert_eq!(owned(&h), vec!["a", "b"]);
    }
}

/// A pending inventory edited into something unreadable stops the
/// reconcile with a message naming the annotation; nothing is applied.
#[tokio::test]
async fn an_unreadable_pending_inventory_is_an_invalid_spec() {
    let h = harness().await;
    h.annotate(NS, "app", "krmsync.dev/pending-inventory", "{not json")
        .await;
    revision(&h, &["a", "b"]);
    let (_, ready) = h.reconcile_failing(NS, "app", "InvalidSpec").await;
    assert!(
        ready.message.contains("krmsync.dev/pending-inventory"),
        "{}",
        ready.message
    );
    assert_eq!(owned(&h), vec!["a"]);
}

/// A pending inventory too large for an annotation (here 300 objects with
/// names of 240 characters, over 64 KiB of JSON) is recorded in the status
/// before the first apply instead; a first apply killed after it leaks
/// nothing either.
#[tokio::test]
async fn a_large_pending_inventory_is_recorded_in_the_status() {
    let h = Harness::new(Settings::default()).await;
    h.namespace(NS);
    let names: Vec<String> = (0..300)
        .map(|i| format!("{i:03}-{}", "x".repeat(236)))
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    revision(&h, &refs);
    h.kustomization(NS, "app", json!({}));
    kill_when(&h, |owned| !owned.is_empty()).await;
    let k = h.get(NS, "app").await;
    assert!(
        !k.annotations()
            .contains_key("krmsync.dev/pending-inventory"),
        "too large for an annotation"
    );
    assert!(
        k.finalizers()
            .contains(&"krmsync.dev/finalizer".to_string())
    );
    let recorded = k.status.unwrap().inventory.unwrap().entries.len();
    assert_eq!(
        recorded, 300,
        "recorded in the status before the first apply"
    );

    next_revision_leaks_nothing(&h).await;
}

/// A first apply refused at its CRD (as API servers before 1.25 refuse a
/// CRD with validation rules) has recorded the custom resource as pending,
/// of a kind the cluster never served. Neither the next revision nor the
/// deletion may fail on it: a kind whose API group is not served has no
/// objects left to prune.
#[tokio::test]
async fn a_pending_custom_resource_of_a_kind_never_served_is_not_a_prune_failure() {
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gadgets.example.org\nspec:\n  group: example.org\n  scope: Namespaced\n  names:\n    kind: Gadget\n    plural: gadgets\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n";
    let gadget =
        "apiVersion: example.org/v1\nkind: Gadget\nmetadata:\n  name: g\nspec:\n  size: 1\n";
    for then_delete in [false, true] {
        let h = Harness::new(Settings::default()).await;
        h.namespace(NS);
        h.bundle(
            NS,
            "app",
            &[
                ("kustomization.yaml", "resources: [crd.yaml, gadget.yaml]\n"),
                ("crd.yaml", crd),
                ("gadget.yaml", gadget),
            ],
        );
        h.kustomization(NS, "app", json!({}));
        h.fake.fail(
            "PATCH",
            "/customresourcedefinitions/gadgets.example.org",
            422,
            "spec.validation: Forbidden: x-kubernetes-validations",
        );
        h.reconcile_failing(NS, "app", "ApplyFailed").await;
        h.fake.clear_failures();
        let pending = h.get(NS, "app").await;
        assert!(
            pending.annotations()["krmsync.dev/pending-inventory"].contains("Gadget"),
            "{:?}",
            pending.annotations()
        );
        if then_delete {
            h.delete(NS, "app").await;
            assert!(h.get_opt(NS, "app").await.is_none(), "finalizer kept");
        } else {
            revision(&h, &["a"]);
            h.reconcile_ready(NS, "app").await;
            assert_eq!(owned(&h), vec!["a"]);
        }
    }
}
