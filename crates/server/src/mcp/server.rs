//! [`CodexFree`]: the rmcp `ServerHandler`. One value per MCP session (HTTP creates one per
//! session or stateless request via a factory); all of them share [`Shared`] state: the
//! mode (single project or multi-project access root), the state home, the live config
//! (re-read when `codex.config.json` changes, so the UI's edits apply to the next call —
//! except the security settings, fixed at startup: see [`LiveConfig`]), and the exec sessions.
//! Every tool call leaves one line in the audit trail ([`codex_free_core::audit`]).
//!
//! Tool groups live in sibling files (`tools_fs.rs`, `tools_exec.rs`, `tools_task_memory.rs`),
//! each a `#[tool_router(router = ...)]` block combined in [`CodexFree::new`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use rmcp::ServerHandler;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, Implementation, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};

use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::config::{CONFIG_FILE, Config};
use codex_free_core::jail::{Jail, Protected};
use codex_free_tools::ToolCtx;

/// Which projects a server serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// One project root (canonical) for every session.
    Single { root: PathBuf },
    /// Conversations bind to a project under this canonical access root.
    Multi { access_root: PathBuf },
}

/// Where a single-project server's root came from (`get_environment` says which).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootSource {
    /// `--project DIR` (or multi-project mode's `--access-root`).
    Flag,
    /// The first `file://` root the client listed (MCP `roots/list`).
    ClientRoots,
    /// The server's working directory: no `--project`, and the client offered no roots.
    WorkingDirectory,
}

impl RootSource {
    /// One line for `get_environment`.
    pub fn describe(self) -> &'static str {
        match self {
            RootSource::Flag => "--project",
            RootSource::ClientRoots => "the client's MCP roots (roots/list)",
            RootSource::WorkingDirectory => {
                "the working directory (no --project, and the client offered no MCP roots)"
            }
        }
    }
}

/// How long a tool call waits for the client's roots after `initialized` before it runs on
/// the working directory (a client that offers roots answers `roots/list` at once).
pub const ROOTS_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// How to build a server.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Single or multi-project.
    pub mode: Mode,
    /// Where the single project's root comes from; [`RootSource::WorkingDirectory`] means
    /// "follow the client's roots when it offers them".
    pub root_source: RootSource,
    /// State home (`~/.codex-free` or `CODEX_FREE_HOME`).
    pub home: PathBuf,
    /// Config file (default `<home>/codex.config.json`).
    pub config_path: PathBuf,
}

impl ServerOptions {
    /// Single-project options; canonicalises `project`. Errors: [`Error::NotFound`] when it is missing, [`Error::InvalidArgument`] when not a directory.
    pub fn single(project: &Path, home: &Path, config_path: Option<PathBuf>) -> Result<Self> {
        let root = canonical_dir(project, "--project")?;
        Ok(Self {
            mode: Mode::Single { root },
            root_source: RootSource::Flag,
            home: home.to_path_buf(),
            config_path: config_path.unwrap_or_else(|| home.join(CONFIG_FILE)),
        })
    }

    /// Multi-project options over `access_root`.
    pub fn multi(access_root: &Path, home: &Path, config_path: Option<PathBuf>) -> Result<Self> {
        let access_root = canonical_dir(access_root, "--access-root")?;
        Ok(Self {
            mode: Mode::Multi { access_root },
            root_source: RootSource::Flag,
            home: home.to_path_buf(),
            config_path: config_path.unwrap_or_else(|| home.join(CONFIG_FILE)),
        })
    }

    /// Single-project options without `--project` (one registration for every project): the
    /// project is the client's first MCP root once it lists them, until then (and for a
    /// client without roots) the working directory `cwd`.
    pub fn from_client(cwd: &Path, home: &Path, config_path: Option<PathBuf>) -> Result<Self> {
        let root = canonical_dir(cwd, "the working directory")?;
        Ok(Self {
            mode: Mode::Single { root },
            root_source: RootSource::WorkingDirectory,
            home: home.to_path_buf(),
            config_path: config_path.unwrap_or_else(|| home.join(CONFIG_FILE)),
        })
    }
}

fn canonical_dir(p: &Path, flag: &str) -> Result<PathBuf> {
    let c = std::fs::canonicalize(p).map_err(|_| Error::NotFound(p.to_path_buf()))?;
    if !c.is_dir() {
        return Err(Error::InvalidArgument(format!(
            "{flag} {} is not a directory",
            p.display()
        )));
    }
    Ok(c)
}

