//! The YAML printer: [`Value`] -> text byte-identical to kustomize 5.5.
//!
//! kustomize prints a resource by encoding it as JSON with Go's
//! `encoding/json`, reading that JSON back with go-yaml v2 into generic Go
//! values and marshalling those with go-yaml v2 (a Go port of libyaml's
//! emitter). Every step leaves marks on the output, and this module
//! reproduces all of them without building the intermediate texts:
//!
//! * the JSON step: non-finite floats are rejected, floats are formatted the
//!   Go way and then re-read as YAML 1.1 plain scalars (so `3.0` prints `3`
//!   and `1e-7` prints `1e-07`), raw control characters that Go's JSON leaves
//!   unescaped make go-yaml's reader fail, and a raw NEL (U+0085) inside a
//!   JSON string is folded by go-yaml's double-quoted scalar scanner;
//! * go-yaml v2's encoder: map keys in its "natural" order, strings that would
//!   resolve to another type (YAML 1.1 rules) double-quoted, strings holding a
//!   newline requested as literal blocks;
//! * libyaml's emitter: scalar analysis and style fallback, line folding at
//!   80 columns, the block layout (indentless sequences under keys, compact
//!   `- key: value` items), complex `? key` entries for long or multi-line
//!   keys, and flow `{}` / `[]` for empty collections.
//!
//! [`to_go_json`] and [`format_float`] expose the Go JSON encoding itself
//! (used for content hashes and for substituting numbers into text).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt::Write as _;

use super::value::{Mapping, Value};

/// A value kustomize cannot print; the text is the message Go produces.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct EmitError(pub String);

/// Appends one YAML document (no `---` separator), ending in `"\n"`, exactly
/// as kustomize prints a resource.
///
/// On error nothing is appended to `out`. Errors mirror kustomize's failures,
/// with Go's messages:
/// * a NaN or infinite float: `json: unsupported value: NaN` (`+Inf`, `-Inf`);
/// * a string holding a character Go's JSON encoder leaves raw but go-yaml's
///   reader refuses (DEL, C1 controls other than NEL, U+FFFE, U+FFFF):
///   `yaml: control characters are not allowed`;
/// * a map key holding a NEL, or longer than 1022 characters once JSON
///   escaped: `yaml: [line N: ]did not find expected ',' or '}'`;
/// * a NEL followed by `--- ` or `... ` in a string:
///   `yaml: line N: found unexpected document indicator`.
pub fn write_document(out: &mut String, v: &Value) -> Result<(), EmitError> {
    let start = out.len();
    let result = {
        let mut emitter = Emitter::new(out);
        emitter.node(v, false, 0).map(|()| emitter.write_indent())
    };
    match result {
        Ok(()) => Ok(()),
        Err(fail) => {
            out.truncate(start);
            // Go encodes the whole resource as JSON before go-yaml reads it,
            // so an unsupported float wins over any YAML error, and the
            // YAML error reported is the first one in JSON text order.
            if let Some(name) = first_bad_float(v) {
                return Err(Fail::Float(name).into());
            }
            let mut line_breaks = 0;
            Err(first_yaml_error(v, &mut line_breaks).unwrap_or(fail).into())
        }
    }
}

/// Go `encoding/json.Marshal` of the value.
///
/// Map keys are sorted by byte order; `<`, `>` and `&` are escaped as
/// `\u003c`, `\u003e`, `\u0026`, U+2028/U+2029 as `\u2028`/`\u2029`, other
/// control characters as `\b`, `\f`, `\n`, `\r`, `\t` or `\u00XX`; floats use
/// Go's JSON formatting (see [`format_float`]). A NaN or infinite float is an
/// error with Go's message (`json: unsupported value: NaN`, `+Inf`, `-Inf`).
pub fn to_go_json(v: &Value) -> Result<String, EmitError> {
    let mut out = String::new();
    json_value(&mut out, v, 0)?;
    Ok(out)
}

/// Go `encoding/json`'s float64 formatting: shortest round-trip digits, in
/// plain decimal notation when `1e-6 <= |f| < 1e21` (or `f` is zero), else in
/// exponent notation with a two-digit minimum exponent except that a single
/// digit negative exponent loses its leading zero (`1e-7`, `1e+21`).
/// Non-finite values give Go's `strconv` spelling (`NaN`, `+Inf`, `-Inf`),
/// although JSON itself refuses them.
pub fn format_float(f: f64) -> String {
    let mut out = String::new();
    match non_finite_name(f) {
        Some(name) => out.push_str(name),
        None => push_json_float(&mut out, f),
    }
    out
}

/// go-yaml v2's ordering of map keys (its `keyList.Less` for strings).
///
/// Runes are compared one by one; at the first difference letters
/// (`unicode.IsLetter`) sort after everything else and among themselves by
/// code point; otherwise the digit runs starting there are compared as
/// numbers, then by run length, then by code point. A string that is a
/// prefix of the other sorts first. Like Go's, the relation is not
/// transitive for some key sets (`a9` < `a10` < `a1b` < `a9`).
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    if a == b {
        Ordering::Equal
    } else if natural_less(a, b) {
        Ordering::Less
    } else {
        Ordering::Greater
    }
}

// ---------------------------------------------------------------------------
// Errors

/// Why printing stopped; turned into the Go message by `From`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fail {
    /// A NaN or infinite float, with Go's spelling of it.
    Float(&'static str),
    /// A character go-yaml's reader refuses.
    Control,
    /// NEL followed by a document marker inside a JSON string; the number
    /// of NELs before the marker in the JSON text.
    DocumentIndicator(usize),
    /// A JSON object key go-yaml's scanner cannot take as a simple key
    /// (it spans a NEL or is longer than 1022 characters as JSON); the
    /// number of NELs in the JSON text up to its end.
    BadKey(usize),
    /// Nesting deeper than any parsed document can be.
    Depth,
}

impl From<Fail> for EmitError {
    fn from(fail: Fail) -> Self {
        EmitError(match fail {
            Fail::Float(name) => format!("json: unsupported value: {name}"),
            Fail::Control => "yaml: control characters are not allowed".to_string(),
            Fail::DocumentIndicator(line) => {
                format!(
                    "yaml: line {}: found unexpected document indicator",
                    line + 1
                )
            }
            Fail::BadKey(0) => "yaml: did not find expected ',' or '}'".to_string(),
            Fail::BadKey(line) => format!("yaml: line {line}: did not find expected ',' or '}}'"),
            Fail::Depth => "yaml: exceeded max depth of 10000".to_string(),
        })
    }
}

/// Deeper documents are refused rather than risking the stack (the YAML
/// reader refuses them before they could get here).
const MAX_DEPTH: usize = 10_000;

fn non_finite_name(f: f64) -> Option<&'static str> {
    if f.is_nan() {
        Some("NaN")
    } else if f.is_infinite() {
        Some(if f > 0.0 { "+Inf" } else { "-Inf" })
    } else {
        None
    }
}

/// The first non-finite float in Go JSON encoding order, if any.
fn first_bad_float(v: &Value) -> Option<&'static str> {
    fn has_bad(v: &Value) -> bool {
        match v {
            Value::Float(f) => !f.is_finite(),
            Value::Seq(items) => items.iter().any(has_bad),
            Value::Map(m) => m.values().any(has_bad),
            _ => false,
        }
    }
    if !has_bad(v) {
        return None;
    }
    match v {
        Value::Float(f) => non_finite_name(*f),
        Value::Seq(items) => items.iter().find_map(first_bad_float),
        Value::Map(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_unstable();
            keys.into_iter()
                .filter_map(|k| m.get(k))
                .find_map(first_bad_float)
        }
        _ => None,
    }
}

/// The first error go-yaml v2 meets reading the JSON text of `v`, if any.
/// `line_breaks` counts the NELs met so far (go-yaml's line number).
fn first_yaml_error(v: &Value, line_breaks: &mut usize) -> Option<Fail> {
    match v {
        Value::String(s) => json_string_error(s, false, line_breaks),
        Value::Seq(items) => items
            .iter()
            .find_map(|item| first_yaml_error(item, line_breaks)),
        Value::Map(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            entries.into_iter().find_map(|(k, item)| {
                json_string_error(k, true, line_breaks)
                    .or_else(|| first_yaml_error(item, line_breaks))
            })
        }
        _ => None,
    }
}

fn json_string_error(s: &str, is_key: bool, line_breaks: &mut usize) -> Option<Fail> {
    match json_round_trip(s) {
        Err(Fail::DocumentIndicator(n)) => return Some(Fail::DocumentIndicator(*line_breaks + n)),
        Err(fail) => return Some(fail),
        Ok(_) => {}
    }
    *line_breaks += s.chars().filter(|&c| c == '\u{85}').count();
    if is_key && is_bad_key(s) {
        return Some(Fail::BadKey(*line_breaks));
    }
    None
}

/// Whether go-yaml's scanner drops `key` as a simple key of a JSON object:
/// simple keys end on the line they start and within 1024 characters of
/// their start (the opening quote).
fn is_bad_key(key: &str) -> bool {
    if key.len() <= 1022 / 6 {
        return key.contains('\u{85}');
    }
    let mut len = 0usize;
    for c in key.chars() {
        len += match c {
            '\u{85}' => return true,
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            '<' | '>' | '&' | '\0'..='\u{1f}' | '\u{2028}' | '\u{2029}' => 6,
            _ => 1,
        };
    }
    len > 1022
}

// ---------------------------------------------------------------------------
// Go encoding/json

fn json_value(out: &mut String, v: &Value, depth: usize) -> Result<(), EmitError> {
    if depth > MAX_DEPTH {
        return Err(Fail::Depth.into());
    }
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::UInt(u) => {
            let _ = write!(out, "{u}");
        }
        Value::Float(f) => match non_finite_name(*f) {
            Some(name) => return Err(Fail::Float(name).into()),
            None => push_json_float(out, *f),
        },
        Value::String(s) => push_json_string(out, s),
        Value::Seq(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_value(out, item, depth + 1)?;
            }
            out.push(']');
        }
        Value::Map(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (k, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_json_string(out, k);
                out.push(':');
                json_value(out, item, depth + 1)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

/// A JSON string literal as Go writes it with HTML escaping on.
fn push_json_string(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    // Everything to escape is ASCII except U+2028 and U+2029 (E2 80 A8/A9).
    while let Some(&b) = bytes.get(i) {
        let (short, width) = match b {
            b'"' => ("\\\"", 1),
            b'\\' => ("\\\\", 1),
            b'\n' => ("\\n", 1),
            b'\r' => ("\\r", 1),
            b'\t' => ("\\t", 1),
            0x08 => ("\\b", 1),
            0x0C => ("\\f", 1),
            b'<' | b'>' | b'&' | 0x00..=0x1F => ("", 1),
            0xE2 if bytes.get(i + 1) == Some(&0x80) => match bytes.get(i + 2) {
                Some(0xA8) => ("\\u2028", 3),
                Some(0xA9) => ("\\u2029", 3),
                _ => ("-", 0),
            },
            _ => ("-", 0),
        };
        if width == 0 {
            i += 1;
            continue;
        }
        out.push_str(s.get(start..i).unwrap_or_default());
        if short.is_empty() {
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xF)]));
        } else {
            out.push_str(short);
        }
        i += width;
        start = i;
    }
    out.push_str(s.get(start..).unwrap_or_default());
    out.push('"');
}

// ---------------------------------------------------------------------------
// Float formatting (Go strconv, shortest digits)

/// A finite float as shortest round-trip decimal digits: the value is
/// `0.DIGITS * 10^point` (Go's `decimalSlice` with `nd` digits and `dp`).
struct Decimal {
    negative: bool,
    digits: [u8; 24],
    len: usize,
    point: i32,
}

impl Decimal {
    fn new(f: f64) -> Decimal {
        let mut d = Decimal {
            negative: f.is_sign_negative(),
            digits: [0; 24],
            len: 0,
            point: 0,
        };
        if f == 0.0 {
            return d;
        }
        // Rust's `{:e}` prints the shortest digits that round-trip, as
        // `D[.DDD]e[-]X`; Go's shortest formatting picks the same digits.
        let mut text = StackText::default();
        let _ = write!(text, "{:e}", f.abs());
        let mut exponent: i32 = 0;
        let mut exponent_negative = false;
        let mut in_exponent = false;
        for &b in text.as_bytes() {
            match b {
                b'0'..=b'9' if in_exponent => {
                    exponent = exponent
                        .saturating_mul(10)
                        .saturating_add(i32::from(b - b'0'));
                }
                b'0'..=b'9' => {
                    if let Some(slot) = d.digits.get_mut(d.len) {
                        *slot = b;
                        d.len += 1;
                    }
                }
                b'e' => in_exponent = true,
                b'-' if in_exponent => exponent_negative = true,
                _ => {}
            }
        }
        // Drop trailing zeros so that `len` is the shortest digit count.
        while d.len > 1 && d.digits.get(d.len - 1) == Some(&b'0') {
            d.len -= 1;
        }
        d.point = if exponent_negative {
            -exponent
        } else {
            exponent
        } + 1;
        d
    }

