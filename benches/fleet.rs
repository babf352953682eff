//! The controller binary with a fleet of Kustomizations against the
//! in-memory API server (`tests/support`): N Kustomizations of M ConfigMaps
//! each, as `bench/cluster.py` does against a real cluster, but here the
//! request counts are exact and no cluster is needed.
//!
//! `cargo bench --bench fleet` (N=1000, M=10), or `-- N M [controller args]`.
//! Prints one line per figure:
//!
//!   converge_seconds         Kustomizations created -> all Ready
//!   converge_requests        requests the controller sent until then
//!   requests_per_kustomization
//!   controller_cpu_seconds   controller CPU until all Ready
//!   noop_resync_seconds      restarted, every Kustomization asked to reconcile
//!   noop_resync_requests
//!   restore_deleted_seconds  a ConfigMap deleted -> back (self-healing)
//!   peak_rss_mib             the controller's peak resident memory (VmHWM)
//!
//! followed by the requests of each phase by verb and resource. The API
//! server shares the machine (and this process), so times are indicative;
//! the counts and the controller's memory are not.

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{FakeApi, Recorded};

const KS: &str = "krmsync.dev/v1alpha1";

fn namespace(i: usize) -> String {
    format!("fleet-{i}")
}

/// One tree of `m` ConfigMaps (as bench/cluster.py's).
fn bundle(m: usize) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut k = String::from("resources:\n");
    for j in 0..m {
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{j}")},
            "data": {"index": j.to_string(), "payload": format!("value-{j}-{}", "x".repeat(200))},
        });
        std::fs::write(dir.path().join(format!("cm-{j}.yaml")), cm.to_string()).unwrap();
        k.push_str(&format!("- cm-{j}.yaml\n"));
    }
    std::fs::write(dir.path().join("kustomization.yaml"), k).unwrap();
    let data = krmsync::source::create_bundle(dir.path()).unwrap();
    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, data)
}

struct Controller {
    child: Child,
    peak_kib: u64,
}

