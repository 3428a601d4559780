/* The optics plugin's geometry (plugins/optics/opx_geom.h): names and
 * families, edges measured along themselves, labels facing the picture's
 * directions (y down), exact areas and centroids with arcs, containment,
 * the edges through a point and the angle to an edge's normal. Expected
 * values are worked out by hand in the comments. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "geom.h"
#include "optics.h"
#include "opx_geom.h"

#define PI 3.14159265358979323846

static atl_op_scene *scene;
static opx_geom_t *geom;

static void teardown(void) {
  opx_geom_free(geom);
  geom = NULL;
  if (scene)
    atl__op_scene_free(scene);
  scene = NULL;
}

TestSuite(optics_geom, .fini = teardown);

/* Loads the scene of the objects objs (JSON text, without names) and
 * builds its geometry with the names of names (a JSON array, or NULL). */
static void build(const char *objs, const char *names) {
  char *text = NULL, *err = NULL;
  cr_assert(asprintf(&text, "{\"version\": 5, %s\"objs\": [%s]}",
                     strstr(objs, "\"modules\"") ? "" : "", objs) > 0);
  json_object *doc = json_tokener_parse(text);
  cr_assert_not_null(doc, "bad test JSON: %s", text);
  free(text);
  int rc = atl__op_scene_load(doc, &scene, &err);
  json_object_put(doc);
  cr_assert_eq(rc, 0, "load: %s", err ? err : "?");
  json_object *nm = names ? json_tokener_parse(names) : NULL;
  cr_assert_eq(opx_geom_build(scene, nm, &geom), 0);
  json_object_put(nm);
}

#define P(x, y) "{\"x\": " #x ", \"y\": " #y "}"
#define PRISM                                                                  \
  "{\"type\": \"Glass\", \"path\": [" P(200, 50) ", " P(250, 100) ", " P(      \
      150, 100) "], \"refIndex\": 1.5}"
#define RAY                                                                    \
  "{\"type\": \"SingleRay\", \"p1\": " P(100, 80) ", \"p2\": " P(              \
      250, 80) ", \"brightness\": 1}"

static void expect_labels(int obj, const char *const *want, int n) {
  const opx_obj_t *ob = &geom->objs[obj];
  cr_assert_eq(ob->nedges, n);
  for (int i = 0; i < n; i++)
    cr_expect_str_eq(geom->edges[ob->first_edge + i].short_label, want[i],
                     "edge %d", i);
}

/* The reference prism: area 50 * 100 / 2 = 2500, perimeter
 * 100 + 2 * 50 sqrt 2 = 241.4214, centroid the vertices' average
 * (200, 83.3333). Its labels in y-down: edge 0's middle (225, 75) is up
 * and right of the centroid at 18.4 degrees: E; edge 1's (200, 100) is
 * straight below: S; edge 2's (175, 75): W. */
Test(optics_geom, reference_prism) {
  build(PRISM ", " RAY, NULL);
  cr_assert_eq(geom->nobjs, 2);
  const opx_obj_t *g = &geom->objs[0];
  cr_expect_str_eq(g->type, "Glass");
  cr_expect_eq(g->family, OPX_GLASS);
  cr_expect_float_eq(g->ref_index, 1.5, 0);
  cr_expect_float_eq(g->area, 2500, 1e-9);
  cr_expect_float_eq(g->perimeter, 100 + 100 * sqrt(2), 1e-9);
  cr_expect_float_eq(g->perimeter, 241.4214, 1e-4);
  cr_expect_float_eq(g->centroid.x, 200, 1e-9);
  cr_expect_float_eq(g->centroid.y, 250.0 / 3, 1e-9);
  static const char *const want[] = {"E", "S", "W"};
  expect_labels(0, want, 3);
  cr_expect_str_eq(geom->edges[1].long_label, "South Edge");
  cr_expect_str_eq(g->display_name, "Glass 0");
  cr_expect_str_eq(geom->objs[1].display_name, "SingleRay 1");
  cr_expect_eq(geom->objs[1].family, OPX_SOURCE);
  cr_expect(isnan(geom->objs[1].ref_index));
}
