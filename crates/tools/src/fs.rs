//! File tools: `read_file`, `write_file`, `list_directory`, `tree`, `glob`.
//!
//! `read_file` returns the file's raw bytes (no line-number prefixes), so the pages of a file
//! concatenated with their footers removed are the file, byte for byte (CRLF and a missing
//! final newline included). It streams: it skips to the requested line with `memchr` over a
//! 64 KiB buffer, keeps at most one page in memory, then counts the remaining lines for the
//! footer without storing them. Decisions for awkward files:
//! - empty file: the text `(empty file: 0 bytes)`;
//! - binary file (a NUL byte in the first 8 KiB, the rule git and ripgrep use): refused with
//!   [`Error::InvalidArgument`] naming the size;
//! - invalid UTF-8 elsewhere: decoded lossily (U+FFFD) and a `(note: ...)` line says so;
//! - a line longer than the page: cut at the byte cap on a UTF-8 boundary, with a byte
//!   footer (`offset=<line> byte_offset=<n>`) that reaches every remaining byte.
//!
//! Walking tools (`tree`, `glob`) use ripgrep's `ignore` crate: `.gitignore`/`.ignore` rules
//! apply (also outside a git repository), hidden files are listed, the `.git` directory is
//! skipped. `list_directory` lists everything in one directory (like `ls -A`).
//!
//! Invariant: every path goes through [`Jail`]; every result fits `ToolCtx::max_output_bytes`;
//! writes are temp file + fsync + rename inside the checked directory.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;

use super::ToolCtx;
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::error::IoContext;
use codex_free_core::jail::{Jail, display_rel};
use codex_free_core::paging::{self as budget, append_footer, entries_footer, page_budget};

/// Read buffer size for streaming reads (bytes).
const READ_BUF: usize = 64 * 1024;
/// Bytes inspected for a NUL byte to call a file binary (git's and ripgrep's heuristic).
const BINARY_SNIFF: usize = 8 * 1024;
/// Default `tree` depth when the call gives none.
pub const DEFAULT_TREE_DEPTH: usize = 3;
/// Largest `tree` depth accepted.
pub const MAX_TREE_DEPTH: usize = 64;

/// Arguments of `read_file`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ReadFileArgs {
    /// File to read, relative to the project root (or absolute inside it).
    pub path: String,
    /// 0-based line to start at (default 0). A cut page's last line names the value to continue with.
    #[serde(default)]
    pub offset: Option<u64>,
    /// Maximum lines to return (default and ceiling: the `output.maxFileLines` config value, 1000 by default).
    #[serde(default)]
    pub limit: Option<usize>,
    /// 0-based byte position inside the line `offset` to start at; only used to continue a line that was cut by the byte cap (default 0).
    #[serde(default)]
    pub byte_offset: Option<u64>,
}

/// Arguments of `write_file`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct WriteFileArgs {
    /// File to create or replace, relative to the project root (or absolute inside it). Missing parent directories are created.
    pub path: String,
    /// The complete new content of the file (UTF-8 text).
    pub content: String,
}

/// Arguments of `list_directory`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ListDirectoryArgs {
    /// Directory to list, relative to the project root (default: the root).
    #[serde(default)]
    pub path: Option<String>,
    /// 0-based index of the first entry to return (default 0), as named by a cut page's last line.
    #[serde(default)]
    pub offset: Option<usize>,
}

/// Arguments of `tree`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct TreeArgs {
    /// Directory at the top of the tree, relative to the project root (default: the root).
    #[serde(default)]
    pub path: Option<String>,
    /// How many levels below `path` to show (default 3, at most 64).
    #[serde(default)]
    pub depth: Option<usize>,
    /// 0-based index of the first node to return (default 0), as named by a cut page's last line.
    #[serde(default)]
    pub offset: Option<usize>,
}

/// Arguments of `glob`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct GlobArgs {
    /// Glob matched against file paths relative to `path`, e.g. `**/*.rs` or `src/*.toml`. `*` does not cross `/`; `**` does.
    pub pattern: String,
    /// Directory to search under, relative to the project root (default: the root).
    #[serde(default)]
    pub path: Option<String>,
    /// 0-based index of the first match to return (default 0), as named by a cut page's last line.
    #[serde(default)]
    pub offset: Option<usize>,
}

// ---------------------------------------------------------------------------------------
// read_file
// ---------------------------------------------------------------------------------------

/// How a bounded line read ended.
#[derive(Debug, PartialEq, Eq)]
enum LineEnd {
    /// A `\n` was read (and appended).
    Newline,
    /// End of file before any newline.
    Eof,
    /// `max` bytes were appended without seeing a newline.
    Cut,
}

/// Append bytes of the current line to `out`, at most `max`, stopping after a `\n`.
fn read_line_bounded(
    r: &mut impl BufRead,
    out: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<(usize, LineEnd)> {
    let mut taken = 0usize;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok((taken, LineEnd::Eof));
        }
        if taken >= max {
            return Ok((taken, LineEnd::Cut));
        }
        let room = max - taken;
        let window = &buf[..buf.len().min(room)];
        if let Some(i) = memchr::memchr(b'\n', window) {
            out.extend_from_slice(&window[..=i]);
            r.consume(i + 1);
            return Ok((taken + i + 1, LineEnd::Newline));
        }
        let n = window.len();
        out.extend_from_slice(window);
        r.consume(n);
        taken += n;
    }
}

