#!/bin/sh
# The fake LLM server (tests/fake-llm/fake_llm.py) proven against the
# official provider SDKs from npm: tests/fake-llm/sdk-check.mjs.
#
# Installs the pinned SDKs with `npm ci` into tests/fake-llm/node_modules
# when they are missing or older than package-lock.json (a stamp inside
# node_modules records the lock's hash), then runs the check. Without node
# or npm this test FAILS: the SDK check is the only proof that the fake
# speaks the real protocols, so it is never skipped.
set -eu

src=${ATL_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
dir=$src/tests/fake-llm

fail() {
  echo "test_fake_llm_sdk: $*"
  echo "0 passed, 1 failed"
  exit 1
}

for tool in node npm; do
  command -v "$tool" >/dev/null 2>&1 ||
    fail "'$tool' not found: apt-get install nodejs npm (./bootstrap deps does it)"
done
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 18 ] || fail "node $(node --version) is too old: the SDK check needs Node.js 18 or later"

stamp=$dir/node_modules/.atelier-lock-sha256
want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  echo "# npm ci in $dir (node $(node --version), npm $(npm --version))"
  # Two test runs (build and build-asan) share the source tree: one npm ci at a time.
  flock "$dir/package-lock.json" sh -c '
    cd "$1" &&
    if [ "$(cat "$2" 2>/dev/null || true)" != "$3" ]; then
      log=$(mktemp)
      npm ci --no-audit --no-fund >"$log" 2>&1 || { tail -30 "$log"; rm -f "$log"; exit 1; }
      rm -f "$log" && echo "$3" >"$2"
    fi' sh "$dir" "$stamp" "$want" || fail "npm ci failed (the npm registry must be reachable)"
fi

cd "$dir"
exec node sdk-check.mjs
