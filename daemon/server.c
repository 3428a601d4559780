/* The API and admin servers: unix stream sockets speaking newline-delimited
 * JSON-RPC. The two differ only in their kind (daemon.h): the socket's
 * mode, whether the peer's uid is checked, and which methods they
 * dispatch to, so nothing sent on api.sock can reach an admin method.
 *
 * A connection may pipeline requests; they are dispatched as they arrive
 * and may finish in any order (a call on one session may wait for a commit
 * while a tool.list answers at once), but their responses are written in
 * request order, which is what a client that pipelines expects. Each
 * connection keeps a FIFO of its requests; a response is written when it
 * and every response before it are ready.
 */
#include "atl-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "stats.h"
#include "trace.h"

/* A client that sends faster than it reads gets its reading paused at this
 * many unanswered requests, or this many bytes of answers it has not read
 * yet, so one client cannot eat the daemon's memory; reading resumes at
 * half of each. */
#define ATL_CONN_MAX_PENDING 1024
#define ATL_CONN_MAX_OUTPUT ((size_t)4 << 20)

struct atl_server_s {
  atl_daemon_t *d;
  const atl_server_kind_t *kind;
  uv_pipe_t listener;
  char *path;
  int listening;
  /* libuv uses a closing handle until its close callback: the server is
   * freed only once it is closed (atl_server_close) and its listener is
   * too, whichever comes last. */
  int listener_closed;
  int closed;
  atl_conn_t *conns;
  unsigned n_conns;
  /* Connections whose reading resumed with requests still in their
   * framer: those are dispatched from this idle handle, on the loop's
   * next turn, rather than from inside whatever callback let the
   * connection resume (a store completion, a session's waiters). Each
   * holds a reference to its connection. */
  uv_idle_t drain;
  int drain_closed;
  atl_conn_t *drain_head;
};

struct atl_conn_s {
  atl_conn_t *next, *prev;
  atl_server_t *srv;
  uv_pipe_t pipe;
  atl_framer_t framer;
  atl_rpc_call_t *head, *tail; /* requests in arrival order */
  unsigned pending;
  int closing;
  int paused;
  int feeding;  /* inside atl_framer_feed or atl_framer_drain */
  int backlog;  /* the framer holds frames not dispatched yet */
  int in_drain; /* on srv->drain_head's list */
  atl_conn_t *drain_next;
  int refs; /* the handle, every outstanding write, the drain list */
  /* What the admin socket shows of a client (atl_conn_info_t). */
  uint64_t id;
  int fd;
  long pid, uid;
  int64_t created_ms;
  uint64_t requests, bytes_in, bytes_out;
  char last_method[40];
  int authed; /* admin: the secret was given, or none is needed */
  int auth_failures;
  /* A streaming connection (admin trace) writes lines of its own and
   * reads nothing more; on_stream_close runs when it closes. */
  int streaming;
  int end_after_writes; /* close once what is queued is written */
  void (*on_stream_close)(void *arg);
  void *stream_arg;
  /* A raw link (atl_conn_raw_start): lines go here, not to dispatch. */
  void (*on_raw_line)(void *arg, const char *line, size_t len);
};

/* Connection ids, for the admin socket's clients and client.kill: never
 * reused while the daemon runs. Loop thread only. */
static uint64_t next_conn_id = 1;

typedef struct {
  uv_write_t req;
  atl_conn_t *conn;
  size_t n;
  uv_buf_t bufs[];
} conn_write_t;

static void conn_unref(atl_conn_t *c) {
  if (--c->refs > 0)
    return;
  atl_framer_free(&c->framer);
  free(c);
}

static void conn_closed(uv_handle_t *h) {
  conn_unref(h->data);
}

static void conn_close(atl_conn_t *c) {
  if (c->closing)
    return;
  c->closing = 1;
  atl_server_t *srv = c->srv;
  if (c->prev)
    c->prev->next = c->next;
  else
    srv->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  srv->n_conns--;
  if (c->on_stream_close != NULL) {
    void (*fn)(void *) = c->on_stream_close;
    c->on_stream_close = NULL;
    fn(c->stream_arg);
  }
  /* Requests still running keep their cells; they are freed as they
   * finish, with nobody left to answer. Those that can stop early are
   * told the client left (a render nobody waits for). */
  for (atl_rpc_call_t *r = c->head; r != NULL; r = r->next)
    if (!r->ready && r->on_abandon != NULL) {
      void (*fn)(atl_daemon_t *, atl_rpc_call_t *) = r->on_abandon;
      r->on_abandon = NULL;
      fn(srv->d, r);
    }
  uv_close((uv_handle_t *)&c->pipe, conn_closed);
}

