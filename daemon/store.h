/* The session store: SQLite in WAL mode under the data directory.
 *
 * Writes go through one writer thread that commits them in groups: every
 * transaction submitted while the previous group was committing goes into
 * the next group, each inside its own SAVEPOINT so that one failing
 * transaction does not take the others down. A transaction's callback runs
 * only after the COMMIT that contains it has returned, so the daemon never
 * acknowledges anything that is not in the database file (WAL); with
 * synchronous = full it has also been fsync()ed.
 *
 * Reads use reader handles, one per thread (a reader is not thread-safe),
 * each with its own read-only connection; WAL lets them read while the
 * writer writes.
 *
 * Schema (versioned with PRAGMA user_version, migrated at open):
 *   sessions(id, created_ms, updated_ms, document, last_seq, history_len)
 *   history(session, idx, role, content, created_ms)
 *   events(session, seq, type, ts_ms, data)
 *   images(id, mime, size, data, created_ms)
 *   queue(id, session, text, model, ts_ms): messages acknowledged by
 *     session.send whose run has not started; a run's start removes its
 *     message in the transaction that commits run.started
 */
#ifndef ATL_STORE_H
#define ATL_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

typedef struct atl_store_s atl_store_t;
typedef struct atl_txn_s atl_txn_t;
typedef struct atl_store_reader_s atl_store_reader_t;

typedef struct {
  const char *data_dir; /* the database is <data_dir>/atelier.db */
  int synchronous;      /* 1: NORMAL (survives a killed process), 2: FULL
                           (also survives power loss) */
  unsigned max_batch;   /* at most this many transactions per commit; 0: 1024 */
} atl_store_options_t;

/* Opens (creating and migrating as needed) the store and starts the writer
 * thread. On failure returns a negative ATL_E* code and, if err is not NULL,
 * a malloc()ed message. */
int atl_store_open(const atl_store_options_t *opt, atl_store_t **out,
                   char **err);
/* Commits everything already submitted, stops the writer and closes. Every
 * reader must have been closed first. */
void atl_store_close(atl_store_t *st);

/* Building a write transaction. Strings and buffers are copied. The
 * operations are applied in the order given. */
atl_txn_t *atl_txn_new(void);
void atl_txn_free(atl_txn_t *t);
/* model may be NULL (the provider's default). */
void atl_txn_session_create(atl_txn_t *t, const char *id, int64_t created_ms,
                            const char *document_json, const char *model);
/* Deletes the session with its history, events and queued messages. */
void atl_txn_session_delete(atl_txn_t *t, const char *id);
/* Replaces the document and sets updated_ms. */
void atl_txn_document_set(atl_txn_t *t, const char *id,
                          const char *document_json, int64_t updated_ms);
/* The same, taking over document_json (a malloc()ed NUL-terminated
 * string, freed with the transaction, or at once on failure) instead of
 * copying it: a session's document can be megabytes. */
void atl_txn_document_take(atl_txn_t *t, const char *id, char *document_json,
                           int64_t updated_ms);
/* Appends history entry number idx (0-based; history_len becomes idx+1). */
void atl_txn_history_append(atl_txn_t *t, const char *id, int64_t idx,
                            const char *role, const char *content_json,
                            int64_t created_ms);
/* Appends event seq (1-based, increasing per session; last_seq becomes
 * seq). data_json may be NULL for no data. */
void atl_txn_event_append(atl_txn_t *t, const char *id, int64_t seq,
                          const char *type, int64_t ts_ms,
                          const char *data_json);
/* Stores an image unless one with that id is already there. */
void atl_txn_image_put(atl_txn_t *t, const char *image_id, const char *mime,
                       const void *data, size_t len, int64_t created_ms);

/* The queue of messages waiting for a session's run. qid comes from
 * atl_store_queue_id; model may be NULL. Pushing to a session that does
 * not exist fails the transaction; so does popping a message that is not
 * queued (any more). Clearing removes the session's messages with ids up
 * to upto. */
void atl_txn_queue_push(atl_txn_t *t, const char *id, int64_t qid,
                        const char *text, const char *model, int64_t ts_ms);
void atl_txn_queue_pop(atl_txn_t *t, const char *id, int64_t qid);
void atl_txn_queue_clear(atl_txn_t *t, const char *id, int64_t upto);
/* A new queue id: larger than every one given before, in this process or
 * stored by an earlier one. Any thread. */
int64_t atl_store_queue_id(atl_store_t *st);

/* Called on the writer thread once t's group has committed (status 0) or
 * failed (a negative ATL_E* code; nothing of t was written). It must be
 * quick and must not call back into the store. */
typedef void (*atl_store_done_cb)(int status, void *user);

/* Queues t for the next group commit and takes ownership of it (even on
 * failure). Any thread. Returns 0, or ATL_ESHUTDOWN once closing began. */
int atl_store_submit(atl_store_t *st, atl_txn_t *t, atl_store_done_cb cb,
                     void *user);
