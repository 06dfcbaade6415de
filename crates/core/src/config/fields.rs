//! The one table of `codex.config.json` settings: key path, type, default, unit, allowed
//! values, a one-line meaning, and whether a change applies live or needs a restart.
//!
//! Everything that describes a setting reads [`FIELDS`]: [`super::Config::validate`], the
//! Settings page schema (`codex-free-server`'s `api::schema`), and the README's configuration
//! table (a test renders [`markdown_table`] and compares). The serde structs in
//! [`super`] stay the typed form the code uses; a test checks that every entry's default
//! equals the struct's and that every struct leaf has an entry, so the two cannot drift.
//!
//! Adding a setting: add the struct field, then one entry in [`FIELDS`] (and paste the
//! rendered row into README.md; the test prints it).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// When a changed value takes effect in a running server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Apply {
    /// On the next tool call or pipeline run (the file is re-read when its mtime changes).
    Live,
    /// Only when the server (or app) starts again: read once when listening starts.
    Restart,
}

/// The value type of a setting and what it allows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// Whole number within `min..=max`.
    Integer {
        /// Smallest allowed value.
        min: u64,
        /// Largest allowed value.
        max: u64,
    },
    /// Decimal number at least `min` (finite).
    Number {
        /// Smallest allowed value.
        min: f64,
    },
    /// `true` or `false`.
    Boolean,
    /// Free text (further rules in [`Field::rule`]).
    Text,
    /// One of the listed strings.
    Choice(&'static [&'static str]),
    /// A list of non-empty strings, each one of the listed ones when the list is non-empty.
    List(&'static [&'static str]),
    /// An object keyed by name; its entries are checked by [`Field::rule`]. Edited in the file.
    Map,
}

/// A default value written as a constant (turned into JSON by [`DefaultValue::to_json`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DefaultValue {
    /// A whole number.
    Int(u64),
    /// A boolean.
    Bool(bool),
    /// A string.
    Str(&'static str),
    /// A list of strings.
    List(&'static [&'static str]),
    /// `null`: unset, the code's fallback applies.
    Null,
    /// `{}`: an empty map.
    EmptyMap,
}

impl DefaultValue {
    /// The default as it appears in the serialised config.
    pub fn to_json(self) -> Value {
        match self {
            DefaultValue::Int(n) => Value::from(n),
            DefaultValue::Bool(b) => Value::Bool(b),
            DefaultValue::Str(s) => Value::from(s),
            DefaultValue::List(l) => Value::from(l.to_vec()),
            DefaultValue::Null => Value::Null,
            DefaultValue::EmptyMap => Value::Object(serde_json::Map::new()),
        }
    }
}

pub use crate::error::{FieldCode, FieldError};

/// An extra check run on a value once its type is right: pushes errors for `key`.
pub type Rule = fn(key: &str, value: &Value, errors: &mut Vec<FieldError>);

/// One setting of `codex.config.json`.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// Dotted key path, e.g. `output.maxFileLines`; the first segment is the block.
    pub key: &'static str,
    /// Type and allowed values.
    pub kind: Kind,
    /// The default (equal to the serde struct's, checked by a test).
    pub default: DefaultValue,
    /// Whether `null` is allowed (meaning "use the built-in behaviour").
    pub nullable: bool,
    /// Unit shown beside the value (`lines`, `bytes`, `ms`, ...); empty when none.
    pub unit: &'static str,
    /// One sentence on what the setting does.
    pub doc: &'static str,
    /// When a change takes effect.
    pub apply: Apply,
    /// Whether the Settings page edits it (maps and the fixed layout version are file-only).
    pub settings_page: bool,
    /// Extra rule beyond the kind's (formats, map entries).
    pub rule: Option<Rule>,
}

impl Field {
    const fn base(key: &'static str, kind: Kind, default: DefaultValue, doc: &'static str) -> Self {
        Self {
            key,
            kind,
            default,
            nullable: false,
            unit: "",
            doc,
            apply: Apply::Live,
            settings_page: true,
            rule: None,
        }
    }

    /// A whole number with a default, range and unit.
    pub const fn int(
        key: &'static str,
        default: u64,
        min: u64,
        max: u64,
        unit: &'static str,
        doc: &'static str,
    ) -> Self {
        let mut f = Self::base(
            key,
            Kind::Integer { min, max },
            DefaultValue::Int(default),
            doc,
        );
        f.unit = unit;
        f
    }

    /// A boolean.
    pub const fn boolean(key: &'static str, default: bool, doc: &'static str) -> Self {
        Self::base(key, Kind::Boolean, DefaultValue::Bool(default), doc)
    }

    /// Text with a default.
    pub const fn text(key: &'static str, default: &'static str, doc: &'static str) -> Self {
        Self::base(key, Kind::Text, DefaultValue::Str(default), doc)
    }

    /// Text that may be `null` (the default).
    pub const fn optional_text(key: &'static str, doc: &'static str) -> Self {
        let mut f = Self::base(key, Kind::Text, DefaultValue::Null, doc);
        f.nullable = true;
        f
    }

