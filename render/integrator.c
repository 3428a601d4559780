/* The camera and the path tracer: unidirectional paths with next-event
 * estimation at every non-specular vertex, combined with BSDF sampling by
 * the power heuristic; Russian roulette from rr_depth on. max_depth
 * counts path vertices, the camera's hit included, as
 * go-progressive-raytracer does (its 5 is Cycles' max_bounces 4). */
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "intersect.h"
#include "path4.h"

/* max and |max| of the components with plain comparisons, which compile
 * to vmaxsd, where fmax() is a libm call (it must honour NaN, which here
 * only ever leads to a non-finite sample that atl_render_tile() drops). */
static inline double max2(double a, double b) {
  return a > b ? a : b;
}
static inline double comp_max(v3 a) {
  return max2(a.x, max2(a.y, a.z));
}
static inline double comp_maxabs(v3 a) {
  return max2(fabs(a.x), max2(fabs(a.y), fabs(a.z)));
}

static double power2(double a, double b) {
  return a * a / (a * a + b * b);
}

/* A ray origin off the surface on the side of dir. */
static v3 offset(const rt_hit *h, v3 dir) {
  double eps = 1e-7 * (1 + comp_maxabs(h->p));
  return v3_madd(h->p, h->n, v3_dot(dir, h->n) > 0 ? eps : -eps);
}

/* A path in flight: what its next vertex needs. */
typedef struct {
  v3 L, beta;
  v3 prev_p;       /* the previous vertex, for the light's pdf in MIS */
  double prev_pdf; /* the BSDF pdf that chose the current ray */
  int prev_delta;  /* that choice was a delta lobe (or the camera) */
  int depth;       /* of the vertex the current ray will find */
  rt_rng rng;
  v3 shadow_c; /* the light sample waiting for its shadow ray */
} path_t;

/* A ray for next-event estimation and its range. */
typedef struct {
  rt_ray ray;
  double tmax;
} shadow_t;

/* One light sample at the vertex h: its contribution (to be multiplied
 * by the throughput) in *c and the shadow ray that decides it; returns 0
 * when there is nothing to trace. */
static int sample_one_light(const atl_render_scene_t *s, const rt_hit *h,
                            const rt_material *m, v3 wo, rt_rng *rng, v3 *c,
                            shadow_t *sh) {
  double pick = 1.0 / s->nlights;
  /* A single light needs no choice, nor a number drawn for it. */
  int li = s->nlights == 1 ? 0 : (int)(rt_rand(rng) * s->nlights);
  if (li >= s->nlights)
    li = s->nlights - 1;
  const rt_light *l = &s->lights[li];
  rt_light_sample ls;
  if (!atl__rt_light_sample_li(l, h->p, rng, &ls))
    return 0;
  v3 f;
  double bpdf;
  if (!atl__rt_material_eval(m, h, wo, ls.wi, &f, &bpdf))
    return 0;
  /* The shadow ray aims from the offset origin at the sampled point
   * itself, so the offset cannot push the light's own surface in front
   * of tmax at grazing angles. */
  sh->ray.o = offset(h, ls.wi);
  sh->ray.d = ls.wi;
  sh->tmax = INFINITY;
  if (!isinf(ls.dist)) {
    sh->ray.d = v3_sub(v3_madd(h->p, ls.wi, ls.dist), sh->ray.o);
    sh->tmax = 1 - 1e-7; /* in units of the unnormalised direction */
  }
  double cosv = fabs(v3_dot(ls.wi, h->n));
  *c = v3_scale(v3_mul(f, ls.li), cosv);
  if (ls.pdf == 0) /* a delta light */
    *c = v3_scale(*c, 1 / pick);
  else {
    double lpdf = pick * ls.pdf;
    *c = v3_scale(*c, power2(lpdf, bpdf) / lpdf);
  }
  return 1;
}

/* What the ray found when it hit nothing: the environment, and the sun's
 * disc when BSDF sampling found it. */
