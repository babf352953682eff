//! Strategic-merge patches as kustomize v5.5 applies them.
//!
//! kustomize does not use apimachinery's strategic merge: it walks the
//! target and the patch together with kyaml's `merge2` walker (patch list
//! items *prepended*). This module reproduces that walker on the document
//! model. Its rules, checked against `kubectl kustomize` (v5.5.0):
//!
//! * The schema comes from the target's (else the patch's) `apiVersion` +
//!   `kind`, then follows the field path. Below a field the schema does not
//!   know, a map that has its own `apiVersion` and `kind` picks up that
//!   type's schema.
//! * Maps merge key by key. A `null` in the patch removes the field; `null`s
//!   inside a map the patch *adds* are dropped too. A `null` already in the
//!   target and not touched by the patch is kept.
//! * A list is merged by key only when the schema gives it a patch strategy
//!   containing `merge` (`merge`, `merge,retainKeys`); keys are
//!   `x-kubernetes-list-map-keys` if present, else the
//!   `x-kubernetes-patch-merge-key`. Every other list (no schema: custom
//!   resources, unknown fields; no strategy: `args`, `tolerations`) is
//!   replaced wholesale by the patch's list, verbatim. No merge key is
//!   inferred from the elements.
//! * Merged list order: the patch's items first (in patch order), then the
//!   target's other items; an item present in both stays the target's,
//!   merged in place. Items whose keys match collapse into one (duplicates
//!   in the target too). With several keys (`containerPort` + `protocol`),
//!   key tuples that agree wherever both have a value are unified first.
//! * Primitive lists with strategy `merge` (`finalizers`) become the set
//!   union: patch values, then the target's others.
//! * `$patch: delete|replace|merge` in maps and list items (and a lone
//!   `{$patch: ...}` item in a merged list) are honoured and removed. A list
//!   item with `$patch: replace` that matches a target item leaves the
//!   target item unchanged (kyaml's quirk).
//! * `$setElementOrder/...`, `$deleteFromPrimitiveList/...` and `$retainKeys`
//!   are not directives for kyaml: they are copied into the result like any
//!   other field. `x-kubernetes-list-type` is not consulted.
//! * An item of a merged list that lacks the merge key makes kyaml delete
//!   every target item that *has* the key (and drops the keyless item).
//! * Changing a field's node kind (scalar/map/list) is an error.
//! * A top-level `$patch: delete` deletes the resource; a top-level
//!   `$patch: replace` leaves it unchanged (kustomize keeps only in-place
//!   changes of the resource node).
//!
//! Known differences: kyaml compares merge-key values by their YAML source
//! text, here by the value's canonical text (`0x50` and `80` differ there,
//! not here); an untouched target field whose value is an *empty* scalar
//! (`field:` with nothing after the colon) is dropped by kustomize but kept
//! here, since the document model cannot tell it from `null`.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashSet};

use crate::kustomize::openapi::{Schema, SchemaRef};
use crate::kustomize::patch::PatchError;
use crate::kustomize::yaml::{Mapping, Value, parse};

/// The directive key of strategic merge.
const DIRECTIVE: &str = "$patch";

/// Applies a strategic-merge patch document to a resource, as kustomize's
/// patchesStrategicMerge / patches (SMP) do. Returns `Ok(None)` when the
/// patch deletes the whole resource (`$patch: delete` at the top level).
///
/// Name, kind and namespace are merged like any other field; restoring them
/// (kustomize's `allowNameChange`/`allowKindChange` handling) is the
/// caller's job.
pub fn strategic_merge(
    target: &Value,
    patch: &Value,
    schema: &Schema,
) -> Result<Option<Value>, PatchError> {
    strategic_merge_owned(target.clone(), patch, schema)
}

/// [`strategic_merge`] taking the target by value, which saves a deep copy
/// when the caller replaces the resource with the result anyway.
pub fn strategic_merge_owned(
    target: Value,
    patch: &Value,
    schema: &Schema,
) -> Result<Option<Value>, PatchError> {
    merge_with(target, patch, schema, false)
}

/// The same walk on plain data that is decoded, not printed, afterwards
/// (kustomize merging Helm values with kyaml's `merge2.Merge`): a scalar
/// written over a quoted string keeps its own type, since the decoder
/// reads the node's tag, not its quoting.
pub fn merge_values(
    target: &Value,
    patch: &Value,
    schema: &Schema,
) -> Result<Option<Value>, PatchError> {
    merge_with(target.clone(), patch, schema, true)
}

fn merge_with(
    target: Value,
    patch: &Value,
    schema: &Schema,
    keep_types: bool,
) -> Result<Option<Value>, PatchError> {
    let walker = Walker { schema, keep_types };
    let replaces_top = matches!(target, Value::Map(_))
        && patch.get(DIRECTIVE).is_some_and(|d| text_eq(d, "replace"));
    if replaces_top {
        // kustomize keeps only in-place changes of the resource node: a
        // top-level `$patch: replace` yields a new node, which is dropped.
        // The patch is still walked (its errors still count).
        let mut shell = Mapping::new();
        for key in ["apiVersion", "kind"] {
            if let Some(v) = target.get(key) {
                shell.insert(key.to_string(), v.clone());
            }
        }
        let probe = Src::Pair(Some(Value::Map(shell)), Some(patch.clone()));
        walker.walk(probe, None).map_err(PatchError)?;
        return Ok(Some(target));
    }
    let res = walker
        .walk(Src::Pair(Some(target), Some(patch.clone())), None)
        .map_err(PatchError)?;
    Ok(match res {
        Res::Clear => None,
        Res::Val(v, _) => Some(v),
    })
}

/// The nodes walked together: the target's and the patch's (either may be
/// missing), or one node walked against itself — what kyaml does once it
/// has taken a node from the patch (the copy is merged with itself, which
/// applies and strips its directives).
enum Src {
    Pair(Option<Value>, Option<Value>),
    Same(Value),
}

/// Where a walk result came from.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Provenance {
    /// The target's node, merged in place.
    Dest,
    /// The patch's node.
    Origin,
    /// A target `null` that the patch did not touch: kept as is.
    KeptNull,
}

/// The result of walking one node.
enum Res {
    /// Remove the field / list item.
    Clear,
    Val(Value, Provenance),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Directive {
    Merge,
    Replace,
    Delete,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// Every node missing or `null`.
    Empty,
    Scalar,
    Map,
    Seq,
}

struct Walker<'s> {
    schema: &'s Schema,
    /// A scalar written over another keeps its type (see [`merge_values`]).
    keep_types: bool,
}

/// Stands, while a patch is merged, for a target null written as nothing
/// (`key:`): kyaml drops those where the merge walks, unless the patch sets
/// them (see `Resource::empty_nulls`).
pub const EMPTY_NULL_MARK: &str = "\u{0}krmsync:empty-null\u{0}";

