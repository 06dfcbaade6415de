//! The approval queue (`memories.approval`): model requests held for the user's decision,
//! and the projects/agents the user let through.
//!
//! A queued request is stored sealed: the exact bytes the outgoing gate produced (secrets
//! redacted, private spans removed, within the context window), never the unredacted
//! session. Approving one lets the next run send exactly those bytes; denying one turns its
//! session off (as `memories thread off` does) in the same transaction.
//!
//! Statuses: `waiting` → `approved` → `sent` (or `failed` when the send was refused), or
//! `waiting`/`approved` → `denied`; a waiting request whose session changed before a
//! decision is `superseded` by the new one.
//!
//! Invariant: at most one `waiting` and one `approved` request per session and phase.

use std::collections::BTreeMap;

use rusqlite::{OptionalExtension, TransactionBehavior, params};
use serde::Serialize;

use super::stage1::{JOB_KIND_STAGE1, Stage1Claim, set_thread_memory_in};
use super::{Store, collect_rows, db_err};
use codex_free_core::Error;
use codex_free_core::Result;

/// The `source` of an "always allow" row: every agent of the project.
pub const ANY_SOURCE: &str = "*";

/// One request of the approval queue (without its bytes: [`Store::queued_sealed`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueuedRequest {
    /// Short id the user approves or denies by (12 hex characters).
    pub id: String,
    /// `phase1` (phase 2 is never queued).
    pub phase: String,
    /// The session (rollout) the request extracts.
    pub thread_id: String,
    /// Its agent (`codex`, `claude`, `pi`, `mcp`).
    pub source: String,
    /// Its project (the session's working directory; empty when unknown).
    pub project: String,
    /// The model it goes to (`provider/model`).
    pub model: String,
    /// The session's `updated_at` the request was built from (unix seconds).
    pub source_updated_at: i64,
    /// SHA-256 (hex) of the sealed bytes: the hash the receipt carries once sent.
    pub sha256: String,
    /// Size of the sealed bytes.
    pub bytes: i64,
    /// Redactions by rule (`provider_key`, `private_span` …) the request carries.
    pub redactions: BTreeMap<String, i64>,
    /// Estimated input tokens (o200k_base).
    pub input_tokens: i64,
    /// Output tokens asked for at most.
    pub max_output_tokens: Option<i64>,
    /// Cost of the input at the model's price, USD; `None` = price unknown.
    pub input_cost_usd: Option<f64>,
    /// Cost if every allowed output token is used too, USD; `None` = price unknown.
    pub max_cost_usd: Option<f64>,
    /// `waiting`, `approved`, `sent`, `denied`, `superseded` or `failed`.
    pub status: String,
    /// Why it waited: `new_source` (first request of this project/agent) or
    /// `every_request`.
    pub reason: String,
    /// When it was queued (unix seconds).
    pub created_at: i64,
    /// When it was approved, denied, sent or superseded (unix seconds).
    pub decided_at: Option<i64>,
    /// Why the send failed (`failed` only).
    pub error: Option<String>,
}

/// A request to queue ([`Store::queue_request`]).
#[derive(Debug, Clone)]
pub struct NewQueued<'a> {
    /// `phase1`.
    pub phase: &'a str,
    /// The session.
    pub thread_id: &'a str,
    /// Its agent.
    pub source: &'a str,
    /// Its project (working directory, empty when unknown).
    pub project: &'a str,
    /// The model (`provider/model`).
    pub model: &'a str,
    /// The session watermark the request was built from.
    pub source_updated_at: i64,
    /// The sealed bytes.
    pub sealed: &'a [u8],
    /// Their SHA-256, hex.
    pub sha256: &'a str,
    /// Redactions by rule.
    pub redactions: &'a BTreeMap<String, i64>,
    /// Estimated input tokens.
    pub input_tokens: i64,
    /// Output cap.
    pub max_output_tokens: Option<i64>,
    /// Input cost, USD.
    pub input_cost_usd: Option<f64>,
    /// Worst-case cost, USD.
    pub max_cost_usd: Option<f64>,
    /// `new_source` or `every_request`.
    pub reason: &'a str,
}

