/* atelier-fcgi: options, the listening socket, signals. See bridge.h for
 * what the bridge is, and atelier-fcgi(8) for how to run it. */
#include "atl-build.h"

#include <errno.h>
#include <getopt.h>
#include <grp.h>
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
    .reserve_threads = -1, /* max_threads / 8, from 1 to 64 */
    .max_streams_per_client = 256,
};
volatile int fcgi_stopping;

/* Who may connect to the FastCGI socket: its one client is nginx, so by
 * default only the bridge's own user (a private nginx run by the same
 * user, as scripts/atelier-stack does); a system nginx gets in through a
 * group (--socket-mode 0660 --socket-group www-data). */
static mode_t socket_mode = 0600;
static const char *socket_group;

static const char usage[] =
    "Usage: atelier-fcgi --socket PATH [OPTION]...\n"
    "The FastCGI bridge between nginx and atelierd: the HTTP API under\n"
    "/api/ and each session's events as server-sent events.\n"
    "\n"
    "      --socket PATH         listen for FastCGI on this unix socket\n"
    "                            (nginx's fastcgi_pass unix:PATH)\n"
    "      --socket-mode MODE    the socket's permissions, in octal (0600:\n"
    "                            the bridge's user only; 0660 with\n"
    "                            --socket-group for nginx's group)\n"
    "      --socket-group NAME   give the socket to this group (one the\n"
    "                            bridge's user is in, e.g. www-data)\n"
    "      --daemon-socket PATH  atelierd's API socket\n"
    "                            (default /run/atelier/api.sock)\n"
    "      --max-body BYTES      refuse larger request bodies with 413\n"
    "                            (default 1048576)\n"
    "      --min-threads N       threads kept waiting for requests (8)\n"
    "      --max-threads N       threads at most, event streams included\n"
    "                            (2048)\n"
    "      --heartbeat-ms MS     an SSE comment at least this often (15000)\n"
    "      --host HOST[:PORT]    serve requests whose Host header is this\n"
    "                            (repeatable; others get 421); default:\n"
    "                            127.0.0.1, localhost and [::1], any port\n"
    "      --reserve-threads N   threads event streams can never take, kept\n"
    "                            for every other request (max-threads / 8,\n"
    "                            from 1 to 64)\n"
    "      --max-streams-per-client N\n"
    "                            event streams open at once from one client\n"
    "                            address (256)\n"
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

/* --host: a name or address as a browser writes it in Host, with the
 * port unless it is the scheme's default ("127.0.0.1:8080",
 * "atelier.example.org", "[::1]:8080"). */
static int add_host(const char *h) {
  size_t n = strlen(h);
  if (n == 0 || n > 255 ||
      strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                "0123456789.-:[]") != n ||
      h[n - 1] == '.' || h[n - 1] == ':') {
    fprintf(stderr,
            "atelier-fcgi: --host: expected a host name or address with an "
            "optional :PORT, as a browser sends it in Host (e.g. "
            "127.0.0.1:8080), got '%s'\n",
            h);
    return -1;
  }
  const char **more =
      realloc(fcgi_opt.hosts, sizeof(*more) * (size_t)(fcgi_opt.n_hosts + 1));
  if (more == NULL) {
    fprintf(stderr, "atelier-fcgi: out of memory\n");
    return -1;
  }
  more[fcgi_opt.n_hosts++] = h;
  fcgi_opt.hosts = more;
  return 0;
}

static int parse_mode(const char *v) {
  char *end;
  errno = 0;
  long n = strtol(v, &end, 8);
  if (errno != 0 || *end != '\0' || v[0] == '\0' || n < 0 || n > 0777) {
    fprintf(stderr,
            "atelier-fcgi: --socket-mode: expected permissions in octal "
            "from 0000 to 0777, such as 0600 or 0660, got '%s'\n",
            v);
    return -1;
  }
  socket_mode = (mode_t)n;
  return 0;
}

