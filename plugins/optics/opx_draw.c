/* The optical bench drawn with cairo (opx_draw.h): one routine paints the
 * scene on any cairo context, and the two outputs only differ in their
 * surface, so the SVG and the PNG always show the same picture.
 *
 * Coordinates. The scene is y-down like the picture, so the mapping is a
 * uniform scale and an offset, never a flip. Paths are built under that
 * mapping and stroked under the identity, so that line widths, dashes,
 * dots and text are in pixels whatever the scene's scale (cairo keeps a
 * path in device space once built). */
#include <cairo-svg.h>
#include <cairo.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opx_draw.h"

/* Where the scene lands: picture = scene * s + (ox, oy); clip is the
 * part of the scene the picture shows (lo x, lo y, hi x, hi y), a few
 * pixels wider so that clipped ends stay out of sight. */
typedef struct {
  double s, ox, oy;
  double clip[4];
  int width, height;
} view_map;

typedef struct {
  double r, g, b;
} rgb;

static const rgb C_GLASS_FILL = {0.0, 0.8, 0.9}, C_GLASS_LINE = {0, 0, 0.5},
                 C_MIRROR = {0.55, 0.57, 0.62}, C_BLOCKER = {0, 0, 0},
                 C_LENS = {0.1, 0.3, 0.95}, C_DETECTOR = {0, 0.42, 0.1},
                 C_GRATING = {0.55, 0.15, 0.7}, C_SURFACE = {0.3, 0.3, 0.4},
                 C_SOURCE = {1.0, 0.55, 0.0}, C_OTHER = {0.6, 0.6, 0.6},
                 C_LABEL = {0, 0, 0.55}, C_NAME = {0.15, 0.15, 0.15},
                 C_RAY = {1, 0, 0}, C_FAINT = {0.5, 0.5, 0.5},
                 C_HIGHLIGHT = {1.0, 0.0, 0.85}, C_EDGE_HL = {0.2, 1.0, 0.0};

/* Rays are stroked in batches of one style. A batch's path is stroked
 * every few dozen segments: cairo's rasteriser slows down more than
 * linearly with the crossings within one path, and once per segment the
 * calls' own cost dominates (measured on 100,000 segments: chunks of 32
 * took 2.4 s, of 1 4.7 s, of 1,000 8 s). */
#define ALPHA_LEVELS 64
#define WL_MIN 380
#define WL_STEP 2
#define WL_BUCKETS 162 /* 380 .. 702 nm in steps of 2 */
#define STROKE_CHUNK 32
/* In pictures of many rays, antialiasing costs more than it shows (the
 * picture is saturated anyway): above these counts the rays of a PNG are
 * drawn with cairo's fast antialiasing, then with none, in larger
 * chunks. 100,000 segments of 800 x 600: 2.4 s antialiased, 1.9 s fast,
 * 0.6 s without; 1,000,000 without: 7 s. */
#define AA_FULL_MAX 20000
#define AA_FAST_MAX 200000
#define STROKE_CHUNK_PLAIN 1024

/* A number field of o's class by its JSON name (e.g. IdealLens's
 * "focalLength"): the classes keep their structs private, but their field
 * tables say where each field is. 1 if found. */
static int field_num(const atl_op_obj *o, const char *name, double *out) {
  for (const atl_op_field *f = o->cls->fields; f != NULL && f->name != NULL;
       f++)
    if (f->type == ATL_OP_F_NUM && strcmp(f->name, name) == 0) {
      memcpy(out, (const char *)o + f->offset, sizeof(double));
      return 1;
    }
  return 0;
}

/* A point source's position (it has no edge to show it by). */
static int point_of(const opx_obj_t *ob, atl_op_pt *p) {
  return ob->outline.n == 0 && field_num(ob->o, "x", &p->x) &&
         field_num(ob->o, "y", &p->y) && isfinite(p->x) && isfinite(p->y);
}

static void grow(double b[4], double x, double y) {
  if (!isfinite(x) || !isfinite(y))
    return;
  b[0] = fmin(b[0], x);
  b[1] = fmin(b[1], y);
  b[2] = fmax(b[2], x);
  b[3] = fmax(b[3], y);
}