/* Submits t and waits for its commit; returns the commit status. */
int atl_store_submit_wait(atl_store_t *st, atl_txn_t *t);

/* WAL sizes, in pages (4 KiB). Past ATL_STORE_WAL_SOFT_PAGES the background
 * checkpointer is woken, and again each time the WAL has grown by as much:
 * waking it after every commit would keep its I/O competing with the
 * writer's, and rarer checkpoints copy each hot page once for many commits.
 *
 * Under sustained load the WAL never starts over by itself (checkpoint.h),
 * so past ATL_STORE_WAL_HARD_PAGES the writer restarts it: it waits for the
 * next background checkpoint that catches up with the WAL, then runs one of its
 * own between two groups, which has only the last few commits to copy
 * (1 to 2 ms, against 4 to 9 ms for one that copies everything). Past
 * ATL_STORE_WAL_LIMIT_PAGES it does not wait any more.
 *
 * The sizes were chosen by bench/tool-call (bench/README.md): a larger WAL
 * means fewer restarts under load, but a longer stretch of appends that
 * grow the file, and so costlier fsyncs, before the first one. */
enum {
  ATL_STORE_WAL_SOFT_PAGES = 2000,
  ATL_STORE_WAL_HARD_PAGES = 8000,
  ATL_STORE_WAL_LIMIT_PAGES = 16000
};

/* Counters for benchmarks and the admin socket. */
typedef struct {
  uint64_t commits;            /* COMMIT statements */
  uint64_t transactions;       /* transactions committed */
  uint64_t failures;           /* transactions rolled back */
  uint64_t checkpoints;        /* background checkpoints run */
  uint64_t writer_checkpoints; /* checkpoints the writer had to run itself,
                                  the WAL having reached its hard limit */
  int64_t wal_pages;           /* the WAL's size after the last commit */
} atl_store_stats_t;
void atl_store_stats(atl_store_t *st, atl_store_stats_t *out);

/* Reading. A reader belongs to one thread at a time. */
int atl_store_reader_open(atl_store_t *st, atl_store_reader_t **out);
void atl_store_reader_close(atl_store_reader_t *r);

typedef struct {
  char id[33];
  int64_t created_ms;
  int64_t updated_ms;
  int64_t last_seq;
  int64_t history_len;
  char model[ATL_MODEL_NAME_MAX + 1]; /* "" for the provider's default */
  /* (atl_store_session_load only) its newest run.* event is run.started:
   * a run began and never ended. */
  int run_open;
  char *document; /* JSON text, malloc()ed: free() it; NULL in list rows */
} atl_session_row_t;

/* Loads one session. Returns 0, ATL_ENOENT, or ATL_ESTORE. */
int atl_store_session_load(atl_store_reader_t *r, const char *id,
                           atl_session_row_t *row);
/* Calls cb for every session (newest updated first), without documents.
 * cb returns 0 to go on, nonzero to stop. Returns 0 or ATL_ESTORE. */
int atl_store_session_list(atl_store_reader_t *r,
                           int (*cb)(const atl_session_row_t *row, void *user),
                           void *user);
/* The number of sessions. */
int64_t atl_store_session_count(atl_store_reader_t *r);

typedef struct {
  int64_t idx;
  const char *role;
  const char *content; /* JSON text */
  int64_t created_ms;
} atl_history_row_t;
/* History entries with idx >= from, at most limit (0: all), in order. The
 * row's strings are valid only during cb. */
int atl_store_history_read(atl_store_reader_t *r, const char *id, int64_t from,
                           int64_t limit,
                           int (*cb)(const atl_history_row_t *row, void *user),
                           void *user);

typedef struct {
  int64_t seq;
  const char *type;
  int64_t ts_ms;
  const char *data; /* JSON text or NULL */
} atl_event_row_t;
/* Events with seq > after, at most limit (0: all), in order. */
int atl_store_events_read(atl_store_reader_t *r, const char *id, int64_t after,
                          int64_t limit,
                          int (*cb)(const atl_event_row_t *row, void *user),
                          void *user);

typedef struct {
  int64_t id;
  const char *text;
  const char *model; /* NULL: none named */
  int64_t ts_ms;
} atl_queue_row_t;
/* The session's queued messages, oldest first. The row's strings are valid
 * only during cb. */
int atl_store_queue_read(atl_store_reader_t *r, const char *id,
                         int (*cb)(const atl_queue_row_t *row, void *user),
                         void *user);
/* Every session with queued messages (its oldest message first), for the
 * start-up that runs what an earlier atelierd left. */
int atl_store_queue_sessions(atl_store_reader_t *r,
                             int (*cb)(const char *id, void *user), void *user);

/* Loads an image; *data and *mime are malloc()ed (free them). Returns 0,
 * ATL_ENOENT or ATL_ESTORE. */
int atl_store_image_get(atl_store_reader_t *r, const char *image_id,
                        char **mime, void **data, size_t *len);

#endif
