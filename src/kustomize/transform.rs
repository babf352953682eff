//! The field-spec driven builtin transformers: name prefix/suffix,
//! namespace, labels, annotations, images and replica counts.

use regex::Regex;

use super::accumulator::custom_image_specs;
use super::error::{Error, Result};
use super::fieldspec::{FieldSpec, Leaf, settable, walk, walk_with_path, wrong_kind};
use super::kustomization::{ImageEntry, ReplicaEntry};
use super::openapi::Schema;
use super::replacement::{TextScalar, keep_untyped, recorded_quoted, set_scalar_text};
use super::resid::Gvk;
use super::resource::{PathSeg, ResMap, Resource};
use super::yaml::{Mapping, Value, parse};

/// Kinds whose names never get a prefix or suffix.
fn skip_name_change(gvk: &Gvk) -> bool {
    gvk.kind == "CustomResourceDefinition"
        || gvk.kind == "Namespace"
        || (gvk.kind == "APIService" && gvk.group == "apiregistration.k8s.io")
}

fn is_name_field(fs: &FieldSpec) -> bool {
    fs.path == "metadata/name"
}

/// Adds a prefix and/or suffix to the names (and other configured fields)
/// of every resource.
pub fn prefix_suffix(
    m: &mut ResMap,
    prefix: &str,
    suffix: &str,
    prefix_specs: &[FieldSpec],
    suffix_specs: &[FieldSpec],
    schema: &Schema,
) -> Result<()> {
    for r in m.resources_mut().iter_mut() {
        let org = r.org_id();
        if skip_name_change(&org.gvk) {
            continue;
        }
        for (affix, specs, is_prefix) in
            [(prefix, prefix_specs, true), (suffix, suffix_specs, false)]
        {
            if affix.is_empty() {
                continue;
            }
            for fs in specs {
                if !fs.applies_to(&org.gvk) {
                    continue;
                }
                if is_name_field(fs) {
                    if is_prefix {
                        r.name_prefixes.push(affix.to_string());
                    } else {
                        r.name_suffixes.push(affix.to_string());
                    }
                    r.store_previous_id(schema);
                }
                let gvk = r.gvk();
                if !fs.applies_to(&gvk) {
                    continue;
                }
                // kyaml's scalar setter: a plain-written scalar (`name: 23`)
                // gets untyped text, which reads as plain YAML again
                let texts = &r.scalar_texts;
                let quoted = &r.quoted;
                let mut plain = Vec::new();
                walk_with_path(&mut r.obj, fs, Leaf::Scalar, &mut |path, v| {
                    let new = set_scalar_text(texts, quoted, path, v, |text| {
                        Some(if is_prefix {
                            format!("{affix}{text}")
                        } else {
                            format!("{text}{affix}")
                        })
                    });
                    if let Some(new) = new {
                        plain.push((path.to_vec(), new));
                    }
                    Ok(())
                })?;
                keep_untyped(&mut r.scalar_texts, plain);
            }
        }
    }
    Ok(())
}

/// How the namespace transformer treats RoleBinding subjects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SubjectMode {
    #[default]
    DefaultOnly,
    AllServiceAccounts,
    None,
}

impl SubjectMode {
    pub fn parse(s: &str) -> Result<SubjectMode> {
        match s {
            "" | "defaultOnly" => Ok(SubjectMode::DefaultOnly),
            "allServiceAccounts" => Ok(SubjectMode::AllServiceAccounts),
            "none" => Ok(SubjectMode::None),
            other => Err(Error::invalid(format!(
                "invalid setRoleBindingSubjects '{other}': must be defaultOnly, allServiceAccounts or none"
            ))),
        }
    }
}

fn set_ns_value(v: &mut Value, ns: &str, unset_only: bool) {
    // set means non-empty text, whatever the type (`namespace: 7` is set)
    if unset_only && v.scalar_to_string().is_some_and(|s| !s.is_empty()) {
        return;
    }
    *v = Value::from(ns);
}

