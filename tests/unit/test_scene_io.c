/* The scene plugin's whole-scene tools and its limits: export, import
 * (the scenes of tests/data/scenes, written in scene-llm's vocabulary),
 * the byte-identical round trip, an import that fails changing nothing,
 * and the limits on shapes, lights and argument size. */
#include "atl-build.h"

#include "scene_fixture.h"

TestSuite(scene_io, .init = setup, .fini = teardown, .timeout = 300);

static char *slurp(const char *name) {
  const char *src = getenv("ATL_TEST_SRCDIR");
  char path[1024];
  snprintf(path, sizeof(path), "%s/tests/data/scenes/%s",
           src ? src : ATL_TEST_SRCDIR, name);
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s", path);
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
    fwrite(chunk, 1, n, m);
  fclose(f);
  fclose(m);
  return buf;
}

/* {"scene": <text>} */
static char *wrap(const char *scene) {
  char *out = NULL;
  cr_assert(asprintf(&out, "{\"scene\":%s}", scene) > 0);
  return out;
}

static char *export_text(void) {
  char *r = ok("export_scene", "{}");
  /* r is {"scene":{...}}: the inner object, as text. */
  json_object *o = json_tokener_parse(r), *scene;
  cr_assert(json_object_object_get_ex(o, "scene", &scene));
  char *out = strdup(json_object_to_json_string_ext(
      scene, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(o);
  free(r);
  return out;
}

static void import_file(const char *name, const char *counts) {
  char *text = slurp(name);
  char *args = wrap(text);
  char want[128];
  snprintf(want, sizeof(want), "{\"imported\":%s}", counts);
  EXPECT_OK("import_scene", args, want);
  free(args);
  free(text);
}

Test(scene_io, the_shared_scenes_import_unchanged) {
  import_file("snowman.json", "{\"shapes\":11,\"lights\":1}");
  char *desc = ok("describe_scene", "{}");
  cr_assert(strstr(desc, "- area_quad 'key_light': corner [-1, 5, -1], u [2, "
                         "0, 0], v [0, 0, 2], emission [8, 8, 8]") != NULL,
            "%s", desc);
  cr_assert(strstr(desc, "- cone 'nose': ") != NULL, "%s", desc);
  cr_assert(strstr(desc, "Camera: center [0, 2, 7], look_at [0, 1.5, 0]") !=
                NULL,
            "%s", desc);
  free(desc);
  import_file("cornell.json", "{\"shapes\":7,\"lights\":1}");
  import_file("cornell-empty.json", "{\"shapes\":5,\"lights\":1}");
}

Test(scene_io, export_import_export_is_byte_identical) {
  import_file("snowman.json", "{\"shapes\":11,\"lights\":1}");
  free(ok("create_shape",
          "{\"id\":\"arc\",\"type\":\"torus\",\"properties\":{\"center\":[0,"
          "2.6,0.36],\"axis\":[0,0,1],\"major_radius\":0.12,\"minor_radius\":"
          "0.015,\"sweep_degrees\":160,\"start_degrees\":190}}"));
  free(ok("set_camera", "{\"center\":[0.1,2.2,6.9],\"look_at\":[0,1.5,0],"
                        "\"aperture\":0.05}"));
  char *first = export_text();
  cr_assert(
      strncmp(first, "{\"format\":\"atelier-scene\",\"version\":1,", 38) == 0,
      "%s", first);
  char *args = wrap(first);
  free(ok("import_scene", args));
  char *second = export_text();
  cr_assert_str_eq(second, first);
  free(args);
  free(first);
  free(second);
}

Test(scene_io, a_bad_import_changes_nothing_and_says_where) {
  free(ok("create_shape",
          "{\"id\":\"keep\",\"type\":\"sphere\",\"properties\":{\"center\":[0,"
          "0,0],\"radius\":1}}"));
  char *before = export_text();
  EXPECT_ERR(
      "import_scene",
      "{\"scene\":{\"format\":\"atelier-scene\",\"version\":2,\"shapes\":["
      "{\"id\":\"a\",\"type\":\"sphere\",\"properties\":{\"center\":[0,0,0],"
      "\"radius\":0}},{\"id\":\"b\",\"type\":\"cube\",\"properties\":{}}]}}",
      "the scene was not imported (3 problems); the current scene is "
      "unchanged:\n/scene/version: expected 1, got 2\n/scene/shapes/0/"
      "properties/radius: expected a number > 0 and <= 1e+06, got 0\n/scene/"
      "shapes/1/type: expected one of \"sphere\", \"box\", \"quad\", "
      "\"disc\", \"cylinder\", \"cone\", \"plane\", \"triangle\", \"torus\", "
      "got \"cube\"");
  EXPECT_ERR(
      "import_scene",
      "{\"scene\":{\"shapes\":[{\"id\":\"a\",\"type\":\"quad\",\"properties\":"
      "{\"corner\":[0,0,0],\"u\":[1,0,0],\"v\":[1,0,0]}},{\"id\":\"a\","
      "\"type\":\"sphere\",\"properties\":{\"center\":[0,0,0],\"radius\":1}}"
      "],\"camera\":{\"center\":[0,0,0],\"look_at\":[0,0,0]}}}",
      "the scene was not imported (3 problems); the current scene is "
      "unchanged:\n/scene/shapes/0/properties/v: must not be parallel to u "
      "(the quad would be flat as a line); give two edges at an angle, such "
      "as u = [1, 0, 0] and v = [0, 0, 1]\n/scene/camera/look_at: must "
      "differ from center (the camera would not know where to look)\n/scene/"
      "shapes/1/id: 'a' is already the id of /scene/shapes/0");
  char *after = export_text();
  cr_assert_str_eq(after, before);
  free(before);
  free(after);
}

Test(scene_io, scene_llm_light_names_are_understood) {
  EXPECT_OK("import_scene",
            "{\"scene\":{\"lights\":[{\"id\":\"s\",\"type\":\"point_spot_"
            "light\",\"properties\":{\"center\":[0,4,0],\"emission\":[5,5,5],"
            "\"cutoff_angle\":40,\"falloff_exponent\":8}},{\"id\":\"b\","
            "\"type\":\"area_sphere_light\",\"properties\":{\"center\":[0,3,0]"
            ",\"radius\":0.3,\"emission\":[2,2,2]}}]}}",
            "{\"imported\":{\"shapes\":0,\"lights\":2}}");
  char *state = ok("get_scene_state", "{}");
  cr_assert(strstr(state,
                   "{\"id\":\"s\",\"type\":\"spot\",\"properties\":{"
                   "\"center\":[0,4,0],\"direction\":[0,-1,0],\"cone_angle\":"
                   "40,\"edge_width\":8,\"emission\":[5,5,5]}}") != NULL,
            "%s", state);
  cr_assert(strstr(state, "\"type\":\"area_sphere\"") != NULL, "%s", state);
  free(state);
}

/* ---- limits ---- */

static char *many_shapes(int n) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  fputs("{\"scene\":{\"shapes\":[", f);
  for (int i = 0; i < n; i++)
    fprintf(f,
            "%s{\"id\":\"s%d\",\"type\":\"sphere\",\"properties\":{\"center\":"
            "[%d,0,0],\"radius\":0.5}}",
            i ? "," : "", i, i % 1000);
  fputs("]}}", f);
  fclose(f);
  return buf;
}

Test(scene_io, at_most_10000_shapes) {
  char *args = many_shapes(10001);
  EXPECT_ERR("import_scene", args,
             "the scene was not imported (1 problem); the current scene is "
             "unchanged:\n/scene/shapes: expected an array of at most 10000 "
             "items, got 10001 items");
  free(args);
  args = many_shapes(10000);
  EXPECT_OK("import_scene", args,
            "{\"imported\":{\"shapes\":10000,\"lights\":0}}");
  free(args);
  EXPECT_ERR("create_shape",
             "{\"id\":\"one_more\",\"type\":\"sphere\",\"properties\":{"
             "\"center\":[0,0,0],\"radius\":1}}",
             "the scene already has 10000 shapes, the most it can hold; "
             "remove some first");
}

Test(scene_io, at_most_256_lights) {
  for (int i = 0; i < 256; i++) {
    char args[200];
    snprintf(args, sizeof(args),
             "{\"id\":\"l%d\",\"type\":\"point\",\"properties\":{\"center\":["
             "%d,3,0],\"emission\":[1,1,1]}}",
             i, i);
    free(ok("create_light", args));
  }
  EXPECT_ERR("create_light",
             "{\"id\":\"l256\",\"type\":\"point\",\"properties\":{\"center\":"
             "[0,3,0],\"emission\":[1,1,1]}}",
             "the scene already has 256 lights, the most it can hold; remove "
             "some first");
}

Test(scene_io, arguments_over_64_kib_are_refused) {
  /* A valid call whose text is long: a radius written with 70,000 digits. */
  size_t digits = 70000;
  char *args = malloc(digits + 200);
  int n = snprintf(args, 200,
                   "{\"id\":\"big\",\"type\":\"sphere\",\"properties\":{"
                   "\"center\":[0,0,0],\"radius\":1.");
  memset(args + n, '0', digits);
  strcpy(args + n + digits, "}}");
  char *e = err("create_shape", args);
  cr_assert(strncmp(e, "the arguments are ", 18) == 0, "%s", e);
  cr_assert(strstr(e, " bytes; at most 65536 per call: split the work into "
                      "several calls") != NULL,
            "%s", e);
  free(e);
  free(args);
  EXPECT_OK("get_scene_state", "{}",
            "{\"camera\":{\"center\":[0,0,5],\"look_at\":[0,0,0],\"up\":[0,1,"
            "0],\"vfov\":45,\"aperture\":0,\"focus_distance\":5},"
            "\"environment\":{\"type\":\"gradient\",\"top_color\":[0.5,0.7,"
            "1],\"bottom_color\":[1,1,1]},\"shapes\":[],\"lights\":[]}");
}
