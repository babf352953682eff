//! A small differential run in CI: random kustomization trees from
//! `tools/difftest.py` built with `kubectl kustomize` (kustomize v5.5, the
//! reference) and this `krmsync`, outputs compared byte for byte. The full
//! run (thousands of trees) is a separate command (README, "Differential
//! testing"). Where kubectl or python3 is missing, the test says it was not
//! run.

use std::path::Path;
use std::process::Command;

fn on_path(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("--help")
        .output()
        .is_ok_and(|o| o.status.success() || !o.stdout.is_empty() || !o.stderr.is_empty())
}

#[test]
fn random_trees_build_like_kubectl_kustomize() {
    if !on_path("python3") || !on_path("kubectl") {
        println!("difftest: not run: python3 or kubectl is not on PATH");
        return;
    }
    let keep = tempfile::tempdir().unwrap();
    // a fixed slice of seeds: CI stays reproducible (the full run explores)
    let seed: u64 = 1_000_000;
    let out = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/difftest.py"))
        .args(["--trees", "40", "--seed", &seed.to_string()])
        .arg("--krmsync")
        .arg(env!("CARGO_BIN_EXE_krmsync"))
        .arg("--keep")
        .arg(keep.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success() && stdout.contains("40 passed, 0 failed"),
        "seeds {seed}..{}: {stdout}{}",
        seed + 39,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The same for `helmCharts` (`tools/difftest_helm.py`): both tools drive
/// one stand-in helm, so arguments, values files and output handling are
/// compared too. No real helm is needed.
#[test]
fn random_helm_charts_build_like_kubectl_kustomize() {
    if !on_path("python3") || !on_path("kubectl") {
        println!("difftest-helm: not run: python3 or kubectl is not on PATH");
        return;
    }
    let keep = tempfile::tempdir().unwrap();
    let seed: u64 = 2_000_000;
    let out = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/difftest_helm.py"))
        .args(["--trees", "40", "--seed", &seed.to_string()])
        .arg("--krmsync")
        .arg(env!("CARGO_BIN_EXE_krmsync"))
        .arg("--keep")
        .arg(keep.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success() && stdout.contains("40 passed, 0 failed"),
        "seeds {seed}..{}: {stdout}{}",
        seed + 39,
        String::from_utf8_lossy(&out.stderr)
    );
}
