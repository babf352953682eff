//! The `krmsync` command line.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::builder::BoolishValueParser;
use clap::{Parser, Subcommand, ValueEnum};

use crate::kustomize::{self, BuildOptions, LoadRestrictor, Reorder};

#[derive(Parser, Debug)]
#[command(
    name = "krmsync",
    version,
    about = "Kubernetes config sync and a kustomize-compatible renderer"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ReorderArg {
    Legacy,
    None,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum RestrictorArg {
    #[value(name = "LoadRestrictionsRootOnly")]
    RootOnly,
    #[value(name = "LoadRestrictionsNone")]
    None,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Render a kustomization directory (drop-in for `kustomize build`).
    Build {
        /// The kustomization directory (default: the current directory).
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Write the output to this file (or, for an existing directory,
        /// one file per resource) instead of stdout.
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// Output order: `legacy` (kind order, the default) or `none`
        /// (accumulation order). A kustomization's `sortOptions` wins.
        #[arg(long, value_enum)]
        reorder: Option<ReorderArg>,
        /// Whether files may be read from outside the kustomization root.
        #[arg(
            long = "load-restrictor",
            value_enum,
            default_value = "LoadRestrictionsRootOnly"
        )]
        load_restrictor: RestrictorArg,
        /// Run non-builtin plugins: KRM functions (container functions
        /// through docker or podman) and legacy exec plugins from
        /// `$KUSTOMIZE_PLUGIN_HOME`.
        #[arg(long = "enable-alpha-plugins", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = BoolishValueParser::new())]
        enable_alpha_plugins: bool,
        /// With --enable-alpha-plugins, also run exec KRM functions
        /// (without it they are skipped, as in kustomize).
        #[arg(long = "enable-exec", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = BoolishValueParser::new())]
        enable_exec: bool,
        /// Add the `app.kubernetes.io/managed-by` label to every resource.
        #[arg(long = "enable-managedby-label", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = BoolishValueParser::new())]
        enable_managedby_label: bool,
        /// Render `helmCharts` (and `HelmChartInflationGenerator` configs)
        /// with `helm template`, as kustomize does. Charts must already be
        /// in the chart home: krmsync never pulls them.
        #[arg(long = "enable-helm", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = BoolishValueParser::new())]
        enable_helm: bool,
        /// The helm program (with --enable-helm).
        #[arg(long = "helm-command", default_value = "helm", value_name = "PATH")]
        helm_command: String,
        /// Kubernetes API versions for helm's `Capabilities.APIVersions`
        /// (repeatable; for charts that set no `apiVersions`).
        #[arg(long = "helm-api-versions", value_name = "VERSION")]
        helm_api_versions: Vec<String>,
        /// Kubernetes version for helm's `Capabilities.KubeVersion` (for
        /// charts that set no `kubeVersion`).
        #[arg(long = "helm-kube-version", value_name = "VERSION")]
        helm_kube_version: Option<String>,
        /// Run `helm template --debug` for every chart.
        #[arg(long = "helm-debug", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = BoolishValueParser::new())]
        helm_debug: bool,
        /// Give the network to functions that ask for it (container
        /// `network: true`, exec `network: true`); denied otherwise.
        #[arg(long = "network", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = BoolishValueParser::new())]
        network: bool,
        /// An environment variable for container functions, `KEY=VALUE` or
        /// `KEY` (passed through from this environment); repeatable. Wins
        /// over a function's own `envs` of the same name.
        #[arg(short = 'e', long = "env", value_name = "KEY[=VALUE]")]
        env: Vec<String>,
        /// A storage mount for every container function,
        /// `type=bind,src=DIR,dst=PATH[,rw=true]` (read-only unless
        /// `rw=true`; a relative `src` is relative to the current
        /// directory); repeatable.
        #[arg(long = "mount", value_name = "MOUNT")]
        mount: Vec<String>,
        /// Run container functions as the current user's uid:gid instead
        /// of `nobody`.
        #[arg(long = "as-current-user", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = BoolishValueParser::new())]
        as_current_user: bool,
        /// Accepted for compatibility with `kubectl kustomize`, whose
        /// kustomize 5.5 ignores it too: a function with the network runs on
        /// the host network.
        #[arg(long = "network-name", value_name = "NAME", default_value = "bridge")]
        network_name: String,
        /// Refuse to run functions when a sandbox protection (Landlock,
        /// seccomp, rlimits) is missing on this kernel; legacy exec plugins,
        /// which run unconfined, are refused too.
        #[arg(long = "require-sandbox", env = "KRMSYNC_REQUIRE_SANDBOX", num_args = 0..=1, require_equals = true, default_missing_value = "true", value_parser = BoolishValueParser::new())]
        require_sandbox: bool,
        /// Trust a function catalog referenced in `catalogs:` (repeatable):
        /// its path (relative to the current directory) or `sha256:<hex>`
        /// of its bytes. Functions resolved through a trusted catalog run
        /// without --enable-alpha-plugins/--enable-exec, pinned by sha256.
        #[arg(long = "trusted-catalog", value_name = "REF")]
        trusted_catalog: Vec<String>,
        /// The function binary cache (default:
        /// `$XDG_CACHE_HOME/krmsync/functions`).
        #[arg(long = "function-cache", value_name = "DIR")]
        function_cache: Option<PathBuf>,
    },
    /// [Alpha] Copy a kustomization and everything it references,
    /// downloading remote roots and files, into a self-contained directory
    /// (like `kustomize localize`).
    Localize {
        /// `[TARGET [NEW_DIR]]`: the kustomization (local directory or remote
        /// root URL with `?ref=`, default `.`) and the destination (default
        /// `localized-<target>` in the working directory).
        #[arg(num_args = 0..)]
        args: Vec<String>,
        /// Directory the target may reference files in (default: the target).
        #[arg(long)]
        scope: Option<String>,
        /// Do not build the target and the copy to compare their outputs.
        #[arg(long = "no-verify")]
        no_verify: bool,
        /// Fetch URLs starting with FROM from TO instead (repeatable), like
        /// git's `url.<TO>.insteadOf <FROM>`; localized paths keep the
        /// original URL. Also read from KRMSYNC_LOCALIZE_MIRRORS
        /// (comma-separated FROM=TO).
        #[arg(long = "mirror", value_name = "FROM=TO")]
        mirror: Vec<String>,
        /// Also download the exec binaries the referenced function catalogs
        /// pin for this platform (`os/arch`, repeatable), verified against
        /// their sha256 and stored without the execute bit.
        #[arg(long = "platform", value_name = "OS/ARCH")]
        platform: Vec<String>,
        /// Also pack the localized directory into this bundle (`.tar.gz`,
        /// as `krmsync bundle create` does) and print its revision.
        #[arg(long = "bundle", value_name = "FILE")]
        bundle: Option<PathBuf>,
        /// Print nothing on success.
        #[arg(long, short = 'q')]
        quiet: bool,
    },
    /// The sandbox of exec KRM functions.
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// Function catalogs (KEP-2906): fetch pinned binaries, view catalogs.
    #[command(subcommand)]
    Catalog(CatalogCommand),
    /// Run the in-cluster controller (reads in-cluster config or KUBECONFIG).
    Controller(ControllerArgs),
    /// Print the rendered manifests a Kustomization last applied.
    GetRendered {
        /// The Kustomization's name.
        name: String,
        /// Its namespace.
        #[arg(short = 'n', long = "namespace", default_value = "default")]
        namespace: String,
    },
    /// Create or upload in-cluster bundles (for `spec.source.bundle`).
    #[command(subcommand)]
    Bundle(BundleCommand),
    /// Print the CustomResourceDefinitions krmsync serves (or write one file
    /// per CRD into a directory).
    Crd {
        /// Write `<group>_<plural>.yaml` files into this directory.
        #[arg(long = "output-dir")]
        output_dir: Option<PathBuf>,
    },
}

