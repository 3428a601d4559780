/* The scene plugin: the 3D scene the agent edits by chat and the render
 * farm draws. Shapes, materials, lights, camera and environment, each with
 * a complete schema; every change is checked whole and applied whole or
 * not at all; every success shows the object as it now exists.
 *
 * The handlers run on the daemon's loop (ATL_TOOL_FAST), except those
 * whose cost grows with the scene (state, export, import).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scene.h"

/* Arguments larger than this are refused (import_scene excepted): a
 * scene is built by many small calls, and a huge one is most likely a
 * model gone astray. */
#define MAX_ARGS_BYTES 65536

static const char *str_arg(json_object *args, const char *name) {
  json_object *v;
  return json_object_object_get_ex(args, name, &v) ? json_object_get_string(v)
                                                   : NULL;
}

/* Refuses oversized arguments; returns 1 if it did. */
static int too_large(atl_call_t *call) {
  size_t n = strlen(
      json_object_to_json_string_ext(call->args, JSON_C_TO_STRING_PLAIN));
  if (n <= MAX_ARGS_BYTES)
    return 0;
  call->host->call_error(call,
                         "the arguments are %zu bytes; at most %d per call: "
                         "split the work into several calls",
                         n, MAX_ARGS_BYTES);
  return 1;
}

/* Reports the problems in errors (a JSON array) as the call's error,
 * after a first line saying what was not done. Takes errors. */
static int fail_with(atl_call_t *call, json_object *errors, const char *head) {
  char *body = scene_join(errors);
  call->host->call_error(call, "%s:\n%s", head, body ? body : "");
  free(body);
  json_object_put(errors);
  return 0;
}

/* "<what> '<id>' <rest>" in buf. */
static const char *headline(char *buf, size_t len, const char *what,
                            const char *id, const char *rest) {
  snprintf(buf, len, "%s '%s' %s", what, id, rest);
  return buf;
}

/* ---- shapes and lights ---- */

static int create_object(atl_call_t *call, scene_what_t w) {
  if (too_large(call))
    return 0;
  const atl_host_t *h = call->host;
  const char *what = scene_what_name(w);
  json_object *list = scene_ns_list(scene_ns_ready(call->ns), w);
  const char *id = str_arg(call->args, "id");
  if (scene_find(list, id) >= 0) {
    h->call_error(call,
                  "%s '%s' already exists; choose another id, or change it "
                  "with update_%s",
                  what, id, what);
    return 0;
  }
  int max = w == SCENE_SHAPES ? SCENE_MAX_SHAPES : SCENE_MAX_LIGHTS;
  if ((int)json_object_array_length(list) >= max) {
    h->call_error(call,
                  "the scene already has %d %ss, the most it can hold; "
                  "remove some first",
                  max, what);
    return 0;
  }
  json_object *errors = json_object_new_array();
  char head[160];
  if (scene_check_object(call->args, w, "", errors) > 0)
    return fail_with(call, errors,
                     headline(head, sizeof(head), what, id, "was not created"));
  json_object_put(errors);
  json_object *obj = scene_canonical(call->args, w);
  json_object_array_add(list, json_object_get(obj));
  h->call_operation(call, id, NULL, json_object_get(obj));
  h->call_result(call, obj);
  return 0;
}

/* A new type starts its properties afresh: the old type's would not fit.
 * A shape keeps its material unless the update gives one. */
static void change_type(json_object *merged, const char *type, scene_what_t w) {
  json_object *props = NULL, *material = NULL;
  json_object_object_get_ex(merged, "properties", &props);
  if (w == SCENE_SHAPES && props != NULL &&
      json_object_object_get_ex(props, "material", &material))
    json_object_get(material);
  json_object *fresh = json_object_new_object();
  if (material != NULL)
    json_object_object_add(fresh, "material", material);
  json_object_object_add(merged, "properties", fresh);
  json_object_object_add(merged, "type", json_object_new_string(type));
}

/* A material of another type replaces the old one instead of merging
 * into it: metal's fuzz means nothing to glass ("make the ball glass"). */
