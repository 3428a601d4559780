/* The scene plugin's tools (plugins/scene) through the daemon's real call
 * path: every shape, material and light type with its defaults, updates
 * and their rollback, renames, and every error message, exactly. */
#include "atl-build.h"

#include "scene_fixture.h"

TestSuite(scene, .init = setup, .fini = teardown, .timeout = 300);

/* ---- every type, defaults filled in ---- */

Test(scene, every_shape_type_with_its_defaults) {
  EXPECT_OK("create_shape",
            "{\"id\":\"s\",\"type\":\"sphere\",\"properties\":{\"center\":[0,"
            "1,0],\"radius\":1}}",
            "{\"id\":\"s\",\"type\":\"sphere\",\"properties\":{\"center\":[0,"
            "1,0],\"radius\":1,\"material\":{\"type\":\"lambertian\","
            "\"albedo\":[0.5,0.5,0.5]}}}");
  EXPECT_OK("create_shape",
            "{\"id\":\"b\",\"type\":\"box\",\"properties\":{\"size\":[1,2,3],"
            "\"center\":[0,0,0]}}",
            "{\"id\":\"b\",\"type\":\"box\",\"properties\":{\"center\":[0,0,"
            "0],\"size\":[1,2,3],\"rotation\":[0,0,0],\"material\":{\"type\":"
            "\"lambertian\",\"albedo\":[0.5,0.5,0.5]}}}");
  EXPECT_OK("create_shape",
            "{\"id\":\"q\",\"type\":\"quad\",\"properties\":{\"corner\":[0,0,"
            "0],\"u\":[1,0,0],\"v\":[0,0,1]}}",
            "{\"id\":\"q\",\"type\":\"quad\",\"properties\":{\"corner\":[0,0,"
            "0],\"u\":[1,0,0],\"v\":[0,0,1],\"material\":{\"type\":"
            "\"lambertian\",\"albedo\":[0.5,0.5,0.5]}}}");
  EXPECT_OK("create_shape",
            "{\"id\":\"d\",\"type\":\"disc\",\"properties\":{\"center\":[0,0,"
            "0],\"normal\":[0,2,0],\"radius\":0.5}}",
            "{\"id\":\"d\",\"type\":\"disc\",\"properties\":{\"center\":[0,0,"
            "0],\"normal\":[0,2,0],\"radius\":0.5,\"material\":{\"type\":"
            "\"lambertian\",\"albedo\":[0.5,0.5,0.5]}}}");
  EXPECT_OK("create_shape",
            "{\"id\":\"c\",\"type\":\"cylinder\",\"properties\":{\"base_"
            "center\":[0,0,0],\"top_center\":[0,1,0],\"radius\":0.2}}",
            "{\"id\":\"c\",\"type\":\"cylinder\",\"properties\":{\"base_"
            "center\":[0,0,0],\"top_center\":[0,1,0],\"radius\":0.2,"
            "\"capped\":true,\"material\":{\"type\":\"lambertian\","
            "\"albedo\":[0.5,0.5,0.5]}}}");
  EXPECT_OK("create_shape",
            "{\"id\":\"k\",\"type\":\"cone\",\"properties\":{\"base_center\":"
            "[0,0,0],\"top_center\":[0,1,0],\"base_radius\":0.5}}",
            "{\"id\":\"k\",\"type\":\"cone\",\"properties\":{\"base_center\":"
            "[0,0,0],\"top_center\":[0,1,0],\"base_radius\":0.5,\"top_"
            "radius\":0,\"capped\":true,\"material\":{\"type\":\"lambertian\","
            "\"albedo\":[0.5,0.5,0.5]}}}");
  EXPECT_OK("create_shape",
            "{\"id\":\"p\",\"type\":\"plane\",\"properties\":{\"point\":[0,0,"
            "0],\"normal\":[0,1,0]}}",
            "{\"id\":\"p\",\"type\":\"plane\",\"properties\":{\"point\":[0,0,"
            "0],\"normal\":[0,1,0],\"material\":{\"type\":\"lambertian\","
            "\"albedo\":[0.5,0.5,0.5]}}}");
  EXPECT_OK("create_shape",
            "{\"id\":\"t\",\"type\":\"triangle\",\"properties\":{\"v0\":[0,0,"
            "0],\"v1\":[1,0,0],\"v2\":[0,1,0]}}",
            "{\"id\":\"t\",\"type\":\"triangle\",\"properties\":{\"v0\":[0,0,"
            "0],\"v1\":[1,0,0],\"v2\":[0,1,0],\"material\":{\"type\":"
            "\"lambertian\",\"albedo\":[0.5,0.5,0.5]}}}");
  EXPECT_OK("create_shape",
            "{\"id\":\"smile\",\"type\":\"torus\",\"properties\":{\"center\":"
            "[0,2,0.3],\"major_radius\":0.2,\"minor_radius\":0.02,\"axis\":[0,"
            "0,1],\"sweep_degrees\":180,\"start_degrees\":180}}",
            "{\"id\":\"smile\",\"type\":\"torus\",\"properties\":{\"center\":"
            "[0,2,0.3],\"axis\":[0,0,1],\"major_radius\":0.2,\"minor_"
            "radius\":0.02,\"sweep_degrees\":180,\"start_degrees\":180,"
            "\"material\":{\"type\":\"lambertian\",\"albedo\":[0.5,0.5,0.5]}}"
            "}");
  EXPECT_OK("create_shape",
            "{\"id\":\"ring\",\"type\":\"torus\",\"properties\":{\"center\":"
            "[0,0,0],\"major_radius\":1,\"minor_radius\":0.25}}",
            "{\"id\":\"ring\",\"type\":\"torus\",\"properties\":{\"center\":"
            "[0,0,0],\"axis\":[0,1,0],\"major_radius\":1,\"minor_radius\":"
            "0.25,\"sweep_degrees\":360,\"start_degrees\":0,\"material\":{"
            "\"type\":\"lambertian\",\"albedo\":[0.5,0.5,0.5]}}}");
}