#[derive(Subcommand, Debug)]
enum CatalogCommand {
    /// Download a catalog's exec binaries into the function cache,
    /// verifying each against its sha256.
    Fetch {
        /// The catalog file.
        catalog: PathBuf,
        /// `os/arch` to fetch (repeatable; default: this machine's).
        #[arg(long = "platform", value_name = "OS/ARCH")]
        platforms: Vec<String>,
        /// The function binary cache (default:
        /// `$XDG_CACHE_HOME/krmsync/functions`).
        #[arg(long = "function-cache", value_name = "DIR")]
        function_cache: Option<PathBuf>,
    },
    /// Show what catalogs define, their digests and which binaries are
    /// present and verified here (default: the catalogs referenced by
    /// the kustomization in the current directory).
    View {
        /// Catalog files.
        files: Vec<PathBuf>,
        /// The function binary cache.
        #[arg(long = "function-cache", value_name = "DIR")]
        function_cache: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum LogFormat {
    Json,
    Plain,
}

#[derive(clap::Args, Debug)]
struct ControllerArgs {
    /// Kustomizations reconciled at once (renders: at most as many as
    /// there are CPUs).
    #[arg(long, env = "KRMSYNC_CONCURRENCY", default_value_t = 16)]
    concurrency: usize,
    /// Requests to the API server in flight at once, over all
    /// Kustomizations (0: no limit). More only queue at a busy API server,
    /// and each open connection costs memory.
    #[arg(
        long = "api-concurrency",
        env = "KRMSYNC_API_CONCURRENCY",
        default_value_t = 32
    )]
    api_concurrency: usize,
    /// Address of the Prometheus `/metrics` endpoint.
    #[arg(
        long = "metrics-addr",
        env = "KRMSYNC_METRICS_ADDR",
        default_value = "0.0.0.0:8080"
    )]
    metrics_addr: std::net::SocketAddr,
    /// Address of `/healthz` and `/readyz`.
    #[arg(
        long = "health-addr",
        env = "KRMSYNC_HEALTH_ADDR",
        default_value = "0.0.0.0:8081"
    )]
    health_addr: std::net::SocketAddr,
    /// Hold a Lease so that only one replica reconciles at a time.
    #[arg(long = "leader-elect", env = "KRMSYNC_LEADER_ELECT")]
    leader_elect: bool,
    /// Namespace of the leader Lease (default: $POD_NAMESPACE, else krmsync-system).
    #[arg(
        long = "leader-election-namespace",
        env = "KRMSYNC_LEADER_ELECTION_NAMESPACE"
    )]
    leader_election_namespace: Option<String>,
    /// Log format.
    #[arg(
        long = "log-format",
        env = "KRMSYNC_LOG_FORMAT",
        value_enum,
        default_value = "plain"
    )]
    log_format: LogFormat,
    /// Log filter (`info`, `debug`, `krmsync=debug,kube=info`, ...).
    #[arg(long = "log-level", env = "KRMSYNC_LOG_LEVEL", default_value = "info")]
    log_level: String,
    /// Reconcile only Kustomizations of this namespace (default: all).
    #[arg(long = "watch-namespace", env = "KRMSYNC_WATCH_NAMESPACE")]
    watch_namespace: Option<String>,
    /// Where bundles are fetched and unpacked.
    #[arg(
        long = "work-dir",
        env = "KRMSYNC_WORK_DIR",
        default_value = "/tmp/krmsync"
    )]
    work_dir: PathBuf,
    /// ServiceAccount (in each Kustomization's namespace) to act as when a
    /// Kustomization names none in spec.serviceAccountName.
    #[arg(
        long = "default-service-account",
        env = "KRMSYNC_DEFAULT_SERVICE_ACCOUNT"
    )]
    default_service_account: Option<String>,
    /// Multi-tenant lockdown: never act as the controller itself; a
    /// Kustomization without a ServiceAccount (and no
    /// --default-service-account) fails with reason ServiceAccountRequired.
    #[arg(
        long = "require-service-account",
        env = "KRMSYNC_REQUIRE_SERVICE_ACCOUNT"
    )]
    require_service_account: bool,
    /// Accept http:// and file:// sources (they let a Kustomization read
    /// the controller's files or reach internal addresses). Off by default.
    #[arg(
        long = "allow-insecure-sources",
        env = "KRMSYNC_ALLOW_INSECURE_SOURCES"
    )]
    allow_insecure_sources: bool,
    /// Where exec function binaries fetched from Catalog uris are kept, by
    /// sha256 (default: <work-dir>/.function-cache).
    #[arg(long = "function-cache", env = "KRMSYNC_FUNCTION_CACHE")]
    function_cache: Option<PathBuf>,
    /// Let KRM functions whose Catalog entry asks for the network have it
    /// (denied by default, whatever the Catalog says).
    #[arg(long = "function-network", env = "KRMSYNC_FUNCTION_NETWORK")]
    function_network: bool,
    /// Refuse to run KRM functions when a sandbox protection (Landlock,
    /// seccomp, rlimits) is missing on the node's kernel.
    #[arg(long = "require-sandbox", env = "KRMSYNC_REQUIRE_SANDBOX")]
    require_sandbox: bool,
    /// Wall-clock limit of one KRM function run, in seconds.
    #[arg(
        long = "function-timeout",
        env = "KRMSYNC_FUNCTION_TIMEOUT",
        default_value_t = 120
    )]
    function_timeout: u64,
    /// Watch the kinds Kustomizations applied (metadata only) and reconcile
    /// an owner at once when one of its objects is deleted or changed by
    /// another field manager (`--self-heal=false` to turn off).
    #[arg(
        long = "self-heal",
        env = "KRMSYNC_SELF_HEAL",
        default_value_t = true,
        action = clap::ArgAction::Set
    )]
    self_heal: bool,
}

