//! Git sources (libgit2, blocking).
//!
//! One fetch works in a temporary bare repository inside the workspace's
//! staging dir:
//!
//! 1. An ls-remote style lookup (a `download` whose only refspec matches no
//!    remote ref, so the refs are listed but no pack is transferred; this
//!    goes through `FetchOptions`, so bearer headers, credentials and the CA
//!    check apply to it as well).
//! 2. If the resolved commit is already in the workspace, return it cached.
//! 3. Otherwise fetch the ref with depth 1; when libgit2 refuses shallow
//!    fetches (the local `file://` transport does), fetch in full.
//! 4. Write the commit's tree through [`SafeWriter`] (no `.git`, same safety
//!    checks and limits as archives; submodules are skipped; each blob's
//!    size is checked from its object header before it is read), drop the
//!    repository and rename the staging dir into place.
//!
//! All of this runs on a thread of its own so that [`fetch_git`] can return
//! as soon as its [`Cancel`] fires, even while libgit2 is blocked in a
//! socket read (see "Timeouts and cancellation" on [`fetch_git`]).
//!
//! # TLS trust (`GitAuth::ca_pem`)
//!
//! git2 0.21 exposes a custom CA only as a process-global, `unsafe` libgit2
//! option, so krmsync uses the `certificate_check` callback instead. When a
//! CA is given, the server's leaf certificate (as received by libgit2) is
//! accepted when
//!
//! * it is byte-identical to a certificate in `ca_pem` (a pinned or
//!   self-signed server certificate), or
//! * a separate TLS handshake with the same host and port, made by rustls
//!   (via reqwest) trusting only `ca_pem`, succeeds (chain and host name
//!   verified) and the peer presents that same leaf certificate.
//!
//! Otherwise libgit2's own verification against the system roots decides.
//! libgit2's handshake proves the server holds the leaf's private key; the
//! rustls handshake proves that leaf is valid for the host under the CA.

use std::cell::{Cell, RefCell};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use git2::{
    AutotagOption, CertificateCheckStatus, Cred, CredentialType, FetchOptions, ObjectType, Oid,
    ProxyOptions, RemoteCallbacks, Repository,
};

use super::archive::SafeWriter;
use super::{
    Cancel, CredentialHelpers, Fetched, Gate, GitAuth, GitReference, Limits, SourceError, UrlKind,
    Workspace, check_url, redact_url,
};

/// The local ref a fetched commit is stored under in the scratch repository.
const TARGET_REF: &str = "refs/krmsync/target";
/// A refspec matching no remote ref: makes `download` list refs only.
const LS_REMOTE_REFSPEC: &str = "refs/krmsync/ls-remote-only";

/// libgit2's connect timeout (see [`set_git_network_timeouts`]).
const GIT_CONNECT_TIMEOUT_MS: i32 = 30_000;
/// libgit2's timeout of one socket read or write (see
/// [`set_git_network_timeouts`]).
const GIT_IO_TIMEOUT_MS: i32 = 60_000;
/// How often the calling thread looks at its [`Cancel`] while the fetch
/// thread works.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// Fetch threads whose caller gave up (cancelled) and that are still inside
/// libgit2; they stop at libgit2's next callback or socket timeout.
static ABANDONED: AtomicUsize = AtomicUsize::new(0);

/// Gives libgit2 network timeouts, once per process: without them a server
/// that accepts a connection and never answers blocks a fetch forever.
/// Connects time out after 30 s, and every socket read or write after 60 s
/// without progress (these apply to every libgit2 socket in the process).
fn set_git_network_timeouts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: these git2 setters are `unsafe` because they write
        // libgit2's process-global `int`s (read when a socket stream is
        // created) without synchronization. `Once` makes this the only
        // write, and it happens before any libgit2 socket of this process
        // exists: every git network access in krmsync goes through
        // `fetch_git`, which calls this function (and so waits for this
        // closure to finish) before it starts one. Nothing else in the
        // process reads or writes these options.
        let res = unsafe {
            git2::opts::set_server_connect_timeout_in_milliseconds(GIT_CONNECT_TIMEOUT_MS)
                .and_then(|()| git2::opts::set_server_timeout_in_milliseconds(GIT_IO_TIMEOUT_MS))
        };
        if let Err(e) = res {
            tracing::warn!(error = %e, "setting libgit2 network timeouts");
        }
    });
}

