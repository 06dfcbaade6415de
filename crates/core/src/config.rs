//! `codex.config.json`: the user's overrides over defaults kept in code.
//!
//! Blocks and key spellings follow the public Codex Free (seed 000 / product.md SRV-6,
//! MEM-5) — camelCase: `output`, `command`, `exec`, `projectDoc`, `server`, `memory` — and
//! Codex's memories (seed 003) — snake_case: `memories`. Every key is optional. Unknown keys
//! produce warnings (never errors); a bad value fails with the key path, the value and the
//! allowed range. The file holds only what differs from the defaults ([`Config::overrides`]).
//!
//! Invariant: settings are plain data passed as arguments; there is no global config.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::Result;

/// The file name of the config inside the state home.
pub const CONFIG_FILE: &str = "codex.config.json";

/// The whole configuration. Each block defaults independently.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Config {
    /// Tool-output budgets (SRV-3..6).
    pub output: OutputConfig,
    /// Command timeouts (ms).
    pub command: CommandConfig,
    /// Exec policy.
    pub exec: ExecConfig,
    /// AGENTS.md handling.
    pub project_doc: ProjectDocConfig,
    /// HTTP server settings.
    pub server: ServerConfig,
    /// Task memory (MEM-5).
    pub memory: MemoryConfig,
    /// The background memory pipeline (seed 003, snake_case keys as there).
    pub memories: MemoriesConfig,
}

/// `output` block: every budget a tool obeys. Defaults are the public Codex Free's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OutputConfig {
    /// Hard ceiling of any tool result, in tokens (estimated as bytes / 4, see [`crate::tokens`]). Default 10000, range 500..=100000.
    pub max_tool_output_tokens: usize,
    /// Lines per `read_file` page. Default 1000, range 1..=100000.
    pub max_file_lines: usize,
    /// Bytes per `read_file` page. Default 131072, range 1024..=16777216.
    pub max_file_bytes: usize,
    /// Entries per `list_directory`/`glob`/`grep` page. Default 500, range 1..=100000.
    pub max_entries: usize,
    /// Nodes per `tree` page. Default 1000, range 1..=100000.
    pub max_tree_nodes: usize,
}

impl Default for OutputConfig {
    fn default() -> Self {
        Self {
            max_tool_output_tokens: 10_000,
            max_file_lines: 1000,
            max_file_bytes: 131_072,
            max_entries: 500,
            max_tree_nodes: 1000,
        }
    }
}

/// `command` block: command timeouts in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CommandConfig {
    /// Default timeout (ms) of `exec_command` when the call gives none. Default 30000, range 100..=3600000.
    pub default_timeout: u64,
    /// Largest timeout (ms) a call may ask for. Default 120000, range 100..=3600000.
    pub max_timeout: u64,
}

impl Default for CommandConfig {
    fn default() -> Self {
        Self {
            default_timeout: 30_000,
            max_timeout: 120_000,
        }
    }
}

/// How `exec_command` decides what may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ExecMode {
    /// Every command position must name an allowed program (a guardrail, not a sandbox).
    #[default]
    Allowlist,
    /// Anything runs.
    Unrestricted,
}

/// Whether `exec_command` runs commands inside the OS sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Landlock on Linux, Seatbelt on macOS; without one, commands run unconfined and every
    /// status surface says so.
    #[default]
    Os,
    /// No OS sandbox: commands have the user's full rights (the allowlist is then the only check).
    Off,
}

/// Default `exec.writableRoots`: the download and build caches that cargo, npm, pip, go and
/// friends write even for an offline build of a warm project, so builds work inside the
/// sandbox. Only caches: never `~/.cargo/bin`, `~/.cargo/config.toml`, `~/.rustup`, shell
/// profiles or `~/.local/bin`, which the user runs or loads later outside the sandbox. The
/// state home and the config file's directory are never writable whatever this list says
/// (the sandbox carves them out): they hold `exec.mode` and the server token, so a command
/// that could write them could switch its own guardrails off for the next server start.
/// Trade-off: a command can still plant an entry in these caches that a later unsandboxed
/// build uses; set `exec.writableRoots` to `[]` to close that at the cost of cache writes.
pub const DEFAULT_WRITABLE_ROOTS: &[&str] =
    &["~/.cargo/registry", "~/.cargo/git", "~/.npm", "~/.cache"];

