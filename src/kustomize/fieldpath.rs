//! kyaml field paths as kustomize's replacements use them.
//!
//! A dotted path (`spec.template.spec.containers.[name=nginx].image`) is
//! split the way kyaml's `SmarterPathSplitter` does: `\.` escapes a dot,
//! and a bracketed element keeps its dots (`metadata.annotations.[a.b/c]`);
//! brackets holding `=` stay a list-element selector, other brackets are
//! dropped. Each element is then one of a map key, a list index, a list
//! element selector `[key=value]` (`[=value]` for lists of scalars) or the
//! wildcard `*` (every element of a list).
//!
//! Two walkers exist because kustomize uses two with different rules:
//! * [`get`] (kyaml `PathGetter`, used for a replacement's *source*): list
//!   selectors compare text exactly and pick the first match, `-` is the
//!   last element, blank path elements are ignored.
//! * [`visit_matches`] / [`find_all`] (kyaml `PathMatcher`, used for
//!   *targets*): list selector values are unanchored regular expressions
//!   matched against every element, `*` fans out, and with `create` missing
//!   maps, lists, list elements and the leaf are made.
//!
//! The module also holds the YAML scalar resolution kyaml applies to text
//! it writes into untyped nodes ([`resolve_scalar`]), and a small YAML
//! rendering of values ([`render`]) used for regex matching and messages.

use regex::Regex;

use crate::kustomize::yaml::{Mapping, PathSeg, Value};

/// One element of a parsed dotted path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathElem {
    /// A map key (also `-` and negative numbers, which only the source
    /// walker gives a meaning).
    Field(String),
    /// A non-negative list index.
    Index(usize),
    /// `[key=value]`; `key` is empty for `[=value]` (lists of scalars).
    Match { key: String, value: String },
    /// `*`: every element of a list.
    Wildcard,
    /// A bracketed element without `=`; an error once the walk reaches it.
    Malformed(String),
}

/// What `create` makes at the end of a path: the kind of the value that
/// will be written there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateKind {
    Scalar,
    Map,
    Seq,
}

impl CreateKind {
    /// The kind matching a value (null and other scalars are `Scalar`).
    pub fn of(v: &Value) -> CreateKind {
        match v {
            Value::Map(_) => CreateKind::Map,
            Value::Seq(_) => CreateKind::Seq,
            _ => CreateKind::Scalar,
        }
    }
}

/// Why [`visit_matches`] stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VisitError {
    /// The path could not be walked (wrong node kind, bad index, bad regex).
    Path(String),
    /// The callback refused a node.
    Apply(String),
}

const MALFORMED_MSG: &str =
    "list path element must contain fieldName=fieldValue for element to match";

/// Splits on `delim`, joining a piece that ends in a backslash with the next
/// one (the backslash is dropped), like kyaml's `PathSplitter`; a leading
/// delimiter is ignored (`/a/b`, `.metadata.name`).
pub fn split_escaped(path: &str, delim: char) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut pieces: Vec<&str> = path.split(delim).collect();
    if pieces.len() > 1 && pieces[0].is_empty() {
        pieces.remove(0);
    }
    for piece in pieces {
        match out.last_mut() {
            Some(last) if last.ends_with('\\') => {
                last.pop();
                last.push(delim);
                last.push_str(piece);
            }
            _ => out.push(piece.to_string()),
        }
    }
    out
}

/// kyaml's `SmarterPathSplitter` with `.`: escaped dots and bracketed
/// elements survive; brackets without `=` are removed.
pub fn split_dotted(path: &str) -> Vec<String> {
    let split = split_escaped(path, '.');
    let mut out = Vec::new();
    let mut it = split.into_iter();
    while let Some(elem) = it.next() {
        if elem.starts_with('[') && !elem.ends_with(']') {
            let mut joined = elem;
            for more in it.by_ref() {
                joined.push('.');
                joined.push_str(&more);
                if more.ends_with(']') {
                    break;
                }
            }
            if joined.contains('=') {
                out.push(joined);
            } else {
                out.push(joined.trim_matches(|c| c == '[' || c == ']').to_string());
            }
        } else {
            out.push(elem);
        }
    }
    out
}

/// Classifies one path element (kyaml's order: index, `[...]`, `*`, key).
pub fn classify(seg: &str) -> PathElem {
    if let Ok(i) = seg.parse::<i64>()
        && let Ok(idx) = usize::try_from(i)
    {
        return PathElem::Index(idx);
    }
    if seg.starts_with('[') && seg.ends_with(']') {
        let inner = seg.strip_suffix(']').unwrap_or(seg);
        let inner = inner.strip_prefix('[').unwrap_or(inner);
        return match inner.split_once('=') {
            Some((k, v)) => PathElem::Match {
                key: k.to_string(),
                value: v.to_string(),
            },
            None => PathElem::Malformed(seg.to_string()),
        };
    }
    if seg == "*" {
        return PathElem::Wildcard;
    }
    PathElem::Field(seg.to_string())
}

/// Parses a dotted path into elements. Never fails today (a malformed
/// bracket only errors when a walk reaches it, as in kyaml); the `Result`
/// leaves room for stricter checks.
pub fn parse_dotted(path: &str) -> Result<Vec<PathElem>, String> {
    Ok(split_dotted(path).iter().map(|s| classify(s)).collect())
}

