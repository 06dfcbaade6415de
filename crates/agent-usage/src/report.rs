//! Reports over usage rows: totals per local day / ISO week / month of a [`Zone`] (each
//! split by agent and by model), per session, per 5-hour block, and the models whose price
//! is unknown.
//!
//! Blocks follow ccusage's definition (the window subscription plans bill by): a block
//! starts at the whole hour (UTC) of its first request and lasts 5 hours — a property of
//! the provider's window, not of the viewer's zone, so blocks do not move with
//! `--timezone` (in zones with a whole-hour offset the start is a local whole hour too);
//! a request more than
//! 5 hours after the block's start, or after the previous request, opens a new block. The
//! active block (its end still ahead, its last request under 5 hours ago) gets a burn
//! rate over its first-to-last request span and a projection to its end.
//!
//! Invariant: a bucket's `cost_usd` sums only priced rows and is `None` when none of its
//! rows is priced; `unpriced_requests` says how many rows it leaves out. Never $0 for
//! "unknown". Totals without any row (an empty report) keep `cost_usd: None` in the JSON
//! (stable wire shape) and are shown as `$0.00` ([`crate::cli::cost_cell`], the page's
//! `costCell`): nothing was used, so the cost is known.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::zone::Zone;

use codex_free_store::{AgentUsageRow, TokenCounts};

/// Length of a billing block: 5 hours, in ms.
pub const BLOCK_MS: i64 = 5 * 3_600_000;

/// Bucket size of a period report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Granularity {
    /// Calendar day of the report's zone, `2026-11-29`.
    Day,
    /// ISO week (Monday first) of the report's zone, `2026-W48`.
    Week,
    /// Calendar month of the report's zone, `2026-11`.
    Month,
}

impl Granularity {
    /// Parse `day`/`daily`, `week`/`weekly`, `month`/`monthly`.
    pub fn parse(s: &str) -> Option<Granularity> {
        Some(match s {
            "day" | "daily" => Granularity::Day,
            "week" | "weekly" => Granularity::Week,
            "month" | "monthly" => Granularity::Month,
            _ => return None,
        })
    }

    /// The label of the bucket holding `at_ms` (Unix ms) in `zone`.
    pub fn label(self, at_ms: i64, zone: &Zone) -> String {
        let d = zone.date_of(at_ms);
        match self {
            Granularity::Day => format!("{:04}-{:02}-{:02}", d.year(), d.month(), d.day()),
            Granularity::Week => {
                let w = d.iso_week_date();
                format!("{:04}-W{:02}", w.year(), w.week())
            }
            Granularity::Month => format!("{:04}-{:02}", d.year(), d.month()),
        }
    }
}

/// Summed usage of some rows. Tokens are counts; money is USD.
///
/// The token columns mean the same for every agent (whatever the agent's own record
/// calls them): `input_tokens` is input not read from the cache nor written to it,
/// `cache_read_tokens` and `cache_write_tokens` the cached parts, `output_tokens` all
/// output with `reasoning_tokens` the reasoning part of it; so `total_tokens` = input +
/// cache read + cache write + output.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "AgentTotals"))]
pub struct Totals {
    /// Requests (rows).
    pub requests: i64,
    /// Input tokens neither read from nor written to the prompt cache.
    pub input_tokens: i64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: i64,
    /// Input tokens written to the prompt cache (Anthropic; 5-minute and 1-hour).
    pub cache_write_tokens: i64,
    /// Of `cache_write_tokens`, 1-hour cache writes (priced apart).
    pub cache_write_1h_tokens: i64,
    /// Output tokens, reasoning included.
    pub output_tokens: i64,
    /// Of `output_tokens`, reasoning.
    pub reasoning_tokens: i64,
    /// Input + cache read + cache write + output.
    pub total_tokens: i64,
    /// Sum of the priced rows, USD; `None` when no row is priced.
    pub cost_usd: Option<f64>,
    /// Rows without a price (not in `cost_usd`).
    pub unpriced_requests: i64,
    /// Sum of the agents' own cost figures where recorded (pi), USD.
    pub provider_cost_usd: Option<f64>,
    /// Share of all input (input + cache read + cache write) read from the cache,
    /// 0..=1 (0 without input); kept current by [`Totals::add`].
    pub cache_hit_rate: f64,
}

