//! Shared helpers of the end-to-end tests: cluster detection, `kubectl`,
//! a per-test namespace, the controller as a child process, git source
//! repositories and polling with a deadline.

use std::collections::hash_map::RandomState;
use std::fs;
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

/// The krmsync binary built with this test target.
pub const KRMSYNC: &str = env!("CARGO_BIN_EXE_krmsync");

/// How long a wait may take (override with `KRMSYNC_E2E_TIMEOUT_SECS`).
pub fn timeout() -> Duration {
    let secs = std::env::var("KRMSYNC_E2E_TIMEOUT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    Duration::from_secs(secs)
}

/// Whether a cluster is reachable through `kubectl` (KUBECONFIG or the
/// default kubeconfig). When none is, prints the agreed not-run line and
/// returns false: the test then returns without failing.
pub fn cluster_available() -> bool {
    let out = Command::new("kubectl")
        .args(["version", "--request-timeout=5s", "-o", "json"])
        .stdin(Stdio::null())
        .output();
    let reason = match out {
        Err(e) => format!("cannot run kubectl: {e}"),
        Ok(o) if o.status.success() => return true,
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            let line = err
                .lines()
                .map(str::trim)
                .rfind(|l| !l.is_empty())
                .unwrap_or("kubectl version failed")
                .to_string();
            format!("kubectl version: {line}")
        }
    };
    println!("e2e: not run: no cluster reachable ({reason})");
    false
}

/// Runs `kubectl ARGS` (optionally with `stdin`), returning its output.
pub fn kubectl_output(args: &[&str], stdin: Option<&str>) -> Output {
    run_output(Command::new("kubectl").args(args), stdin)
}

/// Runs `krmsync ARGS`, returning its output.
pub fn krmsync_output(args: &[&str]) -> Output {
    run_output(Command::new(KRMSYNC).args(args), None)
}

fn run_output(cmd: &mut Command, stdin: Option<&str>) -> Output {
    let desc = format!("{cmd:?}");
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {desc}: {e}"));
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap_or_else(|e| panic!("{desc}: writing stdin: {e}"));
    }
    child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("{desc}: {e}"))
}

fn expect_success(what: &str, out: Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Runs `kubectl ARGS` and returns stdout; panics (with stderr) on failure.
pub fn kubectl(args: &[&str]) -> String {
    expect_success(
        &format!("kubectl {}", args.join(" ")),
        kubectl_output(args, None),
    )
}

/// `kubectl apply -f -` of a YAML document.
pub fn kubectl_apply(yaml: &str) {
    let out = kubectl_output(&["apply", "-f", "-"], Some(yaml));
    expect_success(&format!("kubectl apply -f - <<EOF\n{yaml}EOF"), out);
}

/// Runs `krmsync ARGS` and returns stdout; panics (with stderr) on failure.
pub fn krmsync(args: &[&str]) -> String {
    expect_success(&format!("krmsync {}", args.join(" ")), krmsync_output(args))
}

/// Installs (or updates) the CRDs of this checkout and waits until they
/// are served. They are left installed: other tests (and runs) share them.
/// API servers older than 1.25 refuse the CRDs' validation rules
/// (`x-kubernetes-validations`) in a server-side apply: there they are
/// applied client-side, which drops the rules (the controller checks the
/// same rules itself), and a note says so.
pub fn install_crds() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/crds");
    let out = kubectl_output(
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=krmsync-e2e",
            "-f",
            dir,
        ],
        None,
    );
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if !err.contains("x-kubernetes-validations") {
            expect_success("kubectl apply --server-side -f crds", out);
        }
        println!(
            "e2e: note: this API server predates CRD validation rules; CRDs applied without them"
        );
        kubectl(&["apply", "--validate=false", "-f", dir]);
    }
    kubectl(&[
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/kustomizations.krmsync.dev",
        "crd/catalogs.krmsync.dev",
    ]);
}

/// A short random lowercase hex string (for names).
pub fn random_suffix() -> String {
    let mut h = RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    );
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())[..10].to_string()
}

