/* Summarising the oldest messages of a session whose next request would
 * not fit the model's context window (agent_int.h: atl__agent_compact).
 *
 * agent_request.c holds each request within the window by sending the
 * tool results of earlier runs in short; when that is not enough it says
 * so, and the loop comes here. The model is asked, in a call of its own
 * with no tools, to summarise the messages from the last summary's end
 * up to a cut chosen so that what follows takes about half the window (so
 * that the next turns do not summarise again at once). The summary is
 * committed to the history as a message {"role": "summary", "covers": N}
 * that stands, in every later request, for every message before N, and
 * goes to the page as a context.compacted event: nothing is dropped
 * silently. If the summary cannot be had (the provider refuses, the
 * answer is empty), the messages are dropped all the same, the marker and
 * the event saying so, and the session goes on.
 *
 * The cut is always where a conversation may begin: at a user's message
 * or at a model's answer, never at tool results, whose calls would be
 * gone.
 */
#include "atl-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"
#include "log.h"

/* Room for the summary in the estimate of what follows it. */
#define SUMMARY_BYTES 4096u

typedef struct {
  atl_agent_call_t call; /* first: the HTTP data callback's user */
  atl_agent_t *a;
  size_t from, covers; /* it summarises messages [from, covers) */
  uint64_t before;     /* the estimate that did not fit */
  void (*done)(atl_agent_t *a, int status, const char *why);
} compact_t;

static const char summary_system[] =
    "You summarise the start of a conversation between a user and you, an "
    "assistant that builds things in Atelier by calling tools, for your own "
    "use: from now on you will see the summary in its place.";

static const char summary_ask[] =
    "The start of our conversation no longer fits your context window. "
    "Below it is, as the messages went to you. Write a summary you will "
    "read in its place: what the user asked for and prefers, what was "
    "decided, what was built or changed (names, ids and values that "
    "matter), results you will still need, and what is unfinished. Plain "
    "text, at most about 400 words.\n\n<conversation>\n%s\n</conversation>";

/* A piece's size in a request, short where it would go short. */
static size_t size_at(const atl_agent_request_cache_t *c, size_t i) {
  const atl_provider_piece_t *p = i < c->short_below && c->shorts[i].len > 0
                                      ? &c->shorts[i]
                                      : &c->pieces[i];
  return p->len + 32;
}

/* Where a conversation may begin. */
static int cut_ok(const atl_agent_request_cache_t *c, size_t i) {
  return c->kind[i] == ATL_MSG_USER || c->kind[i] == ATL_MSG_NUDGE ||
         c->kind[i] == ATL_MSG_MODEL;
}

/* The cut: the first place from which the rest takes at most half the
 * budget, else the last place from which it fits at all; 0 when none
 * does. */
static size_t choose_cut(const atl_agent_request_cache_t *c) {
  size_t n = c->n_pieces, cached = 0;
  for (size_t i = c->start; i < n; i++)
    cached += size_at(c, i);
  /* What the last request held beyond the cached messages: the system
   * prompt, the tools and the newest message, if it was not cached. */
  size_t rest = c->last_bytes > cached ? c->last_bytes - cached : 0;
  size_t suffix = cached, best = 0;
  for (size_t i = c->start; i < n; i++) {
    if (i > c->start && cut_ok(c, i)) {
      uint64_t est =
          atl_agent_estimate(c, rest + suffix + SUMMARY_BYTES, c->last_images);
      if (est <= c->last_budget / 2)
        return i;
      if (est <= c->last_budget)
        best = i;
    }
    suffix -= size_at(c, i);
  }
  return best;
}

/* What is summarised: the previous summary, then the messages as they
 * went to the model, tool results in their short form (the summary call
 * must itself fit, and a summary keeps what results said, not their
 * bulk); cut from the front to at most max bytes. */
