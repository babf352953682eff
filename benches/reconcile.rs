//! Reconcile cost against the in-memory API server (`tests/support`):
//! the first reconcile of N objects, a forced reconcile of an unchanged
//! revision (render skipped; objects nobody changed are not applied again), a watch
//! event that changes nothing, and a new revision changing one object.
//!
//! `cargo bench --bench reconcile` (N=1000), or `-- 5000` for another N.
//! It reports wall time and API requests per phase; the API server is
//! in-process, so the times are the controller's own cost plus loopback
//! HTTP, not a real API server's.

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use support::FakeApi;

use krmsync::api::Kustomization;
use krmsync::controller::metrics::Metrics;
use krmsync::controller::{Context, Settings, kustomization};
use krmsync::source::Workspace;

const NS: &str = "bench";

fn tree(dir: &Path, n: usize, version: &str) {
    let mut k = String::from("resources:\n");
    for i in 0..n {
        let file = format!("o{i}.yaml");
        let text = match i % 3 {
            0 => format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\ndata:\n  version: \"{}\"\n",
                if i == 0 { version } else { "1" }
            ),
            1 => format!(
                "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc-{i}\nspec:\n  selector: {{app: a{i}}}\n  ports:\n  - port: 80\n"
            ),
            _ => format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: dep-{i}\nspec:\n  replicas: 2\n  selector: {{matchLabels: {{app: a{i}}}}}\n  template:\n    metadata: {{labels: {{app: a{i}}}}}\n    spec:\n      containers:\n      - name: app\n        image: registry.example.com/app:1.{i}\n        ports: [{{containerPort: 8080}}]\n"
            ),
        };
        std::fs::write(dir.join(&file), text).unwrap();
        k.push_str(&format!("- {file}\n"));
    }
    k.push_str("commonLabels:\n  team: bench\n");
    std::fs::write(dir.join("kustomization.yaml"), k).unwrap();
}

fn push(fake: &FakeApi, dir: &Path) {
    let data = krmsync::source::create_bundle(dir).unwrap();
    let b64 = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, data);
    fake.insert(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "bundle", "namespace": NS},
        "binaryData": {"bundle.tar.gz": b64},
    }));
}

async fn phase(name: &str, fake: &FakeApi, ctx: &Arc<Context>, api: &Api<Kustomization>) {
    let k = api.get("site").await.unwrap();
    fake.clear_requests();
    let t = Instant::now();
    kustomization::reconcile(Arc::new(k), ctx.clone())
        .await
        .unwrap();
    let elapsed = t.elapsed();
    let reqs = fake.requests();
    let writes = reqs.iter().filter(|r| r.method != "GET").count();
    let k = api.get("site").await.unwrap();
    let ready = k
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"))
        .map(|c| format!("{} {}", c.status, c.reason))
        .unwrap_or_default();
    println!(
        "| {name} | {:.3} s | {} | {} | {ready} |",
        elapsed.as_secs_f64(),
        reqs.len(),
        writes
    );
}

async fn poke(api: &Api<Kustomization>, v: &str) {
    let p = json!({"metadata": {"annotations": {"krmsync.dev/reconcile-at": v}}});
    api.patch("site", &PatchParams::default(), &Patch::Merge(&p))
        .await
        .unwrap();
}

#[tokio::main]
async fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1000);
    let fake = FakeApi::start().await;
    fake.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}));
    let src = tempfile::tempdir().unwrap();
    tree(src.path(), n, "1");
    push(&fake, src.path());
    let work = tempfile::tempdir().unwrap();
    let ctx = Arc::new(
        Context::new(
            fake.client(),
            fake.config(),
            Workspace::new(work.path()).unwrap(),
            Arc::new(Metrics::new()),
            Settings::default(),
        )
        .unwrap(),
    );
    fake.insert(json!({
        "apiVersion": "krmsync.dev/v1alpha1", "kind": "Kustomization",
        "metadata": {"name": "site", "namespace": NS},
        "spec": {"source": {"bundle": {"configMapRef": {"name": "bundle"}}}, "interval": "10m"},
    }));
    let api: Api<Kustomization> = Api::namespaced(fake.client(), NS);

    println!("reconcile cost, N = {n} objects (in-process API server)\n");
    println!("| phase | wall | API requests | writes | Ready |");
    println!("| --- | --- | --- | --- | --- |");
    phase(
        "first reconcile (fetch, render, create all)",
        &fake,
        &ctx,
        &api,
    )
    .await;
    // the first apply added the finalizer with its first write
    assert!(api.get("site").await.unwrap().finalizers().len() == 1);
    phase("watch event, nothing changed", &fake, &ctx, &api).await;
    poke(&api, "1").await;
    phase(
        "forced, unchanged revision (render skipped)",
        &fake,
        &ctx,
        &api,
    )
    .await;
    tree(src.path(), n, "2");
    push(&fake, src.path());
    poke(&api, "2").await;
    phase("new revision, one object changed", &fake, &ctx, &api).await;
}
