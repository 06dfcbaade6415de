//! File tools through their public API: every jail refusal, exact paging to the end, the
//! output ceiling for every tool, and grep over 100k matching lines.

use std::fs;
use std::path::Path;

use codex_free_core::config::Config;
use codex_free_tools::ToolCtx;
use codex_free_tools::doc::{
    GetProjectDocArgs, get_environment, get_project_doc, project_doc_for_instructions,
};
use codex_free_tools::fs::{
    GlobArgs, ListDirectoryArgs, ReadFileArgs, TreeArgs, WriteFileArgs, glob, list_directory,
    read_file, tree, write_file,
};
use codex_free_tools::grep::{GrepArgs, grep};
use codex_free_tools::patch::{ApplyPatchArgs, apply_patch};

fn ctx_with(root: &Path, f: impl FnOnce(&mut Config)) -> ToolCtx {
    let mut c = Config::default();
    f(&mut c);
    ToolCtx::open(
        root,
        std::sync::Arc::new(codex_free_core::jail::Protected::none()),
        c,
        root.join(".home"),
    )
    .unwrap()
}

fn read_args(path: &str, offset: Option<u64>, byte_offset: Option<u64>) -> ReadFileArgs {
    ReadFileArgs {
        path: path.into(),
        offset,
        limit: None,
        byte_offset,
    }
}

fn grep_args(pattern: &str) -> GrepArgs {
    GrepArgs {
        pattern: pattern.into(),
        path: None,
        glob: None,
        case_insensitive: None,
        context: None,
        offset: None,
    }
}

/// Follow read_file's footers to the end; returns the bytes and the number of pages.
fn read_all(ctx: &ToolCtx, path: &str) -> (Vec<u8>, usize) {
    let (text, pages) = codex_free_testkit::pages::follow_content(200_000, |c| {
        for (k, _) in c.map(|c| c.args.as_slice()).unwrap_or_default() {
            assert!(
                k == "offset" || k == "byte_offset",
                "unexpected continuation argument {k}"
            );
        }
        let (off, boff) = c.map_or((None, None), |c| (c.offset(), c.byte_offset()));
        let page = read_file(ctx, &read_args(path, off, boff)).unwrap();
        assert!(
            page.len() <= ctx.max_output_bytes(),
            "page of {} bytes over the ceiling",
            page.len()
        );
        page
    });
    (text.into_bytes(), pages)
}

#[cfg(unix)]
fn setup_jail() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("proj");
    let evil = d.path().join("proj-evil");
    fs::create_dir_all(root.join("src")).unwrap();
    fs::create_dir_all(&evil).unwrap();
    fs::write(root.join("src/ok.txt"), "ok\n").unwrap();
    fs::write(evil.join("secret.txt"), "secret needle\n").unwrap();
    std::os::unix::fs::symlink(&evil, root.join("out-dir")).unwrap();
    std::os::unix::fs::symlink(evil.join("secret.txt"), root.join("out-file")).unwrap();
    (d, root, evil)
}

