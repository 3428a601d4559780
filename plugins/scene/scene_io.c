/* import_scene: a whole scene in one document, checked completely before
 * it replaces the session's scene, so that a bad file changes nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scene.h"

int scene_import(atl_call_t *call);

/* scene-llm's light types, which its scene files use, as ours. Only the
 * exact equivalents: a name that means something else is left to fail
 * with the list of our types. */
static void rename_key(json_object *o, const char *from, const char *to) {
  json_object *v;
  if (o != NULL && json_object_object_get_ex(o, from, &v) &&
      !json_object_object_get_ex(o, to, NULL)) {
    json_object_object_add(o, to, json_object_get(v));
    json_object_object_del(o, from);
  }
}

static void normalize_light(json_object *light) {
  json_object *t, *props = NULL;
  if (!json_object_is_type(light, json_type_object) ||
      !json_object_object_get_ex(light, "type", &t) ||
      !json_object_is_type(t, json_type_string))
    return;
  json_object_object_get_ex(light, "properties", &props);
  const char *type = json_object_get_string(t);
  const char *ours = NULL;
  if (strcmp(type, "area_quad_light") == 0)
    ours = "area_quad";
  else if (strcmp(type, "area_sphere_light") == 0)
    ours = "area_sphere";
  else if (strcmp(type, "point_spot_light") == 0) {
    /* Its falloff_exponent was really the width of the soft edge in
     * degrees (anchors: scene-llm §1.5). */
    ours = "spot";
    rename_key(props, "cutoff_angle", "cone_angle");
    rename_key(props, "falloff_exponent", "edge_width");
  }
  if (ours != NULL)
    json_object_object_add(light, "type", json_object_new_string(ours));
}

/* "/scene" plus the validator's pointer, whose root is "(root)". */
static void add_prefixed(json_object *out, json_object *errors) {
  size_t n = json_object_array_length(errors);
  for (size_t i = 0; i < n; i++) {
    const char *m =
        json_object_get_string(json_object_array_get_idx(errors, i));
    char *s = NULL;
    if (asprintf(&s, "/scene%s", strncmp(m, "(root)", 6) == 0 ? m + 6 : m) < 0)
      s = NULL;
    if (s != NULL) {
      json_object_array_add(out, json_object_new_string(s));
      free(s);
    }
  }
}

static void check_ids(json_object *list, const char *key, json_object *errs) {
  size_t n = list ? json_object_array_length(list) : 0;
  for (size_t i = 1; i < n; i++) {
    json_object *id;
    json_object_object_get_ex(json_object_array_get_idx(list, i), "id", &id);
    for (size_t j = 0; j < i; j++) {
      json_object *other;
      json_object_object_get_ex(json_object_array_get_idx(list, j), "id",
                                &other);
      if (strcmp(json_object_get_string(id), json_object_get_string(other)) ==
          0) {
        char msg[256];
        snprintf(msg, sizeof(msg),
                 "/scene/%s/%zu/id: '%s' is already the id of /scene/%s/%zu",
                 key, i, json_object_get_string(id), key, j);
        json_object_array_add(errs, json_object_new_string(msg));
        break;
      }
    }
  }
}

static json_object *canonical_list(json_object *list, scene_what_t w) {
  json_object *out = json_object_new_array();
  size_t n = list ? json_object_array_length(list) : 0;
  for (size_t i = 0; i < n; i++)
    json_object_array_add(
        out, scene_canonical(json_object_array_get_idx(list, i), w));
  return out;
}

