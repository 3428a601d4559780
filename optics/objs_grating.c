/* Diffraction gratings: DiffractionGrating (a segment, transmissive or,
 * mirrored, reflective) and ConcaveDiffractionGrating (an arc p1-p3-p2,
 * reflective). A ray that hits one is absorbed and replaced by one new
 * ray per order m allowed by the grating equation
 *   d (sin theta_i - sin theta_m) = m lambda,  d = 1 mm / lineDensity,
 * with a brightness from the single-slit envelope of a slit
 * slitRatio * d wide, or from the brightnesses list (orders 0, 1, -1, 2,
 * -2, ...) when customBrightness is set. Orders too weak to follow are
 * counted as truncated. Without simulated colours every ray diffracts as
 * green light; upstream warns about that, and so do we (as an object
 * warning, which does not fail a simulation). */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "geom.h"
#include "objs.h"
#include "op.h"
#include "outline.h"

/* What both gratings share; brightnesses is the JSON field as loaded,
 * b its numbers (owned, freed by grating_destroy). */
typedef struct {
  double line_density;
  int custom;
  json_object *brightnesses;
  double slit_ratio;
  double *b;
  size_t nb;
} grating_t;

#define GRATING_FIELDS(T)                                                      \
  {"lineDensity", ATL_OP_F_NUM, "1000", offsetof(T, g.line_density)},          \
      {"customBrightness", ATL_OP_F_BOOL, "false", offsetof(T, g.custom)},     \
      {"brightnesses", ATL_OP_F_JSON, "[1, 0.5, 0.5]",                         \
       offsetof(T, g.brightnesses)},                                           \
  {                                                                            \
    "slitRatio", ATL_OP_F_NUM, "0.5", offsetof(T, g.slit_ratio)                \
  }

/* The struct of each grating class starts with these, so that the
 * shared hooks can reach them. */
typedef struct {
  atl_op_obj base;
  atl_op_pt p1, p2;
  grating_t g;
} grating_head;

static int grating_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  grating_t *g = &((grating_head *)o)->g;
  /* Below 0.01 lines/mm a single hit would make millions of orders. */
  if (!(g->line_density >= 0.01) || !isfinite(g->line_density))
    return atl__op_obj_fail(o, err,
                            "\"lineDensity\" is %g; it must be a number of "
                            "lines per millimetre, at least 0.01",
                            g->line_density);
  if (!(g->slit_ratio >= 0 && g->slit_ratio <= 1))
    return atl__op_obj_fail(o, err,
                            "\"slitRatio\" is %g; it must be between 0 and 1 "
                            "(the slit's share of the line interval)",
                            g->slit_ratio);
  json_object *a = g->brightnesses;
  if (!json_object_is_type(a, json_type_array))
    return atl__op_obj_fail(o, err,
                            "\"brightnesses\" must be an array of numbers "
                            "(the orders 0, 1, -1, 2, -2, ...)");
  g->nb = json_object_array_length(a);
  g->b = calloc(g->nb + 1, sizeof(*g->b));
  if (!g->b)
    return -ENOMEM;
  for (size_t i = 0; i < g->nb; i++) {
    json_object *v = json_object_array_get_idx(a, i);
    if (!json_object_is_type(v, json_type_double) &&
        !json_object_is_type(v, json_type_int))
      return atl__op_obj_fail(o, err, "\"brightnesses\"[%zu] must be a number",
                              i);
    g->b[i] = json_object_get_double(v);
    if (!(g->b[i] >= 0) || !isfinite(g->b[i]))
      return atl__op_obj_fail(o, err,
                              "\"brightnesses\"[%zu] is %g; brightnesses must "
                              "be 0 or more",
                              i, g->b[i]);
  }
  return 0;
}

static void grating_destroy(atl_op_obj *o) {
  free(((grating_head *)o)->g.b);
}

static void grating_start(atl_op_obj *o, atl_op_sim *sim) {
  const atl_op_scene *s = sim->scene;
  int images =
      strcmp(s->mode, "images") == 0 || strcmp(s->mode, "observer") == 0;
  free(o->warning);
  o->warning = NULL;
  const char *a = images ? "Images are not detected for the rays a grating "
                           "diffracts. "
                         : "";
  const char *b = !s->simulate_colors
                      ? "Colours are not simulated, so every ray diffracts "
                        "as green light (540 nm)."
                      : "";
  if (a[0] || b[0]) {
    size_t n = strlen(a) + strlen(b) + 1;
    o->warning = malloc(n);
    if (o->warning)
      snprintf(o->warning, n, "%s%s", a, b);
  }
}

