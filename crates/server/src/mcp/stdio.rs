//! The stdio transport: one MCP session over this process's stdin/stdout (how Codex CLI
//! and Claude Code spawn `codex-free serve --stdio`).
//!
//! When stdin and stdout are pipes (as every MCP client spawns us), both are driven by the
//! runtime's reactor (`tokio::net::unix::pipe`, non-blocking, polled with epoll on the worker
//! that serves the session), not by tokio's `Stdin`/`Stdout`, which hand every read and
//! write to a blocking-pool thread: that hand-off was a third of the server's CPU per tool
//! call (profiled: futex waits and task switches). A terminal, file or socket falls back to
//! rmcp's standard stdio transport.
//!
//! A message longer than [`MAX_MESSAGE_BYTES`] is not buffered: [`OversizeFilter`] cuts
//! it off, and the client gets a JSON-RPC error (`-32600`, with the message's `id` when it
//! could be read, else `null`) instead of waiting forever for an answer; the session goes
//! on with the next line.
//!
//! Invariant: nothing else writes to stdout while this runs (logs go to stderr).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use rmcp::RoleServer;
use rmcp::ServiceExt;
use rmcp::model::{ErrorData, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

use crate::mcp::CodexFree;
use codex_free_core::Error;
use codex_free_core::Result;

/// Longest message (one line) read over stdio: 16 MiB, rmcp's own line cap (and the
/// streamable HTTP client's largest event), so what fits over HTTP fits here.
pub const MAX_MESSAGE_BYTES: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// Serve one session on stdin/stdout until the client closes it.
/// Errors: the transport failed to initialise ([`Error::Io`]).
pub async fn serve(server: CodexFree) -> Result<()> {
    server
        .shared()
        .inline_reads
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let started = match pipes() {
        Some((rx, tx)) => server.serve(guarded(rx, tx)).await,
        None => {
            let (rx, tx) = rmcp::transport::stdio();
            server.serve(guarded(rx, tx)).await
        }
    };
    let running = started.map_err(|e| {
        Error::io(
            "starting the stdio MCP session",
            std::io::Error::other(e.to_string()),
        )
    })?;
    running.waiting().await.map_err(|e| {
        Error::io(
            "running the stdio MCP session",
            std::io::Error::other(e.to_string()),
        )
    })?;
    Ok(())
}

/// Stdin and stdout as reactor-driven pipe ends, when both are FIFOs. `None` otherwise (or
/// when registering them fails), and the caller uses the blocking-pool transport.
#[cfg(unix)]
fn pipes() -> Option<(
    tokio::net::unix::pipe::Receiver,
    tokio::net::unix::pipe::Sender,
)> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileTypeExt;
    let dup = |fd: std::os::fd::BorrowedFd<'_>| -> Option<std::fs::File> {
        let owned = fd.try_clone_to_owned().ok()?;
        let file = std::fs::File::from(owned);
        file.metadata()
            .ok()
            .filter(|m| m.file_type().is_fifo())
            .map(|_| file)
    };
    let stdin = dup(std::io::stdin().as_fd())?;
    let stdout = dup(std::io::stdout().as_fd())?;
    let rx = tokio::net::unix::pipe::Receiver::from_file(stdin)
        .inspect_err(|e| tracing::debug!("stdin not polled by the reactor: {e}"))
        .ok()?;
    let tx = tokio::net::unix::pipe::Sender::from_file(stdout)
        .inspect_err(|e| tracing::debug!("stdout not polled by the reactor: {e}"))
        .ok()?;
    Some((rx, tx))
}

#[cfg(not(unix))]
fn pipes() -> Option<(tokio::io::Stdin, tokio::io::Stdout)> {
    None
}

/// The stdio transport over `rx`/`tx` with oversize messages answered (module doc).
pub fn guarded<R, W>(rx: R, tx: W) -> impl Transport<RoleServer, Error = std::io::Error> + 'static
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let notices = Arc::new(Notices::default());
    // rmcp's cap sits just above ours: the cut line with its two closing bytes reaches it
    // whole and is dropped as unparsable, never as "oversized".
    let inner = AsyncRwTransport::new_server(OversizeFilter::new(rx, notices.clone()), tx)
        .with_max_line_length(MAX_MESSAGE_BYTES + 2);
    Guarded { inner, notices }
}

/// Oversize messages seen by the reader and not answered yet: the `id` of each, if read.
#[derive(Default)]
struct Notices {
    queue: Mutex<VecDeque<Option<RequestId>>>,
    notify: Notify,
}

impl Notices {
    fn push(&self, id: Option<RequestId>) {
        self.queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(id);
        self.notify.notify_one();
    }

    fn pop(&self) -> Option<Option<RequestId>> {
        self.queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front()
    }
}

