//! End-to-end engine tests on in-memory trees: one test per feature, each
//! checking the printed YAML that kustomize 5.5 prints for the same tree.

use std::path::Path;
use std::sync::Arc;

use krmsync::kustomize::fs::MemFs;
use krmsync::kustomize::{BuildOptions, ErrorKind, Reorder, build};

fn render(
    files: &[(&str, &str)],
    root: &str,
    opts: &BuildOptions,
) -> Result<String, krmsync::kustomize::Error> {
    let mut fs = MemFs::new();
    for (p, c) in files {
        fs.add_file(p, *c);
    }
    build(Arc::new(fs), Path::new(root), opts)?.to_yaml()
}

fn ok(files: &[(&str, &str)], root: &str) -> String {
    render(files, root, &BuildOptions::default()).unwrap_or_else(|e| panic!("build failed: {e}"))
}

const DEPLOY: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.0
        envFrom:
        - configMapRef:
            name: cfg
      volumes:
      - name: s
        secret:
          secretName: creds
";

#[test]
fn overlay_prefix_namespace_and_generated_names_are_referenced() {
    let out = ok(
        &[
            (
                "/r/base/kustomization.yaml",
                "resources: [deploy.yaml]\nconfigMapGenerator:\n- name: cfg\n  literals: [A=1]\nsecretGenerator:\n- name: creds\n  literals: [p=x]\n",
            ),
            ("/r/base/deploy.yaml", DEPLOY),
            (
                "/r/prod/kustomization.yaml",
                "resources: [../base]\nnamePrefix: prod-\nnamespace: prod\n",
            ),
        ],
        "/r/prod",
    );
    assert_eq!(
        out,
        "apiVersion: v1
data:
  A: \"1\"
kind: ConfigMap
metadata:
  name: prod-cfg-89g4tffbfk
  namespace: prod
---
apiVersion: v1
data:
  p: eA==
kind: Secret
metadata:
  name: prod-creds-bm76c6cd96
  namespace: prod
type: Opaque
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: prod-web
  namespace: prod
spec:
  template:
    spec:
      containers:
      - envFrom:
        - configMapRef:
            name: prod-cfg-89g4tffbfk
        image: nginx:1.0
        name: web
      volumes:
      - name: s
        secret:
          secretName: prod-creds-bm76c6cd96
"
    );
}

#[test]
fn generator_merge_keeps_base_name_and_merges_data() {
    let out = ok(
        &[
            (
                "/r/base/kustomization.yaml",
                "configMapGenerator:\n- name: cm\n  literals: [a=1, b=1]\n",
            ),
            (
                "/r/ov/kustomization.yaml",
                "resources: [../base]\nnamePrefix: x-\nconfigMapGenerator:\n- name: cm\n  behavior: merge\n  literals: [b=2]\n",
            ),
        ],
        "/r/ov",
    );
    assert!(out.contains("  a: \"1\"\n  b: \"2\"\n"), "{out}");
    assert!(out.contains("name: x-cm-"), "{out}");
}

#[test]
fn components_see_parent_resources() {
    let out = ok(
        &[
            (
                "/r/app/kustomization.yaml",
                "resources: [deploy.yaml]\ncomponents: [../comp]\n",
            ),
            ("/r/app/deploy.yaml", DEPLOY),
            (
                "/r/comp/kustomization.yaml",
                "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nimages:\n- name: nginx\n  newTag: '2.0'\n",
            ),
        ],
        "/r/app",
    );
    assert!(out.contains("image: nginx:2.0"), "{out}");
}

#[test]
fn component_in_resources_is_an_error() {
    let e = render(
        &[
            ("/r/app/kustomization.yaml", "resources: [../comp]\n"),
            (
                "/r/comp/kustomization.yaml",
                // with something in it: a component of nothing but its type
                // is empty, which kustomize reports first
                "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nnamePrefix: x-\n",
            ),
        ],
        "/r/app",
        &BuildOptions::default(),
    )
    .unwrap_err();
    assert!(e.message.contains("expected kind != 'Component'"), "{e}");
}

