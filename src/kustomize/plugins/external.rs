//! External plugins in a build: KRM functions (a config annotated with
//! `config.kubernetes.io/function`) and legacy exec plugins (a program
//! under the plugin home named by the config's group, version and kind),
//! run through the build's [`FunctionRunner`].
//!
//! kustomize 5.5's contract, reproduced here:
//! * generators' output is parsed as resources; `kustomize.config.k8s.io/needs-hash`
//!   and `kustomize.config.k8s.io/behavior` become generator options;
//! * transformers see every accumulated resource with kustomize's internal
//!   annotations and a `kustomize.config.k8s.io/id` annotation; each output
//!   resource replaces the one with its current id or is appended, and
//!   resources missing from the output are removed;
//! * exec functions without `--enable-exec` are skipped.
//!
//! A config with no runtime annotation in a layer with `catalogs:` is
//! first resolved through the build's [`CatalogResolver`](function::CatalogResolver)
//! (KEP-2906). Trusting the catalog is the opt-in for its functions: they
//! run without `--enable-alpha-plugins` / `--enable-exec`, and the
//! resolver checks the runtime (an exec binary's sha256) before each run.

use std::path::PathBuf;
use std::sync::Arc;

use function::ResolvedFunction;

use super::super::documents::parse_resources;
use super::super::error::{Error, ErrorKind, Result};
use super::super::function::{
    self, CatalogLayer, CatalogScope, FunctionCall, FunctionRunner, FunctionSpec,
    KUSTOMIZE_ID_ANNOTATION, LOCAL_CONFIG_ANNOTATION, LegacyPluginCall,
};
use super::super::resource::{Origin, ResMap, Resource};
use super::super::yaml::{self, Value};
use super::Layer;

/// A loaded external plugin.
pub enum External {
    Function(FunctionSpec),
    Legacy(PathBuf),
    /// A function resolved through a trusted catalog.
    Catalog(Arc<dyn ResolvedFunction>),
}

/// Resolves a config through the build's catalog resolver: on the CLI
/// (scope `Layer`) a config without a runtime annotation in a layer with
/// `catalogs:`; in-cluster (scope `Build`) every config.
fn resolve_in_catalogs(t: &dyn Layer, cfg: &Resource) -> Result<Option<External>> {
    let Some(resolver) = t.opts().catalog_resolver.as_ref() else {
        return Ok(None);
    };
    let every = resolver.scope() == CatalogScope::Build;
    if !every {
        if t.catalogs().is_empty() {
            return Ok(None);
        }
        if !matches!(function::function_spec(&cfg.obj), Ok(None)) {
            // An explicit runtime short-circuits the catalogs (KEP-2906).
            return Ok(None);
        }
    }
    let layer = CatalogLayer {
        catalogs: t.catalogs(),
        dir: t.loader().root(),
    };
    let resolved = resolver
        .resolve(layer, &cfg.obj)
        .map_err(|e| e.context(format!("resolving '{}' in catalogs", cfg.cur_id())))?;
    match resolved {
        Some(r) => Ok(Some(External::Catalog(r))),
        None if every => Err(Error::of(
            ErrorKind::FunctionNotApproved,
            format!(
                "{} {} ('{}') is not approved: no catalog of this build defines it",
                cfg.api_version(),
                cfg.kind(),
                cfg.name()
            ),
        )),
        None if !t.opts().enable_alpha_plugins => Err(Error::invalid(format!(
            "no catalog of this layer ({}) defines {} {}, and it names no runtime \
             (config.kubernetes.io/function)",
            t.catalog_entries().join(", "),
            cfg.api_version(),
            cfg.kind()
        ))),
        None => Ok(None),
    }
}

fn runner(t: &dyn Layer, cfg: &Resource) -> Result<Arc<dyn FunctionRunner>> {
    t.opts().function_runner.clone().ok_or_else(|| {
        Error::invalid(format!(
            "unable to run external plugin '{}' ({}): this build has no function runner",
            cfg.kind(),
            cfg.cur_id()
        ))
    })
}

/// Loads (checks) an external plugin config, as kustomize's plugin loader.
pub fn load(t: &dyn Layer, cfg: &Resource, what: &str) -> Result<External> {
    if let Some(ext) = resolve_in_catalogs(t, cfg)? {
        return Ok(ext);
    }
    if !t.opts().enable_alpha_plugins {
        return Err(super::external_error(t, cfg));
    }
    let wrap = |msg: String| {
        Error::invalid(format!(
            "loading {what} plugins: failed to load {what}: {msg}"
        ))
    };
    match function::function_spec(&cfg.obj).map_err(wrap)? {
        Some(spec) => {
            function::check_mounts(&spec, &cfg.org_id()).map_err(wrap)?;
            Ok(External::Function(spec))
        }
        None => {
            let r = runner(t, cfg)?;
            let path = r.locate_legacy_plugin(&cfg.gvk()).map_err(wrap)?;
            Ok(External::Legacy(path))
        }
    }
}

