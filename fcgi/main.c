/* atelier-fcgi: options, the listening socket, signals. See bridge.h for
 * what the bridge is, and atelier-fcgi(8) for how to run it. */
#include "atl-build.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bridge.h"
#include "fdlimit.h"

fcgi_options_t fcgi_opt = {
    .socket_path = NULL,
    .daemon_socket = "/run/atelier/api.sock",
    .max_body = 1024 * 1024,
    .min_threads = 8,
    .max_threads = 2048,
    .heartbeat_ms = 15000,
};
volatile int fcgi_stopping;

static const char usage[] =
    "Usage: atelier-fcgi --socket PATH [OPTION]...\n"
    "The FastCGI bridge between nginx and atelierd: the HTTP API under\n"
    "/api/ and each session's events as server-sent events.\n"
    "\n"
    "      --socket PATH         listen for FastCGI on this unix socket\n"
    "                            (nginx's fastcgi_pass unix:PATH)\n"
    "      --daemon-socket PATH  atelierd's API socket\n"
    "                            (default /run/atelier/api.sock)\n"
    "      --max-body BYTES      refuse larger request bodies with 413\n"
    "                            (default 1048576)\n"
    "      --min-threads N       threads kept waiting for requests (8)\n"
    "      --max-threads N       threads at most, event streams included\n"
    "                            (2048)\n"
    "      --heartbeat-ms MS     an SSE comment at least this often (15000)\n"
    "  -v, --verbose             log every request\n"
    "  -V, --version             print the version and exit\n"
    "  -h, --help                print this help and exit\n"
    "\n"
    "Exit status: 0 after SIGTERM or SIGINT, 1 on a runtime failure, 2 on\n"
    "a usage error. See atelier-fcgi(8).\n";

static int number(const char *name, const char *v, long min, long max,
                  long *out) {
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno != 0 || *end != '\0' || v[0] == '\0' || n < min || n > max) {
    fprintf(stderr,
            "atelier-fcgi: %s: expected a whole number from %ld to %ld, "
            "got '%s'\n",
            name, min, max, v);
    return -1;
  }
  *out = n;
  return 0;
}

static int parse_args(int argc, char **argv) {
  enum { O_SOCKET = 256, O_DAEMON, O_BODY, O_MIN, O_MAX, O_HEART };
  static const struct option longopts[] = {
      {"socket", required_argument, NULL, O_SOCKET},
      {"daemon-socket", required_argument, NULL, O_DAEMON},
      {"max-body", required_argument, NULL, O_BODY},
      {"min-threads", required_argument, NULL, O_MIN},
      {"max-threads", required_argument, NULL, O_MAX},
      {"heartbeat-ms", required_argument, NULL, O_HEART},
      {"verbose", no_argument, NULL, 'v'},
      {"version", no_argument, NULL, 'V'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int c;
  long n;
  while ((c = getopt_long(argc, argv, "vVh", longopts, NULL)) != -1) {
    switch (c) {
    case O_SOCKET:
      fcgi_opt.socket_path = optarg;
      break;
    case O_DAEMON:
      fcgi_opt.daemon_socket = optarg;
      break;
    case O_BODY:
      if (number("--max-body", optarg, 1024, 1L << 30, &n) != 0)
        return 2;
      fcgi_opt.max_body = (size_t)n;
      break;
    case O_MIN:
      if (number("--min-threads", optarg, 1, 256, &n) != 0)
        return 2;
      fcgi_opt.min_threads = (int)n;
      break;
    case O_MAX:
      if (number("--max-threads", optarg, 2, 10000, &n) != 0)
        return 2;
      fcgi_opt.max_threads = (int)n;
      break;
    case O_HEART:
      if (number("--heartbeat-ms", optarg, 100, 60000, &n) != 0)
        return 2;
      fcgi_opt.heartbeat_ms = (int)n;
      break;
    case 'v':
      fcgi_opt.verbose = 1;
      break;
    case 'V':
      printf("atelier-fcgi %s\n", PACKAGE_VERSION);
      exit(0);
    case 'h':
      fputs(usage, stdout);
      exit(0);
    default:
      fputs("Try 'atelier-fcgi --help'.\n", stderr);
      return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "atelier-fcgi: unexpected argument '%s'\n", argv[optind]);
    return 2;
  }
  if (fcgi_opt.socket_path == NULL) {
    fprintf(stderr, "atelier-fcgi: --socket PATH is required (where nginx "
                    "connects)\nTry 'atelier-fcgi --help'.\n");
    return 2;
  }
  if (fcgi_opt.min_threads >= fcgi_opt.max_threads) {
    fprintf(stderr,
            "atelier-fcgi: --min-threads (%d) must be less than "
            "--max-threads (%d)\n",
            fcgi_opt.min_threads, fcgi_opt.max_threads);
    return 2;
  }
  return 0;
}

int main(int argc, char **argv) {
  /* The bridge holds the API token in memory: no core file, and no
   * ptrace or /proc/PID/mem for other processes of the user but root. */
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  atl_raise_fd_limit();
  int rc = parse_args(argc, argv);
  if (rc != 0)
    return rc;
  /* A client that leaves mid-answer must be a write error, not a death. */
  signal(SIGPIPE, SIG_IGN);
  /* Signals go to the main thread only, which waits for them below. */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);

  if (FCGX_Init() != 0) {
    fcgi_log("error", "FCGX_Init failed");
    return 1;
  }
  /* A socket left by an earlier run would make the bind fail. */
  struct stat st;
  if (lstat(fcgi_opt.socket_path, &st) == 0 && S_ISSOCK(st.st_mode))
    unlink(fcgi_opt.socket_path);
  /* nginx (often another user) must be able to connect: the socket's
   * directory is what restricts access. */
  mode_t old = umask(0);
  /* A reconnect storm (every page after a restart) arrives at once;
   * the kernel caps this at net.core.somaxconn (4096 on Debian 12). */
  int fd = FCGX_OpenSocket(fcgi_opt.socket_path, 4096);
  umask(old);
  if (fd < 0) {
    fcgi_log("error", "cannot listen on %s: %s", fcgi_opt.socket_path,
             strerror(errno));
    return 1;
  }
  if (fcgi_pool_run(fd) != 0)
    return 1;
  fcgi_log("info", "listening on %s; atelierd at %s", fcgi_opt.socket_path,
           fcgi_opt.daemon_socket);

  int sig = 0;
  sigwait(&stop, &sig);
  fcgi_log("info", "%s: stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
  fcgi_stopping = 1;
  /* Wakes the threads waiting in accept; event streams notice at their
   * next heartbeat at the latest, and are not waited for past a few
   * seconds: the browser reconnects. */
  shutdown(fd, SHUT_RDWR);
  fcgi_pool_wait(3000);
  unlink(fcgi_opt.socket_path);
  close(fd);
  return 0;
}
