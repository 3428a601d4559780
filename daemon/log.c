/* Structured logging in logfmt (see log.h).
 *
 * Each line is built in a buffer on the caller's stack and written with a
 * single write(2). The log file is opened with O_APPEND, so the kernel
 * places every write at the end of the file as one unit and lines from
 * different threads (or processes) never interleave.
 *
 * The file descriptor lives in an atomic int. Rotation (atl_log_reopen)
 * opens the file afresh and dup2()s the new descriptor onto the old number:
 * dup2 replaces the descriptor atomically, so a writer that read the number
 * a moment before writes either to the old file or to the new one, never to
 * a closed or recycled descriptor, and writers take no lock at all. Only
 * atl_log_open and atl_log_close, which change the number itself, make
 * writers wait, through a read-write lock that writers hold for reading.
 */
#include "atl-build.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

/* The longest line written, newline included. Longer lines are cut and end
 * with TRUNC_MARK, so that a runaway value cannot flood the log. */
#define LINE_MAX_BYTES 16384
#define TRUNC_MARK "\xe2\x80\xa6(truncated)"
#define REDACTED "(redacted)"
/* Secrets shorter than this are ignored (see log.h). */
#define SECRET_MIN_LEN 4

static atomic_int g_level = ATL_LOG_INFO;
/* The tap (the admin socket's trace of log lines) and the level it wants,
 * -1 when off: lines at that level are formatted even when the file does
 * not get them. */
static atomic_int g_tap_level = -1;
static _Atomic(atl_log_tap_fn) g_tap;
static atomic_int g_fd = STDERR_FILENO;

/* Serializes open, reopen and close with each other. */
static pthread_mutex_t g_ctl = PTHREAD_MUTEX_INITIALIZER;
/* Writers hold it for reading while they use g_fd; open and close hold it
 * for writing when they change which descriptor number g_fd holds. */
static pthread_rwlock_t g_fd_lock = PTHREAD_RWLOCK_INITIALIZER;
/* The open file's path, NULL when logging to stderr (under g_ctl). */
static char *g_path;

/* Registered secrets, longest first so that a secret that contains another
 * is scrubbed whole. */
static pthread_rwlock_t g_secrets_lock = PTHREAD_RWLOCK_INITIALIZER;
static char **g_secrets;
static size_t *g_secret_lens;
static size_t g_nsecrets;
/* The bytes a registered secret starts with, so that a value is searched
 * for secrets only where one could begin. */
static uint64_t g_secret_first[4];

static const char *const level_names[] = {"error", "warn", "info", "debug",
                                          "trace"};

const char *atl_log_level_name(atl_log_level_t level) {
  if ((int)level < 0 || (int)level > ATL_LOG_TRACE)
    return "unknown";
  return level_names[level];
}

int atl_log_level_parse(const char *name) {
  if (name == NULL)
    return -1;
  for (int i = 0; i <= ATL_LOG_TRACE; i++) {
    if (strcasecmp(name, level_names[i]) == 0)
      return i;
  }
  return -1;
}

void atl_log_set_level(atl_log_level_t level) {
  if ((int)level < 0)
    level = ATL_LOG_ERROR;
  if ((int)level > ATL_LOG_TRACE)
    level = ATL_LOG_TRACE;
  atomic_store(&g_level, (int)level);
}

atl_log_level_t atl_log_get_level(void) {
  return (atl_log_level_t)atomic_load(&g_level);
}

int atl_log_enabled(atl_log_level_t level) {
  return (int)level <= atomic_load(&g_level) ||
         (int)level <= atomic_load(&g_tap_level);
}

void atl_log_set_tap(atl_log_tap_fn fn, int level) {
  atomic_store(&g_tap, fn);
  atomic_store(&g_tap_level, fn != NULL ? level : -1);
}

static int open_log_file(const char *path) {
  int fd;
  do {
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  } while (fd < 0 && errno == EINTR);
  return fd < 0 ? -errno : fd;
}

/* Goes back to stderr, closing the log file if there is one. The caller
 * holds g_ctl; the write lock keeps writers off the descriptor while it
 * changes and is closed. */
static void use_stderr(void) {
  int old = atomic_load(&g_fd);
  if (old != STDERR_FILENO) {
    pthread_rwlock_wrlock(&g_fd_lock);
    atomic_store(&g_fd, STDERR_FILENO);
    pthread_rwlock_unlock(&g_fd_lock);
    close(old);
  }
  free(g_path);
  g_path = NULL;
}

