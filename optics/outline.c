/* Outlines: the dispatch to the classes' outline hooks and the edge
 * builders they share. An arc is kept exactly (centre, radius, start
 * angle and signed sweep), so that the plugin can measure and test it
 * without chords; curves are the polylines the classes' hit tests use,
 * or, for Bezier curves (which the hit tests solve exactly), a polyline
 * fine enough to stand for the curve. */
#include "atl-build.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "glass.h"
#include "outline.h"

#define TWO_PI 6.28318530717958647692

int atl__op_outline(const atl_op_obj *o, atl_op_outline *out) {
  if (!o->cls->outline)
    return 0;
  int rc = o->cls->outline(o, out);
  if (rc < 0)
    atl__op_outline_free(out);
  return rc;
}

void atl__op_outline_free(atl_op_outline *out) {
  for (int i = 0; i < out->n; i++)
    free(out->edges[i].pts);
  free(out->edges);
  memset(out, 0, sizeof(*out));
}

int atl__op_outline_add(atl_op_outline *out, const atl_op_edge *e) {
  if (out->n == out->cap) {
    int cap = out->cap ? out->cap * 2 : 4;
    atl_op_edge *ed = realloc(out->edges, (size_t)cap * sizeof(*ed));
    if (!ed) {
      free(e->pts); /* the outline took it, so it frees it */
      return -ENOMEM;
    }
    out->edges = ed;
    out->cap = cap;
  }
  out->edges[out->n++] = *e;
  return 0;
}

atl_op_pt atl__op_edge_point(const atl_op_edge *e, double t) {
  /* The ends exactly, so that points computed from an edge chain. */
  if (t <= 0)
    return e->p1;
  if (t >= 1)
    return e->p2;
  switch (e->kind) {
  case ATL_OP_EDGE_ARC: {
    double a = e->a0 + t * e->da;
    return atl__op_pt(e->c.x + e->r * cos(a), e->c.y + e->r * sin(a));
  }
  case ATL_OP_EDGE_CURVE: {
    double s = t * (e->npts - 1);
    int i = (int)s;
    if (i >= e->npts - 1)
      return e->p2;
    double f = s - i;
    atl_op_pt a = e->pts[i], b = e->pts[i + 1];
    return atl__op_pt(a.x + f * (b.x - a.x), a.y + f * (b.y - a.y));
  }
  default:
    return atl__op_pt(e->p1.x + t * (e->p2.x - e->p1.x),
                      e->p1.y + t * (e->p2.y - e->p1.y));
  }
}

int atl__op_outline_line(atl_op_outline *out, atl_op_pt a, atl_op_pt b) {
  atl_op_edge e = {.kind = ATL_OP_EDGE_LINE, .p1 = a, .p2 = b};
  return atl__op_outline_add(out, &e);
}

/* The angle b - a folded into [0, 2 pi). */
static double ccw(double a, double b) {
  double d = fmod(b - a, TWO_PI);
  return d < 0 ? d + TWO_PI : d;
}

int atl__op_outline_arc3(atl_op_outline *out, atl_op_pt a, atl_op_pt mid,
                         atl_op_pt b) {
  atl_op_pt c = atl__op_arc_center(a, b, mid);
  if (!isfinite(c.x) || !isfinite(c.y) ||
      (a.x == b.x && a.y == b.y)) /* no arc to speak of */
    return atl__op_outline_line(out, a, b);
  atl_op_edge e = {.kind = ATL_OP_EDGE_ARC, .p1 = a, .p2 = b, .c = c};
  e.r = sqrt(atl__op_dist2(c, a));
  e.a0 = atan2(a.y - c.y, a.x - c.x);
  /* The counterclockwise sweep to b, if it passes mid; the clockwise one
   * otherwise. */
  double to_b = ccw(e.a0, atan2(b.y - c.y, b.x - c.x));
  double to_mid = ccw(e.a0, atan2(mid.y - c.y, mid.x - c.x));
  e.da = to_mid <= to_b ? to_b : to_b - TWO_PI;
  return atl__op_outline_add(out, &e);
}

int atl__op_outline_circle(atl_op_outline *out, atl_op_pt c, atl_op_pt p) {
  atl_op_edge e = {.kind = ATL_OP_EDGE_ARC, .p1 = p, .p2 = p, .c = c};
  e.r = sqrt(atl__op_dist2(c, p));
  e.a0 = atan2(p.y - c.y, p.x - c.x);
  e.da = TWO_PI;
  return atl__op_outline_add(out, &e);
}

int atl__op_outline_curve(atl_op_outline *out, const atl_op_pt *v, int n,
                          int start, int count) {
  if (n < 1 || count < 2)
    return 0;
  atl_op_edge e = {.kind = ATL_OP_EDGE_CURVE, .npts = count};
  e.pts = malloc((size_t)count * sizeof(*e.pts));
  if (!e.pts)
    return -ENOMEM;
  for (int k = 0; k < count; k++)
    e.pts[k] = v[(start + k) % n];
  e.p1 = e.pts[0];
  e.p2 = e.pts[count - 1];
  return atl__op_outline_add(out, &e);
}

