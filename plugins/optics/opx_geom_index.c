/* The geometry's point queries (opx_geom.h) and the spatial index behind
 * them. The ray database asks which edges pass through every end of up
 * to a million segments, so the edges are cut into short chunks (a piece
 * of a line, a sub-arc of at most 30 degrees, 16 segments of a curve),
 * each with its box, and the chunks are filed in a uniform grid over the
 * scene: a query looks at the chunks of the one or few cells around the
 * point, and measures exactly (arcs as arcs) only those whose box it is
 * near. */
#include "atl-build.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opx_geom_int.h"

#define CURVE_CHUNK 16              /* segments of a curve per chunk */
#define ARC_CHUNK (OPX_TWO_PI / 12) /* the widest sub-arc */
#define GRID_MAX 1024               /* cells along a side, at most */

/* A piece of an edge: LINE and ARC pieces run over the edge's parameter
 * t0..t1, CURVE pieces over its segments s0 .. s1 - 1. */
typedef struct {
  int edge;
  double t0, t1;
  int s0, s1;
  double box[4]; /* lo x, lo y, hi x, hi y */
} chunk_t;

typedef struct {
  chunk_t *ch;
  int nch;
  int *edge_ch; /* per edge of g, its first chunk; [g->nedges] = nch */
  double x0, y0, cw, chh;
  int nx, ny;
  int *cell_start, *items; /* the chunks of cell i: items[cell_start[i]..] */
  /* The edges of half-planes (PlaneGlass), whose boundary is the whole
   * line through the edge: no grid holds them, every query tests them. */
  int *lines, nlines;
} gindex;

/* --- Distances ---------------------------------------------------------- */

static double seg_near(atl_op_pt p, atl_op_pt a, atl_op_pt b, atl_op_pt *q) {
  double dx = b.x - a.x, dy = b.y - a.y, l2 = dx * dx + dy * dy;
  double t = l2 > 0 ? ((p.x - a.x) * dx + (p.y - a.y) * dy) / l2 : 0;
  t = t < 0 ? 0 : t > 1 ? 1 : t;
  *q = atl__op_pt(a.x + t * dx, a.y + t * dy);
  return sqrt(atl__op_dist2(p, *q));
}

/* The nearest point to p on the part t0..t1 of arc e. */
static double arc_near(const atl_op_edge *e, double t0, double t1, atl_op_pt p,
                       atl_op_pt *q) {
  atl_op_edge sub = *e;
  sub.a0 = e->a0 + t0 * e->da;
  sub.da = (t1 - t0) * e->da;
  double phi = atan2(p.y - e->c.y, p.x - e->c.x);
  if ((p.x != e->c.x || p.y != e->c.y) && opx_arc_covers(&sub, phi)) {
    *q = atl__op_pt(e->c.x + e->r * cos(phi), e->c.y + e->r * sin(phi));
    return fabs(sqrt(atl__op_dist2(p, e->c)) - e->r);
  }
  atl_op_pt a = atl__op_edge_point(e, t0), b = atl__op_edge_point(e, t1);
  double da = atl__op_dist2(p, a), db = atl__op_dist2(p, b);
  *q = da <= db ? a : b;
  return sqrt(da <= db ? da : db);
}

/* The nearest point on segments s0 .. s1 - 1 of a curve; *seg gets the
 * segment. */
static double curve_near(const atl_op_edge *e, int s0, int s1, atl_op_pt p,
                         atl_op_pt *q, int *seg) {
  double best = INFINITY;
  for (int i = s0; i < s1; i++) {
    atl_op_pt r;
    double d = seg_near(p, e->pts[i], e->pts[i + 1], &r);
    if (d < best) {
      best = d, *q = r, *seg = i;
    }
  }
  return best;
}

/* The unit tangent of e at its point q (on segment seg of a curve). */
static atl_op_pt tangent_at(const atl_op_edge *e, atl_op_pt q, int seg) {
  double tx, ty;
  if (e->kind == ATL_OP_EDGE_ARC) {
    double a = atan2(q.y - e->c.y, q.x - e->c.x), s = e->da < 0 ? -1 : 1;
    tx = -s * sin(a), ty = s * cos(a);
  } else if (e->kind == ATL_OP_EDGE_CURVE && seg >= 0) {
    tx = e->pts[seg + 1].x - e->pts[seg].x;
    ty = e->pts[seg + 1].y - e->pts[seg].y;
  } else {
    tx = e->p2.x - e->p1.x, ty = e->p2.y - e->p1.y;
  }
  double l = sqrt(tx * tx + ty * ty);
  return l > 0 ? atl__op_pt(tx / l, ty / l) : atl__op_pt(1, 0);
}

