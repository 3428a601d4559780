/* Which packet kernel runs (kernel.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"

/* -1 until the first call decides; then an atl_render_kernel_t. Relaxed
 * atomics: every thread that decides decides the same. */
static _Atomic int chosen = -1;

static int avx512_runs(void) {
#if defined(ATL_RENDER_AVX512) && defined(__x86_64__)
  /* The x86-64-v4 level: AVX-512 F, BW, CD, DQ and VL, and an OS that
   * saves the registers (libgcc checks XCR0 for it). */
  __builtin_cpu_init();
  return __builtin_cpu_supports("x86-64-v4");
#else
  return 0;
#endif
}

atl_render_kernel_t atl_render_kernel(void) {
  int k = chosen;
  if (k < 0) {
    const char *env = getenv("ATELIER_RENDER_KERNEL");
    int want_default = env != NULL && strcmp(env, "default") == 0;
    k = !want_default && avx512_runs() ? ATL_RENDER_KERNEL_AVX512
                                       : ATL_RENDER_KERNEL_DEFAULT;
    chosen = k;
  }
  return (atl_render_kernel_t)k;
}

int atl_render_kernel_select(atl_render_kernel_t k) {
  if (k == ATL_RENDER_KERNEL_AVX512 && !avx512_runs())
    return -ENOTSUP;
  chosen = k == ATL_RENDER_KERNEL_AVX512 ? ATL_RENDER_KERNEL_AVX512
                                         : ATL_RENDER_KERNEL_DEFAULT;
  return 0;
}

const char *atl_render_kernel_name(atl_render_kernel_t k) {
  if (k == ATL_RENDER_KERNEL_AVX512)
    return "avx512";
#if defined(__AVX2__)
  return "avx2";
#elif defined(__SSE2__)
  return "sse2";
#else
  return "generic";
#endif
}

int atl_render_kernel_lanes(atl_render_kernel_t k) {
  if (k == ATL_RENDER_KERNEL_AVX512)
    return 8;
    /* simd.h's choice for the build's target. */
#if defined(__AVX__)
  return 4;
#else
  return 2;
#endif
}
