#!/bin/sh
# Runs bench/agent against a real atelierd on temporary directories, its
# provider bench/agent-fake (an OpenAI-compatible server that answers at
# once): 100 sessions, several rounds (the figures are medians), then
# atelierd's RSS with the sessions' histories loaded and the fake's own
# time per request.
#
#   bench/run-agent.sh [BUILD_DIR] [ROUNDS] [SECONDS]
#
# ATELIER_BENCH_SYNC sets store.synchronous (full); ATELIER_BENCH_SESSIONS
# the number of sessions (100); ATELIER_BENCH_RUNS_PER_SESSION makes each
# client move to a new session after that many runs (0: never), bounding
# the histories; ATELIER_BENCH_RATE runs an open loop at that many turns
# a second (see bench/agent.c); ATELIER_BENCH_CONF adds lines to the daemon's
# configuration, e.g. "[plugins]\ndisable = scene".
set -eu
build=${1:-build}
rounds=${2:-5}
secs=${3:-5}
sync=${ATELIER_BENCH_SYNC:-full}
sessions=${ATELIER_BENCH_SESSIONS:-100}
per_session=${ATELIER_BENCH_RUNS_PER_SESSION:-0}
rate=${ATELIER_BENCH_RATE:-0}
tmp=$(mktemp -d)
pid=
fake=
trap 'kill $pid $fake 2>/dev/null; wait $pid $fake 2>/dev/null; rm -rf "$tmp"' EXIT
"$build/bench/agent-fake" --port 0 >"$tmp/fake.out" &
fake=$!
for _ in $(seq 50); do grep -q listening "$tmp/fake.out" && break; sleep 0.1; done
url=$(sed -n 's/^agent-fake listening on //p' "$tmp/fake.out")
[ -n "$url" ] || { echo "run-agent: agent-fake did not start" >&2; exit 1; }
cat >"$tmp/atelierd.conf" <<CONF
[store]
synchronous = $sync
[log]
level = warn
[agent]
provider = fake
max_turns = 10
[provider.fake]
type = openai
base_url = $url
api_key_env = AGENT_BENCH_KEY
models = bench
CONF
printf '%b\n' "${ATELIER_BENCH_CONF:-}" >>"$tmp/atelierd.conf"
AGENT_BENCH_KEY=bench-key "$build/atelierd" --foreground \
  --config "$tmp/atelierd.conf" --socket-dir "$tmp/run" \
  --data-dir "$tmp/data" --plugin-dir "$build/plugins/.libs" \
  2>"$tmp/daemon.log" &
pid=$!
for _ in $(seq 100); do [ -S "$tmp/run/api.sock" ] && break; sleep 0.1; done
# median KEY FILE: the median of KEY=value over the lines of FILE (KEY
# whole: cpu_ms_per_turn is not loop_cpu_ms_per_turn).
median() {
  grep -oE "(^| )$1=[0-9.]*" "$2" | cut -d= -f2 | sort -n |
    awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'
}
echo "store.synchronous=$sync rounds=$rounds seconds=$secs cores=$(nproc)" \
  "runs_per_session=$per_session rate=$rate"
# Each round makes its own sessions, so every round starts from empty
# histories and they grow alike.
for r in $(seq "$rounds"); do
  "$build/bench/agent" --socket "$tmp/run/api.sock" --sessions "$sessions" \
    --seconds "$secs" --runs-per-session "$per_session" --rate "$rate"
done | tee "$tmp/rounds.txt"
printf 'MEDIAN sessions=%s' "$sessions"
for k in turns_per_s p50_ms p90_ms p99_ms p999_ms cpu_ms_per_turn \
  loop_cpu_ms_per_turn; do
  printf ' %s=%s' "$k" "$(median "$k" "$tmp/rounds.txt")"
done
echo
# Right after the runs: every round's sessions are still in the session
# cache (store.session_cache, 1024), each with its history in memory.
awk '/^VmRSS|^VmHWM/ {printf "atelierd %s %.1f MB\n", $1, $2 / 1024}' \
  "/proc/$pid/status"
curl -s "$url/stats"
if grep -q . "$tmp/daemon.log"; then
  echo "atelierd's log (warnings and errors):"
  tail -n 20 "$tmp/daemon.log"
fi
