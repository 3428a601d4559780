/* The optics plugin: an optical bench the agent builds by chat (a Ray
 * Optics Simulation scene in the session's "optics" namespace), simulated
 * by liboptics, and the tools to discover, query, compose, check and see
 * the results: query_rays over SQLite, the lineage analyses, the Fresnel
 * formulas and render_optics.
 *
 * This file holds the descriptor, the namespace helpers and the cache of
 * runs: a run is rebuilt only when the bench changed, so a query, a
 * lineage tool and a render in a row all see the same rays and pay for
 * one simulation. */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opx_draw.h"
#include "opx_tools.h"
#include "schemas.inc"

/* ---- the namespace ---- */

json_object *opx_ns_ready(json_object *ns) {
  json_object *objs;
  if (!json_object_object_get_ex(ns, "version", NULL))
    json_object_object_add(ns, "version", json_object_new_int(5));
  if (!json_object_object_get_ex(ns, "objs", &objs) ||
      !json_object_is_type(objs, json_type_array)) {
    objs = json_object_new_array();
    json_object_object_add(ns, "objs", objs);
  }
  /* A fixed seed: the random sources give the same rays after a restart
   * as before, so a result the agent saw can be seen again. */
  if (!json_object_object_get_ex(ns, "randomSeed", NULL))
    json_object_object_add(ns, "randomSeed", json_object_new_string("0"));
  return objs;
}

static const char *obj_name(json_object *o) {
  json_object *n;
  return json_object_object_get_ex(o, "name", &n) &&
                 json_object_is_type(n, json_type_string)
             ? json_object_get_string(n)
             : NULL;
}

int opx_ns_find(json_object *objs, const char *name) {
  size_t n = json_object_array_length(objs);
  for (size_t i = 0; i < n; i++) {
    const char *s = obj_name(json_object_array_get_idx(objs, i));
    if (s != NULL && strcmp(s, name) == 0)
      return (int)i;
  }
  return -1;
}

char *opx_ns_names(json_object *objs) {
  /* A long list would cost the model more than it helps: the first 20
   * and a count, and optics_list has the rest. */
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL)
    return NULL;
  size_t n = json_object_array_length(objs), shown = 0;
  for (size_t i = 0; i < n; i++) {
    const char *s = obj_name(json_object_array_get_idx(objs, i));
    if (s == NULL)
      continue;
    if (shown == 20) {
      fprintf(f, " and %zu more (optics_list)", n - i);
      break;
    }
    fprintf(f, "%s'%s'", shown ? ", " : "", s);
    shown++;
  }
  if (shown == 0)
    fputs("(none)", f);
  fclose(f);
  return buf;
}

int opx_no_object(atl_call_t *call, json_object *objs, const char *name) {
  char *names = opx_ns_names(objs);
  call->host->call_error(call, "No object named '%s'. Named objects: %s", name,
                         names ? names : "(none)");
  free(names);
  return 0;
}

char *opx_ns_message(json_object *objs, char *msg) {
  int idx, end = 0;
  if (msg == NULL || sscanf(msg, "objs[%d]%n", &idx, &end) != 1 || end == 0 ||
      idx < 0 || (size_t)idx >= json_object_array_length(objs))
    return msg;
  const char *name = obj_name(json_object_array_get_idx(objs, (size_t)idx));
  if (name == NULL)
    return msg;
  char *out = NULL;
  if (asprintf(&out, "object '%s'%s", name, msg + end) < 0)
    return msg;
  free(msg);
  return out;
}

json_object *opx_json_pt(atl_op_pt p) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "x", opx_json_num(p.x));
  json_object_object_add(o, "y", opx_json_num(p.y));
  return o;
}

json_object *opx_json_view(const double view[4]) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "x", opx_json_num(view[0]));
  json_object_object_add(o, "y", opx_json_num(view[1]));
  json_object_object_add(o, "width", opx_json_num(view[2]));
  json_object_object_add(o, "height", opx_json_num(view[3]));
  return o;
}

json_object *opx_json_num(double v) {
  if (!isfinite(v))
    return NULL;
  double r = round(v * 1e6) / 1e6;
  if (r == 0 && v != 0)
    return json_object_new_double(v);
  return json_object_new_double(r == 0 ? 0 : r);
}

/* ---- the cache of runs ---- */

static void entry_free(opx_entry_t *e) {
  opx_run_free(e->run);
  free(e->key);
  free(e);
}

