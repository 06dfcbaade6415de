//! The background memory pipeline: [`transcript_input`] hands transcripts (from
//! `codex_free_transcripts`) to [`phase1`] (claims, extraction, usage); [`phase2`]
//! consolidates the extracted memories into the memory folder (`codex_free_memory`) with a
//! jailed agent; [`scheduler`] runs phase 1 then phase 2 in the background, [`cli`]
//! drives them from the CLI, [`run_log`] writes `memories.log`, and [`alerts`] raises spend,
//! failure and key alerts.
//!
//! Invariant: nothing here modifies an agent's transcript; every model request is sealed
//! by `codex_free_models::Outgoing` and held against the spend cap.

pub mod alerts;
pub use phase1::approval;
pub mod cli;
pub mod forecast;
mod json_answer;
pub mod phase1;
pub mod phase2;
pub mod run_log;
pub mod scheduler;
pub mod sent;
pub mod spend;
pub mod transcript_input;
pub mod v2;
