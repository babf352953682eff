//! What the generated CRDs must show (the copies in the repository are
//! checked against the generator in `tests/deploy.rs`).

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
