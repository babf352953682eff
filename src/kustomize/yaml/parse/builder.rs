//! Event reader and tree builder

use super::*;

/// One document as built from the events, before the decode checks.
pub(super) struct Doc {
    pub(super) root: N,
    /// Lines kyaml adds when it appends merged entries: (after this source
    /// line, how many).
    pub(super) inserted: Vec<(u32, u32)>,
    /// Set when something JSON cannot encode may be present (non-string
    /// keys, infinite floats, out-of-range time zones).
    pub(super) json_problem: bool,
    /// Line of the first block scalar kyaml's printer writes as text it
    /// cannot read back (see `folded::tab_first`).
    pub(super) tab_line: Option<u32>,
    /// Typed scalars whose text is not how their value prints (see
    /// `DocReader::written`).
    pub(super) written: Vec<(Vec<PathSeg>, String)>,
    /// Fields holding a quoted or literal block scalar string (recorded
    /// with `written`; see `MarkedDocument::quoted`).
    pub(super) quoted: Vec<Vec<PathSeg>>,
}

/// Pulls documents out of a saphyr event stream.
pub(super) struct DocReader<'a> {
    pub(super) parser: Parser<'a, saphyr_parser::StrInput<'a>>,
    pub(super) src: &'a str,
    pub(super) mode: Mode,
    /// Lines before `src` in the whole input, for error positions.
    pub(super) line_offset: usize,
    pub(super) finished: bool,
    /// Last (character, byte) offsets converted, to walk forward cheaply.
    pub(super) cursor: (usize, usize),
    /// A strategic-merge patch: null annotation values are nulls (they
    /// delete), not their text.
    pub(super) patch: bool,
    /// Which of a patch's labels and annotations are read as their text,
    /// nulls included (see [`PatchMeta`]).
    pub(super) meta_text: PatchMeta,
    /// Record the paths and texts of the typed scalars whose text is not
    /// how their value prints (`0600`, `1.50`, `True`, `~`, a timestamp,
    /// `!!binary`): kyaml keeps a scalar's text, and a replacement or a
    /// var reads it (strict mode, outside annotations; not through
    /// aliases or merge keys).
    pub(super) written: bool,
}

impl<'a> DocReader<'a> {
    pub(super) fn new(src: &'a str, mode: Mode) -> Self {
        DocReader {
            parser: Parser::new_from_str(src),
            src,
            mode,
            line_offset: 0,
            finished: false,
            cursor: (0, 0),
            patch: false,
            meta_text: PatchMeta::AsWritten,
            written: false,
        }
    }

