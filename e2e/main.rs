//! End-to-end tests of krmsync against the cluster of `KUBECONFIG`.
//!
//! ```sh
//! cargo test --test e2e -- --ignored --nocapture --test-threads=1
//! ```
//!
//! Every test is `#[ignore]`d (it needs a cluster). Each one installs the
//! CRDs of this checkout, creates its own namespace `krmsync-e2e-<random>`,
//! starts `krmsync controller` as a local child process watching only that
//! namespace (so it reaches `file://` git repositories made by the test),
//! and deletes the namespace and stops the controller at the end, also
//! when it fails. Without a reachable cluster a test prints
//! `e2e: not run: no cluster reachable (<reason>)` and returns.
//!
//! `KRMSYNC_E2E_TIMEOUT_SECS` (default 120) bounds every wait.

mod airgap;
mod common;
mod functions;
mod safety;

use common::*;
use serde_json::Value;
use sha2::{Digest, Sha256};

// The fully qualified resource name: `kustomizations` alone may resolve to
// Flux's kustomize.toolkit.fluxcd.io on clusters that also run Flux. The
// printed columns are the same.
const KS: &str = "kustomizations.krmsync.dev";

const TABLE_COLUMNS: &[&str] = &["NAME", "READY", "REVISION", "RESOURCES", "AGE", "STATUS"];
const WIDE_COLUMNS: &[&str] = &[
    "NAME",
    "READY",
    "REVISION",
    "RESOURCES",
    "AGE",
    "STATUS",
    "RENDERED",
    "APPLIED",
];

fn git_spec(url: &str, path: &str, extra: &str) -> String {
    format!(
        "source:\n  git:\n    url: {url}\n    ref:\n      branch: main\npath: {path}\n\
         # Only the reconcile-at annotation (or a spec change) triggers a new\n\
         # reconcile during the test.\ninterval: 1h\n{extra}"
    )
}

fn resource_count(k: &Value) -> Option<i64> {
    k.pointer("/status/resourceCount").and_then(Value::as_i64)
}

/// The row of `name` in a `kubectl get` table, split on whitespace, after
/// checking the header is exactly `columns`.
fn table_row(table: &str, columns: &[&str], name: &str) -> Vec<String> {
    let mut lines = table.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, columns, "table header of:\n{table}");
    lines
        .map(|l| l.split_whitespace().map(String::from).collect::<Vec<_>>())
        .find(|cells| cells.first().map(String::as_str) == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in:\n{table}"))
}

fn get_obj(kind: &str, name: &str, ns: &str) -> Value {
    get_json(&[kind, name, "-n", ns]).unwrap_or_else(|| panic!("{kind} {ns}/{name} not found"))
}

