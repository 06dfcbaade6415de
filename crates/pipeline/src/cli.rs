//! `codex-free memories ...`: status, readiness, run, force, on/off, generate
//! on/off, use on/off, thread on/off, reset. [`MemoriesCmd`] is the clap subcommand the
//! binary mounts; [`execute`] returns the text to print. Switches write the config file
//! through [`Config::save`] (overrides only). The same functions back the UI's API.
//!
//! Invariant: nothing here deletes or edits an original transcript; `reset` removes only
//! what the pipeline generated (stage-1 outputs, memory jobs, `<home>/memories/`), keeps
//! the spend history, asks for `--yes` and refuses while a job holds a lease.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::phase1::{Redactor, RolloutInput, Trigger, cap_state};
use crate::run_log::{iso, log_path};
use crate::scheduler::{self, SchedulerDeps};
use crate::transcript_input::{SecretRedactor, TranscriptInput};
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::config::{CONFIG_FILE, Config, MemoryVersion};
use codex_free_models::prices::format_cost;
use codex_free_models::{
    DEFAULT_EXTRACT_MODEL, ModelRef, PriceTable, RetryPolicy, endpoint_for, resolve_extract_model,
};
use codex_free_secrets::{KeyFrom, SecretStore, env_var_for};
use codex_free_store::{Clock, JobCounts, RunRow, SourceCounts, Spend, Store, SystemClock};

/// On or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    /// Turn on.
    On,
    /// Turn off.
    Off,
}

impl OnOff {
    fn on(self) -> bool {
        self == OnOff::On
    }
}

