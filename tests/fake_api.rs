//! Tests of the fake API server itself (tests/support).

mod support;

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{
    Api, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use kube::discovery;
use serde_json::{Value, json};
use support::FakeApi;

fn cm(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": name, "tier": "web"}},
        "data": data,
    }))
    .unwrap()
}

fn rv(v: &Value) -> String {
    v["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string()
}

fn api_code(e: kube::Error) -> u16 {
    match e {
        kube::Error::Api(s) => s.code,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn crud_and_label_selectors() {
    let fake = FakeApi::start().await;
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "prod");

    let created = api
        .create(&PostParams::default(), &cm("a", json!({"k": "1"})))
        .await
        .unwrap();
    assert_eq!(created.metadata.namespace.as_deref(), Some("prod"));
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());
    assert_eq!(created.metadata.generation, Some(1));
    api.create(&PostParams::default(), &cm("b", json!({})))
        .await
        .unwrap();
    let mut other = cm("c", json!({}));
    other.metadata.labels = Some([("app".to_string(), "c".to_string())].into());
    api.create(&PostParams::default(), &other).await.unwrap();

    let again = api
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap_err();
    assert_eq!(api_code(again), 409);

    let got = api.get("a").await.unwrap();
    assert_eq!(got.data.unwrap()["k"], "1");

    let names = |l: kube::core::ObjectList<ConfigMap>| {
        l.items
            .into_iter()
            .map(|c| c.metadata.name.unwrap())
            .collect::<Vec<_>>()
    };
    let all = api.list(&ListParams::default()).await.unwrap();
    assert!(all.metadata.resource_version.is_some());
    assert_eq!(names(all), ["a", "b", "c"]);
    let web = api
        .list(&ListParams::default().labels("tier=web"))
        .await
        .unwrap();
    assert_eq!(names(web), ["a", "b"]);
    let two = api
        .list(&ListParams::default().labels("tier=web,app=b"))
        .await
        .unwrap();
    assert_eq!(names(two), ["b"]);
    let exists = api
        .list(&ListParams::default().labels("tier"))
        .await
        .unwrap();
    assert_eq!(names(exists), ["a", "b"]);
    let not = api
        .list(&ListParams::default().labels("!tier"))
        .await
        .unwrap();
    assert_eq!(names(not), ["c"]);
    let other_ns: Api<ConfigMap> = Api::namespaced(fake.client(), "dev");
    assert!(
        other_ns
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let everywhere: Api<ConfigMap> = Api::all(fake.client());
    assert_eq!(
        everywhere
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        3
    );

    // Replace with the current resourceVersion works, with a stale one conflicts.
    let mut cur = api.get("a").await.unwrap();
    let stale = cur.clone();
    cur.data = Some([("k".to_string(), "2".to_string())].into());
    let replaced = api
        .replace("a", &PostParams::default(), &cur)
        .await
        .unwrap();
    assert_ne!(
        replaced.metadata.resource_version,
        stale.metadata.resource_version
    );
    let err = api
        .replace("a", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    assert_eq!(api_code(err), 409);

    // Merge patch.
    let patched = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": null, "n": "3"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        patched.data.unwrap(),
        [("n".to_string(), "3".to_string())].into()
    );

    // Delete, then it is gone.
    api.delete("a", &DeleteParams::background()).await.unwrap();
    assert_eq!(api_code(api.get("a").await.unwrap_err()), 404);
    assert_eq!(
        api_code(api.delete("a", &DeleteParams::default()).await.unwrap_err()),
        404
    );
    assert!(fake.get("v1", "ConfigMap", Some("prod"), "a").is_none());
    assert!(fake.get("v1", "ConfigMap", Some("prod"), "b").is_some());
    let del = fake
        .requests()
        .into_iter()
        .find(|r| r.method == "DELETE")
        .unwrap();
    assert_eq!(del.body.unwrap()["propagationPolicy"], "Background");
}

#[tokio::test]
async fn unknown_resources_are_404_status() {
    let fake = FakeApi::start().await;
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let err = discovery::pinned_kind(&fake.client(), &gvk)
        .await
        .unwrap_err();
    assert_eq!(api_code(err), 404);
    let body = reqwest::get(format!("{}/apis/example.com/v1/widgets", fake.url()))
        .await
        .unwrap();
    assert_eq!(body.status(), 404);
    let status: Value = serde_json::from_str(&body.text().await.unwrap()).unwrap();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["code"], 404);
}

#[tokio::test]
async fn server_side_apply_create_update_unchanged() {
    let fake = FakeApi::start().await;
    let api: Api<DynamicObject> = Api::namespaced_with(
        fake.client(),
        "prod",
        &kube::api::ApiResource::from_gvk(&GroupVersionKind::gvk("apps", "v1", "Deployment")),
    );
    let dep = |replicas: i64| {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
        })
    };
    let pp = PatchParams::apply("krmsync").force();
    let created = api.patch("web", &pp, &Patch::Apply(dep(1))).await.unwrap();
    let created = serde_json::to_value(created).unwrap();
    assert_eq!(created["metadata"]["generation"], 1);
    assert!(created["metadata"]["uid"].is_string());
    let first_rv = rv(&created);

    // Status written through the subresource is kept by later applies.
    let status_api: Api<Deployment> = Api::namespaced(fake.client(), "prod");
    status_api
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 1}})),
        )
        .await
        .unwrap();
    let after_status = fake
        .get("apps/v1", "Deployment", Some("prod"), "web")
        .unwrap();
    assert_ne!(rv(&after_status), first_rv);
    assert_eq!(after_status["metadata"]["generation"], 1);

    let same = api.patch("web", &pp, &Patch::Apply(dep(1))).await.unwrap();
    let same = serde_json::to_value(same).unwrap();
    assert_eq!(
        rv(&same),
        rv(&after_status),
        "unchanged apply keeps resourceVersion"
    );
    assert_eq!(same["status"]["replicas"], 1);

    let changed = api.patch("web", &pp, &Patch::Apply(dep(3))).await.unwrap();
    let changed = serde_json::to_value(changed).unwrap();
    assert_ne!(rv(&changed), rv(&same));
    assert_eq!(changed["metadata"]["generation"], 2);
    assert_eq!(changed["spec"]["replicas"], 3);
    assert_eq!(changed["status"]["replicas"], 1);
    assert_eq!(changed["metadata"]["uid"], created["metadata"]["uid"]);

    // A label-only change bumps resourceVersion but not generation.
    let mut relabelled = dep(3);
    relabelled["metadata"]["labels"]["extra"] = json!("x");
    let relabelled = api
        .patch("web", &pp, &Patch::Apply(relabelled))
        .await
        .unwrap();
    let relabelled = serde_json::to_value(relabelled).unwrap();
    assert_ne!(rv(&relabelled), rv(&changed));
    assert_eq!(relabelled["metadata"]["generation"], 2);

    let patches: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "PATCH" && !r.path.ends_with("/status"))
        .collect();
    assert_eq!(patches.len(), 4);
    for p in &patches {
        assert_eq!(p.query_param("fieldManager").as_deref(), Some("krmsync"));
        assert_eq!(p.query_param("force").as_deref(), Some("true"));
        assert_eq!(
            p.headers.get("content-type").map(String::as_str),
            Some("application/apply-patch+yaml")
        );
    }
}