static void expect_material(const char *material, const char *stored) {
  char args[512], want[768];
  snprintf(args, sizeof(args),
           "{\"id\":\"m\",\"type\":\"sphere\",\"properties\":{\"center\":[0,"
           "0,0],\"radius\":1,\"material\":%s}}",
           material);
  snprintf(want, sizeof(want),
           "{\"id\":\"m\",\"type\":\"sphere\",\"properties\":{\"center\":[0,"
           "0,0],\"radius\":1,\"material\":%s}}",
           stored);
  EXPECT_OK("create_shape", args, want);
  char *gone = ok("remove_shape", "{\"id\":\"m\"}");
  cr_assert_str_eq(gone, want);
  free(gone);
}

Test(scene, every_material_type_with_its_defaults) {
  expect_material("{\"type\":\"lambertian\"}",
                  "{\"type\":\"lambertian\",\"albedo\":[0.5,0.5,0.5]}");
  expect_material("{\"checker\":{\"scale\":2,\"color_b\":[0,0,0],\"color_a\":"
                  "[1,1,1]},\"type\":\"lambertian\"}",
                  "{\"type\":\"lambertian\",\"albedo\":[0.5,0.5,0.5],"
                  "\"checker\":{\"color_a\":[1,1,1],\"color_b\":[0,0,0],"
                  "\"scale\":2}}");
  expect_material("{\"type\":\"lambertian\",\"checker\":{\"color_a\":[1,1,"
                  "1],\"color_b\":[0,0,0]}}",
                  "{\"type\":\"lambertian\",\"albedo\":[0.5,0.5,0.5],"
                  "\"checker\":{\"color_a\":[1,1,1],\"color_b\":[0,0,0],"
                  "\"scale\":1}}");
  expect_material("{\"type\":\"metal\"}",
                  "{\"type\":\"metal\",\"albedo\":[0.8,0.8,0.8],\"fuzz\":0}");
  expect_material("{\"type\":\"dielectric\"}",
                  "{\"type\":\"dielectric\",\"refractive_index\":1.5,"
                  "\"tint\":[1,1,1]}");
  expect_material("{\"type\":\"dielectric\",\"refractive_index\":2.4,"
                  "\"tint\":[0.9,1,0.9]}",
                  "{\"type\":\"dielectric\",\"refractive_index\":2.4,"
                  "\"tint\":[0.9,1,0.9]}");
  expect_material("{\"type\":\"emissive\",\"emission\":[4,4,4]}",
                  "{\"type\":\"emissive\",\"emission\":[4,4,4]}");
  expect_material("{\"type\":\"plastic\",\"albedo\":[0.8,0.1,0.1]}",
                  "{\"type\":\"plastic\",\"albedo\":[0.8,0.1,0.1],"
                  "\"roughness\":0.1}");
}