void opx_release(opx_state_t *st, opx_entry_t *e) {
  if (e == NULL)
    return;
  pthread_mutex_lock(&st->lock);
  int dead = --e->refs == 0 && e->evicted;
  pthread_mutex_unlock(&st->lock);
  if (dead)
    entry_free(e);
}

/* Takes the slot out of the cache (the lock is held); frees it now if no
 * handler holds it, else when the last one lets go. */
static void evict(opx_state_t *st, int i) {
  opx_entry_t *e = st->slots[i];
  st->slots[i] = NULL;
  if (e == NULL)
    return;
  e->evicted = 1;
  if (e->refs == 0)
    entry_free(e);
}

/* Reports msg as the call's error, or hands it to *why (a preview, whose
 * call has no outcome to report). */
static void acquire_failed(atl_call_t *call, char **why, const char *msg) {
  if (why != NULL)
    *why = strdup(msg);
  else
    call->host->call_error(call, "%s", msg);
}

opx_entry_t *opx_acquire(atl_call_t *call, long ray_limit) {
  return opx_acquire_why(call, ray_limit, NULL);
}

opx_entry_t *opx_acquire_why(atl_call_t *call, long ray_limit, char **why) {
  opx_state_t *st = call->plugin_state;
  json_object *ns = call->ns;
  /* Read-only tools must not change the namespace, so a bench never
   * edited is simulated as an empty scene without being made one. */
  json_object *empty = NULL;
  if (!json_object_object_get_ex(ns, "objs", NULL)) {
    empty = json_object_new_object();
    opx_ns_ready(empty);
    ns = empty;
  }
  const char *text = json_object_to_json_string_ext(ns, JSON_C_TO_STRING_PLAIN);
  long limit = ray_limit > 0 ? ray_limit : OPX_DEFAULT_RAY_LIMIT;
  pthread_mutex_lock(&st->lock);
  for (int i = 0; i < OPX_CACHE_RUNS; i++) {
    opx_entry_t *e = st->slots[i];
    if (e == NULL || strcmp(e->sid, call->session_id) != 0)
      continue;
    /* Without a limit of its own, a tool uses the one the agent last
     * simulated with. */
    if (ray_limit <= 0)
      limit = e->ray_limit;
    if (strcmp(e->key, text) == 0 && e->ray_limit == limit) {
      e->refs++;
      e->used = ++st->clock;
      pthread_mutex_unlock(&st->lock);
      json_object_put(empty);
      return e;
    }
    evict(st, i);
  }
  pthread_mutex_unlock(&st->lock);

  /* Built outside the lock: other sessions' handlers go on meanwhile. */
  opx_run_t *run = NULL;
  char *err = NULL;
  int rc = opx_run_build(ns, limit, &run, &err);
  if (rc != 0) {
    json_object *objs = NULL;
    json_object_object_get_ex(ns, "objs", &objs);
    json_object_get(objs);
    json_object_put(empty);
    err = opx_ns_message(objs, err);
    char *msg = NULL;
    if (rc == -ENOMEM && err == NULL)
      acquire_failed(call, why,
                     "The simulation ran out of memory: lower "
                     "the ray density or ray_limit");
    else if (asprintf(&msg, "The bench cannot be simulated: %s",
                      err ? err : strerror(-rc)) >= 0)
      acquire_failed(call, why, msg);
    else
      acquire_failed(call, why, "out of memory");
    free(msg);
    free(err);
    json_object_put(objs);
    return NULL;
  }
  opx_entry_t *e = calloc(1, sizeof(*e));
  if (e != NULL)
    e->key = strdup(text);
  json_object_put(empty);
  if (e == NULL || e->key == NULL) {
    free(e);
    opx_run_free(run);
    acquire_failed(call, why, "out of memory");
    return NULL;
  }
  snprintf(e->sid, sizeof(e->sid), "%s", call->session_id);
  e->ray_limit = limit;
  e->run = run;
  e->refs = 1;
  int slot;
  pthread_mutex_lock(&st->lock);
  /* One run per session. A tool handler and the session's live preview
   * may have built one each meanwhile (they run at once, on different
   * threads): a tool's replaces any other, for it is what the agent asked
   * for (its ray_limit); a preview's never replaces a run of the same
   * bench, and stays its own, freed once drawn. */
  for (int i = 0; i < OPX_CACHE_RUNS; i++) {
    opx_entry_t *o = st->slots[i];
    if (o == NULL || strcmp(o->sid, e->sid) != 0)
      continue;
    if (why != NULL && strcmp(o->key, e->key) == 0) {
      e->evicted = 1;
      pthread_mutex_unlock(&st->lock);
      return e;
    }
    evict(st, i);
  }
  /* The least recently used go first, while the cache would hold too
   * many segments with this run, then for a free slot. */
  for (;;) {
    long total = run->sim->nsegs;
    int lru = -1, free_slot = -1;
    for (int i = 0; i < OPX_CACHE_RUNS; i++) {
      if (st->slots[i] == NULL) {
        free_slot = i;
        continue;
      }
      total += st->slots[i]->run->sim->nsegs;
      if (lru < 0 || st->slots[i]->used < st->slots[lru]->used)
        lru = i;
    }
    if (lru >= 0 && (total > OPX_CACHE_SEGMENTS || free_slot < 0)) {
      evict(st, lru);
      continue;
    }
    slot = free_slot;
    break;
  }
  e->used = ++st->clock;
  st->slots[slot] = e;
  pthread_mutex_unlock(&st->lock);
  return e;
}

