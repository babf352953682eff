//! Decoding checks (what kustomize finds when it prints the resource)

use super::*;

/// A duplicate key as go-yaml reports it.
pub(super) struct DupErr {
    pub(super) text: String,
    pub(super) dup: (u32, u32),
    pub(super) first: (u32, u32),
}

pub(super) enum DecodeErr {
    Fail(String),
    Dups(Vec<DupErr>),
}

/// Walks the tree in go-yaml's decoding order: the first undecodable
/// scalar or invalid key wins; maps with duplicate keys are reported (all
/// their pairs) and not descended into.
pub(super) fn decode_check(root: &N, mode: Mode) -> Option<DecodeErr> {
    enum Visit<'x> {
        Node(&'x N),
        Key(&'x N),
    }
    let mut dups = Vec::new();
    let mut stack = vec![Visit::Node(root)];
    while let Some(v) = stack.pop() {
        let n = match v {
            Visit::Key(k) => {
                if matches!(k, N::Seq(_) | N::Map(_)) {
                    let mut repr = String::new();
                    go_repr_n(k, mode, &mut repr);
                    return Some(DecodeErr::Fail(format!("invalid map key: {repr}")));
                }
                k
            }
            Visit::Node(n) => n,
        };
        match n {
            N::Fail(m) => return Some(DecodeErr::Fail(m.to_string())),
            N::Seq(items) => stack.extend(items.iter().rev().map(Visit::Node)),
            N::Map(es) => {
                if mode == Mode::Strict {
                    let found = find_dups(es);
                    if !found.is_empty() {
                        dups.extend(found);
                        continue;
                    }
                }
                for e in es.iter().rev() {
                    stack.push(Visit::Node(&e.val));
                    stack.push(Visit::Key(&e.key));
                }
            }
            _ => {}
        }
    }
    if dups.is_empty() {
        None
    } else {
        Some(DecodeErr::Dups(dups))
    }
}

/// Every pair of keys with the same kind and text, in go-yaml's order.
pub(super) fn find_dups(es: &[Entry]) -> Vec<DupErr> {
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    fn key_of(e: &Entry) -> (NodeKind, &str) {
        (e.key.kind(), e.meta.text(&e.key))
    }
    if es.len() <= 16 {
        for (i, a) in es.iter().enumerate() {
            for (j, b) in es.iter().enumerate().skip(i + 1) {
                if key_of(a) == key_of(b) {
                    pairs.push((i, j));
                }
            }
        }
    } else {
        let mut groups: HashMap<(NodeKind, &str), Vec<usize>> = HashMap::new();
        for (i, e) in es.iter().enumerate() {
            groups.entry(key_of(e)).or_default().push(i);
        }
        for idx in groups.values().filter(|v| v.len() > 1) {
            for (a, &i) in idx.iter().enumerate() {
                for &j in idx.iter().skip(a + 1) {
                    pairs.push((i, j));
                }
            }
        }
        pairs.sort_unstable();
    }
    pairs
        .into_iter()
        .filter_map(|(i, j)| {
            let a = es.get(i)?;
            let b = es.get(j)?;
            Some(DupErr {
                text: a.meta.text(&a.key).to_owned(),
                dup: (b.meta.line, b.meta.after),
                first: (a.meta.line, a.meta.after),
            })
        })
        .collect()
}

/// What JSON encoding runs into first, walking maps in sorted key order.
pub(super) enum JsonErr {
    GeneralMap,
    BadFloat(f64),
    BadTime,
}

/// Returns the first JSON problem and whether any problem other than a
/// non-finite float exists.
pub(super) fn json_check(root: &N) -> (Option<JsonErr>, bool) {
    let mut first: Option<JsonErr> = None;
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        let problem = match n {
            N::Float(f) if !f.is_finite() => Some(JsonErr::BadFloat(*f)),
            N::Time(t) if t.rfc3339().is_err() => Some(JsonErr::BadTime),
            N::Seq(items) => {
                stack.extend(items.iter().rev());
                None
            }
            N::Map(es) => {
                if es.iter().any(|e| !e.meta.str_tag) {
                    Some(JsonErr::GeneralMap)
                } else {
                    let mut sorted: Vec<&Entry> = es.iter().collect();
                    sorted.sort_by(|a, b| {
                        a.meta
                            .text(&a.key)
                            .as_bytes()
                            .cmp(b.meta.text(&b.key).as_bytes())
                    });
                    stack.extend(sorted.into_iter().rev().map(|e| &e.val));
                    None
                }
            }
            _ => None,
        };
        match problem {
            Some(JsonErr::BadFloat(f)) if first.is_none() => first = Some(JsonErr::BadFloat(f)),
            Some(JsonErr::BadFloat(_)) | None => {}
            Some(p) => return (Some(first.unwrap_or(p)), true),
        }
    }
    (first, false)
}

