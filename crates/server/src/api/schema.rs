//! The Settings page's schema: one [`ConfigField`] per editable key of `codex.config.json`
//! (key path, kind, default, unit, range), and the per-field checking of a change before it
//! is merged and handed to [`Config::validate`].
//!
//! Invariant: every range here equals the one [`Config::validate`] enforces (the test
//! `ranges_match_config_validate` probes both ends of each numeric field), and a change with
//! any field error is never written.

//! The Settings page's schema and the checking of a change before it is merged and saved.
//! Every fact about a setting (kind, default, unit, range, meaning) comes from
//! [`codex_free_core::config::fields::FIELDS`]; this module only converts it to the wire
//! types and walks a change's leaves through the same per-field check [`Config::validate`]
//! runs.
//!
//! Invariant: a change with any field error is never written.

use serde_json::{Map, Value};

use crate::api::dto::{ConfigField, FieldError, FieldKind};
use codex_free_core::config::fields::{self, Apply, Field, FieldCode, Kind};
use codex_free_core::config::{self as core_config, Config};

impl From<core_config::FieldError> for FieldError {
    fn from(e: core_config::FieldError) -> Self {
        FieldError {
            key: e.key,
            code: e.code.as_str().to_string(),
            message: e.message,
        }
    }
}

fn field_error(key: impl Into<String>, code: FieldCode, message: impl Into<String>) -> FieldError {
    core_config::FieldError::new(key, Value::Null, code, message).into()
}

fn to_dto(f: &Field) -> ConfigField {
    let (kind, min, max, choices): (FieldKind, Option<f64>, Option<f64>, &[&str]) = match f.kind {
        Kind::Integer { min, max } => (FieldKind::Integer, Some(min as f64), Some(max as f64), &[]),
        Kind::Number { min } => (FieldKind::Number, Some(min), None, &[]),
        Kind::Boolean => (FieldKind::Boolean, None, None, &[]),
        Kind::Text | Kind::Map => (FieldKind::Text, None, None, &[]),
        Kind::Choice(c) => (FieldKind::Choice, None, None, c),
        Kind::List(c) => (FieldKind::List, None, None, c),
    };
    ConfigField {
        block: f.block().to_string(),
        key: f.key.to_string(),
        kind,
        default: f.default.to_json(),
        unit: f.unit.to_string(),
        min,
        max,
        choices: choices.iter().map(|c| c.to_string()).collect(),
        nullable: f.nullable,
        help: f.doc.to_string(),
        restart: f.apply == Apply::Restart,
    }
}

/// The schema of every field the Settings page edits, in table order.
pub fn fields() -> Vec<ConfigField> {
    fields::FIELDS
        .iter()
        .filter(|f| f.settings_page)
        .map(to_dto)
        .collect()
}

/// The table entry for `key` when the Settings page may edit it.
fn spec(key: &str) -> Option<&'static Field> {
    fields::field(key).filter(|f| f.settings_page)
}

/// Check the shape of a change (a nested object in the file's layout, e.g.
/// `{"output":{"maxFileLines":50}}`): every leaf must be a known key with a value of the
/// right type and range. Returns the field errors (empty = fine). Cross-field rules are left
/// to [`Config::validate`] (see [`validate_merged`]).
pub fn check_patch(patch: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let Some(blocks) = patch.as_object() else {
        errors.push(field_error(
            "",
            FieldCode::WrongType,
            "the change must be a JSON object of blocks",
        ));
        return errors;
    };
    for (block, body) in blocks {
        let Some(obj) = body.as_object() else {
            errors.push(field_error(
                block.clone(),
                FieldCode::WrongType,
                format!("{block} must be an object of settings"),
            ));
            continue;
        };
        for (k, v) in obj {
            let key = format!("{block}.{k}");
            match spec(&key) {
                None => errors.push(field_error(
                    key.clone(),
                    FieldCode::UnknownKey,
                    format!("{key} is not a setting the Settings page edits"),
                )),
                Some(s) => {
                    let mut found = Vec::new();
                    s.check(v, &mut found);
                    errors.extend(found.into_iter().map(FieldError::from));
                }
            }
        }
    }
    errors
}

/// Deep-merge `patch` into `base` (objects merge key by key; anything else replaces).
pub fn merge(base: &mut Value, patch: &Value) {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, v) in p {
                merge(b.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (b, p) => *b = p.clone(),
    }
}

/// Normalise a change before merging: an empty text for a nullable field means null.
pub fn normalise(patch: &mut Value) {
    if let Some(blocks) = patch.as_object_mut() {
        for (block, body) in blocks.iter_mut() {
            if let Some(obj) = body.as_object_mut() {
                for (k, v) in obj.iter_mut() {
                    if let Some(s) = spec(&format!("{block}.{k}"))
                        && s.nullable
                        && v.as_str().is_some_and(|t| t.trim().is_empty())
                    {
                        *v = Value::Null;
                    }
                }
            }
        }
    }
}

/// Turn a merged JSON value into a [`Config`] and run [`Config::validate`] (which also
/// checks the rules between fields), returning its field errors as they are.
pub fn validate_merged(merged: &Value) -> Result<Config, Vec<FieldError>> {
    let cfg: Config = serde_json::from_value(merged.clone())
        .map_err(|e| vec![field_error("", FieldCode::WrongType, e.to_string())])?;
    match cfg.validate() {
        Ok(()) => Ok(cfg),
        Err(errs) => Err(errs.into_iter().map(FieldError::from).collect()),
    }
}