Test(scene, every_light_type_with_its_defaults) {
  EXPECT_OK("create_light",
            "{\"id\":\"p\",\"type\":\"point\",\"properties\":{\"center\":[0,"
            "3,0],\"emission\":[10,10,10]}}",
            "{\"id\":\"p\",\"type\":\"point\",\"properties\":{\"center\":[0,"
            "3,0],\"emission\":[10,10,10]}}");
  EXPECT_OK("create_light",
            "{\"id\":\"s\",\"type\":\"spot\",\"properties\":{\"center\":[0,3,"
            "0],\"emission\":[5,5,5]}}",
            "{\"id\":\"s\",\"type\":\"spot\",\"properties\":{\"center\":[0,3,"
            "0],\"direction\":[0,-1,0],\"cone_angle\":30,\"edge_width\":5,"
            "\"emission\":[5,5,5]}}");
  EXPECT_OK("create_light",
            "{\"id\":\"q\",\"type\":\"area_quad\",\"properties\":{\"corner\":"
            "[-1,5,-1],\"u\":[2,0,0],\"v\":[0,0,2],\"emission\":[8,8,8]}}",
            "{\"id\":\"q\",\"type\":\"area_quad\",\"properties\":{\"corner\":"
            "[-1,5,-1],\"u\":[2,0,0],\"v\":[0,0,2],\"emission\":[8,8,8]}}");
  EXPECT_OK("create_light",
            "{\"id\":\"d\",\"type\":\"area_disc\",\"properties\":{\"center\":"
            "[0,4,0],\"normal\":[0,-1,0],\"radius\":0.5,\"emission\":[6,6,6]}"
            "}",
            "{\"id\":\"d\",\"type\":\"area_disc\",\"properties\":{\"center\":"
            "[0,4,0],\"normal\":[0,-1,0],\"radius\":0.5,\"emission\":[6,6,6]}"
            "}");
  EXPECT_OK("create_light",
            "{\"id\":\"b\",\"type\":\"area_sphere\",\"properties\":{"
            "\"emission\":[3,3,3],\"radius\":0.2,\"center\":[1,2,3]}}",
            "{\"id\":\"b\",\"type\":\"area_sphere\",\"properties\":{"
            "\"center\":[1,2,3],\"radius\":0.2,\"emission\":[3,3,3]}}");
  EXPECT_OK("create_light",
            "{\"id\":\"sun\",\"type\":\"directional\",\"properties\":{"
            "\"direction\":[-1,-2,-1],\"emission\":[3,3,2.8]}}",
            "{\"id\":\"sun\",\"type\":\"directional\",\"properties\":{"
            "\"direction\":[-1,-2,-1],\"angular_diameter\":0.53,\"emission\":"
            "[3,3,2.8]}}");
}

