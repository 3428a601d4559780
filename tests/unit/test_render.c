/* The path tracer core (render/): ray-primitive geometry, the scene
 * loader's messages, energy conservation, determinism, orientation and
 * agreement with Blender Cycles. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt.h"
#include "test_scenes.h"

static atl_render_scene_t *load_str(const char *json) {
  return atl_test_scene_str(json);
}

static atl_render_scene_t *load_file(const char *name) {
  return atl_test_scene_file(name);
}

static char *load_error(const char *json) {
  atl_render_scene_t *s = NULL;
  char *err = NULL;
  int rc = atl_render_scene_load(json, strlen(json), &s, &err);
  cr_assert_eq(rc, -EINVAL);
  cr_assert_null(s);
  cr_assert_not_null(err);
  return err;
}

/* One shape in an otherwise empty scene. */
static atl_render_scene_t *one_shape(const char *type, const char *props) {
  char buf[2048];
  snprintf(buf, sizeof(buf),
           "{\"shapes\": [{\"id\": \"s\", \"type\": \"%s\", \"properties\": "
           "%s}]}",
           type, props);
  return load_str(buf);
}

static int shoot(const atl_render_scene_t *s, v3 o, v3 d, rt_hit *h) {
  rt_ray r = {o, d};
  return atl__rt_intersect(s, &r, 0, INFINITY, h);
}

#define EPS 1e-9
#define assert_v3(a, ex, ey, ez)                                               \
  do {                                                                         \
    cr_assert_float_eq((a).x, ex, 1e-9);                                       \
    cr_assert_float_eq((a).y, ey, 1e-9);                                       \
    cr_assert_float_eq((a).z, ez, 1e-9);                                       \
  } while (0)

Test(render_shapes, sphere) {
  atl_render_scene_t *s =
      one_shape("sphere", "{\"center\": [0, 0, 0], \"radius\": 2}");
  rt_hit h;
  cr_assert(shoot(s, v3_make(0, 0, -10), v3_make(0, 0, 1), &h));
  cr_assert_float_eq(h.t, 8, EPS);
  assert_v3(h.n, 0, 0, -1);
  cr_assert(h.front);
  /* From inside: the far wall, seen from its back. */
  cr_assert(shoot(s, v3_make(0, 0, 0), v3_make(1, 0, 0), &h));
  cr_assert_float_eq(h.t, 2, EPS);
  assert_v3(h.n, 1, 0, 0);
  cr_assert_not(h.front);
  /* An unnormalised direction: t is in its units. */
  cr_assert(shoot(s, v3_make(0, 0, -10), v3_make(0, 0, 4), &h));
  cr_assert_float_eq(h.t, 2, EPS);
  /* Grazing: just inside the silhouette hits, just outside misses. */
  cr_assert(shoot(s, v3_make(1.999999, 0, -10), v3_make(0, 0, 1), &h));
  cr_assert_not(shoot(s, v3_make(2.000001, 0, -10), v3_make(0, 0, 1), &h));
  cr_assert_not(shoot(s, v3_make(0, 0, -10), v3_make(0, 0, -1), &h));
  atl_render_scene_free(s);
}

Test(render_shapes, quad) {
  atl_render_scene_t *s = one_shape(
      "quad", "{\"corner\": [0, 0, 0], \"u\": [2, 0, 0], \"v\": [0, 0, 3]}");
  rt_hit h;
  /* u x v = (2,0,0) x (0,0,3) = (0,-6,0): it faces down. */
  cr_assert(shoot(s, v3_make(1, -5, 1), v3_make(0, 1, 0), &h));
  cr_assert_float_eq(h.t, 5, EPS);
  assert_v3(h.n, 0, -1, 0);
  cr_assert(h.front);
  cr_assert(shoot(s, v3_make(1, 5, 2.9), v3_make(0, -1, 0), &h));
  cr_assert_not(h.front);
  cr_assert_not(shoot(s, v3_make(2.001, 5, 1), v3_make(0, -1, 0), &h));
  cr_assert_not(shoot(s, v3_make(1, 5, 3.001), v3_make(0, -1, 0), &h));
  /* Parallel to the plane, in it: no hit. */
  cr_assert_not(shoot(s, v3_make(-1, 0, 1), v3_make(1, 0, 0), &h));
  cr_assert_not(shoot(s, v3_make(-1, 1e-9, 1), v3_make(1, 0, 0), &h));
  atl_render_scene_free(s);
}

Test(render_shapes, disc) {
  atl_render_scene_t *s = one_shape(
      "disc", "{\"center\": [0, 1, 0], \"normal\": [0, 2, 0], \"radius\": 1}");
  rt_hit h;
  cr_assert(shoot(s, v3_make(0.5, 3, 0.5), v3_make(0, -1, 0), &h));
  cr_assert_float_eq(h.t, 2, EPS);
  assert_v3(h.n, 0, 1, 0);
  cr_assert(h.front);
  cr_assert(shoot(s, v3_make(0.99, -3, 0), v3_make(0, 1, 0), &h));
  cr_assert_not(h.front);
  cr_assert_not(shoot(s, v3_make(0.8, 3, 0.8), v3_make(0, -1, 0), &h));
  cr_assert_not(shoot(s, v3_make(-5, 1, 0), v3_make(1, 0, 0), &h));
  atl_render_scene_free(s);
}

Test(render_shapes, triangle) {
  atl_render_scene_t *s = one_shape(
      "triangle", "{\"v0\": [0, 0, 0], \"v1\": [1, 0, 0], \"v2\": [0, 1, 0]}");
  rt_hit h;
  /* (v1 - v0) x (v2 - v0) = +Z. */
  cr_assert(shoot(s, v3_make(0.25, 0.25, 4), v3_make(0, 0, -1), &h));
  cr_assert_float_eq(h.t, 4, EPS);
  assert_v3(h.n, 0, 0, 1);
  cr_assert(h.front);
  cr_assert(shoot(s, v3_make(0.25, 0.25, -4), v3_make(0, 0, 1), &h));
  cr_assert_not(h.front);
  cr_assert_not(shoot(s, v3_make(0.51, 0.51, 4), v3_make(0, 0, -1), &h));
  cr_assert_not(shoot(s, v3_make(-1, 0.2, 0), v3_make(1, 0, 0), &h));
  atl_render_scene_free(s);
}

Test(render_shapes, plane) {
  atl_render_scene_t *s =
      one_shape("plane", "{\"point\": [0, -1, 0], \"normal\": [0, 1, 0]}");
  rt_hit h;
  cr_assert(shoot(s, v3_make(1e6, 2, -3e6), v3_make(0, -1, 0), &h));
  cr_assert_float_eq(h.t, 3, EPS);
  assert_v3(h.n, 0, 1, 0);
  cr_assert(h.front);
  cr_assert(shoot(s, v3_make(0, -2, 0), v3_make(0, 1, 0), &h));
  cr_assert_not(h.front);
  cr_assert_not(shoot(s, v3_make(0, 0, 0), v3_make(1, 0, 0), &h));
  cr_assert_not(shoot(s, v3_make(0, 0, 0), v3_make(0, 1, 0), &h));
  atl_render_scene_free(s);
}

