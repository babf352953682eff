//! Applying `patchesStrategicMerge`, `patches` and `patchesJson6902`:
//! loading patch content, selecting targets, and keeping names/kinds stable
//! unless a patch is allowed to change them.

use regex::Regex;

use super::documents::{factory_split, named_or_list};
use super::error::{Error, Result};
use super::function::bookkeeping_annotations;
use super::kustomization::PatchEntry;
use super::loader::Loader;
use super::openapi::{Schema, SchemaRef};
use super::patch::{EMPTY_NULL_MARK, EMPTY_TEXT_NULL_MARK, apply_json6902, strategic_merge_owned};
use super::replacement::{TextKind, mistyped_error, text_and_style};
use super::resid::{Gvk, ResId};
use super::resource::{PathSeg, ResMap, Resource, value_at, value_at_mut};
use super::selector::{LabelSelector, Selector};
use super::yaml::parse::{MarkedDocument, PatchMeta};
use super::yaml::{Mapping, Value, parse};

/// A selector compiled for matching (kustomize's `SelectorRegex`): every
/// GVK part, the name and the namespace are anchored regular expressions.
pub struct CompiledSelector {
    group: Option<Regex>,
    version: Option<Regex>,
    kind: Option<Regex>,
    name: Option<Regex>,
    namespace: Option<Regex>,
    labels: Option<LabelSelector>,
    annotations: Option<LabelSelector>,
}

fn anchored(p: &str) -> Result<Option<Regex>> {
    super::goregex::anchored(p).map_err(Error::invalid)
}

impl CompiledSelector {
    pub fn new(s: &Selector) -> Result<CompiledSelector> {
        let ls = |x: &str| -> Result<Option<LabelSelector>> {
            if x.is_empty() {
                Ok(None)
            } else {
                LabelSelector::parse(x).map(Some).map_err(Error::invalid)
            }
        };
        Ok(CompiledSelector {
            group: anchored(&s.group)?,
            version: anchored(&s.version)?,
            kind: anchored(&s.kind)?,
            name: anchored(&s.name)?,
            namespace: anchored(&s.namespace)?,
            labels: ls(&s.label_selector)?,
            annotations: ls(&s.annotation_selector)?,
        })
    }

    fn m(re: &Option<Regex>, s: &str) -> bool {
        re.as_ref().is_none_or(|r| r.is_match(s))
    }

    /// kustomize's `ResMap.Select` test for one resource.
    pub fn selects(&self, r: &Resource, schema: &Schema) -> bool {
        let (cur_name, cur_ns) = (r.name(), r.namespace());
        let (cur_name, cur_ns) = (&*cur_name, &*cur_ns);
        let org = r.prev_ids.first();
        if self.namespace.is_some() {
            let api = r.api_version();
            let kind = r.kind();
            let cur_eff = if !schema.is_namespaced(&api, &kind) {
                super::resource::NON_NAMESPACEABLE
            } else if cur_ns.is_empty() {
                "default"
            } else {
                cur_ns
            };
            // Previous ids already hold kustomize's effective namespace.
            let org_eff = org.map_or(cur_eff, |o| o.namespace.as_str());
            if !Self::m(&self.namespace, org_eff) && !Self::m(&self.namespace, cur_eff) {
                return false;
            }
        }
        if self.name.is_some() {
            let org_name = org.map_or(cur_name, |o| o.name.as_str());
            if !Self::m(&self.name, org_name) && !Self::m(&self.name, cur_name) {
                return false;
            }
        }
        if self.group.is_some() || self.version.is_some() || self.kind.is_some() {
            let api = r.api_version();
            let (group, version) = api.rsplit_once('/').unwrap_or(("", &api));
            if !Self::m(&self.group, group)
                || !Self::m(&self.version, version)
                || !Self::m(&self.kind, &r.kind())
            {
                return false;
            }
        }
        if let Some(l) = &self.labels
            && !l.matches_texts(|k| r.meta_text("labels", k))
        {
            return false;
        }
        if let Some(a) = &self.annotations
            && !a.matches_texts(|k| r.meta_text("annotations", k))
        {
            return false;
        }
        true
    }
}

/// True when a selector pattern has no regular-expression syntax, so it
/// can only match itself.
fn is_literal(p: &str) -> bool {
    !p.is_empty() && !p.chars().any(|c| "\\.+*?()|[]{}^$".contains(c))
}

/// Indices of the resources a selector picks, in resource order. A literal
/// name is looked up in the name index instead of scanning every resource.
pub fn select(m: &mut ResMap, sel: &Selector, schema: &Schema) -> Result<Vec<usize>> {
    let c = CompiledSelector::new(sel)?;
    if is_literal(&sel.name) {
        let candidates = m.find_by_name(&sel.name);
        return Ok(candidates
            .into_iter()
            .filter(|&i| m.resources().get(i).is_some_and(|r| c.selects(r, schema)))
            .collect());
    }
    Ok(m.resources()
        .iter()
        .enumerate()
        .filter(|(_, r)| c.selects(r, schema))
        .map(|(i, _)| i)
        .collect())
}

