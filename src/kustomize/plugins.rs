//! `generators:`, `transformers:` and `validators:` entries.
//!
//! Entries are inline YAML, files or kustomization directories whose
//! resources are plugin configurations. Builtin kinds (`apiVersion:
//! builtin`) run in-process. Anything else is an external plugin (a KRM
//! function or a legacy exec plugin), run through the build's
//! [`FunctionRunner`](super::function::FunctionRunner) when
//! `--enable-alpha-plugins` is given (see [`external`]).

use super::accumulator::Accumulator;
use super::documents::split_resources;
use super::error::{Error, Result};
use super::fieldspec::{FieldSpec, TransformerConfig};
use super::function::CatalogFile;
use super::generator::{GenKind, generate};
use super::kustomization::{
    GeneratorArgs, GeneratorOptions, PatchEntry, decode_image_entry, decode_patch,
    decode_replica_entry,
};
use super::loader::Loader;
use super::openapi::Schema;
use super::patches;
use super::replacement::{self, ReplacementResource, TextScalar};
use super::resid::{Gvk, ResId};
use super::resource::Origin;
use super::resource::{ResMap, Resource};
use super::transform::{self, SubjectMode};
use super::yaml::{Mapping, PathSeg, Value, parse};

pub(crate) mod config;
mod external;

/// Builtin plugin kinds kustomize 5.5 can load from `generators:` /
/// `transformers:`.
const BUILTIN_KINDS: &[&str] = &[
    "AnnotationsTransformer",
    "ConfigMapGenerator",
    "HashTransformer",
    "IAMPolicyGenerator",
    "ImageTagTransformer",
    "LabelTransformer",
    "NamespaceTransformer",
    "PatchJson6902Transformer",
    "PatchStrategicMergeTransformer",
    "PatchTransformer",
    "PrefixSuffixTransformer",
    "PrefixTransformer",
    "ReplacementTransformer",
    "ReplicaCountTransformer",
    "SecretGenerator",
    "SuffixTransformer",
    "ValueAddTransformer",
    "HelmChartInflationGenerator",
];

/// What plugins need of the kustomization layer that runs them. The target
/// implements it; plugins never see the target itself.
pub trait Layer {
    /// The layer's loader (its root and load restrictions).
    fn loader(&self) -> &Loader;
    fn opts(&self) -> &super::BuildOptions;
    /// Records a build warning.
    fn warn(&self, message: String);
    /// The OpenAPI schema in force.
    fn schema(&self) -> std::sync::Arc<Schema>;
    /// The layer's `catalogs:`, read.
    fn catalogs(&self) -> &[CatalogFile];
    /// The layer's `catalogs:` entries as written.
    fn catalog_entries(&self) -> &[String];
    /// The layer's `validators:` entries.
    fn validators(&self) -> &[String];
    /// The origin a plugin config gives what it makes (buildMetadata).
    fn config_origin(&self, kind: &str, name: &str, config_file: Option<&str>) -> Option<Origin>;
    /// `first` (inline configs), then the plugin configs named by files or
    /// directories, read like `resources:` into one map.
    fn accumulate_configs(&self, first: Vec<Resource>, paths: Vec<String>)
    -> Result<Vec<Resource>>;
}

/// Loads plugin config documents for a list of entries: inline YAML
/// configs first, then files and directories (kustomize's order).
fn load_configs(t: &dyn Layer, entries: &[&String], role: Role) -> Result<Vec<Resource>> {
    // kustomize appends the inline configs to one map: an id twice is an
    // error
    let mut inline = ResMap::new();
    let mut paths = Vec::new();
    for e in entries {
        match parse::parse_documents_strict(e) {
            // kustomize takes an entry as inline config when it reads as
            // resources: every document is empty (nothing, null, `{}`,
            // `[]`: an inline config of no plugin) or a map with a kind and
            // a name. Anything else is a path.
            Ok(docs)
                if docs.iter().all(|d| match d {
                    Value::Null => true,
                    Value::Map(m) if m.is_empty() => true,
                    Value::Seq(s) => s.is_empty(),
                    Value::Map(_) => super::documents::missing_metadata(d).is_none(),
                    _ => false,
                }) =>
            {
                for d in split_resources(docs, "inline plugin config")? {
                    inline
                        .append(Resource::new(d))
                        .map_err(|e| e.context(format!("configuring external {}", role.noun())))?;
                }
            }
            _ => paths.push((*e).clone()),
        }
    }
    if paths.is_empty() {
        return Ok(inline.into_resources());
    }
    // the files are accumulated after the inline configs, into the same
    // map: an id twice is an error, as in kustomize
    t.accumulate_configs(inline.into_resources(), paths)
}

