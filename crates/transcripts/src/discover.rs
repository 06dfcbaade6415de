//! Finding transcripts: where each agent keeps its sessions,
//! which files count, which are eligible for extraction now, and a debounced file watcher
//! that tells the scheduler to rescan.
//!
//! Layouts (relative to each agent's home, see [`SourceRoots::from_env`]):
//! - Codex: `sessions/**/*.jsonl` and `archived_sessions/**/*.jsonl` named `rollout-*`, or
//!   whose first line is a `session_meta` record (a copied or renamed rollout, a tool that
//!   names them otherwise: found by content, [`is_codex_rollout`]);
//! - Claude Code: `projects/*/*.jsonl` (sub-agent files live deeper, in `subagents/`, and
//!   older ones are named `agent-*.jsonl`: both excluded);
//! - pi: `sessions/*/*.jsonl`;
//! - this server: `<state home>/transcripts/**/*.jsonl`.
//!
//! Eligibility ([`eligibility`]) follows upstream Codex's phase-1 claim: the source is
//! enabled (`memories.sources`), the session is idle at least `min_rollout_idle_hours`,
//! was updated within `max_rollout_age_days`, and is neither ephemeral nor a sub-agent.
//! Deviation: Codex only counts `cli`/`vscode` sessions as interactive; here every
//! non-sub-agent session of an enabled source counts (so `codex exec` sessions are kept).
//!
//! Invariant: discovery only lists and stats files (no symlink is followed, nothing is
//! opened for writing; a Codex file not named `rollout-*` has its first 512 bytes read);
//! unreadable directories are skipped with a debug log.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use notify_debouncer_full::notify::RecursiveMode;
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use tokio_util::sync::CancellationToken;

use super::rollout::Source;
use super::sources::SessionMeta;
use super::sources::mcp::TRANSCRIPTS_DIR;
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::config::MemoriesConfig;

/// Where each agent keeps its files. `None` disables that source's discovery.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceRoots {
    /// Codex home (`$CODEX_HOME`, default `~/.codex`).
    pub codex_home: Option<PathBuf>,
    /// Claude Code config dir (`$CLAUDE_CONFIG_DIR`, default `~/.claude`).
    pub claude_dir: Option<PathBuf>,
    /// pi agent dir (`$PI_CODING_AGENT_DIR`, default `~/.pi/agent`).
    pub pi_dir: Option<PathBuf>,
    /// This server's state home (its `transcripts/` holds the MCP sessions).
    pub state_home: Option<PathBuf>,
}

impl SourceRoots {
    /// Roots from the environment: `CODEX_HOME`, `CLAUDE_CONFIG_DIR`,
    /// `PI_CODING_AGENT_DIR` (each defaulting under the user's home directory) and
    /// `state_home` for MCP transcripts. Empty variables count as unset.
    pub fn from_env(state_home: &Path) -> Self {
        // The same lookup that decides which agent homes the tools keep out of.
        let agents = codex_free_core::home::AgentHomes::from_env();
        Self {
            codex_home: agents.codex,
            claude_dir: agents.claude,
            pi_dir: agents.pi,
            state_home: Some(state_home.to_path_buf()),
        }
    }

    /// The directories holding `source`'s transcripts (they may not exist).
    pub fn dirs(&self, source: Source) -> Vec<PathBuf> {
        match source {
            Source::Codex => self
                .codex_home
                .iter()
                .flat_map(|h| [h.join("sessions"), h.join("archived_sessions")])
                .collect(),
            Source::Claude => self.claude_dir.iter().map(|d| d.join("projects")).collect(),
            Source::Pi => self.pi_dir.iter().map(|d| d.join("sessions")).collect(),
            Source::Mcp => self
                .state_home
                .iter()
                .map(|d| d.join(TRANSCRIPTS_DIR))
                .collect(),
        }
    }

    /// Which enabled source's directory contains `path`, if any.
    pub fn source_of(&self, path: &Path, enabled: &[Source]) -> Option<Source> {
        enabled
            .iter()
            .copied()
            .find(|s| self.dirs(*s).iter().any(|d| path.starts_with(d)))
    }
}

