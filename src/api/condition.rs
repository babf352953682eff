//! kstatus-compatible conditions: a fixed set of types and reasons, and one
//! way to set them that keeps `lastTransitionTime` stable.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// The condition types krmsync writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConditionType {
    /// The last reconcile rendered, applied and pruned successfully.
    Ready,
    /// A reconcile is in progress (kstatus: abnormal-true).
    Reconciling,
    /// Progress is impossible until the spec or source changes.
    Stalled,
    /// The bundle rendered.
    Rendered,
    /// The rendered resources were applied (and pruned).
    Applied,
}

impl ConditionType {
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionType::Ready => "Ready",
            ConditionType::Reconciling => "Reconciling",
            ConditionType::Stalled => "Stalled",
            ConditionType::Rendered => "Rendered",
            ConditionType::Applied => "Applied",
        }
    }
}

/// Every reason krmsync writes on a condition (a closed set, so alerts and
/// dashboards can match on it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Succeeded,
    Progressing,
    Suspended,
    InvalidSpec,
    SourceFailed,
    RemoteReference,
    RenderFailed,
    CatalogNotFound,
    CatalogNotAllowed,
    CatalogNotReady,
    /// A KRM function that no usable Catalog of `spec.catalogs` pins (or
    /// whose binary does not match the pin): nothing was applied.
    FunctionNotApproved,
    /// An approved function whose runtime is not run in-cluster (container).
    FunctionUnsupported,
    /// An approved exec function whose binary is neither in the bundle nor
    /// fetchable into the controller's cache.
    FunctionUnavailable,
    /// A function ran and failed (its results are in the message).
    FunctionFailed,
    ApplyFailed,
    PruneFailed,
    StorageFailed,
    Deleting,
    ValidationFailed,
    /// The controller requires a ServiceAccount and the Kustomization names none.
    ServiceAccountRequired,
    /// A rendered object belongs to another Kustomization that still exists.
    OwnershipConflict,
    /// The revision would delete every Namespace the Kustomization applied.
    DeletionRefused,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Succeeded => "Succeeded",
            Reason::Progressing => "Progressing",
            Reason::Suspended => "Suspended",
            Reason::InvalidSpec => "InvalidSpec",
            Reason::SourceFailed => "SourceFailed",
            Reason::RemoteReference => "RemoteReference",
            Reason::RenderFailed => "RenderFailed",
            Reason::CatalogNotFound => "CatalogNotFound",
            Reason::CatalogNotAllowed => "CatalogNotAllowed",
            Reason::CatalogNotReady => "CatalogNotReady",
            Reason::FunctionNotApproved => "FunctionNotApproved",
            Reason::FunctionUnsupported => "FunctionUnsupported",
            Reason::FunctionUnavailable => "FunctionUnavailable",
            Reason::FunctionFailed => "FunctionFailed",
            Reason::ApplyFailed => "ApplyFailed",
            Reason::PruneFailed => "PruneFailed",
            Reason::StorageFailed => "StorageFailed",
            Reason::Deleting => "Deleting",
            Reason::ValidationFailed => "ValidationFailed",
            Reason::ServiceAccountRequired => "ServiceAccountRequired",
            Reason::OwnershipConflict => "OwnershipConflict",
            Reason::DeletionRefused => "DeletionRefused",
        }
    }
}

/// Sets (or replaces) the condition `type_`. `lastTransitionTime` changes
/// only when the status does; a condition is never duplicated.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: ConditionType,
    status: bool,
    reason: Reason,
    message: impl Into<String>,
    generation: Option<i64>,
    now: Time,
) {
    let status = if status { "True" } else { "False" };
    set_condition_status(conditions, type_, status, reason, message, generation, now);
}

/// [`set_condition`] with status `Unknown` (kstatus: e.g. a suspended
/// object, whose readiness is not being checked).
pub fn set_condition_unknown(
    conditions: &mut Vec<Condition>,
    type_: ConditionType,
    reason: Reason,
    message: impl Into<String>,
    generation: Option<i64>,
    now: Time,
) {
    set_condition_status(
        conditions, type_, "Unknown", reason, message, generation, now,
    );
}

fn set_condition_status(
    conditions: &mut Vec<Condition>,
    type_: ConditionType,
    status: &str,
    reason: Reason,
    message: impl Into<String>,
    generation: Option<i64>,
    now: Time,
) {
    let status = status.to_string();
    let message = message.into();
    match conditions.iter_mut().find(|c| c.type_ == type_.as_str()) {
        Some(c) => {
            if c.status != status {
                c.last_transition_time = now;
            }
            c.status = status;
            c.reason = reason.as_str().to_string();
            c.message = message;
            c.observed_generation = generation;
        }
        None => conditions.push(Condition {
            type_: type_.as_str().to_string(),
            status,
            reason: reason.as_str().to_string(),
            message,
            observed_generation: generation,
            last_transition_time: now,
        }),
    }
}

/// Removes the condition `type_` (kstatus: `Reconciling` and `Stalled` are
/// absent rather than `False` when they do not hold).
pub fn remove_condition(conditions: &mut Vec<Condition>, type_: ConditionType) {
    conditions.retain(|c| c.type_ != type_.as_str());
}

/// The condition `type_`, if present.
pub fn find_condition(conditions: &[Condition], type_: ConditionType) -> Option<&Condition> {
    conditions.iter().find(|c| c.type_ == type_.as_str())
}

/// Whether condition `type_` is present with status `True`.
pub fn is_true(conditions: &[Condition], type_: ConditionType) -> bool {
    find_condition(conditions, type_).is_some_and(|c| c.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn t(secs: i64) -> Time {
        Time(Timestamp::from_second(secs).unwrap())
    }

    #[test]
    fn transition_time_changes_only_with_status() {
        let mut c = Vec::new();
        set_condition(
            &mut c,
            ConditionType::Ready,
            false,
            Reason::Progressing,
            "a",
            Some(1),
            t(10),
        );
        set_condition(
            &mut c,
            ConditionType::Ready,
            false,
            Reason::RenderFailed,
            "b",
            Some(2),
            t(20),
        );
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].last_transition_time, t(10));
        assert_eq!(c[0].reason, "RenderFailed");
        assert_eq!(c[0].observed_generation, Some(2));
        set_condition(
            &mut c,
            ConditionType::Ready,
            true,
            Reason::Succeeded,
            "ok",
            Some(2),
            t(30),
        );
        assert_eq!(c[0].last_transition_time, t(30));
        assert!(is_true(&c, ConditionType::Ready));
        remove_condition(&mut c, ConditionType::Ready);
        assert!(find_condition(&c, ConditionType::Ready).is_none());
    }
}
