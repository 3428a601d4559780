/* generate_svg: the model's Python code, run in a sandbox, makes paths
 * that are then checked and drawn as draw_paths draws them.
 *
 * Code Monet ran this code as its server's own user, with its
 * environment (API keys included), its files and its network, guarded by
 * a timeout alone (anchors/code-monet.md §4). Here it runs under
 * bubblewrap, and never otherwise: when the sandbox cannot be made, the
 * tool says so and runs nothing.
 *   - Namespaces: all of them (--unshare-all: no network at all, its own
 *     PIDs, IPC and hostname), as an unprivileged user (uid 65534) with no
 *     capabilities.
 *   - Files: /usr read-only, the three input files read-only in /in, a
 *     private 16 MB tmpfs on /tmp; no /etc, no home, no data directory, no
 *     socket directory, nothing else of the host.
 *   - Limits: 30 s of wall time (then SIGKILL), 30 s of CPU, 512 MB of
 *     address space, 16 MB per file, 64 descriptors, no core files, and
 *     16 MB of output; a seccomp filter refuses fork, vfork and every
 *     clone that is not a thread, so a fork bomb cannot start (an
 *     RLIMIT_NPROC would not stop one when the daemon runs as root).
 *   - Environment: none of the daemon's; the sandbox gets HOME, LANG and
 *     PATH only.
 *   - Lifetime: the run is killed with its process group at the deadline
 *     or when the call is cancelled, and --die-with-parent kills it with
 *     the daemon.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "drawing_int.h"
#include "genout.h"

#define RUN_CPU_S 30
#define RUN_AS_BYTES (512ul << 20)
#define RUN_FILE_BYTES (16ul << 20)
#define RUN_OUT_BYTES (16ul << 20)
#define RUN_TEXT_KEEP 65536 /* of stdout and of stderr */
#define REPLY_STDOUT 2000
#define REPLY_STDERR 2000

int drw_finish_add(atl_call_t *call, json_object *result, long drawn,
                   size_t given, int done, const char *source);

/* The program the sandbox runs: it defines the helpers, reads the strokes
 * and runs the model's code, turning an exception into one line that
 * names the line of the model's code. */
