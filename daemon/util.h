/* Small helpers shared by the daemon's modules and the tools. */
#ifndef ATL_UTIL_H
#define ATL_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <atelier/error.h>

#define ATL_SESSION_ID_LEN 32

/* The longest model name a session or a message may ask for. */
#define ATL_MODEL_NAME_MAX 128

/* NULL when name can be a model name, else what is wrong with it (a static
 * string). Model names go into URL paths (Gemini's
 * models/{model}:streamGenerateContent) and headers, so only the
 * characters providers use are allowed: letters, digits and . _ - : / @ +
 * (OpenRouter's "vendor/model", Ollama's "llama3:8b"), with no ".." and
 * no leading '/'. */
const char *atl_model_name_error(const char *name);

/* Text and symbolic name of an ATL_E* code ("unknown error" for others). */
/* printf into a new string (the caller frees it), or NULL when memory
 * runs out. */
char *atl_printf_new(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

const char *atl_strerror(int err);
const char *atl_err_name(int err);

/* Wall-clock milliseconds since the epoch, and a monotonic clock in
 * nanoseconds for durations. */
int64_t atl_now_ms(void);
/* How much of s (len bytes) fits in max bytes without cutting a UTF-8
 * character: len itself when it fits. */
size_t atl_utf8_prefix(const char *s, size_t len, size_t max);
/* v in decimal into out (at least 20 bytes, not terminated); its length.
 * For lines built by hand on hot paths, where snprintf costs most. */
size_t atl_u64_dec(uint64_t v, char *out);
/* The length of the longest prefix of s (n bytes) that a quoted JSON
 * string or a quoted log value takes as it is: bytes 0x20..0x7e other
 * than '"' and '\\'. Sixteen bytes at a time where the machine has SSE2
 * (every x86-64), eight elsewhere: the trace and the log scan every
 * string they write with it. */
static inline size_t atl_plain_prefix(const char *s, size_t n) {
  size_t i = 0;
#ifdef __SSE2__
  /* A signed compare with 0x20 catches both the control characters and
   * every byte from 0x80 up (negative as signed). */
  const __m128i sp = _mm_set1_epi8(0x20), qu = _mm_set1_epi8('"'),
                bs = _mm_set1_epi8('\\'), del = _mm_set1_epi8(0x7f);
  for (; i + 16 <= n; i += 16) {
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
    __m128i bad = _mm_or_si128(
        _mm_or_si128(_mm_cmplt_epi8(x, sp), _mm_cmpeq_epi8(x, qu)),
        _mm_or_si128(_mm_cmpeq_epi8(x, bs), _mm_cmpeq_epi8(x, del)));
    unsigned m = (unsigned)_mm_movemask_epi8(bad);
    if (m != 0)
      return i + (size_t)__builtin_ctz(m);
  }
#endif
  /* Each test sets a byte's high bit for a byte that is not plain
   * (exactly when some byte is not, though not always at that byte), so a
   * word with none set is eight plain bytes. */
  const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
  for (; i + 8 <= n; i += 8) {
    uint64_t x;
    memcpy(&x, s + i, 8);
    uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\'), d = x ^ (ones * 0x7f);
    uint64_t bad = ((x - ones * 0x20) & ~x) | x | ((q - ones) & ~q) |
                   ((b - ones) & ~b) | ((d - ones) & ~d);
    if (bad & highs)
      break;
  }
  for (; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
      break;
  }
  return i;
}
uint64_t atl_mono_ns(void);

/* Writes an RFC 3339 UTC timestamp with milliseconds, e.g.
 * "2026-11-21T15:42:18.123Z", into buf (at least 25 bytes). */
void atl_format_time_ms(int64_t ms, char *buf, size_t len);

/* Lowercase hex of len bytes into out (2*len+1 bytes, NUL-terminated). */
void atl_hex(const void *data, size_t len, char *out);

/* A new 128-bit random session id from getrandom(2) as 32 hex digits
 * (out: 33 bytes). Returns 0 or a negative ATL_E* code. */
int atl_random_id(char out[ATL_SESSION_ID_LEN + 1]);

/* 1 if s is exactly 32 lowercase hex digits. */
int atl_is_session_id(const char *s);

/* SHA-256 of data as 64 hex digits (out: 65 bytes). */
void atl_sha256_hex(const void *data, size_t len, char out[65]);

/* Makes a directory and its parents (mode for the ones it creates).
 * Returns 0 if it exists afterwards. */
int atl_mkdir_p(const char *path, unsigned mode);

#endif
