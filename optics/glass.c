/* BaseGlass, upstream's refraction at a glass surface, and the two
 * simplest glasses built on it: CircleGlass and PlaneGlass (a
 * half-plane). The formulas keep upstream's order of floating-point
 * operations: a refracted ray's direction feeds every later hit, and the
 * scene tests compare detector readings to a relative 1e-3. */
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

static int color_mode_default(const atl_op_sim *sim) {
  return strcmp(sim->scene->color_mode, "default") == 0;
}

double atl__op_glass_ref_index(atl_op_obj *o, atl_op_sim *sim, atl_op_pt p,
                               const atl_op_ray *r) {
  (void)p;
  atl_op_glass *g = (atl_op_glass *)o;
  if (!sim->scene->simulate_colors)
    return g->ref_index;
  /* Cauchy's equation with the wavelength in micrometres; upstream
   * applies it to negative indices unchanged as well. */
  return g->ref_index + g->cauchy_b / (r->wavelength * r->wavelength * 1e-6);
}

void atl__op_fresnel(double n1, double cos1, double cos2, double *rs,
                     double *rp) {
  *rs = pow((n1 * cos1 - cos2) / (n1 * cos1 + cos2), 2);
  *rp = pow((n1 * cos2 - cos1) / (n1 * cos2 + cos1), 2);
}

/* The brightness below which a partial reflection is not traced as
 * such (default colour mode), and below which a refracted ray is
 * dropped; the other colour modes show faint light, so they keep more. */
static double reflect_floor(const atl_op_sim *sim) {
  return color_mode_default(sim) ? 0.01 : 1e-6;
}

static double refract_floor(const atl_op_sim *sim) {
  return color_mode_default(sim) ? 0 : 1e-6;
}

/* A weak partial reflection: its brightness is truncated, but outside a
 * gap every amp-th ray by index carries amp times the brightness, so on
 * average the reflected light is kept while far fewer rays are traced.
 * (Upstream meant to limit this to the default colour mode, but its
 * test is always true, so every mode does it.) */
static void thin_out(atl_op_sim *sim, atl_op_ray *refl, const atl_op_ray *r,
                     long ray_index, double *truncation) {
  *truncation += refl->bs + refl->bp;
  if (r->gap)
    return;
  double amp = floor(0.01 / (refl->bs + refl->bp)) + 1;
  if (fmod((double)ray_index, amp) == 0) {
    refl->bs = refl->bs * amp;
    refl->bp = refl->bp * amp;
    atl__op_emit(sim, refl);
  }
}

