//! Server-side apply, inventory and prune against the fake API server.

mod support;

use std::time::Duration;

use krmsync::api::kustomization::{Inventory, InventoryEntry};
use krmsync::api::{NAME_LABEL, NAMESPACE_LABEL};
use krmsync::apply::{
    Action, Applier, ApplyError, ApplyOptions, inventory_entry, parse_inventory_entry,
};
use serde_json::{Value, json};
use support::FakeApi;

fn opts() -> ApplyOptions {
    ApplyOptions {
        default_namespace: "prod".into(),
        crd_establish_timeout: Duration::from_secs(5),
        ..ApplyOptions::new("flux", "shop")
    }
}

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

fn configmap(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
           "data": {"key": value}})
}

fn deployment(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": name, "namespace": "prod", "labels": {"app": name}},
           "spec": {"replicas": replicas,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
        },
    })
}

fn widget(name: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
           "metadata": {"name": name, "namespace": "prod"}, "spec": {"size": 3}})
}

/// The writes the fake received (server-side dry-runs excluded).
fn writes(fake: &FakeApi) -> Vec<(String, String)> {
    fake.requests()
        .into_iter()
        .filter(|r| matches!(r.method.as_str(), "POST" | "PUT" | "PATCH" | "DELETE"))
        .filter(|r| r.query_param("dryRun").as_deref() != Some("All"))
        .map(|r| (r.method, r.path))
        .collect()
}

fn actions(report: &krmsync::apply::ApplyReport) -> Vec<(String, Action)> {
    report
        .objects
        .iter()
        .map(|o| (o.display.clone(), o.action))
        .collect()
}

#[tokio::test]
async fn create_then_unchanged_then_configured() {
    let fake = FakeApi::start().await;
    let applier = Applier::new(fake.client());
    let set = |value: &str| {
        vec![
            configmap("settings", value),
            deployment("web", 2),
            namespace("prod"),
        ]
    };

    let first = applier.apply(set("a"), &opts()).await.unwrap();
    // Namespaces go first.
    assert_eq!(
        actions(&first),
        vec![
            ("Namespace/prod".to_string(), Action::Created),
            ("ConfigMap/prod/settings".to_string(), Action::Created),
            ("apps/Deployment/prod/web".to_string(), Action::Created),
        ]
    );
    assert_eq!(first.summary(), "3 created, 0 configured, 0 unchanged");
    assert!(
        first.inventory().entries.iter().all(|e| e.h.is_some()),
        "every applied object has a fingerprint"
    );
    let without_fingerprints = |inv: Inventory| Inventory {
        entries: inv
            .entries
            .into_iter()
            .map(|e| InventoryEntry { h: None, ..e })
            .collect(),
    };
    assert_eq!(
        without_fingerprints(first.inventory()),
        Inventory {
            entries: vec![
                inventory_entry("", "v1", "Namespace", None, "prod"),
                inventory_entry("", "v1", "ConfigMap", Some("prod"), "settings"),
                inventory_entry("apps", "v1", "Deployment", Some("prod"), "web"),
            ]
            .into_iter()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
        }
    );
    for (av, kind, ns, name) in [
        ("v1", "Namespace", None, "prod"),
        ("v1", "ConfigMap", Some("prod"), "settings"),
        ("apps/v1", "Deployment", Some("prod"), "web"),
    ] {
        let obj = fake.get(av, kind, ns, name).unwrap();
        assert_eq!(obj["metadata"]["labels"][NAME_LABEL], "shop", "{obj}");
        assert_eq!(obj["metadata"]["labels"][NAMESPACE_LABEL], "flux", "{obj}");
    }
    let dep = fake
        .get("apps/v1", "Deployment", Some("prod"), "web")
        .unwrap();
    assert_eq!(dep["metadata"]["labels"]["app"], "web");
    let patches: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "PATCH")
        .collect();
    // a server-side dry-run of each object but the new ConfigMap (checked
    // locally), then the real apply of each
    assert_eq!(patches.len(), 5);
    let dry: Vec<_> = patches
        .iter()
        .filter(|p| p.query_param("dryRun").as_deref() == Some("All"))
        .collect();
    assert_eq!(dry.len(), 2);
    // the Namespace does not exist yet: what goes into it is dry-run only
    // once it was created; the new ConfigMap is created before the rest
    let order: Vec<(bool, &str)> = patches
        .iter()
        .map(|p| (p.query_param("dryRun").is_some(), p.path.as_str()))
        .collect();
    assert_eq!(
        order,
        [
            (true, "/api/v1/namespaces/prod"),
            (false, "/api/v1/namespaces/prod"),
            (true, "/apis/apps/v1/namespaces/prod/deployments/web"),
            (false, "/api/v1/namespaces/prod/configmaps/settings"),
            (false, "/apis/apps/v1/namespaces/prod/deployments/web"),
        ],
        "{order:?}"
    );
    for p in &patches {
        assert_eq!(p.query_param("fieldManager").as_deref(), Some("krmsync"));
        assert_eq!(p.query_param("force").as_deref(), Some("true"));
        assert_eq!(
            p.headers.get("content-type").map(String::as_str),
            Some("application/apply-patch+yaml")
        );
    }

    let again = applier.apply(set("a"), &opts()).await.unwrap();
    assert_eq!(again.summary(), "0 created, 0 configured, 3 unchanged");
    assert_eq!(again.inventory(), first.inventory());

    let changed = applier.apply(set("b"), &opts()).await.unwrap();
    assert_eq!(changed.summary(), "0 created, 1 configured, 2 unchanged");
    let settings = &changed.objects[1];
    assert_eq!(
        settings,
        &krmsync::apply::AppliedObject {
            entry: inventory_entry("", "v1", "ConfigMap", Some("prod"), "settings"),
            display: "ConfigMap/prod/settings".into(),
            action: Action::Configured,
            adopted: false,
            fingerprint: settings.fingerprint.clone(),
        }
    );
    assert!(
        settings.fingerprint.is_some(),
        "an applied object has a fingerprint"
    );
    let cm = fake
        .get("v1", "ConfigMap", Some("prod"), "settings")
        .unwrap();
    assert_eq!(cm["data"]["key"], "b");
}

