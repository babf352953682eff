//! Resources under build and the ordered list that holds them.

use std::borrow::Cow;
use std::collections::HashMap;

use super::error::{Error, Result};
use super::openapi::Schema;
use super::replacement::{
    TextScalar, keep_untyped, kept_text_by_keys, meta_value_text, set_scalar_text, text_and_style,
};
use super::resid::{Gvk, ResId};
use super::yaml::{Mapping, Value};

/// kustomize's stand-in namespace for cluster-scoped ids.
pub const NON_NAMESPACEABLE: &str = "_non_namespaceable_";

/// How a generated resource combines with an existing one of the same id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Behavior {
    /// None given, or one kustomize does not know: treated as `create`,
    /// but recorded as `unspecified` (what a JSON patch or a function can
    /// read in kustomize's internal annotations).
    #[default]
    Unspecified,
    Create,
    Merge,
    Replace,
}

impl Behavior {
    /// kustomize reads any behavior it does not know (`add`, `Merge`, ...)
    /// as unspecified, which generators treat as `create`.
    pub fn parse(s: &str) -> Result<Behavior> {
        Ok(match s {
            "create" => Behavior::Create,
            "merge" => Behavior::Merge,
            "replace" => Behavior::Replace,
            _ => Behavior::Unspecified,
        })
    }
}

/// Where a resource came from, or which transformer touched it
/// (`buildMetadata: [originAnnotations, transformerAnnotations]`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Origin {
    /// File the resource was read from, relative to the top-level root.
    pub path: String,
    /// For generated/transformed resources: the file configuring the
    /// generator or transformer, relative to the top-level root.
    pub configured_in: String,
    /// `apiVersion` of a custom (non-builtin) plugin config; `None` for
    /// builtin generators and transformers (`apiVersion: builtin`), an
    /// empty string when the config has none.
    pub configured_by_api_version: Option<String>,
    /// Kind and (for plugin configs) name of the builtin generator or
    /// transformer.
    pub configured_by_kind: String,
    pub configured_by_name: String,
    pub configured_by_namespace: String,
}

impl Origin {
    /// The YAML kustomize writes for an origin, each line after the first
    /// prefixed with `indent`.
    fn write_yaml(&self, out: &mut String, first: &str, indent: &str) {
        let mut lead = first;
        let mut line = |out: &mut String, text: &str| {
            out.push_str(lead);
            out.push_str(text);
            out.push('\n');
            lead = indent;
        };
        if !self.path.is_empty() {
            line(out, &format!("path: {}", self.path));
        }
        if !self.configured_in.is_empty() {
            line(out, &format!("configuredIn: {}", self.configured_in));
            line(out, "configuredBy:");
            match &self.configured_by_api_version {
                None => line(out, "  apiVersion: builtin"),
                Some(a) if a.is_empty() => {}
                Some(a) => line(out, &format!("  apiVersion: {a}")),
            }
            line(out, &format!("  kind: {}", self.configured_by_kind));
            if !self.configured_by_name.is_empty() {
                line(out, &format!("  name: {}", self.configured_by_name));
            }
            if !self.configured_by_namespace.is_empty() {
                line(
                    out,
                    &format!("  namespace: {}", self.configured_by_namespace),
                );
            }
        }
    }

    /// Value of the `config.kubernetes.io/origin` annotation.
    pub fn annotation(&self) -> String {
        let mut out = String::new();
        self.write_yaml(&mut out, "", "");
        out
    }

    /// Value of the `alpha.config.kubernetes.io/transformations` annotation.
    pub fn list_annotation(list: &[Origin]) -> String {
        let mut out = String::new();
        for o in list {
            o.write_yaml(&mut out, "- ", "  ");
        }
        out
    }
}

pub use super::yaml::PathSeg;

/// The value at `path`, if there is one.
pub fn value_at<'a>(v: &'a Value, path: &[PathSeg]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, seg| match (seg, v) {
        (PathSeg::Key(k), Value::Map(m)) => m.get(k.as_str()),
        (PathSeg::Index(i), Value::Seq(s)) => s.get(*i),
        _ => None,
    })
}

