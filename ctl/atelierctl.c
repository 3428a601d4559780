/* atelierctl: the command-line client of atelierd's JSON-RPC API.
 *
 * Every command is one or a few requests on the API socket (doc/api.md),
 * with the answers printed for people. The exit status follows one rule so
 * that scripts can rely on it: 0 for success, 1 for a tool that ran and
 * reported failure, 2 for everything that kept the request from being
 * answered (usage, connection, JSON-RPC errors).
 */
#include "atl-build.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "ctl.h"
#include "rpc_client.h"

/* events --follow asks the daemon to hold each read this long. */
#define FOLLOW_WAIT_MS 30000
#define EVENTS_PAGE 1000

static const char *const usage_text =
    "usage: atelierctl [OPTIONS] COMMAND [ARGS]\n"
    "\n"
    "Commands:\n"
    "  tools [NAME] [--wire PROVIDER]   list the tools, or describe one;\n"
    "                                   --wire: the tool list exactly as\n"
    "                                   PROVIDER (anthropic, openai, gemini)\n"
    "                                   is sent it\n"
    "  provider check [NAME] [--model M]\n"
    "                                   send the provider one small request\n"
    "                                   with the real tool list: does the key\n"
    "                                   work, is every tool taken, what does\n"
    "                                   the model answer\n"
    "  session new [--model NAME]       create a session, print its id\n"
    "  session list                     list the sessions\n"
    "  session show ID                  print a session (document, history)\n"
    "  session rm ID                    delete a session\n"
    "  session cassette ID              print the session's model turns as a\n"
    "                                   cassette (for [provider.*] type "
    "replay)\n"
    "  call SESSION TOOL [JSON|-] [-o DIR]\n"
    "                                   call a tool; -o saves its images\n"
    "  events SESSION [--after SEQ] [--follow] [--json]\n"
    "                                   print a session's events\n"
    "  raw METHOD [PARAMS-JSON|-]       send any request, print the result\n"
    "  mcp [--session ID | --new]       an MCP server on stdin and stdout:\n"
    "                                   Atelier's tools for Claude Desktop,\n"
    "                                   Claude Code, Cursor... (doc/mcp.md)\n"
    "\n"
    "Admin socket (admin.sock: the daemon's user or root; doc/admin.md):\n"
    "  admin info|stats|plugins|metrics the daemon, its counters and\n"
    "                                   latencies, its plugins, Prometheus\n"
    "                                   text\n"
    "  admin sessions|clients [--json]  every session / connection\n"
    "  admin session ID                 one session in depth\n"
    "  admin cancel ID | rm ID          cancel a session's run / delete it\n"
    "  admin kill CLIENT-ID             close a connection\n"
    "  admin log-level [LEVEL]          show or set the log level\n"
    "  admin slowlog [get N|len|reset]  the slowest calls, turns, commits\n"
    "                                   and renders (newest first)\n"
    "  admin drain | undrain            refuse / accept new sessions and\n"
    "                                   messages (before an upgrade)\n"
    "  admin shutdown [SECONDS]         stop the daemon gracefully\n"
    "  top                              a live view, every second: calls,\n"
    "                                   turns and tokens per second, the\n"
    "                                   busiest tools, the farm, sessions\n"
    "  trace [SESSION] [--kinds K,...] [--seconds N] [--level L] [--json]\n"
    "                                   follow what happens, live: rpc, run,\n"
    "                                   turn, tool, commit, render, event,\n"
    "                                   log\n"
    "\n"
    "Options:\n"
    "  --socket-dir DIR   directory of api.sock (default: $ATELIER_SOCKET_DIR\n"
    "                     or /run/atelier)\n"
    "  --socket PATH      the API socket itself (overrides --socket-dir)\n"
    "  --timeout MS       how long to wait for each answer (default 60000)\n"
    "  --admin-socket PATH  the admin socket (default: admin.sock beside\n"
    "                     api.sock)\n"
    "  --secret-file FILE the admin secret, when the daemon has one\n"
    "                     (default: $ATELIER_ADMIN_SECRET_FILE)\n"
    "  -h, --help         print this help\n"
    "  --version          print the version\n"
    "\n"
    "Exit status: 0 success, 1 the tool reported failure, 2 usage,\n"
    "connection or protocol error. See atelierctl(1).\n";

/* Everything the command line said; options may appear anywhere. */
typedef struct {
  const char *socket_dir;
  const char *socket_path;
  int timeout_ms;
  const char *out_dir;
  long long after;
  int after_set;
  int follow;
  int json;
  const char *model;        /* session new --model, provider check --model */
  const char *wire;         /* tools --wire */
  int timeout_given;        /* --timeout was on the command line */
  const char *admin_socket; /* --admin-socket */
  const char *secret_file;  /* --secret-file */
  const char *kinds;        /* trace --kinds */
  double seconds;           /* trace --seconds */
  const char *level;        /* trace --level */
  const char *mcp_session;  /* mcp --session */
  int mcp_new;              /* mcp --new */
} options;

