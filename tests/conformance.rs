//! Conformance against the kustomize 5.5 corpus in `../shared/conformance`.
//!
//! Every case is copied to a scratch directory and built with the real
//! `krmsync` binary using the case's own argument vector. Three levels are
//! reported, each as a `N passed, M failed` line:
//! * semantic: same documents, same order, compared as data;
//! * bytes: stdout identical to the oracle's, byte for byte;
//! * errors: cases that must fail exit non-zero with an empty stdout.
//!
//! Known failures live in `tests/conformance_known_failures.txt`
//! (`<case> <semantic|bytes|error> <reason>`). The test fails when a case
//! outside the list fails, and when a listed case passes (shrink the list).
//! Set `KRMSYNC_CONFORMANCE_DIR` to use another corpus directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use krmsync::kustomize::yaml::{Value, parse_documents};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Semantic,
    Bytes,
    Error,
}

impl Level {
    fn parse(s: &str) -> Option<Level> {
        match s {
            "semantic" => Some(Level::Semantic),
            "bytes" => Some(Level::Bytes),
            "error" => Some(Level::Error),
            _ => None,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Level::Semantic => "semantic",
            Level::Bytes => "bytes",
            Level::Error => "error",
        }
    }
}

struct Case {
    name: String,
    dir: PathBuf,
    argv: Vec<String>,
    expect_error: bool,
    empty_dirs: Vec<String>,
}

fn corpus_dir() -> PathBuf {
    match std::env::var_os("KRMSYNC_CONFORMANCE_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/cases"),
    }
}

fn load_case(dir: &Path) -> Result<Case, String> {
    let text = std::fs::read_to_string(dir.join("case.yaml")).map_err(|e| e.to_string())?;
    let doc = parse_documents(&text)
        .map_err(|e| e.to_string())?
        .into_iter()
        .next()
        .unwrap_or(Value::Null);
    let strings = |key: &str| -> Vec<String> {
        doc.get(key)
            .and_then(Value::as_seq)
            .map(|s| s.iter().filter_map(Value::scalar_to_string).collect())
            .unwrap_or_default()
    };
    Ok(Case {
        name: dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned(),
        dir: dir.to_path_buf(),
        argv: strings("argv"),
        expect_error: doc.str_at(&["expect"]) == Some("error"),
        empty_dirs: strings("empty_dirs"),
    })
}

fn copy_tree(src: &Path, dst: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dst)?;
    for e in std::fs::read_dir(src)? {
        let e = e?;
        let ty = e.file_type()?;
        let to = dst.join(e.file_name());
        if ty.is_dir() {
            copy_tree(&e.path(), &to)?;
        } else if ty.is_symlink() {
            let target = std::fs::read_link(e.path())?;
            std::os::unix::fs::symlink(target, &to)?;
        } else {
            std::fs::copy(e.path(), &to)?;
        }
    }
    Ok(())
}

fn docs(text: &str) -> Result<Vec<Value>, String> {
    Ok(parse_documents(text)
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|d| !d.is_null())
        .collect())
}

struct Outcome {
    semantic: bool,
    bytes: bool,
    error_ok: bool,
    detail: String,
}

