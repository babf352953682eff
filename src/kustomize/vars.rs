//! Deprecated `vars`: values read from resources and substituted as
//! `$(NAME)` into the `varReference` fields at the very end of the build.

use std::collections::HashMap;

use super::error::{Error, Result};
use super::fieldspec::{FieldSpec, Leaf, walk};
use super::kustomization::VarEntry;
use super::replacement::{self, Tag, TextKind, TextScalar};
use super::resid::Gvk;
use super::resource::ResMap;
use super::yaml::Value;

/// Reads a value by a var field path (`spec.ports[0].port`,
/// `a.b.[name=x].c`) as kyaml's `GetFieldValue`: the path is split as
/// `SmarterPathSplitter` does, `x[N]` becomes `x` and `N`, blank elements
/// are dropped (`[` alone names the whole object), then each element is a
/// list index (`-` the last item), a `[k=v]` item match or a map key.
/// `None` where the path leads nowhere or through a node of another kind.
pub fn get_field_value<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut parts: Vec<String> = Vec::new();
    for raw in super::fieldpath::split_dotted(path) {
        // kyaml's convertSliceIndex: `name[3]` is `name`, `3`
        if let Some(stripped) = raw.strip_suffix(']')
            && let Some(open) = stripped.rfind('[')
            && open + 1 < stripped.len()
            && stripped[open + 1..].bytes().all(|c| c.is_ascii_digit())
        {
            if open > 0 {
                parts.push(stripped[..open].to_string());
            }
            parts.push(stripped[open + 1..].to_string());
        } else {
            parts.push(raw);
        }
    }
    let mut cur = obj;
    for p in parts.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        cur = if let Ok(i) = p.parse::<i64>() {
            let items = cur.as_seq()?;
            items.get(usize::try_from(i).ok()?)?
        } else if p == "-" {
            cur.as_seq()?.last()?
        } else if p == "*" {
            return None;
        } else if let Some(inner) = p.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
            let (k, v) = inner.split_once('=')?;
            cur.as_seq()?.iter().find(|it| {
                // `[=v]` matches a scalar item
                let field = if k.is_empty() { Some(*it) } else { it.get(k) };
                field.and_then(Value::scalar_to_string).as_deref() == Some(v)
            })?
        } else {
            cur.as_map()?.get(p)?
        };
    }
    Some(cur)
}

/// A var's value as kustomize reads it (kyaml's `GetFieldValue`): a
/// scalar is parsed from its text by its type with Go's `strconv` (so
/// `0600` is 600, and `0x1F`, `1_000` or `.inf` fail), and a null,
/// timestamp or untyped scalar is its text. `kept`: the scalar's kept text
/// (see `Resource::scalar_texts`). `None` when the text does not parse.
fn var_value(node: &Value, kept: Option<&TextScalar>) -> Option<Value> {
    let Some(kept) = kept else {
        return match node {
            Value::UInt(_) => None,
            Value::Null => Some(Value::String("null".to_string())),
            other => Some(other.clone()),
        };
    };
    let text = kept.text.as_str();
    let tag = match &kept.kind {
        TextKind::Untyped => return Some(Value::String(text.to_string())),
        TextKind::Mistyped(tag) => *tag,
        TextKind::Written(v) => match v {
            Value::Int(_) | Value::UInt(_) => Tag::Int,
            Value::Float(_) => Tag::Float,
            Value::Bool(_) => Tag::Bool,
            _ => return Some(Value::String(text.to_string())),
        },
    };
    match tag {
        Tag::Int => text.parse::<i64>().ok().map(Value::Int),
        Tag::Float => text
            .parse::<f64>()
            .ok()
            // Go's ParseFloat refuses what overflows
            .filter(|f| f.is_finite() || text.to_ascii_lowercase().contains("inf"))
            .map(Value::Float),
        Tag::Bool => match text {
            "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(Value::Bool(true)),
            "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(Value::Bool(false)),
            _ => None,
        },
        Tag::Str | Tag::Null => Some(Value::String(text.to_string())),
    }
}

/// A var's field path, `metadata.name` when it names none.
fn field_path_or_default(v: &VarEntry) -> &str {
    if v.field_path.is_empty() {
        "metadata.name"
    } else {
        &v.field_path
    }
}

