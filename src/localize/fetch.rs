//! Downloads for localize: git checkouts (one per repository and ref, shared
//! by every reference into it) and HTTP(S) files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::source::sha256_hex;

use super::url::Mirrors;
use crate::source::{Cancel, GitAuth, GitReference, Limits, Workspace, fetch_git};

/// Largest remote file localize downloads.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Attempts for an HTTP file (connection errors and 5xx are retried).
const HTTP_ATTEMPTS: u32 = 3;
const HTTP_TIMEOUT: Duration = Duration::from_secs(60);
const DEFAULT_GIT_TIMEOUT: Duration = Duration::from_secs(300);

/// A repository checkout, fetched at most once per run.
type Checkout = OnceLock<Result<PathBuf, String>>;

/// A downloaded file, fetched at most once per run.
type Download = OnceLock<Result<Arc<Vec<u8>>, String>>;

/// What was fetched so far, shown on one line of stderr (rewritten in
/// place) when enabled: the CLI enables it when stderr is a terminal and
/// `--quiet` is not given.
#[derive(Debug, Default)]
pub struct Progress {
    enabled: bool,
    repositories: AtomicUsize,
    files: AtomicUsize,
    bytes: AtomicU64,
    printed: AtomicBool,
    out: Mutex<()>,
}

impl Progress {
    pub fn new(enabled: bool) -> Progress {
        Progress {
            enabled,
            ..Progress::default()
        }
    }

    /// The progress line: `localize: 2 repositories, 3 files (1.5 MiB) fetched`.
    pub fn line(repositories: usize, files: usize, bytes: u64) -> String {
        let size = if bytes >= 1024 * 1024 {
            format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
        } else if bytes >= 1024 {
            format!("{:.1} KiB", bytes as f64 / 1024.0)
        } else {
            format!("{bytes} B")
        };
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        format!(
            "localize: {}, {} ({size}) fetched",
            plural(repositories, "repository", "repositories"),
            plural(files, "file", "files")
        )
    }

    fn repository_done(&self) {
        self.repositories.fetch_add(1, Ordering::SeqCst);
        self.show();
    }

    fn file_done(&self, bytes: u64) {
        self.files.fetch_add(1, Ordering::SeqCst);
        self.bytes.fetch_add(bytes, Ordering::SeqCst);
        self.show();
    }

    fn show(&self) {
        if !self.enabled {
            return;
        }
        let _guard = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let line = Progress::line(
            self.repositories.load(Ordering::SeqCst),
            self.files.load(Ordering::SeqCst),
            self.bytes.load(Ordering::SeqCst),
        );
        // carriage return and erase-to-end-of-line: one line, rewritten
        eprint!("\r{line}\x1b[K");
        self.printed.store(true, Ordering::SeqCst);
    }

    /// Ends the progress line (if one was printed).
    pub fn finish(&self) {
        if self.enabled && self.printed.swap(false, Ordering::SeqCst) {
            eprintln!();
        }
    }
}

/// Fetches remote content, caching git checkouts for the whole run.
pub struct Fetcher {
    mirrors: Mirrors,
    ws: Workspace,
    _tmp: TempDir,
    /// One cell per (fetched URL, ref): concurrent callers wait for the
    /// same fetch.
    checkouts: Mutex<HashMap<(String, String), Arc<Checkout>>>,
    /// Downloaded files by URL (each fetched once per run).
    files: Mutex<HashMap<String, Arc<Download>>>,
    rt: tokio::runtime::Runtime,
    client: reqwest::Client,
    progress: Progress,
    /// `GIT_SSH_COMMAND` for SSH repositories (`None`: the user's setup).
    ssh_command: Option<String>,
}

impl Drop for Fetcher {
    fn drop(&mut self) {
        self.progress.finish();
    }
}

/// Basic-auth credentials written into an `https://user:password@host/` URL
/// (a mirror's `TO`), for git (reqwest uses them by itself).
fn userinfo_auth(url: &str) -> Option<GitAuth> {
    let (scheme, rest) = url.split_once("://")?;
    if !scheme.starts_with("http") {
        return None;
    }
    let authority = rest.split('/').next()?;
    let (info, _) = authority.rsplit_once('@')?;
    let (user, pass) = info.split_once(':')?;
    Some(GitAuth {
        username: Some(user.to_string()),
        password: Some(pass.to_string()),
        ..GitAuth::default()
    })
}

