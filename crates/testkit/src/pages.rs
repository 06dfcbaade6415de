//! Following continuation footers in tests: split a page into its content and the next
//! call, using the one footer parser ([`codex_free_core::paging::parse_footer`]) so tests
//! read footers exactly as a client would.

pub use codex_free_core::paging::{Continuation, parse_footer};

/// A page's content (footer and, for byte pages, its separator newline removed) and its
/// continuation; on the last page `None` and the whole page, or the page without a final
/// line that is not content (the end of a command's omitted bytes, unspooled bytes).
pub fn split_page(page: &str) -> (&str, Option<Continuation>) {
    match parse_footer(page) {
        Some(c) => (&page[..c.content_end], Some(c)),
        None => match codex_free_core::paging::final_line_start(page) {
            Some(start) => (&page[..start.saturating_sub(1)], None),
            None => (page, None),
        },
    }
}

/// The body of an `exec_command` / `write_stdin` reply: everything after its `Output:` line.
pub fn exec_body(reply: &str) -> &str {
    reply
        .split_once("\nOutput:\n")
        .map(|(_, b)| b)
        .expect("an exec reply has an Output: line")
}

/// The whole output of a command from its `exec_command` reply, following every
/// continuation with `read` (called with the continuation, returns the next
/// `read_command_output` page): the head, the omitted bytes page by page, then the tail the
/// reply showed. Returns the output and every page read. Panics when a continuation does not
/// advance or paging does not end within `max_pages`.
pub fn follow_exec(
    reply: &str,
    max_pages: usize,
    mut read: impl FnMut(&Continuation) -> String,
) -> (String, Vec<String>) {
    let body = exec_body(reply);
    let Some(first) = parse_footer(body) else {
        let (content, _) = split_page(body);
        return (content.to_string(), Vec::new());
    };
    let content = &body[..first.content_end];
    // `showing bytes F-A and B-T of T`: the marker between head and tail names A-B.
    let desc = body[first.content_end..].trim_start_matches('\n');
    let b: u64 = desc
        .split(" and ")
        .nth(1)
        .and_then(|r| r.split('-').next())
        .and_then(|n| n.parse().ok())
        .expect("a cut reply names its shown tail");
    let a = first.offset().expect("a cut reply names an offset");
    let (head, tail) = codex_free_core::paging::split_head_tail(content, a, b)
        .expect("a cut reply has its omitted-bytes marker");
    let mut out = head.to_string();
    let pages = follow(max_pages, |c| read(c.unwrap_or(&first)));
    // `follow` called `read` with the reply's own continuation first.
    for p in &pages {
        out.push_str(split_page(p).0);
    }
    out.push_str(tail);
    (out, pages)
}

/// Call `next` with `None` for the first page and then with each page's continuation until
/// a page has none; returns every page as returned. Panics after `max_pages` pages (paging
/// that does not end is a bug) or when a continuation does not move forward.
pub fn follow(
    max_pages: usize,
    mut next: impl FnMut(Option<&Continuation>) -> String,
) -> Vec<String> {
    let mut pages = Vec::new();
    let mut cont: Option<Continuation> = None;
    loop {
        assert!(
            pages.len() < max_pages,
            "paging did not end within {max_pages} pages"
        );
        let page = next(cont.as_ref());
        let c = parse_footer(&page);
        if let (Some(prev), Some(now)) = (&cont, &c) {
            let key = |c: &Continuation| (c.offset(), c.byte_offset());
            assert!(
                key(now) > key(prev),
                "continuation does not advance: {now:?} after {prev:?}"
            );
        }
        pages.push(page);
        match c {
            Some(c) => cont = Some(c),
            None => return pages,
        }
    }
}

/// The content of every page of [`follow`], concatenated: the whole text when the pages
/// cover it exactly once.
pub fn follow_content(
    max_pages: usize,
    next: impl FnMut(Option<&Continuation>) -> String,
) -> (String, usize) {
    let pages = follow(max_pages, next);
    let n = pages.len();
    let text = pages.iter().map(|p| split_page(p).0).collect();
    (text, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_line_and_byte_pages() {
        let pages = [
            format!(
                "a\nb\n{}",
                codex_free_core::paging::lines_footer(1, 2, 3, 2)
            ),
            format!(
                "cc{}",
                "\n(showing bytes 0-2 of 4 of line 3 — call again with offset=2 byte_offset=2 for the rest)"
            ),
            "dd\n".to_string(),
        ];
        let mut i = 0;
        let (text, n) = follow_content(10, |c| {
            match i {
                0 => assert!(c.is_none()),
                1 => assert_eq!(c.unwrap().offset(), Some(2)),
                _ => assert_eq!(c.unwrap().byte_offset(), Some(2)),
            }
            i += 1;
            pages[i - 1].clone()
        });
        assert_eq!((text.as_str(), n), ("a\nb\nccdd\n", 3));
    }
}
