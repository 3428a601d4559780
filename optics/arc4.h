/* seedrandom 3.0.5's default generator (ARC4), bit for bit. Ray Optics
 * Simulation seeds it from the scene's randomSeed string, and a Beam with
 * random: true draws from it; only the exact stream reproduces those
 * scenes. The algorithm is described in
 * tests/data/ray-optics-scenes/README.md (section randomSeed). */
#ifndef ATL_OPTICS_ARC4_H
#define ATL_OPTICS_ARC4_H

#include <stdint.h>

/* The generator's whole state: a plain value the caller owns (no heap),
 * so it can be copied to fork a stream. */
typedef struct {
  uint8_t s[256];
  uint8_t i, j;
} atl_op_arc4_t;

/* Seeds *r from seed, a NUL-terminated UTF-8 string (not NULL). The key
 * comes from the string's UTF-16 code units, as a JavaScript string has
 * them: a code point above U+FFFF counts as its two surrogates, and a
 * malformed UTF-8 sequence as U+FFFD (what TextDecoder makes of it). */
void atl__op_arc4_seed(atl_op_arc4_t *r, const char *seed);

/* The next draw in [0, 1), with 53 random bits, as seedrandom's rng(). */
double atl__op_arc4_next(atl_op_arc4_t *r);

#endif