/// Consume bytes up to and including the next `\n` (or EOF); returns `(bytes consumed
/// before the newline, whether a newline was found)`.
fn skip_rest_of_line(r: &mut impl BufRead) -> std::io::Result<(u64, bool)> {
    let mut n = 0u64;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok((n, false));
        }
        if let Some(i) = memchr::memchr(b'\n', buf) {
            r.consume(i + 1);
            return Ok((n + i as u64, true));
        }
        let len = buf.len();
        n += len as u64;
        r.consume(len);
    }
}

/// Consume up to `n` bytes of the current line without consuming its newline. Returns the
/// bytes consumed (less than `n` when the line ends first).
fn skip_in_line(r: &mut impl BufRead, n: u64) -> std::io::Result<u64> {
    let mut done = 0u64;
    while done < n {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let want = (n - done).min(buf.len() as u64) as usize;
        if let Some(i) = memchr::memchr(b'\n', &buf[..want]) {
            r.consume(i);
            return Ok(done + i as u64);
        }
        r.consume(want);
        done += want as u64;
    }
    Ok(done)
}

/// Skip `lines` newlines; returns how many were skipped (fewer at end of file).
#[expect(
    clippy::expect_used,
    reason = "the value was checked or pushed just above in this function"
)]
fn skip_lines(r: &mut impl BufRead, lines: u64) -> std::io::Result<u64> {
    let mut skipped = 0u64;
    while skipped < lines {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let need = lines - skipped;
        let count = memchr::memchr_iter(b'\n', buf).count() as u64;
        if count < need {
            skipped += count;
            let len = buf.len();
            r.consume(len);
        } else {
            let pos = memchr::memchr_iter(b'\n', buf)
                .nth((need - 1) as usize)
                .expect("counted");
            r.consume(pos + 1);
            skipped += need;
        }
    }
    Ok(skipped)
}

/// Count the lines left from the reader's position: newlines, plus one if the file ends
/// with bytes after the last newline. Returns `(lines, bytes)`.
#[expect(
    clippy::expect_used,
    reason = "the value was checked or pushed just above in this function"
)]
fn count_rest(r: &mut impl BufRead) -> std::io::Result<(u64, u64)> {
    let mut lines = 0u64;
    let mut bytes = 0u64;
    let mut last = b'\n';
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        lines += memchr::memchr_iter(b'\n', buf).count() as u64;
        bytes += buf.len() as u64;
        last = *buf.last().expect("non-empty");
        let len = buf.len();
        r.consume(len);
    }
    if last != b'\n' {
        lines += 1;
    }
    Ok((lines, bytes))
}

/// The footer a `read_file` page ends with.
enum Footer {
    /// Line paging: follows the page's final newline.
    Lines(String),
    /// Byte paging inside one line: preceded by a separator newline.
    Bytes(String),
}

