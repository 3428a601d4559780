/* Light sources: SingleRay, PointSource (360 degrees), AngleSource and
 * Beam, emitting their rays at the start of a simulation as upstream's
 * onSimulationStart does, angle step by angle step (the float sums of
 * the steps included: they decide how many rays there are). */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "geom.h"
#include "op.h"
#include "outline.h"

#define PI 3.14159265358979323846

/* JavaScript's parseInt(x) for the positive numbers it gets here: the
 * integer part (parseInt reads the number's decimal text). Above 1e21
 * that text is exponential and parseInt stops at the "e". */
static double js_parse_int(double x) {
  if (!(x < 1e21))
    return isfinite(x) ? floor(x / pow(10, floor(log10(x)))) : NAN;
  return trunc(x);
}

static int color_mode_default(const atl_op_scene *s) {
  return strcmp(s->color_mode, "default") == 0;
}

/* A source ray from p1 through p2 with half the brightness b in each
 * polarisation. */
static int emit(atl_op_sim *sim, atl_op_pt p1, atl_op_pt p2, double b,
                double wavelength, int gap) {
  atl_op_ray r =
      atl__op_ray_make(p1, p2, b * 0.5, b * 0.5, NULL, ATL_OP_SOURCE);
  r.wavelength = sim->scene->simulate_colors ? wavelength : NAN;
  r.gap = gap ? 1 : 0;
  r.is_new = 1;
  return atl__op_emit(sim, &r);
}

/* The ray density of a point or angle source: in the new colour modes,
 * raised in steps of 1/500 until no ray is brighter than 1. */
static double source_density(const atl_op_scene *s, double brightness) {
  double d = atl__op_ray_density(s);
  while (!color_mode_default(s) && brightness / d > 1)
    d += 1.0 / 500;
  return d;
}

/* --- SingleRay ------------------------------------------------------- */

typedef struct {
  atl_op_obj base;
  atl_op_pt p1, p2;
  double brightness, wavelength;
} single_ray;

static const atl_op_field single_ray_fields[] = {
    {"p1", ATL_OP_F_POINT, "null", offsetof(single_ray, p1)},
    {"p2", ATL_OP_F_POINT, "null", offsetof(single_ray, p2)},
    {"brightness", ATL_OP_F_NUM, "1", offsetof(single_ray, brightness)},
    {"wavelength", ATL_OP_F_NUM, "540", offsetof(single_ray, wavelength)},
    {NULL, 0, NULL, 0},
};

static void single_ray_start(atl_op_obj *o, atl_op_sim *sim) {
  single_ray *r = (single_ray *)o;
  emit(sim, r->p1, r->p2, r->brightness, r->wavelength, 1);
}

const atl_op_class atl__op_single_ray = {
    .type = "SingleRay",
    .flags = ATL_OP_OPTICAL,
    .size = sizeof(single_ray),
    .fields = single_ray_fields,
    .start = single_ray_start,
    .outline = atl__op_outline_p1p2,
};

/* --- PointSource ----------------------------------------------------- */

typedef struct {
  atl_op_obj base;
  double x, y, brightness, wavelength;
} point_source;

static const atl_op_field point_source_fields[] = {
    {"x", ATL_OP_F_NUM, "null", offsetof(point_source, x)},
    {"y", ATL_OP_F_NUM, "null", offsetof(point_source, y)},
    {"brightness", ATL_OP_F_NUM, "0.5", offsetof(point_source, brightness)},
    {"wavelength", ATL_OP_F_NUM, "540", offsetof(point_source, wavelength)},
    {NULL, 0, NULL, 0},
};

