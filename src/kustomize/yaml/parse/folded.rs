//! The value kustomize ends up with for a folded block scalar (`>`).
//!
//! kyaml turns a resource into data by printing its nodes with go-yaml v3
//! and reading that text back (`RNode.MarshalJSON`, at output and for a
//! JSON patch). A scalar written as a folded block keeps that style up to
//! then, and go-yaml v3's folded writer differs from libyaml's: to decide
//! whether a line break needs a blank line after it (so that reading it
//! back does not fold it into a space), it looks at the start of the whole
//! value instead of at the next line. The text read back therefore
//!
//! * gains a line break before a more-indented line and at the end of a
//!   kept (`>+`) value, when the value starts with a non-blank character;
//! * loses the line break between two ordinary lines (they fold into a
//!   space) when the value starts with a blank.
//!
//! kyaml's printer does not break long lines. [`reread`] computes the
//! value read back from the value parsed.
//!
//! Both block styles share one more flaw of the printer: a value starting
//! with a tab gets no indentation indicator, and go-yaml cannot read that
//! text back ([`tab_first`]).

/// The value go-yaml v3 reads back after writing `value` as a folded
/// block scalar; `None` when that is `value` itself (also when go-yaml
/// would not write the value as a block at all).
pub(super) fn reread(value: &str) -> Option<String> {
    if !block_allowed(value) {
        return None;
    }
    let back = read_folded(&written_lines(value), chomping(value));
    (back != value).then_some(back)
}

/// Whether go-yaml v3 writes `value`, a block scalar, as text it cannot
/// read back: a first line starting with a tab, with no indentation
/// indicator (the reader takes the tab for indentation).
pub(super) fn tab_first(value: &str) -> bool {
    value.starts_with('\t') && block_allowed(value)
}

/// go-yaml v3's `yaml_emitter_analyze_scalar`, as far as block styles go
/// (tabs are allowed; line separators U+2028/U+2029, which the writer
/// copies as they are and the reader takes for line breaks, are left
/// alone here).
fn block_allowed(value: &str) -> bool {
    if value.is_empty() || value.ends_with(' ') || value.contains(" \n") {
        return false;
    }
    value.chars().all(|c| {
        matches!(c, '\t' | '\n' | ' '..='~' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}')
            && !matches!(c, '\u{feff}' | '\u{2028}' | '\u{2029}')
    })
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Chomp {
    Strip,
    Clip,
    Keep,
}

/// The chomping indicator go-yaml writes for `value`.
fn chomping(value: &str) -> Chomp {
    if !value.ends_with('\n') {
        Chomp::Strip
    } else if value == "\n" || value.ends_with("\n\n") {
        Chomp::Keep
    } else {
        Chomp::Clip
    }
}

/// The lines go-yaml v3's `yaml_emitter_write_folded_scalar` writes for
/// `value` (without their indentation).
pub(super) fn written_lines(value: &str) -> Vec<String> {
    // the flaw: the start of the value decides, not the next line
    let starts_blank = value
        .trim_start_matches('\n')
        .chars()
        .next()
        .is_none_or(|c| c == ' ' || c == '\t');
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut breaks = true;
    let mut leading_spaces = true;
    for c in value.chars() {
        if c == '\n' {
            if !breaks && !leading_spaces && !starts_blank {
                lines.push(std::mem::take(&mut line));
            }
            lines.push(std::mem::take(&mut line));
            breaks = true;
            continue;
        }
        if breaks {
            leading_spaces = c == ' ' || c == '\t';
        }
        line.push(c);
        breaks = false;
    }
    if !breaks {
        lines.push(line);
    }
    lines
}

/// libyaml's reading of a folded block scalar made of `lines` (content
/// without indentation; empty for an empty line).
fn read_folded(lines: &[String], chomp: Chomp) -> String {
    let blank_start = |l: &str| l.starts_with([' ', '\t']);
    let mut out = String::new();
    let mut leading_break = false;
    let mut trailing_breaks = 0;
    let mut leading_blank = false;
    let mut rest = lines.iter().peekable();
    loop {
        while rest.next_if(|l| l.is_empty()).is_some() {
            trailing_breaks += 1;
        }
        let Some(line) = rest.next() else { break };
        let trailing_blank = blank_start(line);
        if leading_break && !leading_blank && !trailing_blank {
            if trailing_breaks == 0 {
                out.push(' ');
            }
        } else if leading_break {
            out.push('\n');
        }
        out.extend(std::iter::repeat_n('\n', trailing_breaks));
        trailing_breaks = 0;
        leading_blank = blank_start(line);
        out.push_str(line);
        leading_break = true;
    }
    if chomp != Chomp::Strip && leading_break {
        out.push('\n');
    }
    if chomp == Chomp::Keep {
        out.extend(std::iter::repeat_n('\n', trailing_breaks));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::reread;

    #[test]
    fn ordinary_folded_text_is_unchanged() {
        for v in [
            "folded text\n",
            "one\ntwo\n",
            "para one\n\npara two",
            "x",
            "a long line a long line a long line a long line a long line a long line a long \
             line a long line\n",
        ] {
            assert_eq!(reread(v), None, "{v:?}");
        }
    }

    #[test]
    fn a_more_indented_line_gains_a_break() {
        assert_eq!(
            reread("a\n\n  more\nback\n").as_deref(),
            Some("a\n\n\n  more\nback\n")
        );
        assert_eq!(reread("x\n y\nz").as_deref(), Some("x\n\n y\nz"));
    }

    #[test]
    fn a_kept_end_gains_a_break() {
        assert_eq!(reread("keep\n\n").as_deref(), Some("keep\n\n\n"));
    }

    #[test]
    fn a_value_starting_with_a_blank_folds_its_lines() {
        assert_eq!(
            reread("  indented\nsecond\nthird\n").as_deref(),
            Some("  indented\nsecond third\n")
        );
    }

    #[test]
    fn long_lines_are_not_broken() {
        let long = format!("a\n  {}\nb\n", ["word"; 30].join(" "));
        assert_eq!(
            reread(&long),
            Some(format!("a\n\n  {}\nb\n", ["word"; 30].join(" ")))
        );
    }

    #[test]
    fn a_first_tab_cannot_be_read_back() {
        assert!(super::tab_first("\tx\n"));
        assert!(!super::tab_first("x\n\ty\n"));
        assert!(!super::tab_first("\tx \n"));
    }

    #[test]
    fn values_go_yaml_writes_quoted_are_unchanged() {
        assert_eq!(reread("trailing \n"), None);
        assert_eq!(reread("space \nbreak"), None);
        assert_eq!(reread(""), None);
    }
}
