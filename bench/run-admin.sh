#!/bin/sh
# The admin socket's cost (bench/README.md, admin): bench/tool-call's
# throughput against one atelierd with nobody tracing and with one trace
# subscriber of everything (every kind, log lines at info) reading as fast
# as it can, in alternating rounds on the same daemon so that the machine's
# drift falls on both; then a subscriber that asks for everything and never
# reads, for SECONDS_STALL seconds of calls, and the daemon's RSS growth.
# Stats are always on, so both sides pay for them.
#
# The subscriber's lines go to /dev/null, so that what is measured is the
# daemon's cost and not this machine's disk: written to a file they are
# 30 MB a second of page cache and writeback on the same two cores.
# ATELIER_BENCH_TRACE_OUT=FILE writes them to FILE instead.
#
#   bench/run-admin.sh [BUILD_DIR] [ROUNDS] [SECONDS] [SECONDS_STALL]
set -eu
build=${1:-build}
rounds=${2:-5}
secs=${3:-5}
stall=${4:-60}
clients=${ATELIER_BENCH_CLIENTS:-64}
trace_out=${ATELIER_BENCH_TRACE_OUT:-/dev/null}
tmp=$(mktemp -d)
tracer=
trap 'kill $tracer $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
cat >"$tmp/atelierd.conf" <<CONF
[log]
level = warn
CONF
"$build/atelierd" --foreground --config "$tmp/atelierd.conf" \
  --socket-dir "$tmp/run" --data-dir "$tmp/data" \
  --plugin-dir "$build/plugins/.libs" 2>"$tmp/daemon.log" &
pid=$!
for _ in $(seq 100); do [ -S "$tmp/run/admin.sock" ] && break; sleep 0.1; done
median() {
  grep -o "$1=[0-9.]*" "$2" | cut -d= -f2 | sort -n |
    awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'
}
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status"; }
trace_stat() {
  "$build/atelierctl" --socket-dir "$tmp/run" admin stats |
    python3 -c "import json,sys; print(json.load(sys.stdin)['trace']['$1'])"
}
echo "clients=$clients rounds=$rounds seconds=$secs cores=$(nproc) trace_out=$trace_out"
: >"$tmp/off.txt"
: >"$tmp/on.txt"
for r in $(seq "$rounds"); do
  "$build/bench/tool-call" --socket "$tmp/run/api.sock" --clients "$clients" \
    --seconds "$secs" | tee -a "$tmp/off.txt" | sed 's/^/trace off: /'
  lines0=$(trace_stat lines)
  "$build/atelierctl" --socket-dir "$tmp/run" trace --json \
    --kinds rpc,run,turn,tool,commit,render,event,log >"$trace_out" &
  tracer=$!
  sleep 0.3
  "$build/bench/tool-call" --socket "$tmp/run/api.sock" --clients "$clients" \
    --seconds "$secs" | tee -a "$tmp/on.txt" | sed 's/^/trace on:  /'
  kill "$tracer"
  wait "$tracer" 2>/dev/null || true
  tracer=
  echo "trace lines written: $(($(trace_stat lines) - lines0)), dropped: $(trace_stat dropped)"
done
off=$(median calls_per_s "$tmp/off.txt")
on=$(median calls_per_s "$tmp/on.txt")
printf 'MEDIAN trace off: calls_per_s=%s p50_ms=%s p99_ms=%s\n' "$off" \
  "$(median p50_ms "$tmp/off.txt")" "$(median p99_ms "$tmp/off.txt")"
printf 'MEDIAN trace on:  calls_per_s=%s p50_ms=%s p99_ms=%s\n' "$on" \
  "$(median p50_ms "$tmp/on.txt")" "$(median p99_ms "$tmp/on.txt")"
awk -v a="$on" -v b="$off" 'BEGIN { printf "throughput with the trace: %.1f %% of without (ratio of the medians)\n", 100 * a / b }'
# Each round against the round just before it: the machine's drift over
# the whole run cancels out of these.
paste "$tmp/off.txt" "$tmp/on.txt" |
  sed -E 's/.*calls_per_s=([0-9.]+).*calls_per_s=([0-9.]+).*/\2 \1/' |
  awk '{print $1 / $2}' | sort -n |
  awk '{v[NR]=$1} END{m=(NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2;
       printf "each round against its own: median %.1f %% (%.1f-%.1f %%)\n",
       100*m, 100*v[1], 100*v[NR]}'

# A subscriber of everything that never reads.
python3 - "$tmp/run/admin.sock" "$stall" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(sys.argv[1])
s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"trace","params":{"kinds":'
          b'["rpc","run","turn","tool","commit","render","event","log"]}}\n')
time.sleep(float(sys.argv[2]) + 10)
PY
tracer=$!
sleep 1
rss0=$(rss_kb)
"$build/bench/tool-call" --socket "$tmp/run/api.sock" --clients "$clients" \
  --seconds "$stall" | sed 's/^/stalled subscriber: /'
rss1=$(rss_kb)
dropped=$(trace_stat dropped)
echo "stalled subscriber for ${stall} s: RSS ${rss0} -> ${rss1} kB ($(((rss1 - rss0) / 1024)) MB); lines dropped: $dropped"
