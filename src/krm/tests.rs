use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use super::wire::{self, ResourceList, Severity};
use super::*;
use crate::kustomize::fs::DiskFs;
use crate::kustomize::yaml::parse_documents;
use crate::kustomize::{BuildOptions, Reorder, build};

fn doc(s: &str) -> Value {
    parse_documents(s).unwrap().remove(0)
}

fn script(dir: &Path, name: &str, body: &str) {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn resource_list_round_trip_and_annotations() {
    let mut items = vec![doc(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
    )];
    wire::annotate_items(&mut items);
    let rl = ResourceList {
        items,
        function_config: Some(doc("kind: Fn\nmetadata:\n  name: f\n")),
        results: Vec::new(),
    };
    let text = rl.encode().unwrap();
    assert_eq!(
        text,
        "apiVersion: config.kubernetes.io/v1\nfunctionConfig:\n  kind: Fn\n  metadata:\n    name: f\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    annotations:\n      config.k8s.io/id: \"1\"\n      config.kubernetes.io/index: \"0\"\n      internal.config.kubernetes.io/id: \"1\"\n      internal.config.kubernetes.io/index: \"0\"\n    name: a\nkind: ResourceList\n"
    );
    let mut back = ResourceList::decode(&text).unwrap();
    assert_eq!(back.items.len(), 1);
    wire::strip_items(&mut back.items);
    assert_eq!(
        back.items[0],
        doc("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
    );
}

#[test]
fn decode_plain_stream_lists_and_results() {
    let rl = ResourceList::decode(
        "kind: A\nmetadata: {name: a}\n---\nkind: BList\nitems:\n- kind: B\n  metadata: {name: b}\n",
    )
    .unwrap();
    assert_eq!(rl.items.len(), 2);
    let rl = ResourceList::decode(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nresults:\n- message: bad replicas\n  severity: error\n  resourceRef: {kind: Deployment, name: web, namespace: prod}\n  field: {path: spec.replicas}\n- message: fyi\n",
    )
    .unwrap();
    assert_eq!(rl.results.len(), 2);
    assert_eq!(rl.results[1].severity, Severity::Info);
    let errs: Vec<String> = rl.errors().map(|r| r.to_string()).collect();
    assert_eq!(
        errs,
        ["[error] bad replicas (Deployment/web in namespace prod, field spec.replicas)"]
    );
}

fn runner() -> Arc<ProcessRunner> {
    Arc::new(ProcessRunner {
        timeout: Duration::from_secs(20),
        ..Default::default()
    })
}

fn opts(exec: bool) -> BuildOptions {
    BuildOptions {
        reorder: Some(Reorder::None),
        enable_alpha_plugins: true,
        enable_exec: exec,
        function_runner: Some(runner()),
        ..Default::default()
    }
}

/// Functions run unconfined in the kustomization directory (they may
/// leave files there for the test to inspect).
fn opts_unsandboxed() -> BuildOptions {
    BuildOptions {
        function_runner: Some(Arc::new(ProcessRunner {
            timeout: Duration::from_secs(20),
            sandbox: None,
            ..Default::default()
        })),
        ..opts(true)
    }
}

fn run_build(dir: &Path, o: &BuildOptions) -> Result<String, String> {
    build(Arc::new(DiskFs::new()), dir, o)
        .and_then(|r| r.to_yaml())
        .map_err(|e| e.message)
}

#[test]
fn exec_transformer_sees_resource_list_and_edits_items() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    // Echo the input to a file (for inspection) and rename every ConfigMap's
    // data value with sed: a ResourceList comes back.
    script(
        dir,
        "fn.sh",
        "#!/bin/sh\ntee input.yaml | sed 's/value: one/value: two/'\n",
    );
    std::fs::write(
        dir.join("kustomization.yaml"),
        "resources: [cm.yaml]\ntransformers: [fn.yaml]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  value: one\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("fn.yaml"),
        "apiVersion: example.com/v1\nkind: Fn\nmetadata:\n  name: f\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: ./fn.sh\n",
    )
    .unwrap();
    let out = run_build(dir, &opts_unsandboxed()).unwrap();
    assert_eq!(
        out,
        "apiVersion: v1\ndata:\n  value: two\nkind: ConfigMap\nmetadata:\n  name: c\n"
    );
    let input = std::fs::read_to_string(dir.join("input.yaml")).unwrap();
    assert!(
        input.starts_with("apiVersion: config.kubernetes.io/v1\n"),
        "{input}"
    );
    assert!(input.contains("\nkind: ResourceList\n"), "{input}");
    assert!(
        input.contains("config.kubernetes.io/index: \"0\""),
        "{input}"
    );
    assert!(input.contains("kustomize.config.k8s.io/id: |"), "{input}");
    assert!(
        input.contains("config.kubernetes.io/local-config: \"true\""),
        "{input}"
    );
    // Without --enable-exec the function is skipped, as in kustomize.
    let out = run_build(dir, &opts(false)).unwrap();
    assert!(out.contains("value: one"), "{out}");
}

#[test]
fn failing_function_names_itself_and_its_stderr() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    script(dir, "fn.sh", "#!/bin/sh\necho 'no way' >&2\nexit 3\n");
    std::fs::write(dir.join("kustomization.yaml"), "generators: [fn.yaml]\n").unwrap();
    std::fs::write(
        dir.join("fn.yaml"),
        "kind: Gen\nmetadata:\n  name: g\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: ./fn.sh\n",
    )
    .unwrap();
    let e = run_build(dir, &opts(true)).unwrap_err();
    assert!(e.contains("couldn't execute function"), "{e}");
    assert!(e.contains("kind: Gen, name: g"), "{e}");
    assert!(e.contains("exit status 3"), "{e}");
    assert!(e.contains("no way"), "{e}");
    // Results of severity error fail the build even with exit 0.
    script(
        dir,
        "fn.sh",
        "#!/bin/sh\ncat <<EOF\napiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nresults:\n- message: missing field\n  severity: error\nEOF\n",
    );
    let e = run_build(dir, &opts(true)).unwrap_err();
    assert!(e.contains("[error] missing field"), "{e}");
}

