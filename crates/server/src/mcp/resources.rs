//! MCP resources and prompts: what a client can attach or turn into a command without a
//! tool call.
//!
//! Resources (`codex-free://` URIs, text, each bounded by the tool-output ceiling and
//! ending with a continuation line naming the tool that reads on when cut):
//! - `codex-free://saved-state`: the project's saved plan and notes (what `recall` returns);
//! - `codex-free://memory/summary`: `memory_summary.md` of the memory folder;
//! - `codex-free://memory/MEMORY.md`: the consolidated `MEMORY.md`;
//! - `codex-free://skills/<name>`: one skill's `SKILL.md`.
//!
//! In multi-project mode the saved state and skills are those of the conversation's bound
//! project (listed only once it is bound). Memory resources are listed only when memories
//! are on and the file exists.
//!
//! Prompts (Claude Code shows them as `/mcp__<server>__<prompt>`): `resume` (saved state,
//! memory summary and brief of this project), `remember-this` (save what was just settled
//! as a note), `review-memory` (go over the notes and plan and fix what is stale).

use rmcp::model::{
    GetPromptResult, Prompt, PromptArgument, PromptMessage, ReadResourceResult, Resource,
    ResourceContents, Role,
};

use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_memory::readpath;
use codex_free_task_memory::skills::SkillSearch;
use codex_free_task_memory::{RecallArgs, brief};

use super::server::{CodexFree, ConversationId, Mode};
use super::tools_task_memory::with_service;

/// URI of the saved state.
pub const SAVED_STATE_URI: &str = "codex-free://saved-state";
/// URI of the memory summary.
pub const SUMMARY_URI: &str = "codex-free://memory/summary";
/// URI of `MEMORY.md`.
pub const MEMORY_MD_URI: &str = "codex-free://memory/MEMORY.md";
/// Prefix of skill URIs (`codex-free://skills/<name>`).
pub const SKILL_URI_PREFIX: &str = "codex-free://skills/";

/// The prompts offered.
pub fn prompts() -> Vec<Prompt> {
    vec![
        Prompt::new(
            "resume",
            Some("Pick up where the last conversation on this project stopped: saved plan and notes, memory summary, and how to use these tools."),
            None,
        )
        .with_title("Resume this project"),
        Prompt::new(
            "remember-this",
            Some("Save what was just decided or found out as a task note (remember), so the next conversation has it."),
            Some(vec![
                PromptArgument::new("what")
                    .with_description("What to remember; empty = what was just settled in this conversation")
                    .with_required(false),
            ]),
        )
        .with_title("Remember this"),
        Prompt::new(
            "review-memory",
            Some("Go over this project's saved notes and plan: update what is stale, delete what is obsolete."),
            None,
        )
        .with_title("Review saved memory"),
    ]
}

impl CodexFree {
    /// `resources/list` for the conversation `conv`.
    pub(crate) fn list_resources_for(&self, conv: &ConversationId) -> Vec<Resource> {
        let config = self.client_config();
        let mut out = Vec::new();
        let project = self.resource_project(conv);
        if project.is_some() {
            out.push(
                Resource::new(SAVED_STATE_URI, "saved-state")
                    .with_title("Saved state")
                    .with_description(
                        "This project's saved plan and notes (as recall returns them)",
                    )
                    .with_mime_type("text/markdown"),
            );
        }
        if readpath::summary_for_instructions(&self.shared.home, &config).is_some() {
            out.push(
                Resource::new(SUMMARY_URI, "memory-summary")
                    .with_title("Memory summary")
                    .with_description("memory_summary.md of the memory folder")
                    .with_mime_type("text/markdown"),
            );
        }
        let memories_on = config.memories.enabled && config.memories.use_memories;
        let memory_md = codex_free_memory::folder::folder_path(&self.shared.home).join("MEMORY.md");
        if memories_on && memory_md.is_file() {
            out.push(
                Resource::new(MEMORY_MD_URI, "MEMORY.md")
                    .with_title("MEMORY.md")
                    .with_description("The consolidated memory of past sessions")
                    .with_mime_type("text/markdown"),
            );
        }
        if let Some(p) = &project {
            for s in SkillSearch::from_env(p, &self.shared.home).discover() {
                out.push(
                    Resource::new(format!("{SKILL_URI_PREFIX}{}", s.name), s.name.clone())
                        .with_title(format!("Skill: {}", s.name))
                        .with_description(s.description.clone())
                        .with_mime_type("text/markdown"),
                );
            }
        }
        out
    }

