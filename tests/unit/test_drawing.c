/* The drawing plugin's modules without the daemon: the SVG path parser
 * (every command, every number form, every error and its offset), the
 * arc conversion against analytic points, bounds and lengths, the canvas
 * model (colours, packing, path checks, brushes) and the rasteriser
 * (pixels of decoded images: caps, curves, colours, opacity). */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "canvas.h"
#include "dpath.h"
#include "genout.h"
#include "raster.h"

/* ---- the parser ---- */

/* The canonical text of d, which must parse. */
static char *canon(const char *d) {
  dp_path_t p = {0};
  dp_error_t e;
  int rc = dp_parse(d, strlen(d), &p, &e);
  cr_assert_eq(rc, 0, "%s: %s", d, e.msg);
  char *s = dp_format(&p);
  dp_path_free(&p);
  return s;
}

static void expect_canon(const char *d, const char *want) {
  char *got = canon(d);
  cr_expect_str_eq(got, want, "%s", d);
  free(got);
}

/* The error of d, which must not parse. */
static dp_error_t refuse(const char *d, size_t len) {
  dp_path_t p = {0};
  dp_error_t e;
  int rc = dp_parse(d, len, &p, &e);
  dp_path_free(&p);
  cr_assert_eq(rc, -1, "%s parsed", d);
  return e;
}

static void expect_error(const char *d, size_t offset, const char *part) {
  dp_error_t e = refuse(d, strlen(d));
  cr_expect_eq(e.offset, offset, "%s: offset %zu, want %zu (%s)", d, e.offset,
               offset, e.msg);
  cr_expect(strstr(e.msg, part) != NULL, "%s: '%s' lacks '%s'", d, e.msg, part);
}

Test(dpath, every_command_relative) {
  expect_canon("M10 20 l5 5 h10 v-5 c1 1 2 2 3 3 s4 4 5 5 q1 1 2 2 t3 3 "
               "a5 5 0 0 1 10 0 z",
               "M10 20 L15 25 L25 25 L25 20 C26 21 27 22 28 23 C29 24 32 27 "
               "33 28 Q34 29 35 30 Q36 31 38 33 A5 5 0 0 1 48 33 Z");
}

Test(dpath, every_command_absolute) {
  expect_canon("M10 20 L15 25 H25 V20 C26 21 27 22 28 23 S32 27 33 28 "
               "Q34 29 35 30 T38 33 A5 5 0 0 1 48 33 Z",
               "M10 20 L15 25 L25 25 L25 20 C26 21 27 22 28 23 C29 24 32 27 "
               "33 28 Q34 29 35 30 Q36 31 38 33 A5 5 0 0 1 48 33 Z");
}

Test(dpath, smooth_curves_without_a_curve_before) {
  /* S after a non-C (and T after a non-Q) takes the current point as its
   * first control point. */
  expect_canon("M0 0 S10 10 20 0", "M0 0 C0 0 10 10 20 0");
  expect_canon("M0 0 T10 0", "M0 0 Q0 0 10 0");
  expect_canon("M0 0 Q5 5 10 0 S15 5 20 0", "M0 0 Q5 5 10 0 C10 0 15 5 20 0");
  expect_canon("M0 0 Q5 5 10 0 T20 0 T30 0",
               "M0 0 Q5 5 10 0 Q15 -5 20 0 Q25 5 30 0");
}

Test(dpath, implicit_repeats) {
  expect_canon("M1 2 3 4 5 6", "M1 2 L3 4 L5 6");
  expect_canon("m1 2 3 4", "M1 2 L4 6");
  expect_canon("M0 0 L1 1 2 2", "M0 0 L1 1 L2 2");
  expect_canon("M0 0 h1 2 3", "M0 0 L1 0 L3 0 L6 0");
  expect_canon("M0 0 c1 1 2 2 3 3 1 1 2 2 3 3",
               "M0 0 C1 1 2 2 3 3 C4 4 5 5 6 6");
}

Test(dpath, number_forms) {
  expect_canon("M-.5.5 10-20", "M-0.5 0.5 L10 -20");
  expect_canon("M1e2 1E-1", "M100 0.1");
  expect_canon("M+1 +.5e+1", "M1 5");
  expect_canon("M.1.2.3.4", "M0.1 0.2 L0.3 0.4");
  expect_canon("M1.5e1,2.", "M15 2");
  expect_canon("M 0.0004 -0.0004", "M0 0");
  expect_canon("M123456789012345678901234567890 0",
               "M1.2345678901234568e+29 0");
  expect_canon("M0.1234567 1.0005", "M0.123 1.001");
  expect_canon("\t\n M\r\f1,2 ", "M1 2");
}

Test(dpath, arc_flags_without_separators) {
  expect_canon("M0,0 a25 25 0 1050 50", "M0 0 A25 25 0 1 0 50 50");
  expect_canon("M0 0 A25,25,0,0,1,50,50", "M0 0 A25 25 0 0 1 50 50");
  expect_canon("M0 0 a25 25 -30 11.5.5", "M0 0 A25 25 -30 1 1 0.5 0.5");
}

