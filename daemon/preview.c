/* Live previews; see preview.h.
 *
 * One slot per session and previewing plugin holds the newest snapshot
 * waiting to be previewed, the preview in flight and the newest pictures.
 * The loop fills snapshots in (atl_previews_changed), the previews' thread
 * takes them in turn and runs the plugin's preview hook, and the hook hands
 * its pictures back through preview_put. Everything in a slot is guarded by
 * the one mutex: the loop (changes, and api.sock's preview.get) and the
 * previews' thread each hold it for a few pointer moves or one copy of a
 * picture.
 */
#include "atl-build.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "preview.h"
#include "toolcall.h"

#define PICTURES 3
/* A model's turn makes its calls back to back, a few milliseconds apart:
 * waiting for a pause of SETTLE_MS starts one preview after the last of
 * them instead of one for each that the next cancels at once (each start
 * costs the loop a job's set-up and the workers a scene load). A steady
 * stream of changes still gets a preview every SETTLE_MAX_MS. */
#define SETTLE_MS 20
#define SETTLE_MAX_MS 150
/* A change cancels the preview in flight at once if it has shown a
 * picture; one that has not yet is let finish its first, for up to
 * FIRST_PICTURE_MS from its start: under a steady stream of changes (one
 * every 50 ms) cancelling at once left the page without any picture for
 * as long as the stream lasted. (300 ms was too short for the sanitizer
 * build on a busy machine, whose first pictures took longer.) */
#define FIRST_PICTURE_MS 1000

typedef struct {
  char id[ATL_IMAGE_ID_LEN + 1];
  char mime[32];
  void *data; /* NULL: none */
  size_t len;
  int64_t replaced_ms; /* when a newer one came (pics[1..] only) */
} picture_t;

typedef struct slot_s {
  struct slot_s *next;  /* every slot */
  struct slot_s *qnext; /* the run queue */
  int queued;
  int dead; /* its session was deleted while a preview ran */
  char sid[ATL_SESSION_ID_LEN + 1];
  atl_plugin_entry_t *plugin;
  /* The newest snapshot of the namespace not yet previewed (NULL: none),
   * and the revision (event seq) it follows. */
  json_object *want;
  int64_t want_rev;
  /* When the first and the last change of what waits came (monotonic): a
   * preview starts once changes have paused for SETTLE_MS, or SETTLE_MAX_MS
   * after the first, whichever is sooner (want_ready). */
  uint64_t want_first_ns, want_last_ns;
  int want_requested;      /* asked for (session.preview), not a change */
  atl_call_job_t *running; /* the preview in flight, or NULL */
  int64_t running_rev;     /* its revision, and whether it is HQ */
  int running_hq;
  uint64_t running_since_ns;
  int running_shown;      /* it has put a picture */
  int cancel_after_first; /* a change came before it had */
  int hq;                 /* the page asked for HQ */
  /* The newest picture first, then the ones it replaced, served for
   * render.preview_grace_ms more: a page is told of a picture by an event and
   * fetches it a moment later, by which time a sharper one may have
   * replaced it (they come 150 ms apart). Past that, or past the ring, a
   * replaced picture's id is "no such preview". */
  picture_t pics[PICTURES];
  int64_t made_ms; /* of the newest picture, or when the slot was made */
} slot_t;

struct atl_previews_s {
  atl_daemon_t *d;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  slot_t *slots;
  slot_t *qhead, *qtail;
  int stop;
  /* Previews begun whose last post to the loop has not run yet: the
   * render host releases its job through the loop, so a shutdown waits
   * for this to reach 0 (atl_previews_busy), or the job would leak. */
  atomic_int unsettled;
  /* Counters for the admin socket. */
  uint64_t made, cancelled, failed, pictures_put;
  size_t pictures, bytes;
};

/* Pictures age by the monotonic clock: a jump of the wall clock must not
 * expire them all, nor keep them for ever. */
static int64_t mono_ms(void) {
  return (int64_t)(atl_mono_ns() / 1000000u);
}

/* ---- slots (under mu) ---- */

static void picture_free(atl_previews_t *P, picture_t *pic) {
  if (pic->data == NULL)
    return;
  P->pictures--;
  P->bytes -= pic->len;
  free(pic->data);
  memset(pic, 0, sizeof(*pic));
}

