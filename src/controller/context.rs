//! What every reconcile shares.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Api, Client};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tower::Layer;

use super::metrics::Metrics;
use super::render::RenderOutput;
use crate::api::Catalog;
use crate::source::{Limits, Workspace};

/// Tunables of the controller.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Kustomizations reconciled at once. Renders (on blocking threads)
    /// run at most this many and at most as many as there are CPUs (two at
    /// least) at once.
    pub concurrency: usize,
    /// Limits of one fetch.
    pub limits: Limits,
    /// How long to wait for an applied CRD to be Established.
    pub crd_establish_timeout: Duration,
    /// Upper bound of `spec.timeout` when it is not set.
    pub default_timeout: Duration,
    /// ServiceAccount (of the Kustomization's namespace) to impersonate for
    /// Kustomizations that name none (`--default-service-account`).
    pub default_service_account: Option<String>,
    /// Refuse Kustomizations that would run as the controller itself
    /// (`--require-service-account`, the multi-tenant lockdown).
    pub require_service_account: bool,
    /// Accept `http://` and `file://` sources (`--allow-insecure-sources`).
    pub allow_insecure_sources: bool,
    /// How KRM functions run.
    pub functions: super::functions::FunctionSettings,
    /// Requests to the API server in flight at once, over every client of
    /// the controller (its own and the impersonating ones); 0: no limit.
    /// Past the point where the API server is busy, more only queue there,
    /// and every open connection costs memory here.
    pub api_concurrency: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            concurrency: 16,
            limits: Limits::default(),
            crd_establish_timeout: Duration::from_secs(60),
            default_timeout: Duration::from_secs(600),
            default_service_account: None,
            require_service_account: false,
            allow_insecure_sources: false,
            functions: super::functions::FunctionSettings::default(),
            api_concurrency: 0,
        }
    }
}

/// How often a request the API server answered 429, 503 or 504 is sent
/// again: 5 times, after 0.1, 0.2, 0.4, 0.8 and 1.6 s (with jitter), or
/// after the server's `Retry-After` when that is later. About 3 s in all
/// without `Retry-After`.
///
/// kube's default policy retries 15 times with delays doubling up to 1,000
/// s: a few minutes for one request against an API that stays unavailable
/// (an aggregated API whose backend is down, a webhook that is), during
/// which the reconcile holds its slot and other tenants wait. A bounded
/// retry lets the reconcile fail with the API server's message instead and
/// be retried at `retryInterval` like any failure.
pub const API_RETRIES: u32 = 5;

fn retry_policy() -> kube::client::retry::RetryPolicy {
    kube::client::retry::RetryPolicy::new(
        Duration::from_millis(100),
        Duration::from_secs(2),
        API_RETRIES,
        true,
    )
    .expect("constant backoff parameters are valid")
}

/// A client for `config` whose requests take a permit of `limit` (when
/// there is one) until the response headers arrive. Watches hold none
/// while they stream. Transient refusals are retried as [`API_RETRIES`]
/// says; a request waiting to be retried holds no permit.
pub fn limited_client(
    mut config: kube::Config,
    limit: Option<&Arc<Semaphore>>,
) -> Result<Client, kube::Error> {
    config.default_retry = false;
    let builder = kube::client::ClientBuilder::try_from(config)?;
    let inner = match limit {
        Some(sem) => builder
            .with_layer(&tower::limit::GlobalConcurrencyLimitLayer::with_semaphore(
                sem.clone(),
            ))
            .build(),
        None => builder.build(),
    };
    // the retry layer needs a service it can clone: the client is one
    let default_ns = inner.default_namespace().to_string();
    let service = tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let inner = inner.clone();
        async move {
            inner
                .send(req)
                .await
                .map_err(|e| -> tower::BoxError { Box::new(e) })
        }
    });
    let service = tower::retry::RetryLayer::new(retry_policy()).layer(service);
    Ok(Client::new(service, default_ns))
}