pub fn value_at_mut<'a>(v: &'a mut Value, path: &[PathSeg]) -> Option<&'a mut Value> {
    path.iter().try_fold(v, |v, seg| match (seg, v) {
        (PathSeg::Key(k), Value::Map(m)) => m.get_mut(k.as_str()),
        (PathSeg::Index(i), Value::Seq(s)) => s.get_mut(*i),
        _ => None,
    })
}

/// One resource plus the bookkeeping kustomize keeps beside it.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Resource {
    /// The object itself (a map).
    pub obj: Value,
    /// Ids held before each name/namespace/kind change, oldest first
    /// (namespaces stored in kustomize's "effective" form).
    pub prev_ids: Vec<ResId>,
    pub name_prefixes: Vec<String>,
    pub name_suffixes: Vec<String>,
    /// Generated ConfigMap/Secret whose name gets a content hash.
    pub needs_hash: bool,
    pub behavior: Behavior,
    /// True for resources made by generators.
    pub generated: bool,
    pub origin: Option<Origin>,
    /// Names of the transformers configs that touched it (buildMetadata).
    pub transformations: Vec<Origin>,
    /// Var names referring to this resource.
    pub ref_var_names: Vec<String>,
    /// Fields that are one YAML node in kustomize (kyaml): a labels or
    /// annotations transformer creating a key at several field specs of a
    /// resource creates one node for them all. A later in-place write to
    /// any of them (the key set again by a labels or annotations
    /// transformer, a strategic-merge patch, a replacement) shows in all;
    /// a JSON patch or a KRM function re-creates the resource's nodes and
    /// unlinks them. Each group lists the paths of the linked scalars.
    pub links: Vec<Vec<Vec<PathSeg>>>,
    /// Paths of nulls written as nothing (`key:`) in the resource's file.
    /// kyaml keeps their empty text apart from an explicit `null`: a
    /// strategic-merge patch applied to the resource drops them where it
    /// walks (maps, merged lists) unless it sets them; a JSON patch turns
    /// them into explicit nulls.
    pub empty_nulls: Vec<Vec<PathSeg>>,
    /// Paths of map fields holding a string kyaml keeps quoted or as a
    /// literal block scalar (`"http"`, `|`, any string of a JSON file or of a
    /// `*List` item): a strategic-merge patch writing a number or a boolean
    /// there gives it that style, so it stays text, as the patch wrote it
    /// (`+1`, `TRUE`); a string written there keeps the style. A JSON patch
    /// or a KRM function re-creates the nodes, plain.
    pub quoted: Vec<Vec<PathSeg>>,
    /// Scalars replacements wrote whose text kyaml keeps apart from their
    /// value (see [`TextScalar`]):
    /// * fields a replacement created: kyaml leaves such nodes without a
    ///   tag until the build's end, so a later replacement writing there
    ///   reads its text as plain YAML again (instead of keeping the type
    ///   the first text resolved to), and one reading there gets the text
    ///   (`007`, not `7`);
    /// * typed fields given text their type cannot read (`xhigh` into
    ///   `replicas: 1`): kustomize fails only when it decodes the resource
    ///   (a JSON patch, the build's output), so a later write of fitting
    ///   text (an overlay's `replicas:`) makes the build succeed.
    ///
    /// A JSON patch or a KRM function re-creates the resource's nodes; an
    /// entry whose field no longer holds what it recorded is stale and
    /// ignored.
    pub scalar_texts: Vec<TextScalar>,
}

impl Resource {
    /// Records that the scalars at `paths` are one node.
    pub fn link(&mut self, paths: Vec<Vec<PathSeg>>) {
        if paths.len() > 1 {
            self.links.push(paths);
        }
    }

    /// Sets `value` at every path linked to `path` (an in-place write of
    /// the node at `path`).
    pub fn write_linked(&mut self, path: &[PathSeg], value: &Value) {
        let targets: Vec<Vec<PathSeg>> = self
            .links
            .iter()
            .filter(|g| g.iter().any(|p| p == path))
            .flat_map(|g| g.iter().filter(|p| p.as_slice() != path).cloned())
            .collect();
        for t in targets {
            if let Some(v) = value_at_mut(&mut self.obj, &t)
                && !matches!(v, Value::Map(_) | Value::Seq(_))
            {
                *v = value.clone();
            }
        }
    }

