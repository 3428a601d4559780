/* bench/agent-fake: a minimal OpenAI-compatible Chat Completions server
 * for bench/agent, answering at once so that what bench/agent measures is
 * atelierd's own time. tests/fake-llm is the faithful fake; this one only
 * knows the two answers the benchmark needs, and is fast.
 *
 *   agent-fake [--port N]     (0, the default: any free port)
 *
 * It prints "agent-fake listening on http://127.0.0.1:PORT" once ready and
 * serves, over HTTP/1.1 with keep-alive (libcurl reuses its connections):
 *
 *   POST /v1/chat/completions  a streamed answer (text/event-stream). When
 *       the last message of the request is the user's, the answer is a
 *       short text and one call of the echo tool, its arguments in two
 *       fragments; when it is a tool result, a short text that ends the
 *       run. Every run of the agent is thus two model turns and one call.
 *   GET /stats                 the counters, as one line of text.
 *
 * It measures its own time per request, from the moment the whole request
 * has been read to the moment the whole answer has been written, so that
 * the provider's share of bench/agent's figures is known. The same line as
 * GET /stats goes to standard output on SIGUSR1 and at exit (SIGINT,
 * SIGTERM).
 *
 * One thread and epoll: on a 2-core machine shared with atelierd and the
 * driver, the fake must cost as little CPU as it can.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Requests larger than this are refused: the benchmark's grow with the
 * history, but stay far below it. */
#define MAX_BODY ((size_t)256 << 20)
#define MAX_HEAD ((size_t)64 << 10)
/* The histogram of the time per request, one bucket per microsecond. */
#define HIST_US 100000

typedef struct {
  int fd;
  char *in;
  size_t in_len, in_cap;
  char *out;
  size_t out_len, out_off, out_cap;
  int continued;    /* "100 Continue" went out for the request being read */
  int close_after;  /* close once the answer is written */
  int timed;        /* the answer being written counts in the statistics */
  uint64_t t_ready; /* when its request had been read */
  int want_out;     /* EPOLLOUT is armed */
} conn_t;

static struct {
  uint64_t connections, requests, tool_turns, text_turns, bad;
  uint64_t body_bytes, body_max;
  uint64_t ns_sum, ns_max;
  uint32_t hist[HIST_US + 1];
} st;

static int ep;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *xrealloc(void *p, size_t n) {
  p = realloc(p, n);
  if (p == NULL) {
    fprintf(stderr, "agent-fake: out of memory\n");
    exit(2);
  }
  return p;
}

static void append(conn_t *c, const char *s, size_t n) {
  if (c->out_len + n > c->out_cap) {
    size_t cap = c->out_cap ? c->out_cap : 4096;
    while (cap < c->out_len + n)
      cap *= 2;
    c->out = xrealloc(c->out, cap);
    c->out_cap = cap;
  }
  memcpy(c->out + c->out_len, s, n);
  c->out_len += n;
}

/* The percentile q of the time per request, in microseconds. */
static double pct_us(double q) {
  if (st.requests == 0)
    return 0;
  uint64_t n = 0, want = (uint64_t)((double)st.requests * q);
  for (size_t i = 0; i <= HIST_US; i++) {
    n += st.hist[i];
    if (n > want)
      return (double)i;
  }
  return (double)HIST_US;
}

static int stats_line(char *buf, size_t cap) {
  uint64_t n = st.requests ? st.requests : 1;
  return snprintf(
      buf, cap,
      "agent-fake connections=%llu requests=%llu tool_turns=%llu "
      "text_turns=%llu "
      "bad=%llu body_mean_kb=%.1f body_max_kb=%.1f mean_us=%.1f "
      "p50_us=%.0f p99_us=%.0f max_us=%.1f\n",
      (unsigned long long)st.connections, (unsigned long long)st.requests,
      (unsigned long long)st.tool_turns, (unsigned long long)st.text_turns,
      (unsigned long long)st.bad, (double)st.body_bytes / (double)n / 1024.0,
      (double)st.body_max / 1024.0, (double)st.ns_sum / (double)n / 1000.0,
      pct_us(0.50), pct_us(0.99), (double)st.ns_max / 1000.0);
}

