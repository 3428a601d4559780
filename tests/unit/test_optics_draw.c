/* The optical bench drawn (plugins/optics/opx_draw.c): the auto view,
 * pixels of the PNG at places computed by hand from the scene and the
 * view (letterboxed, y down), the highlights, and the SVG's shape. */
#include <cairo.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>

#include "opx_draw.h"

/* ray_tracing_shapely's reference prism (anchors/ray-optics.md section
 * 8); its segments: 0 the source ray (100,80)-(170,80), a gap; 1 the
 * weak reflection up from (170,80); 2 the refraction (170,80) to
 * (235.9333,100); ... */
static const char *PRISM =
    "{\"version\": 5, \"objs\": [{\"type\": \"Glass\", \"path\": ["
    "{\"x\": 200, \"y\": 50, \"arc\": false}, {\"x\": 250, \"y\": 100, "
    "\"arc\": false}, {\"x\": 150, \"y\": 100, \"arc\": false}], "
    "\"refIndex\": 1.5}, {\"type\": \"SingleRay\", "
    "\"p1\": {\"x\": 100, \"y\": 80}, \"p2\": {\"x\": 250, \"y\": 80}, "
    "\"brightness\": 1}]}";

/* A run of the scene text, as the plugin makes one. */
static opx_run_t *build(const char *text) {
  json_object *doc = json_tokener_parse(text);
  cr_assert_not_null(doc);
  opx_run_t *run = NULL;
  char *err = NULL;
  cr_assert_eq(opx_run_build(doc, 200000, &run, &err), 0, "%s", err ? err : "");
  json_object_put(doc);
  return run;
}

static void run_free(opx_run_t *run) {
  opx_run_free(run);
}

/* Text makes cairo load fontconfig, whose caches hold their patterns by
 * offsets valgrind cannot follow: at exit it reports them as lost. Each
 * test ends by emptying cairo's caches and fontconfig's. */
static void release_fonts(void) {
  opx_draw_release();
}

TestSuite(optics_draw, .fini = release_fonts);

typedef struct {
  int w, h;
  unsigned char *px; /* RGBA, w * h * 4 */
} image;

static image decode(const unsigned char *png, size_t len) {
  png_image pi;
  memset(&pi, 0, sizeof(pi));
  pi.version = PNG_IMAGE_VERSION;
  cr_assert(png_image_begin_read_from_memory(&pi, png, len), "%s", pi.message);
  pi.format = PNG_FORMAT_RGBA;
  image im = {(int)pi.width, (int)pi.height, malloc(PNG_IMAGE_SIZE(pi))};
  cr_assert(png_image_finish_read(&pi, NULL, im.px, 0, NULL), "%s", pi.message);
  return im;
}

/* Where scene point (x, y) lands in a w x h picture of view v: the view
 * scaled uniformly to fit and centred, y down, as the header promises. */
static void to_px(const double v[4], int w, int h, double x, double y, int *px,
                  int *py) {
  double s = fmin(w / v[2], h / v[3]);
  double ox = (w - v[2] * s) / 2 - v[0] * s, oy = (h - v[3] * s) / 2 - v[1] * s;
  *px = (int)floor(x * s + ox);
  *py = (int)floor(y * s + oy);
}

typedef struct {
  int r, g, b;
} colour;

static colour at(const image *im, const double v[4], double x, double y) {
  int px, py;
  to_px(v, im->w, im->h, x, y, &px, &py);
  cr_assert(px >= 0 && px < im->w && py >= 0 && py < im->h, "(%g, %g)", x, y);
  const unsigned char *p = im->px + ((size_t)py * im->w + px) * 4;
  return (colour){p[0], p[1], p[2]};
}

#define ASSERT_COLOUR(cond, c, what)                                           \
  cr_assert(cond, "%s: rgb(%d, %d, %d)", what, (c).r, (c).g, (c).b)

static image render(const opx_run_t *run, const opx_draw_opts_t *o) {
  unsigned char *png;
  size_t len;
  cr_assert_eq(opx_draw(run, o, NULL, NULL, &png, &len), 0);
  image im = decode(png, len);
  free(png);
  cr_assert_eq(im.w, o->width);
  cr_assert_eq(im.h, o->height);
  return im;
}

