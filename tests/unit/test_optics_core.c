/* The optics simulator's core (optics/): JavaScript number formatting,
 * scene loading and its errors, seedrandom's ARC4, and the ray loop on
 * scenes whose answers follow from geometry. */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "optics.h"
#include "jsnum.h"
#include "test_data.h"

static const char *js(double v) {
  static char buf[ATL_OP_JSNUM_MAX];
  atl__op_jsnum(v, buf);
  return buf;
}

/* Each expected text is what node prints for String(v). */
Test(optics_jsnum, matches_javascript) {
  cr_assert_str_eq(js(0), "0");
  cr_assert_str_eq(js(-0.0), "0");
  cr_assert_str_eq(js(1), "1");
  cr_assert_str_eq(js(-5), "-5");
  cr_assert_str_eq(js(0.1), "0.1");
  cr_assert_str_eq(js(0.1 + 0.2), "0.30000000000000004");
  cr_assert_str_eq(js(1.0 / 3), "0.3333333333333333");
  cr_assert_str_eq(js(123.456), "123.456");
  cr_assert_str_eq(js(1e21), "1e+21");
  cr_assert_str_eq(js(123456789012345680000.0), "123456789012345680000");
  cr_assert_str_eq(js(1e-6), "0.000001");
  cr_assert_str_eq(js(1e-7), "1e-7");
  cr_assert_str_eq(js(1.5e-7), "1.5e-7");
  cr_assert_str_eq(js(-2.5e-10), "-2.5e-10");
  cr_assert_str_eq(js(5e-324), "5e-324");
  cr_assert_str_eq(js(1.7976931348623157e308), "1.7976931348623157e+308");
  cr_assert_str_eq(js(NAN), "NaN");
  cr_assert_str_eq(js(INFINITY), "Infinity");
  cr_assert_str_eq(js(-INFINITY), "-Infinity");
  cr_assert_str_eq(js(100), "100");
  cr_assert_str_eq(js(2.0 / 5 * 0.2), "0.08000000000000002");
}

/* seedrandom's ARC4 seeded with "0": the first draws documented in the
 * scene tests' README, and draw 1024 of its CSV. */
Test(optics_arc4, seed_zero) {
  atl_op_arc4_t r;
  atl__op_arc4_seed(&r, "0");
  cr_assert_eq(atl__op_arc4_next(&r), 0.78035633842300667);
  cr_assert_eq(atl__op_arc4_next(&r), 0.051445200477607457);
  cr_assert_eq(atl__op_arc4_next(&r), 0.53175743942730669);
}

static atl_op_scene *load(const char *json, char **err) {
  json_object *doc = json_tokener_parse(json);
  cr_assert_not_null(doc, "bad test JSON: %s", json);
  atl_op_scene *s = NULL;
  *err = NULL;
  atl__op_scene_load(doc, &s, err);
  json_object_put(doc);
  return s;
}

/* Loads json and expects an error containing want. */
static void load_error(const char *json, const char *want) {
  char *err;
  atl_op_scene *s = load(json, &err);
  cr_assert_null(s, "loaded: %s", json);
  cr_assert_not_null(err);
  cr_assert(strstr(err, want), "error \"%s\" lacks \"%s\"", err, want);
  free(err);
}

