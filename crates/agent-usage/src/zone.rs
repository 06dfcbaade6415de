//! The time zone a report is cut in: days, ISO weeks and months start at local midnight
//! of this zone, and the times a report prints are local to it.
//!
//! The default is the user's own zone (`TZ`, else the system's `/etc/localtime`), as
//! ccusage does: a developer in Los Angeles who works until 23:00 expects that evening in
//! "today", not in tomorrow's UTC bucket. `--timezone UTC` (or any IANA name) picks
//! another. Zones come from the system's time zone database (`/usr/share/zoneinfo`) via
//! `jiff`, so daylight-saving days are 23 or 25 hours long, as they are.

use jiff::Timestamp;
use jiff::civil::Date;
use jiff::tz::TimeZone;

use codex_free_core::{Error, Result};

/// A time zone with the name reports show for it.
#[derive(Debug, Clone)]
pub struct Zone {
    tz: TimeZone,
    name: String,
}

impl Zone {
    /// UTC.
    pub fn utc() -> Zone {
        Zone {
            tz: TimeZone::UTC,
            name: "UTC".into(),
        }
    }

    /// The zone named `name`: `UTC` (any case) or an IANA name such as
    /// `America/Los_Angeles` (looked up case-insensitively, shown as the database spells
    /// it).
    ///
    /// Errors: [`Error::InvalidArgument`] naming `name` when the database has no such zone.
    pub fn named(name: &str) -> Result<Zone> {
        let n = name.trim();
        if n.eq_ignore_ascii_case("utc") {
            return Ok(Zone::utc());
        }
        match TimeZone::get(n) {
            Ok(tz) => Ok(Zone {
                name: tz.iana_name().unwrap_or(n).to_string(),
                tz,
            }),
            Err(_) => Err(Error::InvalidArgument(format!(
                "unknown time zone \"{name}\": expected an IANA name such as America/Los_Angeles or Asia/Tokyo, or UTC"
            ))),
        }
    }

    /// The user's zone: `TZ` when set, else the system's. Named by its IANA name when it
    /// has one, else by the `TZ` value (a POSIX rule such as `EST5EDT`), else `local`.
    /// UTC when neither can be read (logged).
    pub fn local() -> Zone {
        match TimeZone::try_system() {
            Ok(tz) => {
                let name = tz
                    .iana_name()
                    .map(str::to_string)
                    .or_else(|| {
                        std::env::var("TZ")
                            .ok()
                            .map(|s| s.trim_start_matches(':').to_string())
                            .filter(|s| !s.is_empty())
                    })
                    .unwrap_or_else(|| "local".into());
                // jiff's own name for "no zone information" behaves like UTC: say so.
                let name = if name == "Etc/Unknown" {
                    "UTC".into()
                } else {
                    name
                };
                Zone { tz, name }
            }
            Err(e) => {
                tracing::warn!(error = %e, "usage: the system time zone cannot be read; using UTC");
                Zone::utc()
            }
        }
    }

    /// [`Zone::named`] for `Some` non-empty names, else [`Zone::local`].
    ///
    /// Errors: as [`Zone::named`].
    pub fn named_or_local(name: Option<&str>) -> Result<Zone> {
        match name.map(str::trim).filter(|n| !n.is_empty()) {
            Some(n) => Zone::named(n),
            None => Ok(Zone::local()),
        }
    }

    /// The name reports show: `UTC`, `America/Los_Angeles`, ….
    pub fn name(&self) -> &str {
        &self.name
    }

    fn zoned(&self, at_ms: i64) -> jiff::ZonedDateTime {
        Timestamp::from_millisecond(at_ms)
            .unwrap_or(Timestamp::UNIX_EPOCH)
            .to_zoned_datetime(self.tz.clone())
    }

    /// The local calendar day holding `at_ms` (Unix ms; out of range reads as the epoch).
    pub fn date_of(&self, at_ms: i64) -> Date {
        self.zoned(at_ms).date()
    }

    /// The first millisecond of local day `d` (Unix ms): local midnight, or the first
    /// instant after it when midnight falls in a daylight-saving gap.
    ///
    /// Errors: [`Error::InvalidArgument`] for a day outside the supported range
    /// (years -9999..=9999).
    pub fn day_start_ms(&self, d: Date) -> Result<i64> {
        d.to_zoned_datetime(self.tz.clone())
            .and_then(|z| z.start_of_day())
            .map(|z| z.timestamp().as_millisecond())
            .map_err(|e| Error::InvalidArgument(format!("day {d} in {}: {e}", self.name)))
    }

    /// `at_ms` (Unix ms) as local `YYYY-MM-DD HH:MM`.
    pub fn minute(&self, at_ms: i64) -> String {
        self.zoned(at_ms).strftime("%Y-%m-%d %H:%M").to_string()
    }

    /// `at_ms` (Unix ms) as local RFC 3339 with its offset, `2026-11-29T16:30:00.000-08:00`.
    pub fn rfc3339(&self, at_ms: i64) -> String {
        self.zoned(at_ms)
            .strftime("%Y-%m-%dT%H:%M:%S%.3f%:z")
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_zones_resolve_and_unknown_names_are_errors_naming_them() {
        assert_eq!(Zone::named("utc").unwrap().name(), "UTC");
        assert_eq!(
            Zone::named("america/los_angeles").unwrap().name(),
            "America/Los_Angeles"
        );
        let e = Zone::named("Mars/Olympus_Mons").unwrap_err().to_string();
        assert!(e.contains("Mars/Olympus_Mons") && e.contains("IANA"), "{e}");
        // No name (an empty query parameter) is the local zone, not an error.
        assert_eq!(
            Zone::named_or_local(Some(" ")).unwrap().name(),
            Zone::local().name()
        );
    }

    #[test]
    fn days_start_at_local_midnight_and_dst_days_are_not_24_hours() {
        let la = Zone::named("America/Los_Angeles").unwrap();
        // 2026-11-01 is the day US daylight saving ends: 25 hours long.
        let d = jiff::civil::date(2026, 11, 1);
        let start = la.day_start_ms(d).unwrap();
        let next = la.day_start_ms(d.tomorrow().unwrap()).unwrap();
        assert_eq!(next - start, 25 * 3_600_000);
        // 2026-11-01T07:00Z is local midnight (UTC-7 until 09:00Z).
        assert_eq!(start, 1_793_516_400_000);
        assert_eq!(la.date_of(start - 1), jiff::civil::date(2026, 10, 31));
        assert_eq!(la.minute(start), "2026-11-01 00:00");
        let tokyo = Zone::named("Asia/Tokyo").unwrap();
        assert_eq!(tokyo.rfc3339(0), "1970-01-01T09:00:00.000+09:00");
    }
}
