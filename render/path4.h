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

/* Two 32-bit words per lane: the sampler's seeds and scrambles run on
 * two dimensions at once, one in each half of a lane, with 32-bit
 * products (one vpmulld each on AVX2). */
typedef uint32_t w8 __attribute__((vector_size(8 * RT_LANES)));

/* rt_rng_seed() of the counters c1 (in the low word of each lane) and
 * c2 (in the high word): their addends a and their other words b. */
static inline void seeds8(u4 c1, u4 c2, w8 *a, w8 *b) {
  w8 lo = (w8)((c1 & 0xffffffffULL) | (c2 << 32));
  w8 hi = (w8)((c1 >> 32) | (c2 & 0xffffffff00000000ULL));
  RT_SEED_STEPS(lo, hi, *a, *b);
}

/* rt_rng_seed() of the counter c, in the low words of a and b (the high
 * words are of no use): seeds8() without its packing, for one draw. */
static inline void seeds4(u4 c, w8 *a, w8 *b) {
  w8 lo = (w8)c, hi = (w8)(c >> 32);
  RT_SEED_STEPS(lo, hi, *a, *b);
}

/* rt_owen32_rest() of every word x, by the seed words a and b. */
static inline w8 owen8(w8 x, w8 a, w8 b) {
  RT_OWEN32_REST_STEPS(x, a, b);
  return x;
}

/* rt_sobol1() of every word. */
static inline w8 sobol1_8(w8 y) {
  RT_SOBOL1_STEPS(y);
  return y;
}

/* The low 32 bits of each lane as a double in [0, 1), as
 * rt_rand_bits32(). */
static inline d4 bits32_4(u4 z) {
  return (d4)(((z & 0xffffffffULL) << 20) | 0x3ff0000000000000ULL) - 1.0;
}

/* The low and the high word of each lane, as bits32_4(). */
static inline d4 lo_bits(w8 v) {
  return bits32_4((u4)v);
}
static inline d4 hi_bits(w8 v) {
  return bits32_4((u4)v >> 32);
}

/* rt_rng_sample() of each lane's index (its low 32 bits), the bits
 * reversed in every word at once. */
static inline u4 rng4_sample(u4 index) {
  w8 x = (w8)(index & 0xffffffffULL);
  RT_REVERSE32_STEPS(x);
  RT_OWEN32_FIRST_STEP(x);
  u4 v = (u4)x & 0xffffffffULL;
  return v | v << 32;
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
  w8 a, b;
  seeds4(pa->ctr, &a, &b);
  return lo_bits(owen8((w8)pa->rsmp, a, b));
}

/* rt_rand2() for the lanes in mask. */
static inline void rand4x2(rt_paths4 *pa, m4 mask, d4 *x, d4 *y) {
  pa->ctr += (u4)mask & RT_RNG_STEP;
  w8 a, b;
  seeds4(pa->ctr, &a, &b);
  w8 jr = owen8((w8)pa->rsmp, a, b);
  *x = lo_bits(jr);
  *y = lo_bits(sobol1_8(jr) ^ b);
}

/* Two rand4x2() in a row for the lanes in mask, (x1, y1) then (x2, y2),
 * for the price of about one: the two dimensions' seeds, scrambles and
 * Sobol points share their instructions, a half of each lane apiece (a
 * lane's rsmp holds its index in both). A lambertian vertex draws its
 * light point and its direction so. */
static inline void rand4x2x2(rt_paths4 *pa, m4 mask, d4 *x1, d4 *y1, d4 *x2,
                             d4 *y2) {
  u4 step = (u4)mask & RT_RNG_STEP;
  u4 c1 = pa->ctr + step, c2 = c1 + step;
  pa->ctr = c2;
  w8 a, b;
  seeds8(c1, c2, &a, &b);
  w8 jr = owen8((w8)pa->rsmp, a, b), y = sobol1_8(jr) ^ b;
  *x1 = lo_bits(jr), *y1 = lo_bits(y);
  *x2 = hi_bits(jr), *y2 = hi_bits(y);
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
