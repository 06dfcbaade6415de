//! File tools confined to the memory folder: `list_files`, `read_file`, `write_file` and
//! `edit_file`, the only tools the consolidation agent gets, and the path rules
//! the read-path tools (`memories_*`) share.
//!
//! A path given by a model or a client is always relative to the folder and must be made of
//! plain, visible components: no `..`, no absolute path, no `.`-prefixed (hidden) name, no
//! backslash or NUL, and no existing component may be a symbolic link (checked with
//! `symlink_metadata` on every prefix, so a planted link anywhere on the way is refused).
//! Writes go only to the consolidation's own outputs (`MEMORY.md`, `memory_summary.md`,
//! `skills/**`, and the `daily/**` and `archive/**` layers): the other files are inputs synced from the database on every run, so an
//! agent's edits to them would be lost anyway. One write is at most [`MAX_WRITE_BYTES`].
//!
//! Known limit: checks and the write are separate system calls, so a local process racing
//! to swap a directory for a link between them is not prevented; the threat model is a
//! model's tool calls, not a hostile local user.
//!
//! Invariant: no function here reads or writes a path outside the jail root or through a
//! symbolic link; a refused call changes nothing on disk.

use std::fs;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::error::ErrorCode;
use codex_free_core::error::IoContext;

/// Largest content one `write_file`/`edit_file` call may leave in a file: 256 KiB. The
/// budgets of the artifacts are far smaller; this only stops runaway output.
pub const MAX_WRITE_BYTES: usize = 256 * 1024;

/// Most lines one agent `read_file` call returns (the agent pages with `offset`).
pub const AGENT_READ_MAX_LINES: usize = 2000;

/// Most bytes one agent `read_file` call returns (128 KiB).
pub const AGENT_READ_MAX_BYTES: usize = 128 * 1024;

/// Most entries one agent `list_files` call returns.
pub const AGENT_LIST_MAX: usize = 2000;

/// Which files a jail lets callers change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WritePolicy {
    /// Nothing may be written (read-path tools).
    ReadOnly,
    /// `MEMORY.md`, `memory_summary.md` and anything under `skills/`, `daily/` or `archive/`
    /// (the consolidation agent).
    ConsolidationOutputs,
    /// `memory_summary.md` and anything under `skills/` (the V2 consolidation agent: V2
    /// keeps no `MEMORY.md`, daily logs or archive).
    V2Outputs,
}

/// A directory that tool paths cannot leave.
#[derive(Debug, Clone)]
pub struct FolderJail {
    root: PathBuf,
    policy: WritePolicy,
}

/// One visible file or directory under the jail, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Path relative to the root, `/`-separated.
    pub path: String,
    /// True for directories.
    pub is_dir: bool,
    /// Size in bytes (0 for directories).
    pub bytes: u64,
}

impl FolderJail {
    /// A jail over `root`, which must exist and be a real directory (not a link).
    ///
    /// Errors: [`Error::NotFound`] when `root` is missing; [`Error::PathOutsideRoot`] when it is a
    /// symbolic link or not a directory.
    pub fn new(root: &Path, policy: WritePolicy) -> Result<Self> {
        let md = fs::symlink_metadata(root).map_err(|_| Error::NotFound(root.to_path_buf()))?;
        if md.file_type().is_symlink() || !md.is_dir() {
            return Err(Error::PathOutsideRoot(format!(
                "memory folder {} must be a real directory (not a symbolic link)",
                root.display()
            )));
        }
        Ok(Self {
            root: root.to_path_buf(),
            policy,
        })
    }

    /// The jail root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Split `rel` into checked components. An empty string or `.` means the root itself.
    ///
    /// Errors: [`Error::PathOutsideRoot`] naming the rule broken (absolute path, `..`, hidden
    /// component, backslash or NUL).
    pub fn components(rel: &str) -> Result<Vec<String>> {
        if rel.contains('\0') || rel.contains('\\') {
            return Err(Error::PathOutsideRoot(format!(
                "path {rel:?} may not contain a backslash or NUL; use '/'-separated relative paths"
            )));
        }
        let p = Path::new(rel);
        let mut out = Vec::new();
        for c in p.components() {
            match c {
                Component::CurDir => {}
                Component::Normal(s) => {
                    let s = s.to_string_lossy();
                    if s.starts_with('.') {
                        return Err(Error::PathOutsideRoot(format!(
                            "path {rel:?} names a hidden file or directory ({s:?}); hidden files are not accessible"
                        )));
                    }
                    out.push(s.into_owned());
                }
                Component::ParentDir => {
                    return Err(Error::PathOutsideRoot(format!(
                        "path {rel:?} contains '..'; paths must stay inside the memory folder"
                    )));
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(Error::PathOutsideRoot(format!(
                        "path {rel:?} is absolute; give a path relative to the memory folder (e.g. MEMORY.md)"
                    )));
                }
            }
        }
        Ok(out)
    }

