/* The slow log (slowlog.h): a ring of the newest entries under one lock.
 * Only what passed the threshold gets here, so the lock is taken rarely. */
#include "atl-build.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slowlog.h"
#include "util.h"

_Atomic uint64_t atl_slowlog_us;

typedef struct {
  uint64_t id;
  int64_t time_ms;
  char kind[16];
  char session[33];
  char what[96];
  uint64_t us;
  /* As text: the entry's objects must not be shared between the thread
   * that records and the loop that reads (json-c's reference counts are
   * not atomic). */
  char *detail;
} entry_t;

/* The most text an entry's detail keeps (a call's arguments are cut at
 * 2 kB before they get here, its strings at 512 bytes here). */
#define DETAIL_MAX 8192

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static entry_t *ring;
static size_t cap, head, n; /* head: where the next entry goes */
static uint64_t next_id = 1;

static void clear_locked(void) {
  for (size_t i = 0; i < cap; i++) {
    free(ring[i].detail);
    ring[i].detail = NULL;
  }
  head = n = 0;
}

void atl_slowlog_configure(uint32_t ms, uint32_t max_entries) {
  if (max_entries < 1)
    max_entries = 1;
  pthread_mutex_lock(&mu);
  if (cap != max_entries) {
    clear_locked();
    free(ring);
    ring = calloc(max_entries, sizeof(*ring));
    cap = ring != NULL ? max_entries : 0;
  }
  pthread_mutex_unlock(&mu);
  atomic_store(&atl_slowlog_us, (uint64_t)ms * 1000u);
}

void atl_slowlog_add(const char *kind, const char *session, const char *what,
                     uint64_t us, json_object *detail) {
  /* Each entry's detail is held to DETAIL_MAX bytes: a long error (a
   * list of every tool, a provider's page of HTML) keeps its start. */
  if (detail != NULL) {
    json_object_object_foreach(detail, key, val) {
      if (json_object_is_type(val, json_type_string) &&
          json_object_get_string_len(val) > 512) {
        const char *t = json_object_get_string(val);
        size_t cut =
            atl_utf8_prefix(t, (size_t)json_object_get_string_len(val), 512);
        json_object_object_add(detail, key,
                               json_object_new_string_len(t, (int)cut));
      }
    }
  }
  const char *full =
      detail ? json_object_to_json_string_ext(detail, JSON_C_TO_STRING_PLAIN)
             : NULL;
  char *text = full && strlen(full) <= DETAIL_MAX ? strdup(full) : NULL;
  if (full && text == NULL)
    text = strdup("{\"cut\":\"the detail was longer than the slow log "
                  "keeps\"}");
  json_object_put(detail);
  pthread_mutex_lock(&mu);
  if (cap == 0) {
    pthread_mutex_unlock(&mu);
    free(text);
    return;
  }
  entry_t *e = &ring[head];
  free(e->detail);
  e->id = next_id++;
  e->time_ms = atl_now_ms();
  snprintf(e->kind, sizeof(e->kind), "%s", kind);
  snprintf(e->session, sizeof(e->session), "%s", session ? session : "");
  snprintf(e->what, sizeof(e->what), "%s", what ? what : "");
  e->us = us;
  e->detail = text;
  head = (head + 1) % cap;
  if (n < cap)
    n++;
  pthread_mutex_unlock(&mu);
}

json_object *atl_slowlog_get(size_t count) {
  /* The entries are copied under the lock and made into JSON after it, so
   * that a long answer never holds up the threads that record. */
  pthread_mutex_lock(&mu);
  size_t k = n < count ? n : count;
  entry_t *copy = calloc(k ? k : 1, sizeof(*copy));
  for (size_t i = 0; copy != NULL && i < k; i++) {
    copy[i] = ring[(head + cap - 1 - i) % cap];
    copy[i].detail = copy[i].detail ? strdup(copy[i].detail) : NULL;
  }
  pthread_mutex_unlock(&mu);
  json_object *a = json_object_new_array();
  for (size_t i = 0; copy != NULL && i < k; i++) {
    const entry_t *e = &copy[i];
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_int64((int64_t)e->id));
    char ts[32];
    atl_format_time_ms(e->time_ms, ts, sizeof(ts));
    json_object_object_add(o, "time", json_object_new_string(ts));
    json_object_object_add(o, "kind", json_object_new_string(e->kind));
    json_object_object_add(o, "session",
                           e->session[0] ? json_object_new_string(e->session)
                                         : NULL);
    json_object_object_add(o, "what", json_object_new_string(e->what));
    char ms[32];
    snprintf(ms, sizeof(ms), "%.3f", (double)e->us / 1000.0);
    json_object_object_add(
        o, "ms", json_object_new_double_s((double)e->us / 1000.0, ms));
    json_object_object_add(o, "detail",
                           e->detail ? json_tokener_parse(e->detail) : NULL);
    json_object_array_add(a, o);
    free(copy[i].detail);
  }
  free(copy);
  return a;
}

size_t atl_slowlog_len(void) {
  pthread_mutex_lock(&mu);
  size_t k = n;
  pthread_mutex_unlock(&mu);
  return k;
}

size_t atl_slowlog_reset(void) {
  pthread_mutex_lock(&mu);
  size_t k = n;
  clear_locked();
  pthread_mutex_unlock(&mu);
  return k;
}
