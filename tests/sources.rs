//! Git and HTTP sources through the controller, against the in-memory API
//! server: a tracked branch follows new commits, pinned tags and commits do
//! not, an HTTP bundle is verified and fetched once per digest, switching
//! the kind of source keeps the objects, and no failed fetch (a repository
//! gone, a branch or commit missing, a credential Secret missing, a 404, a
//! 500, a tampered body) prunes or deletes anything. The `e2e` tier runs the
//! git source against a real API server; `src/source` tests the fetchers
//! alone.

mod support;

use krmsync::api::Kustomization;
use krmsync::controller::Settings;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::harness::{cm_yaml as cm, kust};
use support::{GitRepo, Harness, condition};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const NS: &str = "apps";

async fn harness() -> Harness {
    let h = Harness::new(Settings {
        allow_insecure_sources: true,
        ..Settings::default()
    })
    .await;
    h.namespace(NS);
    h
}

fn git_source(url: &str, reference: Value) -> Value {
    json!({"source": {"git": {"url": url, "ref": reference}}, "path": "app"})
}

/// A `.tar.gz` bundle of `files` and its `sha256` (hex).
fn tarball(files: &[(&str, &str)]) -> (Vec<u8>, String) {
    let bytes = support::harness::bundle_bytes(files);
    let digest = format!("{:x}", Sha256::digest(&bytes));
    (bytes, digest)
}

/// The bundle of one ConfigMap `name` holding `v: value`.
fn one_configmap(name: &str, value: &str) -> (Vec<u8>, String) {
    tarball(&[
        ("kustomization.yaml", &kust(&["cm.yaml"])),
        ("cm.yaml", &cm(name, value)),
    ])
}

async fn serve(server: &MockServer, at: &str, status: u16, body: Vec<u8>) {
    Mock::given(method("GET"))
        .and(path(at))
        .respond_with(ResponseTemplate::new(status).set_body_bytes(body))
        .mount(server)
        .await;
}

async fn requests_for(server: &MockServer, at: &str) -> usize {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|r| r.url.path() == at)
        .count()
}

fn status(k: &Kustomization) -> &krmsync::api::kustomization::KustomizationStatus {
    k.status.as_ref().expect("a status")
}

fn inventory_ids(k: &Kustomization) -> Vec<String> {
    status(k)
        .inventory
        .as_ref()
        .map(|i| i.entries.iter().map(|e| e.id.clone()).collect())
        .unwrap_or_default()
}

/// Replaces the Kustomization's `spec.source` and `spec.path` with those of
/// `spec` (a merge patch would merge the old source's fields in).
async fn set_source(h: &Harness, ns: &str, name: &str, spec: Value) {
    let mut k = h.get(ns, name).await;
    k.spec.source = serde_json::from_value(spec["source"].clone()).unwrap();
    k.spec.path = spec["path"].as_str().map(str::to_string);
    h.api(ns)
        .replace(name, &Default::default(), &k)
        .await
        .unwrap();
}

/// The inventory id of the ConfigMap `name` of `apps`.
fn cm_id(name: &str) -> String {
    krmsync::apply::inventory_entry("", "v1", "ConfigMap", Some(NS), name).id
}

fn configmap(h: &Harness, name: &str) -> Option<Value> {
    h.object("v1", "ConfigMap", Some(NS), name)
}

fn deletes(h: &Harness) -> usize {
    h.fake
        .requests()
        .iter()
        .filter(|r| r.method == "DELETE")
        .count()
}

