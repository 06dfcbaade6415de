//! One command's output stream: every byte goes to a spool file (up to
//! `exec.maxSpoolBytes`), and only a bounded head and tail of the bytes not yet returned
//! stay in memory (the *window*). A tool response shows the window's head and tail cut to
//! the caller's budget; the bytes in between are read back from the spool with
//! `read_command_output`.
//!
//! Offsets are byte offsets into the stream, 0-based; ranges are written `a-b` and mean
//! bytes `a` up to but not including `b`.
//!
//! Invariant: memory per stream is at most the window capacity (the tool-output ceiling in
//! bytes) plus one 64 KiB read buffer, whatever the output size; spooled bytes are exactly
//! the stream's first `spooled` bytes.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Write};
#[cfg(unix)]
use std::os::unix::fs::{FileExt, OpenOptionsExt};
#[cfg(windows)]
use std::os::windows::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use codex_free_core::Result;
use codex_free_core::error::IoContext;

/// Read size of the pipe reader thread, in bytes.
const READ_CHUNK: usize = 64 * 1024;

/// The head and tail of a byte range whose middle may have been dropped (after Codex's
/// head/tail buffer: the first `head_cap` bytes are kept, then a rolling `tail_cap` suffix).
#[derive(Debug, Default)]
pub(crate) struct HeadTail {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
}

impl HeadTail {
    pub(crate) fn new(capacity: usize) -> Self {
        let head_cap = capacity / 2;
        Self {
            head_cap,
            tail_cap: capacity - head_cap,
            head: Vec::new(),
            tail: VecDeque::new(),
        }
    }

    pub(crate) fn push(&mut self, mut chunk: &[u8]) {
        let room = self
            .head_cap
            .saturating_sub(self.head.len())
            .min(chunk.len());
        self.head.extend_from_slice(&chunk[..room]);
        chunk = &chunk[room..];
        if chunk.is_empty() {
            return;
        }
        if chunk.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&chunk[chunk.len() - self.tail_cap..]);
        } else {
            let excess = (self.tail.len() + chunk.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..excess);
            self.tail.extend(chunk);
        }
    }

    fn take(&mut self) -> (Vec<u8>, Vec<u8>) {
        let head = std::mem::take(&mut self.head);
        let tail: Vec<u8> = self.tail.drain(..).collect();
        self.tail.shrink_to(self.tail_cap);
        (head, tail)
    }
}

/// The bytes of a stream not yet returned, as taken by [`Output::take_window`].
#[derive(Debug)]
pub(crate) struct Window {
    /// Stream offset of the first byte of the window.
    pub from: u64,
    /// Stream offset one past the last byte (the stream's total so far).
    pub to: u64,
    /// Bytes `from .. from + head.len()`.
    pub head: Vec<u8>,
    /// Bytes `to - tail.len() .. to`.
    pub tail: Vec<u8>,
}

#[derive(Debug)]
struct State {
    /// Bytes read from the child so far.
    total: u64,
    /// Bytes written to the spool file (always the first `spooled` bytes of the stream).
    spooled: u64,
    /// Why spooling stopped early, if it did (cap reached or write error).
    spool_stop: Option<String>,
    /// EOF seen on the pipe.
    closed: bool,
    /// Start of the window (bytes before it were returned already).
    cursor: u64,
    window: HeadTail,
    /// A response or page of this stream was ever cut (so the spool is needed).
    cut: bool,
}

/// One command's output: spool file plus window. Shared by the reader thread and tool calls.
#[derive(Debug)]
pub(crate) struct Output {
    /// Public id used by `read_command_output` (lower-case hex).
    pub id: String,
    /// The spool file `<home>/spool/<id>.out`.
    pub path: PathBuf,
    /// `exec.maxSpoolBytes` at spawn time.
    pub cap: u64,
    /// A poisoned lock is recovered (`into_inner`): the buffer stays readable after a panic.
    state: Mutex<State>,
    closed_tx: watch::Sender<bool>,
}

/// Snapshot of a stream's progress.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Progress {
    pub total: u64,
    pub spooled: u64,
    pub closed: bool,
}