/* The reference's auto view is the box of the objects' points, 5 % per
 * side: x 100..250 (the ray's p1 to the prism's corner), y 50..100, so
 * (92.5, 47.5, 165, 55). The segments' starts, which ours adds, all lie
 * on the prism or at the ray's p1, inside that box. */
Test(optics_draw, auto_view) {
  opx_run_t *run = build(PRISM);
  opx_draw_opts_t o = {.width = 800, .height = 600};
  double v[4];
  opx_draw_view(run, &o, v);
  cr_assert_float_eq(v[0], 92.5, 1e-9);
  cr_assert_float_eq(v[1], 47.5, 1e-9);
  cr_assert_float_eq(v[2], 165.0, 1e-9);
  cr_assert_float_eq(v[3], 55.0, 1e-9);
  o.view[0] = 1, o.view[1] = 2, o.view[2] = 3, o.view[3] = 4;
  opx_draw_view(run, &o, v);
  cr_assert(v[0] == 1 && v[1] == 2 && v[2] == 3 && v[3] == 4);
  run_free(run);

  /* Nothing at all: the reference's default page. */
  run = build("{\"version\": 5, \"objs\": []}");
  memset(o.view, 0, sizeof(o.view));
  opx_draw_view(run, &o, v);
  cr_assert(v[0] == 0 && v[1] == 0 && v[2] == 800 && v[3] == 600);
  run_free(run);

  /* A lone point source: its rays all start on it, a box of no size,
   * which becomes 100 units square around it. */
  run = build("{\"version\": 5, \"objs\": [{\"type\": \"PointSource\", "
              "\"x\": 10, \"y\": 20}]}");
  opx_draw_view(run, &o, v);
  cr_assert(v[0] == -40 && v[1] == -30 && v[2] == 100 && v[3] == 100,
            "(%g, %g, %g, %g)", v[0], v[1], v[2], v[3]);
  run_free(run);
}

/* 400 x 300 of a 165 x 55 view: 2.42 pixels per unit, letterboxed with
 * white bands above and below. */
Test(optics_draw, prism_pixels) {
  opx_run_t *run = build(PRISM);
  opx_draw_opts_t o = {.width = 400, .height = 300, .draw_gaps = 1};
  double v[4] = {92.5, 47.5, 165, 55};
  image im = render(run, &o);
  colour c = {im.px[0], im.px[1], im.px[2]};
  ASSERT_COLOUR(c.r == 255 && c.g == 255 && c.b == 255, c, "corner");
  /* The source ray, fully bright, before the prism. */
  c = at(&im, v, 135, 80);
  ASSERT_COLOUR(c.r > 200 && c.g < 100 && c.b < 100, c, "source ray");
  /* Inside the glass, far from rays and text: white under cyan at 0.3. */
  c = at(&im, v, 200, 65);
  ASSERT_COLOUR(c.r < 200 && c.g > 220 && c.b > 220, c, "glass");
  /* y down: the prism's base (y = 100) is at the bottom of the picture,
   * its apex (y = 50) at the top. Flipped, (160, 95) would show the
   * scene's (160, 55), outside the glass, and the other way round. */
  c = at(&im, v, 160, 95);
  ASSERT_COLOUR(c.r < 200 && c.g > 220, c, "near the base");
  c = at(&im, v, 160, 55);
  ASSERT_COLOUR(c.r == 255 && c.g == 255 && c.b == 255, c, "beside the apex");
  free(im.px);

  /* Without draw_gaps, gap segments are left out as ray_tracing_shapely
   * does. The simulator marks gap as Ray Optics Simulation does (a ray
   * that meets another object than the ray before it, which image
   * detection must not pair), and here every segment is one: none is
   * drawn, not even the source ray. */
  for (long i = 0; i < run->sim->nsegs; i++)
    cr_assert(run->sim->segs[i].gap, "segment %ld", i);
  o.draw_gaps = 0;
  im = render(run, &o);
  c = at(&im, v, 135, 80);
  ASSERT_COLOUR(c.r == 255 && c.g == 255 && c.b == 255, c, "gap not drawn");
  c = at(&im, v, (170 + 235.9333) / 2, 90);
  ASSERT_COLOUR(c.r < 200 && c.g > 220 && c.b > 220, c, "refracted: glass");
  free(im.px);
  run_free(run);
}