/// Puts [`EMPTY_NULL_MARK`] where the resource has nulls written as nothing
/// (map fields only); whether it did.
fn mark_empty_nulls(r: &mut Resource) -> bool {
    let mut any = false;
    for p in &r.empty_nulls {
        // (annotations written as nothing are kept as "" text)
        if matches!(p.last(), Some(PathSeg::Key(_)))
            && let Some(v) = value_at_mut(&mut r.obj, p)
        {
            let mark = match v {
                Value::Null => EMPTY_NULL_MARK,
                Value::String(s) if s.is_empty() => EMPTY_TEXT_NULL_MARK,
                _ => continue,
            };
            *v = Value::String(mark.to_string());
            any = true;
        }
    }
    any
}

/// Marks the strings at `paths` of `obj` (see [`parse::QUOTED_MARK`]; a
/// resource's [`Resource::quoted`] or a patch's own), which the merge may
/// write over; whether it marked any. Left alone, and listed in `skipped`:
/// `metadata` (kustomize handles names, labels and annotations apart),
/// `apiVersion` and `kind` (the merge reads them for schemas), directives
/// and what is under them, and the merge keys of lists merged by key (the
/// merge matches items on them).
fn mark_quoted_paths<'s>(
    obj: &mut Value,
    paths: &[Vec<PathSeg>],
    top: Option<SchemaRef<'s>>,
    schema: &'s Schema,
    skipped: &mut Vec<Vec<PathSeg>>,
) -> bool {
    let mut any = false;
    for p in paths {
        let Some((PathSeg::Key(k), parent)) = p.split_last() else {
            continue;
        };
        if matches!(p.first(), Some(PathSeg::Key(f)) if f == "metadata")
            || k == "apiVersion"
            || k == "kind"
            || p.iter()
                .any(|s| matches!(s, PathSeg::Key(k) if k.starts_with('$')))
        {
            skipped.push(p.clone());
            continue;
        }
        if let Some((PathSeg::Index(_), list)) = parent.split_last()
            && schema_at(obj, list, top, schema)
                .is_some_and(|s| s.has_merge_strategy() && s.merge_keys().contains(&k.as_str()))
        {
            skipped.push(p.clone());
            continue;
        }
        if let Some(Value::String(text)) = value_at_mut(obj, p)
            && !text.starts_with(parse::QUOTED_MARK)
        {
            text.insert_str(0, parse::QUOTED_MARK);
            any = true;
        }
    }
    any
}

/// The schema the strategic merge uses for the node at `path` of `obj`
/// (field and element schemas, or a map's own apiVersion and kind).
fn schema_at<'s>(
    obj: &Value,
    path: &[PathSeg],
    top: Option<SchemaRef<'s>>,
    schema: &'s Schema,
) -> Option<SchemaRef<'s>> {
    let mut cur = obj;
    let mut s = top;
    for seg in path {
        match seg {
            PathSeg::Key(k) => {
                cur = cur.get(k)?;
                s = s.and_then(|s| s.field(k));
            }
            PathSeg::Index(i) => {
                cur = cur.as_seq()?.get(*i)?;
                s = s.and_then(|s| s.elements());
            }
        }
        if s.is_none() {
            s = super::patch::smp::schema_of_map(schema, cur);
        }
    }
    s
}

/// Turns the quoted marks a merge kept back into their strings; returns
/// their paths.
fn unmark_quoted(v: &mut Value) -> Vec<Vec<PathSeg>> {
    v.scalar_paths_where(&mut |s| match s {
        Value::String(text) if text.starts_with(parse::QUOTED_MARK) => {
            text.replace_range(..parse::QUOTED_MARK.len(), "");
            true
        }
        _ => false,
    })
}

/// Turns the marks a merge kept back into what they stood for; returns
/// their paths.
fn unmark_empty_nulls(v: &mut Value) -> Vec<Vec<PathSeg>> {
    v.scalar_paths_where(&mut |s| {
        let was = match s.as_str() {
            Some(EMPTY_NULL_MARK) => Value::Null,
            Some(EMPTY_TEXT_NULL_MARK) => Value::String(String::new()),
            _ => return false,
        };
        *s = was;
        true
    })
}

/// Applies one strategic-merge patch to the resource at `i`; returns false
/// when the patch deleted the resource.
fn apply_smp_at(
    m: &mut ResMap,
    i: usize,
    patch: &MarkedDocument,
    how: SmpHow,
    schema: &Schema,
) -> Result<bool> {
    m.modify(i, |r| apply_smp_to_resource(r, patch, how, schema))
        .unwrap_or(Ok(true))
}

/// How a strategic-merge patch reaches its resource.
#[derive(Clone, Copy)]
struct SmpHow {
    allow_name: bool,
    allow_kind: bool,
    /// kustomize gives the patch the resource's group, version and kind
    /// first (`patchesStrategicMerge`, targeted `patches`). A resource
    /// without `apiVersion` then gets the empty untagged text the patch
    /// carries, printed `apiVersion: null`.
    gvk_copied: bool,
}

