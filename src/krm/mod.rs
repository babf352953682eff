//! The KRM function runtime: runs exec and container KRM functions and
//! legacy exec plugins as child processes for the render engine.
//!
//! [`ProcessRunner`] implements the engine's
//! [`FunctionRunner`](crate::kustomize::function::FunctionRunner) hook:
//! * exec functions run in the [`sandbox`] (unless the runner's `sandbox`
//!   is `None`): an empty private working directory (also `HOME` and
//!   `TMPDIR`), a clean environment (`PATH`, `HOME`, `TMPDIR` and the
//!   spec's `exec.envs`), the [`ResourceList`](wire::ResourceList) on
//!   stdin, rlimits, Landlock, seccomp, a wall-clock timeout that kills
//!   the process group and a cap on output size; without the sandbox they
//!   run in the kustomization directory;
//! * container functions run through `docker` or `podman` (`--network
//!   none` unless the spec asks for the network and the runner allows it,
//!   read-only root, the spec's `envs`, its mounts only when allowed);
//! * legacy exec plugins get the config file path and their arguments,
//!   kustomize's environment (the host's plus `KUSTOMIZE_PLUGIN_CONFIG_STRING`
//!   and `KUSTOMIZE_PLUGIN_CONFIG_ROOT`), the resources on stdin.
//!
//! Legacy exec plugins get kustomize's environment and read the
//! kustomization directory: they are not sandboxed, and a runner whose
//! sandbox is required refuses them.

pub mod helm;
pub mod process;
pub mod sandbox;
pub mod wire;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::kustomize::function::{
    ContainerSpec, FunctionCall, FunctionRunner, FunctionSpec, LegacyPluginCall, StorageMount,
};
use crate::kustomize::resid::Gvk;
use crate::kustomize::yaml::Value;

use process::{Output, Run};
use wire::ResourceList;

/// Default wall-clock limit of one function run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Default cap on a function's stdout (and, separately, stderr).
pub const DEFAULT_MAX_OUTPUT: usize = 64 << 20;

/// Runs functions and plugins as local child processes.
#[derive(Clone, Debug)]
pub struct ProcessRunner {
    /// Where legacy exec plugins live (`KUSTOMIZE_PLUGIN_HOME`).
    pub plugin_home: Option<PathBuf>,
    pub timeout: Duration,
    pub max_output: usize,
    /// `docker` or `podman` for container functions (`None`: refused).
    pub container_cli: Option<PathBuf>,
    /// Let container functions have the network when their spec asks.
    pub allow_network: bool,
    /// Let container functions bind their spec's mounts.
    pub allow_mounts: bool,
    /// Environment for every container function (`--env`: `KEY=VALUE` or
    /// `KEY`), after the spec's `envs`, so the same name wins here.
    pub container_envs: Vec<String>,
    /// Mounts for every container function (`--mount`), after the spec's;
    /// their `src` is already absolute.
    pub container_mounts: Vec<StorageMount>,
    /// Run containers as the current uid:gid instead of `nobody`.
    pub as_current_user: bool,
    /// Copy a successful function's stderr to ours (as kustomize does).
    pub forward_stderr: bool,
    /// The sandbox of exec functions (`None`: run them unconfined, in the
    /// kustomization directory, as before the sandbox existed).
    pub sandbox: Option<sandbox::Sandbox>,
    /// Where the `warning` results of successful runs go (`function
    /// '<name>': [warning] ...`), for a caller that reports them (the
    /// controller's Events); `None`: dropped.
    pub warnings: Option<std::sync::Arc<std::sync::Mutex<Vec<String>>>>,
}

impl Default for ProcessRunner {
    fn default() -> Self {
        ProcessRunner {
            plugin_home: None,
            timeout: DEFAULT_TIMEOUT,
            max_output: DEFAULT_MAX_OUTPUT,
            container_cli: None,
            allow_network: false,
            allow_mounts: true,
            container_envs: Vec::new(),
            container_mounts: Vec::new(),
            as_current_user: false,
            forward_stderr: false,
            sandbox: Some(sandbox::Sandbox::default()),
            warnings: None,
        }
    }
}

