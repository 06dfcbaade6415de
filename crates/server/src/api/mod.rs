//! The one service the UI talks to. [`ApiService`] answers every page of the web UI
//! (dashboard, settings, models & keys, runs & costs, memory) and every tray action; the
//! HTTP routes in [`http`] and the Tauri commands in `src-tauri/` are thin wrappers over
//! its methods, so a browser and the desktop window see the same behaviour.
//!
//! Parts of the process the service does not own are reached through the traits in
//! [`hooks`] (MCP server, pipeline, model catalog) and [`usage::UsageSource`] (usage rows);
//! the hosting binary plugs real ones in with the `with_*` builders.
//!
//! Invariant: provider keys go only into the [`SecretStore`] and come back only as a
//! 4-character hint; a config change with any field error writes nothing; config writes
//! hold only overrides and happen under the file's lock (read-merge-validate-write).

pub mod agent_usage;
pub mod catalog;
pub mod connect;
pub mod csv;
pub mod dto;
pub mod forecast_view;
pub mod hooks;
pub mod http;
pub mod memops;
pub mod memview;
pub mod outgoing;
pub mod schema;
pub mod store_usage;
pub mod usage;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::Utc;
use serde_json::Value;

use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::config::{CONFIG_FILE, Config};
use codex_free_secrets::{KeyFrom, Secret, SecretStore, env_var_for};
use dto::*;
use hooks::{ModelCatalog, NoPipeline, NoServer, PipelineControl, ServerControl};
use usage::UsageSource;

/// Most recent errors kept for the dashboard.
const MAX_RECENT_ERRORS: usize = 10;
/// Longest accepted API key, bytes (real keys are under 300).
const MAX_KEY_BYTES: usize = 4096;

/// The UI's service. Cheap to share behind an `Arc`; every method is synchronous and may
/// block on I/O (call it from a blocking thread in async code).
pub struct ApiService {
    home: PathBuf,
    secrets: Arc<dyn SecretStore>,
    keyring: KeyringStatus,
    usage: Arc<dyn UsageSource>,
    catalog: Arc<dyn ModelCatalog>,
    server: Arc<dyn ServerControl>,
    pipeline: Arc<dyn PipelineControl>,
    errors: Mutex<VecDeque<RecentError>>,
    /// The config the host process started with (its served memory version), when known.
    startup: Option<Config>,
}

fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

impl ApiService {
    /// A service over the state home `home` storing keys in `secrets` (described by
    /// `keyring`, see [`codex_free_secrets::keyring::open`]). Usage comes from
    /// `<home>/state.sqlite` ([`store_usage::StoreUsage`]) and models from the bundled price
    /// table ([`catalog::PriceCatalog`]); server and pipeline start as honest stand-ins
    /// ([`NoServer`], [`NoPipeline`]). Replace any part with the `with_*` builders.
    pub fn new(
        home: impl Into<PathBuf>,
        secrets: Arc<dyn SecretStore>,
        keyring: KeyringStatus,
    ) -> Self {
        let home = home.into();
        Self {
            usage: Arc::new(store_usage::StoreUsage::new(&home)),
            catalog: Arc::new(catalog::PriceCatalog::new(&home)),
            home,
            secrets,
            keyring,
            server: Arc::new(NoServer),
            pipeline: Arc::new(NoPipeline::default()),
            errors: Mutex::new(VecDeque::new()),
            startup: None,
        }
    }

    /// The host process started with `config`: settings read once at start (which memory
    /// version is served, dual-write) are shown as running, the file's differing values as
    /// pending a restart. Without it the file is taken as running.
    pub fn with_startup_config(mut self, config: Config) -> Self {
        self.startup = Some(config);
        self
    }

    /// Use `usage` for runs, totals and spend.
    pub fn with_usage(mut self, usage: Arc<dyn UsageSource>) -> Self {
        self.usage = usage;
        self
    }
    /// Use `catalog` for providers, models, prices and connection tests.
    pub fn with_catalog(mut self, catalog: Arc<dyn ModelCatalog>) -> Self {
        self.catalog = catalog;
        self
    }
    /// Use `server` for the MCP server's state and start/stop.
    pub fn with_server(mut self, server: Arc<dyn ServerControl>) -> Self {
        self.server = server;
        self
    }
    /// Use `pipeline` for pipeline state and controls.
    pub fn with_pipeline(mut self, pipeline: Arc<dyn PipelineControl>) -> Self {
        self.pipeline = pipeline;
        self
    }

    /// The state home.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// `<home>/codex.config.json`.
    pub fn config_path(&self) -> PathBuf {
        self.home.join(CONFIG_FILE)
    }

    /// Remember an error for the dashboard (newest first, at most 10). The message must not
    /// contain a secret.
    pub fn record_error(&self, source: &str, message: impl Into<String>) {
        let mut q = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        q.push_front(RecentError {
            time_ms: now_ms(),
            source: source.into(),
            message: message.into(),
        });
        q.truncate(MAX_RECENT_ERRORS);
    }

    /// The effective config; an unreadable or invalid file yields the defaults and the
    /// reason (so pages still render and the user can repair it by saving).
    pub fn current_config(&self) -> (Config, Vec<String>) {
        match Config::load(&self.config_path()) {
            Ok(l) => (l.config, l.warnings),
            Err(e) => (
                Config::default(),
                vec![format!(
                    "{e} — showing defaults; saving replaces the file (the old one is kept beside it)"
                )],
            ),
        }
    }

    // ---- dashboard -------------------------------------------------------------------