#[tokio::test]
async fn crd_and_custom_resource_in_one_set() {
    let fake = FakeApi::start().await;
    let applier = Applier::new(fake.client());
    // The custom resource comes first in the input; the CRD is applied first anyway.
    let report = applier
        .apply(vec![widget("w1"), widget_crd()], &opts())
        .await
        .unwrap();
    assert_eq!(
        actions(&report),
        vec![
            (
                "apiextensions.k8s.io/CustomResourceDefinition/widgets.example.com".to_string(),
                Action::Created
            ),
            ("example.com/Widget/prod/w1".to_string(), Action::Created),
        ]
    );
    let w = fake
        .get("example.com/v1", "Widget", Some("prod"), "w1")
        .unwrap();
    assert_eq!(w["spec"]["size"], 3);
    assert_eq!(w["metadata"]["labels"][NAME_LABEL], "shop");

    // Order on the wire: CRD written, then checked for Established, then
    // discovery of the new group-version, then the custom resource.
    let reqs = fake.requests();
    let pos = |pred: &dyn Fn(&support::Recorded) -> bool| {
        reqs.iter()
            .rposition(pred)
            .unwrap_or_else(|| panic!("missing request in {reqs:#?}"))
    };
    let crd_patch = pos(&|r| r.method == "PATCH" && r.path.contains("customresourcedefinitions"));
    let crd_get = pos(&|r| {
        r.method == "GET"
            && r.path
                == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"
    });
    let disco = pos(&|r| r.method == "GET" && r.path == "/apis/example.com/v1");
    let cr_patch = pos(&|r| r.method == "PATCH" && r.path.contains("/widgets/w1"));
    assert!(
        crd_patch < crd_get && crd_get < disco && disco < cr_patch,
        "{reqs:#?}"
    );

    let again = applier
        .apply(vec![widget("w1"), widget_crd()], &opts())
        .await
        .unwrap();
    assert_eq!(again.summary(), "0 created, 0 configured, 2 unchanged");
}

