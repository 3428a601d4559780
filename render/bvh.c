/* The bounding volume hierarchy: binned SAH build over the primitives'
 * bounds, flattened into depth-first order, traversed iteratively with
 * the nearer child first. Infinite planes stay outside and are tested
 * on every ray. */
#include <errno.h>
#include <float.h>
#include <stdlib.h>

#include "rt.h"

#define BINS 16
#define LEAF_MAX 4
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
  /* Rounded outwards, so a float box always holds the double one. */
  n->lo[0] = nextafterf((float)lo.x, -FLT_MAX);
  n->lo[1] = nextafterf((float)lo.y, -FLT_MAX);
  n->lo[2] = nextafterf((float)lo.z, -FLT_MAX);
  n->hi[0] = nextafterf((float)hi.x, FLT_MAX);
  n->hi[1] = nextafterf((float)hi.y, FLT_MAX);
  n->hi[2] = nextafterf((float)hi.z, FLT_MAX);
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
split_half : {
  int mid = begin + n / 2;
  b->s->nodes[id].count = 0;
  b->s->nodes[id].axis = 0;
  if (build(b, order, begin, mid, depth + 1) < 0)
    return -1;
  int right = build(b, order, mid, end, depth + 1);
  if (right < 0)
    return -1;
  b->s->nodes[id].index = right;
  return id;
}
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
  return rc;
}

/* The slab test against a node, in float: enough to cull, since the
 * boxes are rounded outwards and the hit itself is computed in double. */
static inline int node_hit(const rt_node *n, const float o[3],
                           const float inv[3], float tmin, float tmax) {
  for (int a = 0; a < 3; a++) {
    float t0 = (n->lo[a] - o[a]) * inv[a];
    float t1 = (n->hi[a] - o[a]) * inv[a];
    if (t0 > t1) {
      float t = t0;
      t0 = t1;
      t1 = t;
    }
    /* NaN (0 * inf) leaves the bounds alone. */
    tmin = t0 > tmin ? t0 : tmin;
    tmax = t1 < tmax ? t1 : tmax;
    if (tmin > tmax * 1.0000004f)
      return 0;
  }
  return 1;
}

static int traverse(const atl_render_scene_t *s, const rt_ray *r, double tmin,
                    double tmax, rt_hit *h, int any) {
  int found = 0;
  for (int i = 0; i < s->nplanes; i++) {
    if (atl__rt_prim_intersect(&s->prims[s->planes[i]], r, tmin, tmax, h)) {
      h->prim = s->planes[i];
      if (any)
        return 1;
      tmax = h->t;
      found = 1;
    }
  }
  if (s->nnodes == 0)
    return found;
  float o[3] = {(float)r->o.x, (float)r->o.y, (float)r->o.z};
  float inv[3] = {(float)(1.0 / r->d.x), (float)(1.0 / r->d.y),
                  (float)(1.0 / r->d.z)};
  int neg[3] = {r->d.x < 0, r->d.y < 0, r->d.z < 0};
  int stack[STACK_MAX];
  int sp = 0, ni = 0;
  for (;;) {
    const rt_node *n = &s->nodes[ni];
    if (node_hit(n, o, inv, (float)tmin, (float)tmax)) {
      if (n->count) {
        for (int i = 0; i < n->count; i++) {
          int pi = s->prim_order[n->index + i];
          if (atl__rt_prim_intersect(&s->prims[pi], r, tmin, tmax, h)) {
            h->prim = pi;
            if (any)
              return 1;
            tmax = h->t;
            found = 1;
          }
        }
      } else {
        /* Visit the child on the ray's near side first. */
        if (neg[n->axis]) {
          stack[sp++] = ni + 1;
          ni = n->index;
        } else {
          stack[sp++] = n->index;
          ni = ni + 1;
        }
        continue;
      }
    }
    if (sp == 0)
      break;
    ni = stack[--sp];
  }
  return found;
}

int atl__rt_intersect(const atl_render_scene_t *s, const rt_ray *r, double tmin,
                      double tmax, rt_hit *h) {
  return traverse(s, r, tmin, tmax, h, 0);
}

int atl__rt_occluded(const atl_render_scene_t *s, const rt_ray *r, double tmin,
                     double tmax) {
  rt_hit h;
  return traverse(s, r, tmin, tmax, &h, 1);
}
