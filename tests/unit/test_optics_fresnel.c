/* The Fresnel tools (plugins/optics/opx_fresnel.c) against the numeric
 * reference cases of ray_tracing_shapely (../shared/anchors/ray-optics.md
 * section 8, rounded there to 6 decimals, hence the 1e-6 tolerance) and
 * its error texts. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "opx_fresnel.h"

#define TOL 1e-6

static opx_fresnel_t fresnel(double n1, double n2, double deg) {
  opx_fresnel_t f;
  char msg[512] = "";
  cr_assert_eq(opx_fresnel(n1, n2, deg, &f, msg, sizeof(msg)), 0, "%s", msg);
  /* Whatever the case, the energy splits between the two beams. */
  cr_assert_float_eq(f.t_s + f.r_s, 1.0, 1e-12);
  cr_assert_float_eq(f.t_p + f.r_p, 1.0, 1e-12);
  return f;
}

/* Section 8's fresnel(n1, n2, theta) rows; NAN where the row gives no
 * figure. */
#define NA NAN
static const struct {
  double n1, n2, deg, t_s, t_p, r_s, r_p, ratio, theta_t;
} fresnel_cases[] = {
    {1.0, 1.5, 0, 0.96, 0.96, 0.04, 0.04, 1.0, 0.0},
    {1.0, 1.5, 30, 0.942204, 0.974751, 0.057796, 0.025249, 1.034543, 19.471221},
    {1.0, 1.5, 45, 0.907987, 0.991534, 0.092013, 0.008466, NA, 28.125506},
    {1.0, 1.5, 60, 0.823429, 0.998198, NA, NA, NA, 35.26439},
    /* Brewster's angle: no p reflection. */
    {1.0, 1.5, 56.309932, 0.852071, NA, NA, 0.0, NA, 33.690068},
    {1.0, 1.5, 85, 0.267655, 0.506746, NA, NA, 1.893285, NA},
    {1.0, 1.5, 89, 0.060528, 0.131102, NA, NA, NA, NA},
    {1.5, 1.0, 30, 0.894227, 0.995392, NA, NA, NA, 48.590378},
    {1.5, 1.0, 40, 0.609482, 0.899936, NA, NA, 1.476559, 74.618568},
    {1.72, 1.52, 30, 0.992581, 0.998612, NA, NA, NA, 34.457132},
};

static void near(double got, double want, unsigned i, const char *what) {
  if (!isnan(want))
    cr_assert_float_eq(got, want, TOL, "case %u %s: %.9f, not %.6f", i, what,
                       got, want);
}

Test(optics_fresnel, reference_cases) {
  for (unsigned i = 0; i < sizeof(fresnel_cases) / sizeof(fresnel_cases[0]);
       i++) {
    opx_fresnel_t f =
        fresnel(fresnel_cases[i].n1, fresnel_cases[i].n2, fresnel_cases[i].deg);
    near(f.t_s, fresnel_cases[i].t_s, i, "T_s");
    near(f.t_p, fresnel_cases[i].t_p, i, "T_p");
    near(f.r_s, fresnel_cases[i].r_s, i, "R_s");
    near(f.r_p, fresnel_cases[i].r_p, i, "R_p");
    near(f.ratio_tp_ts, fresnel_cases[i].ratio, i, "ratio");
    near(f.theta_t_deg, fresnel_cases[i].theta_t, i, "theta_t");
  }
}

Test(optics_fresnel, energy_splits_at_every_angle) {
  for (int d = 0; d < 90; d++) {
    fresnel(1.0, 1.5, d);
    fresnel(1.33, 1.0, d * 48.0 / 90); /* below water's critical angle */
  }
}

