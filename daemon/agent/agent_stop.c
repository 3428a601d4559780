/* How a model's turn ended, acted on (agent_int.h: atl__agent_stop).
 *
 * Every provider says why an answer stopped, in its own words: the model
 * finished, it reached the output limit, it refused or a filter stopped it,
 * it wrote a call the provider could not parse, or the provider paused it.
 * Taking all of them for "finished" ended runs as completed with half an
 * answer, or none, and no word of why. Here:
 *   - cut at the limit: calls that came whole run, and a call cut inside
 *     its arguments gets an error saying so (agent.c); an answer of text
 *     only is continued, at most MAX_CONTINUATIONS times; an answer with
 *     nothing in it (the thinking took the whole allowance) ends the run
 *     with a run.error saying what to change;
 *   - refused or filtered: the run ends with a run.error {reason} that
 *     says which;
 *   - an unreadable call (Gemini's MALFORMED_FUNCTION_CALL): the model is
 *     told, and tries again, at most MAX_MALFORMED times;
 *   - paused (Anthropic's pause_turn): the turn is resumed.
 * Calls that will not run are answered anyway ("not run: ..."): every
 * provider refuses a call left without its result.
 */
#include "atl-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"

#define MAX_CONTINUATIONS 2
#define MAX_MALFORMED 2

static int has_text(json_object *msg) {
  json_object *parts;
  if (!json_object_object_get_ex(msg, "parts", &parts))
    return 0;
  for (size_t i = 0; i < json_object_array_length(parts); i++) {
    json_object *p = json_object_array_get_idx(parts, i);
    const char *type = atl_provider_str(p, "type");
    if (type != NULL && strcmp(type, "text") == 0 &&
        !atl_provider_blank(atl_provider_str(p, "text")))
      return 1;
  }
  return 0;
}

/* A word from the loop to the model, as a user message marked synthetic
 * (the page shows it as what it is, from the run.continued event). */
static void nudge(atl_agent_t *a, const char *reason, const char *text,
                  unsigned attempt) {
  json_object *m = atl__agent_text_message("user", text);
  json_object_object_add(m, "synthetic", json_object_new_string(reason));
  json_object *data = atl__agent_obj_str("reason", reason);
  json_object_object_add(data, "text", json_object_new_string(text));
  json_object_object_add(data, "attempt", json_object_new_int((int)attempt));
  atl__agent_commit(a, m, "run.continued", data);
}

/* Ends the run with a run.error of reason, answering the calls that will
 * not run. */
static void end(atl_agent_t *a, json_object *calls, const char *reason,
                const char *msg) {
  size_t n = calls ? json_object_array_length(calls) : 0;
  if (n > 0) {
    a->results = json_object_new_array();
    for (size_t i = 0; i < n; i++)
      atl__agent_add_result(
          a, json_object_array_get_idx(calls, i),
          atl__agent_error_envelope("not run: the run ended (%s)", reason));
    json_object *m = json_object_new_object();
    json_object_object_add(m, "role", json_object_new_string("tool"));
    if (a->tag != NULL)
      json_object_object_add(m, "provider", json_object_new_string(a->tag));
    json_object_object_add(m, "parts", a->results);
    a->results = NULL;
    json_object *data = json_object_new_object();
    json_object_object_add(data, "count", json_object_new_int((int)n));
    atl__agent_commit(a, m, "tool.results", data);
  }
  atl__agent_run_fail(a, reason, 0, msg);
}

static void refused(atl_agent_t *a, json_object *msg, json_object *calls,
                    const char *stop) {
  const char *said = atl_provider_str(msg, "stop_message");
  const char *who, *reason = "safety";
  if (strcmp(stop, "refusal") == 0) {
    who = "The model declined to answer";
    reason = "refusal";
  } else if (strcmp(stop, "content_filter") == 0) {
    who = "The provider's content filter stopped the answer";
  } else if (strcmp(stop, "prompt_blocked") == 0) {
    who = "The provider blocked the conversation before the model answered";
  } else if (strcmp(stop, "RECITATION") == 0) {
    who = "The provider stopped the answer for reciting protected text";
  } else {
    who = "The provider's safety filter stopped the answer";
  }
  char text[1200];
  snprintf(text, sizeof(text),
           "%s (%s)%s%.900s%s Rephrase the request, or "
           "start a new session if it keeps happening.",
           who, stop, said ? ": \"" : ".", said ? said : "", said ? "\"." : "");
  end(a, calls, reason, text);
}

