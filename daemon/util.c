/* Small helpers shared by the daemon's modules and the tools. */
#include "atl-build.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/evp.h>

#include "util.h"

char *atl_printf_new(const char *fmt, ...) {
  va_list ap;
  char *out = NULL;
  va_start(ap, fmt);
  if (vasprintf(&out, fmt, ap) < 0)
    out = NULL;
  va_end(ap);
  return out;
}

const char *atl_strerror(int err) {
  switch (err) {
  case 0:
    return "success";
#define XX(name, value, msg)                                                   \
  case ATL_##name:                                                             \
    return msg;
    ATL_ERRNO_MAP(XX)
#undef XX
  default:
    return "unknown error";
  }
}

const char *atl_err_name(int err) {
  switch (err) {
  case 0:
    return "OK";
#define XX(name, value, msg)                                                   \
  case ATL_##name:                                                             \
    return #name;
    ATL_ERRNO_MAP(XX)
#undef XX
  default:
    return "UNKNOWN";
  }
}

int64_t atl_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t atl_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

size_t atl_utf8_prefix(const char *s, size_t len, size_t max) {
  if (len <= max)
    return len;
  while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
    max--;
  return max;
}

size_t atl_u64_dec(uint64_t v, char *out) {
  char tmp[20];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  for (size_t i = 0; i < n; i++)
    out[i] = tmp[n - 1 - i];
  return n;
}

void atl_format_time_ms(int64_t ms, char *buf, size_t len) {
  /* Each thread keeps the text of the last second it formatted: a busy
   * daemon stamps thousands of log lines and events a second, and
   * gmtime_r with snprintf was a visible part of each. */
  static _Thread_local int64_t cached_sec = INT64_MIN;
  static _Thread_local char prefix[64]; /* "YYYY-MM-DDTHH:MM:SS." */
  int64_t sec = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
  int frac = (int)(ms - sec * 1000);
  if (sec != cached_sec) {
    time_t t = (time_t)sec;
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(prefix, sizeof(prefix), "%04d-%02d-%02dT%02d:%02d:%02d.",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec);
    cached_sec = sec;
  }
  char text[72];
  size_t n = strlen(prefix);
  memcpy(text, prefix, n);
  text[n++] = (char)('0' + frac / 100);
  text[n++] = (char)('0' + frac / 10 % 10);
  text[n++] = (char)('0' + frac % 10);
  text[n++] = 'Z';
  if (len == 0)
    return;
  if (n >= len)
    n = len - 1;
  memcpy(buf, text, n);
  buf[n] = '\0';
}

void atl_hex(const void *data, size_t len, char *out) {
  static const char digits[] = "0123456789abcdef";
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
  out[2 * len] = '\0';
}

int atl_random_id(char out[ATL_SESSION_ID_LEN + 1]) {
  unsigned char raw[ATL_SESSION_ID_LEN / 2];
  size_t got = 0;
  while (got < sizeof(raw)) {
    ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    got += (size_t)n;
  }
  atl_hex(raw, sizeof(raw), out);
  return 0;
}

int atl_is_session_id(const char *s) {
  if (s == NULL)
    return 0;
  for (int i = 0; i < ATL_SESSION_ID_LEN; i++) {
    char c = s[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return 0;
  }
  return s[ATL_SESSION_ID_LEN] == '\0';
}

void atl_sha256_hex(const void *data, size_t len, char out[65]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
  atl_hex(md, mdlen, out);
}

int atl_mkdir_p(const char *path, unsigned mode) {
  char buf[4096];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof(buf))
    return ATL_EINVAL;
  memcpy(buf, path, n + 1);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(buf, mode) != 0 && errno != EEXIST)
      return -errno;
    *p = '/';
  }
  if (mkdir(buf, mode) != 0 && errno != EEXIST)
    return -errno;
  struct stat st;
  if (stat(buf, &st) != 0)
    return -errno;
  return S_ISDIR(st.st_mode) ? 0 : ATL_EEXIST;
}

const char *atl_model_name_error(const char *name) {
  size_t n = strlen(name);
  if (n == 0)
    return "must not be empty";
  if (n > ATL_MODEL_NAME_MAX)
    return "is longer than 128 characters";
  if (name[0] == '/')
    return "must not start with '/'";
  if (strstr(name, "..") != NULL)
    return "must not contain \"..\"";
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                (c >= '0' && c <= '9');
    if (!alnum && strchr("._-:/@+", c) == NULL)
      return "may only contain letters, digits and . _ - : / @ +";
  }
  return NULL;
}
