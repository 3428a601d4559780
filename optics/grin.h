/* The gradient-index glasses: upstream's BaseGrinGlass and its four
 * shapes. A GRIN glass has a refractive index n(x, y, lambda) given as a
 * LaTeX equation relative to its origin; a ray inside it is stepped along
 * the ray equation d/ds (n dr/ds) = grad n by upstream's Euler scheme, one
 * step of stepSize per processed segment, and absorbed along the way by
 * exp(-alpha stepSize) with alpha from absorptionFn. At the boundary it
 * refracts and partially reflects as any glass (glass.h), with the index
 * at the boundary point.
 *
 * Overlapping GRIN glasses merge their bodies: a ray carries the product
 * of the indices of the glasses it is in (its body), multiplied by a
 * glass's n when it enters and divided when it leaves, and the step uses
 * that product and its gradient. Absorption coefficients add the same way.
 *
 * Ownership: grin.c owns BaseGrinGlass (equations, steps, bodies, the
 * shared parts of checkRayIntersects and onRayIncident); objs_grin.c owns
 * GrinGlass (a polygon) and CircleGrinGlass; objs_grin_curve.c owns
 * CurveGrinGlass (Bezier curves, with the Bezier maths objs_curve.c
 * exports); objs_grin_param.c owns ParamGrinGlass (parametric pieces,
 * with its own sampling of them). The table of merged bodies belongs to
 * the simulation (op.h, sim->bodies) and is freed with it. */
#ifndef ATL_OPTICS_GRIN_H
#define ATL_OPTICS_GRIN_H

#include <stddef.h>

#include "expr.h"
#include "glass.h"

typedef struct atl_op_grin atl_op_grin;

/* Upstream's isInsideGlass, isOutsideGlass and isOnBoundary for one
 * shape; each uses the glass's intersectTol its own way. A point on the
 * boundary is neither inside nor outside. */
typedef struct {
  int (*inside)(const atl_op_grin *g, atl_op_pt p);
  int (*outside)(const atl_op_grin *g, atl_op_pt p);
  int (*on_boundary)(const atl_op_grin *g, atl_op_pt p);
} atl_op_grin_shape;

/* The equations of a glass, compiled over (x, y, lambda) with x and y
 * relative to the origin. */
enum { ATL_OP_GRIN_N, ATL_OP_GRIN_NX, ATL_OP_GRIN_NY, ATL_OP_GRIN_ALPHA };

/* The fields every GRIN glass has; a GRIN class's struct starts with
 * this. refIndex and cauchyB of BaseGlass are not fields of a GRIN glass
 * (its index is refIndexFn); only partialReflect is used. */
struct atl_op_grin {
  atl_op_glass g;
  char *ref_index_fn, *absorption_fn;
  int plot_fns; /* drawing only */
  atl_op_pt origin;
  double step_size, intersect_tol;
  atl_op_expr_t *fn[4];
  int alpha_zero; /* absorptionFn is the constant 0: no attenuation */
  const atl_op_grin_shape *shape;
};

/* The fields as upstream's serializableDefaults has them; ref is the
 * default refIndexFn as JSON text, tol the default intersectTol. */
#define ATL_OP_GRIN_FIELDS(T, ref, tol)                                        \
  {"refIndexFn", ATL_OP_F_STR, ref, offsetof(T, gr.ref_index_fn)},             \
      {"absorptionFn", ATL_OP_F_STR, "\"0\"", offsetof(T, gr.absorption_fn)},  \
      {"plotFns", ATL_OP_F_BOOL, "false", offsetof(T, gr.plot_fns)},           \
      {"origin", ATL_OP_F_POINT, "{\"x\": 0, \"y\": 0}",                       \
       offsetof(T, gr.origin)},                                                \
      {"stepSize", ATL_OP_F_NUM, "1", offsetof(T, gr.step_size)},              \
      {"intersectTol", ATL_OP_F_NUM, tol, offsetof(T, gr.intersect_tol)}, {    \
    "partialReflect", ATL_OP_F_BOOL, "true", offsetof(T, gr.g.partial_reflect) \
  }

