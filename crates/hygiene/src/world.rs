//! The labelled corpus of real public memory files (`tests/data/hygiene/world/`): loading
//! it, scoring the stale-fact lint against its labels, and building real memory folders from
//! it for the tidy benchmark.
//!
//! The corpus is split once, by origin, into a `tune` half (rules may be tuned on it) and a
//! `test` half (only measured); see its README for the labelling rule.
//!
//! Invariant: nothing here writes outside the directory it is given.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::lint::{self, Checks, Kind, Source};
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::error::IoContext;
use codex_free_memory::budget::ArtifactBudget;
use codex_free_memory::folder::MEMORY_MD;

/// Where the corpus lives in this repository (used when no `--corpus` is given).
pub const DEFAULT_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/data/hygiene/world"
);

/// A line's hand label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    /// True at one moment, likely false later.
    Stale,
    /// True until someone decides otherwise.
    Durable,
    /// Not scored (blank, code, separators).
    None,
}

/// Which half of the corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Half {
    /// Rules may be tuned on it.
    Tune,
    /// Only measured.
    Test,
}

impl Half {
    /// `tune` or `test`.
    pub fn name(self) -> &'static str {
        match self {
            Half::Tune => "tune",
            Half::Test => "test",
        }
    }
}

/// One excerpt with its origin and labels.
#[derive(Debug, Clone)]
pub struct WorldFile {
    /// `w01` …
    pub id: String,
    /// `owner/name` of the origin.
    pub repo: String,
    /// Path in the origin.
    pub path: String,
    /// `en` or `zh`.
    pub lang: String,
    /// Its half.
    pub half: Half,
    /// File name under `files/`.
    pub name: String,
    /// The excerpt, byte for byte.
    pub text: String,
    /// One label per line (index 0 = line 1).
    pub labels: Vec<Label>,
}

/// The loaded corpus.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// Every file, in manifest order.
    pub files: Vec<WorldFile>,
}

fn bad(dir: &Path, what: String) -> Error {
    Error::InvalidArgument(format!("corpus {}: {what}", dir.display()))
}

impl Corpus {
    /// Load `manifest.tsv`, `labels.tsv` and `files/` from `dir`.
    ///
    /// Errors: a missing file; a manifest or label row of the wrong shape; a label row whose
    /// text differs from the file's line, or a file line without a label (the corpus and its
    /// labels must agree line for line).
    pub fn load(dir: &Path) -> Result<Corpus> {
        Self::load_labels(dir, "labels.tsv", false)
    }

    /// [`Corpus::load`] with the labels of `labels` (a file in `dir`, same format): a second
    /// annotator's. With `partial`, files it has no rows for are left out (a second
    /// annotation may cover one half only); a file it has rows for must still agree line for
    /// line.
    ///
    /// Errors: as [`Corpus::load`].
    pub fn load_labels(dir: &Path, labels: &str, partial: bool) -> Result<Corpus> {
        let read = |p: PathBuf| -> Result<String> {
            std::fs::read_to_string(&p).ctx(|| format!("reading {}", p.display()))
        };
        let manifest = read(dir.join("manifest.tsv"))?;
        let labels = read(dir.join(labels))?;
        let mut by_name: BTreeMap<String, Vec<(usize, Label, String)>> = BTreeMap::new();
        for (n, row) in labels.lines().enumerate().skip(1) {
            let cols: Vec<&str> = row.splitn(4, '\t').collect();
            let [file, line, label, text] = cols[..] else {
                return Err(bad(
                    dir,
                    format!("labels.tsv:{}: expected 4 columns", n + 1),
                ));
            };
            let line: usize = line
                .parse()
                .map_err(|_| bad(dir, format!("labels.tsv:{}: bad line number", n + 1)))?;
            let label = match label {
                "stale" => Label::Stale,
                "durable" => Label::Durable,
                "none" => Label::None,
                other => return Err(bad(dir, format!("labels.tsv:{}: label {other:?}", n + 1))),
            };
            by_name
                .entry(file.to_string())
                .or_default()
                .push((line, label, text.to_string()));
        }
        let mut files = Vec::new();
        for (n, row) in manifest.lines().enumerate().skip(1) {
            let cols: Vec<&str> = row.split('\t').collect();
            let [id, repo, path, _commit, lang, _ranges, half, name] = cols[..] else {
                return Err(bad(
                    dir,
                    format!("manifest.tsv:{}: expected 8 columns", n + 1),
                ));
            };
            let half = match half {
                "tune" => Half::Tune,
                "test" => Half::Test,
                other => return Err(bad(dir, format!("manifest.tsv:{}: half {other:?}", n + 1))),
            };
            if partial && !by_name.contains_key(name) {
                continue;
            }
            let text = read(dir.join("files").join(name))?;
            let rows = by_name.remove(name).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            if rows.len() != lines.len() {
                return Err(bad(
                    dir,
                    format!("{name}: {} lines but {} labels", lines.len(), rows.len()),
                ));
            }
            let mut out = Vec::with_capacity(lines.len());
            for (i, (l, (ln, label, t))) in lines.iter().zip(rows).enumerate() {
                if ln != i + 1 || t != *l {
                    return Err(bad(
                        dir,
                        format!("{name}:{}: label row does not match the file", i + 1),
                    ));
                }
                out.push(label);
            }
            files.push(WorldFile {
                id: id.into(),
                repo: repo.into(),
                path: path.into(),
                lang: lang.into(),
                half,
                name: name.into(),
                text,
                labels: out,
            });
        }
        if let Some(name) = by_name.keys().next() {
            return Err(bad(
                dir,
                format!("labels.tsv names {name}, which the manifest does not"),
            ));
        }
        Ok(Corpus { files })
    }