#[tokio::test]
async fn status_subresource_isolation() {
    let fake = FakeApi::start().await;
    let api: Api<Deployment> = Api::namespaced(fake.client(), "prod");
    let dep: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"selector": {}, "template": {}},
        "status": {"replicas": 9},
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &dep).await.unwrap();
    assert!(created.status.is_none(), "create ignores status");

    let st = api
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}, "status": {"replicas": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(st.status.as_ref().unwrap().replicas, Some(2));
    assert_eq!(st.spec.replicas, None, "status writes change only status");
    assert_eq!(st.metadata.generation, Some(1));

    let main = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 4}, "status": {"replicas": 7}})),
        )
        .await
        .unwrap();
    assert_eq!(
        main.status.unwrap().replicas,
        Some(2),
        "main writes keep status"
    );
    assert_eq!(main.spec.replicas, Some(4));
    assert_eq!(main.metadata.generation, Some(2));

    // A kind without a status subresource has no /status endpoint.
    let cms: Api<ConfigMap> = Api::namespaced(fake.client(), "prod");
    cms.create(&PostParams::default(), &cm("x", json!({})))
        .await
        .unwrap();
    let err = cms
        .patch_status("x", &PatchParams::default(), &Patch::Merge(json!({})))
        .await
        .unwrap_err();
    assert_eq!(api_code(err), 404);
}

#[tokio::test]
async fn finalizers_delay_deletion() {
    let fake = FakeApi::start().await;
    let api: Api<Namespace> = Api::all(fake.client());
    let ns: Namespace = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "apps", "finalizers": ["example.com/hold"]},
    }))
    .unwrap();
    api.create(&PostParams::default(), &ns).await.unwrap();
    api.delete("apps", &DeleteParams::default()).await.unwrap();
    let held = api.get("apps").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());

    // An apply that does not mention finalizers keeps them.
    let applied = api
        .patch(
            "apps",
            &PatchParams::apply("test"),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "Namespace",
                                  "metadata": {"name": "apps", "labels": {"a": "b"}}})),
        )
        .await
        .unwrap();
    assert_eq!(
        applied.metadata.finalizers,
        Some(vec!["example.com/hold".to_string()])
    );
    assert!(applied.metadata.deletion_timestamp.is_some());

    api.patch(
        "apps",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": []}})),
    )
    .await
    .unwrap();
    assert_eq!(api_code(api.get("apps").await.unwrap_err()), 404);
    assert!(fake.get("v1", "Namespace", None, "apps").is_none());
}

fn widget_crd(scope: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": scope,
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                          "subresources": {"status": {}}}],
        },
    })
}

#[tokio::test]
async fn crd_registers_discovery_and_is_established() {
    let fake = FakeApi::start().await;
    let client = fake.client();
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &kube::api::ApiResource::from_gvk(&GroupVersionKind::gvk(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
        )),
    );
    crds.patch(
        "widgets.example.com",
        &PatchParams::apply("test").force(),
        &Patch::Apply(widget_crd("Namespaced")),
    )
    .await
    .unwrap();
    let crd = fake
        .get(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            None,
            "widgets.example.com",
        )
        .unwrap();
    let conds = crd["status"]["conditions"].as_array().unwrap();
    assert!(
        conds
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
    );

    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let (ar, caps) = discovery::pinned_kind(&client, &gvk).await.unwrap();
    assert_eq!(ar.plural, "widgets");
    assert_eq!(caps.scope, discovery::Scope::Namespaced);
    assert!(
        caps.subresources.iter().any(|(s, _)| s.plural == "status"),
        "{caps:?}"
    );
    let full = kube::Discovery::new(client.clone()).run().await.unwrap();
    assert!(full.has_group("example.com"));
    assert!(full.has_group("krmsync.dev"));

    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "prod", &ar);
    widgets
        .patch(
            "w1",
            &PatchParams::apply("test"),
            &Patch::Apply(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                                  "metadata": {"name": "w1"}, "spec": {"size": 1}})),
        )
        .await
        .unwrap();
    assert_eq!(fake.list("example.com/v1", "Widget").len(), 1);

    // Re-applying the same CRD leaves it unchanged (status included).
    let before = rv(&crd);
    crds.patch(
        "widgets.example.com",
        &PatchParams::apply("test").force(),
        &Patch::Apply(widget_crd("Namespaced")),
    )
    .await
    .unwrap();
    let after = fake
        .get(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            None,
            "widgets.example.com",
        )
        .unwrap();
    assert_eq!(rv(&after), before);

    // Deleting the CRD removes it from discovery.
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    let err = discovery::pinned_kind(&client, &gvk).await.unwrap_err();
    assert_eq!(api_code(err), 404);
}

#[tokio::test]
async fn crd_establishment_can_be_disabled() {
    let fake = FakeApi::start().await;
    fake.set_crd_establish(false);
    fake.insert(widget_crd("Cluster"));
    let crd = fake
        .get(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            None,
            "widgets.example.com",
        )
        .unwrap();
    assert!(crd["status"]["conditions"].is_null());
    // Still served by discovery, cluster-scoped.
    let (_, caps) = discovery::pinned_kind(
        &fake.client(),
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
    )
    .await
    .unwrap();
    assert_eq!(caps.scope, discovery::Scope::Cluster);
}

#[tokio::test]
async fn watcher_sees_later_changes() {
    let fake = FakeApi::start().await;
    fake.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "early", "namespace": "prod"}}));
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "prod");
    let mut stream =
        kube::runtime::watcher(api.clone(), kube::runtime::watcher::Config::default()).boxed();
    let mut seen_early = false;
    let mut seen_late = false;
    let mut seen_delete = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut created = false;
    while !(seen_early && seen_late && seen_delete) {
        let ev = tokio::time::timeout_at(deadline, stream.try_next())
            .await
            .expect("watcher events in time")
            .unwrap()
            .unwrap();
        use kube::runtime::watcher::Event;
        match ev {
            Event::InitApply(o) | Event::Apply(o) => {
                let name = o.metadata.name.unwrap();
                if name == "early" {
                    seen_early = true;
                }
                if name == "late" {
                    seen_late = true;
                    api.delete("late", &DeleteParams::default()).await.unwrap();
                }
            }
            Event::Delete(o) => {
                if o.metadata.name.as_deref() == Some("late") {
                    seen_delete = true;
                }
            }
            Event::InitDone => {
                if !created {
                    created = true;
                    // Created after the watcher started.
                    api.create(&PostParams::default(), &cm("late", json!({})))
                        .await
                        .unwrap();
                }
            }
            Event::Init => {}
        }
    }
    assert!(
        fake.requests()
            .iter()
            .any(|r| r.query_param("watch").as_deref() == Some("true"))
    );
}

