//! The engine's error type.

use std::fmt;

/// What went wrong, coarsely: the controller maps these to condition reasons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The input is invalid (bad YAML, unknown field, failed patch, ...).
    Invalid,
    /// A file or directory is missing or unreadable.
    Io,
    /// A path escapes the kustomization root (load restrictor).
    Security,
    /// A remote reference that must be localized before rendering.
    RemoteReference,
    /// A KRM function (or plugin) config that no approved catalog pins
    /// (in-cluster builds, where every function must be approved).
    FunctionNotApproved,
    /// An approved function whose runtime cannot run here (a container
    /// runtime in-cluster, no binary for this platform).
    FunctionUnsupported,
    /// An approved exec function whose binary is neither in the bundle nor
    /// in the binary cache (nothing is downloaded during a render).
    FunctionUnavailable,
    /// A function ran and failed: non-zero exit, error results, timeout,
    /// malformed output, or a binary that does not match its pin.
    FunctionFailed,
    /// A `helmCharts` entry (or `HelmChartInflationGenerator`) in a build
    /// without a helm runner (`--enable-helm` not given; in-cluster).
    HelmNotEnabled,
}

/// A build error: a kind plus a message naming the file (and field) at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

impl Error {
    pub fn invalid(message: impl Into<String>) -> Error {
        Error {
            kind: ErrorKind::Invalid,
            message: message.into(),
        }
    }

    pub fn io(message: impl Into<String>) -> Error {
        Error {
            kind: ErrorKind::Io,
            message: message.into(),
        }
    }

    pub fn security(message: impl Into<String>) -> Error {
        Error {
            kind: ErrorKind::Security,
            message: message.into(),
        }
    }

    pub fn remote(message: impl Into<String>) -> Error {
        Error {
            kind: ErrorKind::RemoteReference,
            message: message.into(),
        }
    }

    /// An error of another kind.
    pub fn of(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// Prefixes the message with context, keeping the kind.
    pub fn context(self, ctx: impl fmt::Display) -> Error {
        Error {
            kind: self.kind,
            message: format!("{ctx}: {}", self.message),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// Result alias used throughout the engine.
pub type Result<T> = std::result::Result<T, Error>;

/// Adds context to the error of a result.
pub trait Context<T> {
    fn ctx(self, ctx: impl fmt::Display) -> Result<T>;
    fn with_ctx<F: FnOnce() -> String>(self, f: F) -> Result<T>;
}

impl<T> Context<T> for Result<T> {
    fn ctx(self, ctx: impl fmt::Display) -> Result<T> {
        self.map_err(|e| e.context(ctx))
    }
    fn with_ctx<F: FnOnce() -> String>(self, f: F) -> Result<T> {
        self.map_err(|e| e.context(f()))
    }
}