void opx_draw_view(const opx_run_t *run, const opx_draw_opts_t *opts,
                   double view[4]) {
  if (opts != NULL && isfinite(opts->view[0]) && isfinite(opts->view[1]) &&
      opts->view[2] > 0 && opts->view[3] > 0 && isfinite(opts->view[2]) &&
      isfinite(opts->view[3])) {
    memcpy(view, opts->view, sizeof(opts->view));
    return;
  }
  double b[4] = {INFINITY, INFINITY, -INFINITY, -INFINITY};
  const opx_geom_t *g = run->geom;
  for (int i = 0; g != NULL && i < g->nobjs; i++) {
    atl_op_pt p;
    if (g->objs[i].outline.n > 0) {
      grow(b, g->objs[i].box[0], g->objs[i].box[1]);
      grow(b, g->objs[i].box[2], g->objs[i].box[3]);
    } else if (point_of(&g->objs[i], &p))
      grow(b, p.x, p.y);
  }
  /* Starts only: a segment that leaves the scene has a mere direction
   * point for p2, and the others end on an object or a start. */
  for (long i = 0; run->sim != NULL && i < run->sim->nsegs; i++)
    grow(b, run->sim->segs[i].p1.x, run->sim->segs[i].p1.y);
  if (!(b[0] <= b[2])) {
    view[0] = 0, view[1] = 0, view[2] = 800, view[3] = 600;
    return;
  }
  for (int k = 0; k < 2; k++) {
    double lo = b[k], size = b[k + 2] - b[k];
    if (size > 0) {
      view[k] = lo - 0.05 * size;
      view[k + 2] = 1.1 * size;
    } else {
      view[k] = lo - 50;
      view[k + 2] = 100;
    }
  }
}

/* The view letterboxed into width x height, centred. */
static view_map map_make(const double v[4], int width, int height) {
  view_map m;
  m.s = fmin(width / v[2], height / v[3]);
  m.ox = (width - v[2] * m.s) / 2 - v[0] * m.s;
  m.oy = (height - v[3] * m.s) / 2 - v[1] * m.s;
  double pad = 4 / m.s;
  m.clip[0] = -m.ox / m.s - pad;
  m.clip[1] = -m.oy / m.s - pad;
  m.clip[2] = (width - m.ox) / m.s + pad;
  m.clip[3] = (height - m.oy) / m.s + pad;
  m.width = width;
  m.height = height;
  return m;
}

int opx_draw_box(const opx_run_t *run, const opx_draw_opts_t *opts, int i,
                 double box[4]) {
  const opx_geom_t *g = run->geom;
  if (g == NULL || i < 0 || i >= g->nobjs || opts->width < 1 ||
      opts->height < 1)
    return -1;
  double v[4];
  opx_draw_view(run, opts, v);
  view_map m = map_make(v, opts->width, opts->height);
  const opx_obj_t *ob = &g->objs[i];
  double b[4];
  atl_op_pt p;
  if (ob->outline.n > 0)
    memcpy(b, ob->box, sizeof(b));
  else if (point_of(ob, &p))
    b[0] = b[2] = p.x, b[1] = b[3] = p.y;
  else
    return -1;
  /* A mirror along an axis, or a point, still gets a box a finger can
   * find: at least POINT_BOX pixels each way. */
  enum { POINT_BOX = 12 };
  double x0 = b[0] * m.s + m.ox, y0 = b[1] * m.s + m.oy;
  double x1 = b[2] * m.s + m.ox, y1 = b[3] * m.s + m.oy;
  if (!isfinite(x0) || !isfinite(y0) || !isfinite(x1) || !isfinite(y1))
    return -1;
  if (x1 - x0 < POINT_BOX)
    x0 = (x0 + x1 - POINT_BOX) / 2, x1 = x0 + POINT_BOX;
  if (y1 - y0 < POINT_BOX)
    y0 = (y0 + y1 - POINT_BOX) / 2, y1 = y0 + POINT_BOX;
  /* Clipped to the picture; one wholly outside it has no box. */
  x0 = fmax(x0, 0), y0 = fmax(y0, 0);
  x1 = fmin(x1, opts->width), y1 = fmin(y1, opts->height);
  if (x1 <= x0 || y1 <= y0)
    return -1;
  box[0] = x0, box[1] = y0, box[2] = x1 - x0, box[3] = y1 - y0;
  return 0;
}

