/* A session's hub: the event streams of one session share one long poll.
 *
 * Without it, each stream asks the daemon for the same events: with ten
 * browsers on a session, every event was read, serialised and sent ten
 * times by atelierd, and parsed ten times here (bench/sse: half a core of
 * the daemon at 10,000 deliveries a second). With it, one of the streams'
 * threads polls for the hub at a time, formats each event once as its SSE
 * text, and keeps the newest HUB_RING of them; the other threads wait on
 * the hub and copy out what they have not sent yet. A stream that is
 * further behind than the ring (a reconnect after a long absence) reads
 * from the daemon directly until it has caught up.
 *
 * The poller is whichever thread finds no one polling; when its client
 * leaves, or the poll ends, another takes over. Waiting threads wake at
 * least every WATCH_MS to check that their client is still there (the
 * poller's own long poll watches its client's connection).
 */
#include "atl-build.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bridge.h"

#define HUB_RING 512
/* The ring also holds at most this many bytes of SSE text (always its
 * newest event): events can be megabytes each (a tool's arguments), and
 * 512 of those would be gigabytes. A stream behind what was dropped reads
 * from the daemon, as after a long absence. */
#define HUB_MAX_BYTES ((size_t)16 << 20)
#define WATCH_MS 1000
/* A long poll that answers empty sooner than this is followed by a pause
 * of as long. */
#define EARLY_MS 100

typedef struct {
  long long seq;
  char *text; /* "id: …\nevent: …\ndata: …\n\n" */
  size_t len;
} hub_event_t;

struct fcgi_hub_s {
  char session[40];
  int refs; /* streams joined; under hubs_mu */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  long long last;  /* the newest seq known (all before it were seen) */
  long long first; /* the ring holds (first, last] */
  hub_event_t ring[HUB_RING];
  size_t bytes; /* the texts held in ring */
  int polling;  /* a thread polls the daemon for the hub */
  int gone;     /* the session no longer exists */
  struct fcgi_hub_s *next;
};

static pthread_mutex_t hubs_mu = PTHREAD_MUTEX_INITIALIZER;
static fcgi_hub_t *hubs;

fcgi_hub_t *fcgi_hub_join(const char *session, long long after) {
  pthread_mutex_lock(&hubs_mu);
  fcgi_hub_t *h = hubs;
  while (h != NULL && strcmp(h->session, session) != 0)
    h = h->next;
  if (h == NULL && (h = calloc(1, sizeof(*h))) != NULL) {
    snprintf(h->session, sizeof(h->session), "%s", session);
    pthread_mutex_init(&h->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->cv, &ca);
    pthread_condattr_destroy(&ca);
    /* The first stream says how far the session has got. */
    h->first = h->last = after;
    h->next = hubs;
    hubs = h;
  }
  if (h != NULL)
    h->refs++;
  pthread_mutex_unlock(&hubs_mu);
  return h;
}

void fcgi_hub_leave(fcgi_hub_t *h) {
  pthread_mutex_lock(&hubs_mu);
  if (--h->refs > 0) {
    /* Someone else may have to take over the polling. Still under
     * hubs_mu: once it is released, the last stream may free h. (The
     * order is always hubs_mu, then h->mu.) */
    pthread_mutex_lock(&h->mu);
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    pthread_mutex_unlock(&hubs_mu);
    return;
  }
  for (fcgi_hub_t **p = &hubs; *p; p = &(*p)->next)
    if (*p == h) {
      *p = h->next;
      break;
    }
  pthread_mutex_unlock(&hubs_mu);
  for (size_t i = 0; i < HUB_RING; i++)
    free(h->ring[i].text);
  pthread_mutex_destroy(&h->mu);
  pthread_cond_destroy(&h->cv);
  free(h);
}

/* With h->mu held: adds the events of an events.read answer. */
static void add_events(fcgi_hub_t *h, json_object *r) {
  json_object *events = NULL;
  json_object_object_get_ex(r, "events", &events);
  size_t n = events ? json_object_array_length(events) : 0;
  for (size_t i = 0; i < n; i++) {
    long long seq = 0;
    size_t len = 0;
    char *text =
        fcgi_sse_format(json_object_array_get_idx(events, i), &seq, &len);
    if (text == NULL || seq <= h->last) {
      free(text);
      continue;
    }
    /* A gap cannot happen (the daemon answers in order from after_seq);
     * if it did, the ring would start again after it. */
    if (seq != h->last + 1)
      h->first = seq - 1;
    hub_event_t *slot = &h->ring[seq % HUB_RING];
    h->bytes -= slot->len;
    free(slot->text);
    *slot = (hub_event_t){.seq = seq, .text = text, .len = len};
    h->bytes += len;
    h->last = seq;
    if (h->last - h->first > HUB_RING)
      h->first = h->last - HUB_RING;
    while (h->bytes > HUB_MAX_BYTES && h->first < h->last - 1) {
      h->first++;
      hub_event_t *old = &h->ring[h->first % HUB_RING];
      h->bytes -= old->len;
      free(old->text);
      *old = (hub_event_t){0};
    }
  }
}

