//! Runs & costs: the request rows of the usage log grouped into runs, filtered,
//! summed per day / ISO week / month, and exported as CSV. Also a documented seeding
//! function for tests and demos ([`demo_records`]).
//!
//! Invariant: a request without a price contributes to `unpriced_requests`, never $0 to a
//! cost; buckets are UTC; sums are computed from the same rows that are listed.

use super::csv::cell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Utc};

use crate::api::dto::{RequestRow, RunFilter, RunRow, RunsView, UsageTotals};
use codex_free_core::Result;

/// Run-level facts (the `runs` table): what a run was and how it ended, including runs
/// that made no request (spend cap reached, nothing eligible, a run-level error).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunMeta {
    /// Run id.
    pub run_id: String,
    /// Start (Unix ms).
    pub time_ms: i64,
    /// `phase1` / `phase2`.
    pub phase: String,
    /// `startup`, `watch`, `manual`, `force`, `periodic`.
    pub trigger: String,
    /// Model, when the run resolved one.
    pub model: Option<String>,
    /// Run outcome (`ok`, `failed`, `cancelled`, `spend_cap`, `skipped`, `running`).
    pub outcome: Option<String>,
    /// Run-level error.
    pub error: Option<String>,
}

/// Where usage comes from (`state.sqlite` in the app, see `api::store_usage`; a list in
/// tests and demos).
pub trait UsageSource: Send + Sync {
    /// Every request with `since_ms <= time_ms < until_ms` (bounds optional), any order.
    fn requests(&self, since_ms: Option<i64>, until_ms: Option<i64>) -> Result<Vec<RequestRow>>;
    /// Runs started in `[since_ms, until_ms)`; sources without run records return none and
    /// runs are then derived from their requests alone.
    fn runs(&self, _since_ms: Option<i64>, _until_ms: Option<i64>) -> Result<Vec<RunMeta>> {
        Ok(Vec::new())
    }
    /// Spend of the requests made at or after `since_ms`. The database source answers with
    /// [`codex_free_store::Store::spend_since`], the same sum the pipeline's spend cap reads;
    /// this default sums [`Self::requests`] for in-memory sources.
    fn spend_since(&self, since_ms: i64) -> Result<codex_free_store::Spend> {
        let rows = self.requests(Some(since_ms), None)?;
        Ok(codex_free_store::Spend {
            // fold from +0.0: an empty f64 `sum()` is -0.0, which would print as "-$0.00".
            usd: rows
                .iter()
                .filter_map(|r| r.cost_usd)
                .fold(0.0, |a, c| a + c),
            requests: rows.len() as i64,
            unpriced_requests: rows.iter().filter(|r| r.cost_usd.is_none()).count() as i64,
        })
    }
}

/// An in-memory usage source: a test double and the seed for demos (see [`demo_records`]).
#[derive(Default)]
pub struct MemoryUsage(Mutex<Vec<RequestRow>>);

impl MemoryUsage {
    /// A source holding `rows`.
    pub fn new(rows: Vec<RequestRow>) -> Self {
        Self(Mutex::new(rows))
    }
    /// Append rows.
    pub fn push(&self, rows: impl IntoIterator<Item = RequestRow>) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(rows);
    }
}

impl UsageSource for MemoryUsage {
    fn requests(&self, since_ms: Option<i64>, until_ms: Option<i64>) -> Result<Vec<RequestRow>> {
        Ok(self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|r| {
                since_ms.is_none_or(|s| r.time_ms >= s) && until_ms.is_none_or(|u| r.time_ms < u)
            })
            .cloned()
            .collect())
    }
}

fn matches(r: &RequestRow, f: &RunFilter) -> bool {
    let eq = |want: &Option<String>, have: &str| {
        want.as_deref().is_none_or(|w| w.is_empty() || w == have)
    };
    f.since_ms.is_none_or(|s| r.time_ms >= s)
        && f.until_ms.is_none_or(|u| r.time_ms < u)
        && eq(&f.phase, &r.phase)
        && eq(&f.model, &r.model)
        && eq(&f.outcome, &r.outcome)
}

