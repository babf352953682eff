//! The render engine: a kustomize v5.5-compatible `build`.
//!
//! Pure by construction: it reads only through the [`fs::FileSystem`] it is
//! given, opens no network connection (remote references are refused with
//! [`ErrorKind::RemoteReference`]), keeps no global mutable state and uses
//! no `unsafe`. Many builds may run in parallel.
//!
//! ```
//! use std::{path::Path, sync::Arc};
//! use krmsync::kustomize::{build, BuildOptions, fs::MemFs};
//!
//! let mut fs = MemFs::new();
//! fs.add_file("/app/kustomization.yaml", "namePrefix: dev-\nresources: [cm.yaml]\n")
//!   .add_file("/app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n");
//! let out = build(Arc::new(fs), Path::new("/app"), &BuildOptions::default()).unwrap();
//! assert_eq!(out.to_yaml().unwrap(), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dev-c\n");
//! ```

pub mod accumulator;
pub mod documents;
pub mod error;
pub mod fieldpath;
pub mod fieldspec;
pub mod fs;
pub mod function;
pub mod generator;
pub mod goregex;
pub mod helm;
pub mod kustomization;
pub mod loader;
pub mod nameref;
pub mod openapi;
pub mod patch;
pub mod patches;
pub mod plugins;
pub mod replacement;
pub mod resid;
pub mod resource;
pub mod selector;
pub mod sort;
pub mod target;
pub mod transform;
pub mod vars;
pub mod yaml;

use std::path::Path;
use std::sync::Arc;

pub use error::{Error, ErrorKind, Result};
pub use loader::LoadRestrictor;

use fs::FileSystem;
use loader::Loader;
use openapi::Schema;
use resource::{Origin, ResMap, Resource};
use target::{Accumulator, BuildCtx, Target};
use yaml::Value;

/// The `--reorder` flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Reorder {
    /// kustomize's legacy kind order (the CLI default).
    #[default]
    Legacy,
    /// Keep accumulation order.
    None,
}

/// Options of one build.
#[derive(Clone, Default)]
pub struct BuildOptions {
    /// `None`: the flag was not given (legacy order; `sortOptions` wins silently).
    pub reorder: Option<Reorder>,
    pub load_restrictor: LoadRestrictor,
    pub enable_alpha_plugins: bool,
    /// `--enable-exec`: run exec KRM functions (with alpha plugins). As in
    /// kustomize, without it exec functions are skipped (with a warning).
    pub enable_exec: bool,
    pub enable_managedby_label: bool,
    /// Runs external plugins (KRM functions, legacy exec plugins). `None`:
    /// every external plugin is refused with an error.
    pub function_runner: Option<Arc<dyn function::FunctionRunner>>,
    /// Resolves function configs through trusted catalogs (KEP-2906).
    /// `None`: a kustomization with `catalogs:` is an error.
    pub catalog_resolver: Option<Arc<dyn function::CatalogResolver>>,
    /// `--enable-helm`: renders `helmCharts` through this runner. `None`:
    /// a chart is an error (`must specify --enable-helm`), as in kustomize.
    pub helm: Option<helm::HelmOptions>,
}

impl std::fmt::Debug for BuildOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuildOptions")
            .field("reorder", &self.reorder)
            .field("load_restrictor", &self.load_restrictor)
            .field("enable_alpha_plugins", &self.enable_alpha_plugins)
            .field("enable_exec", &self.enable_exec)
            .field("enable_managedby_label", &self.enable_managedby_label)
            .field("function_runner", &self.function_runner.is_some())
            .field("catalog_resolver", &self.catalog_resolver.is_some())
            .field("helm", &self.helm.is_some())
            .finish()
    }
}

/// The result of a build.
#[derive(Clone, Debug, Default)]
pub struct Rendered {
    /// The resources, in output order.
    pub resources: Vec<Value>,
    /// Warnings kustomize would log (e.g. `sortOptions` overriding `--reorder`).
    pub warnings: Vec<String>,
}

impl Rendered {
    /// The YAML stream, byte-identical to `kustomize build`.
    pub fn to_yaml(&self) -> Result<String> {
        let mut out = String::new();
        for (i, r) in self.resources.iter().enumerate() {
            if i > 0 {
                out.push_str("---\n");
            }
            yaml::write_document(&mut out, r).map_err(|e| Error::invalid(e.0))?;
        }
        Ok(out)
    }
}