    /// After an operation that writes nodes in place (a strategic-merge
    /// patch, replacements): a linked scalar it changed changes its whole
    /// group. Paths it removed leave their group.
    pub fn propagate_links(&mut self, before: &Value) {
        if self.links.is_empty() {
            return;
        }
        let mut writes = Vec::new();
        for g in &mut self.links {
            g.retain(|p| value_at(&self.obj, p).is_some());
            for p in g.iter() {
                let now = value_at(&self.obj, p);
                if now.is_some() && now != value_at(before, p) {
                    writes.push((p.clone(), now.cloned().unwrap_or(Value::Null)));
                }
            }
        }
        self.links.retain(|g| g.len() > 1);
        for (p, v) in writes {
            self.write_linked(&p, &v);
        }
    }

    pub fn new(obj: Value) -> Resource {
        Resource {
            obj,
            ..Default::default()
        }
    }

    /// `apiVersion` as kyaml reads it (see [`Resource::scalar_text`]).
    pub fn api_version(&self) -> Cow<'_, str> {
        self.scalar_text(&["apiVersion"])
    }

    /// `kind` as kyaml reads it: `kind: 0600` is the kind `0600`.
    pub fn kind(&self) -> Cow<'_, str> {
        self.scalar_text(&["kind"])
    }

    /// `metadata.name` as kustomize reads it (see [`Resource::scalar_text`]):
    /// `name: 23` is the name `23`.
    pub fn name(&self) -> Cow<'_, str> {
        self.scalar_text(&["metadata", "name"])
    }

    pub fn namespace(&self) -> Cow<'_, str> {
        self.scalar_text(&["metadata", "namespace"])
    }

    /// The text of the scalar at `path` (empty when there is none, or for a
    /// null, a map or a list). kyaml reads a scalar's text whatever its
    /// type: a number, a boolean or a timestamp is the text its file wrote
    /// (kept in `scalar_texts` when it does not print that way, as `1.50` or
    /// `2001-12-14`), else how it prints.
    pub fn scalar_text(&self, path: &[&str]) -> Cow<'_, str> {
        let Some(v) = self.obj.get_path(path) else {
            return Cow::Borrowed("");
        };
        let kept = kept_text_by_keys(&self.scalar_texts, path, v);
        text_and_style(v, kept).map_or(Cow::Borrowed(""), |(t, _)| t)
    }

    pub fn gvk(&self) -> Gvk {
        Gvk::from_api_version(&self.api_version(), &self.kind())
    }

    pub fn cur_id(&self) -> ResId {
        ResId::new(self.gvk(), &self.name(), &self.namespace())
    }

    /// The id the resource had when it was first read.
    pub fn org_id(&self) -> ResId {
        self.prev_ids
            .first()
            .cloned()
            .unwrap_or_else(|| self.cur_id())
    }

    /// Current id followed by the previous ones (newest first).
    pub fn all_ids(&self) -> Vec<ResId> {
        let mut ids = vec![self.cur_id()];
        ids.extend(self.prev_ids.iter().rev().cloned());
        ids
    }

    pub fn set_name(&mut self, name: &str) {
        self.obj.set_path(&["metadata", "name"], Value::from(name));
    }

    /// Sets the scalar at `path` to `text` as kyaml's `SetName` and
    /// `SetNamespace` do (see `replacement::set_scalar_text`): untyped
    /// where the field holds a plain-written scalar (`name: 23` stays a
    /// number), a string where it holds a quoted one or nothing.
    pub fn set_scalar_field(&mut self, path: &[&str], text: &str) {
        let segs: Vec<PathSeg> = path.iter().map(|k| PathSeg::Key(k.to_string())).collect();
        match self.obj.get_path_mut(path) {
            Some(v) if !matches!(v, Value::Null | Value::Map(_) | Value::Seq(_)) => {
                if let Some(t) = set_scalar_text(&self.scalar_texts, &self.quoted, &segs, v, |_| {
                    Some(text.to_string())
                }) {
                    keep_untyped(&mut self.scalar_texts, vec![(segs, t)]);
                }
            }
            _ => {
                self.obj.set_path(path, Value::from(text));
            }
        }
    }

    pub fn set_namespace(&mut self, ns: &str) {
        self.obj
            .set_path(&["metadata", "namespace"], Value::from(ns));
    }

    pub fn set_kind(&mut self, kind: &str) {
        self.obj.set_path(&["kind"], Value::from(kind));
    }

    /// Whether kustomize would hold internal annotations on the resource
    /// (previous ids, prefixes and suffixes, generator options, build
    /// metadata), so that its `metadata.annotations` map exists.
    pub fn has_internal_annotations(&self) -> bool {
        !self.prev_ids.is_empty()
            || !self.name_prefixes.is_empty()
            || !self.name_suffixes.is_empty()
            || self.generated
            || self.origin.is_some()
            || !self.transformations.is_empty()
    }

    /// Records the current id as a previous id (before a name change).
    pub fn store_previous_id(&mut self, schema: &Schema) {
        let mut id = self.cur_id();
        id.namespace = effective_namespace(&id, schema).to_string();
        self.prev_ids.push(id);
    }

    /// The text kyaml reads for the label or annotation `key` (`field`:
    /// `labels` or `annotations`); `None` when there is none.
    pub fn meta_text(&self, field: &str, key: &str) -> Option<Cow<'_, str>> {
        meta_value_text(&self.obj, &self.scalar_texts, field, key)
    }

    pub fn labels(&self) -> Option<&Mapping> {
        self.obj
            .get_path(&["metadata", "labels"])
            .and_then(Value::as_map)
    }

    pub fn annotations(&self) -> Option<&Mapping> {
        self.obj
            .get_path(&["metadata", "annotations"])
            .and_then(Value::as_map)
    }

    /// kustomize's `PrefixesSuffixesEquals`.
    pub fn prefixes_suffixes_equal(&self, other: &Resource) -> bool {
        same_ending(&self.name_prefixes, &other.name_prefixes)
            && same_ending(&self.name_suffixes, &other.name_suffixes)
    }
}

