/* provider.check (agent.h: atl_agent_check): does the configured provider
 * take Atelier's requests? One small request, with the system prompt and
 * every tool as a real turn sends them, asking for a one-word answer; what
 * comes back says whether the key works, whether the tool list was taken
 * (a refused tool fails the whole request, and the provider's message
 * names it by its place in the list, which is mapped back to its name),
 * and what the model answered. Against a real key it tells a user in
 * seconds whether Atelier will work with that provider.
 */
#include "atl-build.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "log.h"

typedef struct {
  atl_agent_call_t call; /* first: the HTTP data callback's user */
  atl_daemon_t *d;
  atl_agent_provider_t p; /* the provider checked (owned) */
  char *model;
  uint64_t started_ns;
  size_t n_tools;
  void (*done)(atl_daemon_t *d, json_object *report, void *user);
  void *user;
} check_t;

static json_object *verdict(int ok, const char *message) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "ok", json_object_new_boolean(ok));
  if (message != NULL)
    json_object_object_add(o, "message", json_object_new_string(message));
  return o;
}

static json_object *report_of(check_t *k) {
  json_object *r = json_object_new_object();
  const atl_agent_provider_t *p = &k->p;
  json_object_object_add(
      r, "provider", p->cfg.name ? json_object_new_string(p->cfg.name) : NULL);
  json_object_object_add(
      r, "type", p->cfg.type ? json_object_new_string(p->cfg.type) : NULL);
  json_object_object_add(r, "model",
                         k->model ? json_object_new_string(k->model) : NULL);
  /* The URL without what could be a credential (user:password@, a
   * query's key=...). */
  char url[512] = "";
  if (p->base_url != NULL) {
    const char *u = p->base_url, *scheme = strstr(u, "://");
    const char *host = scheme ? scheme + 3 : u, *at = strchr(host, '@');
    const char *slash = strchr(host, '/');
    if (at != NULL && (slash == NULL || at < slash))
      host = at + 1;
    snprintf(url, sizeof(url), "%.*s%.*s", scheme ? (int)(scheme + 3 - u) : 0,
             u, (int)strcspn(host, "?#"), host);
  }
  json_object_object_add(r, "base_url",
                         p->base_url ? json_object_new_string(url) : NULL);
  return r;
}

static void finish(check_t *k, json_object *r) {
  k->done(k->d, r, k->user);
  atl_agent_provider_clear(&k->p);
  free(k->model);
  free(k);
}

/* The tool a provider's refusal names by its place in the list
 * ("tools.3.custom.input_schema", "tools[3].function",
 * "function_declarations[3]") or by name ("function 'create_shape'"), or
 * NULL. */
static const char *tool_named(atl_daemon_t *d, const char *msg) {
  /* Gemini's path names the tools block first ("tools[0].function_
   * declarations[13]"): the declaration's place is the tool's. */
  static const char *const at[] = {"function_declarations[", "tools.", "tools[",
                                   NULL};
  for (size_t i = 0; msg != NULL && at[i] != NULL; i++) {
    const char *s = strstr(msg, at[i]);
    if (s == NULL || !isdigit((unsigned char)s[strlen(at[i])]))
      continue;
    size_t n = strtoul(s + strlen(at[i]), NULL, 10);
    json_object *t = json_object_array_get_idx(d->tools_json, n);
    return t ? atl_provider_str(t, "name") : NULL;
  }
  const char *f = msg ? strstr(msg, "function '") : NULL;
  if (f != NULL) {
    f += strlen("function '");
    for (size_t i = 0; i < json_object_array_length(d->tools_json); i++) {
      const char *name =
          atl_provider_str(json_object_array_get_idx(d->tools_json, i), "name");
      size_t n = name ? strlen(name) : 0;
      if (n > 0 && strncmp(f, name, n) == 0 && f[n] == '\'')
        return name;
    }
  }
  return NULL;
}

