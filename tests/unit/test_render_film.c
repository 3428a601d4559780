/* The path tracer's film (render/integrator.c, atl_render_tile_film())
 * and its pixel filters (render/filter.c): the filters' names and
 * checks, the offsets they sample, their edges in a picture, renders
 * split into tiles, the active mask, the odd-sample sums and the
 * denoiser's guides. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "rt.h"
#include "test_scenes.h"

/* The filters as Cycles defines them (scene/film.cpp: the Gaussian's
 * width scaled by 3 and the Blackman-Harris's by 2 before the table is
 * made over +-width/2), written out again here rather than taken from
 * the library, and their supports: the Gaussian's is cut at 3 sigma,
 * where Cycles' goes on to 6. */
static double filter_value(int filter, double w, double x) {
  switch (filter) {
  case ATL_RENDER_FILTER_GAUSSIAN: {
    double v = x * 6 / (3 * w);
    return fabs(x) <= 0.75 * w ? exp(-2 * v * v) : 0;
  }
  case ATL_RENDER_FILTER_BLACKMAN_HARRIS: {
    if (fabs(x) > w)
      return 0;
    double v = 2 * M_PI * (x / (2 * w) + 0.5);
    return 0.35875 - 0.48829 * cos(v) + 0.14128 * cos(2 * v) -
           0.01168 * cos(3 * v);
  }
  default:
    return fabs(x) <= w / 2 ? 1 : 0;
  }
}

/* The share of the filter's mass left of x, by the midpoint rule. */
static double filter_cdf(int filter, double w, double x) {
  enum { N = 20000 };
  double r = 1.5 * w, dx = 2 * r / N, below = 0, total = 0;
  for (int i = 0; i < N; i++) {
    double t = -r + (i + 0.5) * dx, f = filter_value(filter, w, t);
    total += f;
    below += t < x ? f : 0;
  }
  return below / total;
}

Test(render_filter, names_and_checks) {
  int f = -1;
  cr_assert_eq(atl_render_filter_parse("box", &f), 0);
  cr_assert_eq(f, ATL_RENDER_FILTER_BOX);
  cr_assert_eq(atl_render_filter_parse("gaussian", &f), 0);
  cr_assert_eq(f, ATL_RENDER_FILTER_GAUSSIAN);
  cr_assert_eq(atl_render_filter_parse("blackman-harris", &f), 0);
  cr_assert_eq(f, ATL_RENDER_FILTER_BLACKMAN_HARRIS);
  f = 7;
  cr_assert_eq(atl_render_filter_parse("blackman_harris", &f), 0);
  cr_assert_eq(f, ATL_RENDER_FILTER_BLACKMAN_HARRIS);
  f = 7;
  cr_assert_eq(atl_render_filter_parse("mitchell", &f), -EINVAL);
  cr_assert_eq(atl_render_filter_parse("", &f), -EINVAL);
  cr_assert_eq(atl_render_filter_parse(NULL, &f), -EINVAL);
  cr_assert_eq(f, 7, "a refused name leaves the filter alone");
  cr_assert_str_eq(atl_render_filter_name(2), "blackman-harris");
  cr_assert_null(atl_render_filter_name(3));
  cr_assert_null(atl_render_filter_name(-1));

  char msg[200];
  static const double good[] = {0, 0.5, 1, 1.5, 8};
  for (int i = 0; i < 5; i++)
    for (int k = 0; k < 3; k++)
      cr_assert_eq(atl_render_filter_check(k, good[i], msg, sizeof(msg)), 0,
                   "filter %d width %g", k, good[i]);
  static const double bad[] = {-1, 0.49, 8.01, 100, NAN, INFINITY};
  for (int i = 0; i < 6; i++) {
    msg[0] = 0;
    cr_assert_eq(atl_render_filter_check(1, bad[i], msg, sizeof(msg)), -EINVAL,
                 "width %g", bad[i]);
    cr_assert(strstr(msg, "between 0.5 and 8 pixels") != NULL, "%s", msg);
  }
  cr_assert_eq(atl_render_filter_check(1, 9, NULL, 0), -EINVAL);
  cr_assert_eq(atl_render_filter_check(3, 1, msg, sizeof(msg)), -EINVAL);
  cr_assert(strstr(msg, "box, gaussian or blackman-harris") != NULL, "%s", msg);
  cr_assert_eq(atl_render_filter_width(0, 0), 1);
  cr_assert_eq(atl_render_filter_width(1, 0), 1.5);
  cr_assert_eq(atl_render_filter_width(2, 0), 1.5);
  cr_assert_eq(atl_render_filter_width(2, 3), 3);
}

