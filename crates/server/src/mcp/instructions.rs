//! The `instructions` of a new MCP session, laid out for the client that asked
//! ([`super::clients`]).
//!
//! - Unknown clients get the full default layout (brief, environment, saved state, skills,
//!   AGENTS.md, then the memory summary: `task_memory::brief`).
//! - Known clients get the same content ordered by value: one line saying `recall` returns
//!   the saved state and memory summary, then the saved plan and notes, the memory summary,
//!   a short tool guide, the environment, skills, and AGENTS.md (only a pointer to it when
//!   the client loads AGENTS.md itself).
//! - A client that keeps only the first N characters of `instructions` gets at most N: whole
//!   sections while they fit, then as many whole items (plan steps, notes, summary lines) of
//!   the next one as fit, then a last line naming exactly what was left out and which tool
//!   returns it. Nothing is cut silently.
//!
//! Invariant: building never fails and never writes (a store that cannot be read shows as
//! a line, as in the default layout).

use codex_free_task_memory::brief;
use codex_free_task_memory::skills::SkillSearch;

use super::clients::{ClientProfile, js_len};
use super::server::{CodexFree, Mode};

/// One part of the instructions, and where the model gets it whole.
#[derive(Debug, Clone)]
struct Section {
    /// What it is, for the "left out" line (`the saved state`).
    what: &'static str,
    /// The markdown text (ends with `\n`).
    text: String,
    /// The tool that returns it whole.
    tool: &'static str,
    /// Whole items of it may be shown when it does not fit.
    splittable: bool,
}

/// The short tool guide of the prioritised layout (the default layout has the long brief).
const GUIDE: &str = "## Using these tools\n\n\
- A cut result ends with a line naming the argument that continues (e.g. `offset=1000`); without such a line you got everything.\n\
- `remember(key, value)` saves one note for this project and `update_plan(plan)` the step list; both come back in every new conversation. Record decisions and why, commands that work, where things live, what is left.\n\
- Skills: `skills_list`, then `skills_read(name)` when the task matches one.\n";

impl CodexFree {
    /// The instructions for a session of `client` (`None`: unknown client, default layout).
    pub(crate) fn instructions_for(&self, client: Option<&'static ClientProfile>) -> String {
        let Some(p) = client else {
            return self.instructions();
        };
        let (head, sections) = self.sections(p);
        layout(&head, &sections, p)
    }

    /// The first line and the sections of the prioritised layout, in order of value.
    fn sections(&self, p: &ClientProfile) -> (String, Vec<Section>) {
        let shared = &self.shared;
        let config = self.client_config();
        let mut sections = Vec::new();
        if let Some(w) = self.sandbox_status().warning {
            sections.push(Section {
                what: "the sandbox warning",
                text: format!("WARNING: {w}.\n"),
                tool: "get_environment",
                splittable: false,
            });
        }
        let summary = codex_free_memory::readpath::summary_for_instructions(&shared.home, &config)
            .map(|text| Section {
                what: "the memory summary",
                text,
                tool: "recall",
                splittable: true,
            });
        let head = match &shared.mode {
            Mode::Single { root } => {
                sections.push(Section {
                    what: "the saved state",
                    text: brief::saved_state_for(&shared.home, &config, root, false),
                    tool: "recall",
                    splittable: true,
                });
                sections.extend(summary);
                sections.push(Section {
                    what: "the tool guide",
                    text: GUIDE.into(),
                    tool: "get_agent_brief",
                    splittable: false,
                });
                let texts =
                    super::tools_task_memory::project_texts(&shared.jail, &config, &shared.home);
                sections.push(Section {
                    what: "the environment",
                    text: brief::environment_section(&texts.environment),
                    tool: "get_environment",
                    splittable: true,
                });
                sections.push(Section {
                    what: "the skills list",
                    text: SkillSearch::from_env(&shared.jail, &shared.home).instructions_section(),
                    tool: "skills_list",
                    splittable: true,
                });
                match (&texts.agents_md, p.loads_agents_md) {
                    (Some(_), true) => sections.push(Section {
                        what: "the AGENTS.md pointer",
                        text: format!(
                            "{}\n\n{} loads AGENTS.md itself, so it is not repeated here; `get_project_doc` returns it.\n",
                            brief::AGENTS_HEADING,
                            p.label
                        ),
                        tool: "get_project_doc",
                        splittable: false,
                    }),
                    (Some(a), false) => sections.push(Section {
                        what: "AGENTS.md",
                        text: format!("{}\n\n{}\n", brief::AGENTS_HEADING, a.trim_end()),
                        tool: "get_project_doc",
                        splittable: true,
                    }),
                    (None, _) => {}
                }
                "# Codex Free\n\nTools over one project. `recall` returns this project's saved plan and notes and the memory summary in full.\n".to_string()
            }
            Mode::Multi { .. } => {
                sections.push(Section {
                    what: "the brief",
                    text: brief::multi_project_instructions(),
                    tool: "get_agent_brief",
                    splittable: true,
                });
                sections.extend(summary);
                "# Codex Free\n\nTools over the projects of a folder. Call `get_agent_brief` first: it restores this conversation's project or lists candidates; then `recall` returns that project's saved plan and notes.\n".to_string()
            }
        };
        (head, sections)
    }
}