static void conn_close(conn_t *c) {
  epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  free(c->in);
  free(c->out);
  free(c);
}

/* Writes what it can. Returns -1 when the connection is gone. The time of
 * a request ends here, once the last byte of its answer is with the
 * kernel. */
static int flush(conn_t *c) {
  while (c->out_off < c->out_len) {
    ssize_t w = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && errno == EAGAIN) {
      if (!c->want_out) {
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->want_out = 1;
      }
      return 0;
    }
    if (w <= 0)
      return -1;
    c->out_off += (size_t)w;
  }
  c->out_off = c->out_len = 0;
  if (c->want_out) {
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = 0;
  }
  if (c->timed) {
    uint64_t ns = now_ns() - c->t_ready;
    st.ns_sum += ns;
    if (ns > st.ns_max)
      st.ns_max = ns;
    st.hist[ns / 1000 < HIST_US ? ns / 1000 : HIST_US]++;
    c->timed = 0;
  }
  return c->close_after ? -1 : 0;
}

static void simple(conn_t *c, const char *status, const char *type,
                   const char *body) {
  char head[256];
  int n = snprintf(head, sizeof(head),
                   "HTTP/1.1 %s\r\nContent-Type: %s\r\n"
                   "Content-Length: %zu\r\n%s\r\n",
                   status, type, strlen(body),
                   c->close_after ? "Connection: close\r\n" : "");
  append(c, head, (size_t)n);
  append(c, body, strlen(body));
}

/* The role of the conversation's last message. The daemon writes compact
 * JSON, so a key is exactly "role":"; inside a string (a tool result's
 * text) its quotes are escaped and cannot match. The tool definitions
 * follow the messages and are left out of the search, in case a schema
 * has a "role" of its own. */
static int last_is_tool(const char *body, size_t len) {
  const char *end = memmem(body, len, "\"tools\":[", 9);
  size_t n = end ? (size_t)(end - body) : len;
  static const char key[] = "\"role\":\"";
  const size_t k = sizeof(key) - 1;
  const char *last = NULL;
  for (const char *p = body;
       (p = memmem(p, n - (size_t)(p - body), key, k)) != NULL; p += k)
    last = p;
  return last != NULL && (size_t)(last - body) + k + 5 <= n &&
         memcmp(last + k, "tool\"", 5) == 0;
}

/* One streamed answer, in the form OpenAI's streaming Chat Completions
 * take: a chunk per delta, the finish reason, the usage (asked for with
 * stream_options.include_usage), then [DONE]. */
static void completion(conn_t *c, const char *body, size_t len) {
  static uint64_t seq;
  int tool_turn = !last_is_tool(body, len);
  char sse[2048], head[256];
  const char *pre = "data: {\"id\":\"chatcmpl-bench\",\"object\":"
                    "\"chat.completion.chunk\",\"created\":1700000000,"
                    "\"model\":\"bench\",\"choices\":[{\"index\":0,"
                    "\"delta\":";
  /* Roughly a token per 4 bytes, so that the usage grows with the
   * history like a real provider's. */
  long prompt = (long)(len / 4);
  int n;
  seq++;
  if (tool_turn)
    n = snprintf(
        sse, sizeof(sse),
        "%s{\"role\":\"assistant\",\"content\":\"Calling echo.\"},"
        "\"finish_reason\":null}]}\n\n"
        "%s{\"tool_calls\":[{\"index\":0,\"id\":\"call_%llu\",\"type\":"
        "\"function\",\"function\":{\"name\":\"echo\",\"arguments\":"
        "\"{\\\"text\\\":\"}}]},\"finish_reason\":null}]}\n\n"
        "%s{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":"
        "\"\\\"bench\\\"}\"}}]},\"finish_reason\":null}]}\n\n"
        "%s{},\"finish_reason\":\"tool_calls\"}]}\n\n"
        "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\","
        "\"created\":1700000000,\"model\":\"bench\",\"choices\":[],"
        "\"usage\":{\"prompt_tokens\":%ld,\"completion_tokens\":12,"
        "\"total_tokens\":%ld}}\n\n"
        "data: [DONE]\n\n",
        pre, pre, (unsigned long long)seq, pre, pre, prompt, prompt + 12);
  else
    n = snprintf(
        sse, sizeof(sse),
        "%s{\"role\":\"assistant\",\"content\":\"Done.\"},"
        "\"finish_reason\":null}]}\n\n"
        "%s{},\"finish_reason\":\"stop\"}]}\n\n"
        "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\","
        "\"created\":1700000000,\"model\":\"bench\",\"choices\":[],"
        "\"usage\":{\"prompt_tokens\":%ld,\"completion_tokens\":2,"
        "\"total_tokens\":%ld}}\n\n"
        "data: [DONE]\n\n",
        pre, pre, prompt, prompt + 2);
  int h = snprintf(head, sizeof(head),
                   "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                   "Cache-Control: no-cache\r\nContent-Length: %d\r\n%s\r\n",
                   n, c->close_after ? "Connection: close\r\n" : "");
  append(c, head, (size_t)h);
  append(c, sse, (size_t)n);
  if (tool_turn)
    st.tool_turns++;
  else
    st.text_turns++;
  st.requests++;
  st.body_bytes += len;
  if (len > st.body_max)
    st.body_max = len;
}

