//! Rendering a fetched bundle with the engine: confined to the bundle, no
//! network, no environment, `targetNamespace` applied through a generated
//! in-memory kustomization beside the bundle (nothing is written to disk;
//! beside, not inside, so that it never contains the tree it includes).

use std::path::Path;
use std::sync::Arc;

use super::functions::RenderFunctions;
use crate::kustomize::fs::{Confined, DiskFs, FileSystem, MemFs, OverlayFs, clean};
use crate::kustomize::function::{CatalogResolver, FunctionRunner};
use crate::kustomize::{self, BuildOptions, Error};

/// Suffix of the generated (in-memory) kustomization directory, a sibling
/// of the bundle root.
const TARGET_NS_SUFFIX: &str = ".krmsync-target-namespace";

/// The rendered stream, as objects for the API and as YAML for storage.
#[derive(Debug)]
pub struct RenderOutput {
    pub objects: Vec<serde_json::Value>,
    pub yaml: String,
    pub digest: String,
    /// `warning` results of the KRM functions that ran.
    pub warnings: Vec<String>,
}

/// Renders `tree/path` (`path` relative to the bundle root) without KRM
/// functions (a plugin config is an error).
pub fn render_tree(
    tree: &Path,
    path: Option<&str>,
    target_namespace: Option<&str>,
) -> Result<RenderOutput, Error> {
    render_tree_with(tree, path, target_namespace, None)
}

/// Renders `tree/path`, running the KRM functions `functions` approves.
pub fn render_tree_with(
    tree: &Path,
    path: Option<&str>,
    target_namespace: Option<&str>,
    functions: Option<&RenderFunctions>,
) -> Result<RenderOutput, Error> {
    let root = std::fs::canonicalize(tree)
        .map_err(|e| Error::io(format!("bundle directory '{}': {e}", tree.display())))?;
    let disk: Arc<dyn FileSystem> = Arc::new(
        DiskFs::confined(&root)
            .map_err(|e| Error::io(format!("bundle directory '{}': {e}", root.display())))?,
    );
    render_view(disk, root, path, target_namespace, functions)
}

/// Renders `root/path` of a bundle held in memory (files below `root`, an
/// absolute path that is never touched on disk), confined to `root` as a
/// tree on disk is: the same output, and the same messages as from a tree
/// unpacked at `root`.
pub fn render_memory_with(
    tree: Arc<MemFs>,
    root: &Path,
    path: Option<&str>,
    target_namespace: Option<&str>,
    functions: Option<&RenderFunctions>,
) -> Result<RenderOutput, Error> {
    let root = clean(root);
    let view: Arc<dyn FileSystem> = Arc::new(Confined::new(tree, &root));
    render_view(view, root, path, target_namespace, functions)
}

