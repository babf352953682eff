//! The in-memory document model shared by every part of the engine.
//!
//! A resource is read from YAML once into a [`Value`] (scalars already
//! resolved the way kustomize resolves them), transformed in place, and
//! printed once. Map keys keep insertion order in memory; the printer sorts
//! them, exactly as kustomize's JSON -> YAML round trip does.

use indexmap::IndexMap;

/// An ordered mapping from string keys to values.
pub type Mapping = IndexMap<String, Value>;

/// One step of a path inside a document: a map key or a sequence index.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PathSeg {
    Key(String),
    Index(usize),
}

/// A YAML/JSON value after scalar resolution.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    /// Any integer that fits in `i64`.
    Int(i64),
    /// Integers above `i64::MAX` that still fit in `u64`.
    UInt(u64),
    Float(f64),
    String(String),
    Seq(Vec<Value>),
    Map(Mapping),
}

impl Value {
    pub fn new_map() -> Value {
        Value::Map(Mapping::new())
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_map(&self) -> Option<&Mapping> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_map_mut(&mut self) -> Option<&mut Mapping> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_seq(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Seq(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_seq_mut(&mut self) -> Option<&mut Vec<Value>> {
        match self {
            Value::Seq(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::UInt(u) => i64::try_from(*u).ok(),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(*f as i64),
            _ => None,
        }
    }

    /// Map lookup; `None` when this is not a map or the key is absent.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_map().and_then(|m| m.get(key))
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.as_map_mut().and_then(|m| m.get_mut(key))
    }

    /// Nested map lookup along `path`.
    pub fn get_path(&self, path: &[&str]) -> Option<&Value> {
        let mut cur = self;
        for p in path {
            cur = cur.get(p)?;
        }
        Some(cur)
    }

    pub fn get_path_mut(&mut self, path: &[&str]) -> Option<&mut Value> {
        let mut cur = self;
        for p in path {
            cur = cur.get_mut(p)?;
        }
        Some(cur)
    }

    /// String at a nested path, if it is a string.
    pub fn str_at(&self, path: &[&str]) -> Option<&str> {
        self.get_path(path).and_then(Value::as_str)
    }

    /// Returns the map at `path`, creating empty maps along the way (and
    /// replacing nulls). `None` when a non-map value is in the way.
    pub fn ensure_map_path(&mut self, path: &[&str]) -> Option<&mut Mapping> {
        let mut cur = self;
        for p in path {
            if cur.is_null() {
                *cur = Value::new_map();
            }
            let m = cur.as_map_mut()?;
            let entry = m.entry((*p).to_string()).or_insert(Value::Null);
            if entry.is_null() {
                *entry = Value::new_map();
            }
            cur = entry;
        }
        if cur.is_null() {
            *cur = Value::new_map();
        }
        cur.as_map_mut()
    }

    /// Sets a string at a nested path, creating maps on the way. Returns
    /// false when a non-map value is in the way.
    pub fn set_path(&mut self, path: &[&str], v: Value) -> bool {
        let Some((last, parents)) = path.split_last() else {
            *self = v;
            return true;
        };
        match self.ensure_map_path(parents) {
            Some(m) => {
                m.insert((*last).to_string(), v);
                true
            }
            None => false,
        }
    }

    /// A short name of the value's type, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::UInt(_) => "int",
            Value::Float(_) => "float",
            Value::String(_) => "string",
            Value::Seq(_) => "sequence",
            Value::Map(_) => "map",
        }
    }

    /// The scalar as kustomize would print it inside a string (used where a
    /// field value is substituted into text: vars, replacements, labels).
    pub fn scalar_to_string(&self) -> Option<String> {
        match self {
            Value::Null => Some(String::new()),
            Value::Bool(b) => Some(b.to_string()),
            Value::Int(i) => Some(i.to_string()),
            Value::UInt(u) => Some(u.to_string()),
            Value::Float(f) => Some(crate::kustomize::yaml::format_float(*f)),
            Value::String(s) => Some(s.clone()),
            _ => None,
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(s)
    }
}

impl From<Mapping> for Value {
    fn from(m: Mapping) -> Self {
        Value::Map(m)
    }
}

impl From<Vec<Value>> for Value {
    fn from(s: Vec<Value>) -> Self {
        Value::Seq(s)
    }
}

impl From<&serde_json::Value> for Value {
    /// JSON to the engine's document model (objects keep their key order).
    fn from(v: &serde_json::Value) -> Self {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Value::Int(i)
                } else if let Some(u) = n.as_u64() {
                    Value::UInt(u)
                } else {
                    Value::Float(n.as_f64().unwrap_or(0.0))
                }
            }
            serde_json::Value::String(s) => Value::String(s.clone()),
            serde_json::Value::Array(a) => Value::Seq(a.iter().map(Value::from).collect()),
            serde_json::Value::Object(o) => {
                Value::Map(o.iter().map(|(k, v)| (k.clone(), Value::from(v))).collect())
            }
        }
    }
}

impl Value {
    /// The paths of the scalars inside `self` (not maps or lists) for
    /// which `f` returns true, depth-first; `f` may change the scalar.
    pub fn scalar_paths_where(
        &mut self,
        f: &mut dyn FnMut(&mut Value) -> bool,
    ) -> Vec<Vec<PathSeg>> {
        fn walk(
            v: &mut Value,
            path: &mut Vec<PathSeg>,
            f: &mut dyn FnMut(&mut Value) -> bool,
            out: &mut Vec<Vec<PathSeg>>,
        ) {
            match v {
                Value::Map(m) => {
                    for (k, c) in m.iter_mut() {
                        path.push(PathSeg::Key(k.clone()));
                        walk(c, path, f, out);
                        path.pop();
                    }
                }
                Value::Seq(items) => {
                    for (i, c) in items.iter_mut().enumerate() {
                        path.push(PathSeg::Index(i));
                        walk(c, path, f, out);
                        path.pop();
                    }
                }
                scalar => {
                    if f(scalar) {
                        out.push(path.clone());
                    }
                }
            }
        }
        let mut out = Vec::new();
        walk(self, &mut Vec::new(), f, &mut out);
        out
    }
}

impl Value {
    /// The document as JSON, for the Kubernetes API. A non-finite float
    /// (which kustomize refuses to print anyway) becomes `null`.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) => serde_json::Value::from(*i),
            Value::UInt(u) => serde_json::Value::from(*u),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            Value::String(s) => serde_json::Value::String(s.clone()),
            Value::Seq(s) => serde_json::Value::Array(s.iter().map(Value::to_json).collect()),
            Value::Map(m) => {
                serde_json::Value::Object(m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
        }
    }
}

#[cfg(test)]
mod json_tests {
    use super::Value;

    #[test]
    fn json_round_trip_keeps_types_and_order() {
        let j = serde_json::json!({"b": 1, "a": [true, null, 1.5, "x", 18446744073709551615u64]});
        let v = Value::from(&j);
        let keys: Vec<_> = v.as_map().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(v.to_json(), j);
        assert_eq!(Value::Float(f64::NAN).to_json(), serde_json::Value::Null);
    }
}
