#!/usr/bin/env bash
# Installs what building and running Codex Free needs on Debian/Ubuntu: the C toolchain,
# the desktop app's GTK/WebKit libraries (Tauri 2), the tray icon library, and Node/npm with
# the web UI's build tools from the lockfile. Nothing for the tests (see
# scripts/install-test-deps.sh): no agent CLIs, no browsers. Idempotent. Run as root (or
# with sudo available).
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
APT_PKGS=(
  build-essential pkg-config git
  # Desktop app (Tauri 2 / WebKitGTK), see the design note tauri-linux.md.
  # libayatana-appindicator3 is also loaded at run time for the tray icon.
  libssl-dev libgtk-3-dev libwebkit2gtk-4.1-dev libsoup-3.0-dev libjavascriptcoregtk-4.1-dev
  libayatana-appindicator3-dev librsvg2-dev libxdo-dev libdbus-1-dev
)
missing=()
for p in "${APT_PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
# Node >= 20.19 for the UI build (Vite 7); keep an existing install (e.g. one that bundles npm).
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The web UI's build tools (Vite, TypeScript), from the lockfile.
if [ -f ui/package-lock.json ]; then
  (cd ui && npm ci --no-audit --no-fund --loglevel=error)
fi