atl_op_result atl__op_glass_refract(atl_op_glass *g, atl_op_sim *sim,
                                    atl_op_ray *r, long ray_index,
                                    atl_op_pt hit, atl_op_pt normal, double n1,
                                    atl_op_obj *const *merging, int nmerging,
                                    int body) {
  atl_op_result res = {0};
  /* Coinciding glass surfaces act as one whose relative index is the
   * product of theirs, each taken in the direction the ray crosses it. */
  for (int i = 0; i < nmerging; i++) {
    atl_op_obj *m = merging[i];
    double type = m->cls->incident_type(m, sim, r);
    if (type == 1) {
      n1 *= m->cls->ref_index(m, sim, hit, r);
      if (m->cls->exit)
        m->cls->exit(m, sim, r);
    } else if (type == -1) {
      n1 /= m->cls->ref_index(m, sim, hit, r);
      if (m->cls->enter)
        m->cls->enter(m, sim, r);
    } else if (type != 0)
      return atl__op_glass_undefined();
  }
  /* A negative index refracts to the normal's other side: the formulas
   * below take |n1|, and the refracted ray is mirrored at the end. */
  int negative = n1 < 0;
  if (negative)
    n1 = -n1;
  double nlen = sqrt(normal.x * normal.x + normal.y * normal.y);
  double nx = normal.x / nlen, ny = normal.y / nlen;
  double rlen = sqrt((r->p2.x - r->p1.x) * (r->p2.x - r->p1.x) +
                     (r->p2.y - r->p1.y) * (r->p2.y - r->p1.y));
  double rx = (r->p2.x - r->p1.x) / rlen, ry = (r->p2.y - r->p1.y) / rlen;
  /* Snell's law in vector form. */
  double cos1 = -nx * rx - ny * ry;
  double sq1 = 1 - n1 * n1 * (1 - cos1 * cos1);
  atl_op_pt mirrored =
      atl__op_pt(hit.x + rx + 2 * cos1 * nx, hit.y + ry + 2 * cos1 * ny);
  if (sq1 < 0) {
    r->p1 = hit;
    r->p2 = mirrored;
    if (body) /* upstream restores a set body only */
      r->body = body;
    r->kind = ATL_OP_TIR;
    return res;
  }
  double cos2 = sqrt(sq1);
  double rs = 0, rp = 0;
  if (g->partial_reflect)
    atl__op_fresnel(n1, cos1, cos2, &rs, &rp);
  atl_op_ray refl = atl__op_ray_make(hit, mirrored, r->bs * rs, r->bp * rp, r,
                                     ATL_OP_REFLECT);
  refl.gap = r->gap;
  refl.body = body;
  if (refl.bs + refl.bp > reflect_floor(sim))
    atl__op_emit(sim, &refl);
  else
    thin_out(sim, &refl, r, ray_index, &res.truncation);
  if (negative) {
    n1 = -n1;
    cos2 = cos(2 * PI - acos(cos2));
  }
  r->p1 = hit;
  r->p2 = atl__op_pt(hit.x + n1 * rx + (n1 * cos1 - cos2) * nx,
                     hit.y + n1 * ry + (n1 * cos1 - cos2) * ny);
  /* The Python project's grazing criteria, for the tools' queries. */
  double ts = 1 - rs, tp = 1 - rp, b = r->bs + r->bp;
  unsigned grazing = 0;
  /* An incidence of 85 degrees or more: its cosine is at most cos 85. */
  if (fabs(cos1) <= cos(ATL_OP_GRAZING_ANGLE_DEG * (PI / 180)))
    grazing |= ATL_OP_GRAZING_ANGLE;
  if (ts > 1e-10 && tp / ts >= ATL_OP_GRAZING_POLAR_RATIO)
    grazing |= ATL_OP_GRAZING_POLAR;
  if (b > 1e-10 && (r->bs * ts + r->bp * tp) / b < ATL_OP_GRAZING_TRANSM_MIN)
    grazing |= ATL_OP_GRAZING_TRANSM;
  r->grazing = grazing;
  r->bs = r->bs * (1 - rs);
  r->bp = r->bp * (1 - rp);
  r->kind = ATL_OP_REFRACT;
  if (!(r->bs + r->bp > refract_floor(sim))) {
    res.absorbed = 1;
    res.truncation += r->bs + r->bp;
  }
  return res;
}

atl_op_result atl__op_glass_incident(atl_op_glass *g, atl_op_sim *sim,
                                     atl_op_ray *r, long ray_index,
                                     atl_op_pt hit, atl_op_pt normal,
                                     double type, atl_op_obj *const *merging,
                                     int nmerging) {
  double n1;
  if (type == 1)
    n1 = atl__op_glass_ref_index(&g->base, sim, hit, r);
  else if (type == -1)
    n1 = 1 / atl__op_glass_ref_index(&g->base, sim, hit, r);
  else if (type == 0)
    n1 = 1; /* as if the glass were not there */
  else
    return atl__op_glass_undefined();
  return atl__op_glass_refract(g, sim, r, ray_index, hit, normal, n1, merging,
                               nmerging, r->body);
}

/* Checks shared by every glass: a usable index. */
int atl__op_glass_check(atl_op_glass *g, char **err) {
  const char *type = g->base.cls->type;
  if (!isfinite(g->ref_index) || g->ref_index == 0)
    return asprintf(err, "%s: \"refIndex\" must be a nonzero number", type),
           -EINVAL;
  if (!isfinite(g->cauchy_b))
    return asprintf(err, "%s: \"cauchyB\" must be a finite number", type),
           -EINVAL;
  return 0;
}