Test(optics_load, errors_name_the_object_and_field) {
  load_error("[]", "must be a JSON object");
  load_error("{\"objs\": []}", "\"version\" must be 5");
  load_error("{\"version\": 4, \"objs\": []}", "\"version\" must be 5");
  load_error("{\"version\": 5, \"colour\": 1}", "unknown key \"colour\"");
  load_error("{\"version\": 5, \"mode\": \"movie\"}",
             "\"mode\" is \"movie\"; it must be one of rays, extended");
  load_error("{\"version\": 5, \"objs\": {}}", "\"objs\" must be an array");
  load_error("{\"version\": 5, \"rayModeDensity\": -265}",
             "\"rayModeDensity\" must be a positive number, not -265");
  load_error("{\"version\": 5, \"lengthScale\": 0}",
             "\"lengthScale\" must be a positive number, not 0");
  load_error("{\"version\": 5, \"objs\": [{\"type\": \"Laser\"}]}",
             "objs[0]: unknown object type \"Laser\"");
  load_error("{\"version\": 5, \"objs\": [{\"p1\": {\"x\": 0, \"y\": 0}}]}",
             "objs[0]: needs a \"type\"");
  load_error("{\"version\": 5, \"objs\": [{\"type\": \"Mirror\", \"p1\": "
             "{\"x\": 0, \"y\": 0}, \"p2\": {\"x\": 1, \"y\": 0}, "
             "\"colour\": 1}]}",
             "objs[0] (Mirror): unknown field \"colour\"; Mirror has p1, p2");
  load_error("{\"version\": 5, \"objs\": [{\"type\": \"Mirror\", \"p1\": "
             "{\"x\": 0, \"y\": 0}}]}",
             "objs[0] (Mirror): \"p2\" must be a point {\"x\": number, "
             "\"y\": number} (it has no default)");
  load_error("{\"version\": 5, \"objs\": [{\"type\": \"Mirror\", \"p1\": "
             "{\"x\": 0, \"y\": \"1\"}, \"p2\": {\"x\": 1, \"y\": 0}}]}",
             "\"p1\" must be a point");
  load_error("{\"version\": 5, \"objs\": [{\"type\": \"SingleRay\", \"p1\": "
             "{\"x\": 0, \"y\": 0}, \"p2\": {\"x\": 1, \"y\": 0}, "
             "\"brightness\": \"high\"}]}",
             "objs[0] (SingleRay): \"brightness\" must be a number");
  load_error("{\"version\": 5, \"objs\": [{\"type\": \"Beam\", \"p1\": "
             "{\"x\": 0, \"y\": 0}, \"p2\": {\"x\": 1, \"y\": 0}, "
             "\"lambert\": 1}]}",
             "\"lambert\" must be true or false");
  load_error("{\"version\": 5, \"objs\": [{\"type\": \"Detector\", \"p1\": "
             "{\"x\": 0, \"y\": 0}, \"p2\": {\"x\": 1, \"y\": 0}, "
             "\"irradMap\": true, \"binSize\": 0}]}",
             "\"binSize\" must be a positive number");
}

Test(optics_load, defaults_and_settings) {
  char *err;
  atl_op_scene *s = load("{\"version\": 5, \"objs\": [{\"type\": "
                         "\"PointSource\", \"x\": 1, \"y\": 2}, {\"type\": "
                         "\"CropBox\", \"p1\": {\"x\": 0, \"y\": 0}, "
                         "\"p4\": {\"x\": 1, \"y\": 1}, \"width\": 200}]}",
                         &err);
  cr_assert_not_null(s, "%s", err);
  cr_assert_str_eq(s->mode, "rays");
  cr_assert_str_eq(s->color_mode, "default");
  cr_assert_eq(s->ray_mode_density, 0.1);
  cr_assert_eq(s->length_scale, 1);
  cr_assert(isinf(s->max_ray_depth));
  cr_assert_eq(s->nobjs, 2);
  cr_assert_eq(s->noptical, 1, "a CropBox is not optical");
  atl__op_scene_free(s);
}

static atl_op_sim *simulate(const char *json, atl_op_scene **sp) {
  char *err;
  atl_op_scene *s = load(json, &err);
  cr_assert_not_null(s, "%s", err);
  atl_op_sim *sim = NULL;
  cr_assert_eq(atl__op_sim_run(s, LONG_MAX, 1, &sim), 0);
  *sp = s;
  return sim;
}