/* ---- the descriptor ---- */

static const atl_tool_t tools[] = {
    {.name = "optics_add",
     .description =
         "Add one object to the optical bench (a 2D Ray Optics Simulation "
         "scene; coordinates in scene units, y grows downward, as the app "
         "draws). Give it a unique name; the other tools address it by that "
         "name. Light sources: SingleRay, PointSource, AngleSource, Beam. "
         "Glass: Glass (polygon, arcs), CircleGlass, SphericalLens, ... "
         "Mirrors, blockers, lenses, gratings, detectors. Returns the object "
         "as stored.",
     .input_schema = OPX_SCHEMA_OPTICS_ADD,
     .handler = opx_tool_add},
    {.name = "optics_update",
     .description = "Change fields of a named object (and/or rename it). "
                    "The result is checked whole: nothing changes on an "
                    "error. Returns the object as stored.",
     .input_schema = OPX_SCHEMA_OPTICS_UPDATE,
     .flags = ATL_TOOL_DESTRUCTIVE | ATL_TOOL_IDEMPOTENT,
     .handler = opx_tool_update},
    {.name = "optics_remove",
     .description = "Remove named objects from the bench.",
     .input_schema = OPX_SCHEMA_OPTICS_REMOVE,
     .flags = ATL_TOOL_DESTRUCTIVE | ATL_TOOL_IDEMPOTENT,
     .handler = opx_tool_remove},
    {.name = "optics_list",
     .description = "List the bench's objects (name, type, main points) and "
                    "settings.",
     .input_schema = OPX_SCHEMA_OPTICS_LIST,
     .flags = ATL_TOOL_READ_ONLY,
     .handler = opx_tool_list},
    {.name = "optics_import",
     .description = "Load a Ray Optics Simulation scene (the app's JSON, "
                    "version 5), replacing the bench or adding to it.",
     .input_schema = OPX_SCHEMA_OPTICS_IMPORT,
     .flags = ATL_TOOL_DESTRUCTIVE,
     .handler = opx_tool_import},
    {.name = "optics_export",
     .description = "The bench as a Ray Optics Simulation scene (JSON the "
                    "app at phydemo.app/ray-optics opens).",
     .input_schema = OPX_SCHEMA_OPTICS_EXPORT,
     .flags = ATL_TOOL_READ_ONLY,
     .handler = opx_tool_export},
    {.name = "optics_settings",
     .description = "Read or change the bench's settings: ray density, "
                    "colour simulation, random seed, maximum ray depth... "
                    "Returns them all.",
     .input_schema = OPX_SCHEMA_OPTICS_SETTINGS,
     .flags = ATL_TOOL_DESTRUCTIVE | ATL_TOOL_IDEMPOTENT,
     .handler = opx_tool_settings},
    {.name = "optics_simulate",
     .description =
         "Trace the bench's rays and summarise: segments by interaction "
         "type, total internal reflections, emitted/absorbed/escaped "
         "energy, detector readings, warnings. Then use query_rays, the "
         "lineage tools and render_optics on the same rays (they simulate "
         "on their own when the bench changed).",
     .input_schema = OPX_SCHEMA_OPTICS_SIMULATE,
     .flags = ATL_TOOL_READ_ONLY | ATL_TOOL_LONG_RUNNING,
     .handler = opx_tool_simulate},
    {.name = "query_rays",
     .description =
         "Run one read-only SQL SELECT (SQLite; WITH, joins, subqueries "
         "allowed) over the simulation: rays (one row per segment), "
         "objects, edges, ray_object_membership (rays inside an object), "
         "ray_edge_crossing (rays touching an edge, angle to its normal). "
         "Use describe_schema for the columns. Returns {columns, rows, "
         "row_count}, at most max_rows rows (truncated: true says more "
         "exist).",
     .input_schema = OPX_SCHEMA_QUERY_RAYS,
     .flags = ATL_TOOL_READ_ONLY,
     .handler = opx_tool_query},
    {.name = "describe_schema",
     .description = "The ray database's tables: columns with types and "
                    "meanings, and row counts.",
     .input_schema = OPX_SCHEMA_DESCRIBE_SCHEMA,
     .flags = ATL_TOOL_READ_ONLY,
     .handler = opx_tool_schema},
    {.name = "describe_edges",
     .description =
         "An object's edges: index, cardinal label (N is up on the picture, "
         "E right; e.g. N, SE, WNW), long name, type (line, arc, curve), "
         "length, ends, midpoint and outward normal. Use the labels in "
         "query_rays (edges.short_label) and render_optics.",
     .input_schema = OPX_SCHEMA_DESCRIBE_EDGES,
     .flags = ATL_TOOL_READ_ONLY,
     .handler = opx_tool_edges},
    {.name = "rank_paths_by_energy",
     .description = "The optical paths (source to final segment) carrying "
                    "the most power, with their interaction types and "
                    "segment ids (for query_rays and render_optics).",
     .input_schema = OPX_SCHEMA_RANK_PATHS,
     .flags = ATL_TOOL_READ_ONLY,
     .handler = opx_tool_rank},
    {.name = "check_energy_conservation",
     .description = "Check that no interaction creates power (children's "
                    "power never exceeds their parent's) and give the "
                    "bench's balance: emitted, absorbed, escaped, "
                    "truncated.",
     .input_schema = OPX_SCHEMA_ENERGY_CHECK,
     .flags = ATL_TOOL_READ_ONLY,
     .handler = opx_tool_energy},
    {.name = "detect_tir_traps",
     .description = "Chains of successive total internal reflections (light "
                    "trapped in a glass), longest first.",
     .input_schema = OPX_SCHEMA_TIR_TRAPS,
     .flags = ATL_TOOL_READ_ONLY,
     .handler = opx_tool_traps},
    {.name = "angular_distribution",
     .description = "Histogram of the emission angles of the light reaching "
                    "the paths' ends, weighted by its power (degrees, "
                    "counter-clockwise on the picture from +x).",
     .input_schema = OPX_SCHEMA_ANGULAR,
     .flags = ATL_TOOL_READ_ONLY,
     .handler = opx_tool_angular},
    {.name = "fresnel_transmittances",
     .description = "Fresnel power transmittances and reflectances (s and p) "
                    "at a flat interface from index n1 to n2, and the "
                    "refraction angle. Standalone.",
     .input_schema = OPX_SCHEMA_FRESNEL,
     .flags = ATL_TOOL_READ_ONLY | ATL_TOOL_FAST,
     .handler = opx_tool_fresnel},
    {.name = "tir_analysis",
     .description = "Total internal reflection from n1 into n2 (n1 > n2): "
                    "critical and Brewster angles, regime at the angle, "
                    "reflectances and the s and p phase shifts. Standalone; "
                    "a glass's index is in query_rays' objects.ref_index.",
     .input_schema = OPX_SCHEMA_TIR_ANALYSIS,
     .flags = ATL_TOOL_READ_ONLY | ATL_TOOL_FAST,
     .handler = opx_tool_tir},
    {.name = "critical_angle",
     .description = "The critical angle of total internal reflection from "
                    "n1 into n2 (n1 > n2), in degrees.",
     .input_schema = OPX_SCHEMA_CRITICAL,
     .flags = ATL_TOOL_READ_ONLY | ATL_TOOL_FAST,
     .handler = opx_tool_critical},
    {.name = "brewster_angle",
     .description = "Brewster's angle from n1 into n2, in degrees.",
     .input_schema = OPX_SCHEMA_BREWSTER,
     .flags = ATL_TOOL_READ_ONLY | ATL_TOOL_FAST,
     .handler = opx_tool_brewster},
    {.name = "render_optics",
     .description =
         "Draw the bench and its rays (PNG you see, plus SVG), oriented as "
         "Ray Optics Simulation draws it. Highlight rays with a SQL WHERE "
         "clause over rays (the same selection as a query_rays), objects "
         "by name and edges by label. Returns a description of the "
         "picture and what was highlighted.",
     .input_schema = OPX_SCHEMA_RENDER,
     .flags =
         ATL_TOOL_READ_ONLY | ATL_TOOL_LONG_RUNNING | ATL_TOOL_HOLDS_PREVIEWS,
     .handler = opx_tool_render},
};