/// A project (or one agent of it) the user let through ([`Store::allowed_projects`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AllowedProject {
    /// The agent, or [`ANY_SOURCE`].
    pub source: String,
    /// The project (working directory; empty = sessions without one).
    pub project: String,
    /// "Always allow": its requests never wait, even with `every_request`.
    pub always: bool,
    /// When (unix seconds).
    pub allowed_at: i64,
}

const COLS: &str = "id, phase, thread_id, source, project, model, source_updated_at, sha256, bytes, redactions, input_tokens, max_output_tokens, input_cost_usd, max_cost_usd, status, reason, created_at, decided_at, error";

fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<QueuedRequest> {
    let redactions: String = r.get("redactions")?;
    Ok(QueuedRequest {
        id: r.get("id")?,
        phase: r.get("phase")?,
        thread_id: r.get("thread_id")?,
        source: r.get("source")?,
        project: r.get("project")?,
        model: r.get("model")?,
        source_updated_at: r.get("source_updated_at")?,
        sha256: r.get("sha256")?,
        bytes: r.get("bytes")?,
        redactions: serde_json::from_str(&redactions).unwrap_or_default(),
        input_tokens: r.get("input_tokens")?,
        max_output_tokens: r.get("max_output_tokens")?,
        input_cost_usd: r.get("input_cost_usd")?,
        max_cost_usd: r.get("max_cost_usd")?,
        status: r.get("status")?,
        reason: r.get("reason")?,
        created_at: r.get("created_at")?,
        decided_at: r.get("decided_at")?,
        error: r.get("error")?,
    })
}

fn unknown(id: &str) -> Error {
    Error::InvalidArgument(format!(
        "no waiting request with id \"{id}\"; `codex-free memories outgoing` lists them"
    ))
}

impl Store {
    /// Queue `q` as `waiting`, or find it queued: a waiting request of the same session
    /// and phase with the same bytes is returned as it is (`false`); one with other bytes
    /// (the session changed) is `superseded` by the new one (`true`). Returns the id.
    ///
    /// Errors: [`Error::Store`] on database failure.
    pub fn queue_request(&self, q: &NewQueued<'_>) -> Result<(String, bool)> {
        let now = self.now();
        let mut c = self.conn();
        let tx = c
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        let existing: Option<(String, String)> = tx
            .query_row(
                "SELECT id, sha256 FROM outgoing_queue WHERE thread_id = ?1 AND phase = ?2 AND status = 'waiting'",
                params![q.thread_id, q.phase],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(db_err)?;
        if let Some((id, sha)) = existing {
            if sha == q.sha256 {
                tx.commit().map_err(db_err)?;
                return Ok((id, false));
            }
            tx.execute(
                "UPDATE outgoing_queue SET status = 'superseded', decided_at = ?2 WHERE id = ?1",
                params![id, now],
            )
            .map_err(db_err)?;
        }
        let id = uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
        let redactions = serde_json::to_string(q.redactions).unwrap_or_else(|_| "{}".into());
        tx.execute(
            "INSERT INTO outgoing_queue (id, phase, thread_id, source, project, model, source_updated_at, sealed, sha256, bytes,
                                         redactions, input_tokens, max_output_tokens, input_cost_usd, max_cost_usd, status, reason, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, 'waiting', ?16, ?17)",
            params![
                id,
                q.phase,
                q.thread_id,
                q.source,
                q.project,
                q.model,
                q.source_updated_at,
                q.sealed,
                q.sha256,
                q.sealed.len() as i64,
                redactions,
                q.input_tokens,
                q.max_output_tokens,
                q.input_cost_usd,
                q.max_cost_usd,
                q.reason,
                now
            ],
        )
        .map_err(db_err)?;
        tx.commit().map_err(db_err)?;
        Ok((id, true))
    }

