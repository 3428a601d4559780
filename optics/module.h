/* ModuleObj expansion (a placeholder until the module evaluator lands:
 * every module object is refused with a clear message). */
#ifndef ATL_OPTICS_MODULE_H
#define ATL_OPTICS_MODULE_H

#include <json-c/json.h>

typedef double (*atl_op_random_cb)(void *user);

int atl__op_module_expand(json_object *doc, json_object *obj,
                          atl_op_random_cb random, void *user,
                          json_object **out, char **err);

#endif