/* With h->mu held: appends the texts of (after, last] to out. */
static int copy_out(fcgi_hub_t *h, long long *after, char **out, size_t *len) {
  size_t total = 0;
  for (long long s = *after + 1; s <= h->last; s++)
    total += h->ring[s % HUB_RING].len;
  char *buf = malloc(total + 1);
  if (buf == NULL)
    return -1;
  size_t at = 0;
  for (long long s = *after + 1; s <= h->last; s++) {
    hub_event_t *e = &h->ring[s % HUB_RING];
    memcpy(buf + at, e->text, e->len);
    at += e->len;
  }
  *out = buf;
  *len = at;
  *after = h->last;
  return 0;
}

static int client_gone(fcgi_ctx_t *x) {
  struct pollfd p = {.fd = x->req->ipcFd, .events = POLLRDHUP};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static long long mono_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
}

/* With h->mu held: waits for the hub's news until wake_ns, or end_ns if
 * that is sooner (CLOCK_MONOTONIC nanoseconds). */
static void wait_until(fcgi_hub_t *h, long long wake_ns, long long end_ns) {
  if (wake_ns > end_ns)
    wake_ns = end_ns;
  struct timespec ts = {.tv_sec = (time_t)(wake_ns / 1000000000LL),
                        .tv_nsec = (long)(wake_ns % 1000000000LL)};
  pthread_cond_timedwait(&h->cv, &h->mu, &ts);
}

int fcgi_hub_wait(fcgi_hub_t *h, fcgi_ctx_t *x, long long *after, char **out,
                  size_t *len, int wait_ms) {
  *out = NULL;
  *len = 0;
  long long end_ns = mono_ns() + (long long)wait_ms * 1000000LL;
  pthread_mutex_lock(&h->mu);
  for (;;) {
    if (*after < h->last) {
      int rc = *after < h->first                   ? FCGI_HUB_BEHIND
               : copy_out(h, after, out, len) == 0 ? FCGI_HUB_EVENTS
                                                   : FCGI_HUB_DAEMON_DOWN;
      pthread_mutex_unlock(&h->mu);
      return rc;
    }
    if (h->gone) {
      pthread_mutex_unlock(&h->mu);
      return FCGI_HUB_GONE;
    }
    long long now_ns = mono_ns();
    if (now_ns >= end_ns) {
      pthread_mutex_unlock(&h->mu);
      return FCGI_HUB_IDLE;
    }
    if (!h->polling) {
      /* Our turn to ask the daemon, for everyone. */
      h->polling = 1;
      long long from = h->last;
      pthread_mutex_unlock(&h->mu);
      json_object *p = json_object_new_object(), *r = NULL;
      json_object_object_add(p, "session", json_object_new_string(h->session));
      json_object_object_add(p, "after_seq", json_object_new_int64(from));
      json_object_object_add(p, "limit", json_object_new_int(HUB_RING));
      int left_ms = (int)((end_ns - now_ns) / 1000000LL);
      json_object_object_add(p, "wait_ms",
                             json_object_new_int(left_ms > 0 ? left_ms : 1));
      x->rpc->watch_fd = x->req->ipcFd;
      x->rpc->watch_closed = 0;
      int rc = fcgi_call_quiet(x, "events.read", p, left_ms + 10000, &r);
      int closed = x->rpc->watch_closed;
      x->rpc->watch_fd = -1;
      pthread_mutex_lock(&h->mu);
      h->polling = 0;
      /* A daemon shutting down (-32003) is one that is going away, not a
       * session that is: the stream waits for it like for a restart. */
      int stopping = rc == ATL_RPCC_ERROR && x->rpc->err_code == -32003;
      long long before = h->last;
      if (rc == ATL_RPCC_OK)
        add_events(h, r);
      else if (rc == ATL_RPCC_ERROR && !stopping)
        h->gone = 1;
      pthread_cond_broadcast(&h->cv);
      json_object_put(r);
      if (closed) {
        pthread_mutex_unlock(&h->mu);
        return FCGI_HUB_CLIENT_GONE;
      }
      if (rc == ATL_RPCC_TRANSPORT || stopping) {
        pthread_mutex_unlock(&h->mu);
        return FCGI_HUB_DAEMON_DOWN;
      }
      if (rc == ATL_RPCC_OK && h->last == before) {
        /* A long poll that came back with nothing new before its time (a
         * daemon waking its readers as it stops) would be asked again at
         * once, and again: a pause keeps that from becoming a spin. */
        long long t2_ns = mono_ns();
        if (t2_ns - now_ns < (long long)EARLY_MS * 1000000LL)
          wait_until(h, t2_ns + (long long)EARLY_MS * 1000000LL, end_ns);
      }
      continue;
    }
    /* Someone else polls: wait for the hub, checking on our client now
     * and then. */
    wait_until(h, now_ns + (long long)WATCH_MS * 1000000LL, end_ns);
    if (*after >= h->last && !h->gone && client_gone(x)) {
      pthread_mutex_unlock(&h->mu);
      return FCGI_HUB_CLIENT_GONE;
    }
  }
}
