/* The path tracer's random numbers: a low-discrepancy sampler.
 *
 * Each camera sample of a pixel draws its numbers as points of the
 * pixel's own randomised Sobol sequence: every 2D draw is a point of
 * Sobol's first two dimensions, a (0,2)-sequence, so that the first 2^m
 * samples of a pixel fall one in each cell of every 2^a x 2^b grid
 * with a + b = m (camera jitter, a point on a light, a cosine direction
 * all come out stratified); a 1D draw is the van der Corput sequence,
 * stratified the same way. Independent white noise, which this
 * replaces, left each sample of the Cornell box with about ten times
 * the variance of Cycles' (issue 20).
 *
 * The sequences are "padded": each draw of a sample has its own
 * dimension k (a counter, like a random stream's), and each (pixel, k)
 * its own random seed, which shuffles the sample index by a nested
 * uniform (Owen) scramble and shifts the 2D point by a random digital
 * shift. The shuffle keeps every aligned block of 2^m indices an aligned
 * block, so the first 2^m samples stay a stratified set, while different
 * dimensions, and neighbouring pixels, get unrelated permutations and no
 * correlation between them (Burley 2020, "Practical Hash-based Owen
 * Scrambling"; the hash is Vegdahl's refinement of Laine and Karras').
 *
 * A sample's numbers depend only on the seed, the pixel, the sample's
 * index and the dimension, so they never depend on which worker drew
 * them or what it drew before, and an image stays a pure function of
 * the seed. The dimension counter is reset at each path vertex to a value
 * of that vertex's depth (rt_rng_vertex()), so that the k-th draw of a
 * vertex is the same dimension for every sample of the pixel, the thing
 * stratification needs. Every vertex's draws are stratified, however
 * deep: on the Cornell box, plain hashes past the third vertex (which
 * saved little time) left the 256-spp RMSE at 0.0125 instead of 0.0056
 * against the Cycles reference. */
#ifndef ATL_RENDER_RNG_H
#define ATL_RENDER_RNG_H

#include <stdint.h>
#include <string.h>

typedef struct {
  /* The pixel's key plus the golden-ratio step once per number drawn at
   * this vertex: a Weyl sequence, which rt_rng_seed() turns into each
   * dimension's seed. */
  uint64_t ctr;
  /* The key of the pixel (seed and pixel hashed): ctr's value at the
   * camera, and the base of each vertex's (rt_rng_vertex()). */
  uint64_t key;
  /* The sample's index within its pixel, its 32 bits reversed (the
   * van der Corput radical inverse, from which every draw starts) and
   * put through rt_owen32_first(), which depends on it
   * alone (rt_rng_sample()): once per sample instead of once per draw.
   * Both halves hold it. */
  uint64_t rsmp;
} rt_rng;

