/* GrinGlass (a polygon) and CircleGrinGlass, on BaseGrinGlass (grin.h).
 * Both decide "inside", "outside" and "on the boundary" with their
 * intersectTol as upstream does: the polygon by a crossing count along a
 * horizontal ray and a band around each edge (in units of the edge's
 * length times distance, as upstream compares a cross product), the
 * circle by the squared distance to the centre. A GrinGlass path may
 * carry upstream's "arc" flags, which a GrinGlass ignores: its edges are
 * straight. */
#include "atl-build.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "geom.h"
#include "grin.h"
#include "outline.h"

/* --- GrinGlass --------------------------------------------------------- */

typedef struct {
  atl_op_grin gr;
  json_object *path_json;
  int not_done;
  atl_op_pt *v;
  int n;
} poly_grin;

static int poly_on_boundary(const atl_op_grin *g, atl_op_pt p3) {
  const poly_grin *pg = (const poly_grin *)g;
  double tol = g->intersect_tol;
  for (int i = 0; i < pg->n; i++) {
    atl_op_pt p1 = pg->v[i], p2 = pg->v[(i + 1) % pg->n];
    double ax = p2.x - p1.x, ay = p2.y - p1.y;
    double bx = p3.x - p1.x, by = p3.y - p1.y;
    double cross = ax * by - ay * bx;
    /* Collinear within the tolerance, and projecting into the edge. */
    if (cross - tol < 0 && cross + tol > 0) {
      double dot = ax * bx + ay * by;
      double l2 = atl__op_dist2(p1, p2);
      if (l2 - dot + tol >= 0 && dot + tol >= 0)
        return 1;
    }
  }
  return 0;
}

/* The crossing number of the horizontal ray from p3 to +x, each test
 * kept clear of the tolerance as upstream's. */
static int poly_count(const poly_grin *pg, atl_op_pt p3) {
  double tol = pg->gr.intersect_tol;
  int cnt = 0;
  for (int i = 0; i < pg->n; i++) {
    atl_op_pt p1 = pg->v[i], p2 = pg->v[(i + 1) % pg->n];
    double ymax = p1.y > p2.y ? p1.y : p2.y, ymin = p1.y < p2.y ? p1.y : p2.y;
    if (!(ymax - p3.y - tol > 0 && ymax - p3.y + tol > 0 &&
          ymin - p3.y - tol < 0 && ymin - p3.y + tol < 0))
      continue;
    if (p1.x == p2.x && p1.x - p3.x + tol > 0 && p1.x - p3.x - tol > 0) {
      cnt++;
    } else {
      double x = p1.x + ((p3.y - p1.y) / (p2.y - p1.y)) * (p2.x - p1.x);
      if (x - p3.x - tol > 0 && x - p3.x + tol > 0)
        cnt++;
    }
  }
  return cnt;
}

static int poly_inside(const atl_op_grin *g, atl_op_pt p) {
  return !poly_on_boundary(g, p) && poly_count((const poly_grin *)g, p) % 2;
}

static int poly_outside(const atl_op_grin *g, atl_op_pt p) {
  return !poly_on_boundary(g, p) &&
         poly_count((const poly_grin *)g, p) % 2 == 0;
}

static const atl_op_grin_shape poly_shape = {poly_inside, poly_outside,
                                             poly_on_boundary};

static int poly_intersect(atl_op_obj *o, atl_op_sim *sim, const atl_op_ray *r,
                          atl_op_pt *hit) {
  poly_grin *pg = (poly_grin *)o;
  if (pg->not_done)
    return 0;
  if (atl__op_grin_step_hit(&pg->gr, r, hit))
    return 1;
  double min_sq = atl__op_min_sq(sim), best = INFINITY;
  int found = 0;
  for (int i = 0; i < pg->n; i++) {
    atl_op_pt p;
    double lsq;
    if (atl__op_grin_ray_segment(r, pg->v[i], pg->v[(i + 1) % pg->n], min_sq,
                                 &p, &lsq) &&
        lsq < best) {
      best = lsq;
      *hit = p;
      found = 1;
    }
  }
  return found;
}