int atl__op_outline_pieces(atl_op_outline *out, const atl_op_pt *v, int nv,
                           const int *starts, int nstarts) {
  if (nstarts < 1)
    return atl__op_outline_curve(out, v, nv, 0, nv);
  int rc = 0;
  for (int k = 0; k < nstarts && rc == 0; k++) {
    int a = starts[k], b = k + 1 < nstarts ? starts[k + 1] - 1 : nv - 1;
    rc = atl__op_outline_curve(out, v, nv, a, b - a + 1);
    if (rc == 0 && k + 1 < nstarts &&
        (v[b].x != v[b + 1].x || v[b].y != v[b + 1].y))
      rc = atl__op_outline_line(out, v[b], v[b + 1]);
  }
  return rc;
}

/* --- Bezier curves ------------------------------------------------------ */

#define BZ_MAX_DEPTH 14 /* at most 2^14 pieces per curve */

typedef struct {
  atl_op_pt *v;
  int n, cap;
  double eps_sq;
} bz_samples;

static double seg_dist2(atl_op_pt p, atl_op_pt a, atl_op_pt b) {
  double dx = b.x - a.x, dy = b.y - a.y, l2 = dx * dx + dy * dy;
  double t = l2 > 0 ? ((p.x - a.x) * dx + (p.y - a.y) * dy) / l2 : 0;
  t = t < 0 ? 0 : t > 1 ? 1 : t;
  return atl__op_dist2(p, atl__op_pt(a.x + t * dx, a.y + t * dy));
}

static atl_op_pt mid_of(atl_op_pt a, atl_op_pt b) {
  return atl__op_pt((a.x + b.x) * 0.5, (a.y + b.y) * 0.5);
}

/* Appends the end of the piece with control points p, splitting it in
 * halves (de Casteljau) while its control points stray from its chord by
 * more than the tolerance: the curve lies in their hull, so a flat
 * control polygon bounds the polyline's error. */
static int bz_flatten(bz_samples *s, const atl_op_pt p[4], int depth) {
  if (depth < BZ_MAX_DEPTH && (seg_dist2(p[1], p[0], p[3]) > s->eps_sq ||
                               seg_dist2(p[2], p[0], p[3]) > s->eps_sq)) {
    atl_op_pt a = mid_of(p[0], p[1]), b = mid_of(p[1], p[2]),
              c = mid_of(p[2], p[3]);
    atl_op_pt ab = mid_of(a, b), bc = mid_of(b, c), m = mid_of(ab, bc);
    atl_op_pt l[4] = {p[0], a, ab, m}, r[4] = {m, bc, c, p[3]};
    int rc = bz_flatten(s, l, depth + 1);
    return rc < 0 ? rc : bz_flatten(s, r, depth + 1);
  }
  if (s->n == s->cap) {
    int cap = s->cap ? s->cap * 2 : 64;
    atl_op_pt *v = realloc(s->v, (size_t)cap * sizeof(*v));
    if (!v)
      return -ENOMEM;
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = p[3];
  return 0;
}

int atl__op_outline_bezier(atl_op_outline *out, const atl_op_pt ctrl[4]) {
  double size = 0;
  for (int k = 1; k < 4; k++)
    size = fmax(size, sqrt(atl__op_dist2(ctrl[0], ctrl[k])));
  double eps = 1e-8 * size;
  bz_samples s = {malloc(64 * sizeof(atl_op_pt)), 0, 64, eps * eps};
  if (!s.v)
    return -ENOMEM;
  s.v[s.n++] = ctrl[0];
  int rc = bz_flatten(&s, ctrl, 0);
  if (rc < 0) {
    free(s.v);
    return rc;
  }
  atl_op_edge e = {.kind = ATL_OP_EDGE_CURVE, .p1 = ctrl[0], .p2 = ctrl[3]};
  e.pts = s.v;
  e.npts = s.n;
  return atl__op_outline_add(out, &e);
}

/* --- Closure ------------------------------------------------------------ */

void atl__op_outline_close(atl_op_outline *out) {
  out->closed = 0;
  if (out->n < 1)
    return;
  double size = 0;
  for (int i = 0; i < out->n; i++)
    size = fmax(size, fmax(fabs(out->edges[i].p1.x), fabs(out->edges[i].p1.y)));
  double tol = 1e-9 * (1 + size);
  for (int i = 0; i < out->n; i++) {
    const atl_op_edge *e = &out->edges[i], *f = &out->edges[(i + 1) % out->n];
    if (!(fabs(e->p2.x - f->p1.x) <= tol && fabs(e->p2.y - f->p1.y) <= tol))
      return;
  }
  for (int i = 0; i < out->n; i++) {
    atl_op_edge *e = &out->edges[i];
    e->p2 = out->edges[(i + 1) % out->n].p1;
    if (e->kind == ATL_OP_EDGE_CURVE)
      e->pts[e->npts - 1] = e->p2;
  }
  out->closed = 1;
}

int atl__op_outline_p1p2(const atl_op_obj *o, atl_op_outline *out) {
  const atl_op_two_points *t = (const atl_op_two_points *)o;
  return atl__op_outline_line(out, t->p1, t->p2);
}
