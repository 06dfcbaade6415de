//! Phase 1: per-rollout extraction (after Codex's memories phase 1).
//!
//! One run: record what discovery sees (`threads`), stop early when the monthly spend cap
//! is reached, claim up to `max_rollouts_per_startup` eligible jobs, and for each (at most
//! [`CONCURRENCY`] at once): render the sanitised rollout within the input cap (70% of the
//! model's context window, [`DEFAULT_INPUT_CAP_TOKENS`] when unknown), send one request
//! asking for `{rollout_summary, rollout_slug, raw_memory}`, validate the answer locally,
//! redact it again, and store it. Every request gets a usage row; the run gets a `runs`
//! row and one `memories.log` line.
//!
//! Inputs come through two seams so the engine is testable on its own:
//! [`RolloutInput`] (discovery + rendering, implemented over `pipeline::rollout` /
//! `pipeline::render`) and [`Redactor`] (the secret redactor of `pipeline::redact`).
//!
//! Invariant: a claim always ends in exactly one of done-with-output, done-no-output,
//! failed (retry later) or released (unchanged, claimable again); nothing is stored from
//! an answer that failed validation; no model call is made once the cap is reached or
//! after a run-fatal error (unknown model, rejected key).

mod answer;
pub mod approval;
mod job;
mod preview;
mod prompt;
mod request;
mod runner;
mod textdir;

pub use crate::spend::{CapState, cap_state, cap_state_of};
pub use answer::{Extraction, parse_extraction};
pub use preview::{Preview, PreviewRequest, preview};
pub use prompt::{SYSTEM_PROMPT, SYSTEM_PROMPT_V2, output_schema};
pub use runner::{exclude_paths, run};
use std::path::PathBuf;
use std::sync::Arc;
pub use textdir::{NoRedaction, TextDirInput};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::config::{MemoriesConfig, MemoryVersion};
use codex_free_models::{ResolvedModel, TokenUsage};
use codex_free_store::{RunSummary, Store, ThreadRow, ThreadUpsert};
use codex_free_transcripts::rollout::Item;

/// Extractions in flight at once within one process.
pub const CONCURRENCY: usize = 4;
/// Input cap when the model's context window is unknown, tokens (Codex's default).
pub const DEFAULT_INPUT_CAP_TOKENS: usize = 150_000;
/// Share of the context window the input may use, percent (Codex: 70).
pub const CONTEXT_WINDOW_PERCENT: u64 = 70;
/// Tokens reserved inside the cap for the instructions and the header.
pub const PROMPT_OVERHEAD_TOKENS: usize = 2_000;
/// Output cap asked for when the model's own limit is larger or unknown, tokens.
pub const MAX_OUTPUT_TOKENS: u64 = 16_384;

/// Discovery and rendering of rollouts (implemented over pipe-a's `rollout`/`render`).
pub trait RolloutInput: Send + Sync {
    /// Every rollout of the given sources, metadata only (no content read beyond what
    /// the id/timestamps need). Sub-agent and ephemeral sessions are returned flagged.
    fn scan(&self, sources: &[String]) -> Result<Vec<ThreadUpsert>>;
    /// The rollout's conversation as sent to the model: injected context filtered, each
    /// tool result compacted to `tool_result_token_budget` tokens
    /// (`memories.tool_result_token_budget`, 0 = off), secrets redacted, and the
    /// whole capped at 70% of `context_window` tokens (150,000 when unknown; see
    /// [`input_budget`]) keeping head and tail.
    ///
    /// Errors: the file vanished or cannot be read at all (the job fails and retries).
    fn render(
        &self,
        thread: &ThreadRow,
        context_window: Option<u64>,
        tool_result_token_budget: usize,
    ) -> Result<String>;

    /// [`RolloutInput::render`] and the redactions it made by rule (for the request's
    /// receipt and the preview). The default reports none: the gate's own redaction of a
    /// text rendered without it is still counted there.
    ///
    /// Errors: as [`RolloutInput::render`].
    fn render_counted(
        &self,
        thread: &ThreadRow,
        context_window: Option<u64>,
        tool_result_token_budget: usize,
    ) -> Result<(String, codex_free_redact::Tally)> {
        Ok((
            self.render(thread, context_window, tool_result_token_budget)?,
            codex_free_redact::Tally::new(),
        ))
    }