/* getIncidentData, as Glass's with straight edges: the nearest edge hit
 * and its normal against the ray, NaN near a vertex, 0 where an even
 * number of the polygon's own edges meet there, otherwise the parity of a
 * perturbed copy's crossings (two draws from the scene's generator). */
static double poly_incident_data(poly_grin *pg, atl_op_sim *sim,
                                 const atl_op_ray *r, atl_op_pt *s_point,
                                 atl_op_pt *normal, int *have) {
  double min_sq = atl__op_min_sq(sim), best = INFINITY;
  atl_op_arc4_t *rng = &sim->scene->rng;
  double jx = atl__op_arc4_next(rng) * 1e-5;
  double jy = atl__op_arc4_next(rng) * 1e-5;
  atl_op_pt b2 = atl__op_pt(r->p2.x + jx, r->p2.y + jy);
  int mult = 1, count = 0, near = 0;
  double rx = r->p2.x - r->p1.x, ry = r->p2.y - r->p1.y;
  *have = 0;
  *normal = atl__op_pt(NAN, NAN);
  for (int i = 0; i < pg->n; i++) {
    atl_op_pt s1 = pg->v[i], s2 = pg->v[(i + 1) % pg->n];
    atl_op_pt rp = atl__op_lines_x(r->p1, r->p2, s1, s2);
    atl_op_pt rp2 = atl__op_lines_x(r->p1, b2, s1, s2);
    int found = atl__op_on_segment(rp, s1, s2) &&
                atl__op_on_ray(rp, r->p1, r->p2) &&
                atl__op_dist2(r->p1, rp) > min_sq;
    if (atl__op_on_segment(rp2, s1, s2) && atl__op_on_ray(rp2, r->p1, b2) &&
        atl__op_dist2(r->p1, rp2) > min_sq)
      count++;
    if (!found)
      continue;
    double lsq = atl__op_dist2(r->p1, rp);
    int near_temp =
        atl__op_dist2(rp, s1) < min_sq || atl__op_dist2(rp, s2) < min_sq;
    if (*have && atl__op_dist2(rp, *s_point) < min_sq) {
      mult++; /* the polygon's own edges coincide here */
    } else if (lsq < best) {
      double sx = s2.x - s1.x, sy = s2.y - s1.y;
      double rdots = rx * sx + ry * sy, ssq = sx * sx + sy * sy;
      best = lsq;
      *s_point = rp;
      *have = 1;
      *normal = atl__op_pt(rdots * sx - ssq * rx, rdots * sy - ssq * ry);
      near = near_temp;
      mult = 1;
    }
  }
  if (near)
    return NAN;
  if (mult % 2 == 0)
    return 0;
  return count % 2 == 1 ? 1 : -1;
}

static double poly_incident_type(atl_op_obj *o, atl_op_sim *sim,
                                 const atl_op_ray *r) {
  atl_op_pt s, n;
  int have;
  return poly_incident_data((poly_grin *)o, sim, r, &s, &n, &have);
}

static atl_op_result poly_incident(atl_op_obj *o, atl_op_sim *sim,
                                   atl_op_ray *r, long ray_index, atl_op_pt hit,
                                   atl_op_obj *const *merging, int nmerging) {
  poly_grin *pg = (poly_grin *)o;
  atl_op_grin *g = &pg->gr;
  atl_op_result res = {0};
  if ((poly_inside(g, r->p1) || poly_outside(g, r->p1)) &&
      poly_on_boundary(g, hit)) {
    atl_op_pt s, normal;
    int have;
    double type = poly_incident_data(pg, sim, r, &s, &normal, &have);
    if (!have && (type == 1 || type == -1 || type == 0))
      return atl__op_grin_absorb_after_merging(g, sim, r, merging, nmerging);
    return atl__op_grin_boundary(g, sim, r, ray_index, hit, s, normal, type,
                                 merging, nmerging);
  }
  atl__op_grin_advance(g, sim, r, hit);
  return res;
}

