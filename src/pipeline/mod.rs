//! The background memory pipeline: transcripts of the agents ([`sources`]) become one
//! [`rollout::Rollout`] model, are found and watched by [`discover`], sanitised by
//! [`redact`] and [`compact`], rendered for phase 1 by [`render`]; [`phase1`] claims jobs
//! and extracts raw memories, [`scheduler`] runs it on start and on change, [`usage`]
//! logs tokens and cost, [`control`] is the `memories` CLI; [`bench`] measures the
//! compaction offline.
//!
//! Invariant: nothing here modifies an agent's transcript, and no transcript text leaves
//! [`render`] unredacted.

pub mod bench;
pub mod compact;
pub mod control;
pub mod discover;
pub mod phase1;
pub mod redact;
pub mod render;
pub mod rollout;
pub mod scheduler;
pub mod sources;
pub mod usage;
