//! The core's one error type. Every variant has a stable [`Error::code`] that MCP clients
//! and the UI match on (never the message). Messages name the argument and the fix.

use std::path::PathBuf;

/// Result alias over [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every failure the core reports to a caller.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A tool or API argument is invalid; the message names the argument and the allowed values.
    #[error("{0}")]
    InvalidArgument(String),
    /// A path resolves outside the project root (or another jail); the message names the path and the rule.
    #[error("{0}")]
    PathOutsideRoot(String),
    /// A path lies in a protected directory (the state home, the config file's directory,
    /// another agent's home); the message names the path, the directory and the rule.
    #[error("{0}")]
    PathProtected(String),
    /// A file or directory does not exist.
    #[error("not found: {}", .0.display())]
    NotFound(PathBuf),
    /// A config value is invalid: key path, value, allowed range.
    #[error("invalid config: {0}")]
    Config(String),
    /// A command was refused by the exec policy (allowlist, tty, ...).
    #[error("{0}")]
    Refused(String),
    /// A budget (memory `maxBytes`, spend cap, artifact budget) would be exceeded.
    #[error("{0}")]
    Budget(String),
    /// A persisted file is corrupt; it was moved aside to `backup`.
    #[error("{message} (moved aside to {})", backup.display())]
    Corrupt {
        /// What was wrong with the file.
        message: String,
        /// Where the corrupt file now is.
        backup: PathBuf,
    },
    /// A conversation/project binding problem (missing binding, stale project); fails closed.
    #[error("{0}")]
    Binding(String),
    /// A model provider failed (HTTP error, garbage, schema-invalid output, unavailable model).
    #[error("provider: {0}")]
    Provider(String),
    /// A database error.
    #[error("database: {0}")]
    Store(String),
    /// A secrets-store error (no keyring reachable, ...).
    #[error("secrets: {0}")]
    Secrets(String),
    /// The operation was cancelled or timed out.
    #[error("{0}")]
    Cancelled(String),
    /// A job is running and the operation must wait (e.g. reset, rollback).
    #[error("{0}")]
    Busy(String),
    /// An I/O error with what we were doing.
    #[error("{context}: {source}")]
    Io {
        /// What we were doing, e.g. "reading /path/to/file".
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// Stable machine-readable code, e.g. `"path_outside_root"`.
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidArgument(_) => "invalid_argument",
            Error::PathOutsideRoot(_) => "path_outside_root",
            Error::PathProtected(_) => "path_protected",
            Error::NotFound(_) => "not_found",
            Error::Config(_) => "invalid_config",
            Error::Refused(_) => "refused",
            Error::Budget(_) => "budget_exceeded",
            Error::Corrupt { .. } => "corrupt_state",
            Error::Binding(_) => "binding",
            Error::Provider(_) => "provider",
            Error::Store(_) => "store",
            Error::Secrets(_) => "secrets",
            Error::Cancelled(_) => "cancelled",
            Error::Busy(_) => "busy",
            Error::Io { .. } => "io",
        }
    }

    /// Wrap an I/O error with a description of what we were doing.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

/// Extension to attach context to `std::io::Result`.
pub trait IoContext<T> {
    /// Map an `io::Error` into [`Error::Io`] with `context`.
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Error::io(context(), e))
    }
}