/* A header's value if the line is that header (case-insensitive name),
 * else NULL. */
static const char *header(const char *line, const char *name) {
  size_t n = strlen(name);
  if (strncasecmp(line, name, n) != 0 || line[n] != ':')
    return NULL;
  line += n + 1;
  while (*line == ' ' || *line == '\t')
    line++;
  return line;
}

/* Handles the complete requests in the input, one at a time: an answer is
 * written before the next request is looked at, so at most one is timed.
 * Returns -1 when the connection is to be closed. */
static int serve(conn_t *c) {
  while (c->out_len == 0) {
    char *end = c->in_len ? memmem(c->in, c->in_len, "\r\n\r\n", 4) : NULL;
    if (end == NULL) {
      if (c->in_len > MAX_HEAD) {
        c->close_after = 1;
        st.bad++;
        simple(c, "431 Request Header Fields Too Large", "text/plain",
               "headers too large\n");
        return flush(c);
      }
      return 0;
    }
    size_t head_len = (size_t)(end - c->in) + 4;
    /* The head as NUL-terminated lines, parsed in place. */
    *end = '\0';
    char method[16] = "", path[256] = "", version[16] = "";
    if (sscanf(c->in, "%15s %255s %15s", method, path, version) != 3) {
      c->close_after = 1;
      st.bad++;
      simple(c, "400 Bad Request", "text/plain", "bad request line\n");
      return flush(c);
    }
    size_t clen = 0;
    int chunked = 0, expect = 0, keep = strcmp(version, "HTTP/1.0") != 0;
    /* Each header line is NUL-terminated while it is looked at, then put
     * back as it was: a head whose body is still to come is parsed again
     * on the next read. */
    for (char *l = strstr(c->in, "\r\n"); l != NULL;) {
      l += 2;
      char *next = strstr(l, "\r\n");
      if (next)
        *next = '\0';
      const char *v;
      if ((v = header(l, "Content-Length")) != NULL)
        clen = strtoull(v, NULL, 10);
      else if ((v = header(l, "Transfer-Encoding")) != NULL)
        chunked = strcasestr(v, "chunked") != NULL;
      else if ((v = header(l, "Expect")) != NULL)
        expect = strcasecmp(v, "100-continue") == 0;
      else if ((v = header(l, "Connection")) != NULL)
        keep = strcasecmp(v, "close") != 0 &&
               (keep || strcasecmp(v, "keep-alive") == 0);
      if (next)
        *next = '\r';
      l = next;
    }
    *end = '\r';
    if (!keep)
      c->close_after = 1;
    if (chunked || clen > MAX_BODY) {
      /* The daemon always sends a Content-Length; a chunked body would
       * need a decoder for nothing. The rest of the input cannot be
       * framed, so the connection ends after the answer. */
      c->close_after = 1;
      st.bad++;
      simple(c, chunked ? "400 Bad Request" : "413 Content Too Large",
             "text/plain",
             chunked ? "chunked requests are not supported\n"
                     : "request too large\n");
      return flush(c);
    }
    if (c->in_len < head_len + clen) {
      /* libcurl waits for this answer (or a timeout) before it sends a
       * large body. */
      if (expect && !c->continued) {
        c->continued = 1;
        append(c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
        if (flush(c) < 0)
          return -1;
      }
      return 0;
    }
    c->continued = 0;
    c->t_ready = now_ns();
    const char *body = c->in + head_len;
    if (strcmp(method, "POST") == 0 &&
        strcmp(path, "/v1/chat/completions") == 0) {
      c->timed = 1;
      completion(c, body, clen);
    } else if (strcmp(method, "GET") == 0 && strcmp(path, "/stats") == 0) {
      char line[512];
      stats_line(line, sizeof(line));
      simple(c, "200 OK", "text/plain", line);
    } else {
      st.bad++;
      simple(c, "404 Not Found", "application/json",
             "{\"error\":{\"message\":\"not found\",\"type\":"
             "\"invalid_request_error\"}}\n");
    }
    memmove(c->in, c->in + head_len + clen, c->in_len - head_len - clen);
    c->in_len -= head_len + clen;
    if (flush(c) < 0)
      return -1;
  }
  return 0;
}

/* Reads what there is. Returns -1 when the peer is gone. */
static int on_readable(conn_t *c) {
  for (;;) {
    if (c->in_cap - c->in_len < 65536) {
      c->in_cap = c->in_cap ? c->in_cap * 2 : 131072;
      c->in = xrealloc(c->in, c->in_cap);
    }
    size_t room = c->in_cap - c->in_len;
    ssize_t r = read(c->fd, c->in + c->in_len, room);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0 && errno == EAGAIN)
      break;
    if (r <= 0)
      return -1;
    c->in_len += (size_t)r;
    if ((size_t)r < room)
      break; /* a short read: the socket is drained, save a system call */
  }
  return serve(c);
}

