//! The connection layer under the HTTP routes: our own accept loop over hyper's HTTP/1
//! server (what `axum::serve` does, plus the bounds it lacks), so no client can hold the
//! server's sockets without sending requests:
//!
//! - **Header deadline**: a connection has `server.headerReadTimeoutSecs` to send a
//!   request's headers, counted from when the server starts waiting for them (so it is also
//!   the idle time of a keep-alive connection); then hyper closes it. A response that is
//!   still streaming (a long tool call, an SSE stream) is not waiting for headers.
//! - **Body deadline**: a request has `server.bodyReadTimeoutSecs` from its headers to send
//!   its whole body; then it is answered 408 and the connection is closed.
//! - **A cap on connections**: at most `server.maxConnections` open at once. One more
//!   closes the connection idle longest (no request in flight: bare connects, slow or idle
//!   keep-alive ones go first); when every one is in a request it gets a quick 503 and is
//!   closed, so a real client is answered either way instead of waiting behind a flood.
//! - **`TCP_NODELAY`** on every accepted socket: without it a client reusing one
//!   connection waited for its delayed ACK (~40 ms) on every call.
//!
//! HTTP/1.1 only (every MCP client and tunnel speaks it to a local server).
//!
//! Invariant: every accepted socket is either served under these deadlines, answered 503,
//! or closed at once; none is left without a timer.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use axum::response::IntoResponse;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

/// Connections answered 503 at once at most; beyond, a new one is closed without an answer
/// (each answer holds its socket for up to 1.5 s).
const MAX_REJECTING: usize = 64;

/// How long a stop waits for connections to finish their requests before closing them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The limits, read from `server.*` at start.
#[derive(Debug, Clone, Copy)]
pub struct ConnLimits {
    /// Open connections at most.
    pub max: usize,
    /// Time to send a request's headers (and keep-alive idle time).
    pub header_timeout: Duration,
    /// Time to send a request's whole body.
    pub body_timeout: Duration,
}

impl ConnLimits {
    /// From the `server` block of the config.
    pub fn from_config(s: &codex_free_core::config::ServerConfig) -> Self {
        Self {
            max: s.max_connections.max(1),
            header_timeout: Duration::from_secs(s.header_read_timeout_secs.max(1)),
            body_timeout: Duration::from_secs(s.body_read_timeout_secs.max(1)),
        }
    }
}

/// One open connection as the cap sees it.
#[derive(Debug)]
struct ConnState {
    /// Requests in flight (until their response body ends or is dropped).
    busy: AtomicUsize,
    /// When a request last started or ended (or the connection opened).
    last: Mutex<Instant>,
    /// Cancelled to close the connection at once.
    kill: CancellationToken,
}