static void escape(const atl_render_scene_t *s, int nee, path_t *pa, v3 d) {
  pa->L = v3_add(pa->L, v3_mul(pa->beta, atl__rt_env_radiance(s, d)));
  for (int i = 0; i < s->nlights; i++) {
    const rt_light *l = &s->lights[i];
    if (l->kind != RT_L_SUN || l->cos_outer >= 1 ||
        v3_dot(d, l->n) < l->cos_outer)
      continue;
    double w = 1;
    if (nee && !pa->prev_delta)
      w = power2(pa->prev_pdf,
                 atl__rt_light_pdf(l, pa->prev_p, d, INFINITY, l->n) /
                     s->nlights);
    pa->L = v3_add(pa->L, v3_scale(v3_mul(pa->beta, l->emission), w));
  }
}

enum { PATH_ENDS = 0, PATH_GOES_ON = 1, PATH_SHADOW = 2 };

/* The first half of the path's vertex at distance t along ray on
 * primitive prim (-1: the ray escaped): what it found there, emission
 * included. Returns 1 and fills *h when the path scatters there. */
static int vertex_hit(const atl_render_scene_t *s, const atl_render_params_t *p,
                      int nee, path_t *pa, const rt_ray *ray, double t,
                      int prim, rt_hit *h) {
  if (prim < 0) {
    escape(s, nee, pa, ray->d);
    return 0;
  }
  const rt_prim *pr = &s->prims[prim];
  rt_prim_finish(pr, ray, t, h);
  h->prim = prim;
  const rt_material *m = &s->materials[pr->material];
  if (m->kind == RT_LIGHT || m->kind == RT_EMISSIVE) {
    if (h->front) {
      double w = 1;
      if (m->kind == RT_LIGHT && nee && !pa->prev_delta) {
        const rt_light *l = &s->lights[pr->light];
        double lpdf =
            atl__rt_light_pdf(l, pa->prev_p, ray->d, h->t, h->n) / s->nlights;
        w = power2(pa->prev_pdf, lpdf);
      }
      pa->L = v3_add(pa->L, v3_scale(v3_mul(pa->beta, m->emission), w));
    }
    return 0; /* emitters do not scatter */
  }
  return pa->depth <= p->max_depth;
}

/* The second half: next-event estimation (a shadow ray in *sh, with
 * PATH_SHADOW), then the BSDF's choice of the next ray, which replaces
 * *ray (with PATH_GOES_ON). Vertex max_depth still samples its BSDF: the
 * ray it sends only collects emission, the other half of that vertex's
 * MIS. */
static int vertex_scatter(const atl_render_scene_t *s,
                          const atl_render_params_t *p, int nee, path_t *pa,
                          rt_ray *ray, const rt_hit *h, shadow_t *sh) {
  const rt_material *m = &s->materials[s->prims[h->prim].material];
  int ret = PATH_ENDS;
  v3 wo = v3_neg(ray->d), c;
  if (nee && atl__rt_material_smooth(m) &&
      sample_one_light(s, h, m, wo, &pa->rng, &c, sh)) {
    pa->shadow_c = v3_mul(pa->beta, c);
    ret = PATH_SHADOW;
  }
  rt_bsdf_sample bs;
  if (!atl__rt_material_sample(m, h, wo, &pa->rng, &bs))
    return ret;
  pa->beta = v3_mul(pa->beta, bs.weight);
  double bmax = comp_max(pa->beta);
  if (bmax <= 0)
    return ret;
  /* Russian roulette only once the throughput has dropped below 1, so
   * a white furnace stays noise-free. */
  int rr_depth = p->rr_depth > 0 ? p->rr_depth : 4;
  if (pa->depth >= rr_depth && bmax < 1) {
    double q = max2(0.05, bmax);
    if (rt_rand(&pa->rng) >= q)
      return ret;
    pa->beta = v3_scale(pa->beta, 1 / q);
  }
  pa->prev_delta = bs.delta;
  pa->prev_pdf = bs.pdf;
  pa->prev_p = h->p;
  pa->depth++;
  ray->o = offset(h, bs.wi);
  ray->d = bs.wi;
  return ret | PATH_GOES_ON;
}

/* Lane l of the packet's paths, for the code that runs lane by lane,
 * and back. */
