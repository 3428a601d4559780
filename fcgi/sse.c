/* GET /api/sessions/{id}/events: the session's event log as server-sent
 * events, from the event after Last-Event-ID (or ?after=N) on, then live.
 *
 * Every event carries "id: <seq>", its sequence number in the daemon's
 * store. A browser's EventSource sends the last one it saw as
 * Last-Event-ID when it reconnects, and the stream resumes right after it
 * from the store: a dropped connection loses and doubles nothing (scene-llm
 * dropped whatever was sent while a client was away). Events come from
 * events.read long polls, which return as soon as an event is committed,
 * so there is no fan-out state here: the daemon's store is the only
 * source.
 */
#include "atl-build.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bridge.h"
#include "match.h"

/* At most this many events per read: a client far behind catches up in
 * batches, each flushed as it goes. */
#define BATCH 500
/* How long an event stream waits for the daemon to come back before it
 * ends (the browser then reconnects on its own). */
#define DAEMON_GONE_MS 30000
/* What a stream refused for a limit is told to wait, in seconds. */
#define RETRY_AFTER_S 5

static json_object *read_params(const char *session, long long after,
                                int wait_ms) {
  json_object *p = json_object_new_object();
  json_object_object_add(p, "session", json_object_new_string(session));
  json_object_object_add(p, "after_seq", json_object_new_int64(after));
  json_object_object_add(p, "limit", json_object_new_int(BATCH));
  if (wait_ms > 0)
    json_object_object_add(p, "wait_ms", json_object_new_int(wait_ms));
  return p;
}