/* ray_tracing_shapely's ValueError text, then what to do instead. */
Test(optics_fresnel, tir_message) {
  opx_fresnel_t f;
  char msg[512];
  cr_assert_eq(opx_fresnel(1.5, 1.0, 60, &f, msg, sizeof(msg)), -1);
  const char *want = "Total internal reflection: angle 60.00\u00b0 exceeds "
                     "critical angle 41.81\u00b0 for n1=1.5, n2=1.0.";
  cr_assert(strncmp(msg, want, strlen(want)) == 0, "%s", msg);
  cr_assert_str_eq(msg, "Total internal reflection: angle 60.00\u00b0 exceeds "
                        "critical angle 41.81\u00b0 for n1=1.5, n2=1.0. No "
                        "light is transmitted; use tir_analysis for angles "
                        "past the critical angle (it gives R = 1 and the "
                        "phase shifts).");
  /* A short buffer gets a truncated, terminated message. */
  char small[10];
  cr_assert_eq(opx_fresnel(1.5, 1.0, 60, &f, small, sizeof(small)), -1);
  cr_assert_str_eq(small, "Total int");
  cr_assert_eq(opx_fresnel(1.5, 1.0, 60, &f, NULL, 0), -1);
}

static void fresnel_fails(double n1, double n2, double deg, const char *want) {
  opx_fresnel_t f;
  char msg[512] = "";
  cr_assert_eq(opx_fresnel(n1, n2, deg, &f, msg, sizeof(msg)), -1);
  cr_assert_str_eq(msg, want);
}

Test(optics_fresnel, bad_inputs) {
  fresnel_fails(NAN, 1.5, 30,
                "n1 must be a refractive index: a finite number greater "
                "than 0 (1.0 for air, about 1.5 for glass); got nan.");
  fresnel_fails(1.0, -1.5, 30,
                "n2 must be a refractive index: a finite number greater "
                "than 0 (1.0 for air, about 1.5 for glass); got -1.5.");
  fresnel_fails(1.0, 0.0, 30,
                "n2 must be a refractive index: a finite number greater "
                "than 0 (1.0 for air, about 1.5 for glass); got 0.0.");
  fresnel_fails(INFINITY, 1.5, 30,
                "n1 must be a refractive index: a finite number greater "
                "than 0 (1.0 for air, about 1.5 for glass); got inf.");
  fresnel_fails(1.0, 1.5, 90,
                "theta_i_deg must be an angle of incidence from the normal, "
                "in degrees, at least 0 and below 90; got 90.0.");
  fresnel_fails(1.0, 1.5, -1,
                "theta_i_deg must be an angle of incidence from the normal, "
                "in degrees, at least 0 and below 90; got -1.0.");
  fresnel_fails(1.0, 1.5, NAN,
                "theta_i_deg must be an angle of incidence from the normal, "
                "in degrees, at least 0 and below 90; got nan.");
}

Test(optics_fresnel, critical_angle) {
  static const struct {
    double n1, n2, deg;
  } cases[] = {{1.5, 1, 41.810315},
               {1.72, 1.52, 62.094527},
               {1.785, 1.5, 57.175632},
               {1.33, 1, 48.753467},
               /* prisms' tir_utils.critical_angle(n_sample 1.333,
                * n_prism 1.72), its arguments the other way round */
               {1.72, 1.333, 50.805033}};
  for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    double deg = 0;
    char msg[512] = "";
    cr_assert_eq(
        opx_critical_angle(cases[i].n1, cases[i].n2, &deg, msg, sizeof(msg)), 0,
        "%s", msg);
    cr_assert_float_eq(deg, cases[i].deg, TOL, "case %u: %.9f", i, deg);
  }
}

Test(optics_fresnel, critical_angle_refusals) {
  double deg = -1;
  char msg[512];
  cr_assert_eq(opx_critical_angle(1, 1.5, &deg, msg, sizeof(msg)), -1);
  cr_assert_eq(deg, -1); /* untouched */
  cr_assert_str_eq(msg,
                   "No TIR possible: n1=1.0 must be greater than n2=1.5. "
                   "Total internal reflection only happens going from the "
                   "denser medium into the rarer one: swap them (n1=1.5, "
                   "n2=1.0), or use fresnel_transmittances for light going "
                   "this way.");
  cr_assert_eq(opx_critical_angle(1.5, 1.5, &deg, msg, sizeof(msg)), -1);
  cr_assert(strncmp(msg,
                    "No TIR possible: n1=1.5 must be greater than n2=1.5. "
                    "Equal indices",
                    66) == 0,
            "%s", msg);
  cr_assert_eq(opx_critical_angle(1.5, NAN, &deg, msg, sizeof(msg)), -1);
  cr_assert(strncmp(msg, "n2 must be a refractive index", 29) == 0);
}

