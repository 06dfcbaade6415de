//! Following continuation footers in tests: split a page into its content and the next
//! call, using the one footer parser ([`codex_free_core::paging::parse_footer`]) so tests
//! read footers exactly as a client would.

pub use codex_free_core::paging::{Continuation, parse_footer};

/// A page's content (footer and, for byte pages, its separator newline removed) and its
/// continuation; the whole page and `None` on the last page.
pub fn split_page(page: &str) -> (&str, Option<Continuation>) {
    match parse_footer(page) {
        Some(c) => (&page[..c.content_end], Some(c)),
        None => (page, None),
    }
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
