//! Runs the real `krmsync controller` binary against the in-memory API
//! server: watches, the reconcile loop, leader election, the metrics and
//! health endpoints and graceful shutdown, wired as in production.

mod support;

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{FakeApi, insert_bundle, insert_bundle_dir};

const NS: &str = "apps";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Controller(Child);

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn log_of(child: &mut Child) -> String {
    let mut s = String::new();
    if let Some(e) = child.stderr.as_mut() {
        let _ = e.read_to_string(&mut s);
    }
    s
}

async fn wait_for(what: &str, f: impl FnMut() -> bool) {
    wait_for_within(what, Duration::from_secs(60), f).await
}

async fn wait_for_within(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}");
}

/// `krmsync controller` against `fake`: its kubeconfig and work directory
/// in `dir`, metrics and health on ephemeral ports.
fn controller_command(fake: &FakeApi, dir: &std::path::Path) -> Command {
    controller_command_with(dir, &fake.kubeconfig_yaml())
}

/// [`controller_command`] with the kubeconfig `kubeconfig_yaml`.
fn controller_command_with(dir: &std::path::Path, kubeconfig_yaml: &str) -> Command {
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, kubeconfig_yaml).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_krmsync"));
    c.args([
        "controller",
        "--metrics-addr",
        "127.0.0.1:0",
        "--health-addr",
        "127.0.0.1:0",
    ])
    .arg("--work-dir")
    .arg(dir.join("work"))
    .env("KUBECONFIG", &kubeconfig);
    c
}

/// Waits until Kustomization `site` is Ready=True.
async fn wait_site_ready(fake: &FakeApi) {
    wait_ready_status(fake, "site", "True").await;
}

/// Waits until the Ready condition of Kustomization `name` has `status`.
async fn wait_ready_status(fake: &FakeApi, name: &str, status: &str) {
    wait_for(
        &format!("Kustomization {name} to be Ready={status}"),
        || {
            fake.get("krmsync.dev/v1alpha1", "Kustomization", Some(NS), name)
                .and_then(|k| ready(&k))
                .is_some_and(|(s, _)| s == status)
        },
    )
    .await;
}

/// The controller binary against `fake`, its log in `dir/log`.
fn spawn_logged(fake: &FakeApi, dir: &std::path::Path) -> Controller {
    let child = controller_command(fake, dir)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("log")).unwrap())
        .spawn()
        .unwrap();
    Controller(child)
}

fn ready(k: &Value) -> Option<(String, String)> {
    k["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")
        .map(|c| {
            (
                c["status"].as_str().unwrap_or("").to_string(),
                c["reason"].as_str().unwrap_or("").to_string(),
            )
        })
}

