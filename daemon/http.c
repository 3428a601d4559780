/* HTTP client on the daemon's loop: libcurl's multi interface driven by
 * libuv poll and timer handles.
 *
 * The shape follows the socket-action pattern of libcurl: curl tells us,
 * through CURLMOPT_SOCKETFUNCTION, which sockets it wants watched and for
 * what, and through CURLMOPT_TIMERFUNCTION when it next needs to be woken up
 * regardless of socket activity. We mirror each wish with a uv_poll_t per
 * socket and one uv_timer_t, and hand every event back to curl with
 * curl_multi_socket_action(). Finished transfers are then collected with
 * curl_multi_info_read().
 *
 * Threads. Everything that touches curl or libuv handles runs on the loop
 * thread. atl_http_request() may be called from any thread, so it only
 * copies the request, appends it to a mutex-protected queue and wakes the
 * loop with uv_async_send(); the loop side turns queued requests into easy
 * handles.
 *
 * Re-entrancy. User code runs from three places: the completion callback,
 * the streaming data callback (inside curl_multi_socket_action(), through
 * curl's write callback) and cancellation during close. Any of them may
 * submit new requests, which is always safe because submission only queues.
 * Any of them may also close the client; when that happens inside curl, the
 * teardown is deferred until curl has returned, because curl_multi_cleanup()
 * must not run from within one of curl's own callbacks.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <curl/curl.h>

#include "cloexec.h"
#include "http.h"

/* Defaults documented in atelier/plugin.h. */
#define HTTP_DEFAULT_TIMEOUT_MS 60000u
#define HTTP_DEFAULT_MAX_RESPONSE ((size_t)32 * 1024 * 1024)

typedef struct http_req_s http_req_t;
typedef struct http_sock_s http_sock_t;

/* One request, from submission to completion. It owns copies of everything
 * the caller passed, because the caller's request may be gone by the time
 * the loop thread gets to it. */
struct http_req_s {
  atl_http_t *http;
  /* Links in the submission queue, then in the list of active transfers
   * (which close walks to cancel them). */
  http_req_t *prev, *next;

  char *method; /* NULL for a plain GET */
  char *url;
  struct curl_slist *headers;
  char *body;
  size_t body_len;
  int has_body;
  uint32_t timeout_ms;
  size_t max_response;

  atl_http_data_cb on_data;
  atl_http_done_cb cb;
  void *user;

  CURL *easy;
  /* The accumulated body when not streaming. */
  char *buf;
  size_t len, cap;
  /* Set by the write callback when it refuses data, so that the resulting
   * CURLE_WRITE_ERROR can be reported as what really happened. */
  int abort_status;
  char message[96];
  char errbuf[CURL_ERROR_SIZE];
};

/* The libuv side of one socket curl asked us to watch. */
struct http_sock_s {
  uv_poll_t poll;
  curl_socket_t fd;
  atl_http_t *http;
  http_sock_t *prev, *next;
};

struct atl_http_s {
  uv_loop_t *loop;
  CURLM *multi;
  uv_async_t async;
  uv_timer_t timer;

  /* The submission queue, the only state shared with other threads. The
   * closing flag lives under the same lock so that no thread can push onto
   * the queue or signal the async handle once close has begun. */
  pthread_mutex_t lock;
  http_req_t *queue_head, *queue_tail;
  int closing;

  /* Loop-thread state. */
  http_req_t *active;   /* transfers added to the multi handle */
  http_sock_t *sockets; /* sockets with an open uv_poll_t */
  unsigned open_handles;
  int in_curl;        /* depth of calls into curl that may run user code */
  int close_deferred; /* close was asked for while in_curl > 0 */
  int torn_down;      /* the multi handle is gone */