    /// `resources/read` of `uri` for the conversation `conv`.
    ///
    /// Errors: [`Error::NotFound`]-style [`Error::InvalidArgument`] for an unknown URI;
    /// the errors of the tool that returns the same text.
    pub(crate) fn read_resource_for(
        &self,
        conv: &ConversationId,
        uri: &str,
    ) -> Result<ReadResourceResult> {
        let text = match uri {
            SAVED_STATE_URI => with_service(
                &self.shared,
                &self.client_config(),
                conv.0.as_deref(),
                |s| s.recall(&RecallArgs::default()),
            )?,
            SUMMARY_URI => self.read_memory_file("memory_summary.md")?,
            MEMORY_MD_URI => self.read_memory_file("MEMORY.md")?,
            u if u.starts_with(SKILL_URI_PREFIX) => {
                let name = &u[SKILL_URI_PREFIX.len()..];
                let project = self.resource_project(conv).ok_or_else(|| {
                    Error::Binding(
                        "no project is selected for this conversation: call set_project_root first"
                            .into(),
                    )
                })?;
                let config = self.client_config();
                SkillSearch::from_env(&project, &self.shared.home).read_text(
                    name,
                    0,
                    None,
                    &config.output,
                )?
            }
            other => {
                return Err(Error::InvalidArgument(format!(
                    "unknown resource {other:?}: resources/list names the ones this server has"
                )));
            }
        };
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, uri).with_mime_type("text/markdown"),
        ]))
    }

    /// `prompts/get` of `name` with `args`.
    ///
    /// Errors: [`Error::InvalidArgument`] for an unknown prompt.
    pub(crate) fn get_prompt_for(
        &self,
        conv: &ConversationId,
        name: &str,
        args: Option<&serde_json::Map<String, serde_json::Value>>,
    ) -> Result<GetPromptResult> {
        let text = match name {
            "resume" => {
                let config = self.client_config();
                let saved = with_service(&self.shared, &config, conv.0.as_deref(), |s| {
                    s.recall(&RecallArgs::default())
                })
                .unwrap_or_else(|e| format!("## Saved state\n\n{}\n", e.mcp_text()));
                let summary = readpath::summary_for_instructions(&self.shared.home, &config)
                    .map(|m| format!("\n{m}"))
                    .unwrap_or_default();
                let multi = matches!(self.shared.mode, Mode::Multi { .. });
                format!(
                    "Resume the work on this project from where it stopped. Continue the step in progress of the saved plan unless I say otherwise; keep the plan and notes current with update_plan and remember.\n\n{saved}{summary}\n{}",
                    brief::agent_brief(multi)
                )
            }
            "remember-this" => {
                let what = args
                    .and_then(|a| a.get("what"))
                    .and_then(|v| v.as_str())
                    .map(str::trim)
                    .filter(|s| !s.is_empty());
                match what {
                    Some(w) => format!(
                        "Save this as a task note with remember(key, value): pick a short key that says what it is about (reuse an existing key if it updates that note), and write the value so a later conversation can act on it without this one:\n\n{w}"
                    ),
                    None => "Save what we just settled (a decision and why, a command that works, where something lives, or what is left to do) as a task note with remember(key, value): a short key, and a value a later conversation can act on without this one. Reuse an existing key when it updates that note.".into(),
                }
            }
            "review-memory" => "Call recall and review this project's saved notes and plan against the code as it is now. For each note: keep it if still true, rewrite it with remember (same key) if it is stale, delete it with remember(key, \"\") if it is obsolete. Then make the plan match the real state with update_plan. Report what you changed in one short list.".into(),
            other => {
                return Err(Error::InvalidArgument(format!(
                    "unknown prompt {other:?}: prompts/list names the ones this server has"
                )));
            }
        };
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            text,
        )]))
    }

    /// The project a resource read is about: the single project, or the conversation's
    /// bound one (none while unbound).
    fn resource_project(&self, conv: &ConversationId) -> Option<codex_free_core::jail::Jail> {
        match &self.shared.mode {
            Mode::Single { .. } => Some(self.shared.jail.clone()),
            Mode::Multi { .. } => self.ctx(conv).ok().map(|c| c.jail().clone()),
        }
    }

    /// The first page of a file of the memory folder, bounded by this client's ceiling.
    fn read_memory_file(&self, path: &str) -> Result<String> {
        let config = self.client_config();
        readpath::memories_read(
            &self.shared.home,
            &config,
            &readpath::MemoriesReadArgs {
                path: path.into(),
                offset: None,
                limit: None,
                max_tokens: Some(config.output.max_tool_output_tokens.saturating_sub(200)),
                byte_offset: None,
            },
        )
    }
}
