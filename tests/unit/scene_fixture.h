/* A real daemon context with the real plugins (the build's plugins/.libs),
 * on a loop the test runs, and one session to call the scene tools in:
 * the same path a tool.call takes, from argument validation to the commit.
 * Shared by the scene plugin's test files. */
#ifndef ATL_SCENE_FIXTURE_H
#define ATL_SCENE_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "log.h"

static uv_loop_t loop;
static atl_daemon_t d;
static atl_config_t cfg;
static char dir[] = "/tmp/atl-test-scene-XXXXXX";
static char sid[ATL_SESSION_ID_LEN + 1];

static void run_until(const int *flag) {
  for (int i = 0; i < 1000000 && !*flag; i++)
    uv_run(&loop, UV_RUN_ONCE);
  cr_assert(*flag, "the loop never got there");
}

typedef struct {
  int done;
  int status;
  char *envelope;
  const char *tool;
  const char *args;
} fx_call_t;

static void fx_created(atl_daemon_t *dd, atl_session_t *s, int status,
                       void *user) {
  (void)dd;
  cr_assert_eq(status, 0);
  memcpy(sid, s->id, sizeof(sid));
  *(int *)user = 1;
}

static void fx_done(atl_daemon_t *dd, int rpc_status, const char *envelope,
                    void *user) {
  (void)dd;
  fx_call_t *c = user;
  c->status = rpc_status;
  c->envelope = envelope ? strdup(envelope) : NULL;
  c->done = 1;
}

static void fx_got(atl_daemon_t *dd, atl_session_t *s, int status, void *user) {
  fx_call_t *c = user;
  cr_assert_eq(status, 0);
  json_object *args = json_tokener_parse(c->args);
  cr_assert_not_null(args, "test arguments are not JSON: %s", c->args);
  atl_toolcall_start(dd, s, c->tool, NULL, NULL, args, 0, fx_done, c);
  json_object_put(args);
}

static void setup(void) {
  cr_assert_not_null(mkdtemp(dir));
  atl_log_open(ATL_LOG_ERROR, NULL);
  atl_config_defaults(&cfg);
  free(cfg.socket_dir);
  free(cfg.data_dir);
  free(cfg.plugin_dir);
  cr_assert(asprintf(&cfg.socket_dir, "%s/run", dir) > 0);
  cr_assert(asprintf(&cfg.data_dir, "%s/data", dir) > 0);
  const char *b = getenv("ATL_TEST_BUILDDIR");
  /* The build's plugins and the tests' own (echo_test). */
  cr_assert(asprintf(&cfg.plugin_dir, "%s/plugins/.libs:%s/tests/plugins/.libs",
                     b ? b : ATL_TEST_BUILDDIR, b ? b : ATL_TEST_BUILDDIR) > 0);
  cfg.foreground = 1;
  cfg.store_synchronous = 1;
  /* Under valgrind, importing 10,000 shapes takes a minute, not 0.3 s:
   * these tests are about results, so no call may time out. */
  cfg.tool_timeout_ms = 600000;
  uv_loop_init(&loop);
  cr_assert_eq(atl_daemon_init(&d, &loop, &cfg), 0);
  int done = 0;
  atl_session_create(&d, NULL, fx_created, &done);
  run_until(&done);
}

static void teardown(void) {
  atl_daemon_shutdown(&d);
  uv_run(&loop, UV_RUN_DEFAULT);
  atl_daemon_free(&d);
  uv_loop_close(&loop);
  atl_config_free(&cfg);
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  cr_assert_eq(system(cmd), 0);
}

/* Calls tool with args (JSON text) in the session; returns the envelope
 * (a new reference). */
static json_object *call(const char *tool, const char *args) {
  fx_call_t c = {0};
  c.tool = tool;
  c.args = args;
  atl_session_get(&d, sid, fx_got, &c);
  run_until(&c.done);
  cr_assert_eq(c.status, 0, "%s: rpc status %d", tool, c.status);
  json_object *env = json_tokener_parse(c.envelope);
  cr_assert_not_null(env, "%s", c.envelope);
  free(c.envelope);
  return env;
}

static int succeeded(json_object *env) {
  json_object *s;
  return json_object_object_get_ex(env, "success", &s) &&
         json_object_get_boolean(s);
}

/* The result of a call that must succeed, as compact JSON text
 * (malloc()ed). */
static char *ok(const char *tool, const char *args) {
  json_object *env = call(tool, args);
  cr_assert(succeeded(env), "%s %s failed: %s", tool, args,
            json_object_to_json_string(env));
  json_object *r;
  json_object_object_get_ex(env, "result", &r);
  char *out = strdup(json_object_to_json_string_ext(
      r, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(env);
  return out;
}

/* The error message of a call that must fail (malloc()ed). */
static char *err(const char *tool, const char *args) {
  json_object *env = call(tool, args);
  cr_assert(!succeeded(env), "%s %s succeeded: %s", tool, args,
            json_object_to_json_string(env));
  json_object *e;
  cr_assert(json_object_object_get_ex(env, "error", &e));
  char *out = strdup(json_object_get_string(e));
  json_object_put(env);
  return out;
}

/* Asserts that tool(args) succeeds with exactly this result. */
#define EXPECT_OK(tool, args, expected)                                        \
  do {                                                                         \
    char *got_ = ok(tool, args);                                               \
    cr_assert_str_eq(got_, expected, "%s %s", tool, args);                     \
    free(got_);                                                                \
  } while (0)

/* Asserts that tool(args) fails with exactly this message. */
#define EXPECT_ERR(tool, args, expected)                                       \
  do {                                                                         \
    char *got_ = err(tool, args);                                              \
    cr_assert_str_eq(got_, expected, "%s %s", tool, args);                     \
    free(got_);                                                                \
  } while (0)

#endif
