//! `memories preview`: the requests the next run would send, sealed but not sent.

use super::{Phase1Ctx, blocking};
use serde::Serialize;

use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_models::{Message, TokenUsage, outgoing};
use codex_free_store::ThreadRow;

use super::request::{build_request, prepare_input};
use super::runner::{claim_params, discover};

/// One request the next phase-1 run would send, exactly as the outgoing gate seals it
/// ([`outgoing::Outgoing::seal`], the gate every sent request passes): nothing is sent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PreviewRequest {
    /// The session (rollout) id.
    pub thread_id: String,
    /// Its source (`codex`, `claude`, `pi`, `mcp`).
    pub source: String,
    /// The model it would go to (`provider/model`).
    pub model: String,
    /// The sealed system prompt, byte for byte.
    pub system: String,
    /// The sealed user message (the rendered, compacted and redacted session), byte for
    /// byte: what the provider receives as the message text.
    pub user: String,
    /// Bytes of `system` + `user`.
    pub bytes: usize,
    /// Input tokens (o200k_base estimate; the provider's own count differs by a few %).
    pub input_tokens: usize,
    /// Output tokens asked for at most.
    pub max_output_tokens: Option<u32>,
    /// Cost of the input at the model's price, USD; `None` when the price is unknown.
    pub input_cost_usd: Option<f64>,
    /// Cost if the answer used every output token allowed, USD (the ceiling of the total
    /// is `input_cost_usd` + this); `None` when the price is unknown.
    pub max_output_cost_usd: Option<f64>,
    /// Redaction markers in the sealed text (secrets replaced upstream or by the gate).
    pub redaction_markers: usize,
    /// Secrets redacted and private spans removed, by rule (`github_token`,
    /// `private_span` …): the renderer's and the gate's. Never the text removed.
    pub redactions: std::collections::BTreeMap<String, u64>,
    /// SHA-256 of the sealed request bytes: the hash the run's receipt will carry when it
    /// sends this request unchanged. `None` when the gate would refuse it.
    pub sent_sha256: Option<String>,
    /// Size of the sealed request bytes (the receipt's size; 0 when refused).
    pub sent_bytes: u64,
    /// Texts the gate itself had to redact or strip of private spans (0 when the renderer
    /// did its part).
    pub redacted_by_gate: usize,
    /// Why the gate would refuse it (over the context window): it would be logged as
    /// failed, not sent. `None` when it would be sent.
    pub refused: Option<String>,
    /// Why the run would hold it in the approval queue instead of sending it
    /// (`memories.approval`: `new_source` = the first request from this source and project,
    /// `every_request`); `None` when it would go out (approval off, the project always
    /// allowed, the source known, or the request already approved).
    pub waits_for_approval: Option<String>,
}

/// What [`preview()`] finds: the requests, and the sessions left out by
/// `memories.exclude_paths` (never sent, whatever the run).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Preview {
    /// The requests the next run would send, newest session first.
    pub requests: Vec<PreviewRequest>,
    /// Sessions otherwise eligible whose project matches `memories.exclude_paths`.
    pub excluded: Vec<codex_free_store::ExcludedThread>,
}

