//! The Settings page's schema: one [`ConfigField`] per editable key of `codex.config.json`
//! (key path, kind, default, unit, range), and the per-field checking of a change before it
//! is merged and handed to [`Config::validate`].
//!
//! Invariant: every range here equals the one [`Config::validate`] enforces (the test
//! `ranges_match_config_validate` probes both ends of each numeric field), and a change with
//! any field error is never written.

use serde_json::{Map, Value};

use crate::api::dto::{ConfigField, FieldError, FieldKind};
use codex_free_core::config::Config;

struct Spec {
    key: &'static str,
    kind: FieldKind,
    unit: &'static str,
    min: Option<f64>,
    max: Option<f64>,
    choices: &'static [&'static str],
    nullable: bool,
    help: &'static str,
}

const fn int(
    key: &'static str,
    unit: &'static str,
    min: f64,
    max: f64,
    help: &'static str,
) -> Spec {
    Spec {
        key,
        kind: FieldKind::Integer,
        unit,
        min: Some(min),
        max: Some(max),
        choices: &[],
        nullable: false,
        help,
    }
}
const fn boolean(key: &'static str, help: &'static str) -> Spec {
    Spec {
        key,
        kind: FieldKind::Boolean,
        unit: "",
        min: None,
        max: None,
        choices: &[],
        nullable: false,
        help,
    }
}
const fn text(key: &'static str, nullable: bool, help: &'static str) -> Spec {
    Spec {
        key,
        kind: FieldKind::Text,
        unit: "",
        min: None,
        max: None,
        choices: &[],
        nullable,
        help,
    }
}
const fn choice(key: &'static str, choices: &'static [&'static str], help: &'static str) -> Spec {
    Spec {
        key,
        kind: FieldKind::Choice,
        unit: "",
        min: None,
        max: None,
        choices,
        nullable: false,
        help,
    }
}
const fn list(key: &'static str, choices: &'static [&'static str], help: &'static str) -> Spec {
    Spec {
        key,
        kind: FieldKind::List,
        unit: "",
        min: None,
        max: None,
        choices,
        nullable: false,
        help,
    }
}

const THINKING: &[&str] = &["none", "minimal", "low", "medium", "high", "xhigh"];
const SOURCES: &[&str] = &["codex", "claude", "pi", "mcp"];

/// Every editable key. Ranges mirror `Config::validate` (src/config/mod.rs), which in turn
/// follows the public Codex Free (output/command/exec) and Codex's memories (seed 003).
const SPECS: &[Spec] = &[
    int(
        "output.maxToolOutputTokens",
        "tokens",
        500.0,
        100_000.0,
        "Ceiling of any one tool result (tokens estimated as bytes / 4).",
    ),
    int(
        "output.maxFileLines",
        "lines",
        1.0,
        100_000.0,
        "Lines per read_file page.",
    ),
    int(
        "output.maxFileBytes",
        "bytes",
        1024.0,
        16_777_216.0,
        "Bytes per read_file page; cuts very long lines.",
    ),
    int(
        "output.maxEntries",
        "entries",
        1.0,
        100_000.0,
        "Entries per list_dir / grep page.",
    ),
    int(
        "output.maxTreeNodes",
        "nodes",
        1.0,
        100_000.0,
        "Nodes per tree page.",
    ),
    int(
        "command.defaultTimeout",
        "ms",
        100.0,
        3_600_000.0,
        "Timeout of exec_command when the call gives none.",
    ),
    int(
        "command.maxTimeout",
        "ms",
        100.0,
        3_600_000.0,
        "Largest timeout a call may ask for.",
    ),
    choice(
        "exec.mode",
        &["allowlist", "unrestricted"],
        "allowlist: only listed programs run (a guardrail on top of the sandbox). Applies after a restart.",
    ),
    choice(
        "exec.sandbox",
        &["os", "off"],
        "os: commands may write only in the project, a private TMPDIR and the writable roots, and cannot read the state home. Applies after a restart.",
    ),
    list(
        "exec.writableRoots",
        &[],
        "Folders (absolute or ~/...) sandboxed commands may also write, e.g. build caches. Applies after a restart.",
    ),
    boolean(
        "exec.network",
        "Let sandboxed commands use the network in allowlist mode. Applies after a restart.",
    ),
    list(
        "exec.extraAllowedCommands",
        &[],
        "Programs allowed besides the built-in list.",
    ),
    int(
        "exec.maxSessions",
        "sessions",
        1.0,
        64.0,
        "Concurrent live exec sessions.",
    ),
    int(
        "exec.maxSpoolBytes",
        "bytes",
        1_048_576.0,
        4_294_967_296.0,
        "Command output kept on disk for continuation.",
    ),
    int(
        "projectDoc.maxBytes",
        "bytes",
        0.0,
        1_048_576.0,
        "Bytes of AGENTS.md delivered.",
    ),
    text(
        "server.host",
        false,
        "Bind address of the HTTP server (an IP address or localhost).",
    ),
    int(
        "server.port",
        "port",
        0.0,
        65_535.0,
        "TCP port of the HTTP server (0 = any free port).",
    ),
    list(
        "server.allowedOrigins",
        &[],
        "Extra Origin values accepted besides loopback (e.g. a tunnel).",
    ),
    list(
        "server.allowedHosts",
        &[],
        "Extra Host values accepted besides loopback.",
    ),
    boolean(
        "memory.enabled",
        "Keep task notes and plans between conversations.",
    ),
    text(
        "memory.dir",
        true,
        "Folder for memory.json (empty = inside the state home).",
    ),
    int(
        "memory.maxBytes",
        "bytes",
        256.0,
        1_048_576.0,
        "Budget for all notes of a project; a note over it is rejected.",
    ),
    boolean("memories.enabled", "Run the background memory pipeline."),
    boolean(
        "memories.generate_memories",
        "Extract memories from new sessions.",
    ),
    boolean(
        "memories.use_memories",
        "Inject the memory summary into new sessions.",
    ),
    boolean("memories.dedicated_tools", "Offer the memories_* tools."),
    boolean(
        "memories.disable_on_external_context",
        "Skip sessions that used external context.",
    ),
    int(
        "memories.max_raw_memories_for_consolidation",
        "memories",
        1.0,
        4096.0,
        "Raw memories fed to consolidation.",
    ),
    int(
        "memories.max_unused_days",
        "days",
        0.0,
        365.0,
        "Unused days after which a raw memory is not selected.",
    ),
    int(
        "memories.max_rollout_age_days",
        "days",
        0.0,
        90.0,
        "Oldest session considered for extraction.",
    ),
    int(
        "memories.max_rollouts_per_startup",
        "sessions",
        1.0,
        128.0,
        "Sessions extracted per run.",
    ),
    int(
        "memories.min_rollout_idle_hours",
        "hours",
        1.0,
        48.0,
        "Idle time before a session is extracted.",
    ),
    int(
        "memories.request_timeout_secs",
        "s",
        1.0,
        3600.0,
        "Timeout of one model request.",
    ),
    int(
        "memories.memory_md_max_lines",
        "lines",
        10.0,
        5000.0,
        "Most lines MEMORY.md may keep after consolidation.",
    ),
    int(
        "memories.memory_md_max_bytes",
        "bytes",
        1024.0,
        1_048_576.0,
        "Most bytes MEMORY.md may keep after consolidation.",
    ),
    int(
        "memories.memory_summary_max_lines",
        "lines",
        5.0,
        1000.0,
        "Most lines of memory_summary.md.",
    ),
    int(
        "memories.memory_summary_max_bytes",
        "bytes",
        512.0,
        65_536.0,
        "Most bytes of memory_summary.md.",
    ),
    text(
        "memories.extract_model",
        true,
        "provider/model-id for extraction (empty = default model).",
    ),
    text(
        "memories.consolidation_model",
        true,
        "provider/model-id for consolidation (empty = default model).",
    ),
    int(
        "memories.tool_result_token_budget",
        "tokens",
        0.0,
        100_000.0,
        "Per tool result budget before extraction (0 = no compaction).",
    ),
    choice(
        "memories.extract_thinking",
        THINKING,
        "Reasoning effort for extraction.",
    ),
    choice(
        "memories.consolidation_thinking",
        THINKING,
        "Reasoning effort for consolidation.",
    ),
    list(
        "memories.sources",
        SOURCES,
        "Agents whose sessions feed the pipeline.",
    ),
    Spec {
        key: "memories.monthly_spend_cap_usd",
        kind: FieldKind::Number,
        unit: "USD",
        min: Some(0.0),
        max: None,
        choices: &[],
        nullable: true,
        help: "Monthly model spend after which the pipeline stops calling models (empty = no cap).",
    },
];

fn get_path<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    key.split('.').try_fold(v, |v, k| v.get(k))
}

/// The schema of every editable field, defaults taken from [`Config::default`].
pub fn fields() -> Vec<ConfigField> {
    let defaults = serde_json::to_value(Config::default()).expect("config serialises");
    SPECS
        .iter()
        .map(|s| ConfigField {
            block: s.key.split('.').next().unwrap_or_default().to_string(),
            key: s.key.to_string(),
            kind: s.kind,
            default: get_path(&defaults, s.key).cloned().unwrap_or(Value::Null),
            unit: s.unit.to_string(),
            min: s.min,
            max: s.max,
            choices: s.choices.iter().map(|c| c.to_string()).collect(),
            nullable: s.nullable,
            help: s.help.to_string(),
        })
        .collect()
}

fn spec(key: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.key == key)
}

