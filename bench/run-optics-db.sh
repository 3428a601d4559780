#!/usr/bin/env bash
# The ray database's figures (bench/README.md, optics-db): bench/optics-db
# builds the database of about a million segments ROUNDS times and times
# query_rays' typical queries REPS times each. Target: a million segments
# in <= 1.5 s with peak RSS <= 1 GB.
#
#   bench/run-optics-db.sh [BUILD_DIR] [ROUNDS] [REPS]
set -eu
build=$(cd "${1:-build}" && pwd)
rounds=${2:-7}
reps=${3:-20}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load $(cut -d' ' -f1-3 /proc/loadavg); rounds=$rounds"
"$build/bench/optics-db" "$rounds" "$reps"
