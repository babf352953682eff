//! Scalar resolution (go-yaml v3 and v2 rules)

use super::*;

/// The resolved tag of a scalar, go-yaml style.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum RTag {
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
    pub(super) fn short(self) -> &'static str {
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
pub(super) fn short_tag(tag: &Tag) -> String {
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

pub(super) fn rtag_of_short(tag: &str) -> Option<RTag> {
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
pub(super) struct Scalar {
    pub(super) node: N,
    /// The node's tag as the parser records it (what a re-encode keeps).
    pub(super) tag: RTag,
    /// Whether the key is a merge key (`<<`).
    pub(super) merge: bool,
}

/// Resolves a scalar event the way the emulated reader decodes it.
pub(super) fn resolve_event(
    mode: Mode,
    value: &str,
    style: ScalarStyle,
    tag: Option<&Tag>,
) -> Scalar {
    let v2 = mode == Mode::Lenient;
    let explicit = tag.map(short_tag);
    // The go-yaml v3 parser ignores the non-specific tag `!`.
    let explicit = explicit.as_deref().filter(|t| v2 || *t != "!");
    match explicit {
        Some(t) => {
            let tag = rtag_of_short(t).unwrap_or(RTag::Other);
            let node = match tag {
                RTag::Str | RTag::Other | RTag::Merge => N::Str(value.to_owned()),
                _ => decode_tagged(v2, tag, value),
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
        // both readers merge on a plain `<<` key
        None if value == "<<" => Scalar {
            node: N::Str(value.to_owned()),
            tag: RTag::Merge,
            merge: true,
        },
        None => {
            let (tag, node) = resolve_plain(v2, value);
            Scalar {
                node,
                tag,
                merge: false,
            }
        }
    }
}

/// Decodes a scalar with an explicit core tag (never `!!str`).
pub(super) fn decode_tagged(v2: bool, tag: RTag, value: &str) -> N {
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

pub(super) fn resolve_plain(v2: bool, value: &str) -> (RTag, N) {
    resolve_plain_with(v2, RTag::Other, value)
}

/// go-yaml's `resolve` for an untagged plain scalar (`tag` = `Other`) or for
/// one tagged with a resolvable core tag (which only matters for timestamps).
pub(super) fn resolve_plain_with(v2: bool, tag: RTag, value: &str) -> (RTag, N) {
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
pub(super) fn lookup_word(v2: bool, value: &str) -> Option<(RTag, N)> {
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
pub(super) fn is_yaml_style_float(s: &str) -> bool {
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
pub(super) fn go_parse_float_dot(s: &str) -> Option<f64> {
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
pub(super) fn go_underscore_ok(s: &str) -> bool {
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
pub(super) fn go_parse_uint(s: &str) -> Option<u64> {
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
pub(super) fn go_parse_int(s: &str) -> Option<i64> {
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
pub(super) fn go_base64_decode(s: &str) -> Option<Vec<u8>> {
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
pub(super) fn go_lossy_utf8(bytes: &[u8]) -> String {
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
