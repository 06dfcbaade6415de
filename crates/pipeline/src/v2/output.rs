//! The V2 extraction answer: exactly `rollout_summary` and `rollout_slug`, both strings.
//! V2 never stores a raw memory, so an answer that carries `raw_memory` (or any other key)
//! is refused rather than quietly dropped: it means the model followed the wrong contract.
//!
//! The summary is redacted, then cut to [`SUMMARY_MAX_BYTES`] (Codex's `phase1_output.rs`,
//! pinned 5bf132cd: `truncate_text(.., Bytes(9_000))` after `redact_secrets`).

use serde_json::{Value, json};

use codex_free_core::Result;

use super::evidence::truncate_middle;

/// The largest rollout summary kept, bytes (before the truncation marker).
pub const SUMMARY_MAX_BYTES: usize = 9_000;

/// The answer's JSON schema: both keys required, both strings, nothing else.
pub fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "rollout_summary": { "type": "string" },
            "rollout_slug": { "type": "string" }
        },
        "required": ["rollout_summary", "rollout_slug"],
        "additionalProperties": false
    })
}

/// A validated V2 answer, redacted and capped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryOutput {
    /// The rollout summary (redacted, then at most [`SUMMARY_MAX_BYTES`] + marker).
    pub rollout_summary: String,
    /// The slug, redacted and normalised to `[a-z0-9-]` (at most 60 chars); `None` when
    /// nothing of it is left.
    pub rollout_slug: Option<String>,
}

impl SummaryOutput {
    /// A blank summary: nothing worth keeping (the job succeeds with no output).
    pub fn is_empty(&self) -> bool {
        self.rollout_summary.trim().is_empty()
    }
}

/// Parse the model's text as a V2 answer (one Markdown code fence around the object is
/// tolerated, as for V1), redact both fields with `redact`, then cut the summary.
///
/// Errors: [`Error::Provider`] naming the problem: not JSON, not an object, a missing key,
/// a key that is not a string, or an extra key (`raw_memory` included).
pub fn parse(text: &str, redact: &dyn Fn(&str) -> String) -> Result<SummaryOutput> {
    let obj = crate::json_answer::object(
        text,
        &["rollout_summary", "rollout_slug"],
        " (the v2 answer is rollout_summary and rollout_slug only)",
    )?;
    let string = |k: &str| crate::json_answer::string(&obj, k);
    let summary = truncate_middle(&redact(string("rollout_summary")?), SUMMARY_MAX_BYTES);
    let slug = codex_free_memory::select::normalise_slug(&redact(string("rollout_slug")?));
    Ok(SummaryOutput {
        rollout_summary: summary,
        rollout_slug: slug,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn red(s: &str) -> String {
        codex_free_redact::redact(s).into_owned()
    }

    /// pi-codex-memory `test/v2.test.mjs`: `v2Output({raw_memory: 'not allowed', ...})`
    /// throws; upstream `phase1_output.rs` decodes V2 with `deny_unknown_fields`.
    #[test]
    fn raw_memory_is_refused() {
        let e = parse(
            r#"{"raw_memory": "not allowed", "rollout_summary": "", "rollout_slug": ""}"#,
            &red,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("unexpected key \"raw_memory\""),
            "{e}"
        );
        // The slug is a string in V2 (null is V1's), and both keys are required.
        assert!(parse(r#"{"rollout_summary": "x", "rollout_slug": null}"#, &red).is_err());
        assert!(parse(r#"{"rollout_summary": "x"}"#, &red).is_err());
        let ok = parse(
            "```json\n{\"rollout_summary\": \"useful history\", \"rollout_slug\": \"Work Flow\"}\n```",
            &red,
        )
        .unwrap();
        assert_eq!(ok.rollout_summary, "useful history");
        assert_eq!(ok.rollout_slug.as_deref(), Some("work-flow"));
    }

    /// pi-codex-memory `test/v2.test.mjs`: a summary of `sk-` + 20,000 × `a` comes back
    /// under 100 characters ("redaction must precede truncation so credential tails cannot
    /// survive"); the cap itself is upstream's 9,000 bytes.
    #[test]
    fn summary_is_redacted_before_it_is_cut() {
        let text = json!({"rollout_summary": format!("sk-{}", "a".repeat(20_000)), "rollout_slug": "example"})
            .to_string();
        let out = parse(&text, &red).unwrap();
        assert!(
            out.rollout_summary.chars().count() < 100,
            "{}",
            out.rollout_summary
        );
        assert!(!out.rollout_summary.contains("aaaaaaaa"));
        // Without a secret, a long summary is cut to 9,000 bytes plus the marker.
        let long = json!({"rollout_summary": "b".repeat(20_000), "rollout_slug": "x"}).to_string();
        let out = parse(&long, &red).unwrap();
        assert_eq!(
            out.rollout_summary.bytes().filter(|b| *b == b'b').count(),
            9_000
        );
        assert!(out.rollout_summary.contains("…11000 chars truncated…"));
    }

    #[test]
    fn schema_has_exactly_two_string_keys() {
        let s = output_schema();
        assert_eq!(s["required"], json!(["rollout_summary", "rollout_slug"]));
        assert_eq!(s["properties"]["rollout_slug"]["type"], "string");
        assert_eq!(s["additionalProperties"], false);
        assert!(s["properties"].get("raw_memory").is_none());
    }
}
