//! Field specs: which fields of which kinds a transformer touches.
//!
//! A field spec is a GVK selector (empty parts match anything), a
//! slash-separated path (`spec/template/metadata/labels`; `\/` escapes a slash
//! inside a key; a `[]` suffix marks a list) and a `create` flag. Lists met
//! along a path are walked element by element.

use std::sync::{Arc, LazyLock};

use super::error::{Error, Result};
use super::resid::Gvk;
use super::resource::PathSeg;
use super::yaml::{Mapping, Value};

/// One field spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldSpec {
    pub gvk: Gvk,
    pub path: String,
    pub parts: Vec<String>,
    pub create: bool,
}

impl FieldSpec {
    pub fn new(gvk: Gvk, path: &str, create: bool) -> FieldSpec {
        FieldSpec {
            gvk,
            parts: split_path(path),
            path: path.to_string(),
            create,
        }
    }

    /// True when this spec applies to a resource of kind `gvk`.
    pub fn applies_to(&self, gvk: &Gvk) -> bool {
        self.gvk.selects(gvk)
    }

    /// Decodes `{group, version, kind, path, create}`. Like kustomize
    /// (non-strict JSON decoding), field names match case-insensitively and
    /// unknown fields are ignored.
    pub fn from_value(v: &Value, what: &str) -> Result<FieldSpec> {
        let m = v
            .as_map()
            .ok_or_else(|| Error::invalid(format!("{what}: a field spec must be a map")))?;
        let mut gvk = Gvk::default();
        let mut path = String::new();
        let mut create = false;
        for (k, val) in m {
            let s = || val.scalar_to_string().unwrap_or_default();
            match k.to_ascii_lowercase().as_str() {
                "group" => gvk.group = s(),
                "version" => gvk.version = s(),
                "kind" => gvk.kind = s(),
                "path" => path = s(),
                "create" => create = matches!(val, Value::Bool(true)),
                _ => {}
            }
        }
        Ok(FieldSpec::new(gvk, &path, create))
    }
}

/// Splits a field-spec path on unescaped `/`.
pub fn split_path(path: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'/') => {
                cur.push('/');
                chars.next();
            }
            '/' => parts.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    parts.push(cur);
    parts.retain(|p| !p.is_empty());
    parts
}

/// What to create at the end of a path when it is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leaf {
    Scalar,
    Map,
    /// Only in messages: a list was expected.
    Seq,
}

/// kyaml's error for a field of the wrong kind where a transformer sets a
/// value: `wrong node kind: expected ScalarNode but got SequenceNode: node
/// contents:` and the node.
pub fn wrong_kind(expected: Leaf, v: &Value) -> Error {
    let kind = |v: &Value| match v {
        Value::Map(_) => "MappingNode",
        Value::Seq(_) => "SequenceNode",
        _ => "ScalarNode",
    };
    let expected = match expected {
        Leaf::Scalar => "ScalarNode",
        Leaf::Map => "MappingNode",
        Leaf::Seq => "SequenceNode",
    };
    let mut contents = String::new();
    if super::yaml::write_document(&mut contents, v).is_err() {
        contents.clear();
    }
    Error::invalid(format!(
        "wrong node kind: expected {expected} but got {}: node contents:\n{contents}",
        kind(v)
    ))
}

/// Whether a node found at a field spec's end may be set as `leaf`: a null,
/// or a node of that kind.
pub fn settable(v: &Value, leaf: Leaf) -> bool {
    match leaf {
        Leaf::Scalar => !matches!(v, Value::Map(_) | Value::Seq(_)),
        Leaf::Map => matches!(v, Value::Map(_) | Value::Null),
        Leaf::Seq => matches!(v, Value::Seq(_) | Value::Null),
    }
}

