//! The approval queue (`memories.approval`) between a built request and the provider.
//!
//! [`gate`] runs for each phase-1 job right after its request is built, before the spend
//! cap is consulted:
//!
//! - an **approved** request of the session is sent instead of the fresh one, exactly as
//!   stored: [`Outgoing::reseal`] rebuilds it from its sealed bytes and refuses it unless
//!   it seals to those same bytes, within the model's context window now; the caller then
//!   holds it against the cap as any request;
//! - otherwise, with `new_sources` (a project/agent never sent before) or
//!   `every_request` (a project not always allowed), the request is sealed and **queued**
//!   (the sealed bytes, never the unredacted text, with its token and cost estimate) and
//!   not sent: it reserves nothing against the cap;
//! - otherwise it is sent as built.
//!
//! The CLI (`memories outgoing | approve | deny`) and the UI's Outgoing page act on the
//! queue through [`list`], [`approve`], [`deny`] and [`allow_project`], over every
//! database a run writes (V1's, and V2's with `memories.dual_write`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::Phase1Ctx;
use codex_free_core::Result;
use codex_free_core::config::ApprovalMode;
use codex_free_models::outgoing::Outgoing;
use codex_free_models::{CompletionRequest, TokenUsage};
use codex_free_store::outgoing::ANY_SOURCE;
use codex_free_store::{AllowedProject, NewQueued, QueuedRequest, Stage1Claim, Store};

/// The phase name queued phase-1 requests carry.
pub const PHASE1: &str = "phase1";

/// What [`gate`] decided for one job.
#[derive(Debug)]
pub enum Gate {
    /// Send this request (as built: no approval needed).
    Send(CompletionRequest),
    /// Send the approved request (its sealed bytes, unchanged), then record the send on
    /// the queued row.
    Approved(Box<(QueuedRequest, CompletionRequest)>),
    /// The request waits in the queue under this id; nothing is sent.
    Waiting(String),
    /// The approved request can no longer be sent as stored (the gate refused it now);
    /// the queued row is marked failed and the job fails with this reason.
    Refused(String),
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        codex_free_core::Error::Store(format!("approval queue worker thread failed: {e}"))
    })?
}

/// The project a session belongs to in the queue: its working directory, or empty.
pub fn project_of(cwd: Option<&str>) -> String {
    cwd.unwrap_or_default().to_string()
}

/// Why a request from `source` in `project` must wait under `mode`, or `None` when it may
/// be sent.
///
/// Errors: [`codex_free_core::Error::Store`] on database failure.
pub fn wait_reason(
    store: &Store,
    mode: ApprovalMode,
    source: &str,
    project: &str,
) -> Result<Option<&'static str>> {
    Ok(match mode {
        ApprovalMode::Off => None,
        _ if store.project_always_allowed(project)? => None,
        ApprovalMode::NewSources if store.source_known(source, project)? => None,
        ApprovalMode::NewSources => Some("new_source"),
        ApprovalMode::EveryRequest => Some("every_request"),
    })
}

/// What [`gate`] would decide for `thread`'s next request, without its side effects
/// (nothing superseded, nothing queued): `None` when it would go out (an approved request
/// waits for it, or [`wait_reason`] lets it pass), else why it would wait. For previews.
///
/// Errors: [`codex_free_core::Error::Store`] on database failure.
pub fn would_wait(
    store: &Store,
    mode: ApprovalMode,
    thread: &codex_free_store::ThreadRow,
) -> Result<Option<&'static str>> {
    if store.approved_request(&thread.id, PHASE1)?.is_some() {
        return Ok(None);
    }
    wait_reason(
        store,
        mode,
        &thread.source,
        &project_of(thread.cwd.as_deref()),
    )
}