#[test]
fn duplicate_ids_and_cycles_fail() {
    let e = render(
        &[
            ("/r/kustomization.yaml", "resources: [a.yaml, b.yaml]\n"),
            (
                "/r/a.yaml",
                "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
            ),
            (
                "/r/b.yaml",
                "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
            ),
        ],
        "/r",
        &BuildOptions::default(),
    )
    .unwrap_err();
    assert!(
        e.message
            .contains("already registered id: Service.v1.[noGrp]/s.[noNs]"),
        "{e}"
    );

    let e = render(
        &[
            ("/r/a/kustomization.yaml", "resources: [../b]\n"),
            ("/r/b/kustomization.yaml", "resources: [../a]\n"),
        ],
        "/r/a",
        &BuildOptions::default(),
    )
    .unwrap_err();
    assert!(e.message.contains("cycle detected"), "{e}");
}

#[test]
fn remote_references_are_refused_with_a_hint() {
    let e = render(
        &[(
            "/r/kustomization.yaml",
            "resources:\n- https://github.com/example/repo//deploy?ref=v1\n",
        )],
        "/r",
        &BuildOptions::default(),
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::RemoteReference);
    assert!(e.message.contains("/r/kustomization.yaml"), "{e}");
    assert!(e.message.contains("krmsync localize"), "{e}");
}

#[test]
fn patches_with_targets_strategic_and_json() {
    let out = ok(
        &[
            (
                "/r/kustomization.yaml",
                "resources: [deploy.yaml]\npatches:\n- target: {kind: Deployment, name: w.*}\n  patch: |-\n    - op: replace\n      path: /spec/template/spec/containers/0/image\n      value: nginx:9\n- patch: |-\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata:\n      name: web\n    spec:\n      replicas: 2\n",
            ),
            ("/r/deploy.yaml", DEPLOY),
        ],
        "/r",
    );
    assert!(out.contains("replicas: 2"), "{out}");
    assert!(out.contains("image: nginx:9"), "{out}");
}

#[test]
fn reorder_none_keeps_accumulation_order() {
    let files = [
        ("/r/kustomization.yaml", "resources: [a.yaml]\n"),
        (
            "/r/a.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: n}\n",
        ),
    ];
    let legacy = ok(&files, "/r");
    assert!(
        legacy.starts_with("apiVersion: v1\nkind: Namespace"),
        "{legacy}"
    );
    let none = render(
        &files,
        "/r",
        &BuildOptions {
            reorder: Some(Reorder::None),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(
        none.starts_with("apiVersion: apps/v1\nkind: Deployment"),
        "{none}"
    );
}

#[test]
fn vars_are_substituted() {
    let out = ok(
        &[
            (
                "/r/kustomization.yaml",
                "resources: [svc.yaml, pod.yaml]\nvars:\n- name: SVC\n  objref: {kind: Service, name: s, apiVersion: v1}\n",
            ),
            (
                "/r/svc.yaml",
                "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
            ),
            (
                "/r/pod.yaml",
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    command: [echo, $(SVC)]\n",
            ),
        ],
        "/r",
    );
    assert!(out.contains("- echo\n    - s\n"), "{out}");
}

#[test]
fn load_restrictor_blocks_files_outside_root() {
    let files = [
        (
            "/r/app/kustomization.yaml",
            "resources: [../shared/cm.yaml]\n",
        ),
        (
            "/r/shared/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
        ),
    ];
    let e = render(&files, "/r/app", &BuildOptions::default()).unwrap_err();
    assert!(
        e.message
            .contains("security; file '/r/shared/cm.yaml' is not in or below '/r/app'"),
        "{e}"
    );
    let opts = BuildOptions {
        load_restrictor: krmsync::kustomize::LoadRestrictor::None,
        ..Default::default()
    };
    assert!(render(&files, "/r/app", &opts).is_ok());
}

#[test]
fn local_config_resources_are_dropped() {
    let out = ok(
        &[
            ("/r/kustomization.yaml", "resources: [a.yaml]\n"),
            (
                "/r/a.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: drop\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n",
            ),
        ],
        "/r",
    );
    assert_eq!(
        out,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\n"
    );
}

#[test]
fn empty_annotations_are_dropped_like_kustomize() {
    // kubectl kustomize (v5.5.0) prints `labels: {}` / `labels: null` but
    // drops empty or null annotations.
    let out = ok(
        &[
            ("/r/kustomization.yaml", "resources: [a.yaml]\n"),
            (
                "/r/a.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations: {}\n  labels: {}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\n  annotations:\n  labels:\n",
            ),
        ],
        "/r",
    );
    assert_eq!(
        out,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {}\n  name: c\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: null\n  name: d\n"
    );
}
