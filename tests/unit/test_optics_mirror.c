/* The optics simulator's mirrors, blockers and gratings (optics/
 * objs_mirror.c, objs_blocker.c, objs_grating.c) against geometry: the
 * focus of an ideal and a parabolic mirror, reflection off an arc, the
 * grating equation, a beam splitter's power balance, what blockers
 * stop, and the load errors for bad fields. */
#include "atl-build.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op.h"

#define EPS 1e-9

typedef struct {
  atl_op_scene *scene;
  atl_op_sim *sim;
} run_t;

/* Loads {"version": 5, <settings>, "objs": [<objs>]} and simulates it,
 * recording the segments. */
static run_t run(const char *settings, const char *objs) {
  char buf[4096];
  snprintf(buf, sizeof(buf), "{\"version\": 5, %s%s\"objs\": [%s]}", settings,
           settings[0] ? ", " : "", objs);
  json_object *doc = json_tokener_parse(buf);
  cr_assert_not_null(doc, "bad test JSON: %s", buf);
  run_t r = {0};
  char *err = NULL;
  int rc = atl__op_scene_load(doc, &r.scene, &err);
  json_object_put(doc);
  cr_assert_eq(rc, 0, "load failed: %s", err ? err : "?");
  rc = atl__op_sim_run(r.scene, LONG_MAX, 1, &r.sim);
  cr_assert_eq(rc, 0);
  cr_assert_null(r.sim->error);
  cr_assert_null(r.sim->warning, "warning: %s", r.sim->warning);
  return r;
}

static void done(run_t *r) {
  atl__op_sim_free(r->sim);
  atl__op_scene_free(r->scene);
}

/* The load error of a scene with the one object obj. */
static char *load_error(const char *obj) {
  char buf[2048];
  snprintf(buf, sizeof(buf), "{\"version\": 5, \"objs\": [%s]}", obj);
  json_object *doc = json_tokener_parse(buf);
  cr_assert_not_null(doc);
  atl_op_scene *s = NULL;
  char *err = NULL;
  int rc = atl__op_scene_load(doc, &s, &err);
  json_object_put(doc);
  cr_assert_eq(rc, -EINVAL, "expected a load error for %s", obj);
  cr_assert_null(s);
  cr_assert_not_null(err);
  return err;
}

static void assert_error(const char *obj, const char *part1,
                         const char *part2) {
  char *err = load_error(obj);
  cr_assert(strstr(err, part1) && strstr(err, part2),
            "error \"%s\" should mention %s and %s", err, part1, part2);
  free(err);
}

/* The segments a given kind of interaction made, in order. */
static int segs_of(const run_t *r, atl_op_kind kind, const atl_op_segment **out,
                   int max) {
  int n = 0;
  for (long i = 0; i < r->sim->nsegs; i++)
    if (r->sim->segs[i].kind == kind && n < max)
      out[n++] = &r->sim->segs[i];
  return n;
}

/* The z of (b - a) x (c - a): 0 when the three are collinear. */
static double cross3(atl_op_pt a, atl_op_pt b, atl_op_pt c) {
  return (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x);
}

/* A unit vector along the segment. */
static atl_op_pt dir_of(const atl_op_segment *g) {
  double dx = g->p2.x - g->p1.x, dy = g->p2.y - g->p1.y;
  double l = sqrt(dx * dx + dy * dy);
  atl_op_pt d = {dx / l, dy / l};
  return d;
}

/* A SingleRay from (x1, y1) through (x2, y2), and its wavelength. */
typedef struct {
  double x1, y1, x2, y2, wl;
} ray_spec;

/* Simulates the object obj (JSON) with one SingleRay. */
static run_t run_ray(const char *settings, const char *obj, ray_spec ray) {
  char objs[2048];
  snprintf(objs, sizeof(objs),
           "%s, {\"type\": \"SingleRay\", \"p1\": {\"x\": %.17g, \"y\": "
           "%.17g}, \"p2\": {\"x\": %.17g, \"y\": %.17g}, \"wavelength\": "
           "%g}",
           obj, ray.x1, ray.y1, ray.x2, ray.y2, ray.wl);
  return run(settings, objs);
}

/* The one reflected segment of a run. */
static const atl_op_segment *one_reflection(const run_t *r) {
  const atl_op_segment *g[4];
  cr_assert_eq(segs_of(r, ATL_OP_REFLECT, g, 4), 1);
  return g[0];
}

