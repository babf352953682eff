//! Fetching localized bundles (a directory tree holding a kustomization) and
//! unpacking them safely into a per-controller work directory.
//!
//! Three kinds of source are supported:
//!
//! * [`fetch_git`]: a git repository over `https://` (libgit2, blocking).
//! * [`fetch_http`]: a `.tar.gz` artifact over `https://`, verified against
//!   an expected sha256 before anything is unpacked (async).
//! * [`unpack_bundle`]: a `.tar.gz` held in the cluster (a ConfigMap or
//!   Secret key), blocking.
//!
//! Every fetch lands in a [`Workspace`] as `<root>/<key>/<revision-dir>/tree/`.
//! A revision already present is returned with `cached = true` and nothing is
//! downloaded or written. New revisions are assembled in a temporary
//! directory inside `<root>/<key>/` and renamed into place only when complete;
//! older revisions of the same key are then removed.
//!
//! Archives and git trees go through the same checked writer
//! ([`archive::unpack_tar_gz`] and the git checkout), which refuses path
//! escapes, writes through symlinks, symlinks leaving the tree, hard links and
//! special files, and enforces [`Limits`].
//!
//! # Cancellation, timeouts and concurrency
//!
//! [`fetch_git`] and [`fetch_http`] take a [`Cancel`] (a deadline and/or an
//! explicit `cancel()`); a cancelled fetch returns
//! [`SourceError::Cancelled`] promptly and never publishes its revision,
//! even if work it started on another thread is still winding down. libgit2
//! gets process-wide connect (30 s) and socket I/O (60 s) timeouts; an HTTP
//! request gets the token's deadline as its total timeout.
//!
//! Two fetches of the same key must not overlap: callers hold
//! [`Workspace::key_lock`] for the whole fetch and unpack (moving the owned
//! guard into `spawn_blocking` when the fetch runs there).
//!
//! # Size limits
//!
//! [`Limits`] bound the download (`max_archive_bytes`: HTTP bodies, which
//! are streamed to a file in the staging dir and never held in memory, and
//! git pack data) and what is written (`max_unpacked_bytes`,
//! `max_files`). Git blobs are checked against the remaining
//! `max_unpacked_bytes` from their object header before they are read.
//!
//! # URL policy
//!
//! Source URLs come from tenants. By default only `https://` is accepted:
//! `file://` (and local paths) would let a tenant read the controller's own
//! filesystem, and plain `http://` (or `git://`) lets it probe internal
//! addresses without TLS. [`Limits::allow_insecure`] (the operator's
//! `--allow-insecure-sources`) additionally accepts `http://` for both kinds
//! and `file://` for git. Anything else (`ssh://`, `git://`, local paths,
//! upper-case schemes) is always refused. Refusals are errors naming the URL
//! with any credentials redacted.

pub mod archive;
pub mod git;
pub mod http;

pub use archive::{
    MEMORY_BUNDLE_BYTES, create_bundle, unpack_bundle, unpack_bundle_in_memory, unpack_tar_gz,
};
pub use git::fetch_git;
pub use http::fetch_http;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, Weak};
use std::time::{Duration, Instant};

/// What one fetch may do: how much it may download and write, and which
/// URLs it may use.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Maximum size of the downloaded archive (compressed bytes), or of the
    /// git pack data received by one fetch.
    pub max_archive_bytes: u64,
    /// Maximum total size of the files written (sum of file sizes).
    pub max_unpacked_bytes: u64,
    /// Maximum number of entries written (directories, files and symlinks).
    pub max_files: usize,
    /// Also accept `http://` URLs (git and HTTP artifacts) and `file://` git
    /// URLs. Off by default: see the module docs ("URL policy"). Set by the
    /// operator (`--allow-insecure-sources`), never by a tenant.
    pub allow_insecure: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_archive_bytes: 64 * 1024 * 1024,
            max_unpacked_bytes: 256 * 1024 * 1024,
            max_files: 20_000,
            allow_insecure: false,
        }
    }
}

