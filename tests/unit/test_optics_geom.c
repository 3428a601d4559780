/* The optics plugin's geometry (plugins/optics/opx_geom.h): names and
 * families, edges measured along themselves, labels facing the picture's
 * directions (y down), exact areas and centroids with arcs, containment,
 * the edges through a point and the angle to an edge's normal. Expected
 * values are worked out by hand in the comments. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "geom.h"
#include "optics.h"
#include "opx_geom.h"

#define PI 3.14159265358979323846

static atl_op_scene *scene;
static opx_geom_t *geom;

static void teardown(void) {
  opx_geom_free(geom);
  geom = NULL;
  if (scene)
    atl__op_scene_free(scene);
  scene = NULL;
}

TestSuite(optics_geom, .fini = teardown);

/* Loads the scene document text and builds its geometry with the names
 * of names (a JSON array, or NULL). */
static void build_doc(const char *text, const char *names) {
  char *err = NULL;
  json_object *doc = json_tokener_parse(text);
  cr_assert_not_null(doc, "bad test JSON: %s", text);
  int rc = atl__op_scene_load(doc, &scene, &err);
  json_object_put(doc);
  cr_assert_eq(rc, 0, "load: %s", err ? err : "?");
  json_object *nm = names ? json_tokener_parse(names) : NULL;
  cr_assert_eq(opx_geom_build(scene, nm, &geom), 0);
  json_object_put(nm);
}

/* The same for a scene of the objects objs (JSON text). */
static void build(const char *objs, const char *names) {
  char *text = NULL;
  cr_assert(asprintf(&text, "{\"version\": 5, \"objs\": [%s]}", objs) > 0);
  build_doc(text, names);
  free(text);
}

#define P(x, y) "{\"x\": " #x ", \"y\": " #y "}"
#define PRISM                                                                  \
  "{\"type\": \"Glass\", \"path\": [" P(200, 50) ", " P(250, 100) ", " P(      \
      150, 100) "], \"refIndex\": 1.5}"
#define RAY                                                                    \
  "{\"type\": \"SingleRay\", \"p1\": " P(100, 80) ", \"p2\": " P(              \
      250, 80) ", \"brightness\": 1}"

static void expect_labels(int obj, const char *const *want, int n) {
  const opx_obj_t *ob = &geom->objs[obj];
  cr_assert_eq(ob->nedges, n);
  for (int i = 0; i < n; i++)
    cr_expect_str_eq(geom->edges[ob->first_edge + i].short_label, want[i],
                     "edge %d", i);
}

/* The reference prism: area 50 * 100 / 2 = 2500, perimeter
 * 100 + 2 * 50 sqrt 2 = 241.4214, centroid the vertices' average
 * (200, 83.3333). Its labels in y-down: edge 0's middle (225, 75) is up
 * and right of the centroid at 18.4 degrees: E; edge 1's (200, 100) is
 * straight below: S; edge 2's (175, 75): W. */
Test(optics_geom, reference_prism) {
  build(PRISM ", " RAY, NULL);
  cr_assert_eq(geom->nobjs, 2);
  const opx_obj_t *g = &geom->objs[0];
  cr_expect_str_eq(g->type, "Glass");
  cr_expect_eq(g->family, OPX_GLASS);
  cr_expect_float_eq(g->ref_index, 1.5, 0);
  cr_expect_float_eq(g->area, 2500, 1e-9);
  cr_expect_float_eq(g->perimeter, 100 + 100 * sqrt(2), 1e-9);
  cr_expect_float_eq(g->perimeter, 241.4214, 1e-4);
  cr_expect_float_eq(g->centroid.x, 200, 1e-9);
  cr_expect_float_eq(g->centroid.y, 250.0 / 3, 1e-9);
  static const char *const want[] = {"E", "S", "W"};
  expect_labels(0, want, 3);
  cr_expect_str_eq(geom->edges[1].long_label, "South Edge");
  cr_expect_str_eq(g->display_name, "Glass 0");
  cr_expect_str_eq(geom->objs[1].display_name, "SingleRay 1");
  cr_expect_eq(geom->objs[1].family, OPX_SOURCE);
  cr_expect(isnan(geom->objs[1].ref_index));
}

/* --- Labels ------------------------------------------------------------- */

static void expect_card(double dx, double dy, int n, const char *s,
                        const char *l) {
  const char *gs, *gl;
  opx_cardinal(dx, dy, n, &gs, &gl);
  cr_expect_str_eq(gs, s, "(%g, %g) in %d", dx, dy, n);
  cr_expect_str_eq(gl, l, "(%g, %g) in %d", dx, dy, n);
}

