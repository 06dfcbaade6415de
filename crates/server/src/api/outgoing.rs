//! The Outgoing page: the approval queue of `memories.approval` (requests waiting to be
//! sent, each as its sealed text with the redactions marked, its tokens and cost), and the
//! decisions on it — approve one or all, deny one (its session is turned off), always allow
//! a project. The same library calls as `codex-free memories outgoing | approve | deny`
//! ([`codex_free_pipeline::approval`]).
//!
//! Invariant: a request is named by its queue id and found in the pipeline's databases,
//! never built from the request body; only the sealed (redacted) bytes are ever shown.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
#[cfg(test)]
use ts_rs::TS;

use codex_free_core::Result;
use codex_free_core::config::{ApprovalMode, Config, MemoryVersion};
use codex_free_pipeline::approval;
use codex_free_store::Store;

use super::ApiService;
use super::dto::ActionResult;

/// One request of the queue (`GET /api/outgoing`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct OutgoingRequest {
    /// Queue id (what approve/deny name).
    pub id: String,
    /// `waiting` or `approved` (sent at the next run).
    pub status: String,
    /// Why it waits: `new_source` or `every_request`.
    pub reason: String,
    /// The session (rollout) id.
    pub thread_id: String,
    /// Its agent (`codex`, `claude`, `pi`, `mcp`).
    pub source: String,
    /// Its project (working directory; empty when unknown).
    pub project: String,
    /// `provider/model` it goes to.
    pub model: String,
    /// `v1` or `v2`: which pipeline queued it.
    pub version: String,
    /// SHA-256 of the sealed bytes (the receipt's hash once sent).
    pub sha256: String,
    /// Size of the sealed bytes.
    #[cfg_attr(test, ts(type = "number"))]
    pub bytes: i64,
    /// Redactions by rule.
    #[cfg_attr(test, ts(type = "Record<string, number>"))]
    pub redactions: BTreeMap<String, i64>,
    /// Estimated input tokens.
    #[cfg_attr(test, ts(type = "number"))]
    pub input_tokens: i64,
    /// Output cap, tokens.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub max_output_tokens: Option<i64>,
    /// Input cost, USD (`null` = price unknown).
    pub input_cost_usd: Option<f64>,
    /// Cost with every allowed output token, USD (`null` = price unknown).
    pub max_cost_usd: Option<f64>,
    /// When it was queued (Unix ms).
    #[cfg_attr(test, ts(type = "number"))]
    pub created_ms: i64,
    /// The sealed request exactly as it would leave (canonical JSON); redactions appear
    /// as their markers (`[REDACTED_SECRET]`, `[private: removed]`).
    pub text: String,
}

/// The queue and its settings (`GET /api/outgoing`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct OutgoingView {
    /// `memories.approval`: `off`, `new_sources` or `every_request`.
    pub mode: String,
    /// Waiting and approved requests, oldest first.
    pub requests: Vec<OutgoingRequest>,
    /// Projects always allowed (none of their requests waits).
    pub always_allowed: Vec<String>,
}

/// Body of `POST /api/outgoing/{id}/approve` and `/api/outgoing/approve-all`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ApproveRequest {
    /// Also always allow the request's project.
    #[serde(default)]
    pub always: bool,
}

/// Body of `POST /api/outgoing/allow`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct AllowProjectRequest {
    /// The project (as a request's `project` names it).
    pub project: String,
    /// `true` = always allow, `false` = take it back.
    pub allow: bool,
}

fn mode_name(m: ApprovalMode) -> &'static str {
    match m {
        ApprovalMode::Off => "off",
        ApprovalMode::NewSources => "new_sources",
        ApprovalMode::EveryRequest => "every_request",
    }
}