/// `exec` block. Every key takes effect when the server starts (see [`RESTART_KEYS`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ExecConfig {
    /// `"allowlist"` (default) or `"unrestricted"`.
    pub mode: ExecMode,
    /// Program names allowed in addition to the built-in allowlist.
    pub extra_allowed_commands: Vec<String>,
    /// Concurrent live exec sessions. Default 8, range 1..=64.
    pub max_sessions: usize,
    /// Bytes of a command's output spooled to disk for continuation. Default 64 MiB, range 1 MiB..=4 GiB.
    pub max_spool_bytes: u64,
    /// `"os"` (default): every command runs in the OS sandbox; `"off"`: unconfined.
    pub sandbox: SandboxMode,
    /// Directories a sandboxed command may write besides the project root and its private
    /// TMPDIR: absolute paths or `~/...`; missing ones are skipped. Default
    /// [`DEFAULT_WRITABLE_ROOTS`]; at most 64 entries.
    pub writable_roots: Vec<String>,
    /// Network for sandboxed commands in allowlist mode (unrestricted mode always has it). Default false.
    pub network: bool,
}

impl Default for ExecConfig {
    fn default() -> Self {
        Self {
            mode: ExecMode::Allowlist,
            extra_allowed_commands: Vec::new(),
            max_sessions: 8,
            max_spool_bytes: 64 * 1024 * 1024,
            sandbox: SandboxMode::Os,
            writable_roots: DEFAULT_WRITABLE_ROOTS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            network: false,
        }
    }
}

impl ExecConfig {
    /// Whether sandboxed commands may use the network: always in unrestricted mode, else only with `exec.network: true`.
    pub fn network_allowed(&self) -> bool {
        self.network || self.mode == ExecMode::Unrestricted
    }
}

/// `projectDoc` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProjectDocConfig {
    /// Bytes of AGENTS.md delivered. Default 32768, range 0..=1048576.
    pub max_bytes: usize,
}

impl Default for ProjectDocConfig {
    fn default() -> Self {
        Self { max_bytes: 32_768 }
    }
}

/// `server` block (HTTP transport).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ServerConfig {
    /// Bind address. Default `127.0.0.1`.
    pub host: String,
    /// TCP port. Default 3000.
    pub port: u16,
    /// Extra `Origin` values accepted besides loopback ones (e.g. a tunnel's public origin).
    pub allowed_origins: Vec<String>,
    /// Extra `Host` values accepted besides loopback ones (e.g. a tunnel's host name).
    pub allowed_hosts: Vec<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".into(),
            port: 3000,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
        }
    }
}

/// `memory` block: task notes and plan (MEM-5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct MemoryConfig {
    /// `false` turns persistence off entirely (nothing written). Default true.
    pub enabled: bool,
    /// Explicit directory for memory.json; in multi-project mode a base with a hashed child per project.
    pub dir: Option<PathBuf>,
    /// Budget in bytes for all notes together. Default 16384, range 256..=1048576.
    pub max_bytes: usize,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            dir: None,
            max_bytes: 16_384,
        }
    }
}

