#!/usr/bin/env bash
# Type-checks the workspace for Windows (x86-64, GNU toolchain) without building a bundle or
# running anything: `cargo check --target x86_64-pc-windows-gnu --workspace --exclude
# codex-free-app` (the Tauri app crate needs the Windows WebView2 SDK and is left out).
# Installs nothing: when the Rust target or the mingw C compiler (the `ring`/`zstd`-style
# build scripts compile C for the target) is missing, it says what to install and exits 1.
# Extra arguments go to cargo, e.g. `scripts/check-windows.sh --all-targets`.
set -euo pipefail
cd "$(dirname "$0")/.."
target=x86_64-pc-windows-gnu
missing=0
if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
  echo "missing: the Rust target $target (install it with: rustup target add $target)" >&2
  missing=1
fi
if ! command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1; then
  echo "missing: the mingw C compiler x86_64-w64-mingw32-gcc (Debian/Ubuntu: apt-get install gcc-mingw-w64-x86-64)" >&2
  missing=1
fi
if [ "$missing" -ne 0 ]; then
  exit 1
fi
exec cargo check --target "$target" --workspace --exclude codex-free-app "$@"
