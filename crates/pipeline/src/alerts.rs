//! Alerts the user should see without opening the app: the month's spend crossing 80 %,
//! 90 % and 100 % of `memories.monthly_spend_cap_usd` (each once per calendar month, UTC),
//! runs that failed [`FAILING_RUNS`] times in a row, and a key the provider rejects. The
//! scheduler raises them after every pass; an [`AlertSink`] delivers them (the tray app as
//! desktop notifications, the headless server as warnings in its log). Every alert is also
//! a line in `<home>/memories.log`.
//!
//! Which spend thresholds were already announced is kept in `<home>/alerts.json`, so a
//! restart in the same month does not announce them again.
//!
//! Invariant: an alert text holds no key, token or transcript content: only amounts,
//! counts, model names and the provider's short error.

use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use codex_free_core::Result;
use codex_free_core::error::IoContext;

/// File under the state home remembering which spend thresholds were announced.
pub const ALERTS_FILE: &str = "alerts.json";
/// Spend thresholds, percent of the monthly cap: warn early enough to raise the cap or
/// slow down before the pipeline stops, and once more when it does stop.
pub const SPEND_THRESHOLDS: [u8; 3] = [80, 90, 100];
/// Consecutive failed passes before an alert: one or two failures are usually a blip (a
/// timeout, a 5xx); three in a row means the user has to act.
pub const FAILING_RUNS: u32 = 3;

/// One alert.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Alert {
    /// This month's spend reached `percent` % of the cap.
    Spend {
        /// 80, 90 or 100.
        percent: u8,
        /// Spend this month, USD.
        month_usd: f64,
        /// The cap, USD.
        cap_usd: f64,
    },
    /// The pipeline failed `count` passes in a row.
    RunsFailing {
        /// Consecutive failures ([`FAILING_RUNS`] when raised).
        count: u32,
        /// The last failure's message.
        last_error: String,
    },
    /// The provider rejected the key used for `model`.
    KeyRejected {
        /// `provider/model-id`.
        model: String,
    },
}

impl Alert {
    /// A short title for a notification.
    pub fn title(&self) -> String {
        match self {
            Alert::Spend { percent: 100, .. } => "Codex Free: monthly spend cap reached".into(),
            Alert::Spend { percent, .. } => {
                format!("Codex Free: {percent}% of the monthly cap spent")
            }
            Alert::RunsFailing { .. } => "Codex Free: the memory pipeline keeps failing".into(),
            Alert::KeyRejected { .. } => "Codex Free: the provider rejected your key".into(),
        }
    }

    /// One or two sentences: what happened and what to do.
    pub fn body(&self) -> String {
        let usd = |v: f64| codex_free_models::prices::format_cost(Some(v));
        match self {
            Alert::Spend {
                percent: 100,
                month_usd,
                cap_usd,
            } => format!(
                "{} of {} spent this month: no model calls until next month or a higher cap (Settings).",
                usd(*month_usd),
                usd(*cap_usd)
            ),
            Alert::Spend {
                month_usd, cap_usd, ..
            } => format!(
                "{} of {} spent this month. The pipeline stops at the cap.",
                usd(*month_usd),
                usd(*cap_usd)
            ),
            Alert::RunsFailing { count, last_error } => {
                let e: String = last_error.chars().take(200).collect();
                format!("{count} runs in a row failed. Last error: {e}")
            }
            Alert::KeyRejected { model } => {
                format!("The key used for {model} was refused. Save a new key in Models & keys.")
            }
        }
    }
}

/// Where alerts go.
pub trait AlertSink: Send + Sync {
    /// Deliver one alert; must not block for long (called from the scheduler loop).
    fn notify(&self, alert: &Alert);
}

/// A sink that writes each alert as a warning to the log (the headless server).
#[derive(Debug, Default, Clone, Copy)]
pub struct LogSink;