/// [`EMPTY_NULL_MARK`] for such a null that reads as `""` where it stands
/// (in a flow collection, or an annotation value).
pub const EMPTY_TEXT_NULL_MARK: &str = "\u{0}krmsync:empty-text-null\u{0}";

fn is_empty_null(v: &Value) -> bool {
    matches!(v, Value::String(s) if s == EMPTY_NULL_MARK || s == EMPTY_TEXT_NULL_MARK)
}

impl<'s> Walker<'s> {
    fn walk(&self, src: Src, schema: Option<SchemaRef<'s>>) -> Result<Res, String> {
        let src = match src {
            Src::Pair(Some(dest), None) if is_empty_null(&dest) => return Ok(Res::Clear),
            Src::Pair(Some(dest), origin) if is_empty_null(&dest) => {
                Src::Pair(Some(Value::Null), origin)
            }
            Src::Pair(Some(dest), None) => return self.untouched(dest, schema),
            other => other,
        };
        let schema = schema.or_else(|| self.meta_schema(&src));
        let kind = check_kinds(&src)?;
        match kind {
            Kind::Empty | Kind::Map => self.walk_map(src, schema),
            Kind::Seq if schema.is_some_and(|s| s.has_merge_strategy()) => {
                self.walk_merge_list(src, schema)
            }
            Kind::Seq | Kind::Scalar => Ok(match src {
                // Scalars and replaced lists: the patch's node wins when
                // present (a `null` then clears the field), keeping the
                // target's quoting.
                Src::Pair(dest, Some(origin)) => Res::Val(
                    match &dest {
                        Some(d) if parse::folded_parts(&origin).is_some() => {
                            parse::folded_written_over(d, origin)
                        }
                        Some(d) if !self.keep_types => parse::written_over(d, origin),
                        _ => origin,
                    },
                    Provenance::Origin,
                ),
                Src::Pair(Some(dest), None) => Res::Val(dest, Provenance::Dest),
                Src::Pair(None, None) => Res::Clear,
                Src::Same(v) => Res::Val(v, Provenance::Dest),
            }),
        }
    }

    /// A target node the patch does not mention. kyaml still walks it, which
    /// matters only for merged lists that are not already in normal form
    /// (duplicate, partial or missing keys, null or empty items); those take
    /// the general path, everything else is kept as is.
    fn untouched(&self, dest: Value, schema: Option<SchemaRef<'s>>) -> Result<Res, String> {
        let schema = schema.or_else(|| self.meta_schema_of(&dest));
        match dest {
            Value::Null => Ok(Res::Val(Value::Null, Provenance::KeptNull)),
            Value::Map(mut m) => {
                // Untouched fields are never removed (but for nulls written
                // as nothing): update them in place.
                m.retain(|_, v| !is_empty_null(v));
                for (name, slot) in m.iter_mut() {
                    if !is_collection(slot) {
                        // Scalars and nulls are kept as they are.
                        continue;
                    }
                    let v = std::mem::take(slot);
                    if let Res::Val(v, _) = self.untouched(v, schema.and_then(|s| s.field(name)))? {
                        *slot = v;
                    }
                }
                Ok(Res::Val(Value::Map(m), Provenance::Dest))
            }
            Value::Seq(mut items) if schema.is_some_and(|s| s.has_merge_strategy()) => {
                let keys: Vec<&str> = schema.map(|s| s.merge_keys()).unwrap_or_default();
                if !in_normal_form(&items, &keys) {
                    return self.walk_merge_list(Src::Pair(Some(Value::Seq(items)), None), schema);
                }
                let elem_schema = schema.and_then(|s| s.elements());
                for item in &mut items {
                    if let Res::Val(v, _) = self.untouched(std::mem::take(item), elem_schema)? {
                        *item = v;
                    }
                }
                Ok(Res::Val(Value::Seq(items), Provenance::Dest))
            }
            other => Ok(Res::Val(other, Provenance::Dest)),
        }
    }

