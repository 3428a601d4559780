/* Glass (a closed path of line segments and circular arcs) and
 * SphericalLens, which is a Glass whose path may be built from lens
 * parameters (objs_lens.c does the maths). Whether a ray enters or
 * leaves is decided as upstream does: by counting how often a slightly
 * perturbed copy of the ray crosses the boundary, the perturbation drawn
 * from the scene's random generator, two draws per decision. */
#include "atl-build.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "geom.h"
#include "glass.h"
#include "outline.h"

enum { PIECE_NONE, PIECE_LINE, PIECE_ARC };

/* Piece i of a path, starting at vertex i: a segment to the next vertex,
 * an arc through the next vertex to the one after (or the chord, when
 * those three are collinear), or nothing (vertex i is an arc middle). */
typedef struct {
  int kind;
  atl_op_pt s1, s2; /* the ends */
  atl_op_pt mid;    /* an arc's middle vertex */
  atl_op_pt center;
  double r_sq;
} piece;

typedef struct {
  atl_op_glass g;
  json_object *path_json;
  int not_done;
  /* SphericalLens's parameters, used when it has no path. */
  char *def_by;
  json_object *p1_json, *p2_json, *params_json;
  atl_op_vertex *path;
  piece *pieces;
  int n;
} path_glass;

static int path_fail(char **err, const char *what, int i, const char *msg) {
  if (asprintf(err, "%s: \"path\"[%d] %s", what, i, msg) < 0)
    *err = NULL;
  return -EINVAL;
}

static int num_field(json_object *o, const char *key, double *out) {
  json_object *v;
  if (!json_object_object_get_ex(o, key, &v) ||
      !(json_object_is_type(v, json_type_double) ||
        json_object_is_type(v, json_type_int)))
    return 0;
  *out = json_object_get_double(v);
  return isfinite(*out);
}

int atl__op_path_read(json_object *j, const char *what, atl_op_vertex **out,
                      int *n, char **err) {
  *out = NULL;
  *n = 0;
  if (!json_object_is_type(j, json_type_array)) {
    if (asprintf(err,
                 "%s: \"path\" must be an array of {\"x\", \"y\", "
                 "\"arc\"} vertices",
                 what) < 0)
      *err = NULL;
    return -EINVAL;
  }
  int len = (int)json_object_array_length(j);
  atl_op_vertex *v = calloc((size_t)len + 1, sizeof(*v));
  if (!v)
    return -ENOMEM;
  for (int i = 0; i < len; i++) {
    json_object *e = json_object_array_get_idx(j, (size_t)i), *arc;
    if (!json_object_is_type(e, json_type_object) ||
        !num_field(e, "x", &v[i].p.x) || !num_field(e, "y", &v[i].p.y)) {
      free(v);
      return path_fail(err, what, i, "must be {\"x\": number, \"y\": number}");
    }
    json_object_object_foreach(e, key, val) {
      (void)val;
      if (strcmp(key, "x") && strcmp(key, "y") && strcmp(key, "arc")) {
        free(v);
        return path_fail(err, what, i,
                         "has an unknown key; a vertex has x, y and arc");
      }
    }
    if (json_object_object_get_ex(e, "arc", &arc)) {
      if (!json_object_is_type(arc, json_type_boolean)) {
        free(v);
        return path_fail(err, what, i, "\"arc\" must be true or false");
      }
      v[i].arc = json_object_get_boolean(arc);
    }
  }
  *out = v;
  *n = len;
  return 0;
}

/* Precomputes the pieces; upstream recomputes them per ray with the same
 * formulas, so the numbers are the same. */
