/* ParamGrinGlass: a gradient-index glass bounded by parametric pieces
 * (x(t), y(t)) relative to its origin, on BaseGrinGlass (grin.h).
 *
 * The boundary is upstream's ParamCurveObjMixin: each piece sampled at
 * tMin, tMin + tStep, ... (the parameter accumulated by repeated
 * addition, as upstream does) and tMax, the samples joined by segments.
 * ParamGlass's helper writes the same sampling for the ordinary glasses;
 * it was not on main when this was written, so this file has its own.
 * "On the boundary" is within intersectTol of a segment, "inside" an odd
 * crossing number of the horizontal ray to +x, and a ray's incident type
 * is the side it crosses a segment from (positively oriented curves have
 * the glass on their right in screen coordinates). With curveType
 * "smoothNormal" (the default) the normal is blended with the adjacent
 * segment's, as upstream does; "polygonal" keeps each segment's.
 *
 * A ray inside asks these questions several times a step, over hundreds
 * of segments, so the segments are grouped in runs of CHUNK with a box
 * each: a run whose box is out of reach cannot change the answer. */
#include "atl-build.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "geom.h"
#include "grin.h"
#include "outline.h"

#define CHUNK 16

typedef struct {
  atl_op_grin gr;
  json_object *pieces_json;
  char *curve_type;
  int smooth;
  atl_op_pt *path;
  int n;
  double (*box)[4]; /* per run of CHUNK segments: xmin, xmax, ymin, ymax */
  int nbox;
  int *starts; /* the vertex where each piece starts (for the outline) */
  int nstarts;
} param_grin;

/* One crossing of the ray with the path (getRayIntersections). */
typedef struct {
  atl_op_pt p, normal;
  double type;
} param_hit;

static double seg_dist(atl_op_pt p, atl_op_pt p1, atl_op_pt p2) {
  double dx = p2.x - p1.x, dy = p2.y - p1.y;
  double lsq = dx * dx + dy * dy;
  if (lsq < 1e-20)
    return sqrt(atl__op_dist2(p, p1));
  double t = ((p.x - p1.x) * dx + (p.y - p1.y) * dy) / lsq;
  t = t > 1 ? 1 : t; /* Math.max(0, Math.min(1, t)), NaN kept */
  t = t < 0 ? 0 : t;
  atl_op_pt c = atl__op_pt(p1.x + t * dx, p1.y + t * dy);
  return sqrt(atl__op_dist2(c, p));
}

static int param_on_boundary(const atl_op_grin *g, atl_op_pt p) {
  const param_grin *pg = (const param_grin *)g;
  double tol = g->intersect_tol;
  for (int b = 0; b < pg->nbox; b++) {
    const double *bx = pg->box[b];
    if (p.x < bx[0] - tol || p.x > bx[1] + tol || p.y < bx[2] - tol ||
        p.y > bx[3] + tol)
      continue;
    int end = (b + 1) * CHUNK < pg->n - 1 ? (b + 1) * CHUNK : pg->n - 1;
    for (int i = b * CHUNK; i < end; i++) {
      if (atl__op_dist2(pg->path[i], pg->path[i + 1]) < 1e-20)
        continue;
      if (seg_dist(p, pg->path[i], pg->path[i + 1]) <= tol)
        return 1;
    }
  }
  return 0;
}

static int param_count(const param_grin *pg, atl_op_pt p) {
  int cnt = 0;
  for (int b = 0; b < pg->nbox; b++) {
    const double *bx = pg->box[b];
    if (p.y > bx[3] || p.y <= bx[2] || bx[1] < p.x)
      continue;
    int end = (b + 1) * CHUNK < pg->n - 1 ? (b + 1) * CHUNK : pg->n - 1;
    for (int i = b * CHUNK; i < end; i++) {
      atl_op_pt p1 = pg->path[i], p2 = pg->path[i + 1];
      if (atl__op_dist2(p1, p2) < 1e-20)
        continue;
      if (p1.y > p2.y) {
        atl_op_pt t = p1;
        p1 = p2;
        p2 = t;
      }
      if (p.y > p2.y || p.y <= p1.y || fabs(p2.y - p1.y) < 1e-10)
        continue;
      double t = (p.y - p1.y) / (p2.y - p1.y);
      if (p1.x + t * (p2.x - p1.x) > p.x)
        cnt++;
    }
  }
  return cnt;
}