Test(optics_fresnel, brewster_angle) {
  cr_assert_float_eq(opx_brewster_angle(1, 1.5), 56.309932, TOL);
  cr_assert_float_eq(opx_brewster_angle(1.5, 1), 33.690068, TOL);
  cr_assert_float_eq(opx_brewster_angle(1.72, 1.52), 41.467705, TOL);
  cr_assert(isnan(opx_brewster_angle(-1, 1.5)));
  cr_assert(isnan(opx_brewster_angle(1, NAN)));
  cr_assert(isnan(opx_brewster_angle(1, 0)));
}

static opx_tir_t tir(double n1, double n2, double deg, double delta) {
  opx_tir_t t;
  char msg[512] = "";
  cr_assert_eq(opx_tir_analysis(n1, n2, deg, delta, &t, msg, sizeof(msg)), 0,
               "%s", msg);
  cr_assert_float_eq(t.delta_relative_deg, t.delta_p_deg - t.delta_s_deg,
                     1e-12);
  return t;
}

Test(optics_tir, refraction_regime) {
  opx_tir_t t = tir(1.72, 1.52, 30, 1.0);
  cr_assert_eq(t.tir, 0);
  cr_assert(t.angle_provided);
  cr_assert_float_eq(t.t_s, 0.992581, TOL);
  cr_assert_float_eq(t.t_s + t.r_s, 1.0, 1e-12);
  cr_assert_float_eq(t.t_p + t.r_p, 1.0, 1e-12);
  cr_assert_float_eq(t.theta_t_deg, 34.457132, TOL);
  cr_assert_eq(t.delta_s_deg, 0.0);
  cr_assert_eq(t.delta_p_deg, 180.0);
  cr_assert_eq(t.delta_relative_deg, 180.0);
  cr_assert_float_eq(t.tir_angle_deg, 62.094527, TOL);
  cr_assert_float_eq(t.brewster_angle_deg, 41.467705, TOL);
  cr_assert_not(t.near_tir);
  cr_assert_not(t.near_brewster);
}

Test(optics_tir, tir_regime) {
  opx_tir_t t = tir(1.72, 1.52, 75, 1.0);
  cr_assert_eq(t.tir, 1);
  cr_assert_float_eq(t.delta_s_deg, 112.851751, TOL);
  cr_assert_float_eq(t.delta_p_deg, 125.198973, TOL);
  cr_assert_float_eq(t.delta_relative_deg, 12.347222, TOL);
  /* None in ray_tracing_shapely: nothing is transmitted. */
  cr_assert(isnan(t.t_s) && isnan(t.t_p));
  cr_assert(isnan(t.ratio_tp_ts) && isnan(t.theta_t_deg));
  cr_assert_eq(t.r_s, 1.0);
  cr_assert_eq(t.r_p, 1.0);

  t = tir(1.5, 1.0, 80, 1.0);
  cr_assert_float_eq(t.delta_s_deg, 153.055607, TOL);
  cr_assert_float_eq(t.delta_p_deg, 167.84482, TOL);
}

Test(optics_tir, default_angle) {
  opx_tir_t t = tir(1.5, 1.0, NAN, 2.0);
  cr_assert_not(t.angle_provided);
  cr_assert_float_eq(t.theta_i_deg, 43.810315, TOL);
  cr_assert_eq(t.tir, 1);
  cr_assert(t.near_tir);
  cr_assert_not(t.near_brewster);
  cr_assert_float_eq(t.delta_s_deg, 28.987124, TOL);
  cr_assert_float_eq(t.delta_p_deg, 60.366264, TOL);
  cr_assert_eq(t.delta_angle_deg, 2.0);
}