/* Drops every picture of the slot. */
static void picture_drop(atl_previews_t *P, slot_t *sl) {
  for (int i = 0; i < PICTURES; i++)
    picture_free(P, &sl->pics[i]);
}

/* Makes pic (its data taken) the slot's newest picture. */
static void picture_push(atl_previews_t *P, slot_t *sl, const picture_t *pic,
                         int64_t now) {
  picture_free(P, &sl->pics[PICTURES - 1]);
  memmove(&sl->pics[1], &sl->pics[0], (PICTURES - 1) * sizeof(picture_t));
  if (sl->pics[1].data != NULL)
    sl->pics[1].replaced_ms = now;
  sl->pics[0] = *pic;
  P->pictures++;
  P->bytes += pic->len;
}

/* The slot has nothing to show now: its newest picture becomes a replaced
 * one, still served for the grace period like any other (the page may be
 * fetching it). */
static void picture_retire(atl_previews_t *P, slot_t *sl, int64_t now) {
  if (sl->pics[0].data == NULL)
    return;
  picture_free(P, &sl->pics[PICTURES - 1]);
  memmove(&sl->pics[1], &sl->pics[0], (PICTURES - 1) * sizeof(picture_t));
  memset(&sl->pics[0], 0, sizeof(sl->pics[0]));
  sl->pics[1].replaced_ms = now;
}

static int picture_live(const atl_previews_t *P, const slot_t *sl, int i,
                        int64_t now) {
  return sl->pics[i].data != NULL &&
         (i == 0 || now - sl->pics[i].replaced_ms <
                        (int64_t)P->d->cfg->render_preview_grace_ms);
}

static void queue_push(atl_previews_t *P, slot_t *sl) {
  if (sl->queued)
    return;
  sl->queued = 1;
  sl->qnext = NULL;
  if (P->qtail)
    P->qtail->qnext = sl;
  else
    P->qhead = sl;
  P->qtail = sl;
  pthread_cond_signal(&P->cv);
}

static void queue_remove(atl_previews_t *P, slot_t *sl) {
  if (!sl->queued)
    return;
  slot_t **pp = &P->qhead, *prev = NULL;
  while (*pp != NULL && *pp != sl) {
    prev = *pp;
    pp = &(*pp)->qnext;
  }
  if (*pp == sl) {
    *pp = sl->qnext;
    if (P->qtail == sl)
      P->qtail = prev;
  }
  sl->qnext = NULL;
  sl->queued = 0;
}

/* Unlinks and frees an idle slot (not running, not queued). */
static void slot_free(atl_previews_t *P, slot_t *sl) {
  for (slot_t **pp = &P->slots; *pp != NULL; pp = &(*pp)->next) {
    if (*pp == sl) {
      *pp = sl->next;
      break;
    }
  }
  picture_drop(P, sl);
  json_object_put(sl->want);
  free(sl);
}

/* Drops expired pictures, and idle slots beyond the limit, oldest picture
 * first. A slot that waits or runs stays: it is bounded by the sessions
 * being edited, and its picture replaces the one it had. */
static void sweep(atl_previews_t *P, int64_t now, size_t room) {
  const atl_config_t *cfg = P->d->cfg;
  int64_t ttl_ms = (int64_t)cfg->render_preview_ttl_s * 1000;
  size_t n = 0;
  for (slot_t *sl = P->slots; sl != NULL; sl = sl->next) {
    if (now - sl->made_ms > ttl_ms)
      picture_drop(P, sl);
    for (int i = 1; i < PICTURES; i++)
      if (!picture_live(P, sl, i, now))
        picture_free(P, &sl->pics[i]);
    n++;
  }
  while (n > 0 && n + room > cfg->render_preview_sessions) {
    slot_t *old = NULL;
    for (slot_t *sl = P->slots; sl != NULL; sl = sl->next)
      if (sl->running == NULL && !sl->queued &&
          (old == NULL || sl->made_ms < old->made_ms))
        old = sl;
    if (old == NULL)
      break;
    slot_free(P, old);
    n--;
  }
}

static slot_t *slot_find(atl_previews_t *P, const char *sid,
                         const atl_plugin_entry_t *plugin) {
  for (slot_t *sl = P->slots; sl != NULL; sl = sl->next)
    if (sl->plugin == plugin && !sl->dead && strcmp(sl->sid, sid) == 0)
      return sl;
  return NULL;
}

