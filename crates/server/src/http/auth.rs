//! HTTP access control for the local server. Two credentials that never open each other's
//! doors:
//!
//! - **The MCP token** (in the OS key store, see [`TokenVault`]; else `<home>/server-token`,
//!   0600) opens `/mcp` only: as
//!   `Authorization: Bearer <token>` or as the secret path `/mcp/<token>` (for clients that
//!   cannot send headers, e.g. ChatGPT connectors behind a tunnel). It is what users paste
//!   into clients, so it must not be able to reconfigure the machine.
//! - **The admin credential** opens the web UI and `/api` only, and only on a loopback
//!   `Host` (never a `server.allowedHosts` tunnel name, never through a proxy that adds
//!   forwarding headers): the admin token (key store, else `<home>/admin-token`) as a bearer header,
//!   or a browser session cookie (HttpOnly, SameSite=Strict) that `/login?code=<code>` sets
//!   from a one-time login code ([`issue_login_code`]; 10 minutes, single use, stored
//!   hashed in `<home>/login-codes.json`). A cookie-authenticated state change (POST, PUT,
//!   DELETE, PATCH) must carry an `Origin` equal to the server's own loopback origin; any
//!   `Origin` that is present must be that one.
//!
//! Foreign `Host` and `Origin` headers are refused (DNS rebinding). Token comparisons are
//! constant-time; tokens are never logged. Tokens are re-read when they change (the file, or a
//! rotation marker for store-held tokens), so `codex-free token rotate [--admin]` takes
//! effect on a running server.
//!
//! Invariant: every route except `/health` and `/login` passes [`check_mcp`] or
//! [`check_admin`], and no token is accepted by the other check.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use base64::Engine;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::error::IoContext;
use codex_free_secrets::keyring::Opened;
use codex_free_secrets::{Secret, SecretStore};

/// File under the state home that holds the MCP token.
pub const TOKEN_FILE: &str = "server-token";
/// File under the state home that holds the admin token (web UI and `/api`).
pub const ADMIN_TOKEN_FILE: &str = "admin-token";
/// File under the state home that holds pending one-time login codes (hashed).
pub const LOGIN_CODES_FILE: &str = "login-codes.json";
/// Lifetime of a login code: long enough to copy a link from a terminal, short enough
/// that a link left in scrollback is dead.
pub const LOGIN_CODE_TTL: Duration = Duration::from_secs(600);
/// Lifetime of a browser session set by `/login` (one working day; the server forgets
/// sessions when it stops, and rotating the admin token ends them at once).
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// Pending login codes kept at most (the oldest are dropped).
const MAX_LOGIN_CODES: usize = 16;
/// Live browser sessions kept at most per server (the oldest are dropped).
const MAX_SESSIONS: usize = 64;

/// Which credential a token file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// Opens `/mcp` (header or secret path).
    Mcp,
    /// Opens the web UI and `/api` on loopback.
    Admin,
}

impl TokenKind {
    /// The file name under the state home.
    pub fn file(self) -> &'static str {
        match self {
            TokenKind::Mcp => TOKEN_FILE,
            TokenKind::Admin => ADMIN_TOKEN_FILE,
        }
    }
}

/// A bearer token. No `Debug`/`Display`: it cannot reach a log by accident.
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

/// Path of a token file.
pub fn token_path(home: &Path, kind: TokenKind) -> PathBuf {
    home.join(kind.file())
}

/// Where a token lives: the OS key store when a persistent one is reachable (Secret
/// Service, macOS Keychain, Windows Credential Manager), else the 0600 file under the
/// state home (the labelled fallback: a volatile store such as kernel keyutils would lose
/// the token at logout, and every client holding a copy would stop working).
#[derive(Clone)]
pub enum TokenVault {
    /// In the key store under `account` (one per state home and kind).
    Store {
        /// The store.
        store: Arc<dyn SecretStore>,
        /// Its label, for `token where` and diagnostics.
        label: String,
        /// Account name, `server-token@<home id>` or `admin-token@<home id>`.
        account: String,
    },
    /// In `<home>/server-token` or `<home>/admin-token`.
    File(PathBuf),
}

impl TokenVault {
    /// Where `kind`'s token of `home` lives with key store `keys`.
    pub fn new(home: &Path, kind: TokenKind, keys: &Opened) -> Self {
        if keys.persistent {
            TokenVault::Store {
                store: keys.store.clone(),
                label: keys.label.clone(),
                account: token_account(home, kind),
            }
        } else {
            TokenVault::File(token_path(home, kind))
        }
    }