/// A fresh value for the `krmsync.dev/reconcile-at` annotation.
pub fn now_stamp() -> String {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    format!("{}.{:09}", d.as_secs(), d.subsec_nanos())
}

/// A namespace `krmsync-e2e-<random>` of one test, deleted on drop (also
/// when the test panics). Finalizers of its Kustomizations are removed
/// first, so the deletion never waits for a controller that is gone.
pub struct Namespace {
    pub name: String,
}

impl Namespace {
    pub fn create() -> Namespace {
        let name = format!("krmsync-e2e-{}", random_suffix());
        kubectl(&["create", "namespace", &name]);
        kubectl(&[
            "label",
            "namespace",
            &name,
            "app.kubernetes.io/part-of=krmsync-e2e",
        ]);
        println!("e2e: namespace {name}");
        Namespace { name }
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let ns = self.name.as_str();
        let out = kubectl_output(
            &["get", "kustomizations.krmsync.dev", "-n", ns, "-o", "name"],
            None,
        );
        for obj in String::from_utf8_lossy(&out.stdout).lines() {
            let _ = kubectl_output(
                &[
                    "patch",
                    obj,
                    "-n",
                    ns,
                    "--type=merge",
                    "-p",
                    r#"{"metadata":{"finalizers":null}}"#,
                ],
                None,
            );
        }
        let out = kubectl_output(
            &[
                "delete",
                "namespace",
                ns,
                "--wait=false",
                "--ignore-not-found",
            ],
            None,
        );
        if !out.status.success() {
            eprintln!(
                "e2e: cleanup: deleting namespace {ns} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// The controller, running beside the test as a child process against the
/// same cluster. Killed on drop (also when the test panics); its log is
/// printed when the test failed.
pub struct Controller {
    child: Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Controller {
    /// Starts `krmsync controller`, watching only `namespace`, with the
    /// kubeconfig's identity; `file://` sources allowed (the tests' git
    /// repositories are local).
    pub fn start(namespace: &str) -> Controller {
        Controller::start_with(namespace, &["--allow-insecure-sources"], None)
    }

    /// Starts `krmsync controller` watching `namespace` with `extra`
    /// arguments, as the identity of `kubeconfig` when given.
    pub fn start_with(namespace: &str, extra: &[&str], kubeconfig: Option<&Path>) -> Controller {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        fs::create_dir_all(&work).unwrap();
        let log = dir.path().join("controller.log");
        let log_file = fs::File::create(&log).unwrap();
        let child = Command::new(KRMSYNC)
            .args([
                "controller",
                "--metrics-addr",
                "127.0.0.1:0",
                "--health-addr",
                "127.0.0.1:0",
                "--work-dir",
                work.to_str().unwrap(),
                "--watch-namespace",
                namespace,
                "--log-format",
                "plain",
            ])
            .args(extra)
            .envs(kubeconfig.map(|k| ("KUBECONFIG", k.as_os_str().to_owned())))
            .env_remove("KRMSYNC_LEADER_ELECT")
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().unwrap())
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {KRMSYNC} controller: {e}"));
        Controller {
            child,
            log,
            _dir: dir,
        }
    }

    /// Kills the process with SIGKILL (no graceful shutdown) and waits for it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The last `n` lines of the controller's log.
    pub fn log_tail(&self, n: usize) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// Panics when the controller has exited.
    pub fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "the controller exited ({status}); its log:\n{}",
                self.log_tail(100)
            );
        }
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!(
                "e2e: controller log (last 100 lines):\n{}",
                self.log_tail(100)
            );
        }
    }
}

/// One test's world: CRDs installed, its namespace and its controller.
/// Dropping it stops the controller first (fields drop in declaration
/// order), so that it cannot put a finalizer back while the namespace
/// cleanup removes them; then deletes the namespace.
pub struct E2e {
    pub controller: Controller,
    pub ns: Namespace,
}