/// The vars of a kustomization as kustomize's messages print them (Go's
/// `%v` of its var list): `[{name Kind.[noVer].[noGrp] {fieldPath}} ...]`,
/// the object reference by its kind (its `apiVersion` is not part of the
/// printed group and version).
pub fn go_list(vars: &[VarEntry]) -> String {
    let items: Vec<String> = vars
        .iter()
        .map(|v| {
            format!(
                "{{{} {}.[noVer].[noGrp] {{{}}}}}",
                v.name, v.obj_kind, v.field_path
            )
        })
        .collect();
    format!("[{}]", items.join(" "))
}

/// Registers vars against the resources they name (kustomize's MergeVars):
/// each var must match at most one resource; the match remembers the var.
pub fn merge_vars(m: &mut ResMap, vars: &[VarEntry], known: &mut Vec<VarEntry>) -> Result<()> {
    for v in vars {
        if known.iter().any(|k| k.name == v.name) {
            return Err(Error::invalid(format!(
                "var '{}' already encountered",
                v.name
            )));
        }
        // kustomize compares group, version and kind exactly: an objref
        // without its apiVersion matches nothing
        let gvk = Gvk::from_api_version(&v.obj_api_version, &v.obj_kind);
        let matches = m.matching_any_id(|id| {
            id.name == v.obj_name
                && gvk == id.gvk
                && (v.obj_namespace.is_empty()
                    || id.effective_namespace() == effective(&v.obj_namespace))
        });
        if matches.len() > 1 {
            return Err(Error::invalid(format!(
                "found {} resId matches for var {{{} {gvk} {{{}}}}} (unable to disambiguate)",
                matches.len(),
                v.name,
                field_path_or_default(v)
            )));
        }
        if let Some(&i) = matches.first()
            && let Some(r) = m.resources_mut().get_mut(i)
        {
            r.ref_var_names.push(v.name.clone());
        }
        known.push(v.clone());
    }
    Ok(())
}

fn effective(ns: &str) -> &str {
    if ns == "default" { "" } else { ns }
}