/// The bundle ConfigMap `bundle` in NS: ConfigMap `settings` (color green).
fn seed_bundle(fake: &FakeApi) {
    insert_bundle(
        fake,
        NS,
        "bundle",
        &[
            ("kustomization.yaml", "resources: [cm.yaml]\n"),
            (
                "cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: green\n",
            ),
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_binary_reconciles_serves_metrics_and_shuts_down() {
    let fake = FakeApi::start().await;
    fake.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}));
    fake.insert(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "krmsync-system"}}),
    );
    seed_bundle(&fake);
    fake.insert(json!({
        "apiVersion": "krmsync.dev/v1alpha1", "kind": "Kustomization",
        "metadata": {"name": "site", "namespace": NS},
        "spec": {"source": {"bundle": {"configMapRef": {"name": "bundle"}}}, "interval": "1h"},
    }));

    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, fake.kubeconfig_yaml()).unwrap();
    let (mport, hport) = (free_port(), free_port());
    let child = Command::new(env!("CARGO_BIN_EXE_krmsync"))
        .args([
            "controller",
            "--leader-elect",
            "--leader-election-namespace",
            "krmsync-system",
            "--metrics-addr",
            &format!("127.0.0.1:{mport}"),
            "--health-addr",
            &format!("127.0.0.1:{hport}"),
            "--work-dir",
            dir.path().join("work").to_str().unwrap(),
            "--log-format",
            "json",
        ])
        .env("KUBECONFIG", &kubeconfig)
        .env("POD_NAME", "krmsync-test-0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ctl = Controller(child);

    wait_site_ready(&fake).await;
    let cm = fake
        .get("v1", "ConfigMap", Some(NS), "settings")
        .expect("applied");
    assert_eq!(cm["data"]["color"], "green");
    let lease = fake
        .get(
            "coordination.k8s.io/v1",
            "Lease",
            Some("krmsync-system"),
            "krmsync-controller",
        )
        .expect("leader lease");
    assert_eq!(lease["spec"]["holderIdentity"], "krmsync-test-0");

    let http = reqwest::Client::new();
    let metrics = http
        .get(format!("http://127.0.0.1:{mport}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(r#"krmsync_reconciles_total{result="success",reason="Succeeded"}"#),
        "{metrics}"
    );
    assert!(
        metrics.contains(r#"krmsync_resources_applied_total{action="created"} 1"#),
        "{metrics}"
    );
    for path in ["healthz", "readyz"] {
        let r = http
            .get(format!("http://127.0.0.1:{hport}/{path}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "/{path}");
    }

    // a change to the spec reconciles at once (the watch), here a failure
    let mut k = fake
        .get("krmsync.dev/v1alpha1", "Kustomization", Some(NS), "site")
        .unwrap();
    k["spec"]["path"] = json!("missing-dir");
    fake.insert(k);
    wait_for("Ready=False after the spec change", || {
        fake.get("krmsync.dev/v1alpha1", "Kustomization", Some(NS), "site")
            .and_then(|k| ready(&k))
            .is_some_and(|(s, r)| s == "False" && r == "RenderFailed")
    })
    .await;
    assert!(
        fake.get("v1", "ConfigMap", Some(NS), "settings").is_some(),
        "not pruned after a failed render"
    );

    // graceful shutdown on SIGTERM releases the lease
    let pid = ctl.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = ctl.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "controller did not stop on SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let log = log_of(&mut ctl.0);
    assert!(status.success(), "exit {status:?}\n{log}");
    assert!(log.contains("controller stopped"), "{log}");
    let lease = fake
        .get(
            "coordination.k8s.io/v1",
            "Lease",
            Some("krmsync-system"),
            "krmsync-controller",
        )
        .unwrap();
    assert!(
        lease["spec"]["holderIdentity"].is_null(),
        "lease released: {lease}"
    );
}

/// After a restart the Kustomizations that use a Catalog must not report
/// CatalogNotFound while the Catalog cache syncs (the Catalog list is
/// answered late here); plain logs carry no ANSI codes when stderr is not a
/// terminal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kustomizations_wait_for_the_catalog_cache_and_plain_logs_have_no_colours() {
    let fake = FakeApi::start().await;
    fake.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}));
    seed_bundle(&fake);
    fake.insert(json!({
        "apiVersion": "krmsync.dev/v1alpha1", "kind": "Catalog",
        "metadata": {"name": "fns", "generation": 1},
        "spec": {"krmFunctions": [], "allowedNamespaces": {"names": [NS]}},
        "status": {"observedGeneration": 1, "functionCount": 0, "conditions": [{
            "type": "Ready", "status": "True", "reason": "Succeeded", "message": "0 functions",
            "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1}]},
    }));
    fake.insert(json!({
        "apiVersion": "krmsync.dev/v1alpha1", "kind": "Kustomization",
        "metadata": {"name": "site", "namespace": NS},
        "spec": {"source": {"bundle": {"configMapRef": {"name": "bundle"}}},
                 "interval": "1h", "catalogs": ["fns"]},
    }));
    // the Catalog list (the cache's initial sync) is answered late
    fake.delay(
        "GET",
        "/apis/krmsync.dev/v1alpha1/catalogs",
        Duration::from_secs(2),
    );

    let dir = tempfile::tempdir().unwrap();
    let child = controller_command(&fake, dir.path())
        .args(["--log-format", "plain", "--log-level", "debug"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ctl = Controller(child);
    wait_site_ready(&fake).await;
    let catalog_not_found = fake.requests().into_iter().any(|r| {
        r.body
            .as_ref()
            .is_some_and(|b| b.to_string().contains("CatalogNotFound"))
    });
    assert!(
        !catalog_not_found,
        "a Kustomization reported CatalogNotFound before the cache synced"
    );
    let _ = ctl.0.kill();
    let _ = ctl.0.wait();
    let log = log_of(&mut ctl.0);
    assert!(log.contains("catalog cache synced"), "{log}");
    assert!(
        !log.contains('\u{1b}'),
        "ANSI escape codes in plain logs:\n{log}"
    );
}

/// `krmsync bundle push` stores the bundle and asks the Kustomizations that
/// use it to reconcile now (`krmsync.dev/reconcile-at`), leaving the others
/// alone; the controller needs no right to watch ConfigMaps for that.
#[tokio::test(flavor = "multi_thread")]
async fn bundle_push_requests_a_reconcile_of_the_kustomizations_using_it() {
    let fake = FakeApi::start().await;
    fake.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}));
    for (name, bundle) in [("uses-it", "app"), ("other", "something-else")] {
        fake.insert(json!({
            "apiVersion": "krmsync.dev/v1alpha1", "kind": "Kustomization",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"source": {"bundle": {"configMapRef": {"name": bundle}}}, "interval": "1h"},
        }));
    }
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, fake.kubeconfig_yaml()).unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(tree.join("kustomization.yaml"), "resources: [cm.yaml]\n").unwrap();
    std::fs::write(
        tree.join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
    )
    .unwrap();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_krmsync"))
            .args(["bundle", "push"])
            .arg(&tree)
            .args(["--name", "app", "-n", NS])
            .env("KUBECONFIG", &kubeconfig)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("reconcile requested: Kustomization uses-it\n"),
        "{stdout}"
    );
    let poked = |name: &str| {
        fake.get("krmsync.dev/v1alpha1", "Kustomization", Some(NS), name)
            .unwrap()["metadata"]["annotations"]["krmsync.dev/reconcile-at"]
            .as_str()
            .map(str::to_string)
    };
    assert!(poked("uses-it").is_some_and(|s| s.starts_with("bundle-push-")));
    assert_eq!(poked("other"), None);
    assert!(fake.get("v1", "ConfigMap", Some(NS), "app").is_some());
}

