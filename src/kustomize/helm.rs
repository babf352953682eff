//! `helmCharts` (kustomize's builtin `HelmChartInflationGenerator`).
//!
//! The engine decides everything kustomize 5.5 decides: where the chart
//! is (`<chartHome>/<name>`, or `<chartHome>/<name>-<version>/<name>` when
//! both `version` and `repo` are set), which values file helm gets (the
//! chart's `values.yaml` or `valuesFile`, merged with `valuesInline` per
//! `valuesMerge`), the `helm template` arguments, and how its output
//! becomes resources. It never starts helm itself: a [`HelmRunner`] given
//! in [`BuildOptions::helm`](super::BuildOptions) does (the CLI's runs the
//! `helm` program, see [`crate::krm::helm`]). Without one, a kustomization
//! with charts fails as kustomize fails without `--enable-helm`.
//!
//! Unlike kustomize, a chart that is not on disk is never pulled: the
//! build fails and says where to put it (rendering opens no network
//! connection).

use std::path::PathBuf;
use std::sync::Arc;

use super::documents::parse_resources;
use super::error::{Error, ErrorKind, Result};
use super::kustomization::{HelmChart, HelmGlobals};
use super::loader::Loader;
use super::openapi::Schema;
use super::patch::merge_values;
use super::resource::Resource;
use super::yaml::{Mapping, Value, parse::parse_documents_strict, write_document};

/// kustomize's default chart home.
pub const DEFAULT_CHART_HOME: &str = "charts";

/// One argument of `helm template`: text, or the path of the values file
/// the runner writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HelmArg {
    Text(String),
    /// `-f`'s operand: the file holding [`HelmCall::values`].
    ValuesFile,
}

/// One `helm template` run.
#[derive(Clone, Debug)]
pub struct HelmCall {
    /// The chart name, for messages and the values file name
    /// (`<chart>-kustomize-values.yaml`).
    pub chart: String,
    /// The arguments after the program name, `template` first.
    pub args: Vec<HelmArg>,
    /// The values file's content.
    pub values: Vec<u8>,
    /// `helmGlobals.configHome` as written (`HELM_CONFIG_HOME`); `None`: a
    /// temporary directory of the runner's.
    pub config_home: Option<PathBuf>,
}

/// Runs helm for the engine.
pub trait HelmRunner: Send + Sync {
    /// Checks that helm is there and is version 3 (kustomize runs
    /// `helm version -c --short` before each chart).
    fn check(&self) -> std::result::Result<(), String>;
    /// Runs `helm template`; returns its standard output.
    fn template(&self, call: &HelmCall) -> std::result::Result<Vec<u8>, String>;
}

/// `--enable-helm` and the options that go with it.
#[derive(Clone)]
pub struct HelmOptions {
    pub runner: Arc<dyn HelmRunner>,
    /// `--helm-kube-version`: the `kubeVersion` of charts that set none.
    pub kube_version: String,
    /// `--helm-api-versions`: the `apiVersions` of charts that set none.
    pub api_versions: Vec<String>,
    /// `--helm-debug`: sets every chart's `debug`.
    pub debug: bool,
}

/// The values merge modes, kustomize's order.
const MERGE_MODES: [&str; 3] = ["merge", "override", "replace"];

