//! Production wiring of phase 2: the [`ConsolidationModel`] seam over the providers'
//! [`ModelClient`], [`run_in_home`] (store, model resolution, folder) for the scheduler and
//! `memories run|force`, and [`history_command_in_home`] for `memories history|diff|rollback`.
//!
//! Invariant: the adapter only converts types; retries, timeouts and wire formats stay in
//! `codex_free_models`.

use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::agent::{BoxFuture, ConsolidationModel, ModelReply, ModelRequest, Role, ToolCall};
use super::{Outcome, Phase2Deps};
use crate::phase2::db::Phase2Db;
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::config::Config;
use codex_free_models::{
    self as providers, CompletionRequest, Message, ModelClient, PriceTable, RetryPolicy, outgoing,
};
use codex_free_secrets::SecretStore;
use codex_free_store::Store;

/// A [`ConsolidationModel`] backed by a provider client.
pub struct ProviderModel {
    /// The client (wire format, key, retries).
    pub client: Arc<dyn ModelClient>,
    /// Whether the model reasons (the effort is only sent then).
    pub reasoning: bool,
    /// Output cap per request, tokens.
    pub max_output_tokens: Option<u32>,
    /// Context window, tokens, when known.
    pub context_window: Option<u64>,
    /// Cancels requests in flight.
    pub cancel: CancellationToken,
    /// State home (where `memories.keep_sent_days` keeps the sealed bytes).
    pub home: std::path::PathBuf,
    /// `memories.keep_sent_days`.
    pub keep_sent_days: u32,
    /// The receipt of the last request the provider failed after it was sealed and sent.
    pub failed: std::sync::Mutex<Option<outgoing::Receipt>>,
}

impl ConsolidationModel for ProviderModel {
    fn model_id(&self) -> String {
        self.client.model().to_string()
    }

    fn context_window(&self) -> Option<u64> {
        self.context_window
    }

    fn take_failed_receipt(&self) -> Option<outgoing::Receipt> {
        self.failed.lock().ok().and_then(|mut f| f.take())
    }

    fn complete<'a>(&'a self, req: ModelRequest<'a>) -> BoxFuture<'a, Result<ModelReply>> {
        let creq = to_completion(req, self.reasoning, self.max_output_tokens);
        Box::pin(async move {
            let (sent, res) = outgoing::send_receipted(
                &*self.client,
                self.context_window,
                creq,
                &codex_free_redact::Tally::new(),
                &self.cancel,
            )
            .await;
            let receipt = sent.map(|(r, bytes)| {
                crate::sent::keep(&self.home, self.keep_sent_days, &r.sha256, &bytes);
                r
            });
            let c = match res {
                Ok(c) => c,
                Err(e) => {
                    if let Ok(mut f) = self.failed.lock() {
                        *f = receipt;
                    }
                    return Err(Error::from(e));
                }
            };
            Ok(ModelReply {
                receipt,
                content: c.content,
                tool_calls: c
                    .tool_calls
                    .into_iter()
                    .map(|t| ToolCall {
                        id: t.id,
                        name: t.name,
                        arguments: match t.arguments {
                            serde_json::Value::String(s) => s,
                            v => v.to_string(),
                        },
                    })
                    .collect(),
                usage: c.usage,
            })
        })
    }
}

/// The provider request of one agent turn (what [`ProviderModel`] seals and sends, and what
/// the consolidation preview seals without sending).
pub(crate) fn to_completion(
    req: ModelRequest<'_>,
    reasoning: bool,
    max_output_tokens: Option<u32>,
) -> CompletionRequest {
    let mut system = Vec::new();
    let mut messages = Vec::new();
    for m in req.messages {
        match m.role {
            Role::System => system.push(m.content.clone()),
            Role::User => messages.push(Message::User(m.content.clone())),
            Role::Assistant => messages.push(Message::Assistant {
                content: m.content.clone(),
                tool_calls: m
                    .tool_calls
                    .iter()
                    .map(|c| providers::ToolCall {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        arguments: serde_json::from_str(&c.arguments)
                            .unwrap_or_else(|_| serde_json::Value::String(c.arguments.clone())),
                    })
                    .collect(),
            }),
            Role::Tool => messages.push(Message::Tool {
                call_id: m.tool_call_id.clone().unwrap_or_default(),
                content: m.content.clone(),
            }),
        }
    }
    CompletionRequest {
        system: system.join("\n\n"),
        messages,
        response_schema: None,
        tools: req
            .tools
            .iter()
            .map(|t| providers::ToolSpec {
                name: t.name.clone(),
                description: t.description.clone(),
                parameters: t.parameters.clone(),
            })
            .collect(),
        reasoning_effort: reasoning.then(|| req.reasoning_effort.to_string()),
        max_output_tokens,
    }
}

