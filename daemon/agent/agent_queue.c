/* The agent's queue (agent.h): the messages session.send acknowledged
 * whose run has not started yet.
 *
 * A message is acknowledged only once it is in the store (the queue
 * table), so that a daemon killed while it waits loses nothing: the next
 * atelierd finds it there and runs it (atl_agent_restore). Its run's
 * start removes it from the store in the transaction that commits
 * run.started and the user's message to the history, so a message is
 * either waiting or started, never both, and runs exactly once. A cancel
 * drops the waiting messages from the store before it is answered, for
 * the same reason.
 *
 * In memory the queue mirrors the store, in the order the messages were
 * sent. An entry whose commit has not come back yet is not acknowledged
 * and may not start; commits of one session come back in the order they
 * were submitted, so the head is always the first to be able to.
 */
#include "atl-build.h"

#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "agent_int.h"
#include "log.h"

static void entry_free(pending_t *m) {
  free(m->text);
  free(m->model);
  free(m);
}

static void entry_append(atl_agent_t *a, pending_t *m) {
  if (a->q_tail)
    a->q_tail->next = m;
  else
    a->q_head = m;
  a->q_tail = m;
  a->queued++;
}

static void entry_unlink(atl_agent_t *a, pending_t *m) {
  pending_t **pp = &a->q_head, *prev = NULL;
  while (*pp && *pp != m) {
    prev = *pp;
    pp = &(*pp)->next;
  }
  if (*pp == NULL)
    return;
  *pp = m->next;
  if (a->q_tail == m)
    a->q_tail = prev;
  m->next = NULL;
  a->queued--;
}

/* Whether the head may start now. Shutting down, it stays in the store
 * for the next atelierd; a deleted session's messages went with it. */
static int can_start(const atl_agent_t *a) {
  return !a->active && a->q_head != NULL && a->q_head->committed &&
         !a->s->deleted && !a->d->shutting_down;
}

void atl__agent_run_next(atl_agent_t *a) {
  if (!can_start(a))
    return;
  pending_t *m = a->q_head;
  entry_unlink(a, m);
  char *text = m->text, *model = m->model;
  int64_t id = m->id;
  free(m);
  atl__agent_run_start(a, text, model, id);
}

/* Starts the head's run if the agent is idle: a run (and the load of the
 * history before it) pins the session until it ends. */
static void kick(atl_agent_t *a) {
  if (a->loading || !can_start(a))
    return;
  atl_session_t *s = a->s;
  atl_session_ref(s);
  if (a->history == NULL && s->history_len == 0)
    a->history = json_object_new_array();
  if (a->history == NULL) {
    if (atl__agent_load(a) != 0) {
      atl_log_kv(ATL_LOG_ERROR, "cannot load the history to run a message",
                 "session", s->id, NULL);
      atl_session_unref(a->d, s);
    }
    return;
  }
  atl__agent_run_next(a);
  if (!a->active)
    atl_session_unref(a->d, s);
}

/* The commit of a sent message came back: it is acknowledged (or not),
 * and may start. */
static void pushed(atl_daemon_t *d, int status, void *arg) {
  pending_t *m = arg;
  atl_agent_t *a = m->a;
  atl_agent_sent_cb sent = m->sent;
  void *user = m->user;
  int queued = m->queued;
  m->sent = NULL;
  if (m->dropped) {
    entry_free(m); /* a cancel took it out of the queue meanwhile */
  } else if (status != 0) {
    atl_log_kv(ATL_LOG_ERROR, "a message could not be committed", "session",
               a->s->id, "error", atl_strerror(status), NULL);
    entry_unlink(a, m);
    entry_free(m);
  } else {
    m->committed = 1;
  }
  if (sent != NULL)
    sent(d, status, queued, user);
  kick(a);
}

