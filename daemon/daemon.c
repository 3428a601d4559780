/* The daemon context: the post queue that brings results back to the loop,
 * the handler pool, the store reader pool, signals and graceful shutdown.
 */
#include "atl-build.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "daemon.h"
#include "slowlog.h"
#include "token.h"
#include "trace.h"
#include "render_host.h"
#include "agent/agent.h"
#include "log.h"
#include "mcp_front.h"
#include "preview.h"

/* ---- the post queue ---- */

/* Appends a cell for fn(arg) to a FIFO; the caller holds the FIFO's lock. */
static int fifo_push(atl_post_t **head, atl_post_t **tail, atl_post_fn fn,
                     void *arg) {
  atl_post_t *p = malloc(sizeof(*p));
  if (p == NULL)
    return ATL_ENOMEM;
  p->next = NULL;
  p->fn = fn;
  p->arg = arg;
  if (*tail)
    (*tail)->next = p;
  else
    *head = p;
  *tail = p;
  return 0;
}

int atl_daemon_post(atl_daemon_t *d, atl_post_fn fn, void *arg) {
  pthread_mutex_lock(&d->post_mu);
  int rc = fifo_push(&d->post_head, &d->post_tail, fn, arg);
  pthread_mutex_unlock(&d->post_mu);
  /* uv_async_send coalesces: many posts, one wake-up. */
  if (rc == 0)
    uv_async_send(&d->post_async);
  return rc;
}

static void post_drain_cb(uv_async_t *a) {
  atl_daemon_t *d = a->data;
  for (;;) {
    pthread_mutex_lock(&d->post_mu);
    atl_post_t *p = d->post_head;
    d->post_head = d->post_tail = NULL;
    pthread_mutex_unlock(&d->post_mu);
    if (p == NULL)
      break;
    while (p) {
      atl_post_t *next = p->next;
      p->fn(p->arg);
      free(p);
      p = next;
    }
  }
}

/* ---- the handler pool ---- */

static void *pool_main(void *arg) {
  atl_daemon_t *d = arg;
  for (;;) {
    pthread_mutex_lock(&d->pool_mu);
    while (d->pool_head == NULL && !d->pool_stop)
      pthread_cond_wait(&d->pool_cv, &d->pool_mu);
    atl_post_t *p = d->pool_head;
    if (p == NULL) {
      pthread_mutex_unlock(&d->pool_mu);
      return NULL;
    }
    d->pool_head = p->next;
    if (d->pool_head == NULL)
      d->pool_tail = NULL;
    pthread_mutex_unlock(&d->pool_mu);
    p->fn(p->arg);
    free(p);
  }
}

int atl_pool_submit(atl_daemon_t *d, atl_post_fn fn, void *arg) {
  pthread_mutex_lock(&d->pool_mu);
  int rc = fifo_push(&d->pool_head, &d->pool_tail, fn, arg);
  if (rc == 0)
    pthread_cond_signal(&d->pool_cv);
  pthread_mutex_unlock(&d->pool_mu);
  return rc;
}

static int pool_start(atl_daemon_t *d, unsigned n) {
  d->pool_threads = calloc(n, sizeof(pthread_t));
  if (d->pool_threads == NULL)
    return ATL_ENOMEM;
  for (unsigned i = 0; i < n; i++) {
    int rc = pthread_create(&d->pool_threads[i], NULL, pool_main, d);
    if (rc != 0)
      return -rc;
    d->pool_n++;
  }
  return 0;
}

/* Stops the pool once its queue is empty. A handler stuck past its timeout
 * would keep its thread; we detach rather than wait forever for it, and
 * return how many were left so. */
static unsigned pool_stop(atl_daemon_t *d) {
  unsigned left = 0;
  pthread_mutex_lock(&d->pool_mu);
  d->pool_stop = 1;
  pthread_cond_broadcast(&d->pool_cv);
  pthread_mutex_unlock(&d->pool_mu);
  for (unsigned i = 0; i < d->pool_n; i++) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 2;
    if (pthread_timedjoin_np(d->pool_threads[i], NULL, &ts) != 0) {
      atl_log_kv(ATL_LOG_WARN, "a tool handler did not return; leaving it",
                 NULL);
      pthread_detach(d->pool_threads[i]);
      left++;
    }
  }
  free(d->pool_threads);
  d->pool_threads = NULL;
  d->pool_n = 0;
  return left;
}

