//! `.tar.gz` bundles: safe unpacking, deterministic creation, and in-cluster
//! bundles. Also home of [`SafeWriter`], the checked writer the git checkout
//! uses too.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{Cancel, Fetched, Limits, SourceError, Workspace, io_err, sha256_revision};
use crate::kustomize::fs::{FileKind, FileSystem, MemFs};

/// Writes a tree below `root`, refusing anything that could escape it and
/// enforcing [`Limits::max_files`] and [`Limits::max_unpacked_bytes`].
///
/// Paths are relative; `.` components are ignored (`./x` is `x`, a `./`
/// directory entry is the root); `..`, absolute paths and writes through
/// symlinks are refused; symlink targets must be relative and stay inside
/// the tree.
/// Files get mode 0644 (0755 when any execute bit was set), dirs 0755.
/// With a [`Cancel`] ([`SafeWriter::with_cancel`]) every entry and every
/// read of file content first checks it and stops with
/// [`SourceError::Cancelled`].
pub(crate) struct SafeWriter<S: Sink = DiskSink> {
    root: PathBuf,
    sink: S,
    limits: Limits,
    entries: usize,
    bytes: u64,
    /// Names the input in messages, e.g. "archive", a URL, or
    /// "fetching <url> branch 'main': commit abc".
    origin: String,
    cancel: Option<Cancel>,
}

/// What a path below the root holds, as [`Sink::probe`] reports it (not
/// following a final symlink).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    Missing,
    Dir,
    Symlink,
    Other,
}

/// Where a [`SafeWriter`] puts the tree: the disk ([`DiskSink`]) or memory
/// ([`MemSink`]). Paths are the root joined with checked components; the
/// writer does every check, a sink only stores.
pub(crate) trait Sink {
    /// An open file being written.
    type File: Write;
    fn probe(&self, p: &Path) -> io::Result<Probe>;
    fn create_dir(&mut self, p: &Path) -> io::Result<()>;
    fn remove_file(&mut self, p: &Path) -> io::Result<()>;
    fn create_file(&mut self, p: &Path, mode: u32) -> io::Result<Self::File>;
    /// Completes a file returned by `create_file`.
    fn finish_file(&mut self, p: &Path, f: Self::File, mode: u32) -> Result<(), SourceError>;
    fn symlink(&mut self, p: &Path, target: &Path) -> io::Result<()>;
}

/// The disk: files get their mode, directories 0755.
#[derive(Debug, Default)]
pub(crate) struct DiskSink;

impl Sink for DiskSink {
    type File = fs::File;

    fn probe(&self, p: &Path) -> io::Result<Probe> {
        match p.symlink_metadata() {
            Ok(m) if m.file_type().is_symlink() => Ok(Probe::Symlink),
            Ok(m) if m.is_dir() => Ok(Probe::Dir),
            Ok(_) => Ok(Probe::Other),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Probe::Missing),
            Err(e) => Err(e),
        }
    }

    fn create_dir(&mut self, p: &Path) -> io::Result<()> {
        fs::create_dir(p)?;
        fs::set_permissions(p, fs::Permissions::from_mode(0o755))
    }

    fn remove_file(&mut self, p: &Path) -> io::Result<()> {
        fs::remove_file(p)
    }

    fn create_file(&mut self, p: &Path, mode: u32) -> io::Result<fs::File> {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(p)
    }

    fn finish_file(&mut self, p: &Path, mut f: fs::File, mode: u32) -> Result<(), SourceError> {
        f.flush()
            .map_err(|e| io_err(format!("writing {}", p.display()), e))?;
        set_mode(p, mode)
    }

    fn symlink(&mut self, p: &Path, target: &Path) -> io::Result<()> {
        std::os::unix::fs::symlink(target, p)
    }
}

/// Memory: regular files and directories go into a [`MemFs`] at the
/// writer's root. A symlink is only noted ([`MemSink::has_symlinks`]): the
/// in-memory view does not model them, so such a tree is unpacked to disk
/// instead.
///
/// File content beyond `cap` bytes in all is refused (and noted in `over`).
#[derive(Debug)]
pub(crate) struct MemSink {
    fs: MemFs,
    links: HashSet<PathBuf>,
    /// Content bytes kept so far, and at most.
    kept: u64,
    cap: u64,
    over: Arc<AtomicBool>,
}

impl MemSink {
    fn new(root: &Path, cap: u64) -> MemSink {
        let mut fs = MemFs::new();
        fs.add_dir(root);
        MemSink {
            fs,
            links: HashSet::new(),
            kept: 0,
            cap,
            over: Arc::default(),
        }
    }

    pub(crate) fn has_symlinks(&self) -> bool {
        !self.links.is_empty()
    }

    /// Whether more content came than the sink may keep.
    pub(crate) fn over_cap(&self) -> bool {
        self.over.load(Ordering::Relaxed)
    }
}

/// A file being written into memory, failing past what the sink may keep.
pub(crate) struct MemFile {
    buf: Vec<u8>,
    left: u64,
    over: Arc<AtomicBool>,
}

