//! The monthly spend cap (`memories.monthly_spend_cap_usd`): the one check phase 1, phase 2
//! and `memories status` make before a model request, against this month's priced usage
//! in the store (waiting and refused requests cost nothing, so they never count).
//!
//! V1 and V2 keep their usage rows in their own databases (`state.sqlite`,
//! `state_v2.sqlite`); the cap is one, so the spend it is held against is the sum of both
//! ([`month_spend_usd`]).

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
    let spent = month_spend_usd(store)?;
    Ok(Some(CapState {
        cap_usd: cap,
        spent_usd: spent,
        reached: spent >= cap,
    }))
}

/// The other pipeline's database beside `store`'s file (`state.sqlite` ↔
/// `state_v2.sqlite`), when it exists. An in-memory store has none.
fn peer_db(store: &Store) -> Option<std::path::PathBuf> {
    let path = store.path()?;
    let name = path.file_name()?.to_str()?;
    let peer = match name {
        codex_free_store::DB_FILE => codex_free_store::DB_FILE_V2,
        codex_free_store::DB_FILE_V2 => codex_free_store::DB_FILE,
        _ => return None,
    };
    let p = path.with_file_name(peer);
    p.is_file().then_some(p)
}

/// This calendar month's priced spend (UTC), USD, of both memory pipelines: `store`'s and
/// that of the other version's database beside it, if there is one.
///
/// Errors: either database cannot be read.
pub fn month_spend_usd(store: &Store) -> Result<f64> {
    let mut usd = store.spend_this_month()?.usd;
    if let Some(peer) = peer_db(store) {
        let other = Store::open(&peer, store.clock())?;
        usd += other.spend_this_month()?.usd;
    }
    Ok(usd)
}
