//! `codex-free connect codex|claude|pi|chatgpt`: register this server with the user's coding
//! agents and link the memory summary into the instructions file each agent reads itself.
//!
//! What is written, per client:
//! - **Codex CLI**: `[mcp_servers.codex_free]` in `$CODEX_HOME/config.toml` (edited with
//!   `toml_edit`, so comments, order and other entries are kept), Codex's
//!   `tool_output_token_limit` and the entry's `output_token_limit` raised to fit our pages
//!   ([`codex_output_limit`]; a value the user set is kept), and a managed block in
//!   `$CODEX_HOME/AGENTS.md` (Codex's global instructions) holding the memory summary and
//!   every project's saved plan and notes ([`saved`]), rewritten after each consolidation
//!   and each saved note or plan.
//! - **Claude Code**: `mcpServers.codex_free` in its user config (`$CLAUDE_CONFIG_DIR/.claude.json`
//!   when the variable is set, else `~/.claude.json`), the entry shaped as
//!   `claude mcp add --scope user` writes it, key order kept; and a managed block in
//!   `$CLAUDE_CONFIG_DIR/CLAUDE.md` (default `~/.claude/CLAUDE.md`).
//! - **pi**: a managed block in `$PI_CODING_AGENT_DIR/AGENTS.md` (default `~/.pi/agent`).
//! - **ChatGPT**: nothing is written; [`chatgpt_steps`] says how to reach the server.
//!
//! Every edit is planned first ([`plan_connect`], [`plan_undo`]) as whole-file before/after
//! texts, so `--dry-run` shows the exact unified diff ([`Plan::diff`]) and an unchanged file
//! is never rewritten (a second run changes no byte). [`apply`] copies each file it is about
//! to change for the first time beside itself (`<file>.codex-free-backup`) and records the
//! edit under `<state home>/connect/<client>.json`; undo restores the backup byte-exact (or
//! removes a file that did not exist) when the file still holds what connect wrote, and
//! otherwise removes only our entry and block, since the agent (Claude rewrites its config
//! on every start) or the user changed the file since. A file that does not parse is
//! refused with its path, line and reason before anything is written. A symbolic link on
//! the way to a file is followed only when it leads inside the user's home (and not into
//! the state home); the plan then says "writes through symlink X -> Y", and [`apply`]
//! checks the link again before writing; any other link is refused with the path
//! ([`links::guard`]).
//!
//! [`refresh_linked`] rewrites the managed blocks of every connected client from the
//! current `memory_summary.md` (after each consolidation and rollback), and removes them
//! while `memories.use_memories` is false.
//!
//! Invariant: this is a user action (CLI and UI), never an MCP tool: the tools' jail keeps
//! these very files out of reach of the agents.

mod files;
pub mod links;
pub mod saved;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::config::{Config, MemoryVersion};
use codex_free_core::home::{AgentHomes, sha256_hex};

pub use files::{BLOCK_BEGIN, BLOCK_END};

/// Environment variable `connect codex` sets in the stdio registration: the number of
/// tokens of a result Codex passes to the model whole for this server (the
/// top-level `tool_output_token_limit` it raises); the server sizes its pages for it.
pub const CLIENT_OUTPUT_TOKENS_ENV: &str = "CODEX_FREE_CLIENT_OUTPUT_TOKENS";

/// Headroom of the `tool_output_token_limit` written into Codex's config over our own ceiling,
/// in percent: our ceiling counts a token as 4 bytes, Codex may count code denser.
pub const CODEX_LIMIT_HEADROOM_PCT: usize = 25;

/// The `tool_output_token_limit` `connect codex` raises Codex's config to: our tool-output
/// ceiling for Codex (`output.clients."codex-mcp-client"` when set, else
/// `output.maxToolOutputTokens`) plus [`CODEX_LIMIT_HEADROOM_PCT`].
pub fn codex_output_limit(cfg: &Config) -> usize {
    let ours = cfg
        .output
        .client("codex-mcp-client")
        .and_then(|c| c.max_tool_output_tokens)
        .unwrap_or(cfg.output.max_tool_output_tokens);
    ours + ours * CODEX_LIMIT_HEADROOM_PCT / 100
}

/// The name of our entry in each client's MCP server list.
pub const SERVER_NAME: &str = "codex_free";
/// Suffix of the copy made beside a file before connect first changes it.
pub const BACKUP_SUFFIX: &str = ".codex-free-backup";
/// Directory of the connect records under the state home.
pub const RECORDS_DIR: &str = "connect";
/// Environment variable a Codex `--http` registration reads the MCP token from (so the
/// token is not written into Codex's config).
pub const TOKEN_ENV: &str = "CODEX_FREE_TOKEN";

