//! File loading with kustomize's load restrictions and cycle detection.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::{Error, Result};
use super::fs::{FileKind, FileSystem, clean, join};

/// kustomize's `--load-restrictor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LoadRestrictor {
    /// Files must be in or below the kustomization root (the default).
    #[default]
    RootOnly,
    /// Any file may be read.
    None,
}

/// True for references kustomize would fetch over the network.
pub fn is_remote(target: &str) -> bool {
    let t = target.trim();
    let lower = t.to_ascii_lowercase();
    lower.starts_with("https://")
        || lower.starts_with("http://")
        || lower.starts_with("git::")
        || lower.starts_with("git@")
        || lower.starts_with("ssh://")
        || lower.starts_with("git://")
        || lower.starts_with("file://")
        || lower.starts_with("github.com/")
        || lower.starts_with("gitlab.com/")
        || lower.starts_with("bitbucket.org/")
        || (lower.contains("?ref=") && !Path::new(t).exists())
}

/// Error for a remote reference: rendering never opens a connection.
pub fn remote_error(file: &Path, target: &str) -> Error {
    Error::remote(format!(
        "{}: remote reference '{target}' is not fetched: krmsync never opens network \
         connections while rendering; localize the kustomization first \
         (`krmsync localize`) so the reference becomes a local path",
        file.display()
    ))
}

/// Reads files relative to one kustomization root.
#[derive(Clone)]
pub struct Loader {
    fs: Arc<dyn FileSystem>,
    root: PathBuf,
    restrictor: LoadRestrictor,
    /// Roots of the kustomizations that led here (for cycle detection).
    ancestors: Vec<PathBuf>,
}

impl std::fmt::Debug for Loader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loader")
            .field("root", &self.root)
            .field("restrictor", &self.restrictor)
            .finish()
    }
}

fn lstat_error(path: &Path) -> Error {
    Error::io(format!(
        "evalsymlink failure on '{}' : lstat {}: no such file or directory",
        path.display(),
        path.display()
    ))
}

