/* The custom surfaces: upstream's BaseCustomSurface (outgoing rays given by
 * equations of the incident one) on three shapes, CustomSurface (a
 * segment), CustomArcSurface (a circular arc through three points) and
 * CustomParamSurface (a parametric curve). A one-sided surface ignores
 * rays that come from its back (incident type -1); every one merges with
 * glasses, whose indices on the two sides become n_0 and n_1. */
#include "atl-build.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "custom.h"
#include "objs.h"
#include "outline.h"

#define PI 3.14159265358979323846

/* --- BaseCustomSurface -----------------------------------------------------
 */

/* The variables every equation sees, in this order, then theta_1 .. theta_n
 * and P_1 .. P_n. */
static const char *const base_vars[] = {"theta_0", "P_0", "n_0", "n_1",
                                        "lambda",  "t",   "p"};
enum { V_THETA0, V_P0, V_N0, V_N1, V_LAMBDA, V_T, V_P, V_BASE };

/* An equation may read theta_k and P_k only of rays already computed:
 * upstream throws when it evaluates one that is not (yet) defined. */
static int check_order(const atl_op_obj *o, const atl_op_expr_t *e,
                       const char *what, int n, int j, int own_theta,
                       char **err) {
  for (int k = 1; k <= n; k++) {
    int theta_ok = k < j || (own_theta && k == j), p_ok = k < j;
    const char *bad =
        !theta_ok && atl__op_expr_uses_var(e, V_BASE + k - 1)   ? "theta"
        : !p_ok && atl__op_expr_uses_var(e, V_BASE + n + k - 1) ? "P"
                                                                : NULL;
    if (bad)
      return asprintf(err,
                      "%s: \"%s\" reads %s_%d, which is not known yet (an "
                      "equation of ray %d may read theta_k and P_k of the rays "
                      "before it, and eqnP also its own theta_%d)",
                      o->cls->type, what, bad, k, j, j),
             -EINVAL;
  }
  return 0;
}

int atl__op_out_rays_init(const atl_op_obj *o, atl_op_out_rays *out,
                          char **err) {
  if (!json_object_is_type(out->json, json_type_array))
    return asprintf(err, "%s: \"outRays\" must be an array of {eqnTheta, eqnP}",
                    o->cls->type),
           -EINVAL;
  int n = (int)json_object_array_length(out->json);
  if (n > 1000)
    return asprintf(err, "%s: \"outRays\" has more than 1000 rays",
                    o->cls->type),
           -EINVAL;
  size_t nv = V_BASE + 2 * (size_t)n;
  const char **vars = calloc(nv, sizeof(*vars));
  char *names = calloc(2 * (size_t)n + 1, 24);
  out->theta = calloc((size_t)n + 1, sizeof(*out->theta));
  out->power = calloc((size_t)n + 1, sizeof(*out->power));
  int rc = vars && names && out->theta && out->power ? 0 : -ENOMEM;
  for (int i = 0; rc == 0 && i < (int)nv; i++) {
    if (i < V_BASE) {
      vars[i] = base_vars[i];
      continue;
    }
    int k = i - V_BASE;
    char *name = names + (size_t)k * 24;
    snprintf(name, 24, "%s_%d", k < n ? "theta" : "P", k % n + 1);
    vars[i] = name;
  }
  out->n = n;
  for (int j = 0; rc == 0 && j < n; j++) {
    json_object *item = json_object_array_get_idx(out->json, (size_t)j);
    char what[2][48];
    snprintf(what[0], sizeof(what[0]), "outRays[%d].eqnTheta", j);
    snprintf(what[1], sizeof(what[1]), "outRays[%d].eqnP", j);
    if (!json_object_is_type(item, json_type_object)) {
      rc = asprintf(err,
                    "%s: \"outRays\"[%d] must be an object {\"eqnTheta\": "
                    "..., \"eqnP\": ...}",
                    o->cls->type, j) < 0
               ? -ENOMEM
               : -EINVAL;
      break;
    }
    json_object_object_foreach(item, key, val) {
      (void)val;
      if (strcmp(key, "eqnTheta") && strcmp(key, "eqnP")) {
        rc = asprintf(err,
                      "%s: \"outRays\"[%d]: unknown field \"%s\"; an "
                      "outgoing ray has eqnTheta and eqnP",
                      o->cls->type, j, key) < 0
                 ? -ENOMEM
                 : -EINVAL;
        break;
      }
    }
    if (rc == 0)
      rc = atl__op_eqn_compile(o, what[0], atl__op_json_str(item, "eqnTheta"),
                               vars, nv, &out->theta[j], err);
    if (rc == 0)
      rc = check_order(o, out->theta[j], what[0], n, j + 1, 0, err);
    if (rc == 0)
      rc = atl__op_eqn_compile(o, what[1], atl__op_json_str(item, "eqnP"), vars,
                               nv, &out->power[j], err);
    if (rc == 0)
      rc = check_order(o, out->power[j], what[1], n, j + 1, 1, err);
  }
  free(vars);
  free(names);
  return rc;
}

