#!/usr/bin/env bash
# Proves the .deb's runtime dependencies on a clean system, and the .rpm's declared ones
# against what the binaries link:
#   1. a fresh Debian root from Debian's own packages (mmdebstrap, variant "apt": no -dev
#      package, no toolchain, nothing of this build machine), `apt-get install ./<deb>`
#      inside it (apt must resolve every Depends from the archive), then the installed
#      `codex-free --version`, and a headless `codex-free serve --stdio` MCP handshake
#      (initialize, tools/list) answered inside the clean root;
#   2. `rpm -qpR` of the .rpm against the shared libraries the two binaries need
#      (`objdump -p` NEEDED): every library outside glibc must be declared, by soname or by
#      a package the bundler names for it.
# Reason: CI installs the .deb on the build machine, which has every -dev package, so a
# missing Depends would never show there.
# Usage: scripts/package-clean-root.sh [DEB] [RPM]   (root; after scripts/package.sh)
#        SUITE=trixie scripts/package-clean-root.sh   another Debian release (default bookworm)
set -euo pipefail
cd "$(dirname "$0")/.."
DEB=${1:-$(ls -t target/release/bundle/deb/*.deb | head -1)}
RPM=${2:-$(ls -t target/release/bundle/rpm/*.rpm | head -1)}
SUITE=${SUITE:-bookworm}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
[ "$(id -u)" -eq 0 ] || { echo "run as root (mmdebstrap --mode=root, chroot)"; exit 2; }
need=()
for pair in mmdebstrap:mmdebstrap rpm:rpm rpm2cpio:rpm2cpio cpio:cpio objdump:binutils; do
  command -v "${pair%%:*}" >/dev/null || need+=("${pair##*:}")
done
[ ${#need[@]} -eq 0 ] || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null

echo "== clean $SUITE root: install $(basename "$DEB") with apt (every Depends from the archive)"
ROOTFS=$(mktemp -d /tmp/codex-free-clean-root.XXXXXX)
trap 'rm -rf "$ROOTFS"' EXIT
ROOTDIR=$ROOTFS/root
# The handshake a new user's MCP client makes: initialize, initialized, tools/list.
HANDSHAKE='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"clean-root","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
t0=$(date +%s)
mmdebstrap --quiet --variant=apt --mode=root --format=directory \
  --customize-hook='mkdir -p "$1/tmp/pkg"' \
  --customize-hook="copy-in '$DEB' /tmp/pkg" \
  --chrooted-customize-hook='DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /tmp/pkg/*.deb >/dev/null' \
  --chrooted-customize-hook='codex-free --version' \
  --chrooted-customize-hook="mkdir -p /tmp/home /tmp/proj && printf '%s\n' '$HANDSHAKE' | (cat; sleep 5) | HOME=/tmp/home CODEX_FREE_HOME=/tmp/home/.codex-free timeout 30 codex-free serve --stdio --project /tmp/proj > /root/handshake.out 2>/root/handshake.err || true" \
  "$SUITE" "$ROOTDIR" "deb $MIRROR $SUITE main" \
  || { echo "FAIL: the .deb does not install or start on a clean $SUITE root"; exit 1; }
OUT=$ROOTDIR/root/handshake.out
ERR=$ROOTDIR/root/handshake.err
grep -q '"serverInfo"' "$OUT" && grep -q '"name":"read_file"' "$OUT" || {
  echo "FAIL: no MCP handshake from the installed codex-free serve --stdio in the clean root"
  echo "-- stdout"; head -c 2000 "$OUT"; echo; echo "-- stderr"; tail -20 "$ERR"; exit 1; }
echo "   installed and answered initialize + tools/list ($(grep -o '"name":"[a-z_]*"' "$OUT" | wc -l) names) in $(( $(date +%s) - t0 )) s"

echo "== rpm: declared requirements cover what the binaries link"
work=$(mktemp -d)
RPM_ABS=$(readlink -f "$RPM")
# Debian's rpm2cpio exits 1 after writing the whole archive: judge by what was extracted.
(cd "$work" && { rpm2cpio "$RPM_ABS" || true; } | cpio -idm --quiet)
[ -x "$work/usr/bin/codex-free" ] && [ -x "$work/usr/bin/codex-free-app" ] || {
  echo "FAIL: the .rpm does not hold /usr/bin/codex-free and /usr/bin/codex-free-app"; exit 1; }
requires=$(rpm -qpR "$RPM")
# What the declared libraries bring along (their own dependencies, from this machine's
# copies): a library our binaries need must be declared or come with a declared one.
covered=""
for so in $(grep -oE '^lib[^()]+\.so[^()]*' <<<"$requires"); do
  # No early `exit` in awk: ldconfig would die of SIGPIPE and pipefail fail the script (141).
  path=$(ldconfig -p | awk -v so="$so" '$1 == so && !found {print $NF; found = 1}')
  [ -n "$path" ] || { echo "FAIL: the rpm requires $so, which this build machine does not have"; exit 1; }
  covered+=" $so $(ldd "$path" | awk '{print $1}' | tr '\n' ' ')"
done
missing=0; needed=0
for bin in "$work"/usr/bin/*; do
  for lib in $(objdump -p "$bin" | awk '/NEEDED/ {print $2}'); do
    needed=$((needed + 1))
    case "$lib" in
      # glibc, the loader and libgcc: on every system the rpm can install on.
      libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*|libgcc_s.so.*|libutil.so.*) continue ;;
    esac
    grep -qwF "$lib" <<<"$covered" && continue
    echo "   $(basename "$bin") needs $lib: neither declared by the rpm nor brought by a declared library"
    missing=$((missing + 1))
  done
done
rm -rf "$work"
echo "   rpm -qpR: $(grep -c '\.so' <<<"$requires") libraries declared; $needed NEEDED entries of the binaries checked"
[ $missing -eq 0 ] || { echo "FAIL: $missing linked libraries are not covered by the rpm's requirements"; exit 1; }
echo "== clean-root package check: ok"