static slot_t *slot_get(atl_previews_t *P, const char *sid,
                        atl_plugin_entry_t *plugin) {
  slot_t *sl = slot_find(P, sid, plugin);
  if (sl != NULL)
    return sl;
  /* Room first: the new slot, idle until it is given what to preview,
   * must not be the one a sweep evicts. */
  int64_t now = mono_ms();
  sweep(P, now, 1);
  sl = calloc(1, sizeof(*sl));
  if (sl == NULL)
    return NULL;
  memcpy(sl->sid, sid, sizeof(sl->sid));
  sl->sid[ATL_SESSION_ID_LEN] = '\0';
  sl->plugin = plugin;
  sl->made_ms = now;
  sl->next = P->slots;
  P->slots = sl;
  return sl;
}

/* Hands snap (taken) to the slot: it replaces what waited, and a preview
 * in flight is cancelled so that the thread gets to it sooner. */
static void slot_want(atl_previews_t *P, slot_t *sl, json_object *snap,
                      int64_t rev, int settle) {
  uint64_t now = atl_mono_ns();
  if (sl->want == NULL || sl->want_first_ns == 0)
    sl->want_first_ns = settle ? now : 0;
  sl->want_last_ns = settle ? now : 0;
  sl->want_requested = !settle;
  json_object_put(sl->want);
  sl->want = snap;
  sl->want_rev = rev;
  if (sl->running == NULL) {
    queue_push(P, sl);
    return;
  }
  uint64_t first_by =
      sl->running_since_ns + (uint64_t)FIRST_PICTURE_MS * 1000000u;
  if (sl->running_shown || !settle || now >= first_by) {
    atomic_store(&sl->running->cancelled, 1);
  } else {
    sl->cancel_after_first = 1;
    atomic_store(&sl->running->cancel_at_ns, first_by);
  }
}

/* When what the slot waits with may start (monotonic ns). */
static uint64_t want_ready(const slot_t *sl) {
  uint64_t a = sl->want_last_ns + (uint64_t)SETTLE_MS * 1000000u;
  uint64_t b = sl->want_first_ns + (uint64_t)SETTLE_MAX_MS * 1000000u;
  return a < b ? a : b;
}

/* ---- the loop's side ---- */

static json_object *snapshot(json_object *doc, const char *ns) {
  json_object *v = NULL, *copy = NULL;
  if (!json_object_object_get_ex(doc, ns, &v) ||
      !json_object_is_type(v, json_type_object))
    return json_object_new_object();
  if (json_object_deep_copy(v, &copy, NULL) != 0 || copy == NULL)
    return NULL;
  return copy;
}

/* Whether plugin p previews a namespace session s has. */
static int has_view(const atl_session_t *s, const atl_plugin_entry_t *p) {
  return p->desc.preview != NULL &&
         json_object_object_get_ex(s->doc, p->desc.preview_of, NULL);
}

/* Asks every plugin that previews ns for a preview of session s; ns NULL:
 * every plugin previewing a namespace the session has, or every
 * previewing plugin when it has none yet (each then says there is
 * nothing to show). Returns how many were asked. */
static int want_all(atl_daemon_t *d, atl_session_t *s, const char *ns,
                    int64_t rev, int hq, int settle) {
  atl_previews_t *P = d->previews;
  if (P == NULL || P->stop || s->deleted)
    return 0;
  int n = 0, any = 0;
  const atl_registry_t *reg = &d->registry;
  for (size_t i = 0; ns == NULL && !any && i < reg->n_plugins; i++)
    any = has_view(s, reg->plugins[i]);
  for (size_t i = 0; i < reg->n_plugins; i++) {
    atl_plugin_entry_t *p = reg->plugins[i];
    if (p->desc.preview == NULL ||
        (ns != NULL && strcmp(p->desc.preview_of, ns) != 0) ||
        (ns == NULL && any && !has_view(s, p)))
      continue;
    json_object *snap = snapshot(s->doc, p->desc.preview_of);
    if (snap == NULL)
      continue;
    pthread_mutex_lock(&P->mu);
    slot_t *sl = slot_get(P, s->id, p);
    int quality = hq >= 0 ? hq : sl != NULL ? sl->hq : 0;
    /* A request for what is already being made, or already waits, at the
     * same quality is that preview: starting again would throw a render
     * away (two pages asking at once, or one whose fetch came late). */
    int covered =
        sl != NULL && !settle &&
        ((sl->running != NULL && sl->running_rev == rev &&
          sl->running_hq == quality &&
          !atl__call_cancelled(&sl->running->call)) ||
         (sl->want != NULL && sl->want_rev == rev && sl->hq == quality));
    if (sl != NULL && !covered) {
      sl->hq = quality;
      slot_want(P, sl, snap, rev, settle);
      snap = NULL;
    }
    n += sl != NULL;
    pthread_mutex_unlock(&P->mu);
    json_object_put(snap);
  }
  return n;
}

