//! One claimed job: the spend reservation, the request, and ending the claim as stored,
//! failed or released.

use super::{Extraction, MAX_OUTPUT_TOKENS, blocking, cap_state, parse_extraction};
use codex_free_memory::select::normalise_slug;
use std::sync::atomic::Ordering;
use std::time::Instant;

use codex_free_core::Result;
use codex_free_core::config::MemoryVersion;
use codex_free_models::{CompletionRequest, FailureKind, Message, TokenUsage, outgoing};
use codex_free_store::stage1::RETRY_DELAY_SECONDS;
use codex_free_store::{Stage1Claim, Stage1OutputInput, UsageRow};

use super::approval::Gate;
use super::request::{build_request, prepare_input};
use super::runner::{JobEnd, Shared};

/// Hold the worst-case cost of `req` (every input token uncached, the full output cap)
/// against the monthly cap, beside what is spent and what other requests in flight hold.
/// `Ok(Err(why))` when it would not fit; `Ok(Ok(usd))` = the amount reserved (0 without a
/// cap or a price).
async fn reserve(sh: &Shared, req: &CompletionRequest) -> Result<std::result::Result<f64, String>> {
    let ctx = &sh.ctx;
    let (Some(cap), Some(price)) = (ctx.config.monthly_spend_cap_usd, ctx.model.price) else {
        return Ok(Ok(0.0));
    };
    let text: String = std::iter::once(req.system.as_str())
        .chain(req.messages.iter().map(|m| match m {
            Message::User(t) => t.as_str(),
            _ => "",
        }))
        .collect();
    let input = codex_free_core::tokens::count(&text) as u64;
    let worst = price.cost(&TokenUsage {
        input,
        output: u64::from(req.max_output_tokens.unwrap_or(MAX_OUTPUT_TOKENS as u32)),
        ..Default::default()
    });
    let store = ctx.store.clone();
    let spent = blocking(move || crate::spend::month_spend_usd(&store)).await?;
    let mut held = sh.reserved_usd.lock().unwrap_or_else(|p| p.into_inner());
    if spent + *held + worst > cap {
        return Ok(Err(format!(
            "monthly spend cap reached: ${spent:.4} spent and ${:.4} held by requests in flight, and this request may cost up to ${worst:.4}, over the cap of ${cap:.4}",
            *held
        )));
    }
    *held += worst;
    Ok(Ok(worst))
}

/// Gives a reservation back when the request's real usage has been recorded (or it failed).
struct Unreserve<'a>(&'a Shared, f64);

impl Drop for Unreserve<'_> {
    fn drop(&mut self) {
        let mut held = self
            .0
            .reserved_usd
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        *held = (*held - self.1).max(0.0);
    }
}

async fn release(sh: &Shared, claim: Stage1Claim, why: String) -> Result<JobEnd> {
    let store = sh.ctx.store.clone();
    blocking(move || store.release_stage1(&claim, &why)).await?;
    Ok(JobEnd::Released)
}

async fn fail(sh: &Shared, claim: Stage1Claim, why: String) -> Result<JobEnd> {
    tracing::warn!(thread = %claim.thread.id, reason = %why, "phase 1 job failed");
    sh.first_failure
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_or_insert_with(|| why.clone());
    let store = sh.ctx.store.clone();
    blocking(move || store.mark_stage1_failed(&claim, &why, RETRY_DELAY_SECONDS)).await?;
    Ok(JobEnd::Failed)
}

