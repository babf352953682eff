//! The engine's hook for external plugins: KRM functions (exec and
//! container) and legacy exec plugins.
//!
//! The engine never starts a process itself. It decides *what* runs (from
//! a plugin config's `config.kubernetes.io/function` annotation, or from
//! `$KUSTOMIZE_PLUGIN_HOME` for legacy plugins), encodes kustomize's
//! bookkeeping into the internal annotations kustomize 5.5 shows plugins,
//! and calls a [`FunctionRunner`] given in
//! [`BuildOptions::function_runner`](super::BuildOptions). `None` refuses
//! every external plugin with a clear error. [`crate::krm`] provides the
//! process runner used by `krmsync build`.

use std::path::{Path, PathBuf};

use super::error::Error;
use super::resid::{Gvk, ResId};
use super::resource::{Behavior, Origin, Resource};
use super::yaml::{Mapping, Value, parse};

/// `config.kubernetes.io/function`.
pub const FUNCTION_ANNOTATION: &str = "config.kubernetes.io/function";
/// The pre-v1 spelling kustomize still reads.
pub const LEGACY_FUNCTION_ANNOTATION: &str = "config.k8s.io/function";
/// kustomize's resource-id annotation for plugin transformers.
pub const KUSTOMIZE_ID_ANNOTATION: &str = "kustomize.config.k8s.io/id";
/// Generators ask for a name hash with this annotation (`"true"`).
pub const NEEDS_HASH_ANNOTATION: &str = "kustomize.config.k8s.io/needs-hash";
/// Generators set create/merge/replace with this annotation.
pub const BEHAVIOR_ANNOTATION: &str = "kustomize.config.k8s.io/behavior";
/// `config.kubernetes.io/local-config`.
pub const LOCAL_CONFIG_ANNOTATION: &str = "config.kubernetes.io/local-config";

const ORIGIN_ANNOTATION: &str = "config.kubernetes.io/origin";
const TRANSFORMATIONS_ANNOTATION: &str = "alpha.config.kubernetes.io/transformations";
const PREVIOUS_NAMES: &str = "internal.config.kubernetes.io/previousNames";
const PREVIOUS_KINDS: &str = "internal.config.kubernetes.io/previousKinds";
const PREVIOUS_NAMESPACES: &str = "internal.config.kubernetes.io/previousNamespaces";
const PREFIXES: &str = "internal.config.kubernetes.io/prefixes";
const SUFFIXES: &str = "internal.config.kubernetes.io/suffixes";
const GEN_BEHAVIOR: &str = "internal.config.kubernetes.io/generatorBehavior";
const NEEDS_HASH_SUFFIX: &str = "internal.config.kubernetes.io/needsHashSuffix";

/// How a KRM function runs (the `config.kubernetes.io/function` value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FunctionSpec {
    /// `exec: {path, network, envs}`: a program, relative paths resolved
    /// against the kustomization directory. `network` (`true` or
    /// `{required: true}`) and `envs` (`KEY=VALUE`, or `KEY` to pass the
    /// variable through) are krmsync extensions kustomize ignores; a
    /// catalog sets them from its exec runtime.
    Exec {
        path: String,
        network: bool,
        envs: Vec<String>,
    },
    /// `container: {image, network, mounts, envs}`.
    Container(ContainerSpec),
}

/// `container:` of a function spec.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ContainerSpec {
    pub image: String,
    /// `network: true` (or `network: {required: true}`).
    pub network: bool,
    pub mounts: Vec<StorageMount>,
    /// `KEY=VALUE`, or `KEY` to pass the variable through.
    pub envs: Vec<String>,
}

/// One `container.mounts` entry.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct StorageMount {
    pub mount_type: String,
    pub src: String,
    pub dst: String,
    pub rw: bool,
}

