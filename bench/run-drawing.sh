#!/usr/bin/env bash
# The drawing plugin's figures (issue 18), side by side with the peers a
# user would otherwise use on the same strokes:
#
#  1. the SVG path parser: MB/s of path data (target >= 200 MB/s);
#  2. view_canvas of 10,000 mixed paths, drawn from nothing and encoded
#     (target <= 50 ms), against Pillow's ImageDraw (Code Monet's
#     rasteriser, two ways) and rsvg-convert on the same canvas;
#  3. through a real atelierd: draw_paths of 1,000 paths (target p50 <=
#     30 ms), a canvas grown to 50,000 strokes (each call <= 100 ms, RSS
#     growth <= 100 MB), view_canvas warm and cold, and generate_svg's
#     round trip for a 1,000-path spiral (target <= 300 ms).
#
#   bench/run-drawing.sh [BUILD_DIR] [ROUNDS]
#
# Needs python3-pil and librsvg2-bin (./bootstrap deps installs them).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-build}" && pwd)
rounds=${2:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -n | awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); rounds=$rounds"
"$build/bench/drawing-core" "$rounds" "$tmp"

# Debian's python3 (python3-pil), whatever python3 comes first in PATH.
/usr/bin/python3 "$top/bench/drawing-pillow.py" "$tmp/canvas-polylines.json" "$rounds"

for _ in $(seq "$rounds"); do
  s=$(date +%s%N)
  rsvg-convert -o "$tmp/rsvg.png" "$tmp/canvas.svg"
  echo $((($(date +%s%N) - s) / 1000000))
done | median | sed 's/^/rsvg-convert (whole process, canvas.svg to PNG), 10,000 paths, median ms: /'

python3 "$top/bench/drawing-daemon.py" "$build" "$rounds"