/// A client `connect` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Client {
    /// Codex CLI.
    Codex,
    /// Claude Code.
    Claude,
    /// pi coding agent (no MCP: memory only).
    Pi,
    /// ChatGPT (developer-mode connector over a tunnel: printed steps only).
    Chatgpt,
}

impl Client {
    /// Every client, in display order.
    pub const ALL: [Client; 4] = [Client::Codex, Client::Claude, Client::Pi, Client::Chatgpt];

    /// Lower-case name as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Client::Codex => "codex",
            Client::Claude => "claude",
            Client::Pi => "pi",
            Client::Chatgpt => "chatgpt",
        }
    }

    /// The executable looked up on `PATH` to tell whether the client is installed.
    fn program(self) -> Option<&'static str> {
        match self {
            Client::Codex => Some("codex"),
            Client::Claude => Some("claude"),
            Client::Pi => Some("pi"),
            Client::Chatgpt => None,
        }
    }
}

/// Where the clients keep their files and how our server is started: everything `connect`
/// reads from the environment, gathered once so tests can point it at fixture homes.
#[derive(Debug, Clone)]
pub struct Target {
    /// Codex Free's state home (records live in `<home>/connect/`).
    pub state_home: PathBuf,
    /// `CODEX_HOME`, `CLAUDE_CONFIG_DIR`, `PI_CODING_AGENT_DIR` (or their defaults).
    pub agents: AgentHomes,
    /// Claude Code's user config file: `$CLAUDE_CONFIG_DIR/.claude.json` when the variable
    /// is set, else `~/.claude.json` (where Claude itself reads it).
    pub claude_json: Option<PathBuf>,
    /// The `codex-free` executable the clients spawn (absolute).
    pub exe: PathBuf,
    /// Extra environment for the spawned server: `CODEX_FREE_HOME` when the state home is
    /// not the default one, so the client's server uses the same memory.
    pub server_env: Vec<(String, String)>,
    /// Arguments before `serve` (`--config FILE` when a non-default config is in use).
    pub global_args: Vec<String>,
    /// `PATH` used to tell whether a client is installed.
    pub path_var: Option<std::ffi::OsString>,
    /// The user's home directory: the only place a symbolic link on the way to a client's
    /// file may lead ([`links::guard`]); `None` refuses every such link.
    pub user_home: Option<PathBuf>,
}

impl Target {
    /// The target of this process: the environment's agent homes, the `codex-free` CLI
    /// ([`server_exe`]), and `config_path` passed on to the server when it is not
    /// `<home>/codex.config.json`.
    ///
    /// Errors: [`Error::NotFound`] when no `codex-free` executable can be located.
    pub fn from_env(state_home: &Path, config_path: &Path) -> Result<Self> {
        let exe = server_exe()?;
        let state_home = std::path::absolute(state_home).unwrap_or(state_home.to_path_buf());
        let claude_json = match std::env::var_os("CLAUDE_CONFIG_DIR") {
            Some(d) if !d.is_empty() => Some(PathBuf::from(d).join(".claude.json")),
            _ => std::env::home_dir().map(|h| h.join(".claude.json")),
        };
        let mut server_env = Vec::new();
        let default_home = std::env::home_dir().map(|h| h.join(".codex-free"));
        if default_home.as_deref() != Some(state_home.as_path()) {
            server_env.push((
                codex_free_core::home::HOME_ENV.to_string(),
                state_home.display().to_string(),
            ));
        }
        let mut global_args = Vec::new();
        let config_path = std::path::absolute(config_path).unwrap_or(config_path.to_path_buf());
        if config_path != state_home.join(codex_free_core::config::CONFIG_FILE) {
            global_args.push("--config".to_string());
            global_args.push(config_path.display().to_string());
        }
        Ok(Self {
            state_home,
            agents: AgentHomes::from_env(),
            claude_json,
            exe,
            server_env,
            global_args,
            path_var: std::env::var_os("PATH"),
            user_home: std::env::home_dir(),
        })
    }

    fn server_args(&self) -> Vec<String> {
        let mut a = self.global_args.clone();
        a.push("serve".into());
        a.push("--stdio".into());
        a
    }

    fn agent_dir(&self, client: Client) -> Result<&Path> {
        let d = match client {
            Client::Codex => self.agents.codex.as_deref(),
            Client::Claude => self.agents.claude.as_deref(),
            Client::Pi => self.agents.pi.as_deref(),
            Client::Chatgpt => None,
        };
        d.ok_or_else(|| {
            Error::Config(format!(
                "no home directory for {}; set its environment variable",
                client.name()
            ))
        })
    }