impl Totals {
    /// Add one row (stored with input counting its cache reads and writes).
    pub fn add(&mut self, r: &AgentUsageRow) {
        let t: &TokenCounts = &r.tokens;
        self.requests += 1;
        self.input_tokens += (t.input_tokens - t.cached_input_tokens - t.cache_write_tokens).max(0);
        self.cache_read_tokens += t.cached_input_tokens;
        self.cache_write_tokens += t.cache_write_tokens;
        self.cache_write_1h_tokens += r.cache_write_1h_tokens;
        self.output_tokens += t.output_tokens;
        self.reasoning_tokens += t.reasoning_tokens;
        self.total_tokens = self.all_input() + self.output_tokens;
        match r.cost_usd {
            Some(c) => self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + c),
            None => self.unpriced_requests += 1,
        }
        if let Some(c) = r.provider_cost_usd {
            self.provider_cost_usd = Some(self.provider_cost_usd.unwrap_or(0.0) + c);
        }
        let all = self.all_input();
        self.cache_hit_rate = if all == 0 {
            0.0
        } else {
            self.cache_read_tokens as f64 / all as f64
        };
    }

    /// Input, cache reads and cache writes.
    pub fn all_input(&self) -> i64 {
        self.input_tokens + self.cache_read_tokens + self.cache_write_tokens
    }
}

/// Which rows a report covers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Only these agents (`codex`, `claude`, `pi`, `pipeline`); empty = all.
    pub agents: Vec<String>,
    /// Only this model (`provider/model-id`).
    pub model: Option<String>,
    /// Only this project (working directory).
    pub project: Option<String>,
    /// Earliest request, Unix ms (inclusive).
    pub since_ms: Option<i64>,
    /// Latest request, Unix ms (exclusive).
    pub until_ms: Option<i64>,
}

impl Filter {
    /// Whether `r` passes.
    pub fn keeps(&self, r: &AgentUsageRow) -> bool {
        (self.agents.is_empty() || self.agents.contains(&r.agent))
            && self.model.as_ref().is_none_or(|m| *m == r.model)
            && self
                .project
                .as_ref()
                .is_none_or(|p| r.project.as_deref() == Some(p.as_str()))
            && self.since_ms.is_none_or(|s| r.at_ms >= s)
            && self.until_ms.is_none_or(|u| r.at_ms < u)
    }
}

/// One bucket of a period report.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "AgentUsageBucket"))]
pub struct Bucket {
    /// `2026-11-29`, `2026-W48` or `2026-11`.
    pub period: String,
    /// All rows of the bucket.
    pub totals: Totals,
    /// Split by agent.
    pub by_agent: BTreeMap<String, Totals>,
    /// Split by model.
    pub by_model: BTreeMap<String, Totals>,
}

/// A model without a price, with what it used (so the gap is visible, never $0).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "UnknownPriceRow"))]
pub struct UnknownPrice {
    /// `provider/model-id`.
    pub model: String,
    /// Agents that used it.
    pub agents: Vec<String>,
    /// Its usage.
    pub totals: Totals,
    /// How to give it a price.
    pub how_to_price: String,
}

/// A period report: buckets oldest first, the grand total, the unknown prices.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "UsagePeriods"))]
pub struct PeriodReport {
    /// `day`, `week` or `month`.
    pub granularity: String,
    /// The time zone the buckets are cut in (`UTC`, `America/Los_Angeles`, …).
    pub timezone: String,
    /// Buckets with at least one row, oldest first.
    pub buckets: Vec<Bucket>,
    /// All rows.
    pub total: Totals,
    /// Models without a price.
    pub unknown_prices: Vec<UnknownPrice>,
}

/// The line telling how to price `model`.
pub fn how_to_price(model: &str) -> String {
    format!(
        "add \"{model}\": {{\"input_per_mtok\": <USD>, \"output_per_mtok\": <USD>, \"cached_input_per_mtok\": <USD>}} under memories.prices in codex.config.json (USD per 1M tokens)"
    )
}

/// The models among `rows` that have unpriced rows, with their usage.
pub fn unknown_prices(rows: &[&AgentUsageRow]) -> Vec<UnknownPrice> {
    let mut m: BTreeMap<&str, UnknownPrice> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.cost_usd.is_none()) {
        let e = m.entry(r.model.as_str()).or_insert_with(|| UnknownPrice {
            model: r.model.clone(),
            how_to_price: how_to_price(&r.model),
            ..Default::default()
        });
        e.totals.add(r);
        if !e.agents.contains(&r.agent) {
            e.agents.push(r.agent.clone());
        }
    }
    m.into_values().collect()
}

