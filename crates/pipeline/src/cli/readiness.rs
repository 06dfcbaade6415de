//! `memories readiness`: whether a run can happen now, and V2's readiness.

use super::ControlEnv;
use super::status::describe_model;

use serde::Serialize;

use crate::phase1::cap_state;
use codex_free_core::Result;
use codex_free_core::config::MemoryVersion;

/// One readiness check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// Passed.
    pub ok: bool,
    /// Details or the fix.
    pub detail: String,
}

/// `memories readiness`: can a run happen now, and if not, why; and V2's readiness.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Readiness {
    /// All checks passed.
    pub ready: bool,
    /// The checks.
    pub checks: Vec<Check>,
    /// V2's consolidated-thread count against the threshold and its summary's validity.
    pub v2: crate::v2::summary::V2Readiness,
}

/// V2's readiness in `env`'s home against `minimum` (checked: 1–4096). Reads the V2
/// database only when it exists (a home that never ran V2 has 0 threads; nothing is
/// created).
///
/// Errors: a `minimum` out of range; the V2 database cannot be read.
pub fn v2_readiness(env: &ControlEnv, minimum: u32) -> Result<crate::v2::summary::V2Readiness> {
    let cfg = env.config()?;
    let db = crate::v2::db_path(&env.home, MemoryVersion::V2);
    let count = if db.is_file() {
        env.store_for(MemoryVersion::V2)?
            .max_consolidated_thread_count()?
    } else {
        0
    };
    crate::v2::summary::readiness(
        &crate::v2::folder(&env.home, MemoryVersion::V2),
        count,
        minimum,
        cfg.memories.active_version().as_str(),
    )
}

/// Run the readiness checks (no model call), V2's against the default threshold.
pub fn readiness(env: &ControlEnv) -> Result<Readiness> {
    readiness_with(env, crate::v2::summary::DEFAULT_READY_MINIMUM)
}

/// [`readiness`] with V2's threshold `minimum` (1–4096).
///
/// Errors: config or database errors; a `minimum` out of range.
pub fn readiness_with(env: &ControlEnv, minimum: u32) -> Result<Readiness> {
    let v2 = v2_readiness(env, minimum)?;
    let cfg = env.config()?;
    let m = &cfg.memories;
    let mut checks = Vec::new();
    let mut add = |name: &str, ok: bool, detail: String| {
        checks.push(Check {
            name: name.into(),
            ok,
            detail,
        })
    };
    add(
        "pipeline on",
        m.enabled,
        if m.enabled {
            "memories.enabled = true".into()
        } else {
            "run `codex-free memories on`".into()
        },
    );
    let ms = describe_model(m, env.secrets.as_ref());
    add(
        "model",
        ms.problem.is_none(),
        ms.problem.clone().unwrap_or_else(|| {
            format!(
                "{} via {} (key: {})",
                ms.model,
                ms.api.clone().unwrap_or_default(),
                ms.key
            )
        }),
    );
    let priced = ms.price_source != "unknown";
    let cap_needs_price = m.monthly_spend_cap_usd.is_some() && !priced;
    add(
        "price",
        !cap_needs_price,
        if priced {
            format!("{} ({})", ms.price, ms.price_source)
        } else if cap_needs_price {
            format!(
                "price of {} unknown and a spend cap is set: add memories.prices.\"{}\"",
                ms.model, ms.model
            )
        } else {
            "price unknown: spend will show \"price unknown\" (add memories.prices to count it)"
                .into()
        },
    );
    match env.store() {
        Ok(store) => {
            add(
                "database",
                true,
                format!("schema v{}", store.schema_version()?),
            );
            let cap = cap_state(&store, m)?;
            add(
                "spend cap",
                !cap.as_ref().is_some_and(|c| c.reached),
                match cap {
                    Some(c) => format!("${:.4} of ${:.2} this month", c.spent_usd, c.cap_usd),
                    None => "no cap set".into(),
                },
            );
        }
        Err(e) => add("database", false, e.to_string()),
    }
    match env.input.scan(&m.sources) {
        Ok(t) => add(
            "sources",
            !t.is_empty(),
            if t.is_empty() {
                format!("no sessions found in {}", m.sources.join(", "))
            } else {
                format!("{} sessions found", t.len())
            },
        ),
        Err(e) => add("sources", false, e.to_string()),
    }
    let ready = checks.iter().all(|c| c.ok);
    Ok(Readiness { ready, checks, v2 })
}

impl Readiness {
    /// Human-readable text.
    pub fn render(&self) -> String {
        let mut s = format!("{}\n", if self.ready { "ready" } else { "not ready" });
        for c in &self.checks {
            s.push_str(&format!(
                "  [{}] {}: {}\n",
                if c.ok { "ok" } else { "!!" },
                c.name,
                c.detail
            ));
        }
        let v = &self.v2;
        s.push_str(&format!(
            "v2: {} — {} of {} consolidated threads; summary {}; active version {} (readiness never switches it; set memories.version and restart)\n",
            if v.ready { "ready" } else { "not ready" },
            v.consolidated_threads,
            v.minimum,
            if v.summary_valid {
                "valid".to_string()
            } else {
                format!("not valid ({})", v.summary_problems.join("; "))
            },
            v.active_version
        ));
        s
    }
}
