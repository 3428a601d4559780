/* The pieces error messages of the JSON Schema validator are made of,
 * and its handling of JSON numbers.
 *
 * Everything here only reads the JSON values it is given. That matters:
 * json-c's own serializer caches its output inside the object, which would
 * be a data race on a compiled schema shared by several threads, so values
 * are written out by hand.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema_int.h"

/* How much of a value a message shows before cutting it with "...". */
#define SHOW_CHARS 60

void schema_sb_init(schema_sb_t *sb) {
  sb->buf = NULL;
  sb->len = 0;
  sb->cap = 0;
  sb->oom = 0;
}

void schema_sb_free(schema_sb_t *sb) {
  free(sb->buf);
  schema_sb_init(sb);
}

static int reserve(schema_sb_t *sb, size_t extra) {
  if (sb->oom)
    return -1;
  if (sb->len + extra + 1 <= sb->cap)
    return 0;
  size_t cap = sb->cap ? sb->cap : 64;
  while (cap < sb->len + extra + 1)
    cap *= 2;
  char *p = realloc(sb->buf, cap);
  if (p == NULL) {
    sb->oom = 1;
    return -1;
  }
  sb->buf = p;
  sb->cap = cap;
  return 0;
}

void schema_sb_putn(schema_sb_t *sb, const char *s, size_t n) {
  if (reserve(sb, n) != 0)
    return;
  memcpy(sb->buf + sb->len, s, n);
  sb->len += n;
  sb->buf[sb->len] = '\0';
}

void schema_sb_puts(schema_sb_t *sb, const char *s) {
  schema_sb_putn(sb, s, strlen(s));
}

void schema_sb_putc(schema_sb_t *sb, char c) {
  schema_sb_putn(sb, &c, 1);
}

void schema_sb_printf(schema_sb_t *sb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char small[128];
  int n = vsnprintf(small, sizeof(small), fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n < sizeof(small)) {
    schema_sb_putn(sb, small, (size_t)n);
    return;
  }
  if (reserve(sb, (size_t)n) != 0)
    return;
  va_start(ap, fmt);
  vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sb->len += (size_t)n;
}

void schema_sb_truncate(schema_sb_t *sb, size_t len) {
  if (sb->buf != NULL && len < sb->len) {
    sb->len = len;
    sb->buf[len] = '\0';
  }
}

const char *schema_sb_str(const schema_sb_t *sb) {
  return sb->buf != NULL ? sb->buf : "";
}

char *schema_sb_take(schema_sb_t *sb) {
  char *s = NULL;
  if (!sb->oom)
    s = sb->buf != NULL ? sb->buf : strdup("");
  else
    free(sb->buf);
  schema_sb_init(sb);
  return s;
}

void schema_sb_put_pointer_token(schema_sb_t *sb, const char *token) {
  schema_sb_putc(sb, '/');
  for (const char *p = token; *p != '\0'; p++) {
    if (*p == '~')
      schema_sb_puts(sb, "~0");
    else if (*p == '/')
      schema_sb_puts(sb, "~1");
    else
      schema_sb_putc(sb, *p);
  }
}

void schema_sb_put_pointer_index(schema_sb_t *sb, size_t index) {
  schema_sb_printf(sb, "/%zu", index);
}

const char *schema_kind_phrase(json_object *v) {
  switch (json_object_get_type(v)) {
  case json_type_null:
    return "null";
  case json_type_boolean:
    return "a boolean";
  case json_type_int:
  case json_type_double:
    return "a number";
  case json_type_string:
    return "a string";
  case json_type_array:
    return "an array";
  case json_type_object:
    return "an object";
  }
  return "a value";
}

