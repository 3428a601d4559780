/* BaseGrinGlass (grin.h): the equations of a gradient-index glass, the
 * bodies rays carry through overlapping ones, the step of the ray
 * equation, and the parts of checkRayIntersects and onRayIncident that
 * the four shapes share.
 *
 * Bodies. Upstream gives a ray a bodyMergingObj: the functions n, dn/dx,
 * dn/dy and alpha of the region it is in, built when the ray enters or
 * leaves a glass as the product (or quotient) of the old functions and the
 * glass's, with the product rule for the gradient. With the scene's
 * symbolicBodyMerging it builds the same product as a formula (mathjs
 * simplify and derivative) instead of as closures. Both are the same
 * function, so the rays are the same up to rounding; upstream's option
 * changes how long the JavaScript takes, not where light goes. Here a body
 * is the list of glasses with their exponents (+1 entered, -1 left),
 * interned in a table the simulation owns so that a ray carries a plain
 * handle, and evaluated by folding the factors with upstream's product
 * and quotient rules in the order of the scene's objects. Leaving a glass
 * one entered cancels its factor: upstream keeps n/n, which is exactly 1,
 * and a gradient that differs from 0 by rounding only. */
#include "atl-build.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "geom.h"
#include "grin.h"

/* More overlapping GRIN glasses than this at one point is refused with a
 * message rather than given a growing structure per ray. */
#define MAX_FACTORS 16

typedef struct {
  int n;
  atl_op_grin *g[MAX_FACTORS]; /* in the order of the scene's objects */
  int e[MAX_FACTORS];          /* nonzero exponents */
} body_t;

struct atl_op_bodies {
  body_t *b;
  int n, cap;
};

void atl__op_bodies_free(struct atl_op_bodies *b) {
  if (!b)
    return;
  free(b->b);
  free(b);
}

static void sim_fail(atl_op_sim *sim, const char *msg) {
  if (!sim->error)
    sim->error = strdup(msg);
}

/* The handle of body c, added to the table when new; 0 when out of
 * memory (the simulation then stops with an error). The table stays
 * small (one entry per combination of glasses the rays meet), so a
 * linear search is enough. */
static int body_intern(atl_op_sim *sim, const body_t *c) {
  struct atl_op_bodies *t = sim->bodies;
  if (!t && !(t = sim->bodies = calloc(1, sizeof(*t)))) {
    sim_fail(sim, "out of memory");
    return 0;
  }
  for (int i = 0; i < t->n; i++)
    if (t->b[i].n == c->n &&
        memcmp(t->b[i].g, c->g, sizeof(*c->g) * (size_t)c->n) == 0 &&
        memcmp(t->b[i].e, c->e, sizeof(*c->e) * (size_t)c->n) == 0)
      return i + 1;
  if (t->n == t->cap) {
    int cap = t->cap ? t->cap * 2 : 16;
    body_t *b = realloc(t->b, sizeof(*b) * (size_t)cap);
    if (!b) {
      sim_fail(sim, "out of memory");
      return 0;
    }
    t->b = b;
    t->cap = cap;
  }
  t->b[t->n] = *c;
  return ++t->n;
}

/* c with glass g's exponent changed by e, keeping the object order. */
static int body_add(atl_op_sim *sim, body_t *c, atl_op_grin *g, int e) {
  int i = 0;
  while (i < c->n && c->g[i]->g.base.index < g->g.base.index)
    i++;
  if (i < c->n && c->g[i] == g) {
    c->e[i] += e;
    if (c->e[i] == 0) {
      memmove(c->g + i, c->g + i + 1, sizeof(*c->g) * (size_t)(c->n - i - 1));
      memmove(c->e + i, c->e + i + 1, sizeof(*c->e) * (size_t)(c->n - i - 1));
      c->n--;
    }
    return 0;
  }
  if (c->n == MAX_FACTORS) {
    sim_fail(sim, "a ray is inside more than 16 overlapping gradient-index "
                  "glasses at once");
    return -1;
  }
  memmove(c->g + i + 1, c->g + i, sizeof(*c->g) * (size_t)(c->n - i));
  memmove(c->e + i + 1, c->e + i, sizeof(*c->e) * (size_t)(c->n - i));
  c->g[i] = g;
  c->e[i] = e;
  c->n++;
  return 0;
}

