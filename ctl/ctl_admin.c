/* atelierctl admin ... and atelierctl trace: the admin socket
 * (doc/admin.md) from the command line. Tables for people, --json for
 * scripts; trace prints one line per thing that happens, coloured on a
 * terminal, until the daemon ends it, the --seconds run out, or Ctrl-C.
 */
#include "atl-build.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"

static json_object *obj_get(json_object *o, const char *k) {
  json_object *v = NULL;
  return json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static const char *str_or(json_object *o, const char *k, const char *dflt) {
  json_object *v = obj_get(o, k);
  return v && !json_object_is_type(v, json_type_null)
             ? json_object_get_string(v)
             : dflt;
}

static int admin_request(const char *method, json_object *params,
                         json_object **out) {
  if (ctl_connect_admin() != 0) {
    json_object_put(params);
    return -1;
  }
  return ctl_request(method, params, out);
}

/* A request whose answer is printed as JSON. */
static int simple(const char *method, json_object *params) {
  json_object *r = NULL;
  if (admin_request(method, params, &r) != 0)
    return EXIT_USAGE;
  ctl_print_json(stdout, r);
  json_object_put(r);
  return 0;
}

static int print_sessions(void) {
  json_object *r = NULL;
  if (admin_request("sessions", NULL, &r) != 0)
    return EXIT_USAGE;
  if (ctl_json_output()) {
    ctl_print_json(stdout, r);
    json_object_put(r);
    return 0;
  }
  json_object *a = obj_get(r, "sessions");
  size_t n = a ? json_object_array_length(a) : 0;
  printf("%-32s  %-8s  %-18s  %6s  %9s  %9s  %s\n", "SESSION", "STATE", "TOOL",
         "TURNS", "TOKENS_IN", "TOKENS_OUT", "UPDATED");
  for (size_t i = 0; i < n; i++) {
    json_object *s = json_object_array_get_idx(a, i);
    json_object *ag = obj_get(s, "agent");
    printf("%-32s  %-8s  %-18s  %6s  %9s  %9s  %s\n", str_or(s, "id", "?"),
           str_or(s, "state", "?"), str_or(s, "tool", "-"),
           ag ? str_or(ag, "turns", "0") : "-",
           ag ? str_or(ag, "tokens_in", "0") : "-",
           ag ? str_or(ag, "tokens_out", "0") : "-", str_or(s, "updated", ""));
  }
  printf("%s loaded, %zu in all\n", str_or(r, "loaded", "0"), n);
  json_object_put(r);
  return 0;
}

static int print_clients(void) {
  json_object *r = NULL;
  if (admin_request("clients", NULL, &r) != 0)
    return EXIT_USAGE;
  if (ctl_json_output()) {
    ctl_print_json(stdout, r);
    json_object_put(r);
    return 0;
  }
  size_t n = json_object_array_length(r);
  printf("%6s  %-6s  %7s  %6s  %8s  %9s  %8s  %12s  %12s  %s\n", "ID", "SOCKET",
         "PID", "UID", "AGE_S", "REQUESTS", "PENDING", "BYTES_IN", "BYTES_OUT",
         "LAST");
  for (size_t i = 0; i < n; i++) {
    json_object *c = json_object_array_get_idx(r, i);
    printf("%6s  %-6s  %7s  %6s  %8.1f  %9s  %8s  %12s  %12s  %s%s\n",
           str_or(c, "id", "?"), str_or(c, "socket", "?"),
           str_or(c, "pid", "?"), str_or(c, "uid", "?"),
           json_object_get_double(obj_get(c, "age_s")),
           str_or(c, "requests", "0"), str_or(c, "pending", "0"),
           str_or(c, "bytes_in", "0"), str_or(c, "bytes_out", "0"),
           str_or(c, "last_method", ""),
           json_object_get_boolean(obj_get(c, "tracing")) ? " (tracing)" : "");
  }
  json_object_put(r);
  return 0;
}

static int print_metrics(void) {
  json_object *r = NULL;
  if (admin_request("metrics", NULL, &r) != 0)
    return EXIT_USAGE;
  fputs(str_or(r, "text", ""), stdout);
  json_object_put(r);
  return 0;
}

int ctl_cmd_admin(int argc, char **argv) {
  if (argc < 1)
    return ctl_usage_error("admin needs a command: info, stats, sessions, "
                           "session ID, clients, kill ID, plugins, log-level "
                           "[LEVEL], slowlog [get N|len|reset], metrics, "
                           "drain, undrain, shutdown [SECONDS]");
  const char *sub = argv[0];
  int want = 1; /* arguments the command takes, at most */
  if (!strcmp(sub, "session") || !strcmp(sub, "kill") ||
      !strcmp(sub, "cancel") || !strcmp(sub, "rm") ||
      !strcmp(sub, "log-level") || !strcmp(sub, "shutdown"))
    want = 2;
  if (!strcmp(sub, "slowlog"))
    want = 3;
  if (argc > want)
    return ctl_usage_error("too many arguments for admin %s", sub);
  const char *arg = argc > 1 ? argv[1] : NULL;
  json_object *p = NULL;
  if (!strcmp(sub, "info") || !strcmp(sub, "stats") || !strcmp(sub, "plugins"))
    return simple(sub, NULL);
  if (!strcmp(sub, "sessions"))
    return print_sessions();
  if (!strcmp(sub, "clients"))
    return print_clients();
  if (!strcmp(sub, "metrics"))
    return print_metrics();
  if (!strcmp(sub, "session") || !strcmp(sub, "cancel") || !strcmp(sub, "rm")) {
    if (arg == NULL)
      return ctl_usage_error("admin %s needs a session id", sub);
    p = json_object_new_object();
    json_object_object_add(p, "session", json_object_new_string(arg));
    return simple(!strcmp(sub, "session")  ? "session"
                  : !strcmp(sub, "cancel") ? "session.cancel"
                                           : "session.delete",
                  p);
  }
  if (!strcmp(sub, "kill")) {
    char *end = NULL;
    long long id = arg ? strtoll(arg, &end, 10) : 0;
    if (arg == NULL || *end != '\0' || id < 1)
      return ctl_usage_error("admin kill needs a client id (see admin "
                             "clients)");
    p = json_object_new_object();
    json_object_object_add(p, "id", json_object_new_int64(id));
    return simple("client.kill", p);
  }
  if (!strcmp(sub, "log-level")) {
    if (arg != NULL) {
      p = json_object_new_object();
      json_object_object_add(p, "level", json_object_new_string(arg));
    }
    return simple("log.level", p);
  }
  if (!strcmp(sub, "slowlog")) {
    const char *what = arg ? arg : "get";
    if (!strcmp(what, "len") || !strcmp(what, "reset")) {
      if (argc > 2)
        return ctl_usage_error("admin slowlog %s takes no count", what);
      return simple(!strcmp(what, "len") ? "slowlog.len" : "slowlog.reset",
                    NULL);
    }
    if (strcmp(what, "get") != 0)
      return ctl_usage_error("admin slowlog takes get [N], len or reset");
    if (argc > 2) {
      char *end = NULL;
      long long k = strtoll(argv[2], &end, 10);
      if (*end != '\0' || k < 1 || k > 100000)
        return ctl_usage_error("admin slowlog get takes a count from 1 to "
                               "100000");
      p = json_object_new_object();
      json_object_object_add(p, "count", json_object_new_int64(k));
    }
    return simple("slowlog.get", p);
  }
  if (!strcmp(sub, "drain") || !strcmp(sub, "undrain")) {
    p = json_object_new_object();
    json_object_object_add(p, "accept",
                           json_object_new_boolean(!strcmp(sub, "undrain")));
    return simple("accept_sessions", p);
  }
  if (!strcmp(sub, "shutdown")) {
    if (arg != NULL) {
      char *end = NULL;
      double t = strtod(arg, &end);
      if (*end != '\0' || !(t >= 0 && t <= 3600))
        return ctl_usage_error("admin shutdown takes the seconds in-flight "
                               "calls may take to finish, 0 to 3600");
      p = json_object_new_object();
      json_object_object_add(p, "timeout", json_object_new_double(t));
    }
    return simple("shutdown", p);
  }
  return ctl_usage_error("unknown admin command '%s'", sub);
}

/* ---- trace ---- */

static volatile sig_atomic_t stop_trace;
static void on_sigint(int sig) {
  (void)sig;
  stop_trace = 1;
}

/* How far a kind's lines are indented: a run holds turns, a turn's answer
 * holds tool calls, a call holds its events. */
static int indent_of(const char *kind) {
  if (!strcmp(kind, "turn") || !strcmp(kind, "commit"))
    return 2;
  if (!strcmp(kind, "tool") || !strcmp(kind, "render"))
    return 4;
  if (!strcmp(kind, "event"))
    return 6;
  return 0;
}

static const char *colour_of(const char *kind) {
  static const struct {
    const char *kind, *sgr;
  } c[] = {{"rpc", "36"},    {"run", "1;35"},  {"turn", "1;34"},
           {"tool", "1;32"}, {"commit", "33"}, {"render", "1;33"},
           {"event", "90"},  {"log", "37"}};
  for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
    if (!strcmp(kind, c[i].kind))
      return c[i].sgr;
  return "0";
}

/* Text from the daemon that may hold anything a client sent (a method's
 * name, a log line): control bytes are shown as '?', so that nothing
 * reaches the terminal as an escape sequence. At most max bytes. */
static void put_clean(const char *s, size_t max) {
  for (size_t i = 0; s[i] != '\0' && i < max; i++) {
    unsigned char ch = (unsigned char)s[i];
    putchar(ch < 0x20 || ch == 0x7f ? '?' : ch);
  }
}

/* One trace line for people: time, session (its first 8 digits), kind and
 * what, then the rest as key=value. */
static void print_trace(json_object *o, int colour) {
  if (obj_get(o, "dropped")) {
    printf("%s-- %s lines dropped: this reader fell behind --%s\n",
           colour ? "\033[1;31m" : "", str_or(o, "dropped", "?"),
           colour ? "\033[0m" : "");
    return;
  }
  if (obj_get(o, "end")) {
    printf("-- trace ended (%s) --\n", str_or(o, "end", "?"));
    return;
  }
  const char *kind = str_or(o, "kind", "?");
  const char *session = str_or(o, "session", "");
  printf("%12.6f  %-8.8s  %*s%s%s%s", json_object_get_double(obj_get(o, "t")),
         session[0] ? session : "-", indent_of(kind), "", colour ? "\033[" : "",
         colour ? colour_of(kind) : "", colour ? "m" : "");
  printf("%-6s ", kind);
  put_clean(str_or(o, "what", ""), 200);
  if (colour)
    fputs("\033[0m", stdout);
  if (!strcmp(kind, "log")) {
    fputs("  ", stdout);
    put_clean(str_or(o, "line", ""), 8192);
    putchar('\n');
    return;
  }
  json_object_object_foreach(o, k, v) {
    if (!strcmp(k, "t") || !strcmp(k, "kind") || !strcmp(k, "session") ||
        !strcmp(k, "what"))
      continue;
    const char *text =
        json_object_is_type(v, json_type_string)
            ? json_object_get_string(v)
            : json_object_to_json_string_ext(
                  v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    printf("  %s=", k);
    put_clean(text, 300);
  }
  putchar('\n');
}

int ctl_cmd_trace(int argc, char **argv, const char *kinds, double seconds,
                  const char *level) {
  if (argc > 1)
    return ctl_usage_error("trace takes at most one session id");
  json_object *p = json_object_new_object();
  if (argc == 1)
    json_object_object_add(p, "session", json_object_new_string(argv[0]));
  if (kinds != NULL) {
    json_object *a = json_object_new_array();
    char *copy = strdup(kinds), *save = NULL;
    for (char *k = strtok_r(copy, ",", &save); k;
         k = strtok_r(NULL, ",", &save))
      json_object_array_add(a, json_object_new_string(k));
    free(copy);
    json_object_object_add(p, "kinds", a);
  }
  if (seconds > 0)
    json_object_object_add(p, "seconds", json_object_new_double(seconds));
  if (level != NULL)
    json_object_object_add(p, "level", json_object_new_string(level));
  json_object *r = NULL;
  if (admin_request("trace", p, &r) != 0)
    return EXIT_USAGE;
  int json = ctl_json_output();
  int colour = !json && isatty(STDOUT_FILENO) && getenv("NO_COLOR") == NULL;
  if (!json) {
    fprintf(stderr, "atelierctl: tracing %s%s (Ctrl-C to stop)\n",
            json_object_to_json_string_ext(obj_get(r, "kinds"),
                                           JSON_C_TO_STRING_PLAIN),
            argc == 1 ? " of one session" : "");
  }
  json_object_put(r);
  struct sigaction sa = {.sa_handler = on_sigint};
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  int status = 0;
  /* JSON for scripts: the daemon's lines are passed on as they come, in
   * whole reads, without being parsed or copied line by line. */
  while (json && !stop_trace) {
    int rc = ctl_pass(500);
    if (rc == 0)
      return 0;
    if (rc < 0 && !stop_trace) {
      if (ctl_last_error()[0] != '\0' &&
          strcmp(ctl_last_error(), "interrupted") != 0) {
        fprintf(stderr, "atelierctl: %s\n", ctl_last_error());
        return EXIT_USAGE;
      }
    }
  }
  if (json)
    return 0;
  for (;;) {
    char *line = NULL;
    int rc = ctl_read_line(500, &line);
    if (stop_trace)
      break;
    if (rc == 0) {
      if (!json)
        fprintf(stderr, "atelierctl: the daemon closed the trace\n");
      break;
    }
    if (rc < 0) {
      fflush(stdout);
      if (ctl_last_error()[0] != '\0') {
        fprintf(stderr, "atelierctl: %s\n", ctl_last_error());
        status = EXIT_USAGE;
        break;
      }
      continue; /* a time-out: look at stop_trace again */
    }
    if (json) {
      puts(line);
    } else {
      json_object *o = json_tokener_parse(line);
      if (o != NULL)
        print_trace(o, colour);
      else
        puts(line);
      json_object_put(o);
    }
    free(line);
    /* Out at once to a person, but in whole buffers when lines pour in:
     * a write per line cost the reader more than the daemon's tracing. */
    if (!ctl_has_line())
      fflush(stdout);
    if (ferror(stdout))
      break;
  }
  return status;
}
