#!/usr/bin/env bash
# Builds the desktop app and the `codex-free` CLI once, in release, bundles them as .deb and
# .rpm with Tauri's bundler (the prebuilt @tauri-apps/cli from ui/node_modules), runs the app
# crate's tests on that same build, installs the .deb with apt-get, runs the desktop smoke
# test (scripts/app-smoke.sh) against the INSTALLED binaries, checks what the package put on
# disk (`dpkg -L`: desktop entry, icons, both binaries), and removes it again.
# The packages stay in target/release/bundle/{deb,rpm}/.
# Usage: scripts/package.sh   (after scripts/install-deps.sh; run as root or with sudo)
#        KEEP_INSTALLED=1 scripts/package.sh   leaves the package installed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
TAURI=$ROOT/ui/node_modules/.bin/tauri
[ -x "$TAURI" ] || (cd ui && npm ci --no-audit --no-fund --loglevel=error)

echo "== ui: build (the app embeds ui/dist)"
(cd ui && npm run --silent build >/dev/null)

echo "== release build: the CLI and the app in one cargo invocation (shared crates built once)"
t0=$(date +%s)
cargo build --release --quiet -p codex-free -p codex-free-app
echo "   built in $(( $(date +%s) - t0 )) s"

echo "== bundle: .deb and .rpm (tauri bundle reuses the build above)"
t0=$(date +%s)
"$TAURI" bundle --bundles deb,rpm --ci >/dev/null
echo "   bundled in $(( $(date +%s) - t0 )) s"
DEB=$(ls -t target/release/bundle/deb/*.deb | head -1)
RPM=$(ls -t target/release/bundle/rpm/*.rpm | head -1)
echo "   $DEB ($(du -h "$DEB" | cut -f1)), $RPM ($(du -h "$RPM" | cut -f1))"

echo "== app crate tests (release, on the same build)"
cargo test --release --quiet -p codex-free-app 2>&1 | grep -E "^test result|FAILED|panicked" || true
cargo test --release --quiet -p codex-free-app >/dev/null

echo "== install the .deb"
PKG=$(dpkg-deb -f "$DEB" Package)
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "./$DEB" >/dev/null
removed=0
cleanup() {
  if [ "${KEEP_INSTALLED:-0}" != 1 ] && [ $removed = 0 ]; then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get remove -y -qq "$PKG" >/dev/null || true
  fi
}
trap cleanup EXIT
files=$(dpkg -L "$PKG")
for want in /usr/bin/codex-free-app /usr/bin/codex-free "\.desktop$" "/usr/share/icons/hicolor/.*/apps/.*\.png$"; do
  grep -qE "$want" <<<"$files" || { echo "FAIL: dpkg -L $PKG lists nothing matching $want"; echo "$files"; exit 1; }
done
desktop=$(grep -E "\.desktop$" <<<"$files" | head -1)
grep -q "^Exec=codex-free-app" "$desktop" || { echo "FAIL: $desktop does not start codex-free-app"; cat "$desktop"; exit 1; }
echo "   installed: $(grep -cE "^/usr/(bin|share/icons|share/applications)/" <<<"$files") files under /usr/bin, icons, applications"
/usr/bin/codex-free --version
/usr/bin/codex-free connect --help >/dev/null

echo "== desktop smoke test against the installed app"
APP=/usr/bin/codex-free-app CLI=/usr/bin/codex-free scripts/app-smoke.sh

if [ "${KEEP_INSTALLED:-0}" != 1 ]; then
  echo "== remove the package"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get remove -y -qq "$PKG" >/dev/null
  removed=1
  for f in /usr/bin/codex-free-app /usr/bin/codex-free "$desktop"; do
    [ ! -e "$f" ] || { echo "FAIL: $f is still there after apt-get remove"; exit 1; }
  done
  echo "   removed cleanly"
fi
echo "== package: ok"
