//! The coding agents' own usage (Codex CLI, Claude Code, pi): one row per model request
//! (per Codex `token_count` delta) and one read cursor per transcript. The pipeline parses
//! the transcripts (`pipeline::agent_usage`); this module only stores and reads.
//!
//! Token convention (the same as the pipeline's `usage` table): `input_tokens` counts every
//! input token, cached reads and cache writes included; `output_tokens` counts reasoning.
//! Times are Unix milliseconds (UTC); money is USD.
//!
//! Invariants: a row is unique per `(agent, dedup_key)`, so a replayed copy of a request
//! is stored once, and a later copy replaces an earlier one's tokens only when it carries
//! more (Claude Code writes one API message over several lines, the last one complete); a
//! copy read as replayed history ([`AgentUsageRow::replayed`]) never takes a row from the
//! session that recorded it, and that session takes back a row a replayed copy stored
//! first; a transcript read again after a rewrite replaces the rows it gave for the same
//! sessions (an edited request is not counted twice);
//! a cost is NULL when the model's price is unknown, never 0; rows are never deleted when
//! their transcript disappears (they are the history).

use std::collections::HashMap;

use rusqlite::params;
use serde::Serialize;

use super::{Store, TokenCounts, collect_rows, db_err};
use codex_free_core::Result;

/// One model request of a coding agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AgentUsageRow {
    /// `codex`, `claude`, `pi` (or `pipeline` for this app's own requests when read back
    /// through [`Store::pipeline_usage_rows`]).
    pub agent: String,
    /// What makes the request unique across copies of it (message id + request id, pi
    /// entry id + time, Codex event time + cumulative totals).
    pub dedup_key: String,
    /// The agent's session id.
    pub session_id: String,
    /// The session's working directory, when recorded.
    pub project: Option<String>,
    /// `provider/model-id` as priced (e.g. `openai/gpt-5`, `anthropic/claude-sonnet-4-5`).
    pub model: String,
    /// When the request was recorded, Unix ms.
    pub at_ms: i64,
    /// Its tokens (flattened into the row's JSON).
    #[serde(flatten)]
    pub tokens: TokenCounts,
    /// Of `tokens.cache_write_tokens`, 1-hour cache writes (Claude Code's
    /// `cache_creation.ephemeral_1h_input_tokens`); the rest are 5-minute writes.
    pub cache_write_1h_tokens: i64,
    /// Read as a replayed copy of another session's history (a Codex fork's lines timed
    /// before the fork started); such a row yields to the session that recorded it.
    pub replayed: bool,
    /// USD from the price table; `None` when the model's price is unknown.
    pub cost_usd: Option<f64>,
    /// USD as the agent itself recorded it (pi's `cost.total`), when it does.
    pub provider_cost_usd: Option<f64>,
    /// The transcript the row was first read from.
    pub source_path: String,
}

/// Where the last import stopped in one transcript.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UsageCursor {
    /// Absolute path of the transcript.
    pub path: String,
    /// `codex`, `claude` or `pi`.
    pub agent: String,
    /// Bytes consumed: the end of the last complete line read.
    pub offset: u64,
    /// The file's modification time at that read, Unix ms.
    pub mtime_ms: i64,
    /// Hash of the consumed prefix's first and last bytes; a different value means the
    /// file was rewritten and is read again from the start.
    pub prefix_hash: String,
    /// The parser's carry-over state as JSON (model, session, Codex running totals).
    pub state: String,
}

/// What [`Store::apply_usage_import`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct UsageWrite {
    /// Rows inserted or replaced by a more complete copy.
    pub written: usize,
    /// Rows already stored (a duplicate or a replayed copy), left as they were.
    pub duplicates: usize,
}

/// A transcript read again from the start after a rewrite: its stored rows for
/// `sessions` are replaced by what the new read gives (see [`Store::apply_usage_import`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reread {
    /// The transcript's path (`source_path` of its rows).
    pub path: String,
    /// The sessions the new read found in it.
    pub sessions: Vec<String>,
}

const COLS: &str = "agent, dedup_key, session_id, project, model, at_ms, input_tokens, cached_input_tokens, cache_write_tokens, output_tokens, reasoning_tokens, cost_usd, provider_cost_usd, source_path, cache_write_1h_tokens, replayed";

fn row_from(r: &rusqlite::Row<'_>) -> rusqlite::Result<AgentUsageRow> {
    row_from_at(r, 0)
}

/// A row from the [`COLS`] columns starting at column `o`.
fn row_from_at(r: &rusqlite::Row<'_>, o: usize) -> rusqlite::Result<AgentUsageRow> {
    Ok(AgentUsageRow {
        agent: r.get(o)?,
        dedup_key: r.get(o + 1)?,
        session_id: r.get(o + 2)?,
        project: r.get(o + 3)?,
        model: r.get(o + 4)?,
        at_ms: r.get(o + 5)?,
        tokens: TokenCounts::from_row(r, o + 6)?,
        cost_usd: r.get(o + 11)?,
        provider_cost_usd: r.get(o + 12)?,
        source_path: r.get(o + 13)?,
        cache_write_1h_tokens: r.get(o + 14)?,
        replayed: r.get(o + 15)?,
    })
}