/* --- mirrors ------------------------------------------------------------ */

/* --- mirrors ------------------------------------------------------------ */

/* An IdealMirror on x = 0 from y = -50 to 50 with focal length f, hit by
 * a ray parallel to its axis at height h coming from -x. */
static run_t ideal(double f, double h) {
  char obj[256];
  snprintf(obj, sizeof(obj),
           "{\"type\": \"IdealMirror\", \"p1\": {\"x\": 0, \"y\": -50}, "
           "\"p2\": {\"x\": 0, \"y\": 50}, \"focalLength\": %g}",
           f);
  return run_ray("", obj, (ray_spec){-300, h, -299, h, 540});
}

/* A ray parallel to the axis is reflected through the focus, f in front
 * of the mirror on the ray's side. */
Test(optics_mirror, ideal_mirror_focuses_parallel_rays) {
  const double hs[] = {10, -25, 40};
  for (size_t i = 0; i < sizeof(hs) / sizeof(hs[0]); i++) {
    run_t r = ideal(100, hs[i]);
    const atl_op_segment *g = one_reflection(&r);
    cr_assert_float_eq(g->p1.x, 0, EPS);
    cr_assert_float_eq(g->p1.y, hs[i], EPS);
    atl_op_pt focus = {-100, 0};
    cr_assert_float_eq(cross3(g->p1, g->p2, focus), 0, 1e-6, "h = %g", hs[i]);
    cr_assert_lt(dir_of(g).x, 0, "the reflection goes back");
    done(&r);
  }
}

/* A negative focal length diverges: the reflected ray comes from the
 * virtual focus behind the mirror. */
Test(optics_mirror, ideal_mirror_negative_focal_length) {
  run_t r = ideal(-100, 10);
  const atl_op_segment *g = one_reflection(&r);
  atl_op_pt virt = {100, 0};
  cr_assert_float_eq(cross3(g->p1, g->p2, virt), 0, 1e-6);
  cr_assert_lt(dir_of(g).x, 0);
  cr_assert_gt(dir_of(g).y, 0, "diverging: away from the axis");
  done(&r);
}

/* The parabola y = x^2 / 100 (vertex at the origin, ends at x = +-50)
 * has its focus at (0, 25); rays coming down parallel to the axis are
 * reflected through it. */
Test(optics_mirror, parabolic_mirror_focus) {
  const char *obj = "{\"type\": \"ParabolicMirror\", \"p1\": {\"x\": -50, "
                    "\"y\": 25}, \"p2\": {\"x\": 50, \"y\": 25}, \"p3\": "
                    "{\"x\": 0, \"y\": 0}}";
  const double xs[] = {-45, -30, -5, 20, 49};
  for (size_t i = 0; i < sizeof(xs) / sizeof(xs[0]); i++) {
    run_t r = run_ray("", obj, (ray_spec){xs[i], 200, xs[i], 199, 540});
    const atl_op_segment *g = one_reflection(&r);
    cr_assert_float_eq(g->p1.x, xs[i], EPS);
    cr_assert_float_eq(g->p1.y, xs[i] * xs[i] / 100, EPS);
    atl_op_pt focus = {0, 25};
    cr_assert_float_eq(cross3(g->p1, g->p2, focus), 0, 1e-6, "x = %g", xs[i]);
    /* Towards the focus, not away from it. */
    atl_op_pt d = dir_of(g);
    cr_assert_gt(d.x * (0 - g->p1.x) + d.y * (25 - g->p1.y), 0);
    done(&r);
  }
}

/* Collinear points make a plane mirror: the reflection mirrors the
 * incoming angle. */
Test(optics_mirror, collinear_arc_and_parabola_are_plane_mirrors) {
  const char *types[] = {"ArcMirror", "ParabolicMirror"};
  for (int i = 0; i < 2; i++) {
    char obj[256];
    snprintf(obj, sizeof(obj),
             "{\"type\": \"%s\", \"p1\": {\"x\": -50, \"y\": 0}, \"p2\": "
             "{\"x\": 50, \"y\": 0}, \"p3\": {\"x\": 10, \"y\": 0}}",
             types[i]);
    run_t r = run_ray("", obj, (ray_spec){-100, 100, -99, 99, 540});
    const atl_op_segment *g = one_reflection(&r);
    cr_assert_float_eq(g->p1.x, 0, EPS);
    cr_assert_float_eq(g->p1.y, 0, EPS);
    atl_op_pt d = dir_of(g);
    cr_assert_float_eq(d.x, M_SQRT1_2, 1e-12, "%s", types[i]);
    cr_assert_float_eq(d.y, M_SQRT1_2, 1e-12, "%s", types[i]);
    done(&r);
  }
}