#[tokio::test]
async fn raw_watch_honours_timeout_and_selectors() {
    let fake = FakeApi::start().await;
    fake.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "a", "namespace": "prod", "labels": {"x": "1"}}}));
    fake.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "b", "namespace": "prod"}}));
    let url = format!(
        "{}/api/v1/namespaces/prod/configmaps?watch=1&timeoutSeconds=1&labelSelector=x%3D1",
        fake.url()
    );
    let started = std::time::Instant::now();
    let text = tokio::time::timeout(Duration::from_secs(10), async {
        reqwest::get(url).await.unwrap().text().await.unwrap()
    })
    .await
    .expect("the watch ends after timeoutSeconds");
    assert!(started.elapsed() >= Duration::from_millis(900));
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert_eq!(lines[0]["type"], "ADDED");
    assert_eq!(lines[0]["object"]["metadata"]["name"], "a");
}

#[tokio::test]
async fn failures_requests_and_impersonation() {
    let fake = FakeApi::start().await;
    let mut config = fake.config();
    config.auth_info.impersonate = Some("system:serviceaccount:apps:deployer".into());
    let client = kube::Client::try_from(config).unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, "prod");
    fake.fail("POST", "/configmaps", 403, "denied by test");
    let err = api
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 403);
            assert_eq!(s.reason, "Forbidden");
            assert_eq!(s.message, "denied by test");
        }
        other => panic!("{other:?}"),
    }
    assert!(fake.get("v1", "ConfigMap", Some("prod"), "a").is_none());
    fake.clear_failures();
    api.create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap();
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/api/v1/namespaces/prod/configmaps");
        assert_eq!(
            r.headers.get("impersonate-user").map(String::as_str),
            Some("system:serviceaccount:apps:deployer")
        );
        assert_eq!(r.body.as_ref().unwrap()["metadata"]["name"], "a");
    }
    fake.clear_requests();
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn kubeconfig_points_at_the_fake() {
    let fake = FakeApi::start().await;
    let yaml = fake.kubeconfig_yaml();
    let kc = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    assert_eq!(
        config.cluster_url.to_string().trim_end_matches('/'),
        fake.url()
    );
    let client = kube::Client::try_from(config).unwrap();
    let v = client.apiserver_version().await.unwrap();
    assert_eq!(v.major, "1");
    fake.shutdown();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after = reqwest::Client::new()
        .get(format!("{}/version", fake.url()))
        .timeout(Duration::from_secs(2))
        .send()
        .await;
    assert!(after.is_err(), "the server stops on shutdown");
}

// ---------------------------------------------------------------- RBAC

fn status_of(e: kube::Error) -> (u16, String, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.reason.clone(), s.message.clone()),
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn role(kind: &str, ns: Option<&str>, name: &str, rules: Value) -> Value {
    let mut r = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
                       "metadata": {"name": name}, "rules": rules});
    if let Some(ns) = ns {
        r["metadata"]["namespace"] = json!(ns);
    }
    r
}

fn binding(
    kind: &str,
    ns: Option<&str>,
    name: &str,
    role_ref: (&str, &str),
    subjects: Value,
) -> Value {
    let mut b = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
                       "metadata": {"name": name},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_ref.0, "name": role_ref.1},
                       "subjects": subjects});
    if let Some(ns) = ns {
        b["metadata"]["namespace"] = json!(ns);
    }
    b
}

fn secret(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": {"k": "v"}})
}

const DEPLOYER: &str = "system:serviceaccount:team-a:deployer";

/// team-a's deployer may do anything with ConfigMaps in team-a, read the
/// Secret "allowed" there (a ClusterRole bound by a RoleBinding) and only
/// patch Secrets in team-b.
fn seed_team_rbac(fake: &FakeApi) {
    let sa = json!([{"kind": "ServiceAccount", "name": "deployer", "namespace": "team-a"}]);
    fake.insert(role(
        "Role",
        Some("team-a"),
        "cm",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]),
    ));
    fake.insert(binding(
        "RoleBinding",
        Some("team-a"),
        "cm",
        ("Role", "cm"),
        sa.clone(),
    ));
    fake.insert(role("ClusterRole", None, "secret-reader",
                     json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["allowed"]}])));
    fake.insert(binding(
        "RoleBinding",
        Some("team-a"),
        "secrets",
        ("ClusterRole", "secret-reader"),
        sa.clone(),
    ));
    fake.insert(role(
        "Role",
        Some("team-b"),
        "patcher",
        json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["patch"]}]),
    ));
    fake.insert(binding(
        "RoleBinding",
        Some("team-b"),
        "patcher",
        ("Role", "patcher"),
        sa,
    ));
}

#[tokio::test]
async fn rbac_role_bindings_grant_only_in_their_namespace() {
    let fake = FakeApi::start().await;
    fake.set_rbac(true);
    seed_team_rbac(&fake);
    let client = fake.client_as(DEPLOYER);
    let team_a: Api<ConfigMap> = Api::namespaced(client.clone(), "team-a");
    team_a
        .create(&PostParams::default(), &cm("ok", json!({})))
        .await
        .unwrap();
    assert!(fake.get("v1", "ConfigMap", Some("team-a"), "ok").is_some());

    let team_b: Api<ConfigMap> = Api::namespaced(client.clone(), "team-b");
    let err = team_b
        .create(&PostParams::default(), &cm("no", json!({})))
        .await
        .unwrap_err();
    assert_eq!(
        status_of(err),
        (
            403,
            "Forbidden".to_string(),
            "configmaps is forbidden: User \"system:serviceaccount:team-a:deployer\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"team-b\"".to_string()
        )
    );
    assert!(fake.get("v1", "ConfigMap", Some("team-b"), "no").is_none());

    // An apply that would create needs create as well as patch.
    let secrets_b: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "team-b",
        &kube::api::ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "Secret")),
    );
    let err = secrets_b
        .patch(
            "x",
            &PatchParams::apply("krmsync"),
            &Patch::Apply(secret("x")),
        )
        .await
        .unwrap_err();
    assert_eq!(
        status_of(err).2,
        "secrets \"x\" is forbidden: User \"system:serviceaccount:team-a:deployer\" cannot create resource \"secrets\" in API group \"\" in the namespace \"team-b\""
    );
    assert!(fake.get("v1", "Secret", Some("team-b"), "x").is_none());
    // Patching an existing one is allowed.
    fake.insert(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x", "namespace": "team-b"}}));
    secrets_b
        .patch(
            "x",
            &PatchParams::apply("krmsync"),
            &Patch::Apply(secret("x")),
        )
        .await
        .unwrap();
    assert_eq!(
        fake.get("v1", "Secret", Some("team-b"), "x").unwrap()["stringData"]["k"],
        "v"
    );

    // resourceNames restrict: "allowed" may be read (and is missing), others not, nor listed.
    let secrets_a: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "team-a",
        &kube::api::ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "Secret")),
    );
    assert_eq!(
        status_of(secrets_a.get("allowed").await.unwrap_err()).0,
        404
    );
    assert_eq!(
        status_of(secrets_a.get("other").await.unwrap_err()).2,
        "secrets \"other\" is forbidden: User \"system:serviceaccount:team-a:deployer\" cannot get resource \"secrets\" in API group \"\" in the namespace \"team-a\""
    );
    assert_eq!(
        status_of(secrets_a.list(&ListParams::default()).await.unwrap_err()).0,
        403
    );
    // A RoleBinding grants nothing at the cluster scope.
    let everywhere: Api<ConfigMap> = Api::all(client.clone());
    assert_eq!(
        status_of(everywhere.list(&ListParams::default()).await.unwrap_err()).2,
        "configmaps is forbidden: User \"system:serviceaccount:team-a:deployer\" cannot list resource \"configmaps\" in API group \"\" at the cluster scope"
    );

    // Discovery is open to everyone.
    assert_eq!(client.apiserver_version().await.unwrap().major, "1");
    discovery::pinned_kind(&client, &GroupVersionKind::gvk("apps", "v1", "Deployment"))
        .await
        .unwrap();

    // Requests are recorded with their user; no token is system:admin.
    fake.clear_requests();
    team_a.get("ok").await.unwrap();
    Api::<ConfigMap>::namespaced(fake.client(), "team-a")
        .get("ok")
        .await
        .unwrap();
    let users: Vec<String> = fake.requests().into_iter().map(|r| r.user).collect();
    assert_eq!(users, [DEPLOYER, "system:admin"]);

    // An unknown token is not authenticated.
    let resp = reqwest::Client::new()
        .get(format!(
            "{}/api/v1/namespaces/team-a/configmaps",
            fake.url()
        ))
        .bearer_auth("nobody-knows-me")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
}

