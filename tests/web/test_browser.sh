#!/bin/sh
# The chat page in a real browser: tests/web/browser.test.mjs drives
# Debian's headless chromium with playwright-core (from npm, pinned in
# package.json and package-lock.json) against scripts/atelier-stack and the
# fake LLM provider. Screenshots go to ${ATL_TEST_OUTDIR:-BUILDDIR/tests/web/screenshots}.
#
# Installs playwright-core with `npm ci` into tests/web/node_modules when it
# is missing or older than package-lock.json (a stamp inside node_modules
# records the lock's hash); playwright downloads no browser, it drives
# /usr/bin/chromium (or $ATL_CHROMIUM). Without node, npm or chromium this
# test FAILS with the package to install: it is never skipped.
set -eu

src=${ATL_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
dir=$src/tests/web
chromium=${ATL_CHROMIUM:-/usr/bin/chromium}

fail() {
  echo "test_browser: $*"
  echo "0 passed, 1 failed"
  exit 1
}

for tool in node npm; do
  command -v "$tool" >/dev/null 2>&1 ||
    fail "'$tool' not found: apt-get install nodejs npm (./bootstrap deps does it)"
done
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || fail "node $(node --version) is too old: playwright-core needs Node.js 20 or later"
[ -x "$chromium" ] ||
  fail "$chromium not found: apt-get install chromium (Debian's package; playwright downloads no browser here)"
command -v python3 >/dev/null 2>&1 || fail "'python3' not found (the fake LLM provider needs it)"

stamp=$dir/node_modules/.atelier-lock-sha256
want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  echo "# npm ci in $dir (node $(node --version), npm $(npm --version))"
  # Two test runs (build and build-asan) share the source tree: one npm ci at a time.
  # shellcheck disable=SC2016 # $1..$3 are the inner shell's arguments
  flock "$dir/package-lock.json" sh -c '
    cd "$1" &&
    if [ "$(cat "$2" 2>/dev/null || true)" != "$3" ]; then
      log=$(mktemp)
      npm ci --no-audit --no-fund >"$log" 2>&1 || { tail -30 "$log"; rm -f "$log"; exit 1; }
      rm -f "$log" && echo "$3" >"$2"
    fi' sh "$dir" "$stamp" "$want" || fail "npm ci failed (the npm registry must be reachable)"
fi

ATL_CHROMIUM=$chromium
export ATL_CHROMIUM
exec node "$dir/browser.test.mjs"
