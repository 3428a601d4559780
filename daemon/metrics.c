/* The daemon's counters in the Prometheus text exposition format, version
 * 0.0.4 (https://prometheus.io/docs/instrumenting/exposition_formats/):
 * the admin socket's metrics method.
 * Latencies are summaries (p50, p90, p99 from stats.c's histograms, with
 * _sum and _count) in seconds; errors are counters by kind. Every family's
 * samples follow its own HELP and TYPE lines, as the format requires, and
 * `promtool check metrics` accepts the result (tests/integration/
 * test_admin.py). */
#include "atl-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admin.h"
#include "log.h"
#include "render_host.h"
#include "stats.h"
#include "trace.h"

typedef struct {
  FILE *f;
  const char *family; /* the stats family being written */
  const char *metric; /* its Prometheus name */
  const char *label;  /* the label the series' label goes in */
  const char *extra;  /* more labels, e.g. socket="api", or "" */
  int unitless;       /* a count, not microseconds */
  int counter;        /* which counter (errors: -1) */
  const char *kind;   /* the counter's kind label, or NULL */
} emit_t;

/* A label value with \, " and newlines escaped. */
static void put_value(FILE *f, const char *v) {
  for (; *v; v++) {
    if (*v == '\\' || *v == '"')
      fprintf(f, "\\%c", *v);
    else if (*v == '\n')
      fputs("\\n", f);
    else
      fputc(*v, f);
  }
}

static void labels(FILE *f, const emit_t *e, const atl_series_t *s,
                   const char *more) {
  fputc('{', f);
  fputs(e->extra, f);
  if (e->label != NULL) {
    fprintf(f, "%s%s=\"", e->extra[0] ? "," : "", e->label);
    put_value(f, s->label);
    fputc('"', f);
  }
  if (more != NULL)
    fprintf(f, "%s%s", e->extra[0] || e->label ? "," : "", more);
  fputc('}', f);
}

static double scaled(const emit_t *e, uint64_t v) {
  return e->unitless ? (double)v : (double)v / 1e6;
}

static void summary_series(const atl_series_t *s, void *user) {
  emit_t *e = user;
  if (strcmp(s->family, e->family) != 0)
    return;
  uint64_t count = atomic_load(&s->h.count);
  static const char *const qs[] = {"0.5", "0.9", "0.99"};
  static const double qv[] = {0.5, 0.9, 0.99};
  for (int i = 0; i < 3; i++) {
    char more[32];
    snprintf(more, sizeof(more), "quantile=\"%s\"", qs[i]);
    fputs(e->metric, e->f);
    labels(e->f, e, s, more);
    if (count == 0)
      fputs(" NaN\n", e->f);
    else
      fprintf(e->f, " %.9g\n", scaled(e, atl_hist_quantile(&s->h, qv[i])));
  }
  fprintf(e->f, "%s_sum", e->metric);
  labels(e->f, e, s, NULL);
  fprintf(e->f, " %.9g\n", scaled(e, atomic_load(&s->h.sum)));
  fprintf(e->f, "%s_count", e->metric);
  labels(e->f, e, s, NULL);
  fprintf(e->f, " %llu\n", (unsigned long long)count);
}

static void counter_series(const atl_series_t *s, void *user) {
  emit_t *e = user;
  if (strcmp(s->family, e->family) != 0)
    return;
  uint64_t v = e->counter < 0 ? atomic_load(&s->h.errors)
                              : atomic_load(&s->n[e->counter]);
  char more[64] = "";
  if (e->kind != NULL)
    snprintf(more, sizeof(more), "kind=\"%s\"", e->kind);
  fputs(e->metric, e->f);
  labels(e->f, e, s, e->kind ? more : NULL);
  fprintf(e->f, " %llu\n", (unsigned long long)v);
}

static void head(FILE *f, const char *metric, const char *type,
                 const char *help) {
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", metric, help, metric, type);
}

static void summary(FILE *f, const char *family, const char *metric,
                    const char *label, const char *extra, int unitless,
                    const char *help, int with_head) {
  if (with_head)
    head(f, metric, "summary", help);
  emit_t e = {f, family, metric, label, extra, unitless, 0, NULL};
  atl_stats_each(summary_series, &e);
}

/* The family's counters (errors: counter -1) as one counter metric, each
 * counter a kind. */
static void counters(FILE *f, const char *family, const char *metric,
                     const char *label, const char *extra, const int *which,
                     const char *const *kinds, int n, const char *help,
                     int with_head) {
  if (with_head)
    head(f, metric, "counter", help);
  for (int i = 0; i < n; i++) {
    emit_t e = {f, family, metric, label, extra, 0, which[i], kinds[i]};
    atl_stats_each(counter_series, &e);
  }
}

static void scalar(FILE *f, const char *metric, const char *type,
                   const char *help, double v) {
  head(f, metric, type, help);
  fprintf(f, "%s %.17g\n", metric, v);
}

