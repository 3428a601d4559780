/* The equation-driven glasses, both BaseGlass refraction (glass.h) on a
 * sampled boundary: CustomGlass, the region between y = f(x) (eqn1) and
 * y = g(x) (eqn2) over the frame where p1 is (-1, 0) and p2 is (1, 0), and
 * ParamGlass, the region a closed parametric curve bounds. The boundaries
 * are sampled once at load time; the normals are smoothed between
 * neighbouring segments as upstream's are. */
#include "atl-build.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "custom.h"
#include "glass.h"
#include "outline.h"

/* --- CustomGlass -----------------------------------------------------------
 */

typedef struct {
  atl_op_glass g;
  atl_op_pt p1, p2;
  char *eqn1, *eqn2;
  double step;
  char *curve_type;
  int smooth;
  atl_op_poly pl; /* closed: along f from p1 to p2, back along g */
  int hit_seg;    /* the segment of the last hit (upstream's tmp_i) */
  int front_end;  /* the vertex where f ends and g begins */
} custom_glass;

static const atl_op_field custom_glass_fields[] = {
    {"p1", ATL_OP_F_POINT, "null", offsetof(custom_glass, p1)},
    {"p2", ATL_OP_F_POINT, "null", offsetof(custom_glass, p2)},
    {"eqn1", ATL_OP_F_STR, "\"0\"", offsetof(custom_glass, eqn1)},
    {"eqn2", ATL_OP_F_STR, "\"0.5\\\\cdot\\\\sqrt{1-x^2}\"",
     offsetof(custom_glass, eqn2)},
    {"curveStepSize", ATL_OP_F_NUM, "0.1000001", offsetof(custom_glass, step)},
    {"curveType", ATL_OP_F_STR, "\"smoothNormal\"",
     offsetof(custom_glass, curve_type)},
    ATL_OP_GLASS_FIELDS(custom_glass),
    {NULL, 0, NULL, 0},
};

/* The boundary's way back: g from p2 to p1, in the reversed frame (where
 * x and y both change sign); g below f is an error, as upstream's. */
typedef struct {
  const atl_op_expr_t *f, *g;
  int below;
  double below_x;
} back_side;

static double front_y(void *f, double x) {
  return atl__op_expr_eval(f, &x);
}

static double back_y(void *user, double x) {
  back_side *b = user;
  double mx = -x, y = -atl__op_expr_eval(b->g, &mx);
  if (-y < atl__op_expr_eval(b->f, &mx) && !b->below)
    b->below = 1, b->below_x = mx;
  return y;
}

static int custom_glass_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  static const char *const xvar[] = {"x"};
  custom_glass *c = (custom_glass *)o;
  double step;
  int rc = atl__op_glass_check(&c->g, err);
  if (rc == 0)
    rc = atl__op_frame_check(o, c->curve_type, c->step, c->p1, c->p2,
                             s->length_scale, &c->smooth, &step, err);
  if (rc != 0)
    return rc;
  atl_op_expr_t *f = NULL, *g = NULL;
  rc = atl__op_eqn_compile(o, "eqn1", c->eqn1, xvar, 1, &f, err);
  if (rc == 0)
    rc = atl__op_eqn_compile(o, "eqn2", c->eqn2, xvar, 1, &g, err);
  back_side back = {f, g, 0, 0};
  /* p1, then along f to p2, then back along g. */
  if (rc == 0)
    rc = atl__op_poly_add(&c->pl, c->p1, 0, 0);
  if (rc == 0)
    rc = atl__op_frame_sample(c->p1, c->p2, step, front_y, f, &c->pl);
  c->front_end = c->pl.nv - 1;
  if (rc == 0)
    rc = atl__op_frame_sample(c->p2, c->p1, step, back_y, &back, &c->pl);
  if (rc == 0 && back.below)
    rc = asprintf(err,
                  "CustomGlass: \"eqn2\" is below \"eqn1\" at x = %g (the "
                  "glass lies between y = eqn1 and y = eqn2 >= eqn1)",
                  back.below_x) < 0
             ? -ENOMEM
             : -EINVAL;
  atl__op_expr_free(f);
  atl__op_expr_free(g);
  if (rc == 0)
    rc = atl__op_poly_finish(&c->pl, 1, o, s->length_scale);
  return rc;
}

static void custom_glass_destroy(atl_op_obj *o) {
  atl__op_poly_free(&((custom_glass *)o)->pl);
}

/* The nearest hit on the closed boundary; two hits closer than the
 * minimal segment on segments that do not follow each other (the ray
 * grazes a sharp corner of the region) give no hit at all, as upstream. */