static const char RUNNER[] =
    "import json, math, random, sys, traceback\n"
    "canvas_width = 800\n"
    "canvas_height = 600\n"
    "with open('/in/strokes.json') as _f:\n"
    "    existing_strokes = json.load(_f)\n"
    "_out = open(3, 'w', closefd=False)\n"
    "BRUSHES = ['oil_round', 'oil_flat', 'oil_filbert', 'watercolor',\n"
    "           'dry_brush', 'palette_knife', 'ink', 'pencil', 'charcoal',\n"
    "           'marker', 'airbrush', 'splatter']\n"
    "def _style(p, color, stroke_width, opacity, brush):\n"
    "    if color is not None: p['color'] = color\n"
    "    if stroke_width is not None: p['stroke_width'] = stroke_width\n"
    "    if opacity is not None: p['opacity'] = opacity\n"
    "    if brush is not None: p['brush'] = brush\n"
    "    return p\n"
    "def _pts(*xy):\n"
    "    return [{'x': xy[i], 'y': xy[i + 1]} for i in range(0, len(xy), 2)]\n"
    "def line(x1, y1, x2, y2, color=None, stroke_width=None, opacity=None,\n"
    "         brush=None):\n"
    "    return _style({'type': 'line', 'points': _pts(x1, y1, x2, y2)},\n"
    "                  color, stroke_width, opacity, brush)\n"
    "def polyline(*points, color=None, stroke_width=None, opacity=None,\n"
    "             brush=None):\n"
    "    if len(points) == 1 and not isinstance(points[0][0], (int, float)):\n"
    "        points = points[0]\n"
    "    return _style({'type': 'polyline',\n"
    "                   'points': [{'x': p[0], 'y': p[1]} for p in points]},\n"
    "                  color, stroke_width, opacity, brush)\n"
    "def quadratic(x1, y1, cx, cy, x2, y2, color=None, stroke_width=None,\n"
    "              opacity=None, brush=None):\n"
    "    return _style({'type': 'quadratic',\n"
    "                   'points': _pts(x1, y1, cx, cy, x2, y2)},\n"
    "                  color, stroke_width, opacity, brush)\n"
    "def cubic(x1, y1, c1x, c1y, c2x, c2y, x2, y2, color=None,\n"
    "          stroke_width=None, opacity=None, brush=None):\n"
    "    return _style({'type': 'cubic',\n"
    "                   'points': _pts(x1, y1, c1x, c1y, c2x, c2y, x2, y2)},\n"
    "                  color, stroke_width, opacity, brush)\n"
    "def svg_path(d, color=None, stroke_width=None, opacity=None,\n"
    "             brush=None):\n"
    "    return _style({'type': 'svg', 'd': d}, color, stroke_width,\n"
    "                  opacity, brush)\n"
    "def output_paths(paths):\n"
    "    _out.write(json.dumps({'paths': list(paths)}) + '\\n')\n"
    "    _out.flush()\n"
    "def output_svg_paths(d_strings):\n"
    "    _out.write(json.dumps({'svg_paths': list(d_strings)}) + '\\n')\n"
    "    _out.flush()\n"
    "_g = {'__name__': '__main__', '__builtins__': __builtins__}\n"
    "for _k in ('json', 'math', 'random', 'canvas_width', 'canvas_height',\n"
    "           'existing_strokes', 'BRUSHES', 'line', 'polyline',\n"
    "           'quadratic', 'cubic', 'svg_path', 'output_paths',\n"
    "           'output_svg_paths'):\n"
    "    _g[_k] = globals()[_k]\n"
    "with open('/in/code.py') as _f:\n"
    "    _src = _f.read()\n"
    "try:\n"
    "    exec(compile(_src, 'code', 'exec'), _g)\n"
    "except SyntaxError as e:\n"
    "    sys.stderr.write('line %s: SyntaxError: %s\\n' % (e.lineno, e.msg))\n"
    "    sys.exit(1)\n"
    "except SystemExit:\n"
    "    raise\n"
    "except BaseException as e:\n"
    "    _tb = [f for f in traceback.extract_tb(e.__traceback__)\n"
    "           if f.filename == 'code']\n"
    "    _line = _tb[-1].lineno if _tb else '?'\n"
    "    sys.stderr.write('line %s: %s: %s\\n' % (_line, type(e).__name__,\n"
    "                                           e))\n"
    "    sys.exit(1)\n";

void drw_sandbox_init(drw_state_t *st) {
  /* The limit may be lowered (the tests do, to see it hold in a second),
   * never raised. */
  st->time_limit_s = RUN_CPU_S;
  const char *lim = getenv("ATELIER_DRAWING_TIME_LIMIT_S");
  if (lim != NULL && atoi(lim) >= 1 && atoi(lim) < RUN_CPU_S)
    st->time_limit_s = atoi(lim);
  /* Fixed paths, not $PATH: the daemon's PATH is not ours to trust. */
  static const char *const bw[] = {"/usr/bin/bwrap", NULL};
  static const char *const py[] = {"/usr/bin/python3", NULL};
  st->bwrap[0] = st->python[0] = '\0';
  for (int i = 0; bw[i]; i++)
    if (access(bw[i], X_OK) == 0) {
      snprintf(st->bwrap, sizeof(st->bwrap), "%s", bw[i]);
      break;
    }
  for (int i = 0; py[i]; i++)
    if (access(py[i], X_OK) == 0) {
      snprintf(st->python, sizeof(st->python), "%s", py[i]);
      break;
    }
  if (!st->bwrap[0] || !st->python[0])
    st->host->log(st->host, ATL_LOG_WARN,
                  "generate_svg cannot run: %s not found (Debian packages "
                  "bubblewrap and python3)",
                  !st->bwrap[0] ? "/usr/bin/bwrap" : "/usr/bin/python3");
}

