use std::path::{Path, PathBuf};

use super::cache::{FunctionCache, sha256_hex};
use super::resolve::{CatalogRuntime, Resolver, TrustedRef};
use super::*;
use crate::kustomize::function::{CatalogFile, CatalogResolver, FunctionSpec};

const H1: &str = "1111111111111111111111111111111111111111111111111111111111111111";

fn file(path: &str, text: &str) -> CatalogFile {
    CatalogFile {
        entry: Path::new(path)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned(),
        path: PathBuf::from(path),
        referenced_by: PathBuf::from("/k/kustomization.yaml"),
        content: text.as_bytes().to_vec(),
    }
}

fn exec_fn(group: &str, kind: &str, versions: &[&str], hex: &str) -> String {
    let host = Platform::host();
    let mut s = format!("  - group: {group}\n    names: {{kind: {kind}}}\n    versions:\n");
    for v in versions {
        s.push_str(&format!(
            "    - name: {v}\n      runtime:\n        exec:\n          platforms:\n          - {{bin: f, os: {}, arch: {}, uri: 'f-{v}', sha256: '{hex}'}}\n",
            host.os, host.arch
        ));
    }
    s
}

fn catalog(functions: &str) -> String {
    format!(
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata: {{name: c}}\nspec:\n  krmFunctions:\n{functions}"
    )
}

fn resolver() -> Resolver {
    Resolver::new(&[], Path::new("/"), None).unwrap()
}

#[test]
fn both_apiversions_parse_into_one_model() {
    let kep = catalog(&exec_fn("example.com", "A", &["v1"], H1));
    let a = parse(kep.as_bytes(), Path::new("/c/kep.yaml")).unwrap();
    let crd = kep
        .replace(KEP_API_VERSION, CRD_API_VERSION)
        .replace("spec:\n", "spec:\n  allowedNamespaces: {names: [apps]}\n");
    let b = parse(crd.as_bytes(), Path::new("/c/crd.yaml")).unwrap();
    assert_eq!(a.spec.krm_functions, b.spec.krm_functions);
    assert_eq!(b.api_version, CRD_API_VERSION);
    assert!(b.spec.allowed_namespaces.is_some());
    assert_eq!(a.name, "c");
    assert_eq!(a.digest, sha256_hex(kep.as_bytes()));
}

#[test]
fn keps_short_forms_are_accepted() {
    // `kind:` beside `group:`, one `runtime:` for the function.
    let text = catalog(&format!(
        "  - group: example.com\n    kind: Short\n    versions:\n    - name: v1\n    - name: v2\n    runtime:\n      container: {{image: 'img:1', sha256: '{H1}'}}\n"
    ));
    let d = parse(text.as_bytes(), Path::new("c.yaml")).unwrap();
    let f = &d.spec.krm_functions[0];
    assert_eq!(f.names.kind, "Short");
    assert_eq!(f.versions.len(), 2);
    assert!(f.versions.iter().all(|v| v.runtime.container.is_some()));
}

#[test]
fn errors_name_the_file_and_the_field() {
    let text = catalog(
        "  - group: example.com\n    names: {kind: A}\n    versions:\n    - name: v1\n      runtime:\n        exec:\n          platforms:\n          - {bin: f, os: linux, arch: amd64, uri: 'https://x/f'}\n",
    );
    let e = parse(text.as_bytes(), Path::new("/c/cat.yaml")).unwrap_err();
    assert!(
        e.starts_with("/c/cat.yaml: spec.krmFunctions[0].versions[0].runtime.exec.platforms[0].sha256: required"),
        "{e}"
    );
    let e = parse(
        b"apiVersion: v1\nkind: Catalog\nspec: {krmFunctions: []}\n",
        Path::new("x.yaml"),
    )
    .unwrap_err();
    assert!(e.starts_with("x.yaml: apiVersion: 'v1'"), "{e}");
    let e = parse(
        b"apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nspec:\n  krmFunctions:\n  - group: g\n    names: {kind: K}\n    versions: [{name: v1}]\n",
        Path::new("x.yaml"),
    )
    .unwrap_err();
    assert!(
        e.starts_with("x.yaml: spec.krmFunctions[0]:") && e.contains("runtime"),
        "{e}"
    );
}