impl Loader {
    /// A loader for the top-level kustomization directory `dir` (absolute).
    pub fn new(fs: Arc<dyn FileSystem>, dir: &Path, restrictor: LoadRestrictor) -> Result<Loader> {
        let dir = clean(dir);
        let real = fs.real_path(&dir).map_err(|_| {
            Error::io(format!(
                "must build at directory: not a valid directory: {}",
                lstat_error(&dir)
            ))
        })?;
        if fs.kind(&real) != Some(FileKind::Dir) {
            return Err(Error::io(format!(
                "must build at directory: '{}': file is not directory",
                dir.display()
            )));
        }
        Ok(Loader {
            fs,
            root: real,
            restrictor,
            ancestors: Vec::new(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn fs(&self) -> &Arc<dyn FileSystem> {
        &self.fs
    }

    pub fn restrictor(&self) -> LoadRestrictor {
        self.restrictor
    }

    /// Absolute, cleaned path of `rel` (not resolved, not checked).
    pub fn join(&self, rel: &str) -> PathBuf {
        join(&self.root, rel)
    }

    /// What `rel` names, following links; `None` when missing.
    pub fn kind(&self, rel: &str) -> Option<FileKind> {
        self.fs.kind(&self.join(rel))
    }

    /// Resolves `rel` to a real path and applies the load restrictor.
    pub fn resolve_file(&self, rel: &str) -> Result<PathBuf> {
        let p = self.join(rel);
        let real = self.fs.real_path(&p).map_err(|e| {
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                Error::security(e.to_string())
            } else {
                lstat_error(&p)
            }
        })?;
        if self.restrictor == LoadRestrictor::RootOnly && !real.starts_with(&self.root) {
            return Err(Error::security(format!(
                "security; file '{}' is not in or below '{}'",
                real.display(),
                self.root.display()
            )));
        }
        Ok(real)
    }

    /// Reads a file relative to the root (load restrictor applied).
    pub fn read(&self, rel: &str) -> Result<Vec<u8>> {
        let real = self.resolve_file(rel)?;
        self.fs.read(&real).map_err(|e| {
            if self.fs.kind(&real) == Some(FileKind::Dir) {
                Error::io(format!("'{}' is a directory, not a file", real.display()))
            } else {
                Error::io(format!("reading '{}': {e}", real.display()))
            }
        })
    }

    /// Reads a file as UTF-8 text.
    pub fn read_string(&self, rel: &str) -> Result<String> {
        let bytes = self.read(rel)?;
        String::from_utf8(bytes).map_err(|_| {
            Error::invalid(format!("'{}' is not valid UTF-8", self.join(rel).display()))
        })
    }

    /// A loader rooted at the directory `rel` (a sub-kustomization). Such
    /// directories may lie outside the current root; a directory that
    /// contains (or is) one already visited is a cycle.
    pub fn child(&self, rel: &str) -> Result<Loader> {
        let p = self.join(rel);
        let real = self.fs.real_path(&p).map_err(|_| lstat_error(&p))?;
        if self.fs.kind(&real) != Some(FileKind::Dir) {
            return Err(Error::io(format!(
                "must build at directory: '{}': file is not directory",
                p.display()
            )));
        }
        for visited in self.ancestors.iter().chain(std::iter::once(&self.root)) {
            if visited.starts_with(&real) {
                return Err(Error::invalid(format!(
                    "cycle detected: candidate root '{}' contains visited root '{}'",
                    real.display(),
                    visited.display()
                )));
            }
        }
        let mut ancestors = self.ancestors.clone();
        ancestors.push(self.root.clone());
        Ok(Loader {
            fs: self.fs.clone(),
            root: real,
            restrictor: self.restrictor,
            ancestors,
        })
    }

    /// Path of `abs` relative to `base` for messages and origins.
    pub fn relative_to(abs: &Path, base: &Path) -> String {
        if let Ok(r) = abs.strip_prefix(base) {
            return r.to_string_lossy().into_owned();
        }
        // Walk up from base until it is a prefix.
        let mut up = PathBuf::new();
        let mut b = base.to_path_buf();
        loop {
            if let Ok(r) = abs.strip_prefix(&b) {
                return up.join(r).to_string_lossy().into_owned();
            }
            if !b.pop() {
                return abs.to_string_lossy().into_owned();
            }
            up.push("..");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kustomize::fs::MemFs;

    fn fs() -> Arc<dyn FileSystem> {
        let mut m = MemFs::new();
        m.add_file("/repo/app/kustomization.yaml", "resources: []")
            .add_file("/repo/app/a.yaml", "a: 1")
            .add_file("/repo/shared/p.yaml", "p: 1")
            .add_file("/repo/base/kustomization.yaml", "resources: []");
        Arc::new(m)
    }

    #[test]
    fn root_only_refuses_files_outside() {
        let l = Loader::new(fs(), Path::new("/repo/app"), LoadRestrictor::RootOnly).unwrap();
        assert_eq!(l.read("a.yaml").unwrap(), b"a: 1");
        let e = l.read("../shared/p.yaml").unwrap_err();
        assert_eq!(
            e.message,
            "security; file '/repo/shared/p.yaml' is not in or below '/repo/app'"
        );
        let l = Loader::new(fs(), Path::new("/repo/app"), LoadRestrictor::None).unwrap();
        assert!(l.read("../shared/p.yaml").is_ok());
    }

    #[test]
    fn directories_outside_are_allowed_but_cycles_are_not() {
        let l = Loader::new(fs(), Path::new("/repo/app"), LoadRestrictor::RootOnly).unwrap();
        let base = l.child("../base").unwrap();
        assert_eq!(base.root(), Path::new("/repo/base"));
        let e = base.child("../app").unwrap_err();
        assert!(e.message.contains("cycle detected"), "{}", e.message);
        assert!(
            l.child("..")
                .unwrap_err()
                .message
                .contains("cycle detected")
        );
    }

    #[test]
    fn missing_file_message() {
        let l = Loader::new(fs(), Path::new("/repo/app"), LoadRestrictor::RootOnly).unwrap();
        let e = l.read("nope.yaml").unwrap_err();
        assert!(
            e.message
                .starts_with("evalsymlink failure on '/repo/app/nope.yaml'")
        );
    }

    #[test]
    fn remote_detection() {
        assert!(is_remote("https://github.com/x/y//z?ref=v1"));
        assert!(is_remote(
            "github.com/kubernetes-sigs/kustomize/examples/multibases?ref=v1.0.6"
        ));
        assert!(is_remote("git@github.com:x/y.git"));
        assert!(!is_remote("../base"));
        assert!(!is_remote("deployment.yaml"));
    }

    #[test]
    fn relative_paths() {
        assert_eq!(
            Loader::relative_to(Path::new("/a/b/c.yaml"), Path::new("/a")),
            "b/c.yaml"
        );
        assert_eq!(
            Loader::relative_to(Path::new("/a/x/c.yaml"), Path::new("/a/b")),
            "../x/c.yaml"
        );
    }
}