/// `codex-free memories <command>`.
#[derive(Debug, Clone, PartialEq, Eq, clap::Subcommand)]
pub enum MemoriesCmd {
    /// Sources, jobs by state, last runs with tokens and cost, spend this month vs cap.
    Status {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Check that a run can happen now (model, key, price, cap, sources, database), and
    /// whether V2 is ready to be served: at least MINIMUM threads (1–4096, default 20) in
    /// one successful V2 consolidation and a valid V2 summary. Never switches the version.
    Readiness {
        /// Consolidated threads V2 needs to count as ready (1–4096).
        #[arg(value_parser = clap::value_parser!(u32).range(1..=4096))]
        minimum: Option<u32>,
    },
    /// Run phase 1 now (respects idle time, retry backoff and the spend cap). Exits 1 when
    /// the run achieved nothing (every request failed, or the spend cap stopped it first).
    Run {
        /// Print the run as JSON (with `achieved` and `failure`, as the exit code says).
        #[arg(long)]
        json: bool,
    },
    /// Run phase 1 ignoring idle time, retry backoff and exhausted retries (never the
    /// watermark, never the spend cap). Exits 1 as `run` does.
    Force {
        /// Print the run as JSON (with `achieved` and `failure`, as the exit code says).
        #[arg(long)]
        json: bool,
    },
    /// Show the exact requests the next phase-1 run would send (sealed by the same gate:
    /// redacted, compacted, with tokens and the price estimate) and send nothing.
    Preview {
        /// How many sessions, newest first (at most memories.max_rollouts_per_startup).
        #[arg(long, default_value_t = 3)]
        next: usize,
        /// Only this session (rollout) id.
        #[arg(long)]
        rollout: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// What the backlog will cost before anything is sent: sessions per source, tokens,
    /// the cost with the configured model and cheaper ones, and this month's pace against
    /// the cap (no model call, no key needed).
    Forecast {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The requests waiting for approval (memories.approval) and the approved ones not
    /// yet sent: id, session, project, tokens, cost, redactions.
    Outgoing {
        /// Also print each request's sealed text (exactly what would leave).
        #[arg(long)]
        text: bool,
        /// Print JSON instead of text (with the sealed text).
        #[arg(long)]
        json: bool,
    },
    /// Approve a waiting request (or every one): the next run sends exactly its sealed
    /// bytes, re-checked against the spend cap and the context window then.
    Approve {
        /// The request id (`memories outgoing` lists them).
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        id: Option<String>,
        /// Approve every waiting request.
        #[arg(long)]
        all: bool,
        /// Also always allow the request's project: none of its requests waits again.
        #[arg(long)]
        always: bool,
    },
    /// Deny a waiting request: it is never sent and its session is turned off (as
    /// `memories thread off` does).
    Deny {
        /// The request id.
        id: String,
    },
    /// Turn the pipeline on.
    On,
    /// Turn the pipeline off (background runs stop at their next check).
    Off,
    /// Extract memories from new sessions on/off.
    Generate {
        /// on | off
        state: OnOff,
    },
    /// Use memories in new sessions on/off.
    Use {
        /// on | off
        state: OnOff,
    },
    /// Memory for one session on/off (off also deletes its extraction).
    Thread {
        /// on | off
        state: OnOff,
        /// The session (rollout) id.
        id: String,
    },
    /// Delete generated memories and jobs (original transcripts are never touched).
    Reset {
        /// Confirm.
        #[arg(long)]
        yes: bool,
    },
}

/// What `execute` needs.
#[derive(Clone)]
pub struct ControlEnv {
    /// State home.
    pub home: PathBuf,
    /// Credentials.
    pub secrets: Arc<dyn SecretStore>,
    /// Rollout discovery + rendering.
    pub input: Arc<dyn RolloutInput>,
    /// Output redaction.
    pub redactor: Arc<dyn Redactor>,
    /// Clock for the store (tests inject one).
    pub clock: Arc<dyn Clock>,
    /// Provider retry policy.
    pub retry: RetryPolicy,
    /// Cancels a `run`/`force` in flight (Ctrl-C).
    pub cancel: CancellationToken,
    /// The config file every command reads and the switches write (default
    /// `<home>/codex.config.json`; the CLI's `--config` replaces it).
    pub config_path: PathBuf,
}

impl ControlEnv {
    /// Production wiring for `home` with the given secrets store.
    pub fn new(home: PathBuf, secrets: Arc<dyn SecretStore>) -> Self {
        Self {
            home: home.clone(),
            secrets,
            input: Arc::new(TranscriptInput::from_env(&home)),
            redactor: Arc::new(SecretRedactor),
            clock: Arc::new(SystemClock),
            retry: RetryPolicy::default(),
            cancel: CancellationToken::new(),
            config_path: home.join(CONFIG_FILE),
        }
    }

    /// The same, reading and writing `path` instead of `<home>/codex.config.json`.
    pub fn with_config_path(mut self, path: PathBuf) -> Self {
        self.config_path = path;
        self
    }

    fn store(&self) -> Result<Store> {
        Store::open(
            &self.home.join(codex_free_store::DB_FILE),
            self.clock.clone(),
        )
    }

    /// The database of the pipeline `version` (V1 `state.sqlite`, V2 `state_v2.sqlite`).
    fn store_for(&self, version: MemoryVersion) -> Result<Store> {
        Store::open(&crate::v2::db_path(&self.home, version), self.clock.clone())
    }

    /// The databases a run writes (V1's, and V2's with `memories.dual_write` or when it is
    /// the active version), each with its version: where queued requests are.
    ///
    /// Errors: a database that cannot be opened.
    pub fn queue_stores(&self, cfg: &Config) -> Result<Vec<(MemoryVersion, Store)>> {
        cfg.memories
            .written_versions()
            .into_iter()
            .map(|v| Ok((v, self.store_for(v)?)))
            .collect()
    }

    fn config(&self) -> Result<Config> {
        Ok(Config::load(&self.config_path)?.config)
    }

    /// Scheduler dependencies with the same wiring.
    pub fn scheduler_deps(&self) -> SchedulerDeps {
        SchedulerDeps {
            secrets: self.secrets.clone(),
            input: self.input.clone(),
            redactor: self.redactor.clone(),
            retry: self.retry,
            rescan_every: scheduler::RESCAN_INTERVAL,
            watch: Some(codex_free_transcripts::discover::SourceRoots::from_env(
                &self.home,
            )),
            config_path: self.config_path.clone(),
            alerts: Arc::new(crate::alerts::LogSink),
        }
    }
}

/// A [`RolloutInput`] with no sources (embedders that feed no transcripts, tests).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoSources;

impl RolloutInput for NoSources {
    fn scan(&self, _sources: &[String]) -> Result<Vec<codex_free_store::ThreadUpsert>> {
        Ok(Vec::new())
    }
    fn render(
        &self,
        thread: &codex_free_store::ThreadRow,
        _context_window: Option<u64>,
        _tool_result_token_budget: usize,
    ) -> Result<String> {
        Err(Error::NotFound(PathBuf::from(&thread.path)))
    }
    fn items(
        &self,
        thread: &codex_free_store::ThreadRow,
    ) -> Result<Vec<codex_free_transcripts::rollout::Item>> {
        Err(Error::NotFound(PathBuf::from(&thread.path)))
    }
}

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

fn describe_model(
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
            _ => format!(
                "done at {}; next one when new input arrives, at most every 6 h",
                at(j.finished_at)
            ),
        }
    }
}

fn on(b: bool) -> &'static str {
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

/// One readiness check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// Passed.
    pub ok: bool,
    /// Details or the fix.
    pub detail: String,
}

