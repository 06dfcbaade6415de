//! `codex-free usage daily|weekly|monthly|sessions|blocks|bench-import`: import the
//! agents' transcripts, then report from the store (text tables or `--json`).

use crate::bench::BenchImportArgs;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use chrono::{DateTime, NaiveDate, Utc};
use serde::Serialize;

use super::report::{self, Filter, Granularity, Totals};
use super::{ImportReport, import_from_env};
use codex_free_core::config::PriceOverride;
use codex_free_core::{Error, Result};
use codex_free_models::prices::format_cost;
use codex_free_store::{AgentUsageRow, Store};

/// The `usage` subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum UsageCmd {
    /// Tokens and cost per UTC day.
    Daily(ReportArgs),
    /// Tokens and cost per ISO week.
    Weekly(ReportArgs),
    /// Tokens and cost per calendar month.
    Monthly(ReportArgs),
    /// Tokens and cost per agent session, most expensive first.
    Sessions(ReportArgs),
    /// 5-hour billing blocks; the active one with its burn rate and projection.
    Blocks(ReportArgs),
    /// Generate 2,000 synthetic Codex rollouts (~160 MB) in a temp dir, import them twice
    /// into a temp database and print both times beside their targets.
    BenchImport(BenchImportArgs),
}

/// Options of every report.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ReportArgs {
    /// Only these agents (codex, claude, pi, pipeline), comma-separated or repeated.
    #[arg(long, value_delimiter = ',')]
    pub agent: Vec<String>,
    /// From this UTC day on (YYYY-MM-DD or YYYYMMDD).
    #[arg(long)]
    pub since: Option<String>,
    /// Before the end of this UTC day (YYYY-MM-DD or YYYYMMDD).
    #[arg(long)]
    pub until: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Do not import first (report only what is stored).
    #[arg(long)]
    pub no_import: bool,
}

const AGENT_NAMES: [&str; 4] = ["codex", "claude", "pi", "pipeline"];

/// Parse a UTC day (`YYYY-MM-DD` or `YYYYMMDD`) to its first millisecond.
///
/// Errors: [`Error::InvalidArgument`] naming the flag and the accepted forms.
pub fn parse_day(flag: &str, s: &str) -> Result<i64> {
    NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .or_else(|_| NaiveDate::parse_from_str(s, "%Y%m%d"))
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|d| d.and_utc().timestamp_millis())
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "--{flag} \"{s}\": expected a UTC day as YYYY-MM-DD or YYYYMMDD"
            ))
        })
}

impl ReportArgs {
    /// The row filter these options describe.
    ///
    /// Errors: [`Error::InvalidArgument`] for an unknown agent or a malformed day.
    pub fn filter(&self) -> Result<Filter> {
        for a in &self.agent {
            if !AGENT_NAMES.contains(&a.as_str()) {
                return Err(Error::InvalidArgument(format!(
                    "--agent \"{a}\": expected one of {}",
                    AGENT_NAMES.join(", ")
                )));
            }
        }
        Ok(Filter {
            agents: self.agent.clone(),
            since_ms: self
                .since
                .as_deref()
                .map(|s| parse_day("since", s))
                .transpose()?,
            until_ms: self
                .until
                .as_deref()
                .map(|s| parse_day("until", s).map(|d| d + 86_400_000))
                .transpose()?,
            ..Default::default()
        })
    }
}

/// Every row a report reads: the agents' rows and the pipeline's own requests.
///
/// Errors: [`Error::Store`] on database failure.
pub fn all_rows(store: &Store, f: &Filter) -> Result<Vec<AgentUsageRow>> {
    let mut rows = store.agent_usage_rows(f.since_ms, f.until_ms)?;
    rows.extend(store.pipeline_usage_rows(f.since_ms, f.until_ms)?);
    rows.sort_by_key(|r| r.at_ms);
    Ok(rows)
}

#[derive(Serialize)]
struct JsonOut<'a, T: Serialize> {
    import: &'a Option<ImportReport>,
    #[serde(flatten)]
    body: T,
}

