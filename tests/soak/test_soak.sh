#!/bin/sh
# The chaos soak's version for `make check`: tests/soak/soak.py with 60 s
# of chaos (about 90 s in all with the stack's start, the settling, the
# steady rounds and the stop). bench/run-soak.sh runs the long one.
# ATL_SOAK_SECONDS changes the duration, ATL_SOAK_SEED repeats a run.
set -eu
set -- --duration "${ATL_SOAK_SECONDS:-60}"
[ -n "${ATL_SOAK_SEED:-}" ] && set -- "$@" --seed "$ATL_SOAK_SEED"
exec python3 "$(dirname "$0")/soak.py" "$@"
