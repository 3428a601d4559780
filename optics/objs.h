/* What the object families (objs_*.c) share: the wavelength filter's
 * fields, the plane-mirror reflection, and the circle and arc hit tests
 * of upstream's CircleObjMixin and arc-shaped objects. Each family owns
 * its classes and their structs; nothing here keeps state. */
#ifndef ATL_OPTICS_OBJS_H
#define ATL_OPTICS_OBJS_H

#include <stddef.h>

#include "geom.h"
#include "op.h"
#include "optics.h"

/* The fields of upstream's BaseFilter: a dichroic mirror or a filter
 * interacts only with the rays within bandwidth of its wavelength (or
 * outside it, inverted), and only when the scene simulates colours. */
typedef struct {
  int filter, invert;
  double wavelength, bandwidth;
} atl_op_filter;

/* The head of every filtered object's struct: its first two points and
 * its filter. The struct of such a class starts with this, so that the
 * shared hooks below can take any of them. */
typedef struct {
  atl_op_obj base;
  atl_op_pt p1, p2;
  atl_op_filter f;
} atl_op_line_filter;

/* The rows of a field table for the head's points and for its filter;
 * a class puts its own fields between them, in upstream's order. */
#define ATL_OP_ENDS_FIELDS                                                     \
  {"p1", ATL_OP_F_POINT, "null", offsetof(atl_op_line_filter, p1)}, {          \
    "p2", ATL_OP_F_POINT, "null", offsetof(atl_op_line_filter, p2)             \
  }
#define ATL_OP_FILTER_FIELDS                                                   \
  {"filter", ATL_OP_F_BOOL, "false", offsetof(atl_op_line_filter, f.filter)},  \
      {"invert", ATL_OP_F_BOOL, "false",                                       \
       offsetof(atl_op_line_filter, f.invert)},                                \
      {"wavelength", ATL_OP_F_NUM, "540",                                      \
       offsetof(atl_op_line_filter, f.wavelength)},                            \
  {                                                                            \
    "bandwidth", ATL_OP_F_NUM, "10", offsetof(atl_op_line_filter, f.bandwidth) \
  }

/* init for a class with nothing to check beyond its filter. */
int atl__op_line_filter_init(atl_op_obj *o, atl_op_scene *s, char **err);
/* intersect for a filtered segment p1-p2 (LineObjMixin's shape). */
int atl__op_line_filter_intersect(atl_op_obj *o, atl_op_sim *sim,
                                  const atl_op_ray *r, atl_op_pt *hit);

static inline int atl__op_filter_ok(const atl_op_sim *sim,
                                    const atl_op_filter *f,
                                    const atl_op_ray *r) {
  return atl__op_filter_passes(sim, f->filter, f->invert, f->wavelength,
                               f->bandwidth, r);
}

/* A load error of object o (for its class's init): *err gets
 * "objs[N] (Type): " and the message; returns -EINVAL. */
int atl__op_obj_fail(const atl_op_obj *o, char **err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Checks a filter's fields at load time. */
int atl__op_filter_check(const atl_op_obj *o, const atl_op_filter *f,
                         char **err);

/* The point that the ray from p1 (its start) to hit is reflected
 * towards by the line through m1 and m2: the mirror formula of upstream's
 * Mirror, unnormalised, so the distance of the result from hit scales
 * with |m2 - m1|^2. Several mirrors share it, and the tests compare
 * hit positions closely enough that its operation order matters. */
static inline atl_op_pt atl__op_reflect_line(atl_op_pt p1, atl_op_pt hit,
                                             atl_op_pt m1, atl_op_pt m2) {
  double rx = p1.x - hit.x, ry = p1.y - hit.y;
  double mx = m2.x - m1.x, my = m2.y - m1.y;
  return atl__op_pt(hit.x + rx * (my * my - mx * mx) - 2 * ry * mx * my,
                    hit.y + ry * (mx * mx - my * my) - 2 * rx * mx * my);
}

/* The centre of the circle through p1, p3 and p2, as the crossing of two
 * perpendicular bisectors; non-finite when the three are collinear. */
static inline atl_op_pt atl__op_arc_center(atl_op_pt p1, atl_op_pt p2,
                                           atl_op_pt p3) {
  atl_op_pt a1, a2, b1, b2;
  atl__op_bisector(p1, p3, &a1, &a2);
  atl__op_bisector(p2, p3, &b1, &b2);
  return atl__op_lines_x(a1, a2, b1, b2);
}

/* The nearest hit of the ray on the circle (c, radius^2 r_sq) more than
 * the minimum segment length from the ray's start. With arc (its p1, p2,
 * p3), only the points on the arc from p1 through p3 to p2 count. Equal
 * distances (a tangent ray) give no hit, as upstream's comparison does. */
int atl__op_ray_circle(const atl_op_sim *sim, const atl_op_ray *r, atl_op_pt c,
                       double r_sq, const atl_op_pt *arc, atl_op_pt *hit);

/* The hit of the ray on the arc p1-p3-p2 (ArcMirror's shape), or on the
 * segment p1-p2 when the three points are collinear. */
int atl__op_ray_arc(const atl_op_sim *sim, const atl_op_ray *r, atl_op_pt p1,
                    atl_op_pt p2, atl_op_pt p3, atl_op_pt *hit);

/* The brightness below which split-off rays are dropped (and counted as
 * truncated): lower in the colour modes that add up many weak rays. */
double atl__op_min_brightness(const atl_op_scene *s);

#endif
