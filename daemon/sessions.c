/* Sessions in memory: a hash of the sessions in use, loaded from the store
 * on demand and evicted (least recently used first) once more than
 * store.session_cache of them are idle, so that memory does not grow with
 * the number of sessions in the store.
 *
 * Every mutation of a session goes through the store first; the in-memory
 * copy changes only once the commit is done, so memory never shows
 * anything the store does not hold.
 */
#include "atl-build.h"

#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "preview.h"
#include "agent/agent.h"
#include "log.h"
#include "stats.h"
#include "trace.h"

struct atl_waiter_s {
  atl_waiter_t *next;
  atl_daemon_t *d;
  atl_session_t *s;
  uv_timer_t timer;
  atl_waiter_cb cb;
  void *user;
  int fired;
};

static size_t bucket_of(const atl_daemon_t *d, const char *id) {
  /* Ids are random: their first hex digits are a fine hash. */
  size_t h = 0;
  for (int i = 0; i < 8; i++)
    h = h * 16 + (size_t)(id[i] <= '9' ? id[i] - '0' : id[i] - 'a' + 10);
  return h % d->n_buckets;
}

static atl_session_t *lookup(atl_daemon_t *d, const char *id) {
  for (atl_session_t *s = d->buckets[bucket_of(d, id)]; s; s = s->hnext)
    if (strcmp(s->id, id) == 0)
      return s;
  return NULL;
}

atl_session_t *atl_session_loaded(atl_daemon_t *d, const char *id) {
  atl_session_t *s = lookup(d, id);
  return s != NULL && !s->deleted ? s : NULL;
}

static void lru_unlink(atl_daemon_t *d, atl_session_t *s) {
  if (s->lru_prev)
    s->lru_prev->lru_next = s->lru_next;
  else if (d->lru_head == s)
    d->lru_head = s->lru_next;
  if (s->lru_next)
    s->lru_next->lru_prev = s->lru_prev;
  else if (d->lru_tail == s)
    d->lru_tail = s->lru_prev;
  s->lru_prev = s->lru_next = NULL;
}

static void lru_touch(atl_daemon_t *d, atl_session_t *s) {
  lru_unlink(d, s);
  s->lru_next = d->lru_head;
  if (d->lru_head)
    d->lru_head->lru_prev = s;
  d->lru_head = s;
  if (d->lru_tail == NULL)
    d->lru_tail = s;
}

static atl_session_t *session_new(void) {
  atl_session_t *s = calloc(1, sizeof(*s));
  if (s != NULL)
    pthread_mutex_init(&s->seq_mu, NULL);
  return s;
}

static void session_free(atl_session_t *s) {
  atl_agent_session_free(s);
  if (s->doc)
    json_object_put(s->doc);
  pthread_mutex_destroy(&s->seq_mu);
  free(s);
}

int atl_session_submit(atl_daemon_t *d, atl_session_t *s, atl_txn_t *t,
                       const char *const *pre_types,
                       const char *const *pre_data, size_t n_pre,
                       const char *type, int64_t ts_ms, const char *data,
                       atl_store_done_cb cb, void *user, int64_t *seq_out) {
  /* Assigning the number and queueing the transaction under one lock keeps
   * the store's queue in sequence order for each session. Without it, two
   * threads could queue seq 6 before seq 5, and a reader that saw 6 would
   * resume after it and never see 5. */
  pthread_mutex_lock(&s->seq_mu);
  int64_t first = s->last_seq;
  for (size_t i = 0; i < n_pre; i++)
    atl_txn_event_append(t, s->id, ++s->last_seq, pre_types[i], ts_ms,
                         pre_data[i]);
  int64_t seq = ++s->last_seq;
  atl_txn_event_append(t, s->id, seq, type, ts_ms, data);
  /* The caller learns its number before the callback can run. */
  *seq_out = seq;
  int rc = atl_store_submit(d->store, t, cb, user);
  if (rc != 0)
    s->last_seq = first;
  pthread_mutex_unlock(&s->seq_mu);
  if (rc == 0) {
    atomic_fetch_add_explicit(&atl_stats.events_emitted, n_pre + 1,
                              memory_order_relaxed);
    for (size_t i = 0; i <= n_pre; i++) {
      const char *ty = i < n_pre ? pre_types[i] : type;
      const char *da = i < n_pre ? pre_data[i] : data;
      atl_tw_t w;
      if (!atl_tw_begin(&w, ATL_TR_EVENT, s->id, ty))
        break;
      atl_tw_int(&w, "seq", first + 1 + (int64_t)i);
      atl_tw_str(&w, "type", ty);
      atl_tw_int(&w, "bytes", da ? (int64_t)strlen(da) : 0);
      atl_tw_end(&w);
    }
  }
  return rc;
}