/* A sealed memory file holding text, for bwrap's --ro-bind-data. */
static int memfd_text(const char *name, const char *text, size_t len) {
  int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0)
    return -1;
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, text + off, len - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      close(fd);
      return -1;
    }
    off += (size_t)w;
  }
  lseek(fd, 0, SEEK_SET);
  return fd;
}

/* The seccomp filter as BPF in a memory file, for bwrap's --seccomp. */
static int seccomp_fd(void) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == NULL)
    return -1;
  int rc = 0;
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(fork), 0);
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(vfork), 0);
  /* clone3 passes its flags in memory, out of a filter's reach: ENOSYS
   * makes the C library fall back to clone, whose flags it can see. */
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                         SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
  /* A thread may not take new namespaces either: one rule per flag, as
   * a filter compares a masked value with one constant. */
  static const unsigned long newns[] = {
      CLONE_NEWNS,  CLONE_NEWUSER, CLONE_NEWPID,   CLONE_NEWNET,
      CLONE_NEWIPC, CLONE_NEWUTS,  CLONE_NEWCGROUP};
  for (size_t i = 0; i < sizeof(newns) / sizeof(newns[0]); i++)
    rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                           SCMP_A0(SCMP_CMP_MASKED_EQ, newns[i], newns[i]));
  /* No network exists in the sandbox; no socket may be made either. */
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 0);
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socketpair), 0);
  /* The kernel's attack surface a drawing never needs: new namespaces and
   * mounts (bwrap's --disable-userns covers user namespaces too), tracing,
   * BPF, io_uring, userfaultfd, perf and the keyrings. */
  static const int denied[] = {
      SCMP_SYS(unshare),
      SCMP_SYS(setns),
      SCMP_SYS(mount),
      SCMP_SYS(umount2),
      SCMP_SYS(pivot_root),
      SCMP_SYS(chroot),
      SCMP_SYS(ptrace),
      SCMP_SYS(process_vm_readv),
      SCMP_SYS(process_vm_writev),
      SCMP_SYS(bpf),
      SCMP_SYS(io_uring_setup),
      SCMP_SYS(io_uring_enter),
      SCMP_SYS(io_uring_register),
      SCMP_SYS(userfaultfd),
      SCMP_SYS(perf_event_open),
      SCMP_SYS(keyctl),
      SCMP_SYS(add_key),
      SCMP_SYS(request_key),
      SCMP_SYS(open_tree),
      SCMP_SYS(move_mount),
      SCMP_SYS(fsopen),
      SCMP_SYS(fsmount),
  };
  for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++)
    rc |= seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), denied[i], 0);
  int fd = rc == 0 ? memfd_create("drawing-seccomp", MFD_CLOEXEC) : -1;
  if (fd >= 0 && seccomp_export_bpf(ctx, fd) != 0) {
    close(fd);
    fd = -1;
  }
  seccomp_release(ctx);
  if (fd >= 0)
    lseek(fd, 0, SEEK_SET);
  return fd;
}

typedef struct {
  char *buf;
  size_t len, cap, total;
} capture_t;

