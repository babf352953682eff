//! One owner per object, adoption and hand-over, and prune that never
//! destroys what krmsync did not create (issue: controller safety).

mod support;

use krmsync::api::{
    ADOPT_ANNOTATION, CREATED_BY_ANNOTATION, NAME_LABEL, NAMESPACE_LABEL, OWNER_ANNOTATION,
};
use krmsync::controller::Settings;
use serde_json::{Value, json};
use support::harness::{cm_yaml as cm, kust};
use support::{Harness, condition};

const NS: &str = "apps";

async fn harness() -> Harness {
    let h = Harness::new(Settings::default()).await;
    h.namespace(NS);
    h
}

fn labels(obj: &Value) -> (Option<&str>, Option<&str>) {
    (
        obj["metadata"]["labels"][NAME_LABEL].as_str(),
        obj["metadata"]["labels"][NAMESPACE_LABEL].as_str(),
    )
}

/// The bundle `ks`: the ConfigMap `name` holding `v: value`.
fn one_configmap_bundle(h: &Harness, ks: &str, name: &str, value: &str) {
    h.bundle(
        NS,
        ks,
        &[
            ("kustomization.yaml", &kust(&["cm.yaml"])),
            ("cm.yaml", &cm(name, value)),
        ],
    );
}

/// ConfigMap `name` holding `v: new`, annotated `krmsync.dev/adopt: "true"`.
fn adopting_cm(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  annotations:\n    {ADOPT_ANNOTATION}: \"true\"\ndata:\n  v: new\n"
    )
}

/// The bundle `name`: [`adopting_cm`] `moving`.
fn adopting_bundle(h: &Harness, name: &str) {
    h.bundle(
        NS,
        name,
        &[
            ("kustomization.yaml", &kust(&["cm.yaml"])),
            ("cm.yaml", &adopting_cm("moving")),
        ],
    );
}

#[tokio::test]
async fn a_second_kustomization_rendering_the_same_object_is_refused() {
    let h = harness().await;
    h.bundle(
        NS,
        "first",
        &[
            ("kustomization.yaml", &kust(&["cm.yaml"])),
            ("cm.yaml", &cm("shared", "1")),
        ],
    );
    h.bundle(
        NS,
        "second",
        &[
            ("kustomization.yaml", &kust(&["cm.yaml", "other.yaml"])),
            ("cm.yaml", &cm("shared", "2")),
            ("other.yaml", &cm("second-only", "x")),
        ],
    );
    h.kustomization(NS, "first", json!({}));
    h.kustomization(NS, "second", json!({}));
    let k1 = h.reconcile(NS, "first").await;
    assert_eq!(condition(&k1, "Ready").status, "True");

    let k2 = h.reconcile(NS, "second").await;
    let ready = condition(&k2, "Ready");
    assert_eq!(ready.status, "False");
    assert_eq!(ready.reason, "OwnershipConflict");
    assert!(
        ready.message.contains("v1 ConfigMap apps/shared"),
        "{}",
        ready.message
    );
    assert!(
        ready.message.contains("Kustomization apps/first"),
        "{}",
        ready.message
    );
    assert!(h.event_reasons().iter().any(|r| r == "OwnershipConflict"));
    // the whole render was refused: the first owner's object is untouched
    // and the other object was not created
    let shared = h.object("v1", "ConfigMap", Some(NS), "shared").unwrap();
    assert_eq!(labels(&shared), (Some("first"), Some(NS)));
    assert_eq!(shared["data"]["v"], "1");
    assert!(
        h.object("v1", "ConfigMap", Some(NS), "second-only")
            .is_none()
    );

    // deleting the refused one deletes nothing of the first one's
    h.delete(NS, "second").await;
    assert!(h.get_opt(NS, "second").await.is_none());
    assert!(h.object("v1", "ConfigMap", Some(NS), "shared").is_some());
    // and the first one still owns and prunes it
    h.bundle(
        NS,
        "first",
        &[
            ("kustomization.yaml", &kust(&["other.yaml"])),
            ("other.yaml", &cm("first-other", "y")),
        ],
    );
    let k1 = h.reconcile(NS, "first").await;
    assert_eq!(condition(&k1, "Ready").status, "True", "{:?}", k1.status);
    assert!(h.object("v1", "ConfigMap", Some(NS), "shared").is_none());
}

