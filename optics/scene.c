/* Loading a Ray Optics Simulation scene (version 5): the scene's settings
 * with upstream's defaults, and its objects through their classes' field
 * tables. Unlike upstream, which ignores an object's unknown fields, an
 * unknown field or type is an error that names the object and the field:
 * a scene written by a model should fail loudly, not half-work. */
#include "atl-build.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "custom.h"
#include "glass.h"
#include "grin.h"
#include "module.h"
#include "op.h"

extern const atl_op_class atl__op_crop_box, atl__op_drawing, atl__op_line_arrow;

/* Every class this simulator knows. The families add theirs here. */
static const atl_op_class *const classes[] = {
    &atl__op_single_ray,
    &atl__op_point_source,
    &atl__op_angle_source,
    &atl__op_beam,
    &atl__op_blocker,
    &atl__op_mirror,
    &atl__op_detector,
    &atl__op_crop_box,
    &atl__op_drawing,
    &atl__op_line_arrow,
    /* Mirrors, blockers and gratings (objs_mirror.c, objs_blocker.c,
     * objs_grating.c). */
    &atl__op_arc_mirror,
    &atl__op_parabolic_mirror,
    &atl__op_ideal_mirror,
    &atl__op_beam_splitter,
    &atl__op_circle_blocker,
    &atl__op_aperture,
    &atl__op_diffraction_grating,
    &atl__op_concave_grating,
    /* The glass family (glass.h). */
    &atl__op_glass_poly,
    &atl__op_circle_glass,
    &atl__op_plane_glass,
    &atl__op_spherical_lens,
    &atl__op_curve_glass,
    &atl__op_ideal_lens,
    /* The gradient-index glasses (grin.h). */
    &atl__op_grin_glass,
    &atl__op_circle_grin_glass,
    &atl__op_curve_grin_glass,
    &atl__op_param_grin_glass,
    /* The equation-driven objects (custom.h). */
    &atl__op_custom_surface,
    &atl__op_custom_arc_surface,
    &atl__op_custom_param_surface,
    &atl__op_custom_mirror,
    &atl__op_param_mirror,
    &atl__op_custom_glass,
    &atl__op_param_glass,
};

const atl_op_class *atl__op_class_find(const char *type) {
  for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
    if (strcmp(classes[i]->type, type) == 0)
      return classes[i];
  return NULL;
}

/* The scene's own keys: upstream's Scene.serializableDefaults plus
 * version, modules, objs and backgroundImage. */
static const char *const scene_keys[] = {
    "version",
    "name",
    "modules",
    "objs",
    "backgroundImage",
    "importedFromBeta",
    "mode",
    "rayModeDensity",
    "imageModeDensity",
    "showGrid",
    "snapToGrid",
    "lockObjs",
    "gridSize",
    "observer",
    "lengthScale",
    "origin",
    "scale",
    "width",
    "height",
    "simulateColors",
    "redWavelength",
    "violetWavelength",
    "colorMode",
    "showRayArrows",
    "symbolicBodyMerging",
    "numericalTolerances",
    "maxRayDepth",
    "randomSeed",
    "theme",
};

double atl__op_ray_density(const atl_op_scene *s) {
  return strcmp(s->mode, "rays") == 0 || strcmp(s->mode, "extended") == 0
             ? s->ray_mode_density
             : s->image_mode_density;
}

static int num_of(json_object *v, double *out) {
  if (!v || (!json_object_is_type(v, json_type_double) &&
             !json_object_is_type(v, json_type_int)))
    return 0;
  *out = json_object_get_double(v);
  return 1;
}

