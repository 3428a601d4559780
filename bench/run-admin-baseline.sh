#!/bin/sh
# The cost of the admin socket's always-on statistics (bench/README.md,
# admin): bench/tool-call against this build's atelierd and against a
# build from before the admin socket (BASELINE_BUILD, e.g. a git worktree
# of 8b0eb2f built with ./bootstrap build), in alternating rounds, nobody
# tracing. Both daemons run at once on their own directories; only one is
# called at a time.
#
#   bench/run-admin-baseline.sh BUILD BASELINE_BUILD [ROUNDS] [SECONDS]
set -eu
build=$1
base=$2
rounds=${3:-7}
secs=${4:-5}
clients=${ATELIER_BENCH_CLIENTS:-64}
tmp=$(mktemp -d)
pids=
trap 'kill $pids 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
for side in new old; do
  b=$build
  [ "$side" = old ] && b=$base
  mkdir -p "$tmp/$side"
  printf '[log]\nlevel = warn\n' >"$tmp/$side/atelierd.conf"
  "$b/atelierd" --foreground --config "$tmp/$side/atelierd.conf" \
    --socket-dir "$tmp/$side/run" --data-dir "$tmp/$side/data" \
    --plugin-dir "$b/plugins/.libs" 2>"$tmp/$side/daemon.log" &
  pids="$pids $!"
done
for _ in $(seq 100); do
  [ -S "$tmp/new/run/api.sock" ] && [ -S "$tmp/old/run/api.sock" ] && break
  sleep 0.1
done
median() {
  grep -o "$1=[0-9.]*" "$2" | cut -d= -f2 | sort -n |
    awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'
}
echo "clients=$clients rounds=$rounds seconds=$secs cores=$(nproc)"
for r in $(seq "$rounds"); do
  for side in old new; do
    "$build/bench/tool-call" --socket "$tmp/$side/run/api.sock" \
      --clients "$clients" --seconds "$secs" | tee -a "$tmp/$side.txt" |
      sed "s/^/$side: /"
  done
done
for side in old new; do
  printf 'MEDIAN %s: calls_per_s=%s p50_ms=%s p99_ms=%s\n' "$side" \
    "$(median calls_per_s "$tmp/$side.txt")" "$(median p50_ms "$tmp/$side.txt")" \
    "$(median p99_ms "$tmp/$side.txt")"
done
awk -v a="$(median calls_per_s "$tmp/new.txt")" -v b="$(median calls_per_s "$tmp/old.txt")" \
  'BEGIN { printf "throughput with stats always on: %.1f %% of the build without them\n", 100 * a / b }'
