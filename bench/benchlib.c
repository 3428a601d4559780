/* See benchlib.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"

uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int bench_dial(const char *path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
    fprintf(stderr, "bench: cannot connect to %s: %s\n", path, strerror(errno));
    exit(2);
  }
  return fd;
}

void bench_write_all(int fd, const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      perror("bench: write");
      exit(2);
    }
    s += w;
    n -= (size_t)w;
  }
}

void bench_rpc(int fd, const char *req, char *buf, size_t cap) {
  bench_write_all(fd, req, strlen(req));
  size_t len = 0;
  for (;;) {
    ssize_t r = read(fd, buf + len, cap - len - 1);
    if (r <= 0) {
      fprintf(stderr, "bench: connection closed\n");
      exit(2);
    }
    len += (size_t)r;
    if (buf[len - 1] == '\n')
      break;
  }
  buf[len] = '\0';
}

void bench_new_session(int fd, char out[33]) {
  char buf[4096];
  bench_rpc(fd,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session.create\"}\n",
            buf, sizeof(buf));
  char *p = strstr(buf, "\"id\":\"");
  if (p == NULL || strlen(p) < 6 + 32) {
    fprintf(stderr, "bench: session.create: unexpected answer: %s", buf);
    exit(2);
  }
  memcpy(out, p + 6, 32);
  out[32] = '\0';
}

long bench_rss_kb(long pid) {
  char path[64], line[256];
  snprintf(path, sizeof(path), "/proc/%ld/status", pid);
  FILE *f = fopen(path, "r");
  long kb = -1;
  while (f && fgets(line, sizeof(line), f))
    if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
      break;
  if (f)
    fclose(f);
  return kb;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(*v), cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
