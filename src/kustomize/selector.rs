//! Resource selectors (kustomize's `types.Selector`) and Kubernetes label
//! selector strings.
//!
//! Two matching flavours exist in kustomize 5.5:
//! * [`SelectorRegex`] (`ResMap.Select`, used by `patches[].target` and most
//!   builtin plugins): group, version, kind, name and namespace are anchored
//!   regular expressions; an empty field matches anything.
//! * [`Selector::selects_id`] (kyaml `ResId.IsSelectedBy`, used by
//!   replacements): plain equality of the non-empty fields, with no
//!   namespace equal to `default`.
//!
//! Label and annotation selectors use the apimachinery syntax
//! ([`LabelSelector`]), with its error messages.

use std::borrow::Cow;
use std::collections::BTreeSet;

use regex::Regex;

use crate::kustomize::resid::{Gvk, ResId};
use crate::kustomize::yaml::{Mapping, Value};

/// kustomize's `types.Selector`: an id pattern plus label and annotation
/// selector strings. Empty fields match anything.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selector {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub name: String,
    pub namespace: String,
    pub label_selector: String,
    pub annotation_selector: String,
}

const SELECTOR_FIELDS: &[&str] = &[
    "group",
    "version",
    "kind",
    "name",
    "namespace",
    "labelSelector",
    "annotationSelector",
];

impl Selector {
    /// Decodes a selector map strictly, as kustomize decodes a
    /// kustomization: unknown fields and wrongly typed values are errors.
    /// `what` is the JSON path of the selector (`patches.target`), used in
    /// messages the way Go's decoder words them.
    pub fn from_value(v: &Value, what: &str) -> Result<Selector, String> {
        GoDecoder::STRICT.selector(v, "", what)
    }

    /// Decodes a selector the way builtin plugin configs are read: unknown
    /// fields are ignored, wrong types are still errors.
    pub fn from_value_lenient(v: &Value, what: &str) -> Result<Selector, String> {
        GoDecoder::LENIENT.selector(v, "", what)
    }

    /// True when group, version, kind, name and namespace are all empty.
    pub fn id_is_empty(&self) -> bool {
        self.group.is_empty()
            && self.version.is_empty()
            && self.kind.is_empty()
            && self.name.is_empty()
            && self.namespace.is_empty()
    }

    /// kyaml's `ResId.IsSelectedBy`: every non-empty id field equals the
    /// id's (namespaces compared with empty == `default`). Labels and
    /// annotations are not looked at.
    pub fn selects_id(&self, id: &ResId) -> bool {
        let ns = |s: &str| if s.is_empty() { "default" } else { s }.to_string();
        (self.name.is_empty() || self.name == id.name)
            && (self.namespace.is_empty() || ns(&self.namespace) == ns(&id.namespace))
            && (self.group.is_empty() || self.group == id.gvk.group)
            && (self.version.is_empty() || self.version == id.gvk.version)
            && (self.kind.is_empty() || self.kind == id.gvk.kind)
    }

    /// Regex id match ([`SelectorRegex`]); compiles the patterns on every
    /// call, so loops should build a [`SelectorRegex`] once instead.
    pub fn matches_id(&self, id: &ResId) -> Result<bool, String> {
        Ok(SelectorRegex::new(self)?.matches_id(id))
    }

    /// Regex id match plus the label and annotation selectors against the
    /// object's `metadata.labels` / `metadata.annotations`.
    pub fn matches(&self, id: &ResId, obj: &Value) -> Result<bool, String> {
        Ok(SelectorRegex::new(self)?.matches(id, obj))
    }

    /// The id part as kyaml prints a `ResId`:
    /// `Kind.version.group/name.namespace` with `[noKind]`, `[noVer]`,
    /// `[noGrp]`, `[noName]`, `[noNs]` for empty parts.
    pub fn id_string(&self) -> String {
        let or = |s: &str, d: &str| {
            if s.is_empty() {
                d.to_string()
            } else {
                s.to_string()
            }
        };
        format!(
            "{}/{}.{}",
            Gvk::new(&self.group, &self.version, &self.kind).go_string(),
            or(&self.name, "[noName]"),
            or(&self.namespace, "[noNs]")
        )
    }
}

