/* The scene as compact text: the plugin's section of the system prompt's
 * CURRENT SCENE, and the describe_scene tool. Unlike scene-llm's summary it
 * lists every light, the camera and the environment, and shows each
 * shape's real material instead of an unused colour. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scene.h"

/* A long scene would crowd the model's context: past this many objects of
 * a kind, the listing says how many more there are. */
#define DESCRIBE_MAX 200

static void put_value(FILE *f, json_object *v);

static void put_members(FILE *f, json_object *o, const char *skip) {
  int first = 1;
  json_object_object_foreach(o, key, val) {
    if (skip != NULL && strcmp(key, skip) == 0)
      continue;
    fprintf(f, "%s%s ", first ? "" : ", ", key);
    put_value(f, val);
    first = 0;
  }
}

static void put_value(FILE *f, json_object *v) {
  switch (json_object_get_type(v)) {
  case json_type_array: {
    size_t n = json_object_array_length(v);
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
      fputs(i ? ", " : "", f);
      put_value(f, json_object_array_get_idx(v, i));
    }
    fputc(']', f);
    break;
  }
  case json_type_object:
    fputc('{', f);
    put_members(f, v, NULL);
    fputc('}', f);
    break;
  case json_type_string:
    fputs(json_object_get_string(v), f);
    break;
  default:
    fputs(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), f);
  }
}

static void put_list(FILE *f, json_object *list, scene_what_t w) {
  size_t n = list ? json_object_array_length(list) : 0;
  const char *what = scene_what_name(w);
  if (n == 0) {
    fprintf(f, "No %ss.\n", what);
    return;
  }
  fprintf(f, "%s%ss (%zu):\n", w == SCENE_SHAPES ? "S" : "L", what + 1, n);
  for (size_t i = 0; i < n && i < DESCRIBE_MAX; i++) {
    json_object *o = json_object_array_get_idx(list, i), *id, *type, *props;
    json_object_object_get_ex(o, "id", &id);
    json_object_object_get_ex(o, "type", &type);
    fprintf(f, "- %s '%s': ", json_object_get_string(type),
            json_object_get_string(id));
    if (json_object_object_get_ex(o, "properties", &props)) {
      put_members(f, props, "material");
      json_object *m;
      if (json_object_object_get_ex(props, "material", &m)) {
        json_object *mt;
        json_object_object_get_ex(m, "type", &mt);
        fprintf(f, "; %s", json_object_get_string(mt));
        if (json_object_object_length(m) > 1)
          fputc(' ', f);
        put_members(f, m, "type");
      }
    }
    fputc('\n', f);
  }
  if (n > DESCRIBE_MAX)
    fprintf(f, "- and %zu more %ss (get_scene_state lists them all)\n",
            n - DESCRIBE_MAX, what);
}

char *scene_describe_text(json_object *ns) {
  char *out = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&out, &size);
  if (f == NULL)
    return NULL;
  json_object *v;
  if (json_object_object_get_ex(ns, "description", &v))
    fprintf(f, "Scene: %s\n", json_object_get_string(v));
  put_list(f, scene_ns_list(ns, SCENE_SHAPES), SCENE_SHAPES);
  put_list(f, scene_ns_list(ns, SCENE_LIGHTS), SCENE_LIGHTS);
  if (json_object_object_get_ex(ns, "camera", &v)) {
    fputs("Camera: ", f);
    put_members(f, v, NULL);
    fputc('\n', f);
  }
  if (json_object_object_get_ex(ns, "environment", &v)) {
    json_object *t;
    json_object_object_get_ex(v, "type", &t);
    fprintf(f, "Environment: %s", json_object_get_string(t));
    if (json_object_object_length(v) > 1)
      fputs(", ", f);
    put_members(f, v, "type");
    fputc('\n', f);
  }
  fclose(f);
  return out;
}