/// kyaml node kind name of a value, for messages.
fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Map(_) => "MappingNode",
        Value::Seq(_) => "SequenceNode",
        _ => "ScalarNode",
    }
}

fn wrong_kind(want: &str, got: &Value) -> String {
    format!(
        "wrong node kind: expected {want} but got {}: node contents:\n{}",
        kind_name(got),
        render(got)
    )
}

/// The text kyaml keeps for a scalar node (`""` for maps and lists).
pub fn scalar_text(v: &Value) -> String {
    match v {
        Value::Map(_) | Value::Seq(_) => String::new(),
        other => other.scalar_to_string().unwrap_or_default(),
    }
}

// ---------------------------------------------------------------------------
// Source lookup (PathGetter)

/// Looks a value up with kyaml `PathGetter` rules (replacement sources).
/// `Ok(None)` when something on the way is missing or null; `Err` when a
/// node of the wrong kind is in the way or an element is malformed.
pub fn get<'a>(root: &'a Value, path: &str) -> Result<Option<&'a Value>, String> {
    Ok(locate(root, path)?.and_then(|at| super::resource::value_at(root, &at)))
}

/// Where [`get`] finds its value: the keys and list positions leading to
/// it. A replacement's value is that node itself (a kyaml pointer), so it is
/// followed by position, not by looking the path up again: later writes only
/// replace nodes or append to maps and lists, never move existing nodes.
pub fn locate(root: &Value, path: &str) -> Result<Option<Vec<PathSeg>>, String> {
    let parts: Vec<String> = split_dotted(path)
        .into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let mut cur = root;
    let mut at = Vec::with_capacity(parts.len());
    for part in &parts {
        let next = match classify(part) {
            PathElem::Index(i) => {
                get_elements(cur)?.and_then(|items| items.get(i).map(|v| (PathSeg::Index(i), v)))
            }
            PathElem::Match { key, value } => get_elements(cur)?.and_then(|items| {
                let found = find_exact(items, &key, &value)?;
                let i = items.iter().position(|e| std::ptr::eq(e, found))?;
                Some((PathSeg::Index(i), found))
            }),
            PathElem::Malformed(_) => return Err(MALFORMED_MSG.to_string()),
            PathElem::Wildcard => get_field(cur, "*")?.map(|v| (PathSeg::Key("*".to_string()), v)),
            PathElem::Field(f) => {
                if f == "-" {
                    get_elements(cur)?.and_then(|items| {
                        let i = items.len().checked_sub(1)?;
                        Some((PathSeg::Index(i), &items[i]))
                    })
                } else if let Ok(n) = f.parse::<i64>() {
                    return Err(format!("array index {n} cannot be negative"));
                } else {
                    get_field(cur, &f)?.map(|v| (PathSeg::Key(f.clone()), v))
                }
            }
        };
        match next {
            Some((seg, v)) => {
                at.push(seg);
                cur = v;
            }
            None => return Ok(None),
        }
    }
    Ok(Some(at))
}

fn get_field<'a>(node: &'a Value, name: &str) -> Result<Option<&'a Value>, String> {
    match node {
        Value::Null => Ok(None),
        Value::Map(m) => Ok(m.get(name)),
        other => Err(wrong_kind("MappingNode", other)),
    }
}

fn get_elements(node: &Value) -> Result<Option<&[Value]>, String> {
    match node {
        Value::Null => Ok(None),
        Value::Seq(items) => Ok(Some(items.as_slice())),
        other => Err(wrong_kind("SequenceNode", other)),
    }
}

fn find_exact<'a>(items: &'a [Value], key: &str, value: &str) -> Option<&'a Value> {
    if key.is_empty() {
        return items.iter().find(|e| scalar_text(e) == value);
    }
    items.iter().find(|e| {
        e.as_map()
            .and_then(|m| m.get(key))
            .is_some_and(|f| scalar_text(f) == value)
    })
}

// ---------------------------------------------------------------------------
// Target matching (PathMatcher)

/// Every value the path matches, with kyaml `PathMatcher` rules and no
/// creation. `Err` when the walk meets a node of the wrong kind.
pub fn find_all<'a>(root: &'a Value, path: &[PathElem]) -> Result<Vec<&'a Value>, String> {
    let mut out = Vec::new();
    find_into(root, path, &mut out)?;
    Ok(out)
}

/// Like [`find_all`], but a failed walk yields no values.
pub fn lookup<'a>(root: &'a Value, path: &[PathElem]) -> Vec<&'a Value> {
    find_all(root, path).unwrap_or_default()
}