/* Directions on the picture: -y is up (N). */
Test(optics_geom, cardinal_directions) {
  expect_card(1, 0, 4, "E", "East Edge");
  expect_card(0, -1, 4, "N", "North Edge");
  expect_card(0, 1, 4, "S", "South Edge");
  expect_card(-1, 0, 4, "W", "West Edge");
  /* The exact 45 degree boundary goes counterclockwise: up. */
  expect_card(1, -1, 4, "N", "North Edge");
  expect_card(1, -1, 8, "NE", "North East Edge");
  expect_card(-1, 1, 8, "SW", "South West Edge");
  /* 60 degrees up from East: sector (60 + 15) / 30 = 2 of 12, NNE. */
  expect_card(cos(PI / 3), -sin(PI / 3), 12, "NNE", "North North East Edge");
  /* 22.5 degrees down from East: (337.5 + 11.25) / 22.5 = 15.5, ESE. */
  expect_card(cos(PI / 8), sin(PI / 8), 16, "ESE", "East South East Edge");
  expect_card(cos(PI / 8), -sin(PI / 8), 16, "ENE", "East North East Edge");
}

#define SQUARE                                                                 \
  "{\"type\": \"Glass\", \"path\": [" P(0, 0) ", " P(100, 0) ", " P(           \
      100, 100) ", " P(0, 100) "]}"

/* The square (0,0)-(100,0)-(100,100)-(0,100): ray_tracing_shapely's
 * S, E, N, W in y-up is N, E, S, W on the picture. */
Test(optics_geom, square_labels_and_normals) {
  build(SQUARE, NULL);
  static const char *const want[] = {"N", "E", "S", "W"};
  expect_labels(0, want, 4);
  const opx_obj_t *g = &geom->objs[0];
  cr_expect_float_eq(g->area, 10000, 1e-9);
  cr_expect_float_eq(g->perimeter, 400, 1e-12);
  cr_expect_float_eq(g->centroid.x, 50, 1e-12);
  cr_expect_float_eq(g->centroid.y, 50, 1e-12);
  /* Outward normals: the top edge's points up (-y), the right one's +x. */
  cr_expect_float_eq(geom->edges[0].normal.x, 0, 1e-12);
  cr_expect_float_eq(geom->edges[0].normal.y, -1, 1e-12);
  cr_expect_float_eq(geom->edges[1].normal.x, 1, 1e-12);
  cr_expect_float_eq(geom->edges[3].normal.x, -1, 1e-12);
  cr_expect_float_eq(geom->edges[0].mid.x, 50, 1e-12);
  cr_expect_float_eq(geom->edges[0].mid.y, 0, 1e-12);
  cr_expect_float_eq(geom->edges[0].length, 100, 1e-12);
}

/* The same square the other way round: the normals still point out. */
Test(optics_geom, normals_either_orientation) {
  build("{\"type\": \"Glass\", \"path\": [" P(0, 0) ", " P(0, 100) ", " P(
            100, 100) ", " P(100, 0) "]}",
        NULL);
  static const char *const want[] = {"W", "S", "E", "N"};
  expect_labels(0, want, 4);
  cr_expect_float_eq(geom->edges[0].normal.x, -1, 1e-12);
  cr_expect_float_eq(geom->edges[1].normal.y, 1, 1e-12);
  cr_expect_float_eq(geom->objs[0].area, 10000, 1e-9);
}

/* The examples of ray_tracing_shapely's labelling, mirrored N <-> S. */
Test(optics_geom, labelling_examples) {
  /* Triangle (100,200),(200,200),(150,113.4): centroid (150, 171.13);
   * the base's middle is below it (S), the sides' middles at +-30 degrees
   * from the horizontal: E and W. */
  build("{\"type\": \"Glass\", \"path\": [" P(100, 200) ", " P(200, 200) ", " P(
            150, 113.4) "]}",
        NULL);
  static const char *const tri[] = {"S", "E", "W"};
  expect_labels(0, tri, 3);
  teardown();
  /* The hexagon of radius 50, vertices at 0, 60, ... 300 degrees of the
   * formula's axes: edge k's middle at 30 + 60 k degrees, which on the
   * picture is -(30 + 60 k): SE, S, SW, NW, N, NE in the 8-set. */
  char hex[600], *p = hex;
  p += sprintf(p, "{\"type\": \"Glass\", \"path\": [");
  for (int k = 0; k < 6; k++)
    p += sprintf(p, "%s{\"x\": %.17g, \"y\": %.17g}", k ? ", " : "",
                 50 * cos(k * PI / 3), 50 * sin(k * PI / 3));
  sprintf(p, "]}");
  build(hex, NULL);
  static const char *const six[] = {"SE", "S", "SW", "NW", "N", "NE"};
  expect_labels(0, six, 6);
  cr_expect_str_eq(geom->edges[4].long_label, "North Edge");
}