static char *transcript(const atl_agent_request_cache_t *c, size_t from,
                        size_t covers, size_t max) {
  atl_strbuf_t b = {0};
  if (c->summary.len > 0) {
    atl_sb_add(&b, c->summary.text, c->summary.len);
    atl_sb_adds(&b, "\n");
  }
  for (size_t i = from; i < covers; i++) {
    const atl_provider_piece_t *p =
        c->shorts[i].len > 0 ? &c->shorts[i] : &c->pieces[i];
    if (p->len == 0)
      continue;
    atl_sb_add(&b, p->text, p->len);
    atl_sb_adds(&b, "\n");
  }
  char *t = atl_sb_take(&b);
  size_t n = t ? strlen(t) : 0;
  if (t != NULL && n > max) {
    /* The oldest part goes: the summary is of what leads up to now. */
    size_t cut = n - max;
    while (cut < n && ((unsigned char)t[cut] & 0xC0) == 0x80)
      cut++;
    char *shorter = NULL;
    if (asprintf(&shorter, "(...the oldest part is left out...)\n%s", t + cut) <
        0)
      shorter = NULL;
    free(t);
    t = shorter;
  }
  return t;
}

/* Commits the summary marker (text NULL: none could be made, why says
 * why) with its context.compacted event, and hands back to the loop. */
static void finish(compact_t *k, const char *text, const char *why) {
  atl_agent_t *a = k->a;
  json_object *m = json_object_new_object(), *parts = json_object_new_array();
  json_object_object_add(m, "role", json_object_new_string("summary"));
  json_object_object_add(m, "covers",
                         json_object_new_int64((int64_t)k->covers));
  json_object_object_add(m, "from", json_object_new_int64((int64_t)k->from));
  char dropped[300];
  if (text == NULL)
    snprintf(dropped, sizeof(dropped),
             "(The %zu oldest messages were dropped to fit the context window; "
             "no summary of them could be made.)",
             k->covers - k->from);
  json_object *p = atl__agent_obj_str("type", "text");
  json_object_object_add(p, "text",
                         json_object_new_string(text ? text : dropped));
  json_object_array_add(parts, p);
  json_object_object_add(m, "parts", parts);
  json_object_object_add(m, "tokens_before",
                         json_object_new_int64((int64_t)k->before));
  json_object *data = json_object_new_object();
  json_object_object_add(data, "summary",
                         text ? json_object_new_string(text) : NULL);
  json_object_object_add(data, "messages",
                         json_object_new_int64((int64_t)(k->covers - k->from)));
  json_object_object_add(data, "covers",
                         json_object_new_int64((int64_t)k->covers));
  json_object_object_add(data, "tokens_before",
                         json_object_new_int64((int64_t)k->before));
  json_object_object_add(
      data, "budget", json_object_new_int64((int64_t)a->req_cache.last_budget));
  if (why != NULL)
    json_object_object_add(data, "error", json_object_new_string(why));
  atl_log_kv(text ? ATL_LOG_INFO : ATL_LOG_WARN,
             "context compacted: the oldest messages summarised", "session",
             a->s->id, "error", why ? why : "", NULL);
  atl__agent_commit(a, m, "context.compacted", data);
  void (*done)(atl_agent_t *, int, const char *) = k->done;
  free(k);
  done(a, 1, NULL);
}

static void answered(const atl_http_response_t *r, void *user) {
  compact_t *k = user;
  atl_agent_t *a = k->a;
  atl_turn_t *t = &k->call.turn;
  char why[600] = "";
  char *text = NULL;
  /* A passing trouble (no connection, 429, 5xx, an overload in the
   * stream) is the loop's to retry, as for any model call: the messages
   * are not dropped for it. */
  int transient =
      r->status < 0 || r->http_code == 429 || r->http_code >= 500 ||
      (t->error != NULL && t->error_transient) ||
      (r->status == 0 && r->http_code < 300 && !t->done && t->error == NULL);
  if (r->status != 0 || r->http_code < 200 || r->http_code >= 300 ||
      t->error != NULL || !t->done) {
    char *said = atl_agent_call_said(&k->call, r);
    snprintf(why, sizeof(why), "the summary call failed: %s",
             t->error   ? t->error
             : said     ? said
             : r->error ? r->error
                        : "no complete answer");
    free(said);
  } else if (t->text == NULL || atl_provider_blank(t->text)) {
    snprintf(why, sizeof(why), "the model's summary was empty");
  } else {
    text = strdup(t->text);
  }
  atl_agent_call_free(&k->call);
  void (*done)(atl_agent_t *, int, const char *) = k->done;
  if (a->cancel || a->d->shutting_down) {
    free(k);
    free(text);
    done(a, 0, NULL);
    return;
  }
  if (text == NULL && transient) {
    free(k);
    done(a, -1, why);
    return;
  }
  finish(k, text, text ? NULL : why);
  free(text);
}