    /// The instructions file holding the managed memory block of `client`.
    pub fn memory_file(&self, client: Client) -> Result<Option<PathBuf>> {
        Ok(match client {
            Client::Codex | Client::Pi => Some(self.agent_dir(client)?.join("AGENTS.md")),
            Client::Claude => Some(self.agent_dir(client)?.join("CLAUDE.md")),
            Client::Chatgpt => None,
        })
    }

    /// The MCP config file of `client` (`None` for pi, which has no MCP, and ChatGPT).
    pub fn mcp_file(&self, client: Client) -> Result<Option<PathBuf>> {
        Ok(match client {
            Client::Codex => Some(self.agent_dir(client)?.join("config.toml")),
            Client::Claude => Some(self.claude_json.clone().ok_or_else(|| {
                Error::Config("no home directory for Claude's config; set HOME".into())
            })?),
            Client::Pi | Client::Chatgpt => None,
        })
    }

    /// Where a write to `path` lands when a link is on the way ([`links::guard`] against
    /// this target's home and state home).
    fn through(&self, path: &Path) -> Result<Option<PathBuf>> {
        links::guard(path, self.user_home.as_deref(), &self.state_home)
    }

    fn records_dir(&self) -> PathBuf {
        self.state_home.join(RECORDS_DIR)
    }

    fn record_path(&self, client: Client) -> PathBuf {
        self.records_dir().join(format!("{}.json", client.name()))
    }
}

/// The `codex-free` CLI the clients should spawn: this process when it is that binary, else
/// a `codex-free` beside it (the tray app ships both), else the first on `PATH`; absolute and
/// with links resolved.
///
/// Errors: [`Error::NotFound`] when there is none.
pub fn server_exe() -> Result<PathBuf> {
    let name = format!("codex-free{}", std::env::consts::EXE_SUFFIX);
    let me = std::env::current_exe().ok();
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(me) = &me {
        if me.file_name().is_some_and(|n| n == name.as_str()) {
            candidates.push(me.clone());
        }
        if let Some(dir) = me.parent() {
            candidates.push(dir.join(&name));
        }
    }
    if let Some(p) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&p).map(|d| d.join(&name)));
    }
    candidates
        .into_iter()
        .find(|c| c.is_file())
        .map(|c| std::fs::canonicalize(&c).unwrap_or(c))
        .ok_or_else(|| Error::NotFound(PathBuf::from(name)))
}

/// How to register the server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Register the streamable-HTTP endpoint of a running `serve --http` instead of a
    /// spawned stdio server: `Some((url, token))`, the token used by Claude's header (Codex
    /// reads it from [`TOKEN_ENV`] instead).
    pub http: Option<(String, String)>,
}

/// What kind of file an edit touches (decides how undo removes our part surgically).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// Codex's `config.toml`.
    CodexConfig,
    /// Claude Code's `.claude.json`.
    ClaudeJson,
    /// An instructions file (`AGENTS.md`, `CLAUDE.md`) holding a managed block.
    MemoryBlock,
}

/// One planned file change: whole texts before and after (`None` = no file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The file (as the client reads it; a symbolic link is followed when written).
    pub path: PathBuf,
    /// Kind of file.
    pub kind: FileKind,
    /// Current bytes, `None` when the file does not exist.
    pub before: Option<String>,
    /// Bytes after the change, `None` to remove the file.
    pub after: Option<String>,
    /// One line on what changes (or why undo only removed our part); ends with
    /// "writes through symlink X -> Y" when [`Self::through`] is set.
    pub note: String,
    /// The file actually written when `path` is reached through a symbolic link (always
    /// inside the user's home, see [`links::guard`]); `None` when no link is on the way.
    pub through: Option<PathBuf>,
}

impl FileChange {
    fn new(
        path: PathBuf,
        kind: FileKind,
        before: Option<String>,
        after: Option<String>,
        note: impl Into<String>,
        through: Option<PathBuf>,
    ) -> Self {
        let mut note = note.into();
        if let Some(real) = &through {
            note.push_str(&format!(
                "; writes through symlink {} -> {}",
                path.display(),
                real.display()
            ));
        }
        Self {
            path,
            kind,
            before,
            after,
            note,
            through,
        }
    }
}

/// The changes one `connect` or `undo` would make; only files that change are listed.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The client.
    pub client: Client,
    /// `false` for connect, `true` for undo.
    pub undo: bool,
    /// Changed files, in write order.
    pub changes: Vec<FileChange>,
}