static void drop_replaced_material(json_object *props, json_object *patch) {
  json_object *old_m, *new_m, *old_t, *new_t;
  if (json_object_object_get_ex(patch, "material", &new_m) &&
      json_object_object_get_ex(new_m, "type", &new_t) &&
      json_object_object_get_ex(props, "material", &old_m) &&
      json_object_object_get_ex(old_m, "type", &old_t) &&
      strcmp(json_object_get_string(new_t), json_object_get_string(old_t)) != 0)
    json_object_object_del(props, "material");
}

static int update_object(atl_call_t *call, scene_what_t w) {
  if (too_large(call))
    return 0;
  const atl_host_t *h = call->host;
  scene_plugin_t *sp = call->plugin_state;
  const char *what = scene_what_name(w);
  json_object *list = scene_ns_list(scene_ns_ready(call->ns), w);
  const char *id = str_arg(call->args, "id");
  int idx = scene_find(list, id);
  if (idx < 0) {
    char *msg = scene_not_found(list, w, id);
    h->call_error(call, "%s", msg ? msg : "not found");
    free(msg);
    return 0;
  }
  json_object *updates = NULL;
  json_object_object_get_ex(call->args, "updates", &updates);
  json_object *old = json_object_array_get_idx(list, idx);
  json_object *merged = NULL;
  if (json_object_deep_copy(old, &merged, NULL) != 0)
    return ATL_ENOMEM;

  const char *new_id = str_arg(updates, "id");
  if (new_id != NULL && strcmp(new_id, id) != 0 &&
      scene_find(list, new_id) >= 0) {
    h->call_error(call,
                  "cannot rename %s '%s' to '%s': another %s has that id; "
                  "nothing changed",
                  what, id, new_id, what);
    json_object_put(merged);
    return 0;
  }
  if (new_id != NULL)
    json_object_object_add(merged, "id", json_object_new_string(new_id));
  const char *new_type = str_arg(updates, "type");
  json_object *old_type;
  json_object_object_get_ex(old, "type", &old_type);
  if (new_type != NULL &&
      strcmp(new_type, json_object_get_string(old_type)) != 0)
    change_type(merged, new_type, w);
  json_object *patch, *props;
  if (json_object_object_get_ex(updates, "properties", &patch) &&
      json_object_object_get_ex(merged, "properties", &props)) {
    drop_replaced_material(props, patch);
    scene_merge(props, patch);
  }

  /* The merged object is checked as a whole, as if it were created. */
  json_object *errors = NULL;
  atl_schema_t *schema =
      w == SCENE_SHAPES ? sp->shape_schema : sp->light_schema;
  char head[160];
  headline(head, sizeof(head), what, id,
           "was not changed: the update would make it invalid");
  if (h->schema_validate(schema, merged, &errors) > 0) {
    json_object_put(merged);
    return fail_with(call, errors, head);
  }
  h->schema_apply_defaults(schema, merged);
  errors = json_object_new_array();
  if (scene_check_object(merged, w, "", errors) > 0) {
    json_object_put(merged);
    return fail_with(call, errors, head);
  }
  json_object_put(errors);
  json_object *obj = scene_canonical(merged, w);
  json_object_put(merged);
  json_object *before = json_object_get(old);
  json_object_array_put_idx(list, (size_t)idx, json_object_get(obj));
  h->call_operation(call, new_id ? new_id : id, before, json_object_get(obj));
  h->call_result(call, obj);
  return 0;
}

static int remove_object(atl_call_t *call, scene_what_t w) {
  const atl_host_t *h = call->host;
  json_object *list = scene_ns_list(scene_ns_ready(call->ns), w);
  const char *id = str_arg(call->args, "id");
  int idx = scene_find(list, id);
  if (idx < 0) {
    char *msg = scene_not_found(list, w, id);
    h->call_error(call, "%s", msg ? msg : "not found");
    free(msg);
    return 0;
  }
  json_object *removed = json_object_get(json_object_array_get_idx(list, idx));
  json_object_array_del_idx(list, (size_t)idx, 1);
  h->call_operation(call, id, json_object_get(removed), NULL);
  h->call_result(call, removed);
  return 0;
}

