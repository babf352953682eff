//! Function catalogs (KEP-2906) through the `krmsync` binary: trusted
//! resolution, sha256 pinning, `catalog fetch` (against a local wiremock
//! server) and `catalog view`. The functions are shell scripts the tests
//! write into temporary directories.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sha2::{Digest, Sha256};

fn krmsync() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_krmsync"));
    // never the user's cache
    c.env("XDG_CACHE_HOME", "/nonexistent-krmsync-test-cache");
    c
}

/// `krmsync build app --trusted-catalog app/catalog.yaml` in `dir`.
fn build_trusted(dir: &Path) -> Output {
    krmsync()
        .current_dir(dir)
        .args(["build", "app", "--trusted-catalog", "app/catalog.yaml"])
        .output()
        .unwrap()
}

fn sha(data: &[u8]) -> String {
    format!("{:x}", Sha256::digest(data))
}

fn host() -> (String, String) {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        o => o,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        a => a,
    };
    (os.to_string(), arch.to_string())
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("krmsync-catalog-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d.canonicalize().unwrap()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A generator function: writes `marker` (if given), emits a ConfigMap
/// whose name comes from the function config's `spec.greeting`.
fn generator_script(marker: Option<&Path>) -> String {
    let touch = marker
        .map(|m| format!("echo ran > '{}'\n", m.display()))
        .unwrap_or_default();
    format!(
        "#!/bin/sh\n{touch}name=$(sed -n 's/^ *greeting: *//p' | head -n 1)\ncat <<OUT\napiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: $name\n  data:\n    from: catalog\nOUT\n"
    )
}

/// A catalog with one exec function `example.com/v1 Greeter`.
fn catalog_yaml(uri: &str, hex: &str) -> String {
    let (os, arch) = host();
    format!(
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: example-functions\nspec:\n  krmFunctions:\n  - group: example.com\n    names:\n      kind: Greeter\n    publisher: example.com\n    versions:\n    - name: v1\n      runtime:\n        exec:\n          platforms:\n          - bin: greeter\n            os: {os}\n            arch: {arch}\n            uri: {uri}\n            sha256: {hex}\n"
    )
}

const GEN_CONFIG: &str = "apiVersion: example.com/v1\nkind: Greeter\nmetadata:\n  name: g\nspec:\n  greeting: hello-from-catalog\n";

/// `dir/app`: a kustomization with `catalogs: [catalog.yaml]` and the
/// Greeter as a generator; the script at `dir/app/bin/greeter`.
fn app(dir: &Path, script: &str, pinned: &str) -> PathBuf {
    let app = dir.join("app");
    write(&app.join("bin/greeter"), script);
    write(
        &app.join("catalog.yaml"),
        &catalog_yaml("bin/greeter", pinned),
    );
    write(&app.join("greeter.yaml"), GEN_CONFIG);
    write(
        &app.join("kustomization.yaml"),
        "catalogs:\n- catalog.yaml\ngenerators:\n- greeter.yaml\n",
    );
    app
}

#[test]
fn a_function_resolved_through_a_trusted_catalog_runs() {
    let d = scratch("runs");
    let script = generator_script(None);
    let app = app(&d, &script, &sha(script.as_bytes()));
    // no --enable-alpha-plugins / --enable-exec: trusting the catalog is the opt-in
    let out = build_trusted(&d);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stdout,
        "apiVersion: v1\ndata:\n  from: catalog\nkind: ConfigMap\nmetadata:\n  name: hello-from-catalog\n"
    );
    // trusted by the catalog's content digest, from another directory
    let digest = sha(&std::fs::read(app.join("catalog.yaml")).unwrap());
    let out = krmsync()
        .arg("build")
        .arg(&app)
        .args(["--trusted-catalog", &format!("sha256:{digest}")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_binary_from_the_function_cache_runs_in_a_component() {
    let d = scratch("cache");
    let script = generator_script(None);
    let hex = sha(script.as_bytes());
    let cache = d.join("cache");
    write(&cache.join("sha256").join(&hex), &script);
    // a remote uri: the binary must come from the cache
    write(
        &d.join("comp/catalog.yaml"),
        &catalog_yaml("https://example.invalid/greeter.tar.gz", &hex),
    );
    write(&d.join("comp/greeter.yaml"), GEN_CONFIG);
    write(
        &d.join("comp/kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\ncatalogs: [catalog.yaml]\ngenerators: [greeter.yaml]\n",
    );
    write(
        &d.join("app/kustomization.yaml"),
        "namePrefix: p-\ncomponents: [../comp]\n",
    );
    let run = |cache: &Path| {
        krmsync()
            .current_dir(&d)
            .args(["build", "app"])
            .args(["--trusted-catalog", "comp/catalog.yaml", "--function-cache"])
            .arg(cache)
            .output()
            .unwrap()
    };
    let out = run(&cache);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("name: p-hello-from-catalog"), "{stdout}");
    // a missing binary is a clear error
    let out = run(&d.join("empty-cache"));
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("binary 'greeter'")
            && stderr.contains(&format!("sha256:{hex}) is missing"))
            && stderr.contains("krmsync catalog fetch"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_untrusted_catalog_is_refused() {
    let d = scratch("untrusted");
    let marker = d.join("ran");
    let script = generator_script(Some(&marker));
    let app = app(&d, &script, &sha(script.as_bytes()));
    write(&d.join("other.yaml"), &catalog_yaml("x", &"0".repeat(64)));
    for extra in [vec![], vec!["--trusted-catalog", "other.yaml"]] {
        let out = krmsync()
            .current_dir(&d)
            .args(["build", "app", "--enable-alpha-plugins", "--enable-exec"])
            .args(&extra)
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        assert!(!out.status.success());
        assert!(stdout.is_empty(), "{stdout}");
        assert!(
            stderr.contains("catalog 'catalog.yaml'")
                && stderr.contains(&app.join("catalog.yaml").display().to_string())
                && stderr.contains("is not trusted"),
            "{stderr}"
        );
    }
    assert!(!marker.exists(), "a function of an untrusted catalog ran");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_binary_with_the_wrong_sha256_never_executes() {
    let d = scratch("mismatch");
    let marker = d.join("ran");
    let script = generator_script(Some(&marker));
    let wrong = sha(b"something else");
    let _ = app(&d, &script, &wrong);
    let out = krmsync()
        .current_dir(&d)
        .args(["build", "app", "--trusted-catalog", "app/catalog.yaml"])
        .args(["--enable-alpha-plugins", "--enable-exec"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("kind: Greeter, name: g")
            && stderr.contains(&format!("pins sha256:{wrong}"))
            && stderr.contains(&format!("the binary is sha256:{}", sha(script.as_bytes()))),
        "{stderr}"
    );
    assert!(!marker.exists(), "the mismatching binary ran");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn remote_catalogs_and_unknown_kinds_are_errors() {
    let d = scratch("remote");
    write(
        &d.join("kustomization.yaml"),
        "catalogs: [https://example.com/catalog.yaml]\n",
    );
    let out = krmsync().arg("build").arg(&d).output().unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("catalog 'https://example.com/catalog.yaml' is a remote reference")
            && stderr.contains("localize it first"),
        "{stderr}"
    );
    // a kind no catalog defines, and no runtime annotation
    let script = generator_script(None);
    let app = app(&d, &script, &sha(script.as_bytes()));
    write(
        &app.join("greeter.yaml"),
        "apiVersion: example.com/v1\nkind: Stranger\nmetadata:\n  name: s\n",
    );
    let out = build_trusted(&d);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("no catalog of this layer (catalog.yaml) defines example.com/v1 Stranger"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

fn tar_gz(name: &str, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let gz = flate2::write::GzEncoder::new(&mut out, flate2::Compression::default());
        let mut b = tar::Builder::new(gz);
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o755);
        h.set_cksum();
        b.append_data(&mut h, name, data).unwrap();
        b.into_inner().unwrap().finish().unwrap();
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_fetch_stores_verified_binaries_only() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let server = MockServer::start().await;
    assert!(server.uri().starts_with("http://127.0.0.1:"));
    let good = generator_script(None);
    let good_hex = sha(good.as_bytes());
    let raw = b"#!/bin/sh\necho raw\n".to_vec();
    let raw_hex = sha(&raw);
    Mock::given(method("GET"))
        .and(path("/greeter.tar.gz"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(tar_gz("greeter", good.as_bytes())))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/raw"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(raw.clone()))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/evil"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(b"#!/bin/sh\nrm -rf /\n".to_vec()))
        .mount(&server)
        .await;
    let d = scratch("fetch");
    let cache = d.join("cache");
    let (os, arch) = host();
    let pinned_bad = sha(b"what the publisher built");
    let uri = server.uri();
    write(
        &d.join("catalog.yaml"),
        &format!(
            "apiVersion: krmsync.dev/v1alpha1\nkind: Catalog\nmetadata: {{name: fetched}}\nspec:\n  krmFunctions:\n  - group: example.com\n    names: {{kind: Greeter}}\n    versions:\n    - name: v1\n      runtime:\n        exec:\n          platforms:\n          - {{bin: greeter, os: {os}, arch: {arch}, uri: '{uri}/greeter.tar.gz', sha256: '{good_hex}'}}\n          - {{bin: other, os: windows, arch: arm64, uri: '{uri}/raw', sha256: '{raw_hex}'}}\n  - group: example.com\n    names: {{kind: Evil}}\n    versions:\n    - name: v1\n      runtime:\n        exec:\n          platforms:\n          - {{bin: evil, os: {os}, arch: {arch}, uri: '{uri}/evil', sha256: '{pinned_bad}'}}\n"
        ),
    );
    let d2 = d.clone();
    let cache2 = cache.clone();
    let out = tokio::task::spawn_blocking(move || {
        krmsync()
            .current_dir(&d2)
            .args(["catalog", "fetch", "catalog.yaml", "--function-cache"])
            .arg(&cache2)
            .args([
                "--platform",
                &format!("{os}/{arch}"),
                "--platform",
                "windows/arm64",
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "the bad digest must fail the fetch");
    assert!(
        stdout.contains(&format!(
            "Greeter {}/{}: fetched sha256:{good_hex}",
            host().0,
            host().1
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("windows/arm64: fetched sha256:{raw_hex}")),
        "{stdout}"
    );
    assert!(
        stderr.contains("Evil")
            && stderr.contains(&format!("the catalog pins sha256:{pinned_bad}"))
            && stderr.contains("not stored"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(cache.join("sha256").join(&good_hex)).unwrap(),
        good.as_bytes()
    );
    assert_eq!(
        std::fs::read(cache.join("sha256").join(&raw_hex)).unwrap(),
        raw
    );
    let stored: Vec<_> = std::fs::read_dir(cache.join("sha256"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(stored.len(), 2, "{stored:?}");
    assert!(!cache.join("sha256").join(&pinned_bad).exists());

    // the fetched binary now runs in a build, from the cache
    write(&d.join("greeter.yaml"), GEN_CONFIG);
    write(
        &d.join("kustomization.yaml"),
        "catalogs: [catalog.yaml]\ngenerators: [greeter.yaml]\n",
    );
    let d3 = d.clone();
    let out = tokio::task::spawn_blocking(move || {
        krmsync()
            .current_dir(&d3)
            .args([
                "build",
                ".",
                "--trusted-catalog",
                "catalog.yaml",
                "--function-cache",
            ])
            .arg(d3.join("cache"))
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("name: hello-from-catalog"), "{stdout}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn catalog_fetch_refuses_plain_http_to_other_hosts() {
    let d = scratch("http");
    write(
        &d.join("catalog.yaml"),
        &catalog_yaml("http://example.com/greeter", &sha(b"x")),
    );
    let out = krmsync()
        .current_dir(&d)
        .args([
            "catalog",
            "fetch",
            "catalog.yaml",
            "--function-cache",
            "cache",
        ])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(stderr.contains("only https:// is fetched"), "{stderr}");
    assert!(!d.join("cache/sha256").exists());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn catalog_view_shows_functions_digests_and_binaries() {
    let d = scratch("view");
    let script = generator_script(None);
    let hex = sha(script.as_bytes());
    let app = app(&d, &script, &hex);
    let (os, arch) = host();
    write(
        &d.join("more.yaml"),
        &format!(
            "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata: {{name: more}}\nspec:\n  krmFunctions:\n  - group: example.com\n    kind: Boxed\n    publisher: boxes.example\n    versions:\n    - name: v2\n    runtime:\n      container: {{image: 'ghcr.io/example/boxed:v2', requireNetwork: true}}\n  - group: example.com\n    names: {{kind: Cached}}\n    versions:\n    - name: v1\n      runtime:\n        exec:\n          platforms:\n          - {{bin: c, os: {os}, arch: {arch}, uri: 'https://example.invalid/c', sha256: '{}'}}\n",
            "a".repeat(64)
        ),
    );
    // view with no files: the catalogs of ./kustomization.yaml
    let out = krmsync()
        .current_dir(&app)
        .args(["catalog", "view"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let catalog_digest = sha(&std::fs::read(app.join("catalog.yaml")).unwrap());
    assert!(
        stdout.starts_with(
            "Catalog example-functions (config.kubernetes.io/v1alpha1) ./catalog.yaml\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("file sha256:{catalog_digest}")),
        "{stdout}"
    );
    let row = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("Greeter"))
        .unwrap();
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cols,
        [
            "Greeter",
            "example.com",
            "v1",
            "example.com",
            "exec",
            &format!("{os}/{arch}"),
            &format!("sha256:{}", &hex[..12]),
            "verified"
        ],
        "{stdout}"
    );
    // the sandbox's own probe: which protections hold on this kernel
    assert!(stdout.contains("Sandbox:\n  landlock: "), "{stdout}");
    assert!(
        stdout.contains("  seccomp: ") && stdout.contains("  rlimits: "),
        "{stdout}"
    );

    let out = krmsync()
        .current_dir(&d)
        .args([
            "catalog",
            "view",
            "more.yaml",
            "--function-cache",
            "nocache",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let header = stdout.lines().nth(2).unwrap();
    for col in [
        "KIND",
        "GROUP",
        "VERSION",
        "PUBLISHER",
        "RUNTIME",
        "PLATFORMS",
        "DIGEST",
        "BINARY",
    ] {
        assert!(header.contains(col), "{header}");
    }
    let boxed = stdout.lines().find(|l| l.contains("Boxed")).unwrap();
    assert!(
        boxed.contains("boxes.example")
            && boxed.contains("container")
            && boxed.contains("UNPINNED (will not run)")
            && boxed.contains("ghcr.io/example/boxed:v2 (requires network)"),
        "{stdout}"
    );
    let cached = stdout.lines().find(|l| l.contains("Cached")).unwrap();
    assert!(cached.trim_end().ends_with("missing"), "{stdout}");
    assert!(stdout.contains("Function cache: nocache"), "{stdout}");
    // an invalid catalog is an error naming the file and field
    write(
        &d.join("bad.yaml"),
        &catalog_yaml("https://x/y", "0").replace("sha256: 0\n", ""),
    );
    let out = krmsync()
        .current_dir(&d)
        .args(["catalog", "view", "bad.yaml"])
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains(
            "bad.yaml: spec.krmFunctions[0].versions[0].runtime.exec.platforms[0].sha256: required"
        ),
        "{stderr}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn catalog_transformers_run_while_annotated_exec_functions_still_need_the_flags() {
    let d = scratch("transformer");
    let app = d.join("app");
    let labeler = "#!/bin/sh\ncat >/dev/null\ncat <<OUT\napiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n    labels:\n      labelled-by: catalog\nOUT\n";
    write(&app.join("bin/labeler"), labeler);
    let cat = catalog_yaml("bin/labeler", &sha(labeler.as_bytes())).replace("Greeter", "Labeler");
    write(&app.join("catalog.yaml"), &cat);
    write(
        &app.join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
    );
    write(
        &app.join("labeler.yaml"),
        "apiVersion: example.com/v1\nkind: Labeler\nmetadata:\n  name: l\n",
    );
    // an explicitly annotated exec function: skipped without --enable-exec
    let marker = d.join("annotated-ran");
    write(
        &app.join("annotated.sh"),
        &format!("#!/bin/sh\necho ran > '{}'\ncat\n", marker.display()),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        app.join("annotated.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    write(
        &app.join("annotated.yaml"),
        "apiVersion: example.com/v1\nkind: Annotated\nmetadata:\n  name: x\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: ./annotated.sh\n",
    );
    write(
        &app.join("kustomization.yaml"),
        "catalogs: [catalog.yaml]\nresources: [cm.yaml]\ntransformers: [labeler.yaml]\n",
    );
    let out = build_trusted(&d);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("labelled-by: catalog"), "{stdout}");
    write(
        &app.join("kustomization.yaml"),
        "catalogs: [catalog.yaml]\nresources: [cm.yaml]\ntransformers: [labeler.yaml, annotated.yaml]\n",
    );
    let out = build_trusted(&d);
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains("external plugins disabled; unable to load external plugin 'Annotated'"),
        "{stderr}"
    );
    assert!(!marker.exists());
    std::fs::remove_dir_all(&d).unwrap();
}

/// The README walkthrough on the CLI: `examples/functions/app`, pinned as
/// `examples/functions/pin.sh` pins it, with the example functions built
/// with the crate; then the same tree with a binary of another build.
#[test]
fn the_example_functions_walkthrough_builds() {
    let set_labels = env!("CARGO_BIN_EXE_krmsync-fn-set-labels");
    let hello = env!("CARGO_BIN_EXE_krmsync-fn-hello-generator");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/functions");
    let d = scratch("walkthrough");
    let app = d.join("app");
    std::fs::create_dir_all(app.join("bin")).unwrap();
    for f in [
        "kustomization.yaml",
        "deployment.yaml",
        "hello.yaml",
        "labels.yaml",
    ] {
        std::fs::copy(examples.join("app").join(f), app.join(f)).unwrap();
    }
    std::fs::copy(set_labels, app.join("bin/krmsync-fn-set-labels")).unwrap();
    std::fs::copy(hello, app.join("bin/krmsync-fn-hello-generator")).unwrap();
    let (os, arch) = host();
    let pin = |set_labels_sha: &str| {
        let t = std::fs::read_to_string(examples.join("catalog.template.yaml")).unwrap();
        write(
            &app.join("catalog.yaml"),
            &t.replace("@OS@", &os)
                .replace("@ARCH@", &arch)
                .replace("@SET_LABELS_SHA256@", set_labels_sha)
                .replace("@HELLO_SHA256@", &sha(&std::fs::read(hello).unwrap())),
        );
    };
    pin(&sha(&std::fs::read(set_labels).unwrap()));
    let out = build_trusted(&d);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let docs: Vec<serde_json::Value> = stdout
        .split("\n---\n")
        .map(|d| serde_saphyr::from_str(d).unwrap())
        .collect();
    assert_eq!(docs.len(), 2, "{stdout}");
    let cm = docs.iter().find(|d| d["kind"] == "ConfigMap").unwrap();
    assert!(
        cm["metadata"]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("hello-") && n.len() == "hello-".len() + 10),
        "{cm}"
    );
    assert_eq!(cm["data"]["greeting"], "Hello from a catalog function");
    for doc in &docs {
        assert_eq!(doc["metadata"]["labels"]["team"], "web", "{doc}");
        assert_eq!(doc["metadata"]["labels"]["rendered-by"], "krmsync");
    }
    // a catalog pinning another build refuses the binary
    pin(&sha(b"another build"));
    let out = build_trusted(&d);
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success() && stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("sha256 mismatch"), "{stderr}");
    std::fs::remove_dir_all(&d).unwrap();
}