#[test]
fn clean_environment_timeout_and_output_cap() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().to_path_buf();
    script(&dir, "env.sh", "#!/bin/sh\nenv\n");
    // SAFETY-free check: a variable set in the test process is not seen.
    let out = process::run(
        process::Run {
            program: dir.join("env.sh"),
            env: clean_env(),
            dir: dir.clone(),
            ..Default::default()
        },
        Duration::from_secs(10),
        1 << 20,
    )
    .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("PATH="), "{text}");
    assert!(!text.contains("CARGO_PKG_NAME"), "{text}");
    script(&dir, "slow.sh", "#!/bin/sh\nsleep 5\n");
    let e = process::run(
        process::Run {
            program: dir.join("slow.sh"),
            env: clean_env(),
            dir: dir.clone(),
            ..Default::default()
        },
        Duration::from_millis(200),
        1 << 20,
    )
    .unwrap_err();
    assert!(e.contains("timed out"), "{e}");
    script(&dir, "big.sh", "#!/bin/sh\nhead -c 100000 /dev/zero\n");
    let e = process::run(
        process::Run {
            program: dir.join("big.sh"),
            env: clean_env(),
            dir,
            ..Default::default()
        },
        Duration::from_secs(10),
        1000,
    )
    .unwrap_err();
    assert!(e.contains("more than 1000 bytes"), "{e}");
}

#[test]
fn legacy_generator_from_plugin_home() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("home");
    let pdir = home.join("example.com/v1/gen");
    std::fs::create_dir_all(&pdir).unwrap();
    script(
        &pdir,
        "Gen",
        "#!/bin/sh\ncat <<EOF\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: $2\n  annotations:\n    kustomize.config.k8s.io/needs-hash: \"true\"\ndata:\n  cfg: $(basename $1 | cut -c1-19)\nEOF\n",
    );
    let k = d.path().join("k");
    std::fs::create_dir_all(&k).unwrap();
    std::fs::write(k.join("kustomization.yaml"), "generators: [g.yaml]\n").unwrap();
    std::fs::write(
        k.join("g.yaml"),
        "apiVersion: example.com/v1\nkind: Gen\nmetadata:\n  name: x\nargsOneLiner: one made\n",
    )
    .unwrap();
    let mut o = opts(false);
    o.function_runner = Some(Arc::new(ProcessRunner {
        plugin_home: Some(home),
        ..Default::default()
    }));
    let out = run_build(&k, &o).unwrap();
    assert!(
        out.starts_with("apiVersion: v1\ndata:\n  cfg: kust-plugin-config-\n"),
        "{out}"
    );
    assert!(out.contains("name: one-"), "{out}");
    // Without a runner the build refuses external plugins.
    o.function_runner = None;
    let e = run_build(&k, &o).unwrap_err();
    assert!(e.contains("no function runner"), "{e}");
}

