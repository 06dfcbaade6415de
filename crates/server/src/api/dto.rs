//! Wire types of the UI API: what `/api/...` returns as JSON and what the Tauri commands
//! return. The TypeScript twins in `ui/src/api/types/` are generated from these by `ts-rs`
//! (see `api::tests::ts_bindings_are_current`), so the two sides cannot drift; the derives
//! exist in test builds only, keeping ts-rs out of the shipped binaries.
//!
//! Invariant: no DTO carries a secret; keys appear only as [`KeyStatus::hint`] (last 4
//! characters). Times are Unix milliseconds (UTC); money is US dollars as `f64`; token
//! counts are plain integers (exported to TypeScript as `number`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
#[cfg(test)]
use ts_rs::TS;

use codex_free_agent_usage::report;

/// One failed field of a config change: the key path (`output.maxFileLines`), a stable
/// reason code and a sentence for people.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct FieldError {
    /// Dotted key path as written in `codex.config.json`, e.g. `output.maxFileLines`; empty
    /// when the whole change is malformed.
    pub key: String,
    /// Why, as [`codex_free_core::config::FieldCode::as_str`]: `unknown_key`, `wrong_type`,
    /// `required`, `out_of_range`, `not_allowed`, `bad_format` or `conflict`.
    pub code: String,
    /// What is wrong and what is allowed (names the key and the value).
    pub message: String,
}

/// The error body every failing API call returns: a stable `code` (see
/// [`codex_free_core::Error::code`]) the UI matches on, a human message, and per-field errors for
/// config changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ApiError {
    /// Stable machine code, e.g. `invalid_config`, `secrets`, `not_found`.
    pub code: String,
    /// Human-readable message naming the argument and the fix.
    pub message: String,
    /// Per-field problems (config validation); empty otherwise.
    pub fields: Vec<FieldError>,
}

/// Kind of a config field, which decides the input widget and the type check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum FieldKind {
    /// Whole number within `min..=max`.
    Integer,
    /// Decimal number within `min..=max` (may be null when `nullable`).
    Number,
    /// true/false.
    Boolean,
    /// Free text (may be null when `nullable`).
    Text,
    /// One of `choices`.
    Choice,
    /// A list of strings (each one of `choices` when that is non-empty).
    List,
}

/// One editable setting as the Settings page shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ConfigField {
    /// Block name (`output`, `memory`, `memories`, `exec`, `server`, `command`, `projectDoc`, `audit`).
    pub block: String,
    /// Dotted key path, e.g. `output.maxFileLines`.
    pub key: String,
    /// Widget/type.
    pub kind: FieldKind,
    /// Default value (JSON).
    #[cfg_attr(test, ts(type = "unknown"))]
    pub default: serde_json::Value,
    /// Unit shown beside the input (`lines`, `bytes`, `tokens`, `ms`, `days`, `hours`, `USD`, ...); empty when none.
    pub unit: String,
    /// Smallest allowed value (numbers only).
    pub min: Option<f64>,
    /// Largest allowed value (numbers only).
    pub max: Option<f64>,
    /// Allowed values for `choice` and `list` kinds.
    pub choices: Vec<String>,
    /// Whether `null` is allowed (meaning "use the default behaviour").
    pub nullable: bool,
    /// One sentence on what the setting does.
    pub help: String,
    /// True when a change takes effect only after the server (or app) restarts.
    pub restart: bool,
}

/// The Settings page's data: the schema, the effective values and the file's overrides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ConfigView {
    /// Path of `codex.config.json`.
    pub path: String,
    /// Every editable field.
    pub fields: Vec<ConfigField>,
    /// Effective config (defaults + overrides) as JSON.
    #[cfg_attr(test, ts(type = "Record<string, any>"))]
    pub effective: serde_json::Value,
    /// What the file holds (only values that differ from the defaults).
    #[cfg_attr(test, ts(type = "Record<string, any>"))]
    pub overrides: serde_json::Value,
    /// Warnings from loading (unknown keys).
    pub warnings: Vec<String>,
}

/// Result of a config validation or save.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ConfigSaveResult {
    /// True when the file was written (never true when `errors` is non-empty).
    pub saved: bool,
    /// Per-field problems; nothing is saved when any exist.
    pub errors: Vec<FieldError>,
    /// What the file holds now (after a save) or would hold (after a dry validation).
    #[cfg_attr(test, ts(type = "Record<string, any>"))]
    pub overrides: serde_json::Value,
    /// Keys this change sets to a new value that a running server reads only at startup
    /// (`exec.*`, `server.*`, `memory.dir`), e.g. `["exec.mode"]`: restart to apply them.
    pub restart_required: Vec<String>,
}