void atl__op_out_rays_free(atl_op_out_rays *out) {
  for (int j = 0; j < out->n; j++) {
    if (out->theta)
      atl__op_expr_free(out->theta[j]);
    if (out->power)
      atl__op_expr_free(out->power[j]);
  }
  free(out->theta);
  free(out->power);
  out->theta = out->power = NULL;
}

/* An angle into [-pi, pi), as upstream wraps it (JavaScript's % is C's
 * fmod). */
static double wrap(double a) {
  return fmod(fmod(a + PI, 2 * PI) + 2 * PI, 2 * PI) - PI;
}

/* An outgoing ray into the other medium: the merged glasses on the
 * incident side hear that it leaves them, then those on the other side
 * that it enters them (upstream's onRayExit and onRayEnter, through which
 * the gradient-index glasses keep the ray's body). */
static void cross_media(atl_op_sim *sim, atl_op_ray *ray,
                        atl_op_obj *const *merging, const signed char *side,
                        int n) {
  for (int i = 0; i < n; i++)
    if (side[i] == 1 && merging[i]->cls->exit)
      merging[i]->cls->exit(merging[i], sim, ray);
  for (int i = 0; i < n; i++)
    if (side[i] == -1 && merging[i]->cls->enter)
      merging[i]->cls->enter(merging[i], sim, ray);
}

