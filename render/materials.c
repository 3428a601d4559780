/* The materials' scattering: evaluation of the non-delta lobes (for light
 * sampling and MIS) and sampling of every lobe. Directions are unit and
 * point away from the surface: wo towards the viewer, wi towards the
 * light. And the packets' shading table, built with the scene: it
 * depends on no lane count, so it is here rather than in the packet
 * kernels (kernel.h), which are built twice. */
#include <errno.h>
#include <stdlib.h>

#include "rt.h"

/* The exact Fresnel reflectance of unpolarised light for a dielectric
 * interface; cos_i > 0 on the incident side, eta = n_t / n_i. */
double atl__rt_fresnel_dielectric(double cos_i, double eta) {
  double sin2_t = (1 - cos_i * cos_i) / (eta * eta);
  if (sin2_t >= 1)
    return 1; /* total internal reflection */
  double cos_t = sqrt(1 - sin2_t);
  double rs = (cos_i - eta * cos_t) / (cos_i + eta * cos_t);
  double rp = (eta * cos_i - cos_t) / (eta * cos_i + cos_t);
  return 0.5 * (rs * rs + rp * rp);
}

static v3 albedo_at(const rt_material *m, v3 p) {
  if (!m->checker)
    return m->albedo;
  long c = (long)floor(p.x / m->scale) + (long)floor(p.y / m->scale) +
           (long)floor(p.z / m->scale);
  return (c & 1) ? m->albedo2 : m->albedo;
}

v3 atl__rt_material_albedo(const rt_material *m, v3 p) {
  switch (m->kind) {
  case RT_LAMBERTIAN:
  case RT_METAL:
  case RT_PLASTIC:
    return albedo_at(m, p);
  case RT_DIELECTRIC:
    return m->tint;
  default: {
    /* An emitter's colour, brought into [0, 1]: the denoiser only needs
     * to tell it from its neighbours. */
    double k = m->emission.x > m->emission.y ? m->emission.x : m->emission.y;
    k = k > m->emission.z ? k : m->emission.z;
    return k > 1 ? v3_scale(m->emission, 1 / k) : m->emission;
  }
  }
}

static v3 cosine_dir(v3 n, rt_rng *rng) {
  double u1, u2;
  rt_rand2(rng, &u1, &u2);
  double r = sqrt(u1), sn, cs;
  rt_sincos_turn(u2, &sn, &cs);
  /* u1 < 1, so 1 - u1 > 0: no clamp needed. */
  return v3_from_local(n, r * cs, r * sn, sqrt(1 - u1));
}

static v3 reflect(v3 wo, v3 n) {
  return v3_sub(v3_scale(n, 2 * v3_dot(wo, n)), wo);
}

/* A uniform point in the unit ball, for the fuzz of metal and plastic. */
static v3 in_ball(rt_rng *rng) {
  double u = rt_rand(rng), v = rt_rand(rng), w = rt_rand(rng);
  double z = 1 - 2 * v, r = sqrt(fmax(0, 1 - z * z)), sn, cs;
  rt_sincos_turn(w, &sn, &cs);
  double rad = cbrt(u);
  return v3_make(rad * r * cs, rad * r * sn, rad * z);
}

/* The shading normal on the viewer's side. */
static v3 side_normal(const rt_hit *h, v3 wo) {
  return v3_dot(wo, h->n) >= 0 ? h->n : v3_neg(h->n);
}

int atl__rt_material_smooth(const rt_material *m) {
  return m->kind == RT_LAMBERTIAN || m->kind == RT_PLASTIC;
}

int atl__rt_material_eval(const rt_material *m, const rt_hit *h, v3 wo, v3 wi,
                          v3 *f, double *pdf) {
  v3 n = side_normal(h, wo);
  double ci = v3_dot(wi, n), co = v3_dot(wo, n);
  if (ci <= 0 || co <= 0)
    return 0;
  switch (m->kind) {
  case RT_LAMBERTIAN:
    *f = v3_scale(albedo_at(m, h->p), 1 / RT_PI);
    *pdf = ci / RT_PI;
    return 1;
  case RT_PLASTIC: {
    /* The diffuse base under a clear coat: light reaches it with the
     * share the coat does not reflect. */
    double keep = 1 - atl__rt_fresnel_dielectric(co, m->ior);
    *f = v3_scale(m->albedo, keep / RT_PI);
    *pdf = keep * ci / RT_PI;
    return 1;
  }
  default:
    return 0;
  }
}

