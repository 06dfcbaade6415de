#!/usr/bin/env bash
# Install everything the desktop app, the web UI and their tests need (Debian/Ubuntu).
# Idempotent: apt-get skips what is present; `npm ci` reinstalls ui/node_modules from the lockfile.
# Package list and reasons: shared design note tauri-linux.md (do NOT add dbus-x11: it makes GTK
# spawn session buses that outlive the app).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_PKGS=(build-essential pkg-config libssl-dev libgtk-3-dev libwebkit2gtk-4.1-dev
  libsoup-3.0-dev libjavascriptcoregtk-4.1-dev libayatana-appindicator3-dev librsvg2-dev
  libxdo-dev libdbus-1-dev)
TEST_PKGS=(xvfb xauth x11-utils imagemagick dbus gnome-keyring libsecret-tools keyutils chromium)

missing=()
for p in "${BUILD_PKGS[@]}" "${TEST_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node 18+ for Vite; keep an existing install (e.g. a nodesource nodejs that bundles npm).
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ -f ui/package-lock.json ]; then
  (cd ui && npm ci --no-audit --no-fund --loglevel=error)
fi