char *atl_metrics_text(atl_daemon_t *d) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL)
    return NULL;
  scalar(f, "atelier_uptime_seconds", "gauge",
         "Seconds since atelierd started.",
         (double)(atl_mono_ns() - d->started_ns) / 1e9);

  /* JSON-RPC methods of both sockets, as one family with a socket label. */
  summary(
      f, ATL_FAM_RPC, "atelier_rpc_request_seconds", "method", "socket=\"api\"",
      0, "JSON-RPC requests, from arrival to answer, by socket and method.", 1);
  summary(f, ATL_FAM_ADMIN, "atelier_rpc_request_seconds", "method",
          "socket=\"admin\"", 0, NULL, 0);
  static const int err_only[] = {-1};
  static const char *const err_kind[] = {NULL};
  counters(f, ATL_FAM_RPC, "atelier_rpc_request_errors_total", "method",
           "socket=\"api\"", err_only, err_kind, 1,
           "JSON-RPC requests answered with an error.", 1);
  counters(f, ATL_FAM_ADMIN, "atelier_rpc_request_errors_total", "method",
           "socket=\"admin\"", err_only, err_kind, 1, NULL, 0);

  summary(f, ATL_FAM_TOOL, "atelier_tool_call_seconds", "tool", "", 0,
          "Tool calls, from start to commit, by tool.", 1);
  static const int tool_which[] = {ATL_TS_INVALID, ATL_TS_FAILED,
                                   ATL_TS_TIMED_OUT, ATL_TS_HOST_ERROR};
  static const char *const tool_kinds[] = {"invalid_arguments", "failed",
                                           "timed_out", "host_errors"};
  counters(f, ATL_FAM_TOOL, "atelier_tool_call_errors_total", "tool", "",
           tool_which, tool_kinds, 4, "Tool calls that failed, by kind.", 1);

  summary(f, ATL_FAM_MODEL, "atelier_model_turn_seconds", "model", "", 0,
          "Model calls (one turn each), by provider/model.", 1);
  summary(f, ATL_FAM_TTFB, "atelier_model_first_byte_seconds", "model", "", 0,
          "Time from a model request to its first byte, by provider/model.", 1);
  static const int tok_which[] = {ATL_MS_TOKENS_IN, ATL_MS_TOKENS_OUT};
  static const char *const tok_kinds[] = {"in", "out"};
  counters(f, ATL_FAM_MODEL, "atelier_model_tokens_total", "model", "",
           tok_which, tok_kinds, 2,
           "Tokens the providers counted, by provider/model and kind.", 1);
  static const int retry_which[] = {ATL_MS_RETRIES};
  counters(f, ATL_FAM_MODEL, "atelier_model_retries_total", "model", "",
           retry_which, err_kind, 1, "Model calls retried.", 1);
  static const int merr_which[] = {ATL_MS_ERR_HTTP, ATL_MS_ERR_NETWORK,
                                   ATL_MS_ERR_STREAM};
  static const char *const merr_kinds[] = {"http", "network", "stream"};
  counters(f, ATL_FAM_MODEL, "atelier_model_errors_total", "model", "",
           merr_which, merr_kinds, 3, "Model calls that failed, by kind.", 1);

  summary(f, ATL_FAM_COMMIT, "atelier_store_commit_seconds", NULL, "", 0,
          "Group commits of the session store.", 1);
  summary(f, ATL_FAM_BATCH, "atelier_store_commit_transactions", NULL, "", 1,
          "Transactions per group commit.", 1);
  summary(f, ATL_FAM_RENDER, "atelier_render_job_seconds", "for", "", 0,
          "Render jobs, from submission to the last pass.", 1);
  static const int rpasses[] = {ATL_RS_PASSES};
  counters(f, ATL_FAM_RENDER, "atelier_render_passes_total", "for", "", rpasses,
           err_kind, 1, "Render passes over every pixel completed.", 1);
  static const int rrestarts[] = {ATL_RS_RESTARTS};
  counters(f, ATL_FAM_RENDER, "atelier_render_worker_restarts_total", "for", "",
           rrestarts, err_kind, 1,
           "Render workers that died during a job and were replaced.", 1);
  static const int rpaths[] = {ATL_RS_PATHS};
  counters(f, ATL_FAM_RENDER, "atelier_render_paths_total", "for", "", rpaths,
           err_kind, 1, "Camera paths traced.", 1);

  atl_store_stats_t st;
  atl_store_stats(d->store, &st);
  scalar(f, "atelier_store_transactions_total", "counter",
         "Transactions committed.", (double)st.transactions);
  scalar(f, "atelier_store_failures_total", "counter",
         "Transactions rolled back.", (double)st.failures);
  scalar(f, "atelier_store_checkpoints_total", "counter",
         "WAL checkpoints run in the background.", (double)st.checkpoints);
  scalar(f, "atelier_store_wal_pages", "gauge",
         "The write-ahead log's size in pages after the last commit.",
         (double)st.wal_pages);
  scalar(f, "atelier_events_emitted_total", "counter",
         "Session events handed to the store.",
         (double)atomic_load(&atl_stats.events_emitted));
  scalar(f, "atelier_events_delivered_total", "counter",
         "Session events answered to readers (events.read, the page's "
         "streams).",
         (double)atomic_load(&atl_stats.events_delivered));
  scalar(f, "atelier_event_polls_waiting", "gauge",
         "events.read long polls open now (the page's event streams).",
         (double)atomic_load(&atl_stats.polls_waiting));
  scalar(f, "atelier_sessions_loaded", "gauge", "Sessions in memory.",
         (double)atl_sessions_loaded(d));
  scalar(f, "atelier_sessions_created_total", "counter", "Sessions created.",
         (double)atomic_load(&atl_stats.sessions_created));
  scalar(f, "atelier_tool_calls_in_flight", "gauge",
         "Tool calls started and not answered yet.",
         (double)d->calls_in_flight);
  head(f, "atelier_clients", "gauge", "Connections open now, by socket.");
  fprintf(f, "atelier_clients{socket=\"api\"} %u\n",
          d->api ? atl_server_clients(d->api) : 0);
  fprintf(f, "atelier_clients{socket=\"admin\"} %u\n",
          d->admin ? atl_server_clients(d->admin) : 0);
  scalar(f, "atelier_trace_lines_total", "counter",
         "Trace lines written to admin subscribers.",
         (double)atomic_load(&atl_stats.trace_lines));
  scalar(f, "atelier_trace_dropped_total", "counter",
         "Trace lines dropped for subscribers that fell behind.",
         (double)atomic_load(&atl_stats.trace_dropped));
  fclose(f);
  return buf;
}

