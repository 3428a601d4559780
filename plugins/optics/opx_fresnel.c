/* Fresnel's equations, the critical and Brewster angles and the phase
 * shifts of total internal reflection (opx_fresnel.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jsnum.h"
#include "opx_fresnel.h"

#define DEG (180.0 / M_PI)

/* Appends c to the text at *o, count times. */
static void put_chars(char **o, char c, int count) {
  for (int i = 0; i < count; i++)
    *(*o)++ = c;
}

char *opx_py_repr(double v, char *buf, size_t len) {
  char d[24], tmp[OPX_PY_REPR_MAX + 8], *o = tmp;
  if (isnan(v)) {
    snprintf(buf, len, "nan");
    return buf;
  }
  if (signbit(v))
    *o++ = '-';
  if (isinf(v))
    o += sprintf(o, "inf");
  else if (v == 0)
    o += sprintf(o, "0.0");
  else {
    /* v = 0.d1d2...dk x 10^n; Python switches to the exponent form when
     * the decimal point would sit more than 16 places right of the first
     * digit or 4 or more left of it. */
    int n, k = atl__op_shortest(fabs(v), d, &n);
    if (n <= -4 || n > 16) {
      *o++ = d[0];
      if (k > 1)
        o += sprintf(o, ".%s", d + 1);
      o += sprintf(o, "e%c%02d", n - 1 < 0 ? '-' : '+', abs(n - 1));
    } else if (n <= 0) {
      o += sprintf(o, "0.");
      put_chars(&o, '0', -n);
      o += sprintf(o, "%s", d);
    } else if (n >= k) {
      o += sprintf(o, "%s", d);
      put_chars(&o, '0', n - k);
      o += sprintf(o, ".0");
    } else
      o += sprintf(o, "%.*s.%s", n, d, d + n);
  }
  *o = '\0';
  if (len > 0)
    snprintf(buf, len, "%s", tmp);
  return buf;
}