/// The live config: reloaded when the file's mtime changes. An invalid edit keeps the last
/// good config in force and is reported once in the log (the UI validates before saving).
///
/// Invariant: the security settings ([`codex_free_core::config::RESTART_KEYS`]: `exec.*`,
/// `server.*`, `memory.dir`) keep their startup values for the life of the process, so an
/// edit of the file — by the user, or by a command that slipped past a guardrail — cannot
/// widen the running server's rights; a reload that changes them only logs "restart to apply".
#[derive(Debug)]
pub struct LiveConfig {
    path: PathBuf,
    /// The config as loaded at startup (the source of every restart-only value).
    startup: Config,
    state: RwLock<(Option<(SystemTime, u64)>, Config)>,
}

impl LiveConfig {
    /// Load `path` now. Errors: the file exists but is invalid.
    pub fn load(path: PathBuf) -> Result<Self> {
        let loaded = Config::load(&path)?;
        for w in &loaded.warnings {
            tracing::warn!("{}: {w}", path.display());
        }
        let mtime = stamp(&path);
        Ok(Self {
            path,
            startup: loaded.config.clone(),
            state: RwLock::new((mtime, loaded.config)),
        })
    }

    /// The current config (re-read if the file changed since last time), with the
    /// restart-only settings as they were at startup.
    pub fn get(&self) -> Config {
        let mtime = stamp(&self.path);
        {
            let s = self.state.read().unwrap_or_else(|e| e.into_inner());
            if s.0 == mtime {
                return s.1.clone();
            }
        }
        let mut s = self.state.write().unwrap_or_else(|e| e.into_inner());
        match Config::load(&self.path) {
            Ok(l) => {
                let pending = l.config.restart_changes(&self.startup);
                if !pending.is_empty() {
                    tracing::warn!(
                        "{}: {} changed; these settings are read when the server starts: restart to apply",
                        self.path.display(),
                        pending.join(", ")
                    );
                }
                s.1 = l.config.pinned_to(&self.startup);
            }
            Err(e) => tracing::warn!("keeping the previous config: {e}"),
        }
        s.0 = mtime;
        s.1.clone()
    }

    /// The config the server started with (what `exec.*`, `server.*` and `memory.dir` stay at).
    pub fn startup(&self) -> &Config {
        &self.startup
    }

    /// The file path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The (mtime, length) of a file, to notice edits cheaply on every call.
fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// Transcript writers kept between calls (the least recently used beyond are dropped):
/// memory stays flat however many sessions come and go.
pub const MAX_TRANSCRIPT_WRITERS: usize = 256;

/// A client counts as connected while it was active within this window (5 minutes).
pub const CLIENT_WINDOW: std::time::Duration = std::time::Duration::from_secs(300);

/// State shared by every session of one server process.
#[derive(Debug)]
pub struct Shared {
    /// Mode and roots.
    pub mode: Mode,
    /// The jail of the project (single mode) or of the access root (multi mode), built once
    /// at start with the protected directories ([`Protected::standard`]: the state home,
    /// the config file's directory, the other agents' homes); every tool path goes
    /// through it or through a bound project's jail with the same protected set.
    pub jail: Jail,
    /// State home.
    pub home: PathBuf,
    /// Live config.
    pub config: LiveConfig,
    /// Exec sessions of every MCP session of this process (`exec.maxSessions` in total).
    pub exec: codex_free_tools::exec::ExecSessions,
    /// Last activity per client (conversation or MCP session), for the dashboard's count.
    pub clients: std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>,
    /// The audit trail's appender, its file kept open between tool calls.
    pub audit: codex_free_core::audit::AuditWriter,
    /// MCP transcript writers by transcript key (see [`CodexFree::record`]), each with its
    /// last use; at most [`MAX_TRANSCRIPT_WRITERS`] (a writer holds no open file, and one
    /// made again continues its transcript).
    pub transcripts: std::sync::Mutex<
        std::collections::HashMap<
            String,
            (
                Arc<codex_free_transcripts::sources::mcp::TranscriptWriter>,
                std::time::Instant,
            ),
        >,
    >,
    /// Single mode: the project's jail now and where its root came from (the client's roots
    /// replace the working directory once listed).
    pub project: RwLock<(Jail, RootSource)>,
    /// Follow the client's MCP roots (started without `--project`).
    pub follow_roots: bool,
    /// Set once the client's roots were asked for (or there are none to ask for).
    pub roots_ready: tokio::sync::watch::Sender<bool>,
    /// `show_changes` snapshots of every conversation (`None` when no temporary folder
    /// could be made: the tool then says so).
    pub changes: Option<codex_free_tools::changes::ChangeTracker>,
    /// Tokens of a result the client that spawned this process passes to the model whole,
    /// from `CODEX_FREE_CLIENT_OUTPUT_TOKENS` (set by `connect codex` beside the
    /// `tool_output_token_limit` it raises in Codex's config); read once at start.
    pub client_output_tokens: Option<usize>,
    /// Set by the stdio transport: one client, one worker thread, so `read_file` runs on
    /// that worker instead of being handed to the blocking pool (see `tools_fs.rs`).
    pub inline_reads: std::sync::atomic::AtomicBool,
}

impl Shared {
    /// The jail of the single project (its current root), or of the access root.
    pub fn project_jail(&self) -> Jail {
        match self.mode {
            Mode::Single { .. } => self
                .project
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .0
                .clone(),
            Mode::Multi { .. } => self.jail.clone(),
        }
    }