/// The namespace of a binding's subjects: those named `default`, or every
/// ServiceAccount. A subject, or the field that selects it, of the wrong
/// kind is kyaml's error.
fn set_subject_namespaces(
    r: &mut Resource,
    ns: &str,
    unset_only: bool,
    subjects: SubjectMode,
) -> Result<()> {
    let subs = match r.obj.get_mut("subjects") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Seq(subs)) => subs,
        Some(other) => return Err(wrong_kind(Leaf::Seq, other)),
    };
    let (field, want, what) = match subjects {
        SubjectMode::AllServiceAccounts => ("kind", "ServiceAccount", "kind"),
        _ => ("name", "default", "name"),
    };
    for s in subs.iter_mut() {
        let sm = match s {
            Value::Null => continue,
            Value::Map(sm) => sm,
            other => {
                return Err(wrong_kind(Leaf::Map, other).context(format!(
                    "looking up {what} on (cluster)role binding subject"
                )));
            }
        };
        let hit = match sm.get(field) {
            None | Some(Value::Null) => false,
            Some(v) if !settable(v, Leaf::Scalar) => {
                return Err(wrong_kind(Leaf::Scalar, v).context(format!(
                    "looking up {what} on (cluster)role binding subject"
                )));
            }
            Some(v) => v.scalar_to_string().as_deref() == Some(want),
        };
        if hit {
            let slot = sm.entry("namespace".to_string()).or_insert(Value::Null);
            if !settable(slot, Leaf::Scalar) {
                return Err(wrong_kind(Leaf::Scalar, slot));
            }
            set_ns_value(slot, ns, unset_only);
        }
    }
    Ok(())
}

/// Sets the namespace of every namespaced resource (plus the configured
/// fields: Namespace names, APIService and CRD webhook services, binding
/// subjects).
pub fn namespace(
    m: &mut ResMap,
    ns: &str,
    specs: &[FieldSpec],
    unset_only: bool,
    subjects: SubjectMode,
    schema: &Schema,
) -> Result<()> {
    if ns.is_empty() {
        return Ok(());
    }
    for r in m.resources_mut().iter_mut() {
        namespace_resource(r, ns, specs, unset_only, subjects, schema)?;
    }
    let mut seen = std::collections::HashSet::new();
    for r in m.resources() {
        let id = r.cur_id();
        if !seen.insert(super::resource::id_key(&id)) {
            return Err(Error::invalid(format!(
                "namespace transformation produces ID conflict: {id}"
            )));
        }
    }
    Ok(())
}

/// The namespace transformation of one resource (kustomize's
/// `namespace.Filter`), without the ID-conflict check of the whole set.
pub fn namespace_resource(
    r: &mut Resource,
    ns: &str,
    specs: &[FieldSpec],
    unset_only: bool,
    subjects: SubjectMode,
    schema: &Schema,
) -> Result<()> {
    if r.obj.as_map().is_none_or(|mm| mm.is_empty()) {
        return Ok(());
    }
    r.store_previous_id(schema);
    let gvk = r.gvk();
    if schema.is_namespaced(&gvk.api_version(), &gvk.kind) {
        let meta = r
            .obj
            .ensure_map_path(&["metadata"])
            .ok_or_else(|| Error::invalid("metadata is not a map"))?;
        let slot = meta.entry("namespace".to_string()).or_insert(Value::Null);
        if !settable(slot, Leaf::Scalar) {
            return Err(wrong_kind(Leaf::Scalar, slot).context(format!(
                "considering field 'metadata/namespace' of object {}",
                r.cur_id()
            )));
        }
        set_ns_value(slot, ns, unset_only);
    }
    let is_binding = gvk.kind == "RoleBinding" || gvk.kind == "ClusterRoleBinding";
    if is_binding && subjects != SubjectMode::None {
        set_subject_namespaces(r, ns, unset_only, subjects)
            .map_err(|e| e.context("setting namespace on (cluster)role binding subjects"))?;
    }
    for fs in specs {
        // metadata/namespace is handled above; metadata/name (Namespace
        // objects) only for core `v1` objects, as kustomize does.
        if fs.path == "metadata/namespace"
            || (fs.path == "metadata/name" && gvk.api_version() != "v1")
            || (is_binding
                && fs.path == "subjects/namespace"
                && (fs.gvk.kind == "RoleBinding" || fs.gvk.kind == "ClusterRoleBinding"))
            || !fs.applies_to(&gvk)
        {
            continue;
        }
        let id = r.cur_id();
        walk(&mut r.obj, fs, Leaf::Scalar, &mut |v| {
            if !settable(v, Leaf::Scalar) {
                return Err(wrong_kind(Leaf::Scalar, v)
                    .context(format!("considering field '{}' of object {id}", fs.path)));
            }
            set_ns_value(v, ns, unset_only);
            Ok(())
        })?;
    }
    Ok(())
}