int main(int argc, char **argv) {
  int port = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--port") == 0 && i + 1 < argc)
      port = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: agent-fake [--port N]\n");
      return 2;
    }
  }
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof(a);
  if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) != 0 ||
      listen(ls, 512) != 0 ||
      getsockname(ls, (struct sockaddr *)&a, &alen) != 0) {
    fprintf(stderr, "agent-fake: cannot listen on port %d: %s\n", port,
            strerror(errno));
    return 2;
  }
  /* Signals arrive as readable data on the loop, so the statistics are
   * printed between requests, never in the middle of one. */
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGUSR1);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  sigprocmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);
  int sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
  ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &ls};
  struct epoll_event sev = {.events = EPOLLIN, .data.ptr = &sfd};
  epoll_ctl(ep, EPOLL_CTL_ADD, ls, &lev);
  epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &sev);
  printf("agent-fake listening on http://127.0.0.1:%d\n", ntohs(a.sin_port));
  fflush(stdout);

  struct epoll_event evs[256];
  for (;;) {
    int k = epoll_wait(ep, evs, 256, -1);
    if (k < 0 && errno == EINTR)
      continue;
    for (int e = 0; e < k; e++) {
      if (evs[e].data.ptr == &ls) {
        int fd;
        while ((fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >=
               0) {
          /* The answer goes out in one write; Nagle would hold back
           * nothing useful, but would delay a 100 Continue. */
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          conn_t *c = calloc(1, sizeof(*c));
          if (c == NULL) {
            close(fd);
            continue;
          }
          c->fd = fd;
          st.connections++;
          struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
          epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
        }
        continue;
      }
      if (evs[e].data.ptr == &sfd) {
        struct signalfd_siginfo si;
        while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
          char line[512];
          stats_line(line, sizeof(line));
          fputs(line, stdout);
          fflush(stdout);
          if (si.ssi_signo != SIGUSR1)
            return 0;
        }
        continue;
      }
      conn_t *c = evs[e].data.ptr;
      int rc = 0;
      if (evs[e].events & EPOLLOUT)
        rc = flush(c) < 0 ? -1 : serve(c);
      if (rc == 0 && (evs[e].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
        rc = on_readable(c);
      if (rc < 0)
        conn_close(c);
    }
  }
}
