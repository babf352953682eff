//! In-cluster resolution: the Kustomization's `spec.catalogs` (cluster
//! `Catalog` resources) are the only trust root.
//!
//! * Scope: every non-builtin plugin config of every layer is resolved
//!   here, whatever its `config.kubernetes.io/function` annotation says; a
//!   config no approved Catalog pins never runs (`FunctionNotApproved`,
//!   naming its apiVersion and kind and why). Legacy exec plugins never run.
//! * Approved: a Catalog named in `spec.catalogs` that exists, is Ready and
//!   admits the Kustomization's namespace. The others are kept with the
//!   reason they cannot approve anything, for the message.
//! * Runtime: the exec binary for the controller's platform. Container
//!   runtimes are not run in-cluster (`FunctionUnsupported`).
//! * Binary: found in the bundle (the config's `exec.path`, or a
//!   `catalogs:` file of the bundle pinning the same digest with a relative
//!   `uri`, as `krmsync localize` writes) or in the controller's digest
//!   cache; whichever is used must hash to the Catalog resource's sha256
//!   (the bundle only says where the bytes are). Paths that leave the
//!   bundle are ignored. A binary found nowhere is recorded in
//!   [`ClusterResolver::missing`] for the controller to fetch from the
//!   Catalog's `uri` before it renders again; nothing is downloaded during
//!   the render.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::cache::{FunctionCache, pin_hex};
use super::resolve::{RunDir, verified_exec};
use super::{CatalogSpec, ExecPlatform, ExecRuntime, Platform, split_api_version};
use crate::kustomize::function::{
    CatalogFile, CatalogLayer, CatalogResolver, CatalogScope, FunctionSpec, ResolvedFunction,
    function_spec,
};
use crate::kustomize::yaml::Value;
use crate::kustomize::{Error, ErrorKind};

/// A Catalog that may approve functions for this Kustomization.
#[derive(Clone, Debug)]
pub struct ApprovedCatalog {
    pub name: String,
    pub spec: CatalogSpec,
}

/// A Catalog named in `spec.catalogs` that cannot approve anything here.
#[derive(Clone, Debug)]
pub struct RefusedCatalog {
    pub name: String,
    /// Why (`does not exist`, `is not Ready`, `does not allow namespace 'x'`).
    pub why: String,
    /// Its spec, when it exists (to say that it would define a function).
    pub spec: Option<CatalogSpec>,
}

/// An exec binary a render needed and found nowhere.
#[derive(Clone, Debug, PartialEq)]
pub struct WantedBinary {
    pub catalog: String,
    pub platform: ExecPlatform,
}

/// The resolver of one in-cluster render.
#[derive(Debug)]
pub struct ClusterResolver {
    namespace: String,
    approved: Vec<ApprovedCatalog>,
    refused: Vec<RefusedCatalog>,
    bundle_root: PathBuf,
    cache: Option<FunctionCache>,
    platform: Platform,
    run_dir: Arc<Mutex<RunDir>>,
    missing: Arc<Mutex<Vec<WantedBinary>>>,
}

impl ClusterResolver {
    /// A resolver for a Kustomization of `namespace` whose bundle is
    /// unpacked at `bundle_root`.
    pub fn new(
        namespace: &str,
        approved: Vec<ApprovedCatalog>,
        refused: Vec<RefusedCatalog>,
        bundle_root: &Path,
        cache: Option<FunctionCache>,
    ) -> ClusterResolver {
        ClusterResolver {
            namespace: namespace.to_string(),
            approved,
            refused,
            bundle_root: bundle_root
                .canonicalize()
                .unwrap_or_else(|_| bundle_root.to_path_buf()),
            cache,
            platform: Platform::host(),
            run_dir: Arc::default(),
            missing: Arc::default(),
        }
    }

    /// Resolve for another platform (tests).
    pub fn with_platform(mut self, platform: Platform) -> ClusterResolver {
        self.platform = platform;
        self
    }

    /// The binaries the last render needed and did not find.
    pub fn missing(&self) -> Vec<WantedBinary> {
        self.missing.lock().map(|m| m.clone()).unwrap_or_default()
    }