static int custom_glass_intersect(atl_op_obj *o, atl_op_sim *sim,
                                  const atl_op_ray *r, atl_op_pt *hit) {
  custom_glass *c = (custom_glass *)o;
  const atl_op_poly *pl = &c->pl;
  double min_sq = atl__op_min_sq(sim), best = INFINITY;
  atl_op_boxray br = atl__op_boxray(r);
  int best_i = -1;
  for (int k = 0; k < pl->nrun; k++) {
    if (!atl__op_poly_run_meets(pl, k, &br))
      continue;
    for (int i = k * ATL_OP_RUN; i < atl__op_poly_run_end(pl, k); i++) {
      atl_op_pt a = pl->v[i], b = pl->v[(i + 1) % pl->nv];
      atl_op_pt p = atl__op_lines_x(r->p1, r->p2, a, b);
      if (!(atl__op_on_segment(p, a, b) && atl__op_on_ray(p, r->p1, r->p2)))
        continue;
      double d = atl__op_dist2(r->p1, p);
      if (!(d > min_sq))
        continue;
      if (best_i >= 0 && atl__op_dist2(p, *hit) < min_sq && best_i != i - 1)
        return 0;
      if (d < best) {
        best = d;
        *hit = p;
        best_i = i;
      }
    }
  }
  if (best_i < 0)
    return 0;
  c->hit_seg = best_i;
  return 1;
}

/* The normal of segment a-b against the ray (unnormalised, scaled by the
 * segment's length squared, as upstream's blending uses it). */
static atl_op_pt seg_normal(const atl_op_ray *r, atl_op_pt a, atl_op_pt b) {
  double rx = r->p2.x - r->p1.x, ry = r->p2.y - r->p1.y;
  double sx = b.x - a.x, sy = b.y - a.y;
  double rdots = rx * sx + ry * sy, ssq = sx * sx + sy * sy;
  return atl__op_pt(rdots * sx - ssq * rx, rdots * sy - ssq * ry);
}

/* getIncidentData on the segment of the last hit: the incident type by
 * the side the ray comes from, and the normal, blended towards the
 * neighbouring segment's from the middle to the shared end. */
static double custom_glass_data(custom_glass *c, const atl_op_ray *r,
                                atl_op_pt *normal) {
  const atl_op_poly *pl = &c->pl;
  int n = pl->nv, i = c->hit_seg;
  atl_op_pt a = pl->v[i % n], b = pl->v[(i + 1) % n];
  atl_op_pt p = atl__op_lines_x(r->p1, r->p2, a, b);
  double cross =
      (r->p2.x - r->p1.x) * (b.y - a.y) - (r->p2.y - r->p1.y) * (b.x - a.x);
  atl_op_pt nm = seg_normal(r, a, b);
  double mx = b.x - a.x, my = b.y - a.y;
  double frac = fabs(mx) > fabs(my) ? (p.x - a.x) / mx : (p.y - a.y) / my;
  if (c->smooth) {
    atl_op_pt na = frac < 0.5
                       ? seg_normal(r, pl->v[(i - 1 + n) % n], pl->v[i % n])
                       : seg_normal(r, pl->v[(i + 1) % n], pl->v[(i + 2) % n]);
    if (frac < 0.5)
      nm = atl__op_pt(nm.x * (0.5 + frac) + na.x * (0.5 - frac),
                      nm.y * (0.5 + frac) + na.y * (0.5 - frac));
    else
      nm = atl__op_pt(na.x * (frac - 0.5) + nm.x * (1.5 - frac),
                      na.y * (frac - 0.5) + nm.y * (1.5 - frac));
  }
  *normal = nm;
  return cross < 0 ? 1 : -1;
}

static double custom_glass_incident_type(atl_op_obj *o, atl_op_sim *sim,
                                         const atl_op_ray *r) {
  (void)sim;
  atl_op_pt normal;
  return custom_glass_data((custom_glass *)o, r, &normal);
}

static atl_op_result custom_glass_incident(atl_op_obj *o, atl_op_sim *sim,
                                           atl_op_ray *r, long ray_index,
                                           atl_op_pt hit,
                                           atl_op_obj *const *merging,
                                           int nmerging) {
  custom_glass *c = (custom_glass *)o;
  atl_op_pt normal;
  double type = custom_glass_data(c, r, &normal);
  return atl__op_glass_incident(&c->g, sim, r, ray_index, hit, normal, type,
                                merging, nmerging);
}

/* Two curve edges: from p1 along f, and back along g to p1. */
static int custom_glass_outline(const atl_op_obj *o, atl_op_outline *out) {
  const custom_glass *c = (const custom_glass *)o;
  const atl_op_poly *pl = &c->pl;
  if (pl->nv < 3)
    return 0;
  int rc = atl__op_outline_curve(out, pl->v, pl->nv, 0, c->front_end + 1);
  if (rc == 0)
    rc = atl__op_outline_curve(out, pl->v, pl->nv, c->front_end,
                               pl->nv - c->front_end + 1);
  if (rc == 0)
    atl__op_outline_close(out);
  return rc;
}

const atl_op_class atl__op_custom_glass = {
    .type = "CustomGlass",
    .flags = ATL_OP_OPTICAL | ATL_OP_GLASS | ATL_OP_MERGES_WITH_GLASS,
    .size = sizeof(custom_glass),
    .fields = custom_glass_fields,
    .init = custom_glass_init,
    .intersect = custom_glass_intersect,
    .incident = custom_glass_incident,
    .incident_type = custom_glass_incident_type,
    .ref_index = atl__op_glass_ref_index,
    .destroy = custom_glass_destroy,
    .outline = custom_glass_outline,
};