/// Walks `spec.parts` in `obj`, calling `f` on every node found at the end
/// of the path. Missing maps are created when `spec.create` is set (the last
/// element as `leaf`); a null field named `x[]` in the path becomes an empty
/// list. A scalar met in the middle of the path is an error.
pub fn walk(
    obj: &mut Value,
    spec: &FieldSpec,
    leaf: Leaf,
    f: &mut dyn FnMut(&mut Value) -> Result<()>,
) -> Result<()> {
    if spec.parts.is_empty() {
        return Err(Error::invalid("cannot set or create an empty field name"));
    }
    walk_parts(
        obj,
        &spec.parts,
        spec.create,
        leaf,
        &mut Vec::new(),
        &mut |_, v| f(v),
    )
}

/// [`walk`], also giving `f` the concrete path of each node.
pub fn walk_with_path(
    obj: &mut Value,
    spec: &FieldSpec,
    leaf: Leaf,
    f: &mut dyn FnMut(&[PathSeg], &mut Value) -> Result<()>,
) -> Result<()> {
    if spec.parts.is_empty() {
        return Err(Error::invalid("cannot set or create an empty field name"));
    }
    walk_parts(obj, &spec.parts, spec.create, leaf, &mut Vec::new(), f)
}

fn walk_parts(
    node: &mut Value,
    parts: &[String],
    create: bool,
    leaf: Leaf,
    path: &mut Vec<PathSeg>,
    f: &mut dyn FnMut(&[PathSeg], &mut Value) -> Result<()>,
) -> Result<()> {
    let Some((first, rest)) = parts.split_first() else {
        return f(path, node);
    };
    match node {
        Value::Seq(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                path.push(PathSeg::Index(i));
                let r = walk_parts(item, parts, create, leaf, path, f);
                path.pop();
                r?;
            }
            Ok(())
        }
        Value::Map(m) => {
            let (field, is_seq) = match first.strip_suffix("[]") {
                Some(f) => (f, true),
                None => (first.as_str(), false),
            };
            // kyaml reads a number (or `-`) in the path as a list index,
            // which a map cannot take
            // (`str::parse` takes what Go's `strconv.Atoi` takes)
            let index = field.parse::<i64>().ok();
            if field == "-" || index.is_some() {
                let e = match index {
                    Some(i) if i < 0 => {
                        Error::invalid(format!("array index {i} cannot be negative"))
                    }
                    _ => wrong_kind(Leaf::Seq, node),
                };
                return Err(e.context(format!("fieldName: {field}")));
            }
            if !m.contains_key(field) {
                if !create || is_seq {
                    return Ok(());
                }
                let new = if rest.is_empty() && leaf == Leaf::Scalar {
                    Value::Null
                } else {
                    Value::Map(Mapping::new())
                };
                m.insert(field.to_string(), new);
            }
            let Some(child) = m.get_mut(field) else {
                return Ok(());
            };
            if child.is_null() {
                if is_seq {
                    // kustomize takes the `[]` of the path as a hint: a
                    // null field it walks through becomes an empty list,
                    // with or without `create`
                    *child = Value::Seq(Vec::new());
                } else if create && !(rest.is_empty() && leaf == Leaf::Scalar) {
                    *child = Value::Map(Mapping::new());
                }
            }
            path.push(PathSeg::Key(field.to_string()));
            let r = walk_parts(child, rest, create, leaf, path, f);
            path.pop();
            r
        }
        Value::Null => Ok(()),
        _ => Err(Error::invalid(format!(
            "expected sequence or mapping node at '{first}'"
        ))),
    }
}

/// One `nameReference` entry: a referenced kind and the fields that refer to it.
#[derive(Clone, Debug, PartialEq)]
pub struct NameBackRef {
    pub gvk: Gvk,
    pub referrers: Vec<FieldSpec>,
}

/// The transformer configuration: default field specs plus
/// `configurations:` files and `crds:` additions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TransformerConfig {
    pub name_prefix: Vec<FieldSpec>,
    pub name_suffix: Vec<FieldSpec>,
    pub common_labels: Vec<FieldSpec>,
    pub template_labels: Vec<FieldSpec>,
    /// Extra fields for `labels:` entries (`labels` in configurations).
    pub labels: Vec<FieldSpec>,
    pub common_annotations: Vec<FieldSpec>,
    pub namespace: Vec<FieldSpec>,
    pub var_reference: Vec<FieldSpec>,
    pub name_reference: Vec<NameBackRef>,
    pub images: Vec<FieldSpec>,
    pub replicas: Vec<FieldSpec>,
}