  /* Submitted and not yet completed; atomic because submitters count
   * themselves in from other threads. */
  atomic_uint pending;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result = CURLE_FAILED_INIT;

static void curl_global_once(void) {
  curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void teardown(atl_http_t *http);

/* ---- request lifetime ---------------------------------------------------- */

static void req_free(http_req_t *r) {
  if (r->easy)
    curl_easy_cleanup(r->easy);
  curl_slist_free_all(r->headers);
  free(r->method);
  free(r->url);
  free(r->body);
  free(r->buf);
  free(r);
}

static void active_unlink(atl_http_t *http, http_req_t *r) {
  if (r->prev)
    r->prev->next = r->next;
  else
    http->active = r->next;
  if (r->next)
    r->next->prev = r->prev;
  r->prev = r->next = NULL;
}

/* Delivers the outcome to the caller and frees the request. The easy handle,
 * if any, must already be out of the multi handle; it is cleaned up only
 * after the callback because the Content-Type string belongs to it. */
static void req_complete(atl_http_t *http, http_req_t *r, int status,
                         const char *error) {
  atl_http_response_t resp;
  long code = 0;
  char *ctype = NULL;
  curl_off_t retry_after = 0;

  if (r->easy) {
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ctype);
    /* Seconds, from either form of the header (delta or HTTP date). */
    if (curl_easy_getinfo(r->easy, CURLINFO_RETRY_AFTER, &retry_after) !=
        CURLE_OK)
      retry_after = 0;
  }
  memset(&resp, 0, sizeof(resp));
  resp.retry_after_s = retry_after > 0 ? (long)retry_after : -1;
  resp.status = status;
  resp.http_code = code;
  resp.error = status < 0 ? (error && *error ? error : "request failed") : NULL;
  /* A body is always a valid string, even an empty one, so that callers can
   * use it without checking for NULL. */
  resp.body = r->buf && !r->on_data ? r->buf : "";
  resp.body_len = r->on_data ? 0 : r->len;
  resp.content_type = ctype;

  /* The request no longer counts as in flight inside its own callback. */
  atomic_fetch_sub(&http->pending, 1);
  r->cb(&resp, r->user);
  req_free(r);
}

/* ---- curl callbacks ------------------------------------------------------ */

static size_t write_cb(char *data, size_t size, size_t nmemb, void *userp) {
  http_req_t *r = userp;
  size_t n = size * nmemb;

  if (n == 0)
    return 0;
  if (r->on_data) {
    /* Streaming: hand the chunk over as it is and keep nothing. Returning a
     * short count makes curl fail the transfer with CURLE_WRITE_ERROR. */
    if (r->on_data(data, n, r->user) != 0) {
      r->abort_status = ATL_ECANCELED;
      snprintf(r->message, sizeof(r->message),
               "transfer aborted by the data callback");
      return 0;
    }
    return n;
  }
  if (n > r->max_response - r->len) {
    r->abort_status = ATL_E2BIG;
    snprintf(r->message, sizeof(r->message), "response exceeds %zu bytes",
             r->max_response);
    return 0;
  }
  /* One spare byte for the terminating NUL. */
  if (r->len + n + 1 > r->cap) {
    size_t cap = r->cap ? r->cap : 16384;
    while (cap < r->len + n + 1)
      cap *= 2;
    char *p = realloc(r->buf, cap);
    if (!p) {
      r->abort_status = ATL_ENOMEM;
      snprintf(r->message, sizeof(r->message),
               "out of memory for a %zu-byte response", r->len + n);
      return 0;
    }
    r->buf = p;
    r->cap = cap;
  }
  memcpy(r->buf + r->len, data, n);
  r->len += n;
  r->buf[r->len] = '\0';
  return n;
}

static void sock_close_cb(uv_handle_t *h) {
  http_sock_t *s = h->data;
  atl_http_t *http = s->http;

  free(s);
  http->open_handles--;
  if (http->torn_down && http->open_handles == 0) {
    pthread_mutex_destroy(&http->lock);
    free(http);
  }
}

/* Stops watching a socket. uv_close() stops the poll handle at once, while
 * the descriptor is still open, so a new socket curl opens later with the
 * same number gets a fresh, independent poll handle; only the memory waits
 * for the close callback. */
static void sock_close(atl_http_t *http, http_sock_t *s) {
  if (s->prev)
    s->prev->next = s->next;
  else
    http->sockets = s->next;
  if (s->next)
    s->next->prev = s->prev;
  s->prev = s->next = NULL;
  uv_close((uv_handle_t *)&s->poll, sock_close_cb);
}

static void check_done(atl_http_t *http) {
  CURLMsg *msg;
  int left;

  /* A completion callback may close the client, after which the multi
   * handle is gone: check before every read. */
  while (!http->torn_down && (msg = curl_multi_info_read(http->multi, &left))) {
    if (msg->msg != CURLMSG_DONE)
      continue;
    /* The message is invalid once the handle is removed: copy it first. */
    CURL *easy = msg->easy_handle;
    CURLcode rc = msg->data.result;
    char *priv = NULL;
    http_req_t *r;
    int status = 0;
    const char *error = NULL;

    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
    r = (http_req_t *)priv;
    curl_multi_remove_handle(http->multi, easy);
    active_unlink(http, r);

    if (rc == CURLE_OK) {
      status = 0;
    } else if (r->abort_status) {
      status = r->abort_status;
      error = r->message;
    } else if (rc == CURLE_FILESIZE_EXCEEDED) {
      /* Curl refused the response up front from its Content-Length. */
      status = ATL_E2BIG;
      snprintf(r->message, sizeof(r->message), "response exceeds %zu bytes",
               r->max_response);
      error = r->message;
    } else {
      status = rc == CURLE_OPERATION_TIMEDOUT ? ATL_ETIMEDOUT : ATL_EIO;
      error = r->errbuf[0] ? r->errbuf : curl_easy_strerror(rc);
    }
    req_complete(http, r, status, error);
  }
}

/* Lets curl act on a socket event or a timeout. Curl may run the streaming
 * callback from in here, which may close the client: that close waits until
 * curl has returned. */
static void drive(atl_http_t *http, curl_socket_t fd, int flags) {
  int running = 0;

  http->in_curl++;
  curl_multi_socket_action(http->multi, fd, flags, &running);
  http->in_curl--;
  if (http->close_deferred) {
    if (http->in_curl == 0)
      teardown(http);
    return;
  }
  check_done(http);
}

static void poll_cb(uv_poll_t *h, int status, int events) {
  http_sock_t *s = h->data;
  int flags = 0;

  if (status < 0) {
    flags = CURL_CSELECT_ERR;
  } else {
    if (events & UV_READABLE)
      flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
      flags |= CURL_CSELECT_OUT;
  }
  /* The socket's fd is copied because curl may ask us to stop watching it,
   * which starts closing s, during the call. */
  drive(s->http, s->fd, flags);
}

static int socket_fn(CURL *easy, curl_socket_t fd, int what, void *userp,
                     void *socketp) {
  atl_http_t *http = userp;
  http_sock_t *s = socketp;
  int events = 0;

  (void)easy;
  /* During curl_multi_cleanup() the poll handles are already closed. */
  if (http->torn_down)
    return 0;
  if (what == CURL_POLL_REMOVE) {
    if (s) {
      curl_multi_assign(http->multi, fd, NULL);
      sock_close(http, s);
    }
    return 0;
  }
  if (!s) {
    s = calloc(1, sizeof(*s));
    if (!s)
      return -1;
    if (uv_poll_init_socket(http->loop, &s->poll, fd) != 0) {
      free(s);
      return -1;
    }
    s->poll.data = s;
    s->fd = fd;
    s->http = http;
    s->next = http->sockets;
    if (s->next)
      s->next->prev = s;
    http->sockets = s;
    http->open_handles++;
    curl_multi_assign(http->multi, fd, s);
  }
  if (what & CURL_POLL_IN)
    events |= UV_READABLE;
  if (what & CURL_POLL_OUT)
    events |= UV_WRITABLE;
  /* Curl may change its interest on a socket it already has (a reused
   * connection switching from sending to receiving): restart with the new
   * set, or stop when it wants nothing for now. */
  if (events)
    uv_poll_start(&s->poll, events, poll_cb);
  else
    uv_poll_stop(&s->poll);
  return 0;
}

static void timer_cb(uv_timer_t *t) {
  drive(t->data, CURL_SOCKET_TIMEOUT, 0);
}

static int timer_fn(CURLM *multi, long timeout_ms, void *userp) {
  atl_http_t *http = userp;

  (void)multi;
  if (http->torn_down)
    return 0;
  /* A zero timeout still goes through the loop rather than calling curl
   * back from here, which curl does not allow. */
  if (timeout_ms < 0)
    uv_timer_stop(&http->timer);
  else
    uv_timer_start(&http->timer, timer_cb, (uint64_t)timeout_ms, 0);
  return 0;
}

/* ---- starting requests --------------------------------------------------- */

/* curl's sockets are opened close-on-exec: Debian's libcurl leaves them
 * inheritable, and a render worker started while a request was open held
 * the provider's connection. (The worker also closes what it was not
 * given; this keeps the daemon's side right for any child.) */
static curl_socket_t open_socket_cb(void *user, curlsocktype purpose,
                                    struct curl_sockaddr *addr) {
  (void)user;
  (void)purpose;
  return socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
}

/* Sets up the easy handle for r. Returns 0 or a negative ATL_E* code. */
static int req_setup(http_req_t *r) {
  CURL *e = curl_easy_init();
  CURLcode rc = CURLE_OK;

  if (!e)
    return ATL_ENOMEM;
  r->easy = e;
  r->errbuf[0] = '\0';

#define SET(opt, val)                                                          \
  do {                                                                         \
    if (rc == CURLE_OK)                                                        \
      rc = curl_easy_setopt(e, opt, val);                                      \
  } while (0)

  SET(CURLOPT_URL, r->url);
  /* The daemon is multi-threaded: curl must not use signals (for DNS
   * timeouts), which would hit an arbitrary thread. */
  SET(CURLOPT_NOSIGNAL, 1L);
  SET(CURLOPT_PRIVATE, (void *)r);
  SET(CURLOPT_ERRORBUFFER, r->errbuf);
  SET(CURLOPT_WRITEFUNCTION, write_cb);
  SET(CURLOPT_WRITEDATA, (void *)r);
  SET(CURLOPT_OPENSOCKETFUNCTION, open_socket_cb);
  /* Only the web protocols the API promises; a plugin must not be able to
   * reach file:// or other schemes through the daemon. */
#if LIBCURL_VERSION_NUM >= 0x075500
  SET(CURLOPT_PROTOCOLS_STR, "http,https");
#else
  SET(CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  /* Redirects are the caller's decision: a redirect to another host could
   * leak the caller's headers (API keys). */
  SET(CURLOPT_FOLLOWLOCATION, 0L);
  /* Streaming responses can be idle for long stretches; keepalive probes
   * notice dead peers. */
  SET(CURLOPT_TCP_KEEPALIVE, 1L);
  /* An empty string offers every encoding curl was built to decode. */
  SET(CURLOPT_ACCEPT_ENCODING, "");
  SET(CURLOPT_TIMEOUT_MS, (long)r->timeout_ms);
  /* When the server announces the length, curl refuses an oversized body
   * before downloading it; otherwise write_cb stops it. */
  if (!r->on_data)
    SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)r->max_response);
  if (r->headers)
    SET(CURLOPT_HTTPHEADER, r->headers);

