/* The scene's geometry for the tools (opx_geom.h): every object with its
 * names, family and outline, its edges measured along themselves (arcs
 * exactly, curves along their polylines) and labelled by the direction
 * they face on the picture. The point queries are in opx_geom_index.c. */
#include "atl-build.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "glass.h"
#include "opx_geom_int.h"

static const char *const family_names[] = {"source",   "mirror",  "glass",
                                           "lens",     "blocker", "grating",
                                           "detector", "surface", "other"};

const char *opx_family_name(opx_family_t f) {
  return f >= OPX_SOURCE && f <= OPX_OTHER ? family_names[f] : "other";
}

/* The family of a class by its type name; every BaseGlass is a glass. */
static opx_family_t family_of(const atl_op_class *c) {
  static const struct {
    const char *type;
    opx_family_t f;
  } tab[] = {
      {"SingleRay", OPX_SOURCE},
      {"PointSource", OPX_SOURCE},
      {"AngleSource", OPX_SOURCE},
      {"Beam", OPX_SOURCE},
      {"Mirror", OPX_MIRROR},
      {"ArcMirror", OPX_MIRROR},
      {"ParabolicMirror", OPX_MIRROR},
      {"IdealMirror", OPX_MIRROR},
      {"BeamSplitter", OPX_MIRROR},
      {"CustomMirror", OPX_MIRROR},
      {"ParamMirror", OPX_MIRROR},
      {"IdealLens", OPX_LENS},
      {"Blocker", OPX_BLOCKER},
      {"CircleBlocker", OPX_BLOCKER},
      {"Aperture", OPX_BLOCKER},
      {"DiffractionGrating", OPX_GRATING},
      {"ConcaveDiffractionGrating", OPX_GRATING},
      {"Detector", OPX_DETECTOR},
      {"CustomSurface", OPX_SURFACE},
      {"CustomArcSurface", OPX_SURFACE},
      {"CustomParamSurface", OPX_SURFACE},
  };
  if (c->flags & ATL_OP_GLASS)
    return OPX_GLASS;
  for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
    if (strcmp(c->type, tab[i].type) == 0)
      return tab[i].f;
  return OPX_OTHER;
}

/* --- Labels ------------------------------------------------------------- */

static const char *const labels4[] = {"E", "N", "W", "S"};
static const char *const labels8[] = {"E", "NE", "N", "NW",
                                      "W", "SW", "S", "SE"};
static const char *const labels12[] = {"E", "ENE", "NNE", "N", "NNW", "WNW",
                                       "W", "WSW", "SSW", "S", "SSE", "ESE"};
static const char *const labels16[] = {"E",  "ENE", "NE", "NNE", "N",  "NNW",
                                       "NW", "WNW", "W",  "WSW", "SW", "SSW",
                                       "S",  "SSE", "SE", "ESE"};

/* The long forms, in the order of labels16, which holds every short one. */
static const char *const long16[] = {"East Edge",       "East North East Edge",
                                     "North East Edge", "North North East Edge",
                                     "North Edge",      "North North West Edge",
                                     "North West Edge", "West North West Edge",
                                     "West Edge",       "West South West Edge",
                                     "South West Edge", "South South West Edge",
                                     "South Edge",      "South South East Edge",
                                     "South East Edge", "East South East Edge"};

void opx_cardinal(double dx, double dy, int n, const char **short_label,
                  const char **long_label) {
  const char *const *tab = n <= 4    ? labels4
                           : n <= 8  ? labels8
                           : n <= 12 ? labels12
                                     : labels16;
  int size = n <= 4 ? 4 : n <= 8 ? 8 : n <= 12 ? 12 : 16;
  /* On the picture y grows downward, so "up" (north) is -y. The sector
   * arithmetic is ray_tracing_shapely's, whose exact boundaries go to
   * the counterclockwise side. */
  double theta = atan2(-dy, dx);
  if (theta < 0)
    theta += OPX_TWO_PI;
  double delta = OPX_TWO_PI / size;
  int idx = (int)((theta + delta / 2) / delta) % size;
  *short_label = tab[idx];
  *long_label = "";
  for (int i = 0; i < 16; i++)
    if (strcmp(labels16[i], tab[idx]) == 0)
      *long_label = long16[i];
}