/// `memories readiness`: can a run happen now, and if not, why; and V2's readiness.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Readiness {
    /// All checks passed.
    pub ready: bool,
    /// The checks.
    pub checks: Vec<Check>,
    /// V2's consolidated-thread count against the threshold and its summary's validity.
    pub v2: crate::v2::summary::V2Readiness,
}

/// V2's readiness in `env`'s home against `minimum` (checked: 1–4096). Reads the V2
/// database only when it exists (a home that never ran V2 has 0 threads; nothing is
/// created).
///
/// Errors: a `minimum` out of range; the V2 database cannot be read.
pub fn v2_readiness(env: &ControlEnv, minimum: u32) -> Result<crate::v2::summary::V2Readiness> {
    let cfg = env.config()?;
    let db = crate::v2::db_path(&env.home, MemoryVersion::V2);
    let count = if db.is_file() {
        env.store_for(MemoryVersion::V2)?
            .max_consolidated_thread_count()?
    } else {
        0
    };
    crate::v2::summary::readiness(
        &crate::v2::folder(&env.home, MemoryVersion::V2),
        count,
        minimum,
        cfg.memories.active_version().as_str(),
    )
}

/// Run the readiness checks (no model call), V2's against the default threshold.
pub fn readiness(env: &ControlEnv) -> Result<Readiness> {
    readiness_with(env, crate::v2::summary::DEFAULT_READY_MINIMUM)
}

/// [`readiness`] with V2's threshold `minimum` (1–4096).
///
/// Errors: config or database errors; a `minimum` out of range.
pub fn readiness_with(env: &ControlEnv, minimum: u32) -> Result<Readiness> {
    let v2 = v2_readiness(env, minimum)?;
    let cfg = env.config()?;
    let m = &cfg.memories;
    let mut checks = Vec::new();
    let mut add = |name: &str, ok: bool, detail: String| {
        checks.push(Check {
            name: name.into(),
            ok,
            detail,
        })
    };
    add(
        "pipeline on",
        m.enabled,
        if m.enabled {
            "memories.enabled = true".into()
        } else {
            "run `codex-free memories on`".into()
        },
    );
    let ms = describe_model(m, env.secrets.as_ref());
    add(
        "model",
        ms.problem.is_none(),
        ms.problem.clone().unwrap_or_else(|| {
            format!(
                "{} via {} (key: {})",
                ms.model,
                ms.api.clone().unwrap_or_default(),
                ms.key
            )
        }),
    );
    let priced = ms.price_source != "unknown";
    let cap_needs_price = m.monthly_spend_cap_usd.is_some() && !priced;
    add(
        "price",
        !cap_needs_price,
        if priced {
            format!("{} ({})", ms.price, ms.price_source)
        } else if cap_needs_price {
            format!(
                "price of {} unknown and a spend cap is set: add memories.prices.\"{}\"",
                ms.model, ms.model
            )
        } else {
            "price unknown: spend will show \"price unknown\" (add memories.prices to count it)"
                .into()
        },
    );
    match env.store() {
        Ok(store) => {
            add(
                "database",
                true,
                format!("schema v{}", store.schema_version()?),
            );
            let cap = cap_state(&store, m)?;
            add(
                "spend cap",
                !cap.as_ref().is_some_and(|c| c.reached),
                match cap {
                    Some(c) => format!("${:.4} of ${:.2} this month", c.spent_usd, c.cap_usd),
                    None => "no cap set".into(),
                },
            );
        }
        Err(e) => add("database", false, e.to_string()),
    }
    match env.input.scan(&m.sources) {
        Ok(t) => add(
            "sources",
            !t.is_empty(),
            if t.is_empty() {
                format!("no sessions found in {}", m.sources.join(", "))
            } else {
                format!("{} sessions found", t.len())
            },
        ),
        Err(e) => add("sources", false, e.to_string()),
    }
    let ready = checks.iter().all(|c| c.ok);
    Ok(Readiness { ready, checks, v2 })
}