int atl_agent_send(atl_daemon_t *d, atl_session_t *s, const char *text,
                   const char *model, atl_agent_sent_cb sent, void *user) {
  atl_agent_t *a = atl__agent_of(d, s);
  if (a == NULL)
    return ATL_ENOMEM;
  int busy = a->active || a->loading || a->q_head != NULL;
  if (busy && a->queued >= d->cfg->queue_max)
    return ATL_EBUSY;
  pending_t *m = calloc(1, sizeof(*m));
  if (m == NULL)
    return ATL_ENOMEM;
  m->a = a;
  m->text = strdup(text);
  m->model = model ? strdup(model) : NULL;
  m->id = atl_store_queue_id(d->store);
  m->ts_ms = atl_now_ms();
  m->queued = busy;
  m->sent = sent;
  m->user = user;
  /* The store and the events get the message as the history will keep
   * it: a "/tool {json}" for a tool whose arguments are secret is written
   * without them. So it runs with them only in this atelierd's life: after
   * a restart it runs as written, "/tool (redacted)", and fails with a
   * message the user can act on, rather than having put the secret on
   * disk. */
  char *shown = atl_agent_redacted_text(d, text);
  const char *kept = shown ? shown : text;
  atl_txn_t *t = atl_txn_new();
  atl_txn_queue_push(t, s->id, m->id, kept, model, m->ts_ms);
  /* A message that waits says so in the events, so that every viewer
   * (and a reload) shows it waiting; one that starts at once is shown by
   * its run.started. */
  char *data = NULL;
  if (busy) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "id", json_object_new_int64(m->id));
    json_object_object_add(o, "text", json_object_new_string(kept));
    if (model != NULL)
      json_object_object_add(o, "model", json_object_new_string(model));
    data = atl_provider_json_text(o);
    json_object_put(o);
  }
  free(shown);
  if (m->text == NULL || (model != NULL && m->model == NULL) ||
      (busy && data == NULL)) {
    atl_txn_free(t);
    free(data);
    entry_free(m);
    return ATL_ENOMEM;
  }
  entry_append(a, m);
  int rc = atl_session_commit(d, s, t, busy ? "message.queued" : NULL, data,
                              pushed, m);
  free(data);
  if (rc != 0) {
    entry_unlink(a, m);
    entry_free(m);
  }
  return rc;
}

void atl_agent_restore(atl_daemon_t *d, atl_session_t *s, json_object *rows) {
  atl_agent_t *a = atl__agent_of(d, s);
  if (a == NULL)
    return;
  size_t n = json_object_array_length(rows);
  for (size_t i = 0; i < n; i++) {
    json_object *row = json_object_array_get_idx(rows, i);
    const char *model = atl_provider_str(row, "model");
    pending_t *m = calloc(1, sizeof(*m));
    if (m == NULL)
      break;
    m->a = a;
    m->text = strdup(atl_provider_str(row, "text"));
    m->model = model ? strdup(model) : NULL;
    m->id = json_object_get_int64(json_object_object_get(row, "id"));
    m->ts_ms = json_object_get_int64(json_object_object_get(row, "ts_ms"));
    m->committed = 1;
    entry_append(a, m);
  }
  char count[24];
  snprintf(count, sizeof(count), "%zu", n);
  atl_log_kv(ATL_LOG_INFO, "messages queued before the restart will run",
             "session", s->id, "count", count, NULL);
  kick(a);
}

typedef struct {
  atl_agent_cancel_cb cb;
  void *user;
} cancel_t;

static void cleared(atl_daemon_t *d, int status, void *arg) {
  cancel_t *c = arg;
  c->cb(d, status, 1, c->user);
  free(c);
}

void atl_agent_cancel(atl_daemon_t *d, atl_session_t *s, atl_agent_cancel_cb cb,
                      void *user) {
  atl_agent_t *a = s->agent;
  int active = a != NULL && a->active;
  if (active) {
    a->cancel = 1;
    /* A render in flight would hold the cancel up for seconds: it is asked
     * to stop (its workers stop within 100 ms). Other calls finish. */
    atl_toolcall_cancel_long(s);
  }
  if (a == NULL || a->q_head == NULL) {
    cb(d, 0, active, user);
    return;
  }
  /* Stop means stop: the messages waiting behind the run go too, from the
   * store before the answer, so that a restart cannot run them after all.
   * One whose own commit is still on its way is cleared with the others
   * (the clear comes after it in the store's order) and freed when that
   * commit comes back. */
  json_object *data = json_object_new_object(), *ids = json_object_new_array();
  int64_t upto = 0;
  while (a->q_head != NULL) {
    pending_t *m = a->q_head;
    entry_unlink(a, m);
    json_object_array_add(ids, json_object_new_int64(m->id));
    if (m->id > upto)
      upto = m->id;
    if (m->committed)
      entry_free(m);
    else
      m->dropped = 1;
  }
  json_object_object_add(data, "ids", ids);
  json_object_object_add(data, "reason", json_object_new_string("cancelled"));
  char *text = atl_provider_json_text(data);
  json_object_put(data);
  atl_txn_t *t = atl_txn_new();
  atl_txn_queue_clear(t, s->id, upto);
  cancel_t *c = calloc(1, sizeof(*c));
  int rc = ATL_ENOMEM;
  if (c != NULL && text != NULL) {
    c->cb = cb;
    c->user = user;
    rc = atl_session_commit(d, s, t, "queue.cleared", text, cleared, c);
  } else {
    atl_txn_free(t);
  }
  free(text);
  if (rc != 0) {
    free(c);
    cb(d, rc, active, user);
  }
}

void atl__agent_queue_free(atl_agent_t *a) {
  while (a->q_head != NULL) {
    pending_t *m = a->q_head;
    entry_unlink(a, m);
    entry_free(m);
  }
}