fn apply_smp_to_resource(
    r: &mut Resource,
    patch: &MarkedDocument,
    how: SmpHow,
    schema: &Schema,
) -> Result<bool> {
    let SmpHow {
        allow_name,
        allow_kind,
        gvk_copied,
    } = how;
    // the copied version is text: kyaml's merge refuses it over a list or
    // a map (kyaml reads no version from either, so the text is empty)
    if gvk_copied {
        let node = match r.obj.get("apiVersion") {
            Some(Value::Seq(_)) => Some("SequenceNode"),
            Some(Value::Map(_)) => Some("MappingNode"),
            _ => None,
        };
        if let Some(node) = node {
            return Err(Error::invalid(format!(
                "wrong node kind: expected {node} but got ScalarNode: node contents:\n"
            )));
        }
    }
    let mut p = patch.value.clone();
    let api = r.api_version().to_string();
    let api_absent = r.obj.get("apiVersion").is_none();
    if let Some(pm) = p.as_map_mut() {
        if api.is_empty() {
            pm.shift_remove("apiVersion");
        } else {
            pm.insert("apiVersion".into(), Value::from(api.as_str()));
        }
    }
    let (name, ns, kind) = (
        r.name().to_string(),
        r.namespace().to_string(),
        r.kind().to_string(),
    );
    if allow_name || allow_kind {
        r.store_previous_id(schema);
    }
    quote_walked_untyped(r, &p, schema);
    // kyaml merges in place: a linked scalar the patch sets changes its
    // whole group (see `Resource::links`)
    let before = (!r.links.is_empty()).then(|| r.obj.clone());
    // nulls written as nothing are dropped where the merge walks
    let marked = mark_empty_nulls(r);
    // quoted strings give their style to what the merge writes over them,
    // and a patch's own quoted strings keep theirs where they are new
    let mut unmarked = Vec::new();
    let quoted = (!r.quoted.is_empty() || !patch.quoted.is_empty()) && {
        let top = schema.resource(&r.api_version(), &r.kind());
        let dest = mark_quoted_paths(&mut r.obj, &r.quoted, top, schema, &mut unmarked);
        if dest && !patch.written.is_empty() {
            keep_patch_texts(r, &mut p, &patch.written, top, schema);
        }
        let own = mark_quoted_paths(&mut p, &patch.quoted, top, schema, &mut Vec::new());
        dest || own
    };
    let folded = parse::has_folded_marks(&p);
    let merged = strategic_merge_owned(std::mem::take(&mut r.obj), &p, schema)
        .map_err(|e| Error::invalid(e.0.replace(parse::QUOTED_MARK, "")))?
        .map(|mut m| {
            if marked {
                r.empty_nulls = unmark_empty_nulls(&mut m);
            }
            if quoted {
                // (the strings left unmarked keep their record while they
                // are strings)
                let mut q = unmark_quoted(&mut m);
                q.extend(
                    unmarked
                        .into_iter()
                        .filter(|p| matches!(value_at(&m, p), Some(Value::String(_)))),
                );
                r.quoted = q;
            }
            if folded {
                // folded patch scalars that kept their own style
                parse::unmark_folded(&mut m);
            }
            m
        });
    let Some(merged) = merged.filter(|v| v.as_map().is_some_and(|mm| !mm.is_empty())) else {
        return Ok(false);
    };
    r.obj = merged;
    if gvk_copied
        && api_absent
        && let Some(mm) = r.obj.as_map_mut()
    {
        mm.insert("apiVersion".into(), Value::Null);
    }
    if let Some(before) = before {
        r.propagate_links(&before);
    }
    if !allow_kind {
        r.set_kind(&kind);
    }
    // kyaml's SetName/SetNamespace: the text goes into the field the merge
    // left, typed as that field was written (a patch's `name: 23` leaves
    // the number 23)
    if !allow_name {
        r.set_scalar_field(&["metadata", "name"], &name);
    }
    if ns.is_empty() {
        if let Some(meta) = r.obj.get_mut("metadata").and_then(Value::as_map_mut) {
            meta.shift_remove("namespace");
        }
    } else {
        r.set_scalar_field(&["metadata", "namespace"], &ns);
    }
    Ok(true)
}

/// kyaml's merge sets every field of every map it walks anew (its
/// `FieldSetter`), which double quotes a kept scalar that has no tag, no
/// quotes, and text go-yaml v2 reads as something else than a string
/// (`IsYaml1_1NonString`). The only such scalars here are the fields
/// replacements created (untyped, see `Resource::scalar_texts`): `80`
/// becomes the string "80". Timestamps (v2 reads them as strings) and
/// empty text stay. The walk covers maps and the items of lists merged by
/// key; not the items of other lists, nor a resource the patch replaces
/// at the top. A field the patch sets takes the patch's node instead.
fn quote_walked_untyped(r: &mut Resource, patch: &Value, schema: &Schema) {
    if !r
        .scalar_texts
        .iter()
        .any(|t| matches!(t.kind, TextKind::Untyped))
        || patch
            .get("$patch")
            .is_some_and(|d| d.as_str() == Some("replace"))
    {
        return;
    }
    let top = schema.resource(&r.api_version(), &r.kind());
    let mut quoted = Vec::new();
    for (i, t) in r.scalar_texts.iter().enumerate() {
        if !matches!(t.kind, TextKind::Untyped)
            || !matches!(t.path.last(), Some(PathSeg::Key(_)))
            || t.text.is_empty()
            || matches!(super::fieldpath::resolve_value(&t.text), Value::String(_))
        {
            continue;
        }
        if value_at(&r.obj, &t.path).is_some_and(|v| t.current(v))
            && kept_by_merge(&r.obj, patch, &t.path, top, schema)
        {
            quoted.push(i);
        }
    }
    for i in quoted.into_iter().rev() {
        let t = r.scalar_texts.remove(i);
        if let Some(v) = value_at_mut(&mut r.obj, &t.path) {
            *v = Value::String(t.text);
        }
    }
}

