/* What the benchmark clients (bench/tool-call, bench/agent, bench/sse)
 * share: clocks, atelierd's API socket for set-up calls, and /proc. Every
 * failure ends the program with status 2 and a message: a benchmark that
 * cannot set up has nothing to measure. */
#ifndef ATL_BENCHLIB_H
#define ATL_BENCHLIB_H

#include <stddef.h>
#include <stdint.h>

/* The monotonic clock in nanoseconds. */
uint64_t bench_now_ns(void);
/* Connects to the unix socket at path (atelierd's api.sock). */
int bench_dial(const char *path);
/* Writes all n bytes. */
void bench_write_all(int fd, const char *s, size_t n);
/* One blocking JSON-RPC exchange (req ends with '\n'); the answer line is
 * in buf, NUL-terminated. */
void bench_rpc(int fd, const char *req, char *buf, size_t cap);
/* session.create; the new id (32 hex digits) in out. */
void bench_new_session(int fd, char out[33]);
/* A process's resident set in kB, or -1. */
long bench_rss_kb(long pid);
/* The median of v[0 .. n) (n >= 1), which it sorts. */
double bench_median(double *v, int n);

#endif