int atl_previews_watch(atl_daemon_t *d, const char *ns) {
  if (d->previews == NULL || d->previews->stop)
    return 0;
  for (size_t i = 0; i < d->registry.n_plugins; i++) {
    const atl_plugin_t *p = &d->registry.plugins[i]->desc;
    if (p->preview != NULL && strcmp(p->preview_of, ns) == 0)
      return 1;
  }
  return 0;
}

char *atl_previews_views(atl_daemon_t *d) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL)
    return NULL;
  const char *sep = "";
  for (size_t i = 0; i < d->registry.n_plugins; i++) {
    const atl_plugin_t *p = &d->registry.plugins[i]->desc;
    if (p->preview != NULL) {
      fprintf(f, "%s\"%s\"", sep, p->preview_of);
      sep = ", ";
    }
  }
  fclose(f);
  return buf;
}

void atl_previews_changed(atl_daemon_t *d, atl_session_t *s, const char *ns,
                          int64_t revision) {
  if (ns != NULL)
    want_all(d, s, ns, revision, -1, 1);
}

int atl_previews_request(atl_daemon_t *d, atl_session_t *s, const char *quality,
                         const char *view) {
  int hq = quality == NULL ? -1 : strcmp(quality, "hq") == 0;
  return want_all(d, s, view, s->doc_rev, hq, 0);
}

void atl_previews_hold(atl_daemon_t *d, const char *session_id,
                       const atl_plugin_entry_t *plugin) {
  atl_previews_t *P = d->previews;
  if (P == NULL)
    return;
  pthread_mutex_lock(&P->mu);
  for (slot_t *sl = P->slots; sl != NULL; sl = sl->next) {
    if (sl->plugin != plugin || strcmp(sl->sid, session_id) != 0)
      continue;
    queue_remove(P, sl);
    json_object_put(sl->want);
    sl->want = NULL;
    if (sl->running != NULL)
      atomic_store(&sl->running->cancelled, 1);
  }
  pthread_mutex_unlock(&P->mu);
}

void atl_previews_forget(atl_daemon_t *d, const char *session_id) {
  atl_previews_t *P = d->previews;
  if (P == NULL)
    return;
  pthread_mutex_lock(&P->mu);
  slot_t *sl = P->slots;
  while (sl != NULL) {
    slot_t *next = sl->next;
    if (strcmp(sl->sid, session_id) == 0) {
      queue_remove(P, sl);
      json_object_put(sl->want);
      sl->want = NULL;
      picture_drop(P, sl);
      if (sl->running != NULL) {
        /* The thread frees it when the preview returns. */
        sl->dead = 1;
        atomic_store(&sl->running->cancelled, 1);
      } else {
        slot_free(P, sl);
      }
    }
    sl = next;
  }
  pthread_mutex_unlock(&P->mu);
}

/* ---- the previews' thread ---- */

