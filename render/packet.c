/* Packet traversal: the BVH and the primitives against a packet of rays
 * at once (packet.h). Quads, spheres, discs, planes and triangles are
 * tested lane-parallel; cylinders, cones and tori, rare and branchy, lane
 * by lane with the single-ray tests of intersect.h. */
#include "packet.h"
#include "intersect.h"

#define STACK_MAX 64

/* The search, inlined into each of its two callers, becomes two: one
 * for the nearest hit and one for any hit, without a run-time test of
 * which it is in the inner loops. */
#define RT_INLINE static inline __attribute__((always_inline))

void atl__rt_ray4_prepare(rt_ray4 *r) {
  r->a = r->dx * r->dx + r->dy * r->dy + r->dz * r->dz;
  r->inv_a = 1.0 / r->a;
}

/* The running result of a packet's search: per lane the nearest distance
 * so far (the upper end of the search; -inf for an idle lane, which
 * nothing can beat) and its primitive. */
typedef struct {
  d4 tmin, t;
  /* The primitive, -1 until the lane finds a hit; a double, as SSE2
   * (the fallback without AVX2) compares no 64-bit integers. */
  d4 prim;
} search4;

/* The plane n.x = d of a quad, disc or plane primitive. */
static inline d4 plane4_t(const rt_prim *p, const rt_ray4 *r) {
  d4 nx = d4_set1(p->n.x), ny = d4_set1(p->n.y), nz = d4_set1(p->n.z);
  d4 den = nx * r->dx + ny * r->dy + nz * r->dz;
  /* Parallel lanes get inf or NaN, which fail every range test. */
  return (d4_set1(p->d) - (nx * r->ox + ny * r->oy + nz * r->oz)) / den;
}

/* The distance to each lane's hit with primitive p, or inf; the range
 * test against (tmin, t) is the caller's. As the single-ray tests of
 * intersect.h compute it, so the two agree to rounding. 0 <= alpha <= 1
 * is tested as alpha - alpha^2 >= 0: one fused multiply-add and one
 * comparison instead of two comparisons and an and. */
static inline d4 quad_in(const rt_prim *p, const rt_ray4 *r, d4 t) {
  d4 qx = r->ox + r->dx * t - d4_set1(p->a.x);
  d4 qy = r->oy + r->dy * t - d4_set1(p->a.y);
  d4 qz = r->oz + r->dz * t - d4_set1(p->a.z);
  d4 al = qx * p->e1.x + qy * p->e1.y + qz * p->e1.z;
  d4 be = qx * p->e2.x + qy * p->e2.y + qz * p->e2.z;
  return d4_sel((al - al * al >= 0) & (be - be * be >= 0), t, D4_INF);
}

/* A quad along the axes (atl__rt_prim_prepare()): the plane from one
 * coordinate, the inside from two ranges. The same t as plane4_t()'s,
 * whose other terms are exact zeros; the ranges give alpha and beta in
 * [0, 1] up to the rounding of the corner plus an edge. The axes are
 * spelt out, one case each, so that the ray's fields stay in
 * registers. */
