#!/bin/sh
# Replays every seed (and every crash once found and added) of each fuzz
# target's corpus through the target, built with the ordinary compiler.
set -u
build=${ATL_TEST_BUILDDIR:?} src=${ATL_TEST_SRCDIR:?}
pass=0 fail=0
for t in jsonrpc schema config scene stream fcgi render optics_scene \
  optics_mathexpr optics_module optics_expr optics_query image_fit \
  drawing_path drawing_genout mcp; do
  if "$build/tests/fuzz/replay_$t" "$src/tests/fuzz/corpus/$t"; then
    echo "ok - corpus of $t replays cleanly"; pass=$((pass + 1))
  else
    echo "not ok - corpus of $t"; fail=$((fail + 1))
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