static int create_shape(atl_call_t *c) {
  return create_object(c, SCENE_SHAPES);
}
static int update_shape(atl_call_t *c) {
  return update_object(c, SCENE_SHAPES);
}
static int remove_shape(atl_call_t *c) {
  return remove_object(c, SCENE_SHAPES);
}
static int create_light(atl_call_t *c) {
  return create_object(c, SCENE_LIGHTS);
}
static int update_light(atl_call_t *c) {
  return update_object(c, SCENE_LIGHTS);
}
static int remove_light(atl_call_t *c) {
  return remove_object(c, SCENE_LIGHTS);
}

/* ---- camera and environment ---- */

/* Replaces ns[key] with value, reporting the operation and the result. */
static int replace_member(atl_call_t *call, const char *key,
                          json_object *value) {
  json_object *ns = scene_ns_ready(call->ns), *old = NULL;
  json_object_object_get_ex(ns, key, &old);
  json_object *before = json_object_get(old);
  json_object_object_add(ns, key, json_object_get(value));
  call->host->call_operation(call, key, before, json_object_get(value));
  call->host->call_result(call, value);
  return 0;
}

static int set_camera(atl_call_t *call) {
  json_object *errors = json_object_new_array();
  if (scene_check_camera(call->args, "", errors) > 0)
    return fail_with(call, errors, "the camera was not changed");
  json_object_put(errors);
  json_object *cam = scene_canonical_camera(call->args);
  scene_camera_complete(cam);
  return replace_member(call, "camera", cam);
}

static int set_environment(atl_call_t *call) {
  return replace_member(call, "environment",
                        scene_canonical_environment(call->args));
}

/* ---- the whole scene ---- */

/* The scene as export_scene writes it (with_format) or as get_scene_state
 * shows it. */
static json_object *whole_scene(json_object *ns, int with_format) {
  scene_ns_ready(ns);
  json_object *out = json_object_new_object();
  if (with_format) {
    json_object_object_add(out, "format",
                           json_object_new_string("atelier-scene"));
    json_object_object_add(out, "version", json_object_new_int(1));
  }
  static const char *const order[] = {"description", "render", "camera",
                                      "environment", "shapes", "lights",
                                      NULL};
  for (const char *const *k = order; *k != NULL; k++) {
    json_object *v;
    if (json_object_object_get_ex(ns, *k, &v))
      json_object_object_add(out, *k, json_object_get(v));
  }
  return out;
}

static int get_scene_state(atl_call_t *call) {
  return call->host->call_result(call, whole_scene(call->ns, 0));
}

static int export_scene(atl_call_t *call) {
  json_object *r = json_object_new_object();
  json_object_object_add(r, "scene", whole_scene(call->ns, 1));
  return call->host->call_result(call, r);
}

static int describe_scene(atl_call_t *call) {
  char *text = scene_describe_text(scene_ns_ready(call->ns));
  if (text == NULL)
    return ATL_ENOMEM;
  json_object *r = json_object_new_object();
  json_object_object_add(r, "text", json_object_new_string(text));
  free(text);
  return call->host->call_result(call, r);
}

int scene_import(atl_call_t *call); /* scene_io.c */

/* ---- the plugin ---- */

static char *describe(void *state, json_object *ns) {
  (void)state;
  json_object *copy = NULL;
  if (ns == NULL || json_object_deep_copy(ns, &copy, NULL) != 0)
    copy = json_object_new_object();
  char *text = scene_describe_text(scene_ns_ready(copy));
  json_object_put(copy);
  return text;
}

