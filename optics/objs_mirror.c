/* Curved and special mirrors: ArcMirror, ParabolicMirror, IdealMirror and
 * BeamSplitter, with upstream's semantics object by object (including
 * what each does when its points are collinear), and the arc hit test
 * that ConcaveDiffractionGrating shares. All are dichroic when their
 * filter is on: a ray the filter lets through does not see the mirror.
 * Reflections are made in place, so the ray keeps its slot and is
 * processed again on the next pass, as upstream does. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "geom.h"
#include "objs.h"
#include "op.h"
#include "outline.h"

double atl__op_min_brightness(const atl_op_scene *s) {
  return strcmp(s->color_mode, "default") != 0 ? 1e-6 : 0.01;
}

static double min_seg_sq(const atl_op_sim *sim) {
  double ls = sim->scene->length_scale;
  return ATL_OP_MIN_SEG_SQ * ls * ls;
}

int atl__op_ray_circle(const atl_op_sim *sim, const atl_op_ray *r, atl_op_pt c,
                       double r_sq, const atl_op_pt *arc, atl_op_pt *hit) {
  atl_op_pt x[2];
  atl__op_line_circle(r->p1, r->p2, c, r_sq, x);
  int ok[2];
  double len[2];
  for (int i = 0; i < 2; i++) {
    /* On the arc: the chord p1-p2 does not separate the point from p3. */
    int on_arc = 1;
    if (arc) {
      atl_op_pt cut = atl__op_lines_x(arc[0], arc[1], arc[2], x[i]);
      on_arc = !atl__op_on_segment(cut, arc[2], x[i]);
    }
    ok[i] = on_arc && atl__op_on_ray(x[i], r->p1, r->p2) &&
            atl__op_dist2(x[i], r->p1) > min_seg_sq(sim);
    len[i] = atl__op_dist2(r->p1, x[i]);
  }
  for (int i = 0; i < 2; i++)
    if (ok[i] && (!ok[1 - i] || len[i] < len[1 - i])) {
      *hit = x[i];
      return 1;
    }
  return 0;
}

int atl__op_ray_arc(const atl_op_sim *sim, const atl_op_ray *r, atl_op_pt p1,
                    atl_op_pt p2, atl_op_pt p3, atl_op_pt *hit) {
  atl_op_pt c = atl__op_arc_center(p1, p2, p3);
  if (!isfinite(c.x) || !isfinite(c.y))
    return atl__op_ray_segment(r, p1, p2, hit);
  atl_op_pt arc[3] = {p1, p2, p3};
  return atl__op_ray_circle(sim, r, c, atl__op_dist2(c, p2), arc, hit);
}

/* --- ArcMirror ------------------------------------------------------------ */

/* ArcMirror's p3 is a point on the arc; ParabolicMirror's its vertex. */
typedef struct {
  atl_op_line_filter l;
  atl_op_pt p3;
} three_point_mirror;

static const atl_op_field three_point_fields[] = {
    ATL_OP_ENDS_FIELDS,
    {"p3", ATL_OP_F_POINT, "null", offsetof(three_point_mirror, p3)},
    ATL_OP_FILTER_FIELDS,
    {NULL, 0, NULL, 0},
};

static int arc_mirror_intersect(atl_op_obj *o, atl_op_sim *sim,
                                const atl_op_ray *r, atl_op_pt *hit) {
  three_point_mirror *m = (three_point_mirror *)o;
  if (!atl__op_filter_ok(sim, &m->l.f, r))
    return 0;
  return atl__op_ray_arc(sim, r, m->l.p1, m->l.p2, m->p3, hit);
}