/// Run a report subcommand (not `bench-import`) against the state home `home` and return
/// what to print.
///
/// Errors: bad arguments ([`Error::InvalidArgument`]), the database ([`Error::Store`]).
pub fn run(
    cmd: &UsageCmd,
    home: &Path,
    prices: &BTreeMap<String, PriceOverride>,
    now_ms: i64,
) -> Result<String> {
    let (args, what) = match cmd {
        UsageCmd::Daily(a) => (a, "daily"),
        UsageCmd::Weekly(a) => (a, "weekly"),
        UsageCmd::Monthly(a) => (a, "monthly"),
        UsageCmd::Sessions(a) => (a, "sessions"),
        UsageCmd::Blocks(a) => (a, "blocks"),
        UsageCmd::BenchImport(a) => return super::bench::run(a),
    };
    let f = args.filter()?;
    let store = Store::open_in_home(home)?;
    let imported = if args.no_import {
        None
    } else {
        Some(import_from_env(&store, home, prices)?)
    };
    let rows = all_rows(&store, &f)?;
    let mut s = String::new();
    match what {
        "sessions" => {
            let v = report::sessions(&rows, &f);
            let kept: Vec<&AgentUsageRow> = rows.iter().filter(|r| f.keeps(r)).collect();
            let unknown = report::unknown_prices(&kept);
            if args.json {
                #[derive(Serialize)]
                struct B<'a> {
                    sessions: &'a [report::SessionRow],
                    unknown_prices: &'a [report::UnknownPrice],
                }
                return json(
                    &imported,
                    B {
                        sessions: &v,
                        unknown_prices: &unknown,
                    },
                );
            }
            let _ = writeln!(
                s,
                "{:<8} {:<38} {:<28} {:>12} {:>12} {:>14}",
                "agent", "session", "project", "input", "output", "cost"
            );
            for r in &v {
                let _ = writeln!(
                    s,
                    "{:<8} {:<38} {:<28} {:>12} {:>12} {:>14}",
                    r.agent,
                    r.session_id,
                    shorten(r.project.as_deref().unwrap_or("-"), 28),
                    r.totals.tokens.input_tokens,
                    r.totals.tokens.output_tokens,
                    cost_cell(&r.totals)
                );
            }
            unknown_section(&mut s, &unknown);
        }
        "blocks" => {
            let v = report::blocks(&rows, &f, now_ms);
            if args.json {
                #[derive(Serialize)]
                struct B<'a> {
                    blocks: &'a [report::Block],
                }
                return json(&imported, B { blocks: &v });
            }
            let _ = writeln!(
                s,
                "{:<20} {:<8} {:>10} {:>14} {:>14}  models",
                "block start (UTC)", "status", "requests", "tokens", "cost"
            );
            for b in &v {
                let _ = writeln!(
                    s,
                    "{:<20} {:<8} {:>10} {:>14} {:>14}  {}",
                    iso(b.start_ms),
                    if b.active { "ACTIVE" } else { "" },
                    b.totals.requests,
                    b.totals.total_tokens,
                    cost_cell(&b.totals),
                    b.models.join(", ")
                );
                if let Some(burn) = &b.burn {
                    let _ = writeln!(
                        s,
                        "  burn rate: {:.0} tokens/min, {}/h; {} min left; projected at {}: {} tokens, {}",
                        burn.tokens_per_min,
                        format_cost(burn.usd_per_hour),
                        burn.remaining_ms / 60_000,
                        iso(b.end_ms),
                        burn.projected_tokens,
                        format_cost(burn.projected_usd)
                    );
                }
            }
            if v.iter().all(|b| !b.active) {
                let _ = writeln!(s, "no active block (no request in the last 5 hours)");
            }
        }
        _ => {
            let g = Granularity::parse(what).unwrap_or(Granularity::Day);
            let p = report::periods(&rows, &f, g);
            if args.json {
                return json(&imported, &p);
            }
            let _ = writeln!(
                s,
                "{:<11} {:<9} {:>12} {:>12} {:>12} {:>10} {:>10} {:>13} {:>14}",
                "period",
                "agent",
                "input",
                "cache read",
                "cache write",
                "output",
                "reasoning",
                "total",
                "cost"
            );
            for b in &p.buckets {
                for (agent, t) in &b.by_agent {
                    line(&mut s, &b.period, agent, t);
                }
            }
            line(&mut s, "total", "", &p.total);
            unknown_section(&mut s, &p.unknown_prices);
        }
    }
    if let Some(i) = &imported {
        let _ = writeln!(
            s,
            "(imported: {} transcripts, {} read, {} new requests, {} ms)",
            i.files, i.files_read, i.rows_written, i.duration_ms
        );
    }
    Ok(s)
}

fn json<T: Serialize>(imported: &Option<ImportReport>, body: T) -> Result<String> {
    serde_json::to_string_pretty(&JsonOut {
        import: imported,
        body,
    })
    .map_err(|e| Error::InvalidArgument(format!("cannot encode the report: {e}")))
}

fn line(s: &mut String, period: &str, agent: &str, t: &Totals) {
    let _ = writeln!(
        s,
        "{:<11} {:<9} {:>12} {:>12} {:>12} {:>10} {:>10} {:>13} {:>14}",
        period,
        agent,
        t.tokens.input_tokens,
        t.tokens.cached_input_tokens,
        t.tokens.cache_write_tokens,
        t.tokens.output_tokens,
        t.tokens.reasoning_tokens,
        t.total_tokens,
        cost_cell(t)
    );
}

/// `$1.23`, `price unknown`, or `$1.23 + 4 unpriced`.
pub fn cost_cell(t: &Totals) -> String {
    match (t.cost_usd, t.unpriced_requests) {
        (None, _) => "price unknown".into(),
        (Some(c), 0) => format_cost(Some(c)),
        (Some(c), n) => format!("{} + {n} unpriced", format_cost(Some(c))),
    }
}

fn unknown_section(s: &mut String, unknown: &[report::UnknownPrice]) {
    if unknown.is_empty() {
        return;
    }
    let _ = writeln!(s, "\nPRICE UNKNOWN (not counted in the costs above):");
    for u in unknown {
        let _ = writeln!(
            s,
            "  {} ({}): {} requests, {} input ({} cache read), {} output tokens\n    to price it: {}",
            u.model,
            u.agents.join(", "),
            u.totals.requests,
            u.totals.tokens.input_tokens,
            u.totals.tokens.cached_input_tokens,
            u.totals.tokens.output_tokens,
            u.how_to_price
        );
    }
}

fn shorten(s: &str, n: usize) -> String {
    let c: Vec<char> = s.chars().collect();
    if c.len() <= n {
        s.to_string()
    } else {
        format!("…{}", c[c.len() - (n - 1)..].iter().collect::<String>())
    }
}

fn iso(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .format("%Y-%m-%d %H:%M")
        .to_string()
}