    /// The schema of the type named by a map's own `apiVersion` and `kind`.
    fn meta_schema_of(&self, v: &Value) -> Option<SchemaRef<'s>> {
        schema_of_map(self.schema, v)
    }

    /// The schema named by the walked nodes' own `apiVersion` and `kind`
    /// (target first).
    fn meta_schema(&self, src: &Src) -> Option<SchemaRef<'s>> {
        let lookup = |v: &Value| self.meta_schema_of(v);
        match src {
            Src::Pair(dest, origin) => dest
                .as_ref()
                .and_then(lookup)
                .or_else(|| origin.as_ref().and_then(lookup)),
            Src::Same(v) => lookup(v),
        }
    }

    fn walk_map(&self, src: Src, schema: Option<SchemaRef<'s>>) -> Result<Res, String> {
        match src {
            Src::Pair(dest, mut origin) => {
                let dest_missing = dest.as_ref().is_none_or(Value::is_null);
                if dest_missing {
                    // Add the patch's node (errors in its directive are
                    // ignored at this point).
                    let ps = match origin.as_mut() {
                        Some(Value::Map(m)) => directive_of_map(m).unwrap_or(None),
                        _ => Some(Directive::Merge),
                    };
                    if ps == Some(Directive::Delete) {
                        return Ok(Res::Clear);
                    }
                    return match origin {
                        None if dest.is_some() => Ok(Res::Val(Value::Null, Provenance::KeptNull)),
                        None => Ok(Res::Clear),
                        Some(Value::Map(m)) => self.fields_same(m, schema, Provenance::Origin),
                        // A `null` (or a node kyaml cannot merge): cleared.
                        Some(_) => Ok(Res::Clear),
                    };
                }
                if matches!(origin, Some(Value::Null)) {
                    return Ok(Res::Clear);
                }
                let ps = match origin.as_mut() {
                    Some(Value::Map(m)) => directive_of_map(m)?,
                    _ => Some(Directive::Merge),
                };
                match (ps, dest, origin) {
                    (Some(Directive::Delete), _, _) => Ok(Res::Clear),
                    (Some(Directive::Replace), _, Some(Value::Map(o))) => {
                        self.fields_same(o, schema, Provenance::Origin)
                    }
                    (_, Some(Value::Map(d)), Some(Value::Map(o))) => {
                        self.fields_pair(d, Some(o), schema)
                    }
                    (_, Some(Value::Map(d)), _) => self.fields_pair(d, None, schema),
                    (_, dest, _) => Ok(dest.map_or(Res::Clear, |d| Res::Val(d, Provenance::Dest))),
                }
            }
            Src::Same(Value::Map(mut m)) => match directive_of_map(&mut m)? {
                Some(Directive::Delete) => Ok(Res::Clear),
                _ => self.fields_same(m, schema, Provenance::Dest),
            },
            Src::Same(_) => Ok(Res::Clear),
        }
    }

    /// Merges the fields of a target map with those of a patch map, in
    /// sorted field order, into the target map.
    fn fields_pair(
        &self,
        mut dest: Mapping,
        mut origin: Option<Mapping>,
        schema: Option<SchemaRef<'s>>,
    ) -> Result<Res, String> {
        let mut names: BTreeSet<String> = dest.keys().cloned().collect();
        if let Some(o) = &origin {
            names.extend(o.keys().cloned());
        }
        for name in names {
            let d = dest.get_mut(&name).map(std::mem::take);
            let o = origin
                .as_mut()
                .and_then(|o| o.get_mut(&name))
                .map(std::mem::take);
            // Only maps and lists use a schema.
            let child =
                if d.as_ref().is_some_and(is_collection) || o.as_ref().is_some_and(is_collection) {
                    schema.and_then(|s| s.field(&name))
                } else {
                    None
                };
            let res = self.walk(Src::Pair(d, o), child)?;
            set_field(&mut dest, name, res);
        }
        Ok(Res::Val(Value::Map(dest), Provenance::Dest))
    }

    /// Walks every field of a node taken from the patch against itself.
    fn fields_same(
        &self,
        mut map: Mapping,
        schema: Option<SchemaRef<'s>>,
        from: Provenance,
    ) -> Result<Res, String> {
        let names: BTreeSet<String> = map.keys().cloned().collect();
        for name in names {
            let Some(v) = map.get_mut(&name).map(std::mem::take) else {
                continue;
            };
            let child = if is_collection(&v) {
                schema.and_then(|s| s.field(&name))
            } else {
                None
            };
            let res = self.walk(Src::Same(v), child)?;
            set_field(&mut map, name, res);
        }
        Ok(Res::Val(Value::Map(map), from))
    }

    /// A list whose schema says `merge`.
    fn walk_merge_list(&self, src: Src, schema: Option<SchemaRef<'s>>) -> Result<Res, String> {
        let lists = match src {
            Src::Pair(dest, origin) => {
                if dest.as_ref().is_none_or(Value::is_null) {
                    match origin {
                        Some(Value::Seq(o)) => Lists::same(o),
                        _ => return Ok(Res::Clear),
                    }
                } else if matches!(origin, Some(Value::Null)) {
                    return Ok(Res::Clear);
                } else {
                    let Some(Value::Seq(d)) = dest else {
                        return Ok(Res::Clear);
                    };
                    match origin {
                        Some(Value::Seq(mut o)) => match directive_of_list(&mut o)? {
                            Directive::Delete => return Ok(Res::Clear),
                            Directive::Replace => Lists::same(o),
                            Directive::Merge => Lists {
                                dest: d,
                                origin: Some(o),
                                same: false,
                            },
                        },
                        _ => Lists {
                            dest: d,
                            origin: None,
                            same: false,
                        },
                    }
                }
            }
            Src::Same(Value::Seq(mut l)) => match directive_of_list(&mut l)? {
                Directive::Delete => return Ok(Res::Clear),
                _ => Lists::same(l),
            },
            Src::Same(_) => return Ok(Res::Clear),
        };
        let mut keys: Vec<String> = schema
            .map(|s| s.merge_keys().into_iter().map(str::to_string).collect())
            .unwrap_or_default();
        let elem_schema = schema.and_then(|s| s.elements());
        let mut values = lists.key_values(&keys);
        if values.is_empty() && keys.is_empty() {
            // A list of scalars (`finalizers`): its items are their own keys.
            keys = vec![String::new()];
            values = lists.primitive_values();
        }
        let merged = self.merge_items(lists, values, &keys, elem_schema)?;
        Ok(Res::Val(Value::Seq(merged), Provenance::Dest))
    }

    /// kyaml's `setAssociativeSequenceElements` with prepend order: walks
    /// the items of both lists matched by key, collects the results (patch
    /// order first), then sets the target's remaining items after them.
    fn merge_items(
        &self,
        mut lists: Lists,
        mut values: Vec<Vec<String>>,
        keys: &[String],
        elem_schema: Option<SchemaRef<'s>>,
    ) -> Result<Vec<Value>, String> {
        if keys.len() > 1 {
            merge_partial_values(&mut values);
        }
        let mut items: Vec<Value> = Vec::new();
        let mut last_keys: Option<Vec<String>> = None;
        for value in &values {
            if value.is_empty() {
                continue;
            }
            let (vkeys, vvals) = valid_keys(&values, value, keys);
            last_keys = Some(vkeys.clone());
            let (lkeys, lvals) = valid_keys(std::slice::from_ref(&vvals), &vvals, &vkeys);
            let d_idx = element_list(&lists.dest, &lkeys, &lvals);
            let src = if lists.same {
                d_idx
                    .and_then(|i| lists.dest.get(i))
                    .cloned()
                    .map_or(Src::Pair(None, None), Src::Same)
            } else {
                let o = lists
                    .origin
                    .as_ref()
                    .and_then(|o| element_list(o, &lkeys, &lvals).and_then(|i| o.get(i)))
                    .cloned();
                Src::Pair(d_idx.and_then(|i| lists.dest.get(i)).cloned(), o)
            };
            let res = self.walk(src, elem_schema)?;
            let (mut val, from) = match res {
                Res::Val(v, from) if !v.is_null() && !is_empty_map(&v) => (v, from),
                _ => {
                    element_setter(&mut lists.dest, &vkeys, &vvals, None)?;
                    continue;
                }
            };
            for (k, v) in vkeys.iter().zip(&vvals) {
                if v.is_empty() {
                    continue;
                }
                match &mut val {
                    Value::Map(m) if !k.is_empty() => {
                        if !m.contains_key(k) {
                            m.insert(k.clone(), plain_scalar(v));
                        }
                    }
                    Value::Map(m) if m.contains_key(k) => {}
                    other if k.is_empty() && is_scalar(other) => {}
                    other => return Err(wrong_kind(expected_kind(k), other)),
                }
            }
            // The target's item was merged in place.
            if (lists.same || from == Provenance::Dest)
                && let Some(slot) = d_idx.and_then(|i| lists.dest.get_mut(i))
            {
                *slot = val.clone();
            }
            element_setter(&mut items, &vkeys, &vvals, Some(val))?;
        }
        match last_keys {
            Some(vkeys) => {
                append_list_node(&mut items, &lists.dest, &vkeys)?;
                Ok(items)
            }
            None => Ok(lists.dest),
        }
    }
}

/// The two lists of a merged list field (`same`: one list merged with
/// itself, stored in `dest`).
struct Lists {
    dest: Vec<Value>,
    origin: Option<Vec<Value>>,
    same: bool,
}

