/* atelierd's configuration (see config.h).
 *
 * The INI syntax is libinih's. inih does not tell its handler which line a
 * key is on (unless the library was built with INI_HANDLER_LINENO, which
 * Debian's is not), so the file is read into memory here and handed to
 * ini_parse_stream() one line at a time through our own reader: the reader
 * then always knows the number of the line inih is working on, and every
 * error message can name it. The reader also checks section headers as they
 * go past, because inih only calls the handler for keys and an empty
 * unknown section would otherwise go unnoticed.
 */
#include "atl-build.h" /* autoconf's, for PACKAGE_VERSION */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <strings.h>

#include <ini.h>

#include "config.h"
#include "log.h"

#ifndef ATL_DEFAULT_PLUGIN_DIR
#define ATL_DEFAULT_PLUGIN_DIR "/usr/local/lib/atelier/plugins"
#endif

typedef enum {
  T_PATH,    /* a non-empty string */
  T_OPTPATH, /* a string; empty means NULL */
  T_BOOL,
  T_U32, /* a whole number in [min, max]; unit names it in messages */
  T_LEVEL,
  T_SYNC,
} key_type_t;

typedef struct {
  const char *section;
  const char *key;
  key_type_t type;
  size_t offset;
  uint32_t min, max;
  const char *unit;
} key_def_t;

#define OFF(field) offsetof(atl_config_t, field)

/* Every key the file may set. The order is the order of the sample file
 * and of the "known:" lists in error messages. */
static const key_def_t keys[] = {
    {"daemon", "socket_dir", T_PATH, OFF(socket_dir), 0, 0, NULL},
    {"daemon", "data_dir", T_PATH, OFF(data_dir), 0, 0, NULL},
    {"daemon", "plugin_dir", T_PATH, OFF(plugin_dir), 0, 0, NULL},
    {"daemon", "pid_file", T_OPTPATH, OFF(pid_file), 0, 0, NULL},
    {"daemon", "foreground", T_BOOL, OFF(foreground), 0, 0, NULL},
    {"daemon", "shutdown_timeout_ms", T_U32, OFF(shutdown_timeout_ms), 0,
     3600000, "milliseconds"},
    {"log", "level", T_LEVEL, OFF(log_level), 0, 0, NULL},
    {"log", "file", T_OPTPATH, OFF(log_file), 0, 0, NULL},
    {"api", "max_frame", T_U32, OFF(max_frame), 1024, 1073741824, "bytes"},
    {"api", "max_clients", T_U32, OFF(max_clients), 1, 65536, "clients"},
    {"plugins", "strict", T_BOOL, OFF(plugins_strict), 0, 0, NULL},
    {"plugins", "disable", T_OPTPATH, OFF(plugins_disable), 0, 0, NULL},
    {"tools", "timeout_ms", T_U32, OFF(tool_timeout_ms), 1, 86400000,
     "milliseconds"},
    {"tools", "long_timeout_ms", T_U32, OFF(tool_long_timeout_ms), 1, 86400000,
     "milliseconds"},
    {"tools", "threads", T_U32, OFF(tool_threads), 1, 64, "threads"},
    {"tools", "check_results", T_BOOL, OFF(check_results), 0, 0, NULL},
    {"tools", "inline_fast", T_BOOL, OFF(inline_fast), 0, 0, NULL},
    {"store", "synchronous", T_SYNC, OFF(store_synchronous), 0, 0, NULL},
    {"store", "session_cache", T_U32, OFF(session_cache), 1, 1048576,
     "sessions"},
    {"store", "max_batch", T_U32, OFF(max_batch), 1, 65536, "transactions"},
    {"agent", "provider", T_OPTPATH, OFF(agent_provider), 0, 0, NULL},
    {"agent", "max_turns", T_U32, OFF(max_turns), 1, 1000, "turns"},
    {"agent", "queue_max", T_U32, OFF(queue_max), 0, 64, "messages"},
    {"agent", "max_turn_bytes", T_U32, OFF(max_turn_bytes), 1024, 1073741824,
     "bytes"},
    {"agent", "system_prompt_file", T_OPTPATH, OFF(system_prompt_file), 0, 0,
     NULL},
    {"render", "workers", T_U32, OFF(render_workers), 0, 256, "processes"},
    {"render", "worker", T_OPTPATH, OFF(render_worker), 0, 0, NULL},
    {"render", "nice", T_U32, OFF(render_nice), 0, 19, "nice value"},
    {"render", "previews", T_BOOL, OFF(render_previews), 0, 0, NULL},
    {"render", "preview_sessions", T_U32, OFF(render_preview_sessions), 1,
     100000, "sessions"},
    {"render", "preview_ttl_s", T_U32, OFF(render_preview_ttl_s), 1, 31536000,
     "seconds"},
    {"render", "preview_grace_ms", T_U32, OFF(render_preview_grace_ms), 0,
     600000, "milliseconds"},
    {"http", "auth", T_BOOL, OFF(http_auth), 0, 0, NULL},
    {"admin", "secret_file", T_OPTPATH, OFF(admin_secret_file), 0, 0, NULL},
    {"admin", "slowlog_ms", T_U32, OFF(admin_slowlog_ms), 0, 86400000,
     "milliseconds"},
    {"admin", "slowlog_max", T_U32, OFF(admin_slowlog_max), 1, 100000,
     "entries"},
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static const char *const sections[] = {"daemon", "log",   "api",   "plugins",
                                       "tools",  "store", "agent", "render",
                                       "http",   "admin"};
#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))

const char *const atl_config_keys[] = {
    "daemon.socket_dir",
    "daemon.data_dir",
    "daemon.plugin_dir",
    "daemon.pid_file",
    "daemon.foreground",
    "daemon.shutdown_timeout_ms",
    "log.level",
    "log.file",
    "api.max_frame",
    "api.max_clients",
    "plugins.strict",
    "plugins.disable",
    "tools.timeout_ms",
    "tools.long_timeout_ms",
    "tools.threads",
    "tools.check_results",
    "tools.inline_fast",
    "store.synchronous",
    "store.session_cache",
    "store.max_batch",
    "agent.provider",
    "agent.max_turns",
    "agent.queue_max",
    "agent.max_turn_bytes",
    "agent.system_prompt_file",
    "render.workers",
    "render.worker",
    "http.auth",
    "admin.secret_file",
    "admin.slowlog_ms",
    "admin.slowlog_max",
    NULL,
};

/* Like asprintf, but NULL on failure and with a format check. */
static char *fmt_msg(const char *fmt, ...) ATL_PRINTF(1, 2);
static char *fmt_msg(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0)
    s = NULL;
  va_end(ap);
  return s;
}

