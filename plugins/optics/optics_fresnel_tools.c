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

int opx_tool_fresnel(atl_call_t *call) {
  opx_fresnel_t f;
  char msg[512];
  if (opx_fresnel(num_arg(call->args, "n1"), num_arg(call->args, "n2"),
                  num_arg(call->args, "theta_i_deg"), &f, msg,
                  sizeof(msg)) != 0)
    return call->host->call_error(call, "%s", msg);
  return call->host->call_result(call, opx_fresnel_json(&f));
}

int opx_tool_tir(atl_call_t *call) {
  opx_tir_t t;
  char msg[512];
  json_object *d = json_object_object_get(call->args, "delta_angle_deg");
  if (opx_tir_analysis(num_arg(call->args, "n1"), num_arg(call->args, "n2"),
                       num_arg(call->args, "theta_i_deg"),
                       d ? json_object_get_double(d) : 1.0, &t, msg,
                       sizeof(msg)) != 0)
    return call->host->call_error(call, "%s", msg);
  return call->host->call_result(call, opx_tir_json(&t));
}

int opx_tool_critical(atl_call_t *call) {
  double deg;
  char msg[512];
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
