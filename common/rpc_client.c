/* A blocking JSON-RPC 2.0 client for atelierd's API socket (rpc_client.h). */
#include "atl-build.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "rpc_client.h"

/* json-c's default nesting limit (32) is lower than what a session document
 * may legitimately reach; the daemon bounds documents itself, so the client
 * only needs a generous guard against runaway recursion. */
#define CTL_JSON_DEPTH 1000

/* A response larger than this is treated as a protocol error rather than
 * grown into, so that a confused peer cannot make us allocate without
 * limit. Images of tens of MB fit comfortably. */
#define CTL_MAX_RESPONSE ((size_t)1 << 30)

static void set_errmsg(atl_rpcc_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void set_errmsg(atl_rpcc_t *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->errmsg, sizeof(c->errmsg), fmt, ap);
  va_end(ap);
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int atl_rpcc_connect(atl_rpcc_t *c, const char *path) {
  int watch = c->watch_fd;
  memset(c, 0, sizeof(*c));
  c->fd = -1;
  c->watch_fd = watch;
  c->next_id = 1;

  struct sockaddr_un addr;
  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof(addr.sun_path)) {
    errno = ENAMETOOLONG;
    set_errmsg(c, "cannot connect to %s: the path is longer than %zu bytes",
               path, sizeof(addr.sun_path) - 1);
    return -1;
  }
  strcpy(addr.sun_path, path);

  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    int e = errno;
    set_errmsg(c, "cannot create a socket: %s", strerror(e));
    errno = e;
    return -1;
  }
  /* A unix-socket connect either succeeds or fails at once, so it is done
   * blocking; the socket becomes non-blocking afterwards so that every
   * later wait goes through poll() and honours the deadline. */
  if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
    int e = errno;
    set_errmsg(c,
               "cannot connect to %s: %s (is atelierd running? start it "
               "with ./bootstrap run)",
               path, strerror(e));
    close(fd);
    errno = e;
    return -1;
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    int e = errno;
    set_errmsg(c, "cannot configure the socket: %s", strerror(e));
    close(fd);
    errno = e;
    return -1;
  }
  c->fd = fd;
  return 0;
}

static void clear_error(atl_rpcc_t *c) {
  free(c->err_message);
  c->err_message = NULL;
  json_object_put(c->err_data);
  c->err_data = NULL;
  c->err_code = 0;
}

void atl_rpcc_close(atl_rpcc_t *c) {
  if (c->fd >= 0)
    close(c->fd);
  c->fd = -1;
  free(c->buf);
  c->buf = NULL;
  c->len = c->cap = c->start = 0;
  clear_error(c);
}

/* Waits until fd is ready for events or the deadline passes. Returns 1 when
 * ready, 0 on timeout, -1 when interrupted by a signal we were asked to
 * honour or on a poll failure. */
static int wait_fd(atl_rpcc_t *c, short events, int64_t deadline) {
  for (;;) {
    if (c->interrupted != NULL && *c->interrupted) {
      set_errmsg(c, "interrupted");
      return -1;
    }
    int64_t left = deadline - mono_ms();
    if (left <= 0)
      return 0;
    struct pollfd pfd[2] = {{.fd = c->fd, .events = events},
                            {.fd = c->watch_fd, .events = POLLRDHUP}};
    struct timespec ts = {.tv_sec = left / 1000,
                          .tv_nsec = (left % 1000) * 1000000};
    /* With a wait mask, the signals that set *interrupted stay blocked
     * except inside ppoll(), so one arriving between the check above and
     * the wait cannot be lost. */
    int n = ppoll(pfd, c->watch_fd >= 0 ? 2 : 1, &ts, c->wait_mask);
    if (n > 0 && c->watch_fd >= 0 &&
        (pfd[1].revents & (POLLRDHUP | POLLHUP | POLLERR))) {
      c->watch_closed = 1;
      set_errmsg(c, "the watched connection closed");
      return -1;
    }
    if (n > 0)
      return 1;
    if (n < 0 && errno != EINTR) {
      set_errmsg(c, "ppoll: %s", strerror(errno));
      return -1;
    }
  }
}