#[tokio::test]
async fn rbac_cluster_roles_groups_verbs_and_subresources() {
    let fake = FakeApi::start().await;
    fake.set_rbac(true);
    fake.add_token("alice-token", "alice", &["devs"]);
    fake.add_token("bob-token", "bob", &[]);
    // Built-in view for a group, cluster-wide.
    fake.insert(binding(
        "ClusterRoleBinding",
        None,
        "devs-view",
        ("ClusterRole", "view"),
        json!([{"kind": "Group", "name": "devs"}]),
    ));
    // bob may only write deployment status in prod, and get/list (not watch) ConfigMaps.
    fake.insert(role(
        "Role",
        Some("prod"),
        "status-writer",
        json!([
            {"apiGroups": ["apps"], "resources": ["deployments/status"], "verbs": ["patch", "get"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "delete"]},
        ]),
    ));
    fake.insert(binding(
        "RoleBinding",
        Some("prod"),
        "bob",
        ("Role", "status-writer"),
        json!([{"kind": "User", "name": "bob"}]),
    ));
    fake.insert(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                       "metadata": {"name": "web", "namespace": "prod"}, "spec": {"replicas": 1}}));
    for (name, team) in [("a", "x"), ("b", "x"), ("c", "y")] {
        fake.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": name, "namespace": "prod", "labels": {"team": team}}}));
    }
    let as_user = |token: &str| {
        let mut config = fake.config();
        config.auth_info = serde_json::from_value(json!({"token": token})).unwrap();
        kube::Client::try_from(config).unwrap()
    };
    let alice = as_user("alice-token");
    let bob = as_user("bob-token");

    // view: read everywhere, write nowhere.
    let all: Api<ConfigMap> = Api::all(alice.clone());
    assert_eq!(
        all.list(&ListParams::default()).await.unwrap().items.len(),
        3
    );
    let prod: Api<ConfigMap> = Api::namespaced(alice.clone(), "prod");
    assert_eq!(
        status_of(
            prod.create(&PostParams::default(), &cm("n", json!({})))
                .await
                .unwrap_err()
        )
        .2,
        "configmaps is forbidden: User \"alice\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"prod\""
    );
    let namespaces: Api<Namespace> = Api::all(alice.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "new"}})).unwrap();
    assert_eq!(
        status_of(
            namespaces
                .create(&PostParams::default(), &ns)
                .await
                .unwrap_err()
        )
        .2,
        "namespaces is forbidden: User \"alice\" cannot create resource \"namespaces\" in API group \"\" at the cluster scope"
    );

    // Subresources are resources of their own.
    let deps: Api<Deployment> = Api::namespaced(bob.clone(), "prod");
    deps.patch_status(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"replicas": 1}})),
    )
    .await
    .unwrap();
    assert_eq!(
        fake.get("apps/v1", "Deployment", Some("prod"), "web")
            .unwrap()["status"]["replicas"],
        1
    );
    assert_eq!(
        status_of(
            deps.patch(
                "web",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": 5}}))
            )
            .await
            .unwrap_err()
        )
        .2,
        "deployments.apps \"web\" is forbidden: User \"bob\" cannot patch resource \"deployments\" in API group \"apps\" in the namespace \"prod\""
    );
    let alice_deps: Api<Deployment> = Api::namespaced(alice.clone(), "prod");
    assert_eq!(
        status_of(
            alice_deps
                .patch_status(
                    "web",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": {}}))
                )
                .await
                .unwrap_err()
        )
        .2,
        "deployments.apps \"web\" is forbidden: User \"alice\" cannot patch resource \"deployments/status\" in API group \"apps\" in the namespace \"prod\""
    );

    // list is not watch, delete is not deletecollection.
    let bob_cms: Api<ConfigMap> = Api::namespaced(bob.clone(), "prod");
    assert_eq!(
        bob_cms
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        3
    );
    let watch = reqwest::Client::new()
        .get(format!(
            "{}/api/v1/namespaces/prod/configmaps?watch=true&timeoutSeconds=1",
            fake.url()
        ))
        .bearer_auth("bob-token")
        .send()
        .await
        .unwrap();
    assert_eq!(watch.status(), 403);
    let status: Value = serde_json::from_str(&watch.text().await.unwrap()).unwrap();
    assert_eq!(
        status["message"],
        "configmaps is forbidden: User \"bob\" cannot watch resource \"configmaps\" in API group \"\" in the namespace \"prod\""
    );
    assert_eq!(
        status_of(
            bob_cms
                .delete_collection(&DeleteParams::default(), &ListParams::default())
                .await
                .unwrap_err()
        )
        .2,
        "configmaps is forbidden: User \"bob\" cannot deletecollection resource \"configmaps\" in API group \"\" in the namespace \"prod\""
    );
    bob_cms.delete("c", &DeleteParams::default()).await.unwrap();
    // The admin may delete a collection by label.
    let admin_cms: Api<ConfigMap> = Api::namespaced(fake.client(), "prod");
    admin_cms
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("team=x"),
        )
        .await
        .unwrap();
    assert!(fake.list("v1", "ConfigMap").is_empty());

    // A stored ClusterRole replaces the built-in of the same name.
    fake.insert(role(
        "ClusterRole",
        None,
        "view",
        json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}]),
    ));
    assert_eq!(
        status_of(all.list(&ListParams::default()).await.unwrap_err()).0,
        403
    );
    let secrets: Api<DynamicObject> = Api::all_with(
        alice.clone(),
        &kube::api::ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "Secret")),
    );
    secrets.list(&ListParams::default()).await.unwrap();

    // RBAC off again: everyone may do anything.
    fake.set_rbac(false);
    prod.create(&PostParams::default(), &cm("n", json!({})))
        .await
        .unwrap();
}