/* The ray's wavelength in millimetres; a ray without one is green. */
static double wavelength_mm(const atl_op_ray *r) {
  double nm =
      isnan(r->wavelength) || r->wavelength == 0 ? ATL_OP_GREEN : r->wavelength;
  return nm * (1 / 1000000.0);
}

/* The brightness factor of order m for the incidence angle inc. */
static double order_intensity(const grating_t *g, double m, double inc,
                              double wl, double interval) {
  if (g->custom) {
    double k = m <= 0 ? -2 * m : 2 * m - 1;
    return k < (double)g->nb ? g->b[(size_t)k] : 0;
  }
  /* The single-slit envelope: sinc^2 of half the phase difference
   * across one slit, scaled by the open fraction squared. This is
   * upstream's model; it is rough at large diffraction angles. */
  double slit = interval * g->slit_ratio;
  double out = asin(sin(inc) - m * wl / interval);
  double phase = 2 * M_PI * slit / wl * (sin(inc) - sin(out));
  double sinc = phase == 0 ? 1 : sin(phase / 2) / (phase / 2);
  return slit * slit / (interval * interval) * pow(sinc, 2);
}

/* Adds the order's ray from hit through to, or its power to *truncation
 * when it is too weak to follow. */
static void emit_order(atl_op_sim *sim, const atl_op_ray *r, atl_op_pt hit,
                       atl_op_pt to, double intensity, atl_op_kind kind,
                       double *truncation) {
  atl_op_ray d =
      atl__op_ray_make(hit, to, r->bs * intensity, r->bp * intensity, r, kind);
  /* Upstream sets gap on diffracted rays: they are never traced back to
   * an image. */
  d.gap = 1;
  if (d.bs + d.bp > atl__op_min_brightness(sim->scene))
    atl__op_emit(sim, &d);
  else
    *truncation += d.bs + d.bp;
}

/* --- DiffractionGrating --------------------------------------------------- */

typedef struct {
  atl_op_obj base;
  atl_op_pt p1, p2;
  grating_t g;
  int mirrored;
} flat_grating;

static const atl_op_field flat_grating_fields[] = {
    {"p1", ATL_OP_F_POINT, "null", offsetof(flat_grating, p1)},
    {"p2", ATL_OP_F_POINT, "null", offsetof(flat_grating, p2)},
    GRATING_FIELDS(flat_grating),
    {"mirrored", ATL_OP_F_BOOL, "false", offsetof(flat_grating, mirrored)},
    {NULL, 0, NULL, 0},
};

static int flat_grating_intersect(atl_op_obj *o, atl_op_sim *sim,
                                  const atl_op_ray *r, atl_op_pt *hit) {
  flat_grating *f = (flat_grating *)o;
  return atl__op_ray_segment(r, f->p1, f->p2, hit);
}

/* The angles are measured against the end of the grating that lies to
 * the ray's left, and each order's direction is that end's direction
 * turned by -90 degrees minus the order's angle (turned the other way
 * when mirrored, which sends the order back to the incoming side). */
static atl_op_result flat_grating_incident(atl_op_obj *o, atl_op_sim *sim,
                                           atl_op_ray *r, long ray_index,
                                           atl_op_pt hit,
                                           atl_op_obj *const *merging,
                                           int nmerging) {
  flat_grating *f = (flat_grating *)o;
  double rx = r->p1.x - hit.x, ry = r->p1.y - hit.y;
  double mx = f->p2.x - f->p1.x, my = f->p2.y - f->p1.y;
  double wl = wavelength_mm(r);
  double interval = 1 / f->g.line_density;
  atl_op_pt left = rx * my - ry * mx > 0 ? f->p1 : f->p2;
  double turn = f->mirrored ? -1 : 1;
  double th_left = M_PI - atan2(left.y - hit.y, left.x - hit.x);
  double th_in = M_PI - atan2(ry, rx);
  double inc = M_PI / 2 -
               (th_left < th_in ? th_left + 2 * M_PI - th_in : th_left - th_in);
  double m_min = -floor(interval / wl * (1 - sin(inc)));
  double m_max = -ceil(interval / wl * (-1 - sin(inc)));
  double truncation = 0;
  for (double m = m_min; m <= m_max; m++) {
    double out = asin(sin(inc) - m * wl / interval);
    double c = cos(turn * (-M_PI / 2 - out));
    double s = sin(turn * (-M_PI / 2 - out));
    double lx = left.x - hit.x, ly = left.y - hit.y;
    atl_op_pt to = atl__op_pt(hit.x + lx * c - ly * s, hit.y + lx * s + ly * c);
    double k = order_intensity(&f->g, m, inc, wl, interval);
    if (k == 0)
      continue;
    emit_order(sim, r, hit, to, k,
               f->mirrored ? ATL_OP_REFLECT : ATL_OP_REFRACT, &truncation);
  }
  atl_op_result res = {.absorbed = 1, .truncation = truncation};
  return res;
}

