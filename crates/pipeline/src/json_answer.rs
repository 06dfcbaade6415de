//! Reading an extraction model's JSON answer, the part V1 and V2 share: one Markdown code
//! fence around the object is tolerated (compatibility-mode providers add one), the text
//! must be one JSON object, only the version's keys may appear, and a key's value is read
//! as a string. What each version does with the keys is its own ([`crate::phase1`]'s
//! `parse_extraction`, [`crate::v2::output::parse`]).

use serde_json::{Map, Value};

use codex_free_core::{Error, Result};

/// The answer's object: `text` without one surrounding code fence, parsed, checked to be an
/// object holding no key outside `allowed`. `unexpected_note` is appended to the error for
/// an unexpected key (e.g. which keys the version's answer holds), empty for none.
///
/// Errors: [`Error::Provider`] naming what is wrong: not JSON, not a JSON object, or the
/// first unexpected key.
pub(crate) fn object(
    text: &str,
    allowed: &[&str],
    unexpected_note: &str,
) -> Result<Map<String, Value>> {
    let t = text.trim();
    let t = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|r| r.trim_end().strip_suffix("```"))
        .map(str::trim)
        .unwrap_or(t);
    let v: Value =
        serde_json::from_str(t).map_err(|e| Error::Provider(format!("answer is not JSON: {e}")))?;
    let Value::Object(obj) = v else {
        return Err(Error::Provider("answer is not a JSON object".into()));
    };
    if let Some(k) = obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(Error::Provider(format!(
            "answer has unexpected key \"{k}\"{unexpected_note}"
        )));
    }
    Ok(obj)
}

/// The string value of key `k` of `obj`.
///
/// Errors: [`Error::Provider`] when the key is missing or its value is not a string.
pub(crate) fn string<'a>(obj: &'a Map<String, Value>, k: &str) -> Result<&'a str> {
    match obj.get(k) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(Error::Provider(format!(
            "answer key \"{k}\" must be a string"
        ))),
        None => Err(Error::Provider(format!("answer lacks key \"{k}\""))),
    }
}