    /// Where the single project's root came from.
    pub fn root_source(&self) -> RootSource {
        self.project.read().unwrap_or_else(|p| p.into_inner()).1
    }

    /// Take the first `file://` root of `roots` that is a directory outside the protected
    /// set as the project; `false` (and the working directory stays) when none is.
    // Roots are deprecated by SEP-2577, but they are how Codex CLI and Claude Code say
    // which project a session is in today.
    #[allow(deprecated)]
    pub fn adopt_roots(&self, roots: &[rmcp::model::Root]) -> bool {
        for r in roots {
            let Some(path) = url::Url::parse(&r.uri)
                .ok()
                .filter(|u| u.scheme() == "file")
                .and_then(|u| u.to_file_path().ok())
            else {
                tracing::info!(uri = %r.uri, "MCP root ignored: not a file:// URI");
                continue;
            };
            let jail = canonical_dir(&path, "the client's root")
                .and_then(|root| Jail::new(&root, self.jail.protected().clone()));
            match jail {
                Ok(j) => {
                    tracing::info!(root = %j.root().display(), "project root from the client's MCP roots");
                    *self.project.write().unwrap_or_else(|p| p.into_inner()) =
                        (j, RootSource::ClientRoots);
                    return true;
                }
                Err(e) => tracing::warn!(uri = %r.uri, "MCP root not used: {e}"),
            }
        }
        false
    }

    /// Note activity of client `key` (a conversation or MCP-session key; never a raw
    /// `openai/session` value) and forget clients idle longer than [`CLIENT_WINDOW`].
    pub fn touch_client(&self, key: &str) {
        let now = std::time::Instant::now();
        let mut m = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        m.retain(|_, t| now.duration_since(*t) < CLIENT_WINDOW);
        m.insert(key.to_string(), now);
    }

    /// Clients (MCP sessions or conversations) active within [`CLIENT_WINDOW`].
    pub fn active_clients(&self) -> u32 {
        let now = std::time::Instant::now();
        let m = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        m.values()
            .filter(|t| now.duration_since(**t) < CLIENT_WINDOW)
            .count() as u32
    }
}

/// The MCP server handler. Cheap to clone (an `Arc` and a router).
#[derive(Clone)]
pub struct CodexFree {
    pub(crate) shared: Arc<Shared>,
    tool_router: ToolRouter<Self>,
    /// Names this handler's transcript when the client sends no `openai/session`; also the
    /// conversation key of its calls then (one MCP session over HTTP, the process over stdio).
    instance: String,
    /// `clientInfo.name` sent at `initialize` (one handler per MCP session).
    client: Arc<std::sync::OnceLock<String>>,
}

/// One finished tool call as the audit trail sees it (see [`CodexFree::audit`]).
struct AuditCall<'a> {
    conversation: String,
    tool: &'a str,
    shapes: std::collections::BTreeMap<String, codex_free_core::audit::Shape>,
    args_bytes: u64,
    started: (std::time::Instant, chrono::DateTime<chrono::Utc>),
    out: &'a std::result::Result<CallToolResponse, rmcp::ErrorData>,
}

/// The `_meta["openai/session"]` value of the current tool call, if any, else (in
/// multi-project mode) `mcp-connection/<handler id>` for the connection; it
/// keys the conversation's project binding. Stored in
/// the request extensions by [`CodexFree::call_tool`]; never written to disk raw.
#[derive(Debug, Clone)]
pub struct ConversationId(pub Option<String>);

