#!/usr/bin/env bash
# The render farm's figures (issue 6), each the median of several rounds:
#
#  1. cornell: shared/data/scenes/cornell.json (tests/data/scenes/) at
#     400x400, 64 spp, max depth 5, 2 workers, run by atelier-render; the
#     wall time of the whole process (start-up, worker spawn, scene load,
#     BVH, render, PNG) and the camera paths per second over it. Target:
#     >= 5 M paths/s. The anchors measured go-progressive-raytracer at
#     1.01 M/s and Blender Cycles at 1.05 M/s whole-process on this box.
#  2. snowman: render_scene's default workload (snowman.json, 400x300, the
#     full 500 spp, max depth 8) through atelierd and the render plugin,
#     timed by the call's own render_time_ms and by the client. Target:
#     <= 10 s.
#  3. memory: the farm's peak total while 2 renders the snowman: the
#     proportional set size (PSS) of atelierd and its workers summed, so
#     that the shared framebuffers count once. Target: <= 200 MB.
#
#   bench/run-render.sh [BUILD_DIR] [ROUNDS]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-build}" && pwd)
rounds=${2:-5}
scenes=$top/tests/data/scenes
tmp=$(mktemp -d)
daemon_pid=
trap '[ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null; rm -rf "$tmp"' EXIT

now() { date +%s.%N; }
calc() { awk "BEGIN { print $* }"; }
median() { sort -n | awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
range() { sort -n | awk 'NR==1{lo=$1} {hi=$1} END{printf "%s-%s", lo, hi}'; }

# pss_peak ROOT_PID OUT: samples the PSS of ROOT_PID and its children every
# 50 ms until ROOT_PID's file $tmp/stop-sampling appears; writes the peak
# sum in kB to OUT.
pss_peak() {
  local root=$1 out=$2 peak=0 sum p
  while [ ! -e "$tmp/stop-sampling" ]; do
    sum=0
    for p in $root $(pgrep -P "$root" || true); do
      v=$(awk '/^Pss:/{print $2}' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)
      sum=$((sum + ${v:-0}))
    done
    [ "$sum" -gt "$peak" ] && peak=$sum
    sleep 0.05
  done
  echo "$peak" >"$out"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); rounds=$rounds"
"$build/atelier-render" --version

# --- 1. cornell, whole process --------------------------------------------
paths=$((400 * 400 * 64))
: >"$tmp/cornell"
"$build/atelier-render" "$scenes/cornell.json" -W 400 -H 400 -s 64 -d 5 \
  -j 2 -q -o "$tmp/cornell.png" >/dev/null # warm-up: page cache, CPU clocks
for r in $(seq "$rounds"); do
  t0=$(now)
  line=$("$build/atelier-render" "$scenes/cornell.json" -W 400 -H 400 -s 64 \
    -d 5 -j 2 -q -o "$tmp/cornell.png")
  t1=$(now)
  wall=$(calc "$t1 - $t0")
  mps=$(calc "$paths / $wall / 1000000")
  render=$(echo "$line" | sed -n 's/.*render \([0-9.]*\) s.*/\1/p')
  printf 'cornell round %d: whole process %.3f s = %.2f M paths/s (render alone %s s)\n' \
    "$r" "$wall" "$mps" "$render"
  printf '%s %s %s\n' "$wall" "$mps" "$render" >>"$tmp/cornell"
done

# --- 2 and 3. snowman through atelierd ------------------------------------
mkdir -p "$tmp/run" "$tmp/data"
printf '[render]\nworkers = 2\n[tools]\nlong_timeout_ms = 600000\n' >"$tmp/atelierd.conf"
"$build/atelierd" --foreground --config "$tmp/atelierd.conf" \
  --socket-dir "$tmp/run" --data-dir "$tmp/data" \
  --plugin-dir "$build/plugins/.libs" --log-level warn 2>"$tmp/daemon.log" &
daemon_pid=$!
ctl() { "$build/atelierctl" --socket-dir "$tmp/run" --timeout 600000 "$@"; }
for _ in $(seq 100); do ctl raw daemon.info >/dev/null 2>&1 && break; sleep 0.1; done
sid=$(ctl session new)
python3 -c 'import json,sys; print(json.dumps({"scene": json.load(open(sys.argv[1]))}))' \
  "$scenes/snowman.json" | ctl call "$sid" import_scene - >/dev/null
rm -f "$tmp/stop-sampling"
pss_peak "$daemon_pid" "$tmp/pss" &
sampler=$!
: >"$tmp/snowman"
for r in $(seq "$rounds"); do
  t0=$(now)
  out=$(ctl call "$sid" render_scene '{}')
  t1=$(now)
  wall=$(calc "$t1 - $t0")
  ms=$(echo "$out" | sed -n 's/.*"render_time_ms": \([0-9]*\).*/\1/p')
  spp=$(echo "$out" | sed -n 's/.*"samples_per_pixel": \([0-9]*\).*/\1/p')
  [ "$spp" = 500 ] || { echo "render_scene did not render up to 500 spp: $out"; exit 1; }
  printf 'snowman round %d: render_scene {} %.3f s at the client, render_time_ms %s\n' \
    "$r" "$wall" "$ms"
  printf '%s %s\n' "$wall" "$ms" >>"$tmp/snowman"
done
touch "$tmp/stop-sampling"
wait "$sampler"
kill "$daemon_pid"
wait "$daemon_pid" || true
daemon_pid=

echo
printf 'cornell 400x400 64 spp depth 5, 2 workers: whole process %s s (%s), %s M paths/s (%s); render alone %s s\n' \
  "$(cut -d' ' -f1 "$tmp/cornell" | median)" "$(cut -d' ' -f1 "$tmp/cornell" | range)" \
  "$(cut -d' ' -f2 "$tmp/cornell" | median | xargs printf '%.2f')" \
  "$(cut -d' ' -f2 "$tmp/cornell" | range | sed 's/\([0-9]*\.[0-9][0-9]\)[0-9]*/\1/g')" \
  "$(cut -d' ' -f3 "$tmp/cornell" | median)"
printf 'snowman render_scene {} (400x300, 500 spp, depth 8), 2 workers: %s ms render (%s), %s s at the client\n' \
  "$(cut -d' ' -f2 "$tmp/snowman" | median)" "$(cut -d' ' -f2 "$tmp/snowman" | range)" \
  "$(cut -d' ' -f1 "$tmp/snowman" | median | xargs printf '%.2f')"
printf 'farm memory (atelierd + 2 workers, PSS, peak while rendering): %.1f MB\n' \
  "$(calc "$(cat "$tmp/pss") / 1024")"
