#!/usr/bin/env bash
# The Rust tests again with the clock at 00:00:30 UTC on the first of next month (libfaketime),
# so a test that only passes at some times of day or month fails every run, not once a month.
# Day, month and (in December) year boundaries are where "today" and "this month" go wrong:
# data seeded "an hour ago" lands in yesterday. Runs the test binaries `cargo test` already
# built (no rebuild), each from its package directory as cargo would. Skipped: the one test
# that runs cargo inside the sandbox (cargo deadlocks under libfaketime; not our code).
# Usage: scripts/clock-tests.sh [YYYY-MM-DD HH:MM:SS]   (after `cargo test` built the tests)
set -euo pipefail
cd "$(dirname "$0")/.."
AT=${1:-"$(date -u -d "$(date -u +%Y-%m-01) +1 month" +%Y-%m-%d) 00:00:30"}
command -v faketime >/dev/null || { echo "faketime missing: run scripts/install-test-deps.sh" >&2; exit 1; }
LIST=$(mktemp)
trap 'rm -f "$LIST"' EXIT
cargo test --quiet --workspace --exclude codex-free-app --lib --tests --no-run --message-format=json |
  python3 -c '
import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(os.path.dirname(m["manifest_path"]) + "\t" + m["executable"])
' > "$LIST"
[ -s "$LIST" ] || { echo "no test binaries found" >&2; exit 1; }
echo "clock starts at $AT UTC (ticking); $(wc -l < "$LIST") test binaries"
fail=0
while IFS=$'\t' read -r dir exe; do
  echo "-- $(basename "$exe")"
  (cd "$dir" && TZ=UTC FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f "@$AT" "$exe" -q \
      --skip cargo_builds_a_crate_inside_the_project_with_a_warm_cache \
      --skip a_warm_cargo_build_with_registry_dependencies_works_offline) || fail=1
done < "$LIST"
exit $fail
