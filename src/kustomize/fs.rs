//! Filesystem views the engine reads through.
//!
//! The engine never touches `std::fs` directly: it reads through a
//! [`FileSystem`], either [`DiskFs`] (the real disk, optionally confined to a
//! directory, as the controller does for a fetched bundle) or [`MemFs`] (an
//! in-memory tree, for tests and for callers that already hold the files).
//! All paths handed to a `FileSystem` are absolute and lexically clean.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Component, Path, PathBuf};

/// What a path names, after following symbolic links.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    File,
    Dir,
}

/// Read-only access to a tree of files.
pub trait FileSystem: Send + Sync {
    /// The whole content of a file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// `None` when nothing exists at `path`.
    fn kind(&self, path: &Path) -> Option<FileKind>;
    /// Names of the entries of a directory, sorted.
    fn read_dir(&self, path: &Path) -> io::Result<Vec<String>>;
    /// The path with every symbolic link resolved (the path must exist).
    fn real_path(&self, path: &Path) -> io::Result<PathBuf>;
}

/// Lexically normalises a path: removes `.`, folds `..`, keeps it absolute.
pub fn clean(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            Component::Normal(n) => out.push(n),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// Joins `rel` onto `base` (unless `rel` is absolute) and cleans the result.
pub fn join(base: &Path, rel: &str) -> PathBuf {
    let p = Path::new(rel);
    if p.is_absolute() {
        clean(p)
    } else {
        clean(&base.join(p))
    }
}

/// The real disk. With a confinement root, any path (after resolving
/// symbolic links) outside that root is refused, whatever the kustomization's
/// load restrictor says: the controller uses this for fetched bundles.
#[derive(Clone, Debug, Default)]
pub struct DiskFs {
    confine: Option<PathBuf>,
}

impl DiskFs {
    /// Unconfined access to the whole disk (the CLI).
    pub fn new() -> DiskFs {
        DiskFs { confine: None }
    }

    /// Access confined to `root` (resolved once, here).
    pub fn confined(root: &Path) -> io::Result<DiskFs> {
        Ok(DiskFs {
            confine: Some(std::fs::canonicalize(root)?),
        })
    }

    fn check(&self, path: &Path) -> io::Result<PathBuf> {
        let real = std::fs::canonicalize(path)?;
        if let Some(root) = &self.confine
            && !real.starts_with(root)
        {
            return Err(outside_root(path, &real, root));
        }
        Ok(real)
    }
}

/// The refusal of a confined view for `path`, which resolves to `real`.
fn outside_root(path: &Path, real: &Path, root: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "'{}' resolves to '{}', outside the confined root '{}'",
            path.display(),
            real.display(),
            root.display()
        ),
    )
}

impl FileSystem for DiskFs {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        if self.confine.is_none() {
            return std::fs::read(path);
        }
        let real = self.check(path)?;
        std::fs::read(real)
    }

    fn kind(&self, path: &Path) -> Option<FileKind> {
        let md = if self.confine.is_none() {
            std::fs::metadata(path).ok()?
        } else {
            std::fs::metadata(self.check(path).ok()?).ok()?
        };
        if md.is_dir() {
            Some(FileKind::Dir)
        } else {
            Some(FileKind::File)
        }
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let real = self.check(path)?;
        let mut names = Vec::new();
        for e in std::fs::read_dir(real)? {
            names.push(e?.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    fn real_path(&self, path: &Path) -> io::Result<PathBuf> {
        self.check(path)
    }
}

/// A view that refuses every path outside `root`, as [`DiskFs::confined`]
/// does on disk, with the same message: for an in-memory tree standing where
/// a confined directory would (the controller renders small bundles from
/// memory at the path their tree would have on disk).
pub struct Confined {
    inner: std::sync::Arc<dyn FileSystem>,
    root: PathBuf,
}

impl Confined {
    /// `root` must be absolute.
    pub fn new(inner: std::sync::Arc<dyn FileSystem>, root: &Path) -> Confined {
        Confined {
            inner,
            root: clean(root),
        }
    }

    fn check(&self, path: &Path) -> io::Result<PathBuf> {
        let real = clean(path);
        if !real.starts_with(&self.root) {
            return Err(outside_root(path, &real, &self.root));
        }
        Ok(real)
    }
}

impl FileSystem for Confined {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.inner.read(&self.check(path)?)
    }

    fn kind(&self, path: &Path) -> Option<FileKind> {
        self.inner.kind(&self.check(path).ok()?)
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        self.inner.read_dir(&self.check(path)?)
    }

    fn real_path(&self, path: &Path) -> io::Result<PathBuf> {
        self.inner.real_path(&self.check(path)?)
    }
}

/// An in-memory tree of files. Directories exist implicitly (every parent
/// of a file) or explicitly ([`MemFs::add_dir`]); symbolic links are not
/// modelled, so `real_path` is the cleaned path.
#[derive(Clone, Debug, Default)]
pub struct MemFs {
    files: BTreeMap<PathBuf, Vec<u8>>,
    dirs: BTreeSet<PathBuf>,
}

impl MemFs {
    pub fn new() -> MemFs {
        let mut fs = MemFs::default();
        fs.dirs.insert(PathBuf::from("/"));
        fs
    }

    /// Adds (or replaces) a file; `path` must be absolute.
    pub fn add_file(&mut self, path: impl AsRef<Path>, content: impl Into<Vec<u8>>) -> &mut Self {
        let p = clean(path.as_ref());
        let mut parent = p.parent();
        while let Some(d) = parent {
            self.dirs.insert(d.to_path_buf());
            parent = d.parent();
        }
        self.files.insert(p, content.into());
        self
    }

    /// Adds an (empty) directory.
    pub fn add_dir(&mut self, path: impl AsRef<Path>) -> &mut Self {
        let mut cur = Some(clean(path.as_ref()));
        while let Some(d) = cur {
            cur = d.parent().map(Path::to_path_buf);
            self.dirs.insert(d);
        }
        self
    }
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("'{}' doesn't exist", path.display()),
    )
}

