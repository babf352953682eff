//! Runs the `kustomize localize` corpus (`../shared/conformance/localize`)
//! against `krmsync localize`.
//!
//! Remote fixtures are served locally: git trees become a repository in a
//! temporary directory (reached through `--mirror <repo>=file://...`), HTTP
//! bodies are answered by a wiremock server (also through `--mirror`). No
//! case needs the internet.
//!
//! Cases listed in `tests/localize_known_failures.txt` may fail; the test
//! fails on any other failure and on a listed case that now passes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use krmsync::kustomize::yaml::{Value, parse_documents};

/// `../shared/conformance/localize`, or `KRMSYNC_LOCALIZE_CORPUS`.
fn corpus_dir() -> PathBuf {
    match std::env::var_os("KRMSYNC_LOCALIZE_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/localize"),
    }
}

fn load_yaml(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    parse_documents(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .into_iter()
        .next()
        .unwrap_or(Value::Null)
}

fn strs(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_seq)
        .map(|s| {
            s.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Copies a tree keeping symbolic links.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let ft = e.file_type().unwrap();
        let (s, d) = (e.path(), to.join(e.file_name()));
        if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&s).unwrap(), &d).unwrap();
        } else if ft.is_dir() {
            copy_tree(&s, &d);
        } else {
            std::fs::copy(&s, &d).unwrap();
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Entry {
    Dir,
    File(Vec<u8>),
    Link(PathBuf),
}

/// Every entry under `root` (relative paths), symlinks not followed.
fn snapshot(root: &Path, skip: Option<&Path>) -> BTreeMap<PathBuf, Entry> {
    fn walk(root: &Path, dir: &Path, skip: Option<&Path>, out: &mut BTreeMap<PathBuf, Entry>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd {
            let e = e.unwrap();
            let p = e.path();
            if Some(p.as_path()) == skip {
                continue;
            }
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            let ft = e.file_type().unwrap();
            if ft.is_symlink() {
                out.insert(rel, Entry::Link(std::fs::read_link(&p).unwrap()));
            } else if ft.is_dir() {
                out.insert(rel, Entry::Dir);
                walk(root, &p, skip, out);
            } else {
                out.insert(rel, Entry::File(std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, skip, &mut out);
    out
}

fn diff_trees(want: &BTreeMap<PathBuf, Entry>, got: &BTreeMap<PathBuf, Entry>) -> Option<String> {
    let mut msgs = Vec::new();
    for (k, v) in want {
        match got.get(k) {
            None => msgs.push(format!("missing {}", k.display())),
            Some(g) if g != v => {
                let show = |e: &Entry| match e {
                    Entry::File(b) => format!("{:?}", String::from_utf8_lossy(b)),
                    other => format!("{other:?}"),
                };
                msgs.push(format!(
                    "differs {}:\n  want {}\n  got  {}",
                    k.display(),
                    show(v),
                    show(g)
                ))
            }
            _ => {}
        }
    }
    for k in got.keys() {
        if !want.contains_key(k) {
            msgs.push(format!("unexpected {}", k.display()));
        }
    }
    (!msgs.is_empty()).then(|| msgs.join("\n"))
}

/// Builds one repository per `repo` URL holding a tag or branch per entry.
fn make_repos(case: &Path, serve: &Value, dir: &Path) -> Vec<(String, String)> {
    let mut by_repo: BTreeMap<String, Vec<(String, String, String)>> = BTreeMap::new();
    for g in serve
        .get("git")
        .and_then(Value::as_seq)
        .into_iter()
        .flatten()
    {
        by_repo
            .entry(g.str_at(&["repo"]).unwrap().to_string())
            .or_default()
            .push((
                g.str_at(&["ref"]).unwrap().to_string(),
                g.str_at(&["tree"]).unwrap().to_string(),
                g.str_at(&["ref_kind"]).unwrap_or("branch").to_string(),
            ));
    }
    let mut mirrors = Vec::new();
    for (i, (url, refs)) in by_repo.iter().enumerate() {
        let path = dir.join(format!("repo{i}"));
        let repo = git2::Repository::init_bare(&path).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        for (r, tree_dir, kind) in refs {
            let tree = write_tree(&repo, &case.join(tree_dir));
            let tree = repo.find_tree(tree).unwrap();
            let commit = repo.commit(None, &sig, &sig, r, &tree, &[]).unwrap();
            let obj = repo.find_object(commit, None).unwrap();
            if kind == "tag" {
                repo.tag_lightweight(r, &obj, true).unwrap();
            } else {
                repo.reference(&format!("refs/heads/{r}"), commit, true, "branch")
                    .unwrap();
            }
        }
        mirrors.push((url.clone(), format!("file://{}", path.display())));
    }
    mirrors
}

fn write_tree(repo: &git2::Repository, dir: &Path) -> git2::Oid {
    let mut tb = repo.treebuilder(None).unwrap();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        let ft = e.file_type().unwrap();
        if ft.is_symlink() {
            let target = std::fs::read_link(e.path()).unwrap();
            let blob = repo.blob(target.to_string_lossy().as_bytes()).unwrap();
            tb.insert(&name, blob, 0o120000).unwrap();
        } else if ft.is_dir() {
            let t = write_tree(repo, &e.path());
            tb.insert(&name, t, 0o040000).unwrap();
        } else {
            let blob = repo.blob(&std::fs::read(e.path()).unwrap()).unwrap();
            tb.insert(&name, blob, 0o100644).unwrap();
        }
    }
    tb.write().unwrap()
}

struct Http {
    rt: tokio::runtime::Runtime,
    server: wiremock::MockServer,
}

fn serve_http(case: &Path, serve: &Value, http: &mut Option<Http>) -> Vec<(String, String)> {
    let entries: Vec<&Value> = serve
        .get("http")
        .and_then(Value::as_seq)
        .into_iter()
        .flatten()
        .collect();
    if entries.is_empty() {
        return Vec::new();
    }
    let h = http.get_or_insert_with(|| {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let server = rt.block_on(wiremock::MockServer::start());
        Http { rt, server }
    });
    h.rt.block_on(h.server.reset());
    let mut mirrors = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let url = e.str_at(&["url"]).unwrap();
        let status = e.get("status").and_then(Value::as_i64).unwrap_or(200) as u16;
        let body = e
            .str_at(&["body"])
            .map(|b| std::fs::read(case.join(b)).unwrap())
            .unwrap_or_default();
        let path = format!("/h{i}");
        h.rt.block_on(
            wiremock::Mock::given(wiremock::matchers::path(path.clone()))
                .respond_with(wiremock::ResponseTemplate::new(status).set_body_bytes(body))
                .mount(&h.server),
        );
        let (base, q) = match url.split_once('?') {
            Some((b, _)) => (b, "?"),
            None => (url, ""),
        };
        mirrors.push((format!("{base}{q}"), format!("{}{path}{q}", h.server.uri())));
    }
    mirrors
}

fn normalize_message(msg: &str, input: &Path, virtual_root: bool) -> String {
    let inp = input.display().to_string();
    if virtual_root {
        // `${INPUT}/a` -> `/a`, `${INPUT}` -> `/`
        msg.replace(&format!("{inp}/"), "/").replace(&inp, "/")
    } else {
        msg.replace(&inp, "${INPUT}")
    }
}

/// In-memory upstream cases hold absolute paths (`/a/b/pod2.yaml`, the
/// in-memory root being the case's `input/`): on disk they get the copy's
/// path in front. `listed` (paths relative to the case dir, or relative to
/// `input/`) limits the files; empty means every YAML file.
fn prefix_absolute_paths(input: &Path, case_root: &Path, listed: &[String]) {
    let files: Vec<PathBuf> = if listed.is_empty() {
        snapshot(input, None)
            .into_iter()
            .filter(|(_, e)| matches!(e, Entry::File(_)))
            .map(|(p, _)| input.join(p))
            .collect()
    } else {
        listed
            .iter()
            .map(|f| {
                let p = case_root.join(f);
                if p.exists() { p } else { input.join(f) }
            })
            .collect()
    };
    let prefix = input.display().to_string();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let out: Vec<String> = text
            .split('\n')
            .map(|line| {
                for sep in ["- /", ": /"] {
                    if let Some(i) = line.find(sep) {
                        let at = i + sep.len() - 1;
                        return format!("{}{prefix}{}", &line[..at], &line[at..]);
                    }
                }
                line.to_string()
            })
            .collect();
        let joined = out.join("\n");
        if joined != text {
            // the corpus files are read-only
            let mut perm = std::fs::metadata(&f).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perm.set_readonly(false);
            std::fs::set_permissions(&f, perm).unwrap();
            std::fs::write(&f, joined).unwrap();
        }
    }
}

/// Runs one case; `Err` describes the failure.
fn run_case(case: &Path, http: &mut Option<Http>) -> Result<(), String> {
    let meta = load_yaml(&case.join("case.yaml"));
    let work = tempfile::tempdir().unwrap();
    let w = std::fs::canonicalize(work.path()).unwrap();
    let input = w.join("input");
    if case.join("input").is_dir() {
        copy_tree(&case.join("input"), &input);
    } else {
        std::fs::create_dir_all(&input).unwrap();
    }
    // the corpus stores symlinks as small files naming their target
    if let Some(Value::Map(links)) = meta.get("symlinks") {
        for (link, target) in links {
            let p = w.join(link);
            let _ = std::fs::remove_file(&p);
            std::os::unix::fs::symlink(target.as_str().unwrap(), &p).unwrap();
        }
    }
    for d in strs(meta.get("empty_dirs")) {
        std::fs::create_dir_all(w.join(d)).unwrap();
    }
    if let Some(v) = meta.get("absolute_paths_in_files")
        && !matches!(v, Value::Bool(false) | Value::Null)
    {
        let listed = strs(Some(v));
        prefix_absolute_paths(&input, &w, &listed);
    }
    let before = snapshot(&input, None);
    let sub = |s: &str| s.replace("${INPUT}", &input.display().to_string());
    let argv: Vec<String> = strs(meta.get("argv")).iter().map(|a| sub(a)).collect();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_krmsync"));
    cmd.args(&argv)
        .current_dir(w.join(meta.str_at(&["cwd"]).unwrap_or("input")))
        .env("HOME", &w)
        .env_remove("KRMSYNC_LOCALIZE_MIRRORS");
    if let Some(serve) = meta.get_path(&["remote", "serve"]) {
        let repos = w.join(".repos");
        let mut mirrors = make_repos(case, serve, &repos);
        mirrors.extend(serve_http(case, serve, http));
        for (f, t) in mirrors {
            cmd.arg("--mirror").arg(format!("{f}={t}"));
        }
    }
    let out = cmd.output().map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let new_dir = w.join(meta.str_at(&["newDir_path"]).unwrap_or("input/dst"));
    let expect_error = meta.str_at(&["expect"]) == Some("error");

    for check in meta
        .get("stderr")
        .and_then(Value::as_seq)
        .into_iter()
        .flatten()
    {
        let text = sub(check.str_at(&["text"]).unwrap_or(""));
        let text = text.trim_end_matches('\n');
        let has = stderr.contains(text);
        match check.str_at(&["match"]) {
            Some("not-contains") if has => return Err(format!("stderr contains {text:?}")),
            Some("contains") if !has => {
                return Err(format!("stderr lacks {text:?}; stderr:\n{stderr}"));
            }
            _ => {}
        }
    }

    if expect_error {
        if out.status.success() {
            return Err("succeeded, expected an error".into());
        }
        let after = snapshot(&input, None);
        if let Some(d) = diff_trees(&before, &after) {
            return Err(format!("input tree changed after the failed run:\n{d}"));
        }
        let msg = stderr
            .lines()
            .filter_map(|l| l.strip_prefix("Error: ").map(|_| ()).map(|_| l))
            .next()
            .map(|_| {
                let i = stderr.find("Error: ").unwrap();
                stderr[i + 7..].trim_end().to_string()
            })
            .unwrap_or_default();
        let virtual_root = meta.get_path(&["error", "paths_in_message"]).is_some();
        let msg = normalize_message(&msg, &input, virtual_root);
        let want = std::fs::read_to_string(case.join("expected-error.txt")).unwrap_or_default();
        let want = want.trim_end();
        let ok = match meta.str_at(&["error", "match"]).unwrap_or("any") {
            "equals" => msg == want,
            "contains" => msg.contains(want),
            "contains-each-line" => want.lines().all(|l| msg.contains(l)),
            _ => true,
        };
        if !ok {
            return Err(format!("error message:\n  want {want:?}\n  got  {msg:?}"));
        }
        return Ok(());
    }

    if !out.status.success() {
        return Err(format!("failed: {stderr}"));
    }
    let mut want = snapshot(&case.join("expected"), None);
    for d in strs(meta.get("expected_empty_dirs")) {
        let rel = Path::new(&d)
            .strip_prefix("expected")
            .unwrap()
            .to_path_buf();
        want.insert(rel, Entry::Dir);
    }
    let got = snapshot(&new_dir, None);
    if let Some(d) = diff_trees(&want, &got) {
        return Err(format!("localized tree differs:\n{d}"));
    }
    if meta.get_path(&["compare", "rest_of_tree_unchanged"]) == Some(&Value::Bool(true)) {
        let after = snapshot(&input, Some(&new_dir));
        let mut before = before;
        if let Ok(rel) = new_dir.strip_prefix(&input) {
            before.remove(rel);
        }
        if let Some(d) = diff_trees(&before, &after) {
            return Err(format!("input tree changed:\n{d}"));
        }
    }
    Ok(())
}

#[test]
fn localize_conformance() {
    let dir = corpus_dir();
    if !dir.join("index.yaml").exists() {
        println!(
            "localize conformance: corpus {} absent, skipped",
            dir.display()
        );
        return;
    }
    let index = load_yaml(&dir.join("index.yaml"));
    let known_text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/localize_known_failures.txt"),
    )
    .unwrap_or_default();
    let known: BTreeSet<String> = known_text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    let only = std::env::var("LOCALIZE_CASE").ok();
    let mut http = None;
    let mut counts: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut unexpected = Vec::new();
    let mut fixed = Vec::new();
    let mut seen = BTreeSet::new();
    for c in index
        .get("cases")
        .and_then(Value::as_seq)
        .into_iter()
        .flatten()
    {
        let name = c.str_at(&["name"]).unwrap().to_string();
        if only.as_ref().is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        let class = if c.str_at(&["expect"]) == Some("error") {
            "error cases"
        } else {
            "success cases"
        };
        seen.insert(name.clone());
        let res = run_case(&dir.join(&name), &mut http);
        let e = counts.entry(class).or_default();
        match res {
            Ok(()) => {
                e.0 += 1;
                if known.contains(&name) {
                    fixed.push(name);
                }
            }
            Err(why) => {
                e.1 += 1;
                if !known.contains(&name) {
                    println!("FAIL {name}: {why}");
                    unexpected.push(name);
                } else {
                    println!("known failure {name}: {}", why.lines().next().unwrap_or(""));
                }
            }
        }
    }
    for (class, (p, f)) in &counts {
        println!("localize conformance: {p} passed, {f} failed ({class})");
    }
    assert!(unexpected.is_empty(), "unexpected failures: {unexpected:?}");
    assert!(
        fixed.is_empty(),
        "cases listed in tests/localize_known_failures.txt now pass (remove them): {fixed:?}"
    );
    if only.is_none() && std::env::var_os("KRMSYNC_LOCALIZE_CORPUS").is_none() {
        let stale: Vec<_> = known.difference(&seen).collect();
        assert!(
            stale.is_empty(),
            "known failures not in the corpus: {stale:?}"
        );
    }
}