impl StorageMount {
    /// A mount given on the command line (`--mount`), in kustomize's
    /// syntax: comma-separated `key=value` options, `type`, `src` (or
    /// `source`), `dst` (or `target`) and `rw=true`. A relative `src` is
    /// taken relative to `cwd`.
    pub fn from_flag(flag: &str, cwd: &Path) -> Result<StorageMount, String> {
        let mut m = StorageMount::default();
        for option in flag.split(',') {
            let Some((key, value)) = option.split_once('=') else {
                continue;
            };
            let value = value.trim();
            match key.trim() {
                "type" => m.mount_type = value.to_string(),
                "src" | "source" => m.src = value.to_string(),
                "dst" | "target" => m.dst = value.to_string(),
                "rw" => m.rw = value == "true",
                _ => {}
            }
        }
        if m.src.is_empty() || m.dst.is_empty() {
            return Err(format!(
                "--mount {flag:?}: needs src and dst (type=bind,src=DIR,dst=PATH[,rw=true])"
            ));
        }
        m.src = cwd.join(&m.src).to_string_lossy().into_owned();
        Ok(m)
    }
}

/// One KRM function invocation.
#[derive(Debug)]
pub struct FunctionCall<'a> {
    pub spec: &'a FunctionSpec,
    /// `api: <apiVersion>, kind: <kind>, name: <name>`, for messages.
    pub name: &'a str,
    /// The function config (with `config.kubernetes.io/local-config`).
    pub function_config: &'a Value,
    /// The input items (kustomize's internal annotations included).
    pub items: Vec<Value>,
    /// The directory of the kustomization that configured the function.
    pub working_dir: &'a Path,
}

/// One legacy exec plugin invocation.
#[derive(Debug)]
pub struct LegacyPluginCall<'a> {
    /// Absolute path of the plugin program.
    pub path: &'a Path,
    /// `argsOneLiner` words or `argsFromFile` lines (after the config
    /// file path, which the runner supplies).
    pub args: &'a [String],
    /// The plugin config YAML (written to a temporary file and passed in
    /// `KUSTOMIZE_PLUGIN_CONFIG_STRING`).
    pub config: &'a str,
    /// The kustomization directory (`KUSTOMIZE_PLUGIN_CONFIG_ROOT`, and
    /// the working directory).
    pub config_root: &'a Path,
    /// Standard input (the resources, for transformers).
    pub stdin: &'a [u8],
}

/// Runs external plugins for the engine. Implementations decide how (a
/// child process, a sandbox, a pod); the engine only sees data.
pub trait FunctionRunner: Send + Sync {
    /// Runs a KRM function; returns the output items with the runtime's
    /// own annotations (index, id, path) removed. Results of severity
    /// `error`, a non-zero exit or a timeout are errors naming the function.
    fn run_function(&self, call: FunctionCall<'_>) -> Result<Vec<Value>, String>;

    /// Finds the legacy plugin program for a config's group, version and
    /// kind (`<home>/<group>/<version>/<lowercase kind>/<Kind>`).
    fn locate_legacy_plugin(&self, gvk: &Gvk) -> Result<PathBuf, String>;

    /// Runs a legacy exec plugin; returns its standard output.
    fn run_legacy_plugin(&self, call: LegacyPluginCall<'_>) -> Result<Vec<u8>, String>;
}

/// A catalog named in a kustomization's `catalogs:` (KEP-2906), read by
/// the engine through its loader.
#[derive(Clone, Debug)]
pub struct CatalogFile {
    /// The `catalogs:` entry as written.
    pub entry: String,
    /// The file it names (absolute in the engine's file system).
    pub path: PathBuf,
    /// The kustomization (or component) file that references it.
    pub referenced_by: PathBuf,
    /// Its bytes.
    pub content: Vec<u8>,
}

/// A function config resolved through a catalog.
pub trait ResolvedFunction: Send + Sync + std::fmt::Debug {
    /// What was resolved, for messages (`example.com/v1 Kind from catalog.yaml`).
    fn describe(&self) -> String;
    /// Called immediately before every run: the runtime to run, after
    /// whatever checks the resolver makes (an exec binary's digest).
    fn prepare(&self) -> Result<FunctionSpec, Error>;
}

/// The layer a plugin config is resolved in.
#[derive(Clone, Copy, Debug)]
pub struct CatalogLayer<'a> {
    /// The layer's `catalogs:`, read.
    pub catalogs: &'a [CatalogFile],
    /// The kustomization directory (absolute in the engine's file system).
    pub dir: &'a Path,
}

/// Which plugin configs a [`CatalogResolver`] decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CatalogScope {
    /// KEP-2906 as on the CLI: configs without a runtime annotation, in
    /// layers with `catalogs:`; explicit runtimes and other layers follow
    /// kustomize's flags (`--enable-alpha-plugins`, `--enable-exec`).
    Layer,
    /// In-cluster: every non-builtin plugin config of every layer goes
    /// through the resolver, whatever its annotation says; one it does not
    /// approve never runs (the build fails with
    /// [`ErrorKind::FunctionNotApproved`](super::ErrorKind::FunctionNotApproved)).
    /// Legacy exec plugins never run.
    Build,
}

