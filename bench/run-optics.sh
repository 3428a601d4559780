#!/usr/bin/env bash
# The optics simulator's figures (issue 7), each the median of several
# rounds:
#
#  1. conformance: all 87 scenes of Ray Optics Simulation's CSV tests
#     (_derived/csv-scenes-index.csv; 60 have their expected CSV here, the
#     27 held back have their scene files), each simulated by its own
#     atelier-optics process with --csv, timed from the shell around all of
#     them: whole-process time. Target: <= 4.4 s (5x the JS app's 21.9 s
#     of warm simulation in that index).
#  2. per segment: the simulator's own time (--json simulate_ms) over the
#     segments it processed, summed over those scenes, and on the scene
#     ray_tracing_shapely was timed on (a slab and a 500-ray PointSource:
#     about 38 us a segment there, ../shared/anchors/ray-optics.md).
#     Target: >= 100x faster.
#  3. large: a PointSource of 100,000 rays into 20 glass blocks, and the
#     same with about 1,000,000 segments: whole-process time and peak RSS.
#     Target: 1 M segments in <= 1.5 s with peak RSS <= 600 MB.
#
#   bench/run-optics.sh [BUILD_DIR] [ROUNDS]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-build}" && pwd)
rounds=${2:-5}
data=$top/tests/data/ray-optics-scenes
cli=$build/atelier-optics
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -n | awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
range() { sort -n | awk 'NR==1{lo=$1} {hi=$1} END{printf "%s-%s", lo, hi}'; }
now() { date +%s.%N; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); rounds=$rounds"

# --- 1. conformance scenes, whole process ------------------------------------
# All 87 scenes of the app's CSV tests (_derived/csv-scenes-index.csv):
# the 60 whose expected CSV is here and the 27 held back, whose scene
# files are here too. Each is simulated with --csv by its own process.
python3 - "$data" >"$tmp/scenes" <<'EOF'
import csv, os, sys
data = sys.argv[1]
for r in csv.DictReader(open(os.path.join(data, "_derived", "csv-scenes-index.csv"))):
    print(os.path.join(data, r["scene"]))
EOF
n=$(wc -l <"$tmp/scenes")
: >"$tmp/ok"
while read -r s; do
  if "$cli" "$s" --csv >/dev/null 2>"$tmp/err" && ! grep -q warning "$tmp/err"; then
    echo "$s" >>"$tmp/ok"
  else
    echo "not simulated cleanly: $s: $(head -c 200 "$tmp/err")"
  fi
done <"$tmp/scenes"
ok=$(wc -l <"$tmp/ok")
: >"$tmp/whole"
for r in $(seq "$rounds"); do
  t0=$(now)
  while read -r s; do "$cli" "$s" --csv >/dev/null; done <"$tmp/ok"
  t1=$(now)
  awk "BEGIN{print $t1 - $t0}" >>"$tmp/whole"
done
# The JS app's warm simulation time for the same scenes.
js_ms=$(python3 - "$data" "$tmp/ok" <<'EOF'
import csv, sys, os
data, ok = sys.argv[1], sys.argv[2]
names = {os.path.relpath(l.strip(), data) for l in open(ok)}
rows = csv.DictReader(open(os.path.join(data, "_derived", "csv-scenes-index.csv")))
print(sum(float(r["sim_ms_warm_median"]) for r in rows if r["scene"] in names))
EOF
)
whole=$(median <"$tmp/whole")
echo "conformance: $ok of $n scenes, whole process $whole s median ($(range <"$tmp/whole")); the JS app's warm simulation of the same scenes: $(awk "BEGIN{printf \"%.2f\", $js_ms/1000}") s, ratio $(awk "BEGIN{printf \"%.1f\", $js_ms/1000/$whole}")x"

# --- 2. per segment ------------------------------------------------------------
# The simulator's own time (--json simulate_ms) over the segments it
# processed: summed over the conformance scenes, and on the scene the
# Python project was timed on (../shared/anchors/ray-optics.md: a slab and
# a PointSource of 500 rays, linear colour mode, 2675 segments, 0.101 s,
# about 38 us a segment).
cat >"$tmp/slab.json" <<'EOF'
{"version": 5, "colorMode": "linear", "rayModeDensity": 1, "objs": [
 {"type": "Glass", "path": [{"x": -200, "y": -50, "arc": false}, {"x": 200, "y": -50, "arc": false},
  {"x": 200, "y": 0, "arc": false}, {"x": -200, "y": 0, "arc": false}], "refIndex": 1.5},
 {"type": "PointSource", "x": 0, "y": 100, "brightness": 0.5}]}