    /// The files of one half.
    pub fn half(&self, half: Half) -> impl Iterator<Item = &WorldFile> {
        self.files.iter().filter(move |f| f.half == half)
    }
}

/// Confusion counts of the stale-fact lint against the labels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Confusion {
    /// Stale lines the lint flags.
    pub tp: usize,
    /// Durable lines the lint flags.
    pub fp: usize,
    /// Stale lines the lint misses.
    pub fn_: usize,
    /// Durable lines the lint leaves alone.
    pub tn: usize,
}

impl Confusion {
    /// tp / (tp + fp); 1.0 when nothing is flagged.
    pub fn precision(&self) -> f64 {
        if self.tp + self.fp == 0 {
            1.0
        } else {
            self.tp as f64 / (self.tp + self.fp) as f64
        }
    }

    /// tp / (tp + fn); 1.0 when nothing is stale.
    pub fn recall(&self) -> f64 {
        if self.tp + self.fn_ == 0 {
            1.0
        } else {
            self.tp as f64 / (self.tp + self.fn_) as f64
        }
    }

    fn add(&mut self, o: Confusion) {
        self.tp += o.tp;
        self.fp += o.fp;
        self.fn_ += o.fn_;
        self.tn += o.tn;
    }
}

/// One mislabelled line, for tuning (printed only for the tune half).
#[derive(Debug, Clone, Serialize)]
pub struct Miss {
    /// File name.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// The hand label.
    pub label: Label,
    /// The line.
    pub text: String,
    /// The lint's message for a flagged line (empty when it was not flagged).
    pub why: String,
}

/// The lint's score on one half.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LintScore {
    /// All files.
    pub all: Confusion,
    /// English files.
    pub en: Confusion,
    /// Chinese files.
    pub zh: Confusion,
    /// False positives and misses (empty for the test half: it is not looked at line by line).
    pub misses: Vec<Miss>,
}

/// The 1-based lines of `text` that the stale-fact lint flags, the file linted as `MEMORY.md`.
pub fn flagged_lines(text: &str) -> Vec<usize> {
    flagged(text).into_keys().collect()
}

/// The 1-based lines of `text` the stale-fact lint flags, with the first finding's message.
fn flagged(text: &str) -> BTreeMap<usize, String> {
    let src = Source {
        name: MEMORY_MD.into(),
        path: PathBuf::from(MEMORY_MD),
        text: text.into(),
    };
    let rep = lint::lint(
        &[src],
        &[],
        &ArtifactBudget::default(),
        Checks { all: false },
    );
    let mut out = BTreeMap::new();
    for f in rep.findings.iter().filter(|f| f.kind == Kind::StaleFact) {
        out.entry(f.line).or_insert_with(|| f.message.clone());
    }
    out
}

