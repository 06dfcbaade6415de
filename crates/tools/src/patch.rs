//! `apply_patch` in Codex's patch format (as parsed by openai/codex `codex-rs/apply-patch`):
//!
//! ```text
//! *** Begin Patch
//! *** Add File: path            (then every line starts with `+`)
//! *** Delete File: path
//! *** Update File: path
//! *** Move to: new/path         (optional, right after Update File)
//! @@ optional anchor line       (one or more `@@` lines start a hunk)
//!  context line                 (` ` prefix; an empty line counts as an empty context line)
//! -removed line
//! +added line
//! *** End of File               (optional: the hunk must match at the end of the file)
//! *** End Patch
//! ```
//!
//! Matching follows upstream: the hunk's old lines (context + removed) are searched from
//! after the previous hunk (and after its `@@` anchors), first exactly, then ignoring
//! trailing whitespace, then ignoring surrounding whitespace, then with typographic
//! punctuation (dashes, quotes, odd spaces) folded to ASCII. Like upstream: an updated file
//! always ends with a newline, `Add File` replaces an existing file, `Move to` replaces an
//! existing destination, a hunk with only `+` lines and no anchor appends at the end.
//! Beyond upstream: several consecutive `@@` anchors narrow the position step by step, and
//! a file whose lines all end in CRLF keeps CRLF endings.
//!
//! All or nothing: the whole patch is parsed, every path jailed and every hunk matched in
//! memory before anything is written; then files are written atomically one by one, and if
//! a write fails the files already changed are restored.
//!
//! Invariant: no byte reaches the disk unless every operation of the patch validated.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;

use super::ToolCtx;
use super::fs::atomic_write;
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::error::IoContext;
use codex_free_core::jail::Jail;

/// Arguments of `apply_patch`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ApplyPatchArgs {
    /// The whole patch, from `*** Begin Patch` to `*** End Patch`, in Codex's apply_patch format (Add File / Delete File / Update File with optional Move to, `@@` hunks of ` `, `-`, `+` lines).
    pub input: String,
}

/// One hunk of an `Update File`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Chunk {
    /// `@@ text` anchors, each searched after the previous one.
    anchors: Vec<String>,
    /// Context and removed lines, in order.
    old: Vec<String>,
    /// Context and added lines, in order.
    new: Vec<String>,
    /// Every hunk line in order with its kind (`b' '`, `b'-'`, `b'+'`), used to keep the
    /// file's own text for context lines that matched loosely.
    script: Vec<(u8, String)>,
    /// `*** End of File` followed: match at the end.
    eof: bool,
    /// 1-based line of the patch where the hunk starts (for errors).
    patch_line: usize,
}

/// One file operation.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Add {
        path: String,
        contents: String,
    },
    Delete {
        path: String,
    },
    Update {
        path: String,
        move_to: Option<String>,
        chunks: Vec<Chunk>,
    },
}

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE: &str = "*** Move to: ";
const EOF_MARK: &str = "*** End of File";

fn perr(line: usize, msg: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("apply_patch: invalid patch at line {line}: {msg}"))
}

