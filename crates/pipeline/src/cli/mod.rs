//! `codex-free memories ...`: status, readiness, run, force, on/off, generate
//! on/off, use on/off, thread on/off, reset. [`MemoriesCmd`] is the clap subcommand the
//! binary mounts; [`execute`] returns the text to print. Switches write the config file
//! through [`Config::save`] (overrides only). The same functions back the UI's API.
//!
//! Invariant: nothing here deletes or edits an original transcript; `reset` removes only
//! what the pipeline generated (stage-1 outputs, memory jobs, `<home>/memories/`), keeps
//! the spend history, asks for `--yes` and refuses while a job holds a lease.

mod preview;
mod queue;
mod readiness;
mod run;
mod status;

use preview::preview_command;
use queue::queue_command;
pub use readiness::{Check, Readiness, readiness, readiness_with, v2_readiness};
use run::run_command;
pub use run::{PipelineRun, RunOutcome, run_failure};
use status::on;
pub use status::{ModelStatus, Status, status};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::phase1::{Redactor, RolloutInput};
use crate::scheduler::{self, SchedulerDeps};
use crate::transcript_input::{SecretRedactor, TranscriptInput};
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::config::{CONFIG_FILE, Config, MemoryVersion};
use codex_free_models::RetryPolicy;
use codex_free_secrets::SecretStore;
use codex_free_store::{Clock, Store, SystemClock};

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

fn edit_config(env: &ControlEnv, f: impl FnOnce(&mut Config)) -> Result<()> {
    let path = &env.config_path;
    let mut cfg = Config::load(path)?.config;
    f(&mut cfg);
    cfg.save(path)
}

pub(super) fn remove_generated_memory_dir(home: &Path) -> Result<bool> {
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
