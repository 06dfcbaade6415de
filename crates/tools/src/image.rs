//! `view_image`: one PNG, JPEG, GIF or WebP file of the project, returned as bytes and a
//! MIME type for an MCP image content block.
//!
//! The type comes from the file's first bytes (magic numbers), never from its name: a text
//! file named `x.png` is refused, and a real PNG named `x.txt` is shown as PNG. The path goes
//! through the project's jail (no `..` climbing out, no symlink leading out, nothing in a
//! protected directory); the file is opened without following a final symlink and the opened
//! descriptor is checked again (on Linux through `/proc/self/fd`), so a path swapped for a
//! symlink between the check and the open is refused, not followed.
//!
//! Invariant: at most [`MAX_IMAGE_BYTES`] bytes are read into memory, whatever the file's size.

use std::io::Read;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::ToolCtx;
use codex_free_core::Error;
use codex_free_core::Result;
use codex_free_core::error::IoContext;

/// Largest image file served, in bytes (3.75 MiB). Base64 makes it 5 MiB on the wire, the
/// per-image limit of Anthropic's API (the strictest of the clients' models); a larger file
/// would be refused by the model provider after the whole transfer.
pub const MAX_IMAGE_BYTES: u64 = 3 * 1024 * 1024 + 768 * 1024;

/// Arguments of `view_image`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ViewImageArgs {
    /// Image file (PNG, JPEG, GIF or WebP) relative to the project root.
    pub path: String,
}

/// An image read for the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub mime: &'static str,
    /// The path as shown to the model (relative to the root).
    pub shown: String,
}