    /// Resolve `rel` to an absolute path whose existing components contain no symbolic
    /// link. The target itself may be missing.
    ///
    /// Errors: as [`FolderJail::components`]; [`Error::PathOutsideRoot`] when an existing
    /// component is a symbolic link or a non-final component is not a directory.
    pub fn resolve(&self, rel: &str) -> Result<PathBuf> {
        let comps = Self::components(rel)?;
        let mut cur = self.root.clone();
        for (i, c) in comps.iter().enumerate() {
            cur.push(c);
            match fs::symlink_metadata(&cur) {
                Ok(md) if md.file_type().is_symlink() => {
                    return Err(Error::PathOutsideRoot(format!(
                        "path {rel:?} goes through a symbolic link ({}); links are refused",
                        comps[..=i].join("/")
                    )));
                }
                Ok(md) if i + 1 < comps.len() && !md.is_dir() => {
                    return Err(Error::PathOutsideRoot(format!(
                        "path {rel:?}: {} is not a directory",
                        comps[..=i].join("/")
                    )));
                }
                Ok(_) => {}
                Err(_) => {
                    // Missing: nothing below it can be a link either.
                    for rest in &comps[i + 1..] {
                        cur.push(rest);
                    }
                    break;
                }
            }
        }
        Ok(cur)
    }

    /// Whether the write policy allows changing `rel` (already split into components).
    fn writable(&self, comps: &[String]) -> bool {
        match self.policy {
            WritePolicy::ReadOnly => false,
            WritePolicy::ConsolidationOutputs => match comps {
                [f] => f == super::folder::MEMORY_MD || f == super::folder::SUMMARY_MD,
                [d, _, ..] => {
                    d == super::folder::SKILLS_DIR
                        || d == crate::layout::DAILY_DIR
                        || d == crate::layout::ARCHIVE_DIR
                }
                _ => false,
            },
            WritePolicy::V2Outputs => match comps {
                [f] => f == super::folder::SUMMARY_MD,
                [d, _, ..] => d == super::folder::SKILLS_DIR,
                _ => false,
            },
        }
    }

    /// Read a whole regular file as UTF-8.
    ///
    /// Errors: path rules as [`FolderJail::resolve`]; [`Error::NotFound`]; [`Error::InvalidArgument`]
    /// when it is a directory or not UTF-8.
    pub fn read_to_string(&self, rel: &str) -> Result<String> {
        let p = self.resolve(rel)?;
        let md = fs::symlink_metadata(&p).map_err(|_| Error::NotFound(PathBuf::from(rel)))?;
        if !md.is_file() {
            return Err(Error::InvalidArgument(format!(
                "path {rel:?} is not a regular file"
            )));
        }
        let bytes = fs::read(&p).ctx(|| format!("reading {rel}"))?;
        String::from_utf8(bytes)
            .map_err(|_| Error::InvalidArgument(format!("file {rel:?} is not UTF-8 text")))
    }

    /// Write `content` to `rel` atomically (temp file + rename), creating parent
    /// directories inside the jail.
    ///
    /// Errors: path rules as [`FolderJail::resolve`]; [`Error::Refused`] when the policy forbids
    /// the path; [`Error::Budget`] when `content` exceeds [`MAX_WRITE_BYTES`];
    /// [`Error::InvalidArgument`] when `rel` names a directory.
    pub fn write(&self, rel: &str, content: &str) -> Result<()> {
        let comps = Self::components(rel)?;
        if comps.is_empty() {
            return Err(Error::InvalidArgument(
                "write_file needs a file path, e.g. MEMORY.md".into(),
            ));
        }
        if !self.writable(&comps) {
            return Err(Error::Refused(match self.policy {
                WritePolicy::ReadOnly => format!("path {rel:?} is read-only here"),
                WritePolicy::ConsolidationOutputs => format!(
                    "path {rel:?} is not writable: only MEMORY.md, memory_summary.md and files under skills/, daily/ and archive/ may be written (the other files are inputs synced from the database)"
                ),
                WritePolicy::V2Outputs => format!(
                    "path {rel:?} is not writable: only memory_summary.md and files under skills/ may be written in the v2 memory (the rollout summaries are inputs synced from the database)"
                ),
            }));
        }
        if content.len() > MAX_WRITE_BYTES {
            return Err(Error::Budget(format!(
                "content for {rel:?} is {} bytes; one file may hold at most {MAX_WRITE_BYTES} bytes",
                content.len()
            )));
        }
        let target = self.resolve(rel)?;
        // Create missing parents one by one, re-checking each (never through a link).
        let mut cur = self.root.clone();
        for c in &comps[..comps.len() - 1] {
            cur.push(c);
            match fs::symlink_metadata(&cur) {
                Ok(md) if md.file_type().is_symlink() || !md.is_dir() => {
                    return Err(Error::PathOutsideRoot(format!(
                        "path {rel:?}: {c} is not a plain directory"
                    )));
                }
                Ok(_) => {}
                Err(_) => fs::create_dir(&cur).ctx(|| format!("creating directory for {rel}"))?,
            }
        }
        if let Ok(md) = fs::symlink_metadata(&target)
            && !md.is_file()
        {
            return Err(Error::InvalidArgument(format!(
                "path {rel:?} exists and is not a regular file"
            )));
        }
        codex_free_core::home::write_atomic_unlocked(&target, content.as_bytes())
    }