/// The configuration kustomize prints in its "trouble configuring"
/// errors: the globals and the chart as sigs.k8s.io/yaml marshals them.
fn config_yaml(g: &HelmGlobals, c: &HelmChart) -> String {
    let mut m = Mapping::new();
    let mut put_s = |k: &str, v: &str| {
        if !v.is_empty() {
            m.insert(k.into(), Value::String(v.into()));
        }
    };
    put_s("chartHome", &g.chart_home);
    put_s("configHome", &g.config_home);
    put_s("name", &c.name);
    put_s("version", &c.version);
    put_s("repo", &c.repo);
    put_s("releaseName", &c.release_name);
    put_s("namespace", &c.namespace);
    put_s("valuesFile", &c.values_file);
    put_s("valuesMerge", &c.values_merge);
    put_s("kubeVersion", &c.kube_version);
    put_s("nameTemplate", &c.name_template);
    let list = |v: &[String]| Value::Seq(v.iter().map(|s| Value::String(s.clone())).collect());
    if !c.additional_values_files.is_empty() {
        m.insert(
            "additionalValuesFiles".into(),
            list(&c.additional_values_files),
        );
    }
    if !c.api_versions.is_empty() {
        m.insert("apiVersions".into(), list(&c.api_versions));
    }
    if !c.values_inline.is_empty() {
        m.insert("valuesInline".into(), Value::Map(c.values_inline.clone()));
    }
    for (k, b) in [
        ("includeCRDs", c.include_crds),
        ("skipHooks", c.skip_hooks),
        ("skipTests", c.skip_tests),
        ("debug", c.debug),
    ] {
        if b {
            m.insert(k.into(), Value::Bool(true));
        }
    }
    let mut out = String::new();
    if m.is_empty() {
        out.push_str("{}\n");
    } else if write_document(&mut out, &Value::Map(m)).is_err() {
        out.clear();
    }
    out
}

fn trouble(g: &HelmGlobals, c: &HelmChart, msg: impl std::fmt::Display) -> Error {
    trouble_of(ErrorKind::Invalid, g, c, msg)
}

fn trouble_of(
    kind: ErrorKind,
    g: &HelmGlobals,
    c: &HelmChart,
    msg: impl std::fmt::Display,
) -> Error {
    Error::of(
        kind,
        format!(
            "trouble configuring builtin HelmChartInflationGenerator with config: `\n{}`: {msg}",
            config_yaml(g, c)
        ),
    )
}

/// A chart ready to render: kustomize's plugin after `Config`.
struct Prepared {
    chart: HelmChart,
    /// The chart home, absolute, with `<name>-<version>` when versioned.
    home: PathBuf,
    /// The chart's directory: `<home>/<name>`.
    dir: PathBuf,
    /// `valuesFile`: as given (relative to the root), or the chart's own.
    values_file: String,
    /// `additionalValuesFiles`, absolute.
    additional: Vec<String>,
    config_home: Option<PathBuf>,
}

fn prepare(
    loader: &Loader,
    opts: &HelmOptions,
    globals: &HelmGlobals,
    chart: &HelmChart,
) -> Result<Prepared> {
    let mut c = chart.clone();
    // the command-line flags stand in for what the chart leaves unset
    // (kustomize sets them before it decodes the chart over them)
    if c.kube_version.is_empty() {
        c.kube_version = opts.kube_version.clone();
    }
    if c.api_versions.is_empty() {
        c.api_versions = opts.api_versions.clone();
    }
    if opts.debug {
        c.debug = true;
    }
    if c.name.is_empty() {
        return Err(trouble(globals, chart, "chart name cannot be empty"));
    }
    let chart_home = if globals.chart_home.is_empty() {
        DEFAULT_CHART_HOME
    } else {
        globals.chart_home.as_str()
    };
    let mut home = loader.join(chart_home);
    if !c.version.is_empty() && !c.repo.is_empty() {
        home = home.join(format!("{}-{}", c.name, c.version));
    }
    for f in std::iter::once(&c.values_file).chain(&c.additional_values_files) {
        if f.starts_with("https://") || f.starts_with("http://") {
            // kustomize would download it; rendering never does
            return Err(Error::remote(format!(
                "helm chart '{}': values file '{f}' is remote: krmsync does not download \
                 files while rendering; localize the kustomization first (krmsync localize \
                 downloads it)",
                c.name
            )));
        }
    }
    let dir = home.join(&c.name);
    let values_file = if c.values_file.is_empty() {
        dir.join("values.yaml").to_string_lossy().into_owned()
    } else {
        c.values_file.clone()
    };
    let mut additional = Vec::new();
    for f in &c.additional_values_files {
        loader.read(f).map_err(|e| {
            trouble(
                globals,
                chart,
                format!("could not load additionalValuesFile: {}", e.message),
            )
        })?;
        additional.push(loader.join(f).to_string_lossy().into_owned());
    }
    if !c.values_merge.is_empty() && !MERGE_MODES.contains(&c.values_merge.as_str()) {
        return Err(trouble(
            globals,
            chart,
            format!("valuesMerge must be one of [{}]", MERGE_MODES.join(" ")),
        ));
    }
    if c.values_merge.is_empty() {
        c.values_merge = "override".into();
    }
    // passed to helm as written: a relative path is read by helm against
    // the working directory, as with kustomize
    let config_home =
        (!globals.config_home.is_empty()).then(|| PathBuf::from(&globals.config_home));
    Ok(Prepared {
        chart: c,
        home,
        dir,
        values_file,
        additional,
        config_home,
    })
}

