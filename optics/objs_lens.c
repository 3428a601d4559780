/* Lenses: SphericalLens's construction from its parameters (thickness
 * and radii, or thickness and front and back focal distances) and its
 * parameters read back from a built path; and IdealLens, the thin lens
 * that bends every ray towards its image point without refraction. */
#include "atl-build.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "geom.h"
#include "glass.h"
#include "outline.h"

static double js_sign(double v) {
  return v > 0 ? 1 : v < 0 ? -1 : v;
}

/* How far a surface of radius r bulges over the lens's height len: its
 * sagitta, signed; NaN when the circle is too small for the height. */
static double curve_shift(double r, double len) {
  if (!(r < INFINITY && r > -INFINITY))
    return 0;
  return r - sqrt(r * r - len * len / 4) * js_sign(r);
}

int atl__op_lens_dr1r2(atl_op_pt p1, atl_op_pt p2, double d, double r1,
                       double r2, atl_op_lens_path *out) {
  double len = hypot(p1.x - p2.x, p1.y - p2.y);
  double dx = (p2.x - p1.x) / len, dy = (p2.y - p1.y) / len;
  double dpx = dy, dpy = -dx;
  double cx = (p1.x + p2.x) * .5, cy = (p1.y + p2.y) * .5;
  double cs1 = curve_shift(r1, len), cs2 = curve_shift(r2, len);
  double es1 = d / 2 - cs1, es2 = d / 2 + cs2;
  if (isnan(cs1) || isnan(cs2))
    return -1;
  /* The edges at p1, the front vertex, the edges at p2, the back vertex;
   * the vertices are the middles of the two arcs. */
  atl_op_vertex *v = out->v;
  v[0].p = atl__op_pt(p1.x - dpx * es1, p1.y - dpy * es1);
  v[1].p = atl__op_pt(p1.x + dpx * es2, p1.y + dpy * es2);
  v[2].p = atl__op_pt(cx + dpx * (d / 2), cy + dpy * (d / 2));
  v[3].p = atl__op_pt(p2.x + dpx * es2, p2.y + dpy * es2);
  v[4].p = atl__op_pt(p2.x - dpx * es1, p2.y - dpy * es1);
  v[5].p = atl__op_pt(cx - dpx * (d / 2), cy - dpy * (d / 2));
  for (int i = 0; i < 6; i++)
    v[i].arc = i == 2 || i == 5;
  return 0;
}

int atl__op_lens_dffdbfd(atl_op_pt p1, atl_op_pt p2, double d, double ffd,
                         double bfd, double n, atl_op_lens_path *out) {
  /* The thick-lens equations solved for the radii: two solutions, by the
   * sign of the root. */
  double root = sqrt(d * d + 4 * bfd * ffd * (n * n));
  double den1 = 2 * n * (d + (-bfd + ffd) * n);
  double den2 = 2 * n * (d + (bfd - ffd) * n);
  double r1a = (d * (-1 + n) * (d + 2 * ffd * n - root)) / den1;
  double r2a = -(d * (-1 + n) * (d + 2 * bfd * n - root)) / den2;
  double r1b = (d * (-1 + n) * (d + 2 * ffd * n + root)) / den1;
  double r2b = -(d * (-1 + n) * (d + 2 * bfd * n + root)) / den2;
  int a_ok = !isnan(r1a) && !isnan(r2a), b_ok = !isnan(r1b) && !isnan(r2b);
  if (a_ok && !b_ok)
    return atl__op_lens_dr1r2(p1, p2, d, r1a, r2a, out);
  if (b_ok && !a_ok)
    return atl__op_lens_dr1r2(p1, p2, d, r1b, r2b, out);
  if (!a_ok)
    return -1;
  /* Both: the more gently curved lens first, then the other. */
  if (fabs(r1a) + fabs(r2a) < fabs(r1b) + fabs(r2b))
    return atl__op_lens_dr1r2(p1, p2, d, r1a, r2a, out) == 0
               ? 0
               : atl__op_lens_dr1r2(p1, p2, d, r1b, r2b, out);
  return atl__op_lens_dr1r2(p1, p2, d, r1b, r2b, out) == 0
             ? 0
             : atl__op_lens_dr1r2(p1, p2, d, r1a, r2a, out);
}

static atl_op_pt midpoint(atl_op_pt a, atl_op_pt b) {
  return atl__op_pt((a.x + b.x) * 0.5, (a.y + b.y) * 0.5);
}

void atl__op_lens_get_dr1r2(const atl_op_vertex *v, double *d, double *r1,
                            double *r2) {
  atl_op_pt c1 = atl__op_arc_center(v[1].p, v[3].p, v[2].p);
  atl_op_pt c2 = atl__op_arc_center(v[4].p, v[0].p, v[5].p);
  double rb = sqrt(atl__op_dist2(c1, v[2].p));
  double ra = sqrt(atl__op_dist2(c2, v[5].p));
  atl_op_pt p1 = midpoint(v[0].p, v[1].p), p2 = midpoint(v[3].p, v[4].p);
  double len = hypot(p1.x - p2.x, p1.y - p2.y);
  double dx = (p2.x - p1.x) / len, dy = (p2.y - p1.y) / len;
  double dpx = dy, dpy = -dx;
  *d = sqrt(atl__op_dist2(v[2].p, v[5].p));
  /* A radius is positive when its centre lies on the lens's back side. */
  if (dpx * (c1.x - v[2].p.x) + dpy * (c1.y - v[2].p.y) < 0)
    rb = -rb;
  if (dpx * (c2.x - v[5].p.x) + dpy * (c2.y - v[5].p.y) < 0)
    ra = -ra;
  *r1 = isnan(ra) ? INFINITY : ra;
  *r2 = isnan(rb) ? INFINITY : rb;
}