/// `memories` block: the background pipeline, keys and defaults as seed 003.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoriesConfig {
    /// Memory layout version; only `"v1"`.
    pub version: String,
    /// Pipeline on/off. Default true.
    pub enabled: bool,
    /// Extract memories from new sessions. Default true.
    pub generate_memories: bool,
    /// Inject the memory summary and serve memory tools. Default true.
    pub use_memories: bool,
    /// Register `memories_*` tools. Default false.
    pub dedicated_tools: bool,
    /// Skip rollouts that used external context. Default false.
    pub disable_on_external_context: bool,
    /// Raw memories fed to phase 2. Default 256, range 1..=4096.
    pub max_raw_memories_for_consolidation: usize,
    /// Days a raw memory may go unused and still be selected. Default 30, range 0..=365.
    pub max_unused_days: u32,
    /// Oldest rollout (days) phase 1 considers. Default 10, range 0..=90.
    pub max_rollout_age_days: u32,
    /// Rollouts claimed per run. Default 2, range 1..=128.
    pub max_rollouts_per_startup: usize,
    /// Hours a rollout must be idle before extraction. Default 6, range 1..=48.
    pub min_rollout_idle_hours: u32,
    /// `provider/model-id` for phase 1; null = default model.
    pub extract_model: Option<String>,
    /// `provider/model-id` for phase 2; null = default model.
    pub consolidation_model: Option<String>,
    /// Per tool result token budget before extraction (0 disables). Default 1000, range 0..=100000.
    pub tool_result_token_budget: usize,
    /// Reasoning effort for phase 1. Default "low".
    pub extract_thinking: String,
    /// Reasoning effort for phase 2. Default "medium".
    pub consolidation_thinking: String,
    /// Sources counted as interactive (`codex`, `claude`, `pi`, `mcp`).
    pub sources: Vec<String>,
    /// Monthly spend cap in USD; when reached the pipeline stops calling models. null = no cap.
    pub monthly_spend_cap_usd: Option<f64>,
    /// Per-provider endpoint settings keyed by provider name (`openai`, `ollama`, or a
    /// custom name used as `name/model-id`). Empty by default (built-in presets apply).
    pub providers: std::collections::BTreeMap<String, ProviderSettings>,
    /// Price overrides keyed by `provider/model-id`; they win over the bundled table.
    pub prices: std::collections::BTreeMap<String, PriceOverride>,
    /// Timeout of one model HTTP request, seconds. Default 300, range 1..=3600.
    pub request_timeout_secs: u64,
    /// Most lines `MEMORY.md` may have after consolidation (HYG-1, seed 002). Default 150, range 10..=5000.
    pub memory_md_max_lines: usize,
    /// Most bytes `MEMORY.md` may have (HYG-1: 15 KiB). Default 15360, range 1024..=1048576.
    pub memory_md_max_bytes: usize,
    /// Most lines `memory_summary.md` may have (HYG-1). Default 60, range 5..=1000.
    pub memory_summary_max_lines: usize,
    /// Most bytes `memory_summary.md` may have (HYG-1: 4 KiB). Default 4096, range 512..=65536.
    pub memory_summary_max_bytes: usize,
}

/// `memories.providers.<name>`: where and how to reach a model provider.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProviderSettings {
    /// Base URL ending in the API version path, e.g. `http://127.0.0.1:11434/v1/`.
    pub base_url: Option<String>,
    /// Wire format: `openai-responses`, `openai-chat` or `anthropic`. Required for custom names.
    pub api: Option<String>,
    /// Structured output: `strict` (JSON schema enforced by the provider), `json_object`
    /// (JSON mode) or `none` (instructions only). Output is always validated locally.
    pub structured_output: Option<String>,
}

/// `memories.prices.<provider/model-id>`: USD per million tokens.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PriceOverride {
    /// Uncached input, USD per 1M tokens.
    pub input_per_mtok: f64,
    /// Output (reasoning included), USD per 1M tokens.
    pub output_per_mtok: f64,
    /// Cached input read, USD per 1M tokens; defaults to the input price.
    pub cached_input_per_mtok: Option<f64>,
    /// Cache write (Anthropic), USD per 1M tokens; defaults to the input price.
    pub cache_write_per_mtok: Option<f64>,
    /// Context window in tokens (for the 70% input cap).
    pub context_window: Option<u64>,
}

