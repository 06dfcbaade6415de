#!/usr/bin/env bash
# Asserts the workspace's layering (no build needed), and fails with one line per violation:
# 1. each outside system is a normal dependency of exactly its one owning crate (from
#    `cargo metadata`; dev-dependencies are excepted: tests may reach anything);
# 2. the allowed edges between the workspace's own crates (store below pipeline and server,
#    tools below MCP and SQLite, nothing below core, …);
# 3. no cycle between the top-level modules of any crate (`crate::a` used in `b` and
#    `crate::b` in `a`, also through longer loops; test modules and comments are not read);
# 4. no library crate holds more than 30 % of the workspace's non-test library lines
#    (a crate that big owns several concepts and should be split).
# `scripts/check-layers.sh --selftest` plants one violation of each kind in a scratch copy
# and shows that each is caught.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--selftest" ]; then
  fail=0
  # plant <what> <expected pattern> <shell commands run inside a fresh copy of the tree>
  plant() {
    local scratch out; scratch=$(mktemp -d)
    git ls-files -z | xargs -0 cp --parents -t "$scratch"
    out=$( (cd "$scratch" && eval "$3" && bash scripts/check-layers.sh 2>&1) || true)
    rm -rf "$scratch"
    if grep -q "$2" <<<"$out"; then echo "selftest: $1 caught: $(grep "$2" <<<"$out" | head -1)"
    else echo "selftest: $1 NOT caught: $out"; fail=1; fi
  }
  before_tests() { # file line: insert the line before the file's test module
    python3 - "$1" "$2" <<'PY'
import sys
p, line = sys.argv[1], sys.argv[2]
t = open(p).read(); i = t.find("#[cfg(test)]")
open(p, "w").write(t[:i] + line + "\n" + t[i:] if i >= 0 else t + "\n" + line + "\n")
PY
  }
  plant "second owner of an outside system" "git2: normal dependency of" \
    "sed -i 's/^\[dependencies\]$/[dependencies]\ngit2.workspace = true/' crates/tools/Cargo.toml"
  plant "forbidden edge between crates" "codex-free-store must not depend on" \
    "sed -i 's|^\[dependencies\]$|[dependencies]\ncodex-free-pipeline = { path = \"../pipeline\" }|' crates/store/Cargo.toml"
  plant "module cycle" "module cycle in codex-free-core" \
    "before_tests crates/core/src/audit.rs 'pub fn planted_a() { crate::paging::planted_b() }' && before_tests crates/core/src/paging.rs 'pub fn planted_b() { crate::audit::planted_a() }'"
  plant "god crate" "holds .* of the workspace" \
    "python3 -c 'print(\"\\n\".join(f\"pub const P{i}: u32 = {i};\" for i in range(60000)))' > crates/tools/src/planted.rs && echo 'pub mod planted;' >> crates/tools/src/lib.rs"
  exit $fail
fi
cargo metadata --format-version 1 --no-deps | python3 -c '
import json, os, re, sys
meta = json.load(sys.stdin)
ws = {p["name"]: p for p in meta["packages"]}
def normal_deps(p):
    return {d["name"] for d in p["dependencies"] if d.get("kind") is None}
# outside system -> the one crate allowed to import it (None: anyone may)
OWNER = {
    "rusqlite": "codex-free-store",
    "rmcp": "codex-free-server",
    "axum": "codex-free-server",
    "rust-embed": "codex-free-server",
    "tauri": "codex-free-app",
    "genai": "codex-free-models",
    "reqwest": "codex-free-models",
    "notify": "codex-free-transcripts",
    "notify-debouncer-full": "codex-free-transcripts",
    "git2": "codex-free-memory",
    "toml_edit": "codex-free-connect",
    "similar": "codex-free-connect",
    "tree-sitter": "codex-free-tools",
    "tree-sitter-bash": "codex-free-tools",
    "landlock": "codex-free-tools",
    "seccompiler": "codex-free-tools",
    "grep-regex": "codex-free-tools",
    "grep-searcher": "codex-free-tools",
    "keyring-core": "codex-free-secrets",
    "zbus-secret-service-keyring-store": "codex-free-secrets",
    "linux-keyutils-keyring-store": "codex-free-secrets",
    "apple-native-keyring-store": "codex-free-secrets",
    "windows-native-keyring-store": "codex-free-secrets",
}
LIBS_BELOW_ALL = {"codex-free-core"}
FORBIDDEN = {
    "codex-free-core": {n for n in ws if n.startswith("codex-free") and n != "codex-free-core"},
    "codex-free-redact": {n for n in ws if n.startswith("codex-free") and n != "codex-free-redact"},
    "codex-free-secrets": {"codex-free-tools", "codex-free-store", "codex-free-pipeline", "codex-free-server", "codex-free-models", "codex-free-memory"},
    "codex-free-tools": {"codex-free-store", "codex-free-pipeline", "codex-free-server", "codex-free-memory", "codex-free-models", "codex-free-task-memory", "rmcp", "rusqlite"},
    "codex-free-task-memory": {"codex-free-tools", "codex-free-store", "codex-free-pipeline", "codex-free-server", "codex-free-connect", "codex-free-memory"},
    "codex-free-store": {"codex-free-pipeline", "codex-free-server", "codex-free-tools", "codex-free-models", "codex-free-memory"},
    "codex-free-transcripts": {"codex-free-pipeline", "codex-free-server", "codex-free-memory", "codex-free-models", "codex-free-store"},
    "codex-free-models": {"codex-free-pipeline", "codex-free-server", "codex-free-memory", "codex-free-transcripts"},
    "codex-free-memory": {"codex-free-pipeline", "codex-free-server", "codex-free-hygiene", "codex-free-connect", "codex-free-models"},
    "codex-free-hygiene": {"codex-free-pipeline", "codex-free-server", "codex-free-connect"},
    "codex-free-connect": {"codex-free-pipeline", "codex-free-server"},
    "codex-free-agent-usage": {"codex-free-pipeline", "codex-free-server", "codex-free-memory"},
    "codex-free-pipeline": {"codex-free-server", "rmcp"},
}
# Crates only ever used as dev-dependencies (the mock provider): what they import is test
# tooling, so they are not owners; no crate may depend on them normally.
DEV_ONLY = {"codex-free-testkit"}
bad = []
for n, p in ws.items():
    hit = sorted(normal_deps(p) & DEV_ONLY)
    if hit:
        bad.append(f"{n}: {hit} is dev-only and must not be a normal dependency")
