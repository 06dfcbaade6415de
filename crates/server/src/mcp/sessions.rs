//! Bounds on the MCP sessions of the HTTP transport, so one client cannot make the server
//! hold an unbounded number of them (each costs a handler, a worker task and ~70 KB):
//!
//! - **Idle expiry**: a session with no request in flight and none started or finished for
//!   `server.sessionIdleSecs` is closed (its client gets 404 and, as the MCP spec says,
//!   starts a new one). A long tool call is not idleness: a session is never expired while
//!   a request of it runs.
//! - **A cap per token**: at most `server.maxSessionsPerToken` live sessions per MCP token
//!   (sessions are counted under a hash of the token they were opened with). A new session
//!   at the cap closes the longest-idle one; when every one has a request in flight the new
//!   one is refused with a clear error ([`Full`]).
//!
//! [`BoundedSessions`] wraps rmcp's [`LocalSessionManager`] and keeps a table of the live
//! sessions beside it: owner, last activity, requests in flight (a response stream counts
//! until it ends or its connection drops). The token of a request reaches
//! [`SessionManager::create_session`] through the task-local [`SESSION_OWNER`], set by the
//! HTTP guard around the request.
//!
//! Invariant: the table and rmcp's map hold the same sessions (a session leaves both in
//! [`SessionManager::close_session`], which rmcp also calls when a session's worker ends).

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use tokio_util::sync::CancellationToken;

tokio::task_local! {
    /// Who opens a session in the current request: a hash of the MCP token it presented
    /// (see [`owner_of`]). Set by the HTTP guard around every `/mcp` request.
    pub static SESSION_OWNER: String;
}

/// The owner key of a session opened with `token`: 16 hex digits of its SHA-256 (the token
/// itself is never kept in the table).
pub fn owner_of(token: &str) -> String {
    codex_free_core::home::sha256_hex(token.as_bytes())[..16].to_string()
}

/// The limits, read from `server.*` at start.
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    /// A session idle this long is closed.
    pub idle: Duration,
    /// Live sessions per owner (token).
    pub max_per_owner: usize,
}

impl SessionLimits {
    /// From the `server` block of the config.
    pub fn from_config(s: &codex_free_core::config::ServerConfig) -> Self {
        Self {
            idle: Duration::from_secs(s.session_idle_secs.max(1)),
            max_per_owner: s.max_sessions_per_token.max(1),
        }
    }
}

/// Refusal of a new session: `live` sessions of this token, each with a request in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full {
    /// Live sessions of the token.
    pub live: usize,
    /// The cap (`server.maxSessionsPerToken`).
    pub max: usize,
}

impl std::fmt::Display for Full {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "too many live MCP sessions for this token: {} of {} (server.maxSessionsPerToken), each with a request in flight; close one (DELETE /mcp with its Mcp-Session-Id) or retry when a request finishes",
            self.live, self.max
        )
    }
}

/// The errors of [`BoundedSessions`]: rmcp's own, or [`Full`].
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// From rmcp's session manager (unknown session, worker gone).
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
    /// The token's sessions are at the cap and none is idle.
    #[error("{0}")]
    Full(Full),
}

#[derive(Debug)]
struct Entry {
    owner: String,
    last: Instant,
    busy: usize,
}

type Table = Arc<Mutex<HashMap<SessionId, Entry>>>;

fn lock(t: &Table) -> std::sync::MutexGuard<'_, HashMap<SessionId, Entry>> {
    t.lock().unwrap_or_else(|p| p.into_inner())
}

/// rmcp's [`LocalSessionManager`] with idle expiry and a cap per token (module doc).
#[derive(Debug)]
pub struct BoundedSessions {
    inner: LocalSessionManager,
    limits: SessionLimits,
    table: Table,
    /// Serialises admission (check, evict, create) so two concurrent `initialize`s cannot
    /// both take the last place.
    admit: tokio::sync::Mutex<()>,
}