static char **str_field(atl_config_t *cfg, const key_def_t *k) {
  return (char **)((char *)cfg + k->offset);
}

void atl_config_defaults(atl_config_t *cfg) {
  memset(cfg, 0, sizeof(*cfg));
  cfg->socket_dir = strdup("/run/atelier");
  cfg->data_dir = strdup("/var/lib/atelier");
  cfg->plugin_dir = strdup(ATL_DEFAULT_PLUGIN_DIR);
  cfg->pid_file = NULL;
  cfg->foreground = 0;
  cfg->shutdown_timeout_ms = 10000;
  cfg->log_level = ATL_LOG_INFO;
  cfg->log_file = NULL;
  cfg->max_frame = 8388608;
  cfg->max_clients = 4096;
  cfg->admin_slowlog_ms = 500;
  cfg->admin_slowlog_max = 128;
  cfg->plugins_strict = 0;
  cfg->plugins_disable = NULL;
  cfg->tool_timeout_ms = 30000;
  cfg->tool_long_timeout_ms = 600000;
  cfg->tool_threads = 4;
  cfg->render_previews = 1;
  cfg->render_nice = 10;
  cfg->render_preview_sessions = 64;
  cfg->render_preview_ttl_s = 3600;
  cfg->render_preview_grace_ms = 10000;
  /* One worker process per core: the path tracer is single-threaded per
   * process and scales with processes. */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  cfg->render_workers = cores < 1 ? 1 : cores > 256 ? 256 : (uint32_t)cores;
  cfg->check_results = 0;
  cfg->inline_fast = 1;
  cfg->store_synchronous = 2;
  cfg->session_cache = 1024;
  cfg->max_batch = 1024;
  cfg->agent_provider = NULL;
  cfg->max_turns = 10;
  cfg->queue_max = 4;
  cfg->max_turn_bytes = 1048576;
  cfg->system_prompt_file = NULL;
  /* The HTTP API asks for the token unless the file turns that off. */
  cfg->http_auth = 1;
}

