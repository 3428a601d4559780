#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* nftw() */
#endif

#include <criterion/criterion.h>
#include <ftw.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store.h"
#include "util.h"

/* ---- Helpers ------------------------------------------------------------ */

static char tmpdir[64];

static int rm_entry(const char *path, const struct stat *sb, int flag,
                    struct FTW *ftw) {
  return remove(path);
}

static void make_tmpdir(void) {
  snprintf(tmpdir, sizeof(tmpdir), "/tmp/atl-store-XXXXXX");
  cr_assert_not_null(mkdtemp(tmpdir));
}

static void remove_tmpdir(void) {
  if (tmpdir[0] != '\0')
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  tmpdir[0] = '\0';
}

static atl_store_t *open_store_sync(int synchronous) {
  /* A subdirectory that does not exist yet, so that open creates it. */
  char dir[128];
  snprintf(dir, sizeof(dir), "%s/data", tmpdir);
  atl_store_options_t opt = {.data_dir = dir, .synchronous = synchronous};
  atl_store_t *st = NULL;
  char *err = NULL;
  int rc = atl_store_open(&opt, &st, &err);
  cr_assert_eq(rc, 0, "open: %s", err ? err : "?");
  cr_assert_null(err);
  return st;
}

static atl_store_t *open_store(void) {
  return open_store_sync(1);
}

static void db_path(char *buf, size_t len) {
  snprintf(buf, len, "%s/data/atelier.db", tmpdir);
}

static void mkid(char out[33], unsigned hi, unsigned lo) {
  snprintf(out, 33, "%08x%024x", hi, lo);
}

static void create_session(atl_store_t *st, const char *id, int64_t ms,
                           const char *doc) {
  atl_txn_t *t = atl_txn_new();
  atl_txn_session_create(t, id, ms, doc, NULL);
  cr_assert_eq(atl_store_submit_wait(st, t), 0);
}

/* Runs one SQL query on a connection of its own and returns the first
 * column of the first row as an integer. */
static int64_t sql_int(const char *sql) {
  char path[128];
  db_path(path, sizeof(path));
  sqlite3 *db;
  cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL),
               SQLITE_OK);
  sqlite3_stmt *s;
  cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK, "%s",
               sqlite3_errmsg(db));
  int64_t v = -1;
  if (sqlite3_step(s) == SQLITE_ROW)
    v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

TestSuite(store, .init = make_tmpdir, .fini = remove_tmpdir);

/* ---- Sessions ----------------------------------------------------------- */

struct list_acc {
  int n;
  char ids[8][33];
  int64_t updated[8];
};

static int list_cb(const atl_session_row_t *row, void *user) {
  struct list_acc *acc = user;
  cr_assert_null(row->document);
  if (acc->n < 8) {
    memcpy(acc->ids[acc->n], row->id, 33);
    acc->updated[acc->n] = row->updated_ms;
  }
  acc->n++;
  return 0;
}

static int list_stop_cb(const atl_session_row_t *row, void *user) {
  (*(int *)user)++;
  return 1;
}

Test(store, session_round_trip) {
  atl_store_t *st = open_store();
  char a[33], b[33], c[33];
  mkid(a, 1, 1);
  mkid(b, 1, 2);
  mkid(c, 1, 3);
  create_session(st, a, 1000, "{\"name\":\"a\"}");
  create_session(st, b, 2000, "{\"name\":\"b\"}");
  create_session(st, c, 1500, "{\"name\":\"c\"}");

  /* A duplicate id fails. */
  atl_txn_t *t = atl_txn_new();
  atl_txn_session_create(t, a, 5, "{}", NULL);
  cr_assert_eq(atl_store_submit_wait(st, t), ATL_ESTORE);

  /* a becomes the most recently updated. */
  t = atl_txn_new();
  atl_txn_document_set(t, a, "{\"name\":\"a2\"}", 3000);
  cr_assert_eq(atl_store_submit_wait(st, t), 0);

  atl_store_reader_t *r;
  cr_assert_eq(atl_store_reader_open(st, &r), 0);
  atl_session_row_t row;
  cr_assert_eq(atl_store_session_load(r, a, &row), 0);
  cr_assert_str_eq(row.id, a);
  cr_assert_str_eq(row.document, "{\"name\":\"a2\"}");
  cr_assert_eq(row.created_ms, 1000);
  cr_assert_eq(row.updated_ms, 3000);
  cr_assert_eq(row.last_seq, 0);
  cr_assert_eq(row.history_len, 0);
  free(row.document);

  cr_assert_eq(atl_store_session_count(r), 3);
  struct list_acc acc = {0};
  cr_assert_eq(atl_store_session_list(r, list_cb, &acc), 0);
  cr_assert_eq(acc.n, 3);
  cr_assert_str_eq(acc.ids[0], a);
  cr_assert_str_eq(acc.ids[1], b);
  cr_assert_str_eq(acc.ids[2], c);
  cr_assert_eq(acc.updated[2], 1500);
  int seen = 0;
  cr_assert_eq(atl_store_session_list(r, list_stop_cb, &seen), 0);
  cr_assert_eq(seen, 1);

  t = atl_txn_new();
  atl_txn_history_append(t, b, 0, "user", "\"hi\"", 1);
  atl_txn_event_append(t, b, 1, "x", 1, NULL);
  cr_assert_eq(atl_store_submit_wait(st, t), 0);
  t = atl_txn_new();
  atl_txn_session_delete(t, b);
  cr_assert_eq(atl_store_submit_wait(st, t), 0);
  cr_assert_eq(atl_store_session_load(r, b, &row), ATL_ENOENT);
  cr_assert_eq(atl_store_session_count(r), 2);
  cr_assert_eq(sql_int("SELECT count(*) FROM history"), 0);
  cr_assert_eq(sql_int("SELECT count(*) FROM events"), 0);

  atl_store_reader_close(r);
  atl_store_close(st);
}

