//! Secret redaction: every text that leaves the machine (phase-1 input, stored outputs,
//! this server's own transcripts) passes [`redact`] first. Secrets become
//! [`REDACTED`]; for `key=value`-style pairs and URL credentials the key name / user is
//! kept so the reader still sees what was there, and a bearer token becomes
//! `Bearer [REDACTED_SECRET]` (an `Authorization:` before it kept).
//!
//! Covered (issue 4 "Sanitise"): OpenAI `sk-`/`sk-proj-`, Anthropic `sk-ant-`, OpenRouter
//! `sk-or-`, Google `AIza`, GitHub `ghp_`/`gho_`/`ghs_`/`ghu_`/`ghr_`/`github_pat_`, Slack
//! `xox?-`, AWS access key ids (`AKIA`/`ASIA`) and secret access keys given as pairs,
//! `Bearer` tokens (RFC 6750 characters `+ / ~ . _ - =`, after spaces or tabs), PEM
//! private-key blocks (also JSON-escaped and cut-off ones), JWTs,
//! `password=` / `api_key:` / `secret=` / `token=`-style pairs, and `scheme://user:pass@`.
//! Every vector of the upstream sanitizer's tests (openai/codex's, as pinned by
//! pi-codex-memory) passes, its false positives included (`upstream_tests`).
//!
//! Invariant: the regexes are compiled once per process; redaction is idempotent
//! (`redact(redact(x)) == redact(x)`) and never alters text without a match.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex, RegexSet};

/// The replacement for every secret.
pub const REDACTED: &str = "[REDACTED_SECRET]";

struct Rule {
    /// Short stable name counted by [`redact_tally`] (`github_token`, `credential_pair` …).
    id: &'static str,
    /// What the rule finds, as told to a caller whose text it refuses ([`Finding::rule`]).
    name: &'static str,
    /// The match; rules that keep part of it name the secret part `secret` and, for
    /// [`Keep::Bearer`], the kept text before the scheme word `keep`.
    re: Regex,
    keep: Keep,
    /// Extra check on the secret part; `false` leaves the match untouched.
    accept: fn(&str) -> bool,
}

/// What of a match survives around [`REDACTED`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// Nothing: the whole match is the secret.
    Nothing,
    /// Everything before the `secret` group (a key name, `scheme://user:`) and after it.
    Prefix,
    /// The `keep` group (`Authorization: `), then the scheme written `Bearer ` whatever its
    /// case and the blanks after it: the upstream sanitizer's replacement, so one redacted
    /// header reads the same however it was spelled.
    Bearer,
}

fn any(_: &str) -> bool {
    true
}

/// Provider keys: long, and mixing letters and digits (so prose like `sk-learn` survives).
fn keyish(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_digit()) && s.bytes().any(|b| b.is_ascii_alphabetic())
}

/// A bearer token outside an `Authorization` header (trailing `=` padding not counted):
/// 16+ characters, the upstream sanitizer's floor (`Bearer abcdefghijklmno`, 15, is prose),
/// or 12+ mixing letters and digits.
fn bearer_token(s: &str) -> bool {
    let token = s.trim_end_matches('=');
    token.len() >= 16 || (token.len() >= 12 && keyish(token))
}

/// An `sk-` key: key-like, or 20+ letters and digits straight after `sk-` (the upstream
/// sanitizer's `sk-[A-Za-z0-9]{20,}`; a digit-free key is still a key), so
/// `sk-learn-compatible` prose survives.
fn openai_key(s: &str) -> bool {
    keyish(s)
        || s.bytes()
            .skip(3)
            .take_while(u8::is_ascii_alphanumeric)
            .count()
            >= 20
}

/// Values of `password=`-style pairs: not a placeholder or a plain short word.
fn pair_value(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    if v.starts_with("[REDACTED") || v.starts_with('$') || v.starts_with('<') || v.starts_with("{{")
    {
        return false;
    }
    if matches!(
        lower.as_str(),
        "null"
            | "none"
            | "true"
            | "false"
            | "undefined"
            | "required"
            | "optional"
            | "string"
            | "redacted"
    ) {
        return false;
    }
    if v.chars()
        .all(|c| c == '*' || c == 'x' || c == 'X' || c == '.')
    {
        return false;
    }
    // A word of letters only must be long to count (prose: "token: see below").
    v.len() >= 12 || v.chars().any(|c| !c.is_ascii_alphabetic())
}

