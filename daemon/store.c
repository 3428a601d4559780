/* The session store (see store.h for the design and the ownership rules). */
/* asprintf() and vasprintf(). Not from config.h: "config.h" here finds
 * daemon/config.h, the configuration module, before autoconf's. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <limits.h>
#include <stddef.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include <openssl/evp.h>

#include "checkpoint.h"
#include "slowlog.h"
#include "stats.h"
#include "store.h"
#include "trace.h"
#include "util.h"

/* ---- Schema -------------------------------------------------------------
 *
 * migrations[i] takes a database from user_version i to i+1. A migration is
 * only ever appended, never edited, because databases in the field have
 * already run the old ones. Version 1 is the initial schema.
 *
 * history is a WITHOUT ROWID table clustered on (session, idx): it is read
 * by session in order and written rarely. events is the hottest table, so
 * it is a rowid table with a separate (session, seq) index: new rows go to
 * the end of the table, and only the small index entries land at one place
 * per session. Clustered on (session, seq), every group commit rewrote a
 * whole 4 KiB leaf per active session with the event data in it; with 64
 * busy sessions that was 200 MB/s of WAL at 17k calls/s, against 140 MB/s
 * now (bench/README.md).
 * There is deliberately no index on sessions.updated_ms: it would cost an
 * extra b-tree update on every document_set, the hottest write, to speed up
 * session_list, which is rare and cheap to sort.
 */
/* Documents are stored in chunks of DOC_CHUNK bytes (doc_chunks), each
 * with its SHA-256, and a write rewrites only the
 * chunks whose hash changed. A document lived in its sessions row until
 * migration 4, where every call rewrote all of it, twice (the row is
 * rewritten again for last_seq): a drawing of 50,000 strokes is a 3 MB
 * document, and each stroke added cost two 3 MB writes plus the reads
 * that free the old overflow pages. Strokes are appended near the end of
 * the document, so now a call writes the chunks from there on. */
#define DOC_CHUNK 32768

static const char *const migrations[] = {
    /* 1: the initial schema. */
    "CREATE TABLE sessions (id TEXT PRIMARY KEY,"
    " created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,"
    " document TEXT NOT NULL, last_seq INTEGER NOT NULL DEFAULT 0,"
    " history_len INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE history (session TEXT NOT NULL, idx INTEGER NOT NULL,"
    " role TEXT NOT NULL, content TEXT NOT NULL, created_ms INTEGER NOT NULL,"
    " PRIMARY KEY (session, idx)) WITHOUT ROWID;"
    "CREATE TABLE events (id INTEGER PRIMARY KEY, session TEXT NOT NULL,"
    " seq INTEGER NOT NULL, type TEXT NOT NULL, ts_ms INTEGER NOT NULL,"
    " data TEXT);"
    "CREATE UNIQUE INDEX events_by_session ON events (session, seq);"
    "CREATE TABLE images (id TEXT PRIMARY KEY, mime TEXT NOT NULL,"
    " size INTEGER NOT NULL, data BLOB NOT NULL,"
    " created_ms INTEGER NOT NULL);",
    /* 2: the model a session was created with (NULL: the provider's
     * default), for its messages that name none. */
    "ALTER TABLE sessions ADD COLUMN model TEXT;",
    /* 3: the messages session.send acknowledged that have not started yet
     * (the agent's queue), so that a crash loses none. AUTOINCREMENT keeps
     * ids from being reused after the queue empties, even across restarts:
     * an id names one message for good in the events that mention it. */
    "CREATE TABLE queue (id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " session TEXT NOT NULL, text TEXT NOT NULL, model TEXT,"
    " ts_ms INTEGER NOT NULL);"
    "CREATE INDEX queue_by_session ON queue (session, id);",
    /* 4: documents in chunks of their own table (doc_chunks below). Each
     * moved document becomes one chunk whose hash (empty) matches nothing,
     * so its first write rewrites it in chunks. */
    "CREATE TABLE doc_chunks (session TEXT NOT NULL, idx INTEGER NOT NULL,"
    " hash BLOB NOT NULL, text BLOB NOT NULL, UNIQUE (session, idx));"
    "INSERT INTO doc_chunks (session, idx, hash, text)"
    " SELECT id, 0, x'', CAST(document AS BLOB) FROM sessions;"
    "UPDATE sessions SET document = '';",
};
#define SCHEMA_VERSION ((int)(sizeof(migrations) / sizeof(migrations[0])))

/* ---- Transactions -------------------------------------------------------
 *
 * A transaction is one malloc() in the common case: the struct carries a
 * few inline operations and an inline arena for their strings. Larger
 * transactions grow the operation array and chain extra arena chunks.
 */
enum op_kind {
  OP_SESSION_CREATE,
  OP_SESSION_DELETE,
  OP_DOCUMENT_SET,
  OP_HISTORY_APPEND,
  OP_EVENT_APPEND,
  OP_IMAGE_PUT,
  OP_QUEUE_PUSH,
  OP_QUEUE_POP,
  OP_QUEUE_CLEAR,
};

/* Up to two text or blob arguments (NULL: SQL NULL) and two integers; what
 * they mean depends on the kind (see the atl_txn_* functions). */
typedef struct {
  enum op_kind kind;
  const char *id; /* session or image id */
  const void *p[2];
  int n[2]; /* byte lengths of p[] */
  int64_t a, b;
} op_t;

struct chunk {
  struct chunk *next;
  char buf[];
};

#define TXN_INLINE_OPS 3
#define TXN_INLINE_BYTES 640

struct atl_txn_s {
  atl_txn_t *next; /* queue link */
  atl_store_done_cb cb;
  void *user;
  int error;  /* set while building (ATL_ENOMEM, ATL_EINVAL, ATL_E2BIG) */
  int status; /* the outcome, set by the writer */
  op_t *ops;
  unsigned nops, cap;
  char *cur; /* arena: next free byte and bytes left */
  size_t left;
  struct chunk *chunks;
  char *owned; /* a document handed over (atl_txn_document_take) */
  op_t inline_ops[TXN_INLINE_OPS];
  char inline_bytes[TXN_INLINE_BYTES];
};

atl_txn_t *atl_txn_new(void) {
  atl_txn_t *t = malloc(sizeof(*t));
  if (t == NULL)
    return NULL;
  /* Only the header: the inline buffers need no clearing. */
  memset(t, 0, offsetof(atl_txn_t, inline_ops));
  t->ops = t->inline_ops;
  t->cap = TXN_INLINE_OPS;
  t->cur = t->inline_bytes;
  t->left = sizeof(t->inline_bytes);
  return t;
}

void atl_txn_free(atl_txn_t *t) {
  if (t == NULL)
    return;
  while (t->chunks != NULL) {
    struct chunk *c = t->chunks;
    t->chunks = c->next;
    free(c);
  }
  if (t->ops != t->inline_ops)
    free(t->ops);
  free(t->owned);
  free(t);
}