Test(store, ops_on_missing_session_fail) {
  atl_store_t *st = open_store();
  char a[33], missing[33];
  mkid(a, 2, 1);
  mkid(missing, 2, 99);

  atl_txn_t *t = atl_txn_new();
  atl_txn_document_set(t, missing, "{}", 1);
  cr_assert_eq(atl_store_submit_wait(st, t), ATL_ESTORE);
  t = atl_txn_new();
  atl_txn_history_append(t, missing, 0, "user", "1", 1);
  cr_assert_eq(atl_store_submit_wait(st, t), ATL_ESTORE);
  t = atl_txn_new();
  atl_txn_event_append(t, missing, 1, "x", 1, "{}");
  cr_assert_eq(atl_store_submit_wait(st, t), ATL_ESTORE);
  t = atl_txn_new();
  atl_txn_session_delete(t, missing);
  cr_assert_eq(atl_store_submit_wait(st, t), ATL_ESTORE);

  /* A failing operation undoes the whole transaction. */
  t = atl_txn_new();
  atl_txn_session_create(t, a, 1, "{}", NULL);
  atl_txn_event_append(t, missing, 1, "x", 1, "{}");
  cr_assert_eq(atl_store_submit_wait(st, t), ATL_ESTORE);
  /* A required string that is missing fails the transaction too. */
  t = atl_txn_new();
  atl_txn_session_create(t, a, 1, NULL, NULL);
  cr_assert_eq(atl_store_submit_wait(st, t), ATL_EINVAL);
  /* An empty transaction commits. */
  cr_assert_eq(atl_store_submit_wait(st, atl_txn_new()), 0);

  atl_store_stats_t stats;
  atl_store_stats(st, &stats);
  cr_assert_eq(stats.failures, 6);
  cr_assert_eq(stats.transactions, 1);
  atl_store_close(st);
  cr_assert_eq(sql_int("SELECT count(*) FROM sessions"), 0);
  cr_assert_eq(sql_int("SELECT count(*) FROM events"), 0);
}

/* ---- History and events ------------------------------------------------- */

struct hist_acc {
  int n;
  int64_t idx[16];
  char text[16][32];
};

static int hist_cb(const atl_history_row_t *row, void *user) {
  struct hist_acc *acc = user;
  acc->idx[acc->n] = row->idx;
  snprintf(acc->text[acc->n], 32, "%s:%s:%" PRId64, row->role, row->content,
           row->created_ms);
  acc->n++;
  return 0;
}

static int event_cb(const atl_event_row_t *row, void *user) {
  struct hist_acc *acc = user;
  acc->idx[acc->n] = row->seq;
  snprintf(acc->text[acc->n], 32, "%s:%s:%" PRId64, row->type,
           row->data ? row->data : "NULL", row->ts_ms);
  acc->n++;
  return 0;
}

Test(store, history_and_events) {
  atl_store_t *st = open_store();
  char a[33];
  mkid(a, 3, 1);
  create_session(st, a, 1, "{}");
  for (int i = 0; i < 10; i++) {
    char content[16];
    snprintf(content, sizeof(content), "\"m%d\"", i);
    atl_txn_t *t = atl_txn_new();
    atl_txn_history_append(t, a, i, i % 2 ? "assistant" : "user", content,
                           100 + i);
    atl_txn_event_append(t, a, i + 1, "message", 200 + i,
                         i == 3 ? NULL : content);
    cr_assert_eq(atl_store_submit_wait(st, t), 0);
  }
  /* A repeated history index or event sequence is refused. */
  atl_txn_t *t = atl_txn_new();
  atl_txn_event_append(t, a, 5, "dup", 1, NULL);
  cr_assert_eq(atl_store_submit_wait(st, t), ATL_ESTORE);

  atl_store_reader_t *r;
  cr_assert_eq(atl_store_reader_open(st, &r), 0);
  atl_session_row_t row;
  cr_assert_eq(atl_store_session_load(r, a, &row), 0);
  cr_assert_eq(row.history_len, 10);
  cr_assert_eq(row.last_seq, 10);
  free(row.document);

  struct hist_acc acc = {0};
  cr_assert_eq(atl_store_history_read(r, a, 0, 0, hist_cb, &acc), 0);
  cr_assert_eq(acc.n, 10);
  cr_assert_str_eq(acc.text[0], "user:\"m0\":100");
  cr_assert_str_eq(acc.text[9], "assistant:\"m9\":109");
  memset(&acc, 0, sizeof(acc));
  cr_assert_eq(atl_store_history_read(r, a, 4, 3, hist_cb, &acc), 0);
  cr_assert_eq(acc.n, 3);
  cr_assert_eq(acc.idx[0], 4);
  cr_assert_eq(acc.idx[2], 6);

  memset(&acc, 0, sizeof(acc));
  cr_assert_eq(atl_store_events_read(r, a, 0, 0, event_cb, &acc), 0);
  cr_assert_eq(acc.n, 10);
  cr_assert_eq(acc.idx[0], 1);
  cr_assert_str_eq(acc.text[3], "message:NULL:203");
  cr_assert_str_eq(acc.text[4], "message:\"m4\":204");
  memset(&acc, 0, sizeof(acc));
  cr_assert_eq(atl_store_events_read(r, a, 7, 2, event_cb, &acc), 0);
  cr_assert_eq(acc.n, 2);
  cr_assert_eq(acc.idx[0], 8);
  cr_assert_eq(acc.idx[1], 9);
  memset(&acc, 0, sizeof(acc));
  cr_assert_eq(atl_store_events_read(r, a, 10, 0, event_cb, &acc), 0);
  cr_assert_eq(acc.n, 0);

  atl_store_reader_close(r);
  atl_store_close(st);
}

/* ---- Images ------------------------------------------------------------- */