static const atl_op_field poly_grin_fields[] = {
    {"path", ATL_OP_F_JSON, "[]", offsetof(poly_grin, path_json)},
    {"notDone", ATL_OP_F_BOOL, "false", offsetof(poly_grin, not_done)},
    ATL_OP_GRIN_FIELDS(poly_grin, ATL_OP_GRIN_DEF_WAVE, "0.001"),
    {NULL, 0, NULL, 0},
};

static int poly_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  (void)s;
  poly_grin *pg = (poly_grin *)o;
  atl_op_vertex *v = NULL;
  int rc = atl__op_path_read(pg->path_json, "GrinGlass", &v, &pg->n, err);
  json_object_put(pg->path_json);
  pg->path_json = NULL;
  if (rc != 0)
    return rc;
  if (pg->n < 3 && !pg->not_done) {
    free(v);
    return asprintf(err,
                    "GrinGlass: \"path\" needs at least 3 vertices (it "
                    "has %d)",
                    pg->n),
           -EINVAL;
  }
  pg->v = calloc((size_t)pg->n + 1, sizeof(*pg->v));
  if (!pg->v) {
    free(v);
    return -ENOMEM;
  }
  for (int i = 0; i < pg->n; i++) {
    pg->v[i] = v[i].p;
    atl__op_box_add(o, v[i].p, 0);
  }
  free(v);
  return atl__op_grin_init(&pg->gr, &poly_shape, err);
}

static void poly_destroy(atl_op_obj *o) {
  poly_grin *pg = (poly_grin *)o;
  atl__op_grin_destroy(&pg->gr);
  free(pg->v);
}

/* Straight edges between the vertices (arc flags are ignored, as the hit
 * test ignores them), closed. */
static int poly_outline(const atl_op_obj *o, atl_op_outline *out) {
  const poly_grin *pg = (const poly_grin *)o;
  int rc = 0;
  for (int i = 0; i < pg->n && rc == 0; i++)
    rc = atl__op_outline_line(out, pg->v[i], pg->v[(i + 1) % pg->n]);
  if (rc == 0 && pg->n >= 3)
    atl__op_outline_close(out);
  return rc;
}

const atl_op_class atl__op_grin_glass = {
    .type = "GrinGlass",
    .flags =
        ATL_OP_OPTICAL | ATL_OP_GLASS | ATL_OP_MERGES_WITH_GLASS | ATL_OP_GRIN,
    .size = sizeof(poly_grin),
    .fields = poly_grin_fields,
    .init = poly_init,
    .intersect = poly_intersect,
    .incident = poly_incident,
    .incident_type = poly_incident_type,
    .ref_index = atl__op_grin_ref_index,
    .enter = atl__op_grin_enter,
    .exit = atl__op_grin_exit,
    .destroy = poly_destroy,
    .outline = poly_outline,
};

/* --- CircleGrinGlass --------------------------------------------------- */

typedef struct {
  atl_op_grin gr;
  atl_op_pt p1, p2; /* the centre and a point on the circle */
} circle_grin;

/* The squared distance to the centre less the squared radius, the
 * quantity upstream compares with the tolerance. */
static double circle_excess(const circle_grin *c, atl_op_pt p) {
  return atl__op_dist2(c->p1, p) - atl__op_dist2(c->p1, c->p2);
}

static int circle_inside(const atl_op_grin *g, atl_op_pt p) {
  double d = circle_excess((const circle_grin *)g, p);
  return d - g->intersect_tol < 0 && d + g->intersect_tol < 0;
}

static int circle_outside(const atl_op_grin *g, atl_op_pt p) {
  double d = circle_excess((const circle_grin *)g, p);
  return d - g->intersect_tol > 0 && d + g->intersect_tol > 0;
}

static int circle_on_boundary(const atl_op_grin *g, atl_op_pt p) {
  double d = circle_excess((const circle_grin *)g, p);
  return d - g->intersect_tol < 0 && d + g->intersect_tol > 0;
}

static const atl_op_grin_shape circle_shape = {circle_inside, circle_outside,
                                               circle_on_boundary};

static int circle_intersect(atl_op_obj *o, atl_op_sim *sim, const atl_op_ray *r,
                            atl_op_pt *hit) {
  circle_grin *c = (circle_grin *)o;
  return atl__op_grin_step_hit(&c->gr, r, hit) ||
         atl__op_circle_hit(sim, r, c->p1, c->p2, hit);
}