/// Blocking (libgit2): resolves `reference` on the remote (an ls-remote style
/// lookup first); if that commit is already in the workspace returns it with
/// `cached = true` without fetching; otherwise fetches shallowly (depth 1)
/// where the transport supports it (a full fetch when libgit2 refuses
/// shallow, e.g. for `file://`), writes the commit's tree into the workspace
/// (no `.git` dir) and returns it.
///
/// `Commit(sha)` needs a full 40-hex SHA; a commit already present is
/// returned without contacting the server. It is fetched by id, and when the
/// server refuses that, all branches and tags are fetched and the commit
/// looked up (an error names it when absent). `DefaultBranch` is the
/// remote's `HEAD`.
///
/// URLs: `https://`; `http://` and `file://` only with
/// [`Limits::allow_insecure`] (see the URL policy in the module docs of
/// [`crate::source`]); the URL is checked before anything else is done.
/// Auth: basic (username/password) or a bearer token (sent as an
/// `Authorization: Bearer` header). For `ca_pem` see the module docs.
///
/// # Timeouts and cancellation
///
/// libgit2 connects time out after 30 s and socket reads/writes after 60 s
/// without progress (process-wide settings made on the first call). The
/// libgit2 work runs on its own thread; this function returns
/// [`SourceError::Cancelled`] (naming the URL) within about 50 ms of
/// `cancel` being cancelled (or its deadline passing), even while libgit2
/// is blocked in a socket read. Every libgit2 callback (credentials,
/// certificate check, transfer and sideband progress, ref updates) and the
/// tree-writing loop check `cancel` too, so the abandoned thread stops at
/// the next of them or at the socket timeout, and it never publishes a
/// revision once this function has returned.
///
/// Callers must not run two fetches of the same `key` at once: hold
/// [`Workspace::key_lock`] for the call.
pub fn fetch_git(
    ws: &Workspace,
    key: &str,
    url: &str,
    reference: &GitReference,
    auth: Option<&GitAuth>,
    limits: &Limits,
    cancel: &Cancel,
) -> Result<Fetched, SourceError> {
    let shown = redact_url(url);
    let ctx = format!("fetching {shown} {reference}");
    check_url(url, UrlKind::Git, limits).map_err(|e| SourceError::Git(format!("{ctx}: {e}")))?;
    let wanted_commit = match reference {
        GitReference::Commit(sha) => {
            let sha = sha.to_ascii_lowercase();
            if sha.len() != 40 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(SourceError::Git(format!(
                    "{ctx}: a commit must be given as a full 40-hex SHA"
                )));
            }
            if let Some(dir) = ws.lookup(key, &sha)? {
                tracing::debug!(key, url = %shown, revision = %sha, "git commit already present");
                return Ok(Fetched {
                    revision: sha,
                    dir,
                    cached: true,
                });
            }
            Some(sha)
        }
        _ => None,
    };
    if cancel.is_cancelled() {
        return Err(SourceError::Cancelled(format!(
            "{ctx}: {} before it started",
            cancel.reason()
        )));
    }
    set_git_network_timeouts();

    let job = Job {
        ws: ws.clone(),
        key: key.to_string(),
        url: url.to_string(),
        reference: reference.clone(),
        auth: auth.cloned(),
        limits: *limits,
        cancel: cancel.clone(),
        gate: Gate::default(),
        ctx: ctx.clone(),
        wanted_commit,
    };
    let gate = job.gate.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("krmsync-git-fetch".into())
        .spawn(move || {
            let gate = job.gate.clone();
            let res = job.run();
            if gate.is_abandoned() {
                ABANDONED.fetch_sub(1, Ordering::SeqCst);
            }
            let _ = tx.send(res);
        })
        .map_err(|e| SourceError::Io(format!("{ctx}: starting the fetch thread: {e}")))?;
    loop {
        match rx.recv_timeout(CANCEL_POLL) {
            Ok(res) => return res,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(SourceError::Git(format!(
                    "{ctx}: the fetch thread panicked"
                )));
            }
            Err(RecvTimeoutError::Timeout) if cancel.is_cancelled() => {
                // Counted before the gate flips, so the thread's decrement
                // (once it sees the gate abandoned) always comes after.
                ABANDONED.fetch_add(1, Ordering::SeqCst);
                if gate.abandon() {
                    let n = ABANDONED.load(Ordering::SeqCst);
                    tracing::debug!(
                        key,
                        url = %shown,
                        abandoned_threads = n,
                        "git fetch cancelled; its thread stops at libgit2's next callback or socket timeout"
                    );
                    return Err(SourceError::Cancelled(format!(
                        "{ctx}: {}",
                        cancel.reason()
                    )));
                }
                ABANDONED.fetch_sub(1, Ordering::SeqCst);
                // The revision is being published: that is quick, wait.
                return rx.recv().unwrap_or_else(|_| {
                    Err(SourceError::Git(format!(
                        "{ctx}: the fetch thread panicked"
                    )))
                });
            }
            Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

/// Everything the fetch thread owns.
struct Job {
    ws: Workspace,
    key: String,
    url: String,
    reference: GitReference,
    auth: Option<GitAuth>,
    limits: Limits,
    cancel: Cancel,
    gate: Gate,
    ctx: String,
    wanted_commit: Option<String>,
}

impl Job {
    fn run(self) -> Result<Fetched, SourceError> {
        let Job {
            ws,
            key,
            url,
            reference,
            auth,
            limits,
            cancel,
            gate,
            ctx,
            wanted_commit,
        } = self;
        let (key, url, ctx) = (key.as_str(), url.as_str(), ctx.as_str());
        let shown = redact_url(url);
        let staging = ws.staging(key)?;
        let repo_dir = staging.path().join("repo");
        let tree_dir = staging.tree();
        let session = Session::new(url, auth.as_ref(), &limits, ctx, &cancel)?;
        let revision = {
            let repo = Repository::init_bare(&repo_dir).map_err(|e| {
                SourceError::Git(format!("{ctx}: creating scratch repository: {e}"))
            })?;
            let commit = match wanted_commit {
                Some(sha) => session.fetch_commit(&repo, &sha)?,
                None => {
                    let (refname, listed) = session.ls_remote(&repo, &reference)?;
                    if let Some(dir) = ws.lookup(key, &listed.to_string())? {
                        tracing::debug!(key, url = %shown, %reference, revision = %listed, "git revision unchanged");
                        return Ok(Fetched {
                            revision: listed.to_string(),
                            dir,
                            cached: true,
                        });
                    }
                    session.fetch_ref(&repo, &refname)?
                }
            };
            let revision = commit.to_string();
            if let Some(dir) = ws.lookup(key, &revision)? {
                return Ok(Fetched {
                    revision,
                    dir,
                    cached: true,
                });
            }
            checkout(&repo, commit, &tree_dir, &limits, ctx, &cancel)?;
            revision
        };
        if cancel.is_cancelled() || !gate.begin_commit() {
            return Err(SourceError::Cancelled(format!(
                "{ctx}: {} before the revision was stored",
                cancel.reason()
            )));
        }
        let dir = staging.commit(&revision, &["repo"])?;
        tracing::info!(key, url = %shown, %reference, revision, "fetched git revision");
        Ok(Fetched {
            revision,
            dir,
            cached: false,
        })
    }
}

/// Connection settings and per-fetch state shared by the callbacks.
struct Session<'a> {
    url: &'a str,
    auth: Option<&'a GitAuth>,
    limits: &'a Limits,
    ctx: &'a str,
    cancel: &'a Cancel,
    ca_der: Vec<Vec<u8>>,
    header: Option<String>,
    auth_attempts: Cell<u32>,
    limit_hit: Cell<bool>,
    cert_problem: RefCell<Option<String>>,
}