static void answered(const atl_http_response_t *res, void *user) {
  check_t *k = user;
  atl_turn_t *turn = &k->call.turn;
  json_object *r = report_of(k);
  char *said =
      res->http_code >= 300 ? atl_agent_call_said(&k->call, res) : NULL;
  int ok = 0;
  if (res->status < 0) {
    char msg[512];
    snprintf(msg, sizeof(msg), "the provider could not be reached: %s",
             res->error ? res->error : "connection failed");
    json_object_object_add(r, "key", verdict(0, msg));
  } else {
    json_object_object_add(r, "status",
                           json_object_new_int((int)res->http_code));
    int key_refused =
        res->http_code == 401 || res->http_code == 403 ||
        (said != NULL && strstr(said, "API key not valid") != NULL);
    if (key_refused) {
      json_object_object_add(r, "key", verdict(0, said ? said : "refused"));
    } else {
      json_object_object_add(r, "key", verdict(1, NULL));
      char count[64];
      snprintf(count, sizeof(count), "all %zu accepted", k->n_tools);
      const char *tool = res->http_code >= 400 ? tool_named(k->d, said) : NULL;
      if (res->http_code >= 400 &&
          (tool != NULL ||
           (said != NULL && (strstr(said, "schema") || strstr(said, "tool") ||
                             strstr(said, "function"))))) {
        json_object *t = verdict(0, said);
        if (tool != NULL)
          json_object_object_add(t, "tool", json_object_new_string(tool));
        json_object_object_add(r, "tools", t);
      } else if (res->http_code >= 300) {
        /* Refused for something else (an unknown model, a rate limit):
         * the tools were not what was checked. */
        char msg[600];
        snprintf(msg, sizeof(msg), "HTTP %ld: %s", res->http_code,
                 said ? said : "(no message)");
        json_object_object_add(r, "request", verdict(0, msg));
      } else {
        json_object *t = verdict(1, count);
        json_object_object_add(t, "count",
                               json_object_new_int64((int64_t)k->n_tools));
        json_object_object_add(r, "tools", t);
        json_object *a = json_object_new_object();
        ok = turn->error == NULL && turn->done;
        json_object_object_add(
            a, "text", json_object_new_string(turn->text ? turn->text : ""));
        if (turn->stop_reason != NULL)
          json_object_object_add(a, "stop_reason",
                                 json_object_new_string(turn->stop_reason));
        if (turn->error != NULL)
          json_object_object_add(a, "error",
                                 json_object_new_string(turn->error));
        json_object_object_add(
            a, "latency_ms",
            json_object_new_int64(
                (int64_t)((atl_mono_ns() - k->started_ns) / 1000000u)));
        json_object_object_add(a, "input_tokens",
                               json_object_new_int64(turn->input_tokens));
        json_object_object_add(a, "output_tokens",
                               json_object_new_int64(turn->output_tokens));
        json_object_object_add(r, "answer", a);
      }
    }
  }
  free(said);
  json_object_object_add(r, "ok", json_object_new_boolean(ok));
  atl_agent_call_free(&k->call);
  atl_log_kv(ok ? ATL_LOG_INFO : ATL_LOG_WARN, "provider checked", "provider",
             k->p.cfg.name, "ok", ok ? "yes" : "no", NULL);
  finish(k, r);
}

void atl_agent_check(atl_daemon_t *d, const char *name, const char *model,
                     void (*done)(atl_daemon_t *d, json_object *report,
                                  void *user),
                     void *user) {
  check_t *k = calloc(1, sizeof(*k));
  if (k == NULL) {
    done(d, NULL, user);
    return;
  }
  k->d = d;
  k->done = done;
  k->user = user;
  atl_agent_provider_resolve(d, name, &k->p);
  k->model = model ? strdup(model) : k->p.model ? strdup(k->p.model) : NULL;
  if (k->p.ops == NULL) {
    json_object *r = report_of(k);
    json_object_object_add(r, "ok", json_object_new_boolean(0));
    json_object_object_add(
        r, "key",
        verdict(0, k->p.replay ? "a replay provider has no model to check"
                   : k->p.why_offline ? k->p.why_offline
                                      : "no provider"));
    finish(k, r);
    return;
  }
  k->n_tools = d->tools_json ? json_object_array_length(d->tools_json) : 0;
  if (k->n_tools > 0)
    k->p.tools_text = k->p.ops->tools_text(d->tools_json);
  /* As little as can be asked: a few words, the least thinking. */
  k->p.cfg.max_tokens = 64;
  k->p.cfg.thinking_budget = 0;
  k->p.cfg.thinking_set = 1;
  /* The message, the system prompt of an empty session and the real tool
   * list, as the loop's requests carry them. */
  json_object *m = json_object_new_object(), *parts = json_object_new_array(),
              *part = json_object_new_object();
  json_object_object_add(part, "type", json_object_new_string("text"));
  json_object_object_add(
      part, "text",
      json_object_new_string("This is a check of the connection (atelierctl "
                             "provider check). Answer with the one word ok, "
                             "and call no tool."));
  json_object_array_add(parts, part);
  json_object_object_add(m, "role", json_object_new_string("user"));
  json_object_object_add(m, "parts", parts);
  atl_provider_piece_t piece;
  atl_strbuf_t msgs = {0};
  atl_provider_req_t req;
  int rc = k->p.ops->piece(m, &piece);
  json_object_put(m);
  if (rc == 0) {
    rc = atl_provider_join(k->p.ops, &piece, 1, &msgs);
    atl_provider_piece_free(&piece);
  }
  char *mt = atl_sb_take(&msgs), *system = atl_agent_system_prompt(d, NULL);
  if (rc == 0 && (mt == NULL || system == NULL))
    rc = ATL_ENOMEM;
  if (rc == 0)
    rc = k->p.ops->request(&k->p.cfg, k->model ? k->model : "", system, mt,
                           k->p.tools_text, &req);
  free(mt);
  free(system);
  if (rc != 0) {
    json_object *r = report_of(k);
    json_object_object_add(r, "ok", json_object_new_boolean(0));
    json_object_object_add(r, "key",
                           verdict(0, "the request could not be built"));
    finish(k, r);
    return;
  }
  atl_agent_call_init(&k->call, k->p.ops, NULL);
  k->started_ns = atl_mono_ns();
  rc = atl_agent_call_start(&k->call, d, &req, k->p.cfg.timeout_ms, answered);
  atl_provider_req_free(&req);
  if (rc != 0) {
    atl_agent_call_free(&k->call);
    json_object *r = report_of(k);
    json_object_object_add(r, "ok", json_object_new_boolean(0));
    json_object_object_add(r, "key",
                           verdict(0, "the request could not be started"));
    finish(k, r);
  }
}