static int parse_args(int argc, char **argv) {
  enum { O_SOCKET = 256, O_DAEMON, O_BODY, O_MIN, O_MAX, O_HEART, O_HOST };
  enum { O_SMODE = 512, O_SGROUP, O_RESERVE, O_PER_CLIENT };
  static const struct option longopts[] = {
      {"socket", required_argument, NULL, O_SOCKET},
      {"socket-mode", required_argument, NULL, O_SMODE},
      {"socket-group", required_argument, NULL, O_SGROUP},
      {"daemon-socket", required_argument, NULL, O_DAEMON},
      {"max-body", required_argument, NULL, O_BODY},
      {"min-threads", required_argument, NULL, O_MIN},
      {"max-threads", required_argument, NULL, O_MAX},
      {"heartbeat-ms", required_argument, NULL, O_HEART},
      {"host", required_argument, NULL, O_HOST},
      {"reserve-threads", required_argument, NULL, O_RESERVE},
      {"max-streams-per-client", required_argument, NULL, O_PER_CLIENT},
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
    case O_SMODE:
      if (parse_mode(optarg) != 0)
        return 2;
      break;
    case O_SGROUP:
      socket_group = optarg;
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
    case O_HOST:
      if (add_host(optarg) != 0)
        return 2;
      break;
    case O_RESERVE:
      if (number("--reserve-threads", optarg, 1, 9999, &n) != 0)
        return 2;
      fcgi_opt.reserve_threads = (int)n;
      break;
    case O_PER_CLIENT:
      if (number("--max-streams-per-client", optarg, 1, 100000, &n) != 0)
        return 2;
      fcgi_opt.max_streams_per_client = (int)n;
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
  if (fcgi_opt.reserve_threads < 0) {
    int r = fcgi_opt.max_threads / 8;
    fcgi_opt.reserve_threads = r < 1 ? 1 : r > 64 ? 64 : r;
  } else if (fcgi_opt.reserve_threads >= fcgi_opt.max_threads) {
    fprintf(stderr,
            "atelier-fcgi: --reserve-threads (%d) must be less than "
            "--max-threads (%d): the rest is what event streams may hold\n",
            fcgi_opt.reserve_threads, fcgi_opt.max_threads);
    return 2;
  }
  return 0;
}

/* Resolves --socket-group before anything is opened, so that a misspelt
 * group is a usage error. */
static int socket_gid(gid_t *out) {
  char buf[16384];
  struct group gr, *res = NULL;
  int rc = getgrnam_r(socket_group, &gr, buf, sizeof(buf), &res);
  if (res == NULL) {
    fprintf(stderr,
            "atelier-fcgi: --socket-group: %s '%s' (expected the name of the "
            "group nginx runs in, e.g. www-data on Debian)\n",
            rc != 0 ? strerror(rc) : "there is no group", socket_group);
    return -1;
  }
  *out = gr.gr_gid;
  return 0;
}

static int set_socket_access(gid_t gid) {
  if (gid != (gid_t)-1 && chown(fcgi_opt.socket_path, (uid_t)-1, gid) != 0) {
    fcgi_log("error",
             "cannot give %s to group %s: %s (the bridge's user must be a "
             "member of that group, e.g. SupplementaryGroups= in its unit)",
             fcgi_opt.socket_path, socket_group, strerror(errno));
    return -1;
  }
  if (chmod(fcgi_opt.socket_path, socket_mode) != 0) {
    fcgi_log("error", "cannot set the mode of %s: %s", fcgi_opt.socket_path,
             strerror(errno));
    return -1;
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

  /* The bridge creates no file but its socket, whose mode is set below:
   * anything else it might write one day is private. */
  umask(077);
  gid_t gid = (gid_t)-1;
  if (socket_group != NULL && socket_gid(&gid) != 0)
    return 2;

  if (FCGX_Init() != 0) {
    fcgi_log("error", "FCGX_Init failed");
    return 1;
  }
  /* A socket left by an earlier run would make the bind fail. */
  struct stat st;
  if (lstat(fcgi_opt.socket_path, &st) == 0 && S_ISSOCK(st.st_mode))
    unlink(fcgi_opt.socket_path);
  /* The socket is born open to its owner only (connecting takes write
   * permission) and opened to its group afterwards, so that no one else
   * can connect in between. */
  umask(0177);
  /* A reconnect storm (every page after a restart) arrives at once;
   * the kernel caps this at net.core.somaxconn (4096 on Debian 12). */
  int fd = FCGX_OpenSocket(fcgi_opt.socket_path, 4096);
  umask(077);
  if (fd < 0) {
    fcgi_log("error", "cannot listen on %s: %s", fcgi_opt.socket_path,
             strerror(errno));
    return 1;
  }
  if (set_socket_access(gid) != 0) {
    unlink(fcgi_opt.socket_path);
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