/// The OS sandbox commands run in, as the dashboard shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct SandboxView {
    /// True when commands run confined.
    pub enforced: bool,
    /// `landlock`, `seatbelt` or `none`.
    pub mechanism: String,
    /// One line on what commands may do.
    pub summary: String,
    /// Set when commands run without the sandbox: why and what it means.
    pub warning: Option<String>,
}

/// State of the embedded MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum ServerState {
    /// Listening.
    Running,
    /// Not listening (stopped by the user or not started).
    Stopped,
    /// Failed to start or crashed; see `error`.
    Error,
    /// This process does not host a server (e.g. a test harness).
    Unknown,
}

/// The MCP server as the dashboard and tray show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ServerStatus {
    /// Running / stopped / error.
    pub state: ServerState,
    /// MCP endpoint, e.g. `http://127.0.0.1:3000/mcp` (no token in it).
    pub url: Option<String>,
    /// MCP clients seen in the last 5 minutes.
    pub clients: u32,
    /// The last start/serve error, if any.
    pub error: Option<String>,
}

/// State of the background memory pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum PipelineState {
    /// Waiting for the next trigger.
    Idle,
    /// A phase is running.
    Running,
    /// Paused by the user (no new runs start).
    Paused,
    /// Turned off in config (`memories.enabled = false`).
    Disabled,
    /// The monthly spend cap is reached; no model calls until next month or a higher cap.
    CapReached,
    /// No pipeline in this process.
    Unavailable,
    /// No model can be called (no key, local server not running): nothing runs until the
    /// user fixes it.
    NoModel,
    /// The last pass failed; `message` says why.
    Failing,
}

/// What fixes a card's error state: a sentence and the UI page where it is done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct Fix {
    /// What to do, in words.
    pub text: String,
    /// UI page that does it (`models`, `settings`, `connect`, ...), when there is one.
    pub page: Option<String>,
}

/// The pipeline as the dashboard shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct PipelineStatus {
    /// Current state.
    pub state: PipelineState,
    /// When the next scheduled run starts (Unix ms), if known.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub next_run_ms: Option<i64>,
    /// When the last run finished (Unix ms), if any.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub last_run_ms: Option<i64>,
    /// A one-line explanation (why paused/disabled, what is running).
    pub message: String,
    /// What fixes the state, when it is an error state (`no_model`, `failing`, `cap_reached`).
    pub fix: Option<Fix>,
}

/// Spend against the monthly cap (`memories.monthly_spend_cap_usd`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct Spend {
    /// Cost of today's requests (UTC day), USD; requests without a price are not in it.
    pub today_usd: f64,
    /// Cost of this calendar month's requests (UTC), USD.
    pub month_usd: f64,
    /// The cap, USD; null = no cap.
    pub cap_usd: Option<f64>,
    /// `month_usd >= cap_usd`.
    pub cap_reached: bool,
    /// Requests this month whose model has no known price (their cost is unknown, not 0).
    pub unpriced_requests: u32,
}

/// A recent error for the dashboard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct RecentError {
    /// When (Unix ms).
    #[cfg_attr(test, ts(type = "number"))]
    pub time_ms: i64,
    /// Where: `server`, `pipeline`, `keyring`, `config`, or a run phase.
    pub source: String,
    /// What happened.
    pub message: String,
}

/// Which secret store holds provider keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct KeyringStatus {
    /// Label of the backend, e.g. `Secret Service`, `kernel keyutils (fallback: lost at reboot)`.
    pub backend: String,
    /// True when the preferred OS store was unreachable and a fallback is in use.
    pub fallback: bool,
    /// Why the preferred store is unavailable (e.g. no D-Bus session bus), if it is.
    pub error: Option<String>,
}

/// Everything the dashboard shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct Status {
    /// Crate version.
    pub version: String,
    /// State home path.
    pub home: String,
    /// MCP server.
    pub server: ServerStatus,
    /// Pipeline.
    pub pipeline: PipelineStatus,
    /// Spend vs cap.
    pub spend: Spend,
    /// Secret store.
    pub keyring: KeyringStatus,
    /// Most recent errors first (at most 10).
    pub recent_errors: Vec<RecentError>,
    /// The command sandbox for the config file's `exec` block on this machine.
    pub sandbox: SandboxView,
    /// This server's own MCP transcripts kept under the state home.
    pub transcripts: TranscriptsView,
    /// Why memory cannot reach Codex sessions, ending in the command that fixes it; null
    /// when it can or Codex is not used.
    pub codex_memory: Option<String>,
}

