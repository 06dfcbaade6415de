//! The environment a command gets: the server's own environment minus credentials.
//!
//! Rule (applied to the upper-cased variable name), a variable is **dropped** when it
//! - ends with `API_KEY`, `APIKEY`, `_TOKEN`, `_ACCESS_KEY`, `_PRIVATE_KEY` or `_KEY_ID`;
//! - contains `SECRET`, `PASSWORD`, `PASSWD` or `CREDENTIAL`;
//! - starts with `AWS_` and names a credential (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//!   `AWS_SESSION_TOKEN`, `AWS_SECURITY_TOKEN`, ...: covered by the rules above);
//! - starts with `CODEX_FREE_` (the server's own settings and tokens), except `CODEX_FREE_HOME`;
//! - starts with `BASH_FUNC_` (exported shell functions could shadow allowed programs).
//!
//! Then, as Codex's unified exec does, output-friendly settings are forced: `NO_COLOR=1`,
//! `TERM=dumb`, `PAGER=cat`, `GIT_PAGER=cat`, `GH_PAGER=cat`, `GIT_TERMINAL_PROMPT=0`.
//!
//! Invariant: no variable for which [`is_secret_name`] is true reaches a child process.

use std::ffi::OsString;

/// Variables set for every child, overriding the inherited values (after Codex's unified exec).
pub const FORCED: &[(&str, &str)] = &[
    ("NO_COLOR", "1"),
    ("TERM", "dumb"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GH_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
];

/// True when a variable named `name` must not be passed to a child (see the module rule).
pub fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    const SUFFIXES: &[&str] = &[
        "API_KEY",
        "APIKEY",
        "_TOKEN",
        "_ACCESS_KEY",
        "_PRIVATE_KEY",
        "_KEY_ID",
    ];
    const PARTS: &[&str] = &["SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"];
    SUFFIXES.iter().any(|s| n.ends_with(s))
        || n == "TOKEN"
        || PARTS.iter().any(|p| n.contains(p))
        || (n.starts_with("CODEX_FREE_") && n != "CODEX_FREE_HOME")
        || n.starts_with("BASH_FUNC_")
}

/// The environment for a child: the current process environment filtered by
/// [`is_secret_name`], plus [`FORCED`]. Names that are not UTF-8 are kept only if they
/// cannot match the rule (they are compared lossily, so a match drops them too).
pub fn child_env() -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| !is_secret_name(&k.to_string_lossy()))
        .filter(|(k, _)| !FORCED.iter().any(|(f, _)| k == f))
        .collect();
    env.extend(
        FORCED
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_keys_and_tokens_are_secret() {
        for n in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "openrouter_api_key",
            "GEMINI_APIKEY",
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "HF_TOKEN",
            "NPM_TOKEN",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "MY_CLIENT_SECRET",
            "DB_PASSWORD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "CODEX_FREE_TOKEN",
            "CODEX_FREE_HTTP_SECRET",
            "BASH_FUNC_ls%%",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn ordinary_variables_are_kept() {
        for n in [
            "PATH",
            "HOME",
            "LANG",
            "CARGO_HOME",
            "RUSTUP_TOOLCHAIN",
            "AWS_REGION",
            "CODEX_FREE_HOME",
            "TOKENIZERS_PARALLELISM",
            "KEYMAP",
        ] {
            assert!(!is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn forced_values_win() {
        let env = child_env();
        let term: Vec<_> = env.iter().filter(|(k, _)| k == "TERM").collect();
        assert_eq!(term.len(), 1);
        assert_eq!(term[0].1, "dumb");
    }
}