static void session_remove(atl_daemon_t *d, atl_session_t *s) {
  atl_session_t **pp = &d->buckets[bucket_of(d, s->id)];
  while (*pp && *pp != s)
    pp = &(*pp)->hnext;
  if (*pp)
    *pp = s->hnext;
  lru_unlink(d, s);
  d->n_sessions--;
  session_free(s);
}

static void session_insert(atl_daemon_t *d, atl_session_t *s) {
  size_t b = bucket_of(d, s->id);
  s->hnext = d->buckets[b];
  d->buckets[b] = s;
  d->n_sessions++;
  lru_touch(d, s);
}

/* Drops idle sessions from the tail while over the cache size. */
static void evict(atl_daemon_t *d) {
  atl_session_t *s = d->lru_tail;
  while (s && d->n_sessions > d->cfg->session_cache) {
    atl_session_t *prev = s->lru_prev;
    if (s->refs == 0 && !s->busy && s->waiters == NULL)
      session_remove(d, s);
    s = prev;
  }
}

void atl_session_ref(atl_session_t *s) {
  s->refs++;
}

void atl_session_unref(atl_daemon_t *d, atl_session_t *s) {
  if (--s->refs > 0)
    return;
  if ((s->deleted || s->stale) && !s->busy && s->waiters == NULL)
    session_remove(d, s);
  else
    evict(d);
}

size_t atl_sessions_loaded(atl_daemon_t *d) {
  return d->n_sessions;
}

static void notify_open(atl_daemon_t *d, const char *id) {
  for (size_t i = 0; i < d->registry.n_plugins; i++) {
    atl_plugin_entry_t *p = d->registry.plugins[i];
    if (p->desc.session_open)
      p->desc.session_open(p->state, id);
  }
}

/* ---- loading ---- */

typedef struct {
  uv_work_t work;
  atl_daemon_t *d;
  char id[ATL_SESSION_ID_LEN + 1];
  atl_session_row_t row;
  json_object *queue; /* its queued messages, as atl_agent_restore takes */
  int status;
  atl_session_cb cb;
  void *user;
} load_req_t;

static int queue_row(const atl_queue_row_t *row, void *user) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "id", json_object_new_int64(row->id));
  json_object_object_add(o, "text", json_object_new_string(row->text));
  if (row->model != NULL)
    json_object_object_add(o, "model", json_object_new_string(row->model));
  json_object_object_add(o, "ts_ms", json_object_new_int64(row->ts_ms));
  json_object_array_add(user, o);
  return 0;
}

static void load_work(uv_work_t *w) {
  load_req_t *lr = w->data;
  atl_store_reader_t *r = atl_daemon_reader_take(lr->d);
  if (r == NULL) {
    lr->status = ATL_ESTORE;
    return;
  }
  lr->status = atl_store_session_load(r, lr->id, &lr->row);
  /* The messages an earlier atelierd acknowledged and never started: the
   * session's agent runs them once it is loaded. Read in the same load so
   * that no message sent in this process can be among them (it cannot
   * reach a session that is not loaded yet). */
  lr->queue = json_object_new_array();
  if (lr->status == 0 &&
      atl_store_queue_read(r, lr->id, queue_row, lr->queue) != 0)
    lr->status = ATL_ESTORE;
  atl_daemon_reader_give(lr->d, r);
}

