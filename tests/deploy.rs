//! The deployment files: the CRDs in `crds/`, `config/crd` and the Helm
//! chart are byte-identical to the ones generated from the Rust types, and the samples are valid
//! Kustomizations and Catalogs.

use std::path::Path;

use krmsync::api::{Catalog, Kustomization};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn crd_copies_are_byte_identical() {
    for dir in ["crds", "config/crd", "charts/krmsync/crds"] {
        for (name, text) in krmsync::api::crd_files().unwrap() {
            let rel = format!("{dir}/{name}");
            assert!(
                read(&rel) == text,
                "{rel} differs from the generated CRD: run `cargo run -- crd --output-dir {dir}`"
            );
        }
    }
}

#[test]
fn samples_are_valid() {
    let mut kustomizations = 0;
    let mut catalogs = 0;
    for entry in std::fs::read_dir(root().join("config/samples")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if name == "kustomization.yaml" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        if text.contains("\nkind: Kustomization\n") {
            let k: Kustomization =
                serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            k.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
            kustomizations += 1;
        } else if text.contains("\nkind: Catalog\n") {
            let c: Catalog =
                serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            let errs = c.spec.validate();
            assert!(errs.is_empty(), "{name}: {errs:?}");
            let runtimes: Vec<_> = c
                .spec
                .krm_functions
                .iter()
                .flat_map(|f| &f.versions)
                .map(|v| &v.runtime)
                .collect();
            assert!(runtimes.iter().any(|r| r.container.is_some()));
            assert!(runtimes.iter().any(|r| r.exec.is_some()));
            assert!(c.spec.allowed_namespaces.is_some());
            catalogs += 1;
        } else {
            panic!("{name}: neither a Kustomization nor a Catalog");
        }
    }
    assert_eq!((kustomizations, catalogs), (3, 1));
}

#[test]
fn samples_cover_every_source_kind() {
    let all =
        ["git", "bundle", "http"].map(|s| read(&format!("config/samples/kustomization_{s}.yaml")));
    assert!(all[0].contains("    git:\n"));
    assert!(all[1].contains("    bundle:\n"));
    assert!(all[2].contains("    http:\n"));
}
