/* The a-trous denoiser (render/denoise.c): it removes noise from flat
 * regions, keeps the edges its guides show, leaves a constant image
 * alone, does not spread values that are not finite, and takes every
 * size from 1 x 1 on. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "denoise.h"
#include "rng.h"

/* Plain pseudo-random numbers for the test images: a counter through
 * the splitmix64 mixer, independent of the renderer's sampler (rng.h),
 * whose draws are made for paths, not for noise images. */
typedef struct {
  uint64_t ctr;
} noise_t;

static noise_t noise_make(uint64_t a, uint64_t b, uint64_t c) {
  noise_t n = {rt_mix64(a * 0x9e3779b97f4a7c15ULL ^ rt_mix64(b ^ rt_mix64(c)))};
  return n;
}

static double uniform(noise_t *n) {
  return (double)(rt_mix64(++n->ctr) >> 11) * 0x1p-53;
}

/* A Gaussian number of standard deviation 1 (Box-Muller). */
static double gauss(noise_t *r) {
  double u = uniform(r), v = uniform(r);
  return sqrt(-2 * log(1 - u)) * cos(2 * M_PI * v);
}

/* Test images: rgb, albedo, normal (w * h * 3) and variance (w * h). */
typedef struct {
  int w, h;
  float *rgb, *alb, *nrm, *var, *out;
} img_t;

static img_t img_new(int w, int h) {
  size_t n = (size_t)w * h;
  img_t m = {w,
             h,
             calloc(n * 3, 4),
             calloc(n * 3, 4),
             calloc(n * 3, 4),
             calloc(n, 4),
             calloc(n * 3, 4)};
  return m;
}

static void img_free(img_t *m) {
  free(m->rgb), free(m->alb), free(m->nrm), free(m->var), free(m->out);
}

/* Pixel (x, y): albedo a, normal n, irradiance e with Gaussian noise of
 * relative standard deviation sd, and the matching variance of rgb. */
static void set_px(img_t *m, int x, int y, const float a[3], const float n[3],
                   double e, double sd, noise_t *r) {
  size_t i = (size_t)y * m->w + x;
  double k = 1 + sd * gauss(r);
  double v = 0;
  for (int c = 0; c < 3; c++) {
    m->alb[i * 3 + c] = a[c];
    m->nrm[i * 3 + c] = n[c];
    m->rgb[i * 3 + c] = (float)(a[c] * e * k);
    v += (a[c] * e * sd) * (a[c] * e * sd) / 3;
  }
  m->var[i] = (float)v;
}

/* The standard deviation of channel c over the rectangle, about its
 * mean (in *mean). */
static double spread(const float *im, int w, int x0, int y0, int x1, int y1,
                     int c, double *mean) {
  double s = 0, s2 = 0;
  int n = 0;
  for (int y = y0; y < y1; y++)
    for (int x = x0; x < x1; x++) {
      double v = im[((size_t)y * w + x) * 3 + c];
      s += v, s2 += v * v, n++;
    }
  *mean = s / n;
  return sqrt(fmax(0, s2 / n - *mean * *mean));
}

static const float grey[3] = {0.5f, 0.5f, 0.5f};
static const float up[3] = {0, 0, 1};

/* A flat wall with 20 % noise: with the variance given and without, the
 * noise drops at least tenfold and the mean stays. */
Test(denoise, flat_noise_drops) {
  img_t m = img_new(64, 48);
  noise_t r = noise_make(1, 2, 3);
  for (int y = 0; y < 48; y++)
    for (int x = 0; x < 64; x++)
      set_px(&m, x, y, grey, up, 1, 0.2, &r);
  double m0, m1, s0 = spread(m.rgb, 64, 0, 0, 64, 48, 0, &m0);
  for (int with_var = 1; with_var >= 0; with_var--) {
    cr_assert_eq(atl_render_denoise(m.rgb, m.alb, m.nrm,
                                    with_var ? m.var : NULL, 64, 48, m.out),
                 0);
    double s1 = spread(m.out, 64, 0, 0, 64, 48, 0, &m1);
    cr_log_info("flat noise, variance %s: sd %.4f -> %.4f (x%.1f)",
                with_var ? "given" : "estimated", s0, s1, s0 / s1);
    cr_assert_lt(s1, s0 / 10, "variance %d: sd %f -> %f", with_var, s0, s1);
    cr_assert_lt(fabs(m1 / m0 - 1), 0.01, "mean %f -> %f", m0, m1);
  }
  img_free(&m);
}