    /// Where `kind`'s token of `home` lives with this process's key store
    /// ([`codex_free_secrets::keyring::open`], opened once per process).
    pub fn for_home(home: &Path, kind: TokenKind) -> Self {
        static KEYS: std::sync::OnceLock<Opened> = std::sync::OnceLock::new();
        Self::new(
            home,
            kind,
            KEYS.get_or_init(codex_free_secrets::keyring::open),
        )
    }

    /// One line saying where the token is, never the token.
    pub fn describe(&self) -> String {
        match self {
            TokenVault::Store { label, account, .. } => {
                format!(
                    "{label} (service \"{}\", account \"{account}\")",
                    codex_free_secrets::SERVICE
                )
            }
            TokenVault::File(p) => format!(
                "{} (file, mode 0600: no persistent key store reachable)",
                p.display()
            ),
        }
    }
}

/// The key store account of `kind`'s token of `home`: the file name and the first 12 hex
/// digits of the SHA-256 of the home's path, so two state homes never share a token.
pub fn token_account(home: &Path, kind: TokenKind) -> String {
    let path = std::fs::canonicalize(home).unwrap_or_else(|_| home.to_path_buf());
    let id = codex_free_core::home::sha256_hex(path.to_string_lossy().as_bytes());
    format!("{}@{}", kind.file(), &id[..12])
}

/// Marker file touched on every rotation of a store-held token, so a running server sees
/// the change with one `stat` per request instead of a key store call.
fn rotated_marker(home: &Path, kind: TokenKind) -> PathBuf {
    home.join(format!("{}.rotated", kind.file()))
}

fn valid(s: &str) -> Option<String> {
    let t = s.trim();
    (t.len() >= 32).then(|| t.to_string())
}

fn read_file_token(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(valid(&s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(format!("reading {}", path.display()), e)),
    }
}

/// Load a token, generating 32 random bytes (base64url, 43 chars) on first use, from
/// where [`TokenVault::for_home`] says it lives. A token found in the old file while a
/// persistent store is reachable moves into the store (read back before the file is
/// removed), so clients keep working. Errors: unreadable file; a store that fails is
/// logged and the file is used instead, so the server always has a token.
pub fn load_or_create(home: &Path, kind: TokenKind) -> Result<Token> {
    load_or_create_in(home, kind, &TokenVault::for_home(home, kind))
}

/// [`load_or_create`] with an explicit vault (tests, and callers that opened the store).
pub fn load_or_create_in(home: &Path, kind: TokenKind, vault: &TokenVault) -> Result<Token> {
    let path = token_path(home, kind);
    if let TokenVault::Store { store, account, .. } = vault {
        match store_load_or_create(store.as_ref(), account, &path) {
            Ok(t) => return Ok(t),
            Err(e) => {
                tracing::warn!(error = %e, "the key store failed; using the token file {}", path.display())
            }
        }
    }
    codex_free_core::home::with_lock(&path, || {
        if let Some(t) = read_file_token(&path)? {
            return Ok(Token(t));
        }
        let t = generate();
        write_private(&path, &t)?;
        Ok(Token(t))
    })
}

fn store_load_or_create(store: &dyn SecretStore, account: &str, legacy: &Path) -> Result<Token> {
    if let Some(t) = store.get(account)?.and_then(|s| valid(s.expose())) {
        return Ok(Token(t));
    }
    let t = match read_file_token(legacy)? {
        Some(t) => t,
        None => generate(),
    };
    store.set(account, &Secret::new(t.clone()))?;
    let back = store.get(account)?.map(|s| s.expose().to_string());
    if back.as_deref() != Some(t.as_str()) {
        return Err(Error::Secrets(format!(
            "the key store did not return the token just stored under \"{account}\""
        )));
    }
    if legacy.exists() {
        std::fs::remove_file(legacy).ctx(|| format!("removing {}", legacy.display()))?;
        tracing::info!(
            "moved the token from {} into the key store (account {account}); `codex-free token show` prints it",
            legacy.display()
        );
    }
    Ok(Token(t))
}

/// Replace one token with a new random one (`codex-free token rotate [--admin]`); the
/// other token is not touched. Errors: the store or file cannot be written.
pub fn rotate(home: &Path, kind: TokenKind) -> Result<Token> {
    rotate_in(home, kind, &TokenVault::for_home(home, kind))
}

