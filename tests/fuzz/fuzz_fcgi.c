/* Fuzz target: what atelier-fcgi makes of a request before anything is
 * asked of the daemon: the route from the method and the path, and where
 * an event stream resumes from Last-Event-ID or ?after=. The input is
 * split at its first three newlines into method, path, Last-Event-ID and
 * query string. Whatever the bytes, no crash, and whatever is accepted as
 * an id has the exact shape the routes promise the daemon. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "match.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int all_of(const char *s, size_t n, const char *set) {
  return strlen(s) == n && strspn(s, set) == n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size + 1);
  if (buf == NULL)
    return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  char *field[4] = {buf, NULL, NULL, NULL};
  for (int i = 1; i < 4; i++) {
    char *nl = field[i - 1] ? strchr(field[i - 1], '\n') : NULL;
    if (nl == NULL)
      break;
    *nl = '\0';
    field[i] = nl + 1;
  }
  fcgi_match_t m;
  fcgi_match(field[0], field[1], &m);
  static const char hex[] = "0123456789abcdef";
  switch (m.route) {
  case FCGI_R_SESSION:
  case FCGI_R_MESSAGES:
  case FCGI_R_CANCEL:
  case FCGI_R_EVENTS:
    if (!all_of(m.session, 32, hex))
      abort();
    break;
  case FCGI_R_TOOL_CALL:
    if (!all_of(m.session, 32, hex) || m.tool[0] == '\0' ||
        strlen(m.tool) > 64 ||
        strspn(m.tool, "abcdefghijklmnopqrstuvwxyz0123456789_") !=
            strlen(m.tool))
      abort();
    break;
  case FCGI_R_IMAGE:
    if (!all_of(m.image, 64, hex))
      abort();
    break;
  case FCGI_R_NONE:
    if (m.why == NULL)
      abort();
    break;
  default:
    break;
  }
  if (m.route != FCGI_R_NONE && (m.allow == NULL || m.allow[0] == '\0'))
    abort();
  long long after = fcgi_resume_point(field[2], field[3]);
  if (after < -1)
    abort();
  free(buf);
  return 0;
}
