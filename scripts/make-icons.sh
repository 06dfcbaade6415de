#!/usr/bin/env bash
# Regenerate icons/ with ImageMagick (Debian package `imagemagick`): the app icon (a dark
# rounded square with a bracket-and-spark mark) and three 32x32/64x64 tray icons whose dot
# colour gives the server state: running (green), stopped (grey), error (red).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p icons
FONT=DejaVu-Sans-Bold

app() { # size out
  local s=$1 out=$2 r=$(( $1 / 6 )) m=$(( $1 / 16 ))
  convert -size "${s}x${s}" xc:none \
    -fill '#1f2937' -draw "roundrectangle $m,$m $((s-m-1)),$((s-m-1)) $r,$r" \
    -fill '#f9fafb' -font "$FONT" -pointsize $(( s * 46 / 100 )) -gravity center \
    -annotate +0-$(( s / 20 )) '{ }' \
    -fill '#34d399' -draw "circle $((s*72/100)),$((s*72/100)) $((s*72/100 + s/10)),$((s*72/100))" \
    -depth 8 "PNG32:$out"
}
tray() { # size colour out
  local s=$1 c=$2 out=$3
  convert -size "${s}x${s}" xc:none \
    -fill '#374151' -draw "roundrectangle 1,1 $((s-2)),$((s-2)) $((s/5)),$((s/5))" \
    -fill '#f9fafb' -font "$FONT" -pointsize $(( s * 50 / 100 )) -gravity center \
    -annotate +0-$(( s / 12 )) '{}' \
    -fill "$c" -stroke '#111827' -strokewidth $(( s / 32 + 1 )) \
    -draw "circle $((s*70/100)),$((s*70/100)) $((s*70/100 + s*17/100)),$((s*70/100))" \
    -depth 8 "PNG32:$out"
}

app 512 icons/icon.png
app 128 icons/128x128.png
app 32 icons/32x32.png
for st in running:'#22c55e' stopped:'#9ca3af' error:'#ef4444'; do
  name=${st%%:*} col=${st#*:}
  tray 32 "$col" "icons/tray-$name.png"
  tray 64 "$col" "icons/tray-$name@2x.png"
done
ls -l icons