impl BoundedSessions {
    /// A manager with `limits`. rmcp's own idle timer is turned off: this one does not
    /// close a session while a request of it runs.
    pub fn new(limits: SessionLimits) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = None;
        Self {
            inner,
            limits,
            table: Arc::default(),
            admit: tokio::sync::Mutex::new(()),
        }
    }

    /// Live sessions (all owners).
    pub fn live(&self) -> usize {
        lock(&self.table).len()
    }

    /// Whether a new session of `owner` would be admitted now (there is room, or an idle
    /// session to close): the HTTP guard's early check, so a refusal is a clear 429 rather
    /// than rmcp's 500. Errors: [`Full`].
    pub fn check(&self, owner: &str) -> Result<(), Full> {
        let t = lock(&self.table);
        let mine: Vec<&Entry> = t.values().filter(|e| e.owner == owner).collect();
        if mine.len() < self.limits.max_per_owner || mine.iter().any(|e| e.busy == 0) {
            Ok(())
        } else {
            Err(Full {
                live: mine.len(),
                max: self.limits.max_per_owner,
            })
        }
    }

    /// The longest-idle session of `owner` to close for a new one, `None` when there is
    /// room. Errors: [`Full`] when none is idle.
    fn victim(&self, owner: &str) -> Result<Option<SessionId>, Full> {
        let t = lock(&self.table);
        let mine: Vec<(&SessionId, &Entry)> = t.iter().filter(|(_, e)| e.owner == owner).collect();
        if mine.len() < self.limits.max_per_owner {
            return Ok(None);
        }
        mine.iter()
            .filter(|(_, e)| e.busy == 0)
            .min_by_key(|(_, e)| e.last)
            .map(|(id, _)| Some((*id).clone()))
            .ok_or(Full {
                live: mine.len(),
                max: self.limits.max_per_owner,
            })
    }

    fn touch(&self, id: &SessionId) {
        if let Some(e) = lock(&self.table).get_mut(id) {
            e.last = Instant::now();
        }
    }

    /// Mark a request of `id` in flight until the returned guard drops.
    fn begin(&self, id: &SessionId) -> InFlight {
        if let Some(e) = lock(&self.table).get_mut(id) {
            e.busy += 1;
            e.last = Instant::now();
        }
        InFlight {
            table: self.table.clone(),
            id: id.clone(),
        }
    }

    /// The sessions idle longer than the limit at `now`.
    fn expired(&self, now: Instant) -> Vec<SessionId> {
        lock(&self.table)
            .iter()
            .filter(|(_, e)| {
                e.busy == 0 && now.saturating_duration_since(e.last) >= self.limits.idle
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Close every session idle longer than the limit; returns how many were closed.
    pub async fn expire_idle(&self) -> usize {
        let ids = self.expired(Instant::now());
        for id in &ids {
            tracing::debug!("closing an MCP session idle for {:?}", self.limits.idle);
            if let Err(e) = self.close_session(id).await {
                tracing::warn!("closing an idle MCP session: {e}");
            }
        }
        ids.len()
    }

    /// Expire idle sessions every twentieth of the idle limit (1 s to 30 s) until `cancel`.
    pub async fn sweep(self: Arc<Self>, cancel: CancellationToken) {
        let every = (self.limits.idle / 20).clamp(Duration::from_secs(1), Duration::from_secs(30));
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(every) => {}
            }
            self.expire_idle().await;
        }
    }
}

/// A request of a session in flight; dropping it ends the request (activity noted).
struct InFlight {
    table: Table,
    id: SessionId,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(e) = lock(&self.table).get_mut(&self.id) {
            e.busy = e.busy.saturating_sub(1);
            e.last = Instant::now();
        }
    }
}

/// A response stream that keeps its request in flight until it ends or is dropped.
struct Tracked<S> {
    inner: Pin<Box<S>>,
    _flight: InFlight,
}