/// Cancellation of one fetch: cancelled once [`Cancel::cancel`] is called
/// (from any thread or task) or once its deadline has passed. Clones share
/// the same state and are cheap (one `Arc`).
///
/// The fetchers check it between network reads (every libgit2 callback, the
/// HTTP body stream), before every entry they write and while copying file
/// contents, and stop with [`SourceError::Cancelled`]. A cancelled fetch
/// never publishes its revision.
#[derive(Clone, Debug)]
pub struct Cancel {
    inner: Arc<CancelInner>,
}

#[derive(Debug)]
struct CancelInner {
    cancelled: AtomicBool,
    deadline: Option<Instant>,
    notify: tokio::sync::Notify,
}

impl Cancel {
    /// A token that is cancelled at `deadline` (never, when `None`) or when
    /// [`Cancel::cancel`] is called.
    pub fn new(deadline: Option<Instant>) -> Cancel {
        Cancel {
            inner: Arc::new(CancelInner {
                cancelled: AtomicBool::new(false),
                deadline,
                notify: tokio::sync::Notify::new(),
            }),
        }
    }

    /// Cancels the fetch(es) using this token (and every clone of it).
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }

    /// True after [`Cancel::cancel`] or once the deadline has passed.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
            || self.inner.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Resolves once the token is cancelled (immediately when it already is).
    pub async fn cancelled(&self) {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            // Registers the waiter before the check, so a cancel() between
            // the check and the await is not missed.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            match self.inner.deadline {
                Some(d) => {
                    tokio::select! {
                        _ = notified => {}
                        _ = tokio::time::sleep_until(d.into()) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Time left until the deadline (zero once passed); `None` without one.
    pub(crate) fn remaining(&self) -> Option<Duration> {
        self.inner
            .deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// Why the token is cancelled, for messages.
    pub(crate) fn reason(&self) -> &'static str {
        if self.inner.cancelled.load(Ordering::SeqCst) {
            "the fetch was cancelled"
        } else {
            "the fetch deadline passed"
        }
    }
}

impl Default for Cancel {
    /// A token without deadline, cancelled only by [`Cancel::cancel`].
    fn default() -> Self {
        Cancel::new(None)
    }
}

/// Decides, once, between the fetch publishing its revision and the caller
/// giving up on it: a fetch whose caller has returned (or dropped its
/// future) must not rename a revision into place afterwards, where it would
/// race a later fetch of the same key.
#[derive(Clone, Debug, Default)]
pub(crate) struct Gate(Arc<AtomicU8>);

const GATE_RUNNING: u8 = 0;
const GATE_COMMITTING: u8 = 1;
const GATE_ABANDONED: u8 = 2;

impl Gate {
    /// Called by the fetch before it publishes; false when the caller has
    /// already given up (the fetch must then discard its work).
    pub(crate) fn begin_commit(&self) -> bool {
        self.0
            .compare_exchange(
                GATE_RUNNING,
                GATE_COMMITTING,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok()
    }

    /// Called by the caller giving up; false when the fetch is already
    /// publishing (the caller should then wait for it, it is quick).
    pub(crate) fn abandon(&self) -> bool {
        self.0
            .compare_exchange(
                GATE_RUNNING,
                GATE_ABANDONED,
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok()
            || self.is_abandoned()
    }

    pub(crate) fn is_abandoned(&self) -> bool {
        self.0.load(Ordering::SeqCst) == GATE_ABANDONED
    }
}

/// Credentials and trust for a git server (read by the controller from
/// Secrets).
#[derive(Clone, Debug, Default)]
pub struct GitAuth {
    /// Basic auth user name (used with `password`).
    pub username: Option<String>,
    /// Basic auth password or personal access token.
    pub password: Option<String>,
    /// Sent as an `Authorization: Bearer <token>` header on every request.
    pub bearer_token: Option<String>,
    /// PEM certificate(s) trusted for the server's TLS certificate, in
    /// addition to the system roots (see [`fetch_git`] for how it is used).
    pub ca_pem: Option<Vec<u8>>,
    /// When the server asks for credentials and no username/password is
    /// given, ask git's credential helpers (`credential.helper` in git's
    /// configuration), as `git` would. For the CLI (`krmsync localize`);
    /// the controller never sets it (its credentials come from Secrets).
    pub credential_helpers: Option<CredentialHelpers>,
}

/// Which git configuration names the credential helpers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CredentialHelpers {
    /// The user's (system, global and XDG git configuration).
    UserConfig,
    /// One git configuration file.
    ConfigFile(PathBuf),
}

/// What to check out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GitReference {
    /// The remote's `HEAD`.
    DefaultBranch,
    /// `refs/heads/<name>`.
    Branch(String),
    /// `refs/tags/<name>` (annotated tags are peeled to their commit).
    Tag(String),
    /// A full 40-hex commit SHA.
    Commit(String),
}

impl std::fmt::Display for GitReference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GitReference::DefaultBranch => write!(f, "default branch (HEAD)"),
            GitReference::Branch(b) => write!(f, "branch '{b}'"),
            GitReference::Tag(t) => write!(f, "tag '{t}'"),
            GitReference::Commit(c) => write!(f, "commit '{c}'"),
        }
    }
}

