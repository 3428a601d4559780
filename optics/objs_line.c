/* Objects defined by a segment p1-p2: Blocker, Mirror and Detector (with
 * its irradiance map), and the wavelength filter that blockers and
 * mirrors share; plus the non-optical objects a scene may carry
 * (CropBox, Drawing, LineArrow), which are read and checked but do not
 * take part in the simulation. */
#include "atl-build.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "geom.h"
#include "jsnum.h"
#include "objs.h"
#include "op.h"
#include "outline.h"
#include "optics.h"

int atl__op_filter_passes(const atl_op_sim *sim, int filter, int invert,
                          double wavelength, double bandwidth,
                          const atl_op_ray *r) {
  int enabled = sim->scene->simulate_colors && filter && wavelength != 0 &&
                !isnan(wavelength);
  int matches = fabs(wavelength - r->wavelength) <= bandwidth;
  return !enabled || matches != invert;
}

int atl__op_obj_fail(const atl_op_obj *o, char **err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = atl__op_vfmt(fmt, ap);
  va_end(ap);
  if (asprintf(err, "objs[%d] (%s): %s", o->doc_index, o->cls->type,
               msg ? msg : "invalid") < 0)
    *err = NULL;
  free(msg);
  return -EINVAL;
}

int atl__op_filter_check(const atl_op_obj *o, const atl_op_filter *f,
                         char **err) {
  if (!(f->bandwidth >= 0))
    return atl__op_obj_fail(o, err,
                            "\"bandwidth\" is %g; it must be a number of "
                            "nanometres, 0 or more",
                            f->bandwidth);
  if (!(f->wavelength >= 0))
    return atl__op_obj_fail(o, err,
                            "\"wavelength\" is %g; it must be a number of "
                            "nanometres, 0 or more (0 turns the filter off)",
                            f->wavelength);
  return 0;
}

int atl__op_line_filter_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  return atl__op_filter_check(o, &((atl_op_line_filter *)o)->f, err);
}

static const atl_op_field line_filter_fields[] = {
    ATL_OP_ENDS_FIELDS,
    ATL_OP_FILTER_FIELDS,
    {NULL, 0, NULL, 0},
};

int atl__op_line_filter_intersect(atl_op_obj *o, atl_op_sim *sim,
                                  const atl_op_ray *r, atl_op_pt *hit) {
  atl_op_line_filter *l = (atl_op_line_filter *)o;
  if (!atl__op_filter_ok(sim, &l->f, r))
    return 0;
  return atl__op_ray_segment(r, l->p1, l->p2, hit);
}

/* --- Blocker ------------------------------------------------------------ */

static atl_op_result blocker_incident(atl_op_obj *o, atl_op_sim *sim,
                                      atl_op_ray *r, long ray_index,
                                      atl_op_pt hit, atl_op_obj *const *merging,
                                      int nmerging) {
  atl_op_result res = {.absorbed = 1};
  return res;
}

const atl_op_class atl__op_blocker = {
    .type = "Blocker",
    .flags = ATL_OP_OPTICAL | ATL_OP_MERGES_WITH_GLASS,
    .size = sizeof(atl_op_line_filter),
    .fields = line_filter_fields,
    .init = atl__op_line_filter_init,
    .intersect = atl__op_line_filter_intersect,
    .incident = blocker_incident,
    .outline = atl__op_outline_p1p2,
};

/* --- Mirror -------------------------------------------------------------- */

static atl_op_result mirror_incident(atl_op_obj *o, atl_op_sim *sim,
                                     atl_op_ray *r, long ray_index,
                                     atl_op_pt hit, atl_op_obj *const *merging,
                                     int nmerging) {
  atl_op_line_filter *m = (atl_op_line_filter *)o;
  r->p2 = atl__op_reflect_line(r->p1, hit, m->p1, m->p2);
  r->p1 = hit;
  r->kind = ATL_OP_REFLECT;
  atl_op_result res = {0};
  return res;
}

const atl_op_class atl__op_mirror = {
    .type = "Mirror",
    .flags = ATL_OP_OPTICAL | ATL_OP_MERGES_WITH_GLASS,
    .size = sizeof(atl_op_line_filter),
    .fields = line_filter_fields,
    .init = atl__op_line_filter_init,
    .intersect = atl__op_line_filter_intersect,
    .incident = mirror_incident,
    .outline = atl__op_outline_p1p2,
};

/* --- Detector ------------------------------------------------------------ */

typedef struct {
  atl_op_obj base;
  atl_op_pt p1, p2;
  int two_sided, irrad_map;
  double bin_size;
  double power, normal, shear;
  double *bins;
  long nbins;
} detector;

