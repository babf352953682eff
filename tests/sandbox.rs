//! Security tests of the exec function sandbox (`src/krm/sandbox.rs`).
//!
//! Each test fails when a protection is missing on this kernel: a missing
//! protection must not count as passing. Set
//! `KRMSYNC_ALLOW_MISSING_SANDBOX=1` to have them print `not run: <reason>`
//! and return instead (for machines known not to have Landlock or seccomp).
//!
//! The functions are shell scripts written into temporary directories;
//! every test is bounded to seconds and small limits (shared machines).
//!
//! Overhead of the sandbox (not run by default):
//!   cargo test --test sandbox -- --ignored --nocapture overhead

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use krmsync::krm::ProcessRunner;
use krmsync::krm::sandbox::{self, Limits, Sandbox};
use krmsync::kustomize::function::{FunctionCall, FunctionRunner, FunctionSpec};
use krmsync::kustomize::yaml::{Value, parse_documents};

/// `false` (after printing why) when the test must not run.
fn sandbox_complete() -> bool {
    let missing = sandbox::probe().missing();
    if missing.is_empty() {
        return true;
    }
    let reason = missing.join("; ");
    if std::env::var("KRMSYNC_ALLOW_MISSING_SANDBOX").as_deref() == Ok("1") {
        println!("not run: {reason}");
        return false;
    }
    panic!(
        "sandbox protection missing: {reason} (set KRMSYNC_ALLOW_MISSING_SANDBOX=1 to skip on such kernels)"
    );
}

/// The functions of these tests run as one user, and the process limit
/// (RLIMIT_NPROC) counts that user's processes: the fork bomb would starve
/// a function running beside it. One test at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn runner(timeout: Duration, max_output: usize) -> ProcessRunner {
    ProcessRunner {
        timeout,
        max_output,
        sandbox: Some(Sandbox {
            limits: Limits {
                cpu_seconds: 10,
                address_space: 1 << 30,
                processes: 16,
                open_files: 64,
                file_size: 1 << 20,
            },
            require: true,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn config(extra: &str) -> Value {
    let text = format!(
        "apiVersion: example.com/v1\nkind: Fn\nmetadata:\n  name: f\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: ./fn.sh\n{extra}"
    );
    parse_documents(&text).unwrap().remove(0)
}

fn items() -> Vec<Value> {
    parse_documents("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: b\n")
        .unwrap()
}

/// Writes `fn.sh` into `dir` and runs it as an exec function.
fn run_fn(
    r: &ProcessRunner,
    dir: &Path,
    script: &str,
    cfg_extra: &str,
) -> Result<Vec<Value>, String> {
    let p = dir.join("fn.sh");
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cfg = config(cfg_extra);
    // the spec as the engine reads it from the config's annotation
    let spec = krmsync::kustomize::function::function_spec(&cfg)
        .unwrap()
        .unwrap();
    assert!(matches!(&spec, FunctionSpec::Exec { path, .. } if path == "./fn.sh"));
    r.run_function(FunctionCall {
        spec: &spec,
        name: "test-fn",
        function_config: &cfg,
        items: items(),
        working_dir: dir,
    })
}

#[test]
fn tcp_connection_to_localhost_is_denied() {
    let _serial = serial();
    if !sandbox_complete() {
        return;
    }
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    let d = tempfile::tempdir().unwrap();
    let script = format!(
        "#!/bin/bash\nif exec 3<>/dev/tcp/127.0.0.1/{port}; then echo CONNECTED >&2; exit 1; fi\ncat\n"
    );
    // Even a function that asks for the network does not get it unless
    // the operator allows it (--network).
    let out = run_fn(
        &runner(Duration::from_secs(10), 1 << 20),
        d.path(),
        &script,
        "        network: true\n",
    );
    assert!(out.is_ok(), "the function reached the network: {out:?}");
    match l.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the listener saw a connection: {other:?}"),
    }
    // Control: with --network and a function that asks, it connects.
    let mut r = runner(Duration::from_secs(10), 1 << 20);
    r.sandbox.as_mut().unwrap().allow_network = true;
    let out = run_fn(&r, d.path(), &script, "        network: true\n");
    assert!(
        out.as_ref().is_err_and(|e| e.contains("CONNECTED")),
        "{out:?}"
    );
}

#[test]
fn reading_outside_the_sandbox_is_denied() {
    let _serial = serial();
    if !sandbox_complete() {
        return;
    }
    // A world-readable fake token: only the sandbox stands in the way.
    let secrets = tempfile::tempdir().unwrap();
    std::fs::set_permissions(secrets.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let token = secrets.path().join("token");
    std::fs::write(&token, "secret-token").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("sibling.yaml"), "x: 1\n").unwrap();
    let script = format!(
        "#!/bin/sh\nfor f in {} /var/run/secrets/kubernetes.io/serviceaccount/token /root/.bashrc; do\n  if cat \"$f\" >&2 2>/dev/null; then echo \"READ $f\" >&2; exit 1; fi\ndone\nif ls {} >&2; then exit 1; fi\necho ok > \"$HOME/scratch\" && cat \"$HOME/scratch\" >/dev/null || exit 1\ncat\n",
        token.display(),
        d.path().display()
    );
    let out = run_fn(
        &runner(Duration::from_secs(10), 1 << 20),
        d.path(),
        &script,
        "",
    );
    assert!(
        out.is_ok(),
        "the function read outside its sandbox: {out:?}"
    );
}

#[test]
fn infinite_loop_is_killed_at_the_timeout() {
    let _serial = serial();
    if !sandbox_complete() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let e = run_fn(
        &runner(Duration::from_secs(2), 1 << 20),
        d.path(),
        "#!/bin/sh\nwhile :; do :; done\n",
        "",
    )
    .unwrap_err();
    assert!(e.contains("timed out"), "{e}");
    assert!(e.contains("test-fn"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(10));
}

fn tasks_of_uid(uid: u32) -> usize {
    use std::os::unix::fs::MetadataExt;
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|s| s.parse::<u32>().is_ok())
        })
        .filter(|e| e.metadata().is_ok_and(|m| m.uid() == uid))
        .count()
}

