//! YAML text -> [`Value`], reproducing what kustomize 5.5 ends up with.
//!
//! kustomize reads YAML in two different ways, and the two disagree on what a
//! scalar means, so this module has two entry points:
//!
//! * [`parse_documents_strict`] is how *resources* (and patches, and every other
//!   file kustomize loads through kyaml) are read: the text is split on `---`
//!   lines the way kyaml's `ByteReader` does, each piece is parsed by go-yaml
//!   v3 into nodes, kyaml expands anchors and merge keys on the nodes
//!   (`DeAnchor`), and at output time every resource is re-encoded and decoded
//!   into Go `interface{}` values, then into JSON. Scalars therefore resolve
//!   with go-yaml v3 rules (`yes`/`on` are strings, `0123` is octal,
//!   timestamps become RFC 3339 strings), duplicate keys are an error, and so
//!   are non-string keys. `metadata.annotations` is rebuilt by kustomize on
//!   the way out (values become their source text, keys are re-read as plain
//!   scalars), which this reader reproduces.
//! * [`parse_documents`] is how a *kustomization file* (and other config read
//!   with `sigs.k8s.io/yaml`) is read: go-yaml v2 (YAML 1.1 booleans such as
//!   `yes`/`on`, timestamps kept as written), then a YAML -> JSON conversion
//!   that stringifies int/bool/float keys. Duplicate keys are tolerated (the
//!   last one wins) and merge keys follow go-yaml v2 (a merge overrides the
//!   keys written before it).
//!
//! Errors carry go-yaml's wording. The message prefix tells which stage of
//! kustomize would have reported it:
//! * `yaml: ...` - a syntax error found while loading (kustomize wraps it as
//!   `MalformedYAMLError: ... in File: ...`);
//! * `invalid document separator: ...`, `duplicate merge key`,
//!   `map merge requires ...`, `invalid map merge: ...` - raised while loading;
//! * `map[string]interface {}...: ...` - raised by kustomize when it prints
//!   the resource (duplicate keys, undecodable tagged scalars, non-string keys,
//!   values JSON cannot represent);
//! * for kustomization files, `unsupported map key of type: ...` and
//!   `json: unsupported value: ...` come from the YAML -> JSON conversion
//!   (kustomize prefixes every kustomization error with
//!   `invalid Kustomization: `).
//!
//! In resources, infinite and NaN floats are *not* an error here (unless the
//! same resource fails JSON encoding for another reason): they are returned
//! as [`Value::Float`] so that the printer can fail the way kustomize does;
//! [`go_repr`] renders the Go `%#v` text its message needs.
//!
//! The parts, one concern each: [`input`] (newline normalization, the
//! kyaml document split, directives, the tab-after-colon retry),
//! [`resolve`] (scalar resolution for the go-yaml v3 and v2 flavours),
//! [`timestamp`] (go-yaml's timestamps), [`builder`] (the event reader and
//! the tree builder: anchors, aliases, merge keys, annotations),
//! [`decode`] (what kustomize's decoding refuses: duplicate keys, non-string
//! keys, values JSON cannot hold), [`folded`] (what kyaml's printer makes
//! of folded block scalars), [`lines`] (line numbers of the re-encoded
//! document for its errors) and [`gofmt`] (Go's `%#v` and quoting in
//! messages). This module holds the entry points and the tree
//! they share.
//!
//! Known gaps: line numbers of duplicate keys inside alias copies, the exact
//! text of kustomize's panic on an empty annotation key, flow collections
//! nested deeper than 255 levels (rejected), annotations of `kind: List`
//! items (not rewritten here), and where libyaml's scanner departs from the
//! YAML spec inside flow collections: `?` always starts a key there (`[?x]`),
//! a tag takes `,`, `[` and `]` into its name (`[!x]` is an error), and
//! `[x:]` / `[:x]` (saphyr reads these the spec's way).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;

use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Span, Tag};

use super::value::{Mapping, PathSeg, Value};