/* initRefIndex: the body at p, every GRIN glass that has p inside or on
 * its boundary. */
static int body_at(atl_op_sim *sim, atl_op_pt p) {
  body_t c = {0};
  atl_op_scene *s = sim->scene;
  for (int i = 0; i < s->noptical; i++) {
    atl_op_obj *o = s->optical[i];
    if (!(o->cls->flags & ATL_OP_GRIN))
      continue;
    atl_op_grin *g = (atl_op_grin *)o;
    if ((g->shape->on_boundary(g, p) || g->shape->inside(g, p)) &&
        body_add(sim, &c, g, 1) < 0)
      return 0;
  }
  return body_intern(sim, &c);
}

/* The body h multiplied by glass g's index (e = 1) or divided (e = -1). */
static int body_times(atl_op_sim *sim, int h, atl_op_grin *g, int e) {
  body_t c = sim->bodies->b[h - 1];
  if (body_add(sim, &c, g, e) < 0)
    return 0;
  return body_intern(sim, &c);
}

/* upstream's `ray.wavelength || GREEN_WAVELENGTH`. */
static double wavelength_of(const atl_op_ray *r) {
  return r->wavelength != r->wavelength || r->wavelength == 0 ? ATL_OP_GREEN
                                                              : r->wavelength;
}

/* A glass's equation at an absolute point. */
static double grin_eval(const atl_op_grin *g, int which, double x, double y,
                        double lambda) {
  double v[3] = {x - g->origin.x, y - g->origin.y, lambda};
  return atl__op_expr_eval(g->fn[which], v);
}

/* n, dn/dx, dn/dy and alpha of body b at (x, y): the factors folded in
 * with upstream's product and quotient rules, starting from the empty
 * region (n = 1, no gradient, no absorption), which is what upstream's
 * first factor gives exactly. */
static void body_eval(const body_t *b, double x, double y, double lambda,
                      int want_alpha, double out[4]) {
  double n = 1, nx = 0, ny = 0, a = 0;
  for (int i = 0; i < b->n; i++) {
    const atl_op_grin *g = b->g[i];
    double f = grin_eval(g, ATL_OP_GRIN_N, x, y, lambda);
    double fx = grin_eval(g, ATL_OP_GRIN_NX, x, y, lambda);
    double fy = grin_eval(g, ATL_OP_GRIN_NY, x, y, lambda);
    double fa = want_alpha && !g->alpha_zero
                    ? grin_eval(g, ATL_OP_GRIN_ALPHA, x, y, lambda)
                    : 0;
    for (int k = 0; k < abs(b->e[i]); k++) {
      if (b->e[i] > 0) {
        nx = f * nx + fx * n;
        ny = f * ny + fy * n;
        n = f * n;
        a = fa + a;
      } else {
        nx = nx / f - n * fx / (f * f);
        ny = ny / f - n * fy / (f * f);
        n = n / f;
        a = a - fa;
      }
    }
  }
  out[0] = n, out[1] = nx, out[2] = ny, out[3] = a;
}

static int body_absorbs(const body_t *b) {
  for (int i = 0; i < b->n; i++)
    if (!b->g[i]->alpha_zero)
      return 1;
  return 0;
}

double atl__op_grin_ref_index(atl_op_obj *o, atl_op_sim *sim, atl_op_pt p,
                              const atl_op_ray *r) {
  (void)sim;
  return grin_eval((atl_op_grin *)o, ATL_OP_GRIN_N, p.x, p.y, wavelength_of(r));
}

/* onRayEnter and onRayExit: an unset body is first taken from the
 * glasses around the ray's start, as upstream does. */
static void grin_merge(atl_op_obj *o, atl_op_sim *sim, atl_op_ray *r, int e) {
  if (!r->body)
    r->body = body_at(sim, r->p1);
  if (r->body)
    r->body = body_times(sim, r->body, (atl_op_grin *)o, e);
}

