//! Conformance against the KRM function / exec plugin corpus in
//! `../shared/conformance/functions` (expected outputs from kustomize
//! 5.5's own Go tests).
//!
//! Each runnable case is copied to a scratch directory, its programs made
//! executable, and built with the real `krmsync` binary using the case's
//! argument vector (`KUSTOMIZE_PLUGIN_HOME` set to the case's
//! `plugin-home`). Cases needing docker, the network, helm, kubeval or a
//! Go plugin build are reported as not runnable, except error cases that
//! only need docker: kustomize fails those before any container starts. So
//! are the cases the corpus notes cannot be reproduced on disk (upstream
//! built them on an in-memory file system rooted at `/`) and those whose
//! plugin scripts check for a program (`command -v NAME`) that is not
//! installed here (the corpus does not list kubeval in every case's
//! `needs`): without it such a case passes or fails for the wrong reason.
//! Cases without an upstream expectation (`expect: unknown`) pass when the
//! build ends normally (output, or an error message); success cases whose
//! expected text was not recovered pass when the build succeeds.
//!
//! Known failures live in `tests/functions_known_failures.txt`
//! (`<case> <reason>`). The test fails when a case outside the list fails,
//! and when a listed case passes. Set `KRMSYNC_FUNCTIONS_DIR` to use
//! another corpus directory.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use krmsync::kustomize::yaml::{Value, parse_documents};

const UNAVAILABLE: &[&str] = &["docker", "network", "helm", "kubeval", "go-plugin-build"];

fn corpus_dir() -> PathBuf {
    match std::env::var_os("KRMSYNC_FUNCTIONS_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/functions"),
    }
}

struct Case {
    name: String,
    dir: PathBuf,
    doc: Value,
}

impl Case {
    fn strings(&self, key: &str) -> Vec<String> {
        self.doc
            .get(key)
            .and_then(Value::as_seq)
            .map(|s| s.iter().filter_map(Value::scalar_to_string).collect())
            .unwrap_or_default()
    }
    fn str(&self, path: &[&str]) -> &str {
        self.doc.str_at(path).unwrap_or("")
    }
    /// Why the case cannot run here, if it cannot.
    fn not_runnable(&self) -> Option<String> {
        if self.doc.get("runnable").and_then(Value::as_bool) == Some(false) {
            return Some("runnable: false".into());
        }
        let needs: Vec<String> = self
            .strings("needs")
            .into_iter()
            .filter(|n| UNAVAILABLE.contains(&n.as_str()))
            .collect();
        let docker_only_error =
            needs.iter().all(|n| n == "docker") && self.str(&["expect"]) == "error";
        if !needs.is_empty() && !docker_only_error {
            return Some(format!("needs {}", needs.join(", ")));
        }
        // cases the corpus itself says cannot be reproduced on disk
        // (upstream built them on an in-memory file system rooted at `/`)
        if let Some(note) = self
            .strings("notes")
            .into_iter()
            .find(|n| n.contains("on disk") && n.contains("reproduc"))
        {
            return Some(format!("not reproducible on disk (corpus note: {note})"));
        }
        // a program the case's plugins check for (`command -v NAME`) and
        // that is not installed here (the corpus does not always list it in
        // `needs`)
        if let Some(p) = required_programs(&self.dir)
            .into_iter()
            .find(|p| !on_path(p))
        {
            return Some(format!("its plugin needs `{p}`, which is not on PATH"));
        }
        None
    }
}

/// Programs the scripts under `dir` check for with `command -v NAME`.
fn required_programs(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            for (i, _) in text.match_indices("command -v ") {
                let name: String = text[i + "command -v ".len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                    .collect();
                if !name.is_empty() && !out.contains(&name) {
                    out.push(name);
                }
            }
        }
    }
    out
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(name).is_file()))
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
            std::os::unix::fs::symlink(std::fs::read_link(e.path())?, &to)?;
        } else {
            std::fs::copy(e.path(), &to)?;
        }
    }
    Ok(())
}