/* The set of labels for an object of n edges. */
static int label_set(int n) {
  return n <= 4 ? 4 : n <= 8 ? 8 : n <= 12 ? 12 : 16;
}

/* --- Measures ----------------------------------------------------------- */

/* Length along the edge. */
static double edge_length(const atl_op_edge *e) {
  switch (e->kind) {
  case ATL_OP_EDGE_ARC:
    return e->r * fabs(e->da);
  case ATL_OP_EDGE_CURVE: {
    double s = 0;
    for (int i = 0; i + 1 < e->npts; i++)
      s += sqrt(atl__op_dist2(e->pts[i], e->pts[i + 1]));
    return s;
  }
  default:
    return sqrt(atl__op_dist2(e->p1, e->p2));
  }
}

/* The point halfway along the edge and the unit tangent there. */
static void edge_mid(const atl_op_edge *e, double len, atl_op_pt *mid,
                     atl_op_pt *tan) {
  double tx = e->p2.x - e->p1.x, ty = e->p2.y - e->p1.y;
  *mid = atl__op_edge_point(e, 0.5);
  if (e->kind == ATL_OP_EDGE_ARC) {
    double a = e->a0 + 0.5 * e->da, s = e->da < 0 ? -1 : 1;
    tx = -s * sin(a);
    ty = s * cos(a);
  } else if (e->kind == ATL_OP_EDGE_CURVE) {
    double half = len / 2, run = 0;
    for (int i = 0; i + 1 < e->npts; i++) {
      atl_op_pt a = e->pts[i], b = e->pts[i + 1];
      double l = sqrt(atl__op_dist2(a, b));
      if (l > 0 && (run + l >= half || i + 2 == e->npts)) {
        double f = (half - run) / l;
        f = f < 0 ? 0 : f > 1 ? 1 : f;
        *mid = atl__op_pt(a.x + f * (b.x - a.x), a.y + f * (b.y - a.y));
        tx = b.x - a.x;
        ty = b.y - a.y;
        break;
      }
      run += l;
    }
  }
  double l = sqrt(tx * tx + ty * ty);
  *tan = l > 0 ? atl__op_pt(tx / l, ty / l) : atl__op_pt(0, 0);
}

/* The line integrals of x dy - y dx, x^2 dy and y^2 dx along the segment
 * a-b (coordinates relative to the outline's reference point), added to
 * acc; Green's theorem turns them into area and centroid. */
static void seg_integrals(atl_op_pt a, atl_op_pt b, double acc[3]) {
  acc[0] += a.x * b.y - b.x * a.y;
  acc[1] += (b.y - a.y) * (a.x * a.x + a.x * b.x + b.x * b.x) / 3;
  acc[2] += (b.x - a.x) * (a.y * a.y + a.y * b.y + b.y * b.y) / 3;
}

/* The same along an arc, in closed form over its angle. */
static void arc_integrals(const atl_op_edge *e, atl_op_pt ref, double acc[3]) {
  double cx = e->c.x - ref.x, cy = e->c.y - ref.y, r = e->r;
  double t0 = e->a0, t1 = e->a0 + e->da;
  double s0 = sin(t0), s1 = sin(t1), c0 = cos(t0), c1 = cos(t1);
  acc[0] += cx * r * (s1 - s0) - cy * r * (c1 - c0) + r * r * e->da;
  /* x^2 dy = (cx + r cos)^2 r cos dtheta. */
  acc[1] += cx * cx * r * (s1 - s0) +
            2 * cx * r * r * (e->da / 2 + (sin(2 * t1) - sin(2 * t0)) / 4) +
            r * r * r * ((s1 - s1 * s1 * s1 / 3) - (s0 - s0 * s0 * s0 / 3));
  /* y^2 dx = -(cy + r sin)^2 r sin dtheta. */
  acc[2] -= cy * cy * r * (c0 - c1) +
            2 * cy * r * r * (e->da / 2 - (sin(2 * t1) - sin(2 * t0)) / 4) +
            r * r * r * ((-c1 + c1 * c1 * c1 / 3) - (-c0 + c0 * c0 * c0 / 3));
}