/// The server's own MCP transcripts (`<home>/transcripts`): what is kept and for how long.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct TranscriptsView {
    /// Transcript files.
    #[cfg_attr(test, ts(type = "number"))]
    pub files: u64,
    /// Their total size, bytes.
    #[cfg_attr(test, ts(type = "number"))]
    pub bytes: u64,
    /// `memories.mcp_transcript_retention_days`: days one is kept once extracted.
    pub retention_days: u32,
}

/// Where a provider key currently comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum KeySource {
    /// The OS keyring (or its labelled fallback).
    Keyring,
    /// The provider's environment variable (e.g. `OPENAI_API_KEY`).
    Env,
    /// No key.
    None,
}

/// A provider key as shown to the user: never the key itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct KeyStatus {
    /// Where the key comes from.
    pub source: KeySource,
    /// `…abcd` (last 4 characters) when a key is set; `…` for very short keys.
    pub hint: Option<String>,
    /// The environment variable consulted when the keyring has no entry.
    pub env_var: String,
}

/// A model provider and the state of its key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ProviderInfo {
    /// Provider id used in `provider/model-id` (`openai`, `anthropic`, `openrouter`, ...).
    pub id: String,
    /// Display name.
    pub name: String,
    /// API base URL.
    pub base_url: String,
    /// False for local servers (Ollama, LM Studio) that take no key.
    pub needs_key: bool,
    /// Key state.
    pub key: KeyStatus,
}

/// A model with its price and context window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ModelInfo {
    /// `provider/model-id`, the value stored in `memories.extract_model` etc.
    pub id: String,
    /// Provider id.
    pub provider: String,
    /// USD per 1M input tokens; null = price unknown (never shown as $0).
    pub input_per_mtok_usd: Option<f64>,
    /// USD per 1M cached input tokens; null = unknown or no cache discount.
    pub cached_input_per_mtok_usd: Option<f64>,
    /// USD per 1M output tokens; null = unknown.
    pub output_per_mtok_usd: Option<f64>,
    /// Context window in tokens, if known.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub context_window: Option<u64>,
}

/// The Models & keys page: providers, known models, and the model chosen per stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ModelsView {
    /// Providers with key state.
    pub providers: Vec<ProviderInfo>,
    /// Models with prices (from the price table).
    pub models: Vec<ModelInfo>,
    /// `memories.extract_model` (null = default model).
    pub extract_model: Option<String>,
    /// `memories.consolidation_model` (null = default model).
    pub consolidation_model: Option<String>,
    /// The model used when a stage's model is null, if the catalog knows one.
    pub default_model: Option<String>,
    /// Where keys are stored.
    pub keyring: KeyringStatus,
    /// Where the bundled prices come from and the day they were taken (LiteLLM's table,
    /// its version; `memories.prices` overrides it).
    pub price_table_source: String,
    /// The cheapest capable hosted model of each provider, cheapest first (blended 3:1
    /// input:output price; context window of at least 100k tokens so a session fits).
    pub cheap: Vec<CheapChoice>,
    /// Local model servers found answering on 127.0.0.1, with their models (no key, no cost).
    pub local: Vec<LocalModels>,
}

/// Result of "test connection".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ConnectionTest {
    /// True when the provider answered and accepted the key.
    pub ok: bool,
    /// What happened (status code, model count, or the error).
    pub message: String,
    /// Round trip in milliseconds, when a request was made.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub latency_ms: Option<u64>,
    /// The model the test request went to (`provider/model-id`), when one was called.
    pub model: Option<String>,
    /// What the test request cost, USD; null = no request made or price unknown.
    pub cost_usd: Option<f64>,
}

/// A cheap model offered first to a new user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct CheapChoice {
    /// `provider/model-id`.
    pub id: String,
    /// Provider id (whose key it needs).
    pub provider: String,
    /// USD per 1M input tokens.
    pub input_per_mtok_usd: f64,
    /// USD per 1M output tokens.
    pub output_per_mtok_usd: f64,
    /// Context window, tokens.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub context_window: Option<u64>,
}