/// Return one page of a text file.
///
/// Page size: at most `limit` lines (default and ceiling `output.maxFileLines`) and at most
/// `min(output.maxFileBytes, ceiling - 512)` bytes. A page ends on a line boundary unless
/// its first line alone is larger than the byte budget, in which case that line is cut and
/// the footer names `offset` and `byte_offset` to continue. Footer formats: see
/// [`codex_free_core::paging`]. Line numbers in footers are 1-based, `offset` is 0-based.
///
/// Errors: [`Error::PathOutsideRoot`], [`Error::NotFound`]; [`Error::InvalidArgument`] for a
/// directory or other non-regular file, a binary file, `limit=0`, an `offset` past the last line, or a `byte_offset`
/// past the end of its line; [`Error::Io`].
pub fn read_file(ctx: &ToolCtx, a: &ReadFileArgs) -> Result<String> {
    let jail = ctx.jail();
    let path = jail.resolve(&a.path)?;
    let shown = jail.display(&path);
    let meta = fs::metadata(&path).ctx(|| format!("reading metadata of {shown}"))?;
    if meta.is_dir() {
        return Err(Error::InvalidArgument(format!(
            "path \"{}\" is a directory; use list_directory or tree",
            a.path
        )));
    }
    if !meta.is_file() {
        return Err(Error::InvalidArgument(format!(
            "path \"{}\" is not a regular file (a device, socket or pipe); read_file reads files only",
            a.path
        )));
    }
    let out_cfg = &ctx.config.output;
    let limit = a
        .limit
        .unwrap_or(out_cfg.max_file_lines)
        .min(out_cfg.max_file_lines);
    if limit == 0 {
        return Err(Error::InvalidArgument("limit must be at least 1".into()));
    }
    let budget = page_budget(out_cfg.max_file_bytes, ctx.max_output_bytes());
    let offset = a.offset.unwrap_or(0);
    let byte_offset = a.byte_offset.unwrap_or(0);

    let file = File::open(&path).ctx(|| format!("opening {shown}"))?;
    let size = meta.len();
    let mut r = BufReader::with_capacity(READ_BUF, file);

    // Binary sniff on the first 8 KiB (without consuming).
    {
        let head = r.fill_buf().ctx(|| format!("reading {shown}"))?;
        let head = &head[..head.len().min(BINARY_SNIFF)];
        if memchr::memchr(0, head).is_some() {
            return Err(Error::InvalidArgument(format!(
                "{shown} looks binary (a NUL byte in its first 8 KiB; {size} bytes); read_file returns text only"
            )));
        }
    }
    if size == 0 && offset == 0 && byte_offset == 0 {
        return Ok("(empty file: 0 bytes)".into());
    }

    let skipped = skip_lines(&mut r, offset).ctx(|| format!("reading {shown}"))?;
    let at_eof = r.fill_buf().ctx(|| format!("reading {shown}"))?.is_empty();
    if skipped < offset || at_eof {
        // `skipped` newlines exist before EOF; the file has `skipped` lines, plus one if it
        // does not end with a newline (in which case skip_lines stopped at EOF mid-line).
        let total = if skipped < offset {
            skipped + u64::from(!ends_with_newline(&path)?)
        } else {
            skipped
        };
        return Err(Error::InvalidArgument(format!(
            "offset={offset} is past the end of {shown}, which has {total} lines ({})",
            codex_free_core::paging::valid_offsets(total)
        )));
    }

    // Position inside the first line (continuing a line cut by the byte cap).
    if byte_offset > 0 {
        let skipped_bytes = skip_in_line(&mut r, byte_offset).ctx(|| format!("reading {shown}"))?;
        if skipped_bytes < byte_offset {
            return Err(Error::InvalidArgument(format!(
                "byte_offset={byte_offset} is past the end of line {} of {shown}, which is {skipped_bytes} bytes long",
                offset + 1
            )));
        }
    }

    let mut content: Vec<u8> = Vec::with_capacity(budget.min(size as usize + 1));
    let mut lines_shown = 0u64;
    let mut notes: Vec<String> = Vec::new();
    let mut footer: Option<Footer> = None;
    let first_line = offset + 1;
    let mut reached_eof = false;
    while (lines_shown as usize) < limit {
        let start_len = content.len();
        let room = budget.saturating_sub(start_len);
        let (n, end) =
            read_line_bounded(&mut r, &mut content, room).ctx(|| format!("reading {shown}"))?;
        match end {
            LineEnd::Newline => lines_shown += 1,
            LineEnd::Eof => {
                if n > 0 {
                    lines_shown += 1;
                }
                reached_eof = true;
                break;
            }
            LineEnd::Cut if lines_shown == 0 => {
                // The first line alone overflows the page: cut it by bytes, on a UTF-8
                // boundary, and name the byte position to continue from.
                let mut keep = budget::utf8_complete_prefix(&content);
                if keep == 0 {
                    keep = content.len();
                }
                let (rest, _) = skip_rest_of_line(&mut r).ctx(|| format!("reading {shown}"))?;
                let line_len = byte_offset + n as u64 + rest;
                let end_byte = byte_offset + keep as u64;
                content.truncate(keep);
                footer = Some(Footer::Bytes(budget::bytes_footer(
                    byte_offset,
                    end_byte,
                    line_len,
                    offset,
                )));
                break;
            }
            LineEnd::Cut => {
                // A later line does not fit: end the page before it.
                content.truncate(start_len);
                break;
            }
        }
    }
    if footer.is_none() && !reached_eof {
        // Page ended on the line cap or before a line that did not fit: count the rest.
        let at_end = r.fill_buf().ctx(|| format!("reading {shown}"))?.is_empty();
        if !at_end {
            let (rest_lines, _) = count_rest(&mut r).ctx(|| format!("reading {shown}"))?;
            let last = offset + lines_shown;
            let total = last + rest_lines;
            footer = Some(Footer::Lines(budget::lines_footer(
                first_line, last, total, last,
            )));
        }
    }
    let text = match String::from_utf8(content) {
        Ok(s) => s,
        Err(e) => {
            notes.push("(note: this part of the file is not valid UTF-8; invalid bytes are shown as U+FFFD, so it is not byte-exact)".into());
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        }
    };
    let mut out = text;
    for n in &notes {
        append_footer(&mut out, n);
    }
    match footer {
        Some(Footer::Lines(f)) => append_footer(&mut out, &f),
        Some(Footer::Bytes(f)) => budget::append_byte_footer(&mut out, &f),
        None => {}
    }
    Ok(budget::enforce_ceiling(out, ctx.max_output_bytes()))
}

fn ends_with_newline(path: &Path) -> Result<bool> {
    use std::io::{Seek, SeekFrom};
    let mut f = File::open(path).ctx(|| format!("opening {}", path.display()))?;
    let len = f
        .metadata()
        .ctx(|| format!("reading {}", path.display()))?
        .len();
    if len == 0 {
        return Ok(true);
    }
    f.seek(SeekFrom::End(-1))
        .ctx(|| format!("reading {}", path.display()))?;
    let mut b = [0u8; 1];
    f.read_exact(&mut b)
        .ctx(|| format!("reading {}", path.display()))?;
    Ok(b[0] == b'\n')
}

// ---------------------------------------------------------------------------------------
// write_file
// ---------------------------------------------------------------------------------------