#[test]
fn platform_names_are_gos() {
    assert_eq!(go_os("macos"), "darwin");
    assert_eq!(go_os("linux"), "linux");
    assert_eq!(go_arch("x86_64"), "amd64");
    assert_eq!(go_arch("aarch64"), "arm64");
    assert_eq!(
        Platform::parse("darwin/arm64").unwrap().to_string(),
        "darwin/arm64"
    );
    assert!(Platform::parse("linux").is_err());
    assert_eq!(split_api_version("example.com/v1"), ("example.com", "v1"));
    assert_eq!(split_api_version("v1"), ("", "v1"));
}

#[test]
fn version_rules_group_kind_then_version_first_match_wins() {
    let h2 = "2".repeat(64);
    let c1 = file(
        "/k/one.yaml",
        &catalog(&format!(
            "{}{}",
            exec_fn("example.com", "A", &["v1"], H1),
            exec_fn("example.com", "A", &["v2"], &h2)
        )),
    );
    let c2 = file(
        "/k/two.yaml",
        &catalog(&exec_fn("example.com", "A", &["v1", "v3"], &h2)),
    );
    let r = resolver();
    let cats = [c1, c2];
    let pin = |api: &str| match r.find(&cats, api, "A").unwrap().unwrap().runtime {
        CatalogRuntime::Exec(p, _) => (p.uri, p.sha256.unwrap()),
        other => panic!("{other:?}"),
    };
    // the first catalog, first function with the version
    assert_eq!(pin("example.com/v1"), ("f-v1".into(), H1.into()));
    // a later function of the same catalog
    assert_eq!(pin("example.com/v2"), ("f-v2".into(), h2.clone()));
    // only the second catalog has v3
    assert_eq!(pin("example.com/v3"), ("f-v3".into(), h2.clone()));
    // group and kind known, version not: an error naming the versions
    let e = r.find(&cats, "example.com/v9", "A").unwrap_err();
    assert!(
        e.contains("not in version v9") && e.contains("v1 (one.yaml)"),
        "{e}"
    );
    // other group or kind: not in the catalogs
    assert!(r.find(&cats, "other.com/v1", "A").unwrap().is_none());
    assert!(r.find(&cats, "example.com/v1", "a").unwrap().is_none());
}

#[test]
fn exec_for_this_platform_preferred_else_container_else_error() {
    let both = catalog(&format!(
        "  - group: g.io\n    names: {{kind: K}}\n    versions:\n    - name: v1\n      runtime:\n        container: {{image: 'img:1', sha256: '{H1}'}}\n        exec:\n          platforms:\n          - {{bin: f, os: windows, arch: arm64, uri: 'f', sha256: '{H1}'}}\n"
    ));
    let cats = [file("/k/c.yaml", &both)];
    let host = resolver();
    match host.find(&cats, "g.io/v1", "K").unwrap().unwrap().runtime {
        CatalogRuntime::Container(c) => assert_eq!(c.image, "img:1"),
        other => panic!("{other:?}"),
    }
    let win = resolver().with_platform(Platform::parse("windows/arm64").unwrap());
    assert!(matches!(
        win.find(&cats, "g.io/v1", "K").unwrap().unwrap().runtime,
        CatalogRuntime::Exec(..)
    ));
    let exec_only = catalog(&exec_fn("g.io", "K", &["v1"], H1));
    let cats = [file("/k/c.yaml", &exec_only)];
    let e = win.find(&cats, "g.io/v1", "K").unwrap_err();
    assert!(e.contains("no exec binary for windows/arm64"), "{e}");
}

