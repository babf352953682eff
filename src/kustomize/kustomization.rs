//! The `kustomization.yaml` file: typed model and strict decoding.
//!
//! kustomize decodes the file strictly: an unknown field anywhere in the
//! typed part is an error, a scalar given where a string is expected is
//! converted to its text, and deprecated fields are folded into their
//! replacements (`bases` -> `resources`, `imageTags` -> `images`, `env` ->
//! `envs`).

use super::error::{Error, Result};
use super::yaml::{Mapping, Value};

/// The recognised kustomization file names, in kustomize's lookup order.
pub const KUSTOMIZATION_FILE_NAMES: [&str; 3] =
    ["kustomization.yaml", "kustomization.yml", "Kustomization"];

const KUSTOMIZATION_API: &str = "kustomize.config.k8s.io/v1beta1";
const COMPONENT_API: &str = "kustomize.config.k8s.io/v1alpha1";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum KustKind {
    #[default]
    Kustomization,
    Component,
}

impl KustKind {
    pub fn as_str(self) -> &'static str {
        match self {
            KustKind::Kustomization => "Kustomization",
            KustKind::Component => "Component",
        }
    }
}

/// One `labels:` entry.
#[derive(Clone, Debug, Default)]
pub struct LabelEntry {
    pub pairs: Vec<(String, String)>,
    pub include_selectors: bool,
    pub include_templates: bool,
    pub fields: Vec<Value>,
}

/// One `patches:` / `patchesJson6902:` entry.
#[derive(Clone, Debug, Default)]
pub struct PatchEntry {
    pub path: String,
    pub patch: String,
    pub target: Option<Value>,
    pub allow_name_change: bool,
    pub allow_kind_change: bool,
    /// From a plugin configuration: unknown target fields are ignored.
    pub from_plugin: bool,
}

/// One `images:` entry.
#[derive(Clone, Debug, Default)]
pub struct ImageEntry {
    pub name: String,
    pub new_name: String,
    pub new_tag: String,
    pub digest: String,
    pub tag_suffix: String,
}

/// One `replicas:` entry.
#[derive(Clone, Debug, Default)]
pub struct ReplicaEntry {
    pub name: String,
    pub count: i64,
}

/// One `vars:` entry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VarEntry {
    pub name: String,
    pub obj_kind: String,
    pub obj_name: String,
    pub obj_namespace: String,
    pub obj_api_version: String,
    pub field_path: String,
}

/// `generatorOptions` and per-generator `options`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GeneratorOptions {
    pub labels: Vec<(String, String)>,
    pub annotations: Vec<(String, String)>,
    pub disable_name_suffix_hash: bool,
    pub immutable: bool,
}

/// A `configMapGenerator` / `secretGenerator` entry.
#[derive(Clone, Debug, Default)]
pub struct GeneratorArgs {
    pub name: String,
    pub namespace: String,
    pub behavior: String,
    pub literals: Vec<String>,
    pub files: Vec<String>,
    pub envs: Vec<String>,
    pub options: Option<GeneratorOptions>,
    /// Secret type (secretGenerator only).
    pub secret_type: String,
}

/// `sortOptions`.
#[derive(Clone, Debug, Default)]
pub struct SortOptions {
    pub order: String,
    pub order_first: Option<Vec<String>>,
    pub order_last: Option<Vec<String>>,
    /// `legacySortOptions` is given (not null), even empty.
    pub legacy_options_set: bool,
}

/// A decoded kustomization (or component).
#[derive(Clone, Debug, Default)]
pub struct Kustomization {
    pub kind: KustKind,
    pub openapi: Vec<(String, String)>,
    pub name_prefix: String,
    pub name_suffix: String,
    pub namespace: String,
    pub common_labels: Vec<(String, String)>,
    pub labels: Vec<LabelEntry>,
    pub common_annotations: Vec<(String, String)>,
    pub patches_strategic_merge: Vec<String>,
    pub patches_json6902: Vec<PatchEntry>,
    pub patches: Vec<PatchEntry>,
    pub images: Vec<ImageEntry>,
    /// Raw `replacements:` entries (`{path: f}` or inline).
    pub replacements: Vec<Value>,
    pub replicas: Vec<ReplicaEntry>,
    pub vars: Vec<VarEntry>,
    pub sort_options: Option<SortOptions>,
    pub resources: Vec<String>,
    pub components: Vec<String>,
    pub crds: Vec<String>,
    pub config_map_generator: Vec<GeneratorArgs>,
    pub secret_generator: Vec<GeneratorArgs>,
    pub generator_options: Option<GeneratorOptions>,
    /// `helmGlobals` (or what the deprecated `helmChartInflationGenerator`
    /// entries give, when `helmGlobals` is absent).
    pub helm_globals: Option<HelmGlobals>,
    /// `helmCharts`, then the deprecated `helmChartInflationGenerator`
    /// entries converted as kustomize converts them.
    pub helm_charts: Vec<HelmChart>,
    pub configurations: Vec<String>,
    pub generators: Vec<String>,
    pub transformers: Vec<String>,
    pub validators: Vec<String>,
    pub build_metadata: Vec<String>,
    /// `catalogs:` (KEP-2906): function catalogs for this layer's
    /// generators, transformers and validators (local paths).
    pub catalogs: Vec<String>,
}