/// Appends content hashes to the names of generated resources (those that
/// still ask for one). As in kustomize, hashing does not clear the request:
/// a `HashTransformer` listed in a kustomization's `transformers` hashes the
/// names it finds, and the build hashes them again at its end, from the
/// content they have then (`name-<h1>-<h2>`).
pub(crate) fn add_hashes(m: &mut ResMap, schema: &Schema) -> Result<()> {
    for r in m.resources_mut().iter_mut() {
        if !r.needs_hash {
            continue;
        }
        let h = generator::content_hash(&r.obj)?;
        r.store_previous_id(schema);
        let name = format!("{}-{h}", r.name());
        r.set_name(&name);
    }
    Ok(())
}

/// kustomize's `DropLocalNodes`: a resource is local when it has the
/// `config.kubernetes.io/local-config` annotation with any value but
/// `false` (`"yes"`, `"TRUE"` and an empty value all count).
fn is_local_config(r: &Resource) -> bool {
    r.annotations()
        .and_then(|a| a.get(function::LOCAL_CONFIG_ANNOTATION))
        .is_some_and(|v| v.scalar_to_string().as_deref() != Some("false"))
}

/// kustomize records a resource's earlier ids in three comma-separated
/// annotations (names, namespaces, kinds; an empty name or kind is not
/// recorded) and reads them back, for every resource, when it fixes name
/// references. A name, namespace or kind holding a comma, or a resource
/// renamed while it had no name, makes the three lists differ in length,
/// and kustomize panics there: refused here with its message.
fn check_previous_ids(m: &ResMap) -> Result<()> {
    for r in m.resources() {
        // the length of one annotation's list; `None` when nothing is recorded
        let count = |part: fn(&resid::ResId) -> &str| {
            r.prev_ids
                .iter()
                .map(part)
                .filter(|s| !s.is_empty())
                .map(|s| s.split(',').count())
                .reduce(|a, b| a + b)
        };
        // without recorded names kustomize reads no earlier ids at all
        let Some(names) = count(|id| &id.name) else {
            continue;
        };
        let namespaces = count(|id| &id.namespace).unwrap_or(1);
        let kinds = count(|id| &id.gvk.kind).unwrap_or(1);
        if names != namespaces || names != kinds {
            return Err(Error::invalid(format!(
                "{}: number of previous names, number of previous namespaces, number of previous kinds not equal \
                 (a name, namespace or kind holding a comma, or a resource renamed without a name: kustomize panics here)",
                r.cur_id()
            )));
        }
    }
    Ok(())
}

/// kustomize's last step (`IgnoreLocal`): every resource is read again as a
/// resource, so each needs a kind and, unless it is a `*List`, a name (a
/// patch or a replacement may have removed them), and they make a new map,
/// where two resources that transformers gave the same id collide (a local
/// one too: kustomize's sort finds it). Then the local ones are dropped.
fn ignore_local(m: ResMap) -> Result<ResMap> {
    for r in m.resources() {
        let missing = if r.kind().is_empty() {
            "kind"
        } else if !documents::named_or_list(&r.obj) {
            "metadata.name"
        } else {
            continue;
        };
        return Err(Error::invalid(format!(
            "missing {missing} in object {}",
            documents::go_meta(&r.obj)
        )));
    }
    let mut out = ResMap::new();
    for mut r in m.into_resources() {
        // kustomize's bookkeeping gives every resource a metadata map (a
        // `*List` may have none of its own)
        if let Value::Map(obj) = &mut r.obj
            && !obj.contains_key("metadata")
        {
            obj.insert("metadata".into(), Value::new_map());
        }
        out.append(r)?;
    }
    out.retain(|r| !is_local_config(r));
    Ok(out)
}