/// kustomize's plugin home: `$KUSTOMIZE_PLUGIN_HOME`, else
/// `$XDG_CONFIG_HOME/kustomize/plugin`, else `$HOME/.config/kustomize/plugin`.
pub fn default_plugin_home(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if let Some(h) = env("KUSTOMIZE_PLUGIN_HOME").filter(|s| !s.is_empty()) {
        return Some(PathBuf::from(h));
    }
    if let Some(x) = env("XDG_CONFIG_HOME").filter(|s| !s.is_empty()) {
        return Some(Path::new(&x).join("kustomize").join("plugin"));
    }
    env("HOME").filter(|s| !s.is_empty()).map(|h| {
        Path::new(&h)
            .join(".config")
            .join("kustomize")
            .join("plugin")
    })
}

/// The first of `docker`, `podman` found on `PATH`.
pub fn find_container_cli() -> Option<PathBuf> {
    ["docker", "podman"].iter().find_map(|n| which(n))
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// An exec function's declared environment (`exec.envs` of its spec, or
/// its catalog's): `KEY=VALUE`, or `KEY` to pass krmsync's own variable
/// through (skipped when unset).
fn exec_env(envs: &[String]) -> Vec<(String, String)> {
    envs.iter()
        .filter_map(|e| match e.split_once('=') {
            Some((k, v)) => Some((k.to_string(), v.to_string())),
            None => std::env::var(e).ok().map(|v| (e.clone(), v)),
        })
        .collect()
}

/// The clean environment of unsandboxed exec functions.
fn clean_env() -> Vec<(String, String)> {
    let mut env = vec![(
        "PATH".to_string(),
        std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into()),
    )];
    for k in ["HOME", "TMPDIR"] {
        if let Ok(v) = std::env::var(k) {
            env.push((k.to_string(), v));
        }
    }
    env
}

fn stderr_note(out: &Output) -> String {
    let e = String::from_utf8_lossy(&out.stderr);
    let e = e.trim();
    if e.is_empty() {
        String::new()
    } else {
        format!("; stderr: {e}")
    }
}

impl ProcessRunner {
    fn run(&self, run: Run) -> Result<Output, String> {
        process::run(run, self.timeout, self.max_output)
    }

    fn forward(&self, out: &Output) {
        if self.forward_stderr && !out.stderr.is_empty() {
            eprint!("{}", String::from_utf8_lossy(&out.stderr));
        }
    }

    fn exec_program(&self, path: &str, dir: &Path) -> Result<PathBuf, String> {
        if path.contains('/') {
            let p = dir.join(path);
            if !p.exists() {
                return Err(format!("exec path {} does not exist", p.display()));
            }
            Ok(p)
        } else {
            which(path).ok_or_else(|| format!("exec path '{path}' not found on PATH"))
        }
    }

    /// The run of an exec function in the sandbox, with its directory
    /// (removed when dropped).
    fn sandboxed(
        &self,
        sb: &sandbox::Sandbox,
        program: PathBuf,
        network: bool,
        envs: Vec<(String, String)>,
        stdin: Vec<u8>,
    ) -> Result<(sandbox::RunDir, Run), String> {
        let user = sb.switch_to();
        let dir = sandbox::RunDir::new(user)
            .map_err(|e| format!("creating the sandbox directory: {e}"))?;
        let program = match user {
            Some(_) => dir
                .copy_program(&program)
                .map_err(|e| format!("copying {} into the sandbox: {e}", program.display()))?,
            None => program,
        };
        let work = dir.work();
        let prepared = sb.prepare(&sandbox::Policy {
            program: &program,
            work_dir: &work,
            network,
        })?;
        let mut env = vec![
            (
                "PATH".to_string(),
                "/usr/local/bin:/usr/bin:/bin".to_string(),
            ),
            ("HOME".to_string(), work.display().to_string()),
            ("TMPDIR".to_string(), work.display().to_string()),
        ];
        for (k, v) in envs {
            env.retain(|(e, _)| *e != k);
            env.push((k, v));
        }
        let run = Run {
            program,
            args: Vec::new(),
            env,
            dir: work,
            stdin,
            sandbox: Some(std::sync::Arc::new(prepared)),
            user,
        };
        Ok((dir, run))
    }

