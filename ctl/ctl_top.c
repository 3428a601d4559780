/* atelierctl top: a live view of a running atelierd, refreshed every
 * second, from its admin socket (stats and sessions): calls, turns and
 * tokens per second, the busiest tools and models with their p99, the
 * render farm, and the sessions with what each is doing. Like top(1), q
 * quits; so do Ctrl-C and the daemon going away.
 */
#include "atl-build.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

static volatile sig_atomic_t stop_top;
static void on_stop(int sig) {
  (void)sig;
  stop_top = 1;
}

static json_object *get(json_object *o, const char *k) {
  json_object *v = NULL;
  return o && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static int64_t num(json_object *o, const char *k) {
  return json_object_get_int64(get(o, k));
}

static double dbl(json_object *o, const char *k) {
  return json_object_get_double(get(o, k));
}

/* A family's total of one member over its series. */
static int64_t total(json_object *series, const char *family,
                     const char *member) {
  int64_t t = 0;
  json_object *fam = get(series, family);
  if (fam == NULL) /* nothing of that family yet */
    return 0;
  json_object_object_foreach(fam, label, s) {
    (void)label;
    t += num(s, member);
  }
  return t;
}

typedef struct {
  const char *label;
  int64_t calls;
  double p99;
} row_t;

static int by_calls(const void *a, const void *b) {
  const row_t *x = a, *y = b;
  return (y->calls > x->calls) - (y->calls < x->calls);
}

/* The busiest series of a family, at most max, with their p99. */
static void busiest(json_object *series, const char *family, const char *name,
                    int max) {
  row_t rows[64];
  int n = 0;
  json_object *fam = get(series, family);
  if (fam != NULL) {
    json_object_object_foreach(fam, label, s) {
      if (n < 64 && num(s, "calls") > 0)
        rows[n++] = (row_t){label, num(s, "calls"), dbl(s, "p99_ms")};
    }
  }
  qsort(rows, (size_t)n, sizeof(rows[0]), by_calls);
  printf("%-28s %10s %10s\n", name, "CALLS", "P99_MS");
  for (int i = 0; i < n && i < max; i++)
    printf("%-28.28s %10lld %10.2f\n", rows[i].label, (long long)rows[i].calls,
           rows[i].p99);
}

static int rows_of_terminal(void) {
  struct winsize ws;
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 10)
    return ws.ws_row;
  return 40;
}

static void draw(json_object *info, json_object *stats, json_object *sess,
                 json_object *prev, double dt) {
  json_object *series = get(stats, "series");
  json_object *pseries = get(prev, "series");
  int64_t calls = total(series, "tool", "calls");
  int64_t turns = total(series, "model", "calls");
  int64_t tin = total(series, "model", "tokens_in");
  int64_t tout = total(series, "model", "tokens_out");
  double rate = dt > 0 ? 1.0 / dt : 0;
  printf("\033[H\033[2J");
  printf("atelierd %s  pid %lld  up %.0f s  sessions %lld loaded, %lld "
         "stored\n",
         json_object_get_string(get(info, "version")),
         (long long)num(info, "pid"), dbl(stats, "uptime_s"),
         (long long)num(sess, "loaded"), (long long)num(sess, "stored"));
  printf("calls/s %.1f  turns/s %.1f  tokens/s in %.0f out %.0f  events/s "
         "%.1f  commits/s %.1f\n",
         prev ? (double)(calls - total(pseries, "tool", "calls")) * rate : 0,
         prev ? (double)(turns - total(pseries, "model", "calls")) * rate : 0,
         prev ? (double)(tin - total(pseries, "model", "tokens_in")) * rate : 0,
         prev ? (double)(tout - total(pseries, "model", "tokens_out")) * rate
              : 0,
         prev ? (double)(num(get(stats, "events"), "emitted") -
                         num(get(prev, "events"), "emitted")) *
                    rate
              : 0,
         prev ? (double)(total(series, "commit", "calls") -
                         total(pseries, "commit", "calls")) *
                    rate
              : 0);
  json_object *render = get(stats, "render");
  json_object *workers = get(render, "workers");
  printf("render farm: %s, %zu workers, %lld jobs running, %lld worker "
         "restarts;  trace subscribers %lld\n\n",
         json_object_get_boolean(get(render, "running")) ? "up" : "off",
         workers ? json_object_array_length(workers) : 0,
         (long long)num(render, "active_jobs"),
         (long long)num(render, "restarts"),
         (long long)num(get(stats, "trace"), "subscribers"));
  busiest(series, "tool", "TOOL", 5);
  putchar('\n');
  busiest(series, "model", "MODEL", 3);
  putchar('\n');
  printf("%-32s  %-8s  %-20s  %5s  %9s  %9s\n", "SESSION", "STATE", "TOOL",
         "TURNS", "TOKENS_IN", "TOKENS_OUT");
  json_object *list = get(sess, "sessions");
  size_t n = list ? json_object_array_length(list) : 0;
  int room = rows_of_terminal() - 20;
  /* The loaded sessions first: those are the ones doing something. */
  for (int pass = 0; pass < 2 && room > 0; pass++) {
    for (size_t i = 0; i < n && room > 0; i++) {
      json_object *s = json_object_array_get_idx(list, i);
      int loaded = json_object_get_boolean(get(s, "loaded"));
      if (loaded != (pass == 0))
        continue;
      json_object *ag = get(s, "agent"), *tool = get(s, "tool");
      printf("%-32s  %-8s  %-20.20s  %5lld  %9lld  %9lld\n",
             json_object_get_string(get(s, "id")),
             json_object_get_string(get(s, "state")),
             tool ? json_object_get_string(tool) : "-",
             (long long)num(ag, "turns"), (long long)num(ag, "tokens_in"),
             (long long)num(ag, "tokens_out"));
      room--;
    }
  }
  printf("\n(q quits)\n");
  fflush(stdout);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int ctl_cmd_top(int argc, char **argv) {
  (void)argv;
  if (argc > 0)
    return ctl_usage_error("top takes no arguments");
  if (ctl_connect_admin() != 0)
    return EXIT_USAGE;
  struct sigaction sa = {.sa_handler = on_stop};
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  /* Keys without Enter, unechoed, while top runs. */
  struct termios old, raw;
  int tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &old) == 0;
  if (tty) {
    raw = old;
    raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    tcsetattr(STDIN_FILENO, TCSANOW, &raw);
  }
  json_object *prev = NULL;
  double prev_t = 0;
  int status = 0;
  while (!stop_top) {
    json_object *info = NULL, *stats = NULL, *sess = NULL;
    if (ctl_request("info", NULL, &info) != 0 ||
        ctl_request("stats", NULL, &stats) != 0 ||
        ctl_request("sessions", NULL, &sess) != 0) {
      json_object_put(info);
      json_object_put(stats);
      status = EXIT_USAGE;
      break;
    }
    double t = now_s();
    draw(info, stats, sess, prev, prev ? t - prev_t : 0);
    json_object_put(info);
    json_object_put(sess);
    json_object_put(prev);
    prev = stats;
    prev_t = t;
    /* A second, or a key: keys are read from a terminal only (a closed
     * stdin would be readable at once, for ever). */
    struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
    if (poll(&p, tty ? 1 : 0, 1000) > 0) {
      char c = 0;
      if (read(STDIN_FILENO, &c, 1) == 1 && (c == 'q' || c == 'Q'))
        break;
    }
  }
  json_object_put(prev);
  if (tty)
    tcsetattr(STDIN_FILENO, TCSANOW, &old);
  return status;
}