/// (a) to (d): a git source is applied with owner labels and shown in the
/// printer columns; a new commit converges after `krmsync.dev/reconcile-at`;
/// an object removed from the source is pruned; a broken kustomization
/// reports RenderFailed and leaves the applied objects alone.
#[test]
#[ignore = "needs a cluster (KUBECONFIG)"]
fn git_source_apply_update_prune_and_render_failure() {
    let Some(mut e) = E2e::setup() else { return };
    let ns = e.ns().to_string();
    let repo = GitRepo::new();
    repo.write(
        "app/kustomization.yaml",
        &kustomization_yaml(&["configmap.yaml", "deployment.yaml"]),
    );
    repo.write(
        "app/configmap.yaml",
        &configmap_yaml("app-config", "greeting", "hello"),
    );
    repo.write("app/deployment.yaml", &deployment_yaml("app"));
    let rev1 = repo.commit("app: a ConfigMap and a Deployment");

    // (a) Ready, objects applied and labelled, printer columns.
    e.apply_kustomization("app", &git_spec(&repo.url(), "app", ""));
    let k = e.wait_ready("app", |r| r == rev1);
    assert_eq!(resource_count(&k), Some(2), "{}", status_summary(&k));
    assert!(
        k.pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| f.iter().any(|x| x == "krmsync.dev/finalizer")),
        "finalizer krmsync.dev/finalizer missing: {}",
        k["metadata"]
    );
    let cm = get_obj("configmap", "app-config", &ns);
    assert_owned_by(&cm, &ns, "app");
    assert_eq!(str_at(&cm, "/data/greeting").as_deref(), Some("hello"));
    let dep = get_obj("deployment", "app", &ns);
    assert_owned_by(&dep, &ns, "app");

    let table = kubectl(&["get", KS, "-n", &ns]);
    println!("{table}");
    let row = table_row(&table, TABLE_COLUMNS, "app");
    assert_eq!(
        row[1..4],
        ["True".to_string(), rev1.clone(), "2".to_string()],
        "READY, REVISION, RESOURCES of:\n{table}"
    );
    let wide = kubectl(&["get", KS, "-n", &ns, "-o", "wide"]);
    println!("{wide}");
    let row = table_row(&wide, WIDE_COLUMNS, "app");
    assert_eq!(row[1], "True", "READY of:\n{wide}");
    assert_eq!(row[2], rev1, "REVISION of:\n{wide}");
    assert_eq!(
        row[row.len() - 2..],
        ["True".to_string(), "True".to_string()],
        "RENDERED and APPLIED of:\n{wide}"
    );

    // (b) A new commit, picked up on the reconcile-at annotation.
    repo.write(
        "app/configmap.yaml",
        &configmap_yaml("app-config", "greeting", "bonjour"),
    );
    let rev2 = repo.commit("app: greeting bonjour");
    e.request_reconcile("app");
    let k = e.wait_ready("app", |r| r == rev2);
    assert_eq!(resource_count(&k), Some(2), "{}", status_summary(&k));
    let cm = get_obj("configmap", "app-config", &ns);
    assert_eq!(str_at(&cm, "/data/greeting").as_deref(), Some("bonjour"));

    // (c) The Deployment leaves the source: pruned.
    repo.remove("app/deployment.yaml");
    repo.write(
        "app/kustomization.yaml",
        &kustomization_yaml(&["configmap.yaml"]),
    );
    let rev3 = repo.commit("app: drop the Deployment");
    e.request_reconcile("app");
    let k = e.wait_ready("app", |r| r == rev3);
    assert_eq!(resource_count(&k), Some(1), "{}", status_summary(&k));
    e.wait_gone("deployment", "app");
    let cm = get_obj("configmap", "app-config", &ns);
    assert_eq!(str_at(&cm, "/data/greeting").as_deref(), Some("bonjour"));

    // (d) A broken kustomization.yaml: RenderFailed, nothing touched.
    repo.write(
        "app/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [configmap.yaml\n",
    );
    let rev4 = repo.commit("app: broken kustomization.yaml");
    e.request_reconcile("app");
    let k = e.wait_for("Ready=False RenderFailed for the broken commit", || {
        let k = e_get(&ns, "app")?;
        match condition(&k, "Ready") {
            Some((s, r, _))
                if s == "False"
                    && r == "RenderFailed"
                    && str_at(&k, "/status/lastAttemptedRevision").as_deref()
                        == Some(rev4.as_str()) =>
            {
                Ok(k)
            }
            _ => Err(status_summary(&k)),
        }
    });
    assert_eq!(
        str_at(&k, "/status/lastAppliedRevision").as_deref(),
        Some(rev3.as_str()),
        "the last successful apply stays recorded: {}",
        status_summary(&k)
    );
    let (_, _, message) = condition(&k, "Ready").unwrap();
    assert!(!message.is_empty(), "RenderFailed without a message");
    let cm = get_obj("configmap", "app-config", &ns);
    assert!(
        cm.pointer("/metadata/deletionTimestamp").is_none(),
        "the ConfigMap of the last good revision must stay: {}",
        cm["metadata"]
    );
    assert_eq!(str_at(&cm, "/data/greeting").as_deref(), Some("bonjour"));
}

fn e_get(ns: &str, name: &str) -> Result<Value, String> {
    get_json(&[KS, name, "-n", ns]).ok_or_else(|| format!("Kustomization {ns}/{name} not found"))
}

/// (e) A remote reference in `resources` is refused (krmsync renders
/// localized bundles only, never opening a network connection).
#[test]
#[ignore = "needs a cluster (KUBECONFIG)"]
fn remote_reference_is_refused() {
    let Some(mut e) = E2e::setup() else { return };
    let ns = e.ns().to_string();
    let repo = GitRepo::new();
    repo.write(
        "remote/kustomization.yaml",
        &kustomization_yaml(&[
            "configmap.yaml",
            "https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v5.5.0",
        ]),
    );
    repo.write(
        "remote/configmap.yaml",
        &configmap_yaml("remote-config", "k", "v"),
    );
    repo.commit("remote: a remote base");
    e.apply_kustomization("remote", &git_spec(&repo.url(), "remote", ""));
    let k = e.wait_not_ready("remote", "RemoteReference");
    let (_, _, message) = condition(&k, "Ready").unwrap();
    assert!(
        message.contains("github.com/kubernetes-sigs/kustomize"),
        "the message should name the remote reference: {message}"
    );
    assert!(
        get_json(&["configmap", "remote-config", "-n", &ns]).is_none(),
        "nothing may be applied from a bundle that did not render"
    );
}

