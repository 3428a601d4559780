/* The bounding volume hierarchy's build: binned SAH over the primitives'
 * bounds, flattened into depth-first order (packet.c traverses it).
 * Infinite planes stay outside and are tested on every ray. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "intersect.h"

#define BINS 16
#define LEAF_MAX 4
/* The traversal's stack (packet.c) holds at most one node per level. */
#define STACK_MAX 64

typedef struct {
  v3 lo, hi, c; /* bounds and centroid */
} item;

typedef struct {
  atl_render_scene_t *s;
  item *items;
  int used;
  int cap;
} builder;

static double area(v3 lo, v3 hi) {
  v3 d = v3_sub(hi, lo);
  if (d.x < 0)
    return 0;
  return 2 * (d.x * d.y + d.y * d.z + d.z * d.x);
}

static int new_node(builder *b) {
  if (b->used == b->cap) {
    int cap = b->cap ? b->cap * 2 : 64;
    rt_node *n = realloc(b->s->nodes, (size_t)cap * sizeof(*n));
    if (!n)
      return -1;
    b->s->nodes = n;
    b->cap = cap;
  }
  return b->used++;
}

static void set_bounds(rt_node *n, v3 lo, v3 hi) {
  /* Padded by a billionth of their size: the slab test (packet.c) and a
   * primitive's own test round differently, and a hit on the face of a
   * box must not be culled, least of all for a flat, axis-aligned quad
   * whose box has no thickness. */
  for (int a = 0; a < 3; a++) {
    double l = v3_comp(lo, a), h = v3_comp(hi, a);
    n->lo[a] = l - 1e-9 * (1 + fabs(l));
    n->hi[a] = h + 1e-9 * (1 + fabs(h));
  }
}

static int build(builder *b, int *order, int begin, int end, int depth);

/* Makes node id an inner node split at mid: its left child comes right
 * after it (the next node built), its right child's index is stored. */
static int inner(builder *b, int id, int axis, int *order, int begin, int mid,
                 int end, int depth) {
  b->s->nodes[id].count = 0;
  b->s->nodes[id].axis = (short)axis;
  if (build(b, order, begin, mid, depth + 1) < 0)
    return -1;
  int right = build(b, order, mid, end, depth + 1);
  if (right < 0)
    return -1;
  b->s->nodes[id].index = right;
  return id;
}

/* Builds the subtree over order[begin, end); returns its node or -1. */
static int build(builder *b, int *order, int begin, int end, int depth) {
  int id = new_node(b);
  if (id < 0)
    return -1;
  v3 lo = v3_make(INFINITY, INFINITY, INFINITY), hi = v3_neg(lo);
  v3 clo = lo, chi = hi;
  for (int i = begin; i < end; i++) {
    item *it = &b->items[order[i]];
    lo = v3_min3(lo, it->lo);
    hi = v3_max3(hi, it->hi);
    clo = v3_min3(clo, it->c);
    chi = v3_max3(chi, it->c);
  }
  set_bounds(&b->s->nodes[id], lo, hi);
  int n = end - begin;
  int axis = 0;
  v3 ext = v3_sub(chi, clo);
  if (ext.y > ext.x)
    axis = 1;
  if (ext.z > v3_comp(ext, axis))
    axis = 2;
  double cmin = v3_comp(clo, axis), cext = v3_comp(ext, axis);
  if (n <= LEAF_MAX || cext <= 0 || depth >= STACK_MAX - 2) {
  leaf:
    b->s->nodes[id].index = begin;
    b->s->nodes[id].count = (short)n;
    b->s->nodes[id].axis = 0;
    if (n > 32000) /* only when every centroid coincides: split anyway */
      goto split_half;
    return id;
  }
  {
    /* Binned SAH on the widest centroid axis. */
    struct {
      v3 lo, hi;
      int n;
    } bin[BINS];
    for (int i = 0; i < BINS; i++) {
      bin[i].lo = v3_make(INFINITY, INFINITY, INFINITY);
      bin[i].hi = v3_neg(bin[i].lo);
      bin[i].n = 0;
    }
    double k = BINS * (1 - 1e-9) / cext;
    for (int i = begin; i < end; i++) {
      item *it = &b->items[order[i]];
      int bi = (int)((v3_comp(it->c, axis) - cmin) * k);
      bi = bi < 0 ? 0 : bi >= BINS ? BINS - 1 : bi;
      bin[bi].lo = v3_min3(bin[bi].lo, it->lo);
      bin[bi].hi = v3_max3(bin[bi].hi, it->hi);
      bin[bi].n++;
    }
    double right_cost[BINS];
    v3 rlo = v3_make(INFINITY, INFINITY, INFINITY), rhi = v3_neg(rlo);
    int rn = 0;
    for (int i = BINS - 1; i > 0; i--) {
      rlo = v3_min3(rlo, bin[i].lo);
      rhi = v3_max3(rhi, bin[i].hi);
      rn += bin[i].n;
      right_cost[i] = rn ? area(rlo, rhi) * rn : 0;
    }
    v3 llo = v3_make(INFINITY, INFINITY, INFINITY), lhi = v3_neg(llo);
    int ln = 0, best = -1;
    double best_cost = INFINITY;
    for (int i = 0; i < BINS - 1; i++) {
      llo = v3_min3(llo, bin[i].lo);
      lhi = v3_max3(lhi, bin[i].hi);
      ln += bin[i].n;
      if (ln == 0 || ln == n)
        continue;
      double cost = area(llo, lhi) * ln + right_cost[i + 1];
      if (cost < best_cost) {
        best_cost = cost;
        best = i;
      }
    }
    /* A leaf costs n intersections; a split, one box test plus its
     * children weighted by their area. */
    double leaf_cost = area(lo, hi) * n;
    if (best < 0 || (n <= 16 && best_cost + area(lo, hi) >= leaf_cost))
      goto leaf;
    int mid = begin;
    for (int i = begin; i < end; i++) {
      item *it = &b->items[order[i]];
      int bi = (int)((v3_comp(it->c, axis) - cmin) * k);
      bi = bi < 0 ? 0 : bi >= BINS ? BINS - 1 : bi;
      if (bi <= best) {
        int t = order[i];
        order[i] = order[mid];
        order[mid++] = t;
      }
    }
    if (mid == begin || mid == end)
      goto leaf;
    return inner(b, id, axis, order, begin, mid, end, depth);
  }
split_half:
  return inner(b, id, 0, order, begin, begin + n / 2, end, depth);
}