/* The offsets drawn for evenly spread numbers u fall into 0.05-pixel
 * bins as the filter's mass does: each bin within 1 % of the filter's
 * total (the whole histogram within 0.5 % in L1), and the standard
 * deviation within 0.5 % of the filter's. */
static void histogram_matches(int filter, double width) {
  enum { N = 1 << 20, BINS = 400 };
  const rt_filter *f = atl__rt_filter_get(filter, width);
  double w = atl_render_filter_width(filter, width);
  double bin = 0.05, lo = -BINS * bin / 2;
  static double hist[BINS];
  memset(hist, 0, sizeof(hist));
  double m2 = 0;
  for (int i = 0; i < N; i++) {
    double o = rt_filter_offset(f, (i + 0.5) / N);
    int k = (int)floor((o - lo) / bin);
    cr_assert(k >= 0 && k < BINS, "offset %f", o);
    hist[k] += 1.0 / N;
    m2 += o * o / N;
  }
  double l1 = 0, want_m2 = 0, total = 0;
  for (int i = 0; i < 40000; i++) {
    double x = lo + (i + 0.5) * (BINS * bin / 40000);
    double v = filter_value(filter, w, x);
    want_m2 += v * x * x, total += v;
  }
  want_m2 /= total;
  for (int k = 0; k < BINS; k++) {
    double a = lo + k * bin;
    double want = filter_cdf(filter, w, a + bin) - filter_cdf(filter, w, a);
    cr_assert_lt(fabs(hist[k] - want), 0.01, "filter %d bin %d: %f, want %f",
                 filter, k, hist[k], want);
    l1 += fabs(hist[k] - want);
  }
  cr_assert_lt(l1, 0.005, "filter %d width %g: L1 %f", filter, width, l1);
  cr_assert_lt(fabs(sqrt(m2 / want_m2) - 1), 0.005,
               "filter %d width %g: sigma %f, want %f", filter, width, sqrt(m2),
               sqrt(want_m2));
}

Test(render_filter, offsets_follow_the_filter) {
  histogram_matches(ATL_RENDER_FILTER_BOX, 2);
  histogram_matches(ATL_RENDER_FILTER_GAUSSIAN, 0);
  histogram_matches(ATL_RENDER_FILTER_GAUSSIAN, 3);
  histogram_matches(ATL_RENDER_FILTER_BLACKMAN_HARRIS, 0);
  histogram_matches(ATL_RENDER_FILTER_BLACKMAN_HARRIS, 0.5);
  /* Cycles' sigma for the Gaussian, a quarter of the width, less the
   * 1.4 % its cut at 3 sigma takes off. */
  const rt_filter *f = atl__rt_filter_get(ATL_RENDER_FILTER_GAUSSIAN, 2);
  double m2 = 0;
  for (int i = 0; i < 100000; i++) {
    double o = rt_filter_offset(f, (i + 0.5) / 100000);
    m2 += o * o / 100000;
  }
  cr_assert_lt(fabs(sqrt(m2) - 0.5 * 0.9866), 0.002, "sigma %f", sqrt(m2));
}

/* A filter the checks refuse renders as the box of width 1. */
Test(render_filter, refused_falls_back_to_the_box) {
  const rt_filter *f = atl__rt_filter_get(9, 1.5);
  cr_assert(f->unit_box);
  f = atl__rt_filter_get(ATL_RENDER_FILTER_GAUSSIAN, 60);
  cr_assert(f->unit_box);
  f = atl__rt_filter_get(ATL_RENDER_FILTER_BOX, 0);
  cr_assert(f->unit_box);
  f = atl__rt_filter_get(ATL_RENDER_FILTER_BOX, 1.5);
  cr_assert(!f->unit_box);
}

