/* opx: one simulation of a session's optical bench and everything the
 * tools derive from it: the loaded scene, its recorded segments, the
 * geometry, the lineage tree and the ray database. A run is built from
 * the session's "optics" namespace and reused until the namespace
 * changes, so query_rays, the lineage tools and render_optics all see
 * the same rays.
 *
 * Ownership: a run owns all of its parts; opx_run_free() frees them. */
#ifndef ATL_OPX_RUN_H
#define ATL_OPX_RUN_H

#include <json-c/json.h>

#include "opx_geom.h"
#include "opx_lineage.h"
#include "op.h"

typedef struct opx_db opx_db_t;

typedef struct {
  atl_op_scene *scene;
  atl_op_sim *sim; /* sim->segs[0 .. sim->nsegs) */
  opx_geom_t *geom;
  opx_tree_t tree;
  opx_db_t *db;   /* NULL until a tool needs it (opx_run_db) */
  char *db_error; /* why the database could not be built, or NULL */
  /* Per segment: the object index (into geom) its end point is on, or
   * -1 when it left the scene: the simulator's hit_obj, translated. */
  int *end_obj;
  double load_ms, simulate_ms, db_ms;
} opx_run_t;

/* Loads doc (a Ray Optics Simulation scene whose objects may carry the
 * agent's "name", which the simulator does not know and never sees) and
 * simulates it, recording at most ray_limit segments. 0, or a negative
 * errno with *err (malloc'd) saying what is wrong in the scene. doc is
 * only read, and not kept. */
int opx_run_build(json_object *doc, long ray_limit, opx_run_t **out,
                  char **err);
void opx_run_free(opx_run_t *run);

/* Whether doc loads and starts simulating (its sources' rays within the
 * simulator's limits), without recording segments or building anything
 * the tools use: the check of every edit. 0, or a negative errno with
 * *err (malloc'd) as opx_run_build gives it. */
int opx_run_check(json_object *doc, char **err);

/* The run's database, built on first use (it costs more than the
 * simulation of a large scene, and many turns never query). NULL when it
 * could not be built, with the reason in run->db_error. */
opx_db_t *opx_run_db(opx_run_t *run);

#endif
