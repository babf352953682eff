//! The localized copy of every build-corpus case that builds and has no
//! remote reference builds to the same bytes as the original (issue 9).
//! Runs over `../shared/conformance/cases` when it is beside the checkout.

use std::path::{Path, PathBuf};

use krmsync::kustomize::{BuildOptions, build_dir};
use krmsync::localize::{Options, run, url::Mirrors};

fn corpus() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/cases");
    dir.is_dir().then_some(dir)
}

/// (root, scope) of a case that plain `kustomize build .` builds.
fn plain_success_case(case: &Path) -> Option<(PathBuf, PathBuf)> {
    let text = std::fs::read_to_string(case.join("case.yaml")).ok()?;
    let meta: serde_json::Value = serde_saphyr::from_str(&text).ok()?;
    if meta["expect"] != "success" || meta["argv"] != serde_json::json!(["build", "."]) {
        return None;
    }
    let root = case.join(meta["root"].as_str()?);
    Some((root, case.join("input")))
}

#[test]
fn localized_copies_of_the_build_corpus_build_to_the_same_bytes() {
    let Some(dir) = corpus() else {
        println!("localize round trip: not run: ../shared/conformance/cases is absent");
        return;
    };
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    cases.sort();
    let (mut passed, mut failed, mut skipped) = (0, Vec::new(), 0);
    for case in cases {
        let Some((root, scope)) = plain_success_case(&case) else {
            skipped += 1;
            continue;
        };
        let Ok(original) = build_dir(&root, &BuildOptions::default()) else {
            skipped += 1; // a case krmsync itself does not build (none today)
            continue;
        };
        let original = original.to_yaml().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let result = run(&Options {
            target: Some(root.display().to_string()),
            new_dir: Some(out.display().to_string()),
            scope: Some(scope.display().to_string()),
            no_verify: true,
            mirrors: Mirrors::default(),
            progress: false,
            platforms: Vec::new(),
            ssh_command: None,
        });
        let outcome = match result {
            Ok(o) => o,
            Err(e) => {
                failed.push(format!("{name}: localize: {}", e.message));
                continue;
            }
        };
        match build_dir(&outcome.new_dir, &BuildOptions::default()) {
            Ok(copy) if copy.to_yaml().unwrap() == original => passed += 1,
            Ok(_) => failed.push(format!("{name}: the localized copy builds to other bytes")),
            Err(e) => failed.push(format!("{name}: the localized copy does not build: {e}")),
        }
    }
    println!(
        "localize round trip: {passed} passed, {} failed ({skipped} cases not plain successful builds)",
        failed.len()
    );
    assert!(passed > 100, "too few cases exercised: {passed}");
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