impl Lists {
    fn same(list: Vec<Value>) -> Lists {
        Lists {
            dest: list,
            origin: None,
            same: true,
        }
    }

    /// The sources in kyaml's prepend order: patch first, then target.
    fn sources(&self) -> [Option<&Vec<Value>>; 2] {
        if self.same {
            [Some(&self.dest), Some(&self.dest)]
        } else {
            [self.origin.as_ref(), Some(&self.dest)]
        }
    }

    /// The distinct merge-key value tuples of all items, patch first.
    fn key_values(&self, keys: &[String]) -> Vec<Vec<String>> {
        let mut out: Vec<Vec<String>> = Vec::new();
        if keys.is_empty() {
            return out;
        }
        for list in self.sources().into_iter().flatten() {
            for item in list {
                let vals: Vec<String> = keys.iter().map(|k| key_text(item, k)).collect();
                if !out.contains(&vals) {
                    out.push(vals);
                }
            }
        }
        out
    }

    /// The distinct scalar texts of all items, patch first.
    fn primitive_values(&self) -> Vec<Vec<String>> {
        let mut out: Vec<Vec<String>> = Vec::new();
        for list in self.sources().into_iter().flatten() {
            for item in list {
                let t = vec![raw_text(item)];
                if !out.contains(&t) {
                    out.push(t);
                }
            }
        }
        out
    }
}

/// Sets or clears a map field from a walk result.
fn set_field(map: &mut Mapping, name: String, res: Res) {
    match res {
        Res::Clear | Res::Val(Value::Null, Provenance::Dest | Provenance::Origin) => {
            map.shift_remove(&name);
        }
        Res::Val(v, _) => {
            map.insert(name, v);
        }
    }
}

/// Reads and removes a map's `$patch` directive. `Ok(None)` stands for an
/// unknown directive whose error the caller ignores.
fn directive_of_map(m: &mut Mapping) -> Result<Option<Directive>, String> {
    let Some(v) = m.get(DIRECTIVE) else {
        return Ok(Some(Directive::Merge));
    };
    let text = raw_text(v);
    let d = parse_directive(&text)?;
    m.shift_remove(DIRECTIVE);
    Ok(Some(d))
}

/// A list's directive: a map item whose only key is `$patch`; such items
/// are removed.
fn directive_of_list(list: &mut Vec<Value>) -> Result<Directive, String> {
    let Some(item) = list
        .iter()
        .find_map(|e| e.as_map().filter(|m| m.contains_key(DIRECTIVE)))
    else {
        return Ok(Directive::Merge);
    };
    if item.len() > 1 {
        return Ok(Directive::Merge);
    }
    let text = item.get(DIRECTIVE).map(raw_text).unwrap_or_default();
    let d = parse_directive(&text)?;
    element_setter(list, &[DIRECTIVE.to_string()], &[text], None)?;
    Ok(d)
}

fn parse_directive(text: &str) -> Result<Directive, String> {
    match text {
        "merge" => Ok(Directive::Merge),
        "replace" => Ok(Directive::Replace),
        "delete" => Ok(Directive::Delete),
        other => Err(format!("unknown patch strategy '{other}'")),
    }
}

/// The keys an item is matched by: those that have a value in *any* of
/// the tuples (all keys when none has), with this tuple's values for them.
fn valid_keys(
    all: &[Vec<String>],
    values: &[String],
    keys: &[String],
) -> (Vec<String>, Vec<String>) {
    let used = |i: usize| {
        all.iter()
            .any(|vals| vals.get(i).is_some_and(|v| !v.is_empty()))
    };
    let positions: Vec<usize> = (0..keys.len()).filter(|&i| used(i)).collect();
    if positions.is_empty() {
        return (keys.to_vec(), values.to_vec());
    }
    let vk = positions
        .iter()
        .filter_map(|&i| keys.get(i).cloned())
        .collect();
    let vv = positions
        .iter()
        .filter_map(|&i| values.get(i).cloned())
        .collect();
    (vk, vv)
}

/// kyaml's `mergeValues`: key tuples that agree wherever both have a value
/// (and share one) are unified, e.g. `[8080, ""]` and `[8080, TCP]`.
fn merge_partial_values(values: &mut [Vec<String>]) {
    for i in 0..values.len() {
        let Some(first) = values.get(i).cloned() else {
            continue;
        };
        for j in 0..values.len() {
            let Some(second) = values.get(j) else {
                continue;
            };
            if let Some(merged) = unify_values(&first, second) {
                if let Some(slot) = values.get_mut(i) {
                    *slot = merged.clone();
                }
                if let Some(slot) = values.get_mut(j) {
                    *slot = merged;
                }
            }
        }
    }
}

fn unify_values(a: &[String], b: &[String]) -> Option<Vec<String>> {
    if a.len() != b.len() {
        return None;
    }
    let mut common = false;
    let mut out = Vec::with_capacity(a.len());
    for (x, y) in a.iter().zip(b) {
        if x == y {
            common = true;
            out.push(x.clone());
        } else if !x.is_empty() && !y.is_empty() {
            return None;
        } else if !x.is_empty() {
            out.push(x.clone());
        } else {
            out.push(y.clone());
        }
    }
    common.then_some(out)
}

/// Index of the first map item whose fields `keys` have the texts `values`.
fn element_list(list: &[Value], keys: &[String], values: &[String]) -> Option<usize> {
    if keys.first().is_none_or(String::is_empty) {
        let want = values.first().map(String::as_str).unwrap_or_default();
        return list.iter().position(|item| text_eq(item, want));
    }
    list.iter().position(|item| {
        let Value::Map(m) = item else {
            return false;
        };
        keys.iter()
            .zip(values)
            .all(|(k, v)| m.get(k).is_some_and(|f| text_eq(f, v)))
    })
}