impl Write for MemFile {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if data.len() as u64 > self.left {
            self.over.store(true, Ordering::Relaxed);
            return Err(io::Error::other("more content than is kept in memory"));
        }
        self.left -= data.len() as u64;
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Sink for MemSink {
    type File = MemFile;

    fn probe(&self, p: &Path) -> io::Result<Probe> {
        Ok(if self.links.contains(p) {
            Probe::Symlink
        } else {
            match self.fs.kind(p) {
                Some(FileKind::Dir) => Probe::Dir,
                Some(FileKind::File) => Probe::Other,
                None => Probe::Missing,
            }
        })
    }

    fn create_dir(&mut self, p: &Path) -> io::Result<()> {
        self.fs.add_dir(p);
        Ok(())
    }

    fn remove_file(&mut self, _p: &Path) -> io::Result<()> {
        // the file is replaced by the next `finish_file` of this path
        Ok(())
    }

    fn create_file(&mut self, _p: &Path, _mode: u32) -> io::Result<MemFile> {
        Ok(MemFile {
            buf: Vec::new(),
            left: self.cap.saturating_sub(self.kept),
            over: self.over.clone(),
        })
    }

    fn finish_file(&mut self, p: &Path, f: MemFile, _mode: u32) -> Result<(), SourceError> {
        self.kept += f.buf.len() as u64;
        self.fs.add_file(p, f.buf);
        Ok(())
    }

    fn symlink(&mut self, p: &Path, _target: &Path) -> io::Result<()> {
        self.links.insert(p.to_path_buf());
        Ok(())
    }
}

impl SafeWriter<MemSink> {
    /// A writer into memory, rooted at `root` (an absolute path; nothing is
    /// read from or written to the disk). At most `cap` bytes of content
    /// are kept: past them, writing fails and [`MemSink::over_cap`] tells.
    pub(crate) fn in_memory(
        root: &Path,
        limits: &Limits,
        origin: &str,
        cap: u64,
    ) -> SafeWriter<MemSink> {
        SafeWriter::with_sink(root, MemSink::new(root, cap), limits, origin)
    }

    /// The tree written, and whether it held symlinks (which the view
    /// leaves out).
    pub(crate) fn into_sink(self) -> MemSink {
        self.sink
    }
}

impl SafeWriter<DiskSink> {
    /// `root` must be absent or an empty directory; it is created.
    pub(crate) fn new(
        root: &Path,
        limits: &Limits,
        origin: &str,
    ) -> Result<SafeWriter, SourceError> {
        match fs::read_dir(root) {
            Ok(mut it) => {
                if it.next().is_some() {
                    return Err(SourceError::Io(format!(
                        "{origin}: destination {} is not empty",
                        root.display()
                    )));
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::create_dir_all(root)
                    .map_err(|e| io_err(format!("creating {}", root.display()), e))?;
            }
            Err(e) => return Err(io_err(format!("reading {}", root.display()), e)),
        }
        set_mode(root, 0o755)?;
        Ok(SafeWriter::with_sink(root, DiskSink, limits, origin))
    }
}

impl<S: Sink> SafeWriter<S> {
    fn with_sink(root: &Path, sink: S, limits: &Limits, origin: &str) -> SafeWriter<S> {
        SafeWriter {
            root: root.to_path_buf(),
            sink,
            limits: *limits,
            entries: 0,
            bytes: 0,
            origin: origin.to_string(),
            cancel: None,
        }
    }

    /// Makes the writer stop once `cancel` is cancelled.
    pub(crate) fn with_cancel(mut self, cancel: &Cancel) -> SafeWriter<S> {
        self.cancel = Some(cancel.clone());
        self
    }

    /// Bytes the remaining `max_unpacked_bytes` budget still allows.
    pub(crate) fn remaining_bytes(&self) -> u64 {
        self.limits.max_unpacked_bytes.saturating_sub(self.bytes)
    }

    /// Refuses a file whose declared size (e.g. from a git object header)
    /// does not fit in what remains of `max_unpacked_bytes`, before any of
    /// it is read.
    pub(crate) fn check_declared_size(&self, rel: &Path, size: u64) -> Result<(), SourceError> {
        let remaining = self.remaining_bytes();
        if size > remaining {
            return Err(SourceError::Limit(format!(
                "{}: entry '{}' holds {size} bytes, more than the {remaining} left of the \
                 limit of {} unpacked bytes",
                self.origin,
                rel.display(),
                self.limits.max_unpacked_bytes
            )));
        }
        Ok(())
    }

    /// [`SourceError::Cancelled`] naming `entry` when the writer's
    /// [`Cancel`] is cancelled.
    pub(crate) fn check_cancel(&self, entry: &Path) -> Result<(), SourceError> {
        match &self.cancel {
            Some(c) if c.is_cancelled() => Err(self.cancelled(entry, c)),
            _ => Ok(()),
        }
    }

    fn cancelled(&self, entry: &Path, c: &Cancel) -> SourceError {
        SourceError::Cancelled(format!(
            "{}: stopped at entry '{}': {}",
            self.origin,
            entry.display(),
            c.reason()
        ))
    }

    /// Total bytes of file content written so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    fn refuse(&self, entry: &Path, why: &str) -> SourceError {
        SourceError::Archive(format!(
            "{}: entry '{}' refused: {why}",
            self.origin,
            entry.display()
        ))
    }