static int param_inside(const atl_op_grin *g, atl_op_pt p) {
  return !param_on_boundary(g, p) && param_count((const param_grin *)g, p) % 2;
}

static int param_outside(const atl_op_grin *g, atl_op_pt p) {
  return !param_on_boundary(g, p) &&
         param_count((const param_grin *)g, p) % 2 == 0;
}

static const atl_op_grin_shape param_shape = {param_inside, param_outside,
                                              param_on_boundary};

/* The half-line from r->p1 through r->p2 meets box b (slabs; NaN from a
 * direction along an axis counts as meeting). */
static int ray_meets(const atl_op_ray *r, const double b[4]) {
  double o[2] = {r->p1.x, r->p1.y};
  double inv[2] = {1 / (r->p2.x - r->p1.x), 1 / (r->p2.y - r->p1.y)};
  double t0 = 0, t1 = INFINITY;
  for (int k = 0; k < 2; k++) {
    double a = (b[2 * k] - o[k]) * inv[k], c = (b[2 * k + 1] - o[k]) * inv[k];
    double lo = a < c ? a : c, hi = a < c ? c : a;
    t0 = lo > t0 ? lo : t0;
    t1 = hi < t1 ? hi : t1;
  }
  return !(t0 > t1);
}

/* The normal (against the ray, unit length) and incident type where the
 * ray crosses segment i at rp, with upstream's smoothing. */
static void segment_hit(const param_grin *pg, const atl_op_ray *r, int i,
                        atl_op_pt rp, param_hit *h) {
  atl_op_pt p1 = pg->path[i], p2 = pg->path[i + 1];
  double rdx = r->p2.x - r->p1.x, rdy = r->p2.y - r->p1.y;
  double tx = p2.x - p1.x, ty = p2.y - p1.y, tl = sqrt(tx * tx + ty * ty);
  h->p = rp;
  if (!(tl > 1e-10)) {
    h->type = NAN;
    h->normal = atl__op_pt(NAN, NAN);
    return;
  }
  double ux = tx / tl, uy = ty / tl;
  double cross = rdx * uy - rdy * ux;
  h->type = cross > 1e-10 ? 1 : cross < -1e-10 ? -1 : NAN;
  double rdots = rdx * ux + rdy * uy;
  double nx = rdots * ux - rdx, ny = rdots * uy - rdy;
  double frac = fabs(tx) > fabs(ty) ? (rp.x - p1.x) / tx : (rp.y - p1.y) / ty;
  double fx = nx, fy = ny;
  int prev = frac < 0.5 && i > 0, next = frac >= 0.5 && i < pg->n - 2;
  if (pg->smooth && (prev || next)) {
    atl_op_pt a1 = prev ? pg->path[i - 1] : pg->path[i + 1];
    atl_op_pt a2 = prev ? pg->path[i] : pg->path[i + 2];
    double ax = a2.x - a1.x, ay = a2.y - a1.y, al = sqrt(ax * ax + ay * ay);
    /* Only between segments of comparable length. */
    if (al / tl < 10 && tl / al < 10) {
      double vx = ax / al, vy = ay / al;
      double rd = rdx * vx + rdy * vy;
      double mx = rd * vx - rdx, my = rd * vy - rdy;
      if (frac < 0.5) {
        fx = nx * (0.5 + frac) + mx * (0.5 - frac);
        fy = ny * (0.5 + frac) + my * (0.5 - frac);
      } else {
        fx = mx * (frac - 0.5) + nx * (1.5 - frac);
        fy = my * (frac - 0.5) + ny * (1.5 - frac);
      }
    }
  }
  double fl = sqrt(fx * fx + fy * fy);
  h->normal = atl__op_pt(fx / fl, fy / fl);
}

/* getIncidentData: 0 without a crossing; NaN as soon as any crossing is
 * undefined (along the path's order); otherwise the nearest crossing. */
