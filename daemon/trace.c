/* The admin socket's trace (trace.h). */
#include "atl-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "log.h"
#include "stats.h"
#include "trace.h"
#include "util.h"

_Atomic unsigned atl_trace_mask;

static const char *const kind_names[] = {"rpc",    "run",    "turn",  "tool",
                                         "commit", "render", "event", "log"};
#define N_KINDS (sizeof(kind_names) / sizeof(kind_names[0]))

typedef struct sub_s {
  struct sub_s *next;
  atl_conn_t *conn;
  unsigned mask;
  char session[ATL_SESSION_ID_LEN + 1]; /* "": every session */
  int log_level;
  uint64_t dropped; /* lines lost since the last "dropped" line */
  uv_timer_t timer;
  int has_timer;
  int ended;
} sub_t;

/* The daemon lines are posted to; written at start and exit only, read by
 * emitting threads. */
static _Atomic(atl_daemon_t *) g_daemon;
/* Loop thread only. */
static sub_t *subs;
static unsigned n_subs;

/* One line on its way to the loop. */
typedef struct {
  unsigned kind;
  char session[ATL_SESSION_ID_LEN + 1];
  size_t len;
  char line[];
} msg_t;

const char *atl_trace_kind_name(unsigned kind) {
  for (unsigned i = 0; i < N_KINDS; i++)
    if (kind == 1u << i)
      return kind_names[i];
  return "?";
}

unsigned atl_trace_kind_parse(const char *name) {
  for (unsigned i = 0; i < N_KINDS; i++)
    if (strcmp(name, kind_names[i]) == 0)
      return 1u << i;
  return 0;
}

/* The mask and the log tap follow the subscribers. Loop thread. */
static void log_tap(atl_log_level_t level, const char *line, size_t len);
static void recompute(void) {
  unsigned mask = 0;
  int level = -1;
  for (sub_t *s = subs; s != NULL; s = s->next) {
    if (s->ended)
      continue;
    mask |= s->mask;
    if ((s->mask & ATL_TR_LOG) && s->log_level > level)
      level = s->log_level;
  }
  atomic_store(&atl_trace_mask, mask);
  atl_log_set_tap(level >= 0 ? log_tap : NULL, level);
}

void atl_trace_init(atl_daemon_t *d) {
  atomic_store(&g_daemon, d);
}

static int matches(const sub_t *s, const msg_t *m) {
  if (s->ended || !(s->mask & m->kind))
    return 0;
  if (s->session[0] == '\0')
    return 1;
  if (m->kind == ATL_TR_LOG) {
    /* A log line names its session as a logfmt field. */
    char key[ATL_SESSION_ID_LEN + 16];
    snprintf(key, sizeof(key), "session=%s", s->session);
    return strstr(m->line, key) != NULL;
  }
  return strcmp(s->session, m->session) == 0;
}

/* Writes line to s, after the count of what s lost, if it can. */
static void deliver(sub_t *s, const char *line, size_t len) {
  if (s->dropped > 0) {
    char note[64];
    int n = snprintf(note, sizeof(note), "{\"dropped\":%llu}",
                     (unsigned long long)s->dropped);
    if (atl_conn_stream_write(s->conn, note, (size_t)n, ATL_TRACE_BUFFER) !=
        0) {
      s->dropped++;
      atomic_fetch_add(&atl_stats.trace_dropped, 1);
      return;
    }
    s->dropped = 0;
  }
  if (atl_conn_stream_write(s->conn, line, len, ATL_TRACE_BUFFER) == 0) {
    atomic_fetch_add(&atl_stats.trace_lines, 1);
  } else {
    s->dropped++;
    atomic_fetch_add(&atl_stats.trace_dropped, 1);
  }
}

static void fan_out(void *arg) {
  msg_t *m = arg;
  for (sub_t *s = subs; s != NULL; s = s->next)
    if (matches(s, m))
      deliver(s, m->line, m->len);
  free(m);
}