/// The field-spec lists of a transformer configuration.
const SECTIONS: [&str; 10] = [
    "namePrefix",
    "nameSuffix",
    "commonLabels",
    "templateLabels",
    "labels",
    "commonAnnotations",
    "namespace",
    "varReference",
    "images",
    "replicas",
];

/// Go's JSON decoding matches section names case-insensitively.
fn canonical_section(k: &str) -> String {
    SECTIONS
        .iter()
        .find(|n| n.eq_ignore_ascii_case(k))
        .map_or_else(|| k.to_string(), |n| n.to_string())
}

const DEFAULT_TABLE: &str = include_str!("defaults/fieldspecs.tsv");

static DEFAULTS: LazyLock<Arc<TransformerConfig>> =
    LazyLock::new(|| Arc::new(parse_table(DEFAULT_TABLE)));

fn parse_table(table: &str) -> TransformerConfig {
    let mut cfg = TransformerConfig::default();
    for line in table.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 6 {
            continue;
        }
        let fs = FieldSpec::new(Gvk::new(cols[1], cols[2], cols[3]), cols[4], cols[5] == "1");
        if cols[0] == "nameReference" && cols.len() >= 9 {
            let target = Gvk::new(cols[6], cols[7], cols[8]);
            add_back_ref(&mut cfg.name_reference, target, fs);
        } else if let Some(list) = cfg.section_mut(cols[0]) {
            list.push(fs);
        }
    }
    cfg
}

fn add_back_ref(refs: &mut Vec<NameBackRef>, target: Gvk, fs: FieldSpec) {
    match refs.iter_mut().find(|r| r.gvk == target) {
        Some(r) => {
            if !r.referrers.contains(&fs) {
                r.referrers.push(fs);
            }
        }
        None => refs.push(NameBackRef {
            gvk: target,
            referrers: vec![fs],
        }),
    }
}

impl TransformerConfig {
    /// kustomize's default configuration.
    pub fn defaults() -> TransformerConfig {
        TransformerConfig::clone(&DEFAULTS)
    }

    /// kustomize's default configuration, shared (no copy).
    pub fn shared_defaults() -> Arc<TransformerConfig> {
        Arc::clone(&DEFAULTS)
    }

    fn section_mut(&mut self, name: &str) -> Option<&mut Vec<FieldSpec>> {
        Some(match name {
            "namePrefix" => &mut self.name_prefix,
            "nameSuffix" => &mut self.name_suffix,
            "commonLabels" => &mut self.common_labels,
            "templateLabels" => &mut self.template_labels,
            "labels" => &mut self.labels,
            "commonAnnotations" => &mut self.common_annotations,
            "namespace" => &mut self.namespace,
            "varReference" => &mut self.var_reference,
            "images" => &mut self.images,
            "replicas" => &mut self.replicas,
            _ => return None,
        })
    }