/// A YAML document that could not be turned into a [`Value`].
///
/// `message` follows go-yaml / kustomize wording (see the module docs for the
/// prefixes); `line` and `column` are 1-based positions in the whole input
/// where known, 0 otherwise.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// The error text, worded like kustomize's.
    pub message: String,
    /// 1-based line in the input (0 when unknown).
    pub line: usize,
    /// 1-based column in the input (0 when unknown).
    pub column: usize,
}

impl ParseError {
    fn new(message: impl Into<String>, line: usize, column: usize) -> Self {
        ParseError {
            message: message.into(),
            line,
            column,
        }
    }
}

/// Reads every document of a kustomization-style YAML stream (go-yaml v2 +
/// `sigs.k8s.io/yaml` semantics), in order.
///
/// An empty document (nothing, or only comments, between `---` markers)
/// yields [`Value::Null`]. Duplicate keys are allowed (the last one wins);
/// int, float and bool keys are turned into strings. `yes`/`no`/`on`/`off`
/// (and `y`/`n`) are booleans and timestamps stay as written, as in go-yaml
/// v2.
///
/// kustomize only ever looks at the first document of such a file, so an
/// error found in a later document ends the list instead of failing the
/// call; an error in the first document is returned.
pub fn parse_documents(src: &str) -> Result<Vec<Value>, ParseError> {
    let mut text = normalize_newlines(src);
    check_directives(&text, 0)?;
    let mut retries = 0;
    'retry: loop {
        let mut reader = DocReader::new(&text, Mode::Lenient);
        let mut out = Vec::new();
        loop {
            let step = reader
                .next_document()
                .and_then(|doc| doc.map(|d| finish_lenient(d.root)).transpose());
            match step {
                Ok(Some(v)) => out.push(v),
                Ok(None) => return Ok(out),
                Err(e) if out.is_empty() => {
                    if retries < MAX_RETRIES
                        && let Some(patched) = patch_tab_after_colon(&text, &e, 0)
                            .or_else(|| patch_dash_in_flow(&text, &e, 0))
                            .or_else(|| patch_quoted_indent(&text, &e, 0))
                            .or_else(|| patch_block_scalar_comment(&text, &e, 0))
                    {
                        retries += 1;
                        text = Cow::Owned(patched);
                        continue 'retry;
                    }
                    return Err(e);
                }
                Err(_) => return Ok(out),
            }
        }
    }
}

/// Reads every document of a resource file the way kustomize (kyaml) does.
///
/// The input is split on lines starting with `---` (anything but a comment
/// after the marker is an `invalid document separator` error); each piece
/// yields one value, the first YAML document in it ([`Value::Null`] when the
/// piece is empty or only has comments). A duplicate key anywhere is an error
/// (`mapping key "env" already defined at line 4`), and so is a key that is
/// not a string once decoded (`1: x`, `true: y`), with kustomize's messages.
/// Line numbers in syntax errors count from the start of the piece, like
/// kustomize's.
pub fn parse_documents_strict(src: &str) -> Result<Vec<Value>, ParseError> {
    parse_strict(src, false, false).map(|docs| docs.into_iter().map(|d| d.value).collect())
}

/// [`parse_documents_strict`] for strategic-merge patches: a null
/// annotation value (`null`, `~` or nothing) is a null, which deletes the
/// annotation, where a resource keeps its text. Each document comes with
/// the texts of its typed scalars that do not print as written (see
/// [`MarkedDocument::written`]; kustomize finds a patch's target by the
/// text of its `metadata.name`).
///
/// `meta`: how much of the patch's labels and annotations kustomize
/// rewrote through string maps before merging (see [`PatchMeta`]).
pub fn parse_patch_documents(
    src: &str,
    meta: PatchMeta,
) -> Result<Vec<MarkedDocument>, ParseError> {
    let mut docs = parse_strict_with(src, false, true, true, meta)?;
    for d in &mut docs {
        copy_meta_as_text(&mut d.value, meta);
    }
    Ok(docs)
}

