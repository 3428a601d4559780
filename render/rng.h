/* A counter-based random number source: every number is a hash of the
 * seed, the pixel, the global sample index and a running dimension, so a
 * sample never depends on which worker drew it or what it drew before. */
#ifndef ATL_RENDER_RNG_H
#define ATL_RENDER_RNG_H

#include <stdint.h>
#include <string.h>

typedef struct {
  /* The seed, pixel and sample, hashed, plus the golden-ratio step once
   * per number drawn so far: a Weyl sequence, which rt_mix64() turns
   * into independent-looking numbers. Stepping a counter rather than
   * multiplying a dimension by the step saves a 64-bit multiplication
   * per number, dear in the packets' vector lanes (shade4.c). */
  uint64_t ctr;
} rt_rng;

#define RT_RNG_STEP 0x9e3779b97f4a7c15ULL

/* The splitmix64 finaliser: a bijective 64-bit mixer. */
static inline uint64_t rt_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* The key of a sample: the seed, the pixel and the sample's index. */
static inline uint64_t rt_rng_key(uint64_t seed, uint64_t pixel,
                                  uint64_t sample) {
  uint64_t k = rt_mix64(seed + RT_RNG_STEP);
  k = rt_mix64(k ^ (pixel * 0xd1b54a32d192ed03ULL));
  return rt_mix64(k ^ (sample * 0x8cb92ba72f3d8dd7ULL));
}

static inline rt_rng rt_rng_make(uint64_t seed, uint64_t pixel,
                                 uint64_t sample) {
  rt_rng r = {rt_rng_key(seed, pixel, sample)};
  return r;
}

/* A double in [0, 1) from 52 random bits: they become the mantissa of a
 * double in [1, 2), less 1, which is exact. The packets' lanes draw
 * their numbers the same way (shade4.c), where vectors of 64-bit
 * integers have no conversion to double before AVX-512. */
static inline double rt_rand_bits(uint64_t z) {
  uint64_t one = (z >> 12) | 0x3ff0000000000000ULL;
  double d;
  memcpy(&d, &one, sizeof(d));
  return d - 1.0;
}

static inline double rt_rand(rt_rng *r) {
  r->ctr += RT_RNG_STEP;
  return rt_rand_bits(rt_mix64(r->ctr));
}

/* A double in [0, 1) from 32 random bits (the low ones of z). */
static inline double rt_rand_bits32(uint64_t z) {
  uint64_t one = (z & 0xffffffffULL) << 20 | 0x3ff0000000000000ULL;
  double d;
  memcpy(&d, &one, sizeof(d));
  return d - 1.0;
}

/* Two numbers from one step of the sequence, 32 bits each: the halves
 * of the mixer's 64. They drive the samplers of two dimensions (a point
 * on a light, a direction), where 2^-32 is resolution enough, at half
 * the cost of two rt_rand(): the packets' lanes have no 64-bit
 * multiplication before AVX-512, and the mixer has two. */
static inline void rt_rand2(rt_rng *r, double *a, double *b) {
  r->ctr += RT_RNG_STEP;
  uint64_t z = rt_mix64(r->ctr);
  *a = rt_rand_bits32(z >> 32);
  *b = rt_rand_bits32(z);
}

#endif