/// `helmGlobals`: where charts are and where helm keeps its configuration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HelmGlobals {
    /// Directory holding the charts (default `charts`, relative to the
    /// kustomization).
    pub chart_home: String,
    /// `HELM_CONFIG_HOME` (default: a temporary directory).
    pub config_home: String,
}

/// One `helmCharts` entry (kustomize's `types.HelmChart`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HelmChart {
    pub name: String,
    pub version: String,
    pub repo: String,
    pub release_name: String,
    pub namespace: String,
    pub additional_values_files: Vec<String>,
    pub values_file: String,
    /// `valuesInline`, as kustomize holds it after its YAML -> JSON decode
    /// (numbers are float64 there).
    pub values_inline: Mapping,
    pub values_merge: String,
    pub include_crds: bool,
    pub skip_hooks: bool,
    pub api_versions: Vec<String>,
    pub kube_version: String,
    pub name_template: String,
    pub skip_tests: bool,
    pub debug: bool,
}

const HELM_GLOBALS_FIELDS: &[&str] = &["chartHome", "configHome"];
const HELM_CHART_FIELDS: &[&str] = &[
    "name",
    "version",
    "repo",
    "releaseName",
    "namespace",
    "additionalValuesFiles",
    "valuesFile",
    "valuesInline",
    "valuesMerge",
    "includeCRDs",
    "skipHooks",
    "apiVersions",
    "kubeVersion",
    "nameTemplate",
    "skipTests",
    "debug",
];
const HELM_CHART_ARGS_FIELDS: &[&str] = &[
    "chartName",
    "chartVersion",
    "chartRepoUrl",
    "chartHome",
    "chartRepoName",
    "helmBin",
    "helmHome",
    "values",
    "valuesLocal",
    "valuesMerge",
    "releaseName",
    "releaseNamespace",
    "extraArgs",
];

/// Turns numbers into what Go's JSON decoding into `interface{}` holds:
/// float64.
fn to_go_json_numbers(v: &mut Value) {
    match v {
        Value::Int(i) => *v = Value::Float(*i as f64),
        Value::UInt(u) => *v = Value::Float(*u as f64),
        Value::Seq(items) => items.iter_mut().for_each(to_go_json_numbers),
        Value::Map(m) => m.values_mut().for_each(to_go_json_numbers),
        _ => {}
    }
}

fn decode_helm_globals(parent: &Dec, v: &Value, field: &str) -> Result<Option<HelmGlobals>> {
    let Some(m) = parent.map(v, field, "types.HelmGlobals")? else {
        return Ok(None);
    };
    let d = parent.child("HelmGlobals", field);
    let m = &d.canon(m, HELM_GLOBALS_FIELDS)?;
    helm_globals_fields(&d, m).map(Some)
}

fn helm_globals_fields(d: &Dec, m: &Mapping) -> Result<HelmGlobals> {
    Ok(HelmGlobals {
        chart_home: d.string(m, "chartHome")?,
        config_home: d.string(m, "configHome")?,
    })
}

/// `types.HelmChart`'s string fields and string-list fields.
const HELM_CHART_STRING_FIELDS: &[&str] = &[
    "name",
    "version",
    "repo",
    "releaseName",
    "namespace",
    "valuesFile",
    "valuesMerge",
    "kubeVersion",
    "nameTemplate",
];
const HELM_CHART_STRING_LIST_FIELDS: &[&str] = &["additionalValuesFiles", "apiVersions"];

/// A scalar as the text sigs.k8s.io/yaml gives it for a string field.
fn go_string_of(v: &Value) -> Option<Value> {
    let text = match v {
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(f) if f.is_finite() => super::yaml::format_yaml_float(*f),
        _ => return None,
    };
    Some(Value::String(text))
}

/// kustomize hands a chart to its plugin through sigs.k8s.io/yaml, which
/// reads the top-level keys of `valuesInline` against `types.HelmChart`'s
/// own fields: a key spelled like one of its string fields (any case) gets
/// its scalar turned into a string (`name: 1` is `"1"`), the scalar items
/// of a list under a string-list field too (`apiVersions: [1]`).
fn stringify_like_chart_fields(values: &mut Mapping) {
    for (k, v) in values.iter_mut() {
        if HELM_CHART_STRING_FIELDS
            .iter()
            .any(|f| f.eq_ignore_ascii_case(k))
        {
            if let Some(s) = go_string_of(v) {
                *v = s;
            }
        } else if HELM_CHART_STRING_LIST_FIELDS
            .iter()
            .any(|f| f.eq_ignore_ascii_case(k))
            && let Value::Seq(items) = v
        {
            for item in items.iter_mut() {
                if let Some(s) = go_string_of(item) {
                    *item = s;
                }
            }
        }
    }
}

/// `valuesInline` as kustomize's plugin holds it. A kustomization's
/// values reach it as JSON numbers (float64) first, then as text; a
/// plugin configuration's (`from_config`) are read as text first, so an
/// integer there keeps all its digits in a string field.
fn helm_inline(d: &Dec, m: &Mapping, field: &str, from_config: bool) -> Result<Mapping> {
    match m.get(field) {
        None | Some(Value::Null) => Ok(Mapping::new()),
        Some(Value::Map(mm)) => {
            let mut out = mm.clone();
            if from_config {
                stringify_like_chart_fields(&mut out);
            }
            out.values_mut().for_each(to_go_json_numbers);
            if !from_config {
                stringify_like_chart_fields(&mut out);
            }
            Ok(out)
        }
        Some(v) => Err(d.mismatch(field, v, "map[string]interface {}")),
    }
}