Test(render_shapes, cylinder) {
  atl_render_scene_t *s =
      one_shape("cylinder", "{\"base_center\": [0, 0, 0], \"top_center\": "
                            "[0, 2, 0], \"radius\": 1, \"capped\": true}");
  rt_hit h;
  cr_assert(shoot(s, v3_make(-5, 1, 0), v3_make(1, 0, 0), &h));
  cr_assert_float_eq(h.t, 4, EPS);
  assert_v3(h.n, -1, 0, 0);
  cr_assert(h.front);
  /* The top cap. */
  cr_assert(shoot(s, v3_make(0.5, 5, 0), v3_make(0, -1, 0), &h));
  cr_assert_float_eq(h.t, 3, EPS);
  assert_v3(h.n, 0, 1, 0);
  /* From inside, the wall's back. */
  cr_assert(shoot(s, v3_make(0, 1, 0), v3_make(0, 0, 1), &h));
  cr_assert_float_eq(h.t, 1, EPS);
  cr_assert_not(h.front);
  /* Above, and grazing the side. */
  cr_assert_not(shoot(s, v3_make(-5, 2.001, 0), v3_make(1, 0, 0), &h));
  cr_assert_not(shoot(s, v3_make(-5, 1, 1.000001), v3_make(1, 0, 0), &h));
  atl_render_scene_free(s);
  /* An open tube, slanted: no caps. */
  s = one_shape("cylinder", "{\"base_center\": [0, 0, 0], \"top_center\": "
                            "[2, 2, 0], \"radius\": 0.5, \"capped\": false}");
  cr_assert_not(shoot(s, v3_make(2, 2, 0), v3_make(1, 1, 0), &h));
  cr_assert(shoot(s, v3_make(1, 1, -5), v3_make(0, 0, 1), &h));
  cr_assert_float_eq(h.t, 4.5, EPS);
  assert_v3(h.n, 0, 0, -1);
  atl_render_scene_free(s);
}

Test(render_shapes, cone) {
  /* Base radius 2 at y = 0, tip at y = 2: the side is at 45 degrees. */
  atl_render_scene_t *s =
      one_shape("cone", "{\"base_center\": [0, 0, 0], \"top_center\": [0, 2, "
                        "0], \"base_radius\": 2, \"capped\": true}");
  rt_hit h;
  cr_assert(shoot(s, v3_make(-5, 1, 0), v3_make(1, 0, 0), &h));
  cr_assert_float_eq(h.t, 4, EPS);
  assert_v3(h.n, -sqrt(0.5), sqrt(0.5), 0);
  cr_assert(h.front);
  cr_assert(shoot(s, v3_make(1, -3, 0), v3_make(0, 1, 0), &h));
  cr_assert_float_eq(h.t, 3, EPS); /* the base cap */
  assert_v3(h.n, 0, -1, 0);
  /* Above the tip (the mirror nappe is not part of it). */
  cr_assert_not(shoot(s, v3_make(-5, 3, 0), v3_make(1, 0, 0), &h));
  atl_render_scene_free(s);
  /* A frustum: top radius 1 at y = 1. */
  s = one_shape("cone", "{\"base_center\": [0, 0, 0], \"top_center\": [0, 1, "
                        "0], \"base_radius\": 2, \"top_radius\": 1}");
  cr_assert(shoot(s, v3_make(0.5, 5, 0), v3_make(0, -1, 0), &h));
  cr_assert_float_eq(h.t, 4, EPS); /* the top cap */
  cr_assert(shoot(s, v3_make(-5, 0.5, 0), v3_make(1, 0, 0), &h));
  cr_assert_float_eq(h.t, 3.5, EPS);
  atl_render_scene_free(s);
}

Test(render_shapes, box_rotated) {
  atl_render_scene_t *s =
      one_shape("box", "{\"center\": [1, 1, 1], \"size\": [2, 2, 2]}");
  rt_hit h;
  cr_assert(shoot(s, v3_make(1, 1, -5), v3_make(0, 0, 1), &h));
  cr_assert_float_eq(h.t, 5, EPS);
  assert_v3(h.n, 0, 0, -1);
  cr_assert(h.front);
  cr_assert(shoot(s, v3_make(1, 1, 1), v3_make(0, 1, 0), &h));
  cr_assert_float_eq(h.t, 1, EPS);
  cr_assert_not(h.front);
  atl_render_scene_free(s);
  /* Turned 45 degrees about Y: a corner points at -Z. */
  s = one_shape("box", "{\"center\": [0, 0, 0], \"size\": [2, 2, 2], "
                       "\"rotation\": [0, 45, 0]}");
  cr_assert(shoot(s, v3_make(0, 0, -5), v3_make(0, 0, 1), &h));
  cr_assert_float_eq(h.t, 5 - sqrt(2), 1e-9);
  cr_assert(shoot(s, v3_make(0.2, 0, -5), v3_make(0, 0, 1), &h));
  cr_assert_float_eq(fabs(h.n.x), sqrt(0.5), 1e-9);
  cr_assert_float_eq(h.n.z, -sqrt(0.5), 1e-9);
  cr_assert_not(shoot(s, v3_make(1.42, 0, -5), v3_make(0, 0, 1), &h));
  atl_render_scene_free(s);
}