/// An empty JSON object.
pub fn empty() -> Value {
    Value::Object(Map::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(key: &str, v: Value) -> Value {
        let (b, k) = key.split_once('.').unwrap();
        json!({ b: { k: v } })
    }

    #[test]
    fn every_field_has_a_default_and_block() {
        let f = fields();
        assert_eq!(
            f.len(),
            fields::FIELDS.iter().filter(|x| x.settings_page).count()
        );
        for x in &f {
            let nullable_none = x.nullable && x.default.is_null();
            assert!(
                !x.default.is_null() || nullable_none,
                "{} has no default",
                x.key
            );
        }
        let lines = f.iter().find(|x| x.key == "output.maxFileLines").unwrap();
        assert_eq!(lines.default, json!(1000));
        assert_eq!(lines.unit, "lines");
    }

    #[test]
    fn ranges_match_config_validate() {
        for s in fields::FIELDS.iter().filter(|s| s.settings_page) {
            let Kind::Integer { min: lo, max: hi } = s.kind else {
                continue;
            };
            let base = serde_json::to_value(Config::default()).unwrap();
            let try_val = |n: u64| {
                let mut m = base.clone();
                merge(&mut m, &set(s.key, json!(n)));
                // keep the cross-field timeout rule out of the way
                if s.key == "command.defaultTimeout" {
                    merge(&mut m, &set("command.maxTimeout", json!(3_600_000)));
                }
                if s.key == "command.maxTimeout" {
                    merge(&mut m, &set("command.defaultTimeout", json!(100)));
                }
                (
                    check_patch(&set(s.key, json!(n))).is_empty(),
                    serde_json::from_value::<Config>(m)
                        .map(|c| c.validate().is_ok())
                        .unwrap_or(false),
                )
            };
            assert_eq!(try_val(lo), (true, true), "{} min {lo}", s.key);
            assert_eq!(try_val(hi), (true, true), "{} max {hi}", s.key);
            // One past either end fails both checks (for server.port, 65536 is not a u16).
            assert_eq!(
                try_val(hi + 1),
                (false, false),
                "{} accepts {}",
                s.key,
                hi + 1
            );
            if lo > 0 {
                assert_eq!(
                    try_val(lo - 1),
                    (false, false),
                    "{} accepts {}",
                    s.key,
                    lo - 1
                );
            }
        }
    }

    /// Every setting of `Config` has a table entry, and the ones the Settings page leaves
    /// to the file are exactly the listed ones, so a new config key cannot silently miss
    /// the Settings page.
    #[test]
    fn every_config_key_has_a_field() {
        fn leaves(v: &Value, path: String, out: &mut Vec<String>) {
            match v.as_object() {
                Some(o) if !o.is_empty() => {
                    for (k, x) in o {
                        leaves(
                            x,
                            if path.is_empty() {
                                k.clone()
                            } else {
                                format!("{path}.{k}")
                            },
                            out,
                        )
                    }
                }
                _ => out.push(path),
            }
        }
        let mut keys = Vec::new();
        leaves(
            &serde_json::to_value(Config::default()).unwrap(),
            String::new(),
            &mut keys,
        );
        let missing: Vec<_> = keys.iter().filter(|k| fields::field(k).is_none()).collect();
        assert!(
            missing.is_empty(),
            "config keys without a table entry: {missing:?}"
        );
        // The keys edited only in the file, named here so that a new one is a decision:
        // maps, the fixed version, and the sync remote (where the memory is pushed to,
        // kept out of the HTTP API's reach on purpose).
        let mut file_only: Vec<_> = keys
            .iter()
            .map(String::as_str)
            .filter(|k| spec(k).is_none())
            .collect();
        file_only.sort_unstable();
        assert_eq!(
            file_only,
            [
                "memories.prices",
                "memories.providers",
                "memories.sync.remote",
                "memories.version",
                "output.clients",
            ],
            "config keys the Settings page does not edit"
        );
    }

    #[test]
    fn patch_errors_name_the_key() {
        let e = check_patch(
            &json!({"output": {"maxFileLines": "ten", "bogus": 1}, "memories": {"sources": ["vim"]}}),
        );
        let keys: Vec<_> = e.iter().map(|x| x.key.as_str()).collect();
        assert!(
            keys.contains(&"output.maxFileLines")
                && keys.contains(&"output.bogus")
                && keys.contains(&"memories.sources"),
            "{e:?}"
        );
        assert!(
            check_patch(
                &json!({"memory": {"dir": null}, "memories": {"monthly_spend_cap_usd": 12.5}})
            )
            .is_empty()
        );
        assert!(!check_patch(&json!({"memories": {"monthly_spend_cap_usd": -1}})).is_empty());
        assert!(!check_patch(&json!({"output": {"maxFileLines": 1.5}})).is_empty());
    }

    #[test]
    fn cross_field_rule_comes_back_per_field() {
        let mut m = serde_json::to_value(Config::default()).unwrap();
        merge(&mut m, &json!({"command": {"defaultTimeout": 200000}}));
        let e = validate_merged(&m).unwrap_err();
        assert_eq!(e[0].key, "command.defaultTimeout");
        assert!(e[0].message.contains("exceeds"), "{e:?}");
    }
}
