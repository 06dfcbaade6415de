//! Building the plan: load the loaded files, decide their units, rebuild `MEMORY.md` (the
//! verify section, the layers pointer, topic files when over budget), the destinations and
//! what would make `--apply` refuse. Reads only.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use super::apply::own_repo;
use super::classify::{self, Decided, decide};
use super::render::render_out;
use super::render::render_stay;
use super::structure::{insert_after_title, join_blocks, layout_sections, slug, trim_blank_tail};
use super::{
    Dest, LAYERS_LINE, LoadSize, Merge, Move, Plan, TOPICS_DIR, TOPICS_HEADING, TidyOptions,
    TopicFile,
};
use crate::text::{self, Topic};
use crate::units::UnitKind;
use crate::{ARCHIVE_DIR, DAILY_DIR, VERIFY_HEADING, check_inside, read_memory_file};
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::error::IoContext;
use codex_free_memory::budget;
use codex_free_memory::folder::{MEMORY_MD, SUMMARY_MD};

/// True when `dir` (canonical) is the memory folder of the state home `home`.
pub(super) fn is_state_home_folder(home: &Path, dir: &Path) -> bool {
    std::fs::canonicalize(crate::default_folder(home)).is_ok_and(|own| own == dir)
}

/// Resolve and check the folder: an existing directory; returns its canonical path.
fn resolve_dir(dir: &Path) -> Result<PathBuf> {
    let md = std::fs::metadata(dir).map_err(|_| Error::NotFound(dir.to_path_buf()))?;
    if !md.is_dir() {
        return Err(Error::InvalidArgument(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    std::fs::canonicalize(dir).ctx(|| format!("resolving {}", dir.display()))
}

/// What would make `--apply` refuse, found without writing: conflict markers in the loaded
/// files, a git operation in progress, a folder (or destination folder) this user cannot
/// write.
fn blockers(dir: &Path, originals: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (name, t) in originals {
        let lines: Vec<usize> = t
            .lines()
            .enumerate()
            .filter(|(_, l)| text::is_conflict_marker(l))
            .map(|(i, _)| i + 1)
            .collect();
        if !lines.is_empty() {
            out.push(format!(
                "{name} has git conflict markers on line(s) {}: resolve the merge first",
                lines
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    if let Some(st) = own_repo(dir).and_then(|r| r.operation_in_progress().ok().flatten()) {
        out.push(format!(
            "{} is a git repository in the middle of an operation ({st}); finish or abort it first",
            dir.display()
        ));
    }
    for d in [
        Some(dir.to_path_buf()),
        Some(dir.join(DAILY_DIR)),
        Some(dir.join(ARCHIVE_DIR)),
    ]
    .into_iter()
    .flatten()
    .filter(|d| d.is_dir())
    {
        if !writable(&d) {
            out.push(format!("{} is not writable by this user", d.display()));
        }
    }
    out
}

/// `access(2)` with `W_OK`: whether this user may write into `d` (no file is created).
#[cfg(unix)]
fn writable(d: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(d.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// Elsewhere only the read-only attribute is known (no file is created).
#[cfg(not(unix))]
fn writable(d: &Path) -> bool {
    std::fs::metadata(d).is_ok_and(|m| !m.permissions().readonly())
}

/// or a link out of the folder; a destination (`daily/`, `archive/`, `topics/` or a file in
/// them) that is a link out of the folder.
///
/// Long on purpose: the plan's steps (load, decide, lay out over budget, rebuild MEMORY.md, check
/// the served shape) share one set of per-file maps and one budget.
#[expect(
    clippy::too_many_lines,
    reason = "the plan's steps (load, decide, lay out over budget, rebuild MEMORY.md, check the served shape) share one set of per-file maps and one budget"
)]
pub fn plan(opts: &TidyOptions) -> Result<Plan> {
    let dir = resolve_dir(&opts.dir)?;
    let today = opts.today.format("%Y-%m-%d").to_string();
    let mut originals = BTreeMap::new();
    let memory = read_memory_file(Some(&dir), &dir.join(MEMORY_MD))?;
    originals.insert(MEMORY_MD.to_string(), memory.clone());
    let summary = match std::fs::symlink_metadata(dir.join(SUMMARY_MD)) {
        Ok(_) => Some(read_memory_file(Some(&dir), &dir.join(SUMMARY_MD))?),
        Err(_) => None,
    };
    if let Some(s) = &summary {
        originals.insert(SUMMARY_MD.to_string(), s.clone());
    }
    for d in [DAILY_DIR, ARCHIVE_DIR, TOPICS_DIR] {
        check_inside(Some(&dir), &dir.join(d))?;
    }

    // The units the user accepted, by file (1-based first lines); `None`: all of them.
    let accepted_in = |file: &str| -> Option<BTreeSet<usize>> {
        opts.accept.as_ref().map(|a| {
            a.iter()
                .filter_map(|k| k.rsplit_once(':'))
                .filter(|(f, _)| *f == file)
                .filter_map(|(_, l)| l.parse().ok())
                .collect()
        })
    };
    let (mem_ok, sum_ok) = (accepted_in(MEMORY_MD), accepted_in(SUMMARY_MD));
    let (mem, mem_merges) = decide(&memory, false, &opts.model_verdicts, mem_ok.as_ref());
    let (sum, sum_merges) = match summary
        .as_deref()
        .map(|s| decide(s, true, &opts.model_verdicts, sum_ok.as_ref()))
    {
        Some((d, m)) => (Some(d), m),
        None => (None, Vec::new()),
    };

    // MEMORY.md: what stays (the verify section kept apart), the layers pointer under the
    // title, the topic index when sections were laid out, the verify section (existing
    // checks + new ones) at the end.
    let heading_text = |d: &Decided| {
        d.unit
            .content_lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_string()
    };
    let verify_idx: Vec<usize> = mem
        .iter()
        .enumerate()
        .filter(|(_, d)| {
            heading_text(d) == VERIFY_HEADING
                || d.parents
                    .iter()
                    .any(|p| heading_text(&mem[*p]) == VERIFY_HEADING)
        })
        .map(|(i, _)| i)
        .collect();
    // An index of topic files from an earlier tidy is kept and extended, not repeated.
    let topics_idx: Vec<usize> = mem
        .iter()
        .enumerate()
        .filter(|(_, d)| {
            heading_text(d) == TOPICS_HEADING
                || d.parents
                    .iter()
                    .any(|p| heading_text(&mem[*p]) == TOPICS_HEADING)
        })
        .map(|(i, _)| i)
        .collect();
    let mut verify_lines = section_lines(&mem, &verify_idx);
    let mut topics: BTreeSet<Topic> = BTreeSet::new();
    for d in mem.iter().chain(sum.iter().flatten()) {
        if let Dest::Archive { check: Some(t) } = d.dest {
            topics.insert(t);
        }
    }
    let present: HashSet<&str> = memory.lines().map(str::trim).collect();
    let mut checks_added = Vec::new();
    for t in &topics {
        let c = t.check().to_string();
        if !present.contains(c.as_str()) && !verify_lines.contains(&c) {
            checks_added.push(c.clone());
            verify_lines.push(c);
        }
    }
    let moves_out = mem
        .iter()
        .any(|d| !matches!(d.dest, Dest::Stay | Dest::Duplicate { .. }));
    let layers = moves_out && !present.contains(LAYERS_LINE);
    let verify_block = if !verify_lines.is_empty() || !verify_idx.is_empty() {
        let mut v = String::from(VERIFY_HEADING);
        v.push_str("\n\n");
        for l in &verify_lines {
            v.push_str(l);
            v.push('\n');
        }
        v
    } else {
        String::new()
    };
    // `laid`: MEMORY.md's units with the verify section hidden and sections laid out into
    // topic files marked `Topic`.
    let mut laid = mem.clone();
    for i in verify_idx.iter().chain(&topics_idx) {
        laid[*i].dest = Dest::Duplicate { kept_at: 0 };
    }
    let mut index = section_lines(&mem, &topics_idx);
    let compose = |laid: &[Decided], index: &[String]| {
        let mut m = render_stay(laid, &mem_merges);
        if layers {
            m = insert_after_title(&m, LAYERS_LINE);
        }
        if !index.is_empty() {
            let mut block = String::from(TOPICS_HEADING);
            block.push_str("\n\n");
            for l in index {
                block.push_str(l);
                block.push('\n');
            }
            m = join_blocks(m, &block);
        }
        join_blocks(m, &verify_block)
    };
    let fits = |t: &str| {
        budget::size_problems(
            t,
            opts.budget.memory_max_lines,
            opts.budget.memory_max_bytes,
        )
        .is_empty()
    };
    // Over budget: lay whole sections out into topic files, largest first, until it fits.
    let mut topic_files: Vec<TopicFile> = Vec::new();
    let mut topic_outputs: BTreeMap<String, String> = BTreeMap::new();
    let mut new_memory = compose(&laid, &index);
    let mut used: HashSet<String> = HashSet::new();
    // Units of MEMORY.md that still stand there (not laid out): a staying unit, or the
    // first member of a merge (which carries the merged rule).
    let merge_first: HashSet<usize> = mem_merges.iter().map(|(g, _)| g[0]).collect();
    let mut gone: HashSet<usize> = HashSet::new();
    let standing = |j: usize, laid: &[Decided], gone: &HashSet<usize>| {
        !gone.contains(&j) && (laid[j].dest == Dest::Stay || merge_first.contains(&j))
    };
    while !fits(&new_memory) {
        // Rules stay loaded longest: sections are laid out by rule density (fewest rules
        // first), then by size (largest first).
        let next = layout_sections(&laid)
            .into_iter()
            .filter(|(h, _)| standing(*h, &laid, &gone))
            .map(|(h, members)| {
                let staying: Vec<usize> = members
                    .iter()
                    .copied()
                    .filter(|j| standing(*j, &laid, &gone))
                    .collect();
                let bytes: usize = staying.iter().map(|j| laid[*j].unit.text().len()).sum();
                let rules = staying
                    .iter()
                    .filter(|j| laid[**j].unit.content_lines().any(text::is_rule_line))
                    .count();
                let density = (rules * 1000) / staying.len().max(1);
                (h, staying, bytes, density)
            })
            .filter(|(_, _, b, _)| *b > 0)
            .min_by_key(|(h, _, b, d)| (*d, std::cmp::Reverse(*b), *h));
        let Some((h, members, _, _)) = next else {
            break;
        };
        let heading = heading_text(&laid[h]);
        let name = heading.trim_start_matches('#').trim().to_string();
        let mut stem = slug(&heading);
        while !used.insert(stem.clone()) {
            stem.push_str("-2");
        }
        let file = format!("{TOPICS_DIR}/{stem}.md");
        let mut part = String::new();
        for j in std::iter::once(h).chain(members) {
            let own: Vec<(Vec<usize>, String)> = mem_merges
                .iter()
                .filter(|(g, _)| g[0] == j)
                .map(|(_, t)| (vec![0], t.clone()))
                .collect();
            part.push_str(&render_stay(&laid[j..=j], &own));
            if !part.ends_with('\n') {
                part.push('\n');
            }
            gone.insert(j);
            if laid[j].dest == Dest::Stay {
                laid[j].dest = Dest::Topic { file: file.clone() };
                laid[j].reason = format!("laid out: {MEMORY_MD} is over budget");
            }
        }
        let lines = part.lines().count();
        topic_outputs.insert(
            file.clone(),
            format!(
                "<!-- laid out of {MEMORY_MD} by codex-free memories tidy on {today}: loaded on demand; read it when the task touches {name} -->\n\n{part}"
            ),
        );
        index.push(format!(
            "- [{name}]({file}) — read when the task touches {name} ({lines} lines)"
        ));
        topic_files.push(TopicFile {
            file,
            heading: heading.clone(),
            lines,
        });
        let shown: Vec<Decided> = laid
            .iter()
            .enumerate()
            .map(|(j, d)| {
                let mut d = d.clone();
                if gone.contains(&j) {
                    d.dest = Dest::Duplicate { kept_at: 0 };
                }
                d
            })
            .collect();
        new_memory = compose(&shown, &index);
    }

    let mut moves = Vec::new();
    for (file, ds) in [
        (MEMORY_MD, &mem),
        (SUMMARY_MD, sum.as_ref().unwrap_or(&Vec::new())),
    ] {
        for (i, d) in ds.iter().enumerate() {
            if d.unit.kind == UnitKind::Blank {
                continue;
            }
            let (dest, reason) = match (file == MEMORY_MD).then(|| &laid[i].dest) {
                Some(t @ Dest::Topic { .. }) => (t.clone(), laid[i].reason.clone()),
                _ => (d.dest.clone(), d.reason.clone()),
            };
            moves.push(Move {
                file: file.into(),
                line: d.unit.first + 1,
                lines: d.unit.lines.len(),
                text: d.unit.content_lines().next().unwrap_or("").to_string(),
                undecided: dest == Dest::Stay
                    && (reason == classify::PARTLY_STALE || reason == classify::UNSURE_RULE),
                body: d.unit.content_lines().collect::<Vec<_>>().join("\n"),
                dest,
                reason,
            });
        }
    }
    let mut merged: Vec<Merge> = mem_merges
        .iter()
        .map(|(g, t)| Merge {
            text: t.clone(),
            from: g.iter().map(|i| mem[*i].unit.first + 1).collect(),
        })
        .collect();
    if let Some(s) = &sum {
        merged.extend(sum_merges.iter().map(|(g, t)| Merge {
            text: t.clone(),
            from: g.iter().map(|i| s[*i].unit.first + 1).collect(),
        }));
    }

    let mut outputs: BTreeMap<String, String> = BTreeMap::new();
    let note = format!(
        "<!-- moved here by codex-free memories tidy on {today}; searchable with memories_search, never loaded by default -->"
    );
    let add_part = |rel: String,
                    title: String,
                    part: String,
                    outputs: &mut BTreeMap<String, String>|
     -> Result<()> {
        if part.is_empty() {
            return Ok(());
        }
        let path = dir.join(&rel);
        let base = match outputs.get(&rel) {
            Some(t) => t.clone(),
            None if std::fs::symlink_metadata(&path).is_ok() => {
                read_memory_file(Some(&dir), &path)?
            }
            None => format!("{title}\n"),
        };
        let mut t = base;
        if !t.ends_with('\n') {
            t.push('\n');
        }
        t.push('\n');
        t.push_str(&note);
        t.push_str("\n\n");
        t.push_str(&part);
        if !t.ends_with('\n') {
            t.push('\n');
        }
        outputs.insert(rel, t);
        Ok(())
    };
    for (file, ds) in [(MEMORY_MD, Some(&mem)), (SUMMARY_MD, sum.as_ref())] {
        let Some(ds) = ds else { continue };
        let stem = file.trim_end_matches(".md");
        let archived = render_out(ds, &|d| {
            matches!(d, Dest::Archive { .. } | Dest::Merged { .. })
        });
        add_part(
            format!("{ARCHIVE_DIR}/{stem}-{today}.md"),
            format!("# Archived from {file} on {today}"),
            archived,
            &mut outputs,
        )?;
        let dates: BTreeSet<String> = ds
            .iter()
            .filter_map(|d| match &d.dest {
                Dest::Daily { date } => Some(date.clone()),
                _ => None,
            })
            .collect();
        for date in dates {
            let part = render_out(ds, &|d| matches!(d, Dest::Daily { date: x } if *x == date));
            add_part(
                format!("{DAILY_DIR}/{date}.md"),
                format!("# {date}"),
                part,
                &mut outputs,
            )?;
        }
    }
    for (k, v) in topic_outputs {
        outputs.insert(k, v);
    }
    let mut new_summary = sum.as_ref().map(|ds| render_stay(ds, &sum_merges));
    if let Some(s) = new_summary.as_mut()
        && s.trim().is_empty()
    {
        // Never leave an empty summary where there was one: keep its first line.
        *s = summary
            .as_deref()
            .and_then(|x| x.lines().next())
            .unwrap_or("v1")
            .to_string()
            + "\n";
    }
    let mut new_memory = trim_blank_tail(new_memory);
    let new_summary = new_summary.map(trim_blank_tail);
    if new_memory.is_empty() {
        new_memory.push('\n');
    }
    outputs.insert(MEMORY_MD.to_string(), new_memory.clone());
    if let Some(s) = &new_summary {
        outputs.insert(SUMMARY_MD.to_string(), s.clone());
    }
    for v in outputs.values_mut() {
        *v = trim_blank_tail(std::mem::take(v));
    }
    for rel in outputs.keys() {
        check_inside(Some(&dir), &dir.join(rel))?;
    }
    let existing: BTreeSet<String> = outputs
        .keys()
        .filter(|k| std::fs::symlink_metadata(dir.join(k)).is_ok())
        .cloned()
        .collect();
    let mut over_budget: Vec<String> = budget::size_problems(
        &new_memory,
        opts.budget.memory_max_lines,
        opts.budget.memory_max_bytes,
    )
    .into_iter()
    .map(|p| {
        format!(
            "{MEMORY_MD}: {} (even with {} section(s) laid out into topic files; what is left cannot be split by section)",
            p.message,
            topic_files.len()
        )
    })
    .collect();
    if let Some(s) = &new_summary {
        over_budget.extend(
            budget::size_problems(
                s,
                opts.budget.summary_max_lines,
                opts.budget.summary_max_bytes,
            )
            .into_iter()
            .map(|p| format!("{SUMMARY_MD}: {}", p.message)),
        );
    }
    // The state home's summary is served to every new session: a tidy must not break its
    // served shape (tokens, structure). A problem the summary already had is not the
    // tidy's to refuse (phase 2's next run repairs or rescues it); one the tidy would
    // introduce is.
    if is_state_home_folder(&opts.home, &dir)
        && let Some(s) = new_summary.as_deref().or(summary.as_deref())
    {
        over_budget.extend(introduced_shape_problems(summary.as_deref(), s));
    }
    let before = LoadSize::of(&memory, summary.as_deref());
    let after = LoadSize::of(&new_memory, new_summary.as_deref());
    let blockers = blockers(&dir, &originals);
    Ok(Plan {
        dir,
        moves,
        merged,
        topics: topic_files,
        checks_added,
        outputs,
        existing,
        before,
        after,
        over_budget,
        blockers,
        model: None,
        originals,
    })
}

/// The served-shape problems of `after` that `before` (the summary as it was) did not have.
pub(super) fn introduced_shape_problems(before: Option<&str>, after: &str) -> Vec<String> {
    let had = before
        .map(codex_free_memory::gate::summary_shape_problems)
        .unwrap_or_default();
    codex_free_memory::gate::summary_shape_problems(after)
        .into_iter()
        .filter(|p| !had.contains(p))
        .collect()
}

/// The text a plan leaves loaded: `MEMORY.md` and the topic files it indexes.
pub fn loaded_text(plan: &Plan) -> String {
    let mut s = plan.outputs.get(MEMORY_MD).cloned().unwrap_or_default();
    for t in &plan.topics {
        if let Some(x) = plan.outputs.get(&t.file) {
            s.push_str(x);
        }
    }
    s
}

/// The non-blank content lines of the units at `idx` (headings left out), in order: what a
/// section of MEMORY.md says once its heading is set aside.
fn section_lines(mem: &[Decided], idx: &[usize]) -> Vec<String> {
    idx.iter()
        .filter(|i| !matches!(mem[**i].unit.kind, UnitKind::Heading(_)))
        .flat_map(|i| mem[*i].unit.content_lines().map(str::to_string))
        .filter(|l| !l.trim().is_empty())
        .collect()
}
