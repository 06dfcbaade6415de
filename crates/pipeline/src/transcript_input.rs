//! Agent transcripts as phase-1 input: the glue between the transcript readers
//! ([`codex_free_transcripts::discover`], [`codex_free_transcripts::sources`], [`codex_free_transcripts::render`], [`codex_free_redact`]) and the
//! seams of [`super::phase1`] ([`RolloutInput`], [`Redactor`]).
//!
//! A scan lists every transcript of the enabled sources and reads each one's metadata
//! (id, cwd, start, sub-agent/ephemeral flags) — re-reading a file only when its size or
//! modification time changed since the previous scan. A thread's `updated_at` is the
//! file's modification time (as the eligibility rules use it), so an appended transcript
//! becomes eligible for a new extraction; its content fingerprint (bytes + SHA-256) goes
//! with it, so a `touch` or a copy with the same content does not. When two files carry
//! one session id, the longer wins (a truncated copy never replaces the full transcript),
//! then the newer.
//!
//! Invariant: transcripts are only read; the text handed to phase 1 comes from
//! [`codex_free_transcripts::render::render`], which redacts it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use super::phase1::{Redactor, RolloutInput};
use codex_free_core::Result;
use codex_free_store::{ThreadRow, ThreadUpsert};
use codex_free_transcripts::discover::{SourceRoots, discover};
use codex_free_transcripts::rollout::Source;
use codex_free_transcripts::sources::{SessionMeta, parse_file, read_meta};

type Cached = (u64, SystemTime, SessionMeta, Option<String>);

/// `<bytes>:<sha256 hex>` of the file at `path`; `None` when it cannot be read (the row
/// then falls back to mtime-only change detection).
fn fingerprint(path: &Path) -> Option<String> {
    use sha2::Digest;
    let mut f = std::fs::File::open(path).ok()?;
    let mut h = sha2::Sha256::new();
    let n = std::io::copy(&mut f, &mut h).ok()?;
    Some(format!("{n}:{}", hex::encode(h.finalize())))
}

/// [`RolloutInput`] over the agents' transcript folders.
#[derive(Debug)]
pub struct TranscriptInput {
    roots: SourceRoots,
    /// path → (size, mtime, metadata, content fingerprint) of the last scan.
    cache: Mutex<HashMap<PathBuf, Cached>>,
}

impl TranscriptInput {
    /// Over `roots`.
    pub fn new(roots: SourceRoots) -> Self {
        Self {
            roots,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The folders from the environment (`CODEX_HOME`, `CLAUDE_CONFIG_DIR`,
    /// `PI_CODING_AGENT_DIR`, and `<state home>/transcripts`).
    pub fn from_env(state_home: &Path) -> Self {
        Self::new(SourceRoots::from_env(state_home))
    }

    /// The roots scanned (the watcher watches the same folders).
    pub fn roots(&self) -> &SourceRoots {
        &self.roots
    }
}

fn unix(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl RolloutInput for TranscriptInput {
    fn scan(&self, sources: &[String]) -> Result<Vec<ThreadUpsert>> {
        let enabled: Vec<Source> = sources.iter().filter_map(|s| s.parse().ok()).collect();
        let found = discover(&self.roots, &enabled);
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        // Best file per session id: the longest, then the newest.
        let mut best: HashMap<String, (u64, SystemTime, usize, ThreadUpsert)> = HashMap::new();
        for (i, c) in found.into_iter().enumerate() {
            let (meta, hash) = match cache.get(&c.path) {
                Some((size, mtime, meta, hash)) if *size == c.size && *mtime == c.mtime => {
                    (meta.clone(), hash.clone())
                }
                _ => match read_meta(&c.path, c.source) {
                    Ok(m) => {
                        let hash = fingerprint(&c.path);
                        cache.insert(c.path.clone(), (c.size, c.mtime, m.clone(), hash.clone()));
                        (m, hash)
                    }
                    Err(e) => {
                        tracing::warn!(path = %c.path.display(), error = %e, "skipping unreadable transcript");
                        continue;
                    }
                },
            };
            let row = ThreadUpsert {
                id: meta.id.clone(),
                source: c.source.as_str().to_string(),
                path: c.path.to_string_lossy().into_owned(),
                cwd: meta.cwd.map(|p| p.to_string_lossy().into_owned()),
                title: None,
                created_at: meta.started_at.map(|t| t.timestamp()),
                updated_at: unix(c.mtime),
                is_subagent: meta.is_subagent,
                is_ephemeral: meta.is_ephemeral,
                content_hash: hash,
            };
            let better = best
                .get(&meta.id)
                .is_none_or(|(size, mtime, _, _)| (c.size, c.mtime) > (*size, *mtime));
            if better {
                best.insert(meta.id, (c.size, c.mtime, i, row));
            }
        }
        // Keep discovery's order (newest first) for the rows chosen.
        let mut rows: Vec<(usize, ThreadUpsert)> =
            best.into_values().map(|(_, _, i, r)| (i, r)).collect();
        rows.sort_by_key(|(i, _)| *i);
        let out: Vec<ThreadUpsert> = rows.into_iter().map(|(_, r)| r).collect();
        Ok(out)
    }

    fn render(
        &self,
        thread: &ThreadRow,
        context_window: Option<u64>,
        tool_result_token_budget: usize,
    ) -> Result<String> {
        Ok(self
            .render_counted(thread, context_window, tool_result_token_budget)?
            .0)
    }

    fn render_counted(
        &self,
        thread: &ThreadRow,
        context_window: Option<u64>,
        tool_result_token_budget: usize,
    ) -> Result<(String, codex_free_redact::Tally)> {
        let source: Source = thread.source.parse()?;
        let rollout = parse_file(Path::new(&thread.path), source)?;
        let window = context_window.map(|w| usize::try_from(w).unwrap_or(usize::MAX));
        let r = codex_free_transcripts::render::render(&rollout, tool_result_token_budget, window);
        Ok((r.text, r.redactions))
    }

    fn items(&self, thread: &ThreadRow) -> Result<Vec<codex_free_transcripts::rollout::Item>> {
        let source: Source = thread.source.parse()?;
        Ok(parse_file(Path::new(&thread.path), source)?.items)
    }
}

/// [`Redactor`] backed by [`codex_free_redact::redact`].
#[derive(Debug, Default, Clone, Copy)]
pub struct SecretRedactor;

impl Redactor for SecretRedactor {
    fn redact(&self, text: &str) -> String {
        codex_free_redact::redact(text).into_owned()
    }
}