#[derive(Subcommand, Debug)]
enum SandboxCommand {
    /// Print which protections are active on this kernel.
    Status {
        /// Exit with status 1 when a protection is missing.
        #[arg(long = "require-sandbox")]
        require_sandbox: bool,
    },
}

#[derive(Subcommand, Debug)]
enum BundleCommand {
    /// Write a deterministic `.tar.gz` of a (localized) kustomization tree.
    Create {
        /// The directory to bundle.
        dir: PathBuf,
        /// The output file.
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
    },
    /// Store a bundle of DIR in a ConfigMap (or Secret) for `spec.source.bundle`.
    Push {
        /// The directory to bundle.
        dir: PathBuf,
        /// Name of the ConfigMap or Secret.
        #[arg(long)]
        name: String,
        /// Its namespace (the Kustomization's).
        #[arg(short = 'n', long = "namespace", default_value = "default")]
        namespace: String,
        /// Store it in a Secret instead of a ConfigMap.
        #[arg(long)]
        secret: bool,
    },
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the async runtime: {e}"))
}

fn init_logging(format: LogFormat, level: &str) -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_new(level)
        .map_err(|e| format!("--log-level '{level}': {e}"))?;
    // colours only on a terminal (`kubectl logs` shows escape codes verbatim)
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Plain => builder.try_init(),
    }
    .map_err(|e| format!("logging: {e}"))
}

