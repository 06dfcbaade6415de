//! Numbered, append-only schema migrations for `state.sqlite`.
//!
//! Migration `n` (1-based) is `MIGRATIONS[n - 1]`; `PRAGMA user_version` holds the last one
//! applied. All pending migrations run in one `BEGIN IMMEDIATE` transaction (so two
//! processes opening a fresh file at once cannot both apply them). Before upgrading a
//! database that already has a schema, the file is copied with `VACUUM INTO` to
//! `<file>.before-v<N>.bak` (N = the version being upgraded from).
//!
//! Tables follow Codex's memories state (`codex-rs/state`: `threads`, `jobs`,
//! `stage1_outputs`), extended with `runs` and `usage` for spend accounting.
//!
//! Invariant: a migration is never edited once released; changes are new entries.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, TransactionBehavior};

use super::db_err;
use codex_free_core::Error;
use codex_free_core::Result;

/// The schema the threads/jobs/outputs tables start from (v1).
const V1: &str = r#"
CREATE TABLE threads (
    id              TEXT PRIMARY KEY,
    source          TEXT NOT NULL,
    path            TEXT NOT NULL,
    cwd             TEXT,
    title           TEXT,
    created_at      INTEGER,
    updated_at      INTEGER NOT NULL,
    is_subagent     INTEGER NOT NULL DEFAULT 0,
    is_ephemeral    INTEGER NOT NULL DEFAULT 0,
    memory_mode     TEXT NOT NULL DEFAULT 'enabled',
    first_seen_at   INTEGER NOT NULL,
    last_seen_at    INTEGER NOT NULL
);
CREATE INDEX threads_updated_at ON threads(updated_at DESC);

CREATE TABLE jobs (
    kind                    TEXT NOT NULL,
    job_key                 TEXT NOT NULL,
    status                  TEXT NOT NULL,
    worker_id               TEXT,
    ownership_token         TEXT,
    started_at              INTEGER,
    finished_at             INTEGER,
    lease_until             INTEGER,
    retry_at                INTEGER,
    retry_remaining         INTEGER NOT NULL,
    last_error              TEXT,
    input_watermark         INTEGER,
    last_success_watermark  INTEGER,
    PRIMARY KEY (kind, job_key)
);
CREATE INDEX jobs_kind_status ON jobs(kind, status, lease_until);

CREATE TABLE stage1_outputs (
    thread_id            TEXT PRIMARY KEY,
    source_updated_at    INTEGER NOT NULL,
    raw_memory           TEXT NOT NULL,
    rollout_summary      TEXT NOT NULL,
    rollout_slug         TEXT,
    generated_at         INTEGER NOT NULL,
    usage_count          INTEGER NOT NULL DEFAULT 0,
    last_usage           INTEGER,
    selected_for_phase2  INTEGER NOT NULL DEFAULT 0
);
"#;

/// Runs and per-request usage (v2).
const V2: &str = r#"
CREATE TABLE runs (
    id                   TEXT PRIMARY KEY,
    phase                TEXT NOT NULL,
    trigger              TEXT NOT NULL,
    model                TEXT,
    started_at           INTEGER NOT NULL,
    finished_at          INTEGER,
    claimed              INTEGER NOT NULL DEFAULT 0,
    with_output          INTEGER NOT NULL DEFAULT 0,
    no_output            INTEGER NOT NULL DEFAULT 0,
    failed               INTEGER NOT NULL DEFAULT 0,
    released             INTEGER NOT NULL DEFAULT 0,
    requests             INTEGER NOT NULL DEFAULT 0,
    input_tokens         INTEGER NOT NULL DEFAULT 0,
    cached_input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens        INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens     INTEGER NOT NULL DEFAULT 0,
    cost_usd             REAL,
    unpriced_requests    INTEGER NOT NULL DEFAULT 0,
    outcome              TEXT NOT NULL DEFAULT 'running',
    error                TEXT
);
CREATE INDEX runs_started_at ON runs(started_at DESC);

