//! The audit trail of tool calls: one JSON line per MCP tool call in
//! `<home>/audit/audit.jsonl`, rotated by size to `audit.jsonl.1` (newest) … `.N`.
//!
//! A line says who (a hashed conversation key), what (tool name, the *shape* of each
//! argument: key name, JSON type and length), how it went (result size, duration, error
//! code) and, once the exec sandbox reports one, its verdict. It never holds an argument
//! value, a result, an error message (messages quote file lines) or a token; the one piece
//! of a result it keeps is the project-relative paths of changed files that another program
//! runs later outside the sandbox ([`crate::runs_later`]), so the user can review them.
//!
//! Invariant: every line is one `O_APPEND` write (several server processes sharing a home
//! interleave whole lines), and rotation happens under the file's cross-process lock
//! ([`crate::home::with_lock`]). A line written through a handle that another process has
//! just rotated lands in `audit.jsonl.1`: kept, never lost. [`AuditWriter`] (the server's
//! per-call path) keeps the file open and takes the lock only to rotate. A line that cannot
//! be written whole (full disk) is cut back out ([`crate::home::append_whole`]).

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Result;
use crate::error::IoContext;

/// Directory of the trail under the state home.
pub const DIR: &str = "audit";
/// The current file; rotated copies append `.1` (newest) to `.N`.
pub const FILE: &str = "audit.jsonl";
/// Longest key or tool name kept (longer ones are cut): names come from the client.
const MAX_NAME: usize = 64;
/// Argument keys described per call; the rest are only counted (`…more`).
const MAX_KEYS: usize = 32;
/// How far back [`AuditLog::last_errors`] looks, bytes over all files: a dashboard poll
/// stays cheap even with a full 1 GiB trail.
const SCAN_BYTES: u64 = 4 << 20;

/// The shape of one argument value: its JSON type and size, never the value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Shape {
    /// A string of `bytes` UTF-8 bytes.
    String {
        /// Length in bytes.
        bytes: u64,
    },
    /// Any number.
    Number,
    /// true/false.
    Bool,
    /// null.
    Null,
    /// An array of `items` elements.
    Array {
        /// Element count.
        items: u64,
    },
    /// An object with `keys` members.
    Object {
        /// Member count.
        keys: u64,
    },
}

impl Shape {
    /// The shape of `v`.
    pub fn of(v: &Value) -> Self {
        match v {
            Value::String(s) => Shape::String {
                bytes: s.len() as u64,
            },
            Value::Number(_) => Shape::Number,
            Value::Bool(_) => Shape::Bool,
            Value::Null => Shape::Null,
            Value::Array(a) => Shape::Array {
                items: a.len() as u64,
            },
            Value::Object(o) => Shape::Object {
                keys: o.len() as u64,
            },
        }
    }
}

/// A client-supplied name cut to 64 characters of `[A-Za-z0-9_.-]` (others become `?`),
/// so a key name cannot smuggle text into the trail.
pub fn clean_name(s: &str) -> String {
    s.chars()
        .take(MAX_NAME)
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.-".contains(c) {
                c
            } else {
                '?'
            }
        })
        .collect()
}

/// Shapes of a call's arguments by (cleaned) key name; beyond 32 keys the rest are counted
/// under `…more` as an object shape.
pub fn shapes(args: Option<&serde_json::Map<String, Value>>) -> BTreeMap<String, Shape> {
    let mut out = BTreeMap::new();
    let Some(args) = args else { return out };
    for (k, v) in args.iter().take(MAX_KEYS) {
        out.insert(clean_name(k), Shape::of(v));
    }
    if args.len() > MAX_KEYS {
        out.insert(
            "…more".into(),
            Shape::Object {
                keys: (args.len() - MAX_KEYS) as u64,
            },
        );
    }
    out
}

/// One line of the trail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// When the call started, RFC 3339 UTC with milliseconds.
    pub time: String,
    /// The same instant in Unix milliseconds.
    pub time_ms: i64,
    /// The conversation: `conv-<16 hex of SHA-256 of openai/session>`, else the MCP
    /// handler's instance id. Never the raw session value.
    pub conversation: String,
    /// Tool name (cleaned, see [`clean_name`]).
    pub tool: String,
    /// Shape of each argument.
    pub args: BTreeMap<String, Shape>,
    /// Size of the arguments as JSON, bytes.
    pub args_bytes: u64,
    /// Size of the result's text, bytes.
    pub result_bytes: u64,
    /// Wall time of the call, milliseconds.
    pub duration_ms: u64,
    /// Error code (`refused`, `path_outside_root`, …) when the call failed; null on success.
    pub error: Option<String>,
    /// The exec sandbox's verdict for this call; null while no sandbox reports one.
    pub sandbox: Option<String>,
    /// Project-relative paths this call changed that another program runs later (a
    /// `Makefile`, `.envrc`, a CI workflow: [`crate::runs_later`]); absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs_later: Vec<String>,
}

