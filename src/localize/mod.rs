//! `krmsync localize`: a kustomize v5.5 `localize` re-implementation.
//!
//! Copies a kustomization and every local file it references (transitively)
//! into a new directory, downloads remote roots (git) and remote files
//! (HTTP(S)) into `localized-files/` next to the kustomization that
//! references them, and rewrites the references to relative local paths, so
//! that the copy builds without network access.

pub mod fetch;
pub mod url;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::kustomize::kustomization::{KUSTOMIZATION_FILE_NAMES, Kustomization};
use crate::kustomize::yaml::{self, Mapping, Value};
use crate::kustomize::{self, BuildOptions, ErrorKind};

use fetch::Fetcher;
use url::{Mirrors, RepoSpec, is_http_url, looks_remote, parse_repo_url, relative};

/// Where downloads go, next to the kustomization that references them.
pub const LOCALIZED_DIR: &str = "localized-files";

/// Largest exec binary localized from a catalog.
const MAX_BINARY_BYTES: usize = 512 << 20;

/// What to localize.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Local directory or remote root URL (default `.`).
    pub target: Option<String>,
    /// Destination (default `localized-...` in the working directory).
    pub new_dir: Option<String>,
    pub scope: Option<String>,
    pub no_verify: bool,
    pub mirrors: Mirrors,
    /// Show a progress line on stderr while downloading (the CLI: when
    /// stderr is a terminal and `--quiet` is not given).
    pub progress: bool,
    /// Platforms whose exec binaries, pinned by the catalogs the tree
    /// references, are downloaded (`--platform os/arch`, repeatable).
    pub platforms: Vec<crate::catalog::Platform>,
    /// The command git runs for SSH URLs (`None`: the user's
    /// `GIT_SSH_COMMAND`, `core.sshCommand` or `ssh -o BatchMode=yes`).
    pub ssh_command: Option<String>,
}

/// The Helm chart home kustomize uses when none is given.
const DEFAULT_CHART_HOME: &str = "charts";

/// A successful run: where the copy is and the log lines to print.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub new_dir: PathBuf,
    pub log: Vec<String>,
}

/// A failed run: the message and the log lines printed before it.
#[derive(Clone, Debug)]
pub struct Failure {
    pub message: String,
    pub log: Vec<String>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

type Res<T> = Result<T, String>;

fn cwd() -> Res<PathBuf> {
    std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))
}

fn abs_clean(p: &str) -> Res<PathBuf> {
    let base = cwd()?;
    Ok(kustomize::fs::join(&base, p))
}

/// Runs localize (and verification unless `no_verify`).
pub fn run(opts: &Options) -> Result<Outcome, Failure> {
    let fail = |m: String| Failure {
        message: m,
        log: Vec::new(),
    };
    let target = opts.target.clone().unwrap_or_else(|| ".".to_string());
    let fetcher = Fetcher::new(opts.mirrors.clone(), opts.progress)
        .map_err(fail)?
        .with_ssh_command(opts.ssh_command.clone());
    let remote = looks_remote(&target)
        .then(|| parse_repo_url(&target))
        .flatten();

    // arguments
    let (target_dir, scope_dir, default_dst, checkout) = if let Some(spec) = &remote {
        if let Some(s) = &opts.scope {
            return Err(fail(format!(
                "invalid localize scope \"{s}\": scope \"{s}\" specified for remote localize target \"{target}\""
            )));
        }
        if spec.git_ref.is_empty() {
            return Err(fail(format!(
                "localize remote root \"{target}\" missing ref query string parameter"
            )));
        }
        let repo = fetcher
            .checkout(&spec.clone_url, &spec.git_ref, spec.timeout_secs)
            .map_err(|e| {
                fail(format!(
                    "unable to establish localize target \"{target}\": {e}"
                ))
            })?;
        let repo = std::fs::canonicalize(&repo).map_err(|e| fail(e.to_string()))?;
        let t = std::fs::canonicalize(repo.join(&spec.path_in_repo)).map_err(|e| {
            fail(format!(
                "unable to establish localize target \"{target}\": path \"{}\" in repository: {e}",
                spec.path_in_repo
            ))
        })?;
        if !t.starts_with(&repo) {
            return Err(fail(format!(
                "unable to establish localize target \"{target}\": root outside its repository"
            )));
        }
        // named after the root's real directory, or the repository at its top
        let name = match t.file_name().filter(|_| t != repo) {
            Some(n) => format!(
                "localized-{}-{}",
                n.to_string_lossy(),
                spec.git_ref.replace('/', "-")
            ),
            None => spec.default_new_dir(),
        };
        (t, repo.clone(), name, Some(repo))
    } else {
        let abs = abs_clean(&target).map_err(fail)?;
        let t = std::fs::canonicalize(&abs).map_err(|e| {
            fail(format!(
                "unable to establish localize target \"{target}\": {e}"
            ))
        })?;
        if !t.is_dir() {
            return Err(fail(format!(
                "unable to establish localize target \"{target}\": file \"{}\" is not a directory",
                t.display()
            )));
        }
        let scope = match &opts.scope {
            None => t.clone(),
            Some(s) => {
                let sa = abs_clean(s).map_err(fail)?;
                let sr = std::fs::canonicalize(&sa).map_err(|e| {
                    fail(format!(
                        "invalid localize scope \"{s}\": unable to establish localize scope: {e}"
                    ))
                })?;
                if !t.starts_with(&sr) {
                    return Err(fail(format!(
                        "invalid localize scope \"{s}\": localize scope \"{s}\" does not contain target \"{target}\" at \"{}\"",
                        t.display()
                    )));
                }
                sr
            }
        };
        let name = t
            .file_name()
            .map(|n| format!("localized-{}", n.to_string_lossy()))
            .unwrap_or_else(|| "localized".to_string());
        (t, scope, name, None)
    };
    let dst_arg = opts.new_dir.clone().unwrap_or_else(|| {
        cwd()
            .map(|c| c.join(&default_dst).to_string_lossy().into_owned())
            .unwrap_or(default_dst)
    });
    let dst_path = Path::new(&dst_arg);
    // kustomize names the destination argument as given (empty by default)
    let raw_dst = opts.new_dir.as_deref().unwrap_or("");
    if std::fs::symlink_metadata(dst_path).is_ok() {
        return Err(fail(format!(
            "invalid localize destination \"{raw_dst}\": localize destination \"{dst_arg}\" already exists"
        )));
    }
    std::fs::create_dir(dst_path).map_err(|e| {
        let reason = match e.kind() {
            std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
            _ => e.to_string(),
        };
        fail(format!(
            "invalid localize destination \"{raw_dst}\": unable to create localize destination directory: mkdir {dst_arg}: {reason}"
        ))
    })?;
    let dst = match std::fs::canonicalize(dst_path) {
        Ok(d) => d,
        Err(e) => {
            let _ = std::fs::remove_dir_all(dst_path);
            return Err(fail(e.to_string()));
        }
    };

    let mut loc = Localizer {
        fetcher: &fetcher,
        dst_top: dst.clone(),
        done: HashSet::new(),
        stack: Vec::new(),
        platforms: opts.platforms.clone(),
        saw_catalogs: false,
        notes: Vec::new(),
    };
    let root = Root {
        dir: target_dir.clone(),
        scope: scope_dir.clone(),
        dst_scope: dst.clone(),
    };
    if let Err(e) = loc.kustomization(&root) {
        let _ = std::fs::remove_dir_all(&dst);
        return Err(fail(format!("unable to localize target \"{target}\": {e}")));
    }
    let dst_root = dst.join(relative(&target_dir, &scope_dir));
    drop(checkout);

    let mut log = std::mem::take(&mut loc.notes);
    if !opts.no_verify && loc.saw_catalogs {
        // building runs the catalogs' functions, which only the user may
        // decide to trust: say how instead of doing it
        log.push(format!(
            "NOTE: \"{target}\" uses function catalogs, so it was not built: review them \
             (krmsync catalog view) and build the copy with `krmsync build {} --trusted-catalog \
             <catalog>` to compare",
            dst_root.display()
        ));
    } else if !opts.no_verify {
        match verify(&target, &target_dir, remote.is_some(), &dst_root) {
            Ok(line) => log.push(line),
            Err(mut lines) => {
                let message = lines.pop().unwrap_or_default();
                let _ = std::fs::remove_dir_all(&dst);
                return Err(Failure {
                    message,
                    log: lines,
                });
            }
        }
    }
    log.push(format!(
        "SUCCESS: localized \"{target}\" to directory {}",
        dst.display()
    ));
    Ok(Outcome { new_dir: dst, log })
}

const FLAGS_HINT: &str = "If your target directory requires flags to build: \
1. Add executable permissions for the downloaded exec binaries in the localized directory that you trust. \
2. Run kustomize build with the necessary flags and self-verify the outputs.";