impl Default for MemoriesConfig {
    fn default() -> Self {
        Self {
            version: "v1".into(),
            enabled: true,
            generate_memories: true,
            use_memories: true,
            dedicated_tools: false,
            disable_on_external_context: false,
            max_raw_memories_for_consolidation: 256,
            max_unused_days: 30,
            max_rollout_age_days: 10,
            max_rollouts_per_startup: 2,
            min_rollout_idle_hours: 6,
            extract_model: None,
            consolidation_model: None,
            tool_result_token_budget: 1000,
            extract_thinking: "low".into(),
            consolidation_thinking: "medium".into(),
            sources: vec!["codex".into(), "claude".into(), "pi".into(), "mcp".into()],
            monthly_spend_cap_usd: None,
            providers: Default::default(),
            prices: Default::default(),
            request_timeout_secs: 300,
            memory_md_max_lines: 150,
            memory_md_max_bytes: 15 * 1024,
            memory_summary_max_lines: 60,
            memory_summary_max_bytes: 4 * 1024,
        }
    }
}

/// Settings read only when the server starts, as dotted prefixes: the exec policy and
/// sandbox, the HTTP host/origin checks and the task-memory directory. A running server keeps
/// its startup values when the file changes, so a command or tool that manages to edit the
/// file cannot widen its own rights; the output and command caps keep reloading live.
pub const RESTART_KEYS: &[&str] = &["exec", "server", "memory.dir"];

/// A loaded config plus the warnings (unknown keys) found while loading.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// The effective config.
    pub config: Config,
    /// Human-readable warnings, e.g. `unknown key "output.maxLines" (ignored)`.
    pub warnings: Vec<String>,
    /// The file read, if it existed.
    pub path: Option<PathBuf>,
}

fn range<T: PartialOrd + std::fmt::Display + Copy>(
    errs: &mut Vec<String>,
    key: &str,
    v: T,
    lo: T,
    hi: T,
) {
    if v < lo || v > hi {
        errs.push(format!("{key} = {v} is out of range (allowed {lo}..={hi})"));
    }
}

impl Config {
    /// Parse `text` (JSON). Unknown keys become warnings; type errors and range errors fail
    /// with [`Error::Config`] naming the key path, the value and the allowed range.
    pub fn parse(text: &str) -> Result<(Config, Vec<String>)> {
        let mut warnings = Vec::new();
        let de = &mut serde_json::Deserializer::from_str(text);
        let cfg: Config = serde_ignored::deserialize(de, |path| {
            warnings.push(format!("unknown key \"{path}\" (ignored)"));
        })
        .map_err(|e| Error::Config(e.to_string()))?;
        cfg.validate()?;
        Ok((cfg, warnings))
    }