int atl_log_open(atl_log_level_t level, const char *path) {
  int rc = 0;
  atl_log_set_level(level);
  pthread_mutex_lock(&g_ctl);
  if (path == NULL) {
    use_stderr();
    goto out;
  }
  char *copy = strdup(path);
  if (copy == NULL) {
    rc = ATL_ENOMEM;
    goto out;
  }
  int fd = open_log_file(path);
  if (fd < 0) {
    free(copy);
    rc = fd;
    goto out;
  }
  int old = atomic_load(&g_fd);
  if (old != STDERR_FILENO) {
    /* Already on a file: keep the descriptor number, as reopen does. */
    if (dup3(fd, old, O_CLOEXEC) < 0)
      rc = -errno;
    close(fd);
    if (rc < 0) {
      free(copy);
      goto out;
    }
  } else {
    pthread_rwlock_wrlock(&g_fd_lock);
    atomic_store(&g_fd, fd);
    pthread_rwlock_unlock(&g_fd_lock);
  }
  free(g_path);
  g_path = copy;
out:
  pthread_mutex_unlock(&g_ctl);
  return rc;
}

int atl_log_reopen(void) {
  int rc = 0;
  pthread_mutex_lock(&g_ctl);
  if (g_path != NULL) {
    int fd = open_log_file(g_path);
    if (fd < 0) {
      /* Keep writing to the old file rather than losing lines. */
      rc = fd;
    } else {
      if (dup3(fd, atomic_load(&g_fd), O_CLOEXEC) < 0)
        rc = -errno;
      close(fd);
    }
  }
  pthread_mutex_unlock(&g_ctl);
  return rc;
}

void atl_log_close(void) {
  pthread_mutex_lock(&g_ctl);
  use_stderr();
  pthread_mutex_unlock(&g_ctl);
  /* Registered secrets are kept: anything logged after a close (to stderr)
   * or after the log is opened again must still be scrubbed. */
}

void atl_log_add_secret(const char *secret) {
  if (secret == NULL)
    return;
  size_t len = strlen(secret);
  if (len < SECRET_MIN_LEN)
    return;
  pthread_rwlock_wrlock(&g_secrets_lock);
  for (size_t i = 0; i < g_nsecrets; i++) {
    if (g_secret_lens[i] == len && memcmp(g_secrets[i], secret, len) == 0)
      goto out;
  }
  char *copy = strdup(secret);
  char **secrets = realloc(g_secrets, (g_nsecrets + 1) * sizeof(*secrets));
  if (secrets != NULL)
    g_secrets = secrets;
  size_t *lens = realloc(g_secret_lens, (g_nsecrets + 1) * sizeof(*lens));
  if (lens != NULL)
    g_secret_lens = lens;
  if (copy == NULL || secrets == NULL || lens == NULL) {
    free(copy);
    goto out;
  }
  /* Insert keeping the list sorted by decreasing length. */
  size_t at = g_nsecrets;
  while (at > 0 && g_secret_lens[at - 1] < len) {
    g_secrets[at] = g_secrets[at - 1];
    g_secret_lens[at] = g_secret_lens[at - 1];
    at--;
  }
  g_secrets[at] = copy;
  g_secret_lens[at] = len;
  g_nsecrets++;
  unsigned char first = (unsigned char)secret[0];
  g_secret_first[first >> 6] |= (uint64_t)1 << (first & 63);
out:
  pthread_rwlock_unlock(&g_secrets_lock);
}

/* A line under construction. cap excludes the room kept for the
 * truncation mark, a closing quote and the newline, so that those always
 * fit once the line is cut. */
typedef struct {
  char *buf;
  size_t len;
  size_t cap;
  int truncated; /* something did not fit */
  int marked;    /* the truncation mark has been written */
} line_t;

/* Drops a UTF-8 sequence left incomplete at the end of the line by a cut,
 * so that the truncation mark never follows half a character. */
static void trim_partial_utf8(line_t *l) {
  size_t i = l->len, back = 0;
  while (i > 0 && back < 4 && ((unsigned char)l->buf[i - 1] & 0xC0) == 0x80) {
    i--;
    back++;
  }
  if (i == 0)
    return;
  unsigned char lead = (unsigned char)l->buf[i - 1];
  size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  if (need > 1 && back + 1 < need)
    l->len = i - 1;
}

/* Appends n bytes, or nothing if they do not fit: an escape sequence is
 * never cut in half, which would make the line unparsable. */
static void put(line_t *l, const char *s, size_t n) {
  if (l->truncated)
    return;
  if (l->len + n > l->cap) {
    l->truncated = 1;
    trim_partial_utf8(l);
    return;
  }
  memcpy(l->buf + l->len, s, n);
  l->len += n;
}

static void put_str(line_t *l, const char *s) {
  put(l, s, strlen(s));
}