/// Whether kyaml's merge walks down to the scalar field at `path` of `obj`
/// and keeps it (`patch` does not set it).
fn kept_by_merge<'s>(
    obj: &Value,
    patch: &Value,
    path: &[PathSeg],
    top: Option<SchemaRef<'s>>,
    schema: &'s Schema,
) -> bool {
    matches!(merge_walk(obj, patch, path, top, schema), MergeWalk::Kept)
}

/// What kyaml's merge does at the scalar field at `path` of `obj`.
enum MergeWalk {
    /// It does not walk there (a list not merged by key, a map the patch
    /// replaces or deletes, a missing node).
    Stops,
    /// It walks there and keeps the field.
    Kept,
    /// It writes the patch's node at this path over the field.
    SetBy(Vec<PathSeg>),
}

/// Follows kyaml's merge down to `path` of `obj` (through maps, and lists
/// whose schema merges them by key, with the merge's schema lookup),
/// alongside the patch's node at the same place.
fn merge_walk<'s>(
    obj: &Value,
    patch: &Value,
    path: &[PathSeg],
    top: Option<SchemaRef<'s>>,
    schema: &'s Schema,
) -> MergeWalk {
    let Some((last, parents)) = path.split_last() else {
        return MergeWalk::Stops;
    };
    let mut cur = obj;
    // the patch's node at the same place, while there is one
    let mut pcur = Some(patch);
    let mut ppath = Vec::new();
    let mut s = top;
    for seg in parents {
        match seg {
            PathSeg::Key(k) => {
                let Some(next) = cur.get(k) else {
                    return MergeWalk::Stops;
                };
                cur = next;
                pcur = pcur.and_then(|p| p.get(k));
                ppath.push(seg.clone());
                s = s.and_then(|s| s.field(k));
            }
            PathSeg::Index(i) => {
                let Some(list) = s.filter(|s| s.has_merge_strategy()) else {
                    return MergeWalk::Stops;
                };
                let Some(next) = cur.as_seq().and_then(|l| l.get(*i)) else {
                    return MergeWalk::Stops;
                };
                let keys = list.merge_keys();
                // the patch item merged with this one: same merge-key values
                let found = pcur.and_then(Value::as_seq).and_then(|items| {
                    items.iter().enumerate().find(|(_, it)| {
                        !keys.is_empty()
                            && keys.iter().all(|k| {
                                it.get(k).and_then(Value::scalar_to_string)
                                    == next.get(k).and_then(Value::scalar_to_string)
                            })
                    })
                });
                pcur = found.map(|(_, it)| it);
                if let Some((pi, _)) = found {
                    ppath.push(PathSeg::Index(pi));
                }
                cur = next;
                s = list.elements();
            }
        }
        if s.is_none() {
            s = super::patch::smp::schema_of_map(schema, cur);
        }
        if let Some(Value::Map(pm)) = pcur
            && pm
                .get("$patch")
                .is_some_and(|d| matches!(d.as_str(), Some("replace" | "delete")))
        {
            // the patch's map replaces this one (or removes it)
            return MergeWalk::Stops;
        }
    }
    let PathSeg::Key(k) = last else {
        return MergeWalk::Stops;
    };
    match pcur.and_then(|p| p.get(k)) {
        None => MergeWalk::Kept,
        Some(_) => {
            ppath.push(last.clone());
            MergeWalk::SetBy(ppath)
        }
    }
}

/// kyaml writes a patch's scalar over a quoted field with the field's
/// style, and its text as written: a number or boolean the patch wrote
/// as `TRUE`, `+1` or `0b101` over a marked field (see [`mark_quoted_paths`])
/// becomes that text, not the value it read as.
fn keep_patch_texts<'s>(
    r: &Resource,
    p: &mut Value,
    written: &[(Vec<PathSeg>, String)],
    top: Option<SchemaRef<'s>>,
    schema: &'s Schema,
) {
    for q in &r.quoted {
        if value_at(&r.obj, q).is_none_or(|v| parse::quoted_text(v).is_none()) {
            continue;
        }
        let MergeWalk::SetBy(at) = merge_walk(&r.obj, p, q, top, schema) else {
            continue;
        };
        let Some((_, text)) = written.iter().find(|(w, _)| *w == at) else {
            continue;
        };
        if let Some(v) = value_at_mut(p, &at)
            && matches!(
                v,
                Value::Int(_)
                    | Value::UInt(_)
                    | Value::Float(_)
                    | Value::Bool(_)
                    | Value::String(_)
            )
        {
            *v = Value::String(text.clone());
        }
    }
}

fn apply_smp_to(
    m: &mut ResMap,
    targets: &[usize],
    patch: &MarkedDocument,
    how: SmpHow,
    schema: &Schema,
) -> Result<()> {
    if !targets.is_empty() {
        m.smp_merged = true;
    }
    let mut deleted = Vec::new();
    for &i in targets {
        if !apply_smp_at(m, i, patch, how, schema)? {
            deleted.push(i);
        }
    }
    if !deleted.is_empty() {
        let mut idx = 0usize;
        m.retain(|_| {
            let keep = !deleted.contains(&idx);
            idx += 1;
            keep
        });
    }
    Ok(())
}

/// Parses patch text as strategic-merge documents; `None` when it is not
/// a stream of maps.
fn parse_smp_docs(text: &str, meta: PatchMeta) -> Option<Vec<MarkedDocument>> {
    smp_docs(
        strict_patch_docs(text, meta),
        !matches!(JsonView::of(text), JsonView::NotYaml),
    )
}

