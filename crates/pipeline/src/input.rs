//! Agent transcripts as phase-1 input: the glue between the transcript readers
//! ([`super::discover`], [`super::sources`], [`super::render`], [`super::redact`]) and the
//! seams of [`super::phase1`] ([`RolloutInput`], [`Redactor`]).
//!
//! A scan lists every transcript of the enabled sources and reads each one's metadata
//! (id, cwd, start, sub-agent/ephemeral flags) — re-reading a file only when its size or
//! modification time changed since the previous scan. A thread's `updated_at` is the
//! file's modification time (as the eligibility rules use it), so an appended transcript
//! becomes eligible for a new extraction.
//!
//! Invariant: transcripts are only read; the text handed to phase 1 comes from
//! [`super::render::render`], which redacts it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use super::discover::{SourceRoots, discover};
use super::phase1::{Redactor, RolloutInput};
use super::rollout::Source;
use super::sources::{SessionMeta, parse_file, read_meta};
use codex_free_core::Result;
use codex_free_store::{ThreadRow, ThreadUpsert};

/// [`RolloutInput`] over the agents' transcript folders.
#[derive(Debug)]
pub struct TranscriptInput {
    roots: SourceRoots,
    /// path → (size, mtime, metadata) of the last scan.
    cache: Mutex<HashMap<PathBuf, (u64, SystemTime, SessionMeta)>>,
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
        let mut seen_ids = std::collections::HashSet::new();
        let mut out = Vec::with_capacity(found.len());
        // `discover` returns newest first: when two files carry one session id, the newest wins.
        for c in found {
            let meta = match cache.get(&c.path) {
                Some((size, mtime, meta)) if *size == c.size && *mtime == c.mtime => meta.clone(),
                _ => match read_meta(&c.path, c.source) {
                    Ok(m) => {
                        cache.insert(c.path.clone(), (c.size, c.mtime, m.clone()));
                        m
                    }
                    Err(e) => {
                        tracing::warn!(path = %c.path.display(), error = %e, "skipping unreadable transcript");
                        continue;
                    }
                },
            };
            if !seen_ids.insert(meta.id.clone()) {
                continue;
            }
            out.push(ThreadUpsert {
                id: meta.id,
                source: c.source.as_str().to_string(),
                path: c.path.to_string_lossy().into_owned(),
                cwd: meta.cwd.map(|p| p.to_string_lossy().into_owned()),
                title: None,
                created_at: meta.started_at.map(|t| t.timestamp()),
                updated_at: unix(c.mtime),
                is_subagent: meta.is_subagent,
                is_ephemeral: meta.is_ephemeral,
            });
        }
        Ok(out)
    }

    fn render(
        &self,
        thread: &ThreadRow,
        context_window: Option<u64>,
        tool_result_token_budget: usize,
    ) -> Result<String> {
        let source: Source = thread.source.parse()?;
        let rollout = parse_file(Path::new(&thread.path), source)?;
        let window = context_window.map(|w| usize::try_from(w).unwrap_or(usize::MAX));
        Ok(super::render::render(&rollout, tool_result_token_budget, window).text)
    }
}

/// [`Redactor`] backed by [`super::redact::redact`].
#[derive(Debug, Default, Clone, Copy)]
pub struct SecretRedactor;

impl Redactor for SecretRedactor {
    fn redact(&self, text: &str) -> String {
        super::redact::redact(text).into_owned()
    }
}
