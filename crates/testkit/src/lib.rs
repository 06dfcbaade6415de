//! Dev-only helpers shared by the integration tests and benchmarks: a mock model provider
//! that speaks the real OpenAI and Anthropic wire formats, and footer-following helpers for
//! paged tool output ([`pages`]).
// Test-only code: a panic is a failed test, which is what an unwrap here should be.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod mock_provider;
pub mod pages;
