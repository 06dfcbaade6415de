//! The text edits of `connect`: Codex's TOML entry, Claude's JSON entry, the managed block
//! of an instructions file, and the writes themselves. Each edit is a pure function from
//! the current text to the new one; a text that does not parse is refused with the file,
//! the line and the reason.

use std::path::Path;

use codex_free_core::Error;
use codex_free_core::Result;

use super::{Client, Options, SERVER_NAME, TOKEN_ENV, Target};

/// Start of the first line of a managed block (the rest of the line says how to turn it off).
pub const BLOCK_BEGIN: &str = "<!-- BEGIN codex-free memory";
/// The last line of a managed block.
pub const BLOCK_END: &str = "<!-- END codex-free memory -->";

fn begin_line(client: Client) -> String {
    format!(
        "{BLOCK_BEGIN} (managed by codex-free and rewritten after each consolidation; edits here are lost. Turn it off: `codex-free connect {} --undo`, or memories.use_memories: false) -->",
        client.name()
    )
}

/// Tokens the marker lines of `client`'s block take (counted against the summary budget).
pub(super) fn marker_tokens(client: Client) -> usize {
    codex_free_core::tokens::count(&begin_line(client))
        + codex_free_core::tokens::count(BLOCK_END)
        + 2
}

fn refuse(path: &Path, line: usize, reason: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!(
        "{}:{line}: {reason}; nothing was written (fix the file, then run connect again)",
        path.display()
    ))
}

fn line_of(text: &str, byte: usize) -> usize {
    text[..byte.min(text.len())].matches('\n').count() + 1
}

// ---- managed block --------------------------------------------------------------------

/// The block's line range `[start, end]` (0-based, inclusive) in `lines`, `None` without one.
fn find_block(path: &Path, text: &str) -> Result<Option<(usize, usize)>> {
    let mut start = None;
    let mut found = None;
    for (i, l) in text.split('\n').enumerate() {
        let l = l.trim_end_matches('\r');
        if l.starts_with(BLOCK_BEGIN) {
            if start.is_some() || found.is_some() {
                return Err(refuse(
                    path,
                    i + 1,
                    "a second codex-free memory block begins here (keep one)",
                ));
            }
            start = Some(i);
        } else if l.trim() == BLOCK_END {
            match start.take() {
                Some(s) => found = Some((s, i)),
                None => {
                    return Err(refuse(
                        path,
                        i + 1,
                        "codex-free memory block end without its begin line",
                    ));
                }
            }
        }
    }
    if let Some(s) = start {
        return Err(refuse(
            path,
            s + 1,
            "codex-free memory block has no end line (`<!-- END codex-free memory -->`)",
        ));
    }
    Ok(found)
}

/// `text` with the managed block of `client` holding `body` (replaced in place, else
/// appended after a blank line; a new file holds only the block).
pub(super) fn block_set(
    path: &Path,
    text: Option<&str>,
    client: Client,
    body: &str,
) -> Result<String> {
    let mut block = begin_line(client);
    block.push('\n');
    // The summary is model output from transcripts: a line that looks like one of our
    // markers would end the block early and leave the rest as "user text" that no refresh
    // or undo removes again. Such lines are neutralised.
    for l in body.lines() {
        let t = l.trim();
        if t.starts_with(BLOCK_BEGIN) || t.starts_with("<!-- END codex-free memory") {
            block.push_str("(a line imitating a codex-free marker was removed)\n");
        } else {
            block.push_str(l);
            block.push('\n');
        }
    }
    if !block.ends_with('\n') {
        block.push('\n');
    }
    block.push_str(BLOCK_END);
    let Some(text) = text else {
        block.push('\n');
        return Ok(block);
    };
    let lines: Vec<&str> = text.split('\n').collect();
    match find_block(path, text)? {
        Some((s, e)) => {
            let mut out: Vec<String> = lines[..s].iter().map(|l| l.to_string()).collect();
            out.push(block);
            out.extend(lines[e + 1..].iter().map(|l| l.to_string()));
            Ok(out.join("\n"))
        }
        None => {
            let mut out = text.to_string();
            if !out.is_empty() {
                if !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push('\n');
            }
            out.push_str(&block);
            out.push('\n');
            Ok(out)
        }
    }
}