atl_op_result atl__op_out_rays_handle(const atl_op_out_rays *out,
                                      atl_op_sim *sim, atl_op_ray *r,
                                      atl_op_pt hit, atl_op_pt normal,
                                      double pos, atl_op_obj *const *merging,
                                      int nmerging) {
  atl_op_result res = {0};
  if (out->n == 0) {
    res.absorbed = 1;
    return res;
  }
  /* The glasses whose surface coincides with this one: those the ray
   * leaves (its side) give n_0, those it enters n_1. */
  double n0 = 1, n1 = 1;
  signed char side_stack[32], *side = side_stack;
  if (nmerging > 32 && !(side = malloc((size_t)nmerging))) {
    res.absorbed = 1;
    return res;
  }
  for (int i = 0; i < nmerging; i++) {
    atl_op_obj *m = merging[i];
    double type = m->cls->incident_type(m, sim, r);
    if (type != 1 && type != -1) {
      /* An edge or a corner of a glass: where the ray goes is undefined. */
      if (side != side_stack)
        free(side);
      res.absorbed = res.undefined = 1;
      return res;
    }
    side[i] = (signed char)type;
    if (type == 1)
      n0 *= m->cls->ref_index(m, sim, hit, r);
    else
      n1 *= m->cls->ref_index(m, sim, hit, r);
  }

  double normal_angle = atan2(normal.y, normal.x);
  double ray_angle = atan2(r->p2.y - r->p1.y, r->p2.x - r->p1.x);
  double incident = normal_angle - (ray_angle + PI);
  incident = fmod(incident + 3 * PI, 2 * PI) - PI;

  size_t nv = V_BASE + 2 * (size_t)out->n;
  double stack[2][V_BASE + 16];
  double *vals[2] = {stack[0], stack[1]};
  double *heap = NULL;
  atl_op_ray stack_rays[8];
  atl_op_ray *news = stack_rays;
  if (nv > V_BASE + 16 || out->n > 4) {
    heap = malloc(sizeof(double) * nv * 2 + sizeof(atl_op_ray) * 2 * out->n);
    if (!heap) {
      if (side != side_stack)
        free(side);
      res.absorbed = 1;
      return res;
    }
    vals[0] = heap, vals[1] = heap + nv;
    news = (atl_op_ray *)(heap + 2 * nv);
  }
  for (int p = 0; p < 2; p++) {
    double *v = vals[p];
    for (size_t i = 0; i < nv; i++)
      v[i] = NAN;
    v[V_THETA0] = incident;
    v[V_P0] = p ? r->bp : r->bs;
    v[V_N0] = n0, v[V_N1] = n1;
    v[V_LAMBDA] = isnan(r->wavelength) || r->wavelength == 0 ? ATL_OP_GREEN
                                                             : r->wavelength;
    v[V_T] = pos;
    v[V_P] = p;
  }
  atl_op_ray orig = *r;
  double floor_b = atl__op_min_brightness(sim->scene);
  int nnew = 0;
  for (int i = 0; i < out->n; i++) {
    double a[2], b[2];
    for (int p = 0; p < 2; p++)
      a[p] = atl__op_expr_eval(out->theta[i], vals[p]);
    for (int p = 0; p < 2; p++)
      vals[p][V_BASE + i] = a[p];
    for (int p = 0; p < 2; p++)
      b[p] = atl__op_expr_eval(out->power[i], vals[p]);
    for (int p = 0; p < 2; p++) {
      if (!(b[p] > 0) || !isfinite(a[p]))
        b[p] = 0; /* an invalid ray, dropped below */
      vals[p][V_BASE + out->n + i] = b[p];
    }
    /* Both polarisations the same way: one ray; otherwise one each. */
    int count = a[0] == a[1] ? 1 : 2;
    for (int j = 0; j < count; j++) {
      double ang = wrap(a[j]);
      double out_angle = (normal_angle + PI) - ang;
      double bs = count == 1 ? b[0] : j == 0 ? b[0] : 0;
      double bp = count == 1 ? b[1] : j == 0 ? 0 : b[1];
      atl_op_kind kind =
          ang > -PI / 2 && ang < PI / 2 ? ATL_OP_REFRACT : ATL_OP_REFLECT;
      atl_op_pt p2 = atl__op_pt(hit.x + cos(out_angle), hit.y + sin(out_angle));
      int keep = bs + bp > floor_b;
      if (!keep)
        res.truncation += bs + bp;
      if (i == 0 && j == 0) {
        /* The first outgoing ray is the incident one, changed in place. */
        if (kind == ATL_OP_REFRACT)
          cross_media(sim, r, merging, side, nmerging);
        r->p1 = hit, r->p2 = p2, r->bs = bs, r->bp = bp;
        r->kind = kind;
        if (!keep)
          res.absorbed = 1;
      } else {
        atl_op_ray nr = atl__op_ray_make(hit, p2, bs, bp, &orig, kind);
        nr.body = orig.body;
        nr.gap = orig.gap;
        if (kind == ATL_OP_REFRACT)
          cross_media(sim, &nr, merging, side, nmerging);
        if (keep)
          news[nnew++] = nr;
      }
    }
  }
  /* Image detection cannot follow a ray that splits in two or more. */
  for (int k = 0; k < nnew; k++) {
    if (nnew > 1)
      news[k].gap = 1;
    if (atl__op_emit(sim, &news[k]) < 0)
      break;
  }
  free(heap);
  if (side != side_stack)
    free(side);
  return res;
}

/* The normal of the line through a and b against the ray's direction:
 * the direction's component across the line, reversed (unnormalised). */
static atl_op_pt line_normal(const atl_op_ray *r, atl_op_pt a, atl_op_pt b) {
  double sx = b.x - a.x, sy = b.y - a.y;
  double rx = r->p2.x - r->p1.x, ry = r->p2.y - r->p1.y;
  double rdots = rx * sx + ry * sy;
  double ssq = sx * sx + sy * sy;
  return atl__op_pt(rdots * sx - ssq * rx, rdots * sy - ssq * ry);
}

/* The ray crosses the line a-b from its front (1, the cross product of the
 * ray's direction and a->b is positive) or its back (-1); NaN along it. */
static double line_side(const atl_op_ray *r, atl_op_pt a, atl_op_pt b) {
  double c =
      (r->p2.x - r->p1.x) * (b.y - a.y) - (r->p2.y - r->p1.y) * (b.x - a.x);
  return c > 0 ? 1 : c < 0 ? -1 : NAN;
}

