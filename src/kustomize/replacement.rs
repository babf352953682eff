//! The ReplacementTransformer: `replacements:` in a kustomization and
//! `kind: ReplacementTransformer` plugin configs.
//!
//! Each replacement takes one value from exactly one source resource and
//! writes it into fields of the selected target resources, in order. Facts
//! reproduced from kustomize v5.5.0 (checked against `kubectl kustomize`):
//!
//! * Source and target ids match with plain equality (no regexes) against
//!   every id a resource has had (current first, then previous names,
//!   namespaces and kinds); no namespace equals `default`.
//! * `reject` drops a resource when any reject selector's id matches any of
//!   its ids, or its label/annotation selectors match (the two parts of one
//!   reject selector act independently).
//! * The source path uses kyaml `PathGetter` rules, target paths use
//!   `PathMatcher` rules (unanchored regexes in `[key=value]`, `*`); see
//!   [`crate::kustomize::fieldpath`].
//! * A missing, null, empty-map or empty-list source field is an error; an
//!   empty string is a value.
//! * Writing into an existing scalar keeps that scalar's type and only
//!   replaces its text: `"42"` into `replicas: 1` gives the integer 42, 7
//!   into a string field gives `"7"`, text that does not fit the type (a
//!   word into an integer or null field) fails like go-yaml's decoder, and a
//!   map or list written into a scalar leaves empty text. Fields made by
//!   `options.create` are untyped: the text is read as plain YAML (`"42"`
//!   becomes 42). Maps and lists in the target are replaced by a copy of the
//!   value whatever its type.

use std::borrow::Cow;

use crate::kustomize::fieldpath::{self, CreateKind, PathElem, Resolved, VisitError};
use crate::kustomize::resid::ResId;
use crate::kustomize::resource::value_at;
use crate::kustomize::selector::{GoDecoder, LabelSelector, Selector, go_quote, join_path};
use crate::kustomize::yaml::{PathSeg, Value};

/// The field kustomize reads and writes when none is given.
pub const DEFAULT_FIELD_PATH: &str = "metadata.name";

/// `options` of a source or target (`types.FieldOptions`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FieldOptions {
    /// Splits the field's text; `index` picks (source) or replaces (target)
    /// one part. A negative target index prepends, one past the end appends.
    pub delimiter: String,
    pub index: i64,
    /// Accepted and ignored by kustomize v5.5.
    pub encoding: String,
    /// Targets only: make missing fields.
    pub create: bool,
}

/// Where the value comes from (`types.SourceSelector`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceSelector {
    /// Only the id fields (group, version, kind, name, namespace) are used.
    pub id: Selector,
    /// Empty means [`DEFAULT_FIELD_PATH`].
    pub field_path: String,
    pub options: Option<FieldOptions>,
}

/// Where the value goes (`types.TargetSelector`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TargetSelector {
    /// `None` is an error when the replacement runs.
    pub select: Option<Selector>,
    pub reject: Vec<Selector>,
    /// Empty means [`DEFAULT_FIELD_PATH`].
    pub field_paths: Vec<String>,
    pub options: Option<FieldOptions>,
}

/// One replacement: a source and its targets.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Replacement {
    pub source: Option<SourceSelector>,
    pub targets: Vec<TargetSelector>,
    /// `targets` was given as a list, possibly empty (Go's non-nil slice):
    /// a replacement read from a file or a plugin config with `targets: []`
    /// does nothing, where one with no targets at all is an error.
    pub targets_given: bool,
}

// ---------------------------------------------------------------------------
// Decoding

const OPTION_FIELDS: &[&str] = &["delimiter", "index", "encoding", "create"];
const SOURCE_FIELDS: &[&str] = &[
    "group",
    "version",
    "kind",
    "name",
    "namespace",
    "fieldPath",
    "options",
];
const TARGET_FIELDS: &[&str] = &["select", "reject", "fieldPaths", "options"];

fn decode_options(
    d: GoDecoder,
    v: &Value,
    parent: &str,
    path: &str,
) -> Result<Option<FieldOptions>, String> {
    let Some(fields) = d.fields(v, parent, path, "types.FieldOptions", OPTION_FIELDS)? else {
        return Ok(None);
    };
    let mut o = FieldOptions::default();
    for (f, val) in fields {
        let p = join_path(path, f);
        match f {
            "delimiter" => o.delimiter = d.string(val, "FieldOptions", &p)?,
            "index" => o.index = d.int(val, "FieldOptions", &p)?,
            "encoding" => o.encoding = d.string(val, "FieldOptions", &p)?,
            _ => o.create = d.boolean(val, "FieldOptions", &p)?,
        }
    }
    Ok(Some(o))
}

fn decode_source(
    d: GoDecoder,
    v: &Value,
    parent: &str,
    path: &str,
) -> Result<Option<SourceSelector>, String> {
    let Some(fields) = d.fields(v, parent, path, "types.SourceSelector", SOURCE_FIELDS)? else {
        return Ok(None);
    };
    let mut s = SourceSelector::default();
    for (f, val) in fields {
        match f {
            "fieldPath" => s.field_path = d.string(val, "SourceSelector", &join_path(path, f))?,
            "options" => s.options = decode_options(d, val, "SourceSelector", &join_path(path, f))?,
            _ => {
                d.id_field(&mut s.id, f, val, "SourceSelector", path)?;
            }
        }
    }
    Ok(Some(s))
}

fn decode_target(
    d: GoDecoder,
    v: &Value,
    parent: &str,
    path: &str,
) -> Result<TargetSelector, String> {
    let mut t = TargetSelector::default();
    let Some(fields) = d.fields(v, parent, path, "types.TargetSelector", TARGET_FIELDS)? else {
        return Ok(t);
    };
    for (f, val) in fields {
        let p = join_path(path, f);
        match f {
            "select" => {
                t.select = if val.is_null() {
                    None
                } else {
                    Some(d.selector(val, "TargetSelector", &p)?)
                };
            }
            "reject" => {
                t.reject = match val {
                    Value::Null => Vec::new(),
                    Value::Seq(items) => items
                        .iter()
                        .map(|i| d.selector(i, "TargetSelector", &p))
                        .collect::<Result<_, _>>()?,
                    other => {
                        return Err(d.mismatch(other, "TargetSelector", &p, "[]*types.Selector"));
                    }
                };
            }
            "fieldPaths" => t.field_paths = d.string_list(val, "TargetSelector", &p)?,
            _ => t.options = decode_options(d, val, "TargetSelector", &p)?,
        }
    }
    Ok(t)
}

