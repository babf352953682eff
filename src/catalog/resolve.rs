//! Resolution of function configs through trusted catalogs: the render
//! engine's [`CatalogResolver`] for `krmsync build`.
//!
//! * Trust: every catalog a layer references must match a
//!   `--trusted-catalog` REF: a path naming the same file (REF relative
//!   to the working directory, the entry relative to its kustomization),
//!   or `sha256:<hex>` of the catalog's bytes.
//! * Matching (KEP-2906): catalogs in the layer's order, functions in
//!   catalog order, first match wins; a function matches on group and
//!   kind, and must list the config's version.
//! * Runtime: the exec binary for this platform, else the container
//!   (pinned by digest). Exec binaries come from a `uri` relative to the
//!   catalog (a localized tree) or from the [`FunctionCache`]; nothing is
//!   downloaded. Before every run the binary's sha256 is checked, and the
//!   verified bytes are what runs (a private copy, so the file cannot be
//!   swapped between the check and the exec).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::cache::{FunctionCache, pin_hex, sha256_hex};
use super::{CatalogDoc, ContainerRuntime, ExecPlatform, ExecRuntime, Platform, split_api_version};
use crate::kustomize::function::{
    CatalogFile, CatalogLayer, CatalogResolver, ContainerSpec, FunctionSpec, ResolvedFunction,
};
use crate::kustomize::yaml::Value;
use crate::kustomize::{Error, ErrorKind};

/// A `--trusted-catalog` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrustedRef {
    /// A catalog file (canonical path).
    Path(PathBuf),
    /// The sha256 (hex) of a catalog file's bytes.
    Digest(String),
}

impl TrustedRef {
    /// Parses REF: `sha256:<64 hex>`, else a local path relative to `cwd`
    /// (it must exist). Remote references are refused.
    pub fn parse(r: &str, cwd: &Path) -> Result<TrustedRef, String> {
        if let Some(hex) = r.strip_prefix("sha256:") {
            if hex.len() == 64 && hex.chars().all(|c| c.is_ascii_hexdigit()) {
                return Ok(TrustedRef::Digest(hex.to_ascii_lowercase()));
            }
            return Err(format!(
                "--trusted-catalog {r}: not a sha256 digest (sha256:<64 hex digits>)"
            ));
        }
        if r.contains("://") {
            return Err(format!(
                "--trusted-catalog {r}: remote catalogs are not supported; localize the \
                 catalog and trust the local file"
            ));
        }
        let p = cwd.join(r);
        let canon = p
            .canonicalize()
            .map_err(|e| format!("--trusted-catalog {r}: {}: {e}", p.display()))?;
        Ok(TrustedRef::Path(canon))
    }

    fn trusts(&self, f: &CatalogFile) -> bool {
        match self {
            TrustedRef::Path(p) => f.path.canonicalize().unwrap_or_else(|_| f.path.clone()) == *p,
            TrustedRef::Digest(d) => sha256_hex(&f.content) == *d,
        }
    }
}

/// A directory only this process writes (mode 0700), removed on drop:
/// verified copies of binaries run from here.
#[derive(Debug)]
pub(super) struct PrivateDir(PathBuf);