#define RT_AA_T(k) ((p->d - r->o##k * n) / (r->d##k * n))
#define RT_AA_IN(i, j)                                                         \
  ((r->o##i + r->d##i * t >= p->lo[0]) & (r->o##i + r->d##i * t <= p->hi[0]) & \
   (r->o##j + r->d##j * t >= p->lo[1]) & (r->o##j + r->d##j * t <= p->hi[1]))

static inline d4 plane_aa_t(const rt_prim *p, const rt_ray4 *r) {
  switch (p->aa) {
  case 0: {
    double n = p->n.x;
    return RT_AA_T(x);
  }
  case 1: {
    double n = p->n.y;
    return RT_AA_T(y);
  }
  default: {
    double n = p->n.z;
    return RT_AA_T(z);
  }
  }
}

static inline d4 quad_aa_in(const rt_prim *p, const rt_ray4 *r, d4 t) {
  m4 in = p->aa == 0   ? RT_AA_IN(y, z)
          : p->aa == 1 ? RT_AA_IN(z, x)
                       : RT_AA_IN(x, y);
  return d4_sel(in, t, D4_INF);
}

static inline d4 quad4_t(const rt_prim *p, const rt_ray4 *r) {
  return quad_in(p, r, plane4_t(p, r));
}

static inline d4 disc4_t(const rt_prim *p, const rt_ray4 *r) {
  d4 t = plane4_t(p, r);
  d4 qx = r->ox + r->dx * t - d4_set1(p->a.x);
  d4 qy = r->oy + r->dy * t - d4_set1(p->a.y);
  d4 qz = r->oz + r->dz * t - d4_set1(p->a.z);
  return d4_sel(qx * qx + qy * qy + qz * qz <= p->r2, t, D4_INF);
}

/* Moller-Trumbore, without culling. */
static inline d4 triangle4_t(const rt_prim *p, const rt_ray4 *r) {
  d4 cx = d4_set1(p->c.x), cy = d4_set1(p->c.y), cz = d4_set1(p->c.z);
  d4 px = r->dy * cz - r->dz * cy, py = r->dz * cx - r->dx * cz;
  d4 pz = r->dx * cy - r->dy * cx;
  d4 det = px * p->b.x + py * p->b.y + pz * p->b.z;
  d4 inv = 1.0 / det;
  d4 tx = r->ox - p->a.x, ty = r->oy - p->a.y, tz = r->oz - p->a.z;
  d4 u = (tx * px + ty * py + tz * pz) * inv;
  d4 qx = ty * p->b.z - tz * p->b.y, qy = tz * p->b.x - tx * p->b.z;
  d4 qz = tx * p->b.y - ty * p->b.x;
  d4 v = (r->dx * qx + r->dy * qy + r->dz * qz) * inv;
  d4 t = (cx * qx + cy * qy + cz * qz) * inv;
  m4 ok =
      (d4_abs(det) >= 1e-300) & (u >= 0) & (u <= 1) & (v >= 0) & (u + v <= 1);
  return d4_sel(ok, t, D4_INF);
}

/* Folds the distances t of primitive `id` into the search: a lane takes
 * it when it is in (tmin, t) or ties with a higher index. */
static inline void keep(search4 *s, d4 t, int id) {
  d4 idv = d4_set1(id);
  m4 take = (t > s->tmin) & ((t < s->t) | ((t == s->t) & (s->prim > idv)));
  s->t = d4_sel(take, t, s->t);
  s->prim = d4_sel(take, idv, s->prim);
}

/* Spheres, with the range test of both roots inside: the far root
 * counts where the near one is out of range. */
static inline void sphere(search4 *s, const rt_prim *p, int id,
                          const rt_ray4 *r) {
  d4 ox = r->ox - p->a.x, oy = r->oy - p->a.y, oz = r->oz - p->a.z;
  d4 hb = ox * r->dx + oy * r->dy + oz * r->dz;
  d4 k = hb * r->inv_a;
  /* The discriminant as |oc x d|^2 / a keeps its precision when the ray
   * starts far from a small sphere. */
  d4 lx = ox - r->dx * k, ly = oy - r->dy * k, lz = oz - r->dz * k;
  d4 disc = p->r2 - (lx * lx + ly * ly + lz * lz);
  m4 ok = disc >= 0;
  /* Most rays miss most spheres: skip the square roots and divisions. */
  if (!m4_bits(ok))
    return;
  d4 c = ox * ox + oy * oy + oz * oz - p->r2;
  d4 sq = d4_sqrt(d4_sel(ok, disc * r->a, D4_ZERO));
  /* -hb - sq for hb > 0, else -hb + sq: the stable root, then c / q. */
  d4 q = -hb - d4_sel(hb > 0, sq, -sq);
  d4 t0 = q * r->inv_a, t1 = d4_sel(q != 0, c / q, t0);
  d4 lo = d4_min(t0, t1), hi = d4_max(t0, t1);
  d4 t = d4_sel(lo > s->tmin, lo, hi);
  keep(s, d4_sel(ok, t, D4_INF), id);
}

/* A primitive without a lane-parallel test, lane by lane. */
static void lanes_scalar(search4 *s, const rt_prim *p, int id,
                         const rt_ray4 *r) {
  for (int l = 0; l < RT_LANES; l++) {
    double t;
    if (!(s->t[l] > s->tmin[l]))
      continue; /* idle */
    rt_ray ray = atl__rt_ray4_lane(r, l);
    if (rt_prim_t(p, &ray, s->tmin[l], s->t[l], &t)) {
      s->t[l] = t;
      s->prim[l] = id;
    }
  }
}

/* Any primitive. */
static inline void prim(search4 *s, const rt_prim *p, int id,
                        const rt_ray4 *r) {
  switch (p->kind) {
  case RT_QUAD:
    keep(s, quad4_t(p, r), id);
    break;
  case RT_SPHERE:
    sphere(s, p, id, r);
    break;
  case RT_DISC:
    keep(s, disc4_t(p, r), id);
    break;
  case RT_PLANE:
    keep(s, plane4_t(p, r), id);
    break;
  case RT_TRIANGLE:
    keep(s, triangle4_t(p, r), id);
    break;
  default:
    lanes_scalar(s, p, id, r);
  }
}

/* Whether an any-hit search is done: every active lane has a hit. */
static inline int done(const search4 *s, m4 active, int any) {
  return any && !m4_bits(active & (s->prim < 0));
}

/* Tests the primitives idx[0 .. n) of a leaf, nq quads then ns spheres
 * then the rest, against every lane; returns 1 when done(). The search
 * is copied in and out so that it stays in registers: through the
 * pointer, the compiler could not know that the ray's loads do not
 * alias it. */
RT_INLINE int leaf(search4 *io, const atl_render_scene_t *sc, const int *idx,
                   int n, int nq, int ns, const rt_ray4 *r, m4 active,
                   int any) {
  search4 s = *io;
  int i = 0, ret = 1;
  while (i < nq) {
    /* The distances to the planes of up to eight quads first: their
     * divisions then run side by side, rather than each waiting for the
     * branch on the one before. */
    d4 tp[8];
    int k = nq - i < 8 ? nq - i : 8;
    for (int j = 0; j < k; j++) {
      const rt_prim *p = &sc->prims[idx[i + j]];
      tp[j] = p->aa >= 0 ? plane_aa_t(p, r) : plane4_t(p, r);
    }
    for (int j = 0; j < k; j++, i++) {
      /* Most quads' planes are behind the rays or beyond their nearest
       * hit so far: then the rest of the test is skipped. */
      if (!m4_bits((tp[j] > s.tmin) & (tp[j] <= s.t)))
        continue;
      const rt_prim *p = &sc->prims[idx[i]];
      keep(&s, p->aa >= 0 ? quad_aa_in(p, r, tp[j]) : quad_in(p, r, tp[j]),
           idx[i]);
      if (done(&s, active, any))
        goto out;
    }
  }
  for (; i < nq + ns; i++) {
    sphere(&s, &sc->prims[idx[i]], idx[i], r);
    if (done(&s, active, any))
      goto out;
  }
  for (; i < n; i++) {
    prim(&s, &sc->prims[idx[i]], idx[i], r);
    if (done(&s, active, any))
      goto out;
  }
  ret = 0;
out:
  *io = s;
  return ret;
}

/* The lanes whose ray enters the node's box before their current
 * nearest hit. A NaN slab (0 * inf, a ray in a face's plane) leaves the
 * bounds alone, as the comparisons with it are false. */
static inline m4 node_lanes(const rt_node *n, const search4 *s,
                            const rt_ray4 *r, d4 ix, d4 iy, d4 iz) {
  d4 near = s->tmin, far = s->t;
  d4 t0 = (n->lo[0] - r->ox) * ix;
  d4 t1 = (n->hi[0] - r->ox) * ix;
  d4 lo = d4_sel(t0 < t1, t0, t1), hi = d4_sel(t0 < t1, t1, t0);
  near = d4_sel(lo > near, lo, near), far = d4_sel(hi < far, hi, far);
  t0 = (n->lo[1] - r->oy) * iy;
  t1 = (n->hi[1] - r->oy) * iy;
  lo = d4_sel(t0 < t1, t0, t1), hi = d4_sel(t0 < t1, t1, t0);
  near = d4_sel(lo > near, lo, near), far = d4_sel(hi < far, hi, far);
  t0 = (n->lo[2] - r->oz) * iz;
  t1 = (n->hi[2] - r->oz) * iz;
  lo = d4_sel(t0 < t1, t0, t1), hi = d4_sel(t0 < t1, t1, t0);
  near = d4_sel(lo > near, lo, near), far = d4_sel(hi < far, hi, far);
  /* <=: a tie at the current nearest hit may still win by its index. */
  return near <= far;
}

RT_INLINE int search(search4 *s, const atl_render_scene_t *sc, const rt_ray4 *r,
                     m4 active, int any) {
  if (sc->nplanes && leaf(s, sc, sc->planes, sc->nplanes, 0, 0, r, active, any))
    return 1;
  if (sc->nnodes == 1) {
    /* A lone leaf (a small scene such as the Cornell box): its box would
     * cull nothing its primitives do not. */
    return leaf(s, sc, sc->prim_order + sc->nodes[0].index, sc->nodes[0].count,
                sc->leaves[0].nquad, sc->leaves[0].nsphere, r, active, any);
  }
  if (sc->nnodes == 0)
    return 0;
  int stack[STACK_MAX], sp = 0, ni = 0;
  /* The first active lane's direction orders the children: the order
   * changes the work, never the answer. */
  int lane =
      __builtin_ctz((unsigned)m4_bits(active) | 1u << RT_LANES) % RT_LANES;
  int neg[3] = {r->dx[lane] < 0, r->dy[lane] < 0, r->dz[lane] < 0};
  /* The reciprocal directions of the slab tests, only now: a scene of a
   * single leaf has no use for their three divisions. */
  d4 ix = 1.0 / r->dx, iy = 1.0 / r->dy, iz = 1.0 / r->dz;
  for (;;) {
    const rt_node *n = &sc->nodes[ni];
    if (m4_bits(node_lanes(n, s, r, ix, iy, iz) & active)) {
      if (n->count) {
        const rt_leaf *lf = &sc->leaves[ni];
        if (leaf(s, sc, sc->prim_order + n->index, n->count, lf->nquad,
                 lf->nsphere, r, active, any))
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
  return 0;
}

void atl__rt_intersect4(const atl_render_scene_t *sc, const rt_ray4 *r,
                        m4 active, d4 tmin, d4 tmax, d4 *t, m4 *prim) {
  search4 s = {tmin, d4_sel(active, tmax, -D4_INF), d4_set1(-1)};
  search(&s, sc, r, active, 0);
  *t = s.t;
  *prim = __builtin_convertvector(s.prim, m4);
}

m4 atl__rt_occluded4(const atl_render_scene_t *sc, const rt_ray4 *r, m4 active,
                     d4 tmin, d4 tmax) {
  search4 s = {tmin, d4_sel(active, tmax, -D4_INF), d4_set1(-1)};
  if (search(&s, sc, r, active, 1))
    return active;
  return active & (s.prim >= 0);
}

#ifndef RT_KERNEL_AVX512 /* single rays: the default kernel serves them */
/* One ray, as the first lane of a packet. The renderer traces packets
 * only; these serve the tests and other single-ray callers. */
static void one_lane(rt_ray4 *r4, const rt_ray *r) {
  r4->ox = d4_set1(r->o.x), r4->oy = d4_set1(r->o.y);
  r4->oz = d4_set1(r->o.z);
  r4->dx = d4_set1(r->d.x), r4->dy = d4_set1(r->d.y);
  r4->dz = d4_set1(r->d.z);
  atl__rt_ray4_prepare(r4);
}

int atl__rt_intersect(const atl_render_scene_t *s, const rt_ray *r, double tmin,
                      double tmax, rt_hit *h) {
  rt_ray4 r4;
  d4 t;
  m4 prim;
  one_lane(&r4, r);
  atl__rt_intersect4(s, &r4, m4_lane(0), d4_set1(tmin), d4_set1(tmax), &t,
                     &prim);
  if (prim[0] < 0)
    return 0;
  rt_prim_finish(&s->prims[prim[0]], r, t[0], h);
  h->prim = (int)prim[0];
  return 1;
}

int atl__rt_occluded(const atl_render_scene_t *s, const rt_ray *r, double tmin,
                     double tmax) {
  rt_ray4 r4;
  one_lane(&r4, r);
  return atl__rt_occluded4(s, &r4, m4_lane(0), d4_set1(tmin),
                           d4_set1(tmax))[0] != 0;
}

void atl__rt_intersect_rays(const atl_render_scene_t *s, int n,
                            const rt_ray *rays, const double *tmax,
                            const int *active, double *t, int *prim,
                            int *occluded) {
  for (int i = 0; i < n; i += RT_LANES) {
    rt_ray4 r4;
    m4 on = M4_NONE, pr;
    d4 tm = D4_INF, tt;
    one_lane(&r4, &rays[i]); /* lanes past n: a copy of the first, idle */
    for (int l = 0; l < RT_LANES && i + l < n; l++) {
      const rt_ray *r = &rays[i + l];
      r4.ox[l] = r->o.x, r4.oy[l] = r->o.y, r4.oz[l] = r->o.z;
      r4.dx[l] = r->d.x, r4.dy[l] = r->d.y, r4.dz[l] = r->d.z;
      on[l] = active[i + l] ? -1 : 0;
      tm[l] = tmax[i + l];
    }
    atl__rt_ray4_prepare(&r4);
    atl__rt_intersect4(s, &r4, on, D4_ZERO, tm, &tt, &pr);
    m4 occ = atl__rt_occluded4(s, &r4, on, D4_ZERO, tm);
    for (int l = 0; l < RT_LANES && i + l < n; l++) {
      t[i + l] = tt[l];
      prim[i + l] = (int)pr[l];
      occluded[i + l] = occ[l] != 0;
    }
  }
}
#endif