/// Decodes one replacement object. `parent`/`path` place it for messages
/// (`Kustomization`/`replacements`, or empty for a top-level value);
/// `owner` is the Go struct holding `source` and `targets`. Returns the
/// replacement and its `path:` field (empty when absent or not allowed).
fn decode_replacement(
    d: GoDecoder,
    v: &Value,
    parent: &str,
    path: &str,
    owner: &str,
    with_path: bool,
) -> Result<(Replacement, String), String> {
    let (allowed, type_name): (&[&'static str], &str) = if with_path {
        (&["path", "source", "targets"], "types.ReplacementField")
    } else {
        (&["source", "targets"], "types.Replacement")
    };
    let mut r = Replacement::default();
    let mut file = String::new();
    let Some(fields) = d.fields(v, parent, path, type_name, allowed)? else {
        return Ok((r, file));
    };
    for (f, val) in fields {
        let p = join_path(path, f);
        match f {
            "path" => file = d.string(val, owner, &p)?,
            "source" => r.source = decode_source(d, val, owner, &p)?,
            _ => {
                r.targets_given = matches!(val, Value::Seq(_));
                r.targets = match val {
                    Value::Null => Vec::new(),
                    Value::Seq(items) => items
                        .iter()
                        .map(|i| decode_target(d, i, owner, &p))
                        .collect::<Result<_, _>>()?,
                    other => return Err(d.mismatch(other, owner, &p, "[]*types.TargetSelector")),
                };
            }
        }
    }
    Ok((r, file))
}

fn inline_only(r: Replacement, file: String) -> Result<Replacement, String> {
    if file.is_empty() {
        return Ok(r);
    }
    if r.source.is_some() || !r.targets.is_empty() {
        return Err("cannot specify both path and inline replacement".to_string());
    }
    Err(format!(
        "replacement file '{file}' must be loaded before parsing"
    ))
}

/// Parses one inline `replacements:` entry of a kustomization, strictly
/// (unknown fields and wrong types are errors worded like Go's JSON
/// decoder; the caller may prefix `invalid Kustomization: `). An entry
/// with both `path` and inline content is an error; a `path`-only entry
/// must be loaded by the caller and passed to [`parse_list`].
pub fn parse_replacement(v: &Value) -> Result<Replacement, String> {
    let (mut r, file) = decode_replacement(
        GoDecoder::STRICT,
        v,
        "Kustomization",
        "replacements",
        "ReplacementField",
        true,
    )?;
    // kustomize hands the kustomization's entries to its builtin through
    // YAML with `omitempty`: an empty `targets` list is dropped on the way
    r.targets_given = !r.targets.is_empty();
    inline_only(r, file)
}

/// Parses one entry of a `ReplacementTransformer` config's `replacements`
/// list; like [`parse_replacement`] but unknown fields are ignored, as
/// kustomize reads plugin configs.
pub fn parse_replacement_lenient(v: &Value) -> Result<Replacement, String> {
    let (r, file) = decode_replacement(
        GoDecoder::LENIENT,
        v,
        "ReplacementTransformerPlugin",
        "replacements",
        "ReplacementField",
        true,
    )?;
    inline_only(r, file)
}

/// Parses the content of a replacement file (`replacements: [{path: f}]`):
/// one replacement (a map) or a list of them. Unknown fields are ignored,
/// as kustomize reads these files leniently.
pub fn parse_list(v: &Value) -> Result<Vec<Replacement>, String> {
    let d = GoDecoder::LENIENT;
    let one = |item: &Value| -> Result<Replacement, String> {
        decode_replacement(d, item, "", "", "Replacement", false).map(|(r, _)| r)
    };
    match v {
        Value::Seq(items) => items.iter().map(one).collect(),
        Value::Map(_) => Ok(vec![one(v)?]),
        other => {
            let kind = match other {
                Value::Null => "invalid",
                Value::Bool(_) => "bool",
                Value::String(_) => "string",
                _ => "float64",
            };
            Err(format!(
                "unsupported replacement type encountered within replacement path: {kind}"
            ))
        }
    }
}

// ---------------------------------------------------------------------------
// Applying

/// A resource as the replacement step sees it.
pub trait ReplacementResource {
    /// The current id first, then the ids the resource had before name,
    /// namespace or kind changes.
    fn ids(&self) -> Vec<ResId>;
    /// The resource document.
    fn object(&self) -> &Value;
    /// Whether some of its scalars are linked (kustomize writes targets in
    /// place: a linked scalar changes its group).
    fn has_links(&self) -> bool {
        false
    }
    /// Called after targets were written, with the document before.
    fn written(&mut self, _before: &Value) {}
    /// Scalars earlier replacements wrote whose text is kept (see
    /// `Resource::scalar_texts`).
    fn scalar_texts(&self) -> &[TextScalar];
    /// The document and its scalar texts, for writing targets.
    fn object_and_texts_mut(&mut self) -> (&mut Value, &mut Vec<TextScalar>);
}

/// A scalar whose text kyaml keeps apart from its value (see
/// `Resource::scalar_texts`).
#[derive(Clone, Debug, PartialEq)]
pub struct TextScalar {
    /// Where it is in the resource.
    pub path: Vec<PathSeg>,
    /// Its text.
    pub text: String,
    pub kind: TextKind,
}

/// What a kept text says about its field.
#[derive(Clone, Debug, PartialEq)]
pub enum TextKind {
    /// Made by a replacement's `create`: untyped; the field holds what the
    /// text reads as (an annotation: the text).
    Untyped,
    /// A field of type `tag` a replacement gave text that type cannot
    /// read; the field holds the text as a string until fitting text
    /// replaces it.
    Mistyped(Tag),
    /// A typed scalar as its file wrote it (`0600`, `1.50`, `True`, `~`, a
    /// timestamp), holding this value (what the text reads as).
    Written(Value),
}

impl TextScalar {
    /// Whether `node` still holds what this entry recorded.
    pub fn current(&self, node: &Value) -> bool {
        match &self.kind {
            TextKind::Mistyped(_) => node.as_str() == Some(self.text.as_str()),
            TextKind::Untyped if is_annotation(&self.path) => {
                node.as_str() == Some(self.text.as_str())
            }
            TextKind::Untyped => *node == fieldpath::resolve_value(&self.text),
            // NaN is what it recorded too
            TextKind::Written(Value::Float(f)) if f.is_nan() => {
                matches!(node, Value::Float(g) if g.is_nan())
            }
            TextKind::Written(v) => node == v,
        }
    }

    /// The kept texts of the typed scalars of a resource file that do not
    /// print as written (see `MarkedDocument::written`), for `obj` as read.
    pub fn written(obj: &Value, written: Vec<(Vec<PathSeg>, String)>) -> Vec<TextScalar> {
        written
            .into_iter()
            .filter_map(|(path, text)| {
                let v = value_at(obj, &path)?.clone();
                Some(TextScalar {
                    path,
                    text,
                    kind: TextKind::Written(v),
                })
            })
            .collect()
    }
}

/// The text kyaml reads for the scalar `v` at `path` (it takes a node's
/// text whatever its type), and whether that scalar was written plain, so
/// that kyaml's scalar setter, which keeps a node's style but drops its
/// tag, leaves text that reads as plain YAML there: a number, a boolean, a
/// timestamp (anything typed), an untyped node, or a string that reads as
/// a string when plain. A string that would not (`"23"`) was quoted, and
/// stays a string. (Quoting is not recorded: a quoted `"web"` counts as
/// plain, which matters only when the new text reads as something else.)
/// `None` for a null, a map or a list.
pub fn scalar_text_at<'a>(
    texts: &'a [TextScalar],
    path: &[PathSeg],
    v: &'a Value,
) -> Option<(Cow<'a, str>, bool)> {
    let kept = texts.iter().find(|t| t.path == path && t.current(v));
    text_and_style(v, kept.map(|t| t.text.as_str()))
}

/// The text kyaml reads for `metadata.<field>.<key>` (`field`: `labels`
/// or `annotations`) of `obj`, whose kept texts are `texts`: the text its
/// file wrote when kept, else how the value prints. `None` when there is
/// no such key.
pub fn meta_value_text<'a>(
    obj: &'a Value,
    texts: &'a [TextScalar],
    field: &str,
    key: &str,
) -> Option<Cow<'a, str>> {
    let v = obj.get_path(&["metadata", field])?.as_map()?.get(key)?;
    Some(
        match kept_text_by_keys(texts, &["metadata", field, key], v) {
            Some(t) => Cow::Borrowed(t),
            None => Cow::Owned(fieldpath::scalar_text(v)),
        },
    )
}

/// The kept text of the scalar `v` at the map-key path `path`, while it
/// still holds what was recorded.
pub fn kept_text_by_keys<'a>(texts: &'a [TextScalar], path: &[&str], v: &Value) -> Option<&'a str> {
    texts
        .iter()
        .find(|t| {
            t.path.len() == path.len()
                && t.path
                    .iter()
                    .zip(path)
                    .all(|(seg, key)| matches!(seg, PathSeg::Key(k) if k == key))
                && t.current(v)
        })
        .map(|t| t.text.as_str())
}

