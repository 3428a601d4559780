/* Packets of rays traced together: the path tracer keeps a packet of
 * paths in flight (RT_LANES of them: eight with AVX-512, four with AVX,
 * two with SSE2; the names keep the 4 of the AVX2 build) and intersects their
 * rays at once, one primitive (or one BVH node) for all the lanes per step.
 * With the small scenes of scene-llm (a few to a few hundred
 * primitives) this beats testing one ray against four primitives at a
 * time: the lanes are always full, and a primitive's data is loaded once
 * for all the rays. */
#ifndef ATL_RENDER_PACKET_H
#define ATL_RENDER_PACKET_H

#include "kernel.h" /* first: it renames the AVX-512 kernel's symbols */
#include "rt.h"
#include "simd.h"

/* A packet's rays in structure-of-arrays form. Directions need not be unit;
 * a lane's distances are in units of its direction. */
typedef struct {
  d4 ox, oy, oz, dx, dy, dz;
  d4 a, inv_a; /* |d|^2 and its inverse, for spheres */
} rt_ray4;

/* Fills a and inv_a from the directions. */
void atl__rt_ray4_prepare(rt_ray4 *r);

/* The ray of one lane. */
static inline rt_ray atl__rt_ray4_lane(const rt_ray4 *r, int l) {
  rt_ray ray = {v3_make(r->ox[l], r->oy[l], r->oz[l]),
                v3_make(r->dx[l], r->dy[l], r->dz[l])};
  return ray;
}

/* The nearest hit in (tmin, tmax) of each active lane's ray: *t and the
 * primitive in *prim, or -1 for a lane that hits nothing (or is not
 * active). A lane's answer does not depend on the other lanes: of two
 * primitives at the very same distance, the lower index wins, whatever
 * order the traversal met them in. */
void atl__rt_intersect4(const atl_render_scene_t *s, const rt_ray4 *r,
                        m4 active, d4 tmin, d4 tmax, d4 *t, m4 *prim);

/* The mask of the active lanes whose ray hits anything in (tmin,
 * tmax): the shadow rays of next-event estimation. */
m4 atl__rt_occluded4(const atl_render_scene_t *s, const rt_ray4 *r, m4 active,
                     d4 tmin, d4 tmax);

#endif