static void point_source_start(atl_op_obj *o, atl_op_sim *sim) {
  point_source *p = (point_source *)o;
  const atl_op_scene *sc = sim->scene;
  double d = source_density(sc, p->brightness);
  double s = PI * 2 / js_parse_int(d * 500);
  double i0 = strcmp(sc->mode, "observer") == 0 ? -s * 2 + 1e-6 : 0;
  double b = fmin(p->brightness / d, 1);
  for (double i = i0; i < PI * 2 - 1e-5; i = i + s)
    if (emit(sim, atl__op_pt(p->x, p->y),
             atl__op_pt(p->x + sin(i), p->y + cos(i)), b, p->wavelength,
             i == i0) < 0)
      return; /* the rays' limit (sim->error says so) */
  atl__op_brightness_scale(sim, b / (p->brightness / d));
}

const atl_op_class atl__op_point_source = {
    .type = "PointSource",
    .flags = ATL_OP_OPTICAL,
    .size = sizeof(point_source),
    .fields = point_source_fields,
    .start = point_source_start,
};

/* --- AngleSource ----------------------------------------------------- */

typedef struct {
  atl_op_obj base;
  atl_op_pt p1, p2;
  double brightness, wavelength, emis_angle;
  int symmetric;
} angle_source;

static const atl_op_field angle_source_fields[] = {
    {"p1", ATL_OP_F_POINT, "null", offsetof(angle_source, p1)},
    {"p2", ATL_OP_F_POINT, "null", offsetof(angle_source, p2)},
    {"brightness", ATL_OP_F_NUM, "0.5", offsetof(angle_source, brightness)},
    {"wavelength", ATL_OP_F_NUM, "540", offsetof(angle_source, wavelength)},
    {"emisAngle", ATL_OP_F_NUM, "36.001", offsetof(angle_source, emis_angle)},
    {"symmetric", ATL_OP_F_BOOL, "true", offsetof(angle_source, symmetric)},
    {NULL, 0, NULL, 0},
};

static void angle_source_start(atl_op_obj *o, atl_op_sim *sim) {
  angle_source *a = (angle_source *)o;
  const atl_op_scene *sc = sim->scene;
  double d = source_density(sc, a->brightness);
  double s = PI * 2 / js_parse_int(d * 500);
  double i0 = strcmp(sc->mode, "observer") == 0 ? -s * 2 + 1e-6 : 0;
  double start, end;
  if (a->symmetric) {
    start = i0 - (PI / 180.0 * a->emis_angle) / 2.0;
    end = i0 + (PI / 180.0 * a->emis_angle) / 2.0 - 1e-5;
  } else {
    start = i0;
    end = i0 + (PI / 180.0 * a->emis_angle) - 1e-5;
  }
  double b = fmin(a->brightness / d, 1);
  double dx = a->p2.x - a->p1.x, dy = a->p2.y - a->p1.y;
  for (double i = start; i < end; i = i + s) {
    double r = sqrt(dx * dx + dy * dy);
    double ang = i + atan2(dy, dx);
    if (emit(sim, a->p1,
             atl__op_pt(a->p1.x + r * cos(ang), a->p1.y + r * sin(ang)), b,
             a->wavelength, i == i0) < 0)
      return;
  }
  atl__op_brightness_scale(sim, b / (a->brightness / d));
}

const atl_op_class atl__op_angle_source = {
    .type = "AngleSource",
    .flags = ATL_OP_OPTICAL,
    .size = sizeof(angle_source),
    .fields = angle_source_fields,
    .start = angle_source_start,
    .outline = atl__op_outline_p1p2,
};

/* --- Beam -------------------------------------------------------------- */

typedef struct {
  atl_op_obj base;
  atl_op_pt p1, p2;
  double brightness, wavelength, emis_angle;
  int lambert, random;
} beam;

