//! A controller under test: the in-memory API server, a `Context` and
//! helpers to store bundles, create Kustomizations and drive reconciles the
//! way the controller runtime does. Used by the feature test files
//! (`tenancy`, `ownership`, `crash_consistency`).

use std::path::Path;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use krmsync::api::Kustomization;
use krmsync::controller::metrics::Metrics;
use krmsync::controller::{Context, Settings, kustomization};
use krmsync::source::Workspace;

use super::FakeApi;

/// The controller's ServiceAccount as installed by `config/`.
pub const CONTROLLER_USER: &str = "system:serviceaccount:krmsync-system:krmsync-controller";

pub struct Harness {
    pub fake: FakeApi,
    pub ctx: Arc<Context>,
    pub metrics: Arc<Metrics>,
    config: kube::Config,
    settings: Settings,
    work: tempfile::TempDir,
}

/// Reads a multi-document YAML file of the repository as JSON values.
pub fn repo_yaml(rel: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{rel}: {e}"));
    text.split("\n---")
        .filter(|d| {
            d.lines()
                .any(|l| !l.trim().is_empty() && !l.starts_with('#'))
        })
        .map(|d| serde_saphyr::from_str::<Value>(d).unwrap_or_else(|e| panic!("{rel}: {e}")))
        .collect()
}

/// A ConfigMap `name` holding `v: "<value>"`, as a bundle file.
pub fn cm_yaml(name: &str, value: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  v: \"{value}\"\n")
}

/// A kustomization.yaml listing `resources`.
pub fn kust(resources: &[&str]) -> String {
    format!("resources: [{}]\n", resources.join(", "))
}

/// A `.tar.gz` bundle of `files` (path, content).
pub fn bundle_bytes(files: &[(&str, &str)]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in files {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    krmsync::source::create_bundle(dir.path()).unwrap()
}

/// Stores `files` as the bundle ConfigMap `name` in `ns` of `fake`.
pub fn insert_bundle(fake: &FakeApi, ns: &str, name: &str, files: &[(&str, &str)]) {
    insert_bundle_data(fake, ns, name, &bundle_bytes(files));
}

/// Stores the directory `dir` as the bundle ConfigMap `name` in `ns` of
/// `fake` (binary files and symlinks included).
pub fn insert_bundle_dir(fake: &FakeApi, ns: &str, name: &str, dir: &Path) {
    insert_bundle_data(
        fake,
        ns,
        name,
        &krmsync::source::create_bundle(dir).unwrap(),
    );
}

fn insert_bundle_data(fake: &FakeApi, ns: &str, name: &str, data: &[u8]) {
    fake.insert(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "binaryData": {"bundle.tar.gz": b64(data)},
    }));
}

fn b64(data: &[u8]) -> String {
    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, data)
}

/// How a test names a crash point: `write 3`, `write 3 (answer lost)`
/// (see [`FakeApi::crash_after`]).
pub fn crash_point(k: usize, lose_response: bool) -> String {
    format!(
        "write {k}{}",
        if lose_response { " (answer lost)" } else { "" }
    )
}

pub fn condition<'a>(k: &'a Kustomization, type_: &str) -> &'a Condition {
    k.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
        .unwrap_or_else(|| panic!("no {type_} condition in {:?}", k.status))
}

impl Harness {
    /// A controller acting with an unrestricted identity (no RBAC).
    pub async fn new(settings: Settings) -> Harness {
        let fake = FakeApi::start().await;
        Self::with(fake.clone(), fake.config(), settings)
    }

