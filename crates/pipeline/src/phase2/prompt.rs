//! The consolidation agent's instructions (system message) and task (first user message).
//! Written for this project; the rules state the size budgets, the layers of
//! [`codex_free_hygiene`] (rules in `MEMORY.md`, progress in `daily/`, evidence in `archive/`,
//! live facts as checks in the verify-at-task-start section), the test for keeping a line
//! (without it, would a new session make a high-risk wrong decision?) and the required
//! summary structure of [`codex_free_memory::budget`].
//!
//! Invariant: the task embeds at most [`MAX_DIFF_BYTES`] of diff; the prompt names only the
//! four jailed tools.

use codex_free_memory::budget::{ArtifactBudget, SUMMARY_SECTIONS, SUMMARY_VERSION_LINE};
use codex_free_memory::folder::{FileChange, WorkspaceDiff, change_lines};

/// Most bytes of workspace diff handed to the agent (4 MiB); the agent reads files for more.
pub const MAX_DIFF_BYTES: usize = 4 * 1024 * 1024;

/// Put before the task after a sync merge: the memory came from another machine and the
/// diff shows what the union of the evidence holds beyond it.
pub const RECONCILE_NOTE: &str = "RECONCILE: this memory folder is shared between machines and two of them consolidated at the same time. MEMORY.md and memory_summary.md are the other machine's version; the diff below shows the evidence (raw_memories/, rollout_summaries/, notes) that version has not seen. Read the raw memories of every machine and rewrite MEMORY.md and memory_summary.md so they rest on the union of the evidence.";

/// INIT when the folder has no consolidated memory yet, incremental otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// First consolidation: build `MEMORY.md` and the summary from the inputs.
    Init,
    /// Update the existing memory with what changed since the last commit.
    Incremental,
}

/// The system message.
pub fn system(b: &ArtifactBudget) -> String {
    format!(
        "You curate the long-term memory of one software developer who works with AI coding agents. The memory lives in a folder you can reach only through four tools: list_files, read_file, write_file and edit_file. Paths are relative to that folder. You have no shell, no network and no other tools.

Folder layout:
- raw_memories.md: what earlier sessions taught us, one section per rollout (input, read-only).
- rollout_summaries/<stem>.md: one summary per rollout, with its rollout_id (input, read-only).
- raw_memories/<machine>.md and rollout_summaries/<machine>/: the same inputs, one set per machine, when the memory is shared between machines (input, read-only).
- ad_hoc_notes/: notes the user asked to remember explicitly (input, read-only).
- MEMORY.md: the consolidated memory you maintain; loaded by default, so it holds only what passes the keep test below.
- memory_summary.md: the short digest every new session loads first; you maintain it.
- daily/YYYY-MM-DD.md: progress by day (what was done, what is next). Progress from the inputs and from ad-hoc notes lands here first, under the day it happened; you may write these files.
- archive/: evidence — incident timelines, release read-backs, debugging detail, old snapshots. Kept and searchable with memories_search, never loaded by default; you may write files here.
- skills/<name>/SKILL.md: optional reusable procedures you may write when a routine recurs.

Layers: stable preferences, hard boundaries and decision principles go to MEMORY.md; progress goes to daily/; evidence goes to archive/; live facts (current commit, deployed or released version, CI and environment state, who is away) are not stored anywhere as values. Move, never delete: a line that leaves MEMORY.md because it is progress or evidence is written to daily/ or archive/ first.

MEMORY.md rules:
- At most {ml} lines and {mb} bytes. These are hard limits checked by code.
- Keep what a new session would get badly wrong without: stable preferences, hard boundaries (secrets, licences, what must never run), and decision principles. Ask of every line: without it, would a new session make a high-risk wrong decision? If not, leave it out.
- Do not store progress logs, one-off incident detail or facts that change (current commit, versions, deploy state). Where such a fact matters, list it in a last section `{verify}`: one line per fact, written as the check to run at task start (e.g. \"- Verify the deployed version with the deploy tool before relying on it.\"), never as the value.
- When the file is full, a new line must replace a weaker one. Merge duplicates; drop what the inputs no longer support (inputs that disappeared were forgotten on purpose).
- Cite the evidence of each entry with its rollout ids, e.g. `(rollouts: <id>, <id>)`, so readers can find the rollout summary.

memory_summary.md rules:
- At most {sl} lines and {sb} bytes.
- The first line is exactly `{v}`. Then these sections, each once and in this order: {sections}.
- Re-derive it from MEMORY.md every time MEMORY.md changes; never let it say something MEMORY.md does not.
- Render the verify-at-task-start list under `## General Tips` as checks to run, never as values.
- The last section lists what can be found in the folder (MEMORY.md topics, skills) so a session knows when to read more.

Write plain Markdown without trailing spaces or trailing blank lines. Work with the tools; when both files are complete and within their limits, answer with one short paragraph saying what changed, and make no further tool calls.",
        ml = b.memory_max_lines,
        mb = b.memory_max_bytes,
        sl = b.summary_max_lines,
        sb = b.summary_max_bytes,
        v = SUMMARY_VERSION_LINE,
        verify = codex_free_hygiene::VERIFY_HEADING,
        sections = SUMMARY_SECTIONS.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", "),
    )
}

/// The task message: mode, input count, changed paths and the (capped) diff.
pub fn task(mode: Mode, inputs: usize, diff: &WorkspaceDiff) -> String {
    let head = match mode {
        Mode::Init => "INIT: the folder has no consolidated memory yet. Read the inputs and write MEMORY.md and memory_summary.md from scratch.".to_string(),
        Mode::Incremental => "INCREMENTAL: MEMORY.md and memory_summary.md exist. Update them for the changes below: fold in new evidence, remove what depended on inputs that are gone, keep the rest. Read the current files before editing.".to_string(),
    };
    let files: Vec<FileChange> = diff.changes.clone();
    format!(
        "{head}\n\nSelected raw memories: {inputs}.\n\nChanged since the last consolidation (A added, M modified, D deleted):\n{}\nDiff against the last consolidation{}:\n```diff\n{}```\n",
        change_lines(&files),
        if diff.truncated {
            " (cut to fit the model's context window; read the files for the rest)".to_string()
        } else {
            String::new()
        },
        diff.patch
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_carry_budgets_and_structure() {
        let s = system(&ArtifactBudget::default());
        assert!(s.contains("150 lines and 15360 bytes"));
        assert!(s.contains("`## What's in Memory`"));
        assert!(s.contains("daily/YYYY-MM-DD.md") && s.contains("archive/"));
        assert!(s.contains("`## Verify at task start`"));
        assert!(s.contains("would a new session make a high-risk wrong decision"));
        let t = task(
            Mode::Init,
            3,
            &WorkspaceDiff {
                changes: vec![],
                patch: "+x\n".into(),
                truncated: true,
            },
        );
        assert!(t.starts_with("INIT"));
        assert!(t.contains("cut to fit the model's context window"));
    }
}
