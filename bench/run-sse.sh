#!/bin/sh
# Runs bench/sse against the whole web stack (scripts/atelier-stack: nginx,
# atelier-fcgi, atelierd) on temporary directories, several rounds; the
# last line is the medians.
#
#   bench/run-sse.sh [BUILD_DIR] [ROUNDS] [SECONDS]
#
# ATELIER_BENCH_STREAMS (1000), ATELIER_BENCH_SESSIONS (100) and
# ATELIER_BENCH_RATE (events a second in all, 1000) shape the load;
# ATELIER_BENCH_FCGI_ARG passes one argument to atelier-fcgi (e.g.
# --max-threads=4000).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
rounds=${2:-3}
secs=${3:-10}
streams=${ATELIER_BENCH_STREAMS:-1000}
sessions=${ATELIER_BENCH_SESSIONS:-100}
rate=${ATELIER_BENCH_RATE:-1000}
tmp=$(mktemp -d)
chmod 755 "$tmp"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# Every stream comes from 127.0.0.1: the per-client cap must let them all.
set -- --build "$build" --data "$tmp" --port "$port" \
  --fcgi-arg "--max-streams-per-client=$streams"
[ -n "${ATELIER_BENCH_FCGI_ARG:-}" ] && set -- "$@" --fcgi-arg "$ATELIER_BENCH_FCGI_ARG"
"$top/scripts/atelier-stack" "$@" >"$tmp/stack.out" 2>&1 &
stack=$!
trap 'kill $stack 2>/dev/null; wait $stack 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do grep -q "ready at" "$tmp/stack.out" && break; sleep 0.1; done
grep -q "ready at" "$tmp/stack.out" || { cat "$tmp/stack.out"; exit 1; }
daemon=$(pgrep -f "atelierd .*$tmp" | head -1)
bridge=$(pgrep -f "atelier-fcgi .*$tmp" | head -1)
echo "streams=$streams sessions=$sessions rate=$rate seconds=$secs rounds=$rounds cores=$(nproc)"
for r in $(seq "$rounds"); do
  "$build/bench/sse" --port "$port" --socket "$tmp/run/api.sock" \
    --streams "$streams" --sessions "$sessions" --seconds "$secs" \
    --rate "$rate" --pids "$daemon,$bridge" --token-file "$tmp/store/token" || true
done | tee "$tmp/rounds.txt"
median() {
  grep -oE "(^| )$1=[0-9.]*" "$2" | cut -d= -f2 | sort -n |
    awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'
}
printf 'MEDIAN'
for k in held p50_ms p90_ms p99_ms p999_ms lost doubled daemon_rss_mb bridge_rss_mb; do
  printf ' %s=%s' "$k" "$(median "$k" "$tmp/rounds.txt")"
done
echo
awk '/^VmHWM/ {printf "atelier-fcgi VmHWM %.1f MB\n", $2 / 1024}' "/proc/$bridge/status"
awk '/^VmHWM/ {printf "atelierd VmHWM %.1f MB\n", $2 / 1024}' "/proc/$daemon/status"
