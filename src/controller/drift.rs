//! Self-healing: metadata-only watches of the kinds Kustomizations applied,
//! so an object deleted, or changed by another field manager, brings its
//! Kustomization back within seconds instead of at the next interval.
//!
//! * One watch per kind (group, version, kind) found in an inventory, over
//!   the whole cluster, limited to objects carrying the `krmsync.dev/name`
//!   label; metadata only (no object bodies are held: memory grows with the
//!   number of kinds, not of objects).
//! * An event names its owner through the `krmsync.dev/owner` annotation.
//!   A deletion always counts; a change counts unless the newest
//!   `managedFields` entry is krmsync's own (its own apply). The initial
//!   listing never counts.
//! * The owner is marked dirty (its next reconcile runs in full even when
//!   it is not due) and queued with the controller.
//! * The watches use the controller's own identity. Where it may not list a
//!   kind (the multi-tenant lockdown grants it no such right), the watch
//!   reports the error once and keeps retrying with backoff; those objects
//!   are restored at the next interval instead.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::channel::mpsc::UnboundedSender;
use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::core::GroupVersionKind;
use kube::core::PartialObjectMeta;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::{self, Event};

use crate::api::kustomization::Inventory;
use crate::api::{FIELD_MANAGER, Kustomization};

const NAME_LABEL: &str = "krmsync.dev/name";
const OWNER_ANNOTATION: &str = "krmsync.dev/owner";

/// The self-healing watches of one controller.
pub struct DriftWatch {
    client: Client,
    queue: UnboundedSender<ObjectRef<Kustomization>>,
    kinds: Mutex<HashSet<(String, String, String)>>,
    dirty: Arc<Mutex<HashSet<String>>>,
}

impl DriftWatch {
    /// Watches feed `queue` (the controller's `reconcile_on` stream).
    pub fn new(client: Client, queue: UnboundedSender<ObjectRef<Kustomization>>) -> DriftWatch {
        DriftWatch {
            client,
            queue,
            kinds: Mutex::default(),
            dirty: Arc::default(),
        }
    }

    /// Whether the Kustomization of memory key `key` (see [`memory_key`])
    /// drifted since its last reconcile; clears the mark.
    pub fn take_dirty(&self, key: &str) -> bool {
        self.dirty
            .lock()
            .map(|mut d| d.remove(key))
            .unwrap_or(false)
    }

    /// Starts watching the kinds of `inventory` not watched yet.
    pub fn observe(&self, inventory: &Inventory) {
        for e in &inventory.entries {
            let Some(r) = crate::apply::parse_inventory_entry(e) else {
                continue;
            };
            let key = (r.group.clone(), r.version.clone(), r.kind.clone());
            let new = self
                .kinds
                .lock()
                .map(|mut k| k.insert(key))
                .unwrap_or(false);
            if new {
                let gvk = GroupVersionKind::gvk(&r.group, &r.version, &r.kind);
                tokio::spawn(watch_kind(
                    self.client.clone(),
                    gvk,
                    self.queue.clone(),
                    self.dirty.clone(),
                ));
            }
        }
    }
}

/// The controller's memory key of a Kustomization (`namespace_name`).
pub fn memory_key(namespace: &str, name: &str) -> String {
    format!("{namespace}_{name}")
}

/// The owner of a changed object, when the change should be healed.
fn owner_to_heal(meta: &kube::api::ObjectMeta, deleted: bool) -> Option<(String, String)> {
    let owner = meta.annotations.as_ref()?.get(OWNER_ANNOTATION)?;
    let (ns, name) = owner.split_once('/')?;
    if !deleted {
        // our own apply is not drift: the newest managedFields entry tells
        let newest = meta
            .managed_fields
            .iter()
            .flatten()
            .filter(|m| m.time.is_some())
            .max_by_key(|m| m.time.as_ref().map(|t| t.0))?;
        if newest.manager.as_deref() == Some(FIELD_MANAGER) {
            return None;
        }
    }
    Some((ns.to_string(), name.to_string()))
}

async fn watch_kind(
    client: Client,
    gvk: GroupVersionKind,
    queue: UnboundedSender<ObjectRef<Kustomization>>,
    dirty: Arc<Mutex<HashSet<String>>>,
) {
    let what = format!("{}/{} {}", gvk.group, gvk.version, gvk.kind);
    let ar = match kube::discovery::pinned_kind(&client, &gvk).await {
        Ok((ar, _)) => ar,
        Err(e) => {
            tracing::warn!(kind = %what, error = %e, "self-healing: cannot watch this kind (discovery)");
            return;
        }
    };
    // metadata only: Api<PartialObjectMeta<_>> asks for PartialObjectMetadata
    let api: Api<PartialObjectMeta<DynamicObject>> = Api::all_with(client, &ar);
    let config = watcher::Config::default().labels(NAME_LABEL);
    let mut stream = watcher::watcher(api, config).default_backoff().boxed();
    tracing::debug!(kind = %what, "self-healing: watching");
    let mut reported = false;
    let mut listed = false;
    while let Some(ev) = stream.next().await {
        let (meta, deleted) = match ev {
            Ok(Event::Init) => {
                listed = false;
                continue;
            }
            Ok(Event::InitApply(_)) => continue,
            Ok(Event::InitDone) => {
                listed = true;
                continue;
            }
            Ok(Event::Apply(o)) if listed => (o.metadata, false),
            Ok(Event::Apply(_)) => continue,
            Ok(Event::Delete(o)) => (o.metadata, true),
            Err(e) => {
                if !reported {
                    tracing::warn!(kind = %what, error = %e,
                        "self-healing: watching this kind failed (objects of it are restored at the next interval; retrying)");
                    reported = true;
                }
                continue;
            }
        };
        if let Some((ns, name)) = owner_to_heal(&meta, deleted) {
            tracing::info!(kind = %what, object = %meta.name.clone().unwrap_or_default(),
                kustomization = %format!("{ns}/{name}"),
                event = if deleted { "deleted" } else { "changed by another manager" },
                "self-healing: reconciling the owner");
            if let Ok(mut d) = dirty.lock() {
                d.insert(memory_key(&ns, &name));
            }
            let _ = queue.unbounded_send(ObjectRef::new(&name).within(&ns));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, Time};
    use k8s_openapi::jiff::Timestamp;

    fn meta(managers: &[(&str, i64)]) -> kube::api::ObjectMeta {
        kube::api::ObjectMeta {
            annotations: Some([(OWNER_ANNOTATION.to_string(), "apps/site".to_string())].into()),
            managed_fields: Some(
                managers
                    .iter()
                    .map(|(m, t)| ManagedFieldsEntry {
                        manager: Some(m.to_string()),
                        time: Some(Time(Timestamp::from_second(*t).unwrap())),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn only_other_managers_changes_and_deletions_heal() {
        let ours = meta(&[("kubectl", 10), (FIELD_MANAGER, 20)]);
        assert_eq!(owner_to_heal(&ours, false), None);
        assert_eq!(
            owner_to_heal(&ours, true),
            Some(("apps".into(), "site".into()))
        );
        let theirs = meta(&[(FIELD_MANAGER, 10), ("kubectl-edit", 20)]);
        assert_eq!(
            owner_to_heal(&theirs, false),
            Some(("apps".into(), "site".into()))
        );
        let unowned = kube::api::ObjectMeta::default();
        assert_eq!(owner_to_heal(&unowned, true), None);
    }
}