/* A mirror has no region: its one edge is named by its index. */
Test(optics_geom, open_objects_label_by_index) {
  build("{\"type\": \"Mirror\", \"p1\": " P(0, 0) ", \"p2\": " P(10, 0) "}",
        NULL);
  cr_expect_str_eq(geom->edges[0].short_label, "0");
  cr_expect_str_eq(geom->edges[0].long_label, "Edge 0");
  cr_expect_eq(opx_geom_edge_find(geom, 0, "0"), 0);
  cr_expect_float_eq(geom->objs[0].area, 0, 0);
  cr_expect_float_eq(geom->objs[0].centroid.x, 5, 1e-12);
  cr_expect_float_eq(geom->objs[0].perimeter, 10, 1e-12);
  /* Its normal is the left of p1 -> p2 on the picture: up. */
  cr_expect_float_eq(geom->edges[0].normal.y, -1, 1e-12);
  cr_expect(!opx_geom_contains(geom, 0, atl__op_pt(5, 1), 0));
}

Test(optics_geom, edge_find) {
  build(PRISM, NULL);
  cr_expect_eq(opx_geom_edge_find(geom, 0, "E"), 0);
  cr_expect_eq(opx_geom_edge_find(geom, 0, "s"), 1);
  cr_expect_eq(opx_geom_edge_find(geom, 0, "south edge"), 1);
  cr_expect_eq(opx_geom_edge_find(geom, 0, "West Edge"), 2);
  cr_expect_eq(opx_geom_edge_find(geom, 0, "2"), 2);
  cr_expect_eq(opx_geom_edge_find(geom, 0, "3"), -1);
  cr_expect_eq(opx_geom_edge_find(geom, 0, "N"), -1);
  cr_expect_eq(opx_geom_edge_find(geom, 0, "1x"), -1);
  cr_expect_eq(opx_geom_edge_find(geom, 1, "E"), -1);
}

/* --- Arcs: measured exactly -------------------------------------------- */

/* The square with its right side bent through (100 + b, 50): the circle
 * through (100, 0), (100 + b, 50), (100, 100) for b = +-20 has radius 72.5
 * and sees the chord under th = 2 atan(50 / 52.5); the circular segment
 * between chord and arc has area r^2 / 2 (th - sin th), added when the arc
 * bulges out, taken away when it bends in. */
static void bent_square(int b) {
  char obj[300];
  snprintf(obj, sizeof(obj),
           "{\"type\": \"Glass\", \"path\": [" P(0, 0) ", " P(
               100, 0) ", {\"x\": %d, \"y\": 50, \"arc\": "
                       "true}, " P(100, 100) ", " P(0, 100) "]}",
           100 + b);
  build(obj, NULL);
}

Test(optics_geom, arc_area_centroid_and_length) {
  double r = 72.5, th = 2 * atan(50 / 52.5);
  double seg = r * r / 2 * (th - sin(th));
  /* The segment's centroid lies on y = 50 at 4 r sin^3(th/2) /
   * (3 (th - sin th)) from the centre. */
  double dseg = 4 * r * pow(sin(th / 2), 3) / (3 * (th - sin(th)));
  for (int k = 0; k < 2; k++) {
    int b = k ? 20 : -20, s = k ? 1 : -1;
    bent_square(b);
    const opx_obj_t *g = &geom->objs[0];
    cr_assert_eq(g->nedges, 4);
    cr_expect_float_eq(g->area, 10000 + s * seg, 1e-9);
    double cx = 100 + s * (dseg - 52.5);
    cr_expect_float_eq(g->centroid.x, (10000 * 50 + s * seg * cx) / g->area,
                       1e-9);
    cr_expect_float_eq(g->centroid.y, 50, 1e-9);
    const opx_edge_t *a = &geom->edges[1];
    cr_expect_float_eq(a->length, r * th, 1e-9);
    cr_expect_float_eq(g->perimeter, 300 + r * th, 1e-9);
    /* The middle of the edge itself, not of its chord. */
    cr_expect_float_eq(a->mid.x, 100 + b, 1e-9);
    cr_expect_float_eq(a->mid.y, 50, 1e-9);
    cr_expect_float_eq(a->normal.x, 1, 1e-9);
    cr_expect_str_eq(a->short_label, "E");
    /* Inside and outside by the arc, not its chord: the arc meets y = 50
     * at 100 + b; the glass is left of it. */
    cr_expect_eq(
        opx_geom_contains(geom, 0, atl__op_pt(100 + b / 2.0, 50), 1e-6), k);
    cr_expect_eq(
        opx_geom_contains(geom, 0, atl__op_pt(100 + b * 1.05, 50), 1e-6), !k);
    cr_expect_eq(
        opx_geom_contains(geom, 0, atl__op_pt(100 + b * 0.95, 50), 1e-6), k);
    cr_expect_eq(opx_geom_contains(geom, 0, atl__op_pt(75, 50), 1e-6), 1);
    teardown();
  }
}