impl FileSystem for MemFs {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.files
            .get(&clean(path))
            .cloned()
            .ok_or_else(|| not_found(path))
    }

    fn kind(&self, path: &Path) -> Option<FileKind> {
        let p = clean(path);
        if self.files.contains_key(&p) {
            Some(FileKind::File)
        } else if self.dirs.contains(&p) {
            Some(FileKind::Dir)
        } else {
            None
        }
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let p = clean(path);
        if !self.dirs.contains(&p) {
            return Err(not_found(path));
        }
        let mut names = BTreeSet::new();
        for f in self.files.keys().chain(self.dirs.iter()) {
            if f.parent() == Some(p.as_path())
                && let Some(n) = f.file_name()
            {
                names.insert(n.to_string_lossy().into_owned());
            }
        }
        Ok(names.into_iter().collect())
    }

    fn real_path(&self, path: &Path) -> io::Result<PathBuf> {
        let p = clean(path);
        if self.kind(&p).is_some() {
            Ok(p)
        } else {
            Err(not_found(path))
        }
    }
}

/// A [`MemFs`] layered over another view: files of the upper layer shadow
/// the lower one, directory listings are merged. The controller uses it to
/// wrap a fetched bundle in a generated kustomization (`targetNamespace`)
/// without writing into the bundle.
pub struct OverlayFs {
    upper: MemFs,
    lower: std::sync::Arc<dyn FileSystem>,
}

impl OverlayFs {
    pub fn new(upper: MemFs, lower: std::sync::Arc<dyn FileSystem>) -> OverlayFs {
        OverlayFs { upper, lower }
    }
}

impl FileSystem for OverlayFs {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        match self.upper.kind(path) {
            Some(FileKind::File) => self.upper.read(path),
            _ => self.lower.read(path),
        }
    }

    fn kind(&self, path: &Path) -> Option<FileKind> {
        self.upper.kind(path).or_else(|| self.lower.kind(path))
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let upper = self.upper.read_dir(path);
        let lower = self.lower.read_dir(path);
        match (upper, lower) {
            (Err(e), Err(_)) => Err(e),
            (u, l) => {
                let mut names: BTreeSet<String> = u.unwrap_or_default().into_iter().collect();
                names.extend(l.unwrap_or_default());
                Ok(names.into_iter().collect())
            }
        }
    }

    fn real_path(&self, path: &Path) -> io::Result<PathBuf> {
        match self.upper.kind(path) {
            Some(FileKind::File) => self.upper.real_path(path),
            _ => self
                .lower
                .real_path(path)
                .or_else(|_| self.upper.real_path(path)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlay_shadows_and_merges() {
        let mut lower = MemFs::new();
        lower
            .add_file("/b/kustomization.yaml", "lower")
            .add_file("/b/a.yaml", "a");
        let mut upper = MemFs::new();
        upper
            .add_file("/b/kustomization.yaml", "upper")
            .add_file("/b/gen/kustomization.yaml", "g");
        let fs = OverlayFs::new(upper, std::sync::Arc::new(lower));
        assert_eq!(
            fs.read(Path::new("/b/kustomization.yaml")).unwrap(),
            b"upper"
        );
        assert_eq!(fs.read(Path::new("/b/a.yaml")).unwrap(), b"a");
        assert_eq!(
            fs.read_dir(Path::new("/b")).unwrap(),
            vec!["a.yaml", "gen", "kustomization.yaml"]
        );
        assert_eq!(fs.kind(Path::new("/b/gen")), Some(FileKind::Dir));
        assert!(fs.real_path(Path::new("/b/gen/kustomization.yaml")).is_ok());
        assert!(fs.read(Path::new("/b/none")).is_err());
    }

    #[test]
    fn clean_folds_dots() {
        assert_eq!(clean(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(
            join(Path::new("/a/b"), "../x.yaml"),
            PathBuf::from("/a/x.yaml")
        );
        assert_eq!(join(Path::new("/a/b"), "/etc/x"), PathBuf::from("/etc/x"));
    }

    #[test]
    fn memfs_lists_and_reads() {
        let mut fs = MemFs::new();
        fs.add_file("/k/kustomization.yaml", "resources: []")
            .add_file("/k/sub/a.yaml", "a: 1")
            .add_dir("/k/empty");
        assert_eq!(fs.kind(Path::new("/k")), Some(FileKind::Dir));
        assert_eq!(fs.kind(Path::new("/k/sub/a.yaml")), Some(FileKind::File));
        assert_eq!(fs.kind(Path::new("/k/nope")), None);
        assert_eq!(
            fs.read_dir(Path::new("/k")).unwrap(),
            vec!["empty", "kustomization.yaml", "sub"]
        );
        assert_eq!(fs.read(Path::new("/k/sub/../sub/a.yaml")).unwrap(), b"a: 1");
        assert!(fs.read(Path::new("/k/missing")).is_err());
    }

    #[test]
    fn disk_confinement_refuses_escape() {
        let dir = std::env::temp_dir().join(format!("krmsync-fs-test-{}", std::process::id()));
        let inner = dir.join("root");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::write(dir.join("outside.yaml"), "x: 1").unwrap();
        std::fs::write(inner.join("inside.yaml"), "y: 1").unwrap();
        let fs = DiskFs::confined(&inner).unwrap();
        let real_inner = std::fs::canonicalize(&inner).unwrap();
        assert!(fs.read(&real_inner.join("inside.yaml")).is_ok());
        let err = fs.read(&real_inner.join("../outside.yaml")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