Test(store, images_put_get_dedupe) {
  atl_store_t *st = open_store();
  unsigned char png[300];
  for (size_t i = 0; i < sizeof(png); i++)
    png[i] = (unsigned char)(i * 7);
  char sha[65];
  atl_sha256_hex(png, sizeof(png), sha);

  atl_txn_t *t = atl_txn_new();
  atl_txn_image_put(t, sha, "image/png", png, sizeof(png), 10);
  cr_assert_eq(atl_store_submit_wait(st, t), 0);
  t = atl_txn_new();
  atl_txn_image_put(t, sha, "image/png", png, sizeof(png), 20);
  cr_assert_eq(atl_store_submit_wait(st, t), 0);

  atl_store_reader_t *r;
  cr_assert_eq(atl_store_reader_open(st, &r), 0);
  char *mime;
  void *data;
  size_t len;
  cr_assert_eq(atl_store_image_get(r, sha, &mime, &data, &len), 0);
  cr_assert_str_eq(mime, "image/png");
  cr_assert_eq(len, sizeof(png));
  cr_assert_eq(memcmp(data, png, len), 0);
  free(mime);
  free(data);
  cr_assert_eq(atl_store_image_get(r, "nope", &mime, &data, &len), ATL_ENOENT);
  cr_assert_null(mime);
  cr_assert_null(data);
  atl_store_reader_close(r);
  atl_store_close(st);
  cr_assert_eq(sql_int("SELECT count(*) FROM images"), 1);
  cr_assert_eq(sql_int("SELECT created_ms FROM images"), 10);
}

/* ---- Group commit ------------------------------------------------------- */

struct results {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
  int status[8];
  bool hold; /* the blocker's callback waits while this is set */
};

struct slot {
  struct results *res;
  int i;
};

static void record_cb(int status, void *user) {
  struct slot *s = user;
  pthread_mutex_lock(&s->res->mu);
  s->res->status[s->i] = status;
  s->res->done++;
  pthread_cond_broadcast(&s->res->cv);
  while (s->i == 0 && s->res->hold)
    pthread_cond_wait(&s->res->cv, &s->res->mu);
  pthread_mutex_unlock(&s->res->mu);
}

Test(store, failing_txn_does_not_fail_its_group) {
  atl_store_t *st = open_store();
  char a[33], missing[33];
  mkid(a, 4, 1);
  mkid(missing, 4, 2);
  create_session(st, a, 1, "{\"v\":0}");

  struct results res = {.mu = PTHREAD_MUTEX_INITIALIZER,
                        .cv = PTHREAD_COND_INITIALIZER};
  struct slot slots[5];
  for (int i = 0; i < 5; i++)
    slots[i] = (struct slot){&res, i};

  /* The blocker's callback holds the writer until the next four are
   * queued, so that they form one group. */
  res.hold = true;
  cr_assert_eq(atl_store_submit(st, atl_txn_new(), record_cb, &slots[0]), 0);
  pthread_mutex_lock(&res.mu);
  while (res.done < 1)
    pthread_cond_wait(&res.cv, &res.mu);
  pthread_mutex_unlock(&res.mu);
  atl_store_stats_t before;
  atl_store_stats(st, &before);

  atl_txn_t *t = atl_txn_new();
  atl_txn_document_set(t, a, "{\"v\":1}", 10);
  cr_assert_eq(atl_store_submit(st, t, record_cb, &slots[1]), 0);
  t = atl_txn_new();
  atl_txn_document_set(t, missing, "{\"v\":2}", 11);
  cr_assert_eq(atl_store_submit(st, t, record_cb, &slots[2]), 0);
  t = atl_txn_new();
  atl_txn_event_append(t, a, 1, "set", 12, "{\"v\":1}");
  cr_assert_eq(atl_store_submit(st, t, record_cb, &slots[3]), 0);
  t = atl_txn_new();
  atl_txn_session_create(t, a, 13, "{}", NULL); /* a duplicate */
  cr_assert_eq(atl_store_submit(st, t, record_cb, &slots[4]), 0);

  pthread_mutex_lock(&res.mu);
  res.hold = false;
  pthread_cond_broadcast(&res.cv);
  while (res.done < 5)
    pthread_cond_wait(&res.cv, &res.mu);
  pthread_mutex_unlock(&res.mu);

  cr_assert_eq(res.status[0], 0);
  cr_assert_eq(res.status[1], 0);
  cr_assert_eq(res.status[2], ATL_ESTORE);
  cr_assert_eq(res.status[3], 0);
  cr_assert_eq(res.status[4], ATL_ESTORE);
  atl_store_stats_t after;
  atl_store_stats(st, &after);
  cr_assert_eq(after.commits - before.commits, 1, "one group, one COMMIT");
  cr_assert_eq(after.transactions - before.transactions, 2);
  cr_assert_eq(after.failures - before.failures, 2);

  atl_store_reader_t *r;
  cr_assert_eq(atl_store_reader_open(st, &r), 0);
  atl_session_row_t row;
  cr_assert_eq(atl_store_session_load(r, a, &row), 0);
  cr_assert_str_eq(row.document, "{\"v\":1}");
  cr_assert_eq(row.last_seq, 1);
  cr_assert_eq(row.created_ms, 1);
  free(row.document);
  cr_assert_eq(atl_store_session_load(r, missing, &row), ATL_ENOENT);
  atl_store_reader_close(r);
  atl_store_close(st);
}

/* Documents are stored in 32 KiB chunks: every length round-trips, a
 * shorter document drops the chunks past its end, an edit at the end
 * leaves the first chunks as they were, and a failed write keeps the
 * old document whole. */
static char *doc_of(atl_store_t *st, const char *id) {
  atl_store_reader_t *r;
  cr_assert_eq(atl_store_reader_open(st, &r), 0);
  atl_session_row_t row;
  cr_assert_eq(atl_store_session_load(r, id, &row), 0);
  atl_store_reader_close(r);
  return row.document;
}

