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
//! Known gaps: line numbers of duplicate keys inside alias copies, the exact
//! text of kustomize's panic on an empty annotation key, flow collections
//! nested deeper than 255 levels (rejected), and annotations of `kind: List`
//! items (not rewritten here).

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
    parse_strict(src, false, false).map(|docs| docs.into_iter().map(|(v, _)| v).collect())
}

/// [`parse_documents_strict`] for strategic-merge patches: a null
/// annotation value (`null`, `~` or nothing) is a null, which deletes the
/// annotation, where a resource keeps its text.
pub fn parse_documents_strict_patch(src: &str) -> Result<Vec<Value>, ParseError> {
    parse_strict(src, false, true).map(|docs| docs.into_iter().map(|(v, _)| v).collect())
}

/// [`parse_documents_strict`], with the paths of the nulls written as
/// nothing (`key:`) in each document, which kustomize keeps apart from
/// explicit `null`s (a strategic-merge patch drops them).
pub fn parse_documents_strict_marking_empty_nulls(
    src: &str,
) -> Result<Vec<MarkedDocument>, ParseError> {
    parse_strict(src, true, false)
}

/// A document and the paths of its nulls written as nothing.
pub type MarkedDocument = (Value, Vec<Vec<PathSeg>>);

fn parse_strict(src: &str, mark: bool, patch: bool) -> Result<Vec<MarkedDocument>, ParseError> {
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
            let mut nulls = Vec::new();
            match reader.next_document() {
                Ok(Some(doc)) => {
                    let v = finish_strict(doc, piece, mark.then_some(&mut nulls))?;
                    break (v, nulls);
                }
                Ok(None) => break (Value::Null, nulls),
                Err(e) => {
                    let again = if retries < MAX_RETRIES {
                        patch_tab_after_colon(piece.text, &e, chunk.line_offset)
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
// Input preparation
// ---------------------------------------------------------------------------

/// Deepest nesting of collections accepted (go-yaml's own limit).
const MAX_DEPTH: usize = 10_000;

/// How many `:<TAB>` spots one piece may need patched (see
/// [`patch_tab_after_colon`]).
const MAX_RETRIES: usize = 1_000;

/// saphyr rejects a tab between a `:` and a value starting with a letter or
/// `-` (`a:\tb`), which go-yaml accepts. Given that error, returns the text
/// with the tabs before the reported position turned into spaces (same
/// length, same line and column numbers).
fn patch_tab_after_colon(text: &str, e: &ParseError, line_offset: usize) -> Option<String> {
    if !e
        .message
        .contains("':' must be followed by a valid YAML whitespace")
    {
        return None;
    }
    let line = e.line.checked_sub(line_offset)?;
    let col = e.column.checked_sub(1)?;
    let line_start = if line <= 1 {
        0
    } else {
        text.match_indices('\n').nth(line - 2)?.0 + 1
    };
    let rest = text.get(line_start..)?;
    let off = line_start + rest.char_indices().nth(col).map_or(rest.len(), |(b, _)| b);
    let mut bytes = text.as_bytes().to_vec();
    let mut i = off;
    let mut changed = false;
    while let Some(c) = i.checked_sub(1).and_then(|p| bytes.get_mut(p)) {
        match *c {
            b'\t' => {
                *c = b' ';
                changed = true;
            }
            b' ' => {}
            _ => break,
        }
        i -= 1;
    }
    let colon_before = i.checked_sub(1).and_then(|p| bytes.get(p)) == Some(&b':');
    if !changed || !colon_before {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// Which of kustomize's two YAML readers is emulated.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// kyaml: go-yaml v3 nodes, DeAnchor, decode into Go values, JSON.
    Strict,
    /// sigs.k8s.io/yaml: go-yaml v2 decode, YAML -> JSON conversion.
    Lenient,
}

/// kyaml replaces every CRLF by LF before parsing; go-yaml v2 treats CRLF as
/// a single line break, so doing it up front is right for both readers.
fn normalize_newlines(src: &str) -> Cow<'_, str> {
    if src.contains("\r\n") {
        Cow::Owned(src.replace("\r\n", "\n"))
    } else {
        Cow::Borrowed(src)
    }
}

/// One piece of a resource file, as split by kyaml.
#[derive(Clone, Copy)]
struct Chunk<'a> {
    text: &'a str,
    /// Lines of the input before this piece.
    line_offset: usize,
}

/// Splits the input like kyaml's `splitDocuments`: every match of
/// `\n---.*\n` ends a piece; the text after `---` may only be blank or a
/// comment. The newline before the separator stays with the piece before it.
fn split_chunks(text: &str) -> Result<Vec<Chunk<'_>>, ParseError> {
    let mut chunks = Vec::new();
    if text.is_empty() {
        return Ok(chunks);
    }
    let bytes = text.as_bytes();
    let mut prev = 0usize;
    let mut prev_line = 0usize;
    let mut search = 0usize;
    while let Some(rel) = text.get(search..).and_then(|s| s.find("\n---")) {
        let at = search + rel;
        let after = at + 4;
        let Some(nl_rel) = text.get(after..).and_then(|s| s.find('\n')) else {
            break;
        };
        let nl = after + nl_rel;
        let rest = text.get(after..nl).unwrap_or("");
        let trimmed = rest.trim();
        let sep_line = prev_line + count_newlines(bytes, prev, at) + 1;
        if !trimmed.is_empty() && !trimmed.starts_with('#') {
            let sep = text.get(at + 1..nl).unwrap_or("").trim();
            return Err(ParseError::new(
                format!("invalid document separator: {sep}"),
                sep_line + 1,
                1,
            ));
        }
        chunks.push(Chunk {
            text: text.get(prev..=at).unwrap_or(""),
            line_offset: prev_line,
        });
        prev = nl + 1;
        prev_line = sep_line + 1;
        search = nl + 1;
    }
    chunks.push(Chunk {
        text: text.get(prev..).unwrap_or(""),
        line_offset: prev_line,
    });
    Ok(chunks)
}

/// go-yaml only knows `%YAML 1.1`, and a directive must be followed by an
/// explicit `---`; saphyr is more forgiving, so these cases are checked
/// here with libyaml's wording and line numbering.
fn check_directives(text: &str, line_offset: usize) -> Result<(), ParseError> {
    let err = |msg: &str, line0: usize, scanner: bool| {
        let shown = if scanner { line0 + 1 } else { line0 };
        let message = if line0 == 0 {
            format!("yaml: {msg}")
        } else {
            format!("yaml: line {shown}: {msg}")
        };
        ParseError::new(message, line0 + 1 + line_offset, 1)
    };
    let mut saw_directive = false;
    for (i, line) in text.split('\n').enumerate() {
        let line = if i == 0 {
            line.trim_start_matches('\u{feff}')
        } else {
            line
        };
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if line.starts_with('%') {
            saw_directive = true;
            if let Some(rest) = line.strip_prefix("%YAML") {
                let version = rest.split_whitespace().next().unwrap_or("");
                if version != "1.1" {
                    return Err(err("found incompatible YAML document", i, false));
                }
            }
            continue;
        }
        if !saw_directive || line.starts_with("---") {
            return Ok(());
        }
        if trimmed.contains(": ") || trimmed.ends_with(':') {
            return Err(err(
                "mapping values are not allowed in this context",
                i,
                true,
            ));
        }
        return Err(err("did not find expected <document start>", i, false));
    }
    if saw_directive {
        let eof_line = text.matches('\n').count();
        return Err(err(
            "did not find expected <document start>",
            eof_line,
            false,
        ));
    }
    Ok(())
}

fn count_newlines(bytes: &[u8], from: usize, to: usize) -> usize {
    bytes
        .get(from..to)
        .map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
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

// ---------------------------------------------------------------------------
// Scalar resolution (go-yaml v3 and v2 rules)
// ---------------------------------------------------------------------------

/// The resolved tag of a scalar, go-yaml style.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum RTag {
    Null,
    Bool,
    Int,
    Float,
    Str,
    Timestamp,
    Binary,
    Merge,
    /// Any tag go-yaml does not resolve (`!foo`, `!!map` on a scalar, ...).
    Other,
}

impl RTag {
    fn short(self) -> &'static str {
        match self {
            RTag::Null => "!!null",
            RTag::Bool => "!!bool",
            RTag::Int => "!!int",
            RTag::Float => "!!float",
            RTag::Str => "!!str",
            RTag::Timestamp => "!!timestamp",
            RTag::Binary => "!!binary",
            RTag::Merge => "!!merge",
            RTag::Other => "",
        }
    }
}

/// A tag as written, in go-yaml's short form (`!!int`, `!foo`, `!`).
fn short_tag(tag: &Tag) -> String {
    const CORE: &str = "tag:yaml.org,2002:";
    let full = if tag.handle.is_empty() {
        tag.suffix.clone()
    } else {
        format!("{}{}", tag.handle, tag.suffix)
    };
    match full.strip_prefix(CORE) {
        Some(rest) => format!("!!{rest}"),
        None => full,
    }
}

fn rtag_of_short(tag: &str) -> Option<RTag> {
    Some(match tag {
        "!!null" => RTag::Null,
        "!!bool" => RTag::Bool,
        "!!int" => RTag::Int,
        "!!float" => RTag::Float,
        "!!str" => RTag::Str,
        "!!timestamp" => RTag::Timestamp,
        "!!binary" => RTag::Binary,
        "!!merge" => RTag::Merge,
        _ => return None,
    })
}

/// A scalar event after resolution.
struct Scalar {
    node: N,
    /// The node's tag as the parser records it (what a re-encode keeps).
    tag: RTag,
    /// Whether the key is a merge key (`<<`).
    merge: bool,
}

/// Resolves a scalar event the way the emulated reader decodes it.
fn resolve_event(mode: Mode, value: &str, style: ScalarStyle, tag: Option<&Tag>) -> Scalar {
    let explicit = tag.map(short_tag);
    match mode {
        Mode::Strict => resolve_event_v3(value, style, explicit.as_deref()),
        Mode::Lenient => resolve_event_v2(value, style, explicit.as_deref()),
    }
}

fn resolve_event_v3(value: &str, style: ScalarStyle, explicit: Option<&str>) -> Scalar {
    // The go-yaml v3 parser ignores the non-specific tag `!`.
    let explicit = explicit.filter(|t| *t != "!");
    match explicit {
        Some(t) => {
            let tag = rtag_of_short(t).unwrap_or(RTag::Other);
            let node = match tag {
                RTag::Str => N::Str(value.to_owned()),
                RTag::Other | RTag::Merge => N::Str(value.to_owned()),
                _ => decode_tagged(false, tag, value),
            };
            Scalar {
                node,
                tag,
                merge: tag == RTag::Merge,
            }
        }
        None if style != ScalarStyle::Plain => Scalar {
            node: N::Str(value.to_owned()),
            tag: RTag::Str,
            merge: false,
        },
        None if value == "<<" => Scalar {
            node: N::Str(value.to_owned()),
            tag: RTag::Merge,
            merge: true,
        },
        None => {
            let (tag, node) = resolve_plain(false, value);
            Scalar {
                node,
                tag,
                merge: false,
            }
        }
    }
}

fn resolve_event_v2(value: &str, style: ScalarStyle, explicit: Option<&str>) -> Scalar {
    match explicit {
        Some(t) => {
            let tag = rtag_of_short(t).unwrap_or(RTag::Other);
            let node = match tag {
                RTag::Str | RTag::Other | RTag::Merge => N::Str(value.to_owned()),
                _ => decode_tagged(true, tag, value),
            };
            Scalar {
                node,
                tag,
                merge: tag == RTag::Merge,
            }
        }
        None if style != ScalarStyle::Plain => Scalar {
            node: N::Str(value.to_owned()),
            tag: RTag::Str,
            merge: false,
        },
        // go-yaml v2 merges on any plain `<<` key.
        None if value == "<<" => Scalar {
            node: N::Str(value.to_owned()),
            tag: RTag::Merge,
            merge: true,
        },
        None => {
            let (tag, node) = resolve_plain(true, value);
            Scalar {
                node,
                tag,
                merge: false,
            }
        }
    }
}

/// Decodes a scalar with an explicit core tag (never `!!str`).
fn decode_tagged(v2: bool, tag: RTag, value: &str) -> N {
    if tag == RTag::Binary {
        return match go_base64_decode(value) {
            Some(bytes) => match String::from_utf8(bytes) {
                Ok(s) => N::Str(s),
                Err(e) => N::Bytes(e.into_bytes()),
            },
            None => N::Fail("!!binary value contains invalid base64 data".into()),
        };
    }
    let (rtag, node) = resolve_plain_with(v2, tag, value);
    if rtag == tag {
        return node;
    }
    if tag == RTag::Float
        && rtag == RTag::Int
        && let N::Int(i) = node
    {
        return N::Float(i as f64);
    }
    N::Fail(
        format!(
            "cannot decode {} `{}` as a {}",
            rtag.short(),
            value,
            tag.short()
        )
        .into_boxed_str(),
    )
}

fn resolve_plain(v2: bool, value: &str) -> (RTag, N) {
    resolve_plain_with(v2, RTag::Other, value)
}

/// go-yaml's `resolve` for an untagged plain scalar (`tag` = `Other`) or for
/// one tagged with a resolvable core tag (which only matters for timestamps).
fn resolve_plain_with(v2: bool, tag: RTag, value: &str) -> (RTag, N) {
    let Some(&first) = value.as_bytes().first() else {
        return (RTag::Null, N::Null);
    };
    let hint = match first {
        b'+' | b'-' => b'S',
        b'0'..=b'9' => b'D',
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => b'M',
        b'.' => b'.',
        _ => return (RTag::Str, N::Str(value.to_owned())),
    };
    if let Some(r) = lookup_word(v2, value) {
        return r;
    }
    match hint {
        b'.' => {
            if let Some(f) = go_parse_float_dot(value) {
                return (RTag::Float, N::Float(f));
            }
        }
        b'D' | b'S' => {
            let allow_time = matches!(tag, RTag::Other | RTag::Timestamp);
            if allow_time && let Some(t) = parse_timestamp(value) {
                return if v2 {
                    // go-yaml v2 hands timestamps to interface{} as text.
                    (RTag::Timestamp, N::Str(value.to_owned()))
                } else {
                    (RTag::Timestamp, N::Time(Box::new(t)))
                };
            }
            let plain: Cow<'_, str> = if value.contains('_') {
                Cow::Owned(value.replace('_', ""))
            } else {
                Cow::Borrowed(value)
            };
            if let Some(i) = go_parse_int(&plain) {
                return (RTag::Int, N::Int(i));
            }
            if let Some(u) = go_parse_uint(&plain) {
                return (RTag::Int, N::UInt(u));
            }
            if is_yaml_style_float(&plain)
                && let Ok(f) = plain.parse::<f64>()
                && f.is_finite()
            {
                return (RTag::Float, N::Float(f));
            }
        }
        _ => {}
    }
    (RTag::Str, N::Str(value.to_owned()))
}