#[cfg(unix)]
#[test]
fn every_tool_refuses_every_escape() {
    let (_d, root, evil) = setup_jail();
    let ctx = ctx_with(&root, |_| {});
    let evil_abs = evil.canonicalize().unwrap();
    let sibling = evil_abs.join("secret.txt").display().to_string();
    let sibling_dir = evil_abs.display().to_string();
    let escapes: Vec<(&str, String)> = vec![
        ("dotdot", "../proj-evil/secret.txt".into()),
        ("dotdot-deep", "src/../../proj-evil/secret.txt".into()),
        ("absolute", "/etc/passwd".into()),
        ("sibling-prefix", sibling.clone()),
        ("symlink-file", "out-file".into()),
        ("symlink-dir", "out-dir/secret.txt".into()),
    ];
    let dir_escapes: Vec<(&str, String)> = vec![
        ("dotdot", "..".into()),
        ("absolute", "/etc".into()),
        ("sibling-prefix", sibling_dir.clone()),
        ("symlink-dir", "out-dir".into()),
    ];
    let refused = |what: &str, r: codex_free_core::Result<String>| {
        let e = r.expect_err(what);
        assert_eq!(e.code(), "path_outside_root", "{what}: {e}");
        let m = e.to_string();
        assert!(
            m.contains("outside the project root"),
            "{what}: message names the rule: {m}"
        );
    };
    for (name, p) in &escapes {
        refused(
            &format!("read_file {name}"),
            read_file(&ctx, &read_args(p, None, None)),
        );
        refused(
            &format!("write_file {name}"),
            write_file(
                &ctx,
                &WriteFileArgs {
                    path: p.clone(),
                    content: "pwned".into(),
                },
            ),
        );
        refused(
            &format!("grep {name}"),
            grep(
                &ctx,
                &GrepArgs {
                    path: Some(p.clone()),
                    ..grep_args("needle")
                },
            ),
        );
        for body in [
            format!("*** Add File: {p}\n+pwned"),
            format!("*** Delete File: {p}"),
            format!("*** Update File: {p}\n@@\n-secret needle\n+pwned"),
            format!("*** Update File: src/ok.txt\n*** Move to: {p}\n@@\n-ok\n+pwned"),
        ] {
            refused(
                &format!("apply_patch {name}: {body}"),
                apply_patch(
                    &ctx,
                    &ApplyPatchArgs {
                        input: format!("*** Begin Patch\n{body}\n*** End Patch"),
                    },
                ),
            );
        }
    }
    for (name, p) in &dir_escapes {
        refused(
            &format!("list_directory {name}"),
            list_directory(
                &ctx,
                &ListDirectoryArgs {
                    path: Some(p.clone()),
                    offset: None,
                },
            ),
        );
        refused(
            &format!("tree {name}"),
            tree(
                &ctx,
                &TreeArgs {
                    path: Some(p.clone()),
                    depth: None,
                    offset: None,
                },
            ),
        );
        refused(
            &format!("glob {name}"),
            glob(
                &ctx,
                &GlobArgs {
                    pattern: "*".into(),
                    path: Some(p.clone()),
                    offset: None,
                },
            ),
        );
    }
    // Writing under a symlinked directory that points outside (new file and new subdirectory).
    refused(
        "write through dir link",
        write_file(
            &ctx,
            &WriteFileArgs {
                path: "out-dir/new.txt".into(),
                content: "x".into(),
            },
        ),
    );
    refused(
        "write through dir link, deeper",
        write_file(
            &ctx,
            &WriteFileArgs {
                path: "out-dir/a/b.txt".into(),
                content: "x".into(),
            },
        ),
    );
    // Nothing outside changed, nothing was created.
    assert_eq!(
        fs::read_to_string(evil.join("secret.txt")).unwrap(),
        "secret needle\n"
    );
    assert_eq!(fs::read_dir(&evil).unwrap().count(), 1);
    assert_eq!(fs::read_to_string(root.join("src/ok.txt")).unwrap(), "ok\n");
    // Walkers do not follow the symlink out: grep over the whole root does not see the secret.
    assert!(
        grep(&ctx, &grep_args("needle"))
            .unwrap()
            .starts_with("(no matches")
    );
    assert!(
        glob(
            &ctx,
            &GlobArgs {
                pattern: "**/secret.txt".into(),
                path: None,
                offset: None
            }
        )
        .unwrap()
        .starts_with("(no files match")
    );
}