static atl_call_job_t *job_new(atl_previews_t *P, slot_t *sl, json_object *snap,
                               int64_t rev) {
  atl_call_job_t *j = calloc(1, sizeof(*j));
  json_object *args = json_object_new_object();
  json_object *doc = json_object_new_object();
  if (j == NULL || args == NULL || doc == NULL) {
    free(j);
    json_object_put(args);
    json_object_put(doc);
    return NULL;
  }
  atomic_init(&j->refs, 1);
  atomic_init(&j->cancelled, 0);
  atomic_init(&j->cancel_at_ns, 0);
  j->d = P->d;
  j->preview = sl;
  j->preview_rev = rev;
  memcpy(j->session_id, sl->sid, sizeof(j->session_id));
  j->preview_hq = sl->hq;
  j->preview_requested = sl->want_requested;
  j->args = args;
  json_object_object_add(j->args, "quality",
                         json_object_new_string(sl->hq ? "hq" : "fast"));
  j->doc = doc;
  json_object_object_add(j->doc, sl->plugin->desc.preview_of, snap);
  j->call = (atl_call_t){.struct_size = sizeof(atl_call_t),
                         .session_id = j->session_id,
                         .tool = NULL,
                         .args = j->args,
                         .ns = snap,
                         .document = j->doc,
                         .plugin_state = sl->plugin->state,
                         .host = &sl->plugin->host,
                         .host_private = j};
  return j;
}

/* Posted by the thread after each preview, behind everything the preview
 * itself posted. */
static void settle(void *arg) {
  atl_previews_t *P = arg;
  atomic_fetch_sub(&P->unsettled, 1);
}

int atl_previews_busy(atl_daemon_t *d) {
  return d->previews != NULL && atomic_load(&d->previews->unsettled) > 0;
}

static void *previews_main(void *arg) {
  atl_previews_t *P = arg;
  /* Below the loop and the store's writer, as the render workers are: a
   * preview's PNG encoding must not take a core from a tool call. (Linux
   * gives each thread its own nice value.) */
  if (P->d->cfg->render_nice > 0)
    setpriority(PRIO_PROCESS, (id_t)gettid(), (int)P->d->cfg->render_nice);
  pthread_mutex_lock(&P->mu);
  for (;;) {
    while (!P->stop && P->qhead == NULL)
      pthread_cond_wait(&P->cv, &P->mu);
    if (P->stop)
      break;
    /* The first in the queue whose changes have settled; else sleep until
     * the soonest will have (or a new change wakes us). */
    uint64_t now = atl_mono_ns(), wake = UINT64_MAX;
    slot_t *sl = P->qhead;
    for (; sl != NULL; sl = sl->qnext) {
      uint64_t at = want_ready(sl);
      if (at <= now)
        break;
      if (at < wake)
        wake = at;
    }
    if (sl == NULL) {
      struct timespec ts = {.tv_sec = (time_t)(wake / 1000000000u),
                            .tv_nsec = (long)(wake % 1000000000u)};
      pthread_cond_timedwait(&P->cv, &P->mu, &ts);
      continue;
    }
    queue_remove(P, sl);
    json_object *snap = sl->want;
    int64_t rev = sl->want_rev;
    sl->want = NULL;
    if (snap == NULL)
      continue;
    atl_call_job_t *j = job_new(P, sl, snap, rev);
    if (j == NULL) {
      json_object_put(snap);
      continue;
    }
    sl->running = j;
    sl->running_rev = rev;
    sl->running_hq = j->preview_hq;
    sl->running_since_ns = atl_mono_ns();
    sl->running_shown = 0;
    sl->cancel_after_first = 0;
    atl_plugin_entry_t *plugin = sl->plugin;
    atomic_fetch_add(&P->unsettled, 1);
    pthread_mutex_unlock(&P->mu);

    uint64_t t0 = atl_mono_ns();
    int rc = plugin->desc.preview(&j->call);
    uint64_t ms = (atl_mono_ns() - t0) / 1000000u;
    int cancelled = atl__call_cancelled(&j->call);
    if (rc < 0 && !cancelled)
      atl_log_kv(ATL_LOG_WARN, "preview failed", "session", j->session_id,
                 "plugin", plugin->desc.name, "error", atl_strerror(rc), NULL);
    if (atl_log_enabled(ATL_LOG_DEBUG)) {
      char t[24];
      t[atl_u64_dec(ms, t)] = '\0';
      atl_log_kv(ATL_LOG_DEBUG, cancelled ? "preview cancelled" : "preview",
                 "session", j->session_id, "view", plugin->desc.preview_of,
                 "ms", t, NULL);
    }

    pthread_mutex_lock(&P->mu);
    sl->running = NULL;
    if (cancelled)
      P->cancelled++;
    else if (rc < 0)
      P->failed++;
    else
      P->made++;
    if (sl->dead)
      slot_free(P, sl);
    else if (sl->want != NULL)
      queue_push(P, sl); /* at the back: other sessions go first */
    pthread_mutex_unlock(&P->mu);
    json_object_put(j->args);
    json_object_put(j->doc);
    free(j);
    if (atl_daemon_post(P->d, settle, P) != 0)
      atomic_fetch_sub(&P->unsettled, 1);
    pthread_mutex_lock(&P->mu);
  }
  pthread_mutex_unlock(&P->mu);
  return NULL;
}

