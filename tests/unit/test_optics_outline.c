/* Objects' outlines (optics/outline.h): every class of Ray Optics
 * Simulation's object-type-defaults.json gets a scene, and its outline's
 * edges are checked against the geometry worked out by hand; then every
 * scene of the scene tests is outlined, and its closed outlines must
 * chain. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <glob.h>
#include <math.h>
#include <string.h>

#include "geom.h"
#include "optics.h"
#include "outline.h"
#include "test_data.h"

#define PI 3.14159265358979323846

static atl_op_scene *scene;
static atl_op_outline ol;

static void teardown(void) {
  atl__op_outline_free(&ol);
  if (scene)
    atl__op_scene_free(scene);
  scene = NULL;
}

TestSuite(optics_outline, .fini = teardown);

/* Loads a scene of the one object obj (JSON text) and outlines it. */
static void outline_of(const char *obj) {
  char *text = NULL, *err = NULL;
  cr_assert(asprintf(&text, "{\"version\": 5, \"objs\": [%s]}", obj) > 0);
  json_object *doc = json_tokener_parse(text);
  cr_assert_not_null(doc, "bad test JSON: %s", text);
  free(text);
  int rc = atl__op_scene_load(doc, &scene, &err);
  json_object_put(doc);
  cr_assert_eq(rc, 0, "load: %s", err ? err : "?");
  cr_assert_eq(scene->nobjs, 1);
  memset(&ol, 0, sizeof(ol));
  cr_assert_eq(atl__op_outline(scene->objs[0], &ol), 0);
}

static void expect_pt(atl_op_pt p, double x, double y, double tol) {
  cr_expect(fabs(p.x - x) <= tol && fabs(p.y - y) <= tol,
            "(%.12g, %.12g) is not (%.12g, %.12g)", p.x, p.y, x, y);
}

/* The edges' kinds, as a string of L, A and C. */
static void expect_kinds(const char *kinds) {
  char got[64] = "";
  for (int i = 0; i < ol.n && i < 63; i++)
    got[i] = ol.edges[i].kind == ATL_OP_EDGE_LINE  ? 'L'
             : ol.edges[i].kind == ATL_OP_EDGE_ARC ? 'A'
                                                   : 'C';
  cr_expect_str_eq(got, kinds);
}

/* A closed outline chains exactly: each p2 is the next p1, and a curve's
 * samples start and end at its ends. */
static void expect_chain(void) {
  cr_expect(ol.closed);
  for (int i = 0; i < ol.n; i++) {
    const atl_op_edge *e = &ol.edges[i], *f = &ol.edges[(i + 1) % ol.n];
    cr_expect(e->p2.x == f->p1.x && e->p2.y == f->p1.y, "edge %d", i);
    if (e->kind == ATL_OP_EDGE_CURVE) {
      cr_expect(e->pts[0].x == e->p1.x && e->pts[0].y == e->p1.y);
      cr_expect(e->pts[e->npts - 1].x == e->p2.x &&
                e->pts[e->npts - 1].y == e->p2.y);
    }
  }
}

/* One line edge a-b, not closed. */
static void expect_line(double ax, double ay, double bx, double by) {
  expect_kinds("L");
  expect_pt(ol.edges[0].p1, ax, ay, 0);
  expect_pt(ol.edges[0].p2, bx, by, 0);
  cr_expect(!ol.closed && !ol.half_plane);
}

#define P(x, y) "{\"x\": " #x ", \"y\": " #y "}"

Test(optics_outline, line_objects) {
  static const char *const types[] = {"Mirror",
                                      "Blocker",
                                      "Detector",
                                      "IdealLens",
                                      "IdealMirror",
                                      "BeamSplitter",
                                      "DiffractionGrating",
                                      "CustomSurface",
                                      "SingleRay",
                                      "AngleSource",
                                      "Beam"};
  for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
    char obj[200];
    snprintf(
        obj, sizeof(obj),
        "{\"type\": \"%s\", \"p1\": " P(10, 20) ", \"p2\": " P(110, -5) "}",
        types[i]);
    outline_of(obj);
    cr_expect_eq(ol.n, 1, "%s", types[i]);
    expect_line(10, 20, 110, -5);
    teardown();
  }
}

