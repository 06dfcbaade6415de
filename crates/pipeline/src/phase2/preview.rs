//! `memories consolidate --preview`: phase 2's first request, exactly as the outgoing gate
//! seals it, with nothing sent and nothing written.
//!
//! The consolidation runs as a dry run on a copy: the state database (`VACUUM INTO`), the
//! memory folder (a git repository) and the state home's small files are copied into a
//! temporary home, and the same run a real consolidation makes (claim, snapshot, sync of
//! the selected inputs, diff, prompt) goes on there up to its first model request, which a
//! preview model seals and stops at. The real home, database and folder are never written;
//! the temporary home is removed afterwards.

use std::path::Path;
use std::sync::Mutex;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::agent::{BoxFuture, ConsolidationModel, ModelReply, ModelRequest};
use super::db::Phase2Db;
use super::model::to_completion;
use super::{Outcome, Phase2Deps};
use codex_free_core::config::{Config, MemoryVersion};
use codex_free_core::{Error, Result};
use codex_free_models::outgoing::Outgoing;
use codex_free_models::{self as providers, PriceTable, RetryPolicy, TokenUsage};
use codex_free_secrets::SecretStore;
use codex_free_store::Store;

/// Top-level entries of the state home the dry run does not need (large, and never read by
/// a consolidation).
const SKIPPED: &[&str] = &["transcripts", "sent", "backups"];

/// What the first request of the next consolidation would be.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConsolidationPreview {
    /// `v1` or `v2`.
    pub version: MemoryVersion,
    /// The model (`provider/model`).
    pub model: String,
    /// Why no request would be sent (nothing changed, nothing to consolidate, cooldown …);
    /// `None` when `request` is set.
    pub no_request: Option<String>,
    /// The sealed request (canonical JSON, byte for byte what leaves).
    pub sealed: Option<String>,
    /// SHA-256 of the sealed bytes: the hash the real run's first receipt carries.
    pub sha256: Option<String>,
    /// Size of the sealed bytes.
    pub bytes: u64,
    /// Estimated input tokens (o200k_base).
    pub input_tokens: u64,
    /// Cost of that input at the model's price, USD; `None` when unknown.
    pub input_cost_usd: Option<f64>,
    /// Redactions by rule the gate made.
    pub redactions: std::collections::BTreeMap<String, u64>,
    /// The gate's refusal (over the context window), when it would refuse.
    pub refused: Option<String>,
}

/// Seals the first request it is given and stops the run there.
struct PreviewModel {
    id: String,
    window: Option<u64>,
    reasoning: bool,
    sealed: Mutex<Option<std::result::Result<Outgoing, String>>>,
}

impl ConsolidationModel for PreviewModel {
    fn model_id(&self) -> String {
        self.id.clone()
    }

    fn context_window(&self) -> Option<u64> {
        self.window
    }

    fn complete<'a>(&'a self, req: ModelRequest<'a>) -> BoxFuture<'a, Result<ModelReply>> {
        let creq = to_completion(req, self.reasoning, None);
        let got = Outgoing::seal(creq, self.window).map_err(|e| e.message);
        let mut slot = self.sealed.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(got);
        }
        Box::pin(async {
            Err(Error::Refused(
                "consolidation preview: stopped before the first request".into(),
            ))
        })
    }
}

/// Copy `from` into `to` recursively (regular files and directories; symlinks skipped).
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).map_err(|e| Error::io(format!("creating {}", to.display()), e))?;
    let rd =
        std::fs::read_dir(from).map_err(|e| Error::io(format!("reading {}", from.display()), e))?;
    for e in rd.flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            copy_tree(&src, &dst)?;
        } else if t.is_file() {
            std::fs::copy(&src, &dst)
                .map_err(|err| Error::io(format!("copying {}", src.display()), err))?;
        }
    }
    Ok(())
}

