/* The equation-driven objects' shared parts (custom.h): equation fields,
 * polylines with run boxes, and upstream's ParamCurveObjMixin. The hit
 * and normal formulas keep upstream's order of operations, because the
 * scene tests compare detector readings to a relative 1e-3 after many
 * reflections. */
#include "atl-build.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "custom.h"
#include "outline.h"

int atl__op_eqn_compile(const atl_op_obj *o, const char *what, const char *text,
                        const char *const *vars, size_t nvars,
                        atl_op_expr_t **out, char **err) {
  char *msg = NULL;
  *out = NULL;
  if (!text)
    return asprintf(err, "%s: \"%s\" must be an equation (a LaTeX string)",
                    o->cls->type, what),
           -EINVAL;
  int rc = atl__op_expr_compile(text, vars, nvars, out, &msg);
  if (rc == -EINVAL)
    rc = asprintf(err, "%s: \"%s\": %s", o->cls->type, what,
                  msg ? msg : "invalid equation") < 0
             ? -ENOMEM
             : -EINVAL;
  free(msg);
  return rc;
}

const char *atl__op_json_str(json_object *j, const char *key) {
  json_object *v;
  if (!json_object_is_type(j, json_type_object) ||
      !json_object_object_get_ex(j, key, &v) ||
      !json_object_is_type(v, json_type_string))
    return NULL;
  return json_object_get_string(v);
}

int atl__op_json_num(json_object *j, const char *key, double *out) {
  json_object *v;
  if (!json_object_is_type(j, json_type_object) ||
      !json_object_object_get_ex(j, key, &v) ||
      !(json_object_is_type(v, json_type_double) ||
        json_object_is_type(v, json_type_int)))
    return 0;
  *out = json_object_get_double(v);
  return 1;
}

/* --- Polylines ----------------------------------------------------------- */

int atl__op_poly_add(atl_op_poly *pl, atl_op_pt p, double t, int with_t) {
  /* Capacity doubles at powers of two, so nv tells when to grow. */
  if ((pl->nv & (pl->nv - 1)) == 0) {
    size_t cap = pl->nv ? (size_t)pl->nv * 2 : 16;
    atl_op_pt *v = realloc(pl->v, cap * sizeof(*v));
    if (!v)
      return -ENOMEM;
    pl->v = v;
    if (with_t) {
      double *tt = realloc(pl->t, cap * sizeof(*tt));
      if (!tt)
        return -ENOMEM;
      pl->t = tt;
    }
  }
  pl->v[pl->nv] = p;
  if (with_t)
    pl->t[pl->nv] = t;
  pl->nv++;
  return 0;
}

static void grow(double *b, atl_op_pt p) {
  /* Comparisons, so that a NaN vertex (which no hit can come from) leaves
   * the box as it is. */
  b[0] = p.x < b[0] ? p.x : b[0];
  b[1] = p.y < b[1] ? p.y : b[1];
  b[2] = p.x > b[2] ? p.x : b[2];
  b[3] = p.y > b[3] ? p.y : b[3];
}

int atl__op_poly_finish(atl_op_poly *pl, int closed, atl_op_obj *o,
                        double length_scale) {
  pl->nseg = pl->nv < 2 ? 0 : closed ? pl->nv : pl->nv - 1;
  pl->nrun = (pl->nseg + ATL_OP_RUN - 1) / ATL_OP_RUN;
  pl->box = calloc((size_t)pl->nrun + 1, sizeof(*pl->box));
  if (!pl->box)
    return -ENOMEM;
  for (int k = 0; k < pl->nrun; k++) {
    double *b = pl->box[k];
    b[0] = b[1] = INFINITY;
    b[2] = b[3] = -INFINITY;
    for (int i = k * ATL_OP_RUN; i < atl__op_poly_run_end(pl, k); i++) {
      grow(b, pl->v[i]);
      grow(b, pl->v[(i + 1) % pl->nv]);
    }
    double m = fmax(fmax(fabs(b[0]), fabs(b[1])), fmax(fabs(b[2]), fabs(b[3])));
    double pad = 1e-6 * fabs(length_scale) + 1e-9 * (isfinite(m) ? m : 0);
    b[0] -= pad, b[1] -= pad, b[2] += pad, b[3] += pad;
  }
  for (int i = 0; i < pl->nv; i++)
    if (isfinite(pl->v[i].x) && isfinite(pl->v[i].y))
      atl__op_box_add(o, pl->v[i], 0);
  return 0;
}

void atl__op_poly_free(atl_op_poly *pl) {
  free(pl->v);
  free(pl->t);
  free(pl->box);
  free(pl->piece_start);
  memset(pl, 0, sizeof(*pl));
}