    /// A controller acting as its ServiceAccount with exactly the RBAC of
    /// `config/rbac/` minus the `krmsync-applier` binding (the multi-tenant
    /// lockdown the README describes), enforced by the API server.
    pub async fn locked_down(settings: Settings) -> Harness {
        let fake = FakeApi::start().await;
        fake.set_rbac(true);
        for file in [
            "config/rbac/cluster_role.yaml",
            "config/rbac/cluster_role_binding.yaml",
        ] {
            for doc in repo_yaml(file) {
                fake.insert(doc);
            }
        }
        fake.insert(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "krmsync-system"}}));
        let config = fake.config_as(CONTROLLER_USER);
        Self::with(fake, config, settings)
    }

    fn with(fake: FakeApi, config: kube::Config, settings: Settings) -> Harness {
        let work = tempfile::tempdir().unwrap();
        let metrics = Arc::new(Metrics::new());
        let ctx = Self::context(&config, &settings, work.path(), &metrics);
        Harness {
            fake,
            ctx,
            metrics,
            config,
            settings,
            work,
        }
    }

    fn context(
        config: &kube::Config,
        settings: &Settings,
        work: &Path,
        metrics: &Arc<Metrics>,
    ) -> Arc<Context> {
        // the client the controller builds (retry policy included)
        let client = krmsync::controller::context::limited_client(config.clone(), None).unwrap();
        let ctx = Context::new(
            client,
            config.clone(),
            Workspace::new(work).unwrap(),
            metrics.clone(),
            settings.clone(),
        )
        .unwrap();
        Arc::new(ctx)
    }

    /// A controller process started again: a new `Context` (nothing kept
    /// in memory: caches, clients, leases) over the same API server and the
    /// same work directory, as after a container restart.
    pub fn restart(&mut self) {
        self.ctx = Self::context(
            &self.config,
            &self.settings,
            self.work.path(),
            &self.metrics,
        );
    }

    pub fn namespace(&self, name: &str) {
        self.fake
            .insert(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name}}));
    }

    /// An unmanaged ConfigMap `name` in `ns` holding `data.v: value`, as
    /// someone other than krmsync created it.
    pub fn configmap(&self, ns: &str, name: &str, value: &str) {
        self.fake
            .insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns}, "data": {"v": value}}));
    }

    /// A ServiceAccount `sa` in `ns` bound (RoleBinding in `ns`) to the
    /// ClusterRole `role` (`admin`, `edit`, `view`, or one inserted).
    pub fn service_account(&self, ns: &str, sa: &str, role: &str) {
        self.fake
            .insert(json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": sa, "namespace": ns}}));
        self.fake.insert(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": format!("{sa}-{role}"), "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}],
        }));
    }

    /// Stores `files` as the bundle ConfigMap `name` in `ns`.
    pub fn bundle(&self, ns: &str, name: &str, files: &[(&str, &str)]) {
        insert_bundle(&self.fake, ns, name, files);
    }

    /// Stores the directory `dir` as the bundle ConfigMap `name` in `ns`
    /// (binary files included).
    pub fn bundle_dir(&self, ns: &str, name: &str, dir: &Path) {
        insert_bundle_dir(&self.fake, ns, name, dir);
    }

    /// Stores `files` as the bundle Secret `name` in `ns`.
    pub fn secret_bundle(&self, ns: &str, name: &str, files: &[(&str, &str)]) {
        self.fake.insert(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": ns},
            "data": {"bundle.tar.gz": b64(&bundle_bytes(files))},
        }));
    }

    /// A Kustomization rendering the ConfigMap bundle `name` (same name),
    /// with `extra` merged into its spec.
    pub fn kustomization(&self, ns: &str, name: &str, extra: Value) {
        let mut spec = json!({
            "source": {"bundle": {"configMapRef": {"name": name}}},
            "interval": "5m",
        });
        for (k, v) in extra.as_object().unwrap() {
            spec[k] = v.clone();
        }
        self.fake.insert(json!({
            "apiVersion": "krmsync.dev/v1alpha1", "kind": "Kustomization",
            "metadata": {"name": name, "namespace": ns},
            "spec": spec,
        }));
    }

    pub fn api(&self, ns: &str) -> Api<Kustomization> {
        Api::namespaced(self.fake.client(), ns)
    }

    pub async fn get(&self, ns: &str, name: &str) -> Kustomization {
        self.api(ns).get(name).await.unwrap()
    }

    pub async fn get_opt(&self, ns: &str, name: &str) -> Option<Kustomization> {
        self.api(ns).get_opt(name).await.unwrap()
    }

    /// One reconcile of the object as the API server has it now.
    pub async fn reconcile_once(
        &self,
        ns: &str,
        name: &str,
    ) -> Result<Action, krmsync::controller::Error> {
        let k = self.get(ns, name).await;
        kustomization::reconcile(Arc::new(k), self.ctx.clone()).await
    }

    /// Sets a new `krmsync.dev/reconcile-at`, so the next reconcile is a
    /// full one.
    pub async fn poke(&self, ns: &str, name: &str) {
        let stamp = format!("{:?}", std::time::Instant::now());
        self.annotate(ns, name, "krmsync.dev/reconcile-at", &stamp)
            .await;
    }

    /// Sets annotation `key` of the Kustomization to `value`.
    pub async fn annotate(&self, ns: &str, name: &str, key: &str, value: &str) {
        let patch = json!({"metadata": {"annotations": {key: value}}});
        self.api(ns)
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }

    /// Forces the next reconcile ([`Harness::poke`]) and reconciles until
    /// the finalizer is in place and a full pass ran.
    pub async fn reconcile(&self, ns: &str, name: &str) -> Kustomization {
        self.poke(ns, name).await;
        for _ in 0..3 {
            let had = self
                .get(ns, name)
                .await
                .finalizers()
                .iter()
                .any(|f| f == "krmsync.dev/finalizer");
            self.reconcile_once(ns, name).await.unwrap();
            if had {
                break;
            }
        }
        self.get(ns, name).await
    }

    /// [`Harness::reconcile`], asserting `Ready=True`.
    pub async fn reconcile_ready(&self, ns: &str, name: &str) -> Kustomization {
        let k = self.reconcile(ns, name).await;
        assert_eq!(condition(&k, "Ready").status, "True", "{:?}", k.status);
        k
    }

    /// [`Harness::reconcile`], asserting `Ready=False` with `reason`;
    /// returns the Kustomization and its Ready condition.
    pub async fn reconcile_failing(
        &self,
        ns: &str,
        name: &str,
        reason: &str,
    ) -> (Kustomization, Condition) {
        let k = self.reconcile(ns, name).await;
        let ready = condition(&k, "Ready").clone();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", reason),
            "{ready:?}"
        );
        (k, ready)
    }

    /// Deletes the Kustomization and runs its finalizer once.
    pub async fn delete(&self, ns: &str, name: &str) {
        self.api(ns)
            .delete(name, &DeleteParams::default())
            .await
            .unwrap();
        if self.get_opt(ns, name).await.is_some() {
            self.reconcile_once(ns, name).await.unwrap();
        }
    }

    pub fn object(
        &self,
        api_version: &str,
        kind: &str,
        ns: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        self.fake.get(api_version, kind, ns, name)
    }

    /// Reasons of the Events recorded about Kustomizations.
    pub fn event_reasons(&self) -> Vec<String> {
        self.fake
            .list("v1", "Event")
            .into_iter()
            .filter_map(|e| e["reason"].as_str().map(str::to_string))
            .collect()
    }

    /// Messages of the Events with `reason`.
    pub fn event_notes(&self, reason: &str) -> Vec<String> {
        self.fake
            .list("v1", "Event")
            .into_iter()
            .filter(|e| e["reason"] == reason)
            .filter_map(|e| e["message"].as_str().map(str::to_string))
            .collect()
    }
}