/// The fixed words of go-yaml's resolve table.
fn lookup_word(v2: bool, value: &str) -> Option<(RTag, N)> {
    let r = match value {
        "true" | "True" | "TRUE" => (RTag::Bool, N::Bool(true)),
        "false" | "False" | "FALSE" => (RTag::Bool, N::Bool(false)),
        "~" | "null" | "Null" | "NULL" => (RTag::Null, N::Null),
        ".nan" | ".NaN" | ".NAN" => (RTag::Float, N::Float(f64::NAN)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            (RTag::Float, N::Float(f64::INFINITY))
        }
        "-.inf" | "-.Inf" | "-.INF" => (RTag::Float, N::Float(f64::NEG_INFINITY)),
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" if v2 => (RTag::Bool, N::Bool(true)),
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" if v2 => {
            (RTag::Bool, N::Bool(false))
        }
        _ => return None,
    };
    Some(r)
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i = 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseFloat` for text starting with `.` (decimal only, with
/// Go's rules for `_` digit separators). Out-of-range values fail like Go.
fn go_parse_float_dot(s: &str) -> Option<f64> {
    if !go_underscore_ok(s) {
        return None;
    }
    let plain: Cow<'_, str> = if s.contains('_') {
        Cow::Owned(s.replace('_', ""))
    } else {
        Cow::Borrowed(s)
    };
    let b = plain.as_bytes();
    // `.digits` then an optional exponent.
    let mut i = 1;
    let start = i;
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    if i == start {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let es = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == es {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    plain.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Go's `underscoreOK`: `_` may only sit between digits (or after a base
/// prefix).
fn go_underscore_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let mut saw = b'^';
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i = 1;
    }
    let mut hex = false;
    if b.len() >= i + 2
        && b.get(i) == Some(&b'0')
        && matches!(
            b.get(i + 1).map(u8::to_ascii_lowercase),
            Some(b'b' | b'o' | b'x')
        )
    {
        hex = b.get(i + 1).map(u8::to_ascii_lowercase) == Some(b'x');
        i += 2;
        saw = b'0';
    }
    while let Some(&c) = b.get(i) {
        i += 1;
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
            continue;
        }
        if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
            continue;
        }
        if saw == b'_' {
            return false;
        }
        saw = b'!';
    }
    saw != b'_'
}

/// Go's `strconv.ParseUint(s, 0, 64)` on text without `_`.
fn go_parse_uint(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.is_empty() {
        return None;
    }
    let (base, digits): (u32, &[u8]) = if b.first() == Some(&b'0') {
        match b.get(1).map(u8::to_ascii_lowercase) {
            Some(b'b') if b.len() >= 3 => (2, b.get(2..)?),
            Some(b'o') if b.len() >= 3 => (8, b.get(2..)?),
            Some(b'x') if b.len() >= 3 => (16, b.get(2..)?),
            _ => (8, b.get(1..)?),
        }
    } else {
        (10, b)
    };
    let mut n: u64 = 0;
    for &c in digits {
        let d = (c as char).to_digit(base)?;
        n = n.checked_mul(u64::from(base))?.checked_add(u64::from(d))?;
    }
    Some(n)
}

/// Go's `strconv.ParseInt(s, 0, 64)` on text without `_`.
fn go_parse_int(s: &str) -> Option<i64> {
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, s.get(1..)?),
        Some(b'+') => (false, s.get(1..)?),
        _ => (false, s),
    };
    let u = go_parse_uint(rest)?;
    if neg {
        if u <= 1u64 << 63 {
            Some((u as i64).wrapping_neg())
        } else {
            None
        }
    } else {
        i64::try_from(u).ok()
    }
}

/// Go's base64 `StdEncoding.DecodeString`: padding required, `\r` and `\n`
/// ignored, anything else outside the alphabet rejected.
fn go_base64_decode(s: &str) -> Option<Vec<u8>> {
    fn val(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        })
    }
    let clean: Vec<u8> = s.bytes().filter(|&c| c != b'\n' && c != b'\r').collect();
    if !clean.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(clean.len() / 4 * 3);
    let quads = clean.len() / 4;
    for (qi, q) in clean.chunks(4).enumerate() {
        let last = qi + 1 == quads;
        let pad = q.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut acc: u32 = 0;
        for (i, &c) in q.iter().enumerate() {
            let v = if i >= 4 - pad { 0 } else { val(c)? };
            acc = (acc << 6) | v;
        }
        let bytes = acc.to_be_bytes();
        let take = 3 - pad;
        out.extend_from_slice(bytes.get(1..1 + take)?);
    }
    Some(out)
}

/// Bytes to text the way Go's JSON encoder coerces a string: every byte of
/// an invalid UTF-8 sequence becomes U+FFFD.
fn go_lossy_utf8(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let mut rest = bytes;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or(""));
                let skip = e.error_len().unwrap_or(bad.len());
                for _ in 0..skip {
                    out.push('\u{FFFD}');
                }
                rest = bad.get(skip..).unwrap_or(&[]);
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Timestamps (go-yaml's four time.Parse layouts)
// ---------------------------------------------------------------------------

/// go-yaml's `parseTimestamp`: `YYYY-` first, then the first of these Go
/// layouts that parses: `2006-1-2T15:4:5.999999999Z07:00`, the same with a
/// lower-case `t`, `2006-1-2 15:4:5.999999999`, `2006-1-2`.
fn parse_timestamp(s: &str) -> Option<GoTime> {
    let b = s.as_bytes();
    if b.len() < 5 || !b.iter().take(4).all(u8::is_ascii_digit) || b.get(4) != Some(&b'-') {
        return None;
    }
    parse_layout(b, Layout::DateTimeZone(b'T'))
        .or_else(|| parse_layout(b, Layout::DateTimeZone(b't')))
        .or_else(|| parse_layout(b, Layout::DateSpaceTime))
        .or_else(|| parse_layout(b, Layout::Date))
}

#[derive(Clone, Copy)]
enum Layout {
    DateTimeZone(u8),
    DateSpaceTime,
    Date,
}

/// Go's `getnum`: one or two digits.
fn getnum(b: &[u8], i: &mut usize) -> Option<u32> {
    let d0 = *b.get(*i).filter(|c| c.is_ascii_digit())?;
    *i += 1;
    let mut n = u32::from(d0 - b'0');
    if let Some(&d1) = b.get(*i).filter(|c| c.is_ascii_digit()) {
        *i += 1;
        n = n * 10 + u32::from(d1 - b'0');
    }
    Some(n)
}

fn expect(b: &[u8], i: &mut usize, c: u8) -> Option<()> {
    if b.get(*i) == Some(&c) {
        *i += 1;
        Some(())
    } else {
        None
    }
}

fn parse_layout(b: &[u8], layout: Layout) -> Option<GoTime> {
    let mut i = 0;
    let year_digits = b.get(0..4)?;
    let year = year_digits
        .iter()
        .fold(0i32, |acc, &d| acc * 10 + i32::from(d - b'0'));
    i += 4;
    expect(b, &mut i, b'-')?;
    let month = getnum(b, &mut i)?;
    if !(1..=12).contains(&month) {
        return None;
    }
    expect(b, &mut i, b'-')?;
    let day = getnum(b, &mut i)?;
    let mut t = GoTime {
        year,
        month,
        day,
        hour: 0,
        min: 0,
        sec: 0,
        nsec: 0,
        zone: Zone::Utc,
    };
    match layout {
        Layout::Date => {}
        Layout::DateTimeZone(sep) => {
            expect(b, &mut i, sep)?;
            parse_clock(b, &mut i, &mut t)?;
            if b.get(i) == Some(&b'Z') {
                i += 1;
            } else {
                // `Z07:00`: a sign, two digits, `:`, two digits.
                let z = b.get(i..i + 6)?;
                let sign = match z.first() {
                    Some(b'+') => 1,
                    Some(b'-') => -1,
                    _ => return None,
                };
                let two = |x: &[u8]| -> Option<i32> {
                    match x {
                        [a, c] if a.is_ascii_digit() && c.is_ascii_digit() => {
                            Some(i32::from(a - b'0') * 10 + i32::from(c - b'0'))
                        }
                        _ => None,
                    }
                };
                if z.get(3) != Some(&b':') {
                    return None;
                }
                let hh = two(z.get(1..3)?)?;
                let mm = two(z.get(4..6)?)?;
                if hh > 24 || mm > 60 {
                    return None;
                }
                t.zone = Zone::Offset(sign * (hh * 3600 + mm * 60));
                i += 6;
            }
        }
        Layout::DateSpaceTime => {
            // A space in a Go layout matches any run of spaces (at least one).
            if b.get(i) != Some(&b' ') {
                return None;
            }
            while b.get(i) == Some(&b' ') {
                i += 1;
            }
            parse_clock(b, &mut i, &mut t)?;
        }
    }
    if i != b.len() {
        return None;
    }
    if t.day < 1 || t.day > days_in(t.month, t.year) {
        return None;
    }
    Some(t)
}

/// `15:4:5` plus an optional `.999999999` fraction (`,` works too).
fn parse_clock(b: &[u8], i: &mut usize, t: &mut GoTime) -> Option<()> {
    t.hour = getnum(b, i)?;
    if t.hour >= 24 {
        return None;
    }
    expect(b, i, b':')?;
    t.min = getnum(b, i)?;
    if t.min >= 60 {
        return None;
    }
    expect(b, i, b':')?;
    t.sec = getnum(b, i)?;
    if t.sec >= 60 {
        return None;
    }
    if matches!(b.get(*i), Some(b'.' | b',')) && b.get(*i + 1).is_some_and(u8::is_ascii_digit) {
        *i += 1;
        let mut ns: u32 = 0;
        let mut n = 0;
        while let Some(&d) = b.get(*i).filter(|c| c.is_ascii_digit()) {
            if n < 9 {
                ns = ns * 10 + u32::from(d - b'0');
                n += 1;
            }
            *i += 1;
        }
        for _ in n..9 {
            ns *= 10;
        }
        t.nsec = ns;
    }
    Some(())
}

fn days_in(month: u32, year: i32) -> u32 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

impl GoTime {
    fn offset_secs(&self) -> i32 {
        match self.zone {
            Zone::Utc => 0,
            Zone::Offset(o) => o,
        }
    }

    /// `time.Time.MarshalJSON`: RFC 3339 with trimmed nanoseconds, or the
    /// error Go reports for offsets of 24 hours or more.
    fn rfc3339(&self) -> Result<String, &'static str> {
        let mut s = format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.min, self.sec
        );
        if self.nsec != 0 {
            let frac = format!("{:09}", self.nsec);
            s.push('.');
            s.push_str(frac.trim_end_matches('0'));
        }
        let off = self.offset_secs();
        if off == 0 {
            s.push('Z');
        } else {
            let mins = off.abs() / 60;
            if mins / 60 >= 24 {
                return Err("Time.MarshalJSON: timezone hour outside of range [0,23]");
            }
            let sign = if off < 0 { '-' } else { '+' };
            let _ = write!(s, "{sign}{:02}:{:02}", mins / 60, mins % 60);
        }
        Ok(s)
    }

    /// Seconds since year 1 of the instant (Go's `ext` field), for ordering.
    fn abs_secs(&self) -> i64 {
        let y = i64::from(self.year) - 1;
        let mut days = y * 365 + y / 4 - y / 100 + y / 400;
        for m in 1..self.month {
            days += i64::from(days_in(m, self.year));
        }
        days += i64::from(self.day) - 1;
        days * 86_400 + i64::from(self.hour) * 3600 + i64::from(self.min) * 60 + i64::from(self.sec)
            - i64::from(self.offset_secs())
    }

    /// `time.Time.GoString`.
    fn go_string(&self, out: &mut String) {
        const MONTHS: [&str; 12] = [
            "January",
            "February",
            "March",
            "April",
            "May",
            "June",
            "July",
            "August",
            "September",
            "October",
            "November",
            "December",
        ];
        let month = usize::try_from(self.month)
            .ok()
            .and_then(|m| m.checked_sub(1))
            .and_then(|m| MONTHS.get(m))
            .copied()
            .unwrap_or("January");
        let loc = match self.zone {
            Zone::Utc => "time.UTC",
            // kustomize runs with a UTC local zone: a zero offset maps to Local.
            Zone::Offset(0) => "time.Local",
            Zone::Offset(_) => "time.Location(\"\")",
        };
        let _ = write!(
            out,
            "time.Date({}, time.{}, {}, {}, {}, {}, {}, {})",
            self.year, month, self.day, self.hour, self.min, self.sec, self.nsec, loc
        );
    }
}

// ---------------------------------------------------------------------------
// Event reader and tree builder
// ---------------------------------------------------------------------------

/// One document as built from the events, before the decode checks.
struct Doc {
    root: N,
    /// Lines kyaml adds when it appends merged entries: (after this source
    /// line, how many).
    inserted: Vec<(u32, u32)>,
    /// Set when something JSON cannot encode may be present (non-string
    /// keys, infinite floats, out-of-range time zones).
    json_problem: bool,
}

/// Pulls documents out of a saphyr event stream.
struct DocReader<'a> {
    parser: Parser<'a, saphyr_parser::StrInput<'a>>,
    src: &'a str,
    mode: Mode,
    /// Lines before `src` in the whole input, for error positions.
    line_offset: usize,
    finished: bool,
    /// Last (character, byte) offsets converted, to walk forward cheaply.
    cursor: (usize, usize),
    /// A strategic-merge patch: null annotation values are nulls (they
    /// delete), not their text.
    patch: bool,
}

impl<'a> DocReader<'a> {
    fn new(src: &'a str, mode: Mode) -> Self {
        DocReader {
            parser: Parser::new_from_str(src),
            src,
            mode,
            line_offset: 0,
            finished: false,
            cursor: (0, 0),
            patch: false,
        }
    }

    /// The next document, `None` at the end of the stream.
    fn next_document(&mut self) -> Result<Option<Doc>, ParseError> {
        if self.finished {
            return Ok(None);
        }
        let mut b = Builder::new(self.mode);
        b.patch = self.patch;
        let mut in_doc = false;
        loop {
            let Some(item) = self.parser.next_event() else {
                self.finished = true;
                return Ok(None);
            };
            let (event, span) = match item {
                Ok(x) => x,
                Err(e) => {
                    self.finished = true;
                    return Err(self.scan_error(&e, &b));
                }
            };
            let res = match event {
                Event::StreamStart | Event::Nothing => Ok(()),
                Event::StreamEnd => {
                    self.finished = true;
                    return Ok(None);
                }
                Event::DocumentStart(_) => {
                    in_doc = true;
                    Ok(())
                }
                Event::DocumentEnd => {
                    if in_doc {
                        return Ok(Some(b.finish()));
                    }
                    Ok(())
                }
                Event::Scalar(value, style, anchor, tag) => {
                    if style == ScalarStyle::DoubleQuoted
                        && value.contains('/')
                        && self.has_slash_escape(span)
                    {
                        // go-yaml (YAML 1.1) has no `\/` escape.
                        let line = span.start.line();
                        let msg = if line > 1 {
                            format!("yaml: line {line}: found unknown escape character")
                        } else {
                            "yaml: found unknown escape character".to_owned()
                        };
                        Err(ParseError::new(msg, line, span.start.col() + 1))
                    } else {
                        let value = self.block_scalar_at_eof(value, style, span);
                        b.scalar(value, style, anchor, tag.as_deref(), span)
                    }
                }
                Event::Alias(id) => b.alias(id, span),
                Event::SequenceStart(anchor, _) => b.open(false, anchor, span),
                Event::MappingStart(anchor, _) => b.open(true, anchor, span),
                Event::SequenceEnd | Event::MappingEnd => b.close(span),
            };
            if let Err(mut e) = res {
                self.finished = true;
                if e.line > 0 {
                    e.line += self.line_offset;
                }
                return Err(e);
            }
        }
    }

    /// libyaml only keeps line breaks that are in the input: a block scalar
    /// (`|`, `>`, any chomping) whose last content line ends the input
    /// without a line break has no final newline, where saphyr adds one.
    fn block_scalar_at_eof<'v>(
        &mut self,
        value: Cow<'v, str>,
        style: ScalarStyle,
        span: Span,
    ) -> Cow<'v, str> {
        if !matches!(style, ScalarStyle::Literal | ScalarStyle::Folded)
            || !value.ends_with('\n')
            || self.src.ends_with('\n')
        {
            return value;
        }
        let last_line = self.src.rsplit('\n').next().unwrap_or("");
        if last_line.trim().is_empty() || self.byte_index(span.end.index()) < self.src.len() {
            return value;
        }
        let mut owned = value.into_owned();
        owned.pop();
        Cow::Owned(owned)
    }

    /// Whether the double-quoted scalar at `span` uses the `\/` escape.
    fn has_slash_escape(&mut self, span: Span) -> bool {
        let from = self.byte_index(span.start.index());
        let to = self.byte_index(span.end.index());
        let raw = self.src.get(from..to).unwrap_or("");
        let mut chars = raw.chars();
        while let Some(c) = chars.next() {
            if c == '\\' && chars.next() == Some('/') {
                return true;
            }
        }
        false
    }

    /// Byte offset of a character offset (saphyr counts characters).
    fn byte_index(&mut self, char_idx: usize) -> usize {
        let (mut c, mut b) = self.cursor;
        if char_idx < c {
            c = 0;
            b = 0;
        }
        let rest = self.src.get(b..).unwrap_or("");
        for ch in rest.chars() {
            if c == char_idx {
                break;
            }
            c += 1;
            b += ch.len_utf8();
        }
        self.cursor = (c, b);
        b
    }

    /// Rewords a saphyr error the way go-yaml (libyaml) reports it.
    fn scan_error(&self, e: &ScanError, b: &Builder) -> ParseError {
        let mark = e.marker();
        let info = e.info();
        let abs_line = mark.line() + self.line_offset;
        let column = mark.col() + 1;
        if info.contains("unknown anchor") {
            let name = anchor_name_at(self.src, mark.line(), mark.col());
            return ParseError::new(
                format!("yaml: unknown anchor '{name}' referenced"),
                abs_line,
                column,
            );
        }
        let (context, problem) = match info.split_once(", ") {
            Some((c, p)) if c.starts_with("while ") => (c, p),
            _ => ("", info),
        };
        // saphyr rejects a stray token itself; libyaml's parser reports a
        // token it does not expect in the enclosing collection.
        let unexpected_in = |f: Option<&Frame>| match f
            .map(|f| (f.flow, matches!(f.body, Body::Map(_))))
        {
            Some((false, true)) => ("while parsing a block mapping", "did not find expected key"),
            Some((false, false)) => (
                "while parsing a block collection",
                "did not find expected '-' indicator",
            ),
            Some((true, true)) => (
                "while parsing a flow mapping",
                "did not find expected ',' or '}'",
            ),
            Some((true, false)) => (
                "while parsing a flow sequence",
                "did not find expected ',' or ']'",
            ),
            None => ("", "did not find expected <document start>"),
        };
        let (context, problem) = match problem {
            "misplaced bracket" => unexpected_in(b.stack.iter().rev().find(|f| !f.flow)),
            "invalid trailing content after double-quoted scalar" => unexpected_in(b.stack.last()),
            "the handle wasn't declared" => ("while parsing a node", "found undefined tag handle"),
            "invalid indentation in quoted scalar" => (
                "while scanning a quoted scalar",
                "found unexpected end of stream",
            ),
            p => (context, p),
        };
        let problem = match problem {
            "expected ',' or ']'" => "did not find expected ',' or ']'",
            "did not find expected <document-start>" => "did not find expected <document start>",
            "simple key expected" | "simple key expect ':'" => "could not find expected ':'",
            "recursion limit exceeded" => "exceeded max depth of 10000",
            p if p.starts_with("unexpected character") => {
                "found character that cannot start any token"
            }
            p if p.contains("block scalar content cannot start with a tab") => {
                "found a tab character where an indentation space is expected"
            }
            p if p.contains("found a tab") => "found a tab character that violates indentation",
            p if p.starts_with("tab") => "found character that cannot start any token",
            p => p,
        };
        // libyaml numbers parser errors by the 0-based line of the enclosing
        // collection (falling back to the offending token), scanner errors
        // by the 1-based line of the problem.
        let problem_line0 = mark.line().saturating_sub(1);
        let ctx_kind = match context {
            "while parsing a block mapping" => Some((true, false)),
            "while parsing a block collection" => Some((false, false)),
            "while parsing a flow mapping" => Some((true, true)),
            "while parsing a flow sequence" => Some((false, true)),
            _ => None,
        };
        let line = if problem == "could not find expected ':'" {
            // Reported at the would-be key: the last line with content.
            let lines: Vec<&str> = self.src.split('\n').collect();
            let upto = mark.line().min(lines.len());
            (1..=upto)
                .rev()
                .find(|&l| lines.get(l - 1).is_some_and(|t| !t.trim().is_empty()))
                .filter(|&l| l > 1)
                .unwrap_or(0)
        } else if let Some((is_map, flow)) = ctx_kind {
            let ctx_line0 = b
                .stack
                .iter()
                .rev()
                .find(|f| f.flow == flow && matches!(f.body, Body::Map(_)) == is_map)
                .map_or(0, |f| (f.line as usize).saturating_sub(1));
            if ctx_line0 != 0 {
                ctx_line0
            } else {
                problem_line0
            }
        } else if problem == "did not find expected node content"
            || problem == "did not find expected <document start>"
            || problem == "found undefined tag handle"
        {
            problem_line0
        } else if problem_line0 != 0 {
            problem_line0 + 1
        } else {
            0
        };
        let message = if line > 0 {
            format!("yaml: line {line}: {problem}")
        } else {
            format!("yaml: {problem}")
        };
        ParseError::new(message, abs_line, column)
    }
}

/// The anchor name written at a position (for the unknown-anchor message).
fn anchor_name_at(src: &str, line: usize, col: usize) -> String {
    let text = src.lines().nth(line.saturating_sub(1)).unwrap_or("");
    let from: String = text.chars().skip(col).collect();
    let name = from.strip_prefix('*').unwrap_or(&from);
    name.chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | '[' | ']' | '{' | '}'))
        .collect()
}

/// An open collection.
struct Frame {
    body: Body,
    anchor: usize,
    /// 1-based line where the collection starts.
    line: u32,
    /// Last source line with content of this collection so far.
    last_line: u32,
    flow: bool,
    /// Remember which items are aliases (a merge value's sequence).
    track_alias: bool,
    item_alias: Vec<bool>,
    /// This map is the resource's `metadata.annotations` (strict mode).
    ann: bool,
    /// Scalar values directly in this collection keep their source text
    /// and nested collections become "" (annotations and what merges into
    /// them).
    ann_raw: bool,
    /// This collection is a value inside `metadata.annotations`.
    ann_value: bool,
}

enum Body {
    Seq(Vec<N>),
    Map(MapBody),
}

#[derive(Default)]
struct MapBody {
    slots: Vec<Slot>,
    pending: Option<PendingKey>,
}

struct PendingKey {
    key: N,
    meta: KeyMeta,
    merge: bool,
}

enum Slot {
    E(Entry),
    M(MergeVal),
}

/// The value of a `<<` key.
struct MergeVal {
    node: N,
    via_alias: bool,
    item_alias: Vec<bool>,
    line: u32,
}

/// A finished node on its way to its parent.
struct Done {
    node: N,
    meta: KeyMeta,
    merge: bool,
    via_alias: bool,
    item_alias: Vec<bool>,
    end_line: u32,
    requote: Option<Requote>,
}

/// Plain scalars the encoder cannot write plain in some places.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Requote {
    /// A timestamp containing `:` (not plain inside a flow collection).
    Colon,
    /// An empty null (not plain in a flow collection or as a key).
    Empty,
}

/// An anchored node, ready to be copied by aliases.
struct Anchored {
    /// The node as written (never `Requoted`).
    node: N,
    requote: Option<Requote>,
    meta: KeyMeta,
    merge: bool,
    size: usize,
}

struct Builder {
    mode: Mode,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Anchored>,
    /// Nodes built so far, and how many of them came from aliases/merges.
    total: usize,
    aliased: usize,
    json_problem: bool,
    root: Option<N>,
    inserted: Vec<(u32, u32)>,
    /// See `DocReader::patch`.
    patch: bool,
}

impl Builder {
    fn new(mode: Mode) -> Self {
        Builder {
            patch: false,
            mode,
            stack: Vec::new(),
            anchors: HashMap::new(),
            total: 0,
            aliased: 0,
            json_problem: false,
            root: None,
            inserted: Vec::new(),
        }
    }

    fn finish(mut self) -> Doc {
        Doc {
            root: self.root.take().unwrap_or(N::Null),
            inserted: std::mem::take(&mut self.inserted),
            json_problem: self.json_problem,
        }
    }

    fn expecting_key(&self) -> bool {
        matches!(
            self.stack.last(),
            Some(Frame {
                body: Body::Map(MapBody { pending: None, .. }),
                ..
            })
        )
    }

    fn top_is_ann(&self) -> bool {
        self.stack.last().is_some_and(|f| f.ann_raw)
    }

    /// The open collection is a sequence given as a merge value.
    fn top_is_merge_seq(&self) -> bool {
        self.stack
            .last()
            .is_some_and(|f| f.track_alias && matches!(f.body, Body::Seq(_)))
    }

    fn pending_merge(&self) -> bool {
        matches!(
            self.stack.last(),
            Some(Frame {
                body: Body::Map(MapBody {
                    pending: Some(PendingKey { merge: true, .. }),
                    ..
                }),
                ..
            })
        )
    }

    /// Whether a map opening now is the root's `metadata.annotations`.
    fn at_annotations(&self) -> bool {
        if self.mode != Mode::Strict || self.stack.len() != 2 {
            return false;
        }
        let pending_is = |f: &Frame, name: &str| match &f.body {
            Body::Map(MapBody {
                pending: Some(pk), ..
            }) => !pk.merge && pk.meta.str_tag && pk.meta.text(&pk.key) == name,
            _ => false,
        };
        match (self.stack.first(), self.stack.get(1)) {
            (Some(root), Some(meta)) => {
                pending_is(root, "metadata") && pending_is(meta, "annotations")
            }
            _ => false,
        }
    }

    /// Counts `n` new nodes copied by an alias or a merge, failing like
    /// go-yaml when aliases dominate the document.
    fn charge(&mut self, n: usize) -> Result<(), ParseError> {
        self.aliased = self.aliased.saturating_add(n);
        self.total = self.total.saturating_add(n);
        let ratio = self.aliased as f64 / self.total.max(1) as f64;
        let allowed = if self.total <= 400_000 {
            0.99
        } else if self.total >= 4_000_000 {
            0.10
        } else {
            0.99 - 0.89 * ((self.total - 400_000) as f64 / 3_600_000.0)
        };
        if self.aliased > 100 && self.total > 1000 && ratio > allowed {
            return Err(ParseError::new(
                "yaml: document contains excessive aliasing",
                0,
                0,
            ));
        }
        Ok(())
    }

    fn scalar(
        &mut self,
        value: Cow<'_, str>,
        style: ScalarStyle,
        anchor: usize,
        tag: Option<&Tag>,
        span: Span,
    ) -> Result<(), ParseError> {
        let line = to_u32(span.start.line());
        let end_line = content_end_line(span);
        let is_key = self.expecting_key();
        self.total += 1;
        let mut requote = None;
        let plain_null = tag.is_none()
            && style == ScalarStyle::Plain
            && matches!(value.as_ref(), "" | "~" | "null" | "Null" | "NULL");
        let (node, meta, merge) = if !is_key && self.top_is_ann() {
            // kustomize rewrites annotations from their source text; but a
            // null in a patch deletes, and one written as nothing is
            // dropped by a patch (see `N::EmptyNull`)
            let meta = KeyMeta {
                line,
                ..KeyMeta::default()
            };
            let node = if self.patch && plain_null {
                N::Null
            } else if self.mode == Mode::Strict && plain_null && value.is_empty() {
                N::Requoted(Box::new((N::EmptyNull, String::new())))
            } else {
                N::Str(value.into_owned())
            };
            (node, meta, false)
        } else if tag.is_none() && style != ScalarStyle::Plain {
            // Quoted and block scalars are strings for both readers.
            let meta = KeyMeta {
                str_tag: true,
                direct_str: true,
                line,
                ..KeyMeta::default()
            };
            (N::Str(value.into_owned()), meta, false)
        } else {
            let mut s = resolve_event(self.mode, &value, style, tag);
            let direct_str = s.tag == RTag::Str;
            if self.mode == Mode::Strict && tag.is_none() && style == ScalarStyle::Plain {
                requote = match s.tag {
                    RTag::Timestamp if value.contains(':') => Some(Requote::Colon),
                    RTag::Null if value.is_empty() => Some(Requote::Empty),
                    _ => None,
                };
                if requote.is_some_and(|r| self.requotes(r, is_key)) {
                    let direct = std::mem::replace(&mut s.node, N::Null);
                    s.node = N::Requoted(Box::new((direct, value.to_string())));
                    s.tag = RTag::Str;
                }
            }
            if self.mode == Mode::Strict
                && !is_key
                && tag.is_none()
                && style == ScalarStyle::Plain
                && value.is_empty()
                && matches!(s.node, N::Null)
            {
                s.node = N::EmptyNull;
            }
            match &s.node {
                N::Float(f) if !f.is_finite() => self.json_problem = true,
                N::Time(t) if t.rfc3339().is_err() => self.json_problem = true,
                _ => {}
            }
            let raw = if (is_key || anchor != 0) && !matches!(&s.node, N::Str(x) if *x == *value) {
                Some(Box::from(&*value))
            } else {
                None
            };
            let meta = KeyMeta {
                raw,
                null_tag: s.tag == RTag::Null
                    || value.is_empty() && matches!(s.node, N::Requoted(_)),
                str_tag: s.tag == RTag::Str,
                direct_str,
                line,
                after: 0,
            };
            (s.node, meta, s.merge && is_key)
        };
        let done = Done {
            node,
            meta,
            merge,
            via_alias: false,
            item_alias: Vec::new(),
            end_line,
            requote,
        };
        self.complete(done, anchor)
    }

    /// Whether a scalar of this kind gets quoted by the encoder here.
    fn requotes(&self, r: Requote, is_key: bool) -> bool {
        let flow = self.stack.last().is_some_and(|f| f.flow);
        match r {
            Requote::Colon => flow,
            Requote::Empty => flow || is_key,
        }
    }

    fn alias(&mut self, id: usize, span: Span) -> Result<(), ParseError> {
        let line = to_u32(span.start.line());
        let Some(a) = self.anchors.get(&id) else {
            return Err(ParseError::new(
                "yaml: unknown anchor referenced",
                span.start.line(),
                span.start.col() + 1,
            ));
        };
        let size = a.size;
        let is_key = self.expecting_key();
        let ann = !is_key && self.top_is_ann();
        let requote = a.requote;
        let (mut node, mut meta, merge) = if ann {
            let text = match &a.node {
                N::Seq(_) | N::Map(_) => String::new(),
                n => a.meta.text(n).to_owned(),
            };
            (N::Str(text), KeyMeta::default(), false)
        } else {
            (clone_deep(&a.node), a.meta.clone(), a.merge && is_key)
        };
        if !ann && requote.is_some_and(|r| self.requotes(r, is_key)) {
            let text = meta.text(&node).to_owned();
            node = N::Requoted(Box::new((node, text)));
            meta.str_tag = true;
        }
        self.charge(size)?;
        meta.line = line;
        meta.after = 0;
        let done = Done {
            node,
            meta,
            merge,
            via_alias: true,
            item_alias: Vec::new(),
            end_line: content_end_line(span),
            requote: None,
        };
        self.complete(done, 0)
    }

    fn open(&mut self, is_map: bool, anchor: usize, span: Span) -> Result<(), ParseError> {
        if self.stack.len() >= MAX_DEPTH {
            let line = span.start.line();
            let message = if line > 1 {
                format!("yaml: line {line}: exceeded max depth of {MAX_DEPTH}")
            } else {
                format!("yaml: exceeded max depth of {MAX_DEPTH}")
            };
            return Err(ParseError::new(message, line, span.start.col() + 1));
        }
        let is_key = self.expecting_key();
        let merge_value = self.pending_merge();
        let parent_raw = self.top_is_ann();
        let in_merge_seq = self.top_is_merge_seq();
        let ann = is_map && self.at_annotations();
        // What merges into the annotations keeps its values as text too.
        let ann_raw = ann || (parent_raw && merge_value) || (parent_raw && in_merge_seq && is_map);
        let ann_value = parent_raw && !is_key && !merge_value && !in_merge_seq;
        let track_alias = !is_map && merge_value;
        // Flow collections start with a one-character `[` / `{` token; block
        // ones with an empty span.
        let flow = span.end.index() > span.start.index();
        let line = to_u32(span.start.line());
        self.total += 1;
        self.stack.push(Frame {
            body: if is_map {
                Body::Map(MapBody::default())
            } else {
                Body::Seq(Vec::new())
            },
            anchor,
            line,
            last_line: line,
            flow,
            track_alias,
            item_alias: Vec::new(),
            ann,
            ann_raw,
            ann_value,
        });
        Ok(())
    }

    fn close(&mut self, span: Span) -> Result<(), ParseError> {
        let Some(frame) = self.stack.pop() else {
            return Ok(());
        };
        let end_line = if frame.flow {
            frame.last_line.max(to_u32(span.end.line()))
        } else {
            frame.last_line
        };
        let node = match frame.body {
            Body::Seq(items) => N::Seq(items),
            Body::Map(mb) => self.finish_map(mb, frame.ann, frame.last_line)?,
        };
        let node = if frame.ann_value {
            N::Str(String::new())
        } else {
            node
        };
        let meta = KeyMeta {
            line: frame.line,
            ..KeyMeta::default()
        };
        let done = Done {
            node,
            meta,
            merge: false,
            via_alias: false,
            item_alias: frame.item_alias,
            end_line,
            requote: None,
        };
        self.complete(done, frame.anchor)
    }

    /// Records an anchor and hands the node to its parent.
    fn complete(&mut self, done: Done, anchor: usize) -> Result<(), ParseError> {
        if anchor != 0 {
            let size = node_count(&done.node);
            let (node, meta) = match &done.node {
                // Aliases re-decide the quoting where they are used.
                N::Requoted(b) => {
                    let mut meta = done.meta.clone();
                    meta.str_tag = meta.direct_str;
                    (clone_deep(&b.0), meta)
                }
                n => (clone_deep(n), done.meta.clone()),
            };
            let old = self.anchors.insert(
                anchor,
                Anchored {
                    node,
                    requote: done.requote,
                    meta,
                    merge: done.merge,
                    size,
                },
            );
            if let Some(old) = old {
                drop_deep(old.node);
            }
        }
        let Some(frame) = self.stack.last_mut() else {
            self.root = Some(done.node);
            return Ok(());
        };
        frame.last_line = frame.last_line.max(done.end_line);
        match &mut frame.body {
            Body::Seq(items) => {
                if frame.track_alias {
                    frame.item_alias.push(done.via_alias);
                }
                items.push(done.node);
            }
            Body::Map(mb) => match mb.pending.take() {
                None => {
                    mb.pending = Some(PendingKey {
                        key: done.node,
                        meta: done.meta,
                        merge: done.merge,
                    });
                }
                Some(pk) if pk.merge => mb.slots.push(Slot::M(MergeVal {
                    node: done.node,
                    via_alias: done.via_alias,
                    item_alias: done.item_alias,
                    line: pk.meta.line,
                })),
                Some(pk) => mb.slots.push(Slot::E(Entry {
                    key: pk.key,
                    val: done.node,
                    meta: pk.meta,
                })),
            },
        }
        Ok(())
    }

    fn finish_map(&mut self, mb: MapBody, ann: bool, last_line: u32) -> Result<N, ParseError> {
        let mut slots = mb.slots;
        if let Some(pk) = mb.pending {
            // A key without a value cannot come out of the parser; keep it.
            slots.push(Slot::E(Entry {
                key: pk.key,
                val: N::Null,
                meta: pk.meta,
            }));
        }
        let entries = match self.mode {
            Mode::Strict => self.merge_kyaml(slots, last_line)?,
            Mode::Lenient => self.merge_v2(slots)?,
        };
        let entries = if ann {
            rebuild_annotations(entries)?
        } else {
            entries
        };
        if self.mode == Mode::Strict && entries.iter().any(|e| !e.meta.str_tag) {
            self.json_problem = true;
        }
        Ok(N::Map(entries))
    }

    /// kyaml's `DeAnchor` on one map: drop the `<<` entry, then replay the
    /// merge sources and the map itself through `MapEntrySetter`.
    fn merge_kyaml(&mut self, slots: Vec<Slot>, last_line: u32) -> Result<Vec<Entry>, ParseError> {
        let mut own = Vec::with_capacity(slots.len());
        let mut merge: Option<MergeVal> = None;
        for slot in slots {
            match slot {
                Slot::E(e) => own.push(e),
                Slot::M(m) => {
                    if merge.is_some() {
                        return Err(ParseError::new("duplicate merge key", m.line as usize, 0));
                    }
                    merge = Some(m);
                }
            }
        }
        let sources = match merge {
            Some(m) => kyaml_merge_sources(m)?,
            None => Vec::new(),
        };
        if sources.is_empty() && !own.iter().any(|e| e.meta.null_tag) {
            return Ok(own);
        }
        kyaml_merge_all(self, own, sources, last_line)
    }

    /// go-yaml v2 map decoding: entries in order, a merge applied where it
    /// stands, later keys replacing earlier ones.
    fn merge_v2(&mut self, slots: Vec<Slot>) -> Result<Vec<Entry>, ParseError> {
        let mut out: Vec<Entry> = Vec::with_capacity(slots.len());
        let mut index: HashMap<KeyId, usize> = HashMap::new();
        fn put(out: &mut Vec<Entry>, index: &mut HashMap<KeyId, usize>, e: Entry) {
            match KeyId::of(&e.key) {
                Some(id) => match index.get(&id) {
                    Some(&i) => {
                        if let Some(slot) = out.get_mut(i) {
                            slot.val = e.val;
                        }
                    }
                    None => {
                        index.insert(id, out.len());
                        out.push(e);
                    }
                },
                None => out.push(e),
            }
        }
        let want_map = || {
            ParseError::new(
                "yaml: map merge requires map or sequence of maps as the value",
                0,
                0,
            )
        };
        for slot in slots {
            match slot {
                Slot::E(e) => put(&mut out, &mut index, e),
                Slot::M(m) => match m.node {
                    N::Map(es) => {
                        for e in es {
                            put(&mut out, &mut index, e);
                        }
                    }
                    N::Seq(items) => {
                        for item in items.into_iter().rev() {
                            match item {
                                N::Map(es) => {
                                    for e in es {
                                        put(&mut out, &mut index, e);
                                    }
                                }
                                _ => return Err(want_map()),
                            }
                        }
                    }
                    _ => return Err(want_map()),
                },
            }
        }
        Ok(out)
    }
}

/// Identity of a key as a Go map would compare it (go-yaml v2 decoding).
#[derive(PartialEq, Eq, Hash)]
enum KeyId {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(u64),
    Str(String),
}

impl KeyId {
    fn of(n: &N) -> Option<KeyId> {
        Some(match n {
            N::Null | N::EmptyNull => KeyId::Null,
            N::Bool(b) => KeyId::Bool(*b),
            N::Int(i) => KeyId::Int(*i),
            N::UInt(u) => KeyId::UInt(*u),
            N::Float(f) if f.is_nan() => return None,
            N::Float(f) => KeyId::Float(if *f == 0.0 { 0 } else { f.to_bits() }),
            N::Str(s) => KeyId::Str(s.clone()),
            _ => return None,
        })
    }
}

/// kyaml's `findMergeValues`: the maps to merge, last-listed first.
fn kyaml_merge_sources(m: MergeVal) -> Result<Vec<Vec<Entry>>, ParseError> {
    let line = m.line as usize;
    let err = |msg: &str| ParseError::new(msg, line, 0);
    const WANT_MAP: &str = "map merge requires map or sequence of maps as the value";
    const ALIAS: &str = "invalid map merge: received alias for a non-map value";
    match m.node {
        N::Map(es) => Ok(vec![es]),
        _ if m.via_alias => Err(err(ALIAS)),
        N::Seq(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                let alias = m.item_alias.get(i).copied().unwrap_or(false);
                match item {
                    N::Map(es) => out.push(es),
                    _ if alias => return Err(err(ALIAS)),
                    N::Seq(_) => return Err(err("invalid map merge: received a nested sequence")),
                    _ => return Err(err(WANT_MAP)),
                }
            }
            out.reverse();
            Ok(out)
        }
        _ => Err(err(WANT_MAP)),
    }
}

/// Where an entry of the merged map comes from.
#[derive(Clone, Copy)]
enum Ref {
    Own(usize),
    Src(usize, usize),
}

/// kyaml's `mergeAll`: starting from the map's own entries, every source
/// (then the map itself) is replayed field by field: the first entry of the
/// source with that name is set over the first entry of the result with the
/// same text (a `!!null` key is looked up as ""), or appended.
fn kyaml_merge_all(
    b: &mut Builder,
    own: Vec<Entry>,
    sources: Vec<Vec<Entry>>,
    last_line: u32,
) -> Result<Vec<Entry>, ParseError> {
    fn entry<'x>(own: &'x [Entry], sources: &'x [Vec<Entry>], r: Ref) -> Option<&'x Entry> {
        match r {
            Ref::Own(i) => own.get(i),
            Ref::Src(s, j) => sources.get(s).and_then(|v| v.get(j)),
        }
    }
    fn text_of(e: &Entry) -> &str {
        e.meta.text(&e.key)
    }
    let mut rn: Vec<(Ref, u32)> = (0..own.len()).map(|i| (Ref::Own(i), 0)).collect();
    let mut appended = 0u32;
    let mut first: HashMap<String, usize> = HashMap::new();
    for (i, e) in own.iter().enumerate() {
        first.entry(text_of(e).to_owned()).or_insert(i);
    }
    let passes: Vec<Option<usize>> = (0..sources.len()).map(Some).chain([None]).collect();
    for pass in passes {
        let list: &[Entry] = match pass {
            Some(s) => sources.get(s).map_or(&[], Vec::as_slice),
            None => &own,
        };
        // Field(name) finds the first entry of the source with that name.
        let mut src_first: HashMap<&str, usize> = HashMap::new();
        for (j, e) in list.iter().enumerate() {
            src_first.entry(text_of(e)).or_insert(j);
        }
        for e in list {
            let Some(&j) = src_first.get(text_of(e)) else {
                continue;
            };
            let Some(f) = list.get(j) else { continue };
            let r = match pass {
                Some(s) => Ref::Src(s, j),
                None => Ref::Own(j),
            };
            let name = if f.meta.null_tag { "" } else { text_of(f) };
            match first.get(name).copied() {
                Some(idx) => {
                    let old_text = rn
                        .get(idx)
                        .and_then(|(r0, _)| entry(&own, &sources, *r0))
                        .map(|x| text_of(x).to_owned());
                    if let Some(slot) = rn.get_mut(idx) {
                        slot.0 = r;
                    }
                    if old_text.as_deref() != Some(text_of(f)) {
                        first.clear();
                        for (k, (rr, _)) in rn.iter().enumerate() {
                            if let Some(x) = entry(&own, &sources, *rr) {
                                first.entry(text_of(x).to_owned()).or_insert(k);
                            }
                        }
                    }
                }
                None => {
                    appended += 1;
                    first.entry(text_of(f).to_owned()).or_insert(rn.len());
                    rn.push((r, appended));
                }
            }
        }
    }
    if appended > 0 {
        b.inserted.push((last_line, appended));
    }
    // Materialize: own values are moved on first use, everything else cloned.
    let mut own_slots: Vec<Option<Entry>> = own.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(rn.len());
    let mut uses = vec![0u32; own_slots.len()];
    for (r, _) in &rn {
        if let Ref::Own(i) = r
            && let Some(u) = uses.get_mut(*i)
        {
            *u += 1;
        }
    }
    let mut own_copy: Vec<Option<Entry>> = Vec::new();
    own_copy.resize_with(own_slots.len(), || None);
    for (r, after) in &rn {
        let mut e = match *r {
            Ref::Own(i) => match own_slots.get_mut(i).and_then(Option::take) {
                Some(e) => {
                    // Keep a copy only if a later slot needs this entry too.
                    if uses.get(i).is_some_and(|&u| u > 1)
                        && let Some(slot) = own_copy.get_mut(i)
                    {
                        *slot = Some(clone_entry(&e));
                    }
                    e
                }
                None => match own_copy.get(i).and_then(Option::as_ref) {
                    Some(e) => {
                        b.charge(node_count(&e.val))?;
                        clone_entry(e)
                    }
                    None => continue,
                },
            },
            Ref::Src(s, j) => match sources.get(s).and_then(|v| v.get(j)) {
                Some(e) => {
                    b.charge(node_count(&e.val) + 1)?;
                    clone_entry(e)
                }
                None => continue,
            },
        };
        if *after > 0 {
            e.meta.line = last_line;
            e.meta.after = *after;
        }
        out.push(e);
    }
    Ok(out)
}

/// kustomize rewrites `metadata.annotations` before printing: each value
/// becomes its source text (the last duplicate wins), keys are sorted and
/// written back as plain scalars, so they are read again like plain scalars.
fn rebuild_annotations(entries: Vec<Entry>) -> Result<Vec<Entry>, ParseError> {
    if entries.is_empty() {
        return Ok(entries);
    }
    let mut by_key: HashMap<String, (N, u32)> = HashMap::new();
    for e in entries {
        let text = e.meta.text(&e.key).to_owned();
        let value = match e.val {
            s @ N::Str(_) => s,
            N::Seq(_) | N::Map(_) => N::Str(String::new()),
            // a patch's null (deletes) and a value written as nothing
            // (see `N::EmptyNull`) keep what they are
            n @ N::Null => n,
            N::Requoted(b) if matches!(b.0, N::EmptyNull) => N::Requoted(b),
            other => N::Str(scalar_text(&other)),
        };
        by_key.insert(text, (value, e.meta.line));
    }
    if let Some((_, line)) = by_key.get("") {
        return Err(ParseError::new(
            "panic: wrong node kind: expected ScalarNode but got MappingNode: node contents:\n\t{}",
            *line as usize,
            0,
        ));
    }
    let mut keys: Vec<(String, (N, u32))> = by_key.into_iter().collect();
    keys.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    Ok(keys
        .into_iter()
        .map(|(text, (value, line))| {
            let (tag, key) = resolve_plain(false, &text);
            let same = matches!(&key, N::Str(s) if *s == text);
            Entry {
                meta: KeyMeta {
                    raw: if same {
                        None
                    } else {
                        Some(text.into_boxed_str())
                    },
                    null_tag: tag == RTag::Null,
                    str_tag: matches!(tag, RTag::Str | RTag::Merge),
                    direct_str: matches!(tag, RTag::Str | RTag::Merge),
                    line,
                    after: 0,
                },
                key,
                val: value,
            }
        })
        .collect())
}

/// Text for a resolved scalar whose source text was not kept.
fn scalar_text(n: &N) -> String {
    match n {
        N::Null | N::EmptyNull => String::new(),
        N::Bool(b) => b.to_string(),
        N::Int(i) => i.to_string(),
        N::UInt(u) => u.to_string(),
        N::Float(f) => go_format_float(*f, false),
        N::Str(s) => s.clone(),
        N::Time(t) => t.rfc3339().unwrap_or_default(),
        N::Requoted(b) => b.1.clone(),
        N::Bytes(b) => go_lossy_utf8(b),
        N::Fail(_) | N::Seq(_) | N::Map(_) => String::new(),
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Last line holding content of a span (a span ending at column 0 ends on
/// the line before).
fn content_end_line(span: Span) -> u32 {
    let end = span.end.line();
    if span.end.col() == 0 && end > span.start.line() {
        to_u32(end - 1)
    } else {
        to_u32(end)
    }
}

/// Number of nodes in a tree (keys included), without recursion.
fn node_count(n: &N) -> usize {
    let mut count = 0usize;
    let mut stack = vec![n];
    while let Some(x) = stack.pop() {
        count += 1;
        match x {
            N::Seq(items) => stack.extend(items.iter()),
            N::Map(es) => {
                for e in es {
                    stack.push(&e.key);
                    stack.push(&e.val);
                }
            }
            _ => {}
        }
    }
    count
}

/// Deep copy without recursion (anchored trees can be deeply nested).
fn clone_deep(n: &N) -> N {
    enum W<'x> {
        Seq(std::slice::Iter<'x, N>, Vec<N>),
        Map {
            it: std::slice::Iter<'x, Entry>,
            out: Vec<Entry>,
            cur: Option<&'x Entry>,
            key: Option<N>,
        },
    }
    let mut stack: Vec<W<'_>> = Vec::new();
    let mut next: Option<&N> = Some(n);
    loop {
        let mut done: Option<N> = None;
        if let Some(x) = next.take() {
            match x {
                N::Seq(items) => stack.push(W::Seq(items.iter(), Vec::with_capacity(items.len()))),
                N::Map(es) => stack.push(W::Map {
                    it: es.iter(),
                    out: Vec::with_capacity(es.len()),
                    cur: None,
                    key: None,
                }),
                leaf => done = Some(leaf.clone()),
            }
        }
        if let Some(v) = done {
            match stack.last_mut() {
                None => return v,
                Some(W::Seq(_, out)) => out.push(v),
                Some(W::Map { out, cur, key, .. }) => match (key.take(), *cur) {
                    (None, Some(e)) => {
                        *key = Some(v);
                        next = Some(&e.val);
                        continue;
                    }
                    (Some(k), Some(e)) => out.push(Entry {
                        key: k,
                        val: v,
                        meta: e.meta.clone(),
                    }),
                    _ => {}
                },
            }
        }
        match stack.last_mut() {
            None => return N::Null,
            Some(W::Seq(it, _)) => {
                if let Some(item) = it.next() {
                    next = Some(item);
                    continue;
                }
            }
            Some(W::Map { it, cur, .. }) => {
                if let Some(e) = it.next() {
                    *cur = Some(e);
                    next = Some(&e.key);
                    continue;
                }
            }
        }
        // The top collection is complete: hand it to its parent.
        let finished = match stack.pop() {
            Some(W::Seq(_, out)) => N::Seq(out),
            Some(W::Map { out, .. }) => N::Map(out),
            None => return N::Null,
        };
        match stack.last_mut() {
            None => return finished,
            Some(W::Seq(_, out)) => out.push(finished),
            Some(W::Map { out, cur, key, .. }) => match (key.take(), *cur) {
                (None, Some(e)) => {
                    *key = Some(finished);
                    next = Some(&e.val);
                }
                (Some(k), Some(e)) => out.push(Entry {
                    key: k,
                    val: finished,
                    meta: e.meta.clone(),
                }),
                _ => {}
            },
        }
    }
}

fn clone_entry(e: &Entry) -> Entry {
    Entry {
        key: clone_deep(&e.key),
        val: clone_deep(&e.val),
        meta: e.meta.clone(),
    }
}

/// Drops a tree without recursion.
fn drop_deep(n: N) {
    let mut stack = vec![n];
    while let Some(mut x) = stack.pop() {
        match &mut x {
            N::Seq(items) => stack.append(items),
            N::Map(es) => {
                for e in es.drain(..) {
                    stack.push(e.key);
                    stack.push(e.val);
                }
            }
            _ => {}
        }
    }
}

impl Drop for Builder {
    fn drop(&mut self) {
        for frame in self.stack.drain(..) {
            match frame.body {
                Body::Seq(items) => drop_deep(N::Seq(items)),
                Body::Map(mb) => {
                    for slot in mb.slots {
                        match slot {
                            Slot::E(e) => {
                                drop_deep(e.key);
                                drop_deep(e.val);
                            }
                            Slot::M(m) => drop_deep(m.node),
                        }
                    }
                    if let Some(pk) = mb.pending {
                        drop_deep(pk.key);
                    }
                }
            }
        }
        for (_, a) in self.anchors.drain() {
            drop_deep(a.node);
        }
        if let Some(root) = self.root.take() {
            drop_deep(root);
        }
    }
}

// ---------------------------------------------------------------------------
// Decoding checks (what kustomize finds when it prints the resource)
// ---------------------------------------------------------------------------

/// A duplicate key as go-yaml reports it.
struct DupErr {
    text: String,
    dup: (u32, u32),
    first: (u32, u32),
}

enum DecodeErr {
    Fail(String),
    Dups(Vec<DupErr>),
}

/// Walks the tree in go-yaml's decoding order: the first undecodable
/// scalar or invalid key wins; maps with duplicate keys are reported (all
/// their pairs) and not descended into.
fn decode_check(root: &N, mode: Mode) -> Option<DecodeErr> {
    enum Visit<'x> {
        Node(&'x N),
        Key(&'x N),
    }
    let mut dups = Vec::new();
    let mut stack = vec![Visit::Node(root)];
    while let Some(v) = stack.pop() {
        let n = match v {
            Visit::Key(k) => {
                if matches!(k, N::Seq(_) | N::Map(_)) {
                    let mut repr = String::new();
                    go_repr_n(k, mode, &mut repr);
                    return Some(DecodeErr::Fail(format!("invalid map key: {repr}")));
                }
                k
            }
            Visit::Node(n) => n,
        };
        match n {
            N::Fail(m) => return Some(DecodeErr::Fail(m.to_string())),
            N::Seq(items) => stack.extend(items.iter().rev().map(Visit::Node)),
            N::Map(es) => {
                if mode == Mode::Strict {
                    let found = find_dups(es);
                    if !found.is_empty() {
                        dups.extend(found);
                        continue;
                    }
                }
                for e in es.iter().rev() {
                    stack.push(Visit::Node(&e.val));
                    stack.push(Visit::Key(&e.key));
                }
            }
            _ => {}
        }
    }
    if dups.is_empty() {
        None
    } else {
        Some(DecodeErr::Dups(dups))
    }
}

/// Every pair of keys with the same kind and text, in go-yaml's order.
fn find_dups(es: &[Entry]) -> Vec<DupErr> {
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    fn key_of(e: &Entry) -> (NodeKind, &str) {
        (e.key.kind(), e.meta.text(&e.key))
    }
    if es.len() <= 16 {
        for (i, a) in es.iter().enumerate() {
            for (j, b) in es.iter().enumerate().skip(i + 1) {
                if key_of(a) == key_of(b) {
                    pairs.push((i, j));
                }
            }
        }
    } else {
        let mut groups: HashMap<(NodeKind, &str), Vec<usize>> = HashMap::new();
        for (i, e) in es.iter().enumerate() {
            groups.entry(key_of(e)).or_default().push(i);
        }
        for idx in groups.values().filter(|v| v.len() > 1) {
            for (a, &i) in idx.iter().enumerate() {
                for &j in idx.iter().skip(a + 1) {
                    pairs.push((i, j));
                }
            }
        }
        pairs.sort_unstable();
    }
    pairs
        .into_iter()
        .filter_map(|(i, j)| {
            let a = es.get(i)?;
            let b = es.get(j)?;
            Some(DupErr {
                text: a.meta.text(&a.key).to_owned(),
                dup: (b.meta.line, b.meta.after),
                first: (a.meta.line, a.meta.after),
            })
        })
        .collect()
}

/// What JSON encoding runs into first, walking maps in sorted key order.
enum JsonErr {
    GeneralMap,
    BadFloat(f64),
    BadTime,
}

/// Returns the first JSON problem and whether any problem other than a
/// non-finite float exists.
fn json_check(root: &N) -> (Option<JsonErr>, bool) {
    let mut first: Option<JsonErr> = None;
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        let problem = match n {
            N::Float(f) if !f.is_finite() => Some(JsonErr::BadFloat(*f)),
            N::Time(t) if t.rfc3339().is_err() => Some(JsonErr::BadTime),
            N::Seq(items) => {
                stack.extend(items.iter().rev());
                None
            }
            N::Map(es) => {
                if es.iter().any(|e| !e.meta.str_tag) {
                    Some(JsonErr::GeneralMap)
                } else {
                    let mut sorted: Vec<&Entry> = es.iter().collect();
                    sorted.sort_by(|a, b| {
                        a.meta
                            .text(&a.key)
                            .as_bytes()
                            .cmp(b.meta.text(&b.key).as_bytes())
                    });
                    stack.extend(sorted.into_iter().rev().map(|e| &e.val));
                    None
                }
            }
            _ => None,
        };
        match problem {
            Some(JsonErr::BadFloat(f)) if first.is_none() => first = Some(JsonErr::BadFloat(f)),
            Some(JsonErr::BadFloat(_)) | None => {}
            Some(p) => return (Some(first.unwrap_or(p)), true),
        }
    }
    (first, false)
}

fn finish_strict(
    doc: Doc,
    chunk: Chunk<'_>,
    empty_nulls: Option<&mut Vec<Vec<PathSeg>>>,
) -> Result<Value, ParseError> {
    let root = doc.root;
    if let Some(err) = decode_check(&root, Mode::Strict) {
        let (message, line) = match err {
            DecodeErr::Fail(m) => (format!("map[string]interface {{}}(nil): yaml: {m}"), 0),
            DecodeErr::Dups(dups) => {
                let map = LineMap::new(chunk.text, &doc.inserted);
                let mut m = String::from("map[string]interface {}(nil): yaml: unmarshal errors:");
                for d in &dups {
                    let mut quoted = String::new();
                    go_quote(&d.text, &mut quoted);
                    let _ = write!(
                        m,
                        "\n  line {}: mapping key {} already defined at line {}",
                        map.map(d.dup),
                        quoted,
                        map.map(d.first)
                    );
                }
                let line = dups
                    .first()
                    .map_or(0, |d| d.dup.0 as usize + chunk.line_offset);
                (m, line)
            }
        };
        drop_deep(root);
        return Err(ParseError::new(message, line, 0));
    }
    if doc.json_problem {
        let (first, blocking) = json_check(&root);
        if let (Some(problem), true) = (first, blocking) {
            let mut repr = String::new();
            go_repr_n(&root, Mode::Strict, &mut repr);
            let tail = match problem {
                JsonErr::GeneralMap => {
                    "json: unsupported type: map[interface {}]interface {}".to_owned()
                }
                JsonErr::BadFloat(f) => {
                    format!("json: unsupported value: {}", go_format_float(f, false))
                }
                JsonErr::BadTime => "json: error calling MarshalJSON for type time.Time: \
                    Time.MarshalJSON: timezone hour outside of range [0,23]"
                    .to_owned(),
            };
            drop_deep(root);
            return Err(ParseError::new(format!("{repr}: {tail}"), 0, 0));
        }
    }
    to_value_marking(root, Mode::Strict, empty_nulls)
}

fn finish_lenient(root: N) -> Result<Value, ParseError> {
    if let Some(err) = decode_check(&root, Mode::Lenient) {
        let message = match err {
            DecodeErr::Fail(m) => format!("yaml: {m}"),
            DecodeErr::Dups(_) => "yaml: unmarshal errors".to_owned(),
        };
        drop_deep(root);
        return Err(ParseError::new(message, 0, 0));
    }
    to_value(root, Mode::Lenient)
}

/// Converts a checked tree into a [`Value`] without recursion; the paths
/// of nulls written as nothing go to `empty_nulls` when given.
fn to_value(root: N, mode: Mode) -> Result<Value, ParseError> {
    to_value_marking(root, mode, None)
}

fn to_value_marking(
    root: N,
    mode: Mode,
    mut empty_nulls: Option<&mut Vec<Vec<PathSeg>>>,
) -> Result<Value, ParseError> {
    enum W {
        Seq(std::vec::IntoIter<N>, Vec<Value>),
        Map(std::vec::IntoIter<Entry>, Mapping, Option<String>),
    }
    let mut stack: Vec<W> = Vec::new();
    let mut next: Option<N> = Some(root);
    let mut bad_float: Option<f64> = None;
    let result = loop {
        let mut done: Option<Value> = None;
        if let Some(n) = next.take() {
            match n {
                N::Seq(items) => {
                    let cap = items.len();
                    stack.push(W::Seq(items.into_iter(), Vec::with_capacity(cap)));
                }
                N::Map(es) => {
                    let cap = es.len();
                    stack.push(W::Map(es.into_iter(), Mapping::with_capacity(cap), None));
                }
                leaf => {
                    let empty = match &leaf {
                        N::EmptyNull => true,
                        N::Requoted(b) => matches!(b.0, N::EmptyNull),
                        _ => false,
                    };
                    if empty && let Some(out) = empty_nulls.as_deref_mut() {
                        out.push(
                            stack
                                .iter()
                                .map(|w| match w {
                                    W::Seq(_, items) => PathSeg::Index(items.len()),
                                    W::Map(_, _, key) => {
                                        PathSeg::Key(key.clone().unwrap_or_default())
                                    }
                                })
                                .collect(),
                        );
                    }
                    match leaf_value(leaf) {
                        Ok(v) => {
                            if let Value::Float(f) = v
                                && !f.is_finite()
                                && bad_float.is_none()
                            {
                                bad_float = Some(f);
                            }
                            done = Some(v);
                        }
                        Err(e) => break Err(e),
                    }
                }
            }
        }
        if let Some(v) = done {
            match stack.last_mut() {
                None => break Ok(v),
                Some(W::Seq(_, out)) => out.push(v),
                Some(W::Map(_, out, key)) => {
                    if let Some(k) = key.take() {
                        out.insert(k, v);
                    }
                }
            }
        }
        let advanced = match stack.last_mut() {
            None => break Ok(Value::Null),
            Some(W::Seq(it, _)) => it.next().map(|n| {
                next = Some(n);
            }),
            Some(W::Map(it, _, key)) => match it.next() {
                Some(e) => match map_key(e.key, &e.val, mode) {
                    Ok(k) => {
                        *key = Some(k);
                        next = Some(e.val);
                        Some(())
                    }
                    Err(err) => {
                        drop_deep(e.val);
                        break Err(err);
                    }
                },
                None => None,
            },
        };
        if advanced.is_some() {
            continue;
        }
        let finished = match stack.pop() {
            Some(W::Seq(_, out)) => Value::Seq(out),
            Some(W::Map(_, out, _)) => Value::Map(out),
            None => break Ok(Value::Null),
        };
        match stack.last_mut() {
            None => break Ok(finished),
            Some(W::Seq(_, out)) => out.push(finished),
            Some(W::Map(_, out, key)) => {
                if let Some(k) = key.take() {
                    out.insert(k, finished);
                }
            }
        }
    };
    // Unconsumed parts (after an error) are dropped without recursion.
    for w in stack {
        match w {
            W::Seq(it, _) => it.for_each(drop_deep),
            W::Map(it, _, _) => it.for_each(|e| {
                drop_deep(e.key);
                drop_deep(e.val);
            }),
        }
    }
    if let Some(n) = next {
        drop_deep(n);
    }
    let value = result?;
    if mode == Mode::Lenient
        && let Some(f) = bad_float
    {
        return Err(ParseError::new(
            format!("json: unsupported value: {}", go_format_float(f, false)),
            0,
            0,
        ));
    }
    Ok(value)
}

fn leaf_value(n: N) -> Result<Value, ParseError> {
    Ok(match n {
        N::Null | N::EmptyNull => Value::Null,
        N::Bool(b) => Value::Bool(b),
        N::Int(i) => Value::Int(i),
        N::UInt(u) => Value::UInt(u),
        N::Float(f) => Value::Float(f),
        N::Str(s) => Value::String(s),
        N::Time(t) => match t.rfc3339() {
            Ok(s) => Value::String(s),
            Err(e) => return Err(ParseError::new(e, 0, 0)),
        },
        N::Fail(m) => return Err(ParseError::new(format!("yaml: {m}"), 0, 0)),
        N::Requoted(b) => Value::String(b.1),
        N::Bytes(b) => Value::String(go_lossy_utf8(&b)),
        N::Seq(_) | N::Map(_) => Value::Null,
    })
}

/// The JSON object key for a map key. Strict mode only sees string keys
/// here; lenient mode stringifies like `sigs.k8s.io/yaml`.
fn map_key(key: N, val: &N, mode: Mode) -> Result<String, ParseError> {
    let unsupported = |ty: &str, key: &str| {
        let mut v = String::new();
        if matches!(val, N::Null | N::EmptyNull) {
            v.push_str("<nil>");
        } else {
            go_repr_n(val, Mode::Lenient, &mut v);
        }
        ParseError::new(
            format!("unsupported map key of type: {ty}, key: {key}, value: {v}"),
            0,
            0,
        )
    };
    Ok(match key {
        N::Str(s) => s,
        N::Requoted(b) => b.1,
        N::Bytes(b) => go_lossy_utf8(&b),
        N::Int(i) => i.to_string(),
        N::Bool(b) => b.to_string(),
        N::Float(f) if mode == Mode::Lenient => match go_format_float(f, true).as_str() {
            "+Inf" => ".inf".to_owned(),
            "-Inf" => "-.inf".to_owned(),
            "NaN" => ".nan".to_owned(),
            s => s.to_owned(),
        },
        N::UInt(u) if mode == Mode::Lenient => {
            return Err(unsupported("uint64", &format!("0x{u:x}")));
        }
        N::Null | N::EmptyNull if mode == Mode::Lenient => {
            return Err(unsupported("%!s(<nil>)", "<nil>"));
        }
        other => scalar_text(&other),
    })
}

// ---------------------------------------------------------------------------
// Line numbers of the re-encoded document (for duplicate-key errors)
// ---------------------------------------------------------------------------

/// kustomize reports duplicate keys with line numbers of the resource as
/// kyaml re-encodes it: blank lines dropped, one line per key or sequence
/// item (multi-line flow collections and scalars collapse), comment lines
/// and block scalar bodies kept. This maps source lines to those numbers.
struct LineMap {
    cum: Vec<u32>,
    inserted: Vec<(u32, u32)>,
}

impl LineMap {
    fn new(src: &str, inserted: &[(u32, u32)]) -> Self {
        let lines: Vec<&str> = src.split('\n').collect();
        let mut survive = vec![false; lines.len() + 2];
        let mark = |l: usize, survive: &mut Vec<bool>| {
            if let Some(s) = survive.get_mut(l) {
                *s = true;
            }
        };
        let mut first_content: Option<usize> = None;
        let mut stack: Vec<LmFrame> = Vec::new();
        for item in Parser::new_from_str(src) {
            let Ok((event, span)) = item else { break };
            let line = span.start.line();
            let node_start = matches!(
                event,
                Event::Scalar(..)
                    | Event::Alias(_)
                    | Event::SequenceStart(..)
                    | Event::MappingStart(..)
            );
            // Nodes inside a `<<` entry disappear: kyaml removes the entry.
            let suppressed = stack
                .last()
                .is_some_and(|f| f.suppress || (f.skip_value && !f.expecting_key));
            if node_start && !suppressed {
                let own_line = match stack.last() {
                    None => true,
                    Some(f) => !f.flow && (!f.is_map || f.expecting_key),
                };
                let merge_key = matches!(&event, Event::Scalar(v, ScalarStyle::Plain, _, None) if v == "<<")
                    && stack.last().is_some_and(|f| f.is_map && f.expecting_key);
                if merge_key {
                    if let Some(f) = stack.last_mut() {
                        f.skip_value = true;
                    }
                } else if own_line {
                    mark(line, &mut survive);
                    first_content.get_or_insert(line);
                }
            }
            match event {
                Event::Scalar(value, style, ..) => {
                    // A block scalar's body: one line per content line (the
                    // encoder adds a blank line where folding needs one).
                    let body = match style {
                        _ if suppressed => 0,
                        ScalarStyle::Literal => value.lines().count(),
                        ScalarStyle::Folded => {
                            let parts: Vec<&str> = value.lines().collect();
                            parts.len()
                                + parts
                                    .windows(2)
                                    .filter(|w| match w {
                                        [a, b] => {
                                            !a.is_empty()
                                                && !b.is_empty()
                                                && !a.starts_with(' ')
                                                && !b.starts_with(' ')
                                        }
                                        _ => false,
                                    })
                                    .count()
                        }
                        _ => 0,
                    };
                    for k in 0..body {
                        mark(line + k, &mut survive);
                    }
                    LmFrame::toggle(&mut stack);
                }
                Event::Alias(_) => LmFrame::toggle(&mut stack),
                Event::SequenceStart(..) | Event::MappingStart(..) => {
                    stack.push(LmFrame {
                        is_map: matches!(event, Event::MappingStart(..)),
                        flow: span.end.index() > span.start.index(),
                        expecting_key: true,
                        suppress: suppressed,
                        skip_value: false,
                    });
                }
                Event::SequenceEnd | Event::MappingEnd => {
                    stack.pop();
                    LmFrame::toggle(&mut stack);
                }
                Event::DocumentEnd => break,
                _ => {}
            }
        }
        let first_content = first_content.unwrap_or(lines.len() + 1);
        let mut last_leading_comment = None;
        for (i, text) in lines.iter().enumerate() {
            let l = i + 1;
            if text.trim_start().starts_with('#') {
                mark(l, &mut survive);
                if l < first_content {
                    last_leading_comment = Some(l);
                }
            }
        }
        // A blank line between the leading comments and the content stays.
        if let Some(c) = last_leading_comment {
            let blank = (c + 1..first_content)
                .find(|&l| lines.get(l - 1).is_some_and(|t| t.trim().is_empty()));
            if let Some(b) = blank {
                mark(b, &mut survive);
            }
        }
        let mut cum = Vec::with_capacity(survive.len());
        let mut acc = 0u32;
        for s in &survive {
            if *s {
                acc += 1;
            }
            cum.push(acc);
        }
        LineMap {
            cum,
            inserted: inserted.to_vec(),
        }
    }

    fn map(&self, (line, after): (u32, u32)) -> u32 {
        let idx = (line as usize).min(self.cum.len().saturating_sub(1));
        let shift: u32 = self
            .inserted
            .iter()
            .filter(|(l, _)| *l < line)
            .map(|(_, n)| *n)
            .sum();
        self.cum.get(idx).copied().unwrap_or(0) + shift + after
    }
}

/// An open collection while [`LineMap`] replays the events.
struct LmFrame {
    is_map: bool,
    flow: bool,
    expecting_key: bool,
    /// Inside a removed `<<` entry.
    suppress: bool,
    /// The current key is `<<`: its value is removed.
    skip_value: bool,
}

impl LmFrame {
    /// A node finished in the top collection: maps alternate key / value.
    fn toggle(stack: &mut [LmFrame]) {
        if let Some(top) = stack.last_mut()
            && top.is_map
        {
            if !top.expecting_key {
                top.skip_value = false;
            }
            top.expecting_key = !top.expecting_key;
        }
    }
}

// ---------------------------------------------------------------------------
// Go formatting: %#v, strconv.Quote, float formatting
// ---------------------------------------------------------------------------

/// Go's `%#v` of a decoded tree. In strict mode (go-yaml v3) maps with only
/// string keys are `map[string]interface {}`; go-yaml v2 always produces
/// `map[interface {}]interface {}`.
fn go_repr_n(root: &N, mode: Mode, out: &mut String) {
    enum T<'x> {
        Node(&'x N),
        Text(&'static str),
        Key(&'x Entry),
    }
    let mut stack = vec![T::Node(root)];
    while let Some(t) = stack.pop() {
        match t {
            T::Text(s) => out.push_str(s),
            T::Key(e) => go_scalar(&e.key, out),
            T::Node(n) => match n {
                N::Seq(items) => {
                    out.push_str("[]interface {}{");
                    stack.push(T::Text("}"));
                    for (i, item) in items.iter().enumerate().rev() {
                        stack.push(T::Node(item));
                        if i > 0 {
                            stack.push(T::Text(", "));
                        }
                    }
                }
                N::Map(es) => {
                    let general = mode == Mode::Lenient || es.iter().any(|e| !e.meta.direct_str);
                    let mut sorted: Vec<&Entry> = if general {
                        // A Go map keeps one value per key: the last one.
                        let mut seen: HashMap<GoKey, usize> = HashMap::new();
                        let mut list: Vec<&Entry> = Vec::new();
                        for e in es {
                            match seen.get(&GoKey::of(&e.key)) {
                                Some(&i) => {
                                    if let Some(slot) = list.get_mut(i) {
                                        *slot = e;
                                    }
                                }
                                None => {
                                    seen.insert(GoKey::of(&e.key), list.len());
                                    list.push(e);
                                }
                            }
                        }
                        list
                    } else {
                        es.iter().collect()
                    };
                    if general {
                        sorted.sort_by(|a, b| go_key_cmp(&a.key, &b.key));
                        out.push_str("map[interface {}]interface {}{");
                    } else {
                        sorted.sort_by(|a, b| go_key_cmp(&a.key, &b.key));
                        out.push_str("map[string]interface {}{");
                    }
                    stack.push(T::Text("}"));
                    for (i, e) in sorted.iter().enumerate().rev() {
                        stack.push(T::Node(&e.val));
                        stack.push(T::Text(":"));
                        stack.push(T::Key(e));
                        if i > 0 {
                            stack.push(T::Text(", "));
                        }
                    }
                }
                leaf => go_scalar(leaf, out),
            },
        }
    }
}

/// `%#v` of a scalar held in an `interface{}`.
fn go_scalar(n: &N, out: &mut String) {
    match n {
        N::Null | N::EmptyNull => out.push_str("interface {}(nil)"),
        N::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        N::Int(i) => {
            let _ = write!(out, "{i}");
        }
        N::UInt(u) => {
            let _ = write!(out, "0x{u:x}");
        }
        N::Float(f) => out.push_str(&go_format_float(*f, false)),
        N::Str(s) => go_quote(s, out),
        N::Time(t) => t.go_string(out),
        N::Requoted(b) => go_scalar(&b.0, out),
        N::Bytes(b) => go_quote_bytes(b, out),
        N::Fail(_) | N::Seq(_) | N::Map(_) => {}
    }
}

/// Hashable identity of a decoded key (for Go map semantics).
#[derive(PartialEq, Eq, Hash)]
enum GoKey {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(u64),
    Str(String),
    Time(i64, u32, i32),
    Other,
}

impl GoKey {
    fn of(n: &N) -> GoKey {
        match n {
            N::Null | N::EmptyNull => GoKey::Null,
            N::Bool(b) => GoKey::Bool(*b),
            N::Int(i) => GoKey::Int(*i),
            N::UInt(u) => GoKey::UInt(*u),
            N::Float(f) => GoKey::Float(f.to_bits()),
            N::Str(s) => GoKey::Str(s.clone()),
            N::Time(t) => GoKey::Time(t.abs_secs(), t.nsec, t.offset_secs()),
            N::Requoted(b) => GoKey::of(&b.0),
            N::Bytes(b) => GoKey::Str(go_lossy_utf8(b)),
            _ => GoKey::Other,
        }
    }
}

/// Go's `fmt` ordering of `interface{}` map keys: by dynamic type (as laid
/// out in kubectl's binary: nil, string, uint64, int, float64, bool,
/// time.Time), then by value.
fn go_key_cmp(a: &N, b: &N) -> std::cmp::Ordering {
    fn rank(n: &N) -> u8 {
        match n {
            N::Null | N::EmptyNull => 0,
            N::Str(_) => 1,
            N::UInt(_) => 2,
            N::Int(_) => 3,
            N::Float(_) => 4,
            N::Bool(_) => 5,
            N::Time(_) => 6,
            _ => 7,
        }
    }
    let a = match a {
        N::Requoted(x) => &x.0,
        _ => a,
    };
    let b = match b {
        N::Requoted(x) => &x.0,
        _ => b,
    };
    match (a, b) {
        (N::Str(x), N::Str(y)) => x.as_bytes().cmp(y.as_bytes()),
        (N::UInt(x), N::UInt(y)) => x.cmp(y),
        (N::Int(x), N::Int(y)) => x.cmp(y),
        (N::Float(x), N::Float(y)) => x.total_cmp(y),
        (N::Bool(x), N::Bool(y)) => x.cmp(y),
        (N::Time(x), N::Time(y)) => (x.nsec, x.abs_secs()).cmp(&(y.nsec, y.abs_secs())),
        _ => rank(a).cmp(&rank(b)),
    }
}

/// `%#v` of a [`Value`] (always string-keyed maps).
fn go_repr_value(root: &Value, out: &mut String) {
    enum T<'x> {
        Node(&'x Value),
        Text(&'static str),
        Key(&'x str),
    }
    let mut stack = vec![T::Node(root)];
    while let Some(t) = stack.pop() {
        match t {
            T::Text(s) => out.push_str(s),
            T::Key(k) => go_quote(k, out),
            T::Node(v) => match v {
                Value::Null => out.push_str("interface {}(nil)"),
                Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                Value::Int(i) => {
                    let _ = write!(out, "{i}");
                }
                Value::UInt(u) => {
                    let _ = write!(out, "0x{u:x}");
                }
                Value::Float(f) => out.push_str(&go_format_float(*f, false)),
                Value::String(s) => go_quote(s, out),
                Value::Seq(items) => {
                    out.push_str("[]interface {}{");
                    stack.push(T::Text("}"));
                    for (i, item) in items.iter().enumerate().rev() {
                        stack.push(T::Node(item));
                        if i > 0 {
                            stack.push(T::Text(", "));
                        }
                    }
                }
                Value::Map(m) => {
                    let mut keys: Vec<(&String, &Value)> = m.iter().collect();
                    keys.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                    out.push_str("map[string]interface {}{");
                    stack.push(T::Text("}"));
                    for (i, (k, v)) in keys.into_iter().enumerate().rev() {
                        stack.push(T::Node(v));
                        stack.push(T::Text(":"));
                        stack.push(T::Key(k));
                        if i > 0 {
                            stack.push(T::Text(", "));
                        }
                    }
                }
            },
        }
    }
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)` (or 32 bits), which is also
/// what `%v` prints: the shortest digits that read back, in exponent form
/// when the decimal exponent is below -4 or at least 6.
fn go_format_float(f: f64, bits32: bool) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_owned();
    }
    // Shortest round-trip digits and decimal exponent.
    let sci = if bits32 {
        format!("{:e}", f as f32)
    } else {
        format!("{f:e}")
    };
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let digits = if digits.is_empty() {
        "0".to_owned()
    } else {
        digits
    };
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let sign = if exp < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exp.abs());
    } else if exp < 0 {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let int_len = usize::try_from(exp).unwrap_or(0) + 1;
        if digits.len() <= int_len {
            out.push_str(&digits);
            for _ in digits.len()..int_len {
                out.push('0');
            }
        } else {
            let (a, b) = digits.split_at(int_len);
            out.push_str(a);
            out.push('.');
            out.push_str(b);
        }
    }
    out
}

/// Go's `strconv.Quote` of bytes that are not valid UTF-8.
fn go_quote_bytes(b: &[u8], out: &mut String) {
    out.push('"');
    let mut rest = b;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                go_quote_inner(s, out);
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                go_quote_inner(std::str::from_utf8(good).unwrap_or(""), out);
                let skip = e.error_len().unwrap_or(bad.len());
                for byte in bad.iter().take(skip) {
                    let _ = write!(out, "\\x{byte:02x}");
                }
                rest = bad.get(skip..).unwrap_or(&[]);
            }
        }
    }
    out.push('"');
}

/// Go's `strconv.Quote`.
fn go_quote(s: &str, out: &mut String) {
    out.push('"');
    go_quote_inner(s, out);
    out.push('"');
}

/// The text between the quotes of Go's `strconv.Quote`.
fn go_quote_inner(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if go_is_print(c) => out.push(c),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
}

/// An approximation of Go's `unicode.IsPrint` (letters, marks, numbers,
/// punctuation, symbols and the ASCII space).
fn go_is_print(c: char) -> bool {
    let u = c as u32;
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    !matches!(u,
        0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x180E | 0x200B..=0x200F
        | 0x202A..=0x202E | 0x2060..=0x206F | 0xD800..=0xF8FF | 0xFEFF
        | 0xFFF9..=0xFFFB | 0xFFFE | 0xFFFF | 0xE0000..=0xE007F | 0xF0000..)
}

#[cfg(test)]
mod tests {
    //! Expected values were all checked against `kubectl kustomize`
    //! (kustomize v5.5.0).

    use super::*;

    const HEAD: &str = "apiVersion: example.com/v1\nkind: Probe\nmetadata:\n  name: p\n";

    fn strict(src: &str) -> Vec<Value> {
        match parse_documents_strict(src) {
            Ok(v) => v,
            Err(e) => panic!("unexpected error {e:?} for {src:?}"),
        }
    }

    fn strict_err(src: &str) -> ParseError {
        match parse_documents_strict(src) {
            Ok(v) => panic!("expected an error, got {v:?} for {src:?}"),
            Err(e) => e,
        }
    }

    fn lenient(src: &str) -> Vec<Value> {
        match parse_documents(src) {
            Ok(v) => v,
            Err(e) => panic!("unexpected error {e:?} for {src:?}"),
        }
    }

    fn lenient_err(src: &str) -> String {
        match parse_documents(src) {
            Ok(v) => panic!("expected an error, got {v:?} for {src:?}"),
            Err(e) => e.message,
        }
    }

    /// The `spec` of a probe resource whose spec body is `body`.
    fn spec(body: &str) -> Value {
        let docs = strict(&format!("{HEAD}spec:\n{body}"));
        docs.first()
            .and_then(|d| d.get("spec"))
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// The items of `spec.k: [ ... ]`.
    fn items(flow_items: &str) -> Vec<Value> {
        match spec(&format!("  k: [{flow_items}]\n")).get("k") {
            Some(Value::Seq(v)) => v.clone(),
            other => panic!("not a list: {other:?}"),
        }
    }

    fn s(x: &str) -> Value {
        Value::String(x.to_owned())
    }

    #[test]
    fn nulls_and_booleans_follow_go_yaml_v3() {
        use Value::{Bool, Null};
        assert_eq!(
            items("~, null, Null, NULL, nULL, true, True, TRUE, tRUE, false, False, FALSE"),
            vec![
                Null,
                Null,
                Null,
                Null,
                s("nULL"),
                Bool(true),
                Bool(true),
                Bool(true),
                s("tRUE"),
                Bool(false),
                Bool(false),
                Bool(false)
            ]
        );
        assert_eq!(
            items("yes, no, on, off, y, n, Y, N, Off"),
            ["yes", "no", "on", "off", "y", "n", "Y", "N", "Off"]
                .map(s)
                .to_vec()
        );
        assert_eq!(spec("  a:\n  b: ~\n").get("a"), Some(&Null));
    }

    #[test]
    fn integers_accept_yaml_1_1_forms() {
        use Value::{Float, Int};
        assert_eq!(
            items(
                "0123, 0o17, 0O17, 0x1F, 0X1F, 0xff_ff, 1_000, 1000_, 01, +5, -5, -0b101, \
                 0b101, 0B101, +0x10, -0x10, -0o17, -0123, 012_3, 1__0, 0b1_0, 0o1_7, 0_x1F, -0"
            ),
            vec![
                Int(83),
                Int(15),
                Int(15),
                Int(31),
                Int(31),
                Int(65535),
                Int(1000),
                Int(1000),
                Int(1),
                Int(5),
                Int(-5),
                Int(-5),
                Int(5),
                Int(5),
                Int(16),
                Int(-16),
                Int(-15),
                Int(-83),
                Int(83),
                Int(10),
                Int(2),
                Int(15),
                Int(31),
                Int(0)
            ]
        );
        // Not octal, so they fall through to the float rule.
        assert_eq!(
            items("08, 09, 0_8"),
            vec![Float(8.0), Float(9.0), Float(8.0)]
        );
        assert_eq!(
            items("_1000, 0b, 0o, 0x, 0b102, 0o8, 123abc, 1:20, 190:20:30"),
            [
                "_1000",
                "0b",
                "0o",
                "0x",
                "0b102",
                "0o8",
                "123abc",
                "1:20",
                "190:20:30"
            ]
            .map(s)
            .to_vec()
        );
    }

    #[test]
    fn large_integers() {
        use Value::{Float, Int, UInt};
        assert_eq!(
            items(
                "9223372036854775807, 9223372036854775808, -9223372036854775808, \
                 -9223372036854775809, 18446744073709551615, 18446744073709551616, \
                 0x8000000000000000, -0x8000000000000000, 0xFFFFFFFFFFFFFFFF"
            ),
            vec![
                Int(i64::MAX),
                UInt(9_223_372_036_854_775_808),
                Int(i64::MIN),
                Float(-9.223_372_036_854_776e18),
                UInt(u64::MAX),
                Float(1.844_674_407_370_955_2e19),
                UInt(9_223_372_036_854_775_808),
                Int(i64::MIN),
                UInt(u64::MAX)
            ]
        );
        assert_eq!(
            items("-0x8000000000000001, 0x10000000000000000"),
            vec![s("-0x8000000000000001"), s("0x10000000000000000")]
        );
        assert_eq!(
            items("123456789012345678901234567890"),
            vec![Float(1.234_567_890_123_456_8e29)]
        );
    }

    #[test]
    fn floats() {
        use Value::Float;
        assert_eq!(
            items(
                "3.0, 1e3, 1E3, 1.0e+10, .5, -.5, +.5, 0.1, 0., 1., 1.e5, 1.5e-3, 1_000.5, 1__0.5_, 12e03, .1_0, 1e1_0, 5., 1e-400"
            ),
            vec![
                Float(3.0),
                Float(1000.0),
                Float(1000.0),
                Float(1e10),
                Float(0.5),
                Float(-0.5),
                Float(0.5),
                Float(0.1),
                Float(0.0),
                Float(1.0),
                Float(1e5),
                Float(0.0015),
                Float(1000.5),
                Float(10.5),
                Float(12000.0),
                Float(0.1),
                Float(1e10),
                Float(5.0),
                Float(0.0)
            ]
        );
        assert_eq!(
            items(
                ".e5, 1e, 1e+, ., -., +., 0x1p-2, 1e400, .iNf, .5.5, ._1, Infinity, NaN, inf, nan, 0.1.2"
            ),
            [
                ".e5", "1e", "1e+", ".", "-.", "+.", "0x1p-2", "1e400", ".iNf", ".5.5", "._1",
                "Infinity", "NaN", "inf", "nan", "0.1.2"
            ]
            .map(s)
            .to_vec()
        );
        let special = items(".inf, .Inf, +.INF, -.inf, .nan, .NaN");
        let f: Vec<f64> = special
            .iter()
            .map(|v| match v {
                Value::Float(f) => *f,
                _ => 0.0,
            })
            .collect();
        assert_eq!(
            f.get(..4),
            Some(
                &[
                    f64::INFINITY,
                    f64::INFINITY,
                    f64::INFINITY,
                    f64::NEG_INFINITY
                ][..]
            )
        );
        assert!(f.get(4..).is_some_and(|r| r.iter().all(|x| x.is_nan())));
        match spec("  a: -0.0\n").get("a") {
            Some(Value::Float(f)) => assert!(*f == 0.0 && f.is_sign_negative()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn timestamps_become_rfc3339_strings() {
        let cases = [
            ("2001-01-01", "2001-01-01T00:00:00Z"),
            ("2001-1-1", "2001-01-01T00:00:00Z"),
            (
                "2001-12-14t21:59:43.10-05:00",
                "2001-12-14T21:59:43.1-05:00",
            ),
            ("2001-12-14 21:59:43.10", "2001-12-14T21:59:43.1Z"),
            ("2001-12-14  21:59:43.10", "2001-12-14T21:59:43.1Z"),
            ("2001-12-14T21:59:43+00:00", "2001-12-14T21:59:43Z"),
            ("2001-12-14T21:59:43-00:00", "2001-12-14T21:59:43Z"),
            ("2001-12-14T21:59:43.000000000Z", "2001-12-14T21:59:43Z"),
            (
                "2001-12-14T21:59:43.1234567891Z",
                "2001-12-14T21:59:43.123456789Z",
            ),
            ("2001-12-14T21:59:43,5Z", "2001-12-14T21:59:43.5Z"),
            ("2001-12-14T1:2:3Z", "2001-12-14T01:02:03Z"),
            ("2001-12-14T21:59:43+05:30", "2001-12-14T21:59:43+05:30"),
            ("0000-01-01", "0000-01-01T00:00:00Z"),
            ("9999-12-31T23:59:59-01:00", "9999-12-31T23:59:59-01:00"),
            ("2001-12-14 1:2:3.4", "2001-12-14T01:02:03.4Z"),
            (
                "2001-12-14T21:59:43.120-23:59",
                "2001-12-14T21:59:43.12-23:59",
            ),
            ("2000-02-29", "2000-02-29T00:00:00Z"),
        ];
        for (input, want) in cases {
            assert_eq!(
                spec(&format!("  t: {input}\n")).get("t"),
                Some(&s(want)),
                "{input}"
            );
        }
        // Not recognised: these stay as written.
        for input in [
            "2001-12-14 21:59:43.10 -5",
            "2001-12-14T21:59:43z",
            "2001-12-14T21:59:43",
            "2001-12-14T21:59Z",
            "2001-02-29",
            "2001-13-01",
            "2001-00-01",
            "2001-01-32",
            "2001-001-01",
            "12001-01-01",
            "2001-01-01T00:00:00+25:00",
            "2001-01-01T00:00:00+23:61",
            "2001-12-14T24:00:00Z",
            "2001-12-14T23:60:00Z",
            "2001-12-14T23:59:60Z",
            "2001-12-14T21:59:43.10 -05:00",
            "2001-12-14t21:59:43.10-05:00:00",
        ] {
            assert_eq!(
                spec(&format!("  t: {input}\n")).get("t"),
                Some(&s(input)),
                "{input}"
            );
        }
        // Quoted: a string.
        assert_eq!(
            spec("  t: \"2001-01-01\"\n").get("t"),
            Some(&s("2001-01-01"))
        );
    }

    #[test]
    fn timestamp_with_offset_of_24_hours_fails_like_json_encoding() {
        let e = strict_err(&format!("{HEAD}spec:\n  k: 2001-01-01T00:00:00+24:00\n"));
        assert_eq!(
            e.message,
            "map[string]interface {}{\"apiVersion\":\"example.com/v1\", \"kind\":\"Probe\", \
             \"metadata\":map[string]interface {}{\"name\":\"p\"}, \"spec\":map[string]interface \
             {}{\"k\":time.Date(2001, time.January, 1, 0, 0, 0, 0, time.Location(\"\"))}}: json: \
             error calling MarshalJSON for type time.Time: Time.MarshalJSON: timezone hour outside \
             of range [0,23]"
        );
    }

    #[test]
    fn re_encoding_quotes_some_scalars_in_flow_collections() {
        let v = spec(
            "  a: [2001-12-14T21:59:43Z, 2001-01-01]\n  b: {t: 2001-12-14 21:59:43}\n  \
             c: 2001-12-14 21:59:43\n  d: {a: , b, c: ~}\n  e: [!!null , ~]\n",
        );
        assert_eq!(
            v.get("a"),
            Some(&Value::Seq(vec![
                s("2001-12-14T21:59:43Z"),
                s("2001-01-01T00:00:00Z")
            ]))
        );
        assert_eq!(v.get_path(&["b", "t"]), Some(&s("2001-12-14 21:59:43")));
        assert_eq!(v.get("c"), Some(&s("2001-12-14T21:59:43Z")));
        assert_eq!(v.get_path(&["d", "a"]), Some(&s("")));
        assert_eq!(v.get_path(&["d", "b"]), Some(&s("")));
        assert_eq!(v.get_path(&["d", "c"]), Some(&Value::Null));
        assert_eq!(
            v.get("e"),
            Some(&Value::Seq(vec![Value::Null, Value::Null]))
        );
        // An alias re-decides where it is used.
        let v = spec("  x: &e\n  y: [*e]\n  z: *e\n");
        assert_eq!(v.get("y"), Some(&Value::Seq(vec![s("")])));
        assert_eq!(v.get("z"), Some(&Value::Null));
    }

    #[test]
    fn explicit_tags() {
        let v = spec(
            "  a: !!int \"5\"\n  b: !!float \"1\"\n  c: !!bool \"true\"\n  d: !!null \"\"\n  \
             e: !!str 123\n  f: !!binary aGVsbG8=\n  g: !foo bar\n  h: !foo 123\n  i: ! 123\n  \
             j: !!timestamp \"2001-01-01\"\n  k: !!str 2001-01-01\n  l: !foo {a: 1}\n  \
             m: !!float 1e3\n  n: !!int 0x10\n  o: !!null\n  p: !!str\n  \
             s: !<tag:yaml.org,2002:int> \"7\"\n  t: !!binary |\n    aGVs\n    bG8=\n  \
             u: !!binary /w==\n  w: !!int \"-0b11\"\n  y: !!int 12345678901234567890\n  \
             z: !!float 0x10\n  aa: !foo\n  ac: !!str ~\n  ad: !!float \"-1\"\n  ag: <<\n  \
             ah: !!seq foo\n  aj: !!str [a]\n",
        );
        let want = [
            ("a", Value::Int(5)),
            ("b", Value::Float(1.0)),
            ("c", Value::Bool(true)),
            ("d", Value::Null),
            ("e", s("123")),
            ("f", s("hello")),
            ("g", s("bar")),
            ("h", s("123")),
            ("i", Value::Int(123)),
            ("j", s("2001-01-01T00:00:00Z")),
            ("k", s("2001-01-01")),
            ("m", Value::Float(1000.0)),
            ("n", Value::Int(16)),
            ("o", Value::Null),
            ("p", s("")),
            ("s", Value::Int(7)),
            ("t", s("hello")),
            ("u", s("\u{fffd}")),
            ("w", Value::Int(-3)),
            ("y", Value::UInt(12_345_678_901_234_567_890)),
            ("z", Value::Float(16.0)),
            ("aa", s("")),
            ("ac", s("~")),
            ("ad", Value::Float(-1.0)),
            ("ag", s("<<")),
            ("ah", s("foo")),
            ("aj", Value::Seq(vec![s("a")])),
        ];
        for (k, want) in want {
            assert_eq!(v.get(k), Some(&want), "{k}");
        }
        assert_eq!(v.get_path(&["l", "a"]), Some(&Value::Int(1)));
    }

    #[test]
    fn undecodable_tagged_scalars() {
        let cases = [
            ("!!int \"abc\"", "cannot decode !!str `abc` as a !!int"),
            ("!!int 1.5", "cannot decode !!float `1.5` as a !!int"),
            ("!!bool yes", "cannot decode !!str `yes` as a !!bool"),
            ("!!float abc", "cannot decode !!str `abc` as a !!float"),
            ("!!null foo", "cannot decode !!str `foo` as a !!null"),
            (
                "!!timestamp \"2001-12-14 21:59:43.10 -5\"",
                "cannot decode !!str `2001-12-14 21:59:43.10 -5` as a !!timestamp",
            ),
            (
                "!!binary \"@@@\"",
                "!!binary value contains invalid base64 data",
            ),
            (
                "!!float 12345678901234567890",
                "cannot decode !!int `12345678901234567890` as a !!float",
            ),
        ];
        for (input, msg) in cases {
            let e = strict_err(&format!("{HEAD}spec:\n  k: {input}\n"));
            assert_eq!(
                e.message,
                format!("map[string]interface {{}}(nil): yaml: {msg}")
            );
        }
        let e = strict_err(&format!("{HEAD}spec:\n  ? [a]\n  : x\n"));
        assert_eq!(
            e.message,
            "map[string]interface {}(nil): yaml: invalid map key: []interface {}{\"a\"}"
        );
        let e = strict_err(&format!("{HEAD}spec:\n  ? {{a: 1}}\n  : x\n"));
        assert_eq!(
            e.message,
            "map[string]interface {}(nil): yaml: invalid map key: map[string]interface {}{\"a\":1}"
        );
    }

    #[test]
    fn anchors_and_merge_keys() {
        let v = strict(&format!(
            "{HEAD}x: &a {{k: 1, j: 1}}\ny: &b {{k: 2, m: 2}}\nspec:\n  <<: [*a, *b]\n  j: 0\n"
        ));
        let top = v
            .first()
            .and_then(|d| d.get("spec"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(top.get("j"), Some(&Value::Int(0)));
        assert_eq!(top.get("k"), Some(&Value::Int(1)));
        assert_eq!(top.get("m"), Some(&Value::Int(2)));
        assert!(top.get("<<").is_none());

        let v = spec_of(
            "  s: &s [1, 2]\n  m: &m {q: [1, {r: 2}]}\n  a: *s\n  b: *m\n  c:\n    <<: *m\n    \
             q: 3\n  d: &n\n    <<: *m\n    e: 1\n  f:\n    <<: *n\n  g: &x 1\n  h: &x 2\n  i: *x\n",
        );
        assert_eq!(v.get("a"), v.get("s"));
        assert_eq!(v.get("b"), v.get("m"));
        assert_eq!(v.get_path(&["c", "q"]), Some(&Value::Int(3)));
        assert_eq!(v.get_path(&["f", "e"]), Some(&Value::Int(1)));
        assert_eq!(v.get_path(&["f", "q"]), v.get_path(&["m", "q"]));
        assert_eq!(v.get("i"), Some(&Value::Int(2)));

        let v = spec("  <<: {a: 1, b: {c: 1}}\n  b: 2\n");
        assert_eq!(v.get("a"), Some(&Value::Int(1)));
        assert_eq!(v.get("b"), Some(&Value::Int(2)));
        // Only a plain `<<` merges; the first `<<` entry is the one removed.
        let v = spec("  <<: {a: 1}\n  \"<<\": 2\n");
        assert_eq!(v.get("<<"), Some(&Value::Int(2)));
        assert_eq!(v.get("a"), Some(&Value::Int(1)));
        assert_eq!(
            spec("  <<: []\n  a: 1\n").as_map().map(Mapping::len),
            Some(1)
        );
    }

    fn spec_of(body: &str) -> Value {
        spec(body)
    }

    #[test]
    fn merge_key_errors() {
        let cases = [
            (
                "x: &a 1\nspec:\n  <<: *a\n",
                "invalid map merge: received alias for a non-map value",
            ),
            (
                "spec:\n  <<: 1\n",
                "map merge requires map or sequence of maps as the value",
            ),
            (
                "spec:\n  <<: ~\n",
                "map merge requires map or sequence of maps as the value",
            ),
            (
                "x: &a {k: 1}\nspec:\n  <<: [*a, [1]]\n",
                "invalid map merge: received a nested sequence",
            ),
            (
                "x: &a {k: 1}\nspec:\n  <<: [*a, 1]\n",
                "map merge requires map or sequence of maps as the value",
            ),
            (
                "x: &a {k: 1}\nspec:\n  <<: *a\n  <<: *a\n",
                "duplicate merge key",
            ),
        ];
        for (body, msg) in cases {
            assert_eq!(strict_err(&format!("{HEAD}{body}")).message, msg, "{body}");
        }
    }

    #[test]
    fn documents_are_split_like_kyaml() {
        let docs = strict("a: 1\n---\n# only a comment\n---\n\n---\nb: 2\n...\nc: 3\n");
        assert_eq!(docs.len(), 4);
        assert_eq!(docs.get(1), Some(&Value::Null));
        assert_eq!(docs.get(2), Some(&Value::Null));
        // Everything after the first document of a piece is ignored.
        assert_eq!(docs.get(3).and_then(|d| d.get("c")), None);
        assert_eq!(docs.get(3).and_then(|d| d.get("b")), Some(&Value::Int(2)));
        // A leading `---` and a trailing one without newline.
        assert_eq!(strict("---\na: 1\n---").len(), 1);
        assert_eq!(strict("").len(), 0);
        assert_eq!(strict("# nothing\n"), vec![Value::Null]);
        assert_eq!(strict("--- # c\na: 1\n--- # c\nb: 1\n").len(), 2);
        let e = strict_err("a: 1\n--- {a: 1}\n");
        assert_eq!(e.message, "invalid document separator: --- {a: 1}");
        assert_eq!(e.line, 2);
        assert_eq!(
            strict_err("a: 1\n---foo\nb: 2\n").message,
            "invalid document separator: ---foo"
        );
    }

    #[test]
    fn syntax_error_lines_count_from_the_piece() {
        let e = strict_err(&format!("{HEAD}x: 1\n---\n{HEAD}y: 2\nz: [\n"));
        assert_eq!(
            e.message,
            "yaml: line 6: did not find expected node content"
        );
    }

    #[test]
    fn syntax_errors() {
        let cases = [
            (
                "a: 1\nb: 2\nc:\n  d: x\n  e: y\n f: z\n",
                "yaml: line 5: did not find expected key",
            ),
            (
                "a: 1\nb: 2\nc:\n  d: x\n  e: y: z\n",
                "yaml: line 5: mapping values are not allowed in this context",
            ),
            (
                "k: -\n",
                "yaml: block sequence entries are not allowed in this context",
            ),
            (
                "a1: 1\nk: -\n",
                "yaml: line 2: block sequence entries are not allowed in this context",
            ),
            (
                "apiVersion: v1\nkind: Probe\nmetadata:\n  name: p\nspec:\n  selector:\n    app: x\n    - name: http\n",
                "yaml: line 6: did not find expected key",
            ),
            ("a:\n- x\nb\n", "yaml: line 3: could not find expected ':'"),
            (
                "spec:\n  a: [x, y]]\n",
                "yaml: line 1: did not find expected key",
            ),
            (
                "spec:\n  a: *nope\n",
                "yaml: unknown anchor 'nope' referenced",
            ),
            (
                "a: 1\nspec:\n  a: \"x\\/y\"\n",
                "yaml: line 3: found unknown escape character",
            ),
            (
                "%YAML 1.2\n---\na: 1\n",
                "yaml: found incompatible YAML document",
            ),
            (
                "%YAML 1.1\n---\na: 1\n",
                "yaml: line 1: did not find expected <document start>",
            ),
            (
                "%YAML 1.1\na: 1\n",
                "yaml: line 2: mapping values are not allowed in this context",
            ),
            (
                "a: 1\n\tb: 2\n",
                "yaml: found a tab character that violates indentation",
            ),
            (
                "x: 1\nspec:\n\ta: 1\n",
                "yaml: line 3: found character that cannot start any token",
            ),
        ];
        for (src, msg) in cases {
            assert_eq!(strict_err(src).message, msg, "{src:?}");
        }
        // Positions of the problem in the whole input.
        let e = strict_err("a: 1\n---\nb: [\n");
        assert_eq!(e.line, 4);
    }

    #[test]
    fn duplicate_keys_fail_in_resources() {
        let e = strict_err(&format!(
            "---\n{HEAD}spec:\n  a: |\n    x\n\n    y\n  b: 1\n  a: 2\n  c:\n    d: 1\n    d: 2\n  \
             c: 3\n  e: {{f: 1, f: 2}}\n"
        ));
        assert_eq!(
            e.message,
            "map[string]interface {}(nil): yaml: unmarshal errors:\n  line 11: mapping key \"a\" \
             already defined at line 6\n  line 15: mapping key \"c\" already defined at line 12"
        );
        let e = strict_err(&format!(
            "# top comment\n\n{HEAD}\n# comment about spec\nspec:\n  a: 1   # trailing\n\n  \
             # head comment\n  b: [1,\n    2]\n  c: \"x\n    y\"\n  d:\n    e\n  a: 2\n"
        ));
        assert_eq!(
            e.message,
            "map[string]interface {}(nil): yaml: unmarshal errors:\n  line 14: mapping key \"a\" \
             already defined at line 9"
        );
        // A quoted and a plain key with the same text collide too.
        let e = strict_err(&format!("{HEAD}spec:\n  list:\n  - a: 1\n    \"a\": 2\n"));
        assert!(
            e.message
                .contains("mapping key \"a\" already defined at line 7")
        );
    }

    #[test]
    fn null_keys_become_duplicates_and_empty_keys_strings() {
        let e = strict_err(&format!("{HEAD}spec:\n  ~: x\n  a: 1\n"));
        assert_eq!(
            e.message,
            "map[string]interface {}(nil): yaml: unmarshal errors:\n  line 8: mapping key \"~\" \
             already defined at line 6"
        );
        let e = strict_err(&format!(
            "{HEAD}spec:\n  base: &b {{x: 1, y: 2}}\n  o:\n    <<: *b\n    y: 3\n    ~: z\n"
        ));
        assert_eq!(
            e.message,
            "map[string]interface {}(nil): yaml: unmarshal errors:\n  line 11: mapping key \"~\" \
             already defined at line 9"
        );
        let v = spec("  ? \n  : x\n  d: 2\n");
        assert_eq!(v.get(""), Some(&s("x")));
    }

    #[test]
    fn duplicate_keys_last_wins_in_kustomizations() {
        let docs = lenient("namePrefix: a\nnamePrefix: b\nlabels: {a: \"1\", \"a\": x}\n");
        let doc = docs.first().cloned().unwrap_or_default();
        assert_eq!(doc.get("namePrefix"), Some(&s("b")));
        assert_eq!(doc.get_path(&["labels", "a"]), Some(&s("x")));
    }

    #[test]
    fn non_string_keys_fail_in_resources() {
        let e = strict_err(&format!("{HEAD}spec:\n  1: x\n  a: 1\n"));
        assert_eq!(
            e.message,
            "map[string]interface {}{\"apiVersion\":\"example.com/v1\", \"kind\":\"Probe\", \
             \"metadata\":map[string]interface {}{\"name\":\"p\"}, \"spec\":map[interface \
             {}]interface {}{\"a\":1, 1:\"x\"}}: json: unsupported type: map[interface {}]interface {}"
        );
        let e = strict_err(&format!(
            "{HEAD}spec:\n  !!binary aGk=: x\n  z: [1, \"s\", null, 1.5, true, {{a: 1}}, \
             9223372036854775808, -0.0, 1e300, 1e21, 123456789.0, 0.000001, 0.0000001, \
             \"q\\\"uote\\u00e9\\x01\\t\", 2001-01-01]\n"
        ));
        assert_eq!(
            e.message,
            "map[string]interface {}{\"apiVersion\":\"example.com/v1\", \"kind\":\"Probe\", \
             \"metadata\":map[string]interface {}{\"name\":\"p\"}, \"spec\":map[interface \
             {}]interface {}{\"hi\":\"x\", \"z\":[]interface {}{1, \"s\", interface {}(nil), 1.5, \
             true, map[string]interface {}{\"a\":1}, 0x8000000000000000, -0, 1e+300, 1e+21, \
             1.23456789e+08, 1e-06, 1e-07, \"q\\\"uoteé\\x01\\t\", time.Date(2001, time.January, 1, \
             0, 0, 0, 0, time.UTC)}}}: json: unsupported type: map[interface {}]interface {}"
        );
        // Quoted keys are strings...
        let v = spec("  \"1\": x\n  \"true\": y\n");
        assert_eq!(v.get("1"), Some(&s("x")));
        assert_eq!(v.get("true"), Some(&s("y")));
        // ... except in annotations, which kustomize writes back unquoted.
        let e = strict_err(
            "apiVersion: v1\nkind: Probe\nmetadata:\n  name: p\n  annotations:\n    \"1\": x\n    a: b\n",
        );
        assert_eq!(
            e.message,
            "map[string]interface {}{\"apiVersion\":\"v1\", \"kind\":\"Probe\", \
             \"metadata\":map[string]interface {}{\"annotations\":map[interface {}]interface \
             {}{\"a\":\"b\", 1:\"x\"}, \"name\":\"p\"}}: json: unsupported type: map[interface \
             {}]interface {}"
        );
    }

    #[test]
    fn go_key_order_in_error_messages() {
        let e = strict_err(
            "apiVersion: example.com/v1\nkind: Probe\nmetadata:\n  name: p\n  annotations:\n    \
             \"1\": x\n    \"true\": y\n    \"1.5\": z\n    \"2001-01-01\": w\n    \
             \"9223372036854775808\": u\n    \"a\": b\n    \"~\": n\n    \"-1\": m\n    \
             \"false\": f\n    \"2.5\": g\n    \"2001-12-14t21:59:43.10-05:00\": tz\n    \
             \"2001-12-14t21:59:43.10+00:00\": tz0\n    \"2001-12-14t21:59:43.123456789Z\": tzz\n",
        );
        assert_eq!(
            e.message,
            "map[string]interface {}{\"apiVersion\":\"example.com/v1\", \"kind\":\"Probe\", \
             \"metadata\":map[string]interface {}{\"annotations\":map[interface {}]interface \
             {}{interface {}(nil):\"n\", \"a\":\"b\", 0x8000000000000000:\"u\", -1:\"m\", 1:\"x\", \
             1.5:\"z\", 2.5:\"g\", false:\"f\", true:\"y\", time.Date(2001, time.January, 1, 0, 0, \
             0, 0, time.UTC):\"w\", time.Date(2001, time.December, 14, 21, 59, 43, 100000000, \
             time.Local):\"tz0\", time.Date(2001, time.December, 14, 21, 59, 43, 100000000, \
             time.Location(\"\")):\"tz\", time.Date(2001, time.December, 14, 21, 59, 43, \
             123456789, time.UTC):\"tzz\"}, \"name\":\"p\"}}: json: unsupported type: \
             map[interface {}]interface {}"
        );
    }

    #[test]
    fn annotations_keep_their_source_text() {
        let docs = strict(
            "apiVersion: v1\nkind: Probe\nmetadata:\n  name: p\n  annotations:\n    a: 1\n    \
             b: True\n    c: 2001-01-01\n    d: 0x10\n    e: ~\n    f: 1.50\n    \
             g: !!binary aGVsbG8=\n    h: [1]\n    i: {j: k}\n    l: |\n      x\n      y\n    \
             m:\n    n: &an 0x20\n    o: *an\n    a: 7\n    p: null\n    q: \"yes\"\n",
        );
        let ann = docs
            .first()
            .and_then(|d| d.get_path(&["metadata", "annotations"]))
            .cloned()
            .unwrap_or_default();
        let want = [
            ("a", "7"),
            ("b", "True"),
            ("c", "2001-01-01"),
            ("d", "0x10"),
            ("e", "~"),
            ("f", "1.50"),
            ("g", "aGVsbG8="),
            ("h", ""),
            ("i", ""),
            ("l", "x\ny\n"),
            ("m", ""),
            ("n", "0x20"),
            ("o", "0x20"),
            ("p", "null"),
            ("q", "yes"),
        ];
        for (k, v) in want {
            assert_eq!(ann.get(k), Some(&s(v)), "{k}");
        }
        // Labels are not rewritten.
        let v =
            strict("apiVersion: v1\nkind: Probe\nmetadata:\n  name: p\n  labels:\n    d: 0x10\n");
        assert_eq!(
            v.first()
                .and_then(|d| d.get_path(&["metadata", "labels", "d"])),
            Some(&Value::Int(16))
        );
        // Merges into annotations use the merged text too.
        let v = strict(
            "apiVersion: v1\nkind: Probe\nmetadata:\n  name: p\n  annotations:\n    a: 1\n    \
             <<: {b: 2, c: [1]}\n",
        );
        let ann = v
            .first()
            .and_then(|d| d.get_path(&["metadata", "annotations"]));
        assert_eq!(ann.and_then(|a| a.get("b")), Some(&s("2")));
        assert_eq!(ann.and_then(|a| a.get("c")), Some(&s("")));
    }

    #[test]
    fn block_and_quoted_scalars() {
        let v = spec(
            "  lit: |\n    line1\n      indented\n    line3\n\n  keep: |+\n    a\n\n  strip: |-\n    \
             a\n    b\n  fold: >\n    a\n    b\n\n    c\n     d\n    e\n  fold2: >-\n    x\n  \
             indent: |2\n      two\n  plain: a\n    b\n\n    c\n  dq: \"a\n    b\\\n    c\n\n    \
             d\"\n  sq: 'it''s\n    x'\n  empty_lit: |\n  last: x\n",
        );
        let want = [
            ("lit", "line1\n  indented\nline3\n"),
            ("keep", "a\n\n"),
            ("strip", "a\nb"),
            ("fold", "a b\nc\n d\ne\n"),
            ("fold2", "x"),
            ("indent", "  two\n"),
            ("plain", "a b\nc"),
            ("dq", "a bc\nd"),
            ("sq", "it's x"),
            ("empty_lit", ""),
        ];
        for (k, want) in want {
            assert_eq!(v.get(k), Some(&s(want)), "{k}");
        }
    }

    #[test]
    fn escapes_and_comments() {
        let v = spec(
            "  esc: \"\\x41\\u00e9\\U0001F600\\t\\\"\\\\\\0\\a\\b\\e\\f\\n\\r\\v\\L\\P\\N\\_\\ \"\n  \
             a: x # comment\n  b: \"y\" #c\n  c: z#notcomment\n  d: [1, 2] # c\n  e: \"#\"\n",
        );
        assert_eq!(
            v.get("esc"),
            Some(&s(
                "Aé😀\t\"\\\0\u{7}\u{8}\u{1b}\u{c}\n\r\u{b}\u{2028}\u{2029}\u{85}\u{a0} "
            ))
        );
        assert_eq!(v.get("a"), Some(&s("x")));
        assert_eq!(v.get("b"), Some(&s("y")));
        assert_eq!(v.get("c"), Some(&s("z#notcomment")));
        assert_eq!(v.get("e"), Some(&s("#")));
    }

    #[test]
    fn crlf_bom_tabs_and_json() {
        let docs = strict(
            "\u{feff}apiVersion: v1\r\nkind: Probe\r\nmetadata:\r\n  name: p\r\nspec:\r\n  \
             a: \"x\r\n    y\"\r\n  b: |\r\n    l1\r\n    l2\r\n---\r\nkind: Q\r\n",
        );
        assert_eq!(docs.len(), 2);
        let sp = docs
            .first()
            .and_then(|d| d.get("spec"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(sp.get("a"), Some(&s("x y")));
        assert_eq!(sp.get("b"), Some(&s("l1\nl2\n")));
        assert_eq!(
            docs.first().and_then(|d| d.get("apiVersion")),
            Some(&s("v1"))
        );
        // A tab after `:` separates like a space.
        let v = spec_of("  a:\tx\n  b: \"x\ty\"\n");
        assert_eq!(v.get("a"), Some(&s("x")));
        assert_eq!(v.get("b"), Some(&s("x\ty")));
        let docs = strict(
            "{\"apiVersion\": \"v1\", \"kind\": \"Probe\", \"spec\": {\"a\": 1.0, \"b\": 1e2, \
             \"c\": null, \"d\": [true], \"e\": \"2001-01-01\", \"f\": 12345678901234567890, \
             \"g\": \"\\u00e9\"}}",
        );
        let sp = docs
            .first()
            .and_then(|d| d.get("spec"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(sp.get("a"), Some(&Value::Float(1.0)));
        assert_eq!(sp.get("b"), Some(&Value::Float(100.0)));
        assert_eq!(sp.get("c"), Some(&Value::Null));
        assert_eq!(sp.get("e"), Some(&s("2001-01-01")));
        assert_eq!(sp.get("f"), Some(&Value::UInt(12_345_678_901_234_567_890)));
        assert_eq!(sp.get("g"), Some(&s("é")));
        // go-yaml has no surrogate pairs in `\u` escapes (JSON's way to
        // write characters beyond U+FFFF).
        assert_eq!(
            strict_err("{\"a\": \"\\ud83d\\ude00\"}").message,
            "yaml: found invalid Unicode character escape code"
        );
    }

    #[test]
    fn kustomization_scalars_follow_go_yaml_v2() {
        let docs = lenient(
            "a: [yes, no, on, Off, y, N, true, ~, 0x10, 0123, 2001-01-01, \
             2001-12-14t21:59:43.10-05:00, 1.5, !!binary aGk=, !!int \"5\", ! 123, !foo bar]\n",
        );
        let want = vec![
            Value::Bool(true),
            Value::Bool(false),
            Value::Bool(true),
            Value::Bool(false),
            Value::Bool(true),
            Value::Bool(false),
            Value::Bool(true),
            Value::Null,
            Value::Int(16),
            Value::Int(83),
            s("2001-01-01"),
            s("2001-12-14t21:59:43.10-05:00"),
            Value::Float(1.5),
            s("hi"),
            Value::Int(5),
            s("123"),
            s("bar"),
        ];
        assert_eq!(
            docs.first().and_then(|d| d.get("a")),
            Some(&Value::Seq(want))
        );
        // Keys are stringified like sigs.k8s.io/yaml does.
        let docs = lenient(
            "m: {1: a, 1.5: b, yes: c, 2001-01-01: d, 123456789012345678901234567890: e, x: f}\n",
        );
        let m = docs
            .first()
            .and_then(|d| d.get("m"))
            .cloned()
            .unwrap_or_default();
        for (k, v) in [
            ("1", "a"),
            ("1.5", "b"),
            ("true", "c"),
            ("2001-01-01", "d"),
            ("1.2345679e+29", "e"),
            ("x", "f"),
        ] {
            assert_eq!(m.get(k), Some(&s(v)), "{k}");
        }
        // A merge overrides what was written before it.
        let docs = lenient("l:\n  a: b\n  <<: {a: c}\n");
        assert_eq!(
            docs.first().and_then(|d| d.get_path(&["l", "a"])),
            Some(&s("c"))
        );
    }

    #[test]
    fn kustomization_errors() {
        assert_eq!(
            lenient_err("m: {18446744073709551615: a}\n"),
            "unsupported map key of type: uint64, key: 0xffffffffffffffff, value: \"a\""
        );
        assert_eq!(
            lenient_err("m: {~: a}\n"),
            "unsupported map key of type: %!s(<nil>), key: <nil>, value: \"a\""
        );
        assert_eq!(
            lenient_err("a: !!int abc\n"),
            "yaml: cannot decode !!str `abc` as a !!int"
        );
        assert_eq!(
            lenient_err("a: [\n"),
            "yaml: line 1: did not find expected node content"
        );
        assert_eq!(
            lenient_err("m: {[a]: b}\n"),
            "yaml: invalid map key: []interface {}{\"a\"}"
        );
        assert_eq!(
            lenient_err("m: {a: .inf}\n"),
            "json: unsupported value: +Inf"
        );
        assert_eq!(
            lenient_err("m: {a: .nan}\n"),
            "json: unsupported value: NaN"
        );
        // Only the first document matters to kustomize.
        let docs = lenient("a: 1\n---\nb: [\n");
        assert_eq!(docs.len(), 1);
        assert_eq!(lenient("a: 1\n---\nb: 2\n").len(), 2);
        assert_eq!(lenient("---\n# c\n"), vec![Value::Null]);
    }

    #[test]
    fn nesting_and_alias_limits() {
        let deep_ok = format!("{}x\n", "- ".repeat(9_990));
        assert_eq!(strict(&deep_ok).len(), 1);
        let too_deep = format!("{}x\n", "- ".repeat(10_001));
        assert_eq!(
            strict_err(&too_deep).message,
            "yaml: exceeded max depth of 10000"
        );
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        let mut prev = 'a';
        for c in 'b'..='z' {
            let refs = vec![format!("*{prev}"); 10].join(", ");
            bomb.push_str(&format!("{c}: &{c} [{refs}]\n"));
            prev = c;
        }
        assert_eq!(
            strict_err(&bomb).message,
            "yaml: document contains excessive aliasing"
        );
        assert_eq!(
            lenient_err(&bomb),
            "yaml: document contains excessive aliasing"
        );
    }

    #[test]
    fn go_repr_matches_fmt() {
        let mut m = Mapping::new();
        m.insert(
            "b".into(),
            Value::Seq(vec![Value::Null, Value::Float(f64::INFINITY)]),
        );
        m.insert("a".into(), Value::UInt(u64::MAX));
        m.insert("c".into(), s("x\u{a0}\"\n"));
        m.insert("d".into(), Value::Float(1e21));
        assert_eq!(
            go_repr(&Value::Map(m)),
            "map[string]interface {}{\"a\":0xffffffffffffffff, \"b\":[]interface \
             {}{interface {}(nil), +Inf}, \"c\":\"x\\u00a0\\\"\\n\", \"d\":1e+21}"
        );
        assert_eq!(go_format_float(123_456.0, false), "123456");
        assert_eq!(go_format_float(1_234_567.0, false), "1.234567e+06");
        assert_eq!(go_format_float(0.0001, false), "0.0001");
        assert_eq!(go_format_float(-1.5e-7, false), "-1.5e-07");
        assert_eq!(
            go_format_float(1.234_567_890_123_456_8e29, true),
            "1.2345679e+29"
        );
    }

    #[test]
    fn internal_helpers() {
        assert_eq!(go_base64_decode("aGVsbG8="), Some(b"hello".to_vec()));
        assert_eq!(go_base64_decode("aGVs\nbG8="), Some(b"hello".to_vec()));
        assert_eq!(go_base64_decode("aGVsbG8"), None);
        assert_eq!(go_base64_decode("a=Vs"), None);
        assert_eq!(go_lossy_utf8(b"a\xe2\x82b"), "a\u{fffd}\u{fffd}b");
        assert!(go_underscore_ok("1_0") && !go_underscore_ok("_1") && !go_underscore_ok("1_"));
        assert_eq!(go_parse_int("-0x8000000000000000"), Some(i64::MIN));
        assert_eq!(go_parse_int("0"), Some(0));
        assert_eq!(go_parse_uint("+1"), None);
    }
}