#[tokio::test]
async fn crd_never_established_stops_before_custom_resources() {
    let fake = FakeApi::start().await;
    fake.set_crd_establish(false);
    let applier = Applier::new(fake.client());
    let mut o = opts();
    o.crd_establish_timeout = Duration::from_millis(600);
    let started = std::time::Instant::now();
    let err = applier
        .apply(vec![widget_crd(), widget("w1"), configmap("c", "x")], &o)
        .await
        .unwrap_err();
    assert!(started.elapsed() >= Duration::from_millis(550));
    match &err {
        ApplyError::CrdNotEstablished { object, .. } => {
            assert_eq!(
                object,
                "apiextensions.k8s.io/v1 CustomResourceDefinition widgets.example.com"
            );
        }
        other => panic!("expected CrdNotEstablished, got {other:?}"),
    }
    assert!(err.to_string().contains("widgets.example.com"), "{err}");
    assert_eq!(
        writes(&fake),
        vec![(
            "PATCH".to_string(),
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"
                .to_string()
        )]
    );
    assert!(fake.list("example.com/v1", "Widget").is_empty());
    assert!(fake.get("v1", "ConfigMap", Some("prod"), "c").is_none());
}

#[tokio::test]
async fn unknown_kind_writes_nothing() {
    let fake = FakeApi::start().await;
    let applier = Applier::new(fake.client());
    let gadget = json!({"apiVersion": "example.com/v1", "kind": "Gadget",
                        "metadata": {"name": "g", "namespace": "prod"}});
    let err = applier
        .apply(
            vec![namespace("prod"), configmap("c", "x"), gadget.clone()],
            &opts(),
        )
        .await
        .unwrap_err();
    match &err {
        ApplyError::UnknownKind {
            object,
            api_version,
            kind,
        } => {
            assert_eq!(object, "example.com/v1 Gadget prod/g");
            assert_eq!(api_version, "example.com/v1");
            assert_eq!(kind, "Gadget");
        }
        other => panic!("expected UnknownKind, got {other:?}"),
    }
    assert!(
        err.to_string()
            .starts_with("example.com/v1 Gadget prod/g: "),
        "{err}"
    );
    assert!(writes(&fake).is_empty(), "{:#?}", fake.requests());

    // A known group with an unknown kind, and a CRD in the set defining
    // another kind, are refused the same way.
    let thing = json!({"apiVersion": "apps/v1", "kind": "Thing", "metadata": {"name": "t"}});
    let err = applier
        .apply(vec![widget_crd(), widget("w"), thing], &opts())
        .await
        .unwrap_err();
    assert!(matches!(err, ApplyError::UnknownKind { .. }), "{err:?}");
    assert!(writes(&fake).is_empty(), "{:#?}", fake.requests());

    // Invalid objects too.
    let nameless = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}});
    let err = applier
        .apply(vec![configmap("c", "x"), nameless], &opts())
        .await
        .unwrap_err();
    match &err {
        ApplyError::InvalidObject { object, reason } => {
            assert!(object.starts_with("object #2"), "{object}");
            assert!(reason.contains("metadata.name"), "{reason}");
        }
        other => panic!("expected InvalidObject, got {other:?}"),
    }
    assert!(writes(&fake).is_empty(), "{:#?}", fake.requests());
}

#[tokio::test]
async fn namespace_defaulting_and_cluster_scoped() {
    let fake = FakeApi::start().await;
    let applier = Applier::new(fake.client());
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                      "metadata": {"name": "reader", "namespace": "ignored"},
                      "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
    let mut explicit = configmap("explicit", "x");
    explicit["metadata"]["namespace"] = json!("other");
    let report = applier
        .apply(vec![role, configmap("defaulted", "x"), explicit], &opts())
        .await
        .unwrap();
    let ids: Vec<String> = report.objects.iter().map(|o| o.entry.id.clone()).collect();
    // new ConfigMaps of the owner's namespace are created first (they are
    // not dry-run); one of another namespace is dry-run with the rest
    assert_eq!(
        ids,
        [
            "prod_defaulted__ConfigMap",
            "_reader_rbac.authorization.k8s.io_ClusterRole",
            "other_explicit__ConfigMap",
        ]
    );
    let r = fake
        .get(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            None,
            "reader",
        )
        .unwrap();
    assert!(r["metadata"].get("namespace").is_none(), "{r}");
    assert!(
        fake.get("v1", "ConfigMap", Some("prod"), "defaulted")
            .is_some()
    );
    assert!(
        fake.get("v1", "ConfigMap", Some("other"), "explicit")
            .is_some()
    );
    let role_patch = fake
        .requests()
        .into_iter()
        .find(|r| r.method == "PATCH" && r.path.contains("clusterroles"))
        .unwrap();
    assert_eq!(
        role_patch.path,
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/reader"
    );
    assert!(
        role_patch.body.unwrap()["metadata"]
            .get("namespace")
            .is_none()
    );

    let parsed = parse_inventory_entry(&report.objects[1].entry).unwrap();
    assert_eq!(parsed.namespace, None);
    assert_eq!(parsed.group, "rbac.authorization.k8s.io");
}