    fn digit(&self, i: i32) -> u8 {
        usize::try_from(i)
            .ok()
            .filter(|&i| i < self.len)
            .and_then(|i| self.digits.get(i).copied())
            .unwrap_or(b'0')
    }

    fn len_i32(&self) -> i32 {
        i32::try_from(self.len).unwrap_or(0)
    }

    /// Go's `%f` with `frac` digits after the point.
    fn push_fixed(&self, out: &mut String, frac: i32) {
        if self.negative {
            out.push('-');
        }
        if self.point > 0 {
            for i in 0..self.point {
                out.push(char::from(self.digit(i)));
            }
        } else {
            out.push('0');
        }
        if frac > 0 {
            out.push('.');
            for i in 0..frac {
                out.push(char::from(self.digit(self.point + i)));
            }
        }
    }

    /// Go's `%e` with all the digits; the exponent has at least two digits.
    fn push_exponent(&self, out: &mut String) {
        if self.negative {
            out.push('-');
        }
        out.push(char::from(self.digit(0)));
        if self.len > 1 {
            out.push('.');
            for i in 1..self.len_i32() {
                out.push(char::from(self.digit(i)));
            }
        }
        out.push('e');
        let exp = if self.len == 0 { 0 } else { self.point - 1 };
        out.push(if exp < 0 { '-' } else { '+' });
        let exp = exp.unsigned_abs();
        if exp < 10 {
            out.push('0');
        }
        let _ = write!(out, "{exp}");
    }
}

/// Go `encoding/json`'s float encoding (the value must be finite).
fn push_json_float(out: &mut String, f: f64) {
    let d = Decimal::new(f);
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let start = out.len();
        d.push_exponent(out);
        // Go's JSON encoder turns `e-07` into `e-7`.
        let tail = out.get(start..).unwrap_or_default();
        if let Some(pos) = tail.find("e-0")
            && tail.len() == pos + 4
        {
            out.remove(start + pos + 2);
        }
    } else {
        d.push_fixed(out, (d.len_i32() - d.point).max(0));
    }
}

/// [`push_yaml_float`] to a new string: how a float64 that went through
/// Go's JSON and go-yaml v2 reads as text (sigs.k8s.io/yaml turning a
/// number into a string field's value does the same).
pub fn format_yaml_float(f: f64) -> String {
    let mut out = String::new();
    push_yaml_float(&mut out, f);
    out
}

/// A finite float as go-yaml v2 prints it after reading Go's JSON for it:
/// integral values that fit 64 bits become integers, the rest are
/// formatted with `strconv.FormatFloat(f, 'g', -1, 64)`.
fn push_yaml_float(out: &mut String, f: f64) {
    let mut json = String::new();
    push_json_float(&mut json, f);
    if let Ok(i) = json.parse::<i64>() {
        let _ = write!(out, "{i}");
        return;
    }
    if let Ok(u) = json.parse::<u64>() {
        let _ = write!(out, "{u}");
        return;
    }
    let d = Decimal::new(f);
    let exp = d.point - 1;
    if !(-4..6).contains(&exp) {
        d.push_exponent(out);
    } else {
        d.push_fixed(out, (d.len_i32() - d.point).max(0));
    }
}

/// A small fixed buffer for formatting numbers without allocating.
#[derive(Default)]
struct StackText {
    buf: [u8; 32],
    len: usize,
}

impl StackText {
    fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or_default()
    }
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let slot = self.buf.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        slot.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// The emitter (libyaml's, as go-yaml v2 runs it: indent 2, width 80, unicode)

const BEST_WIDTH: usize = 80;
const BEST_INDENT: isize = 2;
/// Longest key (in bytes) libyaml writes as a simple `key: value` entry.
const MAX_SIMPLE_KEY_LEN: usize = 128;

/// The scalar styles the encoder requests or the emitter falls back to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

/// What the scalar analysis allows, for block context.
#[derive(Debug, Clone, Copy)]
struct Analysis {
    multiline: bool,
    /// Holds a `\n` (the encoder then asks for a literal block).
    has_newline: bool,
    plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

struct Emitter<'o> {
    out: &'o mut String,
    /// Characters (not bytes) written on the current line.
    column: usize,
    /// The last thing written was whitespace (or nothing yet).
    whitespace: bool,
    /// Only indentation has been written on the current line.
    indention: bool,
    /// Current indentation; negative before the root node.
    indent: isize,
    /// Key order of the mappings being written, innermost last: each
    /// mapping sorts its entry indices in a segment at the end.
    order: Vec<usize>,
}

impl<'o> Emitter<'o> {
    fn new(out: &'o mut String) -> Self {
        Emitter {
            out,
            column: 0,
            whitespace: true,
            indention: true,
            indent: -1,
            order: Vec::new(),
        }
    }

    // -- output primitives -------------------------------------------------

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    /// Copies a line break character from a scalar.
    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn write_indent(&mut self) {
        let indent = usize::try_from(self.indent).unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        self.out.push_str(indicator);
        self.column += indicator.len();
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    // -- nodes -------------------------------------------------------------

    /// Emits any node; `in_mapping` tells whether it is a mapping value.
    fn node(&mut self, v: &Value, in_mapping: bool, depth: usize) -> Result<(), Fail> {
        if depth > MAX_DEPTH {
            return Err(Fail::Depth);
        }
        match v {
            Value::Null => self.simple_plain(format_args!("null")),
            Value::Bool(b) => self.simple_plain(format_args!("{b}")),
            Value::Int(i) => self.simple_plain(format_args!("{i}")),
            Value::UInt(u) => self.simple_plain(format_args!("{u}")),
            Value::Float(f) => {
                if let Some(name) = non_finite_name(*f) {
                    return Err(Fail::Float(name));
                }
                self.plain_prefix();
                let start = self.out.len();
                push_yaml_float(self.out, *f);
                self.column += self.out.len() - start;
                self.plain_suffix();
            }
            Value::String(s) => {
                let s = json_round_trip(s)?;
                let analysis = analyze(&s);
                self.scalar(&s, requested_style(&s, &analysis), analysis, false);
            }
            Value::Seq(items) if items.is_empty() => self.empty_flow("[", "]"),
            Value::Seq(items) => self.block_sequence(items, in_mapping, depth)?,
            Value::Map(m) if m.is_empty() => self.empty_flow("{", "}"),
            Value::Map(m) => self.block_mapping(m, depth)?,
        }
        Ok(())
    }

    fn empty_flow(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.write_indicator(close, false, false, false);
    }

    fn block_sequence(
        &mut self,
        items: &[Value],
        in_mapping: bool,
        depth: usize,
    ) -> Result<(), Fail> {
        let saved = self.indent;
        // A sequence that is a mapping value starts on the next line at
        // the key's own indentation.
        let indentless = in_mapping && !self.indention;
        self.indent = if saved < 0 {
            0
        } else if indentless {
            saved
        } else {
            saved + BEST_INDENT
        };
        for item in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.node(item, false, depth + 1)?;
        }
        self.indent = saved;
        Ok(())
    }

