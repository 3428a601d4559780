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
 * runs on the reading thread itself.
 *
 * When stdin and stdout are pipes or sockets (as every MCP client starts
 * its servers), they are handed to atelierd (mcp.attach), which reads the
 * client's messages and writes every answer itself: quick calls never
 * come here, and the rest come down the API connection as lines, their
 * answers going back up it (daemon/mcp_front.h). The loop below is the
 * same either way; only its descriptors change. */
#include "atl-build.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "mcp.h"
#include "rpc_client.h"

/* A line longer than this is refused (an import_scene of a big scene is
 * well under it). */
#define MAX_LINE ((size_t)64 << 20)
/* The longest line atelierd reads from the link (daemon/server.c's raw
 * links: 65 MiB). */
#define LINK_LINE_MAX (((size_t)65 << 20) - 1)
/* How long a call waits for atelierd to be back when it was away before
 * anything was done (a restart). */
#define RESTART_WAIT_MS 30000
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
/* Where messages come from and answers go: stdin and stdout, or, handed
 * off, the link to atelierd (both), until atelierd goes away (out_fd then
 * stdout again, to answer what was in flight). */
static int in_fd = STDIN_FILENO, out_fd = STDOUT_FILENO;
static int handed_off;
/* Set while atelierd writes its last answers on stdout as it hands stdio
 * back (mcp.h, ATL_MCP_LINK_DETACH): nothing is written meanwhile.
 * Under out_mu. */
static int out_held;
static pthread_cond_t out_cv = PTHREAD_COND_INITIALIZER;
/* The state atelierd was last told (handed off), under out_mu. */
static char told_session[33], told_client[65];
static int told;

/* 0 when all of len bytes were written to fd. */
static int write_all(int fd, const char *p, size_t len) {
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK)
      n = write(fd, p, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN) {
      /* atelierd left stdout non-blocking. */
      struct pollfd pfd = {.fd = fd, .events = POLLOUT};
      poll(&pfd, 1, 1000);
      continue;
    }
    if (n <= 0)
      return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

/* What atelierd needs for the calls it runs itself: the session and the
 * client's name, as {"session", "via", "client"} (a new object); their
 * values in sid and client. */
static json_object *state_json(char sid[33], char client[65]) {
  char base[ATL_MCP_VIA_MAX + 1];
  atl_mcp_state(server, sid, base, client);
  json_object *st = json_object_new_object();
  json_object_object_add(st, "session", json_object_new_string(sid));
  json_object_object_add(st, "via", json_object_new_string(base));
  json_object_object_add(st, "client", json_object_new_string(client));
  return st;
}

/* Handed off: tells atelierd the state when it changed, before the answer
 * that shows it goes out. 0, -1 when the link failed, -2 when out of
 * memory. out_mu held. */
static int tell_state_locked(void) {
  char sid[33], base[ATL_MCP_VIA_MAX + 1], client[65];
  atl_mcp_state(server, sid, base, client);
  if (told && strcmp(sid, told_session) == 0 &&
      strcmp(client, told_client) == 0)
    return 0; /* every answer asks: nothing is built unless it changed */
  json_object *st = state_json(sid, client);
  json_object *o = json_object_new_object();
  json_object_object_add(o, "dev.atelier/state", st);
  /* Unescaped, so that it begins as ATL_MCP_LINK_STATE says. */
  const char *s = json_object_to_json_string_ext(
      o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  char *line = malloc(strlen(s) + 2);
  int rc = -2; /* out of memory: not the link's fault */
  if (line != NULL) {
    sprintf(line, "%s\n", s);
    rc = write_all(out_fd, line, strlen(line));
  }
  free(line);
  json_object_put(o);
  if (rc == 0) {
    memcpy(told_session, sid, sizeof(told_session));
    memcpy(told_client, client, sizeof(told_client));
    told = 1;
  }
  return rc;
}

/* atelierd went away while it held stdout: answers go there again. */
static void take_back_stdout_locked(void) {
  /* Left non-blocking, as atelierd set it: write_all waits when full. */
  out_fd = STDOUT_FILENO;
}

/* A call failed for want of atelierd (r.daemon_gone): takes stdout back
 * when atelierd's end of the link has closed or closes within a moment.
 * A dying atelierd's end may stay open a little after the call's own
 * connection broke, and what is written there then is lost; an atelierd
 * that lives on (a call timed out, a connection refused) keeps writing
 * stdout, which two writers must not share. */
static void take_back_if_gone(void) {
  pthread_mutex_lock(&out_mu);
  int link = out_fd != STDOUT_FILENO ? out_fd : -1;
  pthread_mutex_unlock(&out_mu);
  if (link < 0)
    return;
  /* Not under out_mu: the other calls' answers go on meanwhile. */
  struct pollfd pfd = {.fd = link, .events = POLLRDHUP};
  if (poll(&pfd, 1, 500) <= 0 ||
      !(pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)))
    return;
  pthread_mutex_lock(&out_mu);
  if (out_fd == link) {
    gone = 1;
    take_back_stdout_locked();
  }
  pthread_mutex_unlock(&out_mu);
}

