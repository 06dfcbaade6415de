//! The monthly spend cap (`memories.monthly_spend_cap_usd`): the one check phase 1, phase 2
//! and `memories status` make before a model request, against this month's priced usage
//! in the store (waiting and refused requests cost nothing, so they never count).

use serde::Serialize;

use codex_free_core::Result;
use codex_free_core::config::MemoriesConfig;
use codex_free_store::Store;

/// Spend-cap state for this month.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapState {
    /// The cap, USD.
    pub cap_usd: f64,
    /// Spent this month (priced requests), USD.
    pub spent_usd: f64,
    /// Whether no more calls may be made.
    pub reached: bool,
}

/// Check `memories.monthly_spend_cap_usd` against this month's usage. `None` when no cap.
pub fn cap_state(store: &Store, cfg: &MemoriesConfig) -> Result<Option<CapState>> {
    cap_state_of(store, cfg.monthly_spend_cap_usd)
}

/// The one spend-cap check (phase 1, phase 2, status): `cap` USD against this month's
/// spend ([`Store::spend_this_month`]). `None` when there is no cap.
pub fn cap_state_of(store: &Store, cap: Option<f64>) -> Result<Option<CapState>> {
    let Some(cap) = cap else {
        return Ok(None);
    };
    let spent = store.spend_this_month()?.usd;
    Ok(Some(CapState {
        cap_usd: cap,
        spent_usd: spent,
        reached: spent >= cap,
    }))
}