#[expect(
    clippy::expect_used,
    reason = "a fixed pattern written in this file; every test that runs the matcher compiles it"
)]
static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let r =
        |id: &'static str, name: &'static str, pat: &str, keep: Keep, accept: fn(&str) -> bool| {
            Rule {
                id,
                name,
                re: Regex::new(pat).expect("redaction regex compiles"),
                keep,
                accept,
            }
        };
    // The token of a bearer scheme: RFC 6750's b64token (`A-Z a-z 0-9 - . _ ~ + /`, then
    // `=` padding). Outside any `(?i)`: case-insensitive classes would take the Kelvin
    // sign for a `k`. Blanks between scheme and token are spaces and tabs only, never a
    // line break or a no-break space (upstream's false positives).
    const B64TOKEN: &str = r"[A-Za-z0-9._~+/-]+=*";
    vec![
        // Bearer rules first, as upstream orders them: a token holding another rule's shape
        // (`Bearer AKIA…/~tail`, `Bearer sk-…+tail`) is redacted whole, never up to the
        // inner key with its tail left behind.
        // An `Authorization: Bearer` header value, however short (`abc123`, `devtoken`):
        // the header names it a credential. Placeholders (`$TOKEN`, `<token>`) do not match.
        r(
            "authorization_header",
            "an `Authorization: Bearer` header value",
            &format!(
                r"(?P<keep>\b(?i:authorization)\s*:\s*)(?i:bearer)[ \t]+(?P<secret>{B64TOKEN})"
            ),
            Keep::Bearer,
            any,
        ),
        // Other bearer tokens ([`bearer_token`] decides the length).
        r(
            "bearer_token",
            "a bearer token (`Bearer …`)",
            &format!(r"\b(?i:bearer)[ \t]+(?P<secret>{B64TOKEN})"),
            Keep::Bearer,
            bearer_token,
        ),
        // PEM private keys: whole block, newlines raw or JSON-escaped; a block cut before
        // its END line is redacted through its base64 body.
        r(
            "pem_private_key",
            "a PEM private key",
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)-----END[A-Z0-9 ]*PRIVATE KEY-----|-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?:\\[nr]|[\sA-Za-z0-9+/=:-])*",
            Keep::Nothing,
            any,
        ),
        // JWT: three base64url segments, the first two JSON objects (`eyJ`).
        r(
            "jwt",
            "a JWT",
            r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
            Keep::Nothing,
            any,
        ),
        // OpenAI / Anthropic / OpenRouter (`sk-`, `sk-proj-`, `sk-ant-api03-`, `sk-or-v1-`),
        // through the whole `[A-Za-z0-9_-]` run, so no `_SUFFIX` tail is left behind.
        r(
            "provider_key",
            "an OpenAI / Anthropic / OpenRouter key (`sk-…`)",
            r"\bsk-[A-Za-z0-9_-]{20,}",
            Keep::Nothing,
            openai_key,
        ),
        // Google API keys.
        r(
            "google_api_key",
            "a Google API key (`AIza…`)",
            r"\bAIza[0-9A-Za-z_-]{35}",
            Keep::Nothing,
            any,
        ),
        // GitHub tokens: 16+ after the prefix (classic ones have 36, but a shorter one
        // pasted or cut is still a credential; the prefix alone is distinctive).
        r(
            "github_token",
            "a GitHub token (`ghp_…`, `github_pat_…`)",
            r"\b(?:gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{22,})",
            Keep::Nothing,
            any,
        ),
        // Slack tokens.
        r(
            "slack_token",
            "a Slack token (`xox?-…`)",
            r"\bxox[abposre]-[A-Za-z0-9-]{10,}",
            Keep::Nothing,
            keyish,
        ),
        // AWS access key ids.
        r(
            "aws_access_key_id",
            "an AWS access key id (`AKIA…`)",
            r"\b(?:AKIA|ASIA|AIDA|AROA)[0-9A-Z]{16}\b",
            Keep::Nothing,
            any,
        ),
        // URL credentials: keep `scheme://user:`, redact the password.
        r(
            "url_password",
            "a password in a URL (`scheme://user:password@`)",
            r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]*:(?P<secret>[^@\s/]{3,})@",
            Keep::Prefix,
            any,
        ),
        // key=value / key: value pairs, plain, quoted or JSON-escaped (any depth); keep the key.
        r(
            "credential_pair",
            "a credential pair (`password=`, `token:`, `api_key=`, `secret=` …)",
            r#"(?i)(?:password|passwd|pwd|secret|secret[_-]?key|client[_-]?secret|api[_-]?key|apikey|access[_-]?key|secret[_-]?access[_-]?key|private[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|token)\b(?:\\*["'])?\s*[:=]\s*(?:\\*["'])?(?P<secret>[^\s"'\\,;&}\]]+)"#,
            Keep::Prefix,
            pair_value,
        ),
    ]
});