static options opt = {.timeout_ms = 60000};
static atl_rpcc_t rpc = {.fd = -1, .watch_fd = -1};
static volatile sig_atomic_t interrupted;

int ctl_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("atelierctl: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputs("\nTry 'atelierctl --help'.\n", stderr);
  va_end(ap);
  return EXIT_USAGE;
}

static int json_flags(void) {
  /* Without NOSLASHESCAPE json-c writes "/" as "\/", which would garble the
   * JSON pointers in validation errors ("/text"). */
  return JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE;
}

/* Pretty-prints with two-space indentation. json-c's own pretty mode spreads
 * empty objects over two lines; envelopes are full of them, so this writes
 * {} and [] compactly and leaves only the scalars to json-c. */
static void pretty(FILE *f, json_object *o, int depth) {
  if (json_object_is_type(o, json_type_object) &&
      json_object_object_length(o) > 0) {
    int first = 1;
    fputs("{\n", f);
    json_object_object_foreach(o, key, val) {
      json_object *k = json_object_new_string(key);
      fprintf(f, "%s%*s%s: ", first ? "" : ",\n", 2 * (depth + 1), "",
              json_object_to_json_string_ext(k, json_flags()));
      json_object_put(k);
      pretty(f, val, depth + 1);
      first = 0;
    }
    fprintf(f, "\n%*s}", 2 * depth, "");
  } else if (json_object_is_type(o, json_type_array) &&
             json_object_array_length(o) > 0) {
    size_t n = json_object_array_length(o);
    fputs("[\n", f);
    for (size_t i = 0; i < n; i++) {
      fprintf(f, "%s%*s", i ? ",\n" : "", 2 * (depth + 1), "");
      pretty(f, json_object_array_get_idx(o, i), depth + 1);
    }
    fprintf(f, "\n%*s]", 2 * depth, "");
  } else {
    fputs(json_object_to_json_string_ext(o, json_flags()), f);
  }
}

static void print_json(FILE *f, json_object *o) {
  pretty(f, o, 0);
  fputc('\n', f);
}

static const char *get_str(json_object *o, const char *key) {
  json_object *v = NULL;
  if (!json_object_object_get_ex(o, key, &v) || v == NULL)
    return NULL;
  return json_object_get_string(v);
}

/* get_str, with a placeholder for a member that is missing, so that a
 * daemon answer without it prints as "-" rather than (null). */
static const char *get_str_or(json_object *o, const char *key) {
  const char *s = get_str(o, key);
  return s != NULL ? s : "-";
}

static json_object *get(json_object *o, const char *key) {
  json_object *v = NULL;
  json_object_object_get_ex(o, key, &v);
  return v;
}

/* Reads all of standard input; NULL (with a message) on failure. */
static char *read_stdin(size_t *len) {
  size_t cap = 64 * 1024, n = 0;
  char *buf = malloc(cap);
  while (buf != NULL) {
    if (cap - n < 4096) {
      char *nbuf = realloc(buf, cap * 2);
      if (nbuf == NULL)
        break;
      buf = nbuf;
      cap *= 2;
    }
    ssize_t r = read(STDIN_FILENO, buf + n, cap - n - 1);
    if (r == 0) {
      buf[n] = '\0';
      *len = n;
      return buf;
    }
    if (r < 0 && errno != EINTR) {
      fprintf(stderr, "atelierctl: cannot read standard input: %s\n",
              strerror(errno));
      free(buf);
      return NULL;
    }
    if (r > 0)
      n += (size_t)r;
  }
  free(buf);
  fputs("atelierctl: out of memory reading standard input\n", stderr);
  return NULL;
}

/* Parses a JSON command-line argument ("-" reads standard input). The
 * message names the argument so that the user knows which one was wrong. */
static json_object *parse_arg(const char *what, const char *arg) {
  char err[256];
  json_object *obj;
  if (strcmp(arg, "-") == 0) {
    size_t len = 0;
    char *text = read_stdin(&len);
    if (text == NULL)
      return NULL;
    obj = atl_json_parse_text(text, len, err, sizeof(err));
    free(text);
  } else {
    obj = atl_json_parse_text(arg, strlen(arg), err, sizeof(err));
  }
  if (obj == NULL)
    fprintf(stderr, "atelierctl: invalid JSON in %s: %s\n", what, err);
  return obj;
}

/* The socket named name in the socket directory, or given (path): into
 * out. */
static void socket_path(const char *given, const char *name, char *out,
                        size_t len) {
  if (given != NULL) {
    snprintf(out, len, "%s", given);
    return;
  }
  const char *dir = opt.socket_dir;
  if (dir == NULL)
    dir = getenv("ATELIER_SOCKET_DIR");
  if (dir == NULL || *dir == '\0')
    dir = "/run/atelier";
  snprintf(out, len, "%s/%s", dir, name);
}

static int connect_daemon(void) {
  char path[PATH_MAX];
  socket_path(opt.socket_path, "api.sock", path, sizeof(path));
  if (atl_rpcc_connect(&rpc, path) != 0) {
    fprintf(stderr, "atelierctl: %s\n", rpc.errmsg);
    return -1;
  }
  return 0;
}

