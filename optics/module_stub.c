/* Until the module evaluator lands, a module object is an error. */
#include <errno.h>
#include <string.h>

#include "module.h"

int atl__op_module_expand(json_object *doc, json_object *obj,
                          atl_op_random_cb random, void *user,
                          json_object **out, char **err) {
  (void)doc, (void)obj, (void)random, (void)user;
  *out = NULL;
  if (err)
    *err = strdup("ModuleObj is not supported yet");
  return -ENOTSUP;
}