/// Adds `pairs` to the map found at each field spec (labels or annotations).
pub fn set_map_entries(
    m: &mut ResMap,
    pairs: &[(String, String)],
    specs: &[FieldSpec],
) -> Result<()> {
    if pairs.is_empty() {
        return Ok(());
    }
    for r in m.resources_mut().iter_mut() {
        apply_map_entries(r, pairs, specs)?;
    }
    Ok(())
}

/// [`set_map_entries`] for one resource, as kustomize's labels and
/// annotations filters: key by key, over every field spec. The locations
/// where a key is created share one node (see [`Resource::links`]); where
/// it exists, its node is written in place (and so are the nodes linked
/// to it).
pub fn apply_map_entries(
    r: &mut Resource,
    pairs: &[(String, String)],
    specs: &[FieldSpec],
) -> Result<()> {
    let gvk = r.gvk();
    let id = r.cur_id();
    // kustomize keeps its internal annotations (previous ids, name
    // prefixes/suffixes, generator options, build metadata) in
    // metadata.annotations for the whole build: a `metadata/annotations`
    // field spec finds that map even with `create: false`. Lend the
    // resource an empty map for the walk (dropped again if still empty).
    let lent = !pairs.is_empty()
        && r.has_internal_annotations()
        && specs
            .iter()
            .any(|fs| !fs.create && fs.applies_to(&gvk) && fs.parts == ["metadata", "annotations"])
        && match r.obj.get_mut("metadata").and_then(Value::as_map_mut) {
            Some(meta) if !meta.contains_key("annotations") => {
                meta.insert("annotations".into(), Value::Map(Mapping::new()));
                true
            }
            _ => false,
        };
    let result = apply_map_entries_walk(r, pairs, specs, &gvk, &id);
    if lent
        && let Some(meta) = r.obj.get_mut("metadata").and_then(Value::as_map_mut)
        && meta
            .get("annotations")
            .and_then(Value::as_map)
            .is_some_and(Mapping::is_empty)
    {
        meta.shift_remove("annotations");
    }
    result
}

fn apply_map_entries_walk(
    r: &mut Resource,
    pairs: &[(String, String)],
    specs: &[FieldSpec],
    gvk: &Gvk,
    id: &super::resid::ResId,
) -> Result<()> {
    for (k, val) in pairs {
        let mut created: Vec<Vec<PathSeg>> = Vec::new();
        let mut updated: Vec<Vec<PathSeg>> = Vec::new();
        for fs in specs {
            if !fs.applies_to(gvk) {
                continue;
            }
            walk_with_path(&mut r.obj, fs, Leaf::Map, &mut |path, v| {
                if v.is_null() {
                    *v = Value::Map(Mapping::new());
                }
                match v.as_map_mut() {
                    Some(mm) => {
                        let mut at = path.to_vec();
                        at.push(PathSeg::Key(k.clone()));
                        if mm.contains_key(k.as_str()) {
                            if !created.contains(&at) {
                                updated.push(at);
                            }
                        } else {
                            created.push(at);
                        }
                        mm.insert(k.clone(), Value::from(val.as_str()));
                        Ok(())
                    }
                    None => Err(wrong_kind(Leaf::Map, v)
                        .context(format!("considering field '{}' of object {id}", fs.path))),
                }
            })?;
        }
        let value = Value::from(val.as_str());
        for p in &updated {
            r.write_linked(p, &value);
        }
        r.link(created);
    }
    Ok(())
}

