//! The KRM function wire format: `ResourceList` (`config.kubernetes.io/v1`)
//! and the annotations the kustomize 5.5 runtime adds to items before a
//! function runs and removes afterwards.

use crate::kustomize::documents::split_resources;
use crate::kustomize::yaml::{self, Mapping, Value, parse};

pub const API_VERSION: &str = "config.kubernetes.io/v1";
pub const KIND: &str = "ResourceList";

/// Item annotations kustomize's runtime sets on the way in (index and id,
/// each in its `internal.config.kubernetes.io/*` and legacy spelling) and
/// clears on the way out, together with the path and sequence-indent
/// annotations a function or reader may add.
pub const INDEX_ANNOTATION: &str = "internal.config.kubernetes.io/index";
pub const LEGACY_INDEX_ANNOTATION: &str = "config.kubernetes.io/index";
pub const ID_ANNOTATION: &str = "internal.config.kubernetes.io/id";
pub const LEGACY_ID_ANNOTATION: &str = "config.k8s.io/id";
pub const PATH_ANNOTATION: &str = "internal.config.kubernetes.io/path";
pub const LEGACY_PATH_ANNOTATION: &str = "config.kubernetes.io/path";
pub const SEQ_INDENT_ANNOTATION: &str = "internal.config.kubernetes.io/seqindent";

const STRIPPED: &[&str] = &[
    INDEX_ANNOTATION,
    LEGACY_INDEX_ANNOTATION,
    ID_ANNOTATION,
    LEGACY_ID_ANNOTATION,
    PATH_ANNOTATION,
    LEGACY_PATH_ANNOTATION,
    SEQ_INDENT_ANNOTATION,
];

/// `results[].severity`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Severity {
    Error,
    Warning,
    #[default]
    Info,
}

impl Severity {
    fn parse(s: &str) -> Severity {
        match s {
            "error" => Severity::Error,
            "warning" => Severity::Warning,
            _ => Severity::Info,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// One `results` entry.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct FnResult {
    pub message: String,
    pub severity: Severity,
    /// `{apiVersion, kind, name, namespace}` of the resource concerned.
    pub resource_ref: Option<Value>,
    /// `{path, currentValue, proposedValue}`.
    pub field: Option<Value>,
    /// `{path, index}`.
    pub file: Option<Value>,
    pub tags: Mapping,
}

impl FnResult {
    fn from_value(v: &Value) -> FnResult {
        let opt = |k: &str| v.get(k).filter(|x| !x.is_null()).cloned();
        FnResult {
            message: v.str_at(&["message"]).unwrap_or("").to_string(),
            severity: Severity::parse(v.str_at(&["severity"]).unwrap_or("")),
            resource_ref: opt("resourceRef"),
            field: opt("field"),
            file: opt("file"),
            tags: v
                .get("tags")
                .and_then(Value::as_map)
                .cloned()
                .unwrap_or_default(),
        }
    }

    fn to_value(&self) -> Value {
        let mut m = Mapping::new();
        m.insert("message".into(), Value::String(self.message.clone()));
        m.insert("severity".into(), Value::from(self.severity.as_str()));
        for (k, v) in [
            ("resourceRef", &self.resource_ref),
            ("field", &self.field),
            ("file", &self.file),
        ] {
            if let Some(v) = v {
                m.insert(k.into(), v.clone());
            }
        }
        if !self.tags.is_empty() {
            m.insert("tags".into(), Value::Map(self.tags.clone()));
        }
        Value::Map(m)
    }
}

impl std::fmt::Display for FnResult {
    /// `[error] message (Kind/name in namespace, field path, file path)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}", self.severity.as_str(), self.message)?;
        let mut at = Vec::new();
        if let Some(r) = &self.resource_ref {
            let mut s = format!(
                "{}/{}",
                r.str_at(&["kind"]).unwrap_or(""),
                r.str_at(&["name"]).unwrap_or("")
            );
            if let Some(ns) = r.str_at(&["namespace"]).filter(|n| !n.is_empty()) {
                s.push_str(&format!(" in namespace {ns}"));
            }
            at.push(s);
        }
        if let Some(p) = self.field.as_ref().and_then(|x| x.str_at(&["path"])) {
            at.push(format!("field {p}"));
        }
        if let Some(p) = self.file.as_ref().and_then(|x| x.str_at(&["path"])) {
            at.push(format!("file {p}"));
        }
        if !at.is_empty() {
            write!(f, " ({})", at.join(", "))?;
        }
        Ok(())
    }
}

/// A `ResourceList`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ResourceList {
    pub items: Vec<Value>,
    pub function_config: Option<Value>,
    pub results: Vec<FnResult>,
}