static void path_get(const rt_paths4 *a, int l, path_t *pa) {
  pa->L = v3_make(a->Lx[l], a->Ly[l], a->Lz[l]);
  pa->beta = v3_make(a->bx[l], a->by[l], a->bz[l]);
  pa->prev_p = v3_make(a->ppx[l], a->ppy[l], a->ppz[l]);
  pa->prev_pdf = a->prev_pdf[l];
  pa->prev_delta = a->prev_delta[l] != 0;
  pa->depth = (int)a->depth[l];
  pa->rng.ctr = a->ctr[l];
  pa->rng.key = a->key[l];
  pa->rng.rsmp = a->rsmp[l];
  pa->shadow_c = v3_make(a->scx[l], a->scy[l], a->scz[l]);
}

static void path_put(rt_paths4 *a, int l, const path_t *pa) {
  a->Lx[l] = pa->L.x, a->Ly[l] = pa->L.y, a->Lz[l] = pa->L.z;
  a->bx[l] = pa->beta.x, a->by[l] = pa->beta.y, a->bz[l] = pa->beta.z;
  a->ppx[l] = pa->prev_p.x, a->ppy[l] = pa->prev_p.y;
  a->ppz[l] = pa->prev_p.z;
  a->prev_pdf[l] = pa->prev_pdf;
  a->prev_delta[l] = pa->prev_delta ? -1 : 0;
  a->depth[l] = pa->depth;
  a->ctr[l] = pa->rng.ctr;
  a->scx[l] = pa->shadow_c.x, a->scy[l] = pa->shadow_c.y;
  a->scz[l] = pa->shadow_c.z;
}

static void ray4_set(rt_ray4 *r, int l, const rt_ray *ray) {
  r->ox[l] = ray->o.x, r->oy[l] = ray->o.y, r->oz[l] = ray->o.z;
  r->dx[l] = ray->d.x, r->dy[l] = ray->d.y, r->dz[l] = ray->d.z;
}

/* The samples of a tile go through in blocks: the samples of a block are
 * handed to the lanes in order, each lane taking the next one as soon as
 * its path ends, and their radiance is kept until the block is done,
 * then added to the sums in order. A pixel's sums are thus added sample
 * by sample in index order whatever order the paths end in. At a block's
 * end the lanes run out one by one; 4096 samples (a 64 x 64 tile's
 * pass of one sample) make that a small share. */
#define BLOCK 4096

typedef struct {
  const atl_render_scene_t *s;
  const atl_render_params_t *p;
  int x0, x1, y0, y1, n; /* the tile's columns [x0, x1), rows, samples */
  uint64_t first;
  int nee;          /* lights are sampled */
  int quads_only;   /* and they are all quads: the common case */
  int diffuse_fits; /* atl__rt_scatter4() shades lambertian surfaces */
  int sun_disc;     /* a sun whose disc BSDF sampling can find */
  double one_light[16][RT_LANES]; /* the only light in every lane, if one */
  int x, y, i;             /* the next sample to hand out: pixel and index */
  long item, end;          /* its number in the tile, and the block's end */
  long base;               /* the block's first sample */
  const uint8_t *active;   /* the film's, or NULL: every pixel */
  int aov;                 /* the film wants albedo and normal */
  const rt_filter *filter; /* the pixel filter's sampler */
  /* The key of the seed (rt_rng_pixel_key()'s first half), and the last
   * pixel's key: a pixel's samples are handed out in a row, so its key
   * is hashed once, not once per sample. */
  uint64_t seed_key, key;
  uint64_t key_pixel; /* the pixel of key; UINT64_MAX before any */
  v3 *alb, *nrm;      /* the first hit's, when aov (after out), else NULL */
  /* Each sample's radiance, then albedo and normal when aov: every entry
   * is written before it is read, so none is cleared (clearing the 295
   * kB of a block with them was 2.9 % of the tracer's instructions), and
   * a block without them is a third of that. */
  v3 out[];
} block_t;

/* Whether the film takes samples for pixel (x, y). */
static inline int pixel_on(const block_t *b, int x, int y) {
  return b->active == NULL ||
         b->active[(size_t)y * (size_t)b->p->width + (size_t)x] != 0;
}

/* Moves (x, y) to the next pixel of the tile the film takes samples
 * for, from (x, y) itself on; y reaches y1 past the last. */
static void skip_off(const block_t *b, int y1, int *x, int *y) {
  while (*y < y1 && !pixel_on(b, *x, *y))
    if (++*x == b->x1)
      *x = b->x0, ++*y;
}