impl E2e {
    /// `None` (after printing the not-run line) when no cluster is reachable.
    pub fn setup() -> Option<E2e> {
        if !cluster_available() {
            return None;
        }
        install_crds();
        let ns = Namespace::create();
        let controller = Controller::start(&ns.name);
        Some(E2e { controller, ns })
    }

    /// Like [`E2e::setup`], with the controller started by `start`.
    pub fn setup_with(start: impl FnOnce(&str) -> Controller) -> Option<E2e> {
        if !cluster_available() {
            return None;
        }
        install_crds();
        let ns = Namespace::create();
        let controller = start(&ns.name);
        Some(E2e { controller, ns })
    }

    pub fn ns(&self) -> &str {
        &self.ns.name
    }

    /// Polls `check` every second until it returns `Ok`, for at most
    /// [`timeout`]. On timeout, panics with `what` and the last `Err`
    /// (what was last seen). Panics as soon as the controller exits.
    pub fn wait_for<T>(&mut self, what: &str, mut check: impl FnMut() -> Result<T, String>) -> T {
        let deadline = Instant::now() + timeout();
        let mut last;
        loop {
            self.controller.assert_running();
            match check() {
                Ok(v) => return v,
                Err(seen) => last = seen,
            }
            if Instant::now() >= deadline {
                panic!(
                    "timed out after {:?} waiting for {what}\nlast seen: {last}",
                    timeout()
                );
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    /// Applies a Kustomization in the test namespace.
    pub fn apply_kustomization(&self, name: &str, spec_yaml: &str) {
        let spec: String = spec_yaml.lines().map(|l| format!("  {l}\n")).collect();
        kubectl_apply(&format!(
            "apiVersion: krmsync.dev/v1alpha1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: {}\nspec:\n{spec}",
            self.ns()
        ));
    }

    /// Sets `krmsync.dev/reconcile-at` to a new value (forces a reconcile).
    pub fn request_reconcile(&self, name: &str) {
        kubectl(&[
            "annotate",
            "--overwrite",
            "kustomizations.krmsync.dev",
            name,
            "-n",
            self.ns(),
            &format!("krmsync.dev/reconcile-at={}", now_stamp()),
        ]);
    }

    /// Waits until the Kustomization is Ready=True for the current
    /// generation with `lastAppliedRevision` accepted by `revision_ok`;
    /// returns the Kustomization.
    pub fn wait_ready(&mut self, name: &str, revision_ok: impl Fn(&str) -> bool) -> Value {
        let ns = self.ns().to_string();
        self.wait_for(&format!("Kustomization {ns}/{name} Ready=True"), || {
            let k = get_json(&["kustomizations.krmsync.dev", name, "-n", &ns])
                .ok_or_else(|| "the Kustomization does not exist".to_string())?;
            let summary = status_summary(&k);
            let (status, _, _) = condition(&k, "Ready").ok_or(summary.clone())?;
            let revision = str_at(&k, "/status/lastAppliedRevision").unwrap_or_default();
            if status == "True" && is_current(&k) && revision_ok(&revision) {
                Ok(k)
            } else {
                Err(summary)
            }
        })
    }

    /// Waits until the Kustomization is Ready=False with `reason` for the
    /// current generation; returns it.
    pub fn wait_not_ready(&mut self, name: &str, reason: &str) -> Value {
        let ns = self.ns().to_string();
        self.wait_for(
            &format!("Kustomization {ns}/{name} Ready=False reason {reason}"),
            || {
                let k = get_json(&["kustomizations.krmsync.dev", name, "-n", &ns])
                    .ok_or_else(|| "the Kustomization does not exist".to_string())?;
                match condition(&k, "Ready") {
                    Some((s, r, _)) if s == "False" && r == reason && is_current(&k) => Ok(k),
                    _ => Err(status_summary(&k)),
                }
            },
        )
    }

    /// Waits until `kubectl get KIND NAME` in the test namespace finds
    /// nothing (or only an object being deleted).
    pub fn wait_gone(&mut self, kind: &str, name: &str) {
        let ns = self.ns().to_string();
        self.wait_for(
            &format!("{kind} {ns}/{name} to be deleted"),
            || match get_json(&[kind, name, "-n", &ns]) {
                None => Ok(()),
                Some(o) if o.pointer("/metadata/deletionTimestamp").is_some() => Ok(()),
                Some(o) => Err(format!(
                    "still present: {}",
                    serde_json::to_string(&o["metadata"]).unwrap()
                )),
            },
        )
    }
}

/// `kubectl get ARGS -o json`: `None` when not found; panics on other errors.
pub fn get_json(args: &[&str]) -> Option<Value> {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    let out = kubectl_output(&all, None);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("NotFound") || err.contains("not found") {
            return None;
        }
        panic!("kubectl {} failed: {err}", all.join(" "));
    }
    Some(serde_json::from_slice(&out.stdout).expect("kubectl printed invalid JSON"))
}

/// A string at a JSON pointer.
pub fn str_at(v: &Value, pointer: &str) -> Option<String> {
    v.pointer(pointer).and_then(Value::as_str).map(String::from)
}

/// `(status, reason, message)` of a condition of `.status.conditions`.
pub fn condition(obj: &Value, type_: &str) -> Option<(String, String, String)> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (s("status"), s("reason"), s("message"))
        })
}