/// Splits an image reference into name, tag and digest the way kustomize does.
pub fn split_image(image: &str) -> (String, String, String) {
    let (search, offset) = match image.find('/') {
        Some(i) if i > 0 => (&image[i..], i),
        _ => (image, 0),
    };
    let id = search.find('@');
    let ic = search.find(':');
    match (id, ic) {
        (None, None) => (image.to_string(), String::new(), String::new()),
        (Some(d), c) if c.is_none() || c.is_some_and(|c| d < c) => {
            let d = d + offset;
            (
                image[..d].to_string(),
                String::new(),
                image[d + 1..].to_string(),
            )
        }
        (Some(d), Some(c)) => {
            let (d, c) = (d + offset, c + offset);
            (
                image[..c].to_string(),
                image[c + 1..d].to_string(),
                image[d + 1..].to_string(),
            )
        }
        (None, Some(c)) => {
            let c = c + offset;
            (
                image[..c].to_string(),
                image[c + 1..].to_string(),
                String::new(),
            )
        }
        (Some(_), None) => (image.to_string(), String::new(), String::new()),
    }
}

/// A compiled `images:` entry.
pub struct ImageRule {
    entry: ImageEntry,
    matcher: Regex,
}

impl ImageRule {
    pub fn new(entry: &ImageEntry) -> Result<ImageRule> {
        // kustomize uses the configured name as a regular expression.
        let pattern = format!(
            "^{}(:[a-zA-Z0-9_.{{}}-]*)?(@sha256:[a-zA-Z0-9_.{{}}-]*)?$",
            entry.name
        );
        let matcher = super::goregex::compile(&pattern).map_err(|e| {
            Error::invalid(format!("images: invalid image name '{}': {e}", entry.name))
        })?;
        Ok(ImageRule {
            entry: entry.clone(),
            matcher,
        })
    }

    /// The new image string, or `None` when this rule does not match.
    pub fn rewrite(&self, image: &str) -> Option<String> {
        if !self.matcher.is_match(image) {
            return None;
        }
        let (mut name, mut tag, mut digest) = split_image(image);
        let e = &self.entry;
        if !e.new_name.is_empty() {
            name = e.new_name.clone();
        }
        if !e.new_tag.is_empty() && !e.digest.is_empty() {
            tag = e.new_tag.clone();
            digest = e.digest.clone();
        } else if !e.new_tag.is_empty() {
            tag = e.new_tag.clone();
            digest.clear();
        } else if !e.digest.is_empty() {
            tag.clear();
            digest = e.digest.clone();
        } else if !e.tag_suffix.is_empty() {
            // only without newTag and digest; the digest goes
            tag.push_str(&e.tag_suffix);
            digest.clear();
        }
        if !tag.is_empty() {
            name.push(':');
            name.push_str(&tag);
        }
        if !digest.is_empty() {
            name.push('@');
            name.push_str(&digest);
        }
        Some(name)
    }
}

/// Image rules indexed for lookup: a rule whose name has no regular
/// expression syntax (a `.` is taken literally for indexing; the regex still
/// decides) can only match an image whose text up to a `:` or `@` (or the
/// whole text) equals the name, so it is found by hashing those prefixes;
/// other rules are tried on every image. Rules still apply in entry order.
pub struct ImageRules {
    rules: Vec<ImageRule>,
    by_name: std::collections::HashMap<String, Vec<usize>>,
    scan: Vec<usize>,
}

impl ImageRules {
    pub fn new(rules: Vec<ImageRule>) -> ImageRules {
        let mut by_name: std::collections::HashMap<String, Vec<usize>> =
            std::collections::HashMap::new();
        let mut scan = Vec::new();
        for (i, r) in rules.iter().enumerate() {
            let n = &r.entry.name;
            if !n.is_empty() && !n.chars().any(|c| "\\+*?()|[]{}^$".contains(c)) {
                by_name.entry(n.clone()).or_default().push(i);
            } else {
                scan.push(i);
            }
        }
        ImageRules {
            rules,
            by_name,
            scan,
        }
    }

    /// Applies every rule, in order, to one image string.
    fn apply(&self, image: &str) -> Option<String> {
        let mut cur = image.to_string();
        let mut changed = false;
        let mut next_rule = 0usize;
        loop {
            let mut best: Option<usize> = None;
            let mut consider = |i: usize| {
                if i >= next_rule
                    && best.is_none_or(|b| i < b)
                    && self.rules[i].matcher.is_match(&cur)
                {
                    best = Some(i);
                }
            };
            for (pos, c) in cur.char_indices() {
                if (c == ':' || c == '@')
                    && let Some(list) = self.by_name.get(&cur[..pos])
                {
                    list.iter().copied().for_each(&mut consider);
                }
            }
            if let Some(list) = self.by_name.get(cur.as_str()) {
                list.iter().copied().for_each(&mut consider);
            }
            self.scan.iter().copied().for_each(&mut consider);
            let Some(i) = best else { break };
            if let Some(new) = self.rules[i].rewrite(&cur) {
                cur = new;
                changed = true;
            }
            next_rule = i + 1;
        }
        changed.then_some(cur)
    }
}

