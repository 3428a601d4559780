#!/bin/sh
# What the MCP front costs (issue 22): bench/tool-call's echo calls against
# one real stack (scripts/atelier-stack: nginx, atelier-fcgi, atelierd),
# 1 and 16 clients, four ways, rounds alternating between them so that the
# machine's drift falls on all:
#   api       straight over api.sock (JSON-RPC tool.call)
#   stdio     MCP tools/call through one `atelierctl mcp` per client
#             (stdio handed to atelierd, as MCP clients start it)
#   stdio-relay  the same with ATELIER_MCP_RELAY=1: atelierctl reads and
#             writes stdio itself (what a terminal or a file gets)
#   http-api  the HTTP API's POST /api/sessions/{id}/tools/echo via nginx
#   http-mcp  MCP tools/call to /api/sessions/{id}/mcp via nginx
# Prints each kind's medians, and the ratios (the median of each round's
# pair, with their spread): MCP over stdio and over HTTP to api.sock
# (target for stdio: calls/s within 20 %), and MCP over HTTP to the HTTP
# API (what MCP adds to an HTTP call).
#
#   bench/run-mcp.sh [BUILD_DIR] [ROUNDS] [SECONDS] [KINDS]
set -eu
build=${1:-build}
rounds=${2:-5}
secs=${3:-5}
kinds=${4:-api stdio stdio-relay http-api http-mcp}
for k in $kinds; do
  case $k in
    api|stdio|stdio-relay|http-api|http-mcp) ;;
    *) echo "run-mcp.sh: unknown kind '$k' (api, stdio, stdio-relay, http-api, http-mcp)" >&2; exit 2 ;;
  esac
done
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
cleanup() {
  if [ -n "${pid:-}" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$tmp/atelierd.conf" <<CONF
[log]
level = warn
CONF
"$top/scripts/atelier-stack" --build "$build" --data "$tmp/data" \
  --port "$port" --config "$tmp/atelierd.conf" \
  --plugin-dir "$build/tests/plugins/.libs" >"$tmp/stack.log" 2>&1 &
pid=$!
for _ in $(seq 300); do grep -q 'ready at' "$tmp/stack.log" && break; sleep 0.1; done
grep -q 'ready at' "$tmp/stack.log" || { cat "$tmp/stack.log"; exit 1; }
sock=$tmp/data/run/api.sock
token_file=$tmp/data/store/token
median() {
  grep -o "$1=[0-9.]*" "$2" | cut -d= -f2 | sort -n |
    awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'
}
run() { # kind (clients in $c)
  k=$1
  relay=0
  case $1 in
    api) set -- ;;
    stdio) set -- --mcp "$build/atelierctl" ;;
    stdio-relay) relay=1; set -- --mcp "$build/atelierctl" ;;
    http-api) set -- --http "$port" --token-file "$token_file" --http-api ;;
    http-mcp) set -- --http "$port" --token-file "$token_file" ;;
  esac
  # A failed run (a usage error, errors= other than 0) stops the script
  # rather than count in the medians.
  out=$(ATELIER_MCP_RELAY=$relay "$build/bench/tool-call" --socket "$sock" \
    --clients "$c" --seconds "$secs" "$@") ||
    { echo "$out"; echo "run-mcp.sh: $k failed" >&2; exit 1; }
  echo "$out"
}
ratio() { echo "$1 $2" | awk '{printf "%.3f", $1 / $2}'; }
echo "rounds=$rounds seconds=$secs cores=$(nproc)"
pairs="stdio/api stdio-relay/api http-mcp/api http-mcp/http-api"
for c in 1 16; do
  for k in $kinds; do : >"$tmp/$k$c.txt"; done
  for pair in $pairs; do : >"$tmp/ratio-$(echo "$pair" | tr / -)$c.txt"; done
  for r in $(seq "$rounds"); do
    for k in $kinds; do
      line=$(run "$k")
      echo "$line" | sed "s/^/$k /" | tee -a "$tmp/$k$c.txt"
      echo "$line" | grep -o 'calls_per_s=[0-9.]*' | cut -d= -f2 >"$tmp/last-$k"
    done
    # Each round's ratio: its two kinds ran back to back.
    for pair in $pairs; do
      a=${pair%/*}
      b=${pair#*/}
      if [ -s "$tmp/last-$a" ] && [ -s "$tmp/last-$b" ]; then
        echo "calls_per_s=$(ratio "$(cat "$tmp/last-$a")" "$(cat "$tmp/last-$b")")" \
          >>"$tmp/ratio-$(echo "$pair" | tr / -)$c.txt"
      fi
    done
  done
  for k in $kinds; do
    printf 'MEDIAN %s clients=%s' "$k" "$c"
    for m in calls_per_s p50_ms p99_ms; do
      printf ' %s=%s' "$m" "$(median "$m" "$tmp/$k$c.txt")"
    done
    echo
  done
  for pair in $pairs; do
    f="$tmp/ratio-$(echo "$pair" | tr / -)$c.txt"
    if [ -s "$f" ]; then
      echo "RATIO clients=$c $pair calls_per_s=$(median calls_per_s "$f")" \
        "(median of $(wc -l <"$f") rounds; from $(sort -n "$f" | head -1 |
          cut -d= -f2) to $(sort -n "$f" | tail -1 | cut -d= -f2))"
    fi
  done
done
