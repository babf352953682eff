//! Resource files: a YAML stream read into resource documents (kyaml's
//! strict reading, `*List` documents expanded), with the paths of nulls
//! written as nothing for the strategic-merge rule. Shared by the target
//! (resource files), patches and the function runtime (plugin output).

use super::error::{Error, Result};
use super::yaml::{Mapping, PathSeg, Value, parse};

/// A resource document as a map; `None` for an empty one (null, `{}`, `[]`).
fn resource_map(d: Value, file: &str) -> Result<Option<Mapping>> {
    match d {
        Value::Null => Ok(None),
        Value::Map(m) if m.is_empty() => Ok(None),
        // kyaml skips empty documents: null, `{}` and `[]`
        Value::Seq(s) if s.is_empty() => Ok(None),
        Value::Map(m) => Ok(Some(m)),
        other => Err(Error::invalid(format!(
            "missing Resource metadata: {file}: a resource must be a map (found {})",
            other.type_name()
        ))),
    }
}

/// The non-empty items of a `*List` document with `items`; `None` for any
/// other document (a `*List` without `items` is an ordinary resource).
fn list_items<'m>(m: &'m Mapping, file: &str) -> Result<Option<Vec<&'m Value>>> {
    let is_list = m
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| k.ends_with("List"));
    if !is_list || !m.contains_key("items") {
        return Ok(None);
    }
    let items = match m.get("items") {
        Some(Value::Seq(items)) => items,
        Some(Value::Null) | None => return Ok(Some(Vec::new())),
        Some(other) => {
            return Err(Error::invalid(format!(
                "{file}: 'items' of a List must be a sequence, found a {}",
                other.type_name()
            )));
        }
    };
    let mut out = Vec::with_capacity(items.len());
    for it in items {
        match it {
            Value::Map(im) if !im.is_empty() => out.push(it),
            Value::Map(_) | Value::Null => {}
            other => {
                return Err(Error::invalid(format!(
                    "{file}: items of a List must be maps, found a {}",
                    other.type_name()
                )));
            }
        }
    }
    Ok(Some(out))
}

/// Whether a resource document has a name, or is a `*List` that needs
/// none (kyaml's `GetValidatedMetadata`).
pub fn named_or_list(doc: &Value) -> bool {
    doc.get_path(&["metadata", "name"])
        .and_then(Value::scalar_to_string)
        .is_some_and(|n| !n.is_empty())
        || doc.str_at(&["kind"]).unwrap_or("").ends_with("List")
}

/// What kustomize finds missing in a resource document's metadata, in
/// its words: no `kind`, or no name on anything but a `*List`. `None`
/// when the metadata will do.
pub fn missing_metadata(doc: &Value) -> Option<String> {
    // kyaml reads the kind's text whatever its type (`kind: 0` is `0`)
    if doc
        .get("kind")
        .and_then(Value::scalar_to_string)
        .is_none_or(|k| k.is_empty())
    {
        return Some("missing Resource metadata: a resource must have a 'kind'".into());
    }
    (!named_or_list(doc)).then(|| format!("missing metadata.name in object {}", go_meta(doc)))
}

/// A resource's metadata as kustomize prints it in messages (Go's `%v` of
/// kyaml's `ResourceMeta`): `{{v1 ConfigMap} {{name ns} map[k:v] map[]}}`.
pub fn go_meta(doc: &Value) -> String {
    let text = |path: &[&str]| {
        doc.get_path(path)
            .and_then(Value::scalar_to_string)
            .unwrap_or_default()
    };
    let map = |field: &str| {
        let mut pairs: Vec<(&String, &Value)> = doc
            .get_path(&["metadata", field])
            .and_then(Value::as_map)
            .into_iter()
            .flatten()
            .collect();
        pairs.sort_by_key(|(k, _)| *k);
        let pairs: Vec<String> = pairs
            .iter()
            .map(|(k, v)| format!("{k}:{}", v.scalar_to_string().unwrap_or_default()))
            .collect();
        format!("map[{}]", pairs.join(" "))
    };
    format!(
        "{{{{{} {}}} {{{{{} {}}} {} {}}}}}",
        text(&["apiVersion"]),
        text(&["kind"]),
        text(&["metadata", "name"]),
        text(&["metadata", "namespace"]),
        map("labels"),
        map("annotations")
    )
}