/* The parameters of a w x h render. */
static atl_render_params_t params(int w, int h, int depth, uint64_t seed,
                                  int filter, double width) {
  atl_render_params_t p = {.width = w,
                           .height = h,
                           .max_depth = depth,
                           .seed = seed,
                           .filter = filter,
                           .filter_width = width};
  return p;
}

/* A white emitter filling the left half of the view (x > 0: the camera
 * looks along -z) against a black sky: the edge lies on the boundary between
 * columns 15 and 16 of a 32-pixel row, so column i's value is the share of the
 * filter's mass left of 15.5 - i pixels from its centre. */
static const char *edge_scene =
    "{\"camera\": {\"center\": [0,0,5], \"look_at\": [0,0,0], \"vfov\": 30},"
    " \"environment\": {\"type\": \"none\"}, \"shapes\": [{\"id\": \"w\","
    " \"type\": \"quad\", \"properties\": {\"corner\": [0,-10,0], \"u\":"
    " [40,0,0], \"v\": [0,20,0], \"material\": {\"type\": \"emissive\","
    " \"emission\": [1,1,1]}}}]}";

/* The edge's profile, averaged over the rows; returns how many columns
 * are neither black nor white (within 2 %). */
static int edge_profile(const atl_render_scene_t *s, int filter, double width,
                        double prof[32]) {
  enum { W = 32, H = 4, SPP = 2048 };
  atl_render_params_t p = params(W, H, 2, 5, filter, width);
  float *sum = calloc(W * H * 3, sizeof(float));
  uint32_t *count = calloc(W * H, sizeof(uint32_t));
  atl_render_tile_samples(s, &p, 0, 0, W, H, 0, SPP, sum, count);
  int grey = 0;
  double w = atl_render_filter_width(filter, width);
  for (int x = 0; x < W; x++) {
    prof[x] = 0;
    for (int y = 0; y < H; y++)
      prof[x] += sum[(y * W + x) * 3] / count[y * W + x] / H;
    /* 4 rows of 2048 samples: the binomial's standard deviation is at
     * most 0.0055. */
    double want = filter_cdf(filter, w, 15.5 - x);
    cr_assert_lt(fabs(prof[x] - want), 0.03,
                 "filter %d width %g column %d: %f, want %f", filter, width, x,
                 prof[x], want);
    grey += prof[x] > 0.02 && prof[x] < 0.98;
  }
  free(sum);
  free(count);
  return grey;
}

Test(render_filter, wider_filters_soften_edges) {
  atl_render_scene_t *s = atl_test_scene_str(edge_scene);
  double box[32], bh[32], bh3[32], gauss4[32];
  int g_box = edge_profile(s, ATL_RENDER_FILTER_BOX, 0, box);
  int g_bh = edge_profile(s, ATL_RENDER_FILTER_BLACKMAN_HARRIS, 0, bh);
  int g_bh3 = edge_profile(s, ATL_RENDER_FILTER_BLACKMAN_HARRIS, 3, bh3);
  int g_gauss4 = edge_profile(s, ATL_RENDER_FILTER_GAUSSIAN, 4, gauss4);
  /* The box of width 1 keeps every pixel on its side of the edge. */
  cr_assert_eq(g_box, 0);
  cr_assert_eq(box[15], 1);
  cr_assert_eq(box[16], 0);
  /* Blackman-Harris 1.5 reaches 1.5 pixels, so the two columns either
   * side of the edge blend; at width 3, four; the Gaussian of width 4
   * (sigma 1) as many. */
  cr_assert_eq(g_bh, 2, "%d grey columns", g_bh);
  cr_assert_geq(g_bh3, 4, "%d grey columns", g_bh3);
  cr_assert_geq(g_gauss4, 4, "%d grey columns", g_gauss4);
  atl_render_scene_free(s);
}

