//! Line numbers of the re-encoded document (for duplicate-key errors)

use super::*;

/// kustomize reports duplicate keys with line numbers of the resource as
/// kyaml re-encodes it: blank lines dropped, one line per key or sequence
/// item (multi-line flow collections and scalars collapse), comment lines
/// and block scalar bodies kept. This maps source lines to those numbers.
pub(super) struct LineMap {
    pub(super) cum: Vec<u32>,
    pub(super) inserted: Vec<(u32, u32)>,
}

impl LineMap {
    pub(super) fn new(src: &str, inserted: &[(u32, u32)]) -> Self {
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
                        ScalarStyle::Folded => super::folded::written_lines(&value).len(),
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

    pub(super) fn map(&self, (line, after): (u32, u32)) -> u32 {
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
pub(super) struct LmFrame {
    pub(super) is_map: bool,
    pub(super) flow: bool,
    pub(super) expecting_key: bool,
    /// Inside a removed `<<` entry.
    pub(super) suppress: bool,
    /// The current key is `<<`: its value is removed.
    pub(super) skip_value: bool,
}

impl LmFrame {
    /// A node finished in the top collection: maps alternate key / value.
    pub(super) fn toggle(stack: &mut [LmFrame]) {
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