/// Builds the kustomization in directory `dir` (absolute) of `fs`.
pub fn build(fs: Arc<dyn FileSystem>, dir: &Path, opts: &BuildOptions) -> Result<Rendered> {
    let loader = Loader::new(fs, dir, opts.load_restrictor)?;
    let top_root = loader.root().to_path_buf();
    let ctx = BuildCtx::new(opts);
    let target = Target::load(loader, &ctx, top_root, None)?;
    let mut ra = Accumulator::new();
    target.accumulate(&mut ra)?;
    let builtin = Schema::builtin();
    let mut m = ra.resources;
    add_hashes(&mut m, &builtin)?;
    check_previous_ids(&m)?;
    nameref::fix_name_references(&mut m, &ra.config.name_reference, &builtin)?;
    vars::resolve_vars(&mut m, &ra.vars, &ra.config.var_reference)?;
    let m = ignore_local(m)?;

    let mut warnings = ctx.take_warnings();
    let mut resources = m.into_resources();
    let (first, last, legacy) = match &target.kust.sort_options {
        Some(so) => {
            if opts.reorder.is_some() {
                warnings.push(
                    "Warning: --reorder was set but sortOptions were also specified in the \
                     kustomization; the sortOptions take precedence"
                        .to_string(),
                );
            }
            match so.order.as_str() {
                "legacy" => (
                    // Given `legacySortOptions`, a missing list is empty;
                    // without them both lists are kustomize's defaults.
                    legacy_kinds(so, &so.order_first, sort::DEFAULT_ORDER_FIRST),
                    legacy_kinds(so, &so.order_last, sort::DEFAULT_ORDER_LAST),
                    true,
                ),
                "fifo" if so.legacy_options_set => {
                    return Err(Error::invalid(
                        "the field 'sortOptions.legacySortOptions' is set but the selected \
                         sort order is 'fifo', not 'legacy'",
                    ));
                }
                "fifo" => (vec![], vec![], false),
                _ => {
                    return Err(Error::invalid(
                        "the field 'sortOptions.order' must be one of [fifo, legacy]",
                    ));
                }
            }
        }
        None => (
            sort::DEFAULT_ORDER_FIRST
                .iter()
                .map(|s| s.to_string())
                .collect(),
            sort::DEFAULT_ORDER_LAST
                .iter()
                .map(|s| s.to_string())
                .collect(),
            opts.reorder.unwrap_or_default() == Reorder::Legacy,
        ),
    };
    if legacy {
        sort::legacy_sort(&mut resources, &first, &last);
    }

    let managed_by =
        opts.enable_managedby_label || target.build_metadata.iter().any(|b| b == "managedByLabel");
    let origins = target
        .build_metadata
        .iter()
        .any(|b| b == "originAnnotations");
    let transformations = target
        .build_metadata
        .iter()
        .any(|b| b == "transformerAnnotations");
    // kustomize's managed-by label is a LabelTransformer over
    // metadata/labels (create): an existing key is written in place, so
    // the fields a labels transformer linked to it change too.
    let managed_by_spec = [fieldspec::FieldSpec::new(
        resid::Gvk::default(),
        "metadata/labels",
        true,
    )];
    let managed_by_pair = [(
        "app.kubernetes.io/managed-by".to_string(),
        "kustomize-(devel)".to_string(),
    )];
    let mut out = Vec::with_capacity(resources.len());
    for mut r in resources {
        // kustomize decodes every resource on the way out
        if let Some(e) = replacement::mistyped_error(&r.obj, &r.scalar_texts) {
            return Err(Error::invalid(e));
        }
        if managed_by {
            transform::apply_map_entries(&mut r, &managed_by_pair, &managed_by_spec)?;
        }
        if transformations && !r.transformations.is_empty() {
            let text = Origin::list_annotation(&r.transformations);
            if let Some(ann) = r.obj.ensure_map_path(&["metadata", "annotations"]) {
                ann.insert(
                    "alpha.config.kubernetes.io/transformations".into(),
                    Value::String(text),
                );
            }
        }
        if origins && let Some(o) = &r.origin {
            let text = o.annotation();
            if let Some(ann) = r.obj.ensure_map_path(&["metadata", "annotations"]) {
                ann.insert("config.kubernetes.io/origin".into(), Value::String(text));
            }
        }
        // kustomize rewrites annotations on the way out (removing its build
        // annotations, through a map of strings: a value a patch made a
        // boolean or a number comes out as its text) and drops the field
        // when nothing is left.
        if let Some(Value::Map(ann)) = r
            .obj
            .get_mut("metadata")
            .and_then(|m| m.get_mut("annotations"))
        {
            for v in ann.values_mut() {
                match v {
                    Value::Bool(_) | Value::Int(_) | Value::UInt(_) | Value::Float(_) => {
                        *v = Value::String(fieldpath::scalar_text(v));
                    }
                    // only a patch makes one (a null read from a file keeps
                    // its text): JSON's null
                    Value::Null => *v = Value::String("null".into()),
                    _ => {}
                }
            }
        }
        if let Some(meta) = r.obj.get_mut("metadata").and_then(Value::as_map_mut)
            && meta
                .get("annotations")
                .is_some_and(|a| a.as_map().is_none_or(|m| m.is_empty()))
        {
            meta.shift_remove("annotations");
        }
        out.push(r.obj);
    }
    Ok(Rendered {
        resources: out,
        warnings,
    })
}

/// Convenience: builds a directory on the real disk.
pub fn build_dir(dir: &Path, opts: &BuildOptions) -> Result<Rendered> {
    let abs = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| Error::io(format!("cannot read the current directory: {e}")))?
            .join(dir)
    };
    build(Arc::new(fs::DiskFs::new()), &fs::clean(&abs), opts)
}

fn legacy_kinds(
    so: &kustomization::SortOptions,
    list: &Option<Vec<String>>,
    default: &[&str],
) -> Vec<String> {
    match list {
        Some(l) => l.clone(),
        None if so.legacy_options_set => Vec::new(),
        None => default.iter().map(|s| s.to_string()).collect(),
    }
}