/// Builds the original (when it has no remote references) and the copy.
fn verify(
    target: &str,
    target_dir: &Path,
    remote: bool,
    copy: &Path,
) -> Result<String, Vec<String>> {
    let opts = BuildOptions::default();
    let built = kustomize::build_dir(copy, &opts).and_then(|r| r.to_yaml());
    let copy_out = match built {
        Ok(o) => o,
        Err(e) => {
            return Err(vec![
                FLAGS_HINT.to_string(),
                format!("unable to build localized target: {}", e.message),
            ]);
        }
    };
    if remote {
        return Ok(format!(
            "VERIFICATION SUCCESS: {} builds (remote target \"{target}\" is only built through its localized copy)",
            copy.display()
        ));
    }
    match kustomize::build_dir(target_dir, &opts).and_then(|r| r.to_yaml()) {
        Ok(orig) if orig == copy_out => Ok(format!(
            "VERIFICATION SUCCESS: \"{target}\" and \"{}\" build to the same output",
            copy.display()
        )),
        Ok(orig) => {
            let (a, b): (Vec<&str>, Vec<&str>) =
                (orig.lines().collect(), copy_out.lines().collect());
            let first = a
                .iter()
                .zip(&b)
                .position(|(x, y)| x != y)
                .unwrap_or(a.len().min(b.len()));
            Err(vec![format!(
                "VERIFICATION FAILED: \"{target}\" and \"{}\" build to different outputs ({} vs {} lines, first difference at line {}: {:?} vs {:?})",
                copy.display(),
                a.len(),
                b.len(),
                first + 1,
                a.get(first).copied().unwrap_or(""),
                b.get(first).copied().unwrap_or("")
            )])
        }
        Err(e) if e.kind == ErrorKind::RemoteReference => Ok(format!(
            "VERIFICATION SUCCESS: \"{}\" builds (\"{target}\" has remote references, only its localized copy was built)",
            copy.display()
        )),
        Err(e) => Err(vec![
            FLAGS_HINT.to_string(),
            format!("unable to build target \"{target}\": {}", e.message),
        ]),
    }
}

/// A kustomization root being localized.
#[derive(Clone, Debug)]
struct Root {
    /// Real path of the root.
    dir: PathBuf,
    /// Real path of the scope it may reference (a checkout for remote roots).
    scope: PathBuf,
    /// Where `scope` maps to in the destination.
    dst_scope: PathBuf,
}

impl Root {
    fn dst_of(&self, real: &Path) -> PathBuf {
        self.dst_scope.join(relative(real, &self.scope))
    }
}

struct Localizer<'a> {
    fetcher: &'a Fetcher,
    dst_top: PathBuf,
    done: HashSet<PathBuf>,
    stack: Vec<PathBuf>,
    platforms: Vec<crate::catalog::Platform>,
    /// Some kustomization lists `catalogs:` (a plain build cannot verify).
    saw_catalogs: bool,
    /// Warnings to print (downloaded binaries, binaries not found).
    notes: Vec<String>,
}

fn path_str(p: &Path) -> String {
    let s = p.to_string_lossy().into_owned();
    if s.is_empty() { ".".to_string() } else { s }
}

fn write_file(path: &Path, data: &[u8]) -> Res<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("creating {}: {e}", parent.display()))?;
    }
    std::fs::write(path, data).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// Copies a directory tree, skipping symbolic links.
fn copy_tree(from: &Path, to: &Path) -> Res<()> {
    std::fs::create_dir_all(to).map_err(|e| format!("creating {}: {e}", to.display()))?;
    let entries =
        std::fs::read_dir(from).map_err(|e| format!("reading {}: {e}", from.display()))?;
    for e in entries {
        let e = e.map_err(|e| e.to_string())?;
        let ft = e.file_type().map_err(|e| e.to_string())?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if ft.is_symlink() {
            continue;
        } else if ft.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).map_err(|e| format!("copying {}: {e}", src.display()))?;
        }
    }
    Ok(())
}

/// Parses YAML documents and checks each is an object with a kind and a
/// name (kustomize's resource check); returns the documents.
fn parse_resources(text: &str) -> Res<Vec<Value>> {
    let docs = yaml::parse_documents(text).map_err(|e| e.to_string())?;
    let docs: Vec<Value> = docs.into_iter().filter(|d| !d.is_null()).collect();
    if docs.is_empty() {
        return Err("missing Resource metadata".into());
    }
    // `kind: List` (and any `*List` with `items`) stands for its items
    let mut expanded = Vec::new();
    for d in &docs {
        let kind = d.str_at(&["kind"]).unwrap_or("");
        match d.get("items") {
            Some(Value::Seq(items)) if kind.ends_with("List") => expanded.extend(items.iter()),
            _ => expanded.push(d),
        }
    }
    for d in expanded {
        let Some(m) = d.as_map() else {
            return Err("missing Resource metadata".into());
        };
        let api = m.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = m.get("kind").and_then(Value::as_str).unwrap_or("");
        let name = d.str_at(&["metadata", "name"]).unwrap_or("");
        let ns = d.str_at(&["metadata", "namespace"]).unwrap_or("");
        let obj = format!("{{{{{api} {kind}}} {{{{{name} {ns}}} map[] map[]}}}}");
        if kind.is_empty() {
            return Err(format!("missing kind in object {obj}"));
        }
        if name.is_empty() {
            return Err(format!("missing metadata.name in object {obj}"));
        }
    }
    Ok(docs)
}

/// Replaces each changed path where it is a whole scalar on its line
/// (`key: old`, `- old`, `- key: old`, optionally quoted); `None` when
/// some path is not found that way.
fn replace_scalars(text: &str, changes: &[(String, String)]) -> Option<String> {
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    for (old, new) in changes {
        let mut found = false;
        for line in lines.iter_mut() {
            let trimmed = line.trim_end();
            for q in ["", "'", "\""] {
                let quoted = format!("{q}{old}{q}");
                if let Some(head) = trimmed.strip_suffix(&quoted)
                    && (head.ends_with(": ") || head.trim_start() == "-" || head.ends_with("- "))
                {
                    *line = format!("{head}{q}{new}{q}");
                    found = true;
                    break;
                }
            }
        }
        if !found {
            return None;
        }
    }
    Some(lines.join("\n"))
}

fn docs_text(docs: &[Value]) -> Res<String> {
    let mut out = String::new();
    for (i, d) in docs.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        yaml::write_document(&mut out, d).map_err(|e| e.0)?;
    }
    Ok(out)
}

fn res_id(d: &Value) -> String {
    let api = d.str_at(&["apiVersion"]).unwrap_or("");
    let (group, version) = api.rsplit_once('/').unwrap_or(("", api));
    let or = |s: &str, d: &str| {
        if s.is_empty() {
            d.to_string()
        } else {
            s.to_string()
        }
    };
    format!(
        "{}.{}.{}/{}.{}",
        d.str_at(&["kind"]).unwrap_or(""),
        version,
        or(group, "[noGrp]"),
        d.str_at(&["metadata", "name"]).unwrap_or(""),
        or(d.str_at(&["metadata", "namespace"]).unwrap_or(""), "[noNs]")
    )
}

/// Keeps only non-empty fields (Go `omitempty`).
fn is_empty_value(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Seq(s) => s.is_empty(),
        Value::Map(m) => m.is_empty(),
        Value::Bool(b) => !b,
        _ => false,
    }
}

const STRUCT_LISTS: &[&str] = &[
    "patches",
    "patchesJson6902",
    "configMapGenerator",
    "secretGenerator",
    "helmCharts",
    "helmChartInflationGenerator",
    "images",
    "imageTags",
    "replicas",
    "replacements",
    "vars",
    "labels",
];

/// Go decodes scalars given for string fields as their text: `namePrefix: 1`
/// is written back as `namePrefix: "1"`.
fn stringify(v: &mut Value) {
    if !matches!(v, Value::String(_) | Value::Map(_) | Value::Seq(_))
        && let Some(s) = v.scalar_to_string()
    {
        *v = Value::String(s);
    }
}

fn stringify_typed_fields(m: &mut Mapping) {
    for key in ["namePrefix", "nameSuffix", "namespace"] {
        if let Some(v) = m.get_mut(key) {
            stringify(v);
        }
    }
    for key in ["commonLabels", "commonAnnotations"] {
        if let Some(Value::Map(mm)) = m.get_mut(key) {
            mm.values_mut().for_each(stringify);
        }
    }
    if let Some(Value::Seq(items)) = m.get_mut("images") {
        for it in items.iter_mut().filter_map(Value::as_map_mut) {
            for key in ["name", "newName", "newTag", "digest"] {
                if let Some(v) = it.get_mut(key) {
                    stringify(v);
                }
            }
        }
    }
    if let Some(Value::Seq(items)) = m.get_mut("labels") {
        for it in items.iter_mut() {
            if let Some(Value::Map(pairs)) = it.get_mut("pairs") {
                pairs.values_mut().for_each(stringify);
            }
        }
    }
}

fn prune(m: &mut Mapping) {
    stringify_typed_fields(m);
    for key in STRUCT_LISTS {
        if let Some(Value::Seq(items)) = m.get_mut(*key) {
            for it in items.iter_mut() {
                if let Value::Map(im) = it {
                    im.retain(|_, v| !is_empty_value(v));
                }
            }
        }
    }
    m.retain(|_, v| !is_empty_value(v));
}