    /// The next document, `None` at the end of the stream.
    pub(super) fn next_document(&mut self) -> Result<Option<Doc>, ParseError> {
        if self.finished {
            return Ok(None);
        }
        let mut b = Builder::new(self.mode);
        b.patch = self.patch;
        b.meta_text = self.meta_text;
        b.written = self.written.then(Vec::new);
        b.quoted = self.written.then(Vec::new);
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
                    } else if let Err(e) = self.block_scalar_tab_checks(&mut b, &value, style, span)
                    {
                        Err(e)
                    } else {
                        let value = self.block_scalar_at_eof(value, style, span);
                        b.scalar(value, style, anchor, tag.as_deref(), span)
                    }
                }
                Event::Alias(id) => b.alias(id, span).map_err(|mut e| {
                    if e.message == CONTAINS_ITSELF {
                        let name = anchor_name_at(self.src, span.start.line(), span.start.col());
                        e.message = format!("yaml: anchor '{name}' value contains itself");
                    }
                    e
                }),
                Event::SequenceStart(anchor, _) => {
                    let bracket = self.opens_with_bracket(span);
                    b.open(false, anchor, span, bracket)
                }
                Event::MappingStart(anchor, _) => {
                    let bracket = self.opens_with_bracket(span);
                    b.open(true, anchor, span, bracket)
                }
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
    pub(super) fn block_scalar_at_eof<'v>(
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

    /// The checks on the tabs of a block scalar: libyaml's reading of the
    /// input, and (resources) kyaml's printing of it later on.
    fn block_scalar_tab_checks(
        &mut self,
        b: &mut Builder,
        value: &str,
        style: ScalarStyle,
        span: Span,
    ) -> Result<(), ParseError> {
        if !matches!(style, ScalarStyle::Literal | ScalarStyle::Folded) {
            return Ok(());
        }
        let Some(header) = self.block_header(span) else {
            return Ok(());
        };
        self.block_scalar_tab(header)?;
        if self.mode == Mode::Strict && b.tab_line.is_none() && folded::tab_first(value) {
            b.tab_line = Some(to_u32(header.0));
        }
        Ok(())
    }

    /// The header line of the block scalar whose content starts at `span`
    /// (saphyr's span leaves the header out): its 1-based line, its text
    /// from the indicator on, the byte offset of the line after it, and its
    /// indentation.
    pub(super) fn block_header(&mut self, span: Span) -> Option<(usize, &'a str, usize, usize)> {
        let src = self.src;
        let content = self.byte_index(span.start.index());
        let mut end = src.get(..content)?.rfind('\n')?;
        let mut line = span.start.line();
        loop {
            line = line.checked_sub(1)?;
            let from = src.get(..end)?.rfind('\n').map_or(0, |i| i + 1);
            let text = src.get(from..end)?;
            let code = text.split(" #").next().unwrap_or(text).trim_end();
            let tail = code.trim_end_matches(|c: char| matches!(c, '+' | '-' | '0'..='9'));
            if tail.ends_with(['|', '>']) {
                let at = from + tail.len() - 1;
                let indent = text.len() - text.trim_start_matches(' ').len();
                return Some((line, src.get(at..end)?, end + 1, indent));
            }
            if !text.trim().is_empty() || from == 0 {
                return None;
            }
            end = from - 1;
        }
    }

    /// libyaml refuses a tab where it still reads indentation: in a block
    /// scalar without an indentation indicator, on the lines before the
    /// first content, and on a later line less indented than the content.
    /// saphyr reads such a tab as content. `header` is what
    /// [`Self::block_header`] gives.
    fn block_scalar_tab(
        &self,
        (start, header, body, parent): (usize, &str, usize, usize),
    ) -> Result<(), ParseError> {
        let given = header
            .chars()
            .skip(1)
            .take_while(|c| matches!(c, '+' | '-' | '0'..='9'))
            .any(|c| c.is_ascii_digit());
        if given {
            return Ok(());
        }
        let mut indent: Option<usize> = None;
        let mut max_indent = 0;
        for (k, l) in self.src.get(body..).unwrap_or("").split('\n').enumerate() {
            let spaces = l.len() - l.trim_start_matches(' ').len();
            let s = indent.map_or(spaces, |i| spaces.min(i));
            let next = l.get(s..).and_then(|r| r.chars().next());
            if next == Some('\t') && indent.is_none_or(|i| s < i) {
                // go-yaml numbers the line of the scalar's start (1-based),
                // or of the tab when the scalar starts on the first line
                let line = if start > 1 { start } else { start + k + 1 };
                return Err(ParseError::new(
                    format!(
                        "yaml: line {line}: found a tab character where an indentation space \
                         is expected"
                    ),
                    start + k + 1,
                    s + 1,
                ));
            }
            if next.is_none() {
                if indent.is_none() {
                    max_indent = max_indent.max(s);
                }
                continue;
            }
            // the content is more indented than the line holding the header
            // (libyaml: than the enclosing collection)
            if s < *indent.get_or_insert(max_indent.max(s).max(parent + 1)) {
                break;
            }
        }
        Ok(())
    }

    /// Whether the double-quoted scalar at `span` uses the `\/` escape.
    pub(super) fn has_slash_escape(&mut self, span: Span) -> bool {
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

    /// Whether a collection's start event is a flow one: its span ends
    /// with the `[` or `{` (it starts at an anchor or tag written before).
    fn opens_with_bracket(&mut self, span: Span) -> bool {
        if span.end.index() <= span.start.index() {
            return false;
        }
        let end = self.byte_index(span.end.index());
        self.src.get(..end).is_some_and(|s| s.ends_with(['[', '{']))
    }

    /// Byte offset of a character offset (saphyr counts characters).
    pub(super) fn byte_index(&mut self, char_idx: usize) -> usize {
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
    pub(super) fn scan_error(&self, e: &ScanError, b: &Builder) -> ParseError {
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

/// A strategic-merge patch entry whose key is a scalar that is not a string
/// (`8.5: null`, `1: ~`, `true:`) and whose value is null only deletes:
/// kyaml reads the patch into nodes (no JSON), and its merge looks fields up
/// by the key's text and drops null fields, so the key never reaches JSON.
/// Such keys become their source text. Only along paths of maps: an entry
/// inside a list can be copied into the result verbatim (a replaced list),
/// and kustomize then fails to print it. `!!null` keys stay as they are
/// (kyaml keeps `null: null` where it adds a new map).
fn deletion_keys_as_text(entries: &mut [Entry], stack: &[Frame]) {
    if !stack.iter().all(|f| matches!(f.body, Body::Map(_))) {
        return;
    }
    for e in entries {
        if e.meta.str_tag
            || e.meta.null_tag
            || matches!(e.key, N::Seq(_) | N::Map(_))
            || !matches!(e.val, N::Null | N::EmptyNull)
        {
            continue;
        }
        let text = e.meta.text(&e.key).to_owned();
        e.key = N::Str(text);
        e.meta.raw = None;
        e.meta.str_tag = true;
    }
}

/// An alias inside its own anchor (the name is filled in by the reader).
const CONTAINS_ITSELF: &str = "yaml: anchor value contains itself";

/// The anchor name written at a position (for the unknown-anchor message).
pub(super) fn anchor_name_at(src: &str, line: usize, col: usize) -> String {
    let text = src.lines().nth(line.saturating_sub(1)).unwrap_or("");
    let from: String = text.chars().skip(col).collect();
    let name = from.strip_prefix('*').unwrap_or(&from);
    name.chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | '[' | ']' | '{' | '}'))
        .collect()
}

/// An open collection.
pub(super) struct Frame {
    pub(super) body: Body,
    pub(super) anchor: usize,
    /// 1-based line where the collection starts.
    pub(super) line: u32,
    /// Last source line with content of this collection so far.
    pub(super) last_line: u32,
    pub(super) flow: bool,
    /// Remember which items are aliases (a merge value's sequence).
    pub(super) track_alias: bool,
    pub(super) item_alias: Vec<bool>,
    /// This map is the resource's `metadata.annotations` (strict mode).
    pub(super) ann: bool,
    /// Scalar values directly in this collection keep their source text
    /// and nested collections become "" (annotations and what merges into
    /// them).
    pub(super) ann_raw: bool,
    /// This collection is a value inside `metadata.annotations`.
    pub(super) ann_value: bool,
}

impl Frame {
    /// A map whose next value is the one of a `<<` key.
    fn awaits_merge(&self) -> bool {
        matches!(
            self.body,
            Body::Map(MapBody {
                pending: Some(PendingKey { merge: true, .. }),
                ..
            })
        )
    }
}

pub(super) enum Body {
    Seq(Vec<N>),
    Map(MapBody),
}

#[derive(Default)]
pub(super) struct MapBody {
    pub(super) slots: Vec<Slot>,
    pub(super) pending: Option<PendingKey>,
}

pub(super) struct PendingKey {
    pub(super) key: N,
    pub(super) meta: KeyMeta,
    pub(super) merge: bool,
}

pub(super) enum Slot {
    E(Entry),
    M(MergeVal),
}

/// The value of a `<<` key.
pub(super) struct MergeVal {
    pub(super) node: N,
    pub(super) via_alias: bool,
    pub(super) item_alias: Vec<bool>,
    pub(super) line: u32,
}

/// A finished node on its way to its parent.
pub(super) struct Done {
    pub(super) node: N,
    pub(super) meta: KeyMeta,
    pub(super) merge: bool,
    pub(super) via_alias: bool,
    pub(super) item_alias: Vec<bool>,
    pub(super) end_line: u32,
    pub(super) requote: Option<Requote>,
}

/// Plain scalars the encoder cannot write plain in some places.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Requote {
    /// A timestamp containing `:` (not plain inside a flow collection).
    Colon,
    /// An empty null (not plain in a flow collection or as a key).
    Empty,
    /// A folded block scalar that kyaml's printer changes (see `folded`).
    Folded,
}