#[cfg(unix)]
#[test]
fn symlink_inside_pointing_inside_is_written_through_not_replaced() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    fs::write(root.join("real.txt"), "old\n").unwrap();
    std::os::unix::fs::symlink(root.join("real.txt"), root.join("alias.txt")).unwrap();
    let ctx = ctx_with(root, |_| {});
    let r = write_file(
        &ctx,
        &WriteFileArgs {
            path: "alias.txt".into(),
            content: "new\n".into(),
        },
    )
    .unwrap();
    assert_eq!(r, "wrote 4 bytes to real.txt (replaced)");
    assert_eq!(fs::read_to_string(root.join("real.txt")).unwrap(), "new\n");
    assert!(
        fs::symlink_metadata(root.join("alias.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn read_file_pages_to_the_end_byte_for_byte() {
    let d = tempfile::tempdir().unwrap();
    // Mixed file: CRLF lines, multi-byte text, a 300 KB line in the middle, no final newline.
    let mut s = String::new();
    for i in 0..3000 {
        s.push_str(&format!("line {i} ünïcödé\r\n"));
    }
    s.push_str(&"€".repeat(100_000));
    s.push('\n');
    for i in 0..2500 {
        s.push_str(&format!("tail {i}\n"));
    }
    s.push_str("last line without newline");
    fs::write(d.path().join("mixed.txt"), &s).unwrap();
    for tokens in [500, 10_000] {
        let ctx = ctx_with(d.path(), |c| c.output.max_tool_output_tokens = tokens);
        let (bytes, pages) = read_all(&ctx, "mixed.txt");
        assert!(
            bytes == s.as_bytes(),
            "tokens={tokens}: paged bytes differ from the file"
        );
        assert!(pages > 3, "{pages}");
    }
    // The first page states the total in the exact continuation-footer shape.
    let ctx = ctx_with(d.path(), |_| {});
    let first = read_file(&ctx, &read_args("mixed.txt", None, None)).unwrap();
    assert!(
        first.ends_with(
            "\n(showing lines 1-1000 of 5502 — call again with offset=1000 for the rest)"
        ),
        "{}",
        &first[first.len() - 120..]
    );
}

#[test]
fn six_mb_single_line_reaches_every_byte() {
    let d = tempfile::tempdir().unwrap();
    let line: String = (0..6 * 1024 * 1024)
        .map(|i| (b'a' + (i % 26) as u8) as char)
        .collect();
    fs::write(d.path().join("bundle.min.js"), &line).unwrap();
    let ctx = ctx_with(d.path(), |c| c.output.max_tool_output_tokens = 100_000);
    let first = read_file(&ctx, &read_args("bundle.min.js", None, None)).unwrap();
    assert_eq!(
        first.len(),
        131_072 + 1 + first.lines().last().unwrap().len()
    );
    assert!(first.ends_with(
        "\n(showing bytes 0-131072 of 6291456 of line 1 — call again with offset=0 byte_offset=131072 for the rest)"
    ));
    let (bytes, pages) = read_all(&ctx, "bundle.min.js");
    assert!(bytes == line.as_bytes());
    assert_eq!(pages, 48);
}

#[test]
fn no_tool_output_exceeds_a_small_ceiling() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    let long = "n".repeat(200);
    for i in 0..300 {
        fs::create_dir_all(r.join(format!("dir{i:03}"))).unwrap();
        fs::write(
            r.join(format!("dir{i:03}/{long}{i}.txt")),
            format!("needle {}\n", "x".repeat(2000)).repeat(3),
        )
        .unwrap();
    }
    fs::write(r.join("AGENTS.md"), "rule\n".repeat(20_000)).unwrap();
    fs::write(r.join("big.txt"), "word ".repeat(100_000)).unwrap();
    let ctx = ctx_with(r, |c| {
        c.output.max_tool_output_tokens = 500;
        c.output.max_entries = 100_000;
        c.output.max_tree_nodes = 100_000;
        c.project_doc.max_bytes = 1 << 20;
    });
    let max = ctx.max_output_bytes();
    assert_eq!(max, 2000);
    let mut grep_ctx = grep_args("needle");
    grep_ctx.context = Some(20);
    let outputs: Vec<(&str, String)> = vec![
        (
            "read_file",
            read_file(&ctx, &read_args("big.txt", None, None)).unwrap(),
        ),
        (
            "list_directory",
            list_directory(
                &ctx,
                &ListDirectoryArgs {
                    path: None,
                    offset: None,
                },
            )
            .unwrap(),
        ),
        (
            "tree",
            tree(
                &ctx,
                &TreeArgs {
                    path: None,
                    depth: Some(5),
                    offset: None,
                },
            )
            .unwrap(),
        ),
        (
            "glob",
            glob(
                &ctx,
                &GlobArgs {
                    pattern: "**/*.txt".into(),
                    path: None,
                    offset: None,
                },
            )
            .unwrap(),
        ),
        ("grep", grep(&ctx, &grep_args("needle")).unwrap()),
        ("grep with context", grep(&ctx, &grep_ctx).unwrap()),
        (
            "get_project_doc",
            get_project_doc(&ctx, &GetProjectDocArgs { offset: None }).unwrap(),
        ),
        ("get_environment", get_environment(&ctx)),
        (
            "write_file",
            write_file(
                &ctx,
                &WriteFileArgs {
                    path: format!("{long}/{long}/{long}.txt"),
                    content: "x".into(),
                },
            )
            .unwrap(),
        ),
    ];
    for (tool, out) in &outputs {
        assert!(out.len() <= max, "{tool}: {} bytes > {max}", out.len());
        if *tool != "get_environment" && *tool != "write_file" {
            let last = out.lines().last().unwrap();
            assert!(
                last.starts_with("(showing ") && last.contains("call again with offset="),
                "{tool} was cut without a continuation: {last}"
            );
        }
    }
    // apply_patch touching many files reports within the ceiling too.
    let body: String = (0..200)
        .map(|i| format!("*** Add File: added/{long}{i}.txt\n+x\n"))
        .collect();
    let out = apply_patch(
        &ctx,
        &ApplyPatchArgs {
            input: format!("*** Begin Patch\n{body}*** End Patch"),
        },
    )
    .unwrap();
    assert!(out.len() <= max, "apply_patch: {}", out.len());
    // And the instructions' copy of AGENTS.md is bounded by projectDoc.maxBytes with a marker.
    let small = ctx_with(r, |c| c.project_doc.max_bytes = 4096);
    let doc = project_doc_for_instructions(&small).unwrap();
    assert!(
        doc.len() < 4096 + 200
            && doc.ends_with("call get_project_doc with offset=4096 for the rest)"),
        "{}",
        doc.len()
    );
}

#[test]
fn grep_pages_through_100k_matching_lines_exactly() {
    let d = tempfile::tempdir().unwrap();
    let text: String = (0..100_000).map(|i| format!("hit {i}\n")).collect();
    fs::write(d.path().join("hits.txt"), &text).unwrap();
    let ctx = ctx_with(d.path(), |c| {
        c.output.max_entries = 5000;
        c.output.max_tool_output_tokens = 100_000;
    });
    let mut offset = 0usize;
    let mut seen = 0usize;
    loop {
        let page = grep(
            &ctx,
            &GrepArgs {
                offset: Some(offset),
                ..grep_args("^hit")
            },
        )
        .unwrap();
        let mut lines: Vec<&str> = page.lines().collect();
        let footer = lines
            .last()
            .filter(|l| l.starts_with("(showing"))
            .map(|l| l.to_string());
        if footer.is_some() {
            lines.pop();
        }
        for l in &lines {
            assert_eq!(*l, format!("hits.txt:{}:hit {seen}", seen + 1));
            seen += 1;
        }
        match footer {
            Some(f) => {
                assert_eq!(
                    f,
                    format!(
                        "(showing matches {}-{} of 100000 — call again with offset={} for the rest)",
                        offset + 1,
                        seen,
                        seen
                    )
                );
                offset = seen;
            }
            None => break,
        }
    }
    assert_eq!(seen, 100_000);
}