/* Makes one request and prints why it failed if it did. session, when
 * given, names the session in "no such session" messages. Returns 0 with
 * the result in *out (to put; NULL for "result": null), or -1 after the
 * message. */
static int request(const char *method, json_object *params, const char *session,
                   int timeout_ms, json_object **out) {
  int st = atl_rpcc_call(&rpc, method, params, timeout_ms, out);
  if (st == ATL_RPCC_OK)
    return 0;
  if (st == ATL_RPCC_TRANSPORT) {
    if (!interrupted)
      fprintf(stderr, "atelierctl: %s\n", rpc.errmsg);
  } else if (rpc.err_code == ATL_RPCC_NO_SESSION) {
    const char *s = rpc.err_data ? get_str(rpc.err_data, "session") : NULL;
    fprintf(stderr, "atelierctl: no such session: %s\n",
            s ? s : (session ? session : "?"));
  } else {
    fprintf(stderr, "atelierctl: %s failed: %s (JSON-RPC error %d)\n", method,
            rpc.err_message, rpc.err_code);
    if (rpc.err_data != NULL)
      print_json(stderr, rpc.err_data);
  }
  return -1;
}

static json_object *session_params(const char *session) {
  json_object *p = json_object_new_object();
  json_object_object_add(p, "session", json_object_new_string(session));
  return p;
}

/* The first line of s, as a length for "%.*s". */
static int first_line_len(const char *s) {
  size_t n = strcspn(s, "\n");
  return n > INT_MAX ? INT_MAX : (int)n;
}

/* ---- for the commands of other files (ctl.h) ---- */

int ctl_timeout_ms(void) {
  return opt.timeout_ms;
}

const char *ctl_model(void) {
  return opt.model;
}

int ctl_json_output(void) {
  return opt.json;
}

int ctl_connect(void) {
  return connect_daemon();
}

int ctl_connect_admin(void) {
  char path[PATH_MAX];
  socket_path(opt.admin_socket, "admin.sock", path, sizeof(path));
  if (atl_rpcc_connect(&rpc, path) != 0) {
    fprintf(stderr, "atelierctl: %s\n", rpc.errmsg);
    return -1;
  }
  const char *file = opt.secret_file;
  if (file == NULL)
    file = getenv("ATELIER_ADMIN_SECRET_FILE");
  if (file == NULL || *file == '\0')
    return 0;
  FILE *f = fopen(file, "r");
  char secret[256];
  if (f == NULL || fgets(secret, sizeof(secret), f) == NULL) {
    fprintf(stderr, "atelierctl: cannot read the secret file %s: %s\n", file,
            f ? "it is empty" : strerror(errno));
    if (f)
      fclose(f);
    return -1;
  }
  fclose(f);
  secret[strcspn(secret, "\r\n")] = '\0';
  json_object *p = json_object_new_object();
  json_object_object_add(p, "secret", json_object_new_string(secret));
  memset(secret, 0, sizeof(secret));
  json_object *r = NULL;
  if (request("auth", p, NULL, opt.timeout_ms, &r) != 0)
    return -1;
  json_object_put(r);
  return 0;
}

int ctl_read_line(int timeout_ms, char **line) {
  return atl_rpcc_read_line(&rpc, timeout_ms, line);
}

int ctl_has_line(void) {
  return atl_rpcc_has_line(&rpc);
}

int ctl_pass(int timeout_ms) {
  fflush(stdout);
  return atl_rpcc_pass(&rpc, STDOUT_FILENO, timeout_ms);
}

const char *ctl_last_error(void) {
  return rpc.errmsg;
}

int ctl_request(const char *method, json_object *params, json_object **out) {
  return request(method, params, NULL, opt.timeout_ms, out);
}

int ctl_request_wait(const char *method, json_object *params, int timeout_ms,
                     json_object **out) {
  return request(method, params, NULL,
                 opt.timeout_given ? opt.timeout_ms : timeout_ms, out);
}

void ctl_print_json(FILE *f, json_object *o) {
  print_json(f, o);
}

