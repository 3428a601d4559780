#!/bin/sh
# What the MCP front costs (issue 22): bench/tool-call's echo calls straight
# over api.sock, and the same calls as MCP tools/call through one
# `atelierctl mcp` process per client (stdio), against one real atelierd,
# 1 and 16 clients, rounds alternating between the two so that the
# machine's drift falls on both. Prints each kind's medians and the ratio
# of the MCP figures to api.sock's (target: calls/s within 20 %).
#
#   bench/run-mcp.sh [BUILD_DIR] [ROUNDS] [SECONDS]
set -eu
build=${1:-build}
rounds=${2:-5}
secs=${3:-5}
tmp=$(mktemp -d)
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
cat >"$tmp/atelierd.conf" <<CONF
[log]
level = warn
CONF
"$build/atelierd" --foreground --config "$tmp/atelierd.conf" \
  --socket-dir "$tmp/run" --data-dir "$tmp/data" \
  --plugin-dir "$build/plugins/.libs" 2>"$tmp/daemon.log" &
pid=$!
for _ in $(seq 100); do [ -S "$tmp/run/api.sock" ] && break; sleep 0.1; done
median() {
  grep -o "$1=[0-9.]*" "$2" | cut -d= -f2 | sort -n |
    awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'
}
echo "rounds=$rounds seconds=$secs cores=$(nproc)"
for c in 1 16; do
  : >"$tmp/api$c.txt"
  : >"$tmp/mcp$c.txt"
  for r in $(seq "$rounds"); do
    "$build/bench/tool-call" --socket "$tmp/run/api.sock" --clients "$c" \
      --seconds "$secs" | sed 's/^/api.sock /' | tee -a "$tmp/api$c.txt"
    "$build/bench/tool-call" --socket "$tmp/run/api.sock" --clients "$c" \
      --seconds "$secs" --mcp "$build/atelierctl" | sed 's/^/mcp stdio /' |
      tee -a "$tmp/mcp$c.txt"
  done
  for k in api mcp; do
    printf 'MEDIAN %s clients=%s' "$k" "$c"
    for m in calls_per_s p50_ms p99_ms; do
      printf ' %s=%s' "$m" "$(median "$m" "$tmp/$k$c.txt")"
    done
    echo
  done
  a=$(median calls_per_s "$tmp/api$c.txt")
  m=$(median calls_per_s "$tmp/mcp$c.txt")
  echo "RATIO clients=$c mcp/api calls_per_s=$(echo "$m $a" | awk '{printf "%.3f", $1 / $2}')"
done
