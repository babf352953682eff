//! Errors of a reconcile.
//!
//! A [`Failure`] is an expected outcome (bad source, render error, apply
//! refused): it is written to status as a `False` condition with a reason
//! and retried later. An [`Error`] is a failure to talk to the API server
//! about the Kustomization itself (status or finalizer writes): it goes to
//! the controller's `error_policy` and is retried with backoff.

use crate::api::Reason;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("{0}")]
    Invalid(String),
}

/// Where a reconcile stopped, with a message naming the file, field or
/// object at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    InvalidSpec(String),
    ServiceAccountRequired(String),
    OwnershipConflict(String),
    DeletionRefused(String),
    CatalogNotFound(String),
    CatalogNotAllowed(String),
    CatalogNotReady(String),
    FunctionNotApproved(String),
    FunctionUnsupported(String),
    FunctionUnavailable(String),
    FunctionFailed(String),
    Source(String),
    RemoteReference(String),
    Render(String),
    Apply(String),
    Prune(String),
    Storage(String),
}

impl Failure {
    pub fn reason(&self) -> Reason {
        match self {
            Failure::InvalidSpec(_) => Reason::InvalidSpec,
            Failure::ServiceAccountRequired(_) => Reason::ServiceAccountRequired,
            Failure::OwnershipConflict(_) => Reason::OwnershipConflict,
            Failure::DeletionRefused(_) => Reason::DeletionRefused,
            Failure::CatalogNotFound(_) => Reason::CatalogNotFound,
            Failure::CatalogNotAllowed(_) => Reason::CatalogNotAllowed,
            Failure::CatalogNotReady(_) => Reason::CatalogNotReady,
            Failure::FunctionNotApproved(_) => Reason::FunctionNotApproved,
            Failure::FunctionUnsupported(_) => Reason::FunctionUnsupported,
            Failure::FunctionUnavailable(_) => Reason::FunctionUnavailable,
            Failure::FunctionFailed(_) => Reason::FunctionFailed,
            Failure::Source(_) => Reason::SourceFailed,
            Failure::RemoteReference(_) => Reason::RemoteReference,
            Failure::Render(_) => Reason::RenderFailed,
            Failure::Apply(_) => Reason::ApplyFailed,
            Failure::Prune(_) => Reason::PruneFailed,
            Failure::Storage(_) => Reason::StorageFailed,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Failure::InvalidSpec(m)
            | Failure::ServiceAccountRequired(m)
            | Failure::OwnershipConflict(m)
            | Failure::DeletionRefused(m)
            | Failure::CatalogNotFound(m)
            | Failure::CatalogNotAllowed(m)
            | Failure::CatalogNotReady(m)
            | Failure::FunctionNotApproved(m)
            | Failure::FunctionUnsupported(m)
            | Failure::FunctionUnavailable(m)
            | Failure::FunctionFailed(m)
            | Failure::Source(m)
            | Failure::RemoteReference(m)
            | Failure::Render(m)
            | Failure::Apply(m)
            | Failure::Prune(m)
            | Failure::Storage(m) => m,
        }
    }

    /// Whether the failure happened before anything was applied (the
    /// `Rendered` condition is `False`; `Applied` keeps describing the
    /// previous apply).
    pub fn before_apply(&self) -> bool {
        !matches!(
            self,
            Failure::Apply(_)
                | Failure::Prune(_)
                | Failure::Storage(_)
                | Failure::OwnershipConflict(_)
                | Failure::DeletionRefused(_)
        )
    }

    /// Whether retrying cannot help until the spec changes (kstatus `Stalled`).
    pub fn stalls(&self) -> bool {
        matches!(
            self,
            Failure::InvalidSpec(_) | Failure::ServiceAccountRequired(_)
        )
    }
}

impl From<crate::kustomize::Error> for Failure {
    fn from(e: crate::kustomize::Error) -> Failure {
        use crate::kustomize::ErrorKind;
        match e.kind {
            ErrorKind::RemoteReference => Failure::RemoteReference(e.message),
            ErrorKind::FunctionNotApproved => Failure::FunctionNotApproved(e.message),
            ErrorKind::FunctionUnsupported => Failure::FunctionUnsupported(e.message),
            ErrorKind::FunctionUnavailable => Failure::FunctionUnavailable(e.message),
            ErrorKind::FunctionFailed => Failure::FunctionFailed(e.message),
            ErrorKind::HelmNotEnabled => Failure::FunctionUnsupported(format!(
                "helm charts are not rendered in-cluster: the controller does not run helm; \
                 render the chart with `krmsync build --enable-helm` and put the output in \
                 the bundle ({})",
                e.message
            )),
            ErrorKind::Invalid | ErrorKind::Io | ErrorKind::Security => Failure::Render(e.message),
        }
    }
}