Test(scene, camera_and_environment) {
  EXPECT_OK("set_camera", "{\"center\":[0,3,4],\"look_at\":[0,0,0]}",
            "{\"center\":[0,3,4],\"look_at\":[0,0,0],\"up\":[0,1,0],"
            "\"vfov\":45,\"aperture\":0,\"focus_distance\":5}");
  EXPECT_OK("set_camera",
            "{\"center\":[0,10,0],\"look_at\":[0,0,0],\"up\":[0,0,-1],"
            "\"vfov\":30,\"aperture\":0.1,\"focus_distance\":9}",
            "{\"center\":[0,10,0],\"look_at\":[0,0,0],\"up\":[0,0,-1],"
            "\"vfov\":30,\"aperture\":0.1,\"focus_distance\":9}");
  EXPECT_OK("set_environment", "{\"type\":\"none\"}", "{\"type\":\"none\"}");
  EXPECT_OK("set_environment",
            "{\"emission\":[0.2,0.2,0.2],\"type\":\"uniform\"}",
            "{\"type\":\"uniform\",\"emission\":[0.2,0.2,0.2]}");
  EXPECT_OK("set_environment",
            "{\"type\":\"gradient\",\"top_color\":[0.2,0.3,0.9],"
            "\"bottom_color\":[1,1,1]}",
            "{\"type\":\"gradient\",\"top_color\":[0.2,0.3,0.9],"
            "\"bottom_color\":[1,1,1]}");
}

Test(scene, a_new_scene_is_complete_and_explicit) {
  EXPECT_OK("get_scene_state", "{}",
            "{\"camera\":{\"center\":[0,0,5],\"look_at\":[0,0,0],\"up\":[0,1,"
            "0],\"vfov\":45,\"aperture\":0,\"focus_distance\":5},"
            "\"environment\":{\"type\":\"gradient\",\"top_color\":[0.5,0.7,"
            "1],\"bottom_color\":[1,1,1]},\"shapes\":[],\"lights\":[]}");
  EXPECT_OK("describe_scene", "{}",
            "{\"text\":\"No shapes.\\nNo lights.\\nCamera: center [0, 0, 5], "
            "look_at [0, 0, 0], up [0, 1, 0], vfov 45, aperture 0, "
            "focus_distance 5\\nEnvironment: gradient, top_color [0.5, 0.7, "
            "1], bottom_color [1, 1, 1]\\n\"}");
}

Test(scene, describe_lists_shapes_lights_camera_environment) {
  free(ok("create_shape",
          "{\"id\":\"ball\",\"type\":\"sphere\",\"properties\":{\"center\":"
          "[0,1,0],\"radius\":1,\"material\":{\"type\":\"metal\",\"fuzz\":"
          "0.1}}}"));
  free(ok("create_light",
          "{\"id\":\"key\",\"type\":\"point\",\"properties\":{\"center\":[0,"
          "5,0],\"emission\":[9,9,9]}}"));
  free(ok("set_environment", "{\"type\":\"none\"}"));
  EXPECT_OK("describe_scene", "{}",
            "{\"text\":\"Shapes (1):\\n- sphere 'ball': center [0, 1, 0], "
            "radius 1; metal albedo [0.8, 0.8, 0.8], fuzz 0.1\\nLights (1):"
            "\\n- point 'key': center [0, 5, 0], emission [9, 9, 9]\\nCamera: "
            "center [0, 0, 5], look_at [0, 0, 0], up [0, 1, 0], vfov 45, "
            "aperture 0, focus_distance 5\\nEnvironment: none\\n\"}");
}

/* ---- updates ---- */

static const char *const BALL =
    "{\"id\":\"ball\",\"type\":\"sphere\",\"properties\":{\"center\":[0,1,0],"
    "\"radius\":1,\"material\":{\"type\":\"metal\",\"albedo\":[0.9,0.9,0.9],"
    "\"fuzz\":0.1}}}";

Test(scene, updates_merge_deeply) {
  free(ok("create_shape", BALL));
  EXPECT_OK("update_shape",
            "{\"id\":\"ball\",\"updates\":{\"properties\":{\"material\":{"
            "\"fuzz\":0.3},\"center\":[1,1,1]}}}",
            "{\"id\":\"ball\",\"type\":\"sphere\",\"properties\":{\"center\":"
            "[1,1,1],\"radius\":1,\"material\":{\"type\":\"metal\","
            "\"albedo\":[0.9,0.9,0.9],\"fuzz\":0.3}}}");
  /* A material of a new type replaces the old one, from its defaults: the
   * metal's fuzz means nothing to glass. */
  EXPECT_OK("update_shape",
            "{\"id\":\"ball\",\"updates\":{\"properties\":{\"material\":{"
            "\"type\":\"dielectric\"}}}}",
            "{\"id\":\"ball\",\"type\":\"sphere\",\"properties\":{\"center\":"
            "[1,1,1],\"radius\":1,\"material\":{\"type\":\"dielectric\","
            "\"refractive_index\":1.5,\"tint\":[1,1,1]}}}");
}

