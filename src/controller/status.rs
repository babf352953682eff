//! The one path through which status is written: a merge patch of the
//! status subresource, sent only when the status actually changed (so a
//! steady-state reconcile writes nothing).

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::FIELD_MANAGER;

/// Writes `new` as the status of `name` unless it equals `old`.
/// Returns whether a write happened.
pub async fn write<K, S>(
    api: &Api<K>,
    name: &str,
    old: Option<&S>,
    new: &S,
) -> Result<bool, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
    S: Serialize + PartialEq,
{
    if old == Some(new) {
        return Ok(false);
    }
    let patch = serde_json::json!({ "status": new });
    api.patch_status(
        name,
        &PatchParams {
            field_manager: Some(FIELD_MANAGER.to_string()),
            ..PatchParams::default()
        },
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(true)
}