Test(dpath, subpaths_and_closepath) {
  expect_canon("M10 10 l10 0 l0 10 z m5 5 l1 0",
               "M10 10 L20 10 L20 20 Z M15 15 L16 15");
  /* A command other than a move after Z starts at the closed subpath's
   * start; the canonical form says so. */
  expect_canon("M10 10 L20 10 Z L30 30", "M10 10 L20 10 Z M10 10 L30 30");
  expect_canon("M0 0 L10 0 M20 20 L30 20", "M0 0 L10 0 M20 20 L30 20");
}

typedef struct {
  int starts;
  size_t points;
} subpaths_t;

static void sub_point(void *u, double x, double y, int starts) {
  (void)x;
  (void)y;
  subpaths_t *s = u;
  s->starts += starts;
  s->points++;
}

Test(dpath, subpaths_are_not_joined) {
  dp_path_t p = {0};
  dp_error_t e;
  const char *d = "M0 0 L10 0 M20 20 L30 20";
  cr_assert_eq(dp_parse(d, strlen(d), &p, &e), 0);
  subpaths_t s = {0, 0};
  dp_flatten(&p, 0.1, sub_point, &s);
  cr_expect_eq(s.starts, 2);
  cr_expect_eq(s.points, 4);
  /* 10 + 10, not the 22.4 of a joining segment. */
  cr_expect_float_eq(dp_length(&p, 0.1), 20.0, 1e-9);
  dp_path_free(&p);
}

Test(dpath, errors_say_where_and_what) {
  expect_error("M10 10 L20 X", 11, "unexpected 'X' at offset 11");
  expect_error("M10 10 L20 X", 11, "'L'");
  expect_error("M10 10 L X", 9, "expected a number after 'L'");
  expect_error("L10 10", 0, "must start with a moveto");
  expect_error("", 0, "empty");
  expect_error("   ", 3, "empty");
  expect_error("M10 10 Z 5", 9, "'Z' takes no numbers");
  expect_error("M1 2 C1 2 3", 11, "unexpected end at offset 11");
  expect_error("M1 2 C1 2 3", 11, "y2 of 'C'");
  expect_error("M0 0 A5 5 0 2 0 10 10", 12,
               "flag (0 or 1) for large-arc-flag of 'A'");
  expect_error("M0 0 A5 5 0 1 x 10 10", 14, "sweep-flag");
  expect_error("M1e 2", 3, "digits of the exponent");
  expect_error("M1 2 L3 4,", 10, "expected a number after ','");
  expect_error("M 10,20 L,30 40", 9, "expected a number after 'L'");
  expect_error("M1 . 2", 4,
               "unexpected byte 0x20 at offset 4; expected a "
               "digit after '.'");
  expect_error("M1e999 0", 1, "out of range");
  expect_error("M1 2 Y", 5, "expected a command");
  expect_error("M 1 2 L 3 4 --5 6", 13, "expected a digit after '-'");
  expect_error("M1 2 \xc3\xa9", 5, "byte 0xc3");
  expect_error("M1,,2", 3, "expected a number after ','");
  /* Every number is finite, but their sum is not. */
  expect_error("M1e308 0 l1e308 0", 17, "out of range (relative numbers");
}

Test(dpath, length_limits) {
  /* The input's length is the caller's: no NUL is read. */
  const char d[] = {'M', '1', ' ', '2', 'L'};
  dp_error_t e = refuse(d, sizeof(d));
  cr_expect_eq(e.offset, 5);
}

/* ---- arcs ---- */

Test(arc, semicircle) {
  const double a[7] = {50, 50, 0, 0, 1, 100, 0};
  dp_arc_t c;
  cr_assert_eq(dp_arc_to_center(0, 0, a, &c), 0);
  cr_expect_float_eq(c.cx, 50, 1e-9);
  cr_expect_float_eq(c.cy, 0, 1e-9);
  cr_expect_float_eq(c.rx, 50, 1e-9);
  cr_expect_float_eq(fabs(c.dtheta), M_PI, 1e-9);
  /* Sweep 1 is the positive-angle direction: with y down, from the left
   * end over the top (y = -50). */
  double x, y;
  dp_arc_point(&c, c.theta1 + c.dtheta / 2, &x, &y);
  cr_expect_float_eq(x, 50, 1e-9);
  cr_expect_float_eq(y, -50, 1e-9);
  const double b[7] = {50, 50, 0, 0, 0, 100, 0};
  cr_assert_eq(dp_arc_to_center(0, 0, b, &c), 0);
  dp_arc_point(&c, c.theta1 + c.dtheta / 2, &x, &y);
  cr_expect_float_eq(y, 50, 1e-9);
}

