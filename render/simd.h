/* Vectors for the path tracer's packets, a double per lane (d4), the
 * masks their comparisons give (m4, all ones or all zeros per lane) and
 * a 64-bit integer per lane (u4). They are GCC vector extensions, so the
 * same code compiles to AVX-512 on x86-64-v4 (the second kernel,
 * kernel.h), to AVX2 on x86-64-v3 (RENDER_ARCH_CFLAGS), to pairs
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

/* The lanes of a packet: as many doubles as a register holds, eight
 * with AVX-512, four with AVX, two with SSE2. The code is written for
 * any count, but vectors wider than the registers are slow: GCC 12
 * splits their arithmetic into halves but moves their comparison masks
 * lane by lane through general registers. Four lanes on SSE2 measured
 * half as fast as two, eight on AVX2 3.5 times slower than four. With
 * AVX-512, eight lanes measured 1.2 to 1.5 times the paths per second
 * of four (bench/README.md, render-core), and four no faster than
 * AVX2's. */
#ifndef RT_LANES
#ifdef __AVX512F__
#define RT_LANES 8
#elif defined(__AVX__)
#define RT_LANES 4
#else
#define RT_LANES 2
#endif
#endif

typedef double d4 __attribute__((vector_size(8 * RT_LANES)));
typedef int64_t m4 __attribute__((vector_size(8 * RT_LANES)));
typedef uint64_t u4 __attribute__((vector_size(8 * RT_LANES)));

/* An initialiser's list of f(l) for every lane l. */
#if RT_LANES == 2
#define RT_EACH_LANE(f) f(0), f(1)
#elif RT_LANES == 4
#define RT_EACH_LANE(f) f(0), f(1), f(2), f(3)
#elif RT_LANES == 8
#define RT_EACH_LANE(f) f(0), f(1), f(2), f(3), f(4), f(5), f(6), f(7)
#endif

static inline d4 d4_set1(double x) {
#define RT_X(l) x
  return (d4){RT_EACH_LANE(RT_X)};
}

static inline m4 m4_set1(int64_t x) {
  return (m4){RT_EACH_LANE(RT_X)};
#undef RT_X
}

/* The mask of lane l alone, from a comparison (of doubles, which SSE2
 * has for two lanes): setting one lane of a mask in memory and loading
 * it whole would stall on store forwarding. */
static inline m4 m4_lane(int l) {
#define RT_INDEX(i) (double)(i)
  return (d4){RT_EACH_LANE(RT_INDEX)} == d4_set1(l);
#undef RT_INDEX
}

#define D4_INF d4_set1(INFINITY)
#define D4_ZERO d4_set1(0)
#define M4_NONE m4_set1(0)
#define M4_ALL m4_set1(-1)

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

/* The intrinsics for one register's worth of lanes, which the vector
 * extensions lack: AVX-512's eight doubles, AVX's four or SSE2's two. */
#if defined(__AVX512F__)
typedef __m512d rt_chunk;
typedef __m512i rt_ichunk;
#define RT_CHUNK_SQRT _mm512_sqrt_pd
#define RT_CHUNK_BITS(v) ((int)_mm512_movepi64_mask(_mm512_castpd_si512(v)))
#define RT_CHUNK_GATHER(base, i) _mm512_i64gather_pd((i), (base), 8)
#elif defined(__AVX__)
typedef __m256d rt_chunk;
#define RT_CHUNK_SQRT _mm256_sqrt_pd
#define RT_CHUNK_BITS _mm256_movemask_pd
#ifdef __AVX2__
typedef __m256i rt_ichunk;
#define RT_CHUNK_GATHER(base, i) _mm256_i64gather_pd((base), (i), 8)
#endif
#elif defined(__SSE2__)
typedef __m128d rt_chunk;
#define RT_CHUNK_SQRT _mm_sqrt_pd
#define RT_CHUNK_BITS _mm_movemask_pd
#endif

/* Bit i set when lane i of the mask is. */
static inline int m4_bits(m4 m) {
  int bits = 0;
#ifdef RT_CHUNK_BITS
  enum { n = sizeof(m4) / sizeof(rt_chunk) };
  rt_chunk h[n];
  memcpy(h, &m, sizeof(m));
  for (int i = 0; i < n; i++)
    bits |= RT_CHUNK_BITS(h[i]) << (i * (RT_LANES / n));
#else
  for (int i = 0; i < RT_LANES; i++)
    bits |= (int)(m[i] & 1) << i;
#endif
  return bits;
}

/* Lane-wise square roots. A loop of sqrt() would be scalar: GCC does not
 * vectorise it. */
static inline d4 d4_sqrt(d4 v) {
#ifdef RT_CHUNK_SQRT
  enum { n = sizeof(d4) / sizeof(rt_chunk) };
  rt_chunk h[n];
  memcpy(h, &v, sizeof(v));
  for (int i = 0; i < n; i++)
    h[i] = RT_CHUNK_SQRT(h[i]);
  memcpy(&v, h, sizeof(v));
#else
  for (int i = 0; i < RT_LANES; i++)
    v[i] = sqrt(v[i]);
#endif
  return v;
}

/* base[idx[l]] in every lane l. */
static inline d4 d4_gather(const double *base, m4 idx) {
  d4 v;
#ifdef RT_CHUNK_GATHER
  enum { n = sizeof(d4) / sizeof(rt_chunk) };
  rt_ichunk i[n];
  rt_chunk g[n];
  memcpy(i, &idx, sizeof(idx));
  for (int k = 0; k < n; k++)
    g[k] = RT_CHUNK_GATHER(base, i[k]);
  memcpy(&v, g, sizeof(v));
#else
  for (int l = 0; l < RT_LANES; l++)
    v[l] = base[idx[l]];
#endif
  return v;
}

static inline d4 d4_min(d4 a, d4 b) {
  return d4_sel(a < b, a, b);
}

static inline d4 d4_max(d4 a, d4 b) {
  return d4_sel(a > b, a, b);
}

static inline d4 d4_abs(d4 a) {
  return (d4)((m4)a & m4_set1(INT64_MAX));
}

#endif