static void cap_add(capture_t *c, const char *data, size_t n) {
  c->total += n;
  if (c->len >= c->cap)
    return;
  size_t take = n < c->cap - c->len ? n : c->cap - c->len;
  memcpy(c->buf + c->len, data, take);
  c->len += take;
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct {
  capture_t out, err, paths, bwst; /* bwst: bwrap's status JSON */
  int status;                      /* from waitpid */
  int timed_out;                   /* killed at the deadline */
  int cancelled;                   /* killed because the call was cancelled */
  int too_much;                    /* killed for output past RUN_OUT_BYTES */
  int64_t ms;
} run_t;

/* In the child, between fork and exec: only async-signal-safe calls. */
static void child(const char *const argv[], const int fds[9], int secs) {
  static char *const envp[] = {"PATH=/usr/bin", "LANG=C.UTF-8", NULL};
  setsid();
  /* fds: 0 stdin, 1 stdout, 2 stderr, 3 output, 4 runner, 5 code,
   * 6 strokes, 7 seccomp, 8 bwrap's status; moved into place above 16
   * first so that no dup2 overwrites a descriptor still to be moved. */
  int hi[9];
  for (int i = 0; i < 9; i++) {
    hi[i] = fcntl(fds[i], F_DUPFD, 16);
    if (hi[i] < 0)
      _exit(126);
  }
  for (int i = 0; i < 9; i++)
    if (dup2(hi[i], i) < 0)
      _exit(126);
  closefrom(9);
  struct rlimit r;
  r.rlim_cur = (rlim_t)secs;
  r.rlim_max = (rlim_t)secs + 1;
  setrlimit(RLIMIT_CPU, &r);
  r.rlim_cur = r.rlim_max = RUN_AS_BYTES;
  setrlimit(RLIMIT_AS, &r);
  r.rlim_cur = r.rlim_max = RUN_FILE_BYTES;
  setrlimit(RLIMIT_FSIZE, &r);
  r.rlim_cur = r.rlim_max = 64;
  setrlimit(RLIMIT_NOFILE, &r);
  r.rlim_cur = r.rlim_max = 0;
  setrlimit(RLIMIT_CORE, &r);
  execve(argv[0], (char *const *)argv, envp);
  _exit(127);
}

/* Runs code with strokes_json as /in/strokes.json. 0 with r filled, or -1
 * with a message in why when the sandbox could not be started. */
static int run(drw_state_t *st, atl_call_t *call, const char *code,
               const char *strokes_json, run_t *r, char *why, size_t wsize) {
  memset(r, 0, sizeof(*r));
  r->out.cap = r->err.cap = RUN_TEXT_KEEP;
  r->paths.cap = RUN_OUT_BYTES;
  r->bwst.cap = 4096;
  r->out.buf = malloc(r->out.cap);
  r->err.buf = malloc(r->err.cap);
  r->bwst.buf = malloc(r->bwst.cap);
  r->paths.buf = malloc(4096);
  size_t paths_alloc = 4096;
  int fds[9] = {-1, -1, -1, -1, -1, -1, -1, -1, -1};
  int pout[2] = {-1, -1}, perr[2] = {-1, -1}, ppaths[2] = {-1, -1};
  int pstat[2] = {-1, -1};
  int rc = -1;
  if (!r->out.buf || !r->err.buf || !r->paths.buf || !r->bwst.buf) {
    snprintf(why, wsize, "out of memory");
    goto out;
  }
  fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
  fds[4] = memfd_text("drawing-runner", RUNNER, sizeof(RUNNER) - 1);
  fds[5] = memfd_text("drawing-code", code, strlen(code));
  fds[6] = memfd_text("drawing-strokes", strokes_json, strlen(strokes_json));
  fds[7] = seccomp_fd();
  if (pipe2(pout, O_CLOEXEC) != 0 || pipe2(perr, O_CLOEXEC) != 0 ||
      pipe2(ppaths, O_CLOEXEC) != 0 || pipe2(pstat, O_CLOEXEC) != 0 ||
      fds[0] < 0 || fds[4] < 0 || fds[5] < 0 || fds[6] < 0 || fds[7] < 0) {
    snprintf(why, wsize, "the sandbox's files could not be made: %s",
             strerror(errno));
    goto out;
  }
  fds[1] = pout[1];
  fds[2] = perr[1];
  fds[3] = ppaths[1];
  fds[8] = pstat[1];
  const char *argv[] = {
      st->bwrap,
      /* {"child-pid": N} once the sandbox is made: what
       * tells bwrap's own failure from code that writes
       * "bwrap: ..." and exits 1. */
      "--json-status-fd", "8", "--unshare-all", "--unshare-user",
      "--disable-userns", "--assert-userns-disabled", "--die-with-parent",
      "--new-session", "--cap-drop", "ALL", "--uid", "65534", "--gid", "65534",
      "--ro-bind", "/usr", "/usr",
      /* /usr/local may hold a deployment's own files
       * (its keys.env when installed there), which the
       * sandbox's uid can read when the daemon runs as
       * root: an empty, read-only /usr/local instead. */
      "--size", "4096", "--tmpfs", "/usr/local", "--remount-ro", "/usr/local",
      "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
      "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev",
      /* /dev and /dev/shm would be tmpfs without a
       * size: host memory outside every limit. */
      "--size", "1048576", "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
      "--size", "16777216", "--tmpfs", "/tmp", "--dir", "/in", "--ro-bind-data",
      "4", "/in/runner.py", "--ro-bind-data", "5", "/in/code.py",
      "--ro-bind-data", "6", "/in/strokes.json", "--seccomp", "7", "--chdir",
      "/tmp", "--clearenv", "--setenv", "HOME", "/tmp", "--setenv", "LANG",
      "C.UTF-8", "--setenv", "PATH", "/usr/bin", st->python, "-I", "-S", "-B",
      "/in/runner.py", NULL};
  int64_t t0 = mono_ms();
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(why, wsize, "fork failed: %s", strerror(errno));
    goto out;
  }
  if (pid == 0)
    child(argv, fds, st->time_limit_s);
  for (int i = 0; i < 9; i++) {
    if (fds[i] >= 0)
      close(fds[i]);
    fds[i] = -1;
  }
  pout[1] = perr[1] = ppaths[1] = pstat[1] = -1;

  struct pollfd pf[4] = {{pout[0], POLLIN, 0},
                         {perr[0], POLLIN, 0},
                         {ppaths[0], POLLIN, 0},
                         {pstat[0], POLLIN, 0}};
  int open_fds = 4, killed = 0;
  char chunk[65536];
  while (open_fds > 0) {
    int64_t left = st->time_limit_s * 1000 - (mono_ms() - t0);
    if (!killed && (left <= 0 || call->host->call_cancelled(call))) {
      if (left <= 0)
        r->timed_out = 1;
      else
        r->cancelled = 1;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      killed = 1;
    }
    int n = poll(pf, 4, killed ? 1000 : (int)(left < 100 ? left : 100));
    if (n < 0 && errno != EINTR)
      break;
    if (n == 0 && killed)
      break; /* a grandchild holds a pipe: do not wait for it */
    for (int i = 0; i < 4; i++) {
      if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      ssize_t got = read(pf[i].fd, chunk, sizeof(chunk));
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0) {
        close(pf[i].fd);
        pf[i].fd = -1;
        open_fds--;
        continue;
      }
      if (i == 2) {
        if (r->paths.len + (size_t)got > RUN_OUT_BYTES) {
          r->too_much = 1;
          if (!killed) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            killed = 1;
          }
          continue;
        }
        if (r->paths.len + (size_t)got > paths_alloc) {
          size_t na = paths_alloc;
          while (na < r->paths.len + (size_t)got)
            na *= 2;
          char *nb = realloc(r->paths.buf, na);
          if (nb == NULL) {
            r->too_much = 1;
            continue;
          }
          r->paths.buf = nb;
          paths_alloc = na;
        }
        memcpy(r->paths.buf + r->paths.len, chunk, (size_t)got);
        r->paths.len += (size_t)got;
      } else {
        cap_add(i == 0   ? &r->out
                : i == 1 ? &r->err
                         : &r->bwst,
                chunk, (size_t)got);
      }
    }
  }
  for (int i = 0; i < 4; i++)
    if (pf[i].fd >= 0)
      close(pf[i].fd);
  pout[0] = perr[0] = ppaths[0] = pstat[0] = -1;
  if (!killed)
    kill(-pid, SIGKILL); /* anything left of the group */
  while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR)
    ;
  r->ms = mono_ms() - t0;
  rc = 0;
