//! `memory.json`: the notes and plan of one project.
//!
//! The file lives at `<state home>/projects/<name>-<hash>/memory.json` where `<name>-<hash>`
//! is [`home::project_slug`] of the canonical project root, so a symlinked path to the same
//! root shares notes and two checkouts do not. `memory.dir` overrides the directory (in
//! multi-project mode it is a base with one `<name>-<hash>` child per project).
//!
//! File shape (version 1):
//! `{"version":1,"projectRoot":"/abs/root","notes":{"key":"text",...},
//! "plan":{"explanation":"...","steps":[{"step":"...","status":"pending"}],"updatedAt":"..."},
//! "updatedAt":"..."}`; times are RFC 3339 UTC.
//!
//! Invariant: every change is read-modify-write under the file's cross-process lock
//! ([`home::with_lock`]) and lands by temp file + fsync + rename; a file that does not parse
//! is moved aside to `memory.json.corrupt-<timestamp>` and reported ([`Error::Corrupt`]),
//! never overwritten; with `memory.enabled = false` nothing is created or written; a note
//! that would push the notes over `memory.maxBytes` is refused and nothing is evicted; a
//! note key, note value, plan explanation or step holding a secret-shaped text (one of
//! `codex_free_redact`'s rules) is refused ([`refuse_secret`]), and what was saved before
//! that rule is served redacted ([`render_saved_state`]): the file is kept in clear in the
//! state home and its text goes into every new session's instructions.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::plan::{Plan, PlanItem};
use super::{RememberArgs, UpdatePlanArgs};
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::config::MemoryConfig;
use codex_free_core::home;

/// File name of the store inside its directory.
pub const MEMORY_FILE: &str = "memory.json";
/// Schema version written by this build.
pub const STORE_VERSION: u32 = 1;
/// Longest accepted note key, in bytes.
pub const MAX_KEY_BYTES: usize = 128;

/// The whole `memory.json` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryFile {
    /// Schema version ([`STORE_VERSION`]).
    pub version: u32,
    /// The canonical project root the notes belong to (so a human can tell folders apart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_root: Option<String>,
    /// Notes by key (sorted): key → text.
    #[serde(default)]
    pub notes: BTreeMap<String, String>,
    /// The saved plan, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    /// Time of the last write (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

impl Default for MemoryFile {
    fn default() -> Self {
        Self {
            version: STORE_VERSION,
            project_root: None,
            notes: BTreeMap::new(),
            plan: None,
            updated_at: None,
        }
    }
}

impl MemoryFile {
    /// Bytes the notes use against `memory.maxBytes`: the sum over notes of key bytes plus
    /// value bytes (UTF-8). JSON overhead is not counted.
    pub fn notes_bytes(&self) -> usize {
        self.notes.iter().map(|(k, v)| k.len() + v.len()).sum()
    }
}

