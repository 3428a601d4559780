/* Ray-primitive intersection and bounds for every flattened primitive.
 * All in double precision: the scenes of scene-llm mix unit-sized
 * objects with 10,000-unit ground quads. */
#include "rt.h"

static int finish(const rt_ray *r, double t, v3 n, rt_hit *h) {
  h->t = t;
  h->p = v3_madd(r->o, r->d, t);
  h->n = n;
  h->front = v3_dot(r->d, n) < 0;
  h->prim = -1; /* the caller knows the index */
  return 1;
}

static int hit_sphere(const rt_prim *p, const rt_ray *r, double tmin,
                      double tmax, rt_hit *h) {
  v3 oc = v3_sub(r->o, p->a);
  double a = v3_len2(r->d);
  double hb = v3_dot(oc, r->d);
  double c = v3_len2(oc) - p->r0 * p->r0;
  /* The discriminant written as |oc x d|^2 keeps its precision when the
   * ray starts far from a small sphere. */
  v3 l = v3_madd(oc, r->d, -hb / a);
  double disc = a * (p->r0 * p->r0 - v3_len2(l));
  if (disc < 0)
    return 0;
  double sq = sqrt(disc);
  /* The stable pair of roots: q and c / q. */
  double q = hb > 0 ? -hb - sq : -hb + sq;
  double t0 = q / a, t1 = q != 0 ? c / q : t0;
  if (t0 > t1) {
    double tt = t0;
    t0 = t1;
    t1 = tt;
  }
  double t = t0;
  if (t <= tmin || t >= tmax) {
    t = t1;
    if (t <= tmin || t >= tmax)
      return 0;
  }
  v3 pt = v3_madd(r->o, r->d, t);
  return finish(r, t, v3_scale(v3_sub(pt, p->a), 1.0 / p->r0), h);
}

/* The ray's parameter at the plane (n, through a), or NAN. */
static double plane_t(v3 a, v3 n, const rt_ray *r) {
  double den = v3_dot(n, r->d);
  if (den == 0)
    return NAN;
  return v3_dot(n, v3_sub(a, r->o)) / den;
}

static int hit_quad(const rt_prim *p, const rt_ray *r, double tmin, double tmax,
                    rt_hit *h) {
  double t = plane_t(p->a, p->n, r);
  if (!(t > tmin && t < tmax))
    return 0;
  v3 q = v3_sub(v3_madd(r->o, r->d, t), p->a);
  double al = v3_dot(p->w, v3_cross(q, p->c));
  double be = v3_dot(p->w, v3_cross(p->b, q));
  if (al < 0 || al > 1 || be < 0 || be > 1)
    return 0;
  return finish(r, t, p->n, h);
}

static int hit_disc(const rt_prim *p, const rt_ray *r, double tmin, double tmax,
                    rt_hit *h) {
  double t = plane_t(p->a, p->n, r);
  if (!(t > tmin && t < tmax))
    return 0;
  v3 q = v3_sub(v3_madd(r->o, r->d, t), p->a);
  if (v3_len2(q) > p->r0 * p->r0)
    return 0;
  return finish(r, t, p->n, h);
}

static int hit_plane(const rt_prim *p, const rt_ray *r, double tmin,
                     double tmax, rt_hit *h) {
  double t = plane_t(p->a, p->n, r);
  if (!(t > tmin && t < tmax))
    return 0;
  return finish(r, t, p->n, h);
}

/* Moller-Trumbore, without culling. */
static int hit_triangle(const rt_prim *p, const rt_ray *r, double tmin,
                        double tmax, rt_hit *h) {
  v3 pv = v3_cross(r->d, p->c);
  double det = v3_dot(p->b, pv);
  if (fabs(det) < 1e-300)
    return 0;
  double inv = 1.0 / det;
  v3 tv = v3_sub(r->o, p->a);
  double u = v3_dot(tv, pv) * inv;
  if (u < 0 || u > 1)
    return 0;
  v3 qv = v3_cross(tv, p->b);
  double v = v3_dot(r->d, qv) * inv;
  if (v < 0 || u + v > 1)
    return 0;
  double t = v3_dot(p->c, qv) * inv;
  if (!(t > tmin && t < tmax))
    return 0;
  return finish(r, t, p->n, h);
}

/* The side of a cylinder or a cone: points x with s = (x - a).n in [0, h]
 * and |x - a - s n| = r0 + k s, k = (r1 - r0) / h (k = 0: a cylinder). */
static int hit_side(const rt_prim *p, const rt_ray *r, double tmin, double tmax,
                    rt_hit *h) {
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
    double t = ts[i];
    if (!(t > tmin && t < tmax))
      continue;
    double s = od + t * dd;
    if (s < 0 || s > p->h)
      continue;
    double rad = p->r0 + k * s;
    if (rad < 0)
      continue; /* the mirror nappe of a cone */
    v3 radial = v3_madd(v3_add(oc, v3_scale(r->d, t)), p->n, -s);
    double rl = v3_len(radial);
    if (rl == 0)
      continue; /* the tip */
    /* The gradient of |radial|^2 - (r0 + k s)^2, halved. */
    v3 n = v3_madd(v3_scale(radial, 1.0 / rl), p->n, -k);
    return finish(r, t, v3_norm(n), h);
  }
  return 0;
}

int atl__rt_prim_intersect(const rt_prim *p, const rt_ray *r, double tmin,
                           double tmax, rt_hit *h) {
  switch (p->kind) {
  case RT_SPHERE:
    return hit_sphere(p, r, tmin, tmax, h);
  case RT_QUAD:
    return hit_quad(p, r, tmin, tmax, h);
  case RT_DISC:
    return hit_disc(p, r, tmin, tmax, h);
  case RT_TRIANGLE:
    return hit_triangle(p, r, tmin, tmax, h);
  case RT_CYLINDER:
  case RT_CONE:
    return hit_side(p, r, tmin, tmax, h);
  case RT_PLANE:
    return hit_plane(p, r, tmin, tmax, h);
  }
  return 0;
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