static const atl_op_field detector_fields[] = {
    {"p1", ATL_OP_F_POINT, "null", offsetof(detector, p1)},
    {"p2", ATL_OP_F_POINT, "null", offsetof(detector, p2)},
    {"twoSided", ATL_OP_F_BOOL, "true", offsetof(detector, two_sided)},
    {"irradMap", ATL_OP_F_BOOL, "false", offsetof(detector, irrad_map)},
    {"binSize", ATL_OP_F_NUM, "1", offsetof(detector, bin_size)},
    {NULL, 0, NULL, 0},
};

/* The bins of the irradiance map: ceil(length / binSize). */
/* The most bins an irradiance map may have: the map and its CSV (some
 * 66 bytes a row) must fit in memory. The app's tests use at most 198. */
#define DETECTOR_MAX_BINS 1000000

static double detector_bins_wanted(const detector *d) {
  return ceil(sqrt(atl__op_dist2(d->p1, d->p2)) / d->bin_size);
}

static long detector_nbins(const detector *d) {
  double n = detector_bins_wanted(d);
  return n > 0 && n <= DETECTOR_MAX_BINS ? (long)n : 0;
}

static int detector_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  detector *d = (detector *)o;
  if (d->irrad_map && !(d->bin_size > 0)) {
    *err = strdup("Detector: \"binSize\" must be a positive number");
    return -EINVAL;
  }
  if (d->irrad_map && !(detector_bins_wanted(d) <= DETECTOR_MAX_BINS))
    return atl__op_fail(err, -EINVAL,
                        "Detector: its length over \"binSize\" gives %.3g "
                        "bins; at most %d: raise binSize or shorten it",
                        detector_bins_wanted(d), DETECTOR_MAX_BINS);
  return 0;
}

static void detector_start(atl_op_obj *o, atl_op_sim *sim) {
  detector *d = (detector *)o;
  d->power = d->normal = d->shear = 0;
  free(d->bins);
  d->bins = NULL;
  d->nbins = 0;
  if (d->irrad_map) {
    d->nbins = detector_nbins(d);
    d->bins = calloc((size_t)d->nbins + 1, sizeof(double));
    if (!d->bins)
      d->nbins = 0;
  }
}

/* The z of (ray direction) x (detector direction): its sign is the side
 * the ray crosses from. */
static double detector_cross(const detector *d, const atl_op_ray *r) {
  return (r->p2.x - r->p1.x) * (d->p2.y - d->p1.y) -
         (r->p2.y - r->p1.y) * (d->p2.x - d->p1.x);
}

static int detector_intersect(atl_op_obj *o, atl_op_sim *sim,
                              const atl_op_ray *r, atl_op_pt *hit) {
  detector *d = (detector *)o;
  if (!d->two_sided && !(detector_cross(d, r) > 0))
    return 0;
  return atl__op_ray_segment(r, d->p1, d->p2, hit);
}

static double js_sign(double v) {
  return v > 0 ? 1 : v < 0 ? -1 : v; /* 0, -0 and NaN as Math.sign */
}

static atl_op_result
detector_incident(atl_op_obj *o, atl_op_sim *sim, atl_op_ray *r, long ray_index,
                  atl_op_pt hit, atl_op_obj *const *merging, int nmerging) {
  detector *d = (detector *)o;
  double rx = r->p2.x - r->p1.x, ry = r->p2.y - r->p1.y;
  double dx = d->p2.x - d->p1.x, dy = d->p2.y - d->p1.y;
  double c = rx * dy - ry * dx;
  double rl = sqrt(rx * rx + ry * ry), dl = sqrt(dx * dx + dy * dy);
  double sint = c / rl / dl;
  double cost = (rx * dx + ry * dy) / rl / dl;
  r->p2 = atl__op_pt(hit.x + r->p2.x - r->p1.x, hit.y + r->p2.y - r->p1.y);
  r->p1 = hit;
  double b = r->bs + r->bp, sg = js_sign(c);
  d->power += sg * b;
  d->normal += sg * sint * b;
  d->shear -= sg * cost * b;
  if (d->irrad_map && d->bins) {
    double k = floor(sqrt(atl__op_dist2(hit, d->p1)) / d->bin_size);
    /* A hit at p2 itself falls one past the last bin, which upstream's
     * CSV does not show either. */
    if (k >= 0 && k < (double)d->nbins)
      d->bins[(long)k] += sg * b;
  }
  atl_op_result res = {0};
  return res;
}

static void detector_destroy(atl_op_obj *o) {
  free(((detector *)o)->bins);
}

const atl_op_class atl__op_detector = {
    .type = "Detector",
    .flags = ATL_OP_OPTICAL,
    .size = sizeof(detector),
    .fields = detector_fields,
    .init = detector_init,
    .start = detector_start,
    .intersect = detector_intersect,
    .incident = detector_incident,
    .destroy = detector_destroy,
    .outline = atl__op_outline_p1p2,
};