/// [`scalar_text_at`] for a scalar whose kept text (current, or from its
/// file) is `kept`.
pub fn text_and_style<'a>(v: &'a Value, kept: Option<&'a str>) -> Option<(Cow<'a, str>, bool)> {
    if let Some(t) = kept {
        return Some((Cow::Borrowed(t), true));
    }
    match v {
        Value::String(s) => Some((
            Cow::Borrowed(s),
            matches!(fieldpath::resolve_value(s), Value::String(_)),
        )),
        Value::Null | Value::Map(_) | Value::Seq(_) => None,
        other => Some((Cow::Owned(other.scalar_to_string()?), true)),
    }
}

/// kyaml's scalar setter on the scalar `v` at `path` (in a resource whose
/// kept texts are `texts`): `rewrite` gets the text kyaml reads there and
/// says whether it changes it. The new text goes in untyped where the
/// scalar was plain (and is returned, for [`keep_untyped`]), as a string
/// where it was quoted (`quoted` lists the strings known to be, see
/// `Resource::quoted`; others are inferred by `scalar_text_at`).
pub fn set_scalar_text(
    texts: &[TextScalar],
    quoted: &[Vec<PathSeg>],
    path: &[PathSeg],
    v: &mut Value,
    rewrite: impl FnOnce(&str) -> Option<String>,
) -> Option<String> {
    let (new, plain) = {
        let (text, plain) = scalar_text_at(texts, path, v)?;
        let plain = plain && !recorded_quoted(quoted, path, v);
        (rewrite(&text)?, plain)
    };
    if plain {
        *v = untyped(&new);
        Some(new)
    } else {
        *v = Value::String(new);
        None
    }
}

/// Whether `v`, at `path`, is a string its file wrote quoted (one of a
/// resource's `quoted` paths, see `Resource::quoted`).
pub fn recorded_quoted(quoted: &[Vec<PathSeg>], path: &[PathSeg], v: &Value) -> bool {
    matches!(v, Value::String(_)) && quoted.iter().any(|q| q == path)
}

/// A field kyaml's scalar setter wrote where the scalar was plain: the node
/// it puts there has no tag, so the text reads as plain YAML (an image `3`
/// is the number 3), and a later replacement writing there does too (see
/// `TextKind::Untyped`).
pub fn untyped(text: &str) -> Value {
    fieldpath::resolve_value(text)
}

/// Records the fields a scalar setter wrote untyped (see [`untyped`]) in
/// the kept texts of their resource.
pub fn keep_untyped(texts: &mut Vec<TextScalar>, written: Vec<(Vec<PathSeg>, String)>) {
    for (path, text) in written {
        texts.retain(|t| t.path != path);
        texts.push(TextScalar {
            path,
            text,
            kind: TextKind::Untyped,
        });
    }
}

/// The kept text of `node`, a node of `obj`, if it is current.
pub fn kept_text<'a>(obj: &Value, texts: &'a [TextScalar], node: &Value) -> Option<&'a TextScalar> {
    texts
        .iter()
        .find(|t| value_at(obj, &t.path).is_some_and(|n| std::ptr::eq(n, node) && t.current(n)))
}

/// The error kustomize reports when it decodes a resource holding a typed
/// field whose text its type cannot read (written by a replacement and
/// never replaced by fitting text), if `obj` holds one.
pub fn mistyped_error(obj: &Value, texts: &[TextScalar]) -> Option<String> {
    texts.iter().find_map(|t| {
        let TextKind::Mistyped(tag) = t.kind else {
            return None;
        };
        let node = value_at(obj, &t.path)?;
        if !t.current(node) {
            return None;
        }
        coerce(Some(tag), &t.text).err()
    })
}

/// Whether `path` is `metadata.annotations.<key>`.
fn is_annotation(path: &[PathSeg]) -> bool {
    matches!(path, [PathSeg::Key(m), PathSeg::Key(a), PathSeg::Key(_)]
        if m == "metadata" && a == "annotations")
}

/// The YAML type a scalar node carries (its resolved tag).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    Str,
    Int,
    Float,
    Bool,
    Null,
}

impl Tag {
    fn of(v: &Value) -> Option<Tag> {
        Some(match v {
            Value::String(_) => Tag::Str,
            Value::Int(_) | Value::UInt(_) => Tag::Int,
            Value::Float(_) => Tag::Float,
            Value::Bool(_) => Tag::Bool,
            Value::Null => Tag::Null,
            Value::Map(_) | Value::Seq(_) => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Tag::Str => "!!str",
            Tag::Int => "!!int",
            Tag::Float => "!!float",
            Tag::Bool => "!!bool",
            Tag::Null => "!!null",
        }
    }
}

/// The value of a scalar node with type `tag` (`None`: untyped) whose text
/// became `text`, as kustomize's YAML -> JSON step decodes it.
fn coerce(tag: Option<Tag>, text: &str) -> Result<Value, String> {
    let Some(tag) = tag else {
        return Ok(fieldpath::resolve_value(text));
    };
    if tag == Tag::Str {
        return Ok(Value::String(text.to_string()));
    }
    let r = fieldpath::resolve_scalar(text, false);
    match (tag, &r) {
        (Tag::Int, Resolved::Int(i)) => Ok(Value::Int(*i)),
        (Tag::Int, Resolved::UInt(u)) => Ok(Value::UInt(*u)),
        (Tag::Float, Resolved::Float(f)) => Ok(Value::Float(*f)),
        (Tag::Float, Resolved::Int(i)) => Ok(Value::Float(*i as f64)),
        (Tag::Float, Resolved::UInt(u)) => Ok(Value::Float(*u as f64)),
        (Tag::Bool, Resolved::Bool(b)) => Ok(Value::Bool(*b)),
        (Tag::Null, Resolved::Null) => Ok(Value::Null),
        _ => Err(format!(
            "map[string]interface {{}}(nil): yaml: cannot decode {} `{}` as a {}",
            r.tag_name(),
            text,
            tag.name()
        )),
    }
}

/// The value taken from the source.
#[derive(Clone, Debug)]
enum ReplValue {
    /// A scalar: its type, its text, and the typed value when unchanged.
    Scalar {
        tag: Tag,
        text: String,
        typed: Option<Value>,
    },
    /// A map or list.
    Complex(Value),
}

impl ReplValue {
    fn from_value(v: &Value) -> ReplValue {
        match Tag::of(v) {
            Some(tag) => ReplValue::Scalar {
                tag,
                text: fieldpath::scalar_text(v),
                typed: Some(v.clone()),
            },
            None => ReplValue::Complex(v.clone()),
        }
    }

    /// The node text (empty for maps and lists).
    fn text(&self) -> &str {
        match self {
            ReplValue::Scalar { text, .. } => text,
            ReplValue::Complex(_) => "",
        }
    }

    fn create_kind(&self) -> CreateKind {
        match self {
            ReplValue::Scalar { .. } => CreateKind::Scalar,
            ReplValue::Complex(v) => CreateKind::of(v),
        }
    }

