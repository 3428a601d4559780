/* atelierd's side of `atelierctl mcp`: the client's stdin and stdout on
 * the loop, quick calls answered here, the rest passed to atelierctl.
 * See mcp_front.h for the protocol between the two.
 *
 * Why: over stdio each call used to cross two processes each way (the
 * client, atelierctl, atelierd), twice the wake-ups of a call on the API
 * socket, and on two cores those were a third of MCP's calls/s
 * (bench/README.md, mcp). A quick call now crosses one, as on the API
 * socket. What needs atelierctl's threads (a render's progress and
 * cancel, initialize, tools/list, the session's making) still goes there:
 * only calls that need nothing but the tool are run here. */
#include "atl-build.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/evp.h>

#include "log.h"
#include "mcp.h"
#include "mcp_front.h"
#include "util.h"

/* A client line longer than this is refused, as atelierctl refuses one. */
#define MAX_LINE ((size_t)64 << 20)
/* Reading the client pauses while this much waits for atelierctl or for
 * the client itself to read: a client that floods, or does not read its
 * answers, costs atelierd no more memory than this. */
#define MAX_QUEUED ((size_t)16 << 20)
/* Quick calls run here at once, at most (as many as atelierctl runs):
 * past them, calls go to atelierctl, which refuses past its own. Reading
 * does not pause for them, so that a ping or a cancel is still read
 * while the session's render holds them up. */
#define MAX_FAST 32

typedef struct front_s front_t;

/* A quick call run here. */
typedef struct fast_s {
  struct fast_s *next;
  front_t *f;
  json_object *msg;      /* the request; call borrows from it */
  atl_mcp_direct_t call; /* its parts */
  json_object *args;     /* detached from msg, for the call to take */
  char *line;            /* the line as it came: sent the whole way */
  size_t len;            /* if the call could not run here */
  char sid[ATL_SESSION_ID_LEN + 1];
  int cancelled; /* notifications/cancelled came: no answer is due */
} fast_t;

struct front_s {
  front_t *next_front; /* fronts, the list of them all */
  atl_daemon_t *d;
  atl_conn_t *back; /* atelierctl's link; NULL once closed */
  uv_pipe_t in, out;
  uv_timer_t flow; /* checks whether a paused stdin may go on */
  int handles;     /* handles not yet closed */
  int reading, in_eof, eof_sent, out_failed, ending, closing_out;
  unsigned writes; /* on stdout, not yet done */
  size_t lingered; /* stdout's queue at the last look (linger_cb) */
  /* atelierd stopping: stdio handed back (atl_mcp_front_shutdown). */
  int detaching, detach_sent, acked, released;
  int link_version; /* mcp.attach's "link": 1 knows the hand-back */
  char *buf;        /* stdin, not yet a whole line */
  size_t len, cap;
  /* atelierctl's state lines. */
  char session[ATL_SESSION_ID_LEN + 1];
  char base[ATL_MCP_VIA_MAX + 1];
  char client[65];
  fast_t *fast; /* in flight */
  unsigned n_fast;
};

static void front_maybe_end(front_t *f);
static void forward(front_t *f, const char *line, size_t len);
static void send_eof(front_t *f);
static void send_detach(front_t *f);
static void send_released(front_t *f);
static void out_close(front_t *f);

/* Every front attached and not yet freed (loop thread). */
static front_t *fronts;

static void handle_closed(uv_handle_t *h) {
  front_t *f = h->data;
  if (--f->handles > 0)
    return;
  for (front_t **p = &fronts; *p; p = &(*p)->next_front)
    if (*p == f) {
      *p = f->next_front;
      break;
    }
  free(f->buf);
  free(f);
}

/* ---- stdout ---- */

typedef struct {
  uv_write_t req;
  front_t *f;
  uv_buf_t buf;
} out_write_t;

static void flow_check(front_t *f);

static void out_written(uv_write_t *req, int status) {
  out_write_t *w = (out_write_t *)req;
  front_t *f = w->f;
  free(w->buf.base);
  free(w);
  f->writes--;
  if (f->writes == 0)
    send_released(f);
  if (f->ending) {
    if (f->writes == 0 && !f->closing_out) {
      uv_close((uv_handle_t *)&f->flow, handle_closed);
      out_close(f);
    }
    return;
  }
  if (status < 0 && status != UV_ECANCELED && !f->out_failed) {
    /* The client stopped reading (it exited): atelierctl, seeing its
     * link close, gives up too. */
    f->out_failed = 1;
    atl_log_kv(ATL_LOG_INFO, "MCP client's stdout closed", "error",
               uv_strerror(status), NULL);
    if (f->back != NULL)
      atl_conn_close(f->back);
  }
  flow_check(f);
}