/// A fetched, unpacked revision.
#[derive(Clone, Debug)]
pub struct Fetched {
    /// git: the full 40-hex commit SHA; http and bundle: `sha256:<hex of the
    /// archive bytes>`.
    pub revision: String,
    /// Directory holding the bundle's files (the root of the tree; the
    /// kustomization path is relative to it).
    pub dir: PathBuf,
    /// True when the revision was already present in the workspace and
    /// nothing was downloaded or unpacked.
    pub cached: bool,
}

/// Why a fetch failed. Every message names the URL, object or archive entry
/// at fault.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("git: {0}")]
    Git(String),
    #[error("http: {0}")]
    Http(String),
    #[error(
        "checksum mismatch for {url}: expected sha256:{expected}, got sha256:{actual} \
         (the artifact changed or the expected digest is wrong; nothing was unpacked)"
    )]
    Checksum {
        url: String,
        expected: String,
        actual: String,
    },
    #[error("archive: {0}")]
    Archive(String),
    #[error("limit exceeded: {0}")]
    Limit(String),
    #[error("io: {0}")]
    Io(String),
    /// The fetch was stopped by its [`Cancel`] (cancelled or past its
    /// deadline); the message names the URL or origin.
    #[error("cancelled: {0}")]
    Cancelled(String),
}

/// Which kind of fetch a URL is for (they accept different schemes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UrlKind {
    Git,
    Http,
}

/// Applies the URL policy (module docs) to `url`. The error message names the
/// URL (credentials redacted) and says what is accepted.
pub(crate) fn check_url(url: &str, kind: UrlKind, limits: &Limits) -> Result<(), String> {
    let shown = redact_url(url);
    // Schemes are compared exactly (lower case): libgit2 and reqwest must
    // see the same scheme this check saw.
    let scheme = url.split_once("://").map(|(s, _)| s);
    let insecure: &[&str] = match kind {
        UrlKind::Git => &["http", "file"],
        UrlKind::Http => &["http"],
    };
    match scheme {
        Some("https") => Ok(()),
        Some(s) if insecure.contains(&s) => {
            if limits.allow_insecure {
                Ok(())
            } else {
                Err(format!(
                    "{shown}: insecure source URL refused: only https:// is accepted \
                     ({s}:// could read the controller's files or reach internal addresses); \
                     an operator can allow it with --allow-insecure-sources"
                ))
            }
        }
        _ => {
            let allowed = if limits.allow_insecure {
                insecure
                    .iter()
                    .fold("https://".to_string(), |acc, s| format!("{acc}, {s}://"))
            } else {
                "https://".to_string()
            };
            Err(format!(
                "{shown}: unsupported URL scheme (use {allowed}; local paths, ssh:// and git:// \
                 are not supported)"
            ))
        }
    }
}

/// Prefix of the temporary directories used while assembling a revision.
const TMP_PREFIX: &str = ".tmp-";

/// Per-controller work directory: `<root>/<key>/<revision-dir>/tree/` holds
/// the files of one revision.
///
/// `key` identifies one Kustomization (the controller passes
/// `<namespace>_<name>`). After a successful fetch of a new revision, older
/// revision dirs of the same key are removed. Unpacking goes to a temp dir
/// inside `<root>/<key>/` and is renamed into place only when complete, so a
/// half-written tree is never seen and a failed fetch leaves the previous
/// revision intact.
///
/// Fetches of the same key must not run concurrently: callers hold
/// [`Workspace::key_lock`] for the whole fetch and unpack. Clones share the
/// locks.
#[derive(Clone, Debug)]
pub struct Workspace {
    root: PathBuf,
    locks: Arc<Locks>,
}

