//! `cargo bench --bench tools`: our tools against the reference command-line tools, side by
//! side in one run.
//!
//! - `grep` vs `rg -n` (ripgrep) on a generated tree of 20,000 files / about 210 MB, for a
//!   rare literal, a common word and a regex (target: ours within 1.3x of rg);
//! - `read_file` 1000 lines at an offset near the end of a 100 MB file vs
//!   `sed -n 'N,Mp'` on the same file.
//!
//! Data is generated once, deterministically, under `target/bench-data/` (reused while its
//! `.complete` marker is there). Every figure is the median of several warm runs, ours and
//! the reference alternating (after one discarded warm-up each, so both read from the page
//! cache and share any background load alike).
//! Needs `rg` and `sed` on PATH (`apt-get install -y ripgrep`).
// A measurement program: it prints its figures and may panic on a broken setup.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use codex_free_core::config::Config;
use codex_free_tools::ToolCtx;
use codex_free_tools::fs::{ReadFileArgs, read_file};
use codex_free_tools::grep::{GrepArgs, grep};

const FILES: usize = 20_000;
const DIRS: usize = 200;
const FILE_BYTES: usize = 10_500;
const BIG_LINES: u64 = 1_000_000;
const RUNS: usize = 9;

/// Deterministic xorshift64* generator (independent of any crate's versioned algorithm).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn data_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("bench-data")
}

fn vocabulary(rng: &mut Rng) -> Vec<String> {
    const SYL: [&str; 24] = [
        "ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "qu", "ba", "do", "fi", "gu", "ha",
        "je", "xo", "py", "wa", "co", "tr", "st", "pl", "an",
    ];
    (0..3000)
        .map(|_| {
            let n = 1 + rng.below(4);
            (0..n)
                .map(|_| SYL[rng.below(SYL.len() as u64) as usize])
                .collect::<String>()
        })
        .collect()
}