/* pixman (cairo's rasteriser) builds its tables in a constructor when it
 * is loaded with this plugin, and keeps them for the process's life; if
 * it were unmapped when the daemon dlclose()s the plugin, that memory
 * would be unreachable, a false leak to valgrind and LeakSanitizer. So it
 * stays loaded (RTLD_NODELETE on the already loaded library), its tables
 * reachable as they are meant to be. */
static void pin_pixman(void) {
  void *px =
      dlopen("libpixman-1.so.0", RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
  if (px != NULL)
    dlclose(px);
}

static int init(const atl_host_t *h, void **state) {
  pin_pixman();
  opx_state_t *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return ATL_ENOMEM;
  st->host = h;
  pthread_mutex_init(&st->lock, NULL);
  /* Merged updates are checked against the stored object's schema; a
   * host without the validator (ABI 1.0) leaves it to the loader. */
  if (ATL_HOST_HAS(h, schema_compile)) {
    char *err = NULL;
    if (h->schema_compile(h, OPX_SCHEMA_OBJECT, &st->object_schema, &err) !=
        0) {
      h->log(h, ATL_LOG_ERROR, "msg=\"object schema\" error=\"%s\"",
             err ? err : "?");
      free(err);
      pthread_mutex_destroy(&st->lock);
      free(st);
      return ATL_EINVAL;
    }
  }
  *state = st;
  return 0;
}

static void destroy(void *state) {
  opx_state_t *st = state;
  for (int i = 0; i < OPX_CACHE_RUNS; i++)
    evict(st, i);
  /* The daemon unloads the plugin next, and cairo with it. */
  opx_draw_release();
  if (st->object_schema != NULL)
    st->host->schema_free(st->object_schema);
  pthread_mutex_destroy(&st->lock);
  free(st);
}

static void session_close(void *state, const char *session_id) {
  opx_state_t *st = state;
  pthread_mutex_lock(&st->lock);
  for (int i = 0; i < OPX_CACHE_RUNS; i++)
    if (st->slots[i] != NULL && strcmp(st->slots[i]->sid, session_id) == 0)
      evict(st, i);
  pthread_mutex_unlock(&st->lock);
}

static char *describe(void *state, json_object *ns) {
  (void)state;
  return opx_bench_describe(ns);
}

/* The admin socket's summary (plugin ABI 1.4): the bench's objects by
 * type. */
static json_object *admin_summary(void *state, const char *session_id,
                                  json_object *ns) {
  (void)state;
  (void)session_id;
  json_object *objs = NULL;
  if (ns == NULL || !json_object_object_get_ex(ns, "objs", &objs) ||
      !json_object_is_type(objs, json_type_array))
    return NULL;
  json_object *o = json_object_new_object(), *types = json_object_new_object();
  size_t n = json_object_array_length(objs);
  for (size_t i = 0; i < n; i++) {
    json_object *t = NULL;
    const char *type = json_object_object_get_ex(
                           json_object_array_get_idx(objs, i), "type", &t) &&
                               json_object_is_type(t, json_type_string)
                           ? json_object_get_string(t)
                           : "?";
    json_object *c = NULL;
    int64_t k = json_object_object_get_ex(types, type, &c)
                    ? json_object_get_int64(c)
                    : 0;
    json_object_object_add(types, type, json_object_new_int64(k + 1));
  }
  json_object_object_add(o, "objects", json_object_new_int64((int64_t)n));
  json_object_object_add(o, "types", types);
  return o;
}

ATL_PLUGIN_DEFINE(.name = "optics", .version = "1.1.0",
                  .description = "The optical bench: a 2D ray optics scene "
                                 "(Ray Optics Simulation's format), its "
                                 "simulation, SQL over its rays, lineage, "
                                 "Fresnel and pictures",
                  .tools = tools, .n_tools = sizeof(tools) / sizeof(tools[0]),
                  .init = init, .destroy = destroy,
                  .session_close = session_close, .describe = describe,
                  .admin_summary = admin_summary, .preview_of = "optics",
                  .preview = opx_preview);