/* Copies len bytes (plus a NUL, so that text stays a C string) into the
 * arena. */
static const void *txn_copy(atl_txn_t *t, const void *data, size_t len) {
  if (len >= INT_MAX) {
    t->error = ATL_E2BIG;
    return NULL;
  }
  if (len + 1 > t->left) {
    size_t cap = len + 1 > 4096 ? len + 1 : 4096;
    struct chunk *c = malloc(sizeof(*c) + cap);
    if (c == NULL) {
      t->error = ATL_ENOMEM;
      return NULL;
    }
    c->next = t->chunks;
    t->chunks = c;
    t->cur = c->buf;
    t->left = cap;
  }
  char *p = t->cur;
  if (len > 0)
    memcpy(p, data, len);
  p[len] = '\0';
  t->cur += len + 1;
  t->left -= len + 1;
  return p;
}

/* Appends an operation with copies of its arguments. A failure (no memory,
 * a required argument missing) marks the whole transaction failed: one
 * that lost an operation must not commit the others. */
static void txn_add(atl_txn_t *t, enum op_kind kind, const char *id,
                    const void *p0, size_t n0, const void *p1, size_t n1,
                    int64_t a, int64_t b) {
  if (t == NULL || t->error != 0)
    return;
  if (id == NULL) {
    t->error = ATL_EINVAL;
    return;
  }
  if (t->nops == t->cap) {
    op_t *ops = malloc(2 * t->cap * sizeof(*ops));
    if (ops == NULL) {
      t->error = ATL_ENOMEM;
      return;
    }
    memcpy(ops, t->ops, t->nops * sizeof(*ops));
    if (t->ops != t->inline_ops)
      free(t->ops);
    t->ops = ops;
    t->cap *= 2;
  }
  op_t *op = &t->ops[t->nops];
  op->kind = kind;
  op->id = txn_copy(t, id, strlen(id));
  op->p[0] = p0 ? txn_copy(t, p0, n0) : NULL;
  op->p[1] = p1 ? txn_copy(t, p1, n1) : NULL;
  op->n[0] = (int)n0;
  op->n[1] = (int)n1;
  op->a = a;
  op->b = b;
  if (t->error == 0)
    t->nops++;
}

static size_t len_of(atl_txn_t *t, const char *s) {
  if (s != NULL)
    return strlen(s);
  if (t != NULL)
    t->error = ATL_EINVAL; /* a required string is missing */
  return 0;
}

void atl_txn_session_create(atl_txn_t *t, const char *id, int64_t created_ms,
                            const char *document_json, const char *model) {
  size_t n = len_of(t, document_json);
  txn_add(t, OP_SESSION_CREATE, id, document_json, n, model,
          model ? strlen(model) : 0, created_ms, 0);
}

void atl_txn_session_delete(atl_txn_t *t, const char *id) {
  txn_add(t, OP_SESSION_DELETE, id, NULL, 0, NULL, 0, 0, 0);
}

void atl_txn_document_set(atl_txn_t *t, const char *id,
                          const char *document_json, int64_t updated_ms) {
  size_t n = len_of(t, document_json);
  txn_add(t, OP_DOCUMENT_SET, id, document_json, n, NULL, 0, updated_ms, 0);
}

void atl_txn_document_take(atl_txn_t *t, const char *id, char *document_json,
                           int64_t updated_ms) {
  if (t == NULL || t->error != 0 || t->owned != NULL || document_json == NULL) {
    /* Copied (or refused) the usual way: one handed over is enough for
     * the one document a transaction writes. */
    atl_txn_document_set(t, id, document_json, updated_ms);
    free(document_json);
    return;
  }
  size_t n = strlen(document_json);
  if (n >= INT_MAX) {
    t->error = ATL_E2BIG;
    free(document_json);
    return;
  }
  txn_add(t, OP_DOCUMENT_SET, id, NULL, 0, NULL, 0, updated_ms, 0);
  if (t->error != 0) {
    free(document_json);
    return;
  }
  t->owned = document_json;
  t->ops[t->nops - 1].p[0] = document_json;
  t->ops[t->nops - 1].n[0] = (int)n;
}

void atl_txn_history_append(atl_txn_t *t, const char *id, int64_t idx,
                            const char *role, const char *content_json,
                            int64_t created_ms) {
  size_t n0 = len_of(t, role), n1 = len_of(t, content_json);
  txn_add(t, OP_HISTORY_APPEND, id, role, n0, content_json, n1, idx,
          created_ms);
}

void atl_txn_event_append(atl_txn_t *t, const char *id, int64_t seq,
                          const char *type, int64_t ts_ms,
                          const char *data_json) {
  size_t n0 = len_of(t, type), n1 = data_json ? strlen(data_json) : 0;
  txn_add(t, OP_EVENT_APPEND, id, type, n0, data_json, n1, seq, ts_ms);
}

void atl_txn_image_put(atl_txn_t *t, const char *image_id, const char *mime,
                       const void *data, size_t len, int64_t created_ms) {
  size_t n0 = len_of(t, mime);
  if (data == NULL && t != NULL)
    t->error = ATL_EINVAL;
  txn_add(t, OP_IMAGE_PUT, image_id, mime, n0, data, len, created_ms, 0);
}

void atl_txn_queue_push(atl_txn_t *t, const char *id, int64_t qid,
                        const char *text, const char *model, int64_t ts_ms) {
  size_t n0 = len_of(t, text);
  txn_add(t, OP_QUEUE_PUSH, id, text, n0, model, model ? strlen(model) : 0, qid,
          ts_ms);
}

void atl_txn_queue_pop(atl_txn_t *t, const char *id, int64_t qid) {
  txn_add(t, OP_QUEUE_POP, id, NULL, 0, NULL, 0, qid, 0);
}

void atl_txn_queue_clear(atl_txn_t *t, const char *id, int64_t upto) {
  txn_add(t, OP_QUEUE_CLEAR, id, NULL, 0, NULL, 0, upto, 0);
}

/* ---- The store ---------------------------------------------------------- */

/* The writer's statements, prepared once at open and reused for the life
 * of the store: preparing is as expensive as running these. */
enum wstmt {
  W_BEGIN,
  W_COMMIT,
  W_ROLLBACK,
  W_SAVEPOINT,
  W_RELEASE,
  W_ROLLBACK_TO,
  W_SESSION_INSERT,
  W_SESSION_DELETE,
  W_HISTORY_DELETE,
  W_EVENTS_DELETE,
  W_DOC_DELETE,
  W_DOCUMENT_SET,
  W_DOC_HASHES,
  W_DOC_CHUNK_PUT,
  W_DOC_CHUNKS_TRIM,
  W_HISTORY_INSERT,
  W_HISTORY_LEN,
  W_EVENT_INSERT,
  W_LAST_SEQ,
  W_IMAGE_INSERT,
  W_QUEUE_INSERT,
  W_QUEUE_DELETE,
  W_QUEUE_CLEAR,
  W_COUNT
};