#[tokio::test]
async fn prune_deletes_only_ours() {
    let fake = FakeApi::start().await;
    let applier = Applier::new(fake.client());
    let opts = || ApplyOptions {
        delete_namespaces_and_crds: true,
        ..opts()
    };
    let old = applier
        .apply(
            vec![
                namespace("old"),
                configmap("keep", "x"),
                configmap("remove", "x"),
                deployment("web", 1),
            ],
            &opts(),
        )
        .await
        .unwrap();
    // Someone else's object with the same identity as an inventory entry.
    fake.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "foreign", "namespace": "prod",
                                    "labels": {NAME_LABEL: "other", NAMESPACE_LABEL: "flux"}}}));
    fake.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "unlabelled", "namespace": "prod"}}));
    let mut previous = old.inventory();
    for name in ["foreign", "unlabelled", "vanished"] {
        previous
            .entries
            .push(inventory_entry("", "v1", "ConfigMap", Some("prod"), name));
    }

    let current = applier
        .apply(vec![configmap("keep", "x")], &opts())
        .await
        .unwrap();
    assert_eq!(current.summary(), "0 created, 0 configured, 1 unchanged");
    fake.clear_requests();
    let report = applier
        .prune(&previous, &current.inventory(), &opts())
        .await
        .unwrap();

    let deleted: Vec<String> = report.deleted.iter().map(|e| e.id.clone()).collect();
    assert_eq!(deleted.len(), 3, "{report:?}");
    assert!(deleted.contains(&"prod_remove__ConfigMap".to_string()));
    assert!(deleted.contains(&"prod_web_apps_Deployment".to_string()));
    assert_eq!(
        deleted.last().unwrap(),
        "_old__Namespace",
        "namespaces last"
    );

    let skipped: std::collections::BTreeMap<String, String> = report
        .skipped
        .iter()
        .map(|(e, why)| (e.id.clone(), why.clone()))
        .collect();
    assert_eq!(skipped.len(), 2, "{report:?}");
    assert_eq!(
        report.lost,
        vec![(
            inventory_entry("", "v1", "ConfigMap", Some("prod"), "foreign"),
            "flux/other".to_string()
        )],
        "another Kustomization's object is reported as lost to it"
    );
    assert!(
        skipped["prod_unlabelled__ConfigMap"].contains("no owner labels"),
        "{skipped:?}"
    );
    assert_eq!(skipped["prod_vanished__ConfigMap"], "already gone");

    assert!(fake.get("v1", "ConfigMap", Some("prod"), "keep").is_some());
    assert!(
        fake.get("v1", "ConfigMap", Some("prod"), "remove")
            .is_none()
    );
    assert!(
        fake.get("apps/v1", "Deployment", Some("prod"), "web")
            .is_none()
    );
    assert!(fake.get("v1", "Namespace", None, "old").is_none());
    assert!(
        fake.get("v1", "ConfigMap", Some("prod"), "foreign")
            .is_some()
    );
    assert!(
        fake.get("v1", "ConfigMap", Some("prod"), "unlabelled")
            .is_some()
    );

    let deletes: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "DELETE")
        .collect();
    assert_eq!(deletes.len(), 3);
    for d in &deletes {
        assert_eq!(
            d.body.as_ref().unwrap()["propagationPolicy"],
            "Background",
            "{d:?}"
        );
    }
    assert_eq!(deletes[2].path, "/api/v1/namespaces/old");

    // Pruning again finds nothing to delete.
    let again = applier
        .prune(&previous, &current.inventory(), &opts())
        .await
        .unwrap();
    assert!(again.deleted.is_empty(), "{again:?}");
}