static void conn_resume(atl_conn_t *c);
static size_t conn_queued(atl_conn_t *c);
static void drop_fds(atl_conn_t *c);

static void write_done(uv_write_t *req, int status) {
  conn_write_t *w = (conn_write_t *)req;
  for (size_t i = 0; i < w->n; i++)
    free(w->bufs[i].base);
  atl_conn_t *c = w->conn;
  free(w);
  if (status < 0 && !c->closing)
    conn_close(c);
  if (c->end_after_writes && !c->closing && conn_queued(c) == 0)
    conn_close(c);
  conn_resume(c);
  conn_unref(c);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf);
static void drain_cb(uv_idle_t *h);

static size_t conn_queued(atl_conn_t *c) {
  return uv_stream_get_write_queue_size((uv_stream_t *)&c->pipe);
}

/* Too much is waiting on the client: stop reading its requests. */
static int conn_over(atl_conn_t *c) {
  return c->pending >= ATL_CONN_MAX_PENDING ||
         conn_queued(c) >= ATL_CONN_MAX_OUTPUT;
}

static void conn_pause(atl_conn_t *c) {
  if (c->paused || c->closing)
    return;
  c->paused = 1;
  uv_read_stop((uv_stream_t *)&c->pipe);
}

/* Frames left in the framer are dispatched on the loop's next turn. */
static void conn_schedule_drain(atl_conn_t *c) {
  if (!c->backlog || c->feeding || c->in_drain || c->closing)
    return;
  atl_server_t *srv = c->srv;
  c->in_drain = 1;
  c->refs++;
  c->drain_next = srv->drain_head;
  srv->drain_head = c;
  uv_idle_start(&srv->drain, drain_cb);
}

/* Reading resumes once the client has caught up with half of both limits.
 * Frames that were already read when it paused are dispatched first:
 * without that, the last lines of a pipelined burst waited for bytes the
 * client was never going to send, and their requests were never
 * answered. */
static void conn_resume(atl_conn_t *c) {
  if (!c->paused || c->closing || c->pending >= ATL_CONN_MAX_PENDING / 2 ||
      conn_queued(c) >= ATL_CONN_MAX_OUTPUT / 2)
    return;
  c->paused = 0;
  uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
  conn_schedule_drain(c);
}

/* Writes every ready response at the head of the FIFO in one uv_write. */
static void conn_flush(atl_conn_t *c) {
  size_t n = 0;
  for (atl_rpc_call_t *r = c->head; r && r->ready; r = r->next)
    n++;
  if (n == 0)
    return;
  conn_write_t *w = NULL;
  if (!c->closing)
    w = malloc(sizeof(*w) + n * sizeof(uv_buf_t));
  size_t k = 0;
  while (c->head && c->head->ready) {
    atl_rpc_call_t *r = c->head;
    c->head = r->next;
    if (c->head == NULL)
      c->tail = NULL;
    c->pending--;
    if (w && r->response) {
      w->bufs[k++] = uv_buf_init(r->response, (unsigned)r->response_len);
      c->bytes_out += r->response_len;
    } else
      free(r->response);
    json_object_put(r->id);
    free(r);
  }
  if (w) {
    w->conn = c;
    w->n = k;
    if (k > 0) {
      c->refs++;
      if (uv_write(&w->req, (uv_stream_t *)&c->pipe, w->bufs, (unsigned)k,
                   write_done) != 0) {
        write_done(&w->req, -1);
      }
    } else {
      free(w);
    }
  }
  if (conn_over(c))
    conn_pause(c);
  else
    conn_resume(c);
}

