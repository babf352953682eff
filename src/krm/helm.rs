//! Runs the `helm` program for `krmsync build --enable-helm`, as
//! kustomize's HelmChartInflationGenerator runs it: `helm version -c
//! --short` must report version 3, then `helm template` gets the values
//! in `<tmp>/<chart>-kustomize-values.yaml` and the environment of the
//! build plus `HELM_CONFIG_HOME`, `HELM_CACHE_HOME` (`<config
//! home>/.cache`) and `HELM_DATA_HOME` (`<config home>/.data`), the
//! config home being `helmGlobals.configHome` or `<tmp>/helm`. The
//! temporary directory is removed afterwards.
//!
//! helm runs unconfined, with the user's rights, as in kustomize; it is
//! never started unless `--enable-helm` is given.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::kustomize::helm::{HelmArg, HelmCall, HelmRunner};

/// Runs `command` (`--helm-command`, default `helm`).
#[derive(Clone, Debug)]
pub struct HelmProcess {
    pub command: String,
}

/// The first version number in `helm version` output (`v3.14.2+g...`),
/// without its `v` (kustomize's `v?\d+(\.\d+)+`).
fn version_in(text: &str) -> Option<&str> {
    static VERSION: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"v?\d+(\.\d+)+").expect("valid regex"));
    VERSION
        .find(text)
        .map(|m| m.as_str().trim_start_matches('v'))
}

impl HelmProcess {
    fn run(&self, args: &[String], env: &[(String, String)]) -> Result<Vec<u8>, String> {
        let shown_env = format!(
            "[{}]",
            env.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let describe = |what: String, stderr: &str| {
            let prefix = if stderr.is_empty() {
                String::new()
            } else {
                format!("{stderr}: ")
            };
            format!(
                "{prefix}unable to run: '{} {}' with env={shown_env} (is '{}' installed?): {what}",
                self.command,
                args.join(" "),
                self.command
            )
        };
        let out = Command::new(&self.command)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .output()
            .map_err(|e| describe(e.to_string(), ""))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let status = match out.status.code() {
                Some(c) => format!("exit status {c}"),
                None => "killed by a signal".to_string(),
            };
            return Err(describe(status, stderr.trim_end()));
        }
        Ok(out.stdout)
    }
}

fn helm_env(config_home: &std::path::Path) -> Vec<(String, String)> {
    let home = config_home.to_string_lossy();
    vec![
        ("HELM_CONFIG_HOME".into(), home.to_string()),
        ("HELM_CACHE_HOME".into(), format!("{home}/.cache")),
        ("HELM_DATA_HOME".into(), format!("{home}/.data")),
    ]
}

impl HelmRunner for HelmProcess {
    fn check(&self) -> Result<(), String> {
        let tmp = tempfile::Builder::new()
            .prefix("krmsync-helm-")
            .tempdir()
            .map_err(|e| format!("unable to create tmp dir for HELM_CONFIG_HOME: {e}"))?;
        let env = helm_env(&tmp.path().join("helm"));
        let args: Vec<String> = ["version", "-c", "--short"].map(String::from).into();
        let out = self.run(&args, &env)?;
        let text = String::from_utf8_lossy(&out);
        let Some(v) = version_in(&text) else {
            return Err(format!("cannot find version string in {text}"));
        };
        if v.split('.').next() != Some("3") {
            return Err(format!("this plugin requires helm V3 but got v{v}"));
        }
        Ok(())
    }

    fn template(&self, call: &HelmCall) -> Result<Vec<u8>, String> {
        let tmp = tempfile::Builder::new()
            .prefix("krmsync-helm-")
            .tempdir()
            .map_err(|e| format!("cannot create tmp dir to write helm values: {e}"))?;
        let values: PathBuf = tmp
            .path()
            .join(format!("{}-kustomize-values.yaml", call.chart));
        std::fs::write(&values, &call.values)
            .map_err(|e| format!("failed to write values file: {e}"))?;
        let config_home = call
            .config_home
            .clone()
            .unwrap_or_else(|| tmp.path().join("helm"));
        let args: Vec<String> = call
            .args
            .iter()
            .map(|a| match a {
                HelmArg::Text(t) => t.clone(),
                HelmArg::ValuesFile => values.to_string_lossy().into_owned(),
            })
            .collect();
        self.run(&args, &helm_env(&config_home))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_the_first_dotted_number() {
        assert_eq!(version_in("v3.14.2+gc309b6f"), Some("3.14.2"));
        assert_eq!(
            version_in("version.BuildInfo{Version:\"v3.1.0\"}"),
            Some("3.1.0")
        );
        assert_eq!(version_in("Client: v2.16.1+gbbdfe5e"), Some("2.16.1"));
        assert_eq!(version_in("helm 4.0"), Some("4.0"));
        assert_eq!(version_in("garbage 7"), None);
    }
}
