#!/usr/bin/env bash
# The AVX-512 packet kernel (render/kernel.h) is a second copy of three of
# the tracer's files, linked into the same library under renamed symbols.
# A function added to those files without a rename in kernel.h would link
# anyway, and callers of either copy could end up in the other, with
# packets of another width: this checks that the second copy defines only
# renamed symbols and the first none of them.
#
# Run by `make check` (ATL_TEST_BUILDDIR) in builds with the kernel.
# Output: "ok N - ..." or "not ok N - ..." lines and "P passed, F failed".
set -uo pipefail

builddir=${ATL_TEST_BUILDDIR:?ATL_TEST_BUILDDIR must name the build directory}
lib=$builddir/render/.libs
passed=0
failed=0
n=0
result() { # result STATUS DESC
  n=$((n + 1))
  if [ "$1" -eq 0 ]; then
    passed=$((passed + 1))
    echo "ok $n - $2"
  else
    failed=$((failed + 1))
    echo "not ok $n - $2"
  fi
}

# The external symbols an object file defines.
defined() { nm --defined-only --extern-only "$@" | awk 'NF == 3 { print $3 }'; }

second=$(ls "$lib"/librender_avx512_la-*.o 2>/dev/null)
first=$(ls "$lib"/librender_la-*.o 2>/dev/null)
[ -n "$second" ] && [ -n "$first" ]
result $? "the kernel's objects are built ($lib)"

# shellcheck disable=SC2086
stray=$(defined $second | grep -v '_avx512$')
[ -n "$second" ] && [ -z "$stray" ]
result $? "the AVX-512 copy defines only *_avx512 symbols"
[ -z "$stray" ] || echo "# not renamed in render/kernel.h: $stray"

# shellcheck disable=SC2086
theirs=$(defined $first | grep '_avx512$')
[ -n "$first" ] && [ -z "$theirs" ]
result $? "the default copy defines none of them"
[ -z "$theirs" ] || echo "# $theirs"

# shellcheck disable=SC2086
n_renamed=$(defined $second | wc -l)
n_macros=$(grep -c '^#define atl__rt_[a-z0-9_]* atl__rt_[a-z0-9_]*_avx512$' \
  "${ATL_TEST_SRCDIR:-$builddir/..}/render/kernel.h")
[ "$n_renamed" -eq "$n_macros" ]
result $? "every rename in kernel.h names a symbol the copy defines ($n_renamed of $n_macros)"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
