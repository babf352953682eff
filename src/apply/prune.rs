//! Deleting (or releasing) what a previous apply wrote and the current one
//! no longer renders.
//!
//! Every candidate is looked at live before anything is done:
//!
//! * gone, or of a kind no served version has: nothing to do;
//! * not carrying our owner labels: left alone, and when another
//!   Kustomization owns it, reported as lost to it (a hand-over);
//! * annotated `krmsync.dev/prune: disabled`, adopted (krmsync did not
//!   create it), or a Namespace or CRD without
//!   [`ApplyOptions::delete_namespaces_and_crds`]: *released*, i.e. our
//!   owner labels and annotations are removed and the object stays;
//! * otherwise deleted (background propagation).
//!
//! A revision that would delete every Namespace of the previous inventory
//! (two or more) is refused as a whole unless
//! [`ApplyOptions::allow_namespace_mass_deletion`].

use std::collections::HashSet;

use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams};

use super::{Applier, ApplyError, ApplyOptions, ObjectRef, Ownership, parse_inventory_entry};
use crate::api::kustomization::{Inventory, InventoryEntry};
use crate::api::{
    CREATED_BY_ANNOTATION, NAME_LABEL, NAMESPACE_LABEL, OWNER_ANNOTATION, PRUNE_ANNOTATION,
    owner_id,
};

/// What a prune did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PruneReport {
    /// Deleted (deletion requested, background propagation), in order.
    pub deleted: Vec<InventoryEntry>,
    /// Left in place with our owner labels removed, with the reason.
    pub released: Vec<(InventoryEntry, String)>,
    /// Now owned by another Kustomization (`<namespace>/<name>`): left alone.
    pub lost: Vec<(InventoryEntry, String)>,
    /// Left alone for another reason (gone, not ours, malformed entry).
    pub skipped: Vec<(InventoryEntry, String)>,
}

/// What to do with one candidate.
enum Decision {
    Delete(kube::Api<DynamicObject>),
    Release(kube::Api<DynamicObject>, String),
    Lost(String),
    Skip(String),
}

/// Deletes or releases the entries of `previous` whose id is not in
/// `current`, in reverse apply order: everything else first (last applied
/// first), then Namespaces, then CustomResourceDefinitions.
pub(crate) async fn prune(
    applier: &Applier,
    previous: &Inventory,
    current: &Inventory,
    opts: &ApplyOptions,
) -> Result<PruneReport, ApplyError> {
    let keep: HashSet<&str> = current.entries.iter().map(|e| e.id.as_str()).collect();
    let mut report = PruneReport::default();
    let mut seen = HashSet::new();
    let mut others = Vec::new();
    let mut namespaces = Vec::new();
    let mut crds = Vec::new();
    for e in &previous.entries {
        if keep.contains(e.id.as_str()) || !seen.insert(e.id.as_str()) {
            continue;
        }
        match parse_inventory_entry(e) {
            None => report
                .skipped
                .push((e.clone(), "malformed inventory entry".to_string())),
            Some(r) if r.is_crd() => crds.push((e, r)),
            Some(r) if r.is_namespace() => namespaces.push((e, r)),
            Some(r) => others.push((e, r)),
        }
    }
    others.reverse();
    namespaces.reverse();
    crds.reverse();
    let mut decided = Vec::new();
    for (e, r) in others.into_iter().chain(namespaces).chain(crds) {
        let d = decide(applier, &r, opts).await?;
        decided.push((e, r, d));
    }

    // the mass-deletion guard: every Namespace of the previous revision
    let previous_namespaces = previous
        .entries
        .iter()
        .filter_map(parse_inventory_entry)
        .filter(|r| r.is_namespace())
        .count();
    let deleting: Vec<&str> = decided
        .iter()
        .filter(|(_, r, d)| r.is_namespace() && matches!(d, Decision::Delete(_)))
        .map(|(_, r, _)| r.name.as_str())
        .collect();
    if previous_namespaces >= 2
        && deleting.len() == previous_namespaces
        && !opts.allow_namespace_mass_deletion
    {
        return Err(ApplyError::DeletionRefused(format!(
            "refusing to delete all {} Namespaces of the previous revision at once ({}); \
             nothing was pruned. If this is intended, annotate the Kustomization \
             {}=\"true\"",
            deleting.len(),
            deleting.join(", "),
            crate::api::ALLOW_NAMESPACE_MASS_DELETION_ANNOTATION
        )));
    }

    for (e, r, d) in decided {
        match d {
            Decision::Delete(api) => match api.delete(&r.name, &DeleteParams::background()).await {
                Ok(_) => report.deleted.push(e.clone()),
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    report.skipped.push((e.clone(), "already gone".to_string()))
                }
                Err(source) => {
                    return Err(ApplyError::Api {
                        object: r.to_string(),
                        source,
                    });
                }
            },
            Decision::Release(api, why) => {
                release(&api, &r).await?;
                report.released.push((e.clone(), why));
            }
            Decision::Lost(owner) => report.lost.push((e.clone(), owner)),
            Decision::Skip(why) => report.skipped.push((e.clone(), why)),
        }
    }
    Ok(report)
}