#[tokio::test]
async fn impersonation_needs_permission_and_switches_identity() {
    let fake = FakeApi::start().await;
    fake.set_rbac(true);
    seed_team_rbac(&fake);
    const CONTROLLER: &str = "system:serviceaccount:krmsync-system:krmsync";
    // The controller may impersonate team-a's deployer only.
    fake.insert(role("ClusterRole", None, "impersonate-deployer",
                     json!([{"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"], "resourceNames": ["deployer"]}])));
    fake.insert(binding(
        "RoleBinding",
        Some("team-a"),
        "controller",
        ("ClusterRole", "impersonate-deployer"),
        json!([{"kind": "ServiceAccount", "name": "krmsync", "namespace": "krmsync-system"}]),
    ));
    let impersonating = |user: &str| {
        let mut config = fake.config_as(CONTROLLER);
        config.auth_info.impersonate = Some(user.to_string());
        kube::Client::try_from(config).unwrap()
    };

    let as_deployer = impersonating(DEPLOYER);
    Api::<ConfigMap>::namespaced(as_deployer.clone(), "team-a")
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap();
    assert_eq!(fake.requests().last().unwrap().user, DEPLOYER);
    // The request runs with the deployer's rights, not the controller's.
    let err = Api::<ConfigMap>::namespaced(as_deployer, "team-b")
        .create(&PostParams::default(), &cm("b", json!({})))
        .await
        .unwrap_err();
    assert_eq!(
        status_of(err).2,
        format!(
            "configmaps is forbidden: User \"{DEPLOYER}\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"team-b\""
        )
    );

    for (user, message) in [
        (
            "system:serviceaccount:team-a:other",
            format!(
                "serviceaccounts \"other\" is forbidden: User \"{CONTROLLER}\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"team-a\""
            ),
        ),
        (
            "system:serviceaccount:team-b:deployer",
            format!(
                "serviceaccounts \"deployer\" is forbidden: User \"{CONTROLLER}\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"team-b\""
            ),
        ),
        (
            "alice",
            format!(
                "users \"alice\" is forbidden: User \"{CONTROLLER}\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
            ),
        ),
    ] {
        let err = Api::<ConfigMap>::namespaced(impersonating(user), "team-a")
            .get("a")
            .await
            .unwrap_err();
        assert_eq!(
            status_of(err),
            (403, "Forbidden".to_string(), message),
            "{user}"
        );
        assert_eq!(fake.requests().last().unwrap().user, CONTROLLER);
    }

    // The impersonated ServiceAccount is in its groups.
    fake.insert(role(
        "Role",
        Some("team-c"),
        "read",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]),
    ));
    fake.insert(binding(
        "RoleBinding",
        Some("team-c"),
        "team-a-sas",
        ("Role", "read"),
        json!([{"kind": "Group", "name": "system:serviceaccounts:team-a"}]),
    ));
    Api::<ConfigMap>::namespaced(impersonating(DEPLOYER), "team-c")
        .list(&ListParams::default())
        .await
        .unwrap();

    // Impersonating groups needs impersonate on groups.
    let mut config = fake.config_as(CONTROLLER);
    config.auth_info.impersonate = Some(DEPLOYER.into());
    config.auth_info.impersonate_groups = Some(vec!["system:masters".into()]);
    let err = Api::<ConfigMap>::namespaced(kube::Client::try_from(config).unwrap(), "team-b")
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert_eq!(
        status_of(err).2,
        format!(
            "groups \"system:masters\" is forbidden: User \"{CONTROLLER}\" cannot impersonate resource \"groups\" in API group \"\" at the cluster scope"
        )
    );
    // An impersonated user is in the groups given with it.
    let mut config = fake.config();
    config.auth_info.impersonate = Some("dave".into());
    config.auth_info.impersonate_groups = Some(vec!["system:serviceaccounts:team-a".into()]);
    Api::<ConfigMap>::namespaced(kube::Client::try_from(config).unwrap(), "team-c")
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(fake.requests().last().unwrap().user, "dave");

    // The admin (no token) may impersonate anyone, and then has their rights.
    let mut config = fake.config();
    config.auth_info.impersonate = Some(DEPLOYER.into());
    let err = Api::<ConfigMap>::namespaced(kube::Client::try_from(config).unwrap(), "team-b")
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert_eq!(status_of(err).0, 403);
}

// ---------------------------------------------------------------- dryRun

#[tokio::test]
async fn dry_run_answers_but_stores_nothing() {
    let fake = FakeApi::start().await;
    fake.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "keep", "namespace": "prod"}, "data": {"k": "1"}}));
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "prod");
    let before = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let stored_before = fake.get("v1", "ConfigMap", Some("prod"), "keep").unwrap();
    let dry_post = PostParams {
        dry_run: true,
        ..Default::default()
    };

    let created = api
        .create(&dry_post, &cm("new", json!({"a": "b"})))
        .await
        .unwrap();
    assert_eq!(created.metadata.name.as_deref(), Some("new"));
    assert_eq!(created.data.unwrap()["a"], "b");
    assert!(fake.get("v1", "ConfigMap", Some("prod"), "new").is_none());

    let applied = api
        .patch(
            "new",
            &PatchParams::apply("m").dry_run(),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"x": "y"}})),
        )
        .await
        .unwrap();
    assert_eq!(applied.data.unwrap()["x"], "y");
    assert!(fake.get("v1", "ConfigMap", Some("prod"), "new").is_none());

    let changed = api
        .patch(
            "keep",
            &PatchParams::apply("m").dry_run(),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "2"}})),
        )
        .await
        .unwrap();
    assert_eq!(changed.data.unwrap()["k"], "2");
    let merged = api
        .patch(
            "keep",
            &PatchParams {
                dry_run: true,
                ..Default::default()
            },
            &Patch::Merge(json!({"data": {"k": "3"}})),
        )
        .await
        .unwrap();
    assert_eq!(merged.data.unwrap()["k"], "3");
    let mut replacement = api.get("keep").await.unwrap();
    replacement.data = Some([("k".to_string(), "4".to_string())].into());
    let replaced = api.replace("keep", &dry_post, &replacement).await.unwrap();
    assert_eq!(replaced.data.unwrap()["k"], "4");
    let deleted = api
        .delete(
            "keep",
            &DeleteParams {
                dry_run: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(deleted.is_left());

    assert_eq!(
        fake.get("v1", "ConfigMap", Some("prod"), "keep").unwrap(),
        stored_before
    );
    let after = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    assert_eq!(after, before, "no write happened");
    // No watch event either: a watch from before replays nothing.
    let text = reqwest::get(format!(
        "{}/api/v1/namespaces/prod/configmaps?watch=1&timeoutSeconds=1&resourceVersion={before}",
        fake.url()
    ))
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    assert_eq!(text, "");

    // RBAC still applies to a dry run.
    fake.set_rbac(true);
    let denied = Api::<ConfigMap>::namespaced(fake.client_as("carol"), "prod")
        .create(&dry_post, &cm("x", json!({})))
        .await
        .unwrap_err();
    assert_eq!(status_of(denied).0, 403);
}

// ---------------------------------------------------------------- field managers

fn managers(obj: &Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["manager"].as_str().unwrap().to_string(),
                e["operation"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The FieldsV1 of `manager`'s entry (Null when it has none).
fn fields_of(obj: &Value, manager: &str) -> Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["manager"] == manager)
        .map(|e| e["fieldsV1"].clone())
        .unwrap_or(Value::Null)
}

fn cm_api(fake: &FakeApi) -> Api<DynamicObject> {
    Api::namespaced_with(
        fake.client(),
        "prod",
        &kube::api::ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap")),
    )
}

async fn apply(
    api: &Api<DynamicObject>,
    name: &str,
    manager: &str,
    force: bool,
    body: Value,
) -> Result<Value, kube::Error> {
    let mut pp = PatchParams::apply(manager);
    pp.force = force;
    api.patch(name, &pp, &Patch::Apply(body))
        .await
        .map(|o| serde_json::to_value(o).unwrap())
}

fn cm_body(data: Value, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "c", "labels": labels}, "data": data})
}