/// Score the stale-fact lint on `half`. Misses are listed for the tune half only.
pub fn score_lint(corpus: &Corpus, half: Half) -> LintScore {
    let mut s = LintScore::default();
    for f in corpus.half(half) {
        let flagged = flagged(&f.text);
        let mut c = Confusion::default();
        for (i, (label, line)) in f.labels.iter().zip(f.text.lines()).enumerate() {
            let hit = flagged.contains_key(&(i + 1));
            match (label, hit) {
                (Label::Stale, true) => c.tp += 1,
                (Label::Stale, false) => c.fn_ += 1,
                (Label::Durable, true) => c.fp += 1,
                (Label::Durable, false) => c.tn += 1,
                (Label::None, _) => continue,
            }
            if half == Half::Tune && ((*label == Label::Stale) != hit) {
                s.misses.push(Miss {
                    file: f.name.clone(),
                    line: i + 1,
                    label: *label,
                    text: line.to_string(),
                    why: flagged.get(&(i + 1)).cloned().unwrap_or_default(),
                });
            }
        }
        s.all.add(c);
        if f.lang == "zh" {
            s.zh.add(c)
        } else {
            s.en.add(c)
        }
    }
    s
}

/// How far two annotations of the same lines agree (lines both label stale or durable).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Agreement {
    /// Lines both annotations label stale or durable.
    pub lines: usize,
    /// Of them, lines with the same label.
    pub same: usize,
    /// Cohen's kappa: agreement beyond what the two label rates give by chance (1 = all).
    pub kappa: f64,
}

/// The agreement of annotations `a` and `b` on the files both have (matched by name).
pub fn agreement(a: &Corpus, b: &Corpus) -> Agreement {
    let (mut n, mut same, mut sa, mut sb) = (0usize, 0usize, 0usize, 0usize);
    for fb in &b.files {
        let Some(fa) = a.files.iter().find(|f| f.name == fb.name) else {
            continue;
        };
        for (la, lb) in fa.labels.iter().zip(&fb.labels) {
            if *la == Label::None || *lb == Label::None {
                continue;
            }
            n += 1;
            same += usize::from(la == lb);
            sa += usize::from(*la == Label::Stale);
            sb += usize::from(*lb == Label::Stale);
        }
    }
    let nf = n.max(1) as f64;
    let (po, pa, pb) = (same as f64 / nf, sa as f64 / nf, sb as f64 / nf);
    let pe = pa * pb + (1.0 - pa) * (1.0 - pb);
    Agreement {
        lines: n,
        same,
        kappa: if pe < 1.0 {
            (po - pe) / (1.0 - pe)
        } else {
            1.0
        },
    }
}

/// What a tidy did to the corpus's files, each tidied as the `MEMORY.md` of its own folder.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TidyScore {
    /// Files tidied.
    pub files: usize,
    /// Files whose apply refused or failed (nothing changed in them).
    pub refused: Vec<String>,
    /// Durable labelled lines.
    pub durable: usize,
    /// Durable lines still loaded after (in `MEMORY.md` or an indexed topic file).
    pub durable_loaded: usize,
    /// Stale labelled lines.
    pub stale: usize,
    /// Stale lines no longer loaded after.
    pub stale_moved: usize,
    /// Bytes of the originals.
    pub bytes_before: usize,
    /// Bytes of original lines (whitespace included) found in no file after.
    pub bytes_lost: usize,
    /// Tokens of the `MEMORY.md` files before.
    pub tokens_before: usize,
    /// Tokens of the `MEMORY.md` files after (topic files are loaded on demand).
    pub tokens_after: usize,
    /// Files whose mode changed.
    pub mode_changed: Vec<String>,
    /// Durable lines that left the loaded layer, and stale lines that stayed (tune half
    /// only).
    pub misses: Vec<Miss>,
}

impl TidyScore {
    /// Share of durable lines kept loaded (1.0 when there are none).
    pub fn durable_kept(&self) -> f64 {
        ratio(self.durable_loaded, self.durable)
    }

