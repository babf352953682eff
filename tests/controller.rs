//! Reconciler tests against the in-memory API server (`tests/support`).
//!
//! Each test builds a bundle on disk, stores it in the cluster as an
//! in-cluster bundle (the source the controller needs no network for) and
//! drives `kustomization::reconcile` the way the controller runtime does.

mod support;

use std::path::Path;
use std::sync::Arc;

use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use support::FakeApi;

use krmsync::api::Kustomization;
use krmsync::controller::metrics::Metrics;
use krmsync::controller::{Context, Settings, kustomization};
use krmsync::source::Workspace;

const NS: &str = "apps";

struct Env {
    fake: FakeApi,
    ctx: Arc<Context>,
    metrics: Arc<Metrics>,
    src: tempfile::TempDir,
    _work: tempfile::TempDir,
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

const CM: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: blue\n";
const SVC: &str =
    "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n";

async fn env() -> Env {
    let fake = FakeApi::start().await;
    fake.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}));
    let work = tempfile::tempdir().unwrap();
    let metrics = Arc::new(Metrics::new());
    let ctx = Context::new(
        fake.client(),
        fake.config(),
        Workspace::new(work.path()).unwrap(),
        metrics.clone(),
        Settings::default(),
    )
    .unwrap();
    let src = tempfile::tempdir().unwrap();
    write(
        src.path(),
        "app/kustomization.yaml",
        "resources: [cm.yaml, svc.yaml]\n",
    );
    write(src.path(), "app/cm.yaml", CM);
    write(src.path(), "app/svc.yaml", SVC);
    let e = Env {
        fake,
        ctx: Arc::new(ctx),
        metrics,
        src,
        _work: work,
    };
    e.push_bundle();
    e
}

impl Env {
    /// Stores the current source tree as ConfigMap `bundle`.
    fn push_bundle(&self) {
        let data = krmsync::source::create_bundle(self.src.path()).unwrap();
        let b64 = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, data);
        self.fake.insert(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "bundle", "namespace": NS},
            "binaryData": {"bundle.tar.gz": b64},
        }));
    }

    fn create(&self, name: &str, extra_spec: Value) {
        let mut spec = json!({
            "source": {"bundle": {"configMapRef": {"name": "bundle"}}},
            "path": "app",
            "interval": "5m",
        });
        for (k, v) in extra_spec.as_object().unwrap() {
            spec[k] = v.clone();
        }
        self.fake.insert(json!({
            "apiVersion": "krmsync.dev/v1alpha1", "kind": "Kustomization",
            "metadata": {"name": name, "namespace": NS},
            "spec": spec,
        }));
    }

    fn api(&self) -> Api<Kustomization> {
        Api::namespaced(self.fake.client(), NS)
    }

    async fn get(&self, name: &str) -> Kustomization {
        self.api().get(name).await.unwrap()
    }

    /// One reconcile of the object as the API server has it now.
    async fn reconcile_once(&self, name: &str) -> Action {
        let k = self.get(name).await;
        kustomization::reconcile(Arc::new(k), self.ctx.clone())
            .await
            .unwrap()
    }

    /// Reconciles until the finalizer is in place and a full pass ran.
    async fn reconcile(&self, name: &str) -> Kustomization {
        for _ in 0..3 {
            let before = self.get(name).await;
            let had_finalizer = before
                .finalizers()
                .iter()
                .any(|f| f == "krmsync.dev/finalizer");
            self.reconcile_once(name).await;
            if had_finalizer {
                break;
            }
        }
        self.get(name).await
    }

    /// Forces the next reconcile, as `krmsync.dev/reconcile-at` does.
    async fn poke(&self, name: &str, value: &str) {
        let patch = json!({"metadata": {"annotations": {"krmsync.dev/reconcile-at": value}}});
        self.api()
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }

    fn object(&self, api_version: &str, kind: &str, name: &str) -> Option<Value> {
        self.fake.get(api_version, kind, Some(NS), name)
    }

    fn deletes(&self) -> Vec<String> {
        self.fake
            .requests()
            .into_iter()
            .filter(|r| r.method == "DELETE" && !r.path.contains("/secrets/"))
            .map(|r| r.path)
            .collect()
    }
}

fn condition<'a>(
    k: &'a Kustomization,
    type_: &str,
) -> &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    k.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
        .unwrap_or_else(|| panic!("no {type_} condition in {:?}", k.status))
}

