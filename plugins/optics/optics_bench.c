/* The tools that build the bench: add, update, remove, list, import,
 * export and settings. The namespace is a Ray Optics Simulation scene
 * whose objects carry a "name" of the agent's; every change is checked by
 * loading the whole scene in the simulator, so a bench that was accepted
 * always simulates, and an error leaves it as it was (the host commits
 * the namespace only when the call succeeds). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opx_tools.h"

static const char *str_arg(json_object *args, const char *name) {
  json_object *v;
  return json_object_object_get_ex(args, name, &v) ? json_object_get_string(v)
                                                   : NULL;
}

static json_object *copy_of(json_object *o) {
  json_object *c = NULL;
  return json_object_deep_copy(o, &c, NULL) == 0 ? c : NULL;
}

int opx_bench_check(atl_call_t *call, json_object *ns, const char *head) {
  char *err = NULL;
  /* Loading is the check: the simulator's loader knows every type's
   * rules (a lens radius too small for its height, an equation that does
   * not parse, a module's parameters), with messages naming the field;
   * starting the simulation catches sources past its limits. */
  int rc = opx_run_check(ns, &err);
  if (rc == 0)
    return 0;
  json_object *objs = NULL;
  json_object_object_get_ex(ns, "objs", &objs);
  err = opx_ns_message(objs, err);
  call->host->call_error(call, "%s: %s", head,
                         err ? err : "the simulator cannot load it");
  free(err);
  return 1;
}

/* ---- add ---- */

int opx_tool_add(atl_call_t *call) {
  const atl_host_t *h = call->host;
  json_object *objs = opx_ns_ready(call->ns);
  const char *name = str_arg(call->args, "name");
  if (opx_ns_find(objs, name) >= 0)
    return h->call_error(call,
                         "An object named '%s' already exists; choose another "
                         "name, or change it with optics_update",
                         name);
  if (json_object_array_length(objs) >= OPX_MAX_OBJECTS)
    return h->call_error(call,
                         "The bench already has %d objects, the most it can "
                         "hold; remove some first",
                         OPX_MAX_OBJECTS);
  json_object *obj = copy_of(call->args);
  if (obj == NULL)
    return ATL_ENOMEM;
  json_object_array_add(objs, json_object_get(obj));
  char head[160];
  snprintf(head, sizeof(head), "'%s' was not added", name);
  if (opx_bench_check(call, call->ns, head)) {
    json_object_put(obj);
    return 0;
  }
  h->call_operation(call, name, NULL, json_object_get(obj));
  return h->call_result(call, obj);
}

/* ---- update ---- */

int opx_tool_update(atl_call_t *call) {
  const atl_host_t *h = call->host;
  opx_state_t *st = call->plugin_state;
  json_object *objs = opx_ns_ready(call->ns);
  const char *name = str_arg(call->args, "name");
  const char *rename = str_arg(call->args, "rename");
  int idx = opx_ns_find(objs, name);
  if (idx < 0)
    return opx_no_object(call, objs, name);
  json_object *set = NULL;
  json_object_object_get_ex(call->args, "set", &set);
  if (set == NULL && rename == NULL)
    return h->call_error(call, "Nothing to change: give \"set\" (fields and "
                               "their new values) or \"rename\"");
  if (set != NULL && json_object_object_get_ex(set, "type", NULL))
    return h->call_error(call, "\"set\" cannot change an object's type: "
                               "remove it and add a new one");
  if (set != NULL && json_object_object_get_ex(set, "name", NULL))
    return h->call_error(call, "\"set\" cannot change the name: use "
                               "\"rename\"");
  if (rename != NULL && strcmp(rename, name) != 0 &&
      opx_ns_find(objs, rename) >= 0)
    return h->call_error(call,
                         "An object named '%s' already exists; choose "
                         "another name",
                         rename);
  json_object *old = json_object_array_get_idx(objs, (size_t)idx);
  json_object *merged = copy_of(old);
  if (merged == NULL)
    return ATL_ENOMEM;
  if (set != NULL) {
    json_object_object_foreach(set, key, val) {
      /* null puts a field back to the app's default. */
      if (val == NULL)
        json_object_object_del(merged, key);
      else
        json_object_object_add(merged, key, copy_of(val));
    }
  }
  if (rename != NULL)
    json_object_object_add(merged, "name", json_object_new_string(rename));
  if (st->object_schema != NULL) {
    json_object *errors = NULL;
    if (h->schema_validate(st->object_schema, merged, &errors) > 0) {
      json_object *first = json_object_array_get_idx(errors, 0);
      h->call_error(call, "'%s' was not changed: %s", name,
                    first ? json_object_get_string(first) : "invalid");
      json_object_put(errors);
      json_object_put(merged);
      return 0;
    }
    json_object_put(errors);
  }
  json_object *before = json_object_get(old);
  json_object_array_put_idx(objs, (size_t)idx, json_object_get(merged));
  char head[160];
  snprintf(head, sizeof(head), "'%s' was not changed", name);
  if (opx_bench_check(call, call->ns, head)) {
    json_object_put(before);
    json_object_put(merged);
    return 0;
  }
  h->call_operation(call, rename ? rename : name, before,
                    json_object_get(merged));
  return h->call_result(call, merged);
}