    /// Decodes a `configurations:` file.
    pub fn from_value(v: &Value, file: &str) -> Result<TransformerConfig> {
        let mut cfg = TransformerConfig::default();
        let Some(m) = v.as_map() else {
            if v.is_null() {
                return Ok(cfg);
            }
            return Err(Error::invalid(format!(
                "{file}: transformer configuration must be a map"
            )));
        };
        // kustomize decodes the file strictly: every key must be a field of
        // its struct (matched without regard to case, as encoding/json does)
        let known = |keys: &[&str], m: &Mapping| -> Result<()> {
            match m
                .keys()
                .find(|k| !keys.iter().any(|f| f.eq_ignore_ascii_case(k)))
            {
                Some(k) => Err(Error::invalid(format!(
                    "{file}: error unmarshaling JSON: while decoding JSON: json: unknown field \"{k}\""
                ))),
                None => Ok(()),
            }
        };
        const SPEC: [&str; 5] = ["group", "version", "kind", "path", "create"];
        let spec = |item: &Value| -> Result<FieldSpec> {
            if let Some(im) = item.as_map() {
                known(&SPEC, im)?;
            }
            FieldSpec::from_value(item, file)
        };
        let mut sections = SECTIONS.to_vec();
        sections.push("nameReference");
        known(&sections, m)?;
        for (k, val) in m {
            let items = match val {
                Value::Null => continue,
                Value::Seq(items) => items,
                _ => {
                    return Err(Error::invalid(format!(
                        "{file}: '{k}' must be a list of field specs"
                    )));
                }
            };
            if k.eq_ignore_ascii_case("nameReference") {
                for item in items {
                    let im = item.as_map().ok_or_else(|| {
                        Error::invalid(format!("{file}: nameReference entries must be maps"))
                    })?;
                    known(&["group", "version", "kind", "fieldSpecs"], im)?;
                    let mut target = Gvk::default();
                    let mut specs = None;
                    for (ik, iv) in im {
                        let s = iv.scalar_to_string().unwrap_or_default();
                        match ik.to_ascii_lowercase().as_str() {
                            "group" => target.group = s,
                            "version" => target.version = s,
                            "kind" => target.kind = s,
                            "fieldspecs" => specs = iv.as_seq(),
                            _ => {}
                        }
                    }
                    if specs.is_none() {
                        cfg.name_reference.push(NameBackRef {
                            gvk: target.clone(),
                            referrers: vec![],
                        });
                    }
                    for s in specs.into_iter().flatten() {
                        add_back_ref(&mut cfg.name_reference, target.clone(), spec(s)?);
                    }
                }
                continue;
            }
            let Some(list) = cfg.section_mut(&canonical_section(k)) else {
                continue;
            };
            for item in items {
                list.push(spec(item)?);
            }
        }
        Ok(cfg)
    }

