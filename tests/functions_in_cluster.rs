//! KRM functions in-cluster (issue 8, §4): Catalog resources are the trust
//! root, against the in-memory API server. The functions are the example
//! functions of `examples/functions` (built with the crate), run in the
//! sandbox exactly as the controller runs them.

mod support;

use std::path::{Path, PathBuf};

use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};
use support::{Harness, condition};

use krmsync::api::Catalog;
use krmsync::catalog::Platform;
use krmsync::catalog::cache::FunctionCache;
use krmsync::controller::Settings;
use krmsync::controller::functions::FunctionSettings;

const SET_LABELS: &str = env!("CARGO_BIN_EXE_krmsync-fn-set-labels");
const HELLO: &str = env!("CARGO_BIN_EXE_krmsync-fn-hello-generator");
const CATALOG: &str = "krmsync-examples";

fn sha(path: &str) -> String {
    krmsync::source::sha256_hex(&std::fs::read(path).unwrap())
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/functions")
}

/// A template of `examples/functions` pinned to the binaries built here
/// (what `examples/functions/pin.sh` does).
fn pinned(template: &str, set_labels: &str, hello: &str) -> String {
    let p = Platform::host();
    std::fs::read_to_string(examples().join(template))
        .unwrap()
        .replace("@OS@", &p.os)
        .replace("@ARCH@", &p.arch)
        .replace("@SET_LABELS_SHA256@", set_labels)
        .replace("@HELLO_SHA256@", hello)
}

/// The walkthrough's bundle: `examples/functions/app` with its binaries and
/// pinned catalog, as `pin.sh` leaves it.
fn example_bundle(with_binaries: bool) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(examples().join("app")).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), d.path().join(e.file_name())).unwrap();
        }
    }
    std::fs::write(
        d.path().join("catalog.yaml"),
        pinned("catalog.template.yaml", &sha(SET_LABELS), &sha(HELLO)),
    )
    .unwrap();
    if with_binaries {
        std::fs::create_dir_all(d.path().join("bin")).unwrap();
        std::fs::copy(SET_LABELS, d.path().join("bin/krmsync-fn-set-labels")).unwrap();
        std::fs::copy(HELLO, d.path().join("bin/krmsync-fn-hello-generator")).unwrap();
    }
    d
}

/// The example Catalog resource, pinned, with `edit` applied to its JSON.
fn catalog_cr(edit: impl FnOnce(&mut Value)) -> Value {
    let mut v: Value = serde_saphyr::from_str(&pinned(
        "catalog-cr.template.yaml",
        &sha(SET_LABELS),
        &sha(HELLO),
    ))
    .unwrap();
    edit(&mut v);
    v
}

struct Env {
    h: Harness,
    _cache: tempfile::TempDir,
    cache: PathBuf,
}

async fn env() -> Env {
    let cache = tempfile::tempdir().unwrap();
    let settings = Settings {
        functions: FunctionSettings {
            cache: Some(FunctionCache::new(cache.path())),
            ..Default::default()
        },
        ..Settings::default()
    };
    let h = Harness::new(settings).await;
    for ns in ["web", "other"] {
        h.namespace(ns);
    }
    Env {
        h,
        cache: cache.path().to_path_buf(),
        _cache: cache,
    }
}

impl Env {
    /// Stores the Catalog and reconciles it (Ready when valid).
    async fn catalog(&self, cr: Value) {
        self.h.fake.insert(cr);
        let api: Api<Catalog> = Api::all(self.h.fake.client());
        let c = api.get(CATALOG).await.unwrap();
        krmsync::controller::catalog::reconcile(std::sync::Arc::new(c), self.h.ctx.clone())
            .await
            .unwrap();
    }

    /// A Kustomization `app` in `ns` rendering `dir`, using the example
    /// Catalog.
    fn app(&self, ns: &str, dir: &Path) {
        self.h.bundle_dir(ns, "app", dir);
        self.h
            .kustomization(ns, "app", json!({"catalogs": [CATALOG]}));
    }

    fn runs(&self, kind: &str, result: &str) -> u64 {
        let text = self.h.metrics.encode();
        let key = format!(
            "krmsync_function_runs_total{{function=\"fn.krmsync.dev/v1alpha1/{kind}\",result=\"{result}\"}} "
        );
        text.lines()
            .find_map(|l| l.strip_prefix(&key))
            .map(|n| n.trim().parse().unwrap())
            .unwrap_or(0)
    }

    /// The example's Deployment as applied in `ns`, if it was.
    fn deployment(&self, ns: &str) -> Option<Value> {
        self.h.object("apps/v1", "Deployment", Some(ns), "web")
    }

    fn no_function_ran(&self) {
        assert!(
            !self
                .h
                .metrics
                .encode()
                .contains("krmsync_function_runs_total{"),
            "a function ran: {}",
            self.h.metrics.encode()
        );
    }
}

fn labels(obj: &Value) -> &Value {
    &obj["metadata"]["labels"]
}