/// Run phase 2 for the state home `home` with `config`: open `state.sqlite`, resolve
/// `memories.consolidation_model` (null = the default model) with `secrets` and `retry`,
/// and run [`super::run`]. A model that cannot be resolved only matters when the run
/// needs one (it then fails with the resolution error; no silent switch to
/// another model, so the user always knows which model saw their data).
///
/// Errors: [`Error::Store`] when the database cannot be opened or the job claimed.
pub async fn run_in_home(
    home: &Path,
    config: &Config,
    secrets: &dyn SecretStore,
    retry: RetryPolicy,
    trigger: &str,
    force: bool,
    cancel: CancellationToken,
) -> Result<Outcome> {
    let store = Store::open_in_home(home)?;
    run_with_store(home, config, store, secrets, retry, trigger, force, cancel).await
}

/// As [`run_in_home`] over an open `store` (tests inject a clock through it).
#[allow(clippy::too_many_arguments)]
pub async fn run_with_store(
    home: &Path,
    config: &Config,
    store: Store,
    secrets: &dyn SecretStore,
    retry: RetryPolicy,
    trigger: &str,
    force: bool,
    cancel: CancellationToken,
) -> Result<Outcome> {
    run_version_with_store(
        home,
        config,
        store,
        codex_free_core::config::MemoryVersion::V1,
        secrets,
        retry,
        trigger,
        force,
        cancel,
    )
    .await
}

/// As [`run_with_store`] for the pipeline `version` (its `store` must be that version's
/// database): V1 runs [`super::run`], V2 [`super::v2::run`].
///
/// Errors: as [`run_in_home`].
#[allow(clippy::too_many_arguments)]
pub async fn run_version_with_store(
    home: &Path,
    config: &Config,
    store: Store,
    version: codex_free_core::config::MemoryVersion,
    secrets: &dyn SecretStore,
    retry: RetryPolicy,
    trigger: &str,
    force: bool,
    cancel: CancellationToken,
) -> Result<Outcome> {
    let m = &config.memories;
    let (spec, explicit) = match &m.consolidation_model {
        Some(s) => (s.as_str(), true),
        None => (providers::DEFAULT_EXTRACT_MODEL, false),
    };
    let resolved =
        providers::resolve_model(spec, explicit, m, secrets, PriceTable::bundled(), retry);
    let (model, price, unavailable) = match resolved {
        Ok(r) => (
            Some(ProviderModel {
                client: r.client.clone(),
                reasoning: r.reasoning,
                max_output_tokens: None,
                context_window: r.context_window,
                cancel: cancel.clone(),
                home: home.to_path_buf(),
                keep_sent_days: m.keep_sent_days,
                failed: std::sync::Mutex::new(None),
            }),
            r.price,
            None,
        ),
        Err(e) => (None, None, Some(e.to_string())),
    };
    let db = Phase2Db {
        store,
        home: home.to_path_buf(),
        price,
        spend_cap_usd: m.monthly_spend_cap_usd,
        version,
    };
    let deps = Phase2Deps {
        home,
        config: m,
        store: &db,
        model: model.as_ref().map(|m| m as &dyn ConsolidationModel),
        model_unavailable: unavailable,
        worker_id: format!("pid-{}", std::process::id()),
        trigger: trigger.to_string(),
        cancel,
    };
    match version {
        codex_free_core::config::MemoryVersion::V1 => super::run(&deps, force).await,
        codex_free_core::config::MemoryVersion::V2 => super::v2::run(&deps, force).await,
    }
}

/// `codex-free memories history | diff [REV] | rollback REV` for the state home `home`
/// (opens `state.sqlite` so rollback can refuse while a phase-2 job runs); returns the
/// text to print. See [`super::history_command`].
///
/// Errors: [`Error::Busy`] for a rollback during a run or over uncommitted changes;
/// [`Error::InvalidArgument`] for an unknown revision; database and git errors.
pub fn history_command_in_home(
    home: &Path,
    cmd: &codex_free_memory::cli::MemoryHistoryCmd,
    budget: &codex_free_memory::budget::ArtifactBudget,
) -> Result<String> {
    let store = Store::open_in_home(home)?;
    let db = Phase2Db {
        store,
        home: home.to_path_buf(),
        price: None,
        spend_cap_usd: None,
        version: codex_free_core::config::MemoryVersion::V1,
    };
    super::history_command(home, cmd, &db, budget)
}
