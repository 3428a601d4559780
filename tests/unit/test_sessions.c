/* Sessions in memory (daemon/sessions.c) and the tool-call path, driven
 * through a real daemon context on a loop the test runs: create, load,
 * evict past store.session_cache, events, calls and deletion. */
#include "atl-build.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"

static uv_loop_t loop;
static atl_daemon_t d;
static atl_config_t cfg;
static char dir[] = "/tmp/atl-test-sessions-XXXXXX";

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
  cfg.session_cache = 2;
  cfg.foreground = 1;
  uv_loop_init(&loop);
  cr_assert_eq(atl_daemon_init(&d, &loop, &cfg), 0);
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

/* 60 s: under valgrind on a loaded 2-core machine one test took 34 s. */
TestSuite(sessions, .init = setup, .fini = teardown, .timeout = 60);

/* Runs the loop until *flag is set. */
static void run_until(const int *flag) {
  for (int i = 0; i < 100000 && !*flag; i++)
    uv_run(&loop, UV_RUN_ONCE);
  cr_assert(*flag, "the loop never got there");
}

typedef struct {
  int done;
  int status;
  char id[ATL_SESSION_ID_LEN + 1];
  int64_t committed_seq;
  char *doc;
} got_t;

static void got_cb(atl_daemon_t *dd, atl_session_t *s, int status, void *user) {
  (void)dd;
  got_t *g = user;
  g->status = status;
  if (s) {
    memcpy(g->id, s->id, sizeof(g->id));
    g->committed_seq = s->committed_seq;
    g->doc =
        strdup(json_object_to_json_string_ext(s->doc, JSON_C_TO_STRING_PLAIN));
  }
  g->done = 1;
}

static got_t create(void) {
  got_t g = {0};
  atl_session_create(&d, NULL, got_cb, &g);
  run_until(&g.done);
  cr_assert_eq(g.status, 0);
  return g;
}

static got_t get(const char *id) {
  got_t g = {0};
  atl_session_get(&d, id, got_cb, &g);
  run_until(&g.done);
  return g;
}

typedef struct {
  int done;
  int rpc_status;
  char *envelope;
} call_t;

static void call_cb(atl_daemon_t *dd, int rpc_status, const char *envelope,
                    void *user) {
  (void)dd;
  call_t *c = user;
  c->rpc_status = rpc_status;
  c->envelope = envelope ? strdup(envelope) : NULL;
  c->done = 1;
}

typedef struct {
  call_t *c;
  const char *tool;
  const char *args;
} call_req_t;

static void call_got(atl_daemon_t *dd, atl_session_t *s, int status,
                     void *user) {
  call_req_t *r = user;
  cr_assert_eq(status, 0);
  json_object *args = json_tokener_parse(r->args);
  atl_toolcall_start(dd, s, r->tool, NULL, NULL, args, 0, call_cb, r->c);
  json_object_put(args);
}

static call_t call(const char *id, const char *tool, const char *args) {
  call_t c = {0};
  call_req_t r = {&c, tool, args};
  atl_session_get(&d, id, call_got, &r);
  run_until(&c.done);
  return c;
}

Test(sessions, create_gives_a_new_id_and_an_empty_document) {
  got_t a = create(), b = create();
  cr_assert(atl_is_session_id(a.id));
  cr_assert_str_neq(a.id, b.id);
  cr_assert_str_eq(a.doc, "{}");
  cr_assert_eq(a.committed_seq, 1, "session.created is event 1");
  free(a.doc);
  free(b.doc);
}

Test(sessions, idle_sessions_are_evicted_and_reload_from_the_store) {
  char ids[6][ATL_SESSION_ID_LEN + 1];
  for (int i = 0; i < 6; i++) {
    got_t g = create();
    memcpy(ids[i], g.id, sizeof(ids[i]));
    free(g.doc);
  }
  cr_assert_leq(atl_sessions_loaded(&d), 2, "session_cache = 2");
  got_t g = get(ids[0]);
  cr_assert_eq(g.status, 0);
  cr_assert_str_eq(g.id, ids[0]);
  cr_assert_eq(g.committed_seq, 1);
  free(g.doc);
}

Test(sessions, unknown_session_is_enoent) {
  got_t g = get("0123456789abcdef0123456789abcdef");
  cr_assert_eq(g.status, ATL_ENOENT);
  cr_assert_null(g.doc);
}

static void emitted(void *arg) {
  *(int *)arg = 1;
}

static void emit_got(atl_daemon_t *dd, atl_session_t *s, int status,
                     void *user) {
  cr_assert_eq(status, 0);
  cr_assert_eq(
      atl_session_emit(dd, s, "test.event", "{\"n\":1}", emitted, user), 0);
}

Test(sessions, emitted_events_are_numbered_and_committed) {
  got_t g = create();
  int done = 0;
  atl_session_get(&d, g.id, emit_got, &done);
  run_until(&done);
  got_t again = get(g.id);
  cr_assert_eq(again.committed_seq, 2);
  free(g.doc);
  free(again.doc);
}

