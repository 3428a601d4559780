/* What the equation-driven objects share: compiling an object's equation
 * fields once at load time, sampled curves (polylines) with boxes around
 * runs of their segments so that a ray tests only the segments it can
 * meet, upstream's ParamCurveObjMixin (pieces of x(t), y(t) sampled into
 * one polyline, and its ray hits with smoothed normals), and upstream's
 * BaseCustomSurface (outgoing rays given by equations of the incident
 * one).
 *
 * custom.c owns these helpers; objs_custom_surface.c owns CustomSurface,
 * CustomArcSurface and CustomParamSurface; objs_custom_mirror.c owns
 * CustomMirror and ParamMirror; objs_custom_glass.c owns CustomGlass and
 * ParamGlass. Each object owns its compiled equations and its sampled
 * curve, freed by its class's destroy hook. */
#ifndef ATL_OPTICS_CUSTOM_H
#define ATL_OPTICS_CUSTOM_H

#include <json-c/json.h>
#include <stddef.h>

#include "expr.h"
#include "geom.h"
#include "op.h"

/* Compiles the equation text of field what (a name for messages, such as
 * "eqn" or "pieces[0].eqnX") of object o over vars. On error *err is
 * "Type: \"what\": <the evaluator's message, with its column>". */
int atl__op_eqn_compile(const atl_op_obj *o, const char *what, const char *text,
                        const char *const *vars, size_t nvars,
                        atl_op_expr_t **out, char **err);

/* A string member key of the JSON object j (an item of an array field);
 * NULL when missing or not a string. */
const char *atl__op_json_str(json_object *j, const char *key);
/* A number member key of j into *out; 0 when missing or not a number. */
int atl__op_json_num(json_object *j, const char *key, double *out);

/* --- Polylines ----------------------------------------------------------- */

/* A sampled curve: vertices v[0 .. nv-1]; segment i joins v[i] and
 * v[(i + 1) % nv]. An open curve has nv - 1 segments, a closed one nv.
 * Runs of ATL_OP_RUN segments keep a box (grown by a pad that covers the
 * roundings of the hit tests), so that a ray skips the runs it misses. */
#define ATL_OP_RUN 16
typedef struct {
  atl_op_pt *v;
  double *t; /* the curve's parameter at each vertex, or NULL */
  int nv, nseg;
  int nrun;
  double (*box)[4];
  /* The vertices where a parametric curve's pieces start (malloc'd; for
   * the outline), npieces of them; NULL for other curves. */
  int *piece_start, npieces;
} atl_op_poly;

/* Appends a vertex (growing the arrays); -ENOMEM on failure. */
int atl__op_poly_add(atl_op_poly *pl, atl_op_pt p, double t, int with_t);
/* Fixes the segments (closed or not) and computes the runs' boxes, and
 * grows o's own box around every vertex. */
int atl__op_poly_finish(atl_op_poly *pl, int closed, atl_op_obj *o,
                        double length_scale);
void atl__op_poly_free(atl_op_poly *pl);

/* Whether the ray may meet a segment of run k. */
static inline int atl__op_poly_run_meets(const atl_op_poly *pl, int k,
                                         const atl_op_boxray *br) {
  return atl__op_ray_meets_box(br, pl->box[k]);
}

/* The end of run k: one past its last segment. */
static inline int atl__op_poly_run_end(const atl_op_poly *pl, int k) {
  return (k + 1) * ATL_OP_RUN < pl->nseg ? (k + 1) * ATL_OP_RUN : pl->nseg;
}

/* --- Curves over the p1-p2 frame (CustomMirror, CustomGlass) ------------- */

/* Checks the fields of a curve y = f(x) over the frame where a is (-1, 0)
 * and b is (1, 0): curveType into *smooth, a step above 1e-6, a != b, and
 * no more than 10^7 samples; *step is the step in scene units. */
int atl__op_frame_check(const atl_op_obj *o, const char *curve_type,
                        double step_size, atl_op_pt a, atl_op_pt b,
                        double length_scale, int *smooth, double *step,
                        char **err);

/* Samples the curve from a to b as upstream does: every step, each sample
 * half a step after its grid point, the first and last clamped to the
 * ends; y_of gives the frame's y (in half-lengths of a-b) for its x in
 * [-1, 1]. Appends the points to pl. */
int atl__op_frame_sample(atl_op_pt a, atl_op_pt b, double step,
                         double (*y_of)(void *user, double x), void *user,
                         atl_op_poly *pl);

/* --- ParamCurveObjMixin -------------------------------------------------- */

/* curveType: how a sampled curve's normals are taken. */
enum { ATL_OP_CURVE_SMOOTH, ATL_OP_CURVE_POLYGONAL };

