//! Token counting. Exact counts use `tiktoken-rs`'s `o200k_base` encoding (the GPT-4o/5
//! family); budgets on hot paths use the public Codex Free's estimate of 4 bytes per token
//! (about 4 characters per token), which over-counts code and
//! never under-counts UTF-8 text by more than 4x.

use std::sync::OnceLock;

/// Bytes per token used by [`estimate`]; from the public Codex Free's rule of thumb.
pub const BYTES_PER_TOKEN: usize = 4;

/// Estimated tokens of `text`: `ceil(len_bytes / 4)`. Cheap; used for tool-output budgets.
pub fn estimate(text: &str) -> usize {
    text.len().div_ceil(BYTES_PER_TOKEN)
}

/// Bytes allowed for a budget of `tokens` under [`estimate`].
pub fn bytes_for(tokens: usize) -> usize {
    tokens.saturating_mul(BYTES_PER_TOKEN)
}

fn bpe() -> &'static tiktoken_rs::CoreBPE {
    static BPE: OnceLock<tiktoken_rs::CoreBPE> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::o200k_base().expect("o200k_base is embedded in tiktoken-rs"))
}

/// Exact tokens of `text` under `o200k_base` (tiktoken-rs). Costs about 1 µs per 4 bytes.
pub fn count(text: &str) -> usize {
    bpe().encode_ordinary(text).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_rounds_up() {
        assert_eq!(estimate(""), 0);
        assert_eq!(estimate("abc"), 1);
        assert_eq!(estimate("abcde"), 2);
    }

    #[test]
    fn exact_count_is_o200k() {
        // o200k_base: "hello", " world", ",", " this", " is", " a", " test".
        assert_eq!(count("hello world, this is a test"), 7);
        assert_eq!(count(""), 0);
    }
}