    /// Check every range. Errors list all bad keys, one per line.
    pub fn validate(&self) -> Result<()> {
        let mut e = Vec::new();
        let o = &self.output;
        range(
            &mut e,
            "output.maxToolOutputTokens",
            o.max_tool_output_tokens,
            500,
            100_000,
        );
        range(&mut e, "output.maxFileLines", o.max_file_lines, 1, 100_000);
        range(
            &mut e,
            "output.maxFileBytes",
            o.max_file_bytes,
            1024,
            16 * 1024 * 1024,
        );
        range(&mut e, "output.maxEntries", o.max_entries, 1, 100_000);
        range(&mut e, "output.maxTreeNodes", o.max_tree_nodes, 1, 100_000);
        range(
            &mut e,
            "command.defaultTimeout",
            self.command.default_timeout,
            100,
            3_600_000,
        );
        range(
            &mut e,
            "command.maxTimeout",
            self.command.max_timeout,
            100,
            3_600_000,
        );
        if self.command.default_timeout > self.command.max_timeout {
            e.push(format!(
                "command.defaultTimeout = {} exceeds command.maxTimeout = {}",
                self.command.default_timeout, self.command.max_timeout
            ));
        }
        range(&mut e, "exec.maxSessions", self.exec.max_sessions, 1, 64);
        range(
            &mut e,
            "exec.maxSpoolBytes",
            self.exec.max_spool_bytes,
            1 << 20,
            4 << 30,
        );
        if self.exec.writable_roots.len() > 64 {
            e.push(format!(
                "exec.writableRoots has {} entries (allowed at most 64)",
                self.exec.writable_roots.len()
            ));
        }
        for r in &self.exec.writable_roots {
            if !(r.starts_with('/') || r == "~" || r.starts_with("~/")) || r.contains('\0') {
                e.push(format!(
                    "exec.writableRoots contains {r:?}: each entry must be an absolute path or start with ~/"
                ));
            }
        }
        range(
            &mut e,
            "projectDoc.maxBytes",
            self.project_doc.max_bytes,
            0,
            1 << 20,
        );
        range(
            &mut e,
            "memory.maxBytes",
            self.memory.max_bytes,
            256,
            1 << 20,
        );
        let m = &self.memories;
        if m.version != "v1" {
            e.push(format!(
                "memories.version = \"{}\" is not supported (allowed \"v1\")",
                m.version
            ));
        }
        range(
            &mut e,
            "memories.max_raw_memories_for_consolidation",
            m.max_raw_memories_for_consolidation,
            1,
            4096,
        );
        range(
            &mut e,
            "memories.max_unused_days",
            m.max_unused_days,
            0,
            365,
        );
        range(
            &mut e,
            "memories.max_rollout_age_days",
            m.max_rollout_age_days,
            0,
            90,
        );
        range(
            &mut e,
            "memories.max_rollouts_per_startup",
            m.max_rollouts_per_startup,
            1,
            128,
        );
        range(
            &mut e,
            "memories.min_rollout_idle_hours",
            m.min_rollout_idle_hours,
            1,
            48,
        );
        range(
            &mut e,
            "memories.tool_result_token_budget",
            m.tool_result_token_budget,
            0,
            100_000,
        );
        range(
            &mut e,
            "memories.memory_md_max_lines",
            m.memory_md_max_lines,
            10,
            5000,
        );
        range(
            &mut e,
            "memories.memory_md_max_bytes",
            m.memory_md_max_bytes,
            1024,
            1 << 20,
        );
        range(
            &mut e,
            "memories.memory_summary_max_lines",
            m.memory_summary_max_lines,
            5,
            1000,
        );
        range(
            &mut e,
            "memories.memory_summary_max_bytes",
            m.memory_summary_max_bytes,
            512,
            64 * 1024,
        );
        for (k, v) in [
            ("memories.extract_thinking", &m.extract_thinking),
            ("memories.consolidation_thinking", &m.consolidation_thinking),
        ] {
            if !["none", "minimal", "low", "medium", "high", "xhigh"].contains(&v.as_str()) {
                e.push(format!(
                    "{k} = \"{v}\" is not allowed (allowed none|minimal|low|medium|high|xhigh)"
                ));
            }
        }
        for (k, v) in [
            ("memories.extract_model", &m.extract_model),
            ("memories.consolidation_model", &m.consolidation_model),
        ] {
            if let Some(v) = v
                && !v.contains('/')
            {
                e.push(format!(
                    "{k} = \"{v}\" must be provider/model-id (e.g. \"openai/gpt-5-mini\")"
                ));
            }
        }
        for s in &m.sources {
            if !["codex", "claude", "pi", "mcp"].contains(&s.as_str()) {
                e.push(format!(
                    "memories.sources contains \"{s}\" (allowed codex|claude|pi|mcp)"
                ));
            }
        }
        if let Some(c) = m.monthly_spend_cap_usd
            && !(c.is_finite() && c >= 0.0)
        {
            e.push(format!(
                "memories.monthly_spend_cap_usd = {c} must be a number >= 0"
            ));
        }
        range(
            &mut e,
            "memories.request_timeout_secs",
            m.request_timeout_secs,
            1,
            3600,
        );
        for (name, p) in &m.providers {
            if let Some(api) = &p.api
                && !["openai-responses", "openai-chat", "anthropic"].contains(&api.as_str())
            {
                e.push(format!("memories.providers.{name}.api = \"{api}\" is not allowed (allowed openai-responses|openai-chat|anthropic)"));
            }
            if let Some(so) = &p.structured_output
                && !["strict", "json_object", "none"].contains(&so.as_str())
            {
                e.push(format!("memories.providers.{name}.structured_output = \"{so}\" is not allowed (allowed strict|json_object|none)"));
            }
            if let Some(u) = &p.base_url
                && !(u.starts_with("http://") || u.starts_with("https://"))
            {
                e.push(format!("memories.providers.{name}.base_url = \"{u}\" must start with http:// or https://"));
            }
        }
        for (model, p) in &m.prices {
            let all = [
                Some(p.input_per_mtok),
                Some(p.output_per_mtok),
                p.cached_input_per_mtok,
                p.cache_write_per_mtok,
            ];
            if all.iter().flatten().any(|v| !(v.is_finite() && *v >= 0.0)) {
                e.push(format!("memories.prices.\"{model}\" has a negative or non-finite price (USD per 1M tokens, >= 0)"));
            }
            if !model.contains('/') {
                e.push(format!(
                    "memories.prices key \"{model}\" must be provider/model-id"
                ));
            }
        }
        if self.server.host.parse::<std::net::IpAddr>().is_err() && self.server.host != "localhost"
        {
            e.push(format!(
                "server.host = \"{}\" is not an IP address",
                self.server.host
            ));
        }
        if e.is_empty() {
            Ok(())
        } else {
            Err(Error::Config(e.join("; ")))
        }
    }