out:
  for (int i = 0; i < 9; i++)
    if (fds[i] >= 0 && i != 1 && i != 2 && i != 3 && i != 8)
      close(fds[i]);
  int pipes[8] = {pout[0],   pout[1],   perr[0],  perr[1],
                  ppaths[0], ppaths[1], pstat[0], pstat[1]};
  for (int i = 0; i < 8; i++)
    if (pipes[i] >= 0)
      close(pipes[i]);
  return rc;
}

static void run_free(run_t *r) {
  free(r->bwst.buf);
  free(r->out.buf);
  free(r->err.buf);
  free(r->paths.buf);
}

/* Text captured, cut to keep bytes (at a UTF-8 boundary), as a JSON
 * string; NULL when there was none. */
static json_object *text_of(const capture_t *c, size_t keep) {
  if (c->total == 0)
    return NULL;
  size_t n = c->len < keep ? c->len : keep;
  while (n > 0 && n < c->len && ((unsigned char)c->buf[n] & 0xc0) == 0x80)
    n--;
  char *s = NULL;
  if (asprintf(&s, "%.*s%s", (int)n, c->buf,
               c->total > n ? "\n... (cut)" : "") < 0)
    return NULL;
  json_object *o = json_object_new_string(s);
  free(s);
  return o;
}

