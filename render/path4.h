/* A packet of paths in flight, in structure-of-arrays form, and the
 * vertices that the common cases (a diffuse surface lit by panel lights,
 * a mirror, glass, an escape to the sky) run for all of them at once
 * (shade4.c). The other cases run lane by lane in integrator.c on the
 * same state. */
#ifndef ATL_RENDER_PATH4_H
#define ATL_RENDER_PATH4_H

#include "packet.h"

typedef struct {
  d4 Lx, Ly, Lz;     /* radiance gathered so far */
  d4 bx, by, bz;     /* throughput */
  d4 ppx, ppy, ppz;  /* the previous vertex, for the light's pdf in MIS */
  d4 prev_pdf;       /* the BSDF pdf that chose the current ray */
  m4 prev_delta;     /* that choice was a delta lobe (or the camera) */
  d4 depth;          /* of the vertex the current ray will find */
  u4 ctr, key, rsmp; /* each lane's sampler (rt_rng in rng.h) */
  d4 scx, scy, scz;  /* a light sample waiting for its shadow ray */
  m4 item;           /* the sample's slot in the block */
} rt_paths4;

/* Where the lanes' rays hit a surface that atl__rt_scatter4() shades:
 * the point, the outward unit normal, the colour (a lambertian or
 * metal's albedo, a dielectric's tint), the dielectric's index, and
 * which lanes hit which of the three kinds. */
typedef struct {
  d4 px, py, pz, nx, ny, nz;
  d4 ar, ag, ab, ior;
  m4 diffuse, mirror, glass;
} rt_hits4;

