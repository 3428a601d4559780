/* seedrandom's ARC4 generator (seedrandom 3.0.5, its default), bit for
 * bit: Ray Optics Simulation seeds it from the scene's randomSeed, and
 * random beams and module templates draw from it. */
#ifndef ATL_OPTICS_ARC4_H
#define ATL_OPTICS_ARC4_H

#include <stdint.h>

typedef struct {
  uint8_t s[256];
  uint8_t i, j;
} atl_op_arc4_t;

/* Seeds r from seed (UTF-8, taken as JavaScript's UTF-16 code units). */
void atl__op_arc4_seed(atl_op_arc4_t *r, const char *seed);
/* seedrandom's rng(): a double in [0, 1). */
double atl__op_arc4_next(atl_op_arc4_t *r);

#endif