/* The admin socket's summary (plugin ABI 1.4): counts and the first ids. */
static json_object *admin_summary(void *state, const char *session_id,
                                  json_object *ns) {
  (void)state;
  (void)session_id;
  if (ns == NULL)
    return NULL;
  json_object *o = json_object_new_object();
  static const char *const arrays[] = {"shapes", "lights"};
  for (int k = 0; k < 2; k++) {
    json_object *a = NULL;
    size_t n = json_object_object_get_ex(ns, arrays[k], &a) &&
                       json_object_is_type(a, json_type_array)
                   ? json_object_array_length(a)
                   : 0;
    json_object_object_add(o, arrays[k], json_object_new_int64((int64_t)n));
    json_object *ids = json_object_new_array();
    for (size_t i = 0; i < n && i < 20; i++) {
      json_object *id = NULL;
      if (json_object_object_get_ex(json_object_array_get_idx(a, i), "id", &id))
        json_object_array_add(ids, json_object_get(id));
    }
    char key[16];
    snprintf(key, sizeof(key), "%.5s_ids", arrays[k]);
    json_object_object_add(o, key, ids);
  }
  json_object_object_add(
      o, "camera",
      json_object_new_boolean(json_object_object_get_ex(ns, "camera", NULL)));
  return o;
}

static void destroy(void *state) {
  scene_plugin_t *sp = state;
  if (sp == NULL)
    return;
  if (sp->host != NULL && ATL_HOST_HAS(sp->host, schema_free)) {
    sp->host->schema_free(sp->shape_schema);
    sp->host->schema_free(sp->light_schema);
    sp->host->schema_free(sp->scene_schema);
  }
  free(sp);
}

static int compile(scene_plugin_t *sp, const char *text, atl_schema_t **out) {
  char *err = NULL;
  int rc = sp->host->schema_compile(sp->host, text, out, &err);
  if (rc != 0)
    sp->host->log(sp->host, ATL_LOG_ERROR, "cannot compile a schema: %s",
                  err ? err : "?");
  free(err);
  return rc;
}

static int init(const atl_host_t *host, void **state) {
  if (!ATL_HOST_HAS(host, schema_free)) {
    host->log(host, ATL_LOG_ERROR,
              "this plugin needs plugin ABI 1.1 (the host's schema "
              "validator); this daemon speaks %u.%u",
              host->abi_major, host->abi_minor);
    return ATL_EABI;
  }
  scene_plugin_t *sp = calloc(1, sizeof(*sp));
  if (sp == NULL)
    return ATL_ENOMEM;
  sp->host = host;
  int rc = compile(sp, SCENE_SCHEMA_SHAPE_OBJECT, &sp->shape_schema);
  if (rc == 0)
    rc = compile(sp, SCENE_SCHEMA_LIGHT_OBJECT, &sp->light_schema);
  if (rc == 0)
    rc = compile(sp, SCENE_SCHEMA_SCENE, &sp->scene_schema);
  if (rc != 0) {
    destroy(sp);
    return rc;
  }
  *state = sp;
  return 0;
}

#define EDIT (ATL_TOOL_FAST)
#define LOOK (ATL_TOOL_FAST | ATL_TOOL_READ_ONLY)
/* Overwrites or deletes what was there; the same call again changes
 * nothing more (MCP's annotations, plugin.h). */
#define SET (ATL_TOOL_FAST | ATL_TOOL_DESTRUCTIVE | ATL_TOOL_IDEMPOTENT)

