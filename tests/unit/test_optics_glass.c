/* The optics simulator's glass family (optics/glass.h): Fresnel
 * coefficients against textbook values, energy conservation at a
 * surface, Snell's law, total internal reflection, a slab that leaves a
 * ray parallel to itself, Cauchy dispersion, SphericalLens's
 * construction, and the load errors for bad fields. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glass.h"
#include "op.h"

#define PI 3.14159265358979323846

/* Loads a scene from JSON text; returns the loader's code. */
static int try_load(const char *json, atl_op_scene **s, char **err) {
  json_object *doc = json_tokener_parse(json);
  cr_assert_not_null(doc, "bad test JSON: %s", json);
  *s = NULL;
  *err = NULL;
  int rc = atl__op_scene_load(doc, s, err);
  json_object_put(doc);
  return rc;
}

static atl_op_scene *load(const char *json) {
  atl_op_scene *s;
  char *err;
  cr_assert_eq(try_load(json, &s, &err), 0, "load failed: %s", err ? err : "?");
  return s;
}

/* The loader's message for a scene that must not load. */
static char *load_error(const char *json) {
  atl_op_scene *s;
  char *err;
  int rc = try_load(json, &s, &err);
  cr_assert_eq(rc, -EINVAL, "loaded, or failed with %d", rc);
  cr_assert_null(s);
  cr_assert_not_null(err);
  return err;
}

static void expect_error(const char *objs, const char *part1,
                         const char *part2) {
  char json[2048];
  snprintf(json, sizeof(json), "{\"version\": 5, \"objs\": [%s]}", objs);
  char *err = load_error(json);
  cr_expect(strstr(err, part1) != NULL, "\"%s\" not in: %s", part1, err);
  cr_expect(strstr(err, part2) != NULL, "\"%s\" not in: %s", part2, err);
  free(err);
}

/* A simulation shell for calling one object's hooks directly: emitted
 * rays are staged, as during the ray loop. */
static atl_op_sim *shell(atl_op_scene *s) {
  atl_op_sim *sim = calloc(1, sizeof(*sim));
  cr_assert_not_null(sim);
  sim->scene = s;
  return sim;
}

static atl_op_ray ray(double x1, double y1, double x2, double y2) {
  return atl__op_ray_make((atl_op_pt){x1, y1}, (atl_op_pt){x2, y2}, 0.5, 0.5,
                          NULL, ATL_OP_SOURCE);
}

/* --- Fresnel ------------------------------------------------------------ */

Test(optics_glass, fresnel_normal_incidence) {
  /* Air to n = 1.5: R = ((n - 1) / (n + 1))^2 = 0.04 for both. */
  double rs, rp;
  atl__op_fresnel(1 / 1.5, 1, 1, &rs, &rp);
  cr_expect_float_eq(rs, 0.04, 1e-15);
  cr_expect_float_eq(rp, 0.04, 1e-15);
  /* And from inside, the same. */
  atl__op_fresnel(1.5, 1, 1, &rs, &rp);
  cr_expect_float_eq(rs, 0.04, 1e-15);
  cr_expect_float_eq(rp, 0.04, 1e-15);
}

Test(optics_glass, fresnel_brewster) {
  /* At Brewster's angle, tan(theta) = n, p light is not reflected; s
   * light is, by the textbook (sin(t1 - t2) / sin(t1 + t2))^2. */
  double n = 1.5, t1 = atan(n), t2 = asin(sin(t1) / n);
  double n1 = 1 / n, cos1 = cos(t1);
  double cos2 = sqrt(1 - n1 * n1 * (1 - cos1 * cos1));
  double rs, rp;
  atl__op_fresnel(n1, cos1, cos2, &rs, &rp);
  cr_expect(fabs(rp) < 1e-15, "R_p = %g at Brewster's angle", rp);
  double want = pow(sin(t1 - t2) / sin(t1 + t2), 2);
  cr_expect_float_eq(rs, want, 1e-12);
  cr_expect_float_eq(rs, 0.1479, 1e-4);
}

