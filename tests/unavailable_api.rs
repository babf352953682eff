//! An API server that answers 429, 503 or 504: a transient refusal is
//! retried inside the request, a lasting one fails the reconcile within
//! seconds (with the server's message) instead of holding its slot for
//! minutes, as kube's default retry policy would (15 attempts, delays
//! doubling up to 1,000 s).

mod support;

use std::time::{Duration, Instant};

use krmsync::controller::Settings;
use krmsync::controller::context::API_RETRIES;
use kube::ResourceExt;
use serde_json::json;
use support::Harness;

const NS: &str = "apps";

fn cm(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  v: x\n")
}

/// `app` converged on the ConfigMaps `a` and `b`.
async fn converged() -> Harness {
    let h = Harness::new(Settings::default()).await;
    h.namespace(NS);
    h.bundle(
        NS,
        "app",
        &[
            ("kustomization.yaml", "resources: [a.yaml, b.yaml]\n"),
            ("a.yaml", &cm("a")),
            ("b.yaml", &cm("b")),
        ],
    );
    h.kustomization(NS, "app", json!({}));
    h.reconcile_ready(NS, "app").await;
    h
}

/// The next revision drops `a`.
fn drop_a(h: &Harness) {
    h.bundle(
        NS,
        "app",
        &[
            ("kustomization.yaml", "resources: [b.yaml]\n"),
            ("b.yaml", &cm("b")),
        ],
    );
}

fn deletes_of_a(h: &Harness) -> usize {
    h.fake
        .requests()
        .iter()
        .filter(|r| r.method == "DELETE" && r.path.ends_with("/configmaps/a"))
        .count()
}

#[tokio::test]
async fn a_lasting_503_fails_the_reconcile_in_seconds() {
    let h = converged().await;
    drop_a(&h);
    h.fake.fail(
        "DELETE",
        "/configmaps/a",
        503,
        "the server is currently unable to handle the request",
    );
    h.fake.clear_requests();
    let started = Instant::now();
    let (_, ready) = h.reconcile_failing(NS, "app", "PruneFailed").await;
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(20),
        "a lasting 503 held the reconcile for {took:?}"
    );
    assert!(
        ready.message.contains("unable to handle the request"),
        "{}",
        ready.message
    );
    assert_eq!(deletes_of_a(&h), 1 + API_RETRIES as usize);
    assert!(h.object("v1", "ConfigMap", Some(NS), "a").is_some());

    // the API is back: the next reconcile finishes the prune
    h.fake.clear_failures();
    h.reconcile_ready(NS, "app").await;
    assert!(h.object("v1", "ConfigMap", Some(NS), "a").is_none());
}

#[tokio::test]
async fn a_transient_refusal_is_retried_within_the_request() {
    let h = converged().await;
    drop_a(&h);
    h.fake
        .fail_nth("DELETE", "/configmaps/a", 1, 429, "too many requests");
    h.fake.fail_nth(
        "DELETE",
        "/configmaps/a",
        2,
        503,
        "the server is shutting down",
    );
    h.fake.clear_requests();
    h.reconcile_ready(NS, "app").await;
    assert!(h.object("v1", "ConfigMap", Some(NS), "a").is_none());
    assert_eq!(deletes_of_a(&h), 3);
}

#[tokio::test]
async fn a_deletion_against_a_lasting_503_keeps_the_finalizer_and_returns() {
    let h = converged().await;
    h.fake.fail("DELETE", "/configmaps/", 503, "unavailable");
    h.api(NS).delete("app", &Default::default()).await.unwrap();
    let started = Instant::now();
    let _ = h.reconcile_once(NS, "app").await;
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let k = h.get(NS, "app").await;
    assert!(k.finalizers().iter().any(|f| f == "krmsync.dev/finalizer"));
    assert!(k.metadata.deletion_timestamp.is_some());

    h.fake.clear_failures();
    h.reconcile_once(NS, "app").await.unwrap();
    assert!(h.get_opt(NS, "app").await.is_none());
    for name in ["a", "b"] {
        assert!(
            h.object("v1", "ConfigMap", Some(NS), name).is_none(),
            "{name} left"
        );
    }
}
