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
    /// A file or directory does not exist.
    #[error("not found: {}", .0.display())]
    NotFound(PathBuf),
    /// The config cannot be read as config (not JSON, wrong type, no home); the message says where.
    #[error("invalid config: {0}")]
    Config(String),
    /// Config values break the rules of [`crate::config::fields`]: one entry per bad key,
    /// each naming the key, the value and what is allowed.
    #[error("invalid config: {}{}", file_prefix(.file), join_fields(.fields))]
    InvalidConfig {
        /// The file the values came from, when they came from one.
        file: Option<PathBuf>,
        /// Every refused setting.
        fields: Vec<crate::config::FieldError>,
    },
    /// A command was refused by the exec policy (allowlist, tty, ...).
    #[error("{0}")]
    Refused(String),
    /// A budget (memory `maxBytes`, spend cap, artifact budget) would be exceeded.
    #[error("{0}")]
    Budget(String),
    /// A persisted file is corrupt; it was moved aside to `backup`.
    #[error("{message} (moved aside to {})", backup.display())]
    Corrupt { message: String, backup: PathBuf },
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
        context: String,
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
            Error::NotFound(_) => "not_found",
            Error::Config(_) | Error::InvalidConfig { .. } => "invalid_config",
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

fn file_prefix(file: &Option<PathBuf>) -> String {
    file.as_ref()
        .map(|f| format!("{}: ", f.display()))
        .unwrap_or_default()
}

fn join_fields(fields: &[crate::config::FieldError]) -> String {
    let msgs: Vec<&str> = fields.iter().map(|f| f.message.as_str()).collect();
    msgs.join("; ")
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