impl Output {
    /// Create the spool file (mode 0600, never overwriting) and the state; `window_cap` is
    /// the tool-output ceiling in bytes.
    pub(crate) fn create(spool_dir: &Path, cap: u64, window_cap: usize) -> Result<Arc<Output>> {
        std::fs::create_dir_all(spool_dir)
            .ctx(|| format!("creating spool directory {}", spool_dir.display()))?;
        let id = uuid::Uuid::new_v4().simple().to_string()[..16].to_string();
        let path = spool_dir.join(format!("{id}.out"));
        let mut open = std::fs::OpenOptions::new();
        #[cfg(unix)]
        open.mode(0o600);
        open.write(true)
            .create_new(true)
            .open(&path)
            .ctx(|| format!("creating spool file {}", path.display()))?;
        let (closed_tx, _) = watch::channel(false);
        Ok(Arc::new(Output {
            id,
            path,
            cap,
            state: Mutex::new(State {
                total: 0,
                spooled: 0,
                spool_stop: None,
                closed: false,
                cursor: 0,
                window: HeadTail::new(window_cap),
                cut: false,
            }),
            closed_tx,
        }))
    }

    /// Start the thread that copies `pipe` into the spool and the window until EOF.
    pub(crate) fn start_reader(
        self: &Arc<Self>,
        mut pipe: impl Read + Send + 'static,
    ) -> Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .ctx(|| format!("opening spool file {}", self.path.display()))?;
        let out = Arc::clone(self);
        std::thread::Builder::new()
            .name(format!("exec-out-{}", self.id))
            .spawn(move || {
                let mut buf = vec![0u8; READ_CHUNK];
                loop {
                    let n = match pipe.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(e) => {
                            tracing::warn!(output = %out.id, "reading command output failed: {e}");
                            break;
                        }
                    };
                    out.append(&mut file, &buf[..n]);
                }
                out.state.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
                out.closed_tx.send_replace(true);
            })
            .ctx(|| "starting the output reader thread".into())?;
        Ok(())
    }

    fn append(&self, file: &mut File, chunk: &[u8]) {
        let (spooled, stopped) = {
            let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            (st.spooled, st.spool_stop.is_some())
        };
        let mut written = 0usize;
        let mut stop = None;
        if !stopped {
            let room = self.cap.saturating_sub(spooled).min(chunk.len() as u64) as usize;
            if room > 0 {
                match file.write_all(&chunk[..room]) {
                    Ok(()) => written = room,
                    Err(e) => stop = Some(format!("writing the spool file failed: {e}")),
                }
            }
            if stop.is_none() && room < chunk.len() {
                stop = Some(format!("they went past exec.maxSpoolBytes = {}", self.cap));
            }
        }
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.total += chunk.len() as u64;
        st.spooled += written as u64;
        if st.spool_stop.is_none() {
            st.spool_stop = stop;
        }
        st.window.push(chunk);
    }

    /// Take the bytes not yet returned and start a new, empty window at the current total.
    pub(crate) fn take_window(&self) -> Window {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (head, tail) = st.window.take();
        let w = Window {
            from: st.cursor,
            to: st.total,
            head,
            tail,
        };
        st.cursor = st.total;
        w
    }

    pub(crate) fn progress(&self) -> Progress {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        Progress {
            total: st.total,
            spooled: st.spooled,
            closed: st.closed,
        }
    }

    /// Why bytes past `spooled` are missing from the spool, if any are.
    pub(crate) fn spool_stop(&self) -> Option<String> {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .spool_stop
            .clone()
    }

    pub(crate) fn was_cut(&self) -> bool {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).cut
    }

    /// Wait until EOF on the pipe or `timeout`, whichever comes first.
    pub(crate) async fn wait_closed(&self, timeout: std::time::Duration) {
        let mut rx = self.closed_tx.subscribe();
        let _ = tokio::time::timeout(timeout, rx.wait_for(|c| *c)).await;
    }

    /// Render `window` within `budget` bytes of text; see [`render_window`].
    pub(crate) fn render(&self, w: &Window, budget: usize) -> String {
        let p = self.progress();
        let (text, gap) =
            render_window(w, budget, &self.id, p.spooled, self.spool_stop().as_deref());
        if gap.is_some() {
            self.state.lock().unwrap_or_else(|e| e.into_inner()).cut = true;
        }
        text
    }

    /// Delete the spool file (missing is fine).
    pub(crate) fn remove_file(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Read up to `len` bytes at `offset` from `path`, never past `limit`.
pub(crate) fn read_at(path: &Path, offset: u64, len: usize, limit: u64) -> Result<Vec<u8>> {
    let f = File::open(path).ctx(|| format!("opening spool file {}", path.display()))?;
    let n = limit.saturating_sub(offset).min(len as u64) as usize;
    let mut buf = vec![0u8; n];
    let mut got = 0;
    while got < n {
        #[cfg(unix)]
        let r = f.read_at(&mut buf[got..], offset + got as u64);
        // (Windows: the same positioned read; it moves the cursor, which nothing here uses.)
        #[cfg(windows)]
        let r = f.seek_read(&mut buf[got..], offset + got as u64);
        let r = r.ctx(|| format!("reading spool file {}", path.display()))?;
        if r == 0 {
            break;
        }
        got += r;
    }
    buf.truncate(got);
    Ok(buf)
}

/// Text of a window within `budget` bytes, and when it was cut the omitted range
/// `(head end, tail start)` (`None`: shown whole). Uncut: the window's bytes as (lossy) UTF-8. Cut: the head, a
/// one-line marker ([`codex_free_core::paging::command_omitted_marker`], one `\n` before
/// and after it), the tail, one separator `\n` and as **last line** either the exact
/// `read_command_output` call that returns the omitted bytes or, when they were not spooled,
/// which bytes were dropped and why. The head ends and the tail starts at a line boundary
/// unless a line is longer than half the budget (the marker then says so).
pub(crate) fn render_window(
    w: &Window,
    budget: usize,
    id: &str,
    spooled: u64,
    spool_stop: Option<&str>,
) -> (String, Option<(u64, u64)>) {
    let n = w.to - w.from;
    let contiguous = (w.head.len() + w.tail.len()) as u64 == n;
    if contiguous {
        let mut all = w.head.clone();
        all.extend_from_slice(&w.tail);
        let (text, used) = lossy_prefix(&all, budget, true);
        if used == all.len() {
            return (text, None);
        }
        let (text, gap) = cut_text(w, &all, &all, budget, id, spooled, spool_stop);
        return (text, Some(gap));
    }
    let (text, gap) = cut_text(w, &w.head, &w.tail, budget, id, spooled, spool_stop);
    (text, Some(gap))
}

/// Cut `bytes` back to just after its last `\n` when it has one (the text re-rendered);
/// `split` is true when there is none, so the cut stays inside a line.
pub(crate) fn back_to_line_end(bytes: &[u8], text: String, used: usize) -> (String, usize, bool) {
    if used == 0 || bytes[used - 1] == b'\n' {
        return (text, used, false);
    }
    match bytes[..used].iter().rposition(|&c| c == b'\n') {
        Some(i) => (
            String::from_utf8_lossy(&bytes[..=i]).into_owned(),
            i + 1,
            false,
        ),
        None => (text, used, true),
    }
}

fn cut_text(
    w: &Window,
    head: &[u8],
    tail: &[u8],
    budget: usize,
    id: &str,
    spooled: u64,
    spool_stop: Option<&str>,
) -> (String, (u64, u64)) {
    use codex_free_core::paging::{command_omitted_marker, command_window_footer};
    let (head_text, head_used) = lossy_prefix(head, budget / 2, false);
    let (head_text, head_used, head_split) = back_to_line_end(head, head_text, head_used);
    let (mut tail_text, mut tail_used) = lossy_suffix(tail, budget.saturating_sub(head_text.len()));
    // Start the tail at a line start: after a `\n` just before it, or after its first one.
    let before_is_nl = tail_used < tail.len() && tail[tail.len() - tail_used - 1] == b'\n';
    let mut tail_split = false;
    if !before_is_nl && tail_used < tail.len() {
        let shown = &tail[tail.len() - tail_used..];
        match shown.iter().position(|&c| c == b'\n') {
            Some(i) if i + 1 < shown.len() => {
                tail_used -= i + 1;
                tail_text = String::from_utf8_lossy(&tail[tail.len() - tail_used..]).into_owned();
            }
            _ => tail_split = true,
        }
    }
    let a = w.from + head_used as u64;
    let b = w.to - tail_used as u64;
    let mut s = String::with_capacity(budget + 400);
    s.push_str(&head_text);
    s.push('\n');
    s.push_str(&command_omitted_marker(a, b, head_split, tail_split));
    s.push('\n');
    s.push_str(&tail_text);
    let shown = format!("showing bytes {}-{a} and {b}-{} of {}", w.from, w.to, w.to);
    let line = if a < spooled.min(b) {
        let lost = if spooled < b {
            format!(
                "; bytes {spooled}-{b} were not spooled ({})",
                spool_stop.unwrap_or("spool stopped")
            )
        } else {
            format!("; the omitted bytes are {a}-{b}")
        };
        command_window_footer(&shown, &lost, id, a, b)
    } else {
        format!(
            "(output cut: {shown}; bytes {a}-{b} are lost: {} — rerun the command with less output, e.g. through head, tail or grep)",
            spool_stop.unwrap_or("they were not spooled")
        )
    };
    // One separator `\n` before the footer, always, as on every `read_command_output` page.
    s.push('\n');
    s.push_str(&line);
    (s, (a, b))
}

/// Longest prefix of `bytes` whose lossy UTF-8 rendering fits in `max` bytes: the text and
/// how many raw bytes it covers. A character is never split; invalid bytes become U+FFFD
/// (3 bytes each). When `at_end` is false, an incomplete character at the very end is left
/// for the next read instead of being replaced.
pub(crate) fn lossy_prefix(bytes: &[u8], max: usize, at_end: bool) -> (String, usize) {
    let mut out = String::new();
    let mut used = 0;
    for chunk in bytes.utf8_chunks() {
        let valid = chunk.valid();
        let take = floor_boundary(valid, max - out.len());
        out.push_str(&valid[..take]);
        used += take;
        if take < valid.len() {
            break;
        }
        let bad = chunk.invalid();
        if bad.is_empty() {
            continue;
        }
        let incomplete_at_end = used + bad.len() == bytes.len()
            && std::str::from_utf8(bad)
                .err()
                .is_some_and(|e| e.error_len().is_none());
        if (incomplete_at_end && !at_end) || out.len() + 3 > max {
            break;
        }
        out.push('\u{FFFD}');
        used += bad.len();
    }
    (out, used)
}

/// Longest suffix of `bytes` whose lossy rendering fits in `max` bytes, starting on a
/// character boundary: the text and how many raw bytes it covers.
pub(crate) fn lossy_suffix(bytes: &[u8], max: usize) -> (String, usize) {
    let mut start = bytes.len().saturating_sub(max);
    loop {
        let mut s = start;
        while s < bytes.len() && s < start + 3 && (bytes[s] & 0xC0) == 0x80 {
            s += 1;
        }
        let text = String::from_utf8_lossy(&bytes[s..]).into_owned();
        if text.len() <= max {
            return (text, bytes.len() - s);
        }
        start = (s + (text.len() - max).div_ceil(3).max(1)).min(bytes.len());
    }
}

fn floor_boundary(s: &str, max: usize) -> usize {
    if max >= s.len() {
        return s.len();
    }
    let mut i = max;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_tail_keeps_both_ends() {
        let mut ht = HeadTail::new(10);
        ht.push(b"0123456789abcdefghij");
        let (h, t) = ht.take();
        assert_eq!(h, b"01234");
        assert_eq!(t, b"fghij");
        let mut ht = HeadTail::new(10);
        for c in b"0123456789abcdefghij".chunks(3) {
            ht.push(c);
        }
        let (h, t) = ht.take();
        assert_eq!(h, b"01234");
        assert_eq!(t, b"fghij");
    }

    #[test]
    fn lossy_prefix_never_splits_a_char() {
        let s = "aé€😀".as_bytes(); // 1 + 2 + 3 + 4 bytes
        assert_eq!(lossy_prefix(s, 2, false), ("a".into(), 1));
        assert_eq!(lossy_prefix(s, 3, false), ("aé".into(), 3));
        assert_eq!(lossy_prefix(s, 9, false), ("aé€".into(), 6));
        assert_eq!(lossy_prefix(s, 100, false), ("aé€😀".into(), 10));
        // An incomplete char at the end waits for more bytes unless the stream ended.
        assert_eq!(lossy_prefix(&s[..8], 100, false), ("aé€".into(), 6));
        assert_eq!(lossy_prefix(&s[..8], 100, true), ("aé€\u{FFFD}".into(), 8));
        // Invalid bytes become U+FFFD and are counted.
        assert_eq!(
            lossy_prefix(b"a\xffb", 100, false),
            ("a\u{FFFD}b".into(), 3)
        );
        assert_eq!(
            lossy_prefix(b"a\xff\xffb", 4, false),
            ("a\u{FFFD}".into(), 2)
        );
    }

    #[test]
    fn lossy_prefix_pages_cover_everything_once() {
        let text: String = (0..5000)
            .map(|i| ["a", "é", "€", "😀", "\n"][i % 5])
            .collect();
        let bytes = text.as_bytes();
        let mut off = 0;
        let mut back = String::new();
        while off < bytes.len() {
            let (t, used) = lossy_prefix(
                &bytes[off..(off + 37).min(bytes.len())],
                37,
                off + 37 >= bytes.len(),
            );
            assert!(t.len() <= 37 && used > 0);
            back.push_str(&t);
            off += used;
        }
        assert_eq!(back, text);
    }

    #[test]
    fn lossy_suffix_starts_on_a_boundary() {
        let s = "aé€😀".as_bytes();
        assert_eq!(lossy_suffix(s, 4), ("😀".into(), 4));
        assert_eq!(lossy_suffix(s, 6), ("😀".into(), 4));
        assert_eq!(lossy_suffix(s, 7), ("€😀".into(), 7));
        assert_eq!(
            lossy_suffix(b"\xff\xff\xff\xff", 6),
            ("\u{FFFD}\u{FFFD}".into(), 2)
        );
    }

    /// Head and tail are cut at line ends when lines are short.
    #[test]
    fn render_cuts_at_line_ends() {
        let data: Vec<u8> = (0..200)
            .flat_map(|i| format!("{i:03}\n").into_bytes())
            .collect();
        let w = Window {
            from: 0,
            to: data.len() as u64,
            head: data.clone(),
            tail: vec![],
        };
        let (text, gap) = render_window(&w, 102, "abc", data.len() as u64, None);
        let (head, rest) = text.split_once("\n[… bytes ").unwrap();
        assert_eq!(
            head,
            "000\n001\n002\n003\n004\n005\n006\n007\n008\n009\n010\n011\n"
        );
        let tail = rest.split_once("…]\n").unwrap().1;
        let tail = tail.rsplit_once("\n(output cut").unwrap().0;
        assert!(
            tail.starts_with("187\n") && tail.ends_with("199\n"),
            "{tail}"
        );
        assert_eq!(gap, Some((12 * 4, 187 * 4)));
    }

    #[test]
    fn render_small_window_is_whole() {
        let w = Window {
            from: 0,
            to: 5,
            head: b"hello".to_vec(),
            tail: vec![],
        };
        assert_eq!(
            render_window(&w, 100, "ab", 5, None),
            ("hello".into(), None)
        );
    }

    #[test]
    fn render_cut_window_names_the_continuation() {
        let data: Vec<u8> = (0..1000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let mut ht = HeadTail::new(200);
        ht.push(&data);
        let (head, tail) = ht.take();
        let w = Window {
            from: 0,
            to: 1000,
            head,
            tail,
        };
        let (text, gap) = render_window(&w, 100, "abc", 1000, None);
        assert_eq!(gap, Some((50, 950)));
        let last = text.lines().last().unwrap();
        assert_eq!(
            last,
            "(output cut: showing bytes 0-50 and 950-1000 of 1000; the omitted bytes are 50-950 — call read_command_output with output_id=abc offset=50 end=950 for the rest)"
        );
        assert!(text.starts_with(std::str::from_utf8(&data[..50]).unwrap()));
        assert!(
            text.contains("\n[… bytes 50-950 omitted; the head ends inside a line; the tail starts inside a line; read_command_output returns them …]\n"),
            "{text}"
        );
        // Nothing spooled past the head: the line says the bytes are lost, never silently.
        let (text, _) = render_window(
            &w,
            100,
            "abc",
            40,
            Some("they went past exec.maxSpoolBytes = 40"),
        );
        assert!(
            text.lines()
                .last()
                .unwrap()
                .contains("bytes 50-950 are lost: they went past exec.maxSpoolBytes = 40"),
            "{text}"
        );
        let (text, _) = render_window(
            &w,
            100,
            "abc",
            600,
            Some("they went past exec.maxSpoolBytes = 600"),
        );
        assert!(
            text.lines()
                .last()
                .unwrap()
                .contains("bytes 600-950 were not spooled"),
            "{text}"
        );
    }
}