fn add(t: &mut UsageTotals, r: &RequestRow) {
    t.requests += 1;
    t.input_tokens += r.input_tokens;
    t.cached_input_tokens += r.cached_input_tokens;
    t.output_tokens += r.output_tokens;
    match r.cost_usd {
        Some(c) => t.cost_usd += c,
        None => t.unpriced_requests += 1,
    }
    if r.outcome == "failed" {
        t.failed_requests += 1;
    }
}

fn utc(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).single().unwrap_or_default()
}

fn day_start(d: NaiveDate) -> i64 {
    d.and_time(chrono::NaiveTime::MIN)
        .and_utc()
        .timestamp_millis()
}

/// Bucket label and start for `ms` at `period` (`day`, `week` = ISO week, `month`), UTC.
pub fn bucket(ms: i64, period: &str) -> (String, i64) {
    let d = utc(ms).date_naive();
    match period {
        "week" => {
            let w = d.iso_week();
            let monday =
                NaiveDate::from_isoywd_opt(w.year(), w.week(), chrono::Weekday::Mon).unwrap_or(d);
            (format!("{}-W{:02}", w.year(), w.week()), day_start(monday))
        }
        "month" => {
            let first = NaiveDate::from_ymd_opt(d.year(), d.month(), 1).unwrap_or(d);
            (format!("{}-{:02}", d.year(), d.month()), day_start(first))
        }
        _ => (d.format("%Y-%m-%d").to_string(), day_start(d)),
    }
}

fn totals_by(rows: &[&RequestRow], period: &str) -> Vec<UsageTotals> {
    let mut map: BTreeMap<i64, (UsageTotals, BTreeSet<&str>)> = BTreeMap::new();
    for r in rows {
        let (label, start) = bucket(r.time_ms, period);
        let e = map.entry(start).or_insert_with(|| {
            (
                UsageTotals {
                    label,
                    start_ms: start,
                    ..Default::default()
                },
                BTreeSet::new(),
            )
        });
        add(&mut e.0, r);
        e.1.insert(r.run_id.as_str());
    }
    map.into_values()
        .map(|(mut t, runs)| {
            t.runs = runs.len() as u32;
            t
        })
        .collect()
}

fn run_of(run_id: &str, mut reqs: Vec<RequestRow>, meta: Option<&RunMeta>) -> RunRow {
    reqs.sort_by_key(|r| r.time_ms);
    let mut t = UsageTotals::default();
    reqs.iter().for_each(|r| add(&mut t, r));
    let phases: BTreeSet<&str> = reqs.iter().map(|r| r.phase.as_str()).collect();
    let models: BTreeSet<&str> = reqs.iter().map(|r| r.model.as_str()).collect();
    let one = |s: BTreeSet<&str>| {
        if s.len() == 1 {
            s.into_iter().next().unwrap_or_default().to_string()
        } else {
            "mixed".into()
        }
    };
    let bad = reqs.iter().find(|r| r.outcome != "ok");
    let derived = bad
        .map(|r| r.outcome.clone())
        .unwrap_or_else(|| "ok".into());
    let outcome = match meta.and_then(|m| m.outcome.clone()) {
        Some(o) if o != "ok" && !o.is_empty() => o,
        _ => derived,
    };
    let error = meta
        .and_then(|m| m.error.clone())
        .or_else(|| reqs.iter().find_map(|r| r.error.clone()));
    let phase = if reqs.is_empty() {
        meta.map(|m| m.phase.clone()).unwrap_or_default()
    } else {
        one(phases)
    };
    let model = if reqs.is_empty() {
        meta.and_then(|m| m.model.clone()).unwrap_or_default()
    } else {
        one(models)
    };
    RunRow {
        run_id: run_id.to_string(),
        time_ms: meta
            .map(|m| m.time_ms)
            .or_else(|| reqs.first().map(|r| r.time_ms))
            .unwrap_or_default(),
        phase,
        trigger: meta.map(|m| m.trigger.clone()).unwrap_or_default(),
        model,
        requests: t.requests,
        input_tokens: t.input_tokens,
        cached_input_tokens: t.cached_input_tokens,
        output_tokens: t.output_tokens,
        cost_usd: (t.unpriced_requests < t.requests).then_some(t.cost_usd),
        unpriced_requests: t.unpriced_requests,
        duration_ms: reqs.iter().map(|r| r.duration_ms).sum(),
        outcome,
        error,
        sent_bytes: reqs.iter().filter_map(|r| r.sent_bytes).sum(),
        redactions: reqs.iter().fold(BTreeMap::new(), |mut m, r| {
            for (k, v) in &r.redactions {
                *m.entry(k.clone()).or_insert(0) += v;
            }
            m
        }),
        request_rows: reqs,
    }
}