impl ConnState {
    fn mark(&self) {
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    fn last(&self) -> Instant {
        *self.last.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn begin(self: &Arc<Self>) -> Flight {
        self.busy.fetch_add(1, Ordering::SeqCst);
        self.mark();
        Flight(self.clone())
    }
}

/// A request in flight on a connection; dropping it ends the request.
struct Flight(Arc<ConnState>);

impl Drop for Flight {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
        self.0.mark();
    }
}

/// The open connections, by id.
#[derive(Default)]
struct Conns {
    map: Mutex<HashMap<u64, Arc<ConnState>>>,
    next: AtomicU64,
}

impl Conns {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<ConnState>>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Register a new connection if there is room, closing the longest-idle one when the
    /// cap is reached. `None` when every connection is in a request.
    fn admit(&self, max: usize) -> Option<(u64, Arc<ConnState>)> {
        let mut map = self.lock();
        if map.len() >= max {
            let victim = map
                .iter()
                .filter(|(_, c)| c.busy.load(Ordering::SeqCst) == 0)
                .min_by_key(|(_, c)| c.last())
                .map(|(id, _)| *id)?;
            if let Some(c) = map.remove(&victim) {
                c.kill.cancel();
            }
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let c = Arc::new(ConnState {
            busy: AtomicUsize::new(0),
            last: Mutex::new(Instant::now()),
            kill: CancellationToken::new(),
        });
        map.insert(id, c.clone());
        Some((id, c))
    }

    fn remove(&self, id: u64) {
        self.lock().remove(&id);
    }

    fn kill_all(&self) {
        for (_, c) in self.lock().drain() {
            c.kill.cancel();
        }
    }
}

/// Serve `router` on `listener` under `limits` until `cancel`; then stop accepting, let
/// requests in flight finish (up to 5 s) and close what is left.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnLimits,
    cancel: CancellationToken,
) {
    let conns = Arc::new(Conns::default());
    let tasks = TaskTracker::new();
    let rejecting = Arc::new(AtomicUsize::new(0));
    loop {
        let stream = tokio::select! {
            _ = cancel.cancelled() => break,
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                Err(e) => {
                    // EMFILE and the like: back off instead of spinning on the error.
                    tracing::warn!("accepting an HTTP connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY not set: {e}");
        }
        let Some((id, state)) = conns.admit(limits.max) else {
            if rejecting.fetch_add(1, Ordering::SeqCst) < MAX_REJECTING {
                let r = rejecting.clone();
                tokio::spawn(async move {
                    reject(stream).await;
                    r.fetch_sub(1, Ordering::SeqCst);
                });
            } else {
                rejecting.fetch_sub(1, Ordering::SeqCst);
                drop(stream);
            }
            continue;
        };
        let (router, conns, cancel) = (router.clone(), conns.clone(), cancel.clone());
        tasks.spawn(async move {
            serve_one(stream, router, state, limits, cancel).await;
            conns.remove(id);
        });
    }
    drop(listener);
    tasks.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, tasks.wait())
        .await
        .is_err()
    {
        conns.kill_all();
        let _ = tokio::time::timeout(Duration::from_secs(1), tasks.wait()).await;
    }
}

async fn serve_one(
    stream: TcpStream,
    router: Router,
    state: Arc<ConnState>,
    limits: ConnLimits,
    cancel: CancellationToken,
) {
    let svc = ConnService {
        router,
        conn: state.clone(),
        body_timeout: limits.body_timeout,
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let conn = builder.serve_connection(TokioIo::new(stream), svc);
    let mut conn = std::pin::pin!(conn);
    let mut stopping = false;
    loop {
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::trace!("HTTP connection ended: {e}");
                }
                return;
            }
            _ = state.kill.cancelled() => return,
            _ = cancel.cancelled(), if !stopping => {
                stopping = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// Answer 503 and close, without reading a request: every connection is in a request.
async fn reject(mut stream: TcpStream) {
    let body = r#"{"code":"busy","message":"the server has server.maxConnections connections open, each in a request; retry in a moment"}"#;
    let resp = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(resp.as_bytes())).await;
    let _ = stream.shutdown().await;
    // Take what the client sent for a moment, so the close does not reset the connection
    // before it has read the answer.
    let mut buf = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_millis(500), async {
        while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
    })
    .await;
}

/// The per-connection service: marks requests in flight, puts the body deadline on the
/// request body, and hands the request to the router.
#[derive(Clone)]
struct ConnService {
    router: Router,
    conn: Arc<ConnState>,
    body_timeout: Duration,
}

impl hyper::service::Service<Request<Incoming>> for ConnService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let flight = self.conn.begin();
        let expired = Arc::new(AtomicBool::new(false));
        let deadline = tokio::time::Instant::now() + self.body_timeout;
        let req = req.map(|b| {
            Body::new(Deadline {
                body: b,
                sleep: Box::pin(tokio::time::sleep_until(deadline)),
                expired: expired.clone(),
            })
        });
        let router = self.router.clone();
        Box::pin(async move {
            let resp = match router.oneshot(req).await {
                Ok(r) => r,
                Err(e) => match e {},
            };
            let mut resp = if expired.load(Ordering::SeqCst) {
                body_timeout_response()
            } else {
                resp
            };
            if expired.load(Ordering::SeqCst) {
                resp.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            Ok(resp.map(|b| {
                Body::new(InFlightBody {
                    body: b,
                    _flight: flight,
                })
            }))
        })
    }
}

fn body_timeout_response() -> Response<Body> {
    (
        StatusCode::REQUEST_TIMEOUT,
        axum::Json(serde_json::json!({
            "code": "request_timeout",
            "message": "the request body did not arrive within server.bodyReadTimeoutSecs; the connection is closed",
        })),
    )
        .into_response()
}

/// A request body that fails once its deadline passes (and says so through `expired`).
struct Deadline {
    body: Incoming,
    sleep: Pin<Box<tokio::time::Sleep>>,
    expired: Arc<AtomicBool>,
}

impl http_body::Body for Deadline {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::BoxError>>> {
        if let Poll::Ready(r) = Pin::new(&mut self.body).poll_frame(cx) {
            return Poll::Ready(r.map(|f| f.map_err(Into::into)));
        }
        if self.sleep.as_mut().poll(cx).is_ready() {
            self.expired.store(true, Ordering::SeqCst);
            return Poll::Ready(Some(Err("the request body did not arrive in time".into())));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        http_body::Body::is_end_stream(&self.body)
    }

    fn size_hint(&self) -> SizeHint {
        http_body::Body::size_hint(&self.body)
    }
}

/// A response body that keeps its request in flight until it ends or is dropped.
struct InFlightBody {
    body: Body,
    _flight: Flight,
}

impl http_body::Body for InFlightBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        http_body::Body::is_end_stream(&self.body)
    }

    fn size_hint(&self) -> SizeHint {
        http_body::Body::size_hint(&self.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_cap_the_longest_idle_connection_goes_and_busy_ones_stay() {
        let conns = Conns::default();
        let (a, ca) = conns.admit(2).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        let (_b, cb) = conns.admit(2).unwrap();
        let fa = ca.begin();
        // a is busy: b (idle) goes.
        let (_c, cc) = conns.admit(2).unwrap();
        assert!(cb.kill.is_cancelled());
        assert!(!ca.kill.is_cancelled());
        let _fc = cc.begin();
        assert!(
            conns.admit(2).is_none(),
            "admitted past the cap with every connection busy"
        );
        drop(fa);
        let (_d, _) = conns.admit(2).unwrap();
        assert!(ca.kill.is_cancelled(), "the idle one was not closed");
        conns.remove(a);
        assert_eq!(conns.lock().len(), 2);
    }
}