/// Finds every `containers` / `initContainers` list anywhere in the
/// object; the images rewritten go to `written` with their paths (`at`:
/// the path of `v`).
fn legacy_images(
    v: &mut Value,
    rules: &ImageRules,
    texts: &[TextScalar],
    quoted: &[Vec<PathSeg>],
    at: &mut Vec<PathSeg>,
    written: &mut Vec<(Vec<PathSeg>, String)>,
) -> Result<()> {
    match v {
        Value::Map(m) => {
            for (k, child) in m.iter_mut() {
                at.push(PathSeg::Key(k.clone()));
                if (k == "containers" || k == "initContainers")
                    && let Value::Seq(items) = child
                {
                    for (i, c) in items.iter_mut().enumerate() {
                        if !settable(c, Leaf::Map) {
                            return Err(wrong_kind(Leaf::Map, c));
                        }
                        if let Some(img) = c.get_mut("image") {
                            if !settable(img, Leaf::Scalar) {
                                return Err(wrong_kind(Leaf::Scalar, img));
                            }
                            let mut path = at.clone();
                            path.extend([PathSeg::Index(i), PathSeg::Key("image".into())]);
                            if let Some(new) =
                                set_scalar_text(texts, quoted, &path, img, |s| rules.apply(s))
                            {
                                written.push((path, new));
                            }
                        }
                    }
                } else {
                    legacy_images(child, rules, texts, quoted, at, written)?;
                }
                at.pop();
            }
        }
        Value::Seq(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                at.push(PathSeg::Index(i));
                legacy_images(item, rules, texts, quoted, at, written)?;
                at.pop();
            }
        }
        _ => {}
    }
    Ok(())
}

/// Applies `images:` entries, in order: every container image anywhere,
/// plus the field specs `specs` (kustomize's defaults, those of
/// `configurations:`, or a plugin's). (kustomize runs one transformer per
/// entry; applying the entries in sequence to each field gives the same
/// result in one walk.)
pub fn images(m: &mut ResMap, entries: &[ImageEntry], specs: &[FieldSpec]) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let rules = entries
        .iter()
        .map(ImageRule::new)
        .collect::<Result<Vec<_>>>()?;
    // kustomize rewrites each entry's images twice: everywhere a
    // `containers` list is, then at the field specs (defaults included).
    // The second pass changes nothing, except for a `tagSuffix`, which is
    // appended again where a field spec reaches.
    let custom = if rules.iter().any(|r| !r.entry.tag_suffix.is_empty()) {
        specs.to_vec()
    } else {
        custom_image_specs(specs)
    };
    let defaults: Vec<&FieldSpec> = specs.iter().filter(|f| !custom.contains(f)).collect();
    let (indexed, rules) = if custom.is_empty() {
        (Some(ImageRules::new(rules)), Vec::new())
    } else {
        (None, rules)
    };
    for r in m.resources_mut().iter_mut() {
        let gvk = r.gvk();
        // kustomize leaves CustomResourceDefinitions alone (its issue 890)
        if gvk.kind == "CustomResourceDefinition" {
            continue;
        }
        // the search for `containers` lists covers the default specs'
        // images; kustomize still walks their paths, and that walk turns a
        // null list on the way (`containers: ~`) into an empty one
        for fs in &defaults {
            if fs.applies_to(&gvk) && fs.parts.iter().any(|p| p.ends_with("[]")) {
                let mut spec = (*fs).clone();
                spec.create = false;
                walk(&mut r.obj, &spec, Leaf::Scalar, &mut |_| Ok(()))?;
            }
        }
        let mut written = Vec::new();
        let texts = &r.scalar_texts;
        let quoted = &r.quoted;
        if let Some(indexed) = &indexed {
            legacy_images(
                &mut r.obj,
                indexed,
                texts,
                quoted,
                &mut Vec::new(),
                &mut written,
            )?;
        }
        for rule in &rules {
            let one = ImageRules::new(vec![ImageRule {
                entry: rule.entry.clone(),
                matcher: rule.matcher.clone(),
            }]);
            legacy_images(
                &mut r.obj,
                &one,
                texts,
                quoted,
                &mut Vec::new(),
                &mut written,
            )?;
            for fs in &custom {
                if !fs.applies_to(&gvk) {
                    continue;
                }
                let mut spec = fs.clone();
                spec.create = false;
                walk_with_path(&mut r.obj, &spec, Leaf::Scalar, &mut |at, v| {
                    if let Some(new) = set_scalar_text(texts, quoted, at, v, |s| rule.rewrite(s)) {
                        written.push((at.to_vec(), new));
                    }
                    Ok(())
                })?;
            }
        }
        keep_untyped(&mut r.scalar_texts, written);
    }
    Ok(())
}