Test(arc, rotated_ellipse) {
  /* From angle 0 to angle π/2 of the ellipse rx 2, ry 1, rotated 30°,
   * centred on the origin. */
  double phi = M_PI / 6;
  double x0 = 2 * cos(phi), y0 = 2 * sin(phi);
  double x1 = -sin(phi), y1 = cos(phi);
  const double a[7] = {2, 1, 30, 0, 1, x1, y1};
  dp_arc_t c;
  cr_assert_eq(dp_arc_to_center(x0, y0, a, &c), 0);
  cr_expect_float_eq(c.cx, 0, 1e-9);
  cr_expect_float_eq(c.cy, 0, 1e-9);
  cr_expect_float_eq(c.theta1, 0, 1e-9);
  cr_expect_float_eq(c.dtheta, M_PI / 2, 1e-9);
  double x, y;
  dp_arc_point(&c, M_PI / 4, &x, &y);
  double wx = 2 * cos(phi) * cos(M_PI / 4) - sin(phi) * sin(M_PI / 4);
  double wy = 2 * sin(phi) * cos(M_PI / 4) + cos(phi) * sin(M_PI / 4);
  cr_expect_float_eq(x, wx, 1e-9);
  cr_expect_float_eq(y, wy, 1e-9);
  /* The large arc the other way round: the same ellipse, 3π/2. */
  const double b[7] = {2, 1, 30, 1, 0, x1, y1};
  cr_assert_eq(dp_arc_to_center(x0, y0, b, &c), 0);
  cr_expect_float_eq(c.cx, 0, 1e-9);
  cr_expect_float_eq(c.dtheta, -3 * M_PI / 2, 1e-9);
}

Test(arc, out_of_range_parameters) {
  /* Radii too small for the endpoints are scaled up (B.2.5). */
  const double a[7] = {1, 1, 0, 0, 1, 10, 0};
  dp_arc_t c;
  cr_assert_eq(dp_arc_to_center(0, 0, a, &c), 0);
  cr_expect_float_eq(c.rx, 5, 1e-9);
  cr_expect_float_eq(c.cx, 5, 1e-9);
  /* Negative radii count as positive. */
  const double n[7] = {-5, -5, 0, 0, 1, 10, 0};
  cr_assert_eq(dp_arc_to_center(0, 0, n, &c), 0);
  cr_expect_float_eq(c.rx, 5, 1e-9);
  /* A zero radius is a line; coincident endpoints draw nothing. */
  const double z[7] = {0, 5, 0, 0, 1, 10, 0};
  cr_expect_eq(dp_arc_to_center(0, 0, z, &c), 1);
  const double s[7] = {5, 5, 0, 0, 1, 0, 0};
  cr_expect_eq(dp_arc_to_center(0, 0, s, &c), 1);
}

typedef struct {
  double cx, cy, r, worst;
} radial_t;

static void radial(void *u, double x, double y, int starts) {
  (void)starts;
  radial_t *r = u;
  double e = fabs(hypot(x - r->cx, y - r->cy) - r->r);
  if (e > r->worst)
    r->worst = e;
}

Test(arc, drawn_curves_stay_on_the_circle) {
  /* The cubics an arc becomes stay within 0.03 % of the radius. */
  dp_path_t p = {0};
  dp_error_t e;
  const char *d = "M300 200 A100 100 0 1 1 300 400 A100 100 0 0 1 300 200";
  cr_assert_eq(dp_parse(d, strlen(d), &p, &e), 0);
  radial_t r = {300, 300, 100, 0};
  dp_flatten(&p, 0.001, radial, &r);
  cr_expect_lt(r.worst, 0.03, "worst %g", r.worst);
  /* Their length is within 0.02 % of the circumference. */
  cr_expect_float_eq(dp_length(&p, 0.001), 2 * M_PI * 100, 0.13);
  dp_path_free(&p);
}

Test(dpath, bounds_follow_the_curve) {
  dp_path_t p = {0};
  dp_error_t e;
  const char *d = "M0 0 C0 100 100 100 100 0";
  cr_assert_eq(dp_parse(d, strlen(d), &p, &e), 0);
  dp_box_t b;
  cr_assert_eq(dp_bounds(&p, &b), 0);
  /* y(t) = 300 t (1 - t), highest at 75: not the control points' 100. */
  cr_expect_float_eq(b.y1, 75, 1e-9);
  cr_expect_float_eq(b.x0, 0, 1e-9);
  cr_expect_float_eq(b.x1, 100, 1e-9);
  dp_path_free(&p);
}

/* ---- the canvas model ---- */

Test(canvas, colours) {
  char hex[8];
  cr_expect_eq(cv_color_parse("rose", hex), 0);
  cr_expect_str_eq(hex, "#e94560");
  cr_expect_eq(cv_color_parse("Crimson", hex), 0);
  cr_expect_str_eq(hex, "#e94560");
  cr_expect_eq(cv_color_parse("#ABCDEF", hex), 0);
  cr_expect_str_eq(hex, "#abcdef");
  cr_expect_eq(cv_color_parse("red", hex), -1);
  cr_expect_eq(cv_color_parse("#fff", hex), -1);
  cr_expect_eq(cv_color_parse("#12345g", hex), -1);
  cr_expect_eq(cv_palette_len, 12); /* 11 colours, rose also as crimson */
  cr_expect_eq(cv_brushes_len, 12);
}