/* Reflects about n with fuzz; 0 if the result goes under the surface. */
static int glossy(v3 wo, v3 n, double fuzz, rt_rng *rng, v3 *wi) {
  v3 r = reflect(wo, n);
  if (fuzz > 0)
    r = v3_norm(v3_madd(r, in_ball(rng), fuzz));
  *wi = r;
  return v3_dot(r, n) > 0;
}

int atl__rt_material_sample(const rt_material *m, const rt_hit *h, v3 wo,
                            rt_rng *rng, rt_bsdf_sample *out) {
  v3 n = side_normal(h, wo);
  double co = v3_dot(wo, n);
  switch (m->kind) {
  case RT_LAMBERTIAN:
    out->wi = cosine_dir(n, rng);
    out->pdf = v3_dot(out->wi, n) / RT_PI;
    out->weight = albedo_at(m, h->p);
    out->delta = 0;
    return out->pdf > 0;
  case RT_METAL:
    out->pdf = 0;
    out->delta = 1;
    out->weight = m->albedo;
    return glossy(wo, n, m->fuzz, rng, &out->wi);
  case RT_DIELECTRIC: {
    /* Entering when the ray arrives on the outward side. */
    double eta = h->front ? m->ior : 1 / m->ior;
    double fr = atl__rt_fresnel_dielectric(co, eta);
    out->pdf = 0;
    out->delta = 1;
    if (rt_rand(rng) < fr) {
      out->wi = reflect(wo, n);
      out->weight = v3_make(1, 1, 1);
      return 1;
    }
    double cos_t = sqrt(fmax(0, 1 - (1 - co * co) / (eta * eta)));
    out->wi = v3_norm(
        v3_sub(v3_scale(v3_neg(wo), 1 / eta), v3_scale(n, cos_t - co / eta)));
    out->weight = m->tint;
    return 1;
  }
  case RT_PLASTIC: {
    double fr = atl__rt_fresnel_dielectric(co, m->ior);
    if (rt_rand(rng) < fr) {
      out->pdf = 0;
      out->delta = 1;
      out->weight = v3_make(1, 1, 1);
      return glossy(wo, n, m->fuzz * m->fuzz, rng, &out->wi);
    }
    out->wi = cosine_dir(n, rng);
    out->pdf = (1 - fr) * v3_dot(out->wi, n) / RT_PI;
    out->weight = m->albedo;
    out->delta = 0;
    return out->pdf > 0;
  }
  default:
    return 0;
  }
}

/* The packets' shading table (rt.h). Which of atl__rt_scatter4()'s kinds can
 * shade material m, whatever the lights: a lambertian surface needs the lights
 * to be quads as well when they are sampled, which bounce() checks per block.
 */
static int scatter4_fits(const rt_material *m) {
  switch (m->kind) {
  case RT_LAMBERTIAN:
    return m->checker ? RT_FIT_NONE : RT_FIT_DIFFUSE;
  case RT_METAL:
    return m->fuzz == 0 ? RT_FIT_MIRROR : RT_FIT_NONE;
  case RT_DIELECTRIC:
    return RT_FIT_GLASS;
  default:
    return RT_FIT_NONE;
  }
}

int atl__rt_shade_build(atl_render_scene_t *s) {
  size_t n = (size_t)s->nprims + 1;
  double *t = calloc(n * RT_SHADE_FIELDS, sizeof(double));
  if (!t)
    return -ENOMEM;
  free(s->shade);
  s->shade = t;
  t[RT_SH_IOR * n] = 1; /* no primitive: harmless values */
  for (size_t i = 1; i < n; i++) {
    const rt_prim *pr = &s->prims[i - 1];
    const rt_material *m = &s->materials[pr->material];
    v3 c = m->kind == RT_DIELECTRIC ? m->tint : m->albedo;
    v3 nv = pr->n;
    double inv_r = 0;
    switch (pr->kind) {
    case RT_SPHERE:
      nv = pr->a, inv_r = 1.0 / pr->r0;
      break;
    case RT_QUAD:
    case RT_DISC:
    case RT_PLANE:
    case RT_TRIANGLE:
      break;
    default:
      inv_r = -1;
    }
    const double row[RT_SHADE_FIELDS] = {
        [RT_SH_FIT] = scatter4_fits(m),
        [RT_SH_NX] = nv.x,
        [RT_SH_NY] = nv.y,
        [RT_SH_NZ] = nv.z,
        [RT_SH_INV_R] = inv_r,
        [RT_SH_R] = c.x,
        [RT_SH_G] = c.y,
        [RT_SH_B] = c.z,
        [RT_SH_IOR] = m->ior,
    };
    for (int f = 0; f < RT_SHADE_FIELDS; f++)
      t[(size_t)f * n + i] = row[f];
  }
  return 0;
}
