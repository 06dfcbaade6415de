#!/usr/bin/env bash
# Installs every system package, Python module and npm module the build and the tests
# need, on Debian/Ubuntu. Idempotent. Run as root (or with sudo available).
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
APT_PKGS=(
  build-essential pkg-config git python3 python3-pip
  ripgrep            # the reference in the grep benchmark
  time               # /usr/bin/time -v for RSS comparisons
)
missing=()
for p in "${APT_PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The independent MCP client used by the integration tests (official Python SDK).
python3 -c 'import mcp' 2>/dev/null || python3 -m pip install -q --root-user-action=ignore mcp
