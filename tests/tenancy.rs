//! The multi-tenant lockdown: the controller runs with exactly the RBAC of
//! `config/rbac/` without the `krmsync-applier` binding, enforced by the
//! in-memory API server, and tenants must not get out of their namespace.

mod support;

use krmsync::controller::Settings;
use serde_json::json;
use support::harness::{CONTROLLER_USER, kust, repo_yaml};
use support::{Harness, condition};

const OWN_CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mine\ndata:\n  a: b\n";
const FOREIGN_SECRET: &str = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: planted\n  namespace: team-b\nstringData:\n  token: x\n";

async fn tenants(settings: Settings) -> Harness {
    let h = Harness::locked_down(settings).await;
    h.namespace("team-a");
    h.namespace("team-b");
    h
}

fn escaping_bundle(h: &Harness) {
    h.bundle(
        "team-a",
        "app",
        &[
            ("kustomization.yaml", &kust(&["cm.yaml", "secret.yaml"])),
            ("cm.yaml", OWN_CM),
            ("secret.yaml", FOREIGN_SECRET),
        ],
    );
}

/// The scenario: a Kustomization without a ServiceAccount whose
/// bundle holds a Secret of another namespace, the applier binding deleted.
#[tokio::test]
async fn without_a_service_account_nothing_is_written_as_the_controller() {
    let h = tenants(Settings::default()).await;
    escaping_bundle(&h);
    h.kustomization("team-a", "app", json!({}));
    let k = h.reconcile("team-a", "app").await;
    assert_eq!(condition(&k, "Ready").status, "False", "{:?}", k.status);
    assert!(
        h.object("v1", "Secret", Some("team-b"), "planted")
            .is_none()
    );
    assert!(
        h.object("v1", "ConfigMap", Some("team-a"), "mine")
            .is_none()
    );
}

#[tokio::test]
async fn require_service_account_refuses_before_doing_anything() {
    let h = tenants(Settings {
        require_service_account: true,
        ..Settings::default()
    })
    .await;
    escaping_bundle(&h);
    h.kustomization("team-a", "app", json!({}));
    h.fake.clear_requests();
    let (k, ready) = h
        .reconcile_failing("team-a", "app", "ServiceAccountRequired")
        .await;
    assert!(
        ready.message.contains("spec.serviceAccountName"),
        "{}",
        ready.message
    );
    assert_eq!(condition(&k, "Stalled").status, "True");
    // not even the bundle was read
    assert!(
        h.fake
            .requests()
            .iter()
            .all(|r| !r.path.contains("/configmaps/")),
        "{:?}",
        h.fake
            .requests()
            .iter()
            .map(|r| &r.path)
            .collect::<Vec<_>>()
    );
    assert!(
        h.object("v1", "Secret", Some("team-b"), "planted")
            .is_none()
    );
    // the controller's own RBAC lets it record why
    assert!(
        h.event_reasons()
            .iter()
            .any(|r| r == "ServiceAccountRequired"),
        "{:?}",
        h.event_reasons()
    );
}

#[tokio::test]
async fn a_service_account_bounds_what_is_applied_and_nothing_is_partially_applied() {
    for via_default in [false, true] {
        let settings = Settings {
            require_service_account: true,
            default_service_account: via_default.then(|| "deployer".to_string()),
            ..Settings::default()
        };
        let h = tenants(settings).await;
        h.service_account("team-a", "deployer", "admin");
        escaping_bundle(&h);
        let spec = if via_default {
            json!({})
        } else {
            json!({"serviceAccountName": "deployer"})
        };
        h.kustomization("team-a", "app", spec.clone());
        let (_, ready) = h.reconcile_failing("team-a", "app", "ApplyFailed").await;
        assert!(
            ready.message.contains("team-b") && ready.message.contains("forbidden"),
            "{}",
            ready.message
        );
        assert!(
            h.object("v1", "Secret", Some("team-b"), "planted")
                .is_none()
        );
        // the dry-run refused the set as a whole: the allowed ConfigMap was not written either
        assert!(
            h.object("v1", "ConfigMap", Some("team-a"), "mine")
                .is_none()
        );
        // every request about tenant content ran as the ServiceAccount
        let as_tenant = "system:serviceaccount:team-a:deployer";
        for r in h.fake.requests() {
            if r.path.contains("/secrets") || r.path.contains("/configmaps") {
                assert_eq!(r.user, as_tenant, "{} {}", r.method, r.path);
            }
        }

        // within its namespace it works, and the rendered manifests are
        // stored with its identity
        h.bundle(
            "team-a",
            "app",
            &[
                ("kustomization.yaml", &kust(&["cm.yaml"])),
                ("cm.yaml", OWN_CM),
            ],
        );
        let k = h.reconcile_ready("team-a", "app").await;
        let stored = k.status.unwrap().rendered.unwrap();
        assert!(
            h.object("v1", "Secret", Some("team-a"), &stored.secrets[0])
                .is_some()
        );
        assert!(h.fake.requests().iter().any(|r| r.method == "POST"
            && r.path.ends_with("/namespaces/team-a/secrets")
            && r.user == as_tenant));
    }
}

