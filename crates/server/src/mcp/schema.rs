//! What `tools/list` sends of each tool's input schema: the schema `schemars` derives from
//! the argument types, less what costs every client's context window and tells a model
//! nothing. Every client pays for `tools/list` in each conversation (24 tools were
//! 20,130 bytes, about 5k tokens), so the wire form keeps only what a model needs to call a
//! tool: names, types, `required`, descriptions, ranges and enums.
//!
//! Dropped, recursively: the top-level `$schema` URL; `"null"` from a type list (an optional
//! argument is one left out of `required`; serde still accepts an explicit null); Rust
//! integer and float `format`s (`uint64`, `double`, …: not JSON Schema formats, and
//! OpenAI's strict function schemas refuse unknown ones); `"default": null`. Argument
//! parsing does not read the schema, so nothing a client may send changes.

use serde_json::{Map, Value};

/// Rust number formats `schemars` emits that no JSON Schema validator defines.
const RUST_FORMATS: &[&str] = &[
    "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64",
    "float", "double",
];

/// Trim a tool's input schema in place (see the module docs for what goes).
pub fn trim(schema: &mut Map<String, Value>) {
    schema.remove("$schema");
    trim_object(schema);
}

fn trim_object(o: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = o.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            o.insert("type".into(), only);
        }
    }
    if o.get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| RUST_FORMATS.contains(&f))
    {
        o.remove("format");
    }
    if o.get("default").is_some_and(Value::is_null) {
        o.remove("default");
    }
    for v in o.values_mut() {
        trim_value(v);
    }
}

fn trim_value(v: &mut Value) {
    match v {
        Value::Object(o) => trim_object(o),
        Value::Array(a) => a.iter_mut().for_each(trim_value),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn optional_numbers_lose_null_format_and_default_only() {
        let mut s = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "required": ["path"],
            "properties": {
                "path": {"type": "string", "description": "File."},
                "offset": {"type": ["integer", "null"], "format": "uint64", "minimum": 0, "default": null},
                "mode": {"type": ["string", "null"], "enum": ["a", "b"], "default": "a"},
                "when": {"type": "string", "format": "date-time"},
                "steps": {"type": "array", "items": {"type": ["object", "null"], "properties": {"n": {"type": "integer", "format": "int32"}}}}
            }
        });
        trim(s.as_object_mut().unwrap());
        assert_eq!(
            s,
            json!({
                "type": "object",
                "required": ["path"],
                "properties": {
                    "path": {"type": "string", "description": "File."},
                    "offset": {"type": "integer", "minimum": 0},
                    "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                    "when": {"type": "string", "format": "date-time"},
                    "steps": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}}
                }
            })
        );
    }
}