/// Resolves function configs through trusted catalogs (KEP-2906). The
/// engine only reads the catalog files; trust, parsing and locating
/// binaries are the resolver's.
pub trait CatalogResolver: Send + Sync {
    /// Checks a layer's catalogs when the layer is loaded: every one must
    /// be trusted and valid.
    fn check(&self, catalogs: &[CatalogFile]) -> Result<(), String>;

    /// The function for a config (group, version and kind of
    /// `function_config`), searching the catalogs in order; `None` when no
    /// catalog defines its group and kind.
    fn resolve(
        &self,
        layer: CatalogLayer<'_>,
        function_config: &Value,
    ) -> Result<Option<std::sync::Arc<dyn ResolvedFunction>>, Error>;

    /// Which configs this resolver decides (default: [`CatalogScope::Layer`]).
    fn scope(&self) -> CatalogScope {
        CatalogScope::Layer
    }
}

fn annotation<'a>(cfg: &'a Value, key: &str) -> Option<&'a str> {
    cfg.str_at(&["metadata", "annotations", key])
}

/// The function spec of a plugin config, if it names one (kustomize's
/// `GetFunctionSpec`: the annotation, its legacy spelling,
/// `config.kubernetes.io/container`, or `metadata.configFn`).
pub fn function_spec(cfg: &Value) -> Result<Option<FunctionSpec>, String> {
    let text = annotation(cfg, FUNCTION_ANNOTATION)
        .filter(|s| !s.is_empty())
        .or_else(|| annotation(cfg, LEGACY_FUNCTION_ANNOTATION).filter(|s| !s.is_empty()));
    let spec = match text {
        Some(t) => parse::parse_documents(t)
            .map_err(|e| format!("{FUNCTION_ANNOTATION}: {}", e.message))?
            .into_iter()
            .next()
            .unwrap_or(Value::Null),
        None => match annotation(cfg, "config.kubernetes.io/container").filter(|s| !s.is_empty()) {
            Some(image) => {
                return Ok(Some(FunctionSpec::Container(ContainerSpec {
                    image: image.to_string(),
                    ..Default::default()
                })));
            }
            None => match cfg.get_path(&["metadata", "configFn"]) {
                Some(v) if !v.is_null() => v.clone(),
                _ => return Ok(None),
            },
        },
    };
    let exec_path = spec.str_at(&["exec", "path"]).unwrap_or("");
    let network_of = |v: Option<&Value>| match v {
        Some(Value::Bool(b)) => *b,
        Some(n) => n.get("required").and_then(Value::as_bool) == Some(true),
        None => false,
    };
    let envs_of = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_seq)
            .map(|s| s.iter().filter_map(Value::scalar_to_string).collect())
            .unwrap_or_default()
    };
    let c = spec.get("container");
    let image = c.and_then(|c| c.str_at(&["image"])).unwrap_or("");
    if !image.is_empty() {
        let c = c.cloned().unwrap_or(Value::Null);
        let network = network_of(c.get("network"));
        let mounts = c
            .get("mounts")
            .and_then(Value::as_seq)
            .map(|s| {
                s.iter()
                    .map(|m| StorageMount {
                        mount_type: m.str_at(&["type"]).unwrap_or("").to_string(),
                        src: m.str_at(&["src"]).unwrap_or("").to_string(),
                        dst: m.str_at(&["dst"]).unwrap_or("").to_string(),
                        rw: m.get("rw").and_then(Value::as_bool) == Some(true),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let envs = envs_of(c.get("envs"));
        return Ok(Some(FunctionSpec::Container(ContainerSpec {
            image: image.to_string(),
            network,
            mounts,
            envs,
        })));
    }
    if !exec_path.is_empty() {
        let exec = spec.get("exec");
        return Ok(Some(FunctionSpec::Exec {
            path: exec_path.to_string(),
            network: network_of(exec.and_then(|e| e.get("network"))),
            envs: envs_of(exec.and_then(|e| e.get("envs"))),
        }));
    }
    // An annotation naming neither: kustomize treats the config as a
    // function that does nothing.
    Ok(Some(FunctionSpec::Exec {
        path: String::new(),
        network: false,
        envs: Vec::new(),
    }))
}

/// kustomize's load-time check of container mounts: sources must be
/// relative paths under the kustomization directory.
pub fn check_mounts(spec: &FunctionSpec, org_id: &ResId) -> Result<(), String> {
    let FunctionSpec::Container(c) = spec else {
        return Ok(());
    };
    for m in &c.mounts {
        if m.src.starts_with('/') {
            return Err(format!(
                "plugin {org_id} with mount path '{}' is not permitted; mount paths must be relative to the current kustomization directory",
                m.src
            ));
        }
        if super::fs::clean(Path::new(&m.src))
            .to_string_lossy()
            .starts_with("../")
        {
            return Err(format!(
                "plugin {org_id} with mount path '{}' is not permitted; mount paths must be under the current kustomization directory",
                m.src
            ));
        }
    }
    Ok(())
}

fn annotations_mut(obj: &mut Value) -> Option<&mut Mapping> {
    obj.ensure_map_path(&["metadata", "annotations"])
}

/// The resource as kustomize holds it while plugins run: its bookkeeping
/// as `internal.config.kubernetes.io/*`, origin and transformation
/// annotations.
pub fn encode_resource(r: &Resource) -> Value {
    let mut obj = r.obj.clone();
    let add = bookkeeping_annotations(r);
    if !add.is_empty()
        && let Some(a) = annotations_mut(&mut obj)
    {
        for (k, v) in add {
            a.insert(k.to_string(), Value::String(v));
        }
    }
    obj
}

/// The bookkeeping kustomize keeps on a resource as annotations while it
/// builds: previous ids, name prefixes and suffixes, generator options (as
/// `internal.config.kubernetes.io/*`), origin and transformations
/// (`buildMetadata`).
pub fn bookkeeping_annotations(r: &Resource) -> Vec<(&'static str, String)> {
    let mut add: Vec<(&'static str, String)> = Vec::new();
    if !r.prev_ids.is_empty() {
        let join =
            |f: &dyn Fn(&ResId) -> String| r.prev_ids.iter().map(f).collect::<Vec<_>>().join(",");
        add.push((PREVIOUS_KINDS, join(&|id| id.gvk.kind.clone())));
        add.push((PREVIOUS_NAMES, join(&|id| id.name.clone())));
        add.push((PREVIOUS_NAMESPACES, join(&|id| id.namespace.clone())));
    }
    if !r.name_prefixes.is_empty() {
        add.push((PREFIXES, r.name_prefixes.join(",")));
    }
    if !r.name_suffixes.is_empty() {
        add.push((SUFFIXES, r.name_suffixes.join(",")));
    }
    if r.generated {
        let b = match r.behavior {
            Behavior::Unspecified => "unspecified",
            Behavior::Create => "create",
            Behavior::Merge => "merge",
            Behavior::Replace => "replace",
        };
        add.push((GEN_BEHAVIOR, b.to_string()));
    }
    if r.needs_hash {
        add.push((NEEDS_HASH_SUFFIX, "enabled".to_string()));
    }
    if let Some(o) = &r.origin {
        add.push((ORIGIN_ANNOTATION, o.annotation()));
    }
    if !r.transformations.is_empty() {
        add.push((
            TRANSFORMATIONS_ANNOTATION,
            Origin::list_annotation(&r.transformations),
        ));
    }
    add
}

fn take(a: &mut Mapping, key: &str) -> Option<String> {
    a.shift_remove(key)
        .and_then(|v| v.scalar_to_string())
        .filter(|s| !s.is_empty())
}

fn split_list(s: Option<String>) -> Vec<String> {
    s.map(|s| s.split(',').map(str::to_string).collect())
        .unwrap_or_default()
}

/// Parses an origin annotation value.
pub fn parse_origin(text: &str) -> Option<Origin> {
    let v = parse::parse_documents(text).ok()?.into_iter().next()?;
    origin_from_value(&v)
}

fn origin_from_value(v: &Value) -> Option<Origin> {
    v.as_map()?;
    let s = |p: &[&str]| v.str_at(p).unwrap_or("").to_string();
    let api = v.get_path(&["configuredBy", "apiVersion"]);
    Some(Origin {
        path: s(&["path"]),
        configured_in: s(&["configuredIn"]),
        configured_by_api_version: match api.and_then(Value::as_str) {
            Some("builtin") => None,
            Some(a) => Some(a.to_string()),
            None => Some(String::new()),
        },
        configured_by_kind: s(&["configuredBy", "kind"]),
        configured_by_name: s(&["configuredBy", "name"]),
        configured_by_namespace: s(&["configuredBy", "namespace"]),
    })
}

/// The inverse of [`encode_resource`]: a resource a plugin returned, its
/// bookkeeping read back from (and removed from) its annotations.
pub fn decode_resource(mut obj: Value) -> Resource {
    let mut r = Resource::default();
    let ann = obj
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_map_mut);
    let mut history = History::default();
    if let Some(a) = ann {
        history = History::take(a);
        if let Some(b) = take(a, GEN_BEHAVIOR) {
            r.generated = true;
            r.behavior = Behavior::parse(&b).unwrap_or_default();
        }
        r.origin = take(a, ORIGIN_ANNOTATION).and_then(|t| parse_origin(&t));
        if let Some(t) = take(a, TRANSFORMATIONS_ANNOTATION)
            && let Ok(docs) = parse::parse_documents(&t)
            && let Some(Value::Seq(items)) = docs.into_iter().next()
        {
            r.transformations = items.iter().filter_map(origin_from_value).collect();
        }
    }
    drop_empty_annotations(&mut obj);
    r.obj = obj;
    history.apply(&mut r);
    r
}

/// The bookkeeping kustomize keeps in a resource's annotations and
/// krmsync on the resource itself: earlier names, kinds and namespaces,
/// the prefixes and suffixes added, whether the name needs a hash.
#[derive(Default)]
struct History {
    kinds: Vec<String>,
    names: Vec<String>,
    namespaces: Vec<String>,
    prefixes: Vec<String>,
    suffixes: Vec<String>,
    needs_hash: bool,
}

impl History {
    /// Reads the annotations and removes them.
    fn take(a: &mut Mapping) -> History {
        History {
            kinds: split_list(take(a, PREVIOUS_KINDS)),
            names: split_list(take(a, PREVIOUS_NAMES)),
            namespaces: split_list(take(a, PREVIOUS_NAMESPACES)),
            prefixes: split_list(take(a, PREFIXES)),
            suffixes: split_list(take(a, SUFFIXES)),
            needs_hash: take(a, NEEDS_HASH_SUFFIX).as_deref() == Some("enabled"),
        }
    }

    /// Records it on the resource: the earlier ids (a missing kind is the
    /// resource's own; the group and version are its `apiVersion`'s).
    fn apply(self, r: &mut Resource) {
        r.needs_hash |= self.needs_hash;
        r.name_prefixes.extend(self.prefixes);
        r.name_suffixes.extend(self.suffixes);
        let api = r.obj.str_at(&["apiVersion"]).unwrap_or("").to_string();
        let own_kind = r.obj.str_at(&["kind"]).unwrap_or("").to_string();
        for (i, name) in self.names.iter().enumerate() {
            let kind = self.kinds.get(i).unwrap_or(&own_kind);
            let ns = self.namespaces.get(i).map(String::as_str).unwrap_or("");
            r.prev_ids
                .push(ResId::new(Gvk::from_api_version(&api, kind), name, ns));
        }
    }
}

/// Annotations kustomize keeps its build bookkeeping in, and removes from
/// every resource before printing (its `resource.BuildAnnotations`).
const BUILD_ONLY_ANNOTATIONS: &[&str] = &[
    "internal.config.kubernetes.io/refBy",
    "internal.config.kubernetes.io/allowNameChange",
    "internal.config.kubernetes.io/allowKindChange",
    GEN_BEHAVIOR,
    "internal.config.kubernetes.io/path",
    "internal.config.kubernetes.io/index",
    "internal.config.kubernetes.io/seqindent",
    "internal.config.kubernetes.io/id",
    "internal.config.kubernetes.io/annotations-migration-resource-id",
    "config.kubernetes.io/path",
    "config.kubernetes.io/index",
    "config.k8s.io/id",
];

/// A resource read from a file (or a chart's output) may already carry
/// kustomize's bookkeeping annotations, as files written by KRM tooling
/// do (`config.kubernetes.io/index`, `internal.config.kubernetes.io/...`).
/// kustomize keeps its bookkeeping in those very annotations, so it acts
/// on them and removes them from the output. The same here: previous
/// names, kinds and namespaces become the resource's earlier ids (patches
/// and replacements find it by them), recorded prefixes and suffixes count
/// for name references, `needsHashSuffix: enabled` asks for a hash suffix,
/// and all of them, with the other bookkeeping annotations, are removed.
pub fn absorb_build_annotations(r: &mut Resource) {
    let Some(a) = r
        .obj
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_map_mut)
    else {
        return;
    };
    let bookkeeping = a.keys().any(|k| {
        k.starts_with("internal.config.kubernetes.io/")
            || BUILD_ONLY_ANNOTATIONS.contains(&k.as_str())
    });
    if !bookkeeping {
        return;
    }
    let history = History::take(a);
    for k in BUILD_ONLY_ANNOTATIONS {
        a.shift_remove(*k);
    }
    drop_empty_annotations(&mut r.obj);
    history.apply(r);
}

/// Removes `metadata.annotations` when it is empty.
pub fn drop_empty_annotations(obj: &mut Value) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_map_mut)
        && meta
            .get("annotations")
            .is_some_and(|a| a.as_map().is_some_and(|m| m.is_empty()))
    {
        meta.shift_remove("annotations");
    }
}