impl Localizer<'_> {
    fn check_dst(&self, real: &Path, what: &str) -> Res<()> {
        if real.starts_with(&self.dst_top) {
            let verb = if what == "root" {
                "references into"
            } else {
                "enters"
            };
            return Err(format!(
                "{what} \"{}\" {verb} localize destination \"{}\"",
                real.display(),
                self.dst_top.display()
            ));
        }
        Ok(())
    }

    /// Localizes one kustomization root (writes its kustomization file and
    /// everything it references).
    fn kustomization(&mut self, root: &Root) -> Res<()> {
        let key = root.dst_of(&root.dir);
        if let Some(visited) = self.stack.iter().find(|v| v.starts_with(&root.dir)) {
            return Err(format!(
                "cycle detected: candidate root '{}' contains visited root '{}'",
                root.dir.display(),
                visited.display()
            ));
        }
        if !self.done.insert(key.clone()) {
            return Ok(());
        }
        self.stack.push(root.dir.clone());
        let r = self.kustomization_inner(root, &key);
        self.stack.pop();
        r
    }

    fn kustomization_inner(&mut self, root: &Root, dst_dir: &Path) -> Res<()> {
        let Some(name) = KUSTOMIZATION_FILE_NAMES
            .iter()
            .find(|n| root.dir.join(n).is_file())
        else {
            return Err(format!(
                "unable to find one of 'kustomization.yaml', 'kustomization.yml' or 'Kustomization' in directory '{}'",
                root.dir.display()
            ));
        };
        let file = root.dir.join(name);
        let text = std::fs::read_to_string(&file)
            .map_err(|e| format!("reading {}: {e}", file.display()))?;
        let docs =
            yaml::parse_documents(&text).map_err(|e| format!("invalid Kustomization: {e}"))?;
        let mut doc = docs.into_iter().next().unwrap_or(Value::Null);
        // localize keeps a kind it does not know (`NotChecked`) as written
        let mut checked = doc.clone();
        if let Value::Map(m) = &mut checked
            && !matches!(
                m.get("kind").and_then(Value::as_str),
                None | Some("Kustomization" | "Component")
            )
        {
            m.shift_remove("kind");
            m.shift_remove("apiVersion");
            if m.is_empty() {
                m.insert("kind".into(), Value::from("Kustomization"));
            }
        }
        Kustomization::decode(&checked, &file.to_string_lossy()).map_err(|e| {
            let prefix = format!("invalid Kustomization in '{}': ", file.display());
            match e.message.strip_prefix(&prefix) {
                Some(rest) => format!("invalid Kustomization: {rest}"),
                None => e.message,
            }
        })?;
        std::fs::create_dir_all(dst_dir)
            .map_err(|e| format!("creating {}: {e}", dst_dir.display()))?;
        if let Value::Map(m) = &mut doc {
            self.fields(root, m)?;
            prune(m);
        }
        let mut out = String::new();
        if !matches!(&doc, Value::Map(m) if m.is_empty()) {
            yaml::write_document(&mut out, &doc).map_err(|e| e.0)?;
        } else {
            out.push_str("{}\n");
        }
        write_file(&dst_dir.join(name), out.as_bytes())
    }

    fn fields(&mut self, root: &Root, m: &mut Mapping) -> Res<()> {
        // fetch the remote roots of this kustomization in parallel
        let mut remote = Vec::new();
        for key in ["resources", "bases", "components"] {
            for v in m.get(key).and_then(Value::as_seq).into_iter().flatten() {
                if let Some(spec) = v
                    .as_str()
                    .filter(|s| looks_remote(s))
                    .and_then(parse_repo_url)
                    && !spec.git_ref.is_empty()
                {
                    let k = (spec.clone_url, spec.git_ref, spec.timeout_secs);
                    if !remote.contains(&k) {
                        remote.push(k);
                    }
                }
            }
        }
        let mut files: Vec<String> = Vec::new();
        for key in ["resources", "crds", "configurations"] {
            for v in m.get(key).and_then(Value::as_seq).into_iter().flatten() {
                if let Some(u) = v.as_str().filter(|s| is_http_url(s))
                    && !files.iter().any(|f| f == u)
                {
                    files.push(u.to_string());
                }
            }
        }
        std::thread::scope(|s| {
            s.spawn(|| self.fetcher.prefetch_files(&files));
            self.fetcher.prefetch(&remote);
        });
        if let Some(Value::String(s)) = m.get_mut("openapi").and_then(|o| o.get_mut("path")) {
            *s = self
                .file(root, s)
                .map_err(|e| format!("unable to localize openapi path: {e}"))?;
        }
        for key in ["bases", "components", "configurations", "crds", "resources"] {
            if let Some(Value::Seq(items)) = m.get_mut(key) {
                for it in items.iter_mut() {
                    if let Value::String(s) = it {
                        let r = match key {
                            "resources" => self.resource(root, s),
                            "bases" | "components" => self.dir(root, s),
                            _ => self.file(root, s),
                        };
                        *s = r.map_err(|e| format!("unable to localize {key} entry: {e}"))?;
                    }
                }
            }
        }
        for key in ["configMapGenerator", "secretGenerator"] {
            if let Some(Value::Seq(items)) = m.get_mut(key) {
                for it in items.iter_mut() {
                    self.generator_args(root, it)
                        .map_err(|e| format!("unable to localize {key}: {e}"))?;
                }
            }
        }
        if let Some(Value::Seq(items)) = m.get_mut("helmChartInflationGenerator") {
            for (i, it) in items.iter_mut().enumerate() {
                if let Some(Value::String(s)) = it.get_mut("values") {
                    *s = self.file(root, s).map_err(|e| {
                        format!(
                            "unable to localize helmChartInflationGenerator entry {i} values: {e}"
                        )
                    })?;
                }
                let entry = it.str_at(&["chartHome"]).unwrap_or("").to_string();
                let home = self.chart_home_entry(root, &entry).map_err(|e| {
                    format!("unable to copy helmChartInflationGenerator entry {i}: {e}")
                })?;
                if let Some(Value::String(s)) = it.get_mut("chartHome") {
                    *s = home;
                }
            }
        }
        if let Some(Value::Seq(items)) = m.get_mut("helmCharts") {
            for (i, it) in items.iter_mut().enumerate() {
                if let Some(Value::String(s)) = it.get_mut("valuesFile") {
                    *s = self.file(root, s).map_err(|e| {
                        format!("unable to localize helmCharts entry {i} valuesFile: {e}")
                    })?;
                }
                if let Some(Value::Seq(v)) = it.get_mut("additionalValuesFiles") {
                    for f in v.iter_mut() {
                        if let Value::String(s) = f {
                            *s = self.file(root, s).map_err(|e| {
                                format!("unable to localize helmCharts entry {i} additionalValuesFiles: {e}")
                            })?;
                        }
                    }
                }
            }
        }
        let has_charts = m
            .get("helmCharts")
            .and_then(Value::as_seq)
            .is_some_and(|s| !s.is_empty());
        match m.get_mut("helmGlobals") {
            Some(g @ Value::Map(_)) => {
                let entry = g.str_at(&["chartHome"]).unwrap_or("").to_string();
                let home = self
                    .chart_home_entry(root, &entry)
                    .map_err(|e| format!("unable to copy helmGlobals: {e}"))?;
                if let Some(Value::String(s)) = g.get_mut("chartHome") {
                    *s = home;
                }
            }
            _ if has_charts => {
                self.chart_home_entry(root, "")
                    .map_err(|e| format!("unable to copy default chart home: {e}"))?;
            }
            _ => {}
        }
        for (key, ctx) in [
            ("patches", "unable to localize patches"),
            ("patchesJson6902", "unable to localize patchesJson6902"),
            ("replacements", "unable to localize replacements entry"),
        ] {
            if let Some(Value::Seq(items)) = m.get_mut(key) {
                for it in items.iter_mut() {
                    if let Some(Value::String(s)) = it.get_mut("path") {
                        *s = self.file(root, s).map_err(|e| format!("{ctx}: {e}"))?;
                    }
                }
            }
        }
        if let Some(Value::Seq(items)) = m.get_mut("patchesStrategicMerge") {
            for it in items.iter_mut() {
                if let Value::String(s) = it
                    && !s.is_empty()
                    && parse_resources(s).is_err()
                {
                    *s = self.k8s_file(root, s).map_err(|e| {
                        format!("unable to localize patchesStrategicMerge entry: {e}")
                    })?;
                }
            }
        }
        for key in ["generators", "transformers", "validators"] {
            if let Some(Value::Seq(items)) = m.get_mut(key) {
                for it in items.iter_mut() {
                    if let Value::String(s) = it {
                        *s = self.plugin_entry(root, key, s)?;
                    }
                }
            }
        }
        if let Some(Value::Seq(items)) = m.get_mut("catalogs") {
            for it in items.iter_mut() {
                if let Value::String(s) = it {
                    *s = self
                        .catalog(root, s)
                        .map_err(|e| format!("unable to localize catalogs entry \"{s}\": {e}"))?;
                }
            }
        }
        Ok(())
    }

    /// A `catalogs:` entry (KEP-2906): the catalog file, copied or
    /// downloaded; the binaries its exec runtimes name by relative `uri`,
    /// copied when present; with `--platform`, the remote binaries of those
    /// platforms, downloaded, verified against their sha256, stored without
    /// the execute bit in `localized-files/` beside the catalog, and the
    /// catalog's `uri`s rewritten to them.
    fn catalog(&mut self, root: &Root, p: &str) -> Res<String> {
        self.saw_catalogs = true;
        let (body, src_dir, dst_file, entry) = if is_http_url(p) {
            if root.dir.join(LOCALIZED_DIR).exists() {
                return Err(format!(
                    "{} already contains {LOCALIZED_DIR} needed to store file \"{p}\"",
                    root.dir.display()
                ));
            }
            let body = self.fetcher.download(p)?;
            let rel = url::loc_file_path(p);
            (
                body,
                None,
                root.dst_of(&root.dir).join(&rel),
                path_str(&rel),
            )
        } else {
            let real = self.local_file(root, p)?;
            let body =
                std::fs::read(&real).map_err(|e| format!("reading {}: {e}", real.display()))?;
            let entry = path_str(&relative(&real, &root.dir));
            let dir = real.parent().map(Path::to_path_buf);
            (body, dir, root.dst_of(&real), entry)
        };
        let doc = crate::catalog::parse(&body, Path::new(p))?;
        let dst_dir = dst_file.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut changes: Vec<(String, String)> = Vec::new();
        for f in &doc.spec.krm_functions {
            for v in &f.versions {
                for bp in v.runtime.exec.iter().flat_map(|e| e.platforms.iter()) {
                    let what = format!(
                        "{}/{} {} {}/{}",
                        f.group, v.name, f.names.kind, bp.os, bp.arch
                    );
                    if is_http_url(&bp.uri) {
                        if !self.platforms.iter().any(|pl| pl.matches(bp))
                            || changes.iter().any(|(u, _)| u == &bp.uri)
                        {
                            continue;
                        }
                        let rel = self.catalog_binary(src_dir.as_deref(), &dst_dir, bp, &what)?;
                        changes.push((bp.uri.clone(), rel));
                    } else if !bp.uri.is_empty() && !bp.uri.contains("://") {
                        match &src_dir {
                            Some(dir) => self.local_catalog_binary(root, dir, bp, &what)?,
                            None => self.notes.push(format!(
                                "Warning: {what}: uri '{}' is relative to the remote catalog \
                                 \"{p}\" and was not localized",
                                bp.uri
                            )),
                        }
                    }
                }
            }
        }
        let text = String::from_utf8(body).map_err(|_| "the catalog is not UTF-8".to_string())?;
        let text = if changes.is_empty() {
            text
        } else {
            replace_scalars(&text, &changes).ok_or_else(|| {
                "cannot rewrite the catalog's uri fields in place (write each `uri:` on its own \
                 line)"
                    .to_string()
            })?
        };
        write_file(&dst_file, text.as_bytes())?;
        Ok(entry)
    }

    /// Downloads, verifies and stores one pinned binary beside the
    /// catalog copy; returns its path relative to the catalog.
    fn catalog_binary(
        &mut self,
        src_dir: Option<&Path>,
        dst_dir: &Path,
        bp: &crate::catalog::ExecPlatform,
        what: &str,
    ) -> Res<String> {
        if let Some(d) = src_dir
            && d.join(LOCALIZED_DIR).exists()
        {
            return Err(format!(
                "{} already contains {LOCALIZED_DIR} needed to store the binary \"{}\"",
                d.display(),
                bp.uri
            ));
        }
        let data = self.fetcher.download(&bp.uri)?;
        let bin = crate::catalog::fetch::extract(data, &bp.bin, MAX_BINARY_BYTES)
            .map_err(|e| format!("{what}: {}: {e}", bp.uri))?;
        let pin = crate::catalog::cache::pin_hex(bp.sha256.as_deref().unwrap_or(""));
        let actual = crate::source::sha256_hex(&bin);
        if actual != pin {
            return Err(format!(
                "{what}: {} is sha256:{actual}, the catalog pins sha256:{pin}",
                bp.uri
            ));
        }
        let rel = url::loc_file_path(&bp.uri);
        let to = dst_dir.join(&rel);
        write_file(&to, &bin)?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o644))
            .map_err(|e| format!("{}: {e}", to.display()))?;
        self.notes.push(format!(
            "Warning: downloaded the exec binary of {what} (sha256:{pin}) to {}; it is not \
             executable: krmsync runs it only after checking its sha256 against a trusted \
             catalog (kustomize would need `chmod +x` on a binary you trust)",
            to.display()
        ));
        Ok(path_str(&rel))
    }

    /// Copies a binary a catalog names by a relative `uri`, when present.
    fn local_catalog_binary(
        &mut self,
        root: &Root,
        catalog_dir: &Path,
        bp: &crate::catalog::ExecPlatform,
        what: &str,
    ) -> Res<()> {
        let abs = kustomize::fs::join(catalog_dir, &bp.uri);
        let Ok(real) = std::fs::canonicalize(&abs) else {
            self.notes.push(format!(
                "Warning: {what}: binary {} is not there and was not copied",
                abs.display()
            ));
            return Ok(());
        };
        if !real.starts_with(&root.scope) {
            return Err(format!(
                "{what}: binary '{}' is not in or below '{}'",
                real.display(),
                root.scope.display()
            ));
        }
        self.check_dst(&real, "file")?;
        let to = root.dst_of(&real);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("creating {}: {e}", parent.display()))?;
        }
        std::fs::copy(&real, &to).map_err(|e| format!("copying {}: {e}", real.display()))?;
        Ok(())
    }

    fn generator_args(&mut self, root: &Root, it: &mut Value) -> Res<()> {
        if let Some(Value::String(s)) = it.get_mut("env") {
            *s = self
                .file(root, s)
                .map_err(|e| format!("unable to localize generator env file: {e}"))?;
        }
        if let Some(Value::Seq(v)) = it.get_mut("envs") {
            for f in v.iter_mut() {
                if let Value::String(s) = f {
                    *s = self
                        .file(root, s)
                        .map_err(|e| format!("unable to localize generator envs file: {e}"))?;
                }
            }
        }
        if let Some(Value::Seq(v)) = it.get_mut("files") {
            for f in v.iter_mut() {
                if let Value::String(s) = f {
                    *s = self
                        .file_source(root, s)
                        .map_err(|e| format!("invalid file source {s:?}: {e}"))?;
                }
            }
        }
        Ok(())
    }

    /// A `files` entry: `path` or `key=path`.
    fn file_source(&mut self, root: &Root, s: &str) -> Res<String> {
        match s.matches('=').count() {
            0 => self.file(root, s),
            1 => match s.split_once('=') {
                Some(("", p)) => Err(format!("key name for file path {p} missing")),
                Some((k, "")) => Err(format!("file path for key name {k} missing")),
                Some((k, p)) => Ok(format!("{k}={}", self.file(root, p)?)),
                None => unreachable!("one '=' was counted"),
            },
            _ => Err("key names or file paths cannot contain '='".to_string()),
        }
    }

    /// A `resources`/`bases` entry: a file, else a root.
    fn resource(&mut self, root: &Root, p: &str) -> Res<String> {
        if p.is_empty() {
            return Ok(String::new());
        }
        let remote_root = looks_remote(p) && parse_repo_url(p).is_some();
        if remote_root && !is_http_url(p) {
            return self.dir(root, p);
        }
        let fe = match self.resource_file(root, p) {
            Ok(s) => return Ok(s),
            Err(e) => e,
        };
        match self.dir(root, p) {
            Ok(s) => Ok(s),
            Err(de) => Err(format!(
                "could not localize path \"{p}\" as file: {fe}; could not localize path \"{p}\" as directory: {de}"
            )),
        }
    }

    fn resource_file(&mut self, root: &Root, p: &str) -> Res<String> {
        let body = if is_http_url(p) {
            self.fetcher.download(p)?
        } else {
            let real = self.local_file(root, p)?;
            std::fs::read(&real).map_err(|e| format!("reading {}: {e}", real.display()))?
        };
        let text = String::from_utf8_lossy(&body);
        let empty = yaml::parse_documents(&text).is_ok_and(|d| d.iter().all(Value::is_null));
        if !empty {
            parse_resources(&text).map_err(|e| format!("invalid resource at file \"{p}\": {e}"))?;
        }
        if is_http_url(p) {
            return self.store_remote_file(root, p, &body);
        }
        self.file(root, p)
    }

    fn store_remote_file(&mut self, root: &Root, url: &str, body: &[u8]) -> Res<String> {
        if root.dir.join(LOCALIZED_DIR).exists() {
            return Err(format!(
                "{} already contains {LOCALIZED_DIR} needed to store file \"{url}\"",
                root.dir.display()
            ));
        }
        let rel = url::loc_file_path(url);
        write_file(&root.dst_of(&root.dir).join(&rel), body)?;
        Ok(path_str(&rel))
    }

    /// Resolves a local file reference under the root-only restrictor.
    fn local_file(&self, root: &Root, p: &str) -> Res<PathBuf> {
        let abs = kustomize::fs::join(&root.dir, p);
        let real = match std::fs::canonicalize(&abs) {
            Ok(r) => r,
            Err(_) => {
                return Err(format!(
                    "invalid file reference: '{}' doesn't exist",
                    abs.display()
                ));
            }
        };
        if real.is_dir() {
            return Err(format!(
                "invalid file reference: '{}' must resolve to a file",
                abs.display()
            ));
        }
        if !real.starts_with(&root.dir) {
            return Err(format!(
                "security; file '{}' is not in or below '{}'",
                real.display(),
                root.dir.display()
            ));
        }
        self.check_dst(&real, "file")?;
        Ok(real)
    }

    /// A file reference: copied (local) or downloaded (URL).
    fn file(&mut self, root: &Root, p: &str) -> Res<String> {
        if p.is_empty() {
            return Ok(String::new());
        }
        if is_http_url(p) {
            let body = self.fetcher.download(p)?;
            return self.store_remote_file(root, p, &body);
        }
        let real = self.local_file(root, p)?;
        let to = root.dst_of(&real);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("creating {}: {e}", parent.display()))?;
        }
        std::fs::copy(&real, &to).map_err(|e| format!("copying {}: {e}", real.display()))?;
        Ok(path_str(&relative(&real, &root.dir)))
    }

    /// A root reference (local directory or remote root URL).
    fn dir(&mut self, root: &Root, p: &str) -> Res<String> {
        if p.is_empty() {
            return Ok(String::new());
        }
        self.dir_inner(root, p)
            .map_err(|e| format!("unable to localize root \"{p}\": {e}"))
    }

    fn dir_inner(&mut self, root: &Root, p: &str) -> Res<String> {
        if looks_remote(p)
            && let Some(spec) = parse_repo_url(p)
        {
            return self.remote_dir(root, &spec);
        }
        let abs = kustomize::fs::join(&root.dir, p);
        let real = std::fs::canonicalize(&abs).map_err(|e| {
            format!(
                "invalid root reference: evalsymlink failure on '{}' : {e}",
                abs.display()
            )
        })?;
        if !real.is_dir() {
            return Err(format!(
                "invalid root reference: '{}' must be a directory",
                abs.display()
            ));
        }
        if !real.starts_with(&root.scope) {
            return Err(format!(
                "root \"{}\" outside localize scope \"{}\"",
                real.display(),
                root.scope.display()
            ));
        }
        self.check_dst(&real, "root")?;
        let child = Root {
            dir: real.clone(),
            ..root.clone()
        };
        self.kustomization(&child)?;
        Ok(path_str(&relative(&real, &root.dir)))
    }

    fn remote_dir(&mut self, root: &Root, spec: &RepoSpec) -> Res<String> {
        if spec.git_ref.is_empty() {
            return Err(format!(
                "localize remote root \"{}\" missing ref query string parameter",
                spec.raw
            ));
        }
        let repo = self
            .fetcher
            .checkout(&spec.clone_url, &spec.git_ref, spec.timeout_secs)?;
        let repo = std::fs::canonicalize(&repo).map_err(|e| e.to_string())?;
        let abs = kustomize::fs::join(&repo, &spec.path_in_repo);
        let real = std::fs::canonicalize(&abs)
            .map_err(|e| format!("path \"{}\" in repository: {e}", spec.path_in_repo))?;
        if !real.starts_with(&repo) || !real.is_dir() {
            return Err(format!(
                "path \"{}\" is not a directory in the repository",
                spec.path_in_repo
            ));
        }
        if root.dir.join(LOCALIZED_DIR).exists() {
            return Err(format!(
                "{} already contains {LOCALIZED_DIR} needed to store root \"{}\"",
                root.dir.display(),
                spec.raw
            ));
        }
        let loc = spec.loc_repo_dir();
        let child = Root {
            dir: real.clone(),
            scope: repo.clone(),
            dst_scope: root.dst_of(&root.dir).join(&loc),
        };
        self.kustomization(&child)?;
        let rel = relative(&real, &repo);
        if rel.as_os_str().is_empty() {
            return Ok(path_str(&loc));
        }
        Ok(path_str(&loc.join(rel)))
    }

    /// A chart home entry; empty means the default home (and stays empty).
    fn chart_home_entry(&mut self, root: &Root, entry: &str) -> Res<String> {
        let path = if entry.is_empty() {
            DEFAULT_CHART_HOME
        } else {
            entry
        };
        if Path::new(path).is_absolute() {
            return Err(format!("absolute path \"{path}\" not handled in alpha"));
        }
        let home = self
            .chart_home(root, path)
            .map_err(|e| format!("unable to copy home {entry:?}: {e}"))?;
        Ok(if entry.is_empty() {
            String::new()
        } else {
            home
        })
    }

    /// A file holding Kubernetes objects (a `patchesStrategicMerge` entry).
    fn k8s_file(&mut self, root: &Root, p: &str) -> Res<String> {
        let check = if is_http_url(p) {
            Ok(())
        } else {
            self.local_file(root, p).and_then(|real| {
                let text = std::fs::read_to_string(&real).map_err(|e| e.to_string())?;
                parse_resources(&text).map(|_| ())
            })
        };
        match check {
            Ok(()) => self.file(root, p),
            Err(fe) => Err(format!(
                "unable to load resource entry {p:?}: when parsing as inline received error: missing Resource metadata\nwhen parsing as filepath received error: {fe}"
            )),
        }
    }

    /// A Helm chart home: copied as a directory when it exists.
    fn chart_home(&mut self, root: &Root, p: &str) -> Res<String> {
        if Path::new(p).is_absolute() {
            return Err(format!("absolute path \"{p}\" not handled in alpha"));
        }
        let abs = kustomize::fs::join(&root.dir, p);
        if std::fs::symlink_metadata(&abs).is_err() {
            // a home that does not exist (yet: it may be where charts are
            // pulled to) is kept, as a clean path relative to the root
            return Ok(path_str(&relative(&abs, &root.dir)));
        }
        let real = std::fs::canonicalize(&abs).map_err(|e| {
            format!(
                "invalid chart home: evalsymlink failure on '{}' : {e}",
                abs.display()
            )
        })?;
        if !real.is_dir() {
            return Err(format!(
                "invalid chart home: '{}' must be a directory",
                abs.display()
            ));
        }
        if !real.starts_with(&root.scope) {
            return Err(format!(
                "invalid chart home: root \"{}\" outside localize scope \"{}\"",
                real.display(),
                root.scope.display()
            ));
        }
        self.check_dst(&real, "root")?;
        if relative(&abs, &root.dir) == Path::new(DEFAULT_CHART_HOME) {
            // the default home keeps its name, even through a symlink
            let to = root.dst_of(&root.dir).join(DEFAULT_CHART_HOME);
            if !to.exists() {
                copy_tree(&real, &to)?;
            }
            return Ok(DEFAULT_CHART_HOME.to_string());
        }
        let to = root.dst_of(&real);
        if !to.exists() {
            copy_tree(&real, &to)?;
        }
        Ok(path_str(&relative(&real, &root.dir)))
    }

    /// A `generators`/`transformers`/`validators` entry (inline or file).
    fn plugin_entry(&mut self, root: &Root, key: &str, s: &str) -> Res<String> {
        if s.is_empty() {
            return Ok(String::new());
        }
        let inline = parse_resources(s);
        let (mut docs, file_real) = match inline {
            Ok(d) => (d, None),
            Err(ie) => {
                let fr = self.local_file(root, s).and_then(|real| {
                    let text = std::fs::read_to_string(&real).map_err(|e| e.to_string())?;
                    Ok((parse_resources(&text)?, real, text))
                });
                match fr {
                    Ok((d, real, text)) => (d, Some((real, text))),
                    Err(fe) => {
                        return Err(format!(
                            "unable to load {key} entry: unable to load resource entry {s:?}: when parsing as inline received error: {ie}\nwhen parsing as filepath received error: {fe}"
                        ));
                    }
                }
            }
        };
        let mut changes = Vec::new();
        for d in docs.iter_mut() {
            self.builtin_plugin(root, d, &mut changes)?;
        }
        // keep the entry's own layout and key order; re-emit only when a
        // changed path cannot be found as a plain scalar line
        let rewrite = |text: &str| -> Res<String> {
            if changes.is_empty() {
                return Ok(text.to_string());
            }
            match replace_scalars(text, &changes) {
                Some(t) => Ok(t),
                None => docs_text(&docs),
            }
        };
        match file_real {
            None => rewrite(s),
            Some((real, text)) => {
                let out = rewrite(&text)?;
                write_file(&root.dst_of(&real), out.as_bytes())?;
                Ok(path_str(&relative(&real, &root.dir)))
            }
        }
    }

    /// Localizes the paths of a builtin plugin configuration, recording each
    /// changed path as (old, new).
    fn builtin_plugin(
        &mut self,
        root: &Root,
        d: &mut Value,
        changes: &mut Vec<(String, String)>,
    ) -> Res<()> {
        if d.str_at(&["apiVersion"]) != Some("builtin") {
            return Ok(());
        }
        let id = res_id(d);
        let kind = d.str_at(&["kind"]).unwrap_or("").to_string();
        let fields: &[&str] = match kind.as_str() {
            "ConfigMapGenerator" | "SecretGenerator" => &["env", "envs", "files"],
            "HelmChartInflationGenerator" => &["valuesFile", "additionalValuesFiles", "chartHome"],
            "PatchTransformer" | "PatchJson6902Transformer" => &["path"],
            "PatchStrategicMergeTransformer" => &["paths"],
            "ReplacementTransformer" => &["replacements"],
            _ => &[],
        };
        if kind == "HelmChartInflationGenerator"
            && !d
                .as_map()
                .is_some_and(|m| m.keys().any(|k| k.eq_ignore_ascii_case("chartHome")))
        {
            // without a chartHome, the plugin reads the default home: copied
            self.chart_home_entry(root, "")
                .map_err(|e| format!("plugin {id}: {e}"))?;
        }
        for f in fields {
            // builtin plugin configs are decoded like Go's encoding/json:
            // field names match case-insensitively (`Path:` is `path`)
            let key = d
                .as_map()
                .and_then(|m| m.keys().find(|k| k.eq_ignore_ascii_case(f)).cloned());
            let Some(key) = key else { continue };
            let Some(v) = d.get_mut(&key) else { continue };
            let ctx = |e: String| format!("considering field '{f}' of object {id}: {e}");
            if *f == "replacements" {
                if let Value::Seq(items) = v {
                    for it in items.iter_mut() {
                        if let Some(Value::String(s)) = it.get_mut("path") {
                            let n = self.file(root, s).map_err(ctx)?;
                            if n != *s {
                                changes.push((std::mem::replace(s, n.clone()), n));
                            }
                        }
                    }
                }
                continue;
            }
            let mut one = |this: &mut Self, s: &mut String| -> Res<()> {
                if *f == "paths" && s.contains('\n') {
                    return Ok(());
                }
                let n = match *f {
                    "chartHome" => this.chart_home_entry(root, s)?,
                    "files" => this.file_source(root, s)?,
                    _ => this.file(root, s)?,
                };
                if n != *s {
                    changes.push((std::mem::replace(s, n.clone()), n));
                }
                Ok(())
            };
            match v {
                Value::String(s) => one(self, s).map_err(ctx)?,
                Value::Seq(items) => {
                    for it in items.iter_mut() {
                        match it {
                            Value::String(s) => one(self, s).map_err(ctx)?,
                            _ => return Err(ctx("expected sequence or scalar node".into())),
                        }
                    }
                }
                Value::Null => {}
                _ => return Err(ctx("expected sequence or scalar node".into())),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn read(root: &Path, rel: &str) -> String {
        std::fs::read_to_string(root.join(rel))
            .unwrap_or_else(|e| panic!("{}: {e}", root.join(rel).display()))
    }

    fn opts(target: &Path, dst: &Path, scope: Option<&Path>) -> Options {
        Options {
            target: Some(target.display().to_string()),
            new_dir: Some(dst.display().to_string()),
            scope: scope.map(|s| s.display().to_string()),
            no_verify: false,
            mirrors: Mirrors::default(),
            progress: false,
            platforms: Vec::new(),
            ssh_command: None,
        }
    }

    /// An `ssh` stand-in for git: runs the remote command (`git-upload-pack
    /// '<path>'`) locally, so SSH URLs can be tested without a server.
    fn fake_ssh(dir: &Path) -> String {
        let p = dir.join("fake-ssh");
        std::fs::write(
            &p,
            "#!/bin/sh\n# the last argument is the remote command\nfor a; do cmd=$a; done\n\
             echo \"$@\" >> \"$(dirname \"$0\")/ssh.log\"\n\
             # a server resolves scp-like paths against the login's home: / here\n\
             cd / && exec sh -c \"$cmd\"\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p.display().to_string()
    }

    #[test]
    fn ssh_roots_are_fetched_with_git_over_ssh() {
        let t = tempfile::tempdir().unwrap();
        let s = std::fs::canonicalize(t.path()).unwrap();
        bare_repo(
            &s.join("srv/org/app.git"),
            &[
                ("deploy/kustomization.yaml", "resources: [cm.yaml]\n"),
                ("deploy/cm.yaml", CM),
            ],
            "v1",
        );
        let repo = s.join("srv/org/app.git");
        for (form, dir) in [
            (
                format!("ssh://git@git.example.com{}//deploy?ref=v1", repo.display()),
                "ssh-url",
            ),
            (
                format!("git@git.example.com:{}//deploy?ref=v1", repo.display()),
                "scp-like",
            ),
        ] {
            write(
                &s,
                &format!("{dir}/app/kustomization.yaml"),
                &format!("namePrefix: p-\nresources:\n- {form}\n"),
            );
            let mut o = opts(&s.join(dir).join("app"), &s.join(dir).join("out"), None);
            o.ssh_command = Some(fake_ssh(&s));
            let out = run(&o).unwrap_or_else(|e| panic!("{form}: {}", e.message));
            assert!(
                out.log.iter().any(|l| l.contains("VERIFICATION SUCCESS")),
                "{:?}",
                out.log
            );
            let k = read(&s.join(dir).join("out"), "kustomization.yaml");
            assert!(k.contains("localized-files/git.example.com/"), "{k}");
            let log = std::fs::read_to_string(s.join("ssh.log")).unwrap();
            assert!(
                log.contains("git.example.com") && log.contains("git-upload-pack"),
                "{log}"
            );
        }
        // an unknown ref is a clear error naming it, and leaves nothing
        write(
            &s,
            "bad/app/kustomization.yaml",
            &format!(
                "resources:\n- ssh://git@git.example.com{}//deploy?ref=nope\n",
                repo.display()
            ),
        );
        let mut o = opts(&s.join("bad/app"), &s.join("bad/out"), None);
        o.ssh_command = Some(fake_ssh(&s));
        let e = run(&o).unwrap_err();
        assert!(e.message.contains("at ref \"nope\""), "{}", e.message);
        assert!(!s.join("bad/out").exists());
        assert!(fetch::is_ssh("git@github.com:org/repo.git") && fetch::is_ssh("ssh://h/r"));
        assert!(
            !fetch::is_ssh("https://h/r") && !fetch::is_ssh("file:///r") && !fetch::is_ssh("/r:x")
        );
    }

    #[test]
    fn catalogs_and_their_pinned_binaries_are_localized() {
        use crate::catalog::Platform;
        use wiremock::matchers::path;
        use wiremock::{Mock, MockServer, ResponseTemplate};
        let rt = tokio::runtime::Runtime::new().unwrap();
        let server = rt.block_on(MockServer::start());
        rt.block_on(async {
            Mock::given(path("/fns/v1/fn-linux-amd64"))
                .respond_with(ResponseTemplate::new(200).set_body_bytes(b"remote-bin".to_vec()))
                .mount(&server)
                .await;
        });
        let t = tempfile::tempdir().unwrap();
        let s = std::fs::canonicalize(t.path()).unwrap();
        let remote = crate::source::sha256_hex(b"remote-bin");
        let local = crate::source::sha256_hex(b"local-bin");
        let catalog = |remote_pin: &str| {
            format!(
                "apiVersion: config.kubernetes.io/v1alpha1\nkind: Catalog\nmetadata:\n  name: c\n\
                 spec:\n  krmFunctions:\n  - group: example.com\n    names:\n      kind: Fn\n    \
                 versions:\n    - name: v1\n      runtime:\n        exec:\n          platforms:\n          \
                 - bin: fn\n            os: linux\n            arch: amd64\n            \
                 uri: https://dl.example.com/fns/v1/fn-linux-amd64\n            sha256: {remote_pin}\n          \
                 - bin: fn\n            os: darwin\n            arch: arm64\n            uri: bin/fn-darwin\n            \
                 sha256: {local}\n"
            )
        };
        write(
            &s,
            "app/kustomization.yaml",
            "catalogs: [catalog.yaml]\nresources: [cm.yaml]\n",
        );
        write(&s, "app/cm.yaml", CM);
        write(&s, "app/catalog.yaml", &catalog(&remote));
        write(&s, "app/bin/fn-darwin", "local-bin");
        let mut o = opts(&s.join("app"), &s.join("out"), None);
        o.mirrors = Mirrors(vec![(
            "https://dl.example.com/".into(),
            format!("{}/", server.uri()),
        )]);
        // without --platform: the catalog and its local binary are copied
        let out = run(&o).unwrap();
        assert!(
            out.log
                .iter()
                .any(|l| l.contains("uses function catalogs, so it was not built")),
            "{:?}",
            out.log
        );
        assert_eq!(read(&s.join("out"), "catalog.yaml"), catalog(&remote));
        assert_eq!(read(&s.join("out"), "bin/fn-darwin"), "local-bin");
        assert!(!s.join("out/localized-files").exists());

        // with --platform linux/amd64: the pinned binary is downloaded,
        // verified, stored without the execute bit, and the uri rewritten
        o.new_dir = Some(s.join("out2").display().to_string());
        o.platforms = vec![Platform::parse("linux/amd64").unwrap()];
        let out = run(&o).unwrap();
        let stored = "localized-files/dl.example.com/fns/v1/fn-linux-amd64";
        assert_eq!(read(&s.join("out2"), stored), "remote-bin");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(s.join("out2").join(stored))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0, "{mode:o}");
        assert!(
            out.log.iter().any(|l| l.contains("not executable")),
            "{:?}",
            out.log
        );
        let copied = read(&s.join("out2"), "catalog.yaml");
        assert!(copied.contains(&format!("uri: {stored}\n")), "{copied}");
        assert!(copied.contains("uri: bin/fn-darwin\n"), "{copied}");

        // a binary that does not match its pin fails and leaves nothing
        write(&s, "app/catalog.yaml", &catalog(&local));
        o.new_dir = Some(s.join("out3").display().to_string());
        let e = run(&o).unwrap_err();
        assert!(
            e.message.contains(&format!(
                "is sha256:{remote}, the catalog pins sha256:{local}"
            )),
            "{}",
            e.message
        );
        assert!(!s.join("out3").exists());
    }

    const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";

    #[test]
    fn list_kinds_stand_for_their_items() {
        for list in [
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n",
            "apiVersion: v1\nkind: ConfigMapList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n",
            "apiVersion: v1\nkind: List\nitems: []\n",
        ] {
            assert!(parse_resources(list).is_ok(), "{list}");
            let t = tempfile::tempdir().unwrap();
            let s = std::fs::canonicalize(t.path()).unwrap();
            write(&s, "app/kustomization.yaml", "resources: [list.yaml]\n");
            write(&s, "app/list.yaml", list);
            run(&opts(&s.join("app"), &s.join("out"), None))
                .unwrap_or_else(|e| panic!("{}", e.message));
            assert_eq!(
                std::fs::read_to_string(s.join("out/list.yaml")).unwrap(),
                list
            );
        }
        // an item still needs a name
        let bad = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n";
        assert!(
            parse_resources(bad)
                .unwrap_err()
                .contains("missing metadata.name")
        );
    }

    #[test]
    fn builtin_plugin_fields_match_case_insensitively() {
        let t = tempfile::tempdir().unwrap();
        let s = std::fs::canonicalize(t.path()).unwrap();
        write(
            &s,
            "app/kustomization.yaml",
            "resources: [cm.yaml]\ntransformers: [patcher.yaml]\n",
        );
        write(&s, "app/cm.yaml", CM);
        write(
            &s,
            "app/patcher.yaml",
            "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\nPath: patches/add.yaml\n",
        );
        write(
            &s,
            "app/patches/add.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: v\n",
        );
        run(&opts(&s.join("app"), &s.join("out"), None))
            .unwrap_or_else(|e| panic!("{}", e.message));
        assert!(
            s.join("out/patches/add.yaml").is_file(),
            "the patch file was copied"
        );
    }

    #[test]
    fn chart_homes_missing_are_cleaned_and_helm_generators_copy_the_default() {
        let t = tempfile::tempdir().unwrap();
        let s = std::fs::canonicalize(t.path()).unwrap();
        let helm = |home: &str| {
            format!(
                "apiVersion: builtin\nkind: HelmChartInflationGenerator\nmetadata:\n  name: h\n\
                 name: minecraft\nreleaseName: moria\nversion: 3.1.3\n{home}"
            )
        };
        write(
            &s,
            "a/kustomization.yaml",
            "helmGlobals:\n  chartHome: ../a/./home\ngenerators:\n- default.yaml\n- explicit.yaml\n",
        );
        write(&s, "a/default.yaml", &helm(""));
        write(
            &s,
            "a/explicit.yaml",
            &helm("chartHome: ./gen-home/../untar\n"),
        );
        write(&s, "a/charts/minecraft/values.yaml", "a: b\n");
        let mut o = opts(&s.join("a"), &s.join("out"), None);
        o.no_verify = true; // the build would refuse Helm
        run(&o).unwrap_or_else(|e| panic!("{}", e.message));
        let k = std::fs::read_to_string(s.join("out/kustomization.yaml")).unwrap();
        // a home that does not exist keeps a clean path relative to the root
        assert!(k.contains("chartHome: home"), "{k}");
        let g = std::fs::read_to_string(s.join("out/explicit.yaml")).unwrap();
        assert!(g.contains("chartHome: untar"), "{g}");
        // a Helm generator without chartHome reads (so gets) the default home
        assert!(s.join("out/charts/minecraft/values.yaml").is_file());
    }

    #[test]
    fn copies_referenced_files_with_cleaned_paths() {
        let t = tempfile::tempdir().unwrap();
        let s = std::fs::canonicalize(t.path()).unwrap();
        write(
            &s,
            "app/kustomization.yaml",
            "resources:\n- ./cm.yaml\n- ../base\nnamePrefix: ''\nconfigMapGenerator:\n- name: g\n  files:\n  - k=sub/../data.txt\n",
        );
        write(&s, "app/cm.yaml", CM);
        write(&s, "app/data.txt", "hello");
        write(&s, "app/unused.yaml", CM);
        write(&s, "base/kustomization.yaml", "resources:\n- svc.yaml\n");
        write(
            &s,
            "base/svc.yaml",
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n",
        );
        let dst = s.join("out");
        let o = run(&opts(&s.join("app"), &dst, Some(&s))).unwrap();
        assert!(
            o.log.iter().any(|l| l.starts_with("VERIFICATION SUCCESS")),
            "{:?}",
            o.log
        );
        assert_eq!(
            read(&dst, "app/kustomization.yaml"),
            "configMapGenerator:\n- files:\n  - k=data.txt\n  name: g\nresources:\n- cm.yaml\n- ../base\n"
        );
        assert_eq!(read(&dst, "app/cm.yaml"), CM);
        assert_eq!(read(&dst, "app/data.txt"), "hello");
        assert!(dst.join("base/svc.yaml").is_file());
        assert!(!dst.join("app/unused.yaml").exists());
    }

    #[test]
    fn errors_remove_the_destination_and_name_the_problem() {
        let t = tempfile::tempdir().unwrap();
        let s = std::fs::canonicalize(t.path()).unwrap();
        write(&s, "app/kustomization.yaml", "resources:\n- ../base\n");
        write(&s, "base/kustomization.yaml", "resources: []\n");
        let dst = s.join("out");
        let e = run(&opts(&s.join("app"), &dst, None)).unwrap_err();
        assert!(
            e.message.contains("outside localize scope"),
            "{}",
            e.message
        );
        assert!(!dst.exists());

        std::fs::create_dir(&dst).unwrap();
        let e = run(&opts(&s.join("app"), &dst, Some(&s))).unwrap_err();
        assert!(e.message.contains("already exists"), "{}", e.message);

        let e = run(&opts(&s.join("app"), &s.join("x/y"), Some(&s.join("base")))).unwrap_err();
        assert!(
            e.message.contains("does not contain target"),
            "{}",
            e.message
        );

        write(&s, "bad/kustomization.yaml", "resources:\n- missing.yaml\n");
        let e = run(&opts(&s.join("bad"), &s.join("out2"), None)).unwrap_err();
        assert!(
            e.message
                .contains("could not localize path \"missing.yaml\" as file"),
            "{}",
            e.message
        );
        assert!(!s.join("out2").exists());

        let mut o = opts(&s.join("app"), &s.join("out3"), None);
        o.target = Some("https://github.com/org/repo//app".into());
        let e = run(&o).unwrap_err();
        assert!(
            e.message.contains("missing ref query string parameter"),
            "{}",
            e.message
        );
    }

    fn bare_repo(dir: &Path, files: &[(&str, &str)], tag: &str) {
        let repo = git2::Repository::init_bare(dir).unwrap();
        let mut index = git2::Index::new().unwrap();
        for (p, text) in files {
            let oid = repo.blob(text.as_bytes()).unwrap();
            let mut e = git2::IndexEntry {
                ctime: git2::IndexTime::new(0, 0),
                mtime: git2::IndexTime::new(0, 0),
                dev: 0,
                ino: 0,
                mode: 0o100644,
                uid: 0,
                gid: 0,
                file_size: text.len() as u32,
                id: oid,
                flags: 0,
                flags_extended: 0,
                path: p.as_bytes().to_vec(),
            };
            e.flags = (p.len() as u16) & 0xfff;
            index.add(&e).unwrap();
        }
        let tree = index.write_tree_to(&repo).unwrap();
        let tree = repo.find_tree(tree).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let c = repo.commit(None, &sig, &sig, "c", &tree, &[]).unwrap();
        repo.tag_lightweight(tag, &repo.find_object(c, None).unwrap(), false)
            .unwrap();
    }

    /// A bare repository with one symlink entry (`link` -> `target`) besides `files`.
    fn bare_repo_with_link(dir: &Path, files: &[(&str, &str)], link: (&str, &str), tag: &str) {
        bare_repo(dir, files, tag);
        let repo = git2::Repository::open_bare(dir).unwrap();
        let head = repo.revparse_single(tag).unwrap().peel_to_commit().unwrap();
        let mut index = git2::Index::new().unwrap();
        index.read_tree(&head.tree().unwrap()).unwrap();
        let oid = repo.blob(link.1.as_bytes()).unwrap();
        let mut e = git2::IndexEntry {
            ctime: git2::IndexTime::new(0, 0),
            mtime: git2::IndexTime::new(0, 0),
            dev: 0,
            ino: 0,
            mode: 0o120000,
            uid: 0,
            gid: 0,
            file_size: link.1.len() as u32,
            id: oid,
            flags: (link.0.len() as u16) & 0xfff,
            flags_extended: 0,
            path: link.0.as_bytes().to_vec(),
        };
        e.flags = (link.0.len() as u16) & 0xfff;
        index.add(&e).unwrap();
        let tree = repo.find_tree(index.write_tree_to(&repo).unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let c = repo
            .commit(None, &sig, &sig, "link", &tree, &[&head])
            .unwrap();
        repo.tag_lightweight(tag, &repo.find_object(c, None).unwrap(), true)
            .unwrap();
    }

    /// Bad remote input: each is an error naming the URL (or the ref), and
    /// nothing is left behind.
    #[test]
    fn bad_remote_input_is_a_clear_error_and_leaves_nothing() {
        let t = tempfile::tempdir().unwrap();
        let s = std::fs::canonicalize(t.path()).unwrap();
        bare_repo(
            &s.join("repo.git"),
            &[
                ("good/kustomization.yaml", "resources:\n- cm.yaml\n"),
                ("good/cm.yaml", CM),
                ("escape/kustomization.yaml", "resources:\n- ../../outside\n"),
            ],
            "v1",
        );
        bare_repo_with_link(
            &s.join("linked.git"),
            &[("app/kustomization.yaml", "resources:\n- link.yaml\n")],
            ("app/link.yaml", "../../../../../../etc/passwd"),
            "v1",
        );
        let mirror = Mirrors(vec![
            (
                "https://git.example.com/org/repo".into(),
                format!("file://{}", s.join("repo.git").display()),
            ),
            (
                "https://git.example.com/org/linked".into(),
                format!("file://{}", s.join("linked.git").display()),
            ),
        ]);
        for (resource, expect) in [
            // nothing listens on port 1 of the loopback
            (
                "https://127.0.0.1:1/org/repo//good?ref=v1",
                "127.0.0.1:1/org/repo",
            ),
            ("https://git.example.com/org/repo//good?ref=v9", "\"v9\""),
            ("https://git.example.com/org/repo//escape?ref=v1", "outside"),
            // a repository holding a symlink out of itself is refused whole
            (
                "https://git.example.com/org/linked//app?ref=v1",
                "leaves the tree",
            ),
        ] {
            write(
                &s,
                "app/kustomization.yaml",
                &format!("resources:\n- {resource}\n"),
            );
            let dst = s.join("out");
            let mut o = opts(&s.join("app"), &dst, None);
            o.mirrors = mirror.clone();
            let e = run(&o).expect_err(resource);
            assert!(e.message.contains(expect), "{resource}: {}", e.message);
            assert!(!dst.exists(), "{resource}: left {}", dst.display());
        }
    }

    /// Localizes `app` whose only resource is `resource` (an https URL
    /// starting with `prefix`, served through a mirror by a mock server
    /// answering with `mock`), expecting a failure: its message, and
    /// whether the destination is left.
    fn fails_through_mock(mock: wiremock::Mock, prefix: &str, resource: &str) -> (String, bool) {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let server = rt.block_on(wiremock::MockServer::start());
        rt.block_on(mock.mount(&server));
        let t = tempfile::tempdir().unwrap();
        let s = std::fs::canonicalize(t.path()).unwrap();
        write(
            &s,
            "app/kustomization.yaml",
            &format!("resources:\n- {resource}\n"),
        );
        let dst = s.join("out");
        let mut o = opts(&s.join("app"), &dst, None);
        o.mirrors = Mirrors(vec![(prefix.into(), format!("{}/", server.uri()))]);
        let e = run(&o).unwrap_err();
        (e.message, dst.exists())
    }

    #[test]
    fn an_http_file_over_the_limit_is_refused_and_leaves_nothing() {
        use wiremock::{Mock, ResponseTemplate};
        let big = vec![b'#'; fetch::MAX_FILE_BYTES as usize + 1];
        let (message, left) = fails_through_mock(
            Mock::given(wiremock::matchers::path("/big.yaml"))
                .respond_with(ResponseTemplate::new(200).set_body_bytes(big)),
            "https://files.example.com/",
            "https://files.example.com/big.yaml",
        );
        assert!(
            message.contains("big.yaml") && message.contains("larger than"),
            "{message}"
        );
        assert!(!left);
    }

    #[test]
    fn a_repository_url_that_is_no_file_says_so() {
        use wiremock::{Mock, ResponseTemplate};
        let (message, left) = fails_through_mock(
            Mock::given(wiremock::matchers::any()).respond_with(ResponseTemplate::new(404)),
            "https://github.com/",
            "https://github.com/org/repo//deploy?timeout=9",
        );
        assert!(
            message.contains("as file: URL is a git repository")
                && message.contains("missing ref query string parameter"),
            "{message}"
        );
        assert!(!left);
    }

    #[test]
    fn remote_roots_and_files_through_mirrors() {
        let t = tempfile::tempdir().unwrap();
        let s = std::fs::canonicalize(t.path()).unwrap();
        bare_repo(
            &s.join("repo.git"),
            &[
                ("deploy/app/kustomization.yaml", "resources:\n- cm.yaml\n"),
                ("deploy/app/cm.yaml", CM),
            ],
            "v1",
        );
        write(
            &s,
            "files/raw/svc.yaml",
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n",
        );
        write(
            &s,
            "app/kustomization.yaml",
            "resources:\n- https://git.example.com/org/repo//deploy/app?ref=v1&timeout=30\n- https://raw.example.com/raw/svc.yaml\n",
        );
        let dst = s.join("out");
        let mut o = opts(&s.join("app"), &dst, None);
        o.mirrors = Mirrors(vec![
            (
                "https://git.example.com/org/repo".into(),
                format!("file://{}", s.join("repo.git").display()),
            ),
            (
                "https://raw.example.com/".into(),
                format!("file://{}/", s.join("files").display()),
            ),
        ]);
        let out = run(&o).unwrap();
        assert!(
            out.log
                .iter()
                .any(|l| l.starts_with("VERIFICATION SUCCESS")),
            "{:?}",
            out.log
        );
        assert_eq!(
            read(&dst, "kustomization.yaml"),
            "resources:\n- localized-files/git.example.com/org/repo/v1/deploy/app\n- localized-files/raw.example.com/raw/svc.yaml\n"
        );
        assert_eq!(
            read(
                &dst,
                "localized-files/git.example.com/org/repo/v1/deploy/app/cm.yaml"
            ),
            CM
        );
        assert!(
            dst.join("localized-files/raw.example.com/raw/svc.yaml")
                .is_file()
        );

        // a remote target: default name from the root path and the ref
        let mut o = opts(&s, &s.join("remote-out"), None);
        o.target = Some("https://git.example.com/org/repo//deploy/app?ref=v1".into());
        o.mirrors = Mirrors(vec![(
            "https://git.example.com/org/repo".into(),
            format!("file://{}", s.join("repo.git").display()),
        )]);
        run(&o).unwrap();
        assert_eq!(read(&s.join("remote-out"), "deploy/app/cm.yaml"), CM);

        // an unknown ref fails and leaves nothing behind
        write(
            &s,
            "bad/kustomization.yaml",
            "resources:\n- https://git.example.com/org/repo//deploy/app?ref=v9\n",
        );
        let mut o = opts(&s.join("bad"), &s.join("bad-out"), None);
        o.mirrors = Mirrors(vec![(
            "https://git.example.com/org/repo".into(),
            format!("file://{}", s.join("repo.git").display()),
        )]);
        let e = run(&o).unwrap_err();
        assert!(e.message.contains("v9"), "{}", e.message);
        assert!(!s.join("bad-out").exists());
    }

    #[test]
    fn http_files_are_retried_and_stored_by_url() {
        use wiremock::matchers::path;
        use wiremock::{Mock, MockServer, ResponseTemplate};
        let rt = tokio::runtime::Runtime::new().unwrap();
        let server = rt.block_on(MockServer::start());
        rt.block_on(async {
            Mock::given(path("/org/repo/v1/cm.yaml"))
                .respond_with(ResponseTemplate::new(503))
                .up_to_n_times(1)
                .with_priority(1)
                .mount(&server)
                .await;
            Mock::given(path("/org/repo/v1/cm.yaml"))
                .respond_with(ResponseTemplate::new(200).set_body_string(CM))
                .mount(&server)
                .await;
        });
        let t = tempfile::tempdir().unwrap();
        let s = std::fs::canonicalize(t.path()).unwrap();
        write(
            &s,
            "app/kustomization.yaml",
            "resources:\n- https://files.example.com/org/repo/v1/cm.yaml?x=1\n- https://files.example.com/missing.yaml\n",
        );
        let mut o = opts(&s.join("app"), &s.join("out"), None);
        o.no_verify = true;
        o.mirrors = Mirrors(vec![(
            "https://files.example.com/".into(),
            format!("{}/", server.uri()),
        )]);
        let e = run(&o).unwrap_err();
        assert!(e.message.contains("404"), "{}", e.message);
        write(
            &s,
            "app/kustomization.yaml",
            "resources:\n- https://files.example.com/org/repo/v1/cm.yaml?x=1\n- https://files.example.com/svc.yaml\n",
        );
        rt.block_on(
            Mock::given(path("/svc.yaml"))
                .respond_with(
                    ResponseTemplate::new(200)
                        .set_body_string("apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n"),
                )
                .mount(&server),
        );
        run(&o).unwrap();
        assert_eq!(
            read(
                &s.join("out"),
                "localized-files/files.example.com/org/repo/v1/cm.yaml"
            ),
            CM
        );
    }

    #[test]
    fn several_repositories_are_fetched_in_parallel_and_once() {
        let t = tempfile::tempdir().unwrap();
        let s = std::fs::canonicalize(t.path()).unwrap();
        for name in ["one", "two"] {
            bare_repo(
                &s.join(name),
                &[
                    ("kustomization.yaml", "resources:\n- cm.yaml\n"),
                    ("cm.yaml", CM),
                ],
                "v1",
            );
        }
        write(
            &s,
            "app/kustomization.yaml",
            "resources:\n- https://git.example.com/org/one?ref=v1\n- https://git.example.com/org/two?ref=v1\ncomponents: []\nbases:\n- https://git.example.com/org/one?ref=v1\n",
        );
        let mut o = opts(&s.join("app"), &s.join("out"), None);
        o.no_verify = true;
        o.mirrors = Mirrors(vec![(
            "https://git.example.com/org/".into(),
            format!("file://{}/", s.display()),
        )]);
        run(&o).unwrap();
        let out = s.join("out");
        for name in ["one", "two"] {
            assert_eq!(
                read(
                    &out,
                    &format!("localized-files/git.example.com/org/{name}/v1/cm.yaml")
                ),
                CM
            );
        }
        assert_eq!(
            read(&out, "kustomization.yaml"),
            "bases:\n- localized-files/git.example.com/org/one/v1\nresources:\n- localized-files/git.example.com/org/one/v1\n- localized-files/git.example.com/org/two/v1\n"
        );
    }

    #[test]
    fn cycles_and_bad_resources_fail() {
        let t = tempfile::tempdir().unwrap();
        let s = std::fs::canonicalize(t.path()).unwrap();
        write(&s, "a/kustomization.yaml", "resources:\n- b\n");
        write(&s, "a/b/kustomization.yaml", "resources:\n- ..\n");
        let mut o = opts(&s.join("a"), &s.join("out"), None);
        o.no_verify = true;
        let e = run(&o).unwrap_err();
        assert!(
            e.message.contains("cycle detected: candidate root"),
            "{}",
            e.message
        );
        assert!(!s.join("out").exists());

        write(&s, "c/kustomization.yaml", "resources:\n- notes.txt\n");
        write(&s, "c/notes.txt", "just: [text\n");
        let mut o = opts(&s.join("c"), &s.join("out"), None);
        o.no_verify = true;
        let e = run(&o).unwrap_err();
        assert!(
            e.message.contains("invalid resource at file \"notes.txt\""),
            "{}",
            e.message
        );
    }

    #[test]
    fn kustomization_is_rewritten_like_the_typed_struct() {
        let mut m = match yaml::parse_documents(
            "namePrefix: 1\ncommonLabels:\n  v: 2\n  b: true\nimages:\n- name: x\n  newTag: 3\nnameSuffix: ''\nresources: []\nlabels:\n- pairs: {a: 1}\n  includeSelectors: false\nkind: NotChecked\n",
        )
        .unwrap()
        .remove(0)
        {
            Value::Map(m) => m,
            _ => unreachable!(),
        };
        prune(&mut m);
        let mut out = String::new();
        yaml::write_document(&mut out, &Value::Map(m)).unwrap();
        assert_eq!(
            out,
            "commonLabels:\n  b: \"true\"\n  v: \"2\"\nimages:\n- name: x\n  newTag: \"3\"\nkind: NotChecked\nlabels:\n- pairs:\n    a: \"1\"\nnamePrefix: \"1\"\n"
        );
    }

    #[test]
    fn plugin_paths_are_replaced_in_place() {
        let text = "kind: PatchStrategicMergeTransformer\napiVersion: builtin\nmetadata:\n  name: x\npaths:\n  - ./a.yaml\n  - 'sub/../b.yaml'\n";
        let out = replace_scalars(
            text,
            &[
                ("./a.yaml".into(), "a.yaml".into()),
                ("sub/../b.yaml".into(), "b.yaml".into()),
            ],
        )
        .unwrap();
        assert_eq!(
            out,
            "kind: PatchStrategicMergeTransformer\napiVersion: builtin\nmetadata:\n  name: x\npaths:\n  - a.yaml\n  - 'b.yaml'\n"
        );
        assert!(replace_scalars("path: {a: ./x}\n", &[("./x".into(), "x".into())]).is_none());
    }
}
