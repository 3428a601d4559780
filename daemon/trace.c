/* The admin socket's trace (trace.h). */
#include "atl-build.h"

#include <pthread.h>
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
  /* This batch's lines for it, and how many. */
  char *out;
  size_t out_len, out_cap, out_lines;
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

/* Lines on their way to the loop, from any thread: records of a header
 * and the line, appended under the lock, taken whole by the loop. One
 * wake-up serves every line emitted before the loop gets to them, so a
 * burst costs one uv_async_send and one write per subscriber, not one of
 * each per line. */
typedef struct {
  uint32_t len; /* of the line, without its newline */
  uint16_t kind;
  int16_t level; /* a log line's, else -1 */
  char session[ATL_SESSION_ID_LEN + 1];
} rec_t;
#define REC_ALIGN(n) (((n) + 7) & ~(size_t)7)
/* The most the queue holds before lines are dropped at the source: the
 * loop is far behind, and every subscriber would lose them anyway. */
#define QUEUE_MAX ((size_t)8 << 20)

static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;
static char *q_buf;
static size_t q_len, q_cap;
static int q_posted;
static uint64_t q_dropped; /* lines the queue had no room for */
static uv_async_t q_async;
static int q_ready; /* q_async is initialised (loop thread) */

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

static void drain_cb(uv_async_t *h);

static void async_closed(uv_handle_t *h) {
  (void)h;
  pthread_mutex_lock(&q_mu);
  free(q_buf);
  q_buf = NULL;
  q_len = q_cap = 0;
  q_posted = 0;
  pthread_mutex_unlock(&q_mu);
}

void atl_trace_init(atl_daemon_t *d) {
  if (d != NULL) {
    uv_async_init(d->loop, &q_async, drain_cb);
    /* Lines in flight never keep a stopping daemon's loop alive. */
    uv_unref((uv_handle_t *)&q_async);
    pthread_mutex_lock(&q_mu);
    q_ready = 1;
    pthread_mutex_unlock(&q_mu);
    atomic_store(&g_daemon, d);
    return;
  }
  atomic_store(&g_daemon, NULL);
  atomic_store(&atl_trace_mask, 0);
  pthread_mutex_lock(&q_mu);
  int was = q_ready;
  q_ready = 0;
  pthread_mutex_unlock(&q_mu);
  if (was && !uv_is_closing((uv_handle_t *)&q_async))
    uv_close((uv_handle_t *)&q_async, async_closed);
}

static int matches(const sub_t *s, unsigned kind, int level,
                   const char *session, const char *line) {
  if (s->ended || !(s->mask & kind))
    return 0;
  /* Each subscriber's own level: the tap formats at the most verbose
   * any of them asked for. */
  if (kind == ATL_TR_LOG && level > s->log_level)
    return 0;
  if (s->session[0] == '\0')
    return 1;
  if (kind == ATL_TR_LOG) {
    /* A log line names its session as a logfmt field. */
    char key[ATL_SESSION_ID_LEN + 16];
    snprintf(key, sizeof(key), "session=%s", s->session);
    return strstr(line, key) != NULL;
  }
  return strcmp(s->session, session) == 0;
}

/* Appends a line and its newline to s's batch. */
static void batch_add(sub_t *s, const char *line, size_t len) {
  if (s->out_len + len + 1 > s->out_cap) {
    size_t cap = s->out_cap ? s->out_cap * 2 : 16384;
    while (cap < s->out_len + len + 1)
      cap *= 2;
    char *nb = realloc(s->out, cap);
    if (nb == NULL) {
      s->dropped++;
      return;
    }
    s->out = nb;
    s->out_cap = cap;
  }
  memcpy(s->out + s->out_len, line, len);
  s->out[s->out_len + len] = '\n';
  s->out_len += len + 1;
  s->out_lines++;
}

/* Writes s's batch in one write, after the count of what s lost, unless
 * its reader is more than ATL_TRACE_BUFFER behind: then the batch is
 * dropped and counted. */
static void batch_flush(sub_t *s) {
  if (s->out_lines == 0)
    return;
  char note[64];
  int n = s->dropped > 0 ? snprintf(note, sizeof(note), "{\"dropped\":%llu}\n",
                                    (unsigned long long)s->dropped)
                         : 0;
  char *buf = malloc(s->out_len + (size_t)n);
  int rc = ATL_ENOMEM;
  if (buf != NULL) {
    memcpy(buf, note, (size_t)n);
    memcpy(buf + n, s->out, s->out_len);
    rc = atl_conn_stream_write(s->conn, buf, s->out_len + (size_t)n,
                               ATL_TRACE_BUFFER);
  }
  if (rc == 0) {
    atomic_fetch_add(&atl_stats.trace_lines, s->out_lines);
    s->dropped = 0;
  } else {
    s->dropped += s->out_lines;
    atomic_fetch_add(&atl_stats.trace_dropped, s->out_lines);
  }
  s->out_len = s->out_lines = 0;
  /* A big batch's buffer is not kept for ever. */
  if (s->out_cap > (size_t)1 << 20) {
    free(s->out);
    s->out = NULL;
    s->out_cap = 0;
  }
}