static int send_all(atl_rpcc_t *c, const char *data, size_t len,
                    int64_t deadline, const char *method) {
  size_t off = 0;
  while (off < len) {
    /* MSG_NOSIGNAL turns a daemon that went away into EPIPE here instead
     * of a SIGPIPE that would kill us without a message. */
    ssize_t n = send(c->fd, data + off, len - off, MSG_NOSIGNAL);
    if (n >= 0) {
      off += (size_t)n;
      continue;
    }
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      set_errmsg(c, "cannot send %s to atelierd: %s", method, strerror(errno));
      return -1;
    }
    int r = wait_fd(c, POLLOUT, deadline);
    if (r == 0)
      set_errmsg(c, "timed out sending %s to atelierd", method);
    if (r <= 0)
      return -1;
  }
  return 0;
}

/* Reads whatever is available into the buffer, growing it first so that a
 * read always has room. Returns bytes read, 0 at end of stream, -1 on
 * error (EAGAIN included, which the caller handles). */
static ssize_t fill(atl_rpcc_t *c) {
  const size_t chunk = 64 * 1024;
  if (c->cap - c->len < chunk) {
    size_t ncap = c->cap ? c->cap : chunk * 2;
    while (ncap - c->len < chunk)
      ncap *= 2;
    char *nbuf = realloc(c->buf, ncap);
    if (nbuf == NULL) {
      errno = ENOMEM;
      return -1;
    }
    c->buf = nbuf;
    c->cap = ncap;
  }
  return read(c->fd, c->buf + c->len, c->cap - c->len);
}

/* Looks at one response line. Returns 1 and fills *result or the error
 * fields when it answers request id, 0 when it belongs to someone else,
 * -1 when it is not a JSON-RPC response at all. */
static int take_response(atl_rpcc_t *c, const char *line, size_t len,
                         int64_t id, json_object **result, int *status) {
  char perr[256];
  json_object *resp = atl_json_parse_text(line, len, perr, sizeof(perr));
  if (resp == NULL || !json_object_is_type(resp, json_type_object)) {
    set_errmsg(c, "atelierd sent something that is not a JSON-RPC response%s%s",
               resp == NULL ? ": " : "", resp == NULL ? perr : "");
    json_object_put(resp);
    return -1;
  }
  json_object *jid = NULL, *jerr = NULL, *jres = NULL;
  json_object_object_get_ex(resp, "id", &jid);
  json_object_object_get_ex(resp, "error", &jerr);
  json_object_object_get_ex(resp, "result", &jres);
  /* We have only one request in flight, so an error with "id": null (a
   * frame the daemon could not parse or that was too large) is the answer
   * to it. Anything else with another id is a stale answer to a request
   * we gave up on, and is skipped. */
  int ours = (jid != NULL && json_object_is_type(jid, json_type_int) &&
              json_object_get_int64(jid) == id) ||
             (jid == NULL && jerr != NULL);
  if (!ours) {
    json_object_put(resp);
    return 0;
  }
  if (jerr != NULL && json_object_is_type(jerr, json_type_object)) {
    json_object *code = NULL, *msg = NULL, *data = NULL;
    json_object_object_get_ex(jerr, "code", &code);
    json_object_object_get_ex(jerr, "message", &msg);
    json_object_object_get_ex(jerr, "data", &data);
    c->err_code = code ? json_object_get_int(code) : 0;
    c->err_message = strdup(msg ? json_object_get_string(msg) : "(no message)");
    c->err_data = data ? json_object_get(data) : NULL;
    set_errmsg(c, "%s (code %d)", c->err_message ? c->err_message : "",
               c->err_code);
    *status = ATL_RPCC_ERROR;
  } else if (jres != NULL || json_object_object_get_ex(resp, "result", NULL)) {
    /* "result": null is a valid answer, so presence is what counts. */
    *result = json_object_get(jres);
    *status = ATL_RPCC_OK;
  } else {
    set_errmsg(c, "atelierd sent a response with neither result nor error");
    json_object_put(resp);
    return -1;
  }
  json_object_put(resp);
  return 1;
}