impl CodexFree {
    /// Build the shared state from options: the protected set is computed here, once.
    ///
    /// Errors: invalid config file; [`Error::PathProtected`] when the project or access root
    /// is or lies in a protected directory (e.g. `--project ~/.codex-free`).
    pub fn new(opts: ServerOptions) -> Result<Self> {
        let config = LiveConfig::load(opts.config_path.clone())?;
        // Credentials commands may not read (exec.denyRead) are out of the file tools' reach
        // too: a project that is the home directory must not hand `~/.ssh` to read_file.
        let mut protected = Protected::standard(&opts.home, &opts.config_path);
        for p in codex_free_tools::exec::sandbox::deny_read(&config.get().exec) {
            protected.add(&p, "a credential (exec.denyRead)");
        }
        let protected = Arc::new(protected);
        let root = match &opts.mode {
            Mode::Single { root } => root,
            Mode::Multi { access_root } => access_root,
        };
        let jail = Jail::new(root, protected)?;
        // The config file's directory is as protected from commands as the state home.
        let config_dir = opts
            .config_path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map(|d| std::path::absolute(d).unwrap_or_else(|_| d.to_path_buf()));
        // Temp files of writes a killed server left in the project's `.git`.
        if let Mode::Single { root } = &opts.mode {
            codex_free_tools::tmpfiles::sweep_project(root);
        }
        let follow_roots = opts.root_source == RootSource::WorkingDirectory;
        let shared = Arc::new(Shared {
            mode: opts.mode,
            project: RwLock::new((jail.clone(), opts.root_source)),
            follow_roots,
            roots_ready: tokio::sync::watch::Sender::new(!follow_roots),
            jail,
            audit: codex_free_core::audit::AuditWriter::new(&opts.home),
            home: opts.home,
            config,
            exec: codex_free_tools::exec::ExecSessions::new()
                .with_protected(config_dir.into_iter().collect()),
            transcripts: Default::default(),
            clients: Default::default(),
            inline_reads: Default::default(),
            client_output_tokens: std::env::var(codex_free_connect::CLIENT_OUTPUT_TOKENS_ENV)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok())
                .filter(|n| *n > 0),
            changes: codex_free_tools::changes::ChangeTracker::new()
                .inspect_err(|e| tracing::warn!("show_changes is unavailable: {e}"))
                .ok(),
        });
        Ok(Self::from_shared(shared))
    }

    /// A handler over existing shared state (one per HTTP session).
    pub fn from_shared(shared: Arc<Shared>) -> Self {
        let mut tool_router = Self::fs_router() + Self::exec_router() + Self::memory_router();
        let m = shared.config.get().memories;
        if m.enabled && m.use_memories && m.dedicated_tools {
            tool_router += Self::memories_router();
        }
        // Project selection exists only in multi-project mode: a single-project server does
        // not spend every client's context on two tools that can only refuse.
        if matches!(shared.mode, Mode::Single { .. }) {
            tool_router.remove_route("list_projects");
            tool_router.remove_route("set_project_root");
        }
        Self {
            shared,
            tool_router,
            instance: format!("mcp-{}", uuid::Uuid::now_v7().simple()),
            client: Default::default(),
        }
    }

    /// The live config as it applies to this session's client: the user's
    /// `output.clients.<clientInfo name>` entry when there is one (it wins: the user said
    /// what their client passes through), else the tool-output ceiling lowered to what a
    /// known client passes to the model whole ([`crate::mcp::clients`]).
    pub(crate) fn client_config(&self) -> Config {
        let mut config = self.shared.config.get();
        let name = self.client.get().map(String::as_str).unwrap_or("");
        let o = &mut config.output;
        match o.client(name).cloned() {
            Some(entry) if !name.is_empty() => o.apply_client(&entry),
            // The client's own limit was raised for this server by `connect codex`.
            _ if self.shared.client_output_tokens.is_some() => {
                let n = self.shared.client_output_tokens.unwrap_or(usize::MAX);
                o.max_tool_output_tokens = o.max_tool_output_tokens.min(n);
            }
            _ => {
                if let Some(max) = self.client_profile().and_then(|p| p.result_max_bytes) {
                    o.max_tool_output_tokens = o
                        .max_tool_output_tokens
                        .min(max / codex_free_core::tokens::BYTES_PER_TOKEN);
                }
            }
        }
        config
    }

    /// The conversation of a request whose `_meta["openai/session"]` is `session`. Without
    /// one the conversation is this connection: one MCP session over HTTP (a handler per
    /// session), the whole process over stdio; multi-project bindings then last as long as
    /// the connection (a new one starts unbound).
    pub(crate) fn conversation_for(&self, session: Option<String>) -> ConversationId {
        ConversationId(session.or_else(|| match self.shared.mode {
            Mode::Multi { .. } => Some(format!("mcp-connection/{}", self.instance)),
            Mode::Single { .. } => None,
        }))
    }

    /// The conversation of a request from its `_meta`.
    fn conversation_of(&self, meta: &rmcp::model::RequestMetaObject) -> ConversationId {
        self.conversation_for(
            meta.0
                .0
                .get("openai/session")
                .and_then(|v| v.as_str())
                .map(str::to_owned),
        )
    }

    /// The lines `get_environment` adds about this session's client: which client it is
    /// and the page budget in force for it, with where that budget comes from.
    pub(crate) fn client_lines(&self) -> String {
        let config = self.client_config();
        let tokens = config.output.max_tool_output_tokens;
        let name = self.client.get().map(String::as_str).unwrap_or("");
        let base = self.shared.config.get().output.max_tool_output_tokens;
        let label = match self.client_profile() {
            Some(p) => p.label.to_string(),
            None if name.is_empty() => "unknown (no clientInfo)".to_string(),
            None => format!("\"{name}\""),
        };
        let why = if !name.is_empty() && config.output.client(name).is_some() {
            format!("output.clients.\"{name}\" in codex.config.json")
        } else if let Some(n) = self.shared.client_output_tokens {
            format!(
                "output.maxToolOutputTokens; the client's registration says it passes {n} tokens whole ({})",
                codex_free_connect::CLIENT_OUTPUT_TOKENS_ENV
            )
        } else if let Some(max) = self.client_profile().and_then(|p| p.result_max_bytes)
            && tokens < base
        {
            format!(
                "lowered from output.maxToolOutputTokens = {base}: {label} passes at most {max} bytes of a result to the model uncut"
            )
        } else {
            "output.maxToolOutputTokens".to_string()
        };
        format!(
            "client: {label}\npage budget for this client: {tokens} tokens (~{} bytes), {} lines / {} bytes per read_file page ({why})",
            tokens * codex_free_core::tokens::BYTES_PER_TOKEN,
            config.output.max_file_lines,
            config.output.max_file_bytes,
        )
    }

    /// The profile of the client that initialized this session, when it is a known one.
    pub fn client_profile(&self) -> Option<&'static crate::mcp::clients::ClientProfile> {
        self.client
            .get()
            .and_then(|n| crate::mcp::clients::profile_for(n))
    }

    /// The key of a conversation in this process's in-memory tables: a SHA-256-derived
    /// key of `openai/session` (the raw value is never kept), else this handler's instance.
    pub(crate) fn conversation_key(&self, conversation: &ConversationId) -> String {
        match &conversation.0 {
            Some(raw) => format!(
                "conv-{}",
                &codex_free_core::home::sha256_hex(raw.as_bytes())[..32]
            ),
            None => self.instance.clone(),
        }
    }

    /// Before a conversation's first tool call (on its project): the snapshot
    /// `show_changes` diffs against. A failure is logged; the call still runs.
    async fn first_snapshot(&self, conversation: &ConversationId) {
        let Some(tracker) = self.shared.changes.as_ref() else {
            return;
        };
        let key = self.conversation_key(conversation);
        // Multi-project: a rebinding changes the project, which `ensure_start` notices.
        if tracker.has(&key) && matches!(self.shared.mode, Mode::Single { .. }) {
            return;
        }
        let Ok(ctx) = self.ctx(conversation) else {
            return;
        };
        let shared = self.shared.clone();
        let r = tokio::task::spawn_blocking(move || {
            shared.changes.as_ref().map(|t| t.ensure_start(&ctx, &key))
        })
        .await;
        if let Ok(Some(Err(e))) = r {
            tracing::warn!("show_changes: no snapshot at the first call: {e}");
        }
    }

    /// Append one tool call to this session's transcript under `<home>/transcripts/`
    /// (input of the memory pipeline's `mcp` source; redacted and bounded by the writer).
    /// Only when task memory is on (`memory.enabled: false` means nothing is kept), the
    /// pipeline is on, generating, and counts `mcp` as a source. The
    /// transcript is named by a SHA-256-derived key of `openai/session` when the client
    /// sends one (the raw value is never written), else by this handler's instance id.
    /// Failures are logged, never raised: a transcript is not worth failing a call for.
    fn record(
        &self,
        cfg: &Config,
        conversation: &ConversationId,
        tool: &str,
        args: &str,
        result: &CallToolResponse,
    ) {
        let m = &cfg.memories;
        if !(cfg.memory.enabled
            && m.enabled
            && m.generate_memories
            && m.sources.iter().any(|s| s == "mcp"))
        {
            return;
        }
        let key = self.conversation_key(conversation);
        let (text, is_error) = match result {
            CallToolResponse::Complete(r) => (
                r.content
                    .iter()
                    .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
                    .collect::<Vec<_>>()
                    .join("\n"),
                r.is_error.unwrap_or(false),
            ),
            _ => return,
        };
        let writer = {
            let mut map = self
                .shared
                .transcripts
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if let Some((w, used)) = map.get_mut(&key) {
                *used = std::time::Instant::now();
                w.clone()
            } else {
                if map.len() >= MAX_TRANSCRIPT_WRITERS
                    && let Some(oldest) = map
                        .iter()
                        .min_by_key(|(_, (_, used))| *used)
                        .map(|(k, _)| k.clone())
                {
                    map.remove(&oldest);
                }
                let cwd = match &self.shared.mode {
                    Mode::Single { .. } => Some(self.shared.project_jail().root().to_path_buf()),
                    Mode::Multi { .. } => None,
                };
                match codex_free_transcripts::sources::mcp::TranscriptWriter::open(
                    &self.shared.home,
                    &key,
                    cwd.as_deref(),
                ) {
                    Ok(w) => {
                        let w = Arc::new(w);
                        map.insert(key, (w.clone(), std::time::Instant::now()));
                        w
                    }
                    Err(e) => {
                        tracing::warn!("MCP transcript not written: {e}");
                        return;
                    }
                }
            }
        };
        if let Err(e) = writer.record_call(tool, args, &text, is_error) {
            tracing::warn!("MCP transcript not written: {e}");
        }
    }

    /// Append one line to the audit trail (`<home>/audit/audit.jsonl`, see
    /// [`codex_free_core::audit`]) when `audit.enabled`: shapes and sizes only. Runs on
    /// the calling worker: one short append under a cross-process lock held only for that
    /// append, cheaper than handing it to a blocking thread (a hand-off per call was
    /// measured as most of the server's CPU per call). Failures are logged, never raised, so
    /// a full disk does not turn every tool call into an error.
    fn audit(&self, cfg: &codex_free_core::config::AuditConfig, call: AuditCall<'_>) {
        if !cfg.enabled {
            return;
        }
        let runs_later = match call.out {
            Ok(CallToolResponse::Complete(r)) => r
                .content
                .iter()
                .filter_map(|c| c.as_text())
                .flat_map(|t| codex_free_core::runs_later::flagged_by(call.tool, &t.text))
                .collect(),
            _ => Vec::new(),
        };
        let (result_bytes, error) = match call.out {
            Ok(CallToolResponse::Complete(r)) => {
                let texts: Vec<&str> = r
                    .content
                    .iter()
                    .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
                    .collect();
                let bytes = texts.iter().map(|t| t.len() as u64).sum();
                let error = r.is_error.unwrap_or(false).then(|| {
                    texts
                        .first()
                        .and_then(|t| t.strip_prefix("error["))
                        .and_then(|t| t.split_once(']'))
                        .map(|(code, _)| codex_free_core::audit::clean_name(code))
                        .unwrap_or_else(|| "tool_error".into())
                });
                (bytes, error)
            }
            // Input-required and task answers carry no tool output yet.
            Ok(_) => (0, None),
            Err(e) => (
                0,
                Some(
                    match e.code {
                        rmcp::model::ErrorCode::INVALID_PARAMS => "invalid_params",
                        rmcp::model::ErrorCode::METHOD_NOT_FOUND => "unknown_tool",
                        _ => "mcp_error",
                    }
                    .to_string(),
                ),
            ),
        };
        let (t0, wall) = call.started;
        let entry = codex_free_core::audit::Entry {
            time: wall.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            time_ms: wall.timestamp_millis(),
            conversation: call.conversation,
            tool: codex_free_core::audit::clean_name(call.tool),
            args: call.shapes,
            args_bytes: call.args_bytes,
            result_bytes,
            duration_ms: t0.elapsed().as_millis() as u64,
            error,
            sandbox: None,
            runs_later,
        };
        if let Err(e) = self
            .shared
            .audit
            .append(&entry, cfg.max_file_bytes, cfg.keep_files)
        {
            tracing::warn!("audit line not written: {e}");
        }
    }

    /// The shared state.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The tool context for a call: the project's jail (single mode) or the conversation's
    /// bound project's (multi mode, re-checked against the protected set on every call),
    /// and a fresh config snapshot.
    pub(crate) fn ctx(&self, conversation: &ConversationId) -> Result<ToolCtx> {
        let config = self.client_config();
        match &self.shared.mode {
            Mode::Single { .. } => Ok(ToolCtx::new(
                self.shared.project_jail(),
                config,
                self.shared.home.clone(),
            )),
            Mode::Multi { .. } => {
                let session = conversation.0.as_deref().ok_or_else(|| {
                    Error::Binding(codex_free_task_memory::bindings::missing_session_message(
                        "it is missing",
                    ))
                })?;
                let b = codex_free_task_memory::Bindings::new(&self.shared.home, &self.shared.jail);
                let jail = b.project_jail(&b.project_for(session)?)?;
                Ok(ToolCtx::new(jail, config, self.shared.home.clone()))
            }
        }
    }

    /// The instructions for a new session: rebuilt on every initialize, so they never show
    /// stale state. Single project: brief, environment, saved state, skills, AGENTS.md;
    /// multi-project: the project-neutral brief (no project is known yet). Built by
    /// `tools_task_memory::instructions`.
    pub fn instructions(&self) -> String {
        let base = crate::mcp::tools_task_memory::instructions(&self.shared);
        let config = self.shared.config.get();
        let base = match self.sandbox_status().warning {
            Some(w) => format!("WARNING: {w}.\n\n{base}"),
            None => base,
        };
        match codex_free_memory::readpath::summary_for_instructions(&self.shared.home, &config) {
            Some(m) => format!("{base}\n\n{m}"),
            None => base,
        }
    }

    /// The OS sandbox commands of this server run in (fixed at startup, as `exec.*`).
    pub fn sandbox_status(&self) -> codex_free_tools::exec::SandboxStatus {
        codex_free_tools::exec::sandbox_status(&self.shared.config.startup().exec)
    }
}