/* For each filter, the film of a render in uneven tiles and sample
 * ranges is the film of the whole frame in one go, byte for byte. */
static void split_equals_unsplit(int filter, double width) {
  enum { W = 24, H = 20, N = W * H };
  atl_render_scene_t *s = atl_test_scene_file("scenes/snowman.json");
  atl_render_params_t p = params(W, H, 5, 3, filter, width);
  float *buf = calloc(N * 3 * 8, sizeof(float));
  uint32_t *cnt = calloc(N * 2, sizeof(uint32_t));
  atl_render_film_t a = {buf, cnt, buf + N * 3, buf + N * 6, buf + N * 9, NULL};
  atl_render_film_t b = {buf + N * 12, cnt + N,      buf + N * 15,
                         buf + N * 18, buf + N * 21, NULL};
  atl_render_tile_film(s, &p, 0, 0, W, H, 0, 6, &a);
  int tiles[4][4] = {
      {13, 7, 24, 20}, {0, 7, 13, 20}, {13, 0, 24, 7}, {0, 0, 13, 7}};
  for (int t = 0; t < 4; t++) {
    atl_render_tile_film(s, &p, tiles[t][0], tiles[t][1], tiles[t][2],
                         tiles[t][3], 0, 1, &b);
    atl_render_tile_film(s, &p, tiles[t][0], tiles[t][1], tiles[t][2],
                         tiles[t][3], 1, 5, &b);
  }
  cr_assert_eq(memcmp(buf, buf + N * 12, N * 12 * sizeof(float)), 0,
               "filter %d: the split film differs", filter);
  cr_assert_eq(memcmp(cnt, cnt + N, N * sizeof(uint32_t)), 0);
  /* The filter changes the picture (but not the box of width 1). */
  atl_render_params_t q = p;
  q.filter = ATL_RENDER_FILTER_BOX, q.filter_width = 0;
  memset(buf + N * 12, 0, N * 12 * sizeof(float));
  memset(cnt + N, 0, N * sizeof(uint32_t));
  atl_render_tile_film(s, &q, 0, 0, W, H, 0, 6, &b);
  int same = memcmp(buf, buf + N * 12, N * 3 * sizeof(float)) == 0;
  int unit_box = filter == ATL_RENDER_FILTER_BOX && (width == 0 || width == 1);
  cr_assert_eq(same, unit_box, "filter %d width %g", filter, width);
  atl_render_scene_free(s);
  free(buf);
  free(cnt);
}

Test(render_filter, split_render_equals_unsplit, .timeout = 60) {
  split_equals_unsplit(ATL_RENDER_FILTER_BOX, 0);
  split_equals_unsplit(ATL_RENDER_FILTER_BOX, 2);
  split_equals_unsplit(ATL_RENDER_FILTER_GAUSSIAN, 0);
  split_equals_unsplit(ATL_RENDER_FILTER_BLACKMAN_HARRIS, 0);
  split_equals_unsplit(ATL_RENDER_FILTER_BLACKMAN_HARRIS, 4);
}

/* An active mask skips its pixels whole: their sums and counts keep what
 * they had, and every other pixel gets what an unmasked render gives it,
 * byte for byte. */