/* ---- store readers ---- */

atl_store_reader_t *atl_daemon_reader_take(atl_daemon_t *d) {
  atl_store_reader_t *r = NULL;
  pthread_mutex_lock(&d->readers_mu);
  if (d->n_readers > 0)
    r = d->readers[--d->n_readers];
  pthread_mutex_unlock(&d->readers_mu);
  if (r == NULL && atl_store_reader_open(d->store, &r) != 0)
    return NULL;
  return r;
}

void atl_daemon_reader_give(atl_daemon_t *d, atl_store_reader_t *r) {
  if (r == NULL)
    return;
  pthread_mutex_lock(&d->readers_mu);
  if (d->n_readers == d->cap_readers) {
    size_t cap = d->cap_readers ? d->cap_readers * 2 : 8;
    atl_store_reader_t **nr = realloc(d->readers, cap * sizeof(*nr));
    if (nr == NULL) {
      pthread_mutex_unlock(&d->readers_mu);
      atl_store_reader_close(r);
      return;
    }
    d->readers = nr;
    d->cap_readers = cap;
  }
  d->readers[d->n_readers++] = r;
  pthread_mutex_unlock(&d->readers_mu);
}

/* ---- signals and shutdown ---- */

static void close_walk_cb(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h))
    uv_close(h, NULL);
}

static void shutdown_finish(atl_daemon_t *d) {
  uv_timer_stop(&d->shutdown_timer);
  if (d->calls_in_flight > 0)
    atl_log_kv(ATL_LOG_WARN, "shutdown timeout: tool calls still running",
               NULL);
  if (d->api) {
    atl_server_close(d->api);
    d->api = NULL;
  }
  atl_trace_end_all();
  if (d->metrics_listening) {
    d->metrics_listening = 0;
    uv_close((uv_handle_t *)&d->metrics_listener, NULL);
    unlink(d->metrics_path);
  }
  atl_metrics_close_all();
  if (d->admin) {
    atl_server_close(d->admin);
    d->admin = NULL;
  }
  if (d->http) {
    atl_http_close(d->http);
    d->http = NULL;
  }
  uv_close((uv_handle_t *)&d->sig_term, NULL);
  uv_close((uv_handle_t *)&d->sig_int, NULL);
  uv_close((uv_handle_t *)&d->sig_hup, NULL);
  uv_close((uv_handle_t *)&d->shutdown_timer, NULL);
  uv_close((uv_handle_t *)&d->post_async, NULL);
}

static void shutdown_poll_cb(uv_timer_t *t) {
  atl_daemon_t *d = t->data;
  if ((d->calls_in_flight == 0 && d->work_in_flight == 0 &&
       !atl_previews_busy(d) && !atl_mcp_front_busy(d)) ||
      atl_mono_ns() >= d->shutdown_deadline_ns)
    shutdown_finish(d);
}

void atl_daemon_shutdown(atl_daemon_t *d) {
  if (d->shutting_down)
    return;
  d->shutting_down = 1;
  atl_log_kv(ATL_LOG_INFO, "shutting down", NULL);
  if (d->api)
    atl_server_stop_accepting(d->api);
  atl_mcp_front_shutdown(d);
  atl_sessions_wake_all(d);
  /* Before the farm stops: no preview starts a render it would refuse. */
  atl_previews_shutdown(d);
  /* Renders would hold the shutdown up for seconds: end them now (their
   * calls fail with "the daemon is shutting down"). */
  atl_render_host_stop(d);
  d->shutdown_deadline_ns =
      atl_mono_ns() + (uint64_t)d->cfg->shutdown_timeout_ms * 1000000u;
  /* Poll rather than count down: in-flight work finishes through several
   * modules, and a 10 ms tick is cheap next to a shutdown. */
  uv_timer_start(&d->shutdown_timer, shutdown_poll_cb, 0, 10);
}