impl<'a> Session<'a> {
    fn new(
        url: &'a str,
        auth: Option<&'a GitAuth>,
        limits: &'a Limits,
        ctx: &'a str,
        cancel: &'a Cancel,
    ) -> Result<Session<'a>, SourceError> {
        let ca_der = match auth.and_then(|a| a.ca_pem.as_deref()) {
            Some(pem) => {
                let certs = pem_certificates(pem);
                if certs.is_empty() {
                    return Err(SourceError::Git(format!(
                        "{ctx}: the CA bundle contains no PEM CERTIFICATE block"
                    )));
                }
                certs
            }
            None => Vec::new(),
        };
        let header = auth
            .and_then(|a| a.bearer_token.as_deref())
            .map(|t| format!("Authorization: Bearer {}", t.trim()));
        Ok(Session {
            url,
            auth,
            limits,
            ctx,
            cancel,
            ca_der,
            header,
            auth_attempts: Cell::new(0),
            limit_hit: Cell::new(false),
            cert_problem: RefCell::new(None),
        })
    }

    fn options(&self, depth: i32) -> FetchOptions<'_> {
        // Every callback that can abort checks the cancellation token first
        // (returning false or an error makes libgit2 stop the operation).
        let cancel = self.cancel;
        let mut cb = RemoteCallbacks::new();
        cb.credentials(|url, username_from_url, allowed| {
            if cancel.is_cancelled() {
                return Err(git2::Error::from_str(cancel.reason()));
            }
            let n = self.auth_attempts.get() + 1;
            self.auth_attempts.set(n);
            let basic = self
                .auth
                .and_then(|a| a.username.as_deref().zip(a.password.as_deref()));
            let helpers = self.auth.and_then(|a| a.credential_helpers.as_ref());
            match (basic, helpers) {
                (Some((user, pass)), _)
                    if n == 1 && allowed.contains(CredentialType::USER_PASS_PLAINTEXT) =>
                {
                    Cred::userpass_plaintext(user, pass)
                }
                (Some(_), _) if n > 1 => Err(git2::Error::from_str(
                    "authentication failed: the server rejected the username/password",
                )),
                (None, Some(h))
                    if n == 1 && allowed.contains(CredentialType::USER_PASS_PLAINTEXT) =>
                {
                    let config = match h {
                        CredentialHelpers::UserConfig => git2::Config::open_default(),
                        CredentialHelpers::ConfigFile(p) => git2::Config::open(p),
                    }?;
                    Cred::credential_helper(&config, url, username_from_url).map_err(|_| {
                        git2::Error::from_str(
                            "authentication required and git's credential helpers gave no \
                             username/password for this URL",
                        )
                    })
                }
                (None, Some(_)) if n > 1 => Err(git2::Error::from_str(
                    "authentication failed: the server rejected the credentials from git's credential helper",
                )),
                _ => Err(git2::Error::from_str(&format!(
                    "authentication required (user '{}'); configure a username/password or a bearer token",
                    username_from_url.unwrap_or("")
                ))),
            }
        });
        let limit = self.limits.max_archive_bytes;
        cb.transfer_progress(move |stats| {
            if stats.received_bytes() as u64 > limit {
                self.limit_hit.set(true);
                false
            } else {
                !cancel.is_cancelled()
            }
        });
        cb.sideband_progress(move |_| !cancel.is_cancelled());
        cb.update_tips(move |_, _, _| !cancel.is_cancelled());
        cb.certificate_check(|cert, host| {
            if cancel.is_cancelled() {
                return Err(git2::Error::from_str(cancel.reason()));
            }
            if self.ca_der.is_empty() {
                return Ok(CertificateCheckStatus::CertificatePassthrough);
            }
            let Some(x509) = cert.as_x509() else {
                return Ok(CertificateCheckStatus::CertificatePassthrough);
            };
            let leaf = x509.data();
            if self.ca_der.iter().any(|c| c.as_slice() == leaf) {
                return Ok(CertificateCheckStatus::CertificateOk);
            }
            match verify_with_ca(self.url, host, leaf, self.auth, cancel) {
                Ok(()) => Ok(CertificateCheckStatus::CertificateOk),
                Err(why) => {
                    tracing::debug!(host, why, "custom CA did not verify; using system roots");
                    *self.cert_problem.borrow_mut() = Some(why);
                    Ok(CertificateCheckStatus::CertificatePassthrough)
                }
            }
        });
        let mut proxy = ProxyOptions::new();
        proxy.auto();
        let mut opts = FetchOptions::new();
        opts.remote_callbacks(cb);
        opts.proxy_options(proxy);
        opts.download_tags(AutotagOption::None);
        opts.update_fetchhead(false);
        if depth > 0 {
            opts.depth(depth);
        }
        if let Some(h) = &self.header {
            opts.custom_headers(&[h.as_str()]);
        }
        opts
    }

    /// Turns a libgit2 error into a message a user can act on.
    fn error(&self, what: &str, e: git2::Error) -> SourceError {
        if self.limit_hit.get() {
            return SourceError::Limit(format!(
                "{}: {what}: received more than {} bytes of pack data (max_archive_bytes)",
                self.ctx, self.limits.max_archive_bytes
            ));
        }
        if self.cancel.is_cancelled() {
            return SourceError::Cancelled(format!(
                "{}: {what}: {}",
                self.ctx,
                self.cancel.reason()
            ));
        }
        let mut msg = format!("{}: {what}: {}", self.ctx, e.message());
        if e.code() == git2::ErrorCode::Auth
            || e.message().contains("authentication")
            || e.message().contains("401")
        {
            if !msg.contains("authentication") {
                msg.push_str(" (authentication failed; check the credentials Secret)");
            }
        } else if e.code() == git2::ErrorCode::Certificate || e.class() == git2::ErrorClass::Ssl {
            msg.push_str(" (TLS certificate not trusted; set a CA certificate for this server)");
            if let Some(p) = self.cert_problem.borrow().as_deref() {
                msg.push_str(&format!("; custom CA check: {p}"));
            }
        }
        SourceError::Git(msg)
    }

    /// Lists the remote's refs and resolves `reference` to (ref to fetch, commit id).
    fn ls_remote(
        &self,
        repo: &Repository,
        reference: &GitReference,
    ) -> Result<(String, Oid), SourceError> {
        let mut remote = repo
            .remote_anonymous(self.url)
            .map_err(|e| self.error("configuring the remote", e))?;
        remote
            .download(&[LS_REMOTE_REFSPEC], Some(&mut self.options(0)))
            .map_err(|e| self.error("listing remote refs", e))?;
        let heads: Vec<(String, Oid)> = remote
            .list()
            .map_err(|e| self.error("listing remote refs", e))?
            .iter()
            .map(|h| (h.name().to_string(), h.oid()))
            .collect();
        let find = |name: &str| heads.iter().find(|(n, _)| n == name).map(|(_, o)| *o);
        let not_found = |what: String| {
            SourceError::Git(format!("{}: {what} not found on the remote", self.ctx))
        };
        match reference {
            GitReference::DefaultBranch => {
                let oid = find("HEAD").ok_or_else(|| not_found("HEAD".into()))?;
                let name = remote
                    .default_branch()
                    .ok()
                    .and_then(|b| b.as_str().ok().map(str::to_string))
                    .filter(|b| find(b).is_some())
                    .unwrap_or_else(|| "HEAD".to_string());
                Ok((name, oid))
            }
            GitReference::Branch(b) => {
                let name = format!("refs/heads/{b}");
                let oid = find(&name).ok_or_else(|| not_found(format!("branch '{b}' ({name})")))?;
                Ok((name, oid))
            }
            GitReference::Tag(t) => {
                let name = format!("refs/tags/{t}");
                let oid = find(&format!("{name}^{{}}"))
                    .or_else(|| find(&name))
                    .ok_or_else(|| not_found(format!("tag '{t}' ({name})")))?;
                Ok((name, oid))
            }
            GitReference::Commit(c) => Err(SourceError::Git(format!(
                "{}: internal: commit '{c}' has no ref to list",
                self.ctx
            ))),
        }
    }

    /// Fetches `refspecs` shallowly, or in full when shallow is refused.
    fn fetch(&self, repo: &Repository, refspecs: &[&str]) -> Result<(), git2::Error> {
        let mut remote = repo.remote_anonymous(self.url)?;
        if self.url.starts_with("file://") {
            // libgit2's local transport never supports shallow fetches.
            return remote.fetch(refspecs, Some(&mut self.options(0)), None);
        }
        match remote.fetch(refspecs, Some(&mut self.options(1)), None) {
            Err(e)
                if e.message().to_ascii_lowercase().contains("shallow")
                    && !self.limit_hit.get()
                    && !self.cancel.is_cancelled() =>
            {
                tracing::debug!(url = %redact_url(self.url), error = %e.message(), "shallow fetch refused, fetching in full");
                let mut remote = repo.remote_anonymous(self.url)?;
                remote.fetch(refspecs, Some(&mut self.options(0)), None)
            }
            other => other,
        }
    }

    fn fetch_ref(&self, repo: &Repository, refname: &str) -> Result<Oid, SourceError> {
        let spec = format!("+{refname}:{TARGET_REF}");
        self.fetch(repo, &[spec.as_str()])
            .map_err(|e| self.error("fetching", e))?;
        repo.find_reference(TARGET_REF)
            .and_then(|r| r.peel_to_commit())
            .map(|c| c.id())
            .map_err(|e| self.error(&format!("resolving fetched {refname} to a commit"), e))
    }

    fn fetch_commit(&self, repo: &Repository, sha: &str) -> Result<Oid, SourceError> {
        let oid = Oid::from_str(sha).map_err(|e| self.error("parsing the commit id", e))?;
        let spec = format!("{sha}:{TARGET_REF}");
        match self.fetch(repo, &[spec.as_str()]) {
            Ok(()) => {}
            Err(e)
                if self.limit_hit.get()
                    || self.cancel.is_cancelled()
                    || e.code() == git2::ErrorCode::Auth =>
            {
                return Err(self.error("fetching", e));
            }
            Err(e) => {
                tracing::debug!(sha, error = %e.message(), "fetching by commit id failed; fetching all branches and tags");
                self.fetch(
                    repo,
                    &[
                        "+refs/heads/*:refs/krmsync/heads/*",
                        "+refs/tags/*:refs/krmsync/tags/*",
                    ],
                )
                .map_err(|e| self.error("fetching all branches and tags", e))?;
            }
        }
        match repo.find_object(oid, None).and_then(|o| o.peel_to_commit()) {
            Ok(c) => Ok(c.id()),
            Err(_) => Err(SourceError::Git(format!(
                "{}: commit {sha} not found on the remote (not fetchable by id and not reachable from any branch or tag)",
                self.ctx
            ))),
        }
    }
}

