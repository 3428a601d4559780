/* Reads the scene plugin's document (doc/scene.md) into the flattened,
 * render-ready scene: one primitive per surface, materials by index,
 * lights with their primitives, the camera's basis, and the BVH. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "rt.h"

typedef struct {
  atl_render_scene_t *s;
  int cap_prims, cap_mats, cap_lights;
  char ctx[160]; /* the object being read, for messages */
  char *err;
  int nomem;
} loader;

static int fail(loader *L, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(loader *L, const char *field, const char *fmt, ...) {
  if (L->err)
    return -1;
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (asprintf(&L->err, "%s%s%s: %s", L->ctx, *L->ctx && field ? ": " : "",
               field ? field : "", msg) < 0)
    L->err = NULL;
  return -1;
}

static int get_num(loader *L, json_object *o, const char *key, int required,
                   double def, double *out) {
  json_object *v;
  if (!o || !json_object_object_get_ex(o, key, &v) || !v) {
    if (required)
      return fail(L, key, "missing (a number is required)");
    *out = def;
    return 0;
  }
  if (!json_object_is_type(v, json_type_double) &&
      !json_object_is_type(v, json_type_int))
    return fail(L, key, "must be a number");
  *out = json_object_get_double(v);
  if (!isfinite(*out))
    return fail(L, key, "must be finite");
  return 0;
}

static int get_vec(loader *L, json_object *o, const char *key, int required,
                   v3 def, v3 *out) {
  json_object *v;
  if (!o || !json_object_object_get_ex(o, key, &v) || !v) {
    if (required)
      return fail(L, key, "missing (an array of 3 numbers is required)");
    *out = def;
    return 0;
  }
  if (!json_object_is_type(v, json_type_array) ||
      json_object_array_length(v) != 3)
    return fail(L, key, "must be an array of 3 numbers");
  double c[3];
  for (int i = 0; i < 3; i++) {
    json_object *e = json_object_array_get_idx(v, (size_t)i);
    if (!json_object_is_type(e, json_type_double) &&
        !json_object_is_type(e, json_type_int))
      return fail(L, key, "item %d must be a number", i);
    c[i] = json_object_get_double(e);
    if (!isfinite(c[i]))
      return fail(L, key, "item %d must be finite", i);
  }
  *out = v3_make(c[0], c[1], c[2]);
  return 0;
}

static int get_color(loader *L, json_object *o, const char *key, int required,
                     v3 def, v3 *out) {
  if (get_vec(L, o, key, required, def, out) < 0)
    return -1;
  if (out->x < 0 || out->y < 0 || out->z < 0)
    return fail(L, key, "must not be negative");
  /* Brighter than this, samples overflow the image's 32-bit floats. */
  if (out->x > 1e9 || out->y > 1e9 || out->z > 1e9)
    return fail(L, key, "must be at most 1e9 in each channel");
  return 0;
}

static int get_bool(loader *L, json_object *o, const char *key, int def,
                    int *out) {
  json_object *v;
  if (!o || !json_object_object_get_ex(o, key, &v) || !v) {
    *out = def;
    return 0;
  }
  if (!json_object_is_type(v, json_type_boolean))
    return fail(L, key, "must be true or false");
  *out = json_object_get_boolean(v);
  return 0;
}

static int get_positive(loader *L, json_object *o, const char *key,
                        int required, double def, double *out) {
  if (get_num(L, o, key, required, def, out) < 0)
    return -1;
  if (!(*out > 0))
    return fail(L, key, "must be > 0");
  return 0;
}

static int get_dir(loader *L, json_object *o, const char *key, int required,
                   v3 def, v3 *out) {
  if (get_vec(L, o, key, required, def, out) < 0)
    return -1;
  if (v3_is_zero(*out))
    return fail(L, key, "must not be the zero vector");
  *out = v3_norm(*out);
  return 0;
}

static rt_prim *add_prim(loader *L, int kind, int material, int light) {
  atl_render_scene_t *s = L->s;
  if (s->nprims == L->cap_prims) {
    int cap = L->cap_prims ? L->cap_prims * 2 : 64;
    rt_prim *p = realloc(s->prims, (size_t)cap * sizeof(*p));
    if (!p) {
      L->nomem = 1;
      fail(L, NULL, "out of memory");
      return NULL;
    }
    s->prims = p;
    L->cap_prims = cap;
  }
  rt_prim *p = &s->prims[s->nprims++];
  memset(p, 0, sizeof(*p));
  p->kind = kind;
  p->material = material;
  p->light = light;
  p->shape = s->info.shape_count;
  return p;
}

static int add_material(loader *L, const rt_material *m) {
  atl_render_scene_t *s = L->s;
  if (s->nmaterials == L->cap_mats) {
    int cap = L->cap_mats ? L->cap_mats * 2 : 32;
    rt_material *p = realloc(s->materials, (size_t)cap * sizeof(*p));
    if (!p) {
      L->nomem = 1;
      return fail(L, NULL, "out of memory");
    }
    s->materials = p;
    L->cap_mats = cap;
  }
  s->materials[s->nmaterials] = *m;
  return s->nmaterials++;
}

static int read_material(loader *L, json_object *props) {
  json_object *mo = NULL, *t;
  rt_material m;
  memset(&m, 0, sizeof(m));
  m.kind = RT_LAMBERTIAN;
  m.albedo = v3_make(0.5, 0.5, 0.5);
  if (!props || !json_object_object_get_ex(props, "material", &mo) || !mo)
    return add_material(L, &m);
  if (!json_object_is_type(mo, json_type_object))
    return fail(L, "material", "must be an object");
  const char *type = "lambertian";
  if (json_object_object_get_ex(mo, "type", &t)) {
    if (!json_object_is_type(t, json_type_string))
      return fail(L, "material.type", "must be a string");
    type = json_object_get_string(t);
  }
  size_t n = strlen(L->ctx);
  snprintf(L->ctx + n, sizeof(L->ctx) - n, ": material");
  int rc = 0;
  if (strcmp(type, "lambertian") == 0) {
    json_object *ch;
    rc = get_color(L, mo, "albedo", 0, m.albedo, &m.albedo);
    if (rc == 0 && json_object_object_get_ex(mo, "checker", &ch) && ch) {
      snprintf(L->ctx + n, sizeof(L->ctx) - n, ": material.checker");
      m.checker = 1;
      if (get_color(L, ch, "color_a", 1, m.albedo, &m.albedo) < 0 ||
          get_color(L, ch, "color_b", 1, m.albedo, &m.albedo2) < 0 ||
          get_positive(L, ch, "scale", 0, 1, &m.scale) < 0)
        rc = -1;
    }
  } else if (strcmp(type, "metal") == 0) {
    m.kind = RT_METAL;
    if (get_color(L, mo, "albedo", 0, v3_make(0.8, 0.8, 0.8), &m.albedo) < 0 ||
        get_num(L, mo, "fuzz", 0, 0, &m.fuzz) < 0)
      rc = -1;
    else if (m.fuzz < 0 || m.fuzz > 1)
      rc = fail(L, "fuzz", "must be between 0 and 1");
  } else if (strcmp(type, "dielectric") == 0) {
    m.kind = RT_DIELECTRIC;
    if (get_num(L, mo, "refractive_index", 0, 1.5, &m.ior) < 0 ||
        get_color(L, mo, "tint", 0, v3_make(1, 1, 1), &m.tint) < 0)
      rc = -1;
    else if (m.ior < 1)
      rc = fail(L, "refractive_index", "must be >= 1");
  } else if (strcmp(type, "emissive") == 0) {
    m.kind = RT_EMISSIVE;
    rc = get_color(L, mo, "emission", 1, m.emission, &m.emission);
  } else if (strcmp(type, "plastic") == 0) {
    m.kind = RT_PLASTIC;
    m.ior = 1.5;
    if (get_color(L, mo, "albedo", 0, m.albedo, &m.albedo) < 0 ||
        get_num(L, mo, "roughness", 0, 0.1, &m.fuzz) < 0)
      rc = -1;
    else if (m.fuzz < 0 || m.fuzz > 1)
      rc = fail(L, "roughness", "must be between 0 and 1");
  } else {
    rc = fail(L, "type",
              "unknown material '%s' (lambertian, metal, dielectric, "
              "emissive, plastic)",
              type);
  }
  L->ctx[n] = 0;
  return rc < 0 ? -1 : add_material(L, &m);
}

static int add_quad(loader *L, v3 corner, v3 u, v3 v, int mat, int light) {
  v3 nn = v3_cross(u, v);
  double l2 = v3_len2(nn);
  if (!(l2 > 0))
    return fail(L, "v", "must not be parallel to u");
  rt_prim *p = add_prim(L, RT_QUAD, mat, light);
  if (!p)
    return -1;
  p->a = corner;
  p->b = u;
  p->c = v;
  p->n = v3_norm(nn);
  p->w = v3_scale(nn, 1 / l2);
  return 0;
}

static int add_disc(loader *L, v3 c, v3 n, double r, int mat, int light) {
  rt_prim *p = add_prim(L, RT_DISC, mat, light);
  if (!p)
    return -1;
  p->a = c;
  p->n = n;
  p->r0 = r;
  return 0;
}

/* Rotation by degrees about X, then Y, then Z. */
static v3 rotate(v3 a, v3 deg) {
  double k = RT_PI / 180, c, s, y, z, x;
  c = cos(deg.x * k), s = sin(deg.x * k);
  y = a.y * c - a.z * s, z = a.y * s + a.z * c;
  a.y = y, a.z = z;
  c = cos(deg.y * k), s = sin(deg.y * k);
  x = a.x * c + a.z * s, z = -a.x * s + a.z * c;
  a.x = x, a.z = z;
  c = cos(deg.z * k), s = sin(deg.z * k);
  x = a.x * c - a.y * s, y = a.x * s + a.y * c;
  a.x = x, a.y = y;
  return a;
}

static int read_box(loader *L, json_object *pr, int mat) {
  v3 c = {0, 0, 0}, size = c, rot = c;
  if (get_vec(L, pr, "center", 1, c, &c) < 0 ||
      get_vec(L, pr, "size", 1, c, &size) < 0 ||
      get_vec(L, pr, "rotation", 0, v3_make(0, 0, 0), &rot) < 0)
    return -1;
  if (!(size.x > 0 && size.y > 0 && size.z > 0))
    return fail(L, "size", "each edge must be > 0");
  v3 h = v3_scale(size, 0.5);
  v3 ex = rotate(v3_make(size.x, 0, 0), rot);
  v3 ey = rotate(v3_make(0, size.y, 0), rot);
  v3 ez = rotate(v3_make(0, 0, size.z), rot);
  /* Six faces, each facing outwards (u x v along the outward normal). */
  struct {
    double x, y, z;
    v3 u, v;
  } f[6] = {{h.x, -h.y, -h.z, ey, ez}, {-h.x, -h.y, -h.z, ez, ey},
            {-h.x, h.y, -h.z, ez, ex}, {-h.x, -h.y, -h.z, ex, ez},
            {-h.x, -h.y, h.z, ex, ey}, {-h.x, -h.y, -h.z, ey, ex}};
  for (int i = 0; i < 6; i++) {
    v3 corner = v3_add(c, rotate(v3_make(f[i].x, f[i].y, f[i].z), rot));
    if (add_quad(L, corner, f[i].u, f[i].v, mat, -1) < 0)
      return -1;
  }
  return 0;
}

static int read_tube(loader *L, json_object *pr, int mat, int cone) {
  v3 b = {0, 0, 0}, t = b;
  double r0, r1 = 0;
  int capped = 1;
  if (get_vec(L, pr, "base_center", 1, b, &b) < 0 ||
      get_vec(L, pr, "top_center", 1, b, &t) < 0 ||
      get_positive(L, pr, cone ? "base_radius" : "radius", 1, 0, &r0) < 0 ||
      (cone && get_num(L, pr, "top_radius", 0, 0, &r1) < 0) ||
      get_bool(L, pr, "capped", 1, &capped) < 0)
    return -1;
  if (!cone)
    r1 = r0;
  else if (r1 < 0 || r1 >= r0)
    return fail(L, "top_radius", "must be >= 0 and < base_radius");
  v3 axis = v3_sub(t, b);
  double h = v3_len(axis);
  if (!(h > 0))
    return fail(L, "top_center", "must differ from base_center");
  rt_prim *p = add_prim(L, cone ? RT_CONE : RT_CYLINDER, mat, -1);
  if (!p)
    return -1;
  p->a = b;
  p->n = v3_scale(axis, 1 / h);
  p->h = h;
  p->r0 = r0;
  p->r1 = r1;
  v3 n = p->n;
  if (capped && add_disc(L, b, v3_neg(n), r0, mat, -1) < 0)
    return -1;
  if (capped && r1 > 0 && add_disc(L, t, n, r1, mat, -1) < 0)
    return -1;
  return 0;
}

/* A torus, or an arc of one closed at both ends by discs, so that it
 * stays a solid (glass works) and its ends do not show the inside. */
static int read_torus(loader *L, json_object *pr, int mat) {
  v3 c = {0, 0, 0}, axis, ends[2][2];
  double big, small, sweep, start;
  if (get_vec(L, pr, "center", 1, c, &c) < 0 ||
      get_dir(L, pr, "axis", 0, v3_make(0, 1, 0), &axis) < 0 ||
      get_positive(L, pr, "major_radius", 1, 0, &big) < 0 ||
      get_positive(L, pr, "minor_radius", 1, 0, &small) < 0 ||
      get_num(L, pr, "sweep_degrees", 0, 360, &sweep) < 0 ||
      get_num(L, pr, "start_degrees", 0, 0, &start) < 0)
    return -1;
  if (small >= big)
    return fail(L, "minor_radius", "must be smaller than major_radius");
  if (!(sweep > 0 && sweep <= 360))
    return fail(L, "sweep_degrees", "must be > 0 and <= 360");
  rt_prim *p = add_prim(L, RT_TORUS, mat, -1);
  if (!p)
    return -1;
  p->a = c;
  p->r0 = big;
  p->r1 = small;
  atl__rt_torus_frame(p, axis, sweep, start);
  if (sweep >= 360)
    return 0;
  /* Both ends before add_disc(), which may move p. */
  for (int e = 0; e < 2; e++)
    atl__rt_torus_end(p, e, &ends[e][0], &ends[e][1]);
  for (int e = 0; e < 2; e++)
    if (add_disc(L, ends[e][0], ends[e][1], small, mat, -1) < 0)
      return -1;
  return 0;
}

static int read_shape_props(loader *L, const char *type, json_object *pr,
                            int mat) {
  v3 a = {0, 0, 0}, b = a, c = a;
  double r;
  rt_prim *p;
  if (strcmp(type, "sphere") == 0) {
    if (get_vec(L, pr, "center", 1, a, &a) < 0 ||
        get_positive(L, pr, "radius", 1, 0, &r) < 0 ||
        !(p = add_prim(L, RT_SPHERE, mat, -1)))
      return -1;
    p->a = a;
    p->r0 = r;
    return 0;
  }
  if (strcmp(type, "box") == 0)
    return read_box(L, pr, mat);
  if (strcmp(type, "quad") == 0) {
    if (get_vec(L, pr, "corner", 1, a, &a) < 0 ||
        get_vec(L, pr, "u", 1, a, &b) < 0 || get_vec(L, pr, "v", 1, a, &c) < 0)
      return -1;
    return add_quad(L, a, b, c, mat, -1);
  }
  if (strcmp(type, "disc") == 0) {
    if (get_vec(L, pr, "center", 1, a, &a) < 0 ||
        get_dir(L, pr, "normal", 1, a, &b) < 0 ||
        get_positive(L, pr, "radius", 1, 0, &r) < 0)
      return -1;
    return add_disc(L, a, b, r, mat, -1);
  }
  if (strcmp(type, "cylinder") == 0 || strcmp(type, "cone") == 0)
    return read_tube(L, pr, mat, type[1] == 'o');
  if (strcmp(type, "plane") == 0) {
    if (get_vec(L, pr, "point", 1, a, &a) < 0 ||
        get_dir(L, pr, "normal", 1, a, &b) < 0 ||
        !(p = add_prim(L, RT_PLANE, mat, -1)))
      return -1;
    p->a = a;
    p->n = b;
    return 0;
  }
  if (strcmp(type, "triangle") == 0) {
    if (get_vec(L, pr, "v0", 1, a, &a) < 0 ||
        get_vec(L, pr, "v1", 1, a, &b) < 0 ||
        get_vec(L, pr, "v2", 1, a, &c) < 0)
      return -1;
    v3 e1 = v3_sub(b, a), e2 = v3_sub(c, a), nn = v3_cross(e1, e2);
    if (!(v3_len2(nn) > 0))
      return fail(L, "v2", "must not be on the line through v0 and v1");
    if (!(p = add_prim(L, RT_TRIANGLE, mat, -1)))
      return -1;
    p->a = a;
    p->b = e1;
    p->c = e2;
    p->n = v3_norm(nn);
    return 0;
  }
  if (strcmp(type, "torus") == 0)
    return read_torus(L, pr, mat);
  return fail(L, "type", "unknown shape type '%s'", type);
}

/* The id, type and properties of a shape or light object. */
static int read_head(loader *L, json_object *o, const char *what, int i,
                     const char **type, json_object **props) {
  json_object *v;
  const char *id = "";
  snprintf(L->ctx, sizeof(L->ctx), "%ss[%d]", what, i);
  if (!json_object_is_type(o, json_type_object))
    return fail(L, NULL, "must be an object");
  if (json_object_object_get_ex(o, "id", &v) &&
      json_object_is_type(v, json_type_string))
    id = json_object_get_string(v);
  if (*id)
    snprintf(L->ctx, sizeof(L->ctx), "%s '%.64s' (%ss[%d])", what, id, what, i);
  if (!json_object_object_get_ex(o, "type", &v) ||
      !json_object_is_type(v, json_type_string))
    return fail(L, "type", "missing (a string is required)");
  *type = json_object_get_string(v);
  *props = NULL;
  if (json_object_object_get_ex(o, "properties", props) && *props &&
      !json_object_is_type(*props, json_type_object))
    return fail(L, "properties", "must be an object");
  return 0;
}

static rt_light *add_light(loader *L, int kind) {
  atl_render_scene_t *s = L->s;
  if (s->nlights == L->cap_lights) {
    int cap = L->cap_lights ? L->cap_lights * 2 : 8;
    rt_light *p = realloc(s->lights, (size_t)cap * sizeof(*p));
    if (!p) {
      L->nomem = 1;
      fail(L, NULL, "out of memory");
      return NULL;
    }
    s->lights = p;
    L->cap_lights = cap;
  }
  rt_light *l = &s->lights[s->nlights++];
  memset(l, 0, sizeof(*l));
  l->kind = kind;
  l->prim = -1;
  return l;
}

/* The surface of an area light: a primitive with an emitting material. */
static int light_surface(loader *L, rt_light *l, int kind) {
  rt_material m;
  memset(&m, 0, sizeof(m));
  m.kind = RT_LIGHT;
  m.emission = l->emission;
  int li = (int)(l - L->s->lights);
  int mi = add_material(L, &m);
  if (mi < 0)
    return -1;
  /* add_material() may not move lights, but add_prim() may move prims. */
  l = &L->s->lights[li];
  if (kind == RT_QUAD)
    return add_quad(L, l->p, l->u, l->v, mi, li);
  rt_prim *p = add_prim(L, kind, mi, li);
  if (!p)
    return -1;
  p->a = l->p;
  p->n = l->n;
  p->r0 = l->r;
  return 0;
}

static int read_light(loader *L, json_object *o, int i) {
  const char *type;
  json_object *pr;
  if (read_head(L, o, "light", i, &type, &pr) < 0)
    return -1;
  /* scene-llm's names, as the scene plugin's import reads them. */
  int old_spot = strcmp(type, "point_spot_light") == 0;
  if (strcmp(type, "area_quad_light") == 0)
    type = "area_quad";
  else if (strcmp(type, "area_sphere_light") == 0)
    type = "area_sphere";
  else if (old_spot)
    type = "spot";
  v3 e = {0, 0, 0}, a = e, b = e, c = e;
  double r, ang, edge;
  if (get_color(L, pr, "emission", 1, e, &e) < 0)
    return -1;
  rt_light *l;
  if (strcmp(type, "point") == 0) {
    if (get_vec(L, pr, "center", 1, a, &a) < 0 ||
        !(l = add_light(L, RT_L_POINT)))
      return -1;
    l->p = a;
    l->emission = e;
    return 0;
  }
  if (strcmp(type, "spot") == 0) {
    if (get_vec(L, pr, "center", 1, a, &a) < 0 ||
        get_dir(L, pr, "direction", 0, v3_make(0, -1, 0), &b) < 0 ||
        get_num(L, pr, old_spot ? "cutoff_angle" : "cone_angle", 0, 30, &ang) <
            0 ||
        get_num(L, pr, old_spot ? "falloff_exponent" : "edge_width", 0, 5,
                &edge) < 0)
      return -1;
    if (!(ang > 0 && ang <= 90))
      return fail(L, "cone_angle", "must be > 0 and <= 90");
    if (edge < 0 || edge > ang)
      return fail(L, "edge_width", "must be >= 0 and <= cone_angle");
    if (!(l = add_light(L, RT_L_SPOT)))
      return -1;
    l->p = a;
    l->n = b;
    l->emission = e;
    l->cos_outer = cos(ang * RT_PI / 180);
    l->cos_inner = cos((ang - edge) * RT_PI / 180);
    return 0;
  }
  if (strcmp(type, "area_quad") == 0) {
    if (get_vec(L, pr, "corner", 1, a, &a) < 0 ||
        get_vec(L, pr, "u", 1, a, &b) < 0 || get_vec(L, pr, "v", 1, a, &c) < 0)
      return -1;
    v3 nn = v3_cross(b, c);
    if (!(v3_len2(nn) > 0))
      return fail(L, "v", "must not be parallel to u");
    if (!(l = add_light(L, RT_L_QUAD)))
      return -1;
    l->p = a, l->u = b, l->v = c, l->n = v3_norm(nn), l->emission = e;
    l->area = v3_len(nn);
    return light_surface(L, l, RT_QUAD);
  }
  if (strcmp(type, "area_disc") == 0) {
    if (get_vec(L, pr, "center", 1, a, &a) < 0 ||
        get_dir(L, pr, "normal", 1, a, &b) < 0 ||
        get_positive(L, pr, "radius", 1, 0, &r) < 0 ||
        !(l = add_light(L, RT_L_DISC)))
      return -1;
    l->p = a, l->n = b, l->r = r, l->emission = e;
    l->area = RT_PI * r * r;
    return light_surface(L, l, RT_DISC);
  }
  if (strcmp(type, "area_sphere") == 0) {
    if (get_vec(L, pr, "center", 1, a, &a) < 0 ||
        get_positive(L, pr, "radius", 1, 0, &r) < 0 ||
        !(l = add_light(L, RT_L_SPHERE)))
      return -1;
    l->p = a, l->r = r, l->emission = e;
    l->area = 4 * RT_PI * r * r;
    return light_surface(L, l, RT_SPHERE);
  }
  if (strcmp(type, "directional") == 0) {
    if (get_dir(L, pr, "direction", 1, a, &a) < 0 ||
        get_num(L, pr, "angular_diameter", 0, 0.53, &ang) < 0)
      return -1;
    if (ang < 0 || ang > 30)
      return fail(L, "angular_diameter", "must be between 0 and 30");
    if (!(l = add_light(L, RT_L_SUN)))
      return -1;
    l->n = v3_neg(a);
    /* emission is the irradiance on a surface facing the sun; spread
     * over the disc it is the radiance E / (pi sin^2 half-angle). */
    double half = 0.5 * ang * RT_PI / 180;
    l->cos_outer = ang > 0 ? cos(half) : 1;
    l->emission =
        ang > 0 ? v3_scale(e, 1 / (RT_PI * sin(half) * sin(half))) : e;
    return 0;
  }
  return fail(L, "type",
              "unknown light type '%s' (point, spot, area_quad, area_disc, "
              "area_sphere, directional)",
              type);
}

static int read_camera(loader *L, json_object *cam) {
  atl_render_scene_t *s = L->s;
  v3 eye, at, up = {0, 0, 0};
  double vfov, fd;
  snprintf(L->ctx, sizeof(L->ctx), "camera");
  if (cam && !json_object_is_type(cam, json_type_object))
    return fail(L, NULL, "must be an object");
  if (get_vec(L, cam, "center", 0, v3_make(0, 0, 5), &eye) < 0 ||
      get_vec(L, cam, "look_at", 0, v3_make(0, 0, 0), &at) < 0 ||
      get_dir(L, cam, "up", 0, v3_make(0, 1, 0), &up) < 0 ||
      get_num(L, cam, "vfov", 0, 45, &vfov) < 0 ||
      get_num(L, cam, "aperture", 0, 0, &s->aperture) < 0)
    return -1;
  v3 fwd = v3_sub(at, eye);
  if (v3_is_zero(fwd))
    return fail(L, "look_at", "must differ from center");
  if (get_positive(L, cam, "focus_distance", 0, v3_len(fwd), &fd) < 0)
    return -1;
  if (!(vfov > 0 && vfov < 180))
    return fail(L, "vfov", "must be between 0 and 180 (exclusive)");
  if (s->aperture < 0)
    return fail(L, "aperture", "must be >= 0");
  s->eye = eye;
  s->fwd = v3_norm(fwd);
  /* right = up x forward: +X when looking at +Z with +Y up. */
  v3 right = v3_cross(up, s->fwd);
  if (v3_len(right) < 1e-9)
    return fail(L, "up", "must not be parallel to the view direction");
  s->right = v3_norm(right);
  s->up = v3_cross(s->fwd, s->right);
  s->tan_half = tan(vfov * RT_PI / 360);
  s->focus = fd;
  return 0;
}

static int read_env(loader *L, json_object *env) {
  atl_render_scene_t *s = L->s;
  json_object *t;
  snprintf(L->ctx, sizeof(L->ctx), "environment");
  /* Absent: the default of a new scene, the gradient sky. */
  s->env = RT_ENV_GRADIENT;
  s->env_a = v3_make(0.5, 0.7, 1);
  s->env_b = v3_make(1, 1, 1);
  if (!env)
    return 0;
  if (!json_object_is_type(env, json_type_object))
    return fail(L, NULL, "must be an object");
  const char *type = "gradient";
  if (json_object_object_get_ex(env, "type", &t))
    type = json_object_get_string(t);
  if (strcmp(type, "none") == 0) {
    s->env = RT_ENV_NONE;
    return 0;
  }
  if (strcmp(type, "uniform") == 0) {
    s->env = RT_ENV_UNIFORM;
    return get_color(L, env, "emission", 1, s->env_a, &s->env_a);
  }
  if (strcmp(type, "gradient") == 0)
    return get_color(L, env, "top_color", 1, s->env_a, &s->env_a) < 0 ||
                   get_color(L, env, "bottom_color", 1, s->env_b, &s->env_b) < 0
               ? -1
               : 0;
  return fail(L, "type", "unknown environment '%s' (none, uniform, gradient)",
              type);
}

static int read_settings(loader *L, json_object *r) {
  static const char *keys[4] = {"width", "height", "samples", "max_depth"};
  int *out[4] = {&L->s->info.width, &L->s->info.height, &L->s->info.samples,
                 &L->s->info.max_depth};
  snprintf(L->ctx, sizeof(L->ctx), "render");
  for (int i = 0; r && i < 4; i++) {
    double v;
    if (get_num(L, r, keys[i], 0, 0, &v) < 0)
      return -1;
    if (v < 0 || v > 1e6 || v != floor(v))
      return fail(L, keys[i], "must be a whole number >= 1");
    *out[i] = (int)v;
  }
  return 0;
}

static json_object *member(json_object *o, const char *key) {
  json_object *v = NULL;
  return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static int read_doc(loader *L, json_object *doc) {
  atl_render_scene_t *s = L->s;
  if (!json_object_is_type(doc, json_type_object))
    return fail(L, NULL, "the scene must be a JSON object");
  /* export_scene's answer, {"scene": {...}}. */
  json_object *inner = member(doc, "scene");
  if (inner && json_object_is_type(inner, json_type_object) &&
      !member(doc, "shapes"))
    doc = inner;
  if (read_camera(L, member(doc, "camera")) < 0 ||
      read_env(L, member(doc, "environment")) < 0 ||
      read_settings(L, member(doc, "render")) < 0)
    return -1;
  json_object *shapes = member(doc, "shapes"), *lights = member(doc, "lights");
  snprintf(L->ctx, sizeof(L->ctx), "scene");
  if (shapes && !json_object_is_type(shapes, json_type_array))
    return fail(L, "shapes", "must be an array");
  if (lights && !json_object_is_type(lights, json_type_array))
    return fail(L, "lights", "must be an array");
  int ns = shapes ? (int)json_object_array_length(shapes) : 0;
  for (int i = 0; i < ns; i++) {
    const char *type;
    json_object *pr;
    json_object *o = json_object_array_get_idx(shapes, (size_t)i);
    if (read_head(L, o, "shape", i, &type, &pr) < 0)
      return -1;
    int mat = read_material(L, pr);
    if (mat < 0 || read_shape_props(L, type, pr, mat) < 0)
      return -1;
    s->info.shape_count++;
  }
  int nl = lights ? (int)json_object_array_length(lights) : 0;
  for (int i = 0; i < nl; i++) {
    if (read_light(L, json_object_array_get_idx(lights, (size_t)i), i) < 0)
      return -1;
    s->info.light_count++;
  }
  s->info.primitive_count = s->nprims;
  return 0;
}

int atl_render_scene_load(const char *json, size_t len,
                          atl_render_scene_t **out, char **err) {
  loader L;
  memset(&L, 0, sizeof(L));
  if (err)
    *err = NULL;
  *out = NULL;
  L.s = calloc(1, sizeof(*L.s));
  if (!L.s)
    return -ENOMEM;
  json_tokener *tok = json_tokener_new();
  json_object *doc = NULL;
  if (!tok) {
    free(L.s);
    return -ENOMEM;
  }
  doc = json_tokener_parse_ex(tok, json, (int)len);
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  if (!doc || jerr != json_tokener_success) {
    fail(&L, NULL, "the scene is not valid JSON: %s",
         doc ? "trailing data" : json_tokener_error_desc(jerr));
  } else if (read_doc(&L, doc) == 0) {
    int rc = atl__rt_bvh_build(L.s);
    if (rc == 0)
      rc = atl__rt_shade_build(L.s);
    if (rc < 0) {
      L.nomem = 1;
      fail(&L, NULL, "out of memory");
    }
  }
  json_object_put(doc);
  json_tokener_free(tok);
  if (L.err || L.nomem) {
    int rc = L.nomem ? -ENOMEM : -EINVAL;
    if (err)
      *err = L.err;
    else
      free(L.err);
    atl_render_scene_free(L.s);
    return rc;
  }
  *out = L.s;
  return 0;
}

void atl_render_scene_free(atl_render_scene_t *s) {
  if (!s)
    return;
  free(s->prims);
  free(s->prim_order);
  free(s->nodes);
  free(s->leaves);
  free(s->planes);
  free(s->materials);
  free(s->lights);
  free(s->shade);
  free(s);
}

void atl_render_scene_info(const atl_render_scene_t *s,
                           atl_render_scene_info_t *info) {
  *info = s->info;
}
