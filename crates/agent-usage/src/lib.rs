//! What the coding agents themselves cost: their transcripts' token usage imported into
//! `state.sqlite` (`store::agent_usage`), priced with the pipeline's own table
//! ([`codex_free_models::prices`], `memories.prices` overrides first), and reported per
//! day / week / month, session and 5-hour block ([`report`]), for the `usage` CLI
//! ([`cli`]) and the UI's Usage page.
//!
//! The import is incremental: each transcript has a cursor (bytes consumed, mtime, a hash
//! of the consumed prefix's first and last 4 KiB). An unchanged file is not opened; a grown
//! one is read from its cursor; a rewritten one (shorter, or another prefix) is read again
//! from the start, its rows de-duplicated against the stored ones. Rows stay when a
//! transcript is deleted. Only complete lines (ending in `\n`) are consumed, so a line
//! being written is read next time.
//!
//! Invariant: transcripts are opened read-only; a request is stored once however many
//! copies of it exist; a model without a price gets a NULL cost (never $0), and is priced
//! by a later import once `memories.prices` knows it.

pub mod bench;
pub mod cli;
pub mod parse;
pub mod report;
pub mod zone;

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::{Instant, SystemTime};

use serde::Serialize;
use sha2::{Digest, Sha256};

use codex_free_core::Result;
use codex_free_core::config::PriceOverride;
use codex_free_models::ModelRef;
use codex_free_models::prices::{ModelPrice, PriceTable};
use codex_free_store::{AgentUsageRow, Reread, Store, TokenCounts, UsageCursor};
use codex_free_transcripts::discover::{Candidate, SourceRoots, discover_usage};
use codex_free_transcripts::rollout::Source;

use parse::{Carry, LineStats, Parsed};

/// The agents whose usage is imported.
pub const AGENTS: [Source; 3] = [Source::Codex, Source::Claude, Source::Pi];

/// Bytes hashed at each end of a consumed prefix to notice a rewrite (4 KiB: the first
/// line of every agent's transcript differs per session, the tail catches an edit near the
/// cursor; hashing everything would make every grown file cost a full re-read).
const HASH_WINDOW: u64 = 4096;

/// What one import did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ImportReport {
    /// Transcripts found.
    pub files: usize,
    /// Transcripts opened (new, grown or rewritten).
    pub files_read: usize,
    /// Of those, read again from the start because they were rewritten.
    pub files_rewritten: usize,
    /// Transcripts that could not be read (skipped, logged).
    pub files_failed: usize,
    /// Bytes read.
    pub bytes_read: u64,
    /// Requests stored (new, or a fuller copy of a stored one).
    pub rows_written: usize,
    /// Requests already stored (duplicates, replayed copies).
    pub duplicates: usize,
    /// Earlier unpriced rows priced now (a price was added).
    pub repriced: usize,
    /// Usage lines read this time with invalid UTF-8, decoded lossily and counted.
    pub lines_repaired: usize,
    /// Usage lines read this time that were not JSON (not counted).
    pub lines_skipped: usize,
    /// The same two counts per agent (`codex`, `claude`, `pi`), only for agents with a
    /// repaired or skipped line.
    pub lines_by_agent: BTreeMap<String, LineStats>,
    /// One summary per agent with a transcript found: files found and read, requests
    /// read, lines repaired and skipped (the CLI prints one line per agent from it).
    pub by_agent: BTreeMap<String, SourceSummary>,
    /// Wall time, milliseconds.
    pub duration_ms: u64,
}

/// What one import found and did for one agent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SourceSummary {
    /// Transcripts found.
    pub files: usize,
    /// Of those, opened this time (new, grown or rewritten).
    pub files_read: usize,
    /// Requests read this time (before de-duplication).
    pub requests: usize,
    /// Usage lines with invalid UTF-8, decoded lossily and counted.
    pub lines_repaired: usize,
    /// Usage lines that were not JSON (not counted).
    pub lines_skipped: usize,
}

