//! Go regular expressions, as kustomize reads them.
//!
//! Selectors (`patches[].target`, replacements), `images[].name` and the
//! `[key=value]` steps of field paths are Go `regexp` patterns. Go's syntax
//! is RE2's, close to the `regex` crate's but not equal, and real
//! kustomizations depend on the differences (`name: \${CLUSTER_NAME}-cp`):
//!
//! * a `{` that does not start a repetition (`{n}`, `{n,}`, `{n,m}`) is a
//!   literal, and a repetition count over 1000 is an error;
//! * a repetition of a repetition (`a**`, `a{2}*`) is an error;
//! * `\d`, `\s`, `\w` and `\b` are ASCII (`\s` without `\v`);
//! * `\Q…\E` quotes, `\0`, `\12`, `\101` are octal escapes, `\_`, `\<`
//!   and every other escaped ASCII punctuation is the character itself;
//! * in a class, `[`, `&&`, `--` and `~~` are plain characters;
//! * only the `i`, `m`, `s` and `U` flags exist.
//!
//! [`compile`] rewrites a Go pattern into the crate's syntax (or fails as Go
//! does) and compiles it; errors read `error parsing regexp: …` as Go's.

use regex::Regex;

/// A compiled Go regular expression.
pub fn compile(pattern: &str) -> Result<Regex, String> {
    let translated = translate(pattern).map_err(|(code, expr)| go_error(code, &expr))?;
    Regex::new(&translated).map_err(|e| go_error(&rust_reason(&e), pattern))
}

/// `^(?:pattern)$`, as kustomize anchors selector fields; `None` when the
/// pattern is empty (matches anything).
pub fn anchored(pattern: &str) -> Result<Option<Regex>, String> {
    if pattern.is_empty() {
        return Ok(None);
    }
    compile(&format!("^(?:{pattern})$")).map(Some)
}

fn go_error(code: &str, expr: &str) -> String {
    format!("error parsing regexp: {code}: `{expr}`")
}

/// The crate's reason, in Go's words where they differ.
fn rust_reason(e: &regex::Error) -> String {
    let text = e.to_string();
    let reason = text
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("error: "))
        .unwrap_or(text.as_str())
        .trim();
    match reason {
        "unclosed group" => "missing closing )".to_string(),
        "unopened group" => "unexpected )".to_string(),
        "unclosed character class" => "missing closing ]".to_string(),
        r if r.contains("repetition operator missing expression") => {
            "missing argument to repetition operator".to_string()
        }
        r if r.contains("look-around") => "invalid or unsupported Perl syntax".to_string(),
        r => r.to_string(),
    }
}

