//! `codex-free usage daily|weekly|monthly|sessions|blocks|bench-import`: import the
//! agents' transcripts, then report from the store (text tables or `--json`), in the
//! user's time zone unless `--timezone` names another (see [`crate::zone`]).

use crate::bench::BenchImportOptions;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use super::report::{self, Filter, Granularity, Totals};
use super::zone::Zone;
use super::{ImportReport, import_from_env};
use codex_free_core::config::PriceOverride;
use codex_free_core::{Error, Result};
use codex_free_models::prices::format_cost;
use codex_free_store::{AgentUsageRow, Store};

/// The `usage` subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum UsageCmd {
    /// Tokens and cost per day (local time zone unless --timezone).
    Daily(ReportArgs),
    /// Tokens and cost per ISO week (local time zone unless --timezone).
    Weekly(ReportArgs),
    /// Tokens and cost per calendar month (local time zone unless --timezone).
    Monthly(ReportArgs),
    /// Tokens and cost per agent session, most expensive first.
    Sessions(ReportArgs),
    /// 5-hour billing blocks; the active one with its burn rate and projection.
    Blocks(ReportArgs),
    /// Generate 2,000 synthetic Codex rollouts (~160 MB) in a temp dir, import them twice
    /// into a temp database and print both times beside their targets.
    BenchImport(BenchImportArgs),
}

/// Options of `usage bench-import` (see [`BenchImportOptions`]).
#[derive(Debug, Clone, clap::Args)]
pub struct BenchImportArgs {
    /// Number of rollouts.
    #[arg(long, default_value_t = 2000)]
    pub files: usize,
    /// Approximate size of each rollout in KiB (2,000 × 80 KiB ≈ 160 MB).
    #[arg(long, default_value_t = 80)]
    pub kib: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

impl From<&BenchImportArgs> for BenchImportOptions {
    fn from(a: &BenchImportArgs) -> Self {
        Self {
            files: a.files,
            kib: a.kib,
            json: a.json,
        }
    }
}

/// Options of every report.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ReportArgs {
    /// Only these agents (codex, claude, pi, pipeline), comma-separated or repeated.
    #[arg(long, value_delimiter = ',')]
    pub agent: Vec<String>,
    /// From this day on (YYYY-MM-DD or YYYYMMDD), from midnight of the report's time zone.
    #[arg(long)]
    pub since: Option<String>,
    /// Up to the end of this day (YYYY-MM-DD or YYYYMMDD) in the report's time zone.
    #[arg(long)]
    pub until: Option<String>,
    /// Cut days, weeks and months and print times in this zone: an IANA name
    /// (America/Los_Angeles, Asia/Tokyo, …) or UTC. Default: the local zone (TZ, else the
    /// system's).
    #[arg(long, short = 'z', value_name = "IANA NAME|UTC")]
    pub timezone: Option<String>,
    /// Under each row of daily/weekly/monthly/sessions, one line per model (the JSON always
    /// has `by_model`).
    #[arg(long)]
    pub breakdown: bool,
    /// Print JSON instead of a table (raw numbers; the same column names as the tables:
    /// input_tokens is uncached input, then cache_read, cache_write, output, reasoning).
    #[arg(long)]
    pub json: bool,
    /// Do not import first (report only what is stored).
    #[arg(long)]
    pub no_import: bool,
}

const AGENT_NAMES: [&str; 4] = ["codex", "claude", "pi", "pipeline"];