fn kind_of(cfg: &Resource) -> Result<(bool, String)> {
    let api = cfg.api_version();
    let kind = cfg.kind().to_string();
    let builtin = api == "builtin" && BUILTIN_KINDS.contains(&kind.as_str());
    if api == "builtin" && kind == "SortOrderTransformer" {
        return Err(Error::invalid(
            "unable to load builtin SortOrderTransformer.builtin.[noGrp] (it is not allowed in `transformers:`; use the top-level `sortOptions` field)",
        ));
    }
    if api == "builtin" && !builtin {
        return Err(Error::invalid(format!(
            "unable to load builtin {}",
            Gvk::from_api_version(&api, &kind).go_string()
        )));
    }
    Ok((builtin, kind))
}

pub(crate) fn external_error(t: &dyn Layer, cfg: &Resource) -> Error {
    if !t.opts().enable_alpha_plugins {
        return Error::invalid(format!(
            "external plugins disabled; unable to load external plugin '{}' ({}): enable with --enable-alpha-plugins",
            cfg.kind(),
            cfg.cur_id()
        ));
    }
    Error::invalid(format!(
        "unable to run external plugin '{}' ({}): krmsync build does not execute KRM functions or legacy plugins",
        cfg.kind(),
        cfg.cur_id()
    ))
}