/// Patch text read like resources (kyaml), `None` when it does not parse.
fn strict_patch_docs(text: &str, meta: PatchMeta) -> Option<Vec<MarkedDocument>> {
    parse::parse_patch_documents(text, meta).ok()
}

/// Strategic-merge patches from the strict reading of a patch text;
/// `lenient_ok`: the text also reads as JSON-able YAML (a key-less
/// `: value` entry does not, and is not a patch).
fn smp_docs(docs: Option<Vec<MarkedDocument>>, lenient_ok: bool) -> Option<Vec<MarkedDocument>> {
    let docs = docs.filter(|_| lenient_ok)?;
    if docs.iter().all(|d| d.value.is_null()) {
        return None;
    }
    if docs
        .iter()
        .any(|d| !matches!(d.value, Value::Map(_) | Value::Null))
    {
        return None;
    }
    let docs = factory_split(docs, "patch").ok()?;
    // kustomize reads them as resources: each needs a kind, and a name
    // unless it is a `*List`
    docs.iter()
        .all(|d| {
            d.value.str_at(&["kind"]).is_some_and(|k| !k.is_empty()) && named_or_list(&d.value)
        })
        .then_some(docs)
}

/// Whether patch documents read as empty YAML: nothing, null, `{}`, `[]`.
fn all_empty(docs: &[MarkedDocument]) -> bool {
    docs.iter().all(|d| match &d.value {
        Value::Null => true,
        Value::Map(m) => m.is_empty(),
        Value::Seq(s) => s.is_empty(),
        _ => false,
    })
}

/// Loads `patchesStrategicMerge` entries (inline YAML or file paths).
pub fn load_strategic_merge(loader: &Loader, entries: &[String]) -> Result<Vec<MarkedDocument>> {
    let mut out = Vec::new();
    for e in entries {
        // an entry that reads as empty YAML (a comment, `null`, `{}`) is
        // patch text of no patch, as kustomize reads it
        if strict_patch_docs(e, PatchMeta::CopiedAsText).is_some_and(|d| all_empty(&d)) {
            continue;
        }
        if let Some(docs) = parse_smp_docs(e, PatchMeta::CopiedAsText) {
            out.extend(docs);
            continue;
        }
        let text = loader.read_string(e).map_err(|err| {
            err.context(format!(
                "trouble configuring builtin PatchStrategicMergeTransformer with config: `\npaths:\n- {e}\n`"
            ))
        })?;
        let docs = parse::parse_patch_documents(&text, PatchMeta::CopiedAsText)
            .map_err(|err| Error::invalid(format!("{e}: {}", err.message)))?;
        out.extend(factory_split(docs, e)?);
    }
    Ok(out)
}

/// The `patches` text of a PatchStrategicMergeTransformer config: one or
/// more patch documents, never a file name. Text that reads as YAML but
/// holds no resource is kustomize's `missing Resource metadata`.
pub fn inline_strategic_merge(text: &str) -> Result<Vec<MarkedDocument>> {
    parse_smp_docs(text, PatchMeta::CopiedAsText).ok_or_else(|| {
        let reason = match parse::parse_documents(text) {
            Ok(_) => "missing Resource metadata".to_string(),
            Err(e) => e.message,
        };
        Error::invalid(format!(
            "trouble configuring builtin PatchStrategicMergeTransformer: {reason}"
        ))
    })
}

/// The id kustomize gives a patch document: its name and namespace are
/// the texts of their scalars (`name: 23` is the name `23`, `name: 0600`
/// the name `0600`).
fn patch_id(p: &MarkedDocument) -> ResId {
    let v = &p.value;
    let gvk = Gvk::from_api_version(
        v.str_at(&["apiVersion"]).unwrap_or(""),
        v.str_at(&["kind"]).unwrap_or(""),
    );
    let text = |key: &str| {
        let written = p.written.iter().find_map(|(path, t)| {
            matches!(path.as_slice(), [PathSeg::Key(m), PathSeg::Key(k)] if m == "metadata" && k == key)
                .then_some(t.as_str())
        });
        v.get_path(&["metadata", key])
            .and_then(|n| text_and_style(n, written))
            .map(|(t, _)| t.into_owned())
            .unwrap_or_default()
    };
    ResId::new(gvk, &text("name"), &text("namespace"))
}

/// `patchesStrategicMerge`: each patch applies to the one resource whose
/// id (current or previous) equals the patch's own.
pub fn apply_strategic_merge_by_id(
    m: &mut ResMap,
    patches: &[MarkedDocument],
    schema: &Schema,
) -> Result<()> {
    for p in patches {
        let id = patch_id(p);
        let hits = m.find_any(&id);
        match hits.as_slice() {
            [i] => {
                let how = SmpHow {
                    allow_name: false,
                    allow_kind: false,
                    gvk_copied: true,
                };
                apply_smp_to(m, &[*i], p, how, schema)?
            }
            [] => {
                return Err(Error::invalid(format!(
                    "no matches for Id {id}; failed to find unique target for patch {id}"
                )));
            }
            _ => {
                return Err(Error::invalid(format!(
                    "multiple matches for Id {id}; failed to find unique target for patch {id}"
                )));
            }
        }
    }
    Ok(())
}