/// [`rotate`] with an explicit vault.
pub fn rotate_in(home: &Path, kind: TokenKind, vault: &TokenVault) -> Result<Token> {
    let t = generate();
    match vault {
        TokenVault::Store { store, account, .. } => {
            store.set(account, &Secret::new(t.clone()))?;
            let marker = rotated_marker(home, kind);
            codex_free_core::home::write_atomic(
                &marker,
                chrono::Utc::now().to_rfc3339().as_bytes(),
            )?;
        }
        TokenVault::File(path) => {
            codex_free_core::home::with_lock(path, || write_private(path, &t))?;
        }
    }
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

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A token re-read when its file (or, for a store-held token, its rotation marker)
/// changes mtime or size: one `stat` per request, so a rotation applies to the running
/// server. A file that vanishes or becomes unreadable keeps the last token.
pub struct LiveToken {
    watch: Option<(PathBuf, TokenVault, PathBuf, TokenKind)>,
    state: RwLock<(Option<(SystemTime, u64)>, Token)>,
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

impl LiveToken {
    /// Load (creating on first use) the `kind` token of `home`. Errors: as [`load_or_create`].
    pub fn load(home: &Path, kind: TokenKind) -> Result<Self> {
        Self::load_in(home, kind, TokenVault::for_home(home, kind))
    }

    /// [`LiveToken::load`] with an explicit vault.
    pub fn load_in(home: &Path, kind: TokenKind, vault: TokenVault) -> Result<Self> {
        let token = load_or_create_in(home, kind, &vault)?;
        let watched = match &vault {
            TokenVault::Store { .. } => rotated_marker(home, kind),
            TokenVault::File(p) => p.clone(),
        };
        Ok(Self {
            state: RwLock::new((stamp(&watched), token)),
            watch: Some((watched, vault, home.to_path_buf(), kind)),
        })
    }

    /// A token that never changes (tests).
    pub fn fixed(token: Token) -> Self {
        Self {
            watch: None,
            state: RwLock::new((None, token)),
        }
    }

    /// The current token.
    pub fn get(&self) -> Token {
        let Some((watched, vault, home, kind)) = &self.watch else {
            return self
                .state
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .1
                .clone();
        };
        let now = stamp(watched);
        {
            let s = self.state.read().unwrap_or_else(|p| p.into_inner());
            if s.0 == now || now.is_none() {
                return s.1.clone();
            }
        }
        let mut s = self.state.write().unwrap_or_else(|p| p.into_inner());
        let fresh = match vault {
            TokenVault::File(p) => read_file_token(p).ok().flatten(),
            TokenVault::Store { .. } => load_or_create_in(home, *kind, vault).ok().map(|t| t.0),
        };
        if let Some(t) = fresh {
            s.1 = Token(t);
        }
        s.0 = now;
        s.1.clone()
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct LoginCodes {
    /// Pending codes: SHA-256 hex of the code and expiry (Unix ms).
    codes: Vec<PendingCode>,
}

#[derive(Debug, Serialize, Deserialize)]
struct PendingCode {
    sha256: String,
    expires_ms: i64,
}

fn codes_path(home: &Path) -> PathBuf {
    home.join(LOGIN_CODES_FILE)
}

fn read_codes(path: &Path) -> LoginCodes {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

fn write_codes(path: &Path, c: &LoginCodes) -> Result<()> {
    let text = serde_json::to_string(c)
        .map_err(|e| Error::InvalidArgument(format!("login codes do not serialise: {e}")))?;
    codex_free_core::home::write_atomic_private_unlocked(path, text.as_bytes())
}

/// Issue a one-time login code for the web UI (valid [`LOGIN_CODE_TTL`], redeemable once
/// by any server process on this state home). Only its SHA-256 is stored. Errors: the
/// codes file cannot be written.
pub fn issue_login_code(home: &Path) -> Result<String> {
    let code = generate();
    let path = codes_path(home);
    codex_free_core::home::with_lock(&path, || {
        let mut c = read_codes(&path);
        let now = now_ms();
        c.codes.retain(|p| p.expires_ms > now);
        c.codes.push(PendingCode {
            sha256: codex_free_core::home::sha256_hex(code.as_bytes()),
            expires_ms: now + LOGIN_CODE_TTL.as_millis() as i64,
        });
        let excess = c.codes.len().saturating_sub(MAX_LOGIN_CODES);
        c.codes.drain(..excess);
        write_codes(&path, &c)
    })?;
    Ok(code)
}

/// Redeem a login code: true (and the code is gone) when it was pending and unexpired.
/// Errors: the codes file cannot be rewritten.
pub fn redeem_login_code(home: &Path, code: &str) -> Result<bool> {
    let path = codes_path(home);
    if !path.exists() {
        return Ok(false);
    }
    let want = codex_free_core::home::sha256_hex(code.as_bytes());
    codex_free_core::home::with_lock(&path, || {
        let mut c = read_codes(&path);
        let now = now_ms();
        let before = c.codes.len();
        let mut hit = false;
        c.codes.retain(|p| {
            if bool::from(p.sha256.as_bytes().ct_eq(want.as_bytes())) {
                hit = p.expires_ms > now;
                return false;
            }
            p.expires_ms > now
        });
        if c.codes.len() != before {
            write_codes(&path, &c)?;
        }
        Ok(hit)
    })
}

/// The login link for a server at `base` (`http://127.0.0.1:3000`).
pub fn login_link(base: &str, code: &str) -> String {
    format!("{}/login?code={code}", base.trim_end_matches('/'))
}

/// The rate limit of `/login`: a token bucket for the whole process holding
/// `per_minute` attempts and refilled at `per_minute` a minute. Every attempt takes one,
/// right or wrong code, so a flood of guesses is slowed whatever it sends (a code has 128
/// random bits; the bucket keeps the server from spending itself on the flood).
#[derive(Debug)]
pub struct LoginLimiter {
    per_minute: u32,
    /// Tokens left and when they were counted.
    state: Mutex<(f64, Instant)>,
}

impl LoginLimiter {
    /// A full bucket of `per_minute` (at least 1) attempts.
    pub fn new(per_minute: u32) -> Self {
        let per_minute = per_minute.max(1);
        Self {
            per_minute,
            state: Mutex::new((f64::from(per_minute), Instant::now())),
        }
    }

    /// Take one attempt now. Errors: how long until the next one is allowed.
    pub fn try_acquire(&self) -> std::result::Result<(), Duration> {
        self.try_acquire_at(Instant::now())
    }

    /// [`Self::try_acquire`] at `now` (tests).
    pub fn try_acquire_at(&self, now: Instant) -> std::result::Result<(), Duration> {
        let cap = f64::from(self.per_minute);
        let per_sec = cap / 60.0;
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let elapsed = now.saturating_duration_since(st.1).as_secs_f64();
        st.0 = (st.0 + elapsed * per_sec).min(cap);
        st.1 = now;
        if st.0 >= 1.0 {
            st.0 -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - st.0) / per_sec))
        }
    }
}

/// Browser sessions of one running server: random ids (only their SHA-256 is kept) with
/// an expiry. Bound to the admin token they were created under: when the admin token
/// changes, every session ends.
#[derive(Default)]
pub struct Sessions {
    inner: Mutex<SessionMap>,
}

#[derive(Default)]
struct SessionMap {
    /// SHA-256 of the admin token the sessions belong to.
    admin: String,
    by_hash: HashMap<String, Instant>,
}

impl Sessions {
    fn sync(m: &mut SessionMap, admin: &Token) {
        let fp = codex_free_core::home::sha256_hex(admin.expose().as_bytes());
        if m.admin != fp {
            m.by_hash.clear();
            m.admin = fp;
        }
    }

    /// Start a session under `admin`; returns the cookie value.
    pub fn create(&self, admin: &Token) -> String {
        let id = generate();
        let mut m = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        Self::sync(&mut m, admin);
        let now = Instant::now();
        m.by_hash.retain(|_, exp| *exp > now);
        if m.by_hash.len() >= MAX_SESSIONS
            && let Some(oldest) = m
                .by_hash
                .iter()
                .min_by_key(|(_, e)| **e)
                .map(|(k, _)| k.clone())
        {
            m.by_hash.remove(&oldest);
        }
        m.by_hash.insert(
            codex_free_core::home::sha256_hex(id.as_bytes()),
            now + SESSION_TTL,
        );
        id
    }

    /// Is `id` a live session under the current `admin` token?
    pub fn valid(&self, admin: &Token, id: &str) -> bool {
        let mut m = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        Self::sync(&mut m, admin);
        let h = codex_free_core::home::sha256_hex(id.as_bytes());
        m.by_hash.get(&h).is_some_and(|exp| *exp > Instant::now())
    }
}

/// Name of the session cookie for a server on `port`. Browsers scope cookies by host, not
/// port, so two servers on one machine would otherwise overwrite each other's session.
pub fn session_cookie_name(port: u16) -> String {
    format!("codex_free_admin_{port}")
}

/// Hosts and origins accepted for `/mcp` besides loopback.
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

/// Is `host` (a `Host` header value) a loopback name, `127.0.0.1`, `localhost` or
/// `[::1]`, with an optional numeric port and nothing else?
pub fn loopback_host(host: &str) -> bool {
    let ok_port = |p: &str| !p.is_empty() && p.len() <= 5 && p.chars().all(|c| c.is_ascii_digit());
    if let Some(rest) = host.strip_prefix("[::1]") {
        return rest.is_empty() || rest.strip_prefix(':').is_some_and(ok_port);
    }
    let (name, port) = match host.split_once(':') {
        Some((n, p)) => (n, Some(p)),
        None => (host, None),
    };
    (name.eq_ignore_ascii_case("localhost") || name == "127.0.0.1") && port.is_none_or(ok_port)
}

/// Is the `Host` header value acceptable for `/mcp`? Loopback names at any port, or
/// configured hosts.
pub fn host_ok(host: &str, allowed: &Allowed) -> bool {
    let h = host_part(host);
    is_loopback_host(h)
        || allowed
            .hosts
            .iter()
            .any(|a| a.eq_ignore_ascii_case(host) || a.eq_ignore_ascii_case(h))
}

/// Is the `Origin` header value acceptable for `/mcp`? Absent is fine (non-browser
/// clients); `http(s)://` loopback at any port, or a configured origin. `null` is refused.
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
    /// 403: `Host` not allowed for `/mcp`.
    Host,
    /// 403: the web UI and `/api` are served only to a loopback `Host`, not through a proxy.
    LoopbackOnly,
    /// 403: `Origin` not allowed.
    Origin,
    /// 403: a cookie-authenticated state change without an `Origin` header.
    OriginMissing,
    /// 401: no or wrong MCP token.
    Unauthorized,
    /// 401: no or wrong admin credential (an MCP token is not one).
    AdminUnauthorized,
    /// 404: a secret-path request with the wrong secret looks like any unknown path.
    NotFound,
}

/// Decide one `/mcp` request: Host (loopback or `server.allowedHosts`), then Origin, then
/// the MCP token as the secret path segment (`path_secret`) or a bearer header. The admin
/// token and cookies are not credentials here.
pub fn check_mcp(
    token: &Token,
    allowed: &Allowed,
    host: Option<&str>,
    origin: Option<&str>,
    authorization: Option<&str>,
    path_secret: Option<&str>,
) -> std::result::Result<(), Refusal> {
    match host {
        Some(h) if host_ok(h, allowed) => {}
        _ => return Err(Refusal::Host),
    }
    if !origin_ok(origin, allowed) {
        return Err(Refusal::Origin);
    }
    if let Some(seg) = path_secret {
        return if token.matches(seg) {
            Ok(())
        } else {
            Err(Refusal::NotFound)
        };
    }
    match bearer(authorization) {
        Some(t) if token.matches(t) => Ok(()),
        _ => Err(Refusal::Unauthorized),
    }
}

fn bearer(authorization: Option<&str>) -> Option<&str> {
    let a = authorization?;
    a.strip_prefix("Bearer ")
        .or_else(|| a.strip_prefix("bearer "))
        .map(str::trim)
}

/// The parts of a request [`check_admin`] looks at.
pub struct AdminRequest<'a> {
    /// `Host` header value.
    pub host: Option<&'a str>,
    /// `Origin` header value.
    pub origin: Option<&'a str>,
    /// POST, PUT, DELETE or PATCH (anything but GET/HEAD/OPTIONS).
    pub state_changing: bool,
    /// A forwarding header (`Forwarded`, `X-Forwarded-*`, `X-Real-IP`, `CF-Connecting-IP`)
    /// is present: the request came through a proxy or tunnel.
    pub forwarded: bool,
    /// `Authorization` header value.
    pub authorization: Option<&'a str>,
    /// The session cookie's value, if the request carries one.
    pub session: Option<&'a str>,
}