/* The camera looks along fwd with +right to the right of the picture and
 * +up at its top: with the eye at (278, 278, -800) looking at +Z and up
 * +Y, right is +X, so the Cornell box's red wall (x = 0) is on the left,
 * as in PBRT and go-progressive-raytracer. (px, py) is the point in the
 * picture, in pixels from its top left corner. */
static void camera4(const atl_render_scene_t *s, const atl_render_params_t *p,
                    rt_paths4 *a, m4 lanes, d4 px, d4 py, rt_ray4 *r) {
  double w = p->width, h = p->height;
  d4 sx = (px * (2 / w) - 1) * (s->tan_half * (w / h));
  d4 sy = (1 - py * (2 / h)) * s->tan_half;
  d4 dx = s->fwd.x + s->right.x * sx + s->up.x * sy;
  d4 dy = s->fwd.y + s->right.y * sx + s->up.y * sy;
  d4 dz = s->fwd.z + s->right.z * sx + s->up.z * sy;
  d4 ox = d4_set1(s->eye.x), oy = d4_set1(s->eye.y), oz = d4_set1(s->eye.z);
  if (s->aperture > 0) {
    /* A thin lens: a point on the lens towards the point in focus. */
    d4 fx = ox + dx * s->focus, fy = oy + dy * s->focus;
    d4 fz = oz + dz * s->focus, sn, cs;
    d4 u1, u2;
    rand4x2(a, lanes, &u1, &u2);
    d4 rad = 0.5 * s->aperture * d4_sqrt(u1);
    sincos4(u2, &sn, &cs);
    ox += s->right.x * (rad * cs) + s->up.x * (rad * sn);
    oy += s->right.y * (rad * cs) + s->up.y * (rad * sn);
    oz += s->right.z * (rad * cs) + s->up.z * (rad * sn);
    dx = fx - ox, dy = fy - oy, dz = fz - oz;
  }
  /* 1 / |d| as |d| / |d|^2: the square root and the division run side
   * by side instead of one after the other. */
  d4 l2 = dx * dx + dy * dy + dz * dz, inv = d4_sqrt(l2) * (1 / l2);
  r->ox = d4_sel(lanes, ox, r->ox), r->oy = d4_sel(lanes, oy, r->oy);
  r->oz = d4_sel(lanes, oz, r->oz);
  r->dx = d4_sel(lanes, dx * inv, r->dx);
  r->dy = d4_sel(lanes, dy * inv, r->dy);
  r->dz = d4_sel(lanes, dz * inv, r->dz);
}

/* Camera paths prepared a packet at a time, ahead of need: a batch
 * keeps every lane busy with its random keys and camera rays, where
 * starting paths as lanes free up would mostly start one or two. */
typedef struct {
  rt_ray4 r;    /* the camera rays */
  u4 key, rsmp; /* the lanes' samplers (the camera's draws need no more) */
  m4 item;      /* the samples' slots in the block */
  int next, count;
} batch_t;

/* Prepares the block's next samples, as many lanes as are left. Each
 * draws its random numbers from the seed, its pixel and its sample's
 * index (rt_rng_make()): the pixel's key, and the sample's index
 * reversed. */