#[tokio::test]
async fn success_path_applies_labels_and_reports_status() {
    let e = env().await;
    e.create("site", json!({}));
    let k = e.reconcile("site").await;
    assert!(
        k.finalizers()
            .contains(&"krmsync.dev/finalizer".to_string())
    );
    let ready = condition(&k, "Ready");
    assert_eq!(ready.status, "True", "{ready:?}");
    assert_eq!(ready.reason, "Succeeded");
    assert_eq!(condition(&k, "Rendered").status, "True");
    assert_eq!(condition(&k, "Applied").status, "True");
    assert!(
        condition(&k, "Applied").message.contains("2 created"),
        "{:?}",
        condition(&k, "Applied")
    );
    let st = k.status.clone().unwrap();
    assert_eq!(st.observed_generation, k.metadata.generation);
    assert_eq!(st.resource_count, Some(2));
    let rev = st.last_applied_revision.clone().unwrap();
    assert!(rev.starts_with("sha256:"), "{rev}");
    assert_eq!(st.last_attempted_revision.as_deref(), Some(rev.as_str()));
    assert_eq!(st.inventory.as_ref().unwrap().entries.len(), 2);
    assert!(
        st.rendered_digest
            .as_deref()
            .unwrap()
            .starts_with("sha256:")
    );

    let cm = e
        .object("v1", "ConfigMap", "settings")
        .expect("ConfigMap applied");
    assert_eq!(cm["data"]["color"], "blue");
    assert_eq!(cm["metadata"]["labels"]["krmsync.dev/name"], "site");
    assert_eq!(cm["metadata"]["labels"]["krmsync.dev/namespace"], NS);
    let applies: Vec<_> = e
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "PATCH" && r.path.ends_with("/configmaps/settings"))
        .collect();
    assert_eq!(
        applies[0].query_param("fieldManager").as_deref(),
        Some("krmsync")
    );

    // the rendered manifests are stored and read back byte for byte
    // a first apply writes the Kustomization twice: before any object, one
    // patch adds the finalizer and records the pending inventory; after
    // everything, one status write settles it (and has no Reconciling)
    let reqs = e.fake.requests();
    let pos = |f: &dyn Fn(&support::fake_api::Recorded) -> bool| -> Vec<usize> {
        reqs.iter()
            .enumerate()
            .filter(|(_, r)| f(r))
            .map(|(i, _)| i)
            .collect()
    };
    let meta_writes = pos(&|r| r.method == "PATCH" && r.path.ends_with("/kustomizations/site"));
    let status_writes =
        pos(&|r| r.method == "PATCH" && r.path.ends_with("/kustomizations/site/status"));
    let object_writes = pos(&|r| {
        r.method == "PATCH" && r.path.contains("/configmaps/") && r.query_param("dryRun").is_none()
    });
    assert_eq!(meta_writes.len(), 1, "{reqs:?}");
    assert_eq!(status_writes.len(), 1, "{reqs:?}");
    assert!(meta_writes[0] < object_writes[0]);
    assert!(status_writes[0] > *object_writes.last().unwrap());
    let body = reqs[meta_writes[0]].body.clone().unwrap();
    assert_eq!(
        body["metadata"]["finalizers"],
        json!(["krmsync.dev/finalizer"])
    );
    let pending: Value = serde_json::from_str(
        body["metadata"]["annotations"]["krmsync.dev/pending-inventory"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(pending["entries"].as_array().unwrap().len(), 2, "{pending}");
    assert_eq!(
        st.settled_attempt.as_deref(),
        pending["attempt"].as_str(),
        "the final status settles the pending inventory"
    );
    assert!(st.conditions.iter().all(|c| c.type_ != "Reconciling"));

    let rendered = st.rendered.clone().unwrap();
    let text = krmsync::controller::storage::load(&e.fake.client(), NS, &rendered)
        .await
        .unwrap();
    let expected =
        krmsync::controller::render::render_tree(e.src.path(), Some("app"), None).unwrap();
    assert_eq!(text, expected.yaml);
    assert_eq!(rendered.digest, expected.digest);
    let stored = e
        .fake
        .get("v1", "Secret", Some(NS), &rendered.secrets[0])
        .unwrap();
    assert_eq!(stored["metadata"]["ownerReferences"][0]["name"], "site");
}

#[tokio::test]
async fn unchanged_revision_skips_render_and_writes() {
    let e = env().await;
    e.create("site", json!({}));
    e.reconcile("site").await;
    // an event before the interval (e.g. our own status write) is a no-op
    let k = e.get("site").await;
    e.fake.clear_requests();
    let action = kustomization::reconcile(Arc::new(k), e.ctx.clone())
        .await
        .unwrap();
    assert!(e.fake.requests().is_empty(), "{:?}", e.fake.requests());
    assert!(action != Action::await_change());
    // a forced reconcile of the same revision re-applies without rendering
    e.poke("site", "1").await;
    let k = e.get("site").await;
    e.fake.clear_requests();
    kustomization::reconcile(Arc::new(k), e.ctx.clone())
        .await
        .unwrap();
    let text = e.metrics.encode();
    assert!(text.contains("krmsync_renders_skipped_total 1"), "{text}");
    let reqs = e.fake.requests();
    let writes: Vec<_> = reqs
        .iter()
        .filter(|r| r.method != "GET")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(
        writes,
        vec!["PATCH /apis/krmsync.dev/v1alpha1/namespaces/apps/kustomizations/site/status"],
        "nothing changed: no apply, no dry-run, only the status (lastHandledReconcileAt)"
    );
    let per_object: Vec<_> = reqs
        .iter()
        .filter(|r| r.path.ends_with("/configmaps/settings") || r.path.ends_with("/services/web"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(
        per_object.is_empty(),
        "no request per object: {per_object:?}"
    );
    let k = e.get("site").await;
    assert_eq!(
        k.status.unwrap().last_handled_reconcile_at.as_deref(),
        Some("1")
    );
    println!("unchanged-revision reconcile: {} API requests", reqs.len());
}

#[tokio::test]
async fn render_error_keeps_objects_and_reports_reason() {
    let e = env().await;
    e.create("site", json!({}));
    e.reconcile("site").await;
    write(
        e.src.path(),
        "app/kustomization.yaml",
        "resources: [cm.yaml]\nnamePrefix: [oops\n",
    );
    e.push_bundle();
    e.poke("site", "broken").await;
    e.fake.clear_requests();
    let k = e.reconcile("site").await;
    let ready = condition(&k, "Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "RenderFailed")
    );
    assert!(
        ready.message.contains("kustomization.yaml"),
        "names the file: {}",
        ready.message
    );
    assert_eq!(condition(&k, "Rendered").status, "False");
    assert_eq!(
        condition(&k, "Applied").status,
        "True",
        "the previous apply still stands"
    );
    assert!(
        e.deletes().is_empty(),
        "nothing deleted after a failed render: {:?}",
        e.deletes()
    );
    assert!(e.object("v1", "ConfigMap", "settings").is_some());
    assert!(e.object("v1", "Service", "web").is_some());
    let st = k.status.unwrap();
    assert_ne!(st.last_attempted_revision, st.last_applied_revision);
}

#[tokio::test]
async fn remote_reference_is_refused() {
    let e = env().await;
    write(
        e.src.path(),
        "app/kustomization.yaml",
        "resources:\n- cm.yaml\n- https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v5.5.0\n",
    );
    e.push_bundle();
    e.create("site", json!({}));
    let k = e.reconcile("site").await;
    let ready = condition(&k, "Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "RemoteReference")
    );
    assert!(
        ready
            .message
            .contains("https://github.com/kubernetes-sigs/kustomize"),
        "{}",
        ready.message
    );
    assert!(
        ready.message.contains("krmsync localize"),
        "{}",
        ready.message
    );
    assert!(
        e.object("v1", "ConfigMap", "settings").is_none(),
        "nothing applied"
    );
}

#[tokio::test]
async fn removed_object_is_pruned_only_if_ours() {
    let e = env().await;
    e.create("site", json!({}));
    e.reconcile("site").await;
    write(
        e.src.path(),
        "app/kustomization.yaml",
        "resources: [cm.yaml]\n",
    );
    e.push_bundle();
    e.poke("site", "2").await;
    let k = e.reconcile("site").await;
    assert_eq!(condition(&k, "Ready").status, "True");
    assert!(e.object("v1", "Service", "web").is_none(), "pruned");
    assert!(e.object("v1", "ConfigMap", "settings").is_some());
    assert!(
        condition(&k, "Applied").message.contains("1 pruned"),
        "{:?}",
        condition(&k, "Applied")
    );
    assert_eq!(k.status.unwrap().inventory.unwrap().entries.len(), 1);
}

#[tokio::test]
async fn prune_false_leaves_removed_objects() {
    let e = env().await;
    e.create("site", json!({"prune": false}));
    e.reconcile("site").await;
    write(
        e.src.path(),
        "app/kustomization.yaml",
        "resources: [cm.yaml]\n",
    );
    e.push_bundle();
    e.poke("site", "2").await;
    e.reconcile("site").await;
    assert!(e.object("v1", "Service", "web").is_some());
}

#[tokio::test]
async fn apply_failure_prunes_nothing() {
    let e = env().await;
    e.create("site", json!({}));
    e.reconcile("site").await;
    write(
        e.src.path(),
        "app/kustomization.yaml",
        "resources: [cm.yaml]\n",
    );
    write(e.src.path(), "app/cm.yaml", &CM.replace("blue", "red"));
    e.push_bundle();
    e.fake
        .fail("PATCH", "/configmaps/settings", 500, "etcd is on fire");
    e.poke("site", "3").await;
    let k = e.reconcile("site").await;
    let ready = condition(&k, "Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "ApplyFailed")
    );
    assert!(ready.message.contains("settings"), "{}", ready.message);
    assert_eq!(condition(&k, "Applied").status, "False");
    assert!(
        e.object("v1", "Service", "web").is_some(),
        "no prune after a failed apply"
    );
}

/// kstatus: a suspended Kustomization reports Ready=Unknown, reason
/// Suspended, for its current generation; deleting it prunes nothing.
#[tokio::test]
async fn suspension_is_reported_and_honoured_on_deletion() {
    let e = env().await;
    e.create("site", json!({}));
    let k = e.reconcile("site").await;
    assert_eq!(condition(&k, "Ready").status, "True");
    assert!(e.object("v1", "ConfigMap", "settings").is_some());

    let patch = json!({"spec": {"suspend": true}});
    e.api()
        .patch("site", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    e.reconcile_once("site").await;
    let k = e.get("site").await;
    let ready = condition(&k, "Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("Unknown", "Suspended")
    );
    let st = k.status.as_ref().unwrap();
    assert_eq!(
        st.observed_generation, k.metadata.generation,
        "observedGeneration is current"
    );
    assert!(st.conditions.iter().all(|c| c.type_ != "Reconciling"));
    // a second event writes nothing
    e.fake.clear_requests();
    e.reconcile_once("site").await;
    assert!(
        e.fake.requests().iter().all(|r| r.method == "GET"),
        "{:?}",
        e.fake.requests()
    );

    e.api().delete("site", &Default::default()).await.unwrap();
    e.reconcile_once("site").await;
    assert!(
        e.api().get_opt("site").await.unwrap().is_none(),
        "finalizer released"
    );
    assert!(
        e.object("v1", "ConfigMap", "settings").is_some(),
        "a suspended Kustomization prunes nothing on deletion"
    );
}

#[tokio::test]
async fn suspended_kustomization_is_left_alone() {
    let e = env().await;
    e.create("site", json!({"suspend": true}));
    e.reconcile("site").await;
    assert!(e.object("v1", "ConfigMap", "settings").is_none());
    assert!(
        !e.fake
            .requests()
            .iter()
            .any(|r| r.path.contains("/configmaps/bundle")),
        "the source is not even read"
    );
}

#[tokio::test]
async fn deletion_policy_delete_prunes_and_orphan_keeps() {
    for (policy, kept) in [("Delete", false), ("Orphan", true)] {
        let e = env().await;
        e.create("site", json!({"deletionPolicy": policy}));
        e.reconcile("site").await;
        e.api().delete("site", &Default::default()).await.unwrap();
        let k = e.get("site").await;
        assert!(
            k.metadata.deletion_timestamp.is_some(),
            "the finalizer holds the object"
        );
        kustomization::reconcile(Arc::new(k), e.ctx.clone())
            .await
            .unwrap();
        assert!(
            e.api().get_opt("site").await.unwrap().is_none(),
            "finalizer removed"
        );
        assert_eq!(
            e.object("v1", "ConfigMap", "settings").is_some(),
            kept,
            "{policy}"
        );
        assert_eq!(e.object("v1", "Service", "web").is_some(), kept, "{policy}");
    }
}

#[tokio::test]
async fn service_account_is_impersonated() {
    let e = env().await;
    e.create("site", json!({"serviceAccountName": "deployer"}));
    e.reconcile("site").await;
    let applies: Vec<_> = e
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "PATCH" && r.path.contains("/configmaps/settings"))
        .collect();
    assert!(!applies.is_empty());
    for r in applies {
        assert_eq!(
            r.headers.get("impersonate-user").map(String::as_str),
            Some("system:serviceaccount:apps:deployer")
        );
    }
    // the controller's own reads and status writes are not impersonated
    let status_writes: Vec<_> = e
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/status"))
        .collect();
    assert!(!status_writes.is_empty());
    assert!(
        status_writes
            .iter()
            .all(|r| !r.headers.contains_key("impersonate-user"))
    );
}

#[tokio::test]
async fn target_namespace_overrides_bundle_namespace() {
    let e = env().await;
    e.fake
        .insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}}));
    e.create("site", json!({"targetNamespace": "prod"}));
    let k = e.reconcile("site").await;
    assert_eq!(condition(&k, "Ready").status, "True", "{:?}", k.status);
    assert!(
        e.fake
            .get("v1", "ConfigMap", Some("prod"), "settings")
            .is_some()
    );
    assert!(e.object("v1", "ConfigMap", "settings").is_none());
}

