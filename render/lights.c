/* Light sampling for next-event estimation, the matching pdfs for
 * multiple importance sampling, and the environment's radiance. */
#include "rt.h"

/* A uniform direction in the cone of half-angle acos(cos_max) around n. */
static v3 cone_dir(v3 n, double cos_max, rt_rng *rng) {
  double u1, u2;
  rt_rand2(rng, &u1, &u2);
  double c = 1 - u1 * (1 - cos_max);
  double s = sqrt(fmax(0, 1 - c * c)), sn, cs;
  rt_sincos_turn(u2, &sn, &cs);
  return v3_from_local(n, s * cs, s * sn, c);
}

static double cone_pdf(double cos_max) {
  return 1 / (2 * RT_PI * (1 - cos_max));
}

/* The sphere's cone of directions seen from p, as cos of its half-angle;
 * -2 when p is inside. */
static double sphere_cos_max(const rt_light *l, v3 p) {
  double d2 = v3_len2(v3_sub(l->p, p));
  double r2 = l->r * l->r;
  if (d2 <= r2 * (1 + 1e-9))
    return -2;
  return sqrt(fmax(0, 1 - r2 / d2));
}

/* Turns an area-sampled point y with normal ny into a solid-angle
 * sample; only the front side (ny) of a panel emits. */
static int area_to_solid(const rt_light *l, v3 p, v3 y, v3 ny, int two_sided,
                         rt_light_sample *out) {
  v3 d = v3_sub(y, p);
  double d2 = v3_len2(d), dist = sqrt(d2);
  if (dist == 0)
    return 0;
  v3 wi = v3_scale(d, 1 / dist);
  double cl = -v3_dot(wi, ny);
  if (two_sided)
    cl = fabs(cl);
  if (cl <= 0)
    return 0;
  out->wi = wi;
  out->dist = dist;
  out->li = l->emission;
  out->pdf = d2 / (cl * l->area);
  return 1;
}

int atl__rt_light_sample_li(const rt_light *l, v3 p, rt_rng *rng,
                            rt_light_sample *out) {
  switch (l->kind) {
  case RT_L_POINT:
  case RT_L_SPOT: {
    v3 d = v3_sub(l->p, p);
    double d2 = v3_len2(d);
    if (d2 == 0)
      return 0;
    out->dist = sqrt(d2);
    out->wi = v3_scale(d, 1 / out->dist);
    out->pdf = 0;
    double fall = 1;
    if (l->kind == RT_L_SPOT) {
      double c = -v3_dot(out->wi, l->n);
      if (c <= l->cos_outer)
        return 0;
      if (c < l->cos_inner) {
        double x = (c - l->cos_outer) / (l->cos_inner - l->cos_outer);
        fall = x * x * (3 - 2 * x); /* smoothstep over the soft edge */
      }
    }
    out->li = v3_scale(l->emission, fall / d2);
    return 1;
  }
  case RT_L_QUAD: {
    double a, b;
    rt_rand2(rng, &a, &b);
    v3 y = v3_add(l->p, v3_add(v3_scale(l->u, a), v3_scale(l->v, b)));
    return area_to_solid(l, p, y, l->n, 0, out);
  }
  case RT_L_DISC: {
    double u1, u2, sn, cs;
    rt_rand2(rng, &u1, &u2);
    double r = l->r * sqrt(u1);
    rt_sincos_turn(u2, &sn, &cs);
    v3 y = v3_add(l->p, v3_from_local(l->n, r * cs, r * sn, 0));
    return area_to_solid(l, p, y, l->n, 0, out);
  }
  case RT_L_SPHERE: {
    double cm = sphere_cos_max(l, p);
    if (cm < -1) {
      /* Inside: uniform on the whole sphere, seen from within. */
      double u1, u2, sn, cs;
      rt_rand2(rng, &u1, &u2);
      double z = 1 - 2 * u1;
      rt_sincos_turn(u2, &sn, &cs);
      double s = sqrt(fmax(0, 1 - z * z));
      v3 nn = v3_make(s * cs, s * sn, z);
      v3 y = v3_madd(l->p, nn, l->r);
      return area_to_solid(l, p, y, nn, 1, out);
    }
    v3 axis = v3_norm(v3_sub(l->p, p));
    out->wi = cone_dir(axis, cm, rng);
    out->pdf = cone_pdf(cm);
    /* The distance to the near side along wi. */
    v3 oc = v3_sub(p, l->p);
    double b = v3_dot(oc, out->wi);
    double c = v3_len2(oc) - l->r * l->r;
    double disc = fmax(0, b * b - c);
    out->dist = -b - sqrt(disc);
    out->li = l->emission;
    return out->dist > 0;
  }
  case RT_L_SUN:
    out->dist = INFINITY;
    out->li = l->emission;
    if (l->cos_outer >= 1) {
      out->wi = l->n;
      out->pdf = 0;
      return 1;
    }
    out->wi = cone_dir(l->n, l->cos_outer, rng);
    out->pdf = cone_pdf(l->cos_outer);
    return 1;
  }
  return 0;
}

double atl__rt_light_pdf(const rt_light *l, v3 p, v3 wi, double dist, v3 ln) {
  switch (l->kind) {
  case RT_L_QUAD:
  case RT_L_DISC: {
    double cl = -v3_dot(wi, ln);
    if (cl <= 0)
      return 0;
    return dist * dist / (cl * l->area);
  }
  case RT_L_SPHERE: {
    double cm = sphere_cos_max(l, p);
    if (cm < -1)
      return dist * dist / (fabs(v3_dot(wi, ln)) * l->area);
    return cone_pdf(cm);
  }
  case RT_L_SUN:
    if (l->cos_outer >= 1 || v3_dot(wi, l->n) < l->cos_outer)
      return 0;
    return cone_pdf(l->cos_outer);
  default:
    return 0;
  }
}

v3 atl__rt_env_radiance(const atl_render_scene_t *s, v3 d) {
  switch (s->env) {
  case RT_ENV_UNIFORM:
    return s->env_a;
  case RT_ENV_GRADIENT: {
    double t = d.y / v3_len(d);
    t = t > 0 ? t : 0; /* fmax() would be a libm call */
    return v3_add(v3_scale(s->env_b, 1 - t), v3_scale(s->env_a, t));
  }
  default:
    return v3_make(0, 0, 0);
  }
}