static int cmd_tools(int argc, char **argv) {
  if (argc > 1 || (opt.wire != NULL && argc > 0))
    return ctl_usage_error("%s",
                           "usage: atelierctl tools [NAME] | tools --wire "
                           "PROVIDER");
  json_object *tools = NULL;
  if (opt.wire != NULL) {
    /* What a provider is sent, byte for byte as JSON. */
    json_object *p = json_object_new_object();
    json_object_object_add(p, "wire", json_object_new_string(opt.wire));
    if (connect_daemon() != 0 ||
        request("tool.list", p, NULL, opt.timeout_ms, &tools) != 0)
      return EXIT_USAGE;
    print_json(stdout, tools);
    json_object_put(tools);
    return 0;
  }
  if (connect_daemon() != 0 || request("tool.list", json_object_new_object(),
                                       NULL, opt.timeout_ms, &tools) != 0)
    return EXIT_USAGE;
  if (!json_object_is_type(tools, json_type_array)) {
    fputs("atelierctl: tool.list did not answer with an array\n", stderr);
    json_object_put(tools);
    return EXIT_USAGE;
  }
  size_t n = json_object_array_length(tools);
  int width = 0;
  for (size_t i = 0; i < n; i++) {
    const char *name = get_str(json_object_array_get_idx(tools, i), "name");
    int len = name ? (int)strlen(name) : 0;
    width = len > width ? len : width;
  }
  int status = 0;
  if (argc == 0) {
    if (n == 0)
      fputs("atelierctl: atelierd has no tools loaded\n", stderr);
    for (size_t i = 0; i < n; i++) {
      json_object *t = json_object_array_get_idx(tools, i);
      const char *name = get_str(t, "name"), *desc = get_str(t, "description");
      desc = desc ? desc : "";
      printf("%-*s  %.*s\n", width, name ? name : "?", first_line_len(desc),
             desc);
    }
  } else {
    json_object *found = NULL;
    for (size_t i = 0; i < n && found == NULL; i++) {
      json_object *t = json_object_array_get_idx(tools, i);
      const char *name = get_str(t, "name");
      if (name != NULL && strcmp(name, argv[0]) == 0)
        found = t;
    }
    if (found == NULL) {
      fprintf(stderr, "atelierctl: no tool named '%s'; available:", argv[0]);
      for (size_t i = 0; i < n; i++)
        fprintf(stderr, "%s %s", i ? "," : "",
                get_str(json_object_array_get_idx(tools, i), "name"));
      fputs(n ? "\n" : " none\n", stderr);
      status = EXIT_USAGE;
    } else {
      const char *plugin = get_str(found, "plugin");
      const char *desc = get_str(found, "description");
      printf("%s", argv[0]);
      if (plugin != NULL)
        printf(" (plugin %s)", plugin);
      printf("\n\n%s\n\nInput schema:\n", desc ? desc : "");
      json_object *schema = get(found, "input_schema");
      if (schema != NULL)
        print_json(stdout, schema);
      else
        puts("(none)");
    }
  }
  json_object_put(tools);
  return status;
}

/* Record mode: the model's turns of a session, as a cassette that the
 * replay provider plays back (its tool calls run again, for real; what
 * the provider measured, usage and latency, is left out). */
static void print_cassette(json_object *session, const char *id) {
  json_object *out = json_object_new_object(), *turns = json_object_new_array();
  json_object_object_add(out, "format",
                         json_object_new_string("atelier-cassette"));
  json_object_object_add(out, "version", json_object_new_int(1));
  char desc[96];
  snprintf(desc, sizeof(desc), "Recorded from session %s.", id);
  json_object_object_add(out, "description", json_object_new_string(desc));
  json_object *history = get(session, "history");
  size_t n = json_object_is_type(history, json_type_array)
                 ? json_object_array_length(history)
                 : 0;
  for (size_t i = 0; i < n; i++) {
    json_object *h = json_object_array_get_idx(history, i);
    json_object *msg = get(h, "content");
    if (msg == NULL || strcmp(get_str_or(msg, "role"), "model") != 0)
      continue;
    json_object *turn = json_object_new_object();
    json_object_object_add(turn, "role", json_object_new_string("model"));
    json_object_object_add(turn, "parts", json_object_get(get(msg, "parts")));
    json_object_array_add(turns, turn);
  }
  json_object_object_add(out, "turns", turns);
  print_json(stdout, out);
  json_object_put(out);
}