    /// Spend today and this month (UTC) against `memories.monthly_spend_cap_usd`: both sums
    /// come from [`UsageSource::spend_since`], the month from the store's own
    /// [`codex_free_store::usage::month_start`], as the pipeline's cap check does.
    pub fn spend(&self) -> Result<Spend> {
        let (cfg, _) = self.current_config();
        let now = Utc::now();
        let month_start = codex_free_store::usage::month_start(now.timestamp()) * 1000;
        let day_start = now
            .date_naive()
            .and_time(chrono::NaiveTime::MIN)
            .and_utc()
            .timestamp_millis();
        let month = self.usage.spend_since(month_start)?;
        let today = self.usage.spend_since(day_start)?;
        let cap = cfg.memories.monthly_spend_cap_usd;
        Ok(Spend {
            today_usd: today.usd,
            month_usd: month.usd,
            cap_usd: cap,
            cap_reached: cap.is_some_and(|c| month.usd >= c),
            unpriced_requests: month.unpriced_requests.max(0) as u32,
        })
    }

    /// Everything the dashboard shows. Failures of parts (usage unreadable) become entries
    /// in `recent_errors` rather than a failed call.
    pub fn status(&self) -> Result<Status> {
        let mut recent: Vec<RecentError> = self
            .errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect();
        let spend = match self.spend() {
            Ok(s) => s,
            Err(e) => {
                recent.push(RecentError {
                    time_ms: now_ms(),
                    source: "usage".into(),
                    message: e.to_string(),
                });
                Spend {
                    today_usd: 0.0,
                    month_usd: 0.0,
                    cap_usd: None,
                    cap_reached: false,
                    unpriced_requests: 0,
                }
            }
        };
        if let Ok(rows) = self.usage.requests(Some(now_ms() - 7 * 86_400_000), None) {
            recent.extend(rows.into_iter().filter(|r| r.outcome == "failed").map(|r| {
                RecentError {
                    time_ms: r.time_ms,
                    source: r.phase,
                    message: r
                        .error
                        .unwrap_or_else(|| format!("request to {} failed", r.model)),
                }
            }));
        }
        recent.sort_by_key(|e| std::cmp::Reverse(e.time_ms));
        recent.truncate(MAX_RECENT_ERRORS);
        let (cfg, _) = self.current_config();
        let mut pipeline = self.pipeline.status();
        let can_act = matches!(
            pipeline.state,
            PipelineState::Idle | PipelineState::Failing | PipelineState::Unavailable
        );
        if !cfg.memories.enabled && pipeline.state != PipelineState::Running {
            pipeline.state = PipelineState::Paused;
            pipeline.message = "paused: memories.enabled is false (Resume turns it on)".into();
            pipeline.fix = None;
        } else if let Some(b) = can_act
            .then(|| codex_free_models::check::readiness(&cfg.memories, self.secrets.as_ref()))
            .flatten()
        {
            pipeline.state = PipelineState::NoModel;
            pipeline.message = b.reason;
            pipeline.next_run_ms = None;
            pipeline.fix = Some(Fix {
                text: b.fix,
                page: Some("models".into()),
            });
        } else if spend.cap_reached
            && matches!(pipeline.state, PipelineState::Idle | PipelineState::Failing)
        {
            pipeline.state = PipelineState::CapReached;
            pipeline.message =
                "monthly spend cap reached: no model calls until next month or a higher cap".into();
            pipeline.fix = Some(Fix {
                text: "raise memories.monthly_spend_cap_usd in Settings, or wait for next month"
                    .into(),
                page: Some("settings".into()),
            });
        }
        Ok(Status {
            version: env!("CARGO_PKG_VERSION").into(),
            home: self.home.display().to_string(),
            server: self.server.status(),
            pipeline,
            spend,
            keyring: self.keyring.clone(),
            recent_errors: recent,
            sandbox: {
                let sb = codex_free_tools::exec::sandbox_status(&cfg.exec);
                SandboxView {
                    enforced: sb.enforced,
                    mechanism: sb.mechanism,
                    summary: sb.summary,
                    warning: sb.warning,
                }
            },
            transcripts: {
                let u = codex_free_transcripts::sources::mcp::usage(&self.home);
                TranscriptsView {
                    files: u.files,
                    bytes: u.bytes,
                    retention_days: cfg.memories.mcp_transcript_retention_days,
                }
            },
            codex_memory: codex_free_connect::Target::from_env(&self.home, &self.config_path())
                .ok()
                .and_then(|t| {
                    codex_free_connect::codex_memory_gap(
                        &t,
                        &self.home,
                        &codex_free_connect::status(&t),
                    )
                }),
        })
    }

    // ---- settings --------------------------------------------------------------------