void atl_config_free(atl_config_t *cfg) {
  /* Pointers are cleared so that freeing twice is harmless. */
  for (size_t i = 0; i < NKEYS; i++) {
    if (keys[i].type == T_PATH || keys[i].type == T_OPTPATH) {
      char **p = str_field(cfg, &keys[i]);
      free(*p);
      *p = NULL;
    }
  }
  atl_providers_free(cfg);
}

/* A deep copy, so that a load that fails half way leaves the caller's
 * configuration as it was. Returns 0 or ATL_ENOMEM. */
static int config_copy(atl_config_t *dst, const atl_config_t *src) {
  *dst = *src;
  int rc = 0;
  for (size_t i = 0; i < NKEYS; i++) {
    if (keys[i].type != T_PATH && keys[i].type != T_OPTPATH)
      continue;
    char **p = str_field(dst, &keys[i]);
    if (*p != NULL && (*p = strdup(*p)) == NULL)
      rc = ATL_ENOMEM;
  }
  if (atl_providers_copy(dst, src) < 0)
    rc = ATL_ENOMEM;
  if (rc < 0)
    atl_config_free(dst);
  return rc;
}

/* Returns 1, 0, or -1 if v is not a boolean. */
static int parse_bool(const char *v) {
  static const char *const yes[] = {"yes", "true", "on", "1"};
  static const char *const no[] = {"no", "false", "off", "0"};
  for (size_t i = 0; i < 4; i++) {
    if (strcasecmp(v, yes[i]) == 0)
      return 1;
    if (strcasecmp(v, no[i]) == 0)
      return 0;
  }
  return -1;
}

/* Parses a whole decimal number in [min, max]: digits only (no sign, no
 * spaces, no suffix), and no overflow. Returns 0 or -1. */
static int parse_u32(const char *v, uint32_t min, uint32_t max, uint32_t *out) {
  if (*v == '\0')
    return -1;
  uint64_t n = 0;
  for (const char *p = v; *p; p++) {
    if (*p < '0' || *p > '9')
      return -1;
    n = n * 10 + (uint64_t)(*p - '0');
    if (n > UINT32_MAX)
      return -1;
  }
  if (n < min || n > max)
    return -1;
  *out = (uint32_t)n;
  return 0;
}

/* The state of one atl_config_load(). */
typedef struct {
  const char *path;
  atl_config_t *cfg;
  char *data;       /* the whole file */
  size_t size, pos; /* pos: the start of the next line */
  int lineno;       /* the line inih was last given */
  char *err;        /* the first error; parsing stops there */
  int err_line;     /* and its line */
  int rc;
} load_t;

static void set_err(load_t *st, int rc, char *msg) {
  if (st->err != NULL) {
    free(msg);
    return;
  }
  st->rc = rc;
  st->err = msg;
  st->err_line = st->lineno;
}

/* Finds line n (from 1) of the file, for a syntax error message. */
static const char *nth_line(const load_t *st, int n, int *len) {
  size_t pos = 0;
  for (int i = 1; i < n && pos < st->size; i++) {
    const char *nl = memchr(st->data + pos, '\n', st->size - pos);
    pos = nl ? (size_t)(nl - st->data) + 1 : st->size;
  }
  const char *s = st->data + pos;
  const char *nl = memchr(s, '\n', st->size - pos);
  size_t l = nl ? (size_t)(nl - s) : st->size - pos;
  if (l > 0 && s[l - 1] == '\r')
    l--;
  *len = l > 200 ? 200 : (int)l;
  return s;
}