void schema_sb_put_number(schema_sb_t *sb, json_object *v) {
  if (json_object_is_type(v, json_type_int)) {
    int64_t i = json_object_get_int64(v);
    /* json-c keeps integers above INT64_MAX as unsigned and clamps them
     * when they are read as signed. */
    if (i == INT64_MAX)
      schema_sb_printf(sb, "%" PRIu64, json_object_get_uint64(v));
    else
      schema_sb_printf(sb, "%" PRId64, i);
    return;
  }
  double d = json_object_get_double(v);
  if (isnan(d)) {
    schema_sb_puts(sb, "NaN");
    return;
  }
  if (isinf(d)) {
    schema_sb_puts(sb, d > 0 ? "Infinity" : "-Infinity");
    return;
  }
  /* The shortest precision that reads back as the same double, so that
   * 0.1 is shown as 0.1 and not as 0.10000000000000001. */
  char buf[40];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof(buf), "%.*g", prec, d);
    if (strtod(buf, NULL) == d)
      break;
  }
  schema_sb_puts(sb, buf);
}

/* Writes s as a JSON string literal of at most max code points (then
 * "..." inside the quotes). */
static void put_quoted(schema_sb_t *sb, const char *s, size_t n, size_t max) {
  schema_sb_putc(sb, '"');
  size_t chars = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c & 0xC0) != 0x80 && chars++ == max) {
      schema_sb_puts(sb, "...");
      break;
    }
    switch (c) {
    case '"':
      schema_sb_puts(sb, "\\\"");
      break;
    case '\\':
      schema_sb_puts(sb, "\\\\");
      break;
    case '\n':
      schema_sb_puts(sb, "\\n");
      break;
    case '\r':
      schema_sb_puts(sb, "\\r");
      break;
    case '\t':
      schema_sb_puts(sb, "\\t");
      break;
    default:
      if (c < 0x20)
        schema_sb_printf(sb, "\\u%04x", c);
      else
        schema_sb_putc(sb, (char)c);
    }
  }
  schema_sb_putc(sb, '"');
}

void schema_sb_describe(schema_sb_t *sb, json_object *v) {
  switch (json_object_get_type(v)) {
  case json_type_null:
    schema_sb_puts(sb, "null");
    break;
  case json_type_boolean:
    schema_sb_puts(sb, json_object_get_boolean(v) ? "true" : "false");
    break;
  case json_type_int:
  case json_type_double:
    schema_sb_put_number(sb, v);
    break;
  case json_type_string:
    put_quoted(sb, json_object_get_string(v),
               (size_t)json_object_get_string_len(v), SHOW_CHARS);
    break;
  case json_type_array: {
    size_t n = json_object_array_length(v);
    if (n == 0)
      schema_sb_puts(sb, "an empty array");
    else
      schema_sb_put_count(sb, (long long)n, "an array of 1 item",
                          "an array of %lld items");
    break;
  }
  case json_type_object:
    if (json_object_object_length(v) == 0)
      schema_sb_puts(sb, "an empty object");
    else
      schema_sb_puts(sb, "an object");
    break;
  }
}

/* Compact JSON, stopping once the output has grown past limit bytes; the
 * caller then cuts it. The limit also bounds the recursion: every level
 * writes at least one byte. */
static void put_compact(schema_sb_t *sb, json_object *v, size_t limit) {
  if (sb->len > limit || sb->oom)
    return;
  switch (json_object_get_type(v)) {
  case json_type_string:
    put_quoted(sb, json_object_get_string(v),
               (size_t)json_object_get_string_len(v), SHOW_CHARS);
    break;
  case json_type_array: {
    schema_sb_putc(sb, '[');
    size_t n = json_object_array_length(v);
    for (size_t i = 0; i < n && sb->len <= limit; i++) {
      if (i > 0)
        schema_sb_putc(sb, ',');
      put_compact(sb, json_object_array_get_idx(v, i), limit);
    }
    schema_sb_putc(sb, ']');
    break;
  }
  case json_type_object: {
    schema_sb_putc(sb, '{');
    int first = 1;
    json_object_object_foreach(v, key, val) {
      if (sb->len > limit)
        break;
      if (!first)
        schema_sb_putc(sb, ',');
      first = 0;
      put_quoted(sb, key, strlen(key), SHOW_CHARS);
      schema_sb_putc(sb, ':');
      put_compact(sb, val, limit);
    }
    schema_sb_putc(sb, '}');
    break;
  }
  default:
    schema_sb_describe(sb, v);
  }
}

