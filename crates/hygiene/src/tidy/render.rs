//! The plan and the apply report as text, and the units a file keeps or sends out, byte for
//! byte under their headings.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use super::classify::Decided;
use super::{Applied, Dest, ModelReport, Plan, TOPICS_DIR};
use crate::units::UnitKind;
use crate::{ARCHIVE_DIR, DAILY_DIR, VERIFY_HEADING};
use codex_free_memory::folder::MEMORY_MD;

impl Plan {
    /// The plan as text: one line per unit (`file:line -> destination [reason] text`), then
    /// the merges, topic files, checks added, files written, projected sizes and blockers.
    pub fn render(&self) -> String {
        let mut s = String::new();
        for m in &self.moves {
            let archive = self.archive_name(&m.file);
            let to = match &m.dest {
                Dest::Stay => "stays".to_string(),
                Dest::Daily { date } => format!("-> {DAILY_DIR}/{date}.md"),
                Dest::Archive { check: None } => format!("-> {archive}"),
                Dest::Archive { check: Some(t) } => format!(
                    "-> {archive} + verify at task start: {}",
                    t.check().trim_start_matches("- ")
                ),
                Dest::Duplicate { kept_at } => {
                    format!("dropped: identical to line {kept_at}, which is kept")
                }
                Dest::Merged { into } => {
                    format!("merged into the rule at line {into}; original -> {archive}")
                }
                Dest::Topic { file } => format!("-> {file} (on demand, indexed from {MEMORY_MD})"),
            };
            let span = if m.lines > 1 {
                format!("{}-{}", m.line, m.line + m.lines - 1)
            } else {
                m.line.to_string()
            };
            let _ = writeln!(
                s,
                "{}:{span}: {to}  [{}]  {}",
                m.file,
                m.reason,
                clip(&m.text, 100)
            );
        }
        let count = |f: &dyn Fn(&Dest) -> bool| {
            self.moves
                .iter()
                .filter(|m| f(&m.dest))
                .map(|m| m.lines)
                .sum::<usize>()
        };
        let _ = writeln!(
            s,
            "\nLines: {} stay, {} to {DAILY_DIR}/, {} to {ARCHIVE_DIR}/ ({} as stale facts replaced by checks), {} exact duplicates dropped, {} merged, {} to {TOPICS_DIR}/.",
            count(&|d| *d == Dest::Stay),
            count(&|d| matches!(d, Dest::Daily { .. })),
            count(&|d| matches!(d, Dest::Archive { .. })),
            count(&|d| matches!(d, Dest::Archive { check: Some(_) })),
            count(&|d| matches!(d, Dest::Duplicate { .. })),
            count(&|d| matches!(d, Dest::Merged { .. })),
            count(&|d| matches!(d, Dest::Topic { .. })),
        );
        for m in &self.merged {
            let _ = writeln!(
                s,
                "Merges lines {} into one rule: {}",
                m.from
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                m.text.trim()
            );
        }
        for t in &self.topics {
            let _ = writeln!(
                s,
                "Lays out `{}` ({} lines) into {} (loaded on demand, one index line in {MEMORY_MD}).",
                t.heading.trim(),
                t.lines,
                t.file
            );
        }
        for c in &self.checks_added {
            let _ = writeln!(s, "Adds to {MEMORY_MD} under `{VERIFY_HEADING}`: {c}");
        }
        for (k, v) in &self.outputs {
            if self.originals.get(k) == Some(v) {
                let _ = writeln!(s, "Would write: nothing to {k} (every unit of it stays)");
                continue;
            }
            let verb = if self.existing.contains(k) {
                "rewrites"
            } else {
                "creates"
            };
            let _ = writeln!(s, "Would write: {verb} {k} ({} lines)", v.lines().count());
        }
        let _ = writeln!(
            s,
            "Default-load layer: {} -> {} lines, {} -> {} bytes, {} -> {} tokens ({MEMORY_MD} {} -> {} lines, {} -> {} bytes).",
            self.before.memory_lines + self.before.summary_lines,
            self.after.memory_lines + self.after.summary_lines,
            self.before.memory_bytes + self.before.summary_bytes,
            self.after.memory_bytes + self.after.summary_bytes,
            self.before.tokens,
            self.after.tokens,
            self.before.memory_lines,
            self.after.memory_lines,
            self.before.memory_bytes,
            self.after.memory_bytes,
        );
        for p in &self.over_budget {
            let _ = writeln!(
                s,
                "Over budget after the move, so --apply would refuse: {p}"
            );
        }
        for b in &self.blockers {
            let _ = writeln!(s, "--apply would refuse: {b}");
        }
        if let Some(r) = &self.model {
            for l in r.lines() {
                let _ = writeln!(s, "{l}");
            }
        }
        s.push_str("Plan only: nothing was changed.\n");
        s
    }

