//! The upstream sanitizer's vectors, each with where its expected value comes from.
//!
//! - `CODEX`: openai/codex `codex-rs/secrets/src/sanitizer.rs`, tests
//!   `redacts_supported_bearer_tokens` and `avoids_bearer_false_positives` (read in the
//!   mirror zibuyu2015831/codex at 67e69213733ceba7c9871ac891156ee0c3109e22, same path).
//! - `PI`: Jinyoung001/pi-codex-memory `test/safety.test.mjs`, tests "redaction removes
//!   credential values without callback-offset leakage" and "pinned sanitizer bearer cases
//!   redact complete values and avoid prose false positives" (it pins openai/codex at
//!   5bf132cd527311eb61bbec46562e3890eb49df80, `vendor/codex/reference.json`).
//!
//! Only the inputs and expected outputs carry over; the rules are this crate's own.

use super::*;

/// openai/codex `codex-rs/secrets/src/sanitizer.rs` `redacts_supported_bearer_tokens`
/// (also the first five and the last two cases of pi-codex-memory's pinned bearer test).
const CODEX_REDACTED: &[(&str, &str)] = &[
    (
        "Bearer abcde+fghijklmnopqrstuvwxyz012345",
        "Bearer [REDACTED_SECRET]",
    ),
    (
        "Bearer abcdefghijklmnop+secret_suffix",
        "Bearer [REDACTED_SECRET]",
    ),
    (
        "Bearer sk-abcdefghijklmnopqrst+secret_suffix",
        "Bearer [REDACTED_SECRET]",
    ),
    (
        "Bearer AKIAABCDEFGHIJKLMNOP/~secret_suffix",
        "Bearer [REDACTED_SECRET]",
    ),
    (
        "Bearer AbcdefghijklMN09._~+/-==; echo done",
        "Bearer [REDACTED_SECRET]; echo done",
    ),
    (
        "authorization: bEaReR\tabcdefghijklmnop",
        "authorization: Bearer [REDACTED_SECRET]",
    ),
    ("Bearer   abcdefghijklmnop", "Bearer [REDACTED_SECRET]"),
];

/// openai/codex `codex-rs/secrets/src/sanitizer.rs` `avoids_bearer_false_positives`
/// (also pi-codex-memory's pinned bearer test): each stays exactly as it is.
const CODEX_UNTOUCHED: &[&str] = &[
    "Bearer of good news",
    "Bearer abcdefghijklmno",
    "NotABearer abcdefghijklmnop",
    "Bearerabcdefghijklmnop",
    "Bearer\nabcdefghijklmnop",
    "Bearer\u{a0}abcdefghijklmnop",
    "Bearer abcdefghijklmno\u{212a}",
];

/// pi-codex-memory `test/safety.test.mjs` "redaction removes credential values without
/// callback-offset leakage": `prefix <secret> suffix` becomes
/// `prefix [REDACTED_SECRET] suffix`, nothing of the secret left behind.
const PI_WHOLE_SECRETS: &[&str] = &[
    "sk-abcdefghijklmnopqrst_PRIVATE_SUFFIX",
    "sk-abcdefghijklmnopqrst-private-suffix_",
    "sk-abcdefghijklmnopqrstuvwxyz123",
    // A `ghp_` token shorter than GitHub's 36 characters.
    "ghp_abcdefghijklmnopqrstuvwxyz123",
    "github_pat_abcdefghijklmnopqrstuvwxyz123",
];

/// pi-codex-memory `test/safety.test.mjs`, same test: look like keys, are not.
const PI_UNTOUCHED: &[&str] = &[
    "task-run-2026-09-16-abcdef",
    "flask-sqlalchemy-migrate-plugin",
];

#[test]
fn codex_bearer_vectors_are_redacted_exactly() {
    let failed: Vec<_> = CODEX_REDACTED
        .iter()
        .filter(|(input, expected)| redact(input) != *expected)
        .map(|(input, expected)| format!("{input:?}: got {:?}, want {expected:?}", redact(input)))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {}:\n{}",
        failed.len(),
        CODEX_REDACTED.len(),
        failed.join("\n")
    );
}

#[test]
fn codex_bearer_false_positives_stay() {
    for input in CODEX_UNTOUCHED {
        assert_eq!(redact(input), *input);
    }
}

#[test]
fn pi_whole_secrets_leave_nothing() {
    for secret in PI_WHOLE_SECRETS {
        let input = format!("prefix {secret} suffix");
        assert_eq!(
            redact(&input),
            "prefix [REDACTED_SECRET] suffix",
            "{secret}"
        );
    }
    for plain in PI_UNTOUCHED {
        assert_eq!(redact(plain), *plain);
    }
}

/// pi-codex-memory `test/safety.test.mjs`, same test: the header case is exact; for URL
/// credentials and PEM blocks pi writes its own markers (`postgres://[REDACTED]@`,
/// `[REDACTED PRIVATE KEY]`) where this crate keeps the user name and uses [`REDACTED`],
/// so those assert that the secret is gone.
#[test]
fn pi_header_url_and_pem_cases() {
    assert_eq!(
        redact("Authorization: Bearer abc123"),
        "Authorization: Bearer [REDACTED_SECRET]"
    );
    for (input, secret) in [
        ("postgres://user:password@host/db", "password"),
        ("mongodb+srv://user:password@host/db", "password"),
        (
            "-----BEGIN PRIVATE KEY-----\nsecret\n-----END PRIVATE KEY-----",
            "secret",
        ),
    ] {
        let out = redact(input);
        assert!(!out.contains(secret), "{input:?} -> {out:?}");
        assert!(out.contains(REDACTED), "{input:?} -> {out:?}");
    }
}

/// Every vector above is a fixed point once redacted.
#[test]
fn vectors_are_idempotent() {
    let inputs = CODEX_REDACTED
        .iter()
        .map(|(i, _)| *i)
        .chain(CODEX_UNTOUCHED.iter().copied())
        .chain(PI_WHOLE_SECRETS.iter().copied());
    for input in inputs {
        let once = redact(input).into_owned();
        assert_eq!(redact(&once), once, "{input:?}");
    }
}

/// [`find_secret`] (what task memory refuses on) sees every vector `redact` changes and
/// none of the false positives.
#[test]
fn find_secret_sees_the_vectors() {
    for (input, _) in CODEX_REDACTED {
        assert!(find_secret(input).is_some(), "{input:?}");
    }
    for secret in PI_WHOLE_SECRETS {
        assert!(find_secret(secret).is_some(), "{secret}");
    }
    for input in CODEX_UNTOUCHED.iter().chain(PI_UNTOUCHED) {
        assert_eq!(find_secret(input), None, "{input:?}");
    }
}