double opx_edge_nearest(const atl_op_edge *e, atl_op_pt p, atl_op_pt *q,
                        atl_op_pt *tan) {
  int seg = -1;
  double d;
  if (e->kind == ATL_OP_EDGE_ARC)
    d = arc_near(e, 0, 1, p, q);
  else if (e->kind == ATL_OP_EDGE_CURVE && e->npts >= 2)
    d = curve_near(e, 0, e->npts - 1, p, q, &seg);
  else
    d = seg_near(p, e->p1, e->p2, q);
  *tan = tangent_at(e, *q, seg);
  return d;
}

/* The distance from p to chunk c of edge e; *q the nearest point. */
static double chunk_near(const chunk_t *c, const atl_op_edge *e, atl_op_pt p,
                         atl_op_pt *q, int *seg) {
  *seg = -1;
  if (e->kind == ATL_OP_EDGE_ARC)
    return arc_near(e, c->t0, c->t1, p, q);
  if (e->kind == ATL_OP_EDGE_CURVE)
    return curve_near(e, c->s0, c->s1, p, q, seg);
  return seg_near(p, atl__op_edge_point(e, c->t0), atl__op_edge_point(e, c->t1),
                  q);
}

static int box_near(const double b[4], atl_op_pt p, double tol) {
  return p.x >= b[0] - tol && p.x <= b[2] + tol && p.y >= b[1] - tol &&
         p.y <= b[3] + tol;
}

/* --- Building ----------------------------------------------------------- */

static void box_grow(double b[4], atl_op_pt p) {
  b[0] = fmin(b[0], p.x), b[1] = fmin(b[1], p.y);
  b[2] = fmax(b[2], p.x), b[3] = fmax(b[3], p.y);
}

static void chunk_box(chunk_t *c, const atl_op_edge *e) {
  double *b = c->box;
  b[0] = b[1] = INFINITY;
  b[2] = b[3] = -INFINITY;
  if (e->kind == ATL_OP_EDGE_CURVE) {
    for (int i = c->s0; i <= c->s1; i++)
      box_grow(b, e->pts[i]);
  } else {
    box_grow(b, atl__op_edge_point(e, c->t0));
    box_grow(b, atl__op_edge_point(e, c->t1));
  }
  if (e->kind == ATL_OP_EDGE_ARC) {
    atl_op_edge sub = *e;
    sub.a0 = e->a0 + c->t0 * e->da;
    sub.da = (c->t1 - c->t0) * e->da;
    for (int k = 0; k < 4; k++)
      if (opx_arc_covers(&sub, k * OPX_TWO_PI / 4))
        box_grow(b, atl__op_pt(e->c.x + e->r * cos(k * OPX_TWO_PI / 4),
                               e->c.y + e->r * sin(k * OPX_TWO_PI / 4)));
  }
  /* Room for the roundings of the points computed from the edge. */
  double m = fmax(fmax(fabs(b[0]), fabs(b[1])), fmax(fabs(b[2]), fabs(b[3])));
  double pad = 1e-9 * (1 + (isfinite(m) ? m : 0));
  b[0] -= pad, b[1] -= pad, b[2] += pad, b[3] += pad;
}

/* How many chunks edge e is cut into, for chunks no longer than about
 * len (0: the rough count, before the grid's size is known). */
static int chunk_count(const atl_op_edge *e, double len, int cap) {
  int k = 1;
  if (e->kind == ATL_OP_EDGE_CURVE)
    return e->npts >= 2 ? (e->npts - 2) / CURVE_CHUNK + 1 : 0;
  if (e->kind == ATL_OP_EDGE_ARC)
    k = (int)ceil(fabs(e->da) / ARC_CHUNK);
  if (len > 0) {
    double along = e->kind == ATL_OP_EDGE_ARC
                       ? e->r * fabs(e->da)
                       : sqrt(atl__op_dist2(e->p1, e->p2));
    double want = ceil(along / len);
    if (want > k)
      k = want < cap ? (int)want : cap;
  }
  return k < 1 ? 1 : k;
}

static int cell_of(double v, double lo, double w, int n) {
  double f = floor((v - lo) / w);
  return f < 0 ? 0 : f >= n ? n - 1 : (int)f;
}