/* ---- remove ---- */

static int by_index_desc(const void *a, const void *b) {
  return *(const int *)b - *(const int *)a;
}

int opx_tool_remove(atl_call_t *call) {
  const atl_host_t *h = call->host;
  json_object *objs = opx_ns_ready(call->ns);
  json_object *names = NULL;
  json_object_object_get_ex(call->args, "names", &names);
  size_t n = json_object_array_length(names);
  int *idx = malloc(sizeof(int) * n);
  if (idx == NULL)
    return ATL_ENOMEM;
  /* All or nothing: a typo in one name removes none of them. */
  for (size_t i = 0; i < n; i++) {
    const char *name =
        json_object_get_string(json_object_array_get_idx(names, i));
    idx[i] = opx_ns_find(objs, name);
    if (idx[i] < 0) {
      free(idx);
      return opx_no_object(call, objs, name);
    }
  }
  qsort(idx, n, sizeof(int), by_index_desc);
  json_object *removed = json_object_new_array();
  for (size_t i = 0; i < n; i++) {
    if (i > 0 && idx[i] == idx[i - 1])
      continue;
    json_object *o = json_object_array_get_idx(objs, (size_t)idx[i]);
    json_object_array_add(removed,
                          json_object_new_string(json_object_get_string(
                              json_object_object_get(o, "name"))));
    json_object_array_del_idx(objs, (size_t)idx[i], 1);
  }
  free(idx);
  /* A module's parts can refer to nothing else, and the others stand
   * alone, so removing never breaks what remains; checked all the same
   * since it is cheap and catches what that reasoning misses. */
  if (opx_bench_check(call, call->ns, "nothing was removed")) {
    json_object_put(removed);
    return 0;
  }
  json_object *r = json_object_new_object();
  json_object_object_add(r, "removed", removed);
  json_object_object_add(
      r, "objects", json_object_new_int((int)json_object_array_length(objs)));
  return h->call_result(call, r);
}

/* ---- list, settings ---- */

/* The settings with the values in effect (the app's defaults where the
 * bench gives none). */
static json_object *settings_of(json_object *ns) {
  static const struct {
    const char *key, *def;
  } known[] = {{"name", "\"\""},
               {"mode", "\"rays\""},
               {"rayModeDensity", "0.1"},
               {"simulateColors", "false"},
               {"colorMode", "\"default\""},
               {"randomSeed", "null"},
               {"maxRayDepth", "null"},
               {"lengthScale", "1"},
               {"showRayArrows", "false"}};
  json_object *s = json_object_new_object();
  for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
    json_object *v;
    if (json_object_object_get_ex(ns, known[i].key, &v))
      json_object_object_add(s, known[i].key, copy_of(v));
    else
      json_object_object_add(s, known[i].key, json_tokener_parse(known[i].def));
  }
  return s;
}

int opx_tool_list(atl_call_t *call) {
  json_object *objs = NULL;
  json_object_object_get_ex(call->ns, "objs", &objs);
  json_object *list = json_object_new_array();
  size_t n = objs ? json_object_array_length(objs) : 0;
  for (size_t i = 0; i < n; i++)
    json_object_array_add(list, copy_of(json_object_array_get_idx(objs, i)));
  json_object *r = json_object_new_object();
  json_object_object_add(r, "count", json_object_new_int((int)n));
  json_object_object_add(r, "objects", list);
  json_object_object_add(r, "settings", settings_of(call->ns));
  return call->host->call_result(call, r);
}