    /// Validates `rel` and returns its components (never empty).
    fn components<'p>(&self, rel: &'p Path) -> Result<Vec<&'p OsStr>, SourceError> {
        let mut out = Vec::new();
        for c in rel.components() {
            match c {
                Component::Normal(n) => out.push(n),
                Component::CurDir => {}
                Component::ParentDir => {
                    return Err(self.refuse(rel, "path contains a '..' component"));
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(self.refuse(rel, "absolute path"));
                }
            }
        }
        if out.is_empty() {
            return Err(self.refuse(rel, "empty path"));
        }
        Ok(out)
    }

    fn count_entry(&mut self, rel: &Path) -> Result<(), SourceError> {
        self.entries += 1;
        if self.entries > self.limits.max_files {
            return Err(SourceError::Limit(format!(
                "{}: entry '{}' exceeds the limit of {} files and directories",
                self.origin,
                rel.display(),
                self.limits.max_files
            )));
        }
        Ok(())
    }

    /// Ensures every directory in `comps` exists below the root as a real
    /// directory (creating missing ones, which count as entries) and returns
    /// the joined path.
    fn ensure_dirs(&mut self, rel: &Path, comps: &[&OsStr]) -> Result<PathBuf, SourceError> {
        let mut p = self.root.clone();
        for c in comps {
            p.push(c);
            match self.sink.probe(&p) {
                Ok(Probe::Symlink) => {
                    return Err(self.refuse(rel, "it would be written through a symlink"));
                }
                Ok(Probe::Dir) => {}
                Ok(Probe::Other) => {
                    return Err(self.refuse(rel, "a parent path is not a directory"));
                }
                Ok(Probe::Missing) => {
                    self.count_entry(rel)?;
                    self.sink
                        .create_dir(&p)
                        .map_err(|e| io_err(format!("creating {}", p.display()), e))?;
                }
                Err(e) => return Err(io_err(format!("inspecting {}", p.display()), e)),
            }
        }
        Ok(p)
    }

    /// Prepares the final path of a non-directory entry: parents exist, and
    /// nothing but a previous regular file is at the path (which is removed).
    fn prepare_leaf(&mut self, rel: &Path) -> Result<PathBuf, SourceError> {
        let comps = self.components(rel)?;
        let (name, parents) = comps
            .split_last()
            .ok_or_else(|| self.refuse(rel, "empty path"))?;
        let parent = self.ensure_dirs(rel, parents)?;
        let p = parent.join(name);
        match self.sink.probe(&p) {
            Ok(Probe::Symlink) => Err(self.refuse(rel, "it would be written through a symlink")),
            Ok(Probe::Dir) => Err(self.refuse(rel, "a directory exists at this path")),
            Ok(Probe::Other) => {
                self.sink
                    .remove_file(&p)
                    .map_err(|e| io_err(format!("removing {}", p.display()), e))?;
                Ok(p)
            }
            Ok(Probe::Missing) => {
                self.count_entry(rel)?;
                Ok(p)
            }
            Err(e) => Err(io_err(format!("inspecting {}", p.display()), e)),
        }
    }

    /// A directory entry. `./` or `.` (the root itself, as written by
    /// `tar -C dir .`) is skipped.
    pub(crate) fn dir(&mut self, rel: &Path) -> Result<(), SourceError> {
        if !rel.as_os_str().is_empty() && rel.components().all(|c| c == Component::CurDir) {
            return Ok(());
        }
        let comps = self.components(rel)?;
        self.ensure_dirs(rel, &comps)?;
        Ok(())
    }

    /// A regular file whose content is read from `content` (counted as it is
    /// copied, not trusting any declared size).
    pub(crate) fn file(
        &mut self,
        rel: &Path,
        executable: bool,
        content: &mut dyn Read,
    ) -> Result<(), SourceError> {
        let p = self.prepare_leaf(rel)?;
        let mode = if executable { 0o755 } else { 0o644 };
        let mut f = self
            .sink
            .create_file(&p, mode)
            .map_err(|e| io_err(format!("creating {}", p.display()), e))?;
        let remaining = self.remaining_bytes();
        let cancel = self.cancel.clone();
        let mut checked = CancelReader {
            inner: content,
            cancel: cancel.as_ref(),
        };
        let mut limited = (&mut checked).take(remaining.saturating_add(1));
        let written = io::copy(&mut limited, &mut f).map_err(|e| match &cancel {
            Some(c) if c.is_cancelled() => self.cancelled(rel, c),
            _ => SourceError::Archive(format!(
                "{}: reading entry '{}': {e}",
                self.origin,
                rel.display()
            )),
        })?;
        if written > remaining {
            return Err(SourceError::Limit(format!(
                "{}: entry '{}' exceeds the limit of {} unpacked bytes",
                self.origin,
                rel.display(),
                self.limits.max_unpacked_bytes
            )));
        }
        self.bytes += written;
        self.sink.finish_file(&p, f, mode)
    }

    /// A symlink; `target` must be relative and stay inside the tree.
    pub(crate) fn symlink(&mut self, rel: &Path, target: &Path) -> Result<(), SourceError> {
        let comps = self.components(rel)?;
        check_link_target(&comps[..comps.len() - 1], target)
            .map_err(|why| self.refuse(rel, &format!("symlink to '{}' {why}", target.display())))?;
        let p = self.prepare_leaf(rel)?;
        self.sink
            .symlink(&p, target)
            .map_err(|e| io_err(format!("creating symlink {}", p.display()), e))
    }
}

/// Fails reads once its [`Cancel`] (if any) is cancelled.
struct CancelReader<'a, R: ?Sized> {
    inner: &'a mut R,
    cancel: Option<&'a Cancel>,
}

impl<R: Read + ?Sized> Read for CancelReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.cancel.is_some_and(Cancel::is_cancelled) {
            return Err(io::Error::other("cancelled"));
        }
        self.inner.read(buf)
    }
}

/// Checks that a symlink in directory `link_dir` (components below the root)
/// pointing at `target` stays inside the tree. Only leading `..` components
/// are allowed: after a normal component a `..` could climb out of a
/// directory reached through another symlink, which a lexical check cannot
/// see.
pub(crate) fn check_link_target(link_dir: &[&OsStr], target: &Path) -> Result<(), &'static str> {
    if target.as_os_str().is_empty() {
        return Err("has an empty target");
    }
    let mut depth = link_dir.len();
    let mut seen_normal = false;
    for c in target.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => return Err("is absolute"),
            Component::CurDir => {}
            Component::ParentDir => {
                if seen_normal {
                    return Err("has a '..' after a normal component");
                }
                if depth == 0 {
                    return Err("leaves the tree");
                }
                depth -= 1;
            }
            Component::Normal(_) => seen_normal = true,
        }
    }
    Ok(())
}

fn set_mode(p: &Path, mode: u32) -> Result<(), SourceError> {
    fs::set_permissions(p, fs::Permissions::from_mode(mode))
        .map_err(|e| io_err(format!("setting mode of {}", p.display()), e))
}

/// Counts the decompressed bytes read and fails once they pass a limit
/// (guards against gzip bombs in headers and long names, which the tar crate
/// reads into memory).
struct CappedReader<R> {
    inner: R,
    read: u64,
    cap: u64,
    hit: Arc<AtomicBool>,
}

impl<R: Read> Read for CappedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if self.read > self.cap {
            self.hit.store(true, Ordering::Relaxed);
            return Err(io::Error::other("decompressed size limit exceeded"));
        }
        Ok(n)
    }
}