/// An appender that keeps the current file open between lines: one `stat` and one write
/// per line, the lock only to rotate. The server appends a line per tool call, and
/// reopening plus locking for each was a tenth of its CPU per call (profiled).
#[derive(Debug)]
pub struct AuditWriter {
    log: AuditLog,
    /// The open file and its identity (device, inode), to notice a rotation by any process
    /// (Unix only: elsewhere each line reopens the file).
    #[cfg_attr(not(unix), allow(dead_code))]
    open: std::sync::Mutex<Option<(File, (u64, u64))>>,
}

impl AuditWriter {
    /// A writer for the trail under `<home>/audit/` (nothing is opened until the first line).
    pub fn new(home: &Path) -> Self {
        Self {
            log: AuditLog::new(home),
            open: std::sync::Mutex::new(None),
        }
    }

    /// The trail this writes.
    pub fn log(&self) -> &AuditLog {
        &self.log
    }

    /// Append `entry` as one line, as [`AuditLog::append`] does (same rotation, same 0600
    /// files). Errors: the directory or file cannot be written.
    pub fn append(&self, entry: &Entry, max_bytes: u64, keep: usize) -> Result<()> {
        #[cfg(not(unix))]
        {
            return self.log.append(entry, max_bytes, keep);
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let line = line_of(entry)?;
            let path = self.log.path();
            let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
            let now = fs::metadata(&path).ok();
            let len = now.as_ref().map_or(0, |m| m.len());
            if len > 0 && len + line.len() as u64 > max_bytes {
                // Rotation: the locked path re-checks the size, rotates and writes.
                *open = None;
                return self.log.append(entry, max_bytes, keep);
            }
            let same =
                matches!((&*open, &now), (Some((_, id)), Some(m)) if *id == (m.dev(), m.ino()));
            if !same {
                create_private_dir(&self.log.dir)?;
                let f = open_append(&path)?;
                let m = f
                    .metadata()
                    .ctx(|| format!("reading metadata of {}", path.display()))?;
                *open = Some((f, (m.dev(), m.ino())));
            }
            let Some((f, _)) = open.as_mut() else {
                return Ok(());
            };
            // One write per line: O_APPEND keeps concurrent lines whole; a line that cannot
            // be written whole is cut back out.
            crate::home::append_whole(f, &line, b"")
                .ctx(|| format!("appending to {}", path.display()))
        }
    }
}

/// The trail of one state home.
#[derive(Debug, Clone)]
pub struct AuditLog {
    dir: PathBuf,
}

impl AuditLog {
    /// The trail under `<home>/audit/`.
    pub fn new(home: &Path) -> Self {
        Self {
            dir: home.join(DIR),
        }
    }

    /// `<home>/audit/audit.jsonl`.
    pub fn path(&self) -> PathBuf {
        self.dir.join(FILE)
    }

    fn rotated(&self, n: usize) -> PathBuf {
        self.dir.join(format!("{FILE}.{n}"))
    }

    /// Append `entry` as one line. When the line would take the file past `max_bytes`,
    /// the file is rotated first, keeping `keep` older files. Files are created 0600.
    /// Errors: the directory or file cannot be written.
    pub fn append(&self, entry: &Entry, max_bytes: u64, keep: usize) -> Result<()> {
        let line = line_of(entry)?;
        let path = self.path();
        create_private_dir(&self.dir)?;
        crate::home::with_lock(&path, || {
            let len = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            if len > 0 && len + line.len() as u64 > max_bytes {
                self.rotate(keep.max(1))?;
            }
            let f = open_append(&path)?;
            // One write per line: O_APPEND keeps concurrent lines whole, and a line that
            // cannot be written whole is cut back out (no torn line on a full disk).
            crate::home::append_whole(&f, &line, b"")
                .ctx(|| format!("appending to {}", path.display()))
        })
    }