#[tokio::test]
async fn a_tracked_branch_follows_new_commits_and_a_failed_fetch_or_render_keeps_everything() {
    let h = harness().await;
    let repo = GitRepo::new();
    repo.write("app/kustomization.yaml", &kust(&["a.yaml"]));
    repo.write("app/a.yaml", &cm("a", "1"));
    let c1 = repo.commit("a");
    h.kustomization(
        NS,
        "site",
        git_source(&repo.url(), json!({"branch": "main"})),
    );

    let k = h.reconcile_ready(NS, "site").await;
    assert_eq!(status(&k).last_applied_revision.as_deref(), Some(&*c1));
    assert!(configmap(&h, "a").is_some());

    // a new commit: the next reconcile applies it and prunes what it dropped
    repo.remove("app/a.yaml");
    repo.write("app/b.yaml", &cm("b", "1"));
    repo.write("app/kustomization.yaml", &kust(&["b.yaml"]));
    let c2 = repo.commit("b instead of a");
    let k = h.reconcile_ready(NS, "site").await;
    assert_eq!(status(&k).last_applied_revision.as_deref(), Some(&*c2));
    assert!(configmap(&h, "a").is_none(), "a pruned");
    assert_eq!(configmap(&h, "b").unwrap()["data"]["v"], "1");

    // the repository gone: SourceFailed naming it; nothing pruned or deleted
    let moved = h.fake.requests().len();
    let away = tempfile::tempdir().unwrap();
    let parked = away.path().join("repo");
    std::fs::rename(repo.path(), &parked).unwrap();
    let (k, ready) = h.reconcile_failing(NS, "site", "SourceFailed").await;
    assert!(
        ready.message.contains(repo.path().to_str().unwrap()),
        "{ready:?}"
    );
    assert!(configmap(&h, "b").is_some());
    assert_eq!(status(&k).last_applied_revision.as_deref(), Some(&*c2));
    assert_eq!(inventory_ids(&k), vec![cm_id("b")]);
    assert!(
        h.fake.requests()[moved..].iter().all(|r| r.method == "GET"
            || r.path.contains("kustomizations")
            || r.path.contains("events")),
        "a failed fetch writes nothing but the Kustomization and an Event: {:?}",
        h.fake.requests()[moved..]
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect::<Vec<_>>()
    );
    std::fs::rename(&parked, repo.path()).unwrap();
    let k = h.reconcile_ready(NS, "site").await;
    assert_eq!(status(&k).last_applied_revision.as_deref(), Some(&*c2));

    // a commit that does not render: RenderFailed, the last revision stays
    repo.write("app/kustomization.yaml", &kust(&["b.yaml", "missing.yaml"]));
    let c3 = repo.commit("broken");
    let (k, ready) = h.reconcile_failing(NS, "site", "RenderFailed").await;
    assert!(ready.message.contains("missing.yaml"), "{ready:?}");
    assert_eq!(status(&k).last_attempted_revision.as_deref(), Some(&*c3));
    assert_eq!(status(&k).last_applied_revision.as_deref(), Some(&*c2));
    assert!(configmap(&h, "b").is_some());

    // deleting the Kustomization needs no source: its inventory goes
    std::fs::rename(repo.path(), &parked).unwrap();
    h.delete(NS, "site").await;
    assert!(h.get_opt(NS, "site").await.is_none());
    assert!(configmap(&h, "b").is_none(), "b deleted with its owner");
    std::fs::rename(&parked, repo.path()).unwrap();
}

