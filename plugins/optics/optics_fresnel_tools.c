/* The standalone tools over Fresnel's equations (opx_fresnel.h): they
 * need no bench, and their arguments are already checked by their schemas
 * (indices in (0, 100], angles in [0, 90)). */
#include <math.h>
#include <stdio.h>

#include "opx_tools.h"
#include "opx_fresnel.h"

static double num_arg(json_object *args, const char *name) {
  json_object *v;
  return json_object_object_get_ex(args, name, &v) ? json_object_get_double(v)
                                                   : NAN;
}

/* A value, or null where there is none (NaN: "not defined here"). */
static json_object *maybe(double v) {
  return isnan(v) ? NULL : opx_json_num(v);
}

int opx_tool_fresnel(atl_call_t *call) {
  opx_fresnel_t f;
  char msg[256];
  if (opx_fresnel(num_arg(call->args, "n1"), num_arg(call->args, "n2"),
                  num_arg(call->args, "theta_i_deg"), &f, msg,
                  sizeof(msg)) != 0)
    return call->host->call_error(call, "%s", msg);
  json_object *r = json_object_new_object();
  json_object_object_add(r, "T_s", opx_json_num(f.t_s));
  json_object_object_add(r, "T_p", opx_json_num(f.t_p));
  json_object_object_add(r, "R_s", opx_json_num(f.r_s));
  json_object_object_add(r, "R_p", opx_json_num(f.r_p));
  /* JSON has no infinity: null when T_s is 0 (grazing incidence). */
  json_object_object_add(r, "ratio_Tp_Ts", opx_json_num(f.ratio_tp_ts));
  json_object_object_add(r, "theta_t_deg", opx_json_num(f.theta_t_deg));
  return call->host->call_result(call, r);
}

int opx_tool_tir(atl_call_t *call) {
  opx_tir_t t;
  char msg[256];
  json_object *d = json_object_object_get(call->args, "delta_angle_deg");
  if (opx_tir_analysis(num_arg(call->args, "n1"), num_arg(call->args, "n2"),
                       num_arg(call->args, "theta_i_deg"),
                       d ? json_object_get_double(d) : 1.0, &t, msg,
                       sizeof(msg)) != 0)
    return call->host->call_error(call, "%s", msg);
  json_object *r = json_object_new_object();
  json_object_object_add(r, "regime",
                         json_object_new_string(t.tir ? "tir" : "refraction"));
  json_object_object_add(r, "near_tir", json_object_new_boolean(t.near_tir));
  json_object_object_add(r, "near_brewster",
                         json_object_new_boolean(t.near_brewster));
  json_object_object_add(r, "angle_provided",
                         json_object_new_boolean(t.angle_provided));
  json_object_object_add(r, "n1", opx_json_num(t.n1));
  json_object_object_add(r, "n2", opx_json_num(t.n2));
  json_object_object_add(r, "theta_i_deg", opx_json_num(t.theta_i_deg));
  json_object_object_add(r, "tir_angle_deg", opx_json_num(t.tir_angle_deg));
  json_object_object_add(r, "brewster_angle_deg",
                         opx_json_num(t.brewster_angle_deg));
  json_object_object_add(r, "delta_angle_deg", opx_json_num(t.delta_angle_deg));
  json_object_object_add(r, "T_s", maybe(t.t_s));
  json_object_object_add(r, "T_p", maybe(t.t_p));
  json_object_object_add(r, "R_s", maybe(t.r_s));
  json_object_object_add(r, "R_p", maybe(t.r_p));
  json_object_object_add(r, "ratio_Tp_Ts", maybe(t.ratio_tp_ts));
  json_object_object_add(r, "theta_t_deg", maybe(t.theta_t_deg));
  json_object_object_add(r, "delta_s_deg", maybe(t.delta_s_deg));
  json_object_object_add(r, "delta_p_deg", maybe(t.delta_p_deg));
  json_object_object_add(r, "delta_relative_deg", maybe(t.delta_relative_deg));
  return call->host->call_result(call, r);
}

int opx_tool_critical(atl_call_t *call) {
  double deg;
  char msg[256];
  if (opx_critical_angle(num_arg(call->args, "n1"), num_arg(call->args, "n2"),
                         &deg, msg, sizeof(msg)) != 0)
    return call->host->call_error(call, "%s", msg);
  json_object *r = json_object_new_object();
  json_object_object_add(r, "critical_angle_deg", opx_json_num(deg));
  return call->host->call_result(call, r);
}

int opx_tool_brewster(atl_call_t *call) {
  json_object *r = json_object_new_object();
  json_object_object_add(
      r, "brewster_angle_deg",
      opx_json_num(opx_brewster_angle(num_arg(call->args, "n1"),
                                      num_arg(call->args, "n2"))));
  return call->host->call_result(call, r);
}