/// Safely unpacks a `.tar.gz` into `dest` (must be empty or absent).
///
/// Ordinary tarballs are accepted: `tar czf app.tgz -C dir .` writes a `./`
/// entry (skipped: it is `dest` itself) and `./x` entries (written as `x`).
///
/// Refuses, with an error naming the entry: absolute paths, `..` components,
/// entries that would be written through a symlink, symlinks whose target
/// leaves the tree or is absolute, hard links, device/fifo and other special
/// entries. Enforces `max_archive_bytes` on the compressed input,
/// `max_unpacked_bytes` on the sum of file sizes (counted while copying) and
/// `max_files` on entries (directories and files). Regular files get mode
/// 0644 or 0755, directories 0755. On error `dest` may hold a partial tree
/// (the workspace functions unpack into a staging dir that is then removed).
pub fn unpack_tar_gz(data: &[u8], dest: &Path, limits: &Limits) -> Result<(), SourceError> {
    unpack_named(data, dest, limits, "archive")
}

pub(crate) fn unpack_named(
    data: &[u8],
    dest: &Path,
    limits: &Limits,
    origin: &str,
) -> Result<(), SourceError> {
    unpack_reader(data, data.len() as u64, dest, limits, origin, None)
}

/// [`unpack_tar_gz`] of a `.tar.gz` stream of `compressed_len` bytes (e.g. a
/// downloaded file), stopping with [`SourceError::Cancelled`] once `cancel`
/// is cancelled. `origin` names the input in messages.
pub(crate) fn unpack_reader(
    input: impl Read,
    compressed_len: u64,
    dest: &Path,
    limits: &Limits,
    origin: &str,
    cancel: Option<&Cancel>,
) -> Result<(), SourceError> {
    check_archive_len(compressed_len, limits, origin)?;
    let mut w = SafeWriter::new(dest, limits, origin)?;
    if let Some(c) = cancel {
        w = w.with_cancel(c);
    }
    unpack_into(input, &mut w, limits, origin)?;
    tracing::debug!(origin, dest = %dest.display(), bytes = w.bytes(), "unpacked archive");
    Ok(())
}

/// Refuses an archive of more than `max_archive_bytes`.
fn check_archive_len(
    compressed_len: u64,
    limits: &Limits,
    origin: &str,
) -> Result<(), SourceError> {
    if compressed_len > limits.max_archive_bytes {
        return Err(SourceError::Limit(format!(
            "{origin}: {compressed_len} compressed bytes exceed the limit of {} archive bytes",
            limits.max_archive_bytes
        )));
    }
    Ok(())
}

/// The entries of a `.tar.gz` stream, through `w` (see [`unpack_tar_gz`]).
fn unpack_into<S: Sink>(
    input: impl Read,
    w: &mut SafeWriter<S>,
    limits: &Limits,
    origin: &str,
) -> Result<(), SourceError> {
    // Headers, padding and long-name records on top of the file contents.
    let cap = limits.max_unpacked_bytes.saturating_add(
        (limits.max_files as u64)
            .saturating_add(16)
            .saturating_mul(8192),
    );
    let hit = Arc::new(AtomicBool::new(false));
    let reader = CappedReader {
        inner: flate2::read::GzDecoder::new(input),
        read: 0,
        cap,
        hit: hit.clone(),
    };
    let mut archive = tar::Archive::new(reader);
    let read_err = |what: String, e: io::Error| {
        if hit.load(Ordering::Relaxed) {
            SourceError::Limit(format!(
                "{origin}: decompressed stream exceeds {cap} bytes \
                 (max_unpacked_bytes plus header allowance) at {what}"
            ))
        } else {
            SourceError::Archive(format!("{origin}: {what}: {e}"))
        }
    };
    let entries = archive
        .entries()
        .map_err(|e| read_err("reading the archive".into(), e))?;
    for (index, entry) in entries.enumerate() {
        let mut entry = entry.map_err(|e| read_err(format!("reading entry #{index}"), e))?;
        let path = entry
            .path()
            .map_err(|e| read_err(format!("reading the path of entry #{index}"), e))?
            .into_owned();
        w.check_cancel(&path)?;
        let kind = entry.header().entry_type();
        match kind {
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let mode = entry.header().mode().unwrap_or(0o644);
                w.file(&path, mode & 0o111 != 0, &mut entry).map_err(|e| {
                    if hit.load(Ordering::Relaxed) {
                        read_err(format!("entry '{}'", path.display()), io::Error::other(""))
                    } else {
                        e
                    }
                })?;
            }
            tar::EntryType::Directory => w.dir(&path)?,
            tar::EntryType::Symlink => {
                let target = entry
                    .link_name()
                    .map_err(|e| read_err(format!("reading the link of '{}'", path.display()), e))?
                    .ok_or_else(|| {
                        SourceError::Archive(format!(
                            "{origin}: entry '{}' refused: symlink without a target",
                            path.display()
                        ))
                    })?
                    .into_owned();
                w.symlink(&path, &target)?;
            }
            tar::EntryType::XGlobalHeader => {}
            other => {
                let what = match other {
                    tar::EntryType::Link => "hard links are not supported".to_string(),
                    tar::EntryType::Char | tar::EntryType::Block => {
                        "device files are not supported".to_string()
                    }
                    tar::EntryType::Fifo => "fifos are not supported".to_string(),
                    o => format!("unsupported entry type {o:?}"),
                };
                return Err(SourceError::Archive(format!(
                    "{origin}: entry '{}' refused: {what}",
                    path.display()
                )));
            }
        }
    }
    Ok(())
}