/* Writes one byte of a value, escaped if it is quoted. */
static void put_char(line_t *l, unsigned char c, int quoted) {
  if (!quoted) {
    put(l, (const char *)&c, 1);
    return;
  }
  char esc[8];
  switch (c) {
  case '"':
    put(l, "\\\"", 2);
    break;
  case '\\':
    put(l, "\\\\", 2);
    break;
  case '\n':
    put(l, "\\n", 2);
    break;
  case '\r':
    put(l, "\\r", 2);
    break;
  case '\t':
    put(l, "\\t", 2);
    break;
  default:
    if (c < 0x20 || c == 0x7f) {
      snprintf(esc, sizeof(esc), "\\u%04x", c);
      put_str(l, esc);
    } else {
      put(l, (const char *)&c, 1);
    }
  }
}

static void put_mark(line_t *l) {
  if (l->marked)
    return;
  memcpy(l->buf + l->len, TRUNC_MARK, sizeof(TRUNC_MARK) - 1);
  l->len += sizeof(TRUNC_MARK) - 1;
  l->marked = 1;
}

static int needs_quotes(const char *v) {
  if (*v == '\0')
    return 1;
  for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
    if (*p <= ' ' || *p == '"' || *p == '=' || *p == 0x7f)
      return 1;
  }
  return 0;
}

/* The length of the longest registered secret that starts at s, or 0. The
 * caller holds g_secrets_lock for reading. */
static size_t secret_at(const char *s, size_t avail) {
  for (size_t i = 0; i < g_nsecrets; i++) {
    size_t n = g_secret_lens[i];
    if (n <= avail && memcmp(s, g_secrets[i], n) == 0)
      return n;
  }
  return 0;
}

/* Appends as much of n bytes that need no escaping as fits; a cut marks
 * the line truncated (and never leaves half a character). */
static void put_run(line_t *l, const char *s, size_t n) {
  if (l->truncated)
    return;
  size_t room = l->cap - l->len;
  memcpy(l->buf + l->len, s, n <= room ? n : room);
  l->len += n <= room ? n : room;
  if (n > room) {
    l->truncated = 1;
    trim_partial_utf8(l);
  }
}

/* How many of the n bytes at s come before the first place a registered
 * secret could start. The caller holds g_secrets_lock for reading. */
static size_t secret_free_prefix(const char *s, size_t n) {
  if (g_nsecrets == 0)
    return n;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (g_secret_first[c >> 6] & ((uint64_t)1 << (c & 63)))
      return i;
  }
  return n;
}

/* Writes a value, quoted when needed, with every registered secret in it
 * replaced by REDACTED. Scrubbing the raw text (before escaping) finds a
 * secret even when it contains characters that escaping would change.
 * Runs of bytes that need neither are copied whole: a byte at a time,
 * each log line cost a traced call more than the rest of its trace
 * (bench/README.md, admin). */
static void put_value(line_t *l, const char *v) {
  int quoted = needs_quotes(v);
  size_t n = strlen(v);
  /* Closed on a cut only if it was opened: a line cut before it must not
   * end with a stray quote. */
  int opened = 0;
  if (quoted) {
    put(l, "\"", 1);
    opened = !l->truncated;
  }
  for (size_t i = 0; i < n && !l->truncated;) {
    size_t run = quoted ? atl_plain_prefix(v + i, n - i) : n - i;
    run = secret_free_prefix(v + i, run);
    if (run > 0) {
      put_run(l, v + i, run);
      i += run;
      continue;
    }
    size_t s = g_nsecrets > 0 ? secret_at(v + i, n - i) : 0;
    if (s > 0) {
      put_str(l, REDACTED);
      i += s;
    } else {
      put_char(l, (unsigned char)v[i], quoted);
      i++;
    }
  }
  /* The closing quote can be what does not fit. */
  if (!l->truncated && quoted)
    put(l, "\"", 1);
  if (l->truncated) {
    /* Room for these was kept aside (see line_t), so they bypass cap. The
     * quote is closed so that the cut line still parses. */
    put_mark(l);
    if (opened)
      l->buf[l->len++] = '"';
  }
}

static int key_char_ok(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' ||
         c == '/' || c == ':';
}

/* Keys are written bare, so characters that would break the pair (spaces,
 * quotes, '=', control characters) become '_'. Secrets are scrubbed from
 * keys too, in case a caller builds a key from data. */
static void put_key(line_t *l, const char *k) {
  if (*k == '\0') {
    put(l, "_", 1);
    return;
  }
  size_t n = strlen(k);
  for (size_t i = 0; i < n;) {
    /* The usual key, all fitting characters, goes in one copy. */
    size_t run = 0;
    while (i + run < n && key_char_ok((unsigned char)k[i + run]))
      run++;
    run = secret_free_prefix(k + i, run);
    if (run > 0) {
      put_run(l, k + i, run);
      i += run;
      continue;
    }
    size_t s = g_nsecrets > 0 ? secret_at(k + i, n - i) : 0;
    if (s > 0) {
      put_str(l, REDACTED);
      i += s;
      continue;
    }
    unsigned char c = (unsigned char)k[i++];
    put_char(l, key_char_ok(c) ? c : '_', 0);
  }
}