/// Go's `fmt.Sprint` of a var value inside a longer string (`%v`: floats
/// in shortest form, exponent notation below 1e-4 or from 1e6 up).
fn sprint(v: &Value) -> String {
    match v {
        Value::Float(f) if f.is_finite() && *f != 0.0 => {
            let sci = format!("{f:e}");
            let (mant, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
            let exp: i32 = exp.parse().unwrap_or(0);
            if !(-4..6).contains(&exp) {
                let sign = if exp < 0 { '-' } else { '+' };
                format!("{mant}e{sign}{:02}", exp.abs())
            } else {
                format!("{f}")
            }
        }
        other => other.scalar_to_string().unwrap_or_default(),
    }
}

/// Expands `$(NAME)` references; `$$` escapes a `$`. A string that is
/// exactly one reference takes the var's value with its type.
pub fn expand(input: &str, vars: &HashMap<String, Value>, used: &mut Vec<String>) -> Value {
    let bytes = input.as_bytes();
    let mut out = String::new();
    let mut checkpoint = 0;
    let mut cursor = 0;
    while cursor < bytes.len() {
        if bytes[cursor] == b'$' && cursor + 1 < bytes.len() {
            out.push_str(&input[checkpoint..cursor]);
            let rest = &input[cursor + 1..];
            let advance;
            match rest.as_bytes()[0] {
                b'$' => {
                    out.push('$');
                    advance = 1;
                }
                b'(' => match rest.find(')') {
                    Some(close) => {
                        let name = &rest[1..close];
                        advance = close + 1;
                        match vars.get(name) {
                            Some(val) => {
                                used.push(name.to_string());
                                if input.len() == name.len() + 3 && cursor == 0 {
                                    return match val {
                                        Value::Map(_) | Value::Seq(_) => {
                                            Value::String(input.to_string())
                                        }
                                        other => other.clone(),
                                    };
                                }
                                match val {
                                    Value::Map(_) | Value::Seq(_) => {
                                        out.push_str("$(");
                                        out.push_str(name);
                                        out.push(')');
                                    }
                                    other => out.push_str(&sprint(other)),
                                }
                            }
                            None => {
                                out.push_str("$(");
                                out.push_str(name);
                                out.push(')');
                            }
                        }
                    }
                    None => {
                        out.push_str("$(");
                        advance = 1;
                    }
                },
                _ => {
                    let ch = rest.chars().next().unwrap_or(' ');
                    out.push('$');
                    out.push(ch);
                    advance = ch.len_utf8();
                }
            }
            cursor += advance + 1;
            checkpoint = cursor;
            continue;
        }
        cursor += 1;
    }
    if checkpoint < input.len() {
        out.push_str(&input[checkpoint..]);
    }
    Value::String(out)
}

/// Resolves every var and substitutes it into the var-reference fields.
pub fn resolve_vars(m: &mut ResMap, vars: &[VarEntry], specs: &[FieldSpec]) -> Result<()> {
    if vars.is_empty() {
        return Ok(());
    }
    let mut values: HashMap<String, Value> = HashMap::new();
    for v in vars {
        let holder = m
            .resources()
            .iter()
            .find(|r| r.ref_var_names.contains(&v.name));
        let Some(r) = holder else {
            return Err(Error::invalid(format!(
                "var '{}' cannot be mapped to a field in the set of known resources",
                v.name
            )));
        };
        let val = get_field_value(&r.obj, &v.field_path).and_then(|node| {
            var_value(node, replacement::kept_text(&r.obj, &r.scalar_texts, node))
        });
        let Some(val) = val else {
            return Err(Error::invalid(format!(
                "field specified in var '{}' not found in corresponding resource: {}",
                v.name, v.field_path
            )));
        };
        values.insert(v.name.clone(), val);
    }
    let mut used = Vec::new();
    for r in m.resources_mut().iter_mut() {
        let gvk = r.gvk();
        for fs in specs {
            if !fs.applies_to(&gvk) {
                continue;
            }
            let mut spec = fs.clone();
            spec.create = false;
            walk(&mut r.obj, &spec, Leaf::Scalar, &mut |node| {
                match node {
                    Value::String(s) => {
                        let new = expand(s, &values, &mut used);
                        *node = new;
                    }
                    Value::Map(mm) => {
                        for (_, v) in mm.iter_mut() {
                            if let Value::String(s) = v {
                                let new = expand(s, &values, &mut used);
                                *v = new;
                            }
                        }
                    }
                    Value::Seq(items) => {
                        for v in items.iter_mut() {
                            match v {
                                Value::String(s) => {
                                    let new = expand(s, &values, &mut used);
                                    *v = new;
                                }
                                Value::Map(_) | Value::Seq(_) => {
                                    return Err(Error::invalid(
                                        "invalid value type expect a string",
                                    ));
                                }
                                _ => {}
                            }
                        }
                    }
                    _ => {}
                }
                Ok(())
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kustomize::yaml::parse_documents;

    #[test]
    fn expansion_rules() {
        let mut vars = HashMap::new();
        vars.insert("A".to_string(), Value::from("x"));
        vars.insert("N".to_string(), Value::Int(8080));
        let mut used = Vec::new();
        assert_eq!(expand("$(A)-$(B)", &vars, &mut used), Value::from("x-$(B)"));
        assert_eq!(expand("$(N)", &vars, &mut used), Value::Int(8080));
        assert_eq!(
            expand("port $(N)", &vars, &mut used),
            Value::from("port 8080")
        );
        assert_eq!(
            expand("$$(A) $x $(", &vars, &mut used),
            Value::from("$(A) $x $(")
        );
    }

    #[test]
    fn field_paths() {
        let obj =
            parse_documents("spec:\n  ports:\n  - {name: a, port: 80}\n  - {name: b, port: 81}\n")
                .unwrap()
                .remove(0);
        assert_eq!(
            get_field_value(&obj, "spec.ports[1].port"),
            Some(&Value::Int(81))
        );
        assert_eq!(
            get_field_value(&obj, "spec.ports.0.name"),
            Some(&Value::from("a"))
        );
        assert_eq!(
            get_field_value(&obj, "spec.ports.[name=b].port"),
            Some(&Value::Int(81))
        );
        assert_eq!(get_field_value(&obj, "spec.nope"), None);
    }
}