impl<S: Stream> Stream for Tracked<S> {
    type Item = S::Item;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl SessionManager for BoundedSessions {
    type Error = SessionError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let owner = SESSION_OWNER.try_with(Clone::clone).unwrap_or_default();
        let _admit = self.admit.lock().await;
        while let Some(victim) = self.victim(&owner).map_err(SessionError::Full)? {
            tracing::info!(
                "MCP session cap ({}) reached for a token: closing its longest-idle session",
                self.limits.max_per_owner
            );
            self.close_session(&victim).await?;
        }
        let (id, transport) = self.inner.create_session().await?;
        lock(&self.table).insert(
            id.clone(),
            Entry {
                owner,
                last: Instant::now(),
                busy: 0,
            },
        );
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let _flight = self.begin(id);
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        lock(&self.table).remove(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let flight = self.begin(id);
        let inner = self.inner.create_stream(id, message).await?;
        Ok(Tracked {
            inner: Box::pin(inner),
            _flight: flight,
        })
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        // An open GET stream is not a request in flight: a session that only listens
        // still expires (its client re-initialises on the 404).
        self.touch(id);
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max: usize) -> SessionLimits {
        SessionLimits {
            idle: Duration::from_secs(60),
            max_per_owner: max,
        }
    }

    async fn open(
        m: &BoundedSessions,
        owner: &str,
    ) -> Result<(SessionId, impl Sized), SessionError> {
        SESSION_OWNER
            .scope(owner.to_string(), m.create_session())
            .await
    }

    #[tokio::test]
    async fn at_the_cap_the_longest_idle_session_of_that_token_goes() {
        let m = BoundedSessions::new(limits(3));
        let mut keep = Vec::new();
        let mut ids = Vec::new();
        for _ in 0..3 {
            let (id, t) = open(&m, "a").await.unwrap();
            ids.push(id);
            keep.push(t);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let (other, t) = open(&m, "b").await.unwrap();
        keep.push(t);
        // The oldest is busy: the next-oldest idle one is closed instead.
        let flight = m.begin(&ids[0]);
        let (new, t) = open(&m, "a").await.unwrap();
        keep.push(t);
        assert!(
            m.has_session(&ids[0]).await.unwrap(),
            "a busy session was closed"
        );
        assert!(
            !m.has_session(&ids[1]).await.unwrap(),
            "the longest-idle one stays"
        );
        assert!(m.has_session(&new).await.unwrap());
        assert!(
            m.has_session(&other).await.unwrap(),
            "another token's session was closed"
        );
        assert_eq!(m.live(), 4);
        // Every session of "a" busy: refused, clearly.
        let _f2 = m.begin(&ids[2]);
        let _f3 = m.begin(&new);
        assert_eq!(m.check("a"), Err(Full { live: 3, max: 3 }));
        let Err(SessionError::Full(f)) = open(&m, "a").await else {
            panic!("admitted beyond the cap");
        };
        assert!(f.to_string().contains("3 of 3"), "{f}");
        drop(flight);
        assert!(m.check("a").is_ok());
    }

    #[tokio::test]
    async fn idle_sessions_expire_but_not_while_a_request_runs() {
        let m = BoundedSessions::new(SessionLimits {
            idle: Duration::from_millis(50),
            max_per_owner: 8,
        });
        let (idle, _t1) = open(&m, "a").await.unwrap();
        let (busy, _t2) = open(&m, "a").await.unwrap();
        let flight = m.begin(&busy);
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert_eq!(m.expire_idle().await, 1);
        assert!(!m.has_session(&idle).await.unwrap());
        assert!(m.has_session(&busy).await.unwrap(), "expired mid-request");
        drop(flight);
        assert_eq!(m.expire_idle().await, 0, "activity restarts the idle clock");
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert_eq!(m.expire_idle().await, 1);
        assert_eq!(m.live(), 0);
    }
}
