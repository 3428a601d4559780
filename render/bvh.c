/* The bounding volume hierarchy: binned SAH build over the primitives'
 * bounds, flattened into depth-first order, traversed iteratively with
 * the nearer child first. Infinite planes stay outside and are tested
 * on every ray. */
#include <errno.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "intersect.h"

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

/* Orders each leaf's primitives as quads, spheres, the rest, and copies
 * the quads and spheres into SIMD packets of four. */
static int pack_leaves(atl_render_scene_t *s) {
  int nq4 = 0, ns4 = 0;
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
    rt_leaf *lf = &s->leaves[ni];
    lf->quad4 = nq4;
    lf->nquad4 = (nq + 3) / 4;
    lf->sph4 = ns4;
    lf->nsph4 = (ns + 3) / 4;
    lf->rest = n->index + nq + ns;
    lf->nrest = n->count - nq - ns;
    nq4 += lf->nquad4;
    ns4 += lf->nsph4;
  }
  /* Packets are 32-byte aligned for AVX loads. */
  s->quad4 = aligned_alloc(32, sizeof(rt_quad4) * (size_t)(nq4 + 1));
  s->sphere4 = aligned_alloc(32, sizeof(rt_sphere4) * (size_t)(ns4 + 1));
  if (!s->quad4 || !s->sphere4)
    return -ENOMEM;
  memset(s->quad4, 0, sizeof(rt_quad4) * (size_t)(nq4 + 1));
  memset(s->sphere4, 0, sizeof(rt_sphere4) * (size_t)(ns4 + 1));
  for (int ni = 0; ni < s->nnodes; ni++) {
    const rt_node *n = &s->nodes[ni];
    if (!n->count)
      continue;
    const rt_leaf *lf = &s->leaves[ni];
    const int *o = s->prim_order + n->index;
    for (int i = 0; i < lf->nquad4 * 4; i++) {
      rt_quad4 *q = &s->quad4[lf->quad4 + i / 4];
      int l = i % 4;
      if (i >= lf->rest - n->index || s->prims[o[i]].kind != RT_QUAD) {
        q->prim[l] = -1; /* n = 0: never hit */
        continue;
      }
      const rt_prim *p = &s->prims[o[i]];
      q->nx[l] = p->n.x, q->ny[l] = p->n.y, q->nz[l] = p->n.z;
      q->d[l] = p->d;
      q->ax[l] = p->a.x, q->ay[l] = p->a.y, q->az[l] = p->a.z;
      q->e1x[l] = p->e1.x, q->e1y[l] = p->e1.y, q->e1z[l] = p->e1.z;
      q->e2x[l] = p->e2.x, q->e2y[l] = p->e2.y, q->e2z[l] = p->e2.z;
      q->prim[l] = o[i];
    }
    int ns = 0;
    while (ns < n->count && s->prims[o[ns]].kind == RT_QUAD)
      ns++; /* the first sphere */
    for (int i = 0; i < lf->nsph4 * 4; i++) {
      rt_sphere4 *sp = &s->sphere4[lf->sph4 + i / 4];
      int l = i % 4, j = ns + i;
      if (j >= n->count || s->prims[o[j]].kind != RT_SPHERE) {
        sp->r2[l] = -1; /* never hit */
        sp->prim[l] = -1;
        continue;
      }
      const rt_prim *p = &s->prims[o[j]];
      sp->cx[l] = p->a.x, sp->cy[l] = p->a.y, sp->cz[l] = p->a.z;
      sp->r2[l] = p->r2;
      sp->prim[l] = o[j];
    }
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
    rc = pack_leaves(s);
  return rc;
}

/* The slab test against a node, in float: enough to cull, since the
 * boxes are rounded outwards and the hit itself is computed in double.
 * The near and far planes come from the ray's direction signs rather
 * than a per-node swap. (lo - o) * inv, not lo * inv - o * inv: the fma
 * form would cancel catastrophically far from the origin. */