/// A config field, matched like Go's JSON decoding: exactly, else
/// case-insensitively.
fn field<'a>(obj: &'a Value, key: &str) -> Option<&'a Value> {
    let m = obj.as_map()?;
    m.get(key).or_else(|| {
        m.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

fn o_get<'a>(m: &'a Mapping, key: &str) -> Option<&'a Value> {
    m.get(key).or_else(|| {
        m.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

fn fs_list(v: Option<&Value>, what: &str) -> Result<Vec<FieldSpec>> {
    let mut out = Vec::new();
    if let Some(Value::Seq(items)) = v {
        for i in items {
            out.push(FieldSpec::from_value(i, what)?);
        }
    }
    Ok(out)
}

fn str_pairs(v: Option<&Value>) -> Vec<(String, String)> {
    v.and_then(Value::as_map)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.scalar_to_string().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default()
}

fn str_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_seq)
        .map(|s| s.iter().filter_map(Value::scalar_to_string).collect())
        .unwrap_or_default()
}

fn s(v: Option<&Value>) -> String {
    v.and_then(Value::scalar_to_string).unwrap_or_default()
}

fn generator_args(obj: &Value, secret: bool) -> Result<GeneratorArgs> {
    let mut envs = str_list(field(obj, "envs"));
    let env = s(field(obj, "env"));
    if !env.is_empty() {
        envs.push(env);
    }
    let options = match field(obj, "options") {
        Some(Value::Map(o)) => Some(GeneratorOptions {
            labels: str_pairs(o_get(o, "labels")),
            annotations: str_pairs(o_get(o, "annotations")),
            disable_name_suffix_hash: o_get(o, "disableNameSuffixHash").and_then(Value::as_bool)
                == Some(true),
            immutable: o_get(o, "immutable").and_then(Value::as_bool) == Some(true),
        }),
        _ => None,
    };
    Ok(GeneratorArgs {
        name: {
            let n = s(field(obj, "name"));
            if n.is_empty() {
                s(obj.get_path(&["metadata", "name"]))
            } else {
                n
            }
        },
        namespace: {
            let n = s(field(obj, "namespace"));
            if n.is_empty() {
                s(obj.get_path(&["metadata", "namespace"]))
            } else {
                n
            }
        },
        behavior: s(field(obj, "behavior")),
        literals: str_list(field(obj, "literals")),
        files: str_list(field(obj, "files")),
        envs,
        options,
        secret_type: if secret {
            s(field(obj, "type"))
        } else {
            String::new()
        },
    })
}

/// Runs the `generators:` entries (inline configs first, then files, as
/// kustomize orders them); returns the generated resources.
pub fn run_generators(t: &dyn Layer, entries: &[String]) -> Result<Vec<Resource>> {
    // kustomize loads and configures every generator before running one
    let configs = load_configs(t, &entries.iter().collect::<Vec<_>>(), Role::Generator)
        .map_err(|e| e.context("loading generator plugins"))?;
    let mut plugins = Vec::with_capacity(configs.len());
    for cfg in configs {
        let plugin = configure(t, &cfg, Role::Generator)
            .map_err(|e| e.context("loading generator plugins: failed to load generator"))?;
        plugins.push((cfg, plugin));
    }
    let mut out = Vec::new();
    for (cfg, plugin) in plugins {
        let kind = match plugin {
            Plugin::External(ext) => {
                out.extend(external::generate(t, &cfg, &ext)?);
                continue;
            }
            Plugin::Builtin(kind) => kind,
        };
        let obj = &cfg.obj;
        let origin = cfg.origin.clone();
        match kind.as_str() {
            "ConfigMapGenerator" | "SecretGenerator" => {
                let secret = kind == "SecretGenerator";
                let args = generator_args(obj, secret)?;
                let gk = if secret {
                    GenKind::Secret
                } else {
                    GenKind::ConfigMap
                };
                let mut r = generate(&args, gk, None, t.loader())?;
                r.origin =
                    t.config_origin(&kind, &cfg.name(), origin.as_ref().map(|o| o.path.as_str()));
                out.push(r);
            }
            "IAMPolicyGenerator" => {
                let mut r = iam_policy(obj)?;
                r.origin =
                    t.config_origin(&kind, &cfg.name(), origin.as_ref().map(|o| o.path.as_str()));
                out.push(r);
            }
            "HelmChartInflationGenerator" => {
                let (globals, chart) = super::kustomization::decode_helm_plugin_config(obj)?;
                let o =
                    t.config_origin(&kind, &cfg.name(), origin.as_ref().map(|o| o.path.as_str()));
                for mut r in super::helm::inflate(
                    t.loader(),
                    t.opts().helm.as_ref(),
                    &globals,
                    &chart,
                    &t.schema(),
                )? {
                    r.origin = o.clone();
                    out.push(r);
                }
            }
            other => {
                return Err(Error::invalid(format!(
                    "builtin {other} is a transformer, not a generator"
                )));
            }
        }
    }
    Ok(out)
}

/// kustomize's IAMPolicyGenerator: it writes the ServiceAccount as YAML
/// text with the configured values pasted in, then reads it, so a value
/// that is not plain YAML text changes or breaks the document the same way
/// here.
fn iam_policy(obj: &Value) -> Result<Resource> {
    let cloud = s(field(obj, "cloud"));
    if cloud != "gke" {
        return Err(Error::invalid(format!(
            "cloud provider {cloud} not supported yet"
        )));
    }
    let ns = s(obj.get_path(&["kubernetesService", "namespace"]));
    let ksa = s(obj.get_path(&["kubernetesService", "name"]));
    let gsa = s(obj.get_path(&["serviceAccount", "name"]));
    let project = s(obj.get_path(&["serviceAccount", "projectId"]));
    let mut text = format!(
        "\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  annotations:\n    iam.gke.io/gcp-service-account: {gsa}@{project}.iam.gserviceaccount.com\n  name: {ksa}\n"
    );
    if !ns.is_empty() {
        text.push_str(&format!("\n  namespace: {ns}"));
    }
    let doc = parse::parse_documents_strict(&text)
        .map_err(|e| Error::invalid(e.message))?
        .into_iter()
        .next()
        .unwrap_or(Value::Null);
    Ok(Resource::new(doc))
}

/// Runs the `transformers:` entries on the accumulated resources (inline
/// configs first, then files, as kustomize orders them).
pub fn run_transformers(t: &dyn Layer, ra: &mut Accumulator, entries: &[String]) -> Result<()> {
    // kustomize loads and configures every transformer before running one
    let configs = load_configs(t, &entries.iter().collect::<Vec<_>>(), Role::Transformer)?;
    let mut plugins = Vec::with_capacity(configs.len());
    for cfg in configs {
        let plugin = configure(t, &cfg, Role::Transformer)?;
        plugins.push((cfg, plugin));
    }
    for (cfg, plugin) in plugins {
        let kind = match plugin {
            Plugin::External(ext) => {
                external::transform(t, &mut ra.resources, &cfg, &ext)?;
                ra.record_transformer(external::origin(t, &cfg));
                continue;
            }
            Plugin::Builtin(kind) => kind,
        };
        run_builtin_transformer(t, ra, &kind, &cfg.obj)
            .map_err(|e| plugin_error(e, &kind, &cfg.obj))?;
        let origin = t
            .config_origin(
                &kind,
                &cfg.name(),
                cfg.origin.as_ref().map(|o| o.path.as_str()),
            )
            .map(|mut o| {
                o.configured_by_namespace = cfg.namespace().to_string();
                o
            });
        ra.record_transformer(origin);
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq)]
enum Role {
    Generator,
    Transformer,
}

impl Role {
    fn noun(self) -> &'static str {
        match self {
            Role::Generator => "generator",
            Role::Transformer => "transformer",
        }
    }
}