int atl__agent_stop(atl_agent_t *a, json_object *msg, json_object *calls) {
  const atl_agent_provider_t *p = a->d->agent;
  const char *stop = atl_provider_str(msg, "stop_reason");
  size_t n = calls ? json_object_array_length(calls) : 0;
  char text[1024];
  switch (atl_turn_stop_kind(stop)) {
  case ATL_STOP_REFUSAL:
    refused(a, msg, calls, stop);
    return 1;
  case ATL_STOP_LENGTH:
    if (n > 0)
      return 0; /* the calls run; one cut short says so (agent.c) */
    if (!has_text(msg)) {
      snprintf(text, sizeof(text),
               "The model used its whole output allowance (max_tokens %u, "
               "thinking included) without answering. Raise max_tokens in "
               "[provider.%s] of atelierd.conf, or ask for less at once.",
               p->cfg.max_tokens, p->cfg.name);
      atl__agent_run_fail(a, "max_tokens", 0, text);
      return 1;
    }
    /* The window was full, not the answer's allowance: later requests
     * are held to less than this one. */
    if (strcmp(stop, "model_context_window_exceeded") == 0) {
      atl_agent_request_cache_t *c = &a->req_cache;
      uint64_t lower = c->last_estimate - c->last_estimate / 4;
      c->ceiling = c->ceiling && c->ceiling < lower ? c->ceiling : lower;
    }
    if (a->continuations >= MAX_CONTINUATIONS ||
        a->turns >= a->d->cfg->max_turns) {
      snprintf(text, sizeof(text),
               "The answer was cut off at the output limit (max_tokens %u) "
               "%u times in a row; raise max_tokens in [provider.%s] of "
               "atelierd.conf, or ask for less at once.",
               p->cfg.max_tokens, a->continuations + 1, p->cfg.name);
      atl__agent_run_fail(a, "max_tokens", 0, text);
      return 1;
    }
    nudge(a, "max_tokens",
          "(Your answer was cut off at the output limit. Continue exactly "
          "where it stopped, without repeating anything.)",
          ++a->continuations);
    atl__agent_turn_start(a);
    return 1;
  case ATL_STOP_MALFORMED: {
    if (n > 0)
      return 0;
    const char *said = atl_provider_str(msg, "stop_message");
    if (a->malformed >= MAX_MALFORMED || a->turns >= a->d->cfg->max_turns) {
      snprintf(text, sizeof(text),
               "The model's tool calls could not be read %u times in a row "
               "(%s)%s%.600s. Try again, or rephrase the request.",
               a->malformed + 1, stop, said ? ": " : "", said ? said : "");
      atl__agent_run_fail(a, "malformed_function_call", 0, text);
      return 1;
    }
    snprintf(text, sizeof(text),
             "(Your last tool call could not be read (%s)%s%.600s, so nothing "
             "ran. Call the tool again with arguments that are valid JSON and "
             "follow its schema.)",
             stop, said ? ": " : "", said ? said : "");
    nudge(a, "malformed_function_call", text, ++a->malformed);
    atl__agent_turn_start(a);
    return 1;
  }
  case ATL_STOP_PAUSE: {
    if (n > 0 || a->continuations >= MAX_CONTINUATIONS ||
        a->turns >= a->d->cfg->max_turns)
      return 0;
    /* The paused answer is in the history; sent back as the last
     * message, the model resumes it. */
    json_object *data = atl__agent_obj_str("reason", "pause_turn");
    json_object_object_add(data, "attempt",
                           json_object_new_int((int)++a->continuations));
    atl__agent_emit(a, "run.continued", data);
    atl__agent_turn_start(a);
    return 1;
  }
  default:
    return 0;
  }
}
