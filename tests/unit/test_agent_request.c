/* The agent's request cache (daemon/agent/agent_request.c): whatever the
 * history, each turn's request must be byte for byte the one
 * atl_provider_build makes from scratch, for every provider, as the
 * history grows turn by turn, with a tool's images attached for one
 * request only, with roles that merge, and after the history is replaced
 * or the document changes. */
#include "atl-build.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atelier/error.h>

#include "agent/agent.h"

static json_object *parse(const char *text) {
  json_object *o = json_tokener_parse(text);
  cr_assert_not_null(o, "%s", text);
  return o;
}

/* The messages of a conversation, in the order a run adds them. The tool
 * message with an image is followed by a model turn, so its image goes
 * with one request only; a user message right after a tool message
 * merges with it for Anthropic and Gemini. */
static const char *const STEPS[] = {
    "{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"a red "
    "ball, \\\"quoted\\\" \\u00e9\"}]}",
    "{\"role\":\"model\",\"parts\":[{\"type\":\"thinking\",\"text\":\"hm\","
    "\"signature\":\"sig1\"},{\"type\":\"text\",\"text\":\"Adding it.\"},"
    "{\"type\":\"tool_call\",\"id\":\"c1\",\"name\":\"create_shape\","
    "\"arguments\":{\"id\":\"ball\"}},{\"type\":\"tool_call\",\"id\":\"c2\","
    "\"name\":\"render\",\"arguments\":{}}]}",
    "{\"role\":\"tool\",\"parts\":[{\"type\":\"tool_result\",\"id\":\"c1\","
    "\"name\":\"create_shape\",\"result\":{\"success\":false,\"error\":\"/"
    "type: missing\"},\"is_error\":true},{\"type\":\"tool_result\",\"id\":"
    "\"c2\",\"name\":\"render\",\"result\":{\"success\":true},\"is_error\":"
    "false,\"images\":[{\"id\":\"img1\",\"mime\":\"image/png\"}]}]}",
    "{\"role\":\"model\",\"parts\":[{\"type\":\"text\",\"text\":\"Done.\"}]}",
    "{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"again\"}]}",
    "{\"role\":\"model\",\"parts\":[{\"type\":\"tool_call\",\"id\":\"c3\","
    "\"name\":\"render\",\"arguments\":{}}]}",
    "{\"role\":\"tool\",\"parts\":[{\"type\":\"tool_result\",\"id\":\"c3\","
    "\"name\":\"render\",\"result\":{\"success\":true},\"is_error\":false,"
    "\"images\":[{\"id\":\"img2\",\"mime\":\"image/png\"}]}]}",
    "{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"and "
    "now?\"}]}",
};
#define N_STEPS (sizeof(STEPS) / sizeof(STEPS[0]))

static const char *const TOOLS =
    "[{\"name\":\"create_shape\",\"description\":\"Create a shape.\","
    "\"input_schema\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":"
    "\"string\"}}}},{\"name\":\"render\",\"input_schema\":{\"type\":"
    "\"object\"}}]";

typedef struct {
  atl_daemon_t d;
  atl_agent_provider_t p;
  json_object *tools;
} fixture_t;

static void setup(fixture_t *f, const atl_provider_ops_t *ops) {
  memset(f, 0, sizeof(*f));
  f->p.ops = ops;
  f->p.cfg = (atl_provider_cfg_t){.name = "x",
                                  .type = ops->type,
                                  .base_url = "http://127.0.0.1:9",
                                  .api_key = "k",
                                  .max_tokens = 100};
  f->p.prompt = strdup("You build scenes.\nCURRENT SCENE:\n%s\nEnd.");
  f->tools = parse(TOOLS);
  f->p.tools_text = ops->tools_text(f->tools);
  cr_assert_not_null(f->p.tools_text);
  f->d.agent = &f->p;
}

static void teardown(fixture_t *f) {
  free(f->p.prompt);
  free(f->p.tools_text);
  json_object_put(f->tools);
}

/* The refs a run would load for the history's newest tool message, with
 * their bytes. */
static json_object *refs_for(json_object *history) {
  json_object *refs = atl_agent_newest_images(history);
  for (size_t i = 0; i < json_object_array_length(refs); i++)
    json_object_object_add(json_object_array_get_idx(refs, i), "data",
                           json_object_new_string("iVBORw0K"));
  return refs;
}

/* history is the agent's (its sent messages become null); full has the
 * same messages, whole, for the reference build. */