/// A client acting as `user` (`Impersonate-User`) through `base`: its
/// connections, credentials and request limit are `base`'s, so a thousand
/// tenants cost a thousand small handles, not a thousand connection pools
/// and TLS configurations.
pub fn impersonating(
    base: &Client,
    user: &str,
) -> Result<Client, http::header::InvalidHeaderValue> {
    let value = http::HeaderValue::from_str(user)?;
    let base = base.clone();
    let default_ns = base.default_namespace().to_string();
    let service = tower::service_fn(move |mut req: http::Request<kube::client::Body>| {
        let base = base.clone();
        req.headers_mut().insert("impersonate-user", value.clone());
        async move { base.send(req).await }
    });
    Ok(Client::new(service, default_ns))
}

/// The shared request limit of `settings`, if any.
pub fn api_limit(settings: &Settings) -> Option<Arc<Semaphore>> {
    (settings.api_concurrency > 0).then(|| Arc::new(Semaphore::new(settings.api_concurrency)))
}

/// Renders at once: `concurrency`, at most the CPUs (two at least). A
/// reconcile mostly waits for the API server; a render uses a CPU.
fn render_slots(concurrency: usize) -> usize {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    concurrency.clamp(1, cpus.max(2))
}

/// The last render of one Kustomization, kept in memory so an unchanged
/// revision is not rendered again.
#[derive(Debug)]
pub struct CachedRender {
    /// Hash of everything the render depends on.
    pub key: String,
    pub revision: String,
    /// `sha256:<hex>` of the rendered YAML stream.
    pub digest: String,
    /// The objects and the YAML stream, as gzipped JSON: a few percent of
    /// the memory the parsed objects take, and unpacked in about the time
    /// cloning them took.
    packed: Vec<u8>,
}

impl CachedRender {
    /// Packs a render (its warnings are not kept: they were reported).
    pub fn pack(key: String, revision: String, output: &RenderOutput) -> CachedRender {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let packed = serde_json::to_writer(&mut gz, &(&output.objects, &output.yaml))
            .ok()
            .and_then(|_| gz.finish().ok())
            .map(|mut v| {
                v.shrink_to_fit();
                v
            })
            .unwrap_or_default();
        CachedRender {
            key,
            revision,
            digest: output.digest.clone(),
            packed,
        }
    }

    /// The render again; `None` if it cannot be read back (then render).
    pub fn unpack(&self) -> Option<RenderOutput> {
        let gz = flate2::read::GzDecoder::new(self.packed.as_slice());
        let (objects, yaml): (Vec<serde_json::Value>, String) = serde_json::from_reader(gz).ok()?;
        Some(RenderOutput {
            objects,
            yaml,
            digest: self.digest.clone(),
            warnings: Vec::new(),
        })
    }
}

/// Per-Kustomization memory of the controller.
#[derive(Debug, Default)]
pub(crate) struct Memory {
    /// What the last reconcile saw (uid, generation, reconcile-at, catalogs).
    pub fingerprint: String,
    /// When the next full reconcile is due.
    pub next_due: Option<Instant>,
    pub render: Option<Arc<CachedRender>>,
    /// What the last apply wrote (skips objects nobody changed since).
    pub applied: crate::apply::AppliedMemory,
}

pub struct Context {
    /// The controller's own client.
    pub client: Client,
    /// Its configuration, to build impersonating clients from.
    pub config: kube::Config,
    pub workspace: Arc<Workspace>,
    pub http: reqwest::Client,
    pub metrics: Arc<Metrics>,
    /// Events about Kustomizations (core `v1`, see [`super::events`]).
    pub events: super::events::EventWriter,
    pub settings: Settings,
    pub(crate) render_slots: Arc<Semaphore>,
    /// Catalogs as seen by a reflector (the controller); `None`: read them
    /// from the API (tests, one-off reconciles).
    pub catalogs: Option<Store<Catalog>>,
    /// Self-healing watches (`None`: off, or tests without them).
    pub drift: Option<Arc<super::drift::DriftWatch>>,
    pub(crate) memory: Mutex<HashMap<String, Memory>>,
    impersonated: Mutex<HashMap<String, Client>>,
    /// The limit of requests in flight the controller's client takes
    /// permits of; impersonating clients share it.
    pub api_limit: Option<Arc<Semaphore>>,
    /// Kinds the cluster serves, shared by every reconcile (asked with the
    /// controller's own client: discovery is the same for every identity).
    pub discovery: Arc<crate::apply::DiscoveryCache>,
}