Test(optics_outline, point_source_and_drawing_have_none) {
  outline_of("{\"type\": \"PointSource\", \"x\": 5, \"y\": 6}");
  cr_expect_eq(ol.n, 0);
  teardown();
  outline_of("{\"type\": \"Drawing\"}");
  cr_expect_eq(ol.n, 0);
}

Test(optics_outline, line_arrow_and_crop_box) {
  outline_of(
      "{\"type\": \"LineArrow\", \"p1\": " P(1, 2) ", \"p2\": " P(3, 4) "}");
  expect_line(1, 2, 3, 4);
  teardown();
  outline_of(
      "{\"type\": \"CropBox\", \"p1\": " P(0, 0) ", \"p4\": " P(200, 100) "}");
  expect_kinds("LLLL");
  cr_expect(!ol.closed);
  expect_pt(ol.edges[0].p2, 200, 0, 0);
  expect_pt(ol.edges[1].p2, 200, 100, 0);
  expect_pt(ol.edges[2].p2, 0, 100, 0);
  expect_pt(ol.edges[3].p2, 0, 0, 0);
}

Test(optics_outline, aperture_has_its_two_parts) {
  outline_of("{\"type\": \"Aperture\", \"p1\": " P(0, 0) ", \"p2\": " P(
      0, 100) ", \"p3\": " P(0, 40) ", \"p4\": " P(0, 60) "}");
  expect_kinds("LL");
  expect_pt(ol.edges[0].p1, 0, 0, 0);
  expect_pt(ol.edges[0].p2, 0, 40, 0);
  expect_pt(ol.edges[1].p1, 0, 100, 0);
  expect_pt(ol.edges[1].p2, 0, 60, 0);
  cr_expect(!ol.closed);
}

Test(optics_outline, glass_triangle) {
  outline_of("{\"type\": \"Glass\", \"path\": [{\"x\": 200, \"y\": 50, "
             "\"arc\": false}, {\"x\": 250, \"y\": 100, \"arc\": false}, "
             "{\"x\": 150, \"y\": 100, \"arc\": false}]}");
  expect_kinds("LLL");
  expect_chain();
  expect_pt(ol.edges[0].p1, 200, 50, 0);
  expect_pt(ol.edges[1].p1, 250, 100, 0);
  expect_pt(ol.edges[2].p1, 150, 100, 0);
}

/* The arc through (100, 0), (120, 50), (100, 100): its centre is on
 * y = 50 at x with (100 - x)^2 + 50^2 = (120 - x)^2, so x = 47.5 and
 * r = 72.5; it turns by 2 atan(50 / 52.5) through angle 0. */
Test(optics_outline, glass_with_arc) {
  outline_of("{\"type\": \"Glass\", \"path\": [" P(0, 0) ", " P(
      100,
      0) ", {\"x\": 120, \"y\": 50, \"arc\": true}, " P(100,
                                                        100) ", " P(0,
                                                                    100) "]}");
  expect_kinds("LALL");
  expect_chain();
  const atl_op_edge *a = &ol.edges[1];
  expect_pt(a->c, 47.5, 50, 1e-9);
  cr_expect_float_eq(a->r, 72.5, 1e-9);
  cr_expect_float_eq(a->da, 2 * atan(50 / 52.5), 1e-12);
  expect_pt(atl__op_edge_point(a, 0.5), 120, 50, 1e-9);
  expect_pt(atl__op_edge_point(a, 0), 100, 0, 0);
  expect_pt(atl__op_edge_point(a, 1), 100, 100, 0);
}

/* The lens of test_optics_glass: radii 200 and -200, so two arcs of
 * radius 200 whose middles lie between their ends. */
Test(optics_outline, spherical_lens) {
  outline_of(
      "{\"type\": \"SphericalLens\", \"p1\": " P(180, 220) ", \"p2\": " P(
          220, 380) ", \"params\": {\"d\": 60, \"r1\": 200, \"r2\": -200}}");
  expect_kinds("LALA");
  expect_chain();
  for (int i = 1; i < 4; i += 2) {
    const atl_op_edge *e = &ol.edges[i];
    cr_expect_float_eq(e->r, 200, 1e-9);
    cr_expect(fabs(e->da) < PI);
    atl_op_pt m = atl__op_edge_point(e, 0.5);
    cr_expect_float_eq(sqrt(atl__op_dist2(m, e->c)), 200, 1e-9);
    /* Between the ends: on the chord's perpendicular bisector. */
    cr_expect_float_eq(atl__op_dist2(m, e->p1), atl__op_dist2(m, e->p2), 1e-6);
  }
}

