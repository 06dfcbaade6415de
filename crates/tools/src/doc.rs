//! The project's own documentation for agents (`AGENTS.md` at the root) and the
//! environment summary, both for the `get_project_doc` / `get_environment` tools and for the
//! MCP `instructions` built by `mcp/`.
//!
//! `AGENTS.md` is delivered in byte pages of at most `projectDoc.maxBytes` (and within the
//! output ceiling), cut on a UTF-8 boundary; a cut page ends with
//! `(showing bytes 0-32768 of 50000 of AGENTS.md — call again with offset=32768 for the rest)`
//! so paging yields the file exactly. `projectDoc.maxBytes = 0` turns the doc off.
//!
//! Invariant: the doc is read through the path jail (an `AGENTS.md` symlink pointing outside
//! the root is not read), and never more than one page is held in memory.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use schemars::JsonSchema;
use serde::Deserialize;

use super::ToolCtx;
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::error::IoContext;
use codex_free_core::paging::{self as budget, append_byte_footer, page_budget};

/// File name of the project doc at the root (the Codex convention).
pub const PROJECT_DOC: &str = "AGENTS.md";

/// Arguments of `get_project_doc`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct GetProjectDocArgs {
    /// 0-based byte offset to start at (default 0), as named by a cut page's last line.
    #[serde(default)]
    pub offset: Option<u64>,
}