/// Current time as RFC 3339 UTC with seconds precision.
pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Where `memory.json` lives for `canonical_root` (one file per canonical
/// root, so two checkouts never share notes).
///
/// - no `memory.dir`: `<home>/projects/<slug>/memory.json`;
/// - `memory.dir` in single-project mode: `<dir>/memory.json`;
/// - `memory.dir` in multi-project mode: `<dir>/<slug>/memory.json`.
///
/// `dir` may start with `~/` (the user's home) or be relative (to the state home).
/// Errors: [`Error::Config`] when an explicit `memory.dir` lies inside the project (notes
/// must never be written into the repository).
pub fn memory_path(
    home: &Path,
    cfg: &MemoryConfig,
    canonical_root: &Path,
    multi_project: bool,
) -> Result<PathBuf> {
    let slug = home::project_slug(canonical_root);
    let Some(dir) = &cfg.dir else {
        return Ok(home.join("projects").join(slug).join(MEMORY_FILE));
    };
    let dir = expand_dir(home, dir);
    let dir_real = canonical_prefix(&dir);
    if dir_real.starts_with(canonical_root) {
        return Err(Error::Config(format!(
            "memory.dir = {} lies inside the project {}; task memory is never written into a project, choose a directory outside it",
            dir.display(),
            canonical_root.display()
        )));
    }
    let dir = if multi_project { dir.join(slug) } else { dir };
    Ok(dir.join(MEMORY_FILE))
}

fn expand_dir(home: &Path, dir: &Path) -> PathBuf {
    if let Ok(rest) = dir.strip_prefix("~")
        && let Some(h) = std::env::home_dir()
    {
        return h.join(rest);
    }
    if dir.is_relative() {
        home.join(dir)
    } else {
        dir.to_path_buf()
    }
}

/// Canonicalise the longest existing ancestor of `p` and re-append the rest, so a path that
/// does not exist yet can still be compared with canonical roots.
pub(crate) fn canonical_prefix(p: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut cur = p.to_path_buf();
    loop {
        if let Ok(c) = std::fs::canonicalize(&cur) {
            let mut out = c;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (cur.file_name().map(|s| s.to_os_string()), cur.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                cur = parent.to_path_buf();
            }
            _ => return p.to_path_buf(),
        }
    }
}

/// The task memory of one project. Opening does no I/O beyond canonicalising the root; each
/// call reads the file afresh, so several processes (stdio servers, the tray app) see each
/// other's writes.
#[derive(Debug, Clone)]
pub struct TaskMemory {
    path: PathBuf,
    root: PathBuf,
    enabled: bool,
    max_bytes: usize,
}

impl TaskMemory {
    /// Task memory of `project_root` (canonicalised here, so symlinked spellings of one root
    /// share a store). `multi_project` selects how an explicit `memory.dir` is used (see
    /// [`memory_path`]). Nothing is created until the first write.
    ///
    /// Errors: [`Error::NotFound`] if the root does not exist; [`Error::Config`] from
    /// [`memory_path`].
    pub fn open(
        home: &Path,
        cfg: &MemoryConfig,
        project_root: &Path,
        multi_project: bool,
    ) -> Result<Self> {
        let root = std::fs::canonicalize(project_root)
            .map_err(|_| Error::NotFound(project_root.to_path_buf()))?;
        let path = memory_path(home, cfg, &root, multi_project)?;
        Ok(Self {
            path,
            root,
            enabled: cfg.enabled,
            max_bytes: cfg.max_bytes,
        })
    }

    /// Path of `memory.json` (it may not exist yet).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The canonical project root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether persistence is on (`memory.enabled`).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    fn disabled_error(&self) -> Error {
        Error::Refused(
            "task memory is disabled (memory.enabled = false in codex.config.json), so nothing was saved; \
             keep what matters in the conversation, or ask the user to enable memory"
                .into(),
        )
    }

    /// Read the current document. A missing file is an empty store.
    ///
    /// Errors: [`Error::Corrupt`] (the file was moved aside under the lock, the next write
    /// starts empty); [`Error::Refused`] for a file written by a newer schema version (left
    /// in place); [`Error::Io`].
    pub fn load(&self) -> Result<MemoryFile> {
        if !self.enabled {
            return Ok(MemoryFile::default());
        }
        match read_doc(&self.path) {
            Ok(doc) => Ok(doc),
            // Re-check under the lock before moving anything aside: another process may be
            // mid-rename (cannot happen with atomic rename, but the lock makes the move-aside
            // itself race-free with writers).
            Err(ReadError::Corrupt(_)) => home::with_lock(&self.path, || self.load_locked()),
            Err(e) => Err(e.into_error(&self.path)),
        }
    }

    /// Load while holding the lock, moving a corrupt file aside.
    fn load_locked(&self) -> Result<MemoryFile> {
        match read_doc(&self.path) {
            Ok(doc) => Ok(doc),
            Err(ReadError::Corrupt(why)) => {
                let backup = home::move_aside(&self.path)?;
                tracing::warn!(path = %self.path.display(), backup = %backup.display(), "corrupt memory.json moved aside: {why}");
                Err(Error::Corrupt {
                    message: format!(
                        "task memory {} could not be read ({why}); it was kept as a backup and the store starts empty on the next write",
                        self.path.display()
                    ),
                    backup,
                })
            }
            Err(e) => Err(e.into_error(&self.path)),
        }
    }

    /// Read-modify-write under the lock. `f` returns the message for the caller; the file
    /// is written only when `f` returns `Ok((msg, true))`.
    #[expect(
        clippy::expect_used,
        reason = "serialising a plain data struct with string keys to JSON cannot fail"
    )]
    fn modify(&self, f: impl FnOnce(&mut MemoryFile) -> Result<(String, bool)>) -> Result<String> {
        if !self.enabled {
            return Err(self.disabled_error());
        }
        home::with_lock(&self.path, || {
            let mut doc = self.load_locked()?;
            let (msg, changed) = f(&mut doc)?;
            if changed {
                doc.version = STORE_VERSION;
                doc.project_root = Some(self.root.to_string_lossy().into_owned());
                doc.updated_at = Some(now());
                let mut text =
                    serde_json::to_string_pretty(&doc).expect("memory document serialises");
                text.push('\n');
                remove_orphan_temps(&self.path);
                home::write_atomic_unlocked(&self.path, text.as_bytes())?;
            }
            Ok(msg)
        })
    }

    /// `remember(key, value)`: set, replace, or (empty value) delete one note.
    /// Returns a one-line confirmation with the budget use, e.g. `Saved note "build" (21
    /// bytes); notes now use 140 of 16384 bytes.`
    ///
    /// Errors: [`Error::InvalidArgument`] for an empty key, a key with line breaks or control
    /// characters, or one over [`MAX_KEY_BYTES`]; [`Error::Budget`] when the notes would
    /// exceed `memory.maxBytes` (message gives current bytes, limit and the note's bytes;
    /// nothing changes); [`Error::InvalidArgument`] from [`refuse_secret`] when the key or
    /// the value holds a secret-shaped text (nothing changes); [`Error::Refused`] when memory
    /// is disabled; plus [`Self::load`]'s.
    pub fn remember(&self, args: &RememberArgs) -> Result<String> {
        let key = validate_key(&args.key)?;
        let value = args.value.trim_end().to_string();
        let delete = value.trim().is_empty();
        refuse_secret(&format!("note {}: its key", quoted_key(&key)), &key)?;
        refuse_secret(&format!("note {}: its value", quoted_key(&key)), &value)?;
        let limit = self.max_bytes;
        self.modify(|doc| {
            let current = doc.notes_bytes();
            if delete {
                return Ok(match doc.notes.remove(&key) {
                    Some(_) => (format!("Deleted note \"{key}\"; notes now use {} of {limit} bytes.", doc.notes_bytes()), true),
                    None => (format!("No note \"{key}\" to delete; nothing changed."), false),
                });
            }
            let old = doc.notes.get(&key).map_or(0, |v| key.len() + v.len());
            let note = key.len() + value.len();
            let after = current - old + note;
            if after > limit {
                return Err(Error::Budget(format!(
                    "note \"{key}\" refused: the notes use {current} bytes of the memory.maxBytes budget of {limit}, and this note is {note} bytes \
                     (key + value){}, which would make {after}. Nothing was changed. Shorten the note, delete notes that are no longer needed \
                     (remember with an empty value), or ask the user to raise memory.maxBytes.",
                    if old > 0 { format!(", replacing {old} bytes") } else { String::new() }
                )));
            }
            let verb = if old > 0 { "Replaced" } else { "Saved" };
            let unchanged = doc.notes.get(&key).is_some_and(|v| *v == value);
            doc.notes.insert(key.clone(), value);
            Ok((format!("{verb} note \"{key}\" ({note} bytes); notes now use {after} of {limit} bytes."), !unchanged))
        })
    }

    /// `update_plan(explanation?, plan)`: replace the saved plan; an empty list
    /// clears it. Returns e.g. `Plan saved: 4 steps (1 completed, 1 in progress, 2 pending).`
    ///
    /// Errors: [`Error::InvalidArgument`] from [`Plan::validate`]; [`Error::Budget`] when
    /// the plan alone (explanation + steps) exceeds `memory.maxBytes`;
    /// [`Error::InvalidArgument`] from [`refuse_secret`] when the explanation or a step
    /// holds a secret-shaped text (nothing changes); [`Error::Refused`] when memory is
    /// disabled.
    pub fn update_plan(&self, args: &UpdatePlanArgs) -> Result<String> {
        Plan::validate(&args.plan)?;
        if let Some(e) = &args.explanation {
            refuse_secret("plan: its explanation", e)?;
        }
        for (i, item) in args.plan.iter().enumerate() {
            refuse_secret(&format!("plan: step {}", i + 1), &item.step)?;
        }
        let steps: Vec<PlanItem> = args
            .plan
            .iter()
            .map(|p| PlanItem {
                step: p.step.trim().to_string(),
                status: p.status,
            })
            .collect();
        let explanation = args
            .explanation
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from);
        let plan = Plan {
            explanation,
            steps,
            updated_at: now(),
        };
        let limit = self.max_bytes;
        if plan.bytes() > limit {
            return Err(Error::Budget(format!(
                "plan refused: it is {} bytes and the memory.maxBytes budget is {limit}; shorten the steps and keep details in notes",
                plan.bytes()
            )));
        }
        self.modify(|doc| {
            if plan.steps.is_empty() {
                let had = doc.plan.take().is_some();
                return Ok((
                    if had {
                        "Plan cleared."
                    } else {
                        "No plan saved; nothing to clear."
                    }
                    .to_string(),
                    had,
                ));
            }
            let (c, i, p) = plan.counts();
            let msg = format!(
                "Plan saved: {} steps ({c} completed, {i} in progress, {p} pending).",
                plan.steps.len()
            );
            doc.plan = Some(plan);
            Ok((msg, true))
        })
    }

    /// `recall()`: the notes and plan as markdown, exactly the `## Saved state` section
    /// of the instructions ([`Self::saved_state_markdown`]), so a client that ignores
    /// instructions loses nothing.
    pub fn recall(&self) -> Result<String> {
        self.saved_state_markdown()
    }

    /// The `## Saved state` section: heading, plan checklist, notes (sorted by key, each
    /// `` - `key`: value `` with continuation lines indented two spaces), budget use.
    /// With memory disabled, a section saying so. Errors: [`Self::load`]'s.
    pub fn saved_state_markdown(&self) -> Result<String> {
        if !self.enabled {
            return Ok("## Saved state\n\nTask memory is disabled (memory.enabled = false): notes and plans are not kept between conversations.\n".into());
        }
        Ok(render_saved_state(&self.load()?, self.max_bytes))
    }

    /// As [`Self::saved_state_markdown`] but never fails: a read error becomes a line in the
    /// section, so instructions can always be built.
    pub fn saved_state_or_error(&self) -> String {
        self.saved_state_markdown().unwrap_or_else(|e| {
            format!("## Saved state\n\nThe saved state could not be read: {e}\n")
        })
    }
}

