//! Task memory: keyed notes and a plan per project that outlive the conversation that wrote
//! them , the skills catalogue, the
//! agent brief, the saved-state text put into MCP `instructions`, and the bindings that tie
//! a multi-project conversation to one project.
//!
//! Layout under the state home (see `docs/task-memory.md`):
//! - `projects/<name>-<hash>/memory.json`: notes + plan of one canonical project root
//!   ([`store`]).
//! - `conversation-projects/<sha256(access root)>/<sha256-derived key>.json`: which project
//!   a multi-project conversation chose ([`bindings`]).
//!
//! Invariant: nothing in this module writes inside a served project; every write to the
//! state home takes the file's cross-process lock, re-reads under it, and replaces the file
//! atomically; the raw `openai/session` value is never written anywhere. Deliberately
//! absent: eviction (a note over budget is refused, never makes room by dropping others).

pub mod bindings;
pub mod brief;
pub mod plan;
pub mod service;
pub mod skills;
pub mod store;

use codex_free_core::paging;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use bindings::{Binding, Bindings};
pub use plan::{Plan, PlanItem, StepStatus};
pub use service::{OwnedTexts, Scope, Service};
pub use skills::{Skill, SkillDir, SkillSearch};
pub use store::TaskMemory;

/// Arguments of the `remember` tool.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RememberArgs {
    /// Name of the note, e.g. "build-command" or "decision/db-schema". Writing to an
    /// existing key replaces its value. One line, at most 128 bytes.
    pub key: String,
    /// The note's text (markdown allowed). An empty value deletes the note. All notes of
    /// the project together must fit the `memory.maxBytes` budget (default 16384 bytes);
    /// a note that does not fit is refused and nothing is changed. A key or value holding a
    /// credential (API key, token, password, private key) is refused: notes are kept in clear
    /// and shown to every new session; name where the secret lives instead.
    pub value: String,
}

/// Arguments of the `update_plan` tool; the same shape as Codex's plan tool.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct UpdatePlanArgs {
    /// Optional short note on why the plan changed.
    #[serde(default)]
    pub explanation: Option<String>,
    /// The whole plan, replacing the saved one: ordered steps, each with a status. At most
    /// one step may be `in_progress`. An empty list clears the saved plan. A step or
    /// explanation holding a credential is refused, as in `remember`.
    pub plan: Vec<PlanItem>,
}

/// Arguments of the `recall` tool. All optional: a plain `recall()` returns the
/// whole saved state when it fits the tool-output cap.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct RecallArgs {
    /// Number of lines to skip (from a previous call's continuation line). Default 0.
    #[serde(default)]
    pub offset: Option<usize>,
}

/// Arguments of the `get_agent_brief` tool. All optional.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct GetAgentBriefArgs {
    /// Number of lines to skip (from a previous call's continuation line). Default 0.
    #[serde(default)]
    pub offset: Option<usize>,
}

/// Arguments of the `set_project_root` tool (multi-project mode only).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SetProjectRootArgs {
    /// The project directory this conversation works on: absolute, or relative to the
    /// access root the server was started with. It must resolve (after following
    /// symlinks) to a directory inside the access root. `list_projects` shows candidates.
    pub path: String,
}

/// Arguments of the `skills_list` tool.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct SkillsListArgs {
    /// Number of skills to skip (from a previous call's continuation line). Default 0.
    #[serde(default)]
    pub offset: Option<usize>,
}

/// Arguments of the `skills_read` tool.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SkillsReadArgs {
    /// The skill's name as shown by `skills_list`.
    pub name: String,
    /// Number of lines to skip (from a previous call's continuation line). Default 0.
    #[serde(default)]
    pub offset: Option<usize>,
    /// A file inside the skill's folder to read instead of SKILL.md, relative to that
    /// folder (e.g. "references/api.md"). Default: SKILL.md.
    #[serde(default)]
    pub file: Option<String>,
}

/// Arguments of the `list_projects` tool (multi-project mode only).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ListProjectsArgs {
    /// Number of projects to skip (from a previous call's continuation line). Default 0.
    #[serde(default)]
    pub offset: Option<usize>,
}

/// The continuation line every bounded listing in this module ends with when cut, e.g.
/// `(showing skills 1-50 of 120 — call again with offset=50 for the rest)`. `what` is the
/// plural noun, `start` the 0-based index of the first item shown, `shown` how many were
/// shown, `total` how many exist.
pub(crate) fn continuation(what: &str, start: usize, shown: usize, total: usize) -> String {
    paging::entries_footer(what, start + 1, start + shown, total, start + shown)
}

/// Bytes kept free for the continuation line when paging.
const CONTINUATION_RESERVE: usize = 160;

/// One page of `text`: whole lines from line `offset` (0-based count of lines skipped), at
/// most `max_lines` lines and `max_bytes` bytes in all (continuation line included), cut by
/// [`paging::page_lines`] and ended by its footer naming `call` (e.g. `call again` or
/// `call get_agent_brief`); paging with the named offsets yields every line exactly once.
/// A single line longer than the budget is shown cut with a line saying so, and the next
/// offset skips it.
///
/// Errors: [`codex_free_core::Error::InvalidArgument`] when `offset` is past the last line.
pub(crate) fn page_text(
    text: &str,
    offset: usize,
    max_lines: usize,
    max_bytes: usize,
    call: paging::Call<'_>,
) -> codex_free_core::Result<String> {
    let limits = paging::LineLimits {
        max_lines,
        max_bytes: max_bytes.saturating_sub(CONTINUATION_RESERVE).max(64),
        max_tokens: None,
    };
    let page = paging::page_lines(text, offset, limits);
    if page.past_end() && (offset > 0 || page.total > 0) {
        return Err(codex_free_core::Error::InvalidArgument(format!(
            "offset = {offset} is past the end ({} lines)",
            page.total
        )));
    }
    Ok(page.render(call))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paging_yields_every_line_once() {
        let text: String = (0..57)
            .map(|i| format!("{}\n", "x".repeat(i % 13)))
            .collect();
        let (got, _) = codex_free_testkit::pages::follow_content(20, |c| {
            let offset = c.map_or(0, |c| c.offset().unwrap() as usize);
            let page = page_text(&text, offset, 7, 400, paging::Call::Again).unwrap();
            assert!(page.len() <= 400, "{}", page.len());
            page
        });
        assert_eq!(got, text);
        assert!(page_text(&text, 57, 7, 400, paging::Call::Again).is_err());
        assert_eq!(page_text("", 0, 7, 400, paging::Call::Again).unwrap(), "");
    }
}