/// kyaml's `ElementSetter`: replaces (or with `element: None` deletes) the
/// items matching `keys`/`values`, appending `element` when none matches.
/// Null and empty-map items are dropped on the way; an empty `values`
/// drops every item it does not match.
fn element_setter(
    list: &mut Vec<Value>,
    keys: &[String],
    values: &[String],
    element: Option<Value>,
) -> Result<(), String> {
    let default_keys = [String::new()];
    let keys = if keys.is_empty() {
        &default_keys[..]
    } else {
        keys
    };
    let mapping_setter = keys.first().is_some_and(|k| !k.is_empty())
        && values.first().is_some_and(|v| !v.is_empty());
    let mut kept = Vec::with_capacity(list.len() + 1);
    // Matched items are kept in place for now and replaced at the end
    // (cloning only where they differ from `element`).
    let mut matches = Vec::new();
    for item in std::mem::take(list) {
        if item.is_null() || is_empty_map(&item) {
            continue;
        }
        if !matches!(item, Value::Map(_)) && mapping_setter {
            kept.push(item);
            continue;
        }
        let mut matched = false;
        let mut found = true;
        for (j, key) in keys.iter().enumerate() {
            if let Some(v) = values.get(j) {
                matched = field_matches(&item, key, v)?;
            }
            if !matched {
                found = false;
                break;
            }
        }
        if !found {
            if !values.is_empty() {
                kept.push(item);
            }
            continue;
        }
        if element.is_some() {
            matches.push(kept.len());
            kept.push(item);
        }
    }
    if let Some(e) = element {
        match matches.split_last() {
            Some((&last, rest)) => {
                for &i in rest {
                    if let Some(slot) = kept.get_mut(i)
                        && *slot != e
                    {
                        *slot = e.clone();
                    }
                }
                if let Some(slot) = kept.get_mut(last)
                    && *slot != e
                {
                    *slot = e;
                }
            }
            None if !e.is_null() => kept.push(e),
            None => {}
        }
    }
    *list = kept;
    Ok(())
}

/// kyaml's `FieldMatcher` as used by `ElementSetter`: the item has field
/// `name` (with text `value` unless empty); with an empty `name` the item is
/// a scalar with that text.
fn field_matches(item: &Value, name: &str, value: &str) -> Result<bool, String> {
    if item.is_null() {
        return Ok(false);
    }
    if name.is_empty() {
        if !is_scalar(item) {
            return Err(wrong_kind("ScalarNode", item));
        }
        return Ok(text_eq(item, value));
    }
    let Value::Map(m) = item else {
        return Err(wrong_kind("MappingNode", item));
    };
    Ok(m.get(name)
        .is_some_and(|f| value.is_empty() || text_eq(f, value)))
}

/// kyaml's `appendListNode`: sets each of `src`'s items into `dst` by key
/// (replacing a match, else appending).
fn append_list_node(dst: &mut Vec<Value>, src: &[Value], keys: &[String]) -> Result<(), String> {
    let primitive = keys.first().is_none_or(String::is_empty);
    for item in src {
        if primitive {
            element_setter(dst, &[String::new()], &[raw_text(item)], Some(item.clone()))?;
            continue;
        }
        let mut vals = Vec::new();
        for key in keys {
            let field = match item {
                Value::Null => None,
                Value::Map(m) => m.get(key),
                other => return Err(wrong_kind("MappingNode", other)),
            };
            match field {
                Some(f) => vals.push(raw_text(f)),
                None => dst.push(item.clone()),
            }
        }
        if keys.len() > 1 {
            element_setter(dst, keys, &vals, None)?;
        }
        element_setter(dst, keys, &vals, Some(item.clone()))?;
    }
    Ok(())
}

/// Checks that all present, non-null nodes have the same kind and returns
/// it (kyaml takes the first one's kind: the target's).
fn check_kinds(src: &Src) -> Result<Kind, String> {
    let nodes: [Option<&Value>; 2] = match src {
        Src::Pair(d, o) => [d.as_ref(), o.as_ref()],
        Src::Same(v) => [Some(v), None],
    };
    let kind_of = |v: &Value| match v {
        Value::Null => Kind::Empty,
        Value::Map(_) => Kind::Map,
        Value::Seq(_) => Kind::Seq,
        _ => Kind::Scalar,
    };
    let kind = nodes
        .iter()
        .flatten()
        .map(|v| kind_of(v))
        .find(|k| *k != Kind::Empty)
        .unwrap_or(Kind::Empty);
    for node in nodes.iter().flatten() {
        let k = kind_of(node);
        if k != Kind::Empty && k != kind {
            return Err(wrong_kind(kind_name(kind), node));
        }
    }
    Ok(kind)
}

/// The node kind a key lookup needs (`""` addresses a scalar item).
fn expected_kind(key: &str) -> &'static str {
    if key.is_empty() {
        "ScalarNode"
    } else {
        "MappingNode"
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Map | Kind::Empty => "MappingNode",
        Kind::Seq => "SequenceNode",
        Kind::Scalar => "ScalarNode",
    }
}

fn wrong_kind(expected: &str, node: &Value) -> String {
    let got = match node {
        Value::Map(_) => "MappingNode",
        Value::Seq(_) => "SequenceNode",
        _ => "ScalarNode",
    };
    format!(
        "wrong node kind: expected {expected} but got {got}: node contents:\n{}",
        node_text(node)
    )
}

/// A block-style YAML rendering of a node for error messages (kyaml prints
/// the offending node).
fn node_text(v: &Value) -> String {
    block_lines(v).join("\n")
}

fn block_lines(v: &Value) -> Vec<String> {
    match v {
        Value::Map(m) if !m.is_empty() => {
            let mut lines = Vec::new();
            for (k, val) in m {
                match val {
                    Value::Map(inner) if !inner.is_empty() => {
                        lines.push(format!("{k}:"));
                        lines.extend(block_lines(val).into_iter().map(|l| format!("  {l}")));
                    }
                    Value::Seq(inner) if !inner.is_empty() => {
                        lines.push(format!("{k}:"));
                        lines.extend(block_lines(val));
                    }
                    other => lines.push(format!("{k}: {}", scalar_text(other))),
                }
            }
            lines
        }
        Value::Seq(items) if !items.is_empty() => {
            let mut lines = Vec::new();
            for item in items {
                for (i, l) in block_lines(item).into_iter().enumerate() {
                    lines.push(if i == 0 {
                        format!("- {l}")
                    } else {
                        format!("  {l}")
                    });
                }
            }
            lines
        }
        other => vec![scalar_text(other)],
    }
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::Map(_) => "{}".to_string(),
        Value::Seq(_) => "[]".to_string(),
        other => raw_text(other),
    }
}

fn is_collection(v: &Value) -> bool {
    matches!(v, Value::Map(_) | Value::Seq(_))
}

fn is_scalar(v: &Value) -> bool {
    !matches!(v, Value::Map(_) | Value::Seq(_))
}

fn is_empty_map(v: &Value) -> bool {
    matches!(v, Value::Map(m) if m.is_empty())
}

/// A node's scalar text as kyaml compares it (`""` for maps and lists).
fn raw_text(v: &Value) -> String {
    match v {
        Value::Map(_) | Value::Seq(_) => String::new(),
        Value::Null => "null".to_string(),
        other => other.scalar_to_string().unwrap_or_default(),
    }
}

