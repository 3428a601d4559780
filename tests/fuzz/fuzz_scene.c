/* Fuzz target: the scene plugin's tools. Each line of the input is one
 * call: its first byte picks the tool, the rest is the JSON arguments.
 * Calls go through what the daemon does before a handler (validation
 * against the tool's input schema, defaults) and share one document, so
 * that sequences (create, then update, then remove) are explored.
 *
 * Besides crashes and leaks, it checks the plugin's promise: a call that
 * fails leaves the document exactly as it was, and one that succeeds
 * leaves a scene that export_scene and import_scene accept again.
 *
 * The host table here is the harness's own: the daemon's job machinery
 * (threads, store, timeouts) is not what is being fuzzed. Its schema
 * functions are the daemon's real validator. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atelier/plugin.h>

#include "schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

extern const atl_plugin_t atl_plugin;

/* Stops with the reason: a finding, or a broken harness. */
#define FAIL(why)                                                              \
  do {                                                                         \
    fprintf(stderr, "fuzz_scene: %s (line %d)\n", why, __LINE__);              \
    abort();                                                                   \
  } while (0)

typedef struct {
  int outcome; /* 0 none, 1 success, 2 error */
  json_object *result;
} outcome_t;

static void h_log(const atl_host_t *h, atl_log_level_t level, const char *fmt,
                  ...) {
  (void)h, (void)level, (void)fmt;
}

static int h_result(atl_call_t *call, json_object *result) {
  outcome_t *o = call->host_private;
  if (o->outcome != 0)
    FAIL("two outcomes for one call");
  o->outcome = 1;
  o->result = result;
  return 0;
}

static int h_error(atl_call_t *call, const char *fmt, ...) {
  outcome_t *o = call->host_private;
  if (o->outcome != 0 || fmt == NULL)
    FAIL("two outcomes for one call");
  o->outcome = 2;
  return 0;
}

static int h_operation(atl_call_t *call, const char *target,
                       json_object *before, json_object *after) {
  (void)call, (void)target;
  json_object_put(before);
  json_object_put(after);
  return 0;
}

static int h_compile(const atl_host_t *h, const char *text, atl_schema_t **out,
                     char **err) {
  (void)h;
  return atl_schema_compile_text(text, ATL_SCHEMA_STRICT, out, err);
}

static atl_host_t host = {
    .struct_size = sizeof(atl_host_t),
    .abi_major = ATL_PLUGIN_ABI_MAJOR,
    .abi_minor = ATL_PLUGIN_ABI_MINOR,
    .log = h_log,
    .call_result = h_result,
    .call_error = h_error,
    .call_operation = h_operation,
    .schema_compile = h_compile,
    .schema_validate = atl_schema_validate,
    .schema_apply_defaults = atl_schema_apply_defaults,
    .schema_free = atl_schema_free,
};

/* Compares as text: what a client or the store would see. (json-c's own
 * equality tells an integer 0 from a double 0, which JSON does not.) */
static int same_json(json_object *a, json_object *b) {
  char *ta = strdup(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN));
  int same = ta != NULL && strcmp(ta, json_object_to_json_string_ext(
                                          b, JSON_C_TO_STRING_PLAIN)) == 0;
  free(ta);
  return same;
}

static void *state;
static atl_schema_t *inputs[64];

static void init_once(void) {
  if (state != NULL)
    return;
  if (atl_plugin.n_tools > 64 || atl_plugin.init(&host, &state) != 0)
    FAIL("the plugin did not initialise");
  for (size_t i = 0; i < atl_plugin.n_tools; i++)
    if (atl_schema_compile_text(atl_plugin.tools[i].input_schema,
                                ATL_SCHEMA_STRICT, &inputs[i], NULL) != 0)
      FAIL("a tool schema does not compile");
}

/* Runs one call on doc (replaced by the new document on success).
 * Returns the outcome. */
static int run(size_t t, const char *args_text, json_object **doc) {
  json_object *args = json_tokener_parse(args_text);
  if (args == NULL)
    return 0;
  if (atl_schema_validate(inputs[t], args, NULL) != 0) {
    json_object_put(args);
    return 0;
  }
  atl_schema_apply_defaults(inputs[t], args);
  json_object *work = NULL;
  if (json_object_deep_copy(*doc, &work, NULL) != 0)
    FAIL("out of memory");
  json_object *ns;
  if (!json_object_object_get_ex(work, "scene", &ns)) {
    ns = json_object_new_object();
    json_object_object_add(work, "scene", ns);
  }
  outcome_t o = {0, NULL};
  atl_call_t call = {.struct_size = sizeof(atl_call_t),
                     .session_id = "00000000000000000000000000000000",
                     .tool = atl_plugin.tools[t].name,
                     .args = args,
                     .ns = ns,
                     .document = work,
                     .plugin_state = state,
                     .host = &host,
                     .host_private = &o};
  int rc = atl_plugin.tools[t].handler(&call);
  if (rc == 0 && o.outcome == 0)
    FAIL("a handler returned without an outcome");
  if (rc == 0 && o.outcome == 2) {
    /* The promise: a failed call changed nothing. */
    json_object *before = NULL;
    json_object_object_get_ex(*doc, "scene", &before);
    if (!same_json(before, ns)) {
      fprintf(stderr, "%s %s\n", atl_plugin.tools[t].name, args_text);
      FAIL("a failed call changed the scene");
    }
  }
  if (rc == 0 && o.outcome == 1 &&
      !(atl_plugin.tools[t].flags & ATL_TOOL_READ_ONLY)) {
    json_object_put(*doc);
    *doc = work;
    work = NULL;
  }
  json_object_put(work);
  json_object_put(o.result);
  json_object_put(args);
  return o.outcome;
}

static size_t tool_named(const char *name) {
  for (size_t i = 0; i < atl_plugin.n_tools; i++)
    if (strcmp(atl_plugin.tools[i].name, name) == 0)
      return i;
  FAIL("no such tool");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  init_once();
  char *text = malloc(size + 1);
  if (text == NULL)
    return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  /* Every input starts from a complete, empty scene, so that the
   * defaults a first call fills in are not mistaken for a change. */
  json_object *doc = json_object_new_object();
  if (run(tool_named("import_scene"), "{\"scene\":{}}", &doc) != 1)
    FAIL("an empty scene does not import");
  for (char *line = text; line != NULL && *line != '\0';) {
    char *nl = strchr(line, '\n');
    if (nl != NULL)
      *nl = '\0';
    if (*line != '\0')
      run((unsigned char)line[0] % atl_plugin.n_tools, line + 1, &doc);
    line = nl ? nl + 1 : NULL;
  }
  /* Whatever the calls built must survive import, unchanged. */
  json_object *ns, *copy = NULL;
  if (!json_object_object_get_ex(doc, "scene", &ns) ||
      json_object_deep_copy(ns, &copy, NULL) != 0)
    FAIL("no scene");
  json_object *wrapped = json_object_new_object();
  json_object_object_add(wrapped, "scene", json_object_get(copy));
  char *args = strdup(json_object_to_json_string(wrapped));
  json_object_put(wrapped);
  if (run(tool_named("import_scene"), args, &doc) != 1) {
    fprintf(stderr, "%s\n", args);
    FAIL("a scene built by the tools does not import");
  }
  json_object_object_get_ex(doc, "scene", &ns);
  if (!same_json(copy, ns))
    FAIL("importing a scene changed it");
  json_object_put(copy);
  free(args);
  json_object_put(doc);
  free(text);
  return 0;
}
