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
  size_t out_hint; /* the last batch's buffer size, for the next one */
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

/* Lines on their way to the loop: records of a header and the line. The
 * loop's own lines (nearly all of them: requests, calls, events, logs)
 * are appended to a queue only it touches, without a lock; other
 * threads' (the store's commits, pool threads' logs) to a shared queue
 * under q_mu. Both are taken whole every DRAIN_MS while anyone traces
 * and merged by time. No thread wakes the loop for a line, and a
 * subscriber gets one write per DRAIN_MS, not one per line: at tens of
 * thousands of lines a second, wake-ups and writes per line cost the
 * loop a quarter of its time (bench/README.md, admin). */
typedef struct {
  uint64_t t;   /* when it was made, in µs since the daemon started */
  uint32_t len; /* of the line, without its newline */
  uint16_t kind;
  int16_t level; /* a log line's, else -1 */
  char session[ATL_SESSION_ID_LEN + 1];
} rec_t;
#define REC_ALIGN(n) (((n) + 7) & ~(size_t)7)
/* The most a queue holds before lines are dropped at the source: the
 * loop is far behind, and every subscriber would lose them anyway. */
#define QUEUE_MAX ((size_t)8 << 20)

typedef struct {
  char *buf;
  size_t len, cap;
  uint64_t dropped; /* lines it had no room for */
} queue_t;

static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;
static queue_t q_shared; /* under q_mu */
static queue_t q_loop;   /* the loop thread only */
/* The buffers the last drain emptied, kept for the next: a fresh one grew
 * by doubling (and copying) every DRAIN_MS. */
static char *q_spare, *l_spare;
static size_t q_spare_cap, l_spare_cap;
static uv_timer_t q_timer;
static int q_ready; /* q_timer is initialised; written under q_mu */
static _Thread_local int t_on_loop; /* this thread runs the loop */
#define DRAIN_MS 5

const char *atl_trace_kind_name(unsigned kind) {
  if (kind == 0 || (kind & (kind - 1)) != 0)
    return "?";
  unsigned i = (unsigned)__builtin_ctz(kind);
  return i < N_KINDS ? kind_names[i] : "?";
}

unsigned atl_trace_kind_parse(const char *name) {
  for (unsigned i = 0; i < N_KINDS; i++)
    if (strcmp(name, kind_names[i]) == 0)
      return 1u << i;
  return 0;
}

/* The mask and the log tap follow the subscribers. Loop thread. */
static void log_tap(atl_log_level_t level, const char *line, size_t len);
static void drain_cb(uv_timer_t *h);
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
  if (mask != 0 && !uv_is_active((uv_handle_t *)&q_timer)) {
    uv_timer_start(&q_timer, drain_cb, DRAIN_MS, DRAIN_MS);
  } else if (mask == 0) {
    uv_timer_stop(&q_timer);
    /* Lines nobody wants any more: a later subscriber must not get lines
     * from before it asked. */
    pthread_mutex_lock(&q_mu);
    q_shared.len = 0;
    q_shared.dropped = 0;
    pthread_mutex_unlock(&q_mu);
    q_loop.len = 0;
    q_loop.dropped = 0;
  }
}

static void timer_closed(uv_handle_t *h) {
  (void)h;
  pthread_mutex_lock(&q_mu);
  free(q_shared.buf);
  free(q_spare);
  q_shared = (queue_t){0};
  q_spare = NULL;
  q_spare_cap = 0;
  pthread_mutex_unlock(&q_mu);
  free(q_loop.buf);
  free(l_spare);
  q_loop = (queue_t){0};
  l_spare = NULL;
  l_spare_cap = 0;
}

void atl_trace_init(atl_daemon_t *d) {
  if (d != NULL) {
    /* Called on the loop's thread, which runs everything else here. */
    t_on_loop = 1;
    uv_timer_init(d->loop, &q_timer);
    /* Lines in flight never keep a stopping daemon's loop alive. */
    uv_unref((uv_handle_t *)&q_timer);
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
  if (was && !uv_is_closing((uv_handle_t *)&q_timer))
    uv_close((uv_handle_t *)&q_timer, timer_closed);
}

static int matches(const sub_t *s, unsigned kind, int level,
                   const char *session, const char *line, size_t len) {
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
    int k = snprintf(key, sizeof(key), "session=%s", s->session);
    /* The line is not NUL-terminated in the queue: its length bounds it. */
    return memmem(line, len, key, (size_t)k) != NULL;
  }
  return strcmp(s->session, session) == 0;
}

