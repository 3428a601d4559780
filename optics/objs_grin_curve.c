/* CurveGrinGlass: a gradient-index glass bounded by a closed chain of
 * cubic Bezier curves, on BaseGrinGlass (grin.h), with the Bezier maths
 * of objs_curve.c (bezier-js's, term for term).
 *
 * Upstream decides "on the boundary" by bezier-js's project(): the
 * nearest of 101 samples of the curve, refined by steps of 0.001 in t
 * around it (a few of which fall just outside [0, 1]); the point is on
 * the boundary when that distance squared is at most intersectTol. That
 * search is dear, and a ray inside the glass asks it several times a
 * step, so each curve also keeps boxes around ten pieces of it (the
 * control points of the piece, by blossoming, over a parameter range
 * that covers the refinement's overshoot): a point farther than the
 * tolerance from all of them cannot be on the curve, and the answer is
 * the same without the search. Likewise a segment whose box misses a
 * curve's hull cannot cross it. */
#include "atl-build.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "geom.h"
#include "grin.h"
#include "outline.h"

#define LUT_N 101 /* bezier-js getLUT(100): 101 samples */
#define PIECES 10

typedef struct {
  atl_op_grin gr;
  json_object *points_json;
  int not_done;
  atl_op_bezier *c;
  int n;
  double (*bb)[4];         /* bezier-js bbox: xmin, xmax, ymin, ymax */
  double (*hull)[4];       /* the control points' box, padded */
  double (*piece)[4];      /* PIECES boxes per curve, padded */
  atl_op_pt (*lut)[LUT_N]; /* the samples project() starts from */
  double min_x, mod_len;
} curve_grin;

/* The crossings countIntersections(p3, p4) finds: how many, and the
 * nearest one's curve, parameter and squared distance (curIntersections'
 * shortest). */
typedef struct {
  int count, i;
  double t, val;
} crossings;

static int box_far(const double b[4], atl_op_pt p, double r) {
  double dx = p.x < b[0] ? b[0] - p.x : p.x > b[1] ? p.x - b[1] : 0;
  double dy = p.y < b[2] ? b[2] - p.y : p.y > b[3] ? p.y - b[3] : 0;
  return dx * dx + dy * dy > r * r;
}

/* The segment a-b's box, grown by bezier-js's 1e-6 slack, misses box b. */
static int seg_misses(const double b[4], atl_op_pt a, atl_op_pt c) {
  double pad = 2e-6;
  return fmax(a.x, c.x) + pad < b[0] || fmin(a.x, c.x) - pad > b[1] ||
         fmax(a.y, c.y) + pad < b[2] || fmin(a.y, c.y) - pad > b[3];
}

/* project(p).d for curve i, as bezier-js computes it. */
static double project_d(const curve_grin *cg, int i, atl_op_pt p) {
  const atl_op_pt *lut = cg->lut[i];
  double mdist = 9223372036854775808.0; /* 2^63 */
  int mpos = 0;
  for (int k = 0; k < LUT_N; k++) {
    double d = sqrt(atl__op_dist2(p, lut[k]));
    if (d < mdist) {
      mdist = d;
      mpos = k;
    }
  }
  double l = LUT_N - 1, t2 = (mpos + 1) / l, step = 0.1 / l;
  mdist += 1;
  for (double t = (mpos - 1) / l; t < t2 + step; t += step) {
    double d = sqrt(atl__op_dist2(p, atl__op_bezier_at(cg->c[i].p, 3, t)));
    if (d < mdist)
      mdist = d;
  }
  return mdist;
}

static int curve_on_boundary(const atl_op_grin *g, atl_op_pt p) {
  const curve_grin *cg = (const curve_grin *)g;
  double reach = sqrt(g->intersect_tol) * (1 + 1e-12) + 1e-12;
  for (int i = 0; i < cg->n; i++) {
    const double *b = cg->bb[i];
    if (!((p.x <= b[1] && p.x >= b[0]) || (p.y <= b[3] && p.y >= b[2])))
      continue;
    if (reach == reach && box_far(cg->hull[i], p, reach))
      continue;
    int near = reach != reach;
    for (int k = 0; k < PIECES && !near; k++)
      near = !box_far(cg->piece[i * PIECES + k], p, reach);
    if (!near)
      continue;
    double d = project_d(cg, i, p);
    if (d * d <= g->intersect_tol)
      return 1;
  }
  return 0;
}