    /// The Settings page: schema, effective values, the file's overrides, warnings.
    #[expect(
        clippy::expect_used,
        reason = "serialising a plain data struct with string keys to JSON cannot fail"
    )]
    pub fn get_config(&self) -> Result<ConfigView> {
        let (cfg, warnings) = self.current_config();
        Ok(ConfigView {
            path: self.config_path().display().to_string(),
            fields: schema::fields(),
            effective: serde_json::to_value(&cfg).expect("config serialises"),
            overrides: cfg.overrides(),
            warnings,
        })
    }

    #[expect(
        clippy::expect_used,
        reason = "serialising a plain data struct with string keys to JSON cannot fail"
    )]
    fn merged(&self, patch: &Value) -> std::result::Result<Config, Vec<FieldError>> {
        let mut patch = patch.clone();
        schema::normalise(&mut patch);
        let errors = schema::check_patch(&patch);
        if !errors.is_empty() {
            return Err(errors);
        }
        let (cfg, _) = self.current_config();
        let mut base = serde_json::to_value(&cfg).expect("config serialises");
        schema::merge(&mut base, &patch);
        schema::validate_merged(&base)
    }

    /// Check a change without saving: the same checks as [`Self::save_config`].
    pub fn validate_config(&self, patch: &Value) -> ConfigSaveResult {
        match self.merged(patch) {
            Ok(cfg) => ConfigSaveResult {
                saved: false,
                errors: Vec::new(),
                overrides: cfg.overrides(),
                restart_required: cfg.restart_changes(&self.current_config().0),
            },
            Err(errors) => ConfigSaveResult {
                saved: false,
                errors,
                overrides: schema::empty(),
                restart_required: Vec::new(),
            },
        }
    }

    /// Merge `patch` (nested like the file, e.g. `{"output":{"maxFileLines":50}}`) into the
    /// current config, validate, and write the overrides atomically. Any field error means
    /// nothing is written and `saved` is false. A file that was invalid before is kept as
    /// `codex.config.json.corrupt-<time>` and replaced.
    ///
    /// Errors: [`Error::Io`] when the file cannot be written.
    #[expect(
        clippy::expect_used,
        reason = "serialising a plain data struct with string keys to JSON cannot fail"
    )]
    pub fn save_config(&self, patch: &Value) -> Result<ConfigSaveResult> {
        let path = self.config_path();
        codex_free_core::home::with_lock(&path, || {
            let before = self.current_config().0;
            let cfg = match self.merged(patch) {
                Ok(c) => c,
                Err(errors) => {
                    return Ok(ConfigSaveResult {
                        saved: false,
                        errors,
                        overrides: schema::empty(),
                        restart_required: Vec::new(),
                    });
                }
            };
            if path.exists() && Config::load(&path).is_err() {
                let backup = codex_free_core::home::move_aside(&path)?;
                tracing::warn!(backup = %backup.display(), "invalid config moved aside before saving");
            }
            let overrides = cfg.overrides();
            let text = serde_json::to_string_pretty(&overrides).expect("json");
            codex_free_core::home::write_atomic_unlocked(&path, format!("{text}\n").as_bytes())?;
            tracing::info!(path = %path.display(), "config saved");
            if (before.memories.enabled, before.memories.use_memories)
                != (cfg.memories.enabled, cfg.memories.use_memories)
            {
                // The agents' linked memory copies follow the switch (removed when off).
                codex_free_core::events::emit(
                    &self.home,
                    codex_free_core::events::MemoryEvent::SettingsChanged,
                );
            }
            Ok(ConfigSaveResult {
                saved: true,
                errors: Vec::new(),
                overrides,
                restart_required: cfg.restart_changes(&before),
            })
        })
    }

    // ---- models & keys ---------------------------------------------------------------

    fn provider(&self, id: &str) -> Result<hooks::Provider> {
        self.catalog
            .providers()
            .into_iter()
            .find(|p| p.id == id)
            .ok_or_else(|| {
                let known: Vec<_> = self.catalog.providers().into_iter().map(|p| p.id).collect();
                Error::InvalidArgument(format!(
                    "provider \"{id}\" is unknown (known: {})",
                    known.join(", ")
                ))
            })
    }

    /// Where `provider`'s key comes from and its last 4 characters.
    ///
    /// Errors: [`Error::InvalidArgument`] for an unknown provider; [`Error::Secrets`] when
    /// the store is unreachable.
    pub fn key_status(&self, provider: &str) -> Result<KeyStatus> {
        self.provider(provider)?;
        let (source, hint) = match codex_free_secrets::lookup(self.secrets.as_ref(), provider)? {
            Some((s, KeyFrom::Store)) => (KeySource::Keyring, Some(s.hint())),
            Some((s, KeyFrom::Env)) => (KeySource::Env, Some(s.hint())),
            None => (KeySource::None, None),
        };
        Ok(KeyStatus {
            source,
            hint,
            env_var: env_var_for(provider),
        })
    }

    /// Store `key` for `provider` in the secret store (updating an existing entry in
    /// place). The key is trimmed; it must be non-empty, at most 4096 bytes, with no
    /// whitespace or control characters inside.
    ///
    /// Errors: [`Error::InvalidArgument`] (unknown provider, bad key); [`Error::Secrets`].
    pub fn set_key(&self, provider: &str, key: &str) -> Result<KeyStatus> {
        self.provider(provider)?;
        let key = key.trim();
        if key.is_empty() {
            return Err(Error::InvalidArgument(
                "key is empty: paste the provider's API key".into(),
            ));
        }
        if key.len() > MAX_KEY_BYTES {
            return Err(Error::InvalidArgument(format!(
                "key is longer than {MAX_KEY_BYTES} bytes"
            )));
        }
        if key.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(Error::InvalidArgument(
                "key contains spaces or control characters: paste only the key".into(),
            ));
        }
        self.secrets.set(provider, &Secret::new(key))?;
        tracing::info!(provider, "provider key stored");
        // A pass that waited for this key starts now, not at the next periodic tick.
        if let Err(e) = self.pipeline.run_now() {
            tracing::debug!(error = %e, "no pipeline to nudge after a key was stored");
        }
        self.key_status(provider)
    }

    /// Remove `provider`'s key from the secret store (absent is fine).
    pub fn delete_key(&self, provider: &str) -> Result<KeyStatus> {
        self.provider(provider)?;
        self.secrets.delete(provider)?;
        tracing::info!(provider, "provider key deleted");
        self.key_status(provider)
    }

    /// Ask the catalog to make one authenticated request to `provider` with its key.
    pub fn test_connection(&self, provider: &str) -> Result<ConnectionTest> {
        let p = self.provider(provider)?;
        let key = codex_free_secrets::resolve(self.secrets.as_ref(), provider)?;
        if p.needs_key && key.is_none() {
            return Ok(ConnectionTest {
                ok: false,
                message: format!("no key for {provider}: enter one first"),
                latency_ms: None,
                model: None,
                cost_usd: None,
            });
        }
        // One real request to the model this provider would serve: the stage model when
        // it is this provider's, else its cheapest capable model. Only a provider with no
        // known model falls back to listing models (which proves the key, not the model).
        let (cfg, _) = self.current_config();
        let of_provider = |spec: &Option<String>| {
            spec.clone().filter(|m| {
                codex_free_models::ModelRef::parse(m).is_ok_and(|r| {
                    r.provider == provider || r.provider.starts_with(&format!("{provider}-"))
                })
            })
        };
        // A stage without a model uses the default one: that is the model to test.
        let stage = |m: &Option<String>| {
            m.clone()
                .or_else(|| Some(codex_free_models::DEFAULT_EXTRACT_MODEL.to_string()))
        };
        let spec = of_provider(&stage(&cfg.memories.extract_model))
            .or_else(|| of_provider(&stage(&cfg.memories.consolidation_model)))
            .or_else(|| {
                cheap_choices(&self.catalog.models())
                    .into_iter()
                    .find(|c| c.provider == provider)
                    .map(|c| c.id)
            })
            .or_else(|| {
                self.catalog
                    .local_servers()
                    .into_iter()
                    .find(|l| l.provider == provider)
                    .and_then(|l| l.models.into_iter().next())
            });
        match spec {
            Some(spec) => match self.catalog.test_model(&spec, self.secrets.as_ref()) {
                Ok(t) => Ok(t),
                Err(_) => self.catalog.test_connection(provider, key.as_ref()),
            },
            None => self.catalog.test_connection(provider, key.as_ref()),
        }
    }

    /// Plain-text diagnostic info to paste into a bug report: versions, OS, key store,
    /// command sandbox, server, pipeline, the coding agents' connection state and the last
    /// runs. It never holds a key or token: none is read here, and the text still passes
    /// the redactor before it is returned.
    pub fn diagnostics(&self) -> Result<String> {
        use std::fmt::Write as _;
        let st = self.status()?;
        let mut t = String::new();
        let os_release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|v| format!(" (kernel {})", v.trim()))
            .unwrap_or_default();
        let _ = writeln!(t, "Codex Free {}", st.version);
        let _ = writeln!(
            t,
            "OS: {} {}{os_release}",
            std::env::consts::OS,
            std::env::consts::ARCH
        );
        let _ = writeln!(t, "State home: {}", st.home);
        let _ = writeln!(
            t,
            "Key store: {}{}{}",
            st.keyring.backend,
            if st.keyring.fallback {
                " (fallback)"
            } else {
                ""
            },
            st.keyring
                .error
                .as_deref()
                .map(|e| format!(" — {e}"))
                .unwrap_or_default()
        );
        let _ = writeln!(
            t,
            "Server tokens: {}",
            crate::http::auth::TokenVault::for_home(&self.home, crate::http::auth::TokenKind::Mcp)
                .describe()
        );
        let _ = writeln!(
            t,
            "Command sandbox: {} ({}){}",
            if st.sandbox.enforced { "on" } else { "off" },
            st.sandbox.mechanism,
            st.sandbox
                .warning
                .as_deref()
                .map(|w| format!(" — {w}"))
                .unwrap_or_default()
        );
        let _ = writeln!(
            t,
            "MCP server: {:?}{}, {} client(s) in the last 5 minutes{}",
            st.server.state,
            st.server
                .url
                .as_deref()
                .map(|u| format!(" at {u}"))
                .unwrap_or_default(),
            st.server.clients,
            st.server
                .error
                .as_deref()
                .map(|e| format!(" — {e}"))
                .unwrap_or_default()
        );
        let _ = writeln!(
            t,
            "Pipeline: {:?} — {}",
            st.pipeline.state, st.pipeline.message
        );
        let (cfg, _) = self.current_config();
        let _ = writeln!(
            t,
            "Models: extraction {}, consolidation {}",
            cfg.memories.extract_model.as_deref().unwrap_or("default"),
            cfg.memories
                .consolidation_model
                .as_deref()
                .unwrap_or("default")
        );
        let _ = writeln!(
            t,
            "Spend: today {:.4} USD, this month {:.4} USD, cap {}",
            st.spend.today_usd,
            st.spend.month_usd,
            st.spend
                .cap_usd
                .map(|c| format!("{c} USD"))
                .unwrap_or_else(|| "none".into())
        );
        match self.connect_view() {
            Ok(v) => {
                if v.clients.is_empty() {
                    let _ = writeln!(t, "Clients: none known to this process");
                }
                for c in v.clients {
                    let _ = writeln!(
                        t,
                        "Client {}: installed {}, connected {}, linked {}{}",
                        c.client,
                        c.installed,
                        c.connected,
                        c.linked,
                        c.problem.map(|p| format!(" — {p}")).unwrap_or_default()
                    );
                }
            }
            Err(e) => {
                let _ = writeln!(t, "Clients: unavailable ({e})");
            }
        }
        match self.usage.runs(None, None) {
            Ok(mut runs) => {
                runs.sort_by_key(|r| std::cmp::Reverse(r.time_ms));
                for r in runs.iter().take(5) {
                    let _ = writeln!(
                        t,
                        "Run {} {} {} {}: {}{}",
                        chrono::DateTime::from_timestamp_millis(r.time_ms)
                            .map(|d| d.format("%Y-%m-%d %H:%M").to_string())
                            .unwrap_or_default(),
                        r.phase,
                        r.model.as_deref().unwrap_or("-"),
                        r.trigger,
                        r.outcome.as_deref().unwrap_or("?"),
                        r.error
                            .as_deref()
                            .map(|e| format!(" — {e}"))
                            .unwrap_or_default()
                    );
                }
            }
            Err(e) => {
                let _ = writeln!(t, "Runs: unavailable ({e})");
            }
        }
        for e in st.recent_errors.iter().take(5) {
            let when = chrono::DateTime::from_timestamp_millis(e.time_ms)
                .map(|d| d.format("%Y-%m-%d %H:%M").to_string())
                .unwrap_or_default();
            let _ = writeln!(t, "Error {when} {}: {}", e.source, e.message);
        }
        Ok(codex_free_redact::redact_string(t))
    }

    /// The Models & keys page. A store error shows as `keyring.error` with every key absent.
    pub fn models(&self) -> Result<ModelsView> {
        let (cfg, _) = self.current_config();
        let mut keyring = self.keyring.clone();
        let providers = self
            .catalog
            .providers()
            .into_iter()
            .map(|p| {
                let key = self.key_status(&p.id).unwrap_or_else(|e| {
                    keyring.error.get_or_insert_with(|| e.to_string());
                    KeyStatus {
                        source: KeySource::None,
                        hint: None,
                        env_var: env_var_for(&p.id),
                    }
                });
                ProviderInfo {
                    id: p.id,
                    name: p.name,
                    base_url: p.base_url,
                    needs_key: p.needs_key,
                    key,
                }
            })
            .collect();
        let models = self.catalog.models();
        Ok(ModelsView {
            providers,
            models: models.clone(),
            extract_model: cfg.memories.extract_model,
            consolidation_model: cfg.memories.consolidation_model,
            default_model: self.catalog.default_model(),
            keyring,
            price_table_source: codex_free_models::PriceTable::bundled()
                .source()
                .to_string(),
            cheap: cheap_choices(&models),
            local: self.catalog.local_servers(),
        })
    }

    // ---- runs & costs ----------------------------------------------------------------

    /// What the backlog will cost (`memories forecast`): no model call, no key needed.
    ///
    /// Errors: config, database or transcript errors.
    pub fn forecast(&self) -> Result<forecast_view::ForecastView> {
        let cfg = Config::load(&self.config_path())?.config;
        let store = codex_free_store::Store::open_in_home(&self.home)?;
        let input = codex_free_pipeline::transcript_input::TranscriptInput::from_env(&self.home);
        codex_free_pipeline::forecast::forecast_blocking(&store, &cfg.memories, &input)
            .map(Into::into)
    }

    /// The kept sealed bytes of the request with receipt hash `sha256`
    /// ([`codex_free_pipeline::sent::read_kept`]).
    ///
    /// Errors: not a hash, nothing kept under it, or the file changed since it was sent.
    pub fn sent_request(&self, sha256: &str) -> Result<SentRequest> {
        Ok(SentRequest {
            text: codex_free_pipeline::sent::read_kept(&self.home, sha256)?,
            sha256: sha256.to_string(),
        })
    }

    /// Runs, totals per day/week/month and filter menus for `filter`.
    pub fn runs(&self, filter: &RunFilter) -> Result<RunsView> {
        Ok(usage::view(
            self.usage.requests(None, None)?,
            self.usage.runs(None, None)?,
            filter,
        ))
    }

    /// CSV of the requests matching `filter` (see [`usage::csv`]).
    pub fn runs_csv(&self, filter: &RunFilter) -> Result<String> {
        Ok(usage::csv(
            self.usage.requests(filter.since_ms, filter.until_ms)?,
            filter,
        ))
    }

    // ---- memory ----------------------------------------------------------------------

    /// The Memory page (read-only).
    ///
    /// Errors: a memory version's database exists but cannot be read.
    pub fn memory(&self) -> Result<MemoryView> {
        let (cfg, _) = self.current_config();
        let mut view = memview::view(&self.home, &cfg);
        view.versions = codex_free_pipeline::v2::state::versions_state(
            &self.home,
            self.startup.as_ref().unwrap_or(&cfg),
            &cfg,
            Arc::new(codex_free_store::SystemClock),
        )?;
        Ok(view)
    }

    // ---- audit -----------------------------------------------------------------------

    /// The newest `limit` (1..=200, default 20 when 0) failed or refused tool calls of the
    /// audit trail, newest first. Errors: an audit file exists but cannot be read.
    pub fn refusals(&self, limit: usize) -> Result<RefusalsView> {
        let (cfg, _) = self.current_config();
        let limit = if limit == 0 { 20 } else { limit.min(200) };
        let log = codex_free_core::audit::AuditLog::new(&self.home);
        let refusals = log
            .last_errors(limit)?
            .into_iter()
            .map(|e| AuditRefusal {
                time_ms: e.time_ms,
                tool: e.tool,
                code: e.error.unwrap_or_default(),
                conversation: e.conversation,
                duration_ms: e.duration_ms,
            })
            .collect();
        let runs_later = log
            .last_runs_later(limit)?
            .into_iter()
            .map(|e| RunsLaterChange {
                time_ms: e.time_ms,
                tool: e.tool,
                paths: e.runs_later,
                conversation: e.conversation,
            })
            .collect();
        Ok(RefusalsView {
            enabled: cfg.audit.enabled,
            file: log.path().display().to_string(),
            refusals,
            runs_later,
        })
    }

    // ---- control ---------------------------------------------------------------------

    /// Run the pipeline now.
    pub fn pipeline_run_now(&self) -> Result<ActionResult> {
        self.pipeline.run_now()
    }
    /// Pause (`true`) or resume (`false`) the pipeline: writes `memories.enabled` (so every
    /// process sharing the state home, and the next start, see it; the scheduler re-reads
    /// the config before each run), then tells the in-process pipeline.
    pub fn pipeline_pause(&self, paused: bool) -> Result<ActionResult> {
        let r = self.save_config(&serde_json::json!({"memories": {"enabled": !paused}}))?;
        if !r.saved {
            let why: Vec<_> = r.errors.iter().map(|e| e.message.clone()).collect();
            return Ok(ActionResult {
                ok: false,
                message: format!("config not saved: {}", why.join("; ")),
            });
        }
        self.pipeline.set_paused(paused)
    }
    /// Start the MCP server.
    pub fn server_start(&self) -> Result<ActionResult> {
        self.server.start()
    }
    /// Stop the MCP server.
    pub fn server_stop(&self) -> Result<ActionResult> {
        self.server.stop()
    }
}