#[tokio::test]
async fn a_catalog_function_runs_and_its_output_is_applied() {
    let e = env().await;
    e.catalog(catalog_cr(|_| {})).await;
    let bundle = example_bundle(true);
    e.app("web", bundle.path());
    let k = e.h.reconcile_ready("web", "app").await;
    assert_eq!(condition(&k, "Rendered").status, "True");

    let d = e.deployment("web").expect("the Deployment was applied");
    assert_eq!(labels(&d)["team"], "web", "{d}");
    assert_eq!(labels(&d)["rendered-by"], "krmsync");
    // the generator's ConfigMap, hash-suffixed, labelled by the transformer
    let cms: Vec<Value> =
        e.h.fake
            .list("v1", "ConfigMap")
            .into_iter()
            .filter(|c| c["metadata"]["namespace"] == "web")
            .filter(|c| {
                c["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("hello-"))
            })
            .collect();
    assert_eq!(cms.len(), 1, "{cms:?}");
    assert_eq!(cms[0]["data"]["greeting"], "Hello from a catalog function");
    assert_eq!(labels(&cms[0])["team"], "web");

    assert_eq!(e.runs("HelloGenerator", "success"), 1);
    assert_eq!(e.runs("SetLabels", "success"), 1);
    let text = e.h.metrics.encode();
    assert!(
        text.contains(
            "krmsync_function_duration_seconds_count{function=\"fn.krmsync.dev/v1alpha1/SetLabels\"} 1"
        ),
        "{text}"
    );
    // an unchanged revision and Catalog is not rendered (nor run) again
    e.h.reconcile_ready("web", "app").await;
    assert_eq!(e.runs("SetLabels", "success"), 1);
}

#[tokio::test]
async fn a_namespace_the_catalog_does_not_allow_applies_nothing() {
    let e = env().await;
    e.catalog(catalog_cr(|_| {})).await;
    let bundle = example_bundle(true);
    e.app("other", bundle.path());
    let (k, ready) =
        e.h.reconcile_failing("other", "app", "FunctionNotApproved")
            .await;
    assert!(
        ready
            .message
            .contains("fn.krmsync.dev/v1alpha1 HelloGenerator")
            && ready.message.contains(&format!(
                "Catalog '{CATALOG}' does not allow namespace 'other'"
            )),
        "{}",
        ready.message
    );
    assert_eq!(condition(&k, "Rendered").reason, "FunctionNotApproved");
    assert!(e.deployment("other").is_none(), "something was applied");
    e.no_function_ran();
}

#[tokio::test]
async fn without_spec_catalogs_no_function_runs_whatever_its_annotation_says() {
    let e = env().await;
    e.catalog(catalog_cr(|_| {})).await;
    let bundle = example_bundle(true);
    // an explicit exec runtime does not bypass the Catalogs in-cluster
    std::fs::write(
        bundle.path().join("labels.yaml"),
        "apiVersion: fn.krmsync.dev/v1alpha1\nkind: SetLabels\nmetadata:\n  name: l\n  \
         annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: \
         ./bin/krmsync-fn-set-labels\nlabels: {team: web}\n",
    )
    .unwrap();
    std::fs::write(
        bundle.path().join("kustomization.yaml"),
        "resources: [deployment.yaml]\ntransformers: [labels.yaml]\n",
    )
    .unwrap();
    e.h.bundle_dir("web", "app", bundle.path());
    e.h.kustomization("web", "app", json!({}));
    let (_, ready) =
        e.h.reconcile_failing("web", "app", "FunctionNotApproved")
            .await;
    assert!(
        ready
            .message
            .contains("fn.krmsync.dev/v1alpha1 SetLabels ('l') is not approved")
            && ready.message.contains("names no Catalog"),
        "{}",
        ready.message
    );
    assert!(e.deployment("web").is_none());
    e.no_function_ran();
}

#[tokio::test]
async fn a_binary_that_does_not_match_the_catalog_resource_never_runs() {
    let e = env().await;
    let wrong = krmsync::source::sha256_hex(b"another build");
    e.catalog(catalog_cr(|c| {
        c["spec"]["krmFunctions"][1]["versions"][0]["runtime"]["exec"]["platforms"][0]["sha256"] =
            json!(wrong);
    }))
    .await;
    // the bundle's own catalog pins the binary it carries: not a trust root
    let bundle = example_bundle(true);
    e.app("web", bundle.path());
    let (_, ready) =
        e.h.reconcile_failing("web", "app", "FunctionNotApproved")
            .await;
    assert!(
        ready.message.contains(&format!("pins sha256:{wrong}"))
            && ready
                .message
                .contains(&format!("the binary is sha256:{}", sha(HELLO))),
        "{}",
        ready.message
    );
    assert!(e.deployment("web").is_none());
    e.no_function_ran();
}

#[tokio::test]
async fn a_failing_function_reports_its_results_and_applies_nothing() {
    let e = env().await;
    e.catalog(catalog_cr(|_| {})).await;
    let bundle = example_bundle(true);
    std::fs::write(
        bundle.path().join("labels.yaml"),
        "apiVersion: fn.krmsync.dev/v1alpha1\nkind: SetLabels\nmetadata: {name: l}\nlabels: {team: ''}\n",
    )
    .unwrap();
    e.app("web", bundle.path());
    let (k, ready) = e.h.reconcile_failing("web", "app", "FunctionFailed").await;
    assert!(
        ready.message.contains("label 'team' has no value"),
        "{}",
        ready.message
    );
    assert_eq!(condition(&k, "Rendered").status, "False");
    assert!(e.deployment("web").is_none());
    assert_eq!(e.runs("SetLabels", "failure"), 1);
}

#[tokio::test]
async fn function_warnings_become_events() {
    let e = env().await;
    e.catalog(catalog_cr(|_| {})).await;
    let bundle = example_bundle(true);
    let d = std::fs::read_to_string(bundle.path().join("deployment.yaml")).unwrap();
    std::fs::write(
        bundle.path().join("deployment.yaml"),
        d.replacen(
            "  name: web\n",
            "  name: web\n  labels:\n    team: legacy\n",
            1,
        ),
    )
    .unwrap();
    e.app("web", bundle.path());
    e.h.reconcile_ready("web", "app").await;
    let notes = e.h.event_notes("FunctionWarning");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("label 'team' was \"legacy\", now \"web\"")
                && n.contains("Deployment/web")),
        "{notes:?} {:?}",
        e.h.event_reasons()
    );
}