static int cmd_session(int argc, char **argv) {
  if (argc == 0)
    return ctl_usage_error("session needs a subcommand: %s",
                           "new, list, show, rm, cassette");
  const char *sub = argv[0];
  if (opt.model != NULL && strcmp(sub, "new") != 0)
    return ctl_usage_error("--model goes with session new, not session %s",
                           sub);
  int want = strcmp(sub, "show") == 0 || strcmp(sub, "rm") == 0 ||
                     strcmp(sub, "cassette") == 0
                 ? 2
                 : 1;
  if (strcmp(sub, "new") && strcmp(sub, "list") && want == 1)
    return ctl_usage_error(
        "unknown session subcommand '%s' (new, list, show, rm, cassette)", sub);
  if (argc != want)
    return ctl_usage_error(
        want == 2 ? "session %s takes one session id"
        : strcmp(sub, "new") == 0
            ? "session %s takes no arguments but --model NAME"
            : "session %s takes no arguments",
        sub);
  if (connect_daemon() != 0)
    return EXIT_USAGE;
  json_object *res = NULL;
  int rc;
  if (strcmp(sub, "new") == 0) {
    json_object *params = json_object_new_object();
    if (opt.model != NULL)
      json_object_object_add(params, "model",
                             json_object_new_string(opt.model));
    rc = request("session.create", params, NULL, opt.timeout_ms, &res);
    if (rc == 0)
      printf("%s\n", get_str(res, "id") ? get_str(res, "id") : "?");
  } else if (strcmp(sub, "list") == 0) {
    rc = request("session.list", json_object_new_object(), NULL, opt.timeout_ms,
                 &res);
    size_t n = json_object_is_type(res, json_type_array)
                   ? json_object_array_length(res)
                   : 0;
    if (rc == 0 && n == 0)
      fputs("atelierctl: no sessions\n", stderr);
    else if (n > 0)
      printf("%-32s  %-24s  %-24s  %6s  %7s\n", "ID", "CREATED", "UPDATED",
             "EVENTS", "HISTORY");
    for (size_t i = 0; i < n; i++) {
      json_object *s = json_object_array_get_idx(res, i);
      printf("%-32s  %-24s  %-24s  %6lld  %7lld\n", get_str_or(s, "id"),
             get_str_or(s, "created"), get_str_or(s, "updated"),
             (long long)json_object_get_int64(get(s, "last_seq")),
             (long long)json_object_get_int64(get(s, "history_len")));
    }
  } else if (strcmp(sub, "show") == 0) {
    rc = request("session.get", session_params(argv[1]), argv[1],
                 opt.timeout_ms, &res);
    if (rc == 0)
      print_json(stdout, res);
  } else if (strcmp(sub, "cassette") == 0) {
    rc = request("session.get", session_params(argv[1]), argv[1],
                 opt.timeout_ms, &res);
    if (rc == 0)
      print_cassette(res, argv[1]);
  } else {
    rc = request("session.delete", session_params(argv[1]), argv[1],
                 opt.timeout_ms, &res);
    if (rc == 0)
      printf("deleted %s\n", argv[1]);
  }
  json_object_put(res);
  return rc == 0 ? 0 : EXIT_USAGE;
}

static int mkdir_p(const char *path) {
  char buf[PATH_MAX];
  if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
    errno = ENAMETOOLONG;
    return -1;
  }
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
      return -1;
    *p = '/';
  }
  if (mkdir(buf, 0777) != 0 && errno != EEXIST)
    return -1;
  struct stat st;
  if (stat(buf, &st) != 0)
    return -1;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return -1;
  }
  return 0;
}

static const char *mime_extension(const char *mime) {
  static const char *const map[][2] = {
      {"image/png", "png"},   {"image/jpeg", "jpg"},    {"image/gif", "gif"},
      {"image/webp", "webp"}, {"image/svg+xml", "svg"}, {"image/bmp", "bmp"},
  };
  for (size_t i = 0; mime != NULL && i < sizeof(map) / sizeof(map[0]); i++)
    if (strcmp(mime, map[i][0]) == 0)
      return map[i][1];
  return "bin";
}

/* The file name for an image: its name if it has a usable one (reduced to
 * a plain file name, so that a plugin cannot write outside DIR), else its
 * id, with the extension its MIME type calls for. */
static void image_file_name(json_object *img, size_t index, char *out,
                            size_t outlen) {
  const char *name = get_str(img, "name"), *id = get_str(img, "id");
  const char *ext = mime_extension(get_str(img, "mime"));
  char base[256];
  snprintf(base, sizeof(base), "%s",
           name && *name ? name : (id ? id : "image"));
  for (char *p = base; *p; p++)
    if (*p == '/' || (unsigned char)*p < 0x20)
      *p = '_';
  if (base[0] == '.')
    base[0] = '_';
  if (index > 0 && name != NULL && *name) {
    /* Two images of one call may share a name; the index keeps the second
     * from overwriting the first. */
    size_t bl = strlen(base);
    snprintf(base + bl, sizeof(base) - bl, "-%zu", index);
  }
  size_t bl = strlen(base), el = strlen(ext);
  int has_ext = bl > el + 1 && base[bl - el - 1] == '.' &&
                strcasecmp(base + bl - el, ext) == 0;
  snprintf(out, outlen, "%s%s%s", base, has_ext ? "" : ".", has_ext ? "" : ext);
}

static int write_file(const char *path, const unsigned char *data, size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0)
    return -1;
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0) {
      int e = errno;
      close(fd);
      errno = e;
      return -1;
    }
    off += (size_t)w;
  }
  return close(fd);
}