/// A transcript file found by [`discover`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Absolute path of the transcript.
    pub path: PathBuf,
    /// Which agent wrote it.
    pub source: Source,
    /// Size in bytes.
    pub size: u64,
    /// Last modification time.
    pub mtime: SystemTime,
}

/// The enabled sources from `memories.sources` (unknown names are ignored here; config
/// validation reports them).
pub fn enabled_sources(cfg: &MemoriesConfig) -> Vec<Source> {
    cfg.sources.iter().filter_map(|s| s.parse().ok()).collect()
}

/// Every transcript of the `enabled` sources under `roots`, newest first (by mtime, then
/// path). Missing roots yield nothing.
pub fn discover(roots: &SourceRoots, enabled: &[Source]) -> Vec<Candidate> {
    let mut out = Vec::new();
    for &source in enabled {
        for dir in roots.dirs(source) {
            walk_source(&dir, source, false, &mut out);
        }
    }
    out.sort_by(|a, b| b.mtime.cmp(&a.mtime).then_with(|| a.path.cmp(&b.path)));
    out
}

/// Every transcript that can carry the agents' token usage, for the usage import: as
/// [`discover`] for Codex and pi, but Claude Code's sub-agent files (`subagents/`,
/// `agent-*.jsonl`) are included, since their requests are billed too (copies of one
/// request are de-duplicated by the import, not by skipping files). The MCP source
/// records no model usage and is never listed. Order: by path.
pub fn discover_usage(roots: &SourceRoots, agents: &[Source]) -> Vec<Candidate> {
    let mut out = Vec::new();
    for &source in agents {
        for dir in roots.dirs(source) {
            walk_source(&dir, source, true, &mut out);
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The transcripts of `source` under `dir` into `out`, for extraction or (`usage`) for the
/// usage import; the two differ only in Claude Code's sub-agent files and the MCP source
/// (see [`discover_usage`]).
fn walk_source(dir: &Path, source: Source, usage: bool, out: &mut Vec<Candidate>) {
    match (source, usage) {
        (Source::Codex, _) => walk(dir, 6, &mut is_codex_rollout, source, out),
        (Source::Claude, false) => walk_exact(dir, 2, &|p| !name_matches(p, "agent-"), source, out),
        (Source::Claude, true) => walk(dir, 4, &mut |_| true, source, out),
        (Source::Pi, _) => walk_exact(dir, 2, &|_| true, source, out),
        (Source::Mcp, false) => walk(dir, 6, &mut |_| true, source, out),
        (Source::Mcp, true) => {}
    }
}

/// Bytes of a Codex file's start searched for its `session_meta` type: Codex writes
/// `{"timestamp":…,"ordinal":0,"type":"session_meta",…` first, so the type sits well inside
/// them; the instructions that follow can be many KiB and are not read.
const CODEX_HEAD: usize = 512;

/// Whether `p` (a `.jsonl` file under a Codex home) is a Codex rollout: named `rollout-*`,
/// or its first line's head carries `"type":"session_meta"`.
pub fn is_codex_rollout(p: &Path) -> bool {
    if name_matches(p, "rollout-") {
        return true;
    }
    let mut head = [0u8; CODEX_HEAD];
    let n = match std::fs::File::open(p).and_then(|mut f| {
        use std::io::Read;
        f.read(&mut head)
    }) {
        Ok(n) => n,
        Err(_) => return false,
    };
    let first = head[..n].split(|b| *b == b'\n').next().unwrap_or(&[]);
    let needle = br#""type":"session_meta""#;
    first.windows(needle.len()).any(|w| w == needle)
}

fn name_matches(p: &Path, prefix: &str) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(prefix))
}

fn is_jsonl(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "jsonl")
}

fn read_dir(dir: &Path) -> Vec<std::fs::DirEntry> {
    match std::fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(|e| e.ok()).collect(),
        Err(e) => {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::debug!(dir = %dir.display(), error = %e, "skipping unreadable directory");
            }
            Vec::new()
        }
    }
}