/* --- CircleGlass ------------------------------------------------------- */

typedef struct {
  atl_op_glass g;
  atl_op_pt p1, p2; /* the centre and a point on the circle */
} two_point_glass;

static const atl_op_field two_point_glass_fields[] = {
    {"p1", ATL_OP_F_POINT, "null", offsetof(two_point_glass, p1)},
    {"p2", ATL_OP_F_POINT, "null", offsetof(two_point_glass, p2)},
    ATL_OP_GLASS_FIELDS(two_point_glass),
    {NULL, 0, NULL, 0},
};

static int two_point_glass_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  (void)s;
  two_point_glass *c = (two_point_glass *)o;
  if (c->p1.x == c->p2.x && c->p1.y == c->p2.y)
    return asprintf(err, "%s: \"p1\" and \"p2\" must differ (%s)", o->cls->type,
                    o->cls == &atl__op_circle_glass
                        ? "p1 is the centre, p2 a point on the circle"
                        : "they are two points of the boundary line"),
           -EINVAL;
  /* A circle's box (a half-plane has none: every ray may meet it). */
  if (o->cls == &atl__op_circle_glass)
    atl__op_box_add(o, c->p1, sqrt(atl__op_dist2(c->p1, c->p2)));
  return atl__op_glass_check(&c->g, err);
}

int atl__op_circle_hit(atl_op_sim *sim, const atl_op_ray *r, atl_op_pt c1,
                       atl_op_pt c2, atl_op_pt *hit) {
  atl_op_pt x[2];
  double min_sq = atl__op_min_sq(sim);
  atl__op_line_circle(r->p1, r->p2, c1, atl__op_dist2(c1, c2), x);
  int ok[2];
  double lsq[2];
  for (int i = 0; i < 2; i++) {
    ok[i] = atl__op_on_ray(x[i], r->p1, r->p2) &&
            atl__op_dist2(x[i], r->p1) > min_sq;
    lsq[i] = atl__op_dist2(r->p1, x[i]);
  }
  for (int i = 0; i < 2; i++) {
    if (ok[i] && (!ok[1 - i] || lsq[i] < lsq[1 - i])) {
      *hit = x[i];
      return 1;
    }
  }
  return 0;
}

static int circle_intersect(atl_op_obj *o, atl_op_sim *sim, const atl_op_ray *r,
                            atl_op_pt *hit) {
  two_point_glass *c = (two_point_glass *)o;
  return atl__op_circle_hit(sim, r, c->p1, c->p2, hit);
}

/* Inside or outside by where the midpoint of the ray's segment to the
 * hit lies: > 0 inside. */
static double circle_side(const two_point_glass *c, const atl_op_ray *r,
                          atl_op_pt hit) {
  atl_op_pt mid = atl__op_pt((r->p1.x + hit.x) * 0.5, (r->p1.y + hit.y) * 0.5);
  return atl__op_dist2(c->p1, c->p2) - atl__op_dist2(c->p1, mid);
}

static atl_op_result circle_incident(atl_op_obj *o, atl_op_sim *sim,
                                     atl_op_ray *r, long ray_index,
                                     atl_op_pt hit, atl_op_obj *const *merging,
                                     int nmerging) {
  two_point_glass *c = (two_point_glass *)o;
  double d = circle_side(c, r, hit);
  /* The normal points out of the glass when entering, in when leaving. */
  atl_op_pt normal = d > 0 ? atl__op_pt(c->p1.x - hit.x, c->p1.y - hit.y)
                           : atl__op_pt(hit.x - c->p1.x, hit.y - c->p1.y);
  return atl__op_glass_incident(&c->g, sim, r, ray_index, hit, normal,
                                d > 0   ? 1
                                : d < 0 ? -1
                                        : NAN,
                                merging, nmerging);
}

