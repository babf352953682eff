//! Reconciling a `Kustomization`: fetch, check catalogs, render, apply,
//! prune, store, report.
//!
//! Invariants: nothing is applied unless the whole bundle rendered; nothing
//! is pruned unless everything applied; a failed fetch, render or apply
//! never deletes anything. Every outcome ends in status (one write, through
//! [`super::status`]) with a condition reason from a fixed set.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, Client, Resource, ResourceExt};
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::context::{CachedRender, Context};
use super::error::{Error, Failure};
use super::events::EventType;
use super::functions::RenderFunctions;
use super::render::{render_memory_with, render_tree_with};
use super::{status, storage};
use crate::api::condition::{
    ConditionType, Reason, remove_condition, set_condition, set_condition_unknown,
};
use crate::api::kustomization::{
    DeletionPolicy, Inventory, InventoryEntry, KustomizationStatus, PendingInventory,
};
use crate::api::{
    ADOPT_ANNOTATION, ALLOW_NAMESPACE_MASS_DELETION_ANNOTATION, FIELD_MANAGER, FINALIZER,
    Kustomization, PENDING_INVENTORY_ANNOTATION, RECONCILE_AT_ANNOTATION, owner_id,
};
use crate::apply::{Action as ApplyAction, AppliedMemory, Applier, ApplyError, ApplyOptions};
use crate::catalog::cluster::{ApprovedCatalog, RefusedCatalog};
use crate::source::{self, GitAuth, GitReference};

/// Workspace key of a Kustomization.
fn key(k: &Kustomization) -> String {
    super::drift::memory_key(&k.ns(), &k.name_any())
}

fn now() -> Time {
    Time(Timestamp::now())
}

fn secs(d: Duration) -> String {
    format!("{:.3}s", d.as_secs_f64())
}

/// `d` plus or minus up to 5%, so many Kustomizations with the same
/// interval do not reconcile in lockstep.
fn jitter(d: Duration) -> Duration {
    let r = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let span = d.as_millis() as u64 / 10;
    if span == 0 {
        return d;
    }
    let offset = r % span;
    (d + Duration::from_millis(offset)).saturating_sub(Duration::from_millis(span / 2))
}

fn interval(k: &Kustomization) -> Duration {
    Duration::from(k.spec.interval)
}

fn retry_interval(k: &Kustomization) -> Duration {
    k.spec
        .retry_interval
        .map(Duration::from)
        .unwrap_or_else(|| interval(k))
}

fn timeout(k: &Kustomization, ctx: &Context) -> Duration {
    k.spec
        .timeout
        .map(Duration::from)
        .unwrap_or_else(|| interval(k).min(ctx.settings.default_timeout))
}

/// Entry point for the controller runtime.
pub async fn reconcile(k: Arc<Kustomization>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let result = reconcile_inner(&k, &ctx).await;
    ctx.metrics
        .reconcile_duration
        .observe(started.elapsed().as_secs_f64());
    result
}

/// The controller's error policy: API trouble with the Kustomization itself
/// (status or finalizer writes) is retried with a short delay.
pub fn error_policy(k: Arc<Kustomization>, err: &Error, ctx: Arc<Context>) -> Action {
    tracing::warn!(kustomization = %key(&k), error = %err, "reconcile error");
    ctx.metrics.record_result(false, "APIError");
    Action::requeue(Duration::from_secs(15).min(retry_interval(&k)))
}

async fn reconcile_inner(k: &Kustomization, ctx: &Context) -> Result<Action, Error> {
    let api: Api<Kustomization> = Api::namespaced(ctx.client.clone(), &k.ns());
    if k.metadata.deletion_timestamp.is_some() {
        return finalize(k, ctx, &api).await;
    }
    if !k.finalizers().iter().any(|f| f == FINALIZER) && !k.recorded_inventory().entries.is_empty()
    {
        // objects are recorded but the finalizer is gone (removed by hand):
        // back before anything else. A first apply adds it with its first
        // write instead (see `record_before_apply`).
        let mut finalizers = k.finalizers().to_vec();
        finalizers.push(FINALIZER.to_string());
        set_finalizers(&api, k, finalizers).await?;
        // the patch triggers another reconcile with the finalizer in place
        return Ok(Action::await_change());
    }
    if k.spec.suspend {
        tracing::debug!(kustomization = %key(k), "suspended");
        // kstatus: readiness is not being checked; the suspension of this
        // generation is observed (written only when it changed)
        let prev = k.status.clone().unwrap_or_default();
        let mut st = prev.clone();
        st.observed_generation = k.metadata.generation;
        remove_condition(&mut st.conditions, ConditionType::Reconciling);
        set_condition_unknown(
            &mut st.conditions,
            ConditionType::Ready,
            Reason::Suspended,
            "Reconciliation is suspended (spec.suspend): nothing is fetched, applied or pruned",
            k.metadata.generation,
            now(),
        );
        status::write(&api, &k.name_any(), Some(&prev), &st).await?;
        return Ok(Action::await_change());
    }

    let fingerprint = fingerprint(k, ctx);
    let mkey = key(k);
    let due = ctx.with_memory(&mkey, |m| {
        if m.fingerprint == fingerprint {
            m.next_due
        } else {
            None
        }
    });
    // an applied object deleted or changed by someone else: reconcile now
    let drifted = ctx.drift.as_ref().is_some_and(|d| d.take_dirty(&mkey));
    if drifted {
        tracing::debug!(kustomization = %mkey, "an applied object drifted: reconciling now");
    }
    if let Some(due) = due
        && !drifted
    {
        let left = due.saturating_duration_since(Instant::now());
        if !left.is_zero() {
            return Ok(Action::requeue(left));
        }
    }

    let prev = k.status.clone().unwrap_or_default();
    let generation = k.metadata.generation;
    let mut st = prev.clone();
    let mut written = prev.clone();
    // kstatus: until this reconcile reports, observedGeneration lags (a
    // reconcile writes its status once, at the end, unless it recorded a
    // large pending inventory there)
    let outcome = pipeline(k, ctx, &api, &mut st, &mut written).await;
    let t = now();
    st.observed_generation = generation;
    st.last_handled_reconcile_at = k.annotations().get(RECONCILE_AT_ANNOTATION).cloned();
    remove_condition(&mut st.conditions, ConditionType::Reconciling);
    let (next, success, reason) = match &outcome {
        Ok(summary) => {
            set_condition(
                &mut st.conditions,
                ConditionType::Ready,
                true,
                Reason::Succeeded,
                summary.clone(),
                generation,
                t.clone(),
            );
            remove_condition(&mut st.conditions, ConditionType::Stalled);
            (jitter(interval(k)), true, Reason::Succeeded)
        }
        Err(f) => {
            let reason = f.reason();
            set_condition(
                &mut st.conditions,
                ConditionType::Ready,
                false,
                reason,
                f.message(),
                generation,
                t.clone(),
            );
            if f.before_apply() {
                set_condition(
                    &mut st.conditions,
                    ConditionType::Rendered,
                    false,
                    reason,
                    f.message(),
                    generation,
                    t.clone(),
                );
            } else {
                set_condition(
                    &mut st.conditions,
                    ConditionType::Applied,
                    false,
                    reason,
                    f.message(),
                    generation,
                    t.clone(),
                );
            }
            if f.stalls() {
                set_condition(
                    &mut st.conditions,
                    ConditionType::Stalled,
                    true,
                    reason,
                    f.message(),
                    generation,
                    t.clone(),
                );
            } else {
                remove_condition(&mut st.conditions, ConditionType::Stalled);
            }
            tracing::warn!(kustomization = %mkey, reason = reason.as_str(), message = f.message(), "reconcile failed");
            // repeat the event only when the failure changed
            let changed = prev
                .conditions
                .iter()
                .find(|c| c.type_ == "Ready")
                .is_none_or(|c| c.reason != reason.as_str() || c.message != f.message());
            if changed {
                publish(ctx, k, EventType::Warning, reason.as_str(), f.message()).await;
            }
            (jitter(retry_interval(k)), false, reason)
        }
    };
    ctx.metrics.record_result(success, reason.as_str());
    status::write(&api, &k.name_any(), Some(&written), &st).await?;
    ctx.with_memory(&mkey, |m| {
        m.fingerprint = fingerprint;
        m.next_due = Some(Instant::now() + next);
    });
    Ok(Action::requeue(next))
}

