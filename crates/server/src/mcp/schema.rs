//! What `tools/list` sends of each tool's input schema: the schema `schemars` derives from
//! the argument types, less what costs every client's context window and tells a model
//! nothing. Every client pays for `tools/list` in each conversation (24 tools were
//! 20,130 bytes, about 5k tokens), so the wire form keeps only what a model needs to call a
//! tool: names, types, `required`, descriptions, ranges and enums.
//!
//! Dropped, recursively: the top-level `$schema` URL; `"null"` from a type list (an optional
//! argument is one left out of `required`; serde still accepts an explicit null); Rust
//! integer and float `format`s (`uint64`, `double`, …: not JSON Schema formats, and
//! OpenAI's strict function schemas refuse unknown ones); a `default` of `null`, `0`, `""`
//! or `false` (what an absent argument means anyway); `"minimum": 0`
//! (schemars' mark of an unsigned Rust integer: counts and offsets, which no model sends
//! negative, and serde refuses one with a clear error). `$ref`s into `$defs` are inlined
//! and a `oneOf` of bare string constants becomes an `enum` (the same values, a third of
//! the bytes). Argument parsing does not read the schema, so nothing a client may send
//! changes.
//!
//! Annotations ([`trim_annotations`]) lose the display `title` (clients show the name),
//! `openWorldHint` (no client acts on it; every tool but `exec_command` is closed-world) and
//! every hint equal to its default in the MCP spec (`readOnlyHint` false, `destructiveHint`
//! true, `idempotentHint` false): a client reads an absent hint as that default.
//!
//! Descriptions ([`describe`], the [`WIRE`] table): the wire carries short texts written
//! for a model's context window, in one table so their total is measured in one place
//! (`tools/list` must stay within 8 KiB: `tests/server/fit.rs` asserts it over MCP);
//! the argument types' doc
//! comments stay the developers' documentation. An argument whose name, type and the
//! result footers say everything gets no description: every cut page's last line names
//! the exact call that continues (`call again with offset=1000 …`), so `offset` needs none.
//! A tool missing from the table keeps its doc comment.

use serde_json::{Map, Value};

