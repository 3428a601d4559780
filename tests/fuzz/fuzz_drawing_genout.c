/* Fuzz target: generate_svg's output reader (plugins/drawing/genout.h)
 * and the checks every path it yields goes through (canvas.h). The output
 * is written by code a model wrote, so any bytes must be read or refused
 * with a message, and every path read must be accepted or refused, in
 * both modes, without a crash or undefined behaviour; an accepted path's
 * stroke must pack and unpack to itself. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canvas.h"
#include "genout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(why)                                                              \
  do {                                                                         \
    fprintf(stderr, "fuzz_drawing_genout: %s (line %d)\n", why, __LINE__);     \
    abort();                                                                   \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_object *paths = NULL;
  char *err = NULL;
  if (genout_read((const char *)data, size, &paths, &err) != 0) {
    if (err == NULL || paths != NULL)
      FAIL("a refusal without a message");
    free(err);
    return 0;
  }
  dp_path_t scratch = {0};
  size_t n = json_object_array_length(paths);
  for (size_t i = 0; i < n; i++) {
    for (int mode = 0; mode < 2; mode++) {
      cv_stroke_t s;
      int clipped, styled;
      dp_box_t box;
      char msg[512];
      if (cv_path_from_json(json_object_array_get_idx(paths, i),
                            (cv_mode_t)mode, &s, &scratch, &clipped, &box,
                            &styled, msg, sizeof(msg)) != 0) {
        if (msg[0] == '\0')
          FAIL("a refused path without a message");
        cv_stroke_clear(&s);
        continue;
      }
      s.id = (uint32_t)i + 1;
      char *packed = cv_stroke_pack(&s);
      cv_stroke_t back;
      if (packed == NULL || cv_stroke_unpack(packed, &back) != 0)
        FAIL("an accepted stroke does not unpack");
      char *again = cv_stroke_pack(&back);
      if (again == NULL || strcmp(again, packed) != 0)
        FAIL("a stroke does not pack to itself");
      free(again);
      free(packed);
      cv_stroke_clear(&back);
      cv_stroke_clear(&s);
    }
  }
  dp_path_free(&scratch);
  json_object_put(paths);
  return 0;
}