static const atl_op_field beam_fields[] = {
    {"p1", ATL_OP_F_POINT, "null", offsetof(beam, p1)},
    {"p2", ATL_OP_F_POINT, "null", offsetof(beam, p2)},
    {"brightness", ATL_OP_F_NUM, "0.5", offsetof(beam, brightness)},
    {"wavelength", ATL_OP_F_NUM, "540", offsetof(beam, wavelength)},
    {"emisAngle", ATL_OP_F_NUM, "0", offsetof(beam, emis_angle)},
    {"lambert", ATL_OP_F_BOOL, "false", offsetof(beam, lambert)},
    {"random", ATL_OP_F_BOOL, "false", offsetof(beam, random)},
    {NULL, 0, NULL, 0},
};

/* Beam.newRay: from (x, y) at angle normal + angle (radians, measured
 * as upstream's sin/cos pair). */
static int beam_ray(atl_op_sim *sim, const beam *bm, double x, double y,
                    double normal, double angle, int gap, double factor,
                    double density) {
  const atl_op_scene *sc = sim->scene;
  double b = fmin(bm->brightness * sc->length_scale / density * factor, 1);
  atl_op_ray r = atl__op_ray_make(
      atl__op_pt(x, y),
      atl__op_pt(x + sin(normal + angle), y + cos(normal + angle)), b * 0.5,
      b * 0.5, NULL, ATL_OP_SOURCE);
  if (bm->lambert) {
    double l = cos(angle);
    r.bs *= l;
    r.bp *= l;
  }
  r.is_new = 1;
  r.wavelength = sc->simulate_colors ? bm->wavelength : NAN;
  r.gap = gap ? 1 : 0;
  return atl__op_emit(sim, &r);
}

static void beam_start(atl_op_obj *o, atl_op_sim *sim) {
  beam *bm = (beam *)o;
  atl_op_scene *sc = sim->scene;
  double density = atl__op_ray_density(sc);
  double n, step_x, step_y, s, normal, half, angled, ray_b, expect;
  double size_x = bm->p2.x - bm->p1.x, size_y = bm->p2.y - bm->p1.y;
  for (;;) {
    n = sqrt(atl__op_dist2(bm->p1, bm->p2)) * density / sc->length_scale;
    step_x = size_x / n;
    step_y = size_y / n;
    s = PI * 2 / js_parse_int(density * 500);
    normal = atan2(step_x, step_y) + PI / 2.0;
    half = bm->emis_angle / 180.0 * PI * 0.5;
    angled = 1.0 + floor(half / s) * 2.0;
    ray_b = 1.0 / angled;
    expect = bm->brightness * sc->length_scale / density * ray_b;
    if (color_mode_default(sc) || !(expect > 1))
      break;
    density += 1.0 / 500;
  }
  if (!bm->random) {
    for (double i = 0.5; i <= n; i++) {
      double x = bm->p1.x + i * step_x, y = bm->p1.y + i * step_y;
      if (beam_ray(sim, bm, x, y, normal, 0.0, i == 0, ray_b, density) < 0)
        return;
      for (double a = s; a < half; a += s)
        if (beam_ray(sim, bm, x, y, normal, a, i == 0, ray_b, density) < 0 ||
            beam_ray(sim, bm, x, y, normal, -a, i == 0, ray_b, density) < 0)
          return;
    }
  } else {
    /* Each ray draws its position, then its angle, from the scene's
     * seeded generator. */
    for (double i = 0; i < n * angled; i++) {
      double pos = atl__op_arc4_next(&sc->rng);
      double ang = atl__op_arc4_next(&sc->rng);
      if (beam_ray(sim, bm, bm->p1.x + pos * size_x, bm->p1.y + pos * size_y,
                   normal, (ang * 2 - 1) * half, i == 0, ray_b, density) < 0)
        return;
    }
  }
  double full = bm->brightness * sc->length_scale / density * ray_b;
  atl__op_brightness_scale(sim, fmin(full, 1) / full);
}

const atl_op_class atl__op_beam = {
    .type = "Beam",
    .flags = ATL_OP_OPTICAL,
    .size = sizeof(beam),
    .fields = beam_fields,
    .start = beam_start,
    .outline = atl__op_outline_p1p2,
};