#[tokio::test]
async fn objects_of_a_deleted_owner_are_adopted_and_survive_the_adopter() {
    let h = harness().await;
    // left behind by a Kustomization that no longer exists (e.g. Orphan)
    h.fake
        .insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "legacy", "namespace": NS,
                     "labels": {NAME_LABEL: "gone", NAMESPACE_LABEL: NS},
                     "annotations": {CREATED_BY_ANNOTATION: "apps/gone"}},
        "data": {"v": "old"}}));
    one_configmap_bundle(&h, "new", "legacy", "new");
    h.kustomization(NS, "new", json!({}));
    let k = h.reconcile_ready(NS, "new").await;
    let obj = h.object("v1", "ConfigMap", Some(NS), "legacy").unwrap();
    assert_eq!(labels(&obj), (Some("new"), Some(NS)));
    assert_eq!(obj["data"]["v"], "new");
    // adopted, not created: the previous owner's mark is not ours
    assert_ne!(
        obj["metadata"]["annotations"][CREATED_BY_ANNOTATION], "apps/new",
        "{obj}"
    );
    assert!(condition(&k, "Applied").message.contains("1 adopted"));

    // deleting the adopter leaves the adopted object in place, released
    h.delete(NS, "new").await;
    let obj = h
        .object("v1", "ConfigMap", Some(NS), "legacy")
        .expect("adopted object kept");
    assert_eq!(labels(&obj), (None, None), "{obj}");
    assert!(
        obj["metadata"]["annotations"]
            .get(OWNER_ANNOTATION)
            .is_none()
    );
}

#[tokio::test]
async fn the_adopt_annotation_hands_an_object_over_and_the_previous_owner_reports_the_loss() {
    let mut h = harness().await;
    h.bundle(
        NS,
        "old",
        &[
            ("kustomization.yaml", &kust(&["cm.yaml", "keep.yaml"])),
            ("cm.yaml", &cm("moving", "old")),
            ("keep.yaml", &cm("old-keep", "k")),
        ],
    );
    h.kustomization(NS, "old", json!({}));
    h.reconcile_ready(NS, "old").await;

    adopting_bundle(&h, "new");
    h.kustomization(NS, "new", json!({}));
    h.reconcile_ready(NS, "new").await;
    let obj = h.object("v1", "ConfigMap", Some(NS), "moving").unwrap();
    assert_eq!(labels(&obj), (Some("new"), Some(NS)));
    assert_eq!(obj["data"]["v"], "new");

    // the old owner still renders it: it neither fights nor fails, it
    // reports the loss and drops the object from its inventory
    let k = h.reconcile_ready(NS, "old").await;
    assert!(condition(&k, "Applied").message.contains("1 handed over"));
    let notes = h.event_notes("OwnershipLost");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("apps/moving") && n.contains("apps/new")),
        "{notes:?}"
    );
    let inv = k.status.clone().unwrap().inventory.unwrap();
    assert!(
        inv.entries.iter().all(|e| !e.id.contains("moving")),
        "{inv:?}"
    );
    assert_eq!(
        h.object("v1", "ConfigMap", Some(NS), "moving").unwrap()["data"]["v"],
        "new"
    );
    // it remembers what it handed over (in its status, not in memory): the
    // reconciles after it, after a restart too, skip the object the same way
    let handed = k.status.unwrap().handed_over.unwrap();
    assert_eq!(handed.entries.len(), 1, "{handed:?}");
    assert!(handed.entries[0].id.contains("moving"), "{handed:?}");
    h.restart();
    for _ in 0..2 {
        let k = h.reconcile_ready(NS, "old").await;
        assert!(condition(&k, "Applied").message.contains("1 handed over"));
    }

    // a Kustomization that never held it is refused, not told it was
    // handed over
    one_configmap_bundle(&h, "bystander", "moving", "bystander");
    h.kustomization(NS, "bystander", json!({}));
    let by = h.reconcile(NS, "bystander").await;
    let ready = condition(&by, "Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "OwnershipConflict"),
        "{ready:?}"
    );
    assert!(
        ready.message.contains("Kustomization apps/new"),
        "{ready:?}"
    );
    let obj = h.object("v1", "ConfigMap", Some(NS), "moving").unwrap();
    assert_eq!(labels(&obj), (Some("new"), Some(NS)));
    assert_eq!(obj["data"]["v"], "new");
    h.delete(NS, "bystander").await;

    // once its revision drops the object, it forgets it: the field goes
    one_configmap_bundle(&h, "old", "old-keep", "k");
    let k = h.reconcile_ready(NS, "old").await;
    assert!(
        k.status.as_ref().unwrap().handed_over.is_none(),
        "{:?}",
        k.status
    );
    assert!(h.object("v1", "ConfigMap", Some(NS), "moving").is_some());

    // deleting the old owner deletes its own object, not the handed-over one
    h.delete(NS, "old").await;
    assert!(h.object("v1", "ConfigMap", Some(NS), "old-keep").is_none());
    assert!(h.object("v1", "ConfigMap", Some(NS), "moving").is_some());
}

