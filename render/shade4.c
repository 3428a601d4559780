/* The common vertices, a packet at once: lambertian surfaces lit by
 * quad lights, mirrors and glass, and escapes to the environment
 * (path4.h). It computes what vertex_scatter() and its helpers in
 * integrator.c, materials.c and lights.c compute for one lane, in the
 * same order and drawing the same random numbers, with selects where
 * they branch; a lane's result does not depend on the other lanes. */
#include "path4.h"

/* v3_from_local() in every lane: x t + y b + z n in the basis around
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

void atl__rt_quad_lanes(const rt_light *L, int l, double f[16][RT_LANES]) {
  const double v[16] = {L->p.x,  L->p.y,        L->p.z,        L->u.x,
                        L->u.y,  L->u.z,        L->v.x,        L->v.y,
                        L->v.z,  L->n.x,        L->n.y,        L->n.z,
                        L->area, L->emission.x, L->emission.y, L->emission.z};
  for (int i = 0; i < 16; i++)
    f[i][l] = v[i];
}

/* The rows of the lanes' quad lights, one per lane as rt_rand() picks
 * them: the block's broadcast light when there is a single one (and no
 * number drawn, as sample_one_light() has it), else gathered into f. */
static inline const double (*pick_quads(const atl_render_scene_t *s,
                                        const double (*one)[RT_LANES],
                                        rt_paths4 *pa, m4 mask,
                                        double f[16][RT_LANES]))[RT_LANES] {
  if (one)
    return one;
  d4 u = rand4(pa, mask);
  for (int l = 0; l < RT_LANES; l++) {
    int li = (int)(u[l] * s->nlights);
    atl__rt_quad_lanes(&s->lights[li < s->nlights ? li : s->nlights - 1], l, f);
  }
  return (const double(*)[RT_LANES])f;
}

/* Next-event estimation: sample_one_light(), atl__rt_light_sample_li()
 * for a quad and atl__rt_material_eval() for a lambertian surface, to
 * the point (a, b) of the lanes' lights q. */
static void light4(const atl_render_scene_t *s, rt_paths4 *pa,
                   const rt_hits4 *h, m4 mask, m4 seen, d4 sx, d4 sy, d4 sz,
                   d4 eps, rt_next4 *out, const double (*q)[RT_LANES], d4 a,
                   d4 b) {
  double pick = 1.0 / s->nlights;
  /* The point y = corner + a u + b v, and the light's normal. */
  d4 yx = d4_load(q[0]) + d4_load(q[3]) * a + d4_load(q[6]) * b;
  d4 yy = d4_load(q[1]) + d4_load(q[4]) * a + d4_load(q[7]) * b;
  d4 yz = d4_load(q[2]) + d4_load(q[5]) * a + d4_load(q[8]) * b;
  d4 lnx = d4_load(q[9]), lny = d4_load(q[10]), lnz = d4_load(q[11]);
  d4 dx = yx - h->px, dy = yy - h->py, dz = yz - h->pz;
  /* With the unit direction w = d / |d|, the cosines at the light and at
   * the surface are cl = cl_ / |d| and ci = ci_ / |d|, the light's pdf in
   * solid angle is lp / ld with lp = pick |d|^2 and ld = cl area, and
   * the BSDF's is ci / pi. The power heuristic divided by the light's
   * pdf, times the eval's cosine |w.n| / pi, is then
   *   cv_ cl_ area X / (pi (X^2 + Y^2)),
   * X = pick |d|^4, Y = ci_ cl_ area / pi, with cv_ = |d.n|: the |d|
   * all cancel, so neither the square root of |d|^2 nor w is needed. The
   * products stay finite for any distance up to 1e38. */
  d4 d2 = dx * dx + dy * dy + dz * dz;
  d4 cl = -(dx * lnx + dy * lny + dz * lnz);
  d4 ci = dx * sx + dy * sy + dz * sz;
  /* The eval's cosine towards the light must be positive (the one
   * towards the viewer is in the caller's mask). */
  m4 ok = mask & seen & (d2 != 0) & (cl > 0) & (ci > 0);
  if (!m4_bits(ok))
    return;
  d4 area = d4_load(q[12]);
  d4 x = pick * (d2 * d2), y = ci * cl * (area * (1 / RT_PI));
  d4 cosv = d4_abs(dx * h->nx + dy * h->ny + dz * h->nz);
  d4 w = cosv * cl * (area * (1 / RT_PI)) * (x / (x * x + y * y));
  d4 ox, oy, oz;
  offset4(h, eps, dx, dy, dz, &ox, &oy, &oz);
  rt_ray4 *sr = out->sr;
  sr->ox = d4_sel(ok, ox, sr->ox), sr->oy = d4_sel(ok, oy, sr->oy);
  sr->oz = d4_sel(ok, oz, sr->oz);
  /* Aimed at the sampled point itself; tmax in units of the direction. */
  sr->dx = d4_sel(ok, yx - ox, sr->dx);
  sr->dy = d4_sel(ok, yy - oy, sr->dy);
  sr->dz = d4_sel(ok, yz - oz, sr->dz);
  *out->stmax = d4_sel(ok, d4_set1(1 - 1e-7), *out->stmax);
  pa->scx = d4_sel(ok, pa->bx * (h->ar * d4_load(q[13]) * w), pa->scx);
  pa->scy = d4_sel(ok, pa->by * (h->ag * d4_load(q[14]) * w), pa->scy);
  pa->scz = d4_sel(ok, pa->bz * (h->ab * d4_load(q[15]) * w), pa->scz);
  out->shadow |= ok;
}