/* A ray hitting the flat face of a half-plane glass at each angle: the
 * refracted and reflected powers add up to the incident one, per
 * polarisation, and the refracted direction obeys Snell's law. */
Test(optics_glass, energy_and_snell) {
  atl_op_scene *s =
      load("{\"version\": 5, \"objs\": [{\"type\": \"PlaneGlass\", "
           "\"p1\": {\"x\": 0, \"y\": 0}, \"p2\": {\"x\": 100, \"y\": 0}}]}");
  atl_op_obj *g = s->optical[0];
  for (int deg = 0; deg < 90; deg += 5) {
    atl_op_sim *sim = shell(s);
    double a = deg * PI / 180;
    /* From above (y < 0 is outside) going down into the glass. */
    atl_op_ray r = ray(-sin(a) * 10, -cos(a) * 10, 0, 0);
    atl_op_pt hit = {0, 0};
    cr_assert(g->cls->incident_type(g, sim, &r) == -1);
    atl_op_result res = g->cls->incident(g, sim, &r, 1, hit, NULL, 0);
    cr_assert_eq(res.absorbed, 0);
    cr_assert_eq(sim->nstaged, 1, "no reflection at %d degrees", deg);
    const atl_op_ray *refl = &sim->staged[0];
    cr_expect_float_eq(r.bs + refl->bs, 0.5, 1e-15);
    cr_expect_float_eq(r.bp + refl->bp, 0.5, 1e-15);
    cr_expect_eq(r.kind, ATL_OP_REFRACT);
    cr_expect_eq(refl->kind, ATL_OP_REFLECT);
    double dx = r.p2.x - r.p1.x, dy = r.p2.y - r.p1.y;
    double sin2 = dx / sqrt(dx * dx + dy * dy);
    cr_expect_float_eq(sin(a), 1.5 * sin2, 1e-12, "Snell at %d degrees", deg);
    cr_expect(dy > 0, "the refracted ray goes on into the glass");
    /* The reflection leaves at the mirrored angle. */
    double ex = refl->p2.x - refl->p1.x, ey = refl->p2.y - refl->p1.y;
    cr_expect_float_eq(ex / sqrt(ex * ex + ey * ey), sin(a), 1e-12);
    cr_expect(ey < 0);
    atl__op_sim_free(sim);
  }
  atl__op_scene_free(s);
}

Test(optics_glass, total_internal_reflection) {
  atl_op_scene *s =
      load("{\"version\": 5, \"objs\": [{\"type\": \"PlaneGlass\", "
           "\"p1\": {\"x\": 0, \"y\": 0}, \"p2\": {\"x\": 100, \"y\": 0}}]}");
  atl_op_obj *g = s->optical[0];
  /* From inside (y > 0) at 60 degrees, past the critical 41.8. */
  atl_op_sim *sim = shell(s);
  double a = 60 * PI / 180;
  atl_op_ray r = ray(-sin(a) * 10, cos(a) * 10, 0, 0);
  cr_assert(g->cls->incident_type(g, sim, &r) == 1);
  atl_op_result res =
      g->cls->incident(g, sim, &r, 1, (atl_op_pt){0, 0}, NULL, 0);
  cr_expect_eq(res.absorbed, 0);
  cr_expect_eq(sim->nstaged, 0, "TIR emits no ray");
  cr_expect_eq(r.kind, ATL_OP_TIR);
  cr_expect_float_eq(r.bs + r.bp, 1, 1e-15, "TIR keeps all the light");
  cr_expect(r.p2.y > 0, "the ray stays inside");
  cr_expect_float_eq(r.p2.x - r.p1.x, sin(a), 1e-12);
  /* Just below the critical angle it refracts, grazing. */
  atl__op_sim_free(sim);
  sim = shell(s);
  a = asin(1 / 1.5) - 1e-6;
  r = ray(-sin(a) * 10, cos(a) * 10, 0, 0);
  g->cls->incident(g, sim, &r, 1, (atl_op_pt){0, 0}, NULL, 0);
  cr_expect_eq(r.kind, ATL_OP_REFRACT);
  cr_expect(r.p2.y < 0);
  atl__op_sim_free(sim);
  atl__op_scene_free(s);
}