/// Delete temp files (`.tmp-*`, as made by [`home::write_atomic_unlocked`]) beside `path`.
/// Called while holding `path`'s lock: only lock holders create them, so any present now was
/// left by a writer killed between creating it and the rename. Failures are ignored.
fn remove_orphan_temps(path: &Path) {
    let Some(dir) = path.parent() else { return };
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        if e.file_name().to_string_lossy().starts_with(".tmp-")
            && e.file_type().is_ok_and(|t| t.is_file())
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// `"key"` for a message, unless the key itself is secret-shaped (then `with that key`
/// stands in, so a refusal never repeats a secret).
fn quoted_key(key: &str) -> String {
    if codex_free_redact::find_secret(key).is_some() {
        "with that key".into()
    } else {
        format!("\"{key}\"")
    }
}

/// Refuse `text` when it holds a secret-shaped value: task memory is stored in clear in the
/// state home and served into every new session's instructions (and, for Codex, its
/// `AGENTS.md`), so a credential must never enter it. `what` names the field in the message
/// (`note "deploy": its value`, `plan: step 2`).
///
/// Errors: [`Error::InvalidArgument`] naming the field, the line and column, and the rule
/// that matched ([`codex_free_redact::Finding`]), never the secret itself, and saying how
/// to retry (describe where the secret lives instead of its value).
pub fn refuse_secret(what: &str, text: &str) -> Result<()> {
    let Some(f) = codex_free_redact::find_secret(text) else {
        return Ok(());
    };
    Err(Error::InvalidArgument(format!(
        "{what} holds what looks like a secret ({}) at line {}, column {}; refused, nothing was changed. \
         Task memory is stored in clear and shown to every new session, so credentials are never saved in it. \
         Retry without the value: name where it lives instead (an environment variable, the key store, a file path), \
         or write a placeholder such as $TOKEN or <token>.",
        f.rule, f.line, f.column
    )))
}

/// Render a document as the `## Saved state` section. Every text in it passes
/// [`codex_free_redact::redact`]: a note saved before secrets were refused, or written into
/// the file by hand, is served redacted (the file itself is left as it is).
pub fn render_saved_state(doc: &MemoryFile, max_bytes: usize) -> String {
    codex_free_redact::redact_string(render_saved_state_raw(doc, max_bytes))
}

fn render_saved_state_raw(doc: &MemoryFile, max_bytes: usize) -> String {
    let mut out = String::from("## Saved state\n\n");
    if doc.plan.is_none() && doc.notes.is_empty() {
        out.push_str("Nothing saved for this project yet. Use `update_plan` for the plan and `remember` for facts worth keeping.\n");
        return out;
    }
    if let Some(plan) = &doc.plan {
        out.push_str(&format!("### Plan (updated {})\n\n", plan.updated_at));
        out.push_str(&plan.render());
        out.push('\n');
    } else {
        out.push_str("### Plan\n\nNo plan saved.\n\n");
    }
    let n = doc.notes.len();
    out.push_str(&format!(
        "### Notes ({n} note{}, {} of {max_bytes} bytes)\n\n",
        if n == 1 { "" } else { "s" },
        doc.notes_bytes()
    ));
    if n == 0 {
        out.push_str("No notes saved.\n");
    }
    for (k, value) in &doc.notes {
        let tick = if k.contains('`') { "``" } else { "`" };
        let sp = if k.contains('`') { " " } else { "" };
        let mut lines = value.lines();
        let first = lines.next().unwrap_or("");
        out.push_str(&format!("- {tick}{sp}{k}{sp}{tick}: {first}\n"));
        for l in lines {
            if l.is_empty() {
                out.push('\n');
            } else {
                out.push_str(&format!("  {l}\n"));
            }
        }
    }
    out
}

fn validate_key(key: &str) -> Result<String> {
    let k = key.trim();
    if k.is_empty() {
        return Err(Error::InvalidArgument(
            "key is empty; name the note, e.g. \"build-command\"".into(),
        ));
    }
    if k.chars().any(char::is_control) {
        return Err(Error::InvalidArgument(
            "key contains a line break or control character; use one line".into(),
        ));
    }
    if k.len() > MAX_KEY_BYTES {
        return Err(Error::InvalidArgument(format!(
            "key is {} bytes (at most {MAX_KEY_BYTES}); use a short name and put the detail in value",
            k.len()
        )));
    }
    Ok(k.to_string())
}

enum ReadError {
    Corrupt(String),
    Newer(u64),
    Io(std::io::Error),
}

impl ReadError {
    fn into_error(self, path: &Path) -> Error {
        match self {
            ReadError::Corrupt(why) => Error::Corrupt {
                message: why,
                backup: path.to_path_buf(),
            },
            ReadError::Newer(v) => Error::Refused(format!(
                "{} has schema version {v}, newer than this build understands ({STORE_VERSION}); it was left untouched; update codex-free",
                path.display()
            )),
            ReadError::Io(e) => Error::io(format!("reading {}", path.display()), e),
        }
    }
}

fn read_doc(path: &Path) -> Result<MemoryFile, ReadError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(MemoryFile::default()),
        Err(e)
            if e.kind() == std::io::ErrorKind::InvalidData
                || e.kind() == std::io::ErrorKind::IsADirectory =>
        {
            return Err(ReadError::Corrupt(e.to_string()));
        }
        Err(e) => return Err(ReadError::Io(e)),
    };
    // Fast path: one typed parse (the file can hold thousands of notes under a raised budget).
    if let Ok(doc) = serde_json::from_slice::<MemoryFile>(&bytes) {
        return if doc.version > STORE_VERSION {
            Err(ReadError::Newer(u64::from(doc.version)))
        } else {
            Ok(doc)
        };
    }
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| ReadError::Corrupt(format!("not JSON: {e}")))?;
    let version = value.get("version").and_then(serde_json::Value::as_u64);
    match version {
        Some(v) if v > u64::from(STORE_VERSION) => return Err(ReadError::Newer(v)),
        Some(_) => {}
        None => return Err(ReadError::Corrupt("no \"version\" field".into())),
    }
    serde_json::from_value(value).map_err(|e| ReadError::Corrupt(format!("unexpected shape: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::StepStatus;

    struct Env {
        home: tempfile::TempDir,
        project: tempfile::TempDir,
    }

    fn env() -> Env {
        Env {
            home: tempfile::tempdir().unwrap(),
            project: tempfile::tempdir().unwrap(),
        }
    }

    fn mem(e: &Env, cfg: &MemoryConfig) -> TaskMemory {
        TaskMemory::open(e.home.path(), cfg, e.project.path(), false).unwrap()
    }

    fn rem(m: &TaskMemory, k: &str, v: &str) -> Result<String> {
        m.remember(&RememberArgs {
            key: k.into(),
            value: v.into(),
        })
    }

    #[test]
    fn replace_and_delete() {
        let e = env();
        let m = mem(&e, &MemoryConfig::default());
        assert!(
            rem(&m, "build", "cargo build")
                .unwrap()
                .starts_with("Saved note \"build\"")
        );
        assert!(
            rem(&m, "build", "cargo test")
                .unwrap()
                .starts_with("Replaced note \"build\"")
        );
        let doc = m.load().unwrap();
        assert_eq!(doc.notes.len(), 1);
        assert_eq!(doc.notes["build"], "cargo test");
        assert!(rem(&m, "build", "  ").unwrap().starts_with("Deleted note"));
        assert!(m.load().unwrap().notes.is_empty());
        assert!(rem(&m, "build", "").unwrap().starts_with("No note"));
    }

    #[test]
    fn path_is_under_projects_slug_and_symlink_shares() {
        let e = env();
        let m = mem(&e, &MemoryConfig::default());
        let canon = std::fs::canonicalize(e.project.path()).unwrap();
        assert_eq!(
            m.path(),
            e.home
                .path()
                .join("projects")
                .join(home::project_slug(&canon))
                .join("memory.json")
        );
        let link_dir = tempfile::tempdir().unwrap();
        let link = link_dir.path().join("alias");
        std::os::unix::fs::symlink(e.project.path(), &link).unwrap();
        let m2 = TaskMemory::open(e.home.path(), &MemoryConfig::default(), &link, false).unwrap();
        assert_eq!(m.path(), m2.path());
        let other = tempfile::tempdir().unwrap();
        let m3 =
            TaskMemory::open(e.home.path(), &MemoryConfig::default(), other.path(), false).unwrap();
        assert_ne!(m.path(), m3.path());
    }

    #[test]
    fn budget_refusal_keeps_old_notes() {
        let e = env();
        let cfg = MemoryConfig {
            max_bytes: 300,
            ..Default::default()
        };
        let m = mem(&e, &cfg);
        rem(&m, "a", &"x".repeat(200)).unwrap();
        let before = std::fs::read(m.path()).unwrap();
        let err = rem(&m, "b", &"y".repeat(150)).unwrap_err();
        assert_eq!(err.code(), "budget_exceeded");
        let msg = err.to_string();
        assert!(
            msg.contains("201 bytes") && msg.contains("300") && msg.contains("151 bytes"),
            "{msg}"
        );
        assert_eq!(std::fs::read(m.path()).unwrap(), before, "file untouched");
        // Replacing within budget works: the old value's bytes are freed.
        rem(&m, "a", &"z".repeat(290)).unwrap();
    }

    #[test]
    fn disabled_writes_nothing() {
        let e = env();
        let cfg = MemoryConfig {
            enabled: false,
            ..Default::default()
        };
        let m = mem(&e, &cfg);
        assert_eq!(rem(&m, "k", "v").unwrap_err().code(), "refused");
        assert!(
            m.update_plan(&UpdatePlanArgs {
                explanation: None,
                plan: vec![]
            })
            .is_err()
        );
        assert!(m.recall().unwrap().contains("disabled"));
        assert_eq!(std::fs::read_dir(e.home.path()).unwrap().count(), 0);
    }

    #[test]
    fn corrupt_file_is_moved_aside_not_overwritten() {
        let e = env();
        let m = mem(&e, &MemoryConfig::default());
        std::fs::create_dir_all(m.path().parent().unwrap()).unwrap();
        std::fs::write(m.path(), b"{\"version\":1,\"notes\":{\"a\":").unwrap();
        let err = m.recall().unwrap_err();
        assert_eq!(err.code(), "corrupt_state");
        let Error::Corrupt { backup, .. } = &err else {
            panic!()
        };
        assert_eq!(
            std::fs::read(backup).unwrap(),
            b"{\"version\":1,\"notes\":{\"a\":"
        );
        assert!(!m.path().exists());
        rem(&m, "k", "v").unwrap();
        assert_eq!(m.load().unwrap().notes.len(), 1);
    }

    #[test]
    fn corrupt_file_on_write_is_moved_aside_and_write_refused() {
        let e = env();
        let m = mem(&e, &MemoryConfig::default());
        std::fs::create_dir_all(m.path().parent().unwrap()).unwrap();
        std::fs::write(m.path(), b"garbage").unwrap();
        assert_eq!(rem(&m, "k", "v").unwrap_err().code(), "corrupt_state");
        assert!(
            !m.path().exists(),
            "the refused write did not create a fresh file over the evidence"
        );
    }

    #[test]
    fn newer_version_is_left_alone() {
        let e = env();
        let m = mem(&e, &MemoryConfig::default());
        std::fs::create_dir_all(m.path().parent().unwrap()).unwrap();
        std::fs::write(m.path(), br#"{"version":9,"whatever":true}"#).unwrap();
        assert_eq!(rem(&m, "k", "v").unwrap_err().code(), "refused");
        assert_eq!(
            std::fs::read(m.path()).unwrap(),
            br#"{"version":9,"whatever":true}"#
        );
    }

    #[test]
    fn explicit_dir_single_and_multi() {
        let e = env();
        let base = tempfile::tempdir().unwrap();
        let cfg = MemoryConfig {
            dir: Some(base.path().to_path_buf()),
            ..Default::default()
        };
        let single = TaskMemory::open(e.home.path(), &cfg, e.project.path(), false).unwrap();
        assert_eq!(single.path(), base.path().join("memory.json"));
        let multi = TaskMemory::open(e.home.path(), &cfg, e.project.path(), true).unwrap();
        let canon = std::fs::canonicalize(e.project.path()).unwrap();
        assert_eq!(
            multi.path(),
            base.path()
                .join(home::project_slug(&canon))
                .join("memory.json")
        );
        let inside = MemoryConfig {
            dir: Some(e.project.path().join(".notes")),
            ..Default::default()
        };
        assert_eq!(
            TaskMemory::open(e.home.path(), &inside, e.project.path(), false)
                .unwrap_err()
                .code(),
            "invalid_config"
        );
    }

    #[test]
    fn bad_keys_are_refused() {
        let e = env();
        let m = mem(&e, &MemoryConfig::default());
        assert!(
            rem(&m, " ", "v")
                .unwrap_err()
                .to_string()
                .contains("key is empty")
        );
        assert!(rem(&m, "a\nb", "v").is_err());
        assert!(rem(&m, &"k".repeat(129), "v").is_err());
        assert!(!m.path().exists());
    }

    #[test]
    fn plan_round_trip_and_render() {
        let e = env();
        let m = mem(&e, &MemoryConfig::default());
        let msg = m
            .update_plan(&UpdatePlanArgs {
                explanation: Some("start".into()),
                plan: vec![
                    PlanItem {
                        step: "read code".into(),
                        status: StepStatus::Completed,
                    },
                    PlanItem {
                        step: "write store".into(),
                        status: StepStatus::InProgress,
                    },
                ],
            })
            .unwrap();
        assert_eq!(
            msg,
            "Plan saved: 2 steps (1 completed, 1 in progress, 0 pending)."
        );
        rem(&m, "multi", "line one\nline two").unwrap();
        let text = m.recall().unwrap();
        assert!(
            text.starts_with("## Saved state\n\n### Plan (updated "),
            "{text}"
        );
        assert!(
            text.contains("1. [x] read code\n2. [>] write store (in progress)\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "### Notes (1 note, 22 of 16384 bytes)\n\n- `multi`: line one\n  line two\n"
            ),
            "{text}"
        );
        assert_eq!(
            m.update_plan(&UpdatePlanArgs {
                explanation: None,
                plan: vec![]
            })
            .unwrap(),
            "Plan cleared."
        );
        assert!(m.load().unwrap().plan.is_none());
    }

    #[test]
    fn file_is_versioned_and_names_root() {
        let e = env();
        let m = mem(&e, &MemoryConfig::default());
        rem(&m, "k", "v").unwrap();
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(m.path()).unwrap()).unwrap();
        assert_eq!(v["version"], 1);
        assert_eq!(v["notes"]["k"], "v");
        assert!(v["updatedAt"].is_string());
        assert_eq!(
            v["projectRoot"],
            std::fs::canonicalize(e.project.path())
                .unwrap()
                .to_str()
                .unwrap()
        );
    }
}