Test(store, documents_in_chunks) {
  atl_store_t *st = open_store();
  char a[33];
  mkid(a, 5, 1);
  create_session(st, a, 1, "{}");
  static const size_t lens[] = {0,      1,     32767, 32768, 32769,
                                100000, 65536, 10,    200000};
  char *doc = malloc(200001);
  for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
    size_t n = lens[k];
    for (size_t i = 0; i < n; i++)
      doc[i] = (char)('a' + (i * 7 + k) % 26);
    doc[n] = '\0';
    atl_txn_t *t = atl_txn_new();
    atl_txn_document_set(t, a, doc, 10 + (int64_t)k);
    cr_assert_eq(atl_store_submit_wait(st, t), 0);
    char *got = doc_of(st, a);
    cr_assert_eq(strlen(got), n, "length %zu", n);
    cr_assert(memcmp(got, doc, n) == 0, "length %zu", n);
    free(got);
    cr_assert_eq(sql_int("SELECT count(*) FROM doc_chunks"),
                 n == 0 ? 1 : (int64_t)((n + 32767) / 32768));
  }
  /* An edit in the last chunk rewrites that chunk only. */
  int64_t first = sql_int("SELECT rowid FROM doc_chunks WHERE idx = 0");
  int64_t last = sql_int("SELECT rowid FROM doc_chunks WHERE idx = 6");
  cr_assert_eq(sql_int("SELECT length(hash) FROM doc_chunks WHERE idx = 0"),
               32);
  doc[199999] = '!';
  atl_txn_t *t = atl_txn_new();
  atl_txn_document_set(t, a, doc, 100);
  cr_assert_eq(atl_store_submit_wait(st, t), 0);
  /* INSERT OR REPLACE gives a rewritten chunk a new rowid. */
  cr_assert_eq(sql_int("SELECT rowid FROM doc_chunks WHERE idx = 0"), first);
  cr_assert_neq(sql_int("SELECT rowid FROM doc_chunks WHERE idx = 6"), last);
  /* A transaction that fails after its document write undoes it. */
  char missing[33];
  mkid(missing, 5, 2);
  t = atl_txn_new();
  atl_txn_document_set(t, a, "{\"short\":1}", 101);
  atl_txn_document_set(t, missing, "{}", 101);
  cr_assert_eq(atl_store_submit_wait(st, t), ATL_ESTORE);
  char *got = doc_of(st, a);
  cr_assert_eq(strlen(got), 200000);
  cr_assert_eq(got[199999], '!');
  free(got);
  /* Deleting the session deletes its chunks. */
  t = atl_txn_new();
  atl_txn_session_delete(t, a);
  cr_assert_eq(atl_store_submit_wait(st, t), 0);
  cr_assert_eq(sql_int("SELECT count(*) FROM doc_chunks"), 0);
  free(doc);
  atl_store_close(st);
}

/* A document handed over rather than copied is written the same, freed
 * with its transaction (ASan and valgrind would see a leak or a double
 * free), and a second one in the same transaction is copied. */
Test(store, a_document_handed_over) {
  atl_store_t *st = open_store();
  char a[33];
  mkid(a, 6, 1);
  create_session(st, a, 1, "{}");
  atl_txn_t *t = atl_txn_new();
  atl_txn_document_take(t, a, strdup("{\"first\":1}"), 20);
  atl_txn_document_take(t, a, strdup("{\"second\":2}"), 21);
  cr_assert_eq(atl_store_submit_wait(st, t), 0);
  char *got = doc_of(st, a);
  cr_expect_str_eq(got, "{\"second\":2}");
  free(got);
  /* Handed over to a transaction that fails: freed all the same. */
  char missing[33];
  mkid(missing, 6, 2);
  t = atl_txn_new();
  atl_txn_document_take(t, missing, strdup("{}"), 22);
  cr_assert_eq(atl_store_submit_wait(st, t), ATL_ESTORE);
  t = atl_txn_new();
  atl_txn_document_take(t, NULL, strdup("{}"), 23);
  cr_assert_eq(atl_store_submit_wait(st, t), ATL_EINVAL);
  atl_store_close(st);
}

/* ---- Versions and reopening --------------------------------------------- */

Test(store, newer_schema_version_is_refused) {
  atl_store_close(open_store());
  cr_assert_eq(sql_int("PRAGMA user_version"), 4);
  sql_int("PRAGMA user_version = 99");
  char dir[128];
  snprintf(dir, sizeof(dir), "%s/data", tmpdir);
  atl_store_options_t opt = {.data_dir = dir, .synchronous = 2};
  atl_store_t *st = (atl_store_t *)1;
  char *err = NULL;
  cr_assert_eq(atl_store_open(&opt, &st, &err), ATL_ESTORE);
  cr_assert_null(st);
  cr_assert_not_null(err);
  cr_assert(strstr(err, "newer") != NULL, "%s", err);
  free(err);
}

static int model_cb(const atl_session_row_t *row, void *user) {
  snprintf(user, ATL_MODEL_NAME_MAX + 1, "%s", row->model);
  return 1;
}

Test(store, a_session_keeps_its_model) {
  atl_store_t *st = open_store();
  char a[33], b[33];
  mkid(a, 1, 1);
  mkid(b, 1, 2);
  atl_txn_t *t = atl_txn_new();
  atl_txn_session_create(t, a, 1, "{}", "claude-haiku-4-5");
  atl_txn_session_create(t, b, 2, "{}", NULL);
  cr_assert_eq(atl_store_submit_wait(st, t), 0);
  atl_store_reader_t *r;
  cr_assert_eq(atl_store_reader_open(st, &r), 0);
  atl_session_row_t row;
  cr_assert_eq(atl_store_session_load(r, a, &row), 0);
  cr_assert_str_eq(row.model, "claude-haiku-4-5");
  free(row.document);
  cr_assert_eq(atl_store_session_load(r, b, &row), 0);
  cr_assert_str_eq(row.model, "", "no model: the provider's default");
  free(row.document);
  char listed[ATL_MODEL_NAME_MAX + 1] = "?";
  cr_assert_eq(atl_store_session_list(r, model_cb, listed), 0);
  cr_assert_str_eq(listed, "", "the newest (b) first, without a model");
  atl_store_reader_close(r);
  atl_store_close(st);
}