/* The default index of GrinGlass and CurveGrinGlass, and of
 * CircleGrinGlass and ParamGrinGlass, as JSON text. */
#define ATL_OP_GRIN_DEF_WAVE                                                   \
  "\"1.1+0.1\\\\cdot\\\\cos\\\\left(0.1\\\\cdot y\\\\right)\""
#define ATL_OP_GRIN_DEF_BELL "\"1+e^{-\\\\frac{x^2+y^2}{50^2}}\""

/* After the fields are read: compiles refIndexFn, its two partial
 * derivatives and absorptionFn, and checks stepSize and intersectTol.
 * A bad equation is a load error naming the field and the column. */
int atl__op_grin_init(atl_op_grin *g, const atl_op_grin_shape *shape,
                      char **err);
/* Frees the compiled equations (the class's destroy calls it). */
void atl__op_grin_destroy(atl_op_grin *g);

/* The first part of every GRIN checkRayIntersects: for a ray starting
 * inside the glass or on its boundary, the point one stepSize along it,
 * when that point is inside. 1 and *hit, or 0 (then the shape's own
 * crossing decides). */
int atl__op_grin_step_hit(atl_op_grin *g, const atl_op_ray *r, atl_op_pt *hit);

/* The inner branch of onRayIncident: the ray, inside, takes one step of
 * the ray equation from its start through hit (its body first set from
 * the glasses around its start when unset), attenuated by absorption. */
void atl__op_grin_advance(atl_op_grin *g, atl_op_sim *sim, atl_op_ray *r,
                          atl_op_pt hit);

/* The boundary branch of onRayIncident for a known incident type (1
 * leaving, -1 entering, 0 an edge of its own that cancels, anything else
 * undefined): the relative index from n at index_at, the ray's body
 * updated, then BaseGlass.refract at point with normal; the reflected ray
 * keeps the body the ray had before. */
atl_op_result atl__op_grin_boundary(atl_op_grin *g, atl_op_sim *sim,
                                    atl_op_ray *r, long ray_index,
                                    atl_op_pt index_at, atl_op_pt point,
                                    atl_op_pt normal, double type,
                                    atl_op_obj *const *merging, int nmerging);

/* What upstream does when refract is reached without a point (it throws
 * after merging the surfaces, and onRayIncident absorbs the ray): the
 * merging glasses are asked for their incident types, as upstream's
 * loop does before the throw, and the ray is absorbed. */
atl_op_result atl__op_grin_absorb_after_merging(atl_op_grin *g, atl_op_sim *sim,
                                                atl_op_ray *r,
                                                atl_op_obj *const *merging,
                                                int nmerging);

/* The class hooks every GRIN glass shares: getRefIndexAt (n of this glass
 * alone at p for the ray's wavelength, 540 nm without colours) and
 * onRayEnter/onRayExit (the body multiplied or divided by this glass). */
double atl__op_grin_ref_index(atl_op_obj *o, atl_op_sim *sim, atl_op_pt p,
                              const atl_op_ray *r);
void atl__op_grin_enter(atl_op_obj *o, atl_op_sim *sim, atl_op_ray *r);
void atl__op_grin_exit(atl_op_obj *o, atl_op_sim *sim, atl_op_ray *r);

/* geometry.js's distance and the two line tests GrinGlass and
 * ParamGrinGlass share: the nearest crossing of the ray with segment
 * s1-s2, past the minimal segment, and its squared distance. */
int atl__op_grin_ray_segment(const atl_op_ray *r, atl_op_pt s1, atl_op_pt s2,
                             double min_sq, atl_op_pt *hit, double *lsq);

extern const atl_op_class atl__op_grin_glass, atl__op_circle_grin_glass,
    atl__op_curve_grin_glass, atl__op_param_grin_glass;

#endif