static void expect_circle(atl_op_pt c, double r) {
  expect_kinds("A");
  const atl_op_edge *e = &ol.edges[0];
  cr_expect(ol.closed);
  cr_expect_float_eq(fabs(e->da), 2 * PI, 1e-12);
  cr_expect_float_eq(e->r, r, 1e-12);
  expect_pt(e->c, c.x, c.y, 0);
  cr_expect(e->p1.x == e->p2.x && e->p1.y == e->p2.y);
  /* Halfway round: the point opposite p1. */
  expect_pt(atl__op_edge_point(e, 0.5), 2 * c.x - e->p1.x, 2 * c.y - e->p1.y,
            1e-9);
}

Test(optics_outline, circles) {
  static const char *const types[] = {"CircleGlass", "CircleBlocker",
                                      "CircleGrinGlass"};
  for (int i = 0; i < 3; i++) {
    char obj[200];
    snprintf(
        obj, sizeof(obj),
        "{\"type\": \"%s\", \"p1\": " P(100, 100) ", \"p2\": " P(130, 140) "}",
        types[i]);
    outline_of(obj);
    expect_circle(atl__op_pt(100, 100), 50);
    expect_pt(ol.edges[0].p1, 130, 140, 0);
    teardown();
  }
}

Test(optics_outline, plane_glass_is_a_half_plane) {
  outline_of(
      "{\"type\": \"PlaneGlass\", \"p1\": " P(0, 0) ", \"p2\": " P(100, 0) "}");
  expect_kinds("L");
  cr_expect(ol.half_plane);
  cr_expect(!ol.closed);
}

/* ArcMirror, ConcaveDiffractionGrating and CustomArcSurface from (0, 0)
 * through (50, -50) to (100, 0): the half circle about (50, 0), radius 50,
 * turning by pi through the top of the picture. */
/* Outlines the three-point object of type type from (0, 0) through
 * (50, y3) to (100, 0). */
static void three_point(const char *type, int y3) {
  char obj[200];
  snprintf(obj, sizeof(obj),
           "{\"type\": \"%s\", \"p1\": " P(0, 0) ", \"p2\": " P(
               100, 0) ", \"p3\": {\"x\": 50, \"y\": %d}}",
           type, y3);
  outline_of(obj);
}

Test(optics_outline, three_point_arcs) {
  static const char *const types[] = {"ArcMirror", "ConcaveDiffractionGrating",
                                      "CustomArcSurface"};
  for (int i = 0; i < 3; i++) {
    three_point(types[i], -50);
    expect_kinds("A");
    const atl_op_edge *e = &ol.edges[0];
    expect_pt(e->c, 50, 0, 1e-9);
    cr_expect_float_eq(e->r, 50, 1e-9);
    cr_expect_float_eq(fabs(e->da), PI, 1e-9);
    expect_pt(atl__op_edge_point(e, 0.5), 50, -50, 1e-9);
    expect_pt(atl__op_edge_point(e, 0.25), 50 - 50 * cos(PI / 4),
              -50 * sin(PI / 4), 1e-9);
    cr_expect(!ol.closed);
    teardown();
    /* The other way round, through the bottom. */
    three_point(types[i], 50);
    expect_pt(atl__op_edge_point(&ol.edges[0], 0.5), 50, 50, 1e-9);
    teardown();
    /* Collinear: the segment. */
    three_point(types[i], 0);
    expect_line(0, 0, 100, 0);
    teardown();
  }
}

/* The parabola with vertex (50, -25) through (0, 0) and (100, 0):
 * y = -25 + 0.01 (x - 50)^2. */
Test(optics_outline, parabolic_mirror) {
  outline_of("{\"type\": \"ParabolicMirror\", \"p1\": " P(0, 0) ", \"p2\": " P(
      100, 0) ", \"p3\": " P(50, -25) "}");
  expect_kinds("C");
  const atl_op_edge *e = &ol.edges[0];
  cr_expect_gt(e->npts, 100);
  expect_pt(e->p1, 0, 0, 1e-9);
  expect_pt(e->p2, 100, 0, 1e-9);
  for (int i = 0; i < e->npts; i++) {
    double x = e->pts[i].x;
    cr_expect_float_eq(e->pts[i].y, -25 + 0.01 * (x - 50) * (x - 50), 1e-9);
  }
}