#[tokio::test]
async fn prune_deletes_crds_last() {
    let fake = FakeApi::start().await;
    let applier = Applier::new(fake.client());
    let opts = || ApplyOptions {
        delete_namespaces_and_crds: true,
        allow_namespace_mass_deletion: true,
        ..opts()
    };
    let old = applier
        .apply(vec![widget_crd(), widget("w1"), namespace("prod")], &opts())
        .await
        .unwrap();
    let report = applier
        .prune(&old.inventory(), &Inventory::default(), &opts())
        .await
        .unwrap();
    let deleted: Vec<String> = report.deleted.iter().map(|e| e.id.clone()).collect();
    assert_eq!(
        deleted,
        [
            "prod_w1_example.com_Widget",
            "_prod__Namespace",
            "_widgets.example.com_apiextensions.k8s.io_CustomResourceDefinition",
        ],
        "{report:?}"
    );
    assert!(report.skipped.is_empty(), "{report:?}");
}

#[tokio::test]
async fn api_failure_names_the_object() {
    let fake = FakeApi::start().await;
    let applier = Applier::new(fake.client());
    fake.fail("PATCH", "/deployments/web", 500, "etcd is on fire");
    let err = applier
        .apply(vec![configmap("c", "x"), deployment("web", 1)], &opts())
        .await
        .unwrap_err();
    match &err {
        ApplyError::Api { object, source } => {
            assert_eq!(object, "apps/v1 Deployment prod/web");
            match source {
                kube::Error::Api(s) => assert_eq!(s.code, 500),
                other => panic!("{other:?}"),
            }
        }
        other => panic!("expected ApplyError::Api, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.starts_with("apps/v1 Deployment prod/web: "), "{msg}");
    assert!(msg.contains("etcd is on fire"), "{msg}");

    fake.clear_failures();
    let ok = applier
        .apply(vec![configmap("c", "x"), deployment("web", 1)], &opts())
        .await
        .unwrap();
    // the failed attempt wrote nothing (its dry-run was refused)
    assert_eq!(ok.summary(), "2 created, 0 configured, 0 unchanged");

    // Prune failures name the object too.
    fake.fail("DELETE", "/configmaps/c", 403, "no deleting");
    let err = applier
        .prune(&ok.inventory(), &Inventory::default(), &opts())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("v1 ConfigMap prod/c: 403 Forbidden: no deleting"),
        "{err}"
    );
}

#[tokio::test]
async fn impersonating_client_sends_headers() {
    let fake = FakeApi::start().await;
    let mut config = fake.config();
    config.auth_info.impersonate = Some("system:serviceaccount:apps:deployer".into());
    let client = kube::Client::try_from(config).unwrap();
    let applier = Applier::new(client);
    let report = applier
        .apply(vec![configmap("c", "x")], &opts())
        .await
        .unwrap();
    applier
        .prune(&report.inventory(), &Inventory::default(), &opts())
        .await
        .unwrap();
    let reqs = fake.requests();
    assert!(reqs.iter().any(|r| r.method == "PATCH"));
    assert!(reqs.iter().any(|r| r.method == "DELETE"));
    for r in &reqs {
        assert_eq!(
            r.headers.get("impersonate-user").map(String::as_str),
            Some("system:serviceaccount:apps:deployer"),
            "{r:?}"
        );
    }
}

#[tokio::test]
async fn steady_state_apply_costs_one_request_per_object() {
    let fake = FakeApi::start().await;
    fake.insert(namespace("prod"));
    let applier = Applier::new(fake.client());
    let set: Vec<Value> = (0..20)
        .map(|i| configmap(&format!("c{i}"), "v"))
        .chain((0..5).map(|i| deployment(&format!("d{i}"), 1)))
        .collect();
    applier.apply(set.clone(), &opts()).await.unwrap();
    fake.clear_requests();
    let report = applier.apply(set.clone(), &opts()).await.unwrap();
    assert_eq!(report.count(Action::Unchanged), 25, "{}", report.summary());
    let reqs = fake.requests();
    let patches = reqs.iter().filter(|r| r.method == "PATCH").count();
    assert_eq!(patches, 25);
    let lists = reqs
        .iter()
        .filter(|r| {
            r.method == "GET"
                && (r.path.ends_with("/configmaps") || r.path.ends_with("/deployments"))
        })
        .count();
    assert_eq!(lists, 2, "one labelled LIST per kind and namespace");
    assert_eq!(
        reqs.len(),
        patches + lists,
        "no GET per object in steady state: {:?}",
        reqs.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    // results keep the input order even though applies run concurrently
    let names: Vec<_> = report.objects.iter().map(|o| o.display.clone()).collect();
    let expected: Vec<_> = (0..20)
        .map(|i| format!("ConfigMap/prod/c{i}"))
        .chain((0..5).map(|i| format!("apps/Deployment/prod/d{i}")))
        .collect();
    assert_eq!(names, expected);
}

/// With the memory of the last apply, a set nobody changed costs one LIST
/// per kind and namespace and no write; an edited or deleted object is
/// still restored.
#[tokio::test]
async fn unchanged_objects_cost_no_request_but_drift_is_restored() {
    use krmsync::apply::AppliedMemory;
    let fake = FakeApi::start().await;
    fake.insert(namespace("prod"));
    let applier = Applier::new(fake.client());
    let set: Vec<Value> = (0..20)
        .map(|i| configmap(&format!("c{i}"), "v"))
        .chain((0..5).map(|i| deployment(&format!("d{i}"), 1)))
        .collect();
    let mut memory = AppliedMemory::default();
    let run = |memory: &mut AppliedMemory| {
        let (applier, set) = (applier.clone(), set.clone());
        let mut m = std::mem::take(memory);
        async move {
            let plan = applier.plan(set, &opts(), None).await.unwrap();
            let r = applier.apply_plan(plan, &opts(), &mut m).await.unwrap();
            (r, m)
        }
    };
    let (first, m) = run(&mut memory).await;
    memory = m;
    assert_eq!(first.count(Action::Created), 25);
    assert_eq!(memory.len(), 25);

    fake.clear_requests();
    let (again, m) = run(&mut memory).await;
    memory = m;
    assert_eq!(again.count(Action::Unchanged), 25, "{}", again.summary());
    let reqs: Vec<String> = fake
        .requests()
        .into_iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(
        reqs,
        vec![
            "GET /api/v1/namespaces/prod/configmaps".to_string(),
            "GET /apis/apps/v1/namespaces/prod/deployments".to_string()
        ],
        "one LIST per kind and namespace, nothing else"
    );

    // writes by others to fields krmsync does not own change nothing
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        fake.client(),
        "prod",
        &kube::discovery::ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
    );
    let by_someone_else = kube::api::PatchParams {
        field_manager: Some("someone-else".into()),
        ..Default::default()
    };
    api.patch(
        "c1",
        &by_someone_else,
        &kube::api::Patch::Merge(json!({"metadata": {"annotations": {"note": "theirs"}}})),
    )
    .await
    .unwrap();
    fake.clear_requests();
    let (again, _) = run(&mut memory).await;
    assert_eq!(again.count(Action::Unchanged), 25, "{}", again.summary());
    assert!(writes(&fake).is_empty(), "{:?}", writes(&fake));

    // a restarted controller seeds its memory from the inventory it wrote
    let mut restarted = AppliedMemory::from_inventory(&again.inventory());
    assert_eq!(restarted.len(), 25);
    fake.clear_requests();
    let (after_restart, m) = run(&mut restarted).await;
    assert_eq!(after_restart.count(Action::Unchanged), 25);
    assert_eq!(fake.requests().len(), 2, "{:?}", fake.requests());
    memory = m;

    // drift: another writer edits one of our fields, another object is deleted
    api.patch(
        "c3",
        &by_someone_else,
        &kube::api::Patch::Merge(json!({"data": {"key": "edited"}})),
    )
    .await
    .unwrap();
    api.delete("c7", &Default::default()).await.unwrap();
    fake.clear_requests();
    let (healed, _) = run(&mut memory).await;
    assert_eq!(healed.summary(), "1 created, 1 configured, 23 unchanged");
    assert_eq!(
        fake.get("v1", "ConfigMap", Some("prod"), "c3").unwrap()["data"]["key"],
        "v"
    );
    assert!(fake.get("v1", "ConfigMap", Some("prod"), "c7").is_some());
    let writes = writes(&fake);
    assert_eq!(
        writes.len(),
        2,
        "only the two changed objects are written: {writes:?}"
    );
}

/// New ConfigMaps and Secrets are checked locally instead of dry-run: an
/// invalid one writes nothing, and one the API server refuses anyway (an
/// admission webhook, a quota) stops the apply before anything else of the
/// set is written.
#[tokio::test]
async fn new_configmaps_are_checked_locally_and_created_first() {
    let fake = FakeApi::start().await;
    fake.insert(namespace("prod"));
    let applier = Applier::new(fake.client());
    let mut bad = configmap("bad", "v");
    bad["data"]["not a key"] = json!("x");
    let err = applier
        .apply(vec![deployment("web", 1), bad], &opts())
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("ConfigMap prod/bad") && msg.contains("data[not a key]"),
        "{msg}"
    );
    assert!(
        fake.requests().iter().all(|r| r.method == "GET"),
        "{:?}",
        fake.requests()
    );

    fake.fail(
        "PATCH",
        "configmaps/refused",
        403,
        "denied by a policy webhook",
    );
    let err = applier
        .apply(
            vec![deployment("web", 1), configmap("refused", "v")],
            &opts(),
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("denied by a policy webhook"),
        "{err}"
    );
    assert!(
        fake.get("apps/v1", "Deployment", Some("prod"), "web")
            .is_none(),
        "nothing but new ConfigMaps may be written before the refusal"
    );

    // in another namespace a new ConfigMap is dry-run: its refusal comes
    // before any write
    fake.clear_failures();
    fake.insert(namespace("team-b"));
    fake.fail("PATCH", "namespaces/team-b/configmaps", 403, "forbidden");
    let mut elsewhere = configmap("elsewhere", "v");
    elsewhere["metadata"]["namespace"] = json!("team-b");
    fake.clear_requests();
    let err = applier
        .apply(vec![configmap("mine", "v"), elsewhere], &opts())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("forbidden"), "{err}");
    assert!(writes(&fake).is_empty(), "{:?}", writes(&fake));
}

