//! The core's one error type. Every variant has a stable [`ErrorCode`] that MCP clients,
//! the UI and HTTP statuses derive from (never the message). Messages name the argument
//! and the fix.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// The config cannot be read as config (not JSON, wrong type, no home); the message says where.
    #[error("invalid config: {0}")]
    Config(String),
    /// Config values break the rules of `config::fields`: one entry per bad key,
    /// each naming the key, the value and what is allowed.
    #[error("invalid config: {}{}", file_prefix(.file), join_fields(.fields))]
    InvalidConfig {
        /// The file the values came from, when they came from one.
        file: Option<PathBuf>,
        /// Every refused setting.
        fields: Vec<FieldError>,
    },
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

/// The stable, machine-readable reason of a failure. It is the one vocabulary of error
/// kinds: MCP clients read it from `error[<code>]: message`, the UI from `ApiError.code`,
/// and HTTP answers derive their status from it. Nothing classifies errors by message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// A tool or API argument is invalid (HTTP 400).
    InvalidArgument,
    /// A path resolves outside the project root or another jail.
    PathOutsideRoot,
    /// A path lies in a protected directory (the state home, the config's directory, an
    /// agent's home), which no tool may touch (HTTP 403).
    PathProtected,
    /// A file, directory, route or record does not exist (HTTP 404).
    NotFound,
    /// The config file or a config change is invalid (HTTP 400).
    InvalidConfig,
    /// Refused by policy (exec allowlist, tty, read-only area).
    Refused,
    /// A budget would be exceeded (notes `maxBytes`, spend cap, artifact budget).
    BudgetExceeded,
    /// A persisted file was corrupt and moved aside.
    CorruptState,
    /// A conversation/project binding problem.
    Binding,
    /// A model provider failed.
    Provider,
    /// The database failed.
    Store,
    /// The secrets store failed or is unreachable (HTTP 503).
    Secrets,
    /// Cancelled or timed out.
    Cancelled,
    /// Another job holds what the operation needs (HTTP 409).
    Busy,
    /// An I/O error.
    Io,
    /// A handler failed outside the error type (a panicked task, a lost worker).
    Internal,
}

impl ErrorCode {
    /// The code as written on the wire, e.g. `"path_outside_root"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => "invalid_argument",
            ErrorCode::PathOutsideRoot => "path_outside_root",
            ErrorCode::PathProtected => "path_protected",
            ErrorCode::NotFound => "not_found",
            ErrorCode::InvalidConfig => "invalid_config",
            ErrorCode::Refused => "refused",
            ErrorCode::BudgetExceeded => "budget_exceeded",
            ErrorCode::CorruptState => "corrupt_state",
            ErrorCode::Binding => "binding",
            ErrorCode::Provider => "provider",
            ErrorCode::Store => "store",
            ErrorCode::Secrets => "secrets",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::Busy => "busy",
            ErrorCode::Io => "io",
            ErrorCode::Internal => "internal",
        }
    }

    /// The HTTP status an `/api` answer with this code carries: bad input 400, missing 404,
    /// protected path 403, busy 409, secrets store unreachable 503, anything else 500.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::InvalidArgument | ErrorCode::InvalidConfig => 400,
            ErrorCode::NotFound => 404,
            ErrorCode::PathProtected => 403,
            ErrorCode::Busy => 409,
            ErrorCode::Secrets => 503,
            _ => 500,
        }
    }

    /// The text of a failed MCP tool call: `error[<code>]: <message>`.
    pub fn mcp_text(self, message: impl std::fmt::Display) -> String {
        format!("error[{}]: {message}", self.as_str())
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl From<ErrorCode> for String {
    fn from(c: ErrorCode) -> String {
        c.as_str().to_string()
    }
}

impl Error {
    /// The stable code of this error (see [`ErrorCode`]).
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::InvalidArgument(_) => ErrorCode::InvalidArgument,
            Error::PathOutsideRoot(_) => ErrorCode::PathOutsideRoot,
            Error::PathProtected(_) => ErrorCode::PathProtected,
            Error::NotFound(_) => ErrorCode::NotFound,
            Error::Config(_) | Error::InvalidConfig { .. } => ErrorCode::InvalidConfig,
            Error::Refused(_) => ErrorCode::Refused,
            Error::Budget(_) => ErrorCode::BudgetExceeded,
            Error::Corrupt { .. } => ErrorCode::CorruptState,
            Error::Binding(_) => ErrorCode::Binding,
            Error::Provider(_) => ErrorCode::Provider,
            Error::Store(_) => ErrorCode::Store,
            Error::Secrets(_) => ErrorCode::Secrets,
            Error::Cancelled(_) => ErrorCode::Cancelled,
            Error::Busy(_) => ErrorCode::Busy,
            Error::Io { .. } => ErrorCode::Io,
        }
    }

    /// This error as the text of a failed MCP tool call: `error[<code>]: <message>`.
    pub fn mcp_text(&self) -> String {
        self.code().mcp_text(self)
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

fn join_fields(fields: &[FieldError]) -> String {
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

/// Why a value was refused, as a stable code the UI and scripts can match on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldCode {
    /// The key is not a setting (or not editable there).
    UnknownKey,
    /// The value has the wrong JSON type (text for a number, ...).
    WrongType,
    /// `null` for a setting that needs a value.
    Required,
    /// A number outside the allowed range.
    OutOfRange,
    /// A string (or list entry) that is not one of the allowed values.
    NotAllowed,
    /// A string of the wrong shape (not `provider/model-id`, not an IP address, ...).
    BadFormat,
    /// Two settings contradict each other (the error names the first).
    Conflict,
}

impl FieldCode {
    /// The code as written on the wire, e.g. `"out_of_range"`.
    pub fn as_str(self) -> &'static str {
        match self {
            FieldCode::UnknownKey => "unknown_key",
            FieldCode::WrongType => "wrong_type",
            FieldCode::Required => "required",
            FieldCode::OutOfRange => "out_of_range",
            FieldCode::NotAllowed => "not_allowed",
            FieldCode::BadFormat => "bad_format",
            FieldCode::Conflict => "conflict",
        }
    }
}