fn make_executable(p: &Path) {
    if let Ok(m) = std::fs::metadata(p) {
        let mut perm = m.permissions();
        perm.set_mode(perm.mode() | 0o755);
        let _ = std::fs::set_permissions(p, perm);
    }
}

fn chmod_tree(dir: &Path) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                chmod_tree(&p);
            } else {
                make_executable(&p);
            }
        }
    }
}

fn docs(text: &str) -> Result<Vec<Value>, String> {
    Ok(parse_documents(text)
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|d| !d.is_null())
        .collect())
}

/// For the single-plugin harness expectations: drop
/// `internal.config.kubernetes.io/*` annotations and generator name hashes.
fn normalize_harness(mut v: Value, strip_hash: bool) -> Value {
    let kind = v.str_at(&["kind"]).unwrap_or("").to_string();
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_map_mut) {
        if let Some(a) = meta.get_mut("annotations").and_then(Value::as_map_mut) {
            a.retain(|k, _| !k.starts_with("internal.config.kubernetes.io/"));
            if a.is_empty() {
                meta.shift_remove("annotations");
            }
        }
        if strip_hash
            && (kind == "ConfigMap" || kind == "Secret")
            && let Some(Value::String(n)) = meta.get_mut("name")
            && let Some((base, h)) = n.rsplit_once('-')
            && h.len() == 10
            && h.chars().all(|c| c.is_ascii_alphanumeric())
        {
            *n = base.to_string();
        }
    }
    v
}

/// `Ok(())` or why the case failed.
fn run_case(case: &Case, scratch: &Path) -> Result<(), String> {
    let work = scratch.join(&case.name);
    let _ = std::fs::remove_dir_all(&work);
    copy_tree(&case.dir, &work).map_err(|e| format!("copy failed: {e}"))?;
    for f in case.strings("executable") {
        make_executable(&work.join(f));
    }
    chmod_tree(&work.join("plugin-home"));
    let input = work.join("input");
    let _ = std::fs::create_dir_all(&input);
    let home = scratch.join("home");
    let _ = std::fs::create_dir_all(&home);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_krmsync"));
    cmd.args(case.strings("argv"))
        .current_dir(&input)
        .env("HOME", &home)
        .env_remove("KUSTOMIZE_PLUGIN_HOME")
        .env_remove("XDG_CONFIG_HOME");
    let plugin_home = case.str(&["env", "KUSTOMIZE_PLUGIN_HOME"]);
    let plugin_home_abs = work.join(plugin_home);
    if !plugin_home.is_empty() {
        cmd.env("KUSTOMIZE_PLUGIN_HOME", &plugin_home_abs);
    }
    let out = cmd.output().map_err(|e| format!("spawn failed: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let root = std::fs::canonicalize(work.join(case.str(&["root"])))
        .unwrap_or_else(|_| work.join(case.str(&["root"])));
    let result = check(case, &out.status, &stdout, &stderr, &root, &plugin_home_abs);
    let _ = std::fs::remove_dir_all(&work);
    result
}

fn check(
    case: &Case,
    status: &std::process::ExitStatus,
    stdout: &str,
    stderr: &str,
    root: &Path,
    plugin_home: &Path,
) -> Result<(), String> {
    match case.str(&["expect"]) {
        "error" => {
            if status.success() || !stdout.is_empty() {
                return Err(format!(
                    "expected an error; exit {:?}, stdout {} bytes",
                    status.code(),
                    stdout.len()
                ));
            }
            let want =
                std::fs::read_to_string(case.dir.join("expected-error.txt")).unwrap_or_default();
            let want = want.trim();
            let got = stderr.trim();
            let got = got.strip_prefix("Error: ").unwrap_or(got);
            let ok = match case.str(&["error", "match"]) {
                "equals" => got == want,
                "contains" => got.contains(want),
                _ => true,
            };
            if ok {
                Ok(())
            } else {
                Err(format!("error message differs: {got}"))
            }
        }
        // No expectation (docs examples): the build must end normally,
        // with output or with an error message, never a crash.
        "unknown" => match status.code() {
            Some(0) => Ok(()),
            Some(1) if stdout.is_empty() && stderr.starts_with("Error: ") => Ok(()),
            other => Err(format!("abnormal exit {other:?}: {}", stderr.trim())),
        },
        _ => {
            if !status.success() {
                return Err(format!("build failed: {}", stderr.trim()));
            }
            let file = match case.str(&["expected_file"]) {
                "" => "expected.yaml",
                f => f,
            };
            // A success case whose expected text was not recovered must
            // at least build.
            let Ok(mut expected) = std::fs::read_to_string(case.dir.join(file)) else {
                return Ok(());
            };
            if case.doc.get("expected_placeholders").is_some() {
                expected = expected
                    .replace("${ROOT}", &root.display().to_string())
                    .replace(
                        "${KUSTOMIZE_PLUGIN_HOME}",
                        &plugin_home.display().to_string(),
                    );
            }
            if stdout == expected {
                return Ok(());
            }
            let harness = file == "go-expected.yaml";
            let (a, b) = match (docs(&expected), docs(stdout)) {
                (Ok(a), Ok(b)) => (a, b),
                (Err(e), _) | (_, Err(e)) => return Err(format!("unparsable output: {e}")),
            };
            let (a, b): (Vec<Value>, Vec<Value>) = if harness {
                (
                    a.into_iter().map(|d| normalize_harness(d, false)).collect(),
                    b.into_iter().map(|d| normalize_harness(d, true)).collect(),
                )
            } else {
                (a, b)
            };
            if a == b {
                if harness {
                    Ok(())
                } else {
                    Err("output differs in formatting only".into())
                }
            } else {
                Err(format!("output differs:\n{stdout}"))
            }
        }
    }
}

fn known_failures() -> BTreeMap<String, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/functions_known_failures.txt");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once(char::is_whitespace) {
            Some((c, r)) => (c.to_string(), r.trim().to_string()),
            None => (l.to_string(), String::new()),
        })
        .collect()
}