/// Parse a day (`YYYY-MM-DD` or `YYYYMMDD`) to its first millisecond in `zone` (Unix
/// ms), or with `end` to the first millisecond of the day after (so `--until` covers the
/// whole day, 23 or 25 hours long on daylight-saving days).
///
/// Errors: [`Error::InvalidArgument`] naming the flag and the accepted forms.
pub fn parse_day(flag: &str, s: &str, zone: &Zone, end: bool) -> Result<i64> {
    let bad = || {
        Error::InvalidArgument(format!(
            "--{flag} \"{s}\": expected a day as YYYY-MM-DD or YYYYMMDD"
        ))
    };
    let t = s.trim();
    let dashed = if t.len() == 8 && t.bytes().all(|b| b.is_ascii_digit()) {
        format!("{}-{}-{}", &t[..4], &t[4..6], &t[6..])
    } else {
        t.to_string()
    };
    let d: jiff::civil::Date = dashed.parse().map_err(|_| bad())?;
    let d = if end {
        d.tomorrow().map_err(|_| bad())?
    } else {
        d
    };
    zone.day_start_ms(d)
}

impl ReportArgs {
    /// The zone these options name (`--timezone`), else the local one.
    ///
    /// Errors: [`Error::InvalidArgument`] naming an unknown zone.
    pub fn zone(&self) -> Result<Zone> {
        Zone::named_or_local(self.timezone.as_deref())
    }

    /// The row filter these options describe, days read in `zone`.
    ///
    /// Errors: [`Error::InvalidArgument`] for an unknown agent or a malformed day.
    pub fn filter(&self, zone: &Zone) -> Result<Filter> {
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
                .map(|s| parse_day("since", s, zone, false))
                .transpose()?,
            until_ms: self
                .until
                .as_deref()
                .map(|s| parse_day("until", s, zone, true))
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
///
/// Long on purpose: one report per subcommand sharing the same import, filter and output steps;
/// splitting per report would repeat them.
#[expect(
    clippy::too_many_lines,
    reason = "one report per subcommand sharing the same import, filter and output steps; splitting per report would repeat them"
)]
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
        UsageCmd::BenchImport(a) => return super::bench::run(&BenchImportOptions::from(a)),
    };
    let zone = args.zone()?;
    let f = args.filter(&zone)?;
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
                    timezone: &'a str,
                    sessions: &'a [report::SessionRow],
                    unknown_prices: &'a [report::UnknownPrice],
                }
                return json(
                    &imported,
                    B {
                        timezone: zone.name(),
                        sessions: &v,
                        unknown_prices: &unknown,
                    },
                );
            }
            let _ = writeln!(s, "Agent usage per session (time zone: {})", zone.name());
            let _ = writeln!(
                s,
                "{:<8} {:<38} {:<24} {:<16} {:<16} {COLS_HEAD}  models",
                "agent", "session", "project", "first request", "last request"
            );
            for r in &v {
                let _ = writeln!(
                    s,
                    "{:<8} {:<38} {:<24} {:<16} {:<16} {}  {}",
                    r.agent,
                    r.session_id,
                    shorten(r.project.as_deref().unwrap_or("-"), 24),
                    zone.minute(r.first_ms),
                    zone.minute(r.last_ms),
                    cols(&r.totals),
                    r.models.join(", ")
                );
                if args.breakdown {
                    for (m, t) in &r.by_model {
                        let _ = writeln!(
                            s,
                            "{:<8} {:<38} {:<24} {:<16} {:<16} {}",
                            "",
                            format!("  └ {}", shorten(m, 34)),
                            "",
                            "",
                            "",
                            cols(t)
                        );
                    }
                }
            }
            unknown_section(&mut s, &unknown);
        }
        "blocks" => {
            let v = report::blocks(&rows, &f, now_ms);
            if args.json {
                #[derive(Serialize)]
                struct B<'a> {
                    timezone: &'a str,
                    blocks: &'a [report::Block],
                }
                return json(
                    &imported,
                    B {
                        timezone: zone.name(),
                        blocks: &v,
                    },
                );
            }
            let _ = writeln!(s, "5-hour blocks (times in {})", zone.name());
            let _ = writeln!(
                s,
                "{:<20} {:<8} {:>10} {:>14} {:>14}  models",
                "block start", "status", "requests", "tokens", "cost"
            );
            for b in &v {
                let _ = writeln!(
                    s,
                    "{:<20} {:<8} {:>10} {:>14} {:>14}  {}",
                    zone.minute(b.start_ms),
                    if b.active { "ACTIVE" } else { "" },
                    thousands(b.totals.requests),
                    thousands(b.totals.total_tokens),
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
                        zone.minute(b.end_ms),
                        thousands(burn.projected_tokens),
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
            let p = report::periods(&rows, &f, g, &zone);
            if args.json {
                return json(&imported, &p);
            }
            let per = match g {
                Granularity::Day => "day",
                Granularity::Week => "ISO week",
                Granularity::Month => "month",
            };
            let _ = writeln!(s, "Agent usage per {per} (time zone: {})", zone.name());
            let _ = writeln!(s, "{:<11} {:<9} {COLS_HEAD}", "period", "agent");
            for b in &p.buckets {
                for (agent, t) in &b.by_agent {
                    let _ = writeln!(s, "{:<11} {:<9} {}", b.period, agent, cols(t));
                }
                if args.breakdown {
                    for (m, t) in &b.by_model {
                        let _ = writeln!(s, "{:<11} └ {m}\n{:<21} {}", "", "", cols(t));
                    }
                }
            }
            let _ = writeln!(s, "{:<11} {:<9} {}", "total", "", cols(&p.total));
            let _ = writeln!(
                s,
                "(input = uncached input; total = input + cache read + cache write + output; reasoning is part of output)"
            );
            unknown_section(&mut s, &p.unknown_prices);
        }
    }
    if let Some(i) = &imported {
        let _ = writeln!(
            s,
            "(imported: {} transcripts, {} read, {} new requests, {} ms)",
            i.files, i.files_read, i.rows_written, i.duration_ms
        );
        for (agent, l) in &i.by_agent {
            let _ = writeln!(s, "{}", source_note(agent, l));
        }
    }
    Ok(s)
}