/// Parse the patch text into operations. Lenient like upstream: markers may carry
/// surrounding whitespace, and a heredoc wrapper (`<<'EOF'` ... `EOF`) is removed.
///
/// Long on purpose: one line-by-line state machine over the patch grammar; its states share the
/// cursor and the current operation.
#[expect(
    clippy::too_many_lines,
    reason = "one line-by-line state machine over the patch grammar; its states share the cursor and the current operation"
)]
fn parse(input: &str) -> Result<Vec<Op>> {
    let mut lines: Vec<&str> = input.trim().lines().collect();
    // Line numbers reported are 1-based in the (trimmed) patch; with a heredoc wrapper the
    // first patch line is line 2.
    let mut base = 1usize;
    if lines.len() >= 4
        && matches!(lines[0].trim(), "<<EOF" | "<<'EOF'" | "<<\"EOF\"")
        && lines.last().is_some_and(|l| l.trim_end().ends_with("EOF"))
    {
        lines = lines[1..lines.len() - 1].to_vec();
        base = 2;
    }
    if lines.first().map(|l| l.trim()) != Some(BEGIN) {
        return Err(perr(base, format!("the first line must be '{BEGIN}'")));
    }
    if lines.len() < 2 || lines.last().map(|l| l.trim()) != Some(END) {
        return Err(perr(
            base + lines.len().saturating_sub(1),
            format!("the last line must be '{END}'"),
        ));
    }
    let body = &lines[1..lines.len() - 1];
    let mut ops = Vec::new();
    let mut i = 0usize;
    let ln = |i: usize| base + 1 + i; // patch line number of body[i]
    while i < body.len() {
        let head = body[i].trim();
        if head.is_empty() {
            i += 1;
            continue;
        }
        if let Some(path) = head.strip_prefix(ADD) {
            let path = nonempty_path(path, ln(i))?;
            i += 1;
            let mut contents = String::new();
            while i < body.len() {
                match body[i].strip_prefix('+') {
                    Some(rest) => {
                        contents.push_str(rest);
                        contents.push('\n');
                        i += 1;
                    }
                    None => break,
                }
            }
            ops.push(Op::Add { path, contents });
        } else if let Some(path) = head.strip_prefix(DELETE) {
            ops.push(Op::Delete {
                path: nonempty_path(path, ln(i))?,
            });
            i += 1;
        } else if let Some(path) = head.strip_prefix(UPDATE) {
            let path = nonempty_path(path, ln(i))?;
            let header_line = ln(i);
            i += 1;
            let mut move_to = None;
            if let Some(dest) = body.get(i).and_then(|l| l.trim().strip_prefix(MOVE)) {
                move_to = Some(nonempty_path(dest, ln(i))?);
                i += 1;
            }
            let mut chunks = Vec::new();
            while i < body.len() {
                let l = body[i];
                if l.trim().is_empty() {
                    i += 1;
                    continue;
                }
                if l.starts_with("***") {
                    break;
                }
                let start = i;
                let mut anchors = Vec::new();
                while i < body.len() {
                    let t = body[i].trim_end();
                    if t == "@@" {
                        i += 1;
                    } else if let Some(a) = t.strip_prefix("@@ ") {
                        anchors.push(a.to_string());
                        i += 1;
                    } else {
                        break;
                    }
                }
                if i == start && !chunks.is_empty() {
                    return Err(perr(
                        ln(i),
                        format!(
                            "expected a hunk starting with '@@' in Update File: {path}, got '{l}'"
                        ),
                    ));
                }
                let mut chunk = Chunk {
                    anchors,
                    old: Vec::new(),
                    new: Vec::new(),
                    script: Vec::new(),
                    eof: false,
                    patch_line: ln(start),
                };
                let mut n = 0usize;
                while i < body.len() {
                    let l = body[i];
                    if l.trim() == EOF_MARK {
                        chunk.eof = true;
                        i += 1;
                        break;
                    }
                    match l.chars().next() {
                        None => {
                            chunk.old.push(String::new());
                            chunk.new.push(String::new());
                            chunk.script.push((b' ', String::new()));
                        }
                        Some(' ') => {
                            chunk.old.push(l[1..].to_string());
                            chunk.new.push(l[1..].to_string());
                            chunk.script.push((b' ', l[1..].to_string()));
                        }
                        Some('-') => {
                            chunk.old.push(l[1..].to_string());
                            chunk.script.push((b'-', l[1..].to_string()));
                        }
                        Some('+') => {
                            chunk.new.push(l[1..].to_string());
                            chunk.script.push((b'+', l[1..].to_string()));
                        }
                        Some(_) => {
                            if n == 0 {
                                return Err(perr(
                                    ln(i),
                                    format!(
                                        "unexpected line '{l}' in a hunk of Update File: {path}; every hunk line starts with ' ' (context), '-' (remove) or '+' (add)"
                                    ),
                                ));
                            }
                            break;
                        }
                    }
                    n += 1;
                    i += 1;
                }
                if n == 0 {
                    return Err(perr(
                        chunk.patch_line,
                        format!("a hunk of Update File: {path} has no lines"),
                    ));
                }
                chunks.push(chunk);
            }
            if chunks.is_empty() {
                return Err(perr(
                    header_line,
                    format!("Update File: {path} has no hunks"),
                ));
            }
            ops.push(Op::Update {
                path,
                move_to,
                chunks,
            });
        } else {
            return Err(perr(
                ln(i),
                format!(
                    "'{head}' is not a valid operation; expected '*** Add File: <path>', '*** Delete File: <path>' or '*** Update File: <path>'"
                ),
            ));
        }
    }
    Ok(ops)
}