/// Wire descriptions: (tool, argument path, text). No argument: the tool's own
/// description. A path is a property name, `name[]` for its items and `.` into an
/// object's properties. `None` sends no description.
pub const WIRE: &[(&str, Option<&str>, Option<&str>)] = &[
    (
        "apply_patch",
        None,
        Some("Apply a patch in Codex's apply_patch format; all or nothing."),
    ),
    (
        "apply_patch",
        Some("input"),
        Some(
            "`*** Begin Patch` ... `*** End Patch`: Add File / Delete File / Update File (optional Move to) with `@@` hunks of ` `, `-`, `+` lines.",
        ),
    ),
    (
        "exec_command",
        None,
        Some(
            "Run a shell command in the project: exit code and output if it ends within yield_time_ms, else output so far and a session_id for write_stdin.",
        ),
    ),
    (
        "exec_command",
        Some("cmd"),
        Some("Command line for `bash -c`; stdout and stderr merged."),
    ),
    (
        "exec_command",
        Some("workdir"),
        Some("Default: the project root."),
    ),
    (
        "exec_command",
        Some("yield_time_ms"),
        Some("Wait before replying, ms (250-30000, default 10000)."),
    ),
    (
        "exec_command",
        Some("max_output_tokens"),
        Some("In tokens (4 bytes each)."),
    ),
    ("exec_command", Some("timeout_ms"), None),
    ("exec_command", Some("login"), None),
    (
        "get_agent_brief",
        None,
        Some("Usage guide, environment, saved state, skills and AGENTS.md. Call first."),
    ),
    ("get_agent_brief", Some("offset"), None),
    (
        "get_environment",
        None,
        Some("Project root, OS, shell, git branch, date, output caps."),
    ),
    ("get_project_doc", None, Some("The project's AGENTS.md.")),
    (
        "list_projects",
        None,
        Some("Projects (.git or AGENTS.md folders) under the access root."),
    ),
    ("list_projects", Some("offset"), None),
    ("get_project_doc", Some("offset"), None),
    (
        "git_commit",
        None,
        Some("Commit the staged changes, or the given paths."),
    ),
    ("git_commit", Some("message"), None),
    (
        "git_commit",
        Some("paths"),
        Some("Only these files; other staged changes stay staged."),
    ),
    (
        "git_commit",
        Some("all"),
        Some("Stage every change first (`git add -A`)."),
    ),
    ("git_diff", None, Some("`git diff` of the working tree.")),
    ("git_diff", Some("path"), None),
    ("git_diff", Some("staged"), Some("Index vs HEAD instead.")),
    ("git_diff", Some("offset"), None),
    ("git_log", None, Some("`git log`, newest first.")),
    (
        "git_log",
        Some("max_count"),
        Some("Commits per page (default 30)."),
    ),
    ("git_log", Some("offset"), None),
    ("git_log", Some("path"), None),
    ("git_status", None, Some("`git status` (porcelain).")),
    ("git_status", Some("offset"), None),
    (
        "glob",
        None,
        Some("Find files by glob, e.g. `src/**/*.rs`."),
    ),
    ("glob", Some("pattern"), None),
    ("glob", Some("path"), None),
    ("glob", Some("offset"), None),
    (
        "grep",
        None,
        Some("Regex search of file contents (ripgrep; .gitignore respected)."),
    ),
    ("grep", Some("pattern"), None),
    ("grep", Some("path"), None),
    (
        "grep",
        Some("glob"),
        Some("Only files matching this glob (`!` excludes)."),
    ),
    ("grep", Some("case_insensitive"), None),
    (
        "grep",
        Some("context"),
        Some("Context lines per match (max 20)."),
    ),
    ("grep", Some("offset"), None),
    (
        "list_directory",
        None,
        Some("List a directory (directories end with `/`)."),
    ),
    ("list_directory", Some("path"), None),
    ("list_directory", Some("offset"), None),
    (
        "read_command_output",
        None,
        Some("Page through a command's full output."),
    ),
    (
        "read_command_output",
        Some("output_id"),
        Some("From a cut exec_command or write_stdin reply."),
    ),
    ("read_command_output", Some("offset"), None),
    ("read_command_output", Some("max_output_tokens"), None),
    (
        "read_command_output",
        Some("end"),
        Some("Byte offset to stop before."),
    ),
    ("read_file", None, Some("Read a text file of the project.")),
    ("read_file", Some("path"), None),
    ("read_file", Some("offset"), Some("First line, 0-based.")),
    ("read_file", Some("limit"), None),
    (
        "read_file",
        Some("byte_offset"),
        Some("Resume a cut line at this byte."),
    ),
    ("recall", None, Some("This project's saved plan and notes.")),
    ("recall", Some("offset"), None),
    (
        "remember",
        None,
        Some(
            "A note on the task, kept across conversations; the same key replaces it, an empty value deletes it. Never store a secret: say where it lives.",
        ),
    ),
    (
        "remember",
        Some("key"),
        Some("E.g. \"build-command\" (one line)."),
    ),
    ("remember", Some("value"), None),
    (
        "set_project_root",
        None,
        Some("Choose this conversation's project; returns its brief."),
    ),
    (
        "set_project_root",
        Some("path"),
        Some("Absolute, or relative to the access root."),
    ),
    (
        "show_changes",
        None,
        Some("The project's diff (untracked files too) since the last show_changes."),
    ),
    (
        "show_changes",
        Some("from_start"),
        Some("Since this conversation's first call instead."),
    ),
    ("show_changes", Some("offset"), None),
    (
        "skills_list",
        None,
        Some("The project's and user's skills (SKILL.md folders)."),
    ),
    ("skills_list", Some("offset"), None),
    ("skills_read", None, Some("Read a skill's SKILL.md.")),
    ("skills_read", Some("name"), None),
    ("skills_read", Some("offset"), None),
    (
        "skills_read",
        Some("file"),
        Some("Another file of its folder, e.g. references/api.md."),
    ),
    ("tree", None, Some("File tree (respects .gitignore).")),
    ("tree", Some("path"), None),
    ("tree", Some("depth"), Some("Levels (default 3).")),
    ("tree", Some("offset"), None),
    (
        "update_plan",
        None,
        Some(
            "Save the task plan, kept across conversations (replaces the saved one; empty clears it).",
        ),
    ),
    ("update_plan", Some("explanation"), None),
    (
        "update_plan",
        Some("plan"),
        Some("Ordered steps, at most one in_progress."),
    ),
    (
        "view_image",
        None,
        Some("Show a PNG, JPEG, GIF or WebP image."),
    ),
    ("view_image", Some("path"), None),
    (
        "write_file",
        None,
        Some("Create or overwrite a file (atomic; parents created)."),
    ),
    ("write_file", Some("path"), None),
    ("write_file", Some("content"), None),
    (
        "write_stdin",
        None,
        Some(
            "Write to a running command's stdin (empty: poll); returns new output or the exit code.",
        ),
    ),
    ("write_stdin", Some("session_id"), None),
    (
        "write_stdin",
        Some("chars"),
        Some("\"\\u0003\" sends Ctrl-C, \"\\u0004\" closes stdin."),
    ),
    (
        "write_stdin",
        Some("yield_time_ms"),
        Some("Wait for output, ms (250-30000)."),
    ),
    ("write_stdin", Some("max_output_tokens"), None),
    ("update_plan", Some("plan[]"), None),
    ("update_plan", Some("plan[].step"), Some("One line.")),
    ("update_plan", Some("plan[].status"), None),
];

