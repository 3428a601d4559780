/* The tools over a simulation: optics_simulate's summary, query_rays and
 * describe_schema over the ray database, describe_edges over the
 * geometry, and the lineage analyses. Each takes the session's run from
 * the cache (optics.c), which simulates again only when the bench has
 * changed, so every tool answers about the bench as it is now. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opx_db.h"
#include "opx_tools.h"
#include "optics.h"

static int int_arg(json_object *args, const char *name, int def) {
  json_object *v;
  return json_object_object_get_ex(args, name, &v) ? json_object_get_int(v)
                                                   : def;
}

/* ---- optics_simulate ---- */

static json_object *detectors_of(const opx_run_t *run) {
  json_object *list = json_object_new_array();
  for (int i = 0; i < run->geom->nobjs; i++) {
    const opx_obj_t *o = &run->geom->objs[i];
    double p, n, s;
    if (atl_optics_detector_reading(o->o, &p, &n, &s) != 0)
      continue;
    json_object *d = json_object_new_object();
    json_object_object_add(d, "name", json_object_new_string(o->display_name));
    json_object_object_add(d, "power", opx_json_num(p));
    json_object_object_add(d, "normal_force", opx_json_num(n));
    json_object_object_add(d, "shear_force", opx_json_num(s));
    json_object_array_add(list, d);
  }
  return list;
}