/* Fetches every image of an envelope and writes it into dir. */
static int save_images(const char *dir, json_object *images) {
  if (mkdir_p(dir) != 0) {
    fprintf(stderr, "atelierctl: cannot create %s: %s\n", dir, strerror(errno));
    return -1;
  }
  size_t n = json_object_array_length(images);
  for (size_t i = 0; i < n; i++) {
    json_object *img = json_object_array_get_idx(images, i);
    const char *id = get_str(img, "id");
    if (id == NULL) {
      fputs("atelierctl: an image in the envelope has no id\n", stderr);
      return -1;
    }
    json_object *p = json_object_new_object();
    json_object_object_add(p, "id", json_object_new_string(id));
    json_object *res = NULL;
    if (request("image.get", p, NULL, opt.timeout_ms, &res) != 0)
      return -1;
    json_object *data = get(res, "data");
    size_t len = 0;
    unsigned char *bytes =
        data ? atl_base64_decode(json_object_get_string(data),
                                 (size_t)json_object_get_string_len(data), &len)
             : NULL;
    json_object_put(res);
    if (bytes == NULL) {
      fprintf(stderr, "atelierctl: image %s: data is not valid base64\n", id);
      return -1;
    }
    json_object *size = get(img, "size");
    if (size != NULL && json_object_get_int64(size) != (int64_t)len)
      fprintf(stderr,
              "atelierctl: warning: image %s has %zu bytes, the "
              "envelope said %lld\n",
              id, len, (long long)json_object_get_int64(size));
    char name[300], path[PATH_MAX];
    image_file_name(img, i, name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int rc = write_file(path, bytes, len);
    free(bytes);
    if (rc != 0) {
      fprintf(stderr, "atelierctl: cannot write %s: %s\n", path,
              strerror(errno));
      return -1;
    }
    fprintf(stderr, "%s\n", path);
  }
  return 0;
}

static int cmd_call(int argc, char **argv) {
  if (argc < 2 || argc > 3)
    return ctl_usage_error("%s",
                           "usage: atelierctl call SESSION TOOL [JSON|-]");
  json_object *args = argc == 3 ? parse_arg("the tool arguments", argv[2])
                                : json_object_new_object();
  if (args == NULL)
    return EXIT_USAGE;
  if (connect_daemon() != 0) {
    json_object_put(args);
    return EXIT_USAGE;
  }
  json_object *p = session_params(argv[0]);
  json_object_object_add(p, "name", json_object_new_string(argv[1]));
  json_object_object_add(p, "arguments", args);
  json_object *env = NULL;
  if (request("tool.call", p, argv[0], opt.timeout_ms, &env) != 0)
    return EXIT_USAGE;
  print_json(stdout, env);
  fflush(stdout);
  json_object *ok = get(env, "success");
  int status = EXIT_USAGE;
  if (ok == NULL || !json_object_is_type(ok, json_type_boolean)) {
    fputs("atelierctl: the envelope has no \"success\" boolean\n", stderr);
  } else if (json_object_get_boolean(ok)) {
    status = 0;
  } else {
    const char *err = get_str(env, "error");
    fprintf(stderr, "atelierctl: %s failed:\n%s\n", argv[1],
            err ? err : "(no error message)");
    status = EXIT_TOOL_FAILED;
  }
  json_object *images = get(env, "images");
  if (opt.out_dir != NULL && images != NULL &&
      json_object_is_type(images, json_type_array) &&
      save_images(opt.out_dir, images) != 0)
    status = EXIT_USAGE;
  json_object_put(env);
  return status;
}

/* Appends s to a line with newlines turned into "; ", so that a multi-line
 * validation error stays on the event's line. */
static void put_oneline(const char *s) {
  for (; *s; s++) {
    if (*s == '\n')
      fputs("; ", stdout);
    else
      putchar(*s);
  }
}

static void print_event(json_object *ev) {
  if (opt.json) {
    puts(json_object_to_json_string_ext(ev, json_flags()));
    return;
  }
  const char *type = get_str(ev, "type");
  const char *ts = get_str(ev, "ts");
  json_object *data = get(ev, "data");
  printf("%lld %s %s", (long long)json_object_get_int64(get(ev, "seq")),
         ts ? ts : "-", type ? type : "?");
  if (type != NULL && strcmp(type, "tool.finished") == 0) {
    json_object *op = get(data, "operation");
    const char *tool = get_str(op, "tool"), *target = get_str(op, "target");
    const char *err = get_str(data, "error");
    int ok = json_object_get_boolean(get(data, "success"));
    printf(" %s", tool ? tool : "?");
    if (target != NULL)
      printf(" target=%s", target);
    printf(" %s %lldms", ok ? "ok" : "error",
           (long long)json_object_get_int64(get(data, "duration_ms")));
    if (!ok && err != NULL) {
      fputs(": ", stdout);
      put_oneline(err);
    }
  } else if (type != NULL && strcmp(type, "tool.progress") == 0) {
    const char *msg = get_str(data, "message");
    printf(" %s %.0f%%", get_str(data, "tool") ? get_str(data, "tool") : "?",
           100.0 * json_object_get_double(get(data, "fraction")));
    if (msg != NULL) {
      putchar(' ');
      put_oneline(msg);
    }
  } else if (data != NULL && !(json_object_is_type(data, json_type_object) &&
                               json_object_object_length(data) == 0)) {
    printf(" %s", json_object_to_json_string_ext(data, json_flags()));
  }
  putchar('\n');
}

static void on_signal(int sig) {
  (void)sig;
  interrupted = 1;
}

static int cmd_events(int argc, char **argv) {
  if (argc != 1)
    return ctl_usage_error("%s",
                           "usage: atelierctl events SESSION [--after SEQ] "
                           "[--follow] [--json]");
  sigset_t block, wait_mask;
  if (opt.follow) {
    /* SIGINT ends --follow normally (exit 0). It stays blocked except
     * while waiting for the daemon, where ppoll() lets it in; see
     * atl_rpcc_t.wait_mask. */
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &wait_mask);
    sigdelset(&wait_mask, SIGINT);
    sigdelset(&wait_mask, SIGTERM);
  }
  if (connect_daemon() != 0)
    return EXIT_USAGE;
  if (opt.follow) {
    rpc.interrupted = &interrupted;
    rpc.wait_mask = &wait_mask;
  }
  long long after = opt.after;
  for (;;) {
    json_object *p = session_params(argv[0]);
    json_object_object_add(p, "after_seq", json_object_new_int64(after));
    json_object_object_add(p, "limit", json_object_new_int(EVENTS_PAGE));
    if (opt.follow)
      json_object_object_add(p, "wait_ms", json_object_new_int(FOLLOW_WAIT_MS));
    /* A long poll legitimately takes wait_ms; --timeout is the slack the
     * daemon gets on top of it. */
    int timeout = opt.timeout_ms + (opt.follow ? FOLLOW_WAIT_MS : 0);
    json_object *res = NULL;
    if (request("events.read", p, argv[0], timeout, &res) != 0)
      return interrupted ? 0 : EXIT_USAGE;
    json_object *events = get(res, "events");
    size_t n = events && json_object_is_type(events, json_type_array)
                   ? json_object_array_length(events)
                   : 0;
    for (size_t i = 0; i < n; i++) {
      json_object *ev = json_object_array_get_idx(events, i);
      print_event(ev);
      after = json_object_get_int64(get(ev, "seq"));
    }
    /* An answer may stop short of the page (events.read caps its bytes):
     * done only once the session's last event is out. */
    long long last = json_object_get_int64(get(res, "last_seq"));
    json_object_put(res);
    /* Followers usually sit in a pipe (| grep, | tee): each batch goes out
     * at once rather than when stdio's buffer fills. With SIGPIPE ignored,
     * a reader that went away shows up only here, and must end the loop. */
    if (fflush(stdout) != 0) {
      if (errno != EPIPE)
        fprintf(stderr, "atelierctl: cannot write: %s\n", strerror(errno));
      return EXIT_USAGE;
    }
    if (interrupted)
      return 0;
    if (!opt.follow && (n == 0 || after >= last))
      return 0;
  }
}