impl Plan {
    /// `true` when nothing would change.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// The unified diff of every change (`--- a/<path>` / `+++ b/<path>`, 3 lines of
    /// context; `/dev/null` for a created or removed file), each file reached through a
    /// symbolic link preceded by a `writes through symlink X -> Y` line.
    pub fn diff(&self) -> String {
        let mut out = String::new();
        for c in &self.changes {
            if let Some(real) = &c.through {
                out.push_str(&format!(
                    "writes through symlink {} -> {}\n",
                    c.path.display(),
                    real.display()
                ));
            }
            let path = c.path.display().to_string();
            let a = if c.before.is_some() {
                format!("a{path}")
            } else {
                "/dev/null".into()
            };
            let b = if c.after.is_some() {
                format!("b{path}")
            } else {
                "/dev/null".into()
            };
            let before = c.before.as_deref().unwrap_or("");
            let after = c.after.as_deref().unwrap_or("");
            let d = similar::TextDiff::from_lines(before, after);
            out.push_str(
                &d.unified_diff()
                    .context_radius(3)
                    .header(&a, &b)
                    .to_string(),
            );
            if !out.ends_with('\n') {
                out.push('\n');
            }
        }
        out
    }
}

/// One file of a connect record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordFile {
    /// The file connect changed.
    pub path: PathBuf,
    /// Kind of file.
    pub kind: FileKind,
    /// Whether it existed before connect first changed it.
    pub existed: bool,
    /// The copy of the original (when it existed).
    pub backup: Option<PathBuf>,
    /// SHA-256 of the original bytes (checks the backup before it is restored).
    pub original_sha256: Option<String>,
    /// SHA-256 of the bytes connect (or a refresh) last wrote.
    pub written_sha256: String,
    /// Directories connect created for a new file (deepest last); undo removes them again
    /// when they are empty.
    #[serde(default)]
    pub created_dirs: Vec<PathBuf>,
}

/// `<state home>/connect/<client>.json`: what connect changed, for undo and refresh.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The client.
    pub client: Client,
    /// When the client was first connected (RFC 3339).
    pub connected_at: String,
    /// When its managed block was last rewritten (RFC 3339).
    pub last_refresh: Option<String>,
    /// The files changed, each once.
    pub files: Vec<RecordFile>,
}