Test(scene, a_failed_update_changes_nothing) {
  free(ok("create_shape", BALL));
  char *before = ok("get_scene_state", "{}");
  EXPECT_ERR("update_shape",
             "{\"id\":\"ball\",\"updates\":{\"properties\":{\"radius\":-2,"
             "\"center\":[5,5,5],\"material\":{\"fuzz\":7}}}}",
             "shape 'ball' was not changed: the update would make it "
             "invalid:\n/properties/radius: expected a number > 0 and <= "
             "1e+06, got -2\n/properties/material/fuzz: expected a number >= "
             "0 and <= 1, got 7");
  EXPECT_ERR("update_shape",
             "{\"id\":\"ball\",\"updates\":{\"type\":\"cone\"}}",
             "shape 'ball' was not changed: the update would make it "
             "invalid:\n/properties: missing required property "
             "'base_center'\n/properties: missing required property "
             "'top_center'\n/properties: missing required property "
             "'base_radius'");
  char *after = ok("get_scene_state", "{}");
  cr_assert_str_eq(after, before);
  free(before);
  free(after);
}

Test(scene, a_type_change_keeps_the_material) {
  free(ok("create_shape", BALL));
  EXPECT_OK("update_shape",
            "{\"id\":\"ball\",\"updates\":{\"type\":\"box\",\"properties\":{"
            "\"center\":[0,0.5,0],\"size\":[1,1,1]}}}",
            "{\"id\":\"ball\",\"type\":\"box\",\"properties\":{\"center\":[0,"
            "0.5,0],\"size\":[1,1,1],\"rotation\":[0,0,0],\"material\":{"
            "\"type\":\"metal\",\"albedo\":[0.9,0.9,0.9],\"fuzz\":0.1}}}");
}

Test(scene, renames) {
  free(ok("create_shape", BALL));
  free(ok("create_shape",
          "{\"id\":\"floor\",\"type\":\"plane\",\"properties\":{\"point\":[0,"
          "0,0],\"normal\":[0,1,0]}}"));
  EXPECT_ERR("update_shape", "{\"id\":\"ball\",\"updates\":{\"id\":\"floor\"}}",
             "cannot rename shape 'ball' to 'floor': another shape has that "
             "id; nothing changed");
  char *r =
      ok("update_shape", "{\"id\":\"ball\",\"updates\":{\"id\":\"orb\"}}");
  cr_assert(strstr(r, "{\"id\":\"orb\",\"type\":\"sphere\"") == r, "%s", r);
  free(r);
  EXPECT_ERR("remove_shape", "{\"id\":\"ball\"}",
             "shape 'ball' not found; shapes: orb, floor");
  /* A light may share a shape's id: they are separate name spaces. */
  free(ok("create_light",
          "{\"id\":\"orb\",\"type\":\"point\",\"properties\":{\"center\":[0,"
          "3,0],\"emission\":[1,1,1]}}"));
  EXPECT_OK("update_light",
            "{\"id\":\"orb\",\"updates\":{\"id\":\"lamp\",\"properties\":{"
            "\"emission\":[2,2,2]}}}",
            "{\"id\":\"lamp\",\"type\":\"point\",\"properties\":{\"center\":"
            "[0,3,0],\"emission\":[2,2,2]}}");
}