static int pieces_build(path_glass *pg) {
  int n = pg->n;
  pg->pieces = calloc((size_t)n + 1, sizeof(*pg->pieces));
  if (!pg->pieces)
    return -ENOMEM;
  for (int i = 0; i < n; i++) {
    const atl_op_vertex *a = &pg->path[i], *b = &pg->path[(i + 1) % n];
    piece *pc = &pg->pieces[i];
    if (b->arc && !a->arc) {
      pc->s1 = a->p;
      pc->s2 = pg->path[(i + 2) % n].p;
      pc->mid = b->p;
      pc->center = atl__op_arc_center(pc->s1, pc->s2, pc->mid);
      if (isfinite(pc->center.x) && isfinite(pc->center.y)) {
        pc->kind = PIECE_ARC;
        pc->r_sq = atl__op_dist2(pc->center, pc->s2);
      } else {
        pc->kind = PIECE_LINE; /* a straight "arc": its chord */
      }
    } else if (!b->arc && !a->arc) {
      pc->kind = PIECE_LINE;
      pc->s1 = a->p;
      pc->s2 = b->p;
    }
    /* The box: every vertex, and an arc's whole circle. */
    atl__op_box_add(&pg->g.base, a->p, 0);
    if (pc->kind == PIECE_ARC)
      atl__op_box_add(&pg->g.base, pc->center, sqrt(pc->r_sq));
  }
  return 0;
}

/* The crossings of the ray from a through b with a piece: an arc's two
 * line-circle points (ok when on the arc, ahead of the ray and past the
 * minimal segment; on_ray when merely ahead), a segment's one point.
 * Returns the number of candidates. */
static inline __attribute__((always_inline)) int
piece_cross(const piece *pc, atl_op_pt a, atl_op_pt b, double min_sq,
            atl_op_pt x[2], int ok[2], int on_ray[2], double lsq[2]) {
  if (pc->kind == PIECE_ARC) {
    atl__op_line_circle(a, b, pc->center, pc->r_sq, x);
    for (int k = 0; k < 2; k++) {
      atl_op_pt c = atl__op_lines_x(pc->s1, pc->s2, pc->mid, x[k]);
      on_ray[k] = atl__op_on_ray(x[k], a, b);
      /* On the arc: the chord does not separate x from the middle. */
      ok[k] = on_ray[k] && !atl__op_on_segment(c, pc->mid, x[k]) &&
              atl__op_dist2(x[k], a) > min_sq;
      lsq[k] = atl__op_dist2(a, x[k]);
    }
    return 2;
  }
  if (pc->kind == PIECE_LINE) {
    /* Most segments are clearly on one side of the ray's line, or behind
     * its start: then no point of theirs is a hit, and the intersection
     * (two divisions) is skipped. "Clearly" is by a margin far above the
     * roundings of these products, so the skip never changes an answer
     * the full test would give. */
    double dx = b.x - a.x, dy = b.y - a.y;
    double ux = pc->s1.x - a.x, uy = pc->s1.y - a.y;
    double vx = pc->s2.x - a.x, vy = pc->s2.y - a.y;
    double c1 = dx * uy - dy * ux, c2 = dx * vy - dy * vx;
    double e1 = dx * ux + dy * uy, e2 = dx * vx + dy * vy;
    double tol = 1e-9 * (fabs(dx) + fabs(dy)) *
                 (fabs(ux) + fabs(uy) + fabs(vx) + fabs(vy));
    if ((c1 > tol && c2 > tol) || (c1 < -tol && c2 < -tol) ||
        (e1 < -tol && e2 < -tol)) {
      ok[0] = on_ray[0] = 0;
      lsq[0] = INFINITY;
      x[0] = atl__op_pt(NAN, NAN);
      return 1;
    }
    x[0] = atl__op_lines_x(a, b, pc->s1, pc->s2);
    on_ray[0] = atl__op_on_ray(x[0], a, b);
    lsq[0] = atl__op_dist2(a, x[0]);
    ok[0] = atl__op_on_segment(x[0], pc->s1, pc->s2) && on_ray[0] &&
            lsq[0] > min_sq;
    return 1;
  }
  return 0;
}

/* The ray's nearest hit on a piece, with the normal against the ray and
 * whether the hit is within the minimal segment of the piece's ends (a
 * vertex, where the surface has no defined normal). */
