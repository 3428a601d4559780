/* Counters and latency histograms for the admin socket's stats and metrics
 * (doc/admin.md). Always on: recording is a few relaxed atomic adds, so
 * any thread may record without a lock (bench/README.md, admin, has the
 * cost).
 *
 * A series is one thing measured (a tool, a JSON-RPC method, a provider's
 * model, the store's commits): a histogram of durations in microseconds
 * and a few counters whose meaning its family gives. Series are created on
 * first use and live as long as the process, so a caller may
 * keep the pointer. The registry is the process's: there is one daemon per
 * process.
 */
#ifndef ATL_STATS_H
#define ATL_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include <json-c/json.h>

/* Log-linear buckets: exact below 16, then 8 per power of two (each within
 * 12.5 % of its values), up to 2^36 (19 hours in microseconds). */
#define ATL_HIST_BUCKETS 272

typedef struct {
  _Atomic uint64_t count, errors, sum, max;
  _Atomic uint64_t b[ATL_HIST_BUCKETS];
} atl_hist_t;

/* Records v (error: the thing failed; it still counts in the latencies). */
void atl_hist_add(atl_hist_t *h, uint64_t v, int error);
/* The q-quantile (0 < q <= 1) by nearest rank: the middle of the bucket
 * the ceil(q * n)-th value falls in, never above the maximum seen; 0 when
 * empty. */
uint64_t atl_hist_quantile(const atl_hist_t *h, double q);

#define ATL_SERIES_COUNTERS 6

typedef struct atl_series_s {
  struct atl_series_s *_Atomic next; /* published with release */
  const char *family;                /* static: one of the families below */
  char label[96]; /* the tool, the method, "provider/model" */
  atl_hist_t h;
  _Atomic uint64_t n[ATL_SERIES_COUNTERS]; /* named by the family */
} atl_series_t;

/* Families, and what their counters mean. */
#define ATL_FAM_RPC "rpc"     /* api.sock methods; errors: error answers */
#define ATL_FAM_ADMIN "admin" /* admin.sock methods */
#define ATL_FAM_TOOL "tool"   /* tool calls, per tool */
enum {
  ATL_TS_INVALID = 0, /* arguments refused by the schema */
  ATL_TS_FAILED,      /* the result envelope said success: false */
  ATL_TS_TIMED_OUT,
  ATL_TS_HOST_ERROR, /* the plugin or the host failed */
};
#define ATL_FAM_MODEL "model" /* model turns, per "provider/model" */
enum {
  ATL_MS_TOKENS_IN = 0,
  ATL_MS_TOKENS_OUT,
  ATL_MS_RETRIES,
  ATL_MS_ERR_HTTP,    /* the provider answered with an error */
  ATL_MS_ERR_NETWORK, /* no answer: connection, time-out */
  ATL_MS_ERR_STREAM,  /* an answer that could not be read */
};
#define ATL_FAM_TTFB "model_ttfb"    /* time to a turn's first byte */
#define ATL_FAM_COMMIT "commit"      /* store group commits */
#define ATL_FAM_BATCH "commit_batch" /* transactions per group commit */
#define ATL_FAM_RENDER "render"      /* render jobs */
enum {
  ATL_RS_PASSES = 0, /* passes over every pixel completed */
  ATL_RS_PATHS,      /* camera paths traced */
  ATL_RS_RESTARTS,   /* farm workers restarted */
};

/* The counters' names of a family (for JSON and metrics), NULL-padded. */
const char *const *atl_stats_counter_names(const char *family);

/* The series of family and label, made on first use; NULL only when out of
 * memory (callers then record nothing). Any thread; takes a lock, so
 * callers on a hot path keep the pointer. */
atl_series_t *atl_stats_series(const char *family, const char *label);

/* Process-wide counters that belong to no series. */
typedef struct {
  _Atomic uint64_t events_emitted;   /* session events committed */
  _Atomic uint64_t events_delivered; /* events answered to events.read */
  _Atomic int64_t polls_waiting;     /* events.read long polls open now */
  _Atomic uint64_t sessions_created, sessions_deleted;
  _Atomic uint64_t trace_lines, trace_dropped;
} atl_stats_global_t;
extern atl_stats_global_t atl_stats;

/* Every series as JSON: {family: {label: {...}}}, each with calls, errors,
 * p50_ms, p90_ms, p99_ms, max_ms, mean_ms (batch sizes without "_ms") and
 * its counters. A new object. */
json_object *atl_stats_json(void);
/* Calls fn for each series, in creation order. Series are never freed:
 * callers keep pointers to them for the life of the process. */
void atl_stats_each(void (*fn)(const atl_series_t *s, void *user), void *user);

/* Microseconds from CLOCK_MONOTONIC nanoseconds t0 to now. */
uint64_t atl_stats_us_since(uint64_t t0_ns);

#endif