/// The origin kustomize gives a custom plugin's output
/// (`OriginFromCustomPlugin`).
pub fn origin(t: &dyn Layer, cfg: &Resource) -> Option<Origin> {
    t.config_origin(
        &cfg.kind(),
        &cfg.name(),
        cfg.origin.as_ref().map(|o| o.path.as_str()),
    )
    .map(|mut o| {
        o.configured_by_api_version = Some(cfg.api_version().to_string());
        o.configured_by_namespace = cfg.namespace().to_string();
        o
    })
}

fn plugin_name(cfg: &Resource) -> String {
    format!(
        "api: {}, kind: {}, name: {}",
        cfg.api_version(),
        cfg.kind(),
        cfg.name()
    )
}

fn to_yaml(v: &Value) -> Result<String> {
    let mut s = String::new();
    yaml::write_document(&mut s, v).map_err(|e| Error::invalid(e.0))?;
    Ok(s)
}

fn function_config(cfg: &Resource) -> Value {
    let mut fc = function::encode_resource(cfg);
    if let Some(a) = fc.ensure_map_path(&["metadata", "annotations"]) {
        a.insert(LOCAL_CONFIG_ANNOTATION.into(), Value::from("true"));
    }
    fc
}

/// Runs a function on `items`; `None` when it is skipped (exec without
/// `--enable-exec`, or a spec naming no program).
fn call_function(
    t: &dyn Layer,
    cfg: &Resource,
    spec: &FunctionSpec,
    items: Vec<Value>,
) -> Result<Option<Vec<Value>>> {
    if let FunctionSpec::Exec { path, .. } = spec {
        if path.is_empty() {
            return Ok(None);
        }
        if !t.opts().enable_exec {
            t.warn(format!(
                "Warning: exec function '{path}' ({}) was not run: exec functions need --enable-exec",
                plugin_name(cfg)
            ));
            return Ok(None);
        }
    }
    run_spec(t, cfg, spec, items).map(Some)
}

fn run_spec(
    t: &dyn Layer,
    cfg: &Resource,
    spec: &FunctionSpec,
    items: Vec<Value>,
) -> Result<Vec<Value>> {
    let r = runner(t, cfg)?;
    let fc = function_config(cfg);
    let name = plugin_name(cfg);
    r.run_function(FunctionCall {
        spec,
        name: &name,
        function_config: &fc,
        items,
        working_dir: t.loader().root(),
    })
    .map_err(|e| {
        Error::of(
            ErrorKind::FunctionFailed,
            format!("couldn't execute function: {e}"),
        )
    })
}

/// Runs a catalog function: the resolver's checks, then the runtime.
fn call_catalog(
    t: &dyn Layer,
    cfg: &Resource,
    f: &Arc<dyn ResolvedFunction>,
    items: Vec<Value>,
) -> Result<Vec<Value>> {
    let spec = f.prepare().map_err(|e| {
        e.context(format!(
            "function '{}' ({}) was not run",
            plugin_name(cfg),
            f.describe()
        ))
    })?;
    run_spec(t, cfg, &spec, items)
}

fn legacy_args(t: &dyn Layer, cfg: &Resource) -> Result<Vec<String>> {
    let mut args = Vec::new();
    if let Some(line) = cfg.obj.str_at(&["argsOneLiner"])
        && !line.is_empty()
    {
        args.extend(shell_words(line));
    }
    if let Some(file) = cfg.obj.str_at(&["argsFromFile"])
        && !file.is_empty()
    {
        let text = t.loader().read_string(file)?;
        for l in text.split('\n') {
            let l = l.trim_start_matches(' ');
            if !l.is_empty() {
                args.push(l.to_string());
            }
        }
    }
    Ok(args)
}

fn call_legacy(t: &dyn Layer, cfg: &Resource, path: &PathBuf, stdin: &[u8]) -> Result<Vec<Value>> {
    let r = runner(t, cfg)?;
    let args = legacy_args(t, cfg)?;
    let config = to_yaml(&function::encode_resource(cfg))?;
    let out = r
        .run_legacy_plugin(LegacyPluginCall {
            path,
            args: &args,
            config: &config,
            config_root: t.loader().root(),
            stdin,
        })
        .map_err(Error::invalid)?;
    let text = String::from_utf8_lossy(&out);
    parse_resources(&text, &path.display().to_string())
}

/// Runs an external generator.
pub fn generate(t: &dyn Layer, cfg: &Resource, ext: &External) -> Result<Vec<Resource>> {
    let docs = match ext {
        External::Function(spec) => {
            match call_function(t, cfg, spec, vec![function_config(cfg)])? {
                Some(d) => d,
                None => return Ok(Vec::new()),
            }
        }
        External::Legacy(path) => call_legacy(t, cfg, path, &[])?,
        External::Catalog(f) => call_catalog(t, cfg, f, vec![function_config(cfg)])?,
    };
    let o = origin(t, cfg);
    let mut out = Vec::new();
    for d in docs {
        let mut r = function::decode_resource(d);
        function::apply_generator_options(&mut r).map_err(Error::invalid)?;
        if r.origin.is_none() {
            r.origin = o.clone();
        }
        out.push(r);
    }
    Ok(out)
}