    fn block_mapping(&mut self, m: &Mapping, depth: usize) -> Result<(), Fail> {
        let saved = self.indent;
        self.indent = if saved < 0 { 0 } else { saved + BEST_INDENT };
        let base = self.order.len();
        self.order.extend(0..m.len());
        if let Some(segment) = self.order.get_mut(base..) {
            sort_by_less(segment, |a, b| {
                let key = |i: usize| m.get_index(i).map_or("", |(k, _)| k.as_str());
                natural_less(key(*a), key(*b))
            });
        }
        for position in base..base + m.len() {
            let Some((key, value)) = self.order.get(position).and_then(|&i| m.get_index(i)) else {
                continue;
            };
            self.write_indent();
            let raw_key = key;
            let key = json_round_trip(raw_key)?;
            if is_bad_key(raw_key) {
                return Err(Fail::BadKey(0));
            }
            let analysis = analyze(&key);
            let style = requested_style(&key, &analysis);
            if !analysis.multiline && key.len() <= MAX_SIMPLE_KEY_LEN {
                self.scalar(&key, style, analysis, true);
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.scalar(&key, style, analysis, false);
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.node(value, true, depth + 1)?;
        }
        self.order.truncate(base);
        self.indent = saved;
        Ok(())
    }

    // -- scalars -----------------------------------------------------------

    /// A plain scalar known to need neither quoting nor folding.
    fn simple_plain(&mut self, text: std::fmt::Arguments<'_>) {
        self.plain_prefix();
        let start = self.out.len();
        let _ = self.out.write_fmt(text);
        self.column += self.out.len() - start;
        self.plain_suffix();
    }

    fn plain_prefix(&mut self) {
        if !self.whitespace {
            self.put(' ');
        }
    }

    fn plain_suffix(&mut self) {
        self.whitespace = false;
        self.indention = false;
    }

    fn scalar(&mut self, value: &str, requested: Style, analysis: Analysis, simple_key: bool) {
        let mut style = requested;
        if simple_key && analysis.multiline {
            style = Style::DoubleQuoted;
        }
        if style == Style::Plain && (!analysis.plain_allowed || (value.is_empty() && simple_key)) {
            style = Style::SingleQuoted;
        }
        if style == Style::SingleQuoted && !analysis.single_quoted_allowed {
            style = Style::DoubleQuoted;
        }
        if style == Style::Literal && (!analysis.block_allowed || simple_key) {
            style = Style::DoubleQuoted;
        }

        let saved = self.indent;
        self.indent = if saved < 0 {
            BEST_INDENT
        } else {
            saved + BEST_INDENT
        };
        let allow_breaks = !simple_key;
        match style {
            Style::Plain => self.write_plain(value, allow_breaks),
            Style::SingleQuoted => self.write_single_quoted(value, allow_breaks),
            Style::DoubleQuoted => self.write_double_quoted(value, allow_breaks),
            Style::Literal => self.write_literal(value),
        }
        self.indent = saved;
    }

    /// Writes `value` in one go when no character of it can need a line
    /// break or escaping; false when the caller must write it piecewise.
    fn write_unfolded(&mut self, value: &str) -> bool {
        // A break is only ever considered at a space written past the
        // best width; a value shorter than the room left never gets there.
        if self.column + value.len() > BEST_WIDTH + 1 {
            return false;
        }
        self.out.push_str(value);
        self.column += if value.is_ascii() {
            value.len()
        } else {
            value.chars().count()
        };
        true
    }

    fn write_plain(&mut self, value: &str, allow_breaks: bool) {
        self.plain_prefix();
        // Plain scalars never hold line breaks (the analysis forbids it).
        if self.write_unfolded(value) {
            self.plain_suffix();
            return;
        }
        let bytes = value.as_bytes();
        let mut spaces = false;
        let mut breaks = false;
        for (i, c) in value.char_indices() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && bytes.get(i + 1) != Some(&b' ')
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.plain_suffix();
    }

    fn write_single_quoted(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        if !value.contains(['\'', '\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'])
            && self.write_unfolded(value)
        {
            self.write_indicator("'", false, false, false);
            self.whitespace = false;
            self.indention = false;
            return;
        }
        let bytes = value.as_bytes();
        let mut spaces = false;
        let mut breaks = false;
        for (i, c) in value.char_indices() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < bytes.len()
                    && bytes.get(i + 1) != Some(&b' ')
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double_quoted(&mut self, value: &str, allow_breaks: bool) {
        const HEX: &[u8; 16] = b"0123456789ABCDEF";
        self.write_indicator("\"", true, false, false);
        let bytes = value.as_bytes();
        // libyaml tests for a byte order mark at the start of the value
        // for every character, so such a value is escaped throughout.
        let escape_all = value.starts_with('\u{feff}');
        let mut spaces = false;
        for (i, c) in value.char_indices() {
            if escape_all || !is_printable(c) || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                let short = match c {
                    '\0' => Some('0'),
                    '\u{7}' => Some('a'),
                    '\u{8}' => Some('b'),
                    '\t' => Some('t'),
                    '\n' => Some('n'),
                    '\u{b}' => Some('v'),
                    '\u{c}' => Some('f'),
                    '\r' => Some('r'),
                    '\u{1b}' => Some('e'),
                    '"' => Some('"'),
                    '\\' => Some('\\'),
                    '\u{85}' => Some('N'),
                    '\u{a0}' => Some('_'),
                    '\u{2028}' => Some('L'),
                    '\u{2029}' => Some('P'),
                    _ => None,
                };
                if let Some(code) = short {
                    self.put(code);
                } else {
                    let v = u32::from(c);
                    let (letter, width) = if v <= 0xFF {
                        ('x', 2)
                    } else if v <= 0xFFFF {
                        ('u', 4)
                    } else {
                        ('U', 8)
                    };
                    self.put(letter);
                    for k in (0..width).rev() {
                        let digit = (v >> (4 * k)) & 0xF;
                        self.put(char::from(HEX.get(digit as usize).copied().unwrap_or(b'0')));
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < bytes.len()
                {
                    self.write_indent();
                    if bytes.get(i + 1) == Some(&b' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_literal(&mut self, value: &str) {
        self.write_indicator("|", true, false, false);
        // Indentation indicator when the content starts with a space or a
        // line break, chomping indicator from the trailing line breaks.
        if value.starts_with(' ') || value.chars().next().is_some_and(is_break) {
            self.write_indicator("2", false, false, false);
        }
        let mut tail = value.chars().rev();
        let chomp = match (tail.next(), tail.next()) {
            (Some(last), _) if !is_break(last) => Some("-"),
            (None, _) => Some("-"),
            (Some(_), None) => Some("+"),
            (Some(_), Some(before)) if is_break(before) => Some("+"),
            _ => None,
        };
        if let Some(chomp) = chomp {
            self.write_indicator(chomp, false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for c in value.chars() {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

/// libyaml's `is_break`.
fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// libyaml's `is_printable` (which leaves out everything beyond the BMP).
fn is_printable(c: char) -> bool {
    matches!(c, '\n' | ' '..='~' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}')
        && c != '\u{feff}'
}

/// libyaml's `yaml_emitter_analyze_scalar`, reduced to what block context
/// needs.
fn analyze(value: &str) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            has_newline: false,
            plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let bytes = value.as_bytes();
    let mut indicators = bytes.starts_with(b"---") || bytes.starts_with(b"...");
    let mut line_breaks = false;
    let mut special_characters = false;
    let mut leading_space = false;
    let mut leading_break = false;
    let mut trailing_space = false;
    let mut trailing_break = false;
    let mut break_space = false;
    let mut space_break = false;
    let mut preceded_by_whitespace = true;
    let mut previous_space = false;
    let mut previous_break = false;

    let mut has_newline = false;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        // Letters and digits, the bulk of most values, only reset the
        // state about the previous character.
        if b.is_ascii_alphanumeric() {
            previous_space = false;
            previous_break = false;
            preceded_by_whitespace = false;
            i += 1;
            continue;
        }
        let c = if b.is_ascii() {
            char::from(b)
        } else {
            value
                .get(i..)
                .and_then(|rest| rest.chars().next())
                .unwrap_or('\u{fffd}')
        };
        let end = i + c.len_utf8();
        let followed_by_whitespace = || matches!(bytes.get(end), None | Some(b' ' | b'\t'));
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => indicators = true,
                '?' | ':' | '-' if followed_by_whitespace() => indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace() => indicators = true,
                '#' if preceded_by_whitespace => indicators = true,
                _ => {}
            }
        }
        if !is_printable(c) {
            special_characters = true;
        }
        if c == ' ' {
            leading_space |= i == 0;
            trailing_space |= end == bytes.len();
            break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            has_newline |= c == '\n';
            leading_break |= i == 0;
            trailing_break |= end == bytes.len();
            space_break |= previous_space;
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = matches!(c, ' ' | '\t' | '\0') || is_break(c);
        i = end;
    }

    let mut analysis = Analysis {
        multiline: line_breaks,
        has_newline,
        plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        analysis.plain_allowed = false;
    }
    if trailing_space {
        analysis.block_allowed = false;
    }
    if break_space {
        analysis.plain_allowed = false;
        analysis.single_quoted_allowed = false;
    }
    if space_break || special_characters {
        analysis.plain_allowed = false;
        analysis.single_quoted_allowed = false;
        analysis.block_allowed = false;
    }
    if line_breaks || indicators {
        analysis.plain_allowed = false;
    }
    analysis
}

/// The style go-yaml v2's encoder asks for a string.
fn requested_style(s: &str, analysis: &Analysis) -> Style {
    if analysis.has_newline {
        Style::Literal
    } else if resolves_to_non_string(s) || is_base60_float(s) {
        Style::DoubleQuoted
    } else {
        Style::Plain
    }
}

/// A string as kustomize has it after marshalling it to JSON and reading
/// that back with go-yaml v2 (how the builtin generators receive the
/// `configMapGenerator`/`secretGenerator` fields): NELs folded, or the
/// error go-yaml's reader gives.
pub fn go_yaml_round_trip(s: &str) -> Result<Cow<'_, str>, EmitError> {
    json_round_trip(s).map_err(EmitError::from)
}

/// What becomes of a string on its way through Go's JSON encoder and
/// go-yaml v2's double-quoted scalar scanner.
///
/// Go leaves DEL, C1 controls, U+FFFE and U+FFFF raw, and go-yaml's reader
/// refuses them. NEL is left raw too and go-yaml reads it as a line break
/// inside the quoted scalar: spaces around it vanish, a single one folds to
/// a space and `n` consecutive ones to `n - 1` newlines.
fn json_round_trip(s: &str) -> Result<Cow<'_, str>, Fail> {
    if s.bytes().all(|b| b < 0x7F) {
        return Ok(Cow::Borrowed(s));
    }
    let mut has_nel = false;
    for c in s.chars() {
        match c {
            '\u{7f}'..='\u{84}' | '\u{86}'..='\u{9f}' | '\u{fffe}' | '\u{ffff}' => {
                return Err(Fail::Control);
            }
            '\u{85}' => has_nel = true,
            _ => {}
        }
    }
    if !has_nel {
        return Ok(Cow::Borrowed(s));
    }
    let mut folded = String::with_capacity(s.len());
    let mut pending_spaces = 0usize;
    let mut chars = s.chars().peekable();
    loop {
        while let Some(&c) = chars.peek() {
            if c == ' ' || c == '\u{85}' {
                break;
            }
            folded.push(c);
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        let mut leading_break = false;
        let mut trailing_breaks = 0usize;
        let mut last_was_break = false;
        while let Some(&c) = chars.peek() {
            if c == ' ' {
                if !leading_break {
                    pending_spaces += 1;
                }
                last_was_break = false;
            } else if c == '\u{85}' {
                if leading_break {
                    trailing_breaks += 1;
                } else {
                    pending_spaces = 0;
                    leading_break = true;
                }
                last_was_break = true;
            } else {
                break;
            }
            chars.next();
        }
        if leading_break {
            // After a line break the scanner is at column 0, where a
            // document marker ends the scalar with an error.
            if last_was_break {
                let rest: String = chars.clone().take(4).collect();
                let marker = rest.starts_with("---") || rest.starts_with("...");
                let blank_after = matches!(rest.chars().nth(3), Some(' ' | '\u{85}'));
                if marker && blank_after {
                    let before = s.len() - chars.clone().map(char::len_utf8).sum::<usize>();
                    let nels = s
                        .get(..before)
                        .unwrap_or_default()
                        .matches('\u{85}')
                        .count();
                    return Err(Fail::DocumentIndicator(nels));
                }
            }
            if trailing_breaks == 0 {
                folded.push(' ');
            } else {
                folded.extend(std::iter::repeat_n('\n', trailing_breaks));
            }
        } else {
            folded.extend(std::iter::repeat_n(' ', pending_spaces));
        }
        pending_spaces = 0;
    }
    Ok(Cow::Owned(folded))
}

// ---------------------------------------------------------------------------
// go-yaml v2's resolver, as far as the encoder asks it about strings

/// Whether go-yaml v2 would read `s` as a plain scalar into something other
/// than a string (bool, null, int, float, timestamp).
fn resolves_to_non_string(s: &str) -> bool {
    let Some(&first) = s.as_bytes().first() else {
        return true; // the empty plain scalar is null
    };
    let hint = match first {
        b'+' | b'-' | b'0'..=b'9' => b'D',
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => b'M',
        b'.' => b'.',
        _ => return false,
    };
    if is_special_plain(s) {
        return true;
    }
    match hint {
        b'.' => go_parse_float_ok(s, true),
        b'D' => {
            if is_timestamp(s) {
                return true;
            }
            let plain: Cow<'_, str> = if s.contains('_') {
                Cow::Owned(s.replace('_', ""))
            } else {
                Cow::Borrowed(s)
            };
            let p = plain.as_bytes();
            go_parse_int(p, 0)
                || go_parse_uint(p, 0).is_some()
                || (is_yaml_style_float(p) && go_parse_float_ok(&plain, false))
                || p.strip_prefix(b"0b")
                    .is_some_and(|rest| go_parse_int(rest, 2) || go_parse_uint(rest, 2).is_some())
                || p.strip_prefix(b"-0b")
                    .is_some_and(|rest| go_parse_int(&[b"-".as_slice(), rest].concat(), 2))
        }
        _ => false,
    }
}

/// The words go-yaml v2 resolves by table lookup.
fn is_special_plain(s: &str) -> bool {
    matches!(
        s,
        "y" | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "true"
            | "True"
            | "TRUE"
            | "on"
            | "On"
            | "ON"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "false"
            | "False"
            | "FALSE"
            | "off"
            | "Off"
            | "OFF"
            | "~"
            | "null"
            | "Null"
            | "NULL"
            | ".nan"
            | ".NaN"
            | ".NAN"
            | ".inf"
            | ".Inf"
            | ".INF"
            | "+.inf"
            | "+.Inf"
            | "+.INF"
            | "-.inf"
            | "-.Inf"
            | "-.INF"
    )
}

/// Go `strconv.ParseUint(s, base, 64)`: the value when it succeeds
/// (`base` 0 picks the base from a `0b`/`0o`/`0x`/`0` prefix). The input
/// never holds underscores.
fn go_parse_uint(s: &[u8], base: u32) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let (base, digits) = if base == 0 {
        match s {
            [b'0', p, rest @ ..] if !rest.is_empty() && p.eq_ignore_ascii_case(&b'b') => (2, rest),
            [b'0', p, rest @ ..] if !rest.is_empty() && p.eq_ignore_ascii_case(&b'o') => (8, rest),
            [b'0', p, rest @ ..] if !rest.is_empty() && p.eq_ignore_ascii_case(&b'x') => (16, rest),
            [b'0', rest @ ..] => (8, rest),
            _ => (10, s),
        }
    } else {
        (base, s)
    };
    let mut n: u64 = 0;
    for &c in digits {
        let d = match c {
            b'0'..=b'9' => u32::from(c - b'0'),
            b'a'..=b'z' => u32::from(c - b'a') + 10,
            b'A'..=b'Z' => u32::from(c - b'A') + 10,
            _ => return None,
        };
        if d >= base {
            return None;
        }
        n = n.checked_mul(u64::from(base))?.checked_add(u64::from(d))?;
    }
    Some(n)
}

/// Go `strconv.ParseInt(s, base, 64)` succeeds.
fn go_parse_int(s: &[u8], base: u32) -> bool {
    let (negative, rest) = match s {
        [b'+', rest @ ..] => (false, rest),
        [b'-', rest @ ..] => (true, rest),
        _ => (false, s),
    };
    match go_parse_uint(rest, base) {
        Some(magnitude) if negative => magnitude <= 1u64 << 63,
        Some(magnitude) => magnitude < 1u64 << 63,
        None => false,
    }
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_style_float(s: &[u8]) -> bool {
    fn digits(s: &[u8]) -> usize {
        s.iter().take_while(|c| c.is_ascii_digit()).count()
    }
    let mut rest = match s {
        [b'+' | b'-', rest @ ..] => rest,
        _ => s,
    };
    if let [b'.', after @ ..] = rest {
        let n = digits(after);
        if n == 0 {
            return false;
        }
        rest = after.get(n..).unwrap_or_default();
    } else {
        let n = digits(rest);
        if n == 0 {
            return false;
        }
        rest = rest.get(n..).unwrap_or_default();
        if let [b'.', after @ ..] = rest {
            rest = after.get(digits(after)..).unwrap_or_default();
        }
    }
    if let [b'e' | b'E', after @ ..] = rest {
        let after = match after {
            [b'+' | b'-', a @ ..] => a,
            _ => after,
        };
        let n = digits(after);
        if n == 0 {
            return false;
        }
        rest = after.get(n..).unwrap_or_default();
    }
    rest.is_empty()
}

/// Go `strconv.ParseFloat(s, 64)` succeeds without overflowing, for the
/// decimal forms the resolver can hand it. With `dot_form` the string starts
/// with `.` and may hold underscores between digits; otherwise it already
/// matched [`is_yaml_style_float`].
fn go_parse_float_ok(s: &str, dot_form: bool) -> bool {
    if dot_form {
        let b = s.as_bytes();
        let Some(mantissa) = b.strip_prefix(b".") else {
            return false;
        };
        let m = mantissa
            .iter()
            .take_while(|c| c.is_ascii_digit() || **c == b'_')
            .count();
        if !mantissa.iter().take(m).any(u8::is_ascii_digit) {
            return false;
        }
        let rest = mantissa.get(m..).unwrap_or_default();
        if let [b'e' | b'E', after @ ..] = rest {
            let after = match after {
                [b'+' | b'-', a @ ..] => a,
                _ => after,
            };
            if !after.first().is_some_and(u8::is_ascii_digit) {
                return false;
            }
            if !after.iter().all(|c| c.is_ascii_digit() || *c == b'_') {
                return false;
            }
        } else if !rest.is_empty() {
            return false;
        }
        if s.contains('_') && !underscore_ok(b) {
            return false;
        }
    }
    let cleaned: Cow<'_, str> = if s.contains('_') {
        Cow::Owned(s.replace('_', ""))
    } else {
        Cow::Borrowed(s)
    };
    cleaned.parse::<f64>().is_ok_and(f64::is_finite)
}

/// Go strconv's `underscoreOK` for a decimal number: every underscore sits
/// between digits.
fn underscore_ok(s: &[u8]) -> bool {
    let mut saw = b'^';
    let s = match s {
        [b'+' | b'-', rest @ ..] => rest,
        _ => s,
    };
    for &c in s {
        if c.is_ascii_digit() {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
    }
    saw != b'_'
}

/// `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`: YAML 1.1 base 60,
/// which go-yaml v2 quotes although it does not read it as a number.
fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let rest = match b {
        [b'+' | b'-', rest @ ..] => rest,
        _ => b,
    };
    let [first, rest @ ..] = rest else {
        return false;
    };
    if !first.is_ascii_digit() || !b.contains(&b':') {
        return false;
    }
    let mut rest = rest
        .get(
            rest.iter()
                .take_while(|c| c.is_ascii_digit() || **c == b'_')
                .count()..,
        )
        .unwrap_or_default();
    let mut groups = 0;
    while let [b':', after @ ..] = rest {
        rest = match after {
            [b'0'..=b'5', b'0'..=b'9', more @ ..] => more,
            [b'0'..=b'9', more @ ..] => more,
            _ => return false,
        };
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    match rest {
        [] => true,
        [b'.', frac @ ..] => frac.iter().all(|c| c.is_ascii_digit() || *c == b'_'),
        _ => false,
    }
}

/// One of go-yaml v2's timestamp layouts parses `s` with Go's `time.Parse`:
/// `2006-1-2T15:4:5.999999999Z07:00` (also with `t`),
/// `2006-1-2 15:4:5.999999999` and `2006-1-2`.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let year_digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if year_digits != 4 || b.get(4) != Some(&b'-') {
        return false;
    }
    let year = b
        .iter()
        .take(4)
        .fold(0u32, |acc, c| acc * 10 + u32::from(c - b'0'));
    let rest = b.get(5..).unwrap_or_default();
    let Some((month, rest)) = time_number(rest) else {
        return false;
    };
    if !(1..=12).contains(&month) {
        return false;
    }
    let Some(rest) = rest.strip_prefix(b"-") else {
        return false;
    };
    let Some((day, rest)) = time_number(rest) else {
        return false;
    };
    let time_ok = match rest {
        [] => true,
        [b'T' | b't', time @ ..] => time_of_day(time, true),
        [b' ', ..] => {
            let spaces = rest.iter().take_while(|c| **c == b' ').count();
            time_of_day(rest.get(spaces..).unwrap_or_default(), false)
        }
        _ => false,
    };
    let days_in_month = match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    time_ok && (1..=days_in_month).contains(&day)
}

/// Go time's `getnum(s, false)`: one or two digits.
fn time_number(s: &[u8]) -> Option<(u32, &[u8])> {
    match s {
        [a @ b'0'..=b'9', b @ b'0'..=b'9', rest @ ..] => {
            Some((u32::from(a - b'0') * 10 + u32::from(b - b'0'), rest))
        }
        [a @ b'0'..=b'9', rest @ ..] => Some((u32::from(a - b'0'), rest)),
        _ => None,
    }
}

/// `15:4:5.999999999` followed by `Z07:00` when `zone` is set, and nothing
/// else.
fn time_of_day(s: &[u8], zone: bool) -> bool {
    let Some((hour, rest)) = time_number(s) else {
        return false;
    };
    let Some(rest) = rest.strip_prefix(b":") else {
        return false;
    };
    let Some((minute, rest)) = time_number(rest) else {
        return false;
    };
    let Some(rest) = rest.strip_prefix(b":") else {
        return false;
    };
    let Some((second, mut rest)) = time_number(rest) else {
        return false;
    };
    if hour >= 24 || minute >= 60 || second >= 60 {
        return false;
    }
    if let [b'.' | b',', d, after @ ..] = rest
        && d.is_ascii_digit()
    {
        rest = after
            .get(after.iter().take_while(|c| c.is_ascii_digit()).count()..)
            .unwrap_or_default();
    }
    if !zone {
        return rest.is_empty();
    }
    match rest {
        [b'Z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => {
            let all_digits = [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit());
            let hours = u32::from(h1.wrapping_sub(b'0')) * 10 + u32::from(h2.wrapping_sub(b'0'));
            let minutes = u32::from(m1.wrapping_sub(b'0')) * 10 + u32::from(m2.wrapping_sub(b'0'));
            all_digits && hours <= 24 && minutes <= 60
        }
        _ => false,
    }
}

// ---------------------------------------------------------------------------
// Key order

/// go-yaml v2's `keyList.Less` for two strings.
fn natural_less(a: &str, b: &str) -> bool {
    let mut a_chars = a.char_indices();
    let mut b_chars = b.chars();
    loop {
        let (pos, ca, cb) = match (a_chars.next(), b_chars.next()) {
            (Some((pos, ca)), Some(cb)) => (pos, ca, cb),
            (None, Some(_)) => return true,
            _ => return false,
        };
        if ca == cb {
            continue;
        }
        let a_letter = is_letter(ca);
        let b_letter = is_letter(cb);
        if a_letter && b_letter {
            return ca < cb;
        }
        if a_letter || b_letter {
            return b_letter;
        }
        // The common prefix is the same in both strings.
        let prefix = a.get(..pos).unwrap_or_default();
        let mut seed = 0i64;
        if ca == '0' || cb == '0' {
            for c in prefix.chars().rev() {
                if !is_digit(c) {
                    break;
                }
                if c != '0' {
                    seed = 1;
                    break;
                }
            }
        }
        let (an, a_len) = digit_run(a.get(pos..).unwrap_or_default(), seed);
        let (bn, b_len) = digit_run(b.get(pos..).unwrap_or_default(), seed);
        if an != bn {
            return an < bn;
        }
        if a_len != b_len {
            return a_len < b_len;
        }
        return ca < cb;
    }
}

/// The value (with Go's wrapping int64 arithmetic) and length in runes of
/// the digit run at the start of `s`.
fn digit_run(s: &str, seed: i64) -> (i64, usize) {
    let mut n = seed;
    let mut len = 0;
    for c in s.chars().take_while(|c| is_digit(*c)) {
        n = n
            .wrapping_mul(10)
            .wrapping_add(i64::from(u32::from(c)) - i64::from(b'0'));
        len += 1;
    }
    (n, len)
}

/// Go's `unicode.IsLetter` (Unicode 15.0 category L).
fn is_letter(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphabetic()
    } else {
        in_ranges(LETTER_RANGES, c)
    }
}

/// Go's `unicode.IsDigit` (Unicode 15.0 category Nd).
fn is_digit(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_digit()
    } else {
        in_ranges(DIGIT_RANGES, c)
    }
}

fn in_ranges(table: &[(u32, u32)], c: char) -> bool {
    let c = u32::from(c);
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                Ordering::Less
            } else if lo > c {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        })
        .is_ok()
}

/// Sorts `items` by `less` without ever panicking, whatever the comparator
/// does (Go's is not a total order for every key set): insertion sort for
/// short slices, a bottom-up merge sort otherwise. Both are stable.
fn sort_by_less<T: Copy>(items: &mut [T], less: impl Fn(&T, &T) -> bool) {
    if items.len() <= 16 {
        for i in 1..items.len() {
            let mut j = i;
            while j > 0 {
                match (items.get(j), items.get(j - 1)) {
                    (Some(cur), Some(prev)) if less(cur, prev) => items.swap(j, j - 1),
                    _ => break,
                }
                j -= 1;
            }
        }
        return;
    }
    let n = items.len();
    let mut src: Vec<T> = items.to_vec();
    let mut dst: Vec<T> = Vec::with_capacity(n);
    let mut width = 1;
    while width < n {
        dst.clear();
        for chunk in src.chunks(2 * width) {
            let (left, right) = chunk.split_at(width.min(chunk.len()));
            let mut left = left.iter().peekable();
            let mut right = right.iter().peekable();
            loop {
                let take_right = match (left.peek(), right.peek()) {
                    (Some(l), Some(r)) => less(r, l),
                    (Some(_), None) => false,
                    (None, Some(_)) => true,
                    (None, None) => break,
                };
                let next = if take_right {
                    right.next()
                } else {
                    left.next()
                };
                if let Some(item) = next {
                    dst.push(*item);
                }
            }
        }
        std::mem::swap(&mut src, &mut dst);
        width *= 2;
    }
    for (slot, item) in items.iter_mut().zip(src) {
        *slot = item;
    }
}

// ---------------------------------------------------------------------------
// Unicode 15.0 tables for the key order (non-ASCII part), as inclusive ranges

#[rustfmt::skip]
const LETTER_RANGES: &[(u32, u32)] = &[
    (0xAA, 0xAA), (0xB5, 0xB5), (0xBA, 0xBA), (0xC0, 0xD6), (0xD8, 0xF6), (0xF8, 0x2C1),
    (0x2C6, 0x2D1), (0x2E0, 0x2E4), (0x2EC, 0x2EC), (0x2EE, 0x2EE), (0x370, 0x374), (0x376, 0x377),
    (0x37A, 0x37D), (0x37F, 0x37F), (0x386, 0x386), (0x388, 0x38A), (0x38C, 0x38C), (0x38E, 0x3A1),
    (0x3A3, 0x3F5), (0x3F7, 0x481), (0x48A, 0x52F), (0x531, 0x556), (0x559, 0x559), (0x560, 0x588),
    (0x5D0, 0x5EA), (0x5EF, 0x5F2), (0x620, 0x64A), (0x66E, 0x66F), (0x671, 0x6D3), (0x6D5, 0x6D5),
    (0x6E5, 0x6E6), (0x6EE, 0x6EF), (0x6FA, 0x6FC), (0x6FF, 0x6FF), (0x710, 0x710), (0x712, 0x72F),
    (0x74D, 0x7A5), (0x7B1, 0x7B1), (0x7CA, 0x7EA), (0x7F4, 0x7F5), (0x7FA, 0x7FA), (0x800, 0x815),
    (0x81A, 0x81A), (0x824, 0x824), (0x828, 0x828), (0x840, 0x858), (0x860, 0x86A), (0x870, 0x887),
    (0x889, 0x88E), (0x8A0, 0x8C9), (0x904, 0x939), (0x93D, 0x93D), (0x950, 0x950), (0x958, 0x961),
    (0x971, 0x980), (0x985, 0x98C), (0x98F, 0x990), (0x993, 0x9A8), (0x9AA, 0x9B0), (0x9B2, 0x9B2),
    (0x9B6, 0x9B9), (0x9BD, 0x9BD), (0x9CE, 0x9CE), (0x9DC, 0x9DD), (0x9DF, 0x9E1), (0x9F0, 0x9F1),
    (0x9FC, 0x9FC), (0xA05, 0xA0A), (0xA0F, 0xA10), (0xA13, 0xA28), (0xA2A, 0xA30), (0xA32, 0xA33),
    (0xA35, 0xA36), (0xA38, 0xA39), (0xA59, 0xA5C), (0xA5E, 0xA5E), (0xA72, 0xA74), (0xA85, 0xA8D),
    (0xA8F, 0xA91), (0xA93, 0xAA8), (0xAAA, 0xAB0), (0xAB2, 0xAB3), (0xAB5, 0xAB9), (0xABD, 0xABD),
    (0xAD0, 0xAD0), (0xAE0, 0xAE1), (0xAF9, 0xAF9), (0xB05, 0xB0C), (0xB0F, 0xB10), (0xB13, 0xB28),
    (0xB2A, 0xB30), (0xB32, 0xB33), (0xB35, 0xB39), (0xB3D, 0xB3D), (0xB5C, 0xB5D), (0xB5F, 0xB61),
    (0xB71, 0xB71), (0xB83, 0xB83), (0xB85, 0xB8A), (0xB8E, 0xB90), (0xB92, 0xB95), (0xB99, 0xB9A),
    (0xB9C, 0xB9C), (0xB9E, 0xB9F), (0xBA3, 0xBA4), (0xBA8, 0xBAA), (0xBAE, 0xBB9), (0xBD0, 0xBD0),
    (0xC05, 0xC0C), (0xC0E, 0xC10), (0xC12, 0xC28), (0xC2A, 0xC39), (0xC3D, 0xC3D), (0xC58, 0xC5A),
    (0xC5D, 0xC5D), (0xC60, 0xC61), (0xC80, 0xC80), (0xC85, 0xC8C), (0xC8E, 0xC90), (0xC92, 0xCA8),
    (0xCAA, 0xCB3), (0xCB5, 0xCB9), (0xCBD, 0xCBD), (0xCDD, 0xCDE), (0xCE0, 0xCE1), (0xCF1, 0xCF2),
    (0xD04, 0xD0C), (0xD0E, 0xD10), (0xD12, 0xD3A), (0xD3D, 0xD3D), (0xD4E, 0xD4E), (0xD54, 0xD56),
    (0xD5F, 0xD61), (0xD7A, 0xD7F), (0xD85, 0xD96), (0xD9A, 0xDB1), (0xDB3, 0xDBB), (0xDBD, 0xDBD),
    (0xDC0, 0xDC6), (0xE01, 0xE30), (0xE32, 0xE33), (0xE40, 0xE46), (0xE81, 0xE82), (0xE84, 0xE84),
    (0xE86, 0xE8A), (0xE8C, 0xEA3), (0xEA5, 0xEA5), (0xEA7, 0xEB0), (0xEB2, 0xEB3), (0xEBD, 0xEBD),
    (0xEC0, 0xEC4), (0xEC6, 0xEC6), (0xEDC, 0xEDF), (0xF00, 0xF00), (0xF40, 0xF47), (0xF49, 0xF6C),
    (0xF88, 0xF8C), (0x1000, 0x102A), (0x103F, 0x103F), (0x1050, 0x1055), (0x105A, 0x105D),
    (0x1061, 0x1061), (0x1065, 0x1066), (0x106E, 0x1070), (0x1075, 0x1081), (0x108E, 0x108E),
    (0x10A0, 0x10C5), (0x10C7, 0x10C7), (0x10CD, 0x10CD), (0x10D0, 0x10FA), (0x10FC, 0x1248),
    (0x124A, 0x124D), (0x1250, 0x1256), (0x1258, 0x1258), (0x125A, 0x125D), (0x1260, 0x1288),
    (0x128A, 0x128D), (0x1290, 0x12B0), (0x12B2, 0x12B5), (0x12B8, 0x12BE), (0x12C0, 0x12C0),
    (0x12C2, 0x12C5), (0x12C8, 0x12D6), (0x12D8, 0x1310), (0x1312, 0x1315), (0x1318, 0x135A),
    (0x1380, 0x138F), (0x13A0, 0x13F5), (0x13F8, 0x13FD), (0x1401, 0x166C), (0x166F, 0x167F),
    (0x1681, 0x169A), (0x16A0, 0x16EA), (0x16F1, 0x16F8), (0x1700, 0x1711), (0x171F, 0x1731),
    (0x1740, 0x1751), (0x1760, 0x176C), (0x176E, 0x1770), (0x1780, 0x17B3), (0x17D7, 0x17D7),
    (0x17DC, 0x17DC), (0x1820, 0x1878), (0x1880, 0x1884), (0x1887, 0x18A8), (0x18AA, 0x18AA),
    (0x18B0, 0x18F5), (0x1900, 0x191E), (0x1950, 0x196D), (0x1970, 0x1974), (0x1980, 0x19AB),
    (0x19B0, 0x19C9), (0x1A00, 0x1A16), (0x1A20, 0x1A54), (0x1AA7, 0x1AA7), (0x1B05, 0x1B33),
    (0x1B45, 0x1B4C), (0x1B83, 0x1BA0), (0x1BAE, 0x1BAF), (0x1BBA, 0x1BE5), (0x1C00, 0x1C23),
    (0x1C4D, 0x1C4F), (0x1C5A, 0x1C7D), (0x1C80, 0x1C88), (0x1C90, 0x1CBA), (0x1CBD, 0x1CBF),
    (0x1CE9, 0x1CEC), (0x1CEE, 0x1CF3), (0x1CF5, 0x1CF6), (0x1CFA, 0x1CFA), (0x1D00, 0x1DBF),
    (0x1E00, 0x1F15), (0x1F18, 0x1F1D), (0x1F20, 0x1F45), (0x1F48, 0x1F4D), (0x1F50, 0x1F57),
    (0x1F59, 0x1F59), (0x1F5B, 0x1F5B), (0x1F5D, 0x1F5D), (0x1F5F, 0x1F7D), (0x1F80, 0x1FB4),
    (0x1FB6, 0x1FBC), (0x1FBE, 0x1FBE), (0x1FC2, 0x1FC4), (0x1FC6, 0x1FCC), (0x1FD0, 0x1FD3),
    (0x1FD6, 0x1FDB), (0x1FE0, 0x1FEC), (0x1FF2, 0x1FF4), (0x1FF6, 0x1FFC), (0x2071, 0x2071),
    (0x207F, 0x207F), (0x2090, 0x209C), (0x2102, 0x2102), (0x2107, 0x2107), (0x210A, 0x2113),
    (0x2115, 0x2115), (0x2119, 0x211D), (0x2124, 0x2124), (0x2126, 0x2126), (0x2128, 0x2128),
    (0x212A, 0x212D), (0x212F, 0x2139), (0x213C, 0x213F), (0x2145, 0x2149), (0x214E, 0x214E),
    (0x2183, 0x2184), (0x2C00, 0x2CE4), (0x2CEB, 0x2CEE), (0x2CF2, 0x2CF3), (0x2D00, 0x2D25),
    (0x2D27, 0x2D27), (0x2D2D, 0x2D2D), (0x2D30, 0x2D67), (0x2D6F, 0x2D6F), (0x2D80, 0x2D96),
    (0x2DA0, 0x2DA6), (0x2DA8, 0x2DAE), (0x2DB0, 0x2DB6), (0x2DB8, 0x2DBE), (0x2DC0, 0x2DC6),
    (0x2DC8, 0x2DCE), (0x2DD0, 0x2DD6), (0x2DD8, 0x2DDE), (0x2E2F, 0x2E2F), (0x3005, 0x3006),
    (0x3031, 0x3035), (0x303B, 0x303C), (0x3041, 0x3096), (0x309D, 0x309F), (0x30A1, 0x30FA),
    (0x30FC, 0x30FF), (0x3105, 0x312F), (0x3131, 0x318E), (0x31A0, 0x31BF), (0x31F0, 0x31FF),
    (0x3400, 0x4DBF), (0x4E00, 0xA48C), (0xA4D0, 0xA4FD), (0xA500, 0xA60C), (0xA610, 0xA61F),
    (0xA62A, 0xA62B), (0xA640, 0xA66E), (0xA67F, 0xA69D), (0xA6A0, 0xA6E5), (0xA717, 0xA71F),
    (0xA722, 0xA788), (0xA78B, 0xA7CA), (0xA7D0, 0xA7D1), (0xA7D3, 0xA7D3), (0xA7D5, 0xA7D9),
    (0xA7F2, 0xA801), (0xA803, 0xA805), (0xA807, 0xA80A), (0xA80C, 0xA822), (0xA840, 0xA873),
    (0xA882, 0xA8B3), (0xA8F2, 0xA8F7), (0xA8FB, 0xA8FB), (0xA8FD, 0xA8FE), (0xA90A, 0xA925),
    (0xA930, 0xA946), (0xA960, 0xA97C), (0xA984, 0xA9B2), (0xA9CF, 0xA9CF), (0xA9E0, 0xA9E4),
    (0xA9E6, 0xA9EF), (0xA9FA, 0xA9FE), (0xAA00, 0xAA28), (0xAA40, 0xAA42), (0xAA44, 0xAA4B),
    (0xAA60, 0xAA76), (0xAA7A, 0xAA7A), (0xAA7E, 0xAAAF), (0xAAB1, 0xAAB1), (0xAAB5, 0xAAB6),
    (0xAAB9, 0xAABD), (0xAAC0, 0xAAC0), (0xAAC2, 0xAAC2), (0xAADB, 0xAADD), (0xAAE0, 0xAAEA),
    (0xAAF2, 0xAAF4), (0xAB01, 0xAB06), (0xAB09, 0xAB0E), (0xAB11, 0xAB16), (0xAB20, 0xAB26),
    (0xAB28, 0xAB2E), (0xAB30, 0xAB5A), (0xAB5C, 0xAB69), (0xAB70, 0xABE2), (0xAC00, 0xD7A3),
    (0xD7B0, 0xD7C6), (0xD7CB, 0xD7FB), (0xF900, 0xFA6D), (0xFA70, 0xFAD9), (0xFB00, 0xFB06),
    (0xFB13, 0xFB17), (0xFB1D, 0xFB1D), (0xFB1F, 0xFB28), (0xFB2A, 0xFB36), (0xFB38, 0xFB3C),
    (0xFB3E, 0xFB3E), (0xFB40, 0xFB41), (0xFB43, 0xFB44), (0xFB46, 0xFBB1), (0xFBD3, 0xFD3D),
    (0xFD50, 0xFD8F), (0xFD92, 0xFDC7), (0xFDF0, 0xFDFB), (0xFE70, 0xFE74), (0xFE76, 0xFEFC),
    (0xFF21, 0xFF3A), (0xFF41, 0xFF5A), (0xFF66, 0xFFBE), (0xFFC2, 0xFFC7), (0xFFCA, 0xFFCF),
    (0xFFD2, 0xFFD7), (0xFFDA, 0xFFDC), (0x10000, 0x1000B), (0x1000D, 0x10026), (0x10028, 0x1003A),
    (0x1003C, 0x1003D), (0x1003F, 0x1004D), (0x10050, 0x1005D), (0x10080, 0x100FA),
    (0x10280, 0x1029C), (0x102A0, 0x102D0), (0x10300, 0x1031F), (0x1032D, 0x10340),
    (0x10342, 0x10349), (0x10350, 0x10375), (0x10380, 0x1039D), (0x103A0, 0x103C3),
    (0x103C8, 0x103CF), (0x10400, 0x1049D), (0x104B0, 0x104D3), (0x104D8, 0x104FB),
    (0x10500, 0x10527), (0x10530, 0x10563), (0x10570, 0x1057A), (0x1057C, 0x1058A),
    (0x1058C, 0x10592), (0x10594, 0x10595), (0x10597, 0x105A1), (0x105A3, 0x105B1),
    (0x105B3, 0x105B9), (0x105BB, 0x105BC), (0x10600, 0x10736), (0x10740, 0x10755),
    (0x10760, 0x10767), (0x10780, 0x10785), (0x10787, 0x107B0), (0x107B2, 0x107BA),
    (0x10800, 0x10805), (0x10808, 0x10808), (0x1080A, 0x10835), (0x10837, 0x10838),
    (0x1083C, 0x1083C), (0x1083F, 0x10855), (0x10860, 0x10876), (0x10880, 0x1089E),
    (0x108E0, 0x108F2), (0x108F4, 0x108F5), (0x10900, 0x10915), (0x10920, 0x10939),
    (0x10980, 0x109B7), (0x109BE, 0x109BF), (0x10A00, 0x10A00), (0x10A10, 0x10A13),
    (0x10A15, 0x10A17), (0x10A19, 0x10A35), (0x10A60, 0x10A7C), (0x10A80, 0x10A9C),
    (0x10AC0, 0x10AC7), (0x10AC9, 0x10AE4), (0x10B00, 0x10B35), (0x10B40, 0x10B55),
    (0x10B60, 0x10B72), (0x10B80, 0x10B91), (0x10C00, 0x10C48), (0x10C80, 0x10CB2),
    (0x10CC0, 0x10CF2), (0x10D00, 0x10D23), (0x10E80, 0x10EA9), (0x10EB0, 0x10EB1),
    (0x10F00, 0x10F1C), (0x10F27, 0x10F27), (0x10F30, 0x10F45), (0x10F70, 0x10F81),
    (0x10FB0, 0x10FC4), (0x10FE0, 0x10FF6), (0x11003, 0x11037), (0x11071, 0x11072),
    (0x11075, 0x11075), (0x11083, 0x110AF), (0x110D0, 0x110E8), (0x11103, 0x11126),
    (0x11144, 0x11144), (0x11147, 0x11147), (0x11150, 0x11172), (0x11176, 0x11176),
    (0x11183, 0x111B2), (0x111C1, 0x111C4), (0x111DA, 0x111DA), (0x111DC, 0x111DC),
    (0x11200, 0x11211), (0x11213, 0x1122B), (0x1123F, 0x11240), (0x11280, 0x11286),
    (0x11288, 0x11288), (0x1128A, 0x1128D), (0x1128F, 0x1129D), (0x1129F, 0x112A8),
    (0x112B0, 0x112DE), (0x11305, 0x1130C), (0x1130F, 0x11310), (0x11313, 0x11328),
    (0x1132A, 0x11330), (0x11332, 0x11333), (0x11335, 0x11339), (0x1133D, 0x1133D),
    (0x11350, 0x11350), (0x1135D, 0x11361), (0x11400, 0x11434), (0x11447, 0x1144A),
    (0x1145F, 0x11461), (0x11480, 0x114AF), (0x114C4, 0x114C5), (0x114C7, 0x114C7),
    (0x11580, 0x115AE), (0x115D8, 0x115DB), (0x11600, 0x1162F), (0x11644, 0x11644),
    (0x11680, 0x116AA), (0x116B8, 0x116B8), (0x11700, 0x1171A), (0x11740, 0x11746),
    (0x11800, 0x1182B), (0x118A0, 0x118DF), (0x118FF, 0x11906), (0x11909, 0x11909),
    (0x1190C, 0x11913), (0x11915, 0x11916), (0x11918, 0x1192F), (0x1193F, 0x1193F),
    (0x11941, 0x11941), (0x119A0, 0x119A7), (0x119AA, 0x119D0), (0x119E1, 0x119E1),
    (0x119E3, 0x119E3), (0x11A00, 0x11A00), (0x11A0B, 0x11A32), (0x11A3A, 0x11A3A),
    (0x11A50, 0x11A50), (0x11A5C, 0x11A89), (0x11A9D, 0x11A9D), (0x11AB0, 0x11AF8),
    (0x11C00, 0x11C08), (0x11C0A, 0x11C2E), (0x11C40, 0x11C40), (0x11C72, 0x11C8F),
    (0x11D00, 0x11D06), (0x11D08, 0x11D09), (0x11D0B, 0x11D30), (0x11D46, 0x11D46),
    (0x11D60, 0x11D65), (0x11D67, 0x11D68), (0x11D6A, 0x11D89), (0x11D98, 0x11D98),
    (0x11EE0, 0x11EF2), (0x11F02, 0x11F02), (0x11F04, 0x11F10), (0x11F12, 0x11F33),
    (0x11FB0, 0x11FB0), (0x12000, 0x12399), (0x12480, 0x12543), (0x12F90, 0x12FF0),
    (0x13000, 0x1342F), (0x13441, 0x13446), (0x14400, 0x14646), (0x16800, 0x16A38),
    (0x16A40, 0x16A5E), (0x16A70, 0x16ABE), (0x16AD0, 0x16AED), (0x16B00, 0x16B2F),
    (0x16B40, 0x16B43), (0x16B63, 0x16B77), (0x16B7D, 0x16B8F), (0x16E40, 0x16E7F),
    (0x16F00, 0x16F4A), (0x16F50, 0x16F50), (0x16F93, 0x16F9F), (0x16FE0, 0x16FE1),
    (0x16FE3, 0x16FE3), (0x17000, 0x187F7), (0x18800, 0x18CD5), (0x18D00, 0x18D08),
    (0x1AFF0, 0x1AFF3), (0x1AFF5, 0x1AFFB), (0x1AFFD, 0x1AFFE), (0x1B000, 0x1B122),
    (0x1B132, 0x1B132), (0x1B150, 0x1B152), (0x1B155, 0x1B155), (0x1B164, 0x1B167),
    (0x1B170, 0x1B2FB), (0x1BC00, 0x1BC6A), (0x1BC70, 0x1BC7C), (0x1BC80, 0x1BC88),
    (0x1BC90, 0x1BC99), (0x1D400, 0x1D454), (0x1D456, 0x1D49C), (0x1D49E, 0x1D49F),
    (0x1D4A2, 0x1D4A2), (0x1D4A5, 0x1D4A6), (0x1D4A9, 0x1D4AC), (0x1D4AE, 0x1D4B9),
    (0x1D4BB, 0x1D4BB), (0x1D4BD, 0x1D4C3), (0x1D4C5, 0x1D505), (0x1D507, 0x1D50A),
    (0x1D50D, 0x1D514), (0x1D516, 0x1D51C), (0x1D51E, 0x1D539), (0x1D53B, 0x1D53E),
    (0x1D540, 0x1D544), (0x1D546, 0x1D546), (0x1D54A, 0x1D550), (0x1D552, 0x1D6A5),
    (0x1D6A8, 0x1D6C0), (0x1D6C2, 0x1D6DA), (0x1D6DC, 0x1D6FA), (0x1D6FC, 0x1D714),
    (0x1D716, 0x1D734), (0x1D736, 0x1D74E), (0x1D750, 0x1D76E), (0x1D770, 0x1D788),
    (0x1D78A, 0x1D7A8), (0x1D7AA, 0x1D7C2), (0x1D7C4, 0x1D7CB), (0x1DF00, 0x1DF1E),
    (0x1DF25, 0x1DF2A), (0x1E030, 0x1E06D), (0x1E100, 0x1E12C), (0x1E137, 0x1E13D),
    (0x1E14E, 0x1E14E), (0x1E290, 0x1E2AD), (0x1E2C0, 0x1E2EB), (0x1E4D0, 0x1E4EB),
    (0x1E7E0, 0x1E7E6), (0x1E7E8, 0x1E7EB), (0x1E7ED, 0x1E7EE), (0x1E7F0, 0x1E7FE),
    (0x1E800, 0x1E8C4), (0x1E900, 0x1E943), (0x1E94B, 0x1E94B), (0x1EE00, 0x1EE03),
    (0x1EE05, 0x1EE1F), (0x1EE21, 0x1EE22), (0x1EE24, 0x1EE24), (0x1EE27, 0x1EE27),
    (0x1EE29, 0x1EE32), (0x1EE34, 0x1EE37), (0x1EE39, 0x1EE39), (0x1EE3B, 0x1EE3B),
    (0x1EE42, 0x1EE42), (0x1EE47, 0x1EE47), (0x1EE49, 0x1EE49), (0x1EE4B, 0x1EE4B),
    (0x1EE4D, 0x1EE4F), (0x1EE51, 0x1EE52), (0x1EE54, 0x1EE54), (0x1EE57, 0x1EE57),
    (0x1EE59, 0x1EE59), (0x1EE5B, 0x1EE5B), (0x1EE5D, 0x1EE5D), (0x1EE5F, 0x1EE5F),
    (0x1EE61, 0x1EE62), (0x1EE64, 0x1EE64), (0x1EE67, 0x1EE6A), (0x1EE6C, 0x1EE72),
    (0x1EE74, 0x1EE77), (0x1EE79, 0x1EE7C), (0x1EE7E, 0x1EE7E), (0x1EE80, 0x1EE89),
    (0x1EE8B, 0x1EE9B), (0x1EEA1, 0x1EEA3), (0x1EEA5, 0x1EEA9), (0x1EEAB, 0x1EEBB),
    (0x20000, 0x2A6DF), (0x2A700, 0x2B739), (0x2B740, 0x2B81D), (0x2B820, 0x2CEA1),
    (0x2CEB0, 0x2EBE0), (0x2F800, 0x2FA1D), (0x30000, 0x3134A), (0x31350, 0x323AF),
];

#[rustfmt::skip]
const DIGIT_RANGES: &[(u32, u32)] = &[
    (0x660, 0x669), (0x6F0, 0x6F9), (0x7C0, 0x7C9), (0x966, 0x96F), (0x9E6, 0x9EF), (0xA66, 0xA6F),
    (0xAE6, 0xAEF), (0xB66, 0xB6F), (0xBE6, 0xBEF), (0xC66, 0xC6F), (0xCE6, 0xCEF), (0xD66, 0xD6F),
    (0xDE6, 0xDEF), (0xE50, 0xE59), (0xED0, 0xED9), (0xF20, 0xF29), (0x1040, 0x1049),
    (0x1090, 0x1099), (0x17E0, 0x17E9), (0x1810, 0x1819), (0x1946, 0x194F), (0x19D0, 0x19D9),
    (0x1A80, 0x1A89), (0x1A90, 0x1A99), (0x1B50, 0x1B59), (0x1BB0, 0x1BB9), (0x1C40, 0x1C49),
    (0x1C50, 0x1C59), (0xA620, 0xA629), (0xA8D0, 0xA8D9), (0xA900, 0xA909), (0xA9D0, 0xA9D9),
    (0xA9F0, 0xA9F9), (0xAA50, 0xAA59), (0xABF0, 0xABF9), (0xFF10, 0xFF19), (0x104A0, 0x104A9),
    (0x10D30, 0x10D39), (0x11066, 0x1106F), (0x110F0, 0x110F9), (0x11136, 0x1113F),
    (0x111D0, 0x111D9), (0x112F0, 0x112F9), (0x11450, 0x11459), (0x114D0, 0x114D9),
    (0x11650, 0x11659), (0x116C0, 0x116C9), (0x11730, 0x11739), (0x118E0, 0x118E9),
    (0x11950, 0x11959), (0x11C50, 0x11C59), (0x11D50, 0x11D59), (0x11DA0, 0x11DA9),
    (0x11F50, 0x11F59), (0x16A60, 0x16A69), (0x16AC0, 0x16AC9), (0x16B50, 0x16B59),
    (0x1D7CE, 0x1D7FF), (0x1E140, 0x1E149), (0x1E2F0, 0x1E2F9), (0x1E4F0, 0x1E4F9),
    (0x1E950, 0x1E959), (0x1FBF0, 0x1FBF9),
];

#[cfg(test)]
mod tests {
    //! Every expected text below was produced by the oracle (`kubectl
    //! kustomize`, kustomize v5.5.0) on the same data.
    use super::*;