Test(scene, remove_returns_the_object_and_keeps_the_order) {
  free(ok("create_shape", BALL));
  for (int i = 0; i < 3; i++) {
    char args[160];
    snprintf(args, sizeof(args),
             "{\"id\":\"s%d\",\"type\":\"sphere\",\"properties\":{\"center\":"
             "[%d,0,0],\"radius\":0.5}}",
             i, i);
    free(ok("create_shape", args));
  }
  char *gone = ok("remove_shape", "{\"id\":\"s1\"}");
  cr_assert(strstr(gone, "\"id\":\"s1\"") != NULL, "%s", gone);
  free(gone);
  EXPECT_ERR("remove_shape", "{\"id\":\"zz\"}",
             "shape 'zz' not found; shapes: ball, s0, s2");
  EXPECT_ERR("remove_light", "{\"id\":\"zz\"}",
             "light 'zz' not found; the scene has no lights");
}

Test(scene, not_found_lists_at_most_twenty_names) {
  for (int i = 0; i < 25; i++) {
    char args[160];
    snprintf(args, sizeof(args),
             "{\"id\":\"n%02d\",\"type\":\"sphere\",\"properties\":{"
             "\"center\":[0,0,0],\"radius\":1}}",
             i);
    free(ok("create_shape", args));
  }
  EXPECT_ERR("update_shape", "{\"id\":\"x\",\"updates\":{\"id\":\"y\"}}",
             "shape 'x' not found; shapes: n00, n01, n02, n03, n04, n05, "
             "n06, n07, n08, n09, n10, n11, n12, n13, n14, n15, n16, n17, "
             "n18, n19 and 5 more");
}

/* ---- errors ---- */

Test(scene, duplicate_ids) {
  free(ok("create_shape", BALL));
  EXPECT_ERR("create_shape", BALL,
             "shape 'ball' already exists; choose another id, or change it "
             "with update_shape");
  free(ok("create_light",
          "{\"id\":\"l\",\"type\":\"point\",\"properties\":{\"center\":[0,3,"
          "0],\"emission\":[1,1,1]}}"));
  EXPECT_ERR("create_light",
             "{\"id\":\"l\",\"type\":\"point\",\"properties\":{\"center\":[0,"
             "3,0],\"emission\":[1,1,1]}}",
             "light 'l' already exists; choose another id, or change it with "
             "update_light");
}

Test(scene, schema_errors_are_reported_together) {
  EXPECT_ERR("create_shape",
             "{\"id\":\"bad id!\",\"type\":\"sphere\",\"properties\":{"
             "\"center\":[0,1],\"radius\":-1,\"colour\":[1,0,0],\"material\":"
             "{\"type\":\"metal\",\"fuzz\":3}}}",
             "/id: expected a string matching the pattern "
             "'^[A-Za-z0-9_.-]{1,64}$', got \"bad id!\"\n/properties/center: "
             "expected an array of exactly 3 items, got 2 items\n/properties/"
             "radius: expected a number > 0 and <= 1e+06, got -1\n/properties:"
             " unexpected property 'colour' (allowed: center, radius, "
             "material)\n/properties/material/fuzz: expected a number >= 0 "
             "and <= 1, got 3");
  EXPECT_ERR("create_shape",
             "{\"id\":\"x\",\"type\":\"blob\",\"properties\":{}}",
             "/type: expected one of \"sphere\", \"box\", \"quad\", \"disc\", "
             "\"cylinder\", \"cone\", \"plane\", \"triangle\", \"torus\", got "
             "\"blob\"");
  EXPECT_ERR("create_shape",
             "{\"id\":\"x\",\"type\":\"sphere\",\"properties\":{\"center\":[0,"
             "0,0],\"radius\":1,\"material\":{\"type\":\"velvet\"}}}",
             "/properties/material/type: expected one of \"lambertian\", "
             "\"metal\", \"dielectric\", \"emissive\", \"plastic\", got "
             "\"velvet\"");
  EXPECT_ERR("create_light",
             "{\"id\":\"x\",\"type\":\"point\",\"properties\":{\"center\":[0,"
             "0,0],\"emission\":[-1,0,0]}}",
             "/properties/emission/0: expected a number >= 0 and <= 1e+06, "
             "got -1");
}