fn find_into<'a>(
    node: &'a Value,
    path: &[PathElem],
    out: &mut Vec<&'a Value>,
) -> Result<(), String> {
    let Some((first, rest)) = path.split_first() else {
        out.push(node);
        return Ok(());
    };
    match first {
        PathElem::Field(name) => {
            if let Some(child) = get_field(node, name)? {
                find_into(child, rest, out)?;
            }
            Ok(())
        }
        PathElem::Index(i) => {
            let items = get_elements(node)?.unwrap_or(&[]);
            match items.get(*i) {
                Some(child) => find_into(child, rest, out),
                None => Err(index_error(*i, items.len())),
            }
        }
        PathElem::Wildcard => {
            for child in get_elements(node)?.unwrap_or(&[]) {
                find_into(child, rest, out)?;
            }
            Ok(())
        }
        PathElem::Malformed(_) => Err(MALFORMED_MSG.to_string()),
        PathElem::Match { key, value } => {
            let items = get_elements(node)?.unwrap_or(&[]);
            let mut re: Option<Regex> = None;
            for elem in items {
                let re = compiled(&mut re, value)?;
                if key.is_empty() {
                    if re.is_match(render(elem).trim()) {
                        out.push(elem);
                    }
                } else if let Some(f) = elem.as_map().and_then(|m| m.get(key))
                    && re.is_match(render(f).trim())
                {
                    find_into(elem, rest, out)?;
                }
            }
            Ok(())
        }
    }
}

fn index_error(i: usize, len: usize) -> String {
    format!("index {i} specified but only {len} elements found")
}

fn compiled<'r>(slot: &'r mut Option<Regex>, pattern: &str) -> Result<&'r Regex, String> {
    if slot.is_none() {
        let re = super::goregex::compile(pattern)?;
        *slot = Some(re);
    }
    slot.as_ref().ok_or_else(|| "regex unavailable".to_string())
}

/// Callback of [`visit_matches`]: the matched node, whether it is an
/// *untyped* node just made by `create` (its type then follows from the
/// text written into it, as for a plain YAML scalar), and its path in the
/// document walked.
pub type VisitFn<'f> = dyn FnMut(&mut Value, bool, &[PathSeg]) -> Result<(), String> + 'f;

/// Walks `path` with kyaml `PathMatcher` rules, calling `f` on every matched
/// node; with `create`, missing parts are made on the way (the leaf with
/// the given kind). Returns the number of matches.
///
/// As in kyaml, creating below an existing `null` succeeds but leaves the
/// document unchanged, `[=value]` matches the list element itself even when
/// more path follows, and a `[key=value]` element that `create` appended is
/// searched for again with the regex (once).
pub fn visit_matches(
    root: &mut Value,
    path: &[PathElem],
    create: Option<CreateKind>,
    f: &mut VisitFn<'_>,
) -> Result<usize, VisitError> {
    let mut w = Walker {
        create,
        count: 0,
        f,
        trail: Vec::new(),
    };
    w.walk(root, path, false)?;
    Ok(w.count)
}

/// Writes a clone of `value` at every match of `path` (no type coercion);
/// with `create`, missing parts are made. Returns how many places were set.
pub fn set(
    root: &mut Value,
    path: &[PathElem],
    value: &Value,
    create: bool,
) -> Result<usize, String> {
    let kind = create.then(|| CreateKind::of(value));
    let mut f = |node: &mut Value, _untyped: bool, _: &[PathSeg]| -> Result<(), String> {
        *node = value.clone();
        Ok(())
    };
    visit_matches(root, path, kind, &mut f).map_err(|e| match e {
        VisitError::Path(m) | VisitError::Apply(m) => m,
    })
}

struct Walker<'w, 'f> {
    create: Option<CreateKind>,
    count: usize,
    f: &'w mut VisitFn<'f>,
    /// Path of the node being walked.
    trail: Vec<PathSeg>,
}

/// The node `create` makes for a path part, from the part after it.
fn new_node(next: Option<&PathElem>, leaf: CreateKind) -> Value {
    let kind = match next {
        None => leaf,
        Some(PathElem::Match { .. } | PathElem::Malformed(_) | PathElem::Index(_)) => {
            CreateKind::Seq
        }
        Some(_) => CreateKind::Map,
    };
    match kind {
        CreateKind::Map => Value::new_map(),
        CreateKind::Seq => Value::Seq(Vec::new()),
        CreateKind::Scalar => Value::Null,
    }
}

impl Walker<'_, '_> {
    /// [`Walker::walk`] into `node`, the child at `seg` of the node walked.
    fn walk_at(
        &mut self,
        seg: PathSeg,
        node: &mut Value,
        path: &[PathElem],
        untyped: bool,
    ) -> Result<(), VisitError> {
        self.trail.push(seg);
        self.walk(node, path, untyped)?;
        self.trail.pop();
        Ok(())
    }

    fn walk(
        &mut self,
        node: &mut Value,
        path: &[PathElem],
        untyped: bool,
    ) -> Result<(), VisitError> {
        let Some((first, rest)) = path.split_first() else {
            self.count += 1;
            return (self.f)(node, untyped, &self.trail).map_err(VisitError::Apply);
        };
        match first {
            PathElem::Field(name) => self.field(node, name, rest),
            PathElem::Index(i) => self.index(node, *i, rest),
            PathElem::Wildcard => match node {
                Value::Null => Ok(()),
                Value::Seq(items) => {
                    for (i, child) in items.iter_mut().enumerate() {
                        self.walk_at(PathSeg::Index(i), child, rest, false)?;
                    }
                    Ok(())
                }
                other => Err(VisitError::Path(wrong_kind("SequenceNode", other))),
            },
            PathElem::Malformed(_) => Err(VisitError::Path(MALFORMED_MSG.to_string())),
            PathElem::Match { key, value } => self.seq_match(node, key, value, rest),
        }
    }

