#!/usr/bin/env bash
# The project's test command: installs what it needs, then runs the mechanical checks and
# every test suite. Usage: scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
echo "== cargo fmt --check"; cargo fmt --all -- --check
echo "== cargo clippy"; cargo clippy --all-targets -- -D warnings
echo "== cargo test"; cargo test --all-targets
echo "== web UI: vitest, browser end-to-end tests (real Secret Service), screenshots"; scripts/ui-e2e.sh
echo "== desktop app: clippy"; cargo clippy -p codex-free-app --all-targets --no-deps -- -D warnings
echo "== desktop app: smoke test under Xvfb"; scripts/app-smoke.sh