/* Area and centroid of a closed outline, with every arc and curve
 * followed exactly (curves as their polylines). Returns the signed area
 * (positive when the outline runs counterclockwise in the formula's
 * axes, which is clockwise on the picture). */
static double region_measures(const atl_op_outline *ol, atl_op_pt ref,
                              atl_op_pt *centroid) {
  double acc[3] = {0, 0, 0};
  for (int i = 0; i < ol->n; i++) {
    const atl_op_edge *e = &ol->edges[i];
    atl_op_pt a = atl__op_pt(e->p1.x - ref.x, e->p1.y - ref.y);
    atl_op_pt b = atl__op_pt(e->p2.x - ref.x, e->p2.y - ref.y);
    if (e->kind == ATL_OP_EDGE_ARC) {
      arc_integrals(e, ref, acc);
    } else if (e->kind == ATL_OP_EDGE_CURVE) {
      for (int k = 0; k + 1 < e->npts; k++)
        seg_integrals(
            atl__op_pt(e->pts[k].x - ref.x, e->pts[k].y - ref.y),
            atl__op_pt(e->pts[k + 1].x - ref.x, e->pts[k + 1].y - ref.y), acc);
    } else {
      seg_integrals(a, b, acc);
    }
  }
  double area = acc[0] / 2;
  *centroid = area != 0 ? atl__op_pt(ref.x + acc[1] / (2 * area),
                                     ref.y - acc[2] / (2 * area))
                        : ref;
  return area;
}

/* Grows box b by the edge's extent: its ends, an arc's extreme points
 * within its sweep, a curve's samples. */
static void box_edge(double b[4], const atl_op_edge *e) {
  atl_op_pt pts[6];
  int n = 0;
  pts[n++] = e->p1;
  pts[n++] = e->p2;
  if (e->kind == ATL_OP_EDGE_ARC)
    for (int k = 0; k < 4; k++)
      if (opx_arc_covers(e, k * OPX_TWO_PI / 4))
        pts[n++] = atl__op_pt(e->c.x + e->r * cos(k * OPX_TWO_PI / 4),
                              e->c.y + e->r * sin(k * OPX_TWO_PI / 4));
  for (int i = 0; i < n; i++) {
    b[0] = fmin(b[0], pts[i].x), b[1] = fmin(b[1], pts[i].y);
    b[2] = fmax(b[2], pts[i].x), b[3] = fmax(b[3], pts[i].y);
  }
  if (e->kind == ATL_OP_EDGE_CURVE)
    for (int i = 0; i < e->npts; i++) {
      b[0] = fmin(b[0], e->pts[i].x), b[1] = fmin(b[1], e->pts[i].y);
      b[2] = fmax(b[2], e->pts[i].x), b[3] = fmax(b[3], e->pts[i].y);
    }
}

