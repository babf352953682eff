//! ConfigMap and Secret generators, and the content hash kustomize appends
//! to generated names.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use sha2::{Digest, Sha256};

use super::error::{Error, Result};
use super::kustomization::{GeneratorArgs, GeneratorOptions};
use super::loader::Loader;
use super::resource::{Behavior, Resource};
use super::yaml::{Mapping, Value, to_go_json};

/// Which kind a generator makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GenKind {
    ConfigMap,
    Secret,
}

impl GenKind {
    fn as_str(self) -> &'static str {
        match self {
            GenKind::ConfigMap => "ConfigMap",
            GenKind::Secret => "Secret",
        }
    }
}

/// Options merged kustomize's way: per-generator labels/annotations win,
/// global flags are OR-ed in.
pub fn merge_options(
    local: Option<&GeneratorOptions>,
    global: Option<&GeneratorOptions>,
) -> GeneratorOptions {
    let mut out = local.cloned().unwrap_or_default();
    if let Some(g) = global {
        for (k, v) in &g.labels {
            if !out.labels.iter().any(|(lk, _)| lk == k) {
                out.labels.push((k.clone(), v.clone()));
            }
        }
        for (k, v) in &g.annotations {
            if !out.annotations.iter().any(|(lk, _)| lk == k) {
                out.annotations.push((k.clone(), v.clone()));
            }
        }
        out.disable_name_suffix_hash |= g.disable_name_suffix_hash;
        out.immutable |= g.immutable;
    }
    out
}

/// Strips one pair of matching surrounding quotes.
fn remove_quotes(s: &str) -> &str {
    let b = s.as_bytes();
    if b.len() >= 2 && b[0] == b[b.len() - 1] && (b[0] == b'"' || b[0] == b'\'') {
        &s[1..s.len() - 1]
    } else {
        s
    }
}

fn parse_literal(src: &str) -> Result<(String, String)> {
    match src.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), remove_quotes(v).to_string())),
        _ => Err(Error::invalid(format!(
            "invalid literal source {src}, expected key=value"
        ))),
    }
}

/// Splits a `files:` source into key and path as kustomize does:
/// `path` (the key is its base name) or `key=path`; more than one `=`, or
/// an empty key or path, is an error.
fn parse_file_source(src: &str) -> Result<(String, String)> {
    match src.split('=').collect::<Vec<_>>().as_slice() {
        [path] => Ok((go_path_base(path), path.to_string())),
        ["", path] => Err(Error::invalid(format!(
            "missing key name for file path \"{path}\" in source \"{src}\""
        ))),
        [key, ""] => Err(Error::invalid(format!(
            "missing file path for key name \"{key}\" in source \"{src}\""
        ))),
        [key, path] => Ok((key.to_string(), path.to_string())),
        _ => Err(Error::invalid(format!(
            "source \"{src}\" key name or file path contains '='"
        ))),
    }
}

/// Go's `path.Base`: the last element after trailing slashes are removed.
fn go_path_base(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return "/".into();
    }
    t.rsplit('/').next().unwrap_or(t).to_string()
}

/// Parses an env file into ordered pairs. A line without `=` is a key with
/// an empty value: kustomize 5.5 reads no environment.
pub fn parse_env_file(content: &[u8], file: &str) -> Result<Vec<(String, String)>> {
    let text = std::str::from_utf8(content)
        .map_err(|_| Error::invalid(format!("env file '{file}' is not valid UTF-8")))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    for raw in text.split('\n') {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (line.to_string(), String::new()),
        };
        // kustomize checks no key name (its validator's IsEnvVarName is a
        // no-op: `export A`, `1A` or `A ` are keys); a line with an empty
        // key (`=x`) gives nothing
        if key.is_empty() {
            continue;
        }
        out.push((key, value));
    }
    Ok(out)
}

/// Data collected from literals, files and env files.
#[derive(Default)]
struct KvData {
    data: Vec<(String, String)>,
    binary: Vec<(String, String)>,
}

impl KvData {
    /// Adds a text entry; key names are not checked (kustomize's
    /// ErrIfInvalidKey is a no-op), repeated keys are an error.
    fn add(&mut self, kind: GenKind, name: &str, key: String, value: String) -> Result<()> {
        self.check_new(kind, name, &key)?;
        self.data.push((key, value));
        Ok(())
    }

    fn check_new(&self, kind: GenKind, name: &str, key: &str) -> Result<()> {
        if self.data.iter().chain(&self.binary).any(|(k, _)| *k == key) {
            return Err(Error::invalid(format!(
                "cannot add key {key}, another key by that name already exists in Data for {} {name}",
                kind.as_str()
            )));
        }
        Ok(())
    }
}

