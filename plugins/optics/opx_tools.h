/* The optics plugin's shared parts: the session namespace (a Ray Optics
 * Simulation scene whose objects carry the agent's names), the cache of
 * runs (a simulation and what the tools derive from it) and the tool
 * handlers of each file.
 *
 * Threads: handlers run on worker threads, several sessions at once but
 * never two for one session; the live preview (optics_preview.c) runs on
 * the host's preview thread, possibly beside a handler of its session.
 * The cache is shared and locked, and holds one run per session. */
#ifndef ATL_OPTICS_PLUGIN_H
#define ATL_OPTICS_PLUGIN_H

#include <pthread.h>

#include <atelier/plugin.h>

#include "opx_run.h"

/* The most objects a bench holds. */
#define OPX_MAX_OBJECTS 10000
/* The most segments a simulation records unless optics_simulate says
 * otherwise: a million is about 100 MB with its database. */
#define OPX_DEFAULT_RAY_LIMIT 1000000L
/* How many sessions' runs are kept, and how many segments all of them
 * together may hold: a run of a million segments with its database takes
 * about 350 MB (bench/README.md, optics-db), so the cache holds a few
 * small benches or one or two large ones. The newest run is always kept. */
#define OPX_CACHE_RUNS 4
#define OPX_CACHE_SEGMENTS 2000000L

/* A cached run. The cache owns it; a handler holds a reference while it
 * uses it, so that another session's handler may evict it meanwhile
 * without freeing it under the first one's feet. */
typedef struct opx_entry {
  char sid[33];
  char *key; /* the namespace's JSON text the run was built from */
  long ray_limit;
  opx_run_t *run;
  int refs;
  int evicted; /* out of the cache; freed when refs drops to 0 */
  unsigned long used;
} opx_entry_t;

typedef struct {
  const atl_host_t *host;
  pthread_mutex_t lock;
  opx_entry_t *slots[OPX_CACHE_RUNS];
  unsigned long clock;
  atl_schema_t *object_schema; /* a stored object, for merged updates */
} opx_state_t;

/* optics.c: the run of the session's current bench, built when the
 * bench changed since the last one (or ray_limit > 0 differs). NULL after
 * reporting the call's error (a scene that does not load). Release it
 * with opx_release. */
opx_entry_t *opx_acquire(atl_call_t *call, long ray_limit);
/* The same for a preview, which cannot report an error: on failure *why
 * gets the message (malloc'd; NULL when out of memory). A run it builds
 * replaces the session's cached one unless a handler cached one of the
 * same bench meanwhile; then it is the preview's alone. */
opx_entry_t *opx_acquire_why(atl_call_t *call, long ray_limit, char **why);
void opx_release(opx_state_t *st, opx_entry_t *e);
/* Makes ns a scene: version 5 and an objs array. Returns objs. */
json_object *opx_ns_ready(json_object *ns);
/* The index of the object named name in objs, or -1. */
int opx_ns_find(json_object *objs, const char *name);
/* "'A', 'B' and 2 more" or "(none)": for messages (malloc'd). */
char *opx_ns_names(json_object *objs);
/* Reports "No object named 'X'. Named objects: ...". Returns 0. */
int opx_no_object(atl_call_t *call, json_object *objs, const char *name);
/* A loader message with "objs[N] (Type)" made "object 'name' (Type)" (a
 * new string; msg is freed). */
char *opx_ns_message(json_object *objs, char *msg);

/* optics_bench.c: optics_add, optics_update, optics_remove, optics_list,
 * optics_import, optics_export, optics_settings. */
int opx_tool_add(atl_call_t *call);
int opx_tool_update(atl_call_t *call);
int opx_tool_remove(atl_call_t *call);
int opx_tool_list(atl_call_t *call);
int opx_tool_import(atl_call_t *call);
int opx_tool_export(atl_call_t *call);
int opx_tool_settings(atl_call_t *call);
/* Checks that ns loads: 0, or reports the error (after head) and
 * returns 1. */
int opx_bench_check(atl_call_t *call, json_object *ns, const char *head);
/* The CURRENT SCENE section (malloc'd). */
char *opx_bench_describe(json_object *ns);

/* optics_analysis.c: the simulation's summary and the tools over it. */
int opx_tool_simulate(atl_call_t *call);
int opx_tool_query(atl_call_t *call);
int opx_tool_schema(atl_call_t *call);
int opx_tool_edges(atl_call_t *call);
int opx_tool_rank(atl_call_t *call);
int opx_tool_energy(atl_call_t *call);
int opx_tool_traps(atl_call_t *call);
int opx_tool_angular(atl_call_t *call);
/* optics_fresnel_tools.c: the standalone tools. */
int opx_tool_fresnel(atl_call_t *call);
int opx_tool_tir(atl_call_t *call);
int opx_tool_critical(atl_call_t *call);
int opx_tool_brewster(atl_call_t *call);
/* optics_render.c */
int opx_tool_render(atl_call_t *call);
/* optics_preview.c: the page's live picture of the bench (plugin.h, ABI
 * 1.5), the drawing render_optics makes without highlights. */
int opx_preview(atl_call_t *call);

/* A view (min x, min y, width, height) as {x, y, width, height}. */
json_object *opx_json_view(const double view[4]);
/* A point as {x, y}. */
json_object *opx_json_pt(atl_op_pt p);
/* A double rounded to 6 significant decimals past the point, as the
 * tools report measurements (exact values would only cost tokens). */
json_object *opx_json_num(double v);

#endif