static const char *const wsql[W_COUNT] = {
    [W_BEGIN] = "BEGIN IMMEDIATE",
    [W_COMMIT] = "COMMIT",
    [W_ROLLBACK] = "ROLLBACK",
    [W_SAVEPOINT] = "SAVEPOINT txn",
    [W_RELEASE] = "RELEASE txn",
    [W_ROLLBACK_TO] = "ROLLBACK TO txn",
    [W_SESSION_INSERT] = "INSERT INTO sessions (id, created_ms, updated_ms,"
                         " document, model) VALUES (?1, ?2, ?2, '', ?4)",
    [W_SESSION_DELETE] = "DELETE FROM sessions WHERE id = ?1",
    [W_HISTORY_DELETE] = "DELETE FROM history WHERE session = ?1",
    [W_EVENTS_DELETE] = "DELETE FROM events WHERE session = ?1",
    [W_DOC_DELETE] = "DELETE FROM doc_chunks WHERE session = ?1",
    [W_DOCUMENT_SET] = "UPDATE sessions SET updated_ms = ?2 WHERE id = ?1",
    [W_DOC_HASHES] = "SELECT idx, hash FROM doc_chunks WHERE session = ?1"
                     " ORDER BY idx",
    [W_DOC_CHUNK_PUT] = "INSERT OR REPLACE INTO doc_chunks (session, idx,"
                        " hash, text) VALUES (?1, ?2, ?3, ?4)",
    [W_DOC_CHUNKS_TRIM] = "DELETE FROM doc_chunks WHERE session = ?1"
                          " AND idx >= ?2",
    [W_HISTORY_INSERT] = "INSERT INTO history (session, idx, role, content,"
                         " created_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
    [W_HISTORY_LEN] = "UPDATE sessions SET history_len ="
                      " max(history_len, ?2 + 1) WHERE id = ?1",
    [W_EVENT_INSERT] = "INSERT INTO events (session, seq, type, data, ts_ms)"
                       " VALUES (?1, ?2, ?3, ?4, ?5)",
    [W_LAST_SEQ] = "UPDATE sessions SET last_seq = max(last_seq, ?2)"
                   " WHERE id = ?1",
    [W_IMAGE_INSERT] = "INSERT OR IGNORE INTO images (id, created_ms, mime,"
                       " data, size) VALUES (?1, ?2, ?3, ?4, length(?4))",
    /* Only for a session that exists: a message sent while its session
     * was being deleted must not outlive it as an orphan that every
     * start-up would try to run. */
    [W_QUEUE_INSERT] = "INSERT INTO queue (id, session, text, model, ts_ms)"
                       " SELECT ?2, ?1, ?3, ?4, ?5"
                       " WHERE EXISTS (SELECT 1 FROM sessions WHERE id = ?1)",
    [W_QUEUE_DELETE] = "DELETE FROM queue WHERE session = ?1 AND id = ?2",
    [W_QUEUE_CLEAR] = "DELETE FROM queue WHERE session = ?1 AND id <= ?2",
};

struct atl_store_s {
  char *path;
  sqlite3 *db; /* the writer's connection, used only by the writer thread */
  sqlite3_stmt *w[W_COUNT];
  unsigned max_batch;
  pthread_t thread;
  pthread_mutex_t mu; /* guards the queue and the flags below */
  pthread_cond_t cv;
  atl_txn_t *head, *tail;
  unsigned queued;
  bool closing;
  bool idle; /* the writer waits on cv: submitters must signal */
  atomic_uint_fast64_t commits, transactions, failures;
  atomic_int_fast64_t queue_id; /* the last queue id handed out */

  /* The WAL, seen by the writer thread only (its wal hook runs there). */
  atl_checkpointer_t *ckpt;
  int next_kick;        /* WAL size (pages) at which to wake the checkpointer */
  bool restart_wanted;  /* the WAL reached ATL_STORE_WAL_HARD_PAGES */
  uint64_t caught_up_0; /* the checkpointer's catch-ups when it did */
  atomic_int wal_pages;
  atomic_uint_fast64_t writer_checkpoints;
};

/* Sets *err to a malloc()ed message (if err is not NULL) and returns code. */
__attribute__((format(printf, 3, 4))) static int fail(char **err, int code,
                                                      const char *fmt, ...) {
  if (err != NULL && *err == NULL) {
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(err, fmt, ap) < 0)
      *err = NULL;
    va_end(ap);
  }
  return code;
}

/* Runs one statement to completion and resets it, so that it never holds a
 * read transaction or a lock open. Returns the sqlite3_step() result. */
static int run(sqlite3_stmt *s) {
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
      ;
  }
  int rc2 = sqlite3_reset(s);
  return rc == SQLITE_DONE ? SQLITE_OK : rc2 != SQLITE_OK ? rc2 : rc;
}