/* Where a hit lies on a segment, from -1 at a to 1 at b. */
static double line_pos(atl_op_pt hit, atl_op_pt a, atl_op_pt b) {
  double d1 = sqrt(atl__op_dist2(hit, a)), d2 = sqrt(atl__op_dist2(hit, b));
  return -1 + 2 * d1 / (d1 + d2);
}

/* --- CustomSurface ----------------------------------------------------------
 */

typedef struct {
  atl_op_obj base;
  atl_op_pt p1, p2, p3; /* p3: CustomArcSurface's point on the arc */
  atl_op_out_rays out;
  /* CustomArcSurface: the circle, unless the three points are collinear. */
  int arc;
  atl_op_pt c;
  double a1, a2, a3;
  int anticlockwise;
} surface;

static const atl_op_field surface_fields[] = {
    {"p1", ATL_OP_F_POINT, "null", offsetof(surface, p1)},
    {"p2", ATL_OP_F_POINT, "null", offsetof(surface, p2)},
    ATL_OP_OUT_RAYS_FIELDS(surface),
    {NULL, 0, NULL, 0},
};

static int surface_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  (void)s;
  surface *c = (surface *)o;
  return atl__op_out_rays_init(o, &c->out, err);
}

static void surface_destroy(atl_op_obj *o) {
  atl__op_out_rays_free(&((surface *)o)->out);
}

static int custom_surface_intersect(atl_op_obj *o, atl_op_sim *sim,
                                    const atl_op_ray *r, atl_op_pt *hit) {
  (void)sim;
  surface *c = (surface *)o;
  if (!c->out.two_sided && line_side(r, c->p1, c->p2) == -1)
    return 0;
  return atl__op_ray_segment(r, c->p1, c->p2, hit);
}

static atl_op_result custom_surface_incident(atl_op_obj *o, atl_op_sim *sim,
                                             atl_op_ray *r, long ray_index,
                                             atl_op_pt hit,
                                             atl_op_obj *const *merging,
                                             int nmerging) {
  (void)ray_index;
  surface *c = (surface *)o;
  return atl__op_out_rays_handle(
      &c->out, sim, r, hit, line_normal(r, c->p1, c->p2),
      line_pos(hit, c->p1, c->p2), merging, nmerging);
}

const atl_op_class atl__op_custom_surface = {
    .type = "CustomSurface",
    .flags = ATL_OP_OPTICAL | ATL_OP_MERGES_WITH_GLASS,
    .size = sizeof(surface),
    .fields = surface_fields,
    .init = surface_init,
    .intersect = custom_surface_intersect,
    .incident = custom_surface_incident,
    .destroy = surface_destroy,
    .outline = atl__op_outline_p1p2,
};

/* --- CustomArcSurface
 * --------------------------------------------------------- */

static const atl_op_field arc_fields[] = {
    {"p1", ATL_OP_F_POINT, "null", offsetof(surface, p1)},
    {"p2", ATL_OP_F_POINT, "null", offsetof(surface, p2)},
    {"p3", ATL_OP_F_POINT, "null", offsetof(surface, p3)},
    ATL_OP_OUT_RAYS_FIELDS(surface),
    {NULL, 0, NULL, 0},
};

static int arc_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  surface *c = (surface *)o;
  int rc = surface_init(o, s, err);
  if (rc != 0)
    return rc;
  c->c = atl__op_arc_center(c->p1, c->p2, c->p3);
  c->arc = isfinite(c->c.x) && isfinite(c->c.y);
  if (c->arc) {
    c->a1 = atan2(c->p1.y - c->c.y, c->p1.x - c->c.x);
    c->a2 = atan2(c->p2.y - c->c.y, c->p2.x - c->c.x);
    c->a3 = atan2(c->p3.y - c->c.y, c->p3.x - c->c.x);
    double a1 = c->a1, a2 = c->a2, a3 = c->a3;
    c->anticlockwise =
        (a2 < a3 && a3 < a1) || (a1 < a2 && a2 < a3) || (a3 < a1 && a1 < a2);
    atl__op_box_add(o, c->c, sqrt(atl__op_dist2(c->c, c->p2)));
  }
  return 0;
}

/* getIncidentData: the hit, the normal against the ray and the incident
 * type. A one-sided arc prefers the nearest hit it faces (type 1), so
 * that a ray inside a closed shape of two arcs sees the right one; a
 * two-sided arc takes the nearest. 0 when the ray misses. */