    /// Queued requests with one of `statuses` (all when empty), oldest first.
    ///
    /// Errors: [`Error::Store`] on database failure.
    pub fn queued_requests(&self, statuses: &[&str]) -> Result<Vec<QueuedRequest>> {
        let c = self.conn();
        let filter = if statuses.is_empty() {
            String::new()
        } else {
            format!("WHERE status IN ({})", vec!["?"; statuses.len()].join(","))
        };
        let mut st = c
            .prepare(&format!(
                "SELECT {COLS} FROM outgoing_queue {filter} ORDER BY created_at ASC, rowid ASC"
            ))
            .map_err(db_err)?;
        collect_rows(
            &mut st,
            rusqlite::params_from_iter(statuses.iter()),
            from_row,
        )
    }

    /// One queued request by id.
    ///
    /// Errors: [`Error::Store`] on database failure.
    pub fn queued_request(&self, id: &str) -> Result<Option<QueuedRequest>> {
        let c = self.conn();
        c.query_row(
            &format!("SELECT {COLS} FROM outgoing_queue WHERE id = ?1"),
            [id],
            from_row,
        )
        .optional()
        .map_err(db_err)
    }

    /// The sealed bytes of a queued request.
    ///
    /// Errors: [`Error::Store`] on database failure.
    pub fn queued_sealed(&self, id: &str) -> Result<Option<Vec<u8>>> {
        let c = self.conn();
        c.query_row(
            "SELECT sealed FROM outgoing_queue WHERE id = ?1",
            [id],
            |r| r.get(0),
        )
        .optional()
        .map_err(db_err)
    }

    /// The approved request of a session and phase, with its sealed bytes, if any.
    ///
    /// Errors: [`Error::Store`] on database failure.
    pub fn approved_request(
        &self,
        thread_id: &str,
        phase: &str,
    ) -> Result<Option<(QueuedRequest, Vec<u8>)>> {
        let c = self.conn();
        c.query_row(
            &format!(
                "SELECT {COLS}, sealed FROM outgoing_queue WHERE thread_id = ?1 AND phase = ?2 AND status = 'approved'
                 ORDER BY decided_at DESC LIMIT 1"
            ),
            params![thread_id, phase],
            |r| Ok((from_row(r)?, r.get("sealed")?)),
        )
        .optional()
        .map_err(db_err)
    }

    /// Approve waiting request `id` (every waiting one with `None`): the next run sends its
    /// sealed bytes. Its project/agent counts as known from now on (`new_sources` lets its
    /// later requests through); with `always`, its project is always allowed (no request
    /// of it waits again, whatever the agent or mode). Returns the approved requests.
    ///
    /// Errors: [`Error::InvalidArgument`] when `id` names no waiting request;
    /// [`Error::Store`] on database failure.
    pub fn approve_queued(&self, id: Option<&str>, always: bool) -> Result<Vec<QueuedRequest>> {
        let now = self.now();
        let mut c = self.conn();
        let tx = c
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        let rows = {
            let mut st = tx
                .prepare(&format!(
                    "SELECT {COLS} FROM outgoing_queue WHERE status = 'waiting' AND (?1 IS NULL OR id = ?1)
                     ORDER BY created_at ASC, rowid ASC"
                ))
                .map_err(db_err)?;
            collect_rows(&mut st, [id], from_row)?
        };
        if let (Some(id), true) = (id, rows.is_empty()) {
            return Err(unknown(id));
        }
        let mut out = Vec::new();
        for mut q in rows {
            // An earlier approval of the same session not yet sent is replaced by this one.
            tx.execute(
                "UPDATE outgoing_queue SET status = 'superseded', decided_at = ?3
                 WHERE thread_id = ?1 AND phase = ?2 AND status = 'approved'",
                params![q.thread_id, q.phase, now],
            )
            .map_err(db_err)?;
            tx.execute(
                "UPDATE outgoing_queue SET status = 'approved', decided_at = ?2 WHERE id = ?1",
                params![q.id, now],
            )
            .map_err(db_err)?;
            allow_in(&tx, &q.source, &q.project, false, now)?;
            if always {
                allow_in(&tx, ANY_SOURCE, &q.project, true, now)?;
            }
            q.status = "approved".into();
            q.decided_at = Some(now);
            out.push(q);
        }
        tx.commit().map_err(db_err)?;
        Ok(out)
    }