#[tokio::test]
async fn invalid_spec_stalls() {
    let e = env().await;
    e.create("site", json!({"path": "../outside"}));
    let k = e.reconcile("site").await;
    assert_eq!(condition(&k, "Ready").reason, "InvalidSpec");
    assert_eq!(condition(&k, "Stalled").status, "True");
    assert!(condition(&k, "Stalled").message.contains("spec.path"));
}

#[tokio::test]
async fn missing_bundle_is_a_source_failure() {
    let e = env().await;
    e.create(
        "site",
        json!({"source": {"bundle": {"configMapRef": {"name": "nope"}}}}),
    );
    let k = e.reconcile("site").await;
    let ready = condition(&k, "Ready");
    assert_eq!(ready.reason, "SourceFailed");
    assert!(
        ready.message.contains("ConfigMap apps/nope"),
        "{}",
        ready.message
    );
}

#[tokio::test]
async fn catalogs_must_exist_be_ready_and_allow_the_namespace() {
    let e = env().await;
    e.create("site", json!({"catalogs": ["fns"]}));
    let k = e.reconcile("site").await;
    assert_eq!(condition(&k, "Ready").reason, "CatalogNotFound");

    let catalog = json!({
        "apiVersion": "krmsync.dev/v1alpha1", "kind": "Catalog",
        "metadata": {"name": "fns"},
        "spec": {"krmFunctions": [{"group": "example.com", "names": {"kind": "SetX"}, "versions": [
            {"name": "v1", "runtime": {"container": {"image": "example/setx:v1"}}}]}],
            "allowedNamespaces": {"names": ["other"]}},
    });
    e.fake.insert(catalog.clone());
    let capi: Api<krmsync::api::Catalog> = Api::all(e.fake.client());
    let c = capi.get("fns").await.unwrap();
    krmsync::controller::catalog::reconcile(Arc::new(c), e.ctx.clone())
        .await
        .unwrap();
    let c = capi.get("fns").await.unwrap();
    assert_eq!(c.status.as_ref().unwrap().function_count, 1);
    e.poke("site", "a").await;
    let k = e.reconcile("site").await;
    assert_eq!(
        condition(&k, "Ready").reason,
        "CatalogNotAllowed",
        "{:?}",
        condition(&k, "Ready")
    );

    let mut allowed = catalog.clone();
    allowed["spec"]["allowedNamespaces"] = json!({"selector": {"matchLabels": {"team": "web"}}});
    e.fake.insert(allowed);
    e.fake.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS, "labels": {"team": "web"}}}));
    let c = capi.get("fns").await.unwrap();
    krmsync::controller::catalog::reconcile(Arc::new(c), e.ctx.clone())
        .await
        .unwrap();
    e.poke("site", "b").await;
    let k = e.reconcile("site").await;
    assert_eq!(
        condition(&k, "Ready").status,
        "True",
        "{:?}",
        condition(&k, "Ready")
    );
}

#[tokio::test]
async fn invalid_catalog_reports_validation_errors() {
    let e = env().await;
    e.fake.insert(json!({
        "apiVersion": "krmsync.dev/v1alpha1", "kind": "Catalog",
        "metadata": {"name": "bad"},
        "spec": {"krmFunctions": [{"group": "example.com", "names": {"kind": "X"}, "versions": [
            {"name": "v1", "runtime": {"exec": {"platforms": [{"bin": "x", "os": "linux", "arch": "amd64", "uri": "https://example.com/x.tgz"}]}}}]}]},
    }));
    let capi: Api<krmsync::api::Catalog> = Api::all(e.fake.client());
    let c = capi.get("bad").await.unwrap();
    krmsync::controller::catalog::reconcile(Arc::new(c), e.ctx.clone())
        .await
        .unwrap();
    let c = capi.get("bad").await.unwrap();
    let st = c.status.unwrap();
    let ready = &st.conditions[0];
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "ValidationFailed")
    );
    assert!(
        ready.message.contains("platforms[0].sha256"),
        "{}",
        ready.message
    );
}
