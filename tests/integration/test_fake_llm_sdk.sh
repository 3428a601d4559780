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

why=$("$src/tests/npm-ensure.sh" "$dir" 18) || fail "$why"
[ -z "$why" ] || echo "$why"

cd "$dir"
exec node sdk-check.mjs
