//! The one CSV cell writer of the `/api/*.csv` exports: RFC 4180 quoting, and a leading
//! formula character neutralised, because these files are opened in spreadsheets and a
//! cell holds text from outside (project paths, model names, a provider's error message).

/// `s` as one CSV cell: a value starting with `=`, `+`, `-`, `@`, a tab or a carriage
/// return (what spreadsheets read as a formula) gets a leading `'`; a value holding a
/// comma, quote or line break is quoted with its quotes doubled.
pub fn cell(s: &str) -> String {
    let s = if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{s}")
    } else {
        s.to_string()
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::cell;

    #[test]
    fn quotes_and_neutralises_formulas() {
        assert_eq!(cell("plain"), "plain");
        assert_eq!(cell("a,b"), "\"a,b\"");
        assert_eq!(cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(cell("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(cell("+1"), "'+1");
        assert_eq!(cell("-2"), "'-2");
        assert_eq!(cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(cell("\tx"), "'\tx");
    }
}