static int arc_data(const surface *c, const atl_op_sim *sim,
                    const atl_op_ray *r, atl_op_pt *hit, atl_op_pt *normal,
                    double *type) {
  double rx = r->p2.x - r->p1.x, ry = r->p2.y - r->p1.y;
  if (!c->arc) {
    atl_op_pt p = atl__op_lines_x(r->p1, r->p2, c->p1, c->p2);
    if (!(atl__op_on_segment(p, c->p1, c->p2) &&
          atl__op_on_ray(p, r->p1, r->p2)))
      return 0;
    *hit = p;
    *type = line_side(r, c->p1, c->p2);
    *normal = line_normal(r, c->p1, c->p2);
    return 1;
  }
  atl_op_pt x[2];
  atl__op_line_circle(r->p1, r->p2, c->c, atl__op_dist2(c->c, c->p2), x);
  double min_sq =
      ATL_OP_MIN_SEG_SQ * sim->scene->length_scale * sim->scene->length_scale;
  int best = -1, best_fwd = -1;
  double d[2], ty[2];
  atl_op_pt nm[2];
  for (int i = 0; i < 2; i++) {
    atl_op_pt cut = atl__op_lines_x(c->p1, c->p2, c->p3, x[i]);
    if (atl__op_on_segment(cut, c->p3, x[i]) ||
        !atl__op_on_ray(x[i], r->p1, r->p2) ||
        !(atl__op_dist2(x[i], r->p1) > min_sq))
      continue;
    double tx = -(x[i].y - c->c.y), tyy = x[i].x - c->c.x;
    if (c->anticlockwise)
      tx = -tx, tyy = -tyy;
    double cross = rx * tyy - ry * tx;
    ty[i] = cross > 0 ? 1 : cross < 0 ? -1 : NAN;
    nm[i] = atl__op_pt(c->c.x - x[i].x, c->c.y - x[i].y);
    if (rx * nm[i].x + ry * nm[i].y > 0)
      nm[i] = atl__op_pt(-nm[i].x, -nm[i].y);
    d[i] = atl__op_dist2(r->p1, x[i]);
    if (best < 0 || d[i] < d[best])
      best = i;
    if (ty[i] == 1 && (best_fwd < 0 || d[i] < d[best_fwd]))
      best_fwd = i;
  }
  if (!c->out.two_sided && best_fwd >= 0)
    best = best_fwd;
  if (best < 0)
    return 0;
  *hit = x[best];
  *normal = nm[best];
  *type = ty[best];
  return 1;
}

static int arc_intersect(atl_op_obj *o, atl_op_sim *sim, const atl_op_ray *r,
                         atl_op_pt *hit) {
  surface *c = (surface *)o;
  atl_op_pt normal;
  double type;
  if (!arc_data(c, sim, r, hit, &normal, &type))
    return 0;
  return c->out.two_sided || type != -1;
}

static atl_op_result arc_incident(atl_op_obj *o, atl_op_sim *sim, atl_op_ray *r,
                                  long ray_index, atl_op_pt hit,
                                  atl_op_obj *const *merging, int nmerging) {
  (void)ray_index;
  surface *c = (surface *)o;
  atl_op_pt p, normal = {NAN, NAN};
  double type, pos;
  arc_data(c, sim, r, &p, &normal, &type);
  if (c->arc) {
    /* The angle from p1 to the hit over the angle from p1 to p2, both
     * counted anticlockwise in [0, 2 pi), mapped to [-1, 1]. */
    double a = atan2(hit.y - c->c.y, hit.x - c->c.x);
    double a2 = c->a2 - c->a1, ai = a - c->a1;
    if (a2 < 0)
      a2 += 2 * PI;
    if (ai < 0)
      ai += 2 * PI;
    pos = fabs(a2) > 1e-10 ? -1 + 2 * ai / a2 : 0;
  } else {
    pos = line_pos(hit, c->p1, c->p2);
  }
  return atl__op_out_rays_handle(&c->out, sim, r, hit, normal, pos, merging,
                                 nmerging);
}

/* The arc p1-p3-p2, or the segment when the three are collinear. */
static int arc_surface_outline(const atl_op_obj *o, atl_op_outline *out) {
  const surface *s = (const surface *)o;
  return atl__op_outline_arc3(out, s->p1, s->p3, s->p2);
}