static void drain_cb(uv_async_t *h) {
  (void)h;
  pthread_mutex_lock(&q_mu);
  char *buf = q_buf;
  size_t len = q_len;
  uint64_t lost = q_dropped;
  q_buf = NULL;
  q_len = q_cap = 0;
  q_posted = 0;
  q_dropped = 0;
  pthread_mutex_unlock(&q_mu);
  for (sub_t *s = subs; s != NULL && lost > 0; s = s->next) {
    s->dropped += lost;
    atomic_fetch_add(&atl_stats.trace_dropped, lost);
  }
  for (size_t off = 0; off < len;) {
    const rec_t *r = (const rec_t *)(buf + off);
    const char *line = buf + off + sizeof(rec_t);
    for (sub_t *s = subs; s != NULL; s = s->next)
      if (matches(s, r->kind, r->level, r->session, line))
        batch_add(s, line, r->len);
    off += REC_ALIGN(sizeof(rec_t) + r->len);
  }
  free(buf);
  for (sub_t *s = subs; s != NULL; s = s->next)
    batch_flush(s);
}

/* Queues one line (any thread). */
static void enqueue(unsigned kind, int level, const char *session,
                    const char *line, size_t len) {
  atl_daemon_t *d = atomic_load(&g_daemon);
  size_t need = REC_ALIGN(sizeof(rec_t) + len);
  int wake = 0;
  pthread_mutex_lock(&q_mu);
  if (!q_ready || d == NULL) {
    pthread_mutex_unlock(&q_mu);
    return;
  }
  if (q_len + need > q_cap && q_len + need <= QUEUE_MAX) {
    size_t cap = q_cap ? q_cap * 2 : 65536;
    while (cap < q_len + need)
      cap *= 2;
    char *nb = realloc(q_buf, cap);
    if (nb != NULL) {
      q_buf = nb;
      q_cap = cap;
    }
  }
  if (q_len + need <= q_cap) {
    rec_t *r = (rec_t *)(q_buf + q_len);
    r->len = (uint32_t)len;
    r->kind = (uint16_t)kind;
    r->level = (int16_t)level;
    snprintf(r->session, sizeof(r->session), "%s", session ? session : "");
    memcpy(q_buf + q_len + sizeof(rec_t), line, len);
    q_len += need;
  } else {
    q_dropped++;
  }
  if (!q_posted) {
    q_posted = 1;
    wake = 1;
  }
  pthread_mutex_unlock(&q_mu);
  if (wake)
    uv_async_send(&q_async);
}

static void emit(unsigned kind, int level, const char *session,
                 const char *what, json_object *fields) {
  atl_daemon_t *d = atomic_load(&g_daemon);
  if (d == NULL || !atl_trace_wants(kind)) {
    json_object_put(fields);
    return;
  }
  /* The line is the header written here and the fields' own text
   * spliced in: no second object is built. */
  char head[256];
  int n = snprintf(head, sizeof(head), "{\"t\":%.6f,\"kind\":\"%s\"",
                   (double)(atl_mono_ns() - d->started_ns) / 1e9,
                   atl_trace_kind_name(kind));
  if (session != NULL && session[0] != '\0' && atl_is_session_id(session))
    n += snprintf(head + n, sizeof(head) - (size_t)n, ",\"session\":\"%s\"",
                  session);
  size_t flen = 0;
  const char *ftext = "{}";
  json_object *w = NULL;
  if (what != NULL) {
    w = json_object_new_string(what);
    n += snprintf(head + n, sizeof(head) - (size_t)n, ",\"what\":%s",
                  json_object_to_json_string_ext(w, JSON_C_TO_STRING_PLAIN));
  }
  if (fields != NULL)
    ftext = json_object_to_json_string_length(
        fields, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &flen);
  else
    flen = 2;
  if (n > 0 && (size_t)n < sizeof(head)) {
    /* head + ("," + the fields' members | "") + "}" */
    size_t len = (size_t)n + flen + 1;
    char stack[4096];
    char *line = len <= sizeof(stack) ? stack : malloc(len);
    if (line != NULL) {
      memcpy(line, head, (size_t)n);
      size_t k = (size_t)n;
      if (flen > 2) {
        line[k++] = ',';
        memcpy(line + k, ftext + 1, flen - 1); /* members and the "}" */
        k += flen - 1;
      } else {
        line[k++] = '}';
      }
      enqueue(kind, level, session, line, k);
      if (line != stack)
        free(line);
    }
  }
  json_object_put(w);
  json_object_put(fields);
}

void atl_trace_emit(unsigned kind, const char *session, const char *what,
                    json_object *fields) {
  emit(kind, -1, session, what, fields);
}

static void log_tap(atl_log_level_t level, const char *line, size_t len) {
  json_object *f = json_object_new_object();
  json_object_object_add(f, "level",
                         json_object_new_string(atl_log_level_name(level)));
  json_object_object_add(f, "line", json_object_new_string_len(line, (int)len));
  emit(ATL_TR_LOG, (int)level, NULL, NULL, f);
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
  free(s->out);
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
  batch_add(s, line, (size_t)n);
  batch_flush(s);
  s->ended = 1;
  recompute();
  atl_conn_end(s->conn); /* on_conn_close frees s */
}

static void on_timer(uv_timer_t *t) {
  end_sub(t->data, "time");
}

int atl_trace_subscribe(atl_daemon_t *d, atl_conn_t *conn, unsigned mask,
                        const char *session, int log_level, double seconds) {
  if (atl_conn_closing(conn))
    return ATL_EIO; /* the answer could not be written: it is gone */
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
