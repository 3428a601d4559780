/* Upstream's geometry.js, formula for formula: the scene tests compare
 * hit positions to well under 1e-6, so the intersections are computed in
 * the same order of operations as the JavaScript they must agree with. */
#ifndef ATL_OPTICS_GEOM_H
#define ATL_OPTICS_GEOM_H

#include <math.h>

#include "op.h"

static inline atl_op_pt atl__op_pt(double x, double y) {
  atl_op_pt p = {x, y};
  return p;
}

static inline double atl__op_dist2(atl_op_pt a, atl_op_pt b) {
  double dx = a.x - b.x, dy = a.y - b.y;
  return dx * dx + dy * dy;
}

/* The intersection of the lines through (a1, a2) and (b1, b2); parallel
 * lines give non-finite coordinates, as in JavaScript. */
static inline atl_op_pt atl__op_lines_x(atl_op_pt a1, atl_op_pt a2,
                                        atl_op_pt b1, atl_op_pt b2) {
  double A = a2.x * a1.y - a1.x * a2.y;
  double B = b2.x * b1.y - b1.x * b2.y;
  double xa = a2.x - a1.x, xb = b2.x - b1.x;
  double ya = a2.y - a1.y, yb = b2.y - b1.y;
  return atl__op_pt((A * xb - B * xa) / (xa * yb - xb * ya),
                    (A * yb - B * ya) / (xa * yb - xb * ya));
}

/* p is on the ray from r1 through r2 (not behind r1). NaN is not. */
static inline int atl__op_on_ray(atl_op_pt p, atl_op_pt r1, atl_op_pt r2) {
  return (p.x - r1.x) * (r2.x - r1.x) + (p.y - r1.y) * (r2.y - r1.y) >= 0;
}

/* p, on the segment's line, is between its ends. */
static inline int atl__op_on_segment(atl_op_pt p, atl_op_pt s1, atl_op_pt s2) {
  return (p.x - s1.x) * (s2.x - s1.x) + (p.y - s1.y) * (s2.y - s1.y) >= 0 &&
         (p.x - s2.x) * (s1.x - s2.x) + (p.y - s2.y) * (s1.y - s2.y) >= 0;
}

/* LineObjMixin.checkRayIntersectsShape. */
static inline int atl__op_ray_segment(const atl_op_ray *r, atl_op_pt s1,
                                      atl_op_pt s2, atl_op_pt *hit) {
  atl_op_pt p = atl__op_lines_x(r->p1, r->p2, s1, s2);
  if (atl__op_on_segment(p, s1, s2) && atl__op_on_ray(p, r->p1, r->p2)) {
    *hit = p;
    return 1;
  }
  return 0;
}

/* The perpendicular bisector of the segment a-b, as two points on it:
 * the midpoint moved by the segment's half-vector turned by +-90 degrees
 * (upstream's perpendicularBisector, term for term). */
static inline void atl__op_bisector(atl_op_pt a, atl_op_pt b, atl_op_pt *l1,
                                    atl_op_pt *l2) {
  *l1 =
      atl__op_pt((-a.y + b.y + a.x + b.x) * 0.5, (a.x - b.x + a.y + b.y) * 0.5);
  *l2 =
      atl__op_pt((a.y - b.y + a.x + b.x) * 0.5, (-a.x + b.x + a.y + b.y) * 0.5);
}

/* The two intersections of the line through (l1, l2) with the circle
 * (c, r^2), in upstream's order: [1] along the line's direction, [2]
 * against it; NaN coordinates when they miss. */
static inline void atl__op_line_circle(atl_op_pt l1, atl_op_pt l2, atl_op_pt c,
                                       double r_sq, atl_op_pt out[2]) {
  double xa = l2.x - l1.x, ya = l2.y - l1.y;
  double l = sqrt(xa * xa + ya * ya);
  double ux = xa / l, uy = ya / l;
  double cu = (c.x - l1.x) * ux + (c.y - l1.y) * uy;
  double px = l1.x + cu * ux, py = l1.y + cu * uy;
  double d = sqrt(r_sq - (px - c.x) * (px - c.x) - (py - c.y) * (py - c.y));
  out[0] = atl__op_pt(px + ux * d, py + uy * d);
  out[1] = atl__op_pt(px - ux * d, py - uy * d);
}

#endif
