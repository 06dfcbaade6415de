#!/usr/bin/env bash
# Browser end-to-end tests of the web UI (tests/ui/, playwright-core + Debian's chromium).
# Builds the UI and `codex-free`, seeds a temp state home (demo usage rows written into
# state.sqlite by examples/seed_usage.rs, memory files, agent transcripts for the Usage page), starts
# `codex-free serve --http --ui` on it inside a private D-Bus session with an unlocked
# gnome-keyring (so keys go to a real Secret Service), runs the tests, and saves one
# screenshot per page to docs/screenshots/. Also runs the keyring unit test against that
# real Secret Service. Usage: scripts/ui-e2e.sh   (after scripts/install-test-deps.sh)
# E2E_FILTER="memory page" runs only the main suite's tests whose names match.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SHOTS=${SHOTS:-$ROOT/docs/screenshots}
SEED_DAYS=${SEED_DAYS:-21}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}

echo "== ui: unit tests and build"
[ -d ui/node_modules ] || (cd ui && npm ci --no-audit --no-fund --loglevel=error)
(cd ui && npx vitest run && npm run --silent build)

echo "== server: build"
cargo build --quiet --bin codex-free --example seed_usage --example mock_provider

TMP=$(mktemp -d /tmp/cf-ui-e2e.XXXXXX)
cleanup() { rm -rf "$TMP"; }
trap cleanup EXIT
export CODEX_FREE_HOME=$TMP/state PROJECT_DIR=$TMP/project
mkdir -p "$CODEX_FREE_HOME" "$PROJECT_DIR" "$TMP/home"
for i in $(seq 1 2000); do echo "line $i of big.txt"; done > "$PROJECT_DIR/big.txt"
# Memory files for the Memory page: MEMORY.md over its 150-line budget, a small summary,
# and one project's task memory in the layout src/memory writes.
mkdir -p "$CODEX_FREE_HOME/memories" "$CODEX_FREE_HOME/projects/project-e2e0000000000000"
# The folder is a git repository with two commits: a small accepted memory, then an
# over-budget one held for review (the memory test turns memories.review on), for the history, rollback, tidy
# and review tests. 30 rules + 150 dated progress lines = 180 lines; tidy moves the progress
# to daily/.
M=$CODEX_FREE_HOME/memories
git -C "$M" init -q
gitc() { git -C "$M" -c user.name=e2e -c user.email=e2e@localhost -c commit.gpgsign=false "$@"; }
printf '# Memory\n\n- rule 1: always use pnpm\n' > "$M/MEMORY.md"
printf 'v1\n## User Profile\n- e2e user\n## User preferences\n- summary 19 (accepted)\n## General Tips\n- verify CI live\n## What'"'"'s in Memory\n- MEMORY.md: rules\n' > "$M/memory_summary.md"
gitc add -A && gitc commit -qm "Initialize memory (accepted)"
ACCEPTED=$(git -C "$M" rev-parse HEAD)
{ for i in $(seq 1 30); do echo "- rule $i: always use pnpm in workspace $i"; done
  for i in $(seq 1 150); do echo "- 2026-11-2$((i % 10)): finished migration step $i"; done; } > "$M/MEMORY.md"
{ echo v1; echo "## User Profile"; echo "- summary 5"; echo "## User preferences"; echo "- summary 6"; echo "## General Tips"
  for i in $(seq 7 18); do echo "- summary $i"; done; echo "## What's in Memory"; echo "- summary 19"; } > "$M/memory_summary.md"
gitc add -A && gitc commit -qm "Consolidate memory: MEMORY.md, memory_summary.md updated (held)"
git -C "$M" update-ref refs/codex-free/review/accepted "$ACCEPTED"
git -C "$M" update-ref refs/codex-free/review/pending HEAD
cat > "$CODEX_FREE_HOME/projects/project-e2e0000000000000/memory.json" <<JSON
{"version":1,"projectRoot":"$PROJECT_DIR","notes":{"db":{"value":"use the e2e database","updatedAt":"2026-01-01T00:00:00Z"}},
 "plan":{"steps":[{"step":"write the browser tests","status":"in_progress"},{"step":"ship","status":"pending"}],"updatedAt":"2026-01-01T00:00:00Z"}}
JSON
echo "== seed: $("$TARGET/debug/examples/seed_usage" "$SEED_DAYS") runs over $SEED_DAYS days into state.sqlite"
# The agents' transcripts for the Usage page: copies of the real-CLI fixtures (Codex, Claude
# Code, pi, with duplicated rows, a resumed session and a side-chain), in agent homes of
# their own (the server imports from them; the test adds a live Codex session).
mkdir -p "$TMP/agents"
cp -r tests/data/usage/codex tests/data/usage/claude tests/data/usage/pi "$TMP/agents/"
export CODEX_HOME=$TMP/agents/codex CLAUDE_CONFIG_DIR=$TMP/agents/claude PI_CODING_AGENT_DIR=$TMP/agents/pi