/// The image type of `head` (the file's first bytes) by its magic number, if it is one of
/// the four types every client's model accepts.
pub fn sniff(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Read the image at `a.path`.
///
/// Errors: as [`codex_free_core::jail::Jail::resolve`] (outside the root, protected,
/// missing); [`Error::InvalidArgument`] for a directory, a file over [`MAX_IMAGE_BYTES`],
/// or content that is not PNG/JPEG/GIF/WebP; [`Error::PathOutsideRoot`] when the file
/// opened is not the one checked (a symlink swapped in).
pub fn view_image(ctx: &ToolCtx, a: &ViewImageArgs) -> Result<Image> {
    let jail = ctx.jail();
    let path = jail.resolve(&a.path)?;
    let shown = jail.display(&path);
    let file = open_nofollow(&path).ctx(|| format!("opening {shown}"))?;
    // The descriptor is what gets read: check what it really is.
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        if let Ok(real) = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
            if real != path {
                return Err(Error::PathOutsideRoot(format!(
                    "{} changed while it was opened (now {}); refused",
                    a.path,
                    real.display()
                )));
            }
            jail.check_path(&a.path, &real)?;
        }
    }
    let meta = file
        .metadata()
        .ctx(|| format!("reading metadata of {shown}"))?;
    if !meta.is_file() {
        return Err(Error::InvalidArgument(format!(
            "{shown} is not a regular file (a directory, FIFO or device), not an image"
        )));
    }
    if meta.len() > MAX_IMAGE_BYTES {
        return Err(Error::InvalidArgument(format!(
            "{shown} is {} bytes; view_image serves images up to {MAX_IMAGE_BYTES} bytes (5 MiB once base64-encoded, the models' per-image limit)",
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // One byte past the cap tells a file that grew after the size check.
    file.take(MAX_IMAGE_BYTES + 1)
        .read_to_end(&mut bytes)
        .ctx(|| format!("reading {shown}"))?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(Error::InvalidArgument(format!(
            "{shown} grew past {MAX_IMAGE_BYTES} bytes while it was read"
        )));
    }
    let Some(mime) = sniff(&bytes) else {
        return Err(Error::InvalidArgument(format!(
            "{shown} is not a PNG, JPEG, GIF or WebP image (its first bytes say otherwise, whatever its name); read_file shows text files"
        )));
    };
    Ok(Image { bytes, mime, shown })
}

#[cfg(unix)]
fn open_nofollow(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

/// No `O_NOFOLLOW` here: refused rather than following a symbolic link out of the jail.
#[cfg(not(unix))]
fn open_nofollow(_path: &std::path::Path) -> std::io::Result<std::fs::File> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!(
            "opening an image without following symbolic links is not supported on {} yet (Unix only)",
            std::env::consts::OS
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use codex_free_core::config::Config;
    use codex_free_core::jail::Protected;
    use std::sync::Arc;

    const PNG: &[u8] =
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";

    fn ctx(root: &std::path::Path) -> ToolCtx {
        ToolCtx::open(root, Arc::new(Protected::none()), Config::default(), root).unwrap()
    }

    fn view(c: &ToolCtx, p: &str) -> Result<Image> {
        view_image(c, &ViewImageArgs { path: p.into() })
    }

    #[test]
    fn types_come_from_magic_bytes() {
        assert_eq!(sniff(PNG), Some("image/png"));
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(sniff(b"GIF89a...."), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\x10\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff(b"RIFF\x10\0\0\0WAVEfmt "), None, "a WAV is RIFF too");
        assert_eq!(sniff(b"\x89PNG"), None, "a cut signature");
        assert_eq!(sniff(b""), None);
    }

    #[test]
    fn serves_an_image_by_content_and_refuses_a_fake_one() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("real.txt"), PNG).unwrap();
        std::fs::write(d.path().join("fake.png"), "not an image\n").unwrap();
        let c = ctx(d.path());
        let i = view(&c, "real.txt").unwrap();
        assert_eq!((i.mime, i.bytes.as_slice()), ("image/png", PNG));
        let e = view(&c, "fake.png").unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        assert!(
            e.to_string().contains("not a PNG, JPEG, GIF or WebP"),
            "{e}"
        );
        assert!(matches!(
            view(&c, ".").unwrap_err(),
            Error::InvalidArgument(_)
        ));
    }

    #[test]
    fn refuses_escapes_symlinks_out_and_huge_files() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(d.path().join("outside.png"), PNG).unwrap();
        std::os::unix::fs::symlink(d.path().join("outside.png"), root.join("link.png")).unwrap();
        let c = ctx(&root);
        assert!(matches!(
            view(&c, "../outside.png").unwrap_err(),
            Error::PathOutsideRoot(_)
        ));
        assert!(matches!(
            view(&c, d.path().join("outside.png").to_str().unwrap()).unwrap_err(),
            Error::PathOutsideRoot(_)
        ));
        assert!(matches!(
            view(&c, "link.png").unwrap_err(),
            Error::PathOutsideRoot(_)
        ));
        // A sparse file just over the cap: refused from its size, nothing read.
        let f = std::fs::File::create(root.join("huge.png")).unwrap();
        f.set_len(MAX_IMAGE_BYTES + 1).unwrap();
        let e = view(&c, "huge.png").unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("{} bytes", MAX_IMAGE_BYTES + 1)),
            "{e}"
        );
        // Exactly at the cap is served (a PNG header then zeros).
        let mut big = PNG.to_vec();
        big.resize(MAX_IMAGE_BYTES as usize, 0);
        std::fs::write(root.join("max.png"), &big).unwrap();
        assert_eq!(
            view(&c, "max.png").unwrap().bytes.len() as u64,
            MAX_IMAGE_BYTES
        );
    }

    #[test]
    fn refuses_protected_files() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join(".codex-free");
        std::fs::create_dir(&home).unwrap();
        std::fs::write(home.join("shot.png"), PNG).unwrap();
        let p = Protected::standard(&home, &home.join("codex.config.json"));
        let c = ToolCtx::open(d.path(), Arc::new(p), Config::default(), &home).unwrap();
        assert!(matches!(
            view(&c, ".codex-free/shot.png").unwrap_err(),
            Error::PathProtected(_)
        ));
    }
}