/// A hand-over moves the right to delete with the object: what the
/// previous owner created, the new one deletes when its revision drops it;
/// what the previous owner had adopted, the new one releases. (Found by
/// `random_histories.rs`: a created object, handed over and then dropped,
/// was left in the cluster owned by nobody.)
#[tokio::test]
async fn a_handed_over_object_keeps_whether_krmsync_created_it() {
    let h = harness().await;
    h.configmap(NS, "pre", "before");
    h.bundle(
        NS,
        "old",
        &[
            ("kustomization.yaml", &kust(&["moving.yaml", "pre.yaml"])),
            ("moving.yaml", &cm("moving", "old")),
            ("pre.yaml", &cm("pre", "old")),
        ],
    );
    h.kustomization(NS, "old", json!({}));
    h.reconcile_ready(NS, "old").await;

    h.bundle(
        NS,
        "new",
        &[
            ("kustomization.yaml", &kust(&["moving.yaml", "pre.yaml"])),
            ("moving.yaml", &adopting_cm("moving")),
            ("pre.yaml", &adopting_cm("pre")),
        ],
    );
    h.kustomization(NS, "new", json!({}));
    h.reconcile_ready(NS, "new").await;
    h.reconcile_ready(NS, "old").await;
    let created_by = |name: &str| {
        h.object("v1", "ConfigMap", Some(NS), name).unwrap()["metadata"]["annotations"]
            [CREATED_BY_ANNOTATION]
            .clone()
    };
    assert_eq!(created_by("moving"), "apps/new");
    assert!(created_by("pre").is_null());

    // the new owner's revision drops both
    h.bundle(NS, "new", &[("kustomization.yaml", "resources: []\n")]);
    h.reconcile_ready(NS, "new").await;
    assert!(
        h.object("v1", "ConfigMap", Some(NS), "moving").is_none(),
        "a created object, handed over, was left behind"
    );
    let pre = h
        .object("v1", "ConfigMap", Some(NS), "pre")
        .expect("adopted object deleted");
    assert_eq!(labels(&pre), (None, None), "{pre}");
}

#[tokio::test]
async fn a_pre_existing_namespace_survives_the_kustomization() {
    let h = harness().await;
    h.namespace("shared");
    h.fake
        .insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "someone-elses", "namespace": "shared"}, "data": {}}));
    let ns = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shared\n";
    let inside = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mine\n  namespace: shared\n";
    h.bundle(
        NS,
        "app",
        &[
            ("kustomization.yaml", &kust(&["ns.yaml", "cm.yaml"])),
            ("ns.yaml", ns),
            ("cm.yaml", inside),
        ],
    );
    h.kustomization(NS, "app", json!({"deleteNamespacesAndCRDs": true}));
    h.reconcile_ready(NS, "app").await;

    h.delete(NS, "app").await;
    let shared = h
        .object("v1", "Namespace", None, "shared")
        .expect("adopted Namespace kept");
    assert_eq!(labels(&shared), (None, None), "released: {shared}");
    assert!(
        h.object("v1", "ConfigMap", Some("shared"), "someone-elses")
            .is_some()
    );
    assert!(
        h.object("v1", "ConfigMap", Some("shared"), "mine")
            .is_none(),
        "created by krmsync: deleted"
    );
}