/// Self-healing: with `interval: 1h`, an applied object deleted, or changed
/// by another field manager, is restored within seconds (the controller
/// watches the applied kinds); with `--self-heal=false` it is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_or_edited_objects_are_restored_within_seconds() {
    for self_heal in [true, false] {
        let fake = FakeApi::start().await;
        fake.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}));
        seed_bundle(&fake);
        fake.insert(json!({
            "apiVersion": "krmsync.dev/v1alpha1", "kind": "Kustomization",
            "metadata": {"name": "site", "namespace": NS},
            "spec": {"source": {"bundle": {"configMapRef": {"name": "bundle"}}}, "interval": "1h"},
        }));
        let dir = tempfile::tempdir().unwrap();
        let child = controller_command(&fake, dir.path())
            .arg(format!("--self-heal={self_heal}"))
            .args(["--log-level", "krmsync=debug"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("log")).unwrap())
            .spawn()
            .unwrap();
        let log = dir.path().join("log");
        let _ctl = Controller(child);
        wait_site_ready(&fake).await;
        // give the watch of the applied kind a moment to list
        tokio::time::sleep(Duration::from_secs(2)).await;

        let cms: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(fake.client(), NS);
        cms.delete("settings", &Default::default()).await.unwrap();
        let deleted_at = Instant::now();
        let restored = |fake: &FakeApi| {
            fake.get("v1", "ConfigMap", Some(NS), "settings")
                .is_some_and(|c| c["data"]["color"] == "green")
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline && !restored(&fake) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(
            restored(&fake),
            self_heal,
            "self_heal={self_heal}: the deleted ConfigMap {} restored within 10 s; controller log:\n{}",
            if self_heal { "was not" } else { "was" },
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        if !self_heal {
            continue;
        }
        println!(
            "self-healing: deleted object restored after {:?}",
            deleted_at.elapsed()
        );
        // another manager edits a field krmsync owns
        let patch = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": NS}, "data": {"color": "red"}});
        cms.patch(
            "settings",
            &kube::api::PatchParams::apply("intruder").force(),
            &kube::api::Patch::Apply(&patch),
        )
        .await
        .unwrap();
        assert!(!restored(&fake));
        let edited_at = Instant::now();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline && !restored(&fake) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            restored(&fake),
            "the edited ConfigMap was not restored within 10 s"
        );
        println!(
            "self-healing: edited object restored after {:?}",
            edited_at.elapsed()
        );
    }
}