static void load_done(uv_work_t *w, int uvstatus) {
  load_req_t *lr = w->data;
  atl_daemon_t *d = lr->d;
  d->work_in_flight--;
  atl_session_t *s = lookup(d, lr->id);
  if (s == NULL && lr->status == 0 && uvstatus == 0) {
    /* Two loads of one id can race; the first to finish wins. */
    json_object *doc = json_tokener_parse(lr->row.document);
    if (doc == NULL || !json_object_is_type(doc, json_type_object)) {
      if (doc)
        json_object_put(doc);
      atl_log_kv(ATL_LOG_ERROR, "stored document is not a JSON object",
                 "session", lr->id, NULL);
      lr->status = ATL_ESTORE;
    } else {
      s = session_new();
      if (s == NULL) {
        json_object_put(doc);
        lr->status = ATL_ENOMEM;
      } else {
        memcpy(s->id, lr->id, sizeof(s->id));
        s->doc = doc;
        s->created_ms = lr->row.created_ms;
        s->updated_ms = lr->row.updated_ms;
        s->last_seq = s->committed_seq = lr->row.last_seq;
        /* Which event changed the document last is not stored: none
         * after the newest there is, which is all a preview needs. */
        s->doc_rev = lr->row.last_seq;
        s->history_len = lr->row.history_len;
        memcpy(s->model, lr->row.model, sizeof(s->model));
        session_insert(d, s);
        notify_open(d, s->id);
        /* A session comes from the store only when no run of this
         * process holds it, so a run its log shows as begun and never
         * ended died with an earlier atelierd. Say so now, not at the
         * next message: a page showing the session must not wait for a
         * run that will never end. (The agent answers the calls it left,
         * if any, when it next loads the history.) */
        if (lr->row.run_open)
          atl_session_emit(d, s, "run.interrupted",
                           "{\"message\":\"atelierd stopped during this run; "
                           "what it did so far is kept. Send a message to "
                           "continue.\"}",
                           NULL, NULL);
        /* After the interrupted run's end, the messages that waited for
         * it, in order. */
        if (json_object_array_length(lr->queue) > 0)
          atl_agent_restore(d, s, lr->queue);
      }
    }
  }
  json_object_put(lr->queue);
  free(lr->row.document);
  if (s != NULL) {
    atl_session_ref(s);
    lr->cb(d, s, 0, lr->user);
    atl_session_unref(d, s);
  } else {
    lr->cb(d, NULL, lr->status ? lr->status : ATL_ESTORE, lr->user);
  }
  free(lr);
}

void atl_session_get(atl_daemon_t *d, const char *id, atl_session_cb cb,
                     void *user) {
  atl_session_t *s = lookup(d, id);
  if (s != NULL && s->stale && s->refs == 0 && !s->busy && !s->waiters) {
    session_remove(d, s);
    s = NULL;
  }
  if (s != NULL) {
    if (s->deleted) {
      cb(d, NULL, ATL_ENOENT, user);
      return;
    }
    lru_touch(d, s);
    atl_session_ref(s);
    cb(d, s, 0, user);
    atl_session_unref(d, s);
    return;
  }
  load_req_t *lr = calloc(1, sizeof(*lr));
  if (lr == NULL) {
    cb(d, NULL, ATL_ENOMEM, user);
    return;
  }
  lr->work.data = lr;
  lr->d = d;
  snprintf(lr->id, sizeof(lr->id), "%s", id);
  lr->cb = cb;
  lr->user = user;
  d->work_in_flight++;
  uv_queue_work(d->loop, &lr->work, load_work, load_done);
}

/* ---- committing ---- */

typedef struct {
  atl_daemon_t *d;
  atl_session_t *s;
  int status;
  int64_t seq;
  atl_session_cb cb;
  void *user;
  atl_post_fn done;
  atl_commit_cb committed; /* instead of done: told the status */
  void *arg;
  int kind; /* 0: create, 1: delete, 2: emit */
} commit_t;

static void commit_loop(void *arg);

static void commit_cb(int status, void *user) {
  commit_t *c = user;
  c->status = status;
  atl_daemon_post(c->d, commit_loop, c);
}

static void commit_loop(void *arg) {
  commit_t *c = arg;
  atl_daemon_t *d = c->d;
  atl_session_t *s = c->s;
  d->work_in_flight--;
  switch (c->kind) {
  case 0:
    if (c->status == 0) {
      session_insert(d, s);
      s->committed_seq = s->last_seq;
      notify_open(d, s->id);
      atl_session_ref(s);
      c->cb(d, s, 0, c->user);
      atl_session_unref(d, s);
    } else {
      session_free(s);
      c->cb(d, NULL, c->status, c->user);
    }
    break;
  case 1:
    if (c->status == 0) {
      s->deleted = 1;
      for (size_t i = 0; i < d->registry.n_plugins; i++) {
        atl_plugin_entry_t *p = d->registry.plugins[i];
        if (p->desc.session_close)
          p->desc.session_close(p->state, s->id);
      }
      atl_previews_forget(d, s->id);
      /* Wake long polls so that they answer now rather than at their
       * time-out. */
      atl_session_committed(d, s, s->committed_seq);
    }
    c->cb(d, c->status == 0 ? s : NULL, c->status, c->user);
    atl_session_unref(d, s);
    break;
  default:
    if (c->status == 0)
      atl_session_committed(d, s, c->seq);
    else
      s->stale = 1;
    if (c->done)
      c->done(c->arg);
    if (c->committed)
      c->committed(d, c->status, c->arg);
    atl_session_unref(d, s);
    break;
  }
  free(c);
}