/// A local model server (Ollama, LM Studio) found answering on this machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct LocalModels {
    /// Provider id (`ollama`, `lmstudio`).
    pub provider: String,
    /// Its base URL.
    pub base_url: String,
    /// Models it lists, as `provider/model-id`.
    pub models: Vec<String>,
}

/// One model request of a pipeline run (a row of the usage log, which records every
/// model request so spend can be audited).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct RequestRow {
    /// Run this request belongs to.
    pub run_id: String,
    /// Start time (Unix ms).
    #[cfg_attr(test, ts(type = "number"))]
    pub time_ms: i64,
    /// `phase1` or `phase2`.
    pub phase: String,
    /// `provider/model-id`.
    pub model: String,
    /// Input tokens (including cached ones).
    #[cfg_attr(test, ts(type = "number"))]
    pub input_tokens: u64,
    /// Cached input tokens (a subset of `input_tokens`).
    #[cfg_attr(test, ts(type = "number"))]
    pub cached_input_tokens: u64,
    /// Output tokens (including reasoning).
    #[cfg_attr(test, ts(type = "number"))]
    pub output_tokens: u64,
    /// Cost in USD; null = the model has no known price.
    pub cost_usd: Option<f64>,
    /// Duration in milliseconds.
    #[cfg_attr(test, ts(type = "number"))]
    pub duration_ms: u64,
    /// `ok`, `no_output`, `failed`, `cancelled`, `skipped_cap`.
    pub outcome: String,
    /// The error message for failed requests.
    pub error: Option<String>,
    /// Receipt: SHA-256 (hex) of the sealed request bytes that left; null when nothing was
    /// sent or the row predates receipts. With `memories.keep_sent_days` the bytes are at
    /// `<home>/sent/<sha256>.json` and `GET /api/sent/<sha256>`.
    #[serde(default)]
    pub sent_sha256: Option<String>,
    /// Receipt: size of those bytes.
    #[serde(default)]
    #[cfg_attr(test, ts(type = "number | null"))]
    pub sent_bytes: Option<u64>,
    /// Receipt: secrets redacted and private spans removed before it left, by rule.
    #[serde(default)]
    #[cfg_attr(test, ts(type = "Record<string, number>"))]
    pub redactions: BTreeMap<String, u64>,
    /// Whether the sealed bytes are kept (`memories.keep_sent_days`) and can be opened.
    #[serde(default)]
    pub sent_kept: bool,
}

/// The sealed bytes of one sent request, kept by `memories.keep_sent_days`
/// (`GET /api/sent/{sha256}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct SentRequest {
    /// The receipt's hash (checked against the content).
    pub sha256: String,
    /// The request as the outgoing gate sealed it (canonical JSON).
    pub text: String,
}

/// One pipeline run: its requests summed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct RunRow {
    /// Run id.
    pub run_id: String,
    /// Start of the first request (Unix ms).
    #[cfg_attr(test, ts(type = "number"))]
    pub time_ms: i64,
    /// Phase of the run (`phase1`, `phase2`, or `mixed`).
    pub phase: String,
    /// What started it (`startup`, `watch`, `manual`, `force`, `periodic`); empty when unknown.
    pub trigger: String,
    /// Model (or `mixed` when requests used several).
    pub model: String,
    /// Number of requests.
    pub requests: u32,
    /// Summed input tokens.
    #[cfg_attr(test, ts(type = "number"))]
    pub input_tokens: u64,
    /// Summed cached input tokens.
    #[cfg_attr(test, ts(type = "number"))]
    pub cached_input_tokens: u64,
    /// Summed output tokens.
    #[cfg_attr(test, ts(type = "number"))]
    pub output_tokens: u64,
    /// Summed known cost, USD; null when no request had a price.
    pub cost_usd: Option<f64>,
    /// Requests whose cost is unknown (no price).
    pub unpriced_requests: u32,
    /// Summed request durations, ms.
    #[cfg_attr(test, ts(type = "number"))]
    pub duration_ms: u64,
    /// `ok` when every request succeeded, else the first non-ok outcome.
    pub outcome: String,
    /// First error message, if any.
    pub error: Option<String>,
    /// Bytes the run's requests sent (sum of their receipts).
    #[cfg_attr(test, ts(type = "number"))]
    pub sent_bytes: u64,
    /// Redactions of the run's requests by rule, summed.
    #[cfg_attr(test, ts(type = "Record<string, number>"))]
    pub redactions: BTreeMap<String, u64>,
    /// The run's requests, oldest first.
    pub request_rows: Vec<RequestRow>,
}