/* A database of schema version 1 (before sessions had a model) is
 * migrated in place, its sessions kept. */
Test(store, a_version_1_database_is_migrated) {
  atl_store_t *st = open_store();
  char a[33];
  mkid(a, 2, 1);
  create_session(st, a, 7, "{\"v\":1}");
  atl_store_close(st);
  /* Version 1 kept the document in the sessions row. */
  sql_int("UPDATE sessions SET document = '{\"v\":1}'");
  sql_int("DROP TABLE doc_chunks");
  sql_int("ALTER TABLE sessions DROP COLUMN model");
  sql_int("DROP TABLE queue");
  sql_int("PRAGMA user_version = 1");
  cr_assert_eq(sql_int("SELECT count(*) FROM pragma_table_info('sessions')"
                       " WHERE name = 'model'"),
               0);
  st = open_store();
  cr_assert_eq(sql_int("PRAGMA user_version"), 4);
  cr_assert_eq(sql_int("SELECT count(*) FROM queue"), 0);
  cr_assert_eq(sql_int("SELECT count(*) FROM doc_chunks"), 1);
  cr_assert_eq(sql_int("SELECT length(document) FROM sessions"), 0);
  atl_store_reader_t *r;
  cr_assert_eq(atl_store_reader_open(st, &r), 0);
  atl_session_row_t row;
  cr_assert_eq(atl_store_session_load(r, a, &row), 0);
  cr_assert_str_eq(row.document, "{\"v\":1}");
  cr_assert_str_eq(row.model, "");
  free(row.document);
  atl_store_reader_close(r);
  atl_store_close(st);
}

/* ---- The queue of messages ------------------------------------------- */

struct queue_acc {
  int n;
  int64_t ids[8];
  char texts[8][16];
  char models[8][16];
};

static int queue_cb(const atl_queue_row_t *row, void *user) {
  struct queue_acc *acc = user;
  if (acc->n < 8) {
    acc->ids[acc->n] = row->id;
    snprintf(acc->texts[acc->n], 16, "%s", row->text);
    snprintf(acc->models[acc->n], 16, "%s", row->model ? row->model : "-");
  }
  acc->n++;
  return 0;
}

static struct queue_acc read_queue(atl_store_t *st, const char *id) {
  struct queue_acc acc = {0};
  atl_store_reader_t *r;
  cr_assert_eq(atl_store_reader_open(st, &r), 0);
  cr_assert_eq(atl_store_queue_read(r, id, queue_cb, &acc), 0);
  atl_store_reader_close(r);
  return acc;
}

static int queue_session_cb(const char *id, void *user) {
  struct queue_acc *acc = user;
  if (acc->n < 8)
    snprintf(acc->texts[acc->n], 16, "%.8s", id);
  acc->n++;
  return 0;
}

static int push(atl_store_t *st, const char *id, int64_t qid, const char *text,
                const char *model) {
  atl_txn_t *t = atl_txn_new();
  atl_txn_queue_push(t, id, qid, text, model, 5);
  return atl_store_submit_wait(st, t);
}

/* The queue holds what session.send acknowledged until its run starts:
 * in order, per session; a pop must find its message (a run starts once),
 * and what fails with it is not written; ids are never reused, not even
 * after a restart with the queue empty. */
Test(store, queued_messages) {
  atl_store_t *st = open_store();
  char a[33], b[33], missing[33];
  mkid(a, 1, 1);
  mkid(b, 2, 1);
  mkid(missing, 3, 1);
  create_session(st, b, 1, "{}");
  create_session(st, a, 2, "{}");
  int64_t q[5];
  for (int i = 0; i < 5; i++)
    q[i] = atl_store_queue_id(st);
  cr_assert(q[0] > 0 && q[1] == q[0] + 1 && q[4] == q[0] + 4);
  cr_assert_eq(push(st, b, q[0], "b1", NULL), 0);
  cr_assert_eq(push(st, a, q[1], "a1", NULL), 0);
  cr_assert_eq(push(st, a, q[2], "a2", "m2"), 0);
  cr_assert_eq(push(st, a, q[3], "a3", NULL), 0);
  cr_assert_eq(push(st, missing, q[4], "x", NULL), ATL_ESTORE,
               "no queue without a session");

  struct queue_acc acc = read_queue(st, a);
  cr_assert_eq(acc.n, 3);
  cr_assert_str_eq(acc.texts[0], "a1");
  cr_assert_str_eq(acc.texts[1], "a2");
  cr_assert_str_eq(acc.models[1], "m2");
  cr_assert_str_eq(acc.models[0], "-");
  cr_assert_eq(acc.ids[2], q[3]);
  struct queue_acc sess = {0};
  atl_store_reader_t *r;
  cr_assert_eq(atl_store_reader_open(st, &r), 0);
  cr_assert_eq(atl_store_queue_sessions(r, queue_session_cb, &sess), 0);
  atl_store_reader_close(r);
  cr_assert_eq(sess.n, 2);
  cr_assert_str_eq(sess.texts[0], "00000002", "b's message is the oldest");

  /* A run starts: its message leaves the queue with its run.started. */
  atl_txn_t *t = atl_txn_new();
  atl_txn_queue_pop(t, a, q[1]);
  atl_txn_event_append(t, a, 2, "run.started", 3, NULL);
  cr_assert_eq(atl_store_submit_wait(st, t), 0);
  t = atl_txn_new();
  atl_txn_queue_pop(t, a, q[1]);
  atl_txn_event_append(t, a, 3, "run.started", 3, NULL);
  cr_assert_eq(atl_store_submit_wait(st, t), ATL_ESTORE, "started twice");
  cr_assert_eq(sql_int("SELECT last_seq FROM sessions WHERE id = "
                       "'00000001000000000000000000000001'"),
               2);
  acc = read_queue(st, a);
  cr_assert_eq(acc.n, 2);
  cr_assert_str_eq(acc.texts[0], "a2");

  /* A cancel clears up to the newest it knew of. */
  t = atl_txn_new();
  atl_txn_queue_clear(t, a, q[2]);
  cr_assert_eq(atl_store_submit_wait(st, t), 0);
  acc = read_queue(st, a);
  cr_assert_eq(acc.n, 1);
  cr_assert_str_eq(acc.texts[0], "a3");
  /* A delete takes the session's queue with it, and only its. */
  t = atl_txn_new();
  atl_txn_session_delete(t, a);
  cr_assert_eq(atl_store_submit_wait(st, t), 0);
  cr_assert_eq(read_queue(st, a).n, 0);
  cr_assert_eq(read_queue(st, b).n, 1);
  t = atl_txn_new();
  atl_txn_queue_pop(t, b, q[0]);
  cr_assert_eq(atl_store_submit_wait(st, t), 0);
  cr_assert_eq(sql_int("SELECT count(*) FROM queue"), 0);
  atl_store_close(st);

  st = open_store();
  cr_assert_gt(atl_store_queue_id(st), q[3], "ids go on after a restart");
  atl_store_close(st);
}