/// A [`Selector`] with its patterns compiled once (kustomize's
/// `SelectorRegex`): each non-empty id field is the anchored regex
/// `^(?:field)$`.
#[derive(Clone, Debug)]
pub struct SelectorRegex {
    group: Option<Regex>,
    version: Option<Regex>,
    kind: Option<Regex>,
    name: Option<Regex>,
    namespace: Option<Regex>,
    labels: Option<LabelSelector>,
    annotations: Option<LabelSelector>,
}

use super::goregex::anchored;

fn optional_selector(s: &str) -> Result<Option<LabelSelector>, String> {
    if s.is_empty() {
        Ok(None)
    } else {
        LabelSelector::parse(s).map(Some)
    }
}

impl SelectorRegex {
    /// Compiles the id patterns and parses the label/annotation selectors.
    pub fn new(s: &Selector) -> Result<SelectorRegex, String> {
        Ok(SelectorRegex {
            group: anchored(&s.group)?,
            version: anchored(&s.version)?,
            kind: anchored(&s.kind)?,
            name: anchored(&s.name)?,
            namespace: anchored(&s.namespace)?,
            labels: optional_selector(&s.label_selector)?,
            annotations: optional_selector(&s.annotation_selector)?,
        })
    }

    fn m(re: &Option<Regex>, s: &str) -> bool {
        re.as_ref().is_none_or(|r| r.is_match(s))
    }

    /// Id match; the namespace pattern sees `default` for an empty
    /// namespace (pass an id whose namespace is already kustomize's
    /// effective namespace when cluster scope matters).
    pub fn matches_id(&self, id: &ResId) -> bool {
        let ns = if id.namespace.is_empty() {
            "default"
        } else {
            &id.namespace
        };
        Self::m(&self.group, &id.gvk.group)
            && Self::m(&self.version, &id.gvk.version)
            && Self::m(&self.kind, &id.gvk.kind)
            && Self::m(&self.name, &id.name)
            && Self::m(&self.namespace, ns)
    }

    /// Id match plus label and annotation selectors.
    pub fn matches(&self, id: &ResId, obj: &Value) -> bool {
        self.matches_id(id) && self.matches_meta(obj)
    }

    /// Only the label and annotation selectors.
    pub fn matches_meta(&self, obj: &Value) -> bool {
        self.labels
            .as_ref()
            .is_none_or(|l| l.matches(labels_of(obj)))
            && self
                .annotations
                .as_ref()
                .is_none_or(|a| a.matches(annotations_of(obj)))
    }
}

/// `metadata.labels` of a resource object, when it is a map.
pub fn labels_of(obj: &Value) -> Option<&Mapping> {
    obj.get_path(&["metadata", "labels"])
        .and_then(Value::as_map)
}

/// `metadata.annotations` of a resource object, when it is a map.
pub fn annotations_of(obj: &Value) -> Option<&Mapping> {
    obj.get_path(&["metadata", "annotations"])
        .and_then(Value::as_map)
}

// ---------------------------------------------------------------------------
// Label selectors (k8s.io/apimachinery/pkg/labels)

/// A parsed Kubernetes label selector: comma-separated requirements
/// `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a)`, `k`, `!k`, `k>1`,
/// `k<1`, all of which must hold. The empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