/* countIntersections(p3): the crossings of the segment from p3 to a point
 * left of every curve. */
static int count_from(const curve_grin *cg, atl_op_pt p3) {
  atl_op_pt out = atl__op_pt(cg->min_x - 1.23456789, p3.y + 1.23456789);
  int cnt = 0;
  for (int i = 0; i < cg->n; i++) {
    double t[3];
    if (!seg_misses(cg->hull[i], p3, out))
      cnt += atl__op_bezier_line(&cg->c[i], p3, out, t);
  }
  return cnt;
}

/* countIntersections(p3, p4): the crossings of the ray from p3 through
 * p4, extended by mod_len, less those within the minimal segment of p3
 * (removed from a list being walked, which skips the next one, as
 * upstream), with the nearest. */
static crossings count_ray(const curve_grin *cg, atl_op_sim *sim, atl_op_pt p3,
                           atl_op_pt p4) {
  double min_sq = atl__op_min_sq(sim);
  crossings x = {0, -1, 0, INFINITY};
  atl_op_pt end = atl__op_pt(p4.x + (p4.x - p3.x) * cg->mod_len,
                             p4.y + (p4.y - p3.y) * cg->mod_len);
  for (int i = 0; i < cg->n; i++) {
    double t[3];
    if (seg_misses(cg->hull[i], p3, end))
      continue;
    int n = atl__op_bezier_line(&cg->c[i], p3, end, t);
    for (int j = 0; j < n; j++) {
      if (atl__op_dist2(p3, atl__op_bezier_at(cg->c[i].p, 3, t[j])) < min_sq) {
        memmove(t + j, t + j + 1, sizeof(*t) * (size_t)(n - j - 1));
        n--;
      }
    }
    x.count += n;
    for (int j = 0; j < n; j++) {
      double d = atl__op_dist2(p3, atl__op_bezier_at(cg->c[i].p, 3, t[j]));
      if (d < x.val) {
        x.val = d;
        x.i = i;
        x.t = t[j];
      }
    }
  }
  return x;
}

static int curve_inside(const atl_op_grin *g, atl_op_pt p) {
  return !curve_on_boundary(g, p) && count_from((const curve_grin *)g, p) % 2;
}

static int curve_outside(const atl_op_grin *g, atl_op_pt p) {
  return !curve_on_boundary(g, p) &&
         count_from((const curve_grin *)g, p) % 2 == 0;
}

static const atl_op_grin_shape curve_shape = {curve_inside, curve_outside,
                                              curve_on_boundary};

static int curve_intersect(atl_op_obj *o, atl_op_sim *sim, const atl_op_ray *r,
                           atl_op_pt *hit) {
  curve_grin *cg = (curve_grin *)o;
  if (cg->not_done)
    return 0;
  if (atl__op_grin_step_hit(&cg->gr, r, hit))
    return 1;
  crossings x = count_ray(cg, sim, r->p1, r->p2);
  if (x.i < 0)
    return 0;
  *hit = atl__op_bezier_at(cg->c[x.i].p, 3, x.t);
  return 1;
}

/* getIncidentData: 1 leaving or -1 entering by the parity of the ray's
 * crossings; 0 without any; 2 (undefined) when the ray starts inside and
 * its second point is inside before the first crossing; the hit and the
 * curve's normal turned against the ray. */
static double curve_incident_data(curve_grin *cg, atl_op_sim *sim,
                                  const atl_op_ray *r, atl_op_pt *s_point,
                                  atl_op_pt *normal) {
  crossings x = count_ray(cg, sim, r->p1, r->p2);
  double type = x.count % 2 == 1 ? 1 : -1;
  *normal = atl__op_pt(NAN, NAN);
  if (x.i < 0)
    return 0;
  const atl_op_bezier *c = &cg->c[x.i];
  *s_point = atl__op_bezier_at(c->p, 3, x.t);
  double len = sqrt(atl__op_dist2(r->p1, r->p2));
  if (type == 1 && len * len < x.val && curve_inside(&cg->gr, r->p2))
    return 2;
  atl_op_pt d = atl__op_bezier_at(c->d, 2, x.t);
  double q = sqrt(d.x * d.x + d.y * d.y);
  *normal = atl__op_pt(-d.y / q, d.x / q);
  if (normal->x * (r->p2.x - r->p1.x) + normal->y * (r->p2.y - r->p1.y) > 0)
    *normal = atl__op_pt(-normal->x, -normal->y);
  return type;
}