/// Whether kyaml's merge of a list with nothing leaves it unchanged: every
/// item is a non-empty map with a distinct tuple of non-empty scalar key
/// values (or, without keys, a non-null scalar with a distinct text).
fn in_normal_form<'a>(items: &'a [Value], keys: &[&str]) -> bool {
    let key_of = |v: &'a Value| -> Option<Cow<'a, str>> {
        match v {
            Value::Map(_) | Value::Seq(_) | Value::Null => None,
            Value::String(s) => Some(Cow::Borrowed(s.as_str())).filter(|t| !t.is_empty()),
            other => Some(Cow::<str>::Owned(raw_text(other))).filter(|t| !t.is_empty()),
        }
    };
    let mut seen: HashSet<Vec<Cow<'a, str>>> = HashSet::with_capacity(items.len());
    for item in items {
        let tuple: Option<Vec<Cow<'a, str>>> = if keys.is_empty() {
            key_of(item).map(|t| vec![t])
        } else {
            match item {
                Value::Map(m) if !m.is_empty() => {
                    keys.iter().map(|k| m.get(*k).and_then(key_of)).collect()
                }
                _ => None,
            }
        };
        let Some(t) = tuple else {
            return false;
        };
        if !seen.insert(t) {
            return false;
        }
    }
    true
}

/// `raw_text(v) == want`, without allocating for the common cases.
fn text_eq(v: &Value, want: &str) -> bool {
    match v {
        Value::String(s) => s == want,
        Value::Map(_) | Value::Seq(_) => want.is_empty(),
        Value::Null => want == "null",
        Value::Bool(b) => want == if *b { "true" } else { "false" },
        Value::Int(i) => int_text_eq(i128::from(*i), want),
        Value::UInt(u) => int_text_eq(i128::from(*u), want),
        Value::Float(_) => raw_text(v) == want,
    }
}

/// Whether `want` is the canonical decimal text of `n`.
fn int_text_eq(n: i128, want: &str) -> bool {
    let digits = want.strip_prefix('-').unwrap_or(want);
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && want != "-0";
    canonical && want.parse::<i128>() == Ok(n)
}

/// The text of an item's merge-key field; `""` when the item is not a map,
/// lacks the field, or the field is null or an empty map/list.
fn key_text(item: &Value, key: &str) -> String {
    match item.get(key) {
        None | Some(Value::Null) => String::new(),
        Some(v) => raw_text(v),
    }
}

/// The value of an untagged plain YAML scalar with this text (how kyaml's
/// re-inserted merge keys read back).
fn plain_scalar(text: &str) -> Value {
    match text {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => text
            .parse::<i64>()
            .map(Value::Int)
            .unwrap_or_else(|_| Value::String(text.to_string())),
    }
}

/// The schema of the type named by a map's own `apiVersion` and `kind` (an
/// object embedded in another, such as a List item), as the merge finds it.
pub(crate) fn schema_of_map<'s>(schema: &'s Schema, v: &Value) -> Option<SchemaRef<'s>> {
    let av = meta_string(v, "apiVersion")?;
    let kind = meta_string(v, "kind")?;
    schema.resource(&av, &kind)
}

/// `apiVersion`/`kind` of a map, when a non-empty scalar.
fn meta_string(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::Map(_) | Value::Seq(_) | Value::Null => None,
        other => Some(raw_text(other)).filter(|s| !s.is_empty()),
    }
}

#[cfg(test)]
mod tests {
    //! Expected values were produced by `kubectl kustomize` (kustomize
    //! v5.5.0) on the same target and patch.
    use super::*;

    fn json(text: &str) -> Value {
        fn conv(v: &serde_json::Value) -> Value {
            match v {
                serde_json::Value::Null => Value::Null,
                serde_json::Value::Bool(b) => Value::Bool(*b),
                serde_json::Value::Number(n) => n
                    .as_i64()
                    .map(Value::Int)
                    .unwrap_or_else(|| Value::Float(n.as_f64().unwrap_or_default())),
                serde_json::Value::String(s) => Value::String(s.clone()),
                serde_json::Value::Array(a) => Value::Seq(a.iter().map(conv).collect()),
                serde_json::Value::Object(o) => {
                    Value::Map(o.iter().map(|(k, v)| (k.clone(), conv(v))).collect())
                }
            }
        }
        conv(&serde_json::from_str(text).expect("test JSON"))
    }

    fn merge(target: &str, patch: &str) -> Result<Option<Value>, PatchError> {
        strategic_merge(&json(target), &json(patch), &Schema::builtin())
    }

    fn check(target: &str, patch: &str, expected: Option<&str>) {
        let got = merge(target, patch).expect("patch applies");
        assert_eq!(got, expected.map(json));
    }

    fn check_err(target: &str, patch: &str) -> String {
        merge(target, patch).expect_err("patch fails").0
    }