/* Leaving (1) or entering (-1) by where the midpoint of the ray's start
 * and the hit lies; NaN on the circle itself. */
static double circle_side(const circle_grin *c, const atl_op_ray *r,
                          atl_op_pt hit) {
  atl_op_pt mid = atl__op_pt((r->p1.x + hit.x) * 0.5, (r->p1.y + hit.y) * 0.5);
  double d = atl__op_dist2(c->p1, c->p2) - atl__op_dist2(c->p1, mid);
  return d > 0 ? 1 : d < 0 ? -1 : NAN;
}

static double circle_incident_type(atl_op_obj *o, atl_op_sim *sim,
                                   const atl_op_ray *r) {
  circle_grin *c = (circle_grin *)o;
  atl_op_pt hit;
  if (!atl__op_circle_hit(sim, r, c->p1, c->p2, &hit))
    return NAN;
  return circle_side(c, r, hit);
}

static atl_op_result circle_incident(atl_op_obj *o, atl_op_sim *sim,
                                     atl_op_ray *r, long ray_index,
                                     atl_op_pt hit, atl_op_obj *const *merging,
                                     int nmerging) {
  circle_grin *c = (circle_grin *)o;
  atl_op_grin *g = &c->gr;
  atl_op_result res = {0};
  if ((circle_inside(g, r->p1) || circle_outside(g, r->p1)) &&
      circle_on_boundary(g, hit)) {
    double type = circle_side(c, r, hit);
    /* The normal points out when leaving, in when entering. */
    atl_op_pt normal = type == 1 ? atl__op_pt(c->p1.x - hit.x, c->p1.y - hit.y)
                                 : atl__op_pt(hit.x - c->p1.x, hit.y - c->p1.y);
    return atl__op_grin_boundary(g, sim, r, ray_index, hit, hit, normal, type,
                                 merging, nmerging);
  }
  atl__op_grin_advance(g, sim, r, hit);
  return res;
}

static const atl_op_field circle_grin_fields[] = {
    {"p1", ATL_OP_F_POINT, "null", offsetof(circle_grin, p1)},
    {"p2", ATL_OP_F_POINT, "null", offsetof(circle_grin, p2)},
    ATL_OP_GRIN_FIELDS(circle_grin, ATL_OP_GRIN_DEF_BELL, "0.001"),
    {NULL, 0, NULL, 0},
};

static int circle_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  (void)s;
  circle_grin *c = (circle_grin *)o;
  if (c->p1.x == c->p2.x && c->p1.y == c->p2.y)
    return asprintf(err, "CircleGrinGlass: \"p1\" and \"p2\" must differ (p1 "
                         "is the centre, p2 a point on the circle)"),
           -EINVAL;
  atl__op_box_add(o, c->p1, sqrt(atl__op_dist2(c->p1, c->p2)));
  return atl__op_grin_init(&c->gr, &circle_shape, err);
}

static void circle_destroy(atl_op_obj *o) {
  atl__op_grin_destroy(&((circle_grin *)o)->gr);
}

static int circle_outline(const atl_op_obj *o, atl_op_outline *out) {
  const circle_grin *c = (const circle_grin *)o;
  int rc = atl__op_outline_circle(out, c->p1, c->p2);
  out->closed = rc == 0;
  return rc;
}

const atl_op_class atl__op_circle_grin_glass = {
    .type = "CircleGrinGlass",
    .flags =
        ATL_OP_OPTICAL | ATL_OP_GLASS | ATL_OP_MERGES_WITH_GLASS | ATL_OP_GRIN,
    .size = sizeof(circle_grin),
    .fields = circle_grin_fields,
    .init = circle_init,
    .intersect = circle_intersect,
    .incident = circle_incident,
    .incident_type = circle_incident_type,
    .ref_index = atl__op_grin_ref_index,
    .enter = atl__op_grin_enter,
    .exit = atl__op_grin_exit,
    .destroy = circle_destroy,
    .outline = circle_outline,
};