static inline int node_hit(const rt_node *n, const float o[3],
                           const float inv[3], const int neg[3], float tmin,
                           float tmax) {
  for (int a = 0; a < 3; a++) {
    float near = neg[a] ? n->hi[a] : n->lo[a];
    float far = neg[a] ? n->lo[a] : n->hi[a];
    float t0 = (near - o[a]) * inv[a];
    float t1 = (far - o[a]) * inv[a];
    /* NaN (0 * inf) leaves the bounds alone. */
    tmin = t0 > tmin ? t0 : tmin;
    tmax = t1 < tmax ? t1 : tmax;
  }
  return !(tmin > tmax * 1.0000004f);
}

/* Four doubles, and the masks their comparisons give (GCC vector
 * extensions: AVX2 on x86-64-v3, pairs of SSE2 registers elsewhere). */
typedef double d4 __attribute__((vector_size(32)));
typedef int64_t m4 __attribute__((vector_size(32)));

static inline d4 d4_load(const double *p) {
  d4 v;
  memcpy(&v, p, sizeof(v));
  return v;
}

#define D4_INF ((d4){INFINITY, INFINITY, INFINITY, INFINITY})

/* The smallest lane and its index; the lanes hold no NaN. */
static inline int d4_argmin(d4 v, double *m) {
  double a = v[0] < v[1] ? v[0] : v[1], b = v[2] < v[3] ? v[2] : v[3];
  *m = a < b ? a : b;
  return v[0] == *m ? 0 : v[1] == *m ? 1 : v[2] == *m ? 2 : 3;
}

/* m ? a : b, lane by lane. */
static inline d4 d4_sel(m4 m, d4 a, d4 b) {
  return (d4)(((m4)a & m) | ((m4)b & ~m));
}

/* The distances to four quads, as rt_t_quad() computes them, with inf
 * for a lane that misses or whose hit is not in (tmin, tmax). A lane
 * parallel to the ray, or unused (n = 0), gets t = inf or NaN and fails
 * the range test. */
static inline d4 quad4_t(const rt_quad4 *q, const rt_ray *r, double tmin,
                         double tmax) {
  d4 nx = d4_load(q->nx), ny = d4_load(q->ny), nz = d4_load(q->nz);
  d4 den = nx * r->d.x + ny * r->d.y + nz * r->d.z;
  d4 t = (d4_load(q->d) - (nx * r->o.x + ny * r->o.y + nz * r->o.z)) / den;
  d4 qx = r->o.x + r->d.x * t - d4_load(q->ax);
  d4 qy = r->o.y + r->d.y * t - d4_load(q->ay);
  d4 qz = r->o.z + r->d.z * t - d4_load(q->az);
  d4 al = qx * d4_load(q->e1x) + qy * d4_load(q->e1y) + qz * d4_load(q->e1z);
  d4 be = qx * d4_load(q->e2x) + qy * d4_load(q->e2y) + qz * d4_load(q->e2z);
  m4 ok =
      (t > tmin) & (t < tmax) & (al >= 0) & (al <= 1) & (be >= 0) & (be <= 1);
  return d4_sel(ok, t, D4_INF);
}

/* The same for four spheres, as rt_t_sphere() computes them. */
static inline d4 sphere4_t(const rt_sphere4 *s, const rt_ray *r, double tmin,
                           double tmax) {
  d4 ox = r->o.x - d4_load(s->cx), oy = r->o.y - d4_load(s->cy);
  d4 oz = r->o.z - d4_load(s->cz), r2 = d4_load(s->r2);
  double a = v3_len2(r->d);
  d4 hb = ox * r->d.x + oy * r->d.y + oz * r->d.z;
  d4 k = -hb / a;
  d4 lx = ox + r->d.x * k, ly = oy + r->d.y * k, lz = oz + r->d.z * k;
  d4 disc = a * (r2 - (lx * lx + ly * ly + lz * lz));
  m4 ok = disc >= 0;
  /* Most rays miss every sphere: skip the square roots and divisions. */
  if (!(ok[0] | ok[1] | ok[2] | ok[3]))
    return D4_INF;
  d4 c = ox * ox + oy * oy + oz * oz - r2;
  d4 sq;
  for (int i = 0; i < 4; i++)
    sq[i] = sqrt(disc[i] > 0 ? disc[i] : 0);
  d4 q = d4_sel(hb > 0, -hb - sq, -hb + sq);
  d4 t0 = q / a, t1 = d4_sel(q != 0, c / q, t0);
  d4 lo = d4_sel(t0 > t1, t1, t0), hi = d4_sel(t0 > t1, t0, t1);
  m4 lo_ok = ok & (lo > tmin) & (lo < tmax);
  m4 hi_ok = ok & (hi > tmin) & (hi < tmax);
  return d4_sel(lo_ok, lo, d4_sel(hi_ok, hi, D4_INF));
}