static int grid_build(gindex *x) {
  size_t ncell = (size_t)x->nx * (size_t)x->ny, total = 0;
  x->cell_start = calloc(ncell + 1, sizeof(int));
  if (!x->cell_start)
    return -ENOMEM;
  /* Two passes: count each cell's chunks, then file them. */
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < x->nch; i++) {
      const double *b = x->ch[i].box;
      if (!(isfinite(b[0]) && isfinite(b[1]) && isfinite(b[2]) &&
            isfinite(b[3])))
        continue;
      int i0 = cell_of(b[0], x->x0, x->cw, x->nx);
      int i1 = cell_of(b[2], x->x0, x->cw, x->nx);
      int j0 = cell_of(b[1], x->y0, x->chh, x->ny);
      int j1 = cell_of(b[3], x->y0, x->chh, x->ny);
      for (int j = j0; j <= j1; j++)
        for (int k = i0; k <= i1; k++) {
          size_t c = (size_t)j * (size_t)x->nx + (size_t)k;
          if (pass == 0)
            x->cell_start[c + 1]++, total++;
          else
            x->items[x->cell_start[c]++] = i;
        }
    }
    if (pass == 0) {
      for (size_t c = 0; c < ncell; c++)
        x->cell_start[c + 1] += x->cell_start[c];
      x->items = malloc((total + 1) * sizeof(int));
      if (!x->items)
        return -ENOMEM;
    }
  }
  /* The filing moved each start to the next cell's; move them back. */
  for (size_t c = ncell; c > 0; c--)
    x->cell_start[c] = x->cell_start[c - 1];
  x->cell_start[0] = 0;
  return 0;
}

int opx_geom_index_build(opx_geom_t *g) {
  gindex *x = calloc(1, sizeof(*x));
  if (!x)
    return -ENOMEM;
  g->index = x;
  double sb[4] = {INFINITY, INFINITY, -INFINITY, -INFINITY};
  long rough = 0;
  for (int i = 0; i < g->nobjs; i++)
    if (isfinite(g->objs[i].box[0]) && isfinite(g->objs[i].box[2]) &&
        isfinite(g->objs[i].box[1]) && isfinite(g->objs[i].box[3])) {
      box_grow(sb, atl__op_pt(g->objs[i].box[0], g->objs[i].box[1]));
      box_grow(sb, atl__op_pt(g->objs[i].box[2], g->objs[i].box[3]));
    }
  for (int i = 0; i < g->nedges; i++)
    rough += chunk_count(g->edges[i].e, 0, 0);
  if (!(sb[0] <= sb[2]))
    sb[0] = sb[1] = sb[2] = sb[3] = 0;
  double w = sb[2] - sb[0], h = sb[3] - sb[1];
  double side = ceil(2 * sqrt((double)rough));
  side = side < 8 ? 8 : side > GRID_MAX ? GRID_MAX : side;
  double len = fmax(w, h) / side;
  if (!(len > 0))
    len = 1;
  x->edge_ch = malloc(((size_t)g->nedges + 1) * sizeof(int));
  x->lines = malloc(((size_t)g->nedges + 1) * sizeof(int));
  if (!x->edge_ch || !x->lines)
    return -ENOMEM;
  for (int i = 0; i < g->nobjs; i++)
    if (g->objs[i].outline.half_plane && g->objs[i].nedges == 1)
      x->lines[x->nlines++] = g->objs[i].first_edge;
  for (int pass = 0; pass < 2; pass++) {
    x->nch = 0;
    for (int i = 0; i < g->nedges; i++) {
      const atl_op_edge *e = g->edges[i].e;
      int k = chunk_count(e, len, 4 * (int)side);
      x->edge_ch[i] = x->nch;
      for (int j = 0; pass == 1 && j < k; j++) {
        chunk_t *c = &x->ch[x->nch + j];
        c->edge = i;
        c->t0 = (double)j / k;
        c->t1 = (double)(j + 1) / k;
        c->s0 = j * CURVE_CHUNK;
        c->s1 = (j + 1) * CURVE_CHUNK < e->npts - 1 ? (j + 1) * CURVE_CHUNK
                                                    : e->npts - 1;
        chunk_box(c, e);
      }
      x->nch += k;
    }
    x->edge_ch[g->nedges] = x->nch;
    if (pass == 0 && !(x->ch = malloc(((size_t)x->nch + 1) * sizeof(*x->ch))))
      return -ENOMEM;
  }
  x->x0 = sb[0] - len, x->y0 = sb[1] - len;
  x->nx = (int)fmin(ceil((w + 2 * len) / len), GRID_MAX);
  x->ny = (int)fmin(ceil((h + 2 * len) / len), GRID_MAX);
  x->cw = (w + 2 * len) / x->nx;
  x->chh = (h + 2 * len) / x->ny;
  return grid_build(x);
}