static double near_polyline(const atl_op_edge *e, atl_op_pt p) {
  double best = INFINITY;
  for (int i = 0; i + 1 < e->npts; i++) {
    atl_op_pt a = e->pts[i], b = e->pts[i + 1];
    double dx = b.x - a.x, dy = b.y - a.y, l2 = dx * dx + dy * dy;
    double t = l2 > 0 ? ((p.x - a.x) * dx + (p.y - a.y) * dy) / l2 : 0;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    best = fmin(best,
                sqrt(atl__op_dist2(p, atl__op_pt(a.x + t * dx, a.y + t * dy))));
  }
  return best;
}

#define LENS_POINTS                                                            \
  "[{\"a1\": " P(0, 0) ", \"c1\": " P(30, -40) ", \"c2\": " P(                 \
      70, -40) "}, "                                                           \
               "{\"a1\": " P(100, 0) ", \"c1\": " P(70, 40) ", \"c2\": " P(    \
                   30, 40) "}]"

/* Two Bezier curves: each one curve edge; the first one's t = 0.5 point is
 * (0.375 (30 + 70) + 0.125 100, 0.75 (-40)) = (50, -30). */
Test(optics_outline, bezier_glasses) {
  static const char *const types[] = {"CurveGlass", "CurveGrinGlass"};
  for (int i = 0; i < 2; i++) {
    char obj[400];
    snprintf(obj, sizeof(obj), "{\"type\": \"%s\", \"points\": %s}", types[i],
             LENS_POINTS);
    outline_of(obj);
    expect_kinds("CC");
    expect_chain();
    expect_pt(ol.edges[0].p1, 0, 0, 0);
    expect_pt(ol.edges[0].p2, 100, 0, 0);
    cr_expect_lt(near_polyline(&ol.edges[0], atl__op_pt(50, -30)), 1e-6);
    /* Fine, but not without bound: a flatness of 1e-8 of the curve's
     * size needs some hundreds of samples here. */
    cr_expect(ol.edges[0].npts > 100 && ol.edges[0].npts < 20000, "%d",
              ol.edges[0].npts);
    cr_expect_lt(near_polyline(&ol.edges[1], atl__op_pt(50, 30)), 1e-6);
    teardown();
  }
}

/* CustomGlass between y = 0 and the half ellipse over p1-p2: one curve
 * along each, from p1 to p2 and back. */
Test(optics_outline, custom_glass) {
  outline_of("{\"type\": \"CustomGlass\", \"p1\": " P(0, 0) ", \"p2\": " P(
      100, 0) "}");
  expect_kinds("CC");
  expect_chain();
  expect_pt(ol.edges[0].p1, 0, 0, 0);
  expect_pt(ol.edges[0].p2, 100, 0, 1e-9);
  /* f = 0: the first curve lies on y = 0; g's top is 25 above (-y). */
  for (int i = 0; i < ol.edges[0].npts; i++)
    cr_expect_float_eq(ol.edges[0].pts[i].y, 0, 1e-9);
  double top = 0;
  for (int i = 0; i < ol.edges[1].npts; i++)
    top = fmin(top, ol.edges[1].pts[i].y);
  cr_expect_float_eq(top, -25, 0.01);
}

Test(optics_outline, custom_mirror) {
  outline_of("{\"type\": \"CustomMirror\", \"p1\": " P(0, 0) ", \"p2\": " P(
      100, 0) "}");
  expect_kinds("C");
  cr_expect(!ol.closed);
  expect_pt(ol.edges[0].p1, 0, 0, 1e-9);
  expect_pt(ol.edges[0].p2, 100, 0, 1e-9);
}

/* The parametric ones' default: the circle of radius 50 about the origin
 * sampled every 0.01 in t, one piece, so one curve edge; closed for the
 * glasses only. */
