//! RFC 6902 JSON patches, applied the way kustomize v5.5 does.
//!
//! kustomize marshals the resource to JSON, applies the operations with
//! `evanphx/json-patch` (kubectl links `gopkg.in/evanphx/json-patch.v4`
//! v4.12.0) and decodes the result into a `map[string]interface{}`. Behaviours reproduced here (all checked with
//! `kubectl kustomize`):
//!
//! * `add` on an existing map key replaces it; on a list index it inserts;
//!   `-` appends; negative indices count from the end (`-1` appends for
//!   `add`). A missing parent is an error (no path creation).
//! * `replace` of a missing map key adds it (the library's map lookup never
//!   fails); of a missing list index it fails. `replace` at `""` with a map
//!   or list replaces the whole document, with a scalar it does nothing.
//! * `remove` of a missing key fails.
//! * `move`/`copy` from a missing map key move/copy `null`.
//! * `test` compares structurally (numbers by value); a missing or `null`
//!   location equals a `null` value.
//! * `add`/`replace` without `value` store `null`.
//! * Path tokens are split on `/` without a leading-slash check: the first
//!   token is skipped, so `a/b` addresses `/b`; `~1` and `~0` are unescaped.
//! * Numbers go through float64: integers beyond 2^53 in the *whole*
//!   resource lose precision (`12345678901234567890` becomes
//!   `12345678901234567000`). Integers that float64 holds exactly stay
//!   [`Value::Int`].
//!
//! Error texts are the library's (`pkg/errors` wrapping: `message: cause`).
//! Where the library crashes (a `test` without `value` on a missing key,
//! walking through a `null` that an earlier `add` stored) an error is
//! returned instead. On error the target may have been partially modified.

use crate::kustomize::kustomization::go_type_of;
use crate::kustomize::patch::PatchError;
use crate::kustomize::yaml::Value;

const MISSING: &str = "missing value";
const INVALID_INDEX: &str = "invalid index referenced";
const TEST_FAILED: &str = "test failed";

/// Largest integer magnitude float64 represents exactly (2^53).
const F64_EXACT_INT: u64 = 1 << 53;

/// Applies an RFC 6902 patch (a parsed list of operations) to a resource in
/// place.
pub fn apply_json6902(target: &mut Value, ops: &Value) -> Result<(), PatchError> {
    let ops = match ops {
        Value::Seq(ops) => ops.as_slice(),
        Value::Null => &[],
        other => {
            return Err(PatchError(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                go_type_of(other)
            )));
        }
    };
    for op in ops {
        let op = match op {
            Value::Map(_) | Value::Null => Operation(op),
            other => {
                return Err(PatchError(format!(
                    "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
                    go_type_of(other)
                )));
            }
        };
        op.apply(target).map_err(PatchError)?;
    }
    if !matches!(target, Value::Map(_)) {
        return Err(PatchError(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            go_type_of(target)
        )));
    }
    round_through_f64(target);
    Ok(())
}

/// One operation object.
struct Operation<'a>(&'a Value);