/// The allocator asks for transparent huge pages for its arenas. In a
/// long-running controller whose heap grows and shrinks they mostly
/// inflate resident memory (a 2 MiB page held for a few KiB in use: about
/// 40 of 110 MiB at 1,000 Kustomizations), so the controller turns them
/// off for itself first thing. It also has freed memory returned to the
/// OS after 10 ms instead of mimalloc 3's 1 s: a resync of 1,000
/// Kustomizations peaked at 70-78 MiB with 1 s, 54 with 10 ms, for about
/// the same CPU. `krmsync build`, short-lived, keeps both defaults.
fn controller_memory_setup() {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::thread::disable_transparent_huge_pages(true) {
        eprintln!("note: could not turn transparent huge pages off: {e}");
    }
    set_allocator_purge_delay(CONTROLLER_PURGE_DELAY_MS);
}

/// `mi_option_purge_delay`: its index in mimalloc's `mi_option_t`
/// (mimalloc.h), which libmimalloc-sys does not name.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
/// The controller's purge delay (mimalloc 2's default).
const CONTROLLER_PURGE_DELAY_MS: std::os::raw::c_long = 10;

fn set_allocator_purge_delay(ms: std::os::raw::c_long) {
    // SAFETY: sets one integer option; mimalloc reads options atomically
    // and allows changing them at any time.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, ms) };
}

#[cfg(test)]
fn allocator_purge_delay() -> std::os::raw::c_long {
    // SAFETY: reads one integer option.
    unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) }
}

fn controller_command(a: ControllerArgs) -> Result<(), String> {
    init_logging(a.log_format, &a.log_level)?;
    let function_cache = a
        .function_cache
        .clone()
        .unwrap_or_else(|| a.work_dir.join(".function-cache"));
    let opts = crate::controller::run::RunOptions {
        concurrency: a.concurrency,
        api_concurrency: a.api_concurrency,
        metrics_addr: a.metrics_addr,
        health_addr: a.health_addr,
        leader_elect: a.leader_elect,
        leader_election_namespace: a
            .leader_election_namespace
            .or_else(|| std::env::var("POD_NAMESPACE").ok())
            .unwrap_or_else(|| "krmsync-system".to_string()),
        watch_namespace: a.watch_namespace,
        work_dir: a.work_dir,
        default_service_account: a.default_service_account.filter(|s| !s.is_empty()),
        require_service_account: a.require_service_account,
        allow_insecure_sources: a.allow_insecure_sources,
        functions: crate::controller::functions::FunctionSettings {
            cache: Some(crate::catalog::cache::FunctionCache::new(function_cache)),
            sandbox: crate::krm::sandbox::Sandbox {
                allow_network: a.function_network,
                require: a.require_sandbox,
                ..Default::default()
            },
            timeout: std::time::Duration::from_secs(a.function_timeout.max(1)),
            ..Default::default()
        },
        self_heal: a.self_heal,
    };
    let rt = runtime()?;
    let result = rt.block_on(crate::controller::run::run(opts));
    // do not wait on blocking tasks stuck in a fetch or render: they are
    // cancelled at their deadline, and the process is exiting anyway
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
    result.map_err(|e| e.to_string())
}

async fn client() -> Result<kube::Client, String> {
    kube::Client::try_default()
        .await
        .map_err(|e| format!("Kubernetes client (KUBECONFIG or in-cluster): {e}"))
}

fn get_rendered_command(name: &str, namespace: &str) -> Result<String, String> {
    runtime()?.block_on(async {
        let client = client().await?;
        let api: kube::Api<crate::api::Kustomization> = kube::Api::namespaced(client.clone(), namespace);
        let k = api
            .get_opt(name)
            .await
            .map_err(|e| format!("reading Kustomization {namespace}/{name}: {e}"))?
            .ok_or_else(|| format!("Kustomization {namespace}/{name} does not exist"))?;
        let r = k
            .status
            .and_then(|s| s.rendered)
            .ok_or_else(|| format!("Kustomization {namespace}/{name} has no rendered manifests yet (status.rendered is empty)"))?;
        crate::controller::storage::load(&client, namespace, &r)
            .await
            .map_err(|e| e.to_string())
    })
}