/* The arc from (-60, 20) through the origin to (60, 20): part of the
 * circle centred at (0, 100) with radius 100. */
static const char *const arc_points =
    "\"p1\": {\"x\": -60, \"y\": 20}, \"p2\": {\"x\": 60, \"y\": 20}, "
    "\"p3\": {\"x\": 0, \"y\": 0}";

/* The reflection obeys the law of reflection about the radius. */
Test(optics_mirror, arc_mirror_reflects_about_the_radius) {
  char obj[256];
  snprintf(obj, sizeof(obj), "{\"type\": \"ArcMirror\", %s}", arc_points);
  const double xs[] = {-55, -20, 0.5, 30, 45};
  for (size_t i = 0; i < sizeof(xs) / sizeof(xs[0]); i++) {
    run_t r = run_ray("", obj, (ray_spec){xs[i], -100, xs[i] + 0.1, -99, 540});
    atl_op_pt h = one_reflection(&r)->p1;
    cr_assert_float_eq(hypot(h.x, h.y - 100), 100, EPS, "on the circle");
    double in_x = 0.1 / hypot(0.1, 1), in_y = 1 / hypot(0.1, 1);
    double nx = h.x / 100, ny = (h.y - 100) / 100;
    double dot = in_x * nx + in_y * ny;
    atl_op_pt d = dir_of(one_reflection(&r));
    cr_assert_float_eq(d.x, in_x - 2 * dot * nx, EPS, "x = %g", xs[i]);
    cr_assert_float_eq(d.y, in_y - 2 * dot * ny, EPS, "x = %g", xs[i]);
    done(&r);
  }
}

/* The arc spans only p1 -> p3 -> p2: a ray coming down through the open
 * top of the circle meets only the bottom. */
Test(optics_mirror, arc_mirror_misses_outside_its_arc) {
  char obj[256];
  snprintf(obj, sizeof(obj), "{\"type\": \"ArcMirror\", %s}", arc_points);
  run_t r = run_ray("", obj, (ray_spec){30, 300, 30, 299, 540});
  cr_assert_lt(one_reflection(&r)->p1.y, 20);
  done(&r);
}

/* --- beam splitter ----------------------------------------------------- */

/* A splitter along y = 0, hit at the origin at 45 degrees by a ray of
 * the given brightness. */
static run_t splitter(double trans, double brightness, const char *settings) {
  char objs[512];
  snprintf(objs, sizeof(objs),
           "{\"type\": \"BeamSplitter\", \"p1\": {\"x\": -50, \"y\": 0}, "
           "\"p2\": {\"x\": 50, \"y\": 0}, \"transRatio\": %.17g}, "
           "{\"type\": \"SingleRay\", \"p1\": {\"x\": -100, \"y\": 100}, "
           "\"p2\": {\"x\": -99, \"y\": 99}, \"brightness\": %.17g}",
           trans, brightness);
  return run(settings, objs);
}

Test(optics_mirror, beam_splitter_divides_the_power) {
  const double ts[] = {0.5, 0.3, 0.9};
  for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
    run_t r = splitter(ts[i], 1, "");
    const atl_op_segment *refl = one_reflection(&r), *trans[4];
    cr_assert_eq(segs_of(&r, ATL_OP_REFRACT, trans, 4), 1);
    double pr = refl->bs + refl->bp, pt = trans[0]->bs + trans[0]->bp;
    cr_assert_float_eq(pr, 1 - ts[i], 1e-12);
    cr_assert_float_eq(pt, ts[i], 1e-12);
    cr_assert_float_eq(pr + pt, 1, 1e-12);
    cr_assert_float_eq(refl->bs, refl->bp, 1e-15);
    /* The transmitted ray goes straight on, the reflected one up. */
    atl_op_pt dt = dir_of(trans[0]), dr = dir_of(refl);
    cr_assert_float_eq(dt.x, M_SQRT1_2, 1e-12);
    cr_assert_float_eq(dt.y, -M_SQRT1_2, 1e-12);
    cr_assert_float_eq(dr.x, M_SQRT1_2, 1e-12);
    cr_assert_float_eq(dr.y, M_SQRT1_2, 1e-12);
    cr_assert_float_eq(r.sim->total_truncation, 0, 1e-15);
    done(&r);
  }
}

