#!/bin/sh
# The chat page's pure logic (fcgi/www: Markdown, diffs, naming, the event
# sequence filter, rendering into a fake DOM) under node's own test runner.
set -eu
src=${ATL_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v node >/dev/null || { echo "node is required (apt-get install nodejs)"; exit 1; }
exec node --test "$src/tests/web/unit.test.mjs"