/// kustomize's `AsHelmArgs`.
fn template_args(p: &Prepared) -> Vec<HelmArg> {
    let c = &p.chart;
    let t = |s: &str| HelmArg::Text(s.to_string());
    let mut args = vec![t("template")];
    if c.release_name.is_empty() {
        args.push(t("--generate-name"));
    } else {
        args.push(t(&c.release_name));
    }
    args.push(t(&p.dir.to_string_lossy()));
    if !c.namespace.is_empty() {
        args.extend([t("--namespace"), t(&c.namespace)]);
    }
    if !c.name_template.is_empty() {
        args.extend([t("--name-template"), t(&c.name_template)]);
    }
    args.extend([t("-f"), HelmArg::ValuesFile]);
    for f in &p.additional {
        args.extend([t("-f"), t(f)]);
    }
    for v in &c.api_versions {
        args.extend([t("--api-versions"), t(v)]);
    }
    if !c.kube_version.is_empty() {
        args.extend([t("--kube-version"), t(&c.kube_version)]);
    }
    for (flag, on) in [
        ("--include-crds", c.include_crds),
        ("--skip-tests", c.skip_tests),
        ("--no-hooks", c.skip_hooks),
        ("--debug", c.debug),
    ] {
        if on {
            args.push(t(flag));
        }
    }
    args
}

/// The values file helm gets: the chart's (or `valuesFile`) as is, or,
/// with `valuesInline`, the merge of the two (`override`: inline values
/// win; `merge`: the file's win; `replace`: only the inline values),
/// written as sigs.k8s.io/yaml writes a map.
fn values(loader: &Loader, p: &Prepared, schema: &Schema) -> Result<Vec<u8>> {
    let c = &p.chart;
    if c.values_inline.is_empty() {
        return loader.read(&p.values_file);
    }
    let inline = Value::Map(c.values_inline.clone());
    let merged = if c.values_merge == "replace" {
        inline
    } else {
        let text = loader.read_string(&p.values_file)?;
        let file = parse_documents_strict(&text)
            .map_err(|e| {
                Error::invalid(format!(
                    "could not parse values file into rnode: {}",
                    e.message
                ))
            })?
            .into_iter()
            .next()
            .unwrap_or(Value::Null);
        if file.is_null() {
            // kyaml reads no document from it
            return Err(Error::invalid(
                "could not parse values file into rnode: EOF",
            ));
        }
        let (dest, src) = if c.values_merge == "merge" {
            (&inline, &file)
        } else {
            (&file, &inline)
        };
        merge_values(dest, src, schema)
            .map_err(|e| Error::invalid(format!("could not merge values: {}", e.0)))?
            .unwrap_or_else(Value::new_map)
    };
    if !matches!(merged, Value::Map(_)) {
        return Err(Error::invalid(
            "could not parse merged values into map: the values are not a map",
        ));
    }
    let mut out = String::new();
    write_document(&mut out, &merged).map_err(|e| Error::invalid(e.0))?;
    Ok(out.into_bytes())
}

