/* Writing a scene back in Ray Optics Simulation's format, as the app's
 * Scene.toJSON does: version, name and module definitions first, then the
 * objects, each with its type and only the fields that differ from the
 * defaults (in the order of its class's fields, which is the app's), then
 * the scene's settings that differ from theirs. The values are the
 * document's own, so numbers keep their text and the app reads back
 * exactly what was loaded. */
#include <string.h>

#include "op.h"

/* The scene settings in the app's order, with their defaults as JSON
 * text; width and height are always written, as the app does. */
static const struct {
  const char *key, *def;
} settings[] = {
    {"importedFromBeta", "false"},
    {"mode", "\"rays\""},
    {"rayModeDensity", "0.1"},
    {"imageModeDensity", "1"},
    {"showGrid", "false"},
    {"snapToGrid", "false"},
    {"lockObjs", "false"},
    {"gridSize", "20"},
    {"observer", "null"},
    {"lengthScale", "1"},
    {"origin", "{\"x\": 0, \"y\": 0}"},
    {"scale", "1"},
    {"simulateColors", "false"},
    {"redWavelength", "620"},
    {"violetWavelength", "420"},
    {"colorMode", "\"default\""},
    {"showRayArrows", "false"},
    {"symbolicBodyMerging", "false"},
    {"numericalTolerances", NULL},
    {"maxRayDepth", NULL},
    {"randomSeed", "null"},
    {"theme", NULL},
    {"backgroundImage", NULL},
};

/* ModuleObj is expanded at load and has no class: its fields here. */
static const atl_op_field module_fields[] = {
    {"module", ATL_OP_F_JSON, "null", 0},
    {"points", ATL_OP_F_JSON, "null", 0},
    {"params", ATL_OP_F_JSON, "null", 0},
    {"notDone", ATL_OP_F_JSON, "false", 0},
    {NULL, 0, NULL, 0},
};

/* Whether v equals the default given as JSON text (NULL: never). Numbers
 * compare by value, so 1 and 1.0 are the same default. */
static int is_default(json_object *v, const char *def) {
  if (!def)
    return 0;
  json_object *d = json_tokener_parse(def);
  int eq;
  if (v && d &&
      (json_object_is_type(v, json_type_double) ||
       json_object_is_type(v, json_type_int)) &&
      (json_object_is_type(d, json_type_double) ||
       json_object_is_type(d, json_type_int)))
    eq = json_object_get_double(v) == json_object_get_double(d);
  else
    eq = json_object_equal(v, d);
  json_object_put(d);
  return eq;
}

static json_object *object_out(json_object *j) {
  json_object *t = NULL;
  json_object_object_get_ex(j, "type", &t);
  const char *type = json_object_get_string(t);
  const atl_op_field *fields = module_fields;
  if (strcmp(type, "ModuleObj") != 0) {
    const atl_op_class *c = atl__op_class_find(type);
    fields = c ? c->fields : NULL;
  }
  json_object *o = json_object_new_object();
  json_object_object_add(o, "type", json_object_get(t));
  for (const atl_op_field *f = fields; f && f->name; f++) {
    json_object *v;
    if (json_object_object_get_ex(j, f->name, &v) && !is_default(v, f->def))
      json_object_object_add(o, f->name, json_object_get(v));
  }
  return o;
}

json_object *atl__op_scene_write(const atl_op_scene *s) {
  json_object *doc = s->doc, *v;
  json_object *out = json_object_new_object();
  json_object_object_add(out, "version", json_object_new_int(5));
  if (s->name && s->name[0])
    json_object_object_add(out, "name", json_object_new_string(s->name));
  if (json_object_object_get_ex(doc, "modules", &v) && v &&
      json_object_object_length(v) > 0)
    json_object_object_add(out, "modules", json_object_get(v));
  json_object *objs = json_object_new_array();
  if (json_object_object_get_ex(doc, "objs", &v) && v) {
    size_t n = json_object_array_length(v);
    for (size_t i = 0; i < n; i++)
      json_object_array_add(objs, object_out(json_object_array_get_idx(v, i)));
  }
  json_object_object_add(out, "objs", objs);
  json_object_object_add(out, "width",
                         json_object_object_get_ex(doc, "width", &v) && v
                             ? json_object_get(v)
                             : json_object_new_int(1500));
  json_object_object_add(out, "height",
                         json_object_object_get_ex(doc, "height", &v) && v
                             ? json_object_get(v)
                             : json_object_new_int(900));
  for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++)
    if (json_object_object_get_ex(doc, settings[i].key, &v) &&
        !is_default(v, settings[i].def))
      json_object_object_add(out, settings[i].key, json_object_get(v));
  return out;
}