/* Reads curveType ("smoothNormal" or "polygonal"); cubicBezier is not
 * implemented and is a load error, as is any other value. */
int atl__op_curve_type(const atl_op_obj *o, const char *s, int *out,
                       char **err);

/* The fields of a parametric curve; a class's struct embeds this as pc
 * and lists ATL_OP_PARAM_FIELDS(T) in its field table. */
typedef struct {
  atl_op_pt origin;
  json_object *pieces;
  char *curve_type;
  int smooth;
  atl_op_poly pl;
} atl_op_param_curve;

#define ATL_OP_PARAM_FIELDS(T, pieces_default)                                 \
  {"origin", ATL_OP_F_POINT, "{\"x\":0,\"y\":0}", offsetof(T, pc.origin)},     \
      {"pieces", ATL_OP_F_JSON, pieces_default, offsetof(T, pc.pieces)}, {     \
    "curveType", ATL_OP_F_STR, "\"smoothNormal\"", offsetof(T, pc.curve_type)  \
  }

/* initPath: compiles each piece's eqnX and eqnY of t and samples them
 * from tMin (included) by tStep to tMax (included) into pc->pl, offset by
 * origin; the pieces follow each other in one open polyline. */
int atl__op_param_init(atl_op_obj *o, atl_op_param_curve *pc, atl_op_scene *s,
                       char **err);

/* ParamGlass's validateCurve: o's own warning (not the simulation's) when
 * the curve is not closed or not positively oriented (clockwise on
 * screen, by the shoelace sum), so inside and outside are not what the
 * user meant. */
void atl__op_param_validate(atl_op_obj *o, const atl_op_param_curve *pc);

/* The curve's outline: one curve edge per piece (outline.h); closed when
 * closed is set and the curve ends where it starts (ParamGlass). */
int atl__op_param_outline(const atl_op_param_curve *pc, int closed,
                          atl_op_outline *out);

/* One crossing of a ray with a sampled curve (getRayIntersections). */
typedef struct {
  atl_op_pt p;
  atl_op_pt normal; /* unit, against the ray; NaN on a degenerate segment */
  double type;      /* 1 inside to outside, -1 outside to inside, NaN */
  double pos;       /* the curve's parameter t there */
  int seg;
} atl_op_curve_hit;

/* Every crossing of the ray with the curve, in the order of its segments,
 * more than 1e-5 from the ray's start. *hits is a buffer owned by the
 * caller (grown with realloc, *cap its size); returns the count, or -1
 * when out of memory. */
int atl__op_param_hits(const atl_op_param_curve *pc, const atl_op_ray *r,
                       atl_op_curve_hit **hits, int *cap);

/* --- BaseCustomSurface -----------------------------------------------------
 */

/* The compiled outRays: for each outgoing ray j (1-based), eqnTheta gives
 * its angle theta_j and eqnP its brightness P_j, from the incident ray's
 * angle theta_0 and brightness P_0, lambda, t, p, n_0, n_1 and the earlier
 * rays' theta_k and P_k. */
typedef struct {
  json_object *json;
  int two_sided;
  int n;
  atl_op_expr_t **theta, **power;
} atl_op_out_rays;

#define ATL_OP_OUT_RAYS_FIELDS(T)                                              \
  {"outRays", ATL_OP_F_JSON,                                                   \
   "[{\"eqnTheta\":\"\\\\theta_0\",\"eqnP\":\"0.7\\\\cdot P_0\"},"             \
   "{\"eqnTheta\":\"\\\\pi-\\\\theta_0\",\"eqnP\":\"P_0-P_1\"}]",              \
   offsetof(T, out.json)},                                                     \
  {                                                                            \
    "twoSided", ATL_OP_F_BOOL, "false", offsetof(T, out.two_sided)             \
  }

int atl__op_out_rays_init(const atl_op_obj *o, atl_op_out_rays *out,
                          char **err);
void atl__op_out_rays_free(atl_op_out_rays *out);

/* handleOutRays: the incident ray r hits the surface at hit, whose normal
 * (any length) points against the ray, at position pos (t); the merging
 * glasses on the ray's side give n_0, those on the other side n_1. The
 * first outgoing ray replaces r; the others are emitted. */
atl_op_result atl__op_out_rays_handle(const atl_op_out_rays *out,
                                      atl_op_sim *sim, atl_op_ray *r,
                                      atl_op_pt hit, atl_op_pt normal,
                                      double pos, atl_op_obj *const *merging,
                                      int nmerging);

extern const atl_op_class atl__op_custom_surface, atl__op_custom_arc_surface,
    atl__op_custom_param_surface, atl__op_custom_mirror, atl__op_param_mirror,
    atl__op_custom_glass, atl__op_param_glass;

#endif