/// Build the Runs & costs view from all request rows and run records: filter, group by run
/// (newest first; runs without requests are listed from their record), total, and bucket
/// per day/week/month. Filter menus list values of the unfiltered rows.
pub fn view(all: Vec<RequestRow>, metas: Vec<RunMeta>, filter: &RunFilter) -> RunsView {
    let distinct = |f: fn(&RequestRow) -> &str| -> Vec<String> {
        all.iter()
            .map(f)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .map(String::from)
            .collect()
    };
    let (phases, models, outcomes) = (
        distinct(|r| &r.phase),
        distinct(|r| &r.model),
        distinct(|r| &r.outcome),
    );
    let rows: Vec<&RequestRow> = all.iter().filter(|r| matches(r, filter)).collect();
    let mut total = UsageTotals {
        label: "all".into(),
        ..Default::default()
    };
    rows.iter().for_each(|r| add(&mut total, r));
    let mut by_run: BTreeMap<&str, Vec<RequestRow>> = BTreeMap::new();
    for r in &rows {
        by_run
            .entry(r.run_id.as_str())
            .or_default()
            .push((*r).clone());
    }
    let meta_of = |id: &str| metas.iter().find(|m| m.run_id == id);
    let mut runs: Vec<RunRow> = by_run
        .into_iter()
        .map(|(id, reqs)| run_of(id, reqs, meta_of(id)))
        .collect();
    // Runs that made no request at all, filtered by their own record.
    let eq = |want: &Option<String>, have: &str| {
        want.as_deref().is_none_or(|w| w.is_empty() || w == have)
    };
    for m in &metas {
        let in_range = filter.since_ms.is_none_or(|s| m.time_ms >= s)
            && filter.until_ms.is_none_or(|u| m.time_ms < u);
        if in_range
            && !all.iter().any(|r| r.run_id == m.run_id)
            && eq(&filter.phase, &m.phase)
            && eq(&filter.model, m.model.as_deref().unwrap_or(""))
            && eq(&filter.outcome, m.outcome.as_deref().unwrap_or(""))
        {
            runs.push(run_of(&m.run_id, Vec::new(), Some(m)));
        }
    }
    total.runs = runs.len() as u32;
    runs.sort_by(|a, b| b.time_ms.cmp(&a.time_ms).then(b.run_id.cmp(&a.run_id)));
    RunsView {
        daily: totals_by(&rows, "day"),
        weekly: totals_by(&rows, "week"),
        monthly: totals_by(&rows, "month"),
        runs,
        total,
        phases,
        models,
        outcomes,
    }
}

/// CSV of the matching requests (one line per request, RFC 4180 quoting, UTC ISO times,
/// empty cost = price unknown), newest first. Header names are stable.
pub fn csv(all: Vec<RequestRow>, filter: &RunFilter) -> String {
    let mut rows: Vec<&RequestRow> = all.iter().filter(|r| matches(r, filter)).collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.time_ms));
    let mut out = String::from(
        "time_utc,run_id,phase,model,input_tokens,cached_input_tokens,output_tokens,cost_usd,duration_ms,outcome,error\n",
    );
    for r in rows {
        let cols = [
            utc(r.time_ms).to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            cell(&r.run_id),
            cell(&r.phase),
            cell(&r.model),
            r.input_tokens.to_string(),
            r.cached_input_tokens.to_string(),
            r.output_tokens.to_string(),
            r.cost_usd.map(|c| format!("{c:.6}")).unwrap_or_default(),
            r.duration_ms.to_string(),
            cell(&r.outcome),
            cell(r.error.as_deref().unwrap_or("")),
        ];
        out.push_str(&cols.join(","));
        out.push('\n');
    }
    out
}

