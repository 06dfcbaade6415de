//! The Usage page's data: the coding agents' own usage (imported from their transcripts by
//! `pipeline::agent_usage` just before each view, incrementally) plus the pipeline's own
//! requests as the `pipeline` series, grouped with the same report code as the
//! `codex-free usage` CLI so the page and `usage daily --json` agree; CSV export; and
//! today's / this month's spend for the tray.
//!
//! Invariant: an unpriced request is counted in `unpriced_requests`, never as $0; buckets
//! are cut in the filter's time zone (the server's local zone when it names none), the
//! tray's "today" and "this month" in the server's local zone.

use super::csv::cell;
use std::collections::BTreeMap;

use chrono::Utc;

use super::ApiService;
use super::dto::{AgentSpend, AgentUsageFilter, AgentUsageView};
use codex_free_agent_usage::cli::all_rows;
use codex_free_agent_usage::report::{self, Filter, Granularity, Totals};
use codex_free_agent_usage::zone::Zone;
use codex_free_agent_usage::{ImportReport, import_from_env};
use codex_free_core::{Error, Result};
use codex_free_store::{AgentUsageRow, Store};

/// Most sessions listed on the page.
pub const TOP_SESSIONS: usize = 20;

fn filter_of(f: &AgentUsageFilter) -> Filter {
    Filter {
        agents: f.agent.iter().filter(|a| !a.is_empty()).cloned().collect(),
        model: f.model.clone().filter(|m| !m.is_empty()),
        project: None,
        since_ms: f.since_ms,
        until_ms: f.until_ms,
    }
}

fn granularity(f: &AgentUsageFilter) -> Result<Granularity> {
    match f.granularity.as_deref() {
        None | Some("") => Ok(Granularity::Day),
        Some(g) => Granularity::parse(g).ok_or_else(|| {
            Error::InvalidArgument(format!("granularity \"{g}\": expected day, week or month"))
        }),
    }
}

impl ApiService {
    fn usage_store(&self) -> Result<Store> {
        Store::open_in_home(self.home())
    }

    /// Import the agents' transcripts (incremental) into the state home's database.
    ///
    /// Errors: [`Error::Store`] when the database cannot be opened or written.
    pub fn import_agent_usage(&self) -> Result<ImportReport> {
        let (cfg, _) = self.current_config();
        import_from_env(&self.usage_store()?, self.home(), &cfg.memories.prices)
    }

    fn agent_rows(&self) -> (Vec<AgentUsageRow>, Option<String>) {
        let import_error = self.import_agent_usage().err().map(|e| {
            let m = e.to_string();
            self.record_error("usage", m.clone());
            m
        });
        let rows = self
            .usage_store()
            .and_then(|s| all_rows(&s, &Filter::default()))
            .unwrap_or_else(|e| {
                self.record_error("usage", e.to_string());
                Vec::new()
            });
        (rows, import_error)
    }

    /// The Usage page for `f` (the import runs first; its failure is reported in
    /// `import_error` and the stored rows are shown).
    ///
    /// Errors: [`Error::InvalidArgument`] for an unknown granularity or time zone.
    pub fn agent_usage(&self, f: &AgentUsageFilter) -> Result<AgentUsageView> {
        let g = granularity(f)?;
        let zone = Zone::named_or_local(f.timezone.as_deref())?;
        let (rows, import_error) = self.agent_rows();
        let now_ms = Utc::now().timestamp_millis();
        Ok(view(&rows, f, g, &zone, now_ms, import_error))
    }

    /// CSV of the rows matching `f`, one request a line: `time_utc, agent, session,
    /// project, model, input_tokens, cached_input_tokens, cache_write_tokens,
    /// output_tokens, reasoning_tokens, cost_usd, provider_cost_usd` (cost empty =
    /// price unknown).
    ///
    /// Errors: as [`Self::agent_usage`].
    pub fn agent_usage_csv(&self, f: &AgentUsageFilter) -> Result<String> {
        granularity(f)?;
        Zone::named_or_local(f.timezone.as_deref())?;
        let (rows, _) = self.agent_rows();
        Ok(csv(&rows, &filter_of(f)))
    }

    /// Today's and this month's spend across the agents and the pipeline, for the tray,
    /// "today" and "this month" in the server's local zone (the tray runs on the user's
    /// machine). Reads what is stored (the scheduler's tick keeps it fresh; no import
    /// here, so the call stays cheap).
    ///
    /// Errors: [`Error::Store`] when the database cannot be read.
    pub fn agent_spend(&self) -> Result<AgentSpend> {
        let (day_start, month_start) =
            day_and_month_start(&Zone::local(), Utc::now().timestamp_millis())?;
        let store = self.usage_store()?;
        let rows = all_rows(
            &store,
            &Filter {
                since_ms: Some(month_start.min(day_start)),
                ..Default::default()
            },
        )?;
        Ok(spend(&rows, day_start, month_start))
    }
}