int atl_rpcc_call(atl_rpcc_t *c, const char *method, json_object *params,
                  int timeout_ms, json_object **result) {
  *result = NULL;
  clear_error(c);
  c->errmsg[0] = '\0';
  if (c->start > 0) { /* lines a stream left: answers are read from 0 */
    memmove(c->buf, c->buf + c->start, c->len - c->start);
    c->len -= c->start;
    c->start = 0;
  }
  int64_t deadline = mono_ms() + timeout_ms;
  int64_t id = c->next_id++;

  json_object *req = json_object_new_object();
  json_object_object_add(req, "jsonrpc", json_object_new_string("2.0"));
  json_object_object_add(req, "id", json_object_new_int64(id));
  json_object_object_add(req, "method", json_object_new_string(method));
  if (params != NULL)
    json_object_object_add(req, "params", params);
  size_t reqlen = 0;
  const char *text = json_object_to_json_string_length(
      req, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &reqlen);
  /* json-c escapes control characters, so the text has no raw newline and
   * one line is one request. */
  c->sent = 0;
  int rc = send_all(c, text, reqlen, deadline, method);
  if (rc == 0)
    rc = send_all(c, "\n", 1, deadline, method);
  json_object_put(req);
  if (rc != 0)
    return ATL_RPCC_TRANSPORT;
  c->sent = 1;

  size_t scanned = 0;
  for (;;) {
    /* c->buf is NULL before the first read; memchr must not see it. */
    char *nl = c->len > scanned
                   ? memchr(c->buf + scanned, '\n', c->len - scanned)
                   : NULL;
    if (nl != NULL) {
      size_t linelen = (size_t)(nl - c->buf);
      int status = ATL_RPCC_TRANSPORT;
      int r = linelen == 0
                  ? 0
                  : take_response(c, c->buf, linelen, id, result, &status);
      memmove(c->buf, nl + 1, c->len - linelen - 1);
      c->len -= linelen + 1;
      scanned = 0;
      if (r < 0)
        return ATL_RPCC_TRANSPORT;
      if (r > 0)
        return status;
      continue;
    }
    scanned = c->len;
    if (c->len > CTL_MAX_RESPONSE) {
      set_errmsg(c, "the answer to %s exceeds %zu bytes", method,
                 CTL_MAX_RESPONSE);
      return ATL_RPCC_TRANSPORT;
    }
    ssize_t n = fill(c);
    if (n > 0) {
      c->len += (size_t)n;
      continue;
    }
    if (n == 0) {
      set_errmsg(c, "atelierd closed the connection before answering %s",
                 method);
      return ATL_RPCC_TRANSPORT;
    }
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      set_errmsg(c, "cannot read the answer to %s: %s", method,
                 strerror(errno));
      return ATL_RPCC_TRANSPORT;
    }
    int w = wait_fd(c, POLLIN, deadline);
    if (w == 0)
      set_errmsg(c, "no answer to %s within %d ms", method, timeout_ms);
    if (w <= 0)
      return ATL_RPCC_TRANSPORT;
  }
}

int atl_rpcc_read_line(atl_rpcc_t *c, int timeout_ms, char **line) {
  *line = NULL;
  c->errmsg[0] = '\0';
  int64_t deadline = timeout_ms < 0 ? INT64_MAX : mono_ms() + timeout_ms;
  size_t scanned = c->start;
  for (;;) {
    char *nl = c->len > scanned
                   ? memchr(c->buf + scanned, '\n', c->len - scanned)
                   : NULL;
    if (nl != NULL) {
      /* Lines are taken from c->start on; the buffer is compacted only
       * when it must grow, not once a line (a trace sends thousands a
       * second). */
      size_t n = (size_t)(nl - (c->buf + c->start));
      *line = malloc(n + 1);
      if (*line == NULL) {
        set_errmsg(c, "out of memory");
        return -1;
      }
      memcpy(*line, c->buf + c->start, n);
      (*line)[n] = '\0';
      c->start += n + 1;
      if (c->start == c->len)
        c->start = c->len = 0;
      return 1;
    }
    if (c->start > 0) {
      memmove(c->buf, c->buf + c->start, c->len - c->start);
      c->len -= c->start;
      c->start = 0;
    }
    scanned = c->len;
    if (c->len > CTL_MAX_RESPONSE) {
      set_errmsg(c, "a line exceeds %zu bytes", CTL_MAX_RESPONSE);
      return -1;
    }
    ssize_t n = fill(c);
    if (n > 0) {
      c->len += (size_t)n;
      continue;
    }
    if (n == 0)
      return 0;
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      set_errmsg(c, "cannot read from atelierd: %s", strerror(errno));
      return -1;
    }
    int w = wait_fd(c, POLLIN, deadline);
    if (w <= 0)
      return -1;
  }
}

