/* Ray-primitive intersection distances, inline so that BVH traversal
 * tests a leaf without a call per primitive. They find only the distance:
 * the hit point and normal are computed once, for the nearest hit, by
 * atl__rt_prim_finish(). All in double precision: the scenes of scene-llm
 * mix unit-sized objects with 10,000-unit ground quads. Each returns 1 and
 * sets *t to the nearest hit in (tmin, tmax), or returns 0. They need the
 * fields filled by atl__rt_prim_prepare(). */
#ifndef ATL_RENDER_INTERSECT_H
#define ATL_RENDER_INTERSECT_H

#include "rt.h"

static inline int rt_t_sphere(const rt_prim *p, const rt_ray *r, double tmin,
                              double tmax, double *t) {
  v3 oc = v3_sub(r->o, p->a);
  double a = v3_len2(r->d);
  double hb = v3_dot(oc, r->d);
  double c = v3_len2(oc) - p->r2;
  /* The discriminant written as |oc x d|^2 keeps its precision when the
   * ray starts far from a small sphere. */
  v3 l = v3_madd(oc, r->d, -hb / a);
  double disc = a * (p->r2 - v3_len2(l));
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
  if (t0 > tmin && t0 < tmax) {
    *t = t0;
    return 1;
  }
  if (t1 > tmin && t1 < tmax) {
    *t = t1;
    return 1;
  }
  return 0;
}

/* The ray's parameter at the plane n.x = d, or NAN (which fails every
 * range test) when the ray is parallel to it. */
static inline double rt_plane_t(const rt_prim *p, const rt_ray *r) {
  double den = v3_dot(p->n, r->d);
  if (den == 0)
    return NAN;
  return (p->d - v3_dot(p->n, r->o)) / den;
}

static inline int rt_t_quad(const rt_prim *p, const rt_ray *r, double tmin,
                            double tmax, double *t) {
  double tt = rt_plane_t(p, r);
  if (!(tt > tmin && tt < tmax))
    return 0;
  v3 q = v3_sub(v3_madd(r->o, r->d, tt), p->a);
  /* alpha = w.(q x v) = q.(v x w), beta = w.(u x q) = q.(w x u). */
  double al = v3_dot(q, p->e1);
  double be = v3_dot(q, p->e2);
  if (al < 0 || al > 1 || be < 0 || be > 1)
    return 0;
  *t = tt;
  return 1;
}

static inline int rt_t_disc(const rt_prim *p, const rt_ray *r, double tmin,
                            double tmax, double *t) {
  double tt = rt_plane_t(p, r);
  if (!(tt > tmin && tt < tmax))
    return 0;
  v3 q = v3_sub(v3_madd(r->o, r->d, tt), p->a);
  if (v3_len2(q) > p->r2)
    return 0;
  *t = tt;
  return 1;
}

static inline int rt_t_plane(const rt_prim *p, const rt_ray *r, double tmin,
                             double tmax, double *t) {
  double tt = rt_plane_t(p, r);
  if (!(tt > tmin && tt < tmax))
    return 0;
  *t = tt;
  return 1;
}

/* Moller-Trumbore, without culling. */
static inline int rt_t_triangle(const rt_prim *p, const rt_ray *r, double tmin,
                                double tmax, double *t) {
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
  double tt = v3_dot(p->c, qv) * inv;
  if (!(tt > tmin && tt < tmax))
    return 0;
  *t = tt;
  return 1;
}

/* The side of a cylinder or a cone: points x with s = (x - a).n in [0, h]
 * and |x - a - s n| = r0 + k s, k = (r1 - r0) / h (k = 0: a cylinder).
 * Rare in the benchmark scenes, so not inline. */
int atl__rt_t_side(const rt_prim *p, const rt_ray *r, double tmin, double tmax,
                   double *t);

/* The torus: the nearest root of its quartic in (tmin, tmax) that lies
 * on the arc (shapes.c). */
int atl__rt_t_torus(const rt_prim *p, const rt_ray *r, double tmin, double tmax,
                    double *t);

static inline int rt_prim_t(const rt_prim *p, const rt_ray *r, double tmin,
                            double tmax, double *t) {
  switch (p->kind) {
  case RT_SPHERE:
    return rt_t_sphere(p, r, tmin, tmax, t);
  case RT_QUAD:
    return rt_t_quad(p, r, tmin, tmax, t);
  case RT_DISC:
    return rt_t_disc(p, r, tmin, tmax, t);
  case RT_TRIANGLE:
    return rt_t_triangle(p, r, tmin, tmax, t);
  case RT_CYLINDER:
  case RT_CONE:
    return atl__rt_t_side(p, r, tmin, tmax, t);
  case RT_TORUS:
    return atl__rt_t_torus(p, r, tmin, tmax, t);
  case RT_PLANE:
    return rt_t_plane(p, r, tmin, tmax, t);
  }
  return 0;
}

/* Fills *h for the hit at t: the point, the outward normal and the side. */
static inline void rt_prim_finish(const rt_prim *p, const rt_ray *r, double t,
                                  rt_hit *h) {
  v3 pt = v3_madd(r->o, r->d, t);
  v3 n = p->n;
  switch (p->kind) {
  case RT_SPHERE:
    n = v3_scale(v3_sub(pt, p->a), 1.0 / p->r0);
    break;
  case RT_CYLINDER:
  case RT_CONE: {
    double k = p->kind == RT_CONE ? (p->r1 - p->r0) / p->h : 0;
    v3 oc = v3_sub(r->o, p->a);
    double s = v3_dot(oc, p->n) + t * v3_dot(r->d, p->n);
    v3 radial = v3_madd(v3_madd(oc, r->d, t), p->n, -s);
    double rl = v3_len(radial);
    /* The gradient of |radial|^2 - (r0 + k s)^2, halved. */
    n = v3_norm(v3_madd(v3_scale(radial, 1.0 / rl), p->n, -k));
    break;
  }
  case RT_TORUS: {
    /* Away from the nearest point of the ring of tube centres. The point
     * is never on the axis: the tube is thinner than the ring. */
    v3 q = v3_sub(pt, p->a);
    v3 radial = v3_madd(q, p->n, -v3_dot(q, p->n));
    n = v3_norm(v3_madd(q, radial, -p->r0 / v3_len(radial)));
    break;
  }
  default:
    break;
  }
  h->t = t;
  h->p = pt;
  h->n = n;
  h->front = v3_dot(r->d, n) < 0;
  h->prim = -1; /* the caller knows the index */
}

#endif
