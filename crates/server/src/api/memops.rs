//! The Memory page's actions over `codex_free_pipeline`'s hygiene and history: the memory
//! folders found (this state home's, Codex's, Claude Code's auto-memory), their layers and
//! lint findings, the history with each commit's diff, rollback, the tidy plan and its
//! apply, and the review queue. The same library calls as `codex-free memories lint |
//! tidy | history | diff | rollback | review`.
//!
//! Invariant: a folder is named by id ([`MemoryFolderRef::id`]) and resolved here from the
//! folders found, never taken as a path from the request, so the page cannot be made to
//! write anywhere else; rollback and review act on this state home's folder only (the
//! only one whose summary we serve).

use std::path::{Path, PathBuf};

use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_hygiene::{self as hygiene, lint, tidy};
use codex_free_memory::budget::ArtifactBudget;
use codex_free_memory::cli::MemoryHistoryCmd;
use codex_free_memory::folder::MemoryFolder;
use codex_free_memory::review;

use super::ApiService;
use super::dto::{
    ActionResult, CommitDiff, CommitView, HistoryView, LayerFile, LintFindingView, MemoryFolderRef,
    MemoryFolders, MemoryInspect, ReviewView, TidyPlanView, TidyUnitView,
};

/// Most files listed per folder (a Codex folder can hold thousands of rollout summaries).
const MAX_LAYER_FILES: usize = 2000;
/// Most commits listed.
const MAX_HISTORY: usize = 50;
/// Most bytes of one commit's diff sent to the page.
const MAX_DIFF_BYTES: usize = 1 << 20;

fn layer_of(rel: &str) -> &'static str {
    let top = rel.split('/').next().unwrap_or(rel);
    match top {
        "MEMORY.md" => "loaded",
        "memory_summary.md" => "summary",
        "daily" => "daily",
        "archive" => "archive",
        "raw_memories.md" | "raw_memories" | "rollout_summaries" => "evidence",
        "ad_hoc_notes" => "notes",
        "skills" => "skills",
        _ => "other",
    }
}

fn list_files(root: &Path) -> Vec<LayerFile> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<LayerFile>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        let mut es: Vec<_> = rd.flatten().collect();
        es.sort_by_key(|e| e.file_name());
        for e in es {
            if out.len() >= MAX_LAYER_FILES {
                return;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let r = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            let Ok(md) = std::fs::symlink_metadata(e.path()) else {
                continue;
            };
            if md.is_dir() {
                walk(&e.path(), &r, out);
            } else if md.is_file() {
                let lines = std::fs::read(e.path())
                    .map(|b| b.iter().filter(|c| **c == b'\n').count() as u64)
                    .unwrap_or(0);
                out.push(LayerFile {
                    layer: layer_of(&r).into(),
                    path: r,
                    lines,
                    bytes: md.len(),
                });
            }
        }
    }
    let mut out = Vec::new();
    walk(root, "", &mut out);
    out
}

impl ApiService {
    fn budget(&self) -> ArtifactBudget {
        let (cfg, _) = self.current_config();
        ArtifactBudget::from_config(&cfg.memories)
    }