static inline __attribute__((always_inline)) int
piece_hit(const piece *pc, const atl_op_ray *r, double min_sq, atl_op_pt *hit,
          double *lsq_out, atl_op_pt *normal, int *near_edge) {
  atl_op_pt x[2];
  int ok[2], on_ray[2], found = 0;
  double lsq[2];
  int n = piece_cross(pc, r->p1, r->p2, min_sq, x, ok, on_ray, lsq);
  if (n == 2) {
    for (int k = 0; k < 2; k++) {
      if (!(ok[k] && (!ok[1 - k] || lsq[k] < lsq[1 - k]) && lsq[k] > min_sq))
        continue;
      found = 1;
      *hit = x[k];
      *lsq_out = lsq[k];
      /* Entering the circle when the other crossing lies further on. */
      if (on_ray[1 - k] && lsq[k] < lsq[1 - k])
        *normal = atl__op_pt(x[k].x - pc->center.x, x[k].y - pc->center.y);
      else
        *normal = atl__op_pt(pc->center.x - x[k].x, pc->center.y - x[k].y);
    }
  } else if (n == 1 && ok[0]) {
    found = 1;
    *hit = x[0];
    *lsq_out = lsq[0];
    double sx = pc->s2.x - pc->s1.x, sy = pc->s2.y - pc->s1.y;
    double rx = r->p2.x - r->p1.x, ry = r->p2.y - r->p1.y;
    double rdots = rx * sx + ry * sy, ssq = sx * sx + sy * sy;
    *normal = atl__op_pt(rdots * sx - ssq * rx, rdots * sy - ssq * ry);
  }
  if (found)
    *near_edge = atl__op_dist2(*hit, pc->s1) < min_sq ||
                 atl__op_dist2(*hit, pc->s2) < min_sq;
  return found;
}

static int path_intersect(atl_op_obj *o, atl_op_sim *sim, const atl_op_ray *r,
                          atl_op_pt *hit) {
  path_glass *pg = (path_glass *)o;
  if (pg->not_done || !pg->pieces)
    return 0;
  double min_sq = atl__op_min_sq(sim), best = INFINITY;
  int found = 0;
  for (int i = 0; i < pg->n; i++) {
    atl_op_pt p, normal;
    double lsq;
    int near_edge;
    if (piece_hit(&pg->pieces[i], r, min_sq, &p, &lsq, &normal, &near_edge) &&
        lsq < best) {
      best = lsq;
      *hit = p;
      found = 1;
    }
  }
  return found;
}

/* getIncidentData: the normal at the nearest hit and the incident type:
 * NaN at a vertex, 0 where an even number of the path's own pieces meet
 * at the hit (they cancel), otherwise by the parity of the perturbed
 * ray's crossings (odd: from inside). */
static double path_incident_data(path_glass *pg, atl_op_sim *sim,
                                 const atl_op_ray *r, atl_op_pt *normal) {
  double min_sq = atl__op_min_sq(sim), best = INFINITY;
  atl_op_arc4_t *rng = &sim->scene->rng;
  double jx = atl__op_arc4_next(rng) * 1e-5;
  double jy = atl__op_arc4_next(rng) * 1e-5;
  atl_op_pt b2 = atl__op_pt(r->p2.x + jx, r->p2.y + jy);
  atl_op_pt s_point = {0, 0};
  int have = 0, multiplicity = 1, crossings = 0, near = 0;
  *normal = atl__op_pt(NAN, NAN);
  for (int i = 0; i < pg->n; i++) {
    const piece *pc = &pg->pieces[i];
    atl_op_pt p, nrm, x[2];
    double lsq, lsq2[2];
    int near_temp, ok[2], on_ray[2];
    int found = piece_hit(pc, r, min_sq, &p, &lsq, &nrm, &near_temp);
    int k = piece_cross(pc, r->p1, b2, min_sq, x, ok, on_ray, lsq2);
    while (k-- > 0)
      crossings += ok[k] && lsq2[k] > min_sq;
    if (!found)
      continue;
    if (have && atl__op_dist2(p, s_point) < min_sq) {
      multiplicity++; /* the path's own surfaces coincide here */
    } else if (lsq < best) {
      best = lsq;
      s_point = p;
      have = 1;
      *normal = nrm;
      near = near_temp;
      multiplicity = 1;
    }
  }
  if (near)
    return NAN;
  if (multiplicity % 2 == 0)
    return 0;
  return crossings % 2 == 1 ? 1 : -1;
}

static double path_incident_type(atl_op_obj *o, atl_op_sim *sim,
                                 const atl_op_ray *r) {
  atl_op_pt normal;
  path_glass *pg = (path_glass *)o;
  if (!pg->pieces)
    return -1; /* upstream: no crossings, so "from outside" */
  return path_incident_data(pg, sim, r, &normal);
}