/// What a reconcile depends on besides the source revision: when it is
/// unchanged and the next reconcile is not due, an event (such as our own
/// status write) is a no-op.
fn fingerprint(k: &Kustomization, ctx: &Context) -> String {
    let mut parts = vec![
        k.uid().unwrap_or_default(),
        k.metadata.generation.unwrap_or(0).to_string(),
        k.annotations()
            .get(RECONCILE_AT_ANNOTATION)
            .cloned()
            .unwrap_or_default(),
    ];
    if let Some(store) = &ctx.catalogs {
        for name in &k.spec.catalogs {
            let c = store.get(&kube::runtime::reflector::ObjectRef::new(name));
            parts.push(format!(
                "{name}@{}",
                c.map(|c| c.resource_version().unwrap_or_default())
                    .unwrap_or_default()
            ));
        }
    }
    parts.join("|")
}

/// The ServiceAccount a Kustomization acts as: its own
/// `spec.serviceAccountName`, else the controller's default; `None` means
/// the controller's identity, which the lockdown refuses.
fn service_account(k: &Kustomization, ctx: &Context) -> Result<Option<String>, Failure> {
    if let Some(sa) = &k.spec.service_account_name {
        return Ok(Some(sa.clone()));
    }
    if let Some(sa) = &ctx.settings.default_service_account {
        return Ok(Some(sa.clone()));
    }
    if ctx.settings.require_service_account {
        return Err(Failure::ServiceAccountRequired(
            "spec.serviceAccountName: this controller runs with --require-service-account \
             and no --default-service-account: name a ServiceAccount of this namespace \
             whose RBAC allows what the bundle creates"
                .into(),
        ));
    }
    Ok(None)
}

/// Refuses `http://` and `file://` sources unless the operator allowed them.
fn check_source_policy(k: &Kustomization, ctx: &Context) -> Result<(), Failure> {
    if ctx.settings.allow_insecure_sources {
        return Ok(());
    }
    let src = &k.spec.source;
    let url = src
        .git
        .as_ref()
        .map(|g| ("spec.source.git.url", g.url.as_str()))
        .or_else(|| {
            src.http
                .as_ref()
                .map(|h| ("spec.source.http.url", h.url.as_str()))
        });
    if let Some((field, url)) = url
        && !url.starts_with("https://")
    {
        return Err(Failure::InvalidSpec(format!(
            "{field}: '{}' is refused: only https:// sources are allowed on this controller \
             (file:// and http:// need --allow-insecure-sources)",
            source::redact_url(url)
        )));
    }
    Ok(())
}

fn apply_options(k: &Kustomization, ctx: &Context) -> ApplyOptions {
    ApplyOptions {
        default_namespace: k.spec.target_namespace.clone().unwrap_or_else(|| k.ns()),
        crd_establish_timeout: ctx.settings.crd_establish_timeout,
        delete_namespaces_and_crds: k.spec.delete_namespaces_and_crds,
        allow_namespace_mass_deletion: k
            .annotations()
            .get(ALLOW_NAMESPACE_MASS_DELETION_ANNOTATION)
            .is_some_and(|v| v == "true"),
        ..ApplyOptions::new(&k.ns(), &k.name_any())
    }
}