Test(render_shapes, torus) {
  /* Lying flat: the ring of tube centres has radius 2 in y = 0, the tube
   * radius 0.5; the hole is the disc of radius 1.5. */
  atl_render_scene_t *s = one_shape(
      "torus",
      "{\"center\": [0, 0, 0], \"major_radius\": 2, \"minor_radius\": 0.5}");
  cr_assert_eq(s->nprims, 1);
  rt_hit h;
  cr_assert(shoot(s, v3_make(-10, 0, 0), v3_make(1, 0, 0), &h));
  cr_assert_float_eq(h.t, 7.5, EPS);
  assert_v3(h.n, -1, 0, 0);
  cr_assert(h.front);
  /* On through the hole to the inner wall, which faces the axis. */
  cr_assert(shoot(s, v3_make(-1, 0, 0), v3_make(1, 0, 0), &h));
  cr_assert_float_eq(h.t, 2.5, EPS);
  assert_v3(h.n, -1, 0, 0);
  cr_assert(h.front);
  /* Down onto the top of the tube; an unnormalised direction. */
  cr_assert(shoot(s, v3_make(0, 10, 2), v3_make(0, -4, 0), &h));
  cr_assert_float_eq(h.t, 9.5 / 4, EPS);
  assert_v3(h.n, 0, 1, 0);
  /* A slanted hit: the normal points away from the ring. */
  cr_assert(shoot(s, v3_make(2 + 0.3, 10, 0), v3_make(0, -1, 0), &h));
  cr_assert_float_eq(h.t, 10 - 0.4, EPS);
  assert_v3(h.n, 0.6, 0.8, 0);
  /* From inside the tube: the wall's back. */
  cr_assert(shoot(s, v3_make(2, 0, 0), v3_make(1, 0, 0), &h));
  cr_assert_float_eq(h.t, 0.5, EPS);
  assert_v3(h.n, 1, 0, 0);
  cr_assert_not(h.front);
  /* Through the hole: down the axis, and down just inside its rim. */
  cr_assert_not(shoot(s, v3_make(0, 10, 0), v3_make(0, -1, 0), &h));
  cr_assert_not(shoot(s, v3_make(1.499999, 10, 0), v3_make(0, -1, 0), &h));
  cr_assert(shoot(s, v3_make(1.500001, 10, 0), v3_make(0, -1, 0), &h));
  /* Grazing the outer silhouette and the top of the tube. */
  cr_assert(shoot(s, v3_make(2.499999, 0, -10), v3_make(0, 0, 1), &h));
  cr_assert_not(shoot(s, v3_make(2.500001, 0, -10), v3_make(0, 0, 1), &h));
  cr_assert(shoot(s, v3_make(2, 0.499999, -10), v3_make(0, 0, 1), &h));
  cr_assert_not(shoot(s, v3_make(2, 0.500001, -10), v3_make(0, 0, 1), &h));
  /* Away from it, and stopped short of it. */
  cr_assert_not(shoot(s, v3_make(-10, 0, 0), v3_make(-1, 0, 0), &h));
  rt_ray r = {v3_make(-10, 0, 0), v3_make(1, 0, 0)};
  cr_assert_not(atl__rt_intersect(s, &r, 0, 7.4, &h));
  atl_render_scene_free(s);
  /* Far from the origin, with a thin tube seen from far away: the
   * quartic keeps its precision. */
  s = one_shape("torus", "{\"center\": [1000, 2000, 3000], \"axis\": [0, 0, "
                         "3], \"major_radius\": 1, \"minor_radius\": 0.01}");
  cr_assert(shoot(s, v3_make(1001, 2000, -5000), v3_make(0, 0, 1), &h));
  cr_assert_float_eq(h.t, 8000 - 0.01, 1e-7);
  assert_v3(h.n, 0, 0, -1);
  cr_assert(shoot(s, v3_make(1e4, 2000, 3000), v3_make(-1, 0, 0), &h));
  cr_assert_float_eq(h.t, 9000 - 1.01, 1e-7);
  atl_render_scene_free(s);
}

/* Random rays at a tilted torus: every hit is on the surface, with the
 * normal of the surface there, and nothing nearer is missed (a march
 * along the ray finds no earlier crossing). */
Test(render_shapes, torus_random_rays) {
  atl_render_scene_t *s =
      one_shape("torus", "{\"center\": [1, -2, 0.5], \"axis\": [1, 2, 3], "
                         "\"major_radius\": 1.5, \"minor_radius\": 0.4}");
  v3 c = v3_make(1, -2, 0.5), ax = v3_norm(v3_make(1, 2, 3));
  rt_rng rng = rt_rng_make(11, 0, 0);
  int hits = 0;
  for (int k = 0; k < 3000; k++) {
    v3 o = v3_add(c, v3_make(rt_rand(&rng) * 8 - 4, rt_rand(&rng) * 8 - 4,
                             rt_rand(&rng) * 8 - 4));
    v3 aim = v3_add(c, v3_make(rt_rand(&rng) * 4 - 2, rt_rand(&rng) * 4 - 2,
                               rt_rand(&rng) * 4 - 2));
    v3 d = v3_norm(v3_sub(aim, o));
    rt_hit h;
    int hit = shoot(s, o, d, &h);
    double tend = hit ? h.t : 12;
    /* Every point before the hit is on the origin's side: the signed
     * distance to the tube (to the ring of tube centres, minus r) keeps
     * its sign. */
    double side = 0;
    for (double t = 0; t < tend - 1e-3; t += 1e-3) {
      v3 q = v3_sub(v3_madd(o, d, t), c);
      double ax_d = v3_dot(q, ax);
      double rho = v3_len(v3_madd(q, ax, -ax_d));
      double dist = sqrt((rho - 1.5) * (rho - 1.5) + ax_d * ax_d) - 0.4;
      if (t == 0)
        side = dist > 0 ? 1 : -1;
      cr_assert_gt(dist * side, -1e-6, "ray %d: crosses at t = %f before %f", k,
                   t, tend);
    }
    if (!hit)
      continue;
    hits++;
    v3 q = v3_sub(h.p, c);
    double ax_d = v3_dot(q, ax);
    v3 radial = v3_madd(q, ax, -ax_d);
    double rho = v3_len(radial);
    cr_assert_float_eq((rho - 1.5) * (rho - 1.5) + ax_d * ax_d, 0.16, 1e-9);
    v3 n = v3_norm(v3_sub(q, v3_scale(radial, 1.5 / rho)));
    assert_v3(h.n, n.x, n.y, n.z);
    cr_assert_eq(h.front, v3_dot(d, n) < 0);
  }
  cr_assert_gt(hits, 500);
  atl_render_scene_free(s);
}

Test(render_shapes, torus_arc) {
  /* A smile: axis +Z (towards the viewer), the half from 180 to 360
   * degrees, counter-clockwise from +X seen from +Z: the lower half. */
  atl_render_scene_t *s =
      one_shape("torus", "{\"center\": [0, 0, 0], \"axis\": [0, 0, 1], "
                         "\"major_radius\": 1, \"minor_radius\": 0.2, "
                         "\"sweep_degrees\": 180, \"start_degrees\": 180}");
  cr_assert_eq(s->nprims, 3); /* the arc and its two end caps */
  rt_hit h;
  cr_assert(shoot(s, v3_make(0, -1, 10), v3_make(0, 0, -1), &h));
  cr_assert_float_eq(h.t, 9.8, EPS);
  assert_v3(h.n, 0, 0, 1);
  cr_assert_not(shoot(s, v3_make(0, 1, 10), v3_make(0, 0, -1), &h));
  /* Either side of the start, 180 degrees. */
  double a = 181 * RT_PI / 180, b = 179 * RT_PI / 180;
  cr_assert(shoot(s, v3_make(cos(a), sin(a), 10), v3_make(0, 0, -1), &h));
  cr_assert_float_eq(h.t, 9.8, EPS);
  cr_assert_not(shoot(s, v3_make(cos(b), sin(b), 10), v3_make(0, 0, -1), &h));
  /* Either side of the end, 360 degrees. */
  a = -1 * RT_PI / 180, b = 1 * RT_PI / 180;
  cr_assert(shoot(s, v3_make(cos(a), sin(a), 10), v3_make(0, 0, -1), &h));
  cr_assert_not(shoot(s, v3_make(cos(b), sin(b), 10), v3_make(0, 0, -1), &h));
  /* The flat end caps close the tube: both face up, away from the arc. */
  cr_assert(shoot(s, v3_make(-1.1, 5, 0.05), v3_make(0, -1, 0), &h));
  cr_assert_float_eq(h.t, 5, EPS);
  assert_v3(h.n, 0, 1, 0);
  cr_assert(h.front);
  cr_assert(shoot(s, v3_make(0.9, 5, -0.1), v3_make(0, -1, 0), &h));
  cr_assert_float_eq(h.t, 5, EPS);
  assert_v3(h.n, 0, 1, 0);
  atl_render_scene_free(s);
  /* An axis along X (here -X): angles start from +Z and, seen from the
   * axis's tip, run counter-clockwise towards -X x Z = +Y. A quarter
   * from -360 (that is 0) holds (0, 1, 1) / sqrt 2, not (0, -1, 1). */
  s = one_shape("torus", "{\"center\": [0, 0, 0], \"axis\": [-2, 0, 0], "
                         "\"major_radius\": 1, \"minor_radius\": 0.1, "
                         "\"sweep_degrees\": 90, \"start_degrees\": -360}");
  double m = sqrt(0.5);
  cr_assert(shoot(s, v3_make(5, m, m), v3_make(-1, 0, 0), &h));
  cr_assert_float_eq(h.t, 4.9, EPS);
  assert_v3(h.n, 1, 0, 0);
  cr_assert_not(shoot(s, v3_make(5, -m, m), v3_make(-1, 0, 0), &h));
  atl_render_scene_free(s);
}

