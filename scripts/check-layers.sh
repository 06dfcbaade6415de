#!/usr/bin/env bash
# Asserts the workspace's layering from `cargo metadata` (no build needed):
# - each outside system is a normal dependency of exactly one workspace crate;
# - the store depends on neither the pipeline nor the server, the pipeline not on the server,
#   and the tools crate on neither the store nor MCP;
# - at least five library crates.
# Exit status 1 with one line per violation.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo metadata --format-version 1 --no-deps | python3 -c '
import json, sys
meta = json.load(sys.stdin)
ws = {p["name"]: p for p in meta["packages"]}
def normal_deps(p):
    return {d["name"] for d in p["dependencies"] if d.get("kind") is None}
# outside system -> the one crate allowed to import it
OWNER = {
    "rusqlite": "codex-free-store",
    "rmcp": "codex-free-server",
    "tauri": "codex-free-app",
    "genai": "codex-free-pipeline",
    "tree-sitter": "codex-free-tools",
    "keyring-core": "codex-free-secrets",
    "zbus-secret-service-keyring-store": "codex-free-secrets",
    "linux-keyutils-keyring-store": "codex-free-secrets",
    "apple-native-keyring-store": "codex-free-secrets",
    "windows-native-keyring-store": "codex-free-secrets",
}
FORBIDDEN = {
    "codex-free-core": {"codex-free-secrets", "codex-free-tools", "codex-free-store", "codex-free-pipeline", "codex-free-server"},
    "codex-free-secrets": {"codex-free-tools", "codex-free-store", "codex-free-pipeline", "codex-free-server"},
    "codex-free-tools": {"codex-free-store", "codex-free-pipeline", "codex-free-server", "rmcp", "rusqlite"},
    "codex-free-store": {"codex-free-pipeline", "codex-free-server", "codex-free-tools"},
    "codex-free-pipeline": {"codex-free-server", "rmcp"},
}
bad = []
for dep, owner in OWNER.items():
    if owner is None:
        continue
    users = sorted(n for n, p in ws.items() if dep in normal_deps(p))
    if users and users != [owner]:
        bad.append(f"{dep}: normal dependency of {users}, allowed only in {owner}")
for crate, banned in FORBIDDEN.items():
    if crate not in ws:
        bad.append(f"{crate}: missing from the workspace")
        continue
    hit = sorted(normal_deps(ws[crate]) & banned)
    if hit:
        bad.append(f"{crate} must not depend on {hit}")
libs = [n for n, p in ws.items() if any("lib" in t["kind"] for t in p["targets"])]
if len(libs) < 5:
    bad.append(f"only {len(libs)} library crates: {libs}")
for b in bad:
    print("layer violation:", b)
if bad:
    sys.exit(1)
print(f"layers ok: {len(libs)} library crates; each outside system owned by one crate")
'