/* 1 if a value under this key must not be logged. '-' and '_' are treated
 * alike so that "x_api_key" and "api-key" are caught too. */
static int is_secret_key(const char *k) {
#define NAME(s)                                                                \
  { s, sizeof(s) - 1 }
  static const struct {
    const char *text;
    size_t len;
  } names[] = {
      NAME("api_key"),   NAME("apikey"),         NAME("authorization"),
      NAME("password"),  NAME("secret"),         NAME("token"),
      NAME("x_api_key"), NAME("x_goog_api_key"),
  };
#undef NAME
  char norm[32];
  size_t n = strlen(k);
  if (n >= sizeof(norm))
    return 0;
  for (size_t i = 0; i <= n; i++) {
    char c = k[i] == '-' ? '_' : k[i];
    norm[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
  }
  /* Every key of every line comes here: lengths first, then one compare. */
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    if (names[i].len == n && memcmp(norm, names[i].text, n) == 0)
      return 1;
  }
  return 0;
}

/* Formats a line into buf (LINE_MAX_BYTES bytes) without its newline and
 * returns its length. The result always has room for one more byte. */
static size_t format_line(char *buf, atl_log_level_t level, const char *msg,
                          va_list ap) {
  line_t l = {buf, 0, LINE_MAX_BYTES - sizeof(TRUNC_MARK) - 2, 0, 0};
  char ts[32];
  atl_format_time_ms(atl_now_ms(), ts, sizeof(ts));
  put_str(&l, "ts=");
  put_str(&l, ts);
  put_str(&l, " level=");
  put_str(&l, atl_log_level_name(level));

  pthread_rwlock_rdlock(&g_secrets_lock);
  for (;;) {
    const char *k = va_arg(ap, const char *);
    if (k == NULL)
      break;
    const char *v = va_arg(ap, const char *);
    if (v == NULL || l.truncated)
      continue;
    put(&l, " ", 1);
    put_key(&l, k);
    put(&l, "=", 1);
    put_value(&l, is_secret_key(k) ? REDACTED : v);
  }
  if (!l.truncated) {
    put_str(&l, " msg=");
    put_value(&l, msg != NULL ? msg : "");
  }
  pthread_rwlock_unlock(&g_secrets_lock);
  /* A cut inside a key rather than a value has no mark yet. */
  if (l.truncated)
    put_mark(&l);
  return l.len;
}

static void write_line(const char *buf, size_t len) {
  pthread_rwlock_rdlock(&g_fd_lock);
  int fd = atomic_load(&g_fd);
  size_t off = 0;
  while (off < len) {
    ssize_t n = write(fd, buf + off, len - off);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      break; /* Nowhere left to report a failing log. */
    }
    off += (size_t)n;
  }
  pthread_rwlock_unlock(&g_fd_lock);
}

void atl_log_kvv(atl_log_level_t level, const char *msg, va_list ap) {
  if (!atl_log_enabled(level))
    return;
  char buf[LINE_MAX_BYTES];
  size_t len = format_line(buf, level, msg, ap);
  atl_log_tap_fn tap = atomic_load(&g_tap);
  if (tap != NULL && (int)level <= atomic_load(&g_tap_level))
    tap(level, buf, len);
  if ((int)level > atomic_load(&g_level))
    return;
  buf[len++] = '\n';
  write_line(buf, len);
}

void atl_log_kv(atl_log_level_t level, const char *msg, ...) {
  va_list ap;
  va_start(ap, msg);
  atl_log_kvv(level, msg, ap);
  va_end(ap);
}

/* Passes a message through atl_log_kvv with no fields. A va_list cannot be
 * built by hand, so this variadic shim makes an empty one. */
static void log_plain(atl_log_level_t level, const char *msg, ...) {
  va_list ap;
  va_start(ap, msg);
  atl_log_kvv(level, msg, ap);
  va_end(ap);
}

void atl_log_msg(atl_log_level_t level, const char *fmt, ...) {
  if (!atl_log_enabled(level))
    return;
  char msg[LINE_MAX_BYTES];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  log_plain(level, msg, (const char *)NULL);
}

size_t atl_log_format(char *buf, size_t len, atl_log_level_t level,
                      const char *msg, ...) {
  char line[LINE_MAX_BYTES];
  va_list ap;
  va_start(ap, msg);
  size_t n = format_line(line, level, msg, ap);
  va_end(ap);
  if (len == 0)
    return 0;
  if (n >= len)
    n = len - 1;
  memcpy(buf, line, n);
  buf[n] = '\0';
  return n;
}