fn check_leaf(s: &Spec, v: &Value) -> Option<String> {
    if v.is_null() {
        return (!s.nullable).then(|| "a value is required".to_string());
    }
    let range = |n: f64| -> Option<String> {
        let lo = s.min.unwrap_or(f64::NEG_INFINITY);
        let hi = s.max.unwrap_or(f64::INFINITY);
        if n < lo || n > hi {
            Some(match (s.min, s.max) {
                (Some(a), Some(b)) => format!("{n} is out of range (allowed {a}..={b})"),
                (Some(a), None) => format!("{n} must be at least {a}"),
                _ => format!("{n} is out of range"),
            })
        } else {
            None
        }
    };
    match s.kind {
        FieldKind::Integer => match v.as_u64() {
            Some(n) => range(n as f64),
            None => Some(format!("{v} is not a whole number")),
        },
        FieldKind::Number => match v.as_f64() {
            Some(n) if n.is_finite() => range(n),
            _ => Some(format!("{v} is not a number")),
        },
        FieldKind::Boolean => (!v.is_boolean()).then(|| format!("{v} is not true or false")),
        FieldKind::Text => (!v.is_string()).then(|| format!("{v} is not text")),
        FieldKind::Choice => match v.as_str() {
            Some(c) if s.choices.contains(&c) => None,
            _ => Some(format!("{v} is not one of {}", s.choices.join(", "))),
        },
        FieldKind::List => match v.as_array() {
            Some(items) => items.iter().find_map(|i| match i.as_str() {
                None => Some(format!("{i} is not text")),
                Some(x) if !s.choices.is_empty() && !s.choices.contains(&x) => {
                    Some(format!("\"{x}\" is not one of {}", s.choices.join(", ")))
                }
                Some(x) if x.trim().is_empty() => Some("empty entries are not allowed".into()),
                _ => None,
            }),
            None => Some(format!("{v} is not a list")),
        },
    }
}