fn load_kv(args: &GeneratorArgs, kind: GenKind, loader: &Loader) -> Result<KvData> {
    let mut kv = KvData::default();
    for src in &args.envs {
        let content = loader
            .read(src)
            .map_err(|e| e.context(format!("loading KV pairs: env source files: [{src}]")))?;
        for (k, v) in parse_env_file(&content, src)? {
            kv.add(kind, &args.name, k, v)?;
        }
    }
    for lit in &args.literals {
        let (k, v) = parse_literal(lit)?;
        kv.add(kind, &args.name, k, v)?;
    }
    for src in &args.files {
        let (key, path) = parse_file_source(src)
            .map_err(|e| e.context(format!("loading KV pairs: file sources: [{src}]")))?;
        let content = loader
            .read(&path)
            .map_err(|e| e.context(format!("loading KV pairs: file sources: [{src}]")))?;
        match String::from_utf8(content) {
            Ok(s) => kv.add(kind, &args.name, key, s)?,
            Err(e) => {
                // not UTF-8: a ConfigMap's binaryData, a Secret's data;
                // both the base64 of the bytes as read
                kv.check_new(kind, &args.name, &key)?;
                kv.binary.push((key, encode_base64_lines(&e.into_bytes())));
            }
        }
    }
    Ok(kv)
}

/// Base64 as kustomize writes generated data: lines of 70 characters,
/// each followed by a newline when there is more than one line.
pub fn encode_base64_lines(data: &[u8]) -> String {
    const LINE: usize = 70;
    let enc = B64.encode(data);
    // kustomize: lines = len/70 + 1; a single line gets no newline.
    if enc.len() < LINE {
        return enc;
    }
    let mut out = String::with_capacity(enc.len() + enc.len() / LINE + 1);
    let bytes = enc.as_bytes();
    for chunk in bytes.chunks(LINE) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out
}

fn string_map(pairs: &[(String, String)]) -> Mapping {
    pairs
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect()
}

/// Builds one generated ConfigMap or Secret (name without hash suffix).
pub fn generate(
    args: &GeneratorArgs,
    kind: GenKind,
    global: Option<&GeneratorOptions>,
    loader: &Loader,
) -> Result<Resource> {
    if args.name.is_empty() {
        return Err(Error::invalid(format!(
            "a {} generator must have a name",
            kind.as_str()
        )));
    }
    let behavior = Behavior::parse(&args.behavior)?;
    let opts = merge_options(args.options.as_ref(), global);
    let kv = load_kv(args, kind, loader)?;

    let mut meta = Mapping::new();
    meta.insert("name".into(), Value::from(args.name.as_str()));
    if !args.namespace.is_empty() {
        meta.insert("namespace".into(), Value::from(args.namespace.as_str()));
    }
    if !opts.labels.is_empty() {
        meta.insert("labels".into(), Value::Map(string_map(&opts.labels)));
    }
    if !opts.annotations.is_empty() {
        meta.insert(
            "annotations".into(),
            Value::Map(string_map(&opts.annotations)),
        );
    }
    let mut obj = Mapping::new();
    obj.insert("apiVersion".into(), Value::from("v1"));
    obj.insert("kind".into(), Value::from(kind.as_str()));
    obj.insert("metadata".into(), Value::Map(meta));
    match kind {
        GenKind::ConfigMap => {
            if !kv.data.is_empty() {
                obj.insert("data".into(), Value::Map(string_map(&kv.data)));
            }
            if !kv.binary.is_empty() {
                obj.insert("binaryData".into(), Value::Map(string_map(&kv.binary)));
            }
        }
        GenKind::Secret => {
            let encoded: Vec<(String, String)> = kv
                .data
                .iter()
                .map(|(k, v)| (k.clone(), encode_base64_lines(v.as_bytes())))
                .chain(kv.binary.iter().cloned())
                .collect();
            // kustomize always gives a generated Secret a `data` map, even an
            // empty one (a ConfigMap without entries gets none).
            obj.insert("data".into(), Value::Map(string_map(&encoded)));
            let t = if args.secret_type.is_empty() {
                "Opaque"
            } else {
                args.secret_type.as_str()
            };
            obj.insert("type".into(), Value::from(t));
        }
    }
    if opts.immutable {
        obj.insert("immutable".into(), Value::Bool(true));
    }
    let mut r = Resource::new(Value::Map(obj));
    r.needs_hash = !opts.disable_name_suffix_hash;
    r.behavior = behavior;
    r.generated = true;
    Ok(r)
}

fn hash_string(encoded: &str) -> String {
    let digest = Sha256::digest(encoded.as_bytes());
    let hex: String = digest.iter().take(5).map(|b| format!("{b:02x}")).collect();
    hex.chars()
        .map(|c| match c {
            '0' => 'g',
            '1' => 'h',
            '3' => 'k',
            'a' => 'm',
            'e' => 't',
            other => other,
        })
        .collect()
}

/// A field as kustomize's hasher reads it: a map stays a map, a scalar
/// becomes its text, a missing field becomes the empty string.
fn hash_field(obj: &Value, field: &str) -> Value {
    match obj.get(field) {
        None => Value::from(""),
        Some(Value::Map(m)) => Value::Map(m.clone()),
        Some(v @ Value::Seq(_)) => v.clone(),
        Some(v) => Value::String(v.scalar_to_string().unwrap_or_default()),
    }
}