#[test]
fn container_without_cli_names_the_image() {
    let r = ProcessRunner::default();
    let spec = FunctionSpec::Container(ContainerSpec {
        image: "example.com/fn:1".into(),
        ..Default::default()
    });
    let e = r
        .run_function(FunctionCall {
            spec: &spec,
            name: "api: v1, kind: F, name: f",
            function_config: &doc("kind: F\n"),
            items: Vec::new(),
            working_dir: Path::new("/"),
        })
        .unwrap_err();
    assert!(e.contains("example.com/fn:1"), "{e}");
}

#[test]
fn a_program_still_open_for_writing_starts_once_it_is_closed() {
    // A function binary written just now can be held open by a process
    // another thread is starting (an inherited descriptor, until that
    // process execs): exec then fails with ETXTBSY for a moment.
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().to_path_buf();
    let program = dir.join("late.sh");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o755)
        .open(&program)
        .unwrap();
    f.write_all(b"#!/bin/sh\necho started\n").unwrap();
    let closer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        drop(f);
    });
    let out = process::run(
        process::Run {
            program,
            env: clean_env(),
            dir,
            ..Default::default()
        },
        Duration::from_secs(10),
        1 << 20,
    )
    .unwrap();
    closer.join().unwrap();
    assert_eq!(out.stdout, b"started\n");
}

/// `--env`, `--mount` and `--as-current-user` reach the container CLI:
/// the command line's variables after the spec's (so they win, as in
/// kustomize), its mounts after the spec's, the current uid:gid.
#[test]
fn command_line_envs_mounts_and_user_reach_the_container_cli() {
    let d = tempfile::tempdir().unwrap();
    let args_file = d.path().join("args");
    script(
        d.path(),
        "docker",
        &format!(
            "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done > '{}'\ncat\n",
            args_file.display()
        ),
    );
    let r = ProcessRunner {
        container_cli: Some(d.path().join("docker")),
        container_envs: vec!["A=cli".into(), "C".into()],
        container_mounts: vec![StorageMount {
            mount_type: "bind".into(),
            src: "/data/in".into(),
            dst: "/in".into(),
            rw: false,
        }],
        as_current_user: true,
        ..Default::default()
    };
    let spec = FunctionSpec::Container(ContainerSpec {
        image: "example.com/fn:1".into(),
        envs: vec!["A=spec".into(), "B".into()],
        ..Default::default()
    });
    let out = r
        .run_function(FunctionCall {
            spec: &spec,
            name: "api: v1, kind: F, name: f",
            function_config: &doc("kind: F\n"),
            items: vec![doc(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
            )],
            working_dir: d.path(),
        })
        .unwrap();
    assert_eq!(out.len(), 1);
    let args = std::fs::read_to_string(&args_file).unwrap();
    let args: Vec<&str> = args.lines().collect();
    let envs: Vec<&str> = args
        .windows(2)
        .filter(|w| w[0] == "-e")
        .map(|w| w[1])
        .collect();
    assert_eq!(envs, ["A=spec", "B", "A=cli", "C"]);
    assert!(
        args.contains(&"type=bind,source=/data/in,target=/in,readonly"),
        "{args:?}"
    );
    let user = format!(
        "--user={}:{}",
        rustix::process::getuid().as_raw(),
        rustix::process::getgid().as_raw()
    );
    assert!(args.contains(&user.as_str()), "{args:?}");
    assert!(!args.contains(&"--user=nobody"), "{args:?}");
    assert_eq!(args.last(), Some(&"example.com/fn:1"));
}

#[test]
fn mount_flags_parse_as_kustomize_spells_them() {
    let cwd = Path::new("/work/dir");
    let m = StorageMount::from_flag("type=bind,src=data,dst=/in", cwd).unwrap();
    assert_eq!(
        m,
        StorageMount {
            mount_type: "bind".into(),
            src: "/work/dir/data".into(),
            dst: "/in".into(),
            rw: false,
        }
    );
    let m = StorageMount::from_flag("type=volume, source=/abs ,target=/out,rw=true", cwd).unwrap();
    assert_eq!(
        (m.src.as_str(), m.dst.as_str(), m.rw),
        ("/abs", "/out", true)
    );
    let e = StorageMount::from_flag("type=bind,dst=/in", cwd).unwrap_err();
    assert!(e.contains("needs src and dst"), "{e}");
}