/// Generate the tree once: 200 directories x 100 files of about 10.5 KB of code-like lines.
fn ensure_tree(dir: &Path) -> (usize, u64) {
    let marker = dir.join(".complete");
    if marker.exists() {
        let s = std::fs::read_to_string(&marker).unwrap_or_default();
        let mut it = s.split_whitespace().filter_map(|x| x.parse::<u64>().ok());
        if let (Some(f), Some(b)) = (it.next(), it.next()) {
            return (f as usize, b);
        }
    }
    eprintln!("generating {FILES} files under {} (once)...", dir.display());
    let _ = std::fs::remove_dir_all(dir);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let vocab = vocabulary(&mut rng);
    let mut total = 0u64;
    let per_dir = FILES / DIRS;
    for d in 0..DIRS {
        let sub = dir.join(format!("pkg{d:03}/src"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..per_dir {
            let mut text = String::with_capacity(FILE_BYTES + 200);
            let mut line_no = 0u64;
            while text.len() < FILE_BYTES {
                line_no += 1;
                let indent = "    ".repeat(rng.below(3) as usize);
                text.push_str(&indent);
                match rng.below(1000) {
                    0 => text.push_str("// TODO zqxj_marker: revisit this\n"),
                    1..=40 => text.push_str(&format!(
                        "fn {}_{}(arg: u32) -> Result<(), Error> {{\n",
                        vocab[rng.below(3000) as usize],
                        vocab[rng.below(3000) as usize]
                    )),
                    _ => {
                        let words = 6 + rng.below(8);
                        let line: Vec<&str> = (0..words)
                            .map(|_| vocab[rng.below(3000) as usize].as_str())
                            .collect();
                        text.push_str(&line.join(" "));
                        text.push_str(";\n");
                    }
                }
            }
            let _ = line_no;
            total += text.len() as u64;
            std::fs::write(sub.join(format!("mod{f:03}.rs")), text).unwrap();
        }
    }
    std::fs::write(&marker, format!("{FILES} {total}\n")).unwrap();
    (FILES, total)
}

/// Generate the 100 MB file: 1,000,000 lines of exactly 100 bytes.
fn ensure_big(path: &Path) -> u64 {
    let want = BIG_LINES * 100;
    if std::fs::metadata(path).map(|m| m.len()).ok() == Some(want) {
        return want;
    }
    eprintln!("generating {} (once)...", path.display());
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut rng = Rng(42);
    for i in 0..BIG_LINES {
        let head = format!("{i:08} ");
        let mut line = head.into_bytes();
        while line.len() < 99 {
            line.push(b'a' + rng.below(26) as u8);
        }
        line.push(b'\n');
        w.write_all(&line).unwrap();
    }
    w.flush().unwrap();
    want
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

/// Time `a` and `b` alternately (one warm-up each, then `RUNS` interleaved rounds, so load
/// from other processes hits both sides alike). Returns the medians in ms and last outputs.
fn time_pair<A, B>(mut a: impl FnMut() -> A, mut b: impl FnMut() -> B) -> (f64, A, f64, B) {
    let mut oa = a();
    let mut ob = b();
    let (mut ta, mut tb) = (Vec::with_capacity(RUNS), Vec::with_capacity(RUNS));
    for _ in 0..RUNS {
        let t = Instant::now();
        oa = a();
        ta.push(t.elapsed());
        let t = Instant::now();
        ob = b();
        tb.push(t.elapsed());
    }
    (median(ta), oa, median(tb), ob)
}

fn have(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

fn run_cmd(cmd: &str, args: &[&str], cwd: &Path) -> Vec<u8> {
    let out = Command::new(cmd)
        .args(args)
        .current_dir(cwd)
        .stderr(Stdio::null())
        .output()
        .expect("spawn");
    out.stdout
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else to parse.
    let base = data_dir();
    std::fs::create_dir_all(&base).unwrap();
    let tree_dir = base.join("tree");
    let (files, bytes) = ensure_tree(&tree_dir);
    let big = base.join("big-100mb.txt");
    let big_bytes = ensure_big(&big);
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!(
        "codex-free tools benchmark (release build, {cores} cores, median of {RUNS} warm runs)"
    );
    println!(
        "tree: {files} files, {:.1} MB at {}",
        bytes as f64 / 1e6,
        tree_dir.display()
    );
    println!();

    let rg = have("rg");
    if !rg {
        println!(
            "rg (ripgrep) not found on PATH: install it (apt-get install -y ripgrep) to compare."
        );
    }
    let tree_ctx = ToolCtx::open(
        &tree_dir,
        std::sync::Arc::new(codex_free_core::jail::Protected::none()),
        Config::default(),
        base.join("home"),
    )
    .unwrap();
    println!(
        "{:<34} {:>10} {:>10} {:>8} {:>10} {:>10}",
        "grep pattern", "ours ms", "rg ms", "ratio", "our total", "rg lines"
    );
    for pattern in ["zqxj_marker", "kalo", r"fn \w+_\w+\(arg"] {
        let args = GrepArgs {
            pattern: pattern.into(),
            path: None,
            glob: None,
            case_insensitive: None,
            context: None,
            offset: None,
        };
        let ours_fn = || grep(&tree_ctx, &args).expect("grep");
        let total_of = |page: &str| {
            page.lines()
                .last()
                .and_then(|l| l.split(" of ").nth(1))
                .and_then(|s| s.split(' ').next())
                .map(str::to_string)
                .unwrap_or_else(|| page.lines().count().to_string())
        };
        if rg {
            let (ours, page, theirs, out) = time_pair(ours_fn, || {
                run_cmd("rg", &["-n", "--no-heading", pattern, "."], &tree_dir)
            });
            let rg_lines = out.iter().filter(|&&b| b == b'\n').count();
            println!(
                "{:<34} {:>10.1} {:>10.1} {:>7.2}x {:>10} {:>10}",
                format!("/{pattern}/"),
                ours,
                theirs,
                ours / theirs,
                total_of(&page),
                rg_lines
            );
        } else {
            let (ours, page, _, _) = time_pair(ours_fn, || ());
            println!(
                "{:<34} {:>10.1} {:>10} {:>8} {:>10} {:>10}",
                format!("/{pattern}/"),
                ours,
                "-",
                "-",
                total_of(&page),
                "-"
            );
        }
    }
    println!(
        "(target: ours within 1.30x of rg; ours counts every match and returns the first page of 500)"
    );
    println!();

    let offset = BIG_LINES - 10_000;
    // A ceiling large enough for a full 1000-line page of this file (100 KB, under
    // maxFileBytes); with the default 10000-token ceiling the page stops at about 39 KB.
    let mut cfg = Config::default();
    cfg.output.max_tool_output_tokens = 40_000;
    let big_ctx = ToolCtx::open(
        &base,
        std::sync::Arc::new(codex_free_core::jail::Protected::none()),
        cfg,
        base.join("home"),
    )
    .unwrap();
    let rargs = ReadFileArgs {
        path: "big-100mb.txt".into(),
        offset: Some(offset),
        limit: Some(1000),
        byte_offset: None,
    };
    let sed_expr = format!("{},{}p", offset + 1, offset + 1000);
    let (ours, page, theirs, sed_out) = time_pair(
        || read_file(&big_ctx, &rargs).expect("read_file"),
        || run_cmd("sed", &["-n", &sed_expr, "big-100mb.txt"], &base),
    );
    let content_len = page
        .rfind("\n(showing")
        .map(|i| i + 1)
        .unwrap_or(page.len());
    let same = page.as_bytes()[..content_len] == sed_out[..];
    println!(
        "read_file offset={offset} limit=1000 on {:.0} MB: ours {ours:.1} ms, sed -n '{sed_expr}' {theirs:.1} ms, ratio {:.2}x, same bytes: {same}",
        big_bytes as f64 / 1e6,
        ours / theirs
    );
    println!("  footer: {}", page.lines().last().unwrap_or(""));
}