Test(sessions, a_successful_call_changes_the_document_a_failed_one_does_not) {
  got_t g = create();
  call_t c = call(g.id, "echo_store", "{\"key\":\"k\",\"value\":[1,2]}");
  cr_assert_eq(c.rpc_status, 0);
  cr_assert(strstr(c.envelope, "\"success\":true") != NULL, "%s", c.envelope);
  free(c.envelope);
  c = call(g.id, "echo_store", "{\"key\":\"\",\"value\":3}");
  cr_assert_eq(c.rpc_status, 0);
  cr_assert(strstr(c.envelope, "\"success\":false") != NULL, "%s", c.envelope);
  cr_assert(strstr(c.envelope, "/key") != NULL, "%s", c.envelope);
  free(c.envelope);
  /* Evict it by creating others, then read it back from the store. */
  for (int i = 0; i < 4; i++)
    free(create().doc);
  got_t again = get(g.id);
  cr_assert_str_eq(again.doc, "{\"echo_test\":{\"k\":[1,2]}}");
  cr_assert_eq(again.committed_seq, 3, "created + two tool.finished");
  free(g.doc);
  free(again.doc);
}

Test(sessions, calls_of_one_session_run_in_order) {
  got_t g = create();
  call_t c[8] = {{0}};
  call_req_t r[8];
  char args[8][64];
  for (int i = 0; i < 8; i++) {
    snprintf(args[i], sizeof(args[i]), "{\"key\":\"last\",\"value\":%d}", i);
    r[i] = (call_req_t){&c[i], "echo_store", args[i]};
    atl_session_get(&d, g.id, call_got, &r[i]);
  }
  run_until(&c[7].done);
  for (int i = 0; i < 8; i++) {
    run_until(&c[i].done);
    free(c[i].envelope);
  }
  got_t again = get(g.id);
  cr_assert_str_eq(again.doc, "{\"echo_test\":{\"last\":7}}");
  free(g.doc);
  free(again.doc);
}

/* A fast handler (ATL_TOOL_FAST) runs inside atl_toolcall_start(), on the
 * loop: its event is numbered and queued before the call returns. Any
 * other handler, and a fast one with tools.inline_fast off, runs on a
 * worker, after. */
typedef struct {
  call_t *c;
  const char *tool;
  const char *args;
  int64_t before, after;
} probe_t;

static void probe_got(atl_daemon_t *dd, atl_session_t *s, int status,
                      void *user) {
  probe_t *p = user;
  cr_assert_eq(status, 0);
  json_object *args = json_tokener_parse(p->args);
  p->before = s->last_seq;
  atl_toolcall_start(dd, s, p->tool, NULL, NULL, args, 0, call_cb, p->c);
  p->after = s->last_seq;
  json_object_put(args);
}

static probe_t probe(const char *id, const char *tool, const char *args) {
  call_t *c = calloc(1, sizeof(*c));
  probe_t p = {c, tool, args, 0, 0};
  atl_session_get(&d, id, probe_got, &p);
  run_until(&c->done);
  cr_assert_eq(c->rpc_status, 0);
  cr_assert(strstr(c->envelope, "\"success\":true") != NULL, "%s", c->envelope);
  free(c->envelope);
  free(c);
  return p;
}

Test(sessions, fast_handlers_run_on_the_loop_unless_configured_not_to) {
  got_t g = create();
  probe_t p = probe(g.id, "echo_store", "{\"key\":\"k\",\"value\":1}");
  cr_assert_eq(p.after, p.before + 1, "a fast handler ran on the loop");
  /* echo_sleep is not flagged fast: it has not even started. */
  p = probe(g.id, "echo_sleep", "{\"ms\":100}");
  cr_assert_eq(p.after, p.before, "a slow handler ran on a worker");
  /* With every worker asleep in another session's call, a call that goes
   * to a worker cannot have started when atl_toolcall_start() returns. */
  cfg.inline_fast = 0;
  cr_assert_leq(cfg.tool_threads, 4);
  call_t sleepers[4] = {{0}};
  call_req_t sr[4];
  got_t others[4];
  /* Sessions first: creating one waits for a commit, which under load
   * could outlast a sleeper started before it. */
  for (unsigned i = 0; i < cfg.tool_threads && i < 4; i++)
    others[i] = create();
  for (unsigned i = 0; i < cfg.tool_threads && i < 4; i++) {
    sr[i] = (call_req_t){&sleepers[i], "echo_sleep", "{\"ms\":1500}"};
    atl_session_get(&d, others[i].id, call_got, &sr[i]);
  }
  /* With session_cache = 2 some of those sessions were evicted and load
   * asynchronously: wait until every sleeper's call has started. */
  for (int i = 0; i < 100000 && d.calls_in_flight < 4; i++)
    uv_run(&loop, UV_RUN_ONCE);
  cr_assert_eq(d.calls_in_flight, 4);
  p = probe(g.id, "echo_store", "{\"key\":\"k\",\"value\":2}");
  cr_assert_eq(p.after, p.before, "inline_fast = no: on a worker");
  for (unsigned i = 0; i < cfg.tool_threads && i < 4; i++) {
    run_until(&sleepers[i].done);
    free(sleepers[i].envelope);
    free(others[i].doc);
  }
  /* Both ways give the same result, committed in order. */
  got_t again = get(g.id);
  cr_assert_str_eq(again.doc, "{\"echo_test\":{\"k\":2}}");
  cr_assert_eq(again.committed_seq, 4, "created + three tool.finished");
  free(g.doc);
  free(again.doc);
}

static void delete_got(atl_daemon_t *dd, atl_session_t *s, int status,
                       void *user) {
  cr_assert_eq(status, 0);
  atl_session_delete(dd, s, got_cb, user);
}

Test(sessions, deleted_sessions_are_gone) {
  got_t g = create();
  got_t del = {0};
  atl_session_get(&d, g.id, delete_got, &del);
  run_until(&del.done);
  cr_assert_eq(del.status, 0);
  free(del.doc);
  got_t again = get(g.id);
  cr_assert_eq(again.status, ATL_ENOENT);
  free(g.doc);
}
