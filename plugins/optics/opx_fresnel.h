/* opx: Fresnel's equations at a planar interface between two dielectrics,
 * the critical and Brewster angles and the phase shifts of total internal
 * reflection: the standalone tools fresnel_transmittances, tir_analysis,
 * critical_angle and brewster_angle. Pure functions; angles in degrees.
 * The simulator's own coefficients (optics/glass.c) agree with these. */
#ifndef ATL_OPX_FRESNEL_H
#define ATL_OPX_FRESNEL_H

#include <stddef.h>

#include <json-c/json.h>

typedef struct {
  double t_s, t_p, r_s, r_p;
  double ratio_tp_ts; /* T_p / T_s; INFINITY when T_s <= 1e-10 */
  double theta_t_deg;
} opx_fresnel_t;

/* Every function below that takes msg writes a NUL-terminated message
 * into the caller's buffer msg (msg_len bytes, truncated to fit; msg may
 * be NULL when msg_len is 0) when it returns -1: ray_tracing_shapely's
 * wording where it has one, followed by what the caller should do
 * instead. Bad inputs fail the same way: n1 and n2 must be finite and
 * > 0, angles finite, theta_i_deg in [0, 90).
 *
 * 0, or -1 on total internal reflection, with the message (as
 * ray_tracing_shapely words it) in msg. */
int opx_fresnel(double n1, double n2, double theta_i_deg, opx_fresnel_t *out,
                char *msg, unsigned msg_len);
/* 0 and *deg, or -1 when n1 <= n2 (no TIR) with the message in msg. */
int opx_critical_angle(double n1, double n2, double *deg, char *msg,
                       unsigned msg_len);
/* NaN when n1 or n2 is not a finite number > 0. */
double opx_brewster_angle(double n1, double n2);

typedef struct {
  int tir; /* the regime: 1 'tir', 0 'refraction' */
  int near_tir, near_brewster, angle_provided;
  double n1, n2, theta_i_deg, tir_angle_deg, brewster_angle_deg,
      delta_angle_deg;
  /* NaN where ray_tracing_shapely gives None (T_s, T_p, ratio and
   * theta_t under TIR). */
  double t_s, t_p, r_s, r_p, ratio_tp_ts, theta_t_deg;
  double delta_s_deg, delta_p_deg, delta_relative_deg;
} opx_tir_t;

/* tir_analysis: theta_i_deg NaN means "not given" (critical + delta).
 * 0, or -1 when n1 <= n2 with the message in msg. */
int opx_tir_analysis(double n1, double n2, double theta_i_deg,
                     double delta_angle_deg, opx_tir_t *out, char *msg,
                     unsigned msg_len);

/* The JSON of the tools: fresnel_transmittances' 6 keys and
 * tir_analysis' 19 keys in ray_tracing_shapely's order, with null where
 * it gives None and where a value is not finite (JSON has no infinity:
 * ratio_Tp_Ts is null when T_s <= 1e-10). New objects the caller puts. */
json_object *opx_fresnel_json(const opx_fresnel_t *f);
json_object *opx_tir_json(const opx_tir_t *t);

/* Writes v as Python's repr(float) does (shortest round-trip digits,
 * "1.0" for an integer, "1e-05" and "1e+16" outside [1e-4, 1e16),
 * "nan", "inf") into buf of len bytes (OPX_PY_REPR_MAX always fits) and
 * returns buf; the error messages print refractive indices that way. */
#define OPX_PY_REPR_MAX 32
char *opx_py_repr(double v, char *buf, size_t len);

#endif