#[derive(Clone, Debug, PartialEq)]
struct Requirement {
    key: String,
    op: Op,
    values: BTreeSet<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    In,
    NotIn,
    Equals,
    NotEquals,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok {
    Ident,
    Not,
    Eq,
    DoubleEq,
    NotEq,
    In,
    NotIn,
    Open,
    Close,
    Comma,
    Gt,
    Lt,
    End,
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn special_token(s: &str) -> Option<Tok> {
    Some(match s {
        "=" => Tok::Eq,
        "==" => Tok::DoubleEq,
        "!=" => Tok::NotEq,
        "!" => Tok::Not,
        "(" => Tok::Open,
        ")" => Tok::Close,
        "," => Tok::Comma,
        ">" => Tok::Gt,
        "<" => Tok::Lt,
        _ => return None,
    })
}

fn lex(s: &str) -> Vec<(Tok, String)> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while chars
            .get(i)
            .is_some_and(|c| matches!(c, ' ' | '\t' | '\r' | '\n'))
        {
            i += 1;
        }
        let Some(&c) = chars.get(i) else {
            out.push((Tok::End, String::new()));
            return out;
        };
        if is_special(c) {
            // Longest special-symbol token (every single symbol is one).
            let mut lit = c.to_string();
            let mut tok = special_token(&lit).unwrap_or(Tok::End);
            i += 1;
            if let Some(&n) = chars.get(i) {
                let two = format!("{c}{n}");
                if let Some(t) = special_token(&two) {
                    tok = t;
                    lit = two;
                    i += 1;
                }
            }
            out.push((tok, lit));
        } else {
            let mut lit = String::new();
            while let Some(&c) = chars.get(i) {
                if is_special(c) || matches!(c, ' ' | '\t' | '\r' | '\n') {
                    break;
                }
                lit.push(c);
                i += 1;
            }
            let tok = match lit.as_str() {
                "in" => Tok::In,
                "notin" => Tok::NotIn,
                _ => Tok::Ident,
            };
            out.push((tok, lit));
        }
    }
}

struct Parser {
    items: Vec<(Tok, String)>,
    pos: usize,
}

impl Parser {
    /// The next token; in a values context `in`/`notin` are identifiers.
    fn lookahead(&self, values: bool) -> (Tok, String) {
        let (tok, lit) = self
            .items
            .get(self.pos)
            .cloned()
            .unwrap_or((Tok::End, String::new()));
        match tok {
            Tok::In | Tok::NotIn if values => (Tok::Ident, lit),
            _ => (tok, lit),
        }
    }