/// Largest bundle `bundle push` stores (the API server's object limit is 1 MiB).
const MAX_PUSH_BYTES: usize = 1000 * 1024;

fn bundle_push_command(
    dir: &Path,
    name: &str,
    namespace: &str,
    secret: bool,
) -> Result<String, String> {
    let data = crate::source::create_bundle(dir).map_err(|e| e.to_string())?;
    if data.len() > MAX_PUSH_BYTES {
        return Err(format!(
            "the bundle of {} is {} bytes, over the {MAX_PUSH_BYTES} bytes a ConfigMap or Secret can hold; serve it over HTTP (spec.source.http) or from git instead",
            dir.display(),
            data.len()
        ));
    }
    let digest = crate::controller::storage::sha256_hex(&data);
    let key = crate::api::kustomization::DEFAULT_BUNDLE_KEY;
    let b64 = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &data);
    let (api_version, kind, field) = if secret {
        ("v1", "Secret", "data")
    } else {
        ("v1", "ConfigMap", "binaryData")
    };
    let obj = serde_json::json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {"krmsync.dev/bundle-digest": format!("sha256:{digest}")},
        },
        field: {key: b64},
    });
    runtime()?.block_on(async {
        let client = client().await?;
        let pp = kube::api::PatchParams::apply(crate::api::FIELD_MANAGER).force();
        let patch = kube::api::Patch::Apply(&obj);
        let res = if secret {
            kube::Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), namespace)
                .patch(name, &pp, &patch)
                .await
                .map(|_| ())
        } else {
            kube::Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(
                client.clone(),
                namespace,
            )
            .patch(name, &pp, &patch)
            .await
            .map(|_| ())
        };
        res.map_err(|e| format!("storing {kind} {namespace}/{name}: {e}"))?;
        let mut out = format!(
            "{kind} {namespace}/{name} key {key}: {} bytes, revision sha256:{digest}\n",
            data.len()
        );
        out.push_str(&notify_bundle_users(&client, namespace, name, secret).await);
        Ok(out)
    })
}

/// Asks the Kustomizations of `namespace` whose `spec.source.bundle` names
/// this ConfigMap (Secret) to reconcile now (`krmsync.dev/reconcile-at`),
/// so a push is applied at once rather than at the next interval. The
/// controller never watches ConfigMaps or Secrets (it has no right to read
/// them); the one who pushes has. A failure here is reported, not fatal:
/// the bundle is stored and the next interval picks it up.
async fn notify_bundle_users(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    secret: bool,
) -> String {
    let api: kube::Api<crate::api::Kustomization> =
        kube::Api::namespaced(client.clone(), namespace);
    let list = match api.list(&kube::api::ListParams::default()).await {
        Ok(l) => l,
        Err(e) => {
            return format!(
                "not notified: listing Kustomizations in {namespace}: {e} (they pick the bundle up at their next interval)\n"
            );
        }
    };
    let stamp = format!(
        "bundle-push-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    let mut notified = Vec::new();
    let mut failed = Vec::new();
    for k in list {
        let Some(b) = k.spec.source.bundle.as_ref() else {
            continue;
        };
        let referenced = if secret {
            b.secret_ref.as_ref().is_some_and(|r| r.name == name)
        } else {
            b.config_map_ref.as_ref().is_some_and(|r| r.name == name)
        };
        if !referenced {
            continue;
        }
        let kname = kube::ResourceExt::name_any(&k);
        let patch =
            serde_json::json!({"metadata": {"annotations": {"krmsync.dev/reconcile-at": stamp}}});
        match api
            .patch(
                &kname,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&patch),
            )
            .await
        {
            Ok(_) => notified.push(kname),
            Err(e) => failed.push(format!("{kname}: {e}")),
        }
    }
    let mut out = String::new();
    if !notified.is_empty() {
        out.push_str(&format!(
            "reconcile requested: Kustomization {}\n",
            notified.join(", ")
        ));
    }
    if !failed.is_empty() {
        out.push_str(&format!(
            "not notified (they pick the bundle up at their next interval): {}\n",
            failed.join("; ")
        ));
    }
    out
}