/* --- Curves over the p1-p2 frame ----------------------------------------- */

int atl__op_frame_check(const atl_op_obj *o, const char *curve_type,
                        double step_size, atl_op_pt a, atl_op_pt b,
                        double length_scale, int *smooth, double *step,
                        char **err) {
  const char *type = o->cls->type;
  int rc = atl__op_curve_type(o, curve_type, smooth, err);
  if (rc != 0)
    return rc;
  *smooth = *smooth == ATL_OP_CURVE_SMOOTH;
  *step = step_size * length_scale;
  if (!(step_size > 1e-6))
    return asprintf(err, "%s: \"curveStepSize\" must be above 1e-6", type),
           -EINVAL;
  if (a.x == b.x && a.y == b.y)
    return asprintf(err, "%s: \"p1\" and \"p2\" must differ", type), -EINVAL;
  if (!(sqrt(atl__op_dist2(a, b)) / *step < 1e7))
    return asprintf(err, "%s: more than 10^7 samples; raise \"curveStepSize\"",
                    type),
           -EINVAL;
  return 0;
}

int atl__op_frame_sample(atl_op_pt a, atl_op_pt b, double step,
                         double (*y_of)(void *user, double x), void *user,
                         atl_op_poly *pl) {
  double d = sqrt(atl__op_dist2(a, b));
  double e1x = (b.x - a.x) / d, e1y = (b.y - a.y) / d;
  double e2x = e1y, e2y = -e1x;
  double x0 = d / 2;
  for (double i = -step; i < d + 0.9 * step; i += step) {
    double ix = i + 0.5 * step;
    if (ix < 0)
      ix = 0;
    if (ix > d)
      ix = d;
    double x = ix - x0;
    double y = y_of(user, 2 * x / d) * d * 0.5;
    if (atl__op_poly_add(
            pl, atl__op_pt(a.x + e1x * ix + e2x * y, a.y + e1y * ix + e2y * y),
            0, 0) < 0)
      return -ENOMEM;
  }
  return 0;
}

/* --- ParamCurveObjMixin -------------------------------------------------- */

int atl__op_curve_type(const atl_op_obj *o, const char *s, int *out,
                       char **err) {
  if (s && strcmp(s, "smoothNormal") == 0)
    *out = ATL_OP_CURVE_SMOOTH;
  else if (s && strcmp(s, "polygonal") == 0)
    *out = ATL_OP_CURVE_POLYGONAL;
  else if (s && strcmp(s, "cubicBezier") == 0)
    return asprintf(err,
                    "%s: \"curveType\" \"cubicBezier\" is not implemented "
                    "here; use \"smoothNormal\" or \"polygonal\"",
                    o->cls->type),
           -EINVAL;
  else
    return asprintf(err,
                    "%s: \"curveType\" must be \"smoothNormal\" or "
                    "\"polygonal\"",
                    o->cls->type),
           -EINVAL;
  return 0;
}

/* One sample of a piece: fails (as upstream's initPath does) where the
 * coordinates are not finite. */
static int sample(const atl_op_obj *o, atl_op_param_curve *pc, int k,
                  const atl_op_expr_t *ex, const atl_op_expr_t *ey, double t,
                  char **err) {
  double x = atl__op_expr_eval(ex, &t), y = atl__op_expr_eval(ey, &t);
  if (!isfinite(x) || !isfinite(y))
    return asprintf(err,
                    "%s: \"pieces\"[%d]: the curve is not finite at t = %.17g "
                    "(x = %g, y = %g)",
                    o->cls->type, k, t, x, y),
           -EINVAL;
  return atl__op_poly_add(&pc->pl,
                          atl__op_pt(pc->origin.x + x, pc->origin.y + y), t, 1);
}