    /// Every visible entry under `rel` (recursively; `""` = the whole jail), sorted by path,
    /// skipping hidden names and symbolic links. A file path yields itself.
    ///
    /// Errors: path rules as [`FolderJail::resolve`]; [`Error::NotFound`] when `rel` is missing.
    pub fn walk(&self, rel: &str) -> Result<Vec<Entry>> {
        let start = self.resolve(rel)?;
        let md = fs::symlink_metadata(&start).map_err(|_| Error::NotFound(PathBuf::from(rel)))?;
        let prefix = Self::components(rel)?.join("/");
        if md.is_file() {
            return Ok(vec![Entry {
                path: prefix,
                is_dir: false,
                bytes: md.len(),
            }]);
        }
        let mut out = Vec::new();
        let mut stack = vec![(start, prefix)];
        while let Some((dir, rel_dir)) = stack.pop() {
            let rd = match fs::read_dir(&dir) {
                Ok(rd) => rd,
                Err(_) => continue,
            };
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') {
                    continue;
                }
                let Ok(md) = fs::symlink_metadata(e.path()) else {
                    continue;
                };
                if md.file_type().is_symlink() {
                    continue;
                }
                let path = if rel_dir.is_empty() {
                    name
                } else {
                    format!("{rel_dir}/{name}")
                };
                if md.is_dir() {
                    out.push(Entry {
                        path: path.clone(),
                        is_dir: true,
                        bytes: 0,
                    });
                    stack.push((e.path(), path));
                } else if md.is_file() {
                    out.push(Entry {
                        path,
                        is_dir: false,
                        bytes: md.len(),
                    });
                }
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// Run one agent tool call. Never fails: a refused or bad call yields an error text
    /// (starting with `error[<code>]:`) that goes back to the model, and `is_error = true`.
    pub fn call(&self, name: &str, arguments: &str) -> ToolResult {
        let r = match name {
            "list_files" => parse::<ListArgs>(arguments).and_then(|a| self.tool_list(&a)),
            "read_file" => parse::<ReadArgs>(arguments).and_then(|a| self.tool_read(&a)),
            "write_file" => parse::<WriteArgs>(arguments).and_then(|a| {
                self.write(&a.path, &a.content)?;
                Ok(format!(
                    "wrote {} ({} lines, {} bytes)",
                    a.path,
                    a.content.lines().count(),
                    a.content.len()
                ))
            }),
            "edit_file" => parse::<EditArgs>(arguments).and_then(|a| self.tool_edit(&a)),
            other => Err(Error::Refused(format!(
                "no tool named {other:?}; the tools are list_files, read_file, write_file and edit_file"
            ))),
        };
        match r {
            Ok(text) => ToolResult {
                text,
                is_error: false,
                code: None,
            },
            Err(e) => ToolResult {
                text: e.mcp_text(),
                is_error: true,
                code: Some(e.code()),
            },
        }
    }

    fn tool_list(&self, a: &ListArgs) -> Result<String> {
        let entries = self.walk(a.path.as_deref().unwrap_or(""))?;
        let total = entries.len();
        let mut out = String::new();
        for e in entries.iter().take(AGENT_LIST_MAX) {
            if e.is_dir {
                out.push_str(&format!("{}/\n", e.path));
            } else {
                out.push_str(&format!("{} ({} bytes)\n", e.path, e.bytes));
            }
        }
        if total == 0 {
            out.push_str("(no files)\n");
        } else if total > AGENT_LIST_MAX {
            out.push_str(&codex_free_core::paging::capped_footer(
                "entries",
                AGENT_LIST_MAX,
                total,
                "list a subdirectory",
            ));
            out.push('\n');
        }
        Ok(out)
    }

    fn tool_read(&self, a: &ReadArgs) -> Result<String> {
        let text = self.read_to_string(&a.path)?;
        let limit = a
            .limit
            .unwrap_or(AGENT_READ_MAX_LINES)
            .clamp(1, AGENT_READ_MAX_LINES);
        Ok(page_lines(
            &text,
            a.offset.unwrap_or(0),
            limit,
            AGENT_READ_MAX_BYTES,
            None,
        )
        .text)
    }

    fn tool_edit(&self, a: &EditArgs) -> Result<String> {
        if a.old_text.is_empty() {
            return Err(Error::InvalidArgument(
                "old_text must not be empty; use write_file to create a file".into(),
            ));
        }
        // Policy and path checks first, so a refused path reveals nothing about content.
        let comps = Self::components(&a.path)?;
        if !self.writable(&comps) {
            return self.write(&a.path, "").map(|_| String::new());
        }
        let text = self.read_to_string(&a.path)?;
        let n = text.matches(a.old_text.as_str()).count();
        let new = match (n, a.replace_all.unwrap_or(false)) {
            (0, _) => {
                return Err(Error::InvalidArgument(format!(
                    "old_text was not found in {}",
                    a.path
                )));
            }
            (1, _) | (_, true) => text.replace(a.old_text.as_str(), &a.new_text),
            (n, false) => {
                return Err(Error::InvalidArgument(format!(
                    "old_text occurs {n} times in {}; give more context or set replace_all=true",
                    a.path
                )));
            }
        };
        self.write(&a.path, &new)?;
        Ok(format!(
            "edited {} ({n} replacement(s); now {} lines, {} bytes)",
            a.path,
            new.lines().count(),
            new.len()
        ))
    }
}

/// The outcome of one agent tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    /// Text returned to the model.
    pub text: String,
    /// True when the call was refused or failed.
    pub is_error: bool,
    /// The error code when `is_error` (e.g. `path_outside_root`, `refused`, `budget_exceeded`).
    pub code: Option<ErrorCode>,
}

