/* Ray-primitive hit records and bounds for every flattened primitive; the
 * distance tests themselves are in intersect.h. */
#include "intersect.h"

void atl__rt_prim_prepare(rt_prim *p) {
  p->e1 = p->e2 = v3_make(0, 0, 0);
  p->d = v3_dot(p->n, p->a);
  p->r2 = p->r0 * p->r0;
  if (p->kind == RT_QUAD) {
    p->e1 = v3_cross(p->c, p->w);
    p->e2 = v3_cross(p->w, p->b);
  }
}

int atl__rt_t_side(const rt_prim *p, const rt_ray *r, double tmin, double tmax,
                   double *t) {
  double k = p->kind == RT_CONE ? (p->r1 - p->r0) / p->h : 0;
  v3 oc = v3_sub(r->o, p->a);
  double od = v3_dot(oc, p->n), dd = v3_dot(r->d, p->n);
  v3 op = v3_madd(oc, p->n, -od); /* perpendicular parts */
  v3 dp = v3_madd(r->d, p->n, -dd);
  double ro = p->r0 + k * od, rd = k * dd; /* radius along the ray */
  double a = v3_len2(dp) - rd * rd;
  double b = v3_dot(op, dp) - ro * rd;
  double c = v3_len2(op) - ro * ro;
  double ts[2];
  int nt = 0;
  if (fabs(a) < 1e-12 * (v3_len2(r->d) + 1e-300)) {
    if (b == 0)
      return 0;
    ts[nt++] = -c / (2 * b);
  } else {
    double disc = b * b - a * c;
    if (disc < 0)
      return 0;
    double sq = sqrt(disc);
    double q = b > 0 ? -b - sq : -b + sq;
    double t0 = q / a, t1 = q != 0 ? c / q : t0;
    ts[0] = fmin(t0, t1);
    ts[1] = fmax(t0, t1);
    nt = 2;
  }
  for (int i = 0; i < nt; i++) {
    double tt = ts[i];
    if (!(tt > tmin && tt < tmax))
      continue;
    double s = od + tt * dd;
    if (s < 0 || s > p->h)
      continue;
    if (p->r0 + k * s < 0)
      continue; /* the mirror nappe of a cone */
    v3 radial = v3_madd(v3_madd(oc, r->d, tt), p->n, -s);
    if (v3_len2(radial) == 0)
      continue; /* the tip */
    *t = tt;
    return 1;
  }
  return 0;
}

void atl__rt_prim_finish(const rt_prim *p, const rt_ray *r, double t,
                         rt_hit *h) {
  rt_prim_finish(p, r, t, h);
}

int atl__rt_prim_intersect(const rt_prim *p, const rt_ray *r, double tmin,
                           double tmax, rt_hit *h) {
  double t;
  if (!rt_prim_t(p, r, tmin, tmax, &t))
    return 0;
  rt_prim_finish(p, r, t, h);
  return 1;
}

/* The bounds of a disc of radius rad around c with unit normal n. */
static void disc_bounds(v3 c, v3 n, double rad, v3 *lo, v3 *hi) {
  v3 e = v3_make(rad * sqrt(fmax(0, 1 - n.x * n.x)),
                 rad * sqrt(fmax(0, 1 - n.y * n.y)),
                 rad * sqrt(fmax(0, 1 - n.z * n.z)));
  *lo = v3_sub(c, e);
  *hi = v3_add(c, e);
}

void atl__rt_prim_bounds(const rt_prim *p, v3 *lo, v3 *hi) {
  v3 a, b;
  switch (p->kind) {
  case RT_SPHERE:
    *lo = v3_sub(p->a, v3_make(p->r0, p->r0, p->r0));
    *hi = v3_add(p->a, v3_make(p->r0, p->r0, p->r0));
    return;
  case RT_QUAD:
    *lo =
        v3_min3(v3_min3(p->a, v3_add(p->a, p->b)),
                v3_min3(v3_add(p->a, p->c), v3_add(v3_add(p->a, p->b), p->c)));
    *hi =
        v3_max3(v3_max3(p->a, v3_add(p->a, p->b)),
                v3_max3(v3_add(p->a, p->c), v3_add(v3_add(p->a, p->b), p->c)));
    return;
  case RT_TRIANGLE:
    *lo = v3_min3(p->a, v3_min3(v3_add(p->a, p->b), v3_add(p->a, p->c)));
    *hi = v3_max3(p->a, v3_max3(v3_add(p->a, p->b), v3_add(p->a, p->c)));
    return;
  case RT_DISC:
    disc_bounds(p->a, p->n, p->r0, lo, hi);
    return;
  case RT_CYLINDER:
  case RT_CONE:
    disc_bounds(p->a, p->n, p->r0, lo, hi);
    disc_bounds(v3_madd(p->a, p->n, p->h), p->n,
                p->kind == RT_CONE ? p->r1 : p->r0, &a, &b);
    *lo = v3_min3(*lo, a);
    *hi = v3_max3(*hi, b);
    return;
  default:
    *lo = v3_make(-INFINITY, -INFINITY, -INFINITY);
    *hi = v3_make(INFINITY, INFINITY, INFINITY);
  }
}