fn decode_helm_chart(parent: &Dec, v: &Value, field: &str) -> Result<HelmChart> {
    let Some(m) = parent.map(v, field, "types.HelmChart")? else {
        return Ok(HelmChart::default());
    };
    let d = parent.child("HelmChart", field);
    let m = &d.canon(m, HELM_CHART_FIELDS)?;
    helm_chart_fields(&d, m, false)
}

fn helm_chart_fields(d: &Dec, m: &Mapping, from_config: bool) -> Result<HelmChart> {
    Ok(HelmChart {
        name: d.string(m, "name")?,
        version: d.string(m, "version")?,
        repo: d.string(m, "repo")?,
        release_name: d.string(m, "releaseName")?,
        namespace: d.string(m, "namespace")?,
        additional_values_files: d.string_list(m, "additionalValuesFiles")?,
        values_file: d.string(m, "valuesFile")?,
        values_inline: helm_inline(d, m, "valuesInline", from_config)?,
        values_merge: d.string(m, "valuesMerge")?,
        include_crds: d.boolean(m, "includeCRDs")?,
        skip_hooks: d.boolean(m, "skipHooks")?,
        api_versions: d.string_list(m, "apiVersions")?,
        kube_version: d.string(m, "kubeVersion")?,
        name_template: d.string(m, "nameTemplate")?,
        skip_tests: d.boolean(m, "skipTests")?,
        debug: d.boolean(m, "debug")?,
    })
}

/// A deprecated `helmChartInflationGenerator` entry: the chart it names,
/// and the chart and config homes it sets (kustomize's
/// `SplitHelmParameters`; `releaseNamespace`, `extraArgs`, `helmBin` and
/// `chartRepoName` are read and ignored, as there).
fn decode_helm_chart_args(parent: &Dec, v: &Value) -> Result<(HelmChart, HelmGlobals)> {
    let field = "helmChartInflationGenerator";
    let Some(m) = parent.map(v, field, "types.HelmChartArgs")? else {
        return Ok(Default::default());
    };
    let d = parent.child("HelmChartArgs", field);
    let m = &d.canon(m, HELM_CHART_ARGS_FIELDS)?;
    for ignored in ["chartRepoName", "helmBin", "releaseNamespace"] {
        d.string(m, ignored)?;
    }
    d.string_list(m, "extraArgs")?;
    let chart = HelmChart {
        name: d.string(m, "chartName")?,
        version: d.string(m, "chartVersion")?,
        repo: d.string(m, "chartRepoUrl")?,
        values_file: d.string(m, "values")?,
        values_inline: helm_inline(&d, m, "valuesLocal", false)?,
        values_merge: d.string(m, "valuesMerge")?,
        release_name: d.string(m, "releaseName")?,
        ..Default::default()
    };
    let globals = HelmGlobals {
        chart_home: d.string(m, "chartHome")?,
        config_home: d.string(m, "helmHome")?,
    };
    Ok((chart, globals))
}

/// A builtin `HelmChartInflationGenerator` plugin configuration (from
/// `generators:`): its chart and globals. Decoded like kustomize's plugin
/// configuration (sigs.k8s.io/yaml, not strict: unknown fields such as
/// `metadata` are ignored; scalars meet string fields as their text).
pub fn decode_helm_plugin_config(v: &Value) -> Result<(HelmGlobals, HelmChart)> {
    let d = Dec::top("plugin", true);
    let Some(m) = d.map(v, "", "plugin")? else {
        return Ok(Default::default());
    };
    let known: Mapping = m
        .iter()
        .filter_map(|(k, v)| {
            HELM_CHART_FIELDS
                .iter()
                .chain(HELM_GLOBALS_FIELDS)
                .find(|f| f.eq_ignore_ascii_case(k))
                .map(|f| (f.to_string(), v.clone()))
        })
        .collect();
    Ok((
        helm_globals_fields(&d, &known)?,
        helm_chart_fields(&d, &known, true)?,
    ))
}

/// Decoding context: the Go struct and the JSON path for error messages,
/// and how scalars meet string fields.
///
/// kustomize reads a kustomization by converting the YAML to JSON and
/// decoding that strictly: a number or a boolean (YAML 1.1: `yes`, `on`,
/// `y`, ...) where a string belongs is an error. Builtin plugin
/// configurations go through sigs.k8s.io/yaml's typed decoding instead,
/// which turns such scalars into their text (`lenient`).
struct Dec<'a> {
    what: &'a str,
    /// JSON path of the struct, with a trailing `.` (empty at the top).
    path: String,
    lenient: bool,
}

/// What Go calls a JSON value in its messages (`number`, `array`, ...).
pub(crate) fn go_type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Int(_) | Value::UInt(_) | Value::Float(_) => "number",
        Value::String(_) => "string",
        Value::Seq(_) => "array",
        Value::Map(_) => "object",
    }
}