impl Readiness {
    /// Human-readable text.
    pub fn render(&self) -> String {
        let mut s = format!("{}\n", if self.ready { "ready" } else { "not ready" });
        for c in &self.checks {
            s.push_str(&format!(
                "  [{}] {}: {}\n",
                if c.ok { "ok" } else { "!!" },
                c.name,
                c.detail
            ));
        }
        let v = &self.v2;
        s.push_str(&format!(
            "v2: {} — {} of {} consolidated threads; summary {}; active version {} (readiness never switches it; set memories.version and restart)\n",
            if v.ready { "ready" } else { "not ready" },
            v.consolidated_threads,
            v.minimum,
            if v.summary_valid {
                "valid".to_string()
            } else {
                format!("not valid ({})", v.summary_problems.join("; "))
            },
            v.active_version
        ));
        s
    }
}

fn edit_config(env: &ControlEnv, f: impl FnOnce(&mut Config)) -> Result<()> {
    let path = &env.config_path;
    let mut cfg = Config::load(path)?.config;
    f(&mut cfg);
    cfg.save(path)
}

fn remove_generated_memory_dir(home: &Path) -> Result<bool> {
    let dir = home.join("memories");
    if !dir.exists() {
        return Ok(false);
    }
    std::fs::remove_dir_all(&dir)
        .map_err(|e| Error::io(format!("removing {}", dir.display()), e))?;
    Ok(true)
}

/// Run one command and return the text to print.
///
/// Errors: [`Error::Refused`] for `run`/`force` while the pipeline is off;
/// [`Error::InvalidArgument`] for `reset` without `--yes` or an unknown thread id;
/// [`Error::Busy`] for `reset` while jobs run; model resolution errors for `run`/`force`
/// (an unavailable explicit model fails the run, it is never swapped).
pub async fn execute(cmd: MemoriesCmd, env: &ControlEnv) -> Result<String> {
    execute_with_verdict(cmd, env).await.map(|(text, _)| text)
}

/// [`execute`], and whether the command achieved its work: `Some(reason)` when `memories
/// run`/`force` sent requests and none succeeded (every one failed), or the spend cap
/// stopped the run before anything was extracted. The binary prints the text, then the
/// reason on stderr, and exits 1, so a scheduler, a script or CI can tell.
///
/// Errors: as [`execute`].
pub async fn execute_with_verdict(
    cmd: MemoriesCmd,
    env: &ControlEnv,
) -> Result<(String, Option<String>)> {
    if matches!(cmd, MemoriesCmd::Run { .. } | MemoriesCmd::Force { .. }) {
        return run_command(cmd, env).await;
    }
    execute_other(cmd, env).await.map(|t| (t, None))
}

/// `memories run` / `force`: one phase-1 pass (and what follows it) now, with its verdict
/// (see [`execute_with_verdict`]).
async fn run_command(cmd: MemoriesCmd, env: &ControlEnv) -> Result<(String, Option<String>)> {
    let cfg = env.config()?;
    if !cfg.memories.enabled {
        return Err(Error::Refused(
            "the memory pipeline is off; run `codex-free memories on` first".into(),
        ));
    }
    let (trigger, json) = match cmd {
        MemoriesCmd::Force { json } => (Trigger::Force, json),
        MemoriesCmd::Run { json } => (Trigger::Manual, json),
        _ => (Trigger::Manual, false),
    };
    resolve_extract_model(
        &cfg.memories,
        env.secrets.as_ref(),
        PriceTable::bundled(),
        env.retry,
    )?;
    // Each written version runs on its own database, one after the other; one failing does
    // not stop the next.
    let mut runs = Vec::new();
    for version in cfg.memories.written_versions() {
        let store = env.store_for(version)?;
        let r = scheduler::run_once_version(
            &env.home,
            &cfg,
            &env.scheduler_deps(),
            &store,
            version,
            trigger,
            env.cancel.clone(),
        )
        .await?;
        runs.push((version, r));
    }
    let verdicts: Vec<String> = runs
        .iter()
        .filter_map(|(v, r)| {
            run_failure(r).map(|why| {
                if runs.len() > 1 {
                    format!("{v}: {why}")
                } else {
                    why
                }
            })
        })
        .collect();
    let verdict = (!verdicts.is_empty()).then(|| verdicts.join("; "));
    if json {
        let active = cfg.memories.active_version();
        let main = runs
            .iter()
            .find(|(v, _)| *v == active)
            .or(runs.first())
            .map(|(_, r)| r)
            .ok_or_else(|| Error::Store("no pipeline ran".into()))?;
        let out = RunOutcome {
            outcome: main.summary.outcome.clone(),
            achieved: verdict.is_none(),
            failure: verdict.clone(),
            run: main,
            pipelines: runs
                .iter()
                .map(|(v, r)| PipelineRun {
                    version: *v,
                    outcome: r.summary.outcome.clone(),
                    achieved: run_failure(r).is_none(),
                    failure: run_failure(r),
                    run: r,
                })
                .collect(),
        };
        let text = serde_json::to_string_pretty(&out)
            .map_err(|e| Error::Store(format!("serialising the run: {e}")))?;
        return Ok((text + "\n", verdict));
    }
    let mut text = String::new();
    for (v, r) in &runs {
        let prefix = if runs.len() > 1 {
            format!("{v}: ")
        } else {
            String::new()
        };
        text.push_str(&prefix);
        text.push_str(&match (&r.log_line, r.summary.outcome.as_str()) {
            (Some(l), _) => format!("{l}\n"),
            (None, "idle") => format!(
                "nothing to do: {} sessions seen, none eligible (idle < {} h, already extracted, off, or retrying)\n",
                r.scanned, cfg.memories.min_rollout_idle_hours
            ),
            (None, o) => match &r.summary.error {
                Some(e) => format!("{o}: {e}\n"),
                None => format!("{o}\n"),
            },
        });
    }
    Ok((text, verdict))
}

