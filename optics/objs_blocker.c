/* Blockers beyond the plain segment (objs_line.c): CircleBlocker, a
 * circle that absorbs every ray reaching it, and Aperture, a segment
 * p1-p2 with a hole p3-p4 in it. Both are filters when their filter is
 * on: a ray outside the filter's band passes through them. */
#include <stddef.h>

#include "geom.h"
#include "objs.h"
#include "op.h"
#include "outline.h"

static atl_op_result absorb(atl_op_obj *o, atl_op_sim *sim, atl_op_ray *r,
                            long ray_index, atl_op_pt hit,
                            atl_op_obj *const *merging, int nmerging) {
  atl_op_result res = {.absorbed = 1};
  return res;
}

/* --- CircleBlocker -------------------------------------------------------- */

/* p1 is the centre, p2 a point on the circle. */
static const atl_op_field circle_blocker_fields[] = {
    ATL_OP_ENDS_FIELDS,
    ATL_OP_FILTER_FIELDS,
    {NULL, 0, NULL, 0},
};

static int circle_blocker_intersect(atl_op_obj *o, atl_op_sim *sim,
                                    const atl_op_ray *r, atl_op_pt *hit) {
  atl_op_line_filter *c = (atl_op_line_filter *)o;
  if (!atl__op_filter_ok(sim, &c->f, r))
    return 0;
  return atl__op_ray_circle(sim, r, c->p1, atl__op_dist2(c->p1, c->p2), NULL,
                            hit);
}

/* The circle about p1 through p2, a region rays can be inside. */
static int circle_blocker_outline(const atl_op_obj *o, atl_op_outline *out) {
  const atl_op_line_filter *c = (const atl_op_line_filter *)o;
  int rc = atl__op_outline_circle(out, c->p1, c->p2);
  out->closed = rc == 0;
  return rc;
}

const atl_op_class atl__op_circle_blocker = {
    .type = "CircleBlocker",
    .flags = ATL_OP_OPTICAL | ATL_OP_MERGES_WITH_GLASS,
    .size = sizeof(atl_op_line_filter),
    .fields = circle_blocker_fields,
    .init = atl__op_line_filter_init,
    .intersect = circle_blocker_intersect,
    .incident = absorb,
    .outline = circle_blocker_outline,
};

/* --- Aperture ------------------------------------------------------------- */

/* The blocking parts are p1-p3 and p2-p4; the hole is between p3 and p4. */
typedef struct {
  atl_op_line_filter l;
  atl_op_pt p3, p4;
} aperture;

static const atl_op_field aperture_fields[] = {
    ATL_OP_ENDS_FIELDS,
    {"p3", ATL_OP_F_POINT, "null", offsetof(aperture, p3)},
    {"p4", ATL_OP_F_POINT, "null", offsetof(aperture, p4)},
    ATL_OP_FILTER_FIELDS,
    {NULL, 0, NULL, 0},
};

/* The first part hit wins, not the nearer one, as upstream decides: the
 * two parts normally lie on one line, so a ray meets at most one. */
static int aperture_intersect(atl_op_obj *o, atl_op_sim *sim,
                              const atl_op_ray *r, atl_op_pt *hit) {
  aperture *a = (aperture *)o;
  if (!atl__op_filter_ok(sim, &a->l.f, r))
    return 0;
  return atl__op_ray_segment(r, a->l.p1, a->p3, hit) ||
         atl__op_ray_segment(r, a->l.p2, a->p4, hit);
}

/* The two blocking parts, p1-p3 and p2-p4 (the hole between them has no
 * edge). */
static int aperture_outline(const atl_op_obj *o, atl_op_outline *out) {
  const aperture *a = (const aperture *)o;
  int rc = atl__op_outline_line(out, a->l.p1, a->p3);
  return rc < 0 ? rc : atl__op_outline_line(out, a->l.p2, a->p4);
}

const atl_op_class atl__op_aperture = {
    .type = "Aperture",
    .flags = ATL_OP_OPTICAL | ATL_OP_MERGES_WITH_GLASS,
    .size = sizeof(aperture),
    .fields = aperture_fields,
    .init = atl__op_line_filter_init,
    .intersect = aperture_intersect,
    .incident = absorb,
    .outline = aperture_outline,
};