/// Prices for the import: the bundled table plus `memories.prices`, each model looked up
/// once.
pub struct Pricer<'a> {
    table: &'a PriceTable,
    overrides: &'a BTreeMap<String, PriceOverride>,
    cache: HashMap<String, Option<ModelPrice>>,
}

impl<'a> Pricer<'a> {
    /// Over `table` with the user's `overrides` (keyed `provider/model-id`).
    pub fn new(table: &'a PriceTable, overrides: &'a BTreeMap<String, PriceOverride>) -> Self {
        Self {
            table,
            overrides,
            cache: HashMap::new(),
        }
    }

    /// The price of `model` (`provider/model-id`), `None` when unknown.
    pub fn price(&mut self, model: &str) -> Option<ModelPrice> {
        if let Some(p) = self.cache.get(model) {
            return p.clone();
        }
        let p = ModelRef::parse(model)
            .ok()
            .and_then(|m| self.table.lookup(&m, self.overrides).pricing);
        self.cache.insert(model.to_string(), p.clone());
        p
    }

    /// USD of `row` at `model`'s price (1-hour cache writes and long-context tiers
    /// applied), `None` when the price is unknown.
    pub fn cost(&mut self, model: &str, tokens: &TokenCounts, cache_write_1h: i64) -> Option<f64> {
        let p = self.price(model)?;
        let u = codex_free_models::TokenUsage::from_counts(tokens);
        Some(p.cost(&u, u64::try_from(cache_write_1h).unwrap_or(0)))
    }
}