Test(canvas, packing_round_trips) {
  cv_stroke_t s = {.id = 42,
                   .author = 'h',
                   .color = "#7b68ee",
                   .width = 12.5,
                   .opacity = 0.25,
                   .brush = cv_brush_find("ink"),
                   .d = "M1 2 L3 4"};
  char *packed = cv_stroke_pack(&s);
  cr_expect_str_eq(packed, "42;h;#7b68ee;12.5;0.25;ink;M1 2 L3 4");
  cv_stroke_t b;
  cr_assert_eq(cv_stroke_unpack(packed, &b), 0);
  cr_expect_eq(b.id, 42);
  cr_expect_eq(b.author, 'h');
  cr_expect_str_eq(b.color, "#7b68ee");
  cr_expect_float_eq(b.width, 12.5, 1e-12);
  cr_expect_eq(b.brush, s.brush);
  cr_expect_str_eq(b.d, "M1 2 L3 4");
  cv_stroke_clear(&b);
  free(packed);
  cr_expect_eq(cv_stroke_unpack("7;a;;;;;M0 0 L1 1", &b), 0);
  cr_expect_eq(b.brush, -1);
  cr_expect_lt(b.opacity, 0);
  cv_stroke_clear(&b);
  cr_expect_eq(cv_stroke_unpack("7;x;;;;;M0 0", &b), -1);
  cr_expect_eq(cv_stroke_unpack("7;a;;;;nosuch;M0 0", &b), -1);
  cr_expect_eq(cv_stroke_unpack("7;a;;;", &b), -1);
}

/* Checks path (JSON text) in mode; returns the error or "" and the
 * stroke's d in d_out (when accepted). */
static const char *check_path(const char *json, cv_mode_t mode, int *clipped,
                              char *d_out, size_t dsize) {
  static char err[512];
  json_object *o = json_tokener_parse(json);
  cr_assert_not_null(o, "%s", json);
  cv_stroke_t s;
  dp_path_t scratch = {0};
  int styled;
  dp_box_t box;
  err[0] = '\0';
  int rc = cv_path_from_json(o, mode, &s, &scratch, clipped, &box, &styled, err,
                             sizeof(err));
  if (rc == 0 && d_out)
    snprintf(d_out, dsize, "%s", s.d);
  cv_stroke_clear(&s);
  dp_path_free(&scratch);
  json_object_put(o);
  return rc == 0 ? "" : err;
}

static void expect_refused(const char *json, cv_mode_t mode, const char *part) {
  int clipped;
  const char *err = check_path(json, mode, &clipped, NULL, 0);
  cr_expect(strstr(err, part) != NULL, "%s: '%s' lacks '%s'", json, err, part);
}

Test(canvas, paths_become_d) {
  int clipped;
  char d[256];
  cr_expect_str_eq(
      check_path("{\"type\":\"line\",\"points\":[{\"x\":1,\"y\":2},"
                 "{\"x\":3,\"y\":4}]}",
                 CV_PLOTTER, &clipped, d, sizeof(d)),
      "");
  cr_expect_str_eq(d, "M1 2 L3 4");
  check_path("{\"type\":\"quadratic\",\"points\":[{\"x\":1,\"y\":2},{\"x\":3,"
             "\"y\":4},{\"x\":5,\"y\":6}]}",
             CV_PLOTTER, &clipped, d, sizeof(d));
  cr_expect_str_eq(d, "M1 2 Q3 4 5 6");
  check_path("{\"type\":\"cubic\",\"points\":[{\"x\":1,\"y\":2},{\"x\":3,"
             "\"y\":4},{\"x\":5,\"y\":6},{\"x\":7,\"y\":8}]}",
             CV_PLOTTER, &clipped, d, sizeof(d));
  cr_expect_str_eq(d, "M1 2 C3 4 5 6 7 8");
  check_path("{\"type\":\"polyline\",\"points\":[{\"x\":1,\"y\":2},{\"x\":3,"
             "\"y\":4},{\"x\":5,\"y\":6}]}",
             CV_PLOTTER, &clipped, d, sizeof(d));
  cr_expect_str_eq(d, "M1 2 L3 4 L5 6");
  cr_expect_eq(clipped, 0);
  check_path("{\"type\":\"svg\",\"d\":\"M-10 5 l20 0\"}", CV_PLOTTER, &clipped,
             d, sizeof(d));
  cr_expect_eq(clipped, 1);
  cr_expect_str_eq(d, "M-10 5 L10 5");
}