impl CodexFree {
    // See `Shared::adopt_roots` for why the deprecated roots API is used.
    #[allow(deprecated)]
    async fn follow_client_roots(&self, peer: &rmcp::service::Peer<RoleServer>) {
        let offers = peer
            .peer_info()
            .is_some_and(|i| i.capabilities.roots.is_some());
        if !offers {
            tracing::info!("the client offers no MCP roots: the project is the working directory");
            return;
        }
        match tokio::time::timeout(ROOTS_WAIT, peer.list_roots()).await {
            Ok(Ok(r)) => {
                if !self.shared.adopt_roots(&r.roots) {
                    tracing::info!("no usable MCP root: the project is the working directory");
                }
            }
            Ok(Err(e)) => {
                tracing::warn!("roots/list failed: {e}; the project is the working directory")
            }
            Err(_) => {
                tracing::warn!("roots/list got no answer; the project is the working directory")
            }
        }
    }
}

/// Map a core result into an MCP tool result: `Ok(text)` → text content; `Err(e)` →
/// `isError: true` with `error[<code>]: <message>` (clients match on the code, never the text).
pub(crate) fn reply(r: Result<String>) -> CallToolResult {
    match r {
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(e) => CallToolResult::error(vec![ContentBlock::text(e.mcp_text())]),
    }
}