static int exec(sqlite3 *db, const char *sql) {
  return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

static void bind_id(sqlite3_stmt *s, const char *id) {
  sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
}

/* Binds ?1 id, ?2 a, ?3 p[0], ?4 p[1] and ?5 b, as far as the statement
 * has parameters; an image's p[1] is a blob. The transaction's memory outlives
 * the statement's use of it, so the binds are static (no copies). */
static sqlite3_stmt *bind_op(atl_store_t *st, enum wstmt w, const op_t *op) {
  sqlite3_stmt *s = st->w[w];
  int params = sqlite3_bind_parameter_count(s);
  bind_id(s, op->id);
  if (params >= 2)
    sqlite3_bind_int64(s, 2, op->a);
  for (int i = 0; i < 2 && params >= 3 + i; i++) {
    if (op->p[i] == NULL)
      sqlite3_bind_null(s, 3 + i);
    else if (i == 1 && op->kind == OP_IMAGE_PUT)
      sqlite3_bind_blob(s, 4, op->p[1], op->n[1], SQLITE_STATIC);
    else
      sqlite3_bind_text(s, 3 + i, op->p[i], op->n[i], SQLITE_STATIC);
  }
  if (params >= 5)
    sqlite3_bind_int64(s, 5, op->b);
  return s;
}

/* Runs op's statement w and checks that it changed a row if it must: an
 * operation on a session that does not exist fails its transaction rather
 * than quietly doing nothing. */
static int step_op(atl_store_t *st, enum wstmt w, const op_t *op,
                   bool must_change) {
  if (run(bind_op(st, w, op)) != SQLITE_OK)
    return ATL_ESTORE;
  if (must_change && sqlite3_changes(st->db) == 0)
    return ATL_ESTORE;
  return 0;
}

/* A chunk's SHA-256, all 32 bytes: the document holds what models and
 * users write, and a chunk crafted to match its predecessor's hash would
 * not be written (64 bits would take 2^32 work to collide). */
#define DOC_HASH 32
static void chunk_hash(const void *data, size_t len, unsigned char out[32]) {
  unsigned int mdlen = 0;
  EVP_Digest(data, len, out, &mdlen, EVP_sha256(), NULL);
}

/* Writes the document text (len bytes) of session id: the chunks whose
 * hash differs from the stored one, then drops the chunks past its end. */
static int doc_write(atl_store_t *st, const char *id, const void *text,
                     size_t len) {
  size_t n = len == 0 ? 1 : (len + DOC_CHUNK - 1) / DOC_CHUNK;
  unsigned char(*old)[DOC_HASH] = calloc(n, DOC_HASH);
  bool *have = calloc(n, sizeof(*have));
  if (old == NULL || have == NULL) {
    free(old);
    free(have);
    return ATL_ENOMEM;
  }
  sqlite3_stmt *q = st->w[W_DOC_HASHES];
  bind_id(q, id);
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    int64_t idx = sqlite3_column_int64(q, 0);
    if (idx >= 0 && (size_t)idx < n && sqlite3_column_bytes(q, 1) == DOC_HASH) {
      memcpy(old[idx], sqlite3_column_blob(q, 1), DOC_HASH);
      have[idx] = true;
    }
  }
  sqlite3_reset(q);
  int out = rc == SQLITE_DONE ? 0 : ATL_ESTORE;
  sqlite3_stmt *put = st->w[W_DOC_CHUNK_PUT];
  for (size_t i = 0; i < n && out == 0; i++) {
    size_t off = i * DOC_CHUNK;
    size_t cl = len - off < DOC_CHUNK ? len - off : DOC_CHUNK;
    const char *p = (const char *)text + off;
    unsigned char h[DOC_HASH];
    chunk_hash(p, cl, h);
    if (have[i] && memcmp(old[i], h, DOC_HASH) == 0)
      continue;
    bind_id(put, id);
    sqlite3_bind_int64(put, 2, (int64_t)i);
    sqlite3_bind_blob(put, 3, h, DOC_HASH, SQLITE_TRANSIENT);
    sqlite3_bind_blob(put, 4, cl ? p : "", (int)cl, SQLITE_STATIC);
    if (run(put) != SQLITE_OK)
      out = ATL_ESTORE;
  }
  free(old);
  free(have);
  if (out != 0)
    return out;
  sqlite3_stmt *trim = st->w[W_DOC_CHUNKS_TRIM];
  bind_id(trim, id);
  sqlite3_bind_int64(trim, 2, (int64_t)n);
  return run(trim) == SQLITE_OK ? 0 : ATL_ESTORE;
}

/* Applies one operation on the writer's connection. */
static int apply(atl_store_t *st, const op_t *op) {
  int rc;
  switch (op->kind) {
  case OP_SESSION_CREATE:
    if ((rc = step_op(st, W_SESSION_INSERT, op, true)) != 0)
      return rc;
    return doc_write(st, op->id, op->p[0], (size_t)op->n[0]);
  case OP_SESSION_DELETE:
    /* The session row first: deleting one that does not exist fails the
     * transaction like every other operation on a missing session. */
    if ((rc = step_op(st, W_SESSION_DELETE, op, true)) != 0 ||
        (rc = step_op(st, W_HISTORY_DELETE, op, false)) != 0)
      return rc;
    if ((rc = step_op(st, W_EVENTS_DELETE, op, false)) != 0 ||
        (rc = step_op(st, W_DOC_DELETE, op, false)) != 0)
      return rc;
    return step_op(st, W_QUEUE_CLEAR, &(op_t){.id = op->id, .a = INT64_MAX},
                   false);
  case OP_DOCUMENT_SET:
    if ((rc = step_op(st, W_DOCUMENT_SET, op, true)) != 0)
      return rc;
    return doc_write(st, op->id, op->p[0], (size_t)op->n[0]);
  case OP_HISTORY_APPEND:
    if ((rc = step_op(st, W_HISTORY_LEN, op, true)) != 0)
      return rc;
    return step_op(st, W_HISTORY_INSERT, op, true);
  case OP_EVENT_APPEND:
    if ((rc = step_op(st, W_LAST_SEQ, op, true)) != 0)
      return rc;
    return step_op(st, W_EVENT_INSERT, op, true);
  case OP_IMAGE_PUT:
    /* INSERT OR IGNORE: a second put of the same id is a successful
     * no-op (image ids are content hashes). */
    return step_op(st, W_IMAGE_INSERT, op, false);
  case OP_QUEUE_PUSH:
    return step_op(st, W_QUEUE_INSERT, op, true);
  case OP_QUEUE_POP:
    /* The message must still be queued: its run starts in the same
     * transaction, so a run can only start from a message that is there,
     * and only once. */
    return step_op(st, W_QUEUE_DELETE, op, true);
  case OP_QUEUE_CLEAR:
    return step_op(st, W_QUEUE_CLEAR, op, false);
  }
  return ATL_EINVAL;
}

/* Applies one transaction inside its own savepoint. On failure the
 * savepoint is rolled back, which undoes exactly this transaction's
 * operations and leaves the rest of the group intact; that is what lets
 * unrelated transactions share one COMMIT. */
static int apply_txn(atl_store_t *st, atl_txn_t *t) {
  if (t->error != 0)
    return t->error;
  if (t->nops == 0)
    return 0;
  if (run(st->w[W_SAVEPOINT]) != SQLITE_OK)
    return ATL_ESTORE;
  int rc = 0;
  for (unsigned i = 0; i < t->nops && rc == 0; i++)
    rc = apply(st, &t->ops[i]);
  if (rc == 0 && run(st->w[W_RELEASE]) == SQLITE_OK)
    return 0;
  run(st->w[W_ROLLBACK_TO]);
  run(st->w[W_RELEASE]);
  return rc != 0 ? rc : ATL_ESTORE;
}

/* Commits one group: BEGIN, every transaction in its savepoint, COMMIT,
 * then the callbacks. The callbacks run only after COMMIT has returned, so
 * nothing is acknowledged before it is in the WAL (and, with synchronous =
 * FULL, on disk); a transaction that applied cleanly is still reported
 * failed if the COMMIT that would have carried it fails. */