/* atl__rt_fresnel_dielectric() in every lane. */
static inline d4 fresnel4(d4 ci, d4 eta) {
  d4 sin2 = (1 - ci * ci) / (eta * eta);
  d4 ct = d4_sqrt(d4_max(1 - sin2, D4_ZERO));
  d4 rs = (ci - eta * ct) / (ci + eta * ct);
  d4 rp = (eta * ci - ct) / (eta * ci + ct);
  /* Total internal reflection where sin^2 of the refracted angle >= 1. */
  return d4_sel(sin2 >= 1, d4_set1(1), 0.5 * (rs * rs + rp * rp));
}

/* A BSDF sample per lane: direction, weight, pdf (0 for the delta
 * lobes of mirrors and glass) and the lanes that have one. */
typedef struct {
  d4 x, y, z, r, g, b, pdf;
  m4 ok;
} sample4;

static inline void take(sample4 *o, m4 m, d4 x, d4 y, d4 z, d4 r, d4 g, d4 b) {
  o->x = d4_sel(m, x, o->x), o->y = d4_sel(m, y, o->y);
  o->z = d4_sel(m, z, o->z);
  o->r = d4_sel(m, r, o->r), o->g = d4_sel(m, g, o->g);
  o->b = d4_sel(m, b, o->b);
  o->ok |= m;
}

/* Cosine-weighted sampling (cosine_dir() in materials.c) by the numbers
 * (u1, u2). */
static void diffuse4(const rt_hits4 *h, d4 sx, d4 sy, d4 sz, d4 u1, d4 u2,
                     sample4 *o) {
  d4 sn, cs;
  d4 rad = d4_sqrt(u1), wx, wy, wz;
  sincos4(u2, &sn, &cs);
  from_local4(sx, sy, sz, rad * cs, rad * sn, d4_sqrt(1 - u1), &wx, &wy, &wz);
  d4 pdf = (wx * sx + wy * sy + wz * sz) * (1 / RT_PI);
  m4 ok = h->diffuse & (pdf > 0);
  o->pdf = d4_sel(ok, pdf, o->pdf);
  take(o, ok, wx, wy, wz, h->ar, h->ag, h->ab);
}

/* The mirror direction, d + 2 cos(wo, n) n, and glass: reflection with
 * Fresnel's probability, else refraction. */
static void specular4(rt_paths4 *pa, const rt_hits4 *h, const rt_ray4 *r, d4 dn,
                      d4 co, d4 sx, d4 sy, d4 sz, sample4 *o) {
  d4 rx = r->dx + sx * (2 * co), ry = r->dy + sy * (2 * co);
  d4 rz = r->dz + sz * (2 * co);
  if (m4_bits(h->mirror)) {
    m4 up = h->mirror & (rx * sx + ry * sy + rz * sz > 0);
    take(o, up, rx, ry, rz, h->ar, h->ag, h->ab);
  }
  if (!m4_bits(h->glass))
    return;
  /* Entering where the ray arrives on the outward side. */
  d4 eta = d4_sel(dn < 0, h->ior, 1 / h->ior);
  m4 refl = h->glass & (rand4(pa, h->glass) < fresnel4(co, eta));
  d4 one = d4_set1(1);
  take(o, refl, rx, ry, rz, one, one, one);
  d4 cos_t = d4_sqrt(d4_max(1 - (1 - co * co) / (eta * eta), D4_ZERO));
  d4 k = cos_t - co / eta;
  d4 tx = r->dx / eta - sx * k, ty = r->dy / eta - sy * k;
  d4 tz = r->dz / eta - sz * k;
  d4 inv = 1 / d4_sqrt(tx * tx + ty * ty + tz * tz);
  take(o, h->glass & ~refl, tx * inv, ty * inv, tz * inv, h->ar, h->ag, h->ab);
}

