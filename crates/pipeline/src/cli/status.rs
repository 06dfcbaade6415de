//! `memories status`: what the pipeline is, its model, its jobs and runs, and the last
//! lines of its log.

use super::ControlEnv;

use serde::Serialize;

use crate::phase1::cap_state;
use crate::run_log::{iso, log_path};
use codex_free_core::Result;
use codex_free_models::prices::format_cost;
use codex_free_models::{DEFAULT_EXTRACT_MODEL, ModelRef, PriceTable, endpoint_for};
use codex_free_secrets::{KeyFrom, SecretStore, env_var_for};
use codex_free_store::{JobCounts, RunRow, SourceCounts, Spend};

/// The configured extraction model as status shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelStatus {
    /// `provider/model-id`.
    pub model: String,
    /// `false` when it is [`DEFAULT_EXTRACT_MODEL`].
    pub explicit: bool,
    /// Wire format, when the provider is known.
    pub api: Option<String>,
    /// Structured output mode (`strict` / `json_object` / `none` = compatibility).
    pub structured_output: Option<String>,
    /// `$in / $out per 1M tokens` or `price unknown`.
    pub price: String,
    /// `config`, `litellm:<key>` or `unknown`.
    pub price_source: String,
    /// Where the key comes from (`keyring`, `env OPENAI_API_KEY`, `not needed`), or the problem.
    pub key: String,
    /// A problem that stops runs (unknown provider, missing key).
    pub problem: Option<String>,
}

/// `memories status`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Status {
    /// `memories.enabled`.
    pub enabled: bool,
    /// `memories.generate_memories`.
    pub generate_memories: bool,
    /// `memories.use_memories`.
    pub use_memories: bool,
    /// The extraction model.
    pub model: ModelStatus,
    /// Threads per source.
    pub sources: Vec<SourceCounts>,
    /// Phase-1 jobs by state.
    pub jobs: JobCounts,
    /// Threads eligible right now (not yet extracted, idle, in the window).
    pub eligible_now: usize,
    /// Sessions otherwise eligible that `memories.exclude_paths` keeps from ever being sent,
    /// with the pattern that matched.
    pub excluded: Vec<codex_free_store::ExcludedThread>,
    /// Last runs, newest first (at most 5).
    pub recent_runs: Vec<RunRow>,
    /// Spend this calendar month (UTC).
    pub spend_this_month: Spend,
    /// `memories.monthly_spend_cap_usd`.
    pub monthly_cap_usd: Option<f64>,
    /// Cap reached: no model calls until next month or a higher cap.
    pub cap_reached: bool,
    /// `state.sqlite` path.
    pub database: String,
    /// `memories.log` path.
    pub log: String,
    /// The process running the scheduler of this state home (from `scheduler.lock`), or
    /// `None` when no process runs it.
    pub scheduler: Option<String>,
    /// The phase-2 (consolidation) job, `None` before its first run.
    pub consolidation: Option<codex_free_store::phase2::Phase2JobRow>,
    /// The coding agents `codex-free connect` knows: installed, connected, linked, and when
    /// their memory block was last refreshed.
    pub clients: Vec<codex_free_connect::ClientStatus>,
    /// Why memory cannot reach Codex sessions and the command that fixes it
    /// ([`codex_free_connect::codex_memory_gap`]); `None` when it can or Codex is not used.
    pub codex_memory: Option<String>,
    /// Git sync of the memory folder (`memories.sync.remote`): ahead/behind, last sync and
    /// its error; `None` when no remote is configured.
    pub sync: Option<codex_free_memory::sync::SyncStatus>,
    /// `memories.review` is on and a consolidation waits for `memories review accept`.
    pub review_pending: bool,
    /// This server's own MCP transcripts under the state home (files, bytes).
    pub mcp_transcripts: codex_free_transcripts::sources::mcp::TranscriptUsage,
    /// `memories.mcp_transcript_retention_days`.
    pub mcp_transcript_retention_days: u32,
    /// Both memory versions: which is served, whether each pipeline runs, each one's jobs,
    /// runs, summary and (V2) readiness. The fields above describe V1's `state.sqlite`.
    pub versions: crate::v2::state::VersionsState,
}