impl<'a> Dec<'a> {
    fn top(what: &'a str, lenient: bool) -> Dec<'a> {
        Dec {
            what,
            path: String::new(),
            lenient,
        }
    }

    /// The decoder of the struct held in `field`.
    fn child<'b>(&self, what: &'b str, field: &str) -> Dec<'b> {
        Dec {
            what,
            path: format!("{}{field}.", self.path),
            lenient: self.lenient,
        }
    }

    fn mismatch(&self, field: &str, v: &Value, want: &str) -> Error {
        Error::invalid(format!(
            "json: cannot unmarshal {} into Go struct field {}.{}{} of type {}",
            go_type_of(v),
            self.what,
            self.path,
            field,
            want
        ))
    }

    /// Renames keys to their canonical field names the way Go's
    /// encoding/json matches them (exact first, then case-insensitively);
    /// a key matching no field is an error (strict decoding), or ignored
    /// when lenient (plugin configurations).
    fn canon(&self, m: &Mapping, allowed: &[&str]) -> Result<Mapping> {
        let mut out = Mapping::with_capacity(m.len());
        for (k, v) in m {
            let name = if allowed.contains(&k.as_str()) {
                k.as_str()
            } else {
                match allowed.iter().find(|a| a.eq_ignore_ascii_case(k)) {
                    Some(a) => a,
                    None if self.lenient => continue,
                    None => return Err(Error::invalid(format!("json: unknown field \"{k}\""))),
                }
            };
            out.insert(name.to_string(), v.clone());
        }
        Ok(out)
    }

    /// A scalar for a string field: null is empty; numbers and booleans are
    /// an error, or their text when lenient.
    fn scalar_string(&self, field: &str, v: &Value) -> Result<String> {
        match v {
            Value::Null => Ok(String::new()),
            Value::String(s) => Ok(s.clone()),
            Value::Map(_) | Value::Seq(_) => Err(self.mismatch(field, v, "string")),
            other if self.lenient => Ok(other.scalar_to_string().unwrap_or_default()),
            other => Err(self.mismatch(field, other, "string")),
        }
    }

    fn string(&self, m: &Mapping, field: &str) -> Result<String> {
        match m.get(field) {
            None => Ok(String::new()),
            Some(v) => self.scalar_string(field, v),
        }
    }

    fn boolean(&self, m: &Mapping, field: &str) -> Result<bool> {
        match m.get(field) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(self.mismatch(field, v, "bool")),
        }
    }

    fn int(&self, m: &Mapping, field: &str) -> Result<i64> {
        match m.get(field) {
            None | Some(Value::Null) => Ok(0),
            Some(v @ (Value::Int(_) | Value::UInt(_) | Value::Float(_))) => {
                v.as_i64().ok_or_else(|| self.mismatch(field, v, "int64"))
            }
            Some(v) => Err(self.mismatch(field, v, "int64")),
        }
    }

    fn string_list(&self, m: &Mapping, field: &str) -> Result<Vec<String>> {
        match m.get(field) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Seq(items)) => items.iter().map(|v| self.scalar_string(field, v)).collect(),
            Some(v) => Err(self.mismatch(field, v, "[]string")),
        }
    }

    fn string_map(&self, m: &Mapping, field: &str) -> Result<Vec<(String, String)>> {
        match m.get(field) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Map(mm)) => mm
                .iter()
                .map(|(k, v)| Ok((k.clone(), self.scalar_string(field, v)?)))
                .collect(),
            Some(v) => Err(self.mismatch(field, v, "map[string]string")),
        }
    }

    fn seq<'v>(&self, m: &'v Mapping, field: &str, want: &str) -> Result<&'v [Value]> {
        match m.get(field) {
            None | Some(Value::Null) => Ok(&[]),
            Some(Value::Seq(items)) => Ok(items),
            Some(v) => Err(self.mismatch(field, v, want)),
        }
    }

    fn map<'v>(&self, v: &'v Value, field: &str, want: &str) -> Result<Option<&'v Mapping>> {
        match v {
            Value::Null => Ok(None),
            Value::Map(m) => Ok(Some(m)),
            other => Err(self.mismatch(field, other, want)),
        }
    }
}

/// `generatorOptions` or a generator's `options`, in `field` of `parent`.
fn decode_options(parent: &Dec, v: &Value, field: &str) -> Result<Option<GeneratorOptions>> {
    let Some(m) = parent.map(v, field, "types.GeneratorOptions")? else {
        return Ok(None);
    };
    let d = parent.child("GeneratorOptions", field);
    let m = &d.canon(
        m,
        &[
            "labels",
            "annotations",
            "disableNameSuffixHash",
            "immutable",
        ],
    )?;
    Ok(Some(GeneratorOptions {
        labels: d.string_map(m, "labels")?,
        annotations: d.string_map(m, "annotations")?,
        disable_name_suffix_hash: d.boolean(m, "disableNameSuffixHash")?,
        immutable: d.boolean(m, "immutable")?,
    }))
}