static atl_op_result arc_mirror_incident(atl_op_obj *o, atl_op_sim *sim,
                                         atl_op_ray *r, long ray_index,
                                         atl_op_pt hit,
                                         atl_op_obj *const *merging,
                                         int nmerging) {
  three_point_mirror *m = (three_point_mirror *)o;
  atl_op_pt c = atl__op_arc_center(m->l.p1, m->l.p2, m->p3);
  if (isfinite(c.x) && isfinite(c.y)) {
    /* Reflect the way back to the ray's start about the radius through
     * the hit: 2 (r.c) c - |c|^2 r, unnormalised as upstream. */
    double rx = r->p1.x - hit.x, ry = r->p1.y - hit.y;
    double cx = c.x - hit.x, cy = c.y - hit.y;
    double c_sq = cx * cx + cy * cy;
    double r_dot_c = rx * cx + ry * cy;
    r->p2 = atl__op_pt(hit.x - c_sq * rx + 2 * r_dot_c * cx,
                       hit.y - c_sq * ry + 2 * r_dot_c * cy);
  } else {
    /* Collinear points make a plane mirror along p1-p2. */
    r->p2 = atl__op_reflect_line(r->p1, hit, m->l.p1, m->l.p2);
  }
  r->p1 = hit;
  r->kind = ATL_OP_REFLECT;
  atl_op_result res = {0};
  return res;
}

/* The arc from p1 through p3 to p2 (a segment when they are collinear),
 * as the hit test takes it. */
static int arc_mirror_outline(const atl_op_obj *o, atl_op_outline *out) {
  const three_point_mirror *m = (const three_point_mirror *)o;
  return atl__op_outline_arc3(out, m->l.p1, m->p3, m->l.p2);
}

const atl_op_class atl__op_arc_mirror = {
    .type = "ArcMirror",
    .flags = ATL_OP_OPTICAL | ATL_OP_MERGES_WITH_GLASS,
    .size = sizeof(three_point_mirror),
    .fields = three_point_fields,
    .init = atl__op_line_filter_init,
    .intersect = arc_mirror_intersect,
    .incident = arc_mirror_incident,
    .outline = arc_mirror_outline,
};

/* --- ParabolicMirror ------------------------------------------------------ */

/* The parabola y = a x^2 in a frame with its origin at the vertex p3, x
 * along p1->p2 and y turned 90 degrees clockwise from it (upstream's
 * dir2); a is fixed by p1 lying on the curve, and the mirror spans
 * |x| <= |p2 - p1| / 2. */
typedef struct {
  atl_op_pt o, ex, ey; /* origin and unit axes */
  double a, half;
} parabola_frame;

static parabola_frame parabola(const three_point_mirror *m) {
  parabola_frame f;
  double d = sqrt(atl__op_dist2(m->l.p1, m->l.p2));
  f.o = m->p3;
  f.ex = atl__op_pt((m->l.p2.x - m->l.p1.x) / d, (m->l.p2.y - m->l.p1.y) / d);
  f.ey = atl__op_pt(f.ex.y, -f.ex.x);
  double dx = m->l.p1.x - m->p3.x, dy = m->l.p1.y - m->p3.y;
  double x1 = dx * f.ex.x + dy * f.ex.y;
  double y1 = dx * f.ey.x + dy * f.ey.y;
  f.a = y1 / (x1 * x1);
  f.half = sqrt(atl__op_dist2(m->l.p1, m->l.p2)) / 2;
  return f;
}

static atl_op_pt to_local(const parabola_frame *f, atl_op_pt p) {
  double dx = p.x - f->o.x, dy = p.y - f->o.y;
  return atl__op_pt(dx * f->ex.x + dy * f->ex.y, dx * f->ey.x + dy * f->ey.y);
}

static atl_op_pt to_global(const parabola_frame *f, double x, double y) {
  return atl__op_pt(f->o.x + x * f->ex.x + y * f->ey.x,
                    f->o.y + x * f->ex.y + y * f->ey.y);
}

/* Collinear points (twice the triangle's area under 1e-10) make the
 * parabola a plane mirror along p1-p2. */
static int parabola_flat(const three_point_mirror *m) {
  double area2 = fabs((m->l.p2.x - m->l.p1.x) * (m->p3.y - m->l.p1.y) -
                      (m->p3.x - m->l.p1.x) * (m->l.p2.y - m->l.p1.y));
  return area2 < 1e-10;
}

