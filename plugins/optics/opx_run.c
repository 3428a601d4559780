/* A run: the session's scene loaded, simulated and indexed for the tools
 * (opx_run.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opx_db.h"
#include "opx_run.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The scene without the agent's names: the simulator refuses fields it
 * does not know, as Ray Optics Simulation's format has no names. A new
 * object the caller puts, or NULL when out of memory. */
static json_object *without_names(json_object *doc) {
  json_object *copy = NULL, *objs;
  if (json_object_deep_copy(doc, &copy, NULL) != 0)
    return NULL;
  if (json_object_object_get_ex(copy, "objs", &objs) &&
      json_object_is_type(objs, json_type_array))
    for (size_t i = 0; i < json_object_array_length(objs); i++) {
      json_object *o = json_object_array_get_idx(objs, i);
      if (json_object_is_type(o, json_type_object))
        json_object_object_del(o, "name");
    }
  return copy;
}

/* Loads doc into run->scene and simulates it into run->sim, timing both:
 * the part of a run every caller needs. 0, or a negative errno with *err
 * (the loader's message, or the simulation's own reason: too many source
 * rays, out of memory). run's other parts are left alone. */
static int load_and_simulate(json_object *doc, long ray_limit, int record,
                             opx_run_t *run, char **err) {
  json_object *plain = without_names(doc);
  if (plain == NULL)
    return -ENOMEM;
  double t0 = now_ms();
  int rc = atl__op_scene_load(plain, &run->scene, err);
  json_object_put(plain);
  if (rc != 0)
    return rc;
  double t1 = now_ms();
  run->load_ms = t1 - t0;
  rc = atl__op_sim_run(run->scene, ray_limit, record, &run->sim);
  run->simulate_ms = now_ms() - t1;
  if (rc != 0 && run->sim != NULL && run->sim->error != NULL)
    *err = strdup(run->sim->error);
  return rc;
}

int opx_run_check(json_object *doc, char **err) {
  *err = NULL;
  opx_run_t run = {0};
  int rc = load_and_simulate(doc, 1, 0, &run, err);
  atl__op_sim_free(run.sim);
  atl__op_scene_free(run.scene);
  return rc;
}

int opx_run_build(json_object *doc, long ray_limit, opx_run_t **out,
                  char **err) {
  *out = NULL;
  *err = NULL;
  opx_run_t *run = calloc(1, sizeof(*run));
  if (run == NULL)
    return -ENOMEM;
  int rc = load_and_simulate(doc, ray_limit, 1, run, err);
  if (rc != 0) {
    opx_run_free(run);
    return rc;
  }
  json_object *objs = NULL;
  json_object_object_get_ex(doc, "objs", &objs);
  rc = opx_geom_build(run->scene, objs, &run->geom);
  if (rc == 0)
    rc = opx_tree_build(run->sim->segs, run->sim->nsegs, &run->tree);
  if (rc == 0) {
    /* The simulator names hit objects by optical index; the tools by
     * their place in the geometry, which holds every object. */
    long n = run->sim->nsegs;
    int *by_optical = calloc((size_t)run->scene->noptical + 1, sizeof(int));
    run->end_obj = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (by_optical == NULL || run->end_obj == NULL)
      rc = -ENOMEM;
    else {
      for (int i = 0; i < run->scene->noptical; i++)
        by_optical[i] = opx_geom_index_of(run->geom, run->scene->optical[i]);
      for (long i = 0; i < n; i++) {
        int h = run->sim->segs[i].hit_obj;
        run->end_obj[i] =
            h >= 0 && h < run->scene->noptical ? by_optical[h] : -1;
      }
    }
    free(by_optical);
  }
  if (rc != 0) {
    opx_run_free(run);
    return rc;
  }
  *out = run;
  return 0;
}

opx_db_t *opx_run_db(opx_run_t *run) {
  if (run->db != NULL || run->db_error != NULL)
    return run->db;
  double t0 = now_ms();
  if (opx_db_build(run, &run->db, &run->db_error) != 0 && run->db_error == NULL)
    run->db_error = strdup("out of memory");
  run->db_ms = now_ms() - t0;
  return run->db;
}

void opx_run_free(opx_run_t *run) {
  if (run == NULL)
    return;
  if (run->db != NULL)
    opx_db_free(run->db);
  free(run->db_error);
  free(run->end_obj);
  opx_tree_free(&run->tree);
  opx_geom_free(run->geom);
  atl__op_sim_free(run->sim);
  atl__op_scene_free(run->scene);
  free(run);
}