    /// Every memory folder found: this state home's (always listed), `$CODEX_HOME/memories`
    /// and each `$CLAUDE_CONFIG_DIR/projects/<slug>/memory` that exists.
    pub fn memory_folders(&self) -> MemoryFolders {
        let mut folders = Vec::new();
        let mk = |id: String, label: String, path: PathBuf| MemoryFolderRef {
            id,
            label,
            git: path.join(".git").is_dir(),
            path: path.display().to_string(),
        };
        folders.push(mk(
            "home".into(),
            "Codex Free (this state home)".into(),
            hygiene::default_folder(&self.home),
        ));
        let agents = codex_free_core::home::AgentHomes::from_env();
        if let Some(c) = agents.codex {
            let p = c.join("memories");
            if p.is_dir() {
                folders.push(mk("codex".into(), "Codex CLI".into(), p));
            }
        }
        if let Some(c) = agents.claude
            && let Ok(rd) = std::fs::read_dir(c.join("projects"))
        {
            let mut slugs: Vec<String> = rd
                .flatten()
                .filter(|e| e.path().join("memory").is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            slugs.sort();
            for s in slugs {
                let p = c.join("projects").join(&s).join("memory");
                folders.push(mk(format!("claude:{s}"), format!("Claude Code: {s}"), p));
            }
        }
        MemoryFolders { folders }
    }

    /// The folder with id `id`.
    ///
    /// Errors: [`Error::InvalidArgument`] for an id that names no folder found.
    fn folder_by_id(&self, id: &str) -> Result<MemoryFolderRef> {
        self.memory_folders()
            .folders
            .into_iter()
            .find(|f| f.id == id)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "no memory folder {id:?}: one of the ids of GET /api/memory/folders"
                ))
            })
    }

    /// Layers and lint findings of folder `id` (no model call).
    ///
    /// Errors: an unknown id.
    pub fn memory_inspect(&self, id: &str) -> Result<MemoryInspect> {
        let folder = self.folder_by_id(id)?;
        let root = PathBuf::from(&folder.path);
        let layers = list_files(&root);
        let (findings, lint_error) =
            match lint::sources_for(&self.home, std::slice::from_ref(&root)) {
                Ok(files) => {
                    let rep = lint::lint(&files, &[], &self.budget(), lint::Checks { all: true });
                    let rel = |f: &str| {
                        Path::new(f)
                            .strip_prefix(&root)
                            .map(|p| p.to_string_lossy().into_owned())
                            .unwrap_or_else(|_| f.to_string())
                    };
                    (
                        rep.findings
                            .iter()
                            .map(|f| LintFindingView {
                                file: rel(&f.file),
                                line: f.line as u64,
                                kind: f.kind.name().into(),
                                severity: match f.severity {
                                    lint::Severity::Error => "error".into(),
                                    lint::Severity::Warning => "warning".into(),
                                },
                                message: f.message.clone(),
                                suggestion: f.suggestion.clone(),
                            })
                            .collect(),
                        None,
                    )
                }
                Err(e) => (Vec::new(), Some(e.to_string())),
            };
        Ok(MemoryInspect {
            folder,
            layers,
            findings,
            lint_error,
        })
    }

    /// The newest commits of folder `id` (empty when it is not a git work tree).
    ///
    /// Errors: an unknown id; git errors.
    pub fn memory_history(&self, id: &str) -> Result<HistoryView> {
        let folder = self.folder_by_id(id)?;
        let commits = if folder.git {
            MemoryFolder::at(Path::new(&folder.path))
                .history(MAX_HISTORY)?
                .into_iter()
                .map(|h| CommitView {
                    id: h.id,
                    time_ms: h.time * 1000,
                    subject: h.subject,
                    files_changed: h.files_changed as u64,
                    insertions: h.insertions as u64,
                    deletions: h.deletions as u64,
                })
                .collect()
        } else {
            Vec::new()
        };
        Ok(HistoryView {
            folder: folder.id,
            commits,
        })
    }

    /// What commit `rev` of folder `id` changed.
    ///
    /// Errors: an unknown id; a folder without git; a rev that names no commit.
    pub fn memory_commit(&self, id: &str, rev: &str) -> Result<CommitDiff> {
        let folder = self.folder_by_id(id)?;
        if !folder.git {
            return Err(Error::InvalidArgument(format!(
                "{} is not a git repository: it has no history",
                folder.path
            )));
        }
        let text = MemoryFolder::at(Path::new(&folder.path)).show(Some(rev), MAX_DIFF_BYTES)?;
        Ok(CommitDiff {
            id: rev.into(),
            text,
        })
    }

    /// Roll this state home's folder back to `rev` as a new commit (the same checks as
    /// `memories rollback`: refused while a consolidation runs or when `rev` fails today's
    /// budgets).
    ///
    /// Errors: a folder other than `home`; the rollback's errors.
    pub fn memory_rollback(&self, id: &str, rev: &str) -> Result<ActionResult> {
        if id != "home" {
            return Err(Error::Refused(
                "rollback works on this state home's memory folder only".into(),
            ));
        }
        let text = codex_free_pipeline::phase2::model::history_command_in_home(
            &self.home,
            &MemoryHistoryCmd::Rollback { rev: rev.into() },
            &self.budget(),
        )?;
        Ok(ActionResult {
            ok: true,
            message: text.trim_end().into(),
        })
    }

    fn tidy_opts(&self, id: &str) -> Result<(MemoryFolderRef, tidy::TidyOptions)> {
        let folder = self.folder_by_id(id)?;
        let opts = tidy::TidyOptions::new(
            PathBuf::from(&folder.path),
            self.home.clone(),
            self.budget(),
        );
        Ok((folder, opts))
    }

    /// The tidy plan of folder `id`. With `memories.tidy_ask_model` on, the undecided units
    /// the cache has answers for are decided by them and the estimate of asking about the
    /// rest is shown; `ask = true` then sends those requests (through the outgoing gate,
    /// after the spend cap check, logged as a `tidy` run) and returns the plan with the
    /// answers. Nothing in the folder is written either way.
    ///
    /// Errors: an unknown id; `ask` while the setting is off (invalid argument); the plan's
    /// errors (unreadable or non-UTF-8 file, link out); a cache that cannot be written.
    pub fn memory_tidy_plan(&self, id: &str, ask: bool) -> Result<TidyPlanView> {
        let (folder, mut opts) = self.tidy_opts(id)?;
        let (cfg, _) = self.current_config();
        let allowed = cfg.memories.tidy_ask_model;
        if ask && !allowed {
            return Err(codex_free_core::Error::InvalidArgument(
                "asking the model about a tidy needs memories.tidy_ask_model = true (Settings)"
                    .into(),
            ));
        }
        let resolved = codex_free_models::resolve_extract_model(
            &cfg.memories,
            self.secrets.as_ref(),
            codex_free_models::PriceTable::bundled(),
            codex_free_models::RetryPolicy::default(),
        );
        let mut report = None;
        let plan = match (&resolved, allowed) {
            (Ok(model), true) => {
                let mut quiet = |_: &tidy::ModelReport| {};
                let fut = tidy::model::plan_with_model(
                    &opts,
                    model,
                    cfg.memories.monthly_spend_cap_usd,
                    ask,
                    &mut quiet,
                );
                // A blocking-pool thread of the server's runtime: waiting here is allowed.
                let (p, _) = tokio::runtime::Handle::current().block_on(fut)?;
                report = p.model.clone();
                p
            }
            (Err(_), true) => {
                if ask && let Err(e) = &resolved {
                    return Err(codex_free_core::Error::InvalidArgument(format!(
                        "no model to ask: {e}"
                    )));
                }
                opts.model_verdicts = tidy::model::cached_for(&opts)?;
                tidy::plan(&opts)?
            }
            (_, false) => tidy::plan(&opts)?,
        };
        let moves = plan
            .moves
            .iter()
            .filter(|m| !matches!(m.dest, tidy::Dest::Stay))
            .count() as u64;
        let units = plan
            .moves
            .iter()
            .map(|m| {
                let (group, to) = match &m.dest {
                    tidy::Dest::Stay => ("kept", m.file.clone()),
                    tidy::Dest::Daily { date } => ("daily", format!("daily/{date}.md")),
                    tidy::Dest::Archive { .. } => ("archive", "archive/".to_string()),
                    tidy::Dest::Merged { into } => ("merged", format!("{}:{into}", m.file)),
                    tidy::Dest::Topic { file } => ("on_demand", file.clone()),
                    tidy::Dest::Duplicate { kept_at } => {
                        ("dropped", format!("identical to line {kept_at}"))
                    }
                };
                TidyUnitView {
                    key: m.key(),
                    file: m.file.clone(),
                    line: m.line as u64,
                    lines: m.lines as u64,
                    text: m.text.clone(),
                    group: group.into(),
                    to,
                    reason: m.reason.clone(),
                    undecided: m.undecided,
                }
            })
            .collect();
        let any_undecided = plan.moves.iter().any(|m| m.undecided);
        let (model_lines, model_requests, model_est_cost_usd) = match (report, &resolved) {
            (Some(r), _) => (r.lines(), r.requests as u64, r.est_cost_usd),
            (None, Err(e)) if any_undecided => (
                vec![format!(
                    "Model: not configured ({e}); undecided units stay loaded"
                )],
                0,
                None,
            ),
            (None, Ok(model)) if any_undecided => match tidy::model::estimate(&opts, model) {
                Ok(r) => (
                    vec![
                        r.estimate_line(),
                        "Model: off (memories.tidy_ask_model = false): undecided units stay loaded and nothing is sent".into(),
                    ],
                    r.requests as u64,
                    r.est_cost_usd,
                ),
                Err(e) => (vec![format!("Model: cannot estimate: {e}")], 0, None),
            },
            _ => (Vec::new(), 0, None),
        };
        Ok(TidyPlanView {
            folder: folder.id,
            moves,
            text: plan.render(),
            units,
            model_estimate: model_lines.first().cloned(),
            model_lines,
            model_enabled: allowed,
            model_requests,
            model_est_cost_usd,
        })
    }

    /// Apply the tidy of folder `id` (backup, moves, commit, read-back), only the units in
    /// `accepted` when given; with `memories.tidy_ask_model` on, the cached answers decide
    /// the undecided units as the last plan showed (no request is sent). The linked copies
    /// follow when it is this state home's.
    ///
    /// Errors: the apply's errors (it restores the backup before returning one).
    pub fn memory_tidy_apply(&self, id: &str, accepted: Option<&[String]>) -> Result<ActionResult> {
        let (_folder, mut opts) = self.tidy_opts(id)?;
        if self.current_config().0.memories.tidy_ask_model {
            opts.model_verdicts = tidy::model::cached_for(&opts)?;
        }
        opts.accept = accepted.map(|a| a.iter().cloned().collect());
        let applied = tidy::apply(&opts)?;
        Ok(ActionResult {
            ok: true,
            message: applied.render().trim_end().into(),
        })
    }

    /// The review queue of this state home's folder; with `action`, accept or reject first.
    ///
    /// Errors: as [`review::decide`].
    pub fn memory_review(&self, action: Option<review::ReviewAction>) -> Result<ReviewView> {
        let (cfg, _) = self.current_config();
        let st = match action {
            None => review::state(&self.home, cfg.memories.review)?,
            Some(a) => review::decide(
                &self.home,
                cfg.memories.review,
                a,
                codex_free_memory::sync::consolidation_running(&self.home)?,
                &codex_free_memory::budget::ArtifactBudget::from_config(&cfg.memories),
            )?,
        };
        Ok(ReviewView {
            enabled: st.enabled,
            pending: st.pending,
            accepted: st.accepted,
            head: st.head,
            changes: st.changes.into_iter().map(|c| c.path).collect(),
            patch: st.patch,
            done: st.done,
        })
    }
}