/// Read the record of `client`, `None` when it is not connected by us.
///
/// Errors: [`Error::Io`] on a read failure; [`Error::Config`] for a record that does not parse.
pub fn read_record(t: &Target, client: Client) -> Result<Option<Record>> {
    let p = t.record_path(client);
    match std::fs::read(&p) {
        Ok(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|e| Error::Config(format!("{}: {e}", p.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(format!("reading {}", p.display()), e)),
    }
}

fn read_opt(path: &Path) -> Result<Option<String>> {
    match std::fs::read(path) {
        Ok(b) => String::from_utf8(b).map(Some).map_err(|_| {
            Error::InvalidArgument(format!(
                "{}: not UTF-8 text; nothing was written",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(format!("reading {}", path.display()), e)),
    }
}

/// The managed block's body for `client`: the current memory summary (while memories are
/// on and used) and, for Codex, the saved plans and notes of every project
/// ([`saved::section`]: Codex with a known model never shows the server's instructions).
/// `None` when neither has anything to say, so no block should be there.
fn block_body(t: &Target, client: Client, cfg: &Config) -> Option<String> {
    let saved = match client {
        Client::Codex => saved::section(&t.state_home, cfg),
        _ => None,
    };
    let summary = summary_body(t, client, cfg);
    match (summary, saved) {
        (None, None) => None,
        (Some(m), None) => Some(m),
        (None, Some(s)) => Some(s),
        (Some(m), Some(s)) => Some(format!("{s}\n{m}")),
    }
}

/// The memory-summary part of the block, or `None` while memories are off or not used.
fn summary_body(t: &Target, client: Client, cfg: &Config) -> Option<String> {
    if !cfg.memories.enabled || !cfg.memories.use_memories {
        return None;
    }
    // Codex and Claude have our MCP tools; the others are pointed at the folder.
    let tools = matches!(client, Client::Codex | Client::Claude) && cfg.memories.dedicated_tools;
    let detail = match cfg.memories.active_version() {
        MemoryVersion::V1 if tools => {
            "\nFor more detail, use the codex_free server's memories_search and memories_read tools (MEMORY.md, rollout_summaries/).\n".to_string()
        }
        MemoryVersion::V1 => format!(
            "\nMore detail is in MEMORY.md and rollout_summaries/ under {}.\n",
            codex_free_memory::folder::folder_path(&t.state_home).display()
        ),
        MemoryVersion::V2 if tools => {
            "\nThis is the v2 memory (no MEMORY.md). For more detail, use the codex_free server's memories_search and memories_read tools (rollout_summaries/).\n".to_string()
        }
        MemoryVersion::V2 => codex_free_memory::policy::v2_detail_line(
            false,
            Some(&t.state_home.join(codex_free_memory::layout::V2_FOLDER_DIR)),
        ),
    };
    let reserved = files::marker_tokens(client);
    Some(
        codex_free_memory::readpath::summary_for_linked_copy(&t.state_home, cfg, &detail, reserved)
            .unwrap_or_else(|| {
                "No memory summary yet: it appears here after Codex Free's first consolidation.\n"
                    .to_string()
            }),
    )
}

/// Plan connecting `client`: the MCP entry (Codex, Claude) and the managed memory block.
/// ChatGPT has no files: an empty plan.
///
/// Errors: [`Error::InvalidArgument`] naming the file, line and reason when a file to edit
/// does not parse (TOML, JSON, or a managed block without its end line).
pub fn plan_connect(t: &Target, client: Client, opts: &Options, cfg: &Config) -> Result<Plan> {
    let mut changes = Vec::new();
    if let Some(p) = t.mcp_file(client)? {
        let through = t.through(&p)?;
        let before = read_opt(&p)?;
        let (after, kind) = match client {
            Client::Codex => (
                files::codex_set(&p, before.as_deref(), t, opts, codex_output_limit(cfg))?,
                FileKind::CodexConfig,
            ),
            _ => (
                files::claude_set(&p, before.as_deref(), t, opts)?,
                FileKind::ClaudeJson,
            ),
        };
        if after.as_deref() != before.as_deref() {
            changes.push(FileChange::new(
                p,
                kind,
                before,
                after,
                format!("register the {SERVER_NAME} MCP server"),
                through,
            ));
        }
    }
    if let Some(p) = t.memory_file(client)? {
        let through = t.through(&p)?;
        let before = read_opt(&p)?;
        let body = block_body(t, client, cfg);
        let after = match &body {
            Some(b) => Some(files::block_set(&p, before.as_deref(), client, b)?),
            None => files::block_remove(&p, before.as_deref())?
                .map(Some)
                .unwrap_or(before.clone()),
        };
        if after.as_deref() != before.as_deref() {
            changes.push(FileChange::new(
                p,
                FileKind::MemoryBlock,
                before,
                after,
                "link the memory summary",
                through,
            ));
        }
    }
    Ok(Plan {
        client,
        undo: false,
        changes,
    })
}

/// Plan undoing `client`: for each recorded file, the original bytes when the file still
/// holds what connect wrote (a created file is removed), else the current text without our
/// entry and block. Files unchanged by the undo are left out.
///
/// Errors: as [`plan_connect`] when a changed file no longer parses; [`Error::Corrupt`]-free:
/// a missing or altered backup falls back to the surgical removal.
pub fn plan_undo(t: &Target, client: Client) -> Result<Plan> {
    let Some(rec) = read_record(t, client)? else {
        return Ok(Plan {
            client,
            undo: true,
            changes: Vec::new(),
        });
    };
    let mut changes = Vec::new();
    for f in &rec.files {
        let through = t.through(&f.path)?;
        let before = read_opt(&f.path)?;
        let cur_sha = before.as_deref().map(|s| sha256_hex(s.as_bytes()));
        let original = if f.existed {
            f.backup.as_ref().and_then(|b| {
                let s = read_opt(b).ok()??;
                (Some(sha256_hex(s.as_bytes())) == f.original_sha256).then_some(s)
            })
        } else {
            None
        };
        let exact = cur_sha.as_deref() == Some(f.written_sha256.as_str())
            && (!f.existed || original.is_some());
        let (after, note) = if exact {
            (
                original,
                if f.existed {
                    "restore the original byte for byte".to_string()
                } else {
                    "remove the file connect created".to_string()
                },
            )
        } else {
            let after = match f.kind {
                FileKind::CodexConfig => files::codex_remove(&f.path, before.as_deref())?,
                FileKind::ClaudeJson => files::claude_remove(&f.path, before.as_deref())?,
                FileKind::MemoryBlock => files::block_remove(&f.path, before.as_deref())?
                    .map(Some)
                    .unwrap_or(before.clone()),
            };
            (
                after,
                "changed since connect: only our entry/block is removed".to_string(),
            )
        };
        if after != before {
            changes.push(FileChange::new(
                f.path.clone(),
                f.kind,
                before,
                after,
                note,
                through,
            ));
        }
    }
    Ok(Plan {
        client,
        undo: true,
        changes,
    })
}

/// Write a plan: backups and the record first, then each file atomically (its mode kept; a
/// symbolic link the plan named in [`FileChange::through`] is written through). For an undo
/// the record and the backups are removed at the end. Runs under the lock of
/// `<state home>/connect/`.
///
/// Errors: [`Error::Refused`], before anything is written, when a link on the way to a file
/// now leads elsewhere than the plan said (or outside the home); [`Error::Io`] when a file
/// cannot be written (files already written stay written and recorded, so a later undo
/// still restores them).
pub fn apply(t: &Target, plan: &Plan) -> Result<()> {
    for c in &plan.changes {
        let now = t.through(&c.path)?;
        if now != c.through {
            return Err(Error::Refused(format!(
                "{} changed since the plan ({}); nothing was written, run connect again to see the new plan",
                c.path.display(),
                match &now {
                    Some(real) =>
                        format!("it now leads through a symbolic link to {}", real.display()),
                    None => "it is no longer reached through a symbolic link".to_string(),
                }
            )));
        }
    }
    let dir = t.records_dir();
    codex_free_core::home::create_private_dir(&dir)?;
    codex_free_core::home::with_lock(&dir.join("records"), || {
        if plan.undo {
            for c in &plan.changes {
                files::write_file(&c.path, c.through.as_deref(), c.after.as_deref())?;
            }
            if let Some(rec) = read_record(t, plan.client)? {
                for f in rec.files {
                    if let Some(b) = f.backup {
                        let _ = std::fs::remove_file(b);
                    }
                    // `remove_dir` fails on a directory that is not empty: only ours go.
                    for d in f.created_dirs.iter().rev() {
                        let _ = std::fs::remove_dir(d);
                    }
                }
            }
            match std::fs::remove_file(t.record_path(plan.client)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io("removing the connect record", e)),
            }
            return Ok(());
        }
        let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let mut rec = read_record(t, plan.client)?.unwrap_or(Record {
            client: plan.client,
            connected_at: now.clone(),
            last_refresh: None,
            files: Vec::new(),
        });
        for c in &plan.changes {
            let written = sha256_hex(c.after.as_deref().unwrap_or("").as_bytes());
            if let Some(f) = rec.files.iter_mut().find(|f| f.path == c.path) {
                f.written_sha256 = written;
            } else {
                let created_dirs = missing_dirs(&c.path);
                let backup = match &c.before {
                    Some(b) => {
                        let bp = backup_path(&c.path);
                        files::write_new(&bp, b, &c.path)?;
                        Some(bp)
                    }
                    None => None,
                };
                rec.files.push(RecordFile {
                    path: c.path.clone(),
                    kind: c.kind,
                    existed: c.before.is_some(),
                    backup,
                    original_sha256: c.before.as_deref().map(|b| sha256_hex(b.as_bytes())),
                    written_sha256: written,
                    created_dirs,
                });
            }
            if c.kind == FileKind::MemoryBlock {
                rec.last_refresh = Some(now.clone());
            }
        }
        if !plan.changes.is_empty() || !t.record_path(plan.client).exists() {
            write_record(t, &rec)?;
        }
        for c in &plan.changes {
            files::write_file(&c.path, c.through.as_deref(), c.after.as_deref())?;
        }
        Ok(())
    })
}

/// The ancestors of `path` that do not exist yet, outermost first.
fn missing_dirs(path: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = path
        .ancestors()
        .skip(1)
        .take_while(|d| !d.as_os_str().is_empty() && std::fs::symlink_metadata(d).is_err())
        .map(Path::to_path_buf)
        .collect();
    v.reverse();
    v
}

fn write_record(t: &Target, rec: &Record) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(rec)
        .map_err(|e| Error::Config(format!("encoding the connect record: {e}")))?;
    codex_free_core::home::write_atomic_private_unlocked(&t.record_path(rec.client), &bytes)
}

/// `<file>.codex-free-backup` beside `path`.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(BACKUP_SUFFIX);
    PathBuf::from(s)
}

/// What [`refresh_linked`] did for one client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refreshed {
    /// The client.
    pub client: Client,
    /// The file whose block was rewritten, or why not.
    pub outcome: String,
}

/// Rewrite the managed memory block of every client connected by us from the current
/// `memory_summary.md` (removing it while memories are off or not used); unchanged blocks
/// are not rewritten. A client whose file no longer parses is skipped and reported.
///
/// Errors: only reading the records fails the call; per-client failures are in the result.
pub fn refresh_linked(t: &Target, cfg: &Config) -> Result<Vec<Refreshed>> {
    let mut out = Vec::new();
    for client in Client::ALL {
        let Some(rec) = read_record(t, client)? else {
            continue;
        };
        let Some(path) = t.memory_file(client)? else {
            continue;
        };
        if !rec.files.iter().any(|f| f.path == path) {
            continue;
        }
        let r = (|| -> Result<String> {
            let through = t.through(&path)?;
            let before = read_opt(&path)?;
            let after = match block_body(t, client, cfg) {
                Some(b) => Some(files::block_set(&path, before.as_deref(), client, &b)?),
                None => files::block_remove(&path, before.as_deref())?
                    .map(Some)
                    .unwrap_or(before.clone()),
            };
            if after == before {
                return Ok("unchanged".into());
            }
            let plan = Plan {
                client,
                undo: false,
                changes: vec![FileChange::new(
                    path.clone(),
                    FileKind::MemoryBlock,
                    before,
                    after,
                    "refresh the memory summary",
                    through,
                )],
            };
            apply(t, &plan)?;
            Ok(format!("rewrote {}", path.display()))
        })();
        out.push(Refreshed {
            client,
            outcome: r.unwrap_or_else(|e| format!("skipped: {e}")),
        });
    }
    Ok(out)
}

/// The memory-event listener each binary registers once
/// (`codex_free_core::events::on_memory_event`): after any event (a commit, a saved-state
/// change, a `memories use`/`on`/`off` switch) the linked copies for the state home `home`
/// are refreshed with the environment's agent homes and the config file as it is now;
/// failures are logged, never raised (the memory folder's commit stands whatever happens to
/// another agent's file). Nothing happens before the first `connect` (no records directory).
pub fn on_memory_event(home: &Path, _event: codex_free_core::events::MemoryEvent) {
    refresh_after_commit(home);
}

/// Bring the linked copies for `home` in line with the config as this process starts:
/// `memories.version` (which summary is served, V1's or V2's) takes effect at a start, so a
/// start is when the copies in other agents' files follow a switch. Cheap when nothing
/// changed (no file is rewritten); a no-op before the first `connect`. Called by every
/// server start (`App::open`).
pub fn refresh_at_start(home: &Path) {
    refresh_after_commit(home);
}

fn refresh_after_commit(home: &Path) {
    if !home.join(RECORDS_DIR).is_dir() {
        return;
    }
    let cfg = match Config::load(&home.join(codex_free_core::config::CONFIG_FILE)) {
        Ok(l) => l.config,
        Err(e) => {
            tracing::warn!("linked memory copies not refreshed: {e}");
            return;
        }
    };
    let cfg = &cfg;
    let t = match Target::from_env(home, &home.join(codex_free_core::config::CONFIG_FILE)) {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!("linked memory copies not refreshed: {e}");
            return;
        }
    };
    match refresh_linked(&t, cfg) {
        Ok(rs) => {
            for r in rs {
                tracing::info!(
                    client = r.client.name(),
                    "linked memory copy: {}",
                    r.outcome
                );
            }
        }
        Err(e) => tracing::warn!("linked memory copies not refreshed: {e}"),
    }
}