    /// Deny waiting (or approved, not yet sent) request `id`: it is never sent, and its
    /// session is turned off as `memories thread off` does (its extraction deleted, never
    /// claimed again until turned back on), in one transaction. Returns the request.
    ///
    /// Errors: [`Error::InvalidArgument`] when `id` names no waiting or approved request;
    /// [`Error::Store`] on database failure.
    pub fn deny_queued(&self, id: &str) -> Result<QueuedRequest> {
        let now = self.now();
        let mut c = self.conn();
        let tx = c
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        let mut q = tx
            .query_row(
                &format!(
                    "SELECT {COLS} FROM outgoing_queue WHERE id = ?1 AND status IN ('waiting', 'approved')"
                ),
                [id],
                from_row,
            )
            .optional()
            .map_err(db_err)?
            .ok_or_else(|| unknown(id))?;
        tx.execute(
            "UPDATE outgoing_queue SET status = 'denied', decided_at = ?3
             WHERE thread_id = ?1 AND phase = ?2 AND status IN ('waiting', 'approved')",
            params![q.thread_id, q.phase, now],
        )
        .map_err(db_err)?;
        set_thread_memory_in(&tx, &q.thread_id, false, now)?;
        tx.commit().map_err(db_err)?;
        q.status = "denied".into();
        q.decided_at = Some(now);
        Ok(q)
    }

    /// Drop the waiting request of a session and phase (it is about to be sent fresh: its
    /// project/agent became known, was always allowed, or approval was turned off).
    /// Returns whether one was waiting.
    ///
    /// Errors: [`Error::Store`] on database failure.
    pub fn supersede_waiting(&self, thread_id: &str, phase: &str) -> Result<bool> {
        let now = self.now();
        let c = self.conn();
        let n = c
            .execute(
                "UPDATE outgoing_queue SET status = 'superseded', decided_at = ?3
                 WHERE thread_id = ?1 AND phase = ?2 AND status = 'waiting'",
                params![thread_id, phase, now],
            )
            .map_err(db_err)?;
        Ok(n > 0)
    }

    /// Record how an approved request's send ended: `sent`, or `failed` with `error` (the
    /// gate or the cap refused it at send time, or the provider failed).
    ///
    /// Errors: [`Error::Store`] on database failure.
    pub fn finish_queued(&self, id: &str, error: Option<&str>) -> Result<()> {
        let now = self.now();
        let c = self.conn();
        c.execute(
            "UPDATE outgoing_queue SET status = ?2, decided_at = ?3, error = ?4 WHERE id = ?1 AND status = 'approved'",
            params![id, if error.is_some() { "failed" } else { "sent" }, now, error],
        )
        .map_err(db_err)?;
        Ok(())
    }

    /// Let a project through: `source` = one agent ("known", enough for `new_sources`) or
    /// [`ANY_SOURCE`] with `always` ("always allow": no request of it waits). Waiting
    /// requests of an always-allowed project are approved at once. Returns how many.
    ///
    /// Errors: [`Error::Store`] on database failure.
    pub fn allow_project(&self, source: &str, project: &str, always: bool) -> Result<usize> {
        let now = self.now();
        let mut c = self.conn();
        let tx = c
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        allow_in(&tx, source, project, always, now)?;
        let n = if always {
            tx.execute(
                "UPDATE outgoing_queue SET status = 'approved', decided_at = ?2
                 WHERE status = 'waiting' AND project = ?1",
                params![project, now],
            )
            .map_err(db_err)?
        } else {
            0
        };
        tx.commit().map_err(db_err)?;
        Ok(n)
    }

