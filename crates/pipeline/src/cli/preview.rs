//! `memories preview`: the requests the next run would send, as text.

use super::ControlEnv;

use crate::phase1::Trigger;
use crate::scheduler::{self};
use codex_free_core::Result;

/// `memories preview`: [`crate::phase1::preview`] rendered as text (a header per request,
/// then its system prompt and message verbatim) or JSON.
#[expect(
    clippy::expect_used,
    reason = "serialising a plain data struct with string keys to JSON cannot fail"
)]
pub(super) async fn preview_command(
    env: &ControlEnv,
    next: usize,
    rollout: Option<&str>,
    json: bool,
) -> Result<String> {
    let cfg = env.config()?;
    let store = env.store()?;
    let ctx = scheduler::phase1_ctx(
        &env.home,
        &cfg,
        &env.scheduler_deps(),
        &store,
        Trigger::Manual,
        env.cancel.clone(),
    )?;
    let preview = crate::phase1::preview(&ctx, next, rollout).await?;
    if json {
        return Ok(serde_json::to_string_pretty(&preview).expect("preview serialises") + "\n");
    }
    let mut out = String::new();
    for x in &preview.excluded {
        out.push_str(&format!(
            "excluded: session {} ({}) in {} matches memories.exclude_paths {:?}; it is never sent\n",
            x.id, x.source, x.cwd, x.pattern
        ));
    }
    let reqs = preview.requests;
    if reqs.is_empty() {
        out.push_str(&format!(
            "nothing would be sent: no session is eligible now (idle < {} h, already extracted, off, excluded, or outside memories.sources)\n",
            cfg.memories.min_rollout_idle_hours
        ));
        return Ok(out);
    }
    let usd = |v: Option<f64>| v.map_or("price unknown".to_string(), |c| format!("${c:.4}"));
    let (mut tokens, mut cost, mut max_cost) = (0usize, Some(0.0), Some(0.0));
    for (i, r) in reqs.iter().enumerate() {
        tokens += r.input_tokens;
        cost = cost.zip(r.input_cost_usd).map(|(a, b)| a + b);
        max_cost = max_cost
            .zip(r.input_cost_usd.zip(r.max_output_cost_usd))
            .map(|(a, (b, c))| a + b + c);
        out.push_str(&format!(
            "=== request {} of {}: session {} ({}) -> {}\n{} bytes, ~{} input tokens, input {} (at most {} with {} output tokens); {} redaction marker(s){}{}{}{}\n",
            i + 1,
            reqs.len(),
            r.thread_id,
            r.source,
            r.model,
            r.bytes,
            r.input_tokens,
            usd(r.input_cost_usd),
            usd(r.input_cost_usd.zip(r.max_output_cost_usd).map(|(a, b)| a + b)),
            r.max_output_tokens.unwrap_or(0),
            r.redaction_markers,
            if r.redactions.is_empty() {
                String::new()
            } else {
                format!(
                    " (removed by rule: {})",
                    r.redactions
                        .iter()
                        .map(|(k, v)| format!("{k} x{v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            r.sent_sha256
                .as_deref()
                .map(|h| format!("\nsealed bytes sha256 {h} (the run's receipt carries it)"))
                .unwrap_or_default(),
            r.refused
                .as_deref()
                .map(|w| format!("\nREFUSED by the gate (logged as failed, not sent): {w}"))
                .unwrap_or_default(),
            r.waits_for_approval
                .as_deref()
                .map(|w| format!(
                    "\nWAITS FOR APPROVAL ({w}, memories.approval): the run queues it on the Outgoing page; nothing leaves until you approve it"
                ))
                .unwrap_or_default()
        ));
        out.push_str("--- system\n");
        out.push_str(&r.system);
        out.push_str("\n--- user\n");
        out.push_str(&r.user);
        out.push_str("\n\n");
    }
    out.push_str(&format!(
        "total: {} request(s), ~{tokens} input tokens, input {} (at most {}); nothing was sent\n",
        reqs.len(),
        usd(cost),
        usd(max_cost)
    ));
    Ok(out)
}
