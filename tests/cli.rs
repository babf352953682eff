//! The `krmsync build` command line: exit codes, stdout/stderr contract,
//! flags and output files.

use std::path::PathBuf;
use std::process::Command;

fn krmsync() -> Command {
    Command::new(env!("CARGO_BIN_EXE_krmsync"))
}

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/hello/overlays/prod")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("krmsync-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn build_example_succeeds() {
    let out = krmsync().arg("build").arg(example()).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("name: prod-hello\n  namespace: hello-prod\n"),
        "{text}"
    );
    assert!(
        text.contains("image: ghcr.io/example/hello:1.2.0"),
        "{text}"
    );
    assert!(text.contains("LOG_LEVEL: warn"), "{text}");
    assert_eq!(text.matches("\n---\n").count(), 2);
}

/// A usage error is bad input like any other: exit code 1 (as `kubectl
/// kustomize`), a message naming the flag, nothing on stdout. `--help`
/// still succeeds.
#[test]
fn usage_errors_exit_1_and_help_exits_0() {
    let out = krmsync()
        .args(["build", "--no-such-flag"])
        .arg(example())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--no-such-flag"), "{err}");

    let out = krmsync().arg("no-such-command").output().unwrap();
    assert_eq!(out.status.code(), Some(1));

    let out = krmsync().args(["build", "--help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--load-restrictor"));
}

/// `krmsync build <example> ARGS...`, which must succeed; its stdout.
fn build_example_with(args: &[&str]) -> Vec<u8> {
    let out = krmsync()
        .arg("build")
        .arg(example())
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `kubectl kustomize` accepts flag names written with underscores
/// (kubectl normalizes them), and documents use that spelling
/// (`--enable_alpha_plugins`); the output is the same as with dashes.
#[test]
fn flag_names_with_underscores_are_accepted() {
    let dashes = build_example_with(&[
        "--reorder",
        "none",
        "--load-restrictor=LoadRestrictionsRootOnly",
    ]);
    let underscores = build_example_with(&[
        "--reorder",
        "none",
        "--load_restrictor=LoadRestrictionsRootOnly",
    ]);
    assert_eq!(dashes, underscores);
}

/// Every flag of `kubectl kustomize` is accepted: boolean flags with an
/// explicit `=true`/`=false`, and the container-function options (`-e`,
/// `--mount`, `--as-current-user`, `--network-name`), which change nothing
/// for a kustomization without functions.
#[test]
fn kubectl_kustomize_flags_are_accepted() {
    let plain = build_example_with(&[]);
    let all = build_example_with(&[
        "--enable-helm=false",
        "--enable-alpha-plugins=true",
        "--network=false",
        "--helm-debug=false",
        "--as-current-user",
        "-e",
        "FOO=bar",
        "--env",
        "HOME",
        "--mount",
        "type=bind,src=.,dst=/in",
        "--network-name",
        "bridge",
    ]);
    assert_eq!(plain, all);

    // a value that is no boolean, and a mount without a destination
    for bad in [
        &["--enable-helm=maybe"][..],
        &["--mount", "type=bind,src=."],
    ] {
        let out = krmsync()
            .arg("build")
            .arg(example())
            .args(bad)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{bad:?}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn errors_exit_1_with_empty_stdout_and_name_the_file() {
    let dir = scratch("bad");
    std::fs::write(
        dir.join("kustomization.yaml"),
        "resources: [missing.yaml]\n",
    )
    .unwrap();
    let out = krmsync().arg("build").arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("missing.yaml"), "{err}");

    std::fs::write(
        dir.join("kustomization.yaml"),
        "resources: []\nnotAField: 1\n",
    )
    .unwrap();
    let out = krmsync().arg("build").arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("kustomization.yaml") && err.contains("notAField"),
        "{err}"
    );
}

#[test]
fn output_file_and_directory() {
    let dir = scratch("out");
    let file = dir.join("all.yaml");
    let out = krmsync()
        .arg("build")
        .arg(example())
        .arg("-o")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    let stdout = krmsync()
        .arg("build")
        .arg(example())
        .output()
        .unwrap()
        .stdout;
    assert_eq!(std::fs::read(&file).unwrap(), stdout);

    let per = dir.join("split");
    std::fs::create_dir_all(&per).unwrap();
    let out = krmsync()
        .arg("build")
        .arg(example())
        .arg("-o")
        .arg(&per)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(std::fs::read_dir(&per).unwrap().count(), 3);
}

#[test]
fn reorder_and_managedby_flags() {
    let out = krmsync()
        .args(["build", "--reorder", "none", "--enable-managedby-label"])
        .arg(example())
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("apiVersion: apps/v1\nkind: Deployment"),
        "{text}"
    );
    assert_eq!(
        text.matches("app.kubernetes.io/managed-by: kustomize-(devel)")
            .count(),
        3
    );

    let bad = krmsync()
        .args(["build", "--reorder", "sideways"])
        .arg(example())
        .output()
        .unwrap();
    assert_ne!(bad.status.code(), Some(0));
}

// An env-file line without `=` is the key with an empty value, as in
// kustomize 5.5: the build reads nothing from the environment.
#[test]
fn env_file_keys_without_value_do_not_read_the_environment() {
    let d = scratch("envfile");
    std::fs::write(
        d.join("kustomization.yaml"),
        "configMapGenerator:\n- name: c\n  envs: [a.env]\n  options: {disableNameSuffixHash: true}\n",
    )
    .unwrap();
    std::fs::write(d.join("a.env"), "KRMSYNC_TEST_SECRET\nA=1\n").unwrap();
    let out = krmsync()
        .arg("build")
        .arg(&d)
        .env("KRMSYNC_TEST_SECRET", "leaked")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "apiVersion: v1\ndata:\n  A: \"1\"\n  KRMSYNC_TEST_SECRET: \"\"\nkind: ConfigMap\nmetadata:\n  name: c\n"
    );
    let _ = std::fs::remove_dir_all(&d);
}