void atl__op_lens_get_dffdbfd(const atl_op_vertex *v, double n, double *d,
                              double *ffd, double *bfd) {
  double r1, r2;
  atl__op_lens_get_dr1r2(v, d, &r1, &r2);
  /* The lensmaker's equation for a thick lens. */
  double f = 1 / ((n - 1) * (1 / r1 - 1 / r2 + (n - 1) * *d / (n * r1 * r2)));
  *ffd = f * (1 + (n - 1) * *d / (n * r2));
  *bfd = f * (1 - (n - 1) * *d / (n * r1));
}

/* --- IdealLens --------------------------------------------------------- */

typedef struct {
  atl_op_obj base;
  atl_op_pt p1, p2;
  double focal_length;
} ideal_lens;

static const atl_op_field ideal_lens_fields[] = {
    {"p1", ATL_OP_F_POINT, "null", offsetof(ideal_lens, p1)},
    {"p2", ATL_OP_F_POINT, "null", offsetof(ideal_lens, p2)},
    {"focalLength", ATL_OP_F_NUM, "100", offsetof(ideal_lens, focal_length)},
    {NULL, 0, NULL, 0},
};

static int ideal_lens_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  (void)s;
  ideal_lens *l = (ideal_lens *)o;
  if (l->p1.x == l->p2.x && l->p1.y == l->p2.y)
    return asprintf(err, "IdealLens: \"p1\" and \"p2\" must differ (they "
                         "are the lens's ends)"),
           -EINVAL;
  if (!isfinite(l->focal_length) || l->focal_length == 0)
    return asprintf(err, "IdealLens: \"focalLength\" must be a nonzero "
                         "number (positive converges, negative diverges)"),
           -EINVAL;
  return 0;
}

static int ideal_lens_intersect(atl_op_obj *o, atl_op_sim *sim,
                                const atl_op_ray *r, atl_op_pt *hit) {
  (void)sim;
  ideal_lens *l = (ideal_lens *)o;
  return atl__op_ray_segment(r, l->p1, l->p2, hit);
}

/* A ray through a thin lens: its line meets the plane at 2f on its own
 * side at some point; the outgoing ray passes through the image of that
 * point, at 2f on the other side, mirrored through the lens's centre (a
 * diverging lens traces the construction backwards). */
static atl_op_result ideal_lens_incident(atl_op_obj *o, atl_op_sim *sim,
                                         atl_op_ray *r, long ray_index,
                                         atl_op_pt hit,
                                         atl_op_obj *const *merging,
                                         int nmerging) {
  (void)sim, (void)ray_index, (void)merging, (void)nmerging;
  ideal_lens *l = (ideal_lens *)o;
  double f = l->focal_length;
  double len = sqrt(atl__op_dist2(l->p1, l->p2));
  double ux = (-l->p1.y + l->p2.y) / len, uy = (l->p1.x - l->p2.x) / len;
  atl_op_pt mid = midpoint(l->p1, l->p2);
  atl_op_pt f1 = atl__op_pt(mid.x + ux * 2 * f, mid.y + uy * 2 * f);
  atl_op_pt f2 = atl__op_pt(mid.x - ux * 2 * f, mid.y - uy * 2 * f);
  double lx = l->p2.x - l->p1.x, ly = l->p2.y - l->p1.y;
  atl_op_pt near1 = f2, far1 = f1;
  if (atl__op_dist2(r->p1, f1) < atl__op_dist2(r->p1, f2))
    near1 = f1, far1 = f2;
  atl_op_pt near2 = atl__op_pt(near1.x + lx, near1.y + ly);
  atl_op_pt far2 = atl__op_pt(far1.x + lx, far1.y + ly);
  if (f > 0) {
    atl_op_pt a = atl__op_lines_x(near1, near2, r->p1, r->p2);
    r->p2 = atl__op_lines_x(far1, far2, mid, a);
  } else {
    atl_op_pt a = atl__op_lines_x(far1, far2, r->p1, r->p2);
    atl_op_pt b = atl__op_lines_x(near1, near2, mid, a);
    r->p2 = atl__op_lines_x(far1, far2, hit, b);
  }
  r->p1 = hit;
  r->kind = ATL_OP_REFRACT;
  atl_op_result res = {0};
  return res;
}

const atl_op_class atl__op_ideal_lens = {
    .type = "IdealLens",
    .flags = ATL_OP_OPTICAL,
    .size = sizeof(ideal_lens),
    .fields = ideal_lens_fields,
    .init = ideal_lens_init,
    .intersect = ideal_lens_intersect,
    .incident = ideal_lens_incident,
    .outline = atl__op_outline_p1p2,
};