/// Fetch, render, apply, prune, store. Fills `st`; returns the Ready message.
/// Runs a reconcile up to its report: `st` is the status to report,
/// `written` what the API server has (updated when a large pending
/// inventory is recorded in the status before the first apply).
async fn pipeline(
    k: &Kustomization,
    ctx: &Context,
    api: &Api<Kustomization>,
    st: &mut KustomizationStatus,
    written: &mut KustomizationStatus,
) -> Result<String, Failure> {
    let generation = k.metadata.generation;
    k.validate().map_err(Failure::InvalidSpec)?;
    let pending = k
        .unsettled_pending_inventory()
        .map_err(Failure::InvalidSpec)?;
    check_source_policy(k, ctx)?;
    let sa = service_account(k, ctx)?;
    let client = ctx
        .client_for(&k.ns(), sa.as_deref())
        .map_err(|e| Failure::Apply(e.to_string()))?;
    let deadline = Instant::now() + timeout(k, ctx);
    let catalogs = check_catalogs(k, ctx).await?;

    let fetched = within(
        deadline,
        "fetching the source",
        fetch(k, ctx, &client, deadline),
    )
    .await
    .map_err(Failure::Source)??;
    st.last_attempted_revision = Some(fetched.revision().to_string());

    // render, unless revision, spec and catalogs are unchanged
    let render_key = {
        let mut h = Sha256::new();
        for part in [
            fetched.revision(),
            &generation.unwrap_or(0).to_string(),
            &catalogs.key,
        ] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        format!("{:x}", h.finalize())
    };
    let mkey = key(k);
    let cached = ctx
        .with_memory(&mkey, |m| m.render.clone())
        .filter(|c| c.key == render_key)
        .and_then(|c| Some((c.unpack()?, c.revision.clone())));
    let (output, revision) = match cached {
        Some(c) => {
            ctx.metrics.renders_skipped.inc();
            c
        }
        None => {
            let started = Instant::now();
            let output = render_with_functions(k, ctx, &fetched, &catalogs, deadline).await?;
            let elapsed = started.elapsed();
            ctx.metrics.render_duration.observe(elapsed.as_secs_f64());
            // written when the output changed (or was never recorded): a
            // render of the same output, as after every restart, would
            // otherwise cost a status write of its own
            if st.last_render_duration.is_none()
                || st.rendered_digest.as_deref() != Some(output.digest.as_str())
            {
                st.last_render_duration = Some(secs(elapsed));
            }
            for w in output.warnings.iter().take(MAX_WARNING_EVENTS) {
                publish(ctx, k, EventType::Warning, "FunctionWarning", w).await;
            }
            let c = Arc::new(CachedRender::pack(
                render_key,
                fetched.revision().to_string(),
                &output,
            ));
            ctx.with_memory(&mkey, |m| m.render = Some(c));
            (output, fetched.revision().to_string())
        }
    };
    // a Catalog the spec names but cannot use fails the reconcile even when
    // the render needed none of its functions: the spec is wrong
    if let Some((_, f)) = catalogs.refused.first() {
        return Err(f.clone());
    }
    let n = output.objects.len();
    set_condition(
        &mut st.conditions,
        ConditionType::Rendered,
        true,
        Reason::Succeeded,
        format!("Rendered {n} resources from revision {revision}"),
        generation,
        now(),
    );

    // plan: validate every object and read what the cluster holds
    let started = Instant::now();
    let applier = Applier::with_discovery(client.clone(), ctx.discovery.clone());
    let opts = apply_options(k, ctx);
    let previous = st.inventory.clone().unwrap_or_default();
    let mut plan = within(
        deadline,
        "reading the live objects",
        applier.plan(output.objects, &opts, Some(&previous)),
    )
    .await
    .map_err(Failure::Apply)?
    .map_err(|e| Failure::Apply(e.to_string()))?;
    let alive = owners_alive(ctx, &plan).await?;
    // what the status and an unsettled pending inventory record as ours
    let mut recorded = k.recorded_inventory();
    // skipped only by a Kustomization that held the object (it lists it, or
    // listed it when it was handed over): another one is refused for it
    let held: std::collections::HashSet<&str> = recorded
        .entries
        .iter()
        .chain(st.handed_over.iter().flat_map(|i| &i.entries))
        .map(|e| e.id.as_str())
        .collect();
    let handed_over = plan.take_handed_over(
        |ns, name| {
            alive
                .get(&(ns.to_string(), name.to_string()))
                .copied()
                .unwrap_or(true)
        },
        |e| held.contains(e.id.as_str()),
    );
    check_ownership(k, &plan, &alive)?;

    // crash consistency: before the first write of a revision, the
    // finalizer is in place and the Kustomization records everything the
    // revision may create (objects an unfinished reconcile recorded count)
    let listed = st.inventory.clone().unwrap_or_default();
    let mut attempt = pending.map(|p| p.attempt);
    let listed_keys: std::collections::HashSet<(&str, &str)> = listed
        .entries
        .iter()
        .map(|e| (e.id.as_str(), e.v.as_str()))
        .collect();
    let planned = plan.inventory();
    let add_finalizer = !k.finalizers().iter().any(|f| f == FINALIZER);
    let new_pending = (!recorded.covers(&planned)).then(|| {
        recorded = recorded.union(&planned);
        PendingInventory {
            attempt: new_attempt(),
            entries: recorded
                .entries
                .iter()
                .filter(|e| !listed_keys.contains(&(e.id.as_str(), e.v.as_str())))
                .map(|e| InventoryEntry {
                    h: None,
                    ..e.clone()
                })
                .collect(),
        }
    });
    let recording = |e: String| {
        Failure::Apply(format!(
            "recording the inventory before applying (nothing was applied): {e}"
        ))
    };
    // a pending inventory too large for an annotation (all annotations of an
    // object share 256 KiB) goes into the status, in a write of its own
    let annotated = match &new_pending {
        Some(p) => Some(serde_json::to_string(p).map_err(|e| recording(e.to_string()))?)
            .filter(|json| json.len() <= MAX_PENDING_ANNOTATION_BYTES),
        None => None,
    };
    let in_status = new_pending.is_some() && annotated.is_none();
    if add_finalizer || annotated.is_some() {
        record_before_apply(api, k, add_finalizer, annotated.as_deref())
            .await
            .map_err(recording)?;
    }
    if let Some(p) = new_pending.filter(|_| !in_status) {
        attempt = Some(p.attempt);
    }
    // from here on the status accounts for the pending inventory: what the
    // final status write (success or failure) records covers it
    st.inventory = Some(recorded.clone());
    if attempt.is_some() {
        st.settled_attempt = attempt;
    }
    if in_status {
        status::write(api, &k.name_any(), Some(&*written), st)
            .await
            .map_err(|e| recording(e.to_string()))?;
        *written = st.clone();
    }

    // apply (dry-run first), then prune: only after everything applied
    let mut applied = ctx.with_memory(&mkey, |m| std::mem::take(&mut m.applied));
    if applied.is_empty() {
        // after a restart: what the last successful reconcile recorded
        applied = AppliedMemory::from_inventory(&recorded);
    }
    let result = within(
        deadline,
        "applying",
        applier.apply_plan(plan, &opts, &mut applied),
    )
    .await;
    ctx.with_memory(&mkey, |m| m.applied = applied);
    let report = result
        .map_err(Failure::Apply)?
        .map_err(|e| Failure::Apply(e.to_string()))?;
    let inventory = report.inventory();
    for (action, label) in [
        (ApplyAction::Created, "created"),
        (ApplyAction::Configured, "configured"),
        (ApplyAction::Unchanged, "unchanged"),
    ] {
        let c = report.count(action) as u64;
        if c > 0 {
            ctx.metrics
                .resources_applied
                .get_or_create(&super::metrics::ActionLabels {
                    action: label.into(),
                })
                .inc_by(c);
        }
    }
    let mut summary = report.summary();
    let mut lost: std::collections::BTreeSet<String> = handed_over
        .iter()
        .map(|f| {
            format!(
                "{} (taken over by {})",
                f.object,
                owner_id(&f.owner_namespace, &f.owner_name)
            )
        })
        .collect();
    let mut pruned = 0;
    if k.spec.prune {
        let pr = within(
            deadline,
            "pruning",
            applier.prune(&recorded, &inventory, &opts),
        )
        .await
        .map_err(Failure::Prune)?
        .map_err(|e| match e {
            ApplyError::DeletionRefused(m) => Failure::DeletionRefused(m),
            e => Failure::Prune(e.to_string()),
        })?;
        pruned = pr.deleted.len();
        ctx.metrics.resources_pruned.inc_by(pruned as u64);
        for (e, why) in pr.skipped.iter().chain(&pr.released) {
            tracing::info!(kustomization = %mkey, object = %e.id, why, "not deleted");
        }
        lost.extend(
            pr.lost
                .iter()
                .map(|(e, owner)| format!("{} (taken over by {owner})", display_entry(e))),
        );
        if pruned > 0 {
            summary.push_str(&format!(", {pruned} pruned"));
        }
        if !pr.released.is_empty() {
            summary.push_str(&format!(", {} released", pr.released.len()));
            let names: Vec<String> = pr
                .released
                .iter()
                .map(|(e, why)| format!("{} ({why})", display_entry(e)))
                .collect();
            publish(
                ctx,
                k,
                EventType::Normal,
                "Released",
                &format!("Left in place, no longer managed: {}", names.join("; ")),
            )
            .await;
        }
    }
    if !lost.is_empty() {
        summary.push_str(&format!(", {} handed over", lost.len()));
        publish(
            ctx,
            k,
            EventType::Warning,
            "OwnershipLost",
            &format!(
                "Not applied or pruned, now owned by another Kustomization: {}",
                lost.iter().cloned().collect::<Vec<_>>().join("; ")
            ),
        )
        .await;
    }
    let elapsed = started.elapsed();
    ctx.metrics.apply_duration.observe(elapsed.as_secs_f64());
    let changed =
        report.count(ApplyAction::Created) + report.count(ApplyAction::Configured) + pruned > 0;
    if changed || st.last_apply_duration.is_none() {
        // not on every no-op reconcile: it would be a status write each time
        st.last_apply_duration = Some(secs(elapsed));
    }
    st.handed_over = (!handed_over.is_empty()).then(|| Inventory {
        entries: handed_over
            .iter()
            .map(|f| f.entry.clone())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
    });
    st.inventory = Some(if k.spec.prune {
        inventory
    } else {
        // without prune, what left the render is still ours
        recorded.union(&inventory)
    });
    if let (Some(d), Some(inv)) = (&ctx.drift, &st.inventory) {
        d.observe(inv);
    }
    st.last_applied_revision = Some(revision.clone());
    st.resource_count = Some(report.objects.len() as i64);
    st.rendered_digest = Some(output.digest.clone());
    set_condition(
        &mut st.conditions,
        ConditionType::Applied,
        true,
        Reason::Succeeded,
        summary.clone(),
        generation,
        now(),
    );
    if changed {
        publish(
            ctx,
            k,
            EventType::Normal,
            "Applied",
            &format!("Revision {revision}: {summary}"),
        )
        .await;
    }

    // store the rendered manifests (skipped when this digest is stored),
    // with the Kustomization's identity, in its namespace
    if st.rendered.as_ref().map(|r| &r.digest) != Some(&output.digest) {
        let r = storage::store(&client, k, &revision, &output.yaml)
            .await
            .map_err(|e| Failure::Storage(e.to_string()))?;
        st.rendered = Some(r);
    } else if let Some(r) = &mut st.rendered {
        r.revision = revision.clone();
    }
    Ok(format!("Applied revision {revision}"))
}