int atl__agent_compact(atl_agent_t *a, void (*done)(atl_agent_t *a, int status,
                                                    const char *why)) {
  atl_agent_request_cache_t *c = &a->req_cache;
  atl_agent_provider_t *p = a->d->agent;
  size_t covers = choose_cut(c);
  if (covers == 0)
    return ATL_E2BIG;
  compact_t *k = calloc(1, sizeof(*k));
  if (k == NULL)
    return ATL_ENOMEM;
  *k = (compact_t){.a = a,
                   .from = c->start,
                   .covers = covers,
                   .before = c->last_estimate,
                   .done = done};
  /* The summary call itself must fit: the transcript is held to most of
   * the budget. */
  double bpt = c->bytes_per_token > 0 ? c->bytes_per_token : 3.0;
  size_t max = (size_t)((double)c->last_budget * bpt * 0.7);
  char *t = transcript(c, k->from, covers, max), *ask = NULL;
  if (t == NULL || asprintf(&ask, summary_ask, t) < 0)
    ask = NULL;
  free(t);
  json_object *h = json_object_new_array();
  json_object_array_add(h, atl__agent_text_message("user", ask ? ask : ""));
  free(ask);
  atl_provider_req_t req;
  int rc = atl_provider_build(p->ops, &p->cfg, a->model, summary_system, h,
                              NULL, &req);
  json_object_put(h);
  if (rc != 0) {
    free(k);
    return rc;
  }
  atl_agent_call_init(&k->call, p->ops, &a->cancel);
  atl_log_kv(ATL_LOG_INFO, "context window full: summarising", "session",
             a->s->id, NULL);
  rc = atl_agent_call_start(&k->call, a->d, &req, p->cfg.timeout_ms, answered);
  atl_provider_req_free(&req);
  if (rc != 0) {
    atl_agent_call_free(&k->call);
    free(k);
  }
  return rc;
}

/* The number after the first of the given phrases in s, or 0. */
static uint64_t number_after(const char *s, const char *phrase) {
  const char *at = strstr(s, phrase);
  if (at == NULL)
    return 0;
  at += strlen(phrase);
  while (*at == ' ' || *at == '(')
    at++;
  return strtoull(at, NULL, 10);
}

int atl__agent_context_refusal(const char *why, uint64_t *window,
                               int *with_output) {
  *window = 0;
  *with_output = 0;
  if (why == NULL)
    return 0;
  /* "input length and `max_tokens` exceed context limit: 188240 + 21333 >
   * 200000, decrease input length or `max_tokens` and try again"
   * (Anthropic): the window counts the answer too. */
  const char *both = strstr(why, "exceed context limit");
  if (both != NULL) {
    const char *over = strstr(both, " > ");
    *window = over ? strtoull(over + 3, NULL, 10) : 0;
    *with_output = 1;
    return 1;
  }
  /* "prompt is too long: 208310 tokens > 200000 maximum" (Anthropic),
   * "This model's maximum context length is 128000 tokens" and
   * "context_length_exceeded" (OpenAI), "Input tokens exceed the
   * configured limit of 272000 tokens" (gpt-5), "The input token count
   * (N) exceeds the maximum number of tokens allowed (1048576)" (Gemini). */
  const char *gt = strstr(why, "prompt is too long");
  if (gt != NULL) {
    const char *over = strstr(gt, " > ");
    *window = over ? strtoull(over + 3, NULL, 10) : 0;
    return 1;
  }
  if ((*window = number_after(why, "maximum context length is")) > 0 ||
      (*window = number_after(why, "configured limit of")) > 0 ||
      (*window = number_after(why, "maximum number of tokens allowed")) > 0)
    return 1;
  return strstr(why, "context_length_exceeded") != NULL ||
         strstr(why, "context window") != NULL ||
         strstr(why, "context length") != NULL;
}