/// The requests the next phase-1 run would send, at most `next`, newest session first, or
/// only session `rollout`: discovery runs as in a run (the session list in the database is
/// refreshed), then each eligible session is rendered and sealed by the same code a run
/// uses. No model is called, nothing is claimed, no job state, citation or usage row
/// changes. A session in retry backoff is shown although the run would skip it until the
/// backoff ends.
///
/// Errors: discovery or database errors; [`Error::InvalidArgument`] when `rollout` is
/// given and is not an eligible session; a session that cannot be rendered is an error
/// naming it.
pub async fn preview(ctx: &Phase1Ctx, next: usize, rollout: Option<&str>) -> Result<Preview> {
    let cfg = ctx.config.clone();
    discover(ctx).await?;
    let params = claim_params(ctx)?;
    let excluded = {
        let (store, params) = (ctx.store.clone(), params.clone());
        blocking(move || store.excluded_threads(&params)).await?
    };
    if let Some(x) = rollout.and_then(|id| excluded.iter().find(|x| x.id == id)) {
        return Err(Error::InvalidArgument(format!(
            "session {} is never sent: its project {} matches memories.exclude_paths pattern {:?}",
            x.id, x.cwd, x.pattern
        )));
    }
    let limit = if rollout.is_some() {
        codex_free_store::stage1::SCAN_LIMIT
    } else {
        next.min(cfg.max_rollouts_per_startup)
    };
    let threads = {
        let store = ctx.store.clone();
        blocking(move || store.eligible_threads(&params, limit)).await?
    };
    let threads: Vec<ThreadRow> = match rollout {
        Some(id) => {
            let t: Vec<ThreadRow> = threads.into_iter().filter(|t| t.id == id).collect();
            if t.is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "session {id} is not eligible for phase 1 now (unknown, too recent, already extracted, memory off for it, or its source is not in memories.sources)"
                )));
            }
            t
        }
        None => threads,
    };
    let (window, tool_budget) = (ctx.model.context_window, cfg.tool_result_token_budget);
    let mode = cfg.approval_mode();
    let mut out = Vec::new();
    for t in threads {
        let waits_for_approval = {
            let (store, t) = (ctx.store.clone(), t.clone());
            blocking(move || super::approval::would_wait(&store, mode, &t))
                .await?
                .map(str::to_string)
        };
        let (rendered, upstream) = prepare_input(ctx, &t, window, tool_budget)
            .await
            .map_err(|e| Error::InvalidArgument(format!("rendering session {}: {e}", t.id)))?;
        let req = build_request(ctx, &t, &rendered);
        let max_output_tokens = req.max_output_tokens;
        let (sealed, refused, by_gate, tokens, receipt) =
            match outgoing::Outgoing::seal(req.clone(), window) {
                Ok(o) => {
                    let tokens = o.input_tokens();
                    let receipt = o.receipt(&upstream);
                    (o.request().clone(), None, o.redacted(), tokens, receipt)
                }
                Err(e) => {
                    let tokens = codex_free_core::tokens::estimate(&req.system)
                        + req
                            .messages
                            .iter()
                            .map(|m| match m {
                                Message::User(t) => codex_free_core::tokens::estimate(t),
                                _ => 0,
                            })
                            .sum::<usize>();
                    let mut receipt = outgoing::Receipt::default();
                    for (k, v) in &upstream {
                        receipt.redactions.insert((*k).to_string(), *v as u64);
                    }
                    (req, Some(e.message), 0, tokens, receipt)
                }
            };
        let user = sealed
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::User(t) => Some(t.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let price = ctx.model.price;
        let cost = |u: TokenUsage| price.map(|p| p.cost(&u));
        let markers = codex_free_redact::count_markers(&sealed.system)
            + codex_free_redact::count_markers(&user);
        out.push(PreviewRequest {
            thread_id: t.id.clone(),
            source: t.source.clone(),
            model: ctx.model.model.to_string(),
            bytes: sealed.system.len() + user.len(),
            system: sealed.system,
            user,
            input_tokens: tokens,
            max_output_tokens,
            input_cost_usd: cost(TokenUsage {
                input: tokens as u64,
                ..Default::default()
            }),
            max_output_cost_usd: cost(TokenUsage {
                output: u64::from(max_output_tokens.unwrap_or(0)),
                ..Default::default()
            }),
            redaction_markers: markers,
            redactions: receipt.redactions,
            sent_sha256: refused.is_none().then_some(receipt.sha256),
            sent_bytes: receipt.bytes,
            redacted_by_gate: by_gate,
            refused,
            waits_for_approval,
        });
    }
    Ok(Preview {
        requests: out,
        excluded,
    })
}