/// Writes the tree of `commit` into `dest` (which must not exist yet).
fn checkout(
    repo: &Repository,
    commit: Oid,
    dest: &Path,
    limits: &Limits,
    ctx: &str,
    cancel: &Cancel,
) -> Result<(), SourceError> {
    let git_err = |what: &str, e: git2::Error| SourceError::Git(format!("{ctx}: {what}: {e}"));
    let tree = repo
        .find_commit(commit)
        .and_then(|c| c.tree())
        .map_err(|e| git_err(&format!("reading the tree of commit {commit}"), e))?;
    let odb = repo
        .odb()
        .map_err(|e| git_err("opening the object database", e))?;
    let origin = format!("{ctx}: commit {commit}");
    let mut w = SafeWriter::new(dest, limits, &origin)?.with_cancel(cancel);
    write_tree(repo, &odb, &tree, Path::new(""), &mut w, ctx)
}

/// Longest symlink target accepted (Linux's `PATH_MAX`).
const MAX_LINK_TARGET: usize = 4096;

/// Writes `tree` below `rel`. Each blob's size is read from its object
/// header and checked against what is left of `max_unpacked_bytes` before
/// any of its content is inflated; content is then streamed into the writer
/// (which caps it again). libgit2 can stream only loose objects: a packed
/// blob (the usual case after a fetch) is inflated in memory, which the
/// header check bounds by the remaining limit.
fn write_tree(
    repo: &Repository,
    odb: &git2::Odb<'_>,
    tree: &git2::Tree<'_>,
    rel: &Path,
    w: &mut SafeWriter,
    ctx: &str,
) -> Result<(), SourceError> {
    for entry in tree.iter() {
        let name = OsStr::from_bytes(entry.name_bytes());
        if name == ".git" {
            continue;
        }
        let path: PathBuf = rel.join(name);
        w.check_cancel(&path)?;
        if entry.name_bytes().contains(&b'/') {
            return Err(SourceError::Archive(format!(
                "{ctx}: tree entry '{}' has a '/' in its name",
                path.display()
            )));
        }
        let obj_err = |e: git2::Error| {
            SourceError::Git(format!(
                "{ctx}: reading object of '{}': {e}",
                path.display()
            ))
        };
        let mode = entry.filemode();
        match entry.kind() {
            Some(ObjectType::Tree) => {
                w.dir(&path)?;
                let sub = entry
                    .to_object(repo)
                    .and_then(|o| o.peel_to_tree())
                    .map_err(obj_err)?;
                write_tree(repo, odb, &sub, &path, w, ctx)?;
            }
            Some(ObjectType::Blob) => {
                let (size, _) = odb.read_header(entry.id()).map_err(obj_err)?;
                if mode == 0o120000 {
                    if size > MAX_LINK_TARGET {
                        return Err(SourceError::Archive(format!(
                            "{ctx}: tree entry '{}' refused: symlink target of {size} bytes \
                             (at most {MAX_LINK_TARGET})",
                            path.display()
                        )));
                    }
                    let blob = repo.find_blob(entry.id()).map_err(obj_err)?;
                    let target = OsStr::from_bytes(blob.content());
                    w.symlink(&path, Path::new(target))?;
                } else {
                    w.check_declared_size(&path, size as u64)?;
                    let executable = mode & 0o111 != 0;
                    match odb.reader(entry.id()) {
                        Ok((mut stream, _, _)) => w.file(&path, executable, &mut stream)?,
                        Err(_) => {
                            let blob = repo.find_blob(entry.id()).map_err(obj_err)?;
                            w.file(&path, executable, &mut blob.content())?;
                        }
                    }
                }
            }
            Some(ObjectType::Commit) => {
                tracing::warn!(path = %path.display(), "skipping git submodule (not supported)");
            }
            other => {
                return Err(SourceError::Archive(format!(
                    "{ctx}: tree entry '{}' has unsupported type {other:?}",
                    path.display()
                )));
            }
        }
    }
    Ok(())
}

/// The DER bodies of the `CERTIFICATE` blocks in `pem`.
fn pem_certificates(pem: &[u8]) -> Vec<Vec<u8>> {
    use base64::Engine;
    let text = String::from_utf8_lossy(pem);
    let mut out = Vec::new();
    let mut body: Option<String> = None;
    for line in text.lines() {
        let line = line.trim();
        if line == "-----BEGIN CERTIFICATE-----" {
            body = Some(String::new());
        } else if line == "-----END CERTIFICATE-----" {
            if let Some(b) = body.take()
                && let Ok(der) = base64::engine::general_purpose::STANDARD.decode(b.as_bytes())
            {
                out.push(der);
            }
        } else if let Some(b) = body.as_mut() {
            b.push_str(line);
        }
    }
    out
}

