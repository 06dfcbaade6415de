//! Validation of the consolidation's artifacts: hard size budgets, because both files are
//! read into sessions and must stay small (`MEMORY.md` <= 150 lines and 15 KiB,
//! `memory_summary.md` <= 60 lines and 4 KiB, all configurable in the `memories` block) and
//! the summary's structure (a `v1` line, then the four sections in order, as Codex's memory
//! summary has them).
//!
//! The model is never trusted to respect a budget: phase 2 checks the files on disk after
//! the agent stops, asks for one repair, and fails the run (restoring the previous commit)
//! when the files are still wrong. Nothing here truncates or rewrites a file.
//!
//! Invariant: checks only read, through the folder's jail (no links followed).

use std::path::Path;

use codex_free_core::config::MemoriesConfig;

use super::folder::{MEMORY_MD, SUMMARY_MD};
use super::jail::{FolderJail, WritePolicy};

/// The first line of a valid summary (the summary format version).
pub const SUMMARY_VERSION_LINE: &str = "v1";

/// The summary's sections, in the order they must appear.
pub const SUMMARY_SECTIONS: [&str; 4] = [
    "## User Profile",
    "## User preferences",
    "## General Tips",
    "## What's in Memory",
];

/// Size limits of the two artifacts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArtifactBudget {
    /// Lines of `MEMORY.md` (default 150).
    pub memory_max_lines: usize,
    /// Bytes of `MEMORY.md` (default 15,360).
    pub memory_max_bytes: usize,
    /// Lines of `memory_summary.md` (default 60).
    pub summary_max_lines: usize,
    /// Bytes of `memory_summary.md` (default 4,096).
    pub summary_max_bytes: usize,
}

impl ArtifactBudget {
    /// The budget configured in the `memories` block.
    pub fn from_config(m: &MemoriesConfig) -> Self {
        Self {
            memory_max_lines: m.memory_md_max_lines,
            memory_max_bytes: m.memory_md_max_bytes,
            summary_max_lines: m.memory_summary_max_lines,
            summary_max_bytes: m.memory_summary_max_bytes,
        }
    }
}

impl Default for ArtifactBudget {
    fn default() -> Self {
        Self::from_config(&MemoriesConfig::default())
    }
}

/// One problem with an artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The file (`MEMORY.md` or `memory_summary.md`).
    pub file: &'static str,
    /// What is wrong, with the measured figure and the limit.
    pub problem: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file, self.problem)
    }
}

/// Check both artifacts under `root` against `budget` and the summary structure. Empty
/// result = valid.
pub fn check(root: &Path, budget: &ArtifactBudget) -> Vec<Violation> {
    let mut out = Vec::new();
    let jail = match FolderJail::new(root, WritePolicy::ReadOnly) {
        Ok(j) => j,
        Err(e) => {
            out.push(Violation {
                file: MEMORY_MD,
                problem: e.to_string(),
            });
            return out;
        }
    };
    for (file, max_lines, max_bytes) in [
        (MEMORY_MD, budget.memory_max_lines, budget.memory_max_bytes),
        (
            SUMMARY_MD,
            budget.summary_max_lines,
            budget.summary_max_bytes,
        ),
    ] {
        let text = match jail.read_to_string(file) {
            Ok(t) => t,
            Err(codex_free_core::Error::NotFound(_)) => {
                out.push(Violation {
                    file,
                    problem: "missing; it must be written".into(),
                });
                continue;
            }
            Err(e) => {
                out.push(Violation {
                    file,
                    problem: e.to_string(),
                });
                continue;
            }
        };
        if text.trim().is_empty() {
            out.push(Violation {
                file,
                problem: "empty".into(),
            });
            continue;
        }
        out.extend(
            size_problems(&text, max_lines, max_bytes)
                .into_iter()
                .map(|p| Violation {
                    file,
                    problem: p.message,
                }),
        );
        if file == SUMMARY_MD {
            out.extend(
                summary_structure(&text)
                    .into_iter()
                    .map(|problem| Violation { file, problem }),
            );
        }
    }
    out
}

/// One size problem of a file's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeProblem {
    /// The measured figure and the limit, e.g. `400 lines, over the budget of 150 lines`.
    pub message: String,
    /// True for the line limit, false for the byte limit.
    pub lines_over: bool,
}

/// `text` against a line and a byte limit (lines as `str::lines` counts them, bytes of the
/// UTF-8 text). Empty result = within both.
pub fn size_problems(text: &str, max_lines: usize, max_bytes: usize) -> Vec<SizeProblem> {
    let mut out = Vec::new();
    let lines = text.lines().count();
    if lines > max_lines {
        out.push(SizeProblem {
            message: format!("{lines} lines, over the budget of {max_lines} lines"),
            lines_over: true,
        });
    }
    if text.len() > max_bytes {
        out.push(SizeProblem {
            message: format!("{} bytes, over the budget of {max_bytes} bytes", text.len()),
            lines_over: false,
        });
    }
    out
}