Test(optics_geom, circle) {
  build("{\"type\": \"CircleGlass\", \"p1\": " P(100, 200) ", \"p2\": " P(
            106, 208) ", \"refIndex\": 1.7}",
        NULL);
  const opx_obj_t *g = &geom->objs[0];
  cr_expect_float_eq(g->area, PI * 100, 1e-9);
  cr_expect_float_eq(g->perimeter, 2 * PI * 10, 1e-9);
  cr_expect_float_eq(g->centroid.x, 100, 1e-9);
  cr_expect_float_eq(g->centroid.y, 200, 1e-9);
  cr_expect_float_eq(g->ref_index, 1.7, 0);
  cr_expect_float_eq(geom->edges[0].mid.x, 94, 1e-9);
  cr_expect_float_eq(geom->edges[0].mid.y, 192, 1e-9);
  cr_expect_str_eq(geom->edges[0].short_label, "0");
  cr_expect_float_eq(g->box[0], 90, 1e-9);
  cr_expect_float_eq(g->box[3], 210, 1e-9);
  cr_expect_eq(opx_geom_contains(geom, 0, atl__op_pt(100, 200), 1e-6), 1);
  cr_expect_eq(opx_geom_contains(geom, 0, atl__op_pt(109.99, 200), 1e-3), 1);
  cr_expect_eq(opx_geom_contains(geom, 0, atl__op_pt(109.9995, 200), 1e-3), 0);
  cr_expect_eq(opx_geom_contains(geom, 0, atl__op_pt(110, 200), 0), 0);
  cr_expect_eq(opx_geom_contains(geom, 0, atl__op_pt(107.1, 207.1), 0), 0);
  cr_expect_eq(opx_geom_contains(geom, 0, atl__op_pt(107, 207), 0), 1);
}

/* The lens of test_optics_glass against a fine polygon of its outline:
 * the shoelace area and centroid of 20000 points per arc. */
Test(optics_geom, spherical_lens_numerically) {
  build("{\"type\": \"SphericalLens\", \"p1\": " P(180, 220) ", \"p2\": " P(
            220, 380) ", \"params\": {\"d\": 60, \"r1\": 200, \"r2\": -200}}",
        NULL);
  const opx_obj_t *g = &geom->objs[0];
  double a2 = 0, mx = 0, my = 0, len = 0;
  atl_op_pt prev = g->outline.edges[0].p1;
  for (int i = 0; i < g->outline.n; i++) {
    const atl_op_edge *e = &g->outline.edges[i];
    int n = e->kind == ATL_OP_EDGE_ARC ? 20000 : 1;
    for (int k = 1; k <= n; k++) {
      atl_op_pt q = atl__op_edge_point(e, (double)k / n);
      double c = prev.x * q.y - q.x * prev.y;
      a2 += c;
      mx += (prev.x + q.x) * c;
      my += (prev.y + q.y) * c;
      len += sqrt(atl__op_dist2(prev, q));
      prev = q;
    }
  }
  double area = fabs(a2 / 2);
  cr_expect_float_eq(g->area, area, area * 1e-7);
  cr_expect_float_eq(g->centroid.x, mx / (3 * a2), 1e-5);
  cr_expect_float_eq(g->centroid.y, my / (3 * a2), 1e-5);
  cr_expect_float_eq(g->perimeter, len, len * 1e-7);
  /* Symmetric about p1-p2's perpendicular bisector and its own line: the
   * centroid is the middle of p1-p2. */
  cr_expect_float_eq(g->centroid.x, 200, 1e-6);
  cr_expect_float_eq(g->centroid.y, 300, 1e-6);
}

/* ParamGlass's default circle: chords of 0.01 radians (628 of them) and
 * the last one of 2 pi - 6.28; its polygon's perimeter and area follow. */
Test(optics_geom, curve_measures) {
  build("{\"type\": \"ParamGlass\"}", NULL);
  const opx_obj_t *g = &geom->objs[0];
  double last = 2 * PI - 6.28;
  cr_expect_float_eq(g->perimeter, 628 * 100 * sin(0.005) + 100 * sin(last / 2),
                     1e-9);
  cr_expect_float_eq(g->area, 1250 * (628 * sin(0.01) + sin(last)), 1e-7);
  cr_expect_float_eq(g->centroid.x, 0, 1e-6);
  cr_expect_eq(opx_geom_contains(geom, 0, atl__op_pt(49, 0.5), 1e-6), 1);
  cr_expect_eq(opx_geom_contains(geom, 0, atl__op_pt(-49.9, 0.1), 1e-6), 1);
  cr_expect_eq(opx_geom_contains(geom, 0, atl__op_pt(50.1, 0), 1e-6), 0);
  /* Halfway along, on the other side of the circle. */
  cr_expect_float_eq(geom->edges[0].mid.x, -50, 1e-3);
}

