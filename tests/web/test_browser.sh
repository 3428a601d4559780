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

[ -x "$chromium" ] ||
  fail "$chromium not found: apt-get install chromium (Debian's package; playwright downloads no browser here)"
command -v python3 >/dev/null 2>&1 || fail "'python3' not found (the fake LLM provider needs it)"
why=$("$src/tests/npm-ensure.sh" "$dir" 20) || fail "$why"
[ -z "$why" ] || echo "$why"

ATL_CHROMIUM=$chromium
export ATL_CHROMIUM
exec node "$dir/browser.test.mjs"