int atl__preview_put(atl_call_t *call, const char *mime, const void *data,
                     size_t len, json_object *info) {
  atl_call_job_t *j = atl__job_of(call);
  atl_previews_t *P = j != NULL ? j->d->previews : NULL;
  if (P == NULL || j->preview == NULL || (data == NULL) != (len == 0) ||
      (data != NULL && (mime == NULL || strncmp(mime, "image/", 6) != 0 ||
                        strlen(mime) >= sizeof(((picture_t *)0)->mime) ||
                        strcmp(mime, "image/svg+xml") == 0)) ||
      (info != NULL && !json_object_is_type(info, json_type_object))) {
    json_object_put(info);
    return ATL_EINVAL;
  }
  if (atl__call_cancelled(call)) {
    json_object_put(info);
    return ATL_ECANCELED;
  }
  char id[ATL_IMAGE_ID_LEN + 1] = "";
  void *copy = NULL;
  if (data != NULL) {
    atl_sha256_hex(data, len, id);
    if ((copy = malloc(len)) == NULL) {
      json_object_put(info);
      return ATL_ENOMEM;
    }
    memcpy(copy, data, len);
  }
  slot_t *sl = j->preview;
  pthread_mutex_lock(&P->mu);
  if (atl__call_cancelled(call)) {
    pthread_mutex_unlock(&P->mu);
    free(copy);
    json_object_put(info);
    return ATL_ECANCELED;
  }
  int64_t now = mono_ms();
  if (copy != NULL) {
    picture_t pic = {.data = copy, .len = len};
    memcpy(pic.id, id, sizeof(id));
    snprintf(pic.mime, sizeof(pic.mime), "%s", mime);
    picture_push(P, sl, &pic, now);
    P->pictures_put++;
    /* Shown: a change that came meanwhile may now cancel it (its event
     * below still goes out, for the picture the page can fetch). */
    sl->running_shown = 1;
    if (sl->cancel_after_first)
      atomic_store(&j->cancelled, 1);
  } else {
    /* Nothing to show now: what was shown is of another scene. */
    picture_retire(P, sl, now);
  }
  sl->made_ms = now;
  const char *view = sl->plugin->desc.preview_of;
  pthread_mutex_unlock(&P->mu);

  json_object *ev = info != NULL ? info : json_object_new_object();
  /* The host's members are the host's, whatever the plugin put there. */
  json_object_object_del(ev, "image");
  json_object_object_del(ev, "bytes");
  json_object_object_del(ev, "requested");
  json_object_object_add(ev, "view", json_object_new_string(view));
  json_object_object_add(ev, "revision", json_object_new_int64(j->preview_rev));
  json_object_object_add(ev, "quality",
                         json_object_new_string(j->preview_hq ? "hq" : "fast"));
  if (j->preview_requested)
    json_object_object_add(ev, "requested", json_object_new_boolean(1));
  if (copy != NULL) {
    json_object_object_add(ev, "image", json_object_new_string(id));
    json_object_object_add(ev, "bytes", json_object_new_int64((int64_t)len));
  }
  char *text = strdup(json_object_to_json_string_ext(
      ev, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(ev);
  if (text == NULL)
    return ATL_ENOMEM;
  return atl_host_emit_text(j->d, j->session_id, "preview", text);
}

int atl_previews_get(atl_daemon_t *d, const char *id, void **data, size_t *len,
                     char *mime, size_t mime_size) {
  atl_previews_t *P = d->previews;
  *data = NULL;
  *len = 0;
  if (P == NULL || id == NULL || strlen(id) != ATL_IMAGE_ID_LEN)
    return ATL_ENOENT;
  int rc = ATL_ENOENT;
  pthread_mutex_lock(&P->mu);
  int64_t now = mono_ms();
  sweep(P, now, 0);
  for (slot_t *sl = P->slots; sl != NULL && rc == ATL_ENOENT; sl = sl->next) {
    for (int i = 0; i < PICTURES; i++) {
      const picture_t *pic = &sl->pics[i];
      if (!picture_live(P, sl, i, now) || strcmp(pic->id, id) != 0)
        continue;
      if ((*data = malloc(pic->len)) == NULL) {
        rc = ATL_ENOMEM;
        break;
      }
      memcpy(*data, pic->data, pic->len);
      *len = pic->len;
      snprintf(mime, mime_size, "%s", pic->mime);
      rc = 0;
      break;
    }
  }
  pthread_mutex_unlock(&P->mu);
  return rc;
}

json_object *atl_previews_status(atl_daemon_t *d) {
  atl_previews_t *P = d->previews;
  json_object *o = json_object_new_object();
  json_object_object_add(o, "enabled", json_object_new_boolean(P != NULL));
  if (P == NULL)
    return o;
  pthread_mutex_lock(&P->mu);
  size_t waiting = 0, running = 0;
  for (slot_t *sl = P->slots; sl != NULL; sl = sl->next) {
    waiting += sl->want != NULL;
    running += sl->running != NULL;
  }
  json_object_object_add(o, "running", json_object_new_int64((int64_t)running));
  json_object_object_add(o, "waiting", json_object_new_int64((int64_t)waiting));
  json_object_object_add(o, "pictures",
                         json_object_new_int64((int64_t)P->pictures));
  json_object_object_add(o, "bytes", json_object_new_int64((int64_t)P->bytes));
  json_object_object_add(o, "made", json_object_new_int64((int64_t)P->made));
  json_object_object_add(o, "cancelled",
                         json_object_new_int64((int64_t)P->cancelled));
  json_object_object_add(o, "failed",
                         json_object_new_int64((int64_t)P->failed));
  pthread_mutex_unlock(&P->mu);
  return o;
}

/* ---- life cycle ---- */

int atl_previews_start(atl_daemon_t *d) {
  if (!d->cfg->render_previews)
    return 0;
  int any = 0;
  for (size_t i = 0; i < d->registry.n_plugins; i++)
    any |= d->registry.plugins[i]->desc.preview != NULL;
  if (!any)
    return 0;
  atl_previews_t *P = calloc(1, sizeof(*P));
  if (P == NULL)
    return ATL_ENOMEM;
  P->d = d;
  pthread_mutex_init(&P->mu, NULL);
  /* Timed waits on the clock of atl_mono_ns(): a jump of the wall clock
   * must not hold a preview back. */
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&P->cv, &ca);
  pthread_condattr_destroy(&ca);
  atomic_init(&P->unsettled, 0);
  int rc = pthread_create(&P->thread, NULL, previews_main, P);
  if (rc != 0) {
    pthread_mutex_destroy(&P->mu);
    pthread_cond_destroy(&P->cv);
    free(P);
    atl_log_kv(ATL_LOG_ERROR, "cannot start the previews' thread; previews off",
               "error", strerror(rc), NULL);
    return 0;
  }
  d->previews = P;
  return 0;
}

void atl_previews_shutdown(atl_daemon_t *d) {
  atl_previews_t *P = d->previews;
  if (P == NULL)
    return;
  pthread_mutex_lock(&P->mu);
  P->stop = 1;
  for (slot_t *sl = P->slots; sl != NULL; sl = sl->next)
    if (sl->running != NULL)
      atomic_store(&sl->running->cancelled, 1);
  pthread_cond_broadcast(&P->cv);
  pthread_mutex_unlock(&P->mu);
}

int atl_previews_free(atl_daemon_t *d) {
  atl_previews_t *P = d->previews;
  if (P == NULL)
    return 0;
  atl_previews_shutdown(d);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += 2;
  if (pthread_timedjoin_np(P->thread, NULL, &ts) != 0) {
    /* A hook that does not return: leave it and what it uses. */
    atl_log_kv(ATL_LOG_WARN, "a preview did not return; leaving it", NULL);
    pthread_detach(P->thread);
    d->previews = NULL;
    return 1;
  }
  while (P->slots != NULL) {
    P->slots->queued = 0;
    slot_free(P, P->slots);
  }
  pthread_mutex_destroy(&P->mu);
  pthread_cond_destroy(&P->cv);
  free(P);
  d->previews = NULL;
  return 0;
}