static void finish(atl_rpc_call_t *r, char *line, size_t len) {
  atl_conn_t *c = r->conn;
  if (r->series != NULL)
    atl_hist_add(&r->series->h, atl_stats_us_since(r->t0_ns), r->failed);
  if (r->notification) {
    free(line);
    line = NULL;
    len = 0;
  }
  r->response = line;
  r->response_len = len;
  r->ready = 1;
  conn_flush(c);
  conn_unref(c);
}

void atl_rpc_reply(atl_daemon_t *d, atl_rpc_call_t *c, json_object *result) {
  (void)d;
  size_t len = 0;
  char *line = atl_rpc_result(c->id, result, &len);
  finish(c, line, len);
}

void atl_rpc_reply_text(atl_daemon_t *d, atl_rpc_call_t *c,
                        const char *result_json) {
  (void)d;
  size_t len = 0;
  char *line = atl_rpc_result_text(c->id, result_json, &len);
  finish(c, line, len);
}

void atl_rpc_reply_error(atl_daemon_t *d, atl_rpc_call_t *c, int code,
                         const char *message, json_object *data) {
  (void)d;
  size_t len = 0;
  c->failed = 1;
  char *line = atl_rpc_error(c->id, code, message, data, &len);
  finish(c, line, len);
}

static atl_rpc_call_t *enqueue(atl_conn_t *c) {
  atl_rpc_call_t *r = calloc(1, sizeof(*r));
  if (r == NULL)
    return NULL;
  r->conn = c;
  c->refs++;
  if (c->tail)
    c->tail->next = r;
  else
    c->head = r;
  c->tail = r;
  c->pending++;
  return r;
}

static int on_frame(int kind, const char *line, size_t len, void *user) {
  atl_conn_t *c = user;
  atl_daemon_t *d = c->srv->d;
  if (c->closing)
    return 1;
  if (c->streaming || c->end_after_writes)
    return 0; /* a trace, or a connection being ended, reads nothing more */
  if (c->on_raw_line != NULL) {
    c->on_raw_line(c->stream_arg, kind == ATL_FRAME_OVERSIZE ? NULL : line,
                   kind == ATL_FRAME_OVERSIZE ? 0 : len);
    return c->closing;
  }
  atl_rpc_call_t *r = enqueue(c);
  if (r == NULL) {
    conn_close(c);
    return 1;
  }
  c->requests++;
  if (kind == ATL_FRAME_OVERSIZE) {
    char msg[128];
    snprintf(msg, sizeof(msg),
             "Invalid Request: frame exceeds %u bytes (api.max_frame)",
             d->cfg->max_frame);
    atl_log_kv(ATL_LOG_WARN, "oversize frame discarded", NULL);
    atl_rpc_reply_error(d, r, ATL_RPC_INVALID_REQUEST, msg, NULL);
  } else {
    atl_rpc_request_t req;
    char *err = NULL;
    if (atl_rpc_parse(line, len, &req, &err) != 0) {
      finish(r, err, err ? strlen(err) : 0);
    } else {
      r->id = req.id ? json_object_get(req.id) : NULL;
      r->notification = req.notification;
      snprintf(c->last_method, sizeof(c->last_method), "%s", req.method);
      r->t0_ns = atl_mono_ns();
      if (c->srv->kind->traced && atl_trace_wants(ATL_TR_RPC))
        atl_rpc_trace(d, r, &req, line, len);
      c->srv->kind->dispatch(d, r, &req);
    }
  }
  if (!c->closing && (c->paused || conn_over(c))) {
    /* The rest of what was read stays in the framer until the client
     * catches up (conn_resume). */
    conn_pause(c);
    c->backlog = 1;
    return 1;
  }
  return 0;
}

static void dropped_closed(uv_handle_t *h) {
  free(h);
}

/* Closes the descriptors a client passed that the requests read with
 * them did not take (after each read): a client may not pile them up in
 * the daemon, whether it sends a request with them or not. */