fn display_entry(e: &InventoryEntry) -> String {
    crate::apply::parse_inventory_entry(e)
        .map(|r| r.to_string())
        .unwrap_or_else(|| e.id.clone())
}

/// Whether each Kustomization owning objects of the plan still exists
/// (read with the controller's own client).
async fn owners_alive(
    ctx: &Context,
    plan: &crate::apply::Plan,
) -> Result<BTreeMap<(String, String), bool>, Failure> {
    let mut alive = BTreeMap::new();
    for (ns, name) in plan.foreign_owners() {
        let api: Api<Kustomization> = Api::namespaced(ctx.client.clone(), &ns);
        let exists = api
            .get_opt(&name)
            .await
            .map_err(|e| {
                Failure::OwnershipConflict(format!(
                    "reading the owner Kustomization {}: {e}",
                    owner_id(&ns, &name)
                ))
            })?
            .is_some();
        alive.insert((ns, name), exists);
    }
    Ok(alive)
}

/// Refuses the render when an object belongs to another Kustomization that
/// still exists (unless the rendered object asks to adopt it). Objects whose
/// owner is gone are adopted.
fn check_ownership(
    k: &Kustomization,
    plan: &crate::apply::Plan,
    alive: &BTreeMap<(String, String), bool>,
) -> Result<(), Failure> {
    let mut conflicts = Vec::new();
    for f in plan.foreign() {
        let owner = owner_id(&f.owner_namespace, &f.owner_name);
        if f.adopt {
            tracing::info!(kustomization = %key(k), object = %f.object, %owner,
                "taking over (krmsync.dev/adopt)");
            continue;
        }
        let exists = alive
            .get(&(f.owner_namespace.clone(), f.owner_name.clone()))
            .copied()
            .unwrap_or(true);
        if exists {
            conflicts.push(format!("{} belongs to Kustomization {owner}", f.object));
        }
    }
    if conflicts.is_empty() {
        return Ok(());
    }
    let shown: Vec<&String> = conflicts.iter().take(3).collect();
    let more = if conflicts.len() > 3 {
        format!(" and {} more", conflicts.len() - 3)
    } else {
        String::new()
    };
    Err(Failure::OwnershipConflict(format!(
        "{}{more}; nothing was applied or pruned. Remove the object from one of the two \
         bundles, or hand it over by annotating the rendered object {ADOPT_ANNOTATION}: \"true\"",
        shown
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    )))
}

/// Runs `fut` until the reconcile's deadline.
async fn within<T>(
    deadline: Instant,
    what: &str,
    fut: impl std::future::Future<Output = T>,
) -> Result<T, String> {
    tokio::time::timeout_at(deadline, fut)
        .await
        .map_err(|_| format!("timed out {what} (spec.timeout)"))
}

/// Events published for the `warning` results of one render, at most.
const MAX_WARNING_EVENTS: usize = 10;

