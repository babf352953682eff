//! KRM functions in-cluster: a Catalog resource approves the example
//! functions (`examples/functions`, built with the crate); a Kustomization
//! of an allowed namespace renders with them and goes Ready with their
//! output applied; the same tree under a Catalog that does not allow the
//! namespace goes `Ready=False`, `FunctionNotApproved`, and applies
//! nothing. The controller runs as a local process, so the functions run
//! on this machine, in the sandbox, as they would in the controller's pod.

use std::path::Path;

use crate::common::*;

const SET_LABELS: &str = env!("CARGO_BIN_EXE_krmsync-fn-set-labels");
const HELLO: &str = env!("CARGO_BIN_EXE_krmsync-fn-hello-generator");

fn sha(path: &str) -> String {
    use sha2::{Digest, Sha256};
    format!("{:x}", Sha256::digest(std::fs::read(path).unwrap()))
}

fn examples() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/functions"))
}

fn platform() -> (&'static str, &'static str) {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    (std::env::consts::OS, arch)
}

/// A template of `examples/functions`, pinned as `pin.sh` does.
fn pinned(template: &str) -> String {
    let (os, arch) = platform();
    std::fs::read_to_string(examples().join(template))
        .unwrap()
        .replace("@OS@", os)
        .replace("@ARCH@", arch)
        .replace("@SET_LABELS_SHA256@", &sha(SET_LABELS))
        .replace("@HELLO_SHA256@", &sha(HELLO))
}

/// Deletes the test's cluster-scoped Catalogs, also when the test fails.
struct Catalogs(Vec<String>);

impl Drop for Catalogs {
    fn drop(&mut self) {
        for name in &self.0 {
            let _ = kubectl_output(
                &["delete", "catalog.krmsync.dev", name, "--ignore-not-found"],
                None,
            );
        }
    }
}

#[test]
#[ignore = "needs a cluster (KUBECONFIG)"]
fn a_catalog_function_runs_only_where_the_catalog_allows() {
    let Some(mut e) = E2e::setup() else { return };
    let ns = e.ns().to_string();
    let allowed = format!("krmsync-e2e-fns-{ns}");
    let elsewhere = format!("krmsync-e2e-fns-elsewhere-{ns}");
    let _guard = Catalogs(vec![allowed.clone(), elsewhere.clone()]);
    let cr = pinned("catalog-cr.template.yaml");
    kubectl_apply(
        &cr.replace("name: krmsync-examples", &format!("name: {allowed}"))
            .replace("names: [web]", &format!("names: [{ns}]")),
    );
    kubectl_apply(
        &cr.replace("name: krmsync-examples", &format!("name: {elsewhere}"))
            .replace("names: [web]", "names: [some-other-namespace]"),
    );

    // the walkthrough's tree, binaries included, in a git repository (a
    // ConfigMap bundle could not hold debug binaries)
    let repo = GitRepo::new();
    for f in [
        "kustomization.yaml",
        "deployment.yaml",
        "hello.yaml",
        "labels.yaml",
    ] {
        repo.write(
            &format!("app/{f}"),
            &std::fs::read_to_string(examples().join("app").join(f)).unwrap(),
        );
    }
    repo.write("app/catalog.yaml", &pinned("catalog.template.yaml"));
    std::fs::create_dir_all(repo.path().join("app/bin")).unwrap();
    std::fs::copy(
        SET_LABELS,
        repo.path().join("app/bin/krmsync-fn-set-labels"),
    )
    .unwrap();
    std::fs::copy(
        HELLO,
        repo.path().join("app/bin/krmsync-fn-hello-generator"),
    )
    .unwrap();
    repo.commit("example functions");

    let spec = |catalog: &str| {
        format!(
            "source:\n  git:\n    url: {}\n    ref:\n      branch: main\npath: app\ninterval: 1h\n\
             catalogs: [{catalog}]\n",
            repo.url()
        )
    };
    e.apply_kustomization("fns", &spec(&allowed));
    e.wait_ready("fns", |_| true);
    let d = get_json(&["deployment", "web", "-n", &ns]).expect("the Deployment was applied");
    assert_eq!(label(&d, "team").as_deref(), Some("web"), "{d}");
    assert_eq!(label(&d, "rendered-by").as_deref(), Some("krmsync"));
    assert_owned_by(&d, &ns, "fns");
    let cms = kubectl(&["get", "configmaps", "-n", &ns, "-o", "name"]);
    assert!(
        cms.lines().any(|l| l.starts_with("configmap/hello-")),
        "{cms}"
    );

    // the same tree under a Catalog that does not allow this namespace
    kubectl(&["delete", KS_FQ, "fns", "-n", &ns, "--wait=true"]);
    e.wait_gone("deployment", "web");
    e.apply_kustomization("denied", &spec(&elsewhere));
    let k = e.wait_not_ready("denied", "FunctionNotApproved");
    let (_, _, message) = condition(&k, "Ready").unwrap();
    assert!(
        message.contains("fn.krmsync.dev/v1alpha1 HelloGenerator")
            && message.contains(&format!("does not allow namespace '{ns}'")),
        "{message}"
    );
    assert!(
        get_json(&["deployment", "web", "-n", &ns]).is_none(),
        "applied although no Catalog approves the functions"
    );
}

const KS_FQ: &str = "kustomizations.krmsync.dev";