static double curve_incident_type(atl_op_obj *o, atl_op_sim *sim,
                                  const atl_op_ray *r) {
  atl_op_pt s, n;
  return curve_incident_data((curve_grin *)o, sim, r, &s, &n);
}

static atl_op_result curve_incident(atl_op_obj *o, atl_op_sim *sim,
                                    atl_op_ray *r, long ray_index,
                                    atl_op_pt hit, atl_op_obj *const *merging,
                                    int nmerging) {
  curve_grin *cg = (curve_grin *)o;
  atl_op_grin *g = &cg->gr;
  atl_op_result res = {0};
  atl_op_pt s, normal;
  double type = curve_incident_data(cg, sim, r, &s, &normal);
  if ((curve_inside(g, r->p1) || curve_outside(g, r->p1)) &&
      curve_on_boundary(g, hit)) {
    if (type == 0) /* no crossing: upstream refracts at no point, and throws */
      return atl__op_grin_absorb_after_merging(g, sim, r, merging, nmerging);
    if (type != 1 && type != -1)
      return atl__op_glass_undefined();
    return atl__op_grin_boundary(g, sim, r, ray_index, s, s, normal, type,
                                 merging, nmerging);
  }
  atl__op_grin_advance(g, sim, r, hit);
  return res;
}

static const atl_op_field curve_grin_fields[] = {
    {"points", ATL_OP_F_JSON, "[]", offsetof(curve_grin, points_json)},
    {"notDone", ATL_OP_F_BOOL, "false", offsetof(curve_grin, not_done)},
    ATL_OP_GRIN_FIELDS(curve_grin, ATL_OP_GRIN_DEF_WAVE, "0.05"),
    {NULL, 0, NULL, 0},
};

/* The blossom f(u, v, w) of the cubic with control points p: its
 * control points over [a, b] are f(a,a,a), f(a,a,b), f(a,b,b), f(b,b,b). */
static atl_op_pt blossom(const atl_op_pt *p, double u, double v, double w) {
  atl_op_pt q[3], s[2];
  for (int k = 0; k < 3; k++)
    q[k] = atl__op_pt(p[k].x + u * (p[k + 1].x - p[k].x),
                      p[k].y + u * (p[k + 1].y - p[k].y));
  for (int k = 0; k < 2; k++)
    s[k] = atl__op_pt(q[k].x + v * (q[k + 1].x - q[k].x),
                      q[k].y + v * (q[k + 1].y - q[k].y));
  return atl__op_pt(s[0].x + w * (s[1].x - s[0].x),
                    s[0].y + w * (s[1].y - s[0].y));
}

static void box_of(double b[4], const atl_op_pt *p, int n, double pad) {
  b[0] = b[2] = INFINITY;
  b[1] = b[3] = -INFINITY;
  for (int k = 0; k < n; k++) {
    b[0] = fmin(b[0], p[k].x), b[1] = fmax(b[1], p[k].x);
    b[2] = fmin(b[2], p[k].y), b[3] = fmax(b[3], p[k].y);
  }
  b[0] -= pad, b[1] += pad, b[2] -= pad, b[3] += pad;
}

/* The search structures of curve i: samples, hull and piece boxes. The
 * pieces cover t in [-0.02, 1.02], past the refinement's overshoot of at
 * most 0.011, and every box is padded for the roundings of compute(). */