    fn s(text: &str) -> Value {
        Value::String(text.to_string())
    }

    fn m(entries: Vec<(&str, Value)>) -> Value {
        let mut map = Mapping::new();
        for (k, v) in entries {
            map.insert(k.to_string(), v);
        }
        Value::Map(map)
    }

    fn print(v: &Value) -> String {
        let mut out = String::new();
        write_document(&mut out, v).expect("printable");
        out
    }

    /// (string, how it prints as the value of `k` under `data`)
    const STRINGS: &[(&str, &str)] = &[
        ("plain", "data:\n  k: plain\n"),
        ("", "data:\n  k: \"\"\n"),
        (" ", "data:\n  k: ' '\n"),
        ("a b", "data:\n  k: a b\n"),
        (
            "h\u{e9}llo \u{fc}n\u{ef}code",
            "data:\n  k: h\u{e9}llo \u{fc}n\u{ef}code\n",
        ),
        ("it's", "data:\n  k: it's\n"),
        ("say \"hi\"", "data:\n  k: say \"hi\"\n"),
        ("=value", "data:\n  k: =value\n"),
        ("a, b", "data:\n  k: a, b\n"),
        ("a:b", "data:\n  k: a:b\n"),
        ("a: b", "data:\n  k: 'a: b'\n"),
        ("a #b", "data:\n  k: 'a #b'\n"),
        ("a#b", "data:\n  k: a#b\n"),
        ("#hash", "data:\n  k: '#hash'\n"),
        ("- dash", "data:\n  k: '- dash'\n"),
        ("-dash", "data:\n  k: -dash\n"),
        ("-", "data:\n  k: '-'\n"),
        ("---", "data:\n  k: '---'\n"),
        ("--- x", "data:\n  k: '--- x'\n"),
        ("...", "data:\n  k: '...'\n"),
        ("? q", "data:\n  k: '? q'\n"),
        ("?q", "data:\n  k: ?q\n"),
        (": colon", "data:\n  k: ': colon'\n"),
        (":colon", "data:\n  k: :colon\n"),
        ("[x]", "data:\n  k: '[x]'\n"),
        ("{x}", "data:\n  k: '{x}'\n"),
        ("&amp", "data:\n  k: '&amp'\n"),
        ("*star", "data:\n  k: '*star'\n"),
        ("!bang", "data:\n  k: '!bang'\n"),
        ("|pipe", "data:\n  k: '|pipe'\n"),
        (">gt", "data:\n  k: '>gt'\n"),
        ("'quoted'", "data:\n  k: '''quoted'''\n"),
        ("\"dq\"", "data:\n  k: '\"dq\"'\n"),
        ("%pct", "data:\n  k: '%pct'\n"),
        ("@at", "data:\n  k: '@at'\n"),
        ("`tick", "data:\n  k: '`tick'\n"),
        ("trailing ", "data:\n  k: 'trailing '\n"),
        (" leading", "data:\n  k: ' leading'\n"),
        ("tab\there", "data:\n  k: \"tab\\there\"\n"),
        ("\ttab", "data:\n  k: \"\\ttab\"\n"),
        ("y", "data:\n  k: \"y\"\n"),
        ("Y", "data:\n  k: \"Y\"\n"),
        ("yes", "data:\n  k: \"yes\"\n"),
        ("n", "data:\n  k: \"n\"\n"),
        ("NO", "data:\n  k: \"NO\"\n"),
        ("on", "data:\n  k: \"on\"\n"),
        ("Off", "data:\n  k: \"Off\"\n"),
        ("true", "data:\n  k: \"true\"\n"),
        ("True", "data:\n  k: \"True\"\n"),
        ("FALSE", "data:\n  k: \"FALSE\"\n"),
        ("null", "data:\n  k: \"null\"\n"),
        ("Null", "data:\n  k: \"Null\"\n"),
        ("~", "data:\n  k: \"~\"\n"),
        ("<<", "data:\n  k: <<\n"),
        (".nan", "data:\n  k: \".nan\"\n"),
        (".Inf", "data:\n  k: \".Inf\"\n"),
        ("-.inf", "data:\n  k: \"-.inf\"\n"),
        (".5", "data:\n  k: \".5\"\n"),
        (".5_5", "data:\n  k: \".5_5\"\n"),
        (".5e400", "data:\n  k: .5e400\n"),
        ("._5", "data:\n  k: ._5\n"),
        ("0", "data:\n  k: \"0\"\n"),
        ("-1", "data:\n  k: \"-1\"\n"),
        ("+1", "data:\n  k: \"+1\"\n"),
        ("0123", "data:\n  k: \"0123\"\n"),
        ("0o17", "data:\n  k: \"0o17\"\n"),
        ("0x1F", "data:\n  k: \"0x1F\"\n"),
        ("0xg", "data:\n  k: 0xg\n"),
        ("0b101", "data:\n  k: \"0b101\"\n"),
        ("0b-101", "data:\n  k: \"0b-101\"\n"),
        ("-0b101", "data:\n  k: \"-0b101\"\n"),
        ("0b", "data:\n  k: 0b\n"),
        ("1_000", "data:\n  k: \"1_000\"\n"),
        ("_1", "data:\n  k: _1\n"),
        ("1e3", "data:\n  k: \"1e3\"\n"),
        ("1e400", "data:\n  k: 1e400\n"),
        ("1.", "data:\n  k: \"1.\"\n"),
        ("1.2.3", "data:\n  k: 1.2.3\n"),
        ("12a", "data:\n  k: 12a\n"),
        (
            "9223372036854775808",
            "data:\n  k: \"9223372036854775808\"\n",
        ),
        (
            "18446744073709551616",
            "data:\n  k: \"18446744073709551616\"\n",
        ),
        (
            "0xFFFFFFFFFFFFFFFFFFFF",
            "data:\n  k: 0xFFFFFFFFFFFFFFFFFFFF\n",
        ),
        ("2001-01-01", "data:\n  k: \"2001-01-01\"\n"),
        ("2001-1-1", "data:\n  k: \"2001-1-1\"\n"),
        ("2001-02-29", "data:\n  k: 2001-02-29\n"),
        ("2000-02-29", "data:\n  k: \"2000-02-29\"\n"),
        (
            "2001-01-01T00:00:00Z",
            "data:\n  k: \"2001-01-01T00:00:00Z\"\n",
        ),
        (
            "2001-12-14t21:59:43.10-05:00",
            "data:\n  k: \"2001-12-14t21:59:43.10-05:00\"\n",
        ),
        ("2001-01-01 1:2:3", "data:\n  k: \"2001-01-01 1:2:3\"\n"),
        (
            "2001-01-01  1:2:3.5",
            "data:\n  k: \"2001-01-01  1:2:3.5\"\n",
        ),
        (
            "2001-01-01T00:00:00+25:00",
            "data:\n  k: 2001-01-01T00:00:00+25:00\n",
        ),
        ("2001-01-01x", "data:\n  k: 2001-01-01x\n"),
        ("1:20", "data:\n  k: \"1:20\"\n"),
        ("-1:20", "data:\n  k: \"-1:20\"\n"),
        ("1:20.5", "data:\n  k: \"1:20.5\"\n"),
        ("190:20:30.15", "data:\n  k: \"190:20:30.15\"\n"),
        ("1:60", "data:\n  k: 1:60\n"),
        ("1:200", "data:\n  k: 1:200\n"),
        ("12:30:45", "data:\n  k: \"12:30:45\"\n"),
        ("a\n", "data:\n  k: |\n    a\n"),
        ("a\nb", "data:\n  k: |-\n    a\n    b\n"),
        ("a\nb\n\n", "data:\n  k: |+\n    a\n    b\n\n"),
        ("\n", "data:\n  k: |2+\n\n"),
        ("\na", "data:\n  k: |2-\n\n    a\n"),
        (" a\nb", "data:\n  k: |2-\n     a\n    b\n"),
        ("a \nb", "data:\n  k: \"a \\nb\"\n"),
        ("a\n b", "data:\n  k: |-\n    a\n     b\n"),
        ("a\n\n\n", "data:\n  k: |+\n    a\n\n\n"),
        ("x\ty\nz", "data:\n  k: \"x\\ty\\nz\"\n"),
        ("a\u{d}b\nc", "data:\n  k: \"a\\rb\\nc\"\n"),
        ("line1\nline2\n", "data:\n  k: |\n    line1\n    line2\n"),
        ("\u{0}", "data:\n  k: \"\\0\"\n"),
        ("a\u{7}b", "data:\n  k: \"a\\ab\"\n"),
        ("\u{1b}[0m", "data:\n  k: \"\\e[0m\"\n"),
        ("\u{a0}", "data:\n  k: \u{a0}\n"),
        ("a\u{a0}b", "data:\n  k: a\u{a0}b\n"),
        (
            "\u{feff}ab c",
            "data:\n  k: \"\\uFEFF\\x61\\x62\\x20\\x63\"\n",
        ),
        ("a\u{feff}", "data:\n  k: \"a\\uFEFF\"\n"),
        ("\u{1f600}", "data:\n  k: \"\\U0001F600\"\n"),
        ("a\u{1f600} b", "data:\n  k: \"a\\U0001F600 b\"\n"),
        ("\u{2028}", "data:\n  k: '\u{2028}'\n"),
        ("a\u{2028}b", "data:\n  k: 'a\u{2028}    b'\n"),
        ("a\u{2029}b\n", "data:\n  k: |\n    a\u{2029}    b\n"),
        ("\u{85}", "data:\n  k: ' '\n"),
        ("x  \u{85}  y", "data:\n  k: x y\n"),
        ("x\u{85}\u{85}y", "data:\n  k: |-\n    x\n    y\n"),
        ("\u{85}y", "data:\n  k: ' y'\n"),
        ("\u{fffd}", "data:\n  k: \u{fffd}\n"),
        ("\u{4e2d}\u{6587}", "data:\n  k: \u{4e2d}\u{6587}\n"),
        (
            "word word word word word word word word word word word word word word word word word word word word ",
            "data:\n  k: 'word word word word word word word word word word word word word word word word\n    word word word word '\n",
        ),
        (
            "word word word word word word word word word word word word word word word word word word word word",
            "data:\n  k: word word word word word word word word word word word word word word word word\n    word word word word\n",
        ),
        (
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "data:\n  k: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
        ),
        (
            "#word word word word word word word word word word word word word word word word word word word word x",
            "data:\n  k: '#word word word word word word word word word word word word word word word\n    word word word word word x'\n",
        ),
        (
            "word word word word word word word word word word word word word word word word word word word word \t",
            "data:\n  k: \"word word word word word word word word word word word word word word word word\n    word word word word \\t\"\n",
        ),
        (
            "w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord x",
            "data:\n  k: w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord\n    w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord w\"ord x\n",
        ),
        (
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa b c",
            "data:\n  k: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n    b c\n",
        ),
        (
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa b c",
            "data:\n  k: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n    b c\n",
        ),
        (
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa  b c",
            "data:\n  k: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa  b\n    c\n",
        ),
        (
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa \u{e9} \u{e9} \u{e9} \u{e9} \u{e9} \u{e9} \u{e9} \u{e9} \u{e9} \u{e9}",
            "data:\n  k: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n    \u{e9} \u{e9} \u{e9} \u{e9} \u{e9} \u{e9} \u{e9} \u{e9} \u{e9} \u{e9}\n",
        ),
        (
            "line line line line line line line line line line line line line line line line line line line line \nend",
            "data:\n  k: \"line line line line line line line line line line line line line line line line\n    line line line line \\nend\"\n",
        ),
        (
            "\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9} x y",
            "data:\n  k: \u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\n    x y\n",
        ),
    ];