/// Totals of `rows` passing `f` per `g` bucket of `zone`'s calendar.
pub fn periods(rows: &[AgentUsageRow], f: &Filter, g: Granularity, zone: &Zone) -> PeriodReport {
    let kept: Vec<&AgentUsageRow> = rows.iter().filter(|r| f.keeps(r)).collect();
    let mut buckets: BTreeMap<String, Bucket> = BTreeMap::new();
    let mut total = Totals::default();
    for r in &kept {
        let label = g.label(r.at_ms, zone);
        let b = buckets.entry(label.clone()).or_insert_with(|| Bucket {
            period: label,
            ..Default::default()
        });
        b.totals.add(r);
        b.by_agent.entry(r.agent.clone()).or_default().add(r);
        b.by_model.entry(r.model.clone()).or_default().add(r);
        total.add(r);
    }
    PeriodReport {
        granularity: match g {
            Granularity::Day => "day",
            Granularity::Week => "week",
            Granularity::Month => "month",
        }
        .into(),
        timezone: zone.name().to_string(),
        buckets: buckets.into_values().collect(),
        total,
        unknown_prices: unknown_prices(&kept),
    }
}

/// One session's usage.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "AgentSession"))]
pub struct SessionRow {
    /// Agent.
    pub agent: String,
    /// The agent's session id.
    pub session_id: String,
    /// Working directory, when recorded.
    pub project: Option<String>,
    /// Models used, in order of first use.
    pub models: Vec<String>,
    /// First request, Unix ms.
    pub first_ms: i64,
    /// Last request, Unix ms.
    pub last_ms: i64,
    /// Its usage.
    pub totals: Totals,
    /// Its usage split by model.
    pub by_model: BTreeMap<String, Totals>,
}

/// Sessions of `rows` passing `f`, most expensive first (unpriced ones by tokens after).
pub fn sessions(rows: &[AgentUsageRow], f: &Filter) -> Vec<SessionRow> {
    let mut m: BTreeMap<(String, String), SessionRow> = BTreeMap::new();
    for r in rows.iter().filter(|r| f.keeps(r)) {
        let e = m
            .entry((r.agent.clone(), r.session_id.clone()))
            .or_insert_with(|| SessionRow {
                agent: r.agent.clone(),
                session_id: r.session_id.clone(),
                project: r.project.clone(),
                first_ms: r.at_ms,
                last_ms: r.at_ms,
                ..Default::default()
            });
        e.first_ms = e.first_ms.min(r.at_ms);
        e.last_ms = e.last_ms.max(r.at_ms);
        if e.project.is_none() {
            e.project = r.project.clone();
        }
        if !e.models.contains(&r.model) {
            e.models.push(r.model.clone());
        }
        e.totals.add(r);
        e.by_model.entry(r.model.clone()).or_default().add(r);
    }
    let mut v: Vec<SessionRow> = m.into_values().collect();
    v.sort_by(|a, b| {
        b.totals
            .cost_usd
            .unwrap_or(-1.0)
            .total_cmp(&a.totals.cost_usd.unwrap_or(-1.0))
            .then(b.totals.total_tokens.cmp(&a.totals.total_tokens))
            .then(a.session_id.cmp(&b.session_id))
    });
    v
}

/// The active block's pace and where it ends up at this pace.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "BlockBurn"))]
pub struct Burn {
    /// Tokens per minute over the block's first-to-last request span (at least 1 minute).
    pub tokens_per_min: f64,
    /// USD per hour over the same span; `None` when nothing is priced.
    pub usd_per_hour: Option<f64>,
    /// Milliseconds left until the block ends.
    pub remaining_ms: i64,
    /// Tokens at the block's end at this pace.
    pub projected_tokens: i64,
    /// USD at the block's end at this pace.
    pub projected_usd: Option<f64>,
}

/// One 5-hour block.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename = "UsageBlock"))]
pub struct Block {
    /// Start (the first request's hour, UTC), Unix ms.
    pub start_ms: i64,
    /// End (start + 5 h), Unix ms.
    pub end_ms: i64,
    /// First request, Unix ms.
    pub first_ms: i64,
    /// Last request, Unix ms.
    pub last_ms: i64,
    /// Whether it is still running at `now`.
    pub active: bool,
    /// Models used.
    pub models: Vec<String>,
    /// Its usage.
    pub totals: Totals,
    /// Pace and projection (active block only).
    pub burn: Option<Burn>,
}