char *fcgi_sse_format(json_object *e, long long *seq, size_t *len) {
  json_object *v;
  *seq = json_object_object_get_ex(e, "seq", &v)
             ? (long long)json_object_get_int64(v)
             : 0;
  const char *type = json_object_object_get_ex(e, "type", &v)
                         ? json_object_get_string(v)
                         : "message";
  /* An event name with a line break would end the field early; the
   * daemon's types never have one, but a plugin's might. */
  if (type == NULL || strpbrk(type, "\r\n") != NULL)
    type = "message";
  /* json-c writes no raw line breaks, so the event is one data line. */
  const char *data = json_object_to_json_string_ext(
      e, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  char *out = NULL;
  int n = asprintf(&out, "id: %lld\nevent: %s\ndata: %s\n\n", *seq, type, data);
  if (n < 0)
    return NULL;
  *len = (size_t)n;
  return out;
}

/* The session's last event in an events.read answer. */
static long long last_seq_of(json_object *r) {
  json_object *v = NULL;
  return json_object_object_get_ex(r, "last_seq", &v)
             ? (long long)json_object_get_int64(v)
             : 0;
}

/* Writes the events of an events.read answer after `after`; returns the
 * last seq written, with *broken set when the client has gone. *more is
 * set when the session has events past the answer's (it stops at BATCH
 * events, or at some megabytes of them). */
static long long write_events(fcgi_ctx_t *x, json_object *r, long long after,
                              int *broken, int *more) {
  json_object *events = NULL;
  json_object_object_get_ex(r, "events", &events);
  size_t n = events ? json_object_array_length(events) : 0;
  for (size_t i = 0; i < n && !*broken; i++) {
    long long seq = 0;
    size_t len = 0;
    char *text =
        fcgi_sse_format(json_object_array_get_idx(events, i), &seq, &len);
    if (text != NULL && seq > after) { /* never twice */
      if (FCGX_PutStr(text, (int)len, x->req->out) != (int)len)
        *broken = 1;
      else
        after = seq;
    }
    free(text);
  }
  if (FCGX_FFlush(x->req->out) < 0)
    *broken = 1;
  *more = n > 0 && after < last_seq_of(r);
  return after;
}

/* Reads and writes from the daemon directly until the stream is no more
 * than a batch behind. Returns 0, -1 when the client has gone, or the
 * atl_rpcc_t status of a failed read. */
static int catch_up(fcgi_ctx_t *x, const char *session, long long *after) {
  for (;;) {
    json_object *r = NULL;
    int rc = fcgi_call_quiet(x, "events.read", read_params(session, *after, 0),
                             30000, &r);
    if (rc != ATL_RPCC_OK) {
      json_object_put(r);
      return rc;
    }
    int broken = 0, more = 0;
    *after = write_events(x, r, *after, &broken, &more);
    json_object_put(r);
    if (broken)
      return -1;
    if (!more)
      return 0;
  }
}

/* A stream over a limit is answered at once, in JSON like every other
 * error, with a Retry-After: a browser's EventSource gives up on an error
 * status, and the page then reconnects after a pause of its own. */
static void refuse(fcgi_ctx_t *x, int status, const char *addr) {
  char msg[300];
  if (status == 429)
    snprintf(msg, sizeof(msg),
             "too many event streams from this client (%s): %d are open "
             "(atelier-fcgi --max-streams-per-client); close one or try "
             "again later",
             addr ? addr : "unknown address", fcgi_opt.max_streams_per_client);
  else
    snprintf(msg, sizeof(msg),
             "too many event streams are open (atelier-fcgi --max-threads "
             "%d keeps --reserve-threads %d for other requests); try again "
             "later",
             fcgi_opt.max_threads, fcgi_opt.reserve_threads);
  json_object *o = json_object_new_object();
  json_object_object_add(o, "error", json_object_new_string(msg));
  size_t len = 0;
  const char *text = json_object_to_json_string_length(
      o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
  x->status = status;
  fcgi_printf(x,
              "Status: %d %s\r\n"
              "Content-Type: application/json\r\n"
              "Cache-Control: no-store\r\n"
              "Retry-After: %d\r\n"
              "\r\n"
              "%s",
              status, fcgi_status_text(status), RETRY_AFTER_S, text);
  json_object_put(o);
}

static void serve_events(fcgi_ctx_t *x, const char *session);

void fcgi_events(fcgi_ctx_t *x, const char *session) {
  const char *addr = fcgi_param(x, "REMOTE_ADDR");
  int over = fcgi_stream_acquire(addr);
  if (over != 0) {
    refuse(x, over, addr);
    return;
  }
  serve_events(x, session);
  fcgi_stream_release(addr);
}

static void serve_events(fcgi_ctx_t *x, const char *session) {
  long long after =
      fcgi_resume_point(fcgi_param(x, "HTTP_LAST_EVENT_ID"), x->query);
  if (after < 0) {
    fcgi_reply_error(x, 400,
                     "Last-Event-ID (or ?after=) must be an event's sequence "
                     "number, a whole number >= 0");
    return;
  }
  /* The first read, without waiting, says whether the session exists
   * while an error can still be an HTTP status. */
  json_object *r = NULL;
  if (fcgi_call(x, "events.read", read_params(session, after, 0), 30000, &r) !=
      0)
    return;
  /* A resume point past the session's end (a forged or stale
   * Last-Event-ID) stands for the end: the stream then gets every event
   * from now on. Left as it was, it would be the hub's starting point, and
   * the session's other streams would find themselves behind a point the
   * store never reaches, reading it again and again without a pause. */
  long long last = last_seq_of(r);
  if (after > last)
    after = last < 0 ? 0 : last;
  x->status = 200;
  fcgi_printf(x, "Status: 200 OK\r\n"
                 "Content-Type: text/event-stream; charset=utf-8\r\n"
                 "Cache-Control: no-cache, no-store\r\n"
                 "X-Accel-Buffering: no\r\n"
                 "\r\n"
                 /* The browser waits this long before reconnecting. */
                 "retry: 2000\n\n");
  int broken = 0, more = 0;
  after = write_events(x, r, after, &broken, &more);
  json_object_put(r);
  if (!broken && more && catch_up(x, session, &after) != 0)
    broken = 1;
  /* From here on, the session's hub brings the events (hub.c). */
  fcgi_hub_t *h = broken ? NULL : fcgi_hub_join(session, after);
  if (h == NULL)
    return;
  int gone_ms = 0, recheck = 0;
  while (!broken && !fcgi_stopping) {
    /* A daemon that restarted may have a new token (the old one revoked)
     * or another [http] auth: a stream let in by the old one goes on
     * only if the new one lets it in too. */
    if (recheck) {
      int ok = fcgi_auth_recheck(x);
      if (ok == 0) {
        fcgi_log("info",
                 "event stream of %s ends: after atelierd's restart its "
                 "request is no longer authorised",
                 session);
        break;
      }
      recheck = ok < 0;
    }
    char *text = NULL;
    size_t len = 0;
    int rc = fcgi_hub_wait(h, x, &after, &text, &len, fcgi_opt.heartbeat_ms);
    if (rc == FCGI_HUB_EVENTS) {
      gone_ms = 0;
      if (FCGX_PutStr(text, (int)len, x->req->out) != (int)len ||
          FCGX_FFlush(x->req->out) < 0)
        broken = 1;
    } else if (rc == FCGI_HUB_IDLE) {
      recheck = 1;
      /* Nothing for a while: a comment keeps proxies from closing the
       * stream and tells us whether the client is still there. */
      if (FCGX_PutS(": heartbeat\n\n", x->req->out) < 0 ||
          FCGX_FFlush(x->req->out) < 0)
        broken = 1;
    } else if (rc == FCGI_HUB_BEHIND) {
      /* Further behind than the hub remembers: straight from the store. */
      long long was = after;
      int c = catch_up(x, session, &after);
      if (c == -1)
        broken = 1;
      else if (c == ATL_RPCC_ERROR)
        break;
      else if (c == 0 && after == was) {
        /* The store has nothing between here and where the hub starts,
         * which only a hub started past the end could say. Asking again
         * would spin; the browser reconnects and resumes from its last
         * event instead. */
        fcgi_log("warn",
                 "event stream of %s ends: the session's hub starts past "
                 "event %lld and the store has nothing after it",
                 session, after);
        break;
      }
    } else if (rc == FCGI_HUB_DAEMON_DOWN) {
      /* The daemon went away. Wait for it, heartbeating so that a client
       * that leaves meanwhile is noticed; then resume where we were. */
      recheck = 1;
      if (gone_ms >= DAEMON_GONE_MS)
        break;
      if (FCGX_PutS(": waiting for atelierd\n\n", x->req->out) < 0 ||
          FCGX_FFlush(x->req->out) < 0)
        broken = 1;
      usleep(500 * 1000);
      gone_ms += 500;
    } else {
      /* FCGI_HUB_GONE: the session was deleted, and a reconnect gets the
       * 404; FCGI_HUB_CLIENT_GONE: nobody is listening. */
      break;
    }
    free(text);
  }
  fcgi_hub_leave(h);
}