/// One summary line per source: `(claude: 7 transcripts, 2 read, 31 requests; 1 line
/// repaired (invalid UTF-8 decoded lossily), 0 lines skipped (not JSON))`.
fn source_note(agent: &str, l: &super::SourceSummary) -> String {
    let plural = |n: usize| if n == 1 { "line" } else { "lines" };
    format!(
        "({agent}: {} transcripts, {} read, {} requests; {} {} repaired (invalid UTF-8 decoded lossily), {} {} skipped (not JSON))",
        thousands(l.files as i64),
        thousands(l.files_read as i64),
        thousands(l.requests as i64),
        l.lines_repaired,
        plural(l.lines_repaired),
        l.lines_skipped,
        plural(l.lines_skipped)
    )
}

fn json<T: Serialize>(imported: &Option<ImportReport>, body: T) -> Result<String> {
    serde_json::to_string_pretty(&JsonOut {
        import: imported,
        body,
    })
    .map_err(|e| Error::InvalidArgument(format!("cannot encode the report: {e}")))
}

/// The token and cost column heads, the same in every table (and named like the JSON's
/// fields: `input_tokens`, `cache_read_tokens`, …).
const COLS_HEAD: &str = "        input   cache read  cache write       output    reasoning          total           cost";

/// A row's token and cost cells under [`COLS_HEAD`], with thousands separators.
fn cols(t: &Totals) -> String {
    format!(
        "{:>13} {:>12} {:>12} {:>12} {:>12} {:>14} {:>14}",
        thousands(t.input_tokens),
        thousands(t.cache_read_tokens),
        thousands(t.cache_write_tokens),
        thousands(t.output_tokens),
        thousands(t.reasoning_tokens),
        thousands(t.total_tokens),
        cost_cell(t)
    )
}