    /// The whole value, for replacing a map or list target.
    fn typed(&self) -> Result<Value, String> {
        match self {
            ReplValue::Scalar { typed: Some(v), .. } => Ok(v.clone()),
            ReplValue::Scalar { tag, text, .. } => coerce(Some(*tag), text),
            ReplValue::Complex(v) => Ok(v.clone()),
        }
    }
}

/// Applies the replacements in order to `resources`.
pub fn apply_replacements<R: ReplacementResource>(
    resources: &mut [R],
    reps: &[Replacement],
) -> Result<(), String> {
    for r in reps {
        let source = match &r.source {
            Some(s) if !r.targets.is_empty() || r.targets_given => s,
            _ => {
                return Err(
                    "replacements must specify a source and at least one target".to_string()
                );
            }
        };
        let (index, value) = source_value(resources, source)?;
        // kyaml hands the source node itself to the targets (a copy only
        // when a delimiter picks a part of it): a target that rewrites the
        // source node, or a node inside it, changes what the later targets
        // get. The node is followed by its position, never by its path: a
        // write that changes what the path selects (a list element's key
        // renamed) leaves the value as it is.
        let mut live = if source
            .options
            .as_ref()
            .is_none_or(|o| o.delimiter.is_empty())
        {
            fieldpath::locate(resources[index].object(), source_field_path(source))?
                .map(|at| LiveSource { index, at })
        } else {
            None
        };
        let mut value = value;
        for t in &r.targets {
            apply_target(resources, &mut value, &mut live, t)?;
        }
    }
    Ok(())
}

/// The node a replacement's value is, while writes can still change it.
struct LiveSource {
    /// Position of the source resource.
    index: usize,
    /// Where the source node is in it.
    at: Vec<PathSeg>,
}

fn source_field_path(src: &SourceSelector) -> &str {
    if src.field_path.is_empty() {
        DEFAULT_FIELD_PATH
    } else {
        &src.field_path
    }
}

/// The selected source resource's position and the value it gives.
fn source_value<R: ReplacementResource>(
    resources: &[R],
    src: &SourceSelector,
) -> Result<(usize, ReplValue), String> {
    let mut found: Option<usize> = None;
    for (i, res) in resources.iter().enumerate() {
        if res.ids().iter().any(|id| src.id.selects_id(id)) {
            if found.is_some() {
                return Err(format!(
                    "multiple matches for selector {}",
                    src.id.id_string()
                ));
            }
            found = Some(i);
        }
    }
    let i = found.ok_or_else(|| format!("nothing selected by {}", src.id.id_string()))?;
    Ok((
        i,
        value_of(resources[i].object(), resources[i].scalar_texts(), src)?,
    ))
}

/// The value `src` gives in the source resource `obj`, whose kept scalar
/// texts are `texts`.
fn value_of(obj: &Value, texts: &[TextScalar], src: &SourceSelector) -> Result<ReplValue, String> {
    let fp = source_field_path(src);
    let node =
        fieldpath::get(obj, fp).map_err(|e| format!("error looking up replacement source: {e}"))?;
    let node = match node {
        None | Some(Value::Null) => None,
        Some(Value::Map(m)) if m.is_empty() => None,
        Some(Value::Seq(s)) if s.is_empty() => None,
        Some(v) => Some(v),
    };
    let Some(node) = node else {
        return Err(format!(
            "fieldPath `{fp}` is missing for replacement source {}",
            src.id.id_string()
        ));
    };
    let mut value = ReplValue::from_value(node);
    // a scalar whose text is kept gives that text
    if let ReplValue::Scalar { text, .. } = &mut value
        && let Some(t) = kept_text(obj, texts, node)
    {
        text.clone_from(&t.text);
    }
    let Some(opts) = src.options.as_ref().filter(|o| !o.delimiter.is_empty()) else {
        return Ok(value);
    };
    let ReplValue::Scalar { tag, text, .. } = value else {
        return Err("delimiter option can only be used with scalar nodes".to_string());
    };
    let parts: Vec<&str> = text.split(opts.delimiter.as_str()).collect();
    let part = usize::try_from(opts.index).ok().and_then(|i| parts.get(i));
    match part {
        Some(p) => Ok(ReplValue::Scalar {
            tag,
            text: (*p).to_string(),
            typed: None,
        }),
        None => Err(format!(
            "options.index {} is out of bounds for value {text}",
            opts.index
        )),
    }
}

/// Label and annotation selectors of one selector, parsed once; parse
/// errors surface when the selector is first used, as in kustomize.
struct MetaSelector {
    annotations: Result<LabelSelector, String>,
    labels: Result<LabelSelector, String>,
}

impl MetaSelector {
    fn new(s: &Selector) -> MetaSelector {
        MetaSelector {
            annotations: LabelSelector::parse(&s.annotation_selector),
            labels: LabelSelector::parse(&s.label_selector),
        }
    }

