//! HTTP access control for the local server (SRV-1): a bearer token generated on first
//! start and kept in `<home>/server-token` (mode 0600; it moves to the OS keyring with the
//! desktop app), accepted as `Authorization: Bearer <token>`, as the secret path segment
//! `/mcp/<token>` (for clients that cannot send headers, e.g. ChatGPT connectors with "No
//! authentication" behind a tunnel), or as the UI cookie set by `/?token=<token>`.
//! Foreign `Host` and `Origin` headers are refused (DNS rebinding). Comparisons are
//! constant-time; the token is never logged.
//!
//! Invariant: every route except `/health` passes [`check_request`].

use std::path::{Path, PathBuf};

use base64::Engine;
use rand::RngCore;
use subtle::ConstantTimeEq;

use codex_free_core::error::IoContext;
use codex_free_core::Error;
use codex_free_core::Result;

/// File under the state home that holds the server token.
pub const TOKEN_FILE: &str = "server-token";
/// Cookie the web UI uses after `/?token=...`.
pub const COOKIE: &str = "codex_free_token";

/// The server's bearer token. No `Debug`/`Display`: it cannot reach a log by accident.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    /// The token text (for the banner printed by `serve --http` and for clients).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Constant-time comparison with a presented value.
    pub fn matches(&self, presented: &str) -> bool {
        self.0.as_bytes().ct_eq(presented.as_bytes()).into()
    }

    /// Wrap an existing value (tests, keyring).
    pub fn from_string(s: String) -> Self {
        Self(s)
    }
}

/// Path of the token file.
pub fn token_path(home: &Path) -> PathBuf {
    home.join(TOKEN_FILE)
}

/// Load the token, generating 32 random bytes (base64url, 43 chars) on first start.
/// Written atomically with mode 0600. Errors: unreadable file.
pub fn load_or_create_token(home: &Path) -> Result<Token> {
    let path = token_path(home);
    codex_free_core::home::with_lock(&path, || {
        match std::fs::read_to_string(&path) {
            Ok(s) if s.trim().len() >= 32 => return Ok(Token(s.trim().to_owned())),
            Ok(_) => {} // empty or truncated: replace it
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(format!("reading {}", path.display()), e)),
        }
        let t = generate();
        write_private(&path, &t)?;
        Ok(Token(t))
    })
}

/// Replace the token with a new random one (`codex-free token rotate`).
pub fn rotate_token(home: &Path) -> Result<Token> {
    let path = token_path(home);
    let t = generate();
    codex_free_core::home::with_lock(&path, || write_private(&path, &t))?;
    Ok(Token(t))
}

fn write_private(path: &Path, token: &str) -> Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).ctx(|| format!("creating {}", d.display()))?;
    }
    codex_free_core::home::write_atomic_private_unlocked(path, format!("{token}\n").as_bytes())
}

fn generate() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Hosts and origins accepted besides loopback.
#[derive(Debug, Clone, Default)]
pub struct Allowed {
    /// Extra `Host` values (`name` or `name:port`), from `server.allowedHosts`.
    pub hosts: Vec<String>,
    /// Extra origins (`scheme://host[:port]`), from `server.allowedOrigins`.
    pub origins: Vec<String>,
}

fn host_part(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    authority
        .rsplit_once(':')
        .map(|(h, p)| {
            if p.chars().all(|c| c.is_ascii_digit()) {
                h
            } else {
                authority
            }
        })
        .unwrap_or(authority)
}

fn is_loopback_host(h: &str) -> bool {
    let h = h.to_ascii_lowercase();
    h == "localhost" || h == "127.0.0.1" || h == "::1"
}

/// Is the `Host` header value acceptable? Loopback names at any port, or configured hosts.
pub fn host_ok(host: &str, allowed: &Allowed) -> bool {
    let h = host_part(host);
    is_loopback_host(h)
        || allowed
            .hosts
            .iter()
            .any(|a| a.eq_ignore_ascii_case(host) || a.eq_ignore_ascii_case(h))
}

/// Is the `Origin` header value acceptable? Absent is fine (non-browser clients);
/// `http(s)://` loopback at any port, or a configured origin. `null` is refused.
pub fn origin_ok(origin: Option<&str>, allowed: &Allowed) -> bool {
    let Some(o) = origin else { return true };
    if allowed.origins.iter().any(|a| {
        a.trim_end_matches('/')
            .eq_ignore_ascii_case(o.trim_end_matches('/'))
    }) {
        return true;
    }
    let rest = o
        .strip_prefix("http://")
        .or_else(|| o.strip_prefix("https://"));
    match rest {
        Some(authority) if !authority.contains('/') => is_loopback_host(host_part(authority)),
        _ => false,
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// 403: `Host` not allowed.
    Host,
    /// 403: `Origin` not allowed.
    Origin,
    /// 401: no or wrong credentials.
    Unauthorized,
    /// 404: a secret-path request with the wrong secret looks like any unknown path.
    NotFound,
}

/// The credential a request presented.
pub struct Presented<'a> {
    /// `Authorization` header value.
    pub authorization: Option<&'a str>,
    /// `Cookie` header value.
    pub cookie: Option<&'a str>,
    /// The secret path segment, when the path was `/mcp/<segment>`.
    pub path_secret: Option<&'a str>,
}