int opx_tool_settings(atl_call_t *call) {
  opx_ns_ready(call->ns);
  int changed = 0;
  json_object_object_foreach(call->args, key, val) {
    json_object_object_add(call->ns, key, copy_of(val));
    changed = 1;
  }
  if (changed && opx_bench_check(call, call->ns,
                                 "the settings were not "
                                 "changed"))
    return 0;
  json_object *r = json_object_new_object();
  json_object_object_add(r, "settings", settings_of(call->ns));
  return call->host->call_result(call, r);
}

/* ---- import, export ---- */

static int valid_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 64)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
          (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-' ||
          c == ' '))
      return 0;
  }
  return 1;
}

/* Gives every object of objs from index first on a name: its own when it
 * has a valid, unused one, else "<Type>_<k>" with the first free k.
 * Returns 0, or 1 after reporting a name that is not valid. */
static int name_objects(atl_call_t *call, json_object *objs, size_t first) {
  size_t n = json_object_array_length(objs);
  for (size_t i = first; i < n; i++) {
    json_object *o = json_object_array_get_idx(objs, i);
    if (!json_object_is_type(o, json_type_object)) {
      call->host->call_error(call, "scene.objs[%zu] is not an object", i);
      return 1;
    }
    json_object *nm;
    if (!json_object_object_get_ex(o, "name", &nm))
      continue;
    const char *s = json_object_get_string(nm);
    if (!json_object_is_type(nm, json_type_string) || !valid_name(s)) {
      call->host->call_error(call,
                             "scene.objs[%zu].name must be 1 to 64 of A-Z "
                             "a-z 0-9 _ . - and space, got %s",
                             i, json_object_to_json_string(nm));
      return 1;
    }
    int at = opx_ns_find(objs, s);
    if (at >= 0 && (size_t)at != i) {
      call->host->call_error(call,
                             "scene.objs[%zu] is named '%s' like objs[%d]; "
                             "names must be unique",
                             i, s, at);
      return 1;
    }
  }
  for (size_t i = first; i < n; i++) {
    json_object *o = json_object_array_get_idx(objs, i);
    if (json_object_object_get_ex(o, "name", NULL))
      continue;
    json_object *t;
    const char *type = json_object_object_get_ex(o, "type", &t)
                           ? json_object_get_string(t)
                           : "Object";
    char name[80];
    for (int k = 1;; k++) {
      snprintf(name, sizeof(name), "%.60s_%d", valid_name(type) ? type : "Obj",
               k);
      if (opx_ns_find(objs, name) < 0)
        break;
    }
    json_object_object_add(o, "name", json_object_new_string(name));
  }
  return 0;
}

int opx_tool_import(atl_call_t *call) {
  const atl_host_t *h = call->host;
  json_object *scene = NULL, *v;
  json_object_object_get_ex(call->args, "scene", &scene);
  int replace = json_object_object_get_ex(call->args, "replace", &v)
                    ? json_object_get_boolean(v)
                    : 1;
  json_object *in_objs;
  if (!json_object_object_get_ex(scene, "objs", &in_objs) ||
      !json_object_is_type(in_objs, json_type_array))
    return h->call_error(call, "scene.objs must be an array of objects (a "
                               "Ray Optics Simulation scene: {\"version\": "
                               "5, \"objs\": [...]})");
  json_object *objs = opx_ns_ready(call->ns);
  size_t first = replace ? 0 : json_object_array_length(objs);
  if (first + json_object_array_length(in_objs) > OPX_MAX_OBJECTS)
    return h->call_error(call, "The bench would hold %zu objects; at most %d",
                         first + json_object_array_length(in_objs),
                         OPX_MAX_OBJECTS);
  if (replace) {
    /* The namespace becomes the scene: its settings and modules too. */
    json_object_object_foreach(call->ns, key, val) {
      (void)val;
      json_object_object_del(call->ns, key);
    }
    json_object_object_foreach(scene, skey, sval) {
      json_object_object_add(call->ns, skey, copy_of(sval));
    }
    objs = opx_ns_ready(call->ns);
  } else {
    json_object *mods;
    if (json_object_object_get_ex(scene, "modules", &mods) &&
        json_object_object_length(mods) > 0) {
      json_object *mine;
      if (!json_object_object_get_ex(call->ns, "modules", &mine)) {
        mine = json_object_new_object();
        json_object_object_add(call->ns, "modules", mine);
      }
      json_object_object_foreach(mods, mkey, mval) {
        if (json_object_object_get_ex(mine, mkey, NULL))
          return h->call_error(call,
                               "The bench already has a module named '%s'; "
                               "import with replace: true, or rename the "
                               "module in the scene",
                               mkey);
        json_object_object_add(mine, mkey, copy_of(mval));
      }
    }
    for (size_t i = 0; i < json_object_array_length(in_objs); i++)
      json_object_array_add(objs,
                            copy_of(json_object_array_get_idx(in_objs, i)));
  }
  if (name_objects(call, objs, first) ||
      opx_bench_check(call, call->ns, "the scene was not imported"))
    return 0;
  json_object *names = json_object_new_array();
  size_t n = json_object_array_length(objs);
  for (size_t i = first; i < n; i++)
    json_object_array_add(
        names,
        json_object_new_string(json_object_get_string(json_object_object_get(
            json_object_array_get_idx(objs, i), "name"))));
  json_object *r = json_object_new_object();
  json_object_object_add(r, "imported", json_object_new_int((int)(n - first)));
  json_object_object_add(r, "objects", json_object_new_int((int)n));
  json_object_object_add(r, "names", names);
  json_object_object_add(r, "settings", settings_of(call->ns));
  return h->call_result(call, r);
}