pub(super) fn describe_model(
    cfg: &codex_free_core::config::MemoriesConfig,
    secrets: &dyn SecretStore,
) -> ModelStatus {
    let (spec, explicit) = match &cfg.extract_model {
        Some(m) => (m.clone(), true),
        None => (DEFAULT_EXTRACT_MODEL.to_string(), false),
    };
    let mut st = ModelStatus {
        model: spec.clone(),
        explicit,
        api: None,
        structured_output: None,
        price: "price unknown".into(),
        price_source: "unknown".into(),
        key: String::new(),
        problem: None,
    };
    let m = match ModelRef::parse(&spec) {
        Ok(m) => m,
        Err(e) => {
            st.problem = Some(e.to_string());
            return st;
        }
    };
    let info = PriceTable::bundled().lookup(&m, &cfg.prices);
    if let Some(p) = info.price {
        st.price = format!(
            "${:.2} in / ${:.2} out per 1M tokens",
            p.input * 1e6,
            p.output * 1e6
        );
    }
    st.price_source = info.source;
    match endpoint_for(&m.provider, &cfg.providers) {
        Err(e) => st.problem = Some(e.to_string()),
        Ok((api, _, structured, key_required, account)) => {
            st.api = Some(api.as_str().into());
            st.structured_output = Some(structured.as_str().into());
            // An unreachable store reads as "not there": the environment may still hold it.
            let from = match codex_free_secrets::lookup(secrets, &account) {
                Ok(found) => found.map(|(_, from)| from),
                Err(_) => codex_free_secrets::env_key(&account).map(|_| KeyFrom::Env),
            };
            st.key = if from == Some(KeyFrom::Store) {
                format!("{} (account \"{account}\")", secrets.label())
            } else if from == Some(KeyFrom::Env) {
                format!("env {}", env_var_for(&account))
            } else if key_required {
                st.problem = Some(format!(
                    "no API key for \"{}\": keyring account \"{account}\" or env {}",
                    m.provider,
                    env_var_for(&account)
                ));
                "missing".into()
            } else {
                "not needed".into()
            };
        }
    }
    st
}

/// Gather [`Status`].
///
/// Errors: config unreadable ([`Error::Config`]) or database errors.
pub fn status(env: &ControlEnv) -> Result<Status> {
    let cfg = env.config()?;
    let m = &cfg.memories;
    let store = env.store()?;
    let params = codex_free_store::ClaimParams {
        sources: m.sources.clone(),
        max_claimed: m.max_rollouts_per_startup,
        max_running: m.max_rollouts_per_startup,
        max_age_days: m.max_rollout_age_days,
        min_idle_hours: m.min_rollout_idle_hours,
        lease_seconds: codex_free_store::stage1::LEASE_SECONDS,
        worker_id: String::new(),
        force: false,
        exclude: crate::phase1::exclude_paths(m)?,
    };
    let cap = cap_state(&store, m)?;
    let target = codex_free_connect::Target::from_env(&env.home, &env.config_path).ok();
    let clients = target
        .as_ref()
        .map(codex_free_connect::status)
        .unwrap_or_default();
    Ok(Status {
        enabled: m.enabled,
        generate_memories: m.generate_memories,
        use_memories: m.use_memories,
        model: describe_model(m, env.secrets.as_ref()),
        sources: store.source_counts()?,
        jobs: store.job_counts()?,
        eligible_now: store
            .eligible_threads(&params, codex_free_store::stage1::SCAN_LIMIT)?
            .len(),
        excluded: store.excluded_threads(&params)?,
        recent_runs: store.recent_runs(5)?,
        spend_this_month: store.spend_this_month()?,
        monthly_cap_usd: m.monthly_spend_cap_usd,
        cap_reached: cap.as_ref().is_some_and(|c| c.reached),
        database: store
            .path()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        log: log_path(&env.home).display().to_string(),
        scheduler: crate::scheduler::lock_holder(&env.home),
        consolidation: store.phase2_job()?,
        clients: clients.clone(),
        codex_memory: target
            .as_ref()
            .and_then(|t| codex_free_connect::codex_memory_gap(t, &env.home, &clients)),
        sync: codex_free_memory::sync::status(&env.home, m.sync.remote.as_deref()),
        review_pending: codex_free_memory::review::state(&env.home, m.review)
            .map(|r| r.pending)
            .unwrap_or(false),
        mcp_transcripts: codex_free_transcripts::sources::mcp::usage(&env.home),
        mcp_transcript_retention_days: m.mcp_transcript_retention_days,
        versions: crate::v2::state::versions_state(&env.home, &cfg, &cfg, env.clock.clone())?,
    })
}