Test(render_film, active_mask_skips_pixels) {
  enum { W = 20, H = 16, N = W * H };
  atl_render_scene_t *s = atl_test_scene_file("scenes/cornell.json");
  atl_render_params_t p = {.width = W,
                           .height = H,
                           .max_depth = 5,
                           .seed = 11,
                           .filter = ATL_RENDER_FILTER_BLACKMAN_HARRIS};
  float *a = calloc(N * 12, sizeof(float)), *b = calloc(N * 12, sizeof(float));
  uint32_t *ca = calloc(N, sizeof(uint32_t)), *cb = calloc(N, sizeof(uint32_t));
  uint8_t *active = malloc(N);
  memset(active, 1, N);
  atl_render_film_t fa = {a, ca, a + N * 3, a + N * 6, a + N * 9, NULL};
  atl_render_film_t fb = {b, cb, b + N * 3, b + N * 6, b + N * 9, active};
  /* Both films take samples 0 .. 3 everywhere; then samples 4 .. 7 for
   * every pixel in a and for a scattered half of them in b, the first
   * and last pixels of the tile among the skipped ones. */
  atl_render_tile_film(s, &p, 0, 0, W, H, 0, 4, &fa);
  atl_render_tile_film(s, &p, 0, 0, W, H, 0, 4, &fb);
  float *before = malloc(N * 12 * sizeof(float));
  memcpy(before, b, N * 12 * sizeof(float));
  int off = 0;
  for (int i = 0; i < N; i++) {
    active[i] = (i * 7 + i / 5) % 3 != 0 && i != 0 && i != N - 1;
    off += !active[i];
  }
  cr_assert_gt(off, N / 4);
  atl_render_tile_film(s, &p, 0, 0, W, H, 4, 4, &fa);
  atl_render_tile_film(s, &p, 0, 0, W, H, 4, 4, &fb);
  for (int i = 0; i < N; i++) {
    const float *want = active[i] ? a : before;
    cr_assert_eq(cb[i], active[i] ? 8u : 4u, "pixel %d count %u", i, cb[i]);
    for (int plane = 0; plane < 4; plane++)
      cr_assert_eq(memcmp(b + plane * N * 3 + i * 3,
                          want + plane * N * 3 + i * 3, 3 * sizeof(float)),
                   0, "pixel %d (active %d) plane %d", i, active[i], plane);
  }
  /* A mask with every pixel off leaves the film as it was. */
  memset(active, 0, N);
  memcpy(before, b, N * 12 * sizeof(float));
  atl_render_tile_film(s, &p, 0, 0, W, H, 8, 4, &fb);
  cr_assert_eq(memcmp(before, b, N * 12 * sizeof(float)), 0);
  atl_render_scene_free(s);
  free(a), free(b), free(ca), free(cb), free(active), free(before);
}

/* rgb_odd is the sum of the odd-indexed samples, and rgb_sum of all of
 * them: rendered one sample at a time, each sample's radiance is on its
 * own, and adding them up in order gives the same floats. */
Test(render_film, odd_sums_are_the_odd_samples) {
  enum { W = 12, H = 10, N = W * H, SPP = 7 };
  atl_render_scene_t *s = atl_test_scene_file("scenes/snowman.json");
  atl_render_params_t p = {.width = W, .height = H, .max_depth = 5, .seed = 2};
  float *sum = calloc(N * 3, sizeof(float)),
        *odd = calloc(N * 3, sizeof(float));
  uint32_t *count = calloc(N, sizeof(uint32_t));
  atl_render_film_t f = {sum, count, odd, NULL, NULL, NULL};
  /* Samples 3 .. 9: the index, not the place in the call, is odd. */
  atl_render_tile_film(s, &p, 0, 0, W, H, 3, SPP, &f);
  float *one = malloc(N * 3 * sizeof(float));
  uint32_t *c1 = malloc(N * sizeof(uint32_t));
  double *want_sum = calloc(N * 3, sizeof(double));
  float *want = calloc(N * 3, sizeof(float)),
        *want_odd = calloc(N * 3, sizeof(float));
  int nonzero = 0;
  for (int k = 3; k < 3 + SPP; k++) {
    memset(one, 0, N * 3 * sizeof(float));
    memset(c1, 0, N * sizeof(uint32_t));
    atl_render_tile_samples(s, &p, 0, 0, W, H, (uint64_t)k, 1, one, c1);
    for (int i = 0; i < N * 3; i++) {
      want[i] += one[i];
      if (k & 1)
        want_odd[i] += one[i];
      nonzero += (k & 1) && one[i] != 0;
    }
  }
  cr_assert_gt(nonzero, N, "the odd samples are not all black");
  cr_assert_eq(memcmp(sum, want, N * 3 * sizeof(float)), 0);
  cr_assert_eq(memcmp(odd, want_odd, N * 3 * sizeof(float)), 0);
  cr_assert_neq(memcmp(odd, want, N * 3 * sizeof(float)), 0);
  for (int i = 0; i < N; i++)
    cr_assert_eq(count[i], SPP);
  atl_render_scene_free(s);
  free(sum), free(odd), free(count), free(one), free(c1), free(want_sum);
  free(want), free(want_odd);
}