static void count_done(int status, void *user) {
  cr_assert_eq(status, 0);
  (*(int *)user)++; /* only the writer thread touches it */
}

Test(store, reopen_keeps_everything) {
  atl_store_t *st = open_store_sync(2);
  char a[33];
  mkid(a, 5, 1);
  create_session(st, a, 7, "{\"v\":0}");
  /* Queued but not waited for: close must commit them. */
  int done = 0;
  for (int i = 1; i <= 300; i++) {
    char doc[32];
    snprintf(doc, sizeof(doc), "{\"v\":%d}", i);
    atl_txn_t *t = atl_txn_new();
    atl_txn_document_set(t, a, doc, 7 + i);
    atl_txn_event_append(t, a, i, "set", 7 + i, doc);
    atl_txn_history_append(t, a, i - 1, "user", doc, 7 + i);
    cr_assert_eq(atl_store_submit(st, t, count_done, &done), 0);
  }
  atl_store_close(st);
  cr_assert_eq(done, 300);

  st = open_store_sync(2);
  atl_store_reader_t *r;
  cr_assert_eq(atl_store_reader_open(st, &r), 0);
  atl_session_row_t row;
  cr_assert_eq(atl_store_session_load(r, a, &row), 0);
  cr_assert_str_eq(row.document, "{\"v\":300}");
  cr_assert_eq(row.created_ms, 7);
  cr_assert_eq(row.updated_ms, 307);
  cr_assert_eq(row.last_seq, 300);
  cr_assert_eq(row.history_len, 300);
  free(row.document);
  atl_store_reader_close(r);
  atl_store_close(st);
}

/* ---- The WAL --------------------------------------------------------------
 */

static int64_t file_size(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 ? (int64_t)sb.st_size : -1;
}

/* About 2.5 times ATL_STORE_WAL_LIMIT_PAGES of WAL, one commit after the
 * other, with no pause in which a checkpoint could catch up by itself:
 * without the writer's restarts the WAL file would grow to about 150 MiB.
 * SQLite never shrinks the file (journal_size_limit is off), so its size
 * is the WAL's peak. */
Test(store, wal_is_checkpointed_in_the_background_and_stays_bounded,
     .timeout = 120) {
  atl_store_t *st = open_store_sync(1);
  char a[33];
  mkid(a, 9, 1);
  create_session(st, a, 1, "{}");
  enum { EVENT_BYTES = 60000, EVENTS = 2600 };
  char *data = malloc(EVENT_BYTES + 3);
  cr_assert_not_null(data);
  data[0] = '"';
  memset(data + 1, 'x', EVENT_BYTES);
  data[EVENT_BYTES + 1] = '"';
  data[EVENT_BYTES + 2] = '\0';
  for (int i = 1; i <= EVENTS; i++) {
    data[1 + i % EVENT_BYTES] = (char)('a' + i % 26); /* no two alike */
    atl_txn_t *t = atl_txn_new();
    atl_txn_event_append(t, a, i, "big", i, data);
    cr_assert_eq(atl_store_submit_wait(st, t), 0, "event %d", i);
  }
  free(data);
  atl_store_stats_t ss;
  atl_store_stats(st, &ss);
  cr_assert_gt(ss.checkpoints, 0, "the background checkpointer never ran");
  cr_assert_gt(ss.writer_checkpoints, 0, "the WAL was never restarted");
  cr_assert_lt(ss.wal_pages, ATL_STORE_WAL_LIMIT_PAGES + 64);
  char wal[160];
  snprintf(wal, sizeof(wal), "%s/data/atelier.db-wal", tmpdir);
  int64_t peak = file_size(wal);
  cr_assert_lt(peak, (int64_t)(ATL_STORE_WAL_LIMIT_PAGES + 64) * 4120,
               "the WAL grew to %" PRId64 " bytes", peak);
  cr_assert_eq(sql_int("SELECT count(*) FROM events WHERE type = 'big'"),
               EVENTS);
  atl_store_close(st);
  /* Closing folds everything back: the WAL is empty, or gone. */
  cr_assert_leq(file_size(wal), 0);
  cr_assert_eq(sql_int("SELECT max(seq) FROM events"), EVENTS);
  cr_assert_eq(sql_int("SELECT last_seq FROM sessions"), EVENTS);
}

/* ---- Concurrency -------------------------------------------------------- */

#define THREADS 8
#define PER_THREAD 500