/// Every rule's pattern in one set: one pass over a text says which rules can match, so a
/// text without secrets (nearly every tool result) is scanned once instead of once per rule.
#[expect(
    clippy::expect_used,
    reason = "a fixed pattern written in this file; every test that runs the matcher compiles it"
)]
static ANY_RULE: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new(RULES.iter().map(|r| r.re.as_str())).expect("redaction regex set compiles")
});

/// Literals at least one of which every rule's match contains (compared ASCII
/// case-insensitively). A text with none of them cannot match any rule, which one
/// Aho-Corasick pass decides several times faster than the overlapping [`ANY_RULE`] scan:
/// the server redacts every tool result it records, and nearly none holds a secret.
///
/// Keep in step with [`RULES`]: `rule_literals_are_required` checks that every rule's
/// sample secret contains one of them.
const RULE_LITERALS: &[&str] = &[
    "-----BEGIN", // PEM
    "eyJ",        // JWT
    "sk-",        // OpenAI / Anthropic / OpenRouter
    "AIza",       // Google
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_", // GitHub
    "xox",         // Slack
    "AKIA",
    "ASIA",
    "AIDA",
    "AROA",   // AWS
    "bearer", // both bearer rules (`authorization: bearer` contains it)
    "://",    // URL credentials
    // key=value names: password/passwd, pwd, secret…, …key / apikey, …token
    "pass",
    "pwd",
    "secret",
    "key",
    "token",
];

#[expect(
    clippy::expect_used,
    reason = "a fixed pattern written in this file; every test that runs the matcher compiles it"
)]
static LITERALS: LazyLock<aho_corasick::AhoCorasick> = LazyLock::new(|| {
    aho_corasick::AhoCorasick::builder()
        .ascii_case_insensitive(true)
        // A full DFA: case-insensitive literals get no SIMD prefilter, and a DFA is the
        // fastest of the automata for a set this small (a few KiB of tables).
        .kind(Some(aho_corasick::AhoCorasickKind::DFA))
        .build(RULE_LITERALS)
        .expect("redaction literals build")
});

/// `text` with every recognised secret replaced by [`REDACTED`]; borrowed when nothing
/// matched. Cost: one literal scan; only a text holding a rule's literal gets the rule set's
/// pass and then one pass per rule that can match.
pub fn redact(text: &str) -> Cow<'_, str> {
    redact_counting(text, None)
}

/// Redactions by rule: [`rule_ids`] names (and [`PRIVATE_SPAN`] for private spans) to
/// how many were made, so a receipt or a preview can say what was taken out without
/// showing it.
pub type Tally = std::collections::BTreeMap<&'static str, usize>;

/// The [`Tally`] name of a removed `<private>` span ([`strip_private`]).
pub const PRIVATE_SPAN: &str = "private_span";

/// Every secret rule's [`Tally`] name, in the order the rules run.
pub fn rule_ids() -> Vec<&'static str> {
    RULES.iter().map(|r| r.id).collect()
}

/// [`redact`], adding each secret replaced to `tally` under its rule's name. Same output,
/// same cost on a text without secrets.
pub fn redact_tally<'a>(text: &'a str, tally: &mut Tally) -> Cow<'a, str> {
    redact_counting(text, Some(tally))
}

/// `text` without its private spans ([`strip_private`]) and secrets ([`redact`]), each
/// removal added to `tally`: what every text that leaves this machine goes through.
pub fn sanitize<'a>(text: &'a str, tally: &mut Tally) -> Cow<'a, str> {
    let (public, spans) = strip_private(text);
    if spans > 0 {
        *tally.entry(PRIVATE_SPAN).or_default() += spans;
    }
    match public {
        Cow::Borrowed(b) => redact_tally(b, tally),
        Cow::Owned(o) => Cow::Owned(redact_tally(&o, tally).into_owned()),
    }
}

