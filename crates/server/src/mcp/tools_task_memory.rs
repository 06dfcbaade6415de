//! MCP wiring of task memory, skills and project selection ([`codex_free_task_memory::Service`]):
//! `remember`, `recall`, `update_plan`, `skills_list`, `skills_read`, `get_agent_brief`,
//! `list_projects`, `set_project_root`. Calls run on the blocking pool because they take
//! cross-process file locks and fsync.
//!
//! Invariant: this file only maps arguments and results; the conversation id comes from the
//! request extensions ([`conversation`]) and is handed to the library, never logged.

use std::path::Path;
use std::sync::Arc;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Extensions};
use rmcp::{tool, tool_router};

use crate::mcp::server::{CodexFree, Mode, Shared, conversation, reply};
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::config::Config;
use codex_free_core::jail::Jail;
use codex_free_task_memory::{
    GetAgentBriefArgs, ListProjectsArgs, OwnedTexts, RecallArgs, RememberArgs, Scope, Service,
    SetProjectRootArgs, SkillsListArgs, SkillsReadArgs, UpdatePlanArgs,
};
use codex_free_tools::{ToolCtx, doc};

/// Environment text (`tools::doc::get_environment`) and the start of AGENTS.md, already
/// cut at `projectDoc.maxBytes` with its marker (`tools::doc::project_doc_for_instructions`),
/// of the project of `project`, for the instructions and `get_agent_brief`.
pub(crate) fn project_texts(project: &Jail, config: &Config, home: &Path) -> OwnedTexts {
    let ctx = ToolCtx::new(project.clone(), config.clone(), home.to_path_buf());
    OwnedTexts {
        environment: doc::get_environment(&ctx),
        agents_md: doc::project_doc_for_instructions(&ctx),
    }
}