/// The first millisecond of the local day and of the local month holding `now_ms` in
/// `zone` (Unix ms).
///
/// Errors: [`Error::InvalidArgument`] for a time outside the supported years.
pub fn day_and_month_start(zone: &Zone, now_ms: i64) -> Result<(i64, i64)> {
    let d = zone.date_of(now_ms);
    Ok((
        zone.day_start_ms(d)?,
        zone.day_start_ms(d.first_of_month())?,
    ))
}

/// [`AgentSpend`] of `rows` for the day starting at `day_start` and the month starting at
/// `month_start` (Unix ms).
pub fn spend(rows: &[AgentUsageRow], day_start: i64, month_start: i64) -> AgentSpend {
    let mut today = Totals::default();
    let mut month = Totals::default();
    let mut by_agent: BTreeMap<String, Totals> = BTreeMap::new();
    for r in rows {
        if r.at_ms >= month_start {
            month.add(r);
        }
        if r.at_ms >= day_start {
            today.add(r);
            by_agent.entry(r.agent.clone()).or_default().add(r);
        }
    }
    AgentSpend {
        today_usd: today.cost_usd.unwrap_or(0.0),
        month_usd: month.cost_usd.unwrap_or(0.0),
        today_unpriced_requests: today.unpriced_requests,
        month_unpriced_requests: month.unpriced_requests,
        today_by_agent: by_agent,
    }
}

/// The page's view of `rows` (all rows; `f` filters), buckets cut in `zone`.
pub fn view(
    rows: &[AgentUsageRow],
    f: &AgentUsageFilter,
    g: Granularity,
    zone: &Zone,
    now_ms: i64,
    import_error: Option<String>,
) -> AgentUsageView {
    let flt = filter_of(f);
    let mut by_agent: BTreeMap<String, Totals> = BTreeMap::new();
    let mut by_model: BTreeMap<String, Totals> = BTreeMap::new();
    let mut agents: Vec<String> = Vec::new();
    let mut models: Vec<String> = Vec::new();
    for r in rows {
        if !agents.contains(&r.agent) {
            agents.push(r.agent.clone());
        }
        if !models.contains(&r.model) {
            models.push(r.model.clone());
        }
        if flt.keeps(r) {
            by_agent.entry(r.agent.clone()).or_default().add(r);
            by_model.entry(r.model.clone()).or_default().add(r);
        }
    }
    agents.sort();
    models.sort();
    // The block is about now: judged on the agent/model filter only, not the dates.
    let block_filter = Filter {
        since_ms: None,
        until_ms: None,
        ..flt.clone()
    };
    let active_block = report::blocks(rows, &block_filter, now_ms)
        .into_iter()
        .rev()
        .find(|b| b.active && b.burn.is_some());
    AgentUsageView {
        report: report::periods(rows, &flt, g, zone),
        by_agent,
        by_model,
        top_sessions: report::sessions(rows, &flt)
            .into_iter()
            .take(TOP_SESSIONS)
            .collect(),
        active_block,
        agents,
        models,
        import_error,
        now_ms,
    }
}