/// The 5-hour blocks of `rows` passing `f`, oldest first, judged active against `now_ms`.
pub fn blocks(rows: &[AgentUsageRow], f: &Filter, now_ms: i64) -> Vec<Block> {
    let mut kept: Vec<&AgentUsageRow> = rows.iter().filter(|r| f.keeps(r)).collect();
    kept.sort_by_key(|r| r.at_ms);
    let mut out: Vec<Block> = Vec::new();
    for r in kept {
        let open = out
            .last()
            .is_some_and(|b| r.at_ms < b.end_ms && r.at_ms - b.last_ms <= BLOCK_MS);
        if !open {
            let start = r.at_ms - r.at_ms.rem_euclid(3_600_000);
            out.push(Block {
                start_ms: start,
                end_ms: start + BLOCK_MS,
                first_ms: r.at_ms,
                last_ms: r.at_ms,
                ..Default::default()
            });
        }
        let Some(b) = out.last_mut() else { continue };
        b.last_ms = r.at_ms;
        if !b.models.contains(&r.model) {
            b.models.push(r.model.clone());
        }
        b.totals.add(r);
    }
    if let Some(b) = out.last_mut()
        && now_ms < b.end_ms
        && now_ms - b.last_ms < BLOCK_MS
    {
        b.active = true;
        let minutes = ((b.last_ms - b.first_ms) as f64 / 60_000.0).max(1.0);
        let tpm = b.totals.total_tokens as f64 / minutes;
        let usd_h = b.totals.cost_usd.map(|c| c / minutes * 60.0);
        let remaining = (b.end_ms - now_ms).max(0);
        let rem_min = remaining as f64 / 60_000.0;
        b.burn = Some(Burn {
            tokens_per_min: tpm,
            usd_per_hour: usd_h,
            remaining_ms: remaining,
            projected_tokens: b.totals.total_tokens + (tpm * rem_min).round() as i64,
            projected_usd: b
                .totals
                .cost_usd
                .zip(usd_h)
                .map(|(c, h)| c + h * rem_min / 60.0),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(at_ms: i64, tokens: i64, cost: Option<f64>) -> AgentUsageRow {
        AgentUsageRow {
            agent: "codex".into(),
            session_id: "s".into(),
            model: "openai/gpt-5".into(),
            at_ms,
            tokens: TokenCounts {
                input_tokens: tokens,
                ..Default::default()
            },
            cost_usd: cost,
            ..Default::default()
        }
    }

    const H: i64 = 3_600_000;

    #[test]
    fn blocks_start_at_the_hour_and_split_after_five_hours_or_a_gap() {
        let t0 = 1_780_000_000_000 - 1_780_000_000_000 % H; // an exact hour
        let rows = [
            r(t0 + 10 * 60_000, 100, Some(1.0)),
            r(t0 + 4 * H + 50 * 60_000, 100, Some(1.0)), // still inside [t0, t0+5h)
            r(t0 + 5 * H + 1, 100, Some(1.0)),           // past the end: new block
            r(t0 + 11 * H, 100, None),                   // new block; unpriced
        ];
        let b = blocks(&rows, &Filter::default(), t0 + 11 * H + 30 * 60_000);
        assert_eq!(b.len(), 3);
        assert_eq!((b[0].start_ms, b[0].totals.requests), (t0, 2));
        assert_eq!(b[1].start_ms, t0 + 5 * H);
        assert!(!b[0].active && !b[1].active && b[2].active);
        let burn = b[2].burn.as_ref().unwrap();
        // One request: the span is clamped to a minute; cost unknown stays unknown.
        assert_eq!(burn.tokens_per_min, 100.0);
        assert_eq!((burn.usd_per_hour, burn.projected_usd), (None, None));
        assert_eq!(burn.remaining_ms, 4 * H + 30 * 60_000);
    }

    fn ms(s: &str) -> i64 {
        s.parse::<jiff::Timestamp>().unwrap().as_millisecond()
    }

    fn periods_of(stamps: &[&str], g: Granularity, zone: &str) -> Vec<(String, i64)> {
        let rows: Vec<AgentUsageRow> = stamps.iter().map(|s| r(ms(s), 1, Some(1.0))).collect();
        let p = periods(&rows, &Filter::default(), g, &Zone::named(zone).unwrap());
        assert_eq!(p.timezone, zone);
        p.buckets
            .into_iter()
            .map(|b| (b.period, b.totals.requests))
            .collect()
    }

    #[test]
    fn buckets_are_cut_at_the_zones_local_midnight() {
        // Around midnight in Los Angeles (UTC-8 in November) and Tokyo (UTC+9).
        let stamps = [
            "2026-11-29T07:30:00Z", // LA 28th 23:30 | Tokyo 29th 16:30
            "2026-11-29T08:30:00Z", // LA 29th 00:30 | Tokyo 29th 17:30
            "2026-11-29T14:30:00Z", // LA 29th 06:30 | Tokyo 29th 23:30
            "2026-11-29T15:30:00Z", // LA 29th 07:30 | Tokyo 30th 00:30
            "2026-12-01T07:30:00Z", // LA Nov 30th 23:30 | Tokyo Dec 1st 16:30
        ];
        let day = |z| periods_of(&stamps, Granularity::Day, z);
        let p = |v: &[(&str, i64)]| -> Vec<(String, i64)> {
            v.iter().map(|(a, n)| (a.to_string(), *n)).collect()
        };
        assert_eq!(day("UTC"), p(&[("2026-11-29", 4), ("2026-12-01", 1)]));
        assert_eq!(
            day("America/Los_Angeles"),
            p(&[("2026-11-28", 1), ("2026-11-29", 3), ("2026-11-30", 1)])
        );
        assert_eq!(
            day("Asia/Tokyo"),
            p(&[("2026-11-29", 3), ("2026-11-30", 1), ("2026-12-01", 1)])
        );
        // Sunday the 29th is the last day of ISO week 48; Monday the 30th starts week 49.
        assert_eq!(
            periods_of(&stamps, Granularity::Week, "America/Los_Angeles"),
            p(&[("2026-W48", 4), ("2026-W49", 1)])
        );
        assert_eq!(
            periods_of(&stamps, Granularity::Week, "Asia/Tokyo"),
            p(&[("2026-W48", 3), ("2026-W49", 2)])
        );
        assert_eq!(
            periods_of(&stamps, Granularity::Month, "America/Los_Angeles"),
            p(&[("2026-11", 5)])
        );
        assert_eq!(
            periods_of(&stamps, Granularity::Month, "UTC"),
            p(&[("2026-11", 4), ("2026-12", 1)])
        );
    }

    #[test]
    fn unpriced_rows_are_never_zero_dollars() {
        let rows = [r(0, 10, None), r(1, 10, Some(0.5)), r(86_400_000, 5, None)];
        let p = periods(&rows, &Filter::default(), Granularity::Day, &Zone::utc());
        assert_eq!(p.buckets[0].totals.cost_usd, Some(0.5));
        assert_eq!(p.buckets[0].totals.unpriced_requests, 1);
        assert_eq!(p.buckets[1].totals.cost_usd, None);
        assert_eq!(p.unknown_prices[0].totals.requests, 2);
        assert!(p.unknown_prices[0].how_to_price.contains("memories.prices"));
    }

    /// Codex and Claude store input with its cache included; the report's columns are the
    /// same for both: uncached input, cache read, cache write, output, reasoning.
    #[test]
    fn every_agent_gets_the_same_column_meanings() {
        let row = |agent: &str, input, read, write, out, reasoning| AgentUsageRow {
            agent: agent.into(),
            model: "m/x".into(),
            tokens: TokenCounts {
                input_tokens: input,
                cached_input_tokens: read,
                cache_write_tokens: write,
                output_tokens: out,
                reasoning_tokens: reasoning,
            },
            cache_write_1h_tokens: write / 2,
            ..Default::default()
        };
        let rows = [
            row("codex", 1000, 600, 0, 50, 20),
            row("claude", 1103, 1000, 100, 7, 0),
        ];
        let p = periods(&rows, &Filter::default(), Granularity::Day, &Zone::utc());
        let cols = |t: &Totals| {
            [
                t.input_tokens,
                t.cache_read_tokens,
                t.cache_write_tokens,
                t.cache_write_1h_tokens,
                t.output_tokens,
                t.reasoning_tokens,
                t.total_tokens,
            ]
        };
        let b = &p.buckets[0].by_agent;
        assert_eq!(cols(&b["codex"]), [400, 600, 0, 0, 50, 20, 1050]);
        assert_eq!(cols(&b["claude"]), [3, 1000, 100, 50, 7, 0, 1110]);
        assert!((b["claude"].cache_hit_rate - 1000.0 / 1103.0).abs() < 1e-12);
        let v = serde_json::to_value(&p.total).unwrap();
        assert_eq!(v["input_tokens"], 403);
        assert_eq!(v["cache_read_tokens"], 1600);
        assert!(v.get("cached_input_tokens").is_none(), "{v}");
    }
}