/// A fetched source: a tree in the workspace (git, http), or the bytes of
/// an in-cluster bundle, unpacked only when a render needs them.
enum Source {
    Tree(source::Fetched),
    Bundle {
        revision: String,
        /// Names the ConfigMap or Secret and key, for messages.
        origin: String,
        data: Arc<[u8]>,
    },
}

impl Source {
    fn revision(&self) -> &str {
        match self {
            Source::Tree(f) => &f.revision,
            Source::Bundle { revision, .. } => revision,
        }
    }
}

/// What one render reads.
#[derive(Clone)]
enum RenderInput {
    /// A tree on disk.
    Dir(std::path::PathBuf),
    /// A bundle to unpack into memory first, at the path its tree would have
    /// in the workspace (so messages name the same paths either way).
    Memory {
        origin: String,
        data: Arc<[u8]>,
        root: std::path::PathBuf,
    },
}

/// How one render attempt ended.
enum Rendered {
    Done(Result<super::render::RenderOutput, crate::kustomize::Error>),
    /// The bundle holds symlinks or too much to keep in memory.
    NeedsDisk,
}

/// Renders the source on a blocking thread, with the functions the Catalogs
/// approve. When the render needed an approved binary that is neither in
/// the bundle nor in the cache, the controller fetches it from the
/// Catalog's `uri` (verified) and renders once more.
///
/// An in-cluster bundle is unpacked into memory and rendered from there (no
/// disk writes, the common case), unless a Catalog may approve functions (a
/// function may run a binary from the bundle, which needs a directory), or
/// it holds symlinks or more than [`source::MEMORY_BUNDLE_BYTES`]: then it
/// is unpacked into the workspace.
async fn render_with_functions(
    k: &Kustomization,
    ctx: &Context,
    src: &Source,
    catalogs: &CatalogSet,
    deadline: Instant,
) -> Result<super::render::RenderOutput, Failure> {
    let wkey = key(k);
    let limits = source_limits(ctx);
    let mut input = match src {
        Source::Tree(f) => RenderInput::Dir(f.dir.clone()),
        Source::Bundle { origin, data, .. } if !catalogs.approved.is_empty() => {
            RenderInput::Dir(unpack_to_workspace(ctx, &wkey, origin, data, &limits).await?)
        }
        Source::Bundle {
            revision,
            origin,
            data,
        } => RenderInput::Memory {
            origin: origin.clone(),
            data: data.clone(),
            root: ctx
                .workspace
                .tree_path(&wkey, revision)
                .map_err(|e| Failure::Source(e.to_string()))?,
        },
    };
    let mut fetched_binaries = false;
    loop {
        let bundle_root = match &input {
            RenderInput::Dir(d) => d.clone(),
            RenderInput::Memory { root, .. } => root.clone(),
        };
        let functions = RenderFunctions::new(
            &ctx.settings.functions,
            ctx.metrics.clone(),
            &k.ns(),
            catalogs.approved.clone(),
            catalogs.refused.iter().map(|(r, _)| r.clone()).collect(),
            &bundle_root,
        );
        // waiting for a render slot counts against spec.timeout too
        let permit = within(
            deadline,
            "waiting for a render slot",
            ctx.render_slots.clone().acquire_owned(),
        )
        .await
        .map_err(Failure::Render)?
        .map_err(|e| Failure::Render(e.to_string()))?;
        let job_input = input.clone();
        let path = k.spec.path.clone();
        let tns = k.spec.target_namespace.clone();
        let f = functions.clone();
        // the unpacked bundle exists only while a render slot is held
        let job = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            Ok(match job_input {
                RenderInput::Dir(dir) => Rendered::Done(render_tree_with(
                    &dir,
                    path.as_deref(),
                    tns.as_deref(),
                    Some(&f),
                )),
                RenderInput::Memory { origin, data, root } => {
                    match source::unpack_bundle_in_memory(&origin, &data, &root, &limits)? {
                        None => Rendered::NeedsDisk,
                        Some(tree) => Rendered::Done(render_memory_with(
                            Arc::new(tree),
                            &root,
                            path.as_deref(),
                            tns.as_deref(),
                            Some(&f),
                        )),
                    }
                }
            })
        });
        let result = within(deadline, "rendering", job)
            .await
            .map_err(Failure::Render)?
            .map_err(|e| Failure::Render(format!("render task: {e}")))?
            .map_err(|e: source::SourceError| Failure::Source(e.to_string()))?;
        let result = match result {
            Rendered::Done(r) => r,
            Rendered::NeedsDisk => {
                if let RenderInput::Memory { origin, data, .. } = &input {
                    let dir = unpack_to_workspace(ctx, &wkey, origin, data, &limits).await?;
                    input = RenderInput::Dir(dir);
                }
                continue;
            }
        };
        if matches!(input, RenderInput::Memory { .. }) {
            forget_unpacked(ctx, &wkey).await;
        }
        match result {
            Ok(out) => return Ok(out),
            Err(e) if e.kind == crate::kustomize::ErrorKind::FunctionUnavailable => {
                // only URLs are fetched; a relative uri means "in the bundle"
                let wanted: Vec<_> = functions
                    .resolver
                    .missing()
                    .into_iter()
                    .filter(|w| w.platform.uri.contains("://"))
                    .collect();
                if fetched_binaries || wanted.is_empty() {
                    return Err(e.into());
                }
                fetched_binaries = true;
                within(
                    deadline,
                    "fetching function binaries",
                    ctx.settings.functions.fetch(&wanted),
                )
                .await
                .map_err(Failure::FunctionUnavailable)?
                .map_err(|why| Failure::FunctionUnavailable(format!("{}; {why}", e.message)))?;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// The controller's source limits.
fn source_limits(ctx: &Context) -> source::Limits {
    source::Limits {
        allow_insecure: ctx.settings.allow_insecure_sources,
        ..ctx.settings.limits
    }
}

/// Unpacks an in-cluster bundle into the workspace (kept there by revision:
/// a later render of the same revision reads it again) and returns its tree.
async fn unpack_to_workspace(
    ctx: &Context,
    wkey: &str,
    origin: &str,
    data: &Arc<[u8]>,
    limits: &source::Limits,
) -> Result<std::path::PathBuf, Failure> {
    let guard = ctx.workspace.key_lock(wkey).lock_owned().await;
    let ws = ctx.workspace.clone();
    let wkey = wkey.to_string();
    let origin = origin.to_string();
    let data = data.clone();
    let limits = *limits;
    tokio::task::spawn_blocking(move || {
        let _guard = guard;
        source::unpack_bundle(&ws, &wkey, &origin, &data, &limits)
    })
    .await
    .map_err(|e| Failure::Source(format!("bundle task: {e}")))?
    .map(|f| f.dir)
    .map_err(|e| Failure::Source(e.to_string()))
}

/// A Kustomization rendered from memory needs no tree in the workspace: one
/// left by an earlier render (an older controller, a bundle that needed the
/// disk) is removed.
async fn forget_unpacked(ctx: &Context, wkey: &str) {
    let Ok(dir) = ctx.workspace.key_dir(wkey) else {
        return;
    };
    if dir.symlink_metadata().is_err() {
        return;
    }
    let _guard = ctx.workspace.key_lock(wkey).lock_owned().await;
    if let Err(e) = ctx.workspace.remove(wkey) {
        tracing::warn!(kustomization = %wkey, error = %e, "removing an unpacked tree no longer needed");
    }
}

/// The Catalogs of `spec.catalogs`, sorted into those that may approve
/// functions for this Kustomization and those that cannot (with why).
struct CatalogSet {
    approved: Vec<ApprovedCatalog>,
    refused: Vec<(RefusedCatalog, Failure)>,
    /// A digest of everything above (for the render cache): a changed
    /// Catalog spec re-renders.
    key: String,
}

/// Reads every referenced Catalog: found, Ready, admitting this namespace.
/// A Catalog that is not is no error yet: a function it would have
/// approved is (`FunctionNotApproved`, after the render); if nothing needs
/// it, the reconcile fails after the render with its Catalog reason.
async fn check_catalogs(k: &Kustomization, ctx: &Context) -> Result<CatalogSet, Failure> {
    let mut set = CatalogSet {
        approved: Vec::new(),
        refused: Vec::new(),
        key: String::new(),
    };
    let mut h = Sha256::new();
    let mut ns_labels: Option<BTreeMap<String, String>> = None;
    let ns = k.ns();
    for (i, name) in k.spec.catalogs.iter().enumerate() {
        let at = format!("spec.catalogs[{i}]");
        let c = ctx.catalog(name).await.map_err(|e| {
            Failure::CatalogNotFound(format!("{at}: reading Catalog '{name}': {e}"))
        })?;
        h.update(name.as_bytes());
        h.update([0]);
        let Some(c) = c else {
            set.refused.push((
                RefusedCatalog {
                    name: name.clone(),
                    why: "does not exist".into(),
                    spec: None,
                },
                Failure::CatalogNotFound(format!("{at}: Catalog '{name}' does not exist")),
            ));
            h.update(b"missing\0");
            continue;
        };
        h.update(serde_json::to_vec(&c.spec).unwrap_or_default());
        h.update([0]);
        let ready = c.status.as_ref().is_some_and(|s| {
            s.observed_generation == c.metadata.generation
                && crate::api::condition::is_true(&s.conditions, ConditionType::Ready)
        });
        if !ready {
            set.refused.push((
                RefusedCatalog {
                    name: name.clone(),
                    why: "is not Ready".into(),
                    spec: Some(c.spec.clone()),
                },
                Failure::CatalogNotReady(format!(
                    "{at}: Catalog '{name}' is not Ready (see `kubectl get catalog {name} -o yaml`)"
                )),
            ));
            h.update(b"not-ready\0");
            continue;
        }
        if c.spec
            .allowed_namespaces
            .as_ref()
            .is_some_and(|a| a.selector.is_some())
            && ns_labels.is_none()
        {
            let api: Api<Namespace> = Api::all(ctx.client.clone());
            let labels = api
                .get_opt(&ns)
                .await
                .map_err(|e| {
                    Failure::CatalogNotAllowed(format!("{at}: reading Namespace '{ns}': {e}"))
                })?
                .map(|n| n.labels().clone())
                .unwrap_or_default();
            ns_labels = Some(labels);
        }
        if !c
            .spec
            .allows_namespace(&ns, ns_labels.as_ref().unwrap_or(&BTreeMap::new()))
        {
            let why = format!("does not allow namespace '{ns}' (spec.allowedNamespaces)");
            set.refused.push((
                RefusedCatalog {
                    name: name.clone(),
                    why: why.clone(),
                    spec: Some(c.spec.clone()),
                },
                Failure::CatalogNotAllowed(format!("{at}: Catalog '{name}' {why}")),
            ));
            h.update(b"not-allowed\0");
            continue;
        }
        set.approved.push(ApprovedCatalog {
            name: name.clone(),
            spec: c.spec.clone(),
        });
    }
    set.key = format!("{:x}", h.finalize());
    Ok(set)
}

fn secret_value(s: &Secret, key: &str) -> Option<String> {
    s.data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|b| {
            String::from_utf8_lossy(&b.0)
                .trim_end_matches('\n')
                .to_string()
        })
        .or_else(|| s.string_data.as_ref().and_then(|d| d.get(key)).cloned())
}

/// Reads an object the spec refers to (`field` names the reference) with
/// the Kustomization's identity (so a tenant cannot have the controller read
/// a Secret it could not read itself); a missing object is a source failure
/// naming it.
async fn get_required<K>(client: &Client, ns: &str, name: &str, field: &str) -> Result<K, Failure>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let kind = K::kind(&());
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    api.get_opt(name)
        .await
        .map_err(|e| Failure::Source(format!("{field}: reading {kind} {ns}/{name}: {e}")))?
        .ok_or_else(|| Failure::Source(format!("{field}: {kind} {ns}/{name} does not exist")))
}