fn run_case(case: &Case, scratch: &Path) -> Outcome {
    let work = scratch.join(&case.name);
    let _ = std::fs::remove_dir_all(&work);
    if let Err(e) = copy_tree(&case.dir, &work) {
        return Outcome {
            semantic: false,
            bytes: false,
            error_ok: false,
            detail: format!("copy failed: {e}"),
        };
    }
    for d in &case.empty_dirs {
        let _ = std::fs::create_dir_all(work.join(d));
    }
    let _ = std::fs::create_dir_all(work.join("input"));
    let home = scratch.join("home");
    let _ = std::fs::create_dir_all(&home);
    let out = Command::new(env!("CARGO_BIN_EXE_krmsync"))
        .args(&case.argv)
        .current_dir(work.join("input"))
        .env("HOME", &home)
        .env_remove("KUSTOMIZE_PLUGIN_HOME")
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            return Outcome {
                semantic: false,
                bytes: false,
                error_ok: false,
                detail: format!("spawn failed: {e}"),
            };
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let _ = std::fs::remove_dir_all(&work);
    if case.expect_error {
        let ok = !out.status.success() && out.stdout.is_empty();
        return Outcome {
            semantic: ok,
            bytes: ok,
            error_ok: ok,
            detail: if ok {
                String::new()
            } else {
                format!(
                    "expected an error; exit {:?}, stdout {} bytes",
                    out.status.code(),
                    stdout.len()
                )
            },
        };
    }
    if !out.status.success() {
        return Outcome {
            semantic: false,
            bytes: false,
            error_ok: true,
            detail: format!("build failed: {}", stderr.trim()),
        };
    }
    let expected = std::fs::read_to_string(case.dir.join("expected.yaml")).unwrap_or_default();
    let bytes = stdout == expected;
    let semantic = bytes
        || match (docs(&expected), docs(&stdout)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
    Outcome {
        semantic,
        bytes,
        error_ok: true,
        detail: if semantic {
            "output differs in formatting only".into()
        } else {
            "output differs".into()
        },
    }
}

fn known_failures() -> BTreeMap<(String, Level), String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance_known_failures.txt");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut parts = line.splitn(3, ' ');
        let (Some(name), Some(level)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Some(level) = Level::parse(level) else {
            panic!("bad level in known failures line: {line}");
        };
        out.insert(
            (name.to_string(), level),
            parts.next().unwrap_or("").to_string(),
        );
    }
    out
}

#[test]
fn kustomize_conformance() {
    let dir = corpus_dir();
    if !dir.is_dir() {
        println!(
            "conformance: NOT RUN: corpus directory {} does not exist (set KRMSYNC_CONFORMANCE_DIR or place shared/ beside the repository)",
            dir.display()
        );
        return;
    }
    let mut cases = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read corpus dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("case.yaml").is_file())
        .collect();
    entries.sort();
    for p in entries {
        cases.push(load_case(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())));
    }
    let filter = std::env::var("KRMSYNC_CONFORMANCE_FILTER").ok();
    if let Some(f) = &filter {
        cases.retain(|c| c.name.contains(f.as_str()));
    }
    let scratch = std::env::temp_dir().join(format!("krmsync-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch dir");

    let known = known_failures();
    let mut counts: BTreeMap<Level, (usize, usize)> = BTreeMap::new();
    let mut unexpected = Vec::new();
    let mut fixed = Vec::new();
    let verbose = std::env::var_os("KRMSYNC_CONFORMANCE_VERBOSE").is_some();
    for case in &cases {
        let o = run_case(case, &scratch);
        let mut results = vec![];
        if case.expect_error {
            results.push((Level::Error, o.error_ok));
        } else {
            results.push((Level::Semantic, o.semantic));
            results.push((Level::Bytes, o.bytes));
        }
        for (level, ok) in results {
            let c = counts.entry(level).or_default();
            if ok {
                c.0 += 1;
            } else {
                c.1 += 1;
            }
            let listed = known.contains_key(&(case.name.clone(), level));
            // A semantic failure implies a bytes failure: listing the
            // semantic level covers both.
            let covered = listed
                || (level == Level::Bytes
                    && known.contains_key(&(case.name.clone(), Level::Semantic)));
            if !ok && !covered {
                unexpected.push(format!("{} [{}]: {}", case.name, level.name(), o.detail));
            }
            if ok && listed {
                fixed.push(format!("{} [{}]", case.name, level.name()));
            }
            if verbose && !ok {
                println!("FAIL {} [{}]: {}", case.name, level.name(), o.detail);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    println!(
        "conformance corpus: {} ({} cases)",
        dir.display(),
        cases.len()
    );
    for level in [Level::Semantic, Level::Bytes, Level::Error] {
        let (p, f) = counts.get(&level).copied().unwrap_or_default();
        println!("{}: {p} passed, {f} failed", level.name());
    }
    if filter.is_none() {
        assert!(
            fixed.is_empty(),
            "these known failures now pass; remove them from tests/conformance_known_failures.txt:\n{}",
            fixed.join("\n")
        );
    }
    assert!(
        unexpected.is_empty(),
        "{} unexpected conformance failures (not in tests/conformance_known_failures.txt):\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
}