/* Reads one field of object o (its JSON form j) into the struct. */
static int read_field(atl_op_obj *o, json_object *j, const atl_op_field *f,
                      const char *where, char **err) {
  json_object *v = NULL, *def = NULL;
  int have = json_object_object_get_ex(j, f->name, &v);
  if (!have) {
    def = json_tokener_parse(f->def);
    v = def;
  }
  char *p = (char *)o + f->offset;
  int rc = 0;
  switch (f->type) {
  case ATL_OP_F_NUM:
    if (!num_of(v, (double *)p))
      rc = atl__op_fail(err, -EINVAL, "%s: \"%s\" must be a number", where,
                        f->name);
    break;
  case ATL_OP_F_BOOL:
    if (!v || !json_object_is_type(v, json_type_boolean))
      rc = atl__op_fail(err, -EINVAL, "%s: \"%s\" must be true or false", where,
                        f->name);
    else
      *(int *)p = json_object_get_boolean(v);
    break;
  case ATL_OP_F_POINT: {
    atl_op_pt *pt = (atl_op_pt *)p;
    json_object *x, *y;
    if (!v || !json_object_is_type(v, json_type_object) ||
        !json_object_object_get_ex(v, "x", &x) ||
        !json_object_object_get_ex(v, "y", &y) || !num_of(x, &pt->x) ||
        !num_of(y, &pt->y))
      rc = atl__op_fail(
          err, -EINVAL,
          "%s: \"%s\" must be a point {\"x\": number, \"y\": number}%s", where,
          f->name, have ? "" : " (it has no default)");
    else if (!isfinite(pt->x) || !isfinite(pt->y))
      rc = atl__op_fail(err, -EINVAL, "%s: \"%s\" must have finite coordinates",
                        where, f->name);
    break;
  }
  case ATL_OP_F_STR:
    if (v && !json_object_is_type(v, json_type_string))
      rc = atl__op_fail(err, -EINVAL, "%s: \"%s\" must be a string", where,
                        f->name);
    else if (v && !(*(char **)p = strdup(json_object_get_string(v))))
      rc = -ENOMEM;
    break;
  case ATL_OP_F_JSON:
    *(json_object **)p = json_object_get(v);
    break;
  }
  json_object_put(def);
  return rc;
}

static int field_known(const atl_op_class *c, const char *key) {
  if (strcmp(key, "type") == 0)
    return 1;
  for (const atl_op_field *f = c->fields; f && f->name; f++)
    if (strcmp(f->name, key) == 0)
      return 1;
  return 0;
}

/* Frees an object, loaded or half-loaded (its fields zeroed until read). */
static void obj_free(atl_op_obj *o) {
  if (o->cls->destroy)
    o->cls->destroy(o);
  for (const atl_op_field *f = o->cls->fields; f && f->name; f++) {
    char *p = (char *)o + f->offset;
    if (f->type == ATL_OP_F_STR)
      free(*(char **)p);
    else if (f->type == ATL_OP_F_JSON)
      json_object_put(*(json_object **)p);
  }
  free(o->error);
  free(o->warning);
  free(o);
}

/* Appends o to the scene's lists; both grow before either takes it, so a
 * failure leaves o owned by the caller alone. */
static int push_obj(atl_op_scene *s, atl_op_obj *o) {
  atl_op_obj **n = realloc(s->objs, sizeof(*n) * (size_t)(s->nobjs + 1));
  if (!n)
    return -ENOMEM;
  s->objs = n;
  n = realloc(s->optical, sizeof(*n) * (size_t)(s->noptical + 1));
  if (!n)
    return -ENOMEM;
  s->optical = n;
  s->objs[s->nobjs++] = o;
  if (o->cls->flags & ATL_OP_OPTICAL) {
    o->index = s->noptical;
    s->optical[s->noptical++] = o;
  }
  return 0;
}

static double module_random(void *user) {
  return atl__op_arc4_next(&((atl_op_scene *)user)->rng);
}

/* A class's init names only its type ("Glass: ..."); the message gets
 * the object's place in the document instead, as the loader's own. */
static void name_object(char **err, const char *where, const char *type) {
  size_t n = strlen(type);
  const char *rest = *err;
  if (strncmp(rest, type, n) == 0 && rest[n] == ':')
    rest += n + 1;
  else
    rest = NULL;
  char *named = NULL;
  if (asprintf(&named, "%s:%s%s", where, rest ? "" : " ", rest ? rest : *err) <
      0)
    return; /* keep the message without the place */
  free(*err);
  *err = named;
}

/* Loads one object (where names it for messages); module objects are
 * expanded in place, so the optical order is upstream's. */