fn redact_counting<'a>(text: &'a str, mut tally: Option<&mut Tally>) -> Cow<'a, str> {
    let mut out: Cow<'_, str> = Cow::Borrowed(text);
    // Unicode case folding lets `(?i)` rules match non-ASCII spellings (`ſecret`, the
    // Kelvin sign for `k`) that an ASCII literal scan would miss: such text takes the full
    // path.
    if text.is_ascii() && !LITERALS.is_match(text) {
        return out;
    }
    // Replacing a secret never makes another rule match, so rules that cannot match the
    // original text are skipped.
    let hits = ANY_RULE.matches(text);
    if !hits.matched_any() {
        return out;
    }
    for (i, rule) in RULES.iter().enumerate() {
        if !hits.matched(i) || !rule.re.is_match(&out) {
            continue;
        }
        let mut made = 0;
        let replaced = rule.re.replace_all(&out, |c: &Captures<'_>| {
            let (text, changed) = replacement(rule, c);
            made += usize::from(changed);
            text
        });
        if made > 0
            && let Some(t) = tally.as_deref_mut()
        {
            *t.entry(rule.id).or_default() += made;
        }
        if let Cow::Owned(s) = replaced {
            out = Cow::Owned(s);
        }
    }
    out
}

/// How many redaction markers `text` holds: each [`REDACTED`] (a secret replaced) and each
/// [`PRIVATE_REMOVED`] (a private span removed), so a preview can say how much was taken
/// out without showing it.
pub fn count_markers(text: &str) -> usize {
    text.matches(REDACTED).count() + text.matches(PRIVATE_REMOVED).count()
}

/// What replaces a `<private>…</private>` span in a text that leaves this machine.
pub const PRIVATE_REMOVED: &str = "[private: removed]";

/// `text` without its private spans: each `<private>…</private>` (tags in any case, spans
/// across lines) becomes [`PRIVATE_REMOVED`]; borrowed when the text has no tag. The user
/// marks such spans in a prompt or a note so they never reach a model provider (claude-mem's
/// convention). Fails closed on a cut text: an opening tag without its close removes to the
/// end, and a closing tag without an opening removes from the start (a compaction or a
/// budget cut may have dropped the other tag). Returns the text and the spans removed.
pub fn strip_private(text: &str) -> (Cow<'_, str>, usize) {
    #[expect(
        clippy::expect_used,
        reason = "a fixed pattern written in this file; every test that runs the matcher compiles it"
    )]
    static TAG: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?i)<\s*(/?)\s*private\s*>").expect("private tag pattern"));
    if !text
        .as_bytes()
        .windows(7)
        .any(|w| w.eq_ignore_ascii_case(b"private"))
    {
        return (Cow::Borrowed(text), 0);
    }
    let mut out = String::with_capacity(text.len());
    let mut removed = 0;
    // Byte offset where the kept text resumes, and whether a span is open.
    let mut keep_from = 0;
    let mut open = false;
    for m in TAG.captures_iter(text) {
        let (Some(all), closing) = (m.get(0), m.get(1).is_some_and(|c| !c.is_empty())) else {
            continue;
        };
        match (open, closing) {
            (false, false) => {
                out.push_str(&text[keep_from..all.start()]);
                open = true;
            }
            (true, true) => {
                out.push_str(PRIVATE_REMOVED);
                removed += 1;
                open = false;
                keep_from = all.end();
            }
            // A nested opening tag inside an open span: still private.
            (true, false) => {}
            // A close with no open: everything kept so far was private.
            (false, true) => {
                out.clear();
                out.push_str(PRIVATE_REMOVED);
                removed += 1;
                keep_from = all.end();
            }
        }
    }
    if open {
        out.push_str(PRIVATE_REMOVED);
        removed += 1;
    } else {
        out.push_str(&text[keep_from..]);
    }
    if removed == 0 {
        return (Cow::Borrowed(text), 0);
    }
    (Cow::Owned(out), removed)
}

/// Where a text holds a secret and which rule says so; the secret itself is not kept, so a
/// finding can be shown to whoever sent the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finding {
    /// What was found, e.g. "a GitHub token (`ghp_…`, `github_pat_…`)".
    pub rule: &'static str,
    /// Line of the match's start, from 1.
    pub line: usize,
    /// Column of the match's start on that line, in characters from 1.
    pub column: usize,
}

