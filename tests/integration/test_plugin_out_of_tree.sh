#!/bin/bash
# A plugin built out of tree, as doc/plugin-guide.md says: only
# atelier-plugin.pc and the public headers, a plain `cc -shared`, then loaded
# by the real daemon and called with atelierctl.
set -euo pipefail
build=${ATL_TEST_BUILDDIR:?} src=${ATL_TEST_SRCDIR:?}
tmp=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
pass=0 fail=0 n=0
check() { # check DESCRIPTION COMMAND...
  n=$((n + 1))
  if "${@:2}"; then echo "ok $n - $1"; pass=$((pass + 1)); else echo "not ok $n - $1"; fail=$((fail + 1)); fi
}

# The .pc as installed, but pointing at the source tree's headers.
mkdir -p "$tmp/pc" "$tmp/plugins"
sed -e "s|^includedir=.*|includedir=$src/include|" "$build/atelier-plugin.pc" >"$tmp/pc/atelier-plugin.pc"
export PKG_CONFIG_PATH="$tmp/pc"
header_abi() { sed -n "s/^#define ATL_PLUGIN_ABI_$1 \\([0-9]*\\)\$/\\1/p" "$src/include/atelier/plugin.h"; }
check "pkg-config knows atelier-plugin and the header's ABI, major and minor" \
  test "$(pkg-config --variable=abi_major atelier-plugin).$(pkg-config --variable=abi_minor atelier-plugin)" = "$(header_abi MAJOR).$(header_abi MINOR)"
# shellcheck disable=SC2046
check "the plugin builds with cc and the .pc alone" \
  cc -std=gnu17 -Wall -Wextra -Werror -shared -fPIC -o "$tmp/plugins/hello.so" \
  "$src/tests/data/hello_plugin.c" $(pkg-config --cflags --libs atelier-plugin)
check "it exports the descriptor" \
  bash -c "nm -D '$tmp/plugins/hello.so' | grep -q ' atl_plugin$'"

"$build/atelierd" --foreground --socket-dir "$tmp/run" --data-dir "$tmp/data" \
  --plugin-dir "$tmp/plugins" 2>"$tmp/daemon.log" &
pid=$!
for _ in $(seq 100); do [ -S "$tmp/run/api.sock" ] && break; sleep 0.1; done
ctl() { "$build/atelierctl" --socket-dir "$tmp/run" "$@"; }
check "the daemon lists the tool" bash -c "'$build/atelierctl' --socket-dir '$tmp/run' tools | grep -q '^hello'"
session=$(ctl session new)
out=$(ctl call "$session" hello '{}')
check "the schema default reaches the handler" grep -q '"greeting": "world"' <<<"$out"
out=$(ctl call "$session" hello '{"name":"Ada"}')
check "the call returns the plugin's result" grep -q '"greeting": "Ada"' <<<"$out"
set +e
out=$(ctl call "$session" hello '{"nom":"Ada"}' 2>&1)
rc=$?
set -e
validated() { [ "$rc" -eq 1 ] && grep -q "unexpected property 'nom'" <<<"$out"; }
check "the host validates before the plugin runs (exit 1, names the property)" validated

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