int opx_tool_export(atl_call_t *call) {
  json_object *v;
  int names = json_object_object_get_ex(call->args, "names", &v) &&
              json_object_get_boolean(v);
  json_object *scene = copy_of(call->ns);
  if (scene == NULL)
    return ATL_ENOMEM;
  json_object *objs = opx_ns_ready(scene);
  if (!names)
    for (size_t i = 0; i < json_object_array_length(objs); i++)
      json_object_object_del(json_object_array_get_idx(objs, i), "name");
  json_object *r = json_object_new_object();
  json_object_object_add(r, "scene", scene);
  return call->host->call_result(call, r);
}

/* ---- the CURRENT SCENE section ---- */

static void put_pt(FILE *f, json_object *o, const char *key) {
  json_object *p, *x, *y;
  if (json_object_object_get_ex(o, key, &p) &&
      json_object_object_get_ex(p, "x", &x) &&
      json_object_object_get_ex(p, "y", &y))
    fprintf(f, " %s (%.6g, %.6g)", key, json_object_get_double(x),
            json_object_get_double(y));
}

char *opx_bench_describe(json_object *ns) {
  json_object *objs;
  if (!json_object_object_get_ex(ns, "objs", &objs) ||
      !json_object_is_type(objs, json_type_array))
    return NULL;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL)
    return NULL;
  size_t n = json_object_array_length(objs);
  json_object *s = settings_of(ns);
  fprintf(
      f,
      "Optical bench (2D, Ray Optics Simulation's format; y grows "
      "downward): %zu object%s; ray density %s; colours %s.\n",
      n, n == 1 ? "" : "s",
      json_object_to_json_string(json_object_object_get(s, "rayModeDensity")),
      json_object_get_boolean(json_object_object_get(s, "simulateColors"))
          ? "simulated"
          : "off");
  json_object_put(s);
  /* A summary, not the scene: optics_list has every field. */
  for (size_t i = 0; i < n && i < 50; i++) {
    json_object *o = json_object_array_get_idx(objs, i), *v;
    fprintf(f, "- '%s' %s:",
            json_object_get_string(json_object_object_get(o, "name")),
            json_object_get_string(json_object_object_get(o, "type")));
    put_pt(f, o, "p1");
    put_pt(f, o, "p2");
    put_pt(f, o, "p3");
    if (json_object_object_get_ex(o, "x", &v))
      fprintf(f, " at (%.6g, %.6g)", json_object_get_double(v),
              json_object_get_double(json_object_object_get(o, "y")));
    if (json_object_object_get_ex(o, "path", &v))
      fprintf(f, " path of %zu vertices", json_object_array_length(v));
    if (json_object_object_get_ex(o, "refIndex", &v))
      fprintf(f, " n=%.6g", json_object_get_double(v));
    if (json_object_object_get_ex(o, "focalLength", &v))
      fprintf(f, " f=%.6g", json_object_get_double(v));
    fputc('\n', f);
  }
  if (n > 50)
    fprintf(f, "(and %zu more: optics_list)\n", n - 50);
  fclose(f);
  return buf;
}
