/* The path tracer's two packet kernels (render/kernel.h): the default
 * one (four lanes with AVX2) and the AVX-512 one (eight lanes) give the
 * same film byte for byte, on every shape, material and light kind, with
 * every optional buffer of the film; the choice follows the CPU and
 * $ATELIER_RENDER_KERNEL. Criterion runs each test in a process of its
 * own, so a test's choice of kernel does not leak into the next. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"
#include "test_scenes.h"

enum { W = 40, H = 30 };

typedef struct {
  float rgb[W * H * 3], odd[W * H * 3], albedo[W * H * 3], normal[W * H * 3];
  uint32_t count[W * H];
} film_bufs;

/* Whether this CPU runs the AVX-512 kernel, asked the way libgcc's
 * dispatch asks, independently of the library's answer. */
static int cpu_has_avx512(void) {
#ifdef __x86_64__
  __builtin_cpu_init();
  return __builtin_cpu_supports("x86-64-v4");
#else
  return 0;
#endif
}

/* A film of the scene with the kernel k: three tiles, two sample ranges
 * each, a pixel filter, and every third pixel of the middle rows left
 * out as adaptive sampling would. */
static void render_with(atl_render_kernel_t k, const atl_render_scene_t *s,
                        int filter, int bsdf_only, film_bufs *f) {
  cr_assert_eq(atl_render_kernel_select(k), 0);
  cr_assert_eq(atl_render_kernel(), k);
  static uint8_t active[W * H];
  for (int i = 0; i < W * H; i++)
    active[i] = !(i / W > 10 && i / W < 20 && i % 3 == 0);
  memset(f, 0, sizeof(*f));
  atl_render_params_t p = {.width = W,
                           .height = H,
                           .max_depth = 8,
                           .seed = 11,
                           .filter = filter,
                           .no_light_sampling = bsdf_only};
  atl_render_film_t film = {f->rgb,    f->count,  f->odd,
                            f->albedo, f->normal, active};
  static const int tiles[3][4] = {{0, 0, W, 9}, {0, 9, 23, H}, {23, 9, W, H}};
  for (int t = 0; t < 3; t++) {
    atl_render_tile_film(s, &p, tiles[t][0], tiles[t][1], tiles[t][2],
                         tiles[t][3], 0, 3, &film);
    atl_render_tile_film(s, &p, tiles[t][0], tiles[t][1], tiles[t][2],
                         tiles[t][3], 3, 5, &film);
  }
}

static void same_film(const char *scene, int filter, int bsdf_only) {
  atl_render_scene_t *s = atl_test_scene_file(scene);
  static film_bufs a, b;
  render_with(ATL_RENDER_KERNEL_DEFAULT, s, filter, bsdf_only, &a);
  render_with(ATL_RENDER_KERNEL_AVX512, s, filter, bsdf_only, &b);
  cr_assert_eq(memcmp(a.count, b.count, sizeof(a.count)), 0, "%s", scene);
  static const char *what[4] = {"radiance", "odd samples", "albedo", "normal"};
  const float *pa[4] = {a.rgb, a.odd, a.albedo, a.normal};
  const float *pb[4] = {b.rgb, b.odd, b.albedo, b.normal};
  for (int k = 0; k < 4; k++)
    for (int i = 0; i < W * H * 3; i++)
      cr_assert(memcmp(&pa[k][i], &pb[k][i], sizeof(float)) == 0,
                "%s: %s of pixel %d channel %d: %.9g (%s) vs %.9g (%s)", scene,
                what[k], i / 3, i % 3, (double)pa[k][i],
                atl_render_kernel_name(ATL_RENDER_KERNEL_DEFAULT),
                (double)pb[k][i],
                atl_render_kernel_name(ATL_RENDER_KERNEL_AVX512));
  /* Not a film of zeros: the scene is lit in both. */
  double total = 0;
  for (int i = 0; i < W * H * 3; i++)
    total += a.rgb[i];
  cr_assert_gt(total, 1.0, "%s", scene);
  atl_render_scene_free(s);
}

Test(render_kernel, the_cpu_decides) {
  unsetenv("ATELIER_RENDER_KERNEL"); /* the runner's own choice aside */
  atl_render_kernel_t k = atl_render_kernel();
  cr_assert_eq(k,
               cpu_has_avx512() ? ATL_RENDER_KERNEL_AVX512
                                : ATL_RENDER_KERNEL_DEFAULT,
               "kernel %s on a CPU %s AVX-512", atl_render_kernel_name(k),
               cpu_has_avx512() ? "with" : "without");
  cr_assert_eq(atl_render_kernel_lanes(ATL_RENDER_KERNEL_AVX512), 8);
  cr_assert_str_eq(atl_render_kernel_name(ATL_RENDER_KERNEL_AVX512), "avx512");
  /* Without AVX-512 the request is refused and nothing changes. */
  if (!cpu_has_avx512()) {
    cr_assert_eq(atl_render_kernel_select(ATL_RENDER_KERNEL_AVX512), -ENOTSUP);
    cr_assert_eq(atl_render_kernel(), ATL_RENDER_KERNEL_DEFAULT);
  }
}

Test(render_kernel, the_environment_can_ask_for_the_default) {
  setenv("ATELIER_RENDER_KERNEL", "default", 1);
  cr_assert_eq(atl_render_kernel(), ATL_RENDER_KERNEL_DEFAULT);
}

/* The comparisons need a CPU with AVX-512; without one, the test shows
 * that the library does not pretend to have compared (the request is
 * refused) and fails, since passing would claim what was not checked.
 * configure builds the kernel (and this test) by default only on a CPU
 * that runs it; --enable-avx512 elsewhere asks for this failure. */
static void require_avx512(void) {
  cr_assert(cpu_has_avx512(),
            "this CPU has no AVX-512: the two kernels cannot be compared "
            "here (configure --disable-avx512 leaves the kernel out)");
}

Test(render_kernel, same_film_every_kind, .timeout = 120) {
  require_avx512();
  same_film("scenes/every-kind.json", ATL_RENDER_FILTER_BLACKMAN_HARRIS, 0);
}

Test(render_kernel, same_film_bsdf_only, .timeout = 120) {
  require_avx512();
  same_film("scenes/every-kind.json", ATL_RENDER_FILTER_GAUSSIAN, 1);
}

Test(render_kernel, same_film_cornell_and_snowman, .timeout = 120) {
  require_avx512();
  same_film("scenes/cornell.json", ATL_RENDER_FILTER_BOX, 0);
  same_film("scenes/snowman.json", ATL_RENDER_FILTER_BOX, 0);
}