/// Renders one chart; returns its resources in helm's order.
pub fn inflate(
    loader: &Loader,
    opts: Option<&HelmOptions>,
    globals: &HelmGlobals,
    chart: &HelmChart,
    schema: &Schema,
) -> Result<Vec<Resource>> {
    let Some(opts) = opts else {
        return Err(trouble_of(
            ErrorKind::HelmNotEnabled,
            globals,
            chart,
            "must specify --enable-helm",
        ));
    };
    let p = prepare(loader, opts, globals, chart)?;
    opts.runner.check().map_err(Error::invalid)?;
    let chart_dir = &p.dir;
    let chart_kind = loader.fs().kind(chart_dir);
    if chart_kind != Some(super::fs::FileKind::Dir) {
        if p.chart.repo.is_empty() {
            // kustomize's message names no path when nothing is there
            let shown = if chart_kind.is_some() {
                chart_dir.to_string_lossy().into_owned()
            } else {
                String::new()
            };
            return Err(Error::invalid(format!(
                "no repo specified for pull, no chart found at '{shown}'"
            )));
        }
        let mut pull = format!("helm pull --untar --untardir {} ", p.home.to_string_lossy());
        if let Some(oci) = p.chart.repo.strip_prefix("oci://") {
            pull.push_str(&format!(
                "oci://{}/{}",
                oci.trim_end_matches('/'),
                p.chart.name
            ));
        } else {
            pull.push_str(&format!("--repo {} {}", p.chart.repo, p.chart.name));
        }
        if !p.chart.version.is_empty() {
            pull.push_str(&format!(" --version {}", p.chart.version));
        }
        return Err(Error::remote(format!(
            "helm chart '{}' is not at '{}': krmsync does not download charts (kustomize \
             would pull it from {}); pull it first: {pull}",
            p.chart.name,
            chart_dir.display(),
            p.chart.repo
        )));
    }
    let values = values(loader, &p, schema)?;
    let call = HelmCall {
        chart: p.chart.name.clone(),
        args: template_args(&p),
        values,
        config_home: p.config_home.clone(),
    };
    let out = opts.runner.template(&call).map_err(Error::invalid)?;
    let text = String::from_utf8_lossy(&out);
    let source = format!("helm template output of chart '{}'", p.chart.name);
    let docs = parse_resources(&text, &source).map_err(|e| {
        Error::invalid(format!(
            "error reading helm output of chart '{}': {}",
            p.chart.name, e.message
        ))
    })?;
    let mut res = Vec::with_capacity(docs.len());
    for d in docs {
        if let Some(problem) = super::documents::missing_metadata(&d) {
            return Err(Error::invalid(format!(
                "error reading helm output of chart '{}': {problem}",
                p.chart.name
            )));
        }
        let mut r = Resource::new(d);
        // kustomize reads a chart's output as resources: bookkeeping
        // annotations in it count, and are removed, as in files
        super::function::absorb_build_annotations(&mut r);
        // local resources stay until the end of the build (kustomize reads
        // the output with `NewResMapFromBytes`), so name references reach
        // them as they reach local resources of files
        res.push(r);
    }
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kustomize::LoadRestrictor;
    use crate::kustomize::fs::MemFs;
    use crate::kustomize::yaml::parse_documents;
    use std::path::Path;
    use std::sync::Mutex;

    /// Records calls and answers with a fixed stream.
    struct Recorder {
        calls: Mutex<Vec<HelmCall>>,
        output: String,
    }

    impl HelmRunner for Recorder {
        fn check(&self) -> std::result::Result<(), String> {
            Ok(())
        }
        fn template(&self, call: &HelmCall) -> std::result::Result<Vec<u8>, String> {
            self.calls.lock().unwrap().push(call.clone());
            Ok(self.output.clone().into_bytes())
        }
    }

    fn setup(files: &[(&str, &str)]) -> Loader {
        let mut fs = MemFs::new();
        fs.add_file("/k/kustomization.yaml", "");
        for (p, c) in files {
            fs.add_file(p, *c);
        }
        Loader::new(Arc::new(fs), Path::new("/k"), LoadRestrictor::RootOnly).unwrap()
    }

    fn chart(yaml: &str) -> (HelmGlobals, HelmChart) {
        let doc = parse_documents(yaml).unwrap().remove(0);
        crate::kustomize::kustomization::decode_helm_plugin_config(&doc).unwrap()
    }

    fn run(
        files: &[(&str, &str)],
        cfg: &str,
        opts_of: impl Fn(Arc<Recorder>) -> HelmOptions,
    ) -> (Result<Vec<Resource>>, Vec<HelmCall>) {
        let loader = setup(files);
        let rec = Arc::new(Recorder {
            calls: Mutex::new(Vec::new()),
            output: "---\n# Source: x\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
                .into(),
        });
        let opts = opts_of(rec.clone());
        let (g, c) = chart(cfg);
        let r = inflate(&loader, Some(&opts), &g, &c, &Schema::default());
        let calls = rec.calls.lock().unwrap().clone();
        (r, calls)
    }

    fn plain(rec: Arc<Recorder>) -> HelmOptions {
        HelmOptions {
            runner: rec,
            kube_version: String::new(),
            api_versions: Vec::new(),
            debug: false,
        }
    }

    fn texts(args: &[HelmArg]) -> Vec<String> {
        args.iter()
            .map(|a| match a {
                HelmArg::Text(t) => t.clone(),
                HelmArg::ValuesFile => "<values>".into(),
            })
            .collect()
    }

    const CHART: [(&str, &str); 2] = [
        ("/k/charts/app/Chart.yaml", "name: app\n"),
        (
            "/k/charts/app/values.yaml",
            "replicas: 1\nimage:\n  tag: old\n  repo: r\nlist: [a, b]\n",
        ),
    ];

    #[test]
    fn arguments_follow_the_chart_fields_in_kustomizes_order() {
        let mut files = CHART.to_vec();
        files.push(("/k/extra.yaml", "a: 1\n"));
        let (r, calls) = run(
            &files,
            "name: app\nreleaseName: rel\nnamespace: ns\nnameTemplate: t\n\
             additionalValuesFiles: [extra.yaml]\napiVersions: [v1/x]\nkubeVersion: '1.30'\n\
             includeCRDs: true\nskipTests: true\nskipHooks: true\ndebug: true\n",
            plain,
        );
        assert_eq!(r.unwrap().len(), 1);
        assert_eq!(
            texts(&calls[0].args),
            [
                "template",
                "rel",
                "/k/charts/app",
                "--namespace",
                "ns",
                "--name-template",
                "t",
                "-f",
                "<values>",
                "-f",
                "/k/extra.yaml",
                "--api-versions",
                "v1/x",
                "--kube-version",
                "1.30",
                "--include-crds",
                "--skip-tests",
                "--no-hooks",
                "--debug"
            ]
        );
        // without inline values the chart's values file goes as is
        assert_eq!(calls[0].values, CHART[1].1.as_bytes());
    }

    #[test]
    fn a_versioned_chart_with_a_repo_lives_in_its_own_directory() {
        let files = [("/k/home/app-1.2.3/app/values.yaml", "a: 1\n")];
        let (r, calls) = run(
            &files,
            "name: app\nversion: 1.2.3\nrepo: https://e.x/charts\nchartHome: home\n",
            plain,
        );
        r.unwrap();
        assert_eq!(
            texts(&calls[0].args)[..3],
            ["template", "--generate-name", "/k/home/app-1.2.3/app"]
        );
    }

    #[test]
    fn inline_values_override_merge_or_replace_the_file() {
        let cfg = |mode: &str| {
            format!(
                "name: app\nvaluesMerge: {mode}\nvaluesInline:\n  replicas: 3\n  image: {{tag: new}}\n  list: [c]\n"
            )
        };
        let values = |mode: &str| {
            let (r, calls) = run(&CHART, &cfg(mode), plain);
            r.unwrap();
            String::from_utf8(calls[0].values.clone()).unwrap()
        };
        assert_eq!(
            values("override"),
            "image:\n  repo: r\n  tag: new\nlist:\n- c\nreplicas: 3\n"
        );
        assert_eq!(
            values("merge"),
            "image:\n  repo: r\n  tag: old\nlist:\n- a\n- b\nreplicas: 1\n"
        );
        assert_eq!(
            values("replace"),
            "image:\n  tag: new\nlist:\n- c\nreplicas: 3\n"
        );
    }

    #[test]
    fn a_merged_value_keeps_its_type_over_a_quoted_string() {
        // kyaml decodes the merged nodes by tag: unlike a patched resource,
        // a number written over a quoted string stays a number
        let files = [("/k/charts/app/values.yaml", "port: 8080\n")];
        let (r, calls) = run(
            &files,
            "name: app\nvaluesMerge: merge\nvaluesInline:\n  port: '80'\n",
            plain,
        );
        r.unwrap();
        assert_eq!(calls[0].values, b"port: 8080\n");
    }

    #[test]
    fn command_line_versions_fill_in_what_the_chart_leaves_unset() {
        let cli = |rec: Arc<Recorder>| HelmOptions {
            runner: rec,
            kube_version: "1.31".into(),
            api_versions: vec!["b/v1".into()],
            debug: true,
        };
        let args_of = |cfg: &str| {
            let (r, calls) = run(&CHART, cfg, cli);
            r.unwrap();
            texts(&calls[0].args)
        };
        let own = args_of("name: app\nkubeVersion: '1.20'\napiVersions: [a/v1]\n");
        assert!(own.windows(2).any(|w| w == ["--kube-version", "1.20"]));
        assert!(own.windows(2).any(|w| w == ["--api-versions", "a/v1"]));
        assert!(!own.iter().any(|a| a == "b/v1" || a == "1.31"));
        let unset = args_of("name: app\n");
        assert!(unset.windows(2).any(|w| w == ["--kube-version", "1.31"]));
        assert!(unset.windows(2).any(|w| w == ["--api-versions", "b/v1"]));
        assert_eq!(unset.last().map(String::as_str), Some("--debug"));
    }

    #[test]
    fn configuration_errors_name_the_problem() {
        let err = |files: &[(&str, &str)], cfg: &str| run(files, cfg, plain).0.unwrap_err().message;
        assert!(err(&CHART, "releaseName: x\n").ends_with("chart name cannot be empty"));
        assert!(
            err(&CHART, "name: app\nvaluesMerge: both\n")
                .ends_with("valuesMerge must be one of [merge override replace]")
        );
        assert!(
            err(&CHART, "name: app\nadditionalValuesFiles: [../out.yaml]\n")
                .contains("could not load additionalValuesFile")
        );
        assert_eq!(
            err(&[], "name: app\n"),
            "no repo specified for pull, no chart found at ''"
        );
        let pull = err(&[], "name: app\nrepo: oci://r.io/c/\nversion: 2.0.0\n");
        assert!(pull.contains("krmsync does not download charts"), "{pull}");
        assert!(
            pull.ends_with(
                "helm pull --untar --untardir /k/charts/app-2.0.0 oci://r.io/c/app --version 2.0.0"
            ),
            "{pull}"
        );
        let remote = run(&CHART, "name: app\nvaluesFile: https://e.x/v.yaml\n", plain).0;
        let remote = remote.unwrap_err();
        assert_eq!(remote.kind, ErrorKind::RemoteReference);
        assert!(
            remote.message.contains("krmsync localize"),
            "{}",
            remote.message
        );
        // the chart's values file is loaded under the load restrictions
        assert!(err(&[("/k/charts/app/Chart.yaml", "")], "name: app\n").contains("values.yaml"));
    }

    #[test]
    fn without_a_runner_the_chart_is_refused_as_kustomize_refuses_it() {
        let loader = setup(&CHART);
        let (g, c) = chart("name: app\nincludeCRDs: true\n");
        let e = inflate(&loader, None, &g, &c, &Schema::default()).unwrap_err();
        assert_eq!(
            e.message,
            "trouble configuring builtin HelmChartInflationGenerator with config: `\n\
             includeCRDs: true\nname: app\n`: must specify --enable-helm"
        );
    }
}
