//! A full-text index over the memory folder's text files (SQLite FTS5, from rusqlite's
//! bundled SQLite), serving `memories_search`.
//!
//! The index is a cache kept in its own file, `<home>/memories_index.sqlite`, not in
//! `state.sqlite`: it can be deleted at any time and is rebuilt from the folder, so it needs
//! no migrations and no backup. One row per line (`path`, `line`, `text`), so a hit maps to
//! a line number directly. Before every search the caller passes the folder's current
//! files with their modification time and size; changed files are re-indexed, vanished
//! ones dropped, in one `BEGIN IMMEDIATE` transaction (several processes may search).
//!
//! Invariant: the index never holds a path the caller did not list in the latest sync; a
//! corrupt or foreign index file is replaced, never trusted.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use codex_free_core::Error;
use codex_free_core::Result;

fn db_err(e: rusqlite::Error) -> Error {
    Error::Store(format!("memory index: {e}"))
}

/// How long a search waits for another process's index update (5 s).
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// File name of the index inside the state home.
pub const INDEX_FILE: &str = "memories_index.sqlite";

const SCHEMA_VERSION: u32 = 1;

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS files (
    path      TEXT PRIMARY KEY,
    mtime_ns  INTEGER NOT NULL,
    size      INTEGER NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS lines USING fts5(text, path UNINDEXED, line UNINDEXED, tokenize = 'unicode61');
"#;

/// One file of the folder as the caller sees it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedFile {
    /// Path relative to the folder, `/`-separated.
    pub path: String,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Size in bytes.
    pub size: i64,
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// File path relative to the folder.
    pub path: String,
    /// 1-based line number.
    pub line: i64,
    /// The line's text.
    pub text: String,
}

/// What a sync changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexSync {
    /// Files (re)indexed.
    pub indexed: usize,
    /// Files dropped.
    pub removed: usize,
}

/// A handle on the index.
pub struct MemoryIndex {
    conn: Connection,
}

impl MemoryIndex {
    /// Open (creating) the index at `path`. A file that is not a valid index of this
    /// version is deleted and recreated (it is only a cache).
    ///
    /// Errors: [`Error::Store`] when even a fresh file cannot be created.
    pub fn open(path: &Path) -> Result<Self> {
        match Self::try_open(path) {
            Ok(i) => Ok(i),
            Err(e) => {
                tracing::warn!("rebuilding memory search index {}: {e}", path.display());
                for suffix in ["", "-wal", "-shm"] {
                    let mut p = path.as_os_str().to_owned();
                    p.push(suffix);
                    let _ = std::fs::remove_file(std::path::PathBuf::from(p));
                }
                Self::try_open(path)
            }
        }
    }

    fn try_open(path: &Path) -> Result<Self> {
        let conn = Connection::open(path)
            .map_err(|e| Error::Store(format!("opening {}: {e}", path.display())))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(db_err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db_err)?;
        Self::init(conn)
    }

    /// A private in-memory index (tests).
    pub fn open_in_memory() -> Result<Self> {
        Self::init(Connection::open_in_memory().map_err(db_err)?)
    }

    fn init(conn: Connection) -> Result<Self> {
        let v: u32 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(db_err)?;
        if v != 0 && v != SCHEMA_VERSION {
            return Err(Error::Store(format!(
                "memory index has version {v}, expected {SCHEMA_VERSION}"
            )));
        }
        conn.execute_batch(SCHEMA).map_err(db_err)?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(db_err)?;
        Ok(Self { conn })
    }