/// What kustomize did to a strategic-merge patch's labels and annotations
/// before merging it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchMeta {
    /// Nothing: a null value (`null`, `~` or nothing) deletes.
    AsWritten,
    /// The annotations went through `GetAnnotations`/`SetAnnotations` (a
    /// `patches` entry with `allowNameChange` or `allowKindChange` marks
    /// its patch with an annotation): every value is its source text, a
    /// map or list value is empty, and a null `annotations` is gone.
    AnnotationsAsText,
    /// Labels and annotations alike, as for the patches kustomize applies
    /// through its resource map (`patchesStrategicMerge`, and `patches`
    /// entries with a target); labels or annotations left without entries
    /// are dropped from the patch.
    CopiedAsText,
}

/// kustomize's copy of a patch's labels and annotations through string
/// maps (see [`PatchMeta`]).
fn copy_meta_as_text(v: &mut Value, how: PatchMeta) {
    let Some(meta) = v.get_mut("metadata").and_then(Value::as_map_mut) else {
        return;
    };
    let fields: &[&str] = match how {
        PatchMeta::AsWritten => &[],
        PatchMeta::AnnotationsAsText => &["annotations"],
        PatchMeta::CopiedAsText => &["labels", "annotations"],
    };
    for &field in fields {
        let keep = match meta.get_mut(field) {
            None => continue,
            Some(Value::Map(m)) => {
                for x in m.values_mut() {
                    if let Some((read, _)) = folded_parts(x) {
                        // new string nodes: no folded style any more
                        *x = Value::String(read.to_owned());
                    } else if !matches!(x, Value::String(_)) {
                        *x = Value::String(String::new());
                    }
                }
                !m.is_empty()
            }
            Some(_) => false,
        };
        if !keep {
            meta.shift_remove(field);
        }
    }
}

/// [`parse_documents_strict`], with what kyaml keeps of each document
/// beside its values (see [`MarkedDocument`]).
pub fn parse_documents_strict_marking_empty_nulls(
    src: &str,
) -> Result<Vec<MarkedDocument>, ParseError> {
    parse_strict(src, true, false)
}

/// A resource document and what kyaml keeps of it beside its values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MarkedDocument {
    pub value: Value,
    /// Paths of the nulls written as nothing (`key:`), which kustomize
    /// keeps apart from explicit `null`s (a strategic-merge patch drops
    /// them).
    pub empty_nulls: Vec<Vec<PathSeg>>,
    /// Paths and texts of the typed scalars whose text is not how their
    /// value prints (`0600`, `1.50`, `True`, `~`, `2001-12-14`): kyaml
    /// keeps a scalar's text, and replacements and vars read it. Not
    /// recorded through aliases and merge keys.
    pub written: Vec<(Vec<PathSeg>, String)>,
    /// Paths of the map fields holding a string written quoted or as a
    /// literal block scalar (`"http"`, `|`): kyaml keeps a node's style, and gives
    /// it to a value a strategic merge writes over the field, so a number
    /// written there stays text, as the patch wrote it. Not recorded
    /// through aliases and merge keys, nor in annotations.
    pub quoted: Vec<Vec<PathSeg>>,
}

impl MarkedDocument {
    /// A document with nothing kept beside it.
    pub fn plain(value: Value) -> MarkedDocument {
        MarkedDocument {
            value,
            ..MarkedDocument::default()
        }
    }
}

fn parse_strict(src: &str, mark: bool, patch: bool) -> Result<Vec<MarkedDocument>, ParseError> {
    parse_strict_with(src, mark, mark, patch, PatchMeta::AsWritten)
}

/// A strategic-merge patch's top-level fields always merge into the target
/// (kyaml's merge looks each field name up once and finds its first entry),
/// so a repeated top-level key of a patch is not an error: the first one
/// counts. A repeated key deeper down is copied along with its map when the
/// target lacks that map, and fails when the result is read, so those stay
/// errors.
fn keep_first_root_keys(root: &mut N) {
    if let N::Map(es) = root {
        let mut seen = std::collections::HashSet::new();
        es.retain(|e| seen.insert((e.key.kind(), e.meta.text(&e.key).to_owned())));
    }
}

