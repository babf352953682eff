//! The air-gapped path end to end: `krmsync localize` a kustomization with
//! a remote root (served from a local mirror), `krmsync bundle push` the
//! result, and a Kustomization renders it in the cluster with no network.

use crate::common::*;

#[test]
#[ignore = "needs a cluster (KUBECONFIG)"]
fn localize_then_bundle_then_sync() {
    let Some(mut e) = E2e::setup() else { return };
    let ns = e.ns().to_string();
    // "upstream": a repository the cluster could never reach
    let upstream = GitRepo::new();
    upstream.write(
        "deploy/kustomization.yaml",
        &kustomization_yaml(&["configmap.yaml"]),
    );
    upstream.write(
        "deploy/configmap.yaml",
        &configmap_yaml("from-upstream", "k", "v1"),
    );
    upstream.commit("upstream app");

    let work = tempfile::tempdir().unwrap();
    let overlay = work.path().join("overlay");
    write_file(
        &overlay,
        "kustomization.yaml",
        "namePrefix: site-\nresources:\n- https://github.com/example/app//deploy?ref=main\n",
    );
    // without localizing, the tree cannot be rendered in-cluster
    let out = krmsync_output(&["build", overlay.to_str().unwrap()]);
    assert!(!out.status.success(), "a remote reference must be refused");

    let localized = work.path().join("localized");
    krmsync(&[
        "localize",
        overlay.to_str().unwrap(),
        localized.to_str().unwrap(),
        "--mirror",
        &format!("https://github.com/example/app={}", upstream.url()),
    ]);
    let rendered = krmsync(&["build", localized.to_str().unwrap()]);
    assert!(rendered.contains("name: site-from-upstream"), "{rendered}");

    krmsync(&[
        "bundle",
        "push",
        localized.to_str().unwrap(),
        "--name",
        "airgap",
        "-n",
        &ns,
    ]);
    e.apply_kustomization("airgap", &bundle_spec("airgap", ""));
    e.wait_ready("airgap", |_| true);
    let cm = get_json(&["configmap", "site-from-upstream", "-n", &ns]).expect("applied");
    assert_owned_by(&cm, &ns, "airgap");
}
