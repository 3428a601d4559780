/* Shapes, lights, the camera and the environment as objects: canonical
 * order, deep merge, and the geometric checks a JSON Schema cannot make. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scene.h"

json_object *scene_number(double v) {
  char buf[32];
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, sizeof(buf), "%.*g", prec, v);
    if (strtod(buf, NULL) == v)
      break;
  }
  return json_object_new_double_s(v, buf);
}

/* ---- canonical order ---- */

static const scene_kind_t *kind_named(const scene_kind_t *kinds,
                                      const char *type) {
  for (; kinds->type != NULL; kinds++)
    if (strcmp(kinds->type, type) == 0)
      return kinds;
  return NULL;
}

static const char *type_of(json_object *obj) {
  json_object *t;
  return json_object_object_get_ex(obj, "type", &t) ? json_object_get_string(t)
                                                    : "";
}

/* Copies from src, in the order of names, every member present. */
static void copy_ordered(json_object *dst, json_object *src,
                         const char *const *names) {
  for (; *names != NULL; names++) {
    json_object *v;
    if (json_object_object_get_ex(src, *names, &v))
      json_object_object_add(dst, *names, json_object_get(v));
  }
}

/* {"type", then the kind's members in order}; objects whose type is not
 * in kinds come back as they are. */
static json_object *typed_canonical(json_object *src,
                                    const scene_kind_t *kinds) {
  const scene_kind_t *k = kind_named(kinds, type_of(src));
  if (k == NULL)
    return json_object_get(src);
  json_object *out = json_object_new_object();
  json_object_object_add(out, "type", json_object_new_string(k->type));
  copy_ordered(out, src, k->props);
  return out;
}

static json_object *canonical_material(json_object *m) {
  json_object *out = typed_canonical(m, scene_material_kinds);
  json_object *checker;
  if (json_object_object_get_ex(out, "checker", &checker)) {
    static const char *const order[] = {"color_a", "color_b", "scale", NULL};
    json_object *c = json_object_new_object();
    copy_ordered(c, checker, order);
    json_object_object_add(out, "checker", c);
  }
  return out;
}

json_object *scene_canonical(json_object *obj, scene_what_t w) {
  const scene_kind_t *kinds =
      w == SCENE_SHAPES ? scene_shape_kinds : scene_light_kinds;
  json_object *id = NULL, *props = NULL;
  json_object_object_get_ex(obj, "id", &id);
  json_object_object_get_ex(obj, "properties", &props);
  json_object *out = json_object_new_object();
  json_object_object_add(out, "id", json_object_get(id));
  json_object_object_add(out, "type", json_object_new_string(type_of(obj)));
  const scene_kind_t *k = kind_named(kinds, type_of(obj));
  json_object *p = json_object_new_object();
  if (k != NULL && props != NULL) {
    copy_ordered(p, props, k->props);
    json_object *m;
    if (json_object_object_get_ex(p, "material", &m))
      json_object_object_add(p, "material", canonical_material(m));
  }
  json_object_object_add(out, "properties", p);
  return out;
}

json_object *scene_canonical_camera(json_object *camera) {
  json_object *out = json_object_new_object();
  copy_ordered(out, camera, scene_camera_props);
  return out;
}

json_object *scene_canonical_environment(json_object *env) {
  return typed_canonical(env, scene_environment_kinds);
}

/* ---- merge ---- */

void scene_merge(json_object *target, json_object *patch) {
  json_object_object_foreach(patch, key, val) {
    json_object *cur;
    if (json_object_is_type(val, json_type_object) &&
        json_object_object_get_ex(target, key, &cur) &&
        json_object_is_type(cur, json_type_object)) {
      scene_merge(cur, val);
    } else {
      json_object *copy = NULL;
      if (json_object_deep_copy(val, &copy, NULL) == 0)
        json_object_object_add(target, key, copy);
    }
  }
}

/* ---- vectors ---- */

typedef struct {
  double x, y, z;
} v3_t;

/* The vector at props[name]; valid objects have one wherever it is read. */
static v3_t get3(json_object *props, const char *name) {
  v3_t v = {0, 0, 0};
  json_object *a;
  if (json_object_object_get_ex(props, name, &a) &&
      json_object_is_type(a, json_type_array) &&
      json_object_array_length(a) == 3) {
    v.x = json_object_get_double(json_object_array_get_idx(a, 0));
    v.y = json_object_get_double(json_object_array_get_idx(a, 1));
    v.z = json_object_get_double(json_object_array_get_idx(a, 2));
  }
  return v;
}

static double getd(json_object *props, const char *name, double dflt) {
  json_object *v;
  return json_object_object_get_ex(props, name, &v) ? json_object_get_double(v)
                                                    : dflt;
}

static v3_t sub(v3_t a, v3_t b) {
  return (v3_t){a.x - b.x, a.y - b.y, a.z - b.z};
}

static v3_t cross(v3_t a, v3_t b) {
  return (v3_t){a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z,
                a.x * b.y - a.y * b.x};
}

static double len(v3_t a) {
  return sqrt(a.x * a.x + a.y * a.y + a.z * a.z);
}

/* Two vectors are parallel when the sine of their angle is below this:
 * about 0.00006 degrees, far below anything meant. */
#define PARALLEL_SIN 1e-6

static bool parallel(v3_t a, v3_t b) {
  return len(cross(a, b)) <= PARALLEL_SIN * len(a) * len(b);
}