static int cmd_raw(int argc, char **argv) {
  if (argc < 1 || argc > 2)
    return ctl_usage_error("%s",
                           "usage: atelierctl raw METHOD [PARAMS-JSON|-]");
  json_object *params = NULL;
  if (argc == 2 && (params = parse_arg("PARAMS-JSON", argv[1])) == NULL)
    return EXIT_USAGE;
  if (connect_daemon() != 0) {
    json_object_put(params);
    return EXIT_USAGE;
  }
  json_object *res = NULL;
  if (request(argv[0], params, NULL, opt.timeout_ms, &res) != 0)
    return EXIT_USAGE;
  print_json(stdout, res);
  json_object_put(res);
  return 0;
}

static int parse_number(const char *what, const char *s, long long min,
                        long long max, long long *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
    fprintf(stderr,
            "atelierctl: %s must be a number from %lld to %lld, not "
            "'%s'\n",
            what, min, max, s);
    return -1;
  }
  *out = v;
  return 0;
}

int main(int argc, char **argv) {
  enum {
    O_SOCKET_DIR = 256,
    O_SOCKET,
    O_TIMEOUT,
    O_VERSION,
    O_AFTER,
    O_MODEL,
    O_WIRE,
    O_ADMIN_SOCKET,
    O_SECRET_FILE,
    O_KINDS,
    O_SECONDS,
    O_LEVEL,
    O_SESSION,
    O_NEW
  };
  static const struct option longopts[] = {
      {"socket-dir", required_argument, NULL, O_SOCKET_DIR},
      {"socket", required_argument, NULL, O_SOCKET},
      {"timeout", required_argument, NULL, O_TIMEOUT},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, O_VERSION},
      {"after", required_argument, NULL, O_AFTER},
      {"follow", no_argument, NULL, 'f'},
      {"json", no_argument, NULL, 'j'},
      {"output", required_argument, NULL, 'o'},
      {"model", required_argument, NULL, O_MODEL},
      {"wire", required_argument, NULL, O_WIRE},
      {"admin-socket", required_argument, NULL, O_ADMIN_SOCKET},
      {"secret-file", required_argument, NULL, O_SECRET_FILE},
      {"kinds", required_argument, NULL, O_KINDS},
      {"seconds", required_argument, NULL, O_SECONDS},
      {"level", required_argument, NULL, O_LEVEL},
      {"session", required_argument, NULL, O_SESSION},
      {"new", no_argument, NULL, O_NEW},
      {NULL, 0, NULL, 0},
  };
  /* The daemon going away mid-write must be an error message, not a
   * silent death; rpc_client also sends with MSG_NOSIGNAL. */
  signal(SIGPIPE, SIG_IGN);
  long long num;
  int c;
  while ((c = getopt_long(argc, argv, "hfjo:", longopts, NULL)) != -1) {
    switch (c) {
    case O_SOCKET_DIR:
      opt.socket_dir = optarg;
      break;
    case O_SOCKET:
      opt.socket_path = optarg;
      break;
    case O_TIMEOUT:
      if (parse_number("--timeout", optarg, 1, 86400000, &num) != 0)
        return EXIT_USAGE;
      opt.timeout_ms = (int)num;
      opt.timeout_given = 1;
      break;
    case O_AFTER:
      if (parse_number("--after", optarg, 0, LLONG_MAX, &num) != 0)
        return EXIT_USAGE;
      opt.after = num;
      opt.after_set = 1;
      break;
    case O_MODEL:
      opt.model = optarg;
      break;
    case O_WIRE:
      opt.wire = optarg;
      break;
    case O_ADMIN_SOCKET:
      opt.admin_socket = optarg;
      break;
    case O_SECRET_FILE:
      opt.secret_file = optarg;
      break;
    case O_KINDS:
      opt.kinds = optarg;
      break;
    case O_SECONDS: {
      char *end = NULL;
      opt.seconds = strtod(optarg, &end);
      if (*end != '\0' || !(opt.seconds > 0 && opt.seconds <= 86400))
        return ctl_usage_error("--seconds must be a number above 0 and at "
                               "most 86400, got '%s'",
                               optarg);
      break;
    }
    case O_LEVEL:
      opt.level = optarg;
      break;
    case O_SESSION:
      opt.mcp_session = optarg;
      break;
    case O_NEW:
      opt.mcp_new = 1;
      break;
    case 'f':
      opt.follow = 1;
      break;
    case 'j':
      opt.json = 1;
      break;
    case 'o':
      opt.out_dir = optarg;
      break;
    case 'h':
      fputs(usage_text, stdout);
      return 0;
    case O_VERSION:
      printf("atelierctl %s\n", PACKAGE_VERSION);
      return 0;
    default:
      fputs("Try 'atelierctl --help'.\n", stderr);
      return EXIT_USAGE;
    }
  }
  if (optind >= argc)
    return ctl_usage_error("%s", "no command given");
  const char *cmd = argv[optind];
  int cargc = argc - optind - 1;
  char **cargv = argv + optind + 1;
  int is_call = strcmp(cmd, "call") == 0, is_events = !strcmp(cmd, "events");
  if (opt.out_dir != NULL && !is_call)
    return ctl_usage_error("-o is an option of call, not of %s", cmd);
  int is_provider = strcmp(cmd, "provider") == 0;
  if ((opt.follow || opt.after_set) && !is_events)
    return ctl_usage_error(
        "--after and --follow are options of events, not of %s", cmd);
  int is_admin = strcmp(cmd, "admin") == 0, is_trace = !strcmp(cmd, "trace");
  if (opt.json && !is_events && !is_provider && !is_admin && !is_trace)
    return ctl_usage_error("--json is an option of events, provider check, "
                           "admin and trace, not of %s",
                           cmd);
  if ((opt.kinds || opt.seconds > 0 || opt.level) && !is_trace)
    return ctl_usage_error(
        "--kinds, --seconds and --level are options of trace, not of %s", cmd);
  if (opt.wire != NULL && strcmp(cmd, "tools") != 0)
    return ctl_usage_error("--wire is an option of tools, not of %s", cmd);
  int is_mcp = strcmp(cmd, "mcp") == 0;
  if ((opt.mcp_session != NULL || opt.mcp_new) && !is_mcp)
    return ctl_usage_error("--session and --new are options of mcp, not of %s",
                           cmd);

  int status;
  if (strcmp(cmd, "tools") == 0)
    status = cmd_tools(cargc, cargv);
  else if (strcmp(cmd, "session") == 0)
    status = cmd_session(cargc, cargv);
  else if (is_call)
    status = cmd_call(cargc, cargv);
  else if (is_events)
    status = cmd_events(cargc, cargv);
  else if (strcmp(cmd, "raw") == 0)
    status = cmd_raw(cargc, cargv);
  else if (is_provider)
    status = ctl_cmd_provider(cargc, cargv);
  else if (is_admin)
    status = ctl_cmd_admin(cargc, cargv);
  else if (is_trace)
    status = ctl_cmd_trace(cargc, cargv, opt.kinds, opt.seconds, opt.level);
  else if (strcmp(cmd, "top") == 0)
    status = ctl_cmd_top(cargc, cargv);
  else if (is_mcp) {
    char path[PATH_MAX];
    socket_path(opt.socket_path, "api.sock", path, sizeof(path));
    status = ctl_cmd_mcp(cargc, cargv, path, opt.mcp_session, opt.mcp_new);
  } else
    status = ctl_usage_error("unknown command '%s'", cmd);
  atl_rpcc_close(&rpc);
  /* Output that never reached its file (a full disk, a closed pipe) must
   * not end in success. */
  if (fflush(stdout) != 0 || ferror(stdout)) {
    if (errno != EPIPE)
      fprintf(stderr, "atelierctl: cannot write the output: %s\n",
              strerror(errno));
    if (status == 0)
      status = EXIT_USAGE;
  }
  return status;
}