/// Fetches a git or HTTP source into the workspace (cached by revision), or
/// reads an in-cluster bundle's bytes (unpacked by
/// [`render_with_functions`]); Secrets and ConfigMaps are read with
/// `client` (the Kustomization's identity).
///
/// One fetch per Kustomization at a time: the workspace key lock is held
/// (moved into the blocking task) until the fetch is over, so a fetch that
/// outlived its reconcile's deadline cannot race the next one on the same
/// directory; the cancellation token stops it at that deadline.
async fn fetch(
    k: &Kustomization,
    ctx: &Context,
    client: &Client,
    deadline: Instant,
) -> Result<Source, Failure> {
    let ns = k.ns();
    let wkey = key(k);
    let limits = source_limits(ctx);
    let cancel = source::Cancel::new(Some(deadline.into_std()));
    let src = &k.spec.source;
    if let Some(g) = &src.git {
        let mut auth: Option<GitAuth> = None;
        if let Some(r) = &g.secret_ref {
            let s: Secret = get_required(client, &ns, &r.name, "spec.source.git.secretRef").await?;
            let a = auth.get_or_insert_with(GitAuth::default);
            a.username = secret_value(&s, "username");
            a.password = secret_value(&s, "password");
            a.bearer_token = secret_value(&s, "bearerToken");
            if a.password.is_none() && a.bearer_token.is_none() {
                return Err(Failure::Source(format!(
                    "spec.source.git.secretRef: Secret {ns}/{} has neither 'password' nor 'bearerToken'",
                    r.name
                )));
            }
        }
        if let Some(r) = &g.ca_secret_ref {
            let s: Secret =
                get_required(client, &ns, &r.name, "spec.source.git.caSecretRef").await?;
            let ca = s
                .data
                .and_then(|mut d| d.remove("ca.crt"))
                .map(|b| b.0)
                .ok_or_else(|| {
                    Failure::Source(format!(
                        "spec.source.git.caSecretRef: Secret {ns}/{} has no 'ca.crt'",
                        r.name
                    ))
                })?;
            auth.get_or_insert_with(GitAuth::default).ca_pem = Some(ca);
        }
        let reference = match &g.reference {
            Some(r) if r.commit.is_some() => {
                GitReference::Commit(r.commit.clone().unwrap_or_default())
            }
            Some(r) if r.tag.is_some() => GitReference::Tag(r.tag.clone().unwrap_or_default()),
            Some(r) if r.branch.is_some() => {
                GitReference::Branch(r.branch.clone().unwrap_or_default())
            }
            _ => GitReference::DefaultBranch,
        };
        let guard = ctx.workspace.key_lock(&wkey).lock_owned().await;
        let ws = ctx.workspace.clone();
        let url = g.url.clone();
        return tokio::task::spawn_blocking(move || {
            let _guard = guard;
            source::fetch_git(
                &ws,
                &wkey,
                &url,
                &reference,
                auth.as_ref(),
                &limits,
                &cancel,
            )
        })
        .await
        .map_err(|e| Failure::Source(format!("git task: {e}")))?
        .map(Source::Tree)
        .map_err(|e| Failure::Source(e.to_string()));
    }
    if let Some(h) = &src.http {
        let _guard = ctx.workspace.key_lock(&wkey).lock_owned().await;
        return source::fetch_http(
            &ctx.workspace,
            &wkey,
            &ctx.http,
            &h.url,
            &h.sha256,
            &limits,
            &cancel,
        )
        .await
        .map(Source::Tree)
        .map_err(|e| Failure::Source(e.to_string()));
    }
    if let Some(b) = &src.bundle {
        let (origin, data) = if let Some(r) = &b.config_map_ref {
            let origin = format!("ConfigMap {ns}/{} key {}", r.name, b.key);
            let cm: ConfigMap =
                get_required(client, &ns, &r.name, "spec.source.bundle.configMapRef").await?;
            let data = cm
                .binary_data
                .and_then(|mut d| d.remove(&b.key))
                .map(|v| v.0)
                .or_else(|| {
                    cm.data
                        .and_then(|mut d| d.remove(&b.key))
                        .map(String::into_bytes)
                });
            (origin, data)
        } else if let Some(r) = &b.secret_ref {
            let origin = format!("Secret {ns}/{} key {}", r.name, b.key);
            let s: Secret =
                get_required(client, &ns, &r.name, "spec.source.bundle.secretRef").await?;
            (
                origin,
                s.data.and_then(|mut d| d.remove(&b.key)).map(|v| v.0),
            )
        } else {
            return Err(Failure::InvalidSpec(
                "spec.source.bundle: exactly one of configMapRef or secretRef must be set".into(),
            ));
        };
        let data = data.ok_or_else(|| {
            Failure::Source(format!("spec.source.bundle.key: {origin} is missing"))
        })?;
        return Ok(Source::Bundle {
            revision: source::sha256_revision(&data),
            origin,
            data: data.into(),
        });
    }
    Err(Failure::InvalidSpec(
        "spec.source: exactly one of git, http or bundle must be set".into(),
    ))
}

