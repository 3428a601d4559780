/* The simulator's error messages: every file that reports an error to
 * its caller makes the message the same way. */
#ifndef ATL_OPTICS_FAIL_H
#define ATL_OPTICS_FAIL_H

/* Stores a malloc()ed message made from fmt in *err (when err is not
 * NULL; the caller frees it) and returns rc; if even the message cannot
 * be allocated, *err is NULL. Defined in expr.c. */
int atl__op_fail(char **err, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