impl Status {
    /// One line on the consolidation job: state, when, what comes next, the last error.
    pub fn consolidation_line(&self) -> String {
        let Some(j) = &self.consolidation else {
            return "not run yet (it runs after phase 1 has stored memories)".into();
        };
        let at = |t: Option<i64>| t.map(iso).unwrap_or_else(|| "?".into());
        match j.status.as_str() {
            "running" => format!(
                "running in {} (lease until {})",
                j.worker_id.as_deref().unwrap_or("?"),
                at(j.lease_until)
            ),
            "error" if j.retries_left <= 0 => format!(
                "STOPPED after {} failed attempts until new input arrives (or `memories consolidate --force`); last error: {}",
                codex_free_store::stage1::DEFAULT_RETRIES - j.retries_left,
                j.last_error.as_deref().unwrap_or("?")
            ),
            "error" => format!(
                "failed at {}, retry after {} ({} attempt(s) left); error: {}",
                at(j.finished_at),
                at(j.retry_at),
                j.retries_left,
                j.last_error.as_deref().unwrap_or("?")
            ),
            "pending" => "new input waiting for the next consolidation".into(),
            // A job row that never finished a run (an empty home's): nothing was consolidated.
            _ if j.finished_at.is_none() => {
                "nothing to consolidate yet (it runs after phase 1 has stored memories)".into()
            }
            _ => format!(
                "done at {}; next one when new input arrives, at most every 6 h",
                at(j.finished_at)
            ),
        }
    }
}

