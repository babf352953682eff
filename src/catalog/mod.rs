//! Function catalogs (KEP-2906) for the CLI: `Catalog` files, trust,
//! resolution of function configs to sha256-pinned runtimes, the
//! content-addressed binary cache, `krmsync catalog fetch` and
//! `krmsync catalog view`.
//!
//! A catalog file is either KEP-2906's form (`apiVersion:
//! config.kubernetes.io/v1alpha1`, `kind: Catalog`) or krmsync's CRD form
//! (`krmsync.dev/v1alpha1`); both parse into one model, the CRD's
//! [`CatalogSpec`], and are validated with its rules (an exec runtime
//! without a sha256 is invalid).
//!
//! Nothing here runs during rendering except [`resolve::Resolver`], which
//! the render engine calls through its
//! [`CatalogResolver`](crate::kustomize::function::CatalogResolver) hook:
//! it never downloads, and it checks an exec binary's sha256 against the
//! trusted catalog before every run.

pub mod cache;
pub mod cluster;
pub mod fetch;
pub mod resolve;
pub mod view;

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;

pub use crate::api::catalog::{
    CatalogSpec, ContainerRuntime, ExecPlatform, ExecRuntime, FunctionRuntime,
    KrmFunctionDefinitionSpec, KrmFunctionVersion,
};

/// KEP-2906's apiVersion of a `Catalog` file.
pub const KEP_API_VERSION: &str = "config.kubernetes.io/v1alpha1";
/// krmsync's CRD apiVersion (`krmsync catalog` reads exported CRs too).
pub const CRD_API_VERSION: &str = "krmsync.dev/v1alpha1";

/// One parsed, validated catalog file.
#[derive(Clone, Debug)]
pub struct CatalogDoc {
    /// Where it was read from (for messages and relative binary paths).
    pub path: PathBuf,
    pub api_version: String,
    /// `metadata.name` (may be empty).
    pub name: String,
    pub spec: CatalogSpec,
    /// Lower-case hex sha256 of the file's bytes.
    pub digest: String,
}

impl CatalogDoc {
    /// The directory relative `uri`s are resolved against.
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }
}

/// Reads and parses a catalog file.
pub fn load(path: &Path) -> Result<CatalogDoc, String> {
    let bytes =
        std::fs::read(path).map_err(|e| format!("reading catalog {}: {e}", path.display()))?;
    parse(&bytes, path)
}

/// Parses and validates a catalog; every error names `path` and the field.
pub fn parse(content: &[u8], path: &Path) -> Result<CatalogDoc, String> {
    let at = path.display();
    let text = std::str::from_utf8(content).map_err(|_| format!("{at}: not UTF-8"))?;
    let doc: Json = serde_saphyr::from_str(text).map_err(|e| format!("{at}: {e}"))?;
    let Json::Object(top) = doc else {
        return Err(format!("{at}: a Catalog must be a YAML map"));
    };
    let api_version = top
        .get("apiVersion")
        .and_then(Json::as_str)
        .unwrap_or("")
        .to_string();
    if api_version != KEP_API_VERSION && api_version != CRD_API_VERSION {
        return Err(format!(
            "{at}: apiVersion: '{api_version}' is not a catalog apiVersion \
             ({KEP_API_VERSION} or {CRD_API_VERSION})"
        ));
    }
    let kind = top.get("kind").and_then(Json::as_str).unwrap_or("");
    if kind != "Catalog" {
        return Err(format!("{at}: kind: '{kind}' must be Catalog"));
    }
    let name = top
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Json::as_str)
        .unwrap_or("")
        .to_string();
    let spec = top
        .get("spec")
        .and_then(Json::as_object)
        .ok_or_else(|| format!("{at}: spec: required (a map with krmFunctions)"))?;
    let functions = match spec.get("krmFunctions") {
        Some(Json::Array(a)) => a.clone(),
        Some(Json::Null) | None => {
            return Err(format!("{at}: spec.krmFunctions: required"));
        }
        Some(_) => return Err(format!("{at}: spec.krmFunctions: must be a list")),
    };
    let mut krm_functions = Vec::new();
    for (i, f) in functions.into_iter().enumerate() {
        let f = normalize_function(f);
        let parsed: KrmFunctionDefinitionSpec =
            serde_json::from_value(f).map_err(|e| format!("{at}: spec.krmFunctions[{i}]: {e}"))?;
        krm_functions.push(parsed);
    }
    let allowed_namespaces = match spec.get("allowedNamespaces") {
        Some(v) if api_version == CRD_API_VERSION && !v.is_null() => Some(
            serde_json::from_value(v.clone())
                .map_err(|e| format!("{at}: spec.allowedNamespaces: {e}"))?,
        ),
        _ => None,
    };
    let spec = CatalogSpec {
        krm_functions,
        allowed_namespaces,
    };
    let errs = spec.validate();
    if !errs.is_empty() {
        return Err(errs
            .iter()
            .map(|e| format!("{at}: {e}"))
            .collect::<Vec<_>>()
            .join("\n"));
    }
    Ok(CatalogDoc {
        path: path.to_path_buf(),
        api_version,
        name,
        spec,
        digest: cache::sha256_hex(content),
    })
}

/// The KEP's short forms, folded into the schema's: `kind:` beside
/// `group:` (for `names: {kind}`), and one `runtime:` for the whole
/// function (given to each version without its own).
fn normalize_function(f: Json) -> Json {
    let Json::Object(mut m) = f else { return f };
    if !m.contains_key("names")
        && let Some(k) = m.remove("kind")
    {
        m.insert("names".into(), serde_json::json!({ "kind": k }));
    }
    if let Some(rt) = m.remove("runtime")
        && let Some(Json::Array(vs)) = m.get_mut("versions")
    {
        for v in vs.iter_mut() {
            if let Json::Object(vm) = v
                && !vm.contains_key("runtime")
            {
                vm.insert("runtime".into(), rt.clone());
            }
        }
    }
    Json::Object(m)
}

/// An operating system and architecture, in Go's names (`linux/amd64`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Platform {
    pub os: String,
    pub arch: String,
}

impl Platform {
    /// This machine, `std::env::consts` mapped to Go's names.
    pub fn host() -> Platform {
        Platform {
            os: go_os(std::env::consts::OS).to_string(),
            arch: go_arch(std::env::consts::ARCH).to_string(),
        }
    }

    /// Parses `os/arch`.
    pub fn parse(s: &str) -> Result<Platform, String> {
        match s.split_once('/') {
            Some((os, arch)) if !os.is_empty() && !arch.is_empty() && !arch.contains('/') => {
                Ok(Platform {
                    os: os.to_string(),
                    arch: arch.to_string(),
                })
            }
            _ => Err(format!("platform '{s}' must be os/arch (e.g. linux/amd64)")),
        }
    }

    /// Whether an exec platform entry is for this platform.
    pub fn matches(&self, p: &ExecPlatform) -> bool {
        p.os == self.os && p.arch == self.arch
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.os, self.arch)
    }
}

/// Go's `GOOS` for a Rust `target_os`.
pub fn go_os(os: &str) -> &str {
    match os {
        "macos" => "darwin",
        other => other,
    }
}

/// Go's `GOARCH` for a Rust `target_arch`.
pub fn go_arch(arch: &str) -> &str {
    match arch {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64",
        "loongarch64" => "loong64",
        other => other,
    }
}

/// `group` and `version` of an apiVersion (`v1` is the core group).
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.rsplit_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

#[cfg(test)]
mod tests;