#[test]
fn functions_conformance() {
    let corpus = corpus_dir();
    if !corpus.is_dir() {
        println!(
            "functions conformance: corpus {} not found; skipped",
            corpus.display()
        );
        return;
    }
    let mut cases = Vec::new();
    for e in std::fs::read_dir(&corpus).unwrap().flatten() {
        let dir = e.path();
        let Ok(text) = std::fs::read_to_string(dir.join("case.yaml")) else {
            continue;
        };
        let doc = parse_documents(&text)
            .ok()
            .and_then(|d| d.into_iter().next())
            .unwrap_or(Value::Null);
        cases.push(Case {
            name: e.file_name().to_string_lossy().into_owned(),
            dir,
            doc,
        });
    }
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    let scratch = tempfile::tempdir().unwrap();
    let known = known_failures();
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    let mut problems = Vec::new();
    for case in &cases {
        if let Some(why) = case.not_runnable() {
            skipped += 1;
            println!("not run: {} ({why})", case.name);
            continue;
        }
        match run_case(case, scratch.path()) {
            Ok(()) => {
                passed += 1;
                if known.contains_key(&case.name) {
                    problems.push(format!(
                        "{}: listed as a known failure but passes; remove it from the list",
                        case.name
                    ));
                }
            }
            Err(why) => {
                failed += 1;
                match known.get(&case.name) {
                    Some(reason) => println!("known failure: {} ({reason})", case.name),
                    None => problems.push(format!("{}: {why}", case.name)),
                }
            }
        }
    }
    println!("functions conformance: {passed} passed, {failed} failed ({skipped} not runnable)");
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}