/* Two halves that only a guide tells apart (albedo 0.8 against 0.2 under
 * the same light; or the same albedo, facing two ways, lit 1 against
 * 0.25): the columns either side of the edge keep their own mean within
 * 3 %, and the noise still drops. */
static void edge_stays(int by_normal) {
  enum { W = 48, H = 40 };
  img_t m = img_new(W, H);
  noise_t r = noise_make(4, 5, 6);
  static const float light[3] = {0.8f, 0.8f, 0.8f},
                     dark[3] = {0.2f, 0.2f, 0.2f};
  static const float side[3] = {1, 0, 0};
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      int left = x < W / 2;
      if (by_normal)
        set_px(&m, x, y, light, left ? up : side, left ? 1 : 0.25, 0.2, &r);
      else
        set_px(&m, x, y, left ? light : dark, up, 1, 0.2, &r);
    }
  cr_assert_eq(atl_render_denoise(m.rgb, m.alb, m.nrm, m.var, W, H, m.out), 0);
  double want[2] = {0.8, 0.2}, mean, before;
  for (int side_i = 0; side_i < 2; side_i++) {
    int x = side_i ? W / 2 : W / 2 - 1;
    double s1 = spread(m.out, W, x, 0, x + 1, H, 1, &mean);
    double s0 = spread(m.rgb, W, x, 0, x + 1, H, 1, &before);
    cr_assert_lt(fabs(mean / want[side_i] - 1), 0.03,
                 "by normal %d: column %d mean %f, want %f", by_normal, x, mean,
                 want[side_i]);
    cr_assert_lt(s1, s0 / 3, "column %d: sd %f -> %f", x, s0, s1);
  }
  img_free(&m);
}

Test(denoise, albedo_edge_stays_sharp) {
  edge_stays(0);
}

Test(denoise, normal_edge_stays_sharp) {
  edge_stays(1);
}

/* A shadow edge, which no guide shows (one albedo, one normal): with the
 * variance given, the colour weight alone keeps the two sides apart. */
Test(denoise, shadow_edge_kept_by_the_variance) {
  enum { W = 48, H = 40 };
  img_t m = img_new(W, H);
  noise_t r = noise_make(7, 8, 9);
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++)
      set_px(&m, x, y, grey, up, x < W / 2 ? 1 : 0.1, 0.1, &r);
  cr_assert_eq(atl_render_denoise(m.rgb, m.alb, m.nrm, m.var, W, H, m.out), 0);
  double lit, shade;
  spread(m.out, W, W / 2 - 1, 0, W / 2, H, 0, &lit);
  spread(m.out, W, W / 2, 0, W / 2 + 1, H, 0, &shade);
  cr_assert_lt(fabs(lit / 0.5 - 1), 0.05, "lit column %f", lit);
  cr_assert_lt(fabs(shade / 0.05 - 1), 0.15, "shaded column %f", shade);
  img_free(&m);
}

/* A constant image comes back as it was, with or without guides. */
Test(denoise, constant_image_unchanged) {
  enum { W = 37, H = 23 };
  img_t m = img_new(W, H);
  for (int i = 0; i < W * H; i++)
    for (int c = 0; c < 3; c++) {
      m.rgb[i * 3 + c] = 0.3f + 0.2f * c;
      m.alb[i * 3 + c] = 0.6f;
      m.nrm[i * 3 + c] = c == 1 ? 1.0f : 0.0f;
    }
  for (int guides = 0; guides < 2; guides++) {
    cr_assert_eq(atl_render_denoise(m.rgb, guides ? m.alb : NULL,
                                    guides ? m.nrm : NULL,
                                    guides ? m.var : NULL, W, H, m.out),
                 0);
    for (int i = 0; i < W * H * 3; i++)
      cr_assert_lt(fabs(m.out[i] / m.rgb[i] - 1), 1e-5, "pixel %d: %f -> %f",
                   i / 3, m.rgb[i], m.out[i]);
  }
  img_free(&m);
}

/* NaN and infinities in any input neither crash it nor spread: every
 * output is finite, and pixels far from them barely move from the clean
 * image's result. */