/// Where the cluster serves a recorded object's kind now, or why it is
/// skipped.
async fn resolve_recorded(
    discovery: &super::DiscoveryCache,
    r: &ObjectRef,
) -> Result<Result<super::Resolved, Decision>, ApplyError> {
    let resolved = match discovery.resolve(&r.group, &r.version, &r.kind).await? {
        Some(found) => found,
        // recorded under a version no longer served: find the kind again
        None => match discovery.resolve_any_version(&r.group, &r.kind).await? {
            Some(found) => found,
            None => {
                return Ok(Err(Decision::Skip(format!(
                    "the cluster serves no {} in group '{}' any more (its objects are gone)",
                    r.kind, r.group
                ))));
            }
        },
    };
    if resolved.namespaced != r.namespace.is_some() {
        return Ok(Err(Decision::Skip(format!(
            "the inventory scope does not match the cluster's ({} is {})",
            r.kind,
            if resolved.namespaced {
                "namespaced"
            } else {
                "cluster-scoped"
            }
        ))));
    }
    Ok(Ok(resolved))
}

/// The API of `r`'s kind as `resolved` and `r`'s live metadata there, if
/// that finds it.
async fn live_metadata(
    applier: &Applier,
    r: &ObjectRef,
    resolved: &super::Resolved,
) -> Result<
    Option<(
        kube::Api<DynamicObject>,
        kube::core::PartialObjectMeta<DynamicObject>,
    )>,
    ApplyError,
> {
    let api: kube::Api<DynamicObject> = match &r.namespace {
        Some(ns) => kube::Api::namespaced_with(applier.client().clone(), ns, &resolved.resource),
        None => kube::Api::all_with(applier.client().clone(), &resolved.resource),
    };
    let found = api
        .get_metadata_opt(&r.name)
        .await
        .map_err(|source| ApplyError::Api {
            object: r.to_string(),
            source,
        })?;
    Ok(found.map(|obj| (api, obj)))
}

/// Looks at one candidate (writes nothing).
async fn decide(
    applier: &Applier,
    r: &ObjectRef,
    opts: &ApplyOptions,
) -> Result<Decision, ApplyError> {
    let discovery = applier.discovery();
    let mut resolved = match resolve_recorded(discovery, r).await? {
        Ok(found) => found,
        Err(skip) => return Ok(skip),
    };
    let mut found = live_metadata(applier, r, &resolved).await?;
    if found.is_none() {
        // A 404 is also what a version the cluster stopped serving
        // answers: with a (shared) discovery entry older than that change
        // the object would look gone and never be pruned. Ask discovery
        // again once; only the same answer means the object is gone.
        let used = resolved.resource.api_version.clone();
        discovery.forget(&resolved.resource.group, &resolved.resource.version);
        discovery.forget(&r.group, &r.version);
        resolved = match resolve_recorded(discovery, r).await? {
            Ok(found) => found,
            Err(skip) => return Ok(skip),
        };
        if resolved.resource.api_version != used {
            found = live_metadata(applier, r, &resolved).await?;
        }
    }
    let Some((api, obj)) = found else {
        return Ok(Decision::Skip("already gone".to_string()));
    };
    let created = match opts.ownership(&obj.metadata) {
        Ownership::None => return Ok(Decision::Skip("not ours: no owner labels".to_string())),
        Ownership::Other { namespace, name } => {
            return Ok(Decision::Lost(owner_id(&namespace, &name)));
        }
        Ownership::Ours { created } => created,
    };
    let annotations = obj.metadata.annotations.unwrap_or_default();
    if annotations.get(PRUNE_ANNOTATION).map(String::as_str) == Some("disabled") {
        return Ok(Decision::Release(
            api,
            format!("annotated {PRUNE_ANNOTATION}: disabled"),
        ));
    }
    if !created {
        return Ok(Decision::Release(
            api,
            "adopted: it existed before krmsync applied it".to_string(),
        ));
    }
    if (r.is_namespace() || r.is_crd()) && !opts.delete_namespaces_and_crds {
        return Ok(Decision::Release(
            api,
            format!(
                "a {} is deleted only with spec.deleteNamespacesAndCRDs",
                r.kind
            ),
        ));
    }
    Ok(Decision::Delete(api))
}

/// Removes our owner labels and annotations (a merge patch), leaving the
/// object in place and free to be adopted.
async fn release(api: &kube::Api<DynamicObject>, r: &ObjectRef) -> Result<(), ApplyError> {
    let patch = serde_json::json!({"metadata": {
        "labels": {NAME_LABEL: null, NAMESPACE_LABEL: null},
        "annotations": {OWNER_ANNOTATION: null, CREATED_BY_ANNOTATION: null},
    }});
    match api
        .patch(&r.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(source) => Err(ApplyError::Api {
            object: r.to_string(),
            source,
        }),
    }
}