static atl_op_result path_incident(atl_op_obj *o, atl_op_sim *sim,
                                   atl_op_ray *r, long ray_index, atl_op_pt hit,
                                   atl_op_obj *const *merging, int nmerging) {
  path_glass *pg = (path_glass *)o;
  atl_op_pt normal;
  double type = path_incident_data(pg, sim, r, &normal);
  return atl__op_glass_incident(&pg->g, sim, r, ray_index, hit, normal, type,
                                merging, nmerging);
}

static void path_destroy(atl_op_obj *o) {
  path_glass *pg = (path_glass *)o;
  free(pg->path);
  free(pg->pieces);
  /* The fields themselves (path_json, def_by, ...) are the loader's. */
}

/* The pieces as edges: segments, and arcs exactly (through the middle
 * vertex); a path whose pieces chain round is closed. */
static int path_outline(const atl_op_obj *o, atl_op_outline *out) {
  const path_glass *pg = (const path_glass *)o;
  int rc = 0;
  for (int i = 0; i < pg->n && rc == 0; i++) {
    const piece *pc = &pg->pieces[i];
    if (pc->kind == PIECE_ARC)
      rc = atl__op_outline_arc3(out, pc->s1, pc->mid, pc->s2);
    else if (pc->kind == PIECE_LINE)
      rc = atl__op_outline_line(out, pc->s1, pc->s2);
  }
  if (rc == 0)
    atl__op_outline_close(out);
  return rc;
}

/* --- Glass ------------------------------------------------------------- */

static const atl_op_field glass_fields[] = {
    {"path", ATL_OP_F_JSON, "[]", offsetof(path_glass, path_json)},
    {"notDone", ATL_OP_F_BOOL, "false", offsetof(path_glass, not_done)},
    ATL_OP_GLASS_FIELDS(path_glass),
    {NULL, 0, NULL, 0},
};

static int glass_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  (void)s;
  path_glass *pg = (path_glass *)o;
  int rc = atl__op_glass_check(&pg->g, err);
  if (rc == 0)
    rc = atl__op_path_read(pg->path_json, "Glass", &pg->path, &pg->n, err);
  json_object_put(pg->path_json);
  pg->path_json = NULL;
  if (rc == 0 && pg->n < 3 && !pg->not_done)
    return asprintf(err,
                    "Glass: \"path\" needs at least 3 vertices (it has "
                    "%d)",
                    pg->n),
           -EINVAL;
  return rc == 0 ? pieces_build(pg) : rc;
}

const atl_op_class atl__op_glass_poly = {
    .type = "Glass",
    .flags = ATL_OP_OPTICAL | ATL_OP_GLASS | ATL_OP_MERGES_WITH_GLASS,
    .size = sizeof(path_glass),
    .fields = glass_fields,
    .init = glass_init,
    .intersect = path_intersect,
    .incident = path_incident,
    .incident_type = path_incident_type,
    .ref_index = atl__op_glass_ref_index,
    .destroy = path_destroy,
    .outline = path_outline,
};

/* --- SphericalLens ----------------------------------------------------- */

static const atl_op_field lens_fields[] = {
    {"path", ATL_OP_F_JSON, "null", offsetof(path_glass, path_json)},
    {"defBy", ATL_OP_F_STR, "\"DR1R2\"", offsetof(path_glass, def_by)},
    {"p1", ATL_OP_F_JSON, "null", offsetof(path_glass, p1_json)},
    {"p2", ATL_OP_F_JSON, "null", offsetof(path_glass, p2_json)},
    {"params", ATL_OP_F_JSON, "null", offsetof(path_glass, params_json)},
    ATL_OP_GLASS_FIELDS(path_glass),
    {NULL, 0, NULL, 0},
};

static int lens_fail(char **err, const char *msg) {
  if (asprintf(err, "SphericalLens: %s", msg) < 0)
    *err = NULL;
  return -EINVAL;
}

/* Builds the path from p1, p2 and params as upstream's constructor does
 * when the JSON has no path. */
