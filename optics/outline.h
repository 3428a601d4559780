/* An object's outline: the lines, circular arcs and sampled curves a ray
 * can meet, as the object's class knows them. The ray loop never needs
 * this (each class has its own hit test); the optics plugin does, to
 * label edges, to tell which rays are inside a glass, which edge a ray
 * crossed, and to draw the scene. Coordinates are the scene's own (y
 * grows downward, as Ray Optics Simulation draws).
 *
 * Ownership: an atl_op_outline owns its edges and their curve points;
 * atl__op_outline_free() frees them. Nothing points into the object. */
#ifndef ATL_OPTICS_OUTLINE_H
#define ATL_OPTICS_OUTLINE_H

#include "op.h"

typedef enum {
  ATL_OP_EDGE_LINE, /* the straight segment p1-p2 */
  ATL_OP_EDGE_ARC,  /* a circular arc from p1 to p2 */
  ATL_OP_EDGE_CURVE /* a polyline through pts[0] = p1 .. pts[n-1] = p2 */
} atl_op_edge_kind;

typedef struct {
  atl_op_edge_kind kind;
  atl_op_pt p1, p2; /* the edge's ends, in the outline's order */
  /* ATL_OP_EDGE_ARC: centre c and radius r; the arc runs from angle a0
   * (radians, atan2(y - c.y, x - c.x)) through the signed sweep da, so
   * point(t) = c + r (cos(a0 + t da), sin(a0 + t da)) for t in [0, 1].
   * A full circle has p1 == p2 and |da| = 2 pi. */
  atl_op_pt c;
  double r, a0, da;
  /* ATL_OP_EDGE_CURVE: the samples the class's hit test uses (malloc'd,
   * owned by the outline). */
  atl_op_pt *pts;
  int npts;
} atl_op_edge;

struct atl_op_outline {
  atl_op_edge *edges; /* malloc'd, n of them */
  int n, cap;
  /* The edges, in order, bound a region (a glass, a circular blocker):
   * rays can be inside it, and it has an area. Each edge's p2 is the
   * next one's p1 and the last one's p2 is the first one's p1. */
  int closed;
  /* PlaneGlass: the region is the half-plane to the right of p1 -> p2
   * of its one line edge (the side upstream's PlaneGlass fills). */
  int half_plane;
};

/* Fills out (zeroed by the caller) with o's outline: 0, -ENOMEM, or
 * -ENOTSUP for a class with none (a point source has a position but no
 * edge: it gets 0 edges and 0 returned). Light sources give the segment
 * their rays start along (Beam, SingleRay p1-p2, AngleSource p1-p2) as
 * one line edge so they can be drawn; the plugin knows them for sources.
 * Call after the scene is loaded (curves are sampled by then). */
int atl__op_outline(const atl_op_obj *o, atl_op_outline *out);
void atl__op_outline_free(atl_op_outline *out);

/* Appends one edge (copying e; its pts, if any, become the outline's).
 * For the classes' outline hooks. Returns 0 or -ENOMEM. */
int atl__op_outline_add(atl_op_outline *out, const atl_op_edge *e);

/* A point on edge e at t in [0, 1] (by parameter, for arcs by angle, for
 * curves by sample index). */
atl_op_pt atl__op_edge_point(const atl_op_edge *e, double t);

/* --- For the classes' outline hooks (each returns 0 or -ENOMEM) ------ */

/* The segment a-b. */
int atl__op_outline_line(atl_op_outline *out, atl_op_pt a, atl_op_pt b);
/* The arc from a through mid to b, or the segment a-b when the three
 * points are collinear (no finite centre). */
int atl__op_outline_arc3(atl_op_outline *out, atl_op_pt a, atl_op_pt mid,
                         atl_op_pt b);
/* The full circle about c through p (starting and ending at p, its sweep
 * 2 pi counterclockwise in the formula's angles). */
int atl__op_outline_circle(atl_op_outline *out, atl_op_pt c, atl_op_pt p);
/* A curve through count of the n points v, from v[start] on, wrapping
 * round (v[(start + k) % n]); count >= 2. The points are copied. */
int atl__op_outline_curve(atl_op_outline *out, const atl_op_pt *v, int n,
                          int start, int count);
/* A polyline v[0 .. nv-1] made of pieces (piece k starts at vertex
 * starts[k]; none: one piece) as one curve edge per piece, with a line
 * edge where a piece's end and the next one's start differ (the
 * polyline's segment between them). */
int atl__op_outline_pieces(atl_op_outline *out, const atl_op_pt *v, int nv,
                           const int *starts, int nstarts);
/* The cubic Bezier curve with control points ctrl as one curve edge,
 * sampled finely enough that the polyline keeps within about 1e-8 of the
 * curve's size of the curve (its ends exactly ctrl[0] and ctrl[3]). */
int atl__op_outline_bezier(atl_op_outline *out, const atl_op_pt ctrl[4]);
/* Sets out->closed when the edges chain (each p2 within a rounding of
 * the next p1, the last back to the first), snapping each joint to the
 * next edge's p1 so that the chain is exact. */
void atl__op_outline_close(atl_op_outline *out);

/* An outline hook for the classes whose struct starts with the object
 * and its two points p1, p2 (atl_op_two_points): the segment p1-p2. */
typedef struct {
  atl_op_obj base;
  atl_op_pt p1, p2;
} atl_op_two_points;
int atl__op_outline_p1p2(const atl_op_obj *o, atl_op_outline *out);

#endif