#[tokio::test]
async fn namespaces_and_crds_krmsync_created_are_deleted_only_when_the_spec_says_so() {
    for allow in [false, true] {
        let h = harness().await;
        let ns = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: fresh\n";
        let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  scope: Namespaced\n  names:\n    kind: Widget\n    plural: widgets\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n";
        h.bundle(
            NS,
            "app",
            &[
                (
                    "kustomization.yaml",
                    &kust(&["ns.yaml", "crd.yaml", "cm.yaml"]),
                ),
                ("ns.yaml", ns),
                ("crd.yaml", crd),
                ("cm.yaml", &cm("c", "1")),
            ],
        );
        h.kustomization(NS, "app", json!({"deleteNamespacesAndCRDs": allow}));
        h.reconcile_ready(NS, "app").await;
        let created = h.object("v1", "Namespace", None, "fresh").unwrap();
        assert_eq!(
            created["metadata"]["annotations"][CREATED_BY_ANNOTATION],
            "apps/app"
        );

        h.bundle(
            NS,
            "app",
            &[
                ("kustomization.yaml", &kust(&["cm.yaml"])),
                ("cm.yaml", &cm("c", "1")),
            ],
        );
        let k = h.reconcile_ready(NS, "app").await;
        let nsobj = h.object("v1", "Namespace", None, "fresh");
        let crdobj = h.object(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            None,
            "widgets.example.com",
        );
        if allow {
            assert!(
                nsobj.is_none() && crdobj.is_none(),
                "deleteNamespacesAndCRDs: deleted"
            );
        } else {
            let (nsobj, crdobj) = (nsobj.expect("kept"), crdobj.expect("kept"));
            assert_eq!(labels(&nsobj), (None, None));
            assert_eq!(labels(&crdobj), (None, None));
            assert!(
                condition(&k, "Applied").message.contains("2 released"),
                "{:?}",
                k.status
            );
            assert!(h.event_reasons().iter().any(|r| r == "Released"));
        }
    }
}

#[tokio::test]
async fn prune_disabled_objects_are_released_not_deleted() {
    let h = harness().await;
    let keep = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: precious\n  annotations:\n    krmsync.dev/prune: disabled\n";
    h.bundle(
        NS,
        "app",
        &[
            ("kustomization.yaml", &kust(&["keep.yaml", "cm.yaml"])),
            ("keep.yaml", keep),
            ("cm.yaml", &cm("plain", "1")),
        ],
    );
    h.kustomization(NS, "app", json!({}));
    h.reconcile_ready(NS, "app").await;
    h.bundle(NS, "app", &[("kustomization.yaml", &kust(&[]))]);
    h.reconcile_ready(NS, "app").await;
    assert!(h.object("v1", "ConfigMap", Some(NS), "plain").is_none());
    let kept = h
        .object("v1", "ConfigMap", Some(NS), "precious")
        .expect("kept");
    assert_eq!(labels(&kept), (None, None));
}

#[tokio::test]
async fn deleting_every_namespace_at_once_is_refused_unless_acknowledged() {
    let h = harness().await;
    let nss = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n1\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: n2\n";
    h.bundle(
        NS,
        "app",
        &[
            ("kustomization.yaml", &kust(&["ns.yaml", "cm.yaml"])),
            ("ns.yaml", nss),
            ("cm.yaml", &cm("c", "1")),
        ],
    );
    h.kustomization(NS, "app", json!({"deleteNamespacesAndCRDs": true}));
    h.reconcile_ready(NS, "app").await;

    // e.g. a broken commit that lost the namespaces file
    one_configmap_bundle(&h, "app", "c", "1");
    let (_, ready) = h.reconcile_failing(NS, "app", "DeletionRefused").await;
    assert!(ready.message.contains("n1") && ready.message.contains("n2"));
    assert!(h.object("v1", "Namespace", None, "n1").is_some());
    assert!(h.object("v1", "Namespace", None, "n2").is_some());

    h.annotate(
        NS,
        "app",
        "krmsync.dev/allow-namespace-mass-deletion",
        "true",
    )
    .await;
    h.reconcile_ready(NS, "app").await;
    assert!(h.object("v1", "Namespace", None, "n1").is_none());
    assert!(h.object("v1", "Namespace", None, "n2").is_none());
}