Test(optics_draw, highlights) {
  opx_run_t *run = build(PRISM);
  double v[4] = {92.5, 47.5, 165, 55};
  unsigned char rays[7] = {0, 0, 1, 0, 0, 0, 0};
  unsigned char *edges = calloc((size_t)run->geom->nedges, 1);
  cr_assert_eq(run->sim->nsegs, 7);
  /* The prism's base, from (250,100) to (150,100). */
  int base = -1;
  for (int i = 0; i < run->geom->nedges; i++) {
    const opx_edge_t *e = &run->geom->edges[i];
    if (e->obj == 0 && fabs(e->mid.x - 200) < 1e-9 &&
        fabs(e->mid.y - 100) < 1e-9)
      base = i;
  }
  cr_assert_geq(base, 0);
  edges[base] = 1;
  opx_draw_opts_t o = {.width = 400,
                       .height = 300,
                       .rays = rays,
                       .edges = edges,
                       .draw_gaps = 1};
  image im = render(run, &o);
  colour c = at(&im, v, (170 + 235.9333) / 2, 90);
  ASSERT_COLOUR(c.r > 200 && c.g < 80 && c.b > 150, c, "highlighted ray");
  /* The other rays are a faint gray: even, and not white. */
  c = at(&im, v, 135, 80);
  ASSERT_COLOUR(c.r < 248 && c.r > 200 && abs(c.r - c.g) < 12 &&
                    abs(c.b - c.g) < 12,
                c, "faint ray");
  /* The base, left of where the rays meet it, in lime. */
  c = at(&im, v, 200, 100);
  ASSERT_COLOUR(c.g > 200 && c.r < 100 && c.b < 100, c, "highlighted edge");
  free(im.px);
  free(edges);
  run_free(run);
}

/* Every kind of object ray_tracing_shapely stumbled on or drew as a gray
 * line, with a view of 400 x 300 units at 400 x 300 pixels so that
 * scene and picture coordinates coincide. The point source is too dim
 * for its rays to show. */
Test(optics_draw, objects) {
  opx_run_t *run = build(
      "{\"version\": 5, \"objs\": ["
      "{\"type\": \"SphericalLens\", \"path\": [{\"x\": 60, \"y\": 30, "
      "\"arc\": false}, {\"x\": 100, \"y\": 30, \"arc\": false}, {\"x\": 110, "
      "\"y\": 60, \"arc\": true}, {\"x\": 100, \"y\": 90, \"arc\": false}, "
      "{\"x\": 60, \"y\": 90, \"arc\": false}, {\"x\": 50, \"y\": 60, \"arc\": "
      "true}]},"
      "{\"type\": \"IdealLens\", \"p1\": {\"x\": 150, \"y\": 100}, \"p2\": "
      "{\"x\": 150, \"y\": 200}, \"focalLength\": 100},"
      "{\"type\": \"Mirror\", \"p1\": {\"x\": 250, \"y\": 50}, \"p2\": {\"x\": "
      "250, \"y\": 120}},"
      "{\"type\": \"Blocker\", \"p1\": {\"x\": 300, \"y\": 200}, \"p2\": "
      "{\"x\": 380, \"y\": 200}},"
      "{\"type\": \"PointSource\", \"x\": 50, \"y\": 150, \"brightness\": "
      "0.001},"
      "{\"type\": \"ArcMirror\", \"p1\": {\"x\": 200, \"y\": 250}, \"p2\": "
      "{\"x\": 300, \"y\": 250}, \"p3\": {\"x\": 250, \"y\": 230}}]}");
  double v[4] = {0, 0, 400, 300};
  opx_draw_opts_t o = {.width = 400, .height = 300};
  memcpy(o.view, v, sizeof(v));
  image im = render(run, &o);
  colour c = at(&im, v, 80, 40);
  ASSERT_COLOUR(c.r < 200 && c.g > 220 && c.b > 220, c, "spherical lens");
  /* Its right face is the arc through (100, 30), (110, 60), (100, 90):
   * centre (60, 60), radius 50, so at y = 50 it is at x = 60 + sqrt(2400)
   * = 108.99. Had the arcs gone the long way round, the outline would
   * be another shape. (Its name is written across y = 60.) */
  c = at(&im, v, 106, 50);
  ASSERT_COLOUR(c.r < 200 && c.g > 220, c, "inside the bulge");
  c = at(&im, v, 112, 50);
  ASSERT_COLOUR(c.r == 255 && c.g == 255 && c.b == 255, c, "outside it");
  c = at(&im, v, 150, 125);
  ASSERT_COLOUR(c.b > 180 && c.r < 100 && c.g < 150, c, "ideal lens");
  c = at(&im, v, 250, 100);
  ASSERT_COLOUR(c.r > 100 && c.r < 200 && abs(c.r - c.b) < 40, c, "mirror");
  c = at(&im, v, 340, 200);
  ASSERT_COLOUR(c.r < 60 && c.g < 60 && c.b < 60, c, "blocker");
  c = at(&im, v, 50, 150);
  ASSERT_COLOUR(c.r > 230 && c.g > 100 && c.g < 180 && c.b < 60, c,
                "point source");
  /* The arc mirror through (250, 230), centre (250, 302.5), radius 72.5:
   * its apex is drawn, the rest of its circle (e.g. (181.1, 280)) not. */
  c = at(&im, v, 250, 230);
  ASSERT_COLOUR(c.r < 200 && abs(c.r - c.b) < 40, c, "arc mirror");
  c = at(&im, v, 181.1, 280);
  ASSERT_COLOUR(c.r == 255 && c.g == 255 && c.b == 255, c, "not its circle");
  free(im.px);

  char *svg;
  size_t len;
  cr_assert_eq(opx_draw(run, &o, &svg, &len, NULL, NULL), 0);
  cr_assert_gt(len, 100);
  free(svg);
  run_free(run);
}