  const char *m = r->method;
  if (m && strcmp(m, "HEAD") == 0) {
    SET(CURLOPT_NOBODY, 1L);
  } else if (r->has_body || (m && strcmp(m, "POST") == 0)) {
    /* The body is ours until the request is freed, so curl need not copy
     * it. An empty POST still needs a non-NULL pointer. */
    SET(CURLOPT_POSTFIELDS, r->body ? r->body : "");
    SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
  } else {
    SET(CURLOPT_HTTPGET, 1L);
  }
  /* Any method curl does not pick by itself from the options above. */
  if (m && strcmp(m, "HEAD") != 0 && strcmp(m, "POST") != 0 &&
      !(strcmp(m, "GET") == 0 && !r->has_body))
    SET(CURLOPT_CUSTOMREQUEST, m);
#undef SET

  if (rc != CURLE_OK) {
    snprintf(r->message, sizeof(r->message), "%s", curl_easy_strerror(rc));
    return rc == CURLE_OUT_OF_MEMORY ? ATL_ENOMEM : ATL_EINVAL;
  }
  return 0;
}

static void req_start(atl_http_t *http, http_req_t *r) {
  int err = req_setup(r);

  if (err == 0) {
    r->next = http->active;
    if (r->next)
      r->next->prev = r;
    http->active = r;
    if (curl_multi_add_handle(http->multi, r->easy) != CURLM_OK) {
      active_unlink(http, r);
      snprintf(r->message, sizeof(r->message),
               "could not add the transfer to the multi handle");
      err = ATL_EIO;
    }
  }
  if (err != 0)
    req_complete(http, r, err, r->message);
}

