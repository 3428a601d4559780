/* bench/agent: the agent loop's own time per model turn. N clients, each
 * on its own session and its own connection to api.sock, send a message
 * ("go") and follow the session's events until the run completes, then
 * send the next one, for a fixed time.
 *
 * Against bench/agent-fake, every run is two model turns and one call of
 * the echo tool, and the provider answers in microseconds, so the wall
 * time of a run divided by its turns is atelierd's time per turn: the
 * request built from the history, the HTTP exchange, the stream parsed,
 * the events committed (with store.synchronous = full, fsynced), the tool
 * call, and the events read back by the client. With many sessions it
 * also holds the time a turn waits while the daemon serves the others.
 * agent-fake reports its own share (GET /stats).
 *
 * One thread drives every client with epoll, so the benchmark itself
 * costs little CPU next to the daemon and the fake on a small machine.
 *
 *   agent --socket PATH [--sessions N] [--seconds S] [--runs-per-session R]
 *         [--rate T]
 *
 * Every run adds four messages to its session's history, which goes to
 * the provider whole at every turn, so the cost of a turn grows with the
 * history. By default each client keeps its session for the whole time;
 * with --runs-per-session R it moves to a new session after R runs, which
 * bounds the history (4R messages) and keeps rounds of different lengths
 * or throughputs comparable.
 *
 * By default the clients run a closed loop: each sends its next message as
 * soon as its run ends, so the daemon is always saturated and, by Little's
 * law, a turn's wall time is mostly the time it waits behind the other
 * sessions' turns (100 sessions / 2,500 turns/s = 40 ms). --rate T runs
 * an open loop instead: the clients together start T/2 runs a second (T
 * turns), each on its own fixed schedule, whatever the daemon's speed; a
 * run's time counts from when it was due, not from when it went out, so a
 * daemon that falls behind is charged for the wait. At a rate the daemon
 * sustains, that measures the time a turn takes under load rather than
 * the length of the queue.
 *
 * Besides the wall time, it reports the CPU time atelierd spent per turn
 * (all its threads, and its loop thread alone), read from /proc: the
 * overhead itself, apart from the time a turn waits for others. It ends
 * with atelierd's RSS, which includes the histories of every session still
 * in its cache (this round's and earlier ones').
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"

/* How long one events.read may wait for the next event. A run takes
 * milliseconds; this only bounds how long a stuck run goes unnoticed. */
#define WAIT_MS 10000

typedef struct {
  int fd;
  char session[33];
  char *buf;
  size_t len, cap;
  int ack_due;           /* the next line answers session.send */
  int creating;          /* the next line answers session.create */
  unsigned session_runs; /* runs completed on the current session */
  long long after;       /* the seq of the last event seen */
  uint64_t started_ns;   /* when the run went out, or was due (--rate) */
  uint64_t due_ns;       /* --rate: when the next run is due */
  int waiting;           /* --rate: the next run is not due yet */
  unsigned polls;        /* events.read answers of the run in flight */
} client_t;

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static long daemon_pid(int fd) {
  char buf[65536];
  bench_rpc(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"daemon.info\"}\n",
            buf, sizeof(buf));
  char *p = strstr(buf, "\"pid\":");
  return p ? strtol(p + 6, NULL, 10) : -1;
}

/* utime + stime of a process or thread, in clock ticks, from its stat
 * file; -1 if it cannot be read. */
static long long cpu_ticks(const char *path) {
  char buf[1024];
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
  if (f)
    fclose(f);
  buf[n] = '\0';
  /* The command name, in parentheses, may hold spaces: count the fields
   * from the last ')'. utime and stime are the 14th and 15th. */
  char *p = strrchr(buf, ')');
  long long ut, st;
  if (p == NULL || sscanf(p + 1,
                          " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
                          "%lld %lld",
                          &ut, &st) != 2)
    return -1;
  return ut + st;
}

