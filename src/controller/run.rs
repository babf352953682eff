//! `krmsync controller`: wiring the reconcilers, leader election, metrics
//! and health endpoints, and graceful shutdown.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use kube::runtime::controller::{Config as ControllerConfig, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};

use super::context::{Context, Settings};
use super::leader::{LeaderElector, LeaseConfig};
use super::metrics::{Metrics, Readiness, serve};
use super::{Error, catalog, kustomization};
use crate::api::{Catalog, Kustomization};
use crate::source::Workspace;

/// kubectl's client-side apply copy of an object.
const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Options of `krmsync controller`.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub concurrency: usize,
    /// `--api-concurrency`: requests to the API server in flight at once
    /// (0: no limit).
    pub api_concurrency: usize,
    pub metrics_addr: SocketAddr,
    pub health_addr: SocketAddr,
    pub leader_elect: bool,
    pub leader_election_namespace: String,
    pub watch_namespace: Option<String>,
    pub work_dir: PathBuf,
    /// `--default-service-account`.
    pub default_service_account: Option<String>,
    /// `--require-service-account` (multi-tenant lockdown).
    pub require_service_account: bool,
    /// `--allow-insecure-sources`.
    pub allow_insecure_sources: bool,
    /// How KRM functions run (`--function-cache`, `--function-network`,
    /// `--require-sandbox`, `--function-timeout`).
    pub functions: super::functions::FunctionSettings,
    /// `--self-heal`: watch the applied kinds and reconcile an owner at once
    /// when one of its objects is deleted or changed by another manager.
    pub self_heal: bool,
}