    /// Load `path`. A missing file yields defaults; an unreadable or invalid one fails.
    pub fn load(path: &Path) -> Result<Loaded> {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let (config, warnings) = Self::parse(&text).map_err(|e| {
                    Error::Config(format!(
                        "{}: {}",
                        path.display(),
                        e.to_string().trim_start_matches("invalid config: ")
                    ))
                })?;
                Ok(Loaded {
                    config,
                    warnings,
                    path: Some(path.to_path_buf()),
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Loaded::default()),
            Err(e) => Err(Error::io(format!("reading config {}", path.display()), e)),
        }
    }

    /// The JSON object holding only the values that differ from the defaults (what the file stores).
    pub fn overrides(&self) -> serde_json::Value {
        let ours = serde_json::to_value(self).expect("config serialises");
        let defaults = serde_json::to_value(Config::default()).expect("config serialises");
        diff(&ours, &defaults).unwrap_or_else(|| serde_json::json!({}))
    }

    /// `self` with every [`RESTART_KEYS`] setting taken from `running` (the config the server
    /// started with): what a live reload may apply.
    pub fn pinned_to(mut self, running: &Config) -> Config {
        self.exec = running.exec.clone();
        self.server = running.server.clone();
        self.memory.dir = running.memory.dir.clone();
        self
    }

    /// Dotted keys under [`RESTART_KEYS`] whose values differ between `self` and `other`,
    /// sorted (e.g. `["exec.mode", "server.allowedHosts"]`): what needs a restart to apply.
    pub fn restart_changes(&self, other: &Config) -> Vec<String> {
        let a = serde_json::to_value(self).expect("config serialises");
        let b = serde_json::to_value(other).expect("config serialises");
        let mut out = Vec::new();
        for key in RESTART_KEYS {
            let (va, vb) = (a.pointer(&pointer(key)), b.pointer(&pointer(key)));
            match (va, vb) {
                (Some(serde_json::Value::Object(oa)), Some(serde_json::Value::Object(ob))) => {
                    for (k, v) in oa {
                        if ob.get(k) != Some(v) {
                            out.push(format!("{key}.{k}"));
                        }
                    }
                }
                _ if va != vb => out.push((*key).to_string()),
                _ => {}
            }
        }
        out.sort();
        out
    }

    /// Validate and write the overrides to `path` atomically (temp file + fsync + rename, under the state lock).
    pub fn save(&self, path: &Path) -> Result<()> {
        self.validate()?;
        let text = serde_json::to_string_pretty(&self.overrides()).expect("json");
        crate::home::write_atomic(path, format!("{text}\n").as_bytes())
    }
}

/// JSON pointer of a dotted key (`memory.dir` → `/memory/dir`).
fn pointer(dotted: &str) -> String {
    format!("/{}", dotted.replace('.', "/"))
}