    /// The rollout's conversation items, unredacted and uncut, in order (what the V2
    /// pipeline chooses its evidence from, [`crate::v2::evidence`]).
    ///
    /// Errors: as [`RolloutInput::render`].
    fn items(&self, thread: &ThreadRow) -> Result<Vec<Item>>;
}

/// Secret redaction applied to the model's answer before it is stored.
pub trait Redactor: Send + Sync {
    /// `text` with every secret replaced by the redaction marker.
    fn redact(&self, text: &str) -> String;
}

/// What started a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Trigger {
    /// Process start.
    Startup,
    /// A watched transcript changed.
    Watch,
    /// The periodic rescan.
    Periodic,
    /// `memories run`.
    Manual,
    /// `memories force`: ignores idle time, backoff and exhausted retries.
    Force,
}

impl Trigger {
    /// Lowercase name stored in `runs.trigger`.
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Startup => "startup",
            Trigger::Watch => "watch",
            Trigger::Periodic => "periodic",
            Trigger::Manual => "manual",
            Trigger::Force => "force",
        }
    }
}

/// Everything one run needs.
#[derive(Clone)]
pub struct Phase1Ctx {
    /// State home (for `memories.log`).
    pub home: PathBuf,
    /// The database.
    pub store: Store,
    /// `memories` config block.
    pub config: MemoriesConfig,
    /// The extraction model.
    pub model: ResolvedModel,
    /// Rollout discovery + rendering.
    pub input: Arc<dyn RolloutInput>,
    /// Output redaction.
    pub redactor: Arc<dyn Redactor>,
    /// Stops the run: in-flight requests are abandoned and their jobs released.
    pub cancel: CancellationToken,
    /// What started it.
    pub trigger: Trigger,
    /// Worker id stored on claims (e.g. `pid@host`).
    pub worker_id: String,
    /// Which pipeline this run is: V1 (raw memory + summary from the rendered rollout) or
    /// V2 (summary only, from tiered evidence). `store` and `home`'s folder are that
    /// version's.
    pub version: MemoryVersion,
}

/// Result of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunReport {
    /// `runs.id`; `None` when nothing was claimed (no run recorded).
    pub run_id: Option<String>,
    /// Counts and outcome (`ok`, `failed`, `cancelled`, `spend_cap`, `disabled`, `idle`,
    /// `waiting`: every claim waits for approval).
    pub summary: RunSummary,
    /// Token totals.
    pub usage: TokenUsage,
    /// Cost of priced requests, USD.
    pub cost_usd: Option<f64>,
    /// Requests without a price.
    pub unpriced: i64,
    /// Threads recorded by the scan.
    pub scanned: usize,
    /// The `memories.log` line written, if any.
    pub log_line: Option<String>,
    /// The provider rejected the key (HTTP 401/403): the run stopped, and the user must
    /// replace the key before any later run can succeed.
    pub key_rejected: bool,
    /// Claims released unsent because their request waits in the approval queue
    /// (`memories.approval`; counted in `summary.released` too).
    pub waiting: usize,
}

/// Input budget for the rendered rollout: 70% of the context window (or
/// [`DEFAULT_INPUT_CAP_TOKENS`]) minus [`PROMPT_OVERHEAD_TOKENS`].
pub fn input_budget(context_window: Option<u64>) -> usize {
    let cap = context_window
        .map(|w| (w.saturating_mul(CONTEXT_WINDOW_PERCENT) / 100) as usize)
        .unwrap_or(DEFAULT_INPUT_CAP_TOKENS);
    cap.saturating_sub(PROMPT_OVERHEAD_TOKENS).max(1_000)
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Store(format!("worker thread failed: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_is_70_percent_of_window_or_default() {
        assert_eq!(
            input_budget(Some(400_000)),
            280_000 - PROMPT_OVERHEAD_TOKENS
        );
        assert_eq!(
            input_budget(None),
            DEFAULT_INPUT_CAP_TOKENS - PROMPT_OVERHEAD_TOKENS
        );
        assert_eq!(input_budget(Some(100)), 1_000);
    }
}
