//! Token counting. Exact counts use the `o200k_base` encoding (the GPT-4o/5 family) through
//! GitHub's `bpe-openai`, which gives tiktoken's counts (a test checks them against
//! `tiktoken-rs` on real transcripts) at about twice its speed: counting is most of the
//! cost of preparing a phase-1 input; budgets on hot paths use the public Codex Free's estimate of 4 bytes per token
//! (about 4 characters per token), which over-counts code and
//! never under-counts UTF-8 text by more than 4x.

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

/// Exact tokens of `text` under `o200k_base`. About 20 MB/s in a release build (tiktoken-rs:
/// about 8 MB/s on the same text).
pub fn count(text: &str) -> usize {
    bpe_openai::o200k_base().count(text)
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

    #[test]
    fn counts_equal_tiktoken_on_real_transcripts_and_odd_text() {
        let tk = tiktoken_rs::o200k_base().unwrap();
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/sessions");
        let mut texts: Vec<String> = Vec::new();
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if let Ok(t) = std::fs::read_to_string(&p) {
                    texts.extend(t.lines().map(str::to_owned));
                    texts.push(t);
                }
            }
        }
        assert!(texts.len() > 100, "fixtures found");
        texts.extend([
            "=".repeat(81 * 1024),
            "当前版本是 1.2.3，现在部署在线上。".into(),
            "  \t\r\n  trailing   \n\n".into(),
            "emoji 🎉🎉 and combining e\u{301}".into(),
            "a".repeat(10_000),
        ]);
        for t in &texts {
            assert_eq!(
                count(t),
                tk.encode_ordinary(t).len(),
                "{:?}",
                &t[..t.len().min(80)]
            );
        }
    }
}
