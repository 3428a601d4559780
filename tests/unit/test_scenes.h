/* Loading the path tracer's scenes in a Criterion test: from a string
 * or from tests/data. */
#ifndef ATL_TEST_SCENES_H
#define ATL_TEST_SCENES_H

#include <string.h>

#include "render.h"
#include "test_data.h"

/* The scene of a JSON document; a document that does not load fails the
 * test. The scene is the test's, freed with atl_render_scene_free(). */
static inline atl_render_scene_t *atl_test_scene_str(const char *json) {
  atl_render_scene_t *s = NULL;
  char *err = NULL;
  int rc = atl_render_scene_load(json, strlen(json), &s, &err);
  cr_assert_eq(rc, 0, "load failed: %s", err ? err : "?");
  return s;
}

/* The scene of tests/data/NAME. */
static inline atl_render_scene_t *atl_test_scene_file(const char *name) {
  size_t n;
  char *json = atl_test_slurp(name, &n);
  atl_render_scene_t *s = atl_test_scene_str(json);
  free(json);
  return s;
}

#endif