/// Per-client state for `connect` without a client, `memories status` and the UI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientStatus {
    /// The client.
    pub client: Client,
    /// Its program is on `PATH` (or its home directory exists).
    pub installed: bool,
    /// Its MCP config lists our server (always `false` for pi and ChatGPT).
    pub connected: bool,
    /// Its instructions file holds our managed block.
    pub linked: bool,
    /// Connected by `codex-free connect` (a record exists, so undo works).
    pub recorded: bool,
    /// When the block was last rewritten (RFC 3339).
    pub last_refresh: Option<String>,
    /// Files involved (MCP config, instructions file).
    pub files: Vec<PathBuf>,
    /// A problem reading its files, if any.
    pub problem: Option<String>,
}

/// The state of every client.
pub fn status(t: &Target) -> Vec<ClientStatus> {
    Client::ALL.iter().map(|&c| client_status(t, c)).collect()
}

fn client_status(t: &Target, client: Client) -> ClientStatus {
    let mut st = ClientStatus {
        client,
        installed: false,
        connected: false,
        linked: false,
        recorded: false,
        last_refresh: None,
        files: Vec::new(),
        problem: None,
    };
    st.installed = client.program().is_some_and(|p| on_path(t, p))
        || t.agent_dir(client).is_ok_and(|d| d.is_dir());
    match read_record(t, client) {
        Ok(Some(r)) => {
            st.recorded = true;
            st.last_refresh = r.last_refresh;
        }
        Ok(None) => {}
        Err(e) => st.problem = Some(e.to_string()),
    }
    let mut check = || -> Result<()> {
        if let Some(p) = t.mcp_file(client)? {
            st.files.push(p.clone());
            let text = read_opt(&p)?;
            st.connected = match client {
                Client::Codex => files::codex_has(&p, text.as_deref())?,
                _ => files::claude_has(&p, text.as_deref())?,
            };
        }
        if let Some(p) = t.memory_file(client)? {
            st.files.push(p.clone());
            st.linked = files::block_has(&p, read_opt(&p)?.as_deref())?;
        }
        Ok(())
    };
    if let Err(e) = check() {
        st.problem = Some(e.to_string());
    }
    st
}

