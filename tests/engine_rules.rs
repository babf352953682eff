//! Rules of kustomize v5.5.0's build that krmsync follows, each checked on
//! several variants. Every expectation was verified with `kubectl kustomize`
//! (kustomize v5.5.0) on the same tree; the tests themselves need no kubectl.

use std::path::Path;
use std::sync::Arc;

use krmsync::kustomize::fs::MemFs;
use krmsync::kustomize::{BuildOptions, build};

fn render(files: &[(&str, &str)], root: &str) -> Result<String, krmsync::kustomize::Error> {
    let mut fs = MemFs::new();
    for (p, c) in files {
        fs.add_file(p, *c);
    }
    build(Arc::new(fs), Path::new(root), &BuildOptions::default())?.to_yaml()
}

fn ok(files: &[(&str, &str)], root: &str) -> String {
    render(files, root).unwrap_or_else(|e| panic!("build failed: {e}"))
}

fn err(files: &[(&str, &str)], root: &str) -> String {
    match render(files, root) {
        Ok(out) => panic!("build succeeded, expected an error:\n{out}"),
        Err(e) => e.to_string(),
    }
}

// Rule: a generated Secret always carries a `data` map, empty when the
// generator has no sources (and the empty map is part of the hashed
// content); a generated ConfigMap without sources has no `data` at all.
#[test]
fn empty_generators_secret_gets_empty_data_configmap_none() {
    let out = ok(
        &[(
            "/r/kustomization.yaml",
            "configMapGenerator:
- name: cm
  options: {disableNameSuffixHash: true}
- name: cm2
secretGenerator:
- name: s
  options: {labels: {a: b}}
- name: s2
  type: kubernetes.io/tls
",
        )],
        "/r",
    );
    assert_eq!(
        out,
        "apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm2-6ct58987ht
---
apiVersion: v1
data: {}
kind: Secret
metadata:
  labels:
    a: b
  name: s-46f8b28mk5
type: Opaque
---
apiVersion: v1
data: {}
kind: Secret
metadata:
  name: s2-694464d966
type: kubernetes.io/tls
"
    );
}