/* The group's figures for the admin socket: latency, size, trace line. */
static void count_group(uint64_t t0_ns, uint64_t n, bool ok) {
  static atl_series_t *lat, *size; /* the writer thread's */
  if (lat == NULL)
    lat = atl_stats_series(ATL_FAM_COMMIT, "");
  if (size == NULL)
    size = atl_stats_series(ATL_FAM_BATCH, "");
  uint64_t us = atl_stats_us_since(t0_ns);
  if (lat != NULL)
    atl_hist_add(&lat->h, us, !ok);
  if (size != NULL)
    atl_hist_add(&size->h, n, !ok);
  if (atl_slowlog_wants(us)) {
    json_object *dt = json_object_new_object();
    json_object_object_add(dt, "transactions",
                           json_object_new_int64((int64_t)n));
    json_object_object_add(dt, "ok", json_object_new_boolean(ok));
    atl_slowlog_add("commit", NULL, "group commit", us, dt);
  }
  atl_tw_t w;
  if (atl_tw_begin(&w, ATL_TR_COMMIT, NULL, "group")) {
    atl_tw_int(&w, "transactions", (int64_t)n);
    atl_tw_bool(&w, "ok", ok);
    atl_tw_ms(&w, "ms", us);
    atl_tw_end(&w);
  }
}

static void commit_group(atl_store_t *st, atl_txn_t *group) {
  uint64_t t0_ns = atl_mono_ns();
  bool ok = run(st->w[W_BEGIN]) == SQLITE_OK;
  for (atl_txn_t *t = group; t != NULL; t = t->next) {
    t->status = !ok ? (t->error ? t->error : ATL_ESTORE) : apply_txn(st, t);
    /* Some errors (SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM) make SQLite
     * roll back the whole transaction, not only the statement; then the
     * group's earlier transactions are lost too (see the loop below). */
    if (ok && sqlite3_get_autocommit(st->db))
      ok = false;
  }
  if (ok && run(st->w[W_COMMIT]) != SQLITE_OK) {
    if (!sqlite3_get_autocommit(st->db))
      run(st->w[W_ROLLBACK]);
    ok = false;
  }
  uint64_t good = 0, bad = 0;
  for (atl_txn_t *t = group; t != NULL; t = t->next) {
    if (!ok && t->status == 0)
      t->status = ATL_ESTORE;
    if (t->status == 0)
      good++;
    else
      bad++;
  }
  /* The counters are updated before the callbacks, so that a caller woken
   * by its callback sees its own transaction counted. */
  if (ok)
    atomic_fetch_add_explicit(&st->commits, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&st->transactions, good, memory_order_relaxed);
  atomic_fetch_add_explicit(&st->failures, bad, memory_order_relaxed);
  count_group(t0_ns, good + bad, ok);
  while (group != NULL) {
    atl_txn_t *t = group;
    group = t->next;
    if (t->cb != NULL)
      t->cb(t->status, t->user);
    atl_txn_free(t);
  }
}

/* Runs on the writer thread after every COMMIT, with the WAL's size. */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages) {
  (void)db;
  (void)name;
  atl_store_t *st = arg;
  if (pages < atomic_load_explicit(&st->wal_pages, memory_order_relaxed)) {
    /* The WAL started over: the restart, if one was wanted, happened. */
    st->next_kick = ATL_STORE_WAL_SOFT_PAGES;
    st->restart_wanted = false;
  }
  atomic_store_explicit(&st->wal_pages, pages, memory_order_relaxed);
  if (st->ckpt == NULL)
    return SQLITE_OK;
  if (pages >= ATL_STORE_WAL_HARD_PAGES && !st->restart_wanted) {
    st->restart_wanted = true;
    st->caught_up_0 = atl_checkpointer_caught_up(st->ckpt);
    st->next_kick = pages; /* kick now */
  }
  if (pages >= st->next_kick) {
    atl_checkpointer_kick(st->ckpt);
    st->next_kick = pages + ATL_STORE_WAL_SOFT_PAGES;
  }
  return SQLITE_OK;
}

/* Between groups: tries to restart the WAL (see ATL_STORE_WAL_HARD_PAGES).
 * The group's callbacks have run, so no acknowledgement waits for this.
 *
 * After a PASSIVE checkpoint that caught up, SQLite starts the WAL over at
 * the next write, unless a checkpoint is running on the other connection
 * just then; so the wish stands until the WAL hook sees the WAL shrink, and
 * the writer tries again after the next background catch-up. Past the
 * limit it pauses the background thread and runs a RESTART checkpoint,
 * which waits (the busy timeout) for readers and guarantees the restart:
 * that bounds the WAL even when the background thread is starved. */
static void writer_checkpoint(atl_store_t *st) {
  int pages = atomic_load_explicit(&st->wal_pages, memory_order_relaxed);
  bool over = pages >= ATL_STORE_WAL_LIMIT_PAGES;
  uint64_t caught_up = atl_checkpointer_caught_up(st->ckpt);
  if (!over && caught_up == st->caught_up_0)
    return;
  st->caught_up_0 = caught_up;
  if (over) {
    atl_checkpointer_pause(st->ckpt);
    sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_RESTART, NULL,
                              NULL);
    atl_checkpointer_resume(st->ckpt);
  } else {
    sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL,
                              NULL);
  }
  atomic_fetch_add_explicit(&st->writer_checkpoints, 1, memory_order_relaxed);
}

static void *writer_main(void *arg) {
  atl_store_t *st = arg;
  for (;;) {
    pthread_mutex_lock(&st->mu);
    while (st->head == NULL && !st->closing) {
      st->idle = true;
      pthread_cond_wait(&st->cv, &st->mu);
      st->idle = false;
    }
    if (st->head == NULL) { /* closing, and everything is committed */
      pthread_mutex_unlock(&st->mu);
      break;
    }
    /* Everything queued while the previous group was committing forms the
     * next group: under load the groups grow by themselves, so one COMMIT
     * (one fsync) is shared by many transactions. */
    atl_txn_t *group = st->head, *last = st->tail;
    unsigned n = st->queued;
    if (n > st->max_batch) {
      last = group;
      for (n = 1; n < st->max_batch; n++)
        last = last->next;
    }
    st->head = last->next;
    if (st->head == NULL)
      st->tail = NULL;
    st->queued -= n;
    last->next = NULL;
    pthread_mutex_unlock(&st->mu);
    commit_group(st, group);
    if (st->restart_wanted)
      writer_checkpoint(st);
  }
  return NULL;
}

int atl_store_submit(atl_store_t *st, atl_txn_t *t, atl_store_done_cb cb,
                     void *user) {
  if (t == NULL)
    return ATL_ENOMEM; /* atl_txn_new() failed */
  t->cb = cb;
  t->user = user;
  t->next = NULL;
  pthread_mutex_lock(&st->mu);
  if (st->closing) {
    pthread_mutex_unlock(&st->mu);
    atl_txn_free(t);
    return ATL_ESHUTDOWN;
  }
  if (st->tail != NULL)
    st->tail->next = t;
  else
    st->head = t;
  st->tail = t;
  st->queued++;
  /* Only an idle writer needs waking; a busy one takes the queue when it
   * finishes its group. This saves a futex call per submit under load. The
   * signal is sent under the lock, so that atl_store_close() cannot destroy
   * the condition variable between our unlock and our signal. */
  if (st->idle)
    pthread_cond_signal(&st->cv);
  pthread_mutex_unlock(&st->mu);
  return 0;
}