/// The first secret [`redact`] would replace in `text` (rules in their order, so the rule
/// named is the one that redacts it), or `None` when `redact(text)` leaves it unchanged.
/// Cost: as [`redact`] on a text without secrets, one literal scan.
pub fn find_secret(text: &str) -> Option<Finding> {
    if text.is_ascii() && !LITERALS.is_match(text) {
        return None;
    }
    let hits = ANY_RULE.matches(text);
    // `redact` runs rule by rule on the text the earlier rules left: the first rule with an
    // accepted match in the original text is the first that changes it.
    RULES
        .iter()
        .enumerate()
        .filter(|(i, _)| hits.matched(*i))
        .find_map(|(_, rule)| {
            rule.re.captures_iter(text).find_map(|c| {
                let whole = c.get(0)?;
                let secret = c.name("secret").unwrap_or(whole);
                (rule.accept)(secret.as_str()).then(|| {
                    let before = &text[..whole.start()];
                    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
                    Finding {
                        rule: rule.name,
                        line: before.matches('\n').count() + 1,
                        column: before[line_start..].chars().count() + 1,
                    }
                })
            })
        })
}

/// What one match of `rule` becomes: unchanged when the rule's check refuses its secret,
/// else the kept parts (see [`Keep`]) around [`REDACTED`].
/// The replacement of one match, and whether it replaced a secret (`false`: the rule's
/// check left the match as it was).
fn replacement(rule: &Rule, c: &Captures<'_>) -> (String, bool) {
    let Some(whole) = c.get(0) else {
        return (String::new(), false);
    };
    let secret = c.name("secret").unwrap_or(whole);
    if !(rule.accept)(secret.as_str()) {
        return (whole.as_str().to_string(), false);
    }
    let text = whole.as_str();
    let (start, end) = (secret.start() - whole.start(), secret.end() - whole.start());
    let tail = &text[end..];
    let out = match rule.keep {
        Keep::Nothing => REDACTED.to_string(),
        Keep::Prefix => format!("{}{REDACTED}{tail}", &text[..start]),
        Keep::Bearer => {
            let keep = c.name("keep").map_or("", |m| m.as_str());
            format!("{keep}Bearer {REDACTED}{tail}")
        }
    };
    (out, true)
}