fn decode_generator(parent: &Dec, v: &Value, secret: bool) -> Result<GeneratorArgs> {
    let (what, field) = if secret {
        ("SecretArgs", "secretGenerator")
    } else {
        ("ConfigMapArgs", "configMapGenerator")
    };
    let Some(m) = parent.map(v, field, &format!("types.{what}"))? else {
        return Ok(GeneratorArgs::default());
    };
    let d = parent.child(what, field);
    let mut allowed = vec![
        "name",
        "namespace",
        "behavior",
        "literals",
        "files",
        "envs",
        "env",
        "options",
        "kvSources",
    ];
    if secret {
        allowed.push("type");
    }
    let m = &d.canon(m, &allowed)?;
    let mut envs = d.string_list(m, "envs")?;
    let env = d.string(m, "env")?;
    if !env.is_empty() {
        envs.push(env);
    }
    Ok(GeneratorArgs {
        name: d.string(m, "name")?,
        namespace: d.string(m, "namespace")?,
        behavior: d.string(m, "behavior")?,
        literals: d.string_list(m, "literals")?,
        files: d.string_list(m, "files")?,
        envs,
        options: match m.get("options") {
            Some(o) => decode_options(&d, o, "options")?,
            None => None,
        },
        secret_type: if secret {
            d.string(m, "type")?
        } else {
            String::new()
        },
    })
}

fn patch_entry(parent: &Dec, v: &Value, field: &str) -> Result<PatchEntry> {
    let Some(m) = parent.map(v, field, "types.Patch")? else {
        return Ok(PatchEntry::default());
    };
    let d = parent.child("Patch", field);
    let m = &d.canon(m, &["path", "patch", "target", "options"])?;
    let mut p = PatchEntry {
        path: d.string(m, "path")?,
        patch: d.string(m, "patch")?,
        target: m.get("target").filter(|t| !t.is_null()).cloned(),
        ..Default::default()
    };
    if let Some(o) = m.get("options")
        && let Some(om) = d.map(o, "options", "map[string]bool")?
    {
        p.allow_name_change = d.boolean(om, "allowNameChange")?;
        p.allow_kind_change = d.boolean(om, "allowKindChange")?;
    }
    Ok(p)
}

/// Decodes a PatchTransformer configuration (`field` names it in errors).
pub fn decode_patch(v: &Value, field: &str) -> Result<PatchEntry> {
    let mut p = patch_entry(&Dec::top("Patch", true), v, field)?;
    p.from_plugin = true;
    Ok(p)
}

fn decode_image(parent: &Dec, v: &Value, field: &str) -> Result<ImageEntry> {
    let Some(m) = parent.map(v, field, "types.Image")? else {
        return Ok(ImageEntry::default());
    };
    let d = parent.child("Image", field);
    let m = &d.canon(m, &["name", "newName", "newTag", "digest", "tagSuffix"])?;
    Ok(ImageEntry {
        name: d.string(m, "name")?,
        new_name: d.string(m, "newName")?,
        new_tag: d.string(m, "newTag")?,
        digest: d.string(m, "digest")?,
        tag_suffix: d.string(m, "tagSuffix")?,
    })
}

/// Decodes the `imageTag` of an ImageTagTransformer configuration.
pub fn decode_image_entry(v: &Value) -> Result<ImageEntry> {
    decode_image(&Dec::top("ImageTagTransformer", true), v, "imageTag")
}

fn decode_replica(parent: &Dec, v: &Value, field: &str) -> Result<ReplicaEntry> {
    let Some(m) = parent.map(v, field, "types.Replica")? else {
        return Ok(ReplicaEntry::default());
    };
    let d = parent.child("Replica", field);
    let m = &d.canon(m, &["name", "count"])?;
    Ok(ReplicaEntry {
        name: d.string(m, "name")?,
        count: d.int(m, "count")?,
    })
}

/// Decodes the `replica` of a ReplicaCountTransformer configuration.
pub fn decode_replica_entry(v: &Value) -> Result<ReplicaEntry> {
    decode_replica(&Dec::top("ReplicaCountTransformer", true), v, "replica")
}

fn decode_var(parent: &Dec, v: &Value) -> Result<VarEntry> {
    let Some(m) = parent.map(v, "vars", "types.Var")? else {
        return Ok(VarEntry::default());
    };
    let d = parent.child("Var", "vars");
    let m = &d.canon(m, &["name", "objref", "fieldref"])?;
    let mut var = VarEntry {
        name: d.string(m, "name")?,
        field_path: "metadata.name".to_string(),
        ..Default::default()
    };
    if let Some(o) = m.get("objref")
        && let Some(om) = d.map(o, "objref", "types.Target")?
    {
        let od = d.child("Target", "objref");
        let om = &od.canon(
            om,
            &[
                "group",
                "version",
                "kind",
                "name",
                "namespace",
                "apiVersion",
            ],
        )?;
        var.obj_kind = od.string(om, "kind")?;
        var.obj_name = od.string(om, "name")?;
        var.obj_namespace = od.string(om, "namespace")?;
        let mut av = od.string(om, "apiVersion")?;
        if av.is_empty() {
            let g = od.string(om, "group")?;
            let ver = od.string(om, "version")?;
            av = if g.is_empty() {
                ver
            } else {
                format!("{g}/{ver}")
            };
        }
        var.obj_api_version = av;
    }
    if let Some(f) = m.get("fieldref")
        && let Some(fm) = d.map(f, "fieldref", "types.FieldSelector")?
    {
        let fd = d.child("FieldSelector", "fieldref");
        let fm = &fd.canon(fm, &["fieldPath"])?;
        let fp = fd.string(fm, "fieldPath")?;
        if !fp.is_empty() {
            var.field_path = fp;
        }
    }
    Ok(var)
}

