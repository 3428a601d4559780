/* The glass family's shared parts: upstream's BaseGlass (the refractive
 * index with Cauchy dispersion, and the refraction at a surface with
 * Fresnel partial reflection, total internal reflection and surface
 * merging), the path of line segments and circular arcs that Glass and
 * SphericalLens share, and SphericalLens's construction from its lens
 * parameters. glass.c owns BaseGlass, CircleGlass and PlaneGlass;
 * objs_glass.c owns Glass and SphericalLens; objs_curve.c owns
 * CurveGlass; objs_lens.c owns the lens maths and IdealLens. */
#ifndef ATL_OPTICS_GLASS_H
#define ATL_OPTICS_GLASS_H

#include <stddef.h>

#include "geom.h"
#include "op.h"

/* The fields every BaseGlass has; a glass class's struct starts with
 * this, so the refraction code can read them from any glass. */
typedef struct {
  atl_op_obj base;
  double ref_index; /* n, or Cauchy's A when the scene simulates colours */
  double cauchy_b;  /* Cauchy's B in square micrometres */
  int partial_reflect;
} atl_op_glass;

#define ATL_OP_GLASS_FIELDS(T)                                                 \
  {"refIndex", ATL_OP_F_NUM, "1.5", offsetof(T, g.ref_index)},                 \
      {"cauchyB", ATL_OP_F_NUM, "0.004", offsetof(T, g.cauchy_b)}, {           \
    "partialReflect", ATL_OP_F_BOOL, "true", offsetof(T, g.partial_reflect)    \
  }

/* The ray loop's tolerance, MIN_RAY_SEGMENT_LENGTH squared in scene
 * units, as the objects compute it. */
static inline double atl__op_min_sq(const atl_op_sim *sim) {
  double ls = sim->scene->length_scale;
  return ATL_OP_MIN_SEG_SQ * ls * ls;
}

/* getRefIndexAt: the index for the ray's wavelength (Cauchy's
 * A + B / lambda^2 with lambda in micrometres when colours are
 * simulated, otherwise refIndex). Every glass class uses it as its
 * ref_index hook. */
double atl__op_glass_ref_index(atl_op_obj *o, atl_op_sim *sim, atl_op_pt p,
                               const atl_op_ray *r);

/* The Fresnel power reflectances for relative index n1 (the index the
 * ray comes from over the one it enters) and the cosines of the angles
 * of incidence and refraction: *rs for s, *rp for p polarisation. */
void atl__op_fresnel(double n1, double cos1, double cos2, double *rs,
                     double *rp);

/* BaseGlass.refract: the ray r, hitting the surface at hit with normal
 * (any length, pointing against the ray), with n1 the relative index
 * from this glass alone; the merging glasses multiply or divide it by
 * their own. Reflects totally, or refracts in place and emits the
 * partial reflection (thinned out by the ray's index when weak).
 * body is the gradient-index glass the ray was in before the merging
 * (upstream's bodyMergingObj, 0 when unset), which the reflected ray
 * keeps, and which a totally reflected ray gets back when it was set.
 * Each merging glass the ray leaves or enters hears of it (its exit or
 * enter hook), as upstream's onRayExit and onRayEnter. */
atl_op_result atl__op_glass_refract(atl_op_glass *g, atl_op_sim *sim,
                                    atl_op_ray *r, long ray_index,
                                    atl_op_pt hit, atl_op_pt normal, double n1,
                                    atl_op_obj *const *merging, int nmerging,
                                    int body);

/* onRayIncident for a glass whose incident type (1 inside to outside,
 * -1 outside to inside, 0 overlapping surfaces of its own, NaN
 * undefined) and normal at the hit are known: the relative index from
 * the type, then refract; an undefined type absorbs the ray. */
atl_op_result atl__op_glass_incident(atl_op_glass *g, atl_op_sim *sim,
                                     atl_op_ray *r, long ray_index,
                                     atl_op_pt hit, atl_op_pt normal,
                                     double type, atl_op_obj *const *merging,
                                     int nmerging);

/* CircleObjMixin.checkRayIntersectsShape for the circle with centre c1
 * through c2: the nearer of the line's two crossings that lie ahead of
 * the ray, past the minimal segment. */
int atl__op_circle_hit(atl_op_sim *sim, const atl_op_ray *r, atl_op_pt c1,
                       atl_op_pt c2, atl_op_pt *hit);

/* Checks every glass's init makes: a nonzero, finite refIndex and a
 * finite cauchyB; 0 or -EINVAL with *err naming the field. */
int atl__op_glass_check(atl_op_glass *g, char **err);

/* The undefined-behaviour result: absorbed, as upstream does not know
 * where the ray would go. */