/* One message, one line, whole. */
static void send_msg(json_object *o) {
  const char *s = json_object_to_json_string_ext(
      o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  size_t n = strlen(s);
  json_object *instead = NULL;
  pthread_mutex_lock(&out_mu);
  /* atelierd is writing the last of its answers (a hand-back): stdout is
   * this process's once it has. */
  while (out_held)
    pthread_cond_wait(&out_cv, &out_mu);
  int linked = handed_off && out_fd != STDOUT_FILENO;
  if (linked && n > LINK_LINE_MAX) {
    /* atelierd reads no longer line from the link (then the client would
     * wait for its answer for ever). */
    json_object *id = NULL;
    json_object_object_get_ex(o, "id", &id);
    instead = atl_mcp_error(id, -32603, NULL,
                            "Internal error: the answer is %zu bytes, more "
                            "than the %zu atelierd passes on",
                            n, (size_t)LINK_LINE_MAX);
    s = json_object_to_json_string_ext(instead, JSON_C_TO_STRING_PLAIN);
    n = strlen(s);
  }
  /* json-c escapes control characters: the text has no raw newline. */
  char *line = malloc(n + 1);
  if (line == NULL) {
    pthread_mutex_unlock(&out_mu);
    json_object_put(instead);
    write_failed = 1;
    return;
  }
  memcpy(line, s, n);
  line[n] = '\n';
  json_object_put(instead);
  int rc = -1;
  if (linked) {
    rc = tell_state_locked();
    if (rc == 0)
      rc = write_all(out_fd, line, n + 1);
    if (rc == -1) {
      /* The link broke: atelierd went away. */
      gone = 1;
      take_back_stdout_locked();
    }
  }
  if (rc == -2 || (rc != 0 && write_all(out_fd, line, n + 1) != 0))
    write_failed = 1;
  pthread_mutex_unlock(&out_mu);
  free(line);
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
 * (then it gets no answer, as a cancelled call gets none). One that
 * found atelierd away before anything was done (a restart) is sent again
 * for up to RESTART_WAIT_MS, until it is cancelled. */
static void run_call(call_t *k, int cancelled) {
  if (!cancelled) {
    atl_mcp_req_t r = {.cancel_fd = k->cancel_r, .notify = notify};
    json_object *answer = NULL;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
      answer = atl_mcp_handle(server, k->msg, &r);
      clock_gettime(CLOCK_MONOTONIC, &now);
      long waited = (now.tv_sec - t0.tv_sec) * 1000 +
                    (now.tv_nsec - t0.tv_nsec) / 1000000;
      if (!r.unsent || r.cancelled || waited >= RESTART_WAIT_MS)
        break;
      json_object_put(answer);
      answer = NULL;
      /* The cancel pipe's hang-up ends the wait at once. */
      struct pollfd pfd = {.fd = k->cancel_r, .events = POLLRDHUP};
      if (poll(&pfd, 1, 250) > 0) {
        r.cancelled = 1;
        break;
      }
    }
    if (r.daemon_gone && handed_off)
      take_back_if_gone();
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
    struct pollfd in = {.fd = in_fd, .events = POLLIN};
    if (!(idle && !more && atl_mcp_is_quick(server, msg) &&
          poll(&in, 1, 0) == 0)) {
      start_call(msg);
      return;
    }
  }
  atl_mcp_req_t r = {.cancel_fd = -1, .if_idle = 1};
  json_object *answer = atl_mcp_handle(server, msg, &r);
  if (r.busy || (r.unsent && atl_mcp_is_slow(msg))) {
    /* Its session runs another call (another client's render), or
     * atelierd is away (a restart): it waits on a worker, not here. */
    json_object_put(answer);
    start_call(msg);
    return;
  }
  if (r.daemon_gone && handed_off)
    take_back_if_gone();
  if (answer != NULL)
    send_msg(answer);
  json_object_put(answer);
  json_object_put(msg);
  if (r.daemon_gone)
    gone = 1;
}

/* What atelierd sent back with its hand-back (the stdin it had read and
 * not used), once decoded: read before anything more from stdin. */
static unsigned char *detach_rest;
static size_t detach_rest_len;

/* A control line on the link: 1 for the end of stdin, 2 for atelierd
 * handing stdio back (answered here), 3 for stdio released to this
 * process, 0 for a client's line, -1 for a malformed control line. */
static int link_line(const char *line, size_t len) {
  size_t e = strlen(ATL_MCP_LINK_EOF), d = strlen(ATL_MCP_LINK_DETACH),
         r = strlen(ATL_MCP_LINK_RELEASED);
  if (len == e && memcmp(line, ATL_MCP_LINK_EOF, e) == 0)
    return 1;
  if (len == r && memcmp(line, ATL_MCP_LINK_RELEASED, r) == 0)
    return 3;
  if (len < d + 2 || memcmp(line, ATL_MCP_LINK_DETACH, d) != 0)
    return 0;
  /* {"dev.atelier/detach":"<base64>"}: no client line begins so (one
   * that would is sent with a space before it). */
  free(detach_rest);
  detach_rest = atl_base64_decode(line + d, len - d - 2, &detach_rest_len);
  if (detach_rest == NULL)
    detach_rest_len = 0; /* malformed: the hand-back goes on without it */
  pthread_mutex_lock(&out_mu);
  static const char ack[] = ATL_MCP_LINK_DETACHED "\n";
  if (out_fd != STDOUT_FILENO && write_all(out_fd, ack, sizeof(ack) - 1) == 0)
    out_held = 1; /* until atelierd has written its last answers */
  pthread_mutex_unlock(&out_mu);
  return 2;
}

/* After a hand-back: stdin and stdout are this process's again, and what
 * atelierd had read of stdin comes first. *buf (of *cap bytes, *len used)
 * holds the rest. */
static void back_to_stdio(char **buf, size_t *len, size_t *cap) {
  pthread_mutex_lock(&out_mu);
  close(in_fd);
  in_fd = STDIN_FILENO;
  out_fd = STDOUT_FILENO;
  handed_off = 0;
  out_held = 0;
  pthread_cond_broadcast(&out_cv);
  pthread_mutex_unlock(&out_mu);
  size_t n = detach_rest_len;
  if (*cap < n + 1) {
    char *nb = realloc(*buf, n + 131072);
    if (nb == NULL) {
      fputs("atelierctl mcp: out of memory\n", stderr);
      exit(EXIT_USAGE);
    }
    *buf = nb;
    *cap = n + 131072;
  }
  if (n > 0)
    memcpy(*buf, detach_rest, n);
  *len = n;
  free(detach_rest);
  detach_rest = NULL;
  detach_rest_len = 0;
  fputs("atelierctl mcp: atelierd stopped; serving stdio from here\n", stderr);
}

static int is_stream_fd(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

/* Hands stdin and stdout to atelierd (mcp.attach with SCM_RIGHTS): the
 * link's descriptor, with what atelierd sent after its answer in *rest
 * (malloc()ed, *rest_len bytes), or -1 when this process serves the
 * client itself: stdin or stdout is a terminal or a file, the hand-off is
 * turned off (ATELIER_MCP_RELAY=1), or atelierd refused it (an older
 * one does not know mcp.attach). */
static int hand_off(const char *socket_path, char **rest, size_t *rest_len) {
  const char *relay = getenv("ATELIER_MCP_RELAY");
  if ((relay != NULL && strcmp(relay, "1") == 0) ||
      !is_stream_fd(STDIN_FILENO) || !is_stream_fd(STDOUT_FILENO))
    return -1;
  atl_rpcc_t c;
  memset(&c, 0, sizeof(c));
  c.watch_fd = -1;
  if (atl_rpcc_connect(&c, socket_path) != 0)
    return -1;
  /* The state goes with the request, so that atelierd can run the first
   * calls itself; it is told again whenever it changes. */
  json_object *p = json_object_new_object(), *rq = json_object_new_object();
  json_object_object_add(p, "state", state_json(told_session, told_client));
  /* This process knows the hand-back (ATL_MCP_LINK_DETACH). */
  json_object_object_add(p, "link", json_object_new_int(1));
  json_object_object_add(rq, "jsonrpc", json_object_new_string("2.0"));
  json_object_object_add(rq, "id", json_object_new_int(1));
  json_object_object_add(rq, "method", json_object_new_string("mcp.attach"));
  json_object_object_add(rq, "params", p);
  char req[600];
  int req_len = snprintf(
      req, sizeof(req), "%s\n",
      json_object_to_json_string_ext(rq, JSON_C_TO_STRING_PLAIN |
                                             JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(rq);
  if (req_len < 0 || (size_t)req_len >= sizeof(req)) {
    atl_rpcc_close(&c);
    return -1;
  }
  int fds[2] = {STDIN_FILENO, STDOUT_FILENO};
  union {
    char buf[CMSG_SPACE(sizeof(fds))];
    struct cmsghdr align;
  } u;
  memset(&u, 0, sizeof(u));
  struct iovec iov = {.iov_base = req, .iov_len = (size_t)req_len};
  struct msghdr mh = {.msg_iov = &iov,
                      .msg_iovlen = 1,
                      .msg_control = u.buf,
                      .msg_controllen = sizeof(u.buf)};
  struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(fds));
  memcpy(CMSG_DATA(cm), fds, sizeof(fds));
  if (sendmsg(c.fd, &mh, MSG_NOSIGNAL) != (ssize_t)iov.iov_len) {
    atl_rpcc_close(&c); /* nothing was passed: this process serves */
    return -1;
  }
  /* The answer is the first line; whatever follows it in the client's
   * buffer is the client's first messages, passed on already. */
  char *line = NULL;
  int got = atl_rpcc_read_line(&c, ctl_timeout_ms(), &line);
  json_object *ans = got == 1 ? json_tokener_parse(line) : NULL;
  json_object *res = NULL, *att = NULL;
  free(line);
  int refused = json_object_object_get_ex(ans, "error", NULL);
  int ok = json_object_object_get_ex(ans, "result", &res) &&
           json_object_object_get_ex(res, "attached", &att) &&
           json_object_get_boolean(att);
  json_object_put(ans);
  if (refused) {
    /* atelierd kept nothing (an older one knows no mcp.attach). */
    atl_rpcc_close(&c);
    return -1;
  }
  if (!ok) {
    /* atelierd may be reading stdin already: two readers would split the
     * client's messages between them. */
    fprintf(stderr,
            "atelierctl mcp: atelierd did not answer mcp.attach "
            "(%s); exiting\n",
            got == 1 ? "a malformed answer"
                     : (c.errmsg[0] ? c.errmsg : "it closed the connection"));
    exit(EXIT_USAGE);
  }
  *rest_len = c.len - c.start;
  *rest = malloc(*rest_len + 1);
  if (*rest == NULL) {
    /* atelierd has stdin now: this process can no longer read it. */
    fputs("atelierctl mcp: out of memory\n", stderr);
    exit(EXIT_USAGE);
  }
  memcpy(*rest, c.buf + c.start, *rest_len);
  int fd = c.fd;
  c.fd = -1;
  atl_rpcc_close(&c);
  return fd;
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
  char *buf = NULL;
  size_t len = 0, cap = 0;
  int link = hand_off(socket_path, &buf, &len);
  cap = len;
  if (link >= 0) {
    in_fd = out_fd = link;
    handed_off = 1;
    told = 1; /* with mcp.attach */
  }
  fprintf(stderr, "atelierctl mcp: serving Atelier's tools on stdio (%s%s)%s\n",
          session ? "session " : "a new session at the first call",
          session ? session : "",
          link >= 0 ? "; atelierd reads and writes them" : "");

  int status = 0, eof = 0;
  /* Lines the link had brought with mcp.attach's answer. */
  int seeded = len > 0;
  size_t scan = 0; /* where a newline may be: before it, none is */
  while (!eof && !gone && !write_failed) {
    struct pollfd pfd = {.fd = in_fd, .events = POLLIN};
    if (seeded) {
      seeded = 0;
      pfd.revents = 0;
      goto lines;
    }
    /* Woken now and then to notice atelierd going away during a call. */
    int n = poll(&pfd, 1, 200);
    if (n < 0 && errno != EINTR)
      break;
    if (n <= 0)
      continue;
    if (cap - len < 65536) {
      size_t ncap = cap >= 65536 ? cap * 2 : 131072;
      char *nb = realloc(buf, ncap);
      if (nb == NULL) {
        fputs("atelierctl mcp: out of memory\n", stderr);
        status = EXIT_USAGE;
        break;
      }
      buf = nb;
      cap = ncap;
    }
    ssize_t got = read(in_fd, buf + len, cap - len);
    /* stdin may be non-blocking: atelierd, handed it, made it so. */
    if (got < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (got <= 0) {
      if (handed_off && out_held) {
        /* atelierd stopped before it was done handing stdio back: what
         * it had not written is lost, and stdin is read from here on. */
        back_to_stdio(&buf, &len, &cap);
        scan = 0;
        seeded = len > 0;
        continue;
      }
      if (handed_off) {
        /* The link ended without atelierd's end-of-input line: atelierd
         * went away. */
        pthread_mutex_lock(&out_mu);
        gone = 1;
        take_back_stdout_locked();
        pthread_mutex_unlock(&out_mu);
        break;
      }
      eof = 1; /* the client closed stdin: finish and exit */
      if (len > 0)
        handle_line(buf, len, 0);
      break;
    }
    scan = len;
    len += (size_t)got;
  lines:;
    size_t start = 0;
    int released = 0;
    for (char *nl; !eof && !released &&
                   (nl = memchr(buf + scan, '\n', len - scan)) != NULL;) {
      size_t end = (size_t)(nl - buf);
      int more = memchr(nl + 1, '\n', len - end - 1) != NULL;
      int control = handed_off ? link_line(buf + start, end - start) : 0;
      if (control == 1)
        eof = 1; /* the client closed stdin */
      else if (control == 3)
        released = 1;
      else if (control == 0)
        handle_line(buf + start, end - start, more);
      start = scan = end + 1;
    }
    if (released) {
      /* stdio is this process's now: on from what atelierd had read. */
      back_to_stdio(&buf, &len, &cap);
      scan = 0;
      seeded = len > 0;
      continue;
    }
    memmove(buf, buf + start, len - start);
    len -= start;
    /* The link's lines are atelierd's, bounded by it (a hand-back's may
     * be longer than any client's line). */
    if (len > MAX_LINE && !handed_off) {
      json_object *e = atl_mcp_parse_error("a line longer than 64 MiB");
      send_msg(e);
      json_object_put(e);
      status = EXIT_USAGE;
      break;
    }
  }
  free(buf);
  /* A hand-back cut short (atelierd gone before it released stdout):
   * the writers waiting for it go on, on stdout. */
  pthread_mutex_lock(&out_mu);
  if (out_held) {
    out_held = 0;
    take_back_stdout_locked();
    pthread_cond_broadcast(&out_cv);
  }
  pthread_mutex_unlock(&out_mu);
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