void atl__op_grin_enter(atl_op_obj *o, atl_op_sim *sim, atl_op_ray *r) {
  grin_merge(o, sim, r, 1);
}

void atl__op_grin_exit(atl_op_obj *o, atl_op_sim *sim, atl_op_ray *r) {
  grin_merge(o, sim, r, -1);
}

int atl__op_grin_step_hit(atl_op_grin *g, const atl_op_ray *r, atl_op_pt *hit) {
  if (!(g->shape->inside(g, r->p1) || g->shape->on_boundary(g, r->p1)))
    return 0;
  double len = sqrt(atl__op_dist2(r->p1, r->p2));
  atl_op_pt p =
      atl__op_pt(r->p1.x + (g->step_size / len) * (r->p2.x - r->p1.x),
                 r->p1.y + (g->step_size / len) * (r->p2.y - r->p1.y));
  if (!g->shape->inside(g, p))
    return 0;
  *hit = p;
  return 1;
}

/* Math.sign, keeping a zero's sign and NaN. */
static double js_sign(double v) {
  return v > 0 ? 1 : v < 0 ? -1 : v;
}

/* step(p1, p2): Euler's method on the ray equation written for the
 * direction cosines (x', y') with respect to arc length:
 *   x'' = (n_x (1 - x'^2) - n_y x' y') / n, likewise for y',
 * evaluated at p2 with the direction of p1 -> p2, in upstream's order of
 * operations. Returns the next point and attenuates the ray. */
static atl_op_pt grin_step(const atl_op_grin *g, const body_t *b, atl_op_ray *r,
                           atl_op_pt p1, atl_op_pt p2) {
  double len = sqrt(atl__op_dist2(p1, p2));
  double x = p2.x, y = p2.y, h = g->step_size;
  double xp = (p2.x - p1.x) / len;
  double yp = js_sign(p2.y - p1.y) * sqrt(1 - xp * xp);
  int absorbs = body_absorbs(b);
  double v[4];
  body_eval(b, x, y, wavelength_of(r), absorbs, v);
  double xs = xp + h * (v[1] * (1 - xp * xp) - v[2] * xp * yp) / v[0];
  double ys = yp + h * (v[2] * (1 - yp * yp) - v[1] * xp * yp) / v[0];
  if (absorbs) {
    /* Beer-Lambert over the step; exp(-0 h) is 1, so a glass without
     * absorption skips it with the same result. */
    double k = exp(-v[3] * h);
    r->bs *= k;
    r->bp *= k;
  }
  return atl__op_pt(x + h * xs, y + h * ys);
}

void atl__op_grin_advance(atl_op_grin *g, atl_op_sim *sim, atl_op_ray *r,
                          atl_op_pt hit) {
  if (!r->body)
    r->body = body_at(sim, r->p1);
  if (!r->body)
    return; /* out of memory: sim->error stops the loop */
  atl_op_pt next = grin_step(g, &sim->bodies->b[r->body - 1], r, r->p1, hit);
  r->p1 = hit;
  r->p2 = next;
  r->kind = ATL_OP_REFRACT;
}

atl_op_result atl__op_grin_boundary(atl_op_grin *g, atl_op_sim *sim,
                                    atl_op_ray *r, long ray_index,
                                    atl_op_pt index_at, atl_op_pt point,
                                    atl_op_pt normal, double type,
                                    atl_op_obj *const *merging, int nmerging) {
  int before = r->body;
  double n1;
  if (type == 1) {
    n1 = atl__op_grin_ref_index(&g->g.base, sim, index_at, r);
    atl__op_grin_exit(&g->g.base, sim, r);
  } else if (type == -1) {
    n1 = 1 / atl__op_grin_ref_index(&g->g.base, sim, index_at, r);
    atl__op_grin_enter(&g->g.base, sim, r);
  } else if (type == 0) {
    n1 = 1;
  } else {
    return atl__op_glass_undefined();
  }
  return atl__op_glass_refract(&g->g, sim, r, ray_index, point, normal, n1,
                               merging, nmerging, before);
}