#[tokio::test]
async fn kustomization_names_longer_than_a_label_value_work() {
    let h = harness().await;
    let name = format!("{}-app", "very-long-kustomization-name".repeat(3));
    assert!(name.len() > 63);
    h.bundle(
        NS,
        &name,
        &[
            ("kustomization.yaml", &kust(&["a.yaml", "b.yaml"])),
            ("a.yaml", &cm("a", "1")),
            ("b.yaml", &cm("b", "1")),
        ],
    );
    h.kustomization(NS, &name, json!({}));
    h.reconcile_ready(NS, &name).await;
    let a = h.object("v1", "ConfigMap", Some(NS), "a").unwrap();
    let label = a["metadata"]["labels"][NAME_LABEL].as_str().unwrap();
    assert!(label.len() <= 63, "{label}");
    assert_eq!(
        a["metadata"]["annotations"][OWNER_ANNOTATION],
        format!("{NS}/{name}")
    );
    // prune and the stored manifests work with the hashed label
    h.bundle(
        NS,
        &name,
        &[
            ("kustomization.yaml", &kust(&["a.yaml"])),
            ("a.yaml", &cm("a", "1")),
        ],
    );
    let k = h.reconcile_ready(NS, &name).await;
    assert!(h.object("v1", "ConfigMap", Some(NS), "b").is_none());
    assert!(k.status.unwrap().rendered.is_some());
}

/// The CRD of `example.com` Widgets with `versions` (JSON).
fn widget_crd(versions: &str) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"kind": "Widget", "plural": "widgets"},
                 "versions": serde_json::from_str::<Value>(versions).unwrap()}})
}