/// Sums over a set of requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct UsageTotals {
    /// Bucket label: `2026-05-03` (day), `2026-W18` (ISO week), `2026-05` (month), or `all`.
    pub label: String,
    /// Bucket start (Unix ms, UTC); 0 for `all`.
    #[cfg_attr(test, ts(type = "number"))]
    pub start_ms: i64,
    /// Number of runs.
    pub runs: u32,
    /// Number of requests.
    pub requests: u32,
    /// Input tokens.
    #[cfg_attr(test, ts(type = "number"))]
    pub input_tokens: u64,
    /// Cached input tokens.
    #[cfg_attr(test, ts(type = "number"))]
    pub cached_input_tokens: u64,
    /// Output tokens.
    #[cfg_attr(test, ts(type = "number"))]
    pub output_tokens: u64,
    /// Known cost, USD.
    pub cost_usd: f64,
    /// Requests with unknown cost.
    pub unpriced_requests: u32,
    /// Failed requests.
    pub failed_requests: u32,
}

/// One failed or refused MCP tool call, from the audit trail. Carries no argument value
/// and no error message (messages can quote file contents): only the stable code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct AuditRefusal {
    /// When the call started (Unix ms).
    #[cfg_attr(test, ts(type = "number"))]
    pub time_ms: i64,
    /// Tool name.
    pub tool: String,
    /// Error code, e.g. `refused`, `path_outside_root`, `unknown_tool`.
    pub code: String,
    /// Hashed conversation key (`conv-…`) or the MCP handler's instance id.
    pub conversation: String,
    /// Wall time of the call, milliseconds.
    #[cfg_attr(test, ts(type = "number"))]
    pub duration_ms: u64,
}

/// The dashboard's "Last refusals": the newest failed tool calls of the audit trail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct RefusalsView {
    /// `audit.enabled`: false means no new lines are written.
    pub enabled: bool,
    /// The current audit file (`<home>/audit/audit.jsonl`).
    pub file: String,
    /// Newest first.
    pub refusals: Vec<AuditRefusal>,
    /// The newest tool calls that changed a file another program runs later outside the
    /// sandbox (a `Makefile`, `.envrc`, CI workflow), newest first.
    pub runs_later: Vec<RunsLaterChange>,
}

/// One tool call that changed files run later outside the sandbox (from the audit trail).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct RunsLaterChange {
    /// When the call started (Unix ms).
    #[cfg_attr(test, ts(type = "number"))]
    pub time_ms: i64,
    /// Tool name (`write_file`, `apply_patch`, `exec_command`, `show_changes`).
    pub tool: String,
    /// Project-relative paths of the changed files.
    pub paths: Vec<String>,
    /// Hashed conversation key (`conv-…`) or the MCP handler's instance id.
    pub conversation: String,
}

/// Filter of the Runs & costs page. Every field is optional; empty strings mean "any".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(default)]
pub struct RunFilter {
    /// Earliest request time (Unix ms, inclusive).
    #[cfg_attr(test, ts(type = "number | null"))]
    pub since_ms: Option<i64>,
    /// Latest request time (Unix ms, exclusive).
    #[cfg_attr(test, ts(type = "number | null"))]
    pub until_ms: Option<i64>,
    /// Only this phase.
    pub phase: Option<String>,
    /// Only this model (`provider/model-id`).
    pub model: Option<String>,
    /// Only this outcome.
    pub outcome: Option<String>,
}

/// The Runs & costs page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct RunsView {
    /// Matching runs, newest first.
    pub runs: Vec<RunRow>,
    /// Total over all matching requests.
    pub total: UsageTotals,
    /// Per UTC day, oldest first (days without requests omitted).
    pub daily: Vec<UsageTotals>,
    /// Per ISO week, oldest first.
    pub weekly: Vec<UsageTotals>,
    /// Per calendar month, oldest first.
    pub monthly: Vec<UsageTotals>,
    /// Distinct phases, models and outcomes in the unfiltered data (for filter menus).
    pub phases: Vec<String>,
    /// Distinct models.
    pub models: Vec<String>,
    /// Distinct outcomes.
    pub outcomes: Vec<String>,
}

/// A step of a saved plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct PlanStep {
    /// What to do.
    pub step: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: String,
}

