/* The equation-driven objects (optics/custom.h): a custom surface whose
 * only outgoing ray is theta_0 with P_0 lets rays through unchanged, a
 * CustomMirror of a straight line reflects as a Mirror, a ParamGlass
 * circle refracts as a CircleGlass, polarisations split when their angles
 * differ, and malformed equations and pieces are load errors that name
 * the object, the field and the column. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op.h"

/* Loads a scene of the given objects; returns the loader's code. */
static int try_load(const char *objs, atl_op_scene **s, char **err) {
  char json[4096];
  snprintf(json, sizeof(json), "{\"version\": 5, \"objs\": [%s]}", objs);
  json_object *doc = json_tokener_parse(json);
  cr_assert_not_null(doc, "bad test JSON: %s", json);
  *s = NULL;
  *err = NULL;
  int rc = atl__op_scene_load(doc, s, err);
  json_object_put(doc);
  return rc;
}

static atl_op_scene *load(const char *objs) {
  atl_op_scene *s;
  char *err;
  cr_assert_eq(try_load(objs, &s, &err), 0, "load failed: %s", err ? err : "?");
  return s;
}

static char *load_error(const char *objs) {
  atl_op_scene *s;
  char *err;
  int rc = try_load(objs, &s, &err);
  cr_assert_eq(rc, -EINVAL, "loaded, or failed with %d", rc);
  cr_assert_not_null(err);
  return err;
}

static atl_op_sim *run(atl_op_scene *s) {
  atl_op_sim *sim = NULL;
  cr_assert_eq(atl__op_sim_run(s, LONG_MAX, 1, &sim), 0, "%s",
               sim && sim->error ? sim->error : "?");
  cr_assert_null(sim->warning, "%s", sim->warning);
  return sim;
}

static void unit(const atl_op_segment *g, double *dx, double *dy) {
  double x = g->p2.x - g->p1.x, y = g->p2.y - g->p1.y, l = hypot(x, y);
  *dx = x / l, *dy = y / l;
}

/* The segments of a scene's rays, traced to the end, compared with
 * another's: the same number, the same starts (within tol) and the same
 * directions (within tol), and enough of them meet the objects. */
static void expect_same_paths(const atl_op_sim *a, const atl_op_sim *b,
                              double tol) {
  cr_assert_eq(a->nsegs, b->nsegs, "%ld segments against %ld", a->nsegs,
               b->nsegs);
  long hits = 0;
  for (long i = 0; i < a->nsegs; i++)
    hits += a->segs[i].hit_obj >= 0 && b->segs[i].hit_obj >= 0;
  cr_assert(hits >= 5, "only %ld segments meet an object", hits);
  for (long i = 0; i < a->nsegs; i++) {
    const atl_op_segment *g = &a->segs[i], *h = &b->segs[i];
    double ax, ay, bx, by;
    unit(g, &ax, &ay);
    unit(h, &bx, &by);
    cr_expect(hypot(g->p1.x - h->p1.x, g->p1.y - h->p1.y) < tol,
              "segment %ld starts at (%g, %g) against (%g, %g)", i, g->p1.x,
              g->p1.y, h->p1.x, h->p1.y);
    cr_expect(hypot(ax - bx, ay - by) < tol,
              "segment %ld goes (%g, %g) against (%g, %g)", i, ax, ay, bx, by);
    cr_expect(fabs(g->bs + g->bp - h->bs - h->bp) < tol,
              "segment %ld has power %g against %g", i, g->bs + g->bp,
              h->bs + h->bp);
  }
}

#define BEAM                                                                   \
  "{\"type\": \"Beam\", \"p1\": {\"x\": 0, \"y\": -30}, "                      \
  "\"p2\": {\"x\": 0, \"y\": 30}, \"brightness\": 1}"

/* --- CustomSurface
 * ------------------------------------------------------------ */

