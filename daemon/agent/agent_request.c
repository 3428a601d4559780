/* A session's next request, from what earlier turns already rendered.
 *
 * atl_provider_build renders everything on every call; this produces the
 * same bytes (test_agent_request checks it) at the cost of the messages
 * added since the last turn. The one message never kept is the newest
 * tool message while its images are attached: the images go with one
 * request only, and its piece is rendered again without them next time.
 */
#include "atl-build.h"

#include <stdlib.h>
#include <string.h>

#include <atelier/error.h>

#include "agent.h"

void atl_agent_request_cache_free(atl_agent_request_cache_t *c) {
  for (size_t i = 0; i < c->n_pieces; i++)
    atl_provider_piece_free(&c->pieces[i]);
  free(c->pieces);
  json_object_put(c->history);
  json_object_put(c->doc);
  free(c->system);
  memset(c, 0, sizeof(*c));
}

/* Renders the pieces of history[c->n_pieces .. upto), and lets go of
 * each message's tree once its piece is made: the pieces are all that
 * later requests read, and a message as json-c objects takes about
 * 4 KB where its text takes a few hundred bytes. */
static int extend(const atl_provider_ops_t *ops, atl_agent_request_cache_t *c,
                  json_object *history, size_t upto) {
  if (c->history != history) {
    /* Another history (reloaded after an eviction): start again. */
    for (size_t i = 0; i < c->n_pieces; i++)
      atl_provider_piece_free(&c->pieces[i]);
    c->n_pieces = 0;
    json_object_put(c->history);
    c->history = json_object_get(history);
  }
  if (upto > c->cap) {
    size_t cap = c->cap ? c->cap : 16;
    while (cap < upto)
      cap *= 2;
    atl_provider_piece_t *p = realloc(c->pieces, cap * sizeof(*p));
    if (p == NULL)
      return ATL_ENOMEM;
    c->pieces = p;
    c->cap = cap;
  }
  while (c->n_pieces < upto) {
    int rc = ops->piece(json_object_array_get_idx(history, c->n_pieces),
                        &c->pieces[c->n_pieces]);
    if (rc != 0)
      return rc;
    json_object_array_put_idx(history, c->n_pieces, NULL);
    c->n_pieces++;
  }
  return 0;
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
  size_t n = json_object_array_length(history);
  int with_images = refs != NULL && json_object_array_length(refs) > 0;
  size_t keep = with_images && n > 0 ? n - 1 : n;
  /* Rendered messages are gone from the history (extend), so what was
   * rendered stays rendered. (The history only grows, so this cannot
   * happen; if it did, the images would be left out, not the message.) */
  if (c->history == history && keep < c->n_pieces)
    keep = c->n_pieces;
  int rc = extend(ops, c, history, keep);
  if (rc != 0)
    return rc;
  atl_strbuf_t msgs = {0};
  atl_provider_piece_t last = {0};
  if (keep == n) {
    rc = atl_provider_join(ops, c->pieces, c->n_pieces, &msgs);
  } else {
    /* The last piece is joined in the same list as the kept ones, so that
     * it merges with the one before it when their roles match. */
    atl_provider_piece_t *all = malloc((n + 1) * sizeof(*all));
    atl_agent_attach_images(history, refs, 1);
    rc = all ? ops->piece(json_object_array_get_idx(history, n - 1), &last)
             : ATL_ENOMEM;
    atl_agent_attach_images(history, refs, 0);
    if (rc == 0) {
      memcpy(all, c->pieces, keep * sizeof(*all));
      all[keep] = last;
      rc = atl_provider_join(ops, all, n, &msgs);
    }
    free(all);
  }
  atl_provider_piece_free(&last);
  char *m = atl_sb_take(&msgs);
  if (rc == 0 && m == NULL)
    rc = ATL_ENOMEM;
  if (rc == 0)
    rc = ops->request(&p->cfg, model, c->system, m, p->tools_text, out);
  free(m);
  return rc;
}