pub(super) fn finish_strict(
    doc: Doc,
    chunk: Chunk<'_>,
    empty_nulls: Option<&mut Vec<Vec<PathSeg>>>,
) -> Result<Value, ParseError> {
    let root = doc.root;
    if let Some(line) = doc.tab_line {
        // kustomize prints the resource as go-yaml decodes it from the
        // nodes (nil when that fails), then the printer's error
        let mut repr = String::new();
        if decode_check(&root, Mode::Strict).is_some() {
            repr.push_str("map[string]interface {}(nil)");
        } else {
            go_repr_n(&root, Mode::Strict, &mut repr);
        }
        // the printed line of the scalar's start, or of its first line
        // when it starts the document (go-yaml numbers from 1 then)
        let printed = LineMap::new(chunk.text, &doc.inserted).map((line, 0));
        let printed = if printed > 1 { printed } else { printed + 1 };
        drop_deep(root);
        return Err(ParseError::new(
            format!(
                "{repr}: yaml: line {printed}: found a tab character where an indentation \
                 space is expected"
            ),
            line as usize + chunk.line_offset,
            0,
        ));
    }
    if let Some(err) = decode_check(&root, Mode::Strict) {
        let (message, line) = match err {
            DecodeErr::Fail(m) => (format!("map[string]interface {{}}(nil): yaml: {m}"), 0),
            DecodeErr::Dups(dups) => {
                let map = LineMap::new(chunk.text, &doc.inserted);
                let mut m = String::from("map[string]interface {}(nil): yaml: unmarshal errors:");
                for d in &dups {
                    let mut quoted = String::new();
                    go_quote(&d.text, &mut quoted);
                    let _ = write!(
                        m,
                        "\n  line {}: mapping key {} already defined at line {}",
                        map.map(d.dup),
                        quoted,
                        map.map(d.first)
                    );
                }
                let line = dups
                    .first()
                    .map_or(0, |d| d.dup.0 as usize + chunk.line_offset);
                (m, line)
            }
        };
        drop_deep(root);
        return Err(ParseError::new(message, line, 0));
    }
    if doc.json_problem {
        let (first, blocking) = json_check(&root);
        if let (Some(problem), true) = (first, blocking) {
            let mut repr = String::new();
            go_repr_n(&root, Mode::Strict, &mut repr);
            let tail = match problem {
                JsonErr::GeneralMap => {
                    "json: unsupported type: map[interface {}]interface {}".to_owned()
                }
                JsonErr::BadFloat(f) => {
                    format!("json: unsupported value: {}", go_format_float(f, false))
                }
                JsonErr::BadTime => "json: error calling MarshalJSON for type time.Time: \
                    Time.MarshalJSON: timezone hour outside of range [0,23]"
                    .to_owned(),
            };
            drop_deep(root);
            return Err(ParseError::new(format!("{repr}: {tail}"), 0, 0));
        }
    }
    to_value_marking(root, Mode::Strict, empty_nulls)
}

pub(super) fn finish_lenient(root: N) -> Result<Value, ParseError> {
    if let Some(err) = decode_check(&root, Mode::Lenient) {
        let message = match err {
            DecodeErr::Fail(m) => format!("yaml: {m}"),
            DecodeErr::Dups(_) => "yaml: unmarshal errors".to_owned(),
        };
        drop_deep(root);
        return Err(ParseError::new(message, 0, 0));
    }
    to_value(root, Mode::Lenient)
}

/// Converts a checked tree into a [`Value`] without recursion; the paths
/// of nulls written as nothing go to `empty_nulls` when given.
pub(super) fn to_value(root: N, mode: Mode) -> Result<Value, ParseError> {
    to_value_marking(root, mode, None)
}

