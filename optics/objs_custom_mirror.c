/* The equation-driven mirrors: CustomMirror (y = f(x) over the frame where
 * p1 is (-1, 0) and p2 is (1, 0)) and ParamMirror (pieces of a parametric
 * curve). Both are sampled into polylines once, at load time; their
 * reflections follow upstream's, including the smoothing of the direction
 * between neighbouring segments that lets image detection work. Both are
 * dichroic when their filter is on. */
#include "atl-build.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "custom.h"
#include "objs.h"
#include "outline.h"

/* --- CustomMirror ------------------------------------------------------------
 */

typedef struct {
  atl_op_line_filter l;
  char *eqn;
  double step;
  char *curve_type;
  int smooth;
  atl_op_poly pl;
  int hit_seg; /* the segment of the last hit (upstream's tmp_i) */
} custom_mirror;

static const atl_op_field custom_mirror_fields[] = {
    ATL_OP_ENDS_FIELDS,
    {"eqn", ATL_OP_F_STR, "\"0.5\\\\cdot\\\\sqrt{1-x^2}\"",
     offsetof(custom_mirror, eqn)},
    {"curveStepSize", ATL_OP_F_NUM, "0.1000001", offsetof(custom_mirror, step)},
    {"curveType", ATL_OP_F_STR, "\"smoothNormal\"",
     offsetof(custom_mirror, curve_type)},
    ATL_OP_FILTER_FIELDS,
    {NULL, 0, NULL, 0},
};

static double mirror_y(void *f, double x) {
  return atl__op_expr_eval(f, &x);
}

static int custom_mirror_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  static const char *const xvar[] = {"x"};
  custom_mirror *m = (custom_mirror *)o;
  double step;
  int rc = atl__op_line_filter_init(o, s, err);
  if (rc == 0)
    rc = atl__op_frame_check(o, m->curve_type, m->step, m->l.p1, m->l.p2,
                             s->length_scale, &m->smooth, &step, err);
  if (rc != 0)
    return rc;
  atl_op_expr_t *f = NULL;
  rc = atl__op_eqn_compile(o, "eqn", m->eqn, xvar, 1, &f, err);
  if (rc == 0)
    rc = atl__op_frame_sample(m->l.p1, m->l.p2, step, mirror_y, f, &m->pl);
  atl__op_expr_free(f);
  if (rc == 0)
    rc = atl__op_poly_finish(&m->pl, 0, o, s->length_scale);
  return rc;
}

static void custom_mirror_destroy(atl_op_obj *o) {
  atl__op_poly_free(&((custom_mirror *)o)->pl);
}

/* The nearest hit on the polyline, scanning its segments from the end
 * nearer the ray's start (ties go to the first found, as upstream's). */
static int custom_mirror_intersect(atl_op_obj *o, atl_op_sim *sim,
                                   const atl_op_ray *r, atl_op_pt *hit) {
  custom_mirror *m = (custom_mirror *)o;
  if (!atl__op_filter_ok(sim, &m->l.f, r))
    return 0;
  const atl_op_poly *pl = &m->pl;
  double min_len = ATL_OP_MIN_SEG * sim->scene->length_scale;
  int fwd =
      sqrt(atl__op_dist2(m->l.p2, r->p1)) > sqrt(atl__op_dist2(m->l.p1, r->p1));
  atl_op_boxray br = atl__op_boxray(r);
  int found = 0;
  double best = INFINITY;
  for (int kk = 0; kk < pl->nrun; kk++) {
    int k = fwd ? kk : pl->nrun - 1 - kk;
    if (!atl__op_poly_run_meets(pl, k, &br))
      continue;
    int lo = k * ATL_OP_RUN, hi = atl__op_poly_run_end(pl, k);
    for (int jj = lo; jj < hi; jj++) {
      int i = fwd ? jj : hi - 1 - (jj - lo);
      atl_op_pt a = pl->v[i], b = pl->v[i + 1];
      atl_op_pt p = atl__op_lines_x(r->p1, r->p2, a, b);
      double dist = sqrt(atl__op_dist2(r->p1, p));
      if (dist < min_len)
        continue;
      if (atl__op_on_segment(p, a, b) && atl__op_on_ray(p, r->p1, r->p2) &&
          (!found || dist < best)) {
        found = 1;
        best = dist;
        *hit = p;
        m->hit_seg = i;
      }
    }
  }
  return found;
}

static atl_op_result custom_mirror_incident(atl_op_obj *o, atl_op_sim *sim,
                                            atl_op_ray *r, long ray_index,
                                            atl_op_pt hit,
                                            atl_op_obj *const *merging,
                                            int nmerging) {
  (void)ray_index, (void)merging, (void)nmerging;
  custom_mirror *m = (custom_mirror *)o;
  const atl_op_poly *pl = &m->pl;
  int i = m->hit_seg;
  atl_op_pt a = pl->v[i], b = pl->v[i + 1];
  double mx = b.x - a.x, my = b.y - a.y;
  double frac = fabs(mx) > fabs(my) ? (hit.x - a.x) / mx : (hit.y - a.y) / my;
  atl_op_pt out = atl__op_reflect_line(r->p1, hit, a, b);
  int nb = -1;
  if (m->smooth &&
      !((i == 0 && frac < 0.5) || (i == pl->nv - 2 && frac >= 0.5)))
    nb = frac < 0.5 ? i - 1 : i + 1;
  if (nb >= 0) {
    /* Blend with the reflection off the neighbouring segment: equal
     * weights at the shared end, the segment's own at its middle. */
    atl_op_pt outa = atl__op_reflect_line(r->p1, hit, pl->v[nb], pl->v[nb + 1]);
    if (frac < 0.5)
      out = atl__op_pt(out.x * (0.5 + frac) + outa.x * (0.5 - frac),
                       out.y * (0.5 + frac) + outa.y * (0.5 - frac));
    else
      out = atl__op_pt(outa.x * (frac - 0.5) + out.x * (1.5 - frac),
                       outa.y * (frac - 0.5) + out.y * (1.5 - frac));
  }
  r->p1 = hit;
  r->p2 = out;
  r->kind = ATL_OP_REFLECT;
  atl_op_result res = {0};
  return res;
}