#[tokio::test]
async fn pinned_tags_and_commits_stay_put_and_missing_references_are_named() {
    let h = harness().await;
    let repo = GitRepo::new();
    repo.write("app/kustomization.yaml", &kust(&["a.yaml"]));
    repo.write("app/a.yaml", &cm("a", "1"));
    let c1 = repo.commit("one");
    repo.tag("v1", &c1);
    for ns in ["by-tag", "by-commit", "by-default"] {
        h.namespace(ns);
    }
    let spec = |reference: Value| {
        let mut s = git_source(&repo.url(), reference.clone());
        if reference.is_null() {
            s["source"]["git"].as_object_mut().unwrap().remove("ref");
        }
        s
    };
    h.kustomization("by-tag", "site", spec(json!({"tag": "v1"})));
    h.kustomization("by-commit", "site", spec(json!({"commit": c1})));
    h.kustomization("by-default", "site", spec(Value::Null));
    for ns in ["by-tag", "by-commit", "by-default"] {
        let k = h.reconcile_ready(ns, "site").await;
        assert_eq!(status(&k).last_applied_revision.as_deref(), Some(&*c1));
    }

    repo.write("app/a.yaml", &cm("a", "2"));
    let c2 = repo.commit("two");
    for (ns, want, value) in [
        ("by-tag", &c1, "1"),
        ("by-commit", &c1, "1"),
        ("by-default", &c2, "2"),
    ] {
        let k = h.reconcile_ready(ns, "site").await;
        assert_eq!(
            status(&k).last_applied_revision.as_deref(),
            Some(want.as_str()),
            "{ns}"
        );
        let live = h.object("v1", "ConfigMap", Some(ns), "a").unwrap();
        assert_eq!(live["data"]["v"], value, "{ns}");
    }

    // references that do not exist fail the fetch, named, and keep `a`
    let missing_commit = "0123456789abcdef0123456789abcdef01234567";
    for (reference, named) in [
        (json!({"branch": "nope"}), "nope"),
        (json!({"tag": "v9"}), "v9"),
        (json!({"commit": missing_commit}), missing_commit),
    ] {
        set_source(&h, "by-tag", "site", spec(reference.clone())).await;
        let k = h.reconcile("by-tag", "site").await;
        let ready = condition(&k, "Ready");
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "SourceFailed"),
            "{reference}: {ready:?}"
        );
        assert!(ready.message.contains(named), "{reference}: {ready:?}");
        assert_eq!(
            h.object("v1", "ConfigMap", Some("by-tag"), "a").unwrap()["data"]["v"],
            "1",
            "{reference}"
        );
    }
}

#[tokio::test]
async fn an_http_bundle_is_verified_fetched_once_per_digest_and_failures_keep_everything() {
    let h = harness().await;
    let server = MockServer::start().await;
    let http = |at: &str, sha256: &str| json!({"source": {"http": {"url": format!("{}{at}", server.uri()), "sha256": sha256}}});
    let (v1, d1) = one_configmap("a", "1");
    serve(&server, "/v1.tgz", 200, v1).await;
    h.kustomization(NS, "site", http("/v1.tgz", &d1));
    let k = h.reconcile_ready(NS, "site").await;
    assert_eq!(
        status(&k).last_applied_revision.as_deref(),
        Some(&*format!("sha256:{d1}"))
    );
    assert!(configmap(&h, "a").is_some());
    // the same digest again (a forced reconcile, then a restart): no download
    h.reconcile_ready(NS, "site").await;
    let mut h = h;
    h.restart();
    h.reconcile_ready(NS, "site").await;
    assert_eq!(requests_for(&server, "/v1.tgz").await, 1);

    // a new bundle: applied, and what it dropped is pruned
    let (v2, d2) = one_configmap("b", "1");
    serve(&server, "/v2.tgz", 200, v2).await;
    set_source(&h, NS, "site", http("/v2.tgz", &d2)).await;
    let k = h.reconcile_ready(NS, "site").await;
    assert_eq!(
        status(&k).last_applied_revision.as_deref(),
        Some(&*format!("sha256:{d2}"))
    );
    assert!(configmap(&h, "a").is_none());
    assert!(configmap(&h, "b").is_some());

    // what fails, each named, prunes and deletes nothing
    let (_, d3) = one_configmap("c", "1");
    let (tampered, _) = one_configmap("c", "tampered");
    serve(&server, "/v3.tgz", 200, tampered).await;
    serve(&server, "/gone.tgz", 404, Vec::new()).await;
    serve(&server, "/down.tgz", 500, Vec::new()).await;
    let before = deletes(&h);
    for (at, named) in [
        ("/v3.tgz", d3.as_str()),
        ("/gone.tgz", "404"),
        ("/down.tgz", "500"),
    ] {
        set_source(&h, NS, "site", http(at, &d3)).await;
        let (k, ready) = h.reconcile_failing(NS, "site", "SourceFailed").await;
        assert!(
            ready.message.contains(at) && ready.message.contains(named),
            "{at}: {ready:?}"
        );
        assert_eq!(
            status(&k).last_applied_revision.as_deref(),
            Some(&*format!("sha256:{d2}")),
            "{at}"
        );
        assert!(configmap(&h, "b").is_some(), "{at}");
        assert!(configmap(&h, "c").is_none(), "{at}: nothing of it applied");
    }
    assert_eq!(deletes(&h), before, "no failed fetch deleted anything");

    // the server back: the same spec recovers
    server.reset().await;
    let (v3, _) = one_configmap("c", "1");
    serve(&server, "/down.tgz", 200, v3).await;
    let k = h.reconcile_ready(NS, "site").await;
    assert_eq!(
        status(&k).last_applied_revision.as_deref(),
        Some(&*format!("sha256:{d3}"))
    );
    assert!(configmap(&h, "b").is_none());
    assert!(configmap(&h, "c").is_some());
}