    /// Take back an "always allow" (or a known project/agent): its next requests wait
    /// again as the mode says. Returns whether a row was removed.
    ///
    /// Errors: [`Error::Store`] on database failure.
    pub fn disallow_project(&self, source: &str, project: &str) -> Result<bool> {
        let c = self.conn();
        let n = c
            .execute(
                "DELETE FROM outgoing_allowed WHERE source = ?1 AND project = ?2",
                params![source, project],
            )
            .map_err(db_err)?;
        Ok(n > 0)
    }

    /// Every project/agent let through, newest first.
    ///
    /// Errors: [`Error::Store`] on database failure.
    pub fn allowed_projects(&self) -> Result<Vec<AllowedProject>> {
        let c = self.conn();
        let mut st = c
            .prepare("SELECT source, project, always, allowed_at FROM outgoing_allowed ORDER BY allowed_at DESC, project ASC")
            .map_err(db_err)?;
        collect_rows(&mut st, [], |r| {
            Ok(AllowedProject {
                source: r.get(0)?,
                project: r.get(1)?,
                always: r.get::<_, i64>(2)? != 0,
                allowed_at: r.get(3)?,
            })
        })
    }

    /// Whether `project` is always allowed (any agent).
    ///
    /// Errors: [`Error::Store`] on database failure.
    pub fn project_always_allowed(&self, project: &str) -> Result<bool> {
        let c = self.conn();
        c.query_row(
            "SELECT EXISTS (SELECT 1 FROM outgoing_allowed WHERE source = ?1 AND project = ?2 AND always = 1)",
            params![ANY_SOURCE, project],
            |r| r.get(0),
        )
        .map_err(db_err)
    }

    /// Whether requests from `source` in `project` were let through before: the user
    /// approved one (or allowed the project), or a session of this agent in this project
    /// was already extracted (what was sent before approval was turned on is not new).
    ///
    /// Errors: [`Error::Store`] on database failure.
    pub fn source_known(&self, source: &str, project: &str) -> Result<bool> {
        let c = self.conn();
        c.query_row(
            &format!(
                "SELECT EXISTS (SELECT 1 FROM outgoing_allowed WHERE project = ?2 AND (source = ?1 OR source = '{ANY_SOURCE}'))
                     OR EXISTS (SELECT 1 FROM threads t JOIN jobs j ON j.kind = '{JOB_KIND_STAGE1}' AND j.job_key = t.id
                                WHERE t.source = ?1 AND COALESCE(t.cwd, '') = ?2 AND j.last_success_watermark IS NOT NULL)"
            ),
            params![source, project],
            |r| r.get(0),
        )
        .map_err(db_err)
    }

    /// Make an owned phase-1 claim finish at `watermark` instead of the session's current
    /// one: an approved request built from an older state of the session is sent as it
    /// is, and the newer part stays to be extracted (and approved) later. Returns `false`
    /// when the claim is no longer ours.
    ///
    /// Errors: [`Error::Store`] on database failure.
    pub fn rewind_stage1_claim(&self, claim: &Stage1Claim, watermark: i64) -> Result<bool> {
        let c = self.conn();
        let n = c
            .execute(
                "UPDATE jobs SET input_watermark = ?1
                 WHERE kind = ?2 AND job_key = ?3 AND status = 'running' AND ownership_token = ?4",
                params![
                    watermark,
                    JOB_KIND_STAGE1,
                    claim.thread.id,
                    claim.ownership_token
                ],
            )
            .map_err(db_err)?;
        Ok(n > 0)
    }
}