/// Whether the status describes the current spec.
fn is_current(obj: &Value) -> bool {
    let generation = obj.pointer("/metadata/generation").and_then(Value::as_i64);
    let observed = obj
        .pointer("/status/observedGeneration")
        .and_then(Value::as_i64);
    generation.is_some() && generation == observed
}

/// The status of an object, for "last seen" messages.
pub fn status_summary(obj: &Value) -> String {
    let mut status = obj.get("status").cloned().unwrap_or(Value::Null);
    if let Some(inv) = status.get_mut("inventory") {
        let n = inv["entries"].as_array().map_or(0, Vec::len);
        *inv = Value::String(format!("<{n} entries>"));
    }
    format!(
        "generation {} status {}",
        obj.pointer("/metadata/generation").unwrap_or(&Value::Null),
        serde_json::to_string_pretty(&status).unwrap()
    )
}

/// `metadata.labels[key]` of an object.
pub fn label(obj: &Value, key: &str) -> Option<String> {
    obj.pointer("/metadata/labels")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
        .map(String::from)
}

/// Asserts the object carries the owner labels of Kustomization `ns/name`.
pub fn assert_owned_by(obj: &Value, ns: &str, name: &str) {
    let what = format!(
        "{} {}",
        obj["kind"].as_str().unwrap_or("?"),
        obj.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("?")
    );
    assert_eq!(
        label(obj, "krmsync.dev/name").as_deref(),
        Some(name),
        "{what}: label krmsync.dev/name; labels: {}",
        obj.pointer("/metadata/labels").unwrap_or(&Value::Null)
    );
    assert_eq!(
        label(obj, "krmsync.dev/namespace").as_deref(),
        Some(ns),
        "{what}: label krmsync.dev/namespace; labels: {}",
        obj.pointer("/metadata/labels").unwrap_or(&Value::Null)
    );
}

#[path = "../tests/support/git_repo.rs"]
#[allow(dead_code)]
mod git_repo;
/// A git repository served to the (local) controller through `file://`.
pub use git_repo::GitRepo;

/// Writes `root/rel`, creating parent directories.
pub fn write_file(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, content).unwrap();
}

/// A ConfigMap manifest with one data entry.
pub fn configmap_yaml(name: &str, key: &str, value: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  {key}: {value}\n")
}

/// A Deployment manifest (its pods need not run).
pub fn deployment_yaml(name: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: 1
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
      - name: app
        image: registry.k8s.io/pause:3.10
"
    )
}

/// A kustomization.yaml listing `resources`.
pub fn kustomization_yaml(resources: &[&str]) -> String {
    let mut s = String::from(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n",
    );
    for r in resources {
        s.push_str(&format!("- {r}\n"));
    }
    s
}