    /// Merges `other` into `self` as kustomize's `TransformerConfig.Merge`
    /// does: a spec is added unless one with its path and a GVK it selects
    /// is there (another `create` flag is then a conflict), and each list
    /// is sorted by kind afterwards.
    pub fn merge(&mut self, other: &TransformerConfig) -> Result<()> {
        // Fast paths: nearly every kustomization carries the same (default)
        // configuration, and merging it again changes nothing.
        if self == other {
            return Ok(());
        }
        if *self == TransformerConfig::default() && *other == **DEFAULTS {
            *self = other.clone();
            return Ok(());
        }
        // kustomize's FsSlice.MergeAll, then sortFields: an incoming spec
        // is already there when a spec with its path exists whose GVK the
        // incoming one selects (so `metadata/name` of kind Foo counts as
        // present once `metadata/name` of any kind is, and the other way
        // round); present with another `create` is a conflict. The result
        // is sorted by kind (kustomize's legacy kind order, then
        // `group_version_kind`), so which of two such specs stays depends
        // on the order of their kinds.
        fn merge_list(dst: &mut Vec<FieldSpec>, src: &[FieldSpec]) -> Result<()> {
            for fs in src {
                match dst
                    .iter()
                    .find(|d| fs.gvk.selects(&d.gvk) && d.path == fs.path)
                {
                    Some(d) if d.create != fs.create => {
                        return Err(Error::invalid(format!(
                            "conflicting fieldspecs for path '{}' of {}",
                            fs.path, fs.gvk
                        )));
                    }
                    Some(_) => {}
                    None => dst.push(fs.clone()),
                }
            }
            dst.sort_by_cached_key(|f| {
                (super::sort::kind_rank(&f.gvk.kind), f.gvk.legacy_string())
            });
            Ok(())
        }
        merge_list(&mut self.name_prefix, &other.name_prefix)?;
        merge_list(&mut self.name_suffix, &other.name_suffix)?;
        merge_list(&mut self.common_labels, &other.common_labels)?;
        merge_list(&mut self.template_labels, &other.template_labels)?;
        merge_list(&mut self.labels, &other.labels)?;
        merge_list(&mut self.common_annotations, &other.common_annotations)?;
        merge_list(&mut self.namespace, &other.namespace)?;
        merge_list(&mut self.var_reference, &other.var_reference)?;
        merge_list(&mut self.images, &other.images)?;
        merge_list(&mut self.replicas, &other.replicas)?;
        for r in &other.name_reference {
            if r.referrers.is_empty() && !self.name_reference.iter().any(|x| x.gvk == r.gvk) {
                self.name_reference.push(r.clone());
            }
            for fs in &r.referrers {
                add_back_ref(&mut self.name_reference, r.gvk.clone(), fs.clone());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kustomize::yaml::parse_documents;

    fn val(src: &str) -> Value {
        parse_documents(src).unwrap().remove(0)
    }

    #[test]
    fn defaults_are_loaded() {
        let d = TransformerConfig::defaults();
        assert_eq!(d.common_labels.len(), 32);
        assert_eq!(d.var_reference.len(), 72);
        assert_eq!(d.name_reference.len(), 16);
        assert_eq!(d.name_prefix[0].parts, vec!["metadata", "name"]);
    }

    #[test]
    fn split_handles_escaped_slash() {
        assert_eq!(
            split_path("metadata/annotations/a.b\\/c"),
            vec!["metadata", "annotations", "a.b/c"]
        );
    }

    #[test]
    fn walk_creates_and_visits_lists() {
        let mut obj = val("spec:\n  containers:\n  - name: a\n  - name: b\n");
        let fs = FieldSpec::new(Gvk::default(), "spec/containers/image", true);
        let mut n = 0;
        walk(&mut obj, &fs, Leaf::Scalar, &mut |v| {
            n += 1;
            *v = Value::from("img");
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 2);
        assert_eq!(obj.str_at(&["spec"]), None);
        let cs = obj
            .get_path(&["spec", "containers"])
            .unwrap()
            .as_seq()
            .unwrap();
        assert_eq!(cs[1].str_at(&["image"]), Some("img"));

        let fs = FieldSpec::new(Gvk::default(), "spec/selector/matchLabels", false);
        let mut called = false;
        walk(&mut obj, &fs, Leaf::Map, &mut |_| {
            called = true;
            Ok(())
        })
        .unwrap();
        assert!(!called);
    }

    #[test]
    fn walk_turns_null_lists_on_the_path_into_empty_ones() {
        // as kustomize's field-spec filter does, with or without `create`
        for create in [false, true] {
            let mut obj = val("spec:\n  containers:\n  volumes: ~\n  template:\n");
            for path in [
                "spec/containers[]/image",
                "spec/volumes[]/name",
                "spec/template/x",
            ] {
                let fs = FieldSpec::new(Gvk::default(), path, create);
                walk(&mut obj, &fs, Leaf::Scalar, &mut |_| Ok(())).unwrap();
            }
            for list in ["containers", "volumes"] {
                assert_eq!(obj.get_path(&["spec", list]), Some(&Value::Seq(Vec::new())));
            }
            // a null map on the way is only created with `create`
            assert_eq!(
                obj.get_path(&["spec", "template"]).unwrap().is_null(),
                !create
            );
        }
    }

    #[test]
    fn merge_appends_and_detects_conflicts() {
        let mut d = TransformerConfig::defaults();
        let extra = TransformerConfig::from_value(
            &val("commonLabels:\n- path: spec/foo\n  kind: MyKind\n  create: true\nnameReference:\n- kind: ConfigMap\n  version: v1\n  fieldSpecs:\n  - path: spec/cm\n    kind: MyKind\n"),
            "cfg.yaml",
        )
        .unwrap();
        d.merge(&extra).unwrap();
        assert_eq!(d.common_labels.len(), 33);
        let cm = d
            .name_reference
            .iter()
            .find(|r| r.gvk.kind == "ConfigMap")
            .unwrap();
        assert!(cm.referrers.iter().any(|f| f.path == "spec/cm"));
        let conflict = TransformerConfig::from_value(
            &val("commonLabels:\n- path: spec/foo\n  kind: MyKind\n  create: false\n"),
            "c2.yaml",
        )
        .unwrap();
        assert!(d.merge(&conflict).is_err());
    }
}