static void drop_fds(atl_conn_t *c) {
  if (!c->srv->kind->accepts_fds || c->closing ||
      uv_pipe_pending_count(&c->pipe) == 0)
    return;
  while (uv_pipe_pending_count(&c->pipe) > 0) {
    uv_pipe_t *p = malloc(sizeof(*p));
    if (p == NULL) {
      conn_close(c); /* closing the handle closes what it holds */
      return;
    }
    uv_pipe_init(c->srv->d->loop, p, 0);
    if (uv_accept((uv_stream_t *)&c->pipe, (uv_stream_t *)p) != 0) {
      uv_close((uv_handle_t *)p, dropped_closed);
      conn_close(c);
      return;
    }
    uv_close((uv_handle_t *)p, dropped_closed);
  }
  /* uv_accept watches the connection again: a paused one stays paused. */
  if (c->paused)
    uv_read_stop((uv_stream_t *)&c->pipe);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  (void)h;
  (void)hint;
  static char slab[65536];
  /* libuv reads into the buffer and we copy it into the framer before the
   * next read, so one static slab serves every connection of the loop. */
  *buf = uv_buf_init(slab, sizeof(slab));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  atl_conn_t *c = s->data;
  if (nread < 0) {
    conn_close(c);
    return;
  }
  if (nread == 0)
    return;
  c->bytes_in += (uint64_t)nread;
  if (c->streaming || c->end_after_writes) {
    drop_fds(c);
    return;
  }
  c->refs++; /* frames may close the connection while we feed it */
  c->feeding = 1;
  c->backlog = 0;
  int rc = atl_framer_feed(&c->framer, buf->base, (size_t)nread, on_frame, c);
  c->feeding = 0;
  drop_fds(c);
  if (rc != 0)
    conn_close(c);
  else if (!c->paused)
    conn_schedule_drain(c); /* caught up while feeding */
  conn_unref(c);
}

static void drain_cb(uv_idle_t *h) {
  atl_server_t *srv = h->data;
  atl_conn_t *list = srv->drain_head;
  srv->drain_head = NULL;
  while (list != NULL) {
    atl_conn_t *c = list;
    list = c->drain_next;
    c->in_drain = 0;
    if (!c->closing && !c->paused && c->backlog) {
      c->feeding = 1;
      c->backlog = 0;
      atl_framer_drain(&c->framer, on_frame, c);
      c->feeding = 0;
      if (!c->paused)
        conn_schedule_drain(c);
    }
    conn_unref(c);
  }
  if (srv->drain_head == NULL)
    uv_idle_stop(h);
}

static void on_connection(uv_stream_t *l, int status) {
  atl_server_t *srv = l->data;
  atl_daemon_t *d = srv->d;
  if (status < 0)
    return;
  atl_conn_t *c = calloc(1, sizeof(*c));
  if (c == NULL)
    return;
  uv_pipe_init(d->loop, &c->pipe, srv->kind->accepts_fds);
  c->pipe.data = c;
  c->srv = srv;
  c->refs = 1;
  atl_framer_init(&c->framer, d->cfg->max_frame);
  if (uv_accept(l, (uv_stream_t *)&c->pipe) != 0) {
    uv_close((uv_handle_t *)&c->pipe, conn_closed);
    return;
  }
  c->id = next_conn_id++;
  c->created_ms = atl_now_ms();
  c->authed = !srv->kind->needs_auth || d->admin_secret[0] == '\0';
  c->fd = -1;
  c->pid = c->uid = -1;
  uv_os_fd_t fd;
  if (uv_fileno((uv_handle_t *)&c->pipe, &fd) == 0) {
    c->fd = fd;
    struct ucred cred;
    socklen_t clen = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0) {
      c->pid = cred.pid;
      c->uid = cred.uid;
    }
  }
  /* The admin socket's mode already keeps other users out; the uid check
   * holds if the socket's directory or mode is ever loosened by hand. */
  if (srv->kind->check_peer && c->uid != (long)geteuid() && c->uid != 0) {
    char pid[24], uid[24];
    snprintf(pid, sizeof(pid), "%ld", c->pid);
    snprintf(uid, sizeof(uid), "%ld", c->uid);
    atl_log_kv(ATL_LOG_WARN,
               "admin connection refused: the peer's uid is neither the "
               "daemon's nor root",
               "pid", pid, "uid", uid, NULL);
    uv_close((uv_handle_t *)&c->pipe, conn_closed);
    return;
  }
  c->next = srv->conns;
  if (srv->conns)
    srv->conns->prev = c;
  srv->conns = c;
  srv->n_conns++;
  if (srv->n_conns > d->cfg->max_clients || d->shutting_down) {
    atl_log_kv(ATL_LOG_WARN,
               d->shutting_down ? "connection refused: shutting down"
                                : "connection refused: api.max_clients reached",
               "socket", srv->kind->name, NULL);
    conn_close(c);
    return;
  }
  uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
}