/// Arguments accepted but not advertised: (tool, property). `exec_command`'s `tty` exists
/// so Codex-shaped calls parse, yet its only accepted value is false (commands run on pipes),
/// so listing it would only invite a refused call.
pub const HIDDEN: &[(&str, &str)] = &[("exec_command", "tty")];

/// Put the [`WIRE`] texts of `tool` into its description and (trimmed) input schema, and
/// drop its [`HIDDEN`] properties. Returns how many entries of both tables applied (a test
/// checks every entry applies to the real list).
pub fn describe(tool: &mut rmcp::model::Tool) -> usize {
    let mut applied = 0;
    for (_, prop) in HIDDEN.iter().filter(|(t, _)| *t == tool.name) {
        let schema = std::sync::Arc::make_mut(&mut tool.input_schema);
        if let Some(Value::Object(props)) = schema.get_mut("properties")
            && props.remove(*prop).is_some()
        {
            applied += 1;
            if let Some(Value::Array(req)) = schema.get_mut("required") {
                req.retain(|r| r != *prop);
            }
        }
    }
    for (_, path, text) in WIRE.iter().filter(|(t, _, _)| *t == tool.name) {
        match path {
            None => {
                if let Some(t) = text {
                    tool.description = Some(std::borrow::Cow::Borrowed(t));
                    applied += 1;
                }
            }
            Some(path) => {
                let schema = std::sync::Arc::make_mut(&mut tool.input_schema);
                if let Some(node) = node_at(schema, path) {
                    match text {
                        Some(t) => {
                            node.insert("description".into(), Value::String((*t).into()));
                        }
                        None => {
                            node.remove("description");
                        }
                    }
                    applied += 1;
                }
            }
        }
    }
    applied
}

/// The schema object at `path` (see [`WIRE`]) under `schema`'s properties.
fn node_at<'a>(
    schema: &'a mut Map<String, Value>,
    path: &str,
) -> Option<&'a mut Map<String, Value>> {
    let mut cur = schema;
    for seg in path.split('.') {
        let (name, items) = match seg.strip_suffix("[]") {
            Some(n) => (n, true),
            None => (seg, false),
        };
        let mut next = cur.get_mut("properties")?.get_mut(name)?.as_object_mut()?;
        if items {
            next = next.get_mut("items")?.as_object_mut()?;
        }
        cur = next;
    }
    Some(cur)
}

/// Rust number formats `schemars` emits that no JSON Schema validator defines.
const RUST_FORMATS: &[&str] = &[
    "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64",
    "float", "double",
];

/// Trim a tool's input schema in place (see the module docs for what goes).
pub fn trim(schema: &mut Map<String, Value>) {
    schema.remove("$schema");
    if let Some(Value::Object(defs)) = schema.remove("$defs") {
        inline_refs(schema, &defs, 0);
    }
    trim_object(schema);
}

