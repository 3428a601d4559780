/* bench/sse: many event streams through nginx and atelier-fcgi, fed by
 * sessions that produce events.
 *
 *   sse --port P --socket API_SOCK [--streams 1000] [--sessions 100]
 *       [--seconds 10] [--rate 1000] [--pids DAEMON,BRIDGE]
 *       [--token-file DATA/store/token]
 *
 * It makes --sessions sessions (session.create on api.sock), opens
 * --streams event streams on nginx (GET /api/sessions/ID/events, stream i
 * on session i mod sessions, resuming after the session.created event),
 * waits until every stream is held (its headers and first line came), then
 * for --seconds calls the echo tool on the sessions in turn, --rate calls
 * a second in all (tool.call on api.sock, pipelined; each commits one
 * tool.finished event). Every stream checks that its ids follow one
 * another (a gap is a lost event, a repeat a doubled one) and records each
 * event's delivery latency: the time it arrived minus its "ts" (stamped
 * when the daemon emitted it, milliseconds). At the end it waits until
 * every stream has its session's last event, then prints one line:
 * streams held, events, deliveries, latency percentiles, lost, doubled,
 * and the RSS of atelierd and atelier-fcgi (--pids). The streams carry the
 * HTTP API's token (--token-file, atelierd's <data dir>/token) and the
 * stack's own Host, as every client of the API must.
 *
 * One thread, epoll; the streams are HTTP/1.0 so that nginx sends the body
 * as it comes, without chunked framing.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"

typedef struct {
  int fd;
  int session;
  int held;       /* the response's headers came */
  long long last; /* the last id seen */
  long long lost, doubled;
  char *buf;
  size_t len, cap;
  int header_done;
} stream_t;

typedef struct {
  char id[33];
  long long expect; /* the seq of its newest event, as far as we know */
  double *acked;    /* by seq: when the call that made it was answered */
  size_t n_acked;
} session_t;

static double real_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* "2026-11-21T15:42:18.123Z" as milliseconds since the epoch. */
static double parse_ts(const char *s) {
  struct tm tm;
  memset(&tm, 0, sizeof(tm));
  int ms = 0;
  if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &tm.tm_year, &tm.tm_mon,
             &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7)
    return -1;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return (double)timegm(&tm) * 1e3 + ms;
}

static int tcp_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
    perror("sse: connect to nginx");
    exit(2);
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

static double *lat;
static size_t nlat, caplat;
/* From the call's answer (sent once the event is committed) to the
 * stream: the delivery after the commit. An event that came before its
 * call's answer counts 0. */
static double *lat_ack;
static size_t nlat_ack, caplat_ack;
static int measuring;

static void push(double **a, size_t *n, size_t *cap, double v) {
  if (*n == *cap) {
    *cap = *cap ? 2 * *cap : 1 << 16;
    *a = realloc(*a, *cap * sizeof(**a));
  }
  (*a)[(*n)++] = v;
}

/* Consumes whole lines of a stream's body. */
static void consume(stream_t *s, session_t *se) {
  char *p = s->buf, *end = s->buf + s->len, *nl;
  if (!s->header_done) {
    char *h = memmem(p, s->len, "\r\n\r\n", 4);
    if (h == NULL)
      return;
    if (strncmp(p, "HTTP/1.1 200", 12) != 0 &&
        strncmp(p, "HTTP/1.0 200", 12) != 0) {
      fprintf(stderr, "sse: a stream was refused: %.60s\n", p);
      exit(2);
    }
    s->header_done = 1;
    s->held = 1;
    p = h + 4;
  }
  while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
    *nl = '\0';
    if (strncmp(p, "id: ", 4) == 0) {
      long long id = strtoll(p + 4, NULL, 10);
      if (id <= s->last)
        s->doubled++;
      else {
        s->lost += id - s->last - 1;
        s->last = id;
        if (measuring) {
          double t = id < (long long)se->n_acked ? se->acked[id] : 0;
          double d = t > 0 ? real_ms() - t : 0;
          push(&lat_ack, &nlat_ack, &caplat_ack, d > 0 ? d : 0);
        }
      }
    } else if (strncmp(p, "data: ", 6) == 0) {
      const char *ts = strstr(p, "\"ts\":\"");
      double t = ts ? parse_ts(ts + 6) : -1;
      if (t > 0 && measuring)
        push(&lat, &nlat, &caplat, real_ms() - t);
    }
    p = nl + 1;
  }
  s->len = (size_t)(end - p);
  memmove(s->buf, p, s->len);
}

