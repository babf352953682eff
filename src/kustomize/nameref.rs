//! Name-reference fix-up: after names changed (prefix, suffix, hash,
//! namespace), every field that referred to an old name is rewritten to the
//! current one, following kustomize's candidate rules.

use std::collections::{HashMap, HashSet};

use super::error::{Error, Result};
use super::fieldspec::{FieldSpec, Leaf, NameBackRef, walk_with_path};
use super::openapi::Schema;
use super::replacement::{TextScalar, scalar_text_at, set_scalar_text};
use super::resid::{Gvk, ResId};
use super::resource::{NON_NAMESPACEABLE, ResMap};
use super::yaml::{PathSeg, Value};

/// What the fix-up needs to know about each resource (names do not change
/// during the pass, so a snapshot is exact).
struct Cand {
    cur: ResId,
    prev: Vec<ResId>,
    prefixes: Vec<String>,
    suffixes: Vec<String>,
    cluster_scoped: bool,
    org_ns: String,
    cur_ns: String,
}

fn same_ending(a: &[String], b: &[String]) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.is_empty() {
        return long.is_empty();
    }
    let diff = long.len() - short.len();
    short.iter().zip(&long[diff..]).all(|(x, y)| x == y)
}

fn effective_ns(id: &ResId, cluster_scoped: bool) -> String {
    if cluster_scoped {
        NON_NAMESPACEABLE.to_string()
    } else if id.namespace.is_empty() {
        "default".to_string()
    } else {
        id.namespace.clone()
    }
}

struct Referrer<'a> {
    cur: ResId,
    cluster_scoped: bool,
    prefixes: &'a [String],
    suffixes: &'a [String],
    /// For RoleBindings: namespaces of ServiceAccount subjects.
    rb_namespaces: HashSet<String>,
    role_ref: Option<Gvk>,
}

struct Ctx<'a> {
    cands: &'a [Cand],
    by_prev_name: &'a HashMap<String, Vec<usize>>,
    /// Original namespaces of all namespaced resources.
    org_namespaces: HashSet<String>,
}

impl Ctx<'_> {
    /// Candidates the referrer could refer to (kustomize's
    /// `SubsetThatCouldBeReferencedByResource`) among those with `name`.
    fn select(
        &self,
        referrer: &Referrer,
        target: &Gvk,
        spec: &FieldSpec,
        old_name: &str,
        mapping: bool,
        namespace_filter: Option<&str>,
    ) -> Result<Option<usize>> {
        let Some(list) = self.by_prev_name.get(old_name) else {
            return Ok(None);
        };
        let mut out: Vec<usize> = Vec::new();
        for &i in list {
            let c = &self.cands[i];
            // Subset that could be referenced.
            let reachable = referrer.cluster_scoped
                || c.cluster_scoped
                || c.cur.effective_namespace() == referrer.cur.effective_namespace()
                || (referrer.cur.gvk.kind == "RoleBinding"
                    && referrer.rb_namespaces.contains(&c.cur.namespace));
            if !reachable {
                continue;
            }
            if let Some(ns) = namespace_filter
                && !self.in_namespace_group(i, ns)
            {
                continue;
            }
            if !c.prev.iter().any(|id| id.name == old_name) {
                continue;
            }
            if !c.prev.iter().any(|id| target.selects(&id.gvk)) {
                continue;
            }
            if spec.path.ends_with("roleRef/name")
                && let Some(rr) = &referrer.role_ref
                && !c.prev.iter().any(|id| rr.selects(&id.gvk))
            {
                continue;
            }
            if !referrer.cluster_scoped
                && !c.cluster_scoped
                && c.cur.gvk.kind != "ServiceAccount"
                && c.cur.effective_namespace() != referrer.cur.effective_namespace()
            {
                continue;
            }
            out.push(i);
        }
        if out.len() <= 1 {
            return Ok(out.first().copied());
        }
        // kustomize 5.5: a coarse pass where an empty prefix (suffix) list
        // matches any, then, if several remain, exact same endings
        let matches = |i: usize, allow_empty: bool| {
            let c = &self.cands[i];
            let eq = |a: &[String], b: &[String]| {
                (allow_empty && (a.is_empty() || b.is_empty())) || same_ending(a, b)
            };
            eq(&c.prefixes, referrer.prefixes) && eq(&c.suffixes, referrer.suffixes)
        };
        let mut narrowed: Vec<usize> = out.iter().copied().filter(|&i| matches(i, true)).collect();
        if narrowed.len() > 1 {
            narrowed.retain(|&i| matches(i, false));
        }
        if narrowed.len() == 1 {
            return Ok(narrowed.first().copied());
        }
        if narrowed.is_empty() {
            return Ok(None);
        }
        let first = &self.cands[narrowed[0]].cur;
        let identical = narrowed.iter().all(|&i| {
            let c = &self.cands[i].cur;
            c.name == first.name && (!mapping || c.namespace == first.namespace)
        });
        if identical {
            return Ok(Some(narrowed[0]));
        }
        let ids: Vec<String> = narrowed
            .iter()
            .map(|&i| self.cands[i].cur.to_string())
            .collect();
        Err(Error::invalid(format!(
            "found multiple possible referrals: {}",
            ids.join(", ")
        )))
    }

    /// kustomize groups map-style references (`{name, namespace}`) by the
    /// candidates' original namespace, falling back to the current one when
    /// no candidate originally lived in `ns`.
    fn in_namespace_group(&self, i: usize, ns: &str) -> bool {
        if self.org_namespaces.contains(ns) {
            self.cands[i].org_ns == ns
        } else {
            self.cands[i].cur_ns == ns
        }
    }
}

