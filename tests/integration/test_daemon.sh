#!/usr/bin/env bash
# End-to-end test of atelierd, driven only through atelierctl.
#
# It starts the real daemon with the real plugins in a scratch directory,
# exercises tools, sessions, calls (including validation failures and an
# image), events, a SIGKILL and restart (the session must survive intact),
# and a SIGTERM (the daemon must exit 0 promptly).
#
# Run by `make check`, which exports ATL_TEST_BUILDDIR and ATL_TEST_SRCDIR.
# Output is one "ok N - ..." or "not ok N - ..." line per check, with "#"
# lines of diagnostics after a failure, and a final "P passed, F failed".
set -euo pipefail

builddir=${ATL_TEST_BUILDDIR:?ATL_TEST_BUILDDIR must name the build directory}
ctl=$builddir/atelierctl
daemon=$builddir/atelierd
# The build's plugins and the tests' own (echo_test).
plugins=$builddir/plugins/.libs:$builddir/tests/plugins/.libs

tmp=$(mktemp -d "${TMPDIR:-/tmp}/atelier-it.XXXXXX")
daemon_pid=

cleanup() {
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -KILL "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

passed=0
failed=0
count=0

# diag FILE...: shows files as "#" lines, so that a failure explains itself.
diag() {
  local f
  for f in "$@"; do
    [ -s "$f" ] || continue
    printf '# --- %s\n' "${f#"$tmp"/}"
    sed 's/^/#   /' "$f" | tail -40
  done
}

# check_ok DESC / check_fail DESC: record one check's result, as in
#   if CONDITION; then check_ok DESC; else check_fail DESC; fi
# A failure shows the last atelierctl run's status and output.
check_ok() {
  count=$((count + 1))
  passed=$((passed + 1))
  echo "ok $count - $1"
}
check_fail() {
  count=$((count + 1))
  failed=$((failed + 1))
  echo "not ok $count - $1"
  printf '#   exit status: %s\n' "${rc:-}"
  diag "$tmp/out" "$tmp/err"
}

summary() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}

# bail_out DESC: the rest cannot run (no daemon); report and stop.
bail_out() {
  check_fail "$1"
  diag "$tmp/daemon.log"
  echo "$passed passed, $failed failed"
  exit 1
}

# ctl ARGS...: runs atelierctl against the test daemon without letting
# `set -e` end the script; leaves the status in $rc, the output in
# $out/$err (and the files $tmp/out and $tmp/err, for diagnostics).
ctl() {
  rc=0
  "$ctl" --socket-dir "$tmp/run" --timeout 20000 "$@" \
    >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
  out=$(cat "$tmp/out")
  err=$(cat "$tmp/err")
}

# ctl_stdin INPUT ARGS...: like ctl, with INPUT on standard input.
ctl_stdin() {
  local input=$1
  shift
  rc=0
  "$ctl" --socket-dir "$tmp/run" --timeout 20000 "$@" \
    >"$tmp/out" 2>"$tmp/err" <<<"$input" || rc=$?
  out=$(cat "$tmp/out")
  err=$(cat "$tmp/err")
}