/// Runs until SIGTERM/SIGINT (graceful: in-flight reconciles finish) or
/// until leadership is lost (an error: the process should restart).
pub async fn run(opts: RunOptions) -> Result<(), Error> {
    let config = kube::Config::infer()
        .await
        .map_err(|e| Error::Invalid(format!("Kubernetes client configuration: {e}")))?;
    let settings = Settings {
        concurrency: opts.concurrency.max(1),
        api_concurrency: opts.api_concurrency,
        default_service_account: opts.default_service_account.clone(),
        require_service_account: opts.require_service_account,
        allow_insecure_sources: opts.allow_insecure_sources,
        functions: opts.functions.clone(),
        ..Settings::default()
    };
    let api_limit = super::context::api_limit(&settings);
    let client = super::context::limited_client(config.clone(), api_limit.as_ref())?;
    let metrics = Arc::new(Metrics::new());
    let readiness = Readiness::default();
    let (maddr, haddr, _server) = serve(
        opts.metrics_addr,
        opts.health_addr,
        metrics.clone(),
        readiness.clone(),
    )
    .await
    .map_err(|e| Error::Invalid(format!("binding the metrics/health listeners: {e}")))?;
    tracing::info!(metrics = %maddr, health = %haddr, "serving /metrics, /healthz, /readyz");
    let version = client.apiserver_version().await?;
    tracing::info!(version = %version.git_version, "connected to the API server");

    let workspace = Workspace::new(&opts.work_dir)
        .map_err(|e| Error::Invalid(format!("work directory {}: {e}", opts.work_dir.display())))?;
    tracing::info!(
        default_service_account = opts.default_service_account.as_deref().unwrap_or(""),
        require_service_account = opts.require_service_account,
        allow_insecure_sources = opts.allow_insecure_sources,
        "tenancy settings"
    );
    let probe = crate::krm::sandbox::probe();
    let missing = probe.missing();
    tracing::info!(
        sandbox = %probe.report(&opts.functions.sandbox).lines().collect::<Vec<_>>().join("; "),
        require_sandbox = opts.functions.sandbox.require,
        function_network = opts.functions.sandbox.allow_network,
        function_cache = %opts.functions.cache.as_ref().map(|c| c.root.display().to_string()).unwrap_or_default(),
        "KRM function sandbox"
    );
    if !missing.is_empty() {
        if opts.functions.sandbox.require {
            tracing::warn!(
                missing = %missing.join("; "),
                "the function sandbox is incomplete on this node: KRM functions will not run (--require-sandbox)"
            );
        } else {
            tracing::warn!(
                missing = %missing.join("; "),
                "the function sandbox is incomplete on this node; functions run with the protections that exist (set --require-sandbox to refuse)"
            );
        }
    }

    let elector = if opts.leader_elect {
        let identity = std::env::var("POD_NAME")
            .or_else(|_| std::env::var("HOSTNAME"))
            .unwrap_or_else(|_| format!("krmsync-{}", std::process::id()));
        let lease = LeaseConfig::new(
            &opts.leader_election_namespace,
            "krmsync-controller",
            &identity,
        );
        // the elector's own client: a renewal must never hang on a socket
        let mut lease_config = config.clone();
        lease_config.read_timeout = Some(lease.request_timeout);
        lease_config.write_timeout = Some(lease.request_timeout);
        lease_config.connect_timeout = Some(lease.request_timeout);
        let e = LeaderElector::new(super::context::limited_client(lease_config, None)?, lease);
        readiness.set(true);
        tokio::select! {
            _ = e.acquire() => {}
            _ = shutdown_signal() => return Ok(()),
        }
        Some(e)
    } else {
        None
    };

    let wc = watcher::Config::default().any_semantic();
    let catalogs_api: Api<Catalog> = Api::all(client.clone());
    let catalog_ctl = Controller::new(catalogs_api.clone(), wc.clone());
    let catalog_store = catalog_ctl.store();
    let mut ctx = Context::new(client.clone(), config, workspace, metrics, settings.clone())?;
    ctx.catalogs = Some(catalog_ctl.store());
    ctx.api_limit = api_limit;
    let (drift_tx, drift_rx) = futures::channel::mpsc::unbounded();
    if opts.self_heal {
        ctx.drift = Some(Arc::new(super::drift::DriftWatch::new(
            client.clone(),
            drift_tx,
        )));
    }
    tracing::info!(self_heal = opts.self_heal, "self-healing watches");
    let ctx = Arc::new(ctx);

    let kapi: Api<Kustomization> = match &opts.watch_namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    // The store holds every Kustomization for as long as it exists: without
    // managedFields (their status entry alone is about as large as the
    // status) and without kubectl's last-applied copy of the object, which
    // no reconcile reads.
    let (kstore, kwriter) = kube::runtime::reflector::store();
    let kstream = kube::runtime::reflector(
        kwriter,
        watcher(kapi, wc.clone()).modify(|k: &mut Kustomization| {
            k.metadata.managed_fields = None;
            if let Some(a) = k.metadata.annotations.as_mut() {
                a.remove(LAST_APPLIED_ANNOTATION);
            }
        }),
    )
    // a Kustomization deleted without our finalizer (it never applied
    // anything) never reaches `finalize`: its memory and work directory
    // go when the watch reports it gone
    .inspect_ok({
        let ctx = ctx.clone();
        move |ev| {
            if let watcher::Event::Delete(k) = ev {
                kustomization::forget_deleted(k, &ctx);
            }
        }
    })
    .applied_objects();
    let kctl = Controller::for_stream(kstream, kstore.clone());
    let concurrency = u16::try_from(settings.concurrency).unwrap_or(u16::MAX);
    let kustomizations = kctl
        // a Catalog change reconciles the Kustomizations that use it
        .watches(catalogs_api, wc, move |c: Catalog| {
            let name = c.name_any();
            kstore
                .state()
                .into_iter()
                .filter(|k| k.spec.catalogs.contains(&name))
                .map(|k| ObjectRef::from_obj(&*k))
                .collect::<Vec<_>>()
        })
        // an applied object deleted or changed by another manager
        .reconcile_on(drift_rx)
        .with_config(ControllerConfig::default().concurrency(concurrency))
        .shutdown_on_signal()
        .run(
            kustomization::reconcile,
            kustomization::error_policy,
            ctx.clone(),
        )
        .for_each(|r| async move {
            if let Err(e) = r {
                tracing::debug!(error = %e, "kustomization controller");
            }
        });
    // no Kustomization is reconciled before the Catalog cache has synced
    // (else, after a restart or a leader change, those using Catalogs would
    // briefly report CatalogNotFound)
    let kustomizations = async move {
        if catalog_store.wait_until_ready().await.is_err() {
            return;
        }
        tracing::debug!("catalog cache synced");
        kustomizations.await;
    };
    let catalogs = catalog_ctl
        .shutdown_on_signal()
        .run(catalog::reconcile, catalog::error_policy, ctx.clone())
        .for_each(|r| async move {
            if let Err(e) = r {
                tracing::debug!(error = %e, "catalog controller");
            }
        });
    readiness.set(true);
    tracing::info!(concurrency, namespace = ?opts.watch_namespace, "controller started");

    let controllers = async {
        tokio::join!(kustomizations, catalogs);
    };
    match &elector {
        Some(e) => {
            tokio::select! {
                _ = controllers => {
                    if let Err(err) = e.release().await {
                        tracing::warn!(error = %err, "releasing the leader lease");
                    }
                }
                _ = e.hold() => {
                    return Err(Error::Invalid("leadership lost; exiting so a new leader can take over".into()));
                }
            }
        }
        None => controllers.await,
    }
    tracing::info!("controller stopped");
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