/// Map a core error to the UI's error body; config errors carry their field errors.
pub fn api_error(e: &Error) -> ApiError {
    let fields = match e {
        Error::InvalidConfig { fields, .. } => {
            fields.iter().cloned().map(FieldError::from).collect()
        }
        _ => Vec::new(),
    };
    ApiError {
        code: e.code().into(),
        message: e.to_string(),
        fields,
    }
}

/// Smallest context window a first-choice model must have, tokens: a long session
/// rendered for phase 1 needs room, and tiny-window models fail it.
pub const CHEAP_MIN_CONTEXT: u64 = 100_000;

/// The cheapest capable model of each hosted provider, cheapest first: priced, a context
/// window of at least [`CHEAP_MIN_CONTEXT`], no dated snapshot ids (`-2025-08-07`), ranked
/// by a 3:1 input:output blended price (extraction reads far more than it writes).
pub fn cheap_choices(models: &[ModelInfo]) -> Vec<CheapChoice> {
    let dated = |id: &str| {
        id.rsplit(['-', '@'])
            .next()
            .is_some_and(|t| t.len() >= 4 && t.chars().all(|c| c.is_ascii_digit()))
            || id.contains("-20")
    };
    let blended = |i: f64, o: f64| 0.75 * i + 0.25 * o;
    let mut best: Vec<CheapChoice> = Vec::new();
    for m in models {
        let (Some(i), Some(o)) = (m.input_per_mtok_usd, m.output_per_mtok_usd) else {
            continue;
        };
        if m.context_window.unwrap_or(0) < CHEAP_MIN_CONTEXT || dated(&m.id) || i <= 0.0 {
            continue;
        }
        let c = CheapChoice {
            id: m.id.clone(),
            provider: m.provider.clone(),
            input_per_mtok_usd: i,
            output_per_mtok_usd: o,
            context_window: m.context_window,
        };
        match best.iter_mut().find(|b| b.provider == c.provider) {
            Some(b) if blended(i, o) < blended(b.input_per_mtok_usd, b.output_per_mtok_usd) => {
                *b = c
            }
            Some(_) => {}
            None => best.push(c),
        }
    }
    best.sort_by(|a, b| {
        blended(a.input_per_mtok_usd, a.output_per_mtok_usd)
            .total_cmp(&blended(b.input_per_mtok_usd, b.output_per_mtok_usd))
    });
    best
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use codex_free_secrets::MemoryStore;
    use serde_json::json;

    /// A service over a fresh temporary state home with an in-memory key store.
    pub(crate) fn service() -> (tempfile::TempDir, ApiService, Arc<MemoryStore>) {
        let d = tempfile::tempdir().unwrap();
        let store = Arc::new(MemoryStore::default());
        let ks = KeyringStatus {
            backend: store.label(),
            fallback: false,
            error: None,
        };
        let s = ApiService::new(d.path(), store.clone(), ks);
        (d, s, store)
    }

    /// Runs & costs carries each request's receipt and sums it per run; the kept bytes
    /// open by their hash, and only by a well-formed hash.
    #[test]
    fn runs_carry_receipts_and_kept_bytes_open_by_hash() {
        use sha2::Digest;
        let (d, s, _) = service();
        let store = codex_free_store::Store::open_in_home(d.path()).unwrap();
        let run = store.begin_run("phase1", "manual", Some("m")).unwrap();
        let bytes = b"{\"system\": \"s\"}\n";
        let sha = hex::encode(sha2::Sha256::digest(bytes));
        codex_free_pipeline::sent::keep(d.path(), 1, &sha, bytes);
        store
            .record_usage(&codex_free_store::UsageRow {
                run_id: run.clone(),
                phase: "phase1".into(),
                request_no: 1,
                model: "m".into(),
                outcome: "ok".into(),
                sent_sha256: Some(sha.clone()),
                sent_bytes: Some(bytes.len() as i64),
                redactions: [("github_token".to_string(), 2)].into_iter().collect(),
                ..Default::default()
            })
            .unwrap();
        let v = s.runs(&RunFilter::default()).unwrap();
        let r = v.runs.iter().find(|r| r.run_id == run).unwrap();
        assert_eq!(r.sent_bytes, bytes.len() as u64);
        assert_eq!(r.redactions.get("github_token"), Some(&2));
        let q = &r.request_rows[0];
        assert_eq!(q.sent_sha256.as_deref(), Some(sha.as_str()));
        assert!(q.sent_kept);
        assert_eq!(s.sent_request(&sha).unwrap().text.as_bytes(), bytes);
        assert_eq!(
            s.sent_request("../../etc/passwd").unwrap_err().code(),
            "invalid_argument"
        );
    }

    #[test]
    fn no_key_means_no_model_with_its_fix_and_a_key_clears_it() {
        let (d, s, _) = service();
        let both = |m: &str| json!({"memories": {"extract_model": m, "consolidation_model": m}});
        s.save_config(&both("deepseek/deepseek-chat")).unwrap();
        let p = s.status().unwrap().pipeline;
        assert_eq!(p.state, PipelineState::NoModel, "{p:?}");
        assert!(
            p.message.contains("no model can be called") && p.message.contains("deepseek"),
            "{p:?}"
        );
        assert_eq!(p.fix.and_then(|f| f.page).as_deref(), Some("models"));
        s.set_key("deepseek", "sk-test-0000000000001234").unwrap();
        let p = s.status().unwrap().pipeline;
        assert_ne!(p.state, PipelineState::NoModel, "{p:?}");
        // A local model whose server is not running (providers are edited in the file).
        std::fs::write(
            d.path().join(CONFIG_FILE),
            r#"{"memories": {"extract_model": "ollama/llama3", "consolidation_model": "ollama/llama3",
                "providers": {"ollama": {"base_url": "http://127.0.0.1:9/v1"}}}}"#,
        )
        .unwrap();
        let p = s.status().unwrap().pipeline;
        assert_eq!(p.state, PipelineState::NoModel, "{p:?}");
        assert!(
            p.message
                .contains("nothing answers at http://127.0.0.1:9/v1/"),
            "{p:?}"
        );
        // Paused by config wins: the user turned it off on purpose.
        s.save_config(&json!({"memories": {"enabled": false}}))
            .unwrap();
        assert_eq!(s.status().unwrap().pipeline.state, PipelineState::Paused);
    }

    #[test]
    fn cheap_choices_are_one_capable_undated_model_per_provider_cheapest_first() {
        let d = tempfile::tempdir().unwrap();
        let models = crate::api::catalog::PriceCatalog::new(d.path()).models();
        let c = cheap_choices(&models);
        assert!(c.len() >= 3, "{c:?}");
        let mut providers: Vec<_> = c.iter().map(|x| x.provider.clone()).collect();
        providers.sort();
        providers.dedup();
        assert_eq!(providers.len(), c.len(), "one per provider: {c:?}");
        let blended = |x: &CheapChoice| 0.75 * x.input_per_mtok_usd + 0.25 * x.output_per_mtok_usd;
        assert!(
            c.windows(2).all(|w| blended(&w[0]) <= blended(&w[1])),
            "{c:?}"
        );
        for x in &c {
            assert!(
                x.context_window.unwrap() >= CHEAP_MIN_CONTEXT && !x.id.contains("-20"),
                "{x:?}"
            );
            // Nothing of its provider that qualifies is cheaper.
            assert!(
                !models.iter().any(|m| m.provider == x.provider
                    && m.context_window.unwrap_or(0) >= CHEAP_MIN_CONTEXT
                    && !m.id.contains("-20")
                    && m.input_per_mtok_usd
                        .zip(m.output_per_mtok_usd)
                        .is_some_and(|(i, o)| i > 0.0 && 0.75 * i + 0.25 * o < blended(x))),
                "{x:?}"
            );
        }
    }

    #[test]
    fn diagnostics_name_the_parts_and_hold_no_key_or_token() {
        let (d, s, _) = service();
        let key = "sk-proj-DIAGNOSTICSKEY0000000000000000000000abcd";
        s.set_key("openai", key).unwrap();
        let token =
            crate::http::auth::load_or_create(d.path(), crate::http::auth::TokenKind::Mcp).unwrap();
        s.record_error(
            "server",
            format!("upstream said Authorization: Bearer {key}"),
        );
        let t = s.diagnostics().unwrap();
        for want in [
            "Codex Free ",
            "OS: ",
            "Key store: ",
            "Command sandbox: ",
            "MCP server: ",
            "Pipeline: ",
            "Client",
        ] {
            assert!(t.contains(want), "{want} missing:\n{t}");
        }
        assert!(!t.contains(key) && !t.contains("DIAGNOSTICSKEY"), "{t}");
        assert!(!t.contains(token.expose()), "{t}");
    }

    #[test]
    fn saves_of_startup_only_keys_say_restart() {
        let (_d, s, _) = service();
        let r = s
            .save_config(&json!({"output": {"maxFileLines": 50}}))
            .unwrap();
        assert!(r.saved && r.restart_required.is_empty(), "{r:?}");
        let r = s.validate_config(
            &json!({"exec": {"network": true}, "server": {"allowedHosts": ["t.example"]}}),
        );
        assert_eq!(r.restart_required, ["exec.network", "server.allowedHosts"]);
        let r = s
            .save_config(&json!({"exec": {"mode": "unrestricted"}, "memory": {"dir": "/tmp/m"}}))
            .unwrap();
        assert!(r.saved, "{r:?}");
        assert_eq!(r.restart_required, ["exec.mode", "memory.dir"]);
        // Saving the same value again changes nothing that needs a restart.
        let r = s
            .save_config(&json!({"exec": {"mode": "unrestricted"}}))
            .unwrap();
        assert!(r.restart_required.is_empty(), "{r:?}");
        let st = s.status().unwrap();
        assert_eq!(st.sandbox.enforced, st.sandbox.warning.is_none());
    }

    #[test]
    fn save_writes_only_overrides_and_invalid_writes_nothing() {
        let (d, s, _) = service();
        let r = s
            .save_config(&json!({"output": {"maxFileLines": 50}}))
            .unwrap();
        assert!(r.saved, "{r:?}");
        let text = std::fs::read_to_string(d.path().join(CONFIG_FILE)).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!({"output": {"maxFileLines": 50}})
        );
        // invalid: out of range + unknown key → nothing written, errors per field
        let r = s
            .save_config(
                &json!({"output": {"maxFileLines": 0, "maxFileBytes": 2048}, "exec": {"bogus": 1}}),
            )
            .unwrap();
        assert!(!r.saved);
        let mut keys: Vec<_> = r.errors.iter().map(|e| e.key.as_str()).collect();
        keys.sort();
        assert_eq!(keys, vec!["exec.bogus", "output.maxFileLines"]);
        assert_eq!(
            std::fs::read_to_string(d.path().join(CONFIG_FILE)).unwrap(),
            text
        );
        // back to the default removes the override
        let r = s
            .save_config(&json!({"output": {"maxFileLines": 1000}}))
            .unwrap();
        assert_eq!(r.overrides, json!({}));
        // cross-field rule
        let r = s
            .save_config(&json!({"command": {"defaultTimeout": 500000}}))
            .unwrap();
        assert!(
            !r.saved && r.errors[0].key == "command.defaultTimeout",
            "{r:?}"
        );
        // empty text for a nullable field means null
        let r = s
            .save_config(&json!({"memories": {"extract_model": "openai/gpt-5-mini"}}))
            .unwrap();
        assert!(r.saved);
        let r = s
            .save_config(&json!({"memories": {"extract_model": ""}}))
            .unwrap();
        assert_eq!(r.overrides, json!({}));
    }

    #[test]
    fn invalid_file_is_kept_aside_on_save() {
        let (d, s, _) = service();
        std::fs::write(
            d.path().join(CONFIG_FILE),
            r#"{"output":{"maxFileLines":0}}"#,
        )
        .unwrap();
        let v = s.get_config().unwrap();
        assert!(
            v.warnings[0].contains("output.maxFileLines"),
            "{:?}",
            v.warnings
        );
        assert!(
            s.save_config(&json!({"output": {"maxEntries": 10}}))
                .unwrap()
                .saved
        );
        let names: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names
                .iter()
                .any(|n| n.starts_with("codex.config.json.corrupt-")),
            "{names:?}"
        );
    }

    #[test]
    fn keys_go_to_the_store_and_come_back_as_hints() {
        let (d, s, store) = service();
        let st = s
            .set_key("openai", "  sk-test-ABCDEFGHIJ1234wxyz \n")
            .unwrap();
        assert_eq!(st.source, KeySource::Keyring);
        assert_eq!(st.hint.as_deref(), Some("…wxyz"));
        assert_eq!(
            store.get("openai").unwrap().unwrap().expose(),
            "sk-test-ABCDEFGHIJ1234wxyz"
        );
        let page = serde_json::to_string(&s.models().unwrap()).unwrap();
        assert!(
            !page.contains("ABCDEFGHIJ"),
            "key leaked into the page: {page}"
        );
        assert!(s.set_key("openai", "sk with space").is_err());
        assert!(s.set_key("nope", "sk-1234567890").is_err());
        assert_eq!(s.delete_key("openai").unwrap().source, KeySource::None);
        assert!(store.get("openai").unwrap().is_none());
        // nothing on disk
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn status_spend_and_cap() {
        let (_d, s, _) = service();
        let now = now_ms();
        let rows = usage::demo_records(now, 3);
        let s = s.with_usage(Arc::new(usage::MemoryUsage::new(rows)));
        s.save_config(&json!({"memories": {"monthly_spend_cap_usd": 0.000001}}))
            .unwrap();
        let st = s.status().unwrap();
        assert!(st.spend.today_usd > 0.0);
        let (_d2, empty, _) = service();
        assert!(
            empty.spend().unwrap().month_usd.is_sign_positive(),
            "no spend is +0, not -0"
        );
        assert!(st.spend.month_usd >= st.spend.today_usd);
        assert!(st.spend.cap_reached);
        assert!(
            st.recent_errors.iter().any(|e| e.source == "phase2"),
            "{:?}",
            st.recent_errors
        );
        s.record_error("server", "port 3000 in use");
        assert!(
            s.status()
                .unwrap()
                .recent_errors
                .iter()
                .any(|e| e.message == "port 3000 in use")
        );
    }

    /// The TypeScript twins of the DTOs (`ui/src/api/types/`) must equal what ts-rs
    /// generates now. Regenerate with `UPDATE_TS_BINDINGS=1 cargo test -p codex-free-server --lib ts_bindings`.
    #[test]
    fn ts_bindings_are_current() {
        use ts_rs::TS;
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../ui/src/api/types");
        let tmp = tempfile::tempdir().unwrap();
        let cfg = ts_rs::Config::new()
            .with_large_int("number")
            .with_out_dir(tmp.path());
        Status::export_all(&cfg).unwrap();
        ConfigView::export_all(&cfg).unwrap();
        ConfigSaveResult::export_all(&cfg).unwrap();
        ModelsView::export_all(&cfg).unwrap();
        ConnectionTest::export_all(&cfg).unwrap();
        RunsView::export_all(&cfg).unwrap();
        SentRequest::export_all(&cfg).unwrap();
        RunFilter::export_all(&cfg).unwrap();
        MemoryView::export_all(&cfg).unwrap();
        ActionResult::export_all(&cfg).unwrap();
        SetKeyRequest::export_all(&cfg).unwrap();
        ApiError::export_all(&cfg).unwrap();
        RefusalsView::export_all(&cfg).unwrap();
        ConnectView::export_all(&cfg).unwrap();
        ConnectPlanView::export_all(&cfg).unwrap();
        ConnectRequest::export_all(&cfg).unwrap();
        AgentUsageView::export_all(&cfg).unwrap();
        AgentUsageFilter::export_all(&cfg).unwrap();
        AgentSpend::export_all(&cfg).unwrap();
        MemoryFolders::export_all(&cfg).unwrap();
        MemoryInspect::export_all(&cfg).unwrap();
        HistoryView::export_all(&cfg).unwrap();
        CommitDiff::export_all(&cfg).unwrap();
        TidyPlanView::export_all(&cfg).unwrap();
        ReviewView::export_all(&cfg).unwrap();
        MemoryActionRequest::export_all(&cfg).unwrap();
        TidyAskRequest::export_all(&cfg).unwrap();
        codex_free_pipeline::v2::state::VersionsState::export_all(&cfg).unwrap();
        outgoing::OutgoingView::export_all(&cfg).unwrap();
        forecast_view::ForecastView::export_all(&cfg).unwrap();
        outgoing::ApproveRequest::export_all(&cfg).unwrap();
        outgoing::AllowProjectRequest::export_all(&cfg).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".ts"))
            .collect();
        names.sort();
        let index: String = names
            .iter()
            .map(|n| {
                format!(
                    "export type {{ {0} }} from \"./{0}\";\n",
                    n.trim_end_matches(".ts")
                )
            })
            .collect();
        std::fs::write(
            tmp.path().join("index.ts"),
            format!("// Generated by ts-rs from the API types (crates/server/src/api/dto.rs and the usage report types they carry); do not edit.\n{index}"),
        )
        .unwrap();
        names.push("index.ts".into());
        let update = std::env::var("UPDATE_TS_BINDINGS").as_deref() == Ok("1");
        if update {
            std::fs::create_dir_all(&dir).unwrap();
        }
        let mut stale = Vec::new();
        for n in &names {
            let want = std::fs::read_to_string(tmp.path().join(n)).unwrap();
            let have = std::fs::read_to_string(dir.join(n)).unwrap_or_default();
            if want != have {
                if update {
                    std::fs::write(dir.join(n), &want).unwrap();
                } else {
                    stale.push(n.clone());
                }
            }
        }
        // A twin of a type that no longer exists is stale too.
        for e in std::fs::read_dir(&dir).unwrap() {
            let n = e.unwrap().file_name().to_string_lossy().into_owned();
            if n.ends_with(".ts") && !names.contains(&n) {
                if update {
                    std::fs::remove_file(dir.join(&n)).unwrap();
                } else {
                    stale.push(n);
                }
            }
        }
        assert!(
            stale.is_empty(),
            "stale TypeScript bindings {stale:?}: run UPDATE_TS_BINDINGS=1 cargo test -p codex-free-server --lib ts_bindings"
        );
    }
}