#[tokio::test]
async fn source_secrets_are_read_as_the_service_account() {
    let h = tenants(Settings::default()).await;
    // may read ConfigMaps only
    h.fake.insert(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "configmap-reader"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]}));
    h.service_account("team-a", "reader", "configmap-reader");
    h.secret_bundle(
        "team-a",
        "app",
        &[
            ("kustomization.yaml", &kust(&["cm.yaml"])),
            ("cm.yaml", OWN_CM),
        ],
    );
    h.kustomization(
        "team-a",
        "app",
        json!({
            "serviceAccountName": "reader",
            "source": {"bundle": {"secretRef": {"name": "app"}}},
        }),
    );
    let (_, ready) = h.reconcile_failing("team-a", "app", "SourceFailed").await;
    assert!(
        ready.message.contains("403") || ready.message.contains("forbidden"),
        "{}",
        ready.message
    );
    let reads: Vec<_> = h
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "GET" && r.path.ends_with("/secrets/app"))
        .collect();
    assert!(!reads.is_empty());
    assert!(
        reads
            .iter()
            .all(|r| r.user == "system:serviceaccount:team-a:reader")
    );
}

#[tokio::test]
async fn insecure_sources_are_refused_unless_the_operator_allows_them() {
    for (url, allowed) in [
        ("file:///etc", false),
        ("http://10.0.0.1/repo.git", false),
        ("file:///etc", true),
    ] {
        let h = Harness::new(Settings {
            allow_insecure_sources: allowed,
            ..Settings::default()
        })
        .await;
        h.namespace("team-a");
        h.kustomization("team-a", "app", json!({"source": {"git": {"url": url}}}));
        let k = h.reconcile("team-a", "app").await;
        let ready = condition(&k, "Ready");
        assert_eq!(ready.status, "False");
        if allowed {
            assert_ne!(ready.reason, "InvalidSpec", "{ready:?}");
        } else {
            assert_eq!(ready.reason, "InvalidSpec", "{ready:?}");
            assert!(
                ready.message.contains("--allow-insecure-sources"),
                "{}",
                ready.message
            );
        }
    }
    let h = Harness::new(Settings::default()).await;
    h.namespace("team-a");
    h.kustomization(
        "team-a",
        "app",
        json!({"source": {"http": {"url": "http://169.254.169.254/b.tgz",
        "sha256": "0".repeat(64)}}}),
    );
    let k = h.reconcile("team-a", "app").await;
    assert_eq!(condition(&k, "Ready").reason, "InvalidSpec");
}

/// The controller's own ClusterRole grants nothing over tenant content.
#[test]
fn the_controller_cluster_role_grants_no_tenant_writes_or_secret_reads() {
    let role = repo_yaml("config/rbac/cluster_role.yaml").remove(0);
    for rule in role["rules"].as_array().unwrap() {
        let list = |k: &str| -> Vec<String> {
            rule[k]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect()
        };
        let (groups, resources, verbs) = (list("apiGroups"), list("resources"), list("verbs"));
        assert!(
            !groups.contains(&"*".to_string()) && !resources.contains(&"*".to_string()),
            "{rule}"
        );
        for r in ["secrets", "configmaps"] {
            assert!(
                !resources.contains(&r.to_string()),
                "the controller needs no {r} rights: {rule}"
            );
        }
        let writes = [
            "create",
            "update",
            "patch",
            "delete",
            "deletecollection",
            "*",
        ];
        if verbs.iter().any(|v| writes.contains(&v.as_str())) {
            let ok = resources.iter().all(|r| {
                r.starts_with("kustomizations") || r.starts_with("catalogs") || r == "events"
            });
            assert!(
                ok,
                "write rights beyond krmsync's own objects and events: {rule}"
            );
        }
    }
    // the binding that makes the controller cluster-admin is separate
    assert_eq!(
        repo_yaml("config/rbac/cluster_role_binding.yaml")[0]["roleRef"]["name"],
        "krmsync-controller"
    );
    let _ = CONTROLLER_USER;
}