Test(scene, degenerate_geometry) {
  EXPECT_ERR("create_shape",
             "{\"id\":\"q\",\"type\":\"quad\",\"properties\":{\"corner\":[0,0,"
             "0],\"u\":[1,0,0],\"v\":[-2,0,0]}}",
             "shape 'q' was not created:\n/properties/v: must not be parallel "
             "to u (the quad would be flat as a line); give two edges at an "
             "angle, such as u = [1, 0, 0] and v = [0, 0, 1]");
  EXPECT_ERR("create_shape",
             "{\"id\":\"q\",\"type\":\"quad\",\"properties\":{\"corner\":[0,0,"
             "0],\"u\":[0,0,0],\"v\":[0,0,0]}}",
             "shape 'q' was not created:\n/properties/u: must not be [0, 0, "
             "0]: it is a direction; give one such as [1, 0, 0]\n/properties/"
             "v: must not be [0, 0, 0]: it is a direction; give one such as "
             "[0, 0, 1]");
  EXPECT_ERR("create_shape",
             "{\"id\":\"d\",\"type\":\"disc\",\"properties\":{\"center\":[0,0,"
             "0],\"normal\":[0,0,0],\"radius\":1}}",
             "shape 'd' was not created:\n/properties/normal: must not be [0, "
             "0, 0]: it is a direction; give one such as [0, 1, 0]");
  EXPECT_ERR("create_shape",
             "{\"id\":\"c\",\"type\":\"cylinder\",\"properties\":{\"base_"
             "center\":[1,1,1],\"top_center\":[1,1,1],\"radius\":1}}",
             "shape 'c' was not created:\n/properties/top_center: must differ "
             "from base_center (the cylinder would have no height)");
  EXPECT_ERR("create_shape",
             "{\"id\":\"k\",\"type\":\"cone\",\"properties\":{\"base_center\":"
             "[0,0,0],\"top_center\":[0,0,0],\"base_radius\":1,\"top_"
             "radius\":1}}",
             "shape 'k' was not created:\n/properties/top_center: must differ "
             "from base_center (the cone would have no height)\n/properties/"
             "top_radius: must be smaller than base_radius (1 >= 1); for "
             "equal radii use a cylinder");
  EXPECT_ERR("create_shape",
             "{\"id\":\"p\",\"type\":\"plane\",\"properties\":{\"point\":[0,0,"
             "0],\"normal\":[0,0,0]}}",
             "shape 'p' was not created:\n/properties/normal: must not be [0, "
             "0, 0]: it is a direction; give one such as [0, 1, 0]");
  EXPECT_ERR("create_shape",
             "{\"id\":\"t\",\"type\":\"triangle\",\"properties\":{\"v0\":[0,0,"
             "0],\"v1\":[1,1,1],\"v2\":[2,2,2]}}",
             "shape 't' was not created:\n/properties/v2: the three vertices "
             "lie on one line (the triangle has no area); move one off it");
  EXPECT_ERR("create_shape",
             "{\"id\":\"r\",\"type\":\"torus\",\"properties\":{\"center\":[0,"
             "0,0],\"axis\":[0,0,0],\"major_radius\":1,\"minor_radius\":2}}",
             "shape 'r' was not created:\n/properties/axis: must not be [0, 0, "
             "0]: it is a direction; give one such as [0, 1, 0]\n/properties/"
             "minor_radius: must be smaller than major_radius (2 >= 1): the "
             "tube would fill the hole");
  EXPECT_ERR("create_light",
             "{\"id\":\"s\",\"type\":\"spot\",\"properties\":{\"center\":[0,3,"
             "0],\"direction\":[0,0,0],\"cone_angle\":10,\"edge_width\":20,"
             "\"emission\":[1,1,1]}}",
             "light 's' was not created:\n/properties/direction: must not be "
             "[0, 0, 0]: it is a direction; give one such as [0, -1, 0]\n/"
             "properties/edge_width: must be at most cone_angle (20 > 10)");
  EXPECT_ERR("create_light",
             "{\"id\":\"a\",\"type\":\"area_quad\",\"properties\":{\"corner\":"
             "[0,3,0],\"u\":[1,0,0],\"v\":[3,0,0],\"emission\":[1,1,1]}}",
             "light 'a' was not created:\n/properties/v: must not be parallel "
             "to u (the quad would be flat as a line); give two edges at an "
             "angle, such as u = [1, 0, 0] and v = [0, 0, 1]");
  EXPECT_ERR("set_camera", "{\"center\":[1,2,3],\"look_at\":[1,2,3]}",
             "the camera was not changed:\n/look_at: must differ from center "
             "(the camera would not know where to look)");
  EXPECT_ERR("set_camera", "{\"center\":[0,5,0],\"look_at\":[0,0,0]}",
             "the camera was not changed:\n/up: must not be parallel to the "
             "view direction (look_at - center): the picture's up would be "
             "undefined; looking straight down, use up = [0, 0, -1]");
  EXPECT_ERR("set_camera",
             "{\"center\":[0,0,5],\"look_at\":[0,0,0],\"vfov\":"
             "180}",
             "/vfov: expected a number > 0 and < 180, got 180");
  /* Nothing of the failed calls is in the scene. */
  EXPECT_OK("describe_scene", "{}",
            "{\"text\":\"No shapes.\\nNo lights.\\nCamera: center [0, 0, 5], "
            "look_at [0, 0, 0], up [0, 1, 0], vfov 45, aperture 0, "
            "focus_distance 5\\nEnvironment: gradient, top_color [0.5, 0.7, "
            "1], bottom_color [1, 1, 1]\\n\"}");
}