struct waiter {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
  int status;
};

static void waiter_done(int status, void *user) {
  struct waiter *w = user;
  pthread_mutex_lock(&w->mu);
  w->status = status;
  w->done = true;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

int atl_store_submit_wait(atl_store_t *st, atl_txn_t *t) {
  struct waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false,
                     0};
  int rc = atl_store_submit(st, t, waiter_done, &w);
  if (rc != 0)
    return rc;
  pthread_mutex_lock(&w.mu);
  while (!w.done)
    pthread_cond_wait(&w.cv, &w.mu);
  pthread_mutex_unlock(&w.mu);
  pthread_cond_destroy(&w.cv);
  pthread_mutex_destroy(&w.mu);
  return w.status;
}

int64_t atl_store_queue_id(atl_store_t *st) {
  return atomic_fetch_add_explicit(&st->queue_id, 1, memory_order_relaxed) + 1;
}

void atl_store_stats(atl_store_t *st, atl_store_stats_t *out) {
  out->commits = atomic_load_explicit(&st->commits, memory_order_relaxed);
  out->transactions =
      atomic_load_explicit(&st->transactions, memory_order_relaxed);
  out->failures = atomic_load_explicit(&st->failures, memory_order_relaxed);
  out->wal_pages = atomic_load_explicit(&st->wal_pages, memory_order_relaxed);
  out->writer_checkpoints =
      atomic_load_explicit(&st->writer_checkpoints, memory_order_relaxed);
  atl_checkpointer_stats_t cs = {0};
  if (st->ckpt != NULL)
    atl_checkpointer_stats(st->ckpt, &cs);
  out->checkpoints = cs.runs;
}

/* ---- Opening and closing ------------------------------------------------ */

/* Runs a PRAGMA and copies the first column of its first row into buf. */
static int pragma(sqlite3 *db, const char *sql, char *buf, size_t len) {
  sqlite3_stmt *s;
  if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
    return ATL_ESTORE;
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW)
    snprintf(buf, len, "%s", (const char *)sqlite3_column_text(s, 0));
  sqlite3_finalize(s);
  return rc == SQLITE_ROW ? 0 : ATL_ESTORE;
}

/* Brings the schema to SCHEMA_VERSION, one migration per transaction so
 * that an interrupted upgrade resumes where it stopped. */
static int migrate(sqlite3 *db, const char *path, char **err) {
  char buf[32];
  if (pragma(db, "PRAGMA user_version", buf, sizeof(buf)) != 0)
    return fail(err, ATL_ESTORE, "%s: cannot read the schema version: %s", path,
                sqlite3_errmsg(db));
  int version = atoi(buf);
  if (version > SCHEMA_VERSION)
    return fail(err, ATL_ESTORE,
                "%s: schema version %d is newer than this atelierd supports "
                "(%d); use a newer atelierd",
                path, version, SCHEMA_VERSION);
  for (; version < SCHEMA_VERSION; version++) {
    char sql[64];
    snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", version + 1);
    if (exec(db, "BEGIN IMMEDIATE") != SQLITE_OK ||
        exec(db, migrations[version]) != SQLITE_OK ||
        exec(db, sql) != SQLITE_OK || exec(db, "COMMIT") != SQLITE_OK) {
      int rc = fail(err, ATL_ESTORE,
                    "%s: migration to schema version %d "
                    "failed: %s",
                    path, version + 1, sqlite3_errmsg(db));
      exec(db, "ROLLBACK");
      return rc;
    }
  }
  return 0;
}

static void store_free(atl_store_t *st) {
  atl_checkpointer_stop(st->ckpt);
  for (int i = 0; i < W_COUNT; i++)
    sqlite3_finalize(st->w[i]);
  sqlite3_close(st->db);
  free(st->path);
  free(st);
}

int atl_store_open(const atl_store_options_t *opt, atl_store_t **out,
                   char **err) {
  *out = NULL;
  if (err != NULL)
    *err = NULL;
  /* synchronous 0 (a zeroed options struct) means FULL, the safe choice. */
  int sync = opt->synchronous == 0 ? 2 : opt->synchronous;
  if (opt->data_dir == NULL || sync < 1 || sync > 2)
    return fail(err, ATL_EINVAL, "store: invalid options");
  int rc = atl_mkdir_p(opt->data_dir, 0700);
  if (rc != 0)
    return fail(err, rc, "%s: cannot create the data directory: %s",
                opt->data_dir, atl_strerror(rc));
  atl_store_t *st = calloc(1, sizeof(*st));
  if (st == NULL || asprintf(&st->path, "%s/atelier.db", opt->data_dir) < 0) {
    free(st);
    return fail(err, ATL_ENOMEM, "store: out of memory");
  }
  st->max_batch = opt->max_batch ? opt->max_batch : 1024;
  /* NOMUTEX: the connection is used by one thread at a time (this one,
   * then the writer), so SQLite's own locking would be pure overhead. */
  if (sqlite3_open_v2(st->path, &st->db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                          SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK) {
    rc = fail(err, ATL_ESTORE, "%s: %s", st->path,
              st->db ? sqlite3_errmsg(st->db) : "out of memory");
    goto error;
  }
  sqlite3_busy_timeout(st->db, 5000);
  char mode[16] = "";
  if (pragma(st->db, "PRAGMA journal_mode = WAL", mode, sizeof(mode)) != 0 ||
      strcmp(mode, "wal") != 0 ||
      exec(st->db, sync == 1 ? "PRAGMA synchronous = NORMAL"
                             : "PRAGMA synchronous = FULL") != SQLITE_OK) {
    rc = fail(err, ATL_ESTORE, "%s: cannot set WAL mode: %s", st->path,
              sqlite3_errmsg(st->db));
    goto error;
  }
  if ((rc = migrate(st->db, st->path, err)) != 0)
    goto error;
  /* Queue ids go on from the largest ever given (sqlite_sequence keeps it
   * even once the rows are gone); none yet: no row. */
  char qid[32] = "0";
  pragma(st->db, "SELECT seq FROM sqlite_sequence WHERE name = 'queue'", qid,
         sizeof(qid));
  atomic_init(&st->queue_id, strtoll(qid, NULL, 10));
  for (int i = 0; i < W_COUNT; i++) {
    if (sqlite3_prepare_v3(st->db, wsql[i], -1, SQLITE_PREPARE_PERSISTENT,
                           &st->w[i], NULL) != SQLITE_OK) {
      rc = fail(err, ATL_ESTORE, "%s: cannot prepare \"%s\": %s", st->path,
                wsql[i], sqlite3_errmsg(st->db));
      goto error;
    }
  }
  /* Checkpoints are ours to run (checkpoint.h): SQLite's automatic one is
   * turned off first, since it installs a WAL hook of its own. */
  sqlite3_wal_autocheckpoint(st->db, 0);
  sqlite3_wal_hook(st->db, wal_hook, st);
  st->next_kick = ATL_STORE_WAL_SOFT_PAGES;
  if ((rc = atl_checkpointer_start(st->path, sync, &st->ckpt)) != 0) {
    rc = fail(err, rc, "%s: cannot start the checkpointer", st->path);
    goto error;
  }
  pthread_mutex_init(&st->mu, NULL);
  pthread_cond_init(&st->cv, NULL);
  if (pthread_create(&st->thread, NULL, writer_main, st) != 0) {
    pthread_cond_destroy(&st->cv);
    pthread_mutex_destroy(&st->mu);
    rc = fail(err, ATL_ENOMEM, "store: cannot start the writer thread");
    goto error;
  }
  *out = st;
  return 0;
error:
  store_free(st);
  return rc;
}

void atl_store_close(atl_store_t *st) {
  if (st == NULL)
    return;
  pthread_mutex_lock(&st->mu);
  st->closing = true;
  pthread_cond_signal(&st->cv);
  pthread_mutex_unlock(&st->mu);
  /* The writer drains the queue before it exits: everything submitted
   * before close began is committed and its callback called. */
  pthread_join(st->thread, NULL);
  atl_checkpointer_stop(st->ckpt);
  st->ckpt = NULL;
  /* Folding the WAL back into the database leaves one self-contained file
   * behind and keeps the WAL from growing across restarts. */
  sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL,
                            NULL);
  pthread_cond_destroy(&st->cv);
  pthread_mutex_destroy(&st->mu);
  store_free(st);
}