/// How an admin request proved itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminAuth {
    /// `Authorization: Bearer <admin token>`.
    Bearer,
    /// A live session cookie.
    Cookie,
}

/// Decide one web UI or `/api` request: loopback Host and no forwarding headers, then
/// Origin (when present it must be `http://<Host>`), then the admin token as a bearer
/// header or a live session; a cookie-authenticated state change also needs the Origin.
pub fn check_admin(
    admin: &Token,
    sessions: &Sessions,
    r: &AdminRequest<'_>,
) -> std::result::Result<AdminAuth, Refusal> {
    let host = match r.host {
        Some(h) if loopback_host(h) && !r.forwarded => h,
        _ => return Err(Refusal::LoopbackOnly),
    };
    if let Some(o) = r.origin
        && !o.eq_ignore_ascii_case(&format!("http://{host}"))
    {
        return Err(Refusal::Origin);
    }
    if let Some(t) = bearer(r.authorization)
        && admin.matches(t)
    {
        return Ok(AdminAuth::Bearer);
    }
    if let Some(id) = r.session
        && sessions.valid(admin, id)
    {
        if r.state_changing && r.origin.is_none() {
            return Err(Refusal::OriginMissing);
        }
        return Ok(AdminAuth::Cookie);
    }
    Err(Refusal::AdminUnauthorized)
}