static int parabolic_intersect(atl_op_obj *o, atl_op_sim *sim,
                               const atl_op_ray *r, atl_op_pt *hit) {
  three_point_mirror *m = (three_point_mirror *)o;
  if (!atl__op_filter_ok(sim, &m->l.f, r))
    return 0;
  double min_len = ATL_OP_MIN_SEG * sim->scene->length_scale;
  if (parabola_flat(m)) {
    atl_op_pt p = atl__op_lines_x(r->p1, r->p2, m->l.p1, m->l.p2);
    if (atl__op_on_segment(p, m->l.p1, m->l.p2) &&
        atl__op_on_ray(p, r->p1, r->p2) &&
        sqrt(atl__op_dist2(r->p1, p)) >= min_len) {
      *hit = p;
      return 1;
    }
    return 0;
  }
  parabola_frame f = parabola(m);
  atl_op_pt s = to_local(&f, r->p1), e = to_local(&f, r->p2);
  double dx = e.x - s.x, dy = e.y - s.y;
  double d = sqrt(dx * dx + dy * dy);
  double vx = dx / d, vy = dy / d;
  if (fabs(vx) < 1e-10) {
    /* Along the axis the quadratic degenerates: x stays put. */
    double y = f.a * s.x * s.x;
    double t = (y - s.y) / vy;
    if (t > min_len && fabs(s.x) <= f.half) {
      *hit = to_global(&f, s.x, y);
      return 1;
    }
    return 0;
  }
  /* a (s.x + t vx)^2 = s.y + t vy, solved in the stable form: the root
   * with the larger magnitude first, the other from their product. */
  double A = f.a * vx * vx;
  double B = 2 * f.a * s.x * vx - vy;
  double C = f.a * s.x * s.x - s.y;
  double disc = B * B - 4 * A * C;
  if (disc < 0)
    return 0;
  double sq = sqrt(disc);
  double t[2];
  t[0] = B > 0 ? (-B - sq) / (2 * A) : (-B + sq) / (2 * A);
  t[1] = C / (A * t[0]);
  int found = 0;
  double best = 0;
  for (int i = 0; i < 2; i++) {
    if (!(t[i] > min_len))
      continue;
    double x = s.x + t[i] * vx, y = s.y + t[i] * vy;
    if (!(fabs(x) <= f.half))
      continue;
    if (!found || t[i] < best) {
      best = t[i];
      *hit = to_global(&f, x, y);
      found = 1;
    }
  }
  return found;
}

/* r - 2 (r.n) n for the unit vectors v (incoming) and n (the normal). */
static void reflect_unit(double vx, double vy, double nx, double ny, double *ox,
                         double *oy) {
  double dot = vx * nx + vy * ny;
  *ox = vx - 2 * dot * nx;
  *oy = vy - 2 * dot * ny;
}

static atl_op_result parabolic_incident(atl_op_obj *o, atl_op_sim *sim,
                                        atl_op_ray *r, long ray_index,
                                        atl_op_pt hit,
                                        atl_op_obj *const *merging,
                                        int nmerging) {
  three_point_mirror *m = (three_point_mirror *)o;
  double ox, oy;
  if (parabola_flat(m)) {
    double mx = m->l.p2.x - m->l.p1.x, my = m->l.p2.y - m->l.p1.y;
    double len = sqrt(mx * mx + my * my);
    double dx = hit.x - r->p1.x, dy = hit.y - r->p1.y;
    double d = sqrt(dx * dx + dy * dy);
    reflect_unit(dx / d, dy / d, -my / len, mx / len, &ox, &oy);
    r->p1 = hit;
    r->p2 = atl__op_pt(hit.x + ox, hit.y + oy);
  } else {
    parabola_frame f = parabola(m);
    atl_op_pt h = to_local(&f, hit), s = to_local(&f, r->p1);
    double dx = h.x - s.x, dy = h.y - s.y;
    double d = sqrt(dx * dx + dy * dy);
    /* The curve's normal at x is (-2 a x, 1). */
    double nx = -2 * f.a * h.x, ny = 1;
    double nl = sqrt(nx * nx + ny * ny);
    reflect_unit(dx / d, dy / d, nx / nl, ny / nl, &ox, &oy);
    r->p1 = hit;
    r->p2 = to_global(&f, h.x + ox, h.y + oy);
  }
  r->kind = ATL_OP_REFLECT;
  atl_op_result res = {0};
  return res;
}

/* The parabola over |x| <= half as a curve, sampled evenly in x so that
 * no chord strays from it by more than about 1e-8 of its size: a chord
 * of length h on a curve of curvature k sags by h^2 k / 8, and the
 * curvature is at most 2|a| at the vertex. A flat one is its segment. */