/// Verifies `leaf` for `host` against the CA in `auth` with a separate
/// rustls handshake (see the module docs). Runs on its own thread so it is
/// safe whatever runtime context the caller is in.
fn verify_with_ca(
    url: &str,
    host: &str,
    leaf: &[u8],
    auth: Option<&GitAuth>,
    cancel: &Cancel,
) -> Result<(), String> {
    let pem = auth
        .and_then(|a| a.ca_pem.clone())
        .ok_or_else(|| "no CA configured".to_string())?;
    let port = url
        .strip_prefix("https://")
        .and_then(|rest| rest.split(['/', '?', '#']).next())
        .map(|authority| authority.rsplit('@').next().unwrap_or(authority))
        .and_then(|hostport| {
            if hostport.ends_with(']') {
                None
            } else {
                hostport.rsplit_once(':').map(|(_, p)| p.to_string())
            }
        })
        .unwrap_or_else(|| "443".to_string());
    let probe = if host.contains(':') {
        format!("https://[{host}]:{port}/")
    } else {
        format!("https://{host}:{port}/")
    };
    let leaf = leaf.to_vec();
    // At most 30 s, and never past the fetch's deadline.
    let timeout = cancel
        .remaining()
        .map_or(Duration::from_secs(30), |r| r.min(Duration::from_secs(30)));
    let handle = std::thread::spawn(move || -> Result<(), String> {
        let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| e.to_string())?;
        let mut builder = reqwest::Client::builder()
            .tls_built_in_root_certs(false)
            .tls_info(true)
            .timeout(timeout);
        for c in certs {
            builder = builder.add_root_certificate(c);
        }
        let client = builder.build().map_err(|e| e.to_string())?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(async move {
            let resp = client.get(&probe).send().await.map_err(|e| {
                format!("TLS handshake with {probe} trusting only the CA failed: {e}")
            })?;
            let seen = resp
                .extensions()
                .get::<reqwest::tls::TlsInfo>()
                .and_then(|i| i.peer_certificate())
                .map(<[u8]>::to_vec);
            if seen.as_deref() == Some(leaf.as_slice()) {
                Ok(())
            } else {
                Err(format!("{probe} presented a different certificate"))
            }
        })
    });
    handle
        .join()
        .map_err(|_| "certificate verification thread failed".to_string())?
}

#[cfg(test)]
mod tests {
    use super::super::insecure_limits;
    use super::*;
    use git2::Signature;
    use std::fs;

    struct Fixture {
        _tmp: tempfile::TempDir,
        repo: Repository,
        work: PathBuf,
        url: String,
        ws: Workspace,
    }

