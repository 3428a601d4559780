/* The threads that accept and serve requests.
 *
 * libfcgi's FCGX API is blocking: a thread waits in FCGX_Accept_r, then
 * serves the request it got. Most requests take milliseconds, but an event
 * stream keeps its thread as long as the browser stays, so a fixed pool
 * would stop accepting once every thread held a stream. Instead the pool
 * keeps min_threads threads waiting in accept: when the last idle one
 * takes a request, it starts another (up to max_threads in all), and a
 * thread that finishes while enough others are idle leaves. Streams cost
 * a thread each (with a small stack), which is what lets 1,000 of them be
 * held on two cores without an event loop in the bridge. Streams have
 * limits of their own (fcgi_stream_acquire, at the end): they never take
 * the last reserve_threads threads, so the rest of the API always has
 * threads to answer with.
 */
#include "atl-build.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bridge.h"
#include "mcp.h"

/* Serving a request needs little stack: JSON is on the heap. */
#define THREAD_STACK (256 * 1024)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t all_gone = PTHREAD_COND_INITIALIZER;
static int listen_fd;
static int threads; /* alive */
static int idle;    /* waiting in accept */
/* Some platforms need accept() serialised between threads (libfcgi's
 * threaded example does the same); it costs nothing here. */
static pthread_mutex_t accept_mu = PTHREAD_MUTEX_INITIALIZER;

static void *serve(void *arg);
static double now_ms(void);

/* Event streams come and go by the hundred, each thread allocating in
 * malloc arenas that glibc keeps once freed (bench/sse: 15 MB more RSS
 * after each thousand streams, all given back by malloc_trim). A thread
 * that leaves gives the free memory back when the pool is back to its
 * idle size, and otherwise at most once a second. */
static double last_trim_ms;

static void trim_now_and_then(void) {
  double now = now_ms();
  pthread_mutex_lock(&mu);
  int due = now - last_trim_ms >= 1000 || threads <= 2 * fcgi_opt.min_threads;
  if (due)
    last_trim_ms = now;
  pthread_mutex_unlock(&mu);
  if (due)
    malloc_trim(0);
}

/* With mu held. */
static int spawn_locked(void) {
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, THREAD_STACK);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  int rc = pthread_create(&t, &a, serve, NULL);
  pthread_attr_destroy(&a);
  if (rc == 0)
    threads++;
  else
    fcgi_log("error", "cannot start a thread: %s", strerror(rc));
  return rc;
}