#[tokio::test]
async fn apply_managers_share_fields_and_conflict() {
    let fake = FakeApi::start().await;
    let api = cm_api(&fake);
    let stored = || fake.get("v1", "ConfigMap", Some("prod"), "c").unwrap();

    let first = apply(
        &api,
        "c",
        "a",
        false,
        cm_body(json!({"x": "1", "y": "2"}), json!({"team": "a"})),
    )
    .await
    .unwrap();
    let entries = first["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["manager"], "a");
    assert_eq!(entries[0]["operation"], "Apply");
    assert_eq!(entries[0]["apiVersion"], "v1");
    assert_eq!(entries[0]["fieldsType"], "FieldsV1");
    assert!(entries[0]["time"].is_string());
    assert_eq!(
        entries[0]["fieldsV1"],
        json!({"f:data": {"f:x": {}, "f:y": {}}, "f:metadata": {"f:labels": {"f:team": {}}}})
    );
    assert_eq!(
        stored()["metadata"]["managedFields"],
        first["metadata"]["managedFields"]
    );

    // Another manager adds a field; the first one's stay.
    apply(
        &api,
        "c",
        "b",
        false,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"z": "3"}}),
    )
    .await
    .unwrap();
    assert_eq!(stored()["data"], json!({"x": "1", "y": "2", "z": "3"}));
    assert_eq!(stored()["metadata"]["labels"], json!({"team": "a"}));
    assert_eq!(fields_of(&stored(), "b"), json!({"f:data": {"f:z": {}}}));

    // A different value on someone else's field conflicts, and changes nothing.
    let before = stored();
    let err = apply(&api, "c", "b", false, cm_body(json!({"x": "9"}), json!({})))
        .await
        .unwrap_err();
    assert_eq!(
        status_of(err),
        (
            409,
            "Conflict".to_string(),
            "Apply failed with 1 conflict: conflict with \"a\" using v1: .data.x".to_string()
        )
    );
    let err = apply(
        &api,
        "c",
        "b",
        false,
        cm_body(json!({"x": "9", "y": "8"}), json!({})),
    )
    .await
    .unwrap_err();
    assert_eq!(
        status_of(err).2,
        "Apply failed with 2 conflicts: conflicts with \"a\" using v1:\n- .data.x\n- .data.y"
    );
    assert_eq!(stored(), before);

    // The same value is shared; what b no longer sends and owns alone goes.
    apply(
        &api,
        "c",
        "b",
        false,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"x": "1"}}),
    )
    .await
    .unwrap();
    assert_eq!(stored()["data"], json!({"x": "1", "y": "2"}));
    assert_eq!(fields_of(&stored(), "b"), json!({"f:data": {"f:x": {}}}));
    // a drops x: b still owns it, so it stays.
    apply(
        &api,
        "c",
        "a",
        false,
        cm_body(json!({"y": "2"}), json!({"team": "a"})),
    )
    .await
    .unwrap();
    assert_eq!(stored()["data"], json!({"x": "1", "y": "2"}));

    // force takes the field over.
    apply(
        &api,
        "c",
        "b",
        true,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"x": "1", "y": "7"}}),
    )
    .await
    .unwrap();
    assert_eq!(stored()["data"], json!({"x": "1", "y": "7"}));
    assert_eq!(
        fields_of(&stored(), "a"),
        json!({"f:metadata": {"f:labels": {"f:team": {}}}})
    );
    assert_eq!(
        fields_of(&stored(), "b"),
        json!({"f:data": {"f:x": {}, "f:y": {}}})
    );
    let err = apply(
        &api,
        "c",
        "a",
        false,
        cm_body(json!({"y": "2"}), json!({"team": "a"})),
    )
    .await
    .unwrap_err();
    assert_eq!(
        status_of(err).2,
        "Apply failed with 1 conflict: conflict with \"b\" using v1: .data.y"
    );

    // Labels are fields like any other: dropping one removes it.
    apply(
        &api,
        "c",
        "a",
        false,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": {"other": "x"}}}),
    )
    .await
    .unwrap();
    assert_eq!(stored()["metadata"]["labels"], json!({"other": "x"}));
    assert_eq!(
        managers(&stored()),
        [
            ("a".to_string(), "Apply".to_string()),
            ("b".to_string(), "Apply".to_string())
        ]
    );

    // Re-applying the same configuration is a no-op.
    let rv_before = rv(&stored());
    apply(
        &api,
        "c",
        "a",
        false,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": {"other": "x"}}}),
    )
    .await
    .unwrap();
    assert_eq!(rv(&stored()), rv_before);
}

#[tokio::test]
async fn updates_take_ownership_of_what_they_change() {
    let fake = FakeApi::start().await;
    let api = cm_api(&fake);
    let typed: Api<ConfigMap> = Api::namespaced(fake.client(), "prod");
    let stored = || fake.get("v1", "ConfigMap", Some("prod"), "u").unwrap();
    let plain: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "u"}, "data": {"a": "1", "b": "2"}}))
    .unwrap();
    let created = typed
        .create(
            &PostParams {
                field_manager: Some("creator".into()),
                ..Default::default()
            },
            &plain,
        )
        .await
        .unwrap();
    let created = serde_json::to_value(created).unwrap();
    assert_eq!(
        managers(&created),
        [("creator".to_string(), "Update".to_string())]
    );
    assert_eq!(
        fields_of(&created, "creator"),
        json!({"f:data": {"f:a": {}, "f:b": {}}})
    );

    typed
        .patch(
            "u",
            &PatchParams {
                field_manager: Some("editor".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"data": {"a": "10"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        fields_of(&stored(), "editor"),
        json!({"f:data": {"f:a": {}}})
    );
    assert_eq!(
        fields_of(&stored(), "creator"),
        json!({"f:data": {"f:b": {}}})
    );

    let err = apply(
        &api,
        "u",
        "applier",
        false,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "11"}}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        status_of(err).2,
        "Apply failed with 1 conflict: conflict with \"editor\" using v1: .data.a"
    );

    // A replace that drops b: nobody owns it any more.
    let mut current = typed.get("u").await.unwrap();
    current.data = Some([("a".to_string(), "10".to_string())].into());
    typed
        .replace(
            "u",
            &PostParams {
                field_manager: Some("replacer".into()),
                ..Default::default()
            },
            &current,
        )
        .await
        .unwrap();
    assert_eq!(
        managers(&stored()),
        [("editor".to_string(), "Update".to_string())]
    );

    // Without fieldManager the User-Agent's program name manages the fields.
    let resp = reqwest::Client::new()
        .patch(format!(
            "{}/api/v1/namespaces/prod/configmaps/u",
            fake.url()
        ))
        .header("content-type", "application/merge-patch+json")
        .header(
            "user-agent",
            "kubectl/v1.33.0 (linux/amd64) kubernetes/abcdef",
        )
        .body(json!({"data": {"c": "3"}}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
    assert_eq!(fields_of(&body, "kubectl"), json!({"f:data": {"f:c": {}}}));
    assert_eq!(
        managers(&stored()),
        [
            ("editor".to_string(), "Update".to_string()),
            ("kubectl".to_string(), "Update".to_string())
        ]
    );

    // A patch that changes nothing records nothing.
    let rv_before = rv(&stored());
    typed
        .patch(
            "u",
            &PatchParams {
                field_manager: Some("idle".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"data": {"c": "3"}})),
        )
        .await
        .unwrap();
    assert_eq!(rv(&stored()), rv_before);
    assert_eq!(fields_of(&stored(), "idle"), Value::Null);
}

fn deployment_body(containers: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
           "spec": {"template": {"spec": {"containers": containers}}}})
}

