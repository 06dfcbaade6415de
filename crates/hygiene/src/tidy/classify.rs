//! Deciding each unit of a file: stays, to `daily/`, to `archive/`, a duplicate, or merged with
//! rules that differ from it in one value.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::structure::{date_of, is_transcript, tokens};
use super::{Dest, LAYERS_LINE, TOPICS_HEADING};
use crate::VERIFY_HEADING;
use crate::text::{self, Shape};
use crate::units::{self, Unit, UnitKind};

/// Reason of a unit that stays because the rules are not sure: some lines stale, some not.
pub(super) const PARTLY_STALE: &str = "partly stale: not sure, stays";
/// Reason of a unit stale only by the section it sits in and shaped like a rule or a record
/// that can outlive it (a rule's form; a field under a dated heading).
pub(super) const UNSURE_RULE: &str =
    "stale only by its section, shaped like a rule or a record: not sure, stays";

/// Reason of a unit that would leave but that the user did not accept (it stays).
pub(super) const NOT_ACCEPTED: &str = "not accepted: stays";
/// Reason of an undecided unit that the model judged stale (it goes to `archive/`).
pub(super) const MODEL_STALE: &str = "stale by the model (the rules were not sure)";
/// Reason of an undecided unit that the model judged durable (it stays).
pub(super) const MODEL_DURABLE: &str = "durable by the model (the rules were not sure)";

/// A unit with its destination and the headings above it.
#[derive(Debug, Clone)]
pub(super) struct Decided {
    pub(super) unit: Unit,
    pub(super) dest: Dest,
    pub(super) reason: String,
    /// Indices (into the file's decided units) of the enclosing headings, outermost first.
    pub(super) parents: Vec<usize>,
}

/// The verdicts of a unit's content lines (structure lines excluded); `None` entries are
/// lines the rules cannot call stale.
pub(super) fn verdicts_of<'a>(
    u: &Unit,
    all: &'a [Option<text::Stale>],
) -> Vec<Option<&'a text::Stale>> {
    // A table's header row names its columns: it goes wherever its rows go.
    let header = usize::from(u.kind == UnitKind::Table && u.content_lines().nth(1).is_some());
    u.content_lines()
        .enumerate()
        .skip(header)
        .filter(|(_, l)| !text::is_structural(l) || text::is_conflict_marker(l))
        .map(|(i, _)| all.get(u.first + i).and_then(Option::as_ref))
        .collect()
}

/// Groups of one-line rule units (indices into `ds`) that differ in exactly one word — a
/// value (`repo 1` / `repo 2`), which must hold a digit unless three or more lines share the
/// pattern — with the merged text of each group.
pub(super) fn value_merges(ds: &[Decided]) -> Vec<(Vec<usize>, String)> {
    let mut by_key: BTreeMap<String, Vec<(usize, usize)>> = BTreeMap::new();
    for (i, d) in ds.iter().enumerate() {
        if d.dest != Dest::Stay || d.unit.kind != UnitKind::Item || d.unit.content != 1 {
            continue;
        }
        let line = d.unit.content_lines().next().unwrap_or("");
        let toks = tokens(line);
        let words = toks
            .iter()
            .filter(|t| t.chars().any(char::is_alphanumeric))
            .count();
        if words < 4 {
            continue;
        }
        for (p, t) in toks.iter().enumerate() {
            if !t.chars().any(char::is_alphanumeric) {
                continue;
            }
            // Lines of different sections are different entries (each `**记录时间**: <date>`
            // belongs to its own rule): only lines of one section merge.
            let mut key = format!("{:?}\u{0}{p}\u{0}", d.parents.last());
            for (q, u) in toks.iter().enumerate() {
                key.push_str(if q == p { "\u{1}" } else { u });
            }
            by_key.entry(key).or_default().push((i, p));
        }
    }
    let mut taken: HashSet<usize> = HashSet::new();
    let mut groups: Vec<(Vec<usize>, String)> = Vec::new();
    let mut candidates: Vec<Vec<(usize, usize)>> =
        by_key.into_values().filter(|g| g.len() >= 2).collect();
    candidates.sort_by_key(|g| std::cmp::Reverse(g.len()));
    for g in candidates {
        if g.iter().any(|(i, _)| taken.contains(i)) {
            continue;
        }
        let p = g[0].1;
        let values: Vec<String> = g
            .iter()
            .map(|(i, _)| tokens(ds[*i].unit.content_lines().next().unwrap_or(""))[p].to_string())
            .collect();
        let distinct: BTreeSet<&String> = values.iter().collect();
        if distinct.len() != values.len() {
            continue;
        }
        if g.len() < 3 && !values.iter().all(|v| v.chars().any(|c| c.is_ascii_digit())) {
            continue;
        }
        let first = ds[g[0].0].unit.content_lines().next().unwrap_or("");
        let toks = tokens(first);
        let mut text = String::new();
        for (q, t) in toks.iter().enumerate() {
            if q == p {
                text.push('{');
                text.push_str(&values.join(", "));
                text.push('}');
            } else {
                text.push_str(t);
            }
        }
        taken.extend(g.iter().map(|(i, _)| *i));
        groups.push((g.iter().map(|(i, _)| *i).collect(), text));
    }
    groups.sort();
    groups
}