static void curve_prepare(curve_grin *cg, int i) {
  const atl_op_bezier *c = &cg->c[i];
  double m = 0;
  for (int k = 0; k < 4; k++)
    m = fmax(m, fmax(fabs(c->p[k].x), fabs(c->p[k].y)));
  double pad = 1e-9 * (m + 1);
  for (int k = 0; k < LUT_N; k++)
    cg->lut[i][k] = atl__op_bezier_at(c->p, 3, k / (double)(LUT_N - 1));
  box_of(cg->hull[i], c->p, 4, pad);
  for (int k = 0; k < PIECES; k++) {
    double a = k == 0 ? -0.02 : k / (double)PIECES;
    double b = k == PIECES - 1 ? 1.02 : (k + 1) / (double)PIECES;
    atl_op_pt q[4] = {blossom(c->p, a, a, a), blossom(c->p, a, a, b),
                      blossom(c->p, a, b, b), blossom(c->p, b, b, b)};
    box_of(cg->piece[i * PIECES + k], q, 4, pad);
  }
  /* The hull box also takes in the overshoot. */
  for (int k = 0; k < PIECES; k += PIECES - 1) {
    const double *pb = cg->piece[i * PIECES + k];
    cg->hull[i][0] = fmin(cg->hull[i][0], pb[0]);
    cg->hull[i][1] = fmax(cg->hull[i][1], pb[1]);
    cg->hull[i][2] = fmin(cg->hull[i][2], pb[2]);
    cg->hull[i][3] = fmax(cg->hull[i][3], pb[3]);
  }
}

static int curve_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  (void)s;
  curve_grin *cg = (curve_grin *)o;
  json_object *j = cg->points_json;
  int n = json_object_is_type(j, json_type_array)
              ? (int)json_object_array_length(j)
              : -1;
  if (n < 1 && !cg->not_done)
    return asprintf(err, "CurveGrinGlass: \"points\" must be a non-empty "
                         "array of {\"a1\", \"c1\", \"c2\"} (an anchor and "
                         "the two control points to the next anchor)"),
           -EINVAL;
  size_t m = (size_t)(n > 0 ? n : 1);
  cg->c = calloc(m, sizeof(*cg->c));
  cg->bb = calloc(m, sizeof(*cg->bb));
  cg->hull = calloc(m, sizeof(*cg->hull));
  cg->piece = calloc(m * PIECES, sizeof(*cg->piece));
  cg->lut = calloc(m, sizeof(*cg->lut));
  if (!cg->c || !cg->bb || !cg->hull || !cg->piece || !cg->lut)
    return -ENOMEM;
  cg->min_x = INFINITY;
  for (int i = 0; i < n; i++) {
    atl_op_bezier *c = &cg->c[i];
    int bad = atl__op_bezier_read(j, i, n, c);
    if (bad >= 0)
      return asprintf(err,
                      "CurveGrinGlass: \"points\"[%d] must have points "
                      "\"a1\", \"c1\" and \"c2\", each {\"x\": number, "
                      "\"y\": number}",
                      bad),
             -EINVAL;
    atl__op_bezier_bounds(c, 0, &cg->bb[i][0], &cg->bb[i][1]);
    atl__op_bezier_bounds(c, 1, &cg->bb[i][2], &cg->bb[i][3]);
    cg->min_x = fmin(cg->min_x, cg->bb[i][0]);
    cg->mod_len +=
        fabs(c->xmax) > fabs(c->ymax) ? fabs(c->xmax) : fabs(c->ymax);
    curve_prepare(cg, i);
    for (int k = 0; k < 4; k++)
      atl__op_box_add(o, c->p[k], 0);
  }
  cg->n = n > 0 ? n : 0;
  return atl__op_grin_init(&cg->gr, &curve_shape, err);
}

static void curve_destroy(atl_op_obj *o) {
  curve_grin *cg = (curve_grin *)o;
  atl__op_grin_destroy(&cg->gr);
  free(cg->c);
  free(cg->bb);
  free(cg->hull);
  free(cg->piece);
  free(cg->lut);
}

static int curve_outline(const atl_op_obj *o, atl_op_outline *out) {
  const curve_grin *cg = (const curve_grin *)o;
  return atl__op_bezier_outline(cg->c, cg->n, out);
}

const atl_op_class atl__op_curve_grin_glass = {
    .type = "CurveGrinGlass",
    .flags =
        ATL_OP_OPTICAL | ATL_OP_GLASS | ATL_OP_MERGES_WITH_GLASS | ATL_OP_GRIN,
    .size = sizeof(curve_grin),
    .fields = curve_grin_fields,
    .init = curve_init,
    .intersect = curve_intersect,
    .incident = curve_incident,
    .incident_type = curve_incident_type,
    .ref_index = atl__op_grin_ref_index,
    .enter = atl__op_grin_enter,
    .exit = atl__op_grin_exit,
    .destroy = curve_destroy,
    .outline = curve_outline,
};