/* A 360-degree source at density 1 sends 500 rays; all escape. */
Test(optics_sim, point_source_ray_count) {
  atl_op_scene *s;
  atl_op_sim *sim = simulate("{\"version\": 5, \"rayModeDensity\": 1, "
                             "\"objs\": [{\"type\": \"PointSource\", \"x\": "
                             "0, \"y\": 0, \"brightness\": 0.5}]}",
                             &s);
  cr_assert_eq(sim->emitted, 500);
  cr_assert_eq(sim->processed, 500);
  cr_assert_eq(sim->nsegs, 500);
  /* brightness 0.5 at density 1: each ray carries 0.25 + 0.25. */
  cr_assert_float_eq(sim->segs[7].bs + sim->segs[7].bp, 0.5, 1e-15);
  cr_assert_eq(sim->brightness_scale, 1);
  atl__op_sim_free(sim);
  atl__op_scene_free(s);
}

/* A ray down onto the mirror y = x leaves towards -x, crosses a
 * detector, passes through it and escapes: three segments linked by
 * their lineage, and the detector's reading and CSV by hand. */
Test(optics_sim, mirror_and_detector) {
  atl_op_scene *s;
  atl_op_sim *sim = simulate(
      "{\"version\": 5, \"objs\": ["
      "{\"type\": \"SingleRay\", \"p1\": {\"x\": 0, \"y\": 10}, \"p2\": "
      "{\"x\": 0, \"y\": 9}, \"brightness\": 0.8},"
      "{\"type\": \"Mirror\", \"p1\": {\"x\": -1, \"y\": -1}, \"p2\": "
      "{\"x\": 1, \"y\": 1}},"
      "{\"type\": \"Detector\", \"p1\": {\"x\": -5, \"y\": -2}, \"p2\": "
      "{\"x\": -5, \"y\": 2}, \"irradMap\": true, \"binSize\": 1}]}",
      &s);
  cr_assert_null(sim->warning, "%s", sim->warning);
  cr_assert_eq(sim->nsegs, 3);
  cr_assert_float_eq(sim->segs[0].p2.x, 0, 1e-12);
  cr_assert_float_eq(sim->segs[0].p2.y, 0, 1e-12);
  cr_assert_eq(sim->segs[0].kind, ATL_OP_SOURCE);
  cr_assert_eq(sim->segs[1].kind, ATL_OP_REFLECT);
  cr_assert_eq(sim->segs[1].parent, 0);
  cr_assert_float_eq(sim->segs[1].p2.x, -5, 1e-12);
  cr_assert_float_eq(sim->segs[1].p2.y, 0, 1e-12);
  cr_assert_eq(sim->segs[2].kind, ATL_OP_PASS);
  cr_assert_eq(sim->segs[2].parent, 1);
  cr_assert_eq(sim->segs[2].hit_obj, -1);
  double power, normal, shear;
  cr_assert_eq(
      atl_optics_detector_reading(s->optical[2], &power, &normal, &shear), 0);
  /* Crossing from +x to -x: (ray) x (detector) = (-1, 0) x (0, 4) < 0. */
  cr_assert_float_eq(power, -0.8, 1e-15);
  cr_assert_float_eq(normal, 0.8, 1e-15); /* sign * sin(theta) * P */
  cr_assert_float_eq(shear, 0, 1e-15);
  char *csv = atl_optics_detector_csv(s->optical[2]);
  cr_assert_str_eq(csv, "Position,Irradiance\n0,0\n1,0\n2,-0.8\n3,0");
  free(csv);
  atl__op_sim_free(sim);
  atl__op_scene_free(s);
}

/* maxRayDepth: a ray between two facing mirrors stops after that many
 * interactions, and its brightness counts as truncated. */