/// `memories run --json` / `force --json`: the run, with the same verdict the exit code
/// gives.
#[derive(Debug, Serialize)]
pub struct RunOutcome<'a> {
    /// The run's outcome (`ok`, `partial`, `failed`, `spend_cap`, `cancelled`, `idle`, ...).
    pub outcome: String,
    /// False exactly when the command exits 1: the run sent requests and none succeeded,
    /// or the spend cap stopped it before anything was extracted.
    pub achieved: bool,
    /// Why it achieved nothing (the line printed on stderr), `None` when `achieved`.
    pub failure: Option<String>,
    /// The active version's phase-1 report (counts, tokens, cost, the `memories.log` line).
    pub run: &'a crate::phase1::RunReport,
    /// Every pipeline that ran (both with `memories.dual_write`), each with its own verdict.
    pub pipelines: Vec<PipelineRun<'a>>,
}

/// One pipeline's part of [`RunOutcome`].
#[derive(Debug, Serialize)]
pub struct PipelineRun<'a> {
    /// `v1` or `v2`.
    pub version: MemoryVersion,
    /// Its run's outcome.
    pub outcome: String,
    /// Whether it achieved its work (see [`run_failure`]).
    pub achieved: bool,
    /// Why not, when it did not.
    pub failure: Option<String>,
    /// Its phase-1 report.
    pub run: &'a crate::phase1::RunReport,
}

/// Whether a phase-1 run achieved its work: `Some(reason)` when every request failed
/// (outcome `failed`: the jobs all failed, the key was rejected, the model is unavailable)
/// or the spend cap stopped it before anything was extracted; `None` otherwise (an idle
/// run with nothing eligible did all there was to do).
pub fn run_failure(r: &crate::phase1::RunReport) -> Option<String> {
    let s = &r.summary;
    let extracted = s.with_output + s.no_output;
    let last = s
        .error
        .as_deref()
        .map(|e| format!(" (last error: {e})"))
        .unwrap_or_default();
    match s.outcome.as_str() {
        "failed" if s.claimed > 0 => Some(format!(
            "memories run failed: {} of {} requests failed, none succeeded{last}",
            s.failed + s.released,
            s.claimed,
        )),
        "failed" => Some(format!("memories run failed before any request{last}")),
        "spend_cap" if extracted == 0 => Some(format!(
            "memories run stopped by the monthly spend cap before anything was extracted (memories.monthly_spend_cap_usd){last}"
        )),
        _ => None,
    }
}

