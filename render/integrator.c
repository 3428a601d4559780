/* The camera and the path tracer: unidirectional paths with next-event
 * estimation at every non-specular vertex, combined with BSDF sampling by
 * the power heuristic; Russian roulette from rr_depth on. max_depth
 * counts path vertices, the camera's hit included, as
 * go-progressive-raytracer does (its 5 is Cycles' max_bounces 4). */
#include "rt.h"

/* The camera looks along fwd with +right to the right of the picture and
 * +up at its top: with the eye at (278, 278, -800) looking at +Z and up
 * +Y, right is +X, so the Cornell box's red wall (x = 0) is on the left,
 * as in PBRT and go-progressive-raytracer. */
rt_ray atl__rt_camera_ray(const atl_render_scene_t *s, int w, int h, double px,
                          double py, rt_rng *rng) {
  double aspect = (double)w / h;
  double sx = (2 * px / w - 1) * s->tan_half * aspect;
  double sy = (1 - 2 * py / h) * s->tan_half;
  v3 d = v3_add(s->fwd, v3_add(v3_scale(s->right, sx), v3_scale(s->up, sy)));
  rt_ray r;
  if (s->aperture > 0) {
    /* A thin lens: a point on the lens towards the point in focus. */
    v3 focus = v3_madd(s->eye, d, s->focus);
    double rad = 0.5 * s->aperture * sqrt(rt_rand(rng));
    double sn, cs;
    rt_sincos_turn(rt_rand(rng), &sn, &cs);
    r.o = v3_add(s->eye, v3_add(v3_scale(s->right, rad * cs),
                                v3_scale(s->up, rad * sn)));
    r.d = v3_norm(v3_sub(focus, r.o));
  } else {
    r.o = s->eye;
    r.d = v3_norm(d);
  }
  return r;
}

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

/* One light sample at the vertex h; returns the weighted contribution
 * (to be multiplied by the throughput). */
static v3 sample_one_light(const atl_render_scene_t *s, const rt_hit *h,
                           const rt_material *m, v3 wo, rt_rng *rng) {
  v3 zero = v3_make(0, 0, 0);
  double pick = 1.0 / s->nlights;
  int li = (int)(rt_rand(rng) * s->nlights);
  if (li >= s->nlights)
    li = s->nlights - 1;
  const rt_light *l = &s->lights[li];
  rt_light_sample ls;
  if (!atl__rt_light_sample_li(l, h->p, rng, &ls))
    return zero;
  v3 f;
  double bpdf;
  if (!atl__rt_material_eval(m, h, wo, ls.wi, &f, &bpdf))
    return zero;
  /* The shadow ray aims from the offset origin at the sampled point
   * itself, so the offset cannot push the light's own surface in front
   * of tmax at grazing angles. */
  rt_ray sr = {offset(h, ls.wi), ls.wi};
  double tmax = INFINITY;
  if (!isinf(ls.dist)) {
    sr.d = v3_sub(v3_madd(h->p, ls.wi, ls.dist), sr.o);
    tmax = 1 - 1e-7; /* in units of the unnormalised direction */
  }
  if (atl__rt_occluded(s, &sr, 0, tmax))
    return zero;
  double cosv = fabs(v3_dot(ls.wi, h->n));
  v3 c = v3_scale(v3_mul(f, ls.li), cosv);
  if (ls.pdf == 0) /* a delta light */
    return v3_scale(c, 1 / pick);
  double lpdf = pick * ls.pdf;
  return v3_scale(c, power2(lpdf, bpdf) / lpdf);
}