type Failure = (&'static str, String);

const DIGIT: &str = "0-9";
const WORD: &str = "0-9A-Za-z_";
const SPACE: &str = r"\t\n\x0C\r ";

/// Go's pattern in the crate's syntax.
fn translate(p: &str) -> Result<String, Failure> {
    let chars: Vec<char> = p.chars().collect();
    let mut out = String::with_capacity(p.len() + 8);
    let mut i = 0;
    // the previous item was a repetition (Go refuses to repeat it again)
    let mut repeated = false;
    // flag groups `(?i)` read since the last item: Go applies a repetition
    // after them to that item (`a(?i)*` is `a*(?i)`), the crate refuses it
    let mut flags = String::new();
    while i < chars.len() {
        let c = chars[i];
        let repetition = match c {
            '*' | '+' | '?' => Some(i + 1),
            '{' => match repeat(&chars, i) {
                Some((min, max, next)) => {
                    if min > 1000 || max.is_some_and(|m| m > 1000 || m < min) {
                        return Err(("invalid repeat count", chars[i..next].iter().collect()));
                    }
                    Some(next)
                }
                None => None,
            },
            _ => None,
        };
        if let Some(mut next) = repetition {
            if repeated {
                return Err(nested(&chars, i));
            }
            if chars.get(next) == Some(&'?') {
                next += 1;
            }
            out.extend(&chars[i..next]);
            out.push_str(&flags);
            flags.clear();
            i = next;
            repeated = true;
            continue;
        }
        repeated = false;
        if c == '(' && chars.get(i + 1) == Some(&'?') {
            let next = group_flags(&chars, i)?;
            if chars[next - 1] == ')' {
                // `(?)` sets no flag: Go accepts it, the crate does not
                if next != i + 3 {
                    flags.extend(&chars[i..next]);
                }
            } else {
                out.push_str(&flags);
                flags.clear();
                out.extend(&chars[i..next]);
            }
            i = next;
            continue;
        }
        out.push_str(&flags);
        flags.clear();
        let (text, next) = match c {
            '\\' => escape_outside(&chars, i)?,
            '[' => class(&chars, i)?,
            '{' => (r"\{".to_string(), i + 1),
            '}' => (r"\}".to_string(), i + 1),
            _ => (c.to_string(), i + 1),
        };
        out.push_str(&text);
        i = next;
    }
    out.push_str(&flags);
    Ok(out)
}

fn nested(chars: &[char], i: usize) -> Failure {
    // Go names the two operators; the second one's text from `i`
    let start = i.saturating_sub(1);
    let end = (i + 1).min(chars.len());
    (
        "invalid nested repetition operator",
        chars[start..end].iter().collect(),
    )
}

/// A Go repetition `{n}`, `{n,}`, `{n,m}` at `i`: (min, max, end).
fn repeat(chars: &[char], i: usize) -> Option<(u32, Option<u32>, usize)> {
    let mut j = i + 1;
    let min = int(chars, &mut j)?;
    match chars.get(j)? {
        '}' => Some((min, Some(min), j + 1)),
        ',' => {
            j += 1;
            if chars.get(j)? == &'}' {
                return Some((min, None, j + 1));
            }
            let max = int(chars, &mut j)?;
            (chars.get(j)? == &'}').then_some((min, Some(max), j + 1))
        }
        _ => None,
    }
}

/// Decimal digits without a leading zero (Go's rule), saturating.
fn int(chars: &[char], j: &mut usize) -> Option<u32> {
    let start = *j;
    while chars.get(*j).is_some_and(char::is_ascii_digit) {
        *j += 1;
    }
    let digits = &chars[start..*j];
    if digits.is_empty() || (digits.len() > 1 && digits[0] == '0') {
        return None;
    }
    Some(digits.iter().fold(0u32, |n, d| {
        n.saturating_mul(10)
            .saturating_add(d.to_digit(10).unwrap_or(0))
    }))
}

/// `(?flags)`, `(?flags:`, `(?P<name>`, `(?<name>` at `i`: the end of the
/// group's opening, checked as Go checks it.
fn group_flags(chars: &[char], i: usize) -> Result<usize, Failure> {
    let rest = &chars[i + 2..];
    if rest.first() == Some(&'<') || rest.starts_with(&['P', '<']) {
        let open = if rest[0] == 'P' { i + 4 } else { i + 3 };
        let close = chars[open..]
            .iter()
            .position(|&c| c == '>')
            .map(|p| open + p)
            .ok_or_else(|| ("invalid named capture", chars[i..].iter().collect()))?;
        let name = &chars[open..close];
        if name.is_empty() || !name.iter().all(|c| c.is_alphanumeric() || *c == '_') {
            return Err(("invalid named capture", chars[i..=close].iter().collect()));
        }
        return Ok(close + 1);
    }
    let mut j = i + 2;
    let mut negated = false;
    let mut flag = false;
    while let Some(&c) = chars.get(j) {
        match c {
            'i' | 'm' | 's' | 'U' => flag = true,
            '-' if !negated => {
                negated = true;
                flag = false;
            }
            ':' | ')' if flag || !negated => return Ok(j + 1),
            _ => break,
        }
        j += 1;
    }
    let end = (j + 1).min(chars.len());
    Err((
        "invalid or unsupported Perl syntax",
        chars[i..end].iter().collect(),
    ))
}

/// An escape outside a class at `i` (the backslash): its translation and
/// the index after it.
fn escape_outside(chars: &[char], i: usize) -> Result<(String, usize), Failure> {
    let Some(&c) = chars.get(i + 1) else {
        return Err(("trailing backslash at end of expression", String::new()));
    };
    let text = match c {
        'A' | 'z' => format!("\\{c}"),
        'b' | 'B' => format!("(?-u:\\{c})"),
        'd' => format!("[{DIGIT}]"),
        'D' => format!("[^{DIGIT}]"),
        'w' => format!("[{WORD}]"),
        'W' => format!("[^{WORD}]"),
        's' => format!("[{SPACE}]"),
        'S' => format!("[^{SPACE}]"),
        'p' | 'P' => {
            let end = unicode_class_end(chars, i)?;
            return Ok((chars[i..end].iter().collect(), end));
        }
        'Q' => {
            let mut j = i + 2;
            let mut lit = String::new();
            while j < chars.len() {
                if chars[j] == '\\' && chars.get(j + 1) == Some(&'E') {
                    j += 2;
                    return Ok((regex::escape(&lit), j));
                }
                lit.push(chars[j]);
                j += 1;
            }
            return Ok((regex::escape(&lit), j));
        }
        _ => {
            let (ch, next) = escaped_char(chars, i)?;
            return Ok((literal(ch), next));
        }
    };
    Ok((text, i + 2))
}

/// The end of `\pN`, `\p{Name}` starting at `i`.
fn unicode_class_end(chars: &[char], i: usize) -> Result<usize, Failure> {
    match chars.get(i + 2) {
        Some('{') => chars[i + 2..]
            .iter()
            .position(|&c| c == '}')
            .map(|p| i + 2 + p + 1)
            .ok_or_else(|| ("invalid character class range", chars[i..].iter().collect())),
        Some(_) => Ok(i + 3),
        None => Err(("invalid character class range", chars[i..].iter().collect())),
    }
}

/// A single-character escape at `i` (Go's `parseEscape`): the character
/// and the index after the escape.
fn escaped_char(chars: &[char], i: usize) -> Result<(char, usize), Failure> {
    let invalid = |end: usize| {
        (
            "invalid escape sequence",
            chars[i..end.min(chars.len())].iter().collect::<String>(),
        )
    };
    let Some(&c) = chars.get(i + 1) else {
        return Err(("trailing backslash at end of expression", String::new()));
    };
    let is_octal = |j: usize| chars.get(j).is_some_and(|d| ('0'..='7').contains(d));
    match c {
        '1'..='7' if !is_octal(i + 2) => Err(invalid(i + 2)),
        '0'..='7' => {
            let mut j = i + 1;
            let mut value = 0u32;
            while j < i + 4 && is_octal(j) {
                value = value * 8 + chars[j].to_digit(8).unwrap_or(0);
                j += 1;
            }
            char::from_u32(value)
                .map(|ch| (ch, j))
                .ok_or_else(|| invalid(j))
        }
        'x' => {
            if chars.get(i + 2) == Some(&'{') {
                let close = chars[i + 3..]
                    .iter()
                    .position(|&c| c == '}')
                    .map(|p| i + 3 + p)
                    .ok_or_else(|| invalid(chars.len()))?;
                let hex: String = chars[i + 3..close].iter().collect();
                u32::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| !hex.is_empty())
                    .and_then(char::from_u32)
                    .map(|ch| (ch, close + 1))
                    .ok_or_else(|| invalid(close + 1))
            } else {
                let hex: String = chars.get(i + 2..i + 4).unwrap_or(&[]).iter().collect();
                if hex.len() != 2 {
                    return Err(invalid(i + 4));
                }
                u32::from_str_radix(&hex, 16)
                    .ok()
                    .and_then(char::from_u32)
                    .map(|ch| (ch, i + 4))
                    .ok_or_else(|| invalid(i + 4))
            }
        }
        'a' => Ok(('\x07', i + 2)),
        'f' => Ok(('\x0C', i + 2)),
        'n' => Ok(('\n', i + 2)),
        'r' => Ok(('\r', i + 2)),
        't' => Ok(('\t', i + 2)),
        'v' => Ok(('\x0B', i + 2)),
        c if c.is_ascii() && !c.is_ascii_alphanumeric() => Ok((c, i + 2)),
        _ => Err(invalid(i + 2)),
    }
}

