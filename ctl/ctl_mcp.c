/* atelierctl mcp: Atelier's tools for an MCP client, over stdio
 * (doc/mcp.md). The client starts this process and writes one JSON-RPC
 * message a line on its stdin; every answer goes to stdout, one a line,
 * and nothing else ever does: a stray byte there breaks the client
 * ("Unexpected token ... is not valid JSON"), so messages for people go
 * to stderr.
 *
 * The protocol is mcp/mcp.c's. This file is the transport: lines in and
 * out, tools/call on worker threads so that a ping or a cancel is
 * answered while a render runs, and notifications/cancelled, which
 * closes the cancelled call's pipe (its wait for atelierd watches it).
 *
 * The workers are kept between calls: making and ending a thread for each
 * call was a fifth of all the CPU a busy client's calls cost
 * (bench/README.md, mcp). A quick tool's call with nothing else in flight
 * runs on the reading thread itself. */
#include "atl-build.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "mcp.h"
#include "rpc_client.h"

/* A line longer than this is refused (an import_scene of a big scene is
 * well under it). */
#define MAX_LINE ((size_t)64 << 20)
/* Calls in flight at once; a client past it gets an error, not a queue. */
#define MAX_CALLS 32

typedef struct call_s {
  struct call_s *next;
  struct call_s *queued; /* the next call waiting for a worker */
  json_object *msg;      /* the tools/call request */
  char *key;             /* its id as JSON text, for notifications/cancelled */
  int cancel_r, cancel_w;
} call_t;

static atl_mcp_t *server;
static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t calls_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t calls_cv = PTHREAD_COND_INITIALIZER;
static call_t *calls; /* in flight: queued or running */
static int n_calls;
/* The calls waiting for a worker, oldest first, and the workers. */
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER;
static call_t *queue_head, *queue_tail;
static int n_queued, n_workers, n_idle_workers, workers_stop;
static volatile int gone; /* atelierd went away: answer, then exit */
static volatile int write_failed;

/* One message, one line, whole. */
static void send_msg(json_object *o) {
  const char *s = json_object_to_json_string_ext(
      o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  pthread_mutex_lock(&out_mu);
  /* json-c escapes control characters: the text has no raw newline. */
  if (fputs(s, stdout) == EOF || fputc('\n', stdout) == EOF ||
      fflush(stdout) != 0)
    write_failed = 1;
  pthread_mutex_unlock(&out_mu);
}

static void unlink_call(call_t *k) {
  pthread_mutex_lock(&calls_mu);
  for (call_t **p = &calls; *p; p = &(*p)->next)
    if (*p == k) {
      *p = k->next;
      break;
    }
  n_calls--;
  pthread_cond_broadcast(&calls_cv);
  pthread_mutex_unlock(&calls_mu);
}

/* A call's notifications (progress), from the thread that follows it. */
static void notify(void *user, json_object *msg) {
  (void)user;
  send_msg(msg);
}

/* Runs a call and answers it, unless it was cancelled before it ran
 * (then it gets no answer, as a cancelled call gets none). */
static void run_call(call_t *k, int cancelled) {
  if (!cancelled) {
    atl_mcp_req_t r = {.cancel_fd = k->cancel_r, .notify = notify};
    json_object *answer = atl_mcp_handle(server, k->msg, &r);
    if (answer != NULL && !r.cancelled)
      send_msg(answer);
    json_object_put(answer);
    if (r.daemon_gone)
      gone = 1;
  }
  unlink_call(k);
  close(k->cancel_r);
  if (k->cancel_w >= 0)
    close(k->cancel_w);
  json_object_put(k->msg);
  free(k->key);
  free(k);
}

/* A worker: runs queued calls until told to stop. */
static void *worker_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&calls_mu);
  for (;;) {
    while (queue_head == NULL && !workers_stop) {
      n_idle_workers++;
      pthread_cond_wait(&work_cv, &calls_mu);
      n_idle_workers--;
    }
    if (queue_head == NULL)
      break;
    call_t *k = queue_head;
    queue_head = k->queued;
    if (queue_head == NULL)
      queue_tail = NULL;
    n_queued--;
    /* Cancelled while it waited: nothing of it may reach atelierd (a
     * session.create, under --new, would be made and lost). */
    int cancelled = k->cancel_w < 0;
    pthread_mutex_unlock(&calls_mu);
    run_call(k, cancelled);
    pthread_mutex_lock(&calls_mu);
  }
  n_workers--;
  pthread_cond_broadcast(&calls_cv);
  pthread_mutex_unlock(&calls_mu);
  return NULL;
}

/* One more worker, when the queued calls outnumber the idle workers (and
 * there are fewer than MAX_CALLS: each call then has one). Called with
 * calls_mu held; 0, or -1 when no thread could be made for the newest
 * call: the others keep every worker busy (long renders), and it would
 * wait for one of them to end. */
static int ensure_worker_locked(void) {
  if (n_queued <= n_idle_workers || n_workers >= MAX_CALLS)
    return 0;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_t tid;
  int rc = pthread_create(&tid, &a, worker_main, NULL);
  pthread_attr_destroy(&a);
  if (rc != 0)
    return -1;
  n_workers++;
  return 0;
}