/* --- Containment and point queries --------------------------------------- */

Test(optics_geom, contains_polygon_and_half_plane) {
  build(PRISM ", {\"type\": \"PlaneGlass\", \"p1\": " P(0, 300) ", \"p2\": " P(
            100, 300) "}",
        NULL);
  cr_expect_eq(opx_geom_contains(geom, 0, atl__op_pt(200, 80), 1e-6), 1);
  cr_expect_eq(opx_geom_contains(geom, 0, atl__op_pt(200, 100), 1e-6), 0);
  cr_expect_eq(opx_geom_contains(geom, 0, atl__op_pt(200, 99.9995), 1e-3), 0);
  cr_expect_eq(opx_geom_contains(geom, 0, atl__op_pt(200, 99.99), 1e-3), 1);
  cr_expect_eq(opx_geom_contains(geom, 0, atl__op_pt(200, 50), 0), 0);
  cr_expect_eq(opx_geom_contains(geom, 0, atl__op_pt(100, 80), 1e-6), 0);
  /* Level with the apex (200, 50), left of it: the rightward ray through
   * the vertex touches two edges there but crosses none. */
  cr_expect_eq(opx_geom_contains(geom, 0, atl__op_pt(190, 50), 1e-6), 0);
  cr_expect_eq(opx_geom_contains(geom, 0, atl__op_pt(240, 99), 1e-6), 1);
  cr_expect_eq(opx_geom_contains(geom, 0, atl__op_pt(248, 99.5), 1e-6), 1);
  /* The half-plane right of (0,300) -> (100,300) on the picture: below. */
  cr_expect_eq(opx_geom_contains(geom, 1, atl__op_pt(5000, 301), 1e-6), 1);
  cr_expect_eq(opx_geom_contains(geom, 1, atl__op_pt(50, 299), 1e-6), 0);
  cr_expect_eq(opx_geom_contains(geom, 1, atl__op_pt(50, 300.0000001), 1e-6),
               0);
  /* Rays cross its boundary anywhere along the line, far past p1-p2. */
  int e[4];
  cr_assert_eq(opx_geom_edges_at(geom, atl__op_pt(-5000, 300), 1e-9, e, 4), 1);
  cr_expect_eq(e[0], 3);
  cr_expect_eq(opx_geom_edges_at(geom, atl__op_pt(-5000, 300.1), 1e-3, e, 4),
               0);
  cr_expect_eq(opx_geom_edges_at(geom, atl__op_pt(50, 300), 1e-9, e, 4), 1);
}

static int edges_at(atl_op_pt p, double tol, int *out) {
  return opx_geom_edges_at(geom, p, tol, out, 8);
}

Test(optics_geom, edges_at_points) {
  build(PRISM ", " RAY, NULL);
  int e[8];
  cr_assert_eq(edges_at(atl__op_pt(225, 75), 1e-9, e), 1);
  cr_expect_eq(e[0], 0);
  cr_assert_eq(edges_at(atl__op_pt(250, 100), 1e-9, e), 2);
  cr_expect(e[0] == 0 && e[1] == 1);
  cr_assert_eq(edges_at(atl__op_pt(200, 100), 1e-9, e), 1);
  cr_expect_eq(e[0], 1);
  cr_expect_eq(edges_at(atl__op_pt(200, 100.01), 1e-3, e), 0);
  cr_expect_eq(edges_at(atl__op_pt(200, 100.01), 0.02, e), 1);
  /* The ray's own segment is an edge of the source (index 3). */
  cr_assert_eq(edges_at(atl__op_pt(210, 80), 1e-9, e), 1);
  cr_expect_eq(e[0], 3);
  /* Where the ray crosses edge 0: (230, 80). */
  cr_assert_eq(edges_at(atl__op_pt(230, 80), 1e-9, e), 2);
  cr_expect(e[0] == 0 && e[1] == 3);
  cr_expect_eq(edges_at(atl__op_pt(1e6, 0), 1, e), 0);
  cr_expect_eq(edges_at(atl__op_pt(NAN, 0), 1, e), 0);
  /* max limits what is written, not the count. */
  cr_expect_eq(opx_geom_edges_at(geom, atl__op_pt(250, 100), 1e-9, e, 1), 2);
}

