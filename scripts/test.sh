#!/usr/bin/env bash
# The project's test command (CI runs exactly this): installs what it needs, then runs the
# mechanical checks and every test suite — Rust unit + integration tests (real binary over
# stdio and HTTP, the Python MCP SDK as an independent client), the UI's Vitest tests, the
# browser end-to-end tests (playwright-core + Debian's chromium), the MCP conformance suite
# against `serve --http`, and the packages: the release app and CLI built once, bundled as
# .deb/.rpm, the .deb installed and its app smoke-tested under Xvfb, then removed, then the
# .deb installed into a clean Debian root (mmdebstrap) and the .rpm's requirements checked.
# Usage: scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-test-deps.sh
echo "== ui: build (the tray app embeds ui/dist)"
(cd ui && npm run --silent build >/dev/null)
echo "== cargo fmt --check"; cargo fmt --all -- --check
echo "== layers (one owner per outside system, crate edges, no module cycles, no god crate; then each kind planted)"; scripts/check-layers.sh && scripts/check-layers.sh --selftest
echo "== cargo deny (licenses, bans; advisories need the network)"; cargo deny check licenses bans 2>&1 | tail -1
echo "== cargo clippy (workspace, incl. the tray app)"; cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test (every crate but the tray app)"; cargo test --workspace --exclude codex-free-app --lib --bins --tests --examples
echo "== cargo test at 00:00:30 UTC on the first of next month (libfaketime)"; scripts/clock-tests.sh
echo "== MCP conformance suite (serve --http, expected failures in tests/conformance/)"; scripts/conformance.sh
echo "== browser end-to-end (ui unit tests, headless server, chromium)"; scripts/ui-e2e.sh
echo "== packages (release app + CLI built once, .deb/.rpm, installed .deb smoke-tested under Xvfb, removed)"; scripts/package.sh
echo "== packages on a clean system (fresh Debian root by mmdebstrap: apt installs the .deb, it starts and answers MCP; rpm requirements vs linked libraries)"; scripts/package-clean-root.sh
echo "== all tests passed"