    #[test]
    fn string_styles_quoting_folding_and_blocks() {
        for (input, expected) in STRINGS {
            let doc = m(vec![("data", m(vec![("k", s(input))]))]);
            assert_eq!(print(&doc), *expected, "input {input:?}");
        }
    }

    #[test]
    fn floats_and_integers() {
        let floats: &[(f64, &str)] = &[
            (0.5_f64, "0.5"),
            (3.0_f64, "3"),
            (1000.0_f64, "1000"),
            (1e-07_f64, "1e-07"),
            (1e-06_f64, "1e-06"),
            (1e-05_f64, "1e-05"),
            (0.0001_f64, "0.0001"),
            (1e+21_f64, "1e+21"),
            (1e+20_f64, "1e+20"),
            (1e+19_f64, "10000000000000000000"),
            (9.3e+18_f64, "9300000000000000000"),
            (1234567.5_f64, "1.2345675e+06"),
            (123456.5_f64, "123456.5"),
            (-0.0_f64, "0"),
            (0.0_f64, "0"),
            (-1.5_f64, "-1.5"),
            (1.5e+300_f64, "1.5e+300"),
            (5e-324_f64, "5e-324"),
            (0.1_f64, "0.1"),
            (0.30000000000000004_f64, "0.30000000000000004"),
            (1.2345678901234568e+20_f64, "1.2345678901234568e+20"),
            (-1e+19_f64, "-1e+19"),
            (999999.5_f64, "999999.5"),
            (1.7976931348623157e+308_f64, "1.7976931348623157e+308"),
            (1e+22_f64, "1e+22"),
            (2.5e-05_f64, "2.5e-05"),
        ];
        for (f, expected) in floats {
            let doc = m(vec![("f", Value::Float(*f))]);
            assert_eq!(print(&doc), format!("f: {expected}\n"), "float {f:e}");
        }
        let ints = m(vec![
            ("a", Value::Int(0)),
            ("b", Value::Int(-1)),
            ("c", Value::Int(i64::MAX)),
            ("d", Value::Int(i64::MIN)),
            ("e", Value::UInt(u64::MAX)),
            ("t", Value::Bool(true)),
            ("fa", Value::Bool(false)),
            ("n", Value::Null),
        ]);
        assert_eq!(
            print(&ints),
            "a: 0\nb: -1\nc: 9223372036854775807\nd: -9223372036854775808\n\
             e: 18446744073709551615\nfa: false\n\"n\": null\nt: true\n"
        );
    }

