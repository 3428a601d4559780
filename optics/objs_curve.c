/* CurveGlass: a glass bounded by a closed chain of cubic Bezier curves.
 * Upstream intersects rays with its curves through the bezier-js library
 * (rotate the curve so that the ray is the x axis, then solve the cubic
 * for y = 0 with Cardano's formulas); this file does the same maths, so
 * the hits agree to rounding. Inside or outside is the parity of the
 * crossings ahead of the ray. */
#include "atl-build.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "geom.h"
#include "glass.h"
#include "outline.h"

#define PI 3.14159265358979323846
/* bezier-js's tolerance for "approximately equal". */
#define BZ_EPS 0.000001

/* The curve type is shared with CurveGrinGlass (glass.h). */
typedef atl_op_bezier bezier;

typedef struct {
  atl_op_glass g;
  json_object *points_json;
  int not_done;
  bezier *curves;
  int n;
  /* How far past p2 a ray is extended to be sure it crosses the whole
   * shape: upstream's sum over the curves of the larger bounding-box
   * maximum, a length that only grows with the coordinates. */
  double mod_len;
} curve_glass;

/* The point at t of a Bezier curve of order 2 or 3 (bezier-js compute). */
static atl_op_pt bz_point(const atl_op_pt *p, int order, double t) {
  if (t == 0)
    return p[0];
  if (t == 1)
    return p[order];
  double mt = 1 - t, mt2 = mt * mt, t2 = t * t;
  if (order == 2) {
    double a = mt2, b = mt * t * 2, c = t2;
    return atl__op_pt(a * p[0].x + b * p[1].x + c * p[2].x,
                      a * p[0].y + b * p[1].y + c * p[2].y);
  }
  double a = mt2 * mt, b = mt2 * t * 3, c = mt * t2 * 3, d = t * t2;
  return atl__op_pt(a * p[0].x + b * p[1].x + c * p[2].x + d * p[3].x,
                    a * p[0].y + b * p[1].y + c * p[2].y + d * p[3].y);
}

static double crt(double v) {
  return v < 0 ? -pow(-v, 1.0 / 3) : pow(v, 1.0 / 3);
}

static int in_unit(double t) {
  return 0 <= t && t <= 1;
}

/* Keeps the roots in [0, 1]: appends them to out, returns the count. */
static int keep(const double *r, int n, double *out) {
  int k = 0;
  for (int i = 0; i < n; i++)
    if (in_unit(r[i]))
      out[k++] = r[i];
  return k;
}

/* The parameters where the curve crosses the line through a and b. */
static int bz_roots(const bezier *c, atl_op_pt a, atl_op_pt b, double *out) {
  double ang = -atan2(b.y - a.y, b.x - a.x), y[4];
  for (int i = 0; i < 4; i++)
    y[i] = (c->p[i].x - a.x) * sin(ang) + (c->p[i].y - a.y) * cos(ang);
  double pa = y[0], pb = y[1], pc = y[2], pd = y[3];
  double d = -pa + 3 * pb - 3 * pc + pd, qa = 3 * pa - 6 * pb + 3 * pc,
         qb = -3 * pa + 3 * pb, qc = pa;
  if (fabs(d) <= BZ_EPS) {
    /* Not a cubic: quadratic, linear, or no crossing at all. */
    if (fabs(qa) <= BZ_EPS) {
      if (fabs(qb) <= BZ_EPS)
        return 0;
      double r = -qc / qb;
      return keep(&r, 1, out);
    }
    double q = sqrt(qb * qb - 4 * qa * qc), a2 = 2 * qa;
    double r[2] = {(q - qb) / a2, (-qb - q) / a2};
    return keep(r, 2, out);
  }
  qa /= d, qb /= d, qc /= d;
  double p = (3 * qb - qa * qa) / 3, p3 = p / 3;
  double q = (2 * qa * qa * qa - 9 * qa * qb + 27 * qc) / 27, q2 = q / 2;
  double disc = q2 * q2 + p3 * p3 * p3;
  if (disc < 0) {
    double mp3 = -p / 3, r = sqrt(mp3 * mp3 * mp3), t = -q / (2 * r);
    double phi = acos(t < -1 ? -1 : t > 1 ? 1 : t), t1 = 2 * crt(r);
    double x[3] = {t1 * cos(phi / 3) - qa / 3,
                   t1 * cos((phi + 2 * PI) / 3) - qa / 3,
                   t1 * cos((phi + 2 * 2 * PI) / 3) - qa / 3};
    return keep(x, 3, out);
  }
  if (disc == 0) {
    double u1 = q2 < 0 ? crt(-q2) : -crt(q2);
    double x[2] = {2 * u1 - qa / 3, -u1 - qa / 3};
    return keep(x, 2, out);
  }
  double sd = sqrt(disc);
  double x = crt(-q2 + sd) - crt(q2 + sd) - qa / 3;
  return keep(&x, 1, out);
}

