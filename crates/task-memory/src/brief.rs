//! The agent brief and the MCP `instructions` text, rebuilt for every
//! session: full saved state for a single project, project-neutral for multi-project.
//!
//! Single-project instructions, rebuilt for every MCP session, are these sections in this
//! order: the agent brief, `## Environment`, `## Saved state` (plan and notes, the same text
//! `recall` returns), `## Skills`, then `## Project instructions (AGENTS.md)` cut at
//! `projectDoc.maxBytes` with a visible marker. Multi-project instructions given at
//! initialize are project-neutral (the conversation id only arrives with tool calls); the
//! full text for the bound project comes from `get_agent_brief`.
//!
//! Invariant: building instructions never fails and never writes: a store that cannot be
//! read shows as a line inside its section.

use std::path::Path;

use super::bindings::Bindings;
use super::skills::SkillSearch;
use super::store::TaskMemory;
use codex_free_core::config::Config;
use codex_free_core::jail::Jail;
use codex_free_core::paging;

/// Heading of the AGENTS.md section.
pub const AGENTS_HEADING: &str = "## Project instructions (AGENTS.md)";

const BRIEF_COMMON: &str = "\
- Bounded output: a tool that could return a lot stops at a budget. When it does, its last \
line says so and names the argument that continues (for example `offset=1000`); call again \
with it. Without such a line you got everything.
- Task memory: `remember(key, value)` keeps one note for this project (the same key replaces \
it, an empty value deletes it); `update_plan(explanation?, plan)` saves your step list (at \
most one step `in_progress`); `recall()` shows both. They come back in every new \
conversation on this project under \"Saved state\", so record what would be costly to find \
again: decisions and why, commands that work, where things live, what is left to do. Keep \
notes short and current; all notes share a byte budget and a note that does not fit is \
refused, never silently dropped.
- AGENTS.md describes the project and belongs in the repository; notes describe the task \
in flight and stay outside it. Do not copy one into the other.
- Skills are reusable workflows (folders with a SKILL.md): `skills_list` shows them, \
`skills_read(name)` loads one when the task matches its description.
";

/// The fixed brief telling an agent how to use this server. `multi_project` adds how to
/// choose the project (`get_agent_brief`, `list_projects`, `set_project_root`).
pub fn agent_brief(multi_project: bool) -> String {
    let mut out = String::from("# Codex Free\n\n");
    if multi_project {
        out.push_str(
            "This server was started over a folder holding several projects. Each conversation works on one of \
             them: call `get_agent_brief` first. It restores the project this conversation chose earlier, or says \
             that `set_project_root(path)` is required and lists candidates (`list_projects` pages through them). \
             File, search, command and memory tools act on the chosen project.\n\n",
        );
    } else {
        out.push_str("This server gives you tools over one project.\n\n");
    }
    out.push_str(BRIEF_COMMON);
    out
}

/// `## Environment` section from the environment text (e.g. `tools::doc` output); the
/// heading is added unless the text already starts with it.
pub fn environment_section(environment: &str) -> String {
    let e = environment.trim();
    let mut out = if e.starts_with("## Environment") {
        e.to_string()
    } else {
        format!("## Environment\n\n{e}")
    };
    out.push('\n');
    out
}

/// AGENTS.md text cut to at most `max_bytes` (`projectDoc.maxBytes`) for callers holding the
/// raw file (the server uses `tools::doc::project_doc_for_instructions`, which pages by
/// bytes and points to `get_project_doc`). When cut, the cut falls on a line end where possible and a
/// last line says how much was shown and how to read the rest, e.g. `(AGENTS.md cut at
/// projectDoc.maxBytes: showing lines 1-700, 32001 of 51234 bytes — call read_file with
/// path="AGENTS.md" and offset=700 for the rest)`.
pub fn bound_agents_md(text: &str, max_bytes: usize) -> String {
    let mut out = String::new();
    if text.len() <= max_bytes {
        out.push_str(text.trim_end());
        out.push('\n');
        return out;
    }
    let mut cut = max_bytes.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let line_cut = text[..cut].rfind('\n').map(|i| i + 1);
    let (shown, whole_lines) = match line_cut {
        Some(i) => (&text[..i], true),
        None => (&text[..cut], false),
    };
    let lines = shown.matches('\n').count();
    out.push_str(shown);
    if !shown.ends_with('\n') && !shown.is_empty() {
        out.push('\n');
    }
    let footer = if whole_lines {
        paging::agents_md_lines_footer(lines, shown.len(), text.len())
    } else {
        paging::agents_md_first_line_footer(shown.len(), text.len())
    };
    out.push_str(&footer);
    out.push('\n');
    out
}