# start_daemon: starts atelierd in the background and waits (up to 10 s)
# until it answers on its socket. After a SIGKILL the old socket file is
# still there, so the wait is for an answer from the new process (its pid in
# daemon.info), not for the file.
start_daemon() {
  "$daemon" --foreground --socket-dir "$tmp/run" --data-dir "$tmp/data" \
    --plugin-dir "$plugins" --log-level debug >>"$tmp/daemon.log" 2>&1 &
  daemon_pid=$!
  local i
  for ((i = 0; i < 100; i++)); do
    if ! kill -0 "$daemon_pid" 2>/dev/null; then
      return 1
    fi
    ctl raw daemon.info
    if [ "$rc" -eq 0 ] && [[ $out =~ \"pid\":\ *${daemon_pid}[^0-9] ]]; then
      return 0
    fi
    sleep 0.1
  done
  return 1
}

# wait_exit PID SECONDS: waits for a child to exit; its status in $status,
# or returns 1 if it is still running after SECONDS.
wait_exit() {
  local pid=$1 i
  for ((i = 0; i < $2 * 10; i++)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      status=0
      wait "$pid" || status=$?
      return 0
    fi
    sleep 0.1
  done
  return 1
}

mkdir -p "$tmp/run" "$tmp/data"

# --- Without a daemon -------------------------------------------------------

ctl tools
if [ "$rc" -eq 2 ] && [[ $err == *"cannot connect to $tmp/run/api.sock"* ]] &&
  [[ $err == *"is atelierd running?"* ]]; then
  check_ok "atelierctl without a daemon: exit 2, 'cannot connect'"
else
  check_fail "atelierctl without a daemon: exit 2, 'cannot connect'"
fi

# --- Start ------------------------------------------------------------------

if [ ! -x "$daemon" ]; then
  rc=
  : >"$tmp/out"
  : >"$tmp/err"
  bail_out "atelierd exists at $daemon"
fi
if start_daemon; then
  check_ok "atelierd starts and answers daemon.info within 10 s"
else
  bail_out "atelierd starts and answers daemon.info within 10 s"
fi

# --- Tools ------------------------------------------------------------------

ctl tools
if [ "$rc" -eq 0 ] && grep -qE '^echo +' <<<"$out" &&
  grep -qE '^echo_image +' <<<"$out"; then
  check_ok "tools lists echo and echo_image"
else
  check_fail "tools lists echo and echo_image"
fi

ctl tools echo
if [ "$rc" -eq 0 ] && [[ $out == *"Input schema:"* ]] &&
  [[ $out == *'"text"'* ]] && [[ $out == *'"string"'* ]] &&
  [[ $out == *'"additionalProperties": false'* ]]; then
  check_ok "tools echo shows the input schema"
else
  check_fail "tools echo shows the input schema"
fi

ctl tools no_such_tool
if [ "$rc" -eq 2 ] && [[ $err == *"no_such_tool"* ]] &&
  [[ $err == *echo* ]]; then
  check_ok "tools NAME with an unknown name: exit 2, lists the tools"
else
  check_fail "tools NAME with an unknown name: exit 2, lists the tools"
fi

# --- Sessions and calls -----------------------------------------------------

ctl session new
sid=$out
if [ "$rc" -eq 0 ] && [[ $sid =~ ^[0-9a-f]{32}$ ]]; then
  check_ok "session new prints a 32-hex-digit id"
else
  check_fail "session new prints a 32-hex-digit id"
  sid=00000000000000000000000000000001
fi

ctl session new --model claude-haiku-4-5
msid=$out
ctl session show "$msid"
if [[ $msid =~ ^[0-9a-f]{32}$ ]] &&
  [[ $out == *'"model": "claude-haiku-4-5"'* ]]; then
  check_ok "session new --model: the session keeps its model"
else
  check_fail "session new --model: the session keeps its model"
fi
ctl session new --model 'no spaces'
if [ "$rc" -eq 2 ] && [[ $err == *'"model" may only contain'* ]]; then
  check_ok "session new --model with a bad name: exit 2, the rule it broke"
else
  check_fail "session new --model with a bad name: exit 2, the rule it broke"
fi

ctl call "$sid" echo '{"text":"hi"}'
if [ "$rc" -eq 0 ] && [[ $out == *'"success": true'* ]] &&
  [[ $out == *'"text": "hi"'* ]]; then
  check_ok "call echo {\"text\":\"hi\"}: exit 0, the text comes back"
else
  check_fail "call echo {\"text\":\"hi\"}: exit 0, the text comes back"
fi

ctl_stdin '{"text": "from stdin"}' call "$sid" echo -
if [ "$rc" -eq 0 ] && [[ $out == *'"text": "from stdin"'* ]]; then
  check_ok "call with '-' reads the arguments from standard input"
else
  check_fail "call with '-' reads the arguments from standard input"
fi

ctl call "$sid" echo '{"text":42}'
if [ "$rc" -eq 1 ] && [[ $out == *'"success": false'* ]] &&
  [[ $out == *"/text"* ]] && [[ $out == *"expected a string"* ]]; then
  check_ok "call echo with a number: exit 1, '/text' 'expected a string'"
else
  check_fail "call echo with a number: exit 1, '/text' 'expected a string'"
fi

ctl call "$sid" echo '{}'
if [ "$rc" -eq 1 ] && [[ $out == *"missing required property 'text'"* ]]; then
  check_ok "call echo {}: exit 1, missing required property 'text'"
else
  check_fail "call echo {}: exit 1, missing required property 'text'"
fi

ctl call "$sid" echo '{"text":"a","x":1}'
if [ "$rc" -eq 1 ] && [[ ${out,,} == *"unexpected property"* ]] &&
  [[ $out == *"/x"* || $out == *"'x'"* || $out == *'\"x\"'* ]]; then
  check_ok "call echo with an extra property: exit 1, unexpected property"
else
  check_fail "call echo with an extra property: exit 1, unexpected property"
fi

ctl call "$sid" no_such_tool '{}'
if [ "$rc" -eq 1 ] && [[ $out == *no_such_tool* ]] && [[ $out == *echo* ]]; then
  check_ok "call of an unknown tool: exit 1, the error lists echo"
else
  check_fail "call of an unknown tool: exit 1, the error lists echo"
fi

ctl call 00000000000000000000000000000000 echo '{"text":"hi"}'
if [ "$rc" -eq 2 ] && [[ $err == *"no such session"* ]]; then
  check_ok "call in an unknown session: exit 2, 'no such session'"
else
  check_fail "call in an unknown session: exit 2, 'no such session'"
fi

ctl call "$sid" echo '{"text": "unterminated'
if [ "$rc" -eq 2 ] && [[ $err == *"invalid JSON"* ]] &&
  [[ $err == *"at byte"* ]]; then
  check_ok "call with malformed JSON: exit 2, the parser's reason and position"
else
  check_fail "call with malformed JSON: exit 2, the parser's reason and position"
fi

ctl call "$sid" echo_image '{}' -o "$tmp/img"
png=$(find "$tmp/img" -name '*.png' -type f 2>/dev/null | head -n 1 || true)
sig=
if [ -n "$png" ]; then
  sig=$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')
fi
if [ "$rc" -eq 0 ] && [ "$sig" = 89504e470d0a1a0a ] && [[ $err == *"$png"* ]]; then
  check_ok "call echo_image -o DIR saves a PNG and prints its path"
else
  check_fail "call echo_image -o DIR saves a PNG and prints its path"
fi

# --- Events -----------------------------------------------------------------

ctl events "$sid"
events_before=$out
if [ "$rc" -eq 0 ] &&
  grep -qE '^[0-9]+ [^ ]+ tool\.finished echo .*ok [0-9]+ ?ms' <<<"$out"; then
  check_ok "events shows tool.finished lines (seq, time, tool, ok, ms)"
else
  check_fail "events shows tool.finished lines (seq, time, tool, ok, ms)"
fi

ctl events "$sid" --json
json_before=$out
if [ "$rc" -eq 0 ] && [ -n "$out" ] && ! grep -qv '^{.*}$' <<<"$out"; then
  check_ok "events --json prints one JSON object per line"
else
  check_fail "events --json prints one JSON object per line"
fi

# A follower sees a call made after it started, and SIGINT ends it with 0.
# (Background jobs of a script ignore SIGINT unless the program catches it,
# which atelierctl does for --follow.)
last_seq=$(tail -n 1 <<<"$events_before" | cut -d' ' -f1)
"$ctl" --socket-dir "$tmp/run" events "$sid" --follow --after "${last_seq:-0}" \
  >"$tmp/follow.out" 2>"$tmp/follow.err" &
follow_pid=$!
ctl call "$sid" echo '{"text":"followed"}'
for ((i = 0; i < 100; i++)); do
  grep -q 'tool\.finished echo' "$tmp/follow.out" && break
  sleep 0.1
done
kill -INT "$follow_pid"
status=
wait_exit "$follow_pid" 5 || kill -KILL "$follow_pid"
if [ "${status:-x}" = 0 ] && grep -q 'tool\.finished echo' "$tmp/follow.out"; then
  check_ok "events --follow prints a new event; SIGINT exits 0"
else
  rc=$status
  check_fail "events --follow prints a new event; SIGINT exits 0"
  diag "$tmp/follow.out" "$tmp/follow.err"
fi

# --- The scene plugin -------------------------------------------------------

ctl call "$sid" create_shape '{"id":"ball","type":"sphere","properties":{"center":[0,1,0],"radius":1}}'
if [ "$rc" -eq 0 ] && [[ $out == *'"material": {'* ]] &&
  [[ $out == *'"albedo": ['* ]]; then
  check_ok "scene: create_shape answers with the shape, defaults filled in"
else
  check_fail "scene: create_shape answers with the shape, defaults filled in"
fi

ctl call "$sid" update_shape '{"id":"ball","updates":{"properties":{"radius":-1}}}'
if [ "$rc" -ne 0 ] && [[ $err == *"shape 'ball' was not changed"* ]] &&
  [[ $err == *"/properties/radius: expected a number > 0"* ]]; then
  check_ok "scene: an invalid update fails and says why"
else
  check_fail "scene: an invalid update fails and says why"
fi

ctl events "$sid" --json
if [ "$rc" -eq 0 ] &&
  grep -q '"tool":"create_shape","target":"ball",.*"after":{"id":"ball","type":"sphere"' <<<"$out" &&
  ! grep -q '"tool":"update_shape".*"success":true' <<<"$out"; then
  check_ok "scene: the events record the created shape, and no failed update as a success"
else
  check_fail "scene: the events record the created shape, and no failed update as a success"
fi

ctl call "$sid" create_light '{"id":"sun","type":"directional","properties":{"direction":[-1,-2,-1],"emission":[3,3,3]}}'
ctl call "$sid" get_scene_state '{}'
scene_before=$out
if [ "$rc" -eq 0 ] && [[ $out == *'"id": "ball"'* ]] && [[ $out == *'"id": "sun"'* ]] &&
  [[ $out != *'"radius": -1'* ]]; then
  check_ok "scene: get_scene_state has the shape and the light, not the failed update"
else
  check_fail "scene: get_scene_state has the shape and the light, not the failed update"
fi

# The scene's live previews come on their own, each an event (and a new
# last_seq): wait until none runs or waits, at most 60 s (the sanitizer
# build is slow), so that what is read now is what the restart must keep.
for ((i = 0; i < 600; i++)); do
  ctl raw daemon.info
  if [ "$rc" -eq 0 ] && python3 -c '
import json, sys
p = json.load(sys.stdin)["render"]["previews"]
sys.exit(0 if p.get("running", 0) == 0 and p.get("waiting", 0) == 0 else 1)
' <<<"$out"; then
    break
  fi
  sleep 0.1
done
sleep 0.5
ctl events "$sid" --json
json_before=$out
ctl session show "$sid"
show_before=$out

# --- Crash and restart ------------------------------------------------------

# The braces keep bash's "Killed" job report out of the test log.
{
  kill -KILL "$daemon_pid"
  wait "$daemon_pid" || true
} 2>/dev/null
daemon_pid=
if start_daemon; then
  check_ok "atelierd restarts after SIGKILL"
else
  bail_out "atelierd restarts after SIGKILL"
fi

ctl session list
if [ "$rc" -eq 0 ] && grep -q "^$sid " <<<"$out"; then
  check_ok "session list after the restart still has the session"
else
  check_fail "session list after the restart still has the session"
fi

ctl events "$sid" --json
# Live previews of the scene made above may still have been committing
# after json_before was read: every event before must be there, in order,
# and nothing else but those.
if [ "$rc" -eq 0 ] &&
  [ "$(grep -v '"type":"preview"' <<<"$out")" = \
    "$(grep -v '"type":"preview"' <<<"$json_before")" ] &&
  [ "${out:0:${#json_before}}" = "$json_before" ]; then
  check_ok "the events are intact after the restart"
else
  check_fail "the events are intact after the restart"
  printf '%s\n' "$json_before" >"$tmp/events.before"
  diag "$tmp/events.before"
fi

ctl session show "$sid"
if [ "$rc" -eq 0 ] && [ "$out" = "$show_before" ]; then
  check_ok "session show is identical after the restart (document, history)"
else
  check_fail "session show is identical after the restart (document, history)"
  printf '%s\n' "$show_before" >"$tmp/show.before"
  diag "$tmp/show.before"
fi

ctl call "$sid" get_scene_state '{}'
if [ "$rc" -eq 0 ] && [ "$out" = "$scene_before" ]; then
  check_ok "scene: the scene is intact after the restart"
else
  check_fail "scene: the scene is intact after the restart"
fi

# --- Orderly shutdown -------------------------------------------------------

kill -TERM "$daemon_pid"
status=
if wait_exit "$daemon_pid" 10 && [ "$status" = 0 ]; then
  daemon_pid=
  check_ok "SIGTERM: atelierd exits with status 0 within 10 s"
else
  rc=${status:-"still running"}
  check_fail "SIGTERM: atelierd exits with status 0 within 10 s"
  diag "$tmp/daemon.log"
fi

if [ "$failed" -ne 0 ]; then
  diag "$tmp/daemon.log"
fi
summary
