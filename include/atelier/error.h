/* Atelier error codes.
 *
 * Every function of the daemon and of the plugin API that can fail returns
 * 0 or a negative ATL_E* code, the way libuv does. Where an errno value says
 * exactly what went wrong we reuse it, negated, so that a code coming out of
 * a system call needs no translation. Codes that have no errno counterpart
 * live below -4000, out of the errno range.
 *
 * A user-caused tool failure (a shape that does not exist, a radius that is
 * negative) is NOT a C error: it is a successful call whose result envelope
 * says {"success": false, "error": "..."}. These codes are for failures of
 * the host, a plugin or the system.
 */
#ifndef ATELIER_ERROR_H
#define ATELIER_ERROR_H

#include <errno.h>

/* XX(name, value, message) */
#define ATL_ERRNO_MAP(XX)                                                      \
  XX(ENOMEM, -ENOMEM, "out of memory")                                         \
  XX(EINVAL, -EINVAL, "invalid argument")                                      \
  XX(ENOENT, -ENOENT, "no such entity")                                        \
  XX(EEXIST, -EEXIST, "already exists")                                        \
  XX(EIO, -EIO, "input/output error")                                          \
  XX(ETIMEDOUT, -ETIMEDOUT, "timed out")                                       \
  XX(ECANCELED, -ECANCELED, "cancelled")                                       \
  XX(EBUSY, -EBUSY, "busy")                                                    \
  XX(E2BIG, -E2BIG, "too large")                                               \
  XX(ENOTSUP, -ENOTSUP, "not supported")                                       \
  XX(EPROTO, -EPROTO, "protocol error")                                        \
  XX(EAGAIN, -EAGAIN, "try again")                                             \
  XX(ESHUTDOWN, -ESHUTDOWN, "shutting down")                                   \
  XX(EPERM, -EPERM, "not permitted")                                           \
  XX(EABI, -4000, "plugin ABI mismatch")                                       \
  XX(ESCHEMA, -4001, "invalid JSON schema")                                    \
  XX(ESTORE, -4002, "session store error")                                     \
  XX(EPLUGIN, -4003, "plugin failure")                                         \
  XX(ECONFIG, -4004, "configuration error")                                    \
  XX(EJSON, -4005, "malformed JSON")

typedef enum {
  ATL_OK = 0,
#define ATL__ERR_ENUM(name, value, msg) ATL_##name = (value),
  ATL_ERRNO_MAP(ATL__ERR_ENUM)
#undef ATL__ERR_ENUM
} atl_errno_t;

#endif /* ATELIER_ERROR_H */