async fn publish(ctx: &Context, k: &Kustomization, type_: EventType, reason: &str, note: &str) {
    if let Err(e) = ctx
        .events
        .publish(&k.object_ref(&()), type_, reason, note, "Reconcile")
        .await
    {
        tracing::debug!(error = %e, "publishing event");
    }
}

/// Largest pending inventory recorded in the Kustomization's annotation
/// (JSON bytes); a larger one is recorded in its status instead.
const MAX_PENDING_ANNOTATION_BYTES: usize = 64 * 1024;

/// A new pending-inventory attempt id: the time in nanoseconds and 64
/// random bits, unique in practice across restarts and leaders.
fn new_attempt() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let r = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    format!("{nanos:x}-{r:016x}")
}

/// The first write of a reconcile that applies: one merge patch of the
/// Kustomization adding the finalizer (when `add_finalizer`) and recording
/// `pending` (a [`PendingInventory`] as JSON, when given). Adding the finalizer is guarded by the
/// resourceVersion (a merge patch replaces the whole list): on a conflict
/// the Kustomization is read again and the patch sent again, at most three
/// times. Never adds the finalizer to a Kustomization being deleted.
async fn record_before_apply(
    api: &Api<Kustomization>,
    k: &Kustomization,
    add_finalizer: bool,
    pending: Option<&str>,
) -> Result<(), String> {
    let name = k.name_any();
    let mut current = None;
    for round in 0..3 {
        let k = current.as_ref().unwrap_or(k);
        let mut meta = serde_json::Map::new();
        if let Some(p) = pending {
            meta.insert(
                "annotations".into(),
                serde_json::json!({ PENDING_INVENTORY_ANNOTATION: p }),
            );
        }
        if add_finalizer && !k.finalizers().iter().any(|f| f == FINALIZER) {
            if k.metadata.deletion_timestamp.is_some() {
                return Err("the Kustomization is being deleted".into());
            }
            let mut finalizers = k.finalizers().to_vec();
            finalizers.push(FINALIZER.to_string());
            meta.insert("finalizers".into(), serde_json::json!(finalizers));
            meta.insert(
                "resourceVersion".into(),
                serde_json::json!(k.resource_version()),
            );
        }
        if meta.is_empty() {
            return Ok(());
        }
        let patch = serde_json::json!({ "metadata": meta });
        let pp = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_string()),
            ..PatchParams::default()
        };
        match api.patch(&name, &pp, &Patch::Merge(&patch)).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(e)) if e.code == 409 && round < 2 => {
                current = Some(api.get(&name).await.map_err(|e| e.to_string())?);
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    Err("the Kustomization kept changing (409 three times)".into())
}