    #[test]
    fn layout_of_nested_collections_and_complex_keys() {
        let k129 = "k".repeat(129);
        let q130 = "q".repeat(130);
        let r131 = "r".repeat(131);
        let words = format!("{}end", "word ".repeat(30));
        let doc = m(vec![
            ("apiVersion", s("v1")),
            ("kind", s("ConfigMap")),
            ("metadata", m(vec![("name", s("layout"))])),
            (
                "spec",
                m(vec![
                    (
                        "list",
                        Value::Seq(vec![
                            s("a"),
                            Value::Int(1),
                            Value::Null,
                            Value::Bool(true),
                            Value::Seq(vec![]),
                            m(vec![]),
                            Value::Seq(vec![s("x"), Value::Seq(vec![s("y")])]),
                            m(vec![
                                ("b", Value::Int(1)),
                                ("a", Value::Seq(vec![Value::Int(1), Value::Int(2)])),
                                ("c", m(vec![("d", s("e"))])),
                            ]),
                            Value::Seq(vec![
                                m(vec![("x", Value::Int(1))]),
                                m(vec![("y", Value::Seq(vec![m(vec![("z", s("w"))])]))]),
                            ]),
                        ]),
                    ),
                    ("empty", m(vec![])),
                    ("none", Value::Seq(vec![])),
                    (
                        "lit",
                        Value::Seq(vec![s("a\nb\n"), m(vec![("k", s("x\ny"))])]),
                    ),
                    (&k129, m(vec![("a", Value::Int(1))])),
                    ("a\nb", Value::Seq(vec![s("x")])),
                    (&q130, s("text\n")),
                    (&r131, Value::Seq(vec![m(vec![("s", Value::Int(1))])])),
                    (
                        "long",
                        Value::Seq(vec![
                            s(&words),
                            m(vec![("deep", m(vec![("deeper", s(&words))]))]),
                        ]),
                    ),
                ]),
            ),
        ]);
        let w = "word word word word";
        let expected = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: layout\nspec:\n\
             \x20 ? |-\n    a\n    b\n  : - x\n\
             \x20 empty: {{}}\n\
             \x20 ? {k129}\n  : a: 1\n\
             \x20 list:\n  - a\n  - 1\n  - null\n  - true\n  - []\n  - {{}}\n\
             \x20 - - x\n    - - \"y\"\n\
             \x20 - a:\n    - 1\n    - 2\n    b: 1\n    c:\n      d: e\n\
             \x20 - - x: 1\n    - \"y\":\n      - z: w\n\
             \x20 lit:\n  - |\n    a\n    b\n  - k: |-\n      x\n      y\n\
             \x20 long:\n\
             \x20 - {w} {w} {w} {w}\n    {w} {w} {w} word word end\n\
             \x20 - deep:\n      deeper: {w} {w} {w} word word\n\
             \x20       {w} {w} {w} word word word\n        word end\n\
             \x20 none: []\n\
             \x20 ? {q130}\n  : |\n    text\n\
             \x20 ? {r131}\n  : - s: 1\n"
        );
        assert_eq!(print(&doc), expected);
    }