/// A plugin loaded and configured, ready to run.
enum Plugin {
    Builtin(String),
    External(external::External),
}

/// Builtin kinds that generate; the others transform.
const GENERATOR_KINDS: &[&str] = &[
    "ConfigMapGenerator",
    "SecretGenerator",
    "IAMPolicyGenerator",
    "HelmChartInflationGenerator",
];

/// Loads the plugin a config names and configures it, as kustomize's
/// plugin loader does: the configuration is decoded and checked first,
/// then the plugin must be of the role its entry asks for.
fn configure(t: &dyn Layer, cfg: &Resource, role: Role) -> Result<Plugin> {
    let (builtin, kind) = kind_of(cfg)?;
    if !builtin {
        return external::load(t, cfg, role.noun()).map(Plugin::External);
    }
    let fails = |reason: String| {
        Error::invalid(format!(
            "plugin {} fails configuration: {reason}",
            config_id(&cfg.obj)
        ))
    };
    config::check(&kind, &cfg.obj).map_err(fails)?;
    check_patch_config(t, &kind, &cfg.obj).map_err(fails)?;
    let generates = GENERATOR_KINDS.contains(&kind.as_str());
    match role {
        Role::Generator if !generates => Err(Error::invalid(format!(
            "plugin {} not a generator",
            config_id(&cfg.obj)
        ))),
        Role::Transformer if generates => Err(Error::invalid(format!(
            "plugin {} not a transformer",
            config_id(&cfg.obj)
        ))),
        _ => Ok(Plugin::Builtin(kind)),
    }
}

/// A plugin config's id as kustomize prints it
/// (`PatchTransformer.builtin.[noGrp]/name.[noNs]`).
fn config_id(obj: &Value) -> ResId {
    let api = s(field(obj, "apiVersion"));
    let gvk = Gvk::from_api_version(&api, &s(field(obj, "kind")));
    ResId::new(
        gvk,
        &s(obj.get_path(&["metadata", "name"])),
        &s(obj.get_path(&["metadata", "namespace"])),
    )
}

/// An error of a builtin transformer configured in `transformers:`. The
/// code it shares with the kustomization's own fields reports a bad
/// configuration as kustomize does for a field (`trouble configuring
/// builtin <Kind>[ with config: `...`]: <reason>`); for a plugin config
/// kustomize says `plugin <id> fails configuration: <reason>`. Other
/// errors are prefixed with the transformer's kind.
fn plugin_error(e: Error, kind: &str, obj: &Value) -> Error {
    let framed = format!("trouble configuring builtin {kind}");
    let Some(rest) = e.message.strip_prefix(&framed) else {
        return e.context(format!("builtin {kind}"));
    };
    let reason = match rest.strip_prefix(" with config: `") {
        Some(r) => r.split_once("`: ").map(|(_, reason)| reason).unwrap_or(r),
        None => rest.strip_prefix(": ").unwrap_or(rest),
    };
    Error::of(
        e.kind,
        format!("plugin {} fails configuration: {reason}", config_id(obj)),
    )
}

/// kustomize checks a patch plugin's configuration when it loads the plugin
/// and reports a bad one as `plugin <id> fails configuration: <reason>`:
/// the same checks, with its reasons, before the patch runs.
fn check_patch_config(t: &dyn Layer, kind: &str, obj: &Value) -> std::result::Result<(), String> {
    let text = |k: &str| s(field(obj, k));
    let config_yaml = || {
        let mut out = String::new();
        match super::yaml::write_document(&mut out, obj) {
            Ok(()) => out,
            Err(_) => String::new(),
        }
    };
    match kind {
        "PatchJson6902Transformer" => {
            if s(obj.get_path(&["target", "name"])).is_empty() {
                return Err("must specify the target name".into());
            }
            let (path, op) = (text("path"), text("jsonOp"));
            if path.is_empty() && op.is_empty() {
                return Err("empty file path and empty jsonOp".into());
            }
            if !path.is_empty() {
                if !op.is_empty() {
                    return Err("must specify a file path or jsonOp, not both".into());
                }
                t.loader().read(&path).map_err(|e| e.to_string())?;
            }
        }
        "PatchTransformer" => {
            let (patch, path) = (text("patch"), text("path"));
            match (patch.trim().is_empty(), path.is_empty()) {
                (true, true) => {
                    return Err(format!(
                        "must specify one of patch and path in\n{}",
                        config_yaml()
                    ));
                }
                (false, false) => {
                    return Err(format!(
                        "patch and path can't be set at the same time\n{}",
                        config_yaml()
                    ));
                }
                (true, false) => {
                    t.loader().read(&path).map_err(|e| {
                        format!("failed to get the patch file from path({path}): {e}")
                    })?;
                }
                (false, true) => {}
            }
        }
        "PatchStrategicMergeTransformer"
            if str_list(field(obj, "paths")).is_empty() && text("patches").trim().is_empty() =>
        {
            return Err("empty file path and empty patch content".into());
        }
        _ => {}
    }
    Ok(())
}

