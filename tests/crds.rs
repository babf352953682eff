//! The CRD manifests in the repository are generated from the Rust types
//! (`krmsync crd --output-dir crds`); these tests fail when a copy drifts.

use std::path::Path;

fn check_dir(dir: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (name, text) in krmsync::api::crd_files().unwrap() {
        let path = root.join(dir).join(name);
        let on_disk = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}; run `krmsync crd --output-dir {dir}`",
                path.display()
            )
        });
        assert!(
            on_disk == text,
            "{} is out of date with the Rust types: run `cargo run -- crd --output-dir {dir}`",
            path.display()
        );
    }
}

#[test]
fn crds_dir_matches_types() {
    check_dir("crds");
}

#[test]
fn crd_has_printer_columns_and_short_name() {
    let files = krmsync::api::crd_files().unwrap();
    let (_, k) = files
        .iter()
        .find(|(n, _)| n.contains("kustomizations"))
        .unwrap();
    for col in [
        "name: Ready",
        "name: Revision",
        "name: Resources",
        "name: Age",
        "name: Status",
        "name: Rendered",
        "name: Applied",
    ] {
        assert!(k.contains(col), "missing printer column {col}");
    }
    assert!(k.contains("- ksy"));
    assert!(k.contains("scope: Namespaced"));
    assert!(k.contains("subresources:\n      status: {}"));
    let (_, c) = files.iter().find(|(n, _)| n.contains("catalogs")).unwrap();
    assert!(c.contains("scope: Cluster"));
    assert!(c.contains("name: Functions"));
}
