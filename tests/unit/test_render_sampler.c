/* The path tracer's low-discrepancy sampler (render/rng.h, path4.h):
 * Sobol's second dimension computed from the index's reversed bits, the
 * stratification of a pixel's first 2^m samples in every dimension, the
 * independence of different dimensions and pixels, and the packets'
 * lanes drawing exactly what the scalar code draws. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "path4.h"
#include "rng.h"

/* Sobol's second dimension the textbook way: the direction numbers of
 * the primitive polynomial x + 1 (v_0 = 1/2, v_q = v_(q-1) xor
 * v_(q-1) / 2), xored for each set bit of the index. */
static uint32_t sobol1_reference(uint32_t i) {
  uint32_t v = 1u << 31, y = 0;
  for (; i; i >>= 1, v ^= v >> 1)
    if (i & 1)
      y ^= v;
  return y;
}

Test(render_sampler, sobol_second_dimension_matches_its_direction_numbers) {
  for (uint32_t i = 0; i < (1u << 16); i++)
    cr_assert_eq(rt_sobol1(rt_reverse32(i)), sobol1_reference(i), "index %u",
                 i);
  uint64_t z = 12345;
  for (int k = 0; k < 100000; k++) {
    z = rt_mix64(z);
    uint32_t i = (uint32_t)z;
    cr_assert_eq(rt_sobol1(rt_reverse32(i)), sobol1_reference(i), "index %u",
                 i);
    cr_assert_eq(rt_reverse32(rt_reverse32(i)), i);
  }
}

/* Draws dimension `dim` (0-based, all 2D) of sample i of a pixel. */
static void draw2(uint64_t seed, uint64_t pixel, uint64_t i, int dim, double *a,
                  double *b) {
  rt_rng r = rt_rng_make(seed, pixel, i);
  rt_rng_vertex(&r, 2);
  for (int d = 0; d <= dim; d++)
    rt_rand2(&r, a, b);
}

/* The first 2^m samples of a pixel, in each 2D dimension, are a (0,m,2)
 * net: exactly one point in every cell of every 2^k x 2^(m-k) grid. So
 * are the next 2^m (the farm's passes add samples by powers of two). */
Test(render_sampler, a_pixels_first_samples_are_stratified_in_2d) {
  enum { M = 8, N = 1 << M };
  static double a[2 * N], b[2 * N];
  for (uint64_t pixel = 0; pixel < 16; pixel++)
    for (int dim = 0; dim < 12; dim++) {
      for (int i = 0; i < 2 * N; i++)
        draw2(42, pixel * 7919, (uint64_t)i, dim, &a[i], &b[i]);
      for (int block = 0; block < 2; block++)
        for (int m = 1; m <= M; m++)
          for (int k = 0; k <= m; k++) {
            static unsigned char seen[N];
            memset(seen, 0, sizeof(seen));
            int first = block * N, n = 1 << m;
            for (int i = first; i < first + n; i++) {
              int cx = (int)(a[i] * (1 << k)),
                  cy = (int)(b[i] * (1 << (m - k)));
              int cell = cx * (1 << (m - k)) + cy;
              cr_assert_eq(seen[cell], 0,
                           "pixel %d dim %d: samples %d.. of %d: two in "
                           "cell (%d, %d) of the %d x %d grid",
                           (int)pixel, dim, first, n, cx, cy, 1 << k,
                           1 << (m - k));
              seen[cell] = 1;
            }
          }
    }
}

Test(render_sampler, a_pixels_first_samples_are_stratified_in_1d) {
  enum { N = 512 };
  for (uint64_t pixel = 0; pixel < 16; pixel++)
    for (int dim = 0; dim < 8; dim++) {
      static unsigned char seen[N];
      memset(seen, 0, sizeof(seen));
      for (int i = 0; i < N; i++) {
        rt_rng r = rt_rng_make(3, pixel, (uint64_t)i);
        rt_rng_vertex(&r, 1);
        double u = 0;
        for (int d = 0; d <= dim; d++)
          u = rt_rand(&r);
        int cell = (int)(u * N);
        cr_assert_eq(seen[cell], 0, "pixel %d dim %d: two in cell %d",
                     (int)pixel, dim, cell);
        seen[cell] = 1;
      }
    }
}

/* Two dimensions of the same samples are unrelated: their pairs fill the
 * square like independent numbers (chi-square over 16 x 16 cells of
 * 2^16 samples of a pixel; 255 degrees of freedom, 370 is five standard
 * deviations above the mean). A linear (xor) shuffle of the index would
 * fail this: the second dimension's points would be the first's, shifted
 * (every point of a digital net xored with one constant), and the pairs
 * would lie on a handful of lines. So do a vertex's dimensions and the
 * next vertex's, and the same dimension of neighbouring pixels. */
static double chi_square(const double *x, const double *y, int n) {
  enum { C = 16 };
  static int h[C][C];
  memset(h, 0, sizeof(h));
  for (int i = 0; i < n; i++)
    h[(int)(x[i] * C)][(int)(y[i] * C)]++;
  double e = (double)n / (C * C), chi = 0;
  for (int i = 0; i < C; i++)
    for (int j = 0; j < C; j++)
      chi += (h[i][j] - e) * (h[i][j] - e) / e;
  return chi;
}