static int load_obj(atl_op_scene *s, json_object *j, int doc_index,
                    const char *where, int depth, char **err) {
  json_object *t;
  if (!json_object_is_type(j, json_type_object))
    return atl__op_fail(err, -EINVAL, "%s: must be an object", where);
  if (!json_object_object_get_ex(j, "type", &t) ||
      !json_object_is_type(t, json_type_string))
    return atl__op_fail(err, -EINVAL,
                        "%s: needs a \"type\" (a string such as \"Mirror\")",
                        where);
  const char *type = json_object_get_string(t);
  if (strcmp(type, "ModuleObj") == 0) {
    if (depth > 8)
      return atl__op_fail(err, -EINVAL, "%s: modules nested deeper than 8",
                          where);
    json_object *objs = NULL;
    int rc = atl__op_module_expand(s->doc, j, module_random, s, &objs, err);
    if (rc < 0)
      return rc;
    size_t n = json_object_array_length(objs);
    for (size_t i = 0; i < n && rc == 0; i++) {
      char sub[256];
      snprintf(sub, sizeof(sub), "%s (module object %zu)", where, i);
      rc = load_obj(s, json_object_array_get_idx(objs, i), doc_index, sub,
                    depth + 1, err);
    }
    json_object_put(objs);
    return rc;
  }
  const atl_op_class *c = atl__op_class_find(type);
  if (!c)
    return atl__op_fail(err, -EINVAL, "%s: unknown object type \"%s\"", where,
                        type);
  json_object_object_foreach(j, key, val) {
    (void)val;
    if (!field_known(c, key)) {
      char known[1024] = "";
      for (const atl_op_field *f = c->fields; f && f->name; f++) {
        if (strlen(known) + strlen(f->name) + 4 >= sizeof(known))
          break;
        strcat(known, known[0] ? ", " : "");
        strcat(known, f->name);
      }
      return atl__op_fail(err, -EINVAL,
                          "%s (%s): unknown field \"%s\"; %s has %s", where,
                          type, key, type, known[0] ? known : "no fields");
    }
  }
  atl_op_obj *o = calloc(1, c->size);
  if (!o)
    return -ENOMEM;
  o->cls = c;
  o->index = -1;
  o->doc_index = doc_index;
  char w[300];
  snprintf(w, sizeof(w), "%s (%s)", where, type);
  int rc = 0;
  for (const atl_op_field *f = c->fields; rc == 0 && f && f->name; f++)
    rc = read_field(o, j, f, w, err);
  if (rc == 0 && c->init) {
    rc = c->init(o, s, err);
    if (rc == -EINVAL && err && *err)
      name_object(err, w, type);
  }
  if (rc == 0)
    rc = push_obj(s, o);
  if (rc != 0)
    obj_free(o);
  return rc;
}

/* A scene setting: the document's value, or the default when absent. */
static int setting_num(json_object *doc, const char *key, double def,
                       double *out, char **err) {
  json_object *v;
  *out = def;
  if (!json_object_object_get_ex(doc, key, &v) || v == NULL)
    return 0;
  if (!num_of(v, out))
    return atl__op_fail(err, -EINVAL, "scene: \"%s\" must be a number", key);
  return 0;
}

static int setting_str(json_object *doc, const char *key, const char *def,
                       const char *const *allowed, char **out, char **err) {
  json_object *v;
  const char *val = def;
  if (json_object_object_get_ex(doc, key, &v) && v != NULL) {
    if (!json_object_is_type(v, json_type_string))
      return atl__op_fail(err, -EINVAL, "scene: \"%s\" must be a string", key);
    val = json_object_get_string(v);
  }
  if (allowed) {
    int ok = 0;
    for (const char *const *a = allowed; *a; a++)
      ok |= strcmp(*a, val) == 0;
    if (!ok) {
      char list[256] = "";
      for (const char *const *a = allowed; *a; a++) {
        strcat(list, list[0] ? ", " : "");
        strcat(list, *a);
      }
      return atl__op_fail(err, -EINVAL,
                          "scene: \"%s\" is \"%s\"; it must be one of %s", key,
                          val, list);
    }
  }
  *out = strdup(val);
  return *out ? 0 : -ENOMEM;
}