/// Replaces the finalizers, guarded by the resourceVersion we read (a
/// concurrent change makes the API server answer 409 and we retry).
async fn set_finalizers(
    api: &Api<Kustomization>,
    k: &Kustomization,
    finalizers: Vec<String>,
) -> Result<(), kube::Error> {
    let patch = serde_json::json!({
        "metadata": {"finalizers": finalizers, "resourceVersion": k.resource_version()}
    });
    api.patch(
        &k.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}

/// Deletion: prune the inventory (`Delete`) or leave it (`Orphan`), then
/// drop the finalizer. A failed prune keeps the finalizer and retries,
/// except when the Kustomization's identity can no longer act (its
/// ServiceAccount or namespace is gone or going): then the finalizer is
/// released and an Event names what was left. A suspended Kustomization,
/// or one with no identity under `--require-service-account`, prunes
/// nothing.
async fn finalize(
    k: &Kustomization,
    ctx: &Context,
    api: &Api<Kustomization>,
) -> Result<Action, Error> {
    if !k.finalizers().iter().any(|f| f == FINALIZER) {
        return Ok(Action::await_change());
    }
    let mkey = key(k);
    if let Err(e) = k.unsettled_pending_inventory() {
        tracing::warn!(kustomization = %mkey, error = %e, "deleting without the pending inventory");
    }
    let inventory = k.recorded_inventory();
    let sa = service_account(k, ctx);
    let skip = if k.spec.deletion_policy == DeletionPolicy::Orphan || inventory.entries.is_empty() {
        None
    } else if k.spec.suspend {
        Some("the Kustomization is suspended".to_string())
    } else if let Err(f) = &sa {
        Some(f.message().to_string())
    } else {
        None
    };
    if let Some(why) = &skip {
        publish(
            ctx,
            k,
            EventType::Warning,
            "PruneSkipped",
            &format!(
                "Deleted without pruning ({why}); left in place: {}",
                describe_inventory(&inventory)
            ),
        )
        .await;
    }
    if k.spec.deletion_policy == DeletionPolicy::Delete
        && skip.is_none()
        && !inventory.entries.is_empty()
    {
        let sa = sa.ok().flatten();
        let result: Result<_, ApplyError> = async {
            let client = ctx
                .client_for(&k.ns(), sa.as_deref())
                .map_err(|e| ApplyError::Discovery(e.to_string()))?;
            let applier = Applier::with_discovery(client, ctx.discovery.clone());
            let opts = ApplyOptions {
                // deleting the Kustomization is the explicit intent
                allow_namespace_mass_deletion: true,
                ..apply_options(k, ctx)
            };
            applier
                .prune(&inventory, &Inventory::default(), &opts)
                .await
        }
        .await;
        match result {
            Ok(report) => {
                ctx.metrics
                    .resources_pruned
                    .inc_by(report.deleted.len() as u64);
                tracing::info!(kustomization = %mkey, deleted = report.deleted.len(),
                    released = report.released.len(), "deleted the inventory");
            }
            Err(e) if e.is_forbidden() && identity_gone(k, ctx, sa.as_deref()).await => {
                let msg = format!(
                    "the identity of this Kustomization can no longer act ({e}); \
                     released the finalizer, left in place: {}",
                    describe_inventory(&inventory)
                );
                tracing::warn!(kustomization = %mkey, "{msg}");
                publish(ctx, k, EventType::Warning, "PruneAbandoned", &msg).await;
            }
            Err(e) => {
                let msg = e.to_string();
                let mut st = k.status.clone().unwrap_or_default();
                let g = k.metadata.generation;
                set_condition(
                    &mut st.conditions,
                    ConditionType::Ready,
                    false,
                    Reason::PruneFailed,
                    format!("deleting the inventory: {msg}"),
                    g,
                    now(),
                );
                status::write(api, &k.name_any(), k.status.as_ref(), &st).await?;
                publish(
                    ctx,
                    k,
                    EventType::Warning,
                    Reason::PruneFailed.as_str(),
                    &msg,
                )
                .await;
                return Ok(Action::requeue(retry_interval(k)));
            }
        }
    }
    let finalizers: Vec<String> = k
        .finalizers()
        .iter()
        .filter(|f| *f != FINALIZER)
        .cloned()
        .collect();
    set_finalizers(api, k, finalizers).await?;
    forget(ctx, &mkey).await;
    Ok(Action::await_change())
}

/// Drops what the controller keeps for a deleted Kustomization: its memory
/// (fingerprint, cached render) and its work directory.
async fn forget(ctx: &Context, mkey: &str) {
    let _guard = ctx.workspace.key_lock(mkey).lock_owned().await;
    if let Err(e) = ctx.workspace.remove(mkey) {
        tracing::warn!(kustomization = %mkey, error = %e, "removing the work directory");
    }
    ctx.forget(mkey);
}

/// [`forget`] for a Kustomization the watch reports deleted, in the
/// background (the watch does not wait for a running fetch to finish).
pub fn forget_deleted(k: &Kustomization, ctx: &Arc<Context>) {
    let ctx = ctx.clone();
    let mkey = key(k);
    tokio::spawn(async move { forget(&ctx, &mkey).await });
}

/// Whether the Kustomization's identity is gone for good: its namespace is
/// terminating or gone, or its ServiceAccount no longer exists (read with
/// the controller's own client).
async fn identity_gone(k: &Kustomization, ctx: &Context, sa: Option<&str>) -> bool {
    let ns = k.ns();
    let namespaces: Api<Namespace> = Api::all(ctx.client.clone());
    match namespaces.get_opt(&ns).await {
        Ok(None) => return true,
        Ok(Some(n)) if n.metadata.deletion_timestamp.is_some() => return true,
        Ok(Some(_)) => {}
        Err(e) => {
            tracing::debug!(namespace = %ns, error = %e, "reading the namespace");
            return false;
        }
    }
    let Some(sa) = sa else {
        return false;
    };
    let accounts: Api<ServiceAccount> = Api::namespaced(ctx.client.clone(), &ns);
    matches!(accounts.get_opt(sa).await, Ok(None))
}

/// Up to 10 objects of an inventory, for Events.
fn describe_inventory(inv: &Inventory) -> String {
    let mut shown: Vec<String> = inv.entries.iter().take(10).map(display_entry).collect();
    if inv.entries.len() > 10 {
        shown.push(format!("and {} more", inv.entries.len() - 10));
    }
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_five_percent() {
        let d = Duration::from_secs(600);
        for _ in 0..100 {
            let j = jitter(d);
            assert!(
                j >= Duration::from_secs(570) && j <= Duration::from_secs(630),
                "{j:?}"
            );
        }
        assert_eq!(jitter(Duration::from_millis(5)), Duration::from_millis(5));
    }
}