void atl_trace_emit(unsigned kind, const char *session, const char *what,
                    json_object *fields) {
  atl_daemon_t *d = atomic_load(&g_daemon);
  if (d == NULL || !atl_trace_wants(kind)) {
    json_object_put(fields);
    return;
  }
  json_object *o = json_object_new_object();
  char t[32];
  double secs = (double)(atl_mono_ns() - d->started_ns) / 1e9;
  snprintf(t, sizeof(t), "%.6f", secs);
  json_object_object_add(o, "t", json_object_new_double_s(secs, t));
  json_object_object_add(o, "kind",
                         json_object_new_string(atl_trace_kind_name(kind)));
  if (session != NULL && session[0] != '\0')
    json_object_object_add(o, "session", json_object_new_string(session));
  if (what != NULL)
    json_object_object_add(o, "what", json_object_new_string(what));
  if (fields != NULL) {
    json_object_object_foreach(fields, k, v) {
      json_object_object_add(o, k, json_object_get(v));
    }
    json_object_put(fields);
  }
  size_t len = 0;
  const char *text =
      json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);
  msg_t *m = malloc(sizeof(*m) + len + 1);
  if (m != NULL) {
    m->kind = kind;
    snprintf(m->session, sizeof(m->session), "%s", session ? session : "");
    m->len = len;
    memcpy(m->line, text, len + 1);
    if (atl_daemon_post(d, fan_out, m) != 0)
      free(m);
  }
  json_object_put(o);
}

static void log_tap(atl_log_level_t level, const char *line, size_t len) {
  json_object *f = json_object_new_object();
  json_object_object_add(f, "level",
                         json_object_new_string(atl_log_level_name(level)));
  json_object_object_add(f, "line", json_object_new_string_len(line, (int)len));
  atl_trace_emit(ATL_TR_LOG, NULL, NULL, f);
}

/* ---- subscribers ---- */

static void sub_free_cb(uv_handle_t *h) {
  free(h->data);
}

static void sub_remove(sub_t *s) {
  for (sub_t **p = &subs; *p != NULL; p = &(*p)->next) {
    if (*p == s) {
      *p = s->next;
      n_subs--;
      break;
    }
  }
  recompute();
  if (s->has_timer) {
    uv_timer_stop(&s->timer);
    uv_close((uv_handle_t *)&s->timer, sub_free_cb);
  } else {
    free(s);
  }
}

/* The connection closed (client gone, killed, or ended below). */
static void on_conn_close(void *arg) {
  sub_remove(arg);
}

static void end_sub(sub_t *s, const char *why) {
  if (s->ended)
    return;
  char line[64];
  int n = snprintf(line, sizeof(line), "{\"end\":\"%s\"}", why);
  deliver(s, line, (size_t)n);
  s->ended = 1;
  recompute();
  atl_conn_end(s->conn); /* on_conn_close frees s */
}

static void on_timer(uv_timer_t *t) {
  end_sub(t->data, "time");
}

int atl_trace_subscribe(atl_daemon_t *d, atl_conn_t *conn, unsigned mask,
                        const char *session, int log_level, double seconds) {
  sub_t *s = calloc(1, sizeof(*s));
  if (s == NULL)
    return ATL_ENOMEM;
  s->conn = conn;
  s->mask = mask;
  s->log_level = log_level;
  snprintf(s->session, sizeof(s->session), "%s", session ? session : "");
  s->timer.data = s;
  if (seconds > 0) {
    uv_timer_init(d->loop, &s->timer);
    s->has_timer = 1;
    uv_timer_start(&s->timer, on_timer, (uint64_t)(seconds * 1000.0 + 0.5), 0);
  }
  s->next = subs;
  subs = s;
  n_subs++;
  atl_conn_stream_start(conn, on_conn_close, s);
  recompute();
  return 0;
}

unsigned atl_trace_subscribers(void) {
  return n_subs;
}

void atl_trace_end_all(void) {
  for (sub_t *s = subs, *next; s != NULL; s = next) {
    next = s->next;
    end_sub(s, "shutdown");
  }
}