static void use_scene(cairo_t *cr, const view_map *m) {
  cairo_matrix_t mat;
  cairo_matrix_init(&mat, m->s, 0, 0, m->s, m->ox, m->oy);
  cairo_set_matrix(cr, &mat);
}

/* Strokes (and keeps, with preserve) the current path width pixels wide;
 * the caller's matrix is the scene's again afterwards. */
static void stroke_px(cairo_t *cr, const view_map *m, rgb c, double alpha,
                      double width, int preserve) {
  cairo_identity_matrix(cr);
  cairo_set_source_rgba(cr, c.r, c.g, c.b, alpha);
  cairo_set_line_width(cr, width);
  if (preserve)
    cairo_stroke_preserve(cr);
  else
    cairo_stroke(cr);
  use_scene(cr, m);
}

/* Clips the line p + t d, t in [t0, t1], to the box: Liang and Barsky.
 * 0 when nothing of it is inside. */
static int clip_line(const double box[4], atl_op_pt p, atl_op_pt d, double *t0,
                     double *t1) {
  double pq[4][2] = {{-d.x, p.x - box[0]},
                     {d.x, box[2] - p.x},
                     {-d.y, p.y - box[1]},
                     {d.y, box[3] - p.y}};
  for (int k = 0; k < 4; k++) {
    double pk = pq[k][0], qk = pq[k][1];
    if (pk == 0) {
      if (qk < 0)
        return 0;
      continue;
    }
    double t = qk / pk;
    if (pk < 0 && t > *t0)
      *t0 = t;
    else if (pk > 0 && t < *t1)
      *t1 = t;
  }
  return *t0 <= *t1;
}

/* Adds the visible part of segment s to the path (in scene units, under
 * the scene's matrix); 0 if none of it is visible. */
static int seg_path(cairo_t *cr, const view_map *m, const atl_op_segment *s) {
  atl_op_pt d = {s->p2.x - s->p1.x, s->p2.y - s->p1.y};
  if (!isfinite(s->p1.x) || !isfinite(s->p1.y) || !isfinite(d.x) ||
      !isfinite(d.y))
    return 0;
  /* A segment that left the scene goes on to the picture's edge. */
  double t0 = 0, t1 = s->hit_obj < 0 ? INFINITY : 1;
  if (!clip_line(m->clip, s->p1, d, &t0, &t1) || !isfinite(t1))
    return 0;
  cairo_move_to(cr, s->p1.x + t0 * d.x, s->p1.y + t0 * d.y);
  cairo_line_to(cr, s->p1.x + t1 * d.x, s->p1.y + t1 * d.y);
  return 1;
}

/* Adds one edge to the path, joined to the previous edge when that one
 * ends where this one starts (prev NULL: a new subpath). Arcs are exact:
 * the outline's sweep is in the scene's y-down angles, which are
 * cairo's too, so a positive sweep is cairo_arc's direction and a
 * negative one cairo_arc_negative's. */
static void edge_path(cairo_t *cr, const atl_op_edge *e,
                      const atl_op_edge *prev) {
  if (prev == NULL || prev->p2.x != e->p1.x || prev->p2.y != e->p1.y)
    cairo_move_to(cr, e->p1.x, e->p1.y);
  switch (e->kind) {
  case ATL_OP_EDGE_ARC:
    if (e->da >= 0)
      cairo_arc(cr, e->c.x, e->c.y, e->r, e->a0, e->a0 + e->da);
    else
      cairo_arc_negative(cr, e->c.x, e->c.y, e->r, e->a0, e->a0 + e->da);
    break;
  case ATL_OP_EDGE_CURVE:
    for (int k = 1; k < e->npts; k++)
      cairo_line_to(cr, e->pts[k].x, e->pts[k].y);
    break;
  default:
    cairo_line_to(cr, e->p2.x, e->p2.y);
  }
}

static void outline_path(cairo_t *cr, const atl_op_outline *ol) {
  cairo_new_path(cr);
  for (int k = 0; k < ol->n; k++)
    edge_path(cr, &ol->edges[k], k > 0 ? &ol->edges[k - 1] : NULL);
  if (ol->closed)
    cairo_close_path(cr);
}

/* A PlaneGlass's half-plane, as the part of the visible box on its inside
 * (the box clipped by the edge's line, Sutherland and Hodgman). Which
 * side is inside comes from the geometry, which owns that convention. */