/// Splits a YAML stream into resource documents: drops empty documents and
/// expands `kind: List` (and `*List` with `items`) in place.
pub fn split_resources(docs: Vec<Value>, file: &str) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for d in docs {
        let Some(m) = resource_map(d, file)? else {
            continue;
        };
        match list_items(&m, file)? {
            Some(items) => out.extend(items.into_iter().cloned()),
            None => out.push(Value::Map(m)),
        }
    }
    Ok(out)
}

/// The items of a `List` or `ResourceList` document that kyaml's reader
/// unwraps when it is the only document of its stream (it has `items` or
/// a `functionConfig`); `None` for any other document.
fn reader_unwraps(doc: &Value) -> Option<Vec<Value>> {
    let m = doc.as_map()?;
    let kind = m.get("kind").and_then(Value::as_str)?;
    if !matches!(kind, "List" | "ResourceList")
        || !(m.contains_key("items") || m.contains_key("functionConfig"))
    {
        return None;
    }
    Some(match m.get("items") {
        Some(Value::Seq(items)) => items.clone(),
        _ => Vec::new(),
    })
}

/// A stream of resource documents read the way kustomize's resource
/// factory reads a file: kyaml's reader unwraps a lone `List` document,
/// then each `*List` with `items` is replaced by its items, which join the
/// end of the queue (after the documents still to come), each item read
/// as a stream of its own (so a `List` item is unwrapped in place). A
/// `*List` without `items` is an ordinary resource; with `items: null` it
/// is nothing.
pub(crate) fn factory_split(
    docs: Vec<parse::MarkedDocument>,
    file: &str,
) -> Result<Vec<parse::MarkedDocument>> {
    use parse::MarkedDocument as Doc;
    let mut queue: std::collections::VecDeque<Doc> = match docs.as_slice() {
        [only] => match reader_unwraps(&only.value) {
            Some(items) => items.into_iter().map(Doc::plain).collect(),
            None => docs.into(),
        },
        _ => docs.into(),
    };
    let mut out = Vec::new();
    while let Some(doc) = queue.pop_front() {
        let Some(m) = resource_map(doc.value, file)? else {
            continue;
        };
        match list_items(&m, file)? {
            Some(items) => {
                // (kustomize writes each item as JSON and reads it back:
                // every string of it is double-quoted)
                let quoted = |mut value: Value| Doc {
                    quoted: value
                        .scalar_paths_where(&mut |s| matches!(s, Value::String(_)))
                        .into_iter()
                        .filter(|p| matches!(p.last(), Some(PathSeg::Key(_))))
                        .collect(),
                    value,
                    ..Doc::default()
                };
                for it in items {
                    match reader_unwraps(it) {
                        Some(inner) => queue.extend(inner.into_iter().map(quoted)),
                        None => queue.push_back(quoted(it.clone())),
                    }
                }
            }
            None => out.push(Doc {
                value: Value::Map(m),
                ..doc
            }),
        }
    }
    Ok(out)
}

/// [`factory_split`] for parsed documents (patches read as resources).
pub fn split_stream(docs: Vec<Value>, file: &str) -> Result<Vec<Value>> {
    let docs = docs.into_iter().map(parse::MarkedDocument::plain).collect();
    Ok(factory_split(docs, file)?
        .into_iter()
        .map(|d| d.value)
        .collect())
}

/// Parses resource YAML (strict: duplicate keys are errors), with each
/// resource's nulls written as nothing (see [`Resource::empty_nulls`]; not
/// tracked for the items of `*List` documents), in kustomize's order (see
/// [`factory_split`]).
pub fn parse_resources_marking(text: &str, file: &str) -> Result<Vec<parse::MarkedDocument>> {
    let docs = parse::parse_documents_strict_marking_empty_nulls(text).map_err(|e| {
        Error::invalid(format!("MalformedYAMLError: {} in File: {file}", e.message))
    })?;
    factory_split(docs, file)
}

pub fn parse_resources(text: &str, file: &str) -> Result<Vec<Value>> {
    let docs = parse::parse_documents_strict(text).map_err(|e| {
        Error::invalid(format!("MalformedYAMLError: {} in File: {file}", e.message))
    })?;
    split_stream(docs, file)
}