/// An in-cluster bundle (`.tar.gz` bytes read by the controller from a
/// ConfigMap or Secret; `origin` names it for messages, e.g.
/// "ConfigMap apps/site-bundle key bundle.tar.gz"). The revision is
/// `sha256:<hex of data>`; returns `cached = true` when it is present.
pub fn unpack_bundle(
    ws: &Workspace,
    key: &str,
    origin: &str,
    data: &[u8],
    limits: &Limits,
) -> Result<Fetched, SourceError> {
    let revision = sha256_revision(data);
    if let Some(dir) = ws.lookup(key, &revision)? {
        tracing::debug!(key, origin, revision, "bundle revision already present");
        return Ok(Fetched {
            revision,
            dir,
            cached: true,
        });
    }
    let staging = ws.staging(key)?;
    unpack_named(data, &staging.tree(), limits, origin)?;
    let dir = staging.commit(&revision, &[])?;
    tracing::info!(key, origin, revision, "unpacked bundle");
    Ok(Fetched {
        revision,
        dir,
        cached: false,
    })
}

/// File content up to which [`unpack_bundle_in_memory`] keeps a bundle in
/// memory; a larger one is unpacked to disk.
pub const MEMORY_BUNDLE_BYTES: u64 = 8 * 1024 * 1024;

/// An in-cluster bundle unpacked into memory, as a [`MemFs`] whose files lie
/// below `root` (an absolute path that is never read or written), with the
/// checks and limits of [`unpack_bundle`] and its messages.
///
/// `Ok(None)` when the bundle is better unpacked to disk: it holds a
/// symlink (the in-memory view does not model them) or more than
/// [`MEMORY_BUNDLE_BYTES`] of file content.
pub fn unpack_bundle_in_memory(
    origin: &str,
    data: &[u8],
    root: &Path,
    limits: &Limits,
) -> Result<Option<MemFs>, SourceError> {
    check_archive_len(data.len() as u64, limits, origin)?;
    let mut w = SafeWriter::in_memory(root, limits, origin, MEMORY_BUNDLE_BYTES);
    match unpack_into(data, &mut w, limits, origin) {
        Ok(()) => {}
        // over the memory cap: the disk unpacks it (or refuses it)
        Err(_) if w.sink.over_cap() => return Ok(None),
        Err(e) => return Err(e),
    }
    let sink = w.into_sink();
    if sink.has_symlinks() {
        return Ok(None);
    }
    Ok(Some(sink.fs))
}

/// Deterministic bundle of `dir` (for `krmsync bundle create`): entries
/// sorted by path, mtime 0, uid/gid 0, modes 0644/0755, relative symlinks
/// kept only when they stay in the tree (else an error naming the link),
/// `.git` entries skipped. Identical trees give identical bytes.
pub fn create_bundle(dir: &Path) -> Result<Vec<u8>, SourceError> {
    let mut entries = Vec::new();
    collect(dir, Path::new(""), &mut entries)?;
    entries.sort_by(|a, b| a.0.as_os_str().as_bytes().cmp(b.0.as_os_str().as_bytes()));

    let gz = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(Vec::new(), flate2::Compression::default());
    let mut builder = tar::Builder::new(gz);
    for (rel, kind) in &entries {
        let full = dir.join(rel);
        let mut h = tar::Header::new_gnu();
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        h.set_username("")
            .and_then(|_| h.set_groupname(""))
            .map_err(|e| io_err(format!("bundling {}", rel.display()), e))?;
        let res = match kind {
            Kind::Dir => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(0o755);
                h.set_size(0);
                builder.append_data(&mut h, rel, io::empty())
            }
            Kind::File { executable } => {
                let data = fs::read(&full)
                    .map_err(|e| io_err(format!("reading {}", full.display()), e))?;
                h.set_entry_type(tar::EntryType::Regular);
                h.set_mode(if *executable { 0o755 } else { 0o644 });
                h.set_size(data.len() as u64);
                builder.append_data(&mut h, rel, data.as_slice())
            }
            Kind::Symlink(target) => {
                h.set_entry_type(tar::EntryType::Symlink);
                h.set_mode(0o777);
                h.set_size(0);
                builder.append_link(&mut h, rel, target)
            }
        };
        res.map_err(|e| SourceError::Archive(format!("bundling '{}': {e}", rel.display())))?;
    }
    let gz = builder
        .into_inner()
        .map_err(|e| SourceError::Archive(format!("finishing bundle of {}: {e}", dir.display())))?;
    gz.finish()
        .map_err(|e| SourceError::Archive(format!("compressing bundle of {}: {e}", dir.display())))
}

enum Kind {
    Dir,
    File { executable: bool },
    Symlink(PathBuf),
}