/// True when the shorter list is the tail of the longer (two empty lists
/// are equal; an empty list matches only an empty list).
fn same_ending(a: &[String], b: &[String]) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.is_empty() {
        return long.is_empty();
    }
    let diff = long.len() - short.len();
    short.iter().zip(&long[diff..]).all(|(x, y)| x == y)
}

/// kustomize's `EffectiveNamespace`: cluster-scoped ids get a sentinel,
/// empty namespaces read as `default`.
pub fn effective_namespace<'a>(id: &'a ResId, schema: &Schema) -> &'a str {
    if !schema.is_namespaced(&id.gvk.api_version(), &id.gvk.kind) {
        NON_NAMESPACEABLE
    } else if id.namespace.is_empty() {
        "default"
    } else {
        &id.namespace
    }
}

/// Key used to detect duplicate ids and to find resources by id, as
/// kustomize compares ids: `default` namespace == no namespace, and the
/// namespace of a kind the builtin schema knows as cluster-scoped is
/// ignored (a ClusterRole written with `namespace: a` is the one a patch
/// names with `namespace: b`).
pub fn id_key(id: &ResId) -> IdKey {
    let namespace = if Schema::builtin_ref().is_namespaced(&id.gvk.api_version(), &id.gvk.kind) {
        id.effective_namespace()
    } else {
        NON_NAMESPACEABLE
    };
    (id.gvk.clone(), id.name.clone(), namespace.to_string())
}

pub type IdKey = (Gvk, String, String);

/// The index keys of one resource: current id, all ids, and names.
struct Keys {
    cur: IdKey,
    any: Vec<IdKey>,
    names: Vec<String>,
}

fn keys_of(r: &Resource) -> Keys {
    let cur = r.cur_id();
    let mut any = vec![id_key(&cur)];
    for p in &r.prev_ids {
        // Previous ids keep kustomize's effective namespace; fold it back.
        let mut id = p.clone();
        if id.namespace == "default" || id.namespace == NON_NAMESPACEABLE {
            id.namespace.clear();
        }
        let k = id_key(&id);
        if !any.contains(&k) {
            any.push(k);
        }
    }
    let mut names = vec![cur.name.clone()];
    if let Some(o) = r.prev_ids.first()
        && o.name != cur.name
    {
        names.push(o.name.clone());
    }
    Keys {
        cur: id_key(&cur),
        any,
        names,
    }
}