/* "a, b, c": the names of the known sections, or of the keys of one. */
static char *known_list(const char *section) {
  char buf[512];
  size_t len = 0;
  buf[0] = '\0';
  if (section == NULL) {
    for (size_t i = 0; i < NSECTIONS; i++)
      len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s",
                              i ? ", " : "", sections[i]);
  } else {
    for (size_t i = 0; i < NKEYS; i++) {
      if (strcmp(keys[i].section, section) != 0)
        continue;
      len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s",
                              len ? ", " : "", keys[i].key);
    }
  }
  return strdup(buf);
}

static int known_section(const char *name) {
  if (strncmp(name, "provider.", 9) == 0)
    return atl_provider_name_ok(name + 9);
  for (size_t i = 0; i < NSECTIONS; i++) {
    if (strcmp(name, sections[i]) == 0)
      return 1;
  }
  return 0;
}

/* If the line is a section header "[name]" (the way inih reads one: the
 * name is everything between '[' and the first ']'), checks the name. */
static void check_section_line(load_t *st, const char *s, size_t n) {
  size_t i = 0;
  while (i < n && (s[i] == ' ' || s[i] == '\t'))
    i++;
  if (i == n || s[i] != '[')
    return;
  const char *close = memchr(s + i + 1, ']', n - i - 1);
  if (close == NULL)
    return; /* inih reports the syntax error. */
  size_t name_len = (size_t)(close - (s + i + 1));
  char name[128];
  if (name_len >= sizeof(name))
    name_len = sizeof(name) - 1;
  memcpy(name, s + i + 1, name_len);
  name[name_len] = '\0';
  if (known_section(name))
    return;
  char *known = known_list(NULL);
  if (strncmp(name, "provider.", 9) == 0)
    set_err(st, ATL_ECONFIG,
            fmt_msg("%s:%d: [%s]: a provider's name is 1 to 32 of a-z, 0-9, "
                    "'_' and '-'",
                    st->path, st->lineno, name));
  else
    set_err(st, ATL_ECONFIG,
            fmt_msg("%s:%d: unknown section [%s] (known: %s, provider.NAME)",
                    st->path, st->lineno, name, known ? known : ""));
  free(known);
}

/* inih's fgets-like reader: hands out the next line of the file. */
static char *reader(char *str, int num, void *stream) {
  load_t *st = stream;
  if (st->err != NULL || st->pos >= st->size)
    return NULL;
  const char *s = st->data + st->pos;
  const char *nl = memchr(s, '\n', st->size - st->pos);
  size_t n = nl ? (size_t)(nl - s) + 1 : st->size - st->pos;
  st->pos += n;
  st->lineno++;
  if (n + 1 > (size_t)num) {
    set_err(st, ATL_ECONFIG,
            fmt_msg("%s:%d: line too long (at most %d characters)", st->path,
                    st->lineno, num - 2));
    return NULL;
  }
  memcpy(str, s, n);
  str[n] = '\0';
  check_section_line(st, s, nl ? n - 1 : n);
  return st->err != NULL ? NULL : str;
}

static int provider_key(load_t *st, const char *section, const char *name,
                        const char *value) {
  char *expected = NULL, *unknown = NULL;
  if (atl_provider_conf_set(st->cfg, section + 9, name, value, &expected,
                            &unknown) < 0) {
    set_err(st, ATL_ENOMEM, fmt_msg("out of memory"));
  } else if (unknown != NULL) {
    set_err(st, ATL_ECONFIG,
            fmt_msg("%s:%d: unknown key '%s' in [%s] (known: %s)", st->path,
                    st->lineno, name, section, unknown));
  } else if (expected != NULL) {
    set_err(st, ATL_ECONFIG,
            fmt_msg("%s:%d: [%s] %s: expected %s, got '%s'", st->path,
                    st->lineno, section, name, expected, value));
  }
  free(expected);
  free(unknown);
  return st->err == NULL;
}