Test(denoise, non_finite_does_not_spread) {
  enum { W = 40, H = 30 };
  img_t m = img_new(W, H), clean = img_new(W, H);
  noise_t r = noise_make(3, 3, 3);
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++)
      set_px(&m, x, y, grey, up, 1, 0.1, &r);
  memcpy(clean.rgb, m.rgb, W * H * 3 * 4);
  memcpy(clean.alb, m.alb, W * H * 3 * 4);
  memcpy(clean.nrm, m.nrm, W * H * 3 * 4);
  memcpy(clean.var, m.var, W * H * 4);
  cr_assert_eq(atl_render_denoise(clean.rgb, clean.alb, clean.nrm, clean.var, W,
                                  H, clean.out),
               0);
  int bad[] = {5 * W + 5, 6 * W + 20, 20 * W + 30, 25 * W + 8};
  m.rgb[bad[0] * 3] = NAN;
  m.rgb[bad[1] * 3 + 1] = INFINITY;
  m.rgb[bad[2] * 3 + 2] = -INFINITY;
  m.alb[bad[3] * 3] = NAN;
  m.nrm[bad[0] * 3 + 2] = INFINITY;
  m.var[bad[1]] = NAN;
  m.var[bad[2]] = INFINITY;
  cr_assert_eq(atl_render_denoise(m.rgb, m.alb, m.nrm, m.var, W, H, m.out), 0);
  double worst = 0, worst_near = 0;
  for (int i = 0; i < W * H * 3; i++) {
    cr_assert(isfinite(m.out[i]), "pixel %d channel %d: %f", i / 3, i % 3,
              m.out[i]);
    int own = 0, near = 0, x = i / 3 % W, y = i / 3 / W;
    for (int k = 0; k < 4; k++) {
      own |= i / 3 == bad[k];
      near |= abs(x - bad[k] % W) <= 1 && abs(y - bad[k] / W) <= 1;
    }
    double d = fabs(m.out[i] - clean.out[i]);
    if (!near)
      worst = fmax(worst, d);
    else if (!own)
      worst_near = fmax(worst_near, d);
  }
  /* A colour that is not finite counts as 0, so the pixel itself goes
   * dark, and a variance that is not finite as 0. The others take
   * nothing from them, but every pixel within the filter's reach has a
   * tap fewer than in the clean image, which moves it by a share of the
   * noise (0.05 in the input): spreading would move them by far more
   * (or make them NaN). */
  cr_assert_lt(worst_near, 0.05, "worst change next to them %f", worst_near);
  cr_assert_lt(worst, 0.025, "worst change elsewhere %f", worst);
  img_free(&m);
  img_free(&clean);
}

/* 1 x 1, 1 x N and N x 1 images work; a single pixel comes back as it
 * was. */
Test(denoise, small_sizes) {
  static const int sizes[][2] = {{1, 1}, {1, 17}, {17, 1}, {2, 3}};
  for (int k = 0; k < 4; k++) {
    int w = sizes[k][0], h = sizes[k][1];
    img_t m = img_new(w, h);
    noise_t r = noise_make(1, 1, (uint64_t)k);
    for (int y = 0; y < h; y++)
      for (int x = 0; x < w; x++)
        set_px(&m, x, y, grey, up, 1, 0.2, &r);
    cr_assert_eq(atl_render_denoise(m.rgb, m.alb, m.nrm, m.var, w, h, m.out), 0,
                 "%dx%d", w, h);
    for (int i = 0; i < w * h * 3; i++) {
      cr_assert(isfinite(m.out[i]) && m.out[i] > 0, "%dx%d: %f", w, h,
                m.out[i]);
      if (w * h == 1)
        cr_assert_lt(fabs(m.out[i] / m.rgb[i] - 1), 1e-6);
    }
    img_free(&m);
  }
}