static void expect_same(fixture_t *f, atl_agent_request_cache_t *c,
                        json_object *doc, json_object *history,
                        json_object *full, const char *model) {
  json_object *refs = refs_for(full);
  atl_provider_req_t got, want;
  cr_assert_eq(atl_agent_request(&f->d, c, model, doc, history, refs, &got), 0);
  char *system = atl_agent_system_prompt(&f->d, doc);
  size_t last = json_object_array_length(full) - 1;
  atl_agent_attach_images(full, refs, 1, last);
  cr_assert_eq(atl_provider_build(f->p.ops, &f->p.cfg, model, system, full,
                                  f->tools, &want),
               0);
  atl_agent_attach_images(full, refs, 0, last);
  cr_assert_str_eq(got.body, want.body, "%s: %zu messages", f->p.ops->type,
                   json_object_array_length(history));
  cr_assert_str_eq(got.url, want.url);
  for (size_t i = 0; i < 8; i++)
    cr_assert_str_eq(got.headers[i] ? got.headers[i] : "",
                     want.headers[i] ? want.headers[i] : "");
  /* The request is JSON, and the images went with it exactly when the
   * newest message carries them. */
  json_object *body = json_tokener_parse(got.body);
  cr_assert_not_null(body, "%s", got.body);
  json_object_put(body);
  int has_image = strstr(got.body, "iVBORw0K") != NULL;
  cr_assert_eq(has_image, json_object_array_length(refs) > 0, "%s", got.body);
  free(system);
  json_object_put(refs);
  atl_provider_req_free(&got);
  atl_provider_req_free(&want);
}

static void grow_and_compare(const atl_provider_ops_t *ops) {
  fixture_t f;
  setup(&f, ops);
  atl_agent_request_cache_t c = {0};
  json_object *doc = json_object_new_object();
  json_object *history = json_object_new_array();
  json_object *full = json_object_new_array();
  expect_same(&f, &c, doc, history, full, "m1");
  for (size_t i = 0; i < N_STEPS; i++) {
    json_object_array_add(history, parse(STEPS[i]));
    json_object_array_add(full, parse(STEPS[i]));
    /* Twice per step: a retried call reuses everything. */
    expect_same(&f, &c, doc, history, full, "m1");
    expect_same(&f, &c, doc, history, full, i % 2 ? "m2" : "m1");
    /* What was rendered is no longer held as a tree; the newest tool
     * message with its image is, until it has gone once. */
    for (size_t k = 0; k <= i; k++)
      cr_assert_eq(json_object_array_get_idx(history, k) == NULL,
                   k < c.n_pieces, "message %zu of %zu", k, i + 1);
  }
  cr_assert_eq(c.n_pieces, N_STEPS);

  /* A new document: the system prompt follows it. */
  json_object *doc2 = json_object_new_object();
  json_object_object_add(doc2, "scene", json_object_new_object());
  expect_same(&f, &c, doc2, history, full, "m1");
  json_object_put(doc);

  /* The history reloaded (another object, fewer messages): nothing of
   * the old one is reused. */
  json_object *reloaded = json_object_new_array();
  json_object *reloaded_full = json_object_new_array();
  for (size_t i = 0; i < 3; i++) {
    json_object_array_add(reloaded, parse(STEPS[i]));
    json_object_array_add(reloaded_full, parse(STEPS[i]));
  }
  expect_same(&f, &c, doc2, reloaded, reloaded_full, "m1");
  cr_assert_eq(c.n_pieces, 2, "the tool message with its image is not kept");

  atl_agent_request_cache_free(&c);
  json_object_put(doc2);
  json_object_put(history);
  json_object_put(full);
  json_object_put(reloaded);
  json_object_put(reloaded_full);
  teardown(&f);
}

Test(agent_request, openai_matches_a_full_build) {
  grow_and_compare(&atl_provider_openai);
}

Test(agent_request, anthropic_matches_a_full_build) {
  grow_and_compare(&atl_provider_anthropic);
}

Test(agent_request, gemini_matches_a_full_build) {
  grow_and_compare(&atl_provider_gemini);
}

/* The system prompt is the template with the scene: checked once here
 * since the cache keeps it between turns. */
Test(agent_request, the_system_prompt_is_kept_per_document) {
  fixture_t f;
  setup(&f, &atl_provider_anthropic);
  atl_agent_request_cache_t c = {0};
  json_object *doc = json_object_new_object(), *h = json_object_new_array();
  json_object_array_add(h, parse(STEPS[0]));
  atl_provider_req_t r;
  cr_assert_eq(atl_agent_request(&f.d, &c, "m", doc, h, NULL, &r), 0);
  cr_assert_not_null(strstr(r.body, "\"system\":\"You build scenes.\\n"
                                    "CURRENT SCENE:\\n(empty)\\nEnd.\""),
                     "%s", r.body);
  char *first = c.system;
  atl_provider_req_free(&r);
  cr_assert_eq(atl_agent_request(&f.d, &c, "m", doc, h, NULL, &r), 0);
  cr_assert_eq(c.system, first, "the same document: the same prompt");
  atl_provider_req_free(&r);
  atl_agent_request_cache_free(&c);
  json_object_put(doc);
  json_object_put(h);
  teardown(&f);
}