    fn not_approved(&self, api_version: &str, kind: &str, name: &str) -> Error {
        let (group, version) = split_api_version(api_version);
        let what = format!("{api_version} {kind} ('{name}')");
        let defines = |spec: &CatalogSpec| {
            spec.krm_functions
                .iter()
                .any(|f| f.group == group && f.names.kind == kind)
        };
        let mut why = Vec::new();
        for r in &self.refused {
            if r.spec.as_ref().is_none_or(defines) {
                why.push(format!("Catalog '{}' {}", r.name, r.why));
            }
        }
        let mut versions = Vec::new();
        for c in &self.approved {
            for f in c.spec.krm_functions.iter() {
                if f.group == group && f.names.kind == kind {
                    versions.extend(
                        f.versions
                            .iter()
                            .map(|v| format!("{} ({})", v.name, c.name)),
                    );
                }
            }
        }
        if !versions.is_empty() {
            why.push(format!(
                "the approved catalogs define it only in versions {}, not {version}",
                versions.join(", ")
            ));
        }
        if why.is_empty() {
            let names: Vec<&str> = self
                .approved
                .iter()
                .map(|c| c.name.as_str())
                .chain(self.refused.iter().map(|r| r.name.as_str()))
                .collect();
            why.push(if names.is_empty() {
                "the Kustomization names no Catalog (spec.catalogs)".to_string()
            } else {
                format!(
                    "no Catalog of spec.catalogs ({}) defines it",
                    names.join(", ")
                )
            });
        }
        Error::of(
            ErrorKind::FunctionNotApproved,
            format!(
                "{what} is not approved for namespace '{}': {}",
                self.namespace,
                why.join("; ")
            ),
        )
    }

    /// Whether `p` is inside the bundle (symlinks resolved).
    fn in_bundle(&self, p: &Path) -> Option<PathBuf> {
        let c = p.canonicalize().ok()?;
        c.starts_with(&self.bundle_root).then_some(c)
    }

    /// Where the binary may be: the config's `exec.path`; the bundle's
    /// catalogs' relative `uri`s for the same digest, or for the same
    /// function, version and platform (so that a bundle carrying another
    /// build is reported as a mismatch, not as missing); the cache.
    fn candidates(
        &self,
        layer: CatalogLayer<'_>,
        function_config: &Value,
        p: &ExecPlatform,
    ) -> Vec<PathBuf> {
        let api = function_config.str_at(&["apiVersion"]).unwrap_or("");
        let kind = function_config.str_at(&["kind"]).unwrap_or("");
        let (group, version) = split_api_version(api);
        let hex = pin_hex(p.sha256.as_deref().unwrap_or(""));
        let mut out = Vec::new();
        if let Ok(Some(FunctionSpec::Exec { path, .. })) = function_spec(function_config)
            && !path.is_empty()
            && path.contains('/')
            && let Some(c) = self.in_bundle(&layer.dir.join(&path))
        {
            out.push(c);
        }
        for file in layer.catalogs {
            let Ok(doc) = super::parse(&file.content, &file.path) else {
                continue;
            };
            for f in &doc.spec.krm_functions {
                let same_function = f.group == group && f.names.kind == kind;
                for v in &f.versions {
                    for bp in v.runtime.exec.iter().flat_map(|e| e.platforms.iter()) {
                        let same_digest = bp.sha256.as_deref().map(pin_hex) == Some(hex.clone());
                        let same_slot = same_function
                            && v.name == version
                            && bp.os == p.os
                            && bp.arch == p.arch;
                        if bp.uri.is_empty()
                            || bp.uri.contains("://")
                            || !(same_digest || same_slot)
                        {
                            continue;
                        }
                        if let Some(c) = self.in_bundle(&doc.dir().join(&bp.uri))
                            && !out.contains(&c)
                        {
                            out.push(c);
                        }
                    }
                }
            }
        }
        if let Some(cache) = &self.cache {
            out.push(cache.path(&hex));
        }
        out
    }
}

impl CatalogResolver for ClusterResolver {
    /// The bundle's own catalogs are not a trust root in-cluster; they are
    /// only read to find localized binaries.
    fn check(&self, _catalogs: &[CatalogFile]) -> Result<(), String> {
        Ok(())
    }