fn report(result: Result<String, String>) -> ExitCode {
    match result {
        Ok(text) => {
            let mut out = std::io::stdout().lock();
            if out
                .write_all(text.as_bytes())
                .and_then(|_| out.flush())
                .is_err()
            {
                return ExitCode::from(1);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("Error: {e}");
            ExitCode::from(1)
        }
    }
}

fn crd_command(output_dir: Option<PathBuf>) -> ExitCode {
    let files = match crate::api::crd_files() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("Error: {e}");
            return ExitCode::from(1);
        }
    };
    match output_dir {
        Some(dir) => {
            for (name, text) in files {
                let path = dir.join(name);
                if let Err(e) = std::fs::write(&path, text) {
                    eprintln!("Error: writing {}: {e}", path.display());
                    return ExitCode::from(1);
                }
            }
        }
        None => {
            let stream: Vec<String> = files.into_iter().map(|(_, t)| t).collect();
            print!("{}", stream.join("---\n"));
        }
    }
    ExitCode::SUCCESS
}

fn write_output(path: &Path, rendered: &kustomize::Rendered) -> Result<(), String> {
    if path.is_dir() {
        for r in &rendered.resources {
            let mut one = kustomize::Rendered::default();
            one.resources.push(r.clone());
            let text = one.to_yaml().map_err(|e| e.to_string())?;
            let api = r.str_at(&["apiVersion"]).unwrap_or("").replace('/', "_");
            let kind = r.str_at(&["kind"]).unwrap_or("");
            let name = r.str_at(&["metadata", "name"]).unwrap_or("");
            let file = format!("{api}_{kind}_{name}.yaml").to_lowercase();
            std::fs::write(path.join(&file), text)
                .map_err(|e| format!("writing {}: {e}", path.join(&file).display()))?;
        }
        return Ok(());
    }
    let text = rendered.to_yaml().map_err(|e| e.to_string())?;
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// `krmsync build`: the YAML stream (empty when written to `-o`).
/// Warnings go to stderr; on error nothing is printed on stdout.
fn build_command(dir: &Path, output: Option<&Path>, opts: &BuildOptions) -> Result<String, String> {
    let rendered = kustomize::build_dir(dir, opts).map_err(|e| e.to_string())?;
    let text = match output {
        Some(_) => String::new(),
        None => rendered.to_yaml().map_err(|e| e.to_string())?,
    };
    for w in &rendered.warnings {
        eprintln!("{w}");
    }
    if let Some(path) = output {
        write_output(path, &rendered)?;
    }
    Ok(text)
}

/// `krmsync localize`: log lines go to stderr, nothing to stdout.
fn localize_command(
    args: Vec<String>,
    scope: Option<String>,
    no_verify: bool,
    mirror: &[String],
    platform: &[String],
    bundle: Option<&Path>,
    quiet: bool,
) -> Result<String, String> {
    if args.len() > 2 {
        return Err(format!("accepts at most 2 arg(s), received {}", args.len()));
    }
    let env = std::env::var("KRMSYNC_LOCALIZE_MIRRORS").ok();
    let mirrors = crate::localize::url::Mirrors::from_args(mirror, env.as_deref())?;
    let mut it = args.into_iter();
    let opts = crate::localize::Options {
        target: it.next(),
        new_dir: it.next(),
        scope,
        no_verify,
        mirrors,
        progress: !quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()),
        platforms: platform
            .iter()
            .map(|p| crate::catalog::Platform::parse(p).map_err(|e| format!("--platform: {e}")))
            .collect::<Result<_, _>>()?,
        ssh_command: None,
    };
    match crate::localize::run(&opts) {
        Ok(o) => {
            if !quiet {
                for l in &o.log {
                    eprintln!("{l}");
                }
            }
            if let Some(file) = bundle {
                let data = crate::source::create_bundle(&o.new_dir)
                    .map_err(|e| format!("bundling {}: {e}", o.new_dir.display()))?;
                std::fs::write(file, &data)
                    .map_err(|e| format!("writing {}: {e}", file.display()))?;
                if !quiet {
                    eprintln!(
                        "BUNDLE: {}: {} bytes, revision sha256:{}",
                        file.display(),
                        data.len(),
                        crate::controller::storage::sha256_hex(&data)
                    );
                }
            }
            Ok(String::new())
        }
        Err(f) => {
            for l in f.log {
                eprintln!("{l}");
            }
            Err(f.message)
        }
    }
}

fn catalog_fetch_command(
    catalog: &Path,
    platforms: &[String],
    function_cache: Option<&Path>,
) -> Result<String, String> {
    use crate::catalog::{self, Platform, cache::FunctionCache, fetch};
    let doc = catalog::load(catalog)?;
    let cache = FunctionCache::resolve(function_cache)
        .ok_or("no function cache: set XDG_CACHE_HOME or HOME, or pass --function-cache")?;
    let mut opts = fetch::FetchOptions::new(cache);
    if !platforms.is_empty() {
        opts.platforms = platforms
            .iter()
            .map(|p| Platform::parse(p))
            .collect::<Result<_, _>>()?;
    }
    let report = runtime()?.block_on(fetch::fetch(&doc, &opts));
    let mut text = String::new();
    for l in &report.lines {
        text.push_str(l);
        text.push('\n');
    }
    if report.errors.is_empty() {
        Ok(text)
    } else {
        print!("{text}");
        Err(report.errors.join("\n"))
    }
}