    fn field(&mut self, node: &mut Value, name: &str, rest: &[PathElem]) -> Result<(), VisitError> {
        match node {
            Value::Null => {
                // kyaml appends the new field to the null scalar, where it
                // never shows: walk a detached node and drop it.
                if let Some(leaf) = self.create {
                    let mut detached = new_node(rest.first(), leaf);
                    self.walk(&mut detached, rest, rest.is_empty())?;
                }
                Ok(())
            }
            Value::Map(m) => self.map_field(m, name, rest),
            other => Err(VisitError::Path(wrong_kind("MappingNode", other))),
        }
    }

    fn map_field(
        &mut self,
        m: &mut Mapping,
        name: &str,
        rest: &[PathElem],
    ) -> Result<(), VisitError> {
        let mut created = false;
        if !m.contains_key(name) {
            let Some(leaf) = self.create else {
                return Ok(());
            };
            m.insert(name.to_string(), new_node(rest.first(), leaf));
            created = true;
        }
        match m.get_mut(name) {
            Some(child) => self.walk_at(
                PathSeg::Key(name.to_string()),
                child,
                rest,
                created && rest.is_empty(),
            ),
            None => Ok(()),
        }
    }

    fn index(&mut self, node: &mut Value, i: usize, rest: &[PathElem]) -> Result<(), VisitError> {
        match node {
            Value::Null => match self.create {
                Some(leaf) if i == 0 => {
                    let mut detached = new_node(rest.first(), leaf);
                    self.walk(&mut detached, rest, rest.is_empty())
                }
                _ => Err(VisitError::Path(index_error(i, 0))),
            },
            Value::Seq(items) => {
                let mut created = false;
                if let Some(leaf) = self.create
                    && items.len() == i
                {
                    items.push(new_node(rest.first(), leaf));
                    created = true;
                }
                let len = items.len();
                match items.get_mut(i) {
                    Some(child) => {
                        self.walk_at(PathSeg::Index(i), child, rest, created && rest.is_empty())
                    }
                    None => Err(VisitError::Path(index_error(i, len))),
                }
            }
            other => Err(VisitError::Path(wrong_kind("SequenceNode", other))),
        }
    }

    fn seq_match(
        &mut self,
        node: &mut Value,
        key: &str,
        pattern: &str,
        rest: &[PathElem],
    ) -> Result<(), VisitError> {
        let items = match node {
            Value::Null => {
                if self.create.is_some() {
                    let mut detached = Value::Seq(Vec::new());
                    return self.seq_match(&mut detached, key, pattern, rest);
                }
                return Ok(());
            }
            Value::Seq(items) => items,
            other => return Err(VisitError::Path(wrong_kind("SequenceNode", other))),
        };
        let mut re: Option<Regex> = None;
        let before = self.count;
        self.match_elements(items, key, pattern, rest, &mut re, None)?;
        if self.count > before || self.create.is_none() {
            return Ok(());
        }
        // Nothing matched: append an element that the selector describes,
        // then search again (kyaml recurses without bound; once is enough).
        let made = resolve_value(pattern);
        let elem = if key.is_empty() {
            made
        } else {
            let mut m = Mapping::new();
            m.insert(key.to_string(), made);
            Value::Map(m)
        };
        items.push(elem);
        let fresh = items.len().checked_sub(1);
        self.match_elements(items, key, pattern, rest, &mut re, fresh)
    }

