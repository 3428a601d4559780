/* Counters and latency histograms (stats.h). */
#include "atl-build.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stats.h"
#include "util.h"

atl_stats_global_t atl_stats;

/* Appended under reg_mu; read without it by atl_stats_each, which sees
 * each node whole because its link is stored with release and loaded with
 * acquire. */
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static atl_series_t *_Atomic reg_head;
static atl_series_t *reg_tail;

static unsigned bucket_of(uint64_t v) {
  if (v < 16)
    return (unsigned)v;
  unsigned e = 63u - (unsigned)__builtin_clzll(v); /* 4 and up */
  if (e > 35)
    return ATL_HIST_BUCKETS - 1;
  return 16 + (e - 4) * 8 + (unsigned)((v >> (e - 3)) & 7);
}

/* The values bucket i holds: [lo, hi]. */
static void bucket_range(unsigned i, uint64_t *lo, uint64_t *hi) {
  if (i < 16) {
    *lo = *hi = i;
    return;
  }
  unsigned e = 4 + (i - 16) / 8, m = (i - 16) % 8;
  *lo = (uint64_t)(8 + m) << (e - 3);
  *hi = ((uint64_t)(9 + m) << (e - 3)) - 1;
}

void atl_hist_add(atl_hist_t *h, uint64_t v, int error) {
  atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
  if (error)
    atomic_fetch_add_explicit(&h->errors, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&h->sum, v, memory_order_relaxed);
  atomic_fetch_add_explicit(&h->b[bucket_of(v)], 1, memory_order_relaxed);
  uint64_t m = atomic_load_explicit(&h->max, memory_order_relaxed);
  while (v > m &&
         !atomic_compare_exchange_weak_explicit(
             &h->max, &m, v, memory_order_relaxed, memory_order_relaxed)) {
  }
}

uint64_t atl_hist_quantile(const atl_hist_t *h, double q) {
  /* The buckets are read one by one while others may add: the total is
   * theirs, not count's, so the answer is always one of the buckets. */
  uint64_t n = 0;
  uint64_t b[ATL_HIST_BUCKETS];
  for (unsigned i = 0; i < ATL_HIST_BUCKETS; i++) {
    b[i] = atomic_load_explicit(&h->b[i], memory_order_relaxed);
    n += b[i];
  }
  if (n == 0)
    return 0;
  uint64_t want = (uint64_t)ceil(q * (double)n);
  if (want < 1)
    want = 1;
  if (want > n)
    want = n;
  uint64_t seen = 0, max = atomic_load_explicit(&h->max, memory_order_relaxed);
  for (unsigned i = 0; i < ATL_HIST_BUCKETS; i++) {
    seen += b[i];
    if (seen >= want) {
      uint64_t lo, hi;
      bucket_range(i, &lo, &hi);
      uint64_t mid = lo + (hi - lo) / 2;
      return mid > max ? max : mid;
    }
  }
  return max;
}

static const char *const tool_counters[] = {"invalid_arguments", "failed",
                                            "timed_out", "host_errors", NULL};
static const char *const model_counters[] = {
    "tokens_in",      "tokens_out",    "retries", "errors_http",
    "errors_network", "errors_stream", NULL};
static const char *const render_counters[] = {"passes", "paths",
                                              "worker_restarts", NULL};
static const char *const no_counters[] = {NULL};

const char *const *atl_stats_counter_names(const char *family) {
  if (strcmp(family, ATL_FAM_TOOL) == 0)
    return tool_counters;
  if (strcmp(family, ATL_FAM_MODEL) == 0)
    return model_counters;
  if (strcmp(family, ATL_FAM_RENDER) == 0)
    return render_counters;
  return no_counters;
}

atl_series_t *atl_stats_series(const char *family, const char *label) {
  pthread_mutex_lock(&reg_mu);
  atl_series_t *s;
  for (s = atomic_load(&reg_head); s != NULL; s = atomic_load(&s->next))
    if (strcmp(s->family, family) == 0 && strcmp(s->label, label) == 0)
      break;
  if (s == NULL && (s = calloc(1, sizeof(*s))) != NULL) {
    s->family = family;
    snprintf(s->label, sizeof(s->label), "%s", label);
    if (reg_tail)
      atomic_store_explicit(&reg_tail->next, s, memory_order_release);
    else
      atomic_store_explicit(&reg_head, s, memory_order_release);
    reg_tail = s;
  }
  pthread_mutex_unlock(&reg_mu);
  return s;
}

void atl_stats_each(void (*fn)(const atl_series_t *s, void *user), void *user) {
  /* Series are only ever appended, each whole before its link is
   * published: a walk without the lock sees a prefix of the list, which is
   * enough for a snapshot, and fn may itself make series. */
  for (atl_series_t *s = atomic_load_explicit(&reg_head, memory_order_acquire);
       s != NULL; s = atomic_load_explicit(&s->next, memory_order_acquire))
    fn(s, user);
}

/* Microseconds as milliseconds, written with three decimals. */
static json_object *ms(uint64_t us) {
  char text[32];
  snprintf(text, sizeof(text), "%.3f", (double)us / 1000.0);
  return json_object_new_double_s((double)us / 1000.0, text);
}

static void series_json(const atl_series_t *s, void *user) {
  json_object *all = user, *fam = NULL;
  if (!json_object_object_get_ex(all, s->family, &fam)) {
    fam = json_object_new_object();
    json_object_object_add(all, s->family, fam);
  }
  const atl_hist_t *h = &s->h;
  uint64_t count = atomic_load(&h->count);
  json_object *o = json_object_new_object();
  json_object_object_add(o, "calls", json_object_new_int64((int64_t)count));
  json_object_object_add(
      o, "errors", json_object_new_int64((int64_t)atomic_load(&h->errors)));
  /* A batch size is a number of transactions, not a time. */
  int unitless = strcmp(s->family, ATL_FAM_BATCH) == 0;
  static const struct {
    const char *ms, *n;
    double q;
  } qs[] = {
      {"p50_ms", "p50", 0.5}, {"p90_ms", "p90", 0.9}, {"p99_ms", "p99", 0.99}};
  for (size_t i = 0; i < 3; i++) {
    uint64_t v = atl_hist_quantile(h, qs[i].q);
    json_object_object_add(o, unitless ? qs[i].n : qs[i].ms,
                           unitless ? json_object_new_int64((int64_t)v)
                                    : ms(v));
  }
  uint64_t max = atomic_load(&h->max), sum = atomic_load(&h->sum);
  json_object_object_add(o, unitless ? "max" : "max_ms",
                         unitless ? json_object_new_int64((int64_t)max)
                                  : ms(max));
  uint64_t mean = count ? sum / count : 0;
  json_object_object_add(o, unitless ? "mean" : "mean_ms",
                         unitless ? json_object_new_int64((int64_t)mean)
                                  : ms(mean));
  const char *const *names = atl_stats_counter_names(s->family);
  for (int i = 0; names[i] != NULL; i++)
    json_object_object_add(
        o, names[i], json_object_new_int64((int64_t)atomic_load(&s->n[i])));
  json_object_object_add(fam, s->label, o);
}

json_object *atl_stats_json(void) {
  json_object *all = json_object_new_object();
  atl_stats_each(series_json, all);
  return all;
}

uint64_t atl_stats_us_since(uint64_t t0_ns) {
  uint64_t now = atl_mono_ns();
  return now > t0_ns ? (now - t0_ns) / 1000 : 0;
}