/* A run of a user message, a call and a result of size bytes. */
static void add_run(json_object *h, int i, size_t size) {
  char *big = malloc(size + 1);
  memset(big, 'x', size);
  big[size] = '\0';
  char buf[256];
  snprintf(buf, sizeof(buf),
           "{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":"
           "\"run %d\"}]}",
           i);
  json_object_array_add(h, parse(buf));
  snprintf(buf, sizeof(buf),
           "{\"role\":\"model\",\"parts\":[{\"type\":\"tool_call\",\"id\":"
           "\"c%d\",\"name\":\"render\",\"arguments\":{}}]}",
           i);
  json_object_array_add(h, parse(buf));
  json_object *t = json_object_new_object(), *parts = json_object_new_array(),
              *p = json_object_new_object(), *env = json_object_new_object();
  json_object_object_add(env, "success", json_object_new_boolean(1));
  json_object_object_add(env, "result", json_object_new_string(big));
  json_object_object_add(p, "type", json_object_new_string("tool_result"));
  snprintf(buf, sizeof(buf), "c%d", i);
  json_object_object_add(p, "id", json_object_new_string(buf));
  json_object_object_add(p, "name", json_object_new_string("render"));
  json_object_object_add(p, "result", env);
  json_object_array_add(parts, p);
  json_object_object_add(t, "role", json_object_new_string("tool"));
  json_object_object_add(t, "parts", parts);
  json_object_array_add(h, t);
  free(big);
}

/* The window: under the budget the request is the full one; past it the
 * results of earlier runs go short (the newest whole), then all but the
 * newest; past that, ATL_E2BIG (the loop summarises). */
Test(agent_request,
     the_window_shortens_earlier_results_then_asks_for_a_summary) {
  fixture_t f;
  setup(&f, &atl_provider_openai);
  /* 4000 tokens, less 100 for the answer and 2 %: 3822 tokens, about
   * 11,400 bytes at 3 bytes a token. */
  f.p.cfg.context_tokens = 4000;
  cr_assert_eq(atl_agent_budget(&f.d, &(atl_agent_request_cache_t){0}, "m"),
               3822);
  atl_agent_request_cache_t c = {0};
  json_object *doc = json_object_new_object(), *h = json_object_new_array();
  add_run(h, 1, 3000);
  add_run(h, 2, 3000);
  atl_provider_req_t r;
  cr_assert_eq(atl_agent_request(&f.d, &c, "m", doc, h, NULL, &r), 0);
  cr_assert(strstr(r.body, "left_out") == NULL, "it fits: all in full");
  cr_assert_eq(c.short_below, 0);
  atl_provider_req_free(&r);
  add_run(h, 3, 3000);
  add_run(h, 4, 3000);
  cr_assert_eq(atl_agent_request(&f.d, &c, "m", doc, h, NULL, &r), 0);
  /* Runs 1 to 3 short, run 4's result (the newest) in full. */
  cr_assert_eq(c.short_below, 9, "%zu", c.short_below);
  cr_assert(c.last_estimate <= c.last_budget);
  /* (A short form keeps 200 bytes of a result: 500 are a whole one.) */
  char whole[501];
  memset(whole, 'x', 500);
  whole[500] = '\0';
  const char *full = strstr(r.body, whole), *run4 = strstr(r.body, "run 4");
  cr_assert(full != NULL && run4 != NULL && full > run4,
            "the one whole result is the newest");
  cr_assert(strstr(full + 3000, whole) == NULL, "and the only one");
  size_t shorts = 0;
  for (const char *s = strstr(r.body, "left_out"); s;
       s = strstr(s + 1, "left_out"))
    shorts++;
  cr_assert_eq(shorts, 3, "%s", r.body);
  atl_provider_req_free(&r);
  /* A newest result larger than the window: nothing short enough. */
  add_run(h, 5, 30000);
  cr_assert_eq(atl_agent_request(&f.d, &c, "m", doc, h, NULL, &r), ATL_E2BIG);
  cr_assert(c.last_estimate > c.last_budget);
  atl_agent_request_cache_free(&c);
  json_object_put(doc);
  json_object_put(h);
  teardown(&f);
}