/// `memories preview`: [`crate::phase1::preview`] rendered as text (a header per request,
/// then its system prompt and message verbatim) or JSON.
#[expect(
    clippy::expect_used,
    reason = "serialising a plain data struct with string keys to JSON cannot fail"
)]
async fn preview_command(
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
            "=== request {} of {}: session {} ({}) -> {}\n{} bytes, ~{} input tokens, input {} (at most {} with {} output tokens); {} redaction marker(s){}{}{}\n",
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

/// `memories outgoing | approve | deny`: the approval queue ([`crate::approval`]).
#[expect(
    clippy::expect_used,
    reason = "serialising a plain data struct with string keys to JSON cannot fail"
)]
fn queue_command(cmd: MemoriesCmd, env: &ControlEnv) -> Result<String> {
    match cmd {
        MemoriesCmd::Outgoing { text, json } => {
            let cfg = env.config()?;
            let q = crate::approval::list(
                &env.queue_stores(&cfg)?,
                cfg.memories.approval_mode(),
                text || json,
            )?;
            Ok(if json {
                serde_json::to_string_pretty(&q).expect("queue serialises") + "\n"
            } else {
                crate::approval::render(&q)
            })
        }
        MemoriesCmd::Approve { id, all, always } => {
            let cfg = env.config()?;
            let id = if all { None } else { id };
            let done = crate::approval::approve(&env.queue_stores(&cfg)?, id.as_deref(), always)?;
            let mut out = String::new();
            for q in &done {
                out.push_str(&format!(
                    "approved {} (session {}, {} bytes, sha256 {}): the next run sends it{}\n",
                    q.id,
                    q.thread_id,
                    q.bytes,
                    q.sha256,
                    if always {
                        format!(
                            "; {} is always allowed",
                            if q.project.is_empty() {
                                "(no project)"
                            } else {
                                &q.project
                            }
                        )
                    } else {
                        String::new()
                    }
                ));
            }
            if done.is_empty() {
                out.push_str("no request was waiting\n");
            }
            Ok(out)
        }
        MemoriesCmd::Deny { id } => {
            let cfg = env.config()?;
            let q = crate::approval::deny(&env.queue_stores(&cfg)?, &id)?;
            Ok(format!(
                "denied {}: never sent; memory for session {} off (memories thread on {} brings it back)\n",
                q.id, q.thread_id, q.thread_id
            ))
        }
        _ => Err(Error::InvalidArgument(
            "not an approval queue command".into(),
        )),
    }
}

#[expect(
    clippy::expect_used,
    reason = "serialising a plain data struct with string keys to JSON cannot fail"
)]
async fn execute_other(cmd: MemoriesCmd, env: &ControlEnv) -> Result<String> {
    match cmd {
        MemoriesCmd::Status { json } => {
            let st = status(env)?;
            Ok(if json {
                serde_json::to_string_pretty(&st).expect("status serialises") + "\n"
            } else {
                st.render()
            })
        }
        MemoriesCmd::Readiness { minimum } => Ok(readiness_with(
            env,
            minimum.unwrap_or(crate::v2::summary::DEFAULT_READY_MINIMUM),
        )?
        .render()),
        MemoriesCmd::Run { .. } | MemoriesCmd::Force { .. } => {
            run_command(cmd, env).await.map(|(t, _)| t)
        }
        MemoriesCmd::Preview {
            next,
            rollout,
            json,
        } => preview_command(env, next, rollout.as_deref(), json).await,
        MemoriesCmd::Forecast { json } => {
            let cfg = env.config()?;
            let f =
                crate::forecast::forecast(&env.store()?, &cfg.memories, env.input.clone()).await?;
            Ok(if json {
                serde_json::to_string_pretty(&f).expect("forecast serialises") + "\n"
            } else {
                f.render()
            })
        }
        MemoriesCmd::Outgoing { .. } | MemoriesCmd::Approve { .. } | MemoriesCmd::Deny { .. } => {
            queue_command(cmd, env)
        }
        MemoriesCmd::On | MemoriesCmd::Off => {
            let v = cmd == MemoriesCmd::On;
            edit_config(env, |c| c.memories.enabled = v)?;
            codex_free_core::events::emit(
                &env.home,
                codex_free_core::events::MemoryEvent::SettingsChanged,
            );
            Ok(format!("memory pipeline {}\n", on(v)))
        }
        MemoriesCmd::Generate { state } => {
            edit_config(env, |c| c.memories.generate_memories = state.on())?;
            Ok(format!(
                "memory generation for new sessions {}\n",
                on(state.on())
            ))
        }
        MemoriesCmd::Use { state } => {
            edit_config(env, |c| c.memories.use_memories = state.on())?;
            // Off removes the agents' linked copies, on brings them back.
            codex_free_core::events::emit(
                &env.home,
                codex_free_core::events::MemoryEvent::SettingsChanged,
            );
            Ok(format!("memory use in new sessions {}\n", on(state.on())))
        }
        MemoriesCmd::Thread { state, id } => {
            env.store()?.set_thread_memory(&id, state.on())?;
            Ok(format!(
                "memory for session {id} {}{}\n",
                on(state.on()),
                if state.on() {
                    ""
                } else {
                    " (its extracted memory was deleted)"
                }
            ))
        }
        MemoriesCmd::Reset { yes } => {
            if !yes {
                return Err(Error::InvalidArgument(
                    "reset deletes every extracted memory, the memory jobs and the generated memory folder (transcripts and spend history are kept); run again with --yes".into(),
                ));
            }
            let (mut outputs, mut jobs) = env.store()?.clear_memory_data()?;
            let mut dir = remove_generated_memory_dir(&env.home)?;
            // V2's own database and folder go too (its readiness progress with them).
            if crate::v2::db_path(&env.home, MemoryVersion::V2).is_file() {
                let (o, j) = env.store_for(MemoryVersion::V2)?.clear_memory_data()?;
                outputs += o;
                jobs += j;
            }
            let v2_dir = crate::v2::folder(&env.home, MemoryVersion::V2);
            if v2_dir.exists() {
                std::fs::remove_dir_all(&v2_dir)
                    .map_err(|e| Error::io(format!("removing {}", v2_dir.display()), e))?;
                dir = true;
            }
            Ok(format!(
                "reset: {outputs} extracted memories and {jobs} jobs deleted{}; original transcripts untouched\n",
                if dir {
                    ", generated memory folders removed"
                } else {
                    ""
                }
            ))
        }
    }
}

