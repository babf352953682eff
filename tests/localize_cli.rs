//! `krmsync localize` through the binary: arguments, mirrors from the
//! environment, log lines and exit codes.

use std::path::Path;
use std::process::Command;

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: v\n";

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn krmsync(cwd: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_krmsync"));
    c.current_dir(cwd).env_remove("KRMSYNC_LOCALIZE_MIRRORS");
    c
}

#[test]
fn too_many_arguments() {
    let t = tempfile::tempdir().unwrap();
    let out = krmsync(t.path())
        .args(["localize", "a", "b", "c"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "Error: accepts at most 2 arg(s), received 3"
    );
}

#[test]
fn mirrors_from_the_environment_and_default_destination() {
    let t = tempfile::tempdir().unwrap();
    let s = std::fs::canonicalize(t.path()).unwrap();
    write(&s, "served/v1/cm.yaml", CM);
    write(
        &s,
        "app/kustomization.yaml",
        "namePrefix: x-\nresources:\n- https://files.example.com/v1/cm.yaml\n",
    );
    let out = krmsync(&s)
        .args(["localize", "app"])
        .env(
            "KRMSYNC_LOCALIZE_MIRRORS",
            format!(
                "https://files.example.com/=file://{}/",
                s.join("served").display()
            ),
        )
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(stderr.contains("VERIFICATION SUCCESS"), "{stderr}");
    let dst = s.join("localized-app");
    assert!(
        stderr.contains(&format!(
            "SUCCESS: localized \"app\" to directory {}",
            dst.display()
        )),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dst.join("kustomization.yaml")).unwrap(),
        "namePrefix: x-\nresources:\n- localized-files/files.example.com/v1/cm.yaml\n"
    );
    assert_eq!(
        std::fs::read_to_string(dst.join("localized-files/files.example.com/v1/cm.yaml")).unwrap(),
        CM
    );
    // the copy builds offline
    let built = krmsync(&s)
        .args(["build", "localized-app"])
        .output()
        .unwrap();
    assert!(built.status.success());
    assert!(String::from_utf8_lossy(&built.stdout).contains("name: x-c"));

    // a second run: the destination exists
    let out = krmsync(&s)
        .args(["localize", "app", "--quiet"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists"));
}

#[test]
fn failures_exit_1_and_leave_nothing() {
    let t = tempfile::tempdir().unwrap();
    let s = std::fs::canonicalize(t.path()).unwrap();
    write(
        &s,
        "app/kustomization.yaml",
        "resources:\n- https://files.example.com/v1/missing.yaml\n",
    );
    let out = krmsync(&s)
        .args(["localize", "app", "out", "--mirror"])
        .arg(format!(
            "https://files.example.com/=file://{}/",
            s.display()
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("Error: unable to localize target \"app\""),
        "{stderr}"
    );
    assert!(!s.join("out").exists());

    let out = krmsync(&s)
        .args(["localize", "app", "out", "--mirror", "no-equals-sign"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected FROM=TO"));
}

/// The one-step air-gapped form: `--bundle` packs the localized copy, and
/// the bundle builds the same as the copy.
#[test]
fn bundle_packs_the_localized_copy() {
    let t = tempfile::tempdir().unwrap();
    let s = std::fs::canonicalize(t.path()).unwrap();
    write(&s, "served/v1/cm.yaml", CM);
    write(
        &s,
        "app/kustomization.yaml",
        "namePrefix: x-\nresources:\n- https://files.example.com/v1/cm.yaml\n",
    );
    let out = krmsync(&s)
        .args(["localize", "app", "out", "--bundle", "app.tar.gz"])
        .args([
            "--mirror",
            &format!(
                "https://files.example.com/=file://{}/",
                s.join("served").display()
            ),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let data = std::fs::read(s.join("app.tar.gz")).unwrap();
    let revision = krmsync::source::sha256_hex(&data);
    assert!(
        stderr.contains(&format!(
            "BUNDLE: app.tar.gz: {} bytes, revision sha256:{revision}",
            data.len()
        )),
        "{stderr}"
    );
    // unpacked, the bundle is the localized copy
    let unpacked = s.join("unpacked");
    std::fs::create_dir_all(&unpacked).unwrap();
    let gz = flate2::read::GzDecoder::new(&data[..]);
    tar::Archive::new(gz).unpack(&unpacked).unwrap();
    let build = |dir: &Path| {
        let out = krmsync(&s).arg("build").arg(dir).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let copy = build(&s.join("out"));
    assert!(copy.contains("name: x-c"), "{copy}");
    assert_eq!(build(&unpacked), copy);
}