fn nonempty_path(p: &str, line: usize) -> Result<String> {
    let p = p.trim();
    if p.is_empty() {
        return Err(perr(line, "the file path is empty"));
    }
    Ok(p.to_string())
}

/// Typographic punctuation folded to ASCII for the loosest match pass (upstream does the same).
fn fold(s: &str) -> String {
    s.trim()
        .chars()
        .map(|c| match c {
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            '\u{2018}'..='\u{201B}' => '\'',
            '\u{201C}'..='\u{201F}' => '"',
            '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
            o => o,
        })
        .collect()
}

/// A line comparison of one strictness level.
type LineEq = fn(&str, &str) -> bool;

/// Find `pattern` in `lines` at or after `start` with decreasing strictness. With `eof`,
/// the position at the very end is tried first.
fn seek(lines: &[String], pattern: &[String], start: usize, eof: bool) -> Option<usize> {
    if pattern.is_empty() {
        return Some(start.min(lines.len()));
    }
    if pattern.len() > lines.len() {
        return None;
    }
    let last = lines.len() - pattern.len();
    let eq_levels: [LineEq; 4] = [
        |a, b| a == b,
        |a, b| a.trim_end() == b.trim_end(),
        |a, b| a.trim() == b.trim(),
        |a, b| fold(a) == fold(b),
    ];
    for eq in eq_levels {
        let matches_at = |i: usize| {
            pattern
                .iter()
                .enumerate()
                .all(|(k, p)| eq(&lines[i + k], p))
        };
        if eof && last >= start && matches_at(last) {
            return Some(last);
        }
        if let Some(i) = (start..=last).find(|&i| matches_at(i)) {
            return Some(i);
        }
    }
    None
}