for dep, owner in OWNER.items():
    users = sorted(n for n, p in ws.items() if dep in normal_deps(p) and n not in DEV_ONLY)
    if users and users != [owner]:
        bad.append(f"{dep}: normal dependency of {users}, allowed only in {owner}")
for crate, banned in FORBIDDEN.items():
    if crate not in ws:
        bad.append(f"{crate}: missing from the workspace")
        continue
    hit = sorted(normal_deps(ws[crate]) & banned)
    if hit:
        bad.append(f"{crate} must not depend on {hit}")

# Non-test source of a file: comments dropped, the trailing `#[cfg(test)] mod …` cut off.
def source(path):
    out = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for i, l in enumerate(lines):
        s = l.strip()
        if s.startswith("#[cfg(test)]") and i + 1 < len(lines) and re.match(r"\s*(pub(\(crate\))? )?mod \w+", lines[i + 1]):
            break
        if s.startswith("//"):
            continue
        out.append(l)
    return out

libs = {}
for name, p in ws.items():
    for t in p["targets"]:
        if "lib" in t["kind"]:
            libs[name] = os.path.dirname(t["src_path"])
lines = {}
for name, src in libs.items():
    mods = {}
    for dirpath, _, files in os.walk(src):
        for fn in files:
            if not fn.endswith(".rs") or fn == "tests.rs" or "/tests" in dirpath[len(src):]:
                continue
            full = os.path.join(dirpath, fn)
            rel = os.path.relpath(full, src)
            top = rel.split(os.sep)[0]
            top = top[:-3] if top.endswith(".rs") else top
            body = source(full)
            mods.setdefault(top, []).append((rel, body))
    lines[name] = sum(len(b) for fs in mods.values() for _, b in fs)
    tops = {m for m in mods if m not in ("lib", "main")}
    edges = {m: set() for m in tops}
    for m, fs in mods.items():
        if m not in tops:
            continue
        for rel, body in fs:
            text = "\n".join(body)
            refs = set(re.findall(r"\bcrate::(\w+)", text))
            if os.sep not in rel:  # a top-level file: super:: is the crate root
                refs |= set(re.findall(r"\bsuper::(\w+)", text))
            for r in refs:
                if r in tops and r != m:
                    edges[m].add(r)
    # strongly connected components (Tarjan)
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]
    def strong(v):
        index[v] = low[v] = counter[0]; counter[0] += 1
        stack.append(v); on.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))
    for v in sorted(tops):
        if v not in index:
            strong(v)
    for c in comps:
        detail = "; ".join(f"{a} -> {b}" for a in c for b in sorted(edges[a]) if b in c)
        bad.append(f"module cycle in {name}: {detail}")
total = sum(lines.values())
for name, n in sorted(lines.items()):
    if total and n / total > 0.30:
        bad.append(f"{name} holds {n} of the workspace'"'"'s {total} non-test library lines ({100*n/total:.0f} % > 30 %)")
for b in bad:
    print("layer violation:", b)
if bad:
    sys.exit(1)
biggest = max(lines, key=lines.get)
print(f"layers ok: {len(libs)} library crates; each outside system owned by one crate; no module cycles; largest {biggest} {100*lines[biggest]/total:.0f} % of {total} library lines")
'