fn run_builtin_transformer(
    t: &dyn Layer,
    ra: &mut Accumulator,
    kind: &str,
    obj: &Value,
) -> Result<()> {
    let schema = t.schema();
    let m = &mut ra.resources;
    let specs = |what: &str| fs_list(field(obj, "fieldSpecs"), what);
    match kind {
        "AnnotationsTransformer" => {
            transform::set_map_entries(m, &str_pairs(field(obj, "annotations")), &specs(kind)?)
        }
        "LabelTransformer" => {
            transform::set_map_entries(m, &str_pairs(field(obj, "labels")), &specs(kind)?)
        }
        "NamespaceTransformer" => {
            let ns = s(obj.get_path(&["metadata", "namespace"]));
            let unset_only = field(obj, "unsetOnly").and_then(Value::as_bool) == Some(true);
            let mode = SubjectMode::parse(&s(field(obj, "setRoleBindingSubjects")))?;
            transform::namespace(m, &ns, &specs(kind)?, unset_only, mode, &schema)
        }
        "PrefixTransformer" => {
            transform::prefix_suffix(m, &s(field(obj, "prefix")), "", &specs(kind)?, &[], &schema)
        }
        "SuffixTransformer" => {
            transform::prefix_suffix(m, "", &s(field(obj, "suffix")), &[], &specs(kind)?, &schema)
        }
        "PrefixSuffixTransformer" => {
            let fs = specs(kind)?;
            transform::prefix_suffix(m, &s(field(obj, "prefix")), "", &fs, &[], &schema)?;
            transform::prefix_suffix(m, "", &s(field(obj, "suffix")), &[], &fs, &schema)
        }
        "ImageTagTransformer" => {
            let img = decode_image_entry(field(obj, "imageTag").unwrap_or(&Value::Null))?;
            transform::images(m, &[img], &specs(kind)?)
        }
        "ReplicaCountTransformer" => {
            let rep = decode_replica_entry(field(obj, "replica").unwrap_or(&Value::Null))?;
            transform::replicas(m, &[rep], &specs(kind)?)
        }
        "PatchTransformer" => {
            let mut cfg = obj.clone();
            if let Some(cm) = cfg.as_map_mut() {
                for k in ["apiVersion", "kind", "metadata"] {
                    cm.shift_remove(k);
                }
            }
            let p: PatchEntry = decode_patch(&cfg, "PatchTransformer")?;
            patches::apply_patch_entry(t.loader(), m, &p, &schema)
        }
        "PatchStrategicMergeTransformer" => {
            // an empty config was refused by `check_patch_config`
            let paths = str_list(field(obj, "paths"));
            let inline = s(field(obj, "patches"));
            // paths may hold a patch's text too (kustomize's legacy rule);
            // `patches` is always text
            let mut loaded = patches::load_strategic_merge(t.loader(), &paths)?;
            if !inline.trim().is_empty() {
                loaded.extend(patches::inline_strategic_merge(&inline)?);
            }
            if loaded.is_empty() {
                return Err(Error::invalid(format!(
                    "plugin {} fails configuration: patch appears to be empty; files=[{}], Patch={inline}",
                    config_id(obj),
                    paths.join(" ")
                )));
            }
            patches::apply_strategic_merge_by_id(m, &loaded, &schema)
        }
        "PatchJson6902Transformer" => {
            let p = PatchEntry {
                path: s(field(obj, "path")),
                patch: s(field(obj, "jsonOp")),
                target: field(obj, "target").cloned(),
                from_plugin: true,
                ..Default::default()
            };
            patches::apply_json6902_entry(t.loader(), m, &p)
        }
        "ReplacementTransformer" => {
            let reps = field(obj, "replacements")
                .and_then(Value::as_seq)
                .cloned()
                .unwrap_or_default();
            replacements(t.loader(), m, &reps, true)
        }
        "HashTransformer" => super::add_hashes(m, &schema),
        "ValueAddTransformer" => {
            // Without `value`, the name of the directory of the kustomization
            // using the transformer is the value.
            let default = t
                .loader()
                .root()
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            value_add(t.loader(), m, obj, &default, &schema)
        }
        other => Err(Error::invalid(format!(
            "builtin {other} is a generator, not a transformer"
        ))),
    }
}