static int parabolic_outline(const atl_op_obj *o, atl_op_outline *out) {
  const three_point_mirror *m = (const three_point_mirror *)o;
  if (parabola_flat(m))
    return atl__op_outline_line(out, m->l.p1, m->l.p2);
  parabola_frame f = parabola(m);
  double size = fmax(f.half, fabs(f.a) * f.half * f.half);
  double eps = 1e-8 * size;
  double want = ceil(2 * f.half * sqrt(fabs(f.a) / (4 * eps)));
  int n = !(want >= 8) ? 8 : want > 16384 ? 16384 : (int)want;
  atl_op_pt *v = malloc((size_t)(n + 1) * sizeof(*v));
  if (!v)
    return -ENOMEM;
  for (int i = 0; i <= n; i++) {
    double x = -f.half + 2 * f.half * i / n;
    v[i] = to_global(&f, x, f.a * x * x);
  }
  int rc = atl__op_outline_curve(out, v, n + 1, 0, n + 1);
  free(v);
  return rc;
}

const atl_op_class atl__op_parabolic_mirror = {
    .type = "ParabolicMirror",
    .flags = ATL_OP_OPTICAL | ATL_OP_MERGES_WITH_GLASS,
    .size = sizeof(three_point_mirror),
    .fields = three_point_fields,
    .init = atl__op_line_filter_init,
    .intersect = parabolic_intersect,
    .incident = parabolic_incident,
    .outline = parabolic_outline,
};

/* --- IdealMirror ---------------------------------------------------------- */

typedef struct {
  atl_op_line_filter l;
  double focal_length;
} ideal_mirror;

static const atl_op_field ideal_mirror_fields[] = {
    ATL_OP_ENDS_FIELDS,
    {"focalLength", ATL_OP_F_NUM, "100", offsetof(ideal_mirror, focal_length)},
    ATL_OP_FILTER_FIELDS,
    {NULL, 0, NULL, 0},
};

static int ideal_mirror_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  ideal_mirror *m = (ideal_mirror *)o;
  if (m->focal_length == 0)
    return atl__op_obj_fail(o, err,
                            "\"focalLength\" is 0; an ideal mirror needs a "
                            "non-zero focal length (positive: concave, "
                            "negative: convex)");
  return atl__op_line_filter_init(o, s, err);
}

/* The line through p parallel to the mirror, as its two points. */
static void parallel_through(const ideal_mirror *m, atl_op_pt p, atl_op_pt *a,
                             atl_op_pt *b) {
  *a = p;
  *b = atl__op_pt(p.x + (m->l.p2.x - m->l.p1.x), p.y + (m->l.p2.y - m->l.p1.y));
}

/* Upstream's construction: first the ray an ideal lens of the same focal
 * length would send on, found with the two lines at 2f on either side
 * (a ray through the near 2F line's crossing leaves through the centre's
 * image on the far one), then that ray mirrored in the mirror's line. */
static atl_op_result ideal_mirror_incident(atl_op_obj *o, atl_op_sim *sim,
                                           atl_op_ray *r, long ray_index,
                                           atl_op_pt hit,
                                           atl_op_obj *const *merging,
                                           int nmerging) {
  ideal_mirror *m = (ideal_mirror *)o;
  double f = m->focal_length;
  double len = sqrt(atl__op_dist2(m->l.p1, m->l.p2));
  double ux = (-m->l.p1.y + m->l.p2.y) / len,
         uy = (m->l.p1.x - m->l.p2.x) / len;
  atl_op_pt mid =
      atl__op_pt((m->l.p1.x + m->l.p2.x) * 0.5, (m->l.p1.y + m->l.p2.y) * 0.5);
  atl_op_pt f1 = atl__op_pt(mid.x + ux * 2 * f, mid.y + uy * 2 * f);
  atl_op_pt f2 = atl__op_pt(mid.x - ux * 2 * f, mid.y - uy * 2 * f);
  atl_op_pt n1, n2, far1, far2;
  int first_near = atl__op_dist2(r->p1, f1) < atl__op_dist2(r->p1, f2);
  parallel_through(m, first_near ? f1 : f2, &n1, &n2);
  parallel_through(m, first_near ? f2 : f1, &far1, &far2);
  atl_op_pt out;
  if (f > 0) {
    atl_op_pt x = atl__op_lines_x(n1, n2, r->p1, r->p2);
    out = atl__op_lines_x(far1, far2, mid, x);
  } else {
    atl_op_pt x = atl__op_lines_x(far1, far2, r->p1, r->p2);
    atl_op_pt y = atl__op_lines_x(n1, n2, mid, x);
    out = atl__op_lines_x(far1, far2, hit, y);
  }
  /* The lens ray runs from hit to out; the mirror sends the ray back
   * along its mirror image, so reflect the point behind hit. */
  atl_op_pt back = atl__op_pt(2 * hit.x - out.x, 2 * hit.y - out.y);
  r->p2 = atl__op_reflect_line(back, hit, m->l.p1, m->l.p2);
  r->p1 = hit;
  r->kind = ATL_OP_REFLECT;
  atl_op_result res = {0};
  return res;
}

