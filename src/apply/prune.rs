//! Deleting what a previous apply wrote and the current one no longer does.

use std::collections::HashSet;

use kube::api::{DeleteParams, DynamicObject};

use super::{Applier, ApplyError, ApplyOptions, ObjectRef, parse_inventory_entry};
use crate::api::kustomization::{Inventory, InventoryEntry};
use crate::api::{NAME_LABEL, NAMESPACE_LABEL};

/// What a prune did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PruneReport {
    /// Deleted (deletion requested, background propagation), in order.
    pub deleted: Vec<InventoryEntry>,
    /// Left alone, with the reason.
    pub skipped: Vec<(InventoryEntry, String)>,
}

/// Deletes the entries of `previous` whose id is not in `current`, in reverse
/// apply order: everything else first (last applied first), then
/// Namespaces, then CustomResourceDefinitions. An object is deleted only
/// when it exists and carries both owner labels with our values.
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
    for (e, r) in others.into_iter().chain(namespaces).chain(crds) {
        match prune_one(applier, &r, opts).await? {
            Ok(()) => report.deleted.push(e.clone()),
            Err(why) => report.skipped.push((e.clone(), why)),
        }
    }
    Ok(report)
}

/// `Ok(Ok(()))` deleted, `Ok(Err(why))` skipped.
async fn prune_one(
    applier: &Applier,
    r: &ObjectRef,
    opts: &ApplyOptions,
) -> Result<Result<(), String>, ApplyError> {
    let api_err = |source| ApplyError::Api {
        object: r.to_string(),
        source,
    };
    let Some(resolved) = applier
        .discovery()
        .resolve(&r.group, &r.version, &r.kind)
        .await?
    else {
        return Ok(Err(format!(
            "the cluster no longer serves {} {}",
            r.api_version(),
            r.kind
        )));
    };
    if resolved.namespaced != r.namespace.is_some() {
        return Ok(Err(format!(
            "the inventory scope does not match the cluster's ({} is {})",
            r.kind,
            if resolved.namespaced {
                "namespaced"
            } else {
                "cluster-scoped"
            }
        )));
    }
    let api: kube::Api<DynamicObject> = match &r.namespace {
        Some(ns) => kube::Api::namespaced_with(applier.client().clone(), ns, &resolved.resource),
        None => kube::Api::all_with(applier.client().clone(), &resolved.resource),
    };
    let Some(obj) = api.get_opt(&r.name).await.map_err(api_err)? else {
        return Ok(Err("already gone".to_string()));
    };
    let labels = obj.metadata.labels.unwrap_or_default();
    for (label, want) in [
        (NAME_LABEL, &opts.owner_name),
        (NAMESPACE_LABEL, &opts.owner_namespace),
    ] {
        match labels.get(label) {
            Some(v) if v == want => {}
            Some(v) => {
                return Ok(Err(format!(
                    "not ours: label {label} is '{v}', not '{want}'"
                )));
            }
            None => return Ok(Err(format!("not ours: label {label} is missing"))),
        }
    }
    match api.delete(&r.name, &DeleteParams::background()).await {
        Ok(_) => Ok(Ok(())),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(Err("already gone".to_string())),
        Err(e) => Err(api_err(e)),
    }
}