Test(canvas, bad_paths_say_why) {
  expect_refused("{\"type\":\"circle\"}", CV_PLOTTER,
                 "type \"circle\" is not one of");
  expect_refused("{\"points\":[]}", CV_PLOTTER, "has no type");
  expect_refused("{\"type\":\"line\",\"points\":[{\"x\":1,\"y\":2}]}",
                 CV_PLOTTER, "a line needs 2 points, got 1");
  expect_refused("{\"type\":\"polyline\",\"points\":[{\"x\":1,\"y\":2}]}",
                 CV_PLOTTER, "needs at least 2 points");
  expect_refused("{\"type\":\"line\",\"points\":[{\"x\":1,\"y\":2},{\"x\":"
                 "\"3\",\"y\":4}]}",
                 CV_PLOTTER, "points[1].x is \"3\"; it must be a number");
  expect_refused("{\"type\":\"line\",\"points\":[{\"x\":1},{\"x\":3,\"y\":4}]}",
                 CV_PLOTTER, "points[0] has no y");
  expect_refused("{\"type\":\"svg\",\"d\":\"M10 10 L20 X\"}", CV_PLOTTER,
                 "d: unexpected 'X' at offset 11");
  expect_refused("{\"type\":\"svg\"}", CV_PLOTTER, "an svg path needs d");
  expect_refused("{\"type\":\"line\",\"d\":\"M0 0\"}", CV_PLOTTER,
                 "takes points, not d");
  expect_refused("{\"type\":\"svg\",\"d\":\"M0 0 L1 1\",\"width\":3}", CV_PAINT,
                 "unknown member 'width'");
  expect_refused("{\"type\":\"svg\",\"d\":\"M0 0 L1 1\",\"color\":\"red\"}",
                 CV_PAINT, "color \"red\" is not a palette name");
  expect_refused("{\"type\":\"svg\",\"d\":\"M0 0 L1 1\",\"stroke_width\":45}",
                 CV_PAINT, "stroke_width 45 is out of range");
  expect_refused("{\"type\":\"svg\",\"d\":\"M0 0 L1 1\",\"opacity\":1.5}",
                 CV_PAINT, "opacity 1.5 is out of range");
  expect_refused("{\"type\":\"svg\",\"d\":\"M0 0 L1 1\",\"brush\":\"crayon\"}",
                 CV_PAINT, "brush \"crayon\" is not one of oil_round");
  expect_refused("{\"type\":\"svg\",\"d\":\"M0 0 L1e9 1\"}", CV_PAINT,
                 "coordinates must stay within");
  /* Plotter mode ignores style, so a wrong colour there is no error. */
  int clipped;
  cr_expect_str_eq(check_path("{\"type\":\"svg\",\"d\":\"M0 0 L1 1\","
                              "\"color\":\"red\"}",
                              CV_PLOTTER, &clipped, NULL, 0),
                   "");
}

Test(canvas, non_finite_coordinates) {
  json_object *o = json_tokener_parse(
      "{\"type\":\"line\",\"points\":[{\"x\":1,\"y\":2},{\"x\":3,\"y\":4}]}");
  json_object *pts = json_object_object_get(o, "points");
  json_object_object_add(json_object_array_get_idx(pts, 1), "y",
                         json_object_new_double(NAN));
  cv_stroke_t s;
  dp_path_t scratch = {0};
  int clipped, styled;
  dp_box_t box;
  char err[256];
  cr_expect_eq(cv_path_from_json(o, CV_PLOTTER, &s, &scratch, &clipped, &box,
                                 &styled, err, sizeof(err)),
               -1);
  cr_expect(strstr(err, "points[1].y is NaN") != NULL, "%s", err);
  json_object_object_add(json_object_array_get_idx(pts, 1), "y",
                         json_object_new_double(INFINITY));
  cr_expect_eq(cv_path_from_json(o, CV_PLOTTER, &s, &scratch, &clipped, &box,
                                 &styled, err, sizeof(err)),
               -1);
  cr_expect(strstr(err, "infinite") != NULL, "%s", err);
  dp_path_free(&scratch);
  json_object_put(o);
}

/* The parts of a stroke as text, for comparing expansions. */
static void part_text(void *u, const cv_part_t *part) {
  FILE *f = u;
  char *d = dp_format(part->path);
  fprintf(f, "%s|%.6f|%.6f\n", d, part->width, part->opacity);
  free(d);
}

static char *parts_of(uint32_t id, const char *brush, cv_mode_t mode,
                      size_t *n_lines) {
  cv_stroke_t s = {.id = id,
                   .author = 'a',
                   .opacity = -1,
                   .brush = cv_brush_find(brush),
                   .d = "M100 100 C200 50 300 150 400 100"};
  dp_path_t p = {0};
  dp_error_t e;
  cr_assert_eq(dp_parse(s.d, strlen(s.d), &p, &e), 0);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  cr_assert_eq(cv_stroke_parts(&s, &p, mode, part_text, f), 0);
  fclose(f);
  dp_path_free(&p);
  *n_lines = 0;
  for (char *c = buf; *c; c++)
    *n_lines += *c == '\n';
  return buf;
}

Test(canvas, brushes_expand_by_the_stroke_id) {
  size_t n1, n2, n3, n4;
  char *a = parts_of(7, "oil_round", CV_PAINT, &n1);
  char *b = parts_of(7, "oil_round", CV_PAINT, &n2);
  char *c = parts_of(8, "oil_round", CV_PAINT, &n3);
  cr_expect_str_eq(a, b, "the same id expands the same way");
  cr_expect_str_neq(a, c, "another id expands another way");
  cr_expect_eq(n1, 6, "the stroke and its 5 bristles");
  char *p = parts_of(7, "oil_round", CV_PLOTTER, &n4);
  cr_expect_eq(n4, 1, "plotter mode has no brushes");
  size_t n5;
  char *s = parts_of(9, "splatter", CV_PAINT, &n5);
  cr_expect_eq(n5, 21);
  free(a);
  free(b);
  free(c);
  free(p);
  free(s);
}

/* ---- the rasteriser ---- */

typedef struct {
  uint8_t *rgb;
} img_t;