fn decode_labels(parent: &Dec, v: &Value) -> Result<LabelEntry> {
    let Some(m) = parent.map(v, "labels", "types.Label")? else {
        return Ok(LabelEntry::default());
    };
    let d = parent.child("Label", "labels");
    let m = &d.canon(
        m,
        &["pairs", "includeSelectors", "includeTemplates", "fields"],
    )?;
    let fields = d.seq(m, "fields", "[]types.FieldSpec")?;
    // each field spec is decoded (strictly) as a FieldSpec
    for f in fields {
        if let Some(fm) = d.map(f, "fields", "types.FieldSpec")? {
            let fd = d.child("FieldSpec", "fields");
            let fm = &fd.canon(fm, &["group", "version", "kind", "path", "create"])?;
            for k in ["group", "version", "kind", "path"] {
                fd.string(fm, k)?;
            }
            fd.boolean(fm, "create")?;
        }
    }
    Ok(LabelEntry {
        pairs: d.string_map(m, "pairs")?,
        include_selectors: d.boolean(m, "includeSelectors")?,
        include_templates: d.boolean(m, "includeTemplates")?,
        fields: fields.to_vec(),
    })
}

fn decode_sort_options(parent: &Dec, v: &Value) -> Result<Option<SortOptions>> {
    let Some(m) = parent.map(v, "sortOptions", "types.SortOptions")? else {
        return Ok(None);
    };
    let d = parent.child("SortOptions", "sortOptions");
    let m = &d.canon(m, &["order", "legacySortOptions"])?;
    let order = match m.get("order") {
        Some(v @ (Value::Bool(_) | Value::Int(_) | Value::UInt(_) | Value::Float(_)))
            if !d.lenient =>
        {
            return Err(d.mismatch("order", v, "types.SortOrder"));
        }
        _ => d.string(m, "order")?,
    };
    let mut so = SortOptions {
        order,
        ..Default::default()
    };
    if let Some(l) = m.get("legacySortOptions")
        && let Some(lm) = d.map(l, "legacySortOptions", "types.LegacySortOptions")?
    {
        so.legacy_options_set = true;
        let ld = d.child("LegacySortOptions", "legacySortOptions");
        let lm = &ld.canon(lm, &["orderFirst", "orderLast"])?;
        if lm.contains_key("orderFirst") {
            so.order_first = Some(ld.string_list(lm, "orderFirst")?);
        }
        if lm.contains_key("orderLast") {
            so.order_last = Some(ld.string_list(lm, "orderLast")?);
        }
    }
    Ok(Some(so))
}

const TOP_LEVEL_FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "openapi",
    "namePrefix",
    "nameSuffix",
    "namespace",
    "commonLabels",
    "labels",
    "commonAnnotations",
    "patchesStrategicMerge",
    "patchesJson6902",
    "patches",
    "images",
    "imageTags",
    "replacements",
    "replicas",
    "vars",
    "sortOptions",
    "resources",
    "components",
    "crds",
    "bases",
    "configMapGenerator",
    "secretGenerator",
    "helmGlobals",
    "helmCharts",
    "helmChartInflationGenerator",
    "generatorOptions",
    "configurations",
    "generators",
    "transformers",
    "validators",
    "buildMetadata",
    "catalogs",
];

/// What `kustomize build` (not `localize`) calls an empty kustomization:
/// it compares the decoded kustomization with an empty one, so nothing but
/// apiVersion and kind, nulls and empty strings is empty (an empty list or
/// map is something).
pub fn is_empty_document(doc: &Value) -> bool {
    match doc {
        Value::Null => true,
        Value::Map(m) => m.iter().all(|(k, v)| {
            k == "apiVersion" || k == "kind" || v.is_null() || v.as_str().is_some_and(str::is_empty)
        }),
        _ => false,
    }
}

impl Kustomization {
    /// Decodes a parsed kustomization document. `file` names it in errors.
    pub fn decode(doc: &Value, file: &str) -> Result<Kustomization> {
        let m = match doc {
            Value::Null => {
                return Err(Error::invalid(format!(
                    "kustomization file '{file}' is empty"
                )));
            }
            Value::Map(m) if m.is_empty() => {
                return Err(Error::invalid(format!(
                    "kustomization file '{file}' is empty"
                )));
            }
            Value::Map(m) => m,
            other => {
                return Err(Error::invalid(format!(
                    "invalid Kustomization in '{file}': expected a map, found a {}",
                    other.type_name()
                )));
            }
        };
        Self::decode_map(m).map_err(|e| {
            Error::invalid(format!("invalid Kustomization in '{file}': {}", e.message))
        })
    }

