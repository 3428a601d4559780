/* A session's next request, from what earlier turns already rendered, held
 * within the model's context window.
 *
 * atl_provider_build renders everything on every call; this produces the
 * same bytes (test_agent_request checks it) at the cost of the messages
 * added since the last turn, as long as the request fits the window. The
 * one message never kept is the newest tool message while its images are
 * attached: the images go with one request only, and its piece is
 * rendered again without them next time.
 *
 * The window: every request was the whole history, tool results unbounded,
 * so a long session ended with "prompt is too long" on every request, for
 * ever. Each request's input is estimated (its bytes over the bytes per
 * token the provider's own count last showed, images at a fixed cost);
 * over the budget, the tool results of earlier runs go in a short form,
 * then those of this run but the newest; and if that is not enough the
 * caller summarises the oldest messages (agent_context.c) and asks again.
 * Old images are never in a request to begin with: only the newest tool
 * message's go, once.
 */
#include "atl-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atelier/error.h>

#include "agent.h"
#include "providers/models.h"

/* Until a provider has counted a request: JSON, code and numbers run at 3
 * to 4 bytes a token, so 3 overestimates, as it should. */
#define DEFAULT_BYTES_PER_TOKEN 3.0
/* An image as the providers count it, at the sizes the daemon sends: at
 * most about 1600 tokens (Anthropic: w*h/750 at 1568 px a side). */
#define IMAGE_TOKENS 1600u
/* The request's own keys and brackets. */
#define OVERHEAD_BYTES 256u
/* A tool message is worth a short form when it is longer than this. */
#define SHORT_FROM 600u
/* The most of an earlier result's JSON its short form keeps. */
#define SHORT_KEEP 200u

void atl_agent_request_cache_free(atl_agent_request_cache_t *c) {
  for (size_t i = 0; i < c->n_pieces; i++) {
    atl_provider_piece_free(&c->pieces[i]);
    atl_provider_piece_free(&c->shorts[i]);
  }
  free(c->pieces);
  free(c->shorts);
  free(c->kind);
  atl_provider_piece_free(&c->summary);
  json_object_put(c->history);
  json_object_put(c->doc);
  free(c->system);
  memset(c, 0, sizeof(*c));
}

static int kind_of(json_object *m) {
  const char *role = atl_provider_str(m, "role");
  json_object *v;
  if (role == NULL)
    return ATL_MSG_OTHER;
  if (strcmp(role, "user") == 0)
    return json_object_object_get_ex(m, "synthetic", &v) ? ATL_MSG_NUDGE
                                                         : ATL_MSG_USER;
  if (strcmp(role, "model") == 0)
    return ATL_MSG_MODEL;
  if (strcmp(role, "tool") == 0)
    return ATL_MSG_TOOL;
  return strcmp(role, "summary") == 0 ? ATL_MSG_SUMMARY : ATL_MSG_OTHER;
}

/* An earlier result's envelope in short: whether it succeeded, its error,
 * the start of its result, and what was left out. */
