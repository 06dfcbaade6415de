//! The phase-1 answer: validating the model's JSON against the V1 schema.

use codex_free_memory::select::normalise_slug;

use serde_json::Value;

use codex_free_core::Error;
use codex_free_core::Result;

/// A validated answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extraction {
    /// Summary.
    pub rollout_summary: String,
    /// Slug (normalised to `[a-z0-9-]`, at most 60 chars), `None` when absent or empty.
    pub rollout_slug: Option<String>,
    /// Raw memory (Markdown).
    pub raw_memory: String,
}

impl Extraction {
    /// Both text fields blank: nothing worth keeping (succeeds with no output).
    pub fn is_empty(&self) -> bool {
        self.raw_memory.trim().is_empty() && self.rollout_summary.trim().is_empty()
    }
}

/// Parse and validate the model's text against [`super::output_schema`]: a JSON object with
/// exactly the three keys and the right types. A single Markdown code fence around the
/// object is tolerated (compatibility-mode providers add one).
///
/// Errors: [`Error::Provider`] naming what is wrong (not JSON, missing/extra key, type).
pub fn parse_extraction(text: &str) -> Result<Extraction> {
    let obj =
        crate::json_answer::object(text, &["rollout_summary", "rollout_slug", "raw_memory"], "")?;
    let string = |k: &str| crate::json_answer::string(&obj, k).map(str::to_string);
    let rollout_summary = string("rollout_summary")?;
    let raw_memory = string("raw_memory")?;
    let rollout_slug = match obj.get("rollout_slug") {
        Some(Value::Null) => None,
        Some(Value::String(s)) => normalise_slug(s),
        Some(_) => {
            return Err(Error::Provider(
                "answer key \"rollout_slug\" must be a string or null".into(),
            ));
        }
        None => return Err(Error::Provider("answer lacks key \"rollout_slug\"".into())),
    };
    Ok(Extraction {
        rollout_summary,
        rollout_slug,
        raw_memory,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_exact_shape_and_fences() {
        let x = parse_extraction(
            r#"{"rollout_summary":"s","rollout_slug":"Fix CI: pnpm!","raw_memory":"- m"}"#,
        )
        .unwrap();
        assert_eq!(x.rollout_slug.as_deref(), Some("fix-ci-pnpm"));
        let x = parse_extraction(
            "```json\n{\"rollout_summary\":\"\",\"rollout_slug\":null,\"raw_memory\":\" \"}\n```",
        )
        .unwrap();
        assert!(x.is_empty());
    }

    #[test]
    fn parse_rejects_schema_violations() {
        for (bad, why) in [
            ("not json", "not JSON"),
            ("[1]", "not a JSON object"),
            (
                r#"{"rollout_summary":"s","raw_memory":"m"}"#,
                "lacks key \"rollout_slug\"",
            ),
            (
                r#"{"rollout_summary":"s","rollout_slug":null,"raw_memory":"m","extra":1}"#,
                "unexpected key \"extra\"",
            ),
            (
                r#"{"rollout_summary":1,"rollout_slug":null,"raw_memory":"m"}"#,
                "must be a string",
            ),
            (
                r#"{"rollout_summary":"s","rollout_slug":5,"raw_memory":"m"}"#,
                "string or null",
            ),
        ] {
            let e = parse_extraction(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