/* Fills the measures of object ob, and its edges from g->edges[first]. */
static void measure(opx_geom_t *g, opx_obj_t *ob) {
  const atl_op_outline *ol = &ob->outline;
  double sx = 0, sy = 0;
  ob->box[0] = ob->box[1] = INFINITY;
  ob->box[2] = ob->box[3] = -INFINITY;
  for (int i = 0; i < ol->n; i++) {
    /* Both ends: for a closed outline each vertex counts twice, so this
     * is the average of the edges' p1; an open one keeps its far end. */
    sx += ol->edges[i].p1.x + ol->edges[i].p2.x;
    sy += ol->edges[i].p1.y + ol->edges[i].p2.y;
    box_edge(ob->box, &ol->edges[i]);
  }
  ob->vertex_centroid =
      ol->n ? atl__op_pt(sx / (2 * ol->n), sy / (2 * ol->n)) : atl__op_pt(0, 0);
  ob->centroid = ob->vertex_centroid;
  double sign = 1;
  if (ol->closed) {
    double a = region_measures(ol, ob->vertex_centroid, &ob->centroid);
    ob->area = fabs(a);
    sign = a < 0 ? -1 : 1;
  }
  int labelled = ol->closed && ol->n >= 2;
  ob->perimeter = 0;
  for (int i = 0; i < ob->nedges; i++) {
    opx_edge_t *ed = &g->edges[ob->first_edge + i];
    atl_op_pt tan;
    ed->length = edge_length(ed->e);
    ob->perimeter += ed->length;
    edge_mid(ed->e, ed->length, &ed->mid, &tan);
    /* (ty, -tx) is the left of the direction of travel on the picture;
     * on a closed outline it points out when the signed area is positive
     * (Green's orientation), in otherwise. A half-plane's glass is on
     * the right, so its left is outward too. */
    ed->normal = atl__op_pt(sign * tan.y, -sign * tan.x);
    if (labelled) {
      const char *s, *l;
      opx_cardinal(ed->mid.x - ob->vertex_centroid.x,
                   ed->mid.y - ob->vertex_centroid.y, label_set(ol->n), &s, &l);
      snprintf(ed->short_label, sizeof(ed->short_label), "%s", s);
      snprintf(ed->long_label, sizeof(ed->long_label), "%s", l);
    } else {
      /* No region, no facing: the edge's index names it. */
      char num[16];
      snprintf(num, sizeof(num), "%d", i);
      /* An index too long for the short label (over 999) has none. */
      if (strlen(num) < sizeof(ed->short_label))
        memcpy(ed->short_label, num, strlen(num) + 1);
      snprintf(ed->long_label, sizeof(ed->long_label), "Edge %d", i);
    }
  }
}

/* --- Names -------------------------------------------------------------- */

static const char *doc_str(json_object *doc_objs, int i, const char *key) {
  json_object *o, *v;
  if (!doc_objs || !json_object_is_type(doc_objs, json_type_array) || i < 0 ||
      (size_t)i >= json_object_array_length(doc_objs))
    return NULL;
  o = json_object_array_get_idx(doc_objs, (size_t)i);
  if (!json_object_is_type(o, json_type_object) ||
      !json_object_object_get_ex(o, key, &v) ||
      !json_object_is_type(v, json_type_string))
    return NULL;
  return json_object_get_string(v);
}

/* Names every object: its document name, and a display name; the parts
 * of a module (scene objects sharing a document index) are numbered
 * after it. */
static int name_objects(opx_geom_t *g, json_object *doc_objs) {
  int maxd = -1;
  for (int i = 0; i < g->nobjs; i++)
    maxd = g->objs[i].doc_index > maxd ? g->objs[i].doc_index : maxd;
  int *count = calloc((size_t)maxd + 2, sizeof(int));
  int *seen = calloc((size_t)maxd + 2, sizeof(int));
  int rc = count && seen ? 0 : -ENOMEM;
  for (int i = 0; rc == 0 && i < g->nobjs; i++)
    if (g->objs[i].doc_index >= 0)
      count[g->objs[i].doc_index]++;
  for (int i = 0; rc == 0 && i < g->nobjs; i++) {
    opx_obj_t *ob = &g->objs[i];
    int d = ob->doc_index;
    const char *name = doc_str(doc_objs, d, "name");
    const char *type = doc_str(doc_objs, d, "type");
    int part = d >= 0 && (count[d] > 1 || (type && !strcmp(type, "ModuleObj")));
    int ok;
    if (part) {
      int k = seen[d]++;
      ok = name ? asprintf(&ob->display_name, "%s/%d", name, k)
                : asprintf(&ob->display_name, "ModuleObj %d/%d", d, k);
      if (ok >= 0 && name && !(ob->name = strdup(ob->display_name)))
        ok = -1;
    } else {
      ok = name ? asprintf(&ob->display_name, "%s", name)
                : asprintf(&ob->display_name, "%s %d", ob->type, d);
      if (ok >= 0 && name && !(ob->name = strdup(name)))
        ok = -1;
    }
    if (ok < 0) {
      ob->display_name = NULL;
      rc = -ENOMEM;
    }
  }
  free(count);
  free(seen);
  return rc;
}