static void prepare(block_t *b, batch_t *q) {
  /* Each lane's values in scalars first, then into vectors: storing
   * lanes one by one into a vector in memory and loading it whole would
   * stall on store forwarding. */
  double x[RT_LANES], y[RT_LANES], on[RT_LANES];
  uint64_t key[RT_LANES], smp[RT_LANES];
  int64_t item[RT_LANES];
  q->next = q->count = 0;
  for (int l = 0; l < RT_LANES; l++) {
    on[l] = b->item < b->end;
    x[l] = b->x, y[l] = b->y;
    uint64_t pix = (uint64_t)b->y * (uint64_t)b->p->width + (uint64_t)b->x;
    if (pix != b->key_pixel) /* rt_rng_pixel_key() */
      b->key = rt_mix64(b->seed_key ^ (pix * 0xd1b54a32d192ed03ULL)),
      b->key_pixel = pix;
    key[l] = b->key;
    smp[l] = b->first + (uint64_t)b->i;
    item[l] = b->item - b->base;
    if (!on[l])
      continue;
    b->item++;
    q->count++;
    if (++b->i == b->n) {
      b->i = 0;
      if (++b->x == b->x1)
        b->x = b->x0, b->y++;
      skip_off(b, b->y1, &b->x, &b->y);
    }
  }
  if (!q->count)
    return;
#define RT_KEY(l) key[l]
#define RT_SMP(l) smp[l]
#define RT_ITEM(l) item[l]
#define RT_ON(l) on[l]
#define RT_PX(l) x[l]
#define RT_PY(l) y[l]
  m4 lanes = (d4){RT_EACH_LANE(RT_ON)} != 0;
  q->item = (m4){RT_EACH_LANE(RT_ITEM)};
  rt_paths4 a; /* rand4() draws through one */
  a.key = (u4){RT_EACH_LANE(RT_KEY)};
  a.ctr = a.key;
  a.rsmp = rng4_sample((u4){RT_EACH_LANE(RT_SMP)});
  d4 jx, jy, px = (d4){RT_EACH_LANE(RT_PX)}, py = (d4){RT_EACH_LANE(RT_PY)};
  rand4x2(&a, lanes, &jx, &jy);
  if (b->filter->unit_box) {
    /* The jitter is the offset from the pixel's corner. */
    px += jx, py += jy;
  } else {
    /* The filter's offsets from the pixel's centre, each axis on its
     * own number (filter.h). */
    double ox[RT_LANES], oy[RT_LANES];
    for (int l = 0; l < RT_LANES; l++) {
      ox[l] = 0.5 + rt_filter_offset(b->filter, jx[l]);
      oy[l] = 0.5 + rt_filter_offset(b->filter, jy[l]);
    }
#define RT_OX(l) ox[l]
#define RT_OY(l) oy[l]
    px += (d4){RT_EACH_LANE(RT_OX)}, py += (d4){RT_EACH_LANE(RT_OY)};
#undef RT_OX
#undef RT_OY
  }
  camera4(b->s, b->p, &a, lanes, px, py, &q->r);
  q->key = a.key;
  q->rsmp = a.rsmp;
}

/* Starts prepared paths in the lanes of `free`, as many as the block has
 * left; returns the lanes started. A prepared lane j goes to lane l as
 * a broadcast and a blend per field: scalar stores into the packet
 * would stall its next vector loads. */
static m4 start4(block_t *b, batch_t *q, rt_paths4 *a, rt_ray4 *r, m4 free) {
  m4 lanes = M4_NONE;
  for (int l = 0; l < RT_LANES; l++) {
    if (!free[l])
      continue;
    if (q->next == q->count) {
      prepare(b, q);
      if (!q->count)
        break;
    }
    int j = q->next++;
    m4 one = m4_lane(l);
    lanes |= one;
    r->ox = d4_sel(one, d4_set1(q->r.ox[j]), r->ox);
    r->oy = d4_sel(one, d4_set1(q->r.oy[j]), r->oy);
    r->oz = d4_sel(one, d4_set1(q->r.oz[j]), r->oz);
    r->dx = d4_sel(one, d4_set1(q->r.dx[j]), r->dx);
    r->dy = d4_sel(one, d4_set1(q->r.dy[j]), r->dy);
    r->dz = d4_sel(one, d4_set1(q->r.dz[j]), r->dz);
    a->key = (u4)m4_sel(one, m4_set1((int64_t)q->key[j]), (m4)a->key);
    a->rsmp = (u4)m4_sel(one, m4_set1((int64_t)q->rsmp[j]), (m4)a->rsmp);
    a->item = m4_sel(one, m4_set1(q->item[j]), a->item);
  }
  d4 one = d4_set1(1);
  a->Lx = d4_sel(lanes, D4_ZERO, a->Lx), a->Ly = d4_sel(lanes, D4_ZERO, a->Ly);
  a->Lz = d4_sel(lanes, D4_ZERO, a->Lz);
  a->bx = d4_sel(lanes, one, a->bx), a->by = d4_sel(lanes, one, a->by);
  a->bz = d4_sel(lanes, one, a->bz);
  a->ppx = d4_sel(lanes, r->ox, a->ppx), a->ppy = d4_sel(lanes, r->oy, a->ppy);
  a->ppz = d4_sel(lanes, r->oz, a->ppz);
  a->prev_pdf = d4_sel(lanes, D4_ZERO, a->prev_pdf);
  /* The camera counts as specular: no MIS at the first hit. */
  a->prev_delta |= lanes;
  a->depth = d4_sel(lanes, d4_set1(1), a->depth);
  return lanes;
}