/// `1234567` → `1,234,567` (tables only; the JSON keeps raw numbers).
pub fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `$1.23`, `price unknown`, or `$1.23 + 4 unpriced`; `$0.00` for no requests at all
/// (nothing was used, so the cost is known: zero — "price unknown" is for requests whose
/// model has no price).
pub fn cost_cell(t: &Totals) -> String {
    if t.requests == 0 {
        return "$0.00".into();
    }
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
            "  {} ({}): {} requests, {} input, {} cache read, {} cache write, {} output tokens\n    to price it: {}",
            u.model,
            u.agents.join(", "),
            thousands(u.totals.requests),
            thousands(u.totals.input_tokens),
            thousands(u.totals.cache_read_tokens),
            thousands(u.totals.cache_write_tokens),
            thousands(u.totals.output_tokens),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(tz: Option<&str>) -> ReportArgs {
        ReportArgs {
            no_import: true,
            timezone: tz.map(str::to_string),
            ..Default::default()
        }
    }

    fn run_in(cmd: UsageCmd) -> Result<String> {
        let home = tempfile::tempdir().unwrap();
        run(&cmd, home.path(), &BTreeMap::new(), 0)
    }

    #[test]
    fn days_are_read_in_the_reports_zone() {
        let tokyo = Zone::named("Asia/Tokyo").unwrap();
        // Midnight in Tokyo is 15:00 UTC the day before.
        assert_eq!(
            parse_day("since", "2026-11-29", &tokyo, false).unwrap(),
            parse_day("since", "20261128", &Zone::utc(), false).unwrap() + 15 * 3_600_000
        );
        let la = Zone::named("America/Los_Angeles").unwrap();
        // --until of the day daylight saving ends covers its 25 hours.
        let end = parse_day("until", "2026-11-01", &la, true).unwrap();
        let start = parse_day("since", "2026-11-01", &la, false).unwrap();
        assert_eq!(end - start, 25 * 3_600_000);
        let e = parse_day("since", "yesterday", &la, false).unwrap_err();
        assert!(e.to_string().contains("YYYY-MM-DD"), "{e}");
    }

    #[test]
    fn every_report_names_its_zone_and_an_unknown_zone_is_an_error() {
        for cmd in [
            UsageCmd::Daily(args(Some("Asia/Tokyo"))),
            UsageCmd::Weekly(args(Some("Asia/Tokyo"))),
            UsageCmd::Monthly(args(Some("Asia/Tokyo"))),
            UsageCmd::Sessions(args(Some("Asia/Tokyo"))),
            UsageCmd::Blocks(args(Some("Asia/Tokyo"))),
        ] {
            let out = run_in(cmd.clone()).unwrap();
            let head = out.lines().next().unwrap();
            assert!(head.contains("Asia/Tokyo"), "{cmd:?}: {head}");
            let mut bad = cmd;
            match &mut bad {
                UsageCmd::Daily(a)
                | UsageCmd::Weekly(a)
                | UsageCmd::Monthly(a)
                | UsageCmd::Sessions(a)
                | UsageCmd::Blocks(a) => a.timezone = Some("Mars/Olympus_Mons".into()),
                UsageCmd::BenchImport(_) => unreachable!(),
            }
            let e = run_in(bad).unwrap_err().to_string();
            assert!(e.contains("\"Mars/Olympus_Mons\""), "{e}");
        }
        let mut json = args(Some("utc"));
        json.json = true;
        let v: serde_json::Value =
            serde_json::from_str(&run_in(UsageCmd::Daily(json)).unwrap()).unwrap();
        assert_eq!(v["timezone"], "UTC");
    }

    #[test]
    fn an_empty_report_costs_zero_dollars() {
        let out = run_in(UsageCmd::Daily(args(Some("UTC")))).unwrap();
        let total = out.lines().find(|l| l.starts_with("total")).unwrap();
        assert!(total.trim_end().ends_with("$0.00"), "{out}");
        assert!(!out.contains("price unknown"), "{out}");
        assert_eq!(cost_cell(&Totals::default()), "$0.00");
    }

    #[test]
    fn tables_group_thousands() {
        let cases = [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (1234567, "1,234,567"),
            (-45678, "-45,678"),
        ];
        for (n, want) in cases {
            assert_eq!(thousands(n), want);
        }
        // Every column head is as wide as its cells (the table lines up).
        assert_eq!(COLS_HEAD.len(), cols(&Totals::default()).len());
    }
}
