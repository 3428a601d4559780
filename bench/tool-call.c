/* bench/tool-call: calls the echo tool over api.sock from C concurrent
 * clients, each on its own session with one request outstanding, for a
 * fixed time, and prints acknowledged calls/s and latency percentiles.
 * Every answer it counts was committed to the store before it was sent.
 *
 * One thread drives every client with epoll, so the benchmark itself
 * costs little CPU next to the daemon on a small machine.
 *
 *   tool-call --socket PATH [--clients N] [--seconds S] [--sessions K]
 *             [--mcp ATELIERCTL]
 *
 * --mcp makes each client an MCP client of its own `atelierctl mcp
 * --session ID` process (issue 22), which it talks to over the child's
 * stdin and stdout with MCP's tools/call (the legacy era, after
 * initialize), so that the figures say what the MCP front costs next to
 * the same calls straight over api.sock.
 *
 * --http PORT sends the calls through nginx and atelier-fcgi on
 * 127.0.0.1:PORT instead (the stack scripts/atelier-stack runs), each
 * client on a keep-alive connection of its own with the token read from
 * --token-file (atelierd's <data dir>/token; a file, not an argument,
 * which any user could read in ps): as MCP tools/call to the session's
 * /api/sessions/{id}/mcp (the modern era, whose requests need no initialize),
 * or with --http-api as the plain HTTP API's POST
 * /api/sessions/{id}/tools/echo, so that the figures separate what MCP costs
 * from what HTTP does.
 *
 * --sessions K first makes sure the store holds K sessions (creating the
 * missing ones) and prints the daemon's RSS with them and the clients
 * connected.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"

typedef struct {
  int fd;  /* what the answers come on */
  int wfd; /* what the requests go to: fd, or the MCP child's stdin */
  pid_t pid;
  char session[33];
  char *req;
  size_t req_len;
  char buf[65536];
  size_t len;
  uint64_t sent_ns;
  int http; /* answers are HTTP responses, on a connection to nginx */
} client_t;

/* --http: the port nginx listens on. */
static int http_port;

static long count_sessions(int fd) {
  size_t cap = 64u << 20;
  char *buf = malloc(cap);
  bench_rpc(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session.list\"}\n",
            buf, cap);
  long n = 0;
  for (char *p = buf; (p = strstr(p, "\"last_seq\"")) != NULL; p++)
    n++;
  free(buf);
  return n;
}

static long daemon_rss_kb(int fd) {
  char buf[65536];
  bench_rpc(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon.info\"}\n",
            buf, sizeof(buf));
  char *p = strstr(buf, "\"pid\":");
  if (p == NULL)
    return -1;
  return bench_rss_kb(strtol(p + 6, NULL, 10));
}

/* An `atelierctl mcp` child for c's session, past initialize: c->fd
 * becomes its stdout, c->wfd its stdin. */
static void mcp_start(client_t *c, const char *ctl, const char *sock) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
    perror("pipe");
    exit(2);
  }
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    exit(2);
  }
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    execl(ctl, ctl, "--socket", sock, "mcp", "--session", c->session,
          (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(c->fd); /* the set-up connection: the child has its own */
  c->pid = pid;
  c->fd = out[0];
  c->wfd = in[1];
  static const char init[] =
      "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
      "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
      "\"clientInfo\":{\"name\":\"bench\",\"version\":\"1\"}}}\n"
      "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
  bench_write_all(c->wfd, init, sizeof(init) - 1);
  char line[4096];
  size_t n = 0;
  while (n < sizeof(line) - 1) { /* the initialize answer, one line */
    ssize_t r = read(c->fd, line + n, 1);
    if (r <= 0) {
      fprintf(stderr, "tool-call: %s mcp did not answer initialize\n", ctl);
      exit(2);
    }
    if (line[n++] == '\n')
      break;
  }
}

/* A connection to nginx on 127.0.0.1:http_port. */
static int http_dial(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)http_port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
    perror("tool-call: connect to nginx");
    exit(2);
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

/* The request for c: an MCP tools/call or the HTTP API's tool call. */
static void http_request(client_t *c, int i, const char *token, int api) {
  char body[512], path[128];
  if (api) {
    snprintf(path, sizeof(path), "/api/sessions/%s/tools/echo", c->session);
    snprintf(body, sizeof(body), "{\"text\":\"hello from client %d\"}", i);
  } else {
    snprintf(path, sizeof(path), "/api/sessions/%s/mcp", c->session);
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
             "\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":"
             "\"hello from client %d\"},\"_meta\":{\"io.modelcontextprotocol/"
             "protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/"
             "clientCapabilities\":{}}}}",
             i);
  }
  if (asprintf(&c->req,
               "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
               "Authorization: Bearer %s\r\n"
               "Content-Type: application/json\r\n"
               "Accept: application/json, text/event-stream\r\n"
               "%s"
               "Content-Length: %zu\r\n\r\n%s",
               path, http_port, token,
               api ? ""
                   : "MCP-Protocol-Version: 2026-07-28\r\n"
                     "Mcp-Method: tools/call\r\nMcp-Name: echo\r\n",
               strlen(body), body) < 0)
    exit(2);
  c->req_len = strlen(c->req);
}

