//! Downloads for localize: git checkouts (one per repository and ref, shared
//! by every reference into it) and HTTP(S) files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

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

/// A directory removed on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Fetcher {
    pub fn new(mirrors: Mirrors) -> Result<Fetcher, String> {
        let dir = std::env::temp_dir().join(format!(
            "krmsync-localize-{}-{}",
            std::process::id(),
            &hex(format!("{:?}", Instant::now()).as_bytes())[..12]
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
        })
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
        let key = format!("r{}", &hex(format!("{url}\0{git_ref}").as_bytes())[..24]);
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
                Ok(f) => return Ok(f.dir),
                Err(e) => errors.push(e.to_string()),
            }
        }
        Err(format!(
            "failed to clone repo {clone_url:?} at ref {git_ref:?}: {}",
            errors.join("; ")
        ))
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
        cell.get_or_init(|| self.fetch_file(url).map(Arc::new))
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
