#!/bin/sh
# The chaos soak (tests/soak/soak.py) for as long as asked: the whole stack
# (scripts/atelier-stack) under load while a chaos loop kill -9s atelierd,
# a render worker or the bridge every 2 to 8 s; then the checks and a
# summary (kills, acknowledged operations, lost, doubled, leaked, RSS).
#
#   bench/run-soak.sh [BUILD_DIR] [SECONDS] [soak.py options...]
#
# Defaults: build, 600 s. Extra options go to soak.py (--sessions N,
# --seed N, --chaos MIN,MAX, --rounds N).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-build}" && pwd)
secs=${2:-600}
[ $# -gt 2 ] && shift 2 || set --
ATL_TEST_BUILDDIR=$build ATL_TEST_SRCDIR=$top \
  exec python3 "$top/tests/soak/soak.py" --duration "$secs" "$@"