fn collect(root: &Path, rel: &Path, out: &mut Vec<(PathBuf, Kind)>) -> Result<(), SourceError> {
    let here = root.join(rel);
    let rd = fs::read_dir(&here).map_err(|e| io_err(format!("reading {}", here.display()), e))?;
    for entry in rd {
        let entry = entry.map_err(|e| io_err(format!("reading {}", here.display()), e))?;
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let child = rel.join(&name);
        let full = entry.path();
        let meta = full
            .symlink_metadata()
            .map_err(|e| io_err(format!("inspecting {}", full.display()), e))?;
        let ft = meta.file_type();
        if ft.is_symlink() {
            let target = fs::read_link(&full)
                .map_err(|e| io_err(format!("reading link {}", full.display()), e))?;
            let dir_comps: Vec<&OsStr> = rel
                .components()
                .filter_map(|c| match c {
                    Component::Normal(n) => Some(n),
                    _ => None,
                })
                .collect();
            check_link_target(&dir_comps, &target).map_err(|why| {
                SourceError::Archive(format!(
                    "symlink '{}' to '{}' {why}; bundles keep only relative links inside the tree",
                    child.display(),
                    target.display()
                ))
            })?;
            out.push((child, Kind::Symlink(target)));
        } else if ft.is_dir() {
            out.push((child.clone(), Kind::Dir));
            collect(root, &child, out)?;
        } else if ft.is_file() {
            out.push((
                child,
                Kind::File {
                    executable: meta.permissions().mode() & 0o111 != 0,
                },
            ));
        } else {
            return Err(SourceError::Archive(format!(
                "'{}' is not a regular file, directory or symlink",
                child.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A raw GNU header whose name bytes are written directly, so `..` and
    /// absolute paths get through (`Header::set_path` refuses them).
    fn header(name: &str, kind: tar::EntryType, size: u64, link: Option<&str>) -> tar::Header {
        let mut h = tar::Header::new_gnu();
        let bytes = name.as_bytes();
        h.as_old_mut().name[..bytes.len()].copy_from_slice(bytes);
        if let Some(l) = link {
            let lb = l.as_bytes();
            h.as_old_mut().linkname[..lb.len()].copy_from_slice(lb);
        }
        h.set_entry_type(kind);
        h.set_size(size);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_cksum();
        h
    }

    enum E<'a> {
        File(&'a str, &'a [u8]),
        Dir(&'a str),
        Link(&'a str, &'a str),
        Hard(&'a str, &'a str),
        Fifo(&'a str),
    }

    fn tar_gz(entries: &[E<'_>]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for e in entries {
            match e {
                E::File(n, data) => {
                    let h = header(n, tar::EntryType::Regular, data.len() as u64, None);
                    b.append(&h, *data).unwrap();
                }
                E::Dir(n) => {
                    let h = header(n, tar::EntryType::Directory, 0, None);
                    b.append(&h, io::empty()).unwrap();
                }
                E::Link(n, t) => {
                    let h = header(n, tar::EntryType::Symlink, 0, Some(t));
                    b.append(&h, io::empty()).unwrap();
                }
                E::Hard(n, t) => {
                    let h = header(n, tar::EntryType::Link, 0, Some(t));
                    b.append(&h, io::empty()).unwrap();
                }
                E::Fifo(n) => {
                    let h = header(n, tar::EntryType::Fifo, 0, None);
                    b.append(&h, io::empty()).unwrap();
                }
            }
        }
        let raw = b.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&raw).unwrap();
        gz.finish().unwrap()
    }

    /// Unpacks into a fresh dir below a tempdir that also holds an
    /// `outside` dir, and returns (tempdir, error).
    /// The unpack into memory refuses the same archives with the same
    /// message, or leaves them to the disk (symlinks).
    fn refused(entries: &[E<'_>], limits: &Limits) -> (tempfile::TempDir, SourceError) {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("outside")).unwrap();
        let data = tar_gz(entries);
        let dest = tmp.path().join("dest");
        let err = unpack_tar_gz(&data, &dest, limits).unwrap_err();
        match unpack_bundle_in_memory("archive", &data, &dest, limits) {
            Err(e) => assert_eq!(e.to_string(), err.to_string()),
            Ok(None) => assert!(entries.iter().any(|e| matches!(e, E::Link(..)))),
            Ok(Some(_)) => panic!("unpacked into memory, refused on disk: {err}"),
        }
        (tmp, err)
    }

    fn assert_refused(entries: &[E<'_>], entry: &str, why: &str) -> tempfile::TempDir {
        let (tmp, err) = refused(entries, &Limits::default());
        assert!(matches!(err, SourceError::Archive(_)), "{err}");
        let msg = err.to_string();
        assert!(msg.contains(&format!("'{entry}'")), "{msg}");
        assert!(msg.contains(why), "{msg}");
        tmp
    }

    #[test]
    fn refuses_parent_dir_escape() {
        let tmp = assert_refused(&[E::File("../x", b"evil")], "../x", "'..'");
        assert!(!tmp.path().join("x").exists());
        assert_refused(&[E::File("a/../../x", b"evil")], "a/../../x", "'..'");
    }

    #[test]
    fn refuses_absolute_path() {
        assert_refused(
            &[E::File("/tmp/krmsync-evil", b"evil")],
            "/tmp/krmsync-evil",
            "absolute",
        );
        assert!(!Path::new("/tmp/krmsync-evil").exists());
    }

    #[test]
    fn refuses_symlink_out_of_tree() {
        assert_refused(&[E::Link("l", "../outside")], "l", "leaves the tree");
        assert_refused(&[E::Link("d/l", "../../outside")], "d/l", "leaves the tree");
        assert_refused(&[E::Link("l", "/etc")], "l", "absolute");
        assert_refused(&[E::Link("l", "a/../../outside")], "l", "'..' after");
    }

    #[test]
    fn refuses_write_through_symlink() {
        // The link itself is in-tree, but writing through it is refused.
        let tmp = assert_refused(
            &[E::Dir("real"), E::Link("l", "real"), E::File("l/f", b"x")],
            "l/f",
            "through a symlink",
        );
        assert!(!tmp.path().join("dest/real/f").exists());
        // Replacing a symlink by a file of the same name is refused too.
        assert_refused(
            &[E::File("t", b"1"), E::Link("l", "t"), E::File("l", b"x")],
            "l",
            "through a symlink",
        );
    }

    #[test]
    fn accepts_dot_slash_entries_like_tar_dash_c_dir_dot() {
        // What `tar czf app.tgz -C dir .` writes.
        let data = tar_gz(&[
            E::Dir("./"),
            E::File("./kustomization.yaml", b"resources: [base]\n"),
            E::Dir("./base/"),
            E::File("./base/cm.yaml", b"kind: ConfigMap\n"),
            E::Link("./link.yaml", "base/cm.yaml"),
            E::Dir("."),
        ]);
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        unpack_tar_gz(&data, &out, &Limits::default()).unwrap();
        assert_eq!(
            fs::read_to_string(out.join("base/cm.yaml")).unwrap(),
            "kind: ConfigMap\n"
        );
        assert!(out.join("kustomization.yaml").is_file());
        assert_eq!(
            fs::read_link(out.join("link.yaml")).unwrap(),
            PathBuf::from("base/cm.yaml")
        );
        let mode = fs::metadata(&out).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755, "'./' does not change the root");

        // `./` prefixes do not hide escapes.
        assert_refused(&[E::Dir("./"), E::File("./../x", b"1")], "./../x", "'..'");
        assert_refused(&[E::Link("./l", "../outside")], "./l", "leaves the tree");
        assert_refused(&[E::File("./", b"1")], "./", "empty path");
        assert_refused(&[E::Link(".", "x")], ".", "empty path");
    }

    #[test]
    fn unpacks_a_tarball_made_by_tar() {
        let Ok(status) = std::process::Command::new("tar").arg("--version").output() else {
            eprintln!("tar is not on PATH; skipping");
            return;
        };
        assert!(status.status.success());
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        sample_tree(&src);
        fs::remove_dir_all(src.join(".git")).unwrap();
        let tgz = tmp.path().join("app.tgz");
        let out = std::process::Command::new("tar")
            .arg("czf")
            .arg(&tgz)
            .arg("-C")
            .arg(&src)
            .arg(".")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let data = fs::read(&tgz).unwrap();
        let dest = tmp.path().join("dest");
        unpack_tar_gz(&data, &dest, &Limits::default()).unwrap();
        assert_eq!(
            fs::read_to_string(dest.join("overlays/prod/nested/deep/cm.yaml")).unwrap(),
            "kind: ConfigMap\n"
        );
        let mode = |p: &str| fs::metadata(dest.join(p)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode("overlays/prod/run.sh"), 0o755);
        assert_eq!(mode("kustomization.yaml"), 0o644);
    }

    /// Every file and directory below `root` in a [`MemFs`], as
    /// (relative path, content or `None` for a directory).
    fn mem_tree(fs: &MemFs, root: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
        let mut out = Vec::new();
        let mut todo = vec![root.to_path_buf()];
        while let Some(d) = todo.pop() {
            for name in fs.read_dir(&d).unwrap() {
                let p = d.join(&name);
                let rel = p.strip_prefix(root).unwrap().to_path_buf();
                match fs.kind(&p).unwrap() {
                    FileKind::Dir => {
                        out.push((rel, None));
                        todo.push(p);
                    }
                    FileKind::File => out.push((rel, Some(fs.read(&p).unwrap()))),
                }
            }
        }
        out.sort();
        out
    }

    fn disk_tree(root: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
        let mut out = Vec::new();
        let mut todo = vec![root.to_path_buf()];
        while let Some(d) = todo.pop() {
            for e in fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                let rel = p.strip_prefix(root).unwrap().to_path_buf();
                if p.is_dir() {
                    out.push((rel, None));
                    todo.push(p);
                } else {
                    out.push((rel, Some(fs::read(&p).unwrap())));
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn unpacks_into_memory_what_it_unpacks_to_disk() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        sample_tree(&src);
        fs::remove_dir_all(src.join(".git")).unwrap();
        fs::remove_file(src.join("overlays/prod/nested")).unwrap();
        let mut bundles = vec![create_bundle(&src).unwrap()];
        // `tar -C dir .` style entries, a repeated file (the last one wins)
        // and an empty directory
        bundles.push(tar_gz(&[
            E::Dir("./"),
            E::File("./kustomization.yaml", b"resources: [a.yaml]\n"),
            E::File("./a.yaml", b"first\n"),
            E::Dir("./empty/"),
            E::File("./a.yaml", b"second\n"),
            E::File("./sub/deep/b.yaml", b"b\n"),
        ]));
        for (i, data) in bundles.iter().enumerate() {
            let dest = tmp.path().join(format!("dest{i}"));
            unpack_tar_gz(data, &dest, &Limits::default()).unwrap();
            let mem = unpack_bundle_in_memory("archive", data, &dest, &Limits::default())
                .unwrap()
                .expect("kept in memory");
            assert_eq!(mem_tree(&mem, &dest), disk_tree(&dest), "bundle {i}");
        }
        let last = mem_tree(
            &unpack_bundle_in_memory("archive", &bundles[1], Path::new("/b"), &Limits::default())
                .unwrap()
                .unwrap(),
            Path::new("/b"),
        );
        assert!(last.contains(&(PathBuf::from("a.yaml"), Some(b"second\n".to_vec()))));
        assert!(last.contains(&(PathBuf::from("empty"), None)));
    }

    #[test]
    fn leaves_symlinks_and_large_bundles_to_the_disk() {
        let links = tar_gz(&[E::File("a.yaml", b"a"), E::Link("l.yaml", "a.yaml")]);
        let r = unpack_bundle_in_memory("archive", &links, Path::new("/b"), &Limits::default());
        assert!(matches!(r, Ok(None)), "{r:?}");
        // over the memory cap but within the limits: the disk unpacks it
        let big = vec![b'x'; MEMORY_BUNDLE_BYTES as usize + 1];
        let data = tar_gz(&[E::File("big.yaml", &big)]);
        let r = unpack_bundle_in_memory("archive", &data, Path::new("/b"), &Limits::default());
        assert!(matches!(r, Ok(None)), "{r:?}");
        let tmp = tempfile::tempdir().unwrap();
        unpack_tar_gz(&data, &tmp.path().join("d"), &Limits::default()).unwrap();
        // over the limits themselves: the same refusal as on disk
        let limits = Limits {
            max_unpacked_bytes: 1000,
            ..Limits::default()
        };
        let r = unpack_bundle_in_memory("archive", &data, Path::new("/b"), &limits);
        assert!(matches!(r, Err(SourceError::Limit(_))), "{r:?}");
    }

    #[test]
    fn refuses_hard_links_and_fifos() {
        assert_refused(&[E::File("a", b"1"), E::Hard("b", "a")], "b", "hard links");
        assert_refused(&[E::Fifo("p")], "p", "fifo");
    }

    #[test]
    fn enforces_file_count() {
        let limits = Limits {
            max_files: 3,
            ..Limits::default()
        };
        let (_tmp, err) = refused(
            &[
                E::Dir("d"),
                E::File("d/a", b"1"),
                E::File("d/b", b"2"),
                E::File("d/c", b"3"),
            ],
            &limits,
        );
        assert!(matches!(err, SourceError::Limit(_)), "{err}");
        assert!(err.to_string().contains("'d/c'"), "{err}");
    }

    #[test]
    fn enforces_unpacked_bytes() {
        let big = vec![0u8; 1 << 20];
        let data = tar_gz(&[E::File("small", b"ok"), E::File("zeros", &big)]);
        assert!(data.len() < 4096, "compresses well: {}", data.len());
        let limits = Limits {
            max_unpacked_bytes: 100_000,
            ..Limits::default()
        };
        let tmp = tempfile::tempdir().unwrap();
        let err = unpack_tar_gz(&data, &tmp.path().join("d"), &limits).unwrap_err();
        assert!(matches!(err, SourceError::Limit(_)), "{err}");
        assert!(err.to_string().contains("'zeros'"), "{err}");
        let written = std::fs::metadata(tmp.path().join("d/zeros")).map(|m| m.len());
        assert!(written.map(|n| n <= 100_001).unwrap_or(true));
    }

    #[test]
    fn enforces_archive_bytes() {
        let data = tar_gz(&[E::File("a", b"hello")]);
        let limits = Limits {
            max_archive_bytes: 10,
            ..Limits::default()
        };
        let tmp = tempfile::tempdir().unwrap();
        let err = unpack_tar_gz(&data, &tmp.path().join("d"), &limits).unwrap_err();
        assert!(matches!(err, SourceError::Limit(_)), "{err}");
    }

    #[test]
    fn refuses_non_empty_destination() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("x"), "1").unwrap();
        let err = unpack_tar_gz(
            &tar_gz(&[E::File("a", b"1")]),
            tmp.path(),
            &Limits::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("not empty"), "{err}");
    }

    fn sample_tree(root: &Path) {
        std::fs::create_dir_all(root.join("base/nested/deep")).unwrap();
        std::fs::create_dir_all(root.join("overlays/prod")).unwrap();
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(root.join("kustomization.yaml"), "resources: [base]\n").unwrap();
        std::fs::write(root.join("base/nested/deep/cm.yaml"), "kind: ConfigMap\n").unwrap();
        std::fs::write(root.join("overlays/prod/run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            root.join("overlays/prod/run.sh"),
            std::fs::Permissions::from_mode(0o775),
        )
        .unwrap();
        std::fs::set_permissions(
            root.join("kustomization.yaml"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        std::os::unix::fs::symlink("../../base/nested", root.join("overlays/prod/nested")).unwrap();
    }

    #[test]
    fn bundle_round_trips_and_is_deterministic() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        sample_tree(&src);
        let a = create_bundle(&src).unwrap();
        // Same tree elsewhere, created in another order and later: same bytes.
        let src2 = tmp.path().join("src2");
        std::thread::sleep(std::time::Duration::from_millis(1100));
        sample_tree(&src2);
        let b = create_bundle(&src2).unwrap();
        assert_eq!(a, b);
        assert_eq!(create_bundle(&src).unwrap(), a);

        let out = tmp.path().join("out");
        unpack_tar_gz(&a, &out, &Limits::default()).unwrap();
        assert!(!out.join(".git").exists());
        assert_eq!(
            std::fs::read_to_string(out.join("base/nested/deep/cm.yaml")).unwrap(),
            "kind: ConfigMap\n"
        );
        assert_eq!(
            std::fs::read_link(out.join("overlays/prod/nested")).unwrap(),
            PathBuf::from("../../base/nested")
        );
        assert_eq!(
            std::fs::read_to_string(out.join("overlays/prod/nested/deep/cm.yaml")).unwrap(),
            "kind: ConfigMap\n"
        );
        let mode = |p: &str| std::fs::metadata(out.join(p)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode("overlays/prod/run.sh"), 0o755);
        assert_eq!(mode("kustomization.yaml"), 0o644);
        assert_eq!(mode("base/nested"), 0o755);

        // Entries are sorted with zeroed metadata.
        let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(a.as_slice()));
        let mut names = Vec::new();
        for e in ar.entries().unwrap() {
            let e = e.unwrap();
            assert_eq!(e.header().mtime().unwrap(), 0);
            assert_eq!(e.header().uid().unwrap(), 0);
            names.push(e.path().unwrap().to_string_lossy().into_owned());
        }
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert!(names.iter().all(|n| !n.starts_with(".git")), "{names:?}");
    }

    #[test]
    fn bundle_refuses_escaping_symlink() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("sub")).unwrap();
        std::os::unix::fs::symlink("../../etc/passwd", tmp.path().join("sub/evil")).unwrap();
        let err = create_bundle(tmp.path()).unwrap_err();
        assert!(err.to_string().contains("'sub/evil'"), "{err}");
    }

    #[test]
    fn unpack_bundle_caches_by_digest() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        sample_tree(&src);
        let data = create_bundle(&src).unwrap();
        let ws = Workspace::new(tmp.path().join("ws")).unwrap();
        let origin = "ConfigMap apps/site-bundle key bundle.tar.gz";
        let first = unpack_bundle(&ws, "apps_site", origin, &data, &Limits::default()).unwrap();
        assert!(!first.cached);
        assert!(first.revision.starts_with("sha256:"));
        assert!(first.dir.join("kustomization.yaml").is_file());
        let second = unpack_bundle(&ws, "apps_site", origin, &data, &Limits::default()).unwrap();
        assert!(second.cached);
        assert_eq!(second.dir, first.dir);

        let bad = tar_gz(&[E::File("../x", b"1")]);
        let err = unpack_bundle(&ws, "apps_site", origin, &bad, &Limits::default()).unwrap_err();
        assert!(err.to_string().contains(origin), "{err}");
        assert!(
            first.dir.is_dir(),
            "failed unpack keeps the previous revision"
        );
        assert_eq!(
            std::fs::read_dir(ws.root().join("apps_site"))
                .unwrap()
                .count(),
            1
        );
    }
}