fn parse<T: for<'de> Deserialize<'de>>(arguments: &str) -> Result<T> {
    let args = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    serde_json::from_str(args)
        .map_err(|e| Error::InvalidArgument(format!("bad tool arguments: {e}")))
}

/// Arguments of the agent's `list_files`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Subdirectory relative to the memory folder; omitted = the whole folder.
    pub path: Option<String>,
}

/// Arguments of the agent's `read_file`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// File path relative to the memory folder, e.g. `MEMORY.md`.
    pub path: String,
    /// Lines to skip from the start (0-based). Default 0.
    pub offset: Option<usize>,
    /// Most lines to return. Default and maximum 2000.
    pub limit: Option<usize>,
}

/// Arguments of the agent's `write_file`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// `MEMORY.md`, `memory_summary.md` or `skills/<name>/...`.
    pub path: String,
    /// The whole new content (UTF-8, at most 256 KiB).
    pub content: String,
}

/// Arguments of the agent's `edit_file`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditArgs {
    /// `MEMORY.md`, `memory_summary.md` or `skills/<name>/...`.
    pub path: String,
    /// Exact text to find.
    pub old_text: String,
    /// Replacement text.
    pub new_text: String,
    /// Replace every occurrence instead of requiring exactly one. Default false.
    pub replace_all: Option<bool>,
}

/// One page of a text file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The lines shown, followed by the continuation line when more remain.
    pub text: String,
    /// First line shown (1-based); 0 when nothing was shown.
    pub first: usize,
    /// Last line shown (1-based).
    pub last: usize,
    /// Lines in the file.
    pub total: usize,
}

