/* Structured logging in logfmt, one line per event:
 *
 *   ts=2026-11-21T15:42:18.123Z level=info session=3f9a... tool=create_shape
 *     target=blue_sphere ms=3 msg="Tool call: create_shape (blue_sphere)"
 *
 * (on one line). Values with spaces, quotes, '=' or control characters are
 * quoted and escaped. Lines are written with one write(2), so lines from
 * different threads never interleave. Any thread may log.
 *
 * Secrets never appear: a value whose key names a secret (api_key, apikey,
 * authorization, password, secret, token, x-api-key, x-goog-api-key; any
 * case) is written "(redacted)", and every string registered with
 * atl_log_add_secret() is replaced by "(redacted)" wherever it occurs in a
 * line, message included.
 */
#ifndef ATL_LOG_H
#define ATL_LOG_H

#include <atelier/plugin.h> /* atl_log_level_t */

/* Starts logging at level to path (appending), or to stderr if path is
 * NULL. Returns 0 or a negative ATL_E* code (the file could not be
 * opened). May be called again to change both. */
int atl_log_open(atl_log_level_t level, const char *path);
/* Reopens the log file (after rotation; SIGHUP). No-op on stderr. */
int atl_log_reopen(void);
void atl_log_close(void);

void atl_log_set_level(atl_log_level_t level);
atl_log_level_t atl_log_get_level(void);
int atl_log_enabled(atl_log_level_t level);

/* A tap sees every line at or above its level as the file would get it
 * (secrets already scrubbed, no newline), on the logging thread, whatever
 * the file's level: the admin socket's trace of log lines. It must not
 * log. fn NULL turns it off. */
typedef void (*atl_log_tap_fn)(atl_log_level_t level, const char *line,
                               size_t len);
void atl_log_set_tap(atl_log_tap_fn fn, int level);

/* "error", "warn", "info", "debug", "trace"; parse returns -1 if unknown. */
const char *atl_log_level_name(atl_log_level_t level);
int atl_log_level_parse(const char *name);

/* Registers a secret string to be scrubbed from every line (copied). Strings
 * shorter than 4 bytes are ignored, to avoid scrubbing ordinary text. */
void atl_log_add_secret(const char *secret);

/* Logs msg with key/value pairs: a NULL-terminated list of (const char *key,
 * const char *value) pairs; a NULL value skips that pair. */
void atl_log_kv(atl_log_level_t level, const char *msg, ...)
    __attribute__((sentinel));
/* The same with a va_list. */
void atl_log_kvv(atl_log_level_t level, const char *msg, va_list ap);
/* Logs a printf-formatted message with no other fields. */
void atl_log_msg(atl_log_level_t level, const char *fmt, ...) ATL_PRINTF(2, 3);

/* Formats one line (without the trailing newline) into buf as atl_log_kvv
 * would write it, timestamp included; for tests. Returns the length. */
size_t atl_log_format(char *buf, size_t len, atl_log_level_t level,
                      const char *msg, ...) __attribute__((sentinel));

#define ATL_ERROR(...) atl_log_msg(ATL_LOG_ERROR, __VA_ARGS__)
#define ATL_WARN(...) atl_log_msg(ATL_LOG_WARN, __VA_ARGS__)
#define ATL_INFO(...) atl_log_msg(ATL_LOG_INFO, __VA_ARGS__)
#define ATL_DEBUG(...)                                                         \
  (atl_log_enabled(ATL_LOG_DEBUG) ? atl_log_msg(ATL_LOG_DEBUG, __VA_ARGS__)    \
                                  : (void)0)

#endif