/* A ray through a rectangular slab leaves parallel to itself, shifted;
 * the strongest ray leaving the scene is the transmitted one. */
Test(optics_glass, slab_keeps_direction) {
  atl_op_scene *s =
      load("{\"version\": 5, \"randomSeed\": \"0\", \"objs\": ["
           "{\"type\": \"Glass\", \"path\": ["
           "{\"x\": 100, \"y\": 0, \"arc\": false},"
           "{\"x\": 150, \"y\": 0, \"arc\": false},"
           "{\"x\": 150, \"y\": 300, \"arc\": false},"
           "{\"x\": 100, \"y\": 300, \"arc\": false}]},"
           "{\"type\": \"SingleRay\", \"p1\": {\"x\": 0, \"y\": 100}, "
           "\"p2\": {\"x\": 10, \"y\": 106}}]}");
  atl_op_sim *sim = NULL;
  cr_assert_eq(atl__op_sim_run(s, LONG_MAX, 1, &sim), 0);
  cr_expect_null(sim->warning, "%s", sim->warning);
  const atl_op_segment *best = NULL;
  for (long i = 0; i < sim->nsegs; i++) {
    const atl_op_segment *g = &sim->segs[i];
    if (g->hit_obj == -1 && g->p1.x > 149 && (!best || g->bs > best->bs))
      best = g;
  }
  cr_assert_not_null(best, "no ray left the slab");
  double dx = best->p2.x - best->p1.x, dy = best->p2.y - best->p1.y;
  cr_expect_float_eq(dy / dx, 0.6, 1e-12, "direction after the slab");
  /* Shifted: not on the incoming line y = 100 + 0.6 x. */
  cr_expect(fabs(best->p1.y - (100 + 0.6 * best->p1.x)) > 1);
  /* Two Fresnel losses of about 5 % each (s power started at 0.5). */
  cr_expect(best->bs > 0.4 && best->bs < 0.48, "s power %g", best->bs);
  atl__op_sim_free(sim);
  atl__op_scene_free(s);
}

Test(optics_glass, cauchy_dispersion) {
  atl_op_scene *s =
      load("{\"version\": 5, \"simulateColors\": true, \"objs\": ["
           "{\"type\": \"CircleGlass\", \"p1\": {\"x\": 0, \"y\": 0}, "
           "\"p2\": {\"x\": 10, \"y\": 0}, \"refIndex\": 1.5, \"cauchyB\": "
           "0.004}]}");
  atl_op_obj *g = s->optical[0];
  atl_op_sim *sim = shell(s);
  atl_op_ray r = ray(-20, 0, 0, 0);
  r.wavelength = 500;
  /* 1.5 + 0.004 / 0.5^2 */
  cr_expect_float_eq(g->cls->ref_index(g, sim, (atl_op_pt){0, 0}, &r), 1.516,
                     1e-15);
  r.wavelength = 700;
  cr_expect_float_eq(g->cls->ref_index(g, sim, (atl_op_pt){0, 0}, &r),
                     1.5 + 0.004 / 0.49, 1e-15);
  atl__op_sim_free(sim);
  atl__op_scene_free(s);
}

/* --- SphericalLens ------------------------------------------------------- */

Test(optics_glass, lens_from_radii) {
  atl_op_lens_path lp;
  atl_op_pt p1 = {180, 220}, p2 = {220, 380};
  cr_assert_eq(atl__op_lens_dr1r2(p1, p2, 60, 200, -200, &lp), 0);
  cr_expect(lp.v[2].arc && lp.v[5].arc && !lp.v[0].arc && !lp.v[1].arc);
  double d, r1, r2, ffd, bfd;
  atl__op_lens_get_dr1r2(lp.v, &d, &r1, &r2);
  cr_expect_float_eq(d, 60, 1e-9);
  cr_expect_float_eq(r1, 200, 1e-9);
  cr_expect_float_eq(r2, -200, 1e-9);
  atl__op_lens_get_dffdbfd(lp.v, 1.5, &d, &ffd, &bfd);
  cr_expect_float_eq(ffd, 189.4737, 1e-4);
  cr_expect_float_eq(bfd, 189.4737, 1e-4);
  /* And back: the focal distances give the same radii. */
  atl_op_lens_path lp2;
  cr_assert_eq(atl__op_lens_dffdbfd(p1, p2, 60, ffd, bfd, 1.5, &lp2), 0);
  atl__op_lens_get_dr1r2(lp2.v, &d, &r1, &r2);
  cr_expect_float_eq(r1, 200, 1e-6);
  cr_expect_float_eq(r2, -200, 1e-6);
  /* A radius smaller than half the height gives no lens. */
  cr_expect_eq(atl__op_lens_dr1r2(p1, p2, 60, 50, -200, &lp), -1);
}