/// (f) Deleting a Kustomization: `deletionPolicy: Orphan` leaves its
/// objects, `Delete` removes them.
#[test]
#[ignore = "needs a cluster (KUBECONFIG)"]
fn deletion_policy_orphan_and_delete() {
    let Some(mut e) = E2e::setup() else { return };
    let ns = e.ns().to_string();
    let repo = GitRepo::new();
    for (dir, cm) in [("keep", "kept-config"), ("drop", "dropped-config")] {
        repo.write(
            &format!("{dir}/kustomization.yaml"),
            &kustomization_yaml(&["configmap.yaml"]),
        );
        repo.write(
            &format!("{dir}/configmap.yaml"),
            &configmap_yaml(cm, "k", "v"),
        );
    }
    let rev = repo.commit("two kustomizations");
    e.apply_kustomization(
        "keep",
        &git_spec(&repo.url(), "keep", "deletionPolicy: Orphan\n"),
    );
    e.apply_kustomization(
        "drop",
        &git_spec(&repo.url(), "drop", "deletionPolicy: Delete\n"),
    );
    e.wait_ready("keep", |r| r == rev);
    e.wait_ready("drop", |r| r == rev);
    assert_owned_by(&get_obj("configmap", "kept-config", &ns), &ns, "keep");
    assert_owned_by(&get_obj("configmap", "dropped-config", &ns), &ns, "drop");

    // Orphan.
    kubectl(&["delete", KS, "keep", "-n", &ns, "--wait=false"]);
    e.wait_for("Kustomization keep to be deleted", || {
        match get_json(&[KS, "keep", "-n", &ns]) {
            None => Ok(()),
            Some(k) => Err(format!(
                "still present: finalizers {} {}",
                k.pointer("/metadata/finalizers").unwrap_or(&Value::Null),
                status_summary(&k)
            )),
        }
    });
    let kept = get_obj("configmap", "kept-config", &ns);
    assert!(
        kept.pointer("/metadata/deletionTimestamp").is_none(),
        "Orphan: the ConfigMap must stay: {}",
        kept["metadata"]
    );

    // Delete.
    kubectl(&["delete", KS, "drop", "-n", &ns, "--wait=false"]);
    e.wait_for("Kustomization drop to be deleted", || {
        match get_json(&[KS, "drop", "-n", &ns]) {
            None => Ok(()),
            Some(k) => Err(format!(
                "still present: finalizers {} {}",
                k.pointer("/metadata/finalizers").unwrap_or(&Value::Null),
                status_summary(&k)
            )),
        }
    });
    e.wait_gone("configmap", "dropped-config");
    // The orphaned one is still there after the other deletion.
    assert!(get_json(&["configmap", "kept-config", "-n", &ns]).is_some());
}

