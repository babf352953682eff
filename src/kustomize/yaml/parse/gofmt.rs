//! Go formatting: %#v, strconv.Quote, float formatting

use super::*;

/// Go's `%#v` of a decoded tree. In strict mode (go-yaml v3) maps with only
/// string keys are `map[string]interface {}`; go-yaml v2 always produces
/// `map[interface {}]interface {}`.
pub(super) fn go_repr_n(root: &N, mode: Mode, out: &mut String) {
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
pub(super) fn go_scalar(n: &N, out: &mut String) {
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
pub(super) enum GoKey {
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
    pub(super) fn of(n: &N) -> GoKey {
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
pub(super) fn go_key_cmp(a: &N, b: &N) -> std::cmp::Ordering {
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
pub(super) fn go_repr_value(root: &Value, out: &mut String) {
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
pub(super) fn go_format_float(f: f64, bits32: bool) -> String {
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
pub(super) fn go_quote_bytes(b: &[u8], out: &mut String) {
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
pub(super) fn go_quote(s: &str, out: &mut String) {
    out.push('"');
    go_quote_inner(s, out);
    out.push('"');
}

/// The text between the quotes of Go's `strconv.Quote`.
pub(super) fn go_quote_inner(s: &str, out: &mut String) {
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
pub(super) fn go_is_print(c: char) -> bool {
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