Test(optics_glass, lens_loads_from_params) {
  atl_op_scene *s =
      load("{\"version\": 5, \"objs\": [{\"type\": \"SphericalLens\", "
           "\"p1\": {\"x\": 180, \"y\": 220}, \"p2\": {\"x\": 220, \"y\": "
           "380}, \"params\": {\"d\": 60, \"r1\": 200, \"r2\": -200}}]}");
  cr_expect_eq(s->noptical, 1);
  atl__op_scene_free(s);
}

/* --- Load errors --------------------------------------------------------- */

Test(optics_glass, load_errors) {
  expect_error("{\"type\": \"SphericalLens\", \"p1\": {\"x\": 180, \"y\": "
               "220}, \"p2\": {\"x\": 220, \"y\": 380}, \"params\": {\"d\": "
               "60, \"r1\": 10, \"r2\": -200}}",
               "objs[0] (SphericalLens): ", "invalid lens parameters");
  expect_error("{\"type\": \"SphericalLens\", \"p1\": {\"x\": 180, \"y\": "
               "220}, \"p2\": {\"x\": 220, \"y\": 380}, \"defBy\": "
               "\"DFfdBfd\", \"params\": {\"d\": 60, \"r1\": 10, \"r2\": 1}}",
               "\"params\"", "ffd");
  expect_error("{\"type\": \"SphericalLens\", \"defBy\": \"radii\"}",
               "SphericalLens", "\"defBy\"");
  expect_error("{\"type\": \"SphericalLens\"}", "SphericalLens", "\"path\"");
  expect_error("{\"type\": \"Glass\", \"path\": [{\"x\": 0, \"y\": 0}, "
               "{\"x\": 1, \"y\": 0}]}",
               "Glass", "at least 3");
  expect_error("{\"type\": \"Glass\", \"path\": [{\"x\": 0, \"y\": 0}, "
               "{\"x\": 1}, {\"x\": 1, \"y\": 1}]}",
               "\"path\"[1]", "\"y\"");
  expect_error("{\"type\": \"Glass\", \"path\": [{\"x\": 0, \"y\": 0, "
               "\"arc\": 1}, {\"x\": 1, \"y\": 0}, {\"x\": 1, \"y\": 1}]}",
               "\"path\"[0]", "\"arc\"");
  expect_error("{\"type\": \"Glass\", \"path\": 3}", "Glass", "\"path\"");
  expect_error("{\"type\": \"CircleGlass\", \"p1\": {\"x\": 1, \"y\": 1}, "
               "\"p2\": {\"x\": 1, \"y\": 1}}",
               "CircleGlass", "\"p2\"");
  expect_error("{\"type\": \"PlaneGlass\", \"p1\": {\"x\": 0, \"y\": 0}, "
               "\"p2\": {\"x\": 1, \"y\": 1}, \"refIndex\": 0}",
               "PlaneGlass", "\"refIndex\"");
  expect_error("{\"type\": \"PlaneGlass\", \"p1\": {\"x\": 0, \"y\": 0}, "
               "\"p2\": {\"x\": 1, \"y\": 1}, \"refIndex\": \"1.5\"}",
               "PlaneGlass", "\"refIndex\"");
  expect_error("{\"type\": \"CircleGlass\", \"p1\": {\"x\": 0, \"y\": 0}, "
               "\"p2\": {\"x\": 1, \"y\": 1}, \"refindex\": 1.2}",
               "CircleGlass", "unknown field \"refindex\"");
  expect_error("{\"type\": \"IdealLens\", \"p1\": {\"x\": 0, \"y\": 0}, "
               "\"p2\": {\"x\": 0, \"y\": 100}, \"focalLength\": 0}",
               "IdealLens", "\"focalLength\"");
  expect_error("{\"type\": \"CurveGlass\", \"points\": [{\"a1\": {\"x\": 0, "
               "\"y\": 0}, \"c1\": {\"x\": 1, \"y\": 0}}]}",
               "CurveGlass", "\"points\"[0]");
  expect_error("{\"type\": \"CurveGlass\"}", "CurveGlass", "\"points\"");
}

