/* The packet kernels: the code that traces packets of paths (integrator.c,
 * packet.c and shade4.c) is built twice on x86-64, once for the build's
 * own target (four lanes with AVX2) and once for AVX-512 (x86-64-v4,
 * eight lanes), and atl_render_tile_film() runs the second where the CPU
 * has it. One binary then runs at its best on both kinds of CPU, and
 * under valgrind, whose virtual CPU has no AVX-512, it falls back by
 * itself.
 *
 * The two kernels give the same image byte for byte: a lane's path does
 * not depend on the other lanes (packet.h), and both are built from the
 * same source with FMA, which is why configure builds the second only
 * over an x86-64-v3 default (tests/unit/test_render_kernel.c checks it).
 *
 * This header is included first by packet.h. When a file is compiled as
 * the AVX-512 kernel (RT_KERNEL_AVX512 defined, by render/Makefile.am),
 * it renames the kernel's external symbols, so that the two copies link
 * into one library (tests/integration/test_render_symbols.sh checks that the
 * second copy defines nothing else). */
#ifndef ATL_RENDER_KERNEL_H
#define ATL_RENDER_KERNEL_H

#ifdef RT_KERNEL_AVX512
#ifndef __AVX512F__
/* A -march in the user's CFLAGS comes after the kernel's own and would
 * quietly make this copy another AVX2 one. */
#error "the AVX-512 kernel built without AVX-512: a -march in CFLAGS?"
#endif
#define atl__rt_tile_film atl__rt_tile_film_avx512
#define atl__rt_ray4_prepare atl__rt_ray4_prepare_avx512
#define atl__rt_intersect4 atl__rt_intersect4_avx512
#define atl__rt_occluded4 atl__rt_occluded4_avx512
#define atl__rt_scatter4 atl__rt_scatter4_avx512
#define atl__rt_escape4 atl__rt_escape4_avx512
#define atl__rt_quad_lanes atl__rt_quad_lanes_avx512
#endif

#include "render.h"

/* The kernels. */
typedef enum {
  /* The build's own target; atl_render_kernel_name() says which. */
  ATL_RENDER_KERNEL_DEFAULT,
  /* x86-64-v4, eight lanes. */
  ATL_RENDER_KERNEL_AVX512,
} atl_render_kernel_t;

/* The kernel atl_render_tile_film() runs: AVX-512 where it was built and
 * the CPU and the OS support it, unless $ATELIER_RENDER_KERNEL says
 * "default" (read once, at the first call). Thread-safe. The render
 * farm passes its choice on to its workers. */
atl_render_kernel_t atl_render_kernel(void);

/* A kernel's name for logs and benchmarks ("avx512", or the default's
 * target: "avx2", "sse2" or "generic") and its lanes. */
const char *atl_render_kernel_name(atl_render_kernel_t k);
int atl_render_kernel_lanes(atl_render_kernel_t k);

/* Chooses the kernel for this process, over the environment. Returns 0,
 * or -ENOTSUP for AVX-512 where it was not built or the CPU lacks it (the
 * kernel in use is then unchanged). For tests and benchmarks. */
int atl_render_kernel_select(atl_render_kernel_t k);

/* One kernel's atl_render_tile_film(), the same contract (render.h). */
void atl__rt_tile_film(const atl_render_scene_t *s,
                       const atl_render_params_t *p, int x0, int y0, int x1,
                       int y1, uint64_t first, int n,
                       const atl_render_film_t *film);
#ifndef RT_KERNEL_AVX512
void atl__rt_tile_film_avx512(const atl_render_scene_t *s,
                              const atl_render_params_t *p, int x0, int y0,
                              int x1, int y1, uint64_t first, int n,
                              const atl_render_film_t *film);
#endif

#endif