/// Renders `root/path` of a bundle seen through `disk` (a view confined to
/// `root`).
fn render_view(
    disk: Arc<dyn FileSystem>,
    root: std::path::PathBuf,
    path: Option<&str>,
    target_namespace: Option<&str>,
    functions: Option<&RenderFunctions>,
) -> Result<RenderOutput, Error> {
    let rel = path.unwrap_or("").trim_start_matches("./");
    let dir = clean(&root.join(rel));
    if !dir.starts_with(&root) {
        return Err(Error::security(format!(
            "spec.path '{rel}' leaves the bundle root '{}'",
            root.display()
        )));
    }
    let (fs, build_dir): (Arc<dyn FileSystem>, _) = match target_namespace {
        None => (disk, dir),
        Some(ns) => {
            let base = root
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "bundle".to_string());
            let gen_dir = root.with_file_name(format!("{base}{TARGET_NS_SUFFIX}"));
            let rel = rel.trim_end_matches('/');
            let target = if rel.is_empty() || rel == "." {
                format!("../{base}")
            } else {
                format!("../{base}/{rel}")
            };
            // JSON is YAML: no quoting questions for odd names.
            let k = serde_json::json!({
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "namespace": ns,
                "resources": [target],
            });
            let mut upper = MemFs::new();
            upper.add_file(gen_dir.join("kustomization.yaml"), k.to_string());
            (Arc::new(OverlayFs::new(upper, disk)), gen_dir)
        }
    };
    let opts = BuildOptions {
        catalog_resolver: functions.map(|f| f.resolver.clone() as Arc<dyn CatalogResolver>),
        function_runner: functions.map(|f| f.runner.clone() as Arc<dyn FunctionRunner>),
        ..BuildOptions::default()
    };
    let rendered = kustomize::build(fs, &build_dir, &opts)?;
    let yaml = rendered.to_yaml()?;
    let digest = super::storage::digest(&yaml);
    let objects = rendered.resources.iter().map(|r| r.to_json()).collect();
    Ok(RenderOutput {
        objects,
        yaml,
        digest,
        warnings: functions.map(|f| f.take_warnings()).unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kustomize::ErrorKind;

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let app = d.path().join("apps/web");
        std::fs::create_dir_all(&app).unwrap();
        std::fs::write(
            app.join("kustomization.yaml"),
            "namespace: web\nresources: [cm.yaml]\n",
        )
        .unwrap();
        std::fs::write(
            app.join("cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n",
        )
        .unwrap();
        d
    }

    #[test]
    fn renders_path_and_target_namespace() {
        let d = tree();
        let out = render_tree(d.path(), Some("./apps/web"), None).unwrap();
        assert_eq!(out.objects[0]["metadata"]["namespace"], "web");
        assert!(out.yaml.starts_with("apiVersion: v1\n"));
        assert!(out.digest.starts_with("sha256:"));
        let out = render_tree(d.path(), Some("apps/web"), Some("prod")).unwrap();
        assert_eq!(out.objects[0]["metadata"]["namespace"], "prod");
        assert_eq!(out.objects.len(), 1);
    }

    #[test]
    fn target_namespace_works_for_a_kustomization_at_the_bundle_root() {
        let d = tempfile::tempdir().unwrap();
        let tree = d.path().join("tree");
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::write(tree.join("kustomization.yaml"), "resources: [cm.yaml]\n").unwrap();
        std::fs::write(
            tree.join("cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
        )
        .unwrap();
        for path in [None, Some("."), Some("./"), Some("")] {
            let out = render_tree(&tree, path, Some("team-a"))
                .unwrap_or_else(|e| panic!("{path:?}: {e}"));
            assert_eq!(out.objects.len(), 1, "{path:?}");
            assert_eq!(out.objects[0]["metadata"]["namespace"], "team-a");
        }
        // nothing was written anywhere
        let entries: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(entries.len(), 1);
    }

    /// A bundle rendered from memory gives what the same bundle unpacked
    /// to disk at the same path gives: the output, or the error message.
    #[test]
    fn memory_and_disk_renders_agree() {
        let cm =
            |name: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\n");
        // (what, files, spec.path, spec.targetNamespace)
        type Case<'a> = (
            &'a str,
            Vec<(&'a str, String)>,
            Option<&'a str>,
            Option<&'a str>,
        );
        let trees: Vec<Case> = vec![
            (
                "overlay over a base, generators, patches, components",
                vec![
                    ("base/kustomization.yaml", "resources: [cm.yaml]\n".into()),
                    ("base/cm.yaml", cm("a")),
                    (
                        "overlays/prod/kustomization.yaml",
                        "resources: [../../base]\ncomponents: [../../comp]\n\
                         namePrefix: p-\npatches: [{path: patch.yaml}]\n\
                         configMapGenerator: [{name: g, files: [conf/app.properties], envs: [vars.env]}]\n"
                            .into(),
                    ),
                    ("overlays/prod/patch.yaml", format!("{}data: {{k: v}}\n", cm("a"))),
                    ("overlays/prod/conf/app.properties", "x=1\n".into()),
                    ("overlays/prod/vars.env", "A=1\nB\n".into()),
                    (
                        "comp/kustomization.yaml",
                        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n\
                         commonLabels: {c: d}\n"
                            .into(),
                    ),
                ],
                Some("overlays/prod"),
                Some("team-a"),
            ),
            (
                "a missing resource",
                vec![("kustomization.yaml", "resources: [missing.yaml]\n".into())],
                None,
                None,
            ),
            (
                "a file outside the kustomization root",
                vec![
                    ("app/kustomization.yaml", "resources: [../cm.yaml]\n".into()),
                    ("cm.yaml", cm("a")),
                ],
                Some("app"),
                None,
            ),
            (
                "a base outside the bundle",
                vec![("kustomization.yaml", "resources: [../..]\n".into())],
                None,
                Some("ns"),
            ),
            (
                "a missing path",
                vec![("kustomization.yaml", "resources: []\n".into())],
                Some("nope"),
                None,
            ),
            (
                "a directory without a kustomization",
                vec![
                    ("kustomization.yaml", "resources: [empty]\n".into()),
                    ("empty/readme.md", "x".into()),
                ],
                None,
                None,
            ),
            (
                "invalid YAML",
                vec![
                    ("kustomization.yaml", "resources: [cm.yaml]\n".into()),
                    ("cm.yaml", "kind: [\n".into()),
                ],
                None,
                None,
            ),
            (
                "a patch file that is missing",
                vec![
                    ("kustomization.yaml", "resources: [cm.yaml]\npatches: [{path: p.yaml}]\n".into()),
                    ("cm.yaml", cm("a")),
                ],
                None,
                None,
            ),
        ];
        for (what, files, path, tns) in trees {
            let d = tempfile::tempdir().unwrap();
            let src = d.path().join("src");
            for (name, text) in &files {
                let p = src.join(name);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, text).unwrap();
            }
            let data = crate::source::create_bundle(&src).unwrap();
            // canonical: a disk render resolves symlinks in the root path
            let root = std::fs::canonicalize(d.path())
                .unwrap()
                .join("work/ns_app/rev/tree");
            let limits = crate::source::Limits::default();
            crate::source::unpack_tar_gz(&data, &root, &limits).unwrap();
            let mem =
                crate::source::unpack_bundle_in_memory("ConfigMap ns/b", &data, &root, &limits)
                    .unwrap()
                    .expect("kept in memory");
            let text =
                |r: Result<RenderOutput, Error>| r.map(|o| o.yaml).map_err(|e| e.to_string());
            let on_disk = text(render_tree(&root, path, tns));
            let in_memory = text(render_memory_with(Arc::new(mem), &root, path, tns, None));
            assert_eq!(in_memory, on_disk, "{what}");
            if what.starts_with("overlay") {
                assert!(
                    on_disk
                        .as_ref()
                        .is_ok_and(|y| y.contains("namespace: team-a")),
                    "{on_disk:?}"
                );
            } else {
                assert!(on_disk.is_err(), "{what}: {on_disk:?}");
            }
        }
    }

    #[test]
    fn errors_keep_their_kind() {
        let d = tree();
        std::fs::write(
            d.path().join("kustomization.yaml"),
            "resources:\n- https://github.com/example/repo//base?ref=v1\n",
        )
        .unwrap();
        let err = render_tree(d.path(), None, None).unwrap_err();
        assert_eq!(err.kind, ErrorKind::RemoteReference, "{err}");
        let err = render_tree(d.path(), Some("missing"), None).unwrap_err();
        assert!(err.message.contains("missing"), "{err}");
        let err = render_tree(d.path(), Some("../.."), None).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Security);
    }

    #[test]
    fn helm_charts_are_refused_in_cluster_with_a_way_out() {
        let d = tree();
        std::fs::create_dir_all(d.path().join("charts/app")).unwrap();
        std::fs::write(d.path().join("charts/app/values.yaml"), "a: 1\n").unwrap();
        std::fs::write(
            d.path().join("kustomization.yaml"),
            "helmCharts:\n- name: app\n",
        )
        .unwrap();
        let err = render_tree(d.path(), None, None).unwrap_err();
        assert_eq!(err.kind, ErrorKind::HelmNotEnabled, "{err}");
        let failure = crate::controller::error::Failure::from(err);
        assert_eq!(failure.reason(), crate::api::Reason::FunctionUnsupported);
        assert!(
            failure.message().contains("krmsync build --enable-helm"),
            "{}",
            failure.message()
        );
    }
}
