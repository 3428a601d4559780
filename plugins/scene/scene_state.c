/* The scene namespace of a session document: its members, lookups, and
 * the "not found" message that tells the model what does exist. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scene.h"

const scene_kind_t scene_shape_kinds[] = {SCENE_SHAPE_KINDS, {NULL, {NULL}}};
const scene_kind_t scene_light_kinds[] = {SCENE_LIGHT_KINDS, {NULL, {NULL}}};
const scene_kind_t scene_material_kinds[] = {SCENE_MATERIAL_KINDS,
                                             {NULL, {NULL}}};
const scene_kind_t scene_environment_kinds[] = {SCENE_ENVIRONMENT_KINDS,
                                                {NULL, {NULL}}};
const char *const scene_camera_props[] = {SCENE_CAMERA_PROPS};

const char *scene_what_name(scene_what_t w) {
  return w == SCENE_SHAPES ? "shape" : "light";
}

static json_object *vec(double x, double y, double z) {
  json_object *a = json_object_new_array_ext(3);
  json_object_array_add(a, scene_number(x));
  json_object_array_add(a, scene_number(y));
  json_object_array_add(a, scene_number(z));
  return a;
}

/* The camera scene-llm starts with, made explicit. */
json_object *scene_default_camera(void) {
  json_object *c = json_object_new_object();
  json_object_object_add(c, "center", vec(0, 0, 5));
  json_object_object_add(c, "look_at", vec(0, 0, 0));
  json_object_object_add(c, "up", vec(0, 1, 0));
  json_object_object_add(c, "vfov", json_object_new_int(45));
  json_object_object_add(c, "aperture", json_object_new_int(0));
  json_object_object_add(c, "focus_distance", json_object_new_int(5));
  return c;
}

/* scene-llm lights a scene without lights with a gradient sky that is not
 * in its state; ours is the same sky, but stored and shown, so that what
 * the model reads is what gets rendered. */
json_object *scene_default_environment(void) {
  json_object *e = json_object_new_object();
  json_object_object_add(e, "type", json_object_new_string("gradient"));
  json_object_object_add(e, "top_color", vec(0.5, 0.7, 1.0));
  json_object_object_add(e, "bottom_color", vec(1, 1, 1));
  return e;
}

json_object *scene_ns_ready(json_object *ns) {
  json_object *v;
  if (!json_object_object_get_ex(ns, "camera", &v) ||
      !json_object_is_type(v, json_type_object))
    json_object_object_add(ns, "camera", scene_default_camera());
  if (!json_object_object_get_ex(ns, "environment", &v) ||
      !json_object_is_type(v, json_type_object))
    json_object_object_add(ns, "environment", scene_default_environment());
  if (!json_object_object_get_ex(ns, "shapes", &v) ||
      !json_object_is_type(v, json_type_array))
    json_object_object_add(ns, "shapes", json_object_new_array());
  if (!json_object_object_get_ex(ns, "lights", &v) ||
      !json_object_is_type(v, json_type_array))
    json_object_object_add(ns, "lights", json_object_new_array());
  return ns;
}

json_object *scene_ns_list(json_object *ns, scene_what_t w) {
  json_object *v = NULL;
  json_object_object_get_ex(ns, w == SCENE_SHAPES ? "shapes" : "lights", &v);
  return v;
}

static const char *id_of(json_object *obj) {
  json_object *id;
  return json_object_object_get_ex(obj, "id", &id) ? json_object_get_string(id)
                                                   : "";
}

int scene_find(json_object *list, const char *id) {
  size_t n = json_object_array_length(list);
  for (size_t i = 0; i < n; i++)
    if (strcmp(id_of(json_object_array_get_idx(list, i)), id) == 0)
      return (int)i;
  return -1;
}

char *scene_not_found(json_object *list, scene_what_t w, const char *id) {
  const char *what = scene_what_name(w);
  size_t n = json_object_array_length(list);
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  if (f == NULL)
    return NULL;
  fprintf(f, "%s '%s' not found; ", what, id);
  if (n == 0) {
    fprintf(f, "the scene has no %ss", what);
  } else {
    fprintf(f, "%ss: ", what);
    size_t shown = n > 20 ? 20 : n;
    for (size_t i = 0; i < shown; i++)
      fprintf(f, "%s%s", i ? ", " : "",
              id_of(json_object_array_get_idx(list, i)));
    if (n > shown)
      fprintf(f, " and %zu more", n - shown);
  }
  fclose(f);
  return out;
}

char *scene_join(json_object *errors) {
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  if (f == NULL)
    return NULL;
  size_t n = json_object_array_length(errors);
  for (size_t i = 0; i < n; i++)
    fprintf(f, "%s%s", i ? "\n" : "",
            json_object_get_string(json_object_array_get_idx(errors, i)));
  fclose(f);
  return out;
}