    fn archive_name(&self, file: &str) -> String {
        let stem = file.trim_end_matches(".md");
        self.outputs
            .keys()
            .find(|k| k.starts_with(&format!("{ARCHIVE_DIR}/{stem}-")))
            .cloned()
            .unwrap_or_else(|| format!("{ARCHIVE_DIR}/{stem}-<date>.md"))
    }
}

pub(super) fn clip(s: &str, n: usize) -> String {
    let t = s.trim();
    if t.chars().count() <= n {
        t.to_string()
    } else {
        format!("{}…", t.chars().take(n).collect::<String>())
    }
}

/// Heading lines (exact, with endings) of the chain above unit `i` that `emitted` has not yet
/// written, in order.
fn heading_chain(ds: &[Decided], i: usize, emitted: &mut HashSet<usize>) -> String {
    let mut out = String::new();
    for p in &ds[i].parents {
        if emitted.insert(*p) {
            let l = &ds[*p].unit.lines[0];
            out.push_str(l);
            if !l.ends_with('\n') {
                out.push('\n');
            }
            out.push('\n');
        }
    }
    out
}

/// The text of every unit `pick` selects, each under its headings, byte for byte.
pub(super) fn render_out(ds: &[Decided], pick: &dyn Fn(&Dest) -> bool) -> String {
    let mut out = String::new();
    let mut emitted = HashSet::new();
    for (i, d) in ds.iter().enumerate() {
        if !pick(&d.dest) {
            continue;
        }
        let chain = heading_chain(ds, i, &mut emitted);
        if !chain.is_empty() && !out.is_empty() && !out.ends_with("\n\n") {
            out.push('\n');
        }
        out.push_str(&chain);
        if matches!(d.unit.kind, UnitKind::Heading(_)) {
            if !emitted.insert(i) {
                continue;
            }
            if !out.is_empty() && !out.ends_with("\n\n") {
                out.push('\n');
            }
        }
        out.push_str(&d.unit.text());
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// The part of a file that stays, with merged rules in place of their groups.
pub(super) fn render_stay(ds: &[Decided], merges: &[(Vec<usize>, String)]) -> String {
    let mut out = String::new();
    let merged_at: HashMap<usize, &String> = merges.iter().map(|(g, t)| (g[0], t)).collect();
    for (i, d) in ds.iter().enumerate() {
        match &d.dest {
            Dest::Stay => out.push_str(&d.unit.text()),
            Dest::Merged { .. } => {
                if let Some(t) = merged_at.get(&i) {
                    out.push_str(t);
                    // Keep the first member's line ending and trailing blank lines.
                    let first = &d.unit.lines[0];
                    out.push_str(&first[first.trim_end_matches(['\n', '\r']).len()..]);
                    for l in &d.unit.lines[1..] {
                        out.push_str(l);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

impl Applied {
    /// The report printed after a verified apply.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "Backup: {}", self.backup);
        for (f, how, b, a) in &self.files {
            let _ = writeln!(s, "{how:>9} {f} ({b} -> {a} lines)");
        }
        if let Some(c) = &self.commit {
            let _ = writeln!(s, "Commit: {c}");
        }
        s.push_str("Read-back:\n");
        for r in &self.read_back {
            let _ = writeln!(s, "  {r}");
        }
        let _ = writeln!(
            s,
            "{MEMORY_MD}: {} -> {} lines, {} -> {} bytes; default-load tokens {} -> {}.",
            self.before.memory_lines,
            self.after.memory_lines,
            self.before.memory_bytes,
            self.after.memory_bytes,
            self.before.tokens,
            self.after.tokens
        );
        s.push_str("Tidy applied and verified.\n");
        s
    }
}

impl ModelReport {
    /// The model's part of a plan, one line each: the estimate, what was sent (tokens and
    /// cost) or decided from the cache, and every problem (shown by `--plan` and the Memory
    /// page alike).
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![self.estimate_line()];
        if self.sent > 0 {
            out.push(format!(
                "Model: {} request(s) sent: {} input + {} output tokens, {}; {} of {} undecided unit(s) decided.",
                self.sent,
                self.used_tokens.0,
                self.used_tokens.1,
                codex_free_models::prices::format_cost(self.cost_usd),
                self.decided,
                self.undecided
            ));
        } else if self.decided > 0 {
            out.push(format!(
                "Model: {} of {} undecided unit(s) decided from the cache.",
                self.decided, self.undecided
            ));
        }
        out.extend(self.problems.iter().map(|p| format!("Model: {p}")));
        out
    }
}