/// Decide one request. Checks Host, then Origin, then the credential.
pub fn check_request(
    token: &Token,
    allowed: &Allowed,
    host: Option<&str>,
    origin: Option<&str>,
    presented: &Presented<'_>,
) -> std::result::Result<(), Refusal> {
    match host {
        Some(h) if host_ok(h, allowed) => {}
        _ => return Err(Refusal::Host),
    }
    if !origin_ok(origin, allowed) {
        return Err(Refusal::Origin);
    }
    if let Some(seg) = presented.path_secret {
        return if token.matches(seg) {
            Ok(())
        } else {
            Err(Refusal::NotFound)
        };
    }
    if let Some(a) = presented.authorization
        && let Some(t) = a
            .strip_prefix("Bearer ")
            .or_else(|| a.strip_prefix("bearer "))
        && token.matches(t.trim())
    {
        return Ok(());
    }
    if let Some(c) = presented.cookie {
        for part in c.split(';') {
            if let Some((k, v)) = part.trim().split_once('=')
                && k == COOKIE
                && token.matches(v)
            {
                return Ok(());
            }
        }
    }
    Err(Refusal::Unauthorized)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p<'a>(auth: Option<&'a str>) -> Presented<'a> {
        Presented {
            authorization: auth,
            cookie: None,
            path_secret: None,
        }
    }

    #[test]
    fn token_is_created_once_with_private_mode() {
        let d = tempfile::tempdir().unwrap();
        let a = load_or_create_token(d.path()).unwrap();
        let b = load_or_create_token(d.path()).unwrap();
        assert_eq!(a.expose(), b.expose());
        assert_eq!(a.expose().len(), 43);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(token_path(d.path()))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let c = rotate_token(d.path()).unwrap();
        assert_ne!(a.expose(), c.expose());
    }

    #[test]
    fn refusals() {
        let t = Token::from_string("s3cret-token-value-s3cret-token-value-xx".into());
        let al = Allowed::default();
        let bearer = format!("Bearer {}", t.expose());
        assert_eq!(
            check_request(&t, &al, Some("127.0.0.1:3000"), None, &p(Some(&bearer))),
            Ok(())
        );
        assert_eq!(
            check_request(&t, &al, Some("localhost"), None, &p(None)),
            Err(Refusal::Unauthorized)
        );
        assert_eq!(
            check_request(
                &t,
                &al,
                Some("127.0.0.1:3000"),
                None,
                &p(Some("Bearer nope"))
            ),
            Err(Refusal::Unauthorized)
        );
        assert_eq!(
            check_request(&t, &al, Some("evil.example:3000"), None, &p(Some(&bearer))),
            Err(Refusal::Host)
        );
        assert_eq!(
            check_request(&t, &al, None, None, &p(Some(&bearer))),
            Err(Refusal::Host)
        );
        assert_eq!(
            check_request(
                &t,
                &al,
                Some("127.0.0.1:3000"),
                Some("https://evil.example"),
                &p(Some(&bearer))
            ),
            Err(Refusal::Origin)
        );
        assert_eq!(
            check_request(
                &t,
                &al,
                Some("127.0.0.1:3000"),
                Some("null"),
                &p(Some(&bearer))
            ),
            Err(Refusal::Origin)
        );
        assert_eq!(
            check_request(
                &t,
                &al,
                Some("[::1]:3000"),
                Some("http://localhost:5173"),
                &p(Some(&bearer))
            ),
            Ok(())
        );
        // localhost.evil.example must not pass as loopback
        assert_eq!(
            check_request(
                &t,
                &al,
                Some("localhost.evil.example"),
                None,
                &p(Some(&bearer))
            ),
            Err(Refusal::Host)
        );
        let secret = Presented {
            authorization: None,
            cookie: None,
            path_secret: Some(t.expose()),
        };
        assert_eq!(
            check_request(&t, &al, Some("127.0.0.1"), None, &secret),
            Ok(())
        );
        let wrong = Presented {
            authorization: None,
            cookie: None,
            path_secret: Some("x"),
        };
        assert_eq!(
            check_request(&t, &al, Some("127.0.0.1"), None, &wrong),
            Err(Refusal::NotFound)
        );
        let cookie = format!("a=b; {COOKIE}={}", t.expose());
        let c = Presented {
            authorization: None,
            cookie: Some(&cookie),
            path_secret: None,
        };
        assert_eq!(check_request(&t, &al, Some("127.0.0.1"), None, &c), Ok(()));
        let tunnel = Allowed {
            hosts: vec!["abc.tunnel.example".into()],
            origins: vec!["https://chatgpt.com".into()],
        };
        assert_eq!(
            check_request(
                &t,
                &tunnel,
                Some("abc.tunnel.example"),
                Some("https://chatgpt.com"),
                &p(Some(&bearer))
            ),
            Ok(())
        );
    }
}