    /// A number at least `min` that may be `null` (the default), with a unit.
    pub const fn optional_number(
        key: &'static str,
        min: f64,
        unit: &'static str,
        doc: &'static str,
    ) -> Self {
        let mut f = Self::base(key, Kind::Number { min }, DefaultValue::Null, doc);
        f.nullable = true;
        f.unit = unit;
        f
    }

    /// One of `choices`.
    pub const fn choice(
        key: &'static str,
        default: &'static str,
        choices: &'static [&'static str],
        doc: &'static str,
    ) -> Self {
        Self::base(key, Kind::Choice(choices), DefaultValue::Str(default), doc)
    }

    /// A list of strings (each one of `choices` unless that is empty).
    pub const fn list(
        key: &'static str,
        default: &'static [&'static str],
        choices: &'static [&'static str],
        doc: &'static str,
    ) -> Self {
        Self::base(key, Kind::List(choices), DefaultValue::List(default), doc)
    }

    /// A map edited in the file, its entries checked by `rule`.
    pub const fn map(key: &'static str, rule: Rule, doc: &'static str) -> Self {
        let mut f = Self::base(key, Kind::Map, DefaultValue::EmptyMap, doc);
        f.settings_page = false;
        f.rule = Some(rule);
        f
    }

    /// Mark as taking effect only after a restart.
    pub const fn restart(mut self) -> Self {
        self.apply = Apply::Restart;
        self
    }

    /// Keep off the Settings page (edited in the file only).
    pub const fn file_only(mut self) -> Self {
        self.settings_page = false;
        self
    }

    /// Add an extra rule (run once the type is right).
    pub const fn with_rule(mut self, rule: Rule) -> Self {
        self.rule = Some(rule);
        self
    }

    /// The block (first key segment), e.g. `output`.
    pub fn block(&self) -> &'static str {
        self.key.split('.').next().unwrap_or(self.key)
    }

    /// Check `value` against this setting, pushing every problem onto `errors`.
    pub fn check(&self, value: &Value, errors: &mut Vec<FieldError>) {
        let key = self.key;
        let err = |code, msg: String| FieldError::new(key, value.clone(), code, msg);
        if value.is_null() {
            if !self.nullable {
                errors.push(err(
                    FieldCode::Required,
                    format!("{key} needs a value (null is not allowed)"),
                ));
            }
            return;
        }
        let before = errors.len();
        match self.kind {
            Kind::Integer { min, max } => match value.as_u64() {
                Some(n) if n < min || n > max => errors.push(err(
                    FieldCode::OutOfRange,
                    format!("{key} = {n} is out of range (allowed {min}..={max})"),
                )),
                Some(_) => {}
                None => errors.push(err(
                    FieldCode::WrongType,
                    format!("{key} = {value} is not a whole number"),
                )),
            },
            Kind::Number { min } => match value.as_f64() {
                Some(n) if n.is_finite() && n >= min => {}
                Some(n) if n.is_finite() => errors.push(err(
                    FieldCode::OutOfRange,
                    format!("{key} = {n} must be a number >= {min}"),
                )),
                _ => errors.push(err(
                    FieldCode::WrongType,
                    format!("{key} = {value} is not a number"),
                )),
            },
            Kind::Boolean => {
                if !value.is_boolean() {
                    errors.push(err(
                        FieldCode::WrongType,
                        format!("{key} = {value} is not true or false"),
                    ));
                }
            }
            Kind::Text => {
                if !value.is_string() {
                    errors.push(err(
                        FieldCode::WrongType,
                        format!("{key} = {value} is not text"),
                    ));
                }
            }
            Kind::Choice(choices) => match value.as_str() {
                Some(c) if choices.contains(&c) => {}
                Some(c) => errors.push(err(
                    FieldCode::NotAllowed,
                    format!(
                        "{key} = \"{c}\" is not allowed (allowed {})",
                        choices.join("|")
                    ),
                )),
                None => errors.push(err(
                    FieldCode::WrongType,
                    format!("{key} = {value} is not text"),
                )),
            },
            Kind::List(choices) => match value.as_array() {
                Some(items) => {
                    for item in items {
                        match item.as_str() {
                            None => errors.push(err(
                                FieldCode::WrongType,
                                format!("{key} contains {item}, which is not text"),
                            )),
                            Some(x) if x.trim().is_empty() => errors.push(err(
                                FieldCode::NotAllowed,
                                format!("{key} contains an empty entry"),
                            )),
                            Some(x) if !choices.is_empty() && !choices.contains(&x) => {
                                errors.push(err(
                                    FieldCode::NotAllowed,
                                    format!(
                                        "{key} contains \"{x}\" (allowed {})",
                                        choices.join("|")
                                    ),
                                ))
                            }
                            Some(_) => {}
                        }
                    }
                }
                None => errors.push(err(
                    FieldCode::WrongType,
                    format!("{key} = {value} is not a list"),
                )),
            },
            Kind::Map => {
                if !value.is_object() {
                    errors.push(err(
                        FieldCode::WrongType,
                        format!("{key} = {value} is not an object"),
                    ));
                }
            }
        }
        if errors.len() == before
            && let Some(rule) = self.rule
        {
            rule(key, value, errors);
        }
    }

    /// The "unit / allowed" text of the README table, e.g. `lines, 1..=100000`.
    pub fn allowed_text(&self) -> String {
        let with_unit = |s: String| {
            if self.unit.is_empty() {
                s
            } else if s.is_empty() {
                self.unit.to_string()
            } else {
                format!("{}, {s}", self.unit)
            }
        };
        match self.kind {
            Kind::Integer { min, max } => with_unit(format!("{min}..={max}")),
            Kind::Number { min } => with_unit(format!(">= {min}")),
            Kind::Boolean => "true or false".into(),
            Kind::Text => with_unit("text".into()),
            Kind::Choice(c) => format!("one of {}", quoted(c)),
            Kind::List([]) => "list of text".into(),
            Kind::List(c) => format!("list of {}", quoted(c)),
            Kind::Map => "object".into(),
        }
    }
}

