/* The gradient-index glasses (optics/grin.h): a constant index behaves as
 * an ordinary glass of that index, a linear gradient bends a ray towards
 * the higher index with the curvature of the ray equation, absorption
 * attenuates as exp(-integral of alpha), overlapping bodies merge into the
 * product of their indices (with or without symbolicBodyMerging), and bad
 * equations are load errors that name the object, the field and the
 * column. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grin.h"
#include "op.h"

static int try_load(const char *json, atl_op_scene **s, char **err) {
  json_object *doc = json_tokener_parse(json);
  cr_assert_not_null(doc, "bad test JSON: %s", json);
  *s = NULL;
  *err = NULL;
  int rc = atl__op_scene_load(doc, s, err);
  json_object_put(doc);
  return rc;
}

/* A version-5 scene of the given objects, simulated with its segments
 * recorded; the caller frees both. */
static atl_op_sim *simulate(const char *objs, const char *settings,
                            atl_op_scene **out) {
  char json[4096];
  snprintf(json, sizeof(json), "{\"version\": 5, %s \"objs\": [%s]}",
           settings ? settings : "", objs);
  char *err;
  cr_assert_eq(try_load(json, out, &err), 0, "load failed: %s",
               err ? err : "?");
  atl_op_sim *sim;
  cr_assert_eq(atl__op_sim_run(*out, LONG_MAX, 1, &sim), 0, "%s",
               sim->error ? sim->error : "?");
  cr_assert_null(sim->warning, "%s", sim->warning);
  return sim;
}

static void done(atl_op_sim *sim, atl_op_scene *s) {
  atl__op_sim_free(sim);
  atl__op_scene_free(s);
}

/* The segment that leaves the scene (one ray, no partial reflections, so
 * it is the last), as its start and unit direction. */
static void exit_ray(const atl_op_sim *sim, atl_op_pt *p, atl_op_pt *u) {
  cr_assert_gt(sim->nsegs, 0);
  const atl_op_segment *g = &sim->segs[sim->nsegs - 1];
  cr_assert_eq(g->hit_obj, -1);
  double dx = g->p2.x - g->p1.x, dy = g->p2.y - g->p1.y, l = hypot(dx, dy);
  *p = g->p1;
  *u = (atl_op_pt){dx / l, dy / l};
}

static void same_exit(const char *grin, const char *glass) {
  char a[1024], b[1024];
  const char *src = "{\"type\": \"SingleRay\", \"p1\": {\"x\": -100, \"y\": "
                    "12}, \"p2\": {\"x\": -99, \"y\": 12.3}}";
  snprintf(a, sizeof(a), "%s, %s", src, grin);
  snprintf(b, sizeof(b), "%s, %s", src, glass);
  atl_op_scene *sa, *sb;
  atl_op_sim *ga = simulate(a, NULL, &sa), *gb = simulate(b, NULL, &sb);
  atl_op_pt pa, ua, pb, ub;
  exit_ray(ga, &pa, &ua);
  exit_ray(gb, &pb, &ub);
  cr_expect(fabs(pa.x - pb.x) < 1e-9 && fabs(pa.y - pb.y) < 1e-9,
            "exit at (%.12g, %.12g), the glass's at (%.12g, %.12g)", pa.x, pa.y,
            pb.x, pb.y);
  cr_expect(fabs(ua.x - ub.x) < 1e-12 && fabs(ua.y - ub.y) < 1e-12,
            "exit direction (%.15g, %.15g), the glass's (%.15g, %.15g)", ua.x,
            ua.y, ub.x, ub.y);
  /* The GRIN glass got there in steps, the ordinary one at once. */
  cr_expect_gt(ga->nsegs, 100);
  cr_expect_eq(gb->nsegs, 3);
  done(ga, sa);
  done(gb, sb);
}

Test(optics_grin, constant_index_is_a_circle_glass) {
  same_exit("{\"type\": \"CircleGrinGlass\", \"p1\": {\"x\": 0, \"y\": 0}, "
            "\"p2\": {\"x\": 50, \"y\": 0}, \"refIndexFn\": \"1.5\", "
            "\"stepSize\": 0.25, \"partialReflect\": false}",
            "{\"type\": \"CircleGlass\", \"p1\": {\"x\": 0, \"y\": 0}, "
            "\"p2\": {\"x\": 50, \"y\": 0}, \"refIndex\": 1.5, "
            "\"partialReflect\": false}");
}