fn on_path(t: &Target, program: &str) -> bool {
    let Some(p) = &t.path_var else {
        return false;
    };
    std::env::split_paths(p).any(|d| {
        let f = d.join(program);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(&f).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        }
        #[cfg(not(unix))]
        {
            f.is_file()
        }
    })
}

/// Where the server records the last Codex CLI session it served (an RFC 3339 time, one
/// line), under the state home: read by `memories status` and the dashboard, which run in
/// other processes than the server that saw the session.
pub const CODEX_SEEN_FILE: &str = "connect/codex-last-session";

/// Record that a Codex CLI session (`clientInfo.name` of Codex's profile) reached this
/// server now. Best effort for the caller: an error is only worth a log line.
///
/// Errors: [`Error::Io`] when the file cannot be written.
pub fn record_codex_session(home: &Path) -> Result<()> {
    let path = home.join(CODEX_SEEN_FILE);
    if let Some(dir) = path.parent() {
        codex_free_core::home::create_private_dir(dir)?;
    }
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    codex_free_core::home::write_atomic_private_unlocked(&path, format!("{now}\n").as_bytes())
}

/// The warning for a user whose memory cannot reach Codex, or `None`: Codex lists this
/// server (its `config.toml`) or a Codex session has reached it ([`CODEX_SEEN_FILE`]), and
/// Codex's `AGENTS.md` holds no managed block. Reason: Codex passes a model none of an MCP
/// server's instructions (with a model it knows it even defers MCP tools behind
/// `tool_search`), so only the `AGENTS.md` block that `connect codex` writes carries the
/// memory summary and the saved plans into its sessions.
pub fn codex_memory_gap(t: &Target, home: &Path, sts: &[ClientStatus]) -> Option<String> {
    let codex = sts.iter().find(|s| s.client == Client::Codex)?;
    if codex.linked {
        return None;
    }
    let seen = std::fs::read_to_string(home.join(CODEX_SEEN_FILE))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    if !codex.connected && seen.is_none() {
        return None;
    }
    let agents = t
        .memory_file(Client::Codex)
        .ok()
        .flatten()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "$CODEX_HOME/AGENTS.md".into());
    let why = match &seen {
        Some(at) => format!("a Codex session reached this server (last at {at})"),
        None => "Codex lists this server in its config.toml".into(),
    };
    Some(format!(
        "{why}, but {agents} has no Codex Free block: Codex passes its model none of an MCP server's instructions, so your memory and saved plans never reach Codex sessions. Fix: codex-free connect codex"
    ))
}

