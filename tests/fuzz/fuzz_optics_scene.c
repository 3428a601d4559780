/* Fuzz target: the optics simulator's scene loader and its ray loop. A
 * scene reaches the simulator from a session's document and from any
 * file given to atelier-optics, so the loader must refuse anything
 * malformed with a message, and anything it accepts must simulate to
 * its end (here under a ray limit) without a crash, and write its
 * detectors' CSVs. */
#include <json-c/json.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(why)                                                              \
  do {                                                                         \
    fprintf(stderr, "fuzz_optics_scene: %s (line %d)\n", why, __LINE__);       \
    abort();                                                                   \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_tokener *tok = json_tokener_new();
  json_object *doc = json_tokener_parse_ex(tok, (const char *)data, (int)size);
  json_tokener_free(tok);
  if (!doc)
    return 0;
  atl_op_scene *s = NULL;
  char *err = NULL;
  int rc = atl__op_scene_load(doc, &s, &err);
  json_object_put(doc);
  if (rc != 0) {
    if (s)
      FAIL("a refused scene was returned");
    if (!err || !err[0])
      FAIL("a refused scene without a message");
    free(err);
    return 0;
  }
  atl_op_sim *sim = NULL;
  if (atl__op_sim_run(s, 2000, 1, &sim) == 0) {
    if (sim->processed > 2001)
      FAIL("the ray limit was not kept");
    for (int i = 0; i < s->noptical; i++)
      free(atl_optics_detector_csv(s->optical[i]));
  }
  atl__op_sim_free(sim);
  atl__op_scene_free(s);
  return 0;
}