/// Deterministic demo/test rows: `days` days of pipeline runs ending at `now_ms`, each day
/// one phase-1 run of 2 requests on `openai/gpt-5-mini` ($0.25 in / $0.025 cached / $2.00
/// out per 1M tokens, the figures used only for this seed) and, every third day, a
/// phase-2 run on `local/unpriced-model` with no price and one failed request. The exact
/// sums are asserted in tests and in the browser e2e, so change both together.
///
/// Day `d`'s runs start one hour before `now_ms - d` days, or at the UTC midnight of that
/// day when `now_ms` is less than an hour (plus the runs' 62 s) past midnight, so day 0
/// always falls on today's date and "today's spend" is never zero just after midnight.
pub fn demo_records(now_ms: i64, days: u32) -> Vec<RequestRow> {
    let mut out = Vec::new();
    let price =
        |i: u64, c: u64, o: u64| ((i - c) as f64 * 0.25 + c as f64 * 0.025 + o as f64 * 2.0) / 1e6;
    let since_midnight = now_ms.rem_euclid(86_400_000);
    let back = (since_midnight - 62_000).clamp(0, 3_600_000);
    for d in 0..days as i64 {
        let t = now_ms - d * 86_400_000 - back;
        for k in 0..2u64 {
            let (i, c, o) = (12_000 + 1000 * k, 2_000, 800 + 100 * k);
            out.push(RequestRow {
                run_id: format!("run-{d:03}-p1"),
                time_ms: t + k as i64 * 1000,
                phase: "phase1".into(),
                model: "openai/gpt-5-mini".into(),
                input_tokens: i,
                cached_input_tokens: c,
                output_tokens: o,
                cost_usd: Some(price(i, c, o)),
                duration_ms: 2_500,
                outcome: "ok".into(),
                error: None,
                sent_sha256: None,
                sent_bytes: None,
                redactions: BTreeMap::new(),
                sent_kept: false,
            });
        }
        if d % 3 == 0 {
            for (k, ok) in [(0i64, true), (1, false)] {
                out.push(RequestRow {
                    run_id: format!("run-{d:03}-p2"),
                    time_ms: t + 60_000 + k * 1000,
                    phase: "phase2".into(),
                    model: "local/unpriced-model".into(),
                    input_tokens: 30_000,
                    cached_input_tokens: 0,
                    output_tokens: 1_500,
                    cost_usd: None,
                    duration_ms: 9_000,
                    outcome: if ok { "ok" } else { "failed" }.into(),
                    error: (!ok)
                        .then(|| "provider: HTTP 500 from local/unpriced-model".to_string()),
                    sent_sha256: None,
                    sent_bytes: None,
                    redactions: BTreeMap::new(),
                    sent_kept: false,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_780_000_000_000; // 2026-05-28T20:26:40Z

    #[test]
    fn totals_and_grouping() {
        let rows = demo_records(NOW, 7);
        let v = view(rows.clone(), Vec::new(), &RunFilter::default());
        // 7 phase-1 runs + phase-2 runs on days 0, 3, 6
        assert_eq!(v.runs.len(), 10);
        assert_eq!(v.total.runs, 10);
        assert_eq!(v.total.requests, 7 * 2 + 3 * 2);
        assert_eq!(v.total.input_tokens, 7 * (12_000 + 13_000) + 3 * 60_000);
        assert_eq!(v.total.unpriced_requests, 6);
        assert_eq!(v.total.failed_requests, 3);
        let per_day = ((10_000.0 * 0.25 + 2_000.0 * 0.025 + 800.0 * 2.0)
            + (11_000.0 * 0.25 + 2_000.0 * 0.025 + 900.0 * 2.0))
            / 1e6;
        assert!(
            (v.total.cost_usd - 7.0 * per_day).abs() < 1e-9,
            "{}",
            v.total.cost_usd
        );
        assert_eq!(v.daily.len(), 7);
        assert!((v.daily.iter().map(|d| d.cost_usd).sum::<f64>() - v.total.cost_usd).abs() < 1e-12);
        assert_eq!(
            v.monthly.iter().map(|m| m.requests).sum::<u32>(),
            v.total.requests
        );
        // newest first; the unpriced run has a null cost, never 0
        assert!(v.runs[0].time_ms >= v.runs[1].time_ms);
        let p2 = v.runs.iter().find(|r| r.phase == "phase2").unwrap();
        assert_eq!(p2.cost_usd, None);
        assert_eq!(p2.outcome, "failed");
        assert_eq!(p2.request_rows.len(), 2);
    }

    #[test]
    fn demo_day_zero_is_today_even_just_after_midnight() {
        let midnight = NOW - NOW.rem_euclid(86_400_000);
        for now in [midnight + 5 * 60_000, midnight + 30_000, NOW] {
            let rows = demo_records(now, 3);
            let today: Vec<_> = rows.iter().filter(|r| r.time_ms >= midnight).collect();
            assert_eq!(
                today.len(),
                4,
                "at {now}: 2 phase-1 + 2 phase-2 requests today"
            );
            let days: std::collections::BTreeSet<_> = rows
                .iter()
                .map(|r| r.time_ms.div_euclid(86_400_000))
                .collect();
            assert_eq!(days.len(), 3, "one date per day at {now}");
        }
    }

    #[test]
    fn filters_apply_to_rows_and_totals() {
        let rows = demo_records(NOW, 7);
        let f = RunFilter {
            phase: Some("phase2".into()),
            ..Default::default()
        };
        let v = view(rows, Vec::new(), &f);
        assert_eq!(v.total.requests, 6);
        assert_eq!(v.total.cost_usd, 0.0);
        assert!(v.runs.iter().all(|r| r.phase == "phase2"));
        assert_eq!(
            v.phases,
            vec!["phase1", "phase2"],
            "menus list unfiltered values"
        );
    }

    #[test]
    fn runs_without_requests_are_listed_from_their_record() {
        let mut rows = demo_records(NOW, 1);
        rows.retain(|r| r.phase == "phase1");
        let metas = vec![
            RunMeta {
                run_id: "run-000-p1".into(),
                time_ms: NOW - 3_600_000,
                phase: "phase1".into(),
                trigger: "startup".into(),
                model: Some("openai/gpt-5-mini".into()),
                outcome: Some("ok".into()),
                error: None,
            },
            RunMeta {
                run_id: "capped".into(),
                time_ms: NOW,
                phase: "phase1".into(),
                trigger: "watch".into(),
                model: None,
                outcome: Some("spend_cap".into()),
                error: Some("monthly spend cap reached".into()),
            },
        ];
        let v = view(rows, metas, &RunFilter::default());
        assert_eq!(v.total.runs, 2);
        assert_eq!(v.runs[0].run_id, "capped");
        assert_eq!(
            (
                v.runs[0].requests,
                v.runs[0].outcome.as_str(),
                v.runs[0].cost_usd
            ),
            (0, "spend_cap", None)
        );
        assert_eq!(v.runs[1].trigger, "startup");
        assert_eq!(v.total.requests, 2);
    }

    #[test]
    fn buckets_are_utc_iso() {
        // 2026-01-01 is a Thursday: ISO week 2026-W01 starts Monday 2025-12-29.
        let ms = Utc
            .with_ymd_and_hms(2026, 1, 1, 12, 0, 0)
            .unwrap()
            .timestamp_millis();
        assert_eq!(bucket(ms, "day").0, "2026-01-01");
        assert_eq!(bucket(ms, "week").0, "2026-W01");
        assert_eq!(
            bucket(ms, "week").1,
            Utc.with_ymd_and_hms(2025, 12, 29, 0, 0, 0)
                .unwrap()
                .timestamp_millis()
        );
        assert_eq!(bucket(ms, "month").0, "2026-01");
    }

    #[test]
    fn csv_quotes_and_leaves_unknown_cost_empty() {
        let mut rows = demo_records(NOW, 1);
        rows[3].error = Some("bad, \"quoted\"\nline".into());
        let text = csv(rows, &RunFilter::default());
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("time_utc,run_id,phase"));
        assert!(text.contains("\"bad, \"\"quoted\"\"\nline\""), "{text}");
        // A provider's error text is outside text: no formula reaches a spreadsheet.
        rows = demo_records(NOW, 1);
        rows[3].error = Some("=HYPERLINK(\"http://x\")".into());
        let text = csv(rows, &RunFilter::default());
        assert!(text.contains(",\"'=HYPERLINK("), "{text}");
        assert!(
            text.contains(",local/unpriced-model,30000,0,1500,,9000,"),
            "{text}"
        );
    }
}