CREATE TABLE usage (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id               TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    phase                TEXT NOT NULL,
    request_no           INTEGER NOT NULL,
    thread_id            TEXT,
    model                TEXT NOT NULL,
    attempts             INTEGER NOT NULL DEFAULT 1,
    input_tokens         INTEGER NOT NULL DEFAULT 0,
    cached_input_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens   INTEGER NOT NULL DEFAULT 0,
    output_tokens        INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens     INTEGER NOT NULL DEFAULT 0,
    cost_usd             REAL,
    duration_ms          INTEGER NOT NULL,
    outcome              TEXT NOT NULL,
    error                TEXT,
    created_at           INTEGER NOT NULL
);
CREATE INDEX usage_created_at ON usage(created_at);
CREATE INDEX usage_run ON usage(run_id);
"#;

/// v3: the process that runs each run, so a later start can close the runs of a process
/// that died (`interrupted`) instead of showing them as running forever.
const V3: &str = r#"
ALTER TABLE runs ADD COLUMN pid INTEGER;
"#;

/// v4: the input watermark of the phase-2 job's last attempt, so a job that failed its
/// retries stays stopped until its input changes instead of retrying (and billing) forever;
/// and each thread's content fingerprint, so a transcript whose mtime moved without new
/// content (a `touch`, a copy) is not extracted and billed again; and which rollout cited
/// which memory, so a citation raises a usage count once however often its session is read.
const V4: &str = r#"
ALTER TABLE jobs ADD COLUMN attempt_watermark INTEGER;
ALTER TABLE threads ADD COLUMN content_hash TEXT;
CREATE TABLE citations (
    citing      TEXT NOT NULL,
    cited       TEXT NOT NULL,
    cited_at    INTEGER NOT NULL,
    PRIMARY KEY (citing, cited)
);
"#;

/// v5: the coding agents' own usage (Codex CLI, Claude Code, pi), one row per model request
/// (per Codex `token_count` delta), unique per agent and de-duplication key so a replayed
/// copy of a request (a side-chain, a resumed or forked session) is stored once; and one
/// read cursor per transcript so a grown file is read from where the last import stopped.
/// Rows outlive their transcript (agents delete old sessions; this is the history).
const V5: &str = r#"
CREATE TABLE agent_usage (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT,
    agent                TEXT NOT NULL,
    dedup_key            TEXT NOT NULL,
    session_id           TEXT NOT NULL,
    project              TEXT,
    model                TEXT NOT NULL,
    at_ms                INTEGER NOT NULL,
    input_tokens         INTEGER NOT NULL DEFAULT 0,
    cached_input_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens   INTEGER NOT NULL DEFAULT 0,
    output_tokens        INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens     INTEGER NOT NULL DEFAULT 0,
    cost_usd             REAL,
    provider_cost_usd    REAL,
    source_path          TEXT NOT NULL,
    imported_at          INTEGER NOT NULL,
    UNIQUE (agent, dedup_key)
);
CREATE INDEX agent_usage_at ON agent_usage(at_ms);
CREATE INDEX agent_usage_unpriced ON agent_usage(model) WHERE cost_usd IS NULL;

CREATE TABLE usage_cursors (
    path         TEXT PRIMARY KEY,
    agent        TEXT NOT NULL,
    offset       INTEGER NOT NULL,
    mtime_ms     INTEGER NOT NULL,
    prefix_hash  TEXT NOT NULL,
    state        TEXT NOT NULL,
    updated_at   INTEGER NOT NULL
);
"#;

/// v6: each request's receipt — the SHA-256 and size of the sealed bytes that left, and
/// its redactions by rule (a JSON object) — so Runs & costs can show what was sent.
const V6: &str = r#"
ALTER TABLE usage ADD COLUMN sent_sha256 TEXT;
ALTER TABLE usage ADD COLUMN sent_bytes INTEGER;
ALTER TABLE usage ADD COLUMN redactions TEXT;
"#;

/// v7: consolidation progress, the largest number of distinct threads one successful
/// consolidation took in (what V2's readiness compares with its threshold). One row; kept
/// when outputs are pruned, zeroed by a memory reset.
const V7: &str = r#"
CREATE TABLE consolidation_progress (
    singleton         INTEGER PRIMARY KEY CHECK (singleton = 1),
    max_thread_count  INTEGER NOT NULL DEFAULT 0
);
INSERT INTO consolidation_progress (singleton, max_thread_count) VALUES (1, 0);
"#;