/* ---- metrics.sock ---- */

/* <socket-dir>/metrics.sock, mode 0660 like api.sock: a connection gets
 * the text above and is closed; nothing is read from it. It is how the
 * web bridge (its own user, in api.sock's group, never admin.sock's)
 * serves /metrics, so that scraping needs no admin power. */
typedef struct scrape_s {
  struct scrape_s *next, *prev;
  uv_write_t req;
  uv_pipe_t pipe;
  char *text;
  int closing;
} scrape_t;

/* Scrapes in flight (loop thread), closed at shutdown: a reader that never
 * reads a text larger than the socket's buffer would otherwise keep its
 * write, and the loop, alive. */
static scrape_t *scrapes;

static void scrape_closed(uv_handle_t *h) {
  scrape_t *s = h->data;
  free(s->text);
  free(s);
}

static void scrape_close(scrape_t *s) {
  if (s->closing)
    return;
  s->closing = 1;
  if (s->prev)
    s->prev->next = s->next;
  else
    scrapes = s->next;
  if (s->next)
    s->next->prev = s->prev;
  uv_close((uv_handle_t *)&s->pipe, scrape_closed);
}

static void scrape_written(uv_write_t *req, int status) {
  (void)status;
  scrape_close(req->data);
}

void atl_metrics_close_all(void) {
  while (scrapes != NULL)
    scrape_close(scrapes);
}

static void on_scrape(uv_stream_t *l, int status) {
  atl_daemon_t *d = l->data;
  if (status < 0)
    return;
  scrape_t *s = calloc(1, sizeof(*s));
  if (s == NULL)
    return;
  uv_pipe_init(d->loop, &s->pipe, 0);
  s->pipe.data = s;
  s->req.data = s;
  s->next = scrapes;
  if (scrapes)
    scrapes->prev = s;
  scrapes = s;
  if (uv_accept(l, (uv_stream_t *)&s->pipe) != 0 ||
      (s->text = atl_metrics_text(d)) == NULL) {
    scrape_close(s);
    return;
  }
  uv_buf_t b = uv_buf_init(s->text, (unsigned)strlen(s->text));
  if (uv_write(&s->req, (uv_stream_t *)&s->pipe, &b, 1, scrape_written) != 0)
    scrape_close(s);
}

int atl_metrics_listen(atl_daemon_t *d, const char *path, uv_pipe_t *listener) {
  uv_pipe_init(d->loop, listener, 0);
  listener->data = d;
  unlink(path);
  mode_t old = umask(0117);
  int rc = uv_pipe_bind(listener, path);
  umask(old);
  if (rc == 0)
    rc = uv_listen((uv_stream_t *)listener, 64, on_scrape);
  if (rc != 0) {
    atl_log_kv(ATL_LOG_ERROR, "cannot listen on the metrics socket", "path",
               path, "error", uv_strerror(rc), NULL);
    uv_close((uv_handle_t *)listener, NULL);
    return ATL_EIO;
  }
  return 0;
}