static int load_settings(atl_op_scene *s, json_object *doc, char **err) {
  json_object *v;
  if (!json_object_object_get_ex(doc, "version", &v) ||
      !json_object_is_type(v, json_type_int) || json_object_get_int(v) != 5)
    return atl__op_fail(err, -EINVAL,
                        "scene: \"version\" must be 5 (Ray Optics Simulation's "
                        "current format); older versions are not converted");
  json_object_object_foreach(doc, key, val) {
    (void)val;
    int ok = 0;
    for (size_t i = 0; i < sizeof(scene_keys) / sizeof(scene_keys[0]); i++)
      ok |= strcmp(scene_keys[i], key) == 0;
    if (!ok)
      return atl__op_fail(err, -EINVAL, "scene: unknown key \"%s\"", key);
  }
  static const char *const modes[] = {"rays", "extended", "images", "observer",
                                      NULL};
  static const char *const color_modes[] = {
      "default", "linear", "linearRGB", "reinhard", "colorizedIntensity", NULL};
  int rc = setting_str(doc, "name", "", NULL, &s->name, err);
  if (rc == 0)
    rc = setting_str(doc, "mode", "rays", modes, &s->mode, err);
  if (rc == 0)
    rc = setting_str(doc, "colorMode", "default", color_modes, &s->color_mode,
                     err);
  if (rc == 0)
    rc = setting_num(doc, "rayModeDensity", 0.1, &s->ray_mode_density, err);
  if (rc == 0)
    rc = setting_num(doc, "imageModeDensity", 1, &s->image_mode_density, err);
  if (rc == 0)
    rc = setting_num(doc, "lengthScale", 1, &s->length_scale, err);
  if (rc == 0)
    rc = setting_num(doc, "maxRayDepth", INFINITY, &s->max_ray_depth, err);
  if (rc != 0)
    return rc;
  /* The app would loop for ever on a density of zero or below (its
   * sources step their angles backwards) and divide by a zero length
   * scale: refuse them here. */
  const struct {
    const char *key;
    double v;
  } positive[] = {{"rayModeDensity", s->ray_mode_density},
                  {"imageModeDensity", s->image_mode_density},
                  {"lengthScale", s->length_scale}};
  for (size_t i = 0; i < sizeof(positive) / sizeof(positive[0]); i++)
    if (!(positive[i].v > 0) || !isfinite(positive[i].v))
      return atl__op_fail(err, -EINVAL,
                          "scene: \"%s\" must be a positive number, not %g",
                          positive[i].key, positive[i].v);
  if (json_object_object_get_ex(doc, "simulateColors", &v) && v) {
    if (!json_object_is_type(v, json_type_boolean))
      return atl__op_fail(err, -EINVAL,
                          "scene: \"simulateColors\" must be true or false");
    s->simulate_colors = json_object_get_boolean(v);
  }
  /* How overlapping gradient-index glasses combine their equations
   * (grin.c says why the results do not depend on it here). */
  if (json_object_object_get_ex(doc, "symbolicBodyMerging", &v) && v) {
    if (!json_object_is_type(v, json_type_boolean))
      return atl__op_fail(
          err, -EINVAL, "scene: \"symbolicBodyMerging\" must be true or false");
    s->symbolic_body_merging = json_object_get_boolean(v);
  }
  if (json_object_object_get_ex(doc, "randomSeed", &v) && v) {
    if (!json_object_is_type(v, json_type_string))
      return atl__op_fail(err, -EINVAL,
                          "scene: \"randomSeed\" must be a string or null");
    s->random_seed = strdup(json_object_get_string(v));
    if (!s->random_seed)
      return -ENOMEM;
  }
  if (s->random_seed && s->random_seed[0]) {
    atl__op_arc4_seed(&s->rng, s->random_seed);
  } else {
    /* Upstream seeds from the time in milliseconds, as a string. */
    char seed[32];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(seed, sizeof(seed), "%lld",
             (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    atl__op_arc4_seed(&s->rng, seed);
  }
  return 0;
}

int atl__op_scene_load(json_object *doc, atl_op_scene **out, char **err) {
  *out = NULL;
  if (err)
    *err = NULL;
  if (!json_object_is_type(doc, json_type_object))
    return atl__op_fail(err, -EINVAL,
                        "scene: the document must be a JSON object");
  atl_op_scene *s = calloc(1, sizeof(*s));
  if (!s)
    return -ENOMEM;
  s->doc = json_object_get(doc);
  int rc = load_settings(s, doc, err);
  json_object *objs = NULL;
  if (rc == 0 && json_object_object_get_ex(doc, "objs", &objs) && objs &&
      !json_object_is_type(objs, json_type_array))
    rc = atl__op_fail(err, -EINVAL,
                      "scene: \"objs\" must be an array of objects");
  size_t n = rc == 0 && objs ? json_object_array_length(objs) : 0;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    char where[32];
    snprintf(where, sizeof(where), "objs[%zu]", i);
    rc = load_obj(s, json_object_array_get_idx(objs, i), (int)i, where, 0, err);
  }
  if (rc != 0) {
    atl__op_scene_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

void atl__op_scene_free(atl_op_scene *s) {
  if (!s)
    return;
  for (int i = 0; i < s->nobjs; i++)
    obj_free(s->objs[i]);
  free(s->objs);
  free(s->optical);
  free(s->name);
  free(s->mode);
  free(s->color_mode);
  free(s->random_seed);
  json_object_put(s->doc);
  free(s);
}