static http_req_t *queue_pop(atl_http_t *http) {
  http_req_t *r;

  pthread_mutex_lock(&http->lock);
  r = http->queue_head;
  if (r) {
    http->queue_head = r->next;
    if (!http->queue_head)
      http->queue_tail = NULL;
    r->next = NULL;
  }
  pthread_mutex_unlock(&http->lock);
  return r;
}

static void async_cb(uv_async_t *a) {
  atl_http_t *http = a->data;
  http_req_t *r;

  /* One at a time, so that a failure callback that closes the client leaves
   * the rest of the queue to close, which cancels it. */
  while (!http->closing && (r = queue_pop(http)) != NULL)
    req_start(http, r);
}

/* ---- public API ---------------------------------------------------------- */

int atl_http_init(uv_loop_t *loop, atl_http_t **out) {
  atl_http_t *http;

  if (!loop || !out)
    return ATL_EINVAL;
  *out = NULL;
  pthread_once(&curl_once, curl_global_once);
  if (curl_init_result != CURLE_OK)
    return ATL_EIO;

  http = calloc(1, sizeof(*http));
  if (!http)
    return ATL_ENOMEM;
  http->loop = loop;
  atomic_init(&http->pending, 0);
  if (pthread_mutex_init(&http->lock, NULL) != 0) {
    free(http);
    return ATL_ENOMEM;
  }
  http->multi = curl_multi_init();
  if (!http->multi) {
    pthread_mutex_destroy(&http->lock);
    free(http);
    return ATL_ENOMEM;
  }
  /* curl 7.88 opens the multi handle's wakeup socket pair inheritable
   * (open_socket_cb covers only its connections): no child of the daemon
   * may hold it. */
  atl_cloexec_all();
  if (uv_async_init(loop, &http->async, async_cb) != 0) {
    curl_multi_cleanup(http->multi);
    pthread_mutex_destroy(&http->lock);
    free(http);
    return ATL_EIO;
  }
  http->async.data = http;
  uv_timer_init(loop, &http->timer);
  http->timer.data = http;
  http->open_handles = 2;

  curl_multi_setopt(http->multi, CURLMOPT_SOCKETFUNCTION, socket_fn);
  curl_multi_setopt(http->multi, CURLMOPT_SOCKETDATA, (void *)http);
  curl_multi_setopt(http->multi, CURLMOPT_TIMERFUNCTION, timer_fn);
  curl_multi_setopt(http->multi, CURLMOPT_TIMERDATA, (void *)http);
  /* libcurl sizes its connection cache from the transfers in flight at
   * the moment a connection is returned, so with a hundred sessions
   * calling one provider it closed about one connection in eight and
   * opened another (bench/agent: 4,600 connections for 39,000 requests).
   * Against a real provider each of those is a TLS handshake. Keep
   * enough idle connections for every session that may be calling. */
  curl_multi_setopt(http->multi, CURLMOPT_MAXCONNECTS, 256L);

  *out = http;
  return 0;
}