static void half_plane_path(cairo_t *cr, const view_map *m, const opx_geom_t *g,
                            int i) {
  const atl_op_edge *e = &g->objs[i].outline.edges[0];
  double dx = e->p2.x - e->p1.x, dy = e->p2.y - e->p1.y;
  double len = hypot(dx, dy);
  if (!(len > 0))
    return;
  double eps = 1e-3 * (m->clip[2] - m->clip[0]);
  atl_op_pt probe = {(e->p1.x + e->p2.x) / 2 - dy / len * eps,
                     (e->p1.y + e->p2.y) / 2 + dx / len * eps};
  /* probe is on the side where dx (y - y1) - dy (x - x1) > 0. */
  double sign = opx_geom_contains(g, i, probe, 0) ? 1 : -1;
  const double *c = m->clip;
  atl_op_pt box[4] = {{c[0], c[1]}, {c[2], c[1]}, {c[2], c[3]}, {c[0], c[3]}};
  atl_op_pt out[8];
  int n = 0;
  for (int k = 0; k < 4; k++) {
    atl_op_pt a = box[k], b = box[(k + 1) % 4];
    double sa = sign * (dx * (a.y - e->p1.y) - dy * (a.x - e->p1.x));
    double sb = sign * (dx * (b.y - e->p1.y) - dy * (b.x - e->p1.x));
    if (sa >= 0)
      out[n++] = a;
    if ((sa >= 0) != (sb >= 0)) {
      double t = sa / (sa - sb);
      out[n++] = (atl_op_pt){a.x + t * (b.x - a.x), a.y + t * (b.y - a.y)};
    }
  }
  cairo_new_path(cr);
  for (int k = 0; k < n; k++)
    cairo_line_to(cr, out[k].x, out[k].y);
  cairo_close_path(cr);
}

static void dot(cairo_t *cr, const view_map *m, atl_op_pt p, double radius,
                rgb c) {
  cairo_identity_matrix(cr);
  cairo_new_path(cr);
  cairo_arc(cr, p.x * m->s + m->ox, p.y * m->s + m->oy, radius, 0, 2 * M_PI);
  cairo_set_source_rgb(cr, c.r, c.g, c.b);
  cairo_fill(cr);
  use_scene(cr, m);
}

/* An ideal lens as the textbook draws one: for a converging lens
 * (f > 0) each end carries an arrow head pointing out of the lens, its
 * barbs folding in towards the centre; a diverging one gets heads
 * pointing in. A short tick marks the centre. In pixels. */
static void lens_marks(cairo_t *cr, const view_map *m, const atl_op_edge *e,
                       double f) {
  double x1 = e->p1.x * m->s + m->ox, y1 = e->p1.y * m->s + m->oy;
  double x2 = e->p2.x * m->s + m->ox, y2 = e->p2.y * m->s + m->oy;
  double len = hypot(x2 - x1, y2 - y1);
  if (!(len > 0))
    return;
  double ux = (x2 - x1) / len, uy = (y2 - y1) / len; /* along, p1 to p2 */
  double head = fmin(10, len / 3), dir = f > 0 ? 1 : -1;
  cairo_identity_matrix(cr);
  cairo_new_path(cr);
  for (int end = 0; end < 2; end++) {
    double x = end ? x2 : x1, y = end ? y2 : y1;
    double out = end ? 1 : -1; /* the outward direction along the lens */
    double bx = x - dir * out * ux * head, by = y - dir * out * uy * head;
    cairo_move_to(cr, bx - uy * head * 0.6, by + ux * head * 0.6);
    cairo_line_to(cr, x, y);
    cairo_line_to(cr, bx + uy * head * 0.6, by - ux * head * 0.6);
  }
  double cx = (x1 + x2) / 2, cy = (y1 + y2) / 2;
  cairo_move_to(cr, cx - uy * 4, cy + ux * 4);
  cairo_line_to(cr, cx + uy * 4, cy - ux * 4);
  use_scene(cr, m);
  stroke_px(cr, m, C_LENS, 1, 2.5, 0);
}

/* A source: a beam is its emitting segment; a single ray or an angle
 * source is its start, with a short stroke (in pixels) towards p2, which
 * only gives the direction: drawn to p2, it would cross whatever the ray
 * meets. */