/// How long a shared discovery entry is trusted (a kind that disappears
/// sooner is noticed by the 404 of its apply).
pub const DISCOVERY_MAX_AGE: Duration = Duration::from_secs(300);

impl Context {
    pub fn new(
        client: Client,
        config: kube::Config,
        workspace: Workspace,
        metrics: Arc<Metrics>,
        settings: Settings,
    ) -> Result<Context, super::Error> {
        let allow_insecure = settings.allow_insecure_sources;
        let http = reqwest::Client::builder()
            .user_agent(concat!("krmsync/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(30))
            // a redirect must not lead an https source to http:// (or
            // anywhere else) unless insecure sources are allowed
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                if attempt.previous().len() >= 5 {
                    attempt.error("more than 5 redirects")
                } else if attempt.url().scheme() != "https" && !allow_insecure {
                    let to = attempt.url().to_string();
                    attempt.error(format!(
                        "redirect to '{to}' refused: only https:// is allowed (--allow-insecure-sources)"
                    ))
                } else {
                    attempt.follow()
                }
            }))
            .build()
            .map_err(|e| super::Error::Invalid(format!("HTTP client: {e}")))?;
        Ok(Context {
            events: super::events::EventWriter::new(client.clone(), std::env::var("POD_NAME").ok()),
            discovery: Arc::new(crate::apply::DiscoveryCache::with_max_age(
                client.clone(),
                DISCOVERY_MAX_AGE,
            )),
            render_slots: Arc::new(Semaphore::new(render_slots(settings.concurrency))),
            client,
            config,
            workspace: Arc::new(workspace),
            http,
            metrics,
            settings,
            catalogs: None,
            drift: None,
            memory: Mutex::new(HashMap::new()),
            impersonated: Mutex::new(HashMap::new()),
            api_limit: None,
        })
    }

    /// The client a Kustomization acts with (source Secrets, apply, prune,
    /// stored manifests): the controller's own, or one impersonating
    /// `system:serviceaccount:<namespace>:<name>`.
    pub fn client_for(
        &self,
        namespace: &str,
        service_account: Option<&str>,
    ) -> Result<Client, super::Error> {
        let Some(sa) = service_account else {
            return Ok(self.client.clone());
        };
        let user = format!("system:serviceaccount:{namespace}:{sa}");
        let mut cache = self
            .impersonated
            .lock()
            .map_err(|_| super::Error::Invalid("client cache poisoned".into()))?;
        if let Some(c) = cache.get(&user) {
            return Ok(c.clone());
        }
        let client = if self.config.auth_info.impersonate.is_some()
            || self.config.auth_info.impersonate_groups.is_some()
        {
            // the controller's own configuration impersonates already: a
            // client of its own replaces that identity
            let mut cfg = self.config.clone();
            cfg.auth_info.impersonate = Some(user.clone());
            cfg.auth_info.impersonate_groups = None;
            limited_client(cfg, self.api_limit.as_ref())
                .map_err(|e| super::Error::Invalid(format!("impersonating {user}: {e}")))?
        } else {
            impersonating(&self.client, &user)
                .map_err(|e| super::Error::Invalid(format!("impersonating {user}: {e}")))?
        };
        cache.insert(user, client.clone());
        Ok(client)
    }

    /// A Catalog by name, from the reflector when there is one.
    pub async fn catalog(&self, name: &str) -> Result<Option<Arc<Catalog>>, kube::Error> {
        if let Some(store) = &self.catalogs {
            return Ok(store.get(&ObjectRef::new(name)));
        }
        let api: Api<Catalog> = Api::all(self.client.clone());
        Ok(api.get_opt(name).await?.map(Arc::new))
    }

    pub(crate) fn with_memory<T>(&self, key: &str, f: impl FnOnce(&mut Memory) -> T) -> T {
        let mut guard = match self.memory.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        f(guard.entry(key.to_string()).or_default())
    }

    pub(crate) fn forget(&self, key: &str) {
        let mut guard = match self.memory.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        guard.remove(key);
    }
}