/* ---- Readers ------------------------------------------------------------ */

enum rstmt {
  R_SESSION_LOAD,
  R_DOC_CHUNKS,
  R_SESSION_LIST,
  R_SESSION_COUNT,
  R_HISTORY,
  R_EVENTS,
  R_IMAGE,
  R_LAST_RUN,
  R_QUEUE,
  R_QUEUE_SESSIONS,
  R_COUNT
};

static const char *const rsql[R_COUNT] = {
    [R_SESSION_LOAD] = "SELECT id, created_ms, updated_ms, last_seq,"
                       " history_len, model FROM sessions WHERE id = ?1",
    [R_DOC_CHUNKS] = "SELECT text FROM doc_chunks WHERE session = ?1"
                     " ORDER BY idx",
    [R_SESSION_LIST] = "SELECT id, created_ms, updated_ms, last_seq,"
                       " history_len, model FROM sessions"
                       " ORDER BY updated_ms DESC, id",
    [R_SESSION_COUNT] = "SELECT count(*) FROM sessions",
    [R_HISTORY] = "SELECT idx, role, content, created_ms FROM history"
                  " WHERE session = ?1 AND idx >= ?2 ORDER BY idx LIMIT ?3",
    [R_EVENTS] = "SELECT seq, type, ts_ms, data FROM events"
                 " WHERE session = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
    [R_IMAGE] = "SELECT mime, data FROM images WHERE id = ?1",
    /* Backwards from the newest event; every run ends with a run.* event,
     * so this reads at most the last run's events. */
    [R_LAST_RUN] = "SELECT type FROM events WHERE session = ?1"
                   " AND type GLOB 'run.*' ORDER BY seq DESC LIMIT 1",
    [R_QUEUE] = "SELECT id, text, model, ts_ms FROM queue WHERE session = ?1"
                " ORDER BY id",
    /* The session with the oldest waiting message first. */
    [R_QUEUE_SESSIONS] = "SELECT session FROM queue GROUP BY session"
                         " ORDER BY min(id)",
};

struct atl_store_reader_s {
  sqlite3 *db;
  sqlite3_stmt *s[R_COUNT]; /* prepared on first use */
};

int atl_store_reader_open(atl_store_t *st, atl_store_reader_t **out) {
  *out = NULL;
  atl_store_reader_t *r = calloc(1, sizeof(*r));
  if (r == NULL)
    return ATL_ENOMEM;
  /* A read-only connection: a reader bug cannot write, and in WAL mode it
   * never blocks the writer nor waits for it. */
  if (sqlite3_open_v2(st->path, &r->db,
                      SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK) {
    sqlite3_close(r->db);
    free(r);
    return ATL_ESTORE;
  }
  sqlite3_busy_timeout(r->db, 5000);
  /* Read through a memory map rather than a read() a page: an image of a
   * megabyte is 256 overflow pages, which took 12 ms to read after a
   * restart, 7 mapped (bench/README.md, drawing). Only the daemon writes
   * the file and nothing shrinks it while it runs (no VACUUM, no
   * auto_vacuum), the case where a map would fault. */
  (void)sqlite3_exec(r->db, "PRAGMA mmap_size = 268435456", NULL, NULL, NULL);
  *out = r;
  return 0;
}

void atl_store_reader_close(atl_store_reader_t *r) {
  if (r == NULL)
    return;
  for (int i = 0; i < R_COUNT; i++)
    sqlite3_finalize(r->s[i]);
  sqlite3_close(r->db);
  free(r);
}

static sqlite3_stmt *reader_stmt(atl_store_reader_t *r, enum rstmt which) {
  if (r->s[which] == NULL &&
      sqlite3_prepare_v3(r->db, rsql[which], -1, SQLITE_PREPARE_PERSISTENT,
                         &r->s[which], NULL) != SQLITE_OK)
    return NULL;
  return r->s[which];
}

/* Resets s after a query and maps the last sqlite3_step() result: a row
 * left over means the callback stopped the iteration, which is fine. */
static int finish(sqlite3_stmt *s, int rc) {
  sqlite3_reset(s);
  return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : ATL_ESTORE;
}

static const char *col_text(sqlite3_stmt *s, int i) {
  return (const char *)sqlite3_column_text(s, i);
}

static void fill_row(sqlite3_stmt *s, atl_session_row_t *row) {
  const char *id = col_text(s, 0);
  snprintf(row->id, sizeof(row->id), "%s", id ? id : "");
  row->created_ms = sqlite3_column_int64(s, 1);
  row->updated_ms = sqlite3_column_int64(s, 2);
  row->last_seq = sqlite3_column_int64(s, 3);
  row->history_len = sqlite3_column_int64(s, 4);
  const char *model = col_text(s, 5);
  snprintf(row->model, sizeof(row->model), "%s", model ? model : "");
  row->document = NULL;
}

/* The document of session id, its chunks joined, as a malloc()ed
 * NUL-terminated string in *out. One statement reads every chunk, so they
 * are all of one commit. */
static int doc_read(atl_store_reader_t *r, const char *id, char **out) {
  *out = NULL;
  sqlite3_stmt *s = reader_stmt(r, R_DOC_CHUNKS);
  if (s == NULL)
    return ATL_ESTORE;
  bind_id(s, id);
  char *buf = NULL;
  size_t len = 0;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    const void *p = sqlite3_column_blob(s, 0);
    size_t n = (size_t)sqlite3_column_bytes(s, 0);
    char *nb = realloc(buf, len + n + 1);
    if (nb == NULL) {
      free(buf);
      sqlite3_reset(s);
      return ATL_ENOMEM;
    }
    buf = nb;
    if (n)
      memcpy(buf + len, p, n);
    len += n;
  }
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) {
    free(buf);
    return ATL_ESTORE;
  }
  if (buf == NULL && (buf = malloc(1)) == NULL)
    return ATL_ENOMEM;
  buf[len] = '\0';
  *out = buf;
  return 0;
}