#[tokio::test]
async fn objects_recorded_under_an_api_version_no_longer_served_are_still_pruned() {
    let h = harness().await;
    h.fake.insert(widget_crd(r#"[{"name": "v1", "served": true, "storage": true}, {"name": "v2", "served": true, "storage": false}]"#));
    let widget =
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 1\n";
    h.bundle(
        NS,
        "app",
        &[
            ("kustomization.yaml", &kust(&["w.yaml", "cm.yaml"])),
            ("w.yaml", widget),
            ("cm.yaml", &cm("c", "1")),
        ],
    );
    h.kustomization(NS, "app", json!({}));
    h.reconcile_ready(NS, "app").await;
    assert!(
        h.object("example.com/v2", "Widget", Some(NS), "w")
            .is_some()
    );

    // the cluster stops serving v1; the next revision drops the Widget
    h.fake.insert(widget_crd(r#"[{"name": "v1", "served": false, "storage": false}, {"name": "v2", "served": true, "storage": true}]"#));
    h.bundle(
        NS,
        "app",
        &[
            ("kustomization.yaml", &kust(&["cm.yaml"])),
            ("cm.yaml", &cm("c", "1")),
        ],
    );
    h.reconcile_ready(NS, "app").await;
    assert!(
        h.object("example.com/v2", "Widget", Some(NS), "w")
            .is_none(),
        "pruned through v2"
    );
}

/// An object handed over to a Kustomization that is later deleted with
/// `Orphan` is adopted back by the previous owner, which still renders it.
#[tokio::test]
async fn a_handed_over_object_whose_new_owner_is_gone_is_adopted_back() {
    let h = harness().await;
    h.bundle(
        NS,
        "old",
        &[
            ("kustomization.yaml", &kust(&["cm.yaml"])),
            ("cm.yaml", &cm("moving", "old")),
        ],
    );
    h.kustomization(NS, "old", json!({}));
    h.reconcile_ready(NS, "old").await;
    adopting_bundle(&h, "new");
    h.kustomization(NS, "new", json!({"deletionPolicy": "Orphan"}));
    h.reconcile_ready(NS, "new").await;
    h.delete(NS, "new").await;
    assert!(h.get_opt(NS, "new").await.is_none());

    let k = h.reconcile_ready(NS, "old").await;
    assert!(
        !condition(&k, "Applied").message.contains("handed over"),
        "{:?}",
        k.status
    );
    let obj = h.object("v1", "ConfigMap", Some(NS), "moving").unwrap();
    assert_eq!(labels(&obj), (Some("old"), Some(NS)));
    assert_eq!(obj["data"]["v"], "old");
    let inv = k.status.unwrap().inventory.unwrap();
    assert!(
        inv.entries.iter().any(|e| e.id.contains("moving")),
        "{inv:?}"
    );
}

/// A Secret someone else put at the name of the stored manifests (409 on
/// create) is neither used nor overwritten: the reconcile reports
/// StorageFailed.
#[tokio::test]
async fn a_foreign_secret_at_the_stored_manifests_name_is_refused() {
    let h = harness().await;
    let files = [
        ("kustomization.yaml", kust(&["cm.yaml"])),
        ("cm.yaml", cm("c", "1")),
    ];
    let refs: Vec<(&str, &str)> = files.iter().map(|(a, b)| (*a, b.as_str())).collect();
    h.bundle(NS, "app", &refs);
    // the name the controller will use: `<name>-rendered-<16 hex of the digest>-0`
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in &files {
        std::fs::write(dir.path().join(rel), text).unwrap();
    }
    let out = krmsync::controller::render::render_tree(dir.path(), None, None).unwrap();
    let hex = out.digest.trim_start_matches("sha256:");
    let name = format!("app-rendered-{}-0", &hex[..16]);
    h.fake.insert(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": NS}, "data": {"x": "eA=="}}));

    h.kustomization(NS, "app", json!({}));
    let (_, ready) = h.reconcile_failing(NS, "app", "StorageFailed").await;
    assert!(
        ready.message.contains("refusing to use it"),
        "{}",
        ready.message
    );
    let secret = h.object("v1", "Secret", Some(NS), &name).unwrap();
    assert_eq!(secret["data"], json!({"x": "eA=="}), "left as it was");
}

/// The controller shares what discovery found between reconciles. When the
/// cluster stops serving the version a bundle still renders, the apply's
/// 404 makes it ask again, and the failure names the kind as not served
/// (not a bare "not found"); nothing is pruned.
#[tokio::test]
async fn a_version_no_longer_served_fails_the_apply_clearly_despite_the_shared_discovery() {
    let h = harness().await;
    h.fake.insert(widget_crd(r#"[{"name": "v1", "served": true, "storage": true}, {"name": "v2", "served": true, "storage": false}]"#));
    let files = |size: &str| {
        vec![
            (
                "kustomization.yaml".to_string(),
                kust(&["w.yaml", "cm.yaml"]),
            ),
            (
                "w.yaml".to_string(),
                format!(
                    "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: {size}\n"
                ),
            ),
            ("cm.yaml".to_string(), cm("c", "1")),
        ]
    };
    let push = |size: &str| {
        let f = files(size);
        let refs: Vec<(&str, &str)> = f.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        h.bundle(NS, "app", &refs);
    };
    push("1");
    h.kustomization(NS, "app", json!({}));
    h.reconcile_ready(NS, "app").await;

    // v1 is no longer served; the next revision still renders a v1 Widget
    h.fake.insert(widget_crd(r#"[{"name": "v1", "served": false, "storage": false}, {"name": "v2", "served": true, "storage": true}]"#));
    push("2");
    let k = h.reconcile(NS, "app").await;
    let ready = support::condition(&k, "Ready");
    assert_eq!(ready.status, "False", "{ready:?}");
    assert!(
        ready
            .message
            .contains("the cluster serves no Widget in example.com/v1"),
        "{}",
        ready.message
    );
    assert!(h.object("v1", "ConfigMap", Some(NS), "c").is_some());
    assert!(
        h.object("example.com/v2", "Widget", Some(NS), "w")
            .is_some(),
        "nothing is pruned after a failed apply"
    );
}

/// Two Kustomizations that render the same object and reconcile at the
/// same moment: both read it before either writes it (every ConfigMap
/// write is held back), so neither sees the other as its owner and both
/// apply it. The labels of the last write decide: the object ends with
/// that owner's labels and content, the owner keeps it, the other is
/// refused (`OwnershipConflict`) from its next reconcile on, and deleting
/// the other leaves the object, in either order of the writes.
#[tokio::test]
async fn two_kustomizations_racing_for_one_object_end_with_one_owner() {
    for (first, second) in [("east", "west"), ("west", "east")] {
        let h = harness().await;
        for ks in ["east", "west"] {
            h.bundle(
                NS,
                ks,
                &[
                    ("kustomization.yaml", &kust(&["cm.yaml", "own.yaml"])),
                    ("cm.yaml", &cm("shared", ks)),
                    ("own.yaml", &cm(&format!("{ks}-only"), ks)),
                ],
            );
            // created with the finalizer: the first reconcile is the race
            h.fake.insert(json!({
                "apiVersion": "krmsync.dev/v1alpha1", "kind": "Kustomization",
                "metadata": {"name": ks, "namespace": NS,
                             "finalizers": ["krmsync.dev/finalizer"]},
                "spec": {"source": {"bundle": {"configMapRef": {"name": ks}}},
                         "interval": "5m"},
            }));
        }
        h.fake
            .delay("POST", "/configmaps", std::time::Duration::from_millis(300));
        h.fake.delay(
            "PATCH",
            "/configmaps",
            std::time::Duration::from_millis(300),
        );
        h.poke(NS, first).await;
        h.poke(NS, second).await;
        h.fake.clear_requests();
        let (a, b) = tokio::join!(h.reconcile_once(NS, first), async {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            h.reconcile_once(NS, second).await
        });
        for ks in ["east", "west"] {
            let k = h.get(NS, ks).await;
            eprintln!(
                "RACE {ks} {:?}",
                k.status.as_ref().map(|s| s
                    .conditions
                    .iter()
                    .map(|c| (c.type_.clone(), c.reason.clone(), c.message.clone()))
                    .collect::<Vec<_>>())
            );
        }
        let _ = (a, b); // either may fail: the other wrote first
        h.fake.clear_failures();
        // the race happened: both wrote the object, each planning it absent
        let writes = h
            .fake
            .requests()
            .into_iter()
            .filter(|r| {
                matches!(r.method.as_str(), "POST" | "PATCH")
                    && !r.query.contains("dryRun")
                    && (r.path.ends_with("/configmaps/shared")
                        || r.body
                            .as_ref()
                            .is_some_and(|b| b["metadata"]["name"] == "shared"))
            })
            .count();
        assert_eq!(writes, 2, "the reconciles did not race");

        let shared = h.object("v1", "ConfigMap", Some(NS), "shared").unwrap();
        let owner = labels(&shared)
            .0
            .unwrap_or_else(|| panic!("nobody's after the race: {shared}"))
            .to_string();
        let loser = if owner == "east" { "west" } else { "east" };
        assert_eq!(shared["data"]["v"], owner.as_str(), "{shared}");
        let lists = |k: &krmsync::api::Kustomization| {
            k.status
                .as_ref()
                .and_then(|s| s.inventory.as_ref())
                .is_some_and(|i| i.entries.iter().any(|e| e.id.contains("_shared_")))
        };

        // from then on: the owner is Ready, the other refused
        let k = h.reconcile_ready(NS, &owner).await;
        assert!(lists(&k), "the owner lost it from its inventory");
        let (_, ready) = h.reconcile_failing(NS, loser, "OwnershipConflict").await;
        assert!(ready.message.contains("shared"), "{}", ready.message);
        let shared = h.object("v1", "ConfigMap", Some(NS), "shared").unwrap();
        assert_eq!(labels(&shared).0, Some(owner.as_str()), "{shared}");
        assert_eq!(shared["data"]["v"], owner.as_str());

        // deleting the other one leaves the object to its owner
        h.delete(NS, loser).await;
        assert!(h.get_opt(NS, loser).await.is_none());
        let shared = h
            .object("v1", "ConfigMap", Some(NS), "shared")
            .unwrap_or_else(|| panic!("deleting {loser} deleted {owner}'s object"));
        assert_eq!(labels(&shared).0, Some(owner.as_str()));
        assert!(
            h.object("v1", "ConfigMap", Some(NS), &format!("{loser}-only"))
                .is_none()
        );
        h.reconcile_ready(NS, &owner).await;
        assert!(h.object("v1", "ConfigMap", Some(NS), "shared").is_some());
    }
}
