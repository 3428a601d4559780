/* One streamed model call (agent.h: atl_agent_call_t): a run's turn, a
 * summary of old messages, a provider check. The
 * answer's events are parsed into a turn as they come, and its first bytes
 * are kept, since an error answer's body reaches the data callback rather
 * than the response. */
#include "atl-build.h"

#include <string.h>

#include "agent.h"
#include "trace.h"

void atl_agent_call_init(atl_agent_call_t *c, const atl_provider_ops_t *ops,
                         const int *stop) {
  memset(c, 0, sizeof(*c));
  c->ops = ops;
  c->stop = stop;
  atl_turn_init(&c->turn);
  atl_sse_init(&c->sse, 0);
}

/* What the answer has streamed so far: its text, its thinking (and the
 * signatures that come with it) and its calls' arguments. */
static size_t turn_bytes(const atl_turn_t *t) {
  size_t n = t->text_len + t->stop_message_len;
  for (size_t i = 0; i < t->n_thoughts; i++)
    n += t->thoughts[i].text_len + t->thoughts[i].signature_len;
  for (size_t i = 0; i < t->n_calls; i++)
    n += t->calls[i].args_len;
  return n;
}

static int sse_event(const char *event, const char *data, size_t len,
                     void *user) {
  atl_agent_call_t *c = user;
  if (c->ops->event(&c->turn, event, data, len) != 0)
    return 1;
  /* A model that never stops (or a provider that streams without end)
   * would otherwise grow the turn, and the text.delta events, without
   * bound. The count of parts is capped by the turn itself; this caps
   * their bytes. */
  if (c->max_bytes > 0 && turn_bytes(&c->turn) > c->max_bytes) {
    c->over_cap = 1;
    atl_turn_fail(&c->turn,
                  "the model's answer passed %zu bytes of text, thinking and "
                  "tool-call arguments in one turn (agent.max_turn_bytes), "
                  "so it was cut off there; raise max_turn_bytes in the "
                  "[agent] section of atelierd.conf to allow longer answers, "
                  "or ask for a shorter one",
                  c->max_bytes);
    return 1;
  }
  return 0;
}

int atl_agent_call_data(const char *data, size_t len, void *user) {
  atl_agent_call_t *c = user;
  if (c->stop != NULL && *c->stop)
    return 1; /* stop listening: the call ends as soon as it can */
  if (c->first_byte_ns == 0 && len > 0) {
    c->first_byte_ns = atl_mono_ns();
    if (c->trace_session != NULL && atl_trace_wants(ATL_TR_TURN)) {
      json_object *f = json_object_new_object();
      json_object_object_add(
          f, "ms",
          json_object_new_int64(
              (int64_t)((c->first_byte_ns - c->started_ns) / 1000000u)));
      atl_trace_emit(ATL_TR_TURN, c->trace_session, "first_byte", f);
    }
  }
  size_t keep = sizeof(c->raw) - 1 - c->raw_len;
  if (keep > len)
    keep = len;
  memcpy(c->raw + c->raw_len, data, keep);
  c->raw_len += keep;
  c->raw[c->raw_len] = '\0';
  return atl_sse_feed(&c->sse, data, len, sse_event, c) != 0;
}

char *atl_agent_call_said(const atl_agent_call_t *c,
                          const atl_http_response_t *r) {
  if (c->ops->error_message == NULL)
    return NULL;
  if (r->body_len > 0)
    return c->ops->error_message(r->body, r->body_len);
  return c->raw_len > 0 ? c->ops->error_message(c->raw, c->raw_len) : NULL;
}

int atl_agent_call_start(atl_agent_call_t *c, atl_daemon_t *d,
                         const atl_provider_req_t *req, uint32_t timeout_ms,
                         atl_http_done_cb done) {
  atl_http_request_t hr = {.struct_size = sizeof(hr),
                           .method = "POST",
                           .url = req->url,
                           .headers = (const char *const *)req->headers,
                           .body = req->body,
                           .body_len = strlen(req->body),
                           .timeout_ms = timeout_ms};
  c->max_bytes = d->cfg->max_turn_bytes;
  return atl_http_request(d->http, &hr, atl_agent_call_data, done, c);
}

void atl_agent_call_free(atl_agent_call_t *c) {
  if (c->ops != NULL && c->ops->turn_free != NULL)
    c->ops->turn_free(&c->turn);
  atl_turn_free(&c->turn);
  atl_sse_free(&c->sse);
}
