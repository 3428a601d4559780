/* Tests of the asynchronous HTTP client against a tiny HTTP/1.1 server that
 * runs in a thread of the test process on an ephemeral port of 127.0.0.1.
 *
 * Criterion runs each test in its own process, so each test gets its own
 * server, loop and client, and the server threads simply die with the
 * process.
 */
#define _GNU_SOURCE /* memmem */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "http.h"

/* ---- the test server ----------------------------------------------------- */

static int srv_fd = -1;
static int srv_port;
static pthread_t srv_thread;

/* Every connection the server accepted, so that the test's end can wake and
 * join their threads (valgrind then sees no thread left behind). A
 * connection's descriptor is closed only after its thread is joined, so its
 * number cannot be reused while the list still names it. */
enum { MAX_CONNS = 256 };
static pthread_mutex_t conns_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  int fd;
  pthread_t thread;
} conns[MAX_CONNS];
static int n_conns;

static int send_all(int fd, const void *data, size_t len) {
  const char *p = data;

  while (len > 0) {
    /* MSG_NOSIGNAL: the client hangs up mid-response on purpose in some
     * tests, which must not kill the test with SIGPIPE. */
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    if (n <= 0)
      return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

static int send_str(int fd, const char *s) {
  return send_all(fd, s, strlen(s));
}

static int send_chunk(int fd, const char *data, size_t len) {
  char head[32];

  snprintf(head, sizeof(head), "%zx\r\n", len);
  if (send_str(fd, head) || send_all(fd, data, len) || send_str(fd, "\r\n"))
    return -1;
  return 0;
}

/* Finds a header's value in the request head (case-insensitive name), copied
 * into out; returns 0 if absent. */
static int find_header(const char *head, const char *name, char *out,
                       size_t cap) {
  size_t nlen = strlen(name);

  for (const char *line = strstr(head, "\r\n"); line && line[2];
       line = strstr(line + 2, "\r\n")) {
    const char *l = line + 2;
    if (strncasecmp(l, name, nlen) == 0 && l[nlen] == ':') {
      const char *v = l + nlen + 1;
      while (*v == ' ')
        v++;
      size_t n = strcspn(v, "\r");
      if (n >= cap)
        n = cap - 1;
      memcpy(out, v, n);
      out[n] = '\0';
      return 1;
    }
  }
  return 0;
}

/* Answers one request; returns 0 to keep the connection, -1 to close it. */
static int serve(int fd, const char *method, const char *path, const char *head,
                 const char *body, size_t body_len) {
  char buf[512];

  if (strcmp(path, "/hello") == 0) {
    return send_str(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                        "Content-Length: 5\r\n\r\nhello");
  }
  if (strcmp(path, "/echo") == 0) {
    char xtest[128] = "";
    /* The client only sees the Content-Type of a response, so that is the
     * header the method and the custom request header are echoed in. */
    find_header(head, "X-Test", xtest, sizeof(xtest));
    snprintf(buf, sizeof(buf),
             "HTTP/1.1 200 OK\r\nContent-Type: application/x-echo; "
             "method=%s; x-test=%s\r\nX-Method: %s\r\n"
             "Content-Length: %zu\r\n\r\n",
             method, xtest, method, body_len);
    if (send_str(fd, buf))
      return -1;
    return send_all(fd, body, body_len);
  }
  if (strcmp(path, "/slow") == 0) {
    /* Two seconds, or less if the client hangs up (its descriptor becomes
     * readable at end of file) or the test ends (shutdown). */
    struct pollfd p = {.fd = fd, .events = POLLIN};
    poll(&p, 1, 2000);
    return send_str(fd, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nslow");
  }
  if (strcmp(path, "/big") == 0 || strcmp(path, "/bigstream") == 0) {
    /* /big announces its length; /bigstream does not (chunked), so the
     * client can only notice the size while receiving. */
    int chunked = strcmp(path, "/bigstream") == 0;
    static char block[65536];
    size_t total = 5u * 1024 * 1024;
    memset(block, 'x', sizeof(block));
    if (chunked)
      snprintf(buf, sizeof(buf),
               "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    else
      snprintf(buf, sizeof(buf),
               "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", total);
    if (send_str(fd, buf))
      return -1;
    for (size_t sent = 0; sent < total; sent += sizeof(block)) {
      if (chunked ? send_chunk(fd, block, sizeof(block))
                  : send_all(fd, block, sizeof(block)))
        return -1;
    }
    return chunked ? send_str(fd, "0\r\n\r\n") : 0;
  }
  if (strncmp(path, "/status/", 8) == 0) {
    int code = atoi(path + 8);
    snprintf(buf, sizeof(buf),
             "HTTP/1.1 %d Whatever\r\nContent-Type: text/plain\r\n"
             "Content-Length: 9\r\n\r\nnot found",
             code);
    return send_str(fd, buf);
  }
  if (strcmp(path, "/chunks") == 0) {
    if (send_str(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n"))
      return -1;
    for (int i = 0; i < 5; i++) {
      /* The pause makes each piece arrive on its own. */
      usleep(30000);
      snprintf(buf, sizeof(buf), "part-%d\n", i);
      if (send_chunk(fd, buf, strlen(buf)))
        return -1;
    }
    return send_str(fd, "0\r\n\r\n");
  }
  if (strcmp(path, "/close") == 0)
    return -1;
  return send_str(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
}

/* One connection: requests one after the other (curl reuses connections),
 * until the client hangs up or a path asks to close. */
static void *conn_main(void *arg) {
  int fd = (int)(intptr_t)arg;
  size_t cap = 1 << 16, used = 0;
  char *buf = malloc(cap);

  for (;;) {
    char *end;
    while (!(end = memmem(buf, used, "\r\n\r\n", 4))) {
      if (used == cap)
        goto done;
      ssize_t n = recv(fd, buf + used, cap - used, 0);
      if (n <= 0)
        goto done;
      used += (size_t)n;
    }
    size_t head_len = (size_t)(end - buf) + 4;
    char *head = strndup(buf, head_len);
    char method[16] = "", path[256] = "", value[64];
    size_t body_len = 0;
    sscanf(head, "%15s %255s", method, path);
    if (find_header(head, "Content-Length", value, sizeof(value)))
      body_len = strtoul(value, NULL, 10);
    if (find_header(head, "Expect", value, sizeof(value)))
      send_str(fd, "HTTP/1.1 100 Continue\r\n\r\n");
    while (used < head_len + body_len) {
      if (head_len + body_len > cap) {
        free(head);
        goto done;
      }
      ssize_t n = recv(fd, buf + used, cap - used, 0);
      if (n <= 0) {
        free(head);
        goto done;
      }
      used += (size_t)n;
    }
    int rc = serve(fd, method, path, head, buf + head_len, body_len);
    free(head);
    memmove(buf, buf + head_len + body_len, used - head_len - body_len);
    used -= head_len + body_len;
    if (rc != 0)
      break;
  }
done:
  free(buf);
  /* Tell the client we are done; server_stop closes the descriptor. */
  shutdown(fd, SHUT_RDWR);
  return NULL;
}

static void *accept_main(void *arg) {
  (void)arg;
  for (;;) {
    int c = accept(srv_fd, NULL, NULL);
    if (c < 0)
      return NULL;
    pthread_mutex_lock(&conns_lock);
    if (n_conns == MAX_CONNS ||
        pthread_create(&conns[n_conns].thread, NULL, conn_main,
                       (void *)(intptr_t)c) != 0) {
      close(c);
    } else {
      conns[n_conns++].fd = c;
    }
    pthread_mutex_unlock(&conns_lock);
  }
}

static void server_start(void) {
  struct sockaddr_in sa = {.sin_family = AF_INET};
  socklen_t len = sizeof(sa);

  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  srv_fd = socket(AF_INET, SOCK_STREAM, 0);
  cr_assert(srv_fd >= 0);
  cr_assert_eq(bind(srv_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
  cr_assert_eq(listen(srv_fd, 128), 0);
  cr_assert_eq(getsockname(srv_fd, (struct sockaddr *)&sa, &len), 0);
  srv_port = ntohs(sa.sin_port);
  cr_assert_eq(pthread_create(&srv_thread, NULL, accept_main, NULL), 0);
}

/* Wakes every server thread with shutdown() (which also ends accept() on
 * Linux) and joins them. */
static void server_stop(void) {
  shutdown(srv_fd, SHUT_RDWR);
  pthread_join(srv_thread, NULL);
  close(srv_fd);
  for (int i = 0; i < n_conns; i++) {
    shutdown(conns[i].fd, SHUT_RDWR);
    pthread_join(conns[i].thread, NULL);
    close(conns[i].fd);
  }
  n_conns = 0;
}

/* A port nothing listens on: bound once to get a free number, then closed
 * without listen(). */
static int closed_port(void) {
  struct sockaddr_in sa = {.sin_family = AF_INET};
  socklen_t len = sizeof(sa);
  int fd = socket(AF_INET, SOCK_STREAM, 0);

  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
  cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
  close(fd);
  return ntohs(sa.sin_port);
}

/* ---- the client side ----------------------------------------------------- */

static uv_loop_t loop;
static atl_http_t *http;

/* What one request's callbacks saw. */
typedef struct {
  int done;
  int status;
  long code;
  char *body;
  size_t body_len;
  char *ctype;
  char *error;
  /* Streaming. */
  char stream[256];
  size_t stream_len;
  int chunks;
  int abort_after; /* abort on this chunk (1-based); 0: never */
} result_t;

static int n_done;

static void on_done(const atl_http_response_t *resp, void *user) {
  result_t *r = user;

  r->done++;
  r->status = resp->status;
  r->code = resp->http_code;
  cr_assert_not_null(resp->body);
  cr_assert_eq(resp->body[resp->body_len], '\0');
  r->body = malloc(resp->body_len + 1);
  memcpy(r->body, resp->body, resp->body_len + 1);
  r->body_len = resp->body_len;
  r->ctype = resp->content_type ? strdup(resp->content_type) : NULL;
  r->error = resp->error ? strdup(resp->error) : NULL;
  if (resp->status < 0)
    cr_assert_not_null(resp->error);
  else
    cr_assert_null(resp->error);
  n_done++;
}

static int on_data(const char *data, size_t len, void *user) {
  result_t *r = user;

  r->chunks++;
  cr_assert_leq(r->stream_len + len, sizeof(r->stream));
  memcpy(r->stream + r->stream_len, data, len);
  r->stream_len += len;
  return r->abort_after && r->chunks >= r->abort_after;
}

static void result_free(result_t *r) {
  free(r->body);
  free(r->ctype);
  free(r->error);
}

static void url_of(char *buf, size_t cap, const char *path) {
  snprintf(buf, cap, "http://127.0.0.1:%d%s", srv_port, path);
}

/* Submits a GET (or a request of the given method and body) to path. */
static int submit(const char *method, const char *path,
                  const char *const *headers, const void *body, size_t len,
                  uint32_t timeout_ms, size_t max, atl_http_data_cb data_cb,
                  result_t *r) {
  char url[128];
  atl_http_request_t req = {.struct_size = sizeof(req),
                            .method = method,
                            .url = url,
                            .headers = headers,
                            .body = body,
                            .body_len = len,
                            .timeout_ms = timeout_ms,
                            .max_response = max};
  url_of(url, sizeof(url), path);
  return atl_http_request(http, &req, data_cb, on_done, r);
}

static void get(const char *path, result_t *r) {
  cr_assert_eq(submit(NULL, path, NULL, NULL, 0, 0, 0, NULL, r), 0);
}

static void safety_cb(uv_timer_t *t) {
  *(int *)t->data = 1;
}

/* Runs the loop until n_done reaches target, failing the test after a few
 * seconds rather than hanging. */
static void run_until(int target, uint64_t limit_ms) {
  uv_timer_t t;
  int expired = 0;

  uv_timer_init(&loop, &t);
  t.data = &expired;
  uv_timer_start(&t, safety_cb, limit_ms, 0);
  while (n_done < target && !expired)
    uv_run(&loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(&loop, UV_RUN_NOWAIT);
  cr_assert_not(expired, "only %d of %d requests completed in %llu ms", n_done,
                target, (unsigned long long)limit_ms);
}

/* Lets the loop run for ms milliseconds. */
static void run_for(uint64_t ms) {
  uv_timer_t t;
  int expired = 0;

  uv_timer_init(&loop, &t);
  t.data = &expired;
  uv_timer_start(&t, safety_cb, ms, 0);
  while (!expired)
    uv_run(&loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(&loop, UV_RUN_NOWAIT);
}

static void setup(void) {
  server_start();
  cr_assert_eq(uv_loop_init(&loop), 0);
  cr_assert_eq(atl_http_init(&loop, &http), 0);
  n_done = 0;
}

/* Closes the client and checks that it leaves no handle behind. */
static void finish(void) {
  atl_http_close(http);
  http = NULL;
  uv_run(&loop, UV_RUN_DEFAULT);
  cr_assert_eq(uv_loop_close(&loop), 0);
}

TestSuite(http, .init = setup, .fini = server_stop, .timeout = 15);

Test(http, get) {
  result_t r = {0};

  get("/hello", &r);
  run_until(1, 5000);
  cr_assert_eq(r.done, 1);
  cr_assert_eq(r.status, 0);
  cr_assert_eq(r.code, 200);
  cr_assert_eq(r.body_len, 5);
  cr_assert_str_eq(r.body, "hello");
  cr_assert_str_eq(r.ctype, "text/plain");
  cr_assert_eq(atl_http_active(http), 0);
  result_free(&r);
  finish();
}

Test(http, active_counts_requests_in_flight) {
  result_t a = {0}, b = {0};

  get("/hello", &a);
  get("/hello", &b);
  cr_assert_eq(atl_http_active(http), 2);
  run_until(2, 5000);
  cr_assert_eq(atl_http_active(http), 0);
  result_free(&a);
  result_free(&b);
  finish();
}

Test(http, post_body_and_headers_are_echoed) {
  static const char body[] = "payload\0with a NUL";
  const char *const headers[] = {"X-Test: abc-123", "Accept: */*", NULL};
  result_t post = {0}, put = {0};

  cr_assert_eq(submit("POST", "/echo", headers, body, sizeof(body) - 1, 0, 0,
                      NULL, &post),
               0);
  cr_assert_eq(submit("PUT", "/echo", NULL, "x", 1, 0, 0, NULL, &put), 0);
  run_until(2, 5000);

  cr_assert_eq(post.status, 0);
  cr_assert_eq(post.code, 200);
  cr_assert_eq(post.body_len, sizeof(body) - 1);
  cr_assert_eq(memcmp(post.body, body, sizeof(body) - 1), 0);
  cr_assert_not_null(strstr(post.ctype, "method=POST"), "%s", post.ctype);
  cr_assert_not_null(strstr(post.ctype, "x-test=abc-123"), "%s", post.ctype);

  cr_assert_eq(put.status, 0);
  cr_assert_str_eq(put.body, "x");
  cr_assert_not_null(strstr(put.ctype, "method=PUT"), "%s", put.ctype);
  result_free(&post);
  result_free(&put);
  finish();
}

Test(http, http_errors_are_responses) {
  result_t r = {0};

  get("/status/404", &r);
  run_until(1, 5000);
  cr_assert_eq(r.status, 0);
  cr_assert_eq(r.code, 404);
  cr_assert_str_eq(r.body, "not found");
  cr_assert_null(r.error);
  result_free(&r);
  finish();
}

Test(http, timeout) {
  result_t r = {0};

  cr_assert_eq(submit(NULL, "/slow", NULL, NULL, 0, 300, 0, NULL, &r), 0);
  uint64_t t0 = uv_hrtime();
  run_until(1, 3000);
  uint64_t ms = (uv_hrtime() - t0) / 1000000;
  cr_assert_eq(r.status, ATL_ETIMEDOUT, "status %d (%s)", r.status, r.error);
  cr_assert_not_null(strstr(r.error, "timed out"), "%s", r.error);
  cr_assert_lt(ms, 1500);
  result_free(&r);
  finish();
}

Test(http, response_too_big) {
  result_t known = {0}, streamed = {0};

  /* With Content-Length, and without it (the write callback's check). */
  cr_assert_eq(submit(NULL, "/big", NULL, NULL, 0, 0, 1 << 20, NULL, &known),
               0);
  cr_assert_eq(
      submit(NULL, "/bigstream", NULL, NULL, 0, 0, 1 << 20, NULL, &streamed),
      0);
  run_until(2, 5000);
  cr_assert_eq(known.status, ATL_E2BIG, "status %d", known.status);
  cr_assert_str_eq(known.error, "response exceeds 1048576 bytes");
  cr_assert_eq(streamed.status, ATL_E2BIG, "status %d", streamed.status);
  cr_assert_str_eq(streamed.error, "response exceeds 1048576 bytes");
  result_free(&known);
  result_free(&streamed);
  finish();
}

Test(http, big_response_within_limit) {
  result_t r = {0};

  get("/big", &r);
  run_until(1, 5000);
  cr_assert_eq(r.status, 0);
  cr_assert_eq(r.body_len, 5u * 1024 * 1024);
  cr_assert_eq(r.body[0], 'x');
  cr_assert_eq(r.body[r.body_len - 1], 'x');
  result_free(&r);
  finish();
}

Test(http, connection_refused) {
  char url[64];
  result_t r = {0};
  atl_http_request_t req = {.struct_size = sizeof(req), .url = url};

  snprintf(url, sizeof(url), "http://127.0.0.1:%d/", closed_port());
  cr_assert_eq(atl_http_request(http, &req, NULL, on_done, &r), 0);
  run_until(1, 5000);
  cr_assert_eq(r.status, ATL_EIO, "status %d", r.status);
  cr_assert_eq(r.code, 0);
  cr_assert_not_null(r.error);
  cr_assert_gt(strlen(r.error), 0);
  result_free(&r);
  finish();
}

Test(http, server_closes_early) {
  result_t r = {0};

  get("/close", &r);
  run_until(1, 5000);
  cr_assert_lt(r.status, 0);
  cr_assert_gt(strlen(r.error), 0);
  result_free(&r);
  finish();
}

Test(http, streaming_receives_chunks_in_order) {
  result_t r = {0};

  cr_assert_eq(submit(NULL, "/chunks", NULL, NULL, 0, 0, 0, on_data, &r), 0);
  run_until(1, 5000);
  cr_assert_eq(r.status, 0);
  cr_assert_eq(r.code, 200);
  cr_assert_eq(r.body_len, 0);
  cr_assert_str_eq(r.ctype, "text/event-stream");
  /* The server pauses between pieces, so they cannot all come as one. */
  cr_assert_geq(r.chunks, 2);
  cr_assert_eq(r.stream_len,
               strlen("part-0\npart-1\npart-2\npart-3\npart-4\n"));
  cr_assert_eq(memcmp(r.stream, "part-0\npart-1\npart-2\npart-3\npart-4\n",
                      r.stream_len),
               0);
  result_free(&r);
  finish();
}

Test(http, streaming_abort) {
  result_t r = {.abort_after = 1};

  cr_assert_eq(submit(NULL, "/chunks", NULL, NULL, 0, 0, 0, on_data, &r), 0);
  run_until(1, 5000);
  cr_assert_eq(r.status, ATL_ECANCELED, "status %d", r.status);
  cr_assert_eq(r.chunks, 1);
  cr_assert_not_null(r.error);
  result_free(&r);
  finish();
}

Test(http, fifty_concurrent_requests) {
  enum { N = 50 };
  result_t r[N];
  char body[N][16];

  memset(r, 0, sizeof(r));
  for (int i = 0; i < N; i++) {
    snprintf(body[i], sizeof(body[i]), "req-%d", i);
    cr_assert_eq(submit("POST", "/echo", NULL, body[i], strlen(body[i]), 0, 0,
                        NULL, &r[i]),
                 0);
  }
  run_until(N, 8000);
  for (int i = 0; i < N; i++) {
    cr_assert_eq(r[i].done, 1);
    cr_assert_eq(r[i].status, 0, "request %d: %s", i, r[i].error);
    cr_assert_str_eq(r[i].body, body[i]);
    result_free(&r[i]);
  }
  finish();
}

enum { THREADS = 4, PER_THREAD = 10 };
static result_t thread_results[THREADS][PER_THREAD];

static void *submitter(void *arg) {
  result_t *mine = arg;

  for (int i = 0; i < PER_THREAD; i++) {
    if (submit(NULL, "/hello", NULL, NULL, 0, 0, 0, NULL, &mine[i]) != 0)
      return (void *)1;
    usleep(1000);
  }
  return NULL;
}

Test(http, requests_from_other_threads) {
  pthread_t t[THREADS];

  for (int i = 0; i < THREADS; i++)
    cr_assert_eq(pthread_create(&t[i], NULL, submitter, thread_results[i]), 0);
  /* The loop runs here while the threads submit. */
  run_until(THREADS * PER_THREAD, 8000);
  for (int i = 0; i < THREADS; i++) {
    void *ret;
    pthread_join(t[i], &ret);
    cr_assert_null(ret);
    for (int j = 0; j < PER_THREAD; j++) {
      cr_assert_eq(thread_results[i][j].done, 1);
      cr_assert_str_eq(thread_results[i][j].body, "hello");
      result_free(&thread_results[i][j]);
    }
  }
  finish();
}

Test(http, close_cancels_requests_in_flight) {
  result_t r[4];

  memset(r, 0, sizeof(r));
  for (int i = 0; i < 3; i++)
    get("/slow", &r[i]);
  /* Let them connect and wait for the answer. */
  run_for(200);
  cr_assert_eq(n_done, 0);
  /* One more that is still in the queue when close comes. */
  get("/slow", &r[3]);
  atl_http_close(http);
  /* Close reports every request synchronously. */
  cr_assert_eq(n_done, 4);
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(r[i].done, 1);
    cr_assert_eq(r[i].status, ATL_ECANCELED);
    cr_assert_not_null(r[i].error);
    result_free(&r[i]);
  }
  /* A closed client refuses new work until it is gone. */
  result_t late = {0};
  cr_assert_eq(submit(NULL, "/hello", NULL, NULL, 0, 0, 0, NULL, &late),
               ATL_ESHUTDOWN);
  cr_assert_eq(late.done, 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  cr_assert_eq(uv_loop_close(&loop), 0);
}

/* A completion callback that submits the next request, three times. */
static result_t chain[3];
static int chain_next;

static void on_chain(const atl_http_response_t *resp, void *user) {
  on_done(resp, user);
  if (++chain_next < 3) {
    char url[128];
    atl_http_request_t req = {.struct_size = sizeof(req), .url = url};
    url_of(url, sizeof(url), "/hello");
    cr_assert_eq(
        atl_http_request(http, &req, NULL, on_chain, &chain[chain_next]), 0);
  }
}

Test(http, callback_submits_again) {
  char url[128];
  atl_http_request_t req = {.struct_size = sizeof(req), .url = url};

  url_of(url, sizeof(url), "/hello");
  cr_assert_eq(atl_http_request(http, &req, NULL, on_chain, &chain[0]), 0);
  run_until(3, 5000);
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(chain[i].status, 0);
    cr_assert_str_eq(chain[i].body, "hello");
    result_free(&chain[i]);
  }
  finish();
}

static void on_done_then_close(const atl_http_response_t *resp, void *user) {
  on_done(resp, user);
  atl_http_close(http);
}

Test(http, close_from_completion_callback) {
  char url[128];
  result_t first = {0}, slow = {0};
  atl_http_request_t req = {.struct_size = sizeof(req), .url = url};

  get("/slow", &slow);
  url_of(url, sizeof(url), "/hello");
  cr_assert_eq(atl_http_request(http, &req, NULL, on_done_then_close, &first),
               0);
  run_until(2, 5000);
  cr_assert_eq(first.status, 0);
  cr_assert_eq(slow.status, ATL_ECANCELED);
  result_free(&first);
  result_free(&slow);
  http = NULL;
  uv_run(&loop, UV_RUN_DEFAULT);
  cr_assert_eq(uv_loop_close(&loop), 0);
}

/* A data callback that closes the client: curl is on the stack then, so the
 * close has to wait until curl returns. */
static int on_data_then_close(const char *data, size_t len, void *user) {
  on_data(data, len, user);
  atl_http_close(http);
  return 0;
}

Test(http, close_from_data_callback) {
  result_t r = {0};

  cr_assert_eq(
      submit(NULL, "/chunks", NULL, NULL, 0, 0, 0, on_data_then_close, &r), 0);
  run_until(1, 5000);
  cr_assert_eq(r.status, ATL_ECANCELED);
  cr_assert_eq(r.chunks, 1);
  result_free(&r);
  http = NULL;
  uv_run(&loop, UV_RUN_DEFAULT);
  cr_assert_eq(uv_loop_close(&loop), 0);
}

Test(http, invalid_requests) {
  result_t r = {0};
  atl_http_request_t req = {.struct_size = sizeof(req)};

  cr_assert_eq(atl_http_request(http, &req, NULL, on_done, &r), ATL_EINVAL);
  req.url = "http://127.0.0.1/";
  cr_assert_eq(atl_http_request(http, &req, NULL, NULL, &r), ATL_EINVAL);
  req.struct_size = 4;
  cr_assert_eq(atl_http_request(http, &req, NULL, on_done, &r), ATL_EINVAL);
  /* Only http and https are allowed. */
  req.struct_size = sizeof(req);
  req.url = "file:///etc/passwd";
  cr_assert_eq(atl_http_request(http, &req, NULL, on_done, &r), 0);
  run_until(1, 5000);
  cr_assert_eq(r.status, ATL_EIO);
  cr_assert_eq(r.body_len, 0);
  result_free(&r);
  finish();
}