fn with_id(r: &Resource) -> Value {
    let mut v = function::encode_resource(r);
    if let Some(a) = v.ensure_map_path(&["metadata", "annotations"]) {
        a.insert(
            KUSTOMIZE_ID_ANNOTATION.into(),
            Value::String(function::id_annotation(&r.cur_id())),
        );
    }
    v
}

/// Runs an external transformer on `m`.
pub fn transform(t: &dyn Layer, m: &mut ResMap, cfg: &Resource, ext: &External) -> Result<()> {
    let input: Vec<Value> = m.resources().iter().map(with_id).collect();
    let (docs, name) = match ext {
        External::Function(spec) => {
            let items = if input.is_empty() {
                vec![function_config(cfg)]
            } else {
                input
            };
            match call_function(t, cfg, spec, items)? {
                Some(d) => (d, plugin_name(cfg)),
                None => return Ok(()),
            }
        }
        External::Catalog(f) => {
            let items = if input.is_empty() {
                vec![function_config(cfg)]
            } else {
                input
            };
            (call_catalog(t, cfg, f, items)?, plugin_name(cfg))
        }
        External::Legacy(path) => {
            let mut stdin = String::new();
            for (i, v) in input.iter().enumerate() {
                if i > 0 {
                    stdin.push_str("---\n");
                }
                stdin.push_str(&to_yaml(v)?);
            }
            (
                call_legacy(t, cfg, path, stdin.as_bytes())?,
                path.display().to_string(),
            )
        }
    };
    update(m, docs, &name)
}

/// kustomize's `UpdateResMapValues`.
fn update(m: &mut ResMap, docs: Vec<Value>, name: &str) -> Result<()> {
    let mut seen = Vec::new();
    for mut d in docs {
        function::remove_annotation(&mut d, KUSTOMIZE_ID_ANNOTATION);
        let mut r = function::decode_resource(d);
        let id = r.cur_id();
        if seen.contains(&id) {
            return Err(Error::invalid(format!(
                "plugin {name} generated duplicate resource: {}",
                json_id(&id)
            )));
        }
        seen.push(id.clone());
        match m.find_cur(&id) {
            Some(i) => {
                r.ref_var_names = m.resources()[i].ref_var_names.clone();
                m.replace_at(i, r);
            }
            None => m.append(r)?,
        }
    }
    m.retain(|r| seen.contains(&r.cur_id()));
    Ok(())
}

fn json_id(id: &super::super::resid::ResId) -> String {
    let mut o = serde_json::Map::new();
    for (k, v) in [
        ("group", &id.gvk.group),
        ("version", &id.gvk.version),
        ("kind", &id.gvk.kind),
        ("name", &id.name),
        ("namespace", &id.namespace),
    ] {
        if !v.is_empty() {
            o.insert(k.into(), serde_json::Value::String(v.clone()));
        }
    }
    serde_json::Value::Object(o).to_string()
}

/// A validator may add a `validated-by` label and nothing else.
pub fn check_unmodified(original: &ResMap, now: &ResMap) -> Result<()> {
    let strip = |r: &Resource| {
        let mut v = r.obj.clone();
        if let Some(l) = v
            .get_mut("metadata")
            .and_then(|m| m.get_mut("labels"))
            .and_then(Value::as_map_mut)
        {
            l.shift_remove("validated-by");
            if l.is_empty()
                && let Some(meta) = v.get_mut("metadata").and_then(Value::as_map_mut)
            {
                meta.shift_remove("labels");
            }
        }
        (r.cur_id(), v)
    };
    let mut a: Vec<_> = original.resources().iter().map(strip).collect();
    let mut b: Vec<_> = now.resources().iter().map(strip).collect();
    if a.len() != b.len() {
        return Err(Error::invalid(format!(
            "validator shouldn't modify the resource map: expected {} resources, found {}",
            a.len(),
            b.len()
        )));
    }
    a.sort_by(|x, y| x.0.cmp(&y.0));
    b.sort_by(|x, y| x.0.cmp(&y.0));
    for (x, y) in a.iter().zip(&b) {
        if x != y {
            return Err(Error::invalid(format!(
                "validator shouldn't modify the resource map: resource {} changed",
                x.0
            )));
        }
    }
    Ok(())
}

/// Splits a command line into words as a POSIX shell would (quotes and
/// backslashes; no expansion).
pub fn shell_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    cur.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => {
                            if let Some(n) = chars.next() {
                                if !matches!(n, '"' | '\\' | '$' | '`' | '\n') {
                                    cur.push('\\');
                                }
                                cur.push(n);
                            }
                        }
                        c => cur.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            '#' if !in_word => break,
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::shell_words;

    #[test]
    fn shell_words_split_like_a_shell() {
        assert_eq!(
            shell_words("alice myMomsMaidenName"),
            ["alice", "myMomsMaidenName"]
        );
        assert_eq!(
            shell_words(r#"a "b c" 'd e' f\ g"#),
            ["a", "b c", "d e", "f g"]
        );
        assert_eq!(shell_words("  "), Vec::<String>::new());
        assert_eq!(shell_words("x # comment"), ["x"]);
    }
}
