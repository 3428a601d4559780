#!/bin/sh
# Runs bench/tool-call against a real atelierd on temporary directories:
# 1 and 64 clients, several rounds each (the figures are medians), then the
# RSS with 10,000 sessions in the store and 64 clients connected.
#
#   bench/run-tool-call.sh [BUILD_DIR] [ROUNDS] [SECONDS]
#
# ATELIER_BENCH_SYNC sets store.synchronous (full); ATELIER_BENCH_CONF adds
# lines to the daemon's configuration, e.g. "[tools]\ninline_fast = no".
set -eu
build=${1:-build}
rounds=${2:-5}
secs=${3:-5}
sync=${ATELIER_BENCH_SYNC:-full}
tmp=$(mktemp -d)
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
cat >"$tmp/atelierd.conf" <<CONF
[store]
synchronous = $sync
[log]
level = warn
CONF
printf '%b\n' "${ATELIER_BENCH_CONF:-}" >>"$tmp/atelierd.conf"
"$build/atelierd" --foreground --config "$tmp/atelierd.conf" \
  --socket-dir "$tmp/run" --data-dir "$tmp/data" \
  --plugin-dir "$build/plugins/.libs" 2>"$tmp/daemon.log" &
pid=$!
for _ in $(seq 100); do [ -S "$tmp/run/api.sock" ] && break; sleep 0.1; done
# median KEY FILE: the median of KEY=value over the lines of FILE.
median() {
  grep -o "$1=[0-9.]*" "$2" | cut -d= -f2 | sort -n |
    awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'
}
echo "store.synchronous=$sync rounds=$rounds seconds=$secs cores=$(nproc)"
for c in 1 64; do
  for r in $(seq "$rounds"); do
    "$build/bench/tool-call" --socket "$tmp/run/api.sock" --clients "$c" --seconds "$secs"
  done | tee "$tmp/c$c.txt"
  printf 'MEDIAN clients=%s' "$c"
  for k in calls_per_s p50_ms p99_ms; do
    printf ' %s=%s' "$k" "$(median "$k" "$tmp/c$c.txt")"
  done
  echo
done
"$build/bench/tool-call" --socket "$tmp/run/api.sock" --clients 64 --seconds "$secs" --sessions 10000