Test(optics_sim, max_ray_depth) {
  atl_op_scene *s;
  atl_op_sim *sim = simulate(
      "{\"version\": 5, \"maxRayDepth\": 7, \"objs\": ["
      "{\"type\": \"SingleRay\", \"p1\": {\"x\": 0, \"y\": 0}, \"p2\": "
      "{\"x\": 1, \"y\": 0}, \"brightness\": 1},"
      "{\"type\": \"Mirror\", \"p1\": {\"x\": 5, \"y\": -1}, \"p2\": "
      "{\"x\": 5, \"y\": 1}},"
      "{\"type\": \"Mirror\", \"p1\": {\"x\": -5, \"y\": -1}, \"p2\": "
      "{\"x\": -5, \"y\": 1}}]}",
      &s);
  cr_assert_eq(sim->processed, 8, "7 reflections, then the truncation");
  cr_assert_float_eq(sim->total_truncation, 1, 1e-15);
  atl__op_sim_free(sim);
  atl__op_scene_free(s);
}

/* Two mirrors crossing where a ray meets them is undefined behaviour:
 * the simulation warns, as upstream does. */
Test(optics_sim, overlapping_mirrors_warn) {
  atl_op_scene *s;
  atl_op_sim *sim = simulate(
      "{\"version\": 5, \"objs\": ["
      "{\"type\": \"SingleRay\", \"p1\": {\"x\": 0, \"y\": 10}, \"p2\": "
      "{\"x\": 0, \"y\": 9}},"
      "{\"type\": \"Mirror\", \"p1\": {\"x\": -1, \"y\": -1}, \"p2\": "
      "{\"x\": 1, \"y\": 1}},"
      "{\"type\": \"Mirror\", \"p1\": {\"x\": -1, \"y\": 1}, \"p2\": "
      "{\"x\": 1, \"y\": -1}}]}",
      &s);
  cr_assert_not_null(sim->warning);
  cr_assert(strstr(sim->warning, "Mirror and Mirror"), "%s", sim->warning);
  atl__op_sim_free(sim);
  atl__op_scene_free(s);
}

/* The two Beam scenes that draw from the seeded generator reproduce
 * upstream's CSV bit for bit. */
Test(optics_sim, random_beam_is_reproducible) {
  size_t len;
  char *text = atl_test_slurp(
      "ray-optics-scenes/lightSource/Beam/lambert_random.json", &len);
  char *want = atl_test_slurp(
      "ray-optics-scenes/lightSource/Beam/lambert_random.csv", &len);
  atl_op_scene *s;
  atl_op_sim *sim = simulate(text, &s);
  char *csv = NULL;
  for (int i = 0; i < s->noptical && !csv; i++)
    csv = atl_optics_detector_csv(s->optical[i]);
  cr_assert_not_null(csv);
  cr_assert_str_eq(csv, want);
  free(csv);
  free(text);
  free(want);
  atl__op_sim_free(sim);
  atl__op_scene_free(s);
}

/* ray_tracing_shapely's reference prism (../shared/anchors/ray-optics.md
 * section 8): a 45-45-90 glass prism, n = 1.5, and one ray; its 7
 * segments, their kinds, end points and s/p powers, within 1e-6. The
 * Python project stores a ray that leaves the scene as 10000 units long;
 * ours keeps its direction, compared here at that length. */