/// Rewrites name references in every resource.
pub fn fix_name_references(
    m: &mut ResMap,
    backrefs: &[NameBackRef],
    schema: &Schema,
) -> Result<()> {
    let cands: Vec<Cand> = m
        .resources()
        .iter()
        .map(|r| {
            let cur = r.cur_id();
            let cluster_scoped = !schema.is_namespaced(&cur.gvk.api_version(), &cur.gvk.kind);
            let org = r.org_id();
            let org_ns = if r.prev_ids.is_empty() {
                effective_ns(&org, cluster_scoped)
            } else {
                org.namespace.clone()
            };
            Cand {
                cur_ns: effective_ns(&cur, cluster_scoped),
                org_ns,
                cur,
                prev: r.prev_ids.clone(),
                prefixes: r.name_prefixes.clone(),
                suffixes: r.name_suffixes.clone(),
                cluster_scoped,
            }
        })
        .collect();
    let mut by_prev_name: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, c) in cands.iter().enumerate() {
        let mut names: Vec<&str> = c.prev.iter().map(|id| id.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        for n in names {
            by_prev_name.entry(n.to_string()).or_default().push(i);
        }
    }
    // with nothing to refer to, the walk still runs: kustomize fails on a
    // scalar in the middle of a referrer's field path all the same
    let org_namespaces = cands
        .iter()
        .filter(|c| !c.cluster_scoped)
        .map(|c| c.org_ns.clone())
        .collect();
    let ctx = Ctx {
        cands: &cands,
        by_prev_name: &by_prev_name,
        org_namespaces,
    };
    for (idx, cand) in cands.iter().enumerate() {
        let Some(res) = m.resources().get(idx) else {
            continue;
        };
        let org_gvk = res.org_id().gvk;
        let mut applicable: Vec<(&Gvk, &FieldSpec)> = Vec::new();
        for br in backrefs {
            for spec in &br.referrers {
                if spec.gvk.selects(&org_gvk) {
                    applicable.push((&br.gvk, spec));
                }
            }
        }
        if applicable.is_empty() {
            continue;
        }
        let obj = &res.obj;
        // kustomize reads the subjects' namespaces when it first meets a
        // field spec for a namespaced referrer, before rewriting anything
        let rb_namespaces = if cand.cluster_scoped {
            HashSet::new()
        } else {
            subject_namespaces(res)?
        };
        // the texts of the fields, whatever their type (`apiGroup: 1`)
        let text = |f: &str| {
            obj.get_path(&["roleRef", f])
                .filter(|v| !v.is_null())
                .and_then(Value::scalar_to_string)
        };
        let role_ref = match (text("apiGroup"), text("kind")) {
            (Some(g), Some(k)) => Some(Gvk::new(&g, "", &k)),
            _ => None,
        };
        let referrer = Referrer {
            cur: cand.cur.clone(),
            cluster_scoped: cand.cluster_scoped,
            prefixes: &cand.prefixes,
            suffixes: &cand.suffixes,
            rb_namespaces,
            role_ref,
        };
        let (mut new_obj, texts, quoted) = match m.resources_mut().get_mut(idx) {
            Some(r) => (
                std::mem::take(&mut r.obj),
                std::mem::take(&mut r.scalar_texts),
                std::mem::take(&mut r.quoted),
            ),
            None => continue,
        };
        for (target, spec) in applicable {
            let mut spec = spec.clone();
            spec.create = false;
            let mut w = Writer {
                ctx: &ctx,
                referrer: &referrer,
                target,
                spec: &spec,
                texts: &texts,
                quoted: &quoted,
            };
            let walked = walk_with_path(&mut new_obj, &spec, Leaf::Scalar, &mut |path, node| {
                w.set_node(path, node)
            });
            if let Err(e) = walked {
                return Err(e
                    .context(format!(
                        "considering field '{}' of object {}",
                        spec.path, referrer.cur
                    ))
                    .context(format!(
                        "updating name reference in '{}' field of '{}'",
                        spec.path, referrer.cur
                    )));
            }
        }
        if let Some(r) = m.resources_mut().get_mut(idx) {
            r.obj = new_obj;
            r.scalar_texts = texts;
            r.quoted = quoted;
        }
    }
    Ok(())
}