Test(optics_custom, identity_surface_passes_rays_through) {
  static const char *const surfaces[] = {
      "{\"type\": \"CustomSurface\", \"p1\": {\"x\": 60, \"y\": -50}, "
      "\"p2\": {\"x\": 40, \"y\": 50}, \"outRays\": [{\"eqnTheta\": "
      "\"\\\\theta_0\", \"eqnP\": \"P_0\"}]}",
      "{\"type\": \"CustomArcSurface\", \"p1\": {\"x\": 50, \"y\": -50}, "
      "\"p2\": {\"x\": 50, \"y\": 50}, \"p3\": {\"x\": 70, \"y\": 0}, "
      "\"twoSided\": true, \"outRays\": [{\"eqnTheta\": \"\\\\theta_{0}\", "
      "\"eqnP\": \"P_{0}\"}]}",
      "{\"type\": \"CustomParamSurface\", \"pieces\": [{\"eqnX\": "
      "\"50+10\\\\cos(t)\", \"eqnY\": \"40t\", \"tMin\": -1.5, \"tMax\": 1.5, "
      "\"tStep\": 0.01}], \"twoSided\": true, \"outRays\": [{\"eqnTheta\": "
      "\"\\\\theta_0\", \"eqnP\": \"P_0\"}]}",
  };
  for (size_t k = 0; k < sizeof(surfaces) / sizeof(*surfaces); k++) {
    char objs[2048];
    snprintf(objs, sizeof(objs), "%s, %s", BEAM, surfaces[k]);
    atl_op_scene *s = load(objs);
    atl_op_sim *sim = run(s);
    int crossed = 0;
    for (long i = 0; i < sim->nsegs; i++) {
      const atl_op_segment *g = &sim->segs[i];
      double dx, dy;
      unit(g, &dx, &dy);
      /* Every segment keeps the beam's direction and power. */
      cr_expect(fabs(dx - 1) < 1e-12 && fabs(dy) < 1e-12,
                "surface %zu: segment %ld goes (%g, %g)", k, i, dx, dy);
      cr_expect(fabs(g->bs - g->bp) < 1e-15 && g->bs > 0,
                "surface %zu: segment %ld has powers %g, %g", k, i, g->bs,
                g->bp);
      crossed += g->parent >= 0;
      if (g->parent >= 0)
        cr_expect_eq(g->kind, ATL_OP_REFRACT);
    }
    cr_expect(crossed > 0, "surface %zu: no ray crossed it", k);
    atl__op_sim_free(sim);
    atl__op_scene_free(s);
  }
}

Test(optics_custom, one_sided_surface_ignores_its_back) {
  /* p1 -> p2 points down: the beam going right meets the surface's back. */
  atl_op_scene *s = load(BEAM ", {\"type\": \"CustomSurface\", "
                              "\"p1\": {\"x\": 50, \"y\": 50}, "
                              "\"p2\": {\"x\": 50, \"y\": -50}}");
  atl_op_sim *sim = run(s);
  for (long i = 0; i < sim->nsegs; i++)
    cr_expect_eq(sim->segs[i].hit_obj, -1);
  atl__op_sim_free(sim);
  atl__op_scene_free(s);
}

Test(optics_custom, polarisations_split_when_their_angles_differ) {
  atl_op_scene *s =
      load("{\"type\": \"SingleRay\", \"p1\": {\"x\": 0, \"y\": 0}, "
           "\"p2\": {\"x\": 1, \"y\": 0}, \"brightness\": 1}, "
           "{\"type\": \"CustomSurface\", \"p1\": {\"x\": 50, \"y\": -50}, "
           "\"p2\": {\"x\": 50, \"y\": 50}, \"outRays\": [{\"eqnTheta\": "
           "\"\\\\theta_0+0.2p\", \"eqnP\": \"P_0\"}]}");
  atl_op_sim *sim = run(s);
  /* The source segment, then (in the ray loop's order: the new ray
   * within the same pass) the p ray turned and the s ray straight on. */
  cr_assert_eq(sim->nsegs, 3);
  for (int i = 1; i < 3; i++) {
    const atl_op_segment *g = &sim->segs[i];
    double dx, dy;
    unit(g, &dx, &dy);
    int p = g->bp > 0;
    cr_expect_eq(p ? g->bs : g->bp, 0, "segment %d carries both", i);
    cr_expect_eq(p ? g->bp : g->bs, 0.5);
    cr_expect(fabs(fabs(atan2(dy, dx)) - (p ? 0.2 : 0)) < 1e-12, "%c ray at %g",
              p ? 'p' : 's', atan2(dy, dx));
  }
  atl__op_sim_free(sim);
  atl__op_scene_free(s);
}

/* --- CustomMirror ----------------------------------------------------------
 */