/* The sampled curve from p1 to p2, one curve edge. */
static int custom_mirror_outline(const atl_op_obj *o, atl_op_outline *out) {
  const atl_op_poly *pl = &((const custom_mirror *)o)->pl;
  return atl__op_outline_curve(out, pl->v, pl->nv, 0, pl->nv);
}

const atl_op_class atl__op_custom_mirror = {
    .type = "CustomMirror",
    .flags = ATL_OP_OPTICAL | ATL_OP_MERGES_WITH_GLASS,
    .size = sizeof(custom_mirror),
    .fields = custom_mirror_fields,
    .init = custom_mirror_init,
    .intersect = custom_mirror_intersect,
    .incident = custom_mirror_incident,
    .destroy = custom_mirror_destroy,
    .outline = custom_mirror_outline,
};

/* --- ParamMirror
 * ---------------------------------------------------------------- */

typedef struct {
  atl_op_line_filter l; /* p1 and p2 unused: the filter's head */
  atl_op_param_curve pc;
  atl_op_curve_hit *hits;
  int cap;
} param_mirror;

static const atl_op_field param_mirror_fields[] = {
    ATL_OP_PARAM_FIELDS(param_mirror,
                        "[{\"eqnX\":\"50\\\\cdot\\\\cos\\\\left(t\\\\right)\","
                        "\"eqnY\":\"50\\\\cdot\\\\sin\\\\left(t\\\\right)\","
                        "\"tMin\":0,\"tMax\":6.283185307179586,"
                        "\"tStep\":0.01}]"),
    ATL_OP_FILTER_FIELDS,
    {NULL, 0, NULL, 0},
};

static int param_mirror_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  param_mirror *m = (param_mirror *)o;
  int rc = atl__op_filter_check(o, &m->l.f, err);
  return rc ? rc : atl__op_param_init(o, &m->pc, s, err);
}

static void param_mirror_destroy(atl_op_obj *o) {
  param_mirror *m = (param_mirror *)o;
  atl__op_poly_free(&m->pc.pl);
  free(m->hits);
}

static int param_mirror_intersect(atl_op_obj *o, atl_op_sim *sim,
                                  const atl_op_ray *r, atl_op_pt *hit) {
  param_mirror *m = (param_mirror *)o;
  if (!atl__op_filter_ok(sim, &m->l.f, r))
    return 0;
  int n = atl__op_param_hits(&m->pc, r, &m->hits, &m->cap);
  int best = -1;
  double bd = INFINITY;
  for (int i = 0; i < n; i++) {
    /* An edge-on crossing anywhere: upstream's non-point, no hit. */
    if (isnan(m->hits[i].type))
      return 0;
    double d = atl__op_dist2(r->p1, m->hits[i].p);
    if (d < bd)
      best = i, bd = d;
  }
  if (best < 0)
    return 0;
  *hit = m->hits[best].p;
  return 1;
}

static atl_op_result param_mirror_incident(atl_op_obj *o, atl_op_sim *sim,
                                           atl_op_ray *r, long ray_index,
                                           atl_op_pt hit,
                                           atl_op_obj *const *merging,
                                           int nmerging) {
  (void)sim, (void)ray_index, (void)merging, (void)nmerging;
  param_mirror *m = (param_mirror *)o;
  atl_op_result res = {0};
  int n = atl__op_param_hits(&m->pc, r, &m->hits, &m->cap);
  for (int i = 0; i < n; i++) {
    atl_op_curve_hit *h = &m->hits[i];
    if (!(atl__op_dist2(hit, h->p) < 1e-10))
      continue;
    double nx = h->normal.x, ny = h->normal.y;
    double len = sqrt(nx * nx + ny * ny);
    /* Upstream leaves the ray as it is here, which would meet the same
     * point for ever; it is absorbed instead. */
    if (isnan(h->type) || isnan(nx) || isnan(ny) || len < 1e-10)
      break;
    double nnx = nx / len, nny = ny / len;
    double rx = r->p2.x - r->p1.x, ry = r->p2.y - r->p1.y;
    double dot = rx * nnx + ry * nny;
    r->p1 = hit;
    r->p2 =
        atl__op_pt(hit.x + (rx - 2 * dot * nnx), hit.y + (ry - 2 * dot * nny));
    r->kind = ATL_OP_REFLECT;
    return res;
  }
  res.absorbed = res.undefined = 1;
  return res;
}

static int param_mirror_outline(const atl_op_obj *o, atl_op_outline *out) {
  return atl__op_param_outline(&((const param_mirror *)o)->pc, 0, out);
}

const atl_op_class atl__op_param_mirror = {
    .type = "ParamMirror",
    .flags = ATL_OP_OPTICAL | ATL_OP_MERGES_WITH_GLASS,
    .size = sizeof(param_mirror),
    .fields = param_mirror_fields,
    .init = param_mirror_init,
    .intersect = param_mirror_intersect,
    .incident = param_mirror_incident,
    .destroy = param_mirror_destroy,
    .outline = param_mirror_outline,
};