/// Applies `replicas:` entries.
pub fn replicas(m: &mut ResMap, entries: &[ReplicaEntry], specs: &[FieldSpec]) -> Result<()> {
    // Every id (current and previous) of every resource, computed once and
    // indexed by name, so each entry only visits resources of its name.
    let ids: Vec<Vec<super::resid::ResId>> = m.resources().iter().map(Resource::all_ids).collect();
    let mut by_name: std::collections::HashMap<&str, Vec<usize>> = std::collections::HashMap::new();
    for (i, rids) in ids.iter().enumerate() {
        for id in rids {
            let v = by_name.entry(id.name.as_str()).or_default();
            if v.last() != Some(&i) {
                v.push(i);
            }
        }
    }
    let list = m.resources_mut();
    for e in entries {
        let mut found = false;
        let candidates = by_name
            .get(e.name.as_str())
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for fs in specs {
            for &i in candidates {
                let hit = ids[i]
                    .iter()
                    .any(|id| id.name == e.name && fs.gvk.selects(&id.gvk));
                if !hit {
                    continue;
                }
                found = true;
                let Some(r) = list.get_mut(i) else { continue };
                let gvk = r.gvk();
                if !fs.applies_to(&gvk) {
                    continue;
                }
                let id = r.cur_id();
                let quoted = &r.quoted;
                walk_with_path(&mut r.obj, fs, Leaf::Scalar, &mut |path, v| {
                    if !settable(v, Leaf::Scalar) {
                        return Err(wrong_kind(Leaf::Scalar, v)
                            .context(format!("considering field '{}' of object {id}", fs.path)));
                    }
                    // kyaml sets the count's text in the node: a quoted
                    // field stays quoted
                    *v = if recorded_quoted(quoted, path, v) {
                        Value::String(e.count.to_string())
                    } else {
                        parse::written_over(v, Value::Int(e.count))
                    };
                    Ok(())
                })?;
            }
        }
        if !found {
            // kustomize's config keeps its field specs sorted by type order
            let mut sorted: Vec<&Gvk> = specs.iter().map(|f| &f.gvk).collect();
            sorted.sort_by_key(|g| (super::sort::kind_rank(&g.kind), g.legacy_string()));
            let gvks: Vec<String> = sorted.iter().map(|g| g.go_string()).collect();
            return Err(Error::invalid(format!(
                "resource with name {} does not match a config with the following GVK [{}]",
                e.name,
                gvks.join(" ")
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kustomize::fieldspec::TransformerConfig;
    use crate::kustomize::yaml::parse::parse_documents_strict as parse_documents;

    fn map(src: &str) -> ResMap {
        let mut m = ResMap::new();
        for d in parse_documents(src).unwrap() {
            m.append(Resource::new(d)).unwrap();
        }
        m
    }

    #[test]
    fn split_image_forms() {
        assert_eq!(split_image("nginx"), ("nginx".into(), "".into(), "".into()));
        assert_eq!(
            split_image("nginx:1.2"),
            ("nginx".into(), "1.2".into(), "".into())
        );
        assert_eq!(
            split_image("my.reg:5000/app@sha256:abc"),
            ("my.reg:5000/app".into(), "".into(), "sha256:abc".into())
        );
        assert_eq!(
            split_image("reg/app:v1@sha256:abc"),
            ("reg/app".into(), "v1".into(), "sha256:abc".into())
        );
    }

    #[test]
    fn image_rules() {
        // Expectations checked with kubectl kustomize (v5.5.0).
        let rule = ImageRule::new(&ImageEntry {
            name: "nginx".into(),
            new_name: "my/nginx".into(),
            new_tag: "1.9".into(),
            ..Default::default()
        })
        .unwrap();
        for (image, want) in [
            ("nginx:1.7", Some("my/nginx:1.9")),
            ("nginx:1.7@sha256:abc", Some("my/nginx:1.9")),
            ("nginx@sha256:abc", Some("my/nginx:1.9")),
            ("nginx:v{1}", Some("my/nginx:1.9")),
            ("nginx@sha512:abc", None),
            ("nginx:1.7@sha256:ABC+x", None),
            ("nginxx", None),
        ] {
            assert_eq!(rule.rewrite(image).as_deref(), want, "{image}");
        }
        let digest = ImageRule::new(&ImageEntry {
            name: "app".into(),
            digest: "sha256:ff".into(),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(digest.rewrite("app:v1").as_deref(), Some("app@sha256:ff"));
    }

    #[test]
    fn labels_reach_selectors_and_templates() {
        let mut m = map(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    spec: {}\n",
        );
        let cfg = TransformerConfig::defaults();
        set_map_entries(&mut m, &[("app".into(), "x".into())], &cfg.common_labels).unwrap();
        let o = &m.resources()[0].obj;
        assert_eq!(o.str_at(&["metadata", "labels", "app"]), Some("x"));
        assert_eq!(
            o.str_at(&["spec", "selector", "matchLabels", "app"]),
            Some("x")
        );
        assert_eq!(
            o.str_at(&["spec", "template", "metadata", "labels", "app"]),
            Some("x")
        );
    }

    #[test]
    fn namespace_skips_cluster_scoped_and_sets_default_subjects() {
        let mut m = map(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: rb}\n\
             subjects:\n- {kind: ServiceAccount, name: default}\n- {kind: ServiceAccount, name: other}\n",
        );
        let schema = Schema::builtin();
        let cfg = TransformerConfig::defaults();
        namespace(
            &mut m,
            "ns1",
            &cfg.namespace,
            false,
            SubjectMode::DefaultOnly,
            &schema,
        )
        .unwrap();
        let rs = m.resources();
        assert_eq!(rs[0].namespace(), "ns1");
        assert_eq!(rs[1].obj.get_path(&["metadata", "namespace"]), None);
        let subs = rs[2].obj.get("subjects").unwrap().as_seq().unwrap();
        assert_eq!(subs[0].str_at(&["namespace"]), Some("ns1"));
        assert_eq!(subs[1].str_at(&["namespace"]), None);
        assert_eq!(rs[0].prev_ids.len(), 1);
    }

    #[test]
    fn prefix_skips_namespaces_and_records_history() {
        let mut m = map(
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: n}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: s}\n",
        );
        let cfg = TransformerConfig::defaults();
        let schema = Schema::builtin();
        prefix_suffix(
            &mut m,
            "p-",
            "-s",
            &cfg.name_prefix,
            &cfg.name_suffix,
            &schema,
        )
        .unwrap();
        assert_eq!(m.resources()[0].name(), "n");
        assert_eq!(m.resources()[1].name(), "p-s-s");
        assert_eq!(m.resources()[1].name_prefixes, vec!["p-"]);
        assert_eq!(m.resources()[1].prev_ids.len(), 2);
    }

    #[test]
    fn replicas_need_a_match() {
        let mut m = map("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n");
        let cfg = TransformerConfig::defaults();
        replicas(
            &mut m,
            &[ReplicaEntry {
                name: "d".into(),
                count: 3,
            }],
            &cfg.replicas,
        )
        .unwrap();
        assert_eq!(
            m.resources()[0].obj.get_path(&["spec", "replicas"]),
            Some(&Value::Int(3))
        );
        assert!(
            replicas(
                &mut m,
                &[ReplicaEntry {
                    name: "x".into(),
                    count: 1
                }],
                &cfg.replicas
            )
            .is_err()
        );
    }
}