/// Build the [`Service`] for one call with `config` (the session's client config) and run
/// `f` with it.
pub(crate) fn with_service<T>(
    shared: &Shared,
    config: &Config,
    session: Option<&str>,
    f: impl FnOnce(&Service<'_>) -> T,
) -> T {
    let project = shared.project_jail();
    let scope = match &shared.mode {
        Mode::Single { .. } => Scope::Single { project: &project },
        Mode::Multi { .. } => Scope::Multi {
            access: &shared.jail,
            session,
        },
    };
    let texts = |project: &Jail| project_texts(project, config, &shared.home);
    let svc = Service {
        home: &shared.home,
        config,
        scope,
        texts: &texts,
    };
    f(&svc)
}

/// The MCP `instructions` for a new session, rebuilt each time so they show the current
/// saved state (single project) or the project-neutral brief (multi-project).
pub(crate) fn instructions(shared: &Shared) -> String {
    with_service(shared, &shared.config.get(), None, |s| s.instructions())
}

/// After a saved note or plan changed: rewrite the managed blocks of the connected agents
/// (Codex's carries every project's saved state, see `pipeline::connect::saved`). Nothing
/// happens before the first `connect`; failures are logged inside, never raised.
fn refresh_linked_copies(home: &Path) {
    codex_free_core::events::emit(
        home,
        codex_free_core::events::MemoryEvent::SavedStateChanged,
    );
}

impl CodexFree {
    /// Run a memory call on the blocking pool and map its result.
    async fn memory_call(
        &self,
        ext: &Extensions,
        f: impl FnOnce(&Service<'_>) -> Result<String> + Send + 'static,
    ) -> CallToolResult {
        let shared: Arc<Shared> = self.shared.clone();
        let session = conversation(ext).0;
        let config = self.client_config();
        let r = tokio::task::spawn_blocking(move || {
            with_service(&shared, &config, session.as_deref(), f)
        })
        .await
        .unwrap_or_else(|e| Err(Error::Cancelled(format!("memory task failed: {e}"))));
        reply(r)
    }
}

#[tool_router(router = memory_router, vis = "pub(crate)")]
impl CodexFree {
    /// Save one note about the task in flight for this project, kept across conversations
    /// (outside the repository). The same key replaces the note; an empty value deletes it.
    /// All notes share a byte budget (memory.maxBytes); a note that does not fit is refused
    /// and nothing changes. A note holding a secret (key, token, password) is refused too:
    /// the error names the rule; retry saying where the secret lives, not its value.
    #[tool(annotations(
        title = "Remember",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn remember(
        &self,
        Parameters(a): Parameters<RememberArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        let home = self.shared.home.clone();
        self.memory_call(&ext, move |s| {
            s.remember(&a).inspect(|_| refresh_linked_copies(&home))
        })
        .await
    }

    /// The saved plan and notes of this project (the "Saved state" section of the
    /// instructions), paged by `offset` when long.
    #[tool(annotations(title = "Recall", read_only_hint = true, open_world_hint = false))]
    async fn recall(
        &self,
        Parameters(a): Parameters<RecallArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        let home = self.shared.home.clone();
        let config = self.client_config();
        let ceiling = codex_free_core::tokens::bytes_for(config.output.max_tool_output_tokens);
        self.memory_call(&ext, move |s| {
            let text = s.recall(&a)?;
            // A client that ignores instructions gets the same saved state
            // and memory summary from recall; the summary follows the last page.
            let last_page = codex_free_core::paging::parse_footer(&text).is_none();
            match codex_free_memory::readpath::summary_for_instructions(&home, &config) {
                Some(m) if last_page => Ok(codex_free_core::paging::enforce_ceiling(
                    format!("{text}\n\n{m}"),
                    ceiling,
                )),
                _ => Ok(text),
            }
        })
        .await
    }

    /// Save the task plan (replacing the saved one) so it survives this conversation:
    /// ordered steps, each `pending`, `in_progress` or `completed`, at most one in
    /// progress. An empty plan clears it. A step holding a secret is refused, as in remember.
    #[tool(annotations(
        title = "Update plan",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn update_plan(
        &self,
        Parameters(a): Parameters<UpdatePlanArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        let home = self.shared.home.clone();
        self.memory_call(&ext, move |s| {
            s.update_plan(&a).inspect(|_| refresh_linked_copies(&home))
        })
        .await
    }

    /// List the skills (folders with a SKILL.md) of the project and the user: name,
    /// description and path, paged by `offset`.
    #[tool(annotations(title = "List skills", read_only_hint = true, open_world_hint = false))]
    async fn skills_list(
        &self,
        Parameters(a): Parameters<SkillsListArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        self.memory_call(&ext, move |s| s.skills_list(&a)).await
    }

    /// Read a skill's SKILL.md (or another file in its folder), paged by `offset` lines.
    #[tool(annotations(title = "Read skill", read_only_hint = true, open_world_hint = false))]
    async fn skills_read(
        &self,
        Parameters(a): Parameters<SkillsReadArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        self.memory_call(&ext, move |s| s.skills_read(&a)).await
    }

    /// How to use this server, then the project's environment, saved state, skills and
    /// AGENTS.md. In multi-project mode call it first: it restores this conversation's
    /// project or says set_project_root is required and lists candidates.
    #[tool(annotations(title = "Agent brief", read_only_hint = true, open_world_hint = false))]
    async fn get_agent_brief(
        &self,
        Parameters(a): Parameters<GetAgentBriefArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        self.memory_call(&ext, move |s| s.get_agent_brief(&a)).await
    }

    /// Multi-project mode: the projects under the access root (folders with .git or
    /// AGENTS.md), paged by `offset`.
    #[tool(annotations(
        title = "List projects",
        read_only_hint = true,
        open_world_hint = false
    ))]
    async fn list_projects(
        &self,
        Parameters(a): Parameters<ListProjectsArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        self.memory_call(&ext, move |s| s.list_projects(&a)).await
    }

    /// Multi-project mode: choose the project this conversation works on (a directory inside
    /// the access root). Returns that project's environment, saved state, skills and
    /// AGENTS.md.
    #[tool(annotations(
        title = "Set project root",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn set_project_root(
        &self,
        Parameters(a): Parameters<SetProjectRootArgs>,
        ext: Extensions,
    ) -> CallToolResult {
        self.memory_call(&ext, move |s| s.set_project_root(&a))
            .await
    }
}