/// One target of a ValueAddTransformer.
struct ValueAddTarget {
    selector: Option<super::selector::Selector>,
    field_path: String,
    file_path_position: i64,
}

/// The targets of a ValueAddTransformer config (`targets`, then those of
/// `targetFilePath`), checked as kustomize checks them.
fn value_add_targets(
    loader: &Loader,
    obj: &Value,
) -> std::result::Result<Vec<ValueAddTarget>, String> {
    let mut raw: Vec<Value> = field(obj, "targets")
        .and_then(Value::as_seq)
        .cloned()
        .unwrap_or_default();
    let file = s(field(obj, "targetFilePath"));
    if !file.is_empty() {
        let text = loader.read_string(&file).map_err(|e| e.to_string())?;
        let doc = super::yaml::parse_documents(&text)
            .map_err(|e| format!("{file}: {}", e.message))?
            .into_iter()
            .next()
            .unwrap_or(Value::Null);
        raw.extend(
            field(&doc, "targets")
                .and_then(Value::as_seq)
                .cloned()
                .unwrap_or_default(),
        );
    }
    if raw.is_empty() {
        return Err("must specify at least one target".into());
    }
    raw.iter()
        .map(|t| {
            let selector = field(t, "selector")
                .filter(|v| !v.is_null())
                .map(|v| {
                    super::selector::Selector::from_value_lenient(
                        v,
                        "ValueAddTransformer.targets.selector",
                    )
                })
                .transpose()?;
            let field_path = s(field(t, "fieldPath"));
            if field_path.is_empty() {
                return Err("fieldPath cannot be empty".to_string());
            }
            let file_path_position = field(t, "filePathPosition")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            if file_path_position < 0 {
                return Err(format!(
                    "value of FilePathPosition ({file_path_position}) cannot be negative"
                ));
            }
            Ok(ValueAddTarget {
                selector,
                field_path,
                file_path_position,
            })
        })
        .collect()
}

