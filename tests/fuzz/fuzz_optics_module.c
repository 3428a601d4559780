/* Fuzz target: ModuleObj expansion (optics/module.h). The input is a
 * scene document; every ModuleObj among its objs is expanded. The
 * expansion must end (loops, nesting and text are capped), must either
 * succeed with an array of objects with a string "type" or fail with a
 * message, and must not leak. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "module.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static double rng(void *user) {
  unsigned *n = user;
  return (double)((*n)++ % 11) / 11;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_tokener *tok = json_tokener_new();
  json_object *doc = json_tokener_parse_ex(
      tok, (const char *)data, (int)(size > 1 << 20 ? 1 << 20 : size));
  json_tokener_free(tok);
  json_object *objs;
  if (doc && json_object_object_get_ex(doc, "objs", &objs) &&
      json_object_is_type(objs, json_type_array)) {
    for (size_t i = 0; i < json_object_array_length(objs) && i < 16; i++) {
      json_object *o = json_object_array_get_idx(objs, i), *t;
      if (!json_object_object_get_ex(o, "type", &t) ||
          !json_object_is_type(t, json_type_string) ||
          strcmp(json_object_get_string(t), "ModuleObj") != 0)
        continue;
      json_object *out = NULL;
      char *err = NULL;
      unsigned draws = 0;
      int rc = atl__op_module_expand(doc, o, rng, &draws, &out, &err);
      if (rc == 0) {
        if (out == NULL || err != NULL)
          abort();
        for (size_t k = 0; k < json_object_array_length(out); k++) {
          json_object *e = json_object_array_get_idx(out, k);
          if (!json_object_object_get_ex(e, "type", &t) ||
              !json_object_is_type(t, json_type_string))
            abort();
        }
        json_object_put(out);
      } else if (out != NULL || err == NULL ||
                 (rc != -EINVAL && rc != -ENOMEM)) {
        abort();
      }
      free(err);
    }
  }
  json_object_put(doc);
  return 0;
}