const atl_op_class atl__op_custom_arc_surface = {
    .type = "CustomArcSurface",
    .flags = ATL_OP_OPTICAL | ATL_OP_MERGES_WITH_GLASS,
    .size = sizeof(surface),
    .fields = arc_fields,
    .init = arc_init,
    .intersect = arc_intersect,
    .incident = arc_incident,
    .destroy = surface_destroy,
    .outline = arc_surface_outline,
};

/* --- CustomParamSurface
 * --------------------------------------------------------- */

typedef struct {
  atl_op_obj base;
  atl_op_param_curve pc;
  atl_op_out_rays out;
  atl_op_curve_hit *hits; /* scratch for the hit tests */
  int cap;
} param_surface;

static const atl_op_field param_surface_fields[] = {
    ATL_OP_PARAM_FIELDS(param_surface,
                        "[{\"eqnX\":\"50\\\\cdot\\\\cos(t)\","
                        "\"eqnY\":\"50\\\\cdot\\\\sin(t)\",\"tMin\":0,"
                        "\"tMax\":6.283185307179586,\"tStep\":0.01}]"),
    ATL_OP_OUT_RAYS_FIELDS(param_surface),
    {NULL, 0, NULL, 0},
};

static int param_surface_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  param_surface *c = (param_surface *)o;
  int rc = atl__op_param_init(o, &c->pc, s, err);
  return rc ? rc : atl__op_out_rays_init(o, &c->out, err);
}

static void param_surface_destroy(atl_op_obj *o) {
  param_surface *c = (param_surface *)o;
  atl__op_out_rays_free(&c->out);
  atl__op_poly_free(&c->pc.pl);
  free(c->hits);
}

/* The nearest hit the surface takes: none at all where the ray meets the
 * curve edge-on anywhere (upstream then returns a non-point, which its
 * ray loop ignores); a one-sided surface only takes hits it faces. */
static int param_surface_intersect(atl_op_obj *o, atl_op_sim *sim,
                                   const atl_op_ray *r, atl_op_pt *hit) {
  (void)sim;
  param_surface *c = (param_surface *)o;
  int n = atl__op_param_hits(&c->pc, r, &c->hits, &c->cap);
  int best = -1;
  double bd = INFINITY;
  for (int i = 0; i < n; i++) {
    if (isnan(c->hits[i].type))
      return 0;
    if (!c->out.two_sided && c->hits[i].type == -1)
      continue;
    double d = atl__op_dist2(r->p1, c->hits[i].p);
    if (best < 0 || d < bd)
      best = i, bd = d;
  }
  if (best < 0)
    return 0;
  *hit = c->hits[best].p;
  return 1;
}

static atl_op_result param_surface_incident(atl_op_obj *o, atl_op_sim *sim,
                                            atl_op_ray *r, long ray_index,
                                            atl_op_pt hit,
                                            atl_op_obj *const *merging,
                                            int nmerging) {
  (void)ray_index;
  param_surface *c = (param_surface *)o;
  atl_op_result res = {0};
  int n = atl__op_param_hits(&c->pc, r, &c->hits, &c->cap);
  /* The first crossing (in the curve's order) at the hit point. */
  for (int i = 0; i < n; i++) {
    atl_op_curve_hit *h = &c->hits[i];
    if (!(atl__op_dist2(hit, h->p) < 1e-10))
      continue;
    if (isnan(h->type) || isnan(h->normal.x) || isnan(h->normal.y)) {
      res.absorbed = res.undefined = 1;
      return res;
    }
    return atl__op_out_rays_handle(&c->out, sim, r, hit, h->normal, h->pos,
                                   merging, nmerging);
  }
  res.absorbed = 1;
  return res;
}

static int param_surface_outline(const atl_op_obj *o, atl_op_outline *out) {
  return atl__op_param_outline(&((const param_surface *)o)->pc, 0, out);
}

const atl_op_class atl__op_custom_param_surface = {
    .type = "CustomParamSurface",
    .flags = ATL_OP_OPTICAL | ATL_OP_MERGES_WITH_GLASS,
    .size = sizeof(param_surface),
    .fields = param_surface_fields,
    .init = param_surface_init,
    .intersect = param_surface_intersect,
    .incident = param_surface_incident,
    .destroy = param_surface_destroy,
    .outline = param_surface_outline,
};
