/* Small vector helpers for the path tracer, passed by value. */
#ifndef ATL_RENDER_VEC_H
#define ATL_RENDER_VEC_H

#include <math.h>

#define RT_PI 3.14159265358979323846

typedef struct {
  double x, y, z;
} v3;

static inline v3 v3_make(double x, double y, double z) {
  v3 r = {x, y, z};
  return r;
}
static inline v3 v3_add(v3 a, v3 b) {
  return v3_make(a.x + b.x, a.y + b.y, a.z + b.z);
}
static inline v3 v3_sub(v3 a, v3 b) {
  return v3_make(a.x - b.x, a.y - b.y, a.z - b.z);
}
static inline v3 v3_mul(v3 a, v3 b) {
  return v3_make(a.x * b.x, a.y * b.y, a.z * b.z);
}
static inline v3 v3_scale(v3 a, double s) {
  return v3_make(a.x * s, a.y * s, a.z * s);
}
/* a + b * s */
static inline v3 v3_madd(v3 a, v3 b, double s) {
  return v3_make(a.x + b.x * s, a.y + b.y * s, a.z + b.z * s);
}
static inline v3 v3_neg(v3 a) {
  return v3_make(-a.x, -a.y, -a.z);
}
static inline double v3_dot(v3 a, v3 b) {
  return a.x * b.x + a.y * b.y + a.z * b.z;
}
static inline v3 v3_cross(v3 a, v3 b) {
  return v3_make(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z,
                 a.x * b.y - a.y * b.x);
}
static inline double v3_len2(v3 a) {
  return v3_dot(a, a);
}
static inline double v3_len(v3 a) {
  return sqrt(v3_dot(a, a));
}
static inline v3 v3_norm(v3 a) {
  double l = v3_len(a);
  return l > 0 ? v3_scale(a, 1.0 / l) : a;
}
static inline double v3_max(v3 a) {
  return fmax(a.x, fmax(a.y, a.z));
}
static inline double v3_maxabs(v3 a) {
  return fmax(fabs(a.x), fmax(fabs(a.y), fabs(a.z)));
}
static inline int v3_is_zero(v3 a) {
  return a.x == 0 && a.y == 0 && a.z == 0;
}
static inline double v3_comp(v3 a, int axis) {
  return axis == 0 ? a.x : axis == 1 ? a.y : a.z;
}
static inline v3 v3_min3(v3 a, v3 b) {
  return v3_make(fmin(a.x, b.x), fmin(a.y, b.y), fmin(a.z, b.z));
}
static inline v3 v3_max3(v3 a, v3 b) {
  return v3_make(fmax(a.x, b.x), fmax(a.y, b.y), fmax(a.z, b.z));
}
static inline double v3_lum(v3 c) {
  return 0.2126 * c.x + 0.7152 * c.y + 0.0722 * c.z;
}

/* The Taylor series of sin x and cos x (x2 = x^2) for |x| <= pi / 4,
 * where they are accurate to about 1e-14: far below the noise of any
 * estimate they feed. Macros, so that the four-lane version (path4.h)
 * evaluates the very same polynomials on vectors. */
#define RT_SIN_SERIES(x, x2)                                                   \
  ((x) * (1 + (x2) * (-1.0 / 6 + (x2) * (1.0 / 120 + (x2)*RT_SIN_TAIL(x2)))))
#define RT_SIN_TAIL(x2)                                                        \
  (-1.0 / 5040 + (x2) * (1.0 / 362880 + (x2) * (-1.0 / 39916800 +              \
                                                (x2) * (1.0 / 6227020800))))
#define RT_COS_SERIES(x2)                                                      \
  (1 + (x2) * (-1.0 / 2 + (x2) * (1.0 / 24 + (x2)*RT_COS_TAIL(x2))))
#define RT_COS_TAIL(x2)                                                        \
  (-1.0 / 720 +                                                                \
   (x2) * (1.0 / 40320 +                                                       \
           (x2) * (-1.0 / 3628800 +                                            \
                   (x2) * (1.0 / 479001600 + (x2) * (-1.0 / 87178291200)))))

/* sin and cos of 2 pi u for u in [0, 1], for sampling azimuths: libm's
 * sincos() was a tenth of the render time. The angle is reduced to the
 * nearest quarter turn, leaving |x| <= pi / 4. */
static inline void rt_sincos_turn(double u, double *s, double *c) {
  double q = floor(u * 4 + 0.5); /* the nearest quarter turn, 0..4 */
  double x = (u * 4 - q) * (RT_PI / 2), x2 = x * x;
  double sn = RT_SIN_SERIES(x, x2), cs = RT_COS_SERIES(x2);
  /* Rotate by q quarter turns, (sin, cos) -> (cos, -sin) per turn,
   * with selects rather than a switch: q is random, so a branch on it
   * would be mispredicted half the time. */
  int k = (int)q & 3;
  double a = (k & 1) ? cs : sn, b = (k & 1) ? sn : cs;
  *s = (k & 2) ? -a : a;
  *c = (k == 1 || k == 2) ? -b : b;
}

/* An orthonormal basis (t, b, n) around the unit vector n (Duff et al.,
 * "Building an orthonormal basis, revisited"). */
static inline void v3_basis(v3 n, v3 *t, v3 *b) {
  double sign = copysign(1.0, n.z);
  double a = -1.0 / (sign + n.z);
  double c = n.x * n.y * a;
  *t = v3_make(1.0 + sign * n.x * n.x * a, sign * c, -sign * n.x);
  *b = v3_make(c, sign + n.y * n.y * a, -n.y);
}

/* The local direction (x, y, z) in the basis around n. */
static inline v3 v3_from_local(v3 n, double x, double y, double z) {
  v3 t, b;
  v3_basis(n, &t, &b);
  return v3_add(v3_add(v3_scale(t, x), v3_scale(b, y)), v3_scale(n, z));
}

#endif