/* 300 random spheres and quads (half of these along the axes), and 60
 * tori, tilted, half of them arcs. */
static atl_render_scene_t *random_scene(rt_rng *rng) {
  char *doc = malloc(200000);
  size_t n = (size_t)sprintf(doc, "{\"shapes\": [");
  for (int i = 0; i < 300; i++) {
    double x = rt_rand(rng) * 20 - 10, y = rt_rand(rng) * 20 - 10;
    double z = rt_rand(rng) * 20 - 10;
    if (i % 2)
      n += (size_t)sprintf(doc + n,
                           "%s{\"id\": \"s%d\", \"type\": \"sphere\", "
                           "\"properties\": {\"center\": [%g, %g, %g], "
                           "\"radius\": %g}}",
                           i ? "," : "", i, x, y, z, 0.1 + rt_rand(rng));
    else
      n += (size_t)sprintf(doc + n,
                           "%s{\"id\": \"q%d\", \"type\": \"quad\", "
                           "\"properties\": {\"corner\": [%g, %g, %g], \"u\": "
                           "[1, %g, 0], \"v\": [0, %g, 1.5]}}",
                           i ? "," : "", i, x, y, z,
                           /* every other quad along the axes */
                           i % 4 ? rt_rand(rng) : 0, i % 4 ? 0.5 : 0);
  }
  for (int i = 0; i < 60; i++) {
    double x = rt_rand(rng) * 20 - 10, y = rt_rand(rng) * 20 - 10;
    double z = rt_rand(rng) * 20 - 10, big = 0.3 + rt_rand(rng);
    n += (size_t)sprintf(
        doc + n,
        ",{\"id\": \"t%d\", \"type\": \"torus\", \"properties\": "
        "{\"center\": [%g, %g, %g], \"axis\": [%g, %g, %g], "
        "\"major_radius\": %g, \"minor_radius\": %g, \"sweep_degrees\": "
        "%g, \"start_degrees\": %g}}",
        i, x, y, z, rt_rand(rng) - 0.5, rt_rand(rng) - 0.5, rt_rand(rng) - 0.5,
        big, big * (0.05 + 0.5 * rt_rand(rng)),
        i % 2 ? 360 : 10 + 340 * rt_rand(rng), 720 * rt_rand(rng) - 360);
  }
  strcpy(doc + n, "]}");
  atl_render_scene_t *s = load_str(doc);
  free(doc);
  return s;
}

static rt_ray random_ray(rt_rng *rng) {
  rt_ray r = {v3_make(rt_rand(rng) * 30 - 15, rt_rand(rng) * 30 - 15,
                      rt_rand(rng) * 30 - 15),
              v3_norm(v3_make(rt_rand(rng) - 0.5, rt_rand(rng) - 0.5,
                              rt_rand(rng) - 0.5))};
  return r;
}

Test(render_shapes, bvh_matches_brute_force) {
  /* The BVH finds the nearest hit: the tori's bounds hold them. */
  rt_rng rng = rt_rng_make(7, 0, 0);
  atl_render_scene_t *s = random_scene(&rng);
  for (int k = 0; k < 2000; k++) {
    rt_ray r = random_ray(&rng);
    rt_hit h, b;
    int hit = atl__rt_intersect(s, &r, 0, INFINITY, &h);
    double best = INFINITY;
    for (int i = 0; i < s->nprims; i++)
      if (atl__rt_prim_intersect(&s->prims[i], &r, 0, best, &b))
        best = b.t;
    cr_assert_eq(hit, isfinite(best));
    if (hit)
      cr_assert_float_eq(h.t, best, 1e-12);
    cr_assert_eq(atl__rt_occluded(s, &r, 0, INFINITY), hit);
  }
  atl_render_scene_free(s);
}

/* A packet's lanes are independent: each finds what its ray alone finds,
 * whatever the other lanes hold, and an idle lane finds nothing. */
Test(render_shapes, packets_match_single_rays) {
  rt_rng rng = rt_rng_make(8, 0, 0);
  atl_render_scene_t *s = random_scene(&rng);
  enum { N = 4001 }; /* not a whole number of packets */
  rt_ray *rays = malloc(N * sizeof(*rays));
  double *tmax = malloc(N * sizeof(double)), *t = malloc(N * sizeof(double));
  int *on = malloc(N * sizeof(int)), *prim = malloc(N * sizeof(int));
  int *occ = malloc(N * sizeof(int));
  for (int i = 0; i < N; i++) {
    rays[i] = random_ray(&rng);
    on[i] = rt_rand(&rng) < 0.8;
    tmax[i] = rt_rand(&rng) < 0.5 ? INFINITY : 10 * rt_rand(&rng);
  }
  atl__rt_intersect_rays(s, N, rays, tmax, on, t, prim, occ);
  for (int i = 0; i < N; i++) {
    rt_hit h;
    int hit = on[i] && atl__rt_intersect(s, &rays[i], 0, tmax[i], &h);
    cr_assert_eq(prim[i] >= 0, hit, "ray %d", i);
    cr_assert_eq(occ[i], hit, "ray %d", i);
    if (hit) {
      cr_assert_eq(prim[i], h.prim, "ray %d", i);
      cr_assert_eq(t[i], h.t, "ray %d", i);
    }
  }
  free(rays);
  free(tmax);
  free(t);
  free(on);
  free(prim);
  free(occ);
  atl_render_scene_free(s);
}