    fn rotate(&self, keep: usize) -> Result<()> {
        // Drop what is past `keep` (also after `keepFiles` was lowered).
        let mut n = keep;
        while self.rotated(n).exists() {
            let p = self.rotated(n);
            fs::remove_file(&p).ctx(|| format!("removing {}", p.display()))?;
            n += 1;
        }
        for i in (1..keep).rev() {
            let from = self.rotated(i);
            if from.exists() {
                let to = self.rotated(i + 1);
                fs::rename(&from, &to).ctx(|| format!("rotating {}", from.display()))?;
            }
        }
        let cur = self.path();
        let to = self.rotated(1);
        fs::rename(&cur, &to).ctx(|| format!("rotating {}", cur.display()))
    }

    /// The files of the trail, newest first (current, `.1`, `.2`, … while they exist).
    pub fn files(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        if self.path().exists() {
            out.push(self.path());
        }
        let mut n = 1;
        while self.rotated(n).exists() {
            out.push(self.rotated(n));
            n += 1;
        }
        out
    }

    /// The newest `limit` entries with an error, newest first, looking back over at most the
    /// last 4 MiB of the trail. Unparsable lines are skipped. Errors: unreadable file.
    pub fn last_errors(&self, limit: usize) -> Result<Vec<Entry>> {
        self.last_matching(limit, |e| e.error.is_some())
    }

    /// The newest `limit` entries that changed a file run later outside the sandbox
    /// ([`Entry::runs_later`] not empty), newest first, over the same 4 MiB look-back as
    /// [`AuditLog::last_errors`]. Errors: unreadable file.
    pub fn last_runs_later(&self, limit: usize) -> Result<Vec<Entry>> {
        self.last_matching(limit, |e| !e.runs_later.is_empty())
    }

    fn last_matching(&self, limit: usize, keep: impl Fn(&Entry) -> bool) -> Result<Vec<Entry>> {
        let mut out = Vec::new();
        let mut budget = SCAN_BYTES;
        for path in self.files() {
            if out.len() >= limit || budget == 0 {
                break;
            }
            let (text, from_start) = read_tail(&path, budget)?;
            budget = budget.saturating_sub(text.len() as u64);
            let mut lines: Vec<&str> = text.split('\n').collect();
            if !from_start && !lines.is_empty() {
                lines.remove(0); // cut mid-line
            }
            for l in lines.iter().rev() {
                if out.len() >= limit {
                    break;
                }
                if let Ok(e) = serde_json::from_str::<Entry>(l)
                    && keep(&e)
                {
                    out.push(e);
                }
            }
        }
        Ok(out)
    }
}

fn create_private_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    crate::home::make_private_dir(dir)
}

/// `entry` as one JSON line, newline included.
fn line_of(entry: &Entry) -> Result<Vec<u8>> {
    let mut line = serde_json::to_vec(entry).map_err(|e| {
        crate::Error::InvalidArgument(format!("audit entry does not serialise: {e}"))
    })?;
    line.push(b'\n');
    Ok(line)
}