Test(denoise, invalid_sizes) {
  img_t m = img_new(4, 4);
  cr_assert_eq(atl_render_denoise(m.rgb, NULL, NULL, NULL, 0, 4, m.out),
               -EINVAL);
  cr_assert_eq(atl_render_denoise(m.rgb, NULL, NULL, NULL, 4, -1, m.out),
               -EINVAL);
  cr_assert_eq(atl_render_denoise(m.rgb, NULL, NULL, NULL, 70000, 1, m.out),
               -EINVAL);
  cr_assert_eq(atl_render_denoise(m.rgb, NULL, NULL, NULL, 1, 70000, m.out),
               -EINVAL);
  cr_assert_eq(atl_render_denoise(m.rgb, NULL, NULL, NULL, 65536, 65536, m.out),
               -EINVAL, "4 G pixels");
  cr_assert_eq(atl_render_denoise(NULL, NULL, NULL, NULL, 4, 4, m.out),
               -EINVAL);
  cr_assert_eq(atl_render_denoise(m.rgb, NULL, NULL, NULL, 4, 4, NULL),
               -EINVAL);
  cr_assert_eq(atl_render_denoise(m.rgb, NULL, NULL, NULL, 4, 4, m.rgb),
               -EINVAL, "out may not alias rgb");
  cr_assert_eq(atl_render_denoise(m.rgb, NULL, NULL, NULL, 4, 4, m.rgb + 3),
               -EINVAL, "nor overlap it");
  cr_assert_eq(atl_render_denoise(m.rgb, NULL, NULL, NULL, 4, 4, m.out), 0);
  img_free(&m);
}

/* A firefly (one pixel a hundred times too bright) on a noisy wall is
 * clamped into its neighbours' range rather than kept or spread; a line
 * one pixel wide of another albedo, whose pixels have neighbours of
 * their kind along it, stays. */
Test(denoise, fireflies_go_lines_stay) {
  enum { W = 40, H = 30 };
  img_t m = img_new(W, H);
  noise_t r = noise_make(5, 5, 5);
  static const float dark[3] = {0.1f, 0.1f, 0.1f};
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++)
      set_px(&m, x, y, x == 30 ? dark : grey, up, 1, 0.1, &r);
  size_t f = (size_t)(10 * W + 10) * 3;
  for (int c = 0; c < 3; c++)
    m.rgb[f + c] = 50;
  cr_assert_eq(atl_render_denoise(m.rgb, m.alb, m.nrm, m.var, W, H, m.out), 0);
  cr_assert_lt(fabs(m.out[f] - 0.5), 0.1, "the firefly: %f", m.out[f]);
  for (int y = 8; y <= 12; y++)
    for (int x = 8; x <= 12; x++)
      cr_assert_lt(fabs(m.out[(y * W + x) * 3] - 0.5), 0.05,
                   "(%d, %d) near the firefly: %f", x, y,
                   m.out[(y * W + x) * 3]);
  double line;
  spread(m.out, W, 30, 0, 31, H, 0, &line);
  cr_assert_lt(fabs(line / 0.1 - 1), 0.05, "the line: %f", line);
  img_free(&m);
}

/* The edge of a light seen directly: a column of pixels a tenth covered
 * by a light of 45 (so about 4.7, and noisy: each sample hits the light
 * or not) between the light and a wall of 0.25, all facing the same way,
 * the edge's albedo between the two. Its pixels keep their mean within
 * 10 % rather than taking the wall's (or the light's) for noise. */
Test(denoise, light_edges_stay) {
  enum { W = 40, H = 30, EDGE = 20 };
  img_t m = img_new(W, H);
  noise_t r = noise_make(9, 9, 9);
  static const float wall[3] = {0.73f, 0.73f, 0.73f}, lamp[3] = {1, 1, 1};
  static const float mix[3] = {0.757f, 0.757f, 0.757f};
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      if (x < EDGE)
        set_px(&m, x, y, lamp, up, 45, 0, &r);
      else if (x > EDGE)
        set_px(&m, x, y, wall, up, 0.25 / 0.73, 0.2, &r);
      else /* 16 samples of which about 1.6 hit the light */
        set_px(&m, x, y, mix, up, (0.1 * 45 + 0.9 * 0.25) / 0.757, 0.75, &r);
    }
  cr_assert_eq(atl_render_denoise(m.rgb, m.alb, m.nrm, m.var, W, H, m.out), 0);
  double edge, lit, wall_m;
  spread(m.out, W, EDGE, 0, EDGE + 1, H, 0, &edge);
  spread(m.out, W, EDGE - 1, 0, EDGE, H, 0, &lit);
  spread(m.out, W, EDGE + 1, 0, EDGE + 2, H, 0, &wall_m);
  cr_assert_lt(fabs(edge / 4.725 - 1), 0.1, "the edge: %f", edge);
  cr_assert_lt(fabs(lit / 45 - 1), 0.01, "the light beside it: %f", lit);
  cr_assert_lt(fabs(wall_m / 0.25 - 1), 0.05, "the wall beside it: %f", wall_m);
  img_free(&m);
}