/* When c->buf holds a whole HTTP response: its length (headers and
 * body), with *closing set when nginx will close the connection after
 * it; else 0. */
static size_t http_complete(client_t *c, int *closing) {
  char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
  if (end == NULL)
    return 0;
  size_t head = (size_t)(end - c->buf) + 4;
  char *cl = memmem(c->buf, head, "Content-Length: ", 16);
  if (cl == NULL) {
    /* An event stream (progress) is chunked: the echo calls make none. */
    fprintf(stderr,
            "tool-call: a response without Content-Length (an event "
            "stream?):\n%.*s\n",
            (int)head, c->buf);
    exit(2);
  }
  size_t n = head + strtoul(cl + 16, NULL, 10);
  *closing = memmem(c->buf, head, "Connection: close", 17) != NULL;
  return c->len >= n ? n : 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void send_req(client_t *c) {
  c->sent_ns = bench_now_ns();
  if (write(c->wfd, c->req, c->req_len) != (ssize_t)c->req_len) {
    perror("write");
    exit(2);
  }
}

int main(int argc, char **argv) {
  const char *sock = NULL;
  int nclients = 1;
  double seconds = 5;
  long want_sessions = 0;
  const char *mcp = NULL, *token_file = NULL;
  char token[128] = "";
  int http_api = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc)
      sock = argv[++i];
    else if (strcmp(argv[i], "--clients") == 0 && i + 1 < argc)
      nclients = atoi(argv[++i]);
    else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
      seconds = atof(argv[++i]);
    else if (strcmp(argv[i], "--sessions") == 0 && i + 1 < argc)
      want_sessions = atol(argv[++i]);
    else if (strcmp(argv[i], "--mcp") == 0 && i + 1 < argc)
      mcp = argv[++i];
    else if (strcmp(argv[i], "--http") == 0 && i + 1 < argc)
      http_port = atoi(argv[++i]);
    else if (strcmp(argv[i], "--token-file") == 0 && i + 1 < argc)
      token_file = argv[++i];
    else if (strcmp(argv[i], "--http-api") == 0)
      http_api = 1;
    else {
      fprintf(stderr, "usage: tool-call --socket PATH [--clients N] "
                      "[--seconds S] [--sessions K] [--mcp ATELIERCTL | "
                      "--http PORT --token-file PATH [--http-api]]\n");
      return 2;
    }
  }
  if (sock == NULL || nclients < 1 || seconds <= 0) {
    fprintf(stderr, "tool-call: --socket is required\n");
    return 2;
  }

  if (token_file != NULL) {
    FILE *f = fopen(token_file, "r");
    if (f == NULL || fgets(token, sizeof(token), f) == NULL) {
      fprintf(stderr, "tool-call: cannot read the token in %s\n", token_file);
      return 2;
    }
    fclose(f);
    token[strcspn(token, "\r\n")] = '\0';
  }
  int ctl = bench_dial(sock);
  if (want_sessions > 0) {
    long have = count_sessions(ctl);
    char id[33];
    for (long i = have; i < want_sessions; i++)
      bench_new_session(ctl, id);
    printf("sessions in store: %ld\n", count_sessions(ctl));
  }

  client_t *cl = calloc((size_t)nclients, sizeof(*cl));
  int ep = epoll_create1(EPOLL_CLOEXEC);
  for (int i = 0; i < nclients; i++) {
    cl[i].fd = cl[i].wfd = bench_dial(sock);
    bench_new_session(cl[i].fd, cl[i].session);
    if (http_port > 0) {
      close(cl[i].fd); /* the set-up connection */
      cl[i].fd = cl[i].wfd = http_dial();
      cl[i].http = 1;
      http_request(&cl[i], i, token, http_api);
    } else if (mcp != NULL) {
      mcp_start(&cl[i], mcp, sock);
      if (asprintf(&cl[i].req,
                   "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/"
                   "call\",\"params\":{\"name\":\"echo\",\"arguments\":"
                   "{\"text\":\"hello from client %d\"}}}\n",
                   i) < 0)
        return 2;
    } else if (asprintf(&cl[i].req,
                        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                        "\"tool.call\",\"params\":{\"session\":\"%s\","
                        "\"name\":\"echo\",\"arguments\":{\"text\":"
                        "\"hello from client %d\"}}}\n",
                        cl[i].session, i) < 0)
      return 2;
    if (!cl[i].http)
      cl[i].req_len = strlen(cl[i].req);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &cl[i]};
    epoll_ctl(ep, EPOLL_CTL_ADD, cl[i].fd, &ev);
  }
  if (want_sessions > 0)
    printf("daemon RSS with %d clients connected: %.1f MB\n", nclients,
           daemon_rss_kb(ctl) / 1024.0);

  size_t cap = 1u << 20, n = 0;
  uint64_t *lat = malloc(cap * sizeof(*lat));
  long errors = 0;
  for (int i = 0; i < nclients; i++)
    send_req(&cl[i]);
  uint64_t start = bench_now_ns(), end = start + (uint64_t)(seconds * 1e9);
  int active = nclients;
  struct epoll_event evs[256];
  while (active > 0) {
    int k = epoll_wait(ep, evs, 256, 1000);
    uint64_t t = bench_now_ns();
    for (int e = 0; e < k; e++) {
      client_t *c = evs[e].data.ptr;
      ssize_t r = read(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len);
      if (r <= 0) {
        fprintf(stderr, "tool-call: connection lost\n");
        return 2;
      }
      c->len += (size_t)r;
      int closing = 0;
      if (c->http) {
        size_t whole = http_complete(c, &closing);
        if (whole == 0 && c->len >= sizeof(c->buf) - 1) {
          fprintf(stderr, "tool-call: a response larger than %zu bytes\n",
                  sizeof(c->buf) - 1);
          return 2;
        }
        if (whole == 0)
          continue;
        c->buf[whole] = '\0'; /* whole <= c->len < sizeof(c->buf) */
        if (strncmp(c->buf, "HTTP/1.1 200", 12) != 0 ||
            (http_api ? strstr(c->buf, "\"success\":true") == NULL
                      : strstr(c->buf, "\"result\":{\"content\"") == NULL ||
                            strstr(c->buf, "\"isError\"") != NULL))
          errors++;
        if (closing) {
          /* nginx's keepalive_requests ran out: a new connection. */
          epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
          close(c->fd);
          c->fd = c->wfd = http_dial();
          struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
          epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
        }
        c->len = 0;
      } else {
        char *nl = memchr(c->buf, '\n', c->len);
        if (nl == NULL)
          continue;
        *nl = '\0';
        if (mcp != NULL ? strstr(c->buf, "\"result\":{\"content\"") == NULL ||
                              strstr(c->buf, "\"isError\"") != NULL
                        : strstr(c->buf, "\"success\":true") == NULL)
          errors++;
        c->len = 0;
      }
      if (n == cap) {
        cap *= 2;
        lat = realloc(lat, cap * sizeof(*lat));
      }
      lat[n++] = t - c->sent_ns;
      if (t < end)
        send_req(c);
      else
        active--;
    }
  }
  double elapsed = (double)(bench_now_ns() - start) / 1e9;
  qsort(lat, n, sizeof(*lat), cmp_u64);
#define PCT(q) (n ? lat[(size_t)((double)n * (q))] / 1e6 : 0.0)
  printf("clients=%d calls=%zu errors=%ld seconds=%.2f calls_per_s=%.0f "
         "p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f\n",
         nclients, n, errors, elapsed, (double)n / elapsed, PCT(0.50),
         PCT(0.90), PCT(0.99), PCT(0.999), n ? lat[n - 1] / 1e6 : 0.0);
  if (want_sessions > 0)
    printf("daemon RSS after the run: %.1f MB\n", daemon_rss_kb(ctl) / 1024.0);
  for (int i = 0; i < nclients; i++) {
    if (cl[i].wfd != cl[i].fd)
      close(cl[i].wfd); /* the MCP child reads EOF and exits */
    close(cl[i].fd);
    if (cl[i].pid > 0)
      waitpid(cl[i].pid, NULL, 0);
    free(cl[i].req);
  }
  free(cl);
  free(lat);
  close(ctl);
  return errors ? 1 : 0;
}