/// Pull the conversation id out of the request extensions.
pub(crate) fn conversation(ext: &rmcp::model::Extensions) -> ConversationId {
    ext.get::<ConversationId>()
        .cloned()
        .unwrap_or(ConversationId(None))
}

impl ServerHandler for CodexFree {
    // `logging` is deprecated in newer protocol drafts but still asked for by clients and
    // the conformance suite; it is advertised and `logging/setLevel` accepted.
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_prompts()
                .enable_logging()
                .build(),
        )
        .with_server_info(Implementation::new("codex-free", env!("CARGO_PKG_VERSION")))
        .with_instructions(self.instructions_for(self.client_profile()))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<InitializeResult, rmcp::ErrorData> {
        context.peer.set_peer_info(request.clone());
        // Set before the instructions are built (`get_info`), which depend on it.
        let _ = self.client.set(request.client_info.name.clone());
        if self.client_profile().is_some_and(|p| p.id == "codex")
            && let Err(e) = codex_free_connect::record_codex_session(&self.shared.home)
        {
            tracing::warn!("could not record the Codex session: {e}");
        }
        self.negotiate_initialize(&request)
    }

    /// Without `--project`: ask a client that offers roots for them, and work on the first
    /// usable one; tool calls wait (at most [`ROOTS_WAIT`]) until this is done.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if self.shared.follow_roots {
            self.follow_client_roots(&context.peer).await;
        }
        self.shared.roots_ready.send_replace(true);
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        if self.shared.follow_roots {
            self.follow_client_roots(&context.peer).await;
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, rmcp::ErrorData> {
        if self.shared.follow_roots {
            let mut rx = self.shared.roots_ready.subscribe();
            if tokio::time::timeout(ROOTS_WAIT, rx.wait_for(|r| *r))
                .await
                .is_err()
            {
                // No `initialized` came: work on the working directory from now on.
                self.shared.roots_ready.send_replace(true);
            }
        }
        let session = context
            .meta
            .0
            .0
            .get("openai/session")
            .and_then(|v| v.as_str())
            .map(str::to_owned);
        // Who is calling, for the dashboard's client count: the conversation (hashed), else
        // the client info the stateless protocol sends with each request, else this
        // handler (one per stdio or legacy HTTP session).
        let client_key = match &session {
            Some(raw) => format!(
                "conv-{}",
                &codex_free_core::home::sha256_hex(raw.as_bytes())[..16]
            ),
            None => match context.meta.0.0.get("io.modelcontextprotocol/clientInfo") {
                Some(info) => format!("client-{info}"),
                None => self.instance.clone(),
            },
        };
        self.shared.touch_client(&client_key);
        let conversation = self.conversation_for(session);
        context.extensions.insert(conversation.clone());
        self.first_snapshot(&conversation).await;
        let tool = request.name.to_string();
        let args = request
            .arguments
            .as_ref()
            .map(|a| serde_json::Value::Object(a.clone()).to_string())
            .unwrap_or_default();
        let started = (std::time::Instant::now(), chrono::Utc::now());
        let shapes = codex_free_core::audit::shapes(request.arguments.as_ref());
        let peer = context.peer.clone();
        let tcc = ToolCallContext::new(self, request, context);
        let out = self.tool_router.call(tcc).await;
        // A newly bound project brings its own saved state and skills as resources.
        if tool == "set_project_root"
            && matches!(&out, Ok(CallToolResponse::Complete(r)) if r.is_error != Some(true))
            && let Err(e) = peer.notify_resource_list_changed().await
        {
            tracing::debug!("resources/list_changed not sent: {e}");
        }
        let audit_key = match &conversation.0 {
            Some(raw) => format!(
                "conv-{}",
                &codex_free_core::home::sha256_hex(raw.as_bytes())[..16]
            ),
            None => self.instance.clone(),
        };
        // One config snapshot for the audit line and the transcript (each read stats the
        // file and clones the config).
        let cfg = self.shared.config.get();
        self.audit(
            &cfg.audit,
            AuditCall {
                conversation: audit_key,
                tool: &tool,
                shapes,
                args_bytes: args.len() as u64,
                started,
                out: &out,
            },
        );
        if let Ok(r) = &out {
            self.record(&cfg, &conversation, &tool, &args, r);
        }
        out
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, rmcp::ErrorData> {
        let mut tools = self.tool_router.list_all();
        for t in &mut tools {
            crate::mcp::schema::trim(std::sync::Arc::make_mut(&mut t.input_schema));
            crate::mcp::schema::describe(t);
            if let Some(a) = &mut t.annotations {
                let mut v = serde_json::to_value(&*a).unwrap_or_default();
                if let Some(o) = v.as_object_mut() {
                    crate::mcp::schema::trim_annotations(o);
                    let empty = o.is_empty();
                    t.annotations = if empty {
                        None
                    } else {
                        serde_json::from_value(v).ok()
                    };
                }
            }
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourcesResult, rmcp::ErrorData> {
        let conv = self.conversation_of(&context.meta);
        let this = self.clone();
        let items = tokio::task::spawn_blocking(move || this.list_resources_for(&conv))
            .await
            .unwrap_or_default();
        Ok(ListResourcesResult::with_all_items(items))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<ReadResourceResponse, rmcp::ErrorData> {
        let conv = self.conversation_of(&context.meta);
        let this = self.clone();
        let uri = request.uri.clone();
        let r = tokio::task::spawn_blocking(move || this.read_resource_for(&conv, &uri))
            .await
            .unwrap_or_else(|e| Err(Error::Cancelled(format!("resource task failed: {e}"))));
        match r {
            Ok(r) => Ok(r.into()),
            Err(e @ Error::InvalidArgument(_)) => Err(rmcp::ErrorData::resource_not_found(
                e.mcp_text(),
                Some(serde_json::json!({"uri": request.uri})),
            )),
            Err(e) => Err(rmcp::ErrorData::internal_error(e.mcp_text(), None)),
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListPromptsResult, rmcp::ErrorData> {
        Ok(ListPromptsResult::with_all_items(
            crate::mcp::resources::prompts(),
        ))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<GetPromptResponse, rmcp::ErrorData> {
        let conv = self.conversation_of(&context.meta);
        let this = self.clone();
        let name = request.name.clone();
        let args = request.arguments.clone();
        let r =
            tokio::task::spawn_blocking(move || this.get_prompt_for(&conv, &name, args.as_ref()))
                .await
                .unwrap_or_else(|e| Err(Error::Cancelled(format!("prompt task failed: {e}"))));
        r.map(Into::into)
            .map_err(|e| rmcp::ErrorData::invalid_params(e.mcp_text(), None))
    }

    /// Accepted so clients may set it; this server logs to stderr (`CODEX_FREE_LOG`) and
    /// sends no log notifications.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<(), rmcp::ErrorData> {
        Ok(())
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.tool_router.get(name).cloned()
    }
}
