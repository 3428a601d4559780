/* A counter-based random number source: every number is a hash of the
 * seed, the pixel, the global sample index and a running dimension, so a
 * sample never depends on which worker drew it or what it drew before. */
#ifndef ATL_RENDER_RNG_H
#define ATL_RENDER_RNG_H

#include <stdint.h>

typedef struct {
  uint64_t key; /* seed, pixel and sample, hashed */
  uint64_t dim; /* the next dimension */
} rt_rng;

/* The splitmix64 finaliser: a bijective 64-bit mixer. */
static inline uint64_t rt_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static inline rt_rng rt_rng_make(uint64_t seed, uint64_t pixel,
                                 uint64_t sample) {
  rt_rng r;
  uint64_t k = rt_mix64(seed + 0x9e3779b97f4a7c15ULL);
  k = rt_mix64(k ^ (pixel * 0xd1b54a32d192ed03ULL));
  k = rt_mix64(k ^ (sample * 0x8cb92ba72f3d8dd7ULL));
  r.key = k;
  r.dim = 0;
  return r;
}

/* A double in [0, 1), 53 bits. */
static inline double rt_rand(rt_rng *r) {
  uint64_t z = rt_mix64(r->key + (++r->dim) * 0x9e3779b97f4a7c15ULL);
  return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

#endif