static int handler(void *user, const char *section, const char *name,
                   const char *value) {
  load_t *st = user;
  if (st->err != NULL)
    return 0;
  if (*section == '\0') {
    char *known = known_list(NULL);
    set_err(st, ATL_ECONFIG,
            fmt_msg("%s:%d: key '%s' is outside any section (sections: %s)",
                    st->path, st->lineno, name, known ? known : ""));
    free(known);
    return 0;
  }
  if (strncmp(section, "provider.", 9) == 0)
    return provider_key(st, section, name, value);
  const key_def_t *k = NULL;
  for (size_t i = 0; i < NKEYS; i++) {
    if (strcmp(keys[i].section, section) == 0 &&
        strcmp(keys[i].key, name) == 0) {
      k = &keys[i];
      break;
    }
  }
  if (k == NULL) {
    char *known = known_list(section);
    set_err(st, ATL_ECONFIG,
            fmt_msg("%s:%d: unknown key '%s' in [%s] (known: %s)", st->path,
                    st->lineno, name, section, known ? known : ""));
    free(known);
    return 0;
  }

  const char *expected = NULL;
  char range[160];
  void *field = (char *)st->cfg + k->offset;
  switch (k->type) {
  case T_PATH:
  case T_OPTPATH: {
    if (*value == '\0' && k->type == T_PATH) {
      expected = "a path";
      break;
    }
    char *copy = NULL;
    if (*value != '\0' && (copy = strdup(value)) == NULL) {
      set_err(st, ATL_ENOMEM, fmt_msg("out of memory"));
      return 0;
    }
    free(*(char **)field);
    *(char **)field = copy;
    break;
  }
  case T_BOOL: {
    int b = parse_bool(value);
    if (b < 0)
      expected = "yes/no, true/false, on/off or 1/0";
    else
      *(int *)field = b;
    break;
  }
  case T_U32: {
    if (parse_u32(value, k->min, k->max, (uint32_t *)field) < 0) {
      snprintf(range, sizeof(range),
               "a whole number of %s between %" PRIu32 " and %" PRIu32, k->unit,
               k->min, k->max);
      expected = range;
    }
    break;
  }
  case T_LEVEL: {
    int level = atl_log_level_parse(value);
    if (level < 0)
      expected = "one of error, warn, info, debug, trace";
    else
      *(atl_log_level_t *)field = (atl_log_level_t)level;
    break;
  }
  case T_SYNC:
    if (strcasecmp(value, "normal") == 0)
      *(int *)field = 1;
    else if (strcasecmp(value, "full") == 0)
      *(int *)field = 2;
    else
      expected = "normal or full";
    break;
  }
  if (expected != NULL) {
    set_err(st, ATL_ECONFIG,
            fmt_msg("%s:%d: [%s] %s: expected %s, got '%s'", st->path,
                    st->lineno, section, name, expected, value));
    return 0;
  }
  return 1;
}

/* Reads a whole file into memory. Returns 0 or -errno. */
static int slurp(const char *path, char **data, size_t *size) {
  FILE *f = fopen(path, "re");
  if (f == NULL)
    return -errno;
  char *buf = NULL;
  size_t len = 0, cap = 0;
  int rc = 0;
  for (;;) {
    if (cap - len < 4096) {
      cap = cap ? cap * 2 : 8192;
      char *grown = realloc(buf, cap);
      if (grown == NULL) {
        rc = -ENOMEM;
        break;
      }
      buf = grown;
    }
    size_t n = fread(buf + len, 1, cap - len, f);
    len += n;
    if (n == 0) {
      if (ferror(f))
        rc = -EIO;
      break;
    }
  }
  fclose(f);
  if (rc < 0) {
    free(buf);
    return rc;
  }
  *data = buf;
  *size = len;
  return 0;
}