/// Write `bytes` to the jailed, already-resolved `target` atomically: create missing parent
/// directories, re-check the parent is inside the root and not protected, write a temp file
/// (`O_EXCL`) in the same directory, fsync, rename over the target, fsync the directory.
/// A replaced file keeps its permissions; a new one gets `0666` minus the process umask
/// (`0644` under the usual `022`), as `open(2)` would give it — not the temp file's `0600`.
/// Returns whether the file existed before.
pub(crate) fn atomic_write(jail: &Jail, target: &Path, bytes: &[u8]) -> Result<bool> {
    let shown = jail.display(target);
    let parent = target
        .parent()
        .ok_or_else(|| Error::InvalidArgument(format!("{shown} has no parent directory")))?;
    fs::create_dir_all(parent).ctx(|| format!("creating directories for {shown}"))?;
    let parent_canon = parent
        .canonicalize()
        .ctx(|| format!("resolving the directory of {shown}"))?;
    if !parent_canon.starts_with(jail.root()) {
        return Err(Error::PathOutsideRoot(format!(
            "path \"{shown}\" is outside the project root {}: its directory resolves to {}",
            jail.root().display(),
            parent_canon.display()
        )));
    }
    let name = target
        .file_name()
        .ok_or_else(|| Error::InvalidArgument(format!("{shown} has no file name")))?;
    let final_path = parent_canon.join(name);
    if jail.is_protected(&final_path) {
        // The directory was swapped for a link into a protected one after the check.
        return Err(Error::PathProtected(format!(
            "path \"{shown}\" is protected: its directory now resolves to {}",
            parent_canon.display()
        )));
    }
    let existing = fs::symlink_metadata(&final_path).ok();
    if let Some(m) = &existing
        && m.is_dir()
    {
        return Err(Error::InvalidArgument(format!(
            "{shown} is a directory; cannot write a file there"
        )));
    }
    // In the repository's `.git` where there is one (never in `git status`), named by this
    // process so a killed write's leftover is recognised and removed later.
    let tmp_dir = crate::tmpfiles::temp_dir_for(&parent_canon, jail.root());
    let tmp_prefix = crate::tmpfiles::prefix();
    let mut builder = tempfile::Builder::new();
    builder.prefix(&tmp_prefix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Passed to open(2), which applies the umask, like any newly created file.
        builder.permissions(fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder
        .tempfile_in(&tmp_dir)
        .ctx(|| format!("creating a temp file beside {shown}"))?;
    if let Some(m) = &existing
        && m.is_file()
    {
        let _ = tmp.as_file().set_permissions(m.permissions());
    }
    tmp.write_all(bytes).ctx(|| format!("writing {shown}"))?;
    tmp.as_file()
        .sync_all()
        .ctx(|| format!("syncing {shown}"))?;
    tmp.persist(&final_path)
        .map_err(|e| Error::io(format!("renaming the temp file over {shown}"), e.error))?;
    if let Ok(d) = File::open(&parent_canon) {
        let _ = d.sync_all();
    }
    Ok(existing.is_some())
}

/// Create or replace a file with `content`, atomically (see [`atomic_write`]). Missing
/// parent directories inside the root are created. Returns e.g.
/// `wrote 120 bytes to src/new.rs (created)`.
///
/// Errors: [`Error::PathOutsideRoot`] (including a symlink at or above the target pointing
/// outside, or a dangling symlink), [`Error::InvalidArgument`] when the target is a
/// directory or the root, [`Error::Io`].
pub fn write_file(ctx: &ToolCtx, a: &WriteFileArgs) -> Result<String> {
    let jail = ctx.jail();
    let target = jail.resolve_for_write(&a.path)?;
    let existed = atomic_write(jail, &target, a.content.as_bytes())?;
    let shown = jail.display(&target);
    let mut out = format!(
        "wrote {} bytes to {} ({})",
        a.content.len(),
        shown,
        if existed { "replaced" } else { "created" }
    );
    if let Some(n) = runs_later_note(jail, [target.as_path()]) {
        out.push('\n');
        out.push_str(&n);
    }
    Ok(out)
}

/// The flag line ([`codex_free_core::runs_later::note`]) for the written `paths` that
/// another program runs later (task runners, CI, editor tasks, package scripts), or `None`.
pub fn runs_later_note<'a>(
    jail: &codex_free_core::jail::Jail,
    paths: impl IntoIterator<Item = &'a Path>,
) -> Option<String> {
    let mut flagged: Vec<(String, &'static str)> = Vec::new();
    for p in paths {
        if let Ok(rel) = p.strip_prefix(jail.root())
            && let Some(what) = codex_free_core::runs_later::runs_later(rel)
        {
            let shown = jail.display(p);
            if !flagged.iter().any(|(s, _)| *s == shown) {
                flagged.push((shown, what));
            }
        }
    }
    codex_free_core::runs_later::note(&flagged)
}

// ---------------------------------------------------------------------------------------
// Entry paging shared by list_directory, tree, glob
// ---------------------------------------------------------------------------------------

/// Render `items[offset..]` one per line until `max_items` or the byte budget, then add the
/// entries footer if anything is left. `render(i, item, first_on_page)` gives the line.
fn page_items<T>(
    ctx: &ToolCtx,
    items: &[T],
    offset: usize,
    max_items: usize,
    noun: &str,
    empty: &str,
    mut render: impl FnMut(usize, &T, bool) -> String,
) -> Result<String> {
    let total = items.len();
    if total == 0 {
        if offset > 0 {
            return Err(Error::InvalidArgument(format!(
                "offset={offset} is past the end (there are no {noun})"
            )));
        }
        return Ok(empty.to_string());
    }
    if offset >= total {
        return Err(Error::InvalidArgument(format!(
            "offset={offset} is past the end: there are {total} {noun} ({})",
            codex_free_core::paging::valid_offsets(total as u64)
        )));
    }
    let budget = page_budget(usize::MAX, ctx.max_output_bytes());
    let mut out = String::new();
    let mut shown = 0usize;
    for (i, item) in items.iter().enumerate().skip(offset) {
        if shown >= max_items {
            break;
        }
        let mut line = render(i, item, shown == 0);
        line.push('\n');
        if out.len() + line.len() > budget {
            if shown == 0 {
                // A single absurdly long name: cut it rather than return nothing.
                let k = budget::floor_char_boundary(&line, budget.saturating_sub(1));
                out.push_str(&line[..k]);
                out.push('\n');
                shown = 1;
            }
            break;
        }
        out.push_str(&line);
        shown += 1;
    }
    let next = offset + shown;
    if next < total {
        append_footer(
            &mut out,
            &entries_footer(noun, offset + 1, next, total, next),
        );
    } else if out.ends_with('\n') {
        out.pop();
    }
    Ok(budget::enforce_ceiling(out, ctx.max_output_bytes()))
}

// ---------------------------------------------------------------------------------------
// list_directory
// ---------------------------------------------------------------------------------------

/// List one directory: every entry (hidden ones too, protected directories left out),
/// sorted by name (byte order), one per line, directories with a trailing `/`, symlinks
/// with a trailing `@`. At most
/// `output.maxEntries` per page; the footer names the `offset` to continue. An empty
/// directory gives `(empty directory)`.
///
/// Errors: [`Error::PathOutsideRoot`], [`Error::NotFound`], [`Error::InvalidArgument`] (not a
/// directory, `offset` past the end), [`Error::Io`].
pub fn list_directory(ctx: &ToolCtx, a: &ListDirectoryArgs) -> Result<String> {
    let jail = ctx.jail();
    let dir = jail.resolve(a.path.as_deref().unwrap_or("."))?;
    let shown = jail.display(&dir);
    if !dir.is_dir() {
        return Err(Error::InvalidArgument(format!(
            "{shown} is not a directory; use read_file"
        )));
    }
    let mut entries: Vec<(Vec<u8>, String)> = Vec::new();
    let prune = jail.protected_inside(&dir);
    for e in fs::read_dir(&dir).ctx(|| format!("listing {shown}"))? {
        let e = e.ctx(|| format!("listing {shown}"))?;
        if prune.iter().any(|p| e.path().starts_with(p)) {
            continue;
        }
        let name = e.file_name();
        let ft = e.file_type().ctx(|| format!("listing {shown}"))?;
        let mut label = name.to_string_lossy().into_owned();
        if ft.is_dir() {
            label.push('/');
        } else if ft.is_symlink() {
            label.push('@');
        }
        entries.push((name.as_encoded_bytes().to_vec(), label));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    page_items(
        ctx,
        &entries,
        a.offset.unwrap_or(0),
        ctx.config.output.max_entries,
        "entries",
        "(empty directory)",
        |_, e, _| e.1.clone(),
    )
}

// ---------------------------------------------------------------------------------------
// tree / glob walking
// ---------------------------------------------------------------------------------------

/// A walker over `base` (resolved by `jail`) with the project's rules: gitignore-style
/// files respected (even without a `.git`), hidden files included, `.git` skipped, symlinks
/// not followed, and protected directories inside the root (e.g. a state home in a project
/// that is the user's home) never entered nor listed.
pub(crate) fn walker(jail: &Jail, base: &Path) -> ignore::WalkBuilder {
    let prune = jail.protected_inside(base);
    let mut b = ignore::WalkBuilder::new(base);
    b.hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(move |e| {
            e.file_name() != ".git" && !prune.iter().any(|p| e.path().starts_with(p))
        });
    b
}

struct Node {
    depth: usize,
    name: String,
    rel: String,
    is_dir: bool,
}

/// Show the directory tree under `path` to `depth` levels (default 3), sorted by name,
/// indented two spaces per level, directories with a trailing `/`. Ignore rules as
/// [`walker`]. At most `output.maxTreeNodes` nodes per page; the footer
/// `(showing nodes a-b of n — call again with offset=b for the rest)` continues. On a
/// continued page the first node shows its full path so the page stands alone.
///
/// Errors: as [`list_directory`]; [`Error::InvalidArgument`] for `depth` 0 or above 64.
pub fn tree(ctx: &ToolCtx, a: &TreeArgs) -> Result<String> {
    let jail = ctx.jail();
    let base = jail.resolve(a.path.as_deref().unwrap_or("."))?;
    let shown = jail.display(&base);
    if !base.is_dir() {
        return Err(Error::InvalidArgument(format!(
            "{shown} is not a directory; use read_file"
        )));
    }
    let depth = a.depth.unwrap_or(DEFAULT_TREE_DEPTH);
    if depth == 0 || depth > MAX_TREE_DEPTH {
        return Err(Error::InvalidArgument(format!(
            "depth={depth} is out of range (allowed 1..={MAX_TREE_DEPTH})"
        )));
    }
    let mut b = walker(jail, &base);
    b.max_depth(Some(depth)).sort_by_file_name(|x, y| x.cmp(y));
    let mut nodes = Vec::new();
    for e in b.build() {
        let e = match e {
            Ok(e) => e,
            Err(err) => {
                tracing::debug!(%err, "tree: skipping unreadable entry");
                continue;
            }
        };
        if e.depth() == 0 {
            continue;
        }
        let is_dir = e.file_type().is_some_and(|t| t.is_dir());
        nodes.push(Node {
            depth: e.depth(),
            name: e.file_name().to_string_lossy().into_owned(),
            rel: display_rel(jail.root(), e.path()),
            is_dir,
        });
    }
    page_items(
        ctx,
        &nodes,
        a.offset.unwrap_or(0),
        ctx.config.output.max_tree_nodes,
        "nodes",
        "(empty directory)",
        |i, n, first| {
            let indent = "  ".repeat(n.depth - 1);
            let label = if first && i > 0 { &n.rel } else { &n.name };
            format!("{indent}{label}{}", if n.is_dir { "/" } else { "" })
        },
    )
}

/// Files under `path` whose path relative to `path` matches the glob `pattern` (globset
/// syntax; `*` stays within one path component, `**` spans any number), listed relative to
/// the project root, sorted, one per line. Directories are not listed. Ignore rules as
/// [`walker`]; the walk is parallel. At most `output.maxEntries` per page.
///
/// Errors: [`Error::InvalidArgument`] for a bad or absolute pattern; else as
/// [`list_directory`].
pub fn glob(ctx: &ToolCtx, a: &GlobArgs) -> Result<String> {
    let jail = ctx.jail();
    let base = jail.resolve(a.path.as_deref().unwrap_or("."))?;
    let shown = jail.display(&base);
    if !base.is_dir() {
        return Err(Error::InvalidArgument(format!(
            "{shown} is not a directory"
        )));
    }
    if a.pattern.starts_with('/') {
        return Err(Error::InvalidArgument(format!(
            "pattern \"{}\" is absolute; give it relative to `path`",
            a.pattern
        )));
    }
    let matcher = globset::GlobBuilder::new(&a.pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| {
            Error::InvalidArgument(format!(
                "pattern \"{}\" is not a valid glob: {e}",
                a.pattern
            ))
        })?
        .compile_matcher();
    let found = std::sync::Mutex::new(Vec::<PathBuf>::new());
    walker(jail, &base).build_parallel().run(|| {
        let matcher = &matcher;
        let base = &base;
        let found = &found;
        let mut local = Vec::new();
        struct Flush<'a>(Vec<PathBuf>, &'a std::sync::Mutex<Vec<PathBuf>>);
        impl Drop for Flush<'_> {
            fn drop(&mut self) {
                if let Ok(mut g) = self.1.lock() {
                    g.append(&mut self.0);
                }
            }
        }
        let mut flush = Flush(std::mem::take(&mut local), found);
        Box::new(move |e| {
            if let Ok(e) = e
                && e.file_type().is_some_and(|t| !t.is_dir())
                && let Ok(rel) = e.path().strip_prefix(base)
                && matcher.is_match(rel)
            {
                flush.0.push(e.into_path());
            }
            ignore::WalkState::Continue
        })
    });
    let mut paths: Vec<String> = found
        .into_inner()
        .unwrap_or_default()
        .iter()
        .map(|p| display_rel(jail.root(), p))
        .collect();
    paths.sort();
    page_items(
        ctx,
        &paths,
        a.offset.unwrap_or(0),
        ctx.config.output.max_entries,
        "entries",
        &format!("(no files match \"{}\" under {shown})", a.pattern),
        |_, p, _| p.clone(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use codex_free_core::config::Config;

    fn ctx_with(root: &Path, f: impl FnOnce(&mut Config)) -> ToolCtx {
        let mut c = Config::default();
        f(&mut c);
        ToolCtx::open(
            root,
            std::sync::Arc::new(codex_free_core::jail::Protected::none()),
            c,
            root.join(".home"),
        )
        .unwrap()
    }

    fn read(
        ctx: &ToolCtx,
        path: &str,
        offset: Option<u64>,
        byte_offset: Option<u64>,
    ) -> Result<String> {
        read_file(
            ctx,
            &ReadFileArgs {
                path: path.into(),
                offset,
                limit: None,
                byte_offset,
            },
        )
    }

    /// Page through a file following the footers; return the concatenated content and pages.
    pub(crate) fn page_all(ctx: &ToolCtx, path: &str) -> (Vec<u8>, usize) {
        let mut out = Vec::new();
        let (mut off, mut boff) = (None, None);
        let mut pages = 0;
        loop {
            let page = read(ctx, path, off, boff).unwrap();
            pages += 1;
            assert!(page.len() <= ctx.max_output_bytes(), "page over ceiling");
            let (content, next) = split_page(&page);
            out.extend_from_slice(content.as_bytes());
            match next {
                None => return (out, pages),
                Some((o, b)) => {
                    off = Some(o);
                    boff = b;
                }
            }
            assert!(pages < 100_000);
        }
    }

    /// Split a read_file page into content and the continuation (offset, byte_offset).
    pub(crate) fn split_page(page: &str) -> (&str, Option<(u64, Option<u64>)>) {
        match codex_free_core::paging::parse_footer(page) {
            Some(c) => {
                for (k, _) in &c.args {
                    assert!(k == "offset" || k == "byte_offset", "{k}");
                }
                (
                    &page[..c.content_end],
                    Some((c.offset().unwrap(), c.byte_offset())),
                )
            }
            None => (page, None),
        }
    }

    #[test]
    fn empty_file_and_no_final_newline_and_crlf() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("empty"), "").unwrap();
        fs::write(d.path().join("nonl"), "a\nb").unwrap();
        fs::write(d.path().join("crlf"), "a\r\nb\r\n").unwrap();
        let ctx = ctx_with(d.path(), |_| {});
        assert_eq!(
            read(&ctx, "empty", None, None).unwrap(),
            "(empty file: 0 bytes)"
        );
        assert_eq!(read(&ctx, "nonl", None, None).unwrap(), "a\nb");
        assert_eq!(read(&ctx, "crlf", None, None).unwrap(), "a\r\nb\r\n");
        assert_eq!(read(&ctx, "nonl", Some(1), None).unwrap(), "b");
        let e = read(&ctx, "nonl", Some(2), None).unwrap_err().to_string();
        assert!(e.contains("offset=2") && e.contains("2 lines"), "{e}");
        let e = read(&ctx, "crlf", Some(2), None).unwrap_err().to_string();
        assert!(e.contains("2 lines"), "{e}");
    }

    #[test]
    fn line_cap_exactly_at_and_one_over() {
        let d = tempfile::tempdir().unwrap();
        let at: String = (1..=1000).map(|i| format!("{i}\n")).collect();
        let over: String = (1..=1001).map(|i| format!("{i}\n")).collect();
        fs::write(d.path().join("at"), &at).unwrap();
        fs::write(d.path().join("over"), &over).unwrap();
        let ctx = ctx_with(d.path(), |_| {});
        assert_eq!(read(&ctx, "at", None, None).unwrap(), at);
        let p = read(&ctx, "over", None, None).unwrap();
        assert!(
            p.ends_with(
                "\n(showing lines 1-1000 of 1001 — call again with offset=1000 for the rest)"
            ),
            "{}",
            &p[p.len() - 100..]
        );
        assert_eq!(read(&ctx, "over", Some(1000), None).unwrap(), "1001\n");
    }

    #[test]
    fn byte_cap_exactly_at_and_one_over() {
        let d = tempfile::tempdir().unwrap();
        let ctx = ctx_with(d.path(), |c| {
            c.output.max_file_bytes = 1024;
        });
        // 1024 bytes exactly: 16 lines of 64 bytes.
        let line = format!("{}\n", "x".repeat(63));
        fs::write(d.path().join("at"), line.repeat(16)).unwrap();
        assert_eq!(read(&ctx, "at", None, None).unwrap(), line.repeat(16));
        fs::write(d.path().join("over"), format!("{}y\n", line.repeat(16))).unwrap();
        let p = read(&ctx, "over", None, None).unwrap();
        assert!(
            p.ends_with("(showing lines 1-16 of 17 — call again with offset=16 for the rest)"),
            "{p}"
        );
        let (bytes, pages) = page_all(&ctx, "over");
        assert_eq!(bytes, fs::read(d.path().join("over")).unwrap());
        assert_eq!(pages, 2);
    }

    #[test]
    fn six_mb_single_line_pages_back_to_the_exact_bytes() {
        let d = tempfile::tempdir().unwrap();
        // Multi-byte characters so cuts must respect UTF-8 boundaries.
        let unit = "abcdefé€😀;";
        let mut s = String::new();
        while s.len() < 6 * 1024 * 1024 {
            s.push_str(unit);
        }
        fs::write(d.path().join("min.js"), &s).unwrap();
        let ctx = ctx_with(d.path(), |c| c.output.max_tool_output_tokens = 100_000);
        let first = read(&ctx, "min.js", None, None).unwrap();
        let footer = first.lines().last().unwrap();
        assert!(footer.starts_with("(showing bytes 0-131"), "{footer}");
        assert!(
            footer.contains(&format!(
                " of {} of line 1 — call again with offset=0 byte_offset=",
                s.len()
            )),
            "{footer}"
        );
        let (bytes, pages) = page_all(&ctx, "min.js");
        assert_eq!(bytes.len(), s.len());
        assert!(bytes == s.as_bytes());
        assert!(pages >= 48, "{pages}");
    }

    #[test]
    fn long_line_after_short_lines_then_more_lines() {
        let d = tempfile::tempdir().unwrap();
        let mut s = String::from("short\r\nline two\n");
        s.push_str(&"z".repeat(5000));
        s.push('\n');
        s.push_str("tail\nend");
        fs::write(d.path().join("f"), &s).unwrap();
        let ctx = ctx_with(d.path(), |c| c.output.max_file_bytes = 1024);
        let p = read(&ctx, "f", None, None).unwrap();
        assert!(
            p.ends_with("(showing lines 1-2 of 5 — call again with offset=2 for the rest)"),
            "{p}"
        );
        let (bytes, _) = page_all(&ctx, "f");
        assert_eq!(bytes, s.as_bytes());
    }

    #[test]
    fn invalid_utf8_is_lossy_with_a_note_and_binary_is_refused() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("latin1"), b"caf\xe9\n").unwrap();
        fs::write(d.path().join("bin"), b"\x7fELF\x00\x01").unwrap();
        let ctx = ctx_with(d.path(), |_| {});
        let p = read(&ctx, "latin1", None, None).unwrap();
        assert!(p.starts_with("caf\u{fffd}\n(note:"), "{p}");
        let e = read(&ctx, "bin", None, None).unwrap_err().to_string();
        assert!(e.contains("binary"), "{e}");
    }

    #[test]
    fn write_file_creates_parents_and_replaces_atomically() {
        let d = tempfile::tempdir().unwrap();
        let ctx = ctx_with(d.path(), |_| {});
        let r = write_file(
            &ctx,
            &WriteFileArgs {
                path: "a/b/c.txt".into(),
                content: "hi\n".into(),
            },
        )
        .unwrap();
        assert_eq!(r, "wrote 3 bytes to a/b/c.txt (created)");
        let r = write_file(
            &ctx,
            &WriteFileArgs {
                path: "a/b/c.txt".into(),
                content: "bye".into(),
            },
        )
        .unwrap();
        assert!(r.ends_with("(replaced)"), "{r}");
        assert_eq!(
            fs::read_to_string(d.path().join("a/b/c.txt")).unwrap(),
            "bye"
        );
        let names: Vec<_> = fs::read_dir(d.path().join("a/b"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "no temp files left: {names:?}");
        let e = write_file(
            &ctx,
            &WriteFileArgs {
                path: "a".into(),
                content: "x".into(),
            },
        )
        .unwrap_err();
        assert_eq!(e.code(), "invalid_argument");
    }

    #[test]
    fn list_directory_sorts_marks_and_pages() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..7 {
            fs::write(d.path().join(format!("f{i}")), "").unwrap();
        }
        fs::create_dir(d.path().join("dir")).unwrap();
        fs::create_dir(d.path().join("empty")).unwrap();
        let ctx = ctx_with(d.path(), |c| c.output.max_entries = 5);
        let p = list_directory(
            &ctx,
            &ListDirectoryArgs {
                path: None,
                offset: None,
            },
        )
        .unwrap();
        assert_eq!(
            p,
            "dir/\nempty/\nf0\nf1\nf2\n(showing entries 1-5 of 9 — call again with offset=5 for the rest)"
        );
        let p = list_directory(
            &ctx,
            &ListDirectoryArgs {
                path: None,
                offset: Some(5),
            },
        )
        .unwrap();
        assert_eq!(p, "f3\nf4\nf5\nf6");
        let p = list_directory(
            &ctx,
            &ListDirectoryArgs {
                path: Some("empty".into()),
                offset: None,
            },
        )
        .unwrap();
        assert_eq!(p, "(empty directory)");
        assert!(
            list_directory(
                &ctx,
                &ListDirectoryArgs {
                    path: None,
                    offset: Some(9)
                }
            )
            .is_err()
        );
        // Exactly at the entries cap: complete, no footer; one over: a footer.
        let at = ctx_with(d.path(), |c| c.output.max_entries = 9);
        let p = list_directory(
            &at,
            &ListDirectoryArgs {
                path: None,
                offset: None,
            },
        )
        .unwrap();
        assert_eq!(p.lines().count(), 9);
        assert!(!p.contains("(showing"));
        let under = ctx_with(d.path(), |c| c.output.max_entries = 8);
        let p = list_directory(
            &under,
            &ListDirectoryArgs {
                path: None,
                offset: None,
            },
        )
        .unwrap();
        assert!(
            p.ends_with("\nf5\n(showing entries 1-8 of 9 — call again with offset=8 for the rest)"),
            "{p}"
        );
    }

    #[test]
    fn tree_respects_gitignore_and_depth_and_pages() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        fs::create_dir_all(r.join("src/deep/deeper")).unwrap();
        fs::create_dir_all(r.join("target/debug")).unwrap();
        fs::create_dir_all(r.join(".git")).unwrap();
        fs::write(r.join(".gitignore"), "target/\n").unwrap();
        fs::write(r.join("src/main.rs"), "").unwrap();
        fs::write(r.join("src/deep/deeper/x.rs"), "").unwrap();
        let ctx = ctx_with(r, |c| c.output.max_tree_nodes = 3);
        let full = tree(
            &ctx,
            &TreeArgs {
                path: None,
                depth: Some(2),
                offset: None,
            },
        )
        .unwrap();
        assert_eq!(
            full,
            ".gitignore\nsrc/\n  deep/\n(showing nodes 1-3 of 4 — call again with offset=3 for the rest)"
        );
        let rest = tree(
            &ctx,
            &TreeArgs {
                path: None,
                depth: Some(2),
                offset: Some(3),
            },
        )
        .unwrap();
        assert_eq!(rest, "  src/main.rs");
    }

    #[test]
    fn glob_matches_relative_paths_sorted() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        fs::create_dir_all(r.join("src/a")).unwrap();
        fs::write(r.join("src/a/x.rs"), "").unwrap();
        fs::write(r.join("src/b.rs"), "").unwrap();
        fs::write(r.join("top.rs"), "").unwrap();
        fs::write(r.join("src/c.txt"), "").unwrap();
        let ctx = ctx_with(r, |_| {});
        let g = |p: &str, path: Option<&str>| {
            glob(
                &ctx,
                &GlobArgs {
                    pattern: p.into(),
                    path: path.map(Into::into),
                    offset: None,
                },
            )
            .unwrap()
        };
        assert_eq!(g("**/*.rs", None), "src/a/x.rs\nsrc/b.rs\ntop.rs");
        assert_eq!(g("*.rs", None), "top.rs");
        assert_eq!(g("*.rs", Some("src")), "src/b.rs");
        assert!(g("*.zig", None).starts_with("(no files match"));
        assert_eq!(
            glob(
                &ctx,
                &GlobArgs {
                    pattern: "[".into(),
                    path: None,
                    offset: None
                }
            )
            .unwrap_err()
            .code(),
            "invalid_argument"
        );
    }
}