Test(optics_custom, straight_custom_mirror_equals_mirror) {
  static const char *const shapes[] = {"0", "0\\\\cdot x^2"};
  atl_op_scene *a = load(BEAM ", {\"type\": \"Mirror\", "
                              "\"p1\": {\"x\": 40, \"y\": -60}, "
                              "\"p2\": {\"x\": 60, \"y\": 60}}");
  atl_op_sim *sa = run(a);
  for (size_t k = 0; k < 2; k++) {
    char objs[1024];
    snprintf(objs, sizeof(objs),
             "%s, {\"type\": \"CustomMirror\", \"p1\": {\"x\": 40, "
             "\"y\": -60}, \"p2\": {\"x\": 60, \"y\": 60}, \"eqn\": \"%s\"}",
             BEAM, shapes[k]);
    atl_op_scene *b = load(objs);
    atl_op_sim *sb = run(b);
    expect_same_paths(sa, sb, 1e-9);
    atl__op_sim_free(sb);
    atl__op_scene_free(b);
  }
  atl__op_sim_free(sa);
  atl__op_scene_free(a);
}

/* --- ParamGlass --------------------------------------------------------------
 */

Test(optics_custom, param_glass_circle_equals_circle_glass) {
  atl_op_scene *a =
      load(BEAM ", {\"type\": \"CircleGlass\", \"p1\": {\"x\": 100, \"y\": 0}, "
                "\"p2\": {\"x\": 150, \"y\": 0}, \"partialReflect\": false}");
  atl_op_scene *b =
      load(BEAM ", {\"type\": \"ParamGlass\", \"origin\": {\"x\": 100, "
                "\"y\": 0}, \"pieces\": [{\"eqnX\": \"50\\\\cos(t)\", "
                "\"eqnY\": \"50\\\\sin(t)\", \"tMin\": 0, \"tMax\": "
                "6.283185307179586, \"tStep\": 0.0005}], "
                "\"partialReflect\": false}");
  atl_op_sim *sa = run(a), *sb = run(b);
  /* The polygon's corners are within 50 (1 - cos(0.00025)) = 1.6e-6 of the
   * circle, and its normals are smoothed: directions agree to 1e-4. */
  expect_same_paths(sa, sb, 1e-4);
  atl__op_sim_free(sa);
  atl__op_sim_free(sb);
  atl__op_scene_free(a);
  atl__op_scene_free(b);
}

Test(optics_custom, custom_glass_slab_keeps_directions) {
  /* A slab between y = -0.2 and y = 0.2 in the frame's units (20 scene
   * units either side of p1-p2): a ray through it leaves parallel to
   * itself. */
  atl_op_scene *s =
      load("{\"type\": \"SingleRay\", \"p1\": {\"x\": -100, \"y\": -80}, "
           "\"p2\": {\"x\": -99, \"y\": -79.3}, \"brightness\": 1}, "
           "{\"type\": \"CustomGlass\", \"p1\": {\"x\": -100, \"y\": 0}, "
           "\"p2\": {\"x\": 100, \"y\": 0}, \"eqn1\": \"-0.2\", "
           "\"eqn2\": \"0.2\", \"partialReflect\": false}");
  atl_op_sim *sim = run(s);
  cr_assert_eq(sim->nsegs, 3);
  double ax, ay, bx, by;
  unit(&sim->segs[0], &ax, &ay);
  unit(&sim->segs[2], &bx, &by);
  cr_expect(hypot(ax - bx, ay - by) < 1e-9, "(%g, %g) left as (%g, %g)", ax, ay,
            bx, by);
  atl__op_sim_free(sim);
  atl__op_scene_free(s);
}

/* --- Load errors
 * ---------------------------------------------------------------- */

static void expect_error(const char *objs, const char *const *parts) {
  char *err = load_error(objs);
  for (; *parts; parts++)
    cr_expect(strstr(err, *parts) != NULL, "\"%s\" not in: %s", *parts, err);
  free(err);
}