/// The first request the next consolidation of `version` would send (see the module doc),
/// sending nothing and writing nothing in `home`.
///
/// Errors: the database or folder cannot be copied; model resolution errors; database or
/// git errors of the dry run.
pub async fn preview(
    home: &Path,
    config: &Config,
    version: MemoryVersion,
    secrets: &dyn SecretStore,
) -> Result<ConsolidationPreview> {
    let tmp = tempfile::tempdir()
        .map_err(|e| Error::io("creating the preview's temporary home".to_string(), e))?;
    let dry = tmp.path();
    let db_path = crate::v2::db_path(home, version);
    let db_name = db_path
        .file_name()
        .map(|n| n.to_os_string())
        .ok_or_else(|| Error::Store("the database path has no file name".into()))?;
    let rd =
        std::fs::read_dir(home).map_err(|e| Error::io(format!("reading {}", home.display()), e))?;
    for e in rd.flatten() {
        let name = e.file_name();
        let n = name.to_string_lossy();
        if SKIPPED.contains(&n.as_ref()) || n.contains(".sqlite") || n.ends_with(".lock") {
            continue;
        }
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            copy_tree(&e.path(), &dry.join(&name))?;
        } else if t.is_file() {
            std::fs::copy(e.path(), dry.join(&name))
                .map_err(|err| Error::io(format!("copying {}", e.path().display()), err))?;
        }
    }
    let real = Store::open(&db_path, std::sync::Arc::new(codex_free_store::SystemClock))?;
    real.copy_to(&dry.join(&db_name))?;
    let store = Store::open(&dry.join(&db_name), real.clock())?;
    drop(real);

    let m = &config.memories;
    let (spec, explicit) = match &m.consolidation_model {
        Some(s) => (s.as_str(), true),
        None => (providers::DEFAULT_EXTRACT_MODEL, false),
    };
    let r = providers::resolve_model(
        spec,
        explicit,
        m,
        secrets,
        PriceTable::bundled(),
        RetryPolicy::default(),
    )?;
    let model = PreviewModel {
        id: r.model.to_string(),
        window: r.context_window,
        reasoning: r.reasoning,
        sealed: Mutex::new(None),
    };
    let db = Phase2Db {
        store,
        home: dry.to_path_buf(),
        price: r.price,
        // The preview spends nothing; the cap is the real run's business.
        spend_cap_usd: None,
        version,
    };
    let deps = Phase2Deps {
        home: dry,
        config: m,
        store: &db,
        model: Some(&model),
        model_unavailable: None,
        worker_id: format!("preview-{}", std::process::id()),
        trigger: "preview".into(),
        cancel: CancellationToken::new(),
    };
    let outcome = match version {
        MemoryVersion::V1 => super::run(&deps, true).await?,
        MemoryVersion::V2 => super::v2::run(&deps, true).await?,
    };
    let sealed = model
        .sealed
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    let mut out = ConsolidationPreview {
        version,
        model: r.model.to_string(),
        no_request: None,
        sealed: None,
        sha256: None,
        bytes: 0,
        input_tokens: 0,
        input_cost_usd: None,
        redactions: Default::default(),
        refused: None,
    };
    match sealed {
        Some(Ok(o)) => {
            let bytes = o.sealed_bytes();
            let receipt = o.receipt(&codex_free_redact::Tally::new());
            let tokens = o.input_tokens() as u64;
            out.input_tokens = tokens;
            out.input_cost_usd = r.price.map(|p| {
                p.cost(&TokenUsage {
                    input: tokens,
                    ..Default::default()
                })
            });
            out.bytes = receipt.bytes;
            out.redactions = receipt.redactions;
            out.sha256 = Some(receipt.sha256);
            out.sealed = Some(String::from_utf8_lossy(&bytes).into_owned());
        }
        Some(Err(why)) => out.refused = Some(why),
        None => {
            out.no_request = Some(match outcome {
                Outcome::Skipped { reason, .. } => format!("skipped: {reason}"),
                Outcome::NoChanges { inputs } => {
                    format!("no request: {inputs} input(s) unchanged and the artifacts valid")
                }
                Outcome::Synced { .. } => {
                    "no request: nothing to consolidate (the inputs are only synced)".into()
                }
                other => format!("no request was made ({other:?})"),
            })
        }
    }
    Ok(out)
}

impl ConsolidationPreview {
    /// As `memories consolidate --preview` prints it: a header with the figures, then the
    /// sealed request verbatim.
    pub fn render(&self) -> String {
        if let Some(why) = &self.no_request {
            return format!("{}: {why}; nothing would be sent\n", self.version);
        }
        if let Some(why) = &self.refused {
            return format!(
                "{}: the first request would be REFUSED by the gate (logged as failed, not sent): {why}\n",
                self.version
            );
        }
        format!(
            "=== {} consolidation, first request -> {}\n{} bytes, ~{} input tokens, input {}; sha256 {}{}\n{}\nnothing was sent, nothing was written\n",
            self.version,
            self.model,
            self.bytes,
            self.input_tokens,
            self.input_cost_usd
                .map_or("price unknown".to_string(), |c| format!("${c:.4}")),
            self.sha256.as_deref().unwrap_or_default(),
            if self.redactions.is_empty() {
                String::new()
            } else {
                format!(
                    "; removed by rule: {}",
                    self.redactions
                        .iter()
                        .map(|(k, v)| format!("{k} x{v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            self.sealed.as_deref().unwrap_or_default()
        )
    }
}