#[test]
fn container_runtimes_run_only_pinned() {
    let text = |c: &str| {
        catalog(&format!(
            "  - group: g.io\n    names: {{kind: K}}\n    versions:\n    - name: v1\n      runtime:\n        container: {c}\n"
        ))
    };
    let r = resolver();
    let spec = |c: &str| {
        let cats = [file("/k/c.yaml", &text(c))];
        let cf = r
            .resolve(
                crate::kustomize::function::CatalogLayer {
                    catalogs: &cats,
                    dir: Path::new("/k"),
                },
                &crate::kustomize::yaml::parse_documents("apiVersion: g.io/v1\nkind: K\n").unwrap()
                    [0],
            )
            .unwrap()
            .unwrap();
        cf.prepare()
    };
    match spec(&format!(
        "{{image: 'img:1', sha256: '{H1}', requireNetwork: true}}"
    ))
    .unwrap()
    {
        FunctionSpec::Container(c) => {
            assert_eq!(c.image, format!("img:1@sha256:{H1}"));
            assert!(c.network);
        }
        other => panic!("{other:?}"),
    }
    let e = spec("{image: 'img:1'}").unwrap_err();
    assert!(e.message.contains("not pinned"), "{e}");
}

#[test]
fn trust_by_path_or_content_digest() {
    let dir = std::env::temp_dir().join(format!("krmsync-catalog-trust-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = catalog(&exec_fn("g.io", "K", &["v1"], H1));
    std::fs::write(dir.join("c.yaml"), &text).unwrap();
    let f = CatalogFile {
        entry: "c.yaml".into(),
        path: dir.join("c.yaml"),
        referenced_by: dir.join("kustomization.yaml"),
        content: text.as_bytes().to_vec(),
    };
    let untrusted = Resolver::new(&[], &dir, None).unwrap();
    let e = untrusted.check(std::slice::from_ref(&f)).unwrap_err();
    assert!(
        e.contains("'c.yaml'") && e.contains("is not trusted"),
        "{e}"
    );
    let by_path = Resolver::new(&["c.yaml".into()], &dir, None).unwrap();
    by_path.check(std::slice::from_ref(&f)).unwrap();
    let digest = format!("sha256:{}", sha256_hex(text.as_bytes()));
    let by_digest = Resolver::new(&[digest], Path::new("/"), None).unwrap();
    by_digest.check(std::slice::from_ref(&f)).unwrap();
    let other = Resolver::new(&[format!("sha256:{H1}")], Path::new("/"), None).unwrap();
    assert!(other.check(std::slice::from_ref(&f)).is_err());
    assert!(TrustedRef::parse("https://x/c.yaml", &dir).is_err());
    assert!(TrustedRef::parse("missing.yaml", &dir).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn cache_stores_only_matching_content() {
    let dir = std::env::temp_dir().join(format!("krmsync-catalog-cache-{}", std::process::id()));
    let c = FunctionCache::new(&dir);
    let hex = sha256_hex(b"bin");
    assert!(c.store(H1, b"bin").is_err());
    assert!(!c.path(H1).exists());
    let p = c.store(&format!("sha256:{hex}"), b"bin").unwrap();
    assert_eq!(p, dir.join("sha256").join(&hex));
    assert_eq!(std::fs::read(&p).unwrap(), b"bin");
    let env = |k: &str| match k {
        "XDG_CACHE_HOME" => Some("/x".to_string()),
        _ => None,
    };
    assert_eq!(
        FunctionCache::from_env(&env).unwrap().root,
        Path::new("/x/krmsync/functions")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tar_gz_downloads_yield_the_named_binary() {
    let mut tarball = Vec::new();
    {
        let gz = flate2::write::GzEncoder::new(&mut tarball, flate2::Compression::default());
        let mut b = tar::Builder::new(gz);
        for (name, data) in [("README", &b"readme"[..]), ("dir/fn", &b"#!/bin/sh\n"[..])] {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o755);
            h.set_cksum();
            b.append_data(&mut h, name, data).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap();
    }
    assert_eq!(
        fetch::extract(tarball.clone(), "fn", 1 << 20).unwrap(),
        b"#!/bin/sh\n"
    );
    let e = fetch::extract(tarball, "other", 1 << 20).unwrap_err();
    assert!(e.contains("no file named 'other'"), "{e}");
    assert_eq!(fetch::extract(b"raw".to_vec(), "fn", 10).unwrap(), b"raw");
}
