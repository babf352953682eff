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

/// The controller's image in `config/` is set through `images:` in
/// `config/default`, so users can point it at the image they built.
#[test]
fn config_default_image_is_overridable() {
    use krmsync::kustomize::{BuildOptions, build_dir};
    let image_of = |dir: &Path| -> String {
        let out = build_dir(&dir.join("default"), &BuildOptions::default()).unwrap();
        let yaml = out.to_yaml().unwrap();
        let line = yaml
            .lines()
            .find(|l| l.trim_start().starts_with("image: "))
            .unwrap_or_else(|| panic!("no image in:\n{yaml}"));
        line.trim().trim_start_matches("image: ").to_string()
    };
    assert_eq!(
        image_of(&root().join("config")),
        "ghcr.io/krmsync/krmsync:latest"
    );
    // the edit the README tells users to make
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&root().join("config"), tmp.path());
    let k = tmp.path().join("default/kustomization.yaml");
    let text = std::fs::read_to_string(&k).unwrap();
    let edited = text
        .replace("  newName: ghcr.io/krmsync/krmsync", "  newName: krmsync")
        .replace("  newTag: latest", "  newTag: dev");
    assert_ne!(
        text, edited,
        "config/default/kustomization.yaml has no images: entry to edit"
    );
    std::fs::write(&k, edited).unwrap();
    assert_eq!(image_of(tmp.path()), "krmsync:dev");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

/// The quick start's `kubectl get ksy` output shows as many RESOURCES as
/// the example really renders.
#[test]
fn readme_quick_start_resource_count_matches_the_example() {
    use krmsync::kustomize::{BuildOptions, build_dir};
    let out = build_dir(
        &root().join("examples/hello/overlays/prod"),
        &BuildOptions::default(),
    )
    .unwrap();
    let readme = read("README.md");
    let row = readme
        .lines()
        .find(|l| l.starts_with("hello   True"))
        .expect("the quick start's table row");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[3], out.resources.len().to_string(), "{row}");
}