    fn fixture() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("upstream");
        let mut opts = git2::RepositoryInitOptions::new();
        opts.initial_head("main");
        let repo = Repository::init_opts(&work, &opts).unwrap();
        let url = format!("file://{}", work.display());
        let ws = Workspace::new(tmp.path().join("ws")).unwrap();
        Fixture {
            _tmp: tmp,
            repo,
            work,
            url,
            ws,
        }
    }

    /// Writes `files` into the work dir, stages everything and commits on
    /// `refname` (parent: its current target, if any).
    fn commit(f: &Fixture, refname: &str, files: &[(&str, &str)], msg: &str) -> Oid {
        for (p, content) in files {
            let full = f.work.join(p);
            fs::create_dir_all(full.parent().unwrap()).unwrap();
            fs::write(full, content).unwrap();
        }
        let mut index = f.repo.index().unwrap();
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .unwrap();
        index.write().unwrap();
        let tree = f.repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = Signature::now("t", "t@example.com").unwrap();
        let parent = f
            .repo
            .find_reference(refname)
            .ok()
            .and_then(|r| r.peel_to_commit().ok());
        let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
        f.repo
            .commit(Some(refname), &sig, &sig, msg, &tree, &parents)
            .unwrap()
    }

    fn fetch(f: &Fixture, r: &GitReference) -> Result<Fetched, SourceError> {
        fetch_git(
            &f.ws,
            "apps_site",
            &f.url,
            r,
            None,
            &insecure_limits(),
            &Cancel::default(),
        )
    }

    fn read(dir: &Path, p: &str) -> String {
        fs::read_to_string(dir.join(p)).unwrap()
    }

    #[test]
    fn fetches_branch_tag_commit_and_default_branch() {
        let f = fixture();
        let c1 = commit(
            &f,
            "refs/heads/main",
            &[("kustomization.yaml", "v1"), ("base/cm.yaml", "cm1")],
            "one",
        );
        std::os::unix::fs::symlink("base/cm.yaml", f.work.join("link.yaml")).unwrap();
        let c2 = commit(
            &f,
            "refs/heads/main",
            &[("kustomization.yaml", "v2")],
            "two",
        );
        let sig = Signature::now("t", "t@example.com").unwrap();
        let c2_obj = f.repo.find_object(c2, None).unwrap();
        f.repo
            .tag("v2.0.0", &c2_obj, &sig, "release", false)
            .unwrap();
        let c3 = commit(
            &f,
            "refs/heads/feature",
            &[("kustomization.yaml", "feature")],
            "three",
        );

        let main = fetch(&f, &GitReference::Branch("main".into())).unwrap();
        assert_eq!(main.revision, c2.to_string());
        assert!(!main.cached);
        assert_eq!(read(&main.dir, "kustomization.yaml"), "v2");
        assert_eq!(read(&main.dir, "base/cm.yaml"), "cm1");
        assert_eq!(
            fs::read_link(main.dir.join("link.yaml")).unwrap(),
            PathBuf::from("base/cm.yaml")
        );
        assert!(!main.dir.join(".git").exists());
        assert!(main.dir.ends_with(format!("apps_site/{c2}/tree")));

        let feature = fetch(&f, &GitReference::Branch("feature".into())).unwrap();
        assert_eq!(feature.revision, c3.to_string());
        assert_eq!(read(&feature.dir, "kustomization.yaml"), "feature");
        assert!(!main.dir.exists(), "old revision removed");

        let tag = fetch(&f, &GitReference::Tag("v2.0.0".into())).unwrap();
        assert_eq!(
            tag.revision,
            c2.to_string(),
            "annotated tag peeled to commit"
        );
        assert_eq!(read(&tag.dir, "kustomization.yaml"), "v2");

        let old = fetch(&f, &GitReference::Commit(c1.to_string())).unwrap();
        assert_eq!(old.revision, c1.to_string());
        assert_eq!(read(&old.dir, "kustomization.yaml"), "v1");
        assert!(!old.dir.join("link.yaml").exists());

        let head = fetch(&f, &GitReference::DefaultBranch).unwrap();
        assert_eq!(head.revision, c2.to_string());
        assert_eq!(read(&head.dir, "kustomization.yaml"), "v2");
        assert!(!head.dir.join(".git").exists());
        // Only the current revision remains for the key.
        let names: Vec<_> = fs::read_dir(f.ws.root().join("apps_site"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(c2.to_string())]);
    }

    #[test]
    fn unchanged_branch_is_cached_and_new_commit_replaces_it() {
        let f = fixture();
        let c1 = commit(
            &f,
            "refs/heads/main",
            &[("kustomization.yaml", "v1")],
            "one",
        );
        let first = fetch(&f, &GitReference::Branch("main".into())).unwrap();
        assert!(!first.cached);
        fs::write(first.dir.join("marker"), "untouched").unwrap();

        let second = fetch(&f, &GitReference::Branch("main".into())).unwrap();
        assert!(second.cached);
        assert_eq!(second.revision, c1.to_string());
        assert_eq!(second.dir, first.dir);
        assert_eq!(read(&second.dir, "marker"), "untouched");

        let again = fetch(&f, &GitReference::Commit(c1.to_string())).unwrap();
        assert!(again.cached);

        let c2 = commit(
            &f,
            "refs/heads/main",
            &[("kustomization.yaml", "v2")],
            "two",
        );
        let third = fetch(&f, &GitReference::Branch("main".into())).unwrap();
        assert!(!third.cached);
        assert_eq!(third.revision, c2.to_string());
        assert_eq!(read(&third.dir, "kustomization.yaml"), "v2");
        assert!(!first.dir.exists());
        assert!(!f.ws.root().join("apps_site").join(c1.to_string()).exists());
    }

    #[test]
    fn missing_branch_tag_and_commit_are_named() {
        let f = fixture();
        commit(
            &f,
            "refs/heads/main",
            &[("kustomization.yaml", "v1")],
            "one",
        );
        let prev = fetch(&f, &GitReference::Branch("main".into())).unwrap();

        let err = fetch(&f, &GitReference::Branch("nope".into())).unwrap_err();
        assert!(matches!(err, SourceError::Git(_)), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains("branch 'nope'") && msg.contains(&f.url),
            "{msg}"
        );

        let err = fetch(&f, &GitReference::Tag("v9".into()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("tag 'v9'") && err.contains(&f.url), "{err}");

        let missing = "0123456789abcdef0123456789abcdef01234567";
        let err = fetch(&f, &GitReference::Commit(missing.into())).unwrap_err();
        assert!(matches!(err, SourceError::Git(_)), "{err}");
        let msg = err.to_string();
        assert!(msg.contains(missing) && msg.contains(&f.url), "{msg}");

        let err = fetch(&f, &GitReference::Commit("abc".into()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("40-hex"), "{err}");

        // Failed fetches leave the previous revision and no temp dirs.
        assert!(prev.dir.is_dir());
        let names: Vec<_> = fs::read_dir(f.ws.root().join("apps_site"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec![prev.revision.clone()]);
    }

    #[test]
    fn limits_apply_to_checkout() {
        let f = fixture();
        commit(
            &f,
            "refs/heads/main",
            &[("a", "1"), ("b", "2"), ("c", "3")],
            "one",
        );
        let limits = Limits {
            max_files: 2,
            ..insecure_limits()
        };
        let err = fetch_git(
            &f.ws,
            "k",
            &f.url,
            &GitReference::DefaultBranch,
            None,
            &limits,
            &Cancel::default(),
        )
        .unwrap_err();
        assert!(matches!(err, SourceError::Limit(_)), "{err}");
        assert!(err.to_string().contains("'c'"), "{err}");
    }

    /// Commits a tree of `(name, mode, content)` blobs built directly with
    /// git2 (no work dir) on `refs/heads/main`.
    fn commit_blobs(f: &Fixture, blobs: &[(&str, i32, &[u8])]) -> Oid {
        let mut tb = f.repo.treebuilder(None).unwrap();
        for (name, mode, content) in blobs {
            let id = f.repo.blob(content).unwrap();
            tb.insert(name, id, *mode).unwrap();
        }
        let tree = f.repo.find_tree(tb.write().unwrap()).unwrap();
        let sig = Signature::now("t", "t@example.com").unwrap();
        f.repo
            .commit(Some("refs/heads/main"), &sig, &sig, "blobs", &tree, &[])
            .unwrap()
    }

    #[test]
    fn blob_over_the_unpacked_limit_is_refused_before_it_is_read() {
        let f = fixture();
        let zeros = vec![0u8; 64 << 20];
        let c = commit_blobs(
            &f,
            &[
                ("kustomization.yaml", 0o100644, b"ok"),
                ("zeros.bin", 0o100644, &zeros),
            ],
        );
        drop(zeros);
        let limits = Limits {
            max_unpacked_bytes: 1 << 20,
            ..insecure_limits()
        };
        let check = |err: SourceError| {
            let msg = err.to_string();
            assert!(matches!(err, SourceError::Limit(_)), "{msg}");
            assert!(
                msg.contains("'zeros.bin'") && msg.contains("1048576"),
                "names the file and the limit: {msg}"
            );
            assert!(msg.contains("67108864"), "names the blob's size: {msg}");
        };
        // Straight from the (loose) upstream objects: nothing of the blob is
        // written.
        let dest = f._tmp.path().join("out");
        check(checkout(&f.repo, c, &dest, &limits, "fetching x", &Cancel::default()).unwrap_err());
        assert!(!dest.join("zeros.bin").exists());
        // Through a fetch (packed objects).
        check(
            fetch_git(
                &f.ws,
                "k",
                &f.url,
                &GitReference::DefaultBranch,
                None,
                &limits,
                &Cancel::default(),
            )
            .unwrap_err(),
        );
    }

    #[test]
    fn blobs_are_written_whole_from_loose_and_packed_objects() {
        let f = fixture();
        let data: Vec<u8> = (0..(2u32 << 20)).map(|i| (i % 251) as u8).collect();
        let c = commit_blobs(
            &f,
            &[
                ("data.bin", 0o100755, &data),
                ("link", 0o120000, b"data.bin"),
            ],
        );
        let limits = Limits {
            max_unpacked_bytes: data.len() as u64,
            ..insecure_limits()
        };
        let dest = f._tmp.path().join("out");
        checkout(&f.repo, c, &dest, &limits, "fetching x", &Cancel::default()).unwrap();
        assert!(fs::read(dest.join("data.bin")).unwrap() == data);
        let fetched = fetch_git(
            &f.ws,
            "k",
            &f.url,
            &GitReference::DefaultBranch,
            None,
            &limits,
            &Cancel::default(),
        )
        .unwrap();
        assert!(fs::read(fetched.dir.join("data.bin")).unwrap() == data);
        assert_eq!(
            fs::read_link(fetched.dir.join("link")).unwrap(),
            PathBuf::from("data.bin")
        );
    }

    #[test]
    fn oversized_symlink_target_is_refused() {
        let f = fixture();
        let target = vec![b'a'; 1 << 20];
        let c = commit_blobs(&f, &[("link", 0o120000, &target)]);
        let dest = f._tmp.path().join("out");
        let err = checkout(
            &f.repo,
            c,
            &dest,
            &insecure_limits(),
            "fetching x",
            &Cancel::default(),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("'link'") && msg.contains("1048576"), "{msg}");
    }

    #[test]
    fn pack_size_limit_applies_to_fetch() {
        let f = fixture();
        let noise: String = (0..20_000u32)
            .map(|i| format!("{:08x}", i.wrapping_mul(2654435761)))
            .collect();
        commit(&f, "refs/heads/main", &[("big.txt", noise.as_str())], "one");
        let limits = Limits {
            max_archive_bytes: 10_000,
            ..insecure_limits()
        };
        let err = fetch_git(
            &f.ws,
            "k",
            &f.url,
            &GitReference::DefaultBranch,
            None,
            &limits,
            &Cancel::default(),
        )
        .unwrap_err();
        assert!(matches!(err, SourceError::Limit(_)), "{err}");
        assert!(err.to_string().contains(&f.url), "{err}");
        assert!(
            !f.ws.root().join("k").exists()
                || fs::read_dir(f.ws.root().join("k")).unwrap().count() == 0
        );
    }

    #[test]
    fn unsupported_scheme_is_refused() {
        let f = fixture();
        let err = fetch_git(
            &f.ws,
            "k",
            "ssh://git@example.com/r.git",
            &GitReference::DefaultBranch,
            None,
            &Limits::default(),
            &Cancel::default(),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("example.com/r.git") && msg.contains("unsupported URL scheme"),
            "{msg}"
        );
    }

    #[test]
    fn insecure_urls_are_refused_unless_allowed() {
        let f = fixture();
        commit(
            &f,
            "refs/heads/main",
            &[("kustomization.yaml", "v1")],
            "one",
        );
        let secure = Limits::default();
        for url in [
            f.url.clone(),
            "http://bot:s3cret@127.0.0.1:9/r.git".to_string(),
        ] {
            let err = fetch_git(
                &f.ws,
                "k",
                &url,
                &GitReference::DefaultBranch,
                None,
                &secure,
                &Cancel::default(),
            )
            .unwrap_err();
            let msg = err.to_string();
            assert!(matches!(err, SourceError::Git(_)), "{msg}");
            assert!(msg.contains(&redact_url(&url)), "{msg}");
            assert!(!msg.contains("s3cret"), "{msg}");
            assert!(msg.contains("--allow-insecure-sources"), "{msg}");
        }
        for url in [
            "git://127.0.0.1:9/r.git".to_string(),
            f.work.display().to_string(),
        ] {
            let err = fetch_git(
                &f.ws,
                "k",
                &url,
                &GitReference::DefaultBranch,
                None,
                &insecure_limits(),
                &Cancel::default(),
            )
            .unwrap_err();
            assert!(
                err.to_string().contains("unsupported URL scheme"),
                "{url}: {err}"
            );
        }
        assert!(!f.ws.root().join("k").exists(), "nothing was fetched");
        // Allowed by the operator: works.
        let ok = fetch_git(
            &f.ws,
            "k",
            &f.url,
            &GitReference::DefaultBranch,
            None,
            &insecure_limits(),
            &Cancel::default(),
        )
        .unwrap();
        assert_eq!(read(&ok.dir, "kustomization.yaml"), "v1");
    }

    /// A 127.0.0.1 server that accepts connections and never answers; the
    /// connections are closed when it is dropped.
    struct SilentServer {
        url: String,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
        accepted: std::sync::Arc<AtomicUsize>,
    }

    impl SilentServer {
        fn start() -> SilentServer {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.set_nonblocking(true).unwrap();
            let url = format!("http://{}/org/repo.git", listener.local_addr().unwrap());
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let accepted = std::sync::Arc::new(AtomicUsize::new(0));
            let (stop2, accepted2) = (stop.clone(), accepted.clone());
            std::thread::spawn(move || {
                let mut held = Vec::new();
                while !stop2.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((conn, _)) => {
                            held.push(conn);
                            accepted2.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
            });
            SilentServer {
                url,
                stop,
                accepted,
            }
        }
    }

    impl Drop for SilentServer {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::SeqCst);
        }
    }

    /// Waits (at most 10 s) until the abandoned fetch thread has removed its
    /// staging dir, and checks it published nothing.
    fn assert_abandoned_fetch_cleans_up(ws: &Workspace, key: &str) {
        let dir = ws.root().join(key);
        let t0 = std::time::Instant::now();
        loop {
            let names: Vec<String> = fs::read_dir(&dir)
                .map(|rd| {
                    rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            assert!(
                names.iter().all(|n| n.starts_with(".tmp-")),
                "an abandoned fetch published {names:?}"
            );
            if names.is_empty() {
                return;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "abandoned fetch still running: {names:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    #[test]
    fn silent_server_is_abandoned_at_the_deadline() {
        let server = SilentServer::start();
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::new(tmp.path()).unwrap();
        let cancel = Cancel::new(Some(std::time::Instant::now() + Duration::from_secs(1)));
        let t0 = std::time::Instant::now();
        let err = fetch_git(
            &ws,
            "k",
            &server.url,
            &GitReference::Branch("main".into()),
            None,
            &insecure_limits(),
            &cancel,
        )
        .unwrap_err();
        let took = t0.elapsed();
        let msg = err.to_string();
        assert!(matches!(err, SourceError::Cancelled(_)), "{msg}");
        assert!(
            msg.contains(&server.url) && msg.contains("deadline"),
            "{msg}"
        );
        assert!(took >= Duration::from_millis(900), "{took:?}");
        assert!(took < Duration::from_secs(4), "{took:?}");
        assert!(server.accepted.load(Ordering::SeqCst) >= 1);
        drop(server);
        assert_abandoned_fetch_cleans_up(&ws, "k");
    }

    #[test]
    fn cancel_from_another_thread_stops_a_fetch() {
        let server = SilentServer::start();
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::new(tmp.path()).unwrap();
        let cancel = Cancel::new(None);
        let canceller = {
            let cancel = cancel.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                cancel.cancel();
            })
        };
        let t0 = std::time::Instant::now();
        let err = fetch_git(
            &ws,
            "k",
            &server.url,
            &GitReference::DefaultBranch,
            None,
            &insecure_limits(),
            &cancel,
        )
        .unwrap_err();
        let took = t0.elapsed();
        canceller.join().unwrap();
        let msg = err.to_string();
        assert!(matches!(err, SourceError::Cancelled(_)), "{msg}");
        assert!(
            msg.contains(&server.url) && msg.contains("cancelled"),
            "{msg}"
        );
        assert!(took < Duration::from_secs(3), "{took:?}");
        drop(server);
        assert_abandoned_fetch_cleans_up(&ws, "k");
    }

    #[test]
    fn libgit2_network_timeouts_are_set() {
        set_git_network_timeouts();
        set_git_network_timeouts();
        // SAFETY: reads the two ints written once by the `Once` above,
        // which has completed.
        let (connect, io) = unsafe {
            (
                git2::opts::get_server_connect_timeout_in_milliseconds().unwrap(),
                git2::opts::get_server_timeout_in_milliseconds().unwrap(),
            )
        };
        assert_eq!((connect, io), (GIT_CONNECT_TIMEOUT_MS, GIT_IO_TIMEOUT_MS));
    }

    #[test]
    fn cancelled_before_start_and_during_checkout() {
        let f = fixture();
        let c1 = commit(
            &f,
            "refs/heads/main",
            &[("kustomization.yaml", "v1"), ("a/b", "x")],
            "one",
        );
        let cancel = Cancel::new(None);
        cancel.cancel();
        let err = fetch_git(
            &f.ws,
            "k",
            &f.url,
            &GitReference::DefaultBranch,
            None,
            &insecure_limits(),
            &cancel,
        )
        .unwrap_err();
        assert!(matches!(err, SourceError::Cancelled(_)), "{err}");
        assert!(err.to_string().contains(&f.url), "{err}");
        assert!(!f.ws.root().join("k").exists());

        // The tree-writing loop stops at the first entry.
        let dest = f._tmp.path().join("out");
        let err = checkout(
            &f.repo,
            c1,
            &dest,
            &insecure_limits(),
            &format!("fetching {}", f.url),
            &cancel,
        )
        .unwrap_err();
        assert!(matches!(err, SourceError::Cancelled(_)), "{err}");
        assert!(err.to_string().contains(&f.url), "{err}");
        assert_eq!(fs::read_dir(&dest).unwrap().count(), 0);
    }

    /// Runs a blocking `fetch_git` against a wiremock server and returns the
    /// error and the Authorization headers the server saw.
    async fn fetch_against(
        server: &wiremock::MockServer,
        auth: GitAuth,
    ) -> (SourceError, Vec<String>) {
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::new(tmp.path()).unwrap();
        let url = format!("{}/org/repo.git", server.uri());
        let err = tokio::task::spawn_blocking(move || {
            fetch_git(
                &ws,
                "k",
                &url,
                &GitReference::Branch("main".into()),
                Some(&auth),
                &insecure_limits(),
                &Cancel::default(),
            )
        })
        .await
        .unwrap()
        .unwrap_err();
        let seen = server
            .received_requests()
            .await
            .unwrap()
            .iter()
            .filter_map(|r| r.headers.get("authorization"))
            .map(|v| v.to_str().unwrap().to_string())
            .collect();
        (err, seen)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn bearer_token_is_sent_as_header() {
        use wiremock::{Mock, MockServer, ResponseTemplate, matchers};
        let server = MockServer::start().await;
        Mock::given(matchers::method("GET"))
            .respond_with(ResponseTemplate::new(404))
            .mount(&server)
            .await;
        let auth = GitAuth {
            bearer_token: Some("s3cret".into()),
            ..GitAuth::default()
        };
        let (err, seen) = fetch_against(&server, auth).await;
        assert!(matches!(err, SourceError::Git(_)), "{err}");
        assert!(err.to_string().contains("/org/repo.git"), "{err}");
        assert!(
            !seen.is_empty(),
            "no request carried an Authorization header"
        );
        assert!(seen.iter().all(|h| h == "Bearer s3cret"), "{seen:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rejected_basic_auth_is_reported() {
        use wiremock::{Mock, MockServer, ResponseTemplate, matchers};
        let server = MockServer::start().await;
        Mock::given(matchers::method("GET"))
            .respond_with(
                ResponseTemplate::new(401).insert_header("WWW-Authenticate", "Basic realm=\"git\""),
            )
            .mount(&server)
            .await;
        let auth = GitAuth {
            username: Some("bot".into()),
            password: Some("pw".into()),
            ..GitAuth::default()
        };
        let (err, seen) = fetch_against(&server, auth).await;
        let msg = err.to_string();
        assert!(matches!(err, SourceError::Git(_)), "{msg}");
        assert!(msg.contains("authentication failed"), "{msg}");
        assert!(
            msg.contains("/org/repo.git") && msg.contains("branch 'main'"),
            "{msg}"
        );
        // base64("bot:pw")
        assert!(seen.iter().any(|h| h == "Basic Ym90OnB3"), "{seen:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn credentials_come_from_git_credential_helpers_when_asked() {
        use wiremock::{Mock, MockServer, ResponseTemplate, matchers};
        let asking_server = || async {
            let server = MockServer::start().await;
            Mock::given(matchers::method("GET"))
                .respond_with(
                    ResponseTemplate::new(401)
                        .insert_header("WWW-Authenticate", "Basic realm=\"git\""),
                )
                .mount(&server)
                .await;
            server
        };
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("gitconfig");
        fs::write(
            &config,
            "[credential]\n\thelper = \"!f() { echo username=helper-user; echo password=helper-pw; }; f\"\n",
        )
        .unwrap();
        let auth = GitAuth {
            credential_helpers: Some(CredentialHelpers::ConfigFile(config)),
            ..GitAuth::default()
        };
        let (err, seen) = fetch_against(&asking_server().await, auth).await;
        // base64("helper-user:helper-pw")
        assert!(
            seen.iter()
                .any(|h| h == "Basic aGVscGVyLXVzZXI6aGVscGVyLXB3"),
            "{seen:?}"
        );
        assert!(err.to_string().contains("credential helper"), "{err}");
        // without the opt-in, nothing is asked and nothing is sent
        let (err, seen) = fetch_against(&asking_server().await, GitAuth::default()).await;
        assert!(seen.is_empty(), "{seen:?}");
        assert!(err.to_string().contains("authentication required"), "{err}");
    }

    #[test]
    fn parses_pem_certificates() {
        let pem = b"junk\n-----BEGIN CERTIFICATE-----\nAAEC\nAw==\n-----END CERTIFICATE-----\n\
                    -----BEGIN CERTIFICATE-----\nBAU=\n-----END CERTIFICATE-----\n";
        assert_eq!(pem_certificates(pem), vec![vec![0, 1, 2, 3], vec![4, 5]]);
        assert!(pem_certificates(b"nothing").is_empty());
    }
}