Test(render_load, messages) {
  char *e = load_error("{\"shapes\": [{\"id\": \"ball\", \"type\": "
                       "\"sphere\", \"properties\": {\"center\": [0,0,0]}}]}");
  cr_assert(strstr(e, "shape 'ball'") && strstr(e, "radius"), "%s", e);
  free(e);
  e = load_error("{\"shapes\": [{\"id\": \"q\", \"type\": \"quad\", "
                 "\"properties\": {\"corner\": [0,0,0], \"u\": [1,0,0], "
                 "\"v\": [2,0,0]}}]}");
  cr_assert(strstr(e, "'q'") && strstr(e, "parallel"), "%s", e);
  free(e);
  e = load_error("{\"shapes\": [{\"id\": \"m\", \"type\": \"sphere\", "
                 "\"properties\": {\"center\": [0,0,0], \"radius\": 1, "
                 "\"material\": {\"type\": \"metal\", \"fuzz\": 2}}}]}");
  cr_assert(strstr(e, "'m'") && strstr(e, "material") && strstr(e, "fuzz"),
            "%s", e);
  free(e);
  e = load_error("{\"lights\": [{\"id\": \"sun\", \"type\": \"directional\", "
                 "\"properties\": {\"emission\": [1,1,1]}}]}");
  cr_assert(strstr(e, "light 'sun'") && strstr(e, "direction"), "%s", e);
  free(e);
  e = load_error("{\"camera\": {\"center\": [0,0,0], \"look_at\": [0,0,0]}}");
  cr_assert(strstr(e, "camera") && strstr(e, "look_at"), "%s", e);
  free(e);
  e = load_error("{\"shapes\": [");
  cr_assert(strstr(e, "JSON"), "%s", e);
  free(e);
  e = load_error("{\"shapes\": [{\"id\": \"t\", \"type\": \"teapot\"}]}");
  cr_assert(strstr(e, "teapot"), "%s", e);
  free(e);
  /* Found by fuzz_render: a sky this bright overflowed the float sums. */
  e = load_error("{\"environment\": {\"type\": \"uniform\", \"emission\": "
                 "[1, 2e44, 1]}}");
  cr_assert(strstr(e, "environment") && strstr(e, "at most 1e9"), "%s", e);
  free(e);
}

Test(render_load, formats) {
  /* The bare namespace, export_scene's answer and scene-llm's light
   * names all load. */
  atl_render_scene_t *s = load_str(
      "{\"scene\": {\"format\": \"atelier-scene\", \"version\": 1, "
      "\"render\": {\"width\": 40, \"height\": 30, \"samples\": 7}, "
      "\"shapes\": [{\"id\": \"b\", \"type\": \"box\", \"properties\": "
      "{\"center\": [0,0,0], \"size\": [1,1,1]}}], \"lights\": [{\"id\": "
      "\"s\", \"type\": \"point_spot_light\", \"properties\": {\"center\": "
      "[0,5,0], \"emission\": [1,1,1], \"cutoff_angle\": 20, "
      "\"falloff_exponent\": 4}}, {\"id\": \"q\", \"type\": "
      "\"area_quad_light\", \"properties\": {\"corner\": [0,3,0], \"u\": "
      "[1,0,0], \"v\": [0,0,1], \"emission\": [2,2,2]}}]}}");
  atl_render_scene_info_t info;
  atl_render_scene_info(s, &info);
  cr_assert_eq(info.shape_count, 1);
  cr_assert_eq(info.light_count, 2);
  cr_assert_eq(info.primitive_count, 7);
  cr_assert_eq(info.width, 40);
  cr_assert_eq(info.samples, 7);
  cr_assert_eq(s->lights[0].kind, RT_L_SPOT);
  cr_assert_float_eq(s->lights[0].cos_inner, cos(16 * RT_PI / 180), 1e-12);
  atl_render_scene_free(s);
  const char *files[3] = {"scenes/cornell.json", "scenes/cornell-empty.json",
                          "scenes/snowman.json"};
  for (int i = 0; i < 3; i++) {
    s = load_file(files[i]);
    atl_render_scene_info(s, &info);
    cr_assert_gt(info.primitive_count, 5);
    atl_render_scene_free(s);
  }
}

/* Renders the whole frame as one tile, pass after pass. */
static void render(const atl_render_scene_t *s, const atl_render_params_t *p,
                   int passes, float **sum, uint32_t **count) {
  size_t n = (size_t)p->width * (size_t)p->height;
  *sum = calloc(n * 3, sizeof(float));
  *count = calloc(n, sizeof(uint32_t));
  for (int i = 0; i < passes; i++)
    atl_render_tile(s, p, 0, 0, p->width, p->height, i, *sum, *count);
}

static void mean_rect(const float *sum, const uint32_t *count, int w, int x0,
                      int y0, int x1, int y1, double m[3]) {
  m[0] = m[1] = m[2] = 0;
  for (int y = y0; y < y1; y++)
    for (int x = x0; x < x1; x++)
      for (int c = 0; c < 3; c++)
        m[c] += sum[(y * w + x) * 3 + c] / count[y * w + x];
  for (int c = 0; c < 3; c++)
    m[c] /= (double)(x1 - x0) * (y1 - y0);
}

static void furnace(const char *material, double tol) {
  char doc[1024];
  snprintf(doc, sizeof(doc),
           "{\"camera\": {\"center\": [0,0,4], \"look_at\": [0,0,0], "
           "\"vfov\": 20}, \"environment\": {\"type\": \"uniform\", "
           "\"emission\": [1,1,1]}, \"shapes\": [{\"id\": \"ball\", "
           "\"type\": \"sphere\", \"properties\": {\"center\": [0,0,0], "
           "\"radius\": 1, \"material\": %s}}]}",
           material);
  atl_render_scene_t *s = load_str(doc);
  atl_render_params_t p = {.width = 16,
                           .height = 16,
                           .spp_per_pass = 64,
                           .max_depth = 64,
                           .seed = 1};
  float *sum;
  uint32_t *count;
  render(s, &p, 1, &sum, &count);
  for (int i = 0; i < 16 * 16; i++)
    for (int c = 0; c < 3; c++) {
      double v = sum[i * 3 + c] / count[i];
      cr_assert(fabs(v - 1) <= tol, "%s: pixel %d = %f", material, i, v);
    }
  atl_render_scene_free(s);
  free(sum);
  free(count);
}

/* rt_rand2()'s two numbers, from the halves of one mixed step, fill the
 * unit square evenly (a 2D histogram's chi-square over 16 x 16 cells),
 * as the light and direction samplers need; and consecutive pairs of a
 * path's sequence do too. 255 degrees of freedom: 370 is five standard
 * deviations above the mean. */