/// API servers before Kubernetes 1.21 refuse a server-side apply of a
/// Service port without a protocol (before 1.20, of a container port too);
/// most manifests leave it out. krmsync applies `protocol: TCP`, which is
/// what every server stores anyway.
#[tokio::test]
async fn ports_without_a_protocol_are_applied_with_tcp() {
    let fake = FakeApi::start().await;
    fake.set_service_port_protocol_required(true);
    let applier = Applier::new(fake.client());
    let service = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "prod"},
        "spec": {"selector": {"app": "web"},
                 "ports": [{"name": "http", "port": 80, "targetPort": 8080},
                           {"name": "dns", "port": 53, "protocol": "UDP"}]}});
    let mut web = deployment("web", 1);
    web["spec"]["template"]["spec"]["containers"][0]["ports"] = json!([{"containerPort": 8080}]);

    // the fake refuses exactly what such a server refuses
    let direct: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        fake.client(),
        "prod",
        &kube::api::ApiResource::erase::<k8s_openapi::api::core::v1::Service>(&()),
    );
    let refused = direct
        .patch(
            "web",
            &kube::api::PatchParams::apply("someone"),
            &kube::api::Patch::Apply(&service),
        )
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("omits key field \"protocol\""),
        "{refused}"
    );

    let report = applier
        .apply(vec![service.clone(), web.clone()], &opts())
        .await
        .unwrap();
    assert_eq!(report.summary(), "2 created, 0 configured, 0 unchanged");
    let live = fake.get("v1", "Service", Some("prod"), "web").unwrap();
    assert_eq!(
        live["spec"]["ports"],
        json!([{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
               {"name": "dns", "port": 53, "protocol": "UDP"}])
    );
    let live = fake
        .get("apps/v1", "Deployment", Some("prod"), "web")
        .unwrap();
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["ports"],
        json!([{"containerPort": 8080, "protocol": "TCP"}])
    );
    // the filled-in protocol is part of what was applied: nothing to do
    // the next time
    let again = applier.apply(vec![service, web], &opts()).await.unwrap();
    assert_eq!(again.summary(), "0 created, 0 configured, 2 unchanged");
}