Test(optics_geom, edges_at_arcs) {
  bent_square(20);
  int e[8];
  cr_assert_eq(edges_at(atl__op_pt(120, 50), 1e-9, e), 1);
  cr_expect_eq(e[0], 1);
  /* On the chord but not on the arc. */
  cr_expect_eq(edges_at(atl__op_pt(100, 50), 1e-6, e), 0);
  /* A point of the arc at 20 degrees above its middle. */
  double a = -20 * PI / 180;
  cr_assert_eq(
      edges_at(atl__op_pt(47.5 + 72.5 * cos(a), 50 + 72.5 * sin(a)), 1e-9, e),
      1);
  /* On the circle, but past the arc's end. */
  a = -60 * PI / 180;
  cr_expect_eq(
      edges_at(atl__op_pt(47.5 + 72.5 * cos(a), 50 + 72.5 * sin(a)), 1e-6, e),
      0);
}

/* Every edge within tol of p, by brute force with the test's own
 * distances (segments; arcs by angle). */
static int brute_edges_at(atl_op_pt p, double tol, int *out) {
  int n = 0;
  for (int i = 0; i < geom->nedges; i++) {
    const atl_op_edge *e = geom->edges[i].e;
    double d;
    if (e->kind == ATL_OP_EDGE_ARC) {
      double phi = atan2(p.y - e->c.y, p.x - e->c.x);
      double s = e->da >= 0 ? phi - e->a0 : e->a0 - phi;
      s = fmod(s, 2 * PI);
      s = s < 0 ? s + 2 * PI : s;
      if (s <= fabs(e->da))
        d = fabs(sqrt(atl__op_dist2(p, e->c)) - e->r);
      else
        d = sqrt(fmin(atl__op_dist2(p, e->p1), atl__op_dist2(p, e->p2)));
    } else {
      double dx = e->p2.x - e->p1.x, dy = e->p2.y - e->p1.y;
      double t =
          ((p.x - e->p1.x) * dx + (p.y - e->p1.y) * dy) / (dx * dx + dy * dy);
      t = t < 0 ? 0 : t > 1 ? 1 : t;
      d = sqrt(
          atl__op_dist2(p, atl__op_pt(e->p1.x + t * dx, e->p1.y + t * dy)));
    }
    if (d <= tol)
      out[n++] = i;
  }
  return n;
}

/* A scene of many lines, arcs and circles: the index agrees with brute
 * force at points on, near and away from the edges. */
Test(optics_geom, edges_at_agrees_with_brute_force) {
  char *objs = calloc(1, 200000), *p = objs;
  for (int i = 0; i < 60; i++) {
    double x = (i % 10) * 97.0, y = (i / 10) * 83.0;
    p += sprintf(p,
                 "%s{\"type\": \"Mirror\", \"p1\": {\"x\": %g, \"y\": %g}, "
                 "\"p2\": {\"x\": %g, \"y\": %g}}, "
                 "{\"type\": \"CircleBlocker\", \"p1\": {\"x\": %g, \"y\": "
                 "%g}, \"p2\": {\"x\": %g, \"y\": %g}}, "
                 "{\"type\": \"ArcMirror\", \"p1\": {\"x\": %g, \"y\": %g}, "
                 "\"p2\": {\"x\": %g, \"y\": %g}, \"p3\": {\"x\": %g, \"y\": "
                 "%g}}",
                 i ? ", " : "", x, y, x + 60 + i, y + 7 * (i % 5), x + 30,
                 y + 30, x + 30 + (i % 7), y + 45, x, y + 60, x + 50, y + 60,
                 x + 25, y + 60 - (i % 3 + 1) * 9);
  }
  build(objs, NULL);
  free(objs);
  int a[64], b[64];
  unsigned seed = 12345;
  int hits = 0;
  for (int k = 0; k < 20000; k++) {
    seed = seed * 1103515245u + 12345u;
    int ed = (int)(seed >> 8) % geom->nedges;
    seed = seed * 1103515245u + 12345u;
    double t = (seed >> 8) / 16777216.0;
    seed = seed * 1103515245u + 12345u;
    double off = ((int)(seed >> 8) % 2001 - 1000) * 1e-3;
    atl_op_pt q = atl__op_edge_point(geom->edges[ed].e, t);
    q.x += off * (k % 3 == 0);
    q.y += off * (k % 3 == 1);
    double tol = k % 2 ? 1e-6 : 0.5;
    int n = opx_geom_edges_at(geom, q, tol, a, 64);
    int m = brute_edges_at(q, tol, b);
    cr_assert_eq(n, m, "point %d (%g, %g): %d edges, brute force %d", k, q.x,
                 q.y, n, m);
    for (int i = 0; i < n; i++)
      cr_assert_eq(a[i], b[i]);
    hits += n > 0;
  }
  cr_expect_gt(hits, 10000);
}

/* Queries at the rate the ray database makes them: a million points on a
 * prism scene's segments. Timed only outside valgrind. */