/// Check the shape of a change (a nested object in the file's layout, e.g.
/// `{"output":{"maxFileLines":50}}`): every leaf must be a known key with a value of the
/// right type and range. Returns the field errors (empty = fine). Cross-field rules are left
/// to [`Config::validate`] (see [`validate_merged`]).
pub fn check_patch(patch: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let Some(blocks) = patch.as_object() else {
        errors.push(FieldError {
            key: String::new(),
            message: "the change must be a JSON object of blocks".into(),
        });
        return errors;
    };
    for (block, body) in blocks {
        let Some(obj) = body.as_object() else {
            errors.push(FieldError {
                key: block.clone(),
                message: "must be an object of settings".into(),
            });
            continue;
        };
        for (k, v) in obj {
            let key = format!("{block}.{k}");
            match spec(&key) {
                None => errors.push(FieldError {
                    key,
                    message: "unknown setting".into(),
                }),
                Some(s) => {
                    if let Some(message) = check_leaf(s, v) {
                        errors.push(FieldError { key, message });
                    }
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

/// Turn a merged JSON value into a [`Config`] and run [`Config::validate`], splitting its
/// message into one [`FieldError`] per problem (each message starts with its key path).
pub fn validate_merged(merged: &Value) -> Result<Config, Vec<FieldError>> {
    let cfg: Config = serde_json::from_value(merged.clone()).map_err(|e| {
        vec![FieldError {
            key: String::new(),
            message: e.to_string(),
        }]
    })?;
    match cfg.validate() {
        Ok(()) => Ok(cfg),
        Err(codex_free_core::Error::Config(msg)) => Err(msg
            .split("; ")
            .map(|m| FieldError {
                key: m.split_whitespace().next().unwrap_or_default().to_string(),
                message: m.to_string(),
            })
            .collect()),
        Err(e) => Err(vec![FieldError {
            key: String::new(),
            message: e.to_string(),
        }]),
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
        assert_eq!(f.len(), SPECS.len());
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
        for s in SPECS.iter().filter(|s| s.kind == FieldKind::Integer) {
            let (lo, hi) = (s.min.unwrap() as u64, s.max.unwrap() as u64);
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

    /// Every scalar or list setting of `Config` has a schema entry, so a new config key
    /// cannot silently miss the Settings page. Maps (`memories.providers`,
    /// `memories.prices`) and the fixed `memories.version` are edited in the file.
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
        let skip = ["memories.version", "memories.providers", "memories.prices"];
        let missing: Vec<_> = keys
            .iter()
            .filter(|k| !skip.contains(&k.as_str()) && spec(k).is_none())
            .collect();
        assert!(
            missing.is_empty(),
            "config keys without a Settings field: {missing:?}"
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