/// `mark`: record the nulls written as nothing; `written`: the texts of
/// typed scalars (see [`MarkedDocument`]).
fn parse_strict_with(
    src: &str,
    mark: bool,
    written: bool,
    patch: bool,
    meta_text: PatchMeta,
) -> Result<Vec<MarkedDocument>, ParseError> {
    let text = normalize_newlines(src);
    let chunks = split_chunks(&text)?;
    let mut out = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        check_directives(chunk.text, chunk.line_offset)?;
        let mut patched: Option<String> = None;
        let mut retries = 0;
        let value = loop {
            let piece = Chunk {
                text: patched.as_deref().unwrap_or(chunk.text),
                line_offset: chunk.line_offset,
            };
            let mut reader = DocReader::new(piece.text, Mode::Strict);
            reader.line_offset = chunk.line_offset;
            reader.patch = patch;
            reader.meta_text = meta_text;
            reader.written = written;
            let mut nulls = Vec::new();
            match reader.next_document() {
                Ok(Some(mut doc)) => {
                    if patch {
                        keep_first_root_keys(&mut doc.root);
                    }
                    let written = std::mem::take(&mut doc.written);
                    let quoted = std::mem::take(&mut doc.quoted);
                    let value = finish_strict(doc, piece, mark.then_some(&mut nulls))?;
                    break MarkedDocument {
                        value,
                        empty_nulls: nulls,
                        written,
                        quoted,
                    };
                }
                Ok(None) => break MarkedDocument::plain(Value::Null),
                Err(e) => {
                    let again = if retries < MAX_RETRIES {
                        patch_tab_after_colon(piece.text, &e, chunk.line_offset)
                            .or_else(|| patch_dash_in_flow(piece.text, &e, chunk.line_offset))
                            .or_else(|| patch_quoted_indent(piece.text, &e, chunk.line_offset))
                            .or_else(|| {
                                patch_block_scalar_comment(piece.text, &e, chunk.line_offset)
                            })
                    } else {
                        None
                    };
                    match again {
                        Some(t) => {
                            retries += 1;
                            patched = Some(t);
                        }
                        None => return Err(e),
                    }
                }
            }
        };
        out.push(value);
    }
    Ok(out)
}

/// Whether a string read from a resource must have been written quoted or
/// as a block scalar: as a plain scalar its text would not read back as
/// this string (go-yaml v3: a null, bool, int or float; an empty, spaced or
/// multi-line text; a leading indicator; `: ` or ` #` inside). `false` means
/// it may have been plain.
fn string_was_quoted(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else {
        return true;
    };
    let second = chars.next();
    let last = s.chars().next_back().unwrap_or(first);
    if s.contains('\n')
        || first.is_whitespace()
        || last.is_whitespace()
        || ",[]{}#&*!|>'\"%@`".contains(first)
        || ("-?:".contains(first) && second.is_none_or(char::is_whitespace))
        || s.contains(": ")
        || s.contains(" #")
        || last == ':'
    {
        return true;
    }
    matches!(
        resolve_plain(false, s).0,
        RTag::Null | RTag::Bool | RTag::Int | RTag::Float
    )
}

/// Stands, in a strategic-merge patch, for a folded block scalar (`>`)
/// whose value kyaml's printer changes (see `folded`): the mark, the value
/// as read, NUL, the value read back. kyaml's `FieldSetter` gives a node
/// written over an existing field that field's style, so the printer's
/// change only happens where the patch's node keeps its own style (a field
/// the target does not have, a new list item).
pub const FOLDED_MARK: &str = "\u{0}krmsync:folded\u{0}";

fn folded_mark(read: &str, back: &str) -> String {
    format!("{FOLDED_MARK}{read}\u{0}{back}")
}

/// The value as read and the value read back, when `v` is a folded mark.
pub fn folded_parts(v: &Value) -> Option<(&str, &str)> {
    let rest = v.as_str()?.strip_prefix(FOLDED_MARK)?;
    rest.split_once('\u{0}')
}