fn allow_in(
    tx: &rusqlite::Transaction<'_>,
    source: &str,
    project: &str,
    always: bool,
    now: i64,
) -> Result<()> {
    tx.execute(
        "INSERT INTO outgoing_allowed (source, project, always, allowed_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(source, project) DO UPDATE SET always = MAX(always, excluded.always)",
        params![source, project, always as i64, now],
    )
    .map_err(db_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{ManualClock, ThreadUpsert};

    fn store() -> Store {
        Store::open_in_memory(Arc::new(ManualClock::new(1_000_000))).unwrap()
    }

    fn thread(s: &Store, id: &str, cwd: &str) {
        s.upsert_threads(
            &[ThreadUpsert {
                id: id.into(),
                source: "codex".into(),
                path: format!("/t/{id}.jsonl"),
                cwd: Some(cwd.into()),
                title: None,
                created_at: None,
                updated_at: 10,
                is_subagent: false,
                is_ephemeral: false,
                content_hash: None,
            }],
            true,
        )
        .unwrap();
    }

    fn queue(s: &Store, id: &str, bytes: &[u8]) -> (String, bool) {
        let sha = format!("{:x}", bytes.len());
        s.queue_request(&NewQueued {
            phase: "phase1",
            thread_id: id,
            source: "codex",
            project: "/p",
            model: "openai/gpt-5-mini",
            source_updated_at: 10,
            sealed: bytes,
            sha256: &sha,
            redactions: &[("provider_key".to_string(), 1)].into_iter().collect(),
            input_tokens: 42,
            max_output_tokens: Some(100),
            input_cost_usd: Some(0.01),
            max_cost_usd: Some(0.02),
            reason: "every_request",
        })
        .unwrap()
    }

    /// The same bytes queue once; changed bytes supersede the waiting one; approval marks
    /// the project/agent known and hands back exactly the stored bytes.
    #[test]
    fn queue_approve_and_supersede() {
        let s = store();
        thread(&s, "t1", "/p");
        let (a, new) = queue(&s, "t1", b"one");
        assert!(new);
        assert_eq!(queue(&s, "t1", b"one"), (a.clone(), false));
        let (b, new) = queue(&s, "t1", b"two!");
        assert!(new && a != b);
        assert_eq!(s.queued_request(&a).unwrap().unwrap().status, "superseded");
        assert_eq!(s.queued_requests(&["waiting"]).unwrap().len(), 1);
        assert!(!s.source_known("codex", "/p").unwrap());
        assert!(s.approve_queued(Some(&a), false).is_err(), "superseded");
        let ok = s.approve_queued(Some(&b), false).unwrap();
        assert_eq!(ok.len(), 1);
        assert!(s.source_known("codex", "/p").unwrap());
        assert!(!s.source_known("claude", "/p").unwrap());
        assert!(!s.project_always_allowed("/p").unwrap());
        let (q, bytes) = s.approved_request("t1", "phase1").unwrap().unwrap();
        assert_eq!(
            (q.id.as_str(), bytes.as_slice()),
            (b.as_str(), &b"two!"[..])
        );
        assert_eq!(q.redactions.get("provider_key"), Some(&1));
        s.finish_queued(&b, None).unwrap();
        assert!(s.approved_request("t1", "phase1").unwrap().is_none());
        assert_eq!(s.queued_request(&b).unwrap().unwrap().status, "sent");
    }

    /// A denial turns the session off (no longer eligible) and is final.
    #[test]
    fn deny_turns_the_session_off() {
        let s = store();
        thread(&s, "t1", "/p");
        let (a, _) = queue(&s, "t1", b"one");
        let q = s.deny_queued(&a).unwrap();
        assert_eq!(q.status, "denied");
        assert!(!s.thread("t1").unwrap().unwrap().memory_enabled);
        assert!(s.deny_queued(&a).is_err());
        assert!(s.approve_queued(None, false).unwrap().is_empty());
    }

    /// "Always allow" approves the project's waiting requests and is reported.
    #[test]
    fn always_allow_approves_waiting_requests_of_the_project() {
        let s = store();
        thread(&s, "t1", "/p");
        queue(&s, "t1", b"one");
        assert_eq!(s.allow_project(ANY_SOURCE, "/p", true).unwrap(), 1);
        assert!(s.project_always_allowed("/p").unwrap());
        assert!(s.approved_request("t1", "phase1").unwrap().is_some());
        let all = s.allowed_projects().unwrap();
        assert_eq!(all.len(), 1);
        assert!(all[0].always);
        assert!(s.disallow_project(ANY_SOURCE, "/p").unwrap());
        assert!(!s.project_always_allowed("/p").unwrap());
    }
}