/* The tool's case: Flint (1.72) over Crown (1.52), no angle. */
Test(optics_tir, flint_over_crown) {
  opx_tir_t t = tir(1.72, 1.52, NAN, 1.0);
  cr_assert_float_eq(t.theta_i_deg, 63.094527, TOL);
  cr_assert_eq(t.tir, 1);
  cr_assert(t.near_tir);
  cr_assert_float_eq(t.delta_s_deg, 29.568556, TOL);
  cr_assert_float_eq(t.delta_p_deg, 37.344248, TOL);
}

/* Just past the critical angle the phases start from 0: continuity. */
Test(optics_tir, continuity_at_the_critical_angle) {
  /* The exact critical angle: so close to it the phase grows like the
   * square root of the distance, and the table's rounded 41.810315 would
   * move it by 1e-5. */
  double crit = 0;
  cr_assert_eq(opx_critical_angle(1.5, 1.0, &crit, NULL, 0), 0);
  opx_tir_t t = tir(1.5, 1.0, crit + 0.01, 1.0);
  cr_assert_eq(t.tir, 1);
  cr_assert_float_eq(t.delta_s_deg, 2.02491, TOL);
  cr_assert_lt(t.delta_s_deg, 5);
  cr_assert_gt(t.delta_s_deg, 0);
  cr_assert_gt(t.delta_p_deg, t.delta_s_deg);
}

/* r_p changes sign at Brewster's angle: 180 degrees below, 0 above. */
Test(optics_tir, brewster_flip) {
  double b = opx_brewster_angle(1.5, 1.0);
  opx_tir_t t = tir(1.5, 1.0, b - 2, 1.0);
  cr_assert_eq(t.tir, 0);
  cr_assert_float_eq(t.theta_i_deg, 31.690068, TOL);
  cr_assert_eq(t.delta_p_deg, 180.0);
  cr_assert_float_eq(t.r_s, 0.121925, TOL);
  cr_assert_not(t.near_brewster);
  t = tir(1.5, 1.0, b + 2, 1.0);
  cr_assert_eq(t.tir, 0);
  cr_assert_eq(t.delta_p_deg, 0.0);
  t = tir(1.5, 1.0, b + 0.5, 1.0);
  cr_assert(t.near_brewster);
}

static void tir_fails(double n1, double n2, double deg, double delta,
                      const char *want) {
  opx_tir_t t;
  char msg[512] = "";
  cr_assert_eq(opx_tir_analysis(n1, n2, deg, delta, &t, msg, sizeof(msg)), -1);
  cr_assert(strncmp(msg, want, strlen(want)) == 0, "%s", msg);
}

Test(optics_tir, refusals) {
  /* It names n1 and n2 as ray_tracing_shapely does. */
  tir_fails(1.0, 1.5, 30, 1.0,
            "No TIR possible: n1=1.0 must be greater than n2=1.5. Total "
            "internal reflection only happens going from the denser medium "
            "into the rarer one: swap them (n1=1.5, n2=1.0)");
  tir_fails(1.52, 1.72, NAN, 1.0,
            "No TIR possible: n1=1.52 must be greater than n2=1.72.");
  tir_fails(-1.5, 1.0, 30, 1.0, "n1 must be a refractive index");
  tir_fails(1.5, 1.0, 90, 1.0,
            "theta_i_deg must be an angle of incidence from the normal");
  tir_fails(1.5, 1.0, INFINITY, 1.0, "theta_i_deg must be an angle");
  tir_fails(1.5, 1.0, 30, NAN,
            "delta_angle_deg must be a finite number of degrees, at least 0 "
            "(1.0 by default); got nan.");
  tir_fails(1.5, 1.0, 30, -1, "delta_angle_deg must be a finite number");
  tir_fails(1.5, 1.0, NAN, 50,
            "theta_i_deg was not given, and its default, the critical "
            "angle 41.81\u00b0 plus delta_angle_deg=50.0, is not below "
            "90\u00b0");
}