/* Orders each leaf's primitives as quads, spheres, the rest, and counts
 * the first two: the packet traversal (packet.c) tests each run without
 * a branch on the kind per primitive. */
static int sort_leaves(atl_render_scene_t *s) {
  /* + 1: a scene of planes alone has no node, and calloc(0) may fail. */
  s->leaves = calloc((size_t)s->nnodes + 1, sizeof(rt_leaf));
  if (!s->leaves)
    return -ENOMEM;
  for (int ni = 0; ni < s->nnodes; ni++) {
    const rt_node *n = &s->nodes[ni];
    if (!n->count)
      continue;
    int *o = s->prim_order + n->index, k = 0, nq = 0, ns = 0;
    /* A stable three-way partition by kind, in place: two passes. */
    for (int pass = 0; pass < 2; pass++) {
      int kind = pass ? RT_SPHERE : RT_QUAD;
      for (int i = k; i < n->count; i++)
        if (s->prims[o[i]].kind == kind) {
          int t = o[i];
          memmove(o + k + 1, o + k, sizeof(int) * (size_t)(i - k));
          o[k++] = t;
          *(pass ? &ns : &nq) += 1;
        }
    }
    s->leaves[ni].nquad = nq;
    s->leaves[ni].nsphere = ns;
  }
  return 0;
}

int atl__rt_bvh_build(atl_render_scene_t *s) {
  builder b = {s, NULL, 0, 0};
  int nfinite = 0;
  s->planes = malloc(sizeof(int) * (size_t)(s->nprims + 1));
  s->prim_order = malloc(sizeof(int) * (size_t)(s->nprims + 1));
  b.items = malloc(sizeof(item) * (size_t)(s->nprims + 1));
  if (!s->planes || !s->prim_order || !b.items) {
    free(b.items);
    return -ENOMEM;
  }
  s->nplanes = 0;
  for (int i = 0; i < s->nprims; i++) {
    atl__rt_prim_prepare(&s->prims[i]);
    if (s->prims[i].kind == RT_PLANE) {
      s->planes[s->nplanes++] = i;
      continue;
    }
    item *it = &b.items[i];
    atl__rt_prim_bounds(&s->prims[i], &it->lo, &it->hi);
    it->c = v3_scale(v3_add(it->lo, it->hi), 0.5);
    s->prim_order[nfinite++] = i;
  }
  s->nodes = NULL;
  s->nnodes = 0;
  int rc = 0;
  if (nfinite > 0 && build(&b, s->prim_order, 0, nfinite, 0) < 0)
    rc = -ENOMEM;
  s->nnodes = b.used;
  free(b.items);
  if (rc == 0)
    rc = sort_leaves(s);
  return rc;
}
