//! `show_changes` and `view_image` through the real binary: the diff since the
//! conversation's first call (per conversation, untracked files included, the user's git
//! index untouched) and images as MCP image content, with the attacks refused (escape,
//! symlink out, a text file named .png, an oversized file).

use rmcp::model::CallToolRequestParams;
use serde_json::json;

use crate::support::{self, Env, call, call_meta};

const PNG: &[u8] =
    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";

#[tokio::test]
async fn show_changes_covers_what_changed_since_the_first_call_per_conversation() {
    let env = Env::new(&[("src/lib.rs", "fn a() {}\n")]);
    env.git_init();
    let index_before = std::fs::read(env.project().join(".git/index")).unwrap();
    let c = env.stdio(&[]).await;
    // First call of conversation "one": the snapshot is taken before it runs.
    let (_, err) = call_meta(&c, "get_environment", json!({}), Some("one")).await;
    assert!(!err);
    std::fs::write(env.project().join("src/lib.rs"), "fn a() {}\nfn b() {}\n").unwrap();
    // A new conversation starts after the edit: its baseline already holds it.
    let (d2, _) = call_meta(&c, "show_changes", json!({}), Some("two")).await;
    assert!(d2.contains("no changes since"), "{d2}");
    let (_, err) = call_meta(
        &c,
        "write_file",
        json!({"path": "notes/new.md", "content": "untracked and new\n"}),
        Some("one"),
    )
    .await;
    assert!(!err);
    let (d1, err) = call_meta(&c, "show_changes", json!({}), Some("one")).await;
    assert!(!err, "{d1}");
    assert!(
        d1.contains("+fn b() {}") && d1.contains("+untracked and new"),
        "{d1}"
    );
    let (again, _) = call_meta(&c, "show_changes", json!({}), Some("one")).await;
    assert_eq!(again, "(no changes since the last show_changes)");
    let (all, _) = call_meta(&c, "show_changes", json!({"from_start": true}), Some("one")).await;
    assert!(all.contains("+fn b() {}"), "{all}");
    let (d2, _) = call_meta(&c, "show_changes", json!({}), Some("two")).await;
    assert!(
        d2.contains("+untracked and new") && !d2.contains("+fn b() {}"),
        "{d2}"
    );
    c.cancel().await.unwrap();
    assert_eq!(
        std::fs::read(env.project().join(".git/index")).unwrap(),
        index_before,
        "the user's index is untouched"
    );
}

async fn image_call(c: &support::Client, path: &str) -> rmcp::model::CallToolResult {
    c.call_tool(
        CallToolRequestParams::new("view_image")
            .with_arguments(json!({"path": path}).as_object().cloned().unwrap()),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn view_image_serves_images_and_refuses_the_attacks() {
    use base64::Engine as _;
    let env = Env::new(&[("fake.png", "just text\n")]);
    std::fs::write(env.project().join("shot.dat"), PNG).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.png"), PNG).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.png"),
        env.project().join("link.png"),
    )
    .unwrap();
    let huge = std::fs::File::create(env.project().join("huge.png")).unwrap();
    huge.set_len(8 << 20).unwrap();
    let c = env.stdio(&[]).await;
    let r = image_call(&c, "shot.dat").await;
    assert_ne!(r.is_error, Some(true));
    let img = r
        .content
        .iter()
        .find_map(|b| b.as_image())
        .expect("an image block");
    assert_eq!(
        img.mime_type, "image/png",
        "type from the bytes, not the name"
    );
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(&img.data)
            .unwrap(),
        PNG
    );
    for (path, code) in [
        ("fake.png", "error[invalid_argument]"),
        ("link.png", "error[path_outside_root]"),
        ("../x.png", "error[path_outside_root]"),
        (
            outside.path().join("secret.png").to_str().unwrap(),
            "error[path_outside_root]",
        ),
        ("huge.png", "error[invalid_argument]"),
    ] {
        let r = image_call(&c, path).await;
        let t = support::text(&r);
        assert_eq!(r.is_error, Some(true), "{path}: {t}");
        assert!(t.starts_with(code), "{path}: {t}");
        assert!(r.content.iter().all(|b| b.as_image().is_none()), "{path}");
    }
    let (listed, _) = call(&c, "get_environment", json!({})).await;
    assert!(!listed.is_empty());
    c.cancel().await.unwrap();
}