int atl_config_load(atl_config_t *cfg, const char *path, char **err) {
  *err = NULL;
  load_t st = {.path = path};
  int rc = slurp(path, &st.data, &st.size);
  if (rc < 0) {
    *err = fmt_msg("%s: cannot read the configuration file: %s", path,
                   strerror(-rc));
    return rc == -ENOENT ? ATL_ENOENT : ATL_ECONFIG;
  }
  atl_config_t work;
  if (config_copy(&work, cfg) < 0) {
    free(st.data);
    *err = fmt_msg("out of memory");
    return ATL_ENOMEM;
  }
  st.cfg = &work;
  int line = ini_parse_stream(reader, &st, handler, &st);
  if (line > 0 && (st.err == NULL || line < st.err_line)) {
    /* inih returns the first line it could not read. It goes on after a
     * syntax error, so one of our own errors may have come later and the
     * earlier syntax error is the one to report. */
    int len;
    const char *text = nth_line(&st, line, &len);
    free(st.err);
    st.rc = ATL_ECONFIG;
    st.err = fmt_msg("%s:%d: syntax error: expected '[section]' or "
                     "'key = value', got '%.*s'",
                     path, line, len, text);
  } else if (st.err == NULL && line < 0) {
    st.rc = ATL_ENOMEM;
    st.err = fmt_msg("%s: out of memory", path);
  }
  free(st.data);
  if (st.err == NULL && st.rc == 0) {
    char *why = atl_providers_check(&work);
    if (why != NULL) {
      st.rc = ATL_ECONFIG;
      st.err = fmt_msg("%s: %s", path, why);
      free(why);
    }
  }
  if (st.err != NULL || st.rc < 0) {
    atl_config_free(&work);
    *err = st.err;
    return st.rc < 0 ? st.rc : ATL_ECONFIG;
  }
  atl_config_free(cfg);
  *cfg = work;
  return 0;
}

static const char usage_text[] =
    "Usage: atelierd [OPTION]...\n"
    "Host LLM tool plugins and serve them over a JSON-RPC socket.\n"
    "\n"
    "  -c, --config FILE       read FILE (INI) after the built-in defaults;\n"
    "                          the other options override it\n"
    "  -f, --foreground        stay in the foreground (do not detach)\n"
    "      --socket-dir DIR    put api.sock and admin.sock in DIR\n"
    "                          (default /run/atelier)\n"
    "      --data-dir DIR      keep the session store in DIR\n"
    "                          (default /var/lib/atelier)\n"
    "      --plugin-dir DIR    load *.so plugins from DIR\n"
    "                          (default " ATL_DEFAULT_PLUGIN_DIR ")\n"
    "      --log-level LEVEL   error, warn, info, debug or trace\n"
    "                          (default info)\n"
    "  -V, --version           print the version and exit\n"
    "  -h, --help              print this help and exit\n"
    "\n"
    "Exit status: 0 on success, 1 on a runtime failure, 2 on a usage or\n"
    "configuration error. See atelierd(8).\n";

const char *atl_config_usage(void) {
  return usage_text;
}

enum {
  OPT_SOCKET_DIR = 256,
  OPT_DATA_DIR,
  OPT_PLUGIN_DIR,
  OPT_LOG_LEVEL,
};

