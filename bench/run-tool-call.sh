#!/bin/sh
# Runs bench/tool-call against a real atelierd on temporary directories:
# 1 and 64 clients, several rounds each (the figures are medians), then the
# RSS with 10,000 sessions in the store and 64 clients connected.
#
#   bench/run-tool-call.sh [BUILD_DIR] [ROUNDS] [SECONDS]
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
"$build/atelierd" --foreground --config "$tmp/atelierd.conf" \
  --socket-dir "$tmp/run" --data-dir "$tmp/data" \
  --plugin-dir "$build/plugins/.libs" 2>"$tmp/daemon.log" &
pid=$!
for _ in $(seq 100); do [ -S "$tmp/run/api.sock" ] && break; sleep 0.1; done
echo "store.synchronous=$sync rounds=$rounds seconds=$secs cores=$(nproc)"
for c in 1 64; do
  for r in $(seq "$rounds"); do
    "$build/bench/tool-call" --socket "$tmp/run/api.sock" --clients "$c" --seconds "$secs"
  done | tee "$tmp/c$c.txt"
  awk -v c="$c" '{for(i=1;i<=NF;i++){split($i,kv,"="); v[kv[1]][NR]=kv[2]}}
    END{n=NR; for(k in v) if(k=="calls_per_s"||k=="p50_ms"||k=="p99_ms"){
      m=0; delete a; for(i=1;i<=n;i++) a[i]=v[k][i]+0; asort(a);
      med[k]=(n%2)?a[(n+1)/2]:(a[n/2]+a[n/2+1])/2}
      printf "MEDIAN clients=%d calls_per_s=%.0f p50_ms=%.3f p99_ms=%.3f\n", c, med["calls_per_s"], med["p50_ms"], med["p99_ms"]}' "$tmp/c$c.txt"
done
"$build/bench/tool-call" --socket "$tmp/run/api.sock" --clients 64 --seconds "$secs" --sessions 10000