const atl_op_class atl__op_ideal_mirror = {
    .type = "IdealMirror",
    .flags = ATL_OP_OPTICAL | ATL_OP_MERGES_WITH_GLASS,
    .size = sizeof(ideal_mirror),
    .fields = ideal_mirror_fields,
    .init = ideal_mirror_init,
    .intersect = atl__op_line_filter_intersect,
    .incident = ideal_mirror_incident,
    .outline = atl__op_outline_p1p2,
};

/* --- BeamSplitter --------------------------------------------------------- */

typedef struct {
  atl_op_line_filter l;
  double trans_ratio;
} beam_splitter;

static const atl_op_field beam_splitter_fields[] = {
    ATL_OP_ENDS_FIELDS,
    {"transRatio", ATL_OP_F_NUM, "0.5", offsetof(beam_splitter, trans_ratio)},
    ATL_OP_FILTER_FIELDS,
    {NULL, 0, NULL, 0},
};

static int beam_splitter_init(atl_op_obj *o, atl_op_scene *s, char **err) {
  beam_splitter *b = (beam_splitter *)o;
  if (!(b->trans_ratio >= 0 && b->trans_ratio <= 1))
    return atl__op_obj_fail(o, err,
                            "\"transRatio\" is %g; it must be between 0 "
                            "(a mirror) and 1 (fully transparent)",
                            b->trans_ratio);
  return atl__op_line_filter_init(o, s, err);
}

/* The ray is reflected in place with 1 - transRatio of its power and a
 * new ray goes straight on with the rest. A transmitted part too weak
 * to follow is truncated instead, and so is a reflected part when both
 * are, in which case the ray is absorbed. */
static atl_op_result beam_splitter_incident(atl_op_obj *o, atl_op_sim *sim,
                                            atl_op_ray *r, long ray_index,
                                            atl_op_pt hit,
                                            atl_op_obj *const *merging,
                                            int nmerging) {
  beam_splitter *b = (beam_splitter *)o;
  double t = b->trans_ratio;
  atl_op_pt through =
      atl__op_pt(hit.x - (r->p1.x - hit.x), hit.y - (r->p1.y - hit.y));
  atl_op_ray tr =
      atl__op_ray_make(hit, through, t * r->bs, t * r->bp, r, ATL_OP_REFRACT);
  r->p2 = atl__op_reflect_line(r->p1, hit, b->l.p1, b->l.p2);
  r->p1 = hit;
  r->kind = ATL_OP_REFLECT;
  r->bs *= 1 - t;
  r->bp *= 1 - t;
  double min = atl__op_min_brightness(sim->scene);
  atl_op_result res = {0};
  if (tr.bs + tr.bp > min) {
    atl__op_emit(sim, &tr);
  } else if (r->bs + r->bp > min) {
    res.truncation = tr.bs + tr.bp;
  } else {
    res.absorbed = 1;
    res.truncation = r->bs + r->bp + tr.bs + tr.bp;
  }
  return res;
}

const atl_op_class atl__op_beam_splitter = {
    .type = "BeamSplitter",
    .flags = ATL_OP_OPTICAL,
    .size = sizeof(beam_splitter),
    .fields = beam_splitter_fields,
    .init = beam_splitter_init,
    .intersect = atl__op_line_filter_intersect,
    .incident = beam_splitter_incident,
    .outline = atl__op_outline_p1p2,
};