static int between(double v, double lo, double hi) {
  return (lo <= v && v <= hi) || fabs(v - lo) <= BZ_EPS ||
         fabs(v - hi) <= BZ_EPS;
}

/* bezier-js lineIntersects: the crossings within the segment a-b. */
static int bz_line(const bezier *c, atl_op_pt a, atl_op_pt b, double *out) {
  double r[3];
  int n = bz_roots(c, a, b, r), k = 0;
  for (int i = 0; i < n; i++) {
    atl_op_pt p = bz_point(c->p, 3, r[i]);
    if (between(p.x, fmin(a.x, b.x), fmax(a.x, b.x)) &&
        between(p.y, fmin(a.y, b.y), fmax(a.y, b.y)))
      out[k++] = r[i];
  }
  return k;
}

/* Where a quadratic (3 values) or linear (2 values) polynomial in
 * Bernstein form has zero derivative (bezier-js droots). */
static int droots(const double *p, int n, double *out) {
  if (n == 3) {
    double a = p[0], b = p[1], c = p[2], d = a - 2 * b + c;
    if (d != 0) {
      double m1 = -sqrt(b * b - a * c), m2 = -a + b;
      out[0] = -(m1 + m2) / d;
      out[1] = -(-m1 + m2) / d;
      return 2;
    }
    if (b != c) {
      out[0] = (2 * b - c) / (2 * (b - c));
      return 1;
    }
    return 0;
  }
  if (p[0] != p[1]) {
    out[0] = p[0] / (p[0] - p[1]);
    return 1;
  }
  return 0;
}

/* The smallest and largest coordinate (dim 0: x, 1: y) over the curve:
 * at an end or where the derivative or the second derivative vanishes. */
void atl__op_bezier_bounds(const bezier *c, int dim, double *lo, double *hi) {
  double v1[3], v2[2], t[5];
  for (int i = 0; i < 3; i++)
    v1[i] = dim ? c->d[i].y : c->d[i].x;
  for (int i = 0; i < 2; i++)
    v2[i] = 2 * (v1[i + 1] - v1[i]);
  int n = droots(v1, 3, t);
  n += droots(v2, 2, t + n);
  double best = -INFINITY, least = INFINITY;
  for (int i = -2; i < n; i++) {
    double u = i == -2 ? 0 : i == -1 ? 1 : t[i];
    if (!in_unit(u))
      continue;
    atl_op_pt p = bz_point(c->p, 3, u);
    best = fmax(best, dim ? p.y : p.x);
    least = fmin(least, dim ? p.y : p.x);
  }
  *lo = least;
  *hi = best;
}

static double bz_max(const bezier *c, int dim) {
  double lo, hi;
  atl__op_bezier_bounds(c, dim, &lo, &hi);
  return hi;
}

void atl__op_bezier_make(bezier *c) {
  for (int k = 0; k < 3; k++)
    c->d[k] = atl__op_pt(3 * (c->p[k + 1].x - c->p[k].x),
                         3 * (c->p[k + 1].y - c->p[k].y));
  c->xmax = bz_max(c, 0);
  c->ymax = bz_max(c, 1);
}

atl_op_pt atl__op_bezier_at(const atl_op_pt *p, int order, double t) {
  return bz_point(p, order, t);
}