/// Decide what happens to `req`, built for `claim` (see the module doc). `upstream` = the
/// redactions made while rendering it (stored with a queued request, shown on the
/// Outgoing page).
///
/// Errors: [`codex_free_core::Error::Store`] on database failure.
pub async fn gate(
    ctx: &Phase1Ctx,
    claim: &Stage1Claim,
    req: CompletionRequest,
    upstream: &codex_free_redact::Tally,
) -> Result<Gate> {
    let (store, thread) = (ctx.store.clone(), claim.thread.id.clone());
    if let Some((q, bytes)) = blocking(move || store.approved_request(&thread, PHASE1)).await? {
        return Ok(match Outgoing::reseal(&bytes, ctx.model.context_window) {
            Ok(o) => Gate::Approved(Box::new((q, o.request().clone()))),
            Err(e) => {
                let (store, id, why) = (ctx.store.clone(), q.id.clone(), e.message.clone());
                blocking(move || store.finish_queued(&id, Some(&why))).await?;
                Gate::Refused(format!("approved request {}: {}", q.id, e.message))
            }
        });
    }
    let mode = ctx.config.approval_mode();
    let project = project_of(claim.thread.cwd.as_deref());
    let reason = {
        let (store, t, project) = (ctx.store.clone(), claim.thread.clone(), project.clone());
        blocking(move || {
            let why = wait_reason(&store, mode, &t.source, &project)?;
            if why.is_none() {
                // A request still waiting from before is sent fresh now.
                store.supersede_waiting(&t.id, PHASE1)?;
            }
            Ok(why)
        })
        .await?
    };
    let Some(reason) = reason else {
        return Ok(Gate::Send(req));
    };
    let out = match Outgoing::seal(req.clone(), ctx.model.context_window) {
        Ok(o) => o,
        // Refused by the gate: nothing to approve; the send path logs it as failed.
        Err(_) => return Ok(Gate::Send(req)),
    };
    let bytes = out.sealed_bytes();
    let receipt = out.receipt(upstream);
    let tokens = out.input_tokens() as u64;
    let max_out = req.max_output_tokens.map(i64::from);
    let price = ctx.model.price;
    let input_cost = price.map(|p| {
        p.cost(&TokenUsage {
            input: tokens,
            ..Default::default()
        })
    });
    let max_cost = price.map(|p| {
        p.cost(&TokenUsage {
            input: tokens,
            output: max_out.unwrap_or(0) as u64,
            ..Default::default()
        })
    });
    let redactions: BTreeMap<String, i64> = receipt
        .redactions
        .iter()
        .map(|(k, v)| (k.clone(), *v as i64))
        .collect();
    let (store, t, model, wm) = (
        ctx.store.clone(),
        claim.thread.clone(),
        ctx.model.model.to_string(),
        claim.source_updated_at,
    );
    let (id, new) = blocking(move || {
        store.queue_request(&NewQueued {
            phase: PHASE1,
            thread_id: &t.id,
            source: &t.source,
            project: &project,
            model: &model,
            source_updated_at: wm,
            sealed: &bytes,
            sha256: &receipt.sha256,
            redactions: &redactions,
            input_tokens: tokens as i64,
            max_output_tokens: max_out,
            input_cost_usd: input_cost,
            max_cost_usd: max_cost,
            reason,
        })
    })
    .await?;
    if new {
        tracing::info!(id = %id, thread = %claim.thread.id, reason, "request waits for approval");
    }
    Ok(Gate::Waiting(id))
}

/// One request of the queue as the CLI and the Outgoing page show it.
#[derive(Debug, Clone, Serialize)]
pub struct Listed {
    /// The queued row.
    #[serde(flatten)]
    pub request: QueuedRequest,
    /// `v1` or `v2`: whose database holds it.
    pub version: codex_free_core::config::MemoryVersion,
    /// The sealed bytes as text (the request exactly as it would leave), when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sealed: Option<String>,
}

/// What [`list`] returns.
#[derive(Debug, Clone, Serialize)]
pub struct Queue {
    /// `memories.approval` now.
    pub mode: ApprovalMode,
    /// Waiting and approved (not yet sent) requests, oldest first.
    pub requests: Vec<Listed>,
    /// Projects/agents let through.
    pub allowed: Vec<AllowedProject>,
}

/// The waiting and approved requests of every store in `stores`, with their sealed text
/// when `with_text`.
///
/// Errors: [`codex_free_core::Error::Store`] on database failure.
pub fn list(
    stores: &[(codex_free_core::config::MemoryVersion, Store)],
    mode: ApprovalMode,
    with_text: bool,
) -> Result<Queue> {
    let mut requests = Vec::new();
    let mut allowed = Vec::new();
    for (version, store) in stores {
        for q in store.queued_requests(&["waiting", "approved"])? {
            let sealed = if with_text {
                store
                    .queued_sealed(&q.id)?
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
            } else {
                None
            };
            requests.push(Listed {
                request: q,
                version: *version,
                sealed,
            });
        }
        for a in store.allowed_projects()? {
            if !allowed.contains(&a) {
                allowed.push(a);
            }
        }
    }
    requests.sort_by_key(|l| l.request.created_at);
    Ok(Queue {
        mode,
        requests,
        allowed,
    })
}