Test(render_sampler, dimensions_and_pixels_are_independent) {
  enum { N = 1 << 16 };
  static double a0[N], b0[N], a1[N], b1[N], a2[N], b2[N], c[N], d[N];
  for (int i = 0; i < N; i++) {
    rt_rng r = rt_rng_make(9, 77, (uint64_t)i);
    rt_rng_vertex(&r, 1);
    rt_rand2(&r, &a0[i], &b0[i]);
    rt_rand2(&r, &a1[i], &b1[i]);
    rt_rng_vertex(&r, 2);
    rt_rand2(&r, &a2[i], &b2[i]);
    rt_rng q = rt_rng_make(9, 78, (uint64_t)i);
    rt_rng_vertex(&q, 1);
    rt_rand2(&q, &c[i], &d[i]);
  }
  const double *pairs[][2] = {{a0, a1}, {b0, b1}, {a0, b1}, {a1, a2},
                              {b1, b2}, {a0, a2}, {a0, c},  {b0, d}};
  for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]); k++) {
    double chi = chi_square(pairs[k][0], pairs[k][1], N);
    cr_assert_lt(chi, 370, "pair %d: chi-square %f", (int)k, chi);
  }
}

/* The packets' form of a sample's index is the scalar code's. */
Test(render_sampler, packets_take_a_sample_as_one_lane_does) {
  uint64_t z = 99;
  for (int k = 0; k < 20000; k++) {
    u4 index;
    for (int l = 0; l < RT_LANES; l++)
      index[l] = k < 1000 ? (uint64_t)(k * RT_LANES + l) : (z = rt_mix64(z));
    u4 got = rng4_sample(index);
    for (int l = 0; l < RT_LANES; l++)
      cr_assert_eq(got[l], rt_rng_sample(index[l]), "index %llu",
                   (unsigned long long)index[l]);
  }
}

/* The packets draw what the scalar code draws, lane by lane, whatever
 * the other lanes do (integrator.c's lanes move between the two). */
Test(render_sampler, packets_draw_what_one_lane_draws) {
  for (int round = 0; round < 200; round++) {
    rt_paths4 pa;
    memset(&pa, 0, sizeof(pa));
    rt_rng one[RT_LANES];
    for (int l = 0; l < RT_LANES; l++) {
      one[l] = rt_rng_make((uint64_t)round, (uint64_t)(l * 31 + round),
                           (uint64_t)(round * 3 + l));
      rt_rng_vertex(&one[l], 1 + l);
      pa.ctr[l] = one[l].ctr;
      pa.key[l] = one[l].key;
      pa.rsmp[l] = one[l].rsmp;
      pa.depth[l] = 1 + l;
    }
    for (int step = 0; step < 12; step++) {
      /* Lanes draw or not as a path's would. */
      m4 mask = M4_NONE;
      for (int l = 0; l < RT_LANES; l++)
        mask[l] = ((round + step + l) % 3) ? -1 : 0;
      /* Every lane, the common case, and none, now and then. */
      if (round % 4 == 0)
        mask = M4_ALL;
      else if (round % 4 == 1 && step == 4)
        mask = M4_NONE;
      if (step == 6) {
        rng4_vertex(&pa, mask, pa.depth + 1);
        for (int l = 0; l < RT_LANES; l++)
          if (mask[l])
            rt_rng_vertex(&one[l], (int)pa.depth[l] + 1);
        continue;
      }
      if (step % 2) {
        d4 u = rand4(&pa, mask);
        for (int l = 0; l < RT_LANES; l++)
          if (mask[l])
            cr_assert_eq(u[l], rt_rand(&one[l]), "round %d step %d lane %d",
                         round, step, l);
      } else if (step % 4 == 2) {
        /* Two 2D draws at once, as a lambertian vertex makes them. */
        d4 a, b, c, d;
        rand4x2x2(&pa, mask, &a, &b, &c, &d);
        for (int l = 0; l < RT_LANES; l++)
          if (mask[l]) {
            double x, y, z, w;
            rt_rand2(&one[l], &x, &y);
            rt_rand2(&one[l], &z, &w);
            cr_assert(a[l] == x && b[l] == y && c[l] == z && d[l] == w,
                      "round %d step %d lane %d (pair)", round, step, l);
          }
      } else {
        d4 a, b;
        rand4x2(&pa, mask, &a, &b);
        for (int l = 0; l < RT_LANES; l++)
          if (mask[l]) {
            double x, y;
            rt_rand2(&one[l], &x, &y);
            cr_assert(a[l] == x && b[l] == y, "round %d step %d lane %d", round,
                      step, l);
          }
      }
    }
  }
}

/* Over many pixels (the scramble's seeds), a given sample's draw is
 * uniform: the mean of a 2D draw's coordinates and of their product is
 * that of independent uniform numbers. A scramble that is not uniform
 * over its seed biases every image. */
Test(render_sampler, a_sample_is_uniform_over_pixels) {
  enum { N = 1 << 18 };
  for (uint64_t i = 0; i < 4; i++) {
    double sa = 0, sb = 0, sab = 0;
    for (uint64_t pixel = 0; pixel < N; pixel++) {
      double a, b;
      draw2(5, pixel, i, (int)i, &a, &b);
      sa += a, sb += b, sab += a * b;
    }
    /* Standard errors: 0.29 / 512 for a mean, about 0.0005. */
    cr_assert_lt(fabs(sa / N - 0.5), 0.003, "sample %d: mean a %f", (int)i,
                 sa / N);
    cr_assert_lt(fabs(sb / N - 0.5), 0.003, "sample %d: mean b %f", (int)i,
                 sb / N);
    cr_assert_lt(fabs(sab / N - 0.25), 0.003, "sample %d: mean ab %f", (int)i,
                 sab / N);
  }
}