static img_t draw(const char *const *packed, size_t n, cv_mode_t mode,
                  int highlight) {
  json_object *arr = json_object_new_array();
  for (size_t i = 0; i < n; i++)
    json_object_array_add(arr, json_object_new_string(packed[i]));
  cv_view_t view = {mode, highlight, 0, 0};
  img_t im = {NULL};
  size_t skipped = 0;
  cr_assert_eq(cv_raster_rgb(arr, &view, &im.rgb, &skipped), 0);
  cr_assert_eq(skipped, 0);
  json_object_put(arr);
  return im;
}

static const uint8_t *px(const img_t *im, int x, int y) {
  return im->rgb + ((size_t)y * CV_WIDTH + (size_t)x) * 3;
}

static void expect_px(const img_t *im, int x, int y, int r, int g, int b,
                      int tol) {
  const uint8_t *p = px(im, x, y);
  cr_expect(abs(p[0] - r) <= tol && abs(p[1] - g) <= tol &&
                abs(p[2] - b) <= tol,
            "pixel (%d, %d) is %d %d %d, want %d %d %d (±%d)", x, y, p[0], p[1],
            p[2], r, g, b, tol);
}

Test(raster, white_canvas_plotter_ink) {
  const char *s[] = {"1;a;;;;;M100 300 L700 300"};
  img_t im = draw(s, 1, CV_PLOTTER, 0);
  expect_px(&im, 5, 5, 255, 255, 255, 0);
  expect_px(&im, 400, 300, 0x1a, 0x1a, 0x2e, 40);
  expect_px(&im, 400, 305, 255, 255, 255, 0);
  free(im.rgb);
}

Test(raster, round_caps) {
  /* Width 20: a round cap reaches 10 px past the end, along the line
   * only. */
  const char *s[] = {"1;a;#000000;20;1;;M100 300 L700 300"};
  img_t im = draw(s, 1, CV_PAINT, 0);
  expect_px(&im, 93, 300, 0, 0, 0, 10);
  expect_px(&im, 706, 300, 0, 0, 0, 10);
  expect_px(&im, 92, 292, 255, 255, 255, 10); /* 11.3 px from the end */
  free(im.rgb);
}

Test(raster, true_curves) {
  /* The quadratic's apex is at y 300; its control point (400, 100) is not
   * on it, as a control polygon would be. */
  const char *s[] = {"1;a;#000000;6;1;;M100 500 Q400 100 700 500"};
  img_t im = draw(s, 1, CV_PAINT, 0);
  expect_px(&im, 400, 300, 0, 0, 0, 10);
  expect_px(&im, 400, 100, 255, 255, 255, 0);
  expect_px(&im, 400, 200, 255, 255, 255, 0);
  free(im.rgb);
}

Test(raster, colours_and_opacity_per_stroke) {
  const char *s[] = {
      "1;a;#ff0000;10;1;;M100 100 L300 100",
      "2;a;#000000;20;0.5;;M100 300 L300 300",
      "3;a;#000000;20;0.5;;M200 250 L200 350",
      /* One stroke over itself: its overlap is not darker. */
      "4;a;#000000;20;0.5;;M500 300 L700 300 L500 300",
  };
  img_t im = draw(s, 4, CV_PAINT, 0);
  expect_px(&im, 200, 100, 255, 0, 0, 2);
  expect_px(&im, 150, 300, 128, 128, 128, 3);
  expect_px(&im, 200, 300, 64, 64, 64, 3);
  expect_px(&im, 600, 300, 128, 128, 128, 3);
  free(im.rgb);
}

Test(raster, human_strokes_highlighted_for_the_model) {
  const char *s[] = {"1;h;#000000;10;1;;M100 300 L700 300"};
  img_t page = draw(s, 1, CV_PAINT, 0);
  expect_px(&page, 400, 300, 0, 0, 0, 2);
  img_t model = draw(s, 1, CV_PAINT, 1);
  expect_px(&model, 400, 300, 0xe9, 0x45, 0x60, 2);
  img_t plotter = draw(s, 1, CV_PLOTTER, 1);
  expect_px(&plotter, 400, 300, 0x00, 0x66, 0xcc, 40);
  free(page.rgb);
  free(model.rgb);
  free(plotter.rgb);
}

Test(raster, png_and_svg) {
  json_object *arr = json_object_new_array();
  json_object_array_add(
      arr, json_object_new_string("1;a;#e94560;8;0.5;oil_round;"
                                  "M100 100 A50 50 0 0 1 200 100"));
  cv_view_t view = {CV_PAINT, 0, 400, 300};
  void *png = NULL;
  size_t len = 0;
  cr_assert_eq(cv_raster_png(arr, &view, &png, &len), 0);
  cr_expect_gt(len, 100);
  cr_expect_eq(memcmp(png, "\x89PNG\r\n\x1a\n", 8), 0);
  /* IHDR: 400 × 300. */
  const uint8_t *b = png;
  cr_expect_eq((b[16] << 24 | b[17] << 16 | b[18] << 8 | b[19]), 400);
  cr_expect_eq((b[20] << 24 | b[21] << 16 | b[22] << 8 | b[23]), 300);
  free(png);
  char *svg = cv_svg(arr, CV_PAINT, "a <title> & more");
  cr_expect(strstr(svg, "<title>a &lt;title&gt; &amp; more</title>") != NULL);
  cr_expect(strstr(svg, "d=\"M100 100 A50 50 0 0 1 200 100\" "
                        "stroke=\"#e94560\"") != NULL,
            "%s", svg);
  cr_expect(strstr(svg, "stroke-linecap=\"round\"") != NULL);
  size_t paths = 0;
  for (const char *p = svg; (p = strstr(p, "<path")) != NULL; p++)
    paths++;
  cr_expect_eq(paths, 6, "the stroke and its 5 bristles");
  free(svg);
  json_object_put(arr);
}