/* The number of segments of each kind, and the truncated power. */
static void assert_split(run_t r, int reflected, int transmitted,
                         double truncated) {
  const atl_op_segment *g[4];
  cr_assert_eq(segs_of(&r, ATL_OP_REFLECT, g, 4), reflected);
  cr_assert_eq(segs_of(&r, ATL_OP_REFRACT, g, 4), transmitted);
  cr_assert_float_eq(r.sim->total_truncation, truncated, 1e-15);
  done(&r);
}

/* Parts below 0.01 (1e-6 in the other colour modes) are not followed:
 * a weak transmitted part is truncated, and so are both parts when both
 * are weak (the ray is absorbed). A weak reflected part beside a strong
 * transmitted one is still followed, as upstream does. */
Test(optics_mirror, beam_splitter_brightness_cutoffs) {
  assert_split(splitter(0.005, 1, ""), 1, 0, 0.005);
  assert_split(splitter(0.995, 1, ""), 1, 1, 0);
  assert_split(splitter(0.005, 1, "\"colorMode\": \"linear\""), 1, 1, 0);
  assert_split(splitter(0.5, 0.015, ""), 0, 0, 0.015);
}

/* A dichroic splitter only sees the rays in its band. */
Test(optics_mirror, beam_splitter_filter) {
  const char *obj = "{\"type\": \"BeamSplitter\", \"p1\": {\"x\": -50, "
                    "\"y\": 0}, \"p2\": {\"x\": 50, \"y\": 0}, \"filter\": "
                    "true, \"wavelength\": 450, \"bandwidth\": 20}";
  run_t r = run_ray("\"simulateColors\": true", obj,
                    (ray_spec){-100, 100, -99, 99, 600});
  cr_assert_eq(r.sim->nsegs, 1, "the ray passes untouched");
  done(&r);
  r = run_ray("\"simulateColors\": true", obj,
              (ray_spec){-100, 100, -99, 99, 460});
  assert_split(r, 1, 1, 0);
}

/* --- blockers ----------------------------------------------------------- */

/* The object the ray going +x at height y ends on (-1: none). */
static int blocked_by(const char *obj, double y, double *end_x) {
  run_t r = run_ray("", obj, (ray_spec){-50, y, -49, y, 540});
  cr_assert_eq(r.sim->nsegs, 1);
  int hit = r.sim->segs[0].hit_obj;
  *end_x = r.sim->segs[0].p2.x;
  done(&r);
  return hit;
}

Test(optics_mirror, circle_blocker_absorbs) {
  const char *circle = "{\"type\": \"CircleBlocker\", \"p1\": {\"x\": 0, "
                       "\"y\": 0}, \"p2\": {\"x\": 10, \"y\": 0}}";
  double x;
  cr_assert_eq(blocked_by(circle, 5, &x), 0);
  cr_assert_float_eq(x, -sqrt(75), EPS, "stopped on the near side");
  cr_assert_eq(blocked_by(circle, 11, &x), -1, "a miss above the circle");
}

Test(optics_mirror, aperture_passes_its_hole) {
  const char *ap = "{\"type\": \"Aperture\", \"p1\": {\"x\": 0, \"y\": -50}, "
                   "\"p2\": {\"x\": 0, \"y\": 50}, \"p3\": {\"x\": 0, \"y\": "
                   "-10}, \"p4\": {\"x\": 0, \"y\": 10}}";
  const double ys[] = {-40, -5, 0, 9, 30};
  const int blocked[] = {1, 0, 0, 0, 1};
  for (int i = 0; i < 5; i++) {
    double x;
    cr_assert_eq(blocked_by(ap, ys[i], &x), blocked[i] ? 0 : -1, "y = %g",
                 ys[i]);
  }
}

/* --- gratings ----------------------------------------------------------- */

/* A DiffractionGrating on x = 0 (normal +x) with the given extra fields,
 * hit by a ray of the given wavelength at incidence sin_i. */
static run_t grating(const char *fields, double wavelength, double sin_i) {
  char obj[1024];
  snprintf(obj, sizeof(obj),
           "{\"type\": \"DiffractionGrating\", \"p1\": {\"x\": 0, \"y\": -50}, "
           "\"p2\": {\"x\": 0, \"y\": 50}, %s}",
           fields);
  double cos_i = sqrt(1 - sin_i * sin_i);
  return run_ray("\"simulateColors\": true", obj,
                 (ray_spec){-100 * cos_i, -100 * sin_i, -99 * cos_i,
                            -99 * sin_i, wavelength});
}