struct worker {
  atl_store_t *st;
  unsigned n;
  int failures;
};

static void *worker_main(void *arg) {
  struct worker *w = arg;
  char id[33];
  mkid(id, 6, w->n);
  for (int i = 1; i <= PER_THREAD; i++) {
    char doc[64];
    snprintf(doc, sizeof(doc), "{\"worker\":%u,\"v\":%d}", w->n, i);
    atl_txn_t *t = atl_txn_new();
    atl_txn_document_set(t, id, doc, i);
    atl_txn_event_append(t, id, i, "document.set", i, doc);
    if (atl_store_submit_wait(w->st, t) != 0)
      w->failures++;
  }
  return NULL;
}

static void concurrent_submitters(int synchronous) {
  atl_store_t *st = open_store_sync(synchronous);
  struct worker w[THREADS];
  pthread_t th[THREADS];
  for (unsigned i = 0; i < THREADS; i++) {
    char id[33];
    mkid(id, 6, i);
    create_session(st, id, 1, "{}");
    w[i] = (struct worker){st, i, 0};
  }
  atl_store_stats_t before, after;
  atl_store_stats(st, &before);
  uint64_t t0 = atl_mono_ns();
  for (int i = 0; i < THREADS; i++)
    cr_assert_eq(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
  for (int i = 0; i < THREADS; i++) {
    pthread_join(th[i], NULL);
    cr_assert_eq(w[i].failures, 0);
  }
  double secs = (double)(atl_mono_ns() - t0) / 1e9;
  atl_store_stats(st, &after);
  uint64_t txns = after.transactions - before.transactions;
  uint64_t commits = after.commits - before.commits;
  cr_assert_eq(txns, THREADS * PER_THREAD);
  cr_assert_lt(commits, txns, "no grouping: %" PRIu64 " commits", commits);
  fprintf(stderr,
          "store: synchronous=%d, %d threads x %d submit_wait: %.0f txn/s, "
          "%.1f txn per commit\n",
          synchronous, THREADS, PER_THREAD, (double)txns / secs,
          (double)txns / (double)commits);

  atl_store_reader_t *r;
  cr_assert_eq(atl_store_reader_open(st, &r), 0);
  for (unsigned i = 0; i < THREADS; i++) {
    char id[33], doc[64];
    mkid(id, 6, i);
    snprintf(doc, sizeof(doc), "{\"worker\":%u,\"v\":%d}", i, PER_THREAD);
    atl_session_row_t row;
    cr_assert_eq(atl_store_session_load(r, id, &row), 0);
    cr_assert_str_eq(row.document, doc);
    cr_assert_eq(row.last_seq, PER_THREAD);
    free(row.document);
  }
  atl_store_reader_close(r);
  atl_store_close(st);
}

Test(store, concurrent_submitters_normal) {
  concurrent_submitters(1);
}

Test(store, concurrent_submitters_full) {
  concurrent_submitters(2);
}

/* Not an assertion on speed, which depends on the machine: a figure to
 * watch. Submitting without waiting lets the groups grow to max_batch. */
Test(store, async_throughput) {
  atl_store_t *st = open_store_sync(2);
  enum { N = 20000, SESSIONS = 16 };
  for (unsigned i = 0; i < SESSIONS; i++) {
    char id[33];
    mkid(id, 7, i);
    create_session(st, id, 1, "{}");
  }
  int done = 0;
  uint64_t t0 = atl_mono_ns();
  for (int i = 0; i < N; i++) {
    char id[33], doc[64];
    mkid(id, 7, (unsigned)i % SESSIONS);
    snprintf(doc, sizeof(doc), "{\"v\":%d}", i);
    atl_txn_t *t = atl_txn_new();
    atl_txn_document_set(t, id, doc, i);
    atl_txn_event_append(t, id, i / SESSIONS + 1, "document.set", i, doc);
    cr_assert_eq(atl_store_submit(st, t, count_done, &done), 0);
  }
  atl_store_close(st); /* waits for the queue to drain */
  double secs = (double)(atl_mono_ns() - t0) / 1e9;
  cr_assert_eq(done, N);
  fprintf(stderr, "store: synchronous=2, %d async txns: %.0f txn/s\n", N,
          N / secs);
}

/* ---- Crash safety ------------------------------------------------------- */

/* What the child reports after each acknowledged commit: session number
 * and the version of its document (0: just created). */
struct ack {
  uint32_t session;
  uint32_t version;
};

#define VERSIONS 3
#define MAX_SESSIONS 200000

static const char padding[] =
    "................................................"
    "................................................"
    "................................................"
    "................................................";

static void crash_doc(char *buf, size_t len, unsigned s, unsigned v) {
  snprintf(buf, len, "{\"s\":%u,\"v\":%u,\"pad\":\"%.*s\"}", s, v,
           (int)(s % 20 * 10), padding);
}

static void crash_event(char *buf, size_t len, unsigned s, unsigned v) {
  snprintf(buf, len, "{\"s\":%u,\"k\":%u}", s, v);
}

static void write_ack(int fd, unsigned s, unsigned v) {
  struct ack a = {s, v};
  if (write(fd, &a, sizeof(a)) != (ssize_t)sizeof(a))
    _exit(4);
}

/* The child: writes until it is killed, reporting every acknowledgement. */
static void crash_child(int fd, int synchronous, unsigned iter) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  char dir[128];
  snprintf(dir, sizeof(dir), "%s/data", tmpdir);
  atl_store_options_t opt = {.data_dir = dir, .synchronous = synchronous};
  atl_store_t *st;
  if (atl_store_open(&opt, &st, NULL) != 0)
    _exit(2);
  for (unsigned s = 0; s < MAX_SESSIONS; s++) {
    char id[33], doc[512], ev[64];
    mkid(id, iter, s);
    crash_doc(doc, sizeof(doc), s, 0);
    atl_txn_t *t = atl_txn_new();
    atl_txn_session_create(t, id, atl_now_ms(), doc, NULL);
    if (atl_store_submit_wait(st, t) != 0)
      _exit(3);
    write_ack(fd, s, 0);
    for (unsigned v = 1; v <= VERSIONS; v++) {
      crash_doc(doc, sizeof(doc), s, v);
      crash_event(ev, sizeof(ev), s, v);
      t = atl_txn_new();
      atl_txn_document_set(t, id, doc, atl_now_ms());
      atl_txn_event_append(t, id, v, "document.set", atl_now_ms(), ev);
      if (atl_store_submit_wait(st, t) != 0)
        _exit(3);
      write_ack(fd, s, v);
    }
  }
  _exit(0);
}