/* The last line of stderr that reads "line N: Error: message" (the
 * runner's), or the last line of it. */
static char *python_error(const capture_t *err) {
  size_t n = err->len;
  while (n > 0 && (err->buf[n - 1] == '\n' || err->buf[n - 1] == '\r'))
    n--;
  size_t start = n;
  while (start > 0 && err->buf[start - 1] != '\n')
    start--;
  return strndup(err->buf + start, n - start);
}

/* The canvas's strokes as the code sees them: existing_strokes. */
static char *strokes_for_code(json_object *piece) {
  json_object *strokes = drw_strokes(piece);
  cv_mode_t mode = drw_piece_mode(piece);
  json_object *arr = json_object_new_array();
  size_t n = strokes ? json_object_array_length(strokes) : 0;
  for (size_t i = 0; i < n; i++) {
    json_object *v = drw_stroke_view(
        json_object_get_string(json_object_array_get_idx(strokes, i)), mode);
    if (v == NULL)
      continue;
    json_object_object_del(v, "bristles");
    json_object_array_add(arr, v);
  }
  char *s = strdup(json_object_to_json_string_ext(
      arr, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(arr);
  return s;
}

int drw_generate_svg(atl_call_t *call) {
  drw_state_t *st = call->plugin_state;
  json_object *v = NULL;
  json_object_object_get_ex(call->args, "code", &v);
  const char *code = json_object_get_string(v);
  int done = json_object_object_get_ex(call->args, "done", &v) &&
             json_object_get_boolean(v);
  if (!st->bwrap[0] || !st->python[0])
    return call->host->call_error(
        call,
        "generate_svg cannot run here: its sandbox needs %s, which this "
        "machine lacks, and code is never run outside the sandbox. Use "
        "draw_paths instead.",
        !st->bwrap[0] ? "bubblewrap (/usr/bin/bwrap)" : "/usr/bin/python3");
  if (strlen(code) != (size_t)json_object_get_string_len(
                          json_object_object_get(call->args, "code")))
    return call->host->call_error(call, "code contains a NUL character");

  json_object *piece = drw_ns_ready(call->ns);
  char *strokes = strokes_for_code(piece);
  if (strokes == NULL)
    return ATL_ENOMEM;
  run_t r;
  char why[256];
  int rc = run(st, call, code, strokes, &r, why, sizeof(why));
  free(strokes);
  if (rc != 0) {
    run_free(&r);
    return call->host->call_error(
        call,
        "generate_svg could not start its sandbox (%s); the code was "
        "not run. Use draw_paths instead.",
        why);
  }
  int exited = WIFEXITED(r.status),
      code_rc = exited ? WEXITSTATUS(r.status) : -1;
  /* bwrap's own failures (no user namespaces, a mount refused) come as
   * "bwrap: ..." on stderr with status 1, before any Python ran: before
   * bwrap reported its child on the status descriptor. */
  int started = memmem(r.bwst.buf, r.bwst.len, "child-pid", 9) != NULL;
  if (!started && exited && code_rc != 0) {
    char *msg = python_error(&r.err);
    call->host->log(call->host, ATL_LOG_ERROR,
                    "generate_svg sandbox failed: %s", msg ? msg : "");
    call->host->call_error(call,
                           "generate_svg could not make its sandbox (%s); "
                           "the code was not run. Use draw_paths instead.",
                           msg ? msg : "bwrap failed");
    free(msg);
    run_free(&r);
    return 0;
  }
  if (r.timed_out || r.cancelled || r.too_much ||
      (WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGXCPU)) {
    if (r.cancelled)
      call->host->call_error(call, "The call was cancelled and the code "
                                   "stopped; nothing was drawn.");
    else if (r.too_much)
      call->host->call_error(call, "The code output more than 16 MB of "
                                   "paths and was stopped; nothing was "
                                   "drawn. Output fewer, longer paths.");
    else
      call->host->call_error(call,
                             "The code ran past its %d s limit and was "
                             "stopped (an endless loop?); nothing was drawn.",
                             st->time_limit_s);
    run_free(&r);
    return 0;
  }
  if (!exited || code_rc != 0) {
    char *msg = python_error(&r.err);
    json_object *err_text = text_of(&r.err, REPLY_STDERR);
    call->host->call_error(call, "Your code failed%s%s; nothing was drawn.%s%s",
                           msg && *msg ? ": " : "",
                           msg && *msg ? msg : " (no message)",
                           err_text ? "\nstderr:\n" : "",
                           err_text ? json_object_get_string(err_text) : "");
    json_object_put(err_text);
    free(msg);
    run_free(&r);
    return 0;
  }
  json_object *paths = NULL;
  char *err = NULL;
  if (genout_read(r.paths.buf, r.paths.len, &paths, &err) != 0) {
    call->host->call_error(call, "%s; nothing was drawn.",
                           err ? err : "bad output");
    free(err);
    run_free(&r);
    return 0;
  }
  size_t given = json_object_array_length(paths);
  if (given == 0 && !done) {
    json_object *out_text = text_of(&r.out, REPLY_STDOUT);
    call->host->call_error(
        call,
        "Your code ran but output no paths: end it with "
        "output_paths(list_of_paths) or output_svg_paths(list_of_d)."
        "%s%s",
        out_text ? "\nstdout:\n" : "",
        out_text ? json_object_get_string(out_text) : "");
    json_object_put(out_text);
    json_object_put(paths);
    run_free(&r);
    return 0;
  }
  json_object *result = json_object_new_object();
  long drawn = drw_add_paths(call, paths, 'a', result, "generated path");
  json_object_put(paths);
  if (drawn < 0) {
    json_object_put(result);
    run_free(&r);
    return ATL_ENOMEM;
  }
  json_object *o;
  if ((o = text_of(&r.out, REPLY_STDOUT)))
    json_object_object_add(result, "stdout", o);
  if ((o = text_of(&r.err, REPLY_STDERR)))
    json_object_object_add(result, "stderr", o);
  json_object_object_add(result, "run_ms", json_object_new_int64(r.ms));
  run_free(&r);
  return drw_finish_add(call, result, drawn, given, done, "generated paths");
}