Test(scene, light_environment_and_argument_errors) {
  static const char *const point =
      "{\"id\":\"%s\",\"type\":\"point\",\"properties\":{\"center\":[0,3,0],"
      "\"emission\":[1,1,1]}}";
  char args[256];
  snprintf(args, sizeof(args), point, "a");
  free(ok("create_light", args));
  snprintf(args, sizeof(args), point, "b");
  free(ok("create_light", args));
  EXPECT_ERR("update_light", "{\"id\":\"a\",\"updates\":{\"id\":\"b\"}}",
             "cannot rename light 'a' to 'b': another light has that id; "
             "nothing changed");
  EXPECT_ERR("update_light",
             "{\"id\":\"a\",\"updates\":{\"type\":\"spot\",\"properties\":{"
             "\"center\":[0,1,0],\"emission\":[1,1,1],\"cone_angle\":120}}}",
             "light 'a' was not changed: the update would make it invalid:\n"
             "/properties/cone_angle: expected a number > 0 and <= 90, got "
             "120");
  EXPECT_ERR("update_light", "{\"id\":\"zz\",\"updates\":{\"id\":\"y\"}}",
             "light 'zz' not found; lights: a, b");
  EXPECT_ERR("update_shape", "{\"id\":\"a\",\"updates\":{}}",
             "/updates: expected an object with at least 1 property, got 0 "
             "properties");
  EXPECT_ERR("set_environment", "{\"type\":\"gradient\",\"top_color\":[1,1,1]}",
             "(root): missing required property 'bottom_color'");
  EXPECT_ERR("set_environment", "{\"type\":\"sky\"}",
             "/type: expected one of \"none\", \"uniform\", \"gradient\", got "
             "\"sky\"");
  EXPECT_ERR("import_scene", "{\"scene\":5}",
             "/scene: expected an object, got 5");
  EXPECT_ERR("import_scene",
             "{\"scene\":{\"lights\":[{\"id\":\"x\",\"type\":\"disc_spot_"
             "light\",\"properties\":{}}]}}",
             "the scene was not imported (1 problem); the current scene is "
             "unchanged:\n/scene/lights/0/type: expected one of \"point\", "
             "\"spot\", \"area_quad\", \"area_disc\", \"area_sphere\", "
             "\"directional\", got \"disc_spot_light\"");
  /* The failed calls left the two lights as they were. */
  char *state = ok("get_scene_state", "{}");
  cr_assert(strstr(state, "\"lights\":[{\"id\":\"a\",\"type\":\"point\","
                          "\"properties\":{\"center\":[0,3,0],\"emission\":["
                          "1,1,1]}},{\"id\":\"b\",") != NULL,
            "%s", state);
  free(state);
}