/// v8: agent usage rows keep how many of their cache writes were 1-hour writes (Anthropic
/// bills them at 2x input against 1.25x for 5-minute ones), and whether the row was read
/// as a replayed copy (a Codex fork's history, timed before the fork started), so the
/// session that first recorded a request keeps it whichever file is imported first.
const V8: &str = r#"
ALTER TABLE agent_usage ADD COLUMN cache_write_1h_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agent_usage ADD COLUMN replayed INTEGER NOT NULL DEFAULT 0;
"#;

/// v9: the approval queue (`memories.approval`): each request held for the user's decision,
/// stored sealed (the exact bytes that would leave, never the unredacted text) with its
/// estimate and the session watermark it was built from; and the projects/agents the user
/// let through (`source` `*` = every agent of a project, "always allow").
const V9: &str = r#"
CREATE TABLE outgoing_queue (
    id                  TEXT PRIMARY KEY,
    phase               TEXT NOT NULL,
    thread_id           TEXT NOT NULL,
    source              TEXT NOT NULL,
    project             TEXT NOT NULL,
    model               TEXT NOT NULL,
    source_updated_at   INTEGER NOT NULL,
    sealed              BLOB NOT NULL,
    sha256              TEXT NOT NULL,
    bytes               INTEGER NOT NULL,
    redactions          TEXT NOT NULL,
    input_tokens        INTEGER NOT NULL,
    max_output_tokens   INTEGER,
    input_cost_usd      REAL,
    max_cost_usd        REAL,
    status              TEXT NOT NULL,
    reason              TEXT NOT NULL,
    created_at          INTEGER NOT NULL,
    decided_at          INTEGER,
    error               TEXT
);
CREATE INDEX outgoing_queue_thread ON outgoing_queue(thread_id, status);
CREATE TABLE outgoing_allowed (
    source      TEXT NOT NULL,
    project     TEXT NOT NULL,
    always      INTEGER NOT NULL DEFAULT 0,
    allowed_at  INTEGER NOT NULL,
    PRIMARY KEY (source, project)
);
"#;

/// Every migration, in order. Append only.
pub const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7, V8, V9];

/// The schema version this build writes.
pub const LATEST: u32 = MIGRATIONS.len() as u32;

/// The backup path used before upgrading `db` from version `from`.
pub fn backup_path(db: &Path, from: u32) -> PathBuf {
    let mut s = db.as_os_str().to_owned();
    s.push(format!(".before-v{from}.bak"));
    PathBuf::from(s)
}

fn user_version(conn: &Connection) -> Result<u32> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(db_err)
}

/// Bring `conn` to [`LATEST`]. `file` is the database path (for the pre-upgrade backup);
/// `None` for in-memory databases.
///
/// Errors: [`Error::Store`] when the database is newer than this build, a backup cannot
/// be written, or a migration fails (nothing of it is kept).
pub fn migrate(conn: &mut Connection, file: Option<&Path>) -> Result<u32> {
    migrate_to(conn, file, LATEST)
}