/// Whether `v` holds a folded mark (see [`FOLDED_MARK`]).
pub fn has_folded_marks(v: &Value) -> bool {
    match v {
        Value::String(_) => folded_parts(v).is_some(),
        Value::Map(m) => m.values().any(has_folded_marks),
        Value::Seq(items) => items.iter().any(has_folded_marks),
        _ => false,
    }
}

/// A folded patch scalar `new` (a mark) written over the existing field
/// `dest`: kyaml's `FieldSetter` gives it the style of the field it
/// replaces (null included), so it stops being folded unless that field
/// was folded too. Values keep no styles: a `dest` that is a mark (from
/// another patch) or a multi-line string may have been folded and keeps
/// the mark; a null, a one-line string, a number or a collection was not,
/// and the value as read is written.
pub fn folded_written_over(dest: &Value, new: Value) -> Value {
    let maybe_folded =
        folded_parts(dest).is_some() || dest.as_str().is_some_and(|s| s.contains('\n'));
    match folded_parts(&new) {
        Some((read, _)) if quoted_text(dest).is_some() => quoted_mark(read),
        Some((read, _)) if !maybe_folded => Value::String(read.to_owned()),
        _ => new,
    }
}

/// Stands, in a resource under a strategic merge, for a string field kyaml
/// holds quoted although its text could be plain (see
/// `MarkedDocument::quoted`): the mark, then the string.
pub const QUOTED_MARK: &str = "\u{0}krmsync:quoted\u{0}";

/// The string `text` marked as quoted (see [`QUOTED_MARK`]).
pub fn quoted_mark(text: &str) -> Value {
    Value::String(format!("{QUOTED_MARK}{text}"))
}

/// The string a quoted mark stands for.
pub fn quoted_text(v: &Value) -> Option<&str> {
    v.as_str()?.strip_prefix(QUOTED_MARK)
}

/// Replaces every folded mark left in `v` by the value kyaml's printer
/// gives it (the node kept its folded style).
pub fn unmark_folded(v: &mut Value) {
    match v {
        Value::String(_) => {
            if let Some((_, back)) = folded_parts(v) {
                *v = Value::String(back.to_owned());
            }
        }
        Value::Map(m) => m.values_mut().for_each(unmark_folded),
        Value::Seq(items) => items.iter_mut().for_each(unmark_folded),
        _ => {}
    }
}

/// A value written over `dest` in place, as kyaml writes it: the node keeps
/// its quoting, so a number or boolean written over a string that must have
/// been quoted (see [`string_was_quoted`]), or one marked as quoted (see
/// [`QUOTED_MARK`]), becomes its text; over a mark the value is marked
/// too. Anything else is `new` itself.
pub fn written_over(dest: &Value, new: Value) -> Value {
    if quoted_text(dest).is_some() {
        // the field's quoted style goes to the value written there
        return match &new {
            // (printed without its tag only when its text reads as its
            // type: `!!float 2` stays a number)
            Value::Int(_) | Value::UInt(_) | Value::Bool(_) => {
                quoted_mark(&new.scalar_to_string().unwrap_or_default())
            }
            Value::Float(_) => {
                let text = new.scalar_to_string().unwrap_or_default();
                if matches!(resolve_plain(false, &text).0, RTag::Float) {
                    quoted_mark(&text)
                } else {
                    new
                }
            }
            Value::String(s) if quoted_text(&new).is_none() => quoted_mark(s),
            _ => new,
        };
    }
    // a quoted patch string takes the style of the field it is written over
    let new = match quoted_text(&new) {
        Some(text) => Value::String(text.to_string()),
        None => new,
    };
    match (dest, &new) {
        (Value::String(d), Value::Int(_) | Value::UInt(_) | Value::Float(_) | Value::Bool(_))
            if string_was_quoted(d) =>
        {
            Value::String(new.scalar_to_string().unwrap_or_default())
        }
        _ => new,
    }
}

