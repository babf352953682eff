//! Output ordering: kustomize's "legacy" order and FIFO.

use std::collections::HashMap;

use super::resid::{Gvk, ResId};
use super::resource::Resource;

/// Kinds printed first in legacy order.
pub const DEFAULT_ORDER_FIRST: &[&str] = &[
    "Namespace",
    "ResourceQuota",
    "StorageClass",
    "CustomResourceDefinition",
    "ServiceAccount",
    "PodSecurityPolicy",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "ConfigMap",
    "Secret",
    "Endpoints",
    "Service",
    "LimitRange",
    "PriorityClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Deployment",
    "StatefulSet",
    "CronJob",
    "PodDisruptionBudget",
];

/// Kinds printed last in legacy order.
pub const DEFAULT_ORDER_LAST: &[&str] = &[
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// kustomize's type order of a kind (`resid.typeOrders`): negative for
/// the kinds printed first, positive for those printed last, 0 otherwise.
pub fn kind_rank(kind: &str) -> i64 {
    if let Some(i) = DEFAULT_ORDER_FIRST.iter().position(|k| *k == kind) {
        return i as i64 - DEFAULT_ORDER_FIRST.len() as i64;
    }
    if let Some(i) = DEFAULT_ORDER_LAST.iter().position(|k| *k == kind) {
        return 1 + i as i64;
    }
    0
}

fn gvk_sort_string(g: &Gvk) -> String {
    g.legacy_string()
}

fn id_sort_string(id: &ResId) -> String {
    let ns = if id.namespace.is_empty() {
        "~X"
    } else {
        &id.namespace
    };
    let name = if id.name.is_empty() { "~N" } else { &id.name };
    format!("{}|{ns}|{name}", gvk_sort_string(&id.gvk))
}

/// Sorts in kustomize's legacy order, with the given first/last kind lists.
pub fn legacy_sort(resources: &mut [Resource], first: &[String], last: &[String]) {
    let mut rank: HashMap<&str, i64> = HashMap::new();
    let nfirst = first.len() as i64;
    for (i, k) in first.iter().enumerate() {
        rank.insert(k.as_str(), -nfirst + i as i64);
    }
    for (i, k) in last.iter().enumerate() {
        rank.insert(k.as_str(), 1 + i as i64);
    }
    let mut keyed: Vec<(i64, String, String, usize)> = resources
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let id = r.cur_id();
            (
                rank.get(id.gvk.kind.as_str()).copied().unwrap_or(0),
                gvk_sort_string(&id.gvk),
                id_sort_string(&id),
                i,
            )
        })
        .collect();
    let gvks: Vec<Gvk> = resources.iter().map(Resource::gvk).collect();
    keyed.sort_by(|a, b| {
        let (ga, gb) = (&gvks[a.3], &gvks[b.3]);
        if ga != gb {
            if a.0 != b.0 {
                return a.0.cmp(&b.0);
            }
            // kustomize's `gvkLessThan`: two Namespaces, one of them in
            // the core group, compare their sort strings the other way
            // round (`~G` then sorts first, and so does `~V` among core
            // ones)
            if ga.kind == "Namespace"
                && gb.kind == "Namespace"
                && (ga.group.is_empty() || gb.group.is_empty())
            {
                return b.1.cmp(&a.1);
            }
            return a.1.cmp(&b.1);
        }
        a.2.cmp(&b.2)
    });
    let order: Vec<usize> = keyed.into_iter().map(|k| k.3).collect();
    apply_permutation(resources, &order);
}

fn apply_permutation(resources: &mut [Resource], order: &[usize]) {
    let mut taken: Vec<Option<Resource>> = resources
        .iter_mut()
        .map(|r| Some(std::mem::take(r)))
        .collect();
    for (slot, &src) in resources.iter_mut().zip(order) {
        if let Some(r) = taken.get_mut(src).and_then(Option::take) {
            *slot = r;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kustomize::yaml::parse::parse_documents_strict as parse_documents;

    fn defaults() -> (Vec<String>, Vec<String>) {
        (
            DEFAULT_ORDER_FIRST.iter().map(|s| s.to_string()).collect(),
            DEFAULT_ORDER_LAST.iter().map(|s| s.to_string()).collect(),
        )
    }

    #[test]
    fn legacy_order() {
        let docs = parse_documents(
            "kind: ValidatingWebhookConfiguration\napiVersion: admissionregistration.k8s.io/v1\nmetadata: {name: w}\n---\n\
             kind: Deployment\napiVersion: apps/v1\nmetadata: {name: b}\n---\n\
             kind: Foo\napiVersion: x.io/v1\nmetadata: {name: f}\n---\n\
             kind: Deployment\napiVersion: apps/v1\nmetadata: {name: a}\n---\n\
             kind: Namespace\napiVersion: v1\nmetadata: {name: n}\n---\n\
             kind: Namespace\napiVersion: x.io/v1\nmetadata: {name: n}\n",
        )
        .unwrap();
        let mut rs: Vec<Resource> = docs.into_iter().map(Resource::new).collect();
        let (f, l) = defaults();
        legacy_sort(&mut rs, &f, &l);
        let got: Vec<String> = rs
            .iter()
            .map(|r| format!("{}/{}", r.kind(), r.api_version()))
            .collect();
        assert_eq!(
            got,
            vec![
                "Namespace/v1",
                "Namespace/x.io/v1",
                "Deployment/apps/v1",
                "Deployment/apps/v1",
                "Foo/x.io/v1",
                "ValidatingWebhookConfiguration/admissionregistration.k8s.io/v1"
            ]
        );
        assert_eq!(rs[2].name(), "a");
    }
}