    /// Whether `obj` (whose kept texts are `texts`) is selected.
    fn matches(&self, obj: &Value, texts: &[TextScalar]) -> Result<bool, String> {
        let anno = self
            .annotations
            .as_ref()
            .map_err(Clone::clone)?
            .matches_texts(|k| meta_value_text(obj, texts, "annotations", k));
        let labels = self
            .labels
            .as_ref()
            .map_err(Clone::clone)?
            .matches_texts(|k| meta_value_text(obj, texts, "labels", k));
        Ok(anno && labels)
    }
}

fn apply_target<R: ReplacementResource>(
    resources: &mut [R],
    value: &mut ReplValue,
    live: &mut Option<LiveSource>,
    t: &TargetSelector,
) -> Result<(), String> {
    let select = t
        .select
        .as_ref()
        .ok_or_else(|| "target must specify resources to select".to_string())?;
    let paths: Vec<(String, Vec<PathElem>)> = if t.field_paths.is_empty() {
        vec![DEFAULT_FIELD_PATH.to_string()]
    } else {
        t.field_paths.clone()
    }
    .into_iter()
    .map(|fp| fieldpath::parse_dotted(&fp).map(|p| (fp, p)))
    .collect::<Result<_, _>>()?;
    let select_meta = MetaSelector::new(select);
    let reject_meta: Vec<Option<MetaSelector>> = t
        .reject
        .iter()
        .map(|r| {
            (!r.annotation_selector.is_empty() || !r.label_selector.is_empty())
                .then(|| MetaSelector::new(r))
        })
        .collect();
    for (i, res) in resources.iter_mut().enumerate() {
        let (obj, texts) = (res.object(), res.scalar_texts());
        if !select_meta.matches(obj, texts)? {
            continue;
        }
        let mut rejected = false;
        for meta in reject_meta.iter().flatten() {
            if meta.matches(obj, texts)? {
                rejected = true;
                break;
            }
        }
        if rejected {
            continue;
        }
        let ids = res.ids();
        let selected = ids.iter().any(|id| select.selects_id(id));
        let rejected_by_id = t
            .reject
            .iter()
            .any(|r| !r.id_is_empty() && ids.iter().any(|id| r.selects_id(id)));
        if selected && !rejected_by_id {
            let before = res.has_links().then(|| res.object().clone());
            let is_source = live.as_ref().is_some_and(|l| l.index == i);
            let source = if is_source { Some(&mut *live) } else { None };
            let (obj, texts) = res.object_and_texts_mut();
            copy_to_target(obj, texts, value, source, t.options.as_ref(), &paths)?;
            if let Some(before) = before {
                res.written(&before);
            }
        }
    }
    Ok(())
}

/// Writes `value` at every match of `paths` in `obj`. When `obj` holds the
/// live source (`source`), a write over the source node, or inside it,
/// changes `value` for the writes after it; a write over a node holding it
/// replaces that node whole (kyaml `SetYNode`), which leaves the source node
/// out of the document: `value` stays as it is from then on.
fn copy_to_target(
    obj: &mut Value,
    texts: &mut Vec<TextScalar>,
    value: &mut ReplValue,
    mut source: Option<&mut Option<LiveSource>>,
    options: Option<&FieldOptions>,
    paths: &[(String, Vec<PathElem>)],
) -> Result<(), String> {
    let create = options.is_some_and(|o| o.create);
    for (fp, path) in paths {
        let not_found = if create {
            format!(
                "unable to find or create field {} in replacement target",
                go_quote(fp)
            )
        } else {
            format!(
                "unable to find field {} in replacement target",
                go_quote(fp)
            )
        };
        let kind = create.then(|| value.create_kind());
        // a write inside the source node: read it again after this path
        let mut inside = false;
        let mut f = |node: &mut Value, created: bool, at: &[PathSeg]| {
            let recorded = texts
                .iter()
                .position(|t| t.path.as_slice() == at && t.current(node));
            let kept = if created {
                Some(TextScalar {
                    path: at.to_vec(),
                    text: String::new(),
                    kind: TextKind::Untyped,
                })
            } else {
                recorded.map(|i| texts.swap_remove(i))
            };
            // stale entries of this field go too
            texts.retain(|t| t.path.as_slice() != at);
            let written = set_field_value(node, at, kept, value, options)?;
            if let Some(live) = source.as_deref_mut() {
                // (the source node itself, a node holding it, a node in it)
                let (itself, holds, within) = live.as_ref().map_or((false, false, false), |l| {
                    let src = l.at.as_slice();
                    (src == at, src.starts_with(at), at.starts_with(src))
                });
                if itself {
                    *value = ReplValue::from_value(node);
                    if let (ReplValue::Scalar { text, .. }, Some(w)) = (&mut *value, &written) {
                        text.clone_from(&w.text);
                    }
                } else if holds {
                    *live = None;
                } else if within {
                    inside = true;
                }
            }
            texts.extend(written);
            Ok(())
        };
        match fieldpath::visit_matches(obj, path, kind, &mut f) {
            Ok(0) => return Err(not_found),
            Ok(_) => {}
            Err(VisitError::Path(e)) => return Err(format!("{not_found}: {e}")),
            Err(VisitError::Apply(e)) => return Err(e),
        }
        if inside
            && let Some(Some(l)) = source.as_deref()
            && let Some(node) = value_at(obj, &l.at)
        {
            *value = ReplValue::from_value(node);
        }
    }
    Ok(())
}

/// Writes `value` into one target node at `at` (kustomize's
/// `setFieldValue`). `kept`: the node's kept text, if any (a node `create`
/// just made is untyped with empty text). An untyped scalar is read as
/// plain YAML, unless it is an annotation: kustomize reads every annotation
/// back as its node's text when it drops its bookkeeping at the end of a
/// build, so it keeps the text (`0777`, `~`, an empty string). A typed
/// scalar given text its type cannot read holds that text as a string.
/// Returns the text to keep, if any.
fn set_field_value(
    node: &mut Value,
    at: &[PathSeg],
    kept: Option<TextScalar>,
    value: &ReplValue,
    options: Option<&FieldOptions>,
) -> Result<Option<TextScalar>, String> {
    let scalar_target = !matches!(node, Value::Map(_) | Value::Seq(_));
    let mut text = None;
    if let Some(o) = options.filter(|o| !o.delimiter.is_empty()) {
        if !scalar_target {
            return Err("delimiter option can only be used with scalar nodes".to_string());
        }
        let current = match &kept {
            Some(k) => k.text.clone(),
            None => fieldpath::scalar_text(node),
        };
        let mut parts: Vec<&str> = current.split(o.delimiter.as_str()).collect();
        let v = value.text();
        match usize::try_from(o.index) {
            Err(_) => parts.insert(0, v),
            Ok(i) => match parts.get_mut(i) {
                Some(slot) => *slot = v,
                None => parts.push(v),
            },
        }
        text = Some(parts.join(&o.delimiter));
    }
    if scalar_target {
        let text = text.as_deref().unwrap_or(value.text());
        // a scalar node has a type unless it is untyped
        let tag = match &kept {
            Some(TextScalar {
                kind: TextKind::Untyped,
                ..
            }) => None,
            Some(TextScalar {
                kind: TextKind::Mistyped(t),
                ..
            }) => Some(*t),
            _ => Tag::of(node),
        };
        let keep = |tag: Option<Tag>| TextScalar {
            path: at.to_vec(),
            text: text.to_string(),
            kind: tag.map_or(TextKind::Untyped, TextKind::Mistyped),
        };
        let Some(tag) = tag else {
            *node = if is_annotation(at) {
                Value::String(text.to_string())
            } else {
                coerce(None, text)?
            };
            return Ok(Some(keep(None)));
        };
        // kustomize fails on text its type cannot read only when it decodes
        // the resource (see `mistyped_error`)
        return Ok(match coerce(Some(tag), text) {
            Ok(v) => {
                *node = v;
                None
            }
            Err(_) => {
                *node = Value::String(text.to_string());
                Some(keep(Some(tag)))
            }
        });
    } else {
        *node = value.typed()?;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kustomize::fieldpath::testutil::flow;
    use crate::kustomize::resid::Gvk;

    #[derive(Debug)]
    struct Res {
        prev: Vec<ResId>,
        obj: Value,
        texts: Vec<TextScalar>,
    }

    impl ReplacementResource for Res {
        fn ids(&self) -> Vec<ResId> {
            let o = &self.obj;
            let gvk = Gvk::from_api_version(
                o.str_at(&["apiVersion"]).unwrap_or(""),
                o.str_at(&["kind"]).unwrap_or(""),
            );
            let mut ids = vec![ResId::new(
                gvk,
                o.str_at(&["metadata", "name"]).unwrap_or(""),
                o.str_at(&["metadata", "namespace"]).unwrap_or(""),
            )];
            ids.extend(self.prev.iter().cloned());
            ids
        }
        fn object(&self) -> &Value {
            &self.obj
        }
        fn scalar_texts(&self) -> &[TextScalar] {
            &self.texts
        }
        fn object_and_texts_mut(&mut self) -> (&mut Value, &mut Vec<TextScalar>) {
            (&mut self.obj, &mut self.texts)
        }
    }

    fn res(docs: &[&str]) -> Vec<Res> {
        docs.iter()
            .map(|d| Res {
                prev: Vec::new(),
                obj: flow(d),
                texts: Vec::new(),
            })
            .collect()
    }

    fn reps(text: &str) -> Vec<Replacement> {
        let v = flow(text);
        let items = v.as_seq().cloned().unwrap_or_default();
        items
            .iter()
            .map(|i| parse_replacement(i).unwrap_or_else(|e| panic!("{e}")))
            .collect()
    }

    /// Runs replacements, then decodes the resources as kustomize's output
    /// does (see [`mistyped_error`]).
    fn run(docs: &[&str], r: &str) -> Result<Vec<Value>, String> {
        let mut rs = res(docs);
        apply_replacements(&mut rs, &reps(r))?;
        if let Some(e) = rs.iter().find_map(|r| mistyped_error(&r.obj, &r.texts)) {
            return Err(e);
        }
        Ok(rs.into_iter().map(|r| r.obj).collect())
    }

    fn data(v: &[Value], i: usize) -> Value {
        v.get(i)
            .and_then(|o| o.get("data"))
            .cloned()
            .unwrap_or_default()
    }

    const SRC: &str = "{apiVersion: v1, kind: ConfigMap, metadata: {name: src}, data: \
        {str: hello, num: '42', ival: 7, bval: true, m: {x: 1}, l: [1, 2], nul: null, empty: '', \
        em: {}, img: 'registry.io/team/app:1.2.3', f: 3.0}}";
    const TGT: &str = "{apiVersion: v1, kind: ConfigMap, metadata: {name: t}, data: \
        {i: 1, n: null, b: true, f: 1.5, s: x, a: x-y-z, e: '', m: {k: v}, prim: [x1, x2, y1]}}";

    fn one(src_field: &str, target: &str) -> Result<Value, String> {
        let r = format!(
            "[{{source: {{kind: ConfigMap, name: src, fieldPath: {src_field}}}, targets: [{target}]}}]"
        );
        run(&[SRC, TGT], &r).map(|v| data(&v, 1))
    }

    fn tdata(with: &str) -> Value {
        let mut d = flow(TGT).get("data").cloned().unwrap_or_default();
        if let (Some(m), Value::Map(extra)) = (d.as_map_mut(), flow(with)) {
            for (k, v) in extra {
                m.insert(k, v);
            }
        }
        d
    }

    #[test]
    fn a_target_that_rewrites_the_source_changes_what_later_writes_get() {
        // Oracle (kubectl kustomize 5.5): kyaml passes the source node
        // itself, so the write over it shows in the writes after it, in the
        // same target and in later ones; a source delimiter takes a copy.
        let d = "{apiVersion: v1, kind: Pod, metadata: {name: p}, \
                 spec: {containers: [{name: a, image: 'nginx:1.0'}, {name: b, image: redis}]}}";
        let svc = "{apiVersion: v1, kind: Service, metadata: {name: s}}";
        let r = "[{source: {kind: Pod, fieldPath: spec.containers.0.image}, targets: [\
                 {select: {kind: Pod}, fieldPaths: ['spec.containers.*.image'], \
                  options: {delimiter: ':', index: 1}}, \
                 {select: {kind: Service}, fieldPaths: [metadata.annotations.img], options: {create: true}}]}]";
        let out = run(&[d, svc], r).unwrap();
        let images: Vec<_> = out[0]
            .get_path(&["spec", "containers"])
            .and_then(Value::as_seq)
            .unwrap()
            .iter()
            .map(|c| c.str_at(&["image"]).unwrap())
            .collect();
        assert_eq!(images, ["nginx:nginx:1.0", "redis:nginx:nginx:1.0"]);
        assert_eq!(
            out[1].str_at(&["metadata", "annotations", "img"]),
            Some("nginx:nginx:1.0")
        );
        // with a delimiter on the source, every write gets the first value
        let r = "[{source: {kind: Pod, fieldPath: spec.containers.0.image, options: {delimiter: ':', index: 0}}, \
                 targets: [{select: {kind: Pod}, fieldPaths: ['spec.containers.*.image'], \
                  options: {delimiter: ':', index: 1}}]}]";
        let out = run(&[d], r).unwrap();
        let c = out[0]
            .get_path(&["spec", "containers"])
            .and_then(Value::as_seq)
            .unwrap();
        assert_eq!(c[0].str_at(&["image"]), Some("nginx:nginx"));
        assert_eq!(c[1].str_at(&["image"]), Some("redis:nginx"));
    }

    #[test]
    fn the_source_is_a_node_not_a_path() {
        // Oracle (kubectl kustomize 5.5): the value is the node the source
        // path found; renaming the list key the path selected by keeps it.
        let d = "{apiVersion: v1, kind: W, metadata: {name: w}, \
                 spec: {image: old, items: [{name: a, value: '1'}, {name: b, value: '2'}]}}";
        let r = "[{source: {kind: W, fieldPath: 'spec.items.[name=b].value'}, targets: [\
                 {select: {kind: W}, fieldPaths: ['spec.items.[name=b].name', spec.image]}]}]";
        let out = run(&[d], r).unwrap();
        assert_eq!(
            out[0].get("spec").cloned(),
            Some(flow(
                "{image: '2', items: [{name: a, value: '1'}, {name: '2', value: '2'}]}"
            ))
        );
        // a write over a node holding the source leaves the value as it was
        let d = "{apiVersion: v1, kind: W, metadata: {name: w}, spec: {image: old, a: {b: v}}}";
        let r = "[{source: {kind: W, fieldPath: spec.a.b}, targets: [\
                 {select: {kind: W}, fieldPaths: [spec.a, spec.image]}]}]";
        let out = run(&[d], r).unwrap();
        assert_eq!(out[0].get("spec").cloned(), Some(flow("{image: v, a: v}")));
        // a write inside the source shows in the writes after it
        let d =
            "{apiVersion: v1, kind: W, metadata: {name: w}, spec: {copy: {}, m: {x: '1', y: '2'}}}";
        let r = "[{source: {kind: W, fieldPath: spec.m}, targets: [\
                 {select: {kind: W}, fieldPaths: [spec.m.x, spec.copy]}]}]";
        let out = run(&[d], r).unwrap();
        assert_eq!(
            out[0].get("spec").cloned(),
            Some(flow("{copy: {x: '', y: '2'}, m: {x: '', y: '2'}}"))
        );
    }

    #[test]
    fn scalar_targets_keep_their_type() {
        // Oracle: "42" into an int field stays an int; 7 into a string is "7".
        let t = "{select: {name: t}, fieldPaths: [data.i, data.s]}";
        assert_eq!(one("data.num", t), Ok(tdata("{i: 42, s: '42'}")));
        assert_eq!(one("data.ival", t), Ok(tdata("{i: 7, s: '7'}")));
        let t = "{select: {name: t}, fieldPaths: [data.f]}";
        assert_eq!(one("data.ival", t), Ok(tdata("{f: 7.0}")));
        // A map written into a scalar leaves empty text (null stays null).
        let t = "{select: {name: t}, fieldPaths: [data.s, data.n]}";
        assert_eq!(one("data.m", t), Ok(tdata("{s: '', n: null}")));
        // Maps and lists are replaced whatever the value.
        let t = "{select: {name: t}, fieldPaths: [data.m]}";
        assert_eq!(one("data.ival", t), Ok(tdata("{m: 7}")));
        assert_eq!(one("data.l", t), Ok(tdata("{m: [1, 2]}")));
    }

    #[test]
    fn type_mismatches_fail_like_go_yaml() {
        let t = |f: &str| format!("{{select: {{name: t}}, fieldPaths: [{f}]}}");
        assert_eq!(
            one("data.str", &t("data.n")),
            Err(
                "map[string]interface {}(nil): yaml: cannot decode !!str `hello` as a !!null"
                    .into()
            )
        );
        assert_eq!(
            one("data.str", &t("data.i")),
            Err(
                "map[string]interface {}(nil): yaml: cannot decode !!str `hello` as a !!int".into()
            )
        );
        assert_eq!(
            one("data.empty", &t("data.f")),
            Err("map[string]interface {}(nil): yaml: cannot decode !!null `` as a !!float".into())
        );
        assert!(one("data.num", &t("data.b")).is_err());
        // only if the text stays: fitting text written over it succeeds,
        // and a write in between reads the text it holds
        let r = "[{source: {name: src, fieldPath: data.str}, targets: [{select: {name: t}, fieldPaths: [data.i]}]}, \
                 {source: {name: t, fieldPath: data.i}, targets: [{select: {name: t}, fieldPaths: [data.s]}]}, \
                 {source: {name: src, fieldPath: data.num}, targets: [{select: {name: t}, fieldPaths: [data.i]}]}]";
        assert_eq!(
            run(&[SRC, TGT], r).map(|v| data(&v, 1)),
            Ok(tdata("{i: 42, s: hello}"))
        );
    }

    #[test]
    fn created_fields_are_untyped() {
        // Oracle: created fields read the text as plain YAML.
        let t = "{select: {name: t}, fieldPaths: [data.c1, data.c2.x], options: {create: true}}";
        assert_eq!(one("data.num", t), Ok(tdata("{c1: 42, c2: {x: 42}}")));
        assert_eq!(one("data.bval", t), Ok(tdata("{c1: true, c2: {x: true}}")));
        assert_eq!(one("data.empty", t), Ok(tdata("{c1: null, c2: {x: null}}")));
        assert_eq!(one("data.m", t), Ok(tdata("{c1: {x: 1}, c2: {x: {x: 1}}}")));
        // Appended list elements too; an existing null on the way swallows
        // the write silently.
        let t = "{select: {name: t}, fieldPaths: ['data.prim.[=q]', data.n.deep, data.seq.0], options: {create: true}}";
        assert_eq!(
            one("data.num", t),
            Ok(tdata("{prim: [x1, x2, y1, 42], seq: [42]}"))
        );
    }

    #[test]
    fn delimiters_on_source_and_target() {
        // Oracle results for "x-y-z" targets.
        let t = |opts: &str, f: &str| {
            format!("{{select: {{name: t}}, fieldPaths: [{f}], options: {opts}}}")
        };
        let src = "data.img, options: {delimiter: /, index: 2}";
        assert_eq!(
            one(src, &t("{delimiter: '-', index: 1}", "data.a")),
            Ok(tdata("{a: x-app:1.2.3-z}"))
        );
        assert_eq!(
            one(src, &t("{delimiter: '-', index: -1}", "data.a")),
            Ok(tdata("{a: app:1.2.3-x-y-z}"))
        );
        assert_eq!(
            one(src, &t("{delimiter: '-', index: 7}", "data.a, data.e")),
            Ok(tdata("{a: x-y-z-app:1.2.3, e: -app:1.2.3}"))
        );
        assert_eq!(
            one(src, &t("{delimiter: '-', create: true}", "data.new")),
            Ok(tdata("{new: 'app:1.2.3'}"))
        );
        // "1" split on "0" -> ["1"]; index 0 replaced -> "7", still an int.
        assert_eq!(
            one("data.ival", &t("{delimiter: '0'}", "data.i")),
            Ok(tdata("{i: 7}"))
        );
        assert_eq!(
            one(
                "data.img, options: {delimiter: /, index: 3}",
                &t("{}", "data.a")
            ),
            Err("options.index 3 is out of bounds for value registry.io/team/app:1.2.3".into())
        );
        assert_eq!(
            one("data.img", &t("{delimiter: '-'}", "data.m")),
            Err("delimiter option can only be used with scalar nodes".into())
        );
        assert_eq!(
            one("data.m, options: {delimiter: '-'}", &t("{}", "data.a")),
            Err("delimiter option can only be used with scalar nodes".into())
        );
    }

    #[test]
    fn delimiter_keeps_int_type() {
        let docs = [
            SRC,
            "{apiVersion: v1, kind: ConfigMap, metadata: {name: t}, data: {i: 10}}",
        ];
        let r = "[{source: {name: src, fieldPath: data.ival}, targets: [{select: {name: t}, fieldPaths: [data.i], options: {delimiter: '0', index: 0}}]}]";
        assert_eq!(run(&docs, r).map(|v| data(&v, 1)), Ok(flow("{i: 70}")));
    }

    #[test]
    fn source_errors() {
        let t = "{select: {name: t}, fieldPaths: [data.a]}";
        for f in ["data.nul", "data.em", "data.l.5", "data.missing.deep"] {
            assert_eq!(
                one(f, t),
                Err(format!(
                    "fieldPath `{f}` is missing for replacement source ConfigMap.[noVer].[noGrp]/src.[noNs]"
                ))
            );
        }
        assert_eq!(one("data.empty", t), Ok(tdata("{a: ''}")));
        let e = one("'data.[x=y]'", t).err().unwrap_or_default();
        assert!(
            e.starts_with("error looking up replacement source: wrong node kind: expected SequenceNode but got MappingNode"),
            "{e}"
        );
        let docs = [SRC, TGT];
        assert_eq!(
            run(
                &docs,
                "[{source: {kind: ConfigMap}, targets: [{select: {}}]}]"
            ),
            Err("multiple matches for selector ConfigMap.[noVer].[noGrp]/[noName].[noNs]".into())
        );
        assert_eq!(
            run(
                &docs,
                "[{source: {kind: ConfigMap, version: v1, name: nope, namespace: x}, targets: [{select: {}}]}]"
            ),
            Err("nothing selected by ConfigMap.v1.[noGrp]/nope.x".into())
        );
        assert_eq!(
            run(&docs, "[{source: {name: src}, targets: []}]"),
            Err("replacements must specify a source and at least one target".into())
        );
        assert_eq!(
            run(&docs, "[{targets: [{select: {}}]}]"),
            Err("replacements must specify a source and at least one target".into())
        );
        assert_eq!(
            run(
                &docs,
                "[{source: {name: src}, targets: [{fieldPaths: [a]}]}]"
            ),
            Err("target must specify resources to select".into())
        );
    }

    #[test]
    fn target_path_errors() {
        let t = |f: &str, create: bool| {
            format!("{{select: {{name: t}}, fieldPaths: ['{f}'], options: {{create: {create}}}}}")
        };
        assert_eq!(
            one("data.str", &t("data.nothere", false)),
            Err("unable to find field \"data.nothere\" in replacement target".into())
        );
        assert_eq!(
            one("data.str", &t("data.prim.5", false)),
            Err("unable to find field \"data.prim.5\" in replacement target: index 5 specified but only 3 elements found".into())
        );
        assert_eq!(
            one("data.str", &t("data.[plain]", false)),
            Err("unable to find field \"data.[plain]\" in replacement target: list path element must contain fieldName=fieldValue for element to match".into())
        );
        let e = one("data.str", &t("data.m.*", true))
            .err()
            .unwrap_or_default();
        assert!(
            e.starts_with("unable to find or create field \"data.m.*\" in replacement target: wrong node kind: expected SequenceNode but got MappingNode"),
            "{e}"
        );
    }

    #[test]
    fn default_field_paths_and_selection() {
        // Oracle: source defaults to metadata.name; targets too.
        let docs = [
            "{apiVersion: apps/v1, kind: Deployment, metadata: {name: dep}}",
            "{apiVersion: apps/v1, kind: Deployment, metadata: {name: dep2, namespace: other}}",
            "{apiVersion: v1, kind: Namespace, metadata: {name: nsx}}",
        ];
        let out = run(
            &docs,
            "[{source: {group: apps, kind: Deployment, name: dep}, targets: [{select: {kind: Deployment}}]}]",
        );
        let names: Vec<String> = out
            .unwrap_or_default()
            .iter()
            .map(|o| o.str_at(&["metadata", "name"]).unwrap_or("").to_string())
            .collect();
        assert_eq!(names, vec!["dep", "dep", "nsx"]);
        // Names are not regexes; `default` matches no namespace.
        let out = run(
            &docs,
            "[{source: {name: dep, fieldPath: metadata.name}, targets: [\
              {select: {name: 'dep.*'}, fieldPaths: [metadata.annotations.x], options: {create: true}}, \
              {select: {namespace: default}, fieldPaths: [metadata.annotations.y], options: {create: true}}]}]",
        )
        .unwrap_or_default();
        let annos: Vec<Value> = out
            .iter()
            .map(|o| {
                o.get_path(&["metadata", "annotations"])
                    .cloned()
                    .unwrap_or_default()
            })
            .collect();
        assert_eq!(annos, vec![flow("{y: dep}"), Value::Null, flow("{y: dep}")]);
    }

    #[test]
    fn reject_uses_all_ids_and_labels() {
        // Oracle: base renamed with namePrefix p-; rejects see old names.
        let mut rs = res(&[
            "{apiVersion: v1, kind: ConfigMap, metadata: {name: p-src}, data: {v: NEW}}",
            "{apiVersion: apps/v1, kind: Deployment, metadata: {name: p-dep}}",
            "{apiVersion: apps/v1, kind: Deployment, metadata: {name: p-dep2, labels: {app: a}}}",
        ]);
        for (r, old) in rs.iter_mut().zip(["src", "dep", "dep2"]) {
            let mut id = r.ids().remove(0);
            id.name = old.to_string();
            r.prev.push(id);
        }
        let list = reps(
            "[{source: {kind: ConfigMap, name: src, fieldPath: data.v}, targets: [\
              {select: {kind: Deployment}, reject: [{name: dep}], fieldPaths: [metadata.annotations.a], options: {create: true}}, \
              {select: {name: dep2}, reject: [{name: p-dep}], fieldPaths: [metadata.annotations.b], options: {create: true}}, \
              {select: {name: p-dep}, reject: [{}], fieldPaths: [metadata.annotations.c], options: {create: true}}, \
              {select: {}, reject: [{name: nothing, labelSelector: app=a}], fieldPaths: [metadata.annotations.d], options: {create: true}}]}]",
        );
        assert_eq!(apply_replacements(&mut rs, &list), Ok(()));
        let annos: Vec<Value> = rs
            .iter()
            .map(|o| {
                o.obj
                    .get_path(&["metadata", "annotations"])
                    .cloned()
                    .unwrap_or_default()
            })
            .collect();
        assert_eq!(
            annos,
            vec![
                flow("{d: NEW}"),
                flow("{c: NEW, d: NEW}"),
                flow("{a: NEW, b: NEW}")
            ]
        );
    }

    #[test]
    fn label_selector_errors_surface() {
        let docs = [SRC, TGT];
        assert_eq!(
            run(
                &docs,
                "[{source: {name: src}, targets: [{select: {labelSelector: 'a b'}}]}]"
            ),
            Err(
                "unable to parse requirement: found 'b', expected: '=', '!=', '==', 'in', notin'"
                    .into()
            )
        );
    }

    #[test]
    fn regex_list_selectors_in_targets() {
        let docs = [
            "{apiVersion: v1, kind: ConfigMap, metadata: {name: src}, data: {v: hello}}",
            "{apiVersion: apps/v1, kind: Deployment, metadata: {name: dep}, spec: {containers: [\
              {name: nginx, image: 'nginx:1.0', env: [{name: A, value: '1'}]}, {name: nginx-side, image: 'side:2', env: [{name: A, value: '3'}]}, \
              {name: other, image: 'other:3'}]}}",
        ];
        let out = run(
            &docs,
            "[{source: {name: src, fieldPath: data.v}, targets: [{select: {kind: Deployment}, fieldPaths: \
              ['spec.containers.[name=nginx].image', 'spec.containers.*.env.[name=A].value']}]}]",
        );
        let want = flow(
            "{apiVersion: apps/v1, kind: Deployment, metadata: {name: dep}, spec: {containers: [\
              {name: nginx, image: hello, env: [{name: A, value: hello}]}, {name: nginx-side, image: hello, env: [{name: A, value: hello}]}, \
              {name: other, image: 'other:3'}]}}",
        );
        assert_eq!(out.ok().and_then(|v| v.get(1).cloned()), Some(want));
    }

    #[test]
    fn replacements_run_in_order() {
        let docs = [
            "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {v: one}}",
            "{apiVersion: v1, kind: ConfigMap, metadata: {name: b}, data: {v: two}}",
        ];
        let out = run(
            &docs,
            "[{source: {name: a, fieldPath: data.v}, targets: [{select: {name: b}, fieldPaths: [data.v]}]}, \
              {source: {name: b, fieldPath: data.v}, targets: [{select: {name: a}, fieldPaths: [data.w]}]}]",
        );
        assert_eq!(
            out.map(|v| (data(&v, 0), data(&v, 1))).err(),
            Some("unable to find field \"data.w\" in replacement target".into())
        );
        let out = run(
            &docs,
            "[{source: {name: a, fieldPath: data.v}, targets: [{select: {name: b}, fieldPaths: [data.v]}]}, \
              {source: {name: b, fieldPath: data.v}, targets: [{select: {name: a}, fieldPaths: [data.w], options: {create: true}}]}]",
        );
        assert_eq!(
            out.map(|v| (data(&v, 0), data(&v, 1))),
            Ok((flow("{v: one, w: one}"), flow("{v: one}")))
        );
    }

    #[test]
    fn strict_parse_errors() {
        let p = |t: &str| parse_replacement(&flow(t)).err();
        assert_eq!(
            p("{source: {kind: ConfigMap, labelSelector: a=b}, targets: []}"),
            Some("json: unknown field \"labelSelector\"".into())
        );
        assert_eq!(
            p("{source: {name: src}, targets: [{select: {kind: x, bogus: 1}}]}"),
            Some("json: unknown field \"bogus\"".into())
        );
        assert_eq!(
            p("{source: {name: src}, targets: [{select: {}, fieldPath: x}]}"),
            Some("json: unknown field \"fieldPath\"".into())
        );
        assert_eq!(
            p("{source: {options: {index: '1'}}, targets: []}"),
            Some("json: cannot unmarshal string into Go struct field FieldOptions.replacements.source.options.index of type int".into())
        );
        assert_eq!(
            p("{source: {}, targets: [{select: {}, fieldPaths: metadata.name}]}"),
            Some("json: cannot unmarshal string into Go struct field TargetSelector.replacements.targets.fieldPaths of type []string".into())
        );
        assert_eq!(
            p("{source: {}, targets: [{select: {group: 5}, fieldPaths: [5]}]}"),
            Some("json: cannot unmarshal number into Go struct field TargetSelector.replacements.targets.fieldPaths of type string".into())
        );
        assert_eq!(
            p("{source: {kind: 5, fieldPath: 5}, targets: []}"),
            Some("json: cannot unmarshal number into Go struct field SourceSelector.replacements.source.fieldPath of type string".into())
        );
        assert_eq!(
            p("{source: {}, targets: {select: {}}}"),
            Some("json: cannot unmarshal object into Go struct field ReplacementField.replacements.targets of type []*types.TargetSelector".into())
        );
        assert_eq!(
            p("{source: [a], targets: []}"),
            Some("json: cannot unmarshal array into Go struct field ReplacementField.replacements.source of type types.SourceSelector".into())
        );
        assert_eq!(
            p("{source: {}, targets: [{select: {}, reject: {kind: x}}]}"),
            Some("json: cannot unmarshal object into Go struct field TargetSelector.replacements.targets.reject of type []*types.Selector".into())
        );
        assert_eq!(
            p("{source: {options: {delimiter: 5, index: 1.5}}, targets: []}"),
            Some("json: cannot unmarshal number into Go struct field FieldOptions.replacements.source.options.delimiter of type string".into())
        );
        assert_eq!(
            p("{path: r.yaml, source: {kind: ConfigMap}}"),
            Some("cannot specify both path and inline replacement".into())
        );
        assert!(p("x").is_some());
        // Accepted: options.encoding, index given as 1.0, case-insensitive keys.
        let r = parse_replacement(&flow(
            "{Source: {Kind: ConfigMap, options: {encoding: base64, index: 1.0}}, targets: [{select: {}}]}",
        ));
        let src = r.ok().and_then(|r| r.source).unwrap_or_default();
        assert_eq!(src.id.kind, "ConfigMap");
        assert_eq!(src.options.map(|o| o.index), Some(1));
    }

    #[test]
    fn lenient_file_parsing() {
        let one = flow("{source: {kind: ConfigMap, bogus: 1}, targets: [{select: {name: dep}}]}");
        assert_eq!(parse_list(&one).map(|l| l.len()), Ok(1));
        let many = flow(
            "[{source: {kind: A}, targets: [{select: {}}]}, {source: {kind: B}, targets: [{select: {}}]}]",
        );
        assert_eq!(parse_list(&many).map(|l| l.len()), Ok(2));
        assert_eq!(
            parse_list(&Value::from("x")),
            Err("unsupported replacement type encountered within replacement path: string".into())
        );
        assert_eq!(
            parse_list(&flow("{source: {kind: 5}}")),
            Err("error unmarshaling JSON: while decoding JSON: json: cannot unmarshal number into Go struct field SourceSelector.source.kind of type string".into())
        );
        assert!(
            parse_replacement_lenient(&flow("{source: {kind: A, x: 1}, targets: [{select: {}}]}"))
                .is_ok()
        );
    }
}