/* Writes one line (text, len bytes, no newline; copied) on stdout. */
static void out_line(front_t *f, const char *text, size_t len) {
  if (f->out_failed || f->ending || f->closing_out)
    return;
  out_write_t *w = malloc(sizeof(*w));
  char *buf = malloc(len + 1);
  if (w == NULL || buf == NULL) {
    free(w);
    free(buf);
    return;
  }
  memcpy(buf, text, len);
  buf[len] = '\n';
  w->f = f;
  w->buf = uv_buf_init(buf, (unsigned)(len + 1));
  if (uv_write(&w->req, (uv_stream_t *)&f->out, &w->buf, 1, out_written) != 0) {
    free(buf);
    free(w);
    return;
  }
  f->writes++;
}

static void out_msg(front_t *f, json_object *msg) {
  size_t len = 0;
  const char *s = json_object_to_json_string_length(
      msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
  out_line(f, s, len);
}

/* ---- flow: stdin pauses while too much waits to be written ---- */

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static size_t queued(front_t *f) {
  size_t n = uv_stream_get_write_queue_size((uv_stream_t *)&f->out);
  if (f->back != NULL)
    n += atl_conn_queued(f->back);
  return n;
}

static void flow_cb(uv_timer_t *t) {
  flow_check(t->data);
}

static void flow_check(front_t *f) {
  if (f->in_eof || f->ending || f->back == NULL || f->detaching)
    return;
  int over = queued(f) > MAX_QUEUED;
  if (over && f->reading) {
    uv_read_stop((uv_stream_t *)&f->in);
    f->reading = 0;
    /* atelierctl's link says nothing when it drains: look now and then. */
    uv_timer_start(&f->flow, flow_cb, 20, 20);
  } else if (!over && !f->reading) {
    uv_timer_stop(&f->flow);
    if (uv_read_start((uv_stream_t *)&f->in, on_alloc, on_read) == 0)
      f->reading = 1;
  }
}

/* ---- quick calls ---- */

static void fast_free(fast_t *fc) {
  front_t *f = fc->f;
  for (fast_t **p = &f->fast; *p; p = &(*p)->next)
    if (*p == fc) {
      *p = fc->next;
      break;
    }
  json_object_put(fc->msg);
  json_object_put(fc->args);
  free(fc->line);
  free(fc);
  f->n_fast--;
  send_eof(f);
  send_detach(f);
  front_maybe_end(f);
}

/* A quick call that could not run here goes the whole way, which says
 * why as it says it for any call; with atelierctl gone, it is answered
 * here. */
static void retry(fast_t *fc) {
  front_t *f = fc->f;
  if (f->back != NULL) {
    forward(f, fc->line, fc->len);
    return;
  }
  json_object *e = atl_mcp_error(fc->call.id, -32603, NULL,
                                 "Internal error: the call could not run "
                                 "(its session is gone, or atelierd is "
                                 "stopping), and atelierctl mcp has gone");
  out_msg(f, e);
  json_object_put(e);
}

static void fast_done(atl_daemon_t *d, int rpc_status, const char *envelope,
                      void *user) {
  (void)d;
  fast_t *fc = user;
  front_t *f = fc->f;
  if (rpc_status != 0) {
    /* Nothing ran (the session went, its queue was full, the commit
     * failed): atelierctl's way says so as it says it for any call. */
    if (!fc->cancelled)
      retry(fc);
  } else if (!fc->cancelled) {
    /* atelierd's own text: as deep as a tool's result may be. */
    json_tokener *tok = json_tokener_new_ex(1000);
    json_object *env =
        tok ? json_tokener_parse_ex(tok, envelope, (int)strlen(envelope))
            : NULL;
    json_tokener_free(tok);
    json_object *answer =
        env != NULL ? atl_mcp_direct_answer(&fc->call, env, fc->sid)
                    : atl_mcp_error(fc->call.id, -32603, NULL,
                                    "Internal error: the call ran, but its "
                                    "result could not be read back (out of "
                                    "memory)");
    out_msg(f, answer);
    json_object_put(answer);
    json_object_put(env);
  }
  fast_free(fc);
}

static void fast_got(atl_daemon_t *d, atl_session_t *s, int status,
                     void *user) {
  (void)status;
  fast_t *fc = user;
  front_t *f = fc->f;
  if (s == NULL || d->shutting_down || fc->cancelled) {
    if (!fc->cancelled)
      retry(fc);
    fast_free(fc);
    return;
  }
  char via[ATL_MCP_VIA_MAX + 1];
  atl_mcp_via(f->base, fc->call.client ? fc->call.client : f->client, via);
  json_object *args = fc->args ? fc->args : json_object_new_object();
  fc->args = NULL;
  atl_toolcall_start(d, s, fc->call.name, NULL, via, args, 1, fast_done, fc);
}

/* Runs msg here when it is a quick tool's call in the client's session;
 * 1 if so (msg taken), else 0. */
static int try_fast(front_t *f, json_object *msg, const char *line,
                    size_t len) {
  atl_mcp_direct_t call;
  if (f->session[0] == '\0' || f->base[0] == '\0' || f->n_fast >= MAX_FAST ||
      !atl_mcp_direct(msg, &call))
    return 0;
  const atl_tool_entry_t *t = atl_registry_find(&f->d->registry, call.name);
  unsigned flags = t ? t->tool.flags : 0;
  if (t == NULL || !(flags & ATL_TOOL_FAST) ||
      (flags & (ATL_TOOL_LONG_RUNNING | ATL_TOOL_NOT_FOR_MODEL)))
    return 0;
  fast_t *fc = calloc(1, sizeof(*fc));
  char *copy = malloc(len);
  if (fc == NULL || copy == NULL) {
    free(fc);
    free(copy);
    return 0;
  }
  memcpy(copy, line, len);
  fc->f = f;
  fc->msg = msg;
  fc->call = call;
  fc->line = copy;
  fc->len = len;
  snprintf(fc->sid, sizeof(fc->sid), "%s", f->session);
  if (call.args != NULL) {
    /* Detached, so that the call holds the only reference (it fills in
     * defaults in place); call.args is not used again. */
    json_object *params = json_object_object_get(msg, "params");
    fc->args = json_object_get(call.args);
    json_object_object_del(params, "arguments");
    fc->call.args = NULL;
  }
  fc->next = f->fast;
  f->fast = fc;
  f->n_fast++;
  atl_session_get(f->d, fc->sid, fast_got, fc);
  return 1;
}

/* notifications/cancelled for a quick call here: its answer is not sent. */
static void cancel_fast(front_t *f, json_object *id) {
  const char *key = json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN);
  for (fast_t *fc = f->fast; fc; fc = fc->next) {
    const char *k =
        json_object_to_json_string_ext(fc->call.id, JSON_C_TO_STRING_PLAIN);
    if (strcmp(k, key) == 0)
      fc->cancelled = 1;
  }
}