    #[test]
    fn map_merge_null_delete_scalar_replace() {
        check(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 1, "paused": true, "strategy": {"type": "Recreate"}, "template": {"metadata": {"labels": {"a": "x", "b": "y"}}}}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 3, "paused": null, "template": {"metadata": {"labels": {"b": null, "c": "z"}}}, "minReadySeconds": 5}}"#,
            Some(
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"minReadySeconds": 5, "replicas": 3, "strategy": {"type": "Recreate"}, "template": {"metadata": {"labels": {"a": "x", "c": "z"}}}}}"#,
            ),
        );
    }

    #[test]
    fn containers_merge_by_name_patch_first() {
        check(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c1", "image": "i1"}, {"name": "c2", "image": "i2"}]}}}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c3", "image": "i3"}, {"name": "c2", "image": "new"}]}}}}"#,
            Some(
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"image": "i3", "name": "c3"}, {"image": "new", "name": "c2"}, {"image": "i1", "name": "c1"}]}}}}"#,
            ),
        );
    }

    #[test]
    fn finalizers_union_patch_first() {
        check(
            r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["a", "b"]}, "spec": {"containers": []}}"#,
            r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["c", "a"]}, "spec": {}}"#,
            Some(
                r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"finalizers": ["c", "a", "b"], "name": "p"}, "spec": {"containers": []}}"#,
            ),
        );
    }

    #[test]
    fn args_and_tolerations_replaced() {
        check(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c", "args": ["x", "y"]}], "tolerations": [{"key": "k1"}, {"key": "k2"}]}}}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c", "args": ["z"]}], "tolerations": [{"key": "k3"}]}}}}"#,
            Some(
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"args": ["z"], "name": "c"}], "tolerations": [{"key": "k3"}]}}}}"#,
            ),
        );
    }

    #[test]
    fn crd_lists_replaced_no_name_inference() {
        check(
            r#"{"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "f"}, "spec": {"items": [{"name": "a", "v": 1}, {"name": "b", "v": 2}]}}"#,
            r#"{"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "f"}, "spec": {"items": [{"name": "c", "v": 3}, {"name": "a", "w": 1}]}}"#,
            Some(
                r#"{"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "f"}, "spec": {"items": [{"name": "c", "v": 3}, {"name": "a", "w": 1}]}}"#,
            ),
        );
    }

    #[test]
    fn map_delete_and_replace_directives() {
        check(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}, "selector": {"matchLabels": {"a": "b", "c": "d"}}}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"strategy": {"$patch": "delete"}, "selector": {"$patch": "replace", "matchLabels": {"x": "y"}}}}"#,
            Some(
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"x": "y"}}}}"#,
            ),
        );
    }

    #[test]
    fn list_item_delete_directive() {
        check(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c1", "image": "i1"}, {"name": "c2", "image": "i2"}]}}}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c1", "$patch": "delete"}]}}}}"#,
            Some(
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"image": "i2", "name": "c2"}]}}}}"#,
            ),
        );
    }

    #[test]
    fn list_replace_directive() {
        check(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c1", "image": "i1"}, {"name": "c2", "image": "i2"}]}}}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c3", "image": "i3"}, {"$patch": "replace"}]}}}}"#,
            Some(
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"image": "i3", "name": "c3"}]}}}}"#,
            ),
        );
    }

    #[test]
    fn list_delete_directive() {
        check(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c1", "image": "i1"}], "volumes": [{"name": "v", "emptyDir": {}}]}}}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"volumes": [{"$patch": "delete"}]}}}}"#,
            Some(
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"image": "i1", "name": "c1"}]}}}}"#,
            ),
        );
    }

    #[test]
    fn item_replace_directive_keeps_target_item() {
        check(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c1", "image": "i1"}, {"name": "c2", "image": "i2"}]}}}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c1", "image": "new", "$patch": "replace"}, {"name": "c9", "image": "i9", "$patch": "replace"}]}}}}"#,
            Some(
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"image": "i1", "name": "c1"}, {"image": "i9", "name": "c9"}, {"image": "i2", "name": "c2"}]}}}}"#,
            ),
        );
    }

    #[test]
    fn smp_v1_directives_copied_verbatim() {
        check(
            r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["a", "b"]}, "spec": {"containers": [{"name": "c1", "image": "i1"}, {"name": "c2", "image": "i2"}]}}"#,
            r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "$deleteFromPrimitiveList/finalizers": ["a"]}, "spec": {"$setElementOrder/containers": [{"name": "c2"}, {"name": "c1"}], "$retainKeys": ["containers"], "hostname": "h"}}"#,
            Some(
                r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "finalizers": ["a", "b"], "name": "p"}, "spec": {"$retainKeys": ["containers"], "$setElementOrder/containers": [{"name": "c2"}, {"name": "c1"}], "containers": [{"image": "i1", "name": "c1"}, {"image": "i2", "name": "c2"}], "hostname": "h"}}"#,
            ),
        );
    }

    #[test]
    fn nulls_in_added_maps_dropped_target_nulls_kept() {
        check(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": null, "template": {"spec": {"containers": [{"name": "c1", "image": "i"}]}}}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c2", "resources": {"limits": {"cpu": null, "memory": "1Gi"}}, "securityContext": {"$patch": "delete"}}]}}}}"#,
            Some(
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": null, "template": {"spec": {"containers": [{"name": "c2", "resources": {"limits": {"memory": "1Gi"}}}, {"image": "i", "name": "c1"}]}}}}"#,
            ),
        );
    }

    #[test]
    fn volumes_merge_without_retain_keys() {
        check(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"volumes": [{"name": "v1", "emptyDir": {}}, {"name": "v2", "configMap": {"name": "x"}}]}}}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"volumes": [{"name": "v3", "emptyDir": {}}, {"name": "v1", "hostPath": {"path": "/x"}}]}}}}"#,
            Some(
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"volumes": [{"emptyDir": {}, "name": "v3"}, {"emptyDir": {}, "hostPath": {"path": "/x"}, "name": "v1"}, {"configMap": {"name": "x"}, "name": "v2"}]}}}}"#,
            ),
        );
    }

    #[test]
    fn ports_two_merge_keys() {
        check(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}, {"containerPort": 443, "name": "https"}]}]}}}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 8080, "protocol": "TCP"}, {"containerPort": 80, "protocol": "TCP", "hostPort": 9}]}]}}}}"#,
            Some(
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 8080, "protocol": "TCP"}, {"containerPort": 80, "hostPort": 9, "name": "http", "protocol": "TCP"}, {"containerPort": 443, "name": "https"}]}]}}}}"#,
            ),
        );
    }

    #[test]
    fn ports_partial_keys_unified() {
        check(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c1"}]}}}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c2", "ports": [{"containerPort": 8080}, {"containerPort": 8080, "protocol": "TCP"}]}]}}}}"#,
            Some(
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c2", "ports": [{"containerPort": 8080}, {"containerPort": 8080, "protocol": "TCP"}]}, {"name": "c1"}]}}}}"#,
            ),
        );
    }

    #[test]
    fn keyless_item_deletes_keyed_items() {
        check(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c1", "image": "i1"}, {"name": "c2", "image": "i2"}]}}}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"image": "noname"}, {"name": "c3", "image": "i3"}]}}}}"#,
            Some(
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"image": "i3", "name": "c3"}]}}}}"#,
            ),
        );
    }

    #[test]
    fn top_level_delete() {
        check(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 1}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {}, "$patch": "delete"}"#,
            None,
        );
    }

    #[test]
    fn top_level_replace_is_ignored() {
        check(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 1}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 5}, "$patch": "replace"}"#,
            Some(
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 1}}"#,
            ),
        );
    }

    #[test]
    fn embedded_resource_uses_its_schema() {
        check(
            r#"{"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "f"}, "spec": {"pod": {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "a", "image": "x"}]}}, "plain": {"containers": [{"name": "a", "image": "x"}]}}}"#,
            r#"{"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "f"}, "spec": {"pod": {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "b", "image": "y"}]}}, "plain": {"containers": [{"name": "b", "image": "y"}]}}}"#,
            Some(
                r#"{"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "f"}, "spec": {"plain": {"containers": [{"image": "y", "name": "b"}]}, "pod": {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"image": "y", "name": "b"}, {"image": "x", "name": "a"}]}}}}"#,
            ),
        );
    }

    #[test]
    fn empty_list_and_map_in_patch() {
        check(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"spec": {"containers": [{"name": "c", "args": ["x"]}], "tolerations": [{"key": "k"}]}}}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {}}, "template": {"spec": {"containers": [], "tolerations": []}}}}"#,
            Some(
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"spec": {"containers": [{"args": ["x"], "name": "c"}], "tolerations": []}}}}"#,
            ),
        );
    }

    #[test]
    fn duplicate_target_items_collapse() {
        check(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c1", "image": "a"}, {"name": "c1", "image": "b"}, {"name": "c2"}]}}}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c2", "image": "z"}]}}}}"#,
            Some(
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"image": "z", "name": "c2"}, {"image": "b", "name": "c1"}]}}}}"#,
            ),
        );
    }

    #[test]
    fn new_list_with_patch_directives() {
        check(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c1"}]}}}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"initContainers": [{"name": "i1", "image": "x"}, {"name": "i2", "$patch": "delete"}, {"$patch": "merge"}]}}}}"#,
            Some(
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c1"}], "initContainers": [{"$patch": "merge"}]}}}}"#,
            ),
        );
    }

    #[test]
    fn env_merge_null_value() {
        check(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]}}}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c", "env": [{"name": "B", "value": null, "valueFrom": {"fieldRef": {"fieldPath": "x"}}}, {"name": "C", "value": "3"}]}]}}}}"#,
            Some(
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"env": [{"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}, {"name": "C", "value": "3"}, {"name": "A", "value": "1"}], "name": "c"}]}}}}"#,
            ),
        );
    }

    #[test]
    fn primitive_list_duplicates_collapse() {
        check(
            r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["a", "a", "b"]}, "spec": {}}"#,
            r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["b", "c", "c"]}, "spec": {}}"#,
            Some(
                r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"finalizers": ["b", "c", "a"], "name": "p"}, "spec": {}}"#,
            ),
        );
    }

    #[test]
    fn kind_change_is_an_error() {
        let err = check_err(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 3}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": [1]}}"#,
        );
        assert_eq!(
            err,
            "wrong node kind: expected ScalarNode but got SequenceNode: node contents:\n- 1"
        );
    }

    #[test]
    fn unknown_directive_is_an_error() {
        let err = check_err(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"strategy": {"type": "x"}}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"strategy": {"$patch": "foo"}}}"#,
        );
        assert_eq!(err, "unknown patch strategy 'foo'");
    }

    #[test]
    fn untouched_lists_are_normalized() {
        // kyaml walks the whole target: merged lists the patch does not
        // mention still lose duplicates, keyless-item victims and `{}`.
        check(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c1", "image": "a"}, {"name": "c1", "image": "b"}, {"name": "c2", "env": [{"name": "X"}, {"value": "nokey"}]}], "imagePullSecrets": [{"name": "s"}, {}]}}}}"#,
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 2}}"#,
            Some(
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 2, "template": {"spec": {"containers": [{"image": "b", "name": "c1"}, {"env": [{"value": "nokey"}], "name": "c2"}], "imagePullSecrets": [{"name": "s"}]}}}}"#,
            ),
        );
    }

    #[test]
    fn owned_variant_matches() {
        let target = json(
            r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"finalizers": ["a"]}, "spec": {"containers": [{"name": "c"}]}}"#,
        );
        let patch = json(
            r#"{"metadata": {"finalizers": ["b"]}, "spec": {"containers": [{"name": "c", "image": "i"}]}}"#,
        );
        let schema = Schema::builtin();
        assert_eq!(
            strategic_merge(&target, &patch, &schema),
            strategic_merge_owned(target.clone(), &patch, &schema)
        );
        let replace = json(r#"{"$patch": "replace", "spec": {"x": {"$patch": "bogus"}}}"#);
        assert!(strategic_merge_owned(target, &replace, &schema).is_err());
    }

    #[test]
    fn error_texts() {
        let err = check_err(
            r#"{"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 3}}"#,
            r#"{"spec": {"replicas": [1, {"a": [2]}]}}"#,
        );
        assert_eq!(
            err,
            "wrong node kind: expected ScalarNode but got SequenceNode: node contents:\n- 1\n- a:\n  - 2"
        );
        let err = check_err(
            r#"{"spec": {"template": {"a": 1}}}"#,
            r#"{"spec": {"template": "x"}}"#,
        );
        assert_eq!(
            err,
            "wrong node kind: expected MappingNode but got ScalarNode: node contents:\nx"
        );
    }

    fn custom_schema() -> Schema {
        // A custom CRD schema (as in kustomize's TestCustomOpenApiField
        // tests): `spec.items` merges by `id`.
        Schema::from_openapi_document(&json(
            r##"{"definitions": {"v1.Foo": {
                "properties": {"spec": {"properties": {"items": {
                    "type": "array", "items": {"$ref": "#/definitions/v1.Item"},
                    "x-kubernetes-patch-strategy": "merge",
                    "x-kubernetes-patch-merge-key": "id"}}}},
                "x-kubernetes-group-version-kind": [
                    {"group": "example.com", "kind": "Foo", "version": "v1"}]},
              "v1.Item": {"properties": {"id": {"type": "string"}}}}}"##,
        ))
        .expect("schema")
    }

    #[test]
    fn custom_schema_merges_crd_lists() {
        let got = strategic_merge(
            &json(
                r#"{"apiVersion": "example.com/v1", "kind": "Foo", "spec": {"items": [{"id": "a", "v": 1}, {"id": "b"}]}}"#,
            ),
            &json(
                r#"{"apiVersion": "example.com/v1", "kind": "Foo", "spec": {"items": [{"id": "a", "w": 2}]}}"#,
            ),
            &custom_schema(),
        );
        assert_eq!(
            got,
            Ok(Some(json(
                r#"{"apiVersion": "example.com/v1", "kind": "Foo", "spec": {"items": [{"id": "a", "v": 1, "w": 2}, {"id": "b"}]}}"#
            )))
        );
    }

    #[test]
    fn custom_schema_replaces_builtin_definitions() {
        // Under a custom schema a Pod has no merge keys: lists are replaced.
        let got = strategic_merge(
            &json(
                r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"finalizers": ["a", "b"]}, "spec": {"containers": [{"name": "c1", "image": "i1"}, {"name": "c2"}]}}"#,
            ),
            &json(
                r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"finalizers": ["c", "a"]}, "spec": {"containers": [{"name": "c3"}, {"name": "c1", "image": "new"}]}}"#,
            ),
            &custom_schema(),
        );
        assert_eq!(
            got,
            Ok(Some(json(
                r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"finalizers": ["c", "a"]}, "spec": {"containers": [{"name": "c3"}, {"name": "c1", "image": "new"}]}}"#
            )))
        );
    }

    #[test]
    fn patch_and_target_are_not_modified() {
        let target =
            json(r#"{"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 1}}"#);
        let patch = json(r#"{"spec": {"$patch": "replace", "replicas": 2}}"#);
        let (t0, p0) = (target.clone(), patch.clone());
        let got = strategic_merge(&target, &patch, &Schema::builtin());
        assert_eq!(
            got,
            Ok(Some(json(
                r#"{"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 2}}"#
            )))
        );
        assert_eq!((target, patch), (t0, p0));
    }
}