fn push_file(e: &std::fs::DirEntry, source: Source, out: &mut Vec<Candidate>) {
    if let Ok(md) = e.metadata() {
        out.push(Candidate {
            path: e.path(),
            source,
            size: md.len(),
            mtime: md.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        });
    }
}

/// Recursive walk (at most `depth` levels) collecting `*.jsonl` files accepted by `keep`.
fn walk(
    dir: &Path,
    depth: usize,
    keep: &mut dyn FnMut(&Path) -> bool,
    source: Source,
    out: &mut Vec<Candidate>,
) {
    for e in read_dir(dir) {
        let Ok(ft) = e.file_type() else { continue };
        let p = e.path();
        if ft.is_dir() && depth > 1 {
            walk(&p, depth - 1, keep, source, out);
        } else if ft.is_file() && is_jsonl(&p) && keep(&p) {
            push_file(&e, source, out);
        }
    }
}

/// Files exactly `depth` levels below `dir` (depth 2 = `dir/*/*.jsonl`).
fn walk_exact(
    dir: &Path,
    depth: usize,
    keep: &dyn Fn(&Path) -> bool,
    source: Source,
    out: &mut Vec<Candidate>,
) {
    for e in read_dir(dir) {
        let Ok(ft) = e.file_type() else { continue };
        let p = e.path();
        if depth > 1 {
            if ft.is_dir() {
                walk_exact(&p, depth - 1, keep, source, out);
            }
        } else if ft.is_file() && is_jsonl(&p) && keep(&p) {
            push_file(&e, source, out);
        }
    }
}

/// Why a candidate is not extracted now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ineligible {
    /// Its source is not in `memories.sources`.
    SourceDisabled,
    /// Modified less than `min_rollout_idle_hours` ago (still in use).
    TooFresh,
    /// Not modified within `max_rollout_age_days`.
    TooOld,
    /// A sub-agent / sidechain transcript.
    Subagent,
    /// An ephemeral session.
    Ephemeral,
}

impl Ineligible {
    /// Stable snake_case reason for status output and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Ineligible::SourceDisabled => "source_disabled",
            Ineligible::TooFresh => "too_fresh",
            Ineligible::TooOld => "too_old",
            Ineligible::Subagent => "subagent",
            Ineligible::Ephemeral => "ephemeral",
        }
    }
}

/// Whether `c` (with `meta` from [`super::sources::read_meta`]) may be extracted at `now`
/// under `cfg`. Ages use the file's mtime, as upstream uses the thread's `updated_at`.
pub fn eligibility(
    c: &Candidate,
    meta: &SessionMeta,
    cfg: &MemoriesConfig,
    now: DateTime<Utc>,
) -> Result<(), Ineligible> {
    if !enabled_sources(cfg).contains(&c.source) {
        return Err(Ineligible::SourceDisabled);
    }
    if meta.is_subagent {
        return Err(Ineligible::Subagent);
    }
    if meta.is_ephemeral {
        return Err(Ineligible::Ephemeral);
    }
    let updated: DateTime<Utc> = c.mtime.into();
    let idle = now.signed_duration_since(updated);
    if idle < chrono::Duration::hours(i64::from(cfg.min_rollout_idle_hours)) {
        return Err(Ineligible::TooFresh);
    }
    if idle > chrono::Duration::days(i64::from(cfg.max_rollout_age_days)) {
        return Err(Ineligible::TooOld);
    }
    Ok(())
}

/// What the watcher tells the scheduler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEvent {
    /// Transcripts of `source` changed (`paths`: the `*.jsonl` files seen); rescan.
    Rescan {
        /// The source whose directory changed.
        source: Source,
        /// Changed transcript paths (deduplicated, never empty).
        paths: Vec<PathBuf>,
    },
}

/// Default debounce window: 2 seconds (agents append many lines per turn).
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_secs(2);