/* ---- checks ---- */

typedef struct {
  const char *prefix;
  json_object *errors;
  int n;
} checker_t;

static void problem(checker_t *c, const char *fmt, ...) ATL_PRINTF(2, 3);
static void problem(checker_t *c, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  char full[640];
  snprintf(full, sizeof(full), "%s%s", c->prefix, msg);
  json_object_array_add(c->errors, json_object_new_string(full));
  c->n++;
}

static bool nonzero(checker_t *c, json_object *props, const char *name,
                    const char *example) {
  if (len(get3(props, name)) > 0)
    return true;
  problem(c,
          "/properties/%s: must not be [0, 0, 0]: it is a direction; give "
          "one such as %s",
          name, example);
  return false;
}

static void edges(checker_t *c, json_object *props) {
  bool u = nonzero(c, props, "u", "[1, 0, 0]");
  bool v = nonzero(c, props, "v", "[0, 0, 1]");
  if (u && v && parallel(get3(props, "u"), get3(props, "v")))
    problem(c, "/properties/v: must not be parallel to u (the quad would be "
               "flat as a line); give two edges at an angle, such as u = "
               "[1, 0, 0] and v = [0, 0, 1]");
}

static void ends(checker_t *c, json_object *props, const char *what) {
  if (len(sub(get3(props, "top_center"), get3(props, "base_center"))) == 0)
    problem(c,
            "/properties/top_center: must differ from base_center (the %s "
            "would have no height)",
            what);
}

static void check_shape(checker_t *c, const char *type, json_object *p) {
  if (strcmp(type, "quad") == 0) {
    edges(c, p);
  } else if (strcmp(type, "disc") == 0) {
    nonzero(c, p, "normal", "[0, 1, 0]");
  } else if (strcmp(type, "cylinder") == 0) {
    ends(c, p, "cylinder");
  } else if (strcmp(type, "cone") == 0) {
    ends(c, p, "cone");
    double base = getd(p, "base_radius", 0), top = getd(p, "top_radius", 0);
    if (top >= base)
      problem(c,
              "/properties/top_radius: must be smaller than base_radius "
              "(%g >= %g); for equal radii use a cylinder",
              top, base);
  } else if (strcmp(type, "plane") == 0) {
    nonzero(c, p, "normal", "[0, 1, 0]");
  } else if (strcmp(type, "triangle") == 0) {
    v3_t v0 = get3(p, "v0");
    v3_t a = sub(get3(p, "v1"), v0), b = sub(get3(p, "v2"), v0);
    if (len(a) == 0 || len(b) == 0 || parallel(a, b))
      problem(c, "/properties/v2: the three vertices lie on one line (the "
                 "triangle has no area); move one off it");
  } else if (strcmp(type, "torus") == 0) {
    nonzero(c, p, "axis", "[0, 1, 0]");
    double major = getd(p, "major_radius", 0);
    double minor = getd(p, "minor_radius", 0);
    if (minor >= major)
      problem(c,
              "/properties/minor_radius: must be smaller than major_radius "
              "(%g >= %g): the tube would fill the hole",
              minor, major);
  }
}

static void check_light(checker_t *c, const char *type, json_object *p) {
  if (strcmp(type, "spot") == 0) {
    nonzero(c, p, "direction", "[0, -1, 0]");
    double cone = getd(p, "cone_angle", 0), edge = getd(p, "edge_width", 0);
    if (edge > cone)
      problem(c, "/properties/edge_width: must be at most cone_angle (%g > %g)",
              edge, cone);
  } else if (strcmp(type, "area_quad") == 0) {
    edges(c, p);
  } else if (strcmp(type, "area_disc") == 0) {
    nonzero(c, p, "normal", "[0, -1, 0]");
  } else if (strcmp(type, "directional") == 0) {
    nonzero(c, p, "direction", "[0, -1, 0]");
  }
}

int scene_check_object(json_object *obj, scene_what_t w, const char *prefix,
                       json_object *errors) {
  checker_t c = {prefix ? prefix : "", errors, 0};
  json_object *props;
  if (!json_object_object_get_ex(obj, "properties", &props))
    return 0;
  if (w == SCENE_SHAPES)
    check_shape(&c, type_of(obj), props);
  else
    check_light(&c, type_of(obj), props);
  return c.n;
}

int scene_check_camera(json_object *camera, const char *prefix,
                       json_object *errors) {
  checker_t c = {prefix ? prefix : "", errors, 0};
  v3_t view = sub(get3(camera, "look_at"), get3(camera, "center"));
  if (len(view) == 0) {
    problem(&c, "/look_at: must differ from center (the camera would not "
                "know where to look)");
    return c.n;
  }
  v3_t up = get3(camera, "up");
  if (len(up) == 0)
    problem(&c, "/up: must not be [0, 0, 0]; give the picture's up "
                "direction, such as [0, 1, 0]");
  else if (parallel(up, view))
    problem(&c, "/up: must not be parallel to the view direction (look_at - "
                "center): the picture's up would be undefined; looking "
                "straight down, use up = [0, 0, -1]");
  return c.n;
}

void scene_camera_complete(json_object *camera) {
  json_object *v;
  if (json_object_object_get_ex(camera, "focus_distance", &v))
    return;
  double d = len(sub(get3(camera, "look_at"), get3(camera, "center")));
  json_object_object_add(camera, "focus_distance", scene_number(d));
}