int atl_store_session_load(atl_store_reader_t *r, const char *id,
                           atl_session_row_t *row) {
  sqlite3_stmt *s = reader_stmt(r, R_SESSION_LOAD);
  if (s == NULL)
    return ATL_ESTORE;
  /* The row, the document's chunks and the last run are read by three
   * statements, each its own snapshot, with no transaction around them: a
   * session is written only once it is loaded, through its one in-memory
   * object, so nothing writes it between them. An explicit read
   * transaction would be one more thing that could be left open on a
   * pooled connection, which would then read a stale snapshot for good. */
  bind_id(s, id);
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    fill_row(s, row);
    rc = 0;
  } else {
    rc = rc == SQLITE_DONE ? ATL_ENOENT : ATL_ESTORE;
  }
  sqlite3_reset(s);
  if (rc == 0)
    rc = doc_read(r, id, &row->document);
  row->run_open = 0;
  sqlite3_stmt *lr = rc == 0 ? reader_stmt(r, R_LAST_RUN) : NULL;
  if (lr != NULL) {
    bind_id(lr, id);
    if (sqlite3_step(lr) == SQLITE_ROW) {
      const char *type = col_text(lr, 0);
      row->run_open = type != NULL && strcmp(type, "run.started") == 0;
    }
    sqlite3_reset(lr);
  }
  return rc;
}

int atl_store_session_list(atl_store_reader_t *r,
                           int (*cb)(const atl_session_row_t *row, void *user),
                           void *user) {
  sqlite3_stmt *s = reader_stmt(r, R_SESSION_LIST);
  if (s == NULL)
    return ATL_ESTORE;
  atl_session_row_t row;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    fill_row(s, &row);
    if (cb(&row, user) != 0)
      break;
  }
  return finish(s, rc);
}

int64_t atl_store_session_count(atl_store_reader_t *r) {
  sqlite3_stmt *s = reader_stmt(r, R_SESSION_COUNT);
  if (s == NULL)
    return ATL_ESTORE;
  int64_t n = ATL_ESTORE;
  if (sqlite3_step(s) == SQLITE_ROW)
    n = sqlite3_column_int64(s, 0);
  sqlite3_reset(s);
  return n;
}

/* Binds (id, key, limit) and steps the statement; SQLite reads a negative
 * LIMIT as no limit. */
static sqlite3_stmt *range_query(atl_store_reader_t *r, enum rstmt which,
                                 const char *id, int64_t key, int64_t limit) {
  sqlite3_stmt *s = reader_stmt(r, which);
  if (s == NULL)
    return NULL;
  bind_id(s, id);
  sqlite3_bind_int64(s, 2, key);
  sqlite3_bind_int64(s, 3, limit > 0 ? limit : -1);
  return s;
}

int atl_store_history_read(atl_store_reader_t *r, const char *id, int64_t from,
                           int64_t limit,
                           int (*cb)(const atl_history_row_t *row, void *user),
                           void *user) {
  sqlite3_stmt *s = range_query(r, R_HISTORY, id, from, limit);
  if (s == NULL)
    return ATL_ESTORE;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    atl_history_row_t row = {
        .idx = sqlite3_column_int64(s, 0),
        .role = col_text(s, 1),
        .content = col_text(s, 2),
        .created_ms = sqlite3_column_int64(s, 3),
    };
    if (cb(&row, user) != 0)
      break;
  }
  return finish(s, rc);
}

int atl_store_events_read(atl_store_reader_t *r, const char *id, int64_t after,
                          int64_t limit,
                          int (*cb)(const atl_event_row_t *row, void *user),
                          void *user) {
  sqlite3_stmt *s = range_query(r, R_EVENTS, id, after, limit);
  if (s == NULL)
    return ATL_ESTORE;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    atl_event_row_t row = {
        .seq = sqlite3_column_int64(s, 0),
        .type = col_text(s, 1),
        .ts_ms = sqlite3_column_int64(s, 2),
        .data = col_text(s, 3),
    };
    if (cb(&row, user) != 0)
      break;
  }
  return finish(s, rc);
}

int atl_store_image_get(atl_store_reader_t *r, const char *image_id,
                        char **mime, void **data, size_t *len) {
  *mime = NULL;
  *data = NULL;
  *len = 0;
  sqlite3_stmt *s = reader_stmt(r, R_IMAGE);
  if (s == NULL)
    return ATL_ESTORE;
  bind_id(s, image_id);
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    const void *blob = sqlite3_column_blob(s, 1);
    size_t n = (size_t)sqlite3_column_bytes(s, 1);
    const char *m = col_text(s, 0);
    *mime = strdup(m ? m : "");
    *data = malloc(n ? n : 1);
    if (*mime != NULL && *data != NULL) {
      if (n > 0)
        memcpy(*data, blob, n);
      *len = n;
      rc = 0;
    } else {
      free(*mime);
      free(*data);
      *mime = NULL;
      *data = NULL;
      rc = ATL_ENOMEM;
    }
  } else {
    rc = rc == SQLITE_DONE ? ATL_ENOENT : ATL_ESTORE;
  }
  sqlite3_reset(s);
  return rc;
}

int atl_store_queue_read(atl_store_reader_t *r, const char *id,
                         int (*cb)(const atl_queue_row_t *row, void *user),
                         void *user) {
  sqlite3_stmt *s = reader_stmt(r, R_QUEUE);
  if (s == NULL)
    return ATL_ESTORE;
  bind_id(s, id);
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    atl_queue_row_t row = {
        .id = sqlite3_column_int64(s, 0),
        .text = col_text(s, 1),
        .model = col_text(s, 2),
        .ts_ms = sqlite3_column_int64(s, 3),
    };
    if (cb(&row, user) != 0)
      break;
  }
  return finish(s, rc);
}

int atl_store_queue_sessions(atl_store_reader_t *r,
                             int (*cb)(const char *id, void *user),
                             void *user) {
  sqlite3_stmt *s = reader_stmt(r, R_QUEUE_SESSIONS);
  if (s == NULL)
    return ATL_ESTORE;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    const char *id = col_text(s, 0);
    if (id != NULL && cb(id, user) != 0)
      break;
  }
  return finish(s, rc);
}