/// `text` without the managed block (and the blank line before it that connect added);
/// `None` when there is none.
pub(super) fn block_remove(path: &Path, text: Option<&str>) -> Result<Option<String>> {
    let Some(text) = text else {
        return Ok(None);
    };
    let Some((s, e)) = find_block(path, text)? else {
        return Ok(None);
    };
    let lines: Vec<&str> = text.split('\n').collect();
    let mut head: Vec<&str> = lines[..s].to_vec();
    let tail: Vec<&str> = lines[e + 1..].to_vec();
    // The block was appended as "\n\n<block>\n": drop the blank separator line too.
    if tail == [""] && head.last() == Some(&"") {
        head.pop();
    }
    let mut out: Vec<&str> = head;
    out.extend(tail);
    let joined = out.join("\n");
    Ok(Some(if s == 0 && joined.trim().is_empty() {
        String::new()
    } else {
        joined
    }))
}

/// Whether `text` holds a managed block.
pub(super) fn block_has(path: &Path, text: Option<&str>) -> Result<bool> {
    Ok(match text {
        Some(t) => find_block(path, t)?.is_some(),
        None => false,
    })
}

// ---- Codex config.toml ------------------------------------------------------------------

fn codex_parse(path: &Path, text: &str) -> Result<toml_edit::DocumentMut> {
    text.parse::<toml_edit::DocumentMut>().map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(1);
        refuse(
            path,
            line,
            format!("not valid TOML: {}", e.message().trim()),
        )
    })
}

fn codex_servers<'a>(
    path: &Path,
    text: &str,
    doc: &'a mut toml_edit::DocumentMut,
) -> Result<&'a mut toml_edit::Table> {
    let line = doc_line(text, "mcp_servers");
    let item = doc.entry("mcp_servers").or_insert_with(|| {
        let mut t = toml_edit::Table::new();
        t.set_implicit(true);
        toml_edit::Item::Table(t)
    });
    if item.is_inline_table() {
        // `mcp_servers = { ... }` becomes a `[mcp_servers]` table holding the same entries.
        let t = std::mem::take(item)
            .into_table()
            .map_err(|_| refuse(path, line, "mcp_servers is not a table"))?;
        *item = toml_edit::Item::Table(t);
    }
    item.as_table_mut()
        .ok_or_else(|| refuse(path, line, "mcp_servers is not a table"))
}

fn doc_line(text: &str, key: &str) -> usize {
    text.find(key).map(|b| line_of(text, b)).unwrap_or(1)
}

/// `text` with `[mcp_servers.codex_free]` set for `opts` (only our keys touched: other
/// keys the user added to the entry, e.g. timeouts, stay).
pub(super) fn codex_set(
    path: &Path,
    text: Option<&str>,
    t: &Target,
    opts: &Options,
    output_limit: usize,
) -> Result<Option<String>> {
    let src = text.unwrap_or("");
    let mut doc = codex_parse(path, src)?;
    let line = doc_line(src, SERVER_NAME);
    let fits = codex_raise_limit(&mut doc, output_limit);
    let servers = codex_servers(path, src, &mut doc)?;
    let entry = servers
        .entry(SERVER_NAME)
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
    if entry.is_inline_table() {
        let tb = std::mem::take(entry)
            .into_table()
            .map_err(|_| refuse(path, line, "mcp_servers.codex_free is not a table"))?;
        *entry = toml_edit::Item::Table(tb);
    }
    let tb = entry
        .as_table_mut()
        .ok_or_else(|| refuse(path, line, "mcp_servers.codex_free is not a table"))?;
    let mut want: Vec<(&str, toml_edit::Value)> = Vec::new();
    let drop: &[&str] = match &opts.http {
        None => {
            want.push(("command", t.exe.display().to_string().into()));
            let mut args = toml_edit::Array::new();
            for a in t.server_args() {
                args.push(a);
            }
            want.push(("args", toml_edit::Value::Array(args)));
            let mut env = toml_edit::InlineTable::new();
            for (k, v) in &t.server_env {
                env.insert(k, v.as_str().into());
            }
            // Tells the spawned server Codex's cut is raised, so it pages for it instead of
            // for Codex's default cut (not when the user's own lower limit stays).
            if fits {
                env.insert(
                    super::CLIENT_OUTPUT_TOKENS_ENV,
                    output_limit.to_string().as_str().into(),
                );
            }
            if !env.is_empty() {
                want.push(("env", toml_edit::Value::InlineTable(env)));
            }
            &[
                "url",
                "bearer_token_env_var",
                "http_headers",
                "env_http_headers",
            ]
        }
        Some((url, _token)) => {
            want.push(("url", url.as_str().into()));
            want.push(("bearer_token_env_var", TOKEN_ENV.into()));
            &["command", "args", "env", "cwd"]
        }
    };
    // Codex 0.171 ignores a per-server `output_token_limit` (and warns about it on every
    // run); its cut is the top-level `tool_output_token_limit`, raised below. An entry an
    // earlier connect wrote loses the key.
    tb.remove("output_token_limit");
    for k in drop {
        tb.remove(k);
    }
    if opts.http.is_none() && !want.iter().any(|(k, _)| *k == "env") {
        tb.remove("env");
    }
    for (k, v) in want {
        let same = tb
            .get(k)
            .and_then(|i| i.as_value())
            .is_some_and(|cur| cur.to_string().trim() == v.to_string().trim());
        if !same {
            tb.insert(k, toml_edit::Item::Value(v));
        }
    }
    let out = doc.to_string();
    Ok(Some(out))
}