/// [`redact`] into an owned string.
pub fn redact_string(text: String) -> String {
    match redact(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(s) => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tally_names_each_rule_and_counts_each_replacement() {
        let text = "key sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 and ghp_abcdefghijklmnop0123 \
                    and ghp_zyxwvutsrqponmlk9876 <private>x</private> password=hunter2hunter2";
        let mut t = Tally::new();
        let out = sanitize(text, &mut t);
        assert_eq!(out, redact(&strip_private(text).0));
        let want: Tally = [
            ("provider_key", 1),
            ("github_token", 2),
            ("credential_pair", 1),
            (PRIVATE_SPAN, 1),
        ]
        .into_iter()
        .collect();
        assert_eq!(t, want);
        // Already redacted text adds nothing: the counts are of secrets, not of markers.
        let mut again = Tally::new();
        assert_eq!(sanitize(&out, &mut again), out);
        assert!(again.is_empty(), "{again:?}");
        assert_eq!(rule_ids().len(), RULES.len());
    }

    #[test]
    fn private_spans_never_leave_and_a_cut_span_fails_closed() {
        let t = "keep A <private>secret plan\nline 2</private> keep B <PRIVATE >x</ private> C";
        let (out, n) = strip_private(t);
        assert_eq!(n, 2);
        assert_eq!(
            out,
            format!("keep A {PRIVATE_REMOVED} keep B {PRIVATE_REMOVED} C")
        );
        // Cut by a budget: the opening tag is gone, or the closing one.
        let (out, n) = strip_private("tail of a secret</private> then public");
        assert_eq!(
            (out.as_ref(), n),
            (format!("{PRIVATE_REMOVED} then public").as_str(), 1)
        );
        let (out, n) = strip_private("public <private>secret to the end");
        assert_eq!(
            (out.as_ref(), n),
            (format!("public {PRIVATE_REMOVED}").as_str(), 1)
        );
        // Nested opening tags stay inside the span.
        let (out, _) = strip_private("a <private>x <private> y</private> b");
        assert_eq!(out, format!("a {PRIVATE_REMOVED} b"));
        // No tag: borrowed and untouched, the word alone included.
        assert!(matches!(
            strip_private("a private repo"),
            (Cow::Borrowed(_), 0)
        ));
    }

    /// Every rule's secret contains a prefilter literal, so the prefilter never hides one.
    #[test]
    fn rule_literals_are_required() {
        let samples = [
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
            "sk-proj-Q7xZ9kLm2PvR4tYw8NbC6dFh",
            "AIzaSyA1234567890abcdefghijklmnopqrstuv",
            "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123",
            "github_pat_11ABCDEFG0123456789_abcdefghij",
            "xoxb-1234567890-abcdefghij",
            "AKIAIOSFODNN7EXAMPLE",
            "Authorization: Bearer abc123",
            "bearer Zm9vYmFyYmF6cXV4MTIzNDU2",
            "postgres://app:s3cretpw@db:5432/x",
            "DB_PASSWORD=hunter2!",
            "PWD=hunter2x",
            "client_secret: abcdef123456",
            "apikey=abcdef123456",
            "refresh_token=abcdef123456",
        ];
        assert_eq!(
            samples.len(),
            RULES.len() + 5,
            "one sample per rule, more for the key names"
        );
        for s in samples {
            assert_ne!(redact(s), s, "{s} is not redacted");
            assert!(LITERALS.is_match(s), "{s} has no prefilter literal");
        }
        // Every rule is reached by some sample.
        for (i, rule) in RULES.iter().enumerate() {
            assert!(
                samples.iter().any(|s| rule.re.is_match(s)),
                "rule {i} has no sample"
            );
        }
        // Non-ASCII text skips the prefilter: a Unicode case-folded key name still counts.
        assert_eq!(
            redact("\u{17f}ecret=hunter2x"),
            "\u{17f}ecret=[REDACTED_SECRET]"
        );
        // Plain text passes untouched and borrowed.
        assert!(matches!(
            redact("fn main() { println!(\"hello\"); }"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn keeps_key_names_and_schemes() {
        assert_eq!(
            redact("DB_PASSWORD=hunter2!"),
            "DB_PASSWORD=[REDACTED_SECRET]"
        );
        assert_eq!(
            redact(r#"{"api_key": "abc123def"}"#),
            r#"{"api_key": "[REDACTED_SECRET]"}"#
        );
        assert_eq!(
            redact(r#"{\"token\":\"t0k3n-value\"}"#),
            r#"{\"token\":\"[REDACTED_SECRET]\"}"#
        );
        assert_eq!(
            redact(r#"{\\\"token\\\":\\\"t0k3n-value\\\"}"#),
            r#"{\\\"token\\\":\\\"[REDACTED_SECRET]\\\"}"#
        );
        assert_eq!(
            redact("Authorization: Bearer abcdef0123456789xyz"),
            "Authorization: Bearer [REDACTED_SECRET]"
        );
        assert_eq!(
            redact("postgres://app:s3cretpw@db:5432/x"),
            "postgres://app:[REDACTED_SECRET]@db:5432/x"
        );
    }

    #[test]
    fn leaves_prose_and_placeholders() {
        for s in [
            "the token: see below",
            "max_tokens: 1000",
            "password: null",
            "api_key=$OPENAI_API_KEY",
            "use sk-learn for this",
            "Bearer authentication is described in RFC 6750",
            "passwordless login",
        ] {
            assert_eq!(redact(s), s);
        }
    }

    /// `find_secret` finds exactly what `redact` changes, and names the rule and the place.
    #[test]
    fn find_secret_agrees_with_redact() {
        let f = find_secret("ok\n  token ghp_Q7xZ9kLm2PvR4tYw8NbC6dFh1JsU3eGa5Wq0").unwrap();
        assert_eq!((f.line, f.column), (2, 9));
        assert!(f.rule.contains("GitHub"), "{}", f.rule);
        let f = find_secret("x Bearer AKIAABCDEFGHIJKLMNOP/~secret_suffix").unwrap();
        assert!(
            f.rule.contains("bearer"),
            "the rule that redacts it: {}",
            f.rule
        );
        for s in [
            "the token: see below",
            "api_key=$OPENAI_API_KEY",
            "Bearer abcdefghijklmno",
            "use sk-learn for this",
            "plain text",
            "DB_PASSWORD=hunter2!",
            "postgres://app:s3cretpw@db:5432/x",
            "Authorization: Bearer abc123",
            "\u{17f}ecret=hunter2x",
        ] {
            assert_eq!(find_secret(s).is_some(), redact(s) != s, "{s}");
        }
    }

    #[test]
    fn idempotent() {
        let s = "k=sk-proj-abcDEF1234567890abcdef1234 and password=pw12345";
        let once = redact(s).into_owned();
        assert_eq!(redact(&once), once);
        assert!(!once.contains("abcDEF"));
    }
}

#[cfg(test)]
mod upstream_tests;
