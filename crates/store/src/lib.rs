//! `state.sqlite`: the pipeline's shared database (threads seen, phase-1 jobs,
//! stage-1 outputs, runs and per-request usage, the coding agents' own usage). Several processes (the tray app, each
//! `serve --stdio`, a `memories run`) open the same file; every job is claimed through
//! SQLite so no two of them do the same work.
//!
//! Opening applies the numbered, append-only migrations in [`migrations`] inside one
//! `BEGIN IMMEDIATE` transaction, tracked by `PRAGMA user_version`, after copying the
//! file to `state.sqlite.before-v<N>.bak` (`VACUUM INTO`) when an existing database is
//! upgraded. Connections use WAL and a busy timeout ([`BUSY_TIMEOUT`]).
//!
//! Time comes from an injectable [`Clock`] (unix seconds) so leases, backoff and month
//! boundaries are testable.
//!
//! Invariant: `rusqlite` is imported only in this module tree; every write that must be
//! all-or-nothing (claim, success + output, reset) is one transaction; a job row is only
//! changed by the holder of its current `ownership_token` (or after its lease expired).

pub mod agent_usage;
pub mod fts;
pub mod migrations;
pub mod outgoing;
pub mod phase2;
pub mod stage1;
pub mod usage;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::Connection;

use codex_free_core::Error;
use codex_free_core::Result;

pub use agent_usage::{AgentUsageRow, Reread, UsageCursor, UsageWrite};
pub use outgoing::{AllowedProject, NewQueued, QueuedRequest};
pub use stage1::{
    ClaimOutcome, ClaimParams, ExcludedThread, JobCounts, SourceCounts, Stage1Claim, Stage1Output,
    Stage1OutputInput, ThreadRow, ThreadUpsert,
};
pub use usage::{RunRow, RunSummary, Spend, TokenCounts, UsageRow};

/// File name of the database inside the state home.
pub const DB_FILE: &str = "state.sqlite";

/// File name of the V2 memory pipeline's own database inside the state home: its threads,
/// jobs, outputs, runs and usage rows, never shared with V1's [`DB_FILE`].
pub const DB_FILE_V2: &str = "state_v2.sqlite";

/// How long a connection waits for another process's write lock before failing (5 s).
/// Claims are short transactions, so contention resolves well within this.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A source of the current time in unix seconds (UTC).
pub trait Clock: Send + Sync {
    /// Seconds since the unix epoch.
    fn now(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> i64 {
        chrono::Utc::now().timestamp()
    }
}

/// A settable clock for tests: starts at the given unix second and moves only when told.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock reading `now` (unix seconds).
    pub fn new(now: i64) -> Self {
        Self(AtomicI64::new(now))
    }
    /// Move the clock by `secs` (may be negative).
    pub fn advance(&self, secs: i64) {
        self.0.fetch_add(secs, Ordering::SeqCst);
    }
    /// Set the clock to `now` (unix seconds).
    pub fn set(&self, now: i64) {
        self.0.store(now, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// A handle on `state.sqlite`: one connection behind a mutex, plus the clock. Cheap to
/// clone (shared). Methods are synchronous and short; async callers run them through
/// `tokio::task::spawn_blocking` (see `pipeline::phase1`).
#[derive(Clone)]
pub struct Store {
    conn: Arc<Mutex<Connection>>,
    clock: Arc<dyn Clock>,
    path: Option<PathBuf>,
}

/// Every row of `st` run with `params`, each read by `f`; a failure of the query or of any
/// row is an [`Error::Store`].
pub(crate) fn collect_rows<T, P: rusqlite::Params>(
    st: &mut rusqlite::Statement<'_>,
    params: P,
    f: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>> {
    st.query_map(params, f)
        .map_err(db_err)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(db_err)
}

pub(crate) fn db_err(e: rusqlite::Error) -> Error {
    Error::Store(e.to_string())
}

impl Store {
    /// Open (creating if needed) the database at `path`, configure WAL + busy timeout, back
    /// the file up if its schema is older than [`migrations::LATEST`], and migrate.
    ///
    /// Errors: [`Error::Store`] when the file cannot be opened or a migration fails (the
    /// transaction rolls back, the file keeps its previous version); [`Error::Store`] also
    /// when the file's version is newer than this build knows (never downgraded).
    pub fn open(path: &Path, clock: Arc<dyn Clock>) -> Result<Store> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        }
        let mut conn = Connection::open(path)
            .map_err(|e| Error::Store(format!("opening {}: {e}", path.display())))?;
        configure(&conn, true)?;
        migrations::migrate(&mut conn, Some(path))?;
        Ok(Store {
            conn: Arc::new(Mutex::new(conn)),
            clock,
            path: Some(path.to_path_buf()),
        })
    }

    /// Open `<home>/state.sqlite` with the system clock.
    pub fn open_in_home(home: &Path) -> Result<Store> {
        Self::open(&home.join(DB_FILE), Arc::new(SystemClock))
    }

    /// The V2 pipeline's database in `home` ([`DB_FILE_V2`]).
    ///
    /// Errors: as [`Store::open`].
    pub fn open_v2_in_home(home: &Path) -> Result<Store> {
        Self::open(&home.join(DB_FILE_V2), Arc::new(SystemClock))
    }

    /// A private in-memory database (tests, benchmarks), fully migrated.
    pub fn open_in_memory(clock: Arc<dyn Clock>) -> Result<Store> {
        let mut conn = Connection::open_in_memory().map_err(db_err)?;
        configure(&conn, false)?;
        migrations::migrate(&mut conn, None)?;
        Ok(Store {
            conn: Arc::new(Mutex::new(conn)),
            clock,
            path: None,
        })
    }

    /// The file behind this store (`None` in memory).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The clock this store reads (to open a sibling database on the same time).
    pub fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }

    /// The current time from this store's clock (unix seconds).
    pub fn now(&self) -> i64 {
        self.clock.now()
    }

    /// A consistent copy of the whole database at `path` (`VACUUM INTO`; `path` must not
    /// exist): what a dry run works on so the real file is not touched.
    ///
    /// Errors: [`Error::Store`] when the copy cannot be written.
    pub fn copy_to(&self, path: &Path) -> Result<()> {
        let c = self.conn();
        c.execute("VACUUM INTO ?1", [path.to_string_lossy().as_ref()])
            .map_err(|e| {
                Error::Store(format!("copying the database to {}: {e}", path.display()))
            })?;
        Ok(())
    }

    /// The schema version (`PRAGMA user_version`).
    pub fn schema_version(&self) -> Result<u32> {
        let c = self.conn();
        c.query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(db_err)
    }

    pub(crate) fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn configure(conn: &Connection, wal: bool) -> Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT).map_err(db_err)?;
    if wal {
        // `journal_mode` returns a row; read it so the statement runs.
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(db_err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(mode, "state.sqlite is not in WAL mode");
        }
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(db_err)?;
    }
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(db_err)?;
    Ok(())
}
