/* The slow log (doc/admin.md, "slowlog"), as redis keeps one: the tool
 * calls, model turns, store commits and renders that took longer than
 * [admin] slowlog_ms, newest first, at most [admin] slowlog_max of them,
 * each with its session, what it was, its time and what would help find
 * out why (a call's arguments, redacted as the tool's flags say).
 * Recording is any thread's; reading and resetting the admin socket's.
 */
#ifndef ATL_SLOWLOG_H
#define ATL_SLOWLOG_H

#include <stdatomic.h>
#include <stdint.h>

#include <json-c/json.h>

/* The threshold in microseconds; 0 when the slow log is off. */
extern _Atomic uint64_t atl_slowlog_us;

/* Sets the threshold (0: off) and the most entries kept (at least 1). */
void atl_slowlog_configure(uint32_t ms, uint32_t max_entries);

static inline int atl_slowlog_wants(uint64_t us) {
  uint64_t t = atomic_load_explicit(&atl_slowlog_us, memory_order_relaxed);
  return t != 0 && us >= t;
}

/* Keeps an entry: kind ("tool", "turn", "commit", "render"), session (may
 * be NULL), what (the tool, "provider/model", ...), us, and detail (an
 * object, taken; may be NULL). Any thread. */
void atl_slowlog_add(const char *kind, const char *session, const char *what,
                     uint64_t us, json_object *detail);

/* The newest count entries, newest first, as a new array of {id, time,
 * kind, session, what, ms, detail}. */
json_object *atl_slowlog_get(size_t count);
size_t atl_slowlog_len(void);
/* Empties it; returns how many entries went. */
size_t atl_slowlog_reset(void);

#endif