/// An anchored node, ready to be copied by aliases.
pub(super) struct Anchored {
    /// The node as written (never `Requoted`).
    pub(super) node: N,
    pub(super) requote: Option<Requote>,
    pub(super) meta: KeyMeta,
    pub(super) merge: bool,
    pub(super) size: usize,
}

pub(super) struct Builder {
    pub(super) mode: Mode,
    pub(super) stack: Vec<Frame>,
    pub(super) anchors: HashMap<usize, Anchored>,
    /// Nodes built so far, and how many of them came from aliases/merges.
    pub(super) total: usize,
    pub(super) aliased: usize,
    pub(super) json_problem: bool,
    pub(super) tab_line: Option<u32>,
    pub(super) root: Option<N>,
    pub(super) inserted: Vec<(u32, u32)>,
    /// See `DocReader::patch`.
    pub(super) patch: bool,
    /// See `DocReader::meta_text`.
    pub(super) meta_text: PatchMeta,
    /// See `DocReader::written` (`None`: not recorded).
    pub(super) written: Option<Vec<(Vec<PathSeg>, String)>>,
    /// See `Doc::quoted` (`None`: not recorded).
    pub(super) quoted: Option<Vec<Vec<PathSeg>>>,
}

impl Builder {
    pub(super) fn new(mode: Mode) -> Self {
        Builder {
            patch: false,
            meta_text: PatchMeta::AsWritten,
            written: None,
            quoted: None,
            mode,
            stack: Vec::new(),
            anchors: HashMap::new(),
            total: 0,
            aliased: 0,
            json_problem: false,
            tab_line: None,
            root: None,
            inserted: Vec::new(),
        }
    }