/* The last occurrence of needle in the n bytes at s, or NULL. */
static const char *last_of(const char *s, size_t n, const char *needle) {
  size_t k = strlen(needle);
  const char *last = NULL;
  for (const char *p = s; (p = memmem(p, n - (size_t)(p - s), needle, k));
       p += k)
    last = p;
  return last;
}

/* The event that ended the run in an events.read answer, or NULL. Only
 * one run is in flight per session, so the first end in the answer is
 * this run's. run.started and run.interrupted do not end a run; every
 * other run.* event does. */
static const char *run_end(const char *s, size_t n) {
  static const char key[] = "\"type\":\"run.";
  const size_t k = sizeof(key) - 1;
  for (const char *p = s; (p = memmem(p, n - (size_t)(p - s), key, k));
       p += k) {
    const char *name = p + k;
    size_t left = n - (size_t)(name - s);
    if (!(left >= 8 && memcmp(name, "started\"", 8) == 0) &&
        !(left >= 12 && memcmp(name, "interrupted\"", 12) == 0))
      return p;
  }
  return NULL;
}

/* A new session for the client, asked for without waiting: the answer
 * is handled with the others, and the first run follows it. */
static void send_create(client_t *c) {
  static const char req[] =
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session.create\"}\n";
  c->creating = 1;
  bench_write_all(c->fd, req, sizeof(req) - 1);
}

static void send_poll(client_t *c) {
  char req[256];
  int n = snprintf(req, sizeof(req),
                   "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"events.read\","
                   "\"params\":{\"session\":\"%s\",\"after_seq\":%lld,"
                   "\"wait_ms\":%d}}\n",
                   c->session, c->after, WAIT_MS);
  bench_write_all(c->fd, req, (size_t)n);
}

/* session.send and the first events.read go out together: responses come
 * back in order, so the read is parsed after the send's answer, and the
 * run costs no extra round trip to start. */
static void send_run_at(client_t *c, uint64_t started_ns) {
  char req[512];
  int n = snprintf(req, sizeof(req),
                   "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session.send\","
                   "\"params\":{\"session\":\"%s\",\"text\":\"go\"}}\n"
                   "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"events.read\","
                   "\"params\":{\"session\":\"%s\",\"after_seq\":%lld,"
                   "\"wait_ms\":%d}}\n",
                   c->session, c->session, c->after, WAIT_MS);
  c->started_ns = started_ns;
  c->ack_due = 1;
  c->polls = 0;
  bench_write_all(c->fd, req, (size_t)n);
}

static void send_run(client_t *c) {
  send_run_at(c, bench_now_ns());
}

/* --rate: the next run of c goes out when due (at once if it is late);
 * its time counts from when it was due. */
static void schedule_run(client_t *c, uint64_t interval_ns) {
  c->due_ns += interval_ns;
  if (c->due_ns > bench_now_ns()) {
    c->waiting = 1;
    return;
  }
  send_run_at(c, c->due_ns);
}

