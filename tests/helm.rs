//! `krmsync build --enable-helm`: charts rendered by the helm program,
//! driven the way kustomize drives it. A stand-in `helm` (a shell script)
//! records what it was given and answers with resources built from it, so
//! the tests see the arguments, the values file and the environment.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A stand-in for helm 3. `template` prints a ConfigMap holding its
/// arguments, the values file it got and `HELM_CONFIG_HOME`, then the
/// chart's `templates/` files; `FAKE_HELM_VERSION` and `FAKE_HELM_FAIL`
/// change its answers.
const FAKE_HELM: &str = r#"#!/bin/sh
case "$1" in
version) echo "${FAKE_HELM_VERSION:-v3.14.2+gc309b6f}"; exit 0 ;;
template) ;;
*) echo "unexpected: $*" >&2; exit 2 ;;
esac
if [ -n "$FAKE_HELM_FAIL" ]; then echo "Error: chart is broken" >&2; exit 1; fi
values=""; chart=""; prev=""
for a in "$@"; do
  if [ "$prev" = "-f" ] && [ -z "$values" ]; then values="$a"; fi
  case "$a" in /*) if [ -z "$chart" ] && [ -d "$a" ]; then chart="$a"; fi ;; esac
  prev="$a"
done
echo "$values" > "$FAKE_HELM_LOG"
echo "$*" > "$FAKE_HELM_LOG.args"
echo "---"
echo "apiVersion: v1"
echo "kind: ConfigMap"
echo "metadata:"
echo "  name: helm-call"
echo "data:"
printf '  args: "%s"\n' "$*"
printf '  configHome: "%s"\n' "$HELM_CONFIG_HOME"
echo "  values: |"
sed 's/^/    /' "$values"
for t in "$chart"/templates/*.yaml; do echo "---"; cat "$t"; done
"#;

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    helm: PathBuf,
    log: PathBuf,
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn fixture(kustomization: &str) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let helm = base.join("bin/helm");
    write(&helm, FAKE_HELM);
    std::fs::set_permissions(&helm, std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = base.join("app");
    write(&root.join("kustomization.yaml"), kustomization);
    write(
        &root.join("charts/web/Chart.yaml"),
        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
    );
    write(
        &root.join("charts/web/values.yaml"),
        "replicas: 1\nimage:\n  repository: nginx\n  tag: \"1.25\"\n",
    );
    write(
        &root.join("charts/web/templates/deployment.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n",
    );
    Fixture {
        _dir: dir,
        log: base.join("helm.log"),
        root,
        helm,
    }
}

fn build(f: &Fixture, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_krmsync"));
    c.arg("build")
        .arg(&f.root)
        .args(args)
        .env("FAKE_HELM_LOG", &f.log)
        .env("HOME", f.root.parent().unwrap());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn enabled(f: &Fixture) -> Vec<String> {
    vec![
        "--enable-helm".into(),
        "--helm-command".into(),
        f.helm.to_string_lossy().into_owned(),
    ]
}

fn run_enabled(f: &Fixture, env: &[(&str, &str)]) -> Output {
    let args = enabled(f);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    build(f, &args, env)
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "build failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn failure(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(1), "expected a failure");
    assert!(o.stdout.is_empty(), "output on failure");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_chart_is_rendered_and_then_transformed_like_any_generated_resource() {
    let f = fixture(
        "namePrefix: dev-\nhelmCharts:\n- name: web\n  releaseName: shop\n  namespace: store\n  \
         includeCRDs: true\n  valuesInline:\n    replicas: 3\n    image:\n      tag: \"1.27\"\n",
    );
    let out = stdout(&run_enabled(&f, &[]));
    // the chart's resources, with the kustomization's prefix applied
    assert!(out.contains("name: dev-web\n"), "{out}");
    assert!(out.contains("name: dev-helm-call\n"), "{out}");
    // kustomize's arguments: release name, chart directory, namespace,
    // the values file, then the flags
    let args = std::fs::read_to_string(f.log.with_extension("log.args")).unwrap();
    let chart = f.root.join("charts/web");
    assert!(
        args.starts_with(&format!(
            "template shop {} --namespace store -f ",
            chart.display()
        )),
        "{args}"
    );
    assert!(
        args.ends_with("-kustomize-values.yaml --include-crds\n"),
        "{args}"
    );
    // inline values override the chart's, keys sorted as sigs.k8s.io/yaml writes them
    assert!(
        out.contains("    image:\n      repository: nginx\n      tag: \"1.27\"\n    replicas: 3\n"),
        "{out}"
    );
    // helm's homes live in a temporary directory that is gone afterwards
    let values = std::fs::read_to_string(&f.log).unwrap();
    let values = Path::new(values.trim());
    assert!(values.ends_with("web-kustomize-values.yaml"), "{values:?}");
    assert!(!values.exists(), "the values file was left behind");
    assert!(
        out.contains(&format!(
            "configHome: {}\n",
            values.parent().unwrap().join("helm").display()
        )),
        "{out}"
    );
}

#[test]
fn without_enable_helm_a_chart_is_an_error() {
    let f = fixture("helmCharts:\n- name: web\n");
    let err = failure(&build(&f, &[], &[]));
    assert!(err.contains("must specify --enable-helm"), "{err}");
    assert!(
        !f.log.exists(),
        "helm ran although --enable-helm was not given"
    );
}

#[test]
fn helm_failures_and_old_versions_are_reported() {
    let f = fixture("helmCharts:\n- name: web\n");
    let err = failure(&run_enabled(&f, &[("FAKE_HELM_FAIL", "1")]));
    assert!(err.contains("Error: chart is broken"), "{err}");
    assert!(err.contains("unable to run: '"), "{err}");
    assert!(err.contains(" template --generate-name "), "{err}");
    let err = failure(&run_enabled(&f, &[("FAKE_HELM_VERSION", "v2.16.1")]));
    assert!(
        err.contains("this plugin requires helm V3 but got v2.16.1"),
        "{err}"
    );
    let f = fixture("helmCharts:\n- name: web\n");
    let err = failure(&build(
        &f,
        &["--enable-helm", "--helm-command", "/nonexistent/helm"],
        &[],
    ));
    assert!(err.contains("is '/nonexistent/helm' installed?"), "{err}");
}

#[test]
fn a_chart_that_is_not_on_disk_is_not_downloaded() {
    let f =
        fixture("helmCharts:\n- name: db\n  repo: https://charts.example.com\n  version: 1.2.3\n");
    let err = failure(&run_enabled(&f, &[]));
    assert!(err.contains("krmsync does not download charts"), "{err}");
    assert!(
        err.contains("helm pull --untar --untardir ")
            && err.contains("charts/db-1.2.3 --repo https://charts.example.com db --version 1.2.3"),
        "{err}"
    );
    assert!(!f.log.exists(), "helm template ran");
}

#[test]
fn builtin_generator_configs_and_the_deprecated_field_render_too() {
    let f = fixture("generators:\n- helm.yaml\n");
    write(
        &f.root.join("helm.yaml"),
        "apiVersion: builtin\nkind: HelmChartInflationGenerator\nmetadata:\n  name: web\n\
         name: web\nreleaseName: gen\n",
    );
    let out = stdout(&run_enabled(&f, &[]));
    assert!(out.contains("args: template gen "), "{out}");
    let f = fixture("helmChartInflationGenerator:\n- chartName: web\n  releaseName: old\n");
    let out = stdout(&run_enabled(&f, &[]));
    assert!(out.contains("args: template old "), "{out}");
}

#[test]
fn helm_is_refused_when_a_sandbox_is_required() {
    let f = fixture("helmCharts:\n- name: web\n");
    let mut args = enabled(&f);
    args.push("--require-sandbox".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let err = failure(&build(&f, &args, &[]));
    assert!(err.contains("helm runs unconfined"), "{err}");
    assert!(!f.log.exists(), "helm ran");
}

#[test]
fn local_resources_of_a_chart_are_referred_to_then_dropped() {
    // checked with `kubectl kustomize --enable-helm` and the same stand-in:
    // the local ConfigMap is renamed, the Pod's reference follows, and the
    // ConfigMap is left out of the output
    let f = fixture("namePrefix: dev-\nhelmCharts:\n- name: web\n");
    write(
        &f.root.join("charts/web/templates/deployment.yaml"),
        "apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  annotations:
    config.kubernetes.io/local-config: \"yes\"
---
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  volumes:
  - name: v
    configMap:
      name: cfg
",
    );
    let out = stdout(&run_enabled(&f, &[]));
    assert!(out.contains("      name: dev-cfg\n"), "{out}");
    assert!(!out.contains("\n  name: dev-cfg\n"), "{out}");
    assert!(!out.contains("local-config"), "{out}");
}