fn open_append(path: &Path) -> Result<File> {
    let mut o = OpenOptions::new();
    // Readable too: the appender checks the last byte for a torn line.
    o.create(true).read(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o.open(path).ctx(|| format!("opening {}", path.display()))
}

/// The last `max` bytes of `path` as text (lossy), and whether that is the whole file.
fn read_tail(path: &Path, max: u64) -> Result<(String, bool)> {
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((String::new(), true)),
        Err(e) => return Err(crate::Error::io(format!("reading {}", path.display()), e)),
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(max);
    f.seek(SeekFrom::Start(start))
        .ctx(|| format!("reading {}", path.display()))?;
    let mut buf = Vec::new();
    f.take(max)
        .read_to_end(&mut buf)
        .ctx(|| format!("reading {}", path.display()))?;
    Ok((String::from_utf8_lossy(&buf).into_owned(), start == 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(tool: &str, error: Option<&str>) -> Entry {
        Entry {
            time: "2026-01-01T00:00:00.000Z".into(),
            time_ms: 1,
            conversation: "conv-0123456789abcdef".into(),
            tool: tool.into(),
            args: BTreeMap::new(),
            args_bytes: 2,
            result_bytes: 10,
            duration_ms: 3,
            error: error.map(str::to_owned),
            sandbox: None,
            runs_later: Vec::new(),
        }
    }

    #[test]
    fn shapes_hide_values_and_clean_names() {
        let args = serde_json::json!({
            "path": "secret/path.txt", "content": "TOP SECRET", "n": 3, "list": [1, 2],
            "o": {"a": 1}, "b": true, "z": null, "bad key\n\"x\"": 1
        });
        let s = shapes(args.as_object());
        let text = serde_json::to_string(&s).unwrap();
        assert!(
            !text.contains("SECRET") && !text.contains("path.txt"),
            "{text}"
        );
        assert_eq!(s["content"], Shape::String { bytes: 10 });
        assert_eq!(s["list"], Shape::Array { items: 2 });
        assert_eq!(s["o"], Shape::Object { keys: 1 });
        assert_eq!(s["n"], Shape::Number);
        assert!(s.contains_key("bad?key??x?"), "{s:?}");
        let many: serde_json::Map<String, Value> =
            (0..40).map(|i| (format!("k{i:02}"), Value::Null)).collect();
        let s = shapes(Some(&many));
        assert_eq!(s.len(), 33);
        assert_eq!(s["…more"], Shape::Object { keys: 8 });
    }

    /// The kept-open writer rotates like the locked path, follows a rotation made by another
    /// process, and loses no line.
    #[test]
    fn writer_keeps_every_line_across_rotations_by_anyone() {
        let d = tempfile::tempdir().unwrap();
        let w = AuditWriter::new(d.path());
        let other = AuditLog::new(d.path());
        let line = serde_json::to_vec(&entry("read_file", None)).unwrap().len() as u64 + 1;
        for i in 0..30 {
            let e = entry(&format!("t{i:02}"), None);
            if i % 7 == 3 {
                // another process appends (and may rotate) between our lines
                other.append(&e, 4 * line, 20).unwrap();
            } else {
                w.append(&e, 4 * line, 20).unwrap();
            }
        }
        let mut all = String::new();
        for f in w.log().files() {
            assert!(std::fs::metadata(&f).unwrap().len() <= 4 * line, "{f:?}");
            all.push_str(&std::fs::read_to_string(&f).unwrap());
        }
        for i in 0..30 {
            assert_eq!(all.matches(&format!("\"t{i:02}\"")).count(), 1, "t{i:02}");
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let m = std::fs::metadata(w.log().path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(m & 0o777, 0o600);
        }
    }

    #[test]
    fn appends_rotate_by_size_and_keep_n_files() {
        let d = tempfile::tempdir().unwrap();
        let log = AuditLog::new(d.path());
        let line = serde_json::to_vec(&entry("read_file", None)).unwrap().len() as u64 + 1;
        // room for 3 lines per file, keep 2 rotated files
        for i in 0..20 {
            let e = entry(&format!("t{i:02}"), (i % 2 == 1).then_some("refused"));
            log.append(&e, 3 * line, 2).unwrap();
        }
        let files = log.files();
        assert_eq!(files.len(), 3, "{files:?}");
        for f in &files {
            assert!(std::fs::metadata(f).unwrap().len() <= 3 * line);
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let m = std::fs::metadata(log.path()).unwrap().permissions().mode();
            assert_eq!(m & 0o777, 0o600);
        }
        // 20 lines, 3 per file: current has t18,t19; .1 t15..t17; .2 t12..t14
        let cur = std::fs::read_to_string(log.path()).unwrap();
        assert!(cur.contains("\"t19\"") && cur.contains("\"t18\"") && !cur.contains("\"t17\""));
        let errs = log.last_errors(4).unwrap();
        let tools: Vec<_> = errs.iter().map(|e| e.tool.as_str()).collect();
        assert_eq!(tools, ["t19", "t17", "t15", "t13"]);
        // lowering keepFiles drops the extra files at the next rotation
        for i in 0..3 {
            log.append(&entry(&format!("u{i}"), None), 3 * line, 1)
                .unwrap();
        }
        assert_eq!(log.files().len(), 2, "{:?}", log.files());
    }

    #[test]
    fn concurrent_appends_keep_whole_lines() {
        let d = tempfile::tempdir().unwrap();
        let log = AuditLog::new(d.path());
        std::thread::scope(|s| {
            for t in 0..4 {
                let log = log.clone();
                s.spawn(move || {
                    for i in 0..50 {
                        log.append(&entry(&format!("t{t}-{i}"), None), 1 << 30, 5)
                            .unwrap();
                    }
                });
            }
        });
        let text = std::fs::read_to_string(log.path()).unwrap();
        let n = text
            .lines()
            .filter(|l| serde_json::from_str::<Entry>(l).is_ok())
            .count();
        assert_eq!(n, 200);
        assert_eq!(text.lines().count(), 200);
    }
}