/* --- Building ----------------------------------------------------------- */

int opx_geom_build(const atl_op_scene *s, json_object *doc_objs,
                   opx_geom_t **out) {
  *out = NULL;
  opx_geom_t *g = calloc(1, sizeof(*g));
  if (!g)
    return -ENOMEM;
  if (!doc_objs && s->doc)
    json_object_object_get_ex(s->doc, "objs", &doc_objs);
  g->objs = calloc((size_t)s->nobjs + 1, sizeof(*g->objs));
  int rc = g->objs ? 0 : -ENOMEM;
  int total = 0;
  for (int i = 0; rc == 0 && i < s->nobjs; i++) {
    const atl_op_obj *o = s->objs[i];
    opx_obj_t *ob = &g->objs[g->nobjs++];
    ob->o = o;
    ob->type = o->cls->type;
    ob->optical = o->index;
    ob->doc_index = o->doc_index;
    ob->family = family_of(o->cls);
    ob->ref_index =
        (o->cls->flags & ATL_OP_GLASS) && !(o->cls->flags & ATL_OP_GRIN)
            ? ((const atl_op_glass *)o)->ref_index
            : NAN;
    rc = atl__op_outline(o, &ob->outline);
    ob->first_edge = total;
    ob->nedges = ob->outline.n;
    total += ob->outline.n;
  }
  if (rc == 0) {
    g->edges = calloc((size_t)total + 1, sizeof(*g->edges));
    rc = g->edges ? 0 : -ENOMEM;
  }
  for (int i = 0; rc == 0 && i < g->nobjs; i++) {
    opx_obj_t *ob = &g->objs[i];
    for (int k = 0; k < ob->nedges; k++) {
      opx_edge_t *ed = &g->edges[g->nedges++];
      ed->obj = i;
      ed->index = k;
      ed->e = &ob->outline.edges[k];
    }
    measure(g, ob);
  }
  if (rc == 0)
    rc = name_objects(g, doc_objs);
  if (rc == 0)
    rc = opx_geom_index_build(g);
  if (rc != 0) {
    opx_geom_free(g);
    return rc;
  }
  *out = g;
  return 0;
}

void opx_geom_free(opx_geom_t *g) {
  if (!g)
    return;
  for (int i = 0; i < g->nobjs; i++) {
    free(g->objs[i].name);
    free(g->objs[i].display_name);
    atl__op_outline_free(&g->objs[i].outline);
  }
  opx_geom_index_free(g->index);
  free(g->objs);
  free(g->edges);
  free(g);
}

/* --- Lookups ------------------------------------------------------------ */

int opx_geom_find(const opx_geom_t *g, const char *name) {
  for (int i = 0; name && i < g->nobjs; i++)
    if ((g->objs[i].name && strcmp(g->objs[i].name, name) == 0) ||
        (g->objs[i].display_name && strcmp(g->objs[i].display_name, name) == 0))
      return i;
  return -1;
}

int opx_geom_index_of(const opx_geom_t *g, const atl_op_obj *o) {
  for (int i = 0; i < g->nobjs; i++)
    if (g->objs[i].o == o)
      return i;
  return -1;
}

int opx_geom_edge_find(const opx_geom_t *g, int obj, const char *label) {
  if (obj < 0 || obj >= g->nobjs || !label || !*label)
    return -1;
  const opx_obj_t *ob = &g->objs[obj];
  for (int i = 0; i < ob->nedges; i++)
    if (strcasecmp(g->edges[ob->first_edge + i].short_label, label) == 0)
      return ob->first_edge + i;
  for (int i = 0; i < ob->nedges; i++)
    if (strcasecmp(g->edges[ob->first_edge + i].long_label, label) == 0)
      return ob->first_edge + i;
  char *end;
  long k = strtol(label, &end, 10);
  if (isdigit((unsigned char)label[0]) && *end == '\0' && k >= 0 &&
      k < ob->nedges)
    return ob->first_edge + (int)k;
  return -1;
}
