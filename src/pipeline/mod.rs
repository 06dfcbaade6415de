//! The background memory pipeline: transcripts of the agents ([`sources`]) become one
//! [`rollout::Rollout`] model, are found and watched by [`discover`], sanitised by
//! [`redact`] and [`compact`], rendered for phase 1 by [`render`]; [`bench`] measures the
//! compaction offline.
//!
//! Invariant: nothing here modifies an agent's transcript, and no transcript text leaves
//! [`render`] unredacted.

pub mod bench;
pub mod compact;
pub mod discover;
pub mod redact;
pub mod render;
pub mod rollout;
pub mod sources;