/* Takes k, the newest queued call, off the queue (calls_mu held). */
static void unqueue_newest_locked(call_t *k) {
  call_t **p = &queue_head, *prev = NULL;
  while (*p != NULL && *p != k) {
    prev = *p;
    p = &(*p)->queued;
  }
  if (*p == k) {
    *p = k->queued;
    if (queue_tail == k)
      queue_tail = prev;
    n_queued--;
  }
}

static const char *id_key(json_object *id) {
  return json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN);
}

/* notifications/cancelled: the call's wait ends when its pipe's write end
 * closes. An unknown or finished id is ignored, as the spec asks. */
static void cancel_call(json_object *id) {
  const char *key = id_key(id);
  pthread_mutex_lock(&calls_mu);
  for (call_t *k = calls; k; k = k->next)
    if (strcmp(k->key, key) == 0 && k->cancel_w >= 0) {
      close(k->cancel_w);
      k->cancel_w = -1;
    }
  pthread_mutex_unlock(&calls_mu);
}

static void cancel_all(void) {
  pthread_mutex_lock(&calls_mu);
  for (call_t *k = calls; k; k = k->next)
    if (k->cancel_w >= 0) {
      close(k->cancel_w);
      k->cancel_w = -1;
    }
  pthread_mutex_unlock(&calls_mu);
}

/* A call this transport cannot take on: the client may try again. */
static void refuse_call(json_object *id, const char *why) {
  json_object *e = atl_mcp_error(
      id, -32603, NULL, "Internal error: %s (at most %d tool calls at once)",
      why, MAX_CALLS);
  send_msg(e);
  json_object_put(e);
}

/* Queues a tools/call for a worker, starting one if none is idle (msg
 * taken). */
static void start_call(json_object *msg) {
  json_object *id = NULL;
  json_object_object_get_ex(msg, "id", &id);
  pthread_mutex_lock(&calls_mu);
  int full = n_calls >= MAX_CALLS;
  pthread_mutex_unlock(&calls_mu);
  call_t *k = full ? NULL : calloc(1, sizeof(*k));
  int fds[2] = {-1, -1};
  char *key = k ? strdup(id_key(id)) : NULL;
  if (k == NULL || key == NULL || pipe2(fds, O_CLOEXEC) != 0) {
    refuse_call(id, full ? "too many tool calls in flight"
                         : "out of memory or descriptors");
    json_object_put(msg);
    free(key);
    free(k);
    return;
  }
  k->msg = msg;
  k->key = key;
  k->cancel_r = fds[0];
  k->cancel_w = fds[1];
  pthread_mutex_lock(&calls_mu);
  k->next = calls;
  calls = k;
  n_calls++;
  if (queue_tail != NULL)
    queue_tail->queued = k;
  else
    queue_head = k;
  queue_tail = k;
  n_queued++;
  if (ensure_worker_locked() != 0) {
    /* Answered at once rather than run here, where it would hold up
     * every other message (a ping, a cancel) for as long as it runs. */
    unqueue_newest_locked(k);
    pthread_mutex_unlock(&calls_mu);
    unlink_call(k);
    refuse_call(id, "no thread to run it on");
    close(k->cancel_r);
    close(k->cancel_w);
    json_object_put(k->msg);
    free(k->key);
    free(k);
    return;
  }
  pthread_cond_signal(&work_cv);
  pthread_mutex_unlock(&calls_mu);
}

/* One line from the client; more: other whole lines follow it in what
 * was read. */
static void handle_line(char *line, size_t len, int more) {
  /* Blank lines carry nothing; skip them rather than answer. */
  size_t i = 0;
  while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
    i++;
  if (i == len)
    return;
  char why[256];
  json_object *msg = atl_json_parse_text(line, len, why, sizeof(why));
  if (msg == NULL) {
    json_object *e = atl_mcp_parse_error(why);
    send_msg(e);
    json_object_put(e);
    return;
  }
  json_object *cancelled = atl_mcp_cancelled_id(msg);
  if (cancelled != NULL)
    cancel_call(cancelled);
  if (atl_mcp_is_slow(msg)) {
    /* A quick tool's call (its handler never blocks: a scene edit) with
     * nothing else in flight and nothing more to read runs here, on the
     * reading thread: the hand-off to a worker was a sixth of a busy
     * client's calls/s (bench/README.md, mcp). It may not wait for its
     * session (if_idle): when the session runs another call, it goes to
     * a worker after all, so that this thread stays free for pings and
     * cancels. */
    pthread_mutex_lock(&calls_mu);
    int idle = n_calls == 0;
    pthread_mutex_unlock(&calls_mu);
    struct pollfd in = {.fd = STDIN_FILENO, .events = POLLIN};
    if (!(idle && !more && atl_mcp_is_quick(server, msg) &&
          poll(&in, 1, 0) == 0)) {
      start_call(msg);
      return;
    }
  }
  atl_mcp_req_t r = {.cancel_fd = -1, .if_idle = 1};
  json_object *answer = atl_mcp_handle(server, msg, &r);
  if (r.busy) {
    /* Its session runs another call (another client's render): it
     * waits for it on a worker, not here. */
    start_call(msg);
    return;
  }
  if (answer != NULL)
    send_msg(answer);
  json_object_put(answer);
  json_object_put(msg);
  if (r.daemon_gone)
    gone = 1;
}