    /// Bring the index in line with `files`: files whose (mtime, size) changed are
    /// re-indexed with the text `load(path)` returns (`None` = unreadable/not text: indexed
    /// as empty), files not listed are dropped.
    pub fn sync(
        &mut self,
        files: &[IndexedFile],
        load: &mut dyn FnMut(&str) -> Option<String>,
    ) -> Result<IndexSync> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        let mut stats = IndexSync::default();
        let known: Vec<(String, i64, i64)> = {
            let mut st = tx
                .prepare("SELECT path, mtime_ns, size FROM files")
                .map_err(db_err)?;
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .map_err(db_err)?
                .collect::<std::result::Result<_, _>>()
                .map_err(db_err)?
        };
        let listed: std::collections::HashSet<&str> =
            files.iter().map(|f| f.path.as_str()).collect();
        for (p, _, _) in &known {
            if !listed.contains(p.as_str()) {
                tx.execute("DELETE FROM lines WHERE path = ?1", [p])
                    .map_err(db_err)?;
                tx.execute("DELETE FROM files WHERE path = ?1", [p])
                    .map_err(db_err)?;
                stats.removed += 1;
            }
        }
        for f in files {
            let same = known
                .iter()
                .any(|(p, m, s)| *p == f.path && *m == f.mtime_ns && *s == f.size);
            if same {
                continue;
            }
            tx.execute("DELETE FROM lines WHERE path = ?1", [&f.path])
                .map_err(db_err)?;
            let text = load(&f.path).unwrap_or_default();
            {
                let mut ins = tx
                    .prepare_cached("INSERT INTO lines (text, path, line) VALUES (?1, ?2, ?3)")
                    .map_err(db_err)?;
                for (i, l) in text.lines().enumerate() {
                    if !l.trim().is_empty() {
                        ins.execute(params![l, f.path, (i + 1) as i64])
                            .map_err(db_err)?;
                    }
                }
            }
            tx.execute(
                "INSERT INTO files (path, mtime_ns, size) VALUES (?1, ?2, ?3) ON CONFLICT(path) DO UPDATE SET mtime_ns = excluded.mtime_ns, size = excluded.size",
                params![f.path, f.mtime_ns, f.size],
            )
            .map_err(db_err)?;
            stats.indexed += 1;
        }
        tx.commit().map_err(db_err)?;
        Ok(stats)
    }

    /// Lines matching any word of `query` (case-insensitive, word prefixes match), best
    /// first (BM25: lines with more and rarer query words rank higher), then by path and
    /// line. `path_prefix` limits hits to one file or directory. Returns the page
    /// `offset..offset+limit` and the total number of hits.
    ///
    /// Errors: [`Error::InvalidArgument`] when `query` has no word characters.
    pub fn search(
        &self,
        query: &str,
        path_prefix: Option<&str>,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<Hit>, usize)> {
        let fts = fts_query(query).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "query {query:?} has no words to search for; give one or more words"
            ))
        })?;
        let prefix = path_prefix
            .map(|p| p.trim_end_matches('/'))
            .filter(|p| !p.is_empty())
            .unwrap_or("");
        let filter = "(?2 = '' OR path = ?2 OR substr(path, 1, length(?2) + 1) = ?2 || '/')";
        let total: i64 = self
            .conn
            .query_row(
                &format!("SELECT count(*) FROM lines WHERE lines MATCH ?1 AND {filter}"),
                params![fts, prefix],
                |r| r.get(0),
            )
            .map_err(db_err)?;
        let mut st = self
            .conn
            .prepare(&format!(
                "SELECT path, line, text FROM lines WHERE lines MATCH ?1 AND {filter} ORDER BY bm25(lines), path, line LIMIT ?3 OFFSET ?4"
            ))
            .map_err(db_err)?;
        let hits = st
            .query_map(params![fts, prefix, limit as i64, offset as i64], |r| {
                Ok(Hit {
                    path: r.get(0)?,
                    line: r.get(1)?,
                    text: r.get(2)?,
                })
            })
            .map_err(db_err)?
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(db_err)?;
        Ok((hits, total as usize))
    }

    /// Number of files indexed (tests, status).
    pub fn file_count(&self) -> Result<usize> {
        let n: Option<i64> = self
            .conn
            .query_row("SELECT count(*) FROM files", [], |r| r.get(0))
            .optional()
            .map_err(db_err)?;
        Ok(n.unwrap_or(0) as usize)
    }
}

/// The FTS5 query for free text: each word quoted (so FTS operators in the input are
/// plain text) as a prefix term, joined with OR. `None` when there is no word.
fn fts_query(q: &str) -> Option<String> {
    let words: Vec<String> = q
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .take(32)
        .map(|w| format!("\"{}\"*", w.replace('"', "")))
        .collect();
    if words.is_empty() {
        None
    } else {
        Some(words.join(" OR "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(path: &str, m: i64) -> IndexedFile {
        IndexedFile {
            path: path.into(),
            mtime_ns: m,
            size: 1,
        }
    }

    #[test]
    fn indexes_searches_and_follows_changes() {
        let mut idx = MemoryIndex::open_in_memory().unwrap();
        let mut texts = std::collections::HashMap::from([
            (
                "MEMORY.md".to_string(),
                "# Memory\n- always use pnpm, never npm\n- keep secrets out\n".to_string(),
            ),
            (
                "rollout_summaries/a.md".to_string(),
                "ran pnpm install\nother\n".to_string(),
            ),
        ]);
        let files = vec![f("MEMORY.md", 1), f("rollout_summaries/a.md", 1)];
        let s = idx.sync(&files, &mut |p| texts.get(p).cloned()).unwrap();
        assert_eq!(
            s,
            IndexSync {
                indexed: 2,
                removed: 0
            }
        );
        let (hits, total) = idx.search("pnpm", None, 0, 10).unwrap();
        assert_eq!(total, 2);
        assert!(hits.iter().any(|h| h.path == "MEMORY.md" && h.line == 2));
        let (hits, total) = idx
            .search("PNPM", Some("rollout_summaries"), 0, 10)
            .unwrap();
        assert_eq!((total, hits[0].line), (1, 1));
        let (_, total) = idx.search("secr", None, 0, 10).unwrap();
        assert_eq!(total, 1, "prefix match");
        assert_eq!(
            idx.search("\"*) OR", None, 0, 10).unwrap().1,
            0,
            "operators are plain text"
        );
        assert!(idx.search("--", None, 0, 10).is_err());
        // Unchanged: nothing re-indexed. Changed + removed files follow.
        assert_eq!(
            idx.sync(&files, &mut |p| texts.get(p).cloned()).unwrap(),
            IndexSync::default()
        );
        texts.insert("MEMORY.md".into(), "nothing here\n".into());
        let s = idx
            .sync(&[f("MEMORY.md", 2)], &mut |p| texts.get(p).cloned())
            .unwrap();
        assert_eq!(
            s,
            IndexSync {
                indexed: 1,
                removed: 1
            }
        );
        assert_eq!(idx.search("pnpm", None, 0, 10).unwrap().1, 0);
    }

    #[test]
    fn corrupt_file_is_rebuilt() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(INDEX_FILE);
        std::fs::write(&p, b"not a database at all, just junk bytes....").unwrap();
        let idx = MemoryIndex::open(&p).unwrap();
        assert_eq!(idx.file_count().unwrap(), 0);
    }
}
