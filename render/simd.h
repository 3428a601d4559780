/* Four-lane vectors for the path tracer's packets: four doubles (d4),
 * the masks their comparisons give (m4, all ones or all zeros per lane)
 * and four 64-bit integers (u4). They are GCC vector extensions, so the
 * same code compiles to AVX2 on x86-64-v3 (RENDER_ARCH_CFLAGS), to pairs
 * of SSE2 registers on older x86-64 CPUs, and to plain scalar code
 * elsewhere; the few operations the extensions lack (square root, a mask
 * to bits) use intrinsics where there are some. */
#ifndef ATL_RENDER_SIMD_H
#define ATL_RENDER_SIMD_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __SSE2__
#include <immintrin.h>
#endif

typedef double d4 __attribute__((vector_size(32)));
typedef int64_t m4 __attribute__((vector_size(32)));
typedef uint64_t u4 __attribute__((vector_size(32)));

#define D4_INF ((d4){INFINITY, INFINITY, INFINITY, INFINITY})
#define D4_ZERO ((d4){0, 0, 0, 0})
#define M4_NONE ((m4){0, 0, 0, 0})

static inline d4 d4_set1(double x) {
  return (d4){x, x, x, x};
}

static inline d4 d4_load(const double *p) {
  d4 v;
  memcpy(&v, p, sizeof(v));
  return v;
}

static inline void d4_store(double *p, d4 v) {
  memcpy(p, &v, sizeof(v));
}

/* m ? a : b, lane by lane. */
static inline d4 d4_sel(m4 m, d4 a, d4 b) {
  return (d4)(((m4)a & m) | ((m4)b & ~m));
}

static inline m4 m4_sel(m4 m, m4 a, m4 b) {
  return (a & m) | (b & ~m);
}

/* Bit i set when lane i of the mask is. */
static inline int m4_bits(m4 m) {
#ifdef __AVX__
  return _mm256_movemask_pd((__m256d)m);
#else
  return (int)((m[0] & 1) | (m[1] & 2) | (m[2] & 4) | (m[3] & 8));
#endif
}

/* Lane-wise square roots: one vsqrtpd with AVX, two sqrtpd with SSE2. A
 * loop of sqrt() would be four scalar ones: GCC does not vectorise it. */
static inline d4 d4_sqrt(d4 v) {
#if defined(__AVX__)
  return (d4)_mm256_sqrt_pd((__m256d)v);
#elif defined(__SSE2__)
  __m128d h[2];
  memcpy(h, &v, sizeof(v));
  h[0] = _mm_sqrt_pd(h[0]);
  h[1] = _mm_sqrt_pd(h[1]);
  memcpy(&v, h, sizeof(v));
  return v;
#else
  for (int i = 0; i < 4; i++)
    v[i] = sqrt(v[i]);
  return v;
#endif
}

static inline d4 d4_min(d4 a, d4 b) {
  return d4_sel(a < b, a, b);
}

static inline d4 d4_max(d4 a, d4 b) {
  return d4_sel(a > b, a, b);
}

static inline d4 d4_abs(d4 a) {
  return (d4)((m4)a & (m4){INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX});
}

#endif