/* 1 if something accepts connections on the unix socket at path. */
static int socket_is_live(const char *path) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof(a.sun_path))
    return 0;
  strcpy(a.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return 0;
  int live = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
  close(fd);
  return live;
}

static void server_free(atl_server_t *srv) {
  free(srv->path);
  free(srv);
}

static void listener_closed(uv_handle_t *h) {
  atl_server_t *srv = h->data;
  srv->listener_closed = 1;
  if (srv->closed && srv->drain_closed)
    server_free(srv);
}

static void drain_closed(uv_handle_t *h) {
  atl_server_t *srv = h->data;
  srv->drain_closed = 1;
  if (srv->closed && srv->listener_closed)
    server_free(srv);
}

int atl_server_start(atl_daemon_t *d, const char *path,
                     const atl_server_kind_t *kind, atl_server_t **out) {
  atl_server_t *srv = calloc(1, sizeof(*srv));
  if (srv == NULL)
    return ATL_ENOMEM;
  srv->d = d;
  srv->kind = kind;
  srv->path = strdup(path);
  srv->drain_closed = 1; /* until it is started, below */
  uv_pipe_init(d->loop, &srv->listener, 0);
  srv->listener.data = srv;
  /* A socket file left by a daemon that died is removed, but one that a
   * live daemon answers on is not: two daemons with different data
   * directories must not steal each other's socket. */
  if (socket_is_live(path)) {
    atl_log_kv(ATL_LOG_ERROR,
               "another daemon is listening on the socket; stop it or use "
               "another --socket-dir",
               "path", path, NULL);
    srv->closed = 1;
    uv_close((uv_handle_t *)&srv->listener, listener_closed);
    return ATL_EBUSY;
  }
  unlink(path);
  mode_t old = umask(kind->umask);
  int rc = uv_pipe_bind(&srv->listener, path);
  umask(old);
  if (rc == 0)
    rc = uv_listen((uv_stream_t *)&srv->listener, 511, on_connection);
  if (rc != 0) {
    atl_log_kv(ATL_LOG_ERROR, "cannot listen on the socket", "path", path,
               "error", uv_strerror(rc), NULL);
    srv->closed = 1;
    uv_close((uv_handle_t *)&srv->listener, listener_closed);
    return ATL_EIO;
  }
  srv->listening = 1;
  uv_idle_init(d->loop, &srv->drain);
  srv->drain.data = srv;
  srv->drain_closed = 0;
  *out = srv;
  return 0;
}

void atl_server_stop_accepting(atl_server_t *srv) {
  if (!srv->listening)
    return;
  srv->listening = 0;
  uv_close((uv_handle_t *)&srv->listener, listener_closed);
  unlink(srv->path);
}

void atl_server_close(atl_server_t *srv) {
  atl_server_stop_accepting(srv);
  while (srv->conns)
    conn_close(srv->conns);
  while (srv->drain_head != NULL) {
    atl_conn_t *c = srv->drain_head;
    srv->drain_head = c->drain_next;
    c->in_drain = 0;
    conn_unref(c);
  }
  int drain_open = !srv->drain_closed;
  srv->closed = 1;
  if (drain_open)
    uv_close((uv_handle_t *)&srv->drain, drain_closed);
  else if (srv->listener_closed)
    server_free(srv);
}

unsigned atl_server_clients(const atl_server_t *srv) {
  return srv->n_conns;
}

void atl_server_each(const atl_server_t *srv,
                     void (*fn)(const atl_conn_info_t *info, void *user),
                     void *user) {
  for (const atl_conn_t *c = srv->conns; c != NULL; c = c->next) {
    atl_conn_info_t info = {.id = c->id,
                            .fd = c->fd,
                            .pid = c->pid,
                            .uid = c->uid,
                            .created_ms = c->created_ms,
                            .requests = c->requests,
                            .pending = c->pending,
                            .bytes_in = c->bytes_in,
                            .bytes_out = c->bytes_out,
                            .last_method = c->last_method,
                            .streaming = c->streaming,
                            .kind = srv->kind->name};
    fn(&info, user);
  }
}