static int lens_build(path_glass *pg, const atl_op_scene *s, char **err) {
  atl_op_pt p1, p2;
  double d, a, b;
  int dr = strcmp(pg->def_by, "DR1R2") == 0;
  const char *ka = dr ? "r1" : "ffd", *kb = dr ? "r2" : "bfd";
  if (!json_object_is_type(pg->p1_json, json_type_object) ||
      !num_field(pg->p1_json, "x", &p1.x) ||
      !num_field(pg->p1_json, "y", &p1.y) ||
      !json_object_is_type(pg->p2_json, json_type_object) ||
      !num_field(pg->p2_json, "x", &p2.x) ||
      !num_field(pg->p2_json, "y", &p2.y))
    return lens_fail(err, "without a \"path\", \"p1\" and \"p2\" must be "
                          "points {\"x\": number, \"y\": number} (the ends "
                          "of the lens's middle line)");
  if (p1.x == p2.x && p1.y == p2.y)
    return lens_fail(err, "\"p1\" and \"p2\" must differ");
  if (!json_object_is_type(pg->params_json, json_type_object) ||
      !num_field(pg->params_json, "d", &d) ||
      !num_field(pg->params_json, ka, &a) ||
      !num_field(pg->params_json, kb, &b)) {
    if (asprintf(err,
                 "SphericalLens: \"params\" must be {\"d\", \"%s\", \"%s\"} "
                 "with finite numbers (defBy is \"%s\")",
                 ka, kb, pg->def_by) < 0)
      *err = NULL;
    return -EINVAL;
  }
  atl_op_lens_path lp;
  int rc;
  if (dr) {
    rc = atl__op_lens_dr1r2(p1, p2, d, a, b, &lp);
  } else {
    double n = pg->g.ref_index;
    if (s->simulate_colors) /* the index at 546 nm, as upstream */
      n = pg->g.ref_index + pg->g.cauchy_b / (546.0 * 546 * 1e-6);
    rc = atl__op_lens_dffdbfd(p1, p2, d, a, b, n, &lp);
  }
  if (rc < 0) {
    if (asprintf(err,
                 "SphericalLens: invalid lens parameters: \"params\" d=%g, "
                 "%s=%g, %s=%g give no lens for the height |p2 - p1| = %g",
                 d, ka, a, kb, b, sqrt(atl__op_dist2(p1, p2))) < 0)
      *err = NULL;
    return -EINVAL;
  }
  pg->path = malloc(sizeof(lp.v));
  if (!pg->path)
    return -ENOMEM;
  memcpy(pg->path, lp.v, sizeof(lp.v));
  pg->n = 6;
  return 0;
}

static int lens_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  path_glass *pg = (path_glass *)o;
  int rc = atl__op_glass_check(&pg->g, err);
  if (rc != 0)
    return rc;
  if (!pg->def_by ||
      (strcmp(pg->def_by, "DR1R2") && strcmp(pg->def_by, "DFfdBfd")))
    return lens_fail(err, "\"defBy\" must be \"DR1R2\" (params d, r1, r2) or "
                          "\"DFfdBfd\" (params d, ffd, bfd)");
  if (pg->path_json) {
    rc = atl__op_path_read(pg->path_json, "SphericalLens", &pg->path, &pg->n,
                           err);
    if (rc == 0 && pg->n < 3)
      return lens_fail(err, "\"path\" needs at least 3 vertices");
  } else if (pg->p1_json || pg->p2_json) {
    rc = lens_build(pg, s, err);
  } else {
    return lens_fail(err, "needs either a \"path\", or \"p1\", \"p2\" and "
                          "\"params\" to build it from");
  }
  return rc == 0 ? pieces_build(pg) : rc;
}

const atl_op_class atl__op_spherical_lens = {
    .type = "SphericalLens",
    .flags = ATL_OP_OPTICAL | ATL_OP_GLASS | ATL_OP_MERGES_WITH_GLASS,
    .size = sizeof(path_glass),
    .fields = lens_fields,
    .init = lens_init,
    .intersect = path_intersect,
    .incident = path_incident,
    .incident_type = path_incident_type,
    .ref_index = atl__op_glass_ref_index,
    .destroy = path_destroy,
    .outline = path_outline,
};