static inline atl_op_result atl__op_glass_undefined(void) {
  atl_op_result res = {.absorbed = 1, .undefined = 1};
  return res;
}

/* --- Paths of segments and arcs (Glass, SphericalLens) --------------- */

/* A path vertex; arc marks the middle point of a circular arc through
 * its two neighbours. */
typedef struct {
  atl_op_pt p;
  int arc;
} atl_op_vertex;

/* geometry.js's perpendicularBisector of the segment a-b, as the line
 * through two points, in upstream's order of operations. */
static inline void atl__op_perp_bisector(atl_op_pt a, atl_op_pt b,
                                         atl_op_pt out[2]) {
  out[0].x = (-a.y + b.y + a.x + b.x) * 0.5;
  out[0].y = (a.x - b.x + a.y + b.y) * 0.5;
  out[1].x = (a.y - b.y + a.x + b.x) * 0.5;
  out[1].y = (-a.x + b.x + a.y + b.y) * 0.5;
}

/* The centre of the circle through a, b and c (the arc a-c-b), as the
 * intersection of two perpendicular bisectors; non-finite when the
 * three points are collinear. */
static inline atl_op_pt atl__op_arc_center(atl_op_pt a, atl_op_pt b,
                                           atl_op_pt c) {
  atl_op_pt l1[2], l2[2];
  atl__op_perp_bisector(a, c, l1);
  atl__op_perp_bisector(b, c, l2);
  return atl__op_lines_x(l1[0], l1[1], l2[0], l2[1]);
}

/* Reads a path (an array of {x, y, arc}) into *out (malloc'd); what
 * names the object for messages. */
int atl__op_path_read(json_object *j, const char *what, atl_op_vertex **out,
                      int *n, char **err);

/* --- SphericalLens --------------------------------------------------- */

/* A lens built from its parameters: the six vertices of its path
 * (edge, edge, arc middle, edge, edge, arc middle). */
typedef struct {
  atl_op_vertex v[6];
} atl_op_lens_path;

/* createLensWithDR1R2 from the ends p1, p2 of the lens's axis-crossing
 * segment: 0, or -1 when the parameters give no lens (a radius smaller
 * than half the lens's height). */
int atl__op_lens_dr1r2(atl_op_pt p1, atl_op_pt p2, double d, double r1,
                       double r2, atl_op_lens_path *out);
/* createLensWithDFfdBfd: the radii from the thickness and the front and
 * back focal distances for index n, then the lens; -1 for none. */
int atl__op_lens_dffdbfd(atl_op_pt p1, atl_op_pt p2, double d, double ffd,
                         double bfd, double n, atl_op_lens_path *out);
/* getDR1R2 and getDFfdBfd of a built lens path. */
void atl__op_lens_get_dr1r2(const atl_op_vertex *v, double *d, double *r1,
                            double *r2);
void atl__op_lens_get_dffdbfd(const atl_op_vertex *v, double n, double *d,
                              double *ffd, double *bfd);

/* --- Cubic Bezier curves (objs_curve.c), as bezier-js computes them --- */

/* A curve: its control points, its derivative's and the largest x and y
 * over it (bezier-js bbox's maxima, which CurveGlass's reach uses). */
typedef struct {
  atl_op_pt p[4];
  atl_op_pt d[3];
  double xmax, ymax;
} atl_op_bezier;

/* Fills d, xmax and ymax from p. */
void atl__op_bezier_make(atl_op_bezier *c);
/* bezier-js compute: the point at t of the curve of order 2 or 3 with
 * control points p (the derivative's are order 2). */
atl_op_pt atl__op_bezier_at(const atl_op_pt *p, int order, double t);
/* bezier-js lineIntersects: the parameters where the curve crosses the
 * segment a-b, in its order; returns how many (at most 3). */
int atl__op_bezier_line(const atl_op_bezier *c, atl_op_pt a, atl_op_pt b,
                        double *out);
/* Curve i of a CurveGlass-style "points" array (n entries of {a1, c1,
 * c2}, the last joining the first), made: -1, or the index of the entry
 * that is not three points. */
int atl__op_bezier_read(json_object *points, int i, int n, atl_op_bezier *c);
/* The outline of a closed chain of n curves (CurveGlass,
 * CurveGrinGlass): one curve edge each (outline.h). */
int atl__op_bezier_outline(const atl_op_bezier *c, int n, atl_op_outline *out);
/* bezier-js bbox along x (dim 0) or y (dim 1): *lo and *hi. */
void atl__op_bezier_bounds(const atl_op_bezier *c, int dim, double *lo,
                           double *hi);

extern const atl_op_class atl__op_glass_poly, atl__op_circle_glass,
    atl__op_plane_glass, atl__op_spherical_lens, atl__op_curve_glass,
    atl__op_ideal_lens;

#endif