impl Store {
    /// Every transcript cursor, by path.
    ///
    /// Errors: [`codex_free_core::Error::Store`] on database failure.
    pub fn usage_cursors(&self) -> Result<HashMap<String, UsageCursor>> {
        let c = self.conn();
        let mut st = c
            .prepare("SELECT path, agent, offset, mtime_ms, prefix_hash, state FROM usage_cursors")
            .map_err(db_err)?;
        let rows = collect_rows(&mut st, [], |r| {
            Ok(UsageCursor {
                path: r.get(0)?,
                agent: r.get(1)?,
                offset: r.get::<_, i64>(2)?.max(0) as u64,
                mtime_ms: r.get(3)?,
                prefix_hash: r.get(4)?,
                state: r.get(5)?,
            })
        })?;
        Ok(rows.into_iter().map(|c| (c.path.clone(), c)).collect())
    }

    /// Store `rows` (de-duplicated on `(agent, dedup_key)`) and move `cursors`, in one
    /// transaction: a crash leaves either both or neither, so no row is read twice. First,
    /// for each of `reread` (a rewritten transcript read again from the start), the rows it
    /// gave before for the sessions it still holds are removed: the new read replaces them
    /// (a request whose numbers were edited in place counts once, with its new numbers).
    /// On a key already stored: more tokens replace the tokens; a non-replayed copy takes
    /// a row stored from a replayed one (session, project, transcript).
    ///
    /// Errors: [`codex_free_core::Error::Store`] on database failure (nothing is kept).
    pub fn apply_usage_import(
        &self,
        rows: &[AgentUsageRow],
        cursors: &[UsageCursor],
        reread: &[Reread],
    ) -> Result<UsageWrite> {
        let now = self.now();
        let mut c = self.conn();
        let tx = c.transaction().map_err(db_err)?;
        let mut out = UsageWrite::default();
        {
            let mut del = tx
                .prepare_cached(
                    "DELETE FROM agent_usage WHERE source_path = ?1 AND session_id = ?2",
                )
                .map_err(db_err)?;
            for r in reread {
                for s in &r.sessions {
                    del.execute(params![r.path, s]).map_err(db_err)?;
                }
            }
            let more = "(excluded.output_tokens > agent_usage.output_tokens
                        OR excluded.input_tokens > agent_usage.input_tokens)";
            let takes = "(agent_usage.replayed = 1 AND excluded.replayed = 0)";
            let pick = |col: &str, cond: &str| {
                format!("{col} = CASE WHEN {cond} THEN excluded.{col} ELSE agent_usage.{col} END")
            };
            let set: Vec<String> = [
                "input_tokens",
                "cached_input_tokens",
                "cache_write_tokens",
                "cache_write_1h_tokens",
                "output_tokens",
                "reasoning_tokens",
                "cost_usd",
                "provider_cost_usd",
            ]
            .iter()
            .map(|c| pick(c, more))
            .chain(
                ["session_id", "project", "source_path", "replayed"]
                    .iter()
                    .map(|c| pick(c, takes)),
            )
            .collect();
            let mut ins = tx
                .prepare_cached(&format!(
                    "INSERT INTO agent_usage ({COLS}, imported_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)
                     ON CONFLICT (agent, dedup_key) DO UPDATE SET {}
                     WHERE {more} OR {takes}",
                    set.join(", ")
                ))
                .map_err(db_err)?;
            for r in rows {
                let n = ins
                    .execute(params![
                        r.agent,
                        r.dedup_key,
                        r.session_id,
                        r.project,
                        r.model,
                        r.at_ms,
                        r.tokens.input_tokens,
                        r.tokens.cached_input_tokens,
                        r.tokens.cache_write_tokens,
                        r.tokens.output_tokens,
                        r.tokens.reasoning_tokens,
                        r.cost_usd,
                        r.provider_cost_usd,
                        r.source_path,
                        r.cache_write_1h_tokens,
                        r.replayed,
                        now
                    ])
                    .map_err(db_err)?;
                if n > 0 {
                    out.written += 1;
                } else {
                    out.duplicates += 1;
                }
            }
            let mut cur = tx
                .prepare_cached(
                    "INSERT INTO usage_cursors (path, agent, offset, mtime_ms, prefix_hash, state, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                     ON CONFLICT (path) DO UPDATE SET agent = excluded.agent, offset = excluded.offset,
                        mtime_ms = excluded.mtime_ms, prefix_hash = excluded.prefix_hash,
                        state = excluded.state, updated_at = excluded.updated_at",
                )
                .map_err(db_err)?;
            for k in cursors {
                cur.execute(params![
                    k.path,
                    k.agent,
                    k.offset as i64,
                    k.mtime_ms,
                    k.prefix_hash,
                    k.state,
                    now
                ])
                .map_err(db_err)?;
            }
        }
        tx.commit().map_err(db_err)?;
        Ok(out)
    }

    /// The agents' rows with `since_ms <= at_ms < until_ms` (bounds optional), oldest
    /// first.
    ///
    /// Errors: [`codex_free_core::Error::Store`] on database failure.
    pub fn agent_usage_rows(
        &self,
        since_ms: Option<i64>,
        until_ms: Option<i64>,
    ) -> Result<Vec<AgentUsageRow>> {
        let c = self.conn();
        let mut st = c
            .prepare_cached(&format!(
                "SELECT {COLS} FROM agent_usage WHERE at_ms >= ?1 AND at_ms < ?2 ORDER BY at_ms, id"
            ))
            .map_err(db_err)?;
        collect_rows(
            &mut st,
            params![since_ms.unwrap_or(i64::MIN), until_ms.unwrap_or(i64::MAX)],
            row_from,
        )
    }

    /// This app's own pipeline requests (the `usage` table) in the same shape, with agent
    /// `pipeline`, the run as session and the request time (`created_at`, whole seconds)
    /// as `at_ms`, so reports can show them as one more series.
    ///
    /// Errors: [`codex_free_core::Error::Store`] on database failure.
    pub fn pipeline_usage_rows(
        &self,
        since_ms: Option<i64>,
        until_ms: Option<i64>,
    ) -> Result<Vec<AgentUsageRow>> {
        let c = self.conn();
        let mut st = c
            .prepare_cached(&format!(
                "SELECT id, run_id, phase, model, created_at * 1000, {}, cost_usd
                 FROM usage WHERE created_at * 1000 >= ?1 AND created_at * 1000 < ?2 ORDER BY created_at, id",
                TokenCounts::COLS
            ))
            .map_err(db_err)?;
        collect_rows(
            &mut st,
            params![since_ms.unwrap_or(i64::MIN), until_ms.unwrap_or(i64::MAX)],
            |r| {
                Ok(AgentUsageRow {
                    agent: "pipeline".into(),
                    dedup_key: format!("usage:{}", r.get::<_, i64>(0)?),
                    session_id: r.get(1)?,
                    project: Some(format!("memory {}", r.get::<_, String>(2)?)),
                    model: r.get(3)?,
                    at_ms: r.get(4)?,
                    tokens: TokenCounts::from_row(r, 5)?,
                    cost_usd: r.get(10)?,
                    provider_cost_usd: None,
                    source_path: String::new(),
                    cache_write_1h_tokens: 0,
                    replayed: false,
                })
            },
        )
    }

    /// Models with at least one unpriced agent row.
    ///
    /// Errors: [`codex_free_core::Error::Store`] on database failure.
    pub fn unpriced_agent_models(&self) -> Result<Vec<String>> {
        let c = self.conn();
        let mut st = c
            .prepare_cached("SELECT DISTINCT model FROM agent_usage WHERE cost_usd IS NULL")
            .map_err(db_err)?;
        collect_rows(&mut st, [], |r| r.get(0))
    }

    /// Price the unpriced rows of `model` with `cost` (USD of one row, after the user
    /// added a price), in one transaction. Returns how many rows were priced.
    ///
    /// Errors: [`codex_free_core::Error::Store`] on database failure.
    pub fn reprice_unpriced(
        &self,
        model: &str,
        cost: impl Fn(&AgentUsageRow) -> f64,
    ) -> Result<usize> {
        let mut c = self.conn();
        let tx = c.transaction().map_err(db_err)?;
        let rows = {
            let mut st = tx
                .prepare_cached(&format!(
                    "SELECT id, {COLS} FROM agent_usage WHERE model = ?1 AND cost_usd IS NULL"
                ))
                .map_err(db_err)?;
            collect_rows(&mut st, params![model], |r| {
                Ok((r.get::<_, i64>(0)?, row_from_at(r, 1)?))
            })?
        };
        {
            let mut up = tx
                .prepare_cached("UPDATE agent_usage SET cost_usd = ?2 WHERE id = ?1")
                .map_err(db_err)?;
            for (id, row) in &rows {
                up.execute(params![id, cost(row)]).map_err(db_err)?;
            }
        }
        tx.commit().map_err(db_err)?;
        Ok(rows.len())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::ManualClock;

    fn row(key: &str, out: i64) -> AgentUsageRow {
        AgentUsageRow {
            agent: "claude".into(),
            dedup_key: key.into(),
            session_id: "s".into(),
            model: "anthropic/x".into(),
            at_ms: 1000,
            tokens: TokenCounts {
                input_tokens: 10,
                output_tokens: out,
                ..Default::default()
            },
            source_path: "/p".into(),
            ..Default::default()
        }
    }

    #[test]
    fn duplicates_kept_once_and_a_fuller_copy_replaces() {
        let s = Store::open_in_memory(Arc::new(ManualClock::new(5))).unwrap();
        let w = s
            .apply_usage_import(&[row("a", 1), row("a", 1), row("b", 2)], &[], &[])
            .unwrap();
        assert_eq!((w.written, w.duplicates), (2, 1));
        // A later, complete copy of `a` (more output) replaces it; a smaller one does not.
        let w = s
            .apply_usage_import(&[row("a", 7), row("b", 1)], &[], &[])
            .unwrap();
        assert_eq!((w.written, w.duplicates), (1, 1));
        let rows = s.agent_usage_rows(None, None).unwrap();
        let outs: Vec<i64> = rows.iter().map(|r| r.tokens.output_tokens).collect();
        assert_eq!(outs, [7, 2]);
    }

    #[test]
    fn unpriced_rows_are_repriced_and_cursors_round_trip() {
        let s = Store::open_in_memory(Arc::new(ManualClock::new(5))).unwrap();
        let mut r = row("a", 100);
        r.tokens.input_tokens = 1000;
        r.tokens.cached_input_tokens = 400;
        let k = UsageCursor {
            path: "/p".into(),
            agent: "claude".into(),
            offset: 42,
            mtime_ms: 7,
            prefix_hash: "h".into(),
            state: "{}".into(),
        };
        s.apply_usage_import(&[r], std::slice::from_ref(&k), &[])
            .unwrap();
        assert_eq!(s.usage_cursors().unwrap()["/p"], k);
        assert_eq!(s.unpriced_agent_models().unwrap(), ["anthropic/x"]);
        let n = s
            .reprice_unpriced("anthropic/x", |r| {
                let t = &r.tokens;
                (t.input_tokens - t.cached_input_tokens) as f64 * 1.0
                    + t.cached_input_tokens as f64 * 0.1
                    + t.output_tokens as f64 * 10.0
            })
            .unwrap();
        assert_eq!(n, 1);
        let c = s.agent_usage_rows(None, None).unwrap()[0].cost_usd.unwrap();
        assert!((c - (600.0 + 40.0 + 1000.0)).abs() < 1e-9, "{c}");
        assert!(s.unpriced_agent_models().unwrap().is_empty());
    }

    /// A fork's replayed copy stored first yields the row to the session that recorded it;
    /// a replayed copy read after the original changes nothing.
    #[test]
    fn the_recording_session_takes_its_row_back_from_a_replayed_copy() {
        let s = Store::open_in_memory(Arc::new(ManualClock::new(5))).unwrap();
        let mut copy = row("a", 5);
        (copy.session_id, copy.source_path, copy.replayed) = ("fork".into(), "/f".into(), true);
        let mut orig = row("a", 5);
        (orig.session_id, orig.source_path) = ("orig".into(), "/o".into());
        s.apply_usage_import(std::slice::from_ref(&copy), &[], &[])
            .unwrap();
        let w = s
            .apply_usage_import(std::slice::from_ref(&orig), &[], &[])
            .unwrap();
        assert_eq!(w.written, 1);
        let got = &s.agent_usage_rows(None, None).unwrap()[0];
        assert_eq!(
            (
                got.session_id.as_str(),
                got.source_path.as_str(),
                got.replayed
            ),
            ("orig", "/o", false)
        );
        let w = s.apply_usage_import(&[copy], &[], &[]).unwrap();
        assert_eq!(w.duplicates, 1);
        assert_eq!(
            s.agent_usage_rows(None, None).unwrap()[0].session_id,
            "orig"
        );
    }

    /// A transcript read again after a rewrite replaces its rows of the same session (an
    /// edited request: fewer tokens, another key), and keeps another session's.
    #[test]
    fn a_reread_replaces_its_rows_of_the_same_session() {
        let s = Store::open_in_memory(Arc::new(ManualClock::new(5))).unwrap();
        let mut other = row("z", 3);
        other.session_id = "t".into();
        s.apply_usage_import(&[row("a", 9), other], &[], &[])
            .unwrap();
        let reread = Reread {
            path: "/p".into(),
            sessions: vec!["s".into()],
        };
        s.apply_usage_import(&[row("a2", 4)], &[], &[reread])
            .unwrap();
        let rows = s.agent_usage_rows(None, None).unwrap();
        let got: Vec<(&str, i64)> = rows
            .iter()
            .map(|r| (r.dedup_key.as_str(), r.tokens.output_tokens))
            .collect();
        assert_eq!(got, [("z", 3), ("a2", 4)]);
    }
}
