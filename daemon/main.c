/* atelierd: the Atelier daemon. */
#include "atl-build.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "fdlimit.h"
#include "log.h"

/* Detaches from the terminal: the classic double fork, so the daemon is
 * not a session leader and can never reacquire a controlling terminal. */
static int daemonize(void) {
  pid_t pid = fork();
  if (pid < 0)
    return -errno;
  if (pid > 0)
    _exit(0);
  if (setsid() < 0)
    return -errno;
  pid = fork();
  if (pid < 0)
    return -errno;
  if (pid > 0)
    _exit(0);
  int fd = open("/dev/null", O_RDWR);
  if (fd >= 0) {
    dup2(fd, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    if (fd > 2)
      close(fd);
  }
  return 0;
}

/* One daemon per data directory: two writers on one store would each
 * believe they own the sessions. The lock dies with the process. */
static int lock_data_dir(const char *dir) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/atelierd.lock", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    return -errno;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return ATL_EBUSY;
  }
  return fd;
}

static int write_pid_file(const char *path) {
  FILE *f = fopen(path, "we");
  if (f == NULL)
    return -errno;
  fprintf(f, "%ld\n", (long)getpid());
  fclose(f);
  return 0;
}

/* The data directory holds every session, the store and the token: a
 * directory that others can enter is said loudly, but used, since an
 * administrator may have opened it on purpose (doc/security.md). */
static void check_data_dir_mode(const char *dir) {
  struct stat st;
  if (stat(dir, &st) == 0 && (st.st_mode & 077) != 0) {
    char mode[8];
    snprintf(mode, sizeof(mode), "%04o", (unsigned)(st.st_mode & 07777));
    atl_log_kv(ATL_LOG_WARN,
               "the data directory is open to other users; chmod 700 it "
               "unless that is meant",
               "dir", dir, "mode", mode, NULL);
  }
}

int main(int argc, char **argv) {
  /* Everything the daemon creates (the store, its journal, the log, the
   * token, render segments) is for its own user only; the API socket
   * alone is opened to the group, on purpose (server.c). */
  umask(077);
  /* The environment holds the providers' API keys, and the memory the
   * token and the keys: no core file, and no ptrace or /proc/PID/environ,
   * mem or fd for anyone but root, whatever the user's core settings. */
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  atl_raise_fd_limit();
  /* A tool call allocates and frees buffers of megabytes (a session's
   * document serialized, a PNG, an event's text). With glibc's defaults
   * many of them go back to the kernel when freed and are faulted in
   * afresh by the next call, and on these VMs a page fault costs
   * microseconds: a draw_paths of 1,000 paths went from a p50 of 71 ms to
   * 57 ms once buffers up to 32 MiB came from the heap and up to 64 MiB
   * of free memory at the top of each arena's heap was kept
   * (bench/README.md, drawing). Either setting alone gained nothing:
   * setting one turns off glibc's own adjustment of both. The price is
   * memory kept: atelierd's RSS at 50,000 strokes grew by 50 MB instead
   * of 33. A refusal (a 32-bit build takes no 32 MiB threshold) only
   * leaves the defaults. */
  (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
  (void)mallopt(M_TRIM_THRESHOLD, 64 << 20);
  atl_config_t cfg;
  char *err = NULL;
  int rc = atl_config_from_args(&cfg, argc, argv, &err);
  if (rc == 1) {
    atl_config_free(&cfg);
    return 0;
  }
  if (rc != 0) {
    fprintf(stderr, "atelierd: %s\n", err ? err : atl_strerror(rc));
    free(err);
    atl_config_free(&cfg);
    return 2;
  }
  if (!cfg.foreground && cfg.log_file == NULL) {
    /* A detached daemon has no stderr: log next to the store. */
    size_t n = strlen(cfg.data_dir) + 16;
    cfg.log_file = malloc(n);
    snprintf(cfg.log_file, n, "%s/atelierd.log", cfg.data_dir);
  }
  rc = atl_mkdir_p(cfg.data_dir, 0700);
  if (rc != 0) {
    fprintf(stderr, "atelierd: cannot create the data directory %s: %s\n",
            cfg.data_dir, strerror(-rc));
    atl_config_free(&cfg);
    return 1;
  }
  rc = atl_log_open(cfg.log_level, cfg.log_file);
  if (rc != 0) {
    fprintf(stderr, "atelierd: cannot open the log file %s: %s\n", cfg.log_file,
            atl_strerror(rc));
    atl_config_free(&cfg);
    return 1;
  }
  check_data_dir_mode(cfg.data_dir);
  int lockfd = lock_data_dir(cfg.data_dir);
  if (lockfd < 0) {
    fprintf(stderr, "atelierd: %s: %s\n", cfg.data_dir,
            lockfd == ATL_EBUSY
                ? "another atelierd is using this data directory"
                : atl_strerror(lockfd));
    atl_config_free(&cfg);
    return 1;
  }
  if (!cfg.foreground && (rc = daemonize()) != 0) {
    fprintf(stderr, "atelierd: cannot detach: %s\n", atl_strerror(rc));
    return 1;
  }
  if (cfg.pid_file && write_pid_file(cfg.pid_file) != 0)
    atl_log_kv(ATL_LOG_WARN, "cannot write the pid file", "path", cfg.pid_file,
               NULL);

  uv_loop_t loop;
  uv_loop_init(&loop);
  atl_daemon_t d;
  rc = atl_daemon_init(&d, &loop, &cfg);
  int status = 0;
  if (rc != 0) {
    atl_log_kv(ATL_LOG_ERROR, "start-up failed", "error", atl_strerror(rc),
               NULL);
    status = 1;
    atl_daemon_shutdown(&d);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  atl_daemon_free(&d);
  uv_loop_close(&loop);
  if (status == 0)
    atl_log_kv(ATL_LOG_INFO, "atelierd stopped", NULL);
  atl_log_close();
  if (cfg.pid_file)
    unlink(cfg.pid_file);
  atl_config_free(&cfg);
  close(lockfd);
  return status;
}