/// Comment written after the `tool_output_token_limit` connect sets; undo removes a value
/// that carries it, and a later connect may change it.
const LIMIT_MARK: &str = " # raised by codex-free connect to fit its pages; `codex-free connect codex --undo` removes it";

fn limit_is_ours(doc: &toml_edit::DocumentMut) -> bool {
    doc.get("tool_output_token_limit")
        .and_then(|i| i.as_value())
        .and_then(|v| v.decor().suffix())
        .and_then(|s| s.as_str())
        .is_some_and(|s| s.contains("codex-free connect"))
}

/// Raise Codex's `tool_output_token_limit` (top level: Codex cuts every tool result to
/// it, and with a model it has no metadata for, to about 10,000 bytes without it — the
/// per-server `output_token_limit` alone does not lift that cut) to `limit` tokens. A value
/// the user set is never lowered or replaced: when it is below `limit` it stays, and
/// `false` says our pages must keep fitting Codex's default cut.
fn codex_raise_limit(doc: &mut toml_edit::DocumentMut, limit: usize) -> bool {
    let current = doc
        .get("tool_output_token_limit")
        .and_then(|i| i.as_integer());
    let ours = limit_is_ours(doc);
    match current {
        Some(n) if !ours => n >= 0 && n as usize >= limit,
        Some(n) if ours && n as usize == limit => true,
        _ => {
            let mut v = toml_edit::Value::from(limit as i64);
            v.decor_mut().set_suffix(LIMIT_MARK);
            doc.insert("tool_output_token_limit", toml_edit::Item::Value(v));
            true
        }
    }
}

/// `text` without `[mcp_servers.codex_free]` (and without an `mcp_servers` table we left
/// empty); `None` for no file.
pub(super) fn codex_remove(path: &Path, text: Option<&str>) -> Result<Option<String>> {
    let Some(src) = text else {
        return Ok(None);
    };
    let mut doc = codex_parse(path, src)?;
    if limit_is_ours(&doc) {
        doc.remove("tool_output_token_limit");
    }
    let mut empty = false;
    if let Some(t) = doc
        .get_mut("mcp_servers")
        .and_then(|s| s.as_table_like_mut())
    {
        t.remove(SERVER_NAME);
        empty = t.is_empty();
    }
    if empty
        && doc
            .get("mcp_servers")
            .is_some_and(|i| i.as_table().is_some_and(|t| t.is_implicit()))
    {
        doc.remove("mcp_servers");
    }
    Ok(Some(doc.to_string()))
}

/// Whether Codex's config lists our server.
pub(super) fn codex_has(path: &Path, text: Option<&str>) -> Result<bool> {
    let Some(src) = text else {
        return Ok(false);
    };
    let doc = codex_parse(path, src)?;
    Ok(doc
        .get("mcp_servers")
        .and_then(|s| s.as_table_like())
        .is_some_and(|t| t.contains_key(SERVER_NAME)))
}

// ---- Claude .claude.json ----------------------------------------------------------------

fn claude_parse(path: &Path, text: &str) -> Result<serde_json::Map<String, serde_json::Value>> {
    if text.trim().is_empty() {
        return Ok(serde_json::Map::new());
    }
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| refuse(path, e.line(), format!("not valid JSON: {e}")))?;
    match v {
        serde_json::Value::Object(m) => Ok(m),
        _ => Err(refuse(path, 1, "not a JSON object")),
    }
}