void opx_geom_index_free(void *index) {
  gindex *x = index;
  if (!x)
    return;
  free(x->ch);
  free(x->edge_ch);
  free(x->cell_start);
  free(x->items);
  free(x->lines);
  free(x);
}

/* --- Queries ------------------------------------------------------------ */

/* Adds edge ed to the set (*found, *n, *cap; a caller's buffer until it
 * outgrows it); 0 or -1 when out of memory. */
static int found_add(int **found, int *n, int *cap, int *local, int ed) {
  for (int i = 0; i < *n; i++)
    if ((*found)[i] == ed)
      return 0;
  if (*n == *cap) {
    int c = *cap * 2;
    int *f = *found == local ? malloc(sizeof(int) * (size_t)c)
                             : realloc(*found, sizeof(int) * (size_t)c);
    if (!f)
      return -1;
    if (*found == local)
      memcpy(f, local, sizeof(int) * (size_t)*n);
    *found = f, *cap = c;
  }
  (*found)[(*n)++] = ed;
  return 0;
}

/* The distance from p to the whole line through edge e's ends. */
static double line_dist(const atl_op_edge *e, atl_op_pt p) {
  double sx = e->p2.x - e->p1.x, sy = e->p2.y - e->p1.y;
  double l = sqrt(sx * sx + sy * sy);
  return l > 0 ? fabs(sx * (p.y - e->p1.y) - sy * (p.x - e->p1.x)) / l
               : sqrt(atl__op_dist2(p, e->p1));
}

int opx_geom_edges_at(const opx_geom_t *g, atl_op_pt p, double tol, int *out,
                      int max) {
  const gindex *x = g->index;
  if (!x || !isfinite(p.x) || !isfinite(p.y))
    return 0;
  tol = tol > 0 ? tol : 0;
  int local[32], *found = local, n = 0, cap = 32;
  for (int i = 0; i < x->nlines; i++)
    if (line_dist(g->edges[x->lines[i]].e, p) <= tol &&
        found_add(&found, &n, &cap, local, x->lines[i]) < 0)
      goto nomem;
  double gx1 = x->x0 + x->cw * x->nx, gy1 = x->y0 + x->chh * x->ny;
  int i0 = cell_of(p.x - tol, x->x0, x->cw, x->nx);
  int i1 = cell_of(p.x + tol, x->x0, x->cw, x->nx);
  int j0 = cell_of(p.y - tol, x->y0, x->chh, x->ny);
  int j1 = cell_of(p.y + tol, x->y0, x->chh, x->ny);
  /* Outside the grid: no cell. */
  if (x->nch == 0 || p.x + tol < x->x0 || p.x - tol > gx1 ||
      p.y + tol < x->y0 || p.y - tol > gy1)
    j1 = j0 - 1;
  for (int j = j0; j <= j1; j++)
    for (int i = i0; i <= i1; i++) {
      size_t c = (size_t)j * (size_t)x->nx + (size_t)i;
      for (int k = x->cell_start[c]; k < x->cell_start[c + 1]; k++) {
        const chunk_t *ch = &x->ch[x->items[k]];
        if (!box_near(ch->box, p, tol) ||
            g->objs[g->edges[ch->edge].obj].outline.half_plane)
          continue;
        atl_op_pt q;
        int seg;
        if (chunk_near(ch, g->edges[ch->edge].e, p, &q, &seg) <= tol &&
            found_add(&found, &n, &cap, local, ch->edge) < 0)
          goto nomem;
      }
    }
  /* In the edges' order, whichever cells found them. */
  for (int a = 1; a < n; a++)
    for (int b = a; b > 0 && found[b - 1] > found[b]; b--) {
      int t = found[b];
      found[b] = found[b - 1], found[b - 1] = t;
    }
  for (int a = 0; a < n && a < max; a++)
    out[a] = found[a];
  if (found != local)
    free(found);
  return n;
nomem:
  if (found != local)
    free(found);
  return -ENOMEM;
}

/* Whether the rightward horizontal ray from p crosses the segment a-b,
 * half-open in y so that a vertex on the ray counts once. */
static int crosses(atl_op_pt p, atl_op_pt a, atl_op_pt b) {
  if ((a.y > p.y) == (b.y > p.y))
    return 0;
  return a.x + (p.y - a.y) * (b.x - a.x) / (b.y - a.y) > p.x;
}

/* The crossings of the rightward ray from p with edge e, modulo 2. An arc
 * counts as its chord, plus one when p lies between the chord and the arc
 * (the arc and its chord bound that region, so their crossings differ by
 * one exactly there). */