/// The JSON-RPC error sent for an oversize message.
fn oversize_error(id: Option<RequestId>) -> TxJsonRpcMessage<RoleServer> {
    TxJsonRpcMessage::<RoleServer>::error(
        ErrorData::invalid_request(
            format!(
                "message too large: over {} MiB, the most one MCP message over stdio may hold; it was not read (send smaller arguments, e.g. write a large file in parts)",
                MAX_MESSAGE_BYTES >> 20
            ),
            None,
        ),
        id,
    )
}

/// rmcp's stdio transport plus the answers to oversize messages, sent before the next
/// message is handed on (so answers keep the order of the requests).
struct Guarded<T> {
    inner: T,
    notices: Arc<Notices>,
}

impl<T: Transport<RoleServer>> Guarded<T> {
    async fn answer_oversize(&mut self) {
        while let Some(id) = self.notices.pop() {
            if let Err(e) = self.inner.send(oversize_error(id)).await {
                tracing::warn!("answering an oversize message: {e}");
            }
        }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Guarded<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = std::result::Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            self.answer_oversize().await;
            // rmcp's read is cancel-safe (a partial line stays buffered for the next call).
            let msg = tokio::select! {
                m = self.inner.receive() => m,
                _ = self.notices.notify.notified() => continue,
            };
            self.answer_oversize().await;
            return msg;
        }
    }

    async fn close(&mut self) -> std::result::Result<(), Self::Error> {
        self.inner.close().await
    }
}

/// Reads stdin for rmcp and cuts off any line longer than [`MAX_MESSAGE_BYTES`]: the part
/// already passed on is ended with `\0\n` (unparsable, so rmcp drops it), the rest of the
/// line is skipped, and its `id` (read by [`IdScanner`] over the whole line) is queued for
/// the error answer.
pub struct OversizeFilter<R> {
    inner: R,
    notices: Arc<Notices>,
    limit: usize,
    /// Bytes of the current line passed on so far.
    line_len: usize,
    /// The current line is over the limit: skipping to its end.
    skipping: bool,
    scan: IdScanner,
    /// Bytes read from `inner`, processed into `out`.
    chunk: Vec<u8>,
    /// Bytes ready for the reader.
    out: VecDeque<u8>,
    eof: bool,
}

impl<R> OversizeFilter<R> {
    fn new(inner: R, notices: Arc<Notices>) -> Self {
        Self::with_limit(inner, notices, MAX_MESSAGE_BYTES)
    }

    fn with_limit(inner: R, notices: Arc<Notices>, limit: usize) -> Self {
        Self {
            inner,
            notices,
            limit,
            line_len: 0,
            skipping: false,
            scan: IdScanner::default(),
            chunk: vec![0; 64 << 10],
            out: VecDeque::new(),
            eof: false,
        }
    }

    /// Pass `data` on (into `out`), cutting lines over the limit.
    fn process(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let nl = data.iter().position(|b| *b == b'\n');
            let seg = &data[..nl.unwrap_or(data.len())];
            self.scan.feed(seg);
            if !self.skipping {
                let room = self.limit - self.line_len;
                if seg.len() <= room {
                    self.out.extend(seg);
                    self.line_len += seg.len();
                } else {
                    self.out.extend(&seg[..room]);
                    self.out.extend(b"\0\n");
                    self.skipping = true;
                }
            }
            match nl {
                Some(i) => {
                    self.end_line();
                    data = &data[i + 1..];
                }
                None => data = &[],
            }
        }
    }

    fn end_line(&mut self) {
        if self.skipping {
            self.notices.push(self.scan.id());
        } else {
            self.out.push_back(b'\n');
        }
        self.skipping = false;
        self.line_len = 0;
        self.scan = IdScanner::default();
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for OversizeFilter<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let me = &mut *self;
        while me.out.is_empty() && !me.eof {
            let mut chunk = std::mem::take(&mut me.chunk);
            let mut rb = ReadBuf::new(&mut chunk);
            let polled = Pin::new(&mut me.inner).poll_read(cx, &mut rb);
            let n = rb.filled().len();
            match polled {
                Poll::Ready(Ok(())) if n == 0 => {
                    me.eof = true;
                    if me.skipping {
                        // The client closed inside an oversize line: answer it anyway.
                        me.notices.push(me.scan.id());
                        me.skipping = false;
                    }
                }
                Poll::Ready(Ok(())) => me.process(&chunk[..n]),
                Poll::Ready(Err(e)) => {
                    me.chunk = chunk;
                    return Poll::Ready(Err(e));
                }
                Poll::Pending => {
                    me.chunk = chunk;
                    return Poll::Pending;
                }
            }
            me.chunk = chunk;
        }
        let n = buf.remaining().min(me.out.len());
        let (a, b) = me.out.as_slices();
        let from_a = n.min(a.len());
        buf.put_slice(&a[..from_a]);
        buf.put_slice(&b[..n - from_a]);
        me.out.drain(..n);
        Poll::Ready(Ok(()))
    }
}