impl Controller {
    fn start(fake: &FakeApi, work: &Path, extra: &[String]) -> Controller {
        let kubeconfig = work.join("kubeconfig");
        std::fs::write(&kubeconfig, fake.kubeconfig_yaml()).unwrap();
        let bin = std::env::var("KRMSYNC_BIN")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_krmsync").to_string());
        let child = Command::new(bin)
            .args([
                "controller",
                "--metrics-addr",
                "127.0.0.1:0",
                "--health-addr",
                "127.0.0.1:0",
                "--log-format",
                "json",
            ])
            .arg("--work-dir")
            .arg(work.join("work"))
            .args(extra)
            .env("KUBECONFIG", &kubeconfig)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(work.join("controller.log")).unwrap())
            .spawn()
            .unwrap();
        Controller { child, peak_kib: 0 }
    }

    fn proc_field(&self, file: &str, key: &str) -> Option<u64> {
        let text = std::fs::read_to_string(format!("/proc/{}/{file}", self.child.id())).ok()?;
        text.lines()
            .find(|l| l.starts_with(key))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    }

    fn sample(&mut self) {
        if let Some(hwm) = self.proc_field("status", "VmHWM:") {
            self.peak_kib = self.peak_kib.max(hwm);
        }
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("the controller exited: {status}");
        }
    }

    fn rss_mib(&self) -> f64 {
        self.proc_field("status", "VmRSS:").unwrap_or(0) as f64 / 1024.0
    }

    fn cpu_seconds(&self) -> f64 {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())) else {
            return 0.0;
        };
        let after = text.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<&str> = after.split_whitespace().collect();
        let ticks: f64 = f[11].parse::<f64>().unwrap_or(0.0) + f[12].parse::<f64>().unwrap_or(0.0);
        // SC_CLK_TCK is 100 on Linux
        ticks / 100.0
    }

    fn stop(&mut self) {
        self.sample();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ready(k: &Value) -> bool {
    k["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

async fn wait_all(
    fake: &FakeApi,
    ctl: &mut Controller,
    n: usize,
    what: &str,
    done: impl Fn(&Value) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(1800);
    loop {
        let finished = fake
            .list(KS, "Kustomization")
            .iter()
            .filter(|k| done(k))
            .count();
        ctl.sample();
        if finished == n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {finished}/{n}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `GET configmaps`, `PATCH kustomizations/status`, `PATCH configmaps (dry-run)`.
fn request_kind(r: &Recorded) -> String {
    let parts: Vec<&str> = r.path.trim_start_matches('/').split('/').collect();
    // /api/v1/namespaces/NS/RES[/NAME[/SUB]] or /apis/G/V/namespaces/NS/RES...
    let rest: &[&str] = match parts.first() {
        Some(&"api") => parts.get(2..).unwrap_or(&[]),
        Some(&"apis") => parts.get(3..).unwrap_or(&[]),
        _ => &[],
    };
    let rest = if rest.first() == Some(&"namespaces") && rest.len() > 2 {
        &rest[2..]
    } else {
        rest
    };
    let resource = match rest {
        [] => format!("discovery {}", r.path),
        [res] => format!("{res} (collection)"),
        [res, _] => res.to_string(),
        [res, _, sub, ..] => format!("{res}/{sub}"),
    };
    let watch = r
        .query_param("watch")
        .is_some_and(|v| v == "true" || v == "1");
    let verb = if watch { "WATCH" } else { r.method.as_str() };
    let dry = if r.query_param("dryRun").is_some() {
        " (dry-run)"
    } else {
        ""
    };
    format!("{verb} {resource}{dry}")
}

fn print_requests(phase: &str, reqs: &[Recorded]) {
    let mut by: BTreeMap<String, usize> = BTreeMap::new();
    for r in reqs {
        *by.entry(request_kind(r)).or_default() += 1;
    }
    let mut rows: Vec<(String, usize)> = by.into_iter().collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.1));
    println!("# requests during {phase}: {}", reqs.len());
    for (k, n) in rows.iter().take(14) {
        println!("#   {n:>7} {k}");
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let m: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10);
    let extra: Vec<String> = args.iter().skip(2).cloned().collect();
    println!(
        "# {n} Kustomizations x {m} ConfigMaps, in-memory API server; controller args {extra:?}"
    );

    let fake = FakeApi::start().await;
    let data = bundle(m);
    for i in 0..n {
        let ns = namespace(i);
        fake.insert(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
        fake.insert(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "bench-bundle", "namespace": ns},
            "binaryData": {"bundle.tar.gz": data},
        }));
    }
    let work = tempfile::tempdir().unwrap();
    let mut ctl = Controller::start(&fake, work.path(), &extra);
    tokio::time::sleep(Duration::from_secs(1)).await;
    ctl.sample();
    fake.clear_requests();
    let cpu0 = ctl.cpu_seconds();
    let t0 = Instant::now();
    for i in 0..n {
        fake.insert(json!({
            "apiVersion": KS, "kind": "Kustomization",
            "metadata": {"name": "app", "namespace": namespace(i)},
            "spec": {"interval": "1h", "source": {"bundle": {"configMapRef": {"name": "bench-bundle"}}}},
        }));
    }
    wait_all(&fake, &mut ctl, n, "all Ready", ready).await;
    let converge = t0.elapsed().as_secs_f64();
    let cpu = ctl.cpu_seconds() - cpu0;
    let reqs = fake.requests();
    println!("converge_seconds {converge:.2}");
    println!("converge_requests {}", reqs.len());
    println!(
        "requests_per_kustomization {:.2}",
        reqs.iter()
            .filter(|r| !request_kind(r).starts_with("WATCH"))
            .count() as f64
            / n as f64
    );
    println!("controller_cpu_seconds {cpu:.2}");
    println!(
        "# controller RSS now {:.1} MiB, peak so far {:.1} MiB",
        ctl.rss_mib(),
        ctl.peak_kib as f64 / 1024.0
    );
    print_requests("converge", &reqs);

    // no-op resync: restarted, every Kustomization asked to reconcile
    ctl.stop();
    let peak = ctl.peak_kib;
    for i in 0..n {
        let mut k = fake
            .get(KS, "Kustomization", Some(&namespace(i)), "app")
            .unwrap();
        k["metadata"]["annotations"] = json!({"krmsync.dev/reconcile-at": "resync"});
        fake.insert(k);
    }
    fake.clear_requests();
    let t0 = Instant::now();
    let mut ctl = Controller::start(&fake, work.path(), &extra);
    wait_all(&fake, &mut ctl, n, "every reconcile request handled", |k| {
        ready(k) && k["status"]["lastHandledReconcileAt"] == "resync"
    })
    .await;
    println!("noop_resync_seconds {:.2}", t0.elapsed().as_secs_f64());
    let reqs = fake.requests();
    println!("noop_resync_requests {}", reqs.len());
    print_requests("no-op resync", &reqs);

    // self-healing: a deleted ConfigMap comes back
    tokio::time::sleep(Duration::from_secs(2)).await;
    let ns0 = namespace(0);
    let client = fake.client();
    let cms: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = kube::Api::namespaced(client, &ns0);
    cms.delete("cm-0", &Default::default()).await.unwrap();
    let t0 = Instant::now();
    while fake.get("v1", "ConfigMap", Some(&ns0), "cm-0").is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "cm-0 was not restored"
        );
        ctl.sample();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("restore_deleted_seconds {:.2}", t0.elapsed().as_secs_f64());
    ctl.stop();
    println!("peak_rss_mib {:.1}", peak.max(ctl.peak_kib) as f64 / 1024.0);
}