int main(int argc, char **argv) {
  int port = 0, nstreams = 1000, nsessions = 100;
  double seconds = 10, rate = 1000;
  const char *sock = NULL, *token_file = NULL;
  long pid_daemon = 0, pid_bridge = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--port") && i + 1 < argc)
      port = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--socket") && i + 1 < argc)
      sock = argv[++i];
    else if (!strcmp(argv[i], "--streams") && i + 1 < argc)
      nstreams = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--sessions") && i + 1 < argc)
      nsessions = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--rate") && i + 1 < argc)
      rate = atof(argv[++i]);
    else if (!strcmp(argv[i], "--pids") && i + 1 < argc)
      sscanf(argv[++i], "%ld,%ld", &pid_daemon, &pid_bridge);
    else if (!strcmp(argv[i], "--token-file") && i + 1 < argc)
      token_file = argv[++i];
    else {
      fprintf(stderr, "usage: sse --port P --socket API_SOCK [--streams N] "
                      "[--sessions N] [--seconds S] [--rate R] "
                      "[--pids DAEMON,BRIDGE] [--token-file PATH]\n");
      return 2;
    }
  }
  if (port <= 0 || sock == NULL || nstreams < 1 || nsessions < 1 || rate <= 0) {
    fprintf(stderr, "sse: --port and --socket are required\n");
    return 2;
  }
  /* "Authorization: Bearer <64 hex>\r\n", or nothing with auth off. */
  char auth[128] = "";
  if (token_file != NULL) {
    FILE *f = fopen(token_file, "r");
    char tok[80] = "";
    if (f == NULL || fscanf(f, "%64s", tok) != 1) {
      fprintf(stderr, "sse: cannot read the token from %s\n", token_file);
      return 2;
    }
    fclose(f);
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n", tok);
  }
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);

  /* The sessions. */
  int api = bench_dial(sock);
  session_t *ss = calloc((size_t)nsessions, sizeof(*ss));
  char line[4096];
  for (int i = 0; i < nsessions; i++) {
    bench_rpc(api,
              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session.create\"}\n",
              line, sizeof(line));
    const char *id = strstr(line, "\"id\":\"");
    if (id == NULL) {
      fprintf(stderr, "sse: session.create: %s\n", line);
      return 2;
    }
    memcpy(ss[i].id, id + 6, 32);
    ss[i].expect = 1; /* session.created */
  }

  /* The streams. */
  int ep = epoll_create1(EPOLL_CLOEXEC);
  stream_t *st = calloc((size_t)nstreams, sizeof(*st));
  double t_open = mono_s();
  for (int i = 0; i < nstreams; i++) {
    stream_t *s = &st[i];
    s->session = i % nsessions;
    s->last = 1;
    s->cap = 1 << 16;
    s->buf = malloc(s->cap);
    s->fd = tcp_connect(port);
    char req[384];
    int n = snprintf(req, sizeof(req),
                     "GET /api/sessions/%s/events HTTP/1.0\r\n"
                     "Host: 127.0.0.1:%d\r\n%sLast-Event-ID: 1\r\n\r\n",
                     ss[s->session].id, port, auth);
    if (write(s->fd, req, (size_t)n) != n) {
      perror("sse: request");
      return 2;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = s};
    epoll_ctl(ep, EPOLL_CTL_ADD, s->fd, &ev);
  }
  struct epoll_event api_ev = {.events = EPOLLIN, .data.ptr = NULL};
  fcntl(api, F_SETFL, fcntl(api, F_GETFL) | O_NONBLOCK);
  epoll_ctl(ep, EPOLL_CTL_ADD, api, &api_ev);

  struct epoll_event evs[512];
  int held = 0, phase = 0; /* 0 opening, 1 generating, 2 draining */
  double t_gen = 0, next_call = 0, interval = 1.0 / rate, t_drain = 0;
  long long sent = 0, answered = 0, failed = 0;
  int rr = 0;
  char apibuf[1 << 16];
  size_t apilen = 0;
  for (;;) {
    double now = mono_s();
    if (phase == 0 && (held == nstreams || now - t_open > 60)) {
      phase = 1;
      t_gen = next_call = now;
      fprintf(stderr, "sse: %d of %d streams held after %.1f s\n", held,
              nstreams, now - t_open);
      measuring = 1; /* only events made from here on */
    }
    if (phase == 1) {
      /* Calls due by now, pipelined. */
      char out[1 << 14];
      size_t ol = 0;
      while (next_call <= now && ol + 256 < sizeof(out)) {
        session_t *se = &ss[rr++ % nsessions];
        ol += (size_t)snprintf(
            out + ol, sizeof(out) - ol,
            "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tool.call\","
            "\"params\":{\"session\":\"%s\",\"name\":\"echo\",\"arguments\":"
            "{\"text\":\"x\"}}}\n",
            (int)(se - ss), se->id);
        sent++;
        next_call += interval;
      }
      size_t off = 0;
      while (off < ol) {
        ssize_t w = write(api, out + off, ol - off);
        if (w < 0 && errno == EAGAIN) {
          usleep(100);
          continue;
        }
        if (w <= 0) {
          perror("sse: tool.call");
          return 2;
        }
        off += (size_t)w;
      }
      if (now - t_gen >= seconds) {
        phase = 2;
        t_drain = now;
      }
    }
    if (phase == 2 && answered + failed == sent) {
      int done = 1;
      for (int i = 0; i < nstreams && done; i++)
        done = st[i].last >= ss[st[i].session].expect;
      if (done || now - t_drain > 20)
        break;
    }
    int timeout = phase == 1 ? 1 : 100;
    int k = epoll_wait(ep, evs, 512, timeout);
    for (int e = 0; e < k; e++) {
      stream_t *s = evs[e].data.ptr;
      if (s == NULL) {
        /* Answers to tool.call: one line each; the id is the session. */
        ssize_t r = read(api, apibuf + apilen, sizeof(apibuf) - apilen);
        if (r <= 0)
          continue;
        apilen += (size_t)r;
        char *p = apibuf, *nl;
        while ((nl = memchr(p, '\n', apilen - (size_t)(p - apibuf)))) {
          *nl = '\0';
          const char *idp = strstr(p, "\"id\":");
          int sid = idp ? atoi(idp + 5) : -1;
          if (strstr(p, "\"success\":true") && sid >= 0 && sid < nsessions) {
            session_t *se = &ss[sid];
            se->expect++;
            if ((size_t)se->expect >= se->n_acked) {
              size_t n = se->n_acked ? 2 * se->n_acked : 256;
              while (n <= (size_t)se->expect)
                n *= 2;
              se->acked = realloc(se->acked, n * sizeof(double));
              memset(se->acked + se->n_acked, 0,
                     (n - se->n_acked) * sizeof(double));
              se->n_acked = n;
            }
            se->acked[se->expect] = real_ms();
            answered++;
          } else {
            failed++;
            if (failed <= 3)
              fprintf(stderr, "sse: tool.call failed: %.200s\n", p);
          }
          p = nl + 1;
        }
        apilen -= (size_t)(p - apibuf);
        memmove(apibuf, p, apilen);
        continue;
      }
      if (s->cap - s->len < 8192) {
        s->cap *= 2;
        s->buf = realloc(s->buf, s->cap);
      }
      ssize_t r = read(s->fd, s->buf + s->len, s->cap - s->len);
      if (r <= 0) {
        if (r < 0 && errno == EAGAIN)
          continue;
        fprintf(stderr, "sse: a stream ended early\n");
        epoll_ctl(ep, EPOLL_CTL_DEL, s->fd, NULL);
        continue;
      }
      int was = s->held;
      s->len += (size_t)r;
      consume(s, &ss[s->session]);
      held += s->held - was;
    }
  }
  long long lost = 0, doubled = 0, deliveries = 0;
  for (int i = 0; i < nstreams; i++) {
    long long behind = ss[st[i].session].expect - st[i].last;
    lost += st[i].lost + (behind > 0 ? behind : 0);
    doubled += st[i].doubled;
    deliveries += st[i].last - 1;
  }
  qsort(lat, nlat, sizeof(*lat), cmp_d);
  qsort(lat_ack, nlat_ack, sizeof(*lat_ack), cmp_d);
#define PCT(q) (nlat ? lat[(size_t)((double)(nlat - 1) * (q))] : 0.0)
#define PCTA(q)                                                                \
  (nlat_ack ? lat_ack[(size_t)((double)(nlat_ack - 1) * (q))] : 0.0)
  printf("streams=%d held=%d sessions=%d seconds=%.1f events=%lld "
         "failed_calls=%lld deliveries=%lld p50_ms=%.1f p90_ms=%.1f "
         "p99_ms=%.1f p999_ms=%.1f max_ms=%.1f commit_p50_ms=%.1f "
         "commit_p99_ms=%.1f lost=%lld doubled=%lld "
         "daemon_rss_mb=%.1f bridge_rss_mb=%.1f\n",
         nstreams, held, nsessions, seconds, answered, failed, deliveries,
         PCT(0.5), PCT(0.9), PCT(0.99), PCT(0.999), nlat ? lat[nlat - 1] : 0.0,
         PCTA(0.5), PCTA(0.99), lost, doubled,
         pid_daemon ? bench_rss_kb(pid_daemon) / 1024.0 : 0.0,
         pid_bridge ? bench_rss_kb(pid_bridge) / 1024.0 : 0.0);
  return lost || doubled || held < nstreams ? 1 : 0;
}