/// CSV of `rows` passing `f` (see [`ApiService::agent_usage_csv`]).
pub fn csv(rows: &[AgentUsageRow], f: &Filter) -> String {
    let mut out = String::from(
        "time_utc,agent,session,project,model,input_tokens,cached_input_tokens,cache_write_tokens,output_tokens,reasoning_tokens,cost_usd,provider_cost_usd\n",
    );
    for r in rows.iter().filter(|r| f.keeps(r)) {
        let t = chrono::DateTime::<Utc>::from_timestamp_millis(r.at_ms)
            .unwrap_or_default()
            .format("%Y-%m-%dT%H:%M:%S%.3fZ");
        out.push_str(&format!(
            "{t},{},{},{},{},{},{},{},{},{},{},{}\n",
            cell(&r.agent),
            cell(&r.session_id),
            cell(r.project.as_deref().unwrap_or("")),
            cell(&r.model),
            r.tokens.input_tokens,
            r.tokens.cached_input_tokens,
            r.tokens.cache_write_tokens,
            r.tokens.output_tokens,
            r.tokens.reasoning_tokens,
            r.cost_usd.map(|c| format!("{c:.6}")).unwrap_or_default(),
            r.provider_cost_usd
                .map(|c| format!("{c:.6}"))
                .unwrap_or_default(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use codex_free_store::TokenCounts;

    fn r(agent: &str, at_ms: i64, cost: Option<f64>) -> AgentUsageRow {
        AgentUsageRow {
            agent: agent.into(),
            session_id: "s".into(),
            model: "openai/gpt-5".into(),
            at_ms,
            tokens: TokenCounts {
                input_tokens: 100,
                cached_input_tokens: 25,
                output_tokens: 10,
                ..Default::default()
            },
            cost_usd: cost,
            project: Some("=cmd".into()),
            ..Default::default()
        }
    }

    #[test]
    fn spend_splits_day_and_month_and_keeps_unpriced_apart() {
        let rows = [
            r("codex", 10, Some(1.0)),
            r("claude", 100, Some(2.0)),
            r("pipeline", 150, None),
        ];
        let s = spend(&rows, 100, 0);
        assert_eq!((s.today_usd, s.month_usd), (2.0, 3.0));
        assert_eq!(
            (s.today_unpriced_requests, s.month_unpriced_requests),
            (1, 1)
        );
        assert_eq!(s.today_by_agent.len(), 2);
    }

    fn ms(s: &str) -> i64 {
        chrono::DateTime::parse_from_rfc3339(s)
            .unwrap()
            .timestamp_millis()
    }

    #[test]
    fn view_cuts_days_in_the_filters_time_zone() {
        // 23:30 and 00:30 in Los Angeles on either side of its midnight (08:00Z).
        let rows = [
            r("codex", ms("2026-11-29T07:30:00Z"), Some(1.0)),
            r("codex", ms("2026-11-29T08:30:00Z"), Some(1.0)),
        ];
        let periods = |zone: &str| {
            let f = AgentUsageFilter {
                timezone: Some(zone.into()),
                ..Default::default()
            };
            let z = Zone::named_or_local(f.timezone.as_deref()).unwrap();
            let v = view(&rows, &f, Granularity::Day, &z, 0, None);
            assert_eq!(v.report.timezone, zone);
            v.report
                .buckets
                .iter()
                .map(|b| (b.period.clone(), b.totals.requests))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            periods("America/Los_Angeles"),
            [("2026-11-28".to_string(), 1), ("2026-11-29".to_string(), 1)]
        );
        assert_eq!(periods("Asia/Tokyo"), [("2026-11-29".to_string(), 2)]);
        assert_eq!(periods("UTC"), [("2026-11-29".to_string(), 2)]);
    }

    #[test]
    fn the_trays_today_and_month_start_at_local_midnight() {
        let tokyo = Zone::named("Asia/Tokyo").unwrap();
        // 2026-12-01T00:30 in Tokyo is still November 30th in UTC.
        let (day, month) = day_and_month_start(&tokyo, ms("2026-11-30T15:30:00Z")).unwrap();
        assert_eq!(day, ms("2026-11-30T15:00:00Z"));
        assert_eq!(month, day);
        let la = Zone::named("America/Los_Angeles").unwrap();
        let (day, month) = day_and_month_start(&la, ms("2026-11-29T07:30:00Z")).unwrap();
        assert_eq!(day, ms("2026-11-28T08:00:00Z"));
        // November 1st began in daylight-saving time (UTC-7).
        assert_eq!(month, ms("2026-11-01T07:00:00Z"));
    }

    #[test]
    fn view_filters_and_csv_neutralises_formulas() {
        let rows = [r("codex", 0, Some(1.0)), r("pi", 1, None)];
        let f = AgentUsageFilter {
            agent: Some("pi".into()),
            ..Default::default()
        };
        let v = view(&rows, &f, Granularity::Day, &Zone::utc(), 2, None);
        assert_eq!(v.report.total.requests, 1);
        assert_eq!(v.report.total.cost_usd, None);
        assert_eq!(v.agents, ["codex", "pi"]);
        assert_eq!(v.report.unknown_prices.len(), 1);
        assert!((v.report.total.cache_hit_rate - 0.25).abs() < 1e-9);
        assert!(
            v.active_block.is_some(),
            "a request 1 ms ago is in the running block"
        );
        let c = csv(&rows, &Filter::default());
        assert_eq!(c.lines().count(), 3);
        assert!(c.contains(",'=cmd,"), "{c}");
        assert!(
            c.lines().nth(2).unwrap().ends_with(",,"),
            "unpriced: empty cost"
        );
    }
}