const atl_op_class atl__op_diffraction_grating = {
    .type = "DiffractionGrating",
    .flags = ATL_OP_OPTICAL,
    .size = sizeof(flat_grating),
    .fields = flat_grating_fields,
    .init = grating_init,
    .start = grating_start,
    .intersect = flat_grating_intersect,
    .incident = flat_grating_incident,
    .destroy = grating_destroy,
    .outline = atl__op_outline_p1p2,
};

/* --- ConcaveDiffractionGrating -------------------------------------------- */

typedef struct {
  atl_op_obj base;
  atl_op_pt p1, p2;
  grating_t g;
  atl_op_pt p3;
} concave_grating;

static const atl_op_field concave_grating_fields[] = {
    {"p1", ATL_OP_F_POINT, "null", offsetof(concave_grating, p1)},
    {"p2", ATL_OP_F_POINT, "null", offsetof(concave_grating, p2)},
    {"p3", ATL_OP_F_POINT, "null", offsetof(concave_grating, p3)},
    GRATING_FIELDS(concave_grating),
    {NULL, 0, NULL, 0},
};

static int concave_grating_intersect(atl_op_obj *o, atl_op_sim *sim,
                                     const atl_op_ray *r, atl_op_pt *hit) {
  concave_grating *c = (concave_grating *)o;
  return atl__op_ray_arc(sim, r, c->p1, c->p2, c->p3, hit);
}

/* The orders leave on the incoming side, at their angles from the
 * surface's normal there (the radius, or for collinear points upstream's
 * normal of the chord, flipped towards the ray by its own test). */
static atl_op_result concave_grating_incident(atl_op_obj *o, atl_op_sim *sim,
                                              atl_op_ray *r, long ray_index,
                                              atl_op_pt hit,
                                              atl_op_obj *const *merging,
                                              int nmerging) {
  concave_grating *c = (concave_grating *)o;
  double rx = r->p1.x - hit.x, ry = r->p1.y - hit.y;
  atl_op_pt center = atl__op_arc_center(c->p1, c->p2, c->p3);
  double wl = wavelength_mm(r);
  double interval = 1 / c->g.line_density;
  double ray_angle = atan2(ry, rx);
  double normal, dot;
  if (isfinite(center.x) && isfinite(center.y)) {
    normal = atan2(hit.y - center.y, hit.x - center.x);
    dot = rx * (hit.x - center.x) + ry * (hit.y - center.y);
  } else {
    double dx = c->p2.x - c->p1.x, dy = c->p2.y - c->p1.y;
    dot = rx * dx + ry * dy;
    normal = atan2(-dx, dy);
  }
  if (dot < 0)
    normal += M_PI;
  double inc = ray_angle - normal;
  double m_min = ceil((sin(inc) - 1) * interval / wl);
  double m_max = floor((sin(inc) + 1) * interval / wl);
  double truncation = 0;
  for (double m = m_min; m <= m_max; m++) {
    double arg = m * wl / interval - sin(inc);
    if (arg < -1 || arg > 1)
      continue;
    double dir = normal + asin(arg);
    atl_op_pt to = atl__op_pt(hit.x + cos(dir), hit.y + sin(dir));
    double k = order_intensity(&c->g, m, inc, wl, interval);
    if (k == 0)
      continue;
    emit_order(sim, r, hit, to, k, ATL_OP_REFLECT, &truncation);
  }
  atl_op_result res = {.absorbed = 1, .truncation = truncation};
  return res;
}

/* The arc from p1 through p3 to p2, or the segment when collinear. */
static int concave_grating_outline(const atl_op_obj *o, atl_op_outline *out) {
  const concave_grating *g = (const concave_grating *)o;
  return atl__op_outline_arc3(out, g->p1, g->p3, g->p2);
}

const atl_op_class atl__op_concave_grating = {
    .type = "ConcaveDiffractionGrating",
    .flags = ATL_OP_OPTICAL,
    .size = sizeof(concave_grating),
    .fields = concave_grating_fields,
    .init = grating_init,
    .start = grating_start,
    .intersect = concave_grating_intersect,
    .incident = concave_grating_incident,
    .destroy = grating_destroy,
    .outline = concave_grating_outline,
};