    /// Share of stale lines moved out (1.0 when there are none).
    pub fn stale_out(&self) -> f64 {
        ratio(self.stale_moved, self.stale)
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 1.0 } else { a as f64 / b as f64 }
}

fn md_lines(dir: &Path, out: &mut std::collections::HashSet<String>) -> Result<()> {
    for e in std::fs::read_dir(dir)
        .ctx(|| format!("listing {}", dir.display()))?
        .flatten()
    {
        let p = e.path();
        if e.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        if p.is_dir() {
            md_lines(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "md") {
            let t = std::fs::read_to_string(&p).ctx(|| format!("reading {}", p.display()))?;
            out.extend(t.lines().map(str::to_string));
        }
    }
    Ok(())
}

/// The lines of the loaded layer of the memory folder `dir` after a tidy: its `MEMORY.md`
/// (`memory`, already read) and its indexed topic files.
fn loaded_lines(dir: &Path, memory: &str) -> Result<std::collections::HashSet<String>> {
    let mut loaded: std::collections::HashSet<String> =
        memory.lines().map(str::to_string).collect();
    let topics = dir.join(super::tidy::TOPICS_DIR);
    if topics.is_dir() {
        md_lines(&topics, &mut loaded)?;
    }
    Ok(loaded)
}

/// Tidy (apply, with backups under `root/home`) every file of `half` as the `MEMORY.md` of
/// its own folder under `root` (a git repository when `git`), and measure the result
/// against the labels. Uses the default budgets.
///
/// Errors: a folder that cannot be created or read back (a refused apply is counted, not
/// an error).
pub fn measure_tidy(corpus: &Corpus, half: Half, root: &Path, git: bool) -> Result<TidyScore> {
    use super::tidy::{mode_of, set_mode};
    let mut s = TidyScore::default();
    let home = root.join("home");
    for f in corpus.half(half) {
        let dir = root.join(&f.id);
        std::fs::create_dir_all(&dir).ctx(|| format!("creating {}", dir.display()))?;
        let mem = dir.join(MEMORY_MD);
        std::fs::write(&mem, &f.text).ctx(|| format!("writing {}", mem.display()))?;
        set_mode(&mem, 0o644).ctx(|| format!("chmod {}", mem.display()))?;
        if git {
            let folder = codex_free_memory::folder::MemoryFolder::init_at(&dir)?;
            let approved = codex_free_memory::gate::approve_as_is(&folder)?;
            folder.commit_all(&approved, "corpus file")?;
        }
        let opts = super::tidy::TidyOptions {
            dir: dir.clone(),
            home: home.clone(),
            today: chrono::NaiveDate::from_ymd_opt(2026, 12, 1).unwrap_or_default(),
            budget: ArtifactBudget::default(),
            fail_after_writes: None,
            model_verdicts: Default::default(),
            accept: None,
        };
        s.files += 1;
        s.bytes_before += f.text.len();
        s.tokens_before += codex_free_core::tokens::count(&f.text);
        let applied = super::tidy::apply(&opts);
        if let Err(e) = &applied {
            s.refused.push(format!("{}: {e}", f.name));
        }
        let after = std::fs::read_to_string(&mem).ctx(|| format!("reading {}", mem.display()))?;
        s.tokens_after += codex_free_core::tokens::count(&after);
        // (Unreadable counts as changed; without mode bits, as kept.)
        let mode = mode_of(&mem).map_or(if cfg!(unix) { 0 } else { 0o644 }, |m| m & 0o777);
        if mode != 0o644 {
            s.mode_changed.push(format!("{}: {mode:o}", f.name));
        }
        let loaded = loaded_lines(&dir, &after)?;
        let mut all = std::collections::HashSet::new();
        md_lines(&dir, &mut all)?;
        for l in f.text.lines() {
            if !l.is_empty() && !all.contains(l) {
                s.bytes_lost += l.len() + 1;
            }
        }
        for (i, (label, l)) in f.labels.iter().zip(f.text.lines()).enumerate() {
            let here = loaded.contains(l);
            match label {
                Label::Durable => {
                    s.durable += 1;
                    s.durable_loaded += usize::from(here);
                }
                Label::Stale => {
                    s.stale += 1;
                    s.stale_moved += usize::from(!here);
                }
                Label::None => continue,
            }
            if half == Half::Tune && (*label == Label::Durable) != here {
                s.misses.push(Miss {
                    file: f.name.clone(),
                    line: i + 1,
                    label: *label,
                    text: l.to_string(),
                    why: String::new(),
                });
            }
        }
    }
    Ok(s)
}

/// Counts by kind of verdict: `[durable, stale]` labelled lines, then `[durable, stale]` moved.
pub type KindCounts = BTreeMap<String, [usize; 4]>;

/// Per kind of verdict (`lang shape own|inherited`, or `- none` for a line the rules do not
/// call stale), how the tune half's labelled lines fare: `[durable, stale]` counts of the
/// lines the lint flags, and of the lines the tidy moves out of the loaded layer. For
/// calibrating which kinds are sure enough to act on; never computed on the test half.
/// With `filter`, also each labelled line of the kinds whose name contains it.
///
/// Errors: a folder that cannot be created or read back.
pub fn tune_kinds(
    corpus: &Corpus,
    root: &Path,
    filter: Option<&str>,
) -> Result<(KindCounts, Vec<String>)> {
    let mut out = KindCounts::new();
    let mut lines = Vec::new();
    for f in corpus.half(Half::Tune) {
        let vs = super::text::stale_lines(&f.text);
        let one = Corpus {
            files: vec![f.clone()],
        };
        let dir = root.join(&f.id);
        std::fs::create_dir_all(&dir).ctx(|| format!("creating {}", dir.display()))?;
        let _ = measure_tidy(&one, Half::Tune, &dir, false)?;
        let folder = dir.join(&f.id);
        let mem = folder.join(MEMORY_MD);
        let after = std::fs::read_to_string(&mem).ctx(|| format!("reading {}", mem.display()))?;
        let loaded = loaded_lines(&folder, &after)?;
        for (i, (label, l)) in f.labels.iter().zip(f.text.lines()).enumerate() {
            let col = match label {
                Label::Durable => 0,
                Label::Stale => 1,
                Label::None => continue,
            };
            let key = match vs.get(i).and_then(Option::as_ref) {
                Some(v) => format!(
                    "{} {:?} {}",
                    f.lang,
                    v.shape,
                    if v.inherited { "inherited" } else { "own" }
                ),
                None => format!("{} - none", f.lang),
            };
            if filter.is_some_and(|k| key.contains(k)) {
                lines.push(format!(
                    "{key} {label:?} moved={} {}:{} {l}",
                    !loaded.contains(l),
                    f.name,
                    i + 1
                ));
            }
            let e = out.entry(key).or_default();
            e[col] += 1;
            if !loaded.contains(l) {
                e[2 + col] += 1;
            }
        }
    }
    Ok((out, lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The corpus the scoring tests run on: `HYGIENE_CORPUS` (any folder of the same layout,
    /// e.g. a held-out set kept outside the repository), else the one shipped here.
    fn corpus_dir() -> PathBuf {
        std::env::var_os("HYGIENE_CORPUS").map_or_else(|| PathBuf::from(DEFAULT_DIR), PathBuf::from)
    }

    fn shipped() -> bool {
        std::env::var_os("HYGIENE_CORPUS").is_none()
    }

    #[test]
    fn the_corpus_and_its_labels_agree_and_the_split_is_by_origin() {
        let c = Corpus::load(Path::new(DEFAULT_DIR)).unwrap();
        assert!(c.files.len() >= 25);
        let repos: std::collections::HashSet<&str> =
            c.files.iter().map(|f| f.repo.as_str()).collect();
        assert_eq!(repos.len(), c.files.len(), "one file per repository");
        let labelled = c
            .files
            .iter()
            .flat_map(|f| f.labels.iter())
            .filter(|l| **l != Label::None)
            .count();
        assert!(labelled >= 300, "{labelled}");
        for f in &c.files {
            use sha2::Digest as _;
            let digest = format!(
                "{:x}",
                sha2::Sha256::digest(format!("{}:{}", f.repo, f.path).as_bytes())
            );
            let want = if ('0'..='7').contains(&digest.chars().next().unwrap()) {
                Half::Tune
            } else {
                Half::Test
            };
            assert_eq!(f.half, want, "{}", f.name);
        }
    }

    fn readings(file: &str) -> BTreeMap<(String, usize), Label> {
        let text = std::fs::read_to_string(Path::new(DEFAULT_DIR).join(file)).unwrap();
        text.lines()
            .skip(1)
            .map(|row| {
                let c: Vec<&str> = row.splitn(4, '\t').collect();
                let label = match c[2] {
                    "stale" => Label::Stale,
                    "durable" => Label::Durable,
                    _ => Label::None,
                };
                ((c[0].to_string(), c[1].parse().unwrap()), label)
            })
            .collect()
    }

    /// The test half's labels of record are the majority of three blind readings: the first
    /// (`labels-a.tsv`) where the second (`labels-b.tsv`) agrees, else the third
    /// (`labels-c.tsv`, made for exactly those lines plus as many agreed ones it could not tell
    /// apart); the third reading's agreement on the agreed lines says how far to trust it.
    #[test]
    fn test_labels_are_the_majority_of_three_readings() {
        let c = Corpus::load(Path::new(DEFAULT_DIR)).unwrap();
        let (a, b, third) = (
            readings("labels-a.tsv"),
            readings("labels-b.tsv"),
            readings("labels-c.tsv"),
        );
        let (mut checked, mut decided, mut control, mut control_same) = (0, 0, 0, 0);
        let mut single = 0;
        for f in c.half(Half::Test) {
            if !a.contains_key(&(f.name.clone(), 1)) {
                // A file added after the readings (one blind reading, labelled before any
                // rule ran on it): its labels are that reading.
                assert!(!b.keys().chain(third.keys()).any(|k| k.0 == f.name));
                single += 1;
                continue;
            }
            for (i, record) in f.labels.iter().enumerate() {
                let k = (f.name.clone(), i + 1);
                let (la, lb) = (a[&k], b.get(&k).copied().unwrap_or(Label::None));
                checked += 1;
                if la != Label::None && lb != Label::None && la != lb {
                    let lc = third.get(&k).copied();
                    assert_eq!(Some(*record), lc, "{k:?}: the third reading decides");
                    assert!(lc == Some(la) || lc == Some(lb), "{k:?}");
                    decided += 1;
                } else {
                    assert_eq!(*record, la, "{k:?}: the first reading stands");
                    if let Some(lc) = third.get(&k) {
                        control += 1;
                        control_same += usize::from(*lc == la);
                    }
                }
            }
        }
        println!(
            "test labels: {checked} lines of three readings, {decided} decided by the third; on {control} agreed lines it also read, it agrees on {control_same}; {single} files of one reading"
        );
        assert!(decided > 0 && control > 0);
        assert!(third.keys().all(|k| {
            c.files
                .iter()
                .any(|f| f.name == k.0 && f.half == Half::Test)
        }));
    }

    /// Tidy on real folders made from the corpus: durable kept loaded, stale moved out,
    /// bytes lost, modes.
    #[test]
    fn tidy_on_real_memory_folders() {
        let c = Corpus::load(&corpus_dir()).unwrap();
        let halves: &[Half] = if std::env::var_os("HYGIENE_SHOW_TEST").is_some() {
            &[Half::Tune, Half::Test]
        } else {
            &[Half::Tune]
        };
        if shipped() && halves.contains(&Half::Test) {
            // The same tidy against each single reading of the test half.
            for file in ["labels-a.tsv", "labels-b.tsv"] {
                let b = Corpus::load_labels(Path::new(DEFAULT_DIR), file, true).unwrap();
                let tmp = tempfile::tempdir().unwrap();
                let s = measure_tidy(&b, Half::Test, tmp.path(), false).unwrap();
                println!(
                    "test against {file} alone: durable kept {:.3} ({}/{}), stale moved {:.3} ({}/{})",
                    s.durable_kept(),
                    s.durable_loaded,
                    s.durable,
                    s.stale_out(),
                    s.stale_moved,
                    s.stale
                );
            }
        }
        for &half in halves {
            for git in [false, true] {
                let tmp = tempfile::tempdir().unwrap();
                let s = measure_tidy(&c, half, tmp.path(), git).unwrap();
                println!(
                    "{} git={git}: durable kept {:.3} ({}/{}), stale moved {:.3} ({}/{}), bytes lost {} of {}, tokens {} -> {}, refused {:?}, modes changed {:?}",
                    half.name(),
                    s.durable_kept(),
                    s.durable_loaded,
                    s.durable,
                    s.stale_out(),
                    s.stale_moved,
                    s.stale,
                    s.bytes_lost,
                    s.bytes_before,
                    s.tokens_before,
                    s.tokens_after,
                    s.refused,
                    s.mode_changed
                );
                if !git {
                    for m in &s.misses {
                        println!("  {:?} {}:{} {}", m.label, m.file, m.line, m.text);
                    }
                }
                assert_eq!(s.bytes_lost, 0);
                assert!(s.mode_changed.is_empty());
            }
        }
    }

    /// The stale-fact lint on the corpus: figures for both halves; the misses of the tune
    /// half only (the test half is not read line by line).
    #[test]
    fn stale_fact_lint_on_real_memory_files() {
        let c = Corpus::load(&corpus_dir()).unwrap();
        // The test half's figures are printed only on request, so that tuning does not
        // look at them run after run.
        let halves: &[Half] = if std::env::var_os("HYGIENE_SHOW_TEST").is_some() {
            &[Half::Tune, Half::Test]
        } else {
            &[Half::Tune]
        };
        if shipped() && halves.contains(&Half::Test) {
            // The test half's single readings (the labels of record are their majority): the
            // agreement between two readings bounds what any rule can score against either.
            for (who, file) in [("first", "labels-a.tsv"), ("second", "labels-b.tsv")] {
                let b = Corpus::load_labels(Path::new(DEFAULT_DIR), file, true).unwrap();
                let a = agreement(&c, &b);
                let s = score_lint(&b, Half::Test);
                println!(
                    "test, {who} reading alone: {} lines, agreement with the record {:.3}, kappa {:.3}; lint precision {:.3} recall {:.3} (en {:.3}/{:.3}; zh {:.3}/{:.3})",
                    a.lines,
                    a.same as f64 / a.lines.max(1) as f64,
                    a.kappa,
                    s.all.precision(),
                    s.all.recall(),
                    s.en.precision(),
                    s.en.recall(),
                    s.zh.precision(),
                    s.zh.recall()
                );
                assert!(a.lines > 0 && b.files.iter().all(|f| f.half == Half::Test));
            }
        }
        if let Ok(filter) = std::env::var("HYGIENE_KINDS") {
            let tmp = tempfile::tempdir().unwrap();
            let filter = Some(filter.as_str()).filter(|f| !f.is_empty() && *f != "1");
            let (kinds, lines) = tune_kinds(&c, tmp.path(), filter).unwrap();
            for l in lines {
                println!("    {l}");
            }
            println!(
                "tune by kind: [durable, stale] of all lines, then of the lines the tidy moves"
            );
            for (k, v) in kinds {
                let p = |d: usize, s: usize| s as f64 / (d + s).max(1) as f64;
                println!(
                    "  {k:<32} all d {:>4} s {:>4} (stale {:.2}) | moved d {:>3} s {:>4} (stale {:.2})",
                    v[0],
                    v[1],
                    p(v[0], v[1]),
                    v[2],
                    v[3],
                    p(v[2], v[3])
                );
            }
        }
        for &half in halves {
            let s = score_lint(&c, half);
            println!(
                "{}: precision {:.3} recall {:.3} (tp {} fp {} fn {} tn {}); en {:.3}/{:.3}; zh {:.3}/{:.3}",
                half.name(),
                s.all.precision(),
                s.all.recall(),
                s.all.tp,
                s.all.fp,
                s.all.fn_,
                s.all.tn,
                s.en.precision(),
                s.en.recall(),
                s.zh.precision(),
                s.zh.recall()
            );
            for m in &s.misses {
                println!(
                    "  {:?} {}:{} {}    [{}]",
                    m.label, m.file, m.line, m.text, m.why
                );
            }
        }
    }
}
