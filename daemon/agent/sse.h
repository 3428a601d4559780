/* An incremental parser of server-sent events (the WHATWG "text/event-
 * stream" format), which all three providers stream their answers in.
 *
 * Bytes go in as they arrive, split anywhere (inside a line, inside a
 * UTF-8 sequence, between "\r" and "\n"); every complete event comes out
 * through the callback. Lines end in "\n", "\r\n" or "\r"; "data:" lines of
 * one event are joined with "\n"; a leading space after the colon is
 * dropped; comments (":") and unknown fields are ignored; a blank line
 * dispatches the event, and an event with no data is not dispatched (as
 * the specification says).
 */
#ifndef ATL_SSE_H
#define ATL_SSE_H

#include <stddef.h>

/* Called for each event. event is its "event:" field ("message" when
 * absent); data is NUL-terminated, len excludes the NUL. Both belong to
 * the parser and are valid until the callback returns. Return 0 to go on,
 * nonzero to stop: atl_sse_feed() then returns that value. */
typedef int (*atl_sse_cb)(const char *event, const char *data, size_t len,
                          void *user);

typedef struct {
  char *line; /* the current, incomplete line */
  size_t line_len, line_cap;
  char *data; /* the current event's data so far */
  size_t data_len, data_cap;
  char event[64];
  int has_data;
  int skip_lf;   /* the last byte was "\r": a following "\n" is its pair */
  size_t max;    /* the largest line or event accepted, in bytes */
  size_t events; /* events dispatched so far */
} atl_sse_t;

/* max: the largest line or event, in bytes (0: 16 MiB). */
void atl_sse_init(atl_sse_t *p, size_t max);
void atl_sse_free(atl_sse_t *p);

/* Parses len bytes. Returns 0, the callback's nonzero value, ATL_E2BIG if
 * a line or an event exceeds max, or ATL_ENOMEM. After an error the parser
 * must be freed. */
int atl_sse_feed(atl_sse_t *p, const char *buf, size_t len, atl_sse_cb cb,
                 void *user);

/* At the end of the stream: an event whose blank line never came is not
 * dispatched (it may be cut short). Returns 1 if such a partial event or
 * line was pending, so that callers can tell a truncated stream, else 0. */
int atl_sse_pending(const atl_sse_t *p);

#endif