/// One character as a literal in the crate's syntax (outside a class).
fn literal(c: char) -> String {
    regex::escape(c.encode_utf8(&mut [0; 4]))
}

/// One character inside a class in the crate's syntax.
fn class_char(c: char) -> String {
    if c.is_alphanumeric() || c == ' ' || c == '_' {
        c.to_string()
    } else {
        format!("\\x{{{:X}}}", c as u32)
    }
}

/// A Go class `[…]` at `i`: its translation and the index after it.
fn class(chars: &[char], i: usize) -> Result<(String, usize), Failure> {
    let mut out = String::from("[");
    let mut j = i + 1;
    if chars.get(j) == Some(&'^') {
        out.push('^');
        j += 1;
    }
    let mut first = true;
    loop {
        let Some(&c) = chars.get(j) else {
            return Err(("missing closing ]", chars[i..].iter().collect()));
        };
        if c == ']' && !first {
            out.push(']');
            return Ok((out, j + 1));
        }
        first = false;
        // [:alpha:], [:^alpha:]
        if c == '['
            && chars.get(j + 1) == Some(&':')
            && let Some(end) = posix_class_end(chars, j)
        {
            out.extend(&chars[j..end]);
            j = end;
            continue;
        }
        if c == '\\' {
            match chars.get(j + 1) {
                Some('d') => out.push_str(DIGIT),
                Some('w') => out.push_str(WORD),
                Some('s') => out.push_str(SPACE),
                Some('D') => out.push_str(&format!("[^{DIGIT}]")),
                Some('W') => out.push_str(&format!("[^{WORD}]")),
                Some('S') => out.push_str(&format!("[^{SPACE}]")),
                Some('p' | 'P') => {
                    let end = unicode_class_end(chars, j)?;
                    out.extend(&chars[j..end]);
                    j = end;
                    continue;
                }
                _ => {
                    let (lo, next) = escaped_char(chars, j)?;
                    j = range_end(chars, next, lo, &mut out)?;
                    continue;
                }
            }
            j += 2;
            continue;
        }
        j = range_end(chars, j + 1, c, &mut out)?;
    }
}