    fn decode_map(m: &Mapping) -> Result<Kustomization> {
        let d = Dec::top("Kustomization", false);
        let m = &d.canon(m, TOP_LEVEL_FIELDS)?;
        let kind_s = d.string(m, "kind")?;
        let kind = match kind_s.as_str() {
            "" | "Kustomization" => KustKind::Kustomization,
            "Component" => KustKind::Component,
            other => {
                return Err(Error::invalid(format!(
                    "kind should be Kustomization or Component, not '{other}'"
                )));
            }
        };
        let api = d.string(m, "apiVersion")?;
        if !api.is_empty() {
            let want = match kind {
                KustKind::Kustomization => KUSTOMIZATION_API,
                KustKind::Component => COMPONENT_API,
            };
            if api != want {
                return Err(Error::invalid(format!(
                    "apiVersion for {} should be {want}",
                    kind.as_str()
                )));
            }
        }
        // `metadata` is not used, but it is decoded (into an ObjectMeta)
        if let Some(md) = m.get("metadata")
            && let Some(mm) = d.map(md, "metadata", "types.ObjectMeta")?
        {
            let md = d.child("ObjectMeta", "metadata");
            let mm = &md.canon(mm, &["name", "namespace", "labels", "annotations"])?;
            md.string(mm, "name")?;
            md.string(mm, "namespace")?;
            md.string_map(mm, "labels")?;
            md.string_map(mm, "annotations")?;
        }
        let mut k = Kustomization {
            kind,
            openapi: d.string_map(m, "openapi")?,
            name_prefix: d.string(m, "namePrefix")?,
            name_suffix: d.string(m, "nameSuffix")?,
            namespace: d.string(m, "namespace")?,
            common_labels: d.string_map(m, "commonLabels")?,
            common_annotations: d.string_map(m, "commonAnnotations")?,
            patches_strategic_merge: d.string_list(m, "patchesStrategicMerge")?,
            resources: d.string_list(m, "resources")?,
            components: d.string_list(m, "components")?,
            crds: d.string_list(m, "crds")?,
            configurations: d.string_list(m, "configurations")?,
            generators: d.string_list(m, "generators")?,
            transformers: d.string_list(m, "transformers")?,
            validators: d.string_list(m, "validators")?,
            build_metadata: d.string_list(m, "buildMetadata")?,
            catalogs: d.string_list(m, "catalogs")?,
            ..Default::default()
        };
        k.resources.extend(d.string_list(m, "bases")?);
        for v in d.seq(m, "labels", "[]types.Label")? {
            k.labels.push(decode_labels(&d, v)?);
        }
        for v in d.seq(m, "patchesJson6902", "[]types.Patch")? {
            k.patches_json6902
                .push(patch_entry(&d, v, "patchesJson6902")?);
        }
        for v in d.seq(m, "patches", "[]types.Patch")? {
            k.patches.push(patch_entry(&d, v, "patches")?);
        }
        for v in d.seq(m, "images", "[]types.Image")? {
            k.images.push(decode_image(&d, v, "images")?);
        }
        for v in d.seq(m, "imageTags", "[]types.Image")? {
            k.images.push(decode_image(&d, v, "imageTags")?);
        }
        k.replacements = d
            .seq(m, "replacements", "[]types.ReplacementField")?
            .to_vec();
        for v in d.seq(m, "replicas", "[]types.Replica")? {
            k.replicas.push(decode_replica(&d, v, "replicas")?);
        }
        for v in d.seq(m, "vars", "[]types.Var")? {
            k.vars.push(decode_var(&d, v)?);
        }
        if let Some(v) = m.get("sortOptions") {
            k.sort_options = decode_sort_options(&d, v)?;
        }
        for v in d.seq(m, "configMapGenerator", "[]types.ConfigMapArgs")? {
            k.config_map_generator.push(decode_generator(&d, v, false)?);
        }
        for v in d.seq(m, "secretGenerator", "[]types.SecretArgs")? {
            k.secret_generator.push(decode_generator(&d, v, true)?);
        }
        if let Some(v) = m.get("generatorOptions") {
            k.generator_options = decode_options(&d, v, "generatorOptions")?;
        }
        if let Some(v) = m.get("helmGlobals") {
            k.helm_globals = decode_helm_globals(&d, v, "helmGlobals")?;
        }
        for v in d.seq(m, "helmCharts", "[]types.HelmChart")? {
            k.helm_charts.push(decode_helm_chart(&d, v, "helmCharts")?);
        }
        // kustomize's FixKustomization: the deprecated entries become
        // charts, and give the globals when `helmGlobals` is absent.
        let mut old_globals = HelmGlobals::default();
        for v in d.seq(m, "helmChartInflationGenerator", "[]types.HelmChartArgs")? {
            let (chart, g) = decode_helm_chart_args(&d, v)?;
            if !g.config_home.is_empty() {
                old_globals.config_home = g.config_home;
            }
            if !g.chart_home.is_empty() {
                old_globals.chart_home = g.chart_home;
            }
            k.helm_charts.push(chart);
        }
        if k.helm_globals.is_none()
            && (!old_globals.chart_home.is_empty() || !old_globals.config_home.is_empty())
        {
            k.helm_globals = Some(old_globals);
        }
        Ok(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kustomize::yaml::parse_documents;

    fn decode(src: &str) -> Result<Kustomization> {
        let docs = parse_documents(src).expect("yaml");
        Kustomization::decode(docs.first().unwrap_or(&Value::Null), "kustomization.yaml")
    }

    #[test]
    fn decodes_common_fields_and_deprecated_aliases() {
        let k = decode(
            "namePrefix: p-\nresources: [a.yaml]\nbases: [../base]\ncommonLabels: {app: x, version: '2'}\n\
             imageTags: [{name: nginx, newTag: '1.2'}]\nconfigMapGenerator:\n- name: c\n  env: a.env\n  envs: [b.env]\n",
        )
        .unwrap();
        assert_eq!(k.name_prefix, "p-");
        assert_eq!(k.resources, vec!["a.yaml", "../base"]);
        assert_eq!(
            k.common_labels,
            vec![("app".into(), "x".into()), ("version".into(), "2".into())]
        );
        assert_eq!(k.images[0].new_tag, "1.2");
        assert_eq!(k.config_map_generator[0].envs, vec!["b.env", "a.env"]);
    }

    #[test]
    fn numbers_and_booleans_are_not_strings() {
        // kustomize decodes the kustomization as JSON: `1.0`, `yes` or `y`
        // where a string belongs is an error naming the field's path
        for (src, want) in [
            (
                "namePrefix: yes\n",
                "bool into Go struct field Kustomization.namePrefix of type string",
            ),
            (
                "commonLabels:\n  a: 1\n",
                "number into Go struct field Kustomization.commonLabels of type string",
            ),
            (
                "resources:\n- a.yaml\n- 123\n",
                "number into Go struct field Kustomization.resources of type string",
            ),
            (
                "images:\n- name: nginx\n  newTag: 1.0\n",
                "number into Go struct field Image.images.newTag of type string",
            ),
            (
                "labels:\n- pairs:\n    a: y\n",
                "bool into Go struct field Label.labels.pairs of type string",
            ),
            (
                "configMapGenerator:\n- name: c\n  options:\n    labels:\n      a: 1\n",
                "number into Go struct field GeneratorOptions.configMapGenerator.options.labels of type string",
            ),
            (
                "vars:\n- name: V\n  objref:\n    kind: Service\n    name: 1\n",
                "number into Go struct field Target.vars.objref.name of type string",
            ),
            (
                "replicas:\n- name: d\n  count: '3'\n",
                "string into Go struct field Replica.replicas.count of type int64",
            ),
            (
                "sortOptions:\n  order: 1\n",
                "number into Go struct field SortOptions.sortOptions.order of type types.SortOrder",
            ),
        ] {
            let e = decode(src).unwrap_err();
            assert!(e.message.contains(want), "{src}: {}", e.message);
            assert!(e.message.contains("kustomization.yaml"), "{}", e.message);
        }
        // null is an empty string; quoted scalars are strings
        let k = decode("namePrefix: ~\nimages:\n- name: nginx\n  newTag: '1.0'\n").unwrap();
        assert_eq!(
            (k.name_prefix.as_str(), k.images[0].new_tag.as_str()),
            ("", "1.0")
        );
    }

    #[test]
    fn plugin_configurations_take_scalars_as_text() {
        let v = parse_documents("name: nginx\nnewTag: 1.5\n")
            .unwrap()
            .remove(0);
        assert_eq!(decode_image_entry(&v).unwrap().new_tag, "1.5");
        let v = parse_documents("name: 12\ncount: 2\n").unwrap().remove(0);
        assert_eq!(decode_replica_entry(&v).unwrap().name, "12");
    }

    #[test]
    fn a_kustomization_of_nothing_but_its_type_is_empty() {
        let doc = |src: &str| {
            parse_documents(src)
                .unwrap()
                .into_iter()
                .next()
                .unwrap_or(Value::Null)
        };
        for src in [
            "",
            "kind: Kustomization\n",
            "kind: Component\nresources:\nnamePrefix: \"\"\n",
        ] {
            assert!(is_empty_document(&doc(src)), "{src}");
        }
        // an empty list or map given is something
        assert!(!is_empty_document(&doc("resources: []\n")));
        assert!(!is_empty_document(&doc("commonLabels: {}\n")));
    }

    #[test]
    fn unknown_field_is_an_error() {
        let e = decode("resources: []\nfoo: 1\n").unwrap_err();
        assert!(e.message.contains("unknown field \"foo\""), "{}", e.message);
        let e = decode("patches:\n- path: a.yaml\n  bogus: 1\n").unwrap_err();
        assert!(
            e.message.contains("unknown field \"bogus\""),
            "{}",
            e.message
        );
    }

    #[test]
    fn empty_and_wrong_kind() {
        assert!(decode("").unwrap_err().message.contains("is empty"));
        assert!(decode("kind: Deployment\n").is_err());
        let c = decode("kind: Component\napiVersion: kustomize.config.k8s.io/v1alpha1\n").unwrap();
        assert_eq!(c.kind, KustKind::Component);
        assert!(decode("kind: Component\napiVersion: kustomize.config.k8s.io/v1beta1\n").is_err());
    }

    #[test]
    fn catalogs_field() {
        let k = decode("catalogs: [catalog.yaml, ../c2.yaml]\ntransformers: [f.yaml]\n").unwrap();
        assert_eq!(k.catalogs, vec!["catalog.yaml", "../c2.yaml"]);
        let c = decode(
            "kind: Component\napiVersion: kustomize.config.k8s.io/v1alpha1\ncatalogs: [c.yaml]\n",
        )
        .unwrap();
        assert_eq!(c.catalogs, vec!["c.yaml"]);
        let e = decode("catalogs: c.yaml\n").unwrap_err();
        assert!(
            e.message.contains("Kustomization.catalogs"),
            "{}",
            e.message
        );
    }

    #[test]
    fn type_mismatch_names_field() {
        let e = decode("resources: foo\n").unwrap_err();
        assert!(
            e.message.contains("Kustomization.resources"),
            "{}",
            e.message
        );
    }
}