EOF
perseg() { python3 -c '
import sys, json
text = sys.stdin.read()
dec, i, ms, segs = json.JSONDecoder(), 0, 0.0, 0
while i < len(text):
    while i < len(text) and text[i].isspace(): i += 1
    if i >= len(text): break
    o, i = dec.raw_decode(text, i)
    ms += o["simulate_ms"]; segs += o["processed_rays"]
print(ms * 1000 / segs, segs)'; }
: >"$tmp/perseg"
: >"$tmp/slabseg"
for r in $(seq "$rounds"); do
  while read -r s; do "$cli" "$s" --json; done <"$tmp/ok" | perseg >>"$tmp/perseg"
  for k in 1 2 3 4 5 6 7 8 9 10; do "$cli" "$tmp/slab.json" --json; done | perseg >>"$tmp/slabseg"
done
us=$(cut -d' ' -f1 "$tmp/perseg" | median)
segs=$(head -1 "$tmp/perseg" | cut -d' ' -f2)
echo "per segment, conformance scenes: $(awk "BEGIN{printf \"%.3f\", $us}") us median over $segs segments (GRIN segments are many integration steps each)"
us=$(cut -d' ' -f1 "$tmp/slabseg" | median)
segs=$(head -1 "$tmp/slabseg" | cut -d' ' -f2)
echo "per segment, the Python project's slab scene: $(awk "BEGIN{printf \"%.3f\", $us}") us median ($((segs / 10)) segments a run); ray_tracing_shapely ~38 us: $(awk "BEGIN{printf \"%.0f\", 38/$us}")x"

# --- 3. large scenes -------------------------------------------------------------
# A PointSource into 20 glass blocks on a ring around it: 100,000 rays
# (density 200), and about 1,000,000 segments (density 666.667, 333,333
# rays).
python3 - "$tmp" <<'EOF'
import json, math, sys
tmp = sys.argv[1]
objs = [{"type": "PointSource", "x": 0, "y": 0, "brightness": 1}]
for k in range(20):
    a = 2 * math.pi * k / 20
    cx, cy = 300 * math.cos(a), 300 * math.sin(a)
    ux, uy = math.cos(a), math.sin(a)
    vx, vy = -uy, ux
    pts = [(cx - 20 * ux - 40 * vx, cy - 20 * uy - 40 * vy),
           (cx + 20 * ux - 40 * vx, cy + 20 * uy - 40 * vy),
           (cx + 20 * ux + 40 * vx, cy + 20 * uy + 40 * vy),
           (cx - 20 * ux + 40 * vx, cy - 20 * uy + 40 * vy)]
    objs.append({"type": "Glass", "path": [{"x": x, "y": y, "arc": False} for x, y in pts],
                 "refIndex": 1.5})
for name, density in (("large", 200), ("million", 666.667)):
    json.dump({"version": 5, "rayModeDensity": density, "objs": objs},
              open("%s/%s.json" % (tmp, name), "w"))
EOF
for name in large million; do
  : >"$tmp/${name}_t"
  for r in $(seq "$rounds"); do
    /usr/bin/time -f '%e %M' "$cli" "$tmp/$name.json" --json 2>>"$tmp/${name}_t" >"$tmp/$name.out"
  done
  read -r segs emitted <<<"$(python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print(o["processed_rays"], o["emitted_rays"])' "$tmp/$name.out")"
  t=$(cut -d' ' -f1 "$tmp/${name}_t" | median)
  rss=$(cut -d' ' -f2 "$tmp/${name}_t" | median)
  echo "$name: $emitted rays into 20 glass blocks: $segs segments, $t s whole process median ($(cut -d' ' -f1 "$tmp/${name}_t" | range)), peak RSS $((rss / 1024)) MB; $(awk "BEGIN{printf \"%.2f\", $t * 1e6 / $segs}") s per million segments"
done