impl AlertSink for LogSink {
    fn notify(&self, alert: &Alert) {
        tracing::warn!(target: "alerts", "{}: {}", alert.title(), alert.body());
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct SpendState {
    /// `YYYY-MM` (UTC) the thresholds below belong to.
    month: String,
    /// Thresholds already announced this month.
    sent: Vec<u8>,
}

/// `YYYY-MM` (UTC) of unix second `ts`.
pub fn month_key(ts: i64) -> String {
    chrono::DateTime::from_timestamp(ts, 0)
        .unwrap_or_default()
        .format("%Y-%m")
        .to_string()
}

/// The spend thresholds newly crossed: `month_usd` against `cap_usd` in month `month`
/// (`YYYY-MM`), each threshold at most once per month; remembered in
/// `<home>/alerts.json` (written atomically). Only the highest newly crossed threshold
/// is returned when several are crossed at once (one notification, not three), and the
/// lower ones are marked as sent. No cap (or a cap ≤ 0) never alerts.
///
/// Errors: the state file cannot be written (an unreadable or malformed one is treated as
/// empty, so at worst an alert repeats).
pub fn spend_alerts(
    home: &Path,
    month: &str,
    month_usd: f64,
    cap_usd: Option<f64>,
) -> Result<Vec<Alert>> {
    let Some(cap) = cap_usd.filter(|c| *c > 0.0) else {
        return Ok(Vec::new());
    };
    let path = home.join(ALERTS_FILE);
    codex_free_core::home::with_lock(&path, || {
        let mut st: SpendState = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        if st.month != month {
            st = SpendState {
                month: month.to_string(),
                sent: Vec::new(),
            };
        }
        let crossed: Vec<u8> = SPEND_THRESHOLDS
            .iter()
            .copied()
            .filter(|t| month_usd >= cap * f64::from(*t) / 100.0 && !st.sent.contains(t))
            .collect();
        let Some(&top) = crossed.last() else {
            return Ok(Vec::new());
        };
        st.sent.extend(crossed);
        st.sent.sort_unstable();
        let text = serde_json::to_string(&st).map_err(|e| {
            codex_free_core::Error::InvalidArgument(format!("alerts state does not serialise: {e}"))
        })?;
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).ctx(|| format!("creating {}", d.display()))?;
        }
        codex_free_core::home::write_atomic_unlocked(&path, text.as_bytes())?;
        Ok(vec![Alert::Spend {
            percent: top,
            month_usd,
            cap_usd: cap,
        }])
    })
}

/// What one scheduler pass ended with, for [`Watch::after_pass`].
#[derive(Debug, Clone, PartialEq)]
pub enum PassEnd {
    /// Nothing failed (including "nothing to do").
    Ok,
    /// The pass failed with this message.
    Failed(String),
    /// The provider rejected the key of this model.
    KeyRejected {
        /// `provider/model-id`.
        model: String,
        /// The failure message.
        error: String,
    },
}

#[derive(Debug, Default)]
struct Streak {
    failures: u32,
    failing_sent: bool,
    key_sent: bool,
}

/// Turns scheduler passes into alerts and delivers them to a sink. The failure streak
/// lives in memory (a restart starts a new count); spend thresholds persist per month.
pub struct Watch {
    sink: std::sync::Arc<dyn AlertSink>,
    streak: Mutex<Streak>,
}

impl Watch {
    /// A watch delivering to `sink`.
    pub fn new(sink: std::sync::Arc<dyn AlertSink>) -> Self {
        Self {
            sink,
            streak: Mutex::new(Streak::default()),
        }
    }