Test(optics_geom, edges_at_speed) {
  build(PRISM ", " RAY ", " SQUARE, NULL);
  const char *pre = getenv("LD_PRELOAD");
  if (pre && strstr(pre, "vgpreload"))
    return;
  struct timespec t0, t1;
  int e[8];
  long found = 0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  /* Half the points on edges (as segment ends are), half between them. */
  for (int k = 0; k < 1000000; k++) {
    atl_op_pt q =
        k % 2 ? atl__op_pt(150 + (k % 1000) * 0.1, 50 + (k / 1000) * 0.05)
              : atl__op_edge_point(geom->edges[(k / 2) % geom->nedges].e,
                                   (k % 997) / 997.0);
    found += opx_geom_edges_at(geom, q, 1e-6, e, 8);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double us =
      ((t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3) / 1e6;
  cr_log_info("edges_at: %.3f us per query (%ld found)", us, found);
  cr_expect_lt(us, 1.0, "%.3f us per query", us);
  cr_expect_gt(found, 500000);
}

/* --- Angles to the normal ----------------------------------------------- */

Test(optics_geom, angle_to_normal) {
  build(PRISM ", {\"type\": \"CircleGlass\", \"p1\": " P(0, 0) ", \"p2\": " P(
            10, 0) "}, {\"type\": \"ParamGlass\", \"origin\": " P(500, 0) "}",
        NULL);
  /* The prism's base (edge 1) is horizontal: a vertical ray meets it
   * head-on, a horizontal one grazes it, a diagonal one at 45 degrees. */
  atl_op_pt at = atl__op_pt(200, 100);
  cr_expect_float_eq(opx_geom_angle_to_normal(geom, 1, at, atl__op_pt(0, 1)), 0,
                     1e-9);
  cr_expect_float_eq(opx_geom_angle_to_normal(geom, 1, at, atl__op_pt(0, -3)),
                     0, 1e-9);
  cr_expect_float_eq(opx_geom_angle_to_normal(geom, 1, at, atl__op_pt(1, 0)),
                     90, 1e-9);
  cr_expect_float_eq(opx_geom_angle_to_normal(geom, 1, at, atl__op_pt(1, 1)),
                     45, 1e-9);
  /* Edge 0 runs at 45 degrees: a horizontal ray meets it at 45. */
  cr_expect_float_eq(
      opx_geom_angle_to_normal(geom, 0, atl__op_pt(230, 80), atl__op_pt(1, 0)),
      45, 1e-9);
  /* The circle's normal is radial wherever the ray meets it. */
  double a = 0.7;
  atl_op_pt on = atl__op_pt(10 * cos(a), 10 * sin(a));
  cr_expect_float_eq(opx_geom_angle_to_normal(geom, 3, on, on), 0, 1e-9);
  cr_expect_float_eq(
      opx_geom_angle_to_normal(geom, 3, on, atl__op_pt(-sin(a), cos(a))), 90,
      1e-9);
  cr_expect_float_eq(opx_geom_angle_to_normal(geom, 3, on, atl__op_pt(1, 0)),
                     a * 180 / PI, 1e-9);
  /* The sampled circle about (500, 0): on its first chord's middle, the
   * chord's normal is radial at t = 0.005. */
  atl_op_pt m = atl__op_pt(500 + 50 * cos(0.005) * cos(0.005),
                           50 * cos(0.005) * sin(0.005));
  cr_expect_float_eq(
      opx_geom_angle_to_normal(geom, 4, m, atl__op_pt(cos(0.005), sin(0.005))),
      0, 1e-6);
  /* And on the far side, t = pi + 0.005. */
  double t = 314 * 0.01 + 0.005;
  m = atl__op_pt(500 + 50 * cos(0.005) * cos(t), 50 * cos(0.005) * sin(t));
  cr_expect_float_eq(
      opx_geom_angle_to_normal(geom, 4, m, atl__op_pt(cos(t), sin(t))), 0,
      1e-6);
  cr_expect(isnan(opx_geom_angle_to_normal(geom, 1, at, atl__op_pt(0, 0))));
}

/* --- Names and families ------------------------------------------------- */

Test(optics_geom, names) {
  build(PRISM ", " RAY, "[{\"name\": \"prism\"}, {\"type\": \"SingleRay\"}]");
  cr_expect_str_eq(geom->objs[0].name, "prism");
  cr_expect_str_eq(geom->objs[0].display_name, "prism");
  cr_expect_null(geom->objs[1].name);
  cr_expect_str_eq(geom->objs[1].display_name, "SingleRay 1");
  cr_expect_eq(opx_geom_find(geom, "prism"), 0);
  cr_expect_eq(opx_geom_find(geom, "SingleRay 1"), 1);
  cr_expect_eq(opx_geom_find(geom, "Glass 0"), -1);
  cr_expect_eq(opx_geom_find(geom, "nothing"), -1);
  cr_expect_eq(opx_geom_index_of(geom, scene->objs[1]), 1);
  cr_expect_eq(geom->objs[0].optical, 0);
  cr_expect_eq(geom->objs[1].doc_index, 1);
}

#define MODULE_DOC                                                             \
  "{\"version\": 5, \"modules\": {\"M\": {\"objs\": [{\"type\": \"Mirror\", "  \
  "\"p1\": " P(0, 0) ", \"p2\": " P(                                           \
      10, 0) "}, {\"type\": \"Blocker\", "                                     \
             "\"p1\": " P(0, 5) ", \"p2\": " P(                                \
                 10, 5) "}]}}, \"objs\": [" RAY                                \
                        ", {\"type\": \"ModuleObj\", \"module\": \"M\"}]}"

/* A module's parts share its document index and are numbered after it. */
Test(optics_geom, module_parts) {
  build_doc(MODULE_DOC, "[{}, {\"type\": \"ModuleObj\", \"name\": \"pair\"}]");
  cr_assert_eq(geom->nobjs, 3);
  cr_expect_str_eq(geom->objs[1].display_name, "pair/0");
  cr_expect_str_eq(geom->objs[2].display_name, "pair/1");
  cr_expect_str_eq(geom->objs[2].type, "Blocker");
  cr_expect_eq(geom->objs[2].doc_index, 1);
  cr_expect_eq(opx_geom_find(geom, "pair/1"), 2);
  teardown();
  build_doc(MODULE_DOC, NULL);
  cr_expect_str_eq(geom->objs[1].display_name, "ModuleObj 1/0");
  cr_expect_str_eq(geom->objs[2].display_name, "ModuleObj 1/1");
  cr_expect_null(geom->objs[2].name);
  cr_expect_eq(opx_geom_find(geom, "ModuleObj 1/0"), 1);
}

Test(optics_geom, families) {
  build("{\"type\": \"Mirror\", \"p1\": " P(0, 0) ", \"p2\": " P(
            1, 0) "}, "
                  "{\"type\": \"IdealLens\", \"p1\": " P(0, 0) ", \"p2\": " P(
                      1, 0) "}, "
                            "{\"type\": \"CircleBlocker\", \"p1\": " P(
                                0, 0) ", \"p2\": " P(1,
                                                     0) "}, "
                                                        "{\"type\": "
                                                        "\"DiffractionGrating"
                                                        "\", \"p1\": " P(0, 0) ", \"p2\": " P(
                                                            1,
                                                            0) "}, "
                                                               "{\"type\": "
                                                               "\"Detector\", "
                                                               "\"p1\": " P(0, 0) ", \"p2\": " P(
                                                                   1,
                                                                   0) "}, "
                                                                      "{\"type"
                                                                      "\": "
                                                                      "\"Custo"
                                                                      "mSurfac"
                                                                      "e\", "
                                                                      "\"p1\":"
                                                                      " " P(0, 0) ", \"p2\": " P(
                                                                          1,
                                                                          0) "}"
                                                                             ","
                                                                             " "
                                                                             "{"
                                                                             "\"type\": \"PointSource\", \"x\": 0, \"y\": 0}, "
                                                                             "{"
                                                                             "\"type\": \"GrinGlass\", \"path\": [" P(0, 0) ", " P(
                                                                                 1,
                                                                                 0) ", " P(0,
                                                                                           1) "]}, "
                                                                                              "{\"type\": \"BeamSplitter\", \"p1\": " P(0, 0) ", \"p2\": " P(
                                                                                                  1,
                                                                                                  0) "}, "
                                                                                                     "{\"type\": \"LineArrow\", \"p1\": " P(
                                                                                                         0,
                                                                                                         0) ", \"p2\": " P(1,
                                                                                                                           0) "}",
        NULL);
  static const opx_family_t want[] = {
      OPX_MIRROR,  OPX_LENS,   OPX_BLOCKER, OPX_GRATING, OPX_DETECTOR,
      OPX_SURFACE, OPX_SOURCE, OPX_GLASS,   OPX_MIRROR,  OPX_OTHER};
  cr_assert_eq(geom->nobjs, 10);
  for (int i = 0; i < 10; i++)
    cr_expect_eq(geom->objs[i].family, want[i], "object %d", i);
  cr_expect(isnan(geom->objs[7].ref_index));
  cr_expect_eq(geom->objs[6].nedges, 0);
  cr_expect_str_eq(opx_family_name(OPX_GRATING), "grating");
  cr_expect_str_eq(opx_family_name(OPX_OTHER), "other");
  cr_expect_eq(geom->objs[9].optical, -1);
}