static int piece_init(const atl_op_obj *o, atl_op_param_curve *pc, int k,
                      json_object *j, char **err) {
  static const char *const tvar[] = {"t"};
  double tmin, tmax, tstep;
  if (!json_object_is_type(j, json_type_object))
    return asprintf(err, "%s: \"pieces\"[%d] must be an object", o->cls->type,
                    k),
           -EINVAL;
  json_object_object_foreach(j, key, val) {
    (void)val;
    if (strcmp(key, "eqnX") && strcmp(key, "eqnY") && strcmp(key, "tMin") &&
        strcmp(key, "tMax") && strcmp(key, "tStep"))
      return asprintf(err,
                      "%s: \"pieces\"[%d]: unknown field \"%s\"; a piece has "
                      "eqnX, eqnY, tMin, tMax, tStep",
                      o->cls->type, k, key),
             -EINVAL;
  }
  if (!atl__op_json_num(j, "tMin", &tmin) ||
      !atl__op_json_num(j, "tMax", &tmax) ||
      !atl__op_json_num(j, "tStep", &tstep))
    return asprintf(err,
                    "%s: \"pieces\"[%d] needs numbers \"tMin\", \"tMax\" and "
                    "\"tStep\"",
                    o->cls->type, k),
           -EINVAL;
  if (!(tstep > 0))
    return asprintf(err, "%s: \"pieces\"[%d].tStep must be positive",
                    o->cls->type, k),
           -EINVAL;
  if (!(tmin < tmax))
    return asprintf(err, "%s: \"pieces\"[%d]: tMin must be less than tMax",
                    o->cls->type, k),
           -EINVAL;
  if ((tmax - tmin) / tstep > 1e7)
    return asprintf(err,
                    "%s: \"pieces\"[%d]: more than 10^7 steps; raise tStep",
                    o->cls->type, k),
           -EINVAL;
  atl_op_expr_t *ex = NULL, *ey = NULL;
  char what[2][64];
  snprintf(what[0], sizeof(what[0]), "pieces[%d].eqnX", k);
  snprintf(what[1], sizeof(what[1]), "pieces[%d].eqnY", k);
  int rc = atl__op_eqn_compile(o, what[0], atl__op_json_str(j, "eqnX"), tvar, 1,
                               &ex, err);
  if (rc == 0)
    rc = atl__op_eqn_compile(o, what[1], atl__op_json_str(j, "eqnY"), tvar, 1,
                             &ey, err);
  /* Where the piece starts, for the outline. */
  if (rc == 0) {
    int *ps =
        realloc(pc->pl.piece_start, (size_t)(pc->pl.npieces + 1) * sizeof(*ps));
    if (ps) {
      pc->pl.piece_start = ps;
      ps[pc->pl.npieces++] = pc->pl.nv;
    } else {
      rc = -ENOMEM;
    }
  }
  /* tMin, then tMin + tStep, ... while below tMax (the steps accumulate as
   * upstream adds them), then tMax. */
  if (rc == 0)
    rc = sample(o, pc, k, ex, ey, tmin, err);
  for (double t = tmin + tstep; rc == 0 && t < tmax; t += tstep)
    rc = sample(o, pc, k, ex, ey, t, err);
  if (rc == 0)
    rc = sample(o, pc, k, ex, ey, tmax, err);
  atl__op_expr_free(ex);
  atl__op_expr_free(ey);
  return rc;
}

int atl__op_param_init(atl_op_obj *o, atl_op_param_curve *pc, atl_op_scene *s,
                       char **err) {
  int rc = atl__op_curve_type(o, pc->curve_type, &pc->smooth, err);
  if (rc != 0)
    return rc;
  pc->smooth = pc->smooth == ATL_OP_CURVE_SMOOTH;
  if (!json_object_is_type(pc->pieces, json_type_array))
    return asprintf(err,
                    "%s: \"pieces\" must be an array of {eqnX, eqnY, tMin, "
                    "tMax, tStep}",
                    o->cls->type),
           -EINVAL;
  size_t n = json_object_array_length(pc->pieces);
  for (size_t k = 0; k < n && rc == 0; k++)
    rc = piece_init(o, pc, (int)k, json_object_array_get_idx(pc->pieces, k),
                    err);
  if (rc == 0)
    rc = atl__op_poly_finish(&pc->pl, 0, o, s->length_scale);
  return rc;
}

void atl__op_param_validate(atl_op_obj *o, const atl_op_param_curve *pc) {
  const atl_op_pt *v = pc->pl.v;
  int n = pc->pl.nv;
  const char *w = NULL;
  if (n < 2 || !(fabs(v[0].x - v[n - 1].x) < 1e-10) ||
      !(fabs(v[0].y - v[n - 1].y) < 1e-10)) {
    w = "the curve is not closed, so inside and outside are not defined";
  } else {
    double area = 0;
    for (int i = 0; i + 1 < n; i++)
      area += (v[i].x - v[i + 1].x) * (v[i].y + v[i + 1].y);
    if (!(n >= 3 && area > 0))
      w = "the curve is not positively oriented (clockwise on screen), so "
          "rays refract the wrong way";
  }
  if (w && !o->warning)
    o->warning = strdup(w);
}

