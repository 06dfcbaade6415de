#!/usr/bin/env bash
# Build times of the CLI at several commits, side by side, in one run: for each commit a
# clean `cargo build --release -p codex-free` in a fresh worktree and target, then the
# rebuild after appending a comment to the tools' `fs.rs` (the edit a tools change costs).
# Run it on an idle machine: it measures wall time. Needs ~2 GB of disk per commit.
# Usage: scripts/bench-build.sh [REV ...]
#   default: the last single-crate commit, the workspace split, and HEAD.
set -euo pipefail
cd "$(dirname "$0")/.."
split=$(git log --format=%h --grep '^Workspace: split the single crate' -1)
revs=("$@")
if [ ${#revs[@]} -eq 0 ]; then
  revs=("$split^" "$split" HEAD)
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-build.XXXXXX")
trap 'for w in "$work"/wt-*; do git worktree remove --force "$w" 2>/dev/null || true; done; rm -rf "$work"' EXIT
# `time` reports wall and CPU (user + sys) seconds of the build; on a shared or virtual
# machine the CPU figure is the steadier one (other tenants inflate only the wall time).
TIMEFORMAT='%R %U %S'
timed() { { time "$@" >/dev/null 2>>"$work/cargo.log"; } 2>&1 | tail -1; }
rows=()
for i in "${!revs[@]}"; do
  rev=${revs[$i]}
  wt="$work/wt-$i"
  git worktree add --detach --quiet "$wt" "$rev"
  (
    cd "$wt"
    export CARGO_TARGET_DIR="$work/target-$i"
    cargo fetch --quiet
    read -r cr cu cs < <(timed cargo build --release -p codex-free)
    [ -x "$CARGO_TARGET_DIR/release/codex-free" ] || { echo "build of $rev failed: $(tail -5 "$work/cargo.log")" >&2; exit 1; }
    f=crates/tools/src/fs.rs; [ -f "$f" ] || f=src/tools/fs.rs
    echo "// bench-build" >> "$f"
    : > "$work/cargo.log"
    read -r er eu es < <(timed cargo build --release -p codex-free)
    grep -q "Finished" "$work/cargo.log" || { echo "rebuild of $rev failed: $(tail -5 "$work/cargo.log")" >&2; exit 1; }
    crates=$(grep -c Compiling "$work/cargo.log" || true)
    lines=$(git ls-files '*.rs' | grep -E '^(src|crates/[^/]+/src)/' | xargs cat | wc -l)
    printf '%-10s %-9s %10s %9.0f %9.0f %12.0f %12.0f %8s\n' "$rev" "$(git rev-parse --short HEAD)" "$lines" \
      "$cr" "$(echo "$cu + $cs" | bc)" "$er" "$(echo "$eu + $es" | bc)" "$crates" > "$work/row-$i"
  )
  [ -f "$work/row-$i" ] || exit 1
  rows+=("$(cat "$work/row-$i")")
  rm -rf "$work/target-$i"
done
printf '%-10s %-9s %10s %9s %9s %12s %12s %8s\n' rev commit "rust lines" "clean s" "clean cpu" "after edit s" "edit cpu" "rebuilt"
printf '%s\n' "${rows[@]}"
echo "(clean: cargo build --release -p codex-free from an empty target; after edit: the same after touching the tools' fs.rs; s = wall seconds, cpu = user + sys seconds; rebuilt: crates recompiled)"
