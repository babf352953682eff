//! Input preparation

use super::*;

/// Deepest nesting of collections accepted (go-yaml's own limit).
pub(super) const MAX_DEPTH: usize = 10_000;

/// How many `:<TAB>` spots one piece may need patched (see
/// [`patch_tab_after_colon`]).
pub(super) const MAX_RETRIES: usize = 1_000;

/// saphyr rejects a tab between a `:` and a value starting with a letter or
/// `-` (`a:\tb`), which go-yaml accepts. Given that error, returns the text
/// with the tabs before the reported position turned into spaces (same
/// length, same line and column numbers).
pub(super) fn patch_tab_after_colon(
    text: &str,
    e: &ParseError,
    line_offset: usize,
) -> Option<String> {
    if !e
        .message
        .contains("':' must be followed by a valid YAML whitespace")
    {
        return None;
    }
    let col = e.column.checked_sub(1)?;
    let line_start = line_start(text, e.line.checked_sub(line_offset)?)?;
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

/// saphyr rejects a plain `-` that a flow indicator ends (`[-]`,
/// `{a: -}`, `[-, x]`), which libyaml reads as the string `-`. Given that
/// error, returns the text with that `-` quoted (two columns more on its
/// line).
pub(super) fn patch_dash_in_flow(text: &str, e: &ParseError, line_offset: usize) -> Option<String> {
    if !e
        .message
        .contains("plain scalar cannot start with '-' followed by")
    {
        return None;
    }
    let line_start = line_start(text, e.line.checked_sub(line_offset)?)?;
    let line_end = text[line_start..]
        .find('\n')
        .map_or(text.len(), |i| line_start + i);
    let bytes = text.as_bytes();
    // the reported column is near the `-`: take the nearest bare `-`
    // between a flow opener or separator and a flow indicator
    let col = e.column.saturating_sub(1);
    let at = text
        .get(line_start..line_end)?
        .char_indices()
        .map(|(b, _)| line_start + b)
        .filter(|&i| {
            bytes[i] == b'-'
                && matches!(bytes.get(i + 1), Some(b',' | b']' | b'}'))
                && matches!(
                    bytes[line_start..i]
                        .iter()
                        .rev()
                        .find(|c| **c != b' ' && **c != b'\t'),
                    Some(b'[' | b'{' | b',' | b':')
                )
        })
        .min_by_key(|&i| (i - line_start).abs_diff(col))?;
    let mut out = String::with_capacity(text.len() + 2);
    out.push_str(&text[..at]);
    out.push_str("'-'");
    out.push_str(&text[at + 1..]);
    Some(out)
}

/// saphyr rejects the first line after a block scalar header with an
/// indentation indicator (`value: >+3`) when it is indented past the
/// enclosing block but short of the scalar's indentation. libyaml ends the
/// (empty) scalar there and reads the line as the next token, so a comment
/// line is fine. Given that error on a comment line, returns the text with
/// the comment moved to the first column, where saphyr ends the scalar the
/// same way (line numbers stay the same).
pub(super) fn patch_block_scalar_comment(
    text: &str,
    e: &ParseError,
    line_offset: usize,
) -> Option<String> {
    if !e.message.contains("wrongly indented line in block scalar") {
        return None;
    }
    let start = line_start(text, e.line.checked_sub(line_offset)?)?;
    let line = &text[start..];
    let spaces = line.len() - line.trim_start_matches(' ').len();
    if spaces == 0 || !line[spaces..].starts_with('#') {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..start]);
    out.push_str(&text[start + spaces..]);
    Some(out)
}

/// saphyr rejects a continuation line of a quoted scalar that is not
/// indented past the enclosing block (`value: 'a` then `b'` at the key's
/// column), which libyaml reads like any other folded line. Given that
/// error (reported at the opening quote), returns the text with those
/// lines indented to the quote's column: leading spaces of a continuation
/// line are folded away, and line numbers stay the same.
pub(super) fn patch_quoted_indent(
    text: &str,
    e: &ParseError,
    line_offset: usize,
) -> Option<String> {
    if !e.message.ends_with("found unexpected end of stream") {
        return None;
    }
    let start = line_start(text, e.line.checked_sub(line_offset)?)?;
    let col = e.column.checked_sub(1)?;
    let (off, quote) = text[start..].char_indices().nth(col)?;
    if quote != '\'' && quote != '"' {
        return None;
    }
    let bytes = text.as_bytes();
    let mut i = start + off + 1;
    let mut lines = Vec::new();
    loop {
        match *bytes.get(i)? {
            b'\'' if quote == '\'' && bytes.get(i + 1) == Some(&b'\'') => i += 2,
            b'\'' if quote == '\'' => break,
            b'"' if quote == '"' => break,
            b'\\' if quote == '"' => {
                if bytes.get(i + 1) == Some(&b'\n') {
                    lines.push(i + 2);
                }
                i += 2;
            }
            b'\n' => {
                lines.push(i + 1);
                i += 1;
            }
            _ => i += 1,
        }
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut copied = 0;
    for at in lines {
        let line = &text[at..];
        let spaces = line.len() - line.trim_start_matches(' ').len();
        let content = line[spaces..].split('\n').next().unwrap_or("");
        if content.trim().is_empty() || spaces > col {
            continue;
        }
        if spaces == 0 && (content.starts_with("---") || content.starts_with("...")) {
            // a document marker ends the scalar for libyaml too (an error)
            return None;
        }
        out.push_str(&text[copied..at]);
        out.extend(std::iter::repeat_n(' ', col + 1 - spaces));
        copied = at;
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// Byte offset where 1-based `line` of `text` starts.
fn line_start(text: &str, line: usize) -> Option<usize> {
    if line <= 1 {
        Some(0)
    } else {
        Some(text.match_indices('\n').nth(line - 2)?.0 + 1)
    }
}

/// Which of kustomize's two YAML readers is emulated.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Mode {
    /// kyaml: go-yaml v3 nodes, DeAnchor, decode into Go values, JSON.
    Strict,
    /// sigs.k8s.io/yaml: go-yaml v2 decode, YAML -> JSON conversion.
    Lenient,
}

/// kyaml replaces every CRLF by LF before parsing; go-yaml v2 treats CRLF as
/// a single line break, so doing it up front is right for both readers.
pub(super) fn normalize_newlines(src: &str) -> Cow<'_, str> {
    if src.contains("\r\n") {
        Cow::Owned(src.replace("\r\n", "\n"))
    } else {
        Cow::Borrowed(src)
    }
}

/// One piece of a resource file, as split by kyaml.
#[derive(Clone, Copy)]
pub(super) struct Chunk<'a> {
    pub(super) text: &'a str,
    /// Lines of the input before this piece.
    pub(super) line_offset: usize,
}

/// Splits the input like kyaml's `splitDocuments`: every match of
/// `\n---.*\n` ends a piece; the text after `---` may only be blank or a
/// comment. The newline before the separator stays with the piece before it.
pub(super) fn split_chunks(text: &str) -> Result<Vec<Chunk<'_>>, ParseError> {
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
pub(super) fn check_directives(text: &str, line_offset: usize) -> Result<(), ParseError> {
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

pub(super) fn count_newlines(bytes: &[u8], from: usize, to: usize) -> usize {
    bytes
        .get(from..to)
        .map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
}