static double circle_incident_type(atl_op_obj *o, atl_op_sim *sim,
                                   const atl_op_ray *r) {
  atl_op_pt hit;
  if (!circle_intersect(o, sim, r, &hit))
    return NAN;
  double d = circle_side((two_point_glass *)o, r, hit);
  return d > 0 ? 1 : d < 0 ? -1 : NAN;
}

static int circle_outline(const atl_op_obj *o, atl_op_outline *out) {
  const two_point_glass *c = (const two_point_glass *)o;
  int rc = atl__op_outline_circle(out, c->p1, c->p2);
  out->closed = rc == 0;
  return rc;
}

const atl_op_class atl__op_circle_glass = {
    .type = "CircleGlass",
    .flags = ATL_OP_OPTICAL | ATL_OP_GLASS | ATL_OP_MERGES_WITH_GLASS,
    .size = sizeof(two_point_glass),
    .fields = two_point_glass_fields,
    .init = two_point_glass_init,
    .intersect = circle_intersect,
    .incident = circle_incident,
    .incident_type = circle_incident_type,
    .ref_index = atl__op_glass_ref_index,
    .outline = circle_outline,
};

/* --- PlaneGlass -------------------------------------------------------- */

/* The boundary is the whole line through p1 and p2; the glass is on its
 * right-hand side, looking from p1 to p2 in screen coordinates. */
static int plane_intersect(atl_op_obj *o, atl_op_sim *sim, const atl_op_ray *r,
                           atl_op_pt *hit) {
  (void)sim;
  two_point_glass *p = (two_point_glass *)o;
  atl_op_pt x = atl__op_lines_x(r->p1, r->p2, p->p1, p->p2);
  if (!atl__op_on_ray(x, r->p1, r->p2))
    return 0;
  *hit = x;
  return 1;
}

static double plane_incident_type(atl_op_obj *o, atl_op_sim *sim,
                                  const atl_op_ray *r) {
  (void)sim;
  two_point_glass *p = (two_point_glass *)o;
  double cross = (r->p2.x - r->p1.x) * (p->p2.y - p->p1.y) -
                 (r->p2.y - r->p1.y) * (p->p2.x - p->p1.x);
  return cross > 0 ? 1 : cross < 0 ? -1 : NAN;
}

static atl_op_result plane_incident(atl_op_obj *o, atl_op_sim *sim,
                                    atl_op_ray *r, long ray_index,
                                    atl_op_pt hit, atl_op_obj *const *merging,
                                    int nmerging) {
  two_point_glass *p = (two_point_glass *)o;
  double sx = p->p2.x - p->p1.x, sy = p->p2.y - p->p1.y;
  double rdots = (r->p2.x - r->p1.x) * sx + (r->p2.y - r->p1.y) * sy;
  double ssq = sx * sx + sy * sy;
  /* The component of the ray's direction across the line, reversed. */
  atl_op_pt normal = atl__op_pt(rdots * sx - ssq * (r->p2.x - r->p1.x),
                                rdots * sy - ssq * (r->p2.y - r->p1.y));
  return atl__op_glass_incident(&p->g, sim, r, ray_index, hit, normal,
                                plane_incident_type(o, sim, r), merging,
                                nmerging);
}

/* The boundary line's stretch p1-p2; the glass is the half-plane on its
 * right (outline.h), as plane_incident_type counts it. */
static int plane_outline(const atl_op_obj *o, atl_op_outline *out) {
  const two_point_glass *p = (const two_point_glass *)o;
  out->half_plane = 1;
  return atl__op_outline_line(out, p->p1, p->p2);
}

const atl_op_class atl__op_plane_glass = {
    .type = "PlaneGlass",
    .flags = ATL_OP_OPTICAL | ATL_OP_GLASS | ATL_OP_MERGES_WITH_GLASS,
    .size = sizeof(two_point_glass),
    .fields = two_point_glass_fields,
    .init = two_point_glass_init,
    .intersect = plane_intersect,
    .incident = plane_incident,
    .incident_type = plane_incident_type,
    .ref_index = atl__op_glass_ref_index,
    .outline = plane_outline,
};