/// A patch text as kustomize's JSON patch decoding sees it: text whose
/// first byte is `[` is strict JSON (no YAML flow syntax, JSON's escapes);
/// any other text is YAML converted to JSON, of which only the first
/// document counts.
enum JsonView {
    /// Not YAML at all.
    NotYaml,
    /// Starts with `[` but is not JSON.
    NotJson,
    /// Null: nothing, a comment, `~`, `null`, `---`.
    Null,
    /// A list: RFC 6902 operations.
    Ops(Value),
    /// A list with an item that is neither an operation (a map) nor null:
    /// Go's JSON decoding of the operations fails, with the Go JSON type
    /// of the first such item.
    BadOps { ops: Value, item: &'static str },
    /// Anything else (a map, a scalar).
    Other,
}

impl JsonView {
    fn of(text: &str) -> JsonView {
        if text.starts_with('[') {
            // valid JSON that starts with `[` is an array
            return match serde_json::from_str::<serde_json::Value>(text) {
                Ok(v) => JsonView::ops(Value::from(&v)),
                Err(_) => JsonView::NotJson,
            };
        }
        let mut docs = match parse::parse_documents(text) {
            Ok(docs) => docs,
            // a map merged into itself: go-yaml v2 gives up, kyaml (which
            // reads strategic-merge patches) does not
            Err(e) if e.message.ends_with("value contains itself") => {
                return JsonView::Other;
            }
            Err(_) => return JsonView::NotYaml,
        };
        match docs.drain(..).next() {
            None | Some(Value::Null) => JsonView::Null,
            Some(v @ Value::Seq(_)) => JsonView::ops(v),
            Some(_) => JsonView::Other,
        }
    }

    /// A list read as `jsonpatch.Patch` (a list of `map[string]*RawMessage`).
    fn ops(v: Value) -> JsonView {
        let bad = v.as_seq().into_iter().flatten().find_map(|op| match op {
            Value::Map(_) | Value::Null => None,
            other => Some(super::kustomization::go_type_of(other)),
        });
        match bad {
            Some(item) => JsonView::BadOps { ops: v, item },
            None => JsonView::Ops(v),
        }
    }
}

/// The text of a patch entry; kustomize trims the inline text of
/// `patches:` only.
fn patch_text(loader: &Loader, p: &PatchEntry, field: &str) -> Result<String> {
    let inline = if field == "patches" {
        p.patch.trim()
    } else {
        p.patch.as_str()
    };
    match (inline.is_empty(), p.path.is_empty()) {
        (true, true) => Err(Error::invalid(format!(
            "{field}: must specify one of patch and path"
        ))),
        (false, false) => Err(Error::invalid(format!(
            "{field}: patch and path can't be set at the same time"
        ))),
        (false, true) => Ok(inline.to_string()),
        (true, false) => loader.read_string(&p.path),
    }
}

/// Where a patch came from, as kustomize's messages name it: `[patch:
/// "<the inline text, trimmed>"]` or `[path: "<file>"]` (Go `%q`).
fn patch_source(p: &PatchEntry) -> String {
    let inline = p.patch.trim();
    if inline.is_empty() {
        format!("[path: {}]", super::selector::go_quote(&p.path))
    } else {
        format!("[patch: {}]", super::selector::go_quote(inline))
    }
}

/// Applies one `patches:` entry (strategic merge or JSON 6902, detected
/// from the content).
pub fn apply_patch_entry(
    loader: &Loader,
    m: &mut ResMap,
    p: &PatchEntry,
    schema: &Schema,
) -> Result<()> {
    let text = patch_text(loader, p, "patches")?;
    let target = match &p.target {
        Some(t) if p.from_plugin => {
            Some(Selector::from_value_lenient(t, "patches.target").map_err(Error::invalid)?)
        }
        Some(t) => Some(Selector::from_value(t, "patches.target").map_err(Error::invalid)?),
        None => None,
    };
    // kustomize reads the text both ways: as resources (documents that are
    // all empty, `[]` included, give no patch) and as JSON operations (text
    // that reads as null or as a list); both succeeding is an error. No
    // resource patch and no operations is a JSON patch of nothing, which
    // needs a target. With a target, kustomize applies the patch through
    // its resource map, which copies labels and annotations as text first.
    let meta = if target.is_some() {
        PatchMeta::CopiedAsText
    } else if p.allow_name_change || p.allow_kind_change {
        PatchMeta::AnnotationsAsText
    } else {
        PatchMeta::AsWritten
    };
    let strict = strict_patch_docs(&text, meta);
    let json = JsonView::of(&text);
    let empty_smp = strict.as_deref().is_some_and(all_empty);
    if empty_smp && !text.is_empty() && matches!(json, JsonView::Null | JsonView::Ops(_)) {
        return Err(Error::invalid(format!(
            "trouble configuring builtin PatchTransformer: illegally qualifies as both an SM and JSON patch: {}",
            patch_source(p)
        )));
    }
    if empty_smp {
        if target.is_none() {
            return Err(Error::invalid(format!(
                "must specify a target for JSON patch {text}"
            )));
        }
        if !text.is_empty() {
            // `{}`: no resource, and not a list of operations either
            return Err(Error::invalid(
                "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
            ));
        }
        return Ok(());
    }
    if let JsonView::Ops(ops) = json {
        let Some(target) = target else {
            return Err(Error::invalid(format!(
                "must specify a target for JSON patch {text}"
            )));
        };
        return apply_json_ops(m, &target, &ops, schema);
    }
    let Some(docs) = smp_docs(strict, !matches!(json, JsonView::NotYaml)) else {
        return Err(Error::invalid(format!(
            "trouble configuring builtin PatchTransformer: unable to parse SM or JSON patch from {}",
            patch_source(p)
        )));
    };
    if docs.is_empty() {
        return Ok(());
    }
    match target {
        Some(t) => {
            if docs.len() > 1 {
                return Err(Error::invalid(format!(
                    "Multiple Strategic-Merge Patches in one `patches` entry is not allowed to set `patches.target` field: [{}]",
                    p.path
                )));
            }
            let hits = select(m, &t, schema)?;
            let how = SmpHow {
                allow_name: p.allow_name_change,
                allow_kind: p.allow_kind_change,
                gvk_copied: true,
            };
            apply_smp_to(m, &hits, &docs[0], how, schema)
        }
        None => {
            // Without a target, each patch applies to the one resource whose
            // id (current or original) equals the patch's own; none or
            // several is an error.
            for d in &docs {
                let id = patch_id(d);
                let hits = m.find_any(&id);
                let why = match hits.as_slice() {
                    [_] => None,
                    [] => Some("no matches"),
                    _ => Some("multiple matches"),
                };
                if let Some(why) = why {
                    return Err(Error::invalid(format!(
                        "no resource matches strategic merge patch \"{id}\": {why} for Id {id}; failed to find unique target for patch {id}"
                    )));
                }
                let how = SmpHow {
                    allow_name: p.allow_name_change,
                    allow_kind: p.allow_kind_change,
                    gvk_copied: false,
                };
                apply_smp_to(m, &hits, d, how, schema)?;
            }
            Ok(())
        }
    }
}

/// Go's spelling of the first NaN or infinite float in `v`.
fn non_finite(v: &Value) -> Option<&'static str> {
    match v {
        Value::Float(f) if f.is_nan() => Some("NaN"),
        Value::Float(f) if f.is_infinite() => Some(if *f > 0.0 { "+Inf" } else { "-Inf" }),
        Value::Map(m) => m.values().find_map(non_finite),
        Value::Seq(s) => s.iter().find_map(non_finite),
        _ => None,
    }
}