fn set_annotation(obj: &mut Value, k: &str, v: String) {
    if let Some(a) = obj.ensure_map_path(&["metadata", "annotations"]) {
        a.insert(k.to_string(), Value::String(v));
    }
}

/// Adds the runtime's index and id annotations to input items
/// (index from 0, id from 1, as kustomize's function runtime numbers them).
pub fn annotate_items(items: &mut [Value]) {
    for (i, it) in items.iter_mut().enumerate() {
        if it.as_map().is_none() {
            continue;
        }
        set_annotation(it, INDEX_ANNOTATION, i.to_string());
        set_annotation(it, LEGACY_INDEX_ANNOTATION, i.to_string());
        set_annotation(it, ID_ANNOTATION, (i + 1).to_string());
        set_annotation(it, LEGACY_ID_ANNOTATION, (i + 1).to_string());
    }
}

/// Removes the runtime's annotations from output items (and an
/// `annotations` map left empty).
pub fn strip_items(items: &mut [Value]) {
    for it in items.iter_mut() {
        let Some(meta) = it.get_mut("metadata").and_then(Value::as_map_mut) else {
            continue;
        };
        if let Some(a) = meta.get_mut("annotations").and_then(Value::as_map_mut) {
            for k in STRIPPED {
                a.shift_remove(*k);
            }
            if a.is_empty() {
                meta.shift_remove("annotations");
            }
        }
    }
}

impl ResourceList {
    pub fn to_value(&self) -> Value {
        let mut m = Mapping::new();
        m.insert("apiVersion".into(), Value::from(API_VERSION));
        m.insert("kind".into(), Value::from(KIND));
        m.insert("items".into(), Value::Seq(self.items.clone()));
        if let Some(fc) = &self.function_config {
            m.insert("functionConfig".into(), fc.clone());
        }
        if !self.results.is_empty() {
            m.insert(
                "results".into(),
                Value::Seq(self.results.iter().map(FnResult::to_value).collect()),
            );
        }
        Value::Map(m)
    }

    /// The YAML document a function reads on stdin.
    pub fn encode(&self) -> Result<String, String> {
        let mut s = String::new();
        yaml::write_document(&mut s, &self.to_value()).map_err(|e| e.0)?;
        Ok(s)
    }

    /// Reads a function's stdout: a `ResourceList`, or (as kustomize
    /// accepts) a plain stream of resources. `List` kinds are expanded.
    pub fn decode(text: &str) -> Result<ResourceList, String> {
        let docs: Vec<Value> = parse::parse_documents(text)
            .map_err(|e| format!("invalid function output: {}", e.message))?
            .into_iter()
            .filter(|d| !d.is_null())
            .collect();
        let is_rl = |d: &Value| {
            d.str_at(&["kind"]) == Some(KIND)
                && d.str_at(&["apiVersion"])
                    .is_some_and(|a| a.starts_with("config.kubernetes.io/"))
        };
        if let [d] = docs.as_slice()
            && is_rl(d)
        {
            let items = match d.get("items") {
                Some(Value::Seq(s)) => s.clone(),
                None | Some(Value::Null) => Vec::new(),
                Some(other) => {
                    return Err(format!(
                        "invalid function output: ResourceList items must be a sequence, found a {}",
                        other.type_name()
                    ));
                }
            };
            let items = split_resources(items, "function output").map_err(|e| e.message)?;
            let results = d
                .get("results")
                .and_then(Value::as_seq)
                .map(|s| s.iter().map(FnResult::from_value).collect())
                .unwrap_or_default();
            return Ok(ResourceList {
                items,
                function_config: d.get("functionConfig").filter(|v| !v.is_null()).cloned(),
                results,
            });
        }
        let items = split_resources(docs, "function output").map_err(|e| e.message)?;
        Ok(ResourceList {
            items,
            ..Default::default()
        })
    }

    /// The results of severity `error`.
    pub fn errors(&self) -> impl Iterator<Item = &FnResult> {
        self.results
            .iter()
            .filter(|r| r.severity == Severity::Error)
    }
}
