//! Prometheus metrics and the `/metrics`, `/healthz`, `/readyz` endpoints.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    /// `success` or `failure`.
    pub result: String,
    /// The condition reason (Succeeded, RenderFailed, ...).
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ActionLabels {
    /// created, configured, unchanged.
    pub action: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FunctionLabels {
    /// `<apiVersion>/<kind>` of the function config (`example.com/v1/SetLabels`).
    pub function: String,
    /// `success` or `failure`.
    pub result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FunctionNameLabels {
    pub function: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn function_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// The controller's metrics.
pub struct Metrics {
    registry: Registry,
    pub reconciles: Family<ResultLabels, Counter>,
    pub reconcile_duration: Histogram,
    pub render_duration: Histogram,
    pub apply_duration: Histogram,
    pub renders_skipped: Counter,
    pub resources_applied: Family<ActionLabels, Counter>,
    pub resources_pruned: Counter,
    /// KRM function runs by function and result.
    pub function_runs: Family<FunctionLabels, Counter>,
    /// Duration of KRM function runs (sandbox setup included).
    pub function_duration: HistogramFamily<FunctionNameLabels>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("krmsync");
        let reconciles = Family::<ResultLabels, Counter>::default();
        let buckets = || exponential_buckets(0.005, 2.0, 14);
        let reconcile_duration = Histogram::new(buckets());
        let render_duration = Histogram::new(buckets());
        let apply_duration = Histogram::new(buckets());
        let renders_skipped = Counter::default();
        let resources_applied = Family::<ActionLabels, Counter>::default();
        let resources_pruned = Counter::default();
        registry.register(
            "reconciles",
            "Kustomization reconciles by result and condition reason",
            reconciles.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Duration of a Kustomization reconcile",
            reconcile_duration.clone(),
        );
        registry.register(
            "render_duration_seconds",
            "Duration of a render",
            render_duration.clone(),
        );
        registry.register(
            "apply_duration_seconds",
            "Duration of a server-side apply and prune",
            apply_duration.clone(),
        );
        registry.register(
            "renders_skipped",
            "Renders skipped because revision, spec and catalogs were unchanged",
            renders_skipped.clone(),
        );
        registry.register(
            "resources_applied",
            "Objects server-side applied, by outcome",
            resources_applied.clone(),
        );
        registry.register(
            "resources_pruned",
            "Objects deleted by prune or deletion",
            resources_pruned.clone(),
        );
        let function_runs = Family::<FunctionLabels, Counter>::default();
        let function_duration: HistogramFamily<FunctionNameLabels> =
            Family::new_with_constructor(function_histogram);
        registry.register(
            "function_runs",
            "KRM function runs by function (apiVersion/kind) and result",
            function_runs.clone(),
        );
        registry.register(
            "function_duration_seconds",
            "Duration of a KRM function run, sandbox setup included",
            function_duration.clone(),
        );
        Metrics {
            registry,
            function_runs,
            function_duration,
            reconciles,
            reconcile_duration,
            render_duration,
            apply_duration,
            renders_skipped,
            resources_applied,
            resources_pruned,
        }
    }

    /// The text exposition format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // writing into a String cannot fail
        let _ = encode(&mut out, &self.registry);
        out
    }

    /// Records one function run.
    pub fn record_function(&self, function: &str, success: bool, seconds: f64) {
        self.function_runs
            .get_or_create(&FunctionLabels {
                function: function.to_string(),
                result: if success { "success" } else { "failure" }.to_string(),
            })
            .inc();
        self.function_duration
            .get_or_create(&FunctionNameLabels {
                function: function.to_string(),
            })
            .observe(seconds);
    }

    pub fn record_result(&self, success: bool, reason: &str) {
        self.reconciles
            .get_or_create(&ResultLabels {
                result: if success { "success" } else { "failure" }.to_string(),
                reason: reason.to_string(),
            })
            .inc();
    }
}

/// Readiness, flipped by the controller once it can serve.
#[derive(Clone, Default)]
pub struct Readiness(Arc<AtomicBool>);

impl Readiness {
    pub fn set(&self, ready: bool) {
        self.0.store(ready, Ordering::SeqCst);
    }
    pub fn get(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

async fn metrics_handler(State(m): State<Arc<Metrics>>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        m.encode(),
    )
}

async fn readyz(State(r): State<Readiness>) -> impl IntoResponse {
    if r.get() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready")
    }
}

/// Binds both listeners (so a bad address fails at start-up) and returns
/// the bound addresses and the task serving them.
pub async fn serve(
    metrics_addr: SocketAddr,
    health_addr: SocketAddr,
    metrics: Arc<Metrics>,
    readiness: Readiness,
) -> std::io::Result<(SocketAddr, SocketAddr, tokio::task::JoinHandle<()>)> {
    let m = tokio::net::TcpListener::bind(metrics_addr).await?;
    let h = tokio::net::TcpListener::bind(health_addr).await?;
    let (ma, ha) = (m.local_addr()?, h.local_addr()?);
    let metrics_app = Router::new()
        .route("/metrics", get(metrics_handler))
        .with_state(metrics);
    let health_app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(readiness);
    let task = tokio::spawn(async move {
        let a = axum::serve(m, metrics_app);
        let b = axum::serve(h, health_app);
        if let Err(e) = tokio::try_join!(a, b) {
            tracing::error!(error = %e, "metrics/health server stopped");
        }
    });
    Ok((ma, ha, task))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_registered_metrics() {
        let m = Metrics::new();
        m.record_result(false, "RenderFailed");
        m.resources_applied
            .get_or_create(&ActionLabels {
                action: "created".into(),
            })
            .inc_by(3);
        let text = m.encode();
        assert!(
            text.contains(r#"krmsync_reconciles_total{result="failure",reason="RenderFailed"} 1"#),
            "{text}"
        );
        assert!(text.contains(r#"krmsync_resources_applied_total{action="created"} 3"#));
        assert!(text.contains("krmsync_render_duration_seconds_bucket"));
        m.record_function("example.com/v1/SetLabels", true, 0.01);
        m.record_function("example.com/v1/SetLabels", false, 0.02);
        let text = m.encode();
        assert!(
            text.contains(r#"krmsync_function_runs_total{function="example.com/v1/SetLabels",result="failure"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#"krmsync_function_duration_seconds_count{function="example.com/v1/SetLabels"} 2"#
            ),
            "{text}"
        );
    }
}