/// A running debounced watcher over the transcript directories. Dropping it (or
/// cancelling its token) stops event delivery.
pub struct Watcher {
    debouncer:
        Option<Debouncer<notify_debouncer_full::notify::RecommendedWatcher, RecommendedCache>>,
    watched: Vec<PathBuf>,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("watched", &self.watched)
            .finish()
    }
}

impl Watcher {
    /// Watch every source's directories with [`DEFAULT_DEBOUNCE`]; see [`Watcher::start_with`].
    pub fn start(
        roots: &SourceRoots,
        tx: tokio::sync::mpsc::Sender<WatchEvent>,
        cancel: CancellationToken,
    ) -> Result<Self> {
        Self::start_with(roots, &Source::ALL, DEFAULT_DEBOUNCE, tx, cancel)
    }

    /// Watch the existing directories of the `enabled` sources recursively; after each
    /// quiet `debounce` window send one [`WatchEvent::Rescan`] per source whose `*.jsonl`
    /// files changed (events touching no `*.jsonl` file are dropped). A full channel drops the event (a rescan is already pending). After
    /// `cancel` fires no event is sent. Directories that do not exist yet are not watched
    /// (the scheduler's periodic scan covers them).
    ///
    /// Errors: [`Error::InvalidArgument`] when the OS watcher cannot be created (e.g. the
    /// inotify instance limit is reached); a directory that cannot be watched is logged
    /// and skipped.
    #[expect(
        clippy::expect_used,
        reason = "the value was checked or pushed just above in this function"
    )]
    pub fn start_with(
        roots: &SourceRoots,
        enabled: &[Source],
        debounce: Duration,
        tx: tokio::sync::mpsc::Sender<WatchEvent>,
        cancel: CancellationToken,
    ) -> Result<Self> {
        let map: Arc<Mutex<Vec<(Source, PathBuf)>>> = Arc::new(Mutex::new(Vec::new()));
        let map2 = Arc::clone(&map);
        let handler = move |res: DebounceEventResult| {
            if cancel.is_cancelled() {
                return;
            }
            let events = match res {
                Ok(ev) => ev,
                Err(errs) => {
                    tracing::warn!(?errs, "transcript watcher error");
                    return;
                }
            };
            let dirs = map2.lock().map(|m| m.clone()).unwrap_or_default();
            let mut by_source: Vec<(Source, Vec<PathBuf>)> = Vec::new();
            for ev in events {
                for p in &ev.event.paths {
                    let Some((s, _)) = dirs.iter().find(|(_, d)| p.starts_with(d)) else {
                        continue;
                    };
                    let slot = match by_source.iter_mut().position(|(x, _)| x == s) {
                        Some(i) => &mut by_source[i].1,
                        None => {
                            by_source.push((*s, Vec::new()));
                            &mut by_source.last_mut().expect("just pushed").1
                        }
                    };
                    if is_jsonl(p) && !slot.contains(p) {
                        slot.push(p.clone());
                    }
                }
            }
            for (source, paths) in by_source {
                if !paths.is_empty() {
                    let _ = tx.try_send(WatchEvent::Rescan { source, paths });
                }
            }
        };
        let mut debouncer = new_debouncer(debounce, None, handler)
            .map_err(|e| Error::InvalidArgument(format!("cannot start transcript watcher: {e}")))?;
        let mut watched = Vec::new();
        for &s in enabled {
            for d in roots.dirs(s) {
                if !d.is_dir() {
                    continue;
                }
                match debouncer.watch(&d, RecursiveMode::Recursive) {
                    Ok(()) => {
                        map.lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push((s, d.clone()));
                        watched.push(d);
                    }
                    Err(e) => {
                        tracing::warn!(dir = %d.display(), error = %e, "cannot watch transcript directory")
                    }
                }
            }
        }
        Ok(Self {
            debouncer: Some(debouncer),
            watched,
        })
    }

    /// Directories being watched.
    pub fn watched(&self) -> &[PathBuf] {
        &self.watched
    }

    /// Stop watching and wait for the event thread to finish.
    pub fn stop(mut self) {
        if let Some(d) = self.debouncer.take() {
            d.stop();
        }
    }
}
