/* The optics plugin's tools (plugins/optics) through the daemon's real
 * call path: building the bench, its checks and their messages, the
 * simulation's summary, the tools over the rays, the standalone Fresnel
 * tools and render_optics. */
#include "atl-build.h"

#include <math.h>

#include "scene_fixture.h"

TestSuite(optics_plugin, .init = setup, .fini = teardown, .timeout = 300);

#define PRISM                                                                  \
  "{\"name\":\"Main Prism\",\"type\":\"Glass\",\"path\":[{\"x\":200,\"y\":"    \
  "50},{\"x\":250,\"y\":100},{\"x\":150,\"y\":100}],\"refIndex\":1.5}"
#define RAY                                                                    \
  "{\"name\":\"ray\",\"type\":\"SingleRay\",\"p1\":{\"x\":100,\"y\":80},"      \
  "\"p2\":{\"x\":250,\"y\":80},\"brightness\":1}"

/* ray_tracing_shapely's reference prism (anchors/ray-optics.md 8). */
static void reference_prism(void) {
  free(ok("optics_add", PRISM));
  free(ok("optics_add", RAY));
}

/* The member at path (a.b.c) of a call's result, as JSON text. */
static char *member(const char *tool, const char *args, const char *path) {
  json_object *env = call(tool, args);
  cr_assert(succeeded(env), "%s %s failed: %s", tool, args,
            json_object_to_json_string(env));
  json_object *v = json_object_object_get(env, "result");
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", path);
  for (char *save = NULL, *k = strtok_r(buf, ".", &save); k != NULL;
       k = strtok_r(NULL, ".", &save)) {
    if (json_object_is_type(v, json_type_array))
      v = json_object_array_get_idx(v, (size_t)atoi(k));
    else
      cr_assert(json_object_object_get_ex(v, k, &v), "%s: no %s in %s", tool,
                path, json_object_to_json_string(env));
  }
  char *out = strdup(json_object_to_json_string_ext(
      v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(env);
  return out;
}

#define EXPECT_MEMBER(tool, args, path, expected)                              \
  do {                                                                         \
    char *got_ = member(tool, args, path);                                     \
    cr_assert_str_eq(got_, expected, "%s %s: %s is %s", tool, args, path,      \
                     got_);                                                    \
    free(got_);                                                                \
  } while (0)

/* Asserts that the member is a number within 1e-6 of expected. */
#define EXPECT_NUM(tool, args, path, expected)                                 \
  do {                                                                         \
    char *got_ = member(tool, args, path);                                     \
    cr_assert(fabs(atof(got_) - (expected)) < 1e-6, "%s %s: %s is %s", tool,   \
              args, path, got_);                                               \
    free(got_);                                                                \
  } while (0)

/* ---- building the bench ---- */

Test(optics_plugin, add_stores_the_object_with_the_apps_defaults) {
  EXPECT_OK("optics_add", PRISM,
            "{\"name\":\"Main Prism\",\"type\":\"Glass\",\"path\":[{\"x\":"
            "200,\"y\":50,\"arc\":false},{\"x\":250,\"y\":100,\"arc\":false},"
            "{\"x\":150,\"y\":100,\"arc\":false}],\"refIndex\":1.5,"
            "\"cauchyB\":0.004,\"partialReflect\":true}");
  EXPECT_ERR("optics_add", PRISM,
             "An object named 'Main Prism' already exists; choose another "
             "name, or change it with optics_update");
  EXPECT_MEMBER("optics_list", "{}", "count", "1");
}

/* Every object type whose shape is made of parametric pieces
 * (ParamMirror, ParamGlass, ParamGrinGlass, CustomSurface) can be added:
 * the schema's "pieces" once referred to itself, and every value was
 * refused as nesting too deep. */
Test(optics_plugin, pieces_are_accepted) {
  static const char *const types[] = {"ParamMirror", "ParamGlass"};
  for (size_t i = 0; i < 2; i++) {
    char args[512];
    snprintf(args, sizeof(args),
             "{\"name\":\"p%zu\",\"type\":\"%s\",\"origin\":{\"x\":100,"
             "\"y\":100},\"pieces\":[{\"eqnX\":\"20\\\\cos(t)\",\"eqnY\":"
             "\"20\\\\sin(t)\",\"tMin\":0,\"tMax\":6.28,\"tStep\":0.1}]}",
             i, types[i]);
    free(ok("optics_add", args));
  }
  EXPECT_MEMBER("optics_list", "{}", "count", "2");
  /* A piece missing a field is refused by the schema, naming it. */
  json_object *env =
      call("optics_add", "{\"name\":\"bad\",\"type\":\"ParamMirror\","
                         "\"pieces\":[{\"eqnX\":\"t\",\"eqnY\":\"t\"}]}");
  cr_assert(!succeeded(env));
  const char *err =
      json_object_get_string(json_object_object_get(env, "error"));
  cr_assert(strstr(err, "tMin") != NULL && strstr(err, "nests") == NULL, "%s",
            err);
  json_object_put(env);
}

Test(optics_plugin, the_simulators_checks_name_the_object) {
  /* A lens whose radius is smaller than half its height cannot be built;
   * the loader says so, and the message names the object by its name. */
  char *e = err("optics_add",
                "{\"name\":\"L\",\"type\":\"SphericalLens\",\"p1\":{\"x\":0,"
                "\"y\":0},\"p2\":{\"x\":0,\"y\":100},\"params\":{\"d\":10,"
                "\"r1\":20,\"r2\":-20}}");
  cr_assert(
      strncmp(e, "'L' was not added: object 'L' (SphericalLens): ",
              strlen("'L' was not added: object 'L' (SphericalLens): ")) == 0,
      "%s", e);
  free(e);
  EXPECT_MEMBER("optics_list", "{}", "count", "0");
}

Test(optics_plugin, update_merges_checks_and_renames) {
  reference_prism();
  EXPECT_MEMBER("optics_update",
                "{\"name\":\"Main Prism\",\"set\":{\"refIndex\":1.7},"
                "\"rename\":\"Flint\"}",
                "refIndex", "1.7");
  EXPECT_MEMBER("optics_list", "{}", "objects.0.name", "\"Flint\"");
  EXPECT_ERR("optics_update",
             "{\"name\":\"Main Prism\",\"set\":{\"refIndex\":1.6}}",
             "No object named 'Main Prism'. Named objects: 'Flint', 'ray'");
  EXPECT_ERR("optics_update",
             "{\"name\":\"Flint\",\"set\":{\"type\":\"Mirror\"}}",
             "\"set\" cannot change an object's type: remove it and add a "
             "new one");
  EXPECT_ERR("optics_update", "{\"name\":\"Flint\",\"rename\":\"ray\"}",
             "An object named 'ray' already exists; choose another name");
  /* A wrong field is caught by the type's schema, with its path. */
  char *e = err("optics_update",
                "{\"name\":\"Flint\",\"set\":{\"refIndex\":\"high\"}}");
  cr_assert(strstr(e, "'Flint' was not changed: ") == e, "%s", e);
  cr_assert(strstr(e, "refIndex") != NULL, "%s", e);
  free(e);
  EXPECT_MEMBER("optics_list", "{}", "objects.0.refIndex", "1.7");
}

Test(optics_plugin, remove_is_all_or_nothing) {
  reference_prism();
  EXPECT_ERR("optics_remove", "{\"names\":[\"ray\",\"nope\"]}",
             "No object named 'nope'. Named objects: 'Main Prism', 'ray'");
  EXPECT_MEMBER("optics_list", "{}", "count", "2");
  EXPECT_OK("optics_remove", "{\"names\":[\"ray\"]}",
            "{\"removed\":[\"ray\"],\"objects\":1}");
}

Test(optics_plugin, import_names_objects_and_export_gives_the_apps_format) {
  EXPECT_MEMBER(
      "optics_import",
      "{\"scene\":{\"version\":5,\"rayModeDensity\":0.2,\"objs\":[{\"type\":"
      "\"Mirror\",\"p1\":{\"x\":0,\"y\":0},\"p2\":{\"x\":0,\"y\":10}},{"
      "\"type\":\"Mirror\",\"p1\":{\"x\":5,\"y\":0},\"p2\":{\"x\":5,\"y\":"
      "10}},{\"type\":\"PointSource\",\"x\":2,\"y\":5,\"name\":\"lamp\"}]}}",
      "names", "[\"Mirror_1\",\"Mirror_2\",\"lamp\"]");
  EXPECT_MEMBER("optics_export", "{}", "scene.objs.2",
                "{\"type\":\"PointSource\",\"x\":2,\"y\":5}");
  EXPECT_MEMBER("optics_export", "{\"names\":true}", "scene.objs.2.name",
                "\"lamp\"");
  EXPECT_MEMBER("optics_export", "{}", "scene.rayModeDensity", "0.2");
  EXPECT_ERR("optics_import",
             "{\"scene\":{\"version\":5,\"objs\":[{\"type\":\"Lamp\"}]}}",
             "the scene was not imported: object 'Lamp_1': unknown object type "
             "\"Lamp\"");
}

Test(optics_plugin, settings_read_and_change) {
  EXPECT_MEMBER("optics_settings", "{}", "settings.rayModeDensity", "0.1");
  EXPECT_MEMBER("optics_settings", "{\"rayModeDensity\":0.5}",
                "settings.rayModeDensity", "0.5");
  EXPECT_MEMBER("optics_settings", "{}", "settings.rayModeDensity", "0.5");
}

/* ---- the simulation and the tools over it ---- */

Test(optics_plugin, simulate_summarises_the_reference_prism) {
  reference_prism();
  EXPECT_MEMBER("optics_simulate", "{}", "segments", "7");
  EXPECT_MEMBER("optics_simulate", "{}", "by_interaction",
                "{\"source\":1,\"reflect\":2,\"refract\":3,\"tir\":1,"
                "\"pass\":0}");
  EXPECT_MEMBER("optics_simulate", "{}", "total_internal_reflections", "1");
  EXPECT_NUM("optics_simulate", "{}", "energy.emitted", 1);
  EXPECT_MEMBER("optics_simulate", "{}", "energy.conserved", "true");
  EXPECT_MEMBER("optics_simulate", "{}", "warnings", "[]");
}

Test(optics_plugin, query_rays_sees_the_current_bench) {
  reference_prism();
  EXPECT_MEMBER("query_rays", "{\"sql\":\"SELECT COUNT(*) FROM rays\"}", "rows",
                "[[7]]");
  /* The bench changed: the tools simulate again on their own. */
  free(ok("optics_remove", "{\"names\":[\"Main Prism\"]}"));
  EXPECT_MEMBER("query_rays", "{\"sql\":\"SELECT COUNT(*) FROM rays\"}", "rows",
                "[[1]]");
}

Test(optics_plugin, describe_edges_labels_as_the_picture_shows) {
  reference_prism();
  EXPECT_MEMBER("describe_edges", "{\"object\":\"Main Prism\"}",
                "edges.0.short_label", "\"E\"");
  EXPECT_MEMBER("describe_edges", "{\"object\":\"Main Prism\"}",
                "edges.1.short_label", "\"S\"");
  EXPECT_MEMBER("describe_edges", "{\"object\":\"Main Prism\"}",
                "edges.2.short_label", "\"W\"");
  EXPECT_ERR("describe_edges", "{\"object\":\"Prism\"}",
             "No object named 'Prism'. Named objects: 'Main Prism', 'ray'");
}

Test(optics_plugin, lineage_tools) {
  reference_prism();
  EXPECT_NUM("rank_paths_by_energy", "{\"top_n\":1}", "0.energy", 0.903789);
  EXPECT_MEMBER("check_energy_conservation", "{}", "is_valid", "true");
}

/* ---- standalone ---- */

Test(optics_plugin, fresnel_tools) {
  EXPECT_NUM("fresnel_transmittances",
             "{\"n1\":1.0,\"n2\":1.5,\"theta_i_deg\":30}", "T_s", 0.942204);
  EXPECT_NUM("critical_angle", "{\"n1\":1.5,\"n2\":1}", "critical_angle_deg",
             41.810315);
  EXPECT_NUM("brewster_angle", "{\"n1\":1,\"n2\":1.5}", "brewster_angle_deg",
             56.309932);
  EXPECT_NUM("tir_analysis", "{\"n1\":1.72,\"n2\":1.52,\"theta_i_deg\":75}",
             "delta_s_deg", 112.851751);
  EXPECT_ERR("fresnel_transmittances",
             "{\"n1\":1.5,\"n2\":1.0,\"theta_i_deg\":60}",
             "Total internal reflection: angle 60.00\xc2\xb0 exceeds critical "
             "angle 41.81\xc2\xb0 for n1=1.5, n2=1.0. No light is "
             "transmitted; use tir_analysis for angles past the critical "
             "angle (it gives R = 1 and the phase shifts).");
  EXPECT_ERR("critical_angle", "{\"n1\":1,\"n2\":1.5}",
             "No TIR possible: n1=1.0 must be greater than n2=1.5. Total "
             "internal reflection only happens going from the denser medium "
             "into the rarer one: swap them (n1=1.5, n2=1.0), or use "
             "fresnel_transmittances for light going this way.");
}

/* ---- render_optics ---- */

Test(optics_plugin, render_highlights_a_query) {
  reference_prism();
  json_object *env =
      call("render_optics", "{\"highlight\":\"interaction_type = 'tir'\","
                            "\"highlight_edges\":[{\"object\":\"Main "
                            "Prism\",\"edge\":\"S\"}]}");
  cr_assert(succeeded(env), "%s", json_object_to_json_string(env));
  json_object *r = json_object_object_get(env, "result");
  json_object *hs = json_object_object_get(r, "highlight_summary");
  cr_assert_eq(
      json_object_get_int(json_object_object_get(hs, "highlighted_rays")), 1);
  cr_assert_eq(json_object_get_int(json_object_object_get(hs, "total_rays")),
               7);
  const char *desc =
      json_object_get_string(json_object_object_get(r, "description"));
  cr_assert(strstr(desc, "Highlighted: 1 of 7 segments where interaction_type "
                         "= 'tir' (1 tir)") != NULL,
            "%s", desc);
  cr_assert_eq(
      strlen(json_object_get_string(json_object_object_get(r, "png_image"))),
      ATL_IMAGE_ID_LEN);
  json_object *images = json_object_object_get(env, "images");
  cr_assert_eq(json_object_array_length(images), 1, "%s",
               json_object_to_json_string(env));
  json_object_put(env);
  EXPECT_ERR("render_optics",
             "{\"highlight_edges\":[{\"object\":\"Main Prism\",\"edge\":"
             "\"N\"}]}",
             "No edge matching 'N' on 'Main Prism'. Available labels: 'E', "
             "'S', 'W' (or an index; see describe_edges)");
}

/* ---- every tool's errors, exactly ---- */

Test(optics_plugin, errors_of_the_other_tools) {
  reference_prism();
  EXPECT_ERR("optics_settings", "{\"rayModeDensity\":-1}",
             "/rayModeDensity: expected a number > 0 and <= 1000, got -1");
  EXPECT_ERR("optics_simulate", "{\"ray_limit\":0}",
             "/ray_limit: expected an integer >= 1 and <= 5000000, got 0");
  EXPECT_ERR("query_rays", "{\"sql\":\"SELECT nope FROM rays\"}",
             "SQL error: no such column: nope; use describe_schema for the "
             "tables and columns");
  EXPECT_ERR("query_rays", "{\"sql\":\"DELETE FROM rays\"}",
             "not allowed: writes (table rays may not be modified); "
             "query_rays runs read-only SELECT statements only");
  EXPECT_ERR("rank_paths_by_energy", "{\"top_n\":0}",
             "/top_n: expected an integer >= 1 and <= 1000, got 0");
  EXPECT_ERR("detect_tir_traps", "{\"min_tir_count\":0}",
             "/min_tir_count: expected an integer >= 1 and <= 10000, got 0");
  EXPECT_ERR("angular_distribution", "{\"n_bins\":0}",
             "/n_bins: expected an integer >= 1 and <= 3600, got 0");
  EXPECT_ERR("tir_analysis", "{\"n1\":1.0,\"n2\":1.5}",
             "No TIR possible: n1=1.0 must be greater than n2=1.5. Total "
             "internal reflection only happens going from the denser medium "
             "into the rarer one: swap them (n1=1.5, n2=1.0), or use "
             "fresnel_transmittances for light going this way.");
  EXPECT_ERR("brewster_angle", "{\"n1\":0,\"n2\":1.5}",
             "/n1: expected a number > 0 and <= 100, got 0");
  EXPECT_ERR("render_optics", "{\"highlight\":\"nope = 1\"}",
             "highlight: SQL error: no such column: nope; use describe_schema "
             "for the tables and columns");
  EXPECT_ERR("render_optics", "{\"highlight_objects\":[\"Prism\"]}",
             "No object named 'Prism'. Named objects: 'Main Prism', 'ray'");
  EXPECT_ERR("optics_export", "{\"names\":1}",
             "/names: expected a boolean, got 1");
  EXPECT_ERR("describe_schema", "{\"x\":1}",
             "(root): unexpected property 'x' (no properties are allowed)");
  EXPECT_ERR("check_energy_conservation", "{\"x\":1}",
             "(root): unexpected property 'x' (no properties are allowed)");
  EXPECT_ERR("optics_list", "{\"x\":1}",
             "(root): unexpected property 'x' (no properties are allowed)");
}

Test(optics_plugin, a_bench_that_cannot_be_simulated) {
  /* Sources past the simulator's limit of rays: the simulation refuses
   * rather than exhausting the memory, and says why; since every change
   * is simulated to be checked, the change that would do it is refused. */
  free(ok("optics_add", "{\"name\":\"wide\",\"type\":\"Beam\",\"p1\":{\"x\":"
                        "0,\"y\":0},\"p2\":{\"x\":0,\"y\":1000000}}"));
  EXPECT_ERR("optics_settings", "{\"rayModeDensity\":1000}",
             "the settings were not changed: the light sources would emit more "
             "than 5000000 rays; lower the scene's ray density or make the "
             "sources smaller");
}