fn diff(a: &serde_json::Value, b: &serde_json::Value) -> Option<serde_json::Value> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(ao), Value::Object(bo)) => {
            let mut out = serde_json::Map::new();
            for (k, av) in ao {
                match bo.get(k) {
                    Some(bv) => {
                        if let Some(d) = diff(av, bv) {
                            out.insert(k.clone(), d);
                        }
                    }
                    None => {
                        out.insert(k.clone(), av.clone());
                    }
                }
            }
            if out.is_empty() {
                None
            } else {
                Some(Value::Object(out))
            }
        }
        _ if a == b => None,
        _ => Some(a.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_object_is_defaults() {
        let (c, w) = Config::parse("{}").unwrap();
        assert_eq!(c, Config::default());
        assert!(w.is_empty());
        assert_eq!(c.output.max_file_lines, 1000);
        assert_eq!(c.output.max_file_bytes, 131_072);
        assert_eq!(c.memories.max_rollouts_per_startup, 2);
    }

    #[test]
    fn unknown_keys_warn() {
        let (_, w) = Config::parse(r#"{"output":{"maxLines":3},"bogus":1}"#).unwrap();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w.iter().any(|s| s.contains("output.maxLines")), "{w:?}");
    }

    #[test]
    fn bad_value_names_key_value_and_range() {
        let e = Config::parse(r#"{"output":{"maxFileLines":0}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("output.maxFileLines = 0"), "{e}");
        assert!(e.contains("1..=100000"), "{e}");
        let e = Config::parse(r#"{"exec":{"mode":"yolo"}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("yolo"), "{e}");
    }

    #[test]
    fn restart_keys_are_pinned_and_listed() {
        let running = Config::default();
        let (edited, _) = Config::parse(
            r#"{"exec":{"mode":"unrestricted","sandbox":"off"},"server":{"allowedHosts":["x.example"]},"memory":{"dir":"/tmp/m","maxBytes":1024},"output":{"maxFileLines":7}}"#,
        )
        .unwrap();
        assert_eq!(
            edited.restart_changes(&running),
            [
                "exec.mode",
                "exec.sandbox",
                "memory.dir",
                "server.allowedHosts"
            ]
        );
        let live = edited.pinned_to(&running);
        assert_eq!(live.exec, running.exec);
        assert_eq!(live.server, running.server);
        assert_eq!(live.memory.dir, None);
        assert_eq!(live.memory.max_bytes, 1024, "memory caps keep reloading");
        assert_eq!(live.output.max_file_lines, 7, "output caps keep reloading");
        assert!(live.restart_changes(&running).is_empty());
    }

    #[test]
    fn sandbox_keys_validate() {
        let (c, _) =
            Config::parse(r#"{"exec":{"writableRoots":["~/.m2","/opt/cache"],"network":true}}"#)
                .unwrap();
        assert_eq!(c.exec.writable_roots, ["~/.m2", "/opt/cache"]);
        assert!(c.exec.network_allowed());
        assert_eq!(c.exec.sandbox, SandboxMode::Os);
        let e = Config::parse(r#"{"exec":{"writableRoots":["relative/dir"]}}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("exec.writableRoots") && e.contains("relative/dir"),
            "{e}"
        );
        assert!(Config::parse(r#"{"exec":{"sandbox":"maybe"}}"#).is_err());
        let d = Config::default();
        assert!(!d.exec.network_allowed());
        assert!(
            d.overrides().get("exec").is_none(),
            "defaults are not written"
        );
    }

    #[test]
    fn overrides_hold_only_differences() {
        let mut c = Config::default();
        c.output.max_file_lines = 50;
        c.memories.extract_model = Some("openai/gpt-5-mini".into());
        let o = c.overrides();
        assert_eq!(
            o,
            serde_json::json!({"output":{"maxFileLines":50},"memories":{"extract_model":"openai/gpt-5-mini"}})
        );
        let (back, _) = Config::parse(&o.to_string()).unwrap();
        assert_eq!(back, c);
    }
}