    fn match_elements(
        &mut self,
        items: &mut [Value],
        key: &str,
        pattern: &str,
        rest: &[PathElem],
        re: &mut Option<Regex>,
        fresh: Option<usize>,
    ) -> Result<(), VisitError> {
        for (idx, elem) in items.iter_mut().enumerate() {
            let re = compiled(re, pattern).map_err(VisitError::Path)?;
            if key.is_empty() {
                if re.is_match(render(elem).trim()) {
                    // A scalar element is itself the match, whatever follows.
                    self.count += 1;
                    let untyped = fresh == Some(idx);
                    self.trail.push(PathSeg::Index(idx));
                    (self.f)(elem, untyped, &self.trail).map_err(VisitError::Apply)?;
                    self.trail.pop();
                }
            } else {
                let hit = elem
                    .as_map()
                    .and_then(|m| m.get(key))
                    .is_some_and(|f| re.is_match(render(f).trim()));
                if hit {
                    self.walk_at(PathSeg::Index(idx), elem, rest, false)?;
                }
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Scalar resolution (go-yaml v3 `resolve`)

/// The type go-yaml v3 gives a plain scalar's text.
#[derive(Clone, Debug, PartialEq)]
pub enum Resolved {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    /// A timestamp, already in the RFC 3339 form kustomize prints.
    Timestamp(String),
    Str,
}

impl Resolved {
    /// The YAML tag name used in go-yaml's messages (`!!int`, ...).
    pub fn tag_name(&self) -> &'static str {
        match self {
            Resolved::Null => "!!null",
            Resolved::Bool(_) => "!!bool",
            Resolved::Int(_) | Resolved::UInt(_) => "!!int",
            Resolved::Float(_) => "!!float",
            Resolved::Timestamp(_) => "!!timestamp",
            Resolved::Str => "!!str",
        }
    }

    /// The value a plain scalar with this resolution ends up as.
    pub fn into_value(self, text: &str) -> Value {
        match self {
            Resolved::Null => Value::Null,
            Resolved::Bool(b) => Value::Bool(b),
            Resolved::Int(i) => Value::Int(i),
            Resolved::UInt(u) => Value::UInt(u),
            Resolved::Float(f) => Value::Float(f),
            Resolved::Timestamp(t) => Value::String(t),
            Resolved::Str => Value::String(text.to_string()),
        }
    }
}

/// The value of `text` read as a plain (unquoted, untagged) YAML scalar.
pub fn resolve_value(text: &str) -> Value {
    resolve_scalar(text, true).into_value(text)
}

/// go-yaml v3's resolution of plain scalar text: null/bool words, YAML 1.1
/// style integers (`0x1F`, `0o17`, `0123` octal, `1_000`), floats, and
/// (when `timestamps`) date-only timestamps. Other timestamp forms resolve
/// as strings here.
pub fn resolve_scalar(text: &str, timestamps: bool) -> Resolved {
    let first = text.as_bytes().first().copied();
    let hint = match first {
        None => b'N',
        Some(b'+' | b'-') => b'S',
        Some(b'0'..=b'9') => b'D',
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => b'M',
        Some(b'.') => b'.',
        Some(_) => 0,
    };
    if hint == 0 {
        return Resolved::Str;
    }
    match text {
        "true" | "True" | "TRUE" => return Resolved::Bool(true),
        "false" | "False" | "FALSE" => return Resolved::Bool(false),
        "" | "~" | "null" | "Null" | "NULL" => return Resolved::Null,
        ".nan" | ".NaN" | ".NAN" => return Resolved::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Resolved::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Resolved::Float(f64::NEG_INFINITY),
        _ => {}
    }
    match hint {
        b'.' => match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Resolved::Float(f),
            _ => Resolved::Str,
        },
        b'D' | b'S' => {
            if timestamps && let Some(ts) = parse_date(text) {
                return Resolved::Timestamp(ts);
            }
            let plain = text.replace('_', "");
            if let Some(i) = go_parse_int(&plain) {
                return Resolved::Int(i);
            }
            if let Some(u) = go_parse_uint(&plain) {
                return Resolved::UInt(u);
            }
            if is_yaml_float(&plain)
                && let Ok(f) = plain.parse::<f64>()
                && f.is_finite()
            {
                return Resolved::Float(f);
            }
            Resolved::Str
        }
        _ => Resolved::Str,
    }
}

/// Go's `strconv.ParseUint(s, 0, 64)` (without underscores).
fn go_parse_uint(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    let (base, digits): (u64, &[u8]) = match b {
        [] => return None,
        [b'0', p, rest @ ..] if !rest.is_empty() && matches!(p | 0x20, b'b' | b'o' | b'x') => {
            let base = match p | 0x20 {
                b'b' => 2,
                b'o' => 8,
                _ => 16,
            };
            (base, rest)
        }
        [b'0', rest @ ..] => (8, rest),
        _ => (10, b),
    };
    let mut n: u64 = 0;
    for &c in digits {
        let d = match c {
            b'0'..=b'9' => u64::from(c - b'0'),
            b'a'..=b'z' => u64::from(c - b'a') + 10,
            b'A'..=b'Z' => u64::from(c - b'A') + 10,
            _ => return None,
        };
        if d >= base {
            return None;
        }
        n = n.checked_mul(base)?.checked_add(d)?;
    }
    Some(n)
}

/// Go's `strconv.ParseInt(s, 0, 64)` (without underscores).
fn go_parse_int(s: &str) -> Option<i64> {
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, s.get(1..)?),
        Some(b'+') => (false, s.get(1..)?),
        _ => (false, s),
    };
    let u = go_parse_uint(rest)?;
    if neg {
        if u == 1u64 << 63 {
            Some(i64::MIN)
        } else {
            i64::try_from(u).ok().map(|i| -i)
        }
    } else {
        i64::try_from(u).ok()
    }
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i = 1;
    }
    let digits = |from: usize| {
        b.iter()
            .skip(from)
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    if b.get(i) == Some(&b'.') {
        let n = digits(i + 1);
        if n == 0 {
            return false;
        }
        i += 1 + n;
    } else {
        let n = digits(i);
        if n == 0 {
            return false;
        }
        i += n;
        if b.get(i) == Some(&b'.') {
            i += 1 + digits(i + 1);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let n = digits(i);
        if n == 0 {
            return false;
        }
        i += n;
    }
    i == b.len()
}

/// A date-only timestamp (`2001-1-2`) in kustomize's printed form.
fn parse_date(s: &str) -> Option<String> {
    let mut parts = s.split('-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some()
        || y.len() != 4
        || !(1..=2).contains(&m.len())
        || !(1..=2).contains(&d.len())
    {
        return None;
    }
    let all_digits = |p: &str| p.bytes().all(|c| c.is_ascii_digit());
    if !all_digits(y) || !all_digits(m) || !all_digits(d) {
        return None;
    }
    let (y, m, d): (u32, u32, u32) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if d == 0 || d > days {
        return None;
    }
    Some(format!("{y:04}-{m:02}-{d:02}T00:00:00Z"))
}

// ---------------------------------------------------------------------------
// Rendering

/// A YAML rendering of a value close to kyaml's `RNode.String()` (without
/// the trailing newline): what `[key=regex]` selectors are matched against
/// and what "node contents" messages show.
pub fn render(v: &Value) -> String {
    let mut out = String::new();
    render_into(v, 0, &mut out);
    while out.ends_with('\n') {
        out.pop();
    }
    out
}

fn render_into(v: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Value::Map(m) if m.is_empty() => out.push_str("{}"),
        Value::Seq(s) if s.is_empty() => out.push_str("[]"),
        Value::Map(m) => {
            for (i, (k, val)) in m.iter().enumerate() {
                if i > 0 {
                    out.push('\n');
                    out.push_str(&pad);
                }
                out.push_str(&render_scalar_str(k, indent));
                out.push(':');
                render_child(val, indent, out);
            }
        }
        Value::Seq(s) => {
            for (i, val) in s.iter().enumerate() {
                if i > 0 {
                    out.push('\n');
                    out.push_str(&pad);
                }
                out.push_str("- ");
                render_into(val, indent + 2, out);
            }
        }
        Value::String(s) => out.push_str(&render_scalar_str(s, indent)),
        Value::Null => out.push_str("null"),
        Value::Float(f) => out.push_str(&crate::kustomize::yaml::format_float(*f)),
        other => out.push_str(&other.scalar_to_string().unwrap_or_default()),
    }
}

fn render_child(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Map(m) if !m.is_empty() => {
            out.push('\n');
            out.push_str(&" ".repeat(indent + 2));
            render_into(v, indent + 2, out);
        }
        Value::Seq(s) if !s.is_empty() => {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            render_into(v, indent, out);
        }
        _ => {
            out.push(' ');
            render_into(v, indent, out);
        }
    }
}

