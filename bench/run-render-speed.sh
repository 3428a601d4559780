#!/usr/bin/env bash
# Issue 20's speed guard: camera paths per second, whole process, against
# Blender Cycles and against another build of Atelier (the one before a
# change), on the issue's Cornell box (cornell.json, with its spheres,
# 400x400, 64 spp, max depth 5, 2 workers / 2 threads). Each round runs
# Cycles once (the anchors' cycles_cornell.py, SPP=64 BOUNCES=4
# MIN_LIGHT_BOUNCES=4 THREADS=2), then three times each, interleaved:
# the other build (if given), this build with the AVX2 kernel
# (ATELIER_RENDER_KERNEL=default) and this build with the kernel it
# chooses (AVX-512 where the CPU has it). Prints the medians, the ratios
# to Cycles, and the median of the per-round ratios to the other build.
#
#   bench/run-render-speed.sh [BUILD_DIR] [ROUNDS] [OTHER_BUILD_DIR]
#
# Installs Debian's blender if it is missing (never in the build).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-build}" && pwd)
rounds=${2:-3}
other=${3:-}
[ -z "$other" ] || other=$(cd "$other" && pwd)
cycles_py=${CYCLES_PY:-$top/../shared/anchors/bench/cycles_cornell.py}
scene=$top/tests/data/scenes/cornell.json

"$top/bench/need-blender.sh"
[ -f "$cycles_py" ] || { echo "no $cycles_py (set CYCLES_PY)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/atelier-speed.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

now() { date +%s.%N; }
median() { sort -n | awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); rounds=$rounds"
echo "blender: $(blender --version 2>/dev/null | head -1)"
"$build/atelier-render" --version
builds="avx2 chosen"
[ -z "$other" ] || builds="other $builds"

# one NAME: runs one render of the build NAME, prints its wall time.
one() {
  local bin=$build/atelier-render kernel=
  case $1 in
    other) bin=$other/atelier-render ;;
    avx2) kernel=default ;;
  esac
  local t0 t1
  t0=$(now)
  ATELIER_RENDER_KERNEL=$kernel "$bin" "$scene" -o "$tmp/out.png" -W 400 -H 400 \
    -s 64 -d 5 -j 2 -q >/dev/null 2>&1 || { echo "$bin failed" >&2; exit 1; }
  t1=$(now)
  awk "BEGIN { print $t1 - $t0 }"
}

for r in $(seq "$rounds"); do
  t0=$(now)
  (cd "$tmp" && SPP=64 BOUNCES=4 MIN_LIGHT_BOUNCES=4 THREADS=2 OUT="$tmp/cycles" \
    blender -b --factory-startup -P "$cycles_py" >"$tmp/blender.log" 2>&1)
  t1=$(now)
  awk "BEGIN { print $t1 - $t0 }" >>"$tmp/cycles"
  for _ in 1 2 3; do
    for b in $builds; do one "$b" >>"$tmp/$b"; done
  done
  echo "round $r: cycles $(tail -1 "$tmp/cycles") s; $(for b in $builds; do printf '%s %s s ' "$b" "$(tail -1 "$tmp/$b")"; done)"
done

cy=$(median <"$tmp/cycles")
echo
echo "| build | wall (median of $((rounds * 3))) | x Cycles ($cy s) | paths/s against the other build |"
echo "|---|---|---|---|"
for b in $builds; do
  m=$(median <"$tmp/$b")
  rel=
  if [ -n "$other" ]; then
    rel=$(paste "$tmp/other" "$tmp/$b" | awk '{print $1 / $2}' | median)
  fi
  echo "| $b | $m s | $(awk "BEGIN { printf \"%.1f\", $cy / $m }") x | $rel |"
done
