#!/usr/bin/env bash
# Render quality per second (issue 20): Blender Cycles and atelier-render on
# the empty Cornell box, one machine, one run, each image's RMSE against
# Cycles' converged 1024-spp reference (tests/data/cycles_cornell_empty_1024.pfm,
# over every pixel and channel, by bench/pfm-rmse).
#
#  1. Cycles through ../shared/anchors/bench/cycles_cornell.py with SPP=64
#     NO_SPHERES=1 BOUNCES=4 PFM=1 THREADS=2 (no denoiser, no adaptive
#     sampling): the whole process's wall time and its RMSE.
#  2. atelier-render (400x400, depth 5, 2 workers) at 64, 256 and 512 spp,
#     and at Cycles' wall time (--max-seconds set to Cycles' whole-process
#     wall time: our process then runs a little longer, its start-up and
#     the units in flight, which the table shows): wall time and RMSE.
#  3. A denoised 16-spp image (--denoise) against the undenoised 256-spp one.
#
# Each figure is the median of ROUNDS runs (default 3): these machines are
# shared and noisy. Blender is a Debian package; this script installs it
# when it is missing (apt-get, as root), never the build.
#
#   bench/run-render-quality.sh [BUILD_DIR] [ROUNDS]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-build}" && pwd)
rounds=${2:-3}
scene=$top/tests/data/scenes/cornell-empty.json
ref=$top/tests/data/cycles_cornell_empty_1024.pfm
cycles_py=${CYCLES_PY:-$top/../shared/anchors/bench/cycles_cornell.py}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$top/bench/need-blender.sh"
[ -f "$cycles_py" ] || { echo "no $cycles_py (set CYCLES_PY)"; exit 1; }

now() { date +%s.%N; }
calc() { awk "BEGIN { print $* }"; }
median() { sort -n | awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
rmse() { "$build/bench/pfm-rmse" "$ref" "$1" | cut -d' ' -f1; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); rounds=$rounds"
echo "blender: $(blender --version 2>/dev/null | head -1)"
"$build/atelier-render" --version

# row NAME CMD...: runs CMD (which writes $tmp/out.pfm) ROUNDS times and
# records "NAME wall rmse extra" with the medians; extra is the last run's
# summary line from atelier-render (samples, noise), if any.
rows=$tmp/rows
: >"$rows"
row() {
  local name=$1
  shift
  : >"$tmp/walls"
  : >"$tmp/rmses"
  local line=
  for _ in $(seq "$rounds"); do
    rm -f "$tmp/out.pfm"
    local t0 t1
    t0=$(now)
    line=$("$@" 2>&1 | tail -1)
    t1=$(now)
    calc "$t1 - $t0" >>"$tmp/walls"
    rmse "$tmp/out.pfm" >>"$tmp/rmses"
  done
  printf '%s|%s|%s|%s\n' "$name" "$(median <"$tmp/walls")" "$(median <"$tmp/rmses")" "$line" >>"$rows"
  printf '%-44s wall %6.2f s  RMSE %s\n' "$name" "$(median <"$tmp/walls")" "$(median <"$tmp/rmses")"
}

# --- 1. Cycles ---------------------------------------------------------------
cycles() {
  (cd "$tmp" && SPP=64 NO_SPHERES=1 BOUNCES=4 PFM=1 THREADS=2 OUT="$tmp/out" \
    blender -b --factory-startup -P "$cycles_py" >"$tmp/blender.log" 2>&1)
}
row "Cycles 64 spp (2 threads, max_bounces 4)" cycles
cycles_wall=$(awk -F'|' 'NR==1{print $2}' "$rows")

# --- 2. atelier-render ---------------------------------------------------------
ar() { "$build/atelier-render" "$scene" -W 400 -H 400 -d 5 -j 2 -q --pfm "$tmp/out.pfm" "$@"; }
for spp in 64 256 512; do
  row "atelier-render $spp spp" ar -s "$spp"
done
row "atelier-render at Cycles' wall time" ar -s 65536 --max-seconds "$cycles_wall"
row "atelier-render 16 spp, denoised" ar -s 16 --denoise

echo
echo "| renderer | wall (median of $rounds) | RMSE | atelier-render's summary |"
echo "|---|---|---|---|"
while IFS='|' read -r name wall err line; do
  summary=$(echo "$line" | sed -n 's/^[^:]*: //p')
  printf '| %s | %.2f s | %s | %s |\n' "$name" "$wall" "$err" "${summary:-}"
done <"$rows"
cy=$(awk -F'|' 'NR==1{print $3}' "$rows")
eq=$(awk -F'|' '/Cycles'"'"' wall time/{print $3}' "$rows")
echo
printf 'at Cycles'"'"' wall time: RMSE %s against Cycles'"'"' %s: %.2f x (target <= 0.5 x)\n' \
  "$eq" "$cy" "$(calc "$eq / $cy")"