int atl_server_kill(atl_server_t *srv, uint64_t id) {
  for (atl_conn_t *c = srv->conns; c != NULL; c = c->next) {
    if (c->id == id) {
      conn_close(c);
      return 0;
    }
  }
  return ATL_ENOENT;
}

void atl_rpc_call_measure(atl_rpc_call_t *c, struct atl_series_s *s) {
  c->series = s;
}

atl_conn_t *atl_rpc_conn(const atl_rpc_call_t *c) {
  return c->conn;
}

uint64_t atl_conn_id(const atl_conn_t *c) {
  return c->id;
}

int atl_conn_authed(const atl_conn_t *c) {
  return c->authed;
}

void atl_conn_set_authed(atl_conn_t *c) {
  c->authed = 1;
}

int atl_conn_auth_failed(atl_conn_t *c) {
  return ++c->auth_failures;
}

void atl_conn_peer(const atl_conn_t *c, long *pid, long *uid) {
  *pid = c->pid;
  *uid = c->uid;
}

unsigned atl_conn_pending(const atl_conn_t *c) {
  return c->pending;
}

void atl_conn_stream_start(atl_conn_t *c, void (*on_close)(void *arg),
                           void *arg) {
  c->streaming = 1;
  c->on_stream_close = on_close;
  c->stream_arg = arg;
}

int atl_conn_stream_write(atl_conn_t *c, char *buf, size_t len, size_t cap) {
  if (c->closing || conn_queued(c) + len > cap) {
    free(buf);
    return c->closing ? ATL_EIO : ATL_EAGAIN;
  }
  conn_write_t *w = malloc(sizeof(*w) + sizeof(uv_buf_t));
  if (w == NULL) {
    free(buf);
    return ATL_ENOMEM;
  }
  w->conn = c;
  w->n = 1;
  w->bufs[0] = uv_buf_init(buf, (unsigned)len);
  c->refs++;
  if (uv_write(&w->req, (uv_stream_t *)&c->pipe, w->bufs, 1, write_done) != 0) {
    /* Not closed here: the caller is in the middle of its subscribers,
     * and closing would free one. The read side sees the same broken
     * pipe and closes the connection from its own callback. */
    c->refs--;
    free(buf);
    free(w);
    return ATL_EIO;
  }
  c->bytes_out += len;
  return 0;
}

void atl_conn_raw_start(atl_conn_t *c,
                        void (*on_line)(void *arg, const char *line,
                                        size_t len),
                        void (*on_close)(void *arg), void *arg) {
  c->on_raw_line = on_line;
  /* Its lines are answers to the client's own requests, which may be as
   * large as what atelierctl mcp reads (64 MiB). */
  if (c->framer.max_frame < ((size_t)65 << 20))
    c->framer.max_frame = (size_t)65 << 20;
  c->on_stream_close = on_close;
  c->stream_arg = arg;
}

int atl_conn_take_pipe(atl_conn_t *c, uv_pipe_t *p) {
  if (!c->srv->kind->accepts_fds || uv_pipe_pending_count(&c->pipe) == 0)
    return UV_ENOENT;
  int rc = uv_accept((uv_stream_t *)&c->pipe, (uv_stream_t *)p);
  if (c->paused) /* uv_accept watches the connection again */
    uv_read_stop((uv_stream_t *)&c->pipe);
  return rc;
}

size_t atl_conn_queued(const atl_conn_t *c) {
  return uv_stream_get_write_queue_size((const uv_stream_t *)&c->pipe);
}

int atl_conn_closing(const atl_conn_t *c) {
  return c->closing;
}

void atl_conn_close(atl_conn_t *c) {
  conn_close(c);
}

void atl_conn_end(atl_conn_t *c) {
  if (c->closing)
    return;
  /* Written already (libuv writes at once when it can): nothing to wait
   * for. */
  if (conn_queued(c) == 0)
    conn_close(c);
  else
    c->end_after_writes = 1;
}