static void source_mark(cairo_t *cr, const view_map *m, const opx_obj_t *ob,
                        rgb c, double w) {
  const atl_op_edge *e = &ob->outline.edges[0];
  cairo_new_path(cr);
  if (strcmp(ob->type, "Beam") == 0)
    edge_path(cr, e, NULL);
  else {
    double dx = e->p2.x - e->p1.x, dy = e->p2.y - e->p1.y;
    double len = hypot(dx, dy) * m->s, k = len > 0 ? fmin(1, 18 / len) : 0;
    cairo_move_to(cr, e->p1.x, e->p1.y);
    cairo_line_to(cr, e->p1.x + k * dx, e->p1.y + k * dy);
  }
  stroke_px(cr, m, c, 1, 2 + w, 0);
  dot(cr, m, e->p1, 3.5 + w, c);
}

static rgb family_colour(opx_family_t f) {
  switch (f) {
  case OPX_SOURCE:
    return C_SOURCE;
  case OPX_MIRROR:
    return C_MIRROR;
  case OPX_GLASS:
    return C_GLASS_LINE;
  case OPX_LENS:
    return C_LENS;
  case OPX_BLOCKER:
    return C_BLOCKER;
  case OPX_GRATING:
    return C_GRATING;
  case OPX_DETECTOR:
    return C_DETECTOR;
  case OPX_SURFACE:
    return C_SURFACE;
  default:
    return C_OTHER;
  }
}

static void draw_object(cairo_t *cr, const view_map *m, const opx_geom_t *g,
                        int i, int hl) {
  const opx_obj_t *ob = &g->objs[i];
  const atl_op_outline *ol = &ob->outline;
  rgb c = family_colour(ob->family);
  double w = hl ? 2 : 0; /* a highlighted object's extra width */
  atl_op_pt p;
  if (ob->family == OPX_SOURCE && point_of(ob, &p)) {
    dot(cr, m, p, 4 + w, c);
    return;
  }
  if (ol->n == 0)
    return;
  if (ob->family == OPX_GLASS) {
    if (ol->half_plane)
      half_plane_path(cr, m, g, i);
    else
      outline_path(cr, ol);
    cairo_set_source_rgba(cr, C_GLASS_FILL.r, C_GLASS_FILL.g, C_GLASS_FILL.b,
                          hl ? 0.55 : 0.3);
    if (ol->closed || ol->half_plane)
      cairo_fill(cr);
    outline_path(cr, ol);
    stroke_px(cr, m, c, 1, 1.5 + w, 0);
    return;
  }
  if (ob->family == OPX_SOURCE) {
    source_mark(cr, m, ob, c, w);
    return;
  }
  outline_path(cr, ol);
  switch (ob->family) {
  case OPX_LENS: {
    double f = 1;
    field_num(ob->o, "focalLength", &f);
    stroke_px(cr, m, c, 1, 3 + w, 0);
    lens_marks(cr, m, &ol->edges[0], f);
    break;
  }
  case OPX_GRATING: {
    static const double dash[] = {6, 3};
    cairo_set_dash(cr, dash, 2, 0);
    stroke_px(cr, m, c, 1, 3 + w, 0);
    cairo_set_dash(cr, NULL, 0, 0);
    break;
  }
  case OPX_BLOCKER:
    if (ol->closed) {
      cairo_set_source_rgba(cr, c.r, c.g, c.b, 0.25);
      cairo_fill_preserve(cr);
    }
    stroke_px(cr, m, c, 1, 3 + w, 0);
    break;
  case OPX_OTHER:
    stroke_px(cr, m, c, 1, 1 + w, 0);
    break;
  default:
    stroke_px(cr, m, c, 1, 3 + w, 0);
  }
}

/* Text centred on the scene point p pushed away by (nx, ny) times the
 * given gap plus the text's own extent that way, in pixels (n = 0: on
 * p). */