/// The parts of a project's instructions that come from outside this module.
#[derive(Debug, Clone, Copy)]
pub struct ProjectTexts<'a> {
    /// Environment description (OS, shell, project root, git state ...).
    pub environment: &'a str,
    /// The project's AGENTS.md as it should appear, already cut at `projectDoc.maxBytes`
    /// with its marker (`tools::doc::project_doc_for_instructions` or [`bound_agents_md`]);
    /// `None` when there is none.
    pub agents_md: Option<&'a str>,
}

/// Everything an agent needs about one project, as one markdown text: `preamble` (the
/// agent brief, or a "bound to" line), environment, saved state, skills, AGENTS.md.
pub fn project_text(
    preamble: &str,
    saved_state: &str,
    skills_section: &str,
    texts: ProjectTexts<'_>,
) -> String {
    let mut parts = vec![
        preamble.trim_end().to_string() + "\n",
        environment_section(texts.environment),
        saved_state.trim_end().to_string() + "\n",
        skills_section.trim_end().to_string() + "\n",
    ];
    if let Some(a) = texts.agents_md {
        parts.push(format!("{AGENTS_HEADING}\n\n{}\n", a.trim_end()));
    }
    parts.join("\n")
}

/// The `## Saved state` section of `root`'s task memory; a store that cannot be opened or
/// read becomes a line inside the section.
pub fn saved_state_for(home: &Path, config: &Config, root: &Path, multi_project: bool) -> String {
    match TaskMemory::open(home, &config.memory, root, multi_project) {
        Ok(m) => m.saved_state_or_error(),
        Err(e) => format!("## Saved state\n\nTask memory is not available for this project: {e}\n"),
    }
}

/// Single-project MCP `instructions`: brief, environment, saved state, skills,
/// AGENTS.md, for the project of `project`; skills come from [`SkillSearch::from_env`].
pub fn single_project_instructions(
    home: &Path,
    config: &Config,
    project: &Jail,
    texts: ProjectTexts<'_>,
) -> String {
    let saved = saved_state_for(home, config, project.root(), false);
    let skills = SkillSearch::from_env(project, home).instructions_section();
    project_text(&agent_brief(false), &saved, &skills, texts)
}

/// Multi-project MCP `instructions` at initialize: the brief only, naming no
/// project (none is bound before the conversation picks one).
pub fn multi_project_instructions() -> String {
    agent_brief(true)
}

/// `get_agent_brief` for a conversation bound to the project of `project` in multi-project mode:
/// a line naming the project, then the same sections as single-project instructions
/// (memory store chosen with the multi-project `memory.dir` rule).
pub fn bound_brief(
    home: &Path,
    config: &Config,
    project: &Jail,
    restored: bool,
    texts: ProjectTexts<'_>,
) -> String {
    let project_root = project.root();
    let preamble = format!(
        "{}\n\nThis conversation is bound to the project {}{}. Tools act on it; `set_project_root` switches explicitly.\n",
        agent_brief(true).trim_end(),
        project_root.display(),
        if restored {
            " (restored from an earlier call)"
        } else {
            ""
        }
    );
    let saved = saved_state_for(home, config, project_root, true);
    let skills = SkillSearch::from_env(project, home).instructions_section();
    project_text(&preamble, &saved, &skills, texts)
}

/// `get_agent_brief` for a conversation with no project yet: the brief, the
/// statement that `set_project_root` is required, and the first page of candidates.
pub fn unbound_brief(bindings: &Bindings, page: usize) -> String {
    format!(
        "{}\nNo project is selected for this conversation: call `set_project_root(path)` before using other tools.\n\n{}",
        agent_brief(true),
        bindings.list_projects_text(0, page)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_md_under_limit_is_whole() {
        assert_eq!(bound_agents_md("a\nb\n", 10), "a\nb\n");
    }

    #[test]
    fn agents_md_cut_on_line_with_marker() {
        let text: String = (0..100).map(|i| format!("rule {i:03}\n")).collect(); // 9 bytes per line
        let s = bound_agents_md(&text, 50);
        assert!(s.contains("rule 004\n(AGENTS.md cut"), "{s}");
        assert!(!s.contains("rule 005"));
        assert!(s.ends_with("showing lines 1-5, 45 of 900 bytes — call read_file with path=\"AGENTS.md\" and offset=5 for the rest)\n"), "{s}");
    }

    #[test]
    fn agents_md_single_long_line_cut_on_char_boundary() {
        let s = bound_agents_md(&"é".repeat(100), 51);
        assert!(s.contains("showing 50 of 200 bytes"), "{s}");
    }

    #[test]
    fn environment_heading_added_once() {
        assert_eq!(
            environment_section("os: linux"),
            "## Environment\n\nos: linux\n"
        );
        assert_eq!(
            environment_section("## Environment\n\nx\n"),
            "## Environment\n\nx\n"
        );
    }

    #[test]
    fn multi_brief_is_project_neutral() {
        let t = multi_project_instructions();
        assert!(t.contains("set_project_root") && t.contains("get_agent_brief"));
        assert!(!t.contains("## Saved state") && !t.contains("/"), "{t}");
    }
}