/// Default timeout applied by the binary around `run`/`force` when it wants one.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(3600);

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use codex_free_secrets::MemoryStore;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        cmd: MemoriesCmd,
    }

    #[test]
    fn cli_shapes() {
        let p = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("memories").chain(args.iter().copied()))
                .map(|c| c.cmd)
        };
        assert_eq!(
            p(&["thread", "off", "abc"]).unwrap(),
            MemoriesCmd::Thread {
                state: OnOff::Off,
                id: "abc".into()
            }
        );
        assert_eq!(
            p(&["generate", "on"]).unwrap(),
            MemoriesCmd::Generate { state: OnOff::On }
        );
        assert_eq!(p(&["reset"]).unwrap(), MemoriesCmd::Reset { yes: false });
        assert_eq!(
            p(&["status", "--json"]).unwrap(),
            MemoriesCmd::Status { json: true }
        );
        assert!(p(&["use", "maybe"]).is_err());
    }

    #[tokio::test]
    async fn switches_write_overrides_and_reset_needs_yes() {
        let d = tempfile::tempdir().unwrap();
        let mut env = ControlEnv::new(d.path().to_path_buf(), Arc::new(MemoryStore::default()));
        env.input = Arc::new(NoSources);
        execute(MemoriesCmd::Off, &env).await.unwrap();
        execute(MemoriesCmd::Generate { state: OnOff::Off }, &env)
            .await
            .unwrap();
        let text = std::fs::read_to_string(d.path().join(CONFIG_FILE)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"memories": {"enabled": false, "generate_memories": false}})
        );
        let e = execute(MemoriesCmd::Run { json: false }, &env)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "refused");
        execute(MemoriesCmd::On, &env).await.unwrap();
        let text = std::fs::read_to_string(d.path().join(CONFIG_FILE)).unwrap();
        assert!(!text.contains("enabled\": "), "back to default: {text}");
        let e = execute(MemoriesCmd::Reset { yes: false }, &env)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("--yes"));
        std::fs::create_dir_all(d.path().join("memories/rollout_summaries")).unwrap();
        let out = execute(MemoriesCmd::Reset { yes: true }, &env)
            .await
            .unwrap();
        assert!(out.contains("generated memory folders removed"), "{out}");
        assert!(!d.path().join("memories").exists());
        let st = execute(MemoriesCmd::Status { json: false }, &env)
            .await
            .unwrap();
        assert!(st.contains("generate: off"), "{st}");
        assert!(st.contains("openai/gpt-5-mini (default)"), "{st}");
        let r = readiness(&env).unwrap();
        assert!(!r.ready);
        assert!(r.checks.iter().any(|c| c.name == "sources" && !c.ok));
    }
}
