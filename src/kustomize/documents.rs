//! Resource files: a YAML stream read into resource documents (kyaml's
//! strict reading, `*List` documents expanded), with the paths of nulls
//! written as nothing for the strategic-merge rule. Shared by the target
//! (resource files), patches and the function runtime (plugin output).

use super::error::{Error, Result};
use super::yaml::{Value, parse};

/// Splits a YAML stream into resource documents: drops empty documents and
/// expands `kind: List` (and `*List` with `items`).
pub fn split_resources(docs: Vec<Value>, file: &str) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for d in docs {
        match d {
            Value::Null => {}
            Value::Map(ref m) if m.is_empty() => {}
            Value::Map(m) => {
                let is_list = m
                    .get("kind")
                    .and_then(Value::as_str)
                    .is_some_and(|k| k.ends_with("List"))
                    && m.contains_key("items");
                if is_list {
                    match m.get("items") {
                        Some(Value::Seq(items)) => {
                            for it in items {
                                match it {
                                    Value::Map(im) if !im.is_empty() => out.push(it.clone()),
                                    Value::Map(_) | Value::Null => {}
                                    other => {
                                        return Err(Error::invalid(format!(
                                            "{file}: items of a List must be maps, found a {}",
                                            other.type_name()
                                        )));
                                    }
                                }
                            }
                        }
                        Some(Value::Null) | None => {}
                        Some(other) => {
                            return Err(Error::invalid(format!(
                                "{file}: 'items' of a List must be a sequence, found a {}",
                                other.type_name()
                            )));
                        }
                    }
                } else {
                    out.push(Value::Map(m));
                }
            }
            other => {
                return Err(Error::invalid(format!(
                    "{file}: a resource must be a map, found a {}",
                    other.type_name()
                )));
            }
        }
    }
    Ok(out)
}

/// Parses resource YAML (strict: duplicate keys are errors).
/// [`parse_resources`], with each resource's nulls written as nothing
/// (see [`Resource::empty_nulls`]; not tracked inside `*List` documents).
pub fn parse_resources_marking(text: &str, file: &str) -> Result<Vec<parse::MarkedDocument>> {
    let docs = parse::parse_documents_strict_marking_empty_nulls(text).map_err(|e| {
        Error::invalid(format!("MalformedYAMLError: {} in File: {file}", e.message))
    })?;
    let mut out = Vec::new();
    for (doc, nulls) in docs {
        let mut values = split_resources(vec![doc], file)?;
        if values.len() == 1 && !values[0].str_at(&["kind"]).unwrap_or("").ends_with("List") {
            out.push((values.remove(0), nulls));
        } else {
            out.extend(values.into_iter().map(|v| (v, Vec::new())));
        }
    }
    Ok(out)
}

pub fn parse_resources(text: &str, file: &str) -> Result<Vec<Value>> {
    let docs = parse::parse_documents_strict(text).map_err(|e| {
        Error::invalid(format!("MalformedYAMLError: {} in File: {file}", e.message))
    })?;
    split_resources(docs, file)
}