static double param_incident_data(const param_grin *pg, const atl_op_ray *r,
                                  param_hit *out) {
  double best = INFINITY, type = 0;
  for (int b = 0; b < pg->nbox; b++) {
    if (!ray_meets(r, pg->box[b]))
      continue;
    int end = (b + 1) * CHUNK < pg->n - 1 ? (b + 1) * CHUNK : pg->n - 1;
    for (int i = b * CHUNK; i < end; i++) {
      atl_op_pt s1 = pg->path[i], s2 = pg->path[i + 1];
      atl_op_pt rp = atl__op_lines_x(r->p1, r->p2, s1, s2);
      if (!(atl__op_on_segment(rp, s1, s2) &&
            atl__op_on_ray(rp, r->p1, r->p2) &&
            atl__op_dist2(r->p1, rp) > 1e-10))
        continue;
      param_hit h;
      segment_hit(pg, r, i, rp, &h);
      if (h.type != h.type) {
        *out = h;
        return NAN;
      }
      double d = atl__op_dist2(r->p1, rp);
      if (d < best) {
        best = d;
        *out = h;
        type = h.type;
      }
    }
  }
  return type;
}

static int param_intersect(atl_op_obj *o, atl_op_sim *sim, const atl_op_ray *r,
                           atl_op_pt *hit) {
  (void)sim;
  param_grin *pg = (param_grin *)o;
  if (atl__op_grin_step_hit(&pg->gr, r, hit))
    return 1;
  param_hit h;
  double type = param_incident_data(pg, r, &h);
  /* Upstream returns a marker without coordinates for an undefined
   * crossing, which the ray loop never takes as the nearest hit. */
  if (type != 1 && type != -1)
    return 0;
  *hit = h.p;
  return 1;
}

static double param_incident_type(atl_op_obj *o, atl_op_sim *sim,
                                  const atl_op_ray *r) {
  (void)sim;
  param_hit h;
  return param_incident_data((param_grin *)o, r, &h);
}

static atl_op_result param_incident(atl_op_obj *o, atl_op_sim *sim,
                                    atl_op_ray *r, long ray_index,
                                    atl_op_pt hit, atl_op_obj *const *merging,
                                    int nmerging) {
  param_grin *pg = (param_grin *)o;
  atl_op_grin *g = &pg->gr;
  atl_op_result res = {0};
  if ((param_inside(g, r->p1) || param_outside(g, r->p1)) &&
      param_on_boundary(g, hit)) {
    param_hit h;
    double type = param_incident_data(pg, r, &h);
    /* Upstream's 0 (no crossing) is undefined here, unlike the others. */
    if (type != 1 && type != -1)
      return atl__op_glass_undefined();
    return atl__op_grin_boundary(g, sim, r, ray_index, hit, hit, h.normal, type,
                                 merging, nmerging);
  }
  atl__op_grin_advance(g, sim, r, hit);
  return res;
}

/* --- Loading ----------------------------------------------------------- */

static const atl_op_field param_grin_fields[] = {
    {"pieces", ATL_OP_F_JSON,
     "[{\"eqnX\": \"50\\\\cdot\\\\cos\\\\left(t\\\\right)\", \"eqnY\": "
     "\"50\\\\cdot\\\\sin\\\\left(t\\\\right)\", \"tMin\": 0, \"tMax\": "
     "6.283185307179586, \"tStep\": 0.01}]",
     offsetof(param_grin, pieces_json)},
    {"curveType", ATL_OP_F_STR, "\"smoothNormal\"",
     offsetof(param_grin, curve_type)},
    ATL_OP_GRIN_FIELDS(param_grin, ATL_OP_GRIN_DEF_BELL, "0.001"),
    {NULL, 0, NULL, 0},
};

static int push(param_grin *pg, int *cap, atl_op_pt p) {
  if (pg->n == *cap) {
    int c = *cap ? *cap * 2 : 256;
    atl_op_pt *q = realloc(pg->path, sizeof(*q) * (size_t)c);
    if (!q)
      return -ENOMEM;
    pg->path = q;
    *cap = c;
  }
  pg->path[pg->n++] = p;
  return 0;
}

/* One sample of piece i at t, relative to the origin. */
static int sample(param_grin *pg, int *cap, int i, atl_op_expr_t *const *fn,
                  double t, char **err) {
  double x = atl__op_expr_eval(fn[0], &t), y = atl__op_expr_eval(fn[1], &t);
  if (!isfinite(x) || !isfinite(y))
    return atl__op_fail(
        err, -EINVAL,
        "ParamGrinGlass: \"pieces\"[%d] gives a non-finite point "
        "(%g, %g) at t = %.17g",
        i, x, y, t);
  return push(pg, cap, atl__op_pt(pg->gr.origin.x + x, pg->gr.origin.y + y));
}