/// `krmsync bundle push` of `tree` (its `cm.yaml` of color `color`) as
/// ConfigMap `app` of NS; panics unless it exits 0. Its output.
fn push_bundle(tree: &std::path::Path, kubeconfig: &std::path::Path, color: &str) -> String {
    std::fs::write(
        tree.join("cm.yaml"),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  color: {color}\n"),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_krmsync"))
        .args(["bundle", "push"])
        .arg(tree)
        .args(["--name", "app", "-n", NS])
        .env("KUBECONFIG", kubeconfig)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "a refused notification must not fail the push: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `krmsync bundle push` by someone who may store the bundle but not
/// touch the Kustomizations: the push succeeds (exit 0, bundle stored) and
/// says which Kustomizations were not notified and why, first when listing
/// them is refused, then when patching one is.
#[tokio::test(flavor = "multi_thread")]
async fn bundle_push_reports_refused_notifications_and_still_succeeds() {
    let fake = FakeApi::start().await;
    fake.set_rbac(true);
    fake.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}));
    fake.insert(json!({
        "apiVersion": "krmsync.dev/v1alpha1", "kind": "Kustomization",
        "metadata": {"name": "uses-it", "namespace": NS},
        "spec": {"source": {"bundle": {"configMapRef": {"name": "app"}}}, "interval": "1h"},
    }));
    let role = |rules: Value| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "pusher", "namespace": NS}, "rules": rules,
        })
    };
    fake.insert(role(json!([
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "patch"]},
    ])));
    fake.insert(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "pusher", "namespace": NS},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pusher"},
        "subjects": [{"kind": "User", "name": "pusher"}],
    }));
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, fake.kubeconfig_yaml_as("pusher")).unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(tree.join("kustomization.yaml"), "resources: [cm.yaml]\n").unwrap();
    let push = |color: &'static str| {
        let (tree, kubeconfig) = (tree.clone(), kubeconfig.clone());
        tokio::task::spawn_blocking(move || push_bundle(&tree, &kubeconfig, color))
    };
    let stored = |fake: &FakeApi| {
        fake.get("v1", "ConfigMap", Some(NS), "app").unwrap()["metadata"]["annotations"]
            ["krmsync.dev/bundle-digest"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let poked = |fake: &FakeApi| {
        fake.get("krmsync.dev/v1alpha1", "Kustomization", Some(NS), "uses-it")
            .unwrap()["metadata"]["annotations"]["krmsync.dev/reconcile-at"]
            .is_string()
    };

    // listing Kustomizations is refused
    let out = push("green").await.unwrap();
    assert!(
        out.contains("not notified: listing Kustomizations in apps:")
            && out.contains("forbidden")
            && out.contains("next interval"),
        "{out}"
    );
    let first = stored(&fake);
    assert!(!poked(&fake));

    // listed, but patching the Kustomization is refused
    fake.insert(role(json!([
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "patch"]},
        {"apiGroups": ["krmsync.dev"], "resources": ["kustomizations"], "verbs": ["list"]},
    ])));
    let out = push("blue").await.unwrap();
    assert!(
        out.contains("not notified (they pick the bundle up at their next interval): uses-it:")
            && out.contains("forbidden"),
        "{out}"
    );
    assert!(!out.contains("reconcile requested"), "{out}");
    assert_ne!(stored(&fake), first, "the second bundle was not stored");
    assert!(!poked(&fake));
}