/// A saved note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct Note {
    /// Key.
    pub key: String,
    /// Value.
    pub value: String,
}

/// Task memory of one project (its `memory.json`, keyed by the canonical root), read-only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ProjectMemory {
    /// Folder name under `projects/` (`<name>-<hash>`).
    pub slug: String,
    /// Canonical project root, when the file records it.
    pub root: Option<String>,
    /// Notes, sorted by key.
    pub notes: Vec<Note>,
    /// Plan steps in order.
    pub plan: Vec<PlanStep>,
    /// Bytes used by notes (keys + values).
    #[cfg_attr(test, ts(type = "number"))]
    pub notes_bytes: u64,
    /// The notes budget (`memory.maxBytes`).
    #[cfg_attr(test, ts(type = "number"))]
    pub max_bytes: u64,
    /// Last modification (Unix ms).
    #[cfg_attr(test, ts(type = "number | null"))]
    pub updated_ms: Option<i64>,
    /// A problem reading the file (corrupt JSON), if any.
    pub error: Option<String>,
}

/// A pipeline memory file with its budget gauge (the hard line/byte caps that keep
/// injected memory small).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct MemoryFile {
    /// File name relative to the memory folder (`MEMORY.md`, `memory_summary.md`).
    pub name: String,
    /// Whether it exists.
    pub exists: bool,
    /// Line count.
    #[cfg_attr(test, ts(type = "number"))]
    pub lines: u64,
    /// Size in bytes.
    #[cfg_attr(test, ts(type = "number"))]
    pub bytes: u64,
    /// Line budget.
    #[cfg_attr(test, ts(type = "number"))]
    pub max_lines: u64,
    /// Byte budget.
    #[cfg_attr(test, ts(type = "number"))]
    pub max_bytes: u64,
    /// Content, cut at 256 KiB (`truncated` says so).
    pub content: String,
    /// True when `content` is not the whole file.
    pub truncated: bool,
}

/// The Memory page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct MemoryView {
    /// Pipeline memory folder.
    pub memories_dir: String,
    /// `MEMORY.md` and `memory_summary.md`.
    pub files: Vec<MemoryFile>,
    /// Task memory per project, most recently updated first.
    pub projects: Vec<ProjectMemory>,
    /// Both memory versions: which one is served, each one's pipeline state, summary and
    /// (V2) readiness.
    pub versions: codex_free_pipeline::v2::state::VersionsState,
}

/// Result of a pipeline or server control action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ActionResult {
    /// True when the action was accepted.
    pub ok: bool,
    /// What happened.
    pub message: String,
}

/// Body of `PUT /api/keys/{provider}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct SetKeyRequest {
    /// The API key. Never echoed back, never logged.
    pub key: String,
}

/// One coding agent on the Connect page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ConnectClient {
    /// `codex`, `claude`, `pi` or `chatgpt`.
    pub client: String,
    /// Its program is on `PATH` (or its home directory exists).
    pub installed: bool,
    /// It has an MCP config we register in (Codex, Claude).
    pub has_mcp: bool,
    /// Its MCP config lists our server.
    pub connected: bool,
    /// Its instructions file holds our memory block (not for ChatGPT).
    pub linked: bool,
    /// Connected through `connect` (undo is possible).
    pub recorded: bool,
    /// When the memory block was last rewritten (RFC 3339), if ever.
    pub last_refresh: Option<String>,
    /// The files involved.
    pub files: Vec<String>,
    /// A problem reading them (e.g. a config that does not parse, with file and line).
    pub problem: Option<String>,
}

/// The Connect page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ConnectView {
    /// Every client.
    pub clients: Vec<ConnectClient>,
    /// Why memory cannot reach Codex sessions, ending in the command that fixes it
    /// (`codex-free connect codex`); null when it can or Codex is not used.
    pub codex_memory: Option<String>,
    /// The command line registered for stdio clients, or why there is none.
    pub server_command: String,
}

/// A previewed or applied connect/undo: the exact diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ConnectPlanView {
    /// The client.
    pub client: String,
    /// `true` for an undo.
    pub undo: bool,
    /// Unified diff of every file change (empty when nothing changes); for ChatGPT, the
    /// connector steps instead.
    pub diff: String,
    /// SHA-256 of `diff`: pass it back to apply exactly what was shown.
    pub digest: String,
    /// The files that change.
    pub files: Vec<String>,
    /// `true` once written.
    pub applied: bool,
    /// What happened or would happen.
    pub message: String,
}