/// kustomize's YAML form of a resource id (`kustomize.config.k8s.io/id`):
/// the non-empty fields, keys sorted.
pub fn id_annotation(id: &ResId) -> String {
    let mut out = String::new();
    for (k, v) in [
        ("group", &id.gvk.group),
        ("kind", &id.gvk.kind),
        ("name", &id.name),
        ("namespace", &id.namespace),
        ("version", &id.gvk.version),
    ] {
        if !v.is_empty() {
            let mut m = Mapping::new();
            m.insert(k.to_string(), Value::String(v.clone()));
            let mut s = String::new();
            if super::yaml::write_document(&mut s, &Value::Map(m)).is_ok() {
                out.push_str(&s);
            }
        }
    }
    out
}

/// Removes a key from a resource's annotations.
pub fn remove_annotation(obj: &mut Value, key: &str) {
    if let Some(a) = obj
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_map_mut)
    {
        a.shift_remove(key);
    }
    drop_empty_annotations(obj);
}

/// Generators' options (`UpdateResourceOptions`): the needs-hash and
/// behavior annotations become the resource's options and are removed.
pub fn apply_generator_options(r: &mut Resource) -> Result<(), String> {
    let (mut needs_hash, mut behavior) = (false, String::new());
    if let Some(a) = r
        .obj
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_map_mut)
    {
        if let Some(v) = a.shift_remove(NEEDS_HASH_ANNOTATION) {
            let s = v.scalar_to_string().unwrap_or_default();
            needs_hash = match s.as_str() {
                "1" | "t" | "T" | "true" | "TRUE" | "True" => true,
                "0" | "f" | "F" | "false" | "FALSE" | "False" => false,
                _ => {
                    return Err(format!(
                        "the annotation \"{NEEDS_HASH_ANNOTATION}\" contains an invalid value (\"{s}\")"
                    ));
                }
            };
        }
        if let Some(v) = a.shift_remove(BEHAVIOR_ANNOTATION) {
            behavior = v.scalar_to_string().unwrap_or_default();
        }
    }
    drop_empty_annotations(&mut r.obj);
    r.needs_hash = needs_hash;
    r.behavior = Behavior::parse(&behavior).map_err(|e| e.message)?;
    r.generated = true;
    Ok(())
}