/// A file's decided units and its value merges (member indices, merged text).
pub(super) type Decision = (Vec<Decided>, Vec<(Vec<usize>, String)>);

/// Decide every unit of one file (see the module doc).
///
/// Long on purpose: one pass over a file's units whose heading stack and seen-content maps every
/// branch reads and updates.
#[expect(
    clippy::too_many_lines,
    reason = "one pass over a file's units whose heading stack and seen-content maps every branch reads and updates"
)]
pub(super) fn decide(
    body: &str,
    in_summary: bool,
    model: &BTreeMap<String, super::Verdict>,
    accept: Option<&BTreeSet<usize>>,
) -> Decision {
    let units = units::parse(body);
    let verdicts = text::stale_lines(body);
    let mut ds: Vec<Decided> = Vec::with_capacity(units.len());
    let mut stack: Vec<(usize, usize)> = Vec::new(); // (level, index)
    let mut kept: HashMap<String, usize> = HashMap::new(); // exact content -> first line
    let mut kept_norm: HashMap<String, usize> = HashMap::new();
    let mut in_verify = false;
    let first_content = units.iter().position(|u| u.kind != UnitKind::Blank);
    for (idx, u) in units.into_iter().enumerate() {
        if let UnitKind::Heading(level) = u.kind {
            while stack.last().is_some_and(|(l, _)| *l >= level) {
                stack.pop();
            }
            let parents = stack.iter().map(|(_, i)| *i).collect();
            let h = u.content_lines().next().unwrap_or("").trim().to_string();
            in_verify = h == VERIFY_HEADING || h == TOPICS_HEADING;
            stack.push((level, idx));
            ds.push(Decided {
                unit: u,
                dest: Dest::Stay,
                reason: "heading".into(),
                parents,
            });
            continue;
        }
        let parents: Vec<usize> = stack.iter().map(|(_, i)| *i).collect();
        let content: String = u.content_lines().collect::<Vec<_>>().join("\n");
        let first_line = u.first + 1;
        let (dest, reason) = if u.kind == UnitKind::Blank || content.trim().is_empty() {
            (Dest::Stay, "blank".to_string())
        } else if u.content_lines().any(text::is_conflict_marker) {
            (
                Dest::Stay,
                "git conflict marker: resolve the merge first".to_string(),
            )
        } else if in_verify || content.trim() == LAYERS_LINE {
            (
                Dest::Stay,
                "check to run live, or the index of the topic files".to_string(),
            )
        } else if Some(idx) == first_content && in_summary && content.trim() == "v1" {
            (Dest::Stay, "summary version line".to_string())
        } else if let Some(at) = kept.get(&content) {
            (
                Dest::Duplicate { kept_at: *at },
                "exact duplicate".to_string(),
            )
        } else {
            let vs = verdicts_of(&u, &verdicts);
            let all_stale = !vs.is_empty() && vs.iter().all(Option::is_some);
            // A unit with a rule's form whose every verdict comes from its section or lead-in, none
            // from a line's own shape, is not sure: a rule can outlive the list it sits in.
            // A unit whose every verdict comes from its section or lead-in, none from a line's
            // own shape, and that the rules mark unsure (a rule's form, a field under a dated
            // heading) is not sure: it can outlive the section it sits in.
            let unsure = all_stale
                && vs.iter().flatten().all(|s| s.inherited)
                && vs.iter().flatten().any(|s| s.unsure);
            let all_stale = all_stale && !unsure;
            let transcript = u.kind == UnitKind::Code && is_transcript(&u);
            let undecided =
                !transcript && (unsure || (!all_stale && vs.iter().any(Option::is_some)));
            let by_model = undecided
                .then(|| model.get(&super::unit_hash(&content)).copied())
                .flatten();
            if by_model == Some(super::Verdict::Stale) {
                (Dest::Archive { check: None }, MODEL_STALE.to_string())
            } else if all_stale || transcript {
                let first = vs.iter().flatten().next().copied();
                let reason = match first {
                    Some(s) => format!("stale: {}", s.evidence),
                    None => "command output: evidence of one run".into(),
                };
                let date = first
                    .filter(|s| {
                        matches!(s.shape, Shape::Dated | Shape::Checkbox | Shape::Narrative)
                    })
                    .and_then(|_| date_of(&content));
                // A unit under a heading that opens with a date belongs to that day's log.
                let heading_date = parents.last().and_then(|p| {
                    let h = ds[*p].unit.content_lines().next().unwrap_or("");
                    text::stale_heading(h)
                        .filter(|(s, inherits)| s.shape == Shape::Dated && *inherits)
                        .and_then(|_| date_of(h))
                });
                match date.or(heading_date) {
                    Some(date) => (Dest::Daily { date }, reason),
                    None => {
                        let check = first.filter(|s| {
                            matches!(
                                s.shape,
                                Shape::Commit
                                    | Shape::Version
                                    | Shape::StatusField
                                    | Shape::RelativeTime
                            )
                        });
                        (
                            Dest::Archive {
                                check: check.map(|s| s.topic),
                            },
                            reason,
                        )
                    }
                }
            } else {
                let norm = text::normalize(&content);
                match kept_norm.get(&norm) {
                    Some(at) if u.kind == UnitKind::Item && !norm.is_empty() => (
                        Dest::Archive { check: None },
                        format!("restates line {at} (case and punctuation only)"),
                    ),
                    _ => {
                        kept.insert(content.clone(), first_line);
                        kept_norm.insert(norm, first_line);
                        (
                            Dest::Stay,
                            if by_model == Some(super::Verdict::Durable) {
                                MODEL_DURABLE.into()
                            } else if unsure {
                                UNSURE_RULE.into()
                            } else if vs.iter().any(Option::is_some) {
                                PARTLY_STALE.into()
                            } else {
                                "not stale by the rules: stays".into()
                            },
                        )
                    }
                }
            }
        };
        ds.push(Decided {
            unit: u,
            dest,
            reason,
            parents,
        });
    }
    // Value merges among the rules that stay (a group the user did not accept stays apart).
    let mut merges = value_merges(&ds);
    if let Some(ok) = accept {
        merges.retain(|(g, _)| ok.contains(&(ds[g[0]].unit.first + 1)));
    }
    for (group, _) in &merges {
        let into = ds[group[0]].unit.first + 1;
        for i in group {
            ds[*i].dest = Dest::Merged { into };
            ds[*i].reason = "differs from its group in one value".into();
        }
    }
    // Only what the user accepted moves: any other unit that would leave stays, as it is.
    if let Some(ok) = accept {
        for d in ds.iter_mut() {
            if !matches!(d.unit.kind, UnitKind::Heading(_) | UnitKind::Blank)
                && d.dest != Dest::Stay
                && !matches!(d.dest, Dest::Merged { .. })
                && !ok.contains(&(d.unit.first + 1))
            {
                d.dest = Dest::Stay;
                d.reason = NOT_ACCEPTED.into();
            }
        }
    }
    // Headings: a heading stays when anything under it stays, or when nothing is under it
    // and it is not stale itself; it always travels with what leaves.
    let n = ds.len();
    for i in 0..n {
        let UnitKind::Heading(_) = ds[i].unit.kind else {
            continue;
        };
        let below: Vec<usize> = (i + 1..n).filter(|j| ds[*j].parents.contains(&i)).collect();
        let content: Vec<usize> = below
            .iter()
            .copied()
            .filter(|j| {
                !matches!(ds[*j].unit.kind, UnitKind::Heading(_) | UnitKind::Blank)
                    && ds[*j].reason != "blank"
            })
            .collect();
        let h = ds[i].unit.content_lines().next().unwrap_or("").to_string();
        let title = Some(i) == first_content && ds[i].unit.kind == UnitKind::Heading(1);
        let required =
            in_summary && codex_free_memory::budget::SUMMARY_SECTIONS.contains(&h.trim());
        let stays = title
            || required
            || content.iter().any(|j| {
                ds[*j].dest == Dest::Stay
                    || ds[*j].dest
                        == Dest::Merged {
                            into: ds[*j].unit.first + 1,
                        }
            })
            || (content.is_empty() && text::stale_heading(&h).is_none());
        if !stays {
            let dest = content
                .iter()
                .map(|j| ds[*j].dest.clone())
                .find(|d| matches!(d, Dest::Archive { .. } | Dest::Daily { .. }))
                .unwrap_or(Dest::Archive { check: None });
            ds[i].dest = match dest {
                Dest::Daily { date } => Dest::Daily { date },
                _ => Dest::Archive { check: None },
            };
            ds[i].reason = if content.is_empty() {
                "stale heading of an empty section".into()
            } else {
                "heading of a section that leaves".into()
            };
        } else if title {
            ds[i].reason = "title".into();
        } else if text::stale_heading(&h).is_some() {
            // A heading moves only with its section; the lint keeps flagging it until the
            // section's own lines leave, and the plan says so instead of calling it clean.
            ds[i].reason = "stale heading kept: what it heads stays".into();
        }
    }
    (ds, merges)
}