#[tokio::test]
async fn apply_merges_lists_keyed_by_name() {
    let fake = FakeApi::start().await;
    let api: Api<DynamicObject> = Api::namespaced_with(
        fake.client(),
        "prod",
        &kube::api::ApiResource::from_gvk(&GroupVersionKind::gvk("apps", "v1", "Deployment")),
    );
    let stored = || {
        fake.get("apps/v1", "Deployment", Some("prod"), "web")
            .unwrap()
    };
    let containers = || stored()["spec"]["template"]["spec"]["containers"].clone();
    let app = |image: &str, args: Value, env: Value| json!({"name": "app", "image": image, "args": args, "env": env});
    apply(
        &api,
        "web",
        "krmsync",
        false,
        deployment_body(json!([app(
            "app:1",
            json!(["a", "b"]),
            json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]),
        )])),
    )
    .await
    .unwrap();
    assert_eq!(
        fields_of(&stored(), "krmsync"),
        json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {
            "k:{\"name\":\"app\"}": {
                ".": {}, "f:name": {}, "f:image": {}, "f:args": {},
                "f:env": {
                    "k:{\"name\":\"A\"}": {".": {}, "f:name": {}, "f:value": {}},
                    "k:{\"name\":\"B\"}": {".": {}, "f:name": {}, "f:value": {}},
                },
            },
        }}}}})
    );

    // Another manager adds a container: both are kept.
    apply(
        &api,
        "web",
        "injector",
        false,
        deployment_body(json!([{"name": "sidecar", "image": "s:1"}])),
    )
    .await
    .unwrap();
    let names = |cs: &Value| -> Vec<String> {
        cs.as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&containers()), ["app", "sidecar"]);
    let err = apply(
        &api,
        "web",
        "injector",
        false,
        deployment_body(json!([{"name": "app", "image": "evil:1"}])),
    )
    .await
    .unwrap_err();
    assert_eq!(
        status_of(err).2,
        "Apply failed with 1 conflict: conflict with \"krmsync\" using apps/v1: .spec.template.spec.containers[name=\"app\"].image"
    );

    // Dropped env items go, atomic lists are replaced, the other manager's container stays.
    apply(
        &api,
        "web",
        "krmsync",
        false,
        deployment_body(json!([app(
            "app:2",
            json!(["c"]),
            json!([{"name": "A", "value": "1"}]),
        )])),
    )
    .await
    .unwrap();
    assert_eq!(
        containers(),
        json!([
            {"name": "app", "image": "app:2", "args": ["c"], "env": [{"name": "A", "value": "1"}]},
            {"name": "sidecar", "image": "s:1"},
        ])
    );
    assert_eq!(stored()["metadata"]["generation"], 3);

    // A container krmsync no longer sends is removed; an empty list keeps others' items.
    apply(
        &api,
        "web",
        "krmsync",
        false,
        deployment_body(json!([{"name": "app2", "image": "x:1"}])),
    )
    .await
    .unwrap();
    assert_eq!(names(&containers()), ["sidecar", "app2"]);
    apply(&api, "web", "krmsync", false, deployment_body(json!([])))
        .await
        .unwrap();
    assert_eq!(names(&containers()), ["sidecar"]);
}

// ---------------------------------------------------------------- namespaces, GC

#[tokio::test]
async fn namespace_lifecycle_blocks_and_cleans_up() {
    let fake = FakeApi::start().await;
    fake.set_namespace_lifecycle(true);
    let ghost: Api<ConfigMap> = Api::namespaced(fake.client(), "ghost");
    let err = ghost
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap_err();
    assert_eq!(
        status_of(err),
        (
            404,
            "NotFound".to_string(),
            "namespaces \"ghost\" not found".to_string()
        )
    );
    let ghost_dyn: Api<DynamicObject> = Api::namespaced_with(
        fake.client(),
        "ghost",
        &kube::api::ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap")),
    );
    let err = apply(&ghost_dyn, "c", "m", true, cm_body(json!({}), json!({})))
        .await
        .unwrap_err();
    assert_eq!(status_of(err).2, "namespaces \"ghost\" not found");
    assert!(fake.list("v1", "ConfigMap").is_empty());

    let namespaces: Api<Namespace> = Api::all(fake.client());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "apps"}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(fake.client(), "apps");
    cms.create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap();
    let mut held = cm("held", json!({}));
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();
    fake.insert(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                       "metadata": {"name": "web", "namespace": "apps"}}));
    fake.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "elsewhere", "namespace": "other"}}));

    let answer = namespaces
        .delete("apps", &DeleteParams::default())
        .await
        .unwrap();
    let answer = answer.left().expect("the namespace is still there");
    assert!(answer.metadata.deletion_timestamp.is_some());
    assert_eq!(answer.status.unwrap().phase.as_deref(), Some("Terminating"));
    let stored = fake.get("v1", "Namespace", None, "apps").unwrap();
    assert_eq!(stored["status"]["phase"], "Terminating");
    assert!(fake.get("v1", "ConfigMap", Some("apps"), "a").is_none());
    assert!(
        fake.get("apps/v1", "Deployment", Some("apps"), "web")
            .is_none()
    );
    let held = fake.get("v1", "ConfigMap", Some("apps"), "held").unwrap();
    assert!(held["metadata"]["deletionTimestamp"].is_string());
    assert!(
        fake.get("v1", "ConfigMap", Some("other"), "elsewhere")
            .is_some()
    );

    let err = cms
        .create(&PostParams::default(), &cm("b", json!({})))
        .await
        .unwrap_err();
    assert_eq!(
        status_of(err),
        (403, "Forbidden".to_string(),
         "configmaps \"b\" is forbidden: unable to create new content in namespace apps because it is being terminated".to_string())
    );
    let apps_dyn: Api<DynamicObject> = Api::namespaced_with(
        fake.client(),
        "apps",
        &kube::api::ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap")),
    );
    let err = apply(&apps_dyn, "c", "m", true, cm_body(json!({}), json!({})))
        .await
        .unwrap_err();
    assert_eq!(status_of(err).0, 403);
    let deps: Api<Deployment> = Api::namespaced(fake.client(), "apps");
    let dep: Deployment = serde_json::from_value(json!({"metadata": {"name": "late"}})).unwrap();
    assert_eq!(
        status_of(deps.create(&PostParams::default(), &dep).await.unwrap_err()).2,
        "deployments.apps \"late\" is forbidden: unable to create new content in namespace apps because it is being terminated"
    );

    // Existing objects may still be updated; the last one gone takes the namespace.
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(fake.get("v1", "ConfigMap", Some("apps"), "held").is_none());
    assert!(fake.get("v1", "Namespace", None, "apps").is_none());

    // A namespace's own finalizers hold it after it is empty.
    fake.insert(json!({"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": "kept", "finalizers": ["example.com/x"]}}));
    namespaces
        .delete("kept", &DeleteParams::default())
        .await
        .unwrap();
    assert!(fake.get("v1", "Namespace", None, "kept").is_some());
    namespaces
        .patch(
            "kept",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": []}})),
        )
        .await
        .unwrap();
    assert!(fake.get("v1", "Namespace", None, "kept").is_none());
}