/// New content of a file after applying `chunks`; errors name the file and the hunk.
fn apply_chunks(shown: &str, original: &str, chunks: &[Chunk]) -> Result<String> {
    let crlf = original.contains("\r\n")
        && original.matches('\n').count() == original.matches("\r\n").count();
    let mut lines: Vec<String> = original.split('\n').map(str::to_string).collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    if crlf {
        for l in &mut lines {
            if l.ends_with('\r') {
                l.pop();
            }
        }
    }
    let total = chunks.len();
    let mut cursor = 0usize;
    let mut repl: Vec<(usize, usize, Vec<String>)> = Vec::new();
    for (k, ch) in chunks.iter().enumerate() {
        let which = format!("hunk {} of {total} (patch line {})", k + 1, ch.patch_line);
        for a in &ch.anchors {
            match seek(&lines, std::slice::from_ref(a), cursor, false) {
                Some(i) => cursor = i + 1,
                None => {
                    return Err(Error::InvalidArgument(format!(
                        "apply_patch: Update File: {shown}, {which}: the '@@ {a}' anchor line was not found (after line {cursor})"
                    )));
                }
            }
        }
        if ch.old.is_empty() {
            let at = if ch.eof || ch.anchors.is_empty() {
                lines.len()
            } else {
                cursor
            };
            repl.push((at, 0, ch.new.clone()));
            cursor = at;
            continue;
        }
        let mut old: &[String] = &ch.old;
        let mut found = seek(&lines, old, cursor, ch.eof);
        if found.is_none() && old.last().is_some_and(|s| s.is_empty()) {
            // A trailing empty line often stands for the file's final newline.
            old = &old[..old.len() - 1];
            found = seek(&lines, old, cursor, ch.eof);
        }
        match found {
            Some(i) => {
                // Context lines keep the file's own text (they may have matched loosely);
                // hunk lines past the matched region (the dropped trailing empty line) vanish.
                let region = &lines[i..i + old.len()];
                let mut at = 0usize;
                let mut new = Vec::with_capacity(ch.new.len());
                for (kind, text) in &ch.script {
                    match kind {
                        b' ' => {
                            if let Some(orig) = region.get(at) {
                                new.push(orig.clone());
                            }
                            at += 1;
                        }
                        b'-' => at += 1,
                        _ => new.push(text.clone()),
                    }
                }
                repl.push((i, old.len(), new));
                cursor = i + old.len();
            }
            None => {
                let shown_old: String = ch
                    .old
                    .iter()
                    .take(12)
                    .map(|l| format!("\n  |{l}"))
                    .collect();
                let more = if ch.old.len() > 12 {
                    format!("\n  ... ({} lines in all)", ch.old.len())
                } else {
                    String::new()
                };
                return Err(Error::InvalidArgument(format!(
                    "apply_patch: Update File: {shown}, {which}: these lines were not found{} (searched from line {}; re-read the file and retry):{shown_old}{more}",
                    if ch.eof {
                        " at the end of the file"
                    } else {
                        ""
                    },
                    cursor + 1
                )));
            }
        }
    }
    repl.sort_by_key(|r| r.0);
    for (start, len, new) in repl.into_iter().rev() {
        let end = (start + len).min(lines.len());
        lines.splice(start..end, new);
    }
    let eol = if crlf { "\r\n" } else { "\n" };
    let mut out = lines.join(eol);
    out.push_str(eol);
    Ok(out)
}

/// The staged state of the files a patch touches: `None` = deleted.
struct Stage<'a> {
    jail: &'a Jail,
    files: BTreeMap<PathBuf, Option<Vec<u8>>>,
    /// Files as found on disk before the patch (`None` = absent), for rollback.
    originals: BTreeMap<PathBuf, Option<Vec<u8>>>,
}

impl Stage<'_> {
    fn read(&mut self, path: &PathBuf, shown: &str) -> Result<Option<Vec<u8>>> {
        if let Some(v) = self.files.get(path) {
            return Ok(v.clone());
        }
        let disk = match fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => {
                return Err(Error::InvalidArgument(format!(
                    "apply_patch: {shown} is a directory, not a file"
                )));
            }
            Ok(_) => Some(fs::read(path).ctx(|| format!("apply_patch: reading {shown}"))?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Error::io(format!("apply_patch: reading {shown}"), e)),
        };
        self.originals
            .entry(path.clone())
            .or_insert_with(|| disk.clone());
        Ok(disk)
    }

    fn set(&mut self, path: PathBuf, shown: &str, v: Option<Vec<u8>>) -> Result<()> {
        if !self.originals.contains_key(&path) {
            self.read(&path, shown)?;
        }
        self.files.insert(path, v);
        Ok(())
    }
}