/* Checks every order: one ray per m with |sin_i - m lambda / d| <= 1,
 * leaving at that sine, on the far side (or back, when mirrored). */
static void grating_orders(double density, double wavelength, double sin_i,
                           int mirrored) {
  double d_nm = 1e6 / density;
  /* Every order gets 0.1 (the list covers orders up to +-15). */
  char fields[512];
  int len = snprintf(fields, sizeof(fields),
                     "\"lineDensity\": %g, \"mirrored\": %s, "
                     "\"customBrightness\": true, \"brightnesses\": [0.1",
                     density, mirrored ? "true" : "false");
  for (int i = 1; i < 31; i++)
    len += snprintf(fields + len, sizeof(fields) - (size_t)len, ", 0.1");
  snprintf(fields + len, sizeof(fields) - (size_t)len, "]");
  run_t r = grating(fields, wavelength, sin_i);
  const atl_op_segment *g[64];
  int n = segs_of(&r, mirrored ? ATL_OP_REFLECT : ATL_OP_REFRACT, g, 64);
  int expected = 0;
  for (int m = -40; m <= 40; m++) {
    double s = sin_i - m * wavelength / d_nm;
    if (fabs(s) > 1)
      continue;
    expected++;
    int found = 0;
    for (int k = 0; k < n; k++) {
      atl_op_pt dir = dir_of(g[k]);
      cr_assert(mirrored ? dir.x <= 1e-12 : dir.x >= -1e-12);
      found |= fabs(dir.y - s) < 1e-9;
    }
    cr_assert(found, "order %d (sine %g) missing, %g nm, %g lines/mm", m, s,
              wavelength, density);
  }
  cr_assert_eq(n, expected);
  for (int k = 0; k < n; k++)
    cr_assert_float_eq(g[k]->bs + g[k]->bp, 0.1, 1e-12);
  done(&r);
}

Test(optics_mirror, grating_equation) {
  grating_orders(500, 500, 0, 0); /* d = 2000 nm: sines 0, +-0.25, ... */
  grating_orders(500, 650, 0, 0); /* longer waves bend further */
  grating_orders(1200, 450, 0.3, 0);
  grating_orders(300, 550, -0.6, 0);
  grating_orders(800, 500, 0.25, 1); /* reflective */
}

/* The default brightnesses follow the slit envelope: with slitRatio 0.5
 * the even orders vanish and the zeroth carries a quarter of the ray. */
Test(optics_mirror, grating_slit_envelope) {
  run_t r = grating("\"lineDensity\": 250", 500, 0);
  const atl_op_segment *g[64];
  int n = segs_of(&r, ATL_OP_REFRACT, g, 64);
  cr_assert_gt(n, 2);
  for (int k = 0; k < n; k++) {
    double m = dir_of(g[k]).y * 4000 / 500; /* d sin = m lambda */
    double p = g[k]->bs + g[k]->bp;
    if (fabs(m) < 1e-9)
      cr_assert_float_eq(p, 0.25, 1e-12);
    else
      cr_assert_float_eq(p, 0.25 * pow(sin(M_PI * m / 2) / (M_PI * m / 2), 2),
                         1e-9, "order %g", m);
  }
  cr_assert_null(r.scene->optical[0]->warning);
  done(&r);
}

/* Without simulated colours the grating still works (as green light) and
 * says so on the object, not as a simulation warning. */
Test(optics_mirror, grating_warns_without_colours) {
  run_t r = run("", "{\"type\": \"DiffractionGrating\", \"p1\": {\"x\": 0, "
                    "\"y\": -50}, \"p2\": {\"x\": 0, \"y\": 50}}");
  cr_assert_not_null(r.scene->optical[0]->warning);
  cr_assert(strstr(r.scene->optical[0]->warning, "540"));
  done(&r);
}