/// One page of AGENTS.md: `(text, total bytes, end offset)`; `None` when there is none.
fn doc_page(ctx: &ToolCtx, offset: u64, page: usize) -> Result<Option<(String, u64, u64)>> {
    let jail = ctx.jail();
    let path = match jail.resolve(PROJECT_DOC) {
        Ok(p) => p,
        Err(Error::NotFound(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    if !path.is_file() {
        return Ok(None);
    }
    let mut f = File::open(&path).ctx(|| format!("opening {PROJECT_DOC}"))?;
    let total = f.metadata().ctx(|| format!("reading {PROJECT_DOC}"))?.len();
    if offset > total || (offset == total && total > 0) {
        return Err(Error::InvalidArgument(format!(
            "offset={offset} is past the end of {PROJECT_DOC}, which is {total} bytes"
        )));
    }
    f.seek(SeekFrom::Start(offset))
        .ctx(|| format!("reading {PROJECT_DOC}"))?;
    let mut buf = Vec::with_capacity(page.min(total as usize));
    f.take(page as u64)
        .read_to_end(&mut buf)
        .ctx(|| format!("reading {PROJECT_DOC}"))?;
    let mut keep = buf.len();
    if offset + (buf.len() as u64) < total {
        keep = budget::utf8_complete_prefix(&buf);
        if keep == 0 {
            keep = buf.len();
        }
    }
    buf.truncate(keep);
    let text = String::from_utf8_lossy(&buf).into_owned();
    Ok(Some((text, total, offset + keep as u64)))
}

/// `get_project_doc`: one page of `AGENTS.md` at the project root, at most
/// `projectDoc.maxBytes` bytes (and within the output ceiling), with a footer naming the
/// byte `offset` that continues. Without the file: `(no AGENTS.md at the project root)`.
///
/// Errors: [`Error::InvalidArgument`] for an `offset` past the end; [`Error::PathOutsideRoot`]
/// when `AGENTS.md` is a symlink out of the root; [`Error::Io`].
pub fn get_project_doc(ctx: &ToolCtx, a: &GetProjectDocArgs) -> Result<String> {
    let max = ctx.config.project_doc.max_bytes;
    if max == 0 {
        return Ok("(the project doc is turned off: projectDoc.maxBytes = 0)".into());
    }
    let offset = a.offset.unwrap_or(0);
    let page = page_budget(max, ctx.max_output_bytes());
    let Some((mut text, total, end)) = doc_page(ctx, offset, page)? else {
        return Ok(format!("(no {PROJECT_DOC} at the project root)"));
    };
    if total == 0 {
        return Ok(format!("({PROJECT_DOC} is empty)"));
    }
    if end < total {
        append_byte_footer(
            &mut text,
            &budget::doc_bytes_footer(PROJECT_DOC, offset, end, total),
        );
    }
    Ok(budget::enforce_ceiling(text, ctx.max_output_bytes()))
}

/// The start of `AGENTS.md` for the MCP instructions: at most `projectDoc.maxBytes` bytes,
/// ending with a line that points to `get_project_doc` with the `offset` of the rest when
/// cut. `None` when the file is missing, empty, unreadable, outside the jail, or the doc is
/// turned off (`maxBytes = 0`); failures are logged, never raised, since instructions must
/// still be built.
pub fn project_doc_for_instructions(ctx: &ToolCtx) -> Option<String> {
    let max = ctx.config.project_doc.max_bytes;
    if max == 0 {
        return None;
    }
    match doc_page(ctx, 0, max) {
        Ok(Some((mut text, total, end))) if total > 0 => {
            if end < total {
                append_byte_footer(
                    &mut text,
                    &budget::doc_cut_footer(
                        PROJECT_DOC,
                        end,
                        total,
                        budget::Call::Tool("get_project_doc"),
                    ),
                );
            }
            Some(text)
        }
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(error = %e, "project doc not included in instructions");
            None
        }
    }
}

/// The current git branch of the root's repository: `main`, `detached at 1a2b3c4`,
/// `refs/heads/main (no commits yet)`, or `None` outside a repository. Read from the
/// repository's `HEAD` file (a worktree's `.git` file is followed to its git directory), so
/// no git process runs while instructions are built and nothing in the repository's
/// config can make it run one.
fn git_branch(root: &std::path::Path) -> Option<String> {
    let git_dir = root.ancestors().find_map(|d| {
        let g = d.join(".git");
        if g.is_dir() {
            return Some(g);
        }
        let text = std::fs::read_to_string(&g).ok()?;
        let rel = text.strip_prefix("gitdir:")?.trim();
        Some(d.join(rel))
    })?;
    let head = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(target) = head.strip_prefix("ref:").map(str::trim) else {
        return (head.len() >= 7 && head.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| format!("detached at {}", &head[..7]));
    };
    // A linked worktree keeps its refs in the common directory.
    let common = std::fs::read_to_string(git_dir.join("commondir"))
        .map(|c| git_dir.join(c.trim()))
        .unwrap_or_else(|_| git_dir.clone());
    let born = [&git_dir, &common].iter().any(|g| g.join(target).is_file())
        || std::fs::read_to_string(common.join("packed-refs")).is_ok_and(|p| {
            p.lines()
                .any(|l| l.split_whitespace().nth(1) == Some(target))
        });
    let short = target.strip_prefix("refs/heads/").unwrap_or(target);
    Some(if born {
        short.to_string()
    } else {
        format!("{target} (no commits yet)")
    })
}

/// `get_environment`: what an agent should know before acting, one `key: value` per line:
/// project root, OS and architecture, shell (`$SHELL`), git branch (if a repository), the
/// local date and time with its UTC offset, and the caps the tools apply (lines, bytes,
/// entries, nodes, output ceiling in tokens and bytes, AGENTS.md bytes, command timeouts in
/// ms, exec mode) and the OS sandbox of commands (a `WARNING` when they run unconfined).
/// Never fails: unknown values are shown as `unknown`.
pub fn get_environment(ctx: &ToolCtx) -> String {
    let o = &ctx.config.output;
    let shell = std::env::var("SHELL").unwrap_or_else(|_| "unknown".into());
    let branch = git_branch(ctx.root()).unwrap_or_else(|| "(not a git repository)".into());
    let now = chrono::Local::now();
    let exec_mode = match ctx.config.exec.mode {
        codex_free_core::config::ExecMode::Allowlist => "allowlist",
        codex_free_core::config::ExecMode::Unrestricted => "unrestricted",
    };
    let doc = if ctx.jail().resolve(PROJECT_DOC).is_ok_and(|p| p.is_file()) {
        "present"
    } else {
        "absent"
    };
    let lines = [
        format!("project root: {}", ctx.root().display()),
        format!("os: {} ({})", std::env::consts::OS, std::env::consts::ARCH),
        format!("shell: {shell}"),
        format!("git branch: {branch}"),
        format!("date: {}", now.format("%Y-%m-%d %H:%M %:z (%A)")),
        format!(
            "{PROJECT_DOC}: {doc} (up to {} bytes per get_project_doc page)",
            ctx.config.project_doc.max_bytes
        ),
        format!(
            "read_file page: up to {} lines and {} bytes",
            o.max_file_lines, o.max_file_bytes
        ),
        format!(
            "list_directory/glob/grep page: up to {} entries",
            o.max_entries
        ),
        format!("tree page: up to {} nodes", o.max_tree_nodes),
        format!(
            "tool output ceiling: {} tokens (counted as bytes / 4, so {} bytes)",
            o.max_tool_output_tokens,
            ctx.max_output_bytes()
        ),
        format!(
            "commands: {} ms default timeout, {} ms max, exec mode {exec_mode}",
            ctx.config.command.default_timeout, ctx.config.command.max_timeout
        ),
        match crate::exec::sandbox_status(&ctx.config.exec) {
            s if s.enforced => format!("sandbox: {}", s.summary),
            s => format!("sandbox: WARNING: {}", s.warning.unwrap_or(s.summary)),
        },
    ];
    budget::enforce_ceiling(lines.join("\n"), ctx.max_output_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use codex_free_core::config::Config;
    use std::path::Path;

    fn ctx_with(root: &Path, max: usize) -> ToolCtx {
        let mut c = Config::default();
        c.project_doc.max_bytes = max;
        ToolCtx::open(
            root,
            std::sync::Arc::new(codex_free_core::jail::Protected::none()),
            c,
            root.join(".home"),
        )
        .unwrap()
    }

    #[test]
    fn doc_pages_exactly_and_marks_the_cut() {
        let d = tempfile::tempdir().unwrap();
        let text = "# Rules\n".to_string() + &"é and more text\n".repeat(500);
        std::fs::write(d.path().join("AGENTS.md"), &text).unwrap();
        let ctx = ctx_with(d.path(), 1000);
        let mut got = String::new();
        let mut offset = None;
        loop {
            let page = get_project_doc(&ctx, &GetProjectDocArgs { offset }).unwrap();
            match budget::parse_footer(&page) {
                Some(c) => {
                    let footer = &page[c.content_end + 1..];
                    got.push_str(&page[..c.content_end]);
                    assert!(
                        footer.contains(&format!("of {} of AGENTS.md", text.len())),
                        "{footer}"
                    );
                    offset = Some(c.offset().unwrap());
                }
                None => {
                    got.push_str(&page);
                    break;
                }
            }
        }
        assert_eq!(got, text);
        let instr = project_doc_for_instructions(&ctx).unwrap();
        let end = budget::parse_footer(&instr).unwrap().offset().unwrap() as usize;
        assert!((997..=1000).contains(&end), "{end}");
        assert_eq!(
            instr,
            format!(
                "{}\n(AGENTS.md cut at {end} of {} bytes — call get_project_doc with offset={end} for the rest)",
                &text[..end],
                text.len()
            )
        );
        assert!(instr.starts_with("# Rules\n"));
    }

    #[test]
    fn missing_empty_and_disabled_doc() {
        let d = tempfile::tempdir().unwrap();
        let ctx = ctx_with(d.path(), 1000);
        assert_eq!(
            get_project_doc(&ctx, &GetProjectDocArgs::default()).unwrap(),
            "(no AGENTS.md at the project root)"
        );
        assert!(project_doc_for_instructions(&ctx).is_none());
        std::fs::write(d.path().join("AGENTS.md"), "").unwrap();
        assert_eq!(
            get_project_doc(&ctx, &GetProjectDocArgs::default()).unwrap(),
            "(AGENTS.md is empty)"
        );
        std::fs::write(d.path().join("AGENTS.md"), "short\n").unwrap();
        assert_eq!(
            get_project_doc(&ctx, &GetProjectDocArgs::default()).unwrap(),
            "short\n"
        );
        assert_eq!(project_doc_for_instructions(&ctx).unwrap(), "short\n");
        let off = ctx_with(d.path(), 0);
        assert!(
            get_project_doc(&off, &GetProjectDocArgs::default())
                .unwrap()
                .contains("turned off")
        );
        assert!(project_doc_for_instructions(&off).is_none());
    }

    #[test]
    fn environment_names_root_branch_and_caps() {
        let d = tempfile::tempdir().unwrap();
        let init = std::process::Command::new("git")
            .args(["init", "-q", "-b", "main"])
            .current_dir(d.path())
            .status()
            .unwrap();
        assert!(init.success());
        let ctx = ctx_with(d.path(), 32768);
        let env = get_environment(&ctx);
        assert!(
            env.contains(&format!("project root: {}", ctx.root().display())),
            "{env}"
        );
        assert!(
            env.contains("git branch: ") && env.contains("(no commits yet)"),
            "{env}"
        );
        assert!(env.contains("1000 lines and 131072 bytes"), "{env}");
        assert!(env.contains("10000 tokens"), "{env}");
    }
}