    fn container_run(&self, c: &ContainerSpec, dir: &Path, stdin: Vec<u8>) -> Result<Run, String> {
        let cli = self.container_cli.clone().ok_or_else(|| {
            format!(
                "container function image '{}' cannot run: neither docker nor podman is on PATH",
                c.image
            )
        })?;
        let mut args: Vec<String> = ["run", "--rm", "-i", "--read-only"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.push("--security-opt=no-new-privileges".into());
        if self.as_current_user {
            args.push(format!(
                "--user={}:{}",
                rustix::process::getuid().as_raw(),
                rustix::process::getgid().as_raw()
            ));
        } else {
            args.push("--user=nobody".into());
        }
        if !(c.network && self.allow_network) {
            args.push("--network=none".into());
        } else if c.network {
            args.push("--network=host".into());
        }
        for e in c.envs.iter().chain(&self.container_envs) {
            args.push("-e".into());
            args.push(e.clone());
        }
        if self.allow_mounts {
            for m in c.mounts.iter().chain(&self.container_mounts) {
                let src = dir.join(&m.src);
                let ty = if m.mount_type.is_empty() {
                    "bind"
                } else {
                    &m.mount_type
                };
                let ro = if m.rw { "" } else { ",readonly" };
                args.push("--mount".into());
                args.push(format!(
                    "type={ty},source={},target={}{ro}",
                    src.display(),
                    m.dst
                ));
            }
        } else if !c.mounts.is_empty() {
            return Err(format!(
                "container function image '{}' asks for mounts, which this runner does not allow",
                c.image
            ));
        }
        args.push(c.image.clone());
        // The container CLI itself needs the host's environment (its
        // configuration, socket location); the function only sees `-e`.
        Ok(Run {
            program: cli,
            args,
            env: std::env::vars().collect(),
            dir: dir.to_path_buf(),
            stdin,
            ..Default::default()
        })
    }
}

impl FunctionRunner for ProcessRunner {
    fn run_function(&self, call: FunctionCall<'_>) -> Result<Vec<Value>, String> {
        let mut items = call.items;
        wire::annotate_items(&mut items);
        let input = ResourceList {
            items,
            function_config: Some(call.function_config.clone()),
            results: Vec::new(),
        }
        .encode()?
        .into_bytes();
        // Lives until the run is over: the sandbox's directory.
        let mut _run_dir = None;
        let (run, what) = match call.spec {
            FunctionSpec::Exec {
                path,
                network,
                envs,
            } => {
                let what = format!("exec {path}");
                let program = self.exec_program(path, call.working_dir)?;
                let run = match &self.sandbox {
                    None => Run {
                        program,
                        env: clean_env(),
                        dir: call.working_dir.to_path_buf(),
                        stdin: input,
                        ..Default::default()
                    },
                    Some(sb) => {
                        let (d, run) = self
                            .sandboxed(
                                sb,
                                program,
                                *network && sb.allow_network,
                                exec_env(envs),
                                input,
                            )
                            .map_err(|e| format!("function '{}' ({what}): {e}", call.name))?;
                        _run_dir = Some(d);
                        run
                    }
                };
                (run, what)
            }
            FunctionSpec::Container(c) => (
                self.container_run(c, call.working_dir, input)?,
                format!("image {}", c.image),
            ),
        };
        let out = self
            .run(run)
            .map_err(|e| format!("function '{}' ({what}): {e}", call.name))?;
        if !out.success {
            // the results a failing function reported, if it wrote a ResourceList
            let results = std::str::from_utf8(&out.stdout)
                .ok()
                .filter(|t| !t.trim().is_empty())
                .and_then(|t| ResourceList::decode(t).ok())
                .map(|rl| rl.results.iter().map(|r| r.to_string()).collect::<Vec<_>>())
                .filter(|r| !r.is_empty())
                .map(|r| format!("; results: {}", r.join("; ")))
                .unwrap_or_default();
            return Err(format!(
                "function '{}' ({what}) failed: {}{results}{}",
                call.name,
                out.status,
                stderr_note(&out)
            ));
        }
        self.forward(&out);
        let note = stderr_note(&out);
        let text = String::from_utf8(out.stdout)
            .map_err(|_| format!("function '{}' ({what}): output is not UTF-8", call.name))?;
        let mut rl = ResourceList::decode(&text)
            .map_err(|e| format!("function '{}' ({what}): {e}", call.name))?;
        let errors: Vec<String> = rl.errors().map(|r| r.to_string()).collect();
        if !errors.is_empty() {
            return Err(format!(
                "function '{}' ({what}) reported errors: {}{}",
                call.name,
                errors.join("; "),
                note
            ));
        }
        if let Some(sink) = &self.warnings
            && let Ok(mut w) = sink.lock()
        {
            w.extend(
                rl.results
                    .iter()
                    .filter(|r| r.severity == wire::Severity::Warning)
                    .map(|r| format!("function '{}': {r}", call.name)),
            );
        }
        wire::strip_items(&mut rl.items);
        Ok(rl.items)
    }