static int num_key(json_object *o, const char *key, double *out) {
  json_object *v;
  if (!json_object_object_get_ex(o, key, &v) ||
      !(json_object_is_type(v, json_type_double) ||
        json_object_is_type(v, json_type_int)))
    return 0;
  *out = json_object_get_double(v);
  return 1;
}

/* initPath: every piece sampled, as upstream. */
static int param_sample(param_grin *pg, char **err) {
  static const char *const tvar[] = {"t"};
  static const char *const keys[] = {"eqnX", "eqnY", "tMin", "tMax", "tStep"};
  json_object *j = pg->pieces_json;
  if (!json_object_is_type(j, json_type_array))
    return atl__op_fail(err, -EINVAL,
                        "ParamGrinGlass: \"pieces\" must be an array of "
                        "{\"eqnX\", \"eqnY\", \"tMin\", \"tMax\", \"tStep\"}");
  int np = (int)json_object_array_length(j), cap = 0, rc = 0;
  for (int i = 0; i < np && rc == 0; i++) {
    json_object *e = json_object_array_get_idx(j, (size_t)i), *v;
    if (!json_object_is_type(e, json_type_object))
      return atl__op_fail(
          err, -EINVAL, "ParamGrinGlass: \"pieces\"[%d] must be an object", i);
    json_object_object_foreach(e, key, val) {
      (void)val;
      int known = 0;
      for (int k = 0; k < 5; k++)
        known |= strcmp(key, keys[k]) == 0;
      if (!known)
        return atl__op_fail(
            err, -EINVAL,
            "ParamGrinGlass: \"pieces\"[%d] has an unknown key "
            "\"%s\"; a piece has eqnX, eqnY, tMin, tMax and tStep",
            i, key);
    }
    double t0, t1, dt;
    if (!num_key(e, "tMin", &t0) || !num_key(e, "tMax", &t1) ||
        !num_key(e, "tStep", &dt))
      return atl__op_fail(
          err, -EINVAL,
          "ParamGrinGlass: \"pieces\"[%d] needs numbers \"tMin\", "
          "\"tMax\" and \"tStep\"",
          i);
    if (!(dt > 0))
      return atl__op_fail(
          err, -EINVAL, "ParamGrinGlass: \"pieces\"[%d].tStep must be positive",
          i);
    if (!(t0 < t1) || !isfinite(t0) || !isfinite(t1))
      return atl__op_fail(
          err, -EINVAL,
          "ParamGrinGlass: \"pieces\"[%d] needs finite tMin < tMax", i);
    atl_op_expr_t *fn[2] = {NULL, NULL};
    for (int k = 0; k < 2 && rc == 0; k++) {
      char *msg = NULL;
      if (!json_object_object_get_ex(e, keys[k], &v) ||
          !json_object_is_type(v, json_type_string)) {
        rc = atl__op_fail(
            err, -EINVAL,
            "ParamGrinGlass: \"pieces\"[%d].%s must be an equation "
            "(a string) in t",
            i, keys[k]);
        break;
      }
      rc = atl__op_expr_compile(json_object_get_string(v), tvar, 1, &fn[k],
                                &msg);
      if (rc == -EINVAL) {
        rc = atl__op_fail(err, -EINVAL, "ParamGrinGlass: \"pieces\"[%d].%s: %s",
                          i, keys[k], msg ? msg : "out of memory");
      }
      free(msg);
    }
    if (rc == 0) {
      int *st = realloc(pg->starts, (size_t)(i + 1) * sizeof(*st));
      if (st) {
        pg->starts = st;
        st[pg->nstarts++] = pg->n;
      } else {
        rc = -ENOMEM;
      }
    }
    if (rc == 0)
      rc = sample(pg, &cap, i, fn, t0, err);
    for (double t = t0 + dt; rc == 0 && t < t1; t += dt)
      rc = sample(pg, &cap, i, fn, t, err);
    if (rc == 0)
      rc = sample(pg, &cap, i, fn, t1, err);
    atl__op_expr_free(fn[0]);
    atl__op_expr_free(fn[1]);
  }
  return rc;
}

/* validateCurve: the object's own warning (not the simulation's) when
 * the curve is not closed or not positively oriented (clockwise on
 * screen, by the shoelace sum), as upstream shows it. */