fn index_add<K: std::hash::Hash + Eq>(map: &mut HashMap<K, Vec<usize>>, k: K, i: usize) {
    let v = map.entry(k).or_default();
    if let Err(pos) = v.binary_search(&i) {
        v.insert(pos, i);
    }
}

fn index_remove<K: std::hash::Hash + Eq>(map: &mut HashMap<K, Vec<usize>>, k: &K, i: usize) {
    if let Some(v) = map.get_mut(k)
        && let Ok(pos) = v.binary_search(&i)
    {
        v.remove(pos);
    }
}

/// An ordered list of resources with duplicate-id checks and lookup
/// indexes (by current id, by any current or previous id, by name) that
/// are kept up to date incrementally, so that lookups stay O(1) on large
/// trees.
#[derive(Clone, Debug, Default)]
pub struct ResMap {
    /// Set when a strategic-merge patch was merged into one of its
    /// resources (kyaml then parses its schema; see `BuildCtx`).
    pub smp_merged: bool,
    list: Vec<Resource>,
    index: Option<HashMap<IdKey, usize>>,
    any_index: Option<HashMap<IdKey, Vec<usize>>>,
    name_index: Option<HashMap<String, Vec<usize>>>,
}

impl ResMap {
    pub fn new() -> ResMap {
        ResMap::default()
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn resources(&self) -> &[Resource] {
        &self.list
    }

    fn invalidate(&mut self) {
        self.index = None;
        self.any_index = None;
        self.name_index = None;
    }

    /// Mutable access to everything; invalidates the indexes.
    pub fn resources_mut(&mut self) -> &mut Vec<Resource> {
        self.invalidate();
        &mut self.list
    }

    pub fn into_resources(self) -> Vec<Resource> {
        self.list
    }

    fn ensure_index(&mut self) -> &mut HashMap<IdKey, usize> {
        self.index.get_or_insert_with(|| {
            let mut idx = HashMap::with_capacity(self.list.len());
            for (i, r) in self.list.iter().enumerate() {
                idx.entry(id_key(&r.cur_id())).or_insert(i);
            }
            idx
        })
    }

    fn ensure_any_index(&mut self) -> &mut HashMap<IdKey, Vec<usize>> {
        if self.any_index.is_none() {
            let mut idx = HashMap::with_capacity(self.list.len());
            for (i, r) in self.list.iter().enumerate() {
                for k in keys_of(r).any {
                    index_add(&mut idx, k, i);
                }
            }
            self.any_index = Some(idx);
        }
        self.any_index.get_or_insert_with(HashMap::new)
    }

    fn ensure_name_index(&mut self) -> &mut HashMap<String, Vec<usize>> {
        if self.name_index.is_none() {
            let mut idx = HashMap::with_capacity(self.list.len());
            for (i, r) in self.list.iter().enumerate() {
                for n in keys_of(r).names {
                    index_add(&mut idx, n, i);
                }
            }
            self.name_index = Some(idx);
        }
        self.name_index.get_or_insert_with(HashMap::new)
    }

    fn unindex(&mut self, i: usize, k: &Keys) {
        if let Some(idx) = &mut self.index
            && idx.get(&k.cur) == Some(&i)
        {
            idx.remove(&k.cur);
        }
        if let Some(idx) = &mut self.any_index {
            for key in &k.any {
                index_remove(idx, key, i);
            }
        }
        if let Some(idx) = &mut self.name_index {
            for n in &k.names {
                index_remove(idx, n, i);
            }
        }
    }

    fn reindex(&mut self, i: usize, k: Keys) {
        if let Some(idx) = &mut self.index {
            idx.entry(k.cur).or_insert(i);
        }
        if let Some(idx) = &mut self.any_index {
            for key in k.any {
                index_add(idx, key, i);
            }
        }
        if let Some(idx) = &mut self.name_index {
            for n in k.names {
                index_add(idx, n, i);
            }
        }
    }

    /// Index of the resource whose current id equals `id`.
    pub fn find_cur(&mut self, id: &ResId) -> Option<usize> {
        self.ensure_index().get(&id_key(id)).copied()
    }

    /// Indices of resources whose current or any previous id equals `id`
    /// (`default` namespace == no namespace), in order.
    pub fn find_any(&mut self, id: &ResId) -> Vec<usize> {
        self.ensure_any_index()
            .get(&id_key(id))
            .cloned()
            .unwrap_or_default()
    }

    /// Indices of resources whose current or original name is `name`.
    pub fn find_by_name(&mut self, name: &str) -> Vec<usize> {
        self.ensure_name_index()
            .get(name)
            .cloned()
            .unwrap_or_default()
    }

    /// Appends a resource; an id already present is an error.
    pub fn append(&mut self, r: Resource) -> Result<()> {
        let id = r.cur_id();
        let key = id_key(&id);
        let idx = self.ensure_index();
        if idx.contains_key(&key) {
            return Err(Error::invalid(format!(
                "may not add resource with an already registered id: {id}"
            )));
        }
        let next = self.list.len();
        let keys = keys_of(&r);
        self.list.push(r);
        self.reindex(next, keys);
        Ok(())
    }

    /// Appends every resource of `other`.
    pub fn append_all(&mut self, other: ResMap) -> Result<()> {
        for r in other.list {
            self.append(r)?;
        }
        Ok(())
    }

    /// Replaces the resource at `i`, keeping the indexes current.
    pub fn replace_at(&mut self, i: usize, r: Resource) {
        let Some(old) = self.list.get(i) else { return };
        let old_keys = keys_of(old);
        let new_keys = keys_of(&r);
        self.unindex(i, &old_keys);
        self.list[i] = r;
        self.reindex(i, new_keys);
    }

    /// Runs `f` on the resource at `i`, keeping the indexes current even if
    /// `f` renames it. `None` when `i` is out of range.
    pub fn modify<T>(&mut self, i: usize, f: impl FnOnce(&mut Resource) -> T) -> Option<T> {
        let indexed = self.index.is_some() || self.any_index.is_some() || self.name_index.is_some();
        let before = if indexed {
            Some(keys_of(self.list.get(i)?))
        } else {
            None
        };
        let out = f(self.list.get_mut(i)?);
        if let Some(before) = before {
            let after = keys_of(&self.list[i]);
            if after.cur != before.cur || after.any != before.any || after.names != before.names {
                self.unindex(i, &before);
                self.reindex(i, after);
            }
        }
        Some(out)
    }

    /// Removes the resources for which `keep` is false.
    pub fn retain(&mut self, keep: impl FnMut(&Resource) -> bool) {
        self.invalidate();
        self.list.retain(keep);
    }

    /// Indices of resources any of whose ids (current or previous) satisfy `pred`.
    pub fn matching_any_id(&self, pred: impl Fn(&ResId) -> bool) -> Vec<usize> {
        self.list
            .iter()
            .enumerate()
            .filter(|(_, r)| pred(&r.cur_id()) || r.prev_ids.iter().any(&pred))
            .map(|(i, _)| i)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kustomize::yaml::parse::parse_documents_strict as parse_documents;

    fn res(src: &str) -> Resource {
        Resource::new(parse_documents(src).unwrap().remove(0))
    }

    #[test]
    fn ids_and_duplicates() {
        let mut m = ResMap::new();
        m.append(res(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\n",
        ))
        .unwrap();
        let dup =
            res("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a, namespace: default}\n");
        let e = m.append(dup).unwrap_err();
        assert_eq!(
            e.message,
            "may not add resource with an already registered id: Deployment.v1.apps/a.default"
        );
        m.append(res(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a, namespace: x}\n",
        ))
        .unwrap();
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn prefix_suffix_context() {
        let mut a = Resource::default();
        let mut b = Resource::default();
        assert!(a.prefixes_suffixes_equal(&b));
        a.name_prefixes = vec!["x-".into(), "y-".into()];
        b.name_prefixes = vec!["y-".into()];
        assert!(a.prefixes_suffixes_equal(&b));
        b.name_prefixes = vec!["x-".into()];
        assert!(!a.prefixes_suffixes_equal(&b));
        b.name_prefixes.clear();
        assert!(!a.prefixes_suffixes_equal(&b));
    }
}