/* Folds a packet's distances into the running per-lane nearest hits:
 * vector selects rather than a branch per packet, whose outcome is
 * random. */
static inline void d4_keep_nearest(d4 t, const int64_t prim[4], d4 *best_t,
                                   m4 *best_id) {
  m4 closer = t < *best_t, id;
  memcpy(&id, prim, sizeof(id));
  *best_t = d4_sel(closer, t, *best_t);
  *best_id = (id & closer) | (*best_id & ~closer);
}

/* Tests the primitives of leaf ni: lowers *tmax and sets *best for each
 * nearer hit; returns 1 on the first hit when `any`. */
static inline int leaf_hit(const atl_render_scene_t *s, int ni, const rt_ray *r,
                           double tmin, double *tmax, int *best, int any) {
  const rt_leaf *lf = &s->leaves[ni];
  if (lf->nquad4 + lf->nsph4 > 0) {
    d4 bt = D4_INF;
    m4 bid = {-1, -1, -1, -1};
    for (int k = 0; k < lf->nquad4; k++) {
      const rt_quad4 *q = &s->quad4[lf->quad4 + k];
      d4_keep_nearest(quad4_t(q, r, tmin, *tmax), q->prim, &bt, &bid);
    }
    for (int k = 0; k < lf->nsph4; k++) {
      const rt_sphere4 *sph = &s->sphere4[lf->sph4 + k];
      d4_keep_nearest(sphere4_t(sph, r, tmin, *tmax), sph->prim, &bt, &bid);
    }
    double m;
    int lane = d4_argmin(bt, &m);
    if (m < *tmax) {
      *best = (int)bid[lane];
      if (any)
        return 1;
      *tmax = m;
    }
  }
  const int *order = s->prim_order + lf->rest;
  for (int i = 0; i < lf->nrest; i++) {
    double t;
    if (rt_prim_t(&s->prims[order[i]], r, tmin, *tmax, &t)) {
      *best = order[i];
      if (any)
        return 1;
      *tmax = t;
    }
  }
  return 0;
}

/* Finds the nearest hit in (tmin, tmax), or with `any` the first one
 * found. Only distances are computed during the search; the hit record
 * is filled once, for the winner. */
static int traverse(const atl_render_scene_t *s, const rt_ray *r, double tmin,
                    double tmax, rt_hit *h, int any) {
  int best = -1;
  for (int i = 0; i < s->nplanes; i++) {
    int pi = s->planes[i];
    double t;
    if (rt_prim_t(&s->prims[pi], r, tmin, tmax, &t)) {
      best = pi;
      if (any)
        return 1;
      tmax = t;
    }
  }
  if (s->nnodes == 1) {
    /* A lone leaf (a small scene such as the Cornell box): its box would
     * cull nothing its primitives do not, so skip the ray setup too. */
    if (leaf_hit(s, 0, r, tmin, &tmax, &best, any))
      return 1;
  } else if (s->nnodes > 1) {
    /* One vector division for the three reciprocals. */
    d4 dinv = 1.0 / (d4){r->d.x, r->d.y, r->d.z, 1};
    float inv[3] = {(float)dinv[0], (float)dinv[1], (float)dinv[2]};
    float o[3] = {(float)r->o.x, (float)r->o.y, (float)r->o.z};
    int neg[3] = {r->d.x < 0, r->d.y < 0, r->d.z < 0};
    int stack[STACK_MAX];
    int sp = 0, ni = 0;
    for (;;) {
      const rt_node *n = &s->nodes[ni];
      if (node_hit(n, o, inv, neg, (float)tmin, (float)tmax)) {
        if (n->count) {
          if (leaf_hit(s, ni, r, tmin, &tmax, &best, any))
            return 1;
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
  }
  if (best < 0)
    return 0;
  rt_prim_finish(&s->prims[best], r, tmax, h);
  h->prim = best;
  return 1;
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
