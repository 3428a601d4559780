/* Fuzz target: the drawing plugin's SVG path parser (plugins/drawing/
 * dpath.h). Path data comes from models and from code they write, so any
 * bytes must either parse or be refused with an offset inside the input
 * and a message; whatever parses must format to a canonical text that
 * parses again to the same text (the canonical form is a fixed point),
 * and its bounds, flattening and length must come out without a crash,
 * a hang or undefined behaviour. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpath.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(why)                                                              \
  do {                                                                         \
    fprintf(stderr, "fuzz_drawing_path: %s (line %d)\n", why, __LINE__);       \
    abort();                                                                   \
  } while (0)

static void count(void *u, double x, double y, int starts) {
  (void)x;
  (void)y;
  (void)starts;
  (*(size_t *)u)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dp_path_t p = {0};
  dp_error_t e;
  if (dp_parse((const char *)data, size, &p, &e) != 0) {
    if (e.offset > size || e.msg[0] == '\0')
      FAIL("a refusal without a message or past the input");
    dp_path_free(&p);
    return 0;
  }
  if (p.n_ops == 0 || p.ops[0] != DP_MOVE)
    FAIL("a parsed path that does not start with a move");
  for (size_t i = 0; i < p.n_v; i++)
    if (!isfinite(p.v[i]))
      FAIL("a parsed number that is not finite");
  char *text = dp_format(&p);
  if (text == NULL)
    FAIL("format failed");
  dp_path_t q = {0};
  if (dp_parse(text, strlen(text), &q, &e) != 0) {
    fprintf(stderr, "canonical text %s: %s\n", text, e.msg);
    FAIL("the canonical text does not parse");
  }
  char *again = dp_format(&q);
  if (again == NULL || strcmp(text, again) != 0)
    FAIL("the canonical text is not a fixed point");
  if (q.n_ops != p.n_ops || memcmp(q.ops, p.ops, p.n_ops) != 0)
    FAIL("the canonical text has other commands");
  dp_box_t b;
  (void)dp_bounds(&p, &b);
  size_t n = 0;
  dp_flatten(&p, 0.25, count, &n);
  (void)dp_length(&p, 0.5);
  free(text);
  free(again);
  dp_path_free(&p);
  dp_path_free(&q);
  return 0;
}