/* A concave grating's zeroth order is the arc mirror's reflection. */
Test(optics_mirror, concave_grating_zeroth_order_is_a_mirror) {
  char obj[512];
  ray_spec ray = {25, -100, 25.2, -99, 540};
  snprintf(obj, sizeof(obj),
           "{\"type\": \"ConcaveDiffractionGrating\", %s, "
           "\"customBrightness\": true, \"brightnesses\": [1]}",
           arc_points);
  run_t r = run_ray("\"simulateColors\": true", obj, ray);
  snprintf(obj, sizeof(obj), "{\"type\": \"ArcMirror\", %s}", arc_points);
  run_t m = run_ray("\"simulateColors\": true", obj, ray);
  const atl_op_segment *a = one_reflection(&r), *b = one_reflection(&m);
  cr_assert_float_eq(a->p1.x, b->p1.x, 1e-12);
  cr_assert_float_eq(a->p1.y, b->p1.y, 1e-12);
  atl_op_pt da = dir_of(a), db = dir_of(b);
  cr_assert_float_eq(da.x, db.x, EPS);
  cr_assert_float_eq(da.y, db.y, EPS);
  done(&r);
  done(&m);
}

/* --- load errors -------------------------------------------------------- */

Test(optics_mirror, load_errors_name_object_and_field) {
  assert_error("{\"type\": \"BeamSplitter\", \"p1\": {\"x\": 0, \"y\": 0}, "
               "\"p2\": {\"x\": 1, \"y\": 0}, \"transRatio\": 1.5}",
               "objs[0] (BeamSplitter)", "transRatio");
  assert_error("{\"type\": \"IdealMirror\", \"p1\": {\"x\": 0, \"y\": 0}, "
               "\"p2\": {\"x\": 1, \"y\": 0}, \"focalLength\": 0}",
               "objs[0] (IdealMirror)", "focalLength");
  assert_error("{\"type\": \"IdealMirror\", \"p1\": {\"x\": 0, \"y\": 0}, "
               "\"p2\": {\"x\": 1, \"y\": 0}, \"focalLength\": \"far\"}",
               "IdealMirror", "focalLength");
  assert_error("{\"type\": \"ArcMirror\", \"p1\": {\"x\": 0, \"y\": 0}, "
               "\"p2\": {\"x\": 1, \"y\": 0}}",
               "ArcMirror", "p3");
  assert_error("{\"type\": \"ParabolicMirror\", \"p1\": {\"x\": 0, \"y\": 0}, "
               "\"p2\": {\"x\": 1, \"y\": 0}, \"p3\": {\"x\": 0, \"y\": 1}, "
               "\"bandwidth\": -5}",
               "objs[0] (ParabolicMirror)", "bandwidth");
  assert_error("{\"type\": \"Mirror\", \"p1\": {\"x\": 0, \"y\": 0}, "
               "\"p2\": {\"x\": 1, \"y\": 0}, \"wavelength\": -540}",
               "objs[0] (Mirror)", "wavelength");
  assert_error("{\"type\": \"Aperture\", \"p1\": {\"x\": 0, \"y\": 0}, "
               "\"p2\": {\"x\": 1, \"y\": 0}, \"p3\": {\"x\": 0, \"y\": 0}}",
               "Aperture", "p4");
  assert_error("{\"type\": \"CircleBlocker\", \"p1\": {\"x\": 0, \"y\": 0}, "
               "\"p2\": {\"x\": 1, \"y\": 0}, \"radius\": 3}",
               "CircleBlocker", "radius");
  const char *bad[][2] = {
      {"\"lineDensity\": 0", "lineDensity"},
      {"\"lineDensity\": -300", "lineDensity"},
      {"\"slitRatio\": 1.5", "slitRatio"},
      {"\"brightnesses\": 0.5", "brightnesses"},
      {"\"brightnesses\": [1, \"half\"]", "brightnesses\"[1]"},
      {"\"brightnesses\": [1, -0.5]", "brightnesses\"[1]"},
      {"\"mirrored\": 1", "mirrored"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char obj[512];
    snprintf(obj, sizeof(obj),
             "{\"type\": \"DiffractionGrating\", \"p1\": {\"x\": 0, \"y\": 0}, "
             "\"p2\": {\"x\": 1, \"y\": 0}, %s}",
             bad[i][0]);
    assert_error(obj, "DiffractionGrating", bad[i][1]);
  }
  assert_error("{\"type\": \"ConcaveDiffractionGrating\", \"p1\": {\"x\": 0, "
               "\"y\": 0}, \"p2\": {\"x\": 1, \"y\": 0}, \"p3\": {\"x\": 0, "
               "\"y\": 1}, \"slitRatio\": -0.1}",
               "objs[0] (ConcaveDiffractionGrating)", "slitRatio");
}