void atl_session_create(atl_daemon_t *d, const char *model, atl_session_cb cb,
                        void *user) {
  atl_session_t *s = session_new();
  commit_t *c = calloc(1, sizeof(*c));
  atl_txn_t *t = atl_txn_new();
  if (s == NULL || c == NULL || t == NULL || atl_random_id(s->id) != 0) {
    if (s)
      session_free(s);
    free(c);
    atl_txn_free(t);
    cb(d, NULL, ATL_ENOMEM, user);
    return;
  }
  s->doc = json_object_new_object();
  s->created_ms = s->updated_ms = atl_now_ms();
  s->last_seq = 1;
  /* The caller checked the name (atl_model_name_error): no escaping is
   * needed in the event's JSON. */
  char data[ATL_MODEL_NAME_MAX + 16] = "{}";
  if (model != NULL && model[0] != '\0') {
    snprintf(s->model, sizeof(s->model), "%s", model);
    snprintf(data, sizeof(data), "{\"model\":\"%s\"}", s->model);
  }
  atl_txn_session_create(t, s->id, s->created_ms, "{}",
                         s->model[0] ? s->model : NULL);
  atl_txn_event_append(t, s->id, 1, "session.created", s->created_ms, data);
  *c = (commit_t){.d = d, .s = s, .cb = cb, .user = user, .kind = 0};
  d->work_in_flight++;
  atl_store_submit(d->store, t, commit_cb, c);
  atomic_fetch_add_explicit(&atl_stats.events_emitted, 1, memory_order_relaxed);
  if (atl_trace_wants(ATL_TR_EVENT)) {
    json_object *f = json_object_new_object();
    json_object_object_add(f, "seq", json_object_new_int64(1));
    json_object_object_add(f, "type",
                           json_object_new_string("session.created"));
    json_object_object_add(f, "bytes",
                           json_object_new_int64((int64_t)strlen(data)));
    atl_trace_emit(ATL_TR_EVENT, s->id, "session.created", f);
  }
}

void atl_session_delete(atl_daemon_t *d, atl_session_t *s, atl_session_cb cb,
                        void *user) {
  commit_t *c = calloc(1, sizeof(*c));
  atl_txn_t *t = atl_txn_new();
  if (c == NULL || t == NULL) {
    free(c);
    atl_txn_free(t);
    cb(d, NULL, ATL_ENOMEM, user);
    return;
  }
  atl_txn_session_delete(t, s->id);
  atl_session_ref(s);
  *c = (commit_t){.d = d, .s = s, .cb = cb, .user = user, .kind = 1};
  d->work_in_flight++;
  atl_store_submit(d->store, t, commit_cb, c);
}

int atl_session_emit(atl_daemon_t *d, atl_session_t *s, const char *type,
                     const char *data_json, atl_post_fn done, void *arg) {
  return atl_session_emit_txn(d, s, atl_txn_new(), type, data_json, done, arg);
}

/* Submits t (taken) with an event of type (none for NULL); done or
 * committed (one of them, or neither) runs on the loop afterwards. */
static int submit_commit(atl_daemon_t *d, atl_session_t *s, atl_txn_t *t,
                         const char *type, const char *data_json,
                         atl_post_fn done, atl_commit_cb committed, void *arg) {
  commit_t *c = calloc(1, sizeof(*c));
  if (c == NULL || t == NULL) {
    free(c);
    atl_txn_free(t);
    return ATL_ENOMEM;
  }
  atl_session_ref(s);
  *c = (commit_t){.d = d,
                  .s = s,
                  .done = done,
                  .committed = committed,
                  .arg = arg,
                  .kind = 2};
  d->work_in_flight++;
  int rc = type != NULL
               ? atl_session_submit(d, s, t, NULL, NULL, 0, type, atl_now_ms(),
                                    data_json, commit_cb, c, &c->seq)
               : atl_store_submit(d->store, t, commit_cb, c);
  if (rc != 0) {
    d->work_in_flight--;
    atl_session_unref(d, s);
    free(c);
  }
  return rc;
}

int atl_session_emit_txn(atl_daemon_t *d, atl_session_t *s, atl_txn_t *t,
                         const char *type, const char *data_json,
                         atl_post_fn done, void *arg) {
  return submit_commit(d, s, t, type, data_json, done, NULL, arg);
}

int atl_session_commit(atl_daemon_t *d, atl_session_t *s, atl_txn_t *t,
                       const char *type, const char *data_json,
                       atl_commit_cb done, void *arg) {
  return submit_commit(d, s, t, type, data_json, NULL, done, arg);
}

/* ---- resuming at start ---- */