int scene_import(atl_call_t *call) {
  const atl_host_t *h = call->host;
  scene_plugin_t *sp = call->plugin_state;
  json_object *given = NULL, *scene = NULL;
  json_object_object_get_ex(call->args, "scene", &given);
  if (json_object_deep_copy(given, &scene, NULL) != 0)
    return ATL_ENOMEM;
  json_object *lights;
  if (json_object_object_get_ex(scene, "lights", &lights) &&
      json_object_is_type(lights, json_type_array))
    for (size_t i = 0; i < json_object_array_length(lights); i++)
      normalize_light(json_object_array_get_idx(lights, i));

  json_object *errors = json_object_new_array(), *verrs = NULL;
  if (h->schema_validate(sp->scene_schema, scene, &verrs) > 0) {
    add_prefixed(errors, verrs);
    json_object_put(verrs);
  } else {
    h->schema_apply_defaults(sp->scene_schema, scene);
    json_object *shapes = NULL, *camera;
    json_object_object_get_ex(scene, "shapes", &shapes);
    json_object_object_get_ex(scene, "lights", &lights);
    char prefix[64];
    for (size_t i = 0; shapes && i < json_object_array_length(shapes); i++) {
      snprintf(prefix, sizeof(prefix), "/scene/shapes/%zu", i);
      scene_check_object(json_object_array_get_idx(shapes, i), SCENE_SHAPES,
                         prefix, errors);
    }
    for (size_t i = 0; lights && i < json_object_array_length(lights); i++) {
      snprintf(prefix, sizeof(prefix), "/scene/lights/%zu", i);
      scene_check_object(json_object_array_get_idx(lights, i), SCENE_LIGHTS,
                         prefix, errors);
    }
    if (json_object_object_get_ex(scene, "camera", &camera))
      scene_check_camera(camera, "/scene/camera", errors);
    check_ids(shapes, "shapes", errors);
    check_ids(lights, "lights", errors);
  }
  size_t nerr = json_object_array_length(errors);
  if (nerr > 0) {
    char *body = scene_join(errors);
    h->call_error(call,
                  "the scene was not imported (%zu problem%s); the "
                  "current scene is unchanged:\n%s",
                  nerr, nerr == 1 ? "" : "s", body ? body : "");
    free(body);
    json_object_put(errors);
    json_object_put(scene);
    return 0;
  }
  json_object_put(errors);

  /* Build the new namespace completely, then swap it in. */
  json_object *ns = json_object_new_object(), *v;
  if (json_object_object_get_ex(scene, "description", &v))
    json_object_object_add(ns, "description", json_object_get(v));
  if (json_object_object_get_ex(scene, "render", &v))
    json_object_object_add(ns, "render", json_object_get(v));
  json_object *camera = json_object_object_get_ex(scene, "camera", &v)
                            ? scene_canonical_camera(v)
                            : scene_default_camera();
  scene_camera_complete(camera);
  json_object_object_add(ns, "camera", camera);
  json_object_object_add(ns, "environment",
                         json_object_object_get_ex(scene, "environment", &v)
                             ? scene_canonical_environment(v)
                             : scene_default_environment());
  json_object *shapes = NULL;
  json_object_object_get_ex(scene, "shapes", &shapes);
  json_object_object_get_ex(scene, "lights", &lights);
  json_object_object_add(ns, "shapes", canonical_list(shapes, SCENE_SHAPES));
  json_object_object_add(ns, "lights", canonical_list(lights, SCENE_LIGHTS));
  json_object_put(scene);

  /* The event gets counts, not the scenes: both may be megabytes. */
  json_object *before = json_object_new_object(), *after;
  scene_ns_ready(call->ns);
  json_object_object_add(before, "shapes",
                         json_object_new_int((int)json_object_array_length(
                             scene_ns_list(call->ns, SCENE_SHAPES))));
  json_object_object_add(before, "lights",
                         json_object_new_int((int)json_object_array_length(
                             scene_ns_list(call->ns, SCENE_LIGHTS))));
  after = json_object_new_object();
  json_object_object_add(after, "shapes",
                         json_object_new_int((int)json_object_array_length(
                             scene_ns_list(ns, SCENE_SHAPES))));
  json_object_object_add(after, "lights",
                         json_object_new_int((int)json_object_array_length(
                             scene_ns_list(ns, SCENE_LIGHTS))));

  /* The namespace object belongs to the document: empty it and refill it
   * rather than replace it. */
  while (json_object_object_length(call->ns) > 0) {
    struct json_object_iterator it = json_object_iter_begin(call->ns);
    json_object_object_del(call->ns, json_object_iter_peek_name(&it));
  }
  json_object_object_foreach(ns, key, val)
      json_object_object_add(call->ns, key, json_object_get(val));
  json_object_put(ns);

  h->call_operation(call, "scene", before, json_object_get(after));
  json_object *r = json_object_new_object();
  json_object_object_add(r, "imported", after);
  return h->call_result(call, r);
}