atl_op_result atl__op_grin_absorb_after_merging(atl_op_grin *g, atl_op_sim *sim,
                                                atl_op_ray *r,
                                                atl_op_obj *const *merging,
                                                int nmerging) {
  (void)g;
  for (int i = 0; i < nmerging; i++) {
    atl_op_obj *m = merging[i];
    double type = m->cls->incident_type(m, sim, r);
    if (type == 1 && m->cls->exit)
      m->cls->exit(m, sim, r);
    else if (type == -1 && m->cls->enter)
      m->cls->enter(m, sim, r);
    else if (type != 1 && type != -1 && type != 0)
      return atl__op_glass_undefined();
  }
  atl_op_result res = {.absorbed = 1};
  return res;
}

int atl__op_grin_ray_segment(const atl_op_ray *r, atl_op_pt s1, atl_op_pt s2,
                             double min_sq, atl_op_pt *hit, double *lsq) {
  atl_op_pt p = atl__op_lines_x(r->p1, r->p2, s1, s2);
  if (!(atl__op_on_segment(p, s1, s2) && atl__op_on_ray(p, r->p1, r->p2)))
    return 0;
  double d = atl__op_dist2(r->p1, p);
  if (!(d > min_sq))
    return 0;
  *hit = p;
  *lsq = d;
  return 1;
}

/* --- Loading ----------------------------------------------------------- */

static const char *const grin_vars[] = {"x", "y", "lambda"};

static int eq_fail(char **err, const atl_op_grin *g, const char *field,
                   const char *what, char *msg) {
  if (asprintf(err, "%s: \"%s\"%s: %s", g->g.base.cls->type, field, what,
               msg ? msg : "out of memory") < 0)
    *err = NULL;
  free(msg);
  return -EINVAL;
}

int atl__op_grin_init(atl_op_grin *g, const atl_op_grin_shape *shape,
                      char **err) {
  const char *type = g->g.base.cls->type;
  char *msg = NULL;
  g->shape = shape;
  if (!g->ref_index_fn || !g->absorption_fn)
    return asprintf(err,
                    "%s: \"refIndexFn\" and \"absorptionFn\" must be "
                    "equations (strings)",
                    type),
           -EINVAL;
  if (!(isfinite(g->step_size) && g->step_size > 0))
    return asprintf(err,
                    "%s: \"stepSize\" must be a positive number (the "
                    "length of one step of the ray inside the glass)",
                    type),
           -EINVAL;
  if (!isfinite(g->intersect_tol))
    return asprintf(err, "%s: \"intersectTol\" must be a finite number", type),
           -EINVAL;
  int rc = atl__op_expr_compile(g->ref_index_fn, grin_vars, 3,
                                &g->fn[ATL_OP_GRIN_N], &msg);
  if (rc == -EINVAL)
    return eq_fail(err, g, "refIndexFn", "", msg);
  if (rc < 0)
    return rc;
  /* The gradient, once, symbolically, as upstream's math.derivative. */
  for (int k = 0; k < 2; k++) {
    rc = atl__op_expr_derivative(g->fn[ATL_OP_GRIN_N], (size_t)k,
                                 &g->fn[ATL_OP_GRIN_NX + k], &msg);
    if (rc == -EINVAL)
      return eq_fail(err, g, "refIndexFn",
                     k ? " cannot be differentiated in y"
                       : " cannot be differentiated in x",
                     msg);
    if (rc < 0)
      return rc;
  }
  rc = atl__op_expr_compile(g->absorption_fn, grin_vars, 3,
                            &g->fn[ATL_OP_GRIN_ALPHA], &msg);
  if (rc == -EINVAL)
    return eq_fail(err, g, "absorptionFn", "", msg);
  if (rc < 0)
    return rc;
  const atl_op_expr_t *a = g->fn[ATL_OP_GRIN_ALPHA];
  double zero[3] = {0, 0, 0};
  g->alpha_zero =
      !atl__op_expr_uses_var(a, 0) && !atl__op_expr_uses_var(a, 1) &&
      !atl__op_expr_uses_var(a, 2) && atl__op_expr_eval(a, zero) == 0;
  return 0;
}

void atl__op_grin_destroy(atl_op_grin *g) {
  for (int k = 0; k < 4; k++)
    atl__op_expr_free(g->fn[k]);
}