void atl__rt_scatter4(const atl_render_scene_t *s, const atl_render_params_t *p,
                      rt_paths4 *pa, rt_ray4 *r, const rt_hits4 *h, int nee,
                      rt_next4 *out) {
  /* The shading normal on the viewer's side (wo = -d), and the cosine
   * of wo with it. */
  d4 dn = r->dx * h->nx + r->dy * h->ny + r->dz * h->nz;
  m4 flip = dn > 0;
  d4 sx = d4_sel(flip, -h->nx, h->nx), sy = d4_sel(flip, -h->ny, h->ny);
  d4 sz = d4_sel(flip, -h->nz, h->nz), co = d4_abs(dn);
  d4 eps =
      1e-7 * (1 + d4_max(d4_abs(h->px), d4_max(d4_abs(h->py), d4_abs(h->pz))));
  sample4 o = {.pdf = D4_ZERO};
  if (m4_bits(h->diffuse)) {
    /* The light is sampled, as atl__rt_material_eval() has it, only when
     * the viewer is strictly above the surface; the random numbers are
     * drawn all the same. */
    d4 u1, u2;
    if (nee) {
      double f[16][RT_LANES];
      const double(*q)[RT_LANES] =
          pick_quads(s, out->one_light, pa, h->diffuse, f);
      d4 a, b;
      rand4x2x2(pa, h->diffuse, &a, &b, &u1, &u2);
      light4(s, pa, h, h->diffuse, co > 0, sx, sy, sz, eps, out, q, a, b);
    } else {
      rand4x2(pa, h->diffuse, &u1, &u2);
    }
    diffuse4(h, sx, sy, sz, u1, u2, &o);
  }
  if (m4_bits(h->mirror | h->glass))
    specular4(pa, h, r, dn, co, sx, sy, sz, &o);
  d4 bx = pa->bx * o.r, by = pa->by * o.g, bz = pa->bz * o.b;
  d4 bmax = d4_max(bx, d4_max(by, bz));
  m4 ok = o.ok & (bmax > 0);
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
  pa->prev_delta = m4_sel(ok, ~h->diffuse, pa->prev_delta);
  pa->prev_pdf = d4_sel(ok, o.pdf, pa->prev_pdf);
  pa->ppx = d4_sel(ok, h->px, pa->ppx), pa->ppy = d4_sel(ok, h->py, pa->ppy);
  pa->ppz = d4_sel(ok, h->pz, pa->ppz);
  pa->depth += d4_sel(ok, d4_set1(1), D4_ZERO);
  d4 ox, oy, oz;
  offset4(h, eps, o.x, o.y, o.z, &ox, &oy, &oz);
  r->ox = d4_sel(ok, ox, r->ox), r->oy = d4_sel(ok, oy, r->oy);
  r->oz = d4_sel(ok, oz, r->oz);
  r->dx = d4_sel(ok, o.x, r->dx), r->dy = d4_sel(ok, o.y, r->dy);
  r->dz = d4_sel(ok, o.z, r->dz);
  out->goes_on |= ok;
}

void atl__rt_escape4(const atl_render_scene_t *s, rt_paths4 *pa,
                     const rt_ray4 *r, m4 lanes) {
  d4 er = d4_set1(s->env_a.x), eg = d4_set1(s->env_a.y);
  d4 eb = d4_set1(s->env_a.z);
  if (s->env == RT_ENV_NONE)
    return;
  if (s->env == RT_ENV_GRADIENT) {
    /* From the bottom colour at the horizon to the top one overhead. */
    d4 t = d4_max(D4_ZERO, r->dy / d4_sqrt(r->dx * r->dx + r->dy * r->dy +
                                           r->dz * r->dz));
    er = s->env_b.x * (1 - t) + er * t;
    eg = s->env_b.y * (1 - t) + eg * t;
    eb = s->env_b.z * (1 - t) + eb * t;
  }
  pa->Lx += d4_sel(lanes, pa->bx * er, D4_ZERO);
  pa->Ly += d4_sel(lanes, pa->by * eg, D4_ZERO);
  pa->Lz += d4_sel(lanes, pa->bz * eb, D4_ZERO);
}