/// Cut `text` to lines `offset+1 ..` at most `limit` lines, `max_bytes` bytes and (when
/// given) `max_tokens` tokens, by [`codex_free_core::paging::page_lines`]. At least part of
/// a line is shown when any remain (a single huge line is cut at a char boundary, with a
/// note naming the offset after it). When lines remain, the last line is
/// `(showing lines A-B of N — call again with offset=B for the rest)`.
pub fn page_lines(
    text: &str,
    offset: usize,
    limit: usize,
    max_bytes: usize,
    max_tokens: Option<usize>,
) -> Page {
    use codex_free_core::paging;
    let page = paging::page_lines(
        text,
        offset,
        paging::LineLimits {
            max_lines: limit,
            max_bytes,
            max_tokens,
        },
    );
    let total = page.total;
    if page.past_end() {
        let msg = if total == 0 {
            "(empty file)\n".to_string()
        } else {
            format!("(offset={offset} is past the end: the file has {total} lines)\n")
        };
        return Page {
            text: msg,
            first: 0,
            last: 0,
            total,
        };
    }
    let mut text = page.render(paging::Call::Again);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Page {
        text,
        first: offset + 1,
        last: page.end,
        total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jail() -> (tempfile::TempDir, FolderJail) {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("memories");
        fs::create_dir(&root).unwrap();
        let j = FolderJail::new(&root, WritePolicy::ConsolidationOutputs).unwrap();
        (d, j)
    }

    #[test]
    fn rejects_escapes_absolute_hidden() {
        for bad in [
            "../x",
            "a/../../x",
            "/etc/passwd",
            ".git/config",
            "skills/.hidden",
            "a\\b",
        ] {
            let e = FolderJail::components(bad).unwrap_err();
            assert_eq!(e.code(), "path_outside_root", "{bad}: {e}");
        }
        assert_eq!(
            FolderJail::components("./skills/a.md").unwrap(),
            ["skills", "a.md"]
        );
    }

    #[test]
    fn write_policy_limits_to_outputs() {
        let (_d, j) = jail();
        j.write("MEMORY.md", "# m\n").unwrap();
        j.write("skills/deploy/SKILL.md", "x\n").unwrap();
        let e = j.write("raw_memories.md", "x").unwrap_err();
        assert_eq!(e.code(), "refused");
        let e = j.write("skills", "x").unwrap_err();
        assert_eq!(e.code(), "refused", "the skills dir itself is not a file");
        assert!(!j.root().join("raw_memories.md").exists());
    }

    #[cfg(unix)]
    #[test]
    fn symlink_anywhere_is_refused() {
        let (d, j) = jail();
        let outside = d.path().join("outside");
        fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, j.root().join("skills")).unwrap();
        let e = j.write("skills/x.md", "pwned").unwrap_err();
        assert_eq!(e.code(), "path_outside_root", "{e}");
        assert!(
            fs::read_dir(&outside).unwrap().next().is_none(),
            "nothing written outside"
        );
        std::os::unix::fs::symlink(d.path().join("secret"), j.root().join("MEMORY.md")).unwrap();
        fs::write(d.path().join("secret"), "s").unwrap();
        assert_eq!(
            j.read_to_string("MEMORY.md").unwrap_err().code(),
            "path_outside_root"
        );
        assert_eq!(
            j.write("MEMORY.md", "x").unwrap_err().code(),
            "path_outside_root"
        );
        assert_eq!(fs::read_to_string(d.path().join("secret")).unwrap(), "s");
        assert!(j.walk("").unwrap().is_empty(), "links are not listed");
    }

    #[test]
    fn size_cap_on_write() {
        let (_d, j) = jail();
        let big = "x".repeat(MAX_WRITE_BYTES + 1);
        assert_eq!(
            j.write("MEMORY.md", &big).unwrap_err().code(),
            "budget_exceeded"
        );
        assert!(!j.root().join("MEMORY.md").exists());
    }

    #[test]
    fn edit_requires_unique_match() {
        let (_d, j) = jail();
        j.write("MEMORY.md", "a\nb\na\n").unwrap();
        let r = j.call(
            "edit_file",
            r#"{"path":"MEMORY.md","old_text":"a","new_text":"c"}"#,
        );
        assert!(r.is_error && r.text.contains("2 times"), "{r:?}");
        let r = j.call(
            "edit_file",
            r#"{"path":"MEMORY.md","old_text":"b","new_text":"B"}"#,
        );
        assert!(!r.is_error, "{r:?}");
        assert_eq!(j.read_to_string("MEMORY.md").unwrap(), "a\nB\na\n");
        let r = j.call("shell", r#"{"cmd":"ls"}"#);
        assert_eq!(r.code, Some(ErrorCode::Refused));
    }

    #[test]
    fn page_lines_continuation() {
        let text: String = (1..=812).map(|i| format!("line {i}\n")).collect();
        let p = page_lines(&text, 0, 200, usize::MAX, None);
        assert!(
            p.text.ends_with(
                "(showing lines 1-200 of 812 — call again with offset=200 for the rest)\n"
            ),
            "{}",
            p.text
        );
        let p = page_lines(&text, 800, 200, usize::MAX, None);
        assert_eq!((p.first, p.last), (801, 812));
        assert!(!p.text.contains("showing"));
        let p = page_lines(&text, 0, 1000, usize::MAX, Some(50));
        assert!(p.last < 812 && p.last > 5, "{}", p.last);
    }
}