/// Body of `POST /api/connect/{client}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ConnectRequest {
    /// Undo instead of connect.
    #[serde(default)]
    pub undo: bool,
    /// The previewed [`ConnectPlanView::digest`]; when given and the plan changed since, the
    /// call is refused (busy) and nothing is written.
    #[serde(default)]
    pub digest: Option<String>,
}

/// Filter of the Usage page (`GET /api/usage`, `/api/usage.csv`); empty fields match all.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(default)]
pub struct AgentUsageFilter {
    /// Earliest request (Unix ms, inclusive).
    pub since_ms: Option<i64>,
    /// Latest request (Unix ms, exclusive).
    pub until_ms: Option<i64>,
    /// Only this agent: `codex`, `claude`, `pi` or `pipeline`.
    pub agent: Option<String>,
    /// Only this model (`provider/model-id`).
    pub model: Option<String>,
    /// Bucket size: `day` (default), `week` or `month`.
    pub granularity: Option<String>,
    /// Time zone the buckets are cut in: an IANA name (`America/Los_Angeles`) or `UTC`;
    /// empty = the server's local zone (`TZ`, else the system's). The page sends the
    /// browser's zone. An unknown name is an `invalid_argument` error naming it.
    pub timezone: Option<String>,
}

/// The Usage page: what every agent and the pipeline used and cost. The period report is
/// the one `codex-free usage daily --json` prints (flattened in), so page and CLI agree.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(test, derive(TS))]
pub struct AgentUsageView {
    /// Granularity, periods oldest first, the grand total of the matching rows and the
    /// models without a price.
    #[serde(flatten)]
    pub report: report::PeriodReport,
    /// All matching rows by agent (`pipeline` is this app's own spend).
    pub by_agent: BTreeMap<String, report::Totals>,
    /// All matching rows by model.
    pub by_model: BTreeMap<String, report::Totals>,
    /// The most expensive sessions (at most 20).
    pub top_sessions: Vec<report::SessionRow>,
    /// The running 5-hour block, with its pace and projection, if any.
    pub active_block: Option<report::Block>,
    /// Agents in the unfiltered data (filter menu).
    pub agents: Vec<String>,
    /// Models in the unfiltered data (filter menu).
    pub models: Vec<String>,
    /// The import's problem, when it failed (the view shows what is stored).
    pub import_error: Option<String>,
    /// Server time of the view, Unix ms (for the block countdown).
    pub now_ms: i64,
}

/// Today's and this month's spend across the agents and the pipeline (the tray's figure),
/// "today" and "this month" in the server's local time zone.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(test, derive(TS))]
pub struct AgentSpend {
    /// Today, priced requests, USD.
    pub today_usd: f64,
    /// This month, priced requests, USD.
    pub month_usd: f64,
    /// Today's requests without a price.
    pub today_unpriced_requests: i64,
    /// This month's requests without a price.
    pub month_unpriced_requests: i64,
    /// Today by agent.
    pub today_by_agent: BTreeMap<String, report::Totals>,
}

/// A memory folder the Memory page can work on: this state home's, Codex's own
/// (`$CODEX_HOME/memories`) or a Claude Code auto-memory folder
/// (`$CLAUDE_CONFIG_DIR/projects/<slug>/memory`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct MemoryFolderRef {
    /// Stable id used by the other memory calls: `home`, `codex` or `claude:<slug>`.
    pub id: String,
    /// For people, e.g. "Codex Free (this state home)".
    pub label: String,
    /// Absolute path.
    pub path: String,
    /// The folder is a git work tree (history, diffs and rollback work).
    pub git: bool,
}

/// One file of a memory folder with its layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct LayerFile {
    /// Path relative to the folder, `/`-separated.
    pub path: String,
    /// `loaded` (MEMORY.md), `summary`, `daily`, `archive`, `evidence` (raw memories,
    /// rollout summaries), `notes`, `skills` or `other`.
    pub layer: String,
    /// Lines.
    pub lines: u64,
    /// Bytes.
    pub bytes: u64,
}

/// One lint finding as the page shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct LintFindingView {
    /// The file, relative to the folder.
    pub file: String,
    /// 1-based line.
    pub line: u64,
    /// `stale_fact`, `duplicate`, `conflict`, `summary_drift`, `dangling_reference`,
    /// `secret` or `budget`.
    pub kind: String,
    /// `warning` or `error`.
    pub severity: String,
    /// What is wrong.
    pub message: String,
    /// The suggested rewrite.
    pub suggestion: String,
}