    #[test]
    fn key_order() {
        // probe of the conformance corpus: data keys and annotation keys.
        let keys = [
            "zz", "a10", "é", "A", "9", "ab", "aB", "a.b", "", "a9", "Z9", "a-b", "10",
        ];
        let doc = m(keys.iter().map(|k| (*k, s("x"))).collect());
        assert_eq!(
            print(&doc),
            "\"\": x\n\"9\": x\n\"10\": x\nA: x\nZ9: x\na-b: x\na.b: x\na9: x\na10: x\n\
             aB: x\nab: x\nzz: x\né: x\n"
        );
        let pairs = [
            ("a9", "a10", Ordering::Less),
            ("a10", "a1b", Ordering::Less),
            ("a1b", "a9", Ordering::Less),
            ("9", "10", Ordering::Less),
            ("01", "1", Ordering::Greater),
            ("0", "00", Ordering::Less),
            ("a01", "a1", Ordering::Greater),
            ("a001", "a01", Ordering::Greater),
            ("x0y", "x00y", Ordering::Greater),
            ("x10", "x010", Ordering::Less),
            ("10x", "9x", Ordering::Greater),
            ("A", "a", Ordering::Less),
            ("Z", "a", Ordering::Less),
            ("_", "a", Ordering::Less),
            ("-", ".", Ordering::Less),
            ("a", "a0", Ordering::Less),
            ("", "a", Ordering::Less),
            ("aB", "ab", Ordering::Less),
            ("a-b", "a.b", Ordering::Less),
            ("\u{e9}", "z", Ordering::Greater),
            ("\u{c9}", "\u{e9}", Ordering::Less),
            ("\u{1c5}", "a", Ordering::Greater),
            ("\u{4e2d}", "a", Ordering::Greater),
            ("a!", "a", Ordering::Greater),
            ("a b", "a!", Ordering::Less),
            ("x\u{661}", "x2", Ordering::Greater),
            ("\u{661}", "2", Ordering::Greater),
            ("a\u{662}", "a10", Ordering::Greater),
            ("\u{1d7d8}", "1", Ordering::Greater),
            ("\u{2160}", "a", Ordering::Less),
            ("\u{b2}", "1", Ordering::Less),
            ("\u{aa}", "a", Ordering::Greater),
            ("\u{2b0}", "_", Ordering::Greater),
            ("a\u{300}", "a", Ordering::Greater),
            ("1a", "a1", Ordering::Less),
            ("099", "99", Ordering::Greater),
            ("0099", "099", Ordering::Greater),
            ("100a", "99", Ordering::Greater),
        ];
        for (a, b, expected) in pairs {
            assert_eq!(natural_cmp(a, b), expected, "{a:?} vs {b:?}");
            assert_eq!(natural_cmp(b, a), expected.reverse(), "{b:?} vs {a:?}");
        }
        assert_eq!(natural_cmp("same", "same"), Ordering::Equal);
    }