static void text_at(cairo_t *cr, const view_map *m, atl_op_pt p, double nx,
                    double ny, const char *text, double size, rgb c) {
  cairo_text_extents_t ext;
  cairo_identity_matrix(cr);
  cairo_set_font_size(cr, size);
  cairo_text_extents(cr, text, &ext);
  double push = 6 + fabs(nx) * ext.width / 2 + fabs(ny) * ext.height / 2;
  double x = p.x * m->s + m->ox + nx * push;
  double y = p.y * m->s + m->oy + ny * push;
  /* Kept inside the picture when it fits: names of objects at its edge. */
  if (ext.width + 4 < m->width)
    x = fmin(fmax(x, ext.width / 2 + 2), m->width - ext.width / 2 - 2);
  cairo_move_to(cr, x - ext.width / 2 - ext.x_bearing,
                y - ext.height / 2 - ext.y_bearing);
  cairo_set_source_rgb(cr, c.r, c.g, c.b);
  cairo_show_text(cr, text);
  cairo_new_path(cr);
  use_scene(cr, m);
}

static void draw_labels(cairo_t *cr, const view_map *m, const opx_geom_t *g) {
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
                         CAIRO_FONT_WEIGHT_NORMAL);
  for (int i = 0; i < g->nedges; i++) {
    const opx_edge_t *ed = &g->edges[i];
    const opx_obj_t *ob = &g->objs[ed->obj];
    if (ob->family != OPX_GLASS || ed->short_label[0] == 0)
      continue;
    /* Pushed away from the centre so that the label sits outside. */
    atl_op_pt c = ob->vertex_centroid;
    atl_op_pt at = {ed->mid.x + 0.15 * (ed->mid.x - c.x),
                    ed->mid.y + 0.15 * (ed->mid.y - c.y)};
    text_at(cr, m, at, 0, 0, ed->short_label, 9, C_LABEL);
  }
  for (int i = 0; i < g->nobjs; i++) {
    const opx_obj_t *ob = &g->objs[i];
    atl_op_pt p;
    double nx = 0, ny = -1; /* above a point */
    if (ob->family == OPX_OTHER || ob->display_name == NULL)
      continue;
    if (point_of(ob, &p))
      ;
    else if (ob->outline.n == 0)
      continue;
    else if (ob->family == OPX_GLASS && !ob->outline.half_plane)
      p = ob->vertex_centroid, ny = 0;
    else {
      /* Beside a line-like object's middle, on its upper (else right)
       * side, clear of the line whatever its slope. */
      const atl_op_edge *e = &ob->outline.edges[0];
      double dx = e->p2.x - e->p1.x, dy = e->p2.y - e->p1.y, l = hypot(dx, dy);
      p = atl__op_edge_point(e, 0.5);
      if (l > 0) {
        nx = dy / l, ny = -dx / l;
        if (ny > 0 || (ny == 0 && nx < 0))
          nx = -nx, ny = -ny;
      }
    }
    text_at(cr, m, p, nx, ny, ob->display_name, 11, C_NAME);
  }
}

/* A standard map from a wavelength (nm) to a colour: piecewise linear
 * through violet, blue, cyan, green, yellow and red, dimmed towards the
 * ends of the visible range. */
static rgb wavelength_rgb(double wl) {
  rgb c = {0, 0, 0};
  if (wl >= 380 && wl < 440)
    c = (rgb){(440 - wl) / 60, 0, 1};
  else if (wl >= 440 && wl < 490)
    c = (rgb){0, (wl - 440) / 50, 1};
  else if (wl >= 490 && wl < 510)
    c = (rgb){0, 1, (510 - wl) / 20};
  else if (wl >= 510 && wl < 580)
    c = (rgb){(wl - 510) / 70, 1, 0};
  else if (wl >= 580 && wl < 645)
    c = (rgb){1, (645 - wl) / 65, 0};
  else if (wl >= 645)
    c = (rgb){1, 0, 0};
  double k = 1;
  if (wl < 420)
    k = 0.3 + 0.7 * (wl - 380) / 40;
  else if (wl > 700)
    k = 0.3 + 0.7 * (780 - fmin(wl, 780)) / 80;
  return (rgb){c.r * k, c.g * k, c.b * k};
}

typedef struct {
  const opx_run_t *run;
  const opx_draw_opts_t *opts;
  int highlighting; /* some ray is highlighted */
} ray_ctx;

/* The style of segment i as a batch key: 0 none (not drawn); with
 * highlights 1 faint and 2 highlighted; else a colour bucket and an
 * opacity level. */