static void split_uri(fcgi_ctx_t *x) {
  const char *uri = fcgi_param(x, "REQUEST_URI");
  if (uri == NULL)
    uri = fcgi_param(x, "DOCUMENT_URI");
  if (uri == NULL)
    uri = "";
  size_t n = strcspn(uri, "?");
  if (n >= sizeof(x->path))
    n = sizeof(x->path) - 1;
  memcpy(x->path, uri, n);
  x->path[n] = '\0';
  x->query = uri[n] == '?' ? uri + n + 1 : "";
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void *serve(void *arg) {
  (void)arg;
  FCGX_Request req;
  atl_rpcc_t rpc;
  memset(&rpc, 0, sizeof(rpc));
  rpc.fd = -1;
  rpc.watch_fd = -1;
  if (FCGX_InitRequest(&req, listen_fd, 0) != 0) {
    pthread_mutex_lock(&mu);
    threads--;
    pthread_cond_broadcast(&all_gone);
    pthread_mutex_unlock(&mu);
    return NULL;
  }
  for (;;) {
    pthread_mutex_lock(&mu);
    idle++;
    pthread_mutex_unlock(&mu);

    pthread_mutex_lock(&accept_mu);
    int rc = fcgi_stopping ? -1 : FCGX_Accept_r(&req);
    pthread_mutex_unlock(&accept_mu);

    pthread_mutex_lock(&mu);
    idle--;
    if (rc >= 0 && idle == 0 && threads < fcgi_opt.max_threads &&
        !fcgi_stopping)
      spawn_locked(); /* keep someone accepting */
    pthread_mutex_unlock(&mu);
    if (rc < 0)
      break;

    fcgi_ctx_t x = {.req = &req, .rpc = &rpc};
    x.method = fcgi_param(&x, "REQUEST_METHOD");
    split_uri(&x);
    double t0 = now_ms();
    fcgi_route(&x);
    if (fcgi_opt.verbose)
      fcgi_log("info", "%s %s -> %d (%.1f ms)", x.method ? x.method : "?",
               x.path, x.status, now_ms() - t0);
    FCGX_Finish_r(&req);

    pthread_mutex_lock(&mu);
    int leave = idle >= fcgi_opt.min_threads || fcgi_stopping;
    pthread_mutex_unlock(&mu);
    if (leave)
      break;
  }
  atl_rpcc_close(&rpc);
  FCGX_Free(&req, 0);
  /* The count below is what lets main return and the process exit, so
   * nothing may be left for this thread's exit destructors to free. */
  atl_mcp_thread_done();
  trim_now_and_then();
  pthread_mutex_lock(&mu);
  threads--;
  pthread_cond_broadcast(&all_gone);
  pthread_mutex_unlock(&mu);
  return NULL;
}

int fcgi_pool_run(int fd) {
  listen_fd = fd;
  pthread_mutex_lock(&mu);
  for (int i = 0; i < fcgi_opt.min_threads; i++)
    if (spawn_locked() != 0)
      break;
  int ok = threads > 0;
  pthread_mutex_unlock(&mu);
  return ok ? 0 : -1;
}

void fcgi_pool_wait(int timeout_ms) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += timeout_ms / 1000;
  until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&mu);
  while (threads > 0)
    if (pthread_cond_timedwait(&all_gone, &mu, &until) == ETIMEDOUT)
      break;
  pthread_mutex_unlock(&mu);
}

int fcgi_pool_threads(void) {
  pthread_mutex_lock(&mu);
  int n = threads;
  pthread_mutex_unlock(&mu);
  return n;
}

/* Event streams hold their threads for as long as their clients stay, so
 * without a limit of their own they could take every thread but one, and
 * one slow call would then hold up every other request. They may hold
 * max_threads - reserve_threads threads at most, and one client address
 * max_streams_per_client of those: a client that opens streams in a loop
 * gets 429s, and leaves the others their streams. */
typedef struct client_s {
  struct client_s *next;
  int streams;
  char addr[]; /* REMOTE_ADDR, or "" */
} client_t;

static pthread_mutex_t streams_mu = PTHREAD_MUTEX_INITIALIZER;
static int streams;
/* The addresses holding streams now: few (behind nginx, one), so a list. */
static client_t *clients;

static client_t **client_find(const char *addr) {
  client_t **p = &clients;
  while (*p != NULL && strcmp((*p)->addr, addr) != 0)
    p = &(*p)->next;
  return p;
}

int fcgi_stream_acquire(const char *addr) {
  if (addr == NULL)
    addr = "";
  pthread_mutex_lock(&streams_mu);
  int rc = 0;
  client_t **p = client_find(addr);
  if (streams >= fcgi_opt.max_threads - fcgi_opt.reserve_threads) {
    rc = 503;
  } else if (*p != NULL && (*p)->streams >= fcgi_opt.max_streams_per_client) {
    rc = 429;
  } else if (*p == NULL) {
    size_t n = strlen(addr) + 1;
    client_t *c = malloc(sizeof(*c) + n);
    if (c == NULL) {
      rc = 503;
    } else {
      memcpy(c->addr, addr, n);
      c->streams = 0;
      c->next = NULL;
      *p = c;
    }
  }
  if (rc == 0) {
    (*p)->streams++;
    streams++;
  }
  pthread_mutex_unlock(&streams_mu);
  return rc;
}

void fcgi_stream_release(const char *addr) {
  if (addr == NULL)
    addr = "";
  pthread_mutex_lock(&streams_mu);
  client_t **p = client_find(addr);
  if (*p != NULL) {
    streams--;
    if (--(*p)->streams == 0) {
      client_t *c = *p;
      *p = c->next;
      free(c);
    }
  }
  pthread_mutex_unlock(&streams_mu);
}
