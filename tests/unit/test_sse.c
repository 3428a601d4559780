/* The server-sent events parser (daemon/agent/sse.c): the format's rules,
 * and the same events whatever the way the bytes are split. */
#include "atl-build.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atelier/error.h>

#include "agent/sse.h"

typedef struct {
  char out[4096];
  size_t len;
  int stop_after; /* stop when this many events were seen (0: never) */
  int seen;
} sink_t;

/* Records each event as "event|data" lines. */
static int record(const char *event, const char *data, size_t len, void *user) {
  sink_t *s = user;
  cr_assert_eq(strlen(data), len, "data is NUL-terminated at len");
  s->len += (size_t)snprintf(s->out + s->len, sizeof(s->out) - s->len,
                             "%s|%s\n", event, data);
  s->seen++;
  return s->stop_after && s->seen >= s->stop_after ? 7 : 0;
}

static const char *parse_all(const char *text, sink_t *s) {
  atl_sse_t p;
  atl_sse_init(&p, 0);
  cr_assert_eq(atl_sse_feed(&p, text, strlen(text), record, s), 0);
  atl_sse_free(&p);
  return s->out;
}

Test(sse, the_formats_rules) {
  sink_t s = {0};
  parse_all(": a comment, then a ping\n"
            "event: message_start\n"
            "data: {\"a\":1}\n"
            "\n"
            "data:no space\n"
            "data:  two spaces\n"
            "id: 4\n"
            "retry: 10\n"
            "unknown: x\n"
            "\n"
            "event: only a name\n"
            "\n"
            "data\n"
            "\n",
            &s);
  cr_assert_str_eq(s.out, "message_start|{\"a\":1}\n"
                          "message|no space\n"
                          " two spaces\n" /* only the first space goes */
                          "message|\n");
}

Test(sse, every_line_ending) {
  sink_t a = {0}, b = {0}, c = {0};
  parse_all("event: e\ndata: 1\ndata: 2\n\ndata: 3\n\n", &a);
  parse_all("event: e\r\ndata: 1\r\ndata: 2\r\n\r\ndata: 3\r\n\r\n", &b);
  parse_all("event: e\rdata: 1\rdata: 2\r\rdata: 3\r\r", &c);
  cr_assert_str_eq(a.out, "e|1\n2\nmessage|3\n");
  cr_assert_str_eq(b.out, a.out);
  cr_assert_str_eq(c.out, a.out);
}

/* Split at every position, and fed a byte at a time: the same events. */
Test(sse, any_split_gives_the_same_events) {
  const char *text = "event: content_block_delta\r\n"
                     "data: {\"delta\":{\"text\":\"h\xc3\xa9llo\"}}\r\n\r\n"
                     ": ping\n"
                     "data: [DONE]\r\r";
  sink_t whole = {0};
  parse_all(text, &whole);
  cr_assert_str_eq(
      whole.out, "content_block_delta|{\"delta\":{\"text\":\"h\xc3\xa9llo\"}}\n"
                 "message|[DONE]\n");
  size_t n = strlen(text);
  for (size_t cut = 0; cut <= n; cut++) {
    sink_t s = {0};
    atl_sse_t p;
    atl_sse_init(&p, 0);
    cr_assert_eq(atl_sse_feed(&p, text, cut, record, &s), 0);
    cr_assert_eq(atl_sse_feed(&p, text + cut, n - cut, record, &s), 0);
    cr_assert_str_eq(s.out, whole.out, "cut at %zu", cut);
    cr_assert_not(atl_sse_pending(&p));
    atl_sse_free(&p);
  }
  sink_t s = {0};
  atl_sse_t p;
  atl_sse_init(&p, 0);
  for (size_t i = 0; i < n; i++)
    cr_assert_eq(atl_sse_feed(&p, text + i, 1, record, &s), 0);
  cr_assert_str_eq(s.out, whole.out);
  atl_sse_free(&p);
}

Test(sse, a_cut_stream_leaves_a_pending_event) {
  sink_t s = {0};
  atl_sse_t p;
  atl_sse_init(&p, 0);
  const char *text = "data: complete\n\ndata: {\"cut";
  cr_assert_eq(atl_sse_feed(&p, text, strlen(text), record, &s), 0);
  cr_assert_str_eq(s.out, "message|complete\n");
  cr_assert(atl_sse_pending(&p), "the partial event is noticed");
  atl_sse_free(&p);
  /* A complete data line without its blank line is pending too. */
  sink_t t = {0};
  atl_sse_init(&p, 0);
  cr_assert_eq(atl_sse_feed(&p, "data: x\n", 8, record, &t), 0);
  cr_assert(atl_sse_pending(&p));
  cr_assert_eq(t.seen, 0);
  atl_sse_free(&p);
}

Test(sse, the_callback_can_stop_it) {
  sink_t s = {0};
  s.stop_after = 1;
  atl_sse_t p;
  atl_sse_init(&p, 0);
  const char *text = "data: 1\n\ndata: 2\n\n";
  cr_assert_eq(atl_sse_feed(&p, text, strlen(text), record, &s), 7);
  cr_assert_str_eq(s.out, "message|1\n");
  atl_sse_free(&p);
}

Test(sse, oversized_lines_and_events_are_refused) {
  sink_t s = {0};
  atl_sse_t p;
  atl_sse_init(&p, 16);
  const char *line = "data: 0123456789abcdef\n\n";
  cr_assert_eq(atl_sse_feed(&p, line, strlen(line), record, &s), ATL_E2BIG);
  atl_sse_free(&p);
  /* Built from short lines, the event itself grows too large. */
  atl_sse_init(&p, 16);
  const char *many = "data: 01234\ndata: 56789\ndata: abcde\n\n";
  cr_assert_eq(atl_sse_feed(&p, many, strlen(many), record, &s), ATL_E2BIG);
  atl_sse_free(&p);
  /* A line that arrives in pieces is held to the limit too. */
  atl_sse_init(&p, 16);
  int rc = 0;
  for (int i = 0; i < 40 && rc == 0; i++)
    rc = atl_sse_feed(&p, "x", 1, record, &s);
  cr_assert_eq(rc, ATL_E2BIG);
  atl_sse_free(&p);
  cr_assert_eq(s.seen, 0);
}