/* Appends a line and its newline to s's batch. */
static void batch_add(sub_t *s, const char *line, size_t len) {
  if (s->out_len + len + 1 > s->out_cap) {
    size_t cap = s->out_cap    ? s->out_cap * 2
                 : s->out_hint ? s->out_hint
                               : 16384;
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
  char *buf = s->out;
  size_t len = s->out_len;
  if (s->dropped > 0) {
    /* The count of what was lost goes first: the batch is copied behind
     * it. Otherwise the batch's own buffer is written, not copied. */
    char note[64];
    int n = snprintf(note, sizeof(note), "{\"dropped\":%llu}\n",
                     (unsigned long long)s->dropped);
    buf = malloc(len + (size_t)n);
    if (buf != NULL) {
      memcpy(buf, note, (size_t)n);
      memcpy(buf + n, s->out, len);
      len += (size_t)n;
    }
  } else {
    s->out_hint = s->out_cap <= (size_t)1 << 20 ? s->out_cap : 0;
    s->out = NULL;
    s->out_cap = 0;
  }
  int rc = buf != NULL
               ? atl_conn_stream_write(s->conn, buf, len, ATL_TRACE_BUFFER)
               : ATL_ENOMEM;
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

/* The record at off in buf, and the offset of the one after it. */
static const rec_t *rec_at(const char *buf, size_t off) {
  return (const rec_t *)(buf + off);
}
static size_t rec_next(const rec_t *r, size_t off) {
  return off + REC_ALIGN(sizeof(rec_t) + r->len);
}

static void deliver(const rec_t *r) {
  const char *line = (const char *)(r + 1);
  for (sub_t *s = subs; s != NULL; s = s->next)
    if (matches(s, r->kind, r->level, r->session, line, r->len))
      batch_add(s, line, r->len);
}

static void drain_cb(uv_timer_t *h) {
  (void)h;
  pthread_mutex_lock(&q_mu);
  queue_t shared = q_shared;
  q_shared = (queue_t){.buf = q_spare, .cap = q_spare_cap};
  q_spare = NULL;
  q_spare_cap = 0;
  pthread_mutex_unlock(&q_mu);
  queue_t own = q_loop;
  q_loop = (queue_t){.buf = l_spare, .cap = l_spare_cap};
  l_spare = NULL;
  l_spare_cap = 0;
  uint64_t lost = shared.dropped + own.dropped;
  for (sub_t *s = subs; s != NULL && lost > 0; s = s->next) {
    s->dropped += lost;
    atomic_fetch_add(&atl_stats.trace_dropped, lost);
  }
  /* Each queue is in time order (the shared one nearly: threads race
   * between their clock and the lock); merged, a session's lines come out
   * in the order they happened across threads. */
  size_t a = 0, b = 0;
  while (a < own.len || b < shared.len) {
    const rec_t *ra = a < own.len ? rec_at(own.buf, a) : NULL;
    const rec_t *rb = b < shared.len ? rec_at(shared.buf, b) : NULL;
    if (ra != NULL && (rb == NULL || ra->t <= rb->t)) {
      deliver(ra);
      a = rec_next(ra, a);
    } else {
      deliver(rb);
      b = rec_next(rb, b);
    }
  }
  /* Kept for the next drain unless a burst made them big. */
  if (own.cap <= (size_t)1 << 20 && q_ready) {
    l_spare = own.buf;
    l_spare_cap = own.cap;
    own.buf = NULL;
  }
  free(own.buf);
  if (shared.cap <= (size_t)1 << 20) {
    pthread_mutex_lock(&q_mu);
    if (q_spare == NULL && q_ready) {
      q_spare = shared.buf;
      q_spare_cap = shared.cap;
      shared.buf = NULL;
    }
    pthread_mutex_unlock(&q_mu);
  }
  free(shared.buf);
  for (sub_t *s = subs; s != NULL; s = s->next)
    batch_flush(s);
}

/* Appends one record to q (its owner has made sure no other thread
 * touches it). */
static void queue_add(queue_t *q, uint64_t t, unsigned kind, int level,
                      const char *session, size_t slen, const char *line,
                      size_t len) {
  size_t need = REC_ALIGN(sizeof(rec_t) + len);
  if (q->len + need > q->cap && q->len + need <= QUEUE_MAX) {
    size_t cap = q->cap ? q->cap * 2 : 65536;
    while (cap < q->len + need)
      cap *= 2;
    char *nb = realloc(q->buf, cap);
    if (nb != NULL) {
      q->buf = nb;
      q->cap = cap;
    }
  }
  if (q->len + need > q->cap) {
    q->dropped++;
    return;
  }
  rec_t *r = (rec_t *)(q->buf + q->len);
  r->t = t;
  r->len = (uint32_t)len;
  r->kind = (uint16_t)kind;
  r->level = (int16_t)level;
  memcpy(r->session, session ? session : "", slen);
  r->session[slen] = '\0';
  memcpy(r + 1, line, len);
  q->len += need;
}

/* Queues one line (any thread). */
static void enqueue(uint64_t t, unsigned kind, int level, const char *session,
                    const char *line, size_t len) {
  atl_daemon_t *d = atomic_load(&g_daemon);
  size_t slen = session ? strnlen(session, ATL_SESSION_ID_LEN) : 0;
  if (t_on_loop) {
    /* q_ready is written on this thread: no lock to read it. */
    if (q_ready && d != NULL)
      queue_add(&q_loop, t, kind, level, session, slen, line, len);
    return;
  }
  pthread_mutex_lock(&q_mu);
  if (q_ready && d != NULL)
    queue_add(&q_shared, t, kind, level, session, slen, line, len);
  pthread_mutex_unlock(&q_mu);
}

/* ---- the writer ---- */

/* Grows w to hold n more bytes; 0 when it cannot (the line is dropped). */
static int tw_grow(atl_tw_t *w, size_t n) {
  if (w->failed)
    return 0;
  size_t cap = w->cap * 2;
  while (cap < w->len + n)
    cap *= 2;
  char *nb = w->p == w->stack ? malloc(cap) : realloc(w->p, cap);
  if (nb == NULL) {
    /* A failed line keeps no room, so every later put takes this path
     * and returns. */
    if (w->p != w->stack)
      free(w->p);
    w->p = w->stack;
    w->len = w->cap = 0;
    w->failed = 1;
    return 0;
  }
  if (w->p == w->stack)
    memcpy(nb, w->stack, w->len);
  w->p = nb;
  w->cap = cap;
  return 1;
}

static inline void tw_put(atl_tw_t *w, const char *s, size_t n) {
  if (w->len + n > w->cap && !tw_grow(w, n))
    return;
  memcpy(w->p + w->len, s, n);
  w->len += n;
}

/* The length of the well-formed UTF-8 sequence at s (n bytes left), or 0
 * when the bytes there are not one (RFC 3629: no overlongs, no
 * surrogates, nothing past U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  size_t k = c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
  if (k == 0 || k > n)
    return 0;
  for (size_t i = 1; i < k; i++)
    if ((s[i] & 0xC0) != 0x80)
      return 0;
  if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F) ||
      (c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] > 0x8F))
    return 0;
  return k;
}

/* A JSON string: quotes, backslashes and control characters escaped;
 * other bytes as they are (the daemon's strings are UTF-8). Runs of plain
 * bytes are found a word at a time and copied whole: escaping byte by
 * byte was a third of a traced call's cost (bench/README.md, admin). */
static void tw_quoted(atl_tw_t *w, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  tw_put(w, "\"", 1);
  for (size_t i = 0; i < n;) {
    size_t run = atl_plain_prefix(s + i, n - i);
    tw_put(w, s + i, run);
    i += run;
    if (i >= n)
      break;
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x7f) {
      /* Text from plugins, models and logs: a byte that is not UTF-8
       * becomes U+FFFD, so that every line stays JSON a strict parser
       * takes. DEL needs no escape. */
      size_t k = c == 0x7f ? 1 : utf8_seq((const unsigned char *)s + i, n - i);
      if (k > 0)
        tw_put(w, s + i, k);
      else
        tw_put(w, "\\ufffd", 6);
      i += k > 0 ? k : 1;
      continue;
    }
    char esc[6] = {'\\', (char)c, 0, 0, 0, 0};
    size_t k = 2;
    if (c == '\n')
      esc[1] = 'n';
    else if (c == '\t')
      esc[1] = 't';
    else if (c == '\r')
      esc[1] = 'r';
    else if (c < 0x20) {
      memcpy(esc, "\\u00", 4);
      esc[4] = hex[c >> 4];
      esc[5] = hex[c & 15];
      k = 6;
    }
    tw_put(w, esc, k);
    i++;
  }
  tw_put(w, "\"", 1);
}

/* whole "." frac, frac with digits digits (zero-padded). */
static size_t fixed(uint64_t whole, uint64_t frac, int digits, char *out) {
  size_t n = atl_u64_dec(whole, out);
  out[n++] = '.';
  for (int i = digits - 1; i >= 0; i--) {
    out[n + (size_t)i] = (char)('0' + frac % 10);
    frac /= 10;
  }
  return n + (size_t)digits;
}

/* ,"key": in one copy (keys are the callers' constants). */
static void tw_key(atl_tw_t *w, const char *key) {
  size_t k = strlen(key);
  if (w->len + k + 4 > w->cap && !tw_grow(w, k + 4))
    return;
  char *o = w->p + w->len;
  o[0] = ',';
  o[1] = '"';
  memcpy(o + 2, key, k);
  o[k + 2] = '"';
  o[k + 3] = ':';
  w->len += k + 4;
}

int atl_tw_begin(atl_tw_t *w, unsigned kind, const char *session,
                 const char *what) {
  atl_daemon_t *d = atomic_load(&g_daemon);
  if (d == NULL || !atl_trace_wants(kind))
    return 0;
  w->kind = kind;
  w->level = -1;
  w->p = w->stack;
  w->len = 0;
  w->cap = sizeof(w->stack);
  w->failed = 0;
  size_t slen = session ? strnlen(session, ATL_SESSION_ID_LEN) : 0;
  memcpy(w->session, session ? session : "", slen);
  w->session[slen] = '\0';
  /* Written by hand, straight into the writer's buffer: snprintf's
   * "%.6f" was most of a line's cost. */
  uint64_t us = (atl_mono_ns() - d->started_ns) / 1000u;
  w->t_us = us;
  char *head = w->stack;
  size_t n = 5;
  memcpy(head, "{\"t\":", 5);
  n += fixed(us / 1000000u, us % 1000000u, 6, head + n);
  const char *kn = atl_trace_kind_name(kind);
  size_t kl = strlen(kn);
  memcpy(head + n, ",\"kind\":\"", 9);
  memcpy(head + n + 9, kn, kl);
  n += 9 + kl;
  head[n++] = '"';
  w->len = n;
  if (w->session[0] != '\0')
    atl_tw_str(w, "session", w->session);
  if (what != NULL)
    atl_tw_str(w, "what", what);
  return 1;
}

void atl_tw_strn(atl_tw_t *w, const char *key, const char *val, size_t len) {
  tw_key(w, key);
  tw_quoted(w, val, len);
}

void atl_tw_str(atl_tw_t *w, const char *key, const char *val) {
  if (val == NULL) {
    tw_key(w, key);
    tw_put(w, "null", 4);
    return;
  }
  atl_tw_strn(w, key, val, strlen(val));
}

void atl_tw_int(atl_tw_t *w, const char *key, int64_t v) {
  char num[24];
  size_t n = 0;
  if (v < 0)
    num[n++] = '-';
  n += atl_u64_dec(v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, num + n);
  tw_key(w, key);
  tw_put(w, num, n);
}

void atl_tw_ms(atl_tw_t *w, const char *key, uint64_t us) {
  char num[32];
  size_t n = fixed(us / 1000, us % 1000, 3, num);
  tw_key(w, key);
  tw_put(w, num, n);
}

void atl_tw_bool(atl_tw_t *w, const char *key, int v) {
  tw_key(w, key);
  tw_put(w, v ? "true" : "false", v ? 4 : 5);
}

void atl_tw_json(atl_tw_t *w, const char *key, const char *json, size_t len) {
  tw_key(w, key);
  tw_put(w, json, len);
}

void atl_tw_end(atl_tw_t *w) {
  tw_put(w, "}", 1);
  if (!w->failed)
    enqueue(w->t_us, w->kind, w->level, w->session, w->p, w->len);
  if (w->p != w->stack)
    free(w->p);
  w->p = w->stack;
}

static void emit(unsigned kind, int level, const char *session,
                 const char *what, json_object *fields) {
  atl_tw_t w;
  if (!atl_tw_begin(&w, kind, session, what)) {
    json_object_put(fields);
    return;
  }
  w.level = level;
  if (fields != NULL) {
    json_object_object_foreach(fields, k, v) {
      size_t n = 0;
      const char *text = json_object_to_json_string_length(
          v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
      atl_tw_json(&w, k, text, n);
    }
  }
  atl_tw_end(&w);
  json_object_put(fields);
}

void atl_trace_emit(unsigned kind, const char *session, const char *what,
                    json_object *fields) {
  emit(kind, -1, session, what, fields);
}

static void log_tap(atl_log_level_t level, const char *line, size_t len) {
  atl_tw_t w;
  if (!atl_tw_begin(&w, ATL_TR_LOG, NULL, NULL))
    return;
  w.level = (int)level;
  atl_tw_str(&w, "level", atl_log_level_name(level));
  atl_tw_strn(&w, "line", line, len);
  atl_tw_end(&w);
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
  /* What was emitted before the end goes out before it. */
  drain_cb(NULL);
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
