#!/usr/bin/env bash
# The project's test command: installs what it needs, then runs the mechanical checks and
# every test suite. Usage: scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
echo "== cargo fmt --check"; cargo fmt --all -- --check
echo "== cargo clippy"; cargo clippy --all-targets -- -D warnings
echo "== cargo test"; cargo test --all-targets