/// The catalogs referenced by the kustomization in `dir`.
fn referenced_catalogs(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let file = kustomize::kustomization::KUSTOMIZATION_FILE_NAMES
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "no catalog files given and no kustomization in {}",
                dir.display()
            )
        })?;
    let text =
        std::fs::read_to_string(&file).map_err(|e| format!("reading {}: {e}", file.display()))?;
    let doc = kustomize::yaml::parse_documents(&text)
        .map_err(|e| format!("{}: {}", file.display(), e.message))?
        .into_iter()
        .next()
        .unwrap_or(kustomize::yaml::Value::Null);
    let k = kustomize::kustomization::Kustomization::decode(&doc, &file.display().to_string())
        .map_err(|e| e.to_string())?;
    if k.catalogs.is_empty() {
        return Err(format!("{} references no catalogs", file.display()));
    }
    Ok(k.catalogs.iter().map(|c| dir.join(c)).collect())
}

fn catalog_view_command(
    files: &[PathBuf],
    function_cache: Option<&Path>,
) -> Result<String, String> {
    use crate::catalog::{self, cache::FunctionCache, view};
    let files = if files.is_empty() {
        referenced_catalogs(Path::new("."))?
    } else {
        files.to_vec()
    };
    let docs = files
        .iter()
        .map(|f| catalog::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    let cache = FunctionCache::resolve(function_cache);
    Ok(view::render_all(&docs, cache.as_ref()))
}

/// Spells long flag names with dashes where they were written with
/// underscores (`--enable_alpha_plugins`, `--load_restrictor=...`), as
/// `kubectl kustomize` accepts them (kubectl normalizes every flag name
/// that way). Only the name is changed, never a value, and nothing after a
/// `--` terminator.
fn normalize_flag_names(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    let mut out = Vec::new();
    let mut after_terminator = false;
    for arg in args {
        if after_terminator {
            out.push(arg);
            continue;
        }
        let Some(text) = arg.to_str() else {
            out.push(arg);
            continue;
        };
        if text == "--" {
            after_terminator = true;
            out.push(arg);
            continue;
        }
        match text.strip_prefix("--") {
            Some(rest) if rest.contains('_') => {
                let (name, value) = match rest.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (rest, None),
                };
                let mut fixed = format!("--{}", name.replace('_', "-"));
                if let Some(v) = value {
                    fixed.push('=');
                    fixed.push_str(v);
                }
                out.push(fixed.into());
            }
            _ => out.push(arg),
        }
    }
    out
}

