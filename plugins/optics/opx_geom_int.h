/* The geometry module's internals, shared by opx_geom.c (the objects,
 * their measures and labels) and opx_geom_index.c (the spatial index and
 * the point queries). Nothing here is for other modules.
 *
 * Ownership: the index is owned by its opx_geom_t (g->index) and freed
 * with it by opx_geom_index_free(). */
#ifndef ATL_OPX_GEOM_INT_H
#define ATL_OPX_GEOM_INT_H

#include <math.h>

#include "geom.h"
#include "opx_geom.h"

#define OPX_TWO_PI 6.28318530717958647692

/* The point of edge e nearest to p (*q) and the unit tangent there in
 * the edge's direction (*tan; any unit vector for a degenerate edge);
 * returns the distance. A curve is searched by brute force: the index
 * has faster ways for queries made often. */
double opx_edge_nearest(const atl_op_edge *e, atl_op_pt p, atl_op_pt *q,
                        atl_op_pt *tan);

/* The angle b - a folded into [0, 2 pi). */
static inline double opx_ccw(double a, double b) {
  double d = fmod(b - a, OPX_TWO_PI);
  return d < 0 ? d + OPX_TWO_PI : d;
}

/* Whether the direction at angle phi (about the arc's centre) lies within
 * the sweep of arc e. */
static inline int opx_arc_covers(const atl_op_edge *e, double phi) {
  if (fabs(e->da) >= OPX_TWO_PI)
    return 1;
  return e->da >= 0 ? opx_ccw(e->a0, phi) <= e->da
                    : opx_ccw(phi, e->a0) <= -e->da;
}

/* Builds g->index over g's edges; 0 or -ENOMEM. */
int opx_geom_index_build(opx_geom_t *g);
void opx_geom_index_free(void *index);

#endif