int atl_rpcc_pass(atl_rpcc_t *c, int out_fd, int timeout_ms) {
  c->errmsg[0] = '\0';
  if (c->len > c->start) {
    size_t off = c->start;
    while (off < c->len) {
      ssize_t n = write(out_fd, c->buf + off, c->len - off);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {
        set_errmsg(c, "cannot write the output: %s", strerror(errno));
        return -1;
      }
      off += (size_t)n;
    }
    c->start = c->len = 0;
    return 1;
  }
  ssize_t n = fill(c);
  if (n > 0) {
    c->len += (size_t)n;
    return atl_rpcc_pass(c, out_fd, timeout_ms);
  }
  if (n == 0)
    return 0;
  if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
    set_errmsg(c, "cannot read from atelierd: %s", strerror(errno));
    return -1;
  }
  int w = wait_fd(c, POLLIN, mono_ms() + timeout_ms);
  return w < 0 ? -1 : 1;
}

int atl_rpcc_has_line(const atl_rpcc_t *c) {
  return c->len > c->start &&
         memchr(c->buf + c->start, '\n', c->len - c->start) != NULL;
}

json_object *atl_json_parse_text(const char *text, size_t len, char *err,
                                 size_t errlen) {
  if (len > INT32_MAX - 1) {
    snprintf(err, errlen, "the text is too large (%zu bytes)", len);
    return NULL;
  }
  json_tokener *tok = json_tokener_new_ex(CTL_JSON_DEPTH);
  if (tok == NULL) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  /* Strict mode rejects what json-c would otherwise accept as an
   * extension (single quotes, trailing commas, ...), so that what passes
   * here is also accepted by the daemon. */
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
  json_object *obj = json_tokener_parse_ex(tok, text, (int)len);
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  size_t end = json_tokener_get_parse_end(tok);
  if (jerr == json_tokener_continue) {
    /* A bare number at the end of the input ("42") is incomplete until the
     * tokener sees a terminator; a NUL byte tells it the input has ended. */
    obj = json_tokener_parse_ex(tok, "", 1);
    jerr = json_tokener_get_error(tok);
    end = len;
  }
  if (obj == NULL || jerr != json_tokener_success) {
    snprintf(err, errlen, "%s at byte %zu", json_tokener_error_desc(jerr), end);
    json_object_put(obj);
    json_tokener_free(tok);
    return NULL;
  }
  /* json-c stops after the first complete value; anything but whitespace
   * after it means the text was not one JSON value. */
  for (size_t i = end; i < len; i++) {
    if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' &&
        text[i] != '\r') {
      snprintf(err, errlen, "unexpected text after the JSON value at byte %zu",
               i);
      json_object_put(obj);
      json_tokener_free(tok);
      return NULL;
    }
  }
  json_tokener_free(tok);
  return obj;
}

/* Decodes standard or URL-safe base64, ignoring whitespace. Returns a new
 * buffer or NULL if the text is not base64. */
unsigned char *atl_base64_decode(const char *in, size_t len, size_t *outlen) {
  unsigned char *out = malloc(len / 4 * 3 + 3);
  if (out == NULL)
    return NULL;
  uint32_t acc = 0;
  int bits = 0, pad = 0;
  size_t n = 0, symbols = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)in[i];
    int v;
    if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t')
      continue;
    if (ch == '=') {
      pad++;
      continue;
    }
    if (ch >= 'A' && ch <= 'Z')
      v = ch - 'A';
    else if (ch >= 'a' && ch <= 'z')
      v = ch - 'a' + 26;
    else if (ch >= '0' && ch <= '9')
      v = ch - '0' + 52;
    else if (ch == '+' || ch == '-')
      v = 62;
    else if (ch == '/' || ch == '_')
      v = 63;
    else
      v = -1;
    /* Data after padding, or a foreign character, is not base64. */
    if (v < 0 || pad > 0) {
      free(out);
      return NULL;
    }
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    symbols++;
    if (bits >= 8) {
      bits -= 8;
      out[n++] = (unsigned char)(acc >> bits);
    }
  }
  /* A lone symbol in the last group carries fewer than 8 bits. */
  if (symbols % 4 == 1 || pad > 2) {
    free(out);
    return NULL;
  }
  *outlen = n;
  return out;
}
