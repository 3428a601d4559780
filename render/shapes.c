/* Ray-primitive hit records and bounds for every flattened primitive; the
 * distance tests themselves are in intersect.h. */
#include "intersect.h"

/* The axis a vector lies along, or -1. */
static int along(v3 v) {
  int nonzero = (v.x != 0) + (v.y != 0) + (v.z != 0);
  return nonzero != 1 ? -1 : v.x != 0 ? 0 : v.y != 0 ? 1 : 2;
}

/* A quad whose edges lie along two axes (the walls of a box or of the
 * Cornell box, a ground): the packets test it with one coordinate for
 * its plane and two ranges for its inside. Its normal, u x v normalised,
 * then lies along the third axis (its other components exact zeros). */
static void quad_axes(rt_prim *p) {
  int iu = along(p->b), iv = along(p->c);
  if (iu < 0 || iv < 0 || iu == iv)
    return;
  p->aa = 3 - iu - iv;
  for (int i = 0; i < 2; i++) {
    int k = (p->aa + 1 + i) % 3;
    double a = v3_comp(p->a, k);
    double e = v3_comp(k == iu ? p->b : p->c, k);
    p->lo[i] = e < 0 ? a + e : a;
    p->hi[i] = e < 0 ? a : a + e;
  }
}

void atl__rt_prim_prepare(rt_prim *p) {
  p->e1 = p->e2 = v3_make(0, 0, 0);
  p->d = v3_dot(p->n, p->a);
  p->r2 = p->r0 * p->r0;
  p->aa = -1;
  if (p->kind == RT_QUAD) {
    p->e1 = v3_cross(p->c, p->w);
    p->e2 = v3_cross(p->w, p->b);
    quad_axes(p);
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

/* The torus. In its own frame (centre at the origin, axis along z,
 * lengths divided by the major radius R, so the ring of tube centres has
 * radius 1 and the tube radius k = r / R < 1), a point x is on the
 * surface where
 *   f(x) = (|x|^2 + 1 - k^2)^2 - 4 (x.x^2 + x.y^2) = 0,
 * and f < 0 inside the tube. Along a ray with a unit direction f is a
 * monic quartic in the distance. Ferrari's closed form loses most of its
 * digits to cancellation for thin tubes and grazing rays, so the roots
 * are found numerically instead: between two consecutive roots of its
 * derivative a polynomial is monotonic, so each such interval holds at
 * most one root, which Newton steps kept inside the shrinking sign-change
 * bracket find to full precision. The derivative's roots come the same
 * way from its own derivative, down to a quadratic solved in closed
 * form. */

#define POLY_DEG_MAX 4

/* c[i] is the coefficient of x^i. */
static double poly_eval(const double *c, int deg, double x) {
  double v = c[deg];
  for (int i = deg - 1; i >= 0; i--)
    v = v * x + c[i];
  return v;
}

/* The root in [lo, hi] of a polynomial that is monotonic there and whose
 * sign at lo is that of flo, the opposite of its sign at hi. */
static double poly_bracketed_root(const double *c, int deg, double lo,
                                  double hi, double flo) {
  double x = 0.5 * (lo + hi);
  for (int it = 0; it < 64; it++) {
    double f = c[deg], df = 0; /* f and f' at x together, by Horner */
    for (int i = deg - 1; i >= 0; i--) {
      df = df * x + f;
      f = f * x + c[i];
    }
    if (f == 0)
      return x;
    if ((f < 0) == (flo < 0))
      lo = x;
    else
      hi = x;
    /* A Newton step, or a bisection when it would leave the bracket
     * (or f' is 0 and the step is not a number). */
    double nx = x - f / df;
    if (!(nx > lo && nx < hi))
      nx = 0.5 * (lo + hi);
    /* The unknowns are of order one in this frame, so an absolute
     * tolerance near the rounding of doubles is full precision. */
    if (fabs(nx - x) <= 1e-15 || hi - lo <= 1e-15)
      return nx;
    x = nx;
  }
  return x;
}

/* The real roots of the polynomial in [lo, hi], in increasing order;
 * returns their number. A root of even multiplicity (a tangent ray) has
 * no sign change and may be missed, which is harmless: the set of such
 * rays has no measure. The leading coefficient is not 0. */
static int poly_roots(const double *c, int deg, double lo, double hi,
                      double *out) {
  int n = 0;
  if (deg == 2) {
    double disc = c[1] * c[1] - 4 * c[2] * c[0];
    if (disc < 0)
      return 0;
    /* The stable pair q / c2 and c0 / q. */
    double q = -0.5 * (c[1] + copysign(sqrt(disc), c[1]));
    double r0 = q / c[2], r1 = q != 0 ? c[0] / q : r0;
    double a = fmin(r0, r1), b = fmax(r0, r1);
    if (a >= lo && a <= hi)
      out[n++] = a;
    if (b >= lo && b <= hi && b != a)
      out[n++] = b;
    return n;
  }
  double dc[POLY_DEG_MAX] = {0}, ends[POLY_DEG_MAX + 1];
  for (int i = 1; i <= deg; i++)
    dc[i - 1] = i * c[i];
  int ne = 1;
  ends[0] = lo;
  ne += poly_roots(dc, deg - 1, lo, hi, ends + 1);
  ends[ne++] = hi;
  double f0 = poly_eval(c, deg, lo);
  for (int i = 0; i + 1 < ne; i++) {
    double f1 = poly_eval(c, deg, ends[i + 1]);
    if ((f0 < 0) != (f1 < 0))
      out[n++] = poly_bracketed_root(c, deg, ends[i], ends[i + 1], f0);
    f0 = f1;
  }
  return n;
}

/* Whether the angle a (radians, any turn) lies on the arc that starts at
 * `start` (in [0, 2 pi)) and sweeps `sweep` counter-clockwise. */
static int on_arc(double a, double start, double sweep) {
  if (sweep >= 2 * RT_PI)
    return 1;
  double rel = fmod(a - start, 2 * RT_PI);
  if (rel < 0)
    rel += 2 * RT_PI;
  return rel <= sweep;
}

int atl__rt_t_torus(const rt_prim *p, const rt_ray *r, double tmin, double tmax,
                    double *t) {
  double k = p->r1 / p->r0, inv_r = 1 / p->r0, dl = v3_len(r->d);
  v3 q = v3_sub(r->o, p->a);
  v3 o = v3_make(v3_dot(q, p->b) * inv_r, v3_dot(q, p->c) * inv_r,
                 v3_dot(q, p->n) * inv_r);
  v3 d = v3_scale(
      v3_make(v3_dot(r->d, p->b), v3_dot(r->d, p->c), v3_dot(r->d, p->n)),
      1 / dl);
  /* Move the origin to the ray's point nearest the centre, and keep to
   * the part of the ray in the bounding sphere (radius 1 + k) and
   * between the planes z = -k and z = k: the quartic's coefficients and
   * roots are then all of order one, whatever the distance of the
   * eye. s = t |d| / R is the local distance, u = s - sc the shifted
   * one. */
  double sc = -v3_dot(o, d);
  o = v3_madd(o, d, sc);
  double kb = k + 1e-6; /* a margin: roots can lie on the clipping planes */
  double half2 = (1 + kb) * (1 + kb) - v3_len2(o);
  if (half2 <= 0)
    return 0;
  double half = sqrt(half2), per_t = dl * inv_r;
  double lo = fmax(-half, tmin * per_t - sc);
  double hi = fmin(half, tmax * per_t - sc);
  if (d.z != 0) {
    double z0 = (-kb - o.z) / d.z, z1 = (kb - o.z) / d.z;
    lo = fmax(lo, fmin(z0, z1));
    hi = fmin(hi, fmax(z0, z1));
  } else if (fabs(o.z) > kb) {
    return 0;
  }
  if (!(lo < hi))
    return 0;
  /* f(o + u d) with |d| = 1, b = o.d and m = |o|^2 + 1 - k^2. The
   * constant term c^2 - 4 rho^2 is factored so that it keeps its
   * precision when the shifted origin is near the surface. */
  double b = v3_dot(o, d), m = v3_len2(o) + 1 - k * k;
  double rho = sqrt(o.x * o.x + o.y * o.y);
  double c[5] = {(m - 2 * rho) * (m + 2 * rho),
                 4 * b * m - 8 * (o.x * d.x + o.y * d.y),
                 4 * b * b + 2 * m - 4 * (d.x * d.x + d.y * d.y), 4 * b, 1};
  double u[POLY_DEG_MAX];
  int n = poly_roots(c, 4, lo, hi, u);
  for (int i = 0; i < n; i++) {
    double tt = (sc + u[i]) / per_t;
    if (!(tt > tmin && tt < tmax))
      continue;
    if (p->h < 2 * RT_PI &&
        !on_arc(atan2(o.y + u[i] * d.y, o.x + u[i] * d.x), p->w.x, p->h))
      continue;
    *t = tt;
    return 1;
  }
  return 0;
}

void atl__rt_torus_frame(rt_prim *p, v3 axis, double sweep_deg,
                         double start_deg) {
  v3 x = v3_madd(v3_make(1, 0, 0), axis, -axis.x);
  if (v3_len(x) < 1e-6)
    x = v3_madd(v3_make(0, 0, 1), axis, -axis.z);
  p->n = axis;
  p->b = v3_norm(x);
  p->c = v3_cross(axis, p->b);
  p->h = sweep_deg * (RT_PI / 180);
  p->w.x = fmod(start_deg, 360) * (RT_PI / 180);
  if (p->w.x < 0)
    p->w.x += 2 * RT_PI;
}

void atl__rt_torus_end(const rt_prim *p, int end, v3 *centre, v3 *normal) {
  double a = end ? p->w.x + p->h : p->w.x, sn = sin(a), cs = cos(a);
  *centre =
      v3_madd(p->a, v3_add(v3_scale(p->b, cs), v3_scale(p->c, sn)), p->r0);
  /* The tangent of growing angles, -sin b + cos c, leaves the arc at
   * its end; its opposite leaves it at its start. */
  v3 t = v3_add(v3_scale(p->b, -sn), v3_scale(p->c, cs));
  *normal = end ? t : v3_neg(t);
}

/* The bounds of the torus: those of its ring of tube centres (only the
 * arc's part of it), grown by the tube's radius. Along each world axis
 * the ring's coordinate is R (b_i cos a + c_i sin a), whose extremes are
 * at a = atan2(c_i, b_i) and that plus pi; they count when on the arc,
 * and so do the arc's two ends. */
static void torus_bounds(const rt_prim *p, v3 *lo, v3 *hi) {
  double a0 = p->w.x, a1 = p->w.x + p->h;
  v3 e0 = v3_add(v3_scale(p->b, cos(a0)), v3_scale(p->c, sin(a0)));
  v3 e1 = v3_add(v3_scale(p->b, cos(a1)), v3_scale(p->c, sin(a1)));
  double l[3], h[3];
  for (int i = 0; i < 3; i++) {
    double bi = v3_comp(p->b, i), ci = v3_comp(p->c, i);
    l[i] = fmin(v3_comp(e0, i), v3_comp(e1, i));
    h[i] = fmax(v3_comp(e0, i), v3_comp(e1, i));
    double amp = sqrt(bi * bi + ci * ci), top = atan2(ci, bi);
    if (on_arc(top, p->w.x, p->h))
      h[i] = amp;
    if (on_arc(top + RT_PI, p->w.x, p->h))
      l[i] = -amp;
  }
  v3 tube = v3_make(p->r1, p->r1, p->r1);
  *lo = v3_sub(v3_madd(p->a, v3_make(l[0], l[1], l[2]), p->r0), tube);
  *hi = v3_add(v3_madd(p->a, v3_make(h[0], h[1], h[2]), p->r0), tube);
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
  case RT_TORUS:
    torus_bounds(p, lo, hi);
    return;
  default:
    *lo = v3_make(-INFINITY, -INFINITY, -INFINITY);
    *hi = v3_make(INFINITY, INFINITY, INFINITY);
  }
}