/// The value of cookie `name` in a `Cookie` header.
pub fn cookie_value<'a>(header: Option<&'a str>, name: &str) -> Option<&'a str> {
    header?.split(';').find_map(|part| {
        let (k, v) = part.trim().split_once('=')?;
        (k == name).then_some(v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_login_bucket_allows_a_burst_then_refills_at_its_rate() {
        let l = LoginLimiter::new(10);
        let t0 = Instant::now();
        for i in 0..10 {
            assert!(l.try_acquire_at(t0).is_ok(), "attempt {i}");
        }
        let wait = l.try_acquire_at(t0).unwrap_err();
        assert!(
            wait > Duration::from_secs(5) && wait <= Duration::from_secs(6),
            "{wait:?}"
        );
        // One attempt back every 6 s; no more than the burst after a long pause.
        assert!(l.try_acquire_at(t0 + Duration::from_secs(6)).is_ok());
        assert!(l.try_acquire_at(t0 + Duration::from_secs(6)).is_err());
        let later = t0 + Duration::from_secs(3600);
        for _ in 0..10 {
            assert!(l.try_acquire_at(later).is_ok());
        }
        assert!(l.try_acquire_at(later).is_err());
    }

    #[test]
    fn tokens_are_created_once_private_and_rotate_separately() {
        let d = tempfile::tempdir().unwrap();
        let a = load_or_create(d.path(), TokenKind::Mcp).unwrap();
        let b = load_or_create(d.path(), TokenKind::Mcp).unwrap();
        assert_eq!(a.expose(), b.expose());
        assert_eq!(a.expose().len(), 43);
        let admin = load_or_create(d.path(), TokenKind::Admin).unwrap();
        assert_ne!(a.expose(), admin.expose());
        #[cfg(unix)]
        for k in [TokenKind::Mcp, TokenKind::Admin] {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(token_path(d.path(), k))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let live = LiveToken::load(d.path(), TokenKind::Mcp).unwrap();
        let c = rotate(d.path(), TokenKind::Mcp).unwrap();
        assert_ne!(a.expose(), c.expose());
        assert_eq!(
            live.get().expose(),
            c.expose(),
            "rotation reaches a live token"
        );
        assert_eq!(
            load_or_create(d.path(), TokenKind::Admin).unwrap().expose(),
            admin.expose(),
            "rotating the MCP token keeps the admin token"
        );
        let admin2 = rotate(d.path(), TokenKind::Admin).unwrap();
        assert_ne!(admin2.expose(), admin.expose());
        assert_eq!(live.get().expose(), c.expose());
    }

    fn persistent_memory_store() -> Opened {
        Opened {
            persistent: true,
            label: "test store".into(),
            ..Opened::in_memory()
        }
    }

    #[test]
    fn tokens_live_in_a_persistent_store_and_move_there_from_the_old_file() {
        let d = tempfile::tempdir().unwrap();
        let keys = persistent_memory_store();
        // An old install left its token in the file: it moves into the store unchanged.
        let old = "old-token-old-token-old-token-old-token-0000";
        std::fs::write(token_path(d.path(), TokenKind::Mcp), format!("{old}\n")).unwrap();
        let vault = TokenVault::new(d.path(), TokenKind::Mcp, &keys);
        assert!(vault.describe().contains("test store") && !vault.describe().contains(old));
        let t = load_or_create_in(d.path(), TokenKind::Mcp, &vault).unwrap();
        assert_eq!(
            t.expose(),
            old,
            "clients holding the old token keep working"
        );
        assert!(
            !token_path(d.path(), TokenKind::Mcp).exists(),
            "no clear copy left on disk"
        );
        let account = token_account(d.path(), TokenKind::Mcp);
        assert_eq!(keys.store.get(&account).unwrap().unwrap().expose(), old);
        // Another state home gets its own account and token.
        let d2 = tempfile::tempdir().unwrap();
        assert_ne!(account, token_account(d2.path(), TokenKind::Mcp));
        let v2 = TokenVault::new(d2.path(), TokenKind::Mcp, &keys);
        assert_ne!(
            load_or_create_in(d2.path(), TokenKind::Mcp, &v2)
                .unwrap()
                .expose(),
            old
        );
        // Rotation reaches a live token through the marker file, not a store call per request.
        let live = LiveToken::load_in(d.path(), TokenKind::Mcp, vault.clone()).unwrap();
        assert_eq!(live.get().expose(), old);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let new = rotate_in(d.path(), TokenKind::Mcp, &vault).unwrap();
        assert_ne!(new.expose(), old);
        assert_eq!(live.get().expose(), new.expose());
        assert!(
            !std::fs::read_to_string(rotated_marker(d.path(), TokenKind::Mcp))
                .unwrap()
                .contains(new.expose())
        );
        // The admin token is separate.
        let admin = TokenVault::new(d.path(), TokenKind::Admin, &keys);
        assert_ne!(
            load_or_create_in(d.path(), TokenKind::Admin, &admin)
                .unwrap()
                .expose(),
            new.expose()
        );
    }

    #[test]
    fn a_volatile_or_failing_store_keeps_the_token_in_the_file() {
        let d = tempfile::tempdir().unwrap();
        // keyutils-like: not persistent → the file.
        let v = TokenVault::new(d.path(), TokenKind::Mcp, &Opened::in_memory());
        assert!(matches!(v, TokenVault::File(_)));
        // A persistent store that fails every call: the server still gets a token, in the file.
        let broken = TokenVault::Store {
            store: Arc::new(codex_free_secrets::keyring::Unavailable("locked".into())),
            label: "broken".into(),
            account: token_account(d.path(), TokenKind::Mcp),
        };
        let t = load_or_create_in(d.path(), TokenKind::Mcp, &broken).unwrap();
        assert_eq!(
            std::fs::read_to_string(token_path(d.path(), TokenKind::Mcp))
                .unwrap()
                .trim(),
            t.expose()
        );
    }

    #[test]
    fn login_codes_are_single_use_and_expire() {
        let d = tempfile::tempdir().unwrap();
        assert!(!redeem_login_code(d.path(), "nothing").unwrap());
        let code = issue_login_code(d.path()).unwrap();
        let text = std::fs::read_to_string(codes_path(d.path())).unwrap();
        assert!(!text.contains(&code), "only the hash is stored");
        assert!(!redeem_login_code(d.path(), "wrong").unwrap());
        assert!(redeem_login_code(d.path(), &code).unwrap());
        assert!(!redeem_login_code(d.path(), &code).unwrap(), "single use");
        // an expired code is refused and dropped
        let old = issue_login_code(d.path()).unwrap();
        let path = codes_path(d.path());
        let mut c = read_codes(&path);
        c.codes[0].expires_ms = now_ms() - 1;
        write_codes(&path, &c).unwrap();
        assert!(!redeem_login_code(d.path(), &old).unwrap());
        assert!(read_codes(&path).codes.is_empty());
        for _ in 0..40 {
            issue_login_code(d.path()).unwrap();
        }
        assert_eq!(read_codes(&path).codes.len(), MAX_LOGIN_CODES);
    }

    #[test]
    fn mcp_check() {
        let t = Token::from_string("s3cret-token-value-s3cret-token-value-xx".into());
        let al = Allowed::default();
        let bearer = format!("Bearer {}", t.expose());
        let b = Some(bearer.as_str());
        let ok = |host, origin, auth, seg| check_mcp(&t, &al, host, origin, auth, seg);
        assert_eq!(ok(Some("127.0.0.1:3000"), None, b, None), Ok(()));
        assert_eq!(
            ok(Some("localhost"), None, None, None),
            Err(Refusal::Unauthorized)
        );
        assert_eq!(
            ok(Some("127.0.0.1:3000"), None, Some("Bearer nope"), None),
            Err(Refusal::Unauthorized)
        );
        assert_eq!(
            ok(Some("evil.example:3000"), None, b, None),
            Err(Refusal::Host)
        );
        assert_eq!(ok(None, None, b, None), Err(Refusal::Host));
        assert_eq!(
            ok(
                Some("127.0.0.1:3000"),
                Some("https://evil.example"),
                b,
                None
            ),
            Err(Refusal::Origin)
        );
        assert_eq!(
            ok(Some("127.0.0.1:3000"), Some("null"), b, None),
            Err(Refusal::Origin)
        );
        assert_eq!(
            ok(Some("[::1]:3000"), Some("http://localhost:5173"), b, None),
            Ok(())
        );
        assert_eq!(
            ok(Some("localhost.evil.example"), None, b, None),
            Err(Refusal::Host)
        );
        assert_eq!(ok(Some("127.0.0.1"), None, None, Some(t.expose())), Ok(()));
        assert_eq!(
            ok(Some("127.0.0.1"), None, None, Some("x")),
            Err(Refusal::NotFound)
        );
        let tunnel = Allowed {
            hosts: vec!["abc.tunnel.example".into()],
            origins: vec!["https://chatgpt.com".into()],
        };
        assert_eq!(
            check_mcp(
                &t,
                &tunnel,
                Some("abc.tunnel.example"),
                Some("https://chatgpt.com"),
                b,
                None
            ),
            Ok(())
        );
    }

    #[test]
    fn admin_check() {
        let admin = Token::from_string("admin-token-value-admin-token-value-xxxx".into());
        let mcp = Token::from_string("s3cret-token-value-s3cret-token-value-xx".into());
        let sessions = Sessions::default();
        let sid = sessions.create(&admin);
        let ab = format!("Bearer {}", admin.expose());
        let mb = format!("Bearer {}", mcp.expose());
        let req = |host, origin, state_changing, auth, session| AdminRequest {
            host,
            origin,
            state_changing,
            forwarded: false,
            authorization: auth,
            session,
        };
        let h = Some("127.0.0.1:3000");
        let check = |r: AdminRequest<'_>| check_admin(&admin, &sessions, &r);
        assert_eq!(
            check(req(h, None, true, Some(&ab), None)),
            Ok(AdminAuth::Bearer)
        );
        assert_eq!(
            check(req(h, None, false, Some(&mb), None)),
            Err(Refusal::AdminUnauthorized),
            "the MCP token is not an admin credential"
        );
        assert_eq!(
            check(req(h, None, false, None, Some(mcp.expose()))),
            Err(Refusal::AdminUnauthorized)
        );
        assert_eq!(
            check(req(h, None, false, None, Some(&sid))),
            Ok(AdminAuth::Cookie)
        );
        assert_eq!(
            check(req(h, None, true, None, Some(&sid))),
            Err(Refusal::OriginMissing)
        );
        assert_eq!(
            check(req(
                h,
                Some("http://127.0.0.1:3000"),
                true,
                None,
                Some(&sid)
            )),
            Ok(AdminAuth::Cookie)
        );
        for foreign in [
            "http://localhost:3000",
            "http://127.0.0.1:8080",
            "https://127.0.0.1:3000",
            "http://evil.example",
            "null",
        ] {
            assert_eq!(
                check(req(h, Some(foreign), true, None, Some(&sid))),
                Err(Refusal::Origin),
                "{foreign}"
            );
            assert_eq!(
                check(req(h, Some(foreign), false, Some(&ab), None)),
                Err(Refusal::Origin),
                "{foreign}"
            );
        }
        for host in [
            "abc.tunnel.example",
            "localhost.evil.example",
            "127.0.0.1.nip.io:3000",
            "127.0.0.1:3000@evil",
            "[::1]x",
            "",
        ] {
            assert_eq!(
                check(req(Some(host), None, false, Some(&ab), None)),
                Err(Refusal::LoopbackOnly),
                "{host}"
            );
        }
        for host in ["localhost:3000", "[::1]:3000", "127.0.0.1", "LOCALHOST"] {
            assert!(loopback_host(host), "{host}");
        }
        let mut proxied = req(h, None, false, Some(&ab), None);
        proxied.forwarded = true;
        assert_eq!(check(proxied), Err(Refusal::LoopbackOnly));
        // rotating the admin token ends every session
        let admin2 = Token::from_string("other-admin-token-other-admin-token-xxxx".into());
        assert!(!sessions.valid(&admin2, &sid));
        assert!(!sessions.valid(&admin, &sid), "and they do not come back");
        assert_eq!(
            cookie_value(
                Some("a=b; codex_free_admin_3000=xyz"),
                "codex_free_admin_3000"
            ),
            Some("xyz")
        );
        assert_eq!(cookie_value(Some("a=b"), "codex_free_admin_3000"), None);
    }
}