fn quoted(c: &[&str]) -> String {
    c.iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reasoning efforts a provider may be asked for.
pub const THINKING: &[&str] = &["none", "minimal", "low", "medium", "high", "xhigh"];
/// Transcript sources the pipeline reads.
pub const SOURCES: &[&str] = &["codex", "claude", "pi", "mcp"];
/// Wire formats of `memories.providers.<name>.api`.
pub const PROVIDER_APIS: &[&str] = &["openai-responses", "openai-chat", "anthropic"];
/// Values of `memories.providers.<name>.structured_output`.
pub const STRUCTURED_OUTPUT: &[&str] = &["strict", "json_object", "none"];

fn provider_model(key: &str, v: &Value, errors: &mut Vec<FieldError>) {
    if let Some(s) = v.as_str()
        && !s.contains('/')
    {
        errors.push(FieldError::new(
            key,
            v.clone(),
            FieldCode::BadFormat,
            format!("{key} = \"{s}\" must be provider/model-id (e.g. \"openai/gpt-5-mini\")"),
        ));
    }
}

/// `memories.sync.remote`: a git remote URL handed to `git fetch`/`git push` after `--`.
/// Refused: a leading `-` (would read as an option in other tools), control characters
/// (a newline splits a config line), and the `ext::`/`fd::` transports (they run a command
/// or talk to a file descriptor instead of a repository).
fn sync_remote(key: &str, v: &Value, errors: &mut Vec<FieldError>) {
    let Some(s) = v.as_str() else { return };
    if let Err(why) = crate::config::check_sync_remote(s) {
        errors.push(FieldError::new(
            key,
            v.clone(),
            FieldCode::BadFormat,
            format!("{key} = {s:?} {why}"),
        ));
    }
}

/// `exec.writableRoots`, `exec.cacheRoots`, `exec.denyRead`, `exec.allowRead` and
/// `exec.allowUnixSockets`: at most 64 entries (`exec.denyRead`: 128), each absolute or
/// `~/...` (a relative path would depend on the working directory of whoever starts the
/// server).
fn writable_root(key: &str, v: &Value, errors: &mut Vec<FieldError>) {
    let Some(list) = v.as_array() else { return };
    // exec.denyRead ships 79 credential locations and must leave room for the user's own;
    // entries that do not exist on the machine cost nothing in the sandbox.
    let max = if key == "exec.denyRead" { 128 } else { 64 };
    if list.len() > max {
        errors.push(FieldError::new(
            key,
            v.clone(),
            FieldCode::OutOfRange,
            format!("{key} has {} entries (allowed at most {max})", list.len()),
        ));
    }
    for r in list.iter().filter_map(Value::as_str) {
        if !(r.starts_with('/') || r == "~" || r.starts_with("~/")) || r.contains('\0') {
            errors.push(FieldError::new(
                key,
                v.clone(),
                FieldCode::BadFormat,
                format!(
                    "{key} contains {r:?}: each entry must be an absolute path or start with ~/"
                ),
            ));
        }
    }
}

/// `memories.exclude_paths`: at most [`super::exclude::MAX_PATTERNS`] entries, each a valid
/// glob that is absolute or starts with `~/` or `**/` ([`super::exclude::check_pattern`]).
fn exclude_pattern(key: &str, v: &Value, errors: &mut Vec<FieldError>) {
    let Some(list) = v.as_array() else { return };
    if list.len() > super::exclude::MAX_PATTERNS {
        errors.push(FieldError::new(
            key,
            v.clone(),
            FieldCode::OutOfRange,
            format!(
                "{key} has {} entries (allowed at most {})",
                list.len(),
                super::exclude::MAX_PATTERNS
            ),
        ));
    }
    for p in list.iter().filter_map(Value::as_str) {
        if let Err(why) = super::exclude::check_pattern(p) {
            errors.push(FieldError::new(
                key,
                v.clone(),
                FieldCode::BadFormat,
                format!("{key} contains {p:?}: {why}"),
            ));
        }
    }
}

fn ip_or_localhost(key: &str, v: &Value, errors: &mut Vec<FieldError>) {
    if let Some(s) = v.as_str()
        && s != "localhost"
        && s.parse::<std::net::IpAddr>().is_err()
    {
        errors.push(FieldError::new(
            key,
            v.clone(),
            FieldCode::BadFormat,
            format!("{key} = \"{s}\" is not an IP address"),
        ));
    }
}

/// A JSON object's entries by key, so that errors come in one order whether or not serde_json
/// keeps insertion order (its `preserve_order` feature depends on which crates are built
/// together: a test of this crate alone and a workspace build disagreed).
fn sorted(map: &serde_json::Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

fn providers(key: &str, v: &Value, errors: &mut Vec<FieldError>) {
    let Some(map) = v.as_object() else { return };
    for (name, p) in sorted(map) {
        let str_of = |k: &str| p.get(k).and_then(Value::as_str);
        let mut one = |k: &str, code, msg: String| {
            let value = p.get(k).cloned().unwrap_or(Value::Null);
            errors.push(FieldError::new(
                format!("{key}.{name}.{k}"),
                value,
                code,
                msg,
            ));
        };
        if let Some(api) = str_of("api")
            && !PROVIDER_APIS.contains(&api)
        {
            one(
                "api",
                FieldCode::NotAllowed,
                format!(
                    "{key}.{name}.api = \"{api}\" is not allowed (allowed {})",
                    PROVIDER_APIS.join("|")
                ),
            );
        }
        if let Some(so) = str_of("structured_output")
            && !STRUCTURED_OUTPUT.contains(&so)
        {
            one(
                "structured_output",
                FieldCode::NotAllowed,
                format!(
                    "{key}.{name}.structured_output = \"{so}\" is not allowed (allowed {})",
                    STRUCTURED_OUTPUT.join("|")
                ),
            );
        }
        if let Some(u) = str_of("base_url")
            && !(u.starts_with("http://") || u.starts_with("https://"))
        {
            one(
                "base_url",
                FieldCode::BadFormat,
                format!("{key}.{name}.base_url = \"{u}\" must start with http:// or https://"),
            );
        }
    }
}

/// The keys an `output.clients.<name>` entry may set: each is checked with the range of the
/// top-level `output.<key>` entry of [`FIELDS`].
pub const CLIENT_OUTPUT_KEYS: &[&str] = &[
    "maxToolOutputTokens",
    "maxFileLines",
    "maxFileBytes",
    "maxEntries",
    "maxTreeNodes",
];

fn client_output(key: &str, v: &Value, errors: &mut Vec<FieldError>) {
    let Some(map) = v.as_object() else { return };
    for (name, entry) in sorted(map) {
        let path = format!("{key}.{name}");
        if name.trim().is_empty() {
            errors.push(FieldError::new(
                path.clone(),
                Value::from(name.as_str()),
                FieldCode::BadFormat,
                format!("{key} has an empty client name (use the clientInfo name, e.g. codex-mcp-client)"),
            ));
        }
        let Some(o) = entry.as_object() else {
            errors.push(FieldError::new(
                path.clone(),
                entry.clone(),
                FieldCode::WrongType,
                format!("{path} = {entry} is not an object"),
            ));
            continue;
        };
        for (k, x) in sorted(o) {
            let Some(top) = CLIENT_OUTPUT_KEYS
                .contains(&k.as_str())
                .then(|| field(&format!("output.{k}")))
                .flatten()
            else {
                errors.push(FieldError::new(
                    format!("{path}.{k}"),
                    x.clone(),
                    FieldCode::UnknownKey,
                    format!(
                        "{path}.{k} is not a per-client budget (allowed {})",
                        CLIENT_OUTPUT_KEYS.join("|")
                    ),
                ));
                continue;
            };
            if x.is_null() {
                continue;
            }
            let mut inner = Vec::new();
            top.check(x, &mut inner);
            for e in inner {
                errors.push(FieldError::new(
                    format!("{path}.{k}"),
                    x.clone(),
                    e.code,
                    e.message.replacen(top.key, &format!("{path}.{k}"), 1),
                ));
            }
        }
    }
}

fn prices(key: &str, v: &Value, errors: &mut Vec<FieldError>) {
    let Some(map) = v.as_object() else { return };
    for (model, p) in sorted(map) {
        let price_ok = |k: &str, required: bool| match p.get(k) {
            None | Some(Value::Null) => !required,
            Some(x) => x.as_f64().is_some_and(|n| n.is_finite() && n >= 0.0),
        };
        let all_ok = price_ok("input_per_mtok", true)
            && price_ok("output_per_mtok", true)
            && price_ok("cached_input_per_mtok", false)
            && price_ok("cache_write_per_mtok", false);
        if !all_ok {
            errors.push(FieldError::new(
                format!("{key}.{model}"),
                p.clone(),
                FieldCode::OutOfRange,
                format!(
                    "{key}.\"{model}\" has a negative or non-finite price (USD per 1M tokens, >= 0)"
                ),
            ));
        }
        if !model.contains('/') {
            errors.push(FieldError::new(
                format!("{key}.{model}"),
                Value::from(model.as_str()),
                FieldCode::BadFormat,
                format!("{key} key \"{model}\" must be provider/model-id"),
            ));
        }
    }
}

/// Every setting, in the order the README and the Settings page list them.
pub const FIELDS: &[Field] = &[
    Field::int(
        "output.maxToolOutputTokens",
        10_000,
        500,
        100_000,
        "tokens",
        "Ceiling of any one tool result (tokens estimated as bytes / 4).",
    ),
    Field::int(
        "output.maxFileLines",
        1000,
        1,
        100_000,
        "lines",
        "Lines per read_file page.",
    ),
    Field::int(
        "output.maxFileBytes",
        131_072,
        1024,
        16 * 1024 * 1024,
        "bytes",
        "Bytes per read_file page; cuts very long lines.",
    ),
    Field::int(
        "output.maxEntries",
        500,
        1,
        100_000,
        "entries",
        "Entries per list_dir / grep page.",
    ),
    Field::int(
        "output.maxTreeNodes",
        1000,
        1,
        100_000,
        "nodes",
        "Nodes per tree page.",
    ),
    Field::map(
        "output.clients",
        client_output,
        "Budgets per MCP client by its clientInfo name, e.g. {\"codex-mcp-client\": {\"maxToolOutputTokens\": 2000}}; keys and ranges as above.",
    ),
    Field::int(
        "command.defaultTimeout",
        30_000,
        100,
        3_600_000,
        "ms",
        "Timeout of exec_command when the call gives none.",
    ),
    Field::int(
        "command.maxTimeout",
        120_000,
        100,
        3_600_000,
        "ms",
        "Largest timeout a call may ask for.",
    ),
    Field::choice(
        "exec.mode",
        "allowlist",
        &["allowlist", "unrestricted"],
        "allowlist: only listed programs run (a guardrail on top of the OS sandbox).",
    )
    .restart(),
    Field::list(
        "exec.extraAllowedCommands",
        &[],
        &[],
        "Programs allowed besides the built-in list.",
    )
    .restart(),
    Field::choice(
        "exec.sandbox",
        "os",
        &["os", "off"],
        "os: every command runs in the OS sandbox (writes only in the project, a private TMPDIR and the writable roots; protected paths unreadable).",
    )
    .restart(),
    Field::list(
        "exec.writableRoots",
        &[],
        &[],
        "Folders (absolute or ~/...) sandboxed commands may also write; anything there can be changed for good.",
    )
    .restart()
    .with_rule(writable_root),
    Field::list(
        "exec.cacheRoots",
        crate::config::DEFAULT_CACHE_ROOTS,
        &[],
        "Build and download caches (absolute or ~/...): always readable, writable only when commands have the network.",
    )
    .restart()
    .with_rule(writable_root),
    Field::list(
        "exec.denyRead",
        crate::config::DEFAULT_DENY_READ,
        &[],
        "Credential files and folders (absolute or ~/...) no command may read.",
    )
    .restart()
    .with_rule(writable_root),
    Field::list(
        "exec.allowRead",
        &[],
        &[],
        "Entries of exec.denyRead that commands may read after all, e.g. ~/.npmrc.",
    )
    .restart()
    .with_rule(writable_root),
    Field::boolean(
        "exec.network",
        false,
        "Let sandboxed commands use the network in allowlist mode.",
    )
    .restart(),
    Field::list(
        "exec.allowUnixSockets",
        &[],
        &[],
        "Unix sockets (absolute or ~/...) sandboxed commands may use, e.g. an ssh-agent; empty: none. On Linux any entry opens every pathname Unix socket.",
    )
    .restart()
    .with_rule(writable_root),
    Field::int(
        "exec.maxSessions",
        8,
        1,
        64,
        "sessions",
        "Concurrent live exec sessions.",
    )
    .restart(),
    Field::int(
        "exec.maxSpoolBytes",
        64 * 1024 * 1024,
        1 << 20,
        4 << 30,
        "bytes",
        "Command output kept on disk for continuation.",
    )
    .restart(),
    Field::int(
        "projectDoc.maxBytes",
        32_768,
        0,
        1 << 20,
        "bytes",
        "Bytes of AGENTS.md delivered.",
    ),
    Field::text(
        "server.host",
        "127.0.0.1",
        "Bind address of the HTTP server (an IP address or localhost).",
    )
    .with_rule(ip_or_localhost)
    .restart(),
    Field::int(
        "server.port",
        3000,
        0,
        65_535,
        "port",
        "TCP port of the HTTP server (0 = any free port).",
    )
    .restart(),
    Field::list(
        "server.allowedOrigins",
        &[],
        &[],
        "Extra Origin values accepted besides loopback (e.g. a tunnel).",
    )
    .restart(),
    // rmcp's Host check is configured once when the server starts listening.
    Field::list(
        "server.allowedHosts",
        &[],
        &[],
        "Extra Host values accepted besides loopback.",
    )
    .restart(),
    // 30 minutes: an agent pausing between turns keeps its session; one that vanished
    // without a DELETE stops holding memory within the half hour.
    Field::int(
        "server.sessionIdleSecs",
        1800,
        5,
        86_400,
        "s",
        "An MCP session with no request for this long is closed (the client starts a new one).",
    )
    .restart(),
    // 64: far above the handful of agents a person runs, far below what exhausts memory.
    Field::int(
        "server.maxSessionsPerToken",
        64,
        1,
        4096,
        "sessions",
        "Live MCP sessions per token: a new one closes the longest-idle, beyond that it is refused (429).",
    )
    .restart(),
    // 256 sockets of the raised open-file limit; idle ones go first, so a flood of bare
    // connections cannot lock a client out.
    Field::int(
        "server.maxConnections",
        256,
        8,
        65_535,
        "connections",
        "Open HTTP connections: a new one closes the longest-idle, beyond that it gets 503.",
    )
    .restart(),
    Field::int(
        "server.headerReadTimeoutSecs",
        20,
        1,
        600,
        "s",
        "Time to send a request's headers; also how long an idle keep-alive connection stays open.",
    )
    .restart(),
    Field::int(
        "server.bodyReadTimeoutSecs",
        60,
        1,
        3600,
        "s",
        "Time to send a whole request body (then 408 and the connection is closed).",
    )
    .restart(),
    // A one-time code is 128 bits: the limit is against flooding, 10 a minute is ample for
    // a person clicking a link.
    Field::int(
        "server.loginAttemptsPerMinute",
        10,
        1,
        600,
        "attempts",
        "/login attempts per minute for the whole process, right or wrong code (then 429).",
    )
    .restart(),
    Field::boolean(
        "memory.enabled",
        true,
        "Keep task notes and plans between conversations.",
    ),
    Field::optional_text(
        "memory.dir",
        "Folder for memory.json (empty = inside the state home).",
    )
    .restart(),
    Field::int(
        "memory.maxBytes",
        16_384,
        256,
        1 << 20,
        "bytes",
        "Budget for all notes of a project; a note over it is rejected.",
    ),
    Field::boolean(
        "audit.enabled",
        true,
        "Write one JSON line per tool call under the state home (shapes and sizes, never contents).",
    ),
    Field::int(
        "audit.maxFileBytes",
        10 << 20,
        1 << 16,
        1 << 30,
        "bytes",
        "Size at which the audit file is rotated.",
    ),
    Field::int(
        "audit.keepFiles",
        5,
        1,
        100,
        "files",
        "Rotated audit files kept besides the current one.",
    ),
    Field::choice(
        "memories.version",
        "v1",
        &["v1", "v2"],
        "Active memory version: v1 (MEMORY.md + summary, memories/) or v2 (summary only, memories_v2/); the one served to new sessions.",
    )
    .restart()
    .file_only(),
    Field::boolean(
        "memories.dual_write",
        false,
        "Run the v1 and v2 pipelines side by side on the same sessions, each into its own folder and database (one spend cap).",
    )
    .restart(),
    Field::boolean(
        "memories.enabled",
        true,
        "Run the background memory pipeline.",
    ),
    Field::boolean(
        "memories.generate_memories",
        true,
        "Extract memories from new sessions.",
    ),
    Field::boolean(
        "memories.use_memories",
        true,
        "Inject the memory summary into new sessions.",
    ),
    Field::boolean(
        "memories.dedicated_tools",
        false,
        "Offer the memories_* tools.",
    ),
    Field::boolean(
        "memories.disable_on_external_context",
        false,
        "Skip sessions that used external context.",
    ),
    Field::int(
        "memories.max_raw_memories_for_consolidation",
        256,
        1,
        4096,
        "memories",
        "Raw memories fed to consolidation.",
    ),
    Field::int(
        "memories.max_unused_days",
        30,
        0,
        365,
        "days",
        "Unused days after which a raw memory is not selected.",
    ),
    Field::int(
        "memories.max_rollout_age_days",
        10,
        0,
        90,
        "days",
        "Oldest session considered for extraction.",
    ),
    // As Claude Code keeps its transcripts: 30 days.
    Field::int(
        "memories.mcp_transcript_retention_days",
        30,
        1,
        3650,
        "days",
        "Days this server's own MCP transcripts are kept once extracted, then deleted.",
    ),
    Field::int(
        "memories.max_rollouts_per_startup",
        2,
        1,
        128,
        "sessions",
        "Sessions extracted per run.",
    ),
    Field::int(
        "memories.min_rollout_idle_hours",
        6,
        1,
        48,
        "hours",
        "Idle time before a session is extracted.",
    ),
    Field::int(
        "memories.request_timeout_secs",
        300,
        1,
        3600,
        "s",
        "Timeout of one model request.",
    ),
    Field::int(
        "memories.memory_md_max_lines",
        150,
        10,
        5000,
        "lines",
        "Most lines MEMORY.md may keep after consolidation.",
    ),
    Field::int(
        "memories.memory_md_max_bytes",
        15 * 1024,
        1024,
        1 << 20,
        "bytes",
        "Most bytes MEMORY.md may keep after consolidation.",
    ),
    Field::int(
        "memories.memory_summary_max_lines",
        60,
        5,
        1000,
        "lines",
        "Most lines of memory_summary.md.",
    ),
    Field::int(
        "memories.memory_summary_max_bytes",
        4 * 1024,
        512,
        64 * 1024,
        "bytes",
        "Most bytes of memory_summary.md.",
    ),
    Field::optional_text(
        "memories.extract_model",
        "provider/model-id for extraction (empty = default model).",
    )
    .with_rule(provider_model),
    Field::optional_text(
        "memories.consolidation_model",
        "provider/model-id for consolidation (empty = default model).",
    )
    .with_rule(provider_model),
    Field::int(
        "memories.tool_result_token_budget",
        1000,
        0,
        100_000,
        "tokens",
        "Per tool result budget before extraction (0 = no compaction).",
    ),
    Field::choice(
        "memories.extract_thinking",
        "low",
        THINKING,
        "Reasoning effort for extraction.",
    ),
    Field::choice(
        "memories.consolidation_thinking",
        "medium",
        THINKING,
        "Reasoning effort for consolidation.",
    ),
    Field::list(
        "memories.sources",
        SOURCES,
        SOURCES,
        "Agents whose sessions feed the pipeline.",
    ),
    Field::list(
        "memories.exclude_paths",
        &[],
        &[],
        "Globs of project folders (absolute, `~/...` or `**/...`) whose sessions are never sent to a model, subfolders included.",
    )
    .with_rule(exclude_pattern),
    Field::int(
        "memories.keep_sent_days",
        0,
        0,
        365,
        "days",
        "Days the exact bytes of each model request are kept in `<home>/sent/` (0600) for inspection (0 = not kept).",
    ),
    Field::choice(
        "memories.approval",
        "off",
        &["off", "new_sources", "every_request"],
        "Model requests that wait for `memories approve` (or the Outgoing page) before they are sent: none, the first of each project/agent, or every one; waiting ones never count against the cap (tidy's model requests are not queued: they are sent only on an explicit `tidy --model` or the Memory page's Ask button, after their estimate is shown).",
    ),
    Field::optional_number(
        "memories.monthly_spend_cap_usd",
        0.0,
        "USD",
        "Monthly model spend after which the pipeline stops calling models (empty = no cap).",
    ),
    Field::boolean(
        "memories.review",
        false,
        "Hold each new consolidation until `memories review accept`; sessions keep the last accepted summary.",
    ),
    Field::boolean(
        "memories.tidy_ask_model",
        false,
        "Let `memories tidy` and the Memory page ask the extraction model about units the rules cannot decide (estimate shown first, answers cached); off: they stay loaded.",
    ),
    Field::optional_text(
        "memories.sync.remote",
        "Git remote URL the memory folder pulls from before and pushes to after each consolidation (empty = no sync).",
    )
    .with_rule(sync_remote)
    .file_only(),
    Field::map(
        "memories.providers",
        providers,
        "Endpoint overrides and custom providers by name (see docs/pipeline.md).",
    ),
    Field::map(
        "memories.prices",
        prices,
        "Price overrides in USD per 1M tokens by provider/model-id (see docs/pipeline.md).",
    ),
];

/// The entry for a dotted key, if it is a setting.
pub fn field(key: &str) -> Option<&'static Field> {
    FIELDS.iter().find(|f| f.key == key)
}

/// The value at dotted `key` inside a JSON object (`None` when a segment is missing).
pub fn get_path<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    key.split('.').try_fold(v, |v, k| v.get(k))
}

