/* The simulator's error messages: every file that reports an error to
 * its caller makes the message the same way. */
#ifndef ATL_OPTICS_FAIL_H
#define ATL_OPTICS_FAIL_H

#include <stdarg.h>

/* A malloc()ed string made from fmt (the caller frees it), or NULL when
 * out of memory. */
char *atl__op_vfmt(const char *fmt, va_list ap)
    __attribute__((format(printf, 1, 0)));
char *atl__op_xfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Stores a malloc()ed message made from fmt in *err (when err is not
 * NULL; the caller frees it) and returns rc; if even the message cannot
 * be allocated, *err is NULL. */
int atl__op_fail(char **err, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