/// Layers and lint findings of one folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct MemoryInspect {
    /// The folder.
    pub folder: MemoryFolderRef,
    /// Every visible file with its layer (at most 2,000).
    pub layers: Vec<LayerFile>,
    /// Lint findings (no model call).
    pub findings: Vec<LintFindingView>,
    /// Why lint could not run (e.g. no MEMORY.md yet).
    pub lint_error: Option<String>,
}

/// Every memory folder found, this state home's first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct MemoryFolders {
    /// The folders.
    pub folders: Vec<MemoryFolderRef>,
}

/// One commit of a folder's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct CommitView {
    /// Full id.
    pub id: String,
    /// Commit time, Unix ms.
    pub time_ms: i64,
    /// First line of the message.
    pub subject: String,
    /// Files changed.
    pub files_changed: u64,
    /// Lines added.
    pub insertions: u64,
    /// Lines removed.
    pub deletions: u64,
}

/// A folder's history, newest first (at most 50 commits).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct HistoryView {
    /// The folder id.
    pub folder: String,
    /// Commits, newest first.
    pub commits: Vec<CommitView>,
}

/// What one commit changed (`git show` text, cut at 1 MiB).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct CommitDiff {
    /// The commit.
    pub id: String,
    /// Header and unified diff.
    pub text: String,
}

/// A tidy plan (nothing written).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct TidyPlanView {
    /// The folder id.
    pub folder: String,
    /// Lines that would move out of the loaded layer (or be dropped as exact duplicates).
    pub moves: u64,
    /// The plan as `memories tidy --plan` prints it.
    pub text: String,
    /// Every unit of the plan (blank lines aside), in file order.
    pub units: Vec<TidyUnitView>,
    /// What `--model` would cost for the undecided units (nothing sent), or why it cannot
    /// be estimated (no model configured, no key); `None` when no unit is undecided.
    pub model_estimate: Option<String>,
    /// The model's part of the plan, a line each: the estimate, what was sent or decided
    /// from the cache (tokens, cost), every problem; empty when no unit is undecided.
    pub model_lines: Vec<String>,
    /// `memories.tidy_ask_model`: whether the page may ask the model (and applies use its
    /// cached answers).
    pub model_enabled: bool,
    /// Requests asking would send now (0: nothing to ask, or all answered from the cache).
    pub model_requests: u64,
    /// Their estimated cost in USD (`None`: price unknown or nothing to ask).
    pub model_est_cost_usd: Option<f64>,
}

/// The body of `POST /api/memory/tidy/ask`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct TidyAskRequest {
    /// The folder id.
    pub folder: String,
}

/// One unit of a tidy plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct TidyUnitView {
    /// `<file>:<first line>`: what the apply request's `accepted` lists.
    pub key: String,
    /// `MEMORY.md` or `memory_summary.md`.
    pub file: String,
    /// 1-based first line.
    pub line: u64,
    /// Lines of the unit.
    pub lines: u64,
    /// Its first line.
    pub text: String,
    /// `kept` | `on_demand` (a topic file) | `daily` | `archive` | `merged` | `dropped`
    /// (an exact duplicate).
    pub group: String,
    /// Where it goes, e.g. `daily/2026-02-10.md`, `topics/build.md`.
    pub to: String,
    /// Why, in a few words.
    pub reason: String,
    /// The rules could not decide it (it stays unless a model is asked).
    pub undecided: bool,
}

/// The review queue (`memories.review`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ReviewView {
    /// `memories.review` is on.
    pub enabled: bool,
    /// A consolidation waits.
    pub pending: bool,
    /// The commit whose summary is served.
    pub accepted: Option<String>,
    /// The waiting commit.
    pub head: Option<String>,
    /// Changed paths.
    pub changes: Vec<String>,
    /// Unified diff accepted → waiting.
    pub patch: String,
    /// What accept/reject did.
    pub done: Option<String>,
}

/// Body of the memory actions that name a folder and maybe a commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct MemoryActionRequest {
    /// Folder id (see [`MemoryFolderRef::id`]).
    pub folder: String,
    /// A commit id for rollback.
    pub rev: Option<String>,
    /// For a tidy: the keys of the units to move ([`TidyUnitView::key`]); every other unit
    /// stays. Absent: the whole plan.
    #[serde(default)]
    pub accepted: Option<Vec<String>>,
}
