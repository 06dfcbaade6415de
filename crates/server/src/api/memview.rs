//! Read-only views of memory for the Memory page: task notes and plan per project
//! (`projects/<slug>/memory.json`) and the pipeline's `MEMORY.md` /
//! `memory_summary.md` with their budget gauges against `memories.memory_md_max_*` and
//! `memories.memory_summary_max_*` (defaults 150 lines / 15 KiB and 60 lines / 4 KiB).
//!
//! Invariant: nothing here writes; an unreadable or corrupt file becomes an `error` on its
//! entry (the page still renders), never a failed page.

use std::path::Path;

use serde_json::Value;

use crate::api::dto::{MemoryFile, MemoryView, Note, PlanStep, ProjectMemory};
use codex_free_core::config::Config;

/// Largest file content sent to the UI, bytes.
pub const MAX_CONTENT_BYTES: usize = 256 * 1024;

fn mtime_ms(p: &Path) -> Option<i64> {
    let m = std::fs::metadata(p).ok()?.modified().ok()?;
    Some(chrono::DateTime::<chrono::Utc>::from(m).timestamp_millis())
}

fn memory_file(dir: &Path, name: &str, max_lines: u64, max_bytes: u64) -> MemoryFile {
    let path = dir.join(name);
    let (exists, bytes, text) = match std::fs::read(&path) {
        Ok(b) => (
            true,
            b.len() as u64,
            String::from_utf8_lossy(&b).into_owned(),
        ),
        Err(_) => (false, 0, String::new()),
    };
    let lines = text.lines().count() as u64;
    let truncated = text.len() > MAX_CONTENT_BYTES;
    let content = if truncated {
        let mut cut = MAX_CONTENT_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text[..cut].to_string()
    } else {
        text
    };
    MemoryFile {
        name: name.into(),
        exists,
        lines,
        bytes,
        max_lines,
        max_bytes,
        content,
        truncated,
    }
}

/// Parse one `memory.json` (shape of `src/memory`: `{projectRoot, notes:{k:{value}},
/// plan:{steps:[{step,status}]}}`; a plain `notes:{k:"v"}` or `plan:[...]` is accepted too).
fn project(slug: &str, path: &Path, max_bytes: u64) -> ProjectMemory {
    let mut pm = ProjectMemory {
        slug: slug.into(),
        root: None,
        notes: Vec::new(),
        plan: Vec::new(),
        notes_bytes: 0,
        max_bytes,
        updated_ms: mtime_ms(path),
        error: None,
    };
    let v: Value = match std::fs::read(path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(v) => v,
        Err(e) => {
            pm.error = Some(format!("cannot read {}: {e}", path.display()));
            return pm;
        }
    };
    pm.root = v
        .get("projectRoot")
        .and_then(Value::as_str)
        .map(String::from);
    if let Some(notes) = v.get("notes").and_then(Value::as_object) {
        for (k, n) in notes {
            let value = n
                .get("value")
                .and_then(Value::as_str)
                .or_else(|| n.as_str())
                .unwrap_or_default()
                .to_string();
            pm.notes_bytes += (k.len() + value.len()) as u64;
            pm.notes.push(Note {
                key: k.clone(),
                value,
            });
        }
        pm.notes.sort_by(|a, b| a.key.cmp(&b.key));
    }
    let steps = v
        .get("plan")
        .and_then(|p| p.get("steps").or(Some(p)))
        .and_then(Value::as_array);
    for s in steps.into_iter().flatten() {
        pm.plan.push(PlanStep {
            step: s
                .get("step")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .into(),
            status: s
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or("pending")
                .into(),
        });
    }
    pm
}

/// Build the Memory page from the state home and config: projects under
/// `memory.dir` (or `<home>/projects`), newest first, and the two memory files of
/// `<home>/memories/`.
pub fn view(home: &Path, config: &Config) -> MemoryView {
    let mem_dir = home.join("memories");
    let m = &config.memories;
    let files = vec![
        memory_file(
            &mem_dir,
            "MEMORY.md",
            m.memory_md_max_lines as u64,
            m.memory_md_max_bytes as u64,
        ),
        memory_file(
            &mem_dir,
            "memory_summary.md",
            m.memory_summary_max_lines as u64,
            m.memory_summary_max_bytes as u64,
        ),
    ];
    let base = config
        .memory
        .dir
        .clone()
        .unwrap_or_else(|| home.join("projects"));
    let mut projects = Vec::new();
    if let Ok(rd) = std::fs::read_dir(&base) {
        for e in rd.flatten() {
            let p = e.path().join("memory.json");
            if p.is_file() {
                projects.push(project(
                    &e.file_name().to_string_lossy(),
                    &p,
                    config.memory.max_bytes as u64,
                ));
            }
        }
    }
    // A single-project explicit dir holds memory.json directly.
    let direct = base.join("memory.json");
    if direct.is_file() {
        projects.push(project(".", &direct, config.memory.max_bytes as u64));
    }
    projects.sort_by(|a, b| b.updated_ms.cmp(&a.updated_ms).then(a.slug.cmp(&b.slug)));
    MemoryView {
        memories_dir: mem_dir.display().to_string(),
        files,
        projects,
        // Filled by `ApiService::memory`, which knows the running config.
        versions: codex_free_pipeline::v2::state::VersionsState::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_projects_and_gauges() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path();
        std::fs::create_dir_all(home.join("projects/app-0123456789abcdef")).unwrap();
        std::fs::write(
            home.join("projects/app-0123456789abcdef/memory.json"),
            r#"{"version":1,"projectRoot":"/w/app","notes":{"db":{"value":"use sqlite","updatedAt":"x"}},
               "plan":{"steps":[{"step":"write tests","status":"in_progress"}],"updatedAt":"x"}}"#,
        )
        .unwrap();
        std::fs::create_dir_all(home.join("projects/bad-1")).unwrap();
        std::fs::write(home.join("projects/bad-1/memory.json"), "{not json").unwrap();
        std::fs::create_dir_all(home.join("memories")).unwrap();
        std::fs::write(home.join("memories/MEMORY.md"), "a\nb\nc\n").unwrap();
        let v = view(home, &Config::default());
        assert_eq!(v.projects.len(), 2);
        let p = v
            .projects
            .iter()
            .find(|p| p.slug.starts_with("app-"))
            .unwrap();
        assert_eq!(p.root.as_deref(), Some("/w/app"));
        assert_eq!(
            p.notes,
            vec![Note {
                key: "db".into(),
                value: "use sqlite".into()
            }]
        );
        assert_eq!(p.notes_bytes, 2 + 10);
        assert_eq!(p.plan[0].status, "in_progress");
        assert_eq!(p.max_bytes, 16_384);
        assert!(v.projects.iter().any(|p| p.error.is_some()));
        assert_eq!(
            (v.files[0].lines, v.files[0].bytes, v.files[0].max_lines),
            (3, 6, 150)
        );
        assert!(!v.files[1].exists);
        assert_eq!(v.files[1].max_bytes, 4096);
    }
}
