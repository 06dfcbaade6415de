//! The value rule of the command environment filter measured on real public environment
//! values (`tests/data/sandbox-world/env-values/`, labelled by hand by the rule in its
//! README). Only the `test` half is scored; `SANDBOX_WORLD_HALF=tune` prints the tune half.

use std::ffi::OsStr;
use std::path::Path;

use codex_free_tools::exec::env::is_secret_value;

#[test]
fn secret_values_on_real_env_files() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/sandbox-world/env-values/values.tsv");
    let text = std::fs::read_to_string(path).expect("values.tsv");
    let want = std::env::var("SANDBOX_WORLD_HALF").unwrap_or_else(|_| "test".into());
    let (mut tp, mut fp, mut fn_, mut tn) = (0usize, 0usize, 0usize, 0usize);
    let (mut leaked, mut dropped) = (Vec::new(), Vec::new());
    for line in text.lines().skip(1) {
        let c: Vec<&str> = line.split('\t').collect();
        assert_eq!(c.len(), 9, "bad row: {line}");
        let (repo, file, name, value, label, h) = (c[0], c[2], c[5], c[6], c[7], c[8]);
        assert!(matches!(label, "credential" | "not"), "bad label: {line}");
        if h != want {
            continue;
        }
        let value = value.replace("\\t", "\t");
        let got = is_secret_value(OsStr::new(&value));
        let shown = format!("{repo}:{file} {name}={value}");
        match (label == "credential", got) {
            (true, true) => tp += 1,
            (false, true) => {
                fp += 1;
                dropped.push(shown);
            }
            (true, false) => {
                fn_ += 1;
                leaked.push(shown);
            }
            (false, false) => tn += 1,
        }
    }
    let precision = tp as f64 / (tp + fp).max(1) as f64;
    let recall = tp as f64 / (tp + fn_).max(1) as f64;
    println!(
        "is_secret_value on the {want} half: {} values, {} credentials; tp {tp} fp {fp} fn \
         {fn_} tn {tn}; precision {precision:.3} recall {recall:.3}",
        tp + fp + fn_ + tn,
        tp + fn_
    );
    println!(
        "kept but a credential (leaks, {}):\n  {}",
        leaked.len(),
        leaked.join("\n  ")
    );
    println!(
        "dropped but not a credential (breaks a command, {}):\n  {}",
        dropped.len(),
        dropped.join("\n  ")
    );
    assert!(tp + fn_ >= 5 && tn > 1000, "the {want} half lost its rows");
    if want == "test" {
        // Floors at the figures measured once on the test half (see the README).
        assert_eq!(fp, MAX_DROPPED, "ordinary values dropped");
        assert!(recall >= FLOOR_RECALL, "recall {recall:.3}");
    }
}

/// Test-half floors, at the figures measured once (before and after tuning alike: 0 of
/// 1,263 ordinary values dropped, 6 of 6 credentials dropped).
const MAX_DROPPED: usize = 0;
const FLOOR_RECALL: f64 = 1.0;