/// After a class character `lo` (ending before `j`): a range `lo-hi` when
/// one follows, written to `out`; the index after it.
fn range_end(chars: &[char], j: usize, lo: char, out: &mut String) -> Result<usize, Failure> {
    if chars.get(j) == Some(&'-') && chars.get(j + 1).is_some_and(|&c| c != ']') {
        let (hi, next) = if chars[j + 1] == '\\' {
            escaped_char(chars, j + 1)?
        } else {
            (chars[j + 1], j + 2)
        };
        if hi < lo {
            return Err(("invalid character class range", format!("{lo}-{hi}")));
        }
        out.push_str(&class_char(lo));
        out.push('-');
        out.push_str(&class_char(hi));
        return Ok(next);
    }
    out.push_str(&class_char(lo));
    Ok(j)
}

/// The end of a POSIX class `[:name:]` at `j`, when there is one.
fn posix_class_end(chars: &[char], j: usize) -> Option<usize> {
    let mut k = j + 2;
    while k + 1 < chars.len() {
        if chars[k] == ':' && chars[k + 1] == ']' {
            return Some(k + 2);
        }
        if !(chars[k].is_ascii_alphabetic() || (k == j + 2 && chars[k] == '^')) {
            return None;
        }
        k += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(p: &str, s: &str) -> bool {
        anchored(p).unwrap().unwrap().is_match(s)
    }

    #[test]
    fn braces_that_are_not_repetitions_are_literal() {
        assert!(matches(r"\${CLUSTER_NAME}-cp", "${CLUSTER_NAME}-cp"));
        assert!(matches("a{b", "a{b"));
        assert!(matches("a{b}", "a{b}"));
        assert!(matches("a{,1}b", "a{,1}b"));
        assert!(matches("a{01}", "a{01}"));
        assert!(matches("}", "}"));
        assert!(matches("x{2}", "xx"));
        assert!(matches("x{1,}", "xxx"));
        assert!(matches("x{1,2}?y", "xy"));
        assert!(!matches("x{0}1", "x1"));
    }

    #[test]
    fn go_refuses_what_go_refuses() {
        let err = |p: &str| anchored(p).unwrap_err();
        assert_eq!(
            err("x{1001}"),
            "error parsing regexp: invalid repeat count: `{1001}`"
        );
        assert!(err("x{2,1}").contains("invalid repeat count"));
        assert!(err("a**").contains("invalid nested repetition operator"));
        assert!(err("a{2}*").contains("invalid nested repetition operator"));
        assert!(err(r"\1").contains("invalid escape sequence"));
        assert!(err(r"\8").contains("invalid escape sequence"));
        assert!(err(r"\C").contains("invalid escape sequence"));
        assert!(err("(?x)a").contains("invalid or unsupported Perl syntax"));
        assert!(err("(x").starts_with("error parsing regexp: missing closing )"));
        assert!(err("[a").contains("missing closing ]"));
        assert!(err("[z-a]").contains("invalid character class range"));
        assert!(matches("a*?", "aa"));
        assert!(matches("(?i)AB", "ab"));
        assert!(matches("(?P<n>a)(?<m>b)", "ab"));
        assert!(matches("(?)a(?-i:b)", "ab"));
        assert!(matches("x(?s)+", "xx"));
        assert!(matches("x(?i)*y", "Y"));
        assert!(err("(?i)*").contains("missing argument to repetition operator"));
        assert!(err("(?i-)a").contains("invalid or unsupported Perl syntax"));
    }

    #[test]
    fn escapes_read_as_in_go() {
        assert!(matches(r"\QA.b\E", "A.b"));
        assert!(!matches(r"\QA.b\E", "Axb"));
        // quoted up to the end: kustomize's anchoring is quoted too
        assert!(compile(r"^\Qa.b").unwrap().is_match("a.b"));
        assert!(anchored(r"\Qa.b").is_err());
        assert!(matches(r"\101\.b", "A.b"));
        assert!(matches(r"\0", "\0"));
        assert!(matches(r"\12", "\n"));
        assert!(matches(r"\x41\x{42}", "AB"));
        assert!(matches(r"\_\<\>\#\ ", "_<># "));
        assert!(matches(r"a\-b\&\~", "a-b&~"));
    }

    #[test]
    fn perl_classes_are_ascii() {
        assert!(matches(r"\d+", "123"));
        assert!(!matches(r"\d", "٣"));
        assert!(!matches(r"\w", "é"));
        assert!(!matches(r"\s", "\u{0B}"));
        assert!(matches(r"\s", "\t"));
        assert!(matches(r"[\d_]+", "1_2"));
        assert!(matches(r"[^\D]", "7"));
        assert!(matches(r"\bab\b", "ab"));
        assert!(matches(r"\pN", "٣"));
        assert!(matches(r"[\p{Greek}x]", "α"));
    }

    #[test]
    fn classes_read_as_in_go() {
        assert!(matches("[[a]]", "[]"));
        assert!(matches("[]a]", "]"));
        assert!(matches("[^]a]", "b"));
        assert!(matches("[a&&b]", "&"));
        assert!(anchored("[a--]").is_err());
        assert!(matches("[a-c-e]", "-"));
        assert!(matches("[a~~b]", "~"));
        assert!(matches("[[:alpha:]]+", "ab"));
        assert!(matches("[[:^digit:]]", "a"));
        assert!(matches(r"[\x41-\x43]", "B"));
        assert!(matches(r"[.{}-]", "{"));
    }
}
