//! The one path through which status is written: a merge patch of the
//! status subresource, sent only when the status actually changed (so a
//! steady-state reconcile writes nothing).

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::FIELD_MANAGER;

/// Writes `new` as the status of `name` unless it equals `old`.
/// Returns whether a write happened. A field `old` has and `new` lacks is
/// removed (a merge patch keeps what it does not name).
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
    let patch = serde_json::json!({ "status": merge_patch(old, new) });
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

/// `new`, with a `null` for each top-level field only `old` has.
fn merge_patch<S: Serialize>(old: Option<&S>, new: &S) -> serde_json::Value {
    let mut patch = serde_json::to_value(new).unwrap_or_default();
    let old = old.and_then(|o| serde_json::to_value(o).ok());
    if let (Some(serde_json::Value::Object(old)), serde_json::Value::Object(fields)) =
        (old, &mut patch)
    {
        for key in old.keys() {
            if !fields.contains_key(key) {
                fields.insert(key.clone(), serde_json::Value::Null);
            }
        }
    }
    patch
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_field_only_the_old_status_has_is_removed() {
        let old = json!({"a": 1, "gone": {"x": 1}, "kept": [1]});
        let new = json!({"a": 2, "kept": [1], "added": true});
        assert_eq!(
            merge_patch(Some(&old), &new),
            json!({"a": 2, "gone": null, "kept": [1], "added": true})
        );
        assert_eq!(merge_patch(None, &new), new);
    }
}