/// Runs the CLI; returns the process exit code.
pub fn main() -> ExitCode {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == "controller")
    {
        controller_memory_setup();
    }
    let cli = match Cli::try_parse_from(normalize_flag_names(std::env::args_os())) {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version print to stdout and succeed; a usage
            // error is bad input like any other: exit code 1, as kubectl
            // (clap's own default would be 2).
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match cli.command {
        Command::Crd { output_dir } => crd_command(output_dir),
        Command::Localize {
            args,
            scope,
            no_verify,
            mirror,
            platform,
            bundle,
            quiet,
        } => report(localize_command(
            args,
            scope,
            no_verify,
            &mirror,
            &platform,
            bundle.as_deref(),
            quiet,
        )),
        Command::Sandbox(SandboxCommand::Status { require_sandbox }) => {
            let probe = crate::krm::sandbox::probe();
            let text = probe.report(&crate::krm::sandbox::Sandbox::default());
            if require_sandbox && !probe.missing().is_empty() {
                eprint!("{text}");
                report(Err("the sandbox is incomplete on this kernel".to_string()))
            } else {
                report(Ok(text))
            }
        }
        Command::Controller(a) => report(controller_command(a).map(|()| String::new())),
        Command::GetRendered { name, namespace } => report(get_rendered_command(&name, &namespace)),
        Command::Bundle(BundleCommand::Create { dir, output }) => report(
            crate::source::create_bundle(&dir)
                .map_err(|e| e.to_string())
                .and_then(|data| {
                    std::fs::write(&output, &data)
                        .map_err(|e| format!("writing {}: {e}", output.display()))?;
                    Ok(format!(
                        "{}: {} bytes, revision sha256:{}\n",
                        output.display(),
                        data.len(),
                        crate::controller::storage::sha256_hex(&data)
                    ))
                }),
        ),
        Command::Bundle(BundleCommand::Push {
            dir,
            name,
            namespace,
            secret,
        }) => report(bundle_push_command(&dir, &name, &namespace, secret)),
        Command::Catalog(CatalogCommand::Fetch {
            catalog,
            platforms,
            function_cache,
        }) => report(catalog_fetch_command(
            &catalog,
            &platforms,
            function_cache.as_deref(),
        )),
        Command::Catalog(CatalogCommand::View {
            files,
            function_cache,
        }) => report(catalog_view_command(&files, function_cache.as_deref())),
        Command::Build {
            dir,
            output,
            reorder,
            load_restrictor,
            enable_alpha_plugins,
            enable_exec,
            enable_managedby_label,
            enable_helm,
            helm_command,
            helm_api_versions,
            helm_kube_version,
            helm_debug,
            network,
            env,
            mount,
            as_current_user,
            network_name: _,
            require_sandbox,
            trusted_catalog,
            function_cache,
        } => {
            if enable_helm && require_sandbox {
                return report(Err(
                    "--enable-helm with --require-sandbox: helm runs unconfined, outside the \
                     function sandbox; drop one of the two flags"
                        .to_string(),
                ));
            }
            let helm = enable_helm.then(|| crate::kustomize::helm::HelmOptions {
                runner: Arc::new(crate::krm::helm::HelmProcess {
                    command: helm_command,
                }),
                kube_version: helm_kube_version.unwrap_or_default(),
                api_versions: helm_api_versions,
                debug: helm_debug,
            });
            let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
            let extra_mounts = match mount
                .iter()
                .map(|m| crate::kustomize::function::StorageMount::from_flag(m, &cwd))
                .collect::<Result<Vec<_>, _>>()
            {
                Ok(m) => m,
                Err(e) => return report(Err(e)),
            };
            let resolver = match crate::catalog::resolve::Resolver::new(
                &trusted_catalog,
                &cwd,
                crate::catalog::cache::FunctionCache::resolve(function_cache.as_deref()),
            ) {
                Ok(r) => r,
                Err(e) => return report(Err(e)),
            };
            let function_runner: Option<Arc<dyn crate::kustomize::function::FunctionRunner>> =
                (enable_alpha_plugins || !trusted_catalog.is_empty()).then(|| {
                    Arc::new(crate::krm::ProcessRunner {
                        plugin_home: crate::krm::default_plugin_home(&|k| std::env::var(k).ok()),
                        container_cli: crate::krm::find_container_cli(),
                        forward_stderr: true,
                        allow_network: network,
                        container_envs: env,
                        container_mounts: extra_mounts,
                        as_current_user,
                        sandbox: Some(crate::krm::sandbox::Sandbox {
                            allow_network: network,
                            require: require_sandbox,
                            ..Default::default()
                        }),
                        ..Default::default()
                    }) as Arc<dyn crate::kustomize::function::FunctionRunner>
                });
            let opts = BuildOptions {
                reorder: reorder.map(|r| match r {
                    ReorderArg::Legacy => Reorder::Legacy,
                    ReorderArg::None => Reorder::None,
                }),
                load_restrictor: match load_restrictor {
                    RestrictorArg::RootOnly => LoadRestrictor::RootOnly,
                    RestrictorArg::None => LoadRestrictor::None,
                },
                enable_alpha_plugins,
                enable_exec,
                enable_managedby_label,
                function_runner,
                catalog_resolver: Some(Arc::new(resolver)),
                helm,
            };
            report(build_command(&dir, output.as_deref(), &opts))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index is the purge delay's: mimalloc 3's default (1,000 ms) reads
    /// back, then the controller's value.
    #[test]
    fn the_controller_sets_the_allocator_purge_delay() {
        assert_eq!(
            allocator_purge_delay(),
            1000,
            "not mimalloc 3's default purge delay: is MI_OPTION_PURGE_DELAY still its index?"
        );
        set_allocator_purge_delay(CONTROLLER_PURGE_DELAY_MS);
        assert_eq!(allocator_purge_delay(), CONTROLLER_PURGE_DELAY_MS);
    }

    #[test]
    fn flag_names_with_underscores_are_spelled_with_dashes() {
        let args = [
            "krmsync",
            "build",
            "--enable_alpha_plugins",
            "--load_restrictor=Load_Restrictions_None",
            "--reorder",
            "none",
            "dir_with_underscores",
            "--",
            "--not_a_flag",
        ];
        let out: Vec<String> = normalize_flag_names(args.iter().map(Into::into))
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        assert_eq!(
            out,
            [
                "krmsync",
                "build",
                "--enable-alpha-plugins",
                "--load-restrictor=Load_Restrictions_None",
                "--reorder",
                "none",
                "dir_with_underscores",
                "--",
                "--not_a_flag",
            ]
        );
    }
}