/* ---- the client's lines ---- */

/* Sends a client's line to atelierctl. */
static void forward(front_t *f, const char *line, size_t len) {
  if (f->back == NULL)
    return; /* atelierctl has gone: so has its client, most likely */
  /* A client's line that begins as the link's own lines do is sent with
   * a space before it: the same JSON, not one of them. */
  static const char control[] = "{\"dev.atelier/";
  int pad = len >= sizeof(control) - 1 &&
            memcmp(line, control, sizeof(control) - 1) == 0;
  char *buf = malloc(len + 2);
  if (buf == NULL)
    return;
  if (pad)
    buf[0] = ' ';
  memcpy(buf + pad, line, len);
  buf[len + (size_t)pad] = '\n';
  atl_conn_stream_write(f->back, buf, len + (size_t)pad + 1, SIZE_MAX);
}

static void client_line(front_t *f, const char *line, size_t len) {
  size_t i = 0;
  while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
    i++;
  if (i == len)
    return;
  json_object *msg = NULL;
  /* Only what parses whole is looked at here; atelierctl answers the
   * rest as it always has. A line may end with CR (a client on CRLF). */
  size_t body = len;
  while (body > 0 && (line[body - 1] == '\r' || line[body - 1] == ' ' ||
                      line[body - 1] == '\t'))
    body--;
  /* As the API socket reads a request (daemon/jsonrpc.c): strict, UTF-8,
   * no deeper, no longer. What fails goes to atelierctl, which answers
   * it, or sends it on to be refused, as it always has. */
  json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
  if (tok != NULL && body <= f->d->cfg->max_frame) {
    json_tokener_set_flags(tok,
                           JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    msg = json_tokener_parse_ex(tok, line, (int)body);
    if (msg != NULL && (json_tokener_get_error(tok) != json_tokener_success ||
                        json_tokener_get_parse_end(tok) != body)) {
      json_object_put(msg);
      msg = NULL;
    }
  }
  json_tokener_free(tok);
  if (msg != NULL) {
    json_object *cancelled = atl_mcp_cancelled_id(msg);
    if (cancelled != NULL)
      cancel_fast(f, cancelled);
    if (try_fast(f, msg, line, len))
      return;
    json_object_put(msg);
  }
  forward(f, line, len);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  (void)hint;
  front_t *f = h->data;
  if (f->cap - f->len < 65536) {
    /* Doubling, but not far past the longest line there may be. */
    size_t ncap = f->cap ? f->cap * 2 : 131072;
    if (ncap > MAX_LINE + 131072)
      ncap = MAX_LINE + 131072;
    char *nb = realloc(f->buf, ncap);
    if (nb == NULL) {
      *buf = uv_buf_init(NULL, 0); /* libuv reports UV_ENOBUFS */
      return;
    }
    f->buf = nb;
    f->cap = ncap;
  }
  *buf = uv_buf_init(f->buf + f->len, (unsigned)(f->cap - f->len));
}

/* stdin has ended (or failed, or sent a line too long): atelierctl
 * answers what it has in flight and leaves, which ends the link. */
static void stop_reading(front_t *f) {
  if (f->reading)
    uv_read_stop((uv_stream_t *)&f->in);
  f->reading = 0;
  uv_timer_stop(&f->flow);
}

static void client_eof(front_t *f) {
  if (f->in_eof)
    return;
  f->in_eof = 1;
  stop_reading(f);
  send_eof(f);
}

/* Tells atelierctl that stdin has ended, once no quick call here may
 * still need to go its way (retry): it reads nothing after this line. */
static void send_eof(front_t *f) {
  if (!f->in_eof || f->eof_sent || f->fast != NULL || f->back == NULL ||
      f->detaching)
    return;
  f->eof_sent = 1;
  char *eof = strdup(ATL_MCP_LINK_EOF "\n");
  if (eof != NULL)
    atl_conn_stream_write(f->back, eof, strlen(eof), SIZE_MAX);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  (void)buf;
  front_t *f = s->data;
  if (nread < 0) {
    if (f->len > 0)
      client_line(f, f->buf, f->len); /* a last line without its newline */
    f->len = 0;
    client_eof(f);
    return;
  }
  size_t start = 0, scan = f->len;
  f->len += (size_t)nread;
  for (char *nl; !f->in_eof &&
                 (nl = memchr(f->buf + scan, '\n', f->len - scan)) != NULL;) {
    size_t end = (size_t)(nl - f->buf);
    client_line(f, f->buf + start, end - start);
    start = scan = end + 1;
  }
  memmove(f->buf, f->buf + start, f->len - start);
  f->len -= start;
  if (f->len > MAX_LINE) {
    json_object *e = atl_mcp_parse_error("a line longer than 64 MiB");
    out_msg(f, e);
    json_object_put(e);
    f->len = 0;
    client_eof(f);
    return;
  }
  flow_check(f);
}

/* ---- atelierctl's lines ---- */

/* {"session", "via", "client"}: each member given replaces what was. */
static void take_state(front_t *f, json_object *st) {
  json_object *v = NULL;
  if (json_object_is_type(st, json_type_object)) {
    if (json_object_object_get_ex(st, "session", &v) &&
        json_object_is_type(v, json_type_string) &&
        (json_object_get_string_len(v) == 0 ||
         atl_is_session_id(json_object_get_string(v))))
      snprintf(f->session, sizeof(f->session), "%s", json_object_get_string(v));
    if (json_object_object_get_ex(st, "via", &v) &&
        json_object_is_type(v, json_type_string))
      atl_mcp_via(json_object_get_string(v), NULL, f->base);
    if (json_object_object_get_ex(st, "client", &v) &&
        json_object_is_type(v, json_type_string))
      snprintf(f->client, sizeof(f->client), "%s", json_object_get_string(v));
  }
}

static void back_line(void *arg, const char *line, size_t len) {
  front_t *f = arg;
  size_t dl = strlen(ATL_MCP_LINK_DETACHED);
  if (f->detach_sent && len == dl &&
      memcmp(line, ATL_MCP_LINK_DETACHED, dl) == 0) {
    /* atelierctl writes nothing more: what came before this line is
     * queued on stdout, and once it is written stdout is its. */
    f->acked = 1;
    send_released(f);
    return;
  }
  if (line == NULL) {
    /* atelierctl sends none (it answers an error instead). */
    atl_log_kv(ATL_LOG_WARN,
               "MCP link: a line from atelierctl over 65 MiB dropped", NULL);
    return;
  }
  size_t sl = strlen(ATL_MCP_LINK_STATE);
  if (len >= sl && memcmp(line, ATL_MCP_LINK_STATE, sl) == 0) {
    /* Terminated for the parser: the framer's line is not. */
    char *copy = strndup(line, len);
    json_object *o = copy ? json_tokener_parse(copy) : NULL, *st = NULL;
    if (json_object_object_get_ex(o, "dev.atelier/state", &st))
      take_state(f, st);
    json_object_put(o);
    free(copy);
    return;
  }
  out_line(f, line, len);
}

static void back_closed(void *arg) {
  front_t *f = arg;
  f->back = NULL;
  client_eof(f); /* nobody left to pass the client's lines to */
  front_maybe_end(f);
}

static void out_close(front_t *f) {
  if (f->closing_out)
    return;
  f->closing_out = 1;
  uv_close((uv_handle_t *)&f->out, handle_closed);
}

/* While stdout drains after the end: a client that reads nothing for 5 s
 * loses the rest; one that reads slowly gets it all. */
static void linger_cb(uv_timer_t *t) {
  front_t *f = t->data;
  size_t now = uv_stream_get_write_queue_size((uv_stream_t *)&f->out);
  if (now < f->lingered) {
    f->lingered = now;
    return; /* it read some: another 5 s */
  }
  uv_close((uv_handle_t *)&f->flow, handle_closed);
  out_close(f);
}

/* The client's pipes close once atelierctl has gone and the quick calls
 * here are answered. */
static void front_maybe_end(front_t *f) {
  if (f->ending || f->back != NULL || f->fast != NULL)
    return;
  f->ending = 1;
  uv_close((uv_handle_t *)&f->in, handle_closed);
  /* stdout closes once the answers queued on it are written: closing at
   * once would drop them. Not shut down: that would end the socket for
   * atelierctl too, which may still have answers to write on it (when
   * atelierd stops). */
  /* A hand-back cut short (atelierd's shutdown timed out): atelierctl
   * writes stdout from now on, so nothing more may be written here. */
  if (f->writes == 0 || f->out_failed || f->closing_out || f->detaching) {
    uv_close((uv_handle_t *)&f->flow, handle_closed);
    out_close(f);
  } else {
    f->lingered = uv_stream_get_write_queue_size((uv_stream_t *)&f->out);
    uv_timer_stop(&f->flow);
    uv_timer_start(&f->flow, linger_cb, 5000, 5000);
  }
}

/* ---- atelierd stopping: stdio handed back ---- */

static void send_detach(front_t *f) {
  if (!f->detaching || f->detach_sent || f->fast != NULL || f->back == NULL)
    return;
  f->detach_sent = 1;
  /* What was read of stdin and not used (a line not yet whole) goes back
   * with it: atelierctl reads on from there. */
  size_t b64 = 4 * ((f->len + 2) / 3);
  size_t pre = strlen(ATL_MCP_LINK_DETACH);
  char *line = malloc(pre + b64 + 4);
  if (line == NULL) {
    atl_conn_close(f->back); /* atelierctl then exits, as atelierd did */
    return;
  }
  memcpy(line, ATL_MCP_LINK_DETACH, pre);
  EVP_EncodeBlock((unsigned char *)line + pre,
                  (const unsigned char *)(f->buf ? f->buf : ""), (int)f->len);
  memcpy(line + pre + b64, "\"}\n", 3);
  f->len = 0;
  atl_conn_stream_write(f->back, line, pre + b64 + 3, SIZE_MAX);
}

/* Tells atelierctl stdout is its, once atelierd has written all it had. */
static void send_released(front_t *f) {
  if (!f->acked || f->released || f->writes > 0 || f->back == NULL)
    return;
  f->released = 1;
  uv_timer_stop(&f->flow);
  out_close(f);
  char *line = strdup(ATL_MCP_LINK_RELEASED "\n");
  if (line != NULL)
    atl_conn_stream_write(f->back, line, strlen(line), SIZE_MAX);
}

void atl_mcp_front_shutdown(atl_daemon_t *d) {
  for (front_t *f = fronts; f; f = f->next_front) {
    /* An atelierctl that does not know the hand-back (another version)
     * sees its link close, as when atelierd dies. */
    if (f->d != d || f->in_eof || f->ending || f->detaching ||
        f->link_version < 1)
      continue;
    /* Nothing more is read: the rest of stdin is atelierctl's. */
    f->detaching = 1;
    stop_reading(f);
    send_detach(f);
  }
}

int atl_mcp_front_busy(atl_daemon_t *d) {
  for (front_t *f = fronts; f; f = f->next_front)
    if (f->d == d && f->detaching && !f->released && f->back != NULL)
      return 1;
  return 0;
}

/* ---- mcp.attach ---- */

/* 1 when p's descriptor is a pipe or a socket: a terminal or a file is
 * read by atelierctl itself. */
static int is_stream(uv_pipe_t *p) {
  uv_os_fd_t fd;
  struct stat st;
  return uv_fileno((uv_handle_t *)p, &fd) == 0 && fstat(fd, &st) == 0 &&
         (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

void atl_mcp_front_attach(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {"state", "link", NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  atl_conn_t *conn = atl_rpc_conn(c);
  if (atl_conn_pending(conn) > 1) {
    /* Its answer would wait behind the others', and the client's lines
     * would reach atelierctl before it. */
    atl_rpc_invalid(d, c,
                    "mcp.attach must be the only request in flight on its "
                    "connection");
    return;
  }
  front_t *f = calloc(1, sizeof(*f));
  if (f == NULL) {
    atl_rpc_reply_error(d, c, ATL_RPC_INTERNAL_ERROR, "out of memory", NULL);
    return;
  }
  f->d = d;
  uv_pipe_init(d->loop, &f->in, 0);
  uv_pipe_init(d->loop, &f->out, 0);
  uv_timer_init(d->loop, &f->flow);
  f->in.data = f->out.data = f->flow.data = f;
  f->handles = 3;
  int rc_in = atl_conn_take_pipe(conn, &f->in);
  int rc_out = rc_in == 0 ? atl_conn_take_pipe(conn, &f->out) : rc_in;
  /* A descriptor passed along is as the client made it: blocking, which
   * would stall the whole loop on a client slow to read. Made
   * non-blocking last, once nothing can fail: atelierctl, refused, reads
   * and writes them itself, as they were. */
  if (rc_in != 0 || rc_out != 0 || !is_stream(&f->in) || !is_stream(&f->out) ||
      uv_read_start((uv_stream_t *)&f->in, on_alloc, on_read) != 0 ||
      uv_stream_set_blocking((uv_stream_t *)&f->in, 0) != 0 ||
      uv_stream_set_blocking((uv_stream_t *)&f->out, 0) != 0) {
    atl_rpc_invalid(d, c,
                    "mcp.attach needs two descriptors passed with it "
                    "(SCM_RIGHTS): the MCP client's stdin, then its stdout, "
                    "each a pipe or a socket");
    f->ending = 1;
    uv_close((uv_handle_t *)&f->flow, handle_closed);
    uv_close((uv_handle_t *)&f->in, handle_closed);
    uv_close((uv_handle_t *)&f->out, handle_closed);
    return;
  }
  f->reading = 1;
  f->back = conn;
  f->next_front = fronts;
  fronts = f;
  /* What atelierctl knows already (--session): the first calls need not
   * wait for its first state line. */
  json_object *st = NULL, *lv = NULL;
  if (p != NULL && json_object_object_get_ex(p, "state", &st))
    take_state(f, st);
  if (p != NULL && json_object_object_get_ex(p, "link", &lv))
    f->link_version = json_object_get_int(lv);
  /* A link before the answer goes: were the connection to close as the
   * answer is written, back_closed would still end the front. */
  atl_conn_raw_start(conn, back_line, back_closed, f);
  json_object *res = json_object_new_object();
  json_object_object_add(res, "attached", json_object_new_boolean(1));
  atl_rpc_reply(d, c, res);
  json_object_put(res);
  atl_log_kv(ATL_LOG_DEBUG, "MCP client attached (stdio)", NULL);
}