void schema_sb_put_expected(schema_sb_t *sb, json_object *v) {
  json_type t = json_object_get_type(v);
  if (t != json_type_array && t != json_type_object) {
    schema_sb_describe(sb, v);
    return;
  }
  size_t start = sb->len;
  put_compact(sb, v, start + SHOW_CHARS);
  if (sb->oom || sb->len <= start + SHOW_CHARS + 1)
    return;
  /* Cut on a character boundary. */
  size_t cut = start + SHOW_CHARS;
  while (cut > start && (sb->buf[cut] & 0xC0) == 0x80)
    cut--;
  schema_sb_truncate(sb, cut);
  schema_sb_puts(sb, "...");
}

size_t schema_utf8_length(const char *s, size_t n) {
  size_t count = 0;
  for (size_t i = 0; i < n; i++)
    if (((unsigned char)s[i] & 0xC0) != 0x80)
      count++;
  return count;
}

size_t schema_edit_distance(const char *a, const char *b, size_t max) {
  size_t la = strlen(a), lb = strlen(b);
  size_t diff = la > lb ? la - lb : lb - la;
  /* Names longer than this are not worth a quadratic comparison. */
  if (diff > max || la > 64 || lb > 64)
    return max + 1;
  /* Three rows of the dynamic-programming table: two back for swaps. */
  size_t rows[3][65];
  size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
  for (size_t j = 0; j <= lb; j++)
    prev[j] = j;
  for (size_t i = 1; i <= la; i++) {
    cur[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      size_t best = prev[j] + 1;
      if (cur[j - 1] + 1 < best)
        best = cur[j - 1] + 1;
      if (prev[j - 1] + cost < best)
        best = prev[j - 1] + cost;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          prev2[j - 2] + 1 < best)
        best = prev2[j - 2] + 1;
      cur[j] = best;
    }
    size_t *t = prev2;
    prev2 = prev;
    prev = cur;
    cur = t;
  }
  return prev[lb];
}

void schema_sb_put_count(schema_sb_t *sb, long long n, const char *singular,
                         const char *plural) {
  if (n == 1) {
    schema_sb_puts(sb, singular);
    return;
  }
  /* The plural form is one of the fixed formats in schema.c with a single
   * %lld; it never comes from input. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  schema_sb_printf(sb, plural, n);
#pragma GCC diagnostic pop
}

/* ---------------------------------------------------------------------
 * Numbers
 * ------------------------------------------------------------------ */

int schema_is_number(json_object *v) {
  json_type t = json_object_get_type(v);
  return t == json_type_int || t == json_type_double;
}

/* A JSON number as a long double, which holds every int64, uint64 and
 * double exactly on the platforms we build for, so that comparing 1 with
 * 1.0 or 2^63 with a double needs no special cases. */
long double schema_num_value(json_object *v) {
  if (json_object_is_type(v, json_type_int)) {
    int64_t i = json_object_get_int64(v);
    if (i == INT64_MAX)
      return (long double)json_object_get_uint64(v);
    return (long double)i;
  }
  return (long double)json_object_get_double(v);
}

/* Compares two numbers: -1, 0 or 1 (and 2 if either is NaN). Two integers
 * are compared as integers, which is exact even where long double is no
 * wider than double (as under valgrind). */
int schema_num_cmp(json_object *a, json_object *b) {
  if (json_object_is_type(a, json_type_int) &&
      json_object_is_type(b, json_type_int)) {
    int64_t x = json_object_get_int64(a), y = json_object_get_int64(b);
    if (x == INT64_MAX && y == INT64_MAX) {
      uint64_t ux = json_object_get_uint64(a), uy = json_object_get_uint64(b);
      return (ux > uy) - (ux < uy);
    }
    return (x > y) - (x < y);
  }
  long double x = schema_num_value(a), y = schema_num_value(b);
  if (x < y)
    return -1;
  if (x > y)
    return 1;
  return x == y ? 0 : 2;
}

int schema_is_integer(json_object *v) {
  if (json_object_is_type(v, json_type_int))
    return 1;
  if (!json_object_is_type(v, json_type_double))
    return 0;
  double d = json_object_get_double(v);
  return isfinite(d) && floor(d) == d;
}