typedef struct {
  uv_work_t work;
  atl_daemon_t *d;
  json_object *ids;
} resume_t;

static int resume_row(const char *id, void *user) {
  json_object_array_add(user, json_object_new_string(id));
  return 0;
}

static void resume_work(uv_work_t *w) {
  resume_t *rs = w->data;
  atl_store_reader_t *r = atl_daemon_reader_take(rs->d);
  if (r == NULL || atl_store_queue_sessions(r, resume_row, rs->ids) != 0)
    atl_log_kv(ATL_LOG_ERROR, "cannot read the queued messages", NULL);
  if (r != NULL)
    atl_daemon_reader_give(rs->d, r);
}

/* Loading the session is enough: its load hands the queue to the agent. */
static void resumed(atl_daemon_t *d, atl_session_t *s, int status, void *user) {
  (void)d;
  (void)s;
  if (status != 0)
    atl_log_kv(ATL_LOG_ERROR, "cannot load a session with queued messages",
               "session", (const char *)user, "error", atl_strerror(status),
               NULL);
  free(user);
}

static void resume_done(uv_work_t *w, int uvstatus) {
  resume_t *rs = w->data;
  atl_daemon_t *d = rs->d;
  d->work_in_flight--;
  size_t n = uvstatus == 0 ? json_object_array_length(rs->ids) : 0;
  if (n > 0 && !d->shutting_down) {
    char count[24];
    snprintf(count, sizeof(count), "%zu", n);
    atl_log_kv(ATL_LOG_INFO, "running the messages queued before the restart",
               "sessions", count, NULL);
    for (size_t i = 0; i < n; i++) {
      const char *id =
          json_object_get_string(json_object_array_get_idx(rs->ids, i));
      char *copy = atl_is_session_id(id) ? strdup(id) : NULL;
      if (copy != NULL)
        atl_session_get(d, copy, resumed, copy);
    }
  }
  json_object_put(rs->ids);
  free(rs);
}

void atl_sessions_resume(atl_daemon_t *d) {
  resume_t *rs = calloc(1, sizeof(*rs));
  if (rs == NULL)
    return;
  rs->work.data = rs;
  rs->d = d;
  rs->ids = json_object_new_array();
  d->work_in_flight++;
  uv_queue_work(d->loop, &rs->work, resume_work, resume_done);
}

/* ---- waiting for events ---- */

static void waiter_closed(uv_handle_t *h) {
  free(h->data);
}

static void waiter_fire(atl_waiter_t *w) {
  if (w->fired)
    return;
  w->fired = 1;
  atl_session_t *s = w->s;
  atl_waiter_t **pp = &s->waiters;
  while (*pp && *pp != w)
    pp = &(*pp)->next;
  if (*pp)
    *pp = w->next;
  uv_timer_stop(&w->timer);
  w->cb(w->d, s, w->user);
  atl_session_unref(w->d, s);
  uv_close((uv_handle_t *)&w->timer, waiter_closed);
}

static void waiter_timeout(uv_timer_t *t) {
  waiter_fire(t->data);
}

int atl_session_wait(atl_daemon_t *d, atl_session_t *s, uint32_t wait_ms,
                     atl_waiter_cb cb, void *user) {
  atl_waiter_t *w = calloc(1, sizeof(*w));
  if (w == NULL)
    return ATL_ENOMEM;
  w->d = d;
  w->s = s;
  w->cb = cb;
  w->user = user;
  uv_timer_init(d->loop, &w->timer);
  w->timer.data = w;
  atl_session_ref(s);
  w->next = s->waiters;
  s->waiters = w;
  uv_timer_start(&w->timer, waiter_timeout, wait_ms, 0);
  return 0;
}

void atl_session_committed(atl_daemon_t *d, atl_session_t *s, int64_t seq) {
  (void)d;
  if (seq > s->committed_seq)
    s->committed_seq = seq;
  while (s->waiters)
    waiter_fire(s->waiters);
}

void atl_sessions_wake_all(atl_daemon_t *d) {
  for (size_t b = 0; b < d->n_buckets; b++)
    for (atl_session_t *s = d->buckets[b]; s != NULL; s = s->hnext)
      while (s->waiters)
        waiter_fire(s->waiters);
}

void atl_sessions_free_all(atl_daemon_t *d) {
  for (size_t b = 0; b < d->n_buckets; b++) {
    while (d->buckets[b]) {
      atl_session_t *s = d->buckets[b];
      d->buckets[b] = s->hnext;
      session_free(s);
    }
  }
  d->n_sessions = 0;
  d->lru_head = d->lru_tail = NULL;
}