static void param_validate(param_grin *pg) {
  const char *w = NULL;
  const atl_op_pt *p = pg->path;
  int n = pg->n;
  if (n < 2 || fabs(p[0].x - p[n - 1].x) >= 1e-10 ||
      fabs(p[0].y - p[n - 1].y) >= 1e-10) {
    w = "the curve is not closed, so inside and outside are not defined";
  } else {
    double area = 0;
    for (int i = 0; i + 1 < n; i++)
      area += (p[i].x - p[i + 1].x) * (p[i].y + p[i + 1].y);
    if (!(n >= 3 && area > 0))
      w = "the curve is not positively oriented (clockwise on screen), so "
          "rays refract the wrong way";
  }
  if (w)
    pg->gr.g.base.warning = strdup(w);
}

static int param_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  (void)s;
  param_grin *pg = (param_grin *)o;
  if (!pg->curve_type)
    return atl__op_fail(err, -EINVAL,
                        "ParamGrinGlass: \"curveType\" must be a string");
  if (strcmp(pg->curve_type, "cubicBezier") == 0)
    return atl__op_fail(err, -EINVAL,
                        "ParamGrinGlass: \"curveType\" \"cubicBezier\" is not "
                        "supported yet");
  /* Upstream takes any other value as its default. */
  pg->smooth = strcmp(pg->curve_type, "polygonal") != 0;
  int rc = param_sample(pg, err);
  if (rc != 0)
    return rc;
  param_validate(pg);
  pg->nbox = pg->n > 1 ? (pg->n - 2) / CHUNK + 1 : 0;
  pg->box = calloc((size_t)pg->nbox + 1, sizeof(*pg->box));
  if (!pg->box)
    return -ENOMEM;
  for (int b = 0; b < pg->nbox; b++) {
    double *bx = pg->box[b], m = 0;
    int end = (b + 1) * CHUNK < pg->n - 1 ? (b + 1) * CHUNK : pg->n - 1;
    bx[0] = bx[2] = INFINITY;
    bx[1] = bx[3] = -INFINITY;
    for (int i = b * CHUNK; i <= end; i++) {
      atl_op_pt p = pg->path[i];
      bx[0] = fmin(bx[0], p.x), bx[1] = fmax(bx[1], p.x);
      bx[2] = fmin(bx[2], p.y), bx[3] = fmax(bx[3], p.y);
      m = fmax(m, fmax(fabs(p.x), fabs(p.y)));
    }
    /* Room for the roundings of the tests the boxes stand for; a wider
     * box only skips less. */
    double pad = 1e-9 * (m + 1);
    bx[0] -= pad, bx[1] += pad, bx[2] -= pad, bx[3] += pad;
    atl__op_box_add(o, atl__op_pt(bx[0], bx[2]), 0);
    atl__op_box_add(o, atl__op_pt(bx[1], bx[3]), 0);
  }
  return atl__op_grin_init(&pg->gr, &param_shape, err);
}

static void param_destroy(atl_op_obj *o) {
  param_grin *pg = (param_grin *)o;
  atl__op_grin_destroy(&pg->gr);
  free(pg->path);
  free(pg->starts);
  free(pg->box);
}

/* One curve edge per piece, closed when the curve ends where it starts. */
static int param_outline(const atl_op_obj *o, atl_op_outline *out) {
  const param_grin *pg = (const param_grin *)o;
  if (pg->n < 2)
    return 0;
  int rc =
      atl__op_outline_pieces(out, pg->path, pg->n, pg->starts, pg->nstarts);
  if (rc == 0)
    atl__op_outline_close(out);
  return rc;
}

const atl_op_class atl__op_param_grin_glass = {
    .type = "ParamGrinGlass",
    .flags =
        ATL_OP_OPTICAL | ATL_OP_GLASS | ATL_OP_MERGES_WITH_GLASS | ATL_OP_GRIN,
    .size = sizeof(param_grin),
    .fields = param_grin_fields,
    .init = param_init,
    .intersect = param_intersect,
    .incident = param_incident,
    .incident_type = param_incident_type,
    .ref_index = atl__op_grin_ref_index,
    .enter = atl__op_grin_enter,
    .exit = atl__op_grin_exit,
    .destroy = param_destroy,
    .outline = param_outline,
};
