//! The content-addressed cache of function binaries:
//! `<root>/sha256/<hex>`, where `<root>` is `$XDG_CACHE_HOME/krmsync/functions`
//! (else `$HOME/.cache/krmsync/functions`) or `--function-cache DIR`.
//! A file is only ever stored under the digest of its own bytes.

use std::io::Write;
use std::path::{Path, PathBuf};

pub use crate::source::sha256_hex;

/// The hex of a catalog pin (`sha256:<hex>` or `<hex>`), lower-cased.
pub fn pin_hex(pin: &str) -> String {
    pin.strip_prefix("sha256:")
        .unwrap_or(pin)
        .to_ascii_lowercase()
}

/// What a binary at a path is, checked against a pin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BinaryState {
    /// Present with the pinned digest.
    Verified,
    /// Present with another digest (the actual one).
    Mismatch(String),
    Missing,
}

/// Hashes `path` and compares with `hex`.
pub fn check(path: &Path, hex: &str) -> BinaryState {
    match std::fs::read(path) {
        Ok(bytes) => {
            let actual = sha256_hex(&bytes);
            if actual == hex {
                BinaryState::Verified
            } else {
                BinaryState::Mismatch(actual)
            }
        }
        Err(_) => BinaryState::Missing,
    }
}

/// The binary cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionCache {
    pub root: PathBuf,
}

impl FunctionCache {
    pub fn new(root: impl Into<PathBuf>) -> FunctionCache {
        FunctionCache { root: root.into() }
    }

    /// The default cache from the environment; `None` without
    /// `XDG_CACHE_HOME` and `HOME`.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Option<FunctionCache> {
        let base = env("XDG_CACHE_HOME")
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                env("HOME")
                    .filter(|s| !s.is_empty())
                    .map(|h| Path::new(&h).join(".cache"))
            })?;
        Some(FunctionCache::new(base.join("krmsync").join("functions")))
    }

    /// `--function-cache DIR` if given, else the default.
    pub fn resolve(flag: Option<&Path>) -> Option<FunctionCache> {
        match flag {
            Some(d) => Some(FunctionCache::new(d)),
            None => FunctionCache::from_env(&|k| std::env::var(k).ok()),
        }
    }

    /// Where the binary with this digest lives.
    pub fn path(&self, hex: &str) -> PathBuf {
        self.root.join("sha256").join(pin_hex(hex))
    }

    /// Stores `bytes` if (and only if) they hash to `hex`; atomically (a
    /// temporary file renamed into place), executable.
    pub fn store(&self, hex: &str, bytes: &[u8]) -> Result<PathBuf, String> {
        let hex = pin_hex(hex);
        let actual = sha256_hex(bytes);
        if actual != hex {
            return Err(format!(
                "refusing to store: content is sha256:{actual}, expected sha256:{hex}"
            ));
        }
        let dir = self.root.join("sha256");
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let dest = dir.join(&hex);
        // unique per store: two renders of one process may store the same
        // digest at once
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = dir.join(format!(".{hex}.{}.{seq}.tmp", std::process::id()));
        let write = || -> std::io::Result<()> {
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o755)
                .open(&tmp)?;
            f.write_all(bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &dest)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("storing {}: {e}", dest.display())
        })?;
        Ok(dest)
    }
}