int atl_http_request(atl_http_t *http, const atl_http_request_t *req,
                     atl_http_data_cb on_data, atl_http_done_cb cb,
                     void *user) {
  http_req_t *r;
  size_t have;

  if (!http || !req || !cb)
    return ATL_EINVAL;
  /* A caller built against an older, shorter request struct has only the
   * members its struct_size covers; the rest take their defaults. */
  have = req->struct_size;
  if (have < offsetof(atl_http_request_t, url) + sizeof(req->url) || !req->url)
    return ATL_EINVAL;
#define HAS(member)                                                            \
  (have >= offsetof(atl_http_request_t, member) + sizeof(req->member))

  r = calloc(1, sizeof(*r));
  if (!r)
    return ATL_ENOMEM;
  r->http = http;
  r->on_data = on_data;
  r->cb = cb;
  r->user = user;
  r->url = strdup(req->url);
  if (!r->url)
    goto nomem;
  if (req->method && !(r->method = strdup(req->method)))
    goto nomem;
  if (HAS(headers) && req->headers) {
    for (const char *const *h = req->headers; *h; h++) {
      struct curl_slist *l = curl_slist_append(r->headers, *h);
      if (!l)
        goto nomem;
      r->headers = l;
    }
  }
  if (HAS(body_len) && req->body) {
    r->has_body = 1;
    r->body_len = req->body_len;
    r->body = malloc(r->body_len ? r->body_len : 1);
    if (!r->body)
      goto nomem;
    memcpy(r->body, req->body, r->body_len);
  }
  r->timeout_ms = HAS(timeout_ms) && req->timeout_ms ? req->timeout_ms
                                                     : HTTP_DEFAULT_TIMEOUT_MS;
  r->max_response = HAS(max_response) && req->max_response
                        ? req->max_response
                        : HTTP_DEFAULT_MAX_RESPONSE;
#undef HAS

  pthread_mutex_lock(&http->lock);
  if (http->closing) {
    pthread_mutex_unlock(&http->lock);
    req_free(r);
    return ATL_ESHUTDOWN;
  }
  if (http->queue_tail)
    http->queue_tail->next = r;
  else
    http->queue_head = r;
  http->queue_tail = r;
  atomic_fetch_add(&http->pending, 1);
  /* Signalled under the lock: close marks the client closing under the same
   * lock before it closes the async handle, so this never races with that. */
  uv_async_send(&http->async);
  pthread_mutex_unlock(&http->lock);
  return 0;

nomem:
  req_free(r);
  return ATL_ENOMEM;
}