    fn resolve(
        &self,
        layer: CatalogLayer<'_>,
        function_config: &Value,
    ) -> Result<Option<Arc<dyn ResolvedFunction>>, Error> {
        let api = function_config.str_at(&["apiVersion"]).unwrap_or("");
        let kind = function_config.str_at(&["kind"]).unwrap_or("");
        let name = function_config.str_at(&["metadata", "name"]).unwrap_or("");
        let (group, version) = split_api_version(api);
        for c in &self.approved {
            let Some(v) = c
                .spec
                .krm_functions
                .iter()
                .filter(|f| f.group == group && f.names.kind == kind)
                .find_map(|f| f.versions.iter().find(|v| v.name == version))
            else {
                continue;
            };
            let what = format!("{api} {kind} from Catalog '{}'", c.name);
            let rt = &v.runtime;
            if let Some(p) = rt
                .exec
                .iter()
                .flat_map(|e| e.platforms.iter())
                .find(|p| self.platform.matches(p))
            {
                let exec = rt.exec.clone().unwrap_or_default();
                if let Some(e) = exec.envs.iter().find(|e| !e.contains('=')) {
                    return Err(Error::of(
                        ErrorKind::FunctionUnsupported,
                        format!(
                            "{what}: runtime.exec.envs entry '{e}' would pass the controller's own \
                             environment through, which is never done in-cluster; give KEY=VALUE"
                        ),
                    ));
                }
                return Ok(Some(Arc::new(ClusterFunction {
                    what,
                    catalog: c.name.clone(),
                    exec,
                    platform: p.clone(),
                    candidates: self.candidates(layer, function_config, p),
                    run_dir: self.run_dir.clone(),
                    missing: self.missing.clone(),
                })));
            }
            let have: Vec<String> = rt
                .exec
                .iter()
                .flat_map(|e| e.platforms.iter().map(|p| format!("{}/{}", p.os, p.arch)))
                .collect();
            let msg = match &rt.container {
                Some(ct) => format!(
                    "{what}: its container runtime (image {}) is not run in-cluster: krmsync runs \
                     exec functions only; add an exec runtime for {} to the Catalog",
                    ct.image, self.platform
                ),
                None => format!(
                    "{what}: no exec binary for the controller's platform {} (platforms: {})",
                    self.platform,
                    have.join(", ")
                ),
            };
            return Err(Error::of(ErrorKind::FunctionUnsupported, msg));
        }
        Err(self.not_approved(api, kind, name))
    }

    fn scope(&self) -> CatalogScope {
        CatalogScope::Build
    }
}

/// A function approved by a Catalog resource.
#[derive(Debug)]
struct ClusterFunction {
    what: String,
    catalog: String,
    exec: ExecRuntime,
    platform: ExecPlatform,
    candidates: Vec<PathBuf>,
    run_dir: Arc<Mutex<RunDir>>,
    missing: Arc<Mutex<Vec<WantedBinary>>>,
}

impl ResolvedFunction for ClusterFunction {
    fn describe(&self) -> String {
        self.what.clone()
    }