/// Self-healing under the multi-tenant lockdown: the controller may not
/// list ConfigMaps, so the watch of that kind is refused (403). It warns
/// once (not at every retry), the Kustomization is applied and Ready all
/// the same, and once an operator grants `list`/`watch` the retrying watch
/// starts and a deleted object is restored without waiting for the
/// (hour-long) interval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_self_healing_watch_warns_once_and_recovers_when_granted() {
    let fake = FakeApi::start().await;
    fake.set_rbac(true);
    for file in [
        "config/rbac/cluster_role.yaml",
        "config/rbac/cluster_role_binding.yaml",
    ] {
        for doc in support::harness::repo_yaml(file) {
            fake.insert(doc);
        }
    }
    fake.insert(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "krmsync-system"}}),
    );
    fake.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}));
    seed_bundle(&fake);
    fake.insert(json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "deployer", "namespace": NS}}));
    fake.insert(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "deployer-edit", "namespace": NS},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"kind": "ServiceAccount", "name": "deployer", "namespace": NS}],
    }));
    fake.insert(json!({
        "apiVersion": "krmsync.dev/v1alpha1", "kind": "Kustomization",
        "metadata": {"name": "site", "namespace": NS},
        "spec": {"source": {"bundle": {"configMapRef": {"name": "bundle"}}}, "interval": "1h",
                 "serviceAccountName": "deployer"},
    }));
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let child = controller_command_with(
        dir.path(),
        &fake.kubeconfig_yaml_as(support::harness::CONTROLLER_USER),
    )
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(&log).unwrap())
    .spawn()
    .unwrap();
    let _ctl = Controller(child);
    let log_text = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_site_ready(&fake).await;
    let refused_lists = |fake: &FakeApi| {
        fake.requests()
            .iter()
            .filter(|r| {
                r.method == "GET"
                    && r.path == "/api/v1/configmaps"
                    && r.user == support::harness::CONTROLLER_USER
            })
            .count()
    };
    // the watch is refused and retried (with backoff) several times
    wait_for("the refused watch to be retried", || {
        refused_lists(&fake) >= 3
    })
    .await;
    let warnings = log_text()
        .matches("self-healing: watching this kind failed")
        .count();
    assert_eq!(
        warnings,
        1,
        "one warning, not one per retry:\n{}",
        log_text()
    );
    let k = fake
        .get("krmsync.dev/v1alpha1", "Kustomization", Some(NS), "site")
        .unwrap();
    assert_eq!(
        ready(&k),
        Some(("True".into(), "Succeeded".into())),
        "a refused watch must not fail the reconcile"
    );

    // the operator grants the controller list/watch on ConfigMaps
    fake.insert(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "krmsync-heal-configmaps"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "watch"]}],
    }));
    fake.insert(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "krmsync-heal-configmaps"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "krmsync-heal-configmaps"},
        "subjects": [{"kind": "User", "name": support::harness::CONTROLLER_USER}],
    }));
    let granted = Instant::now();
    // the watch lists successfully (its backoff is at most 30 s)
    let listed = |fake: &FakeApi| {
        fake.requests().iter().any(|r| {
            r.method == "GET"
                && r.path == "/api/v1/configmaps"
                && r.query_param("watch")
                    .is_some_and(|w| w == "true" || w == "1")
        })
    };
    wait_for("the self-healing watch to start after the grant", || {
        listed(&fake)
    })
    .await;
    println!(
        "self-healing watch started {:?} after the grant",
        granted.elapsed()
    );
    let cms: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(fake.client(), NS);
    cms.delete("settings", &Default::default()).await.unwrap();
    wait_for_within(
        "the deleted ConfigMap to be restored (interval 1h)",
        Duration::from_secs(10),
        || fake.get("v1", "ConfigMap", Some(NS), "settings").is_some(),
    )
    .await;
    assert_eq!(
        log_text()
            .matches("self-healing: watching this kind failed")
            .count(),
        1,
        "{}",
        log_text()
    );
}

