/* Which packet kernel runs (kernel.h), and the entry points that run
 * it. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"
#include "simd.h"

/* -1 until decided; then an atl_render_kernel_t. The first call decides
 * by a compare-and-swap, so that it cannot undo a concurrent
 * atl_render_kernel_select(). */
static atomic_int chosen = -1;

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
  int k = atomic_load(&chosen);
  if (k < 0) {
    const char *env = getenv("ATELIER_RENDER_KERNEL");
    int want_default = env != NULL && strcmp(env, "default") == 0;
    int mine = !want_default && avx512_runs() ? ATL_RENDER_KERNEL_AVX512
                                              : ATL_RENDER_KERNEL_DEFAULT;
    int expected = -1;
    k = atomic_compare_exchange_strong(&chosen, &expected, mine) ? mine
                                                                 : expected;
  }
  return (atl_render_kernel_t)k;
}

int atl_render_kernel_select(atl_render_kernel_t k) {
  if (k == ATL_RENDER_KERNEL_AVX512 && !avx512_runs())
    return -ENOTSUP;
  atomic_store(&chosen, k == ATL_RENDER_KERNEL_AVX512
                            ? ATL_RENDER_KERNEL_AVX512
                            : ATL_RENDER_KERNEL_DEFAULT);
  return 0;
}

/* The default kernel is this file's own target: simd.h's lanes. */
const char *atl_render_kernel_name(atl_render_kernel_t k) {
  if (k == ATL_RENDER_KERNEL_AVX512)
    return "avx512";
#if defined(__AVX512F__)
  return "avx512";
#elif defined(__AVX2__)
  return "avx2";
#elif defined(__SSE2__)
  return "sse2";
#else
  return "generic";
#endif
}

int atl_render_kernel_lanes(atl_render_kernel_t k) {
  return k == ATL_RENDER_KERNEL_AVX512 ? 8 : RT_LANES;
}

/* The entry points of render.h: each runs the chosen kernel. */
void atl_render_tile_film(const atl_render_scene_t *s,
                          const atl_render_params_t *p, int x0, int y0, int x1,
                          int y1, uint64_t first, int n,
                          const atl_render_film_t *film) {
#ifdef ATL_RENDER_AVX512
  if (atl_render_kernel() == ATL_RENDER_KERNEL_AVX512) {
    atl__rt_tile_film_avx512(s, p, x0, y0, x1, y1, first, n, film);
    return;
  }
#endif
  atl__rt_tile_film(s, p, x0, y0, x1, y1, first, n, film);
}

void atl_render_tile_samples(const atl_render_scene_t *s,
                             const atl_render_params_t *p, int x0, int y0,
                             int x1, int y1, uint64_t first, int n,
                             float *rgb_sum, uint32_t *count) {
  atl_render_film_t film = {.rgb_sum = rgb_sum, .count = count};
  atl_render_tile_film(s, p, x0, y0, x1, y1, first, n, &film);
}

void atl_render_tile(const atl_render_scene_t *s, const atl_render_params_t *p,
                     int x0, int y0, int x1, int y1, int pass, float *rgb_sum,
                     uint32_t *count) {
  atl_render_tile_samples(s, p, x0, y0, x1, y1,
                          (uint64_t)pass * (uint64_t)p->spp_per_pass,
                          p->spp_per_pass, rgb_sum, count);
}