/* The vertex of lane l, lane by lane: a miss under a sun, an emitter, or
 * a material atl__rt_scatter4() does not cover. */
static void lane_vertex(block_t *b, rt_paths4 *a, rt_ray4 *r, int l, double t,
                        int prim, rt_next4 *next) {
  path_t pa;
  rt_hit h;
  rt_ray ray = atl__rt_ray4_lane(r, l);
  path_get(a, l, &pa);
  if (vertex_hit(b->s, b->p, b->nee, &pa, &ray, t, prim, &h)) {
    shadow_t sh;
    int st = vertex_scatter(b->s, b->p, b->nee, &pa, &ray, &h, &sh);
    if (st & PATH_SHADOW) {
      next->shadow |= m4_lane(l);
      ray4_set(next->sr, l, &sh.ray);
      (*next->stmax)[l] = sh.tmax;
    }
    if (st & PATH_GOES_ON) {
      next->goes_on |= m4_lane(l);
      ray4_set(r, l, &ray);
    }
  }
  path_put(a, l, &pa);
}

/* The denoiser's guides for the lanes at their camera hit (depth 1):
 * the material's colour there and the unit normal turned towards the
 * camera; a ray that hits nothing leaves zeros. Runs before the vertex
 * moves the lanes on. */
static void first_hit_aov(block_t *b, const rt_paths4 *a, const rt_ray4 *r,
                          m4 active, d4 t, m4 prim, const rt_hits4 *h) {
  const atl_render_scene_t *s = b->s;
  for (int bits = m4_bits(active & (a->depth == 1)); bits; bits &= bits - 1) {
    int l = __builtin_ctz((unsigned)bits);
    long item = a->item[l];
    v3 alb = v3_make(0, 0, 0), n = v3_make(0, 0, 0);
    if (prim[l] >= 0) {
      const rt_prim *pr = &s->prims[prim[l]];
      v3 pnt = v3_make(h->px[l], h->py[l], h->pz[l]);
      rt_hit hit;
      rt_ray ray = atl__rt_ray4_lane(r, l);
      rt_prim_finish(pr, &ray, t[l], &hit);
      alb = atl__rt_material_albedo(&s->materials[pr->material], pnt);
      n = v3_dot(hit.n, ray.d) > 0 ? v3_neg(hit.n) : hit.n;
    }
    b->alb[item] = alb;
    b->nrm[item] = n;
  }
}

/* One bounce of the lanes in `active`: their hits, emission, light
 * samples and next rays. Returns the lanes whose paths go on. */