/// `value` inserted as path segment `pos` (1-based) of `old`, kustomize's
/// `InsertPathPart`: a position past the end appends, a leading `/` stays.
fn insert_path_part(old: &str, pos: usize, value: &str) -> String {
    if old.is_empty() {
        return value.to_string();
    }
    let absolute = old.starts_with('/');
    let mut parts: Vec<&str> = old.split('/').filter(|p| !p.is_empty()).collect();
    let at = pos.min(parts.len());
    parts.insert(at, value);
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

/// ValueAddTransformer (alpha; kustomize's plugin/builtin/valueaddtransformer):
/// writes `value` (trimmed; default: the kustomization directory's name)
/// into `targets[].fieldPath` of the resources each target's selector picks
/// (all without one). `metadata/namespace` is set like the namespace
/// transformer does (namespaced kinds only, RoleBinding subjects named
/// `default` too); any other path is created when missing and must be a
/// scalar; `filePathPosition` > 0 inserts the value as that segment of the
/// path already there.
fn value_add(
    loader: &Loader,
    m: &mut ResMap,
    obj: &Value,
    default: &str,
    schema: &super::openapi::Schema,
) -> Result<()> {
    let config_id = config_id(obj);
    let value = match s(field(obj, "value")).trim() {
        "" => default.to_string(),
        v => v.to_string(),
    };
    let targets = value_add_targets(loader, obj)
        .map_err(|e| Error::invalid(format!("plugin {config_id} fails configuration: {e}")))?;
    for t in &targets {
        let hits: Vec<usize> = match &t.selector {
            None => (0..m.resources().len()).collect(),
            Some(sel) => patches::select(m, sel, schema)?,
        };
        if t.field_path == "metadata/namespace" {
            // kustomize's namespace filter, on the selected resources only
            for &i in &hits {
                transform::namespace_resource(
                    &mut m.resources_mut()[i],
                    &value,
                    &[],
                    false,
                    SubjectMode::DefaultOnly,
                    schema,
                )?;
            }
            continue;
        }
        let spec = FieldSpec::new(Default::default(), &t.field_path, true);
        let rewrite = |old: &str| {
            if t.file_path_position > 0 {
                insert_path_part(old, (t.file_path_position - 1) as usize, &value)
            } else {
                value.clone()
            }
        };
        for &i in &hits {
            let r = &mut m.resources_mut()[i];
            let id = r.cur_id();
            // kyaml's scalar setter: the text goes in untyped (it reads as
            // plain YAML: `0123` is the number 83) unless the field was
            // quoted
            let texts = &r.scalar_texts;
            let quoted = &r.quoted;
            let mut plain = Vec::new();
            super::fieldspec::walk_with_path(
                &mut r.obj,
                &spec,
                super::fieldspec::Leaf::Scalar,
                &mut |path, v| {
                    if matches!(v, Value::Map(_) | Value::Seq(_)) {
                        return Err(Error::invalid(format!(
                            "field '{}' of {id} is not a scalar",
                            t.field_path
                        )));
                    }
                    if v.is_null() {
                        let new = rewrite("");
                        *v = replacement::untyped(&new);
                        plain.push((path.to_vec(), new));
                    } else if let Some(new) =
                        replacement::set_scalar_text(texts, quoted, path, v, |old| {
                            Some(rewrite(old))
                        })
                    {
                        plain.push((path.to_vec(), new));
                    }
                    // kustomize reads annotations back as their text
                    if let [PathSeg::Key(m), PathSeg::Key(a), PathSeg::Key(_)] = path
                        && m == "metadata"
                        && a == "annotations"
                        && let Some((_, text)) = plain.last().filter(|(p, _)| p == path)
                    {
                        *v = Value::String(text.clone());
                    }
                    Ok(())
                },
            )?;
            replacement::keep_untyped(&mut r.scalar_texts, plain);
        }
    }
    Ok(())
}

impl ReplacementResource for Resource {
    fn ids(&self) -> Vec<ResId> {
        self.all_ids()
    }
    fn object(&self) -> &Value {
        &self.obj
    }
    fn has_links(&self) -> bool {
        !self.links.is_empty()
    }
    fn written(&mut self, before: &Value) {
        self.propagate_links(before);
    }
    fn scalar_texts(&self) -> &[TextScalar] {
        &self.scalar_texts
    }
    fn object_and_texts_mut(&mut self) -> (&mut Value, &mut Vec<TextScalar>) {
        (&mut self.obj, &mut self.scalar_texts)
    }
}

/// Runs `replacements:` entries (inline or `{path: file}`) of a
/// kustomization (strictly decoded).
pub fn run_replacements(loader: &Loader, m: &mut ResMap, entries: &[Value]) -> Result<()> {
    replacements(loader, m, entries, false)
}

/// Replacement entries: `{path: file}` entries load a file holding one
/// replacement or a list; inline entries are decoded strictly, or leniently
/// for ReplacementTransformer configs (as kustomize decodes plugin configs).
fn replacements(loader: &Loader, m: &mut ResMap, entries: &[Value], lenient: bool) -> Result<()> {
    let mut reps = Vec::new();
    for e in entries {
        let path = e.get("path").and_then(Value::as_str);
        match path {
            Some(p) if e.as_map().is_some_and(|mm| mm.len() == 1) => {
                let text = loader.read_string(p)?;
                let docs = parse::parse_documents(&text)
                    .map_err(|err| Error::invalid(format!("{p}: {}", err.message)))?;
                // only the first document counts (sigs.k8s.io/yaml)
                if let Some(d) = docs.first().filter(|d| !d.is_null()) {
                    reps.extend(
                        replacement::parse_list(d)
                            .map_err(|err| Error::invalid(format!("{p}: {err}")))?,
                    );
                }
            }
            _ if lenient => {
                reps.push(replacement::parse_replacement_lenient(e).map_err(Error::invalid)?)
            }
            _ => reps.push(replacement::parse_replacement(e).map_err(Error::invalid)?),
        }
    }
    replacement::apply_replacements(m.resources_mut(), &reps).map_err(Error::invalid)
}

/// `validators:` entries: builtin kustomize has no validators, so every
/// entry is an external plugin, run as a transformer that must not change
/// the resources (beyond a `validated-by` label).
pub fn run_validators(t: &dyn Layer, ra: &mut Accumulator) -> Result<()> {
    let entries: Vec<&String> = t.validators().iter().collect();
    let configs = load_configs(t, &entries, Role::Transformer)?;
    let mut exts = Vec::new();
    for cfg in &configs {
        let (builtin, kind) = kind_of(cfg)?;
        if builtin {
            return Err(Error::invalid(format!(
                "builtin {kind} cannot be used as a validator"
            )));
        }
        exts.push(external::load(t, cfg, "transformer")?);
    }
    for (cfg, ext) in configs.iter().zip(&exts) {
        let original = ra.resources.clone();
        external::transform(t, &mut ra.resources, cfg, ext)?;
        external::check_unmodified(&original, &ra.resources)?;
    }
    Ok(())
}

/// `crds:` entries (legacy): OpenAPI definitions keyed by Go type name.
/// For every definition that looks like a Kubernetes type (it has `kind`,
/// `apiVersion` and `metadata` properties) the properties are walked,
/// following `$ref`s: `x-kubernetes-object-ref-kind` (with optional
/// `-api-version` and `-name-key`) adds a name-reference field spec,
/// `x-kubernetes-label-selector` a label field spec and
/// `x-kubernetes-annotation` an annotation field spec.
pub fn config_from_crd(loader: &Loader, file: &str) -> Result<TransformerConfig> {
    let text = loader.read_string(file)?;
    if text.is_empty() {
        // kustomize panics on an empty file
        return Err(Error::invalid(format!(
            "unable to parse open API definition from '{file}': the file is empty"
        )));
    }
    let docs = parse::parse_documents(&text)
        .map_err(|e| Error::invalid(format!("{file}: {}", e.message)))?;
    // kustomize decodes the file (its first document) into a map of
    // OpenAPI definitions: anything else is an error
    let go_type = |v: &Value| match v {
        Value::Null | Value::Map(_) => None,
        Value::Seq(_) => Some("array"),
        Value::String(_) => Some("string"),
        Value::Bool(_) => Some("bool"),
        _ => Some("number"),
    };
    let refuse = |found: &str, into: &str| {
        let via = if text.starts_with('{') {
            ""
        } else {
            "error unmarshaling JSON: while decoding JSON: "
        };
        Error::invalid(format!(
            "unable to parse open API definition from '{file}': {via}json: cannot unmarshal {found} into Go value of type accumulator.{into}"
        ))
    };
    let mut cfg = TransformerConfig::default();
    if let Some(d) = docs.first() {
        if let Some(t) = go_type(d) {
            return Err(refuse(t, "nameToApiMap"));
        }
        let Some(defs) = d.as_map() else {
            return Ok(cfg);
        };
        if let Some(t) = defs.values().find_map(go_type) {
            return Err(refuse(t, "OpenAPIDefinition"));
        }
        for (type_name, def) in defs {
            let Some(props) = crd_props(def) else {
                continue;
            };
            if !["kind", "apiVersion", "metadata"]
                .iter()
                .all(|k| props.contains_key(*k))
            {
                continue;
            }
            let kind = type_name.rsplit('.').next().unwrap_or(type_name);
            let gvk = Gvk::new("", "", kind);
            let mut path = Vec::new();
            collect_crd_refs(defs, &gvk, type_name, &mut path, &mut cfg, 0);
        }
    }
    Ok(cfg)
}

fn crd_props(def: &Value) -> Option<&Mapping> {
    def.get_path(&["Schema", "properties"])
        .or_else(|| def.get("properties"))
        .and_then(Value::as_map)
}

fn collect_crd_refs(
    defs: &Mapping,
    gvk: &super::resid::Gvk,
    type_name: &str,
    path: &mut Vec<String>,
    cfg: &mut TransformerConfig,
    depth: usize,
) {
    if depth > 64 {
        return;
    }
    let Some(props) = defs.get(type_name).and_then(crd_props) else {
        return;
    };
    for (prop, p) in props {
        path.push(prop.clone());
        let spec_at = |extra: Option<&str>| {
            let mut parts = path.clone();
            if let Some(e) = extra {
                parts.push(e.to_string());
            }
            FieldSpec::new(gvk.clone(), &parts.join("/"), false)
        };
        if p.get("x-kubernetes-label-selector").is_some() {
            cfg.common_labels.push(spec_at(None));
        }
        if p.get("x-kubernetes-annotation").is_some() {
            cfg.common_annotations.push(spec_at(None));
        }
        if let Some(ref_kind) = p.str_at(&["x-kubernetes-object-ref-kind"]) {
            let name_key = p
                .str_at(&["x-kubernetes-object-ref-name-key"])
                .unwrap_or("name");
            let version = p
                .str_at(&["x-kubernetes-object-ref-api-version"])
                .unwrap_or("");
            let target = Gvk::new("", version, ref_kind);
            let fs = spec_at(Some(name_key));
            match cfg.name_reference.iter_mut().find(|r| r.gvk == target) {
                Some(r) => r.referrers.push(fs),
                None => cfg.name_reference.push(super::fieldspec::NameBackRef {
                    gvk: target,
                    referrers: vec![fs],
                }),
            }
        }
        if let Some(r) = p.str_at(&["$ref"]) {
            collect_crd_refs(defs, gvk, r, path, cfg, depth + 1);
        }
        path.pop();
    }
}