int ctl_cmd_mcp(int argc, char **argv, const char *socket_path,
                const char *session, int new_session) {
  (void)argv;
  if (argc > 0)
    return ctl_usage_error("%s",
                           "usage: atelierctl mcp [--session ID | --new]");
  if (session != NULL && new_session)
    return ctl_usage_error("%s", "mcp takes --session ID or --new, not both");
  /* The session must exist now, not at the first call: a typo is said at
   * once, where the person who configured the client sees it. */
  if (session != NULL) {
    atl_rpcc_t c = {.watch_fd = -1};
    json_object *p = json_object_new_object(), *res = NULL;
    json_object_object_add(p, "session", json_object_new_string(session));
    int rc = atl_rpcc_connect(&c, socket_path) != 0
                 ? ATL_RPCC_TRANSPORT
                 : atl_rpcc_call(&c, "session.get", p, ctl_timeout_ms(), &res);
    if (rc != ATL_RPCC_OK) {
      fprintf(stderr, "atelierctl mcp: %s\n",
              rc == ATL_RPCC_ERROR && c.err_code == ATL_RPCC_NO_SESSION
                  ? "no such session (atelierctl session list names them)"
                  : (rc == ATL_RPCC_ERROR ? c.err_message : c.errmsg));
      atl_rpcc_close(&c);
      return EXIT_USAGE;
    }
    json_object_put(res);
    atl_rpcc_close(&c);
  }
  atl_mcp_config_t cfg = {
      .socket_path = socket_path, .session = session, .via = "MCP over stdio"};
  server = atl_mcp_new(&cfg);
  if (server == NULL) {
    fputs("atelierctl mcp: out of memory\n", stderr);
    return EXIT_USAGE;
  }
  fprintf(stderr, "atelierctl mcp: serving Atelier's tools on stdio (%s%s)\n",
          session ? "session " : "a new session at the first call",
          session ? session : "");

  char *buf = NULL;
  size_t len = 0, cap = 0;
  int status = 0, eof = 0;
  while (!eof && !gone && !write_failed) {
    struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
    /* Woken now and then to notice atelierd going away during a call. */
    int n = poll(&pfd, 1, 200);
    if (n < 0 && errno != EINTR)
      break;
    if (n <= 0)
      continue;
    if (cap - len < 65536) {
      size_t ncap = cap ? cap * 2 : 131072;
      char *nb = realloc(buf, ncap);
      if (nb == NULL) {
        fputs("atelierctl mcp: out of memory\n", stderr);
        status = EXIT_USAGE;
        break;
      }
      buf = nb;
      cap = ncap;
    }
    ssize_t got = read(STDIN_FILENO, buf + len, cap - len);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) {
      eof = 1; /* the client closed stdin: finish and exit */
      if (len > 0)
        handle_line(buf, len, 0);
      break;
    }
    size_t start = 0, scan = len;
    len += (size_t)got;
    for (char *nl; (nl = memchr(buf + scan, '\n', len - scan)) != NULL;) {
      size_t end = (size_t)(nl - buf);
      int more = memchr(nl + 1, '\n', len - end - 1) != NULL;
      handle_line(buf + start, end - start, more);
      start = scan = end + 1;
    }
    memmove(buf, buf + start, len - start);
    len -= start;
    if (len > MAX_LINE) {
      json_object *e = atl_mcp_parse_error("a line longer than 64 MiB");
      send_msg(e);
      json_object_put(e);
      status = EXIT_USAGE;
      break;
    }
  }
  free(buf);
  /* stdin closed: the calls in flight are answered first (a script that
   * pipes in one call and closes wants its answer). A client that wants
   * us gone sooner sends SIGTERM, as the spec's shutdown does: our
   * connections close and atelierd stops a render in flight. When
   * atelierd is gone the other calls fail at once and answer so. Only
   * when nothing can be written any more are they dropped. */
  if (write_failed)
    cancel_all();
  pthread_mutex_lock(&calls_mu);
  while (n_calls > 0)
    pthread_cond_wait(&calls_cv, &calls_mu);
  /* The workers leave before the server they use is freed. */
  workers_stop = 1;
  pthread_cond_broadcast(&work_cv);
  while (n_workers > 0)
    pthread_cond_wait(&calls_cv, &calls_mu);
  pthread_mutex_unlock(&calls_mu);
  if (gone) {
    fputs("atelierctl mcp: atelierd went away; exiting\n", stderr);
    status = EXIT_USAGE;
  }
  if (write_failed)
    status = EXIT_USAGE;
  atl_mcp_free(server);
  return status;
}