#[derive(Debug, Default)]
struct Locks {
    /// Per-key fetch locks, kept while anyone holds them.
    keys: std::sync::Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>>,
    /// Serializes publishing revisions (renames and removal of old ones), so
    /// that even a fetch whose caller stopped waiting mid-publish never
    /// interleaves with another publish.
    commit: std::sync::Mutex<()>,
}

impl Workspace {
    /// Creates `root` (and its parents) if needed, and removes temporary
    /// directories left behind by an interrupted process.
    pub fn new(root: impl Into<PathBuf>) -> std::io::Result<Workspace> {
        let root = root.into();
        std::fs::create_dir_all(&root)?;
        for key in std::fs::read_dir(&root)? {
            let key = key?;
            if !key.file_type()?.is_dir() {
                continue;
            }
            for entry in std::fs::read_dir(key.path())? {
                let entry = entry?;
                if entry.file_name().to_string_lossy().starts_with(TMP_PREFIX) {
                    remove_path(&entry.path())?;
                }
            }
        }
        Ok(Workspace {
            root,
            locks: Arc::default(),
        })
    }

    /// The fetch lock of `key`: the same `Arc` for the same key (as long as
    /// anyone holds it), shared by all clones of this workspace.
    ///
    /// A caller holds it for the whole fetch and unpack of `key`, so a later
    /// fetch never races an earlier one on the same directory. A fetch that
    /// runs on a blocking thread must take the guard with it (an owned guard
    /// moved into the closure): then, when the caller stops waiting (e.g. on
    /// a timeout), the lock is released only once the blocking work is over.
    ///
    /// ```
    /// # async fn example(ws: krmsync::source::Workspace, data: Vec<u8>)
    /// #     -> Result<(), Box<dyn std::error::Error>> {
    /// use krmsync::source::{Limits, unpack_bundle};
    /// let guard = ws.key_lock("apps_site").lock_owned().await;
    /// let fetched = tokio::task::spawn_blocking(move || {
    ///     let _guard = guard;
    ///     unpack_bundle(&ws, "apps_site", "ConfigMap apps/site", &data, &Limits::default())
    /// })
    /// .await??;
    /// # let _ = fetched; Ok(()) }
    /// ```
    pub fn key_lock(&self, key: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut keys = self
            .locks
            .keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(lock) = keys.get(key).and_then(Weak::upgrade) {
            return lock;
        }
        keys.retain(|_, w| w.strong_count() > 0);
        let lock = Arc::new(tokio::sync::Mutex::new(()));
        keys.insert(key.to_string(), Arc::downgrade(&lock));
        lock
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Removes everything stored for `key` (used when a Kustomization is
    /// deleted). Removing an absent key is not an error. Hold
    /// [`Workspace::key_lock`] while calling it, like for a fetch.
    pub fn remove(&self, key: &str) -> std::io::Result<()> {
        let dir = self
            .key_dir(key)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
        match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    /// `<root>/<key>`, refusing keys that are not a single safe path component.
    pub(crate) fn key_dir(&self, key: &str) -> Result<PathBuf, SourceError> {
        let ok = !key.is_empty()
            && key.len() <= 255
            && !key.starts_with('.')
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        if !ok {
            return Err(SourceError::Io(format!(
                "workspace key '{key}' is not a safe directory name \
                 (use letters, digits, '_', '-', '.'; not starting with '.')"
            )));
        }
        Ok(self.root.join(key))
    }

    /// Where the tree of `revision` for `key` is (or would be) kept; nothing
    /// is read or created.
    pub fn tree_path(&self, key: &str, revision: &str) -> Result<PathBuf, SourceError> {
        Ok(self
            .key_dir(key)?
            .join(revision_dir_name(revision))
            .join("tree"))
    }

    /// The tree of `revision` for `key` when it is already present.
    pub(crate) fn lookup(&self, key: &str, revision: &str) -> Result<Option<PathBuf>, SourceError> {
        let tree = self.tree_path(key, revision)?;
        Ok(tree.is_dir().then_some(tree))
    }

    /// A fresh temporary directory inside `<root>/<key>/`, removed on drop
    /// unless committed.
    pub(crate) fn staging(&self, key: &str) -> Result<Staging, SourceError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let key_dir = self.key_dir(key)?;
        std::fs::create_dir_all(&key_dir)
            .map_err(|e| io_err(format!("creating {}", key_dir.display()), e))?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let name = format!(
            "{TMP_PREFIX}{}-{}-{}",
            std::process::id(),
            nanos,
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let dir = key_dir.join(name);
        std::fs::create_dir(&dir).map_err(|e| io_err(format!("creating {}", dir.display()), e))?;
        Ok(Staging {
            dir,
            key_dir,
            done: false,
            locks: self.locks.clone(),
        })
    }
}

/// A temporary directory `<root>/<key>/.tmp-*` in which one revision is
/// assembled. Its `tree/` subdirectory receives the files.
#[derive(Debug)]
pub(crate) struct Staging {
    dir: PathBuf,
    key_dir: PathBuf,
    done: bool,
    locks: Arc<Locks>,
}

impl Staging {
    /// The staging directory itself (scratch space, e.g. a bare git repo).
    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }

    /// Where the revision's files go.
    pub(crate) fn tree(&self) -> PathBuf {
        self.dir.join("tree")
    }

    /// Renames the staging dir to `<root>/<key>/<revision-dir>`, removes
    /// everything in `<root>/<key>/` except the new revision and temp dirs,
    /// and returns the tree path. `scratch` names entries of the staging dir
    /// to delete before the rename (e.g. a git repository).
    pub(crate) fn commit(
        mut self,
        revision: &str,
        scratch: &[&str],
    ) -> Result<PathBuf, SourceError> {
        let locks = self.locks.clone();
        let _publishing = locks.commit.lock().unwrap_or_else(PoisonError::into_inner);
        for name in scratch {
            let p = self.dir.join(name);
            if p.symlink_metadata().is_ok() {
                remove_path(&p).map_err(|e| io_err(format!("removing {}", p.display()), e))?;
            }
        }
        let rev_name = revision_dir_name(revision);
        let target = self.key_dir.join(&rev_name);
        if target.join("tree").is_dir() {
            // Present already (e.g. written by an earlier, interrupted
            // cleanup); keep it and drop the staging copy.
            tracing::debug!(revision, dir = %target.display(), "revision already present");
        } else {
            if target.symlink_metadata().is_ok() {
                remove_path(&target)
                    .map_err(|e| io_err(format!("removing {}", target.display()), e))?;
            }
            std::fs::rename(&self.dir, &target).map_err(|e| {
                io_err(
                    format!("renaming {} to {}", self.dir.display(), target.display()),
                    e,
                )
            })?;
            self.done = true;
        }
        let entries = std::fs::read_dir(&self.key_dir)
            .map_err(|e| io_err(format!("listing {}", self.key_dir.display()), e))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name == rev_name || name.starts_with(TMP_PREFIX) {
                continue;
            }
            let p = entry.path();
            if let Err(e) = remove_path(&p) {
                tracing::warn!(path = %p.display(), error = %e, "removing old revision");
            } else {
                tracing::debug!(path = %p.display(), "removed old revision");
            }
        }
        Ok(target.join("tree"))
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.done
            && self.dir.symlink_metadata().is_ok()
            && let Err(e) = std::fs::remove_dir_all(&self.dir)
        {
            tracing::warn!(path = %self.dir.display(), error = %e, "removing staging dir");
        }
    }
}

/// A safe directory name for a revision: `sha256:<hex>` becomes
/// `sha256-<hex>`, a git SHA stays as is, anything else outside
/// `[A-Za-z0-9._-]` becomes `_`.
pub(crate) fn revision_dir_name(revision: &str) -> String {
    let mut s: String = revision
        .chars()
        .map(|c| match c {
            ':' => '-',
            c if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' => c,
            _ => '_',
        })
        .collect();
    if s.starts_with('.') || s.is_empty() {
        s.insert(0, 'r');
    }
    s
}

fn remove_path(p: &Path) -> std::io::Result<()> {
    let meta = p.symlink_metadata()?;
    if meta.is_dir() {
        std::fs::remove_dir_all(p)
    } else {
        std::fs::remove_file(p)
    }
}

pub(crate) fn io_err(what: String, e: std::io::Error) -> SourceError {
    SourceError::Io(format!("{what}: {e}"))
}

/// `url` with any `user:password@` userinfo replaced by `***@`, for messages
/// and logs.
pub(crate) fn redact_url(url: &str) -> String {
    if let Some(scheme_end) = url.find("://") {
        let rest = &url[scheme_end + 3..];
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        if let Some(at) = rest[..authority_end].rfind('@') {
            return format!("{}***@{}", &url[..scheme_end + 3], &rest[at + 1..]);
        }
    }
    url.to_string()
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Lower-case hex sha256 of `data` (the one implementation: sources,
/// stored manifests, catalogs, localize and apply all use it).
pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    hex(&sha2::Sha256::digest(data))
}

/// `sha256:<hex>` of `data`.
pub fn sha256_revision(data: &[u8]) -> String {
    format!("sha256:{}", sha256_hex(data))
}

/// [`Limits::default`] with `allow_insecure`, for tests against local
/// `file://` repositories and `http://` mock servers.
#[cfg(test)]
pub(crate) fn insecure_limits() -> Limits {
    Limits {
        allow_insecure: true,
        ..Limits::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_is_shared_by_clones_and_follows_the_deadline() {
        let c = Cancel::new(None);
        let c2 = c.clone();
        assert!(!c.is_cancelled() && !c2.is_cancelled());
        assert_eq!(c.remaining(), None);
        c2.cancel();
        assert!(c.is_cancelled());
        assert!(c.reason().contains("cancelled"));

        let past = Cancel::new(Some(Instant::now()));
        assert!(past.is_cancelled());
        assert!(past.reason().contains("deadline"));
        assert_eq!(past.remaining(), Some(Duration::ZERO));
        let future = Cancel::new(Some(Instant::now() + Duration::from_secs(3600)));
        assert!(!future.is_cancelled());
        assert!(future.remaining().unwrap() > Duration::from_secs(3500));
        assert!(!Cancel::default().is_cancelled());
    }

    #[tokio::test]
    async fn cancelled_resolves_on_cancel_and_at_the_deadline() {
        let c = Cancel::new(None);
        let waiter = tokio::spawn({
            let c = c.clone();
            async move { c.cancelled().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished());
        c.cancel();
        tokio::time::timeout(Duration::from_secs(2), waiter)
            .await
            .unwrap()
            .unwrap();
        c.cancelled().await;

        let t0 = Instant::now();
        let d = Cancel::new(Some(t0 + Duration::from_millis(200)));
        tokio::time::timeout(Duration::from_secs(2), d.cancelled())
            .await
            .unwrap();
        assert!(t0.elapsed() >= Duration::from_millis(200));
    }

    #[test]
    fn key_lock_is_one_arc_per_key() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::new(tmp.path()).unwrap();
        let a = ws.key_lock("a");
        let a2 = ws.clone().key_lock("a");
        let b = ws.key_lock("b");
        assert!(Arc::ptr_eq(&a, &a2));
        assert!(!Arc::ptr_eq(&a, &b));
        let held = a.try_lock().unwrap();
        assert!(a2.try_lock().is_err());
        assert!(ws.key_lock("a").try_lock().is_err());
        assert!(b.try_lock().is_ok());
        drop(held);
        assert!(ws.key_lock("a").try_lock().is_ok());
        // Entries nobody holds are dropped from the map.
        drop((a, a2, b));
        let _c = ws.key_lock("c");
        assert_eq!(ws.locks.keys.lock().unwrap().len(), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn key_lock_serializes_blocking_fetches_of_a_key() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::new(tmp.path()).unwrap();
        let inside = Arc::new(AtomicBool::new(false));
        let mut tasks = Vec::new();
        for _ in 0..3 {
            let (ws, inside) = (ws.clone(), inside.clone());
            tasks.push(tokio::spawn(async move {
                let guard = ws.key_lock("k").lock_owned().await;
                tokio::task::spawn_blocking(move || {
                    let _guard = guard;
                    assert!(!inside.swap(true, Ordering::SeqCst), "two fetches at once");
                    std::thread::sleep(Duration::from_millis(50));
                    inside.store(false, Ordering::SeqCst);
                })
                .await
                .unwrap();
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    }

    #[test]
    fn gate_lets_exactly_one_side_win() {
        let g = Gate::default();
        assert!(g.begin_commit());
        assert!(!g.abandon(), "publishing already started");
        let g = Gate::default();
        assert!(g.abandon());
        assert!(g.is_abandoned());
        assert!(!g.begin_commit());
        assert!(g.abandon(), "abandoning twice is fine");
    }

    #[test]
    fn url_policy_accepts_only_https_by_default() {
        let secure = Limits::default();
        assert!(!secure.allow_insecure);
        let insecure = insecure_limits();
        for kind in [UrlKind::Git, UrlKind::Http] {
            assert!(check_url("https://example.com/r", kind, &secure).is_ok());
            let err = check_url("http://u:pw@10.0.0.1/r", kind, &secure).unwrap_err();
            assert!(
                err.contains("http://***@10.0.0.1/r")
                    && !err.contains("pw")
                    && err.contains("--allow-insecure-sources"),
                "{err}"
            );
            assert!(check_url("http://10.0.0.1/r", kind, &insecure).is_ok());
            for url in [
                "git://10.0.0.1/r",
                "ssh://example.com/r",
                "/etc",
                "../repo",
                "HTTPS://example.com/r",
            ] {
                for l in [&secure, &insecure] {
                    let err = check_url(url, kind, l).unwrap_err();
                    assert!(
                        err.contains(url) && err.contains("unsupported URL scheme"),
                        "{err}"
                    );
                }
            }
        }
        let err = check_url("file:///etc", UrlKind::Git, &secure).unwrap_err();
        assert!(
            err.contains("file:///etc") && err.contains("--allow-insecure-sources"),
            "{err}"
        );
        assert!(check_url("file:///srv/repo", UrlKind::Git, &insecure).is_ok());
        let err = check_url("file:///etc", UrlKind::Http, &insecure).unwrap_err();
        assert!(err.contains("unsupported URL scheme"), "{err}");
    }

    #[test]
    fn revision_dir_names_are_safe() {
        assert_eq!(revision_dir_name("sha256:abc"), "sha256-abc");
        assert_eq!(revision_dir_name("0123abcd"), "0123abcd");
        assert_eq!(revision_dir_name("../x"), "r.._x");
        assert_eq!(revision_dir_name("a/b"), "a_b");
    }

    #[test]
    fn redacts_userinfo() {
        assert_eq!(
            redact_url("https://u:p@example.com/r.git"),
            "https://***@example.com/r.git"
        );
        assert_eq!(
            redact_url("https://example.com/a@b"),
            "https://example.com/a@b"
        );
        assert_eq!(redact_url("file:///tmp/x"), "file:///tmp/x");
    }

    #[test]
    fn workspace_keys_are_checked_and_remove_is_idempotent() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::new(tmp.path().join("ws")).unwrap();
        assert!(ws.root().is_dir());
        assert!(ws.key_dir("../evil").is_err());
        assert!(ws.key_dir("a/b").is_err());
        assert!(ws.key_dir(".hidden").is_err());
        assert!(ws.key_dir("").is_err());
        assert!(ws.key_dir("apps_site").is_ok());
        ws.remove("apps_site").unwrap();
        std::fs::create_dir_all(ws.root().join("apps_site/rev/tree")).unwrap();
        ws.remove("apps_site").unwrap();
        assert!(!ws.root().join("apps_site").exists());
        assert!(ws.remove("../x").is_err());
    }

    #[test]
    fn new_removes_stale_staging_dirs_and_failed_staging_is_cleaned() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("ws");
        std::fs::create_dir_all(root.join("k/.tmp-1-2-3/tree")).unwrap();
        std::fs::create_dir_all(root.join("k/sha256-aa/tree")).unwrap();
        let ws = Workspace::new(&root).unwrap();
        assert!(!root.join("k/.tmp-1-2-3").exists());
        assert!(root.join("k/sha256-aa/tree").is_dir());
        let st = ws.staging("k").unwrap();
        let p = st.path().to_path_buf();
        assert!(p.is_dir());
        drop(st);
        assert!(!p.exists());
        assert!(root.join("k/sha256-aa/tree").is_dir());
    }
}
