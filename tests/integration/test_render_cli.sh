#!/usr/bin/env bash
# atelier-render, the farm's command line: the same picture whatever the
# number of workers, clear errors for bad input, and a cancel (SIGINT)
# that stops the workers and leaves nothing in /dev/shm.
#
# Run by `make check` (ATL_TEST_BUILDDIR, ATL_TEST_SRCDIR). Output: one
# "ok N - ..." or "not ok N - ..." line per check, "#" diagnostics, and a
# final "P passed, F failed".
set -uo pipefail

builddir=${ATL_TEST_BUILDDIR:?ATL_TEST_BUILDDIR must name the build directory}
srcdir=${ATL_TEST_SRCDIR:?ATL_TEST_SRCDIR must name the source directory}
cli=$builddir/atelier-render
scenes=$srcdir/tests/data/scenes
tmp=$(mktemp -d "${TMPDIR:-/tmp}/atelier-cli.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

passed=0
failed=0
n=0
result() { # result STATUS DESC
  n=$((n + 1))
  if [ "$1" -eq 0 ]; then
    passed=$((passed + 1))
    echo "ok $n - $2"
  else
    failed=$((failed + 1))
    echo "not ok $n - $2"
    sed 's/^/#   /' "$tmp/err" 2>/dev/null | tail -10
  fi
}
shm() { ls /dev/shm | grep -c '^atelier-render-' || true; }

run() { "$cli" "$@" >"$tmp/out" 2>"$tmp/err"; }

# --- the same picture with 1 and 3 workers -----------------------------
st=0
run "$scenes/snowman.json" -W 96 -H 72 -s 10 -j 1 -q -o "$tmp/a.png" \
  --pfm "$tmp/a.pfm" || st=1
run "$scenes/snowman.json" -W 96 -H 72 -s 10 -j 3 -q -o "$tmp/b.png" \
  --pfm "$tmp/b.pfm" || st=1
cmp -s "$tmp/a.png" "$tmp/b.png" && cmp -s "$tmp/a.pfm" "$tmp/b.pfm" || st=1
[ "$(head -c 8 "$tmp/a.png" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ] || st=1
result $st "1 and 3 workers write byte-identical PNG and PFM files"

st=0
grep -q '96x72, 10 spp, max depth 8, 3 workers: 69120 paths' "$tmp/out" || st=1
grep -q 'M paths/s' "$tmp/out" || st=1
result $st "it reports the paths traced and the paths per second"

st=0
run "$scenes/snowman.json" -W 96 -H 72 -s 10 -j 2 -q --seed 5 -o "$tmp/c.png" || st=1
cmp -s "$tmp/a.png" "$tmp/c.png" && st=1
result $st "another seed gives another picture"

# --- bad input ---------------------------------------------------------
st=0
run "$scenes/snowman.json" -W 0 -o "$tmp/x.png"
rc=$?
[ $rc -eq 2 ] && grep -q -- "--width: expected an integer from 1 to 8192, got '0'" "$tmp/err" || st=1
result $st "a bad --width is a usage error that says the range"

st=0
run "$scenes/snowman.json"
rc=$?
[ $rc -eq 2 ] && grep -q 'say where the image goes' "$tmp/err" || st=1
result $st "no output file: a usage error"

st=0
printf '{"shapes": [{"id": "s", "type": "sphere", "properties": {"center": [0, 0, 0], "radius": -1}}]}' >"$tmp/bad.json"
run "$tmp/bad.json" -o "$tmp/x.png"
rc=$?
[ $rc -eq 1 ] && grep -q 'radius' "$tmp/err" && [ ! -e "$tmp/x.png" ] || st=1
result $st "a bad scene names the field and writes nothing"

st=0
run "$tmp/missing.json" -o "$tmp/x.png"
[ $? -eq 1 ] && grep -q 'No such file' "$tmp/err" || st=1
result $st "a missing scene file is reported"

# --- adaptive sampling, the budget, the denoiser, the guides -------------
st=0
run "$scenes/snowman.json" -W 96 -H 72 -s 64 -j 1 -q --noise 0.02 \
  --min-samples 16 --pfm "$tmp/n1.pfm" || st=1
cp "$tmp/out" "$tmp/n1.out"
run "$scenes/snowman.json" -W 96 -H 72 -s 64 -j 3 -q --noise 0.02 \
  --min-samples 16 --pfm "$tmp/n3.pfm" || st=1
cmp -s "$tmp/n1.pfm" "$tmp/n3.pfm" || st=1
# Some pixels stopped at 16, some took all 64, and the line says so.
grep -Eq 'noise 0\.[0-9]+ \([0-9.]+ % of pixels above 0\.02\); spp min 16 mean [0-9.]+ max 64; ended by the samples' "$tmp/n1.out" || st=1
cat "$tmp/n1.out" >"$tmp/err"
result $st "--noise: adaptive sampling, the same PFM with 1 and 3 workers, the summary says the spread"

st=0
t0=$(date +%s%N)
run "$scenes/snowman.json" -W 200 -H 150 -s 100000 -j 2 -q --max-seconds 0.5 \
  --pfm "$tmp/t.pfm" || st=1
t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
grep -q 'ended by the time budget' "$tmp/out" || st=1
[ -s "$tmp/t.pfm" ] || st=1
[ "$ms" -lt 2500 ] || st=1
echo "# --max-seconds 0.5: the whole process took $ms ms"
cat "$tmp/out" >"$tmp/err"
result $st "--max-seconds ends a long render with the picture written, status 0"

st=0
run "$scenes/snowman.json" -W 64 -H 48 -s 8 -j 2 -q --denoise --filter gaussian \
  --filter-width 2 -o "$tmp/d.png" --pfm "$tmp/d.pfm" \
  --albedo-pfm "$tmp/alb.pfm" --normal-pfm "$tmp/nrm.pfm" || st=1
for f in d.png d.pfm alb.pfm nrm.pfm; do [ -s "$tmp/$f" ] || st=1; done
# Colour PFMs of 64 x 48: a short header and 64 * 48 * 3 floats.
for f in d.pfm alb.pfm nrm.pfm; do
  [ "$(head -c 2 "$tmp/$f")" = PF ] || st=1
  size=$(stat -c %s "$tmp/$f")
  [ "$size" -gt $((64 * 48 * 12)) ] && [ "$size" -lt $((64 * 48 * 12 + 32)) ] || st=1
done
result $st "--denoise, --filter, --albedo-pfm and --normal-pfm write their files"

st=0
for args in "--filter lanczos|--filter: expected box, gaussian or blackman-harris, got 'lanczos'" \
  "--noise 2|--noise: expected a number from 0 and at most 1, got '2'" \
  "--max-seconds -1|--max-seconds: expected a number from 0 and at most 1e+06, got '-1'" \
  "--filter-width 0.1|--filter-width: expected a number from 0.5 and at most 8, got '0.1'" \
  "--min-samples 100|--min-samples: 100 is more than the 10 samples per pixel; give 2..10"; do
  opt=${args%%|*}
  want=${args#*|}
  # shellcheck disable=SC2086
  run "$scenes/snowman.json" -s 10 -o "$tmp/x.png" $opt
  rc=$?
  { [ $rc -eq 2 ] && grep -qF -- "$want" "$tmp/err"; } || { st=1; echo "# $opt: $(cat "$tmp/err")"; }
done
result $st "bad --filter, --noise, --max-seconds, --filter-width, --min-samples: usage errors with the range"

# --- cancel --------------------------------------------------------------
st=0
before=$(shm)
"$cli" "$scenes/snowman.json" -s 100000 -j 2 -q -o "$tmp/never.png" \
  >"$tmp/out" 2>"$tmp/err" &
pid=$!
sleep 1
workers=$(pgrep -P "$pid" | tr '\n' ' ')
kill -INT "$pid"
wait "$pid"
rc=$?
[ $rc -eq 130 ] || st=1
[ ! -e "$tmp/never.png" ] || st=1
for w in $workers; do kill -0 "$w" 2>/dev/null && st=1; done
[ -n "$workers" ] || st=1
[ "$(shm)" = "$before" ] || st=1
ms=$(sed -n 's/^cancelled: the workers stopped \([0-9.]*\) ms after the cancel$/\1/p' "$tmp/out")
[ -n "$ms" ] && awk -v ms="$ms" 'BEGIN { exit !(ms < 100) }' || st=1
echo "# the workers stopped ${ms:-?} ms after the cancel"
result $st "SIGINT cancels within 100 ms: status 130, workers gone, /dev/shm clean"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