fn mtime_ms(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Hash of the first and last [`HASH_WINDOW`] bytes of `file`'s first `len` bytes.
fn prefix_hash(file: &mut File, len: u64) -> std::io::Result<String> {
    let mut h = Sha256::new();
    h.update(len.to_le_bytes());
    let head = len.min(HASH_WINDOW);
    let mut buf = vec![0u8; head as usize];
    file.seek(SeekFrom::Start(0))?;
    file.read_exact(&mut buf)?;
    h.update(&buf);
    if len > HASH_WINDOW {
        let start = len.saturating_sub(HASH_WINDOW).max(HASH_WINDOW);
        let mut tail = vec![0u8; (len - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut tail)?;
        h.update(&tail);
    }
    Ok(hex::encode(&h.finalize()[..16]))
}

/// The result of reading one transcript.
struct FileRead {
    parsed: Vec<Parsed>,
    lines: LineStats,
    cursor: UsageCursor,
    bytes: u64,
    rewritten: bool,
}

fn read_one(c: &Candidate, old: Option<&UsageCursor>) -> std::io::Result<FileRead> {
    let mut f = File::open(&c.path)?;
    let md = f.metadata()?;
    let size = md.len();
    let mtime = mtime_ms(md.modified().unwrap_or(SystemTime::UNIX_EPOCH));
    let path = c.path.to_string_lossy().into_owned();
    let mut rewritten = false;
    let (start, mut carry) = match old {
        Some(k) if k.offset <= size && k.offset > 0 => {
            if prefix_hash(&mut f, k.offset)? == k.prefix_hash {
                (
                    k.offset,
                    serde_json::from_str::<Carry>(&k.state).unwrap_or_default(),
                )
            } else {
                rewritten = true;
                (0, Carry::default())
            }
        }
        Some(k) if k.offset > size => {
            rewritten = true;
            (0, Carry::default())
        }
        _ => (0, Carry::default()),
    };
    f.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::with_capacity((size - start) as usize);
    (&mut f).take(size - start).read_to_end(&mut buf)?;
    let complete = buf
        .iter()
        .rposition(|b| *b == b'\n')
        .map(|p| p + 1)
        .unwrap_or(0);
    let stem = c
        .path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut parsed = Vec::new();
    let lines = parse::parse_lines(c.source, &buf[..complete], &mut carry, &stem, &mut parsed);
    let offset = start + complete as u64;
    let prefix_hash = if offset > 0 {
        prefix_hash(&mut f, offset)?
    } else {
        String::new()
    };
    Ok(FileRead {
        parsed,
        lines,
        cursor: UsageCursor {
            path,
            agent: c.source.as_str().to_string(),
            offset,
            // An incomplete last line: keep the file "changed" so the next import looks again.
            mtime_ms: if offset == size { mtime } else { -1 },
            prefix_hash,
            state: serde_json::to_string(&carry).unwrap_or_else(|_| "{}".into()),
        },
        bytes: size - start,
        rewritten,
    })
}

/// Import every transcript of `agents` under `roots` into `store`, pricing with `pricer`.
/// Files are read on up to as many threads as the machine has cores; everything read is
/// stored in one transaction.
///
/// Errors: [`codex_free_core::Error::Store`] when the database fails (nothing of this
/// import is kept). An unreadable transcript is skipped and counted in
/// [`ImportReport::files_failed`].
pub fn import(
    store: &Store,
    roots: &SourceRoots,
    agents: &[Source],
    pricer: &mut Pricer<'_>,
) -> Result<ImportReport> {
    let t0 = Instant::now();
    let found = discover_usage(roots, agents);
    let cursors = store.usage_cursors()?;
    let mut report = ImportReport {
        files: found.len(),
        ..Default::default()
    };
    let todo: Vec<&Candidate> = found
        .iter()
        .filter(|c| {
            let key = c.path.to_string_lossy();
            !cursors
                .get(key.as_ref())
                .is_some_and(|k| k.offset == c.size && k.mtime_ms == mtime_ms(c.mtime))
        })
        .collect();
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8)
        .min(todo.len().max(1));
    let chunk = todo.len().div_ceil(threads).max(1);
    let results: Vec<(std::path::PathBuf, std::io::Result<FileRead>)> = std::thread::scope(|sc| {
        let handles: Vec<_> = todo
            .chunks(chunk)
            .map(|part| {
                let cursors = &cursors;
                sc.spawn(move || {
                    part.iter()
                        .map(|c| {
                            let old = cursors.get(c.path.to_string_lossy().as_ref());
                            (c.path.clone(), read_one(c, old))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    for c in &found {
        report
            .by_agent
            .entry(c.source.as_str().to_string())
            .or_default()
            .files += 1;
    }
    let mut rows = Vec::new();
    let mut new_cursors = Vec::new();
    let mut reread = Vec::new();
    for (path, r) in results {
        match r {
            Ok(fr) => {
                report.files_read += 1;
                report.files_rewritten += usize::from(fr.rewritten);
                report.bytes_read += fr.bytes;
                let agent = fr.cursor.agent.clone();
                let sum = report.by_agent.entry(agent.clone()).or_default();
                sum.files_read += 1;
                sum.requests += fr.parsed.len();
                sum.lines_repaired += fr.lines.repaired;
                sum.lines_skipped += fr.lines.skipped;
                if fr.rewritten {
                    let mut sessions: Vec<String> =
                        fr.parsed.iter().map(|p| p.session.clone()).collect();
                    sessions.sort();
                    sessions.dedup();
                    reread.push(Reread {
                        path: fr.cursor.path.clone(),
                        sessions,
                    });
                }
                if !fr.lines.is_clean() {
                    tracing::warn!(
                        path = %path.display(),
                        repaired = fr.lines.repaired,
                        skipped = fr.lines.skipped,
                        "usage import: lines with invalid UTF-8 decoded lossily (repaired) or not JSON (skipped)"
                    );
                    report.lines_repaired += fr.lines.repaired;
                    report.lines_skipped += fr.lines.skipped;
                    report
                        .lines_by_agent
                        .entry(agent.clone())
                        .or_default()
                        .add(fr.lines);
                }
                for p in fr.parsed {
                    let tokens = TokenCounts {
                        input_tokens: p.input,
                        cached_input_tokens: p.cached,
                        cache_write_tokens: p.cache_write,
                        output_tokens: p.output,
                        reasoning_tokens: p.reasoning,
                    };
                    let cost = pricer.cost(&p.model, &tokens, p.cache_write_1h);
                    rows.push(AgentUsageRow {
                        agent: agent.clone(),
                        dedup_key: p.key,
                        session_id: p.session,
                        project: p.project,
                        model: p.model,
                        at_ms: p.at_ms,
                        tokens,
                        cost_usd: cost,
                        provider_cost_usd: p.provider_cost,
                        source_path: fr.cursor.path.clone(),
                        cache_write_1h_tokens: p.cache_write_1h,
                        replayed: p.replayed,
                    });
                }
                new_cursors.push(fr.cursor);
            }
            Err(e) => {
                report.files_failed += 1;
                tracing::warn!(path = %path.display(), error = %e, "usage import: transcript unreadable, skipped");
            }
        }
    }
    if !rows.is_empty() || !new_cursors.is_empty() {
        let w = store.apply_usage_import(&rows, &new_cursors, &reread)?;
        report.rows_written = w.written;
        report.duplicates = w.duplicates;
    }
    for model in store.unpriced_agent_models()? {
        if let Some(p) = pricer.price(&model) {
            report.repriced += store.reprice_unpriced(&model, |r| {
                let u = codex_free_models::TokenUsage::from_counts(&r.tokens);
                p.cost(&u, u64::try_from(r.cache_write_1h_tokens).unwrap_or(0))
            })?;
        }
    }
    report.duration_ms = t0.elapsed().as_millis() as u64;
    Ok(report)
}

/// [`import`] of every agent under the environment's agent homes (`CODEX_HOME`,
/// `CLAUDE_CONFIG_DIR`, `PI_CODING_AGENT_DIR`), priced with the bundled table and
/// `prices` (`memories.prices`).
///
/// Errors: as [`import`].
pub fn import_from_env(
    store: &Store,
    state_home: &Path,
    prices: &BTreeMap<String, PriceOverride>,
) -> Result<ImportReport> {
    let roots = SourceRoots::from_env(state_home);
    let mut pricer = Pricer::new(PriceTable::bundled(), prices);
    import(store, &roots, &AGENTS, &mut pricer)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;

    use super::*;
    use codex_free_store::ManualClock;

    fn fixture(name: &str) -> Vec<u8> {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/usage/codex/sessions/2026/11/29")
            .join(name);
        std::fs::read(p).unwrap()
    }

    const WEBAPP: &str = "rollout-2026-11-29T12-52-11-01a2275c-efdc-77a0-96ee-02aaa639a804.jsonl";
    const BROKEN: &str = "rollout-2026-11-29T12-52-10-01a2275c-eb1b-70f2-b7d6-f53c198a2181.jsonl";

    struct T {
        _d: tempfile::TempDir,
        roots: SourceRoots,
        file: PathBuf,
        store: Store,
    }

    impl T {
        fn new() -> T {
            let d = tempfile::tempdir().unwrap();
            let dir = d.path().join("codex/sessions/2026/11/29");
            std::fs::create_dir_all(&dir).unwrap();
            T {
                roots: SourceRoots {
                    codex_home: Some(d.path().join("codex")),
                    ..Default::default()
                },
                file: dir.join("rollout-x.jsonl"),
                store: Store::open_in_memory(Arc::new(ManualClock::new(1))).unwrap(),
                _d: d,
            }
        }
        fn import(&self) -> ImportReport {
            let none = BTreeMap::new();
            import(
                &self.store,
                &self.roots,
                &AGENTS,
                &mut Pricer::new(PriceTable::bundled(), &none),
            )
            .unwrap()
        }
        fn rows(&self) -> usize {
            self.store.agent_usage_rows(None, None).unwrap().len()
        }
    }

    /// Byte offset just after the `n`-th newline.
    fn after_line(b: &[u8], n: usize) -> usize {
        b.iter()
            .enumerate()
            .filter(|(_, c)| **c == b'\n')
            .nth(n - 1)
            .unwrap()
            .0
            + 1
    }

    #[test]
    fn a_grown_file_is_read_from_its_cursor_and_a_half_line_waits() {
        let t = T::new();
        let full = fixture(WEBAPP);
        // Everything up to the first turn's end (two token_count events of four).
        let lines = full.iter().filter(|c| **c == b'\n').count();
        let cut = after_line(&full, lines / 2);
        std::fs::write(&t.file, &full[..cut]).unwrap();
        let r1 = t.import();
        let first = t.rows();
        assert!((1..4).contains(&first), "{first}");
        assert_eq!(r1.bytes_read, cut as u64);
        // Half of the next line: not consumed yet.
        let half = cut + (after_line(&full, lines / 2 + 1) - cut) / 2;
        std::fs::write(&t.file, &full[..half]).unwrap();
        t.import();
        // The rest: read from the cursor only, only the new rows.
        std::fs::write(&t.file, &full).unwrap();
        let r3 = t.import();
        assert_eq!(r3.files_read, 1);
        assert_eq!(r3.files_rewritten, 0);
        assert_eq!(r3.bytes_read, (full.len() - cut) as u64);
        assert_eq!(t.rows(), 4);
        assert_eq!(r3.rows_written, 4 - first);
        assert_eq!(r3.duplicates, 0);
        // Unchanged: not opened.
        let r4 = t.import();
        assert_eq!((r4.files_read, r4.rows_written), (0, 0));
        // Same as importing the whole file at once.
        let whole = T::new();
        std::fs::write(&whole.file, &full).unwrap();
        whole.import();
        let key = |s: &Store| {
            s.agent_usage_rows(None, None)
                .unwrap()
                .into_iter()
                .map(|r| (r.dedup_key, r.tokens.input_tokens, r.tokens.output_tokens))
                .collect::<Vec<_>>()
        };
        assert_eq!(key(&t.store), key(&whole.store));
    }

    #[test]
    fn a_rewritten_file_is_read_again_and_deleted_transcripts_keep_their_rows() {
        let t = T::new();
        std::fs::write(&t.file, fixture(BROKEN)).unwrap();
        t.import();
        assert_eq!(t.rows(), 3);
        // Rewritten in place with another session (longer, different prefix).
        std::fs::write(&t.file, fixture(WEBAPP)).unwrap();
        let r = t.import();
        assert_eq!((r.files_read, r.files_rewritten), (1, 1));
        assert_eq!(r.rows_written, 4, "read from the start");
        assert_eq!(t.rows(), 7, "the earlier rows stay");
        // Read again unchanged from the start (rewritten to the same bytes): no double count.
        std::fs::write(&t.file, fixture(BROKEN)).unwrap();
        t.import();
        assert_eq!(t.rows(), 7);
        // The agent deletes its transcript: the history stays.
        std::fs::remove_file(&t.file).unwrap();
        let r = t.import();
        assert_eq!(r.files, 0);
        assert_eq!(t.rows(), 7);
    }

    #[test]
    fn the_transcript_is_not_modified() {
        let t = T::new();
        let bytes = fixture(WEBAPP);
        std::fs::write(&t.file, &bytes).unwrap();
        let before = std::fs::metadata(&t.file).unwrap().modified().unwrap();
        t.import();
        assert_eq!(std::fs::read(&t.file).unwrap(), bytes);
        assert_eq!(
            std::fs::metadata(&t.file).unwrap().modified().unwrap(),
            before
        );
    }

    fn rows_of(s: &Store) -> Vec<(String, i64, i64, i64)> {
        s.agent_usage_rows(None, None)
            .unwrap()
            .into_iter()
            .map(|r| {
                (
                    r.session_id,
                    r.at_ms,
                    r.tokens.input_tokens,
                    r.tokens.output_tokens,
                )
            })
            .collect()
    }

    /// A request whose numbers are edited in place (the file rewritten): its row is
    /// replaced, not joined by a second one; the result equals a fresh import of the
    /// edited file.
    #[test]
    fn an_edited_request_replaces_its_row() {
        let t = T::new();
        let full = String::from_utf8(fixture(WEBAPP)).unwrap();
        std::fs::write(&t.file, &full).unwrap();
        t.import();
        assert_eq!(t.rows(), 4);
        // The second request's output 73 -> 1073 (its last and the running totals).
        let edited: String = full
            .split_inclusive('\n')
            .map(|l| {
                if l.contains(r#""token_count""#) && l.contains(r#""output_tokens":178"#) {
                    l.replace(r#""output_tokens":178"#, r#""output_tokens":1178"#)
                        .replace(r#""output_tokens":73,"#, r#""output_tokens":1073,"#)
                } else {
                    l.to_string()
                }
            })
            .collect();
        assert_ne!(edited, full);
        std::fs::write(&t.file, &edited).unwrap();
        let r = t.import();
        assert_eq!(r.files_rewritten, 1);
        let fresh = T::new();
        std::fs::write(&fresh.file, &edited).unwrap();
        fresh.import();
        assert_eq!(rows_of(&t.store), rows_of(&fresh.store));
        assert_eq!(t.rows(), 4);
        let out: i64 = rows_of(&t.store).iter().map(|r| r.3).sum();
        let fresh_out: i64 = rows_of(&fresh.store).iter().map(|r| r.3).sum();
        assert_eq!(out, fresh_out);
    }

    /// A Codex fork replays the original's history (its lines, with their times) after its
    /// own `session_meta`. Whichever file is imported first, the original keeps its
    /// requests and the fork gets only its new turn.
    #[test]
    fn a_fork_leaves_the_original_its_rows() {
        let orig = String::from_utf8(fixture(WEBAPP)).unwrap();
        let meta = r#"{"timestamp":"2026-11-29T13:00:00.000Z","type":"session_meta","payload":{"id":"fork-1","timestamp":"2026-11-29T13:00:00.000Z","cwd":"/home/dev/work/webapp","model_provider":"mock"}}"#;
        let turn = r#"{"timestamp":"2026-11-29T13:00:09.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":90000,"cached_input_tokens":0,"output_tokens":900,"reasoning_output_tokens":0,"total_tokens":90900},"last_token_usage":{"input_tokens":500,"cached_input_tokens":0,"output_tokens":5,"reasoning_output_tokens":0,"total_tokens":505}}}}"#;
        let fork = format!("{meta}\n{orig}{turn}\n");
        let sessions = |s: &Store| {
            let rows = s.agent_usage_rows(None, None).unwrap();
            let mut m: BTreeMap<String, usize> = BTreeMap::new();
            for r in rows {
                *m.entry(r.session_id).or_default() += 1;
            }
            m.into_iter().collect::<Vec<_>>()
        };
        let want = vec![
            ("01a2275c-efdc-77a0-96ee-02aaa639a804".to_string(), 4),
            ("fork-1".to_string(), 1),
        ];
        // The fork read first (the original appears later), then both.
        let t = T::new();
        let fork_path = t
            .file
            .with_file_name("rollout-2026-11-29T13-00-00-fork-1.jsonl");
        std::fs::write(&fork_path, &fork).unwrap();
        t.import();
        assert_eq!(
            t.rows(),
            5,
            "without the original, the fork holds the history"
        );
        std::fs::write(&t.file, &orig).unwrap();
        t.import();
        assert_eq!(sessions(&t.store), want);
        // Both in one import, the fork's file first by name.
        let t = T::new();
        std::fs::write(t.file.with_file_name("rollout-0-fork.jsonl"), &fork).unwrap();
        std::fs::write(&t.file, &orig).unwrap();
        t.import();
        assert_eq!(sessions(&t.store), want);
    }

    /// A Codex session is found by its first line (`session_meta`), whatever its file is
    /// called; another `.jsonl` in the tree is not taken for one.
    #[test]
    fn codex_sessions_are_found_by_content() {
        let t = T::new();
        let dir = t.file.parent().unwrap();
        std::fs::write(dir.join("01a2275c-efdc-copied.jsonl"), fixture(WEBAPP)).unwrap();
        std::fs::write(
            dir.join("notes.jsonl"),
            r#"{"type":"note","text":"\"type\":\"token_count\""}"#.to_string() + "\n",
        )
        .unwrap();
        let r = t.import();
        assert_eq!((r.files, t.rows()), (1, 4));
    }
}
