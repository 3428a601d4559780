/* opx: Fresnel's equations at a planar interface between two dielectrics,
 * the critical and Brewster angles and the phase shifts of total internal
 * reflection: the standalone tools fresnel_transmittances, tir_analysis,
 * critical_angle and brewster_angle. Pure functions; angles in degrees.
 * The simulator's own coefficients (optics/glass.c) agree with these. */
#ifndef ATL_OPX_FRESNEL_H
#define ATL_OPX_FRESNEL_H

typedef struct {
  double t_s, t_p, r_s, r_p;
  double ratio_tp_ts; /* T_p / T_s; INFINITY when T_s <= 1e-10 */
  double theta_t_deg;
} opx_fresnel_t;

/* 0, or -1 on total internal reflection, with the message (as
 * ray_tracing_shapely words it) in msg. */
int opx_fresnel(double n1, double n2, double theta_i_deg, opx_fresnel_t *out,
                char *msg, unsigned msg_len);
/* 0 and *deg, or -1 when n1 <= n2 (no TIR) with the message in msg. */
int opx_critical_angle(double n1, double n2, double *deg, char *msg,
                       unsigned msg_len);
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

#endif