static int ray_key(const ray_ctx *x, long i) {
  const atl_op_segment *s = &x->run->sim->segs[i];
  if (s->gap && !x->opts->draw_gaps)
    return 0;
  if (x->highlighting)
    return x->opts->rays[i] ? 2 : 1;
  double a = fmin(1, s->bs + s->bp);
  int level = isfinite(a) ? (int)lround(a * (ALPHA_LEVELS - 1)) : 0;
  if (level <= 0)
    return 0;
  int colour = 0;
  if (x->run->scene->simulate_colors && isfinite(s->wavelength)) {
    long b = lround((s->wavelength - WL_MIN) / WL_STEP);
    colour = 1 + (int)(b < 0 ? 0 : b >= WL_BUCKETS ? WL_BUCKETS - 1 : b);
  }
  return colour * ALPHA_LEVELS + level;
}

static void key_style(const ray_ctx *x, int key, rgb *c, double *alpha,
                      double *width) {
  if (x->highlighting) {
    *c = key == 2 ? C_HIGHLIGHT : C_FAINT;
    *alpha = key == 2 ? 1 : 0.15;
    *width = key == 2 ? 3 : 1;
    return;
  }
  int colour = key / ALPHA_LEVELS;
  *c = colour == 0 ? C_RAY : wavelength_rgb(WL_MIN + (colour - 1) * WL_STEP);
  *alpha = (double)(key % ALPHA_LEVELS) / (ALPHA_LEVELS - 1);
  *width = 1.5;
}

/* The rays, grouped by style (a counting sort by key) so that each style
 * is stroked in a few large paths rather than once per segment. 0 or
 * -ENOMEM. */
static int draw_rays(cairo_t *cr, const view_map *m, const ray_ctx *x) {
  long n = x->run->sim->nsegs;
  int nkeys = x->highlighting ? 3 : (WL_BUCKETS + 1) * ALPHA_LEVELS;
  if (n == 0)
    return 0;
  long *start = calloc((size_t)nkeys + 1, sizeof(long));
  long *order = malloc(sizeof(long) * (size_t)n);
  int *keys = malloc(sizeof(int) * (size_t)n);
  if (start == NULL || order == NULL || keys == NULL) {
    free(start);
    free(order);
    free(keys);
    return -ENOMEM;
  }
  long drawn = 0;
  for (long i = 0; i < n; i++) {
    keys[i] = ray_key(x, i);
    start[keys[i] + 1]++;
    drawn += keys[i] != 0;
  }
  long chunk = STROKE_CHUNK;
  if (cairo_surface_get_type(cairo_get_target(cr)) ==
          CAIRO_SURFACE_TYPE_IMAGE &&
      drawn > AA_FULL_MAX) {
    cairo_set_antialias(cr, drawn > AA_FAST_MAX ? CAIRO_ANTIALIAS_NONE
                                                : CAIRO_ANTIALIAS_FAST);
    chunk = STROKE_CHUNK_PLAIN;
  }
  for (int k = 0; k < nkeys; k++)
    start[k + 1] += start[k];
  for (long i = 0; i < n; i++)
    order[start[keys[i]]++] = i;
  /* start[k] is now the end of key k's run, so key k spans
   * [start[k - 1], start[k]). */
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
  for (int k = 1; k < nkeys; k++) {
    long lo = start[k - 1], hi = start[k], pending = 0;
    rgb c;
    double alpha, width;
    if (lo == hi)
      continue;
    key_style(x, k, &c, &alpha, &width);
    cairo_new_path(cr);
    for (long j = lo; j < hi; j++) {
      pending += seg_path(cr, m, &x->run->sim->segs[order[j]]);
      if (pending == chunk || (j + 1 == hi && pending > 0)) {
        stroke_px(cr, m, c, alpha, width, 0);
        pending = 0;
      }
    }
  }
  cairo_set_antialias(cr, CAIRO_ANTIALIAS_DEFAULT);
  free(start);
  free(order);
  free(keys);
  return 0;
}