/// The controller's own identity as `config/` installs it, made for one
/// test: a ServiceAccount in `namespace` bound to a copy of
/// `config/rbac/cluster_role.yaml` (named after the namespace) and NOT to
/// cluster-admin, i.e. the multi-tenant lockdown; and a kubeconfig using a
/// token of it. The ClusterRole and its binding are deleted on drop.
pub struct ControllerIdentity {
    name: String,
    pub kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

impl ControllerIdentity {
    pub fn create(namespace: &str) -> ControllerIdentity {
        let name = format!("krmsync-controller-{namespace}");
        kubectl(&[
            "create",
            "serviceaccount",
            "krmsync-controller",
            "-n",
            namespace,
        ]);
        let role = fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/config/rbac/cluster_role.yaml"
        ))
        .unwrap()
        .replace("name: krmsync-controller", &format!("name: {name}"));
        kubectl_apply(&role);
        kubectl(&[
            "create",
            "clusterrolebinding",
            &name,
            &format!("--clusterrole={name}"),
            &format!("--serviceaccount={namespace}:krmsync-controller"),
        ]);
        let token = kubectl(&[
            "create",
            "token",
            "krmsync-controller",
            "-n",
            namespace,
            "--duration=1h",
        ]);
        let view: Value = serde_json::from_str(&kubectl(&[
            "config", "view", "--raw", "--minify", "-o", "json",
        ]))
        .unwrap();
        let cluster = &view["clusters"][0]["cluster"];
        let mut cluster_yaml = format!("    server: {}\n", cluster["server"].as_str().unwrap());
        if let Some(ca) = cluster["certificate-authority-data"].as_str() {
            cluster_yaml.push_str(&format!("    certificate-authority-data: {ca}\n"));
        }
        if let Some(ca) = cluster["certificate-authority"].as_str() {
            cluster_yaml.push_str(&format!("    certificate-authority: {ca}\n"));
        }
        if cluster["insecure-skip-tls-verify"].as_bool() == Some(true) {
            cluster_yaml.push_str("    insecure-skip-tls-verify: true\n");
        }
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n{cluster_yaml}\
                 contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n\
                 current-context: c\nusers:\n- name: u\n  user:\n    token: {}\n",
                token.trim()
            ),
        )
        .unwrap();
        ControllerIdentity {
            name,
            kubeconfig,
            _dir: dir,
        }
    }
}

impl Drop for ControllerIdentity {
    fn drop(&mut self) {
        for kind in ["clusterrolebinding", "clusterrole"] {
            let _ = kubectl_output(&["delete", kind, &self.name, "--ignore-not-found"], None);
        }
    }
}

/// A ServiceAccount `sa` in `namespace` with the `admin` ClusterRole in
/// that namespace only.
pub fn tenant_service_account(namespace: &str, sa: &str) {
    kubectl(&["create", "serviceaccount", sa, "-n", namespace]);
    kubectl(&[
        "create",
        "rolebinding",
        &format!("{sa}-admin"),
        "--clusterrole=admin",
        &format!("--serviceaccount={namespace}:{sa}"),
        "-n",
        namespace,
    ]);
}

/// Stores the kustomization tree `files` as the in-cluster bundle `name`
/// (`krmsync bundle push`).
pub fn push_bundle(namespace: &str, name: &str, files: &[(&str, &str)]) {
    let dir = tempfile::tempdir().unwrap();
    for (rel, text) in files {
        write_file(dir.path(), rel, text);
    }
    krmsync(&[
        "bundle",
        "push",
        dir.path().to_str().unwrap(),
        "--name",
        name,
        "-n",
        namespace,
    ]);
}

/// The spec of a Kustomization rendering the in-cluster bundle `name`.
pub fn bundle_spec(name: &str, extra: &str) -> String {
    format!("source:\n  bundle:\n    configMapRef:\n      name: {name}\ninterval: 1h\n{extra}")
}
