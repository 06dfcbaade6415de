//! The saved plan: an ordered list of steps with statuses, in the shape of Codex's
//! `update_plan` tool (`{explanation?, plan: [{step, status}]}`, status one of `pending`,
//! `in_progress`, `completed`, at most one step in progress).
//!
//! Invariant: a [`Plan`] that passed [`Plan::validate`] has non-empty one-line steps and at
//! most one `in_progress` step; rendering is deterministic (no clock reads).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use codex_free_core::Error;
use codex_free_core::Result;

/// Longest step text accepted, in bytes. A step is one line of a checklist, not a document.
pub const MAX_STEP_BYTES: usize = 1024;

/// Status of one plan step (Codex's plan tool values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not started.
    Pending,
    /// Being worked on now (at most one step).
    InProgress,
    /// Done.
    Completed,
}

/// One step of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PlanItem {
    /// What the step does, one line (at most 1024 bytes).
    pub step: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: StepStatus,
}

/// The persisted plan as stored in `memory.json` under `"plan"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// Why the plan last changed, if the agent said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// The steps in order.
    pub steps: Vec<PlanItem>,
    /// When it was last written (RFC 3339, UTC).
    pub updated_at: String,
}

impl Plan {
    /// Check the steps: each non-empty after trimming, one line, at most
    /// [`MAX_STEP_BYTES`]; at most one `in_progress`. Errors: [`Error::InvalidArgument`]
    /// naming the offending `plan[i]`.
    pub fn validate(items: &[PlanItem]) -> Result<()> {
        let mut in_progress = Vec::new();
        for (i, it) in items.iter().enumerate() {
            let s = it.step.trim();
            if s.is_empty() {
                return Err(Error::InvalidArgument(format!(
                    "plan[{i}].step is empty; give each step a short description"
                )));
            }
            if s.contains('\n') || s.contains('\r') {
                return Err(Error::InvalidArgument(format!(
                    "plan[{i}].step spans several lines; split it into separate steps"
                )));
            }
            if s.len() > MAX_STEP_BYTES {
                return Err(Error::InvalidArgument(format!(
                    "plan[{i}].step is {} bytes (at most {MAX_STEP_BYTES}); shorten it and keep details in a note (remember)",
                    s.len()
                )));
            }
            if it.status == StepStatus::InProgress {
                in_progress.push(i);
            }
        }
        if in_progress.len() > 1 {
            let idx: Vec<String> = in_progress.iter().map(|i| format!("plan[{i}]")).collect();
            return Err(Error::InvalidArgument(format!(
                "at most one step may be in_progress, got {}: {}; mark the others pending or completed",
                in_progress.len(),
                idx.join(", ")
            )));
        }
        Ok(())
    }

    /// Bytes the plan takes against the budget: explanation plus every step's text.
    pub fn bytes(&self) -> usize {
        self.explanation.as_deref().map_or(0, str::len)
            + self.steps.iter().map(|s| s.step.len()).sum::<usize>()
    }

    /// `(completed, in_progress, pending)` counts.
    pub fn counts(&self) -> (usize, usize, usize) {
        let c = |st| self.steps.iter().filter(|s| s.status == st).count();
        (
            c(StepStatus::Completed),
            c(StepStatus::InProgress),
            c(StepStatus::Pending),
        )
    }

    /// Markdown checklist, one numbered line per step: `1. [x] done`, `2. [>] doing (in
    /// progress)`, `3. [ ] todo`, preceded by the explanation when present.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Some(e) = self
            .explanation
            .as_deref()
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            out.push_str(&format!("Why: {e}\n\n"));
        }
        for (i, s) in self.steps.iter().enumerate() {
            let (mark, tail) = match s.status {
                StepStatus::Completed => ("[x]", ""),
                StepStatus::InProgress => ("[>]", " (in progress)"),
                StepStatus::Pending => ("[ ]", ""),
            };
            out.push_str(&format!("{}. {mark} {}{tail}\n", i + 1, s.step.trim()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(step: &str, status: StepStatus) -> PlanItem {
        PlanItem {
            step: step.into(),
            status,
        }
    }

    #[test]
    fn two_in_progress_is_refused_naming_both() {
        let e = Plan::validate(&[
            item("a", StepStatus::InProgress),
            item("b", StepStatus::Pending),
            item("c", StepStatus::InProgress),
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("plan[0]") && e.contains("plan[2]"), "{e}");
    }

    #[test]
    fn empty_and_multiline_steps_are_refused() {
        assert!(
            Plan::validate(&[item("  ", StepStatus::Pending)])
                .unwrap_err()
                .to_string()
                .contains("plan[0].step is empty")
        );
        assert!(Plan::validate(&[item("a\nb", StepStatus::Pending)]).is_err());
    }

    #[test]
    fn status_wire_values_match_codex() {
        let v: Vec<PlanItem> = serde_json::from_str(
            r#"[{"step":"a","status":"in_progress"},{"step":"b","status":"completed"}]"#,
        )
        .unwrap();
        assert_eq!(v[0].status, StepStatus::InProgress);
        assert!(serde_json::from_str::<PlanItem>(r#"{"step":"a","status":"done"}"#).is_err());
    }

    #[test]
    fn render_marks_statuses() {
        let p = Plan {
            explanation: Some("split work".into()),
            steps: vec![
                item("one", StepStatus::Completed),
                item("two", StepStatus::InProgress),
                item("three", StepStatus::Pending),
            ],
            updated_at: "t".into(),
        };
        assert_eq!(
            p.render(),
            "Why: split work\n\n1. [x] one\n2. [>] two (in progress)\n3. [ ] three\n"
        );
        assert_eq!(p.counts(), (1, 1, 1));
    }
}