/// Join `head` and `sections`; when `p` keeps only N characters and the whole does not fit,
/// cut as the module doc says.
fn layout(head: &str, sections: &[Section], p: &ClientProfile) -> String {
    let whole = std::iter::once(head.to_string())
        .chain(sections.iter().map(|s| s.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    let Some(limit) = p.instructions_max_units else {
        return whole;
    };
    if js_len(&whole) <= limit {
        return whole;
    }
    // Room for the longest possible last line: every section left out.
    let all: Vec<String> = sections
        .iter()
        .map(|s| format!("the rest of {}", s.what))
        .collect();
    let refs: Vec<&Section> = sections.iter().collect();
    let reserve = js_len(&left_out_line(p, limit, &all, &refs)) + 2;
    let room = limit.saturating_sub(reserve);
    let mut out = head.to_string();
    let mut left = Vec::new();
    let mut missing: Vec<&Section> = Vec::new();
    for s in sections {
        if !left.is_empty() {
            left.push(s.what.to_string());
            missing.push(s);
            continue;
        }
        let with = js_len(&out) + 1 + js_len(&s.text);
        if with <= room {
            out.push('\n');
            out.push_str(&s.text);
            continue;
        }
        missing.push(s);
        if !s.splittable {
            left.push(s.what.to_string());
            continue;
        }
        // Whole items: a line and the indented lines that continue it.
        let mut part = String::from("\n");
        let mut shown_any = false;
        let mut cut = false;
        for item in items(&s.text) {
            if js_len(&out) + js_len(&part) + js_len(item) > room {
                cut = true;
                break;
            }
            part.push_str(item);
            shown_any = true;
        }
        if shown_any && cut {
            out.push_str(&part);
            left.push(format!("the rest of {}", s.what));
        } else {
            left.push(s.what.to_string());
        }
    }
    out.push('\n');
    out.push_str(&left_out_line(p, limit, &left, &missing));
    out.push('\n');
    debug_assert!(js_len(&out) <= limit, "{} > {limit}", js_len(&out));
    out
}

/// The last line of cut instructions: what was left out and which tools return it.
fn left_out_line(p: &ClientProfile, limit: usize, left: &[String], missing: &[&Section]) -> String {
    let mut tools: Vec<(&str, Vec<&str>)> = Vec::new();
    for s in missing {
        match tools.iter_mut().find(|(t, _)| *t == s.tool) {
            Some((_, w)) => w.push(s.what),
            None => tools.push((s.tool, vec![s.what])),
        }
    }
    let calls: Vec<String> = tools
        .iter()
        .map(|(t, w)| format!("`{t}` returns {}", w.join(", ")))
        .collect();
    format!(
        "(Cut to fit {}'s {limit}-character limit on instructions. Left out: {}. {}.)",
        p.label,
        left.join(", "),
        calls.join("; ")
    )
}

/// The items of a section: each line with the indented (or blank-then-indented) lines
/// that continue it, so a note or plan step is shown whole or not at all.
fn items(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let cont = line.starts_with("  ") || line.starts_with('\t');
        if at > start && !cont {
            out.push(&text[start..at]);
            start = at;
        }
        at += line.len();
    }
    if at > start {
        out.push(&text[start..at]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::clients::profile_for;

    fn sec(what: &'static str, text: String, tool: &'static str) -> Section {
        Section {
            what,
            text,
            tool,
            splittable: true,
        }
    }

    #[test]
    fn cut_layout_keeps_whole_notes_and_names_what_is_missing() {
        let p = profile_for("claude-code").unwrap();
        let notes: String = (0..40)
            .map(|i| {
                format!(
                    "- `note-{i}`: value {i} {}\n  more of note {i}\n",
                    "x".repeat(20)
                )
            })
            .collect();
        let sections = vec![
            sec(
                "the saved state",
                format!("## Saved state\n\n{notes}"),
                "recall",
            ),
            sec(
                "the memory summary",
                "## Memory\n\nstuff\n".into(),
                "recall",
            ),
            sec(
                "the environment",
                "## Environment\n\nos\n".into(),
                "get_environment",
            ),
        ];
        let out = layout("# Head\n", &sections, p);
        assert!(js_len(&out) <= 2048, "{}", js_len(&out));
        assert!(out.starts_with("# Head\n\n## Saved state\n\n- `note-0`"));
        let last = out.lines().last().unwrap();
        assert_eq!(
            last,
            "(Cut to fit Claude Code's 2048-character limit on instructions. Left out: the rest of the saved state, the memory summary, the environment. `recall` returns the saved state, the memory summary; `get_environment` returns the environment.)"
        );
        // No half note: every note shown has its continuation line.
        let shown = out.matches("- `note-").count();
        assert_eq!(out.matches("  more of note").count(), shown);
        assert!(shown > 5, "{shown}");
        // Everything fits: no cut line.
        let small = vec![sec(
            "the saved state",
            "## Saved state\n\n- `a`: b\n".into(),
            "recall",
        )];
        assert_eq!(
            layout("# Head\n", &small, p),
            "# Head\n\n## Saved state\n\n- `a`: b\n"
        );
    }

    #[test]
    fn items_keep_continuation_lines() {
        assert_eq!(
            items("## H\n\n- a\n  a2\n- b\n"),
            vec!["## H\n", "\n", "- a\n  a2\n", "- b\n"]
        );
    }
}