static m4 bounce(block_t *b, rt_paths4 *a, rt_ray4 *r, m4 active) {
  const atl_render_scene_t *s = b->s;
  d4 t, stmax = D4_ZERO;
  m4 prim;
  /* Lanes without a shadow ray keep harmless values; field by field, as
   * a struct copy becomes a slow rep movsq. */
  rt_ray4 sr;
  sr.ox = r->ox, sr.oy = r->oy, sr.oz = r->oz;
  sr.dx = r->dx, sr.dy = r->dy, sr.dz = r->dz;
  rt_hits4 h;
  rt_next4 next = {&sr, &stmax, M4_NONE, M4_NONE,
                   s->nlights == 1 ? (const double(*)[RT_LANES])b->one_light
                                   : NULL};
  atl__rt_ray4_prepare(r);
  /* Every vertex's draws start at its depth's dimensions. */
  rng4_vertex(a, active, a->depth);
  atl__rt_intersect4(s, r, active, D4_ZERO, D4_INF, &t, &prim);
  /* The hit points as rt_prim_finish() computes them, and the surfaces'
   * kinds, normals and colours gathered from the scene's table: a lane
   * without a hit reads its column 0. */
  h.px = r->ox + r->dx * t, h.py = r->oy + r->dy * t;
  h.pz = r->oz + r->dz * t;
  if (b->aov) /* before any lane moves on */
    first_hit_aov(b, a, r, active, t, prim, &h);
  size_t cols = (size_t)s->nprims + 1;
  const double *tab = s->shade;
  m4 col = prim + 1;
  d4 fit = d4_gather(tab + RT_SH_FIT * cols, col);
  if (!b->diffuse_fits)
    fit = d4_sel(fit == RT_FIT_DIFFUSE, D4_ZERO, fit);
  /* Misses (under a sun, whose disc needs the lane's own code) and hits
   * on the other materials, emitters included, run lane by lane. */
  m4 missed = active & (prim < 0);
  m4 escaped = b->sun_disc ? M4_NONE : missed;
  m4 fits = active & ~missed & (fit != RT_FIT_NONE);
  for (int bits = m4_bits(active & ~escaped & ~fits); bits; bits &= bits - 1) {
    int l = __builtin_ctz((unsigned)bits);
    lane_vertex(b, a, r, l, t[l], (int)prim[l], &next);
  }
  /* The path ends at a vertex past max_depth. */
  fits &= a->depth <= b->p->max_depth;
  h.nx = d4_gather(tab + RT_SH_NX * cols, col);
  h.ny = d4_gather(tab + RT_SH_NY * cols, col);
  h.nz = d4_gather(tab + RT_SH_NZ * cols, col);
  d4 inv_r = d4_gather(tab + RT_SH_INV_R * cols, col);
  /* A sphere's normal from its centre; the other curved shapes' lane by
   * lane. */
  m4 sphere = inv_r > 0;
  h.nx = d4_sel(sphere, (h.px - h.nx) * inv_r, h.nx);
  h.ny = d4_sel(sphere, (h.py - h.ny) * inv_r, h.ny);
  h.nz = d4_sel(sphere, (h.pz - h.nz) * inv_r, h.nz);
  for (int bits = m4_bits(fits & (inv_r < 0)); bits; bits &= bits - 1) {
    int l = __builtin_ctz((unsigned)bits);
    rt_hit hit;
    rt_ray ray = atl__rt_ray4_lane(r, l);
    rt_prim_finish(&s->prims[prim[l]], &ray, t[l], &hit);
    h.nx[l] = hit.n.x, h.ny[l] = hit.n.y, h.nz[l] = hit.n.z;
  }
  h.ar = d4_gather(tab + RT_SH_R * cols, col);
  h.ag = d4_gather(tab + RT_SH_G * cols, col);
  h.ab = d4_gather(tab + RT_SH_B * cols, col);
  h.ior = d4_gather(tab + RT_SH_IOR * cols, col);
  h.diffuse = fits & (fit == RT_FIT_DIFFUSE);
  h.mirror = fits & (fit == RT_FIT_MIRROR);
  h.glass = fits & (fit == RT_FIT_GLASS);
  if (m4_bits(escaped))
    atl__rt_escape4(s, a, r, escaped);
  if (m4_bits(fits))
    atl__rt_scatter4(s, b->p, a, r, &h, b->nee, &next);
  if (m4_bits(next.shadow)) {
    atl__rt_ray4_prepare(&sr);
    m4 lit =
        next.shadow & ~atl__rt_occluded4(s, &sr, next.shadow, D4_ZERO, stmax);
    a->Lx += d4_sel(lit, a->scx, D4_ZERO);
    a->Ly += d4_sel(lit, a->scy, D4_ZERO);
    a->Lz += d4_sel(lit, a->scz, D4_ZERO);
  }
  return next.goes_on;
}

/* Runs the block's samples to their ends, a packet of paths at a time. */
static void run_block(block_t *b) {
  rt_paths4 a;
  rt_ray4 r;
  batch_t q = {.next = 0, .count = 0};
  memset(&a, 0, sizeof(a));
  memset(&r, 0, sizeof(r));
  m4 active = start4(b, &q, &a, &r, M4_ALL);
  while (m4_bits(active)) {
    m4 ends = active & ~bounce(b, &a, &r, active);
    if (!m4_bits(ends))
      continue;
    for (int l = 0; l < RT_LANES; l++)
      if (ends[l])
        b->out[a.item[l]] = v3_make(a.Lx[l], a.Ly[l], a.Lz[l]);
    active = (active & ~ends) | start4(b, &q, &a, &r, ends);
  }
}