/// kustomize patches a resource as JSON text and parses it again, so every
/// node is new: links, nulls written as nothing (they become explicit
/// `null`s) and kept scalar texts are forgotten. Decoding it fails on a
/// field a replacement gave text its type cannot read (see
/// `Resource::scalar_texts`), reported without the decoded map's type.
fn renew_nodes(r: &mut Resource) -> Result<()> {
    // Go's JSON encoder refuses what JSON cannot hold
    if let Some(name) = non_finite(&r.obj) {
        return Err(Error::invalid(format!("json: unsupported value: {name}")));
    }
    if let Some(e) = mistyped_error(&r.obj, &r.scalar_texts) {
        return Err(Error::invalid(
            e.strip_prefix("map[string]interface {}(nil): ")
                .unwrap_or(&e),
        ));
    }
    r.links.clear();
    r.empty_nulls.clear();
    r.quoted.clear();
    r.scalar_texts.clear();
    Ok(())
}

/// kustomize's JSON patch goes through the resource's JSON form, where an
/// untyped annotation value (a scalar setter's text, see
/// `TextKind::Untyped`) is what its text reads as: `0123` becomes 83, and
/// the annotation, read back as text, `83`.
fn resolve_untyped_annotations(r: &mut Resource) {
    let texts = std::mem::take(&mut r.scalar_texts);
    for t in &texts {
        if !matches!(t.kind, TextKind::Untyped) {
            continue;
        }
        let [PathSeg::Key(m), PathSeg::Key(a), PathSeg::Key(_)] = t.path.as_slice() else {
            continue;
        };
        if m != "metadata" || a != "annotations" {
            continue;
        }
        if let Some(v) = value_at_mut(&mut r.obj, &t.path)
            && v.as_str() == Some(t.text.as_str())
        {
            let read = super::fieldpath::resolve_value(&t.text);
            *v = Value::String(read.scalar_to_string().unwrap_or_default());
        }
    }
    r.scalar_texts = texts;
}

/// Applies JSON patch operations to one resource as kustomize does: while
/// patches run, kustomize's resources carry their bookkeeping as
/// annotations (see [`bookkeeping_annotations`]; a patch may read, copy or
/// move them), so `/metadata/annotations` exists whenever the resource has
/// any (adding `/metadata/annotations/x` to a resource without annotations
/// works, and a `test` of the whole map against the user's annotations
/// fails), while `/metadata/labels` exists only when the resource has
/// labels. They are removed afterwards, with the map when it is left empty
/// and the resource had none.
fn json_patch_resource(r: &mut Resource, ops: &Value) -> Result<()> {
    resolve_untyped_annotations(r);
    renew_nodes(r)?;
    let had_annotations = r
        .obj
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .is_some();
    let internal = bookkeeping_annotations(r);
    if !internal.is_empty()
        && let Some(Value::Map(meta)) = r.obj.get_mut("metadata")
    {
        let annotations = meta
            .entry("annotations".to_string())
            .or_insert_with(|| Value::Map(Default::default()));
        if let Value::Map(a) = annotations {
            for (k, v) in &internal {
                a.insert(k.to_string(), Value::String(v.clone()));
            }
        }
    }
    let result = apply_json6902(&mut r.obj, ops);
    if let Some(Value::Map(meta)) = r.obj.get_mut("metadata") {
        let empty = match meta.get_mut("annotations") {
            Some(Value::Map(a)) => {
                for (k, _) in &internal {
                    a.shift_remove(*k);
                }
                a.is_empty()
            }
            _ => false,
        };
        if empty && !had_annotations {
            meta.shift_remove("annotations");
        }
    }
    result.map_err(|e| Error::invalid(format!("applying JSON patch to {}: {}", r.cur_id(), e.0)))
}

