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
        let read = |p: PathBuf| -> Result<String> {
            std::fs::read_to_string(&p).ctx(|| format!("reading {}", p.display()))
        };
        let manifest = read(dir.join("manifest.tsv"))?;
        let labels = read(dir.join("labels.tsv"))?;
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
    let mut out: Vec<usize> = rep
        .findings
        .iter()
        .filter(|f| f.kind == Kind::StaleFact)
        .map(|f| f.line)
        .collect();
    out.dedup();
    out
}

/// Score the stale-fact lint on `half`. Misses are listed for the tune half only.
pub fn score_lint(corpus: &Corpus, half: Half) -> LintScore {
    let mut s = LintScore::default();
    for f in corpus.half(half) {
        let flagged: std::collections::HashSet<usize> =
            flagged_lines(&f.text).into_iter().collect();
        let mut c = Confusion::default();
        for (i, (label, line)) in f.labels.iter().zip(f.text.lines()).enumerate() {
            let hit = flagged.contains(&(i + 1));
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

#[cfg(test)]
mod tests {
    use super::*;

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

    /// The stale-fact lint on the corpus: figures for both halves; the misses of the tune
    /// half only (the test half is not read line by line).
    #[test]
    fn stale_fact_lint_on_real_memory_files() {
        let c = Corpus::load(Path::new(DEFAULT_DIR)).unwrap();
        for half in [Half::Tune, Half::Test] {
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
                println!("  {:?} {}:{} {}", m.label, m.file, m.line, m.text);
            }
        }
    }
}