#[tokio::test]
async fn a_changed_catalog_re_renders() {
    let e = env().await;
    e.catalog(catalog_cr(|_| {})).await;
    let bundle = example_bundle(true);
    e.app("web", bundle.path());
    e.h.reconcile_ready("web", "app").await;
    // the admin withdraws SetLabels: same revision, same Kustomization
    let api: Api<Catalog> = Api::all(e.h.fake.client());
    let mut c = api.get(CATALOG).await.unwrap();
    c.spec.krm_functions.retain(|f| f.names.kind != "SetLabels");
    let patch = json!({"spec": serde_json::to_value(&c.spec).unwrap()});
    api.patch(CATALOG, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let c = api.get(CATALOG).await.unwrap();
    krmsync::controller::catalog::reconcile(std::sync::Arc::new(c), e.h.ctx.clone())
        .await
        .unwrap();
    let (_, ready) =
        e.h.reconcile_failing("web", "app", "FunctionNotApproved")
            .await;
    assert!(
        ready
            .message
            .contains("SetLabels ('team-labels') is not approved"),
        "{}",
        ready.message
    );
}

#[tokio::test]
async fn container_runtimes_are_not_run_in_cluster() {
    let e = env().await;
    e.catalog(catalog_cr(|c| {
        c["spec"]["krmFunctions"][1]["versions"][0]["runtime"] =
            json!({"container": {"image": "ghcr.io/example/hello@sha256:".to_string() + &"a".repeat(64)}});
    }))
    .await;
    let bundle = example_bundle(true);
    e.app("web", bundle.path());
    let (_, ready) =
        e.h.reconcile_failing("web", "app", "FunctionUnsupported")
            .await;
    assert!(
        ready.message.contains("is not run in-cluster"),
        "{}",
        ready.message
    );
    e.no_function_ran();
}

#[tokio::test]
async fn binaries_missing_from_the_bundle_are_fetched_from_the_catalog_uri_and_verified() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/set-labels"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(std::fs::read(SET_LABELS).unwrap()))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/hello"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(b"not the pinned binary".to_vec()))
        .mount(&server)
        .await;
    let e = env().await;
    let uri = server.uri();
    e.catalog(catalog_cr(|c| {
        for (i, to) in [(0, "set-labels"), (1, "hello")] {
            c["spec"]["krmFunctions"][i]["versions"][0]["runtime"]["exec"]["platforms"][0]["uri"] =
                json!(format!("{uri}/{to}"));
        }
    }))
    .await;
    // the transformer alone first: its binary is fetched, verified, cached
    let bundle = example_bundle(false);
    std::fs::write(
        bundle.path().join("kustomization.yaml"),
        "resources: [deployment.yaml]\ntransformers: [labels.yaml]\n",
    )
    .unwrap();
    e.app("web", bundle.path());
    e.h.reconcile_ready("web", "app").await;
    let d = e.deployment("web").unwrap();
    assert_eq!(labels(&d)["team"], "web");
    assert!(e.cache.join("sha256").join(sha(SET_LABELS)).is_file());

    // the generator's uri serves other bytes: refused, not stored, not run
    let bundle = example_bundle(false);
    e.app("web", bundle.path());
    let (_, ready) =
        e.h.reconcile_failing("web", "app", "FunctionUnavailable")
            .await;
    assert!(
        ready.message.contains("not stored") && ready.message.contains(&sha(HELLO)),
        "{}",
        ready.message
    );
    assert!(!e.cache.join("sha256").join(sha(HELLO)).exists());
    assert_eq!(
        e.runs("HelloGenerator", "success") + e.runs("HelloGenerator", "failure"),
        0
    );
}