/// One refused setting: which key, the value given, why (code) and a sentence for people.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldError {
    /// Dotted key path as written in the file, e.g. `output.maxFileLines` (for map entries
    /// the entry's path, e.g. `memories.providers.local.api`). Empty for the whole change.
    pub key: String,
    /// The refused value (JSON; `null` when there is none to show).
    pub value: Value,
    /// Machine-readable reason.
    pub code: FieldCode,
    /// A full sentence naming the key, the value and what is allowed.
    pub message: String,
}

impl FieldError {
    /// A field error with its parts.
    pub fn new(
        key: impl Into<String>,
        value: Value,
        code: FieldCode,
        message: impl Into<String>,
    ) -> Self {
        Self {
            key: key.into(),
            value,
            code,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_wire_text_and_http_status() {
        let e = Error::PathOutsideRoot("path \"../x\" is outside".into());
        assert_eq!(e.code(), ErrorCode::PathOutsideRoot);
        assert_eq!(
            e.mcp_text(),
            "error[path_outside_root]: path \"../x\" is outside"
        );
        assert_eq!(Error::InvalidArgument("x".into()).code().http_status(), 400);
        assert_eq!(
            Error::InvalidConfig {
                file: None,
                fields: Vec::new()
            }
            .code()
            .http_status(),
            400
        );
        assert_eq!(Error::NotFound("a".into()).code().http_status(), 404);
        assert_eq!(Error::Busy("b".into()).code().http_status(), 409);
        assert_eq!(Error::Secrets("s".into()).code().http_status(), 503);
        assert_eq!(Error::Provider("p".into()).code().http_status(), 500);
        assert_eq!(String::from(ErrorCode::Internal), "internal");
    }

    #[test]
    fn config_errors_join_field_messages_after_the_file() {
        use super::{FieldCode, FieldError};
        let e = Error::InvalidConfig {
            file: Some("/h/codex.config.json".into()),
            fields: vec![
                FieldError::new("a.b", 0.into(), FieldCode::OutOfRange, "a.b = 0 is bad"),
                FieldError::new("a.c", 1.into(), FieldCode::OutOfRange, "a.c = 1 is bad"),
            ],
        };
        assert_eq!(
            e.to_string(),
            "invalid config: /h/codex.config.json: a.b = 0 is bad; a.c = 1 is bad"
        );
    }
}