fn apply_json_ops(m: &mut ResMap, target: &Selector, ops: &Value, schema: &Schema) -> Result<()> {
    let hits = select(m, target, schema)?;
    for i in hits {
        m.modify(i, |r| {
            r.store_previous_id(schema);
            json_patch_resource(r, ops)
        })
        .unwrap_or(Ok(()))?;
    }
    Ok(())
}

/// Applies one `patchesJson6902:` entry.
pub fn apply_json6902_entry(loader: &Loader, m: &mut ResMap, p: &PatchEntry) -> Result<()> {
    // kustomize configures the entry as a PatchJson6902Transformer, which
    // needs the target's name before anything else
    if let Some(t) = &p.target
        && t.get("name")
            .and_then(Value::scalar_to_string)
            .is_none_or(|n| n.is_empty())
    {
        return Err(Error::invalid(format!(
            "trouble configuring builtin PatchJson6902Transformer with config: `\n{}`: must specify the target name",
            json6902_config_text(p, t)
        )));
    }
    let text = patch_text(loader, p, "patchesJson6902")?;
    // kustomize: an empty file is an error, text that reads as null is no
    // patch, an empty list of operations is an error
    if text.is_empty() {
        return Err(Error::invalid(format!(
            "patch file '{}' empty seems to be empty",
            p.path
        )));
    }
    let ops = match JsonView::of(&text) {
        JsonView::Null => {
            return Err(Error::invalid(format!(
                "patch appears to be empty; file={}, JsonOp=null",
                p.path
            )));
        }
        JsonView::Ops(ops) if ops.as_seq().is_some_and(|s| s.is_empty()) => {
            return Err(Error::invalid(format!(
                "patch appears to be empty; file={}, JsonOp=[]",
                p.path
            )));
        }
        JsonView::Ops(ops) => ops,
        // decoded when the entry is configured, whatever it targets
        JsonView::BadOps { ops, item: t } => {
            // kustomize prints JSON text as written, YAML converted to JSON
            let json = if text.starts_with('[') {
                text.clone()
            } else {
                super::yaml::emit::to_go_json(&ops).unwrap_or_else(|_| text.clone())
            };
            let config = p
                .target
                .as_ref()
                .map(|t| json6902_config_text(p, t))
                .unwrap_or_default();
            return Err(Error::invalid(format!(
                "trouble configuring builtin PatchJson6902Transformer with config: `\n{config}`: decoding {json}: json: cannot unmarshal {t} into Go value of type jsonpatch.Operation"
            )));
        }
        JsonView::NotYaml | JsonView::NotJson | JsonView::Other => {
            return Err(Error::invalid(format!(
                "patchesJson6902: the patch must be a list of operations: {text}"
            )));
        }
    };
    let Some(t) = &p.target else {
        return Err(Error::invalid(format!(
            "must specify a target for patch {text}"
        )));
    };
    let target = if p.from_plugin {
        Selector::from_value_lenient(t, "patchesJson6902.target")
    } else {
        Selector::from_value(t, "patchesJson6902.target")
    }
    .map_err(Error::invalid)?;
    let schema = Schema::builtin();
    let hits = select(m, &target, &schema)?;
    // the legacy field runs after the name, namespace, label and annotation
    // transformers: `/metadata/annotations` exists when the resource has
    // annotations or kustomize's internal ones (a resource nothing renamed,
    // generated or recorded has none: kustomize 5.5 fails on such an add)
    for i in hits {
        m.modify(i, |r| {
            if r.has_internal_annotations() {
                return json_patch_resource(r, &ops);
            }
            renew_nodes(r)?;
            apply_json6902(&mut r.obj, &ops).map_err(|e| {
                Error::invalid(format!("applying JSON patch to {}: {}", r.cur_id(), e.0))
            })
        })
        .unwrap_or(Ok(()))?;
    }
    Ok(())
}

/// A `patchesJson6902:` entry as the PatchJson6902Transformer config that
/// kustomize's configuration errors print: `jsonOp`, `path` and the
/// target's non-empty fields, keys sorted.
fn json6902_config_text(p: &PatchEntry, t: &Value) -> String {
    let mut config = Mapping::new();
    if !p.patch.is_empty() {
        config.insert("jsonOp".into(), Value::from(p.patch.as_str()));
    }
    if !p.path.is_empty() {
        config.insert("path".into(), Value::from(p.path.as_str()));
    }
    let mut target: Vec<(&String, &Value)> = t
        .as_map()
        .into_iter()
        .flatten()
        .filter(|(_, v)| v.scalar_to_string().is_none_or(|s| !s.is_empty()))
        .collect();
    target.sort_by(|a, b| a.0.cmp(b.0));
    config.insert(
        "target".into(),
        Value::Map(
            target
                .into_iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
    );
    let mut text = String::new();
    if super::yaml::write_document(&mut text, &Value::Map(config)).is_err() {
        text.clear();
    }
    text
}