impl ApiService {
    fn queue_stores(&self, cfg: &Config) -> Result<Vec<(MemoryVersion, Store)>> {
        cfg.memories
            .written_versions()
            .into_iter()
            .map(|v| {
                Ok((
                    v,
                    Store::open(
                        &codex_free_pipeline::v2::db_path(&self.home, v),
                        std::sync::Arc::new(codex_free_store::SystemClock),
                    )?,
                ))
            })
            .collect()
    }

    /// The approval queue with each request's sealed text.
    ///
    /// Errors: the config or a database cannot be read.
    pub fn outgoing(&self) -> Result<OutgoingView> {
        let cfg = Config::load(&self.config_path())?.config;
        let mode = cfg.memories.approval_mode();
        let q = approval::list(&self.queue_stores(&cfg)?, mode, true)?;
        Ok(OutgoingView {
            mode: mode_name(mode).into(),
            requests: q
                .requests
                .into_iter()
                .map(|l| {
                    let r = l.request;
                    OutgoingRequest {
                        id: r.id,
                        status: r.status,
                        reason: r.reason,
                        thread_id: r.thread_id,
                        source: r.source,
                        project: r.project,
                        model: r.model,
                        version: l.version.as_str().into(),
                        sha256: r.sha256,
                        bytes: r.bytes,
                        redactions: r.redactions,
                        input_tokens: r.input_tokens,
                        max_output_tokens: r.max_output_tokens,
                        input_cost_usd: r.input_cost_usd,
                        max_cost_usd: r.max_cost_usd,
                        created_ms: r.created_at.saturating_mul(1000),
                        text: l.sealed.unwrap_or_default(),
                    }
                })
                .collect(),
            always_allowed: q
                .allowed
                .into_iter()
                .filter(|a| a.always)
                .map(|a| a.project)
                .collect(),
        })
    }

    /// Approve request `id` (every waiting one with `None`); `always` also always allows
    /// its project. The next run sends exactly its sealed bytes.
    ///
    /// Errors: `id` is waiting nowhere; a database cannot be opened.
    pub fn outgoing_approve(&self, id: Option<&str>, always: bool) -> Result<ActionResult> {
        let cfg = Config::load(&self.config_path())?.config;
        let done = approval::approve(&self.queue_stores(&cfg)?, id, always)?;
        Ok(ActionResult {
            ok: true,
            message: match done.len() {
                0 => "no request was waiting".into(),
                1 => format!(
                    "approved {}: the next run sends it{}",
                    done[0].id,
                    if always {
                        format!(
                            "; {} is always allowed",
                            if done[0].project.is_empty() {
                                "(no project)"
                            } else {
                                &done[0].project
                            }
                        )
                    } else {
                        String::new()
                    }
                ),
                n => format!("approved {n} requests: the next run sends them"),
            },
        })
    }

    /// Deny request `id`: never sent, its session's memory turned off.
    ///
    /// Errors: `id` is waiting nowhere; a database cannot be opened.
    pub fn outgoing_deny(&self, id: &str) -> Result<ActionResult> {
        let cfg = Config::load(&self.config_path())?.config;
        let q = approval::deny(&self.queue_stores(&cfg)?, id)?;
        Ok(ActionResult {
            ok: true,
            message: format!(
                "denied {}: never sent; memory for session {} is off",
                q.id, q.thread_id
            ),
        })
    }

    /// Always allow `project` (or take it back).
    ///
    /// Errors: a database cannot be opened.
    pub fn outgoing_allow(&self, req: &AllowProjectRequest) -> Result<ActionResult> {
        let cfg = Config::load(&self.config_path())?.config;
        let n = approval::allow_project(&self.queue_stores(&cfg)?, &req.project, req.allow)?;
        let name = if req.project.is_empty() {
            "(no project)"
        } else {
            &req.project
        };
        Ok(ActionResult {
            ok: true,
            message: if req.allow {
                format!("{name} is always allowed ({n} waiting request(s) approved)")
            } else {
                format!("{name} is no longer always allowed")
            },
        })
    }
}
