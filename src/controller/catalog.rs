//! Reconciling a `Catalog`: validate it (KEP-2906 rules) and report.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};

use super::context::Context;
use super::error::Error;
use super::status;
use crate::api::condition::{ConditionType, Reason, set_condition};
use crate::api::{Catalog, CatalogStatus};

/// The status a catalog should have.
pub fn desired_status(c: &Catalog) -> CatalogStatus {
    let mut st = c.status.clone().unwrap_or_default();
    let errors = c.spec.validate();
    let generation = c.metadata.generation;
    let now = Time(Timestamp::now());
    st.observed_generation = generation;
    st.function_count = c.spec.krm_functions.len() as i64;
    if errors.is_empty() {
        set_condition(
            &mut st.conditions,
            ConditionType::Ready,
            true,
            Reason::Succeeded,
            format!("{} functions approved", st.function_count),
            generation,
            now,
        );
    } else {
        set_condition(
            &mut st.conditions,
            ConditionType::Ready,
            false,
            Reason::ValidationFailed,
            errors.join("; "),
            generation,
            now,
        );
    }
    st
}

pub async fn reconcile(c: Arc<Catalog>, ctx: Arc<Context>) -> Result<Action, Error> {
    let api: Api<Catalog> = Api::all(ctx.client.clone());
    let st = desired_status(&c);
    status::write(&api, &c.name_any(), c.status.as_ref(), &st).await?;
    Ok(Action::await_change())
}

pub fn error_policy(c: Arc<Catalog>, err: &Error, _ctx: Arc<Context>) -> Action {
    tracing::warn!(catalog = %c.name_any(), error = %err, "catalog reconcile error");
    Action::requeue(Duration::from_secs(15))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::CatalogSpec;

    #[test]
    fn invalid_catalog_is_not_ready_with_every_error() {
        let spec: CatalogSpec = serde_saphyr::from_str(
            "krmFunctions:\n- group: g\n  names: {kind: K}\n  versions:\n  - name: v1\n    runtime: {exec: {platforms: [{bin: b, os: linux, arch: amd64, uri: u}]}}\n",
        )
        .unwrap();
        let mut c = Catalog::new("c", spec);
        c.metadata.generation = Some(3);
        let st = desired_status(&c);
        assert_eq!(st.function_count, 1);
        assert_eq!(st.observed_generation, Some(3));
        let ready = &st.conditions[0];
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "ValidationFailed")
        );
        assert!(ready.message.contains("sha256"), "{}", ready.message);
    }
}