/// The namespaces of a RoleBinding's ServiceAccount subjects, read as
/// kustomize reads them (`getNamespacesForRoleBinding`): `subjects` that is
/// not a list holds none; a ServiceAccount subject whose `namespace` is not
/// a string (left blank, say) is an error. A subject that is not a map, or
/// one with a `namespace` whose `kind` is not a string, makes kustomize
/// panic on a Go type assertion: refused here with the panic's message.
fn subject_namespaces(r: &super::resource::Resource) -> Result<HashSet<String>> {
    let mut found = HashSet::new();
    if r.kind() != "RoleBinding" {
        return Ok(found);
    }
    let Some(subs) = r.obj.get("subjects").and_then(Value::as_seq) else {
        return Ok(found);
    };
    let panic = |held: &Value, wanted: &str| {
        Error::invalid(format!(
            "{}: subjects: panic: interface conversion: interface {{}} is {}, not {wanted} \
             (a subject that is not a map, or a subject's kind that is not a string: kustomize panics here)",
            r.cur_id(),
            go_type_name(held)
        ))
    };
    for s in subs {
        let Some(subject) = s.as_map() else {
            return Err(panic(s, "map[string]interface {}"));
        };
        let (Some(ns), Some(kind)) = (subject.get("namespace"), subject.get("kind")) else {
            continue;
        };
        let Some(kind) = kind.as_str() else {
            return Err(panic(kind, "string"));
        };
        if kind != "ServiceAccount" {
            continue;
        }
        match ns.as_str() {
            Some(ns) => {
                found.insert(ns.to_string());
            }
            None => {
                return Err(Error::invalid(format!(
                    "Invalid Input: namespace is blank for resource \"{}\"",
                    r.cur_id()
                )));
            }
        }
    }
    Ok(found)
}

/// The Go type a YAML value decodes to in an `interface{}`, as a panic
/// message names it.
fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "nil",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::UInt(_) => "uint64",
        Value::Float(_) => "float64",
        Value::String(_) => "string",
        Value::Seq(_) => "[]interface {}",
        Value::Map(_) => "map[string]interface {}",
    }
}

/// Rewrites the references one field spec reaches in one resource.
struct Writer<'a> {
    ctx: &'a Ctx<'a>,
    referrer: &'a Referrer<'a>,
    target: &'a Gvk,
    spec: &'a FieldSpec,
    /// The resource's kept scalar texts.
    texts: &'a [TextScalar],
    /// The resource's strings written quoted (see `Resource::quoted`).
    quoted: &'a [Vec<PathSeg>],
}

impl Writer<'_> {
    fn set_node(&mut self, path: &[PathSeg], node: &mut Value) -> Result<()> {
        match node {
            Value::Null => Ok(()),
            Value::Map(_) => self.set_mapping(path, node),
            Value::Seq(items) => {
                let mut at = path.to_vec();
                for (i, item) in items.iter_mut().enumerate() {
                    at.push(PathSeg::Index(i));
                    match item {
                        Value::Map(_) => self.set_mapping(&at, item)?,
                        Value::Null | Value::Seq(_) => {}
                        _ => self.set_scalar(&at, item)?,
                    }
                    at.pop();
                }
                Ok(())
            }
            _ => self.set_scalar(path, node),
        }
    }

    /// A reference held by a scalar: its text (`name: 23` refers to `23`)
    /// is set as kyaml's scalar setter does.
    fn set_scalar(&mut self, path: &[PathSeg], node: &mut Value) -> Result<()> {
        let Some((old, _)) = scalar_text_at(self.texts, path, node) else {
            return Ok(());
        };
        let old = old.into_owned();
        let Some(i) = self
            .ctx
            .select(self.referrer, self.target, self.spec, &old, false, None)?
        else {
            return Ok(());
        };
        // written as kyaml's scalar setter does; untyped text is not
        // recorded: this runs last, nothing reads it again but the output
        let new = &self.ctx.cands[i].cur.name;
        if *new != old {
            set_scalar_text(self.texts, self.quoted, path, node, |_| Some(new.clone()));
        }
        Ok(())
    }

    fn set_mapping(&mut self, path: &[PathSeg], node: &mut Value) -> Result<()> {
        let Some(m) = node.as_map_mut() else {
            return Ok(());
        };
        let Some(name_v) = m.get("name") else {
            return Err(Error::invalid("path config error; no 'name' field in node"));
        };
        let mut name_path = path.to_vec();
        name_path.push(PathSeg::Key("name".into()));
        let old = match scalar_text_at(self.texts, &name_path, name_v) {
            Some((old, _)) => old.into_owned(),
            None if name_v.is_null() => String::new(),
            None => return Ok(()),
        };
        let ns = m.get("namespace").and_then(Value::scalar_to_string);
        let Some(i) = self.ctx.select(
            self.referrer,
            self.target,
            self.spec,
            &old,
            true,
            ns.as_deref(),
        )?
        else {
            return Ok(());
        };
        let c = &self.ctx.cands[i].cur;
        if c.name == old && c.namespace.is_empty() {
            return Ok(());
        }
        if let Some(name_v) = m.get_mut("name") {
            if name_v.is_null() {
                *name_v = Value::String(c.name.clone());
            } else {
                set_scalar_text(self.texts, self.quoted, &name_path, name_v, |_| {
                    Some(c.name.clone())
                });
            }
        }
        if !c.namespace.is_empty() {
            m.insert("namespace".into(), Value::String(c.namespace.clone()));
        }
        Ok(())
    }
}