static int has_null(json_object *o, const char *key) {
  json_object *v = (json_object *)0x1;
  return json_object_object_get_ex(o, key, &v) && v == NULL;
}

Test(optics_tir, json_has_the_19_keys) {
  static const char *keys[] = {"regime",
                               "near_tir",
                               "near_brewster",
                               "angle_provided",
                               "n1",
                               "n2",
                               "theta_i_deg",
                               "tir_angle_deg",
                               "brewster_angle_deg",
                               "delta_angle_deg",
                               "T_s",
                               "T_p",
                               "R_s",
                               "R_p",
                               "ratio_Tp_Ts",
                               "theta_t_deg",
                               "delta_s_deg",
                               "delta_p_deg",
                               "delta_relative_deg"};
  opx_tir_t t = tir(1.72, 1.52, 75, 1.0);
  json_object *o = opx_tir_json(&t);
  cr_assert_eq(json_object_object_length(o), 19);
  int k = 0;
  json_object_object_foreach(o, key, val) {
    (void)val;
    cr_assert_str_eq(key, keys[k], "key %d", k);
    k++;
  }
  cr_assert_str_eq(json_object_get_string(json_object_object_get(o, "regime")),
                   "tir");
  cr_assert(has_null(o, "T_s") && has_null(o, "T_p"));
  cr_assert(has_null(o, "ratio_Tp_Ts") && has_null(o, "theta_t_deg"));
  cr_assert_eq(json_object_get_double(json_object_object_get(o, "R_s")), 1.0);
  json_object_put(o);

  t = tir(1.72, 1.52, 30, 1.0);
  o = opx_tir_json(&t);
  cr_assert_str_eq(json_object_get_string(json_object_object_get(o, "regime")),
                   "refraction");
  cr_assert_float_eq(json_object_get_double(json_object_object_get(o, "T_s")),
                     0.992581, TOL);
  json_object_put(o);
}

Test(optics_fresnel, json_has_the_6_keys) {
  opx_fresnel_t f = fresnel(1.0, 1.5, 30);
  json_object *o = opx_fresnel_json(&f);
  cr_assert_eq(json_object_object_length(o), 6);
  cr_assert_float_eq(
      json_object_get_double(json_object_object_get(o, "ratio_Tp_Ts")),
      1.034543, TOL);
  json_object_put(o);
  f.ratio_tp_ts = INFINITY; /* JSON has no infinity */
  o = opx_fresnel_json(&f);
  cr_assert(has_null(o, "ratio_Tp_Ts"));
  json_object_put(o);
}

/* Python's repr(float) for the messages, written out by hand. */
Test(optics_fresnel, python_repr) {
  static const struct {
    double v;
    const char *want;
  } cases[] = {{1.5, "1.5"},
               {1.0, "1.0"},
               {-2.0, "-2.0"},
               {0.0, "0.0"},
               {-0.0, "-0.0"},
               {123.456, "123.456"},
               {0.1 + 0.2, "0.30000000000000004"},
               {0.0001, "0.0001"},
               {0.00001, "1e-05"},
               {0.000012, "1.2e-05"},
               {1e15, "1000000000000000.0"},
               {1e16, "1e+16"},
               {1.5e300, "1.5e+300"},
               {1.7976931348623157e308, "1.7976931348623157e+308"},
               {5e-324, "5e-324"},
               {NAN, "nan"},
               {INFINITY, "inf"},
               {-INFINITY, "-inf"}};
  for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char buf[OPX_PY_REPR_MAX];
    cr_assert_str_eq(opx_py_repr(cases[i].v, buf, sizeof(buf)), cases[i].want);
  }
  char small[4];
  cr_assert_str_eq(opx_py_repr(123.456, small, sizeof(small)), "123");
}