static void signal_cb(uv_signal_t *h, int signum) {
  atl_daemon_t *d = h->data;
  if (signum == SIGHUP) {
    int rc = atl_log_reopen();
    atl_log_kv(rc == 0 ? ATL_LOG_INFO : ATL_LOG_ERROR,
               rc == 0 ? "log file reopened" : "could not reopen the log file",
               NULL);
    return;
  }
  if (d->shutting_down && signum == SIGINT) {
    /* A second Ctrl-C means "now": skip the wait for in-flight calls. */
    d->shutdown_deadline_ns = 0;
    return;
  }
  atl_daemon_shutdown(d);
}

/* ---- set-up ---- */

/* daemon.plugin_dir is a list of directories separated by ':', as PATH
 * is: the tests add the directory of their own plugins (echo_test) to the
 * build's, which a production stack loads alone. */
static int load_plugin_dirs(atl_daemon_t *d, const atl_config_t *cfg,
                            const atl_load_options_t *lo) {
  char *dirs = strdup(cfg->plugin_dir), *save = NULL;
  if (dirs == NULL)
    return ATL_ENOMEM;
  int rc = 0;
  for (char *dir = strtok_r(dirs, ":", &save); dir != NULL && rc == 0;
       dir = strtok_r(NULL, ":", &save))
    rc = atl_registry_load_dir(&d->registry, dir, cfg->plugins_disable,
                               cfg->plugins_strict, lo);
  free(dirs);
  return rc;
}

int atl_daemon_init(atl_daemon_t *d, uv_loop_t *loop, atl_config_t *cfg) {
  char *err = NULL;
  int rc;
  memset(d, 0, sizeof(*d));
  d->loop = loop;
  d->cfg = cfg;
  d->started_ms = atl_now_ms();
  d->started_ns = atl_mono_ns();
  pthread_mutex_init(&d->post_mu, NULL);
  pthread_mutex_init(&d->pool_mu, NULL);
  pthread_cond_init(&d->pool_cv, NULL);
  pthread_mutex_init(&d->readers_mu, NULL);
  d->n_buckets = 4096;
  d->buckets = calloc(d->n_buckets, sizeof(*d->buckets));
  if (d->buckets == NULL)
    return ATL_ENOMEM;

  uv_async_init(loop, &d->post_async, post_drain_cb);
  d->post_async.data = d;
  uv_timer_init(loop, &d->shutdown_timer);
  d->shutdown_timer.data = d;
  uv_signal_init(loop, &d->sig_term);
  uv_signal_init(loop, &d->sig_int);
  uv_signal_init(loop, &d->sig_hup);
  d->sig_term.data = d->sig_int.data = d->sig_hup.data = d;
  uv_signal_start(&d->sig_term, signal_cb, SIGTERM);
  uv_signal_start(&d->sig_int, signal_cb, SIGINT);
  uv_signal_start(&d->sig_hup, signal_cb, SIGHUP);
  signal(SIGPIPE, SIG_IGN);

  /* Before anything is listening: a secret file others may read is a
   * mistake to stop at, not to run with. */
  rc = atl_admin_load_secret(d);
  if (rc != 0)
    return rc;
  atl_slowlog_configure(cfg->admin_slowlog_ms, cfg->admin_slowlog_max);

  atl_store_options_t so = {.data_dir = cfg->data_dir,
                            .synchronous = cfg->store_synchronous,
                            .max_batch = cfg->max_batch};
  rc = atl_store_open(&so, &d->store, &err);
  if (rc != 0) {
    atl_log_kv(ATL_LOG_ERROR, "cannot open the session store", "dir",
               cfg->data_dir, "error", err ? err : atl_strerror(rc), NULL);
    free(err);
    return rc;
  }
  /* The store made the data directory; the token lives beside it. */
  if (cfg->http_auth) {
    rc = atl_token_load(cfg->data_dir, d->http_token, &err);
    if (rc != 0) {
      atl_log_kv(ATL_LOG_ERROR, "cannot load the HTTP API's token", "error",
                 err ? err : atl_strerror(rc), NULL);
      free(err);
      return rc;
    }
  }
  rc = atl_secret_load(cfg->data_dir, ATL_MCP_KEY_FILE, "the MCP session key",
                       d->mcp_key, &err);
  if (rc != 0) {
    atl_log_kv(ATL_LOG_ERROR, "cannot load the MCP session key", "error",
               err ? err : atl_strerror(rc), NULL);
    free(err);
    return rc;
  }
  rc = atl_http_init(loop, &d->http);
  if (rc != 0) {
    atl_log_kv(ATL_LOG_ERROR, "cannot start the HTTP client", "error",
               atl_strerror(rc), NULL);
    return rc;
  }
  rc = pool_start(d, cfg->tool_threads);
  if (rc != 0)
    return rc;

  atl_host_table_init(d, &d->host_template);
  /* Before the plugins, whose host tables are copies of the template. */
  atl_render_host_start(d);
  atl_load_options_t lo = {.min_minor = 0,
                           .timeout_ms = cfg->tool_timeout_ms,
                           .long_timeout_ms = cfg->tool_long_timeout_ms,
                           .host_template = &d->host_template};
  rc = load_plugin_dirs(d, cfg, &lo);
  if (rc != 0)
    return rc;
  rc = atl_agent_init(d);
  if (rc != 0)
    return rc;
  rc = atl_previews_start(d);
  if (rc != 0)
    return rc;

  rc = atl_mkdir_p(cfg->socket_dir, 0750);
  if (rc != 0) {
    atl_log_kv(ATL_LOG_ERROR, "cannot create the socket directory", "dir",
               cfg->socket_dir, "error", atl_strerror(rc), NULL);
    return rc;
  }
  char path[4096];
  snprintf(path, sizeof(path), "%s/api.sock", cfg->socket_dir);
  rc = atl_server_start(d, path, &atl_api_kind, &d->api);
  if (rc != 0)
    return rc;
  atl_trace_init(d);
  char admin_path[4096];
  snprintf(admin_path, sizeof(admin_path), "%s/admin.sock", cfg->socket_dir);
  rc = atl_server_start(d, admin_path, &atl_admin_kind, &d->admin);
  if (rc != 0)
    return rc;
  snprintf(d->metrics_path, sizeof(d->metrics_path), "%s/metrics.sock",
           cfg->socket_dir);
  rc = atl_metrics_listen(d, d->metrics_path, &d->metrics_listener);
  if (rc != 0)
    return rc;
  d->metrics_listening = 1;
  atl_sessions_resume(d);
  char ntools[16];
  snprintf(ntools, sizeof(ntools), "%zu", d->registry.n_tools);
  atl_log_kv(ATL_LOG_INFO, "atelierd ready", "version", PACKAGE_VERSION,
             "socket", path, "data_dir", cfg->data_dir, "tools", ntools, NULL);
  return 0;
}