static void add_warning(json_object *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_warning(json_object *w, const char *fmt, ...) {
  char *s = NULL;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  if (n >= 0) {
    json_object_array_add(w, json_object_new_string(s));
    free(s);
  }
}

static json_object *warnings_of(const opx_run_t *run, long limit) {
  json_object *w = json_object_new_array();
  const atl_op_sim *sim = run->sim;
  if (sim->warning != NULL)
    add_warning(w, "%s", sim->warning);
  for (int i = 0; i < run->geom->nobjs; i++) {
    const opx_obj_t *o = &run->geom->objs[i];
    if (o->o->error != NULL)
      add_warning(w, "'%s': %s", o->display_name, o->o->error);
    if (o->o->warning != NULL)
      add_warning(w, "'%s': %s", o->display_name, o->o->warning);
  }
  if (sim->stopped)
    add_warning(w,
                "The simulation stopped at its limit of %ld segments, so "
                "the rays and readings are partial: raise ray_limit (at "
                "most 5000000) or lower the ray density",
                limit);
  int sources = 0;
  for (int i = 0; i < run->geom->nobjs; i++)
    sources += run->geom->objs[i].family == OPX_SOURCE;
  if (sources == 0)
    add_warning(w, "The bench has no light source: add a SingleRay, "
                   "PointSource, AngleSource or Beam");
  return w;
}

int opx_tool_simulate(atl_call_t *call) {
  long limit = int_arg(call->args, "ray_limit", OPX_DEFAULT_RAY_LIMIT);
  opx_entry_t *e = opx_acquire(call, limit);
  if (e == NULL)
    return 0;
  const opx_run_t *run = e->run;
  const atl_op_sim *sim = run->sim;
  long kinds[ATL_OP_PASS + 1] = {0};
  for (long i = 0; i < sim->nsegs; i++)
    kinds[sim->segs[i].kind]++;
  json_object *r = json_object_new_object();
  json_object_object_add(r, "segments", json_object_new_int64(sim->nsegs));
  json_object *by = json_object_new_object();
  for (int k = 0; k <= ATL_OP_PASS; k++)
    json_object_object_add(by, opx_kind_name((atl_op_kind)k),
                           json_object_new_int64(kinds[k]));
  json_object_object_add(r, "by_interaction", by);
  json_object_object_add(r, "total_internal_reflections",
                         json_object_new_int64(kinds[ATL_OP_TIR]));
  /* The balance comes from the lineage check, so the summary and
   * check_energy_conservation can never disagree. */
  json_object *check = opx_energy_check(&run->tree);
  json_object *energy = json_object_new_object();
  static const char *const keys[] = {"emitted", "escaped", "absorbed",
                                     "unaccounted"};
  for (int k = 0; k < 4; k++) {
    json_object *v;
    if (json_object_object_get_ex(check, keys[k], &v))
      json_object_object_add(energy, keys[k], json_object_get(v));
  }
  json_object_object_add(energy, "truncated",
                         opx_json_num(sim->total_truncation));
  json_object_object_add(energy, "undefined",
                         opx_json_num(sim->total_undefined));
  json_object_object_add(
      energy, "conserved",
      json_object_get(json_object_object_get(check, "is_valid")));
  json_object_put(check);
  json_object_object_add(r, "energy", energy);
  json_object_object_add(r, "detectors", detectors_of(run));
  json_object_object_add(r, "objects", json_object_new_int(run->geom->nobjs));
  json_object_object_add(r, "stopped_at_ray_limit",
                         json_object_new_boolean(sim->stopped));
  json_object_object_add(r, "ray_limit", json_object_new_int64(e->ray_limit));
  json_object_object_add(r, "warnings", warnings_of(run, e->ray_limit));
  json_object *t = json_object_new_object();
  json_object_object_add(t, "load",
                         opx_json_num(round(run->load_ms * 10) / 10));
  json_object_object_add(t, "simulate",
                         opx_json_num(round(run->simulate_ms * 10) / 10));
  json_object_object_add(r, "time_ms", t);
  json_object_object_add(
      r, "next",
      json_object_new_string("query_rays for any question over the rays "
                             "(describe_schema lists the columns), "
                             "describe_edges for an object's edge labels, "
                             "render_optics to see them"));
  opx_release(call->plugin_state, e);
  return call->host->call_result(call, r);
}

/* ---- the ray database ---- */

/* The session's database, or NULL after reporting why there is none. */
static opx_db_t *db_of(atl_call_t *call, opx_entry_t *e) {
  opx_db_t *db = opx_run_db(e->run);
  if (db == NULL)
    call->host->call_error(call, "The ray database could not be built: %s",
                           e->run->db_error ? e->run->db_error : "unknown");
  return db;
}

int opx_tool_query(atl_call_t *call) {
  opx_entry_t *e = opx_acquire(call, 0);
  if (e == NULL)
    return 0;
  opx_db_t *db = db_of(call, e);
  if (db != NULL) {
    json_object *sql = json_object_object_get(call->args, "sql");
    json_object *res = NULL;
    char *err = NULL;
    if (opx_db_query(db, json_object_get_string(sql),
                     int_arg(call->args, "max_rows", OPX_DB_MAX_ROWS), &res,
                     &err) == 0)
      call->host->call_result(call, res);
    else
      call->host->call_error(call, "%s", err ? err : "the query failed");
    free(err);
  }
  opx_release(call->plugin_state, e);
  return 0;
}

int opx_tool_schema(atl_call_t *call) {
  opx_entry_t *e = opx_acquire(call, 0);
  if (e == NULL)
    return 0;
  opx_db_t *db = db_of(call, e);
  if (db != NULL)
    call->host->call_result(call, opx_db_describe(db));
  opx_release(call->plugin_state, e);
  return 0;
}

/* ---- describe_edges ---- */

static const char *const edge_kinds[] = {"line", "arc", "curve"};

int opx_tool_edges(atl_call_t *call) {
  opx_entry_t *e = opx_acquire(call, 0);
  if (e == NULL)
    return 0;
  const opx_geom_t *g = e->run->geom;
  const char *name =
      json_object_get_string(json_object_object_get(call->args, "object"));
  int oi = opx_geom_find(g, name);
  if (oi < 0) {
    opx_no_object(call, json_object_object_get(call->ns, "objs"), name);
    opx_release(call->plugin_state, e);
    return 0;
  }
  const opx_obj_t *o = &g->objs[oi];
  json_object *r = json_object_new_object();
  json_object_object_add(r, "object", json_object_new_string(o->display_name));
  json_object_object_add(r, "type", json_object_new_string(o->type));
  json_object_object_add(r, "family",
                         json_object_new_string(opx_family_name(o->family)));
  json_object_object_add(r, "edge_count", json_object_new_int(o->nedges));
  json_object_object_add(r, "perimeter", opx_json_num(o->perimeter));
  if (o->outline.closed) {
    json_object_object_add(r, "area", opx_json_num(o->area));
    json_object_object_add(r, "centroid", opx_json_pt(o->centroid));
  }
  json_object_object_add(
      r, "labels",
      json_object_new_string("Cardinal labels name the direction from the "
                             "object's centre to the edge on the picture: N "
                             "up (-y), E right (+x), S down, W left"));
  json_object *list = json_object_new_array();
  for (int k = 0; k < o->nedges; k++) {
    const opx_edge_t *ed = &g->edges[o->first_edge + k];
    json_object *j = json_object_new_object();
    json_object_object_add(j, "index", json_object_new_int(ed->index));
    json_object_object_add(j, "short_label",
                           json_object_new_string(ed->short_label));
    json_object_object_add(j, "long_label",
                           json_object_new_string(ed->long_label));
    json_object_object_add(j, "type",
                           json_object_new_string(edge_kinds[ed->e->kind]));
    json_object_object_add(j, "length", opx_json_num(ed->length));
    json_object_object_add(j, "p1", opx_json_pt(ed->e->p1));
    json_object_object_add(j, "p2", opx_json_pt(ed->e->p2));
    json_object_object_add(j, "midpoint", opx_json_pt(ed->mid));
    json_object_object_add(j, "normal", opx_json_pt(ed->normal));
    if (ed->e->kind == ATL_OP_EDGE_ARC) {
      json_object_object_add(j, "center", opx_json_pt(ed->e->c));
      json_object_object_add(j, "radius", opx_json_num(ed->e->r));
    }
    json_object_array_add(list, j);
  }
  json_object_object_add(r, "edges", list);
  opx_release(call->plugin_state, e);
  return call->host->call_result(call, r);
}

/* ---- lineage ---- */

/* Runs one lineage analysis on the session's run. */
static int lineage_tool(atl_call_t *call,
                        json_object *(*fn)(const opx_tree_t *, int),
                        const char *arg, int def) {
  opx_entry_t *e = opx_acquire(call, 0);
  if (e == NULL)
    return 0;
  json_object *r = fn(&e->run->tree, int_arg(call->args, arg, def));
  opx_release(call->plugin_state, e);
  if (r == NULL)
    return ATL_ENOMEM;
  return call->host->call_result(call, r);
}

static json_object *energy_check(const opx_tree_t *t, int unused) {
  (void)unused;
  return opx_energy_check(t);
}

int opx_tool_rank(atl_call_t *call) {
  return lineage_tool(call, opx_rank_paths, "top_n", 10);
}

int opx_tool_energy(atl_call_t *call) {
  return lineage_tool(call, energy_check, "", 0);
}

int opx_tool_traps(atl_call_t *call) {
  return lineage_tool(call, opx_tir_traps, "min_tir_count", 2);
}

int opx_tool_angular(atl_call_t *call) {
  return lineage_tool(call, opx_angular_distribution, "n_bins", 36);
}