pub(super) fn on(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

impl Status {
    /// Human-readable text. Long on purpose: one section after the other, in the order
    /// `memories status` prints them.
    #[expect(
        clippy::too_many_lines,
        reason = "one section after the other, in the order `memories status` prints them"
    )]
    pub fn render(&self) -> String {
        let mut s = String::new();
        s.push_str(&format!(
            "pipeline: {}   generate: {}   use: {}\n",
            on(self.enabled),
            on(self.generate_memories),
            on(self.use_memories)
        ));
        let m = &self.model;
        s.push_str(&format!(
            "model: {}{}   api: {}   structured output: {}\n  price: {} ({})   key: {}\n",
            m.model,
            if m.explicit { "" } else { " (default)" },
            m.api.as_deref().unwrap_or("?"),
            match m.structured_output.as_deref() {
                Some("none") => "none (compatibility mode, validated locally)",
                Some(x) => x,
                None => "?",
            },
            m.price,
            m.price_source,
            m.key
        ));
        if let Some(p) = &m.problem {
            s.push_str(&format!("  problem: {p}\n"));
        }
        let sp = &self.spend_this_month;
        let spend = match (sp.requests, sp.unpriced_requests) {
            (0, _) => "$0 (no requests)".to_string(),
            (_, 0) => format_cost(Some(sp.usd)),
            (_, n) => format!(
                "{} + {n} request(s) with unknown price",
                format_cost(Some(sp.usd))
            ),
        };
        match self.monthly_cap_usd {
            Some(cap) => s.push_str(&format!(
                "spend this month: {spend} of {} cap{}\n",
                format_cost(Some(cap)),
                if self.cap_reached {
                    "  — CAP REACHED: no model calls until next month or a higher cap"
                } else {
                    ""
                }
            )),
            None => s.push_str(&format!(
                "spend this month: {spend} (no cap: set memories.monthly_spend_cap_usd)\n"
            )),
        }
        s.push_str("sources:\n");
        if self.sources.is_empty() {
            s.push_str("  (none recorded yet: sessions are recorded by the next run; `memories readiness` counts what is on disk)\n");
        }
        for c in &self.sources {
            s.push_str(&format!(
                "  {:<7} {} sessions, {} with memory, {} off, {} sub-agent/ephemeral\n",
                c.source, c.threads, c.with_output, c.disabled, c.excluded
            ));
        }
        let j = &self.jobs;
        // With V2 in use, these lines are V1's; the versions block below has both.
        let v1_label = if self.versions.dual_write || self.versions.served != "v1" {
            " (v1)"
        } else {
            ""
        };
        s.push_str(&format!(
            "phase 1 (extraction) jobs{}: {} running, {} stale lease, {} pending, {} done, {} retrying, {} out of retries; {} eligible now\n",
            v1_label, j.running, j.stale, j.pending, j.done, j.retrying, j.exhausted, self.eligible_now
        ));
        if !self.excluded.is_empty() {
            s.push_str(&format!(
                "excluded by memories.exclude_paths (never sent): {} session(s)\n",
                self.excluded.len()
            ));
            for x in self.excluded.iter().take(10) {
                s.push_str(&format!(
                    "  {} ({}) in {} matches {:?}\n",
                    x.id, x.source, x.cwd, x.pattern
                ));
            }
        }
        s.push_str(&format!(
            "phase 2 (consolidation){v1_label}: {}\n",
            self.consolidation_line()
        ));
        s.push_str(&self.versions.render());
        s.push_str("last runs:\n");
        if self.recent_runs.is_empty() {
            s.push_str("  (none)\n");
        }
        for r in &self.recent_runs {
            let cost = match (r.cost_usd, r.unpriced_requests) {
                (c, 0) if r.requests > 0 => format_cost(c),
                (_, 0) => "$0".into(),
                (Some(c), n) => format!("{} + {n} unpriced", format_cost(Some(c))),
                (None, _) => "price unknown".into(),
            };
            let spent = format!(
                "{} requests, {} in ({} cached) / {} out tokens, {cost}{}",
                r.requests,
                r.input_tokens,
                r.cached_input_tokens,
                r.output_tokens,
                r.summary
                    .error
                    .as_deref()
                    .map(|e| format!(" — {e}"))
                    .unwrap_or_default()
            );
            let (at, trigger, outcome) = (iso(r.started_at), &r.trigger, &r.summary.outcome);
            if r.phase == "phase2" {
                s.push_str(&format!(
                    "  {at} {trigger} consolidation {outcome}: {spent}\n"
                ));
            } else {
                let m = &r.summary;
                s.push_str(&format!(
                    "  {at} {trigger} {outcome}: {} claimed, {} with output, {} no output, {} failed, {} released; {spent}\n",
                    m.claimed, m.with_output, m.no_output, m.failed, m.released,
                ));
            }
        }
        match &self.sync {
            Some(sy) => s.push_str(&format!(
                "sync: {}\n",
                codex_free_memory::sync::status_line(sy)
            )),
            None => s.push_str(
                "sync: off (set memories.sync.remote to share the memory between machines)\n",
            ),
        }
        if self.review_pending {
            s.push_str("review: a consolidation waits (`memories review` shows it, `memories review accept` uses it)\n");
        }
        s.push_str(&format!(
            "scheduler: {}\n",
            self.scheduler.as_deref().unwrap_or(
                "not running (it runs inside the tray app and every `codex-free serve`)"
            )
        ));
        if let Some(w) = &self.codex_memory {
            s.push_str(&format!("warning: {w}\n"));
        }
        if !self.clients.is_empty() {
            s.push_str("connected clients (`codex-free connect`):\n");
            for l in codex_free_connect::render_status(&self.clients).lines() {
                s.push_str(&format!("  {l}\n"));
            }
        }
        let t = &self.mcp_transcripts;
        s.push_str(&format!(
            "MCP transcripts (this server's): {} file(s), {:.1} MB; each deleted {} days after its last call once extracted\n",
            t.files,
            t.bytes as f64 / 1e6,
            self.mcp_transcript_retention_days
        ));
        s.push_str(&format!("database: {}\nlog: {}\n", self.database, self.log));
        s
    }
}