static json_object *brief(json_object *env) {
  json_object *out = json_object_new_object(), *v;
  if (json_object_object_get_ex(env, "success", &v))
    json_object_object_add(out, "success", json_object_get(v));
  const char *err = atl_provider_str(env, "error");
  if (err != NULL) {
    size_t n = strlen(err);
    size_t k = atl_utf8_prefix(err, n, 2 * SHORT_KEEP);
    json_object_object_add(out, "error",
                           json_object_new_string_len(err, (int)k));
  }
  if (json_object_object_get_ex(env, "result", &v)) {
    const char *t = json_object_to_json_string_ext(
        v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    size_t n = strlen(t);
    if (n <= SHORT_KEEP) {
      json_object_object_add(out, "result", json_object_get(v));
    } else {
      size_t k = atl_utf8_prefix(t, n, SHORT_KEEP);
      char note[200];
      snprintf(note, sizeof(note),
               "%zu more bytes of this earlier result were left out to fit "
               "the context window; call the tool again for all of it",
               n - k);
      json_object_object_add(out, "result_start",
                             json_object_new_string_len(t, (int)k));
      json_object_object_add(out, "left_out", json_object_new_string(note));
    }
  }
  return out;
}

/* The short form of a tool message's piece into out (len 0 when the full
 * one is short already). */
static int short_piece(const atl_provider_ops_t *ops, json_object *m,
                       size_t full_len, atl_provider_piece_t *out) {
  memset(out, 0, sizeof(*out));
  json_object *parts;
  if (full_len <= SHORT_FROM || !json_object_object_get_ex(m, "parts", &parts))
    return 0;
  json_object *copy = json_object_new_object(),
              *cparts = json_object_new_array();
  json_object_object_foreach(m, k, v) {
    if (strcmp(k, "parts") != 0)
      json_object_object_add(copy, k, json_object_get(v));
  }
  for (size_t i = 0; i < json_object_array_length(parts); i++) {
    json_object *p = json_object_array_get_idx(parts, i),
                *np = json_object_new_object(), *env = NULL;
    json_object_object_foreach(p, pk, pv) {
      /* Images of earlier results are never sent again anyway. */
      if (strcmp(pk, "result") != 0 && strcmp(pk, "images") != 0)
        json_object_object_add(np, pk, json_object_get(pv));
    }
    json_object_object_get_ex(p, "result", &env);
    json_object_object_add(np, "result", brief(env));
    json_object_array_add(cparts, np);
  }
  json_object_object_add(copy, "parts", cparts);
  int rc = ops->piece(copy, out);
  json_object_put(copy);
  if (rc == 0 && out->len * 5 > full_len * 4)
    atl_provider_piece_free(out); /* not worth it */
  return rc;
}

/* A summary message: from now on it stands for every message before the
 * one it names ("covers"), sent first as the user's words. */
static int note_summary(const atl_provider_ops_t *ops,
                        atl_agent_request_cache_t *c, json_object *m) {
  json_object *cv, *parts;
  if (!json_object_object_get_ex(m, "covers", &cv) ||
      !json_object_object_get_ex(m, "parts", &parts))
    return 0;
  int64_t covers = json_object_get_int64(cv);
  if (covers <= 0 || (size_t)covers < c->start)
    return 0;
  const char *text =
      atl_provider_str(json_object_array_get_idx(parts, 0), "text");
  char *said = NULL;
  if (asprintf(&said,
               "[The earlier conversation, summarised to fit the context "
               "window; the messages it stands for are no longer shown.]\n%s",
               text ? text : "(no summary could be made)") < 0)
    return ATL_ENOMEM;
  json_object *u = json_object_new_object(), *ps = json_object_new_array(),
              *p = json_object_new_object();
  json_object_object_add(p, "type", json_object_new_string("text"));
  json_object_object_add(p, "text", json_object_new_string(said));
  free(said);
  json_object_array_add(ps, p);
  json_object_object_add(u, "role", json_object_new_string("user"));
  json_object_object_add(u, "parts", ps);
  atl_provider_piece_t piece;
  int rc = ops->piece(u, &piece);
  json_object_put(u);
  if (rc != 0)
    return rc;
  atl_provider_piece_free(&c->summary);
  c->summary = piece;
  c->start = (size_t)covers;
  /* What it stands for is never sent again. */
  for (size_t i = 0; i < c->n_pieces && i < c->start; i++) {
    atl_provider_piece_free(&c->pieces[i]);
    atl_provider_piece_free(&c->shorts[i]);
  }
  return 0;
}

static void reset(atl_agent_request_cache_t *c, json_object *history) {
  for (size_t i = 0; i < c->n_pieces; i++) {
    atl_provider_piece_free(&c->pieces[i]);
    atl_provider_piece_free(&c->shorts[i]);
  }
  c->n_pieces = 0;
  c->start = c->short_below = 0;
  atl_provider_piece_free(&c->summary);
  json_object_put(c->history);
  c->history = json_object_get(history);
}

/* Renders the pieces of history[c->n_pieces .. upto), and lets go of
 * each message's tree once its piece is made: the pieces are all that
 * later requests read, and a message as json-c objects takes about
 * 4 KB where its text takes a few hundred bytes. */
static int extend(const atl_provider_ops_t *ops, atl_agent_request_cache_t *c,
                  json_object *history, size_t upto) {
  if (c->history != history)
    reset(c, history); /* another history (reloaded after an eviction) */
  if (upto > c->cap) {
    size_t cap = c->cap ? c->cap : 16;
    while (cap < upto)
      cap *= 2;
    atl_provider_piece_t *p = realloc(c->pieces, cap * sizeof(*p));
    if (p != NULL)
      c->pieces = p;
    atl_provider_piece_t *s = realloc(c->shorts, cap * sizeof(*s));
    if (s != NULL)
      c->shorts = s;
    unsigned char *k = realloc(c->kind, cap);
    if (k != NULL)
      c->kind = k;
    if (p == NULL || s == NULL || k == NULL)
      return ATL_ENOMEM;
    c->cap = cap;
  }
  while (c->n_pieces < upto) {
    size_t i = c->n_pieces;
    json_object *m = json_object_array_get_idx(history, i);
    c->kind[i] = (unsigned char)kind_of(m);
    int rc = ops->piece(m, &c->pieces[i]);
    if (rc == 0 && c->kind[i] == ATL_MSG_TOOL)
      rc = short_piece(ops, m, c->pieces[i].len, &c->shorts[i]);
    else
      memset(&c->shorts[i], 0, sizeof(c->shorts[i]));
    if (rc == 0 && c->kind[i] == ATL_MSG_SUMMARY)
      rc = note_summary(ops, c, m);
    if (rc != 0) {
      atl_provider_piece_free(&c->pieces[i]);
      return rc;
    }
    json_object_array_put_idx(history, i, NULL);
    c->n_pieces++;
  }
  return 0;
}

uint64_t atl_agent_budget(atl_daemon_t *d, const atl_agent_request_cache_t *c,
                          const char *model) {
  const atl_agent_provider_t *p = d->agent;
  const atl_model_info_t *mi = atl_model_info(p->cfg.type, model);
  uint64_t window = p->cfg.context_tokens ? p->cfg.context_tokens
                    : mi != NULL          ? mi->context
                                          : ATL_MODEL_DEFAULT_CONTEXT;
  /* Room for the answer as the request asks for it, thinking included
   * where it counts (Anthropic counts input and max_tokens against the
   * window: "input length and max_tokens exceed context limit"). A window
   * too small for it is the configuration's to fix; the request still
   * gets a quarter. */
  uint64_t reserve = p->ops != NULL && p->ops->output_cap != NULL
                         ? p->ops->output_cap(&p->cfg, model)
                         : p->cfg.max_tokens;
  if (reserve > window - window / 4)
    reserve = window - window / 4;
  uint64_t b = window - reserve;
  b -= b / 50; /* and a margin for the estimate */
  if (c->ceiling > 0 && c->ceiling < b)
    b = c->ceiling;
  return b;
}

uint64_t atl_agent_estimate(const atl_agent_request_cache_t *c, size_t bytes,
                            size_t images) {
  double bpt =
      c->bytes_per_token > 0 ? c->bytes_per_token : DEFAULT_BYTES_PER_TOKEN;
  return (uint64_t)((double)bytes / bpt) + (uint64_t)images * IMAGE_TOKENS;
}

void atl_agent_calibrate(atl_agent_request_cache_t *c, int64_t input_tokens) {
  uint64_t img = (uint64_t)c->last_images * IMAGE_TOKENS;
  if (input_tokens <= 0 || c->last_bytes == 0 ||
      (uint64_t)input_tokens <= img + 16)
    return;
  double measured =
      (double)c->last_bytes / (double)((uint64_t)input_tokens - img);
  /* A little under what was measured, so that the next estimate errs
   * high; within what any tokenizer does. */
  measured *= 0.9;
  c->bytes_per_token = measured < 1.5 ? 1.5 : measured > 6.0 ? 6.0 : measured;
}

/* The pieces of the request, in order: the summary, then the messages
 * from c->start on, short where they may be. bytes: their size. */
static void assemble(const atl_agent_request_cache_t *c, size_t n, size_t upto,
                     const atl_provider_piece_t *temp,
                     atl_provider_piece_t *all, size_t *count, size_t *bytes) {
  size_t k = 0, b = 0;
  if (c->summary.len > 0) {
    all[k++] = c->summary;
    b += c->summary.len + 32;
  }
  for (size_t i = c->start; i < n; i++) {
    const atl_provider_piece_t *p = i >= upto ? &temp[i - upto]
                                    : i < c->short_below && c->shorts[i].len > 0
                                        ? &c->shorts[i]
                                        : &c->pieces[i];
    all[k++] = *p;
    b += p->len + 32;
  }
  *count = k;
  *bytes = b;
}

/* The last message of kind before n, from c->start on, or c->start. */
static size_t last_of(const atl_agent_request_cache_t *c, size_t upto,
                      int kind) {
  for (size_t i = upto; i-- > c->start;)
    if (c->kind[i] == kind)
      return i;
  return c->start;
}

int atl_agent_request(atl_daemon_t *d, atl_agent_request_cache_t *c,
                      const char *model, json_object *doc, json_object *history,
                      json_object *refs, atl_provider_req_t *out) {
  atl_agent_provider_t *p = d->agent;
  const atl_provider_ops_t *ops = p->ops;
  memset(out, 0, sizeof(*out));
  /* Every plugin describes the scene for the prompt; that only changes
   * when a tool call commits a new document. */
  if (c->system == NULL || c->doc != doc) {
    free(c->system);
    json_object_put(c->doc);
    c->system = atl_agent_system_prompt(d, doc);
    c->doc = c->system ? json_object_get(doc) : NULL;
    if (c->system == NULL)
      return ATL_ENOMEM;
  }
  if (c->history != history)
    reset(c, history);
  size_t n = json_object_array_length(history);
  size_t n_images = refs != NULL ? json_object_array_length(refs) : 0;
  /* The images go on the newest message but the summaries after it. */
  size_t img_at = n;
  while (img_at > c->n_pieces && kind_of(json_object_array_get_idx(
                                     history, img_at - 1)) == ATL_MSG_SUMMARY)
    img_at--;
  img_at = img_at > 0 ? img_at - 1 : 0;
  /* Rendered messages are gone from the history (extend), so what was
   * rendered stays rendered: their images, if any, are left out. */
  if (n_images > 0 && (n == 0 || img_at < c->n_pieces))
    n_images = 0;
  size_t upto = n_images > 0 ? img_at : n;
  int rc = extend(ops, c, history, upto);
  if (rc != 0)
    return rc;
  /* What is not kept: the message with the images, and summaries after
   * it (each takes effect here already). */
  atl_provider_piece_t *temp = calloc(n - upto + 1, sizeof(*temp));
  atl_provider_piece_t *all = calloc(n + 2, sizeof(*all));
  if (temp == NULL || all == NULL)
    rc = ATL_ENOMEM;
  for (size_t i = upto; rc == 0 && i < n; i++) {
    json_object *m = json_object_array_get_idx(history, i);
    if (kind_of(m) == ATL_MSG_SUMMARY)
      rc = note_summary(ops, c, m);
    if (i == img_at && n_images > 0)
      atl_agent_attach_images(history, refs, 1, img_at);
    if (rc == 0)
      rc = ops->piece(m, &temp[i - upto]);
    if (i == img_at && n_images > 0)
      atl_agent_attach_images(history, refs, 0, img_at);
  }
  /* Held within the window: earlier runs' results short, then all but the
   * newest tool message's; past that, summarising is the caller's. */
  size_t count = 0, bytes = 0,
         fixed = strlen(c->system) + OVERHEAD_BYTES +
                 (p->tools_text ? strlen(p->tools_text) : 0);
  /* The images are counted as images, not as their base64's bytes. */
  size_t image_bytes = 0;
  for (size_t i = 0; i < n_images; i++) {
    json_object *data;
    if (json_object_object_get_ex(json_object_array_get_idx(refs, i), "data",
                                  &data))
      image_bytes += (size_t)json_object_get_string_len(data);
  }
  uint64_t budget = atl_agent_budget(d, c, model), est = 0;
  for (int step = 0; rc == 0; step++) {
    assemble(c, n, upto, temp, all, &count, &bytes);
    bytes = bytes > image_bytes ? bytes - image_bytes : 0;
    est = atl_agent_estimate(c, fixed + bytes, n_images);
    if (est <= budget)
      break;
    size_t below = step == 0   ? last_of(c, upto, ATL_MSG_USER)
                   : step == 1 ? last_of(c, upto, ATL_MSG_TOOL)
                               : 0;
    if (step >= 2) {
      rc = ATL_E2BIG;
    } else if (below > c->short_below) {
      c->short_below = below;
    }
  }
  c->last_bytes = fixed + bytes;
  c->last_images = n_images;
  c->last_estimate = est;
  c->last_budget = budget;
  atl_strbuf_t msgs = {0};
  if (rc == 0)
    rc = atl_provider_join(ops, all, count, &msgs);
  for (size_t i = 0; temp != NULL && i < n - upto; i++)
    atl_provider_piece_free(&temp[i]);
  free(temp);
  free(all);
  char *m = atl_sb_take(&msgs);
  if (rc == 0 && m == NULL)
    rc = ATL_ENOMEM;
  if (rc == 0)
    rc = ops->request(&p->cfg, model, c->system, m, p->tools_text, out);
  free(m);
  return rc;
}