    /// Record one pass: `end` and this month's spend (`month_usd` in month `month`,
    /// against `cap_usd`). Delivers and returns the alerts raised: a key rejection once
    /// until a pass succeeds, [`FAILING_RUNS`] failures in a row once until a pass
    /// succeeds, and [`spend_alerts`].
    pub fn after_pass(
        &self,
        home: &Path,
        end: &PassEnd,
        month: &str,
        month_usd: f64,
        cap_usd: Option<f64>,
    ) -> Vec<Alert> {
        let mut out = Vec::new();
        {
            let mut s = self.streak.lock().unwrap_or_else(|p| p.into_inner());
            match end {
                PassEnd::Ok => *s = Streak::default(),
                PassEnd::Failed(e) | PassEnd::KeyRejected { error: e, .. } => {
                    s.failures += 1;
                    if let PassEnd::KeyRejected { model, .. } = end
                        && !s.key_sent
                    {
                        s.key_sent = true;
                        out.push(Alert::KeyRejected {
                            model: model.clone(),
                        });
                    }
                    if s.failures >= FAILING_RUNS && !s.failing_sent {
                        s.failing_sent = true;
                        out.push(Alert::RunsFailing {
                            count: s.failures,
                            last_error: e.clone(),
                        });
                    }
                }
            }
        }
        match spend_alerts(home, month, month_usd, cap_usd) {
            Ok(a) => out.extend(a),
            Err(e) => tracing::warn!(error = %e, "spend alerts state not saved"),
        }
        for a in &out {
            self.sink.notify(a);
            let _ = crate::run_log::append(
                home,
                &crate::run_log::LogLine::Alert {
                    at: chrono::Utc::now().timestamp(),
                    text: format!("{}: {}", a.title(), a.body()),
                },
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Default)]
    struct Count(AtomicUsize, Mutex<Vec<String>>);
    impl AlertSink for Count {
        fn notify(&self, a: &Alert) {
            self.0.fetch_add(1, Ordering::SeqCst);
            self.1.lock().unwrap().push(a.title());
        }
    }

    #[test]
    fn spend_across_80_90_100_notifies_three_times_once_per_month() {
        let d = tempfile::tempdir().unwrap();
        let sink = Arc::new(Count::default());
        let w = Watch::new(sink.clone());
        let cap = Some(10.0);
        let month = "2026-12";
        for usd in [1.0, 5.0, 7.99, 8.0, 8.5, 9.0, 9.9, 10.0, 12.0, 15.0] {
            w.after_pass(d.path(), &PassEnd::Ok, month, usd, cap);
        }
        assert_eq!(
            sink.0.load(Ordering::SeqCst),
            3,
            "{:?}",
            sink.1.lock().unwrap()
        );
        // The next run in the same month, even from a new process: nothing.
        let w2 = Watch::new(sink.clone());
        w2.after_pass(d.path(), &PassEnd::Ok, month, 15.0, cap);
        assert_eq!(sink.0.load(Ordering::SeqCst), 3);
        // A new month starts over; a jump straight past 100 % is one alert, not three.
        let a = w2.after_pass(d.path(), &PassEnd::Ok, "2027-01", 11.0, cap);
        assert_eq!(
            a,
            vec![Alert::Spend {
                percent: 100,
                month_usd: 11.0,
                cap_usd: 10.0
            }]
        );
        assert_eq!(sink.0.load(Ordering::SeqCst), 4);
        w2.after_pass(d.path(), &PassEnd::Ok, "2027-01", 11.0, cap);
        assert_eq!(sink.0.load(Ordering::SeqCst), 4);
        // No cap: never.
        let d2 = tempfile::tempdir().unwrap();
        assert!(
            spend_alerts(d2.path(), month, 1e9, None)
                .unwrap()
                .is_empty()
        );
        // Each alert is in memories.log.
        let log = std::fs::read_to_string(d.path().join(crate::run_log::LOG_FILE)).unwrap();
        assert_eq!(log.matches("monthly").count(), 4, "{log}");
    }

    #[test]
    fn three_failures_in_a_row_and_a_rejected_key_alert_once() {
        let d = tempfile::tempdir().unwrap();
        let sink = Arc::new(Count::default());
        let w = Watch::new(sink.clone());
        let fail = PassEnd::Failed("Timeout after 4 attempt(s)".into());
        let m = "2026-12";
        assert!(w.after_pass(d.path(), &fail, m, 0.0, None).is_empty());
        assert!(w.after_pass(d.path(), &fail, m, 0.0, None).is_empty());
        w.after_pass(d.path(), &PassEnd::Ok, m, 0.0, None); // a success resets the streak
        assert!(w.after_pass(d.path(), &fail, m, 0.0, None).is_empty());
        assert!(w.after_pass(d.path(), &fail, m, 0.0, None).is_empty());
        let a = w.after_pass(d.path(), &fail, m, 0.0, None);
        assert!(
            matches!(a.as_slice(), [Alert::RunsFailing { count: 3, .. }]),
            "{a:?}"
        );
        assert!(
            w.after_pass(d.path(), &fail, m, 0.0, None).is_empty(),
            "once per streak"
        );
        let rej = PassEnd::KeyRejected {
            model: "openai/gpt-5-mini".into(),
            error: "Auth (HTTP 401)".into(),
        };
        let a = w.after_pass(d.path(), &rej, m, 0.0, None);
        assert!(a[0].body().contains("openai/gpt-5-mini"), "{a:?}");
        assert!(w.after_pass(d.path(), &rej, m, 0.0, None).is_empty());
        assert_eq!(sink.0.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn malformed_state_file_is_replaced_not_fatal() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join(ALERTS_FILE), b"\xff{not json").unwrap();
        let a = spend_alerts(d.path(), "2026-12", 9.5, Some(10.0)).unwrap();
        assert_eq!(a.len(), 1);
        assert!(
            spend_alerts(d.path(), "2026-12", 9.5, Some(10.0))
                .unwrap()
                .is_empty()
        );
    }
}