/// Apply a patch in Codex's format (see the module doc) to files inside the project root.
/// Returns `Success. Updated the following files:` then one `A|M|D path` line per file
/// (a move shows `M new (moved from old)`).
///
/// Errors: [`Error::InvalidArgument`] for a malformed patch (with its line number), a file
/// to update or delete that does not exist, non-UTF-8 text to update, or a hunk that does
/// not match (naming the file, the hunk number and its patch line, and the lines sought);
/// [`Error::PathOutsideRoot`] for any path outside; [`Error::Io`] when writing fails (files
/// already written are restored first). On any error nothing is left changed.
pub fn apply_patch(ctx: &ToolCtx, a: &ApplyPatchArgs) -> Result<String> {
    let jail = ctx.jail();
    let ops = parse(&a.input)?;
    if ops.is_empty() {
        return Err(Error::InvalidArgument(
            "apply_patch: the patch contains no file operations".into(),
        ));
    }
    let mut stage = Stage {
        jail,
        files: BTreeMap::new(),
        originals: BTreeMap::new(),
    };
    let mut summary: Vec<String> = Vec::new();
    for op in &ops {
        match op {
            Op::Add { path, contents } => {
                let p = jail.resolve_for_write(path)?;
                let shown = jail.display(&p);
                stage.set(p, &shown, Some(contents.clone().into_bytes()))?;
                summary.push(format!("A {shown}"));
            }
            Op::Delete { path } => {
                let p = jail.resolve_for_write(path)?;
                let shown = jail.display(&p);
                if stage.read(&p, &shown)?.is_none() {
                    return Err(Error::InvalidArgument(format!(
                        "apply_patch: Delete File: {shown} does not exist"
                    )));
                }
                stage.set(p, &shown, None)?;
                summary.push(format!("D {shown}"));
            }
            Op::Update {
                path,
                move_to,
                chunks,
            } => {
                let p = jail.resolve_for_write(path)?;
                let shown = jail.display(&p);
                let Some(bytes) = stage.read(&p, &shown)? else {
                    return Err(Error::InvalidArgument(format!(
                        "apply_patch: Update File: {shown} does not exist"
                    )));
                };
                let text = String::from_utf8(bytes).map_err(|_| {
                    Error::InvalidArgument(format!(
                        "apply_patch: Update File: {shown} is not UTF-8 text; use write_file"
                    ))
                })?;
                let new = apply_chunks(&shown, &text, chunks)?;
                match move_to {
                    Some(dest) => {
                        let d = jail.resolve_for_write(dest)?;
                        let dshown = jail.display(&d);
                        if d != p {
                            stage.set(p, &shown, None)?;
                        }
                        stage.set(d, &dshown, Some(new.into_bytes()))?;
                        summary.push(format!("M {dshown} (moved from {shown})"));
                    }
                    None => {
                        stage.set(p, &shown, Some(new.into_bytes()))?;
                        summary.push(format!("M {shown}"));
                    }
                }
            }
        }
    }
    commit(&stage)?;
    let mut out = String::from("Success. Updated the following files:\n");
    out.push_str(&summary.join("\n"));
    if let Some(n) = crate::fs::runs_later_note(jail, stage.files.keys().map(|p| p.as_path())) {
        out.push('\n');
        out.push_str(&n);
    }
    Ok(codex_free_core::paging::enforce_ceiling(
        out,
        ctx.max_output_bytes(),
    ))
}