/* A minimal well-formedness check: every element closed in order. */
static int balanced(const char *s) {
  char *stack[64];
  int depth = 0, seen = 0;
  while ((s = strchr(s, '<')) != NULL) {
    if (strncmp(s, "<![CDATA[", 9) == 0) {
      s = strstr(s, "]]>");
      if (s == NULL)
        return 0;
      continue;
    }
    const char *end = s + 1;
    char quote = 0;
    for (; *end && (quote || *end != '>'); end++)
      if (*end == '"' || *end == '\'')
        quote = quote == *end ? 0 : quote ? quote : *end;
    if (*end != '>')
      return 0;
    if (s[1] == '?' || s[1] == '!') {
      s = end;
      continue;
    }
    int closing = s[1] == '/';
    const char *name = s + 1 + closing;
    size_t n = strcspn(name, " \t\r\n/>");
    if (closing) {
      if (depth == 0 || strlen(stack[depth - 1]) != n ||
          strncmp(stack[depth - 1], name, n) != 0)
        return 0;
      free(stack[--depth]);
    } else if (end[-1] != '/') {
      if (depth == 64)
        return 0;
      stack[depth++] = strndup(name, n);
      seen++;
    }
    s = end;
  }
  int ok = depth == 0 && seen > 0;
  while (depth > 0)
    free(stack[--depth]);
  return ok;
}

Test(optics_draw, svg) {
  opx_run_t *run = build(PRISM);
  opx_draw_opts_t o = {.width = 640, .height = 480};
  char *svg;
  size_t len;
  unsigned char *png;
  size_t png_len;
  cr_assert_eq(opx_draw(run, &o, &svg, &len, &png, &png_len), 0);
  cr_assert_eq(strlen(svg), len);
  cr_assert(strncmp(svg, "<?xml", 5) == 0);
  cr_assert_not_null(strstr(svg, "<svg"));
  cr_assert_not_null(strstr(svg, "width=\"640"));
  cr_assert_not_null(strstr(svg, "height=\"480"));
  cr_assert(balanced(svg));
  cr_assert(png_len > 8 && memcmp(png, "\x89PNG", 4) == 0);
  free(svg);
  free(png);
  run_free(run);
}

Test(optics_draw, bad_sizes) {
  opx_run_t *run = build(PRISM);
  static const int sizes[][2] = {
      {0, 10}, {10, 0}, {-1, 10}, {4097, 10}, {10, 4097}};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    opx_draw_opts_t o = {.width = sizes[i][0], .height = sizes[i][1]};
    char *svg = (char *)1;
    size_t len = 1;
    cr_assert_eq(opx_draw(run, &o, &svg, &len, NULL, NULL), -EINVAL);
    cr_assert_null(svg);
  }
  opx_draw_opts_t o = {.width = 4096, .height = 1};
  unsigned char *png;
  size_t len;
  cr_assert_eq(opx_draw(run, &o, NULL, NULL, &png, &len), 0);
  free(png);
  run_free(run);
}