/// Renders a value the way Go's `fmt` prints it with `%#v` after kustomize
/// decoded it into `interface{}` values (`map[string]interface {}{"a":1}`,
/// `[]interface {}{"x", 1.5}`, `interface {}(nil)`, `+Inf`, ...).
///
/// kustomize embeds this rendering of the whole resource in the errors it
/// reports when a resource cannot be printed as JSON, e.g.
/// `map[string]interface {}{...}: json: unsupported value: +Inf`.
pub fn go_repr(value: &Value) -> String {
    let mut out = String::new();
    go_repr_value(value, &mut out);
    out
}

// ---------------------------------------------------------------------------
// The document tree built from parser events
// ---------------------------------------------------------------------------

/// A node after scalar resolution, still able to hold everything Go could:
/// non-string keys, `time.Time` values and decode failures.
#[derive(Clone, Debug)]
enum N {
    Null,
    /// A null written as nothing (`key:`), in strict mode: kyaml keeps its
    /// empty text, and a strategic-merge patch drops such fields where it
    /// walks (explicit `null`/`~` stay).
    EmptyNull,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    Time(Box<GoTime>),
    /// A scalar go-yaml refuses to decode (the message, without `yaml: `).
    Fail(Box<str>),
    /// A scalar that reads as `.0` where written but turns into the string
    /// `.1` when kyaml re-encodes the resource (a timestamp containing `:`
    /// inside a flow collection, an empty null in a flow collection or as a
    /// key: the encoder has to quote them).
    Requoted(Box<(N, String)>),
    /// A `!!binary` value that is not UTF-8 (JSON replaces each bad byte
    /// with U+FFFD; Go's `%#v` shows `\xff`).
    Bytes(Vec<u8>),
    Seq(Vec<N>),
    Map(Vec<Entry>),
}

impl N {
    fn kind(&self) -> NodeKind {
        match self {
            N::Seq(_) => NodeKind::Seq,
            N::Map(_) => NodeKind::Map,
            _ => NodeKind::Scalar,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Hash)]
enum NodeKind {
    #[default]
    Scalar,
    Seq,
    Map,
}

#[derive(Clone, Debug)]
struct Entry {
    key: N,
    val: N,
    meta: KeyMeta,
}

/// What go-yaml / kyaml know about a key node beyond its decoded value.
#[derive(Clone, Debug, Default)]
struct KeyMeta {
    /// The node's text when it differs from the decoded string key.
    raw: Option<Box<str>>,
    /// Tagged `!!null` (`~`, `null`, empty): kyaml looks such keys up by "".
    null_tag: bool,
    /// A string once kyaml re-encodes the resource: the only keys a JSON
    /// object can have.
    str_tag: bool,
    /// Tagged `!!str` as written (how a direct decode of the nodes sees it).
    direct_str: bool,
    /// Source line of the key (1-based, within the piece).
    line: u32,
    /// For entries kyaml appends at the end of a map: position after `line`.
    after: u32,
}

impl KeyMeta {
    fn text<'a>(&'a self, key: &'a N) -> &'a str {
        match (&self.raw, key) {
            (Some(r), _) => r,
            (None, N::Str(s)) => s,
            _ => "",
        }
    }
}

/// A `time.Time` as go-yaml produces it for a timestamp scalar.
#[derive(Clone, Debug, PartialEq)]
struct GoTime {
    year: i32,
    month: u32,
    day: u32,
    hour: u32,
    min: u32,
    sec: u32,
    nsec: u32,
    zone: Zone,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Zone {
    /// `Z` or no zone at all.
    Utc,
    /// A numeric offset in seconds east of UTC.
    Offset(i32),
}

mod builder;
mod decode;
mod folded;
mod gofmt;
mod input;
mod lines;
mod resolve;
mod timestamp;

use builder::*;
use decode::*;
use gofmt::*;
use input::*;
use lines::*;
use resolve::*;
use timestamp::*;

#[cfg(test)]
mod tests;
