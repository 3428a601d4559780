/* The common vertex, four lanes at once: a lambertian surface, lit by
 * quad lights (path4.h). It computes what vertex() and its helpers in
 * integrator.c, materials.c and lights.c compute for one lane, in the
 * same order and drawing the same random numbers, with selects where
 * they branch; a lane's result does not depend on the other lanes. */
#include "path4.h"

/* v3_from_local() for four lanes: x t + y b + z n in the basis around
 * the unit n of v3_basis(). */
static inline void from_local4(d4 nx, d4 ny, d4 nz, d4 x, d4 y, d4 z, d4 *ox,
                               d4 *oy, d4 *oz) {
  m4 signbit = (m4)nz & (m4)d4_set1(-0.0);
  d4 sign = (d4)(signbit | (m4)d4_set1(1.0));
  d4 a = -1.0 / (sign + nz), c = nx * ny * a;
  d4 tx = 1.0 + sign * nx * nx * a, ty = sign * c, tz = -sign * nx;
  d4 bx = c, by = sign + ny * ny * a, bz = -ny;
  *ox = tx * x + bx * y + nx * z;
  *oy = ty * x + by * y + ny * z;
  *oz = tz * x + bz * y + nz * z;
}

/* offset() of integrator.c: the point moved off the surface along the
 * normal, to the side of the direction w. */
static inline void offset4(const rt_hits4 *h, d4 eps, d4 wx, d4 wy, d4 wz,
                           d4 *ox, d4 *oy, d4 *oz) {
  d4 e = d4_sel(wx * h->nx + wy * h->ny + wz * h->nz > 0, eps, -eps);
  *ox = h->px + h->nx * e;
  *oy = h->py + h->ny * e;
  *oz = h->pz + h->nz * e;
}

void atl__rt_quad_lanes(const rt_light *L, int l, double f[16][4]) {
  const double v[16] = {L->p.x,  L->p.y,        L->p.z,        L->u.x,
                        L->u.y,  L->u.z,        L->v.x,        L->v.y,
                        L->v.z,  L->n.x,        L->n.y,        L->n.z,
                        L->area, L->emission.x, L->emission.y, L->emission.z};
  for (int i = 0; i < 16; i++)
    f[i][l] = v[i];
}

/* The rows of the lanes' quad lights, one per lane as rt_rand() picks
 * them: the block's broadcast light when there is a single one, else
 * gathered into f. */
static inline const double (*pick_quads(const atl_render_scene_t *s,
                                        const double (*one)[4], d4 u,
                                        double f[16][4]))[4] {
  if (one)
    return one;
  for (int l = 0; l < 4; l++) {
    int li = (int)(u[l] * s->nlights);
    atl__rt_quad_lanes(&s->lights[li < s->nlights ? li : s->nlights - 1], l, f);
  }
  return (const double(*)[4])f;
}

/* Next-event estimation: sample_one_light(), atl__rt_light_sample_li()
 * for a quad and atl__rt_material_eval() for a lambertian surface. */
static void light4(const atl_render_scene_t *s, rt_paths4 *pa,
                   const rt_hits4 *h, m4 mask, m4 seen, d4 sx, d4 sy, d4 sz,
                   d4 eps, rt_next4 *out) {
  double pick = 1.0 / s->nlights;
  double f[16][4];
  const double(*q)[4] = pick_quads(s, out->one_light, rand4(pa, mask), f);
  d4 a = rand4(pa, mask), b = rand4(pa, mask);
  /* The point y = corner + a u + b v, and the light's normal. */
  d4 yx = d4_load(q[0]) + d4_load(q[3]) * a + d4_load(q[6]) * b;
  d4 yy = d4_load(q[1]) + d4_load(q[4]) * a + d4_load(q[7]) * b;
  d4 yz = d4_load(q[2]) + d4_load(q[5]) * a + d4_load(q[8]) * b;
  d4 lnx = d4_load(q[9]), lny = d4_load(q[10]), lnz = d4_load(q[11]);
  d4 dx = yx - h->px, dy = yy - h->py, dz = yz - h->pz;
  d4 d2 = dx * dx + dy * dy + dz * dz, dist = d4_sqrt(d2);
  d4 inv = 1 / dist;
  d4 wx = dx * inv, wy = dy * inv, wz = dz * inv;
  d4 cl = -(wx * lnx + wy * lny + wz * lnz);
  d4 lpdf = pick * (d2 / (cl * d4_load(q[12])));
  /* The eval's cosine towards the light must be positive (the one
   * towards the viewer is in the caller's mask). */
  d4 ci = wx * sx + wy * sy + wz * sz;
  m4 ok = mask & seen & (dist != 0) & (cl > 0) & (ci > 0);
  if (!m4_bits(ok))
    return;
  d4 bpdf = ci * (1 / RT_PI);
  d4 ox, oy, oz;
  offset4(h, eps, wx, wy, wz, &ox, &oy, &oz);
  rt_ray4 *sr = out->sr;
  sr->ox = d4_sel(ok, ox, sr->ox), sr->oy = d4_sel(ok, oy, sr->oy);
  sr->oz = d4_sel(ok, oz, sr->oz);
  /* Aimed at the sampled point itself; tmax in units of the direction. */
  sr->dx = d4_sel(ok, h->px + wx * dist - ox, sr->dx);
  sr->dy = d4_sel(ok, h->py + wy * dist - oy, sr->dy);
  sr->dz = d4_sel(ok, h->pz + wz * dist - oz, sr->dz);
  *out->stmax = d4_sel(ok, d4_set1(1 - 1e-7), *out->stmax);
  d4 cosv = d4_abs(wx * h->nx + wy * h->ny + wz * h->nz);
  /* The power heuristic divided by the light's pdf, in one division:
   * lpdf^2 / (lpdf^2 + bpdf^2) / lpdf. */
  d4 w = cosv * (1 / RT_PI) * (lpdf / (lpdf * lpdf + bpdf * bpdf));
  pa->scx = d4_sel(ok, pa->bx * (h->ar * d4_load(q[13]) * w), pa->scx);
  pa->scy = d4_sel(ok, pa->by * (h->ag * d4_load(q[14]) * w), pa->scy);
  pa->scz = d4_sel(ok, pa->bz * (h->ab * d4_load(q[15]) * w), pa->scz);
  out->shadow |= ok;
}