impl Operation<'_> {
    fn kind(&self) -> &str {
        self.0
            .get("op")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
    }

    /// The `path` (or `from`) member; `Err` carries the library's message.
    fn string_member(&self, name: &str, missing: &str) -> Result<&str, String> {
        match self.0.get(name) {
            None | Some(Value::Null) => Err(format!("{missing}: {MISSING}")),
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(format!(
                "json: cannot unmarshal {} into Go value of type string",
                go_type_of(other)
            )),
        }
    }

    fn path(&self) -> Result<&str, String> {
        self.string_member("path", "operation missing path field")
    }

    fn from(&self) -> Result<&str, String> {
        self.string_member("from", "operation, missing from field")
    }

    /// `value`, with an absent member read as `null`.
    fn value(&self) -> Value {
        self.0.get("value").cloned().unwrap_or(Value::Null)
    }

    fn apply(&self, doc: &mut Value) -> Result<(), String> {
        match self.kind() {
            "add" => self.add(doc),
            "remove" => self.remove(doc),
            "replace" => self.replace(doc),
            "move" => self.move_op(doc),
            "test" => self.test(doc),
            "copy" => self.copy(doc),
            other => Err(format!("Unexpected kind: {other}")),
        }
    }

    fn add(&self, doc: &mut Value) -> Result<(), String> {
        let path = self
            .path()
            .map_err(|_| format!("add operation failed to decode path: {MISSING}"))?;
        let Some((con, key)) = find_container(doc, path) else {
            return Err(format!(
                "add operation does not apply: doc is missing path: \"{path}\": {MISSING}"
            ));
        };
        container_add(con, &key, self.value())
            .map_err(|e| format!("error in add for path: '{path}': {e}"))
    }

    fn remove(&self, doc: &mut Value) -> Result<(), String> {
        let path = self
            .path()
            .map_err(|_| format!("remove operation failed to decode path: {MISSING}"))?;
        let Some((con, key)) = find_container(doc, path) else {
            return Err(format!(
                "remove operation does not apply: doc is missing path: \"{path}\": {MISSING}"
            ));
        };
        container_remove(con, &key).map_err(|e| format!("error in remove for path: '{path}': {e}"))
    }

    fn replace(&self, doc: &mut Value) -> Result<(), String> {
        let path = self
            .path()
            .map_err(|e| format!("replace operation failed to decode path: {e}"))?;
        if path.is_empty() {
            // Only a map or list replaces the document; otherwise the library
            // wraps a nil error, i.e. silently does nothing.
            let value = self.value();
            if matches!(value, Value::Map(_) | Value::Seq(_)) {
                *doc = value;
            }
            return Ok(());
        }
        let Some((con, key)) = find_container(doc, path) else {
            return Err(format!(
                "replace operation does not apply: doc is missing path: {path}: {MISSING}"
            ));
        };
        if container_get(con, &key).is_err() {
            return Err(format!(
                "replace operation does not apply: doc is missing key: {path}: {MISSING}"
            ));
        }
        container_set(con, &key, self.value())
            .map_err(|e| format!("error in remove for path: '{path}': {e}"))
    }

    fn move_op(&self, doc: &mut Value) -> Result<(), String> {
        let from = self
            .from()
            .map_err(|e| format!("move operation failed to decode from: {e}"))?;
        let Some((con, key)) = find_container(doc, from) else {
            return Err(format!(
                "move operation does not apply: doc is missing from path: {from}: {MISSING}"
            ));
        };
        let val = container_get(con, &key)
            .map_err(|e| format!("error in move for path: '{key}': {e}"))?
            .unwrap_or(Value::Null);
        container_remove(con, &key).map_err(|e| format!("error in move for path: '{key}': {e}"))?;
        let path = self
            .path()
            .map_err(|e| format!("move operation failed to decode path: {e}"))?;
        let Some((con, key)) = find_container(doc, path) else {
            return Err(format!(
                "move operation does not apply: doc is missing destination path: {path}: {MISSING}"
            ));
        };
        container_add(con, &key, val).map_err(|e| format!("error in move for path: '{path}': {e}"))
    }

    fn test(&self, doc: &mut Value) -> Result<(), String> {
        let path = self
            .path()
            .map_err(|e| format!("test operation failed to decode path: {e}"))?;
        let failed = || format!("testing value {path} failed: {TEST_FAILED}");
        let expected = self.0.get("value");
        if path.is_empty() {
            return match expected {
                Some(v) if json_equal(doc, v) => Ok(()),
                _ => Err(failed()),
            };
        }
        let Some((con, key)) = find_container(doc, path) else {
            return Err(format!(
                "test operation does not apply: is missing path: {path}: {MISSING}"
            ));
        };
        let actual = container_get(con, &key)
            .map_err(|e| format!("error in test for path: '{path}': {e}"))?;
        match (actual, expected) {
            (None, Some(Value::Null)) => Ok(()),
            (Some(a), Some(e)) if json_equal(&a, e) => Ok(()),
            _ => Err(failed()),
        }
    }

    fn copy(&self, doc: &mut Value) -> Result<(), String> {
        let from = self
            .from()
            .map_err(|e| format!("copy operation failed to decode from: {e}"))?;
        let Some((con, key)) = find_container(doc, from) else {
            return Err(format!(
                "copy operation does not apply: doc is missing from path: {from}: {MISSING}"
            ));
        };
        let val = container_get(con, &key)
            .map_err(|e| format!("error in copy for from: '{from}': {e}"))?
            .unwrap_or(Value::Null);
        let path = self
            .path()
            .map_err(|_| format!("copy operation failed to decode path: {MISSING}"))?;
        let Some((con, key)) = find_container(doc, path) else {
            return Err(format!(
                "copy operation does not apply: doc is missing destination path: {path}: {MISSING}"
            ));
        };
        container_add(con, &key, val)
            .map_err(|e| format!("error while adding value during copy: {e}"))
    }
}