/// Whether git reaches `url` over SSH (`ssh://…`, `git+ssh://…`, or
/// scp-like `user@host:path`).
pub fn is_ssh(url: &str) -> bool {
    if let Some((scheme, _)) = url.split_once("://") {
        return matches!(scheme, "ssh" | "git+ssh" | "ssh+git");
    }
    // scp-like: a colon before any slash, and a host before it
    match url.split_once(':') {
        Some((host, _)) => !host.is_empty() && !host.contains('/'),
        None => false,
    }
}

/// Runs `git args` in `dir` through the function runtime's process runner
/// (its process group, ssh included, is killed at `deadline`); git's
/// stderr on failure.
fn run_git(
    ssh_command: &Option<String>,
    dir: &Path,
    args: &[&str],
    deadline: Instant,
) -> Result<(), String> {
    let mut env: Vec<(String, String)> = std::env::vars().collect();
    let mut set = |k: &str, v: &str| {
        env.retain(|(e, _)| e != k);
        env.push((k.to_string(), v.to_string()));
    };
    set("GIT_TERMINAL_PROMPT", "0");
    match ssh_command {
        Some(c) => set("GIT_SSH_COMMAND", c),
        None if std::env::var_os("GIT_SSH_COMMAND").is_none()
            && std::env::var_os("GIT_SSH").is_none() =>
        {
            set("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
        }
        None => {}
    }
    let what = format!("git {}", args.join(" "));
    let out = crate::krm::process::run(
        crate::krm::process::Run {
            program: "git".into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env,
            dir: dir.to_path_buf(),
            ..Default::default()
        },
        deadline.saturating_duration_since(Instant::now()),
        GIT_OUTPUT_CAP,
    )
    .map_err(|e| format!("{what}: {e}"))?;
    if out.success {
        Ok(())
    } else {
        Err(format!(
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Output kept from one git command (its messages; the objects go to disk).
const GIT_OUTPUT_CAP: usize = 1 << 20;

/// A directory removed on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Fetcher {
    /// `progress`: show a progress line on stderr (see [`Progress`]).
    pub fn new(mirrors: Mirrors, progress: bool) -> Result<Fetcher, String> {
        let dir = std::env::temp_dir().join(format!(
            "krmsync-localize-{}-{}",
            std::process::id(),
            &sha256_hex(format!("{:?}", Instant::now()).as_bytes())[..12]
        ));
        let ws = Workspace::new(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("starting the async runtime: {e}"))?;
        let client = reqwest::Client::builder()
            .timeout(HTTP_TIMEOUT)
            .connect_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| format!("http client: {e}"))?;
        Ok(Fetcher {
            mirrors,
            ws,
            _tmp: TempDir(dir),
            checkouts: Mutex::new(HashMap::new()),
            files: Mutex::new(HashMap::new()),
            rt,
            client,
            progress: Progress::new(progress),
            ssh_command: None,
        })
    }

    /// The command git runs for SSH (`GIT_SSH_COMMAND`), instead of the
    /// user's configuration.
    pub fn with_ssh_command(mut self, command: Option<String>) -> Fetcher {
        self.ssh_command = command;
        self
    }

    /// The checkout of `clone_url` at `git_ref` (fetched once per run).
    pub fn checkout(
        &self,
        clone_url: &str,
        git_ref: &str,
        timeout: Option<u64>,
    ) -> Result<PathBuf, String> {
        let key = (self.mirrors.apply(clone_url), git_ref.to_string());
        let cell = self
            .checkouts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key)
            .or_default()
            .clone();
        cell.get_or_init(|| self.clone_repo(clone_url, git_ref, timeout))
            .clone()
    }

    /// Fetches several repositories at once (errors are reported when the
    /// checkout is asked for).
    pub fn prefetch(&self, repos: &[(String, String, Option<u64>)]) {
        if repos.len() < 2 {
            return;
        }
        std::thread::scope(|s| {
            for (url, r, t) in repos {
                s.spawn(move || {
                    let _ = self.checkout(url, r, *t);
                });
            }
        });
    }

    fn clone_repo(
        &self,
        clone_url: &str,
        git_ref: &str,
        timeout: Option<u64>,
    ) -> Result<PathBuf, String> {
        let url = self.mirrors.apply(clone_url);
        let key = format!(
            "r{}",
            &sha256_hex(format!("{url}\0{git_ref}").as_bytes())[..24]
        );
        if is_ssh(&url) {
            let deadline =
                Instant::now() + timeout.map_or(DEFAULT_GIT_TIMEOUT, Duration::from_secs);
            let dir = self.ws.root().join(format!("{key}-ssh"));
            return self
                .clone_ssh(&url, git_ref, &dir, deadline)
                .map(|()| {
                    self.progress.repository_done();
                    dir
                })
                .map_err(|e| {
                    format!("failed to clone repo {clone_url:?} at ref {git_ref:?}: {e}")
                });
        }
        let limits = Limits {
            allow_insecure: true,
            ..Limits::default()
        };
        let deadline = Instant::now() + timeout.map_or(DEFAULT_GIT_TIMEOUT, Duration::from_secs);
        let mut refs = vec![
            GitReference::Tag(git_ref.to_string()),
            GitReference::Branch(git_ref.to_string()),
        ];
        if git_ref.len() == 40 && git_ref.bytes().all(|b| b.is_ascii_hexdigit()) {
            refs.insert(0, GitReference::Commit(git_ref.to_string()));
        }
        // credentials: a mirror URL's userinfo, else git's credential
        // helpers (as `git clone` would ask them); never written anywhere
        let auth = userinfo_auth(&url).or_else(|| {
            Some(GitAuth {
                credential_helpers: Some(crate::source::CredentialHelpers::UserConfig),
                ..GitAuth::default()
            })
        });
        let mut errors = Vec::new();
        for r in refs {
            let cancel = Cancel::new(Some(deadline));
            match fetch_git(&self.ws, &key, &url, &r, auth.as_ref(), &limits, &cancel) {
                Ok(f) => {
                    self.progress.repository_done();
                    return Ok(f.dir);
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        Err(format!(
            "failed to clone repo {clone_url:?} at ref {git_ref:?}: {}",
            errors.join("; ")
        ))
    }

    /// An SSH repository through the `git` command, as kustomize fetches
    /// every repository: the user's SSH configuration, agent and
    /// known_hosts apply (`BatchMode`, so an unknown host key or a
    /// passphrase prompt fails instead of waiting; a `GIT_SSH_COMMAND` or
    /// `core.sshCommand` of the user's wins). The ref is fetched shallowly;
    /// a commit the server will not serve that way is fetched with the
    /// whole history. Only the tree is kept.
    fn clone_ssh(
        &self,
        url: &str,
        git_ref: &str,
        dir: &Path,
        deadline: Instant,
    ) -> Result<(), String> {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let git = |args: &[&str]| run_git(&self.ssh_command, dir, args, deadline);
        git(&["init", "--quiet"])?;
        let shallow = git(&["fetch", "--quiet", "--depth=1", "--no-tags", url, git_ref]);
        if let Err(e) = shallow {
            let commit = git_ref.len() == 40 && git_ref.bytes().all(|b| b.is_ascii_hexdigit());
            if !commit {
                return Err(e);
            }
            git(&[
                "fetch",
                "--quiet",
                "--no-tags",
                url,
                "+refs/heads/*:refs/remotes/origin/*",
            ])
            .map_err(|e2| format!("{e}; {e2}"))?;
            git(&[
                "-c",
                "advice.detachedHead=false",
                "checkout",
                "--quiet",
                git_ref,
            ])?;
        } else {
            git(&[
                "-c",
                "advice.detachedHead=false",
                "checkout",
                "--quiet",
                "FETCH_HEAD",
            ])?;
        }
        std::fs::remove_dir_all(dir.join(".git"))
            .map_err(|e| format!("removing {}/.git: {e}", dir.display()))
    }

    /// A remote file's content (downloaded once per run).
    pub fn download(&self, url: &str) -> Result<Vec<u8>, String> {
        let cell = self
            .files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(url.to_string())
            .or_default()
            .clone();
        cell.get_or_init(|| {
            let body = self.fetch_file(url)?;
            self.progress.file_done(body.len() as u64);
            Ok(Arc::new(body))
        })
        .as_ref()
        .map(|b| b.to_vec())
        .map_err(Clone::clone)
    }

    /// Downloads several files at once (errors are reported when the file
    /// is asked for).
    pub fn prefetch_files(&self, urls: &[String]) {
        if urls.len() < 2 {
            return;
        }
        std::thread::scope(|s| {
            for u in urls {
                s.spawn(move || {
                    let _ = self.download(u);
                });
            }
        });
    }

    /// Downloads a remote file (after mirror rewriting).
    fn fetch_file(&self, url: &str) -> Result<Vec<u8>, String> {
        let real = self.mirrors.apply(url);
        if let Some(p) = real.strip_prefix("file://") {
            let p = p.split(['?', '#']).next().unwrap_or(p);
            return std::fs::read(Path::new(p)).map_err(|e| format!("GET {url}: {e}"));
        }
        self.rt.block_on(async {
            let mut last = String::new();
            for attempt in 0..HTTP_ATTEMPTS {
                if attempt > 0 {
                    tokio::time::sleep(Duration::from_millis(300 * u64::from(attempt))).await;
                }
                let resp = match self.client.get(&real).send().await {
                    Ok(r) => r,
                    Err(e) => {
                        last = format!("GET {url}: {e}");
                        continue;
                    }
                };
                let status = resp.status();
                if status.is_server_error() {
                    last = format!("GET {url}: {status}");
                    continue;
                }
                if !status.is_success() {
                    // kustomize's wording when the URL names a repository
                    // (a root, not a file)
                    if super::url::names_repository(url) {
                        return Err("URL is a git repository".to_string());
                    }
                    return Err(format!("GET {url}: {status}"));
                }
                if resp.content_length().is_some_and(|n| n > MAX_FILE_BYTES) {
                    return Err(format!("GET {url}: larger than {MAX_FILE_BYTES} bytes"));
                }
                let mut resp = resp;
                let mut body = Vec::new();
                loop {
                    match resp.chunk().await {
                        Ok(Some(c)) => {
                            body.extend_from_slice(&c);
                            if body.len() as u64 > MAX_FILE_BYTES {
                                return Err(format!(
                                    "GET {url}: larger than {MAX_FILE_BYTES} bytes"
                                ));
                            }
                        }
                        Ok(None) => return Ok(body),
                        Err(e) => {
                            last = format!("GET {url}: {e}");
                            break;
                        }
                    }
                }
            }
            Err(last)
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn userinfo_becomes_basic_auth() {
        let a = super::userinfo_auth("https://bob:s3cret@git.example.com/org/repo").unwrap();
        assert_eq!(a.username.as_deref(), Some("bob"));
        assert_eq!(a.password.as_deref(), Some("s3cret"));
        assert!(super::userinfo_auth("https://git.example.com/org/repo").is_none());
        assert!(super::userinfo_auth("file:///srv/repo").is_none());
    }
}

#[cfg(test)]
mod progress_tests {
    use super::Progress;

    #[test]
    fn the_progress_line_counts_repositories_files_and_bytes() {
        assert_eq!(
            Progress::line(0, 0, 0),
            "localize: 0 repositories, 0 files (0 B) fetched"
        );
        assert_eq!(
            Progress::line(1, 1, 2048),
            "localize: 1 repository, 1 file (2.0 KiB) fetched"
        );
        assert_eq!(
            Progress::line(20, 3, 3 * 1024 * 1024 / 2),
            "localize: 20 repositories, 3 files (1.5 MiB) fetched"
        );
        // disabled: counting prints nothing and finish() writes no newline
        let p = Progress::new(false);
        p.file_done(10);
        p.finish();
    }
}