Test(optics_outline, parametric_defaults) {
  static const char *const types[] = {"ParamGlass", "ParamGrinGlass",
                                      "ParamMirror", "CustomParamSurface"};
  for (int i = 0; i < 4; i++) {
    char obj[100];
    snprintf(obj, sizeof(obj), "{\"type\": \"%s\"}", types[i]);
    outline_of(obj);
    expect_kinds("C");
    const atl_op_edge *e = &ol.edges[0];
    /* t = 0, 0.01, ... 6.28, then 2 pi: 630 steps and the end. */
    cr_expect_eq(e->npts, 630, "%s: %d", types[i], e->npts);
    for (int k = 0; k < e->npts; k++)
      cr_expect_float_eq(sqrt(atl__op_dist2(e->pts[k], atl__op_pt(0, 0))), 50,
                         1e-9);
    if (i < 2)
      expect_chain();
    else
      cr_expect(!ol.closed);
    teardown();
  }
}

/* Two pieces, the upper and lower halves: two curve edges, no joint. */
Test(optics_outline, parametric_pieces) {
  static const char *const types[] = {"ParamGlass", "ParamGrinGlass"};
  for (int i = 0; i < 2; i++) {
    char obj[600];
    snprintf(obj, sizeof(obj),
             "{\"type\": \"%s\", \"pieces\": [{\"eqnX\": \"50\\\\cos(t)\", "
             "\"eqnY\": \"50\\\\sin(t)\", \"tMin\": 0, \"tMax\": "
             "3.141592653589793, \"tStep\": 0.1}, {\"eqnX\": "
             "\"50\\\\cos(t)\", \"eqnY\": \"50\\\\sin(t)\", \"tMin\": "
             "3.141592653589793, \"tMax\": 6.283185307179586, \"tStep\": "
             "0.1}]}",
             types[i]);
    outline_of(obj);
    expect_kinds("CC");
    expect_chain();
    expect_pt(ol.edges[0].p2, -50, 0, 1e-9);
    teardown();
  }
}

Test(optics_outline, grin_glass_is_straight) {
  outline_of("{\"type\": \"GrinGlass\", \"path\": [" P(
      0, 0) ", {\"x\": 50, "
            "\"y\": -10, \"arc\": true}, " P(100, 0) ", " P(50, 80) "]}");
  expect_kinds("LLLL");
  expect_chain();
}

Test(optics_outline, edge_point_on_curves) {
  atl_op_pt pts[3] = {{0, 0}, {10, 0}, {10, 20}};
  atl_op_edge e = {.kind = ATL_OP_EDGE_CURVE,
                   .p1 = {0, 0},
                   .p2 = {10, 20},
                   .pts = pts,
                   .npts = 3};
  expect_pt(atl__op_edge_point(&e, 0.25), 5, 0, 1e-12);
  expect_pt(atl__op_edge_point(&e, 0.5), 10, 0, 1e-12);
  expect_pt(atl__op_edge_point(&e, 0.75), 10, 10, 1e-12);
  expect_pt(atl__op_edge_point(&e, 1), 10, 20, 0);
}

/* Every scene of the scene tests: each object that loads outlines, with
 * finite ends, and every closed outline chains. */
Test(optics_outline, every_test_scene) {
  glob_t gl;
  char pat[4096];
  const char *src = getenv("ATL_TEST_SRCDIR");
  snprintf(pat, sizeof(pat), "%s/tests/data/ray-optics-scenes/*/*/*.json",
           src ? src : ATL_TEST_SRCDIR);
  cr_assert_eq(glob(pat, 0, NULL, &gl), 0);
  int loaded = 0, closed = 0, edges = 0;
  for (size_t i = 0; i < gl.gl_pathc; i++) {
    json_object *doc = json_object_from_file(gl.gl_pathv[i]);
    char *err = NULL;
    if (!doc || atl__op_scene_load(doc, &scene, &err) != 0) {
      free(err);
      json_object_put(doc);
      continue;
    }
    json_object_put(doc);
    loaded++;
    for (int k = 0; k < scene->nobjs; k++) {
      memset(&ol, 0, sizeof(ol));
      cr_assert_eq(atl__op_outline(scene->objs[k], &ol), 0);
      for (int j = 0; j < ol.n; j++)
        cr_expect(isfinite(ol.edges[j].p1.x) && isfinite(ol.edges[j].p2.y),
                  "%s", gl.gl_pathv[i]);
      if (ol.closed) {
        expect_chain();
        closed++;
      }
      edges += ol.n;
      atl__op_outline_free(&ol);
    }
    atl__op_scene_free(scene);
    scene = NULL;
  }
  globfree(&gl);
  cr_expect_gt(loaded, 100);
  cr_expect_gt(closed, 50);
  cr_expect_gt(edges, 300);
}