/// Walks all tokens of `path` but the last; returns the container (a map or
/// list) they lead to and the unescaped last token.
fn find_container<'a>(root: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
    let tokens: Vec<&str> = path.split('/').collect();
    let (last, init) = tokens.split_last()?;
    if init.is_empty() {
        return None;
    }
    let mut cur = root;
    for token in init.iter().skip(1) {
        cur = child_container(cur, &unescape(token))?;
    }
    if !matches!(cur, Value::Map(_) | Value::Seq(_)) {
        return None;
    }
    Some((cur, unescape(last)))
}

/// The child of a container under `key`, if it is itself a container.
fn child_container<'a>(cur: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    let child = match cur {
        Value::Map(m) => m.get_mut(key)?,
        Value::Seq(items) => {
            let idx = resolve_index(parse_index(key).ok()?, items.len()).ok()?;
            items.get_mut(idx)?
        }
        _ => return None,
    };
    match child {
        Value::Map(_) | Value::Seq(_) => Some(child),
        _ => None,
    }
}

/// RFC 6901 unescaping in one left-to-right pass (`~01` is `~1`).
fn unescape(token: &str) -> String {
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.peek() {
                Some('1') => {
                    out.push('/');
                    chars.next();
                    continue;
                }
                Some('0') => {
                    out.push('~');
                    chars.next();
                    continue;
                }
                _ => {}
            }
        }
        out.push(c);
    }
    out
}

/// Go's `strconv.Atoi`, with its error text.
fn parse_index(key: &str) -> Result<i64, String> {
    key.parse::<i64>().map_err(|_| {
        let digits = key.strip_prefix(['+', '-']).unwrap_or(key);
        let reason = if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            "value out of range"
        } else {
            "invalid syntax"
        };
        format!("strconv.Atoi: parsing {key:?}: {reason}")
    })
}

fn invalid_index(idx: i64) -> String {
    format!("Unable to access invalid index: {idx}: {INVALID_INDEX}")
}

/// An existing element index (negative counts from the end).
fn resolve_index(idx: i64, len: usize) -> Result<usize, String> {
    let len_i = i64::try_from(len).unwrap_or(i64::MAX);
    let adjusted = if idx < 0 {
        if idx < -len_i {
            return Err(invalid_index(idx));
        }
        idx + len_i
    } else {
        idx
    };
    if adjusted >= len_i {
        return Err(invalid_index(idx));
    }
    usize::try_from(adjusted).map_err(|_| invalid_index(idx))
}

/// The value under `key`; `Ok(None)` for a missing or `null` map entry.
fn container_get(con: &Value, key: &str) -> Result<Option<Value>, String> {
    match con {
        Value::Map(m) => Ok(m.get(key).filter(|v| !v.is_null()).cloned()),
        Value::Seq(items) => {
            let idx = resolve_index(parse_index(key)?, items.len())?;
            Ok(items.get(idx).filter(|v| !v.is_null()).cloned())
        }
        _ => Ok(None),
    }
}