unsigned atl_http_active(const atl_http_t *http) {
  return http ? atomic_load(&((atl_http_t *)http)->pending) : 0;
}

static void handle_close_cb(uv_handle_t *h) {
  atl_http_t *http = h->data;

  http->open_handles--;
  if (http->torn_down && http->open_handles == 0) {
    pthread_mutex_destroy(&http->lock);
    free(http);
  }
}

/* Cancels everything and releases curl and the handles. Runs outside of any
 * curl call. */
static void teardown(atl_http_t *http) {
  static const char cancelled[] = "request cancelled: the HTTP client closed";
  http_req_t *r;

  http->close_deferred = 0;
  /* Requests not yet started. Callbacks that submit more get ESHUTDOWN. */
  while ((r = queue_pop(http)) != NULL)
    req_complete(http, r, ATL_ECANCELED, cancelled);
  /* Transfers in progress. Removing a handle may make curl release its
   * sockets, which goes through socket_fn as usual. */
  while ((r = http->active) != NULL) {
    active_unlink(http, r);
    curl_multi_remove_handle(http->multi, r->easy);
    req_complete(http, r, ATL_ECANCELED, cancelled);
  }
  /* Sockets curl still holds (its connection cache) are closed by
   * curl_multi_cleanup(). Stop watching them first, while the descriptors
   * are still open, and tell socket_fn and timer_fn to ignore curl from now
   * on. */
  while (http->sockets)
    sock_close(http, http->sockets);
  http->torn_down = 1;
  curl_multi_cleanup(http->multi);
  http->multi = NULL;

  uv_timer_stop(&http->timer);
  uv_close((uv_handle_t *)&http->timer, handle_close_cb);
  uv_close((uv_handle_t *)&http->async, handle_close_cb);
}

void atl_http_close(atl_http_t *http) {
  int already;

  if (!http)
    return;
  pthread_mutex_lock(&http->lock);
  already = http->closing;
  http->closing = 1;
  pthread_mutex_unlock(&http->lock);
  if (already)
    return;
  if (http->in_curl > 0)
    http->close_deferred = 1;
  else
    teardown(http);
}