/// Claude writes its config as `JSON.stringify(config, null, 2)`: 2-space indent, no
/// trailing newline. An existing file's trailing newline (or its absence) is kept.
fn claude_render(
    before: Option<&str>,
    m: serde_json::Map<String, serde_json::Value>,
) -> Result<String> {
    let mut s = serde_json::to_string_pretty(&serde_json::Value::Object(m))
        .map_err(|e| Error::Config(format!("encoding Claude's config: {e}")))?;
    if before.is_some_and(|b| b.ends_with('\n')) {
        s.push('\n');
    }
    Ok(s)
}

/// The entry `claude mcp add --scope user` writes for our server.
pub(super) fn claude_entry(t: &Target, opts: &Options) -> serde_json::Value {
    match &opts.http {
        None => {
            let env: serde_json::Map<String, serde_json::Value> = t
                .server_env
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                .collect();
            serde_json::json!({
                "type": "stdio",
                "command": t.exe.display().to_string(),
                "args": t.server_args(),
                "env": env,
            })
        }
        Some((url, token)) => serde_json::json!({
            "type": "http",
            "url": url,
            "headers": {"Authorization": format!("Bearer {token}")},
        }),
    }
}

/// `text` with `mcpServers.codex_free` set (other keys and their order kept).
pub(super) fn claude_set(
    path: &Path,
    text: Option<&str>,
    t: &Target,
    opts: &Options,
) -> Result<Option<String>> {
    let mut m = claude_parse(path, text.unwrap_or(""))?;
    let want = claude_entry(t, opts);
    let servers = m
        .entry("mcpServers")
        .or_insert_with(|| serde_json::Value::Object(Default::default()));
    let Some(servers) = servers.as_object_mut() else {
        return Err(refuse(
            path,
            doc_line(text.unwrap_or(""), "\"mcpServers\""),
            "mcpServers is not an object",
        ));
    };
    if servers.get(SERVER_NAME) == Some(&want) {
        return Ok(text.map(str::to_owned));
    }
    servers.insert(SERVER_NAME.to_string(), want);
    claude_render(text, m).map(Some)
}

/// `text` without `mcpServers.codex_free`; `None` for no file.
pub(super) fn claude_remove(path: &Path, text: Option<&str>) -> Result<Option<String>> {
    let Some(src) = text else {
        return Ok(None);
    };
    let mut m = claude_parse(path, src)?;
    let removed = m
        .get_mut("mcpServers")
        .and_then(|s| s.as_object_mut())
        .and_then(|s| s.shift_remove(SERVER_NAME))
        .is_some();
    if !removed {
        return Ok(Some(src.to_string()));
    }
    claude_render(Some(src), m).map(Some)
}

/// Whether Claude's config lists our server.
pub(super) fn claude_has(path: &Path, text: Option<&str>) -> Result<bool> {
    let Some(src) = text else {
        return Ok(false);
    };
    let m = claude_parse(path, src)?;
    Ok(m.get("mcpServers")
        .and_then(|s| s.as_object())
        .is_some_and(|s| s.contains_key(SERVER_NAME)))
}

// ---- writes -----------------------------------------------------------------------------

/// Write `bytes` to `path` atomically (or remove it for `None`), keeping an existing file's
/// mode and writing through a symbolic link to its target (a dotfiles link stays a link).
pub(super) fn write_file(path: &Path, bytes: Option<&str>) -> Result<()> {
    let real = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path)
            .map_err(|e| Error::io(format!("resolving the link {}", path.display()), e))?,
        _ => path.to_path_buf(),
    };
    let Some(bytes) = bytes else {
        return match std::fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(format!("removing {}", path.display()), e)),
        };
    };
    let mode = std::fs::metadata(&real).ok().map(|m| m.permissions());
    codex_free_core::home::write_atomic_unlocked(&real, bytes.as_bytes())?;
    if let Some(p) = mode {
        std::fs::set_permissions(&real, p)
            .map_err(|e| Error::io(format!("setting the mode of {}", real.display()), e))?;
    }
    Ok(())
}

/// Write the backup `path` of `like` (with `like`'s mode).
pub(super) fn write_new(path: &Path, bytes: &str, like: &Path) -> Result<()> {
    codex_free_core::home::write_atomic_unlocked(path, bytes.as_bytes())?;
    if let Ok(m) = std::fs::metadata(like) {
        std::fs::set_permissions(path, m.permissions())
            .map_err(|e| Error::io(format!("setting the mode of {}", path.display()), e))?;
    }
    Ok(())
}