/// As [`migrate`], stopping at `target` (tests build older schemas with it).
pub fn migrate_to(conn: &mut Connection, file: Option<&Path>, target: u32) -> Result<u32> {
    let current = user_version(conn)?;
    if current > LATEST {
        return Err(Error::Store(format!(
            "state.sqlite has schema version {current}, newer than this build ({LATEST}); upgrade codex-free"
        )));
    }
    if current >= target {
        return Ok(current);
    }
    if current > 0
        && let Some(db) = file
    {
        let bak = backup_path(db, current);
        if !bak.exists() {
            conn.execute("VACUUM INTO ?1", [bak.to_string_lossy().as_ref()])
                .map_err(|e| {
                    Error::Store(format!("backing up {} before upgrade: {e}", db.display()))
                })?;
            tracing::info!(backup = %bak.display(), from = current, to = target, "backed up state.sqlite before schema upgrade");
        }
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(db_err)?;
    // Re-read under the write lock: another process may have migrated meanwhile.
    let current = user_version(&tx)?;
    for (i, sql) in MIGRATIONS
        .iter()
        .enumerate()
        .take(target as usize)
        .skip(current as usize)
    {
        tx.execute_batch(sql)
            .map_err(|e| Error::Store(format!("migration {} failed: {e}", i + 1)))?;
    }
    if current < target {
        tx.pragma_update(None, "user_version", target)
            .map_err(db_err)?;
    }
    tx.commit().map_err(db_err)?;
    Ok(target.max(current))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(conn: &Connection) -> Vec<String> {
        let mut st = conn.prepare("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name").unwrap();
        st.query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
    }

    /// Every table and column, in order: `table(col, col, ...)`.
    fn schema(c: &Connection) -> Vec<String> {
        tables(c)
            .into_iter()
            .map(|t| {
                let mut s = c.prepare(&format!("PRAGMA table_info({t})")).unwrap();
                let cols: Vec<String> = s
                    .query_map([], |r| r.get::<_, String>(1))
                    .unwrap()
                    .map(|r| r.unwrap())
                    .collect();
                format!("{t}({})", cols.join(", "))
            })
            .collect()
    }

    #[test]
    fn migrates_from_empty() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("state.sqlite");
        let mut c = Connection::open(&p).unwrap();
        assert_eq!(migrate(&mut c, Some(&p)).unwrap(), LATEST);
        assert_eq!(user_version(&c).unwrap(), LATEST);
        assert_eq!(
            tables(&c),
            [
                "agent_usage",
                "citations",
                "consolidation_progress",
                "jobs",
                "outgoing_allowed",
                "outgoing_queue",
                "runs",
                "stage1_outputs",
                "threads",
                "usage",
                "usage_cursors"
            ]
        );
        assert!(!backup_path(&p, 0).exists(), "a fresh file needs no backup");
        // Idempotent.
        assert_eq!(migrate(&mut c, Some(&p)).unwrap(), LATEST);
    }

    #[test]
    fn migrates_from_previous_version_with_backup_and_data_kept() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("state.sqlite");
        let mut c = Connection::open(&p).unwrap();
        assert_eq!(
            migrate_to(&mut c, Some(&p), LATEST - 1).unwrap(),
            LATEST - 1
        );
        c.execute(
            "INSERT INTO stage1_outputs (thread_id, source_updated_at, raw_memory, rollout_summary, generated_at) VALUES ('t1', 10, 'mem', 'sum', 11)",
            [],
        )
        .unwrap();
        drop(c);
        let mut c = Connection::open(&p).unwrap();
        assert_eq!(migrate(&mut c, Some(&p)).unwrap(), LATEST);
        let kept: String = c
            .query_row(
                "SELECT raw_memory FROM stage1_outputs WHERE thread_id='t1'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(kept, "mem");
        let bak = backup_path(&p, LATEST - 1);
        assert!(bak.exists(), "backup written before the upgrade");
        let b = Connection::open(&bak).unwrap();
        assert_eq!(user_version(&b).unwrap(), LATEST - 1);
        // The backup holds the previous schema exactly (not the upgraded one).
        let mut prev = Connection::open_in_memory().unwrap();
        migrate_to(&mut prev, None, LATEST - 1).unwrap();
        assert_eq!(schema(&b), schema(&prev));
        assert_ne!(schema(&b), schema(&c), "the upgrade changed nothing");
    }

    #[test]
    fn refuses_newer_schema() {
        let mut c = Connection::open_in_memory().unwrap();
        c.pragma_update(None, "user_version", LATEST + 1).unwrap();
        let e = migrate(&mut c, None).unwrap_err().to_string();
        assert!(e.contains("newer than this build"), "{e}");
    }

    #[test]
    fn failed_migration_keeps_previous_version() {
        let mut c = Connection::open_in_memory().unwrap();
        migrate_to(&mut c, None, 1).unwrap();
        // Sabotage: a table v2 wants to create already exists.
        c.execute_batch("CREATE TABLE runs (x INTEGER)").unwrap();
        assert!(migrate(&mut c, None).is_err());
        assert_eq!(user_version(&c).unwrap(), 1);
        assert!(
            !tables(&c).contains(&"usage".to_string()),
            "v2 rolled back as a whole"
        );
    }
}