#[tokio::test]
async fn switching_between_bundle_git_and_http_keeps_the_objects() {
    let h = harness().await;
    let files = [
        ("app/kustomization.yaml", kust(&["a.yaml"])),
        ("app/a.yaml", cm("a", "1")),
    ];
    let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
    h.bundle(NS, "site", &files);
    h.kustomization(NS, "site", json!({"path": "app"}));
    h.reconcile_ready(NS, "site").await;
    let uid = || configmap(&h, "a").unwrap()["metadata"]["uid"].clone();
    let first = uid();

    let repo = GitRepo::new();
    for (p, t) in &files {
        repo.write(p, t);
    }
    let commit = repo.commit("the same tree");
    let server = MockServer::start().await;
    let (bytes, digest) = tarball(&files);
    serve(&server, "/site.tgz", 200, bytes).await;
    let before = deletes(&h);
    for (spec, revision) in [
        (git_source(&repo.url(), json!({"branch": "main"})), commit),
        (
            json!({"source": {"http": {"url": format!("{}/site.tgz", server.uri()),
                "sha256": digest}}, "path": "app"}),
            format!("sha256:{digest}"),
        ),
        (
            json!({"source": {"bundle": {"configMapRef": {"name": "site"}}}, "path": "app"}),
            status(&h.get(NS, "site").await)
                .last_applied_revision
                .clone()
                .unwrap(),
        ),
    ] {
        set_source(&h, NS, "site", spec.clone()).await;
        let k = h.reconcile_ready(NS, "site").await;
        assert_eq!(
            status(&k).last_applied_revision.as_deref(),
            Some(revision.as_str()),
            "{spec}"
        );
        assert_eq!(uid(), first, "{spec}: the object was not recreated");
        assert_eq!(inventory_ids(&k), vec![cm_id("a")]);
    }
    assert_eq!(deletes(&h), before, "switching sources deleted nothing");
}

#[tokio::test]
async fn git_credential_secrets_must_exist_and_hold_credentials() {
    let h = harness().await;
    let repo = GitRepo::new();
    repo.write("app/kustomization.yaml", &kust(&["a.yaml"]));
    repo.write("app/a.yaml", &cm("a", "1"));
    repo.commit("a");
    h.kustomization(
        NS,
        "site",
        git_source(&repo.url(), json!({"branch": "main"})),
    );
    h.reconcile_ready(NS, "site").await;

    let with = |field: &str, secret: &str| {
        let mut s = git_source(&repo.url(), json!({"branch": "main"}));
        s["source"]["git"][field] = json!({"name": secret});
        s
    };
    h.fake.insert(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "empty", "namespace": NS}, "data": {"username": "dQ=="}}));
    for (spec, named) in [
        (
            with("secretRef", "absent"),
            "spec.source.git.secretRef".to_string(),
        ),
        (with("secretRef", "empty"), format!("Secret {NS}/empty")),
        (with("caSecretRef", "empty"), "ca.crt".to_string()),
    ] {
        set_source(&h, NS, "site", spec.clone()).await;
        let (_, ready) = h.reconcile_failing(NS, "site", "SourceFailed").await;
        assert!(ready.message.contains(&named), "{spec}: {ready:?}");
        assert!(configmap(&h, "a").is_some());
    }
}