    #[test]
    fn sorting_survives_a_non_transitive_comparator() {
        // a9 < a10 < a1b < a9: any order is acceptable, but no panic.
        let keys = ["a1b", "a10", "a9", "a1b0", "a01", "a1", "b", "a"];
        let doc = m(keys.iter().map(|k| (*k, Value::Null)).collect());
        let out = print(&doc);
        assert_eq!(out.lines().count(), keys.len());
    }

    #[test]
    fn errors_match_kustomize() {
        let doc = |v: Value| m(vec![("data", m(vec![("k", v)]))]);
        let err = |v: &Value| {
            let mut out = String::from("kept");
            let e = write_document(&mut out, v).expect_err("must fail");
            assert_eq!(out, "kept");
            e.0
        };
        assert_eq!(
            err(&doc(Value::Float(f64::NAN))),
            "json: unsupported value: NaN"
        );
        assert_eq!(
            err(&doc(Value::Float(f64::INFINITY))),
            "json: unsupported value: +Inf"
        );
        assert_eq!(
            err(&doc(Value::Float(f64::NEG_INFINITY))),
            "json: unsupported value: -Inf"
        );
        assert_eq!(
            err(&doc(s("x\u{7f}y"))),
            "yaml: control characters are not allowed"
        );
        assert_eq!(
            err(&doc(s("a\u{80}b"))),
            "yaml: control characters are not allowed"
        );
        // The JSON encoding fails before the YAML reading could.
        let both = m(vec![("a", s("\u{7f}")), ("b", Value::Float(f64::NAN))]);
        assert_eq!(err(&both), "json: unsupported value: NaN");
        // NEL then a document marker at the start of a "line".
        assert_eq!(
            err(&doc(s("x\u{85}--- y"))),
            "yaml: line 2: found unexpected document indicator"
        );
        assert_eq!(
            err(&doc(s("x\u{85}\u{85}--- y"))),
            "yaml: line 3: found unexpected document indicator"
        );
        // Keys go-yaml cannot read back as simple keys of a JSON object.
        let key = |k: &str| m(vec![("data", m(vec![(k, s("v"))]))]);
        assert_eq!(
            err(&key("a\u{85}\u{85}b")),
            "yaml: line 2: did not find expected ',' or '}'"
        );
        assert_eq!(
            err(&m(vec![(
                "data",
                m(vec![("x", s("a\u{85}b")), ("y\u{85}", s("v"))])
            )])),
            "yaml: line 2: did not find expected ',' or '}'"
        );
        assert_eq!(
            err(&key(&"k".repeat(1023))),
            "yaml: did not find expected ',' or '}'"
        );
        assert_eq!(
            err(&key(&"é".repeat(1023))),
            "yaml: did not find expected ',' or '}'"
        );
        let tabs = format!("{}{}", "k".repeat(1012), "\t".repeat(6));
        assert_eq!(err(&key(&tabs)), "yaml: did not find expected ',' or '}'");
        let tabs = format!("{}{}", "k".repeat(1012), "\t".repeat(5));
        assert!(print(&key(&tabs)).starts_with("data:\n  ? \"kkk"));
        assert!(print(&key(&"k".repeat(1022))).starts_with("data:\n  ? kkk"));
    }

    #[test]
    fn go_json_encoding() {
        // These texts hash to the names kustomize gives generated ConfigMaps.
        let cases: &[(&str, &str)] = &[
            ("plain", r#""plain""#),
            ("a<b>c&d", r#""a\u003cb\u003ec\u0026d""#),
            ("\u{8}\u{c}", r#""\b\f""#),
            ("\u{1}\u{2}\u{1f}", r#""\u0001\u0002\u001f""#),
            ("tab\there", r#""tab\there""#),
            ("nl\nx\r\n", r#""nl\nx\r\n""#),
            ("q\"uote\\back", r#""q\"uote\\back""#),
            ("\u{2028}\u{2029}", r#""\u2028\u2029""#),
            ("\u{1f600} é 中", "\"\u{1f600} é 中\""),
            ("\0", r#""\u0000""#),
            (
                "\u{a0}\u{feff}\u{85}\u{fffd}",
                "\"\u{a0}\u{feff}\u{85}\u{fffd}\"",
            ),
            ("/slash 'single' =eq", r#""/slash 'single' =eq""#),
        ];
        for (input, literal) in cases {
            let v = m(vec![
                ("name", s("")),
                ("kind", s("ConfigMap")),
                ("data", m(vec![("k", s(input))])),
            ]);
            let expected = format!(r#"{{"data":{{"k":{literal}}},"kind":"ConfigMap","name":""}}"#);
            assert_eq!(
                to_go_json(&v).as_deref(),
                Ok(expected.as_str()),
                "{input:?}"
            );
        }
        let v = m(vec![
            (
                "b",
                Value::Seq(vec![Value::Int(-3), Value::UInt(u64::MAX), Value::Null]),
            ),
            ("a", Value::Bool(true)),
            ("B", m(vec![])),
            ("é", Value::Seq(vec![])),
            ("c", Value::Float(0.5)),
        ]);
        assert_eq!(
            to_go_json(&v).as_deref(),
            Ok(r#"{"B":{},"a":true,"b":[-3,18446744073709551615,null],"c":0.5,"é":[]}"#)
        );
        assert_eq!(
            to_go_json(&Value::Float(f64::NAN)),
            Err(EmitError("json: unsupported value: NaN".to_string()))
        );
    }

    #[test]
    fn go_json_float_format() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (3.0, "3"),
            (0.5, "0.5"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.5e300, "1.5e+300"),
            (1e-6, "0.000001"),
            (1e-7, "1e-7"),
            (2.5e-5, "0.000025"),
            (1.25e-10, "1.25e-10"),
            (5e-324, "5e-324"),
            (1234567.5, "1234567.5"),
            (0.30000000000000004, "0.30000000000000004"),
            (-1e-7, "-1e-7"),
        ];
        for (f, expected) in cases {
            assert_eq!(format_float(*f), *expected, "{f:e}");
        }
        assert_eq!(format_float(f64::NAN), "NaN");
        assert_eq!(format_float(f64::INFINITY), "+Inf");
        assert_eq!(format_float(f64::NEG_INFINITY), "-Inf");
    }
}
