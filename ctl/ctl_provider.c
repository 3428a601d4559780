/* atelierctl provider check [NAME] [--model M] [--json]: asks atelierd to
 * send the provider one small request with the real tool list
 * (provider.check, doc/api.md), and prints the verdict a line a question:
 * is it reachable and does the key work, is every tool taken, what did the
 * model answer. Exit 0 when all three are yes, 1 when the provider refused
 * something, 2 when atelierd could not be asked. */
#include "atl-build.h"

#include <stdio.h>
#include <string.h>

#include "ctl.h"

static json_object *member(json_object *o, const char *key) {
  json_object *v = NULL;
  return o != NULL && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static const char *text(json_object *o, const char *key) {
  json_object *v = member(o, key);
  return json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                  : NULL;
}

static int yes(json_object *o) {
  return json_object_get_boolean(member(o, "ok"));
}

/* A provider's answer on one line, quoted and cut short. */
static void print_answer(json_object *a) {
  const char *t = text(a, "text");
  printf("answer   ");
  if (t == NULL || *t == '\0')
    printf("(no text)");
  else {
    putchar('"');
    for (size_t i = 0; t[i] != '\0' && i < 120; i++)
      putchar(t[i] == '\n' || t[i] == '\r' ? ' ' : t[i]);
    printf("%s\"", strlen(t) > 120 ? "..." : "");
  }
  const char *stop = text(a, "stop_reason"), *err = text(a, "error");
  printf(" (%s%s%lld ms, %lld tokens in, %lld out)", stop ? stop : "",
         stop ? ", " : "",
         (long long)json_object_get_int64(member(a, "latency_ms")),
         (long long)json_object_get_int64(member(a, "input_tokens")),
         (long long)json_object_get_int64(member(a, "output_tokens")));
  if (err != NULL)
    printf("; the stream was broken: %s", err);
  putchar('\n');
}

int ctl_cmd_provider(int argc, char **argv) {
  if (argc < 1 || strcmp(argv[0], "check") != 0 || argc > 2)
    return ctl_usage_error("%s", "usage: atelierctl provider check [NAME] "
                                 "[--model MODEL] [--json]");
  json_object *p = json_object_new_object(), *r = NULL;
  if (argc == 2)
    json_object_object_add(p, "provider", json_object_new_string(argv[1]));
  if (ctl_model() != NULL)
    json_object_object_add(p, "model", json_object_new_string(ctl_model()));
  /* The daemon answers within the provider's own timeout_ms (at most an
   * hour): atelierctl waits that long, not its usual minute. */
  if (ctl_connect() != 0 ||
      ctl_request_wait("provider.check", p, 3660000, &r) != 0)
    return EXIT_USAGE;
  if (ctl_json_output()) {
    ctl_print_json(stdout, r);
    int ok = yes(r);
    json_object_put(r);
    return ok ? 0 : EXIT_TOOL_FAILED;
  }
  const char *name = text(r, "provider"), *type = text(r, "type"),
             *model = text(r, "model"), *url = text(r, "base_url");
  if (name != NULL)
    printf("provider %s: %s, model %s, %s\n", name, type ? type : "?",
           model ? model : "?", url ? url : "");
  json_object *key = member(r, "key"), *tools = member(r, "tools"),
              *answer = member(r, "answer");
  if (key != NULL && yes(key))
    printf("key      ok\n");
  else
    printf("key      REFUSED: %s\n",
           text(key, "message") ? text(key, "message") : "(no reason)");
  json_object *request = member(r, "request");
  if (request != NULL)
    printf("request  REFUSED: %s\n", text(request, "message"));
  if (tools == NULL)
    printf("tools    not checked\n");
  else if (yes(tools))
    printf("tools    ok: %s\n", text(tools, "message"));
  else if (text(tools, "tool") != NULL)
    printf("tools    REFUSED: the tool %s: %s\n", text(tools, "tool"),
           text(tools, "message"));
  else
    printf("tools    REFUSED: %s\n", text(tools, "message"));
  if (answer != NULL)
    print_answer(answer);
  else
    printf("answer   none\n");
  int ok = yes(r);
  printf("verdict  %s\n", ok ? "Atelier will work with this provider"
                             : "Atelier will NOT work with this provider as "
                               "configured");
  json_object_put(r);
  return ok ? 0 : EXIT_TOOL_FAILED;
}