int atl_optics_detector_reading(const atl_op_obj *o, double *power,
                                double *normal, double *shear) {
  if (!o || o->cls != &atl__op_detector)
    return -EINVAL;
  const detector *d = (const detector *)o;
  *power = d->power;
  *normal = d->normal;
  *shear = d->shear;
  return 0;
}

char *atl_optics_detector_csv(const atl_op_obj *o) {
  if (!o || o->cls != &atl__op_detector)
    return NULL;
  const detector *d = (const detector *)o;
  if (!d->irrad_map)
    return NULL;
  size_t cap = 64 + (size_t)d->nbins * (2 * ATL_OP_JSNUM_MAX + 2), len = 0;
  char *out = malloc(cap);
  if (!out)
    return NULL;
  len = (size_t)sprintf(out, "Position,Irradiance");
  for (long i = 0; i < d->nbins; i++) {
    out[len++] = '\n';
    len += atl__op_jsnum((double)i * d->bin_size, out + len);
    out[len++] = ',';
    len += atl__op_jsnum(d->bins[i] / d->bin_size, out + len);
  }
  out[len] = '\0';
  return out;
}

/* --- Non-optical objects ------------------------------------------------- */

typedef struct {
  atl_op_obj base;
  json_object *a, *b, *c, *d, *e, *f;
} inert;

static const atl_op_field crop_box_fields[] = {
    {"p1", ATL_OP_F_JSON, "null", offsetof(inert, a)},
    {"p4", ATL_OP_F_JSON, "null", offsetof(inert, b)},
    {"format", ATL_OP_F_JSON, "\"png\"", offsetof(inert, c)},
    {"width", ATL_OP_F_JSON, "1920", offsetof(inert, d)},
    {"rayCountLimit", ATL_OP_F_JSON, "null", offsetof(inert, e)},
    {"transparent", ATL_OP_F_JSON, "false", offsetof(inert, f)},
    {NULL, 0, NULL, 0},
};

/* A point {x, y} of an inert object's JSON field; 0 when it is not one
 * (these objects are not checked at load time). */
static int json_point(json_object *j, atl_op_pt *out) {
  json_object *x, *y;
  if (!json_object_is_type(j, json_type_object) ||
      !json_object_object_get_ex(j, "x", &x) ||
      !json_object_object_get_ex(j, "y", &y))
    return 0;
  *out = atl__op_pt(json_object_get_double(x), json_object_get_double(y));
  return isfinite(out->x) && isfinite(out->y);
}

/* The box's four sides, p1's corner first, as open line edges: a crop box
 * frames the picture and bounds no region rays can be in. */
static int crop_box_outline(const atl_op_obj *o, atl_op_outline *out) {
  const inert *b = (const inert *)o;
  atl_op_pt p1, p4;
  if (!json_point(b->a, &p1) || !json_point(b->b, &p4))
    return 0;
  atl_op_pt c[4] = {p1, atl__op_pt(p4.x, p1.y), p4, atl__op_pt(p1.x, p4.y)};
  int rc = 0;
  for (int i = 0; i < 4 && rc == 0; i++)
    rc = atl__op_outline_line(out, c[i], c[(i + 1) % 4]);
  return rc;
}

const atl_op_class atl__op_crop_box = {
    .type = "CropBox",
    .size = sizeof(inert),
    .fields = crop_box_fields,
    .outline = crop_box_outline,
};

static const atl_op_field drawing_fields[] = {
    {"strokes", ATL_OP_F_JSON, "[]", offsetof(inert, a)},
    {"isDrawing", ATL_OP_F_JSON, "false", offsetof(inert, b)},
    {"lineStyle", ATL_OP_F_JSON, "null", offsetof(inert, c)},
    {NULL, 0, NULL, 0},
};

const atl_op_class atl__op_drawing = {
    .type = "Drawing",
    .size = sizeof(inert),
    .fields = drawing_fields,
};

static const atl_op_field line_arrow_fields[] = {
    {"p1", ATL_OP_F_JSON, "null", offsetof(inert, a)},
    {"p2", ATL_OP_F_JSON, "null", offsetof(inert, b)},
    {"arrow", ATL_OP_F_JSON, "false", offsetof(inert, c)},
    {"backArrow", ATL_OP_F_JSON, "false", offsetof(inert, d)},
    {"lineStyle", ATL_OP_F_JSON, "null", offsetof(inert, e)},
    {NULL, 0, NULL, 0},
};

/* The arrow's line p1-p2. */
static int line_arrow_outline(const atl_op_obj *o, atl_op_outline *out) {
  const inert *l = (const inert *)o;
  atl_op_pt p1, p2;
  if (!json_point(l->a, &p1) || !json_point(l->b, &p2))
    return 0;
  return atl__op_outline_line(out, p1, p2);
}

const atl_op_class atl__op_line_arrow = {
    .type = "LineArrow",
    .size = sizeof(inert),
    .fields = line_arrow_fields,
    .outline = line_arrow_outline,
};