int main(int argc, char **argv) {
  const char *sock = NULL;
  int nsessions = 100;
  double seconds = 5;
  unsigned per_session = 0;
  double rate = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc)
      sock = argv[++i];
    else if (strcmp(argv[i], "--sessions") == 0 && i + 1 < argc)
      nsessions = atoi(argv[++i]);
    else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
      seconds = atof(argv[++i]);
    else if (strcmp(argv[i], "--runs-per-session") == 0 && i + 1 < argc)
      per_session = (unsigned)atoi(argv[++i]);
    else if (strcmp(argv[i], "--rate") == 0 && i + 1 < argc)
      rate = atof(argv[++i]);
    else {
      fprintf(stderr, "usage: agent --socket PATH [--sessions N] "
                      "[--seconds S] [--runs-per-session R] [--rate T]\n");
      return 2;
    }
  }
  if (sock == NULL || nsessions < 1 || seconds <= 0 || rate < 0) {
    fprintf(stderr, "agent: --socket is required\n");
    return 2;
  }

  int ctl = bench_dial(sock);
  long pid = daemon_pid(ctl);
  char proc_path[64], loop_path[96];
  snprintf(proc_path, sizeof(proc_path), "/proc/%ld/stat", pid);
  /* The main thread runs the event loop. */
  snprintf(loop_path, sizeof(loop_path), "/proc/%ld/task/%ld/stat", pid, pid);

  client_t *cl = calloc((size_t)nsessions, sizeof(*cl));
  int ep = epoll_create1(EPOLL_CLOEXEC);
  for (int i = 0; i < nsessions; i++) {
    cl[i].fd = bench_dial(sock);
    bench_new_session(cl[i].fd, cl[i].session);
    /* session.created, seq 1, is committed before session.create answers:
     * the events of the first run come after it. */
    cl[i].after = 1;
    cl[i].cap = 65536;
    cl[i].buf = malloc(cl[i].cap);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &cl[i]};
    epoll_ctl(ep, EPOLL_CTL_ADD, cl[i].fd, &ev);
  }

  /* Per run: its wall time divided by its turns. */
  size_t cap = 1u << 20, n = 0;
  uint64_t *lat = malloc(cap * sizeof(*lat));
  long errors = 0;
  unsigned long long turns = 0, polls = 0;
  long long cpu0 = cpu_ticks(proc_path), loop0 = cpu_ticks(loop_path);
  /* --rate: every run is two turns; each client's runs are nsessions
   * intervals of the whole apart, the clients spread evenly over one. */
  uint64_t interval_ns =
      rate > 0 ? (uint64_t)(2e9 * (double)nsessions / rate) : 0;
  uint64_t t0 = bench_now_ns();
  for (int i = 0; i < nsessions; i++) {
    if (rate > 0) {
      cl[i].due_ns = t0 + interval_ns * (uint64_t)i / (uint64_t)nsessions;
      cl[i].waiting = 1;
    } else {
      send_run(&cl[i]);
    }
  }
  uint64_t start = bench_now_ns(), end = start + (uint64_t)(seconds * 1e9);
  int active = nsessions;
  struct epoll_event evs[256];
  while (active > 0) {
    /* Sleep until the next due run at the latest (to the nanosecond:
     * waking late would be charged to the daemon). */
    uint64_t wake = bench_now_ns() + 1000000000u;
    for (int i = 0; rate > 0 && i < nsessions; i++)
      if (cl[i].waiting && cl[i].due_ns < wake)
        wake = cl[i].due_ns;
    uint64_t now = bench_now_ns(), left = wake > now ? wake - now : 0;
    struct timespec ts = {.tv_sec = (time_t)(left / 1000000000u),
                          .tv_nsec = (long)(left % 1000000000u)};
    int k = epoll_pwait2(ep, evs, 256, &ts, NULL);
    if (k < 0 && errno == EINTR)
      continue;
    now = bench_now_ns();
    for (int i = 0; rate > 0 && i < nsessions; i++)
      if (cl[i].waiting && cl[i].due_ns <= now) {
        cl[i].waiting = 0;
        send_run_at(&cl[i], cl[i].due_ns);
      }
    for (int e = 0; e < k; e++) {
      client_t *c = evs[e].data.ptr;
      if (c->cap - c->len < 16384) {
        c->cap *= 2;
        c->buf = realloc(c->buf, c->cap);
      }
      ssize_t r = read(c->fd, c->buf + c->len, c->cap - c->len);
      if (r <= 0) {
        fprintf(stderr, "agent: connection lost\n");
        return 2;
      }
      c->len += (size_t)r;
      /* Each line is one answer; a read may end in the middle of one. */
      char *line = c->buf, *nl;
      while ((nl = memchr(line, '\n', c->len - (size_t)(line - c->buf)))) {
        size_t ll = (size_t)(nl - line);
        char *cur = line;
        line = nl + 1;
        if (memmem(cur, ll, "\"error\":{", 9) != NULL) {
          /* A JSON-RPC error: the run cannot be followed any further. */
          fprintf(stderr, "agent: %.*s\n", (int)ll, cur);
          return 2;
        }
        if (c->creating) {
          const char *id = memmem(cur, ll, "\"id\":\"", 6);
          if (id == NULL || ll - (size_t)(id - cur) < 6 + 32) {
            fprintf(stderr, "agent: unexpected answer: %.*s\n", (int)ll, cur);
            return 2;
          }
          memcpy(c->session, id + 6, 32);
          c->creating = 0;
          c->session_runs = 0;
          c->after = 1;
          if (rate > 0)
            schedule_run(c, interval_ns);
          else
            send_run(c);
          continue;
        }
        if (c->ack_due) {
          c->ack_due = 0;
          continue;
        }
        c->polls++;
        const char *seq = last_of(cur, ll, "{\"seq\":");
        if (seq != NULL)
          c->after = strtoll(seq + 7, NULL, 10);
        const char *done = run_end(cur, ll);
        if (done == NULL) {
          send_poll(c);
          continue;
        }
        uint64_t t = bench_now_ns();
        /* run.error, run.limit_reached and run.cancelled are errors. */
        if (ll - (size_t)(done - cur) < 22 ||
            memcmp(done + 12, "completed\"", 10) != 0)
          errors++;
        const char *tp =
            memmem(done, ll - (size_t)(done - cur), "\"turns\":", 8);
        long nt = tp ? strtol(tp + 8, NULL, 10) : 0;
        if (nt > 0) {
          if (n == cap) {
            cap *= 2;
            lat = realloc(lat, cap * sizeof(*lat));
          }
          lat[n++] = (t - c->started_ns) / (uint64_t)nt;
          turns += (unsigned long long)nt;
        }
        polls += c->polls;
        c->session_runs++;
        if (t >= end)
          active--;
        else if (per_session > 0 && c->session_runs >= per_session)
          send_create(c);
        else if (rate > 0)
          schedule_run(c, interval_ns);
        else
          send_run(c);
      }
      c->len -= (size_t)(line - c->buf);
      memmove(c->buf, line, c->len);
    }
    if (k == 0 && bench_now_ns() > end + (uint64_t)WAIT_MS * 2000000u) {
      fprintf(stderr, "agent: %d runs did not finish\n", active);
      return 2;
    }
  }
  double elapsed = (double)(bench_now_ns() - start) / 1e9;
  long long cpu1 = cpu_ticks(proc_path), loop1 = cpu_ticks(loop_path);
  double tick_ms = 1000.0 / (double)sysconf(_SC_CLK_TCK);
  double per_turn = turns ? tick_ms / (double)turns : 0;
  /* Each run adds the user's message, two model messages and one tool
   * message to the history. */
  double history = 0;
  for (int i = 0; i < nsessions; i++)
    history += 4.0 * cl[i].session_runs / nsessions;
  qsort(lat, n, sizeof(*lat), cmp_u64);
#define PCT(q) (n ? lat[(size_t)((double)n * (q))] / 1e6 : 0.0)
  if (rate > 0)
    printf("rate=%.0f ", rate);
  printf("sessions=%d runs=%zu turns=%llu errors=%ld seconds=%.2f "
         "turns_per_s=%.0f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f "
         "p999_ms=%.3f max_ms=%.3f polls_per_run=%.1f history=%.0f "
         "cpu_ms_per_turn=%.3f loop_cpu_ms_per_turn=%.3f "
         "daemon_rss_mb=%.1f\n",
         nsessions, n, turns, errors, elapsed, (double)turns / elapsed,
         PCT(0.50), PCT(0.90), PCT(0.99), PCT(0.999),
         n ? lat[n - 1] / 1e6 : 0.0, n ? (double)polls / (double)n : 0.0,
         history, (double)(cpu1 - cpu0) * per_turn,
         (double)(loop1 - loop0) * per_turn,
         (double)bench_rss_kb(pid) / 1024.0);
  for (int i = 0; i < nsessions; i++) {
    close(cl[i].fd);
    free(cl[i].buf);
  }
  free(cl);
  free(lat);
  close(ctl);
  return errors ? 1 : 0;
}