Test(optics_grin, constant_index_is_a_glass_polygon) {
  const char *path = "[{\"x\": -40, \"y\": -30}, {\"x\": 40, \"y\": -40}, "
                     "{\"x\": 50, \"y\": 50}, {\"x\": -30, \"y\": 40}]";
  char grin[512], glass[512];
  snprintf(grin, sizeof(grin),
           "{\"type\": \"GrinGlass\", \"path\": %s, \"refIndexFn\": "
           "\"1.5\", \"stepSize\": 0.5, \"partialReflect\": false}",
           path);
  snprintf(glass, sizeof(glass),
           "{\"type\": \"Glass\", \"path\": %s, \"refIndex\": 1.5, "
           "\"partialReflect\": false}",
           path);
  same_exit(grin, glass);
}

/* The turn from one recorded step to the next, per unit length. */
static double turn(const atl_op_segment *a, const atl_op_segment *b) {
  double a1 = atan2(a->p2.y - a->p1.y, a->p2.x - a->p1.x);
  double a2 = atan2(b->p2.y - b->p1.y, b->p2.x - b->p1.x);
  return (a2 - a1) / hypot(b->p2.x - b->p1.x, b->p2.y - b->p1.y);
}

/* A horizontal ray in n = 1.5 + 0.01 y (y grows downwards on screen)
 * bends towards +y: the ray equation gives the curvature (dn/dy) / n
 * for a ray along x, and n cos(theta) stays n0, so the exact path is
 * y = (n0 / b)(cosh(b x / n0) - 1). */
Test(optics_grin, linear_gradient_bends_towards_higher_index) {
  atl_op_scene *s;
  atl_op_sim *sim = simulate(
      "{\"type\": \"SingleRay\", \"p1\": {\"x\": -10, \"y\": 0}, \"p2\": "
      "{\"x\": -9, \"y\": 0}}, {\"type\": \"GrinGlass\", \"path\": [{\"x\": "
      "0, \"y\": -60}, {\"x\": 60, \"y\": -60}, {\"x\": 60, \"y\": 60}, "
      "{\"x\": 0, \"y\": 60}], \"refIndexFn\": \"1.5+0.01y\", \"stepSize\": "
      "0.01, \"partialReflect\": false}",
      NULL, &s);
  cr_assert_gt(sim->nsegs, 1000);
  /* Curvature over the first steps, where n is 1.5. */
  double k = turn(&sim->segs[2], &sim->segs[3]);
  cr_expect(fabs(k - 0.01 / 1.5) < 1e-4 * 0.01 / 1.5,
            "curvature %.10g, expected %.10g", k, 0.01 / 1.5);
  /* Along the whole path, within the Euler scheme's first order. */
  double worst = 0;
  for (long i = 1; i < sim->nsegs; i++) {
    atl_op_pt p = sim->segs[i].p1;
    if (p.x <= 0 || p.x >= 60)
      continue;
    double want = 1.5 / 0.01 * (cosh(0.01 * p.x / 1.5) - 1);
    cr_assert_gt(p.y, -1e-12, "bent away from the higher index at x = %g", p.x);
    worst = fmax(worst, fabs(p.y - want) / (want + 1));
  }
  cr_expect_lt(worst, 1e-3, "deviation from the exact path %g", worst);
  done(sim, s);
}

/* n = 1 (no refraction, no reflection) with alpha(x): the ray's power
 * leaves multiplied by exp(-sum of alpha over the steps), the integral
 * of alpha along the path to the step size's order. */
Test(optics_grin, absorption_is_exp_of_minus_the_integral) {
  atl_op_scene *s;
  atl_op_sim *sim = simulate(
      "{\"type\": \"SingleRay\", \"p1\": {\"x\": -10, \"y\": 1}, \"p2\": "
      "{\"x\": -9, \"y\": 1}, \"brightness\": 1}, {\"type\": "
      "\"CircleGrinGlass\", \"p1\": {\"x\": 40, \"y\": 1}, \"p2\": {\"x\": "
      "80, \"y\": 1}, \"refIndexFn\": \"1\", \"absorptionFn\": "
      "\"0.0005x\", \"stepSize\": 0.05, \"partialReflect\": false}",
      NULL, &s);
  atl_op_pt p, u;
  exit_ray(sim, &p, &u);
  const atl_op_segment *g = &sim->segs[sim->nsegs - 1];
  /* From x = 0 to 80: integral of 0.0005 x dx = 1.6. */
  double want = exp(-1.6), got = g->bs + g->bp;
  cr_expect(fabs(got - want) < 2e-3 * want, "power %.9g, expected %.9g", got,
            want);
  cr_expect(fabs(p.x - 80) < 1e-6, "left at x = %g", p.x);
  done(sim, s);
}