Test(optics_custom, equation_errors_name_object_field_and_column) {
  expect_error("{\"type\": \"CustomMirror\", \"p1\": {\"x\": 0, \"y\": 0}, "
               "\"p2\": {\"x\": 10, \"y\": 0}, \"eqn\": \"x+*2\"}",
               (const char *const[]){"objs[0] (CustomMirror)", "\"eqn\"",
                                     "column 3", NULL});
  expect_error(BEAM ", {\"type\": \"ParamGlass\", \"pieces\": [{\"eqnX\": "
                    "\"\\\\cos(t)\", \"eqnY\": \"\\\\sin(t)*/2\", \"tMin\": 0, "
                    "\"tMax\": 1, \"tStep\": 0.1}]}",
               (const char *const[]){"objs[1] (ParamGlass)", "pieces[0].eqnY",
                                     "column", NULL});
  expect_error("{\"type\": \"CustomSurface\", \"p1\": {\"x\": 0, \"y\": 0}, "
               "\"p2\": {\"x\": 10, \"y\": 0}, \"outRays\": [{\"eqnTheta\": "
               "\"\\\\theta_0\", \"eqnP\": \"P_0 q\"}]}",
               (const char *const[]){"objs[0] (CustomSurface)",
                                     "outRays[0].eqnP", "column", NULL});
  expect_error("{\"type\": \"CustomGlass\", \"p1\": {\"x\": 0, \"y\": 0}, "
               "\"p2\": {\"x\": 10, \"y\": 0}, \"eqn2\": \"2**x\"}",
               (const char *const[]){"objs[0] (CustomGlass)", "\"eqn2\"",
                                     "column", NULL});
}

Test(optics_custom, other_load_errors) {
  /* A ray's equation may not read what later rays define. */
  expect_error("{\"type\": \"CustomSurface\", \"p1\": {\"x\": 0, \"y\": 0}, "
               "\"p2\": {\"x\": 10, \"y\": 0}, \"outRays\": [{\"eqnTheta\": "
               "\"\\\\theta_0\", \"eqnP\": \"P_1\"}]}",
               (const char *const[]){"outRays[0].eqnP", "P_1", NULL});
  expect_error(
      "{\"type\": \"ParamMirror\", \"pieces\": [{\"eqnX\": \"t\", "
      "\"eqnY\": \"t\", \"tMin\": 1, \"tMax\": 0, \"tStep\": 0.1}]}",
      (const char *const[]){"objs[0] (ParamMirror)", "pieces", "tMin", NULL});
  expect_error("{\"type\": \"ParamMirror\", \"pieces\": [{\"eqnX\": "
               "\"\\\\frac{1}{t}\", \"eqnY\": \"t\", \"tMin\": 0, \"tMax\": 1, "
               "\"tStep\": 0.1}]}",
               (const char *const[]){"pieces", "not finite", NULL});
  expect_error("{\"type\": \"CustomGlass\", \"p1\": {\"x\": 0, \"y\": 0}, "
               "\"p2\": {\"x\": 10, \"y\": 0}, \"eqn1\": \"1\", \"eqn2\": "
               "\"0\"}",
               (const char *const[]){"eqn2", "below", NULL});
  expect_error("{\"type\": \"CustomMirror\", \"p1\": {\"x\": 0, \"y\": 0}, "
               "\"p2\": {\"x\": 10, \"y\": 0}, \"curveType\": \"spline\"}",
               (const char *const[]){"curveType", "smoothNormal", NULL});
  expect_error("{\"type\": \"CustomParamSurface\", \"pieces\": [{\"eqnX\": "
               "\"t\", \"eqnY\": \"t\", \"tMin\": 0, \"tMax\": 1, \"tStep\": "
               "0.1, \"step\": 1}]}",
               (const char *const[]){"unknown field \"step\"", NULL});
}

Test(optics_custom, param_glass_warns_of_open_or_reversed_curves) {
  static const char *const curves[][2] = {
      {"\\\\cos(t)", "\\\\sin(t)"},  /* a half circle: open */
      {"\\\\cos(t)", "-\\\\sin(t)"}, /* the other way round */
  };
  static const char *const tmax[] = {"3.14", "6.283185307179586"};
  for (int k = 0; k < 2; k++) {
    char objs[512];
    snprintf(objs, sizeof(objs),
             "{\"type\": \"ParamGlass\", \"pieces\": [{\"eqnX\": \"%s\", "
             "\"eqnY\": \"%s\", \"tMin\": 0, \"tMax\": %s, \"tStep\": 0.1}]}",
             curves[k][0], curves[k][1], tmax[k]);
    atl_op_scene *s = load(objs);
    const char *w = s->objs[0]->warning;
    cr_expect(w && strstr(w, k ? "oriented" : "closed"), "curve %d: %s", k,
              w ? w : "no warning");
    atl__op_scene_free(s);
  }
  atl_op_scene *s = load("{\"type\": \"ParamGlass\"}");
  cr_expect_null(s->objs[0]->warning, "%s", s->objs[0]->warning);
  atl__op_scene_free(s);
}