void atl__rt_tile_film(const atl_render_scene_t *s,
                       const atl_render_params_t *p, int x0, int y0, int x1,
                       int y1, uint64_t first, int n,
                       const atl_render_film_t *film) {
  float *rgb_sum = film->rgb_sum;
  uint32_t *count = film->count;
  x0 = x0 < 0 ? 0 : x0;
  y0 = y0 < 0 ? 0 : y0;
  x1 = x1 > p->width ? p->width : x1;
  y1 = y1 > p->height ? p->height : y1;
  if (x0 >= x1 || y0 >= y1 || n <= 0)
    return;
  int aov = film->albedo_sum != NULL || film->normal_sum != NULL;
  block_t *b = malloc(sizeof(*b) + sizeof(v3) * BLOCK * (aov ? 3 : 1));
  if (!b)
    return;
  memset(b, 0, sizeof(*b));
  if (aov)
    b->alb = b->out + BLOCK, b->nrm = b->out + 2 * BLOCK;
  b->s = s, b->p = p, b->n = n, b->first = first;
  b->x0 = b->x = x0, b->x1 = x1, b->y0 = b->y = y0, b->y1 = y1;
  b->active = film->active;
  b->aov = aov;
  b->filter = atl__rt_filter_get(p->filter, p->filter_width);
  b->seed_key = rt_mix64(p->seed + RT_RNG_STEP);
  b->key_pixel = UINT64_MAX;
  b->nee = s->nlights > 0 && !p->no_light_sampling;
  b->quads_only = 1;
  for (int i = 0; i < s->nlights; i++) {
    const rt_light *l = &s->lights[i];
    b->quads_only &= l->kind == RT_L_QUAD;
    b->sun_disc |= l->kind == RT_L_SUN && l->cos_outer < 1;
  }
  b->diffuse_fits = b->quads_only || !b->nee;
  for (int l = 0; s->nlights == 1 && b->quads_only && l < RT_LANES; l++)
    atl__rt_quad_lanes(&s->lights[0], l, b->one_light);
  long pixels = (long)(x1 - x0) * (y1 - y0);
  if (b->active != NULL) {
    pixels = 0;
    for (int y = y0; y < y1; y++)
      for (int x = x0; x < x1; x++)
        pixels += pixel_on(b, x, y);
  }
  long total = pixels * n;
  int x = x0, y = y0, i = 0; /* the next sample to add */
  skip_off(b, y1, &b->x, &b->y);
  skip_off(b, y1, &x, &y);
  for (b->base = 0; b->base < total; b->base += BLOCK) {
    b->item = b->base;
    b->end = b->base + BLOCK < total ? b->base + BLOCK : total;
    run_block(b);
    for (long k = b->base; k < b->end; k++) {
      size_t pix = (size_t)y * (size_t)p->width + (size_t)x;
      v3 c = b->out[k - b->base];
      /* A NaN or infinite sample would poison the pixel for good, and so
       * would one too large for the float sums: past 1e20, a pixel's
       * 2^20 samples could add up to infinity. The comparisons are false
       * for NaN, so they catch it too. */
      if (!(fabs(c.x) < 1e20 && fabs(c.y) < 1e20 && fabs(c.z) < 1e20))
        c = v3_make(0, 0, 0);
      float *sum = rgb_sum + pix * 3;
      sum[0] += (float)c.x;
      sum[1] += (float)c.y;
      sum[2] += (float)c.z;
      if (film->rgb_odd != NULL && ((first + (uint64_t)i) & 1)) {
        float *odd = film->rgb_odd + pix * 3;
        odd[0] += (float)c.x;
        odd[1] += (float)c.y;
        odd[2] += (float)c.z;
      }
      if (film->albedo_sum != NULL) {
        v3 v = b->alb[k - b->base];
        float *o = film->albedo_sum + pix * 3;
        o[0] += (float)v.x, o[1] += (float)v.y, o[2] += (float)v.z;
      }
      if (film->normal_sum != NULL) {
        v3 v = b->nrm[k - b->base];
        float *o = film->normal_sum + pix * 3;
        o[0] += (float)v.x, o[1] += (float)v.y, o[2] += (float)v.z;
      }
      if (++i == n) {
        count[pix] += (uint32_t)n;
        i = 0;
        if (++x == x1)
          x = x0, y++;
        skip_off(b, y1, &x, &y);
      }
    }
  }
  free(b);
}