Test(optics_sim, reference_prism) {
  static const struct {
    atl_op_kind kind;
    double x1, y1, x2, y2, bs, bp;
  } want[] = {
      {ATL_OP_SOURCE, 100, 80, 170, 80, 0.5, 0.5},
      {ATL_OP_REFLECT, 170, 80, 170, -9920, 0.046007, 0.004233},
      {ATL_OP_REFRACT, 170, 80, 235.9333, 100, 0.453993, 0.495767},
      {ATL_OP_TIR, 235.9333, 100, 246.7261, 96.7261, 0.453993, 0.495767},
      {ATL_OP_REFLECT, 246.7261, 96.7261, 245.7330, 100, 0.041773, 0.004197},
      {ATL_OP_REFRACT, 246.7261, 96.7261, 10246.7261, 96.7261, 0.412220,
       0.491569},
      {ATL_OP_REFRACT, 245.7330, 100, -4108.4104, 9102.3016, 0.039580,
       0.004075},
  };
  atl_op_scene *s;
  atl_op_sim *sim = simulate(
      "{\"version\": 5, \"objs\": [{\"type\": \"Glass\", \"path\": ["
      "{\"x\": 200, \"y\": 50, \"arc\": false}, {\"x\": 250, \"y\": 100, "
      "\"arc\": false}, {\"x\": 150, \"y\": 100, \"arc\": false}], "
      "\"refIndex\": 1.5}, {\"type\": \"SingleRay\", \"p1\": {\"x\": 100, "
      "\"y\": 80}, \"p2\": {\"x\": 250, \"y\": 80}, \"brightness\": 1}]}",
      &s);
  cr_assert_eq(sim->nsegs, 7);
  /* The reference rounds its figures to 4 and 6 decimals. */
  for (int i = 0; i < 7; i++) {
    const atl_op_segment *g = &sim->segs[i];
    double x2 = g->p2.x, y2 = g->p2.y;
    if (g->hit_obj < 0) {
      double dx = x2 - g->p1.x, dy = y2 - g->p1.y, l = sqrt(dx * dx + dy * dy);
      x2 = g->p1.x + dx / l * 10000;
      y2 = g->p1.y + dy / l * 10000;
    }
    cr_assert_eq(g->kind, want[i].kind, "segment %d", i);
    cr_assert_float_eq(g->p1.x, want[i].x1, 1e-4, "segment %d", i);
    cr_assert_float_eq(g->p1.y, want[i].y1, 1e-4, "segment %d", i);
    cr_assert_float_eq(x2, want[i].x2, 1e-4, "segment %d: x2 %f", i, x2);
    cr_assert_float_eq(y2, want[i].y2, 1e-4, "segment %d: y2 %f", i, y2);
    cr_assert_float_eq(g->bs, want[i].bs, 1e-6, "segment %d", i);
    cr_assert_float_eq(g->bp, want[i].bp, 1e-6, "segment %d", i);
  }
  /* The lineage: the TIR segment continues the refracted one, the last
   * refraction comes from the reflection inside the prism. */
  cr_assert_eq(sim->segs[3].parent, 2);
  cr_assert_eq(sim->segs[6].parent, 4);
  /* As the reference has them: segment 2 caused the TIR, the count goes
   * on to its descendants, the source ray is the bundle's first (gap). */
  for (int i = 0; i < 7; i++)
    cr_assert_eq(sim->segs[i].caused_tir, i == 2, "segment %d", i);
  static const int tirs[7] = {0, 0, 0, 1, 1, 1, 1};
  for (int i = 0; i < 7; i++)
    cr_assert_eq(sim->segs[i].tir_count, tirs[i], "segment %d", i);
  cr_assert(sim->segs[0].gap);
  atl__op_sim_free(sim);
  atl__op_scene_free(s);
}

/* Writing back: the type first, fields at their defaults left out (1 and
 * 1.0 alike), the others kept as written, the scene's settings after the
 * objects and only when they differ from the app's. */
Test(optics_write, drops_defaults_keeps_the_rest) {
  char *err;
  atl_op_scene *s =
      load("{\"version\": 5, \"name\": \"w\", \"rayModeDensity\": 0.1, "
           "\"lengthScale\": 2, \"objs\": [{\"p2\": {\"x\": 1, \"y\": 0}, "
           "\"type\": \"Mirror\", \"p1\": {\"x\": 0, \"y\": 0}, \"filter\": "
           "false, \"bandwidth\": 10.0, \"wavelength\": 600}]}",
           &err);
  cr_assert_not_null(s, "%s", err);
  json_object *out = atl__op_scene_write(s);
  cr_assert_str_eq(
      json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN),
      "{\"version\":5,\"name\":\"w\",\"objs\":[{\"type\":\"Mirror\",\"p1\":{"
      "\"x\":0,\"y\":0},\"p2\":{\"x\":1,\"y\":0},\"wavelength\":600}],"
      "\"width\":1500,\"height\":900,\"lengthScale\":2}");
  json_object_put(out);
  atl__op_scene_free(s);
}

