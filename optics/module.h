/* ModuleObj: scene-level module definitions (scene "modules") and the
 * objects that instantiate them, expanded as Ray Optics Simulation's
 * ModuleObj.expandObjs does (v5.4.0).
 *
 * A module definition is {"numPoints", "params", "vars", "objs",
 * "maxLoopLength"} ("importedFromBeta" is accepted and ignored). The
 * expansion, in upstream's order:
 *  - The scope holds the params: obj.params as given when the object has
 *    them (a declared param missing there stays undefined, and using it is
 *    an error, as upstream), else every declaration's default
 *    ("name=start:step:end[:default]", the default being start when
 *    absent). Then x_i, y_i (i from 1) for obj.points, or numPoints points
 *    at (0, 0) when the object has no points. Then `random`.
 *  - Each `vars` entry is evaluated in order in that scope ("a = ..." and
 *    "f(t) = ..." define names); those of the form "name(a, b) = body" are
 *    also the functions inlined into equation templates.
 *  - `objs` is expanded: every string is a template, objects and arrays
 *    recursively. In an array, an object with "for" repeats for each value
 *    of its loop variables ("i=start:step:end", or an array of such
 *    strings: a Cartesian product, the first outermost; bounds inclusive,
 *    value += step in doubles), and one with "if" is kept only when the
 *    condition (a mathjs expression) is truthy. "for" and "if" never reach
 *    the output, at any depth.
 *  - Templates: a string that is exactly one `expr` block becomes the
 *    value (a number or a boolean; an empty block drops the key). Anything
 *    else is text: each `expr` is replaced by the value as JavaScript
 *    writes it, and each ``expr`` (double backticks) by the LaTeX of the
 *    equation with params substituted and `vars` functions inlined.
 *  - A ModuleObj among the results expands in its turn (nesting is limited
 *    to ATL_OP_MODULE_MAX_DEPTH), after all templates of the outer module
 *    were evaluated, which is when upstream constructs it.
 *
 * Random numbers: `random()` draws one number from the callback per call
 * and per evaluation, in evaluation order: the vars first (once per
 * expansion), then the templates object by object and key by key (the
 * JSON's order), the "if" of an iteration before its object; the
 * arguments of random(...) are evaluated first and ignored. A bare
 * `random` (not called) is an error. */
#ifndef ATL_OPTICS_MODULE_H
#define ATL_OPTICS_MODULE_H

#include <json-c/json.h>

#include "mathexpr.h"

/* Guards against hostile scenes. Upstream has maxLoopLength (default
 * 1000) per loop and per object; these cap the whole expansion. */
#define ATL_OP_MODULE_MAX_OBJS 100000 /* objects and array elements made */
#define ATL_OP_MODULE_MAX_BYTES (64u << 20) /* text made by templates */
#define ATL_OP_MODULE_MAX_DEPTH 16          /* ModuleObj inside modules */
#define ATL_OP_MODULE_MAX_JSON_DEPTH 64     /* nesting inside objs */

/* Expands one ModuleObj (obj, a JSON object of the scene document doc,
 * which holds "modules") into the plain scene objects it stands for, in
 * upstream's order, with every template string evaluated and every loop
 * unrolled, and the module's params and control points bound (see above).
 * obj and doc are only read. random may be NULL: then `random()` is an
 * error. On success returns 0 and *out is a new json-c array owned by the
 * caller (json_object_put); every element is an object with a string
 * "type" (whether the type exists is the caller's check). On error returns
 * -EINVAL (-ENOMEM when out of memory) and *err (malloc()ed, the caller
 * frees it) names the module, the object index and the field and says
 * what is wrong and what would be right. */
int atl__op_module_expand(json_object *doc, json_object *obj,
                          atl_op_random_cb random, void *user,
                          json_object **out, char **err);

#endif