#[test]
fn fork_bomb_is_contained() {
    let _serial = serial();
    if !sandbox_complete() {
        return;
    }
    let sb = Sandbox::default();
    let uid = sb.switch_to().map(|u| u.0).unwrap_or_else(|| {
        std::fs::metadata("/proc/self")
            .map(|m| std::os::unix::fs::MetadataExt::uid(&m))
            .unwrap()
    });
    let d = tempfile::tempdir().unwrap();
    // A watcher thread records the most tasks the function's user had.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let before = tasks_of_uid(uid);
    let watch = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut most = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                most = most.max(tasks_of_uid(uid));
                std::thread::sleep(Duration::from_millis(20));
            }
            most
        })
    };
    let start = Instant::now();
    let out = run_fn(
        &runner(Duration::from_secs(3), 1 << 20),
        d.path(),
        "#!/bin/sh\nb() { b | b & }\nb\nsleep 10\n",
        "",
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let most = watch.join().unwrap();
    assert!(out.is_err(), "{out:?}");
    assert!(start.elapsed() < Duration::from_secs(10));
    // 16 processes on top of what the user had (plus slack for the
    // sampling and the user's other work).
    assert!(
        most <= before + 16 + 8,
        "the user had {before} processes and the bomb reached {most}"
    );
    // Nothing survives the process group's kill.
    let deadline = Instant::now() + Duration::from_secs(5);
    while tasks_of_uid(uid) > before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(tasks_of_uid(uid) <= before, "processes survived the run");
}

#[test]
fn a_gibibyte_of_output_is_cut_off() {
    let _serial = serial();
    if !sandbox_complete() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let e = run_fn(
        &runner(Duration::from_secs(20), 1 << 20),
        d.path(),
        "#!/bin/sh\nhead -c 1073741824 /dev/zero\n",
        "",
    )
    .unwrap_err();
    assert!(e.contains("test-fn"), "{e}");
    assert!(e.contains("more than 1048576 bytes on stdout"), "{e}");
    // Cut off, not read to the end.
    assert!(start.elapsed() < Duration::from_secs(10), "{e}");
}

#[test]
fn malformed_output_is_a_clear_error() {
    let _serial = serial();
    if !sandbox_complete() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let e = run_fn(
        &runner(Duration::from_secs(10), 1 << 20),
        d.path(),
        "#!/bin/sh\ncat >/dev/null\necho 'items: [unclosed'\n",
        "",
    )
    .unwrap_err();
    assert!(e.contains("function 'test-fn' (exec ./fn.sh)"), "{e}");
}

#[test]
fn parent_environment_is_not_visible() {
    let _serial = serial();
    if !sandbox_complete() {
        return;
    }
    // cargo runs tests with CARGO_* variables set: none may show.
    assert!(std::env::var("CARGO_MANIFEST_DIR").is_ok());
    let d = tempfile::tempdir().unwrap();
    let out = run_fn(
        &runner(Duration::from_secs(10), 1 << 20),
        d.path(),
        "#!/bin/sh\nif env | grep -v -E '^(PATH|HOME|TMPDIR|PWD|DECLARED)=' >&2; then exit 1; fi\n[ \"$DECLARED\" = yes ] || exit 2\ncase \"$PWD\" in */krmsync-fn-*/work) ;; *) exit 3;; esac\n[ -z \"$(ls -A)\" ] || exit 4\ncat\n",
        "        envs: [DECLARED=yes]\n",
    );
    assert!(out.is_ok(), "{out:?}");
}

#[test]
fn require_sandbox_refuses_legacy_plugins() {
    let _serial = serial();
    let r = runner(Duration::from_secs(10), 1 << 20);
    let e = r
        .run_legacy_plugin(krmsync::kustomize::function::LegacyPluginCall {
            path: Path::new("/bin/true"),
            args: &[],
            config: "",
            config_root: Path::new("/"),
            stdin: b"",
        })
        .unwrap_err();
    assert!(e.contains("--require-sandbox"), "{e}");
}

/// One trivial function (`cat`) with and without the sandbox.
#[test]
#[ignore]
fn overhead() {
    let _serial = serial();
    let d = tempfile::tempdir().unwrap();
    let script = "#!/bin/sh\ncat\n";
    let mut with = runner(Duration::from_secs(10), 1 << 20);
    with.sandbox.as_mut().unwrap().require = false;
    let without = ProcessRunner {
        sandbox: None,
        ..runner(Duration::from_secs(10), 1 << 20)
    };
    let n = 50;
    for (what, r) in [
        ("without", &without),
        ("with", &with),
        ("without", &without),
    ] {
        run_fn(r, d.path(), script, "").unwrap();
        let start = Instant::now();
        for _ in 0..n {
            run_fn(r, d.path(), script, "").unwrap();
        }
        let per = start.elapsed() / n;
        println!("{what} sandbox: {per:?} per run ({n} runs)");
    }
}