/// Write the staged files (writes before deletes), restoring what was done on failure.
fn commit(stage: &Stage<'_>) -> Result<()> {
    let jail = stage.jail;
    let mut done: Vec<&PathBuf> = Vec::new();
    let writes = stage.files.iter().filter(|(_, v)| v.is_some());
    let deletes = stage.files.iter().filter(|(_, v)| v.is_none());
    for (path, v) in writes.chain(deletes) {
        let shown = jail.display(path);
        let r = match v {
            Some(bytes) => atomic_write(jail, path, bytes).map(|_| ()),
            None => match fs::remove_file(path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(Error::io(format!("apply_patch: deleting {shown}"), e)),
            },
        };
        if let Err(e) = r {
            let mut failed_restores = Vec::new();
            for p in done.into_iter().rev() {
                let restored = match stage.originals.get(p).cloned().flatten() {
                    Some(orig) => atomic_write(jail, p, &orig).map(|_| ()),
                    None => fs::remove_file(p).map_err(|e| Error::io("removing", e)),
                };
                if restored.is_err() {
                    failed_restores.push(jail.display(p));
                }
            }
            let note = if failed_restores.is_empty() {
                "files changed before the failure were restored".to_string()
            } else {
                format!("could not restore: {}", failed_restores.join(", "))
            };
            return Err(Error::io(
                format!("apply_patch: writing {shown} failed ({note})"),
                match e {
                    Error::Io { source, .. } => source,
                    other => std::io::Error::other(other.to_string()),
                },
            ));
        }
        done.push(path);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use codex_free_core::config::Config;
    use std::path::Path;

    fn ctx(root: &Path) -> ToolCtx {
        ToolCtx::open(
            root,
            std::sync::Arc::new(codex_free_core::jail::Protected::none()),
            Config::default(),
            root.join(".home"),
        )
        .unwrap()
    }

    fn run(root: &Path, body: &str) -> Result<String> {
        apply_patch(
            &ctx(root),
            &ApplyPatchArgs {
                input: format!("*** Begin Patch\n{body}\n*** End Patch\n"),
            },
        )
    }

    #[test]
    fn parses_all_operations() {
        let ops = parse(
            "*** Begin Patch\n*** Add File: a.txt\n+x\n+y\n*** Delete File: b.txt\n*** Update File: c.py\n*** Move to: d.py\n@@ def f():\n-    pass\n+    return 1\n*** End of File\n*** End Patch",
        )
        .unwrap();
        assert_eq!(ops.len(), 3);
        assert_eq!(
            ops[0],
            Op::Add {
                path: "a.txt".into(),
                contents: "x\ny\n".into()
            }
        );
        assert_eq!(
            ops[1],
            Op::Delete {
                path: "b.txt".into()
            }
        );
        let Op::Update {
            path,
            move_to,
            chunks,
        } = &ops[2]
        else {
            panic!()
        };
        assert_eq!((path.as_str(), move_to.as_deref()), ("c.py", Some("d.py")));
        assert_eq!(chunks[0].anchors, vec!["def f():".to_string()]);
        assert_eq!(chunks[0].old, vec!["    pass".to_string()]);
        assert_eq!(chunks[0].new, vec!["    return 1".to_string()]);
        assert!(chunks[0].eof);
    }

    #[test]
    fn parse_errors_name_the_line() {
        let e = parse("bad").unwrap_err().to_string();
        assert!(e.contains("first line must be '*** Begin Patch'"), "{e}");
        let e = parse("*** Begin Patch\n*** Add File: x\n+y")
            .unwrap_err()
            .to_string();
        assert!(e.contains("last line must be '*** End Patch'"), "{e}");
        let e = parse("*** Begin Patch\n*** Frobnicate: x\n*** End Patch")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("Frobnicate"), "{e}");
        let e = parse("*** Begin Patch\n*** Update File: x\n*** End Patch")
            .unwrap_err()
            .to_string();
        assert!(e.contains("has no hunks"), "{e}");
        let e = parse("*** Begin Patch\n*** Update File: x\n@@\nbad line\n*** End Patch")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 4") && e.contains("unexpected line"), "{e}");
        // Heredoc wrapper is accepted.
        assert_eq!(
            parse("<<'EOF'\n*** Begin Patch\n*** Delete File: x\n*** End Patch\nEOF")
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn update_multiple_hunks_anchors_and_moves() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("m.txt"), "foo\nbar\nbaz\nqux\n").unwrap();
        let out = run(
            d.path(),
            "*** Update File: m.txt\n@@\n foo\n-bar\n+BAR\n@@\n baz\n-qux\n+QUX",
        )
        .unwrap();
        assert_eq!(out, "Success. Updated the following files:\nM m.txt");
        assert_eq!(
            fs::read_to_string(d.path().join("m.txt")).unwrap(),
            "foo\nBAR\nbaz\nQUX\n"
        );
        fs::write(
            d.path().join("c.py"),
            "class A:\n    def f():\n        pass\nclass B:\n    def f():\n        pass\n",
        )
        .unwrap();
        run(d.path(), "*** Update File: c.py\n*** Move to: sub/c2.py\n@@ class B:\n@@     def f():\n-        pass\n+        return 2").unwrap();
        assert!(!d.path().join("c.py").exists());
        assert_eq!(
            fs::read_to_string(d.path().join("sub/c2.py")).unwrap(),
            "class A:\n    def f():\n        pass\nclass B:\n    def f():\n        return 2\n"
        );
    }

    #[test]
    fn fuzzy_levels_eof_and_crlf() {
        let d = tempfile::tempdir().unwrap();
        fs::write(
            d.path().join("w.txt"),
            "a  \n\u{201C}quoted\u{201D} \u{2014} x\nend\nend\n",
        )
        .unwrap();
        run(
            d.path(),
            "*** Update File: w.txt\n@@\n a\n-\"quoted\" - x\n+plain\n",
        )
        .unwrap();
        assert_eq!(
            fs::read_to_string(d.path().join("w.txt")).unwrap(),
            "a  \nplain\nend\nend\n"
        );
        run(
            d.path(),
            "*** Update File: w.txt\n@@\n-end\n+END\n*** End of File",
        )
        .unwrap();
        assert_eq!(
            fs::read_to_string(d.path().join("w.txt")).unwrap(),
            "a  \nplain\nend\nEND\n"
        );
        fs::write(d.path().join("crlf.txt"), "one\r\ntwo\r\n").unwrap();
        run(
            d.path(),
            "*** Update File: crlf.txt\n@@\n one\n-two\n+TWO\n+three",
        )
        .unwrap();
        assert_eq!(
            fs::read(d.path().join("crlf.txt")).unwrap(),
            b"one\r\nTWO\r\nthree\r\n"
        );
        fs::write(d.path().join("nonl.txt"), "x").unwrap();
        run(d.path(), "*** Update File: nonl.txt\n@@\n-x\n+y").unwrap();
        assert_eq!(
            fs::read_to_string(d.path().join("nonl.txt")).unwrap(),
            "y\n"
        );
    }

    #[test]
    fn failure_changes_nothing_and_names_file_and_hunk() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("keep.txt"), "1\n2\n3\n").unwrap();
        fs::write(d.path().join("del.txt"), "bye\n").unwrap();
        let e = run(
            d.path(),
            "*** Add File: new.txt\n+hello\n*** Delete File: del.txt\n*** Update File: keep.txt\n@@\n-1\n+one\n@@\n-nope\n+NOPE",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("keep.txt") && e.contains("hunk 2 of 2") && e.contains("|nope"),
            "{e}"
        );
        assert!(!d.path().join("new.txt").exists());
        assert!(d.path().join("del.txt").exists());
        assert_eq!(
            fs::read_to_string(d.path().join("keep.txt")).unwrap(),
            "1\n2\n3\n"
        );
        let e = run(d.path(), "*** Delete File: missing.txt")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("missing.txt") && e.contains("does not exist"),
            "{e}"
        );
        let e = run(d.path(), "*** Update File: keep.txt\n@@ fn nowhere\n-1\n+x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("'@@ fn nowhere' anchor"), "{e}");
    }

    #[test]
    fn add_then_update_same_file_in_one_patch() {
        let d = tempfile::tempdir().unwrap();
        let out = run(
            d.path(),
            "*** Add File: n.txt\n+a\n+b\n*** Update File: n.txt\n@@\n a\n-b\n+c",
        )
        .unwrap();
        assert_eq!(
            out,
            "Success. Updated the following files:\nA n.txt\nM n.txt"
        );
        assert_eq!(
            fs::read_to_string(d.path().join("n.txt")).unwrap(),
            "a\nc\n"
        );
    }

    #[test]
    fn paths_are_jailed() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("proj");
        fs::create_dir(&root).unwrap();
        fs::write(root.join("f.txt"), "x\n").unwrap();
        for body in [
            "*** Add File: ../evil.txt\n+x",
            "*** Delete File: /etc/passwd",
            "*** Update File: f.txt\n*** Move to: ../out.txt\n@@\n-x\n+y",
        ] {
            let e = run(&root, body).unwrap_err();
            assert_eq!(e.code(), "path_outside_root", "{body}: {e}");
        }
        assert!(!d.path().join("evil.txt").exists() && !d.path().join("out.txt").exists());
        assert_eq!(fs::read_to_string(root.join("f.txt")).unwrap(), "x\n");
    }
}