/* Two overlapping slabs with gradients: in the overlap the ray feels
 * n = nA nB, whose curvature for a ray along x is
 * (dnA/dy) / nA + (dnB/dy) / nB; alone, each glass's own. */
static void overlap_curvatures(const char *settings) {
  atl_op_scene *s;
  atl_op_sim *sim = simulate(
      "{\"type\": \"SingleRay\", \"p1\": {\"x\": -10, \"y\": 0}, \"p2\": "
      "{\"x\": -9, \"y\": 0}}, {\"type\": \"GrinGlass\", \"path\": [{\"x\": "
      "0, \"y\": -50}, {\"x\": 20, \"y\": -50}, {\"x\": 20, \"y\": 50}, "
      "{\"x\": 0, \"y\": 50}], \"refIndexFn\": \"1.2+0.01y\", \"stepSize\": "
      "0.01, \"partialReflect\": false}, {\"type\": \"GrinGlass\", "
      "\"path\": [{\"x\": 10, \"y\": -50}, {\"x\": 30, \"y\": -50}, {\"x\": "
      "30, \"y\": 50}, {\"x\": 10, \"y\": 50}], \"refIndexFn\": "
      "\"1.25+0.02y\", \"stepSize\": 0.01, \"partialReflect\": false}",
      settings, &s);
  /* For a ray at angle theta to x, at height y, the ray equation's
   * curvature is cos(theta) (dn/dy) / n. */
  double at[3] = {5, 15, 25};
  int seen = 0;
  for (long i = 1; i + 1 < sim->nsegs; i++) {
    for (int k = 0; k < 3; k++) {
      const atl_op_segment *a = &sim->segs[i], *b = &sim->segs[i + 1];
      if (!(a->p1.x < at[k] && a->p2.x >= at[k] && b->p2.x < at[k] + 0.5))
        continue;
      double y = a->p2.y, na = 1.2 + 0.01 * y, nb = 1.25 + 0.02 * y;
      double c = cos(atan2(a->p2.y - a->p1.y, a->p2.x - a->p1.x));
      double want = k == 0   ? c * 0.01 / na
                    : k == 1 ? c * (0.01 / na + 0.02 / nb)
                             : c * 0.02 / nb;
      double got = turn(a, b);
      cr_expect(fabs(got - want) < 1e-3 * want,
                "curvature at x = %g: %.8g, expected %.8g", at[k], got, want);
      seen |= 1 << k;
    }
  }
  cr_expect_eq(seen, 7);
  done(sim, s);
}

Test(optics_grin, body_merging_multiplies_indices) {
  overlap_curvatures(NULL);
}

Test(optics_grin, symbolic_body_merging_gives_the_same_bodies) {
  overlap_curvatures("\"symbolicBodyMerging\": true,");
}

/* Two overlapping constant-index bodies: the product of the indices in
 * the overlap shows in Snell's law across the vertical interfaces, where
 * n sin(theta), the direction's y component times n, is conserved. */
Test(optics_grin, constant_bodies_merge) {
  atl_op_scene *s;
  atl_op_sim *sim = simulate(
      "{\"type\": \"SingleRay\", \"p1\": {\"x\": -10, \"y\": 0}, \"p2\": "
      "{\"x\": -9, \"y\": 0.5}}, {\"type\": \"GrinGlass\", \"path\": "
      "[{\"x\": 0, \"y\": -50}, {\"x\": 20, \"y\": -50}, {\"x\": 20, \"y\": "
      "50}, {\"x\": 0, \"y\": 50}], \"refIndexFn\": \"1.2\", \"stepSize\": "
      "0.1, \"partialReflect\": false}, {\"type\": \"GrinGlass\", \"path\": "
      "[{\"x\": 10, \"y\": -50}, {\"x\": 30, \"y\": -50}, {\"x\": 30, \"y\": "
      "50}, {\"x\": 10, \"y\": 50}], \"refIndexFn\": \"1.25\", "
      "\"stepSize\": 0.1, \"partialReflect\": false}",
      NULL, &s);
  double inv = 0.5 / hypot(1, 0.5); /* n sin(theta) outside, n = 1 */
  int seen = 0;
  for (long i = 0; i < sim->nsegs; i++) {
    const atl_op_segment *g = &sim->segs[i];
    double mx = (g->p1.x + g->p2.x) / 2;
    double n = mx < 0    ? 1
               : mx < 10 ? 1.2
               : mx < 20 ? 1.2 * 1.25
               : mx < 30 ? 1.25
                         : 1;
    double dx = g->p2.x - g->p1.x, dy = g->p2.y - g->p1.y;
    double sy = dy / hypot(dx, dy);
    cr_expect(fabs(n * sy - inv) < 1e-9, "segment %ld at x = %g: n sin %.12g",
              i, mx, n * sy);
    seen |= 1 << (mx < 0 ? 0 : mx < 10 ? 1 : mx < 20 ? 2 : mx < 30 ? 3 : 4);
  }
  cr_expect_eq(seen, 31, "not every region was crossed: %x", seen);
  done(sim, s);
}

