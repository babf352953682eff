//! KRM functions in-cluster: what a render may run, how, and what it
//! reports.
//!
//! * Trust: [`ClusterResolver`] over the Kustomization's usable Catalogs
//!   (found, Ready, admitting its namespace): every plugin config must
//!   resolve there, whatever its annotation says.
//! * Runtime: exec functions only, in the sandbox (`--require-sandbox`
//!   refuses to run them when a protection is missing on the node's
//!   kernel; `--function-network` lets functions whose Catalog entry asks
//!   for it have the network). Legacy exec plugins never run.
//! * Binaries: from the bundle or the digest cache; one the render needed
//!   and found nowhere is fetched from the Catalog's `uri` (verified before
//!   it is stored) and the render is tried once more. The render itself
//!   never opens a connection.
//! * Reporting: per-function metrics (runs by result, duration); `warning`
//!   results are returned for Events.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::catalog::cache::FunctionCache;
use crate::catalog::cluster::{ApprovedCatalog, ClusterResolver, RefusedCatalog, WantedBinary};
use crate::catalog::fetch::{FetchOptions, fetch_binary};
use crate::krm::ProcessRunner;
use crate::krm::sandbox::Sandbox;
use crate::kustomize::function::{FunctionCall, FunctionRunner, LegacyPluginCall};
use crate::kustomize::resid::Gvk;
use crate::kustomize::yaml::Value;

use super::metrics::Metrics;

/// How the controller runs KRM functions.
#[derive(Clone, Debug)]
pub struct FunctionSettings {
    /// Where binaries fetched from Catalog `uri`s are kept, by digest
    /// (`None`: only binaries in bundles are used).
    pub cache: Option<FunctionCache>,
    /// The sandbox (its `require` is `--require-sandbox`, its
    /// `allow_network` is `--function-network`).
    pub sandbox: Sandbox,
    /// Wall-clock limit of one function run.
    pub timeout: Duration,
    /// Cap on a function's output.
    pub max_output: usize,
    /// Limits of fetching a binary.
    pub fetch_timeout: Duration,
    pub fetch_max_bytes: usize,
}

impl Default for FunctionSettings {
    fn default() -> Self {
        FunctionSettings {
            cache: None,
            sandbox: Sandbox::default(),
            timeout: crate::krm::DEFAULT_TIMEOUT,
            max_output: crate::krm::DEFAULT_MAX_OUTPUT,
            fetch_timeout: Duration::from_secs(300),
            fetch_max_bytes: 512 << 20,
        }
    }
}

impl FunctionSettings {
    /// Fetches the binaries a render missed into the cache; every failure,
    /// one per binary.
    pub async fn fetch(&self, wanted: &[WantedBinary]) -> Result<(), String> {
        let Some(cache) = &self.cache else {
            return Err(
                "the controller has no function cache (--function-cache), so binaries must be \
                 in the bundle (krmsync localize --platform)"
                    .to_string(),
            );
        };
        let mut opts = FetchOptions::new(cache.clone());
        opts.timeout = self.fetch_timeout;
        opts.max_bytes = self.fetch_max_bytes;
        let mut errors = Vec::new();
        for w in wanted {
            if let Err(e) = fetch_binary(&w.platform, &opts).await {
                errors.push(format!(
                    "fetching the binary of Catalog '{}' ({}/{} '{}'): {e}",
                    w.catalog, w.platform.os, w.platform.arch, w.platform.bin
                ));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    }
}

/// What one render may run.
#[derive(Clone)]
pub struct RenderFunctions {
    pub resolver: Arc<ClusterResolver>,
    pub runner: Arc<MeteredRunner>,
    /// `warning` results of the functions that ran.
    pub warnings: Arc<Mutex<Vec<String>>>,
}

impl RenderFunctions {
    pub fn new(
        settings: &FunctionSettings,
        metrics: Arc<Metrics>,
        namespace: &str,
        approved: Vec<ApprovedCatalog>,
        refused: Vec<RefusedCatalog>,
        bundle_root: &Path,
    ) -> RenderFunctions {
        let warnings = Arc::new(Mutex::new(Vec::new()));
        let inner = ProcessRunner {
            plugin_home: None,
            timeout: settings.timeout,
            max_output: settings.max_output,
            container_cli: None,
            allow_network: false,
            allow_mounts: false,
            container_envs: Vec::new(),
            container_mounts: Vec::new(),
            as_current_user: false,
            forward_stderr: false,
            sandbox: Some(settings.sandbox.clone()),
            warnings: Some(warnings.clone()),
        };
        RenderFunctions {
            resolver: Arc::new(ClusterResolver::new(
                namespace,
                approved,
                refused,
                bundle_root,
                settings.cache.clone(),
            )),
            runner: Arc::new(MeteredRunner { inner, metrics }),
            warnings,
        }
    }

    pub fn take_warnings(&self) -> Vec<String> {
        self.warnings
            .lock()
            .map(|mut w| std::mem::take(&mut *w))
            .unwrap_or_default()
    }
}

/// The process runner, with per-function metrics; legacy plugins refused.
pub struct MeteredRunner {
    inner: ProcessRunner,
    metrics: Arc<Metrics>,
}

fn function_label(cfg: &Value) -> String {
    format!(
        "{}/{}",
        cfg.str_at(&["apiVersion"]).unwrap_or(""),
        cfg.str_at(&["kind"]).unwrap_or("")
    )
}

impl FunctionRunner for MeteredRunner {
    fn run_function(&self, call: FunctionCall<'_>) -> Result<Vec<Value>, String> {
        let label = function_label(call.function_config);
        let started = Instant::now();
        let r = self.inner.run_function(call);
        self.metrics
            .record_function(&label, r.is_ok(), started.elapsed().as_secs_f64());
        r
    }

    fn locate_legacy_plugin(&self, gvk: &Gvk) -> Result<std::path::PathBuf, String> {
        Err(format!(
            "legacy exec plugin {}: legacy plugins never run in-cluster",
            gvk.kind
        ))
    }

    fn run_legacy_plugin(&self, call: LegacyPluginCall<'_>) -> Result<Vec<u8>, String> {
        Err(format!(
            "legacy exec plugin {}: legacy plugins never run in-cluster",
            call.path.display()
        ))
    }
}