/* A canvas of n mixed strokes all over it: curves, arcs, translucent
 * paint with brushes. */
static json_object *busy_canvas(int n) {
  json_object *arr = json_object_new_array();
  const char *brush[] = {"", "oil_round", "", "watercolor", "", "pencil"};
  for (int i = 0; i < n; i++) {
    double x = 20 + (i * 37) % 760, y = 20 + (i * 53) % 560;
    char buf[256];
    snprintf(buf, sizeof(buf),
             "%d;a;#%02x%02x%02x;%d;%.2f;%s;M%.1f %.1f C%.1f %.1f %.1f %.1f "
             "%.1f %.1f A20 10 30 0 1 %.1f %.1f",
             i + 1, (i * 40) % 256, (i * 90) % 256, (i * 150) % 256, 1 + i % 12,
             0.3 + 0.7 * (i % 7) / 6.0, brush[i % 6], x, y, x + 30, y - 20,
             x + 10, y + 40, x + 45, y + 5, x + 10, y + 30);
    json_object_array_add(arr, json_object_new_string(buf));
  }
  return arr;
}

static uint8_t *png_rgb(const void *png, size_t len, int w, int h) {
  png_image im;
  memset(&im, 0, sizeof(im));
  im.version = PNG_IMAGE_VERSION;
  cr_assert(png_image_begin_read_from_memory(&im, png, len), "%s", im.message);
  cr_assert_eq((int)im.width, w);
  cr_assert_eq((int)im.height, h);
  im.format = PNG_FORMAT_RGB;
  uint8_t *rgb = malloc(PNG_IMAGE_SIZE(im));
  cr_assert(png_image_finish_read(&im, NULL, rgb, 0, NULL), "%s", im.message);
  /* libpng only warns of a bad Adler-32: a warning fails the test. */
  cr_assert_eq(im.warning_or_error, 0, "%s", im.message);
  return rgb;
}

/* The zlib stream of a PNG's IDAT chunks, inflated by zlib itself, which
 * checks the Adler-32 strictly: the scanlines, or NULL. */
static uint8_t *png_inflate(const uint8_t *png, size_t len, size_t raw) {
  uint8_t *z = malloc(len), *out = malloc(raw + 1);
  size_t zn = 0;
  for (size_t off = 8; off + 12 <= len;) {
    size_t n = (size_t)png[off] << 24 | png[off + 1] << 16 | png[off + 2] << 8 |
               png[off + 3];
    if (memcmp(png + off + 4, "IDAT", 4) == 0) {
      memcpy(z + zn, png + off + 8, n);
      zn += n;
    }
    off += n + 12;
  }
  uLongf out_len = raw + 1;
  int zr = uncompress(out, &out_len, z, zn);
  free(z);
  if (zr != Z_OK || out_len != raw) {
    free(out);
    return NULL;
  }
  return out;
}

/* Canvases of every small height, some with empty bands, and the full
 * one: the joined stream inflates, checksum and all, to the scanlines. */
Test(raster, the_joined_stream_is_valid_zlib) {
  json_object *arr = busy_canvas(50);
  const int heights[] = {1, 2, 3, 5, 6, 9, 13, 600};
  for (size_t k = 0; k < sizeof(heights) / sizeof(heights[0]); k++) {
    int h = heights[k], w = h == 600 ? 800 : 40;
    cv_view_t view = {CV_PAINT, 0, w, h};
    cv_raster_t *r = cv_raster_new(&view);
    void *png = NULL;
    size_t len = 0;
    cr_assert_eq(cv_raster_update(r, arr, 0, &png, &len), 0);
    size_t raw = (size_t)h * (1 + 3 * (size_t)w);
    uint8_t *lines = png_inflate(png, len, raw);
    cr_expect(lines != NULL, "height %d: zlib refuses the stream", h);
    uint8_t *rgb = png_rgb(png, len, w, h);
    for (int y = 0; lines && y < h; y++) {
      const uint8_t *row = lines + (size_t)y * (1 + 3 * (size_t)w);
      cr_expect_eq(row[0], 0, "height %d row %d: filter %d", h, y, row[0]);
      cr_expect(
          memcmp(row + 1, rgb + (size_t)y * 3 * (size_t)w, 3 * (size_t)w) == 0,
          "height %d row %d", h, y);
    }
    free(lines);
    free(rgb);
    free(png);
    cv_raster_free(r);
  }
  json_object_put(arr);
}

