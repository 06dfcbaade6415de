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
now() { date +%s.%N; }
rows=()
for i in "${!revs[@]}"; do
  rev=${revs[$i]}
  wt="$work/wt-$i"
  git worktree add --detach --quiet "$wt" "$rev"
  (
    cd "$wt"
    export CARGO_TARGET_DIR="$work/target-$i"
    cargo fetch --quiet
    t0=$(now); cargo build --release --quiet -p codex-free; t1=$(now)
    f=crates/tools/src/fs.rs; [ -f "$f" ] || f=src/tools/fs.rs
    echo "// bench-build" >> "$f"
    t2=$(now); cargo build --release -p codex-free 2>"$work/incr-$i.log"; t3=$(now)
    crates=$(grep -c Compiling "$work/incr-$i.log" || true)
    lines=$(git ls-files '*.rs' | grep -E '^(src|crates/[^/]+/src)/' | xargs cat | wc -l)
    printf '%-10s %-9s %10s %12.0f %14.0f %9s\n' "$rev" "$(git rev-parse --short HEAD)" "$lines" \
      "$(echo "$t1 - $t0" | bc)" "$(echo "$t3 - $t2" | bc)" "$crates" > "$work/row-$i"
  )
  rows+=("$(cat "$work/row-$i")")
  rm -rf "$work/target-$i"
done
printf '%-10s %-9s %10s %12s %14s %9s\n' rev commit "rust lines" "clean s" "after edit s" "rebuilt"
printf '%s\n' "${rows[@]}"
echo "(clean: cargo build --release -p codex-free from an empty target; after edit: the same after touching the tools' fs.rs; rebuilt: crates recompiled)"