v3 atl__rt_trace(const atl_render_scene_t *s, const atl_render_params_t *p,
                 rt_ray ray, rt_rng *rng) {
  v3 L = v3_make(0, 0, 0), beta = v3_make(1, 1, 1);
  int nee = s->nlights > 0 && !p->no_light_sampling;
  int rr_depth = p->rr_depth > 0 ? p->rr_depth : 4;
  int prev_delta = 1; /* the camera counts as specular: no MIS */
  double prev_pdf = 0;
  v3 prev_p = ray.o;
  /* Vertex max_depth still samples its BSDF: the ray it sends only
   * collects emission, the other half of that vertex's MIS. */
  for (int depth = 1; depth <= p->max_depth + 1; depth++) {
    rt_hit h;
    if (!atl__rt_intersect(s, &ray, 0, INFINITY, &h)) {
      L = v3_add(L, v3_mul(beta, atl__rt_env_radiance(s, ray.d)));
      /* The sun's disc, when it has one, found by BSDF sampling. */
      for (int i = 0; i < s->nlights; i++) {
        const rt_light *l = &s->lights[i];
        if (l->kind != RT_L_SUN || l->cos_outer >= 1 ||
            v3_dot(ray.d, l->n) < l->cos_outer)
          continue;
        double w = 1;
        if (nee && !prev_delta)
          w = power2(prev_pdf,
                     atl__rt_light_pdf(l, prev_p, ray.d, INFINITY, l->n) /
                         s->nlights);
        L = v3_add(L, v3_scale(v3_mul(beta, l->emission), w));
      }
      break;
    }
    const rt_prim *pr = &s->prims[h.prim];
    const rt_material *m = &s->materials[pr->material];
    if (m->kind == RT_LIGHT || m->kind == RT_EMISSIVE) {
      if (h.front) {
        double w = 1;
        if (m->kind == RT_LIGHT && nee && !prev_delta) {
          const rt_light *l = &s->lights[pr->light];
          double lpdf =
              atl__rt_light_pdf(l, prev_p, ray.d, h.t, h.n) / s->nlights;
          w = power2(prev_pdf, lpdf);
        }
        L = v3_add(L, v3_scale(v3_mul(beta, m->emission), w));
      }
      break; /* emitters do not scatter */
    }
    if (depth > p->max_depth)
      break;
    v3 wo = v3_neg(ray.d);
    if (nee && atl__rt_material_smooth(m))
      L = v3_add(L, v3_mul(beta, sample_one_light(s, &h, m, wo, rng)));
    rt_bsdf_sample bs;
    if (!atl__rt_material_sample(m, &h, wo, rng, &bs))
      break;
    beta = v3_mul(beta, bs.weight);
    double bmax = comp_max(beta);
    if (bmax <= 0)
      break;
    /* Russian roulette only once the throughput has dropped below 1, so
     * a white furnace stays noise-free. */
    if (depth >= rr_depth && bmax < 1) {
      double q = max2(0.05, bmax);
      if (rt_rand(rng) >= q)
        break;
      beta = v3_scale(beta, 1 / q);
    }
    prev_delta = bs.delta;
    prev_pdf = bs.pdf;
    prev_p = h.p;
    ray.o = offset(&h, bs.wi);
    ray.d = bs.wi;
  }
  return L;
}

void atl_render_tile_samples(const atl_render_scene_t *s,
                             const atl_render_params_t *p, int x0, int y0,
                             int x1, int y1, uint64_t first, int n,
                             float *rgb_sum, uint32_t *count) {
  int w = p->width, hgt = p->height;
  x0 = x0 < 0 ? 0 : x0;
  y0 = y0 < 0 ? 0 : y0;
  x1 = x1 > w ? w : x1;
  y1 = y1 > hgt ? hgt : y1;
  for (int y = y0; y < y1; y++) {
    for (int x = x0; x < x1; x++) {
      size_t pix = (size_t)y * (size_t)w + (size_t)x;
      float *sum = rgb_sum + pix * 3;
      for (int i = 0; i < n; i++) {
        rt_rng rng = rt_rng_make(p->seed, pix, first + (uint64_t)i);
        double jx = rt_rand(&rng), jy = rt_rand(&rng);
        rt_ray ray = atl__rt_camera_ray(s, w, hgt, x + jx, y + jy, &rng);
        v3 c = atl__rt_trace(s, p, ray, &rng);
        /* A NaN or infinite sample would poison the pixel for good. */
        if (!isfinite(c.x) || !isfinite(c.y) || !isfinite(c.z))
          c = v3_make(0, 0, 0);
        sum[0] += (float)c.x;
        sum[1] += (float)c.y;
        sum[2] += (float)c.z;
      }
      count[pix] += (uint32_t)n;
    }
  }
}

void atl_render_tile(const atl_render_scene_t *s, const atl_render_params_t *p,
                     int x0, int y0, int x1, int y1, int pass, float *rgb_sum,
                     uint32_t *count) {
  atl_render_tile_samples(s, p, x0, y0, x1, y1,
                          (uint64_t)pass * (uint64_t)p->spp_per_pass,
                          p->spp_per_pass, rgb_sum, count);
}