/// Long on purpose: one job from cap re-check to stored result, where each early exit must release
/// or fail the claim the same way.
#[expect(
    clippy::too_many_lines,
    reason = "one job from cap re-check to stored result, where each early exit must release or fail the claim the same way"
)]
pub(super) async fn process(sh: &Shared, claim: Stage1Claim) -> Result<JobEnd> {
    let ctx = &sh.ctx;
    if ctx.cancel.is_cancelled() {
        sh.halt("cancelled", "cancelled".into());
    }
    if sh.stop.load(Ordering::SeqCst) {
        return release(sh, claim, "run stopped before this job".into()).await;
    }
    // Cap re-check right before spending (other processes spend too).
    {
        let (store, cfg) = (ctx.store.clone(), ctx.config.clone());
        if let Some(st) = blocking(move || cap_state(&store, &cfg)).await?
            && st.reached
        {
            sh.halt(
                "spend_cap",
                format!(
                    "monthly spend cap reached (${:.4} of ${:.2})",
                    st.spent_usd, st.cap_usd
                ),
            );
            return release(sh, claim, "monthly spend cap reached".into()).await;
        }
    }
    // Render.
    let (window, tool_budget) = (
        ctx.model.context_window,
        ctx.config.tool_result_token_budget,
    );
    let rendered = prepare_input(ctx, &claim.thread, window, tool_budget).await;
    let (rendered, redactions) = match rendered {
        Ok(r) => r,
        Err(e) => return fail(sh, claim, format!("rendering the rollout failed: {e}")).await,
    };
    // Citations of earlier memories in this session raise their usage once per rollout,
    // whatever happens to this session's own extraction.
    let cited = codex_free_memory::citations::cited_rollout_ids(&rendered);
    if !cited.is_empty() {
        let (store, id) = (ctx.store.clone(), claim.thread.id.clone());
        if let Err(e) = blocking(move || store.record_citations_once(&id, &cited)).await {
            tracing::warn!(error = %e, "could not record citations");
        }
    }
    let req = build_request(ctx, &claim.thread, &rendered);
    // The approval queue (memories.approval): an approved request goes out exactly as
    // stored; one that must wait is queued sealed, and nothing is sent or held against the
    // cap for it.
    let (req, approved) = match super::approval::gate(ctx, &claim, req, &redactions).await? {
        Gate::Send(req) => (req, None),
        Gate::Approved(b) => {
            let (q, req) = *b;
            (req, Some(q))
        }
        Gate::Waiting(id) => {
            release(
                sh,
                claim,
                format!("waiting for approval: codex-free memories approve {id}"),
            )
            .await?;
            return Ok(JobEnd::Waiting);
        }
        Gate::Refused(why) => return fail(sh, claim, why).await,
    };
    let reserved = match reserve(sh, &req).await? {
        Ok(r) => r,
        Err(why) => {
            sh.halt("spend_cap", why.clone());
            return release(sh, claim, why).await;
        }
    };
    let _unreserve = Unreserve(sh, reserved);
    let no = sh.request_no.fetch_add(1, Ordering::SeqCst) + 1;
    let started = Instant::now();
    // The outgoing gate: a request it refuses (over the window) is logged as failed, not sent.
    let (sent, res) = outgoing::send_receipted(
        &*ctx.model.client,
        ctx.model.context_window,
        req,
        &redactions,
        &ctx.cancel,
    )
    .await;
    let receipt = sent.map(|(mut r, bytes)| {
        crate::sent::keep(&ctx.home, ctx.config.keep_sent_days, &r.sha256, &bytes);
        if let Some(q) = &approved {
            // The stored bytes were redacted when queued; their counts are the request's.
            r.redactions = q
                .redactions
                .iter()
                .map(|(k, v)| (k.clone(), (*v).max(0) as u64))
                .collect();
            if r.sha256 != q.sha256 {
                tracing::warn!(id = %q.id, "approved request left with other bytes than queued");
            }
        }
        r
    });
    let duration_ms = started.elapsed().as_millis() as i64;
    let mut row = UsageRow {
        run_id: sh.run_id.clone(),
        phase: "phase1".into(),
        request_no: no,
        thread_id: Some(claim.thread.id.clone()),
        model: ctx.model.model.to_string(),
        duration_ms,
        sent_bytes: receipt.as_ref().map(|r| r.bytes as i64),
        redactions: receipt
            .as_ref()
            .map(|r| {
                r.redactions
                    .iter()
                    .map(|(k, v)| (k.clone(), *v as i64))
                    .collect()
            })
            .unwrap_or_default(),
        sent_sha256: receipt.map(|r| r.sha256),
        ..Default::default()
    };
    let record = |row: UsageRow| {
        let store = ctx.store.clone();
        blocking(move || store.record_usage(&row))
    };
    let completion = match res {
        Ok(c) => c,
        Err(e) => {
            row.attempts = i64::from(e.attempts);
            row.outcome = if e.kind == FailureKind::Cancelled {
                "cancelled".into()
            } else {
                "failed".into()
            };
            row.error = Some(e.to_string());
            // No usage reported for a failed request: zero tokens; priced models cost 0.
            row.cost_usd = ctx.model.price.map(|_| 0.0);
            record(row).await?;
            if e.kind.is_run_fatal() {
                let outcome = if e.kind == FailureKind::Cancelled {
                    "cancelled"
                } else {
                    "failed"
                };
                let why = match e.kind {
                    FailureKind::ModelUnavailable => {
                        format!("model {} is not available: {}", ctx.model.model, e.message)
                    }
                    FailureKind::Auth => {
                        sh.key_rejected.store(true, Ordering::SeqCst);
                        format!(
                            "provider rejected the credentials for {}: {}",
                            ctx.model.model, e.message
                        )
                    }
                    _ => "cancelled".into(),
                };
                sh.halt(outcome, why.clone());
                return release(sh, claim, why).await;
            }
            return fail(sh, claim, e.to_string()).await;
        }
    };
    let mut claim = claim;
    if let Some(q) = approved {
        let store = ctx.store.clone();
        let rewind = q.source_updated_at < claim.source_updated_at;
        let (c, wm) = (claim.clone(), q.source_updated_at);
        blocking(move || {
            store.finish_queued(&q.id, None)?;
            // Built from an older state of the session: what came later is extracted (and
            // approved) on its own.
            if rewind {
                store.rewind_stage1_claim(&c, wm)?;
            }
            Ok(())
        })
        .await?;
        if rewind {
            claim.source_updated_at = wm;
        }
    }
    let u = completion.usage;
    row.attempts = i64::from(completion.attempts);
    row.tokens = u.counts();
    row.cost_usd = ctx.model.price.map(|p| p.cost(&u));
    let parsed = match ctx.version {
        MemoryVersion::V1 => parse_extraction(&completion.content),
        MemoryVersion::V2 => {
            let red = ctx.redactor.clone();
            crate::v2::output::parse(&completion.content, &|t| red.redact(t)).map(|o| Extraction {
                rollout_summary: o.rollout_summary,
                rollout_slug: o.rollout_slug,
                raw_memory: String::new(),
            })
        }
    };
    row.outcome = match &parsed {
        Ok(x) if x.is_empty() => "no_output".into(),
        Ok(_) => "ok".into(),
        Err(_) => "invalid_output".into(),
    };
    row.error = parsed.as_ref().err().map(|e| e.to_string());
    record(row).await?;
    let x = match parsed {
        Ok(x) => x,
        Err(e) => return fail(sh, claim, format!("invalid answer: {e}")).await,
    };
    let store = ctx.store.clone();
    if x.is_empty() {
        let ok = blocking(move || store.mark_stage1_succeeded_no_output(&claim)).await?;
        return Ok(if ok {
            JobEnd::NoOutput
        } else {
            JobEnd::Released
        });
    }
    let red = &ctx.redactor;
    let (summary, memory) = (red.redact(&x.rollout_summary), red.redact(&x.raw_memory));
    let slug = x
        .rollout_slug
        .map(|s| red.redact(&s))
        .and_then(|s| normalise_slug(&s));
    let ok = blocking(move || {
        store.mark_stage1_succeeded(
            &claim,
            &Stage1OutputInput {
                raw_memory: &memory,
                rollout_summary: &summary,
                rollout_slug: slug.as_deref(),
            },
        )
    })
    .await?;
    Ok(if ok {
        JobEnd::WithOutput
    } else {
        JobEnd::Released
    })
}