/// Finds the top-level `"id"` of one JSON-RPC message while its bytes stream past, wherever
/// in the object it stands, without keeping the message: a small state machine over
/// nesting, strings and escapes that captures at most 256 bytes of the id's value.
#[derive(Default)]
pub struct IdScanner {
    depth: i32,
    in_string: bool,
    escape: bool,
    /// At depth 1 of an object, the next string is a key.
    expect_key: bool,
    /// Inside a depth-1 key: its bytes so far (only "id" matters, so at most 3 are kept).
    key: Option<Vec<u8>>,
    key_is_id: bool,
    /// Capturing the id's value.
    value: Option<Vec<u8>>,
    /// The id's raw value, once complete (or `Some(empty)` when it was too long).
    found: Option<Vec<u8>>,
}

impl IdScanner {
    /// Feed the next bytes of the line.
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.found.is_some() {
                return;
            }
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        if self.in_string {
            // Three bytes tell "id" from any longer key.
            if let Some(k) = &mut self.key
                && !(self.escape || b == b'"')
                && k.len() < 3
            {
                k.push(b);
            }
            if let Some(v) = &mut self.value {
                v.push(b);
            }
            if self.escape {
                self.escape = false;
            } else if b == b'\\' {
                self.escape = true;
            } else if b == b'"' {
                self.in_string = false;
                if let Some(k) = self.key.take() {
                    self.key_is_id = k == b"id";
                }
            }
            self.cap_value();
            return;
        }
        if let Some(v) = &mut self.value {
            match b {
                b',' | b'}' if self.depth == 1 => {
                    self.found = self.value.take();
                    return;
                }
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => self.depth -= 1,
                b'"' => self.in_string = true,
                _ => {}
            }
            v.push(b);
            self.cap_value();
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.key = Some(Vec::new());
                    self.expect_key = false;
                }
            }
            b'{' => {
                self.depth += 1;
                self.expect_key = self.depth == 1;
            }
            b'[' => self.depth += 1,
            b'}' | b']' => self.depth -= 1,
            b',' if self.depth == 1 => {
                self.expect_key = true;
                self.key_is_id = false;
            }
            b':' if self.depth == 1 => {
                if self.key_is_id {
                    self.value = Some(Vec::new());
                }
                self.key_is_id = false;
            }
            _ => {}
        }
    }

    fn cap_value(&mut self) {
        if self.value.as_ref().is_some_and(|v| v.len() > 256) {
            self.value = None;
            self.found = Some(Vec::new());
        }
    }

    /// The id, when the line so far held a complete top-level `"id"` that is a number or
    /// a string.
    pub fn id(&self) -> Option<RequestId> {
        let raw = self.found.as_ref()?;
        serde_json::from_slice(raw.trim_ascii()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn id_of(line: &str) -> Option<RequestId> {
        let mut s = IdScanner::default();
        // Byte by byte and in one go give the same answer.
        for b in line.as_bytes() {
            s.feed(std::slice::from_ref(b));
        }
        let mut t = IdScanner::default();
        t.feed(line.as_bytes());
        assert_eq!(format!("{:?}", s.id()), format!("{:?}", t.id()));
        s.id()
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_stands() {
        let n = |i| Some(RequestId::Number(i));
        assert_eq!(
            id_of(r#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"#),
            n(7)
        );
        assert_eq!(
            id_of(r#"{"method":"x","params":{"id":1,"a":"\"id\":2","b":[{"id":3}]},"id" : 42 }"#),
            n(42)
        );
        assert_eq!(
            id_of(r#"{"jsonrpc":"2.0","id":"a,b}\"c","method":"#),
            Some(RequestId::String("a,b}\"c".into()))
        );
        assert_eq!(
            id_of(r#"{"params":{"content":"xxxxxxxx"#),
            None,
            "not read yet"
        );
        assert_eq!(id_of(r#"{"idx":1,"ids":2,"i":3}"#), None);
        assert_eq!(id_of(r#"[{"id":1}]"#), None, "a batch has no single id");
        let long = format!(r#"{{"id":"{}"}}"#, "x".repeat(300));
        assert_eq!(id_of(&long), None);
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_cut_and_queued_and_the_next_passes() {
        let input = format!(
            "{{\"id\":1}}\n{{\"a\":\"{}\",\"id\":2}}\n{{\"id\":3}}\n{{\"b\":\"{}",
            "x".repeat(100),
            "y".repeat(100)
        );
        let notices = Arc::new(Notices::default());
        let mut f = OversizeFilter::with_limit(input.as_bytes(), notices.clone(), 32);
        let mut out = Vec::new();
        f.read_to_end(&mut out).await.unwrap();
        let out = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = out.split('\n').collect();
        assert_eq!(lines[0], "{\"id\":1}");
        assert_eq!(
            lines[1].len(),
            33,
            "cut at the limit, then \\0: {:?}",
            lines[1]
        );
        assert!(lines[1].ends_with('\0'));
        assert_eq!(lines[2], "{\"id\":3}");
        assert_eq!(notices.pop(), Some(Some(RequestId::Number(2))));
        assert_eq!(notices.pop(), Some(None), "the unterminated one at EOF");
        assert_eq!(notices.pop(), None);
    }
}