int atl__op_param_outline(const atl_op_param_curve *pc, int closed,
                          atl_op_outline *out) {
  const atl_op_poly *pl = &pc->pl;
  if (pl->nv < 2)
    return 0;
  int rc =
      atl__op_outline_pieces(out, pl->v, pl->nv, pl->piece_start, pl->npieces);
  if (rc == 0 && closed)
    atl__op_outline_close(out);
  return rc;
}

/* The normal of segment a-b against the ray's direction (rx, ry), from
 * the segment's unit tangent (upstream's "basic normal"). */
static void seg_normal(double rx, double ry, double tnx, double tny, double *nx,
                       double *ny) {
  double rdots = rx * tnx + ry * tny;
  *nx = rdots * tnx - rx;
  *ny = rdots * tny - ry;
}

/* The hit of the ray on segment i of the curve, with upstream's smoothing
 * of the normal towards the neighbouring segment's: linearly from the
 * segment's middle to its end, where the two normals are averaged, unless
 * the two segments' lengths differ tenfold (a corner between pieces). */
static int seg_hit(const atl_op_param_curve *pc, const atl_op_ray *r, int i,
                   atl_op_curve_hit *h) {
  const atl_op_poly *pl = &pc->pl;
  atl_op_pt p1 = pl->v[i], p2 = pl->v[i + 1];
  atl_op_pt rp = atl__op_lines_x(r->p1, r->p2, p1, p2);
  if (!(atl__op_on_segment(rp, p1, p2) && atl__op_on_ray(rp, r->p1, r->p2) &&
        atl__op_dist2(r->p1, rp) > 1e-10))
    return 0;
  double seg_len = sqrt(atl__op_dist2(p1, p2));
  double ratio = seg_len > 1e-10 ? sqrt(atl__op_dist2(p1, rp)) / seg_len : 0;
  h->p = rp;
  h->pos = pl->t[i] + (pl->t[i + 1] - pl->t[i]) * ratio;
  h->seg = i;
  double tx = p2.x - p1.x, ty = p2.y - p1.y;
  double tl = sqrt(tx * tx + ty * ty);
  if (!(tl > 1e-10)) {
    h->type = NAN;
    h->normal = atl__op_pt(NAN, NAN);
    return 1;
  }
  double tnx = tx / tl, tny = ty / tl;
  double rx = r->p2.x - r->p1.x, ry = r->p2.y - r->p1.y;
  double cross = rx * tny - ry * tnx;
  h->type = cross > 1e-10 ? 1 : cross < -1e-10 ? -1 : NAN;
  double nx, ny;
  seg_normal(rx, ry, tnx, tny, &nx, &ny);
  double frac = fabs(tx) > fabs(ty) ? (rp.x - p1.x) / tx : (rp.y - p1.y) / ty;
  double fx = nx, fy = ny;
  int a = -1;
  if (pc->smooth && frac < 0.5 && i > 0)
    a = i - 1;
  else if (pc->smooth && frac >= 0.5 && i < pl->nv - 2)
    a = i + 1;
  if (a >= 0) {
    double ax = pl->v[a + 1].x - pl->v[a].x, ay = pl->v[a + 1].y - pl->v[a].y;
    double al = sqrt(ax * ax + ay * ay);
    if (al / tl < 10 && tl / al < 10) {
      double nax, nay;
      seg_normal(rx, ry, ax / al, ay / al, &nax, &nay);
      if (frac < 0.5) {
        fx = nx * (0.5 + frac) + nax * (0.5 - frac);
        fy = ny * (0.5 + frac) + nay * (0.5 - frac);
      } else {
        fx = nax * (frac - 0.5) + nx * (1.5 - frac);
        fy = nay * (frac - 0.5) + ny * (1.5 - frac);
      }
    }
  }
  double nl = sqrt(fx * fx + fy * fy);
  h->normal = atl__op_pt(fx / nl, fy / nl);
  return 1;
}

int atl__op_param_hits(const atl_op_param_curve *pc, const atl_op_ray *r,
                       atl_op_curve_hit **hits, int *cap) {
  const atl_op_poly *pl = &pc->pl;
  atl_op_boxray br = atl__op_boxray(r);
  int n = 0;
  for (int k = 0; k < pl->nrun; k++) {
    if (!atl__op_poly_run_meets(pl, k, &br))
      continue;
    for (int i = k * ATL_OP_RUN; i < atl__op_poly_run_end(pl, k); i++) {
      if (n == *cap) {
        int c = *cap ? *cap * 2 : 16;
        atl_op_curve_hit *h = realloc(*hits, sizeof(*h) * (size_t)c);
        if (!h)
          return -1;
        *hits = h;
        *cap = c;
      }
      n += seg_hit(pc, r, i, &(*hits)[n]);
    }
  }
  return n;
}