#define RT_RNG_STEP 0x9e3779b97f4a7c15ULL
/* The splitmix64 finaliser: a bijective 64-bit mixer. */
static inline uint64_t rt_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* A 32-bit integer hash: xor-shifts and two odd products, a bijection
 * (Wellons' "lowbias32" with the constants TheIronBorn found for it). The
 * packets run it on two 32-bit words per lane with one vpmulld per
 * product, where rt_mix64()'s 64-bit products take three instructions
 * each before AVX-512 (path4.h). */
#define RT_HASH32_STEPS(x)                                                     \
  ((x) ^= (x) >> 16, (x) *= 0x21f0aaadu, (x) ^= (x) >> 15, (x) *= 0x735a2d97u, \
   (x) ^= (x) >> 15)
static inline uint32_t rt_hash32(uint32_t x) {
  RT_HASH32_STEPS(x);
  return x;
}

/* The sampler's steps are written once, as macros over any unsigned
 * 32-bit operands, so that the scalar functions here and the packets'
 * (path4.h, on two 32-bit words per lane) cannot drift apart: the
 * lanes must draw exactly what one path draws. */

/* rt_rng_seed() from the counter's low and high words into a and b. */
#define RT_SEED_STEPS(lo, hi, a, b)                                            \
  ((a) = (lo) ^ ((hi) >> 16 | (hi) << 16), RT_HASH32_STEPS(a),                 \
   (b) = (hi) ^ (a), RT_HASH32_STEPS(b))
/* x's 32 bits reversed. */
#define RT_REVERSE32_STEPS(x)                                                  \
  ((x) = ((x) >> 16) | ((x) << 16),                                            \
   (x) = (((x) >> 8) & 0x00ff00ffu) | (((x)&0x00ff00ffu) << 8),                \
   (x) = (((x) >> 4) & 0x0f0f0f0fu) | (((x)&0x0f0f0f0fu) << 4),                \
   (x) = (((x) >> 2) & 0x33333333u) | (((x)&0x33333333u) << 2),                \
   (x) = (((x) >> 1) & 0x55555555u) | (((x)&0x55555555u) << 1))
/* rt_owen32_first() and rt_owen32_rest() (the seed's words a and b). */
#define RT_OWEN32_FIRST_STEP(x) ((x) ^= (x)*0x3d20adeau)
#define RT_OWEN32_REST_STEPS(x, a, b)                                          \
  ((x) += (a), (x) *= ((b) >> 16) | 1u, (x) ^= (x)*0x05526c56u,                \
   (x) ^= (x)*0x53a22864u)
/* rt_sobol1(). */
#define RT_SOBOL1_STEPS(y)                                                     \
  ((y) ^= ((y) << 1) & 0xaaaaaaaau, (y) ^= ((y) << 2) & 0xccccccccu,           \
   (y) ^= ((y) << 4) & 0xf0f0f0f0u, (y) ^= ((y) << 8) & 0xff00ff00u,           \
   (y) ^= ((y) << 16) & 0xffff0000u)

/* The seed of the dimension whose counter is c: two 32-bit words, the
 * low one (a) the scramble's addend, the high one (b) its odd factor's
 * bits and the second coordinate's shift (rt_rand2()). a hashes the
 * counter's two halves, b the high half and a, so the map from c to the
 * seed is a bijection: a uniform counter (a pixel's key is one) gives a
 * uniform seed, a and b independent, which rt_owen32_rest()'s uniformity
 * needs. It replaced rt_mix64() here for speed: the sampler's draws cost
 * the packets 14 to 17 % of their paths per second (issue 20). */
static inline uint64_t rt_rng_seed(uint64_t c) {
  uint32_t lo = (uint32_t)c, hi = (uint32_t)(c >> 32), a, b;
  RT_SEED_STEPS(lo, hi, a, b);
  return (uint64_t)b << 32 | a;
}

/* The key of a pixel: the seed and the pixel, hashed. */
static inline uint64_t rt_rng_pixel_key(uint64_t seed, uint64_t pixel) {
  uint64_t k = rt_mix64(seed + RT_RNG_STEP);
  return rt_mix64(k ^ (pixel * 0xd1b54a32d192ed03ULL));
}

static inline uint32_t rt_reverse32(uint32_t x) {
  RT_REVERSE32_STEPS(x);
  return x;
}

/* rt_owen32_first() then rt_owen32_rest() are a nested uniform scramble
 * of a bit-reversed value x (a fraction whose most significant digit is
 * bit 0), by the 64-bit random z: each bit is
 * flipped or not by a hash of z and the bits below it only, so values
 * that share their low m bits (an aligned block of 2^(32-m) original
 * values) keep sharing them after. Every step is a bijection that only
 * carries upwards: a product by an even constant xored in, an addition,
 * a product by an odd number. The odd factor comes from bits of z that
 * the addition does not use: were it a function of the added bits, the
 * result would not be uniform over z for a given x (for x = 0 it would
 * be z times a function of z), and an estimate would be biased.
 *
 * Its first step does not depend on z: a sample's draws share it, so the
 * sampler keeps x after it (rt_rng.rsmp) and each draw runs the rest. */
static inline uint32_t rt_owen32_first(uint32_t x) {
  RT_OWEN32_FIRST_STEP(x);
  return x;
}

/* The scramble's steps that depend on z, of x = rt_owen32_first(): the
 * odd factor from z's top 16 bits. */
static inline uint32_t rt_owen32_rest(uint32_t x, uint64_t z) {
  uint32_t a = (uint32_t)z, b = (uint32_t)(z >> 32);
  RT_OWEN32_REST_STEPS(x, a, b);
  return x;
}

/* The sampler's form of a sample's index (rt_rng.rsmp), in both halves:
 * the packets scramble it for two dimensions at once (path4.h). */
static inline uint64_t rt_rng_sample(uint64_t sample) {
  return rt_owen32_first(rt_reverse32((uint32_t)sample)) * 0x100000001ULL;
}

/* Sobol's second dimension of the index whose reversed bits are jr. Its
 * generator matrix is Pascal's triangle mod 2: fraction digit k of the
 * point is the xor of the index bits q with C(q, k) odd, that is (Lucas)
 * with q a superset of k's bits. With both in reversed form that is a
 * sum over subsets of bit positions, five shift-and-xor steps. */
static inline uint32_t rt_sobol1(uint32_t jr) {
  RT_SOBOL1_STEPS(jr);
  return jr;
}

static inline rt_rng rt_rng_make(uint64_t seed, uint64_t pixel,
                                 uint64_t sample) {
  uint64_t k = rt_rng_pixel_key(seed, pixel);
  rt_rng r = {k, k, rt_rng_sample(sample)};
  return r;
}

/* The offset of the dimensions of the vertex at `depth` (1 for the
 * camera ray's hit; the camera itself draws from the key): the bits of
 * the depth as a double, which the packets have at hand (path4.h), times
 * an odd constant unrelated to RT_RNG_STEP. The product spreads the
 * depths' offsets over all 64 bits: the bare bits of two depths differ
 * only in their top twelve, and the mixer's outputs for such nearby
 * counters were measurably related (a chi-square of a vertex's draw
 * against the next vertex's 5 standard deviations high). */
#define RT_RNG_DEPTH_MUL 0xd6e8feb86659fd93ULL
static inline uint64_t rt_rng_depth_offset(double depth) {
  uint64_t bits;
  memcpy(&bits, &depth, sizeof(bits));
  return bits * RT_RNG_DEPTH_MUL;
}

/* Starts the dimensions of the vertex at `depth`. */
static inline void rt_rng_vertex(rt_rng *r, int depth) {
  r->ctr = r->key + rt_rng_depth_offset((double)depth);
}

/* A double in [0, 1) from the 32 bits of z: they become the top of the
 * mantissa of a double in [1, 2), less 1, which is exact. The packets'
 * lanes convert the same way (path4.h), where vectors of 64-bit integers
 * have no conversion to double before AVX-512. */
static inline double rt_rand_bits32(uint64_t z) {
  uint64_t one = (z & 0xffffffffULL) << 20 | 0x3ff0000000000000ULL;
  double d;
  memcpy(&d, &one, sizeof(d));
  return d - 1.0;
}

/* The next dimension's 1D draw: the sample's place in its pixel's
 * scrambled van der Corput sequence. */
static inline double rt_rand(rt_rng *r) {
  r->ctr += RT_RNG_STEP;
  uint64_t z = rt_rng_seed(r->ctr);
  return rt_rand_bits32(rt_owen32_rest((uint32_t)r->rsmp, z));
}

/* The next dimension's 2D draw: the sample's point of its pixel's
 * shuffled Sobol (0,2)-sequence, digitally shifted. The first
 * coordinate is the shuffled index's radical inverse itself (Sobol's
 * first dimension), which is already uniform; the second is shifted by
 * the seed's high half, which is independent of the shuffle's low half
 * (the shuffle's odd factor shares bits with it, and that leaves the
 * pair uniform: given the factor, the shuffled index is still uniform). They
 * drive the samplers of two dimensions (a point on a light, a direction). */
static inline void rt_rand2(rt_rng *r, double *a, double *b) {
  r->ctr += RT_RNG_STEP;
  uint64_t z = rt_rng_seed(r->ctr);
  uint32_t jr = rt_owen32_rest((uint32_t)r->rsmp, z);
  *a = rt_rand_bits32(jr);
  *b = rt_rand_bits32(rt_sobol1(jr) ^ (uint32_t)(z >> 32));
}

#endif