/// Structure problems of a summary: the first non-blank line must be `v1`, and each of
/// [`SUMMARY_SECTIONS`] must appear once, as its own line, in order.
pub fn summary_structure(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = text.lines().map(str::trim_end);
    let first = lines.by_ref().find(|l| !l.trim().is_empty());
    if first != Some(SUMMARY_VERSION_LINE) {
        out.push(format!(
            "the first line must be exactly `{SUMMARY_VERSION_LINE}` (found {:?})",
            first.unwrap_or("")
        ));
    }
    let rest: Vec<&str> = text.lines().map(str::trim_end).collect();
    let mut last_pos = 0usize;
    for s in SUMMARY_SECTIONS {
        let hits: Vec<usize> = rest
            .iter()
            .enumerate()
            .filter(|(_, l)| **l == s)
            .map(|(i, _)| i)
            .collect();
        match hits.as_slice() {
            [] => out.push(format!("section `{s}` is missing")),
            [i] => {
                if *i < last_pos {
                    out.push(format!(
                        "section `{s}` is out of order (required order: {})",
                        SUMMARY_SECTIONS.join(", ")
                    ));
                }
                last_pos = *i;
            }
            _ => out.push(format!("section `{s}` appears {} times", hits.len())),
        }
    }
    out
}

/// The message of the single repair turn: what is wrong and what to do.
pub fn repair_request_text(problems: &[String], budget: &ArtifactBudget) -> String {
    let mut s = String::from(
        "The memory artifacts are not acceptable yet. Fix every problem below by editing the files with the tools, then stop.\n\n",
    );
    for p in problems {
        s.push_str(&format!("- {p}\n"));
    }
    s.push_str(&format!(
        "\nLimits: MEMORY.md at most {} lines and {} bytes; memory_summary.md at most {} lines and {} bytes, starting with `{SUMMARY_VERSION_LINE}` and then the sections {} in that order. To get under a budget, remove the weakest lines: keep stable preferences, hard boundaries and decision principles; drop progress logs, one-off incident detail and facts that can be checked live (versions, commits, deploy state). Do not add new content. For a stale_fact finding, move the value out of the loaded files and keep a \"verify at task start\" line naming the check instead; for a conflict, keep the one rule that holds.\n",
        budget.memory_max_lines,
        budget.memory_max_bytes,
        budget.summary_max_lines,
        budget.summary_max_bytes,
        SUMMARY_SECTIONS.join(", ")
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid_summary() -> String {
        format!(
            "v1\n{}\n- a\n{}\n- b\n{}\n- c\n{}\n- d\n",
            SUMMARY_SECTIONS[0], SUMMARY_SECTIONS[1], SUMMARY_SECTIONS[2], SUMMARY_SECTIONS[3]
        )
    }

    #[test]
    fn valid_artifacts_pass_and_oversize_fails() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join(MEMORY_MD), "# Memory\n- x\n").unwrap();
        std::fs::write(d.path().join(SUMMARY_MD), valid_summary()).unwrap();
        let b = ArtifactBudget::default();
        assert!(check(d.path(), &b).is_empty(), "{:?}", check(d.path(), &b));
        let big: String = (0..400).map(|i| format!("- line {i}\n")).collect();
        std::fs::write(d.path().join(MEMORY_MD), &big).unwrap();
        let v = check(d.path(), &b);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].problem.contains("400 lines, over the budget of 150"),
            "{v:?}"
        );
        let big_bytes = "x".repeat(16 * 1024);
        std::fs::write(d.path().join(MEMORY_MD), big_bytes).unwrap();
        assert!(check(d.path(), &b)[0].problem.contains("16384 bytes"));
    }

    #[test]
    fn summary_structure_rules() {
        assert!(summary_structure(&valid_summary()).is_empty());
        let no_version = valid_summary().replacen("v1\n", "", 1);
        assert!(summary_structure(&no_version)[0].contains("first line"));
        let swapped = valid_summary()
            .replace(SUMMARY_SECTIONS[0], "X")
            .replace(SUMMARY_SECTIONS[1], SUMMARY_SECTIONS[0])
            .replace("X", SUMMARY_SECTIONS[1]);
        assert!(
            summary_structure(&swapped)
                .iter()
                .any(|p| p.contains("out of order")),
            "{:?}",
            summary_structure(&swapped)
        );
        let missing = valid_summary().replace(SUMMARY_SECTIONS[2], "## Tips");
        assert_eq!(
            summary_structure(&missing),
            vec![format!("section `{}` is missing", SUMMARY_SECTIONS[2])]
        );
    }

    #[test]
    fn missing_files_are_violations() {
        let d = tempfile::tempdir().unwrap();
        let v = check(d.path(), &ArtifactBudget::default());
        assert_eq!(v.len(), 2);
        assert!(v.iter().all(|v| v.problem.contains("missing")));
    }
}