void atl_daemon_free(atl_daemon_t *d) {
  /* Long handlers (a render, a sandboxed run, an image request) poll
   * call_cancelled(): asked now, they return within the pool's wait. */
  for (size_t b = 0; b < d->n_buckets; b++)
    for (atl_session_t *s = d->buckets[b]; s != NULL; s = s->hnext)
      atl_toolcall_cancel_long(s);
  unsigned left = pool_stop(d);
  left += (unsigned)atl_previews_free(d);
  atl_trace_init(NULL);
  atl_agent_free(d);
  /* A handler still running would run code of an unloaded plugin: then
   * the plugins stay loaded (the process is ending anyway). */
  if (left == 0)
    atl_registry_unload(&d->registry);
  atl_sessions_free_all(d);
  /* Whatever is still posted belongs to work that will never finish; the
   * functions are not run, but the queue cells are freed. */
  while (d->post_head) {
    atl_post_t *p = d->post_head;
    d->post_head = p->next;
    free(p);
  }
  for (size_t i = 0; i < d->n_readers; i++)
    atl_store_reader_close(d->readers[i]);
  free(d->readers);
  if (d->store)
    atl_store_close(d->store);
  free(d->buckets);
  uv_walk(d->loop, close_walk_cb, NULL);
  uv_run(d->loop, UV_RUN_DEFAULT);
  pthread_mutex_destroy(&d->post_mu);
  pthread_mutex_destroy(&d->pool_mu);
  pthread_cond_destroy(&d->pool_cv);
  pthread_mutex_destroy(&d->readers_mu);
}