/// (g) and (h): an in-cluster bundle pushed with `krmsync bundle push`
/// is applied (revision `sha256:<hex>`) and follows a new push;
/// `krmsync get-rendered` prints the rendered stream that was applied.
#[test]
#[ignore = "needs a cluster (KUBECONFIG)"]
fn in_cluster_bundle_and_get_rendered() {
    let Some(mut e) = E2e::setup() else { return };
    let ns = e.ns().to_string();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_file(
        root,
        "kustomization.yaml",
        &kustomization_yaml(&["configmap.yaml", "deployment.yaml"]),
    );
    write_file(
        root,
        "configmap.yaml",
        &configmap_yaml("bundle-config", "color", "blue"),
    );
    write_file(root, "deployment.yaml", &deployment_yaml("bundled"));
    let root_str = root.to_str().unwrap();
    krmsync(&[
        "bundle",
        "push",
        root_str,
        "--name",
        "app-bundle",
        "-n",
        &ns,
    ]);
    let stored = get_obj("configmap", "app-bundle", &ns);
    assert!(
        stored.pointer("/binaryData/bundle.tar.gz").is_some(),
        "bundle push must store binaryData bundle.tar.gz: keys {:?}",
        stored
            .get("binaryData")
            .and_then(Value::as_object)
            .map(|m| m.keys().collect::<Vec<_>>())
    );

    e.apply_kustomization(
        "bundled",
        "source:\n  bundle:\n    configMapRef:\n      name: app-bundle\ninterval: 1h\n",
    );
    let is_digest = |r: &str| {
        r.strip_prefix("sha256:")
            .is_some_and(|h| h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit()))
    };
    let k = e.wait_ready("bundled", is_digest);
    let rev1 = str_at(&k, "/status/lastAppliedRevision").unwrap();
    assert_eq!(resource_count(&k), Some(2), "{}", status_summary(&k));
    let cm = get_obj("configmap", "bundle-config", &ns);
    assert_owned_by(&cm, &ns, "bundled");
    assert_eq!(str_at(&cm, "/data/color").as_deref(), Some("blue"));
    assert_owned_by(&get_obj("deployment", "bundled", &ns), &ns, "bundled");
    let table = kubectl(&["get", KS, "-n", &ns]);
    let row = table_row(&table, TABLE_COLUMNS, "bundled");
    assert_eq!(row[1], "True", "READY of:\n{table}");
    assert_eq!(row[2], rev1, "REVISION of:\n{table}");

    // (h) get-rendered: the stream that was rendered and applied.
    let rendered = krmsync(&["get-rendered", "bundled", "-n", &ns]);
    for needle in [
        "kind: ConfigMap",
        "name: bundle-config",
        "color: blue",
        "kind: Deployment",
        "name: bundled",
    ] {
        assert!(
            rendered.contains(needle),
            "get-rendered lacks {needle:?}:\n{rendered}"
        );
    }
    assert_rendered_digest(&k, &rendered);

    // A new push and a reconcile request: the new bundle converges.
    write_file(
        root,
        "configmap.yaml",
        &configmap_yaml("bundle-config", "color", "green"),
    );
    krmsync(&[
        "bundle",
        "push",
        root_str,
        "--name",
        "app-bundle",
        "-n",
        &ns,
    ]);
    e.request_reconcile("bundled");
    let k = e.wait_ready("bundled", |r| is_digest(r) && r != rev1);
    let cm = get_obj("configmap", "bundle-config", &ns);
    assert_eq!(str_at(&cm, "/data/color").as_deref(), Some("green"));
    let rendered = krmsync(&["get-rendered", "bundled", "-n", &ns]);
    assert!(
        rendered.contains("color: green") && !rendered.contains("color: blue"),
        "get-rendered must print the latest render:\n{rendered}"
    );
    assert_rendered_digest(&k, &rendered);
}

/// A Service port and a container port without `protocol`, as most
/// manifests write them: API servers before Kubernetes 1.21 refuse such a
/// Service in a server-side apply unless the protocol is written out. It
/// is applied as `TCP`; the rendered manifests stay as the tree has them.
#[test]
#[ignore = "needs a cluster (KUBECONFIG)"]
fn ports_without_a_protocol_apply() {
    let Some(mut e) = E2e::setup() else { return };
    let ns = e.ns().to_string();
    push_bundle(
        &ns,
        "ports",
        &[
            (
                "kustomization.yaml",
                &kustomization_yaml(&["service.yaml", "deployment.yaml"]),
            ),
            (
                "service.yaml",
                "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector:\n    app: web\n  ports:\n  - name: http\n    port: 80\n    targetPort: 8080\n",
            ),
            (
                "deployment.yaml",
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: web\n        image: nginx\n        ports:\n        - containerPort: 8080\n",
            ),
        ],
    );
    e.apply_kustomization("ports", &bundle_spec("ports", ""));
    let k = e.wait_ready("ports", |r| r.starts_with("sha256:"));
    assert_eq!(resource_count(&k), Some(2), "{}", status_summary(&k));
    let svc = get_obj("service", "web", &ns);
    assert_eq!(
        str_at(&svc, "/spec/ports/0/protocol").as_deref(),
        Some("TCP"),
        "{svc}"
    );
    let rendered = krmsync(&["get-rendered", "ports", "-n", &ns]);
    assert!(
        rendered.contains("targetPort: 8080") && !rendered.contains("protocol"),
        "the rendered manifests are the tree's:\n{rendered}"
    );
}

/// `status.rendered.digest` (or `status.renderedDigest`) is the sha256 of
/// the uncompressed stream: it must match what `get-rendered` printed (a
/// final newline added by printing is tolerated).
fn assert_rendered_digest(k: &Value, printed: &str) {
    let digest = str_at(k, "/status/rendered/digest")
        .or_else(|| str_at(k, "/status/renderedDigest"))
        .unwrap_or_else(|| panic!("no rendered digest in {}", status_summary(k)));
    let sha = |s: &str| format!("sha256:{:x}", Sha256::digest(s.as_bytes()));
    let candidates = [
        sha(printed),
        sha(printed.strip_suffix('\n').unwrap_or(printed)),
    ];
    assert!(
        candidates.contains(&digest),
        "get-rendered output (sha {}) is not the rendered stream of the status ({digest})",
        candidates[0]
    );
}