/* --- ParamGlass
 * --------------------------------------------------------------- */

typedef struct {
  atl_op_glass g;
  atl_op_param_curve pc;
  atl_op_curve_hit *hits; /* scratch for the hit tests */
  int cap;
} param_glass;

static const atl_op_field param_glass_fields[] = {
    ATL_OP_PARAM_FIELDS(param_glass,
                        "[{\"eqnX\":\"50\\\\cdot\\\\cos\\\\left(t\\\\right)\","
                        "\"eqnY\":\"50\\\\cdot\\\\sin\\\\left(t\\\\right)\","
                        "\"tMin\":0,\"tMax\":6.283185307179586,"
                        "\"tStep\":0.01}]"),
    ATL_OP_GLASS_FIELDS(param_glass),
    {NULL, 0, NULL, 0},
};

static int param_glass_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  param_glass *c = (param_glass *)o;
  int rc = atl__op_glass_check(&c->g, err);
  if (rc == 0)
    rc = atl__op_param_init(o, &c->pc, s, err);
  if (rc == 0)
    atl__op_param_validate(o, &c->pc);
  return rc;
}

static void param_glass_destroy(atl_op_obj *o) {
  param_glass *c = (param_glass *)o;
  atl__op_poly_free(&c->pc.pl);
  free(c->hits);
}

/* getIncidentData: the nearest crossing, except that two crossings within
 * the minimal segment of opposite types (the curve doubling back on
 * itself) cancel; any other coincidence, or an edge-on crossing, is
 * undefined (NaN). *found is 0, and the type 0, where the ray meets
 * nothing that counts. */
static double param_glass_data(param_glass *c, const atl_op_sim *sim,
                               const atl_op_ray *r, atl_op_pt *p,
                               atl_op_pt *normal, int *found) {
  int n = atl__op_param_hits(&c->pc, r, &c->hits, &c->cap);
  atl_op_curve_hit *h = c->hits;
  double min_sq = atl__op_min_sq(sim);
  *found = 0;
  /* A stable insertion sort by distance from the ray's start. */
  for (int i = 1; i < n; i++) {
    atl_op_curve_hit x = h[i];
    double dx = atl__op_dist2(r->p1, x.p);
    int j = i - 1;
    for (; j >= 0 && atl__op_dist2(r->p1, h[j].p) > dx; j--)
      h[j + 1] = h[j];
    h[j + 1] = x;
  }
  for (int i = 0; i < n; i++) {
    *p = h[i].p, *normal = h[i].normal;
    *found = 1;
    if (isnan(h[i].type))
      return NAN;
    int close = 0, other = -1;
    for (int k = 0; k < n; k++)
      if (k != i && atl__op_dist2(h[i].p, h[k].p) < min_sq)
        close++, other = k;
    if (close == 0)
      return h[i].type;
    if (close == 1 && ((h[i].type == 1 && h[other].type == -1) ||
                       (h[i].type == -1 && h[other].type == 1)))
      continue;
    return NAN;
  }
  *found = 0;
  return 0;
}

static int param_glass_intersect(atl_op_obj *o, atl_op_sim *sim,
                                 const atl_op_ray *r, atl_op_pt *hit) {
  atl_op_pt normal;
  int found;
  param_glass_data((param_glass *)o, sim, r, hit, &normal, &found);
  return found;
}

static double param_glass_incident_type(atl_op_obj *o, atl_op_sim *sim,
                                        const atl_op_ray *r) {
  atl_op_pt p, normal;
  int found;
  return param_glass_data((param_glass *)o, sim, r, &p, &normal, &found);
}

static atl_op_result param_glass_incident(atl_op_obj *o, atl_op_sim *sim,
                                          atl_op_ray *r, long ray_index,
                                          atl_op_pt hit,
                                          atl_op_obj *const *merging,
                                          int nmerging) {
  param_glass *c = (param_glass *)o;
  atl_op_pt p, normal;
  int found;
  double type = param_glass_data(c, sim, r, &p, &normal, &found);
  if (!found)
    return atl__op_glass_undefined();
  return atl__op_glass_incident(&c->g, sim, r, ray_index, hit, normal, type,
                                merging, nmerging);
}

static int param_glass_outline(const atl_op_obj *o, atl_op_outline *out) {
  return atl__op_param_outline(&((const param_glass *)o)->pc, 1, out);
}

const atl_op_class atl__op_param_glass = {
    .type = "ParamGlass",
    .flags = ATL_OP_OPTICAL | ATL_OP_GLASS | ATL_OP_MERGES_WITH_GLASS,
    .size = sizeof(param_glass),
    .fields = param_glass_fields,
    .init = param_glass_init,
    .intersect = param_glass_intersect,
    .incident = param_glass_incident,
    .incident_type = param_glass_incident_type,
    .ref_index = atl__op_glass_ref_index,
    .destroy = param_glass_destroy,
    .outline = param_glass_outline,
};