pub(super) fn to_value_marking(
    root: N,
    mode: Mode,
    mut empty_nulls: Option<&mut Vec<Vec<PathSeg>>>,
) -> Result<Value, ParseError> {
    enum W {
        Seq(std::vec::IntoIter<N>, Vec<Value>),
        Map(std::vec::IntoIter<Entry>, Mapping, Option<String>),
    }
    let mut stack: Vec<W> = Vec::new();
    let mut next: Option<N> = Some(root);
    let mut bad_float: Option<f64> = None;
    let result = loop {
        let mut done: Option<Value> = None;
        if let Some(n) = next.take() {
            match n {
                N::Seq(items) => {
                    let cap = items.len();
                    stack.push(W::Seq(items.into_iter(), Vec::with_capacity(cap)));
                }
                N::Map(es) => {
                    let cap = es.len();
                    stack.push(W::Map(es.into_iter(), Mapping::with_capacity(cap), None));
                }
                leaf => {
                    let empty = match &leaf {
                        N::EmptyNull => true,
                        N::Requoted(b) => matches!(b.0, N::EmptyNull),
                        _ => false,
                    };
                    if empty && let Some(out) = empty_nulls.as_deref_mut() {
                        out.push(
                            stack
                                .iter()
                                .map(|w| match w {
                                    W::Seq(_, items) => PathSeg::Index(items.len()),
                                    W::Map(_, _, key) => {
                                        PathSeg::Key(key.clone().unwrap_or_default())
                                    }
                                })
                                .collect(),
                        );
                    }
                    match leaf_value(leaf) {
                        Ok(v) => {
                            if let Value::Float(f) = v
                                && !f.is_finite()
                                && bad_float.is_none()
                            {
                                bad_float = Some(f);
                            }
                            done = Some(v);
                        }
                        Err(e) => break Err(e),
                    }
                }
            }
        }
        if let Some(v) = done {
            match stack.last_mut() {
                None => break Ok(v),
                Some(W::Seq(_, out)) => out.push(v),
                Some(W::Map(_, out, key)) => {
                    if let Some(k) = key.take() {
                        out.insert(k, v);
                    }
                }
            }
        }
        let advanced = match stack.last_mut() {
            None => break Ok(Value::Null),
            Some(W::Seq(it, _)) => it.next().map(|n| {
                next = Some(n);
            }),
            Some(W::Map(it, _, key)) => match it.next() {
                Some(e) => match map_key(e.key, &e.val, mode) {
                    Ok(k) => {
                        *key = Some(k);
                        next = Some(e.val);
                        Some(())
                    }
                    Err(err) => {
                        drop_deep(e.val);
                        break Err(err);
                    }
                },
                None => None,
            },
        };
        if advanced.is_some() {
            continue;
        }
        let finished = match stack.pop() {
            Some(W::Seq(_, out)) => Value::Seq(out),
            Some(W::Map(_, out, _)) => Value::Map(out),
            None => break Ok(Value::Null),
        };
        match stack.last_mut() {
            None => break Ok(finished),
            Some(W::Seq(_, out)) => out.push(finished),
            Some(W::Map(_, out, key)) => {
                if let Some(k) = key.take() {
                    out.insert(k, finished);
                }
            }
        }
    };
    // Unconsumed parts (after an error) are dropped without recursion.
    for w in stack {
        match w {
            W::Seq(it, _) => it.for_each(drop_deep),
            W::Map(it, _, _) => it.for_each(|e| {
                drop_deep(e.key);
                drop_deep(e.val);
            }),
        }
    }
    if let Some(n) = next {
        drop_deep(n);
    }
    let value = result?;
    if mode == Mode::Lenient
        && let Some(f) = bad_float
    {
        return Err(ParseError::new(
            format!("json: unsupported value: {}", go_format_float(f, false)),
            0,
            0,
        ));
    }
    Ok(value)
}

pub(super) fn leaf_value(n: N) -> Result<Value, ParseError> {
    Ok(match n {
        N::Null | N::EmptyNull => Value::Null,
        N::Bool(b) => Value::Bool(b),
        N::Int(i) => Value::Int(i),
        N::UInt(u) => Value::UInt(u),
        N::Float(f) => Value::Float(f),
        N::Str(s) => Value::String(s),
        N::Time(t) => match t.rfc3339() {
            Ok(s) => Value::String(s),
            Err(e) => return Err(ParseError::new(e, 0, 0)),
        },
        N::Fail(m) => return Err(ParseError::new(format!("yaml: {m}"), 0, 0)),
        N::Requoted(b) => Value::String(b.1),
        N::Bytes(b) => Value::String(go_lossy_utf8(&b)),
        N::Seq(_) | N::Map(_) => Value::Null,
    })
}

/// The JSON object key for a map key. Strict mode only sees string keys
/// here; lenient mode stringifies like `sigs.k8s.io/yaml`.
pub(super) fn map_key(key: N, val: &N, mode: Mode) -> Result<String, ParseError> {
    let unsupported = |ty: &str, key: &str| {
        let mut v = String::new();
        if matches!(val, N::Null | N::EmptyNull) {
            v.push_str("<nil>");
        } else {
            go_repr_n(val, Mode::Lenient, &mut v);
        }
        ParseError::new(
            format!("unsupported map key of type: {ty}, key: {key}, value: {v}"),
            0,
            0,
        )
    };
    Ok(match key {
        N::Str(s) => s,
        N::Requoted(b) => b.1,
        N::Bytes(b) => go_lossy_utf8(&b),
        N::Int(i) => i.to_string(),
        N::Bool(b) => b.to_string(),
        N::Float(f) if mode == Mode::Lenient => match go_format_float(f, true).as_str() {
            "+Inf" => ".inf".to_owned(),
            "-Inf" => "-.inf".to_owned(),
            "NaN" => ".nan".to_owned(),
            s => s.to_owned(),
        },
        N::UInt(u) if mode == Mode::Lenient => {
            return Err(unsupported("uint64", &format!("0x{u:x}")));
        }
        N::Null | N::EmptyNull if mode == Mode::Lenient => {
            return Err(unsupported("%!s(<nil>)", "<nil>"));
        }
        other => scalar_text(&other),
    })
}