int atl__op_bezier_line(const bezier *c, atl_op_pt a, atl_op_pt b,
                        double *out) {
  return bz_line(c, a, b, out);
}

/* Upstream's countIntersections(p3, p4): the crossings of the curves
 * with the ray from p3 through p4, extended by mod_len, less those
 * within the minimal segment of p3. Upstream removes those from a list
 * it is walking, which skips the element after each removal; that is
 * kept, as it decides parities. The nearest crossing goes to *ci, *ct. */
static int curve_crossings(const curve_glass *cg, atl_op_sim *sim, atl_op_pt p3,
                           atl_op_pt p4, int *ci, double *ct) {
  double min_sq = atl__op_min_sq(sim), best = INFINITY;
  atl_op_pt end = atl__op_pt(p4.x + (p4.x - p3.x) * cg->mod_len,
                             p4.y + (p4.y - p3.y) * cg->mod_len);
  int count = 0;
  *ci = -1;
  for (int i = 0; i < cg->n; i++) {
    double t[3];
    int n = bz_line(&cg->curves[i], p3, end, t);
    for (int j = 0; j < n; j++) {
      if (atl__op_dist2(p3, bz_point(cg->curves[i].p, 3, t[j])) < min_sq) {
        memmove(t + j, t + j + 1, sizeof(*t) * (size_t)(n - j - 1));
        n--;
      }
    }
    count += n;
    for (int j = 0; j < n; j++) {
      double d = atl__op_dist2(p3, bz_point(cg->curves[i].p, 3, t[j]));
      if (d < best) {
        best = d;
        *ci = i;
        *ct = t[j];
      }
    }
  }
  return count;
}

static int curve_intersect(atl_op_obj *o, atl_op_sim *sim, const atl_op_ray *r,
                           atl_op_pt *hit) {
  curve_glass *cg = (curve_glass *)o;
  int i;
  double t;
  if (cg->not_done)
    return 0;
  curve_crossings(cg, sim, r->p1, r->p2, &i, &t);
  if (i < 0)
    return 0;
  *hit = bz_point(cg->curves[i].p, 3, t);
  return 1;
}

/* getIncidentData: the type by the crossings' parity, and the hit and
 * the curve's normal there, turned against the ray. NaN where the ray
 * does not meet the curves at all. */
static double curve_incident_data(curve_glass *cg, atl_op_sim *sim,
                                  const atl_op_ray *r, atl_op_pt *hit,
                                  atl_op_pt *normal) {
  int i;
  double t;
  int count = curve_crossings(cg, sim, r->p1, r->p2, &i, &t);
  if (i < 0)
    return NAN;
  const bezier *c = &cg->curves[i];
  *hit = bz_point(c->p, 3, t);
  atl_op_pt d = bz_point(c->d, 2, t);
  double q = sqrt(d.x * d.x + d.y * d.y);
  *normal = atl__op_pt(-d.y / q, d.x / q);
  if (normal->x * (r->p2.x - r->p1.x) + normal->y * (r->p2.y - r->p1.y) > 0)
    *normal = atl__op_pt(-normal->x, -normal->y);
  return count % 2 == 1 ? 1 : -1;
}

static double curve_incident_type(atl_op_obj *o, atl_op_sim *sim,
                                  const atl_op_ray *r) {
  atl_op_pt hit, normal;
  return curve_incident_data((curve_glass *)o, sim, r, &hit, &normal);
}

static atl_op_result curve_incident(atl_op_obj *o, atl_op_sim *sim,
                                    atl_op_ray *r, long ray_index,
                                    atl_op_pt hit, atl_op_obj *const *merging,
                                    int nmerging) {
  curve_glass *cg = (curve_glass *)o;
  atl_op_pt normal;
  double type = curve_incident_data(cg, sim, r, &hit, &normal);
  return atl__op_glass_incident(&cg->g, sim, r, ray_index, hit, normal, type,
                                merging, nmerging);
}

static const atl_op_field curve_glass_fields[] = {
    {"points", ATL_OP_F_JSON, "[]", offsetof(curve_glass, points_json)},
    {"notDone", ATL_OP_F_BOOL, "false", offsetof(curve_glass, not_done)},
    ATL_OP_GLASS_FIELDS(curve_glass),
    {NULL, 0, NULL, 0},
};