impl PrivateDir {
    pub(super) fn new() -> Result<PrivateDir, String> {
        use std::os::unix::fs::DirBuilderExt;
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        for _ in 0..100 {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let p = base.join(format!(
                "krmsync-functions-{}-{}-{nanos}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            match std::fs::DirBuilder::new().mode(0o700).create(&p) {
                Ok(()) => return Ok(PrivateDir(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(format!("creating {}: {e}", p.display())),
            }
        }
        Err("cannot create a private directory for function binaries".into())
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Verified copies, by digest.
#[derive(Debug, Default)]
pub(super) struct RunDir {
    dir: Option<PrivateDir>,
    copies: HashMap<String, PathBuf>,
}

/// The resolver of `krmsync build`.
#[derive(Debug)]
pub struct Resolver {
    trusted: Vec<TrustedRef>,
    cache: Option<FunctionCache>,
    platform: Platform,
    run_dir: Arc<Mutex<RunDir>>,
}

impl Resolver {
    /// A resolver trusting `trusted` (REFs relative to `cwd`).
    pub fn new(
        trusted: &[String],
        cwd: &Path,
        cache: Option<FunctionCache>,
    ) -> Result<Resolver, String> {
        let trusted = trusted
            .iter()
            .map(|r| TrustedRef::parse(r, cwd))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Resolver {
            trusted,
            cache,
            platform: Platform::host(),
            run_dir: Arc::default(),
        })
    }

    /// Resolve for another platform (tests).
    pub fn with_platform(mut self, platform: Platform) -> Resolver {
        self.platform = platform;
        self
    }

    fn parse(f: &CatalogFile) -> Result<CatalogDoc, String> {
        super::parse(&f.content, &f.path)
    }

    /// Finds the function for (group, version, kind) in `catalogs`.
    pub fn find(
        &self,
        catalogs: &[CatalogFile],
        api_version: &str,
        kind: &str,
    ) -> Result<Option<CatalogFunction>, String> {
        let (group, version) = split_api_version(api_version);
        let mut other_versions = Vec::new();
        for file in catalogs {
            let doc = Self::parse(file)?;
            for f in &doc.spec.krm_functions {
                if f.group != group || f.names.kind != kind {
                    continue;
                }
                let Some(v) = f.versions.iter().find(|v| v.name == version) else {
                    other_versions.extend(
                        f.versions
                            .iter()
                            .map(|v| format!("{} ({})", v.name, file.entry)),
                    );
                    continue;
                };
                let what = format!("{api_version} {kind} from catalog {}", file.entry);
                let runtime = self.choose(&v.runtime, &what)?;
                return Ok(Some(CatalogFunction {
                    what,
                    catalog: file.path.clone(),
                    catalog_dir: file
                        .path
                        .parent()
                        .map(Path::to_path_buf)
                        .unwrap_or_default(),
                    runtime,
                    cache: self.cache.clone(),
                    run_dir: self.run_dir.clone(),
                }));
            }
        }
        if other_versions.is_empty() {
            Ok(None)
        } else {
            Err(format!(
                "{kind} of group '{group}' is in the catalogs, but not in version {version} \
                 (versions: {})",
                other_versions.join(", ")
            ))
        }
    }

    fn choose(&self, rt: &super::FunctionRuntime, what: &str) -> Result<CatalogRuntime, String> {
        if let Some(e) = &rt.exec
            && let Some(p) = e.platforms.iter().find(|p| self.platform.matches(p))
        {
            return Ok(CatalogRuntime::Exec(p.clone(), e.clone()));
        }
        if let Some(c) = &rt.container {
            return Ok(CatalogRuntime::Container(c.clone()));
        }
        let have: Vec<String> = rt
            .exec
            .iter()
            .flat_map(|e| e.platforms.iter().map(|p| format!("{}/{}", p.os, p.arch)))
            .collect();
        Err(format!(
            "{what}: no exec binary for {} (platforms: {}) and no container runtime",
            self.platform,
            have.join(", ")
        ))
    }
}

impl CatalogResolver for Resolver {
    fn check(&self, catalogs: &[CatalogFile]) -> Result<(), String> {
        for f in catalogs {
            if !self.trusted.iter().any(|t| t.trusts(f)) {
                return Err(format!(
                    "catalog '{}' ({}), referenced by {}, is not trusted: review it \
                     (krmsync catalog view {}) and pass --trusted-catalog {} \
                     (or --trusted-catalog sha256:{})",
                    f.entry,
                    f.path.display(),
                    f.referenced_by.display(),
                    f.path.display(),
                    f.path.display(),
                    sha256_hex(&f.content)
                ));
            }
            Self::parse(f)?;
        }
        Ok(())
    }

    fn resolve(
        &self,
        layer: CatalogLayer<'_>,
        function_config: &Value,
    ) -> Result<Option<Arc<dyn ResolvedFunction>>, Error> {
        let api = function_config.str_at(&["apiVersion"]).unwrap_or("");
        let kind = function_config.str_at(&["kind"]).unwrap_or("");
        Ok(self
            .find(layer.catalogs, api, kind)
            .map_err(Error::invalid)?
            .map(|f| Arc::new(f) as Arc<dyn ResolvedFunction>))
    }
}

/// The runtime a catalog gives a function here.
#[derive(Clone, Debug, PartialEq)]
pub enum CatalogRuntime {
    /// The binary for this platform, and the runtime it belongs to.
    Exec(ExecPlatform, ExecRuntime),
    Container(ContainerRuntime),
}

/// A function resolved through a trusted catalog.
#[derive(Debug)]
pub struct CatalogFunction {
    what: String,
    catalog: PathBuf,
    catalog_dir: PathBuf,
    pub runtime: CatalogRuntime,
    cache: Option<FunctionCache>,
    run_dir: Arc<Mutex<RunDir>>,
}

/// The places an exec binary may be, in order: a `uri` relative to the
/// catalog (a localized tree), then the cache.
pub fn binary_candidates(
    p: &ExecPlatform,
    catalog_dir: &Path,
    cache: Option<&FunctionCache>,
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if !p.uri.is_empty() && !p.uri.contains("://") {
        out.push(catalog_dir.join(&p.uri));
    }
    if let (Some(c), Some(d)) = (cache, &p.sha256) {
        out.push(c.path(d));
    }
    out
}

/// Runs the first candidate whose bytes hash to the pin, from a private
/// copy of the verified bytes (so the file cannot be swapped between the
/// check and the exec). Candidates with other bytes are skipped (a binary
/// of another platform); when none matches, a mismatch is an error naming
/// every digest found, and no file at all is `FunctionUnavailable`.
pub(super) fn verified_exec(
    run_dir: &Mutex<RunDir>,
    p: &ExecPlatform,
    candidates: &[PathBuf],
    trust: &str,
    missing_help: &str,
) -> Result<PathBuf, Error> {
    let hex = pin_hex(p.sha256.as_deref().unwrap_or(""));
    let mut mismatches = Vec::new();
    let mut verified = None;
    for c in candidates.iter().filter(|c| c.is_file()) {
        let bytes =
            std::fs::read(c).map_err(|e| Error::io(format!("reading {}: {e}", c.display())))?;
        let actual = sha256_hex(&bytes);
        if actual == hex {
            verified = Some(bytes);
            break;
        }
        mismatches.push(format!(
            "sha256 mismatch for {}: {trust} pins sha256:{hex}, the binary is sha256:{actual}",
            c.display()
        ));
    }
    let Some(bytes) = verified else {
        if !mismatches.is_empty() {
            return Err(Error::of(
                ErrorKind::FunctionNotApproved,
                mismatches.join("; "),
            ));
        }
        let places: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
        return Err(Error::of(
            ErrorKind::FunctionUnavailable,
            format!(
                "the {}/{} binary '{}' (sha256:{hex}) is missing{}{}; {missing_help}",
                p.os,
                p.arch,
                p.bin,
                if places.is_empty() {
                    ""
                } else {
                    ": looked at "
                },
                places.join(", "),
            ),
        ));
    };
    let mut rd = run_dir
        .lock()
        .map_err(|_| Error::invalid("function run directory lock poisoned"))?;
    if let Some(copy) = rd.copies.get(&hex) {
        return Ok(copy.clone());
    }
    if rd.dir.is_none() {
        rd.dir = Some(PrivateDir::new().map_err(Error::io)?);
    }
    let dir = rd.dir.as_ref().map(|d| d.0.clone()).unwrap_or_default();
    let copy = dir
        .join(&hex)
        .join(if p.bin.is_empty() || p.bin.contains('/') {
            "function"
        } else {
            &p.bin
        });
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(copy.parent().unwrap_or(&dir))?;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o700)
            .open(&copy)?;
        f.write_all(&bytes)?;
        f.sync_all()
    };
    write().map_err(|e| {
        Error::io(format!(
            "copying the verified binary to {}: {e}",
            copy.display()
        ))
    })?;
    rd.copies.insert(hex, copy.clone());
    Ok(copy)
}

impl CatalogFunction {
    fn prepare_exec(&self, p: &ExecPlatform, exec: &ExecRuntime) -> Result<FunctionSpec, Error> {
        let candidates = binary_candidates(p, &self.catalog_dir, self.cache.as_ref());
        let path = verified_exec(
            &self.run_dir,
            p,
            &candidates,
            &format!("the trusted catalog {}", self.catalog.display()),
            &format!(
                "run `krmsync catalog fetch {}` (binaries are never downloaded during a build)",
                self.catalog.display()
            ),
        )?;
        Ok(FunctionSpec::Exec {
            path: path.display().to_string(),
            network: exec.require_network,
            envs: exec.envs.clone(),
        })
    }

    fn prepare_container(&self, c: &ContainerRuntime) -> Result<FunctionSpec, String> {
        let image = match (c.image.split_once("@sha256:"), &c.sha256) {
            (Some((_, inline)), Some(pin)) if pin_hex(inline) != pin_hex(pin) => {
                return Err(format!(
                    "image {} and runtime.container.sha256 {pin} disagree",
                    c.image
                ));
            }
            (Some(_), _) => c.image.clone(),
            (None, Some(pin)) => format!("{}@sha256:{}", c.image, pin_hex(pin)),
            (None, None) => {
                return Err(format!(
                    "container image {} is not pinned by a digest (runtime.container.sha256 or \
                     image@sha256:...); krmsync runs only pinned catalog functions",
                    c.image
                ));
            }
        };
        Ok(FunctionSpec::Container(ContainerSpec {
            image,
            network: c.require_network,
            ..Default::default()
        }))
    }
}

impl ResolvedFunction for CatalogFunction {
    fn describe(&self) -> String {
        self.what.clone()
    }

    fn prepare(&self) -> Result<FunctionSpec, Error> {
        match &self.runtime {
            CatalogRuntime::Exec(p, exec) => self.prepare_exec(p, exec),
            CatalogRuntime::Container(c) => self.prepare_container(c).map_err(Error::invalid),
        }
    }
}