static int parity(const gindex *x, int ed, const atl_op_edge *e, atl_op_pt p) {
  int c = 0;
  if (e->kind == ATL_OP_EDGE_CURVE) {
    for (int k = x->edge_ch[ed]; k < x->edge_ch[ed + 1]; k++) {
      const chunk_t *ch = &x->ch[k];
      if (ch->box[3] < p.y || ch->box[1] > p.y || ch->box[2] < p.x)
        continue;
      for (int i = ch->s0; i < ch->s1; i++)
        c ^= crosses(p, e->pts[i], e->pts[i + 1]);
    }
    return c;
  }
  c = crosses(p, e->p1, e->p2);
  if (e->kind == ATL_OP_EDGE_ARC && atl__op_dist2(p, e->c) < e->r * e->r) {
    atl_op_pt m = atl__op_edge_point(e, 0.5);
    double sx = e->p2.x - e->p1.x, sy = e->p2.y - e->p1.y;
    double sp = sx * (p.y - e->p1.y) - sy * (p.x - e->p1.x);
    double sm = sx * (m.y - e->p1.y) - sy * (m.x - e->p1.x);
    if ((sx == 0 && sy == 0) || (sp > 0 && sm > 0) || (sp < 0 && sm < 0))
      c ^= 1;
  }
  return c;
}

int opx_geom_contains(const opx_geom_t *g, int obj, atl_op_pt p, double tol) {
  if (obj < 0 || obj >= g->nobjs || !isfinite(p.x) || !isfinite(p.y))
    return 0;
  const opx_obj_t *ob = &g->objs[obj];
  const gindex *x = g->index;
  tol = tol > 0 ? tol : 0;
  if (ob->outline.half_plane && ob->nedges == 1) {
    const atl_op_edge *e = &ob->outline.edges[0];
    double sx = e->p2.x - e->p1.x, sy = e->p2.y - e->p1.y;
    double l = sqrt(sx * sx + sy * sy);
    /* The glass is on the right of p1 -> p2 on the picture. */
    return l > 0 && (sx * (p.y - e->p1.y) - sy * (p.x - e->p1.x)) / l > tol;
  }
  if (!ob->outline.closed || !box_near(ob->box, p, 0))
    return 0;
  int c = 0;
  for (int ed = ob->first_edge; ed < ob->first_edge + ob->nedges; ed++) {
    const atl_op_edge *e = g->edges[ed].e;
    for (int k = x->edge_ch[ed]; k < x->edge_ch[ed + 1]; k++) {
      atl_op_pt q;
      int seg;
      if (box_near(x->ch[k].box, p, tol) &&
          chunk_near(&x->ch[k], e, p, &q, &seg) <= tol)
        return 0; /* on the boundary */
    }
    c ^= parity(x, ed, e, p);
  }
  return c;
}

double opx_geom_angle_to_normal(const opx_geom_t *g, int ed, atl_op_pt at,
                                atl_op_pt dir) {
  if (ed < 0 || ed >= g->nedges)
    return NAN;
  const gindex *x = g->index;
  const atl_op_edge *e = g->edges[ed].e;
  atl_op_pt q = e->p1;
  int seg = -1;
  if (e->kind == ATL_OP_EDGE_CURVE && x) {
    /* The chunks nearest first would be best; skipping those whose box is
     * farther than the best distance so far is enough. */
    double best = INFINITY;
    for (int k = x->edge_ch[ed]; k < x->edge_ch[ed + 1]; k++) {
      const double *b = x->ch[k].box;
      double dx = fmax(fmax(b[0] - at.x, at.x - b[2]), 0);
      double dy = fmax(fmax(b[1] - at.y, at.y - b[3]), 0);
      if (dx * dx + dy * dy > best * best)
        continue;
      atl_op_pt r;
      int s;
      double d = chunk_near(&x->ch[k], e, at, &r, &s);
      if (d < best)
        best = d, q = r, seg = s;
    }
  } else {
    atl_op_pt tan;
    opx_edge_nearest(e, at, &q, &tan);
  }
  atl_op_pt t = tangent_at(e, q, seg);
  double l = sqrt(dir.x * dir.x + dir.y * dir.y);
  if (!(l > 0))
    return NAN;
  /* The normal is the tangent turned; |u . n| = |u x t|. */
  double c = fabs((dir.x * t.y - dir.y * t.x) / l);
  return acos(c > 1 ? 1 : c) * (180 / 3.14159265358979323846);
}