/* rt_mix64() in every lane. */
static inline u4 mix4(u4 z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* The low 32 bits of a * b in each lane (of their low 32 bits), for
 * the sampler's 32-bit hash: one vpmuludq, where a product of vectors
 * of 64-bit integers takes three before AVX-512. The lanes' high halves
 * hold the rest of the product, which the caller masks or ignores (the
 * product reads only the low halves). */
static inline u4 u4_mul32(u4 a, u4 b) {
#if defined(__AVX2__) && RT_LANES == 4
  __m256i x, y;
  memcpy(&x, &a, sizeof(x));
  memcpy(&y, &b, sizeof(y));
  x = _mm256_mul_epu32(x, y);
  memcpy(&a, &x, sizeof(a));
  return a;
#elif defined(__SSE2__) && RT_LANES == 2
  __m128i x, y;
  memcpy(&x, &a, sizeof(x));
  memcpy(&y, &b, sizeof(y));
  x = _mm_mul_epu32(x, y);
  memcpy(&a, &x, sizeof(a));
  return a;
#else
  return (a & 0xffffffffULL) * (b & 0xffffffffULL);
#endif
}

static inline u4 u4_set1(uint64_t x) {
  return (u4)m4_set1((int64_t)x);
}

/* rt_owen32() in every lane; the low 32 bits of each are the result. */
static inline u4 owen4(u4 x, u4 z) {
  x ^= u4_mul32(x, u4_set1(0x3d20adeau));
  x += z;
  x = u4_mul32(x, (z >> 48) | 1);
  x ^= u4_mul32(x, u4_set1(0x05526c56u));
  x ^= u4_mul32(x, u4_set1(0x53a22864u));
  return x;
}

/* rt_sobol1() in every lane (of the low 32 bits; the high ones are
 * garbage). */
static inline u4 sobol1_4(u4 y) {
  y ^= (y << 1) & 0xaaaaaaaaULL;
  y ^= (y << 2) & 0xccccccccULL;
  y ^= (y << 4) & 0xf0f0f0f0ULL;
  y ^= (y << 8) & 0xff00ff00ULL;
  y ^= (y << 16) & 0xffff0000ULL;
  return y;
}

/* The low 32 bits of each lane as a double in [0, 1), as
 * rt_rand_bits32(). */
static inline d4 bits32_4(u4 z) {
  return (d4)(((z & 0xffffffffULL) << 20) | 0x3ff0000000000000ULL) - 1.0;
}

/* rt_rng_vertex() for the lanes in mask, from the lanes' depths. */
static inline void rng4_vertex(rt_paths4 *pa, m4 mask, d4 depth) {
  u4 offset = (u4)depth * RT_RNG_DEPTH_MUL;
  pa->ctr = (u4)m4_sel(mask, (m4)(pa->key + offset), (m4)pa->ctr);
}

/* rt_rand() for the lanes in mask: each draws its next dimension; the
 * others keep their place. */
static inline d4 rand4(rt_paths4 *pa, m4 mask) {
  pa->ctr += (u4)mask & RT_RNG_STEP;
  return bits32_4(owen4(pa->rsmp, mix4(pa->ctr)));
}

/* rt_rand2() for the lanes in mask. */
static inline void rand4x2(rt_paths4 *pa, m4 mask, d4 *a, d4 *b) {
  pa->ctr += (u4)mask & RT_RNG_STEP;
  u4 z = mix4(pa->ctr), jr = owen4(pa->rsmp, z);
  *a = bits32_4(jr);
  *b = bits32_4(sobol1_4(jr) ^ (z >> 32));
}

/* rt_sincos_turn() in every lane. The nearest quarter turn comes from
 * adding 2^52, where a double has no fraction bits left, so that the
 * rounding of the sum rounds u * 4 and its low mantissa bits are the
 * quarter turn's number. */
static inline void sincos4(d4 u, d4 *s, d4 *c) {
  d4 big = u * 4 + 0x1p52;
  d4 x = (u * 4 - (big - 0x1p52)) * (RT_PI / 2), x2 = x * x;
  d4 sn = RT_SIN_SERIES(x, x2), cs = RT_COS_SERIES(x2);
  /* The quarter turn q in 0 .. 4, compared as a double: SSE2 (the
   * fallback without AVX2) compares no 64-bit integers. */
  d4 q = big - 0x1p52;
  m4 odd = (q == 1) | (q == 3), half = (q == 2) | (q == 3);
  d4 a = d4_sel(odd, cs, sn), b = d4_sel(odd, sn, cs);
  *s = d4_sel(half, -a, a);
  *c = d4_sel((q == 1) | (q == 2), -b, b);
}

/* What a vertex asks of the loop: its shadow ray (sr, stmax) for the
 * lanes in *shadow, whose contribution waits in sc; the next ray
 * (written into the packet) for the lanes in *goes_on. */
typedef struct {
  rt_ray4 *sr;
  d4 *stmax;
  m4 shadow, goes_on;
  /* A scene's only light, in every lane (atl__rt_quad_lanes()); NULL
   * when there are several. */
  const double (*one_light)[RT_LANES];
} rt_next4;

/* Lane l of the 16 rows that atl__rt_scatter4() reads a quad light
 * from: corner (x, y, z), u, v, normal, area, emission (r, g, b). */
void atl__rt_quad_lanes(const rt_light *L, int l, double f[16][RT_LANES]);

/* The vertex of the lanes that hit a lambertian surface, a mirror (metal
 * without fuzz) or a dielectric (h): for the lambertian lanes with
 * `nee`, next-event estimation (the scene's lights must then all be
 * quads); then each lane's BSDF sample (cosine-weighted, the mirror
 * direction, Fresnel's choice between reflection and refraction) and
 * Russian roulette, as vertex_scatter() in integrator.c does lane by
 * lane with materials.c. */
void atl__rt_scatter4(const atl_render_scene_t *s, const atl_render_params_t *p,
                      rt_paths4 *pa, rt_ray4 *r, const rt_hits4 *h, int nee,
                      rt_next4 *out);

/* Adds what the lanes' rays find when they escape: the environment (not
 * a sun's disc, which integrator.c handles lane by lane). */
void atl__rt_escape4(const atl_render_scene_t *s, rt_paths4 *pa,
                     const rt_ray4 *r, m4 lanes);

#endif
