#!/usr/bin/env bash
# Desktop smoke test of a built tray app: runs it under Xvfb in a private D-Bus session (with
# an unlocked gnome-keyring), and checks that the window shows the UI (the UI's first
# command reaches the core; a screenshot of the screen is not blank), the tray was built,
# the pipeline scheduler started, the embedded MCP server answers /health and /api/status
# with the tokens the CLI prints (they live in the Secret Service here, not in files), and
# SIGTERM quits cleanly (exit 0, port closed). Screenshot: docs/screenshots/app-window.png.
# Builds nothing: scripts/package.sh builds the release app once, installs its .deb and runs
# this against the installed binaries.
# Usage: APP=/usr/bin/codex-free-app CLI=/usr/bin/codex-free scripts/app-smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SHOTS=${SHOTS:-$ROOT/docs/screenshots}
APP=${APP:-$ROOT/target/release/codex-free-app}
CLI=${CLI:-$ROOT/target/release/codex-free}
mkdir -p "$SHOTS"
[ -x "$APP" ] && [ -x "$CLI" ] || { echo "FAIL: $APP or $CLI missing (run scripts/package.sh)"; exit 1; }

echo "== app: no display means a clear message, not a panic"
set +e
out=$(env -u DISPLAY -u WAYLAND_DISPLAY "$APP" 2>&1)
rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "serve --http --ui" <<<"$out" || { echo "FAIL: no-display run gave rc=$rc: $out"; exit 1; }

TMP=$(mktemp -d /tmp/cf-app-smoke.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/home" "$TMP/state" "$TMP/project"
echo "hello" > "$TMP/project/README.md"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup} CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
export HOME=$TMP/home XDG_DATA_HOME=$TMP/home/.local/share XDG_CONFIG_HOME=$TMP/home/.config XDG_CACHE_HOME=$TMP/home/.cache
export CODEX_FREE_HOME=$TMP/state TMP PORT SHOTS APP CLI

echo "== app: run under Xvfb"
xvfb-run -a -s "-screen 0 1280x900x24" dbus-run-session -- bash -euo pipefail -c '
  echo -n smoke-keyring-password | gnome-keyring-daemon --unlock --components=secrets >/dev/null
  "$APP" --project "$TMP/project" --port "$PORT" >"$TMP/app.out" 2>"$TMP/app.log" &
  pid=$!
  fail() { echo "FAIL: $*"; echo "--- app log"; tail -40 "$TMP/app.log"; kill $pid 2>/dev/null || true; exit 1; }
  for _ in $(seq 1 300); do grep -q "ui connected" "$TMP/app.log" && break; kill -0 $pid 2>/dev/null || fail "app exited early"; sleep 0.1; done
  grep -q "tray built" "$TMP/app.log" || fail "tray not built"
  grep -q "memory pipeline started" "$TMP/app.log" || fail "the pipeline scheduler did not start"
  grep -q "ui connected" "$TMP/app.log" || fail "the window never called the core (UI not loaded?)"
  curl -fsS "http://127.0.0.1:$PORT/health" | grep -q "\"ok\"" || fail "/health did not answer"
  TOKEN=$("$CLI" token show) ADMIN=$("$CLI" token show --admin)
  [ ! -e "$CODEX_FREE_HOME/server-token" ] || fail "the MCP token is on disk although a Secret Service is running"
  id=$(printf %s "$(realpath "$CODEX_FREE_HOME")" | sha256sum | cut -c1-12)
  [ "$(secret-tool lookup service codex-free username "server-token@$id")" = "$TOKEN" ] || fail "the MCP token is not in the Secret Service (account server-token@$id)"
  curl -fsS -H "Authorization: Bearer $ADMIN" "http://127.0.0.1:$PORT/api/status" | grep -q "\"state\":\"running\"" || fail "/api/status does not report a running server"
  code=$(curl -s -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/api/status")
  [ "$code" = 401 ] || fail "/api/status with the MCP token answered $code"
  code=$(curl -s -o /dev/null -w "%{http_code}" "http://127.0.0.1:$PORT/api/status")
  [ "$code" = 401 ] || fail "/api/status without token answered $code"
  xwininfo -root -tree | grep -q "\"Codex Free\"" || fail "no window titled Codex Free"
  # The page paints shortly after its first command; retry the screenshot for up to 20 s.
  colors=0
  for _ in $(seq 1 20); do
    sleep 1
    import -window root "$SHOTS/app-window.png"
    colors=$(convert "$SHOTS/app-window.png" -format "%k" info:)
    [ "$colors" -gt 64 ] && break
  done
  [ "$colors" -gt 64 ] || fail "the screenshot looks blank ($colors colours)"
  kill -TERM $pid
  for _ in $(seq 1 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  kill -0 $pid 2>/dev/null && fail "app still running 10 s after SIGTERM"
  wait $pid; rc=$?
  [ $rc -eq 0 ] || fail "app exited with $rc"
  curl -s -o /dev/null "http://127.0.0.1:$PORT/health" && fail "port still open after quit"
  echo "window, tray, /health, /api and clean quit: ok"
'
echo "== screenshot: $SHOTS/app-window.png"
