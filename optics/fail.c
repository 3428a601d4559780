/* The simulator's error messages (fail.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* vasprintf */
#endif
#include <stdio.h>

#include "fail.h"

char *atl__op_vfmt(const char *fmt, va_list ap) {
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0)
    s = NULL;
  return s;
}

char *atl__op_xfmt(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = atl__op_vfmt(fmt, ap);
  va_end(ap);
  return s;
}

int atl__op_fail(char **err, int rc, const char *fmt, ...) {
  if (err == NULL)
    return rc;
  va_list ap;
  va_start(ap, fmt);
  *err = atl__op_vfmt(fmt, ap);
  va_end(ap);
  return rc;
}