static void expect_error(const char *obj, const char *a, const char *b,
                         const char *c) {
  char json[2048];
  snprintf(json, sizeof(json), "{\"version\": 5, \"objs\": [%s]}", obj);
  atl_op_scene *s;
  char *err;
  cr_assert_eq(try_load(json, &s, &err), -EINVAL);
  cr_assert_not_null(err);
  cr_expect(strstr(err, a) && strstr(err, b) && strstr(err, c),
            "\"%s\", \"%s\" and \"%s\" not all in: %s", a, b, c, err);
  free(err);
}

Test(optics_grin, bad_equations_are_load_errors) {
  expect_error("{\"type\": \"GrinGlass\", \"path\": [{\"x\": 0, \"y\": 0}, "
               "{\"x\": 1, \"y\": 0}, {\"x\": 0, \"y\": 1}], \"refIndexFn\": "
               "\"1+\\\\cos\\\\foo{x}\"}",
               "objs[0] (GrinGlass)", "\"refIndexFn\"", "column");
  expect_error("{\"type\": \"CircleGrinGlass\", \"p1\": {\"x\": 0, \"y\": 0}, "
               "\"p2\": {\"x\": 1, \"y\": 0}, \"absorptionFn\": \"2*q\"}",
               "objs[0] (CircleGrinGlass)", "\"absorptionFn\"", "column");
  expect_error("{\"type\": \"CircleGrinGlass\", \"p1\": {\"x\": 0, \"y\": 0}, "
               "\"p2\": {\"x\": 1, \"y\": 0}, \"refIndexFn\": "
               "\"1+\\\\operatorname{floor}\\\\left(x\\\\right)\"}",
               "objs[0] (CircleGrinGlass)", "\"refIndexFn\"",
               "cannot be differentiated in x");
  expect_error(
      "{\"type\": \"ParamGrinGlass\", \"pieces\": [{\"eqnX\": "
      "\"t\", \"eqnY\": \"2t+q\", \"tMin\": 0, \"tMax\": 1, \"tStep\": "
      "0.1}]}",
      "objs[0] (ParamGrinGlass)", "\"pieces\"[0].eqnY", "column");
  expect_error("{\"type\": \"CurveGrinGlass\", \"points\": [{\"a1\": {\"x\": "
               "0, \"y\": 0}, \"c1\": {\"x\": 1, \"y\": 0}, \"c2\": {\"x\": 1, "
               "\"y\": 1}}], \"stepSize\": 0}",
               "objs[0] (CurveGrinGlass)", "\"stepSize\"", "positive");
}

/* A GRIN glass's index is read at the boundary point for the ray's
 * wavelength: lambda in the equation, 540 nm without colours. */
Test(optics_grin, index_uses_lambda_and_origin) {
  atl_op_scene *s;
  char *err;
  cr_assert_eq(try_load("{\"version\": 5, \"objs\": [{\"type\": "
                        "\"CircleGrinGlass\", \"p1\": {\"x\": 10, \"y\": 0}, "
                        "\"p2\": {\"x\": 20, \"y\": 0}, \"origin\": {\"x\": "
                        "10, \"y\": 5}, \"refIndexFn\": "
                        "\"1+0.001\\\\lambda+0.1x+0.01y\"}]}",
                        &s, &err),
               0, "%s", err ? err : "?");
  atl_op_obj *o = s->optical[0];
  atl_op_ray r = atl__op_ray_make((atl_op_pt){0, 0}, (atl_op_pt){1, 0}, 1, 1,
                                  NULL, ATL_OP_SOURCE);
  double n = o->cls->ref_index(o, NULL, (atl_op_pt){12, 7}, &r);
  cr_expect_float_eq(n, 1 + 0.54 + 0.2 + 0.02, 1e-12);
  r.wavelength = 700;
  n = o->cls->ref_index(o, NULL, (atl_op_pt){12, 7}, &r);
  cr_expect_float_eq(n, 1 + 0.7 + 0.2 + 0.02, 1e-12);
  atl__op_scene_free(s);
}