/// A Kustomization that never applied has no finalizer (a first apply adds
/// it with its first write), so its deletion never reaches the finalizer:
/// the controller still drops its work directory when the watch reports it
/// gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kustomization_deleted_before_its_first_apply_leaves_no_work_directory() {
    let fake = FakeApi::start().await;
    fake.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}));
    // fetched and unpacked, but the render fails: missing.yaml is not there
    // (a bundle holding a symlink is unpacked to the work directory; others
    // are rendered from memory)
    let tree = tempfile::tempdir().unwrap();
    std::fs::write(
        tree.path().join("kustomization.yaml"),
        "resources: [missing.yaml]\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("kustomization.yaml", tree.path().join("link.yaml")).unwrap();
    insert_bundle_dir(&fake, NS, "bundle", tree.path());
    fake.insert(json!({
        "apiVersion": "krmsync.dev/v1alpha1", "kind": "Kustomization",
        "metadata": {"name": "broken", "namespace": NS},
        "spec": {"source": {"bundle": {"configMapRef": {"name": "bundle"}}}, "interval": "1h"},
    }));
    let dir = tempfile::tempdir().unwrap();
    let _ctl = spawn_logged(&fake, dir.path());
    let work = dir.path().join("work").join(format!("{NS}_broken"));
    wait_ready_status(&fake, "broken", "False").await;
    assert!(
        work.exists(),
        "the bundle was unpacked in {}",
        work.display()
    );
    let k = fake
        .get("krmsync.dev/v1alpha1", "Kustomization", Some(NS), "broken")
        .unwrap();
    assert!(
        k["metadata"]["finalizers"]
            .as_array()
            .is_none_or(|f| f.is_empty()),
        "nothing was applied, so no finalizer: {k}"
    );
    let api: kube::Api<krmsync::api::Kustomization> = kube::Api::namespaced(fake.client(), NS);
    api.delete("broken", &Default::default()).await.unwrap();
    wait_for("the work directory to be removed", || !work.exists()).await;
}

/// A bundle without symlinks is unpacked into memory and rendered from
/// there: nothing is written to the work directory, and a tree an earlier
/// render left there (an older controller, a bundle that needed the disk)
/// is removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_bundle_is_rendered_from_memory() {
    let fake = FakeApi::start().await;
    fake.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}));
    insert_bundle(
        &fake,
        NS,
        "bundle",
        &[
            ("kustomization.yaml", "resources: [cm.yaml]\n"),
            (
                "cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-memory}\n",
            ),
        ],
    );
    fake.insert(json!({
        "apiVersion": "krmsync.dev/v1alpha1", "kind": "Kustomization",
        "metadata": {"name": "app", "namespace": NS},
        "spec": {"source": {"bundle": {"configMapRef": {"name": "bundle"}}}, "interval": "1h"},
    }));
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work").join(format!("{NS}_app"));
    let stale = work.join("sha256-old").join("tree");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("kustomization.yaml"), "resources: []\n").unwrap();
    let _ctl = spawn_logged(&fake, dir.path());
    wait_ready_status(&fake, "app", "True").await;
    assert!(
        fake.get("v1", "ConfigMap", Some(NS), "from-memory")
            .is_some()
    );
    assert!(
        !work.exists(),
        "nothing is kept in the work directory: {:?}",
        std::fs::read_dir(&work).map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
    );
}