/// Replace every `{"$ref": "#/$defs/X", …}` under `o` by `X`'s schema (the other keys of
/// the referring object, e.g. its description, kept); `depth` bounds a recursive type.
fn inline_refs(o: &mut Map<String, Value>, defs: &Map<String, Value>, depth: usize) {
    if depth < 8
        && let Some(Value::String(r)) = o.get("$ref")
        && let Some(Value::Object(def)) = r.strip_prefix("#/$defs/").and_then(|n| defs.get(n))
    {
        let def = def.clone();
        o.remove("$ref");
        for (k, v) in def {
            o.entry(k).or_insert(v);
        }
    }
    for v in o.values_mut() {
        match v {
            Value::Object(c) => inline_refs(c, defs, depth + 1),
            Value::Array(a) => a.iter_mut().for_each(|x| {
                if let Value::Object(c) = x {
                    inline_refs(c, defs, depth + 1)
                }
            }),
            _ => {}
        }
    }
}

/// `oneOf: [{type: string, const: a}, …]` (a Rust unit enum) as `type: string, enum: [a, …]`.
fn consts_to_enum(o: &mut Map<String, Value>) {
    let Some(Value::Array(alts)) = o.get("oneOf") else {
        return;
    };
    let consts: Option<Vec<Value>> = alts
        .iter()
        .map(|a| {
            let c = a.get("const")?;
            (c.is_string() && a.get("type").is_none_or(|t| t == "string")).then(|| c.clone())
        })
        .collect();
    if let Some(values) = consts {
        o.remove("oneOf");
        o.insert("type".into(), Value::String("string".into()));
        o.insert("enum".into(), Value::Array(values));
    }
}

/// Trim a tool's annotations (see the module docs): no `title`, no hint at its default.
pub fn trim_annotations(a: &mut Map<String, Value>) {
    a.remove("title");
    a.remove("openWorldHint");
    for (hint, default) in [
        ("readOnlyHint", false),
        ("destructiveHint", true),
        ("idempotentHint", false),
        ("openWorldHint", true),
    ] {
        if a.get(hint).and_then(Value::as_bool) == Some(default) {
            a.remove(hint);
        }
    }
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
    if o.get("default").is_some_and(is_zero) {
        o.remove("default");
    }
    if o.get("minimum").and_then(Value::as_f64) == Some(0.0) {
        o.remove("minimum");
    }
    consts_to_enum(o);
    for v in o.values_mut() {
        trim_value(v);
    }
}

/// `null`, `0`, `""` or `false`: a default that says no more than leaving the argument out
/// (serde fills in the same zero value).
fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        _ => false,
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
                    "offset": {"type": "integer"},
                    "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                    "when": {"type": "string", "format": "date-time"},
                    "steps": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}}
                }
            })
        );
    }

    #[test]
    fn defs_are_inlined_and_string_consts_become_an_enum() {
        let mut s = json!({
            "type": "object",
            "properties": {"plan": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
            "$defs": {
                "Item": {"type": "object", "properties": {"status": {"description": "S.", "$ref": "#/$defs/Status"}}},
                "Status": {"description": "long", "oneOf": [
                    {"description": "a", "type": "string", "const": "pending"},
                    {"type": "string", "const": "done"}
                ]}
            }
        });
        trim(s.as_object_mut().unwrap());
        assert_eq!(
            s,
            json!({
                "type": "object",
                "properties": {"plan": {"type": "array", "items": {"type": "object", "properties": {
                    "status": {"description": "S.", "type": "string", "enum": ["pending", "done"]}
                }}}}
            })
        );
    }

    #[test]
    fn annotations_keep_only_hints_off_their_defaults() {
        let mut a = json!({"title": "Read file", "readOnlyHint": true, "destructiveHint": true,
            "idempotentHint": false, "openWorldHint": false});
        trim_annotations(a.as_object_mut().unwrap());
        assert_eq!(a, json!({"readOnlyHint": true}));
    }

    /// Every table entry lands on a real tool and argument (a renamed one would silently
    /// send its long doc comment again).
    #[test]
    fn every_wire_entry_applies_to_a_real_tool() {
        use crate::mcp::server::CodexFree;
        let mut tools = (CodexFree::fs_router()
            + CodexFree::exec_router()
            + CodexFree::memory_router()
            + CodexFree::memories_router())
        .list_all();
        let mut applied = 0;
        for t in &mut tools {
            trim(std::sync::Arc::make_mut(&mut t.input_schema));
            applied += describe(t);
        }
        assert_eq!(applied, WIRE.len() + HIDDEN.len());
    }
}