/// The README's configuration table (Markdown), one row per entry of [`FIELDS`].
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| key | default | unit / allowed | applies | meaning |\n|---|---|---|---|---|\n",
    );
    for f in FIELDS {
        let applies = match f.apply {
            Apply::Live => "live",
            Apply::Restart => "restart",
        };
        out.push_str(&format!(
            "| `{}` | `{}` | {} | {applies} | {} |\n",
            f.key,
            f.default.to_json(),
            f.allowed_text(),
            f.doc
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn defaults() -> Value {
        serde_json::to_value(Config::default()).unwrap()
    }

    /// Each entry's default is the serde struct's default, so the table cannot drift.
    #[test]
    fn defaults_match_the_struct() {
        let d = defaults();
        for f in FIELDS {
            assert_eq!(
                get_path(&d, f.key),
                Some(&f.default.to_json()),
                "{}: table default differs from Config::default()",
                f.key
            );
            let mut errs = Vec::new();
            f.check(&f.default.to_json(), &mut errs);
            assert!(
                errs.is_empty(),
                "{}: default fails its own check: {errs:?}",
                f.key
            );
        }
    }

    /// Every leaf of the struct (a scalar, list or map) has exactly one entry.
    #[test]
    fn every_struct_leaf_has_one_entry() {
        fn leaves(v: &Value, path: String, out: &mut Vec<String>) {
            match v.as_object() {
                Some(o) if !o.is_empty() => {
                    for (k, x) in o {
                        let p = if path.is_empty() {
                            k.clone()
                        } else {
                            format!("{path}.{k}")
                        };
                        leaves(x, p, out)
                    }
                }
                _ => out.push(path),
            }
        }
        let mut keys = Vec::new();
        leaves(&defaults(), String::new(), &mut keys);
        let mut table: Vec<_> = FIELDS.iter().map(|f| f.key.to_string()).collect();
        keys.sort();
        table.sort();
        assert_eq!(keys, table);
    }

    /// Both ends of each range pass the struct's validation; one past either end fails.
    #[test]
    fn restart_flags_match_the_pinned_keys() {
        for f in FIELDS {
            let pinned = crate::config::RESTART_KEYS
                .iter()
                .any(|k| f.key == *k || f.key.starts_with(&format!("{k}.")));
            assert_eq!(
                f.apply == Apply::Restart,
                pinned,
                "{}: restart flag vs RESTART_KEYS",
                f.key
            );
        }
    }

    #[test]
    fn integer_ranges_hold_through_the_struct() {
        for f in FIELDS {
            let Kind::Integer { min, max } = f.kind else {
                continue;
            };
            let try_val = |n: u64| {
                let mut v = defaults();
                let (block, leaf) = f.key.split_once('.').unwrap();
                v[block][leaf] = Value::from(n);
                if f.key == "command.defaultTimeout" {
                    v["command"]["maxTimeout"] = Value::from(3_600_000);
                }
                if f.key == "command.maxTimeout" {
                    v["command"]["defaultTimeout"] = Value::from(100);
                }
                serde_json::from_value::<Config>(v).is_ok_and(|c| c.validate().is_ok())
            };
            assert!(try_val(min) && try_val(max), "{} {min}..={max}", f.key);
            assert!(!try_val(max + 1), "{} accepts {}", f.key, max + 1);
            if min > 0 {
                assert!(!try_val(min - 1), "{} accepts {}", f.key, min - 1);
            }
        }
    }

    /// Per-client budgets are checked with the top-level ranges, named by their full path.
    #[test]
    fn client_output_entries_are_checked() {
        let mut e = Vec::new();
        field("output.clients").unwrap().check(
            &serde_json::json!({
                "codex-mcp-client": {"maxToolOutputTokens": 499, "maxFileLines": 20},
                "claude-code": {"maxLines": 3},
                "x": 5
            }),
            &mut e,
        );
        let keys: Vec<_> = e.iter().map(|x| (x.key.as_str(), x.code)).collect();
        assert_eq!(
            keys,
            [
                ("output.clients.claude-code.maxLines", FieldCode::UnknownKey),
                (
                    "output.clients.codex-mcp-client.maxToolOutputTokens",
                    FieldCode::OutOfRange
                ),
                ("output.clients.x", FieldCode::WrongType),
            ]
        );
        assert!(
            e[1].message
                .contains("output.clients.codex-mcp-client.maxToolOutputTokens = 499 is out of range (allowed 500..=100000)"),
            "{}",
            e[1].message
        );
        // Through the whole file: the struct form is validated the same way.
        let err = crate::config::Config::parse(
            r#"{"output":{"clients":{"codex-mcp-client":{"maxFileBytes":10}}}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("output.clients.codex-mcp-client.maxFileBytes = 10"),
            "{err}"
        );
        let (c, w) = crate::config::Config::parse(
            r#"{"output":{"clients":{"Codex-MCP-Client":{"maxToolOutputTokens":2000}}}}"#,
        )
        .unwrap();
        assert!(w.is_empty(), "{w:?}");
        let mut o = c.output.clone();
        o.apply_client(c.output.client("codex-mcp-client").unwrap());
        assert_eq!(o.max_tool_output_tokens, 2000);
        assert_eq!(o.max_file_lines, 1000, "unset keys stay");
    }

    #[test]
    fn errors_carry_key_value_and_code() {
        let mut e = Vec::new();
        field("memories.sources")
            .unwrap()
            .check(&serde_json::json!(["codex", "vim", ""]), &mut e);
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e.iter().all(|x| x.key == "memories.sources"));
        assert_eq!(e[0].code, FieldCode::NotAllowed);
        assert!(e[0].message.contains("\"vim\""), "{}", e[0].message);
        let mut e = Vec::new();
        field("memories.providers").unwrap().check(
            &serde_json::json!({"local": {"api": "grpc", "base_url": "ftp://x"}}),
            &mut e,
        );
        let keys: Vec<_> = e.iter().map(|x| x.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "memories.providers.local.api",
                "memories.providers.local.base_url"
            ]
        );
        assert_eq!(e[0].value, serde_json::json!("grpc"));
    }

    /// README.md's configuration table lists every setting with the same default, unit and
    /// range, and nothing else. On failure the expected table is printed to paste in.
    #[test]
    fn readme_table_matches() {
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
                .unwrap();
        let section = readme
            .split("\n## Configuration")
            .nth(1)
            .expect("README has a Configuration section");
        let rows: Vec<(String, String)> = section
            .lines()
            .skip_while(|l| !l.starts_with("| key |"))
            .take_while(|l| l.starts_with('|'))
            .skip(2)
            .filter_map(|l| {
                let cells: Vec<_> = l.split(" | ").collect();
                let key = cells.first()?.trim_start_matches("| ").trim_matches('`');
                Some((key.to_string(), cells.get(1)?.trim_matches('`').to_string()))
            })
            .collect();
        let expected = markdown_table();
        for f in FIELDS {
            let row = rows.iter().find(|(k, _)| k == f.key);
            let Some((_, default)) = row else {
                panic!("README lacks {}; expected table:\n{expected}", f.key)
            };
            let parsed: Value = serde_json::from_str(default)
                .unwrap_or_else(|_| panic!("README default of {} is not JSON: {default}", f.key));
            assert_eq!(parsed, f.default.to_json(), "README default of {}", f.key);
        }
        for (k, _) in &rows {
            assert!(
                field(k).is_some(),
                "README lists {k}, which is not a setting"
            );
        }
        assert!(
            section.contains(&expected),
            "README's configuration table differs from config::fields; expected:\n{expected}"
        );
    }
}