Test(render_rng, pairs_fill_the_square) {
  enum { N = 1 << 20, C = 16 };
  static int same[C][C], next[C][C];
  double prev_b = 0;
  for (int i = 0; i < N; i++) {
    rt_rng r = rt_rng_make(7, (uint64_t)i / 64, (uint64_t)i % 64);
    double a, b, c, d;
    rt_rand2(&r, &a, &b);
    rt_rand2(&r, &c, &d);
    cr_assert(a >= 0 && a < 1 && b >= 0 && b < 1 && c >= 0 && c < 1);
    same[(int)(a * C)][(int)(b * C)]++;
    next[(int)(b * C)][(int)(c * C)]++;
    prev_b += b;
  }
  double e = (double)N / (C * C), x_same = 0, x_next = 0;
  for (int i = 0; i < C; i++)
    for (int j = 0; j < C; j++) {
      x_same += (same[i][j] - e) * (same[i][j] - e) / e;
      x_next += (next[i][j] - e) * (next[i][j] - e) / e;
    }
  cr_assert_lt(x_same, 370, "chi-square of (a, b): %f", x_same);
  cr_assert_lt(x_next, 370, "chi-square of (b, next a): %f", x_next);
  cr_assert_lt(fabs(prev_b / N - 0.5), 0.002);
}

Test(render_light, white_furnace) {
  furnace("{\"type\": \"lambertian\", \"albedo\": [1,1,1]}", 0.01);
  furnace("{\"type\": \"plastic\", \"albedo\": [1,1,1], \"roughness\": 0}",
          0.01);
  furnace("{\"type\": \"metal\", \"albedo\": [1,1,1]}", 0.01);
  /* Glass loses a little to paths trapped by total internal reflection
   * beyond the depth limit; nothing is gained. */
  furnace("{\"type\": \"dielectric\"}", 0.01);
}

Test(render_light, bsdfs_conserve_energy) {
  rt_material m[6];
  memset(m, 0, sizeof(m));
  m[0] = (rt_material){.kind = RT_LAMBERTIAN, .albedo = {1, 1, 1}};
  m[1] = (rt_material){.kind = RT_METAL, .albedo = {1, 1, 1}, .fuzz = 0.7};
  m[2] = (rt_material){.kind = RT_DIELECTRIC, .ior = 1.5, .tint = {1, 1, 1}};
  m[3] = (rt_material){.kind = RT_DIELECTRIC, .ior = 2.4, .tint = {1, 1, 1}};
  m[4] = (rt_material){
      .kind = RT_PLASTIC, .albedo = {1, 1, 1}, .fuzz = 0.5, .ior = 1.5};
  m[5] = (rt_material){.kind = RT_LAMBERTIAN,
                       .checker = 1,
                       .albedo = {0.9, 0.2, 1},
                       .albedo2 = {1, 1, 0.1},
                       .scale = 0.3};
  for (int k = 0; k < 6; k++) {
    for (int a = 0; a < 8; a++) {
      double th = a * 0.2; /* up to 80 degrees from the normal */
      rt_hit h = {.t = 1, .p = {0.1, 0, 0.2}, .n = {0, 0, 1}, .front = a % 2};
      v3 wo = v3_make(sin(th), 0, cos(th));
      if (!h.front) /* inside, for the dielectrics */
        h.n = v3_make(0, 0, -1);
      rt_rng rng = rt_rng_make(3, (uint64_t)k, (uint64_t)a);
      double sum = 0, sum_eval = 0;
      int n = 20000;
      for (int i = 0; i < n; i++) {
        rt_bsdf_sample bs;
        if (atl__rt_material_sample(&m[k], &h, wo, &rng, &bs))
          sum += v3_max(bs.weight);
        /* The eval side: f cos / pdf with uniform hemisphere samples. */
        double u1 = rt_rand(&rng), u2 = rt_rand(&rng);
        double r = sqrt(fmax(0, 1 - u1 * u1));
        v3 nn = v3_dot(wo, h.n) > 0 ? h.n : v3_neg(h.n);
        v3 wi = v3_from_local(nn, r * cos(2 * RT_PI * u2),
                              r * sin(2 * RT_PI * u2), u1);
        v3 f;
        double pdf;
        if (atl__rt_material_eval(&m[k], &h, wo, wi, &f, &pdf))
          sum_eval += v3_max(f) * u1 * 2 * RT_PI;
      }
      cr_assert_leq(sum / n, 1 + 1e-9, "material %d angle %d: %f", k, a,
                    sum / n);
      cr_assert_leq(sum_eval / n, 1.03, "material %d angle %d: eval %f", k, a,
                    sum_eval / n);
    }
  }
}

/* The mean of the image rendered with light sampling (NEE with MIS, at
 * spp samples) and with BSDF sampling alone (at bsdf_spp), channel by
 * channel: the two estimators must converge to the same picture. */
static void nee_vs_bsdf_means(const atl_render_scene_t *s, int size, int spp,
                              int bsdf_spp, int max_depth, double nee[3],
                              double bsdf[3]) {
  atl_render_params_t p = {.width = size,
                           .height = size,
                           .spp_per_pass = spp,
                           .max_depth = max_depth,
                           .seed = 5};
  float *sa, *sb;
  uint32_t *ca, *cb;
  render(s, &p, 1, &sa, &ca);
  p.no_light_sampling = 1;
  p.spp_per_pass = bsdf_spp;
  render(s, &p, 1, &sb, &cb);
  mean_rect(sa, ca, size, 0, 0, size, size, nee);
  mean_rect(sb, cb, size, 0, 0, size, size, bsdf);
  free(sa);
  free(sb);
  free(ca);
  free(cb);
}

/* A floor under each kind of area light and the sun. The BSDF-only
 * estimate of a small light is the noisy one: with 2048 samples its mean
 * strayed up to 2.2 % from one seed to the next, so it gets 8192, which
 * puts the 2 % tolerance past three standard deviations. */
static void nee_vs_bsdf(const char *light, int spp, double tol) {
  char doc[1536];
  snprintf(doc, sizeof(doc),
           "{\"camera\": {\"center\": [0,4,6], \"look_at\": [0,0,0]}, "
           "\"environment\": {\"type\": \"none\"}, \"shapes\": [{\"id\": "
           "\"floor\", \"type\": \"quad\", \"properties\": {\"corner\": "
           "[-5,0,-5], \"u\": [0,0,10], \"v\": [10,0,0]}}, {\"id\": \"ball\", "
           "\"type\": \"sphere\", \"properties\": {\"center\": [0,1,0], "
           "\"radius\": 1, \"material\": {\"type\": \"plastic\", \"albedo\": "
           "[0.8,0.3,0.2]}}}], \"lights\": [%s]}",
           light);
  atl_render_scene_t *s = load_str(doc);
  double ma[3], mb[3];
  nee_vs_bsdf_means(s, 16, spp, 8 * spp, 3, ma, mb);
  for (int c = 0; c < 3; c++)
    cr_assert(fabs(ma[c] / mb[c] - 1) < tol, "%s: channel %d: %f vs %f", light,
              c, ma[c], mb[c]);
  atl_render_scene_free(s);
}

