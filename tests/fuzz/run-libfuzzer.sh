#!/bin/sh
# Builds each fuzz target with clang's libFuzzer (plus ASan and UBSan) and
# fuzzes it for SECONDS, starting from a copy of its seed corpus. A crash
# leaves its input in $out/<target>/crash-* and fails the run; add such an
# input to tests/fuzz/corpus/<target>/ once fixed, so replay.sh keeps it.
#
#   tests/fuzz/run-libfuzzer.sh [BUILD_DIR] [SECONDS]
#
# ATL_FUZZ_TARGETS chooses the targets (default: all of them), e.g.
# ATL_FUZZ_TARGETS=scene tests/fuzz/run-libfuzzer.sh build 600
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
secs=${2:-20}
out=$build/tests/fuzz/libfuzzer
cc=${CLANG:-clang}
command -v "$cc" >/dev/null || { echo "clang not found: apt-get install clang libclang-rt-14-dev"; exit 1; }
mkdir -p "$out"
flags="-g -O1 -std=gnu17 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
  -D_GNU_SOURCE -I$src/include -I$src/daemon -I$src/plugins/scene -I$src/fcgi -I$src/render -I$src/optics -I$src/plugins/optics -I$src/plugins/drawing -I$src/tests/unit -I$src/mcp -I$src/common -I$build $(pkg-config --cflags json-c libpcre2-8 inih libcrypto sqlite3 libpng libjpeg)"
libs="$(pkg-config --libs json-c libpcre2-8 inih libcrypto sqlite3 libpng libjpeg) -lpthread -lm"
sources() {
  case $1 in
    jsonrpc) echo daemon/jsonrpc.c daemon/util.c ;;
    schema) echo daemon/schema.c daemon/schema_compile.c daemon/schema_msg.c daemon/util.c \
      daemon/providers/wire_schema.c ;;
    config) echo daemon/config.c daemon/config_provider.c daemon/log.c daemon/util.c ;;
    stream) echo daemon/agent/sse.c daemon/providers/turn.c daemon/providers/request.c \
      daemon/providers/openai.c daemon/providers/anthropic.c \
      daemon/providers/gemini.c daemon/providers/wire_schema.c \
      daemon/providers/models.c daemon/util.c ;;
    fcgi) echo fcgi/match.c ;;
    mcp) echo mcp/mcp.c mcp/mcp_call.c mcp/mcp_direct.c mcp/mcp_http.c common/rpc_client.c ;;
    # The fitter, and the unit tests' libpng/libjpeg reader that checks
    # its output.
    image_fit) echo daemon/image_fit.c tests/unit/image_samples.c ;;
    optics_expr) echo optics/fail.c optics/expr.c optics/expr_parse.c optics/expr_deriv.c ;;
    # The tracer's own files: everything in render/ but the farm, its
    # worker, the CLI and PNG encoding.
    render) (cd "$src" && ls render/*.c | grep -v -e farm -e worker -e cli -e png) ;;
    # The optics simulator: its library's files, not the CLI.
    optics_scene) (cd "$src" && ls optics/*.c | grep -v -e cli) ;;
    optics_mathexpr) echo optics/fail.c optics/jsnum.c optics/mathexpr.c \
      optics/mathexpr_eval.c optics/mathexpr_tex.c ;;
    # The ray database on the simulator, its geometry and lineage.
    optics_query) (cd "$src" && ls optics/*.c | grep -v -e cli) ;
      echo plugins/optics/opx_run.c plugins/optics/opx_geom.c \
        plugins/optics/opx_geom_index.c plugins/optics/opx_lineage.c \
        plugins/optics/opx_db.c plugins/optics/opx_db_query.c \
        plugins/optics/opx_db_schema.c plugins/optics/opx_db_rays.c \
        plugins/optics/opx_db_vfs.c plugins/optics/opx_db_printf.c ;;
    optics_module) echo optics/fail.c optics/jsnum.c optics/mathexpr.c \
      optics/mathexpr_eval.c optics/mathexpr_tex.c optics/module.c ;;
    drawing_path) echo plugins/drawing/dpath.c ;;
    drawing_genout) echo plugins/drawing/dpath.c plugins/drawing/canvas.c \
      plugins/drawing/genout.c ;;
    scene) echo daemon/schema.c daemon/schema_compile.c daemon/schema_msg.c \
      daemon/util.c plugins/scene/scene.c plugins/scene/scene_state.c \
      plugins/scene/scene_objects.c plugins/scene/scene_describe.c \
      plugins/scene/scene_io.c ;;
  esac
}
status=0
for t in ${ATL_FUZZ_TARGETS:-jsonrpc schema config scene stream fcgi render \
    optics_scene optics_mathexpr optics_module optics_expr optics_query \
    image_fit drawing_path drawing_genout mcp}; do
  files=
  for f in $(sources $t) tests/fuzz/fuzz_$t.c; do files="$files $src/$f"; done
  # shellcheck disable=SC2086
  if ! $cc $flags -o "$out/fuzz_$t" $files $libs; then
    echo "not ok - fuzz_$t does not build (a source file missing from sources() above?)"
    status=1
    continue
  fi
  rm -rf "$out/$t" && mkdir -p "$out/$t/corpus"
  cp "$src/tests/fuzz/corpus/$t/"* "$out/$t/corpus/"
  if (cd "$out/$t" && ASAN_OPTIONS=detect_leaks=1 "$out/fuzz_$t" \
        -max_total_time="$secs" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 corpus >log 2>&1); then
    echo "ok - fuzz_$t: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/$t/log" | grep -o '[0-9]*$') runs in ${secs} s, no crash"
  else
    echo "not ok - fuzz_$t crashed; see $out/$t/log"; tail -30 "$out/$t/log"; status=1
  fi
done
exit $status