static const struct option long_options[] = {
    {"config", required_argument, NULL, 'c'},
    {"foreground", no_argument, NULL, 'f'},
    {"socket-dir", required_argument, NULL, OPT_SOCKET_DIR},
    {"data-dir", required_argument, NULL, OPT_DATA_DIR},
    {"plugin-dir", required_argument, NULL, OPT_PLUGIN_DIR},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"version", no_argument, NULL, 'V'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Replaces a string field with a copy of v. Returns 0 or ATL_ENOMEM. */
static int set_str(char **field, const char *v) {
  char *copy = strdup(v);
  if (copy == NULL)
    return ATL_ENOMEM;
  free(*field);
  *field = copy;
  return 0;
}

/* The name of the option getopt just complained about, as the user wrote
 * it ("--bogus", "-x"). For a long option getopt has moved optind past the
 * argument; for a short one optopt holds the letter (and optind may not
 * have moved, within a cluster like "-fx"). */
static char *bad_option_name(char **argv, int argc, int *has_value) {
  const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
  *has_value = 0;
  if (strncmp(arg, "--", 2) == 0) {
    const char *eq = strchr(arg, '=');
    *has_value = eq != NULL;
    return fmt_msg("%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
  }
  return fmt_msg("-%c", optopt > 0 && optopt < 256 ? optopt : '?');
}

int atl_config_from_args(atl_config_t *cfg, int argc, char **argv, char **err) {
  const char *config = NULL, *socket_dir = NULL, *data_dir = NULL;
  const char *plugin_dir = NULL, *log_level = NULL;
  int foreground = 0, help = 0, version = 0, level = -1;
  int rc = 0;
  *err = NULL;
  atl_config_defaults(cfg);

  /* Setting optind to 0 makes glibc's getopt start afresh, so that this can
   * be called more than once in a process (the tests do). '+' stops at the
   * first non-option instead of reordering argv; ':' makes getopt report a
   * missing argument as ':' and lets us word the messages. */
  optind = 0;
  opterr = 0;
  for (;;) {
    optopt = 0;
    int c = getopt_long(argc, argv, "+:c:fhV", long_options, NULL);
    if (c == -1)
      break;
    switch (c) {
    case 'c':
      config = optarg;
      break;
    case 'f':
      foreground = 1;
      break;
    case OPT_SOCKET_DIR:
      socket_dir = optarg;
      break;
    case OPT_DATA_DIR:
      data_dir = optarg;
      break;
    case OPT_PLUGIN_DIR:
      plugin_dir = optarg;
      break;
    case OPT_LOG_LEVEL:
      log_level = optarg;
      break;
    case 'V':
      version = 1;
      break;
    case 'h':
      help = 1;
      break;
    case ':': {
      int has_value;
      char *name = bad_option_name(argv, argc, &has_value);
      *err = fmt_msg("option '%s' needs an argument; try --help",
                     name ? name : "?");
      free(name);
      rc = ATL_EINVAL;
      goto fail;
    }
    default: {
      /* A known long option given a value it does not take ("--help=x")
       * also lands here, with optopt set to the option's code. */
      int has_value;
      char *name = bad_option_name(argv, argc, &has_value);
      if (has_value && optopt != 0)
        *err = fmt_msg("option '%s' takes no argument; try --help",
                       name ? name : "?");
      else
        *err = fmt_msg("unknown option '%s'; try --help", name ? name : "?");
      free(name);
      rc = ATL_EINVAL;
      goto fail;
    }
    }
  }
  if (optind < argc) {
    *err = fmt_msg("unexpected argument '%s'; try --help", argv[optind]);
    rc = ATL_EINVAL;
    goto fail;
  }

  /* Help and version win over everything else that is well formed, so
   * that they work whatever the configuration file says. */
  if (help) {
    fputs(usage_text, stdout);
    fflush(stdout);
    rc = 1;
    goto fail;
  }
  if (version) {
    printf("atelierd " PACKAGE_VERSION " (plugin ABI %d.%d)\n",
           ATL_PLUGIN_ABI_MAJOR, ATL_PLUGIN_ABI_MINOR);
    fflush(stdout);
    rc = 1;
    goto fail;
  }

  /* Check the flag values before reading the file, so that a typo on the
   * command line is reported as such. */
  const struct {
    const char *flag, *value;
  } paths[] = {{"--config", config},
               {"--socket-dir", socket_dir},
               {"--data-dir", data_dir},
               {"--plugin-dir", plugin_dir}};
  for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
    if (paths[i].value != NULL && *paths[i].value == '\0') {
      *err = fmt_msg("%s: expected a path, got ''; try --help", paths[i].flag);
      rc = ATL_EINVAL;
      goto fail;
    }
  }
  if (log_level != NULL && (level = atl_log_level_parse(log_level)) < 0) {
    *err = fmt_msg("--log-level: expected one of error, warn, info, debug, "
                   "trace, got '%s'; try --help",
                   log_level);
    rc = ATL_EINVAL;
    goto fail;
  }

  if (config != NULL && (rc = atl_config_load(cfg, config, err)) < 0)
    goto fail;

  if (foreground)
    cfg->foreground = 1;
  if (level >= 0)
    cfg->log_level = (atl_log_level_t)level;
  if ((socket_dir && (rc = set_str(&cfg->socket_dir, socket_dir)) < 0) ||
      (data_dir && (rc = set_str(&cfg->data_dir, data_dir)) < 0) ||
      (plugin_dir && (rc = set_str(&cfg->plugin_dir, plugin_dir)) < 0)) {
    *err = fmt_msg("out of memory");
    goto fail;
  }
  return 0;

fail:
  /* The caller may or may not free cfg on failure; either is safe. */
  atl_config_free(cfg);
  return rc;
}