# Everything below runs in a private session bus with an unlocked Secret Service, with
# HOME in the temp dir (gnome-keyring and chromium write there); keep the toolchain's homes.
export RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup} CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
export HOME=$TMP/home XDG_DATA_HOME=$TMP/home/.local/share XDG_CONFIG_HOME=$TMP/home/.config
export SHOTS SEED_DAYS ROOT TARGET
dbus-run-session -- bash -euo pipefail -c '
  echo -n e2e-keyring-password | gnome-keyring-daemon --unlock --components=secrets >/dev/null
  export KEYRING=secret-service CODEX_FREE_KEYRING=secret-service
  echo "== keyring: unit test against the real Secret Service"
  CODEX_FREE_TEST_SECRET_SERVICE=1 cargo test --quiet -p codex-free-secrets --lib keyring 2>&1 | tail -3
  echo "== first run: a fresh state home, no key, the mock provider as OpenAI (tests/ui/first_run.mjs)"
  FR=$CODEX_FREE_HOME/../first-run; mkdir -p "$FR/state" "$FR/project"
  "$TARGET/debug/examples/mock_provider" >"$FR/mock.out" 2>"$FR/mock.err" &
  mock=$!
  for _ in $(seq 1 100); do grep -q "^http" "$FR/mock.out" 2>/dev/null && break; sleep 0.1; done
  MOCK_URL=$(head -1 "$FR/mock.out")
  printf "{\"memories\":{\"providers\":{\"openai\":{\"base_url\":\"%s\"}}}}\n" "$MOCK_URL" >"$FR/state/codex.config.json"
  CODEX_FREE_HOME=$FR/state "$TARGET/debug/codex-free" serve --http --ui --project "$FR/project" --port 0 >"$FR/server.out" 2>"$FR/server.err" &
  frpid=$!
  for _ in $(seq 1 100); do grep -q "Press Ctrl-C" "$FR/server.out" 2>/dev/null && break; sleep 0.1; done
  FR_UI_URL=$(sed -n "s/^ *web UI: *//p" "$FR/server.out")
  [ -n "$FR_UI_URL" ] || { cat "$FR/server.out" "$FR/server.err"; exit 1; }
  FR_UI_URL=$FR_UI_URL FR_HOME=$FR/state node --test --test-reporter=spec "$ROOT/tests/ui/first_run.mjs" \
    || { echo "--- first-run server log"; tail -30 "$FR/server.err"; kill $frpid $mock; exit 1; }
  kill $frpid $mock; wait $frpid 2>/dev/null || true; wait $mock 2>/dev/null || true
  echo "== memory versions: a dual-write home serving v2, both folders (tests/ui/versions.mjs)"
  V2=$CODEX_FREE_HOME/../versions; mkdir -p "$V2/state/memories" "$V2/state/memories_v2/rollout_summaries" "$V2/project"
  printf "{\"memories\":{\"version\":\"v2\",\"dual_write\":true}}\n" >"$V2/state/codex.config.json"
  printf "v1\n## User Profile\n- v1 user\n## User preferences\n- pnpm\n## General Tips\n- verify CI\n## What'"'"'s in Memory\n- MEMORY.md: rules\n" >"$V2/state/memories/memory_summary.md"
  printf "# Memory\n\n- always pnpm\n" >"$V2/state/memories/MEMORY.md"
  printf "v1\n## User Profile\n- v2 user\n## User preferences\n- pnpm\n## General Tips\n- verify CI\n## What'"'"'s in Memory\n- rollout_summaries/: sessions\n" >"$V2/state/memories_v2/memory_summary.md"
  printf "The user asked to always use pnpm.\n" >"$V2/state/memories_v2/rollout_summaries/2026-01-01-pnpm.md"
  CODEX_FREE_HOME=$V2/state "$TARGET/debug/codex-free" serve --http --ui --project "$V2/project" --port 0 --no-pipeline >"$V2/server.out" 2>"$V2/server.err" &
  v2pid=$!
  for _ in $(seq 1 100); do grep -q "Press Ctrl-C" "$V2/server.out" 2>/dev/null && break; sleep 0.1; done
  V2_UI_URL=$(sed -n "s/^ *web UI: *//p" "$V2/server.out")
  [ -n "$V2_UI_URL" ] || { cat "$V2/server.out" "$V2/server.err"; kill $v2pid; exit 1; }
  V2_UI_URL=$V2_UI_URL V2_HOME=$V2/state node --test --test-reporter=spec "$ROOT/tests/ui/versions.mjs" \
    || { echo "--- memory-versions server log"; tail -30 "$V2/server.err"; kill $v2pid; exit 1; }
  kill $v2pid; wait $v2pid 2>/dev/null || true
  echo "== server: start (codex-free serve --http --ui, pipeline off so the seeded totals stay exact)"
  OUT=$CODEX_FREE_HOME/../server.out
  "$TARGET/debug/codex-free" serve --http --ui --project "$PROJECT_DIR" --port 0 --no-pipeline >"$OUT" 2>"$CODEX_FREE_HOME/../server.err" &
  pid=$!
  trap "kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true" EXIT
  for _ in $(seq 1 100); do grep -q "Press Ctrl-C" "$OUT" 2>/dev/null && break; sleep 0.1; done
  export UI_URL=$(sed -n "s/^ *web UI: *//p" "$OUT")
  export MCP_TOKEN=$(sed -n "s/^ *auth header: *Authorization: Bearer //p" "$OUT")
  export MCP_URL=${UI_URL%%/login*}/mcp
  [ -n "$UI_URL" ] && [ -n "$MCP_TOKEN" ] || { cat "$OUT" "$CODEX_FREE_HOME/../server.err"; exit 1; }
  curl -fsS "${UI_URL%%/login*}/health" >/dev/null
  echo "== browser tests against $(echo "$UI_URL" | sed "s/code=.*/code=…/")"
  node --test --test-reporter=spec ${E2E_FILTER:+--test-name-pattern="$E2E_FILTER"} "$ROOT/tests/ui/"
'
echo "== screenshots in $SHOTS"
ls "$SHOTS"
