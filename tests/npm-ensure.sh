#!/bin/sh
# Makes DIR's node_modules match its package-lock.json, for the tests that
# run npm packages (tests/fake-llm's SDK check, tests/web's browser test):
#
#   tests/npm-ensure.sh DIR MIN_NODE_MAJOR
#
# It checks that node (at least MIN_NODE_MAJOR) and npm are there, and
# runs `npm ci` only when the lock file changed since the last one (a
# sha256 stamp in node_modules). On failure it prints why (with the
# package to install) and exits 1.
set -eu
dir=$(cd "$1" && pwd)
min=$2
for tool in node npm; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "'$tool' not found: apt-get install nodejs npm (./bootstrap deps does it)"
    exit 1
  }
done
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge "$min" ] || {
  echo "node $(node --version) is too old: $dir needs Node.js $min or later"
  exit 1
}
stamp=$dir/node_modules/.atelier-lock-sha256
want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
[ "$(cat "$stamp" 2>/dev/null || true)" = "$want" ] && exit 0
echo "# npm ci in $dir (node $(node --version), npm $(npm --version))"
# Two test runs (build and build-asan) share the source tree: one npm ci
# at a time.
# shellcheck disable=SC2016 # $1..$3 are the inner shell's arguments
flock "$dir/package-lock.json" sh -c '
  cd "$1" &&
  if [ "$(cat "$2" 2>/dev/null || true)" != "$3" ]; then
    log=$(mktemp)
    npm ci --no-audit --no-fund >"$log" 2>&1 || { tail -30 "$log"; rm -f "$log"; exit 1; }
    rm -f "$log" && echo "$3" >"$2"
  fi' sh "$dir" "$stamp" "$want" || {
  echo "npm ci failed in $dir (the npm registry must be reachable)"
  exit 1
}