    pub(super) fn finish(mut self) -> Doc {
        Doc {
            root: self.root.take().unwrap_or(N::Null),
            inserted: std::mem::take(&mut self.inserted),
            json_problem: self.json_problem,
            tab_line: self.tab_line,
            written: self.written.take().unwrap_or_default(),
            quoted: self.quoted.take().unwrap_or_default(),
        }
    }

    pub(super) fn expecting_key(&self) -> bool {
        matches!(
            self.stack.last(),
            Some(Frame {
                body: Body::Map(MapBody { pending: None, .. }),
                ..
            })
        )
    }

    pub(super) fn top_is_ann(&self) -> bool {
        self.stack.last().is_some_and(|f| f.ann_raw)
    }

    /// The open collection is a sequence given as a merge value.
    pub(super) fn top_is_merge_seq(&self) -> bool {
        self.stack
            .last()
            .is_some_and(|f| f.track_alias && matches!(f.body, Body::Seq(_)))
    }

    pub(super) fn pending_merge(&self) -> bool {
        self.stack.last().is_some_and(Frame::awaits_merge)
    }

    /// Whether a map opening now is the root's `metadata.annotations`.
    pub(super) fn at_annotations(&self) -> bool {
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
                pending_is(root, "metadata")
                    && (pending_is(meta, "annotations")
                        || (self.meta_text == PatchMeta::CopiedAsText
                            && pending_is(meta, "labels")))
            }
            _ => false,
        }
    }

    /// Counts `n` new nodes copied by an alias or a merge, failing like
    /// go-yaml when aliases dominate the document.
    pub(super) fn charge(&mut self, n: usize) -> Result<(), ParseError> {
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

    /// libyaml ends a plain scalar at a `?` inside a flow collection (the
    /// indicator of an explicit key, which cannot follow a scalar): the
    /// error its parser reports for the enclosing collection.
    fn question_mark_in_flow(&self) -> Result<(), ParseError> {
        let Some(f) = self.stack.last().filter(|f| f.flow) else {
            return Ok(());
        };
        let problem = match f.body {
            Body::Map(_) => "did not find expected ',' or '}'",
            Body::Seq(_) => "did not find expected ',' or ']'",
        };
        // numbered by the 0-based line where the collection starts
        let line0 = f.line.saturating_sub(1);
        let message = if line0 > 0 {
            format!("yaml: line {line0}: {problem}")
        } else {
            format!("yaml: {problem}")
        };
        Err(ParseError::new(message, f.line as usize, 0))
    }

    pub(super) fn scalar(
        &mut self,
        value: Cow<'_, str>,
        style: ScalarStyle,
        anchor: usize,
        tag: Option<&Tag>,
        span: Span,
    ) -> Result<(), ParseError> {
        let line = to_u32(span.start.line());
        let end_line = content_end_line(span);
        if style == ScalarStyle::Plain
            && value.as_bytes().get(1..).is_some_and(|b| b.contains(&b'?'))
        {
            self.question_mark_in_flow()?;
        }
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
            let node = if self.meta_text != PatchMeta::AsWritten {
                N::Str(value.into_owned())
            } else if self.patch && plain_null {
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
            let raw = value.into_owned();
            // kyaml prints a folded scalar and reads it back (see `folded`)
            let back = (self.mode == Mode::Strict && style == ScalarStyle::Folded && !is_key)
                .then(|| folded::reread(&raw))
                .flatten();
            // kyaml gives a value written over this field its style: a
            // number written there stays text (folded fields are told
            // apart by their text, see `folded_written_over`)
            if !is_key
                && style != ScalarStyle::Folded
                && self.quoted.is_some()
                && let Some(path) = self.value_path()
                && let Some(q) = self.quoted.as_mut()
            {
                q.push(path);
            }
            let node = match back {
                // (a patch's node may take the style of the field it is
                // written over: keep both values, see `FOLDED_MARK`)
                Some(text) if self.patch => N::Str(folded_mark(&raw, &text)),
                Some(text) => {
                    requote = Some(Requote::Folded);
                    N::Requoted(Box::new((N::Str(raw), text)))
                }
                None => N::Str(raw),
            };
            (node, meta, false)
        } else {
            let mut s = resolve_event(self.mode, &value, style, tag);
            let direct_str = s.tag == RTag::Str;
            if self.mode == Mode::Strict && tag.is_none() && style == ScalarStyle::Plain {
                requote = match s.tag {
                    RTag::Timestamp if value.contains(':') => Some(Requote::Colon),
                    // (a patch's null is a null to the merge, which drops
                    // it where it walks)
                    RTag::Null if value.is_empty() && !self.patch => Some(Requote::Empty),
                    _ => None,
                };
                if requote.is_some_and(|r| self.requotes(r, is_key)) {
                    let direct = std::mem::replace(&mut s.node, N::Null);
                    s.node = N::Requoted(Box::new((direct, value.to_string())));
                    s.tag = RTag::Str;
                }
            }
            // (kyaml drops any null of empty text: `key:`, `key: !!null`,
            // `key: !!null ""`; `null` and `~` stay)
            if self.mode == Mode::Strict && !is_key && value.is_empty() {
                match &mut s.node {
                    N::Null => s.node = N::EmptyNull,
                    N::Requoted(b) if matches!(b.0, N::Null) => b.0 = N::EmptyNull,
                    _ => {}
                }
            }
            match &s.node {
                N::Float(f) if !f.is_finite() => self.json_problem = true,
                N::Time(t) if t.rfc3339().is_err() => self.json_problem = true,
                _ => {}
            }
            if !is_key
                && self.written.is_some()
                && !prints_as(&s.node, &value)
                && let Some(path) = self.value_path()
                && let Some(w) = self.written.as_mut()
            {
                w.push((path, value.to_string()));
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

    /// Where the value being read goes in the document; `None` inside a
    /// merge key's value or under a key that is not a string.
    fn value_path(&self) -> Option<Vec<PathSeg>> {
        self.stack
            .iter()
            .map(|f| match &f.body {
                Body::Seq(items) => Some(PathSeg::Index(items.len())),
                Body::Map(MapBody {
                    pending: Some(pk), ..
                }) if !pk.merge => match &pk.key {
                    N::Str(k) => Some(PathSeg::Key(k.clone())),
                    _ => None,
                },
                Body::Map(_) => None,
            })
            .collect()
    }

    /// Whether a scalar of this kind gets quoted by the encoder here.
    pub(super) fn requotes(&self, r: Requote, is_key: bool) -> bool {
        let flow = self.stack.last().is_some_and(|f| f.flow);
        match r {
            Requote::Colon => flow,
            Requote::Empty => flow || is_key,
            // a flow collection or a key takes no block scalar
            Requote::Folded => !flow && !is_key,
        }
    }

    pub(super) fn alias(&mut self, id: usize, span: Span) -> Result<(), ParseError> {
        let line = to_u32(span.start.line());
        let Some(a) = self.anchors.get(&id) else {
            return self.alias_to_open(id, span);
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
        if !ann && let Some(r) = requote.filter(|&r| self.requotes(r, is_key)) {
            let text = meta.text(&node).to_owned();
            let text = match r {
                Requote::Folded => folded::reread(&text).unwrap_or(text),
                _ => text,
            };
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

    /// An alias whose anchor is not complete yet: go-yaml registers an
    /// anchor where its collection starts. kyaml merges a map into itself
    /// as a no-op (`x: &a {<<: *a, k: v}`, also as an item of the merge
    /// list); any other alias inside its own anchor makes a structure that
    /// contains itself, which kustomize never finishes expanding.
    fn alias_to_open(&mut self, id: usize, span: Span) -> Result<(), ParseError> {
        let (line, col) = (span.start.line(), span.start.col() + 1);
        let Some(i) = self.stack.iter().rposition(|f| f.anchor == id) else {
            return Err(ParseError::new(
                "yaml: unknown anchor referenced",
                line,
                col,
            ));
        };
        let n = self.stack.len();
        let self_merge = self.mode == Mode::Strict
            && self.stack[i].awaits_merge()
            && (i + 1 == n || i + 2 == n && self.top_is_merge_seq());
        if !self_merge {
            return Err(ParseError::new(CONTAINS_ITSELF, line, col));
        }
        let done = Done {
            node: N::Map(Vec::new()),
            meta: KeyMeta {
                line: to_u32(line),
                ..KeyMeta::default()
            },
            merge: false,
            via_alias: true,
            item_alias: Vec::new(),
            end_line: content_end_line(span),
            requote: None,
        };
        self.complete(done, 0)
    }

    pub(super) fn open(
        &mut self,
        is_map: bool,
        anchor: usize,
        span: Span,
        bracket: bool,
    ) -> Result<(), ParseError> {
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
        // Flow collections start with a `[` / `{` token. A single-pair
        // mapping inside a flow sequence (`[a: b]`) has no bracket but is a
        // flow mapping too.
        let flow = bracket || self.stack.last().is_some_and(|f| f.flow);
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

    pub(super) fn close(&mut self, span: Span) -> Result<(), ParseError> {
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
    pub(super) fn complete(&mut self, done: Done, anchor: usize) -> Result<(), ParseError> {
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

    pub(super) fn finish_map(
        &mut self,
        mb: MapBody,
        ann: bool,
        last_line: u32,
    ) -> Result<N, ParseError> {
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
        let mut entries = if ann {
            rebuild_annotations(entries)?
        } else {
            entries
        };
        if self.patch && self.mode == Mode::Strict {
            deletion_keys_as_text(&mut entries, &self.stack);
        }
        if self.mode == Mode::Strict && entries.iter().any(|e| !e.meta.str_tag) {
            self.json_problem = true;
        }
        Ok(N::Map(entries))
    }

    /// kyaml's `DeAnchor` on one map: drop the `<<` entry, then replay the
    /// merge sources and the map itself through `MapEntrySetter`.
    pub(super) fn merge_kyaml(
        &mut self,
        slots: Vec<Slot>,
        last_line: u32,
    ) -> Result<Vec<Entry>, ParseError> {
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
    pub(super) fn merge_v2(&mut self, slots: Vec<Slot>) -> Result<Vec<Entry>, ParseError> {
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
pub(super) enum KeyId {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(u64),
    Str(String),
}

impl KeyId {
    pub(super) fn of(n: &N) -> Option<KeyId> {
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
pub(super) fn kyaml_merge_sources(m: MergeVal) -> Result<Vec<Vec<Entry>>, ParseError> {
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
pub(super) enum Ref {
    Own(usize),
    Src(usize, usize),
}

/// kyaml's `mergeAll`: starting from the map's own entries, every source
/// (then the map itself) is replayed field by field: the first entry of the
/// source with that name is set over the first entry of the result with the
/// same text (a `!!null` key is looked up as ""), or appended.
pub(super) fn kyaml_merge_all(
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
pub(super) fn rebuild_annotations(entries: Vec<Entry>) -> Result<Vec<Entry>, ParseError> {
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
pub(super) fn scalar_text(n: &N) -> String {
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

pub(super) fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Last line holding content of a span (a span ending at column 0 ends on
/// the line before).
pub(super) fn content_end_line(span: Span) -> u32 {
    let end = span.end.line();
    if span.end.col() == 0 && end > span.start.line() {
        to_u32(end - 1)
    } else {
        to_u32(end)
    }
}

/// Number of nodes in a tree (keys included), without recursion.
pub(super) fn node_count(n: &N) -> usize {
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
pub(super) fn clone_deep(n: &N) -> N {
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

pub(super) fn clone_entry(e: &Entry) -> Entry {
    Entry {
        key: clone_deep(&e.key),
        val: clone_deep(&e.val),
        meta: e.meta.clone(),
    }
}

/// Drops a tree without recursion.
pub(super) fn drop_deep(n: N) {
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

/// Whether `text`, read as `node`, is how krmsync prints that value (a
/// string is its text; `Requoted` nodes are left alone).
fn prints_as(node: &N, text: &str) -> bool {
    match node {
        N::Str(s) => s == text,
        N::Int(i) => *text == i.to_string(),
        N::UInt(u) => *text == u.to_string(),
        N::Float(f) => text == crate::kustomize::yaml::format_float(*f),
        N::Bool(b) => text == if *b { "true" } else { "false" },
        N::Null => text == "null",
        N::Time(t) => t.rfc3339().is_ok_and(|r| r == text),
        N::EmptyNull | N::Bytes(_) => false,
        N::Requoted(_) | N::Fail(_) | N::Seq(_) | N::Map(_) => true,
    }
}