fn owned_cm(name: &str, owners: &[&Value], finalizers: &[&str]) -> Value {
    let refs: Vec<Value> = owners
        .iter()
        .map(|o| {
            json!({"apiVersion": o["apiVersion"], "kind": o["kind"],
                        "name": o["metadata"]["name"], "uid": o["metadata"]["uid"]})
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "prod", "ownerReferences": refs,
                        "finalizers": finalizers}})
}

#[tokio::test]
async fn garbage_collection_follows_owner_references() {
    let fake = FakeApi::start().await;
    let get = |name: &str| fake.get("v1", "ConfigMap", Some("prod"), name);
    for name in ["owner", "other-owner", "owner2"] {
        fake.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": name, "namespace": "prod"}}));
    }
    let owner = get("owner").unwrap();
    let other = get("other-owner").unwrap();
    fake.insert(owned_cm("child", &[&owner], &[]));
    let child = get("child").unwrap();
    fake.insert(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                       "metadata": {"name": "grandchild", "namespace": "prod",
                                    "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
                                                         "name": "child", "uid": child["metadata"]["uid"]}]}}));
    fake.insert(owned_cm("held", &[&owner], &["example.com/hold"]));
    fake.insert(owned_cm("shared", &[&owner, &other], &[]));
    fake.insert(owned_cm("unrelated", &[], &[]));

    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "prod");
    api.delete("owner", &DeleteParams::default()).await.unwrap();
    assert!(get("owner").is_none());
    assert!(get("child").is_none());
    assert!(
        fake.get("apps/v1", "Deployment", Some("prod"), "grandchild")
            .is_none()
    );
    assert!(get("held").unwrap()["metadata"]["deletionTimestamp"].is_string());
    assert!(get("shared").is_some(), "another owner is alive");
    assert!(get("unrelated").is_some());

    // An owner held by a finalizer keeps its dependents until it is removed.
    fake.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "owner2", "namespace": "prod", "finalizers": ["example.com/hold"]}}));
    let owner2 = get("owner2").unwrap();
    fake.insert(owned_cm("child2", &[&owner2], &[]));
    api.delete("owner2", &DeleteParams::default())
        .await
        .unwrap();
    assert!(get("child2").is_some());
    api.patch(
        "owner2",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": []}})),
    )
    .await
    .unwrap();
    assert!(get("owner2").is_none());
    assert!(get("child2").is_none());
}

// ---------------------------------------------------------------- faults

#[tokio::test]
async fn fail_nth_and_delay() {
    let fake = FakeApi::start().await;
    for name in ["a", "b"] {
        fake.insert(json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": name, "namespace": "prod"}}));
    }
    let api: Api<ConfigMap> = Api::namespaced(fake.client(), "prod");
    fake.fail_nth("GET", "/configmaps/a", 2, 500, "try later");
    api.get("a").await.unwrap();
    api.get("b").await.unwrap();
    assert_eq!(
        status_of(api.get("a").await.unwrap_err()),
        (500, "InternalError".to_string(), "try later".to_string())
    );
    api.get("a").await.unwrap();
    api.get("a").await.unwrap();

    // kube's client retries a transient 503: one failure is not seen.
    fake.clear_requests();
    fake.fail_nth("GET", "/configmaps/a", 1, 503, "busy");
    api.get("a").await.unwrap();
    assert_eq!(fake.requests().len(), 2);

    // Counted from the call; cleared by clear_failures.
    fake.fail_nth("*", "/configmaps/a", 1, 500, "boom");
    assert_eq!(status_of(api.get("a").await.unwrap_err()).0, 500);
    api.get("a").await.unwrap();
    fake.fail_nth("GET", "/configmaps/a", 1, 500, "boom");
    fake.clear_failures();
    api.get("a").await.unwrap();

    fake.delay("GET", "/configmaps/b", Duration::from_millis(700));
    let started = std::time::Instant::now();
    api.get("b").await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(700));
    let started = std::time::Instant::now();
    api.get("a").await.unwrap();
    assert!(started.elapsed() < Duration::from_millis(500));
    let mut config = fake.config();
    config.read_timeout = Some(Duration::from_millis(200));
    let impatient: Api<ConfigMap> =
        Api::namespaced(kube::Client::try_from(config).unwrap(), "prod");
    let err = impatient.get("b").await.unwrap_err();
    assert!(
        !matches!(err, kube::Error::Api(_)),
        "a timeout, not an answer: {err:?}"
    );
    fake.clear_failures();
    let started = std::time::Instant::now();
    impatient.get("b").await.unwrap();
    assert!(started.elapsed() < Duration::from_millis(500));
}

/// `crash_after(n, _)`: the first n writes are served (reads and dry-runs do
/// not count), then every request fails; with `lose_response` the write at
/// the crash point takes effect and only its answer is an error.
#[tokio::test]
async fn crash_after_counts_writes() {
    for lose_response in [false, true] {
        let fake = FakeApi::start().await;
        let api: Api<ConfigMap> = Api::namespaced(fake.client(), "prod");
        fake.crash_after(1, lose_response);
        let pp = PostParams::default();
        api.create(&pp, &cm("a", json!({}))).await.unwrap();
        let dry = PostParams {
            dry_run: true,
            ..Default::default()
        };
        api.create(&dry, &cm("dry", json!({}))).await.unwrap();
        api.get("a").await.unwrap();
        assert!(!fake.crashed());
        assert_eq!(
            api_code(api.create(&pp, &cm("b", json!({}))).await.unwrap_err()),
            500
        );
        assert!(fake.crashed());
        assert_eq!(
            fake.get("v1", "ConfigMap", Some("prod"), "b").is_some(),
            lose_response
        );
        assert_eq!(api_code(api.get("a").await.unwrap_err()), 500);
        fake.clear_failures();
        assert!(!fake.crashed());
        api.get("a").await.unwrap();
        assert!(fake.get("v1", "ConfigMap", Some("prod"), "dry").is_none());
    }
}

#[tokio::test]
async fn kubeconfig_as_user_authenticates() {
    let fake = FakeApi::start().await;
    let yaml = fake.kubeconfig_yaml_as("system:serviceaccount:team-a:deployer");
    let kc = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    Api::<ConfigMap>::namespaced(kube::Client::try_from(config).unwrap(), "team-a")
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(fake.requests().last().unwrap().user, DEPLOYER);
}