Test(render_light, nee_agrees_with_bsdf_sampling, .timeout = 120) {
  nee_vs_bsdf("{\"id\": \"l\", \"type\": \"area_quad\", \"properties\": "
              "{\"corner\": [-2,4,-2], \"u\": [4,0,0], \"v\": [0,0,4], "
              "\"emission\": [2,2,2]}}",
              1024, 0.02);
  nee_vs_bsdf("{\"id\": \"l\", \"type\": \"area_disc\", \"properties\": "
              "{\"center\": [1,4,0], \"normal\": [0,-1,0], \"radius\": 2.5, "
              "\"emission\": [2,2,2]}}",
              1024, 0.02);
  nee_vs_bsdf("{\"id\": \"l\", \"type\": \"area_sphere\", \"properties\": "
              "{\"center\": [2,4,1], \"radius\": 1.5, \"emission\": [2,2,2]}}",
              1024, 0.02);
  /* Two panels: each lane of a packet picks its own. */
  nee_vs_bsdf("{\"id\": \"l\", \"type\": \"area_quad\", \"properties\": "
              "{\"corner\": [-2,4,-2], \"u\": [2,0,0], \"v\": [0,0,4], "
              "\"emission\": [3,1,1]}}, {\"id\": \"m\", \"type\": "
              "\"area_quad\", \"properties\": {\"corner\": [1,3,-1], \"u\": "
              "[0,0,2], \"v\": [2,0,0], \"emission\": [1,1,4]}}",
              4096, 0.02);
  nee_vs_bsdf("{\"id\": \"l\", \"type\": \"directional\", \"properties\": "
              "{\"direction\": [-1,-2,-1], \"angular_diameter\": 30, "
              "\"emission\": [2,2,2]}}",
              1024, 0.02);
}

/* The issue's own check: the Cornell box (diffuse walls, a mirror and a
 * glass ball, a small panel light) converges to the same mean radiance
 * with NEE+MIS and with BSDF sampling alone, within 1 %. At 48 x 48 and
 * 1024 samples the BSDF-only mean stays within 0.4 % of the other over
 * seeds. */
Test(render_light, cornell_nee_agrees_with_bsdf_sampling, .timeout = 120) {
  atl_render_scene_t *s = load_file("scenes/cornell.json");
  double ma[3], mb[3];
  nee_vs_bsdf_means(s, 48, 256, 1024, 5, ma, mb);
  for (int c = 0; c < 3; c++)
    cr_assert(fabs(ma[c] / mb[c] - 1) < 0.01, "channel %d: %f vs %f", c, ma[c],
              mb[c]);
  atl_render_scene_free(s);
}

/* The image is the same whatever the tiles and passes: the packets of
 * paths the renderer traces together differ, their pixels do not. */
static void same_whatever_the_split(const char *scene) {
  atl_render_scene_t *s = load_file(scene);
  atl_render_params_t p = {
      .width = 24, .height = 20, .spp_per_pass = 4, .max_depth = 5, .seed = 42};
  float *a, *b = calloc(24 * 20 * 3, sizeof(float));
  uint32_t *ca, *cb = calloc(24 * 20, sizeof(uint32_t));
  render(s, &p, 2, &a, &ca);
  /* Four uneven tiles, in reverse order, each with its two passes. */
  int tiles[4][4] = {
      {13, 7, 24, 20}, {0, 7, 13, 20}, {13, 0, 24, 7}, {0, 0, 13, 7}};
  for (int t = 0; t < 4; t++)
    for (int pass = 0; pass < 2; pass++)
      atl_render_tile(s, &p, tiles[t][0], tiles[t][1], tiles[t][2], tiles[t][3],
                      pass, b, cb);
  cr_assert_eq(memcmp(a, b, 24 * 20 * 3 * sizeof(float)), 0);
  cr_assert_eq(memcmp(ca, cb, 24 * 20 * sizeof(uint32_t)), 0);
  /* The same 8 samples as 8 passes of 1. */
  memset(b, 0, 24 * 20 * 3 * sizeof(float));
  memset(cb, 0, 24 * 20 * sizeof(uint32_t));
  p.spp_per_pass = 1;
  for (int pass = 0; pass < 8; pass++)
    atl_render_tile(s, &p, 0, 0, 24, 20, pass, b, cb);
  cr_assert_eq(memcmp(a, b, 24 * 20 * 3 * sizeof(float)), 0);
  /* The same 8 samples in growing ranges (1, 1, 2, 4), as the farm runs
   * its passes. */
  memset(b, 0, 24 * 20 * 3 * sizeof(float));
  memset(cb, 0, 24 * 20 * sizeof(uint32_t));
  static const int range[4][2] = {{0, 1}, {1, 1}, {2, 2}, {4, 4}};
  for (int r = 0; r < 4; r++)
    atl_render_tile_samples(s, &p, 0, 0, 24, 20, (uint64_t)range[r][0],
                            range[r][1], b, cb);
  cr_assert_eq(memcmp(a, b, 24 * 20 * 3 * sizeof(float)), 0);
  cr_assert_eq(memcmp(ca, cb, 24 * 20 * sizeof(uint32_t)), 0);
  /* Another seed gives another picture. */
  free(b);
  free(cb);
  p.seed = 43;
  p.spp_per_pass = 8;
  render(s, &p, 1, &b, &cb);
  cr_assert_neq(memcmp(a, b, 24 * 20 * 3 * sizeof(float)), 0);
  atl_render_scene_free(s);
  free(a);
  free(b);
  free(ca);
  free(cb);
}

Test(render_image, deterministic_whatever_the_split) {
  same_whatever_the_split("scenes/cornell.json");
  /* A BVH of several nodes, which packets traverse in their own order;
   * the sky, metal, glass, a cone and a cylinder. */
  same_whatever_the_split("scenes/snowman.json");
  /* Every shape, material and light kind, the lens, the lane-by-lane
   * primitives and lights. */
  same_whatever_the_split("scenes/every-kind.json");
}

Test(render_image, cornell_red_wall_on_the_left) {
  atl_render_scene_t *s = load_file("scenes/cornell.json");
  atl_render_params_t p = {
      .width = 32, .height = 32, .spp_per_pass = 8, .max_depth = 5, .seed = 1};
  float *sum;
  uint32_t *count;
  render(s, &p, 1, &sum, &count);
  double l[3], r[3];
  mean_rect(sum, count, 32, 0, 8, 6, 24, l);
  mean_rect(sum, count, 32, 26, 8, 32, 24, r);
  cr_assert_gt(l[0], 2 * l[1], "left %f %f %f", l[0], l[1], l[2]);
  cr_assert_gt(r[1], 2 * r[0], "right %f %f %f", r[0], r[1], r[2]);
  cr_assert_gt(l[0] / l[1], r[0] / r[1]);
  atl_render_scene_free(s);
  free(sum);
  free(count);
}