/* Drawn and encoded in bands on several threads, the canvas is the one
 * drawn in one piece on one thread but for a level here and there on the
 * bands' edges, and the joined deflate segments make one valid zlib
 * stream (libpng checks its Adler-32 and every chunk's CRC). A canvas
 * brought up to date in two steps, and one brought back from its PNG,
 * give the very same file. */
Test(raster, bands_match_one_piece) {
  json_object *arr = busy_canvas(700);
  cv_view_t view = {CV_PAINT, 0, 0, 0};
  uint8_t *whole = NULL;
  size_t skipped = 0, inked = 0;
  cr_assert_eq(cv_raster_rgb(arr, &view, &whole, &skipped), 0);
  cr_assert_eq(skipped, 0);
  for (size_t i = 0; i < 800 * 600 * 3; i++)
    inked += whole[i] != 255;
  cr_assert_gt(inked, 800 * 600, "the canvas is busy (%zu)", inked);

  cv_raster_t *r = cv_raster_new(&view);
  void *png = NULL;
  size_t len = 0;
  cr_assert_eq(cv_raster_update(r, arr, 0, &png, &len), 0);
  uint8_t *banded = png_rgb(png, len, 800, 600);
  /* Off by at most one level, on the bands' edges only (rows 150, 300
   * and 450 and their neighbours), and rarely. */
  size_t differ = 0;
  for (size_t i = 0; i < 800 * 600 * 3; i++) {
    if (banded[i] == whole[i])
      continue;
    size_t y = i / 2400;
    differ++;
    cr_expect_leq(abs(banded[i] - whole[i]), 1, "at (%zu, %zu)", i % 2400 / 3,
                  y);
    cr_expect(y % 150 <= 1 || y % 150 == 149, "away from an edge: row %zu", y);
  }
  cr_expect_lt(differ, 200, "%zu bytes differ", differ);
  cv_raster_free(r);

  /* 400, then the other 300. */
  json_object *first = json_object_new_array();
  for (size_t i = 0; i < 400; i++)
    json_object_array_add(first,
                          json_object_get(json_object_array_get_idx(arr, i)));
  r = cv_raster_new(&view);
  void *png2 = NULL;
  size_t len2 = 0;
  cr_assert_eq(cv_raster_update(r, first, 0, &png2, &len2), 0);
  free(png2);
  cr_assert_eq(cv_raster_update(r, arr, 400, &png2, &len2), 0);
  cr_expect(len2 == len && memcmp(png2, png, len) == 0,
            "two steps give another PNG");
  cv_raster_free(r);
  free(png2);

  /* Brought back from the PNG: the same pixels, so the same file. */
  r = cv_raster_new(&view);
  cr_assert_eq(cv_raster_load_png(r, png, len), 0);
  cr_assert_eq(cv_raster_encode(r, &png2, &len2), 0);
  cr_expect(len2 == len && memcmp(png2, png, len) == 0,
            "the reloaded canvas encodes to another PNG");
  free(png2);
  cr_expect_eq(cv_raster_load_png(r, "\x89PNG\r\n\x1a\nbroken", 14), -EINVAL);
  /* A truncated image is refused, and leaves the canvas white. */
  cr_expect_eq(cv_raster_load_png(r, png, len - 100), -EINVAL);
  uint8_t *white = cv_raster_rgb_of(r);
  size_t not_white = 0;
  for (size_t i = 0; i < 800 * 600 * 3; i++)
    not_white += white[i] != 255;
  cr_expect_eq(not_white, 0, "%zu bytes left by a failed load", not_white);
  free(white);
  cv_view_t small = {CV_PAINT, 0, 400, 300};
  cv_raster_t *r2 = cv_raster_new(&small);
  cr_expect_eq(cv_raster_load_png(r2, png, len), -EINVAL,
               "an image of another size is refused");
  cv_raster_free(r2);
  cv_raster_free(r);
  free(png);
  free(banded);
  free(whole);
  json_object_put(first);
  json_object_put(arr);
}

/* ---- generate_svg's output ---- */

Test(genout, reads_both_kinds) {
  const char *out = "{\"paths\": [{\"type\": \"line\", \"points\": []}]}\n"
                    "\n{\"svg_paths\": [\"M0 0 L1 1\", 5]}\n";
  json_object *paths;
  char *err;
  cr_assert_eq(genout_read(out, strlen(out), &paths, &err), 0);
  cr_expect_eq(json_object_array_length(paths), 3);
  json_object *svg = json_object_array_get_idx(paths, 1);
  cr_expect_str_eq(json_object_get_string(json_object_object_get(svg, "type")),
                   "svg");
  json_object_put(paths);
}

Test(genout, refuses_with_the_line) {
  const char *cases[][2] = {
      {"{\"paths\": []}\nhello\n", "output line 2 is not one JSON object"},
      {"{\"paths\": \"x\"}", "output line 1: output_paths() takes a list"},
      {"{\"other\": 1}", "neither paths nor svg_paths"},
      {"{\"paths\": []} {}", "text after it"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    json_object *paths;
    char *err = NULL;
    cr_expect_eq(genout_read(cases[i][0], strlen(cases[i][0]), &paths, &err),
                 -1);
    cr_expect(err && strstr(err, cases[i][1]), "%s: %s", cases[i][0], err);
    free(err);
  }
}