void atl__rt_lambert4(const atl_render_scene_t *s, const atl_render_params_t *p,
                      rt_paths4 *pa, rt_ray4 *r, const rt_hits4 *h, m4 mask,
                      int nee, rt_next4 *out) {
  /* The shading normal on the viewer's side (wo = -d). */
  m4 flip = r->dx * h->nx + r->dy * h->ny + r->dz * h->nz > 0;
  d4 sx = d4_sel(flip, -h->nx, h->nx), sy = d4_sel(flip, -h->ny, h->ny);
  d4 sz = d4_sel(flip, -h->nz, h->nz);
  d4 eps =
      1e-7 * (1 + d4_max(d4_abs(h->px), d4_max(d4_abs(h->py), d4_abs(h->pz))));
  /* The light is sampled, as atl__rt_material_eval() has it, only when
   * the viewer is strictly above the surface; the random numbers are
   * drawn all the same. */
  if (nee) {
    d4 co = -(r->dx * sx + r->dy * sy + r->dz * sz);
    light4(s, pa, h, mask, co > 0, sx, sy, sz, eps, out);
  }
  /* Cosine-weighted sampling (cosine_dir() in materials.c). */
  d4 u1 = rand4(pa, mask), u2 = rand4(pa, mask), sn, cs;
  d4 rad = d4_sqrt(u1);
  sincos4(u2, &sn, &cs);
  d4 wx, wy, wz;
  from_local4(sx, sy, sz, rad * cs, rad * sn, d4_sqrt(1 - u1), &wx, &wy, &wz);
  d4 pdf = (wx * sx + wy * sy + wz * sz) * (1 / RT_PI);
  d4 bx = pa->bx * h->ar, by = pa->by * h->ag, bz = pa->bz * h->ab;
  d4 bmax = d4_max(bx, d4_max(by, bz));
  m4 ok = mask & (pdf > 0) & (bmax > 0);
  /* Russian roulette once the throughput has dropped below 1. */
  int rr_depth = p->rr_depth > 0 ? p->rr_depth : 4;
  m4 rr = ok & (pa->depth >= rr_depth) & (bmax < 1);
  if (m4_bits(rr)) {
    d4 q = d4_max(d4_set1(0.05), bmax);
    m4 live = rand4(pa, rr) < q;
    ok &= ~rr | live;
    d4 k = d4_sel(rr, 1 / q, d4_set1(1));
    bx *= k, by *= k, bz *= k;
  }
  pa->bx = d4_sel(ok, bx, pa->bx), pa->by = d4_sel(ok, by, pa->by);
  pa->bz = d4_sel(ok, bz, pa->bz);
  pa->prev_delta = m4_sel(ok, M4_NONE, pa->prev_delta);
  pa->prev_pdf = d4_sel(ok, pdf, pa->prev_pdf);
  pa->ppx = d4_sel(ok, h->px, pa->ppx), pa->ppy = d4_sel(ok, h->py, pa->ppy);
  pa->ppz = d4_sel(ok, h->pz, pa->ppz);
  pa->depth -= ok; /* + 1 where set */
  d4 ox, oy, oz;
  offset4(h, eps, wx, wy, wz, &ox, &oy, &oz);
  r->ox = d4_sel(ok, ox, r->ox), r->oy = d4_sel(ok, oy, r->oy);
  r->oz = d4_sel(ok, oz, r->oz);
  r->dx = d4_sel(ok, wx, r->dx), r->dy = d4_sel(ok, wy, r->dy);
  r->dz = d4_sel(ok, wz, r->dz);
  out->goes_on |= ok;
}