/* --- IdealLens and CurveGlass ------------------------------------------- */

/* Parallel rays through a converging ideal lens meet at its focus. */
Test(optics_glass, ideal_lens_focus) {
  atl_op_scene *s =
      load("{\"version\": 5, \"objs\": [{\"type\": \"IdealLens\", "
           "\"p1\": {\"x\": 0, \"y\": -50}, \"p2\": {\"x\": 0, \"y\": 50}, "
           "\"focalLength\": 80}]}");
  atl_op_obj *l = s->optical[0];
  atl_op_sim *sim = shell(s);
  for (int h = -40; h <= 40; h += 20) {
    atl_op_ray r = ray(-100, h, -90, h);
    atl_op_pt hit;
    cr_assert(l->cls->intersect(l, sim, &r, &hit));
    l->cls->incident(l, sim, &r, 0, hit, NULL, 0);
    /* Where the outgoing ray crosses the axis y = 0. */
    double t = -r.p1.y / (r.p2.y - r.p1.y);
    double x = r.p1.x + t * (r.p2.x - r.p1.x);
    if (h != 0)
      cr_expect_float_eq(x, 80, 1e-9, "ray at height %d", h);
  }
  atl__op_sim_free(sim);
  atl__op_scene_free(s);
}

/* A circle drawn with four Bezier curves acts almost like CircleGlass. */
Test(optics_glass, curve_glass_circle) {
  const double k = 55.22847498;
  char json[1024];
  snprintf(json, sizeof(json),
           "{\"version\": 5, \"objs\": [{\"type\": \"CurveGlass\", "
           "\"points\": ["
           "{\"a1\": {\"x\": 100, \"y\": 0}, \"c1\": {\"x\": 100, \"y\": %g}, "
           "\"c2\": {\"x\": %g, \"y\": 100}},"
           "{\"a1\": {\"x\": 0, \"y\": 100}, \"c1\": {\"x\": %g, \"y\": 100}, "
           "\"c2\": {\"x\": -100, \"y\": %g}},"
           "{\"a1\": {\"x\": -100, \"y\": 0}, \"c1\": {\"x\": -100, \"y\": "
           "%g}, \"c2\": {\"x\": %g, \"y\": -100}},"
           "{\"a1\": {\"x\": 0, \"y\": -100}, \"c1\": {\"x\": %g, \"y\": "
           "-100}, \"c2\": {\"x\": 100, \"y\": %g}}]}]}",
           k, k, -k, k, -k, -k, k, -k);
  atl_op_scene *s = load(json);
  atl_op_obj *g = s->optical[0];
  atl_op_sim *sim = shell(s);
  atl_op_ray r = ray(-300, 30, -200, 30);
  atl_op_pt hit;
  cr_assert(g->cls->intersect(g, sim, &r, &hit));
  cr_expect_float_eq(hit.x, -sqrt(100 * 100 - 30 * 30), 0.05);
  cr_expect_float_eq(hit.y, 30, 1e-9);
  cr_expect(g->cls->incident_type(g, sim, &r) == -1, "entering");
  g->cls->incident(g, sim, &r, 0, hit, NULL, 0);
  cr_expect_eq(r.kind, ATL_OP_REFRACT);
  cr_expect(g->cls->incident_type(g, sim, &r) == 1, "leaving");
  atl__op_sim_free(sim);
  atl__op_scene_free(s);
}