static int point_of(json_object *o, const char *key, atl_op_pt *out) {
  json_object *p, *x, *y;
  if (!json_object_object_get_ex(o, key, &p) ||
      !json_object_is_type(p, json_type_object) ||
      !json_object_object_get_ex(p, "x", &x) ||
      !json_object_object_get_ex(p, "y", &y) ||
      !(json_object_is_type(x, json_type_double) ||
        json_object_is_type(x, json_type_int)) ||
      !(json_object_is_type(y, json_type_double) ||
        json_object_is_type(y, json_type_int)))
    return 0;
  *out = atl__op_pt(json_object_get_double(x), json_object_get_double(y));
  return isfinite(out->x) && isfinite(out->y);
}

int atl__op_bezier_read(json_object *j, int i, int n, bezier *c) {
  json_object *e = json_object_array_get_idx(j, (size_t)i);
  json_object *e2 = json_object_array_get_idx(j, (size_t)((i + 1) % n));
  if (!point_of(e, "a1", &c->p[0]) || !point_of(e, "c1", &c->p[1]) ||
      !point_of(e, "c2", &c->p[2]))
    return i;
  if (!point_of(e2, "a1", &c->p[3]))
    return (i + 1) % n;
  atl__op_bezier_make(c);
  return -1;
}

static int curve_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  (void)s;
  curve_glass *cg = (curve_glass *)o;
  int rc = atl__op_glass_check(&cg->g, err);
  if (rc != 0)
    return rc;
  json_object *j = cg->points_json;
  int n = json_object_is_type(j, json_type_array)
              ? (int)json_object_array_length(j)
              : -1;
  if (n < 1 && !cg->not_done)
    return asprintf(err, "CurveGlass: \"points\" must be a non-empty array "
                         "of {\"a1\", \"c1\", \"c2\"} (an anchor and the two "
                         "control points to the next anchor)"),
           -EINVAL;
  cg->curves = calloc((size_t)(n > 0 ? n : 1), sizeof(*cg->curves));
  if (!cg->curves)
    return -ENOMEM;
  for (int i = 0; i < n; i++) {
    bezier *c = &cg->curves[i];
    int bad = atl__op_bezier_read(j, i, n, c);
    if (bad >= 0)
      return asprintf(err,
                      "CurveGlass: \"points\"[%d] must have points "
                      "\"a1\", \"c1\" and \"c2\", each {\"x\": number, "
                      "\"y\": number}",
                      bad),
             -EINVAL;
    /* A Bezier curve lies in the hull of its control points. */
    for (int k = 0; k < 4; k++)
      atl__op_box_add(o, c->p[k], 0);
    cg->mod_len +=
        fabs(c->xmax) > fabs(c->ymax) ? fabs(c->xmax) : fabs(c->ymax);
  }
  cg->n = n > 0 ? n : 0;
  return 0;
}

static void curve_destroy(atl_op_obj *o) {
  free(((curve_glass *)o)->curves);
}

int atl__op_bezier_outline(const atl_op_bezier *c, int n, atl_op_outline *out) {
  int rc = 0;
  for (int i = 0; i < n && rc == 0; i++)
    rc = atl__op_outline_bezier(out, c[i].p);
  if (rc == 0)
    atl__op_outline_close(out);
  return rc;
}

static int curve_outline(const atl_op_obj *o, atl_op_outline *out) {
  const curve_glass *cg = (const curve_glass *)o;
  return atl__op_bezier_outline(cg->curves, cg->n, out);
}

const atl_op_class atl__op_curve_glass = {
    .type = "CurveGlass",
    .flags = ATL_OP_OPTICAL | ATL_OP_GLASS | ATL_OP_MERGES_WITH_GLASS,
    .size = sizeof(curve_glass),
    .fields = curve_glass_fields,
    .init = curve_init,
    .intersect = curve_intersect,
    .incident = curve_incident,
    .incident_type = curve_incident_type,
    .ref_index = atl__op_glass_ref_index,
    .destroy = curve_destroy,
    .outline = curve_outline,
};