/* A wall of one colour seen square on, either side towards the camera,
 * with a sphere in front of part of it and the sky around: the albedo
 * guide is the wall's colour, the normal guide a unit vector towards the
 * camera in every sample, and a pixel of sky has zeros. */
static void guides_of_a_wall(const char *u_v) {
  enum { W = 24, H = 16, N = W * H, SPP = 4 };
  char doc[1024];
  snprintf(doc, sizeof(doc),
           "{\"camera\": {\"center\": [0,0,10], \"look_at\": [0,0,0], "
           "\"vfov\": 40}, \"environment\": {\"type\": \"uniform\", "
           "\"emission\": [0.5,0.5,0.5]}, \"shapes\": [{\"id\": \"wall\", "
           "\"type\": \"quad\", \"properties\": {\"corner\": [-2,-2,0], "
           "%s, \"material\": {\"type\": \"lambertian\", \"albedo\": "
           "[0.8,0.1,0.05]}}}, {\"id\": \"ball\", \"type\": \"sphere\", "
           "\"properties\": {\"center\": [-1,0,2], \"radius\": 1, "
           "\"material\": {\"type\": \"lambertian\", \"albedo\": "
           "[0.2,0.3,0.9]}}}]}",
           u_v);
  atl_render_scene_t *s = atl_test_scene_str(doc);
  atl_render_params_t p = {.width = W,
                           .height = H,
                           .max_depth = 3,
                           .seed = 4,
                           .filter = ATL_RENDER_FILTER_GAUSSIAN};
  float *buf = calloc(N * 9, sizeof(float));
  uint32_t *count = calloc(N, sizeof(uint32_t));
  atl_render_film_t f = {buf, count, NULL, buf + N * 3, buf + N * 6, NULL};
  atl_render_tile_film(s, &p, 0, 0, W, H, 0, SPP, &f);
  int wall = 0, sky = 0, ball = 0;
  for (int i = 0; i < N; i++) {
    const float *a = buf + N * 3 + i * 3, *n = buf + N * 6 + i * 3;
    double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]) / SPP;
    cr_assert_leq(len, 1 + 1e-6, "pixel %d: |normal| %f", i, len);
    if (fabs(a[0] / SPP - 0.8) < 1e-6 && fabs(a[1] / SPP - 0.1) < 1e-6 &&
        fabs(a[2] / SPP - 0.05) < 1e-6) {
      /* All samples on the wall, whose normal faces the camera (+z). */
      wall++;
      cr_assert_lt(fabs(n[2] / SPP - 1), 1e-6, "pixel %d: n %f %f %f", i, n[0],
                   n[1], n[2]);
      cr_assert_lt(fabs(n[0]) + fabs(n[1]), 1e-6);
    } else if (a[0] == 0 && a[1] == 0 && a[2] == 0) {
      sky++;
      cr_assert(n[0] == 0 && n[1] == 0 && n[2] == 0, "sky pixel %d", i);
    } else if (fabs(a[2] / SPP - 0.9) < 1e-6) {
      /* On the ball: unit normals on the side towards the camera. */
      ball++;
      cr_assert_gt(n[2], 0, "ball pixel %d", i);
      cr_assert_gt(len, 0.9, "ball pixel %d: |normal| %f", i, len);
    }
  }
  cr_assert_gt(wall, N / 10, "%d wall pixels", wall);
  cr_assert_gt(sky, N / 10, "%d sky pixels", sky);
  cr_assert_gt(ball, 4, "%d ball pixels", ball);
  atl_render_scene_free(s);
  free(buf), free(count);
}

Test(render_film, guides_are_albedo_and_normal) {
  /* u x v along +z, towards the camera; then along -z, away. */
  guides_of_a_wall("\"u\": [4,0,0], \"v\": [0,4,0]");
  guides_of_a_wall("\"u\": [0,4,0], \"v\": [4,0,0]");
}