/// kustomize's content hash of a resource (10 characters).
///
/// For ConfigMaps and Secrets kustomize hashes a small JSON document of the
/// kind, the data maps and (Secrets) the type. It also means to include the
/// name, but looks it up with a path that never matches, so the name is
/// always hashed as the empty string: generated names depend on content
/// only, which this reproduces.
pub fn content_hash(obj: &Value) -> Result<String> {
    let kind = obj.str_at(&["kind"]).unwrap_or("");
    let mut m = Mapping::new();
    let encoded = match kind {
        "ConfigMap" | "Secret" => {
            m.insert("kind".into(), Value::from(kind));
            m.insert("name".into(), Value::from(""));
            m.insert("data".into(), hash_field(obj, "data"));
            let extra = if kind == "ConfigMap" {
                "binaryData"
            } else {
                m.insert("type".into(), hash_field(obj, "type"));
                "stringData"
            };
            if let Some(v @ Value::Map(_)) = obj.get(extra) {
                m.insert(extra.into(), v.clone());
            }
            to_go_json(&Value::Map(m))
        }
        _ => to_go_json(obj),
    }
    .map_err(|e| {
        Error::invalid(format!(
            "hashing {kind} '{}': {e}",
            obj.str_at(&["metadata", "name"]).unwrap_or("")
        ))
    })?;
    Ok(hash_string(&encoded))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_strip_matching_quotes_only() {
        assert_eq!(parse_literal("a=b=c").unwrap(), ("a".into(), "b=c".into()));
        assert_eq!(parse_literal("a=\"x\"").unwrap().1, "x");
        assert_eq!(parse_literal("a='x\"").unwrap().1, "'x\"");
        assert!(parse_literal("=x").is_err());
        assert!(parse_literal("novalue").is_err());
    }

    #[test]
    fn file_sources_split_like_kustomize() {
        let ok = |s: &str| parse_file_source(s).unwrap();
        assert_eq!(ok("d/f"), ("f".into(), "d/f".into()));
        assert_eq!(ok("d//f/"), ("f".into(), "d//f/".into()));
        assert_eq!(ok("k=d/f"), ("k".into(), "d/f".into()));
        for (src, msg) in [
            (
                "k=f=g",
                "source \"k=f=g\" key name or file path contains '='",
            ),
            (
                "=f",
                "missing key name for file path \"f\" in source \"=f\"",
            ),
            (
                "k=",
                "missing file path for key name \"k\" in source \"k=\"",
            ),
        ] {
            assert_eq!(parse_file_source(src).unwrap_err().to_string(), msg);
        }
    }

    #[test]
    fn env_file_parsing() {
        // a key without `=` has an empty value whatever the environment holds
        let pairs = parse_env_file(
            b"\xef\xbb\xbf# comment\nA=1\r\n\n  B= spaced \nHOME\nMISSING\n",
            "x.env",
        )
        .unwrap();
        assert_eq!(
            pairs,
            vec![
                ("A".into(), "1".into()),
                ("B".into(), " spaced ".into()),
                ("HOME".into(), "".into()),
                ("MISSING".into(), "".into()),
            ]
        );
        // kubectl kustomize 5.5 checks no key name; an empty key is skipped
        let pairs = parse_env_file(b"1A=x\nexport B=y\nC =z\n=gone\n", "x.env").unwrap();
        let keys: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["1A", "export B", "C "]);
    }

    #[test]
    fn options_merge_local_wins() {
        let local = GeneratorOptions {
            labels: vec![("a".into(), "local".into())],
            ..Default::default()
        };
        let global = GeneratorOptions {
            labels: vec![("a".into(), "global".into()), ("b".into(), "g".into())],
            disable_name_suffix_hash: true,
            ..Default::default()
        };
        let m = merge_options(Some(&local), Some(&global));
        assert_eq!(
            m.labels,
            vec![("a".into(), "local".into()), ("b".into(), "g".into())]
        );
        assert!(m.disable_name_suffix_hash);
    }

    #[test]
    fn hash_matches_kustomize() {
        // Values produced by kubectl kustomize (v5.5.0) for generated objects.
        let empty = crate::kustomize::yaml::parse_documents(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: empty}\n",
        )
        .unwrap()
        .remove(0);
        assert_eq!(content_hash(&empty).unwrap(), "6ct58987ht");
        let secret = crate::kustomize::yaml::parse_documents(
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {x: eQ==}\ntype: Opaque\n",
        )
        .unwrap()
        .remove(0);
        assert_eq!(content_hash(&secret).unwrap(), "t86b282gdf");
    }

    #[test]
    fn base64_wraps_at_70() {
        assert_eq!(encode_base64_lines(b"x"), "eA==");
        let long = encode_base64_lines(&[7u8; 60]);
        let lines: Vec<&str> = long.split_terminator('\n').collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].len(), 70);
        assert!(long.ends_with('\n'));
        assert_eq!(encode_base64_lines(&[1u8; 51]).len(), 68);
        assert_eq!(encode_base64_lines(&[1u8; 52]).len(), 74);
    }

    #[test]
    fn hash_encoding_alphabet() {
        // sha256("") = e3b0c44298...; first ten hex chars mapped.
        assert_eq!(hash_string(""), "tkbgc44298");
    }
}
