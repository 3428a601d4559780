/* Fuzz target: a provider's answer as it comes off the network. The first
 * byte picks the provider (OpenAI, Anthropic, Gemini) and how the rest is
 * cut into pieces; the rest goes through the SSE parser in those pieces
 * and into the provider's event parser, then becomes a history message,
 * which goes back into the provider's request form (a piece, which must
 * splice into a JSON list). No crash, no leak, whatever the bytes. */
#include <stdint.h>
#include <stdlib.h>

#include <json-c/json.h>

#include "agent/sse.h"
#include "providers/provider.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_event(const char *event, const char *d, size_t len, void *user) {
  atl_turn_t *t = user;
  const atl_provider_ops_t *ops = t->user;
  return ops->event(t, event, d, len) != 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const atl_provider_ops_t *const all[] = {
      &atl_provider_openai, &atl_provider_anthropic, &atl_provider_gemini};
  if (size == 0)
    return 0;
  const atl_provider_ops_t *ops = all[data[0] % 3];
  size_t piece = 1 + data[0] / 3 % 64;
  atl_turn_t t;
  atl_turn_init(&t);
  t.user = (void *)ops;
  atl_sse_t p;
  atl_sse_init(&p, 1 << 20);
  const char *s = (const char *)data + 1;
  size_t n = size - 1;
  for (size_t i = 0; i < n; i += piece)
    if (atl_sse_feed(&p, s + i, n - i < piece ? n - i : piece, on_event, &t) !=
        0)
      break;
  json_object *m = atl_turn_message(&t);
  atl_provider_piece_t pc;
  if (ops->piece(m, &pc) == 0) {
    atl_strbuf_t b = {0};
    atl_sb_adds(&b, "[");
    atl_provider_join(ops, &pc, 1, &b);
    atl_sb_adds(&b, "]");
    char *text = atl_sb_take(&b);
    /* Arguments nest as deep as the stream's JSON may; the piece adds a
     * few levels, so the check allows more than json-c's default 32. */
    json_tokener *tok = json_tokener_new_ex(256);
    json_object *back =
        text && tok ? json_tokener_parse_ex(tok, text, -1) : NULL;
    json_tokener_free(tok);
    if (text != NULL && back == NULL)
      abort(); /* the request would not be JSON */
    json_object_put(back);
    free(text);
    atl_provider_piece_free(&pc);
  }
  json_object_put(m);
  char *msg = ops->error_message(s, n);
  free(msg);
  atl_sse_free(&p);
  if (ops->turn_free != NULL)
    ops->turn_free(&t);
  atl_turn_free(&t);
  return 0;
}
