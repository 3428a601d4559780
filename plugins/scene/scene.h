/* The scene plugin's internals, shared by its files.
 *
 * The scene lives in the session document's "scene" namespace:
 *   {"camera": {...}, "environment": {...}, "shapes": [...], "lights": [...],
 *    "description"?: "...", "render"?: {...}}
 * Shapes and lights are {"id", "type", "properties"} objects kept in
 * creation order, each with every default filled in and its properties in
 * the order of schemas.inc, so that what the model is shown, what is
 * exported and what is described are the same and stable.
 *
 * Every json_object a function here returns is a new reference the caller
 * owns, unless its comment says "borrowed".
 */
#ifndef ATL_SCENE_H
#define ATL_SCENE_H

#include <stdbool.h>
#include <stddef.h>

#include <atelier/plugin.h>

#include "schemas.inc"

typedef struct {
  const atl_host_t *host;
  /* Compiled with the host's validator at init; immutable after. */
  atl_schema_t *shape_schema; /* SCENE_SCHEMA_SHAPE_OBJECT */
  atl_schema_t *light_schema; /* SCENE_SCHEMA_LIGHT_OBJECT */
  atl_schema_t *scene_schema; /* SCENE_SCHEMA_SCENE */
} scene_plugin_t;

/* A shape, light, material or environment type and its properties in
 * their canonical order. */
typedef struct {
  const char *type;
  const char *props[10];
} scene_kind_t;

extern const scene_kind_t scene_shape_kinds[];
extern const scene_kind_t scene_light_kinds[];
extern const scene_kind_t scene_material_kinds[];
extern const scene_kind_t scene_environment_kinds[];
extern const char *const scene_camera_props[];

/* Which collection an object belongs to. */
typedef enum { SCENE_SHAPES, SCENE_LIGHTS } scene_what_t;
const char *scene_what_name(scene_what_t w); /* "shape" or "light" */

/* ---- the namespace (scene_state.c) ---- */

/* Makes sure ns has all four members, with defaults; returns ns. */
json_object *scene_ns_ready(json_object *ns);
/* Borrowed: ns's array of shapes or lights. */
json_object *scene_ns_list(json_object *ns, scene_what_t w);
/* Index of the object with this id in list, or -1. */
int scene_find(json_object *list, const char *id);
/* "shape 'x' not found; shapes: a, b" (past 20 names: "and N more").
 * malloc()ed. */
char *scene_not_found(json_object *list, scene_what_t w, const char *id);
/* A new camera object with every default, for the default scene. */
json_object *scene_default_camera(void);
json_object *scene_default_environment(void);

/* ---- objects (scene_objects.c) ---- */

/* A copy of obj ({"id","type","properties"}) with its properties (and its
 * material's) in canonical order. obj must be valid. */
json_object *scene_canonical(json_object *obj, scene_what_t w);
json_object *scene_canonical_camera(json_object *camera);
json_object *scene_canonical_environment(json_object *env);
/* Fills in the focus distance (|look_at - center|) when absent. */
void scene_camera_complete(json_object *camera);

/* The checks a JSON Schema cannot express: zero directions, parallel
 * edges, coincident ends, a cone wider at the top. Appends one message
 * per problem to errors (a JSON array), each starting with prefix and the
 * property's JSON pointer. Returns the number appended. */
int scene_check_object(json_object *obj, scene_what_t w, const char *prefix,
                       json_object *errors);
int scene_check_camera(json_object *camera, const char *prefix,
                       json_object *errors);

/* Deep merge: every member of patch replaces or (for objects) merges into
 * target's. Arrays and scalars are replaced whole. */
void scene_merge(json_object *target, json_object *patch);

/* Formats a number the shortest way that reads back exactly. */
json_object *scene_number(double v);

/* ---- text (scene_describe.c) ---- */

/* The compact text listing of the scene for the system prompt and for
 * describe_scene. malloc()ed. */
char *scene_describe_text(json_object *ns);

/* Joins the strings of a JSON array with "\n". malloc()ed. */
char *scene_join(json_object *errors);

#endif
