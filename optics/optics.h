/* The optics simulator's API for its callers (the CLI, the optics plugin,
 * the tests): load a Ray Optics Simulation scene (op.h), run it
 * (atl__op_sim_run), and read its detectors. */
#ifndef ATL_OPTICS_OPTICS_H
#define ATL_OPTICS_OPTICS_H

#include "op.h"

/* A Detector's readings after a simulation: power P = sum of +-(s + p),
 * the normal force sum of +-sin(theta) (s + p) and the shear
 * -sum of +-cos(theta) (s + p), the sign by the side crossed from.
 * -EINVAL if o is not a Detector. */
int atl_optics_detector_reading(const atl_op_obj *o, double *power,
                                double *normal, double *shear);

/* A Detector's irradiance map as upstream's CSV: "Position,Irradiance",
 * then one row per bin, "\n"-separated, no final newline, numbers as
 * JavaScript writes them. malloc'd (caller frees); NULL if o is not a
 * Detector with irradMap, or out of memory. */
char *atl_optics_detector_csv(const atl_op_obj *o);

/* Whether the ray passes a BaseFilter's wavelength test. */
int atl__op_filter_passes(const atl_op_sim *sim, int filter, int invert,
                          double wavelength, double bandwidth,
                          const atl_op_ray *r);

#endif