/// One line per client, for `codex-free connect` without a client and `memories status`.
pub fn render_status(sts: &[ClientStatus]) -> String {
    let yn = |b: bool| if b { "yes" } else { "no" };
    let mut out = String::from("client   installed connected linked last refresh\n");
    for s in sts {
        let (connected, linked) = match s.client {
            Client::Pi => ("n/a", yn(s.linked)),
            Client::Chatgpt => ("n/a", "n/a"),
            _ => (yn(s.connected), yn(s.linked)),
        };
        out.push_str(&format!(
            "{:<8} {:<9} {:<9} {:<6} {}{}\n",
            s.client.name(),
            yn(s.installed),
            connected,
            linked,
            s.last_refresh.as_deref().unwrap_or("-"),
            s.problem
                .as_deref()
                .map(|p| format!("  ({p})"))
                .unwrap_or_default()
        ));
    }
    out
}

/// The ChatGPT connector steps for a server on `port` with MCP token `token`.
pub fn chatgpt_steps(port: u16, token: &str, cfg: &Config) -> String {
    let hosts = if cfg.server.allowed_hosts.is_empty() {
        "none yet".to_string()
    } else {
        cfg.server.allowed_hosts.join(", ")
    };
    format!(
        "ChatGPT (developer mode → Settings → Connectors → Create):\n\
         1. Run the server: codex-free serve --http --port {port}\n\
         2. Expose it over HTTPS with a tunnel to 127.0.0.1:{port}, e.g.\n\
            cloudflared tunnel --url http://127.0.0.1:{port}   (or ngrok http {port})\n\
         3. Add the tunnel's host name to server.allowedHosts in the config (now: {hosts}),\n\
            and its origin to server.allowedOrigins if the tunnel forwards an Origin;\n\
            restart the server (security settings are read at start).\n\
         4. In ChatGPT, create a connector with \"No authentication\" and the secret URL\n\
            https://<your-tunnel-host>/mcp/{token}\n\
            (locally: http://127.0.0.1:{port}/mcp/{token}). Anyone with this URL can use the\n\
            tools; `codex-free token rotate` replaces it.\n"
    )
}

#[cfg(test)]
mod tests;