struct ev_check {
  unsigned s;
  unsigned next;
};

static int crash_event_cb(const atl_event_row_t *row, void *user) {
  struct ev_check *c = user;
  char ev[64];
  c->next++;
  crash_event(ev, sizeof(ev), c->s, c->next);
  cr_assert_eq(row->seq, c->next);
  cr_assert_str_eq(row->data, ev);
  return 0;
}

/* Reads acknowledgements from fd into acked (the highest version per
 * session; -1: none) until the deadline (0: end of file). Returns the
 * number of records read. */
static int read_acks(int fd, int *acked, uint64_t deadline_ns) {
  int n = 0;
  for (;;) {
    int timeout = -1;
    if (deadline_ns != 0) {
      uint64_t now = atl_mono_ns();
      if (now >= deadline_ns)
        return n;
      timeout = (int)((deadline_ns - now) / 1000000) + 1;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, timeout) == 0)
      continue;
    struct ack buf[256];
    ssize_t got = read(fd, buf, sizeof(buf));
    if (got == 0)
      return n;
    cr_assert_gt(got, 0);
    /* Each record is one write(2) of less than PIPE_BUF bytes, which the
     * pipe keeps whole, so reads return whole records. */
    cr_assert_eq(got % (ssize_t)sizeof(struct ack), 0);
    for (ssize_t i = 0; i < got / (ssize_t)sizeof(struct ack); i++) {
      cr_assert_lt(buf[i].session, MAX_SESSIONS);
      if ((int)buf[i].version > acked[buf[i].session])
        acked[buf[i].session] = (int)buf[i].version;
      n++;
    }
  }
}

static void verify_acked(unsigned iter, const int *acked) {
  char path[128];
  db_path(path, sizeof(path));
  sqlite3 *db;
  cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL),
               SQLITE_OK);
  sqlite3_stmt *s;
  cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, NULL),
               SQLITE_OK);
  cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
  cr_assert_str_eq((const char *)sqlite3_column_text(s, 0), "ok");
  sqlite3_finalize(s);
  sqlite3_close(db);

  atl_store_t *st = open_store_sync(2);
  atl_store_reader_t *r;
  cr_assert_eq(atl_store_reader_open(st, &r), 0);
  for (unsigned n = 0; n < MAX_SESSIONS && acked[n] >= 0; n++) {
    char id[33], doc[512];
    mkid(id, iter, n);
    atl_session_row_t row;
    cr_assert_eq(atl_store_session_load(r, id, &row), 0,
                 "iteration %u: acknowledged session %u is missing", iter, n);
    unsigned sv, v;
    cr_assert_eq(sscanf(row.document, "{\"s\":%u,\"v\":%u", &sv, &v), 2);
    /* A commit can land without its acknowledgement getting out before
     * the kill, so the store may be ahead of what the child reported,
     * never behind. */
    cr_assert_geq((int)v, acked[n], "session %u: version %u < acked %d", n, v,
                  acked[n]);
    crash_doc(doc, sizeof(doc), n, v);
    cr_assert_str_eq(row.document, doc);
    cr_assert_eq(row.last_seq, v, "document and event were not atomic");
    free(row.document);
    struct ev_check c = {n, 0};
    cr_assert_eq(atl_store_events_read(r, id, 0, 0, crash_event_cb, &c), 0);
    cr_assert_eq(c.next, v);
  }
  atl_store_reader_close(r);
  atl_store_close(st);
}

static void crash_test(int synchronous) {
  srand((unsigned)atl_mono_ns() ^ (unsigned)getpid());
  int *acked = malloc(MAX_SESSIONS * sizeof(*acked));
  cr_assert_not_null(acked);
  for (unsigned iter = 1; iter <= 5; iter++) {
    for (int i = 0; i < MAX_SESSIONS; i++)
      acked[i] = -1;
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      crash_child(fds[1], synchronous, iter);
    }
    close(fds[1]);
    /* The clock starts at the first acknowledgement, so that the kill
     * always lands while commits are flowing, however slowly the child
     * starts (under valgrind, say). */
    int n = 0;
    uint64_t start = atl_mono_ns();
    while (n == 0 && atl_mono_ns() - start < 30000000000ULL)
      n += read_acks(fds[0], acked, atl_mono_ns() + 10000000);
    cr_assert_gt(n, 0, "the child acknowledged nothing");
    int ms = 50 + rand() % 251;
    n += read_acks(fds[0], acked, atl_mono_ns() + (uint64_t)ms * 1000000);
    cr_assert_eq(kill(pid, SIGKILL), 0);
    int wstatus;
    cr_assert_eq(waitpid(pid, &wstatus, 0), pid);
    cr_assert(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL,
              "the child exited early (status %d)", wstatus);
    n += read_acks(fds[0], acked, 0);
    close(fds[0]);
    fprintf(stderr,
            "store: synchronous=%d, kill %u after %d ms: %d acknowledged "
            "commits\n",
            synchronous, iter, ms, n);
    verify_acked(iter, acked);
  }
  free(acked);
}

Test(store, crash_synchronous_normal, .timeout = 300) {
  crash_test(1);
}

Test(store, crash_synchronous_full, .timeout = 300) {
  crash_test(2);
}