fn container_add(con: &mut Value, key: &str, val: Value) -> Result<(), String> {
    match con {
        Value::Map(m) => {
            m.insert(key.to_string(), val);
            Ok(())
        }
        Value::Seq(items) => {
            if key == "-" {
                items.push(val);
                return Ok(());
            }
            let idx = parse_index(key)
                .map_err(|e| format!("value was not a proper array index: '{key}': {e}"))?;
            let size = i64::try_from(items.len())
                .unwrap_or(i64::MAX)
                .saturating_add(1);
            if idx >= size || idx < -size {
                return Err(invalid_index(idx));
            }
            let at = if idx < 0 { idx + size } else { idx };
            let at = usize::try_from(at).map_err(|_| invalid_index(idx))?;
            if at > items.len() {
                return Err(invalid_index(idx));
            }
            items.insert(at, val);
            Ok(())
        }
        _ => Err(format!(
            "Unable to access invalid index: {key}: {INVALID_INDEX}"
        )),
    }
}

fn container_set(con: &mut Value, key: &str, val: Value) -> Result<(), String> {
    match con {
        Value::Map(m) => {
            m.insert(key.to_string(), val);
            Ok(())
        }
        Value::Seq(items) => {
            let idx = resolve_index(parse_index(key)?, items.len())?;
            match items.get_mut(idx) {
                Some(slot) => {
                    *slot = val;
                    Ok(())
                }
                None => Err(invalid_index(parse_index(key)?)),
            }
        }
        _ => Ok(()),
    }
}