fn render_scalar_str(s: &str, indent: usize) -> String {
    if s.is_empty() || !matches!(resolve_scalar(s, true), Resolved::Str) {
        return format!("\"{}\"", escape_double(s));
    }
    if s.contains('\n') {
        let pad = " ".repeat(indent + 2);
        let (head, body) = match s.strip_suffix('\n') {
            Some(b) => ("|", b),
            None => ("|-", s),
        };
        let mut out = head.to_string();
        for line in body.split('\n') {
            out.push('\n');
            if !line.is_empty() {
                out.push_str(&pad);
                out.push_str(line);
            }
        }
        return out;
    }
    if s.chars().any(|c| c.is_control()) {
        return format!("\"{}\"", escape_double(s));
    }
    let first = s.chars().next().unwrap_or(' ');
    let needs_quotes = "-?:,[]{}#&*!|>'\"%@`".contains(first)
        || first.is_whitespace()
        || s.ends_with(char::is_whitespace)
        || s.ends_with(':')
        || s.contains(": ")
        || s.contains(" #");
    if needs_quotes {
        format!("'{}'", s.replace('\'', "''"))
    } else {
        s.to_string()
    }
}

fn escape_double(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// Test helpers shared by the selector and replacement tests.
#[cfg(test)]
pub(crate) mod testutil {
    use super::resolve_value;
    use crate::kustomize::yaml::{Mapping, Value};

    /// Parses a small flow-style YAML text (`{a: 1, b: [x, "y"]}`); plain
    /// scalars resolve like YAML, quoted ones are strings.
    pub(crate) fn flow(text: &str) -> Value {
        let chars: Vec<char> = text.chars().collect();
        let mut p = Flow { c: chars, i: 0 };
        p.value(&[])
    }

    struct Flow {
        c: Vec<char>,
        i: usize,
    }

    impl Flow {
        fn peek(&self) -> Option<char> {
            self.c.get(self.i).copied()
        }
        fn ws(&mut self) {
            while self.peek().is_some_and(char::is_whitespace) {
                self.i += 1;
            }
        }
        fn value(&mut self, stops: &[char]) -> Value {
            self.ws();
            match self.peek() {
                Some('{') => {
                    self.i += 1;
                    let mut m = Mapping::new();
                    loop {
                        self.ws();
                        if self.peek() == Some('}') {
                            self.i += 1;
                            break;
                        }
                        let key = match self.value(&[':']) {
                            Value::String(s) => s,
                            other => other.scalar_to_string().unwrap_or_default(),
                        };
                        self.ws();
                        self.i += 1; // ':'
                        let v = self.value(&[',', '}']);
                        m.insert(key, v);
                        self.ws();
                        if self.peek() == Some(',') {
                            self.i += 1;
                        }
                    }
                    Value::Map(m)
                }
                Some('[') => {
                    self.i += 1;
                    let mut s = Vec::new();
                    loop {
                        self.ws();
                        if self.peek() == Some(']') {
                            self.i += 1;
                            break;
                        }
                        s.push(self.value(&[',', ']']));
                        self.ws();
                        if self.peek() == Some(',') {
                            self.i += 1;
                        }
                    }
                    Value::Seq(s)
                }
                Some(q @ ('"' | '\'')) => {
                    self.i += 1;
                    let mut out = String::new();
                    while let Some(c) = self.peek() {
                        self.i += 1;
                        if c == q {
                            break;
                        }
                        out.push(c);
                    }
                    Value::String(out)
                }
                _ => {
                    let mut out = String::new();
                    while let Some(c) = self.peek() {
                        if stops.contains(&c) {
                            break;
                        }
                        out.push(c);
                        self.i += 1;
                    }
                    resolve_value(out.trim())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::flow;
    use super::*;

    fn p(s: &str) -> Vec<PathElem> {
        parse_dotted(s).unwrap_or_default()
    }

    fn f(s: &str) -> PathElem {
        PathElem::Field(s.to_string())
    }

    #[test]
    fn splits_like_smarter_path_splitter() {
        assert_eq!(
            split_dotted("spec.containers.[name=a.b].image"),
            vec!["spec", "containers", "[name=a.b]", "image"]
        );
        assert_eq!(
            split_dotted("metadata.annotations.[a.b/c]"),
            vec!["metadata", "annotations", "a.b/c"]
        );
        // A single bracket without '=' keeps its brackets (and errors later).
        assert_eq!(split_dotted("a.[plain]"), vec!["a", "[plain]"]);
        assert_eq!(
            split_dotted("metadata.labels.x\\.y"),
            vec!["metadata", "labels", "x.y"]
        );
        assert_eq!(split_dotted("a.[b.c"), vec!["a", "b.c"]);
        assert_eq!(split_dotted(""), vec![""]);
    }

    #[test]
    fn classifies_elements() {
        assert_eq!(classify("0"), PathElem::Index(0));
        assert_eq!(classify("+2"), PathElem::Index(2));
        assert_eq!(classify("-1"), f("-1"));
        assert_eq!(classify("-"), f("-"));
        assert_eq!(classify("*"), PathElem::Wildcard);
        assert_eq!(
            classify("[=--b]"),
            PathElem::Match {
                key: String::new(),
                value: "--b".into()
            }
        );
        assert_eq!(
            classify("[a=b=c]"),
            PathElem::Match {
                key: "a".into(),
                value: "b=c".into()
            }
        );
        assert_eq!(classify("[x]"), PathElem::Malformed("[x]".into()));
        assert_eq!(classify("["), f("["));
    }

    #[test]
    fn getter_rules() {
        let v = flow(
            "{data: {list: [a, b, c], m: {k: v}, n: null, s: x, objs: [{name: a, v: 1}, {name: ab, v: 2}]}}",
        );
        let g = |path: &str| get(&v, path);
        assert_eq!(g("data.list.1"), Ok(Some(&Value::from("b"))));
        assert_eq!(g("data.list.-"), Ok(Some(&Value::from("c"))));
        assert_eq!(g("data.list.[=c]"), Ok(Some(&Value::from("c"))));
        assert_eq!(g("data.list.9"), Ok(None));
        assert_eq!(g("data.objs.[name=ab].v"), Ok(Some(&Value::Int(2))));
        // Exact, not a regex.
        assert_eq!(g("data.objs.[name=b].v"), Ok(None));
        assert_eq!(g("data..m.k"), Ok(Some(&Value::from("v"))));
        assert_eq!(g("data.n.deep"), Ok(None));
        assert_eq!(g("data.missing.deep"), Ok(None));
        assert_eq!(
            g("data.list.-1"),
            Err("array index -1 cannot be negative".to_string())
        );
        let e = g("data.s.x").unwrap_err();
        assert!(
            e.starts_with("wrong node kind: expected MappingNode but got ScalarNode"),
            "{e}"
        );
        let e = g("data.[x=y]").unwrap_err();
        assert!(
            e.starts_with("wrong node kind: expected SequenceNode but got MappingNode"),
            "{e}"
        );
        assert_eq!(g("data.[list]"), Err(MALFORMED_MSG.to_string()));
    }

    #[test]
    fn matcher_uses_unanchored_regexes() {
        let v = flow(
            "{c: [{name: nginx, image: a}, {name: nginx-side, image: b}, {name: other, image: c}], \
             args: [x1, x2, y1]}",
        );
        let imgs: Vec<&Value> = lookup(&v, &p("c.[name=nginx].image"));
        assert_eq!(imgs, vec![&Value::from("a"), &Value::from("b")]);
        assert_eq!(
            lookup(&v, &p("c.[name=nginx$].image")),
            vec![&Value::from("a")]
        );
        assert_eq!(lookup(&v, &p("c.*.image")).len(), 3);
        assert_eq!(
            lookup(&v, &p("args.[=1]")),
            vec![&Value::from("x1"), &Value::from("y1")]
        );
        // A primitive match is the element itself, whatever follows.
        assert_eq!(
            lookup(&v, &p("args.[=y].ignored")),
            vec![&Value::from("y1")]
        );
        let e = find_all(&v, &p("c.5.image")).unwrap_err();
        assert_eq!(e, "index 5 specified but only 3 elements found");
        let e = find_all(&v, &p("*")).unwrap_err();
        assert!(
            e.starts_with("wrong node kind: expected SequenceNode but got MappingNode"),
            "{e}"
        );
    }

    #[test]
    fn set_creates_like_path_matcher() {
        // Oracle: fieldPaths with options.create on this ConfigMap.
        let mut v = flow(
            "{list: [{name: a, value: '1'}, {name: b, value: '2'}], prim: [x1, x2, y1], nul: null}",
        );
        let val = Value::from("NEW");
        for path in [
            "list.[name=c].value",
            "list.2.extra",
            "prim.[=z]",
            "prim.3",
            "nul.deep.x",
            "new.[name=q].v",
            "new2.0",
            "new3.[=w]",
        ] {
            assert_eq!(set(&mut v, &p(path), &val, true), Ok(1), "{path}");
        }
        let want = flow(
            "{list: [{name: a, value: '1'}, {name: b, value: '2'}, {name: c, value: NEW, extra: NEW}], \
             prim: [x1, x2, y1, NEW], nul: null, new: [{name: q, v: NEW}], new2: [NEW], new3: [NEW]}",
        );
        assert_eq!(v, want);
    }

    #[test]
    fn set_without_create_counts_matches() {
        let mut v = flow("{a: {b: 1}, l: []}");
        assert_eq!(set(&mut v, &p("a.c"), &Value::Int(2), false), Ok(0));
        assert_eq!(set(&mut v, &p("l.*.x"), &Value::Int(2), true), Ok(0));
        assert_eq!(set(&mut v, &p("a.b"), &Value::Int(2), false), Ok(1));
        assert_eq!(v, flow("{a: {b: 2}, l: []}"));
        assert!(set(&mut v, &p("a.b.c"), &Value::Int(2), true).is_err());
    }

    #[test]
    fn visit_reports_untyped_created_nodes() {
        let mut v = flow("{a: {b: 1}}");
        let mut seen = Vec::new();
        let mut cb = |n: &mut Value, untyped: bool, at: &[PathSeg]| -> Result<(), String> {
            seen.push((n.clone(), untyped, at.to_vec()));
            Ok(())
        };
        let n = visit_matches(&mut v, &p("a.b"), Some(CreateKind::Scalar), &mut cb);
        assert_eq!(n, Ok(1));
        let n = visit_matches(&mut v, &p("a.c"), Some(CreateKind::Scalar), &mut cb);
        assert_eq!(n, Ok(1));
        let at = |k: &str| vec![PathSeg::Key("a".into()), PathSeg::Key(k.into())];
        assert_eq!(
            seen,
            vec![
                (Value::Int(1), false, at("b")),
                (Value::Null, true, at("c"))
            ]
        );
        let mut fail =
            |_: &mut Value, _: bool, _: &[PathSeg]| -> Result<(), String> { Err("no".into()) };
        assert_eq!(
            visit_matches(&mut v, &p("a.b"), None, &mut fail),
            Err(VisitError::Apply("no".into()))
        );
    }

    #[test]
    fn bad_regex_is_an_error() {
        let mut v = flow("{l: [a]}");
        assert!(set(&mut v, &p("l.[=(]"), &Value::Int(1), false).is_err());
    }

    #[test]
    fn resolves_like_go_yaml_v3() {
        let r = |s: &str| resolve_value(s);
        assert_eq!(r("42"), Value::Int(42));
        assert_eq!(r("0123"), Value::Int(83));
        assert_eq!(r("0x1F"), Value::Int(31));
        assert_eq!(r("0o17"), Value::Int(15));
        assert_eq!(r("1_000"), Value::Int(1000));
        assert_eq!(r("-0"), Value::Int(0));
        assert_eq!(r("08"), Value::Float(8.0));
        assert_eq!(r("3.0"), Value::Float(3.0));
        assert_eq!(r(".5"), Value::Float(0.5));
        assert_eq!(r("1e3"), Value::Float(1000.0));
        assert_eq!(r("12345678901234567890"), Value::UInt(12345678901234567890));
        assert_eq!(r("true"), Value::Bool(true));
        assert_eq!(r("yes"), Value::from("yes"));
        assert_eq!(r("on"), Value::from("on"));
        assert_eq!(r(""), Value::Null);
        assert_eq!(r("~"), Value::Null);
        assert_eq!(r("1e400"), Value::from("1e400"));
        assert_eq!(r("2001-01-01"), Value::from("2001-01-01T00:00:00Z"));
        assert_eq!(r("2001-02-30"), Value::from("2001-02-30"));
        assert_eq!(r("+"), Value::from("+"));
        assert_eq!(r("hello"), Value::from("hello"));
        assert_eq!(resolve_scalar("2001-01-01", false), Resolved::Str);
        assert_eq!(resolve_scalar("3.5", false).tag_name(), "!!float");
    }

    #[test]
    fn renders_scalars_for_matching() {
        assert_eq!(render(&Value::from("1")), "\"1\"");
        assert_eq!(render(&Value::from("")), "\"\"");
        assert_eq!(render(&Value::from("a: b")), "'a: b'");
        assert_eq!(render(&Value::from("plain")), "plain");
        assert_eq!(render(&Value::Null), "null");
        assert_eq!(
            render(&flow("{a: [1, 2], b: {c: x}}")),
            "a:\n- 1\n- 2\nb:\n  c: x"
        );
    }
}