    fn locate_legacy_plugin(&self, gvk: &Gvk) -> Result<PathBuf, String> {
        let home = self.plugin_home.as_ref().ok_or_else(|| {
            format!(
                "unable to locate plugin {}: no plugin home (set KUSTOMIZE_PLUGIN_HOME)",
                gvk.kind
            )
        })?;
        let mut p = home.clone();
        for part in [&gvk.group, &gvk.version] {
            if !part.is_empty() {
                p.push(part);
            }
        }
        p.push(gvk.kind.to_lowercase());
        p.push(&gvk.kind);
        match std::fs::metadata(&p) {
            Ok(_) if is_executable(&p) => Ok(p),
            Ok(_) => Err(format!("unexecutable plugin at: {}", p.display())),
            Err(_) => Err(format!(
                "plugin {} not found: no executable at {} (krmsync does not load Go plugins)",
                gvk.kind,
                p.display()
            )),
        }
    }

    fn run_legacy_plugin(&self, call: LegacyPluginCall<'_>) -> Result<Vec<u8>, String> {
        if self.sandbox.as_ref().is_some_and(|s| s.require) {
            return Err(format!(
                "legacy exec plugin {} refused: the sandbox is required (--require-sandbox) and legacy plugins run unconfined",
                call.path.display()
            ));
        }
        let cfg_file = process::TempFile::new("kust-plugin-config-", call.config.as_bytes())
            .map_err(|e| format!("creating tmp plugin config file: {e}"))?;
        let mut args = vec![cfg_file.path().display().to_string()];
        args.extend(call.args.iter().cloned());
        let mut env: Vec<(String, String)> = std::env::vars().collect();
        if call.config.len() <= 131_071 {
            env.push((
                "KUSTOMIZE_PLUGIN_CONFIG_STRING".into(),
                call.config.to_string(),
            ));
        }
        env.push((
            "KUSTOMIZE_PLUGIN_CONFIG_ROOT".into(),
            call.config_root.display().to_string(),
        ));
        if let Some(h) = &self.plugin_home {
            env.retain(|(k, _)| k != "KUSTOMIZE_PLUGIN_HOME");
            env.push(("KUSTOMIZE_PLUGIN_HOME".into(), h.display().to_string()));
        }
        let out = self
            .run(Run {
                program: call.path.to_path_buf(),
                args,
                env,
                dir: call.config_root.to_path_buf(),
                stdin: call.stdin.to_vec(),
                ..Default::default()
            })
            .map_err(|e| {
                format!(
                    "failure in plugin configured via {}; {e}",
                    cfg_file.path().display()
                )
            })?;
        if !out.success {
            return Err(format!(
                "failure in plugin configured via {}; {}{}{}",
                cfg_file.path().display(),
                out.status,
                stderr_note(&out),
                {
                    let o = String::from_utf8_lossy(&out.stdout);
                    if o.trim().is_empty() {
                        String::new()
                    } else {
                        format!("; stdout: {}", o.trim())
                    }
                }
            ));
        }
        self.forward(&out);
        Ok(out.stdout)
    }
}

#[cfg(test)]
mod tests;