fn container_remove(con: &mut Value, key: &str) -> Result<(), String> {
    match con {
        Value::Map(m) => {
            if m.shift_remove(key).is_none() {
                return Err(format!(
                    "Unable to remove nonexistent key: {key}: {MISSING}"
                ));
            }
            Ok(())
        }
        Value::Seq(items) => {
            let raw = parse_index(key)?;
            let idx = resolve_index(raw, items.len())?;
            if idx < items.len() {
                items.remove(idx);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Structural equality as the library's `test` sees it: numbers by value.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        (Value::Seq(x), Value::Seq(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| json_equal(v, w))
        }
        (
            Value::Int(_) | Value::UInt(_) | Value::Float(_),
            Value::Int(_) | Value::UInt(_) | Value::Float(_),
        ) => match (as_i128(a), as_i128(b)) {
            (Some(x), Some(y)) => x == y,
            _ => as_f64(a) == as_f64(b),
        },
        _ => a == b,
    }
}

fn as_i128(v: &Value) -> Option<i128> {
    match v {
        Value::Int(i) => Some(i128::from(*i)),
        Value::UInt(u) => Some(i128::from(*u)),
        _ => None,
    }
}

fn as_f64(v: &Value) -> f64 {
    match v {
        Value::Int(i) => *i as f64,
        Value::UInt(u) => *u as f64,
        Value::Float(f) => *f,
        _ => f64::NAN,
    }
}

/// The JSON round trip through `map[string]interface{}`: integers float64
/// cannot hold exactly become floats.
fn round_through_f64(v: &mut Value) {
    match v {
        Value::Int(i) if i.unsigned_abs() > F64_EXACT_INT => *v = Value::Float(*i as f64),
        Value::UInt(u) if *u > F64_EXACT_INT => *v = Value::Float(*u as f64),
        Value::Map(m) => m.values_mut().for_each(round_through_f64),
        Value::Seq(items) => items.iter_mut().for_each(round_through_f64),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kustomize::yaml::Mapping;

    fn s(x: &str) -> Value {
        Value::String(x.to_string())
    }

    fn map(pairs: Vec<(&str, Value)>) -> Value {
        Value::Map(
            pairs
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect::<Mapping>(),
        )
    }

    fn op(kind: &str, path: &str, value: Option<Value>) -> Value {
        let mut m = vec![("op", s(kind)), ("path", s(path))];
        if let Some(v) = value {
            m.push(("value", v));
        }
        map(m)
    }

    fn from_op(kind: &str, from: &str, path: &str) -> Value {
        map(vec![("op", s(kind)), ("from", s(from)), ("path", s(path))])
    }

    /// `{spec: {i: 3, l: [a, b], m: {k: v}, n: null}}`
    fn doc() -> Value {
        map(vec![(
            "spec",
            map(vec![
                ("i", Value::Int(3)),
                ("l", Value::Seq(vec![s("a"), s("b")])),
                ("m", map(vec![("k", s("v"))])),
                ("n", Value::Null),
            ]),
        )])
    }

    fn apply(ops: Vec<Value>) -> Result<Value, String> {
        let mut d = doc();
        apply_json6902(&mut d, &Value::Seq(ops)).map_err(|e| e.0)?;
        Ok(d)
    }

    fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
        v.get_path(path)
    }

    #[test]
    fn add_replaces_existing_key_and_inserts_into_lists() {
        let d = apply(vec![
            op("add", "/spec/i", Some(Value::Int(5))),
            op("add", "/spec/l/0", Some(s("z"))),
            op("add", "/spec/l/-", Some(s("end"))),
            op("add", "/spec/l/-1", Some(s("last"))),
        ])
        .expect("applies");
        assert_eq!(at(&d, &["spec", "i"]), Some(&Value::Int(5)));
        assert_eq!(
            at(&d, &["spec", "l"]),
            Some(&Value::Seq(vec![
                s("z"),
                s("a"),
                s("b"),
                s("end"),
                s("last")
            ]))
        );
    }

    #[test]
    fn add_errors() {
        assert_eq!(
            apply(vec![op("add", "/spec/x/y", Some(Value::Int(1)))])
                .err()
                .as_deref(),
            Some("add operation does not apply: doc is missing path: \"/spec/x/y\": missing value")
        );
        assert_eq!(
            apply(vec![op("add", "/spec/l/5", Some(Value::Int(1)))])
                .err()
                .as_deref(),
            Some(
                "error in add for path: '/spec/l/5': Unable to access invalid index: 5: invalid index referenced"
            )
        );
        assert_eq!(
            apply(vec![op("add", "/spec/l/x", Some(Value::Int(1)))])
                .err()
                .as_deref(),
            Some(
                "error in add for path: '/spec/l/x': value was not a proper array index: 'x': strconv.Atoi: parsing \"x\": invalid syntax"
            )
        );
        // Through a null or a scalar: missing path.
        assert!(apply(vec![op("add", "/spec/n/x", Some(Value::Int(1)))]).is_err());
        assert!(apply(vec![op("add", "/spec/i/x", Some(Value::Int(1)))]).is_err());
        assert_eq!(
            apply(vec![op("add", "", Some(Value::Int(1)))])
                .err()
                .as_deref(),
            Some("add operation does not apply: doc is missing path: \"\": missing value")
        );
    }

    #[test]
    fn add_without_value_stores_null() {
        let d = apply(vec![op("add", "/spec/x", None)]).expect("applies");
        assert_eq!(at(&d, &["spec", "x"]), Some(&Value::Null));
    }

    #[test]
    fn path_without_leading_slash_skips_first_token() {
        let d = apply(vec![op("add", "spec/x", Some(Value::Int(1)))]).expect("applies");
        assert_eq!(d.get("x"), Some(&Value::Int(1)));
    }

    #[test]
    fn escaped_tokens() {
        let mut d = map(vec![(
            "metadata",
            map(vec![(
                "annotations",
                map(vec![("a/b", s("1")), ("c~d", s("2"))]),
            )]),
        )]);
        let ops = Value::Seq(vec![
            op("replace", "/metadata/annotations/a~1b", Some(s("x"))),
            op("remove", "/metadata/annotations/c~0d", None),
            op("add", "/metadata/annotations/e~01", Some(s("y"))),
        ]);
        apply_json6902(&mut d, &ops).expect("applies");
        assert_eq!(
            d.get_path(&["metadata", "annotations"]),
            Some(&map(vec![("a/b", s("x")), ("e~1", s("y"))]))
        );
    }

    #[test]
    fn replace_missing_key_adds_but_missing_index_fails() {
        let d = apply(vec![op("replace", "/spec/zz", Some(Value::Int(1)))]).expect("applies");
        assert_eq!(at(&d, &["spec", "zz"]), Some(&Value::Int(1)));
        assert_eq!(
            apply(vec![op("replace", "/spec/l/2", Some(Value::Int(1)))])
                .err()
                .as_deref(),
            Some("replace operation does not apply: doc is missing key: /spec/l/2: missing value")
        );
        assert_eq!(
            apply(vec![op("replace", "/nope/x", Some(Value::Int(1)))])
                .err()
                .as_deref(),
            Some("replace operation does not apply: doc is missing path: /nope/x: missing value")
        );
        let d = apply(vec![op("replace", "/spec/l/-1", Some(s("z")))]).expect("applies");
        assert_eq!(
            at(&d, &["spec", "l"]),
            Some(&Value::Seq(vec![s("a"), s("z")]))
        );
    }

    #[test]
    fn replace_whole_document() {
        let d = apply(vec![op(
            "replace",
            "",
            Some(map(vec![("a", Value::Int(1))])),
        )])
        .expect("applies");
        assert_eq!(d, map(vec![("a", Value::Int(1))]));
        // A scalar is silently ignored.
        assert_eq!(
            apply(vec![op("replace", "", Some(Value::Int(1)))]).expect("applies"),
            doc()
        );
        // A list cannot be decoded back into a resource.
        assert!(apply(vec![op("replace", "", Some(Value::Seq(vec![])))]).is_err());
    }

    #[test]
    fn remove() {
        let d = apply(vec![
            op("remove", "/spec/m/k", None),
            op("remove", "/spec/l/0", None),
        ])
        .expect("applies");
        assert_eq!(at(&d, &["spec", "m"]), Some(&map(vec![])));
        assert_eq!(at(&d, &["spec", "l"]), Some(&Value::Seq(vec![s("b")])));
        assert_eq!(
            apply(vec![op("remove", "/spec/zz", None)]).err().as_deref(),
            Some(
                "error in remove for path: '/spec/zz': Unable to remove nonexistent key: zz: missing value"
            )
        );
        assert_eq!(
            apply(vec![op("remove", "/spec/l/2", None)])
                .err()
                .as_deref(),
            Some(
                "error in remove for path: '/spec/l/2': Unable to access invalid index: 2: invalid index referenced"
            )
        );
        // Removing a null entry works.
        assert!(apply(vec![op("remove", "/spec/n", None)]).is_ok());
    }

    #[test]
    fn move_and_copy() {
        let d = apply(vec![from_op("move", "/spec/m/k", "/spec/k2")]).expect("applies");
        assert_eq!(at(&d, &["spec", "k2"]), Some(&s("v")));
        assert_eq!(at(&d, &["spec", "m"]), Some(&map(vec![])));
        let d = apply(vec![from_op("copy", "/spec/l", "/spec/l2")]).expect("applies");
        assert_eq!(at(&d, &["spec", "l2"]), at(&d, &["spec", "l"]));
        let d = apply(vec![from_op("move", "/spec/l/0", "/spec/l/-")]).expect("applies");
        assert_eq!(
            at(&d, &["spec", "l"]),
            Some(&Value::Seq(vec![s("b"), s("a")]))
        );
        // Copy from a missing key copies null.
        let d = apply(vec![from_op("copy", "/spec/zz", "/spec/y")]).expect("applies");
        assert_eq!(at(&d, &["spec", "y"]), Some(&Value::Null));
        assert_eq!(
            apply(vec![from_op("move", "/spec/zz", "/spec/y")])
                .err()
                .as_deref(),
            Some(
                "error in move for path: 'zz': Unable to remove nonexistent key: zz: missing value"
            )
        );
        assert_eq!(
            apply(vec![from_op("copy", "/spec/l/9", "/spec/y")])
                .err()
                .as_deref(),
            Some(
                "error in copy for from: '/spec/l/9': Unable to access invalid index: 9: invalid index referenced"
            )
        );
        assert_eq!(
            apply(vec![map(vec![("op", s("move")), ("path", s("/x"))])])
                .err()
                .as_deref(),
            Some(
                "move operation failed to decode from: operation, missing from field: missing value"
            )
        );
    }

    #[test]
    fn test_operation() {
        assert!(apply(vec![op("test", "/spec/i", Some(Value::Int(3)))]).is_ok());
        assert!(apply(vec![op("test", "/spec/i", Some(Value::Float(3.0)))]).is_ok());
        assert_eq!(
            apply(vec![op("test", "/spec/i", Some(Value::Int(4)))])
                .err()
                .as_deref(),
            Some("testing value /spec/i failed: test failed")
        );
        assert!(apply(vec![op("test", "/spec/zz", Some(Value::Null))]).is_ok());
        assert!(apply(vec![op("test", "/spec/n", Some(Value::Null))]).is_ok());
        assert!(apply(vec![op("test", "/spec/m", Some(map(vec![("k", s("v"))])))]).is_ok());
        assert!(
            apply(vec![op(
                "test",
                "/spec/l",
                Some(Value::Seq(vec![s("b"), s("a")]))
            )])
            .is_err()
        );
        assert!(apply(vec![op("test", "/spec/i", None)]).is_err());
        assert!(apply(vec![op("test", "", Some(doc()))]).is_ok());
    }

    #[test]
    fn unknown_and_malformed_operations() {
        assert_eq!(
            apply(vec![op("foo", "/spec/x", None)]).err().as_deref(),
            Some("Unexpected kind: foo")
        );
        assert_eq!(
            apply(vec![map(vec![("path", s("/x"))])]).err().as_deref(),
            Some("Unexpected kind: unknown")
        );
        assert_eq!(
            apply(vec![map(vec![("op", s("add"))])]).err().as_deref(),
            Some("add operation failed to decode path: missing value")
        );
        assert_eq!(
            apply(vec![map(vec![
                ("op", s("replace")),
                ("path", Value::Int(1))
            ])])
            .err()
            .as_deref(),
            Some(
                "replace operation failed to decode path: json: cannot unmarshal number into Go value of type string"
            )
        );
        let mut d = doc();
        assert!(apply_json6902(&mut d, &map(vec![])).is_err());
        assert!(apply_json6902(&mut d, &Value::Seq(vec![s("x")])).is_err());
        assert!(apply_json6902(&mut d, &Value::Null).is_ok());
    }

    #[test]
    fn large_integers_go_through_float64() {
        let mut d = map(vec![
            ("big", Value::UInt(12_345_678_901_234_567_890)),
            ("neg", Value::Int(-9_007_199_254_740_993)),
            ("exact", Value::Int(9_007_199_254_740_992)),
            ("small", Value::Int(3)),
        ]);
        apply_json6902(&mut d, &Value::Seq(vec![])).expect("applies");
        assert_eq!(
            d.get("big"),
            Some(&Value::Float(12_345_678_901_234_567_890_f64))
        );
        assert_eq!(
            d.get("neg"),
            Some(&Value::Float(-9_007_199_254_740_992_f64))
        );
        assert_eq!(d.get("exact"), Some(&Value::Int(9_007_199_254_740_992)));
        assert_eq!(d.get("small"), Some(&Value::Int(3)));
    }

    #[test]
    fn negative_and_signed_indices() {
        let d = apply(vec![op("remove", "/spec/l/-2", None)]).expect("applies");
        assert_eq!(at(&d, &["spec", "l"]), Some(&Value::Seq(vec![s("b")])));
        let d = apply(vec![op("add", "/spec/l/+1", Some(s("x")))]).expect("applies");
        assert_eq!(
            at(&d, &["spec", "l"]),
            Some(&Value::Seq(vec![s("a"), s("x"), s("b")]))
        );
        assert!(apply(vec![op("add", "/spec/l/-4", Some(s("x")))]).is_err());
        assert!(
            apply(vec![op(
                "add",
                "/spec/l/99999999999999999999",
                Some(s("x"))
            )])
            .is_err()
        );
    }
}