static const atl_tool_t scene_tools[] = {
    {.name = "create_shape",
     .description =
         "Create a shape in the 3D scene with a unique id. Types: sphere, "
         "box, quad, disc, cylinder, cone, plane, triangle, torus (or a "
         "torus arc). Each type takes its own properties (see the schema); "
         "the material is inline and defaults to grey lambertian. Units are "
         "world units (the default camera at [0, 0, 5] looks at the "
         "origin; +Y is up). Returns the shape as stored, defaults filled "
         "in.",
     .input_schema = SCENE_SCHEMA_CREATE_SHAPE,
     .flags = EDIT,
     .handler = create_shape},
    {.name = "update_shape",
     .description =
         "Change a shape by id: move it, resize it, change its material, "
         "rename it, or change its type. Only what is given changes, "
         "merged deeply; the result must be a valid shape or nothing "
         "changes. Returns the shape as stored.",
     .input_schema = SCENE_SCHEMA_UPDATE_SHAPE,
     .flags = SET,
     .handler = update_shape},
    {.name = "remove_shape",
     .description = "Remove a shape by id. Returns the removed shape.",
     .input_schema = SCENE_SCHEMA_REMOVE_SHAPE,
     .flags = SET,
     .handler = remove_shape},
    {.name = "create_light",
     .description =
         "Create a light with a unique id. Types: point, spot, area_quad, "
         "area_disc, area_sphere, directional (the sun). Every light's "
         "power is its emission, linear RGB radiance (>= 0, unbounded). "
         "Area lights are visible and give soft shadows. Returns the light "
         "as stored, defaults filled in.",
     .input_schema = SCENE_SCHEMA_CREATE_LIGHT,
     .flags = EDIT,
     .handler = create_light},
    {.name = "update_light",
     .description =
         "Change a light by id (position, emission, type, id). Only what "
         "is given changes, merged deeply; the result must be a valid "
         "light or nothing changes. Returns the light as stored.",
     .input_schema = SCENE_SCHEMA_UPDATE_LIGHT,
     .flags = SET,
     .handler = update_light},
    {.name = "remove_light",
     .description = "Remove a light by id. Returns the removed light.",
     .input_schema = SCENE_SCHEMA_REMOVE_LIGHT,
     .flags = SET,
     .handler = remove_light},
    {.name = "set_environment",
     .description =
         "Set the background light, seen where rays hit no shape: none "
         "(black), uniform {emission}, or gradient {top_color, "
         "bottom_color} (a sky). Replaces the previous one. A new scene "
         "has a gradient sky from [1, 1, 1] at the horizon to [0.5, 0.7, "
         "1.0] above.",
     .input_schema = SCENE_SCHEMA_SET_ENVIRONMENT,
     .flags = SET,
     .handler = set_environment},
    {.name = "set_camera",
     .description =
         "Place the camera: center (the eye), look_at, up (default +Y), "
         "vertical field of view in degrees (default 45), aperture "
         "(default 0: all sharp) and focus distance (default: from center "
         "to look_at). Sets the whole camera; returns it.",
     .input_schema = SCENE_SCHEMA_SET_CAMERA,
     .flags = SET,
     .handler = set_camera},
    {.name = "get_scene_state",
     .description = "The whole scene as JSON: camera, environment, every "
                    "shape and every light with all their properties.",
     .input_schema = SCENE_SCHEMA_EMPTY,
     .flags = ATL_TOOL_READ_ONLY,
     .handler = get_scene_state},
    {.name = "describe_scene",
     .description = "The scene as compact text: every shape (type, id, "
                    "geometry, material), every light, the camera and the "
                    "environment.",
     .input_schema = SCENE_SCHEMA_EMPTY,
     .flags = LOOK,
     .handler = describe_scene},
    {.name = "export_scene",
     .description = "The whole scene as one JSON document {\"format\": "
                    "\"atelier-scene\", \"version\": 1, ...}, which "
                    "import_scene and the atelier-render tool read.",
     .input_schema = SCENE_SCHEMA_EMPTY,
     .flags = ATL_TOOL_READ_ONLY,
     .handler = export_scene},
    {.name = "import_scene",
     .description = "Replace the whole scene with one given as JSON (as "
                    "export_scene writes it). Everything is checked first; "
                    "if anything is wrong, nothing changes.",
     .input_schema = SCENE_SCHEMA_IMPORT_SCENE,
     .flags = ATL_TOOL_DESTRUCTIVE | ATL_TOOL_IDEMPOTENT,
     .handler = scene_import},
};

ATL_PLUGIN_DEFINE(.name = "scene", .version = "1.0.0",
                  .description = "The 3D scene: shapes, materials, lights, "
                                 "camera, environment.",
                  .tools = scene_tools,
                  .n_tools = sizeof(scene_tools) / sizeof(scene_tools[0]),
                  .init = init, .destroy = destroy, .describe = describe,
                  .admin_summary = admin_summary);
