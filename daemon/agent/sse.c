/* Server-sent events, incrementally (see sse.h). */
#include "atl-build.h"

#include <stdlib.h>
#include <string.h>

#include <atelier/error.h>

#include "sse.h"

void atl_sse_init(atl_sse_t *p, size_t max) {
  memset(p, 0, sizeof(*p));
  p->max = max ? max : (size_t)16 << 20;
  strcpy(p->event, "message");
}

void atl_sse_free(atl_sse_t *p) {
  free(p->line);
  free(p->data);
  memset(p, 0, sizeof(*p));
}

static int grow(char **buf, size_t *cap, size_t need, size_t max) {
  if (need > max)
    return ATL_E2BIG;
  if (need <= *cap)
    return 0;
  size_t n = *cap ? *cap : 256;
  while (n < need)
    n *= 2;
  char *b = realloc(*buf, n);
  if (b == NULL)
    return ATL_ENOMEM;
  *buf = b;
  *cap = n;
  return 0;
}

static int dispatch(atl_sse_t *p, atl_sse_cb cb, void *user) {
  int rc = 0;
  if (p->has_data) {
    p->data[p->data_len] = '\0';
    p->events++;
    rc = cb(p->event, p->data, p->data_len, user);
  }
  p->data_len = 0;
  p->has_data = 0;
  strcpy(p->event, "message");
  return rc;
}

/* One complete line, without its ending. */
static int line(atl_sse_t *p, const char *s, size_t n, atl_sse_cb cb,
                void *user) {
  if (n == 0)
    return dispatch(p, cb, user);
  if (s[0] == ':')
    return 0; /* a comment: keep-alives, "ping"s */
  const char *colon = memchr(s, ':', n);
  size_t name_len = colon ? (size_t)(colon - s) : n;
  const char *value = colon ? colon + 1 : s + n;
  size_t value_len = colon ? n - name_len - 1 : 0;
  if (value_len > 0 && value[0] == ' ') {
    value++;
    value_len--;
  }
  if (name_len == 4 && memcmp(s, "data", 4) == 0) {
    /* data_len + "\n" + value + NUL */
    size_t need = p->data_len + (p->has_data ? 1 : 0) + value_len + 1;
    int rc = grow(&p->data, &p->data_cap, need, p->max);
    if (rc != 0)
      return rc;
    if (p->has_data)
      p->data[p->data_len++] = '\n';
    memcpy(p->data + p->data_len, value, value_len);
    p->data_len += value_len;
    p->has_data = 1;
  } else if (name_len == 5 && memcmp(s, "event", 5) == 0) {
    size_t k =
        value_len < sizeof(p->event) - 1 ? value_len : sizeof(p->event) - 1;
    memcpy(p->event, value, k);
    p->event[k] = '\0';
  }
  /* "id" and "retry" matter to a browser reconnecting, not to us. */
  return 0;
}

int atl_sse_feed(atl_sse_t *p, const char *buf, size_t len, atl_sse_cb cb,
                 void *user) {
  size_t i = 0;
  while (i < len) {
    if (p->skip_lf) {
      p->skip_lf = 0;
      if (buf[i] == '\n') {
        i++;
        continue;
      }
    }
    /* The end of the current line, if it is in this buffer. */
    size_t j = i;
    while (j < len && buf[j] != '\n' && buf[j] != '\r')
      j++;
    if (j == len) {
      /* No line end yet: keep the piece for later. */
      int rc = grow(&p->line, &p->line_cap, p->line_len + (j - i) + 1, p->max);
      if (rc != 0)
        return rc;
      memcpy(p->line + p->line_len, buf + i, j - i);
      p->line_len += j - i;
      return 0;
    }
    int rc;
    if (p->line_len > 0) {
      rc = grow(&p->line, &p->line_cap, p->line_len + (j - i) + 1, p->max);
      if (rc != 0)
        return rc;
      memcpy(p->line + p->line_len, buf + i, j - i);
      p->line_len += j - i;
      rc = line(p, p->line, p->line_len, cb, user);
      p->line_len = 0;
    } else {
      if (j - i > p->max)
        return ATL_E2BIG;
      rc = line(p, buf + i, j - i, cb, user);
    }
    if (buf[j] == '\r')
      p->skip_lf = 1;
    i = j + 1;
    if (rc != 0)
      return rc;
  }
  return 0;
}

int atl_sse_pending(const atl_sse_t *p) {
  return p->has_data || p->line_len > 0;
}