/* ray_tracing_shapely's grazing case: a ray at 85 degrees onto a slab of
 * n = 1.5. The source segment's end caused an angle-grazing refraction,
 * and the refracted segment (the third) is its result, from (643.01, 0). */
Test(optics_sim, grazing_flags) {
  double a = 85 * M_PI / 180;
  char doc[1024];
  snprintf(doc, sizeof(doc),
           "{\"version\": 5, \"objs\": [{\"type\": \"Glass\", \"path\": ["
           "{\"x\": -1000, \"y\": -100, \"arc\": false}, {\"x\": 1000, \"y\": "
           "-100, \"arc\": false}, {\"x\": 1000, \"y\": 0, \"arc\": false}, "
           "{\"x\": -1000, \"y\": 0, \"arc\": false}], \"refIndex\": 1.5}, "
           "{\"type\": \"SingleRay\", \"p1\": {\"x\": -500, \"y\": 100}, "
           "\"p2\": {\"x\": %.17g, \"y\": %.17g}}]}",
           -500 + sin(a), 100 - cos(a));
  atl_op_scene *s;
  atl_op_sim *sim = simulate(doc, &s);
  cr_assert_geq(sim->nsegs, 3);
  int caused = 0, results = 0;
  for (long i = 0; i < sim->nsegs; i++) {
    caused += (sim->segs[i].caused_grazing & ATL_OP_GRAZING_ANGLE) != 0;
    results += (sim->segs[i].grazing & ATL_OP_GRAZING_ANGLE) != 0;
  }
  cr_assert_eq(caused, 1);
  cr_assert_eq(results, 1);
  cr_assert(sim->segs[0].caused_grazing & ATL_OP_GRAZING_ANGLE);
  cr_assert(sim->segs[2].grazing & ATL_OP_GRAZING_ANGLE);
  cr_assert_eq(sim->segs[2].kind, ATL_OP_REFRACT);
  cr_assert_float_eq(sim->segs[2].p1.x, 643.01, 0.005);
  cr_assert_float_eq(sim->segs[2].p1.y, 0, 1e-9);
  atl__op_sim_free(sim);
  atl__op_scene_free(s);
}

/* Energy: in the new colour modes (no brightening of thinned-out weak
 * reflections) the power a source sends equals what leaves the scene plus
 * what was truncated, whatever the glass does with it. */
Test(optics_sim, energy_is_conserved) {
  atl_op_scene *s;
  atl_op_sim *sim = simulate(
      "{\"version\": 5, \"colorMode\": \"linear\", \"objs\": ["
      "{\"type\": \"Glass\", \"path\": [{\"x\": 200, \"y\": 50, \"arc\": "
      "false}, {\"x\": 250, \"y\": 100, \"arc\": false}, {\"x\": 150, \"y\": "
      "100, \"arc\": false}], \"refIndex\": 1.5}, {\"type\": "
      "\"PointSource\", \"x\": 201.3, \"y\": 85, \"brightness\": 0.05}]}",
      &s);
  double out = 0, in = 0;
  for (long i = 0; i < sim->nsegs; i++) {
    if (sim->segs[i].kind == ATL_OP_SOURCE)
      in += sim->segs[i].bs + sim->segs[i].bp;
    if (sim->segs[i].hit_obj < 0)
      out += sim->segs[i].bs + sim->segs[i].bp;
  }
  cr_assert_gt(in, 0);
  cr_assert_null(sim->warning, "%s", sim->warning);
  cr_assert_float_eq(out + sim->total_truncation, in, 1e-9 * in,
                     "in %.12g, out %.12g, truncated %.12g", in, out,
                     sim->total_truncation);
  atl__op_sim_free(sim);
  atl__op_scene_free(s);
}