static int draw(cairo_t *cr, const opx_run_t *run, const opx_draw_opts_t *opts,
                const view_map *m) {
  const opx_geom_t *g = run->geom;
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  use_scene(cr, m);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  for (int i = 0; g != NULL && i < g->nobjs; i++)
    draw_object(cr, m, g, i, opts->objs != NULL && opts->objs[i]);
  if (g != NULL)
    draw_labels(cr, m, g);
  ray_ctx x = {run, opts, 0};
  for (long i = 0;
       opts->rays != NULL && run->sim != NULL && i < run->sim->nsegs; i++)
    if (opts->rays[i]) {
      x.highlighting = 1;
      break;
    }
  int rc = run->sim != NULL ? draw_rays(cr, m, &x) : 0;
  for (int i = 0; g != NULL && opts->edges != NULL && i < g->nedges; i++)
    if (opts->edges[i]) {
      cairo_new_path(cr);
      edge_path(cr, g->edges[i].e, NULL);
      stroke_px(cr, m, C_EDGE_HL, 0.9, 4, 0);
    }
  return rc;
}

/* A growing malloc'd buffer for cairo's stream writers. */
typedef struct {
  unsigned char *data;
  size_t len, cap;
} buf_t;

static cairo_status_t buf_write(void *closure, const unsigned char *data,
                                unsigned int length) {
  buf_t *b = closure;
  if (b->len + length + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + length + 1)
      cap *= 2;
    unsigned char *p = realloc(b->data, cap);
    if (p == NULL)
      return CAIRO_STATUS_WRITE_ERROR;
    b->data = p;
    b->cap = cap;
  }
  memcpy(b->data + b->len, data, length);
  b->len += length;
  b->data[b->len] = 0;
  return CAIRO_STATUS_SUCCESS;
}

/* Draws on surface sf and finishes it; 0 or a negative errno. */
static int paint_on(cairo_surface_t *sf, const opx_run_t *run,
                    const opx_draw_opts_t *opts, const view_map *m) {
  cairo_t *cr = cairo_create(sf);
  int rc = draw(cr, run, opts, m);
  if (rc == 0 && cairo_status(cr) != CAIRO_STATUS_SUCCESS)
    rc = -ENOMEM;
  cairo_destroy(cr);
  cairo_surface_flush(sf);
  return rc;
}

int opx_draw(const opx_run_t *run, const opx_draw_opts_t *opts, char **svg,
             size_t *svg_len, unsigned char **png, size_t *png_len) {
  if (svg != NULL)
    *svg = NULL, *svg_len = 0;
  if (png != NULL)
    *png = NULL, *png_len = 0;
  if (run == NULL || opts == NULL || opts->width < 1 || opts->width > 4096 ||
      opts->height < 1 || opts->height > 4096)
    return -EINVAL;
  double v[4];
  opx_draw_view(run, opts, v);
  view_map m = map_make(v, opts->width, opts->height);
  int rc = 0;
  if (svg != NULL) {
    buf_t b = {0};
    cairo_surface_t *sf = cairo_svg_surface_create_for_stream(
        buf_write, &b, opts->width, opts->height);
    cairo_svg_surface_set_document_unit(sf, CAIRO_SVG_UNIT_PX);
    rc = paint_on(sf, run, opts, &m);
    cairo_surface_finish(sf);
    if (rc == 0 && cairo_surface_status(sf) != CAIRO_STATUS_SUCCESS)
      rc = -ENOMEM;
    cairo_surface_destroy(sf);
    if (rc != 0) {
      free(b.data);
      return rc;
    }
    *svg = (char *)b.data;
    *svg_len = b.len;
  }
  if (png != NULL) {
    buf_t b = {0};
    cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_ARGB32,
                                                     opts->width, opts->height);
    rc = paint_on(sf, run, opts, &m);
    if (rc == 0 && cairo_surface_write_to_png_stream(sf, buf_write, &b) !=
                       CAIRO_STATUS_SUCCESS)
      rc = -ENOMEM;
    cairo_surface_destroy(sf);
    if (rc != 0) {
      free(b.data);
      if (svg != NULL) {
        free(*svg);
        *svg = NULL, *svg_len = 0;
      }
      return rc;
    }
    *png = b.data;
    *png_len = b.len;
  }
  return 0;
}

void opx_draw_release(void) {
  cairo_debug_reset_static_data();
  /* Fontconfig came with cairo; it is not linked here, so it is looked up
   * among the libraries already loaded (none is loaded by this). */
  void *fc = dlopen("libfontconfig.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (fc == NULL)
    return;
  void (*fini)(void) = (void (*)(void))dlsym(fc, "FcFini");
  if (fini != NULL)
    fini();
  dlclose(fc);
}