/* The empty Cornell box, purely diffuse, against Blender Cycles (max
 * bounces 4 = our max depth 5): each channel of each of 4 x 4 regions
 * within 1 %, the worst here 0.28 %.
 *
 * The reference is Cycles with the light found by BSDF sampling alone
 * (bench/cycles-bsdf-reference.py, 4096 spp, kept at 100 x 100: each of
 * its pixels is the mean of 4 x 4 of the 400 x 400 render). Cycles'
 * default, with the mesh light sampled, is up to 1.3 % darker in the
 * regions near the light's plane (the ceiling's corners, the top of the
 * walls) with any seed, while our tracer, with next-event estimation and
 * with BSDF sampling alone, agrees with the BSDF-only image to 0.2 %
 * there: that 1 % is Cycles' light sampling, not the light transport
 * (bench/README.md, render-quality). */
Test(render_image, cornell_empty_matches_cycles, .timeout = 60) {
  char path[1024];
  const char *src = getenv("ATL_TEST_SRCDIR");
  snprintf(path, sizeof(path),
           "%s/tests/data/cycles_cornell_empty_bsdf_4096.pfm",
           src ? src : ATL_TEST_SRCDIR);
  float *ref;
  int rw, rh;
  cr_assert_eq(atl_render_read_pfm(path, &ref, &rw, &rh), 0);
  cr_assert_eq(rw, 100);
  cr_assert_eq(rh, 100);
  atl_render_scene_t *s = load_file("scenes/cornell-empty.json");
  atl_render_params_t p = {.width = 64,
                           .height = 64,
                           .spp_per_pass = 384,
                           .max_depth = 5,
                           .seed = 9};
  float *sum;
  uint32_t *count;
  render(s, &p, 1, &sum, &count);
  double worst = 0;
  for (int ry = 0; ry < 4; ry++)
    for (int rx = 0; rx < 4; rx++) {
      double m[3], want[3] = {0, 0, 0};
      mean_rect(sum, count, 64, rx * 16, ry * 16, rx * 16 + 16, ry * 16 + 16,
                m);
      for (int y = ry * 25; y < ry * 25 + 25; y++)
        for (int x = rx * 25; x < rx * 25 + 25; x++)
          for (int c = 0; c < 3; c++)
            want[c] += ref[(y * 100 + x) * 3 + c] / 625.0;
      for (int c = 0; c < 3; c++) {
        double dev = fabs(m[c] / want[c] - 1);
        worst = dev > worst ? dev : worst;
        cr_expect(dev < 0.01, "region (%d,%d) channel %d: %f, Cycles %f", rx,
                  ry, c, m[c], want[c]);
      }
    }
  cr_log_info("the worst region is %.2f %% from Cycles'", worst * 100);
  atl_render_scene_free(s);
  free(sum);
  free(count);
  free(ref);
}

/* A scene with a glass ring and a metal arc loads, and renders finite,
 * lit pixels where the torus is. */
Test(render_image, torus_scene_renders) {
  static const char *camera = "{\"center\": [0, 3, 6], \"look_at\": [0, "
                              "0.5, 0], \"vfov\": 40}";
  static const char *floor_ = "{\"id\": \"floor\", \"type\": \"plane\", "
                              "\"properties\": {\"point\": [0, 0, 0], "
                              "\"normal\": [0, 1, 0]}}";
  static const char *ring =
      "{\"center\": [0, 0.5, 0], \"axis\": [0.2, 1, 0.1], \"major_radius\": "
      "1.2, \"minor_radius\": 0.4, \"material\": {\"type\": "
      "\"dielectric\"}}";
  static const char *smile =
      "{\"center\": [0, 1.5, 1], \"axis\": [0, 0, 1], \"major_radius\": 0.5, "
      "\"minor_radius\": 0.08, \"sweep_degrees\": 160, \"start_degrees\": "
      "190, \"material\": {\"type\": \"metal\", \"fuzz\": 0.2}}";
  static const char *light = "{\"corner\": [-1, 4, -1], \"u\": [2, 0, 0], "
                             "\"v\": [0, 0, 2], \"emission\": [5, 5, 5]}";
  char doc[2048];
  snprintf(doc, sizeof(doc),
           "{\"camera\": %s, \"shapes\": [%s, {\"id\": \"ring\", "
           "\"type\": \"torus\", \"properties\": %s}, {\"id\": "
           "\"smile\", \"type\": \"torus\", \"properties\": %s}], "
           "\"lights\": [{\"id\": \"l\", \"type\": \"area_quad\", "
           "\"properties\": %s}]}",
           camera, floor_, ring, smile, light);
  atl_render_scene_t *s = load_str(doc);
  atl_render_scene_info_t info;
  atl_render_scene_info(s, &info);
  cr_assert_eq(info.shape_count, 3);
  cr_assert_eq(info.primitive_count, 6); /* + 2 end caps + the light */
  atl_render_params_t p = {
      .width = 24, .height = 24, .spp_per_pass = 16, .max_depth = 8, .seed = 3};
  float *sum;
  uint32_t *count;
  render(s, &p, 1, &sum, &count);
  for (int i = 0; i < 24 * 24 * 3; i++)
    cr_assert(isfinite(sum[i]) && sum[i] >= 0, "value %d = %f", i, sum[i]);
  /* The middle of the picture is the ring's near side, lit. */
  double m[3];
  mean_rect(sum, count, 24, 9, 13, 15, 16, m);
  cr_assert_gt(m[0] + m[1] + m[2], 0.01, "%f %f %f", m[0], m[1], m[2]);
  atl_render_scene_free(s);
  free(sum);
  free(count);
  char *e = load_error("{\"shapes\": [{\"id\": \"r\", \"type\": "
                       "\"torus\", \"properties\": {\"center\": [0,0,0], "
                       "\"major_radius\": 1, \"minor_radius\": 1}}]}");
  cr_assert(strstr(e, "'r'") && strstr(e, "minor_radius"), "%s", e);
  free(e);
}

Test(render_image, resolve_and_pfm) {
  float sum[6] = {0, 2, 1, 4, 16, 100};
  uint32_t count[2] = {2, 4};
  uint8_t rgb[6];
  atl_render_resolve(sum, count, 2, 1, 0, rgb);
  cr_assert_eq(rgb[0], 0);
  cr_assert_eq(rgb[1], 255);
  cr_assert_eq(rgb[2], 188); /* 0.5 in sRGB */
  cr_assert_eq(rgb[3], 255);
  atl_render_resolve(sum, count, 2, 1, -1, rgb);
  cr_assert_eq(rgb[1], 188);
  char path[] = "/tmp/test_render_XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  float s2[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  uint32_t c2[4] = {1, 1, 1, 2};
  cr_assert_eq(atl_render_write_pfm(path, s2, c2, 2, 2), 0);
  float *back;
  int w, h;
  cr_assert_eq(atl_render_read_pfm(path, &back, &w, &h), 0);
  unlink(path);
  cr_assert_eq(w, 2);
  cr_assert_eq(h, 2);
  for (int i = 0; i < 9; i++)
    cr_assert_float_eq(back[i], s2[i], 1e-6);
  cr_assert_float_eq(back[9], 5, 1e-6);
  free(back);
}