/// Approve request `id` (every waiting one with `None`) in whichever store holds it; with
/// `always`, its project is always allowed from now on. Returns the approved requests.
///
/// Errors: [`codex_free_core::Error::InvalidArgument`] when `id` is waiting nowhere;
/// [`codex_free_core::Error::Store`] on database failure.
pub fn approve(
    stores: &[(codex_free_core::config::MemoryVersion, Store)],
    id: Option<&str>,
    always: bool,
) -> Result<Vec<QueuedRequest>> {
    let mut out = Vec::new();
    let mut last_err = None;
    for (_, store) in stores {
        match store.approve_queued(id, always) {
            Ok(v) => out.extend(v),
            Err(e @ codex_free_core::Error::InvalidArgument(_)) => last_err = Some(e),
            Err(e) => return Err(e),
        }
    }
    match (id, out.is_empty(), last_err) {
        (Some(_), true, Some(e)) => Err(e),
        _ => Ok(out),
    }
}

/// Deny request `id` in whichever store holds it: never sent, its session turned off.
///
/// Errors: [`codex_free_core::Error::InvalidArgument`] when `id` is waiting nowhere;
/// [`codex_free_core::Error::Store`] on database failure.
pub fn deny(
    stores: &[(codex_free_core::config::MemoryVersion, Store)],
    id: &str,
) -> Result<QueuedRequest> {
    let mut last_err = None;
    for (_, store) in stores {
        match store.deny_queued(id) {
            Ok(q) => return Ok(q),
            Err(e @ codex_free_core::Error::InvalidArgument(_)) => last_err = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_err.unwrap_or_else(|| {
        codex_free_core::Error::InvalidArgument(format!("no waiting request with id \"{id}\""))
    }))
}

/// "Always allow" `project` (every agent) in every store, or take it back (`allow` =
/// false). Returns the waiting requests approved by it.
///
/// Errors: [`codex_free_core::Error::Store`] on database failure.
pub fn allow_project(
    stores: &[(codex_free_core::config::MemoryVersion, Store)],
    project: &str,
    allow: bool,
) -> Result<usize> {
    let mut n = 0;
    for (_, store) in stores {
        if allow {
            n += store.allow_project(ANY_SOURCE, project, true)?;
        } else {
            store.disallow_project(ANY_SOURCE, project)?;
        }
    }
    Ok(n)
}

/// [`list`] as the CLI prints it: one block per request (id, session, project, tokens,
/// cost, redactions) and the commands that decide it.
pub fn render(q: &Queue) -> String {
    let mode = match q.mode {
        ApprovalMode::Off => "off",
        ApprovalMode::NewSources => "new_sources",
        ApprovalMode::EveryRequest => "every_request",
    };
    let mut out = format!("memories.approval: {mode}\n");
    if q.requests.is_empty() {
        out.push_str("no request is waiting for approval\n");
    }
    let usd = |v: Option<f64>| v.map_or("price unknown".to_string(), |c| format!("${c:.4}"));
    for l in &q.requests {
        let r = &l.request;
        out.push_str(&format!(
            "{} [{}] session {} ({}) in {} -> {}\n  {} bytes, ~{} input tokens, input {} (at most {}); sha256 {}{}\n",
            r.id,
            r.status,
            r.thread_id,
            r.source,
            if r.project.is_empty() { "(no project)" } else { &r.project },
            r.model,
            r.bytes,
            r.input_tokens,
            usd(r.input_cost_usd),
            usd(r.max_cost_usd),
            r.sha256,
            if r.redactions.is_empty() {
                String::new()
            } else {
                format!(
                    "; removed by rule: {}",
                    r.redactions
                        .iter()
                        .map(|(k, v)| format!("{k} x{v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        ));
        if let Some(text) = &l.sealed {
            out.push_str(text);
        }
    }
    for a in &q.allowed {
        if a.always {
            out.push_str(&format!(
                "always allowed: {}\n",
                if a.project.is_empty() {
                    "(no project)"
                } else {
                    &a.project
                }
            ));
        }
    }
    if q.requests.iter().any(|l| l.request.status == "waiting") {
        out.push_str("approve: codex-free memories approve ID|--all [--always]; deny: codex-free memories deny ID (turns that session off); the text: codex-free memories outgoing --text\n");
    }
    out
}