    fn prepare(&self) -> Result<FunctionSpec, Error> {
        let r = verified_exec(
            &self.run_dir,
            &self.platform,
            &self.candidates,
            &format!("Catalog '{}'", self.catalog),
            &if self.platform.uri.contains("://") {
                format!(
                    "the controller fetches it from {} into its cache",
                    self.platform.uri
                )
            } else {
                format!(
                    "the Catalog's uri '{}' is not a URL, so the binary must be in the bundle, \
                     listed with its sha256 in a catalog file of the kustomization's `catalogs:` \
                     (as `krmsync localize --platform` writes it) or named by the config's exec path",
                    self.platform.uri
                )
            },
        );
        if let Err(e) = &r
            && e.kind == ErrorKind::FunctionUnavailable
            && let Ok(mut m) = self.missing.lock()
        {
            let w = WantedBinary {
                catalog: self.catalog.clone(),
                platform: self.platform.clone(),
            };
            if !m.contains(&w) {
                m.push(w);
            }
        }
        // the Catalog, not the bundle, says what the function may have
        Ok(FunctionSpec::Exec {
            path: r?.display().to_string(),
            network: self.exec.require_network,
            envs: self.exec.envs.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kustomize::yaml::parse_documents;

    fn spec(hex: &str, uri: &str) -> CatalogSpec {
        let p = Platform::host();
        serde_saphyr::from_str(&format!(
            "krmFunctions:\n- group: example.com\n  names: {{kind: SetLabels}}\n  versions:\n  \
             - name: v1\n    runtime:\n      exec:\n        platforms:\n        - {{bin: set-labels, \
             os: {}, arch: {}, uri: '{uri}', sha256: '{hex}'}}\n",
            p.os, p.arch
        ))
        .unwrap()
    }

    fn config(annotation: Option<&str>) -> Value {
        let ann = annotation
            .map(|a| format!("  annotations:\n    config.kubernetes.io/function: '{a}'\n"))
            .unwrap_or_default();
        parse_documents(&format!(
            "apiVersion: example.com/v1\nkind: SetLabels\nmetadata:\n  name: s\n{ann}"
        ))
        .unwrap()
        .remove(0)
    }

    #[test]
    fn unapproved_configs_are_refused_whatever_their_annotation() {
        let d = tempfile::tempdir().unwrap();
        let r = ClusterResolver::new("team-b", vec![], vec![], d.path(), None);
        let layer = CatalogLayer {
            catalogs: &[],
            dir: d.path(),
        };
        for cfg in [config(None), config(Some("exec: {path: ./fn}"))] {
            let e = r.resolve(layer, &cfg).unwrap_err();
            assert_eq!(e.kind, ErrorKind::FunctionNotApproved);
            assert!(
                e.message.contains("example.com/v1 SetLabels ('s')")
                    && e.message.contains("namespace 'team-b'")
                    && e.message.contains("names no Catalog"),
                "{e}"
            );
        }
        let refused = RefusedCatalog {
            name: "fns".into(),
            why: "does not allow namespace 'team-b' (spec.allowedNamespaces)".into(),
            spec: Some(spec(&"a".repeat(64), "x")),
        };
        let r = ClusterResolver::new("team-b", vec![], vec![refused], d.path(), None);
        let e = r.resolve(layer, &config(None)).unwrap_err();
        assert!(
            e.message
                .contains("Catalog 'fns' does not allow namespace 'team-b'"),
            "{e}"
        );
    }

    #[test]
    fn binaries_come_from_the_bundle_only_when_they_match_the_catalog_resource() {
        let d = tempfile::tempdir().unwrap();
        let bundle = d.path().join("bundle");
        std::fs::create_dir_all(bundle.join("fn")).unwrap();
        std::fs::write(bundle.join("fn/set-labels"), b"good").unwrap();
        std::fs::write(d.path().join("outside"), b"good").unwrap();
        let good = crate::source::sha256_hex(b"good");
        let approved = |hex: &str| {
            vec![ApprovedCatalog {
                name: "fns".into(),
                spec: spec(hex, "https://example.com/set-labels"),
            }]
        };
        let layer = CatalogLayer {
            catalogs: &[],
            dir: &bundle,
        };
        let r = ClusterResolver::new("a", approved(&good), vec![], &bundle, None);
        let f = r
            .resolve(layer, &config(Some("exec: {path: ./fn/set-labels}")))
            .unwrap()
            .unwrap();
        let FunctionSpec::Exec { path, .. } = f.prepare().unwrap() else {
            panic!("not exec")
        };
        assert_eq!(std::fs::read(&path).unwrap(), b"good");
        assert!(
            !Path::new(&path).starts_with(&bundle),
            "runs a private copy"
        );

        // a wrong pin never yields a runnable spec
        let wrong = crate::source::sha256_hex(b"other");
        let r = ClusterResolver::new("a", approved(&wrong), vec![], &bundle, None);
        let f = r
            .resolve(layer, &config(Some("exec: {path: ./fn/set-labels}")))
            .unwrap()
            .unwrap();
        let e = f.prepare().unwrap_err();
        assert_eq!(e.kind, ErrorKind::FunctionNotApproved, "{e}");
        assert!(
            e.message.contains(&format!("the binary is sha256:{good}")),
            "{e}"
        );

        // a path out of the bundle is not a candidate; the binary is missing
        let r = ClusterResolver::new("a", approved(&good), vec![], &bundle, None);
        let f = r
            .resolve(layer, &config(Some("exec: {path: ../outside}")))
            .unwrap()
            .unwrap();
        let e = f.prepare().unwrap_err();
        assert_eq!(e.kind, ErrorKind::FunctionUnavailable, "{e}");
        assert_eq!(r.missing().len(), 1);
        assert_eq!(
            r.missing()[0].platform.uri,
            "https://example.com/set-labels"
        );
    }

    #[test]
    fn localized_catalog_files_in_the_bundle_locate_binaries_by_digest() {
        let d = tempfile::tempdir().unwrap();
        let bundle = d.path().to_path_buf();
        std::fs::create_dir_all(bundle.join("localized-files/example.com")).unwrap();
        std::fs::write(
            bundle.join("localized-files/example.com/set-labels"),
            b"bin",
        )
        .unwrap();
        let hex = crate::source::sha256_hex(b"bin");
        let p = Platform::host();
        let file = CatalogFile {
            entry: "catalog.yaml".into(),
            path: bundle.join("catalog.yaml"),
            referenced_by: bundle.join("kustomization.yaml"),
            content: format!(
                "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata: {{name: c}}\n\
                 spec:\n  krmFunctions:\n  - group: example.com\n    names: {{kind: SetLabels}}\n    \
                 versions:\n    - name: v1\n      runtime:\n        exec:\n          platforms:\n          \
                 - {{bin: set-labels, os: {}, arch: {}, uri: localized-files/example.com/set-labels, \
                 sha256: {hex}}}\n",
                p.os, p.arch
            )
            .into_bytes(),
        };
        let r = ClusterResolver::new(
            "a",
            vec![ApprovedCatalog {
                name: "fns".into(),
                spec: spec(&hex, "https://example.com/set-labels"),
            }],
            vec![],
            &bundle,
            None,
        );
        let layer = CatalogLayer {
            catalogs: std::slice::from_ref(&file),
            dir: &bundle,
        };
        let f = r.resolve(layer, &config(None)).unwrap().unwrap();
        assert!(f.prepare().is_ok());
    }

    #[test]
    fn container_runtimes_are_not_run_in_cluster() {
        let d = tempfile::tempdir().unwrap();
        let spec: CatalogSpec = serde_saphyr::from_str(
            "krmFunctions:\n- group: example.com\n  names: {kind: SetLabels}\n  versions:\n  \
             - name: v1\n    runtime: {container: {image: example/set-labels:v1}}\n",
        )
        .unwrap();
        let r = ClusterResolver::new(
            "a",
            vec![ApprovedCatalog {
                name: "fns".into(),
                spec,
            }],
            vec![],
            d.path(),
            None,
        );
        let layer = CatalogLayer {
            catalogs: &[],
            dir: d.path(),
        };
        let e = r.resolve(layer, &config(None)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::FunctionUnsupported);
        assert!(e.message.contains("not run in-cluster"), "{e}");
    }

    #[test]
    fn network_and_environment_come_from_the_catalog_resource_only() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("fn"), b"bin").unwrap();
        let hex = crate::source::sha256_hex(b"bin");
        let with = |extra: &str| {
            let mut s = spec(&hex, "https://example.com/fn");
            let e: ExecRuntime =
                serde_saphyr::from_str(&format!("platforms: []\n{extra}")).unwrap();
            let rt = s.krm_functions[0].versions[0]
                .runtime
                .exec
                .as_mut()
                .unwrap();
            rt.require_network = e.require_network;
            rt.envs = e.envs;
            ClusterResolver::new(
                "a",
                vec![ApprovedCatalog {
                    name: "fns".into(),
                    spec: s,
                }],
                vec![],
                d.path(),
                None,
            )
        };
        let layer = CatalogLayer {
            catalogs: &[],
            dir: d.path(),
        };
        // the tenant's annotation asks for the network and an environment
        let cfg = config(Some("exec: {path: ./fn, network: true, envs: [HOME, X=1]}"));
        let r = with("");
        let spec = r.resolve(layer, &cfg).unwrap().unwrap().prepare().unwrap();
        let FunctionSpec::Exec { network, envs, .. } = spec else {
            panic!("not exec")
        };
        assert!(!network && envs.is_empty(), "{network} {envs:?}");
        let r = with("requireNetwork: true\nenvs: [MODE=strict]\n");
        let spec = r.resolve(layer, &cfg).unwrap().unwrap().prepare().unwrap();
        assert!(
            matches!(spec, FunctionSpec::Exec { network: true, ref envs, .. } if envs == &["MODE=strict"])
        );
        // passing the controller's own variables through is refused
        let e = with("envs: [KUBERNETES_SERVICE_HOST]\n")
            .resolve(layer, &cfg)
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::FunctionUnsupported);
        assert!(e.message.contains("KUBERNETES_SERVICE_HOST"), "{e}");
    }
}