    fn consume(&mut self, values: bool) -> (Tok, String) {
        let r = self.lookahead(values);
        if self.pos < self.items.len() {
            self.pos += 1;
        }
        r
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut reqs = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(true);
            match tok {
                Tok::Ident | Tok::Not => {
                    let r = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    reqs.push(r);
                    let (t, l) = self.consume(true);
                    match t {
                        Tok::End => return Ok(reqs),
                        Tok::Comma => {
                            let (t2, l2) = self.lookahead(true);
                            if t2 != Tok::Ident && t2 != Tok::Not {
                                return Err(format!(
                                    "found '{l2}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => return Err(format!("found '{l}', expected: ',' or 'end of string'")),
                    }
                }
                Tok::End => return Ok(reqs),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (key, op) = self.key_and_inferred_operator()?;
        if let Some(op @ (Op::Exists | Op::DoesNotExist)) = op {
            return new_requirement(key, op, BTreeSet::new());
        }
        let op = self.operator()?;
        let values = match op {
            Op::In | Op::NotIn => self.values()?,
            _ => self.exact_value()?,
        };
        new_requirement(key, op, values)
    }

    fn key_and_inferred_operator(&mut self) -> Result<(String, Option<Op>), String> {
        let mut op = None;
        let (mut tok, mut lit) = self.consume(true);
        if tok == Tok::Not {
            op = Some(Op::DoesNotExist);
            (tok, lit) = self.consume(true);
        }
        if tok != Tok::Ident {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        validate_label_key(&lit)?;
        let (t, _) = self.lookahead(true);
        if (t == Tok::End || t == Tok::Comma) && op != Some(Op::DoesNotExist) {
            op = Some(Op::Exists);
        }
        Ok((lit, op))
    }

    fn operator(&mut self) -> Result<Op, String> {
        let (tok, lit) = self.consume(false);
        Ok(match tok {
            Tok::In => Op::In,
            Tok::NotIn => Op::NotIn,
            Tok::Eq | Tok::DoubleEq => Op::Equals,
            Tok::NotEq => Op::NotEquals,
            Tok::Gt => Op::Gt,
            Tok::Lt => Op::Lt,
            _ => {
                return Err(format!(
                    "found '{lit}', expected: '=', '!=', '==', 'in', notin'"
                ));
            }
        })
    }

    fn values(&mut self) -> Result<BTreeSet<String>, String> {
        let (tok, lit) = self.consume(true);
        if tok != Tok::Open {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(true);
        match tok {
            Tok::Ident | Tok::Comma => {
                let s = self.identifiers()?;
                let (t, _) = self.consume(true);
                if t != Tok::Close {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(s)
            }
            Tok::Close => {
                self.consume(true);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    fn identifiers(&mut self) -> Result<BTreeSet<String>, String> {
        let mut s = BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(true);
            match tok {
                Tok::Ident => {
                    s.insert(lit);
                    let (t2, l2) = self.lookahead(true);
                    match t2 {
                        Tok::Comma => continue,
                        Tok::Close => return Ok(s),
                        _ => return Err(format!("found '{l2}', expected: ',' or ')'")),
                    }
                }
                Tok::Comma => {
                    if s.is_empty() {
                        s.insert(String::new());
                    }
                    let (t2, _) = self.lookahead(true);
                    if t2 == Tok::Close {
                        s.insert(String::new());
                        return Ok(s);
                    }
                    if t2 == Tok::Comma {
                        self.consume(true);
                        s.insert(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        let (tok, _) = self.lookahead(true);
        if tok == Tok::End || tok == Tok::Comma {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (tok, lit) = self.consume(true);
        if tok == Tok::Ident {
            Ok(BTreeSet::from([lit]))
        } else {
            Err(format!("found '{lit}', expected: identifier"))
        }
    }
}

fn new_requirement(key: String, op: Op, values: BTreeSet<String>) -> Result<Requirement, String> {
    validate_label_key(&key)?;
    match op {
        Op::In | Op::NotIn if values.is_empty() => {
            return Err("for 'in', 'notin' operators, values set can't be empty".into());
        }
        Op::Equals | Op::NotEquals if values.len() != 1 => {
            return Err("exact-match compatibility requires one single value".into());
        }
        Op::Exists | Op::DoesNotExist if !values.is_empty() => {
            return Err("values set must be empty for exists and does not exist".into());
        }
        Op::Gt | Op::Lt => {
            if values.len() != 1 {
                return Err("for 'Gt', 'Lt' operators, exactly one value is required".into());
            }
            if values.iter().any(|v| v.parse::<i64>().is_err()) {
                return Err("for 'Gt', 'Lt' operators, the value must be an integer".into());
            }
        }
        _ => {}
    }
    for v in &values {
        let errs = label_value_errors(v);
        if !errs.is_empty() {
            return Err(format!(
                "invalid label value: {}: at key: {}: {}",
                go_quote(v),
                go_quote(&key),
                errs.join("; ")
            ));
        }
    }
    Ok(Requirement { key, op, values })
}

const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const DNS1123_SUBDOMAIN_MSG: &str = "a DNS-1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

fn is_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(|label| {
        let b = label.as_bytes();
        let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        match (b.first(), b.last()) {
            (Some(f), Some(l)) => ok(f) && ok(l) && b.iter().all(|c| ok(c) || *c == b'-'),
            _ => false,
        }
    })
}

fn validate_label_key(k: &str) -> Result<(), String> {
    let mut errs: Vec<String> = Vec::new();
    let parts: Vec<&str> = k.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".into());
            } else {
                if prefix.len() > 253 {
                    errs.push("prefix part must be no more than 253 characters".into());
                }
                if !is_dns1123_subdomain(prefix) {
                    errs.push(format!("prefix part {DNS1123_SUBDOMAIN_MSG}"));
                }
            }
            *name
        }
        _ => {
            return Err(format!(
                "invalid label key {}: a qualified name {QUALIFIED_NAME_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                go_quote(k)
            ));
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".into());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".into());
    }
    if !is_qualified_name_part(name) {
        errs.push(format!("name part {QUALIFIED_NAME_MSG}"));
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "invalid label key {}: {}",
            go_quote(k),
            errs.join("; ")
        ))
    }
}

fn label_value_errors(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !v.is_empty() && !is_qualified_name_part(v) {
        errs.push(LABEL_VALUE_MSG.to_string());
    }
    errs
}

/// Go's `%q` for the strings messages quote.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl LabelSelector {
    /// Parses a selector string with apimachinery's grammar and messages.
    pub fn parse(s: &str) -> Result<LabelSelector, String> {
        let mut p = Parser {
            items: lex(s),
            pos: 0,
        };
        Ok(LabelSelector {
            requirements: p.parse()?,
        })
    }

    /// True when every requirement holds for `labels` (a missing map is an
    /// empty one; non-string values compare by how they print).
    pub fn matches(&self, labels: Option<&Mapping>) -> bool {
        self.matches_texts(|k| {
            labels
                .and_then(|m| m.get(k))
                .map(|v| Cow::Owned(crate::kustomize::fieldpath::scalar_text(v)))
        })
    }

    /// [`LabelSelector::matches`] with the text of each key's value from
    /// `text` (`None`: no such key). kyaml reads labels as the text their
    /// file wrote (`1.50`, `0600`), which a resource keeps apart.
    pub fn matches_texts<'a>(&self, text: impl Fn(&str) -> Option<Cow<'a, str>>) -> bool {
        self.requirements.iter().all(|r| {
            let val = text(&r.key);
            match r.op {
                Op::In | Op::Equals => val.is_some_and(|v| r.values.contains(v.as_ref())),
                Op::NotIn | Op::NotEquals => val.is_none_or(|v| !r.values.contains(v.as_ref())),
                Op::Exists => val.is_some(),
                Op::DoesNotExist => val.is_none(),
                Op::Gt | Op::Lt => {
                    let Some(have) = val.and_then(|v| v.parse::<i64>().ok()) else {
                        return false;
                    };
                    let Some(want) = r.values.iter().next().and_then(|v| v.parse::<i64>().ok())
                    else {
                        return false;
                    };
                    if r.op == Op::Gt {
                        have > want
                    } else {
                        have < want
                    }
                }
            }
        })
    }

    /// True for the empty selector.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
}

// ---------------------------------------------------------------------------
// Go JSON decoding of small config structs

/// Decodes YAML-turned-JSON into Go structs the way kustomize does: keys
/// are visited in sorted order, matched to fields case-insensitively, and
/// the first problem is reported with Go's wording. Strict mode (a
/// kustomization) rejects unknown fields; lenient mode (plugin configs,
/// replacement files) ignores them and prefixes errors as sigs.k8s.io/yaml.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GoDecoder {
    pub(crate) strict: bool,
}

impl GoDecoder {
    pub(crate) const STRICT: GoDecoder = GoDecoder { strict: true };
    pub(crate) const LENIENT: GoDecoder = GoDecoder { strict: false };

    fn wrap(&self, msg: String) -> String {
        if self.strict {
            msg
        } else {
            format!("error unmarshaling JSON: while decoding JSON: {msg}")
        }
    }

    /// Go's `UnmarshalTypeError` text for a field.
    pub(crate) fn mismatch(&self, v: &Value, go_struct: &str, path: &str, go_type: &str) -> String {
        let kind = match v {
            Value::Float(f) if go_type == "int" => {
                format!("number {}", crate::kustomize::yaml::format_float(*f))
            }
            Value::UInt(u) if go_type == "int" => format!("number {u}"),
            other => super::kustomization::go_type_of(other).to_string(),
        };
        let field = if go_struct.is_empty() {
            format!("json: cannot unmarshal {kind} into Go value of type {go_type}")
        } else {
            format!(
                "json: cannot unmarshal {kind} into Go struct field {go_struct}.{path} of type {go_type}"
            )
        };
        self.wrap(field)
    }

    /// The object's entries matched to `allowed` field names (case
    /// insensitive), in sorted key order. `Ok(None)` for null.
    pub(crate) fn fields<'v>(
        &self,
        v: &'v Value,
        go_struct: &str,
        path: &str,
        go_type: &str,
        allowed: &[&'static str],
    ) -> Result<Option<Vec<(&'static str, &'v Value)>>, String> {
        let m = match v {
            Value::Null => return Ok(None),
            Value::Map(m) => m,
            other => return Err(self.mismatch(other, go_struct, path, go_type)),
        };
        let mut keys: Vec<(&String, &Value)> = m.iter().collect();
        keys.sort_by(|a, b| a.0.cmp(b.0));
        let mut out = Vec::new();
        for (k, val) in keys {
            match allowed.iter().find(|f| f.eq_ignore_ascii_case(k)) {
                Some(f) => out.push((*f, val)),
                None if self.strict => return Err(format!("json: unknown field {}", go_quote(k))),
                None => {}
            }
        }
        Ok(Some(out))
    }

    /// A Go string field.
    pub(crate) fn string(&self, v: &Value, go_struct: &str, path: &str) -> Result<String, String> {
        match v {
            Value::Null => Ok(String::new()),
            Value::String(s) => Ok(s.clone()),
            other => Err(self.mismatch(other, go_struct, path, "string")),
        }
    }

    /// A Go int field.
    pub(crate) fn int(&self, v: &Value, go_struct: &str, path: &str) -> Result<i64, String> {
        match v {
            Value::Null => Ok(0),
            Value::Int(i) => Ok(*i),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(*f as i64),
            other => Err(self.mismatch(other, go_struct, path, "int")),
        }
    }

    /// A Go bool field.
    pub(crate) fn boolean(&self, v: &Value, go_struct: &str, path: &str) -> Result<bool, String> {
        match v {
            Value::Null => Ok(false),
            Value::Bool(b) => Ok(*b),
            other => Err(self.mismatch(other, go_struct, path, "bool")),
        }
    }

    /// A Go `[]string` field.
    pub(crate) fn string_list(
        &self,
        v: &Value,
        go_struct: &str,
        path: &str,
    ) -> Result<Vec<String>, String> {
        match v {
            Value::Null => Ok(Vec::new()),
            Value::Seq(items) => items
                .iter()
                .map(|i| self.string(i, go_struct, path))
                .collect(),
            other => Err(self.mismatch(other, go_struct, path, "[]string")),
        }
    }

    /// Fills the id fields shared by `Selector`, `SourceSelector`, ...;
    /// false when `field` is not one of them.
    pub(crate) fn id_field(
        &self,
        sel: &mut Selector,
        field: &str,
        v: &Value,
        go_struct: &str,
        path: &str,
    ) -> Result<bool, String> {
        let p = join_path(path, field);
        let slot = match field {
            "group" => &mut sel.group,
            "version" => &mut sel.version,
            "kind" => &mut sel.kind,
            "name" => &mut sel.name,
            "namespace" => &mut sel.namespace,
            "labelSelector" => &mut sel.label_selector,
            "annotationSelector" => &mut sel.annotation_selector,
            _ => return Ok(false),
        };
        *slot = self.string(v, go_struct, &p)?;
        Ok(true)
    }

    /// A `types.Selector` at `path`; `parent` names the Go struct holding it
    /// (empty: the selector is the top-level value).
    pub(crate) fn selector(&self, v: &Value, parent: &str, path: &str) -> Result<Selector, String> {
        let mut sel = Selector::default();
        if let Some(fields) = self.fields(v, parent, path, "types.Selector", SELECTOR_FIELDS)? {
            for (f, val) in fields {
                self.id_field(&mut sel, f, val, "Selector", path)?;
            }
        }
        Ok(sel)
    }
}

/// `a.b` JSON field path joining (an empty prefix is dropped).
pub(crate) fn join_path(prefix: &str, field: &str) -> String {
    if prefix.is_empty() {
        field.to_string()
    } else {
        format!("{prefix}.{field}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kustomize::fieldpath::testutil::flow;
    use crate::kustomize::resid::Gvk;

    fn ls(s: &str) -> Result<LabelSelector, String> {
        LabelSelector::parse(s)
    }

    fn labels(text: &str) -> Value {
        flow(text)
    }

    fn m(sel: &str, l: &str) -> bool {
        let v = labels(l);
        match ls(sel) {
            Ok(s) => s.matches(v.as_map()),
            Err(e) => panic!("{sel}: {e}"),
        }
    }

    #[test]
    fn label_selector_matching() {
        assert!(m("", "{}"));
        assert!(m("app=a", "{app: a}"));
        assert!(m("app==a", "{app: a}"));
        assert!(!m("app=a", "{app: b}"));
        assert!(m("app!=a", "{}"));
        assert!(m("app in (a , b)", "{app: b}"));
        assert!(!m("app notin (a,b)", "{app: b}"));
        // `notin ()` holds when the key is absent (oracle).
        assert!(m("a notin ()", "{app: a}"));
        assert!(m("app", "{app: ''}"));
        assert!(m("!n", "{app: a}"));
        assert!(!m("app,!n", "{app: a, n: '5'}"));
        assert!(m("n>3", "{n: '5'}"));
        assert!(!m("n<3", "{n: '5'}"));
        assert!(!m("n>3", "{n: x}"));
        assert!(m("n=5", "{n: 5}"));
        assert!(!m("a =", "{}"));
        assert!(m("a in (b,,c)", "{a: ''}"));
        assert!(ls("a notin ()").is_ok_and(|s| s.matches(None)));
        assert!(ls("").is_ok_and(|s| s.is_empty()));
    }

    #[test]
    fn label_selector_errors_match_apimachinery() {
        // Messages verified with kubectl kustomize (kustomize v5.5.0).
        let cases = [
            (
                "a b",
                "unable to parse requirement: found 'b', expected: '=', '!=', '==', 'in', notin'",
            ),
            (
                "a in (x",
                "unable to parse requirement: found '', expected: ',' or ')'",
            ),
            ("a=b=c", "found '=', expected: ',' or 'end of string'"),
            (
                "!",
                "unable to parse requirement: found '', expected: identifier",
            ),
            ("a,", "found '', expected: identifier after ','"),
            ("x,,y", "found ',', expected: identifier after ','"),
            (
                "n>x",
                "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer",
            ),
            (
                "a!",
                "unable to parse requirement: found '!', expected: '=', '!=', '==', 'in', notin'",
            ),
            (
                "(",
                "found '(', expected: !, identifier, or 'end of string'",
            ),
            (
                "a in b",
                "unable to parse requirement: found 'b' expected: '('",
            ),
            (
                "a=(b)",
                "unable to parse requirement: found '(', expected: identifier",
            ),
            (
                "a in (b c)",
                "unable to parse requirement: found 'c', expected: ',' or ')'",
            ),
            (
                "/a",
                "unable to parse requirement: invalid label key \"/a\": prefix part must be non-empty",
            ),
        ];
        for (sel, want) in cases {
            assert_eq!(ls(sel).err().as_deref(), Some(want), "{sel}");
        }
        let e = ls("x=http://y").err().unwrap_or_default();
        assert_eq!(
            e,
            format!(
                "unable to parse requirement: invalid label value: \"http://y\": at key: \"x\": {LABEL_VALUE_MSG}"
            )
        );
        let e = ls("-a").err().unwrap_or_default();
        assert_eq!(
            e,
            format!(
                "unable to parse requirement: invalid label key \"-a\": name part {QUALIFIED_NAME_MSG}"
            )
        );
        let e = ls("a/").err().unwrap_or_default();
        assert!(
            e.contains("name part must be non-empty; name part must consist"),
            "{e}"
        );
        assert!(
            ls("a/b/c")
                .err()
                .unwrap_or_default()
                .contains("a qualified name must consist")
        );
        assert!(
            ls("A.com/x")
                .err()
                .unwrap_or_default()
                .contains("prefix part a DNS-1123 subdomain")
        );
        let long = "a".repeat(64);
        assert!(
            ls(&long)
                .err()
                .unwrap_or_default()
                .ends_with("name part must be no more than 63 characters")
        );
        assert!(
            ls(&format!("x={long}"))
                .err()
                .unwrap_or_default()
                .ends_with(": must be no more than 63 characters")
        );
    }

    fn id(g: &str, v: &str, k: &str, name: &str, ns: &str) -> ResId {
        ResId::new(Gvk::new(g, v, k), name, ns)
    }

    #[test]
    fn exact_id_selection() {
        let sel = |t: &str| Selector::from_value(&flow(t), "x").unwrap_or_default();
        let dep = id("apps", "v1", "Deployment", "dep", "");
        assert!(sel("{}").selects_id(&dep));
        assert!(sel("{kind: Deployment, group: apps}").selects_id(&dep));
        assert!(!sel("{name: 'dep.*'}").selects_id(&dep));
        assert!(sel("{namespace: default}").selects_id(&dep));
        assert!(sel("{namespace: default}").selects_id(&id("", "v1", "ConfigMap", "c", "default")));
        assert!(!sel("{namespace: other}").selects_id(&dep));
        assert!(!sel("{version: v2}").selects_id(&dep));
    }

    #[test]
    fn regex_id_selection() {
        let dep = id("apps", "v1", "Deployment", "dep-1", "");
        let mk = |t: &str| Selector::from_value(&flow(t), "x").unwrap_or_default();
        assert_eq!(mk("{name: 'dep-.*'}").matches_id(&dep), Ok(true));
        assert_eq!(mk("{name: dep}").matches_id(&dep), Ok(false));
        assert_eq!(mk("{kind: 'Deploy.*|Service'}").matches_id(&dep), Ok(true));
        assert_eq!(mk("{namespace: default}").matches_id(&dep), Ok(true));
        assert!(mk("{name: '('}").matches_id(&dep).is_err());
        let obj = flow("{metadata: {name: dep-1, labels: {app: a}, annotations: {x: y}}}");
        assert_eq!(
            mk("{labelSelector: app=a, annotationSelector: x=y}").matches(&dep, &obj),
            Ok(true)
        );
        assert_eq!(mk("{labelSelector: app=b}").matches(&dep, &obj), Ok(false));
        assert!(mk("{labelSelector: 'a b'}").matches(&dep, &obj).is_err());
    }

    #[test]
    fn decoding_is_strict_like_go() {
        let v = flow("{kind: Deployment, bogus: 1}");
        assert_eq!(
            Selector::from_value(&v, "patches.target"),
            Err("json: unknown field \"bogus\"".to_string())
        );
        assert!(Selector::from_value_lenient(&v, "patches.target").is_ok());
        let v = flow("{name: 5}");
        assert_eq!(
            Selector::from_value(&v, "replacements.targets.select"),
            Err("json: cannot unmarshal number into Go struct field Selector.replacements.targets.select.name of type string".to_string())
        );
        // Go matches field names case-insensitively.
        let v = flow("{Kind: Service, NAME: x}");
        let s = Selector::from_value(&v, "t").unwrap_or_default();
        assert_eq!((s.kind.as_str(), s.name.as_str()), ("Service", "x"));
        assert!(Selector::from_value(&Value::from("x"), "t").is_err());
        assert_eq!(
            Selector::from_value(&Value::Null, "t"),
            Ok(Selector::default())
        );
    }

    #[test]
    fn id_string_like_kyaml() {
        let s = Selector {
            kind: "ConfigMap".into(),
            ..Default::default()
        };
        assert_eq!(s.id_string(), "ConfigMap.[noVer].[noGrp]/[noName].[noNs]");
        let s = Selector {
            kind: "ConfigMap".into(),
            version: "v1".into(),
            name: "nope".into(),
            namespace: "x".into(),
            ..Default::default()
        };
        assert_eq!(s.id_string(), "ConfigMap.v1.[noGrp]/nope.x");
    }
}