static void say(char *msg, unsigned msg_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say(char *msg, unsigned msg_len, const char *fmt, ...) {
  if (msg == NULL || msg_len == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, msg_len, fmt, ap);
  va_end(ap);
}

/* A refractive index must be a finite number > 0: anything else makes
 * every formula below meaningless rather than wrong. */
static int check_index(const char *name, double n, char *msg,
                       unsigned msg_len) {
  if (isfinite(n) && n > 0)
    return 0;
  char r[OPX_PY_REPR_MAX];
  say(msg, msg_len,
      "%s must be a refractive index: a finite number greater than 0 "
      "(1.0 for air, about 1.5 for glass); got %s.",
      name, opx_py_repr(n, r, sizeof(r)));
  return -1;
}

static int check_indices(double n1, double n2, char *msg, unsigned msg_len) {
  return check_index("n1", n1, msg, msg_len) < 0 ||
                 check_index("n2", n2, msg, msg_len) < 0
             ? -1
             : 0;
}

/* Angles of incidence are measured from the normal; 90 degrees is
 * grazing incidence, where no light enters and the ratios divide by 0. */
static int check_incidence(double deg, char *msg, unsigned msg_len) {
  if (isfinite(deg) && deg >= 0 && deg < 90)
    return 0;
  char r[OPX_PY_REPR_MAX];
  say(msg, msg_len,
      "theta_i_deg must be an angle of incidence from the normal, in "
      "degrees, at least 0 and below 90; got %s.",
      opx_py_repr(deg, r, sizeof(r)));
  return -1;
}

static double critical_deg(double n1, double n2) {
  return asin(n2 / n1) * DEG;
}

/* ray_tracing_shapely's refusal when no total internal reflection can
 * happen, and the way out. */
static int no_tir(double n1, double n2, char *msg, unsigned msg_len) {
  char r1[OPX_PY_REPR_MAX], r2[OPX_PY_REPR_MAX];
  opx_py_repr(n1, r1, sizeof(r1));
  opx_py_repr(n2, r2, sizeof(r2));
  if (n1 == n2)
    say(msg, msg_len,
        "No TIR possible: n1=%s must be greater than n2=%s. Equal indices "
        "neither reflect nor refract; total internal reflection needs n1, "
        "the medium the light comes from, to be the denser one.",
        r1, r2);
  else
    say(msg, msg_len,
        "No TIR possible: n1=%s must be greater than n2=%s. Total internal "
        "reflection only happens going from the denser medium into the "
        "rarer one: swap them (n1=%s, n2=%s), or use fresnel_transmittances "
        "for light going this way.",
        r1, r2, r2, r1);
  return -1;
}

/* T_p / T_s, infinite where T_s vanishes, as ray_tracing_shapely has it. */
static double ratio(double t_s, double t_p) {
  return t_s > 1e-10 ? t_p / t_s : INFINITY;
}

/* The powers of a refraction at incidence th (radians), given sin_t <= 1
 * (no total internal reflection), into f, and the amplitude reflection
 * coefficients, whose signs are the reflection's phases. */
static void transmit(double n1, double n2, double th, double sin_t,
                     opx_fresnel_t *f, double *r_s, double *r_p) {
  double ci = cos(th), ct = sqrt(1.0 - sin_t * sin_t);
  *r_s = (n1 * ci - n2 * ct) / (n1 * ci + n2 * ct);
  *r_p = (n2 * ci - n1 * ct) / (n2 * ci + n1 * ct);
  f->r_s = *r_s * *r_s;
  f->r_p = *r_p * *r_p;
  f->t_s = 1.0 - f->r_s;
  f->t_p = 1.0 - f->r_p;
  f->ratio_tp_ts = ratio(f->t_s, f->t_p);
  f->theta_t_deg = asin(sin_t) * DEG;
}

int opx_fresnel(double n1, double n2, double theta_i_deg, opx_fresnel_t *out,
                char *msg, unsigned msg_len) {
  if (check_indices(n1, n2, msg, msg_len) < 0 ||
      check_incidence(theta_i_deg, msg, msg_len) < 0)
    return -1;
  double th = theta_i_deg / DEG, sin_t = n1 / n2 * sin(th);
  if (fabs(sin_t) > 1.0) {
    char r1[OPX_PY_REPR_MAX], r2[OPX_PY_REPR_MAX];
    say(msg, msg_len,
        "Total internal reflection: angle %.2f\u00b0 exceeds critical angle "
        "%.2f\u00b0 for n1=%s, n2=%s. No light is transmitted; use "
        "tir_analysis for angles past the critical angle (it gives R = 1 "
        "and the phase shifts).",
        theta_i_deg, critical_deg(n1, n2), opx_py_repr(n1, r1, sizeof(r1)),
        opx_py_repr(n2, r2, sizeof(r2)));
    return -1;
  }
  double r_s, r_p;
  transmit(n1, n2, th, sin_t, out, &r_s, &r_p);
  return 0;
}

int opx_critical_angle(double n1, double n2, double *deg, char *msg,
                       unsigned msg_len) {
  if (check_indices(n1, n2, msg, msg_len) < 0)
    return -1;
  if (n1 <= n2)
    return no_tir(n1, n2, msg, msg_len);
  *deg = critical_deg(n1, n2);
  return 0;
}

double opx_brewster_angle(double n1, double n2) {
  if (!(isfinite(n1) && n1 > 0 && isfinite(n2) && n2 > 0))
    return NAN;
  return atan(n2 / n1) * DEG;
}

int opx_tir_analysis(double n1, double n2, double theta_i_deg,
                     double delta_angle_deg, opx_tir_t *out, char *msg,
                     unsigned msg_len) {
  char r[OPX_PY_REPR_MAX];
  if (check_indices(n1, n2, msg, msg_len) < 0)
    return -1;
  if (n1 <= n2)
    return no_tir(n1, n2, msg, msg_len);
  if (!(isfinite(delta_angle_deg) && delta_angle_deg >= 0)) {
    say(msg, msg_len,
        "delta_angle_deg must be a finite number of degrees, at least 0 "
        "(1.0 by default); got %s.",
        opx_py_repr(delta_angle_deg, r, sizeof(r)));
    return -1;
  }
  double crit = critical_deg(n1, n2);
  int provided = !isnan(theta_i_deg);
  if (!provided) {
    theta_i_deg = crit + delta_angle_deg;
    if (theta_i_deg >= 90) {
      say(msg, msg_len,
          "theta_i_deg was not given, and its default, the critical angle "
          "%.2f\u00b0 plus delta_angle_deg=%s, is not below 90\u00b0; give "
          "a smaller delta_angle_deg or an angle of incidence.",
          crit, opx_py_repr(delta_angle_deg, r, sizeof(r)));
      return -1;
    }
  } else if (check_incidence(theta_i_deg, msg, msg_len) < 0)
    return -1;

  memset(out, 0, sizeof(*out));
  out->n1 = n1;
  out->n2 = n2;
  out->theta_i_deg = theta_i_deg;
  out->delta_angle_deg = delta_angle_deg;
  out->angle_provided = provided;
  out->tir_angle_deg = crit;
  out->brewster_angle_deg = opx_brewster_angle(n1, n2);
  out->near_tir = fabs(theta_i_deg - crit) <= delta_angle_deg;
  out->near_brewster =
      fabs(theta_i_deg - out->brewster_angle_deg) <= delta_angle_deg;

  double th = theta_i_deg / DEG, n = n1 / n2, sin_t = n * sin(th);
  if (fabs(sin_t) <= 1.0) {
    /* Below the critical angle the reflected amplitudes are real: their
     * sign is the whole phase, 180 degrees where negative. r_p changes
     * sign at Brewster's angle (the p-phase flip). */
    double r_s, r_p;
    opx_fresnel_t f;
    transmit(n1, n2, th, sin_t, &f, &r_s, &r_p);
    out->tir = 0;
    out->t_s = f.t_s;
    out->t_p = f.t_p;
    out->r_s = f.r_s;
    out->r_p = f.r_p;
    out->ratio_tp_ts = f.ratio_tp_ts;
    out->theta_t_deg = f.theta_t_deg;
    out->delta_s_deg = r_s >= 0 ? 0.0 : 180.0;
    out->delta_p_deg = r_p >= 0 ? 0.0 : 180.0;
  } else {
    /* Past it, all the light is reflected and each polarisation gains a
     * phase: tan(ds/2) = sqrt(n^2 sin^2 - 1) / (n cos), tan(dp/2) =
     * n^2 tan(ds/2), with n = n1 / n2. */
    double half_s = sqrt(sin_t * sin_t - 1.0) / (n * cos(th));
    out->tir = 1;
    out->t_s = out->t_p = out->ratio_tp_ts = out->theta_t_deg = NAN;
    out->r_s = out->r_p = 1.0;
    out->delta_s_deg = 2.0 * atan(half_s) * DEG;
    out->delta_p_deg = 2.0 * atan(n * n * half_s) * DEG;
  }
  out->delta_relative_deg = out->delta_p_deg - out->delta_s_deg;
  return 0;
}

/* A number, or null where Python has None or JSON has no number. */
static void put_num(json_object *o, const char *key, double v) {
  json_object_object_add(o, key,
                         isfinite(v) ? json_object_new_double(v) : NULL);
}

/* The 6 keys of fresnel_transmittances, which tir_analysis has too. */
static void put_powers(json_object *o, const opx_fresnel_t *f) {
  put_num(o, "T_s", f->t_s);
  put_num(o, "T_p", f->t_p);
  put_num(o, "R_s", f->r_s);
  put_num(o, "R_p", f->r_p);
  put_num(o, "ratio_Tp_Ts", f->ratio_tp_ts);
  put_num(o, "theta_t_deg", f->theta_t_deg);
}

json_object *opx_fresnel_json(const opx_fresnel_t *f) {
  json_object *o = json_object_new_object();
  put_powers(o, f);
  return o;
}

json_object *opx_tir_json(const opx_tir_t *t) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "regime",
                         json_object_new_string(t->tir ? "tir" : "refraction"));
  json_object_object_add(o, "near_tir", json_object_new_boolean(t->near_tir));
  json_object_object_add(o, "near_brewster",
                         json_object_new_boolean(t->near_brewster));
  json_object_object_add(o, "angle_provided",
                         json_object_new_boolean(t->angle_provided));
  put_num(o, "n1", t->n1);
  put_num(o, "n2", t->n2);
  put_num(o, "theta_i_deg", t->theta_i_deg);
  put_num(o, "tir_angle_deg", t->tir_angle_deg);
  put_num(o, "brewster_angle_deg", t->brewster_angle_deg);
  put_num(o, "delta_angle_deg", t->delta_angle_deg);
  put_powers(o, &(opx_fresnel_t){.t_s = t->t_s,
                                 .t_p = t->t_p,
                                 .r_s = t->r_s,
                                 .r_p = t->r_p,
                                 .ratio_tp_ts = t->ratio_tp_ts,
                                 .theta_t_deg = t->theta_t_deg});
  put_num(o, "delta_s_deg", t->delta_s_deg);
  put_num(o, "delta_p_deg", t->delta_p_deg);
  put_num(o, "delta_relative_deg", t->delta_relative_deg);
  return o;
}
