#include "atl-build.h" /* autoconf's, for PACKAGE_VERSION */

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "config.h" alone would find autoconf's header in the build directory
 * first, so the daemon's is named by its path from the source top. */
#include "daemon/config.h"

#ifndef ATL_TEST_SRCDIR
#define ATL_TEST_SRCDIR "."
#endif

/* Each test writes at most one configuration file; this is its name. */
static char conf_path[] = "/tmp/atl_test_config.XXXXXX";
static int conf_written;

static const char *write_conf(const char *text) {
  if (conf_written)
    unlink(conf_path);
  strcpy(conf_path, "/tmp/atl_test_config.XXXXXX");
  int fd = mkstemp(conf_path);
  cr_assert_geq(fd, 0);
  size_t n = strlen(text);
  cr_assert_eq(write(fd, text, n), (ssize_t)n);
  close(fd);
  conf_written = 1;
  return conf_path;
}

static void cleanup(void) {
  if (conf_written)
    unlink(conf_path);
}

TestSuite(config, .fini = cleanup);

/* Loads text over the defaults and expects the code rc and the error
 * message want_fmt, in which "%s" stands for the file's name. */
static void expect_error(const char *text, int rc, const char *want_fmt) {
  atl_config_t cfg;
  atl_config_defaults(&cfg);
  const char *path = write_conf(text);
  char *err = NULL;
  cr_assert_eq(atl_config_load(&cfg, path, &err), rc);
  cr_assert_not_null(err);
  const char *at = strstr(want_fmt, "%s");
  cr_assert_not_null(at);
  char want[1024];
  snprintf(want, sizeof(want), "%.*s%s%s", (int)(at - want_fmt), want_fmt, path,
           at + 2);
  cr_assert_str_eq(err, want);
  /* A failed load leaves the configuration alone. */
  cr_assert_str_eq(cfg.socket_dir, "/run/atelier");
  cr_assert_eq(cfg.tool_threads, 4);
  free(err);
  atl_config_free(&cfg);
}

static void load_ok(atl_config_t *cfg, const char *text) {
  atl_config_defaults(cfg);
  char *err = NULL;
  int rc = atl_config_load(cfg, write_conf(text), &err);
  cr_assert_eq(rc, 0, "unexpected error: %s", err ? err : "(none)");
  cr_assert_null(err);
}

static void assert_defaults(const atl_config_t *cfg) {
  cr_assert_str_eq(cfg->socket_dir, "/run/atelier");
  cr_assert_str_eq(cfg->data_dir, "/var/lib/atelier");
  cr_assert_str_eq(cfg->plugin_dir, ATL_DEFAULT_PLUGIN_DIR);
  cr_assert_null(cfg->pid_file);
  cr_assert_eq(cfg->foreground, 0);
  cr_assert_eq(cfg->shutdown_timeout_ms, 10000);
  cr_assert_eq(cfg->log_level, ATL_LOG_INFO);
  cr_assert_null(cfg->log_file);
  cr_assert_eq(cfg->max_frame, 8388608);
  cr_assert_eq(cfg->max_clients, 4096);
  cr_assert_eq(cfg->plugins_strict, 0);
  cr_assert_null(cfg->plugins_disable);
  cr_assert_eq(cfg->tool_timeout_ms, 30000);
  cr_assert_eq(cfg->tool_long_timeout_ms, 600000);
  cr_assert_eq(cfg->tool_threads, 4);
  cr_assert_eq(cfg->check_results, 0);
  cr_assert_eq(cfg->inline_fast, 1);
  cr_assert_eq(cfg->store_synchronous, 2);
  cr_assert_eq(cfg->session_cache, 1024);
  cr_assert_eq(cfg->max_batch, 1024);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  cr_assert_eq(cfg->render_workers, (uint32_t)(cores > 256 ? 256 : cores));
  cr_assert_null(cfg->render_worker);
}

Test(config, defaults) {
  atl_config_t cfg;
  atl_config_defaults(&cfg);
  assert_defaults(&cfg);
  atl_config_free(&cfg);
  atl_config_free(&cfg); /* a second free is harmless */
}

Test(config, file_sets_every_key) {
  atl_config_t cfg;
  load_ok(&cfg, "; a comment\n"
                "# another\n"
                "[daemon]\n"
                "socket_dir = /tmp/s\n"
                "data_dir=/tmp/d\n"
                "plugin_dir = /tmp/p ; inline comment\n"
                "pid_file = /tmp/atelierd.pid\n"
                "foreground = yes\n"
                "shutdown_timeout_ms = 0\n"
                "\n"
                "[log]\n"
                "level = trace\n"
                "file = /tmp/atelierd.log\n"
                "[api]\n"
                "max_frame = 1024\n"
                "max_clients = 7\n"
                "[plugins]\n"
                "strict = on\n"
                "disable = shapes, render\n"
                "[tools]\n"
                "timeout_ms = 5\n"
                "long_timeout_ms = 86400000\n"
                "threads = 64\n"
                "check_results = true\n"
                "inline_fast = no\n"
                "[store]\n"
                "synchronous = normal\n"
                "session_cache = 1\n"
                "max_batch = 65536\n"
                "[render]\n"
                "workers = 0\n"
                "worker = /opt/w\n");
  cr_assert_str_eq(cfg.socket_dir, "/tmp/s");
  cr_assert_str_eq(cfg.data_dir, "/tmp/d");
  cr_assert_str_eq(cfg.plugin_dir, "/tmp/p");
  cr_assert_str_eq(cfg.pid_file, "/tmp/atelierd.pid");
  cr_assert_eq(cfg.foreground, 1);
  cr_assert_eq(cfg.shutdown_timeout_ms, 0);
  cr_assert_eq(cfg.log_level, ATL_LOG_TRACE);
  cr_assert_str_eq(cfg.log_file, "/tmp/atelierd.log");
  cr_assert_eq(cfg.max_frame, 1024);
  cr_assert_eq(cfg.max_clients, 7);
  cr_assert_eq(cfg.plugins_strict, 1);
  cr_assert_str_eq(cfg.plugins_disable, "shapes, render");
  cr_assert_eq(cfg.tool_timeout_ms, 5);
  cr_assert_eq(cfg.tool_long_timeout_ms, 86400000);
  cr_assert_eq(cfg.tool_threads, 64);
  cr_assert_eq(cfg.check_results, 1);
  cr_assert_eq(cfg.inline_fast, 0);
  cr_assert_eq(cfg.store_synchronous, 1);
  cr_assert_eq(cfg.session_cache, 1);
  cr_assert_eq(cfg.max_batch, 65536);
  cr_assert_eq(cfg.render_workers, 0);
  cr_assert_str_eq(cfg.render_worker, "/opt/w");
  atl_config_free(&cfg);
}

Test(config, empty_optional_strings_mean_none) {
  atl_config_t cfg;
  load_ok(&cfg, "[daemon]\npid_file = /x\npid_file =\n[log]\nfile =\n");
  cr_assert_null(cfg.pid_file);
  cr_assert_null(cfg.log_file);
  atl_config_free(&cfg);
}

Test(config, every_bool_form) {
  static const char *const yes[] = {"yes", "true", "on", "1", "YES", "True"};
  static const char *const no[] = {"no", "false", "off", "0", "NO", "Off"};
  for (size_t i = 0; i < 6; i++) {
    for (int want = 0; want < 2; want++) {
      char text[128];
      snprintf(text, sizeof(text), "[tools]\ncheck_results = %s\n",
               want ? yes[i] : no[i]);
      atl_config_t cfg;
      atl_config_defaults(&cfg);
      cfg.check_results = !want;
      char *err = NULL;
      cr_assert_eq(atl_config_load(&cfg, write_conf(text), &err), 0, "%s",
                   text);
      cr_assert_eq(cfg.check_results, want, "%s", text);
      atl_config_free(&cfg);
    }
  }
}

Test(config, bad_bool) {
  expect_error("[plugins]\n\nstrict = maybe\n", ATL_ECONFIG,
               "%s:3: [plugins] strict: expected yes/no, true/false, on/off "
               "or 1/0, got 'maybe'");
}

Test(config, number_not_a_number) {
  expect_error("[tools]\ntimeout_ms = soon\n", ATL_ECONFIG,
               "%s:2: [tools] timeout_ms: expected a whole number of "
               "milliseconds between 1 and 86400000, got 'soon'");
}

Test(config, number_ranges_and_junk) {
  static const struct {
    const char *value;
    int ok;
  } cases[] = {
      {"1024", 1},
      {"1073741824", 1},
      {"1023", 0},
      {"1073741825", 0},
      {"0", 0},
      {"-2048", 0},
      {"+2048", 0},
      {"2048x", 0},
      {"2 048", 0},
      {"0x800", 0},
      {"2048.0", 0},
      {"4294967296", 0},
      {"99999999999999999999999", 0},
      {"00002048", 1},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char text[128];
    snprintf(text, sizeof(text), "[api]\nmax_frame = %s\n", cases[i].value);
    atl_config_t cfg;
    atl_config_defaults(&cfg);
    char *err = NULL;
    const char *path = write_conf(text);
    int rc = atl_config_load(&cfg, path, &err);
    if (cases[i].ok) {
      cr_assert_eq(rc, 0, "%s: %s", cases[i].value, err);
      cr_assert_eq(cfg.max_frame, strtoul(cases[i].value, NULL, 10));
    } else {
      cr_assert_eq(rc, ATL_ECONFIG, "%s accepted", cases[i].value);
      char want[256];
      snprintf(want, sizeof(want),
               "%s:2: [api] max_frame: expected a whole number of bytes "
               "between 1024 and 1073741824, got '%s'",
               path, cases[i].value);
      cr_assert_str_eq(err, want);
      cr_assert_eq(cfg.max_frame, 8388608);
    }
    free(err);
    atl_config_free(&cfg);
  }
}

Test(config, threads_range) {
  expect_error("[tools]\nthreads = 65\n", ATL_ECONFIG,
               "%s:2: [tools] threads: expected a whole number of threads "
               "between 1 and 64, got '65'");
}

Test(config, render_workers_range) {
  expect_error("[render]\nworkers = 257\n", ATL_ECONFIG,
               "%s:2: [render] workers: expected a whole number of processes "
               "between 0 and 256, got '257'");
}

Test(config, empty_number) {
  expect_error("[store]\nmax_batch =\n", ATL_ECONFIG,
               "%s:2: [store] max_batch: expected a whole number of "
               "transactions between 1 and 65536, got ''");
}

Test(config, bad_level_and_synchronous) {
  expect_error("[log]\nlevel = loud\n", ATL_ECONFIG,
               "%s:2: [log] level: expected one of error, warn, info, debug, "
               "trace, got 'loud'");
  expect_error("[store]\nsynchronous = off\n", ATL_ECONFIG,
               "%s:2: [store] synchronous: expected normal or full, got "
               "'off'");
}

Test(config, empty_required_path) {
  expect_error("[daemon]\nsocket_dir =\n", ATL_ECONFIG,
               "%s:2: [daemon] socket_dir: expected a path, got ''");
}

Test(config, unknown_key) {
  expect_error("[tools]\n# comment\n\ntimeout_ms = 10\nfoo = 1\n", ATL_ECONFIG,
               "%s:5: unknown key 'foo' in [tools] (known: timeout_ms, "
               "long_timeout_ms, threads, check_results, inline_fast)");
}

Test(config, unknown_section) {
  expect_error(
      "[daemon]\nforeground = no\n[toolz]\n", ATL_ECONFIG,
      "%s:3: unknown section [toolz] (known: daemon, log, api, "
      "plugins, tools, store, agent, render, http, admin, provider.NAME)");
}

Test(config, key_outside_section) {
  expect_error(
      "foreground = yes\n", ATL_ECONFIG,
      "%s:1: key 'foreground' is outside any section (sections: "
      "daemon, log, api, plugins, tools, store, agent, render, http, admin)");
}

Test(config, syntax_error_reported_before_later_errors) {
  expect_error("[daemon]\nforeground = no\nthis is not ini\n[tools]\nfoo = 1\n",
               ATL_ECONFIG,
               "%s:3: syntax error: expected '[section]' or 'key = value', "
               "got 'this is not ini'");
  expect_error("[daemon\n", ATL_ECONFIG,
               "%s:1: syntax error: expected '[section]' or 'key = value', "
               "got '[daemon'");
}

Test(config, crlf_line_numbers) {
  expect_error("[api]\r\nmax_clients = 10\r\nmax_clients = lots\r\n",
               ATL_ECONFIG,
               "%s:3: [api] max_clients: expected a whole number of clients "
               "between 1 and 65536, got 'lots'");
}

Test(config, long_line) {
  char text[600];
  memset(text, 'x', sizeof(text));
  memcpy(text, "[log]\nfile = /", 14);
  text[sizeof(text) - 2] = '\n';
  text[sizeof(text) - 1] = '\0';
  atl_config_t cfg;
  atl_config_defaults(&cfg);
  char *err = NULL;
  const char *path = write_conf(text);
  cr_assert_eq(atl_config_load(&cfg, path, &err), ATL_ECONFIG);
  char want[256];
  snprintf(want, sizeof(want), "%s:2: line too long", path);
  cr_assert_eq(strncmp(err, want, strlen(want)), 0, "%s", err);
  free(err);
  atl_config_free(&cfg);
}

Test(config, missing_file) {
  atl_config_t cfg;
  atl_config_defaults(&cfg);
  char *err = NULL;
  cr_assert_eq(atl_config_load(&cfg, "/nonexistent/atelierd.conf", &err),
               ATL_ENOENT);
  cr_assert_not_null(strstr(err, "/nonexistent/atelierd.conf"));
  free(err);
  atl_config_free(&cfg);
}

/* The sample documents every key, and loads as shipped. */
Test(config, sample_loads_and_mentions_every_key) {
  const char *srcdir = getenv("ATL_TEST_SRCDIR");
  if (srcdir == NULL)
    srcdir = ATL_TEST_SRCDIR;
  char path[1024];
  snprintf(path, sizeof(path), "%s/conf/atelierd.conf.sample", srcdir);
  atl_config_t cfg;
  atl_config_defaults(&cfg);
  char *err = NULL;
  cr_assert_eq(atl_config_load(&cfg, path, &err), 0, "%s", err);
  /* As shipped, the sample changes nothing. */
  assert_defaults(&cfg);
  atl_config_free(&cfg);

  FILE *f = fopen(path, "r");
  cr_assert_not_null(f);
  static char text[65536];
  size_t n = fread(text, 1, sizeof(text) - 1, f);
  text[n] = '\0';
  fclose(f);
  int count = 0;
  for (const char *const *k = atl_config_keys; *k; k++, count++) {
    char section[32], key[64], header[40], line[80], commented[80];
    const char *dot = strchr(*k, '.');
    cr_assert_not_null(dot);
    snprintf(section, sizeof(section), "%.*s", (int)(dot - *k), *k);
    snprintf(key, sizeof(key), "%s", dot + 1);
    snprintf(header, sizeof(header), "\n[%s]\n", section);
    const char *sec = strstr(text, header);
    cr_assert_not_null(sec, "no [%s] in the sample", section);
    const char *next = strstr(sec + 1, "\n[");
    snprintf(line, sizeof(line), "\n%s =", key);
    snprintf(commented, sizeof(commented), "\n# %s =", key);
    const char *at = strstr(sec, line);
    if (at == NULL || (next != NULL && at > next))
      at = strstr(sec, commented);
    cr_assert(at != NULL && (next == NULL || at < next),
              "%s is not in the sample's [%s]", *k, section);
  }
  cr_assert_eq(count, 31);
}

/* Runs atl_config_from_args on a NULL-terminated list of arguments. */
static int from_args(atl_config_t *cfg, char **err, ...) {
  char *argv[32];
  int argc = 0;
  va_list ap;
  va_start(ap, err);
  argv[argc++] = "atelierd";
  for (char *a; (a = va_arg(ap, char *)) != NULL;)
    argv[argc++] = a;
  va_end(ap);
  argv[argc] = NULL;
  return atl_config_from_args(cfg, argc, argv, err);
}

Test(config, args_none_gives_defaults) {
  atl_config_t cfg;
  char *err = NULL;
  cr_assert_eq(from_args(&cfg, &err, NULL), 0);
  assert_defaults(&cfg);
  atl_config_free(&cfg);
}

Test(config, flags_override_file) {
  const char *path = write_conf("[daemon]\n"
                                "socket_dir = /file/s\n"
                                "data_dir = /file/d\n"
                                "plugin_dir = /file/p\n"
                                "[log]\nlevel = error\n"
                                "[tools]\nthreads = 9\n");
  atl_config_t cfg;
  char *err = NULL;
  cr_assert_eq(from_args(&cfg, &err, "--socket-dir", "/flag/s",
                         "--data-dir=/flag/d", "-f", "--log-level", "debug",
                         "--config", path, NULL),
               0, "%s", err);
  cr_assert_str_eq(cfg.socket_dir, "/flag/s");
  cr_assert_str_eq(cfg.data_dir, "/flag/d");
  cr_assert_str_eq(cfg.plugin_dir, "/file/p");
  cr_assert_eq(cfg.foreground, 1);
  cr_assert_eq(cfg.log_level, ATL_LOG_DEBUG);
  cr_assert_eq(cfg.tool_threads, 9);
  atl_config_free(&cfg);

  /* Called again in the same process: getopt starts afresh. */
  cr_assert_eq(from_args(&cfg, &err, "-c", path, "--plugin-dir", "/flag/p",
                         "--foreground", NULL),
               0, "%s", err);
  cr_assert_str_eq(cfg.socket_dir, "/file/s");
  cr_assert_str_eq(cfg.plugin_dir, "/flag/p");
  cr_assert_eq(cfg.log_level, ATL_LOG_ERROR);
  cr_assert_eq(cfg.foreground, 1);
  atl_config_free(&cfg);
}

Test(config, config_file_errors_pass_through) {
  const char *path = write_conf("[tools]\nthreads = many\n");
  atl_config_t cfg;
  char *err = NULL;
  cr_assert_eq(from_args(&cfg, &err, "--config", path, NULL), ATL_ECONFIG);
  cr_assert_not_null(strstr(err, ":2: [tools] threads: expected"));
  free(err);
  atl_config_free(&cfg); /* harmless after a failure */
  cr_assert_eq(
      from_args(&cfg, &err, "--config", "/nonexistent/atelierd.conf", NULL),
      ATL_ENOENT);
  free(err);
}

Test(config, help_prints_usage, .init = cr_redirect_stdout) {
  atl_config_t cfg;
  char *err = NULL;
  cr_assert_eq(from_args(&cfg, &err, "--help", NULL), 1);
  cr_assert_null(err);
  fflush(stdout);
  cr_assert_stdout_eq_str(atl_config_usage());
}

Test(config, short_help_ignores_bad_config, .init = cr_redirect_stdout) {
  atl_config_t cfg;
  char *err = NULL;
  cr_assert_eq(from_args(&cfg, &err, "-h", "--config", "/nonexistent", NULL),
               1);
}

Test(config, usage_lists_every_flag) {
  const char *u = atl_config_usage();
  static const char *const flags[] = {
      "--config",   "--foreground", "-f",          "--socket-dir",
      "--data-dir", "--plugin-dir", "--log-level", "--version",
      "-V",         "--help",       "-h"};
  for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
    cr_assert_not_null(strstr(u, flags[i]), "%s missing", flags[i]);
}

Test(config, version_prints_version, .init = cr_redirect_stdout) {
  atl_config_t cfg;
  char *err = NULL;
  cr_assert_eq(from_args(&cfg, &err, "--version", NULL), 1);
  fflush(stdout);
  char want[64];
  snprintf(want, sizeof(want), "atelierd %s (plugin ABI %d.%d)\n",
           PACKAGE_VERSION, ATL_PLUGIN_ABI_MAJOR, ATL_PLUGIN_ABI_MINOR);
  cr_assert_stdout_eq_str(want);
}

Test(config, short_version, .init = cr_redirect_stdout) {
  atl_config_t cfg;
  char *err = NULL;
  cr_assert_eq(from_args(&cfg, &err, "-V", NULL), 1);
}

static void expect_arg_error(const char *want, ...) {
  char *argv[16];
  int argc = 0;
  va_list ap;
  va_start(ap, want);
  argv[argc++] = "atelierd";
  for (char *a; (a = va_arg(ap, char *)) != NULL;)
    argv[argc++] = a;
  va_end(ap);
  argv[argc] = NULL;
  atl_config_t cfg;
  char *err = NULL;
  cr_assert_eq(atl_config_from_args(&cfg, argc, argv, &err), ATL_EINVAL);
  cr_assert_str_eq(err, want);
  free(err);
}

Test(config, bad_flags) {
  expect_arg_error("unknown option '--bogus'; try --help", "--bogus", NULL);
  expect_arg_error("unknown option '--bogus'; try --help", "-f", "--bogus=1",
                   NULL);
  expect_arg_error("unknown option '-x'; try --help", "-x", NULL);
  expect_arg_error("option '--config' needs an argument; try --help",
                   "--config", NULL);
  expect_arg_error("option '-c' needs an argument; try --help", "-c", NULL);
  expect_arg_error("--log-level: expected one of error, warn, info, debug, "
                   "trace, got 'loud'; try --help",
                   "--log-level", "loud", NULL);
  expect_arg_error("--socket-dir: expected a path, got ''; try --help",
                   "--socket-dir=", NULL);
  expect_arg_error("unexpected argument 'extra'; try --help", "extra", NULL);
  expect_arg_error("option '--foreground' takes no argument; try --help",
                   "--foreground=yes", NULL);
}

/* ---- [agent] and [provider.NAME] ---- */

Test(config, agent_and_providers) {
  atl_config_t cfg;
  atl_config_defaults(&cfg);
  cr_assert_null(cfg.agent_provider);
  cr_assert_eq(cfg.max_turns, 10);
  cr_assert_eq(cfg.queue_max, 4);
  cr_assert_eq(cfg.max_turn_bytes, 1048576);
  atl_config_free(&cfg); /* load_ok starts from the defaults again */
  load_ok(&cfg, "[agent]\n"
                "provider = local\n"
                "max_turns = 3\n"
                "max_turn_bytes = 4096\n"
                "[provider.claude]\n"
                "type = anthropic\n"
                "api_key_env = ANTHROPIC_API_KEY\n"
                "models = claude-sonnet-4-5, claude-haiku-4-5\n"
                "[provider.local]\n"
                "type = openai\n"
                "base_url = http://127.0.0.1:11434//\n"
                "timeout_ms = 5000\n"
                "max_tokens = 100\n");
  cr_assert_str_eq(cfg.agent_provider, "local");
  cr_assert_eq(cfg.max_turns, 3);
  cr_assert_eq(cfg.max_turn_bytes, 4096);
  cr_assert_eq(cfg.n_providers, 2);
  const atl_provider_conf_t *c = atl_provider_conf(&cfg, "claude");
  cr_assert_str_eq(c->type, "anthropic");
  cr_assert_null(c->base_url);
  cr_assert_str_eq(c->api_key_env, "ANTHROPIC_API_KEY");
  cr_assert_str_eq(c->models, "claude-sonnet-4-5, claude-haiku-4-5");
  cr_assert_eq(c->timeout_ms, 120000);
  cr_assert_eq(c->max_tokens, 8192);
  cr_assert_eq(c->context_tokens, 0);
  cr_assert_eq(c->max_tokens_param, ATL_TOKEN_PARAM_AUTO);
  cr_assert_eq(c->thinking_set, 0);
  const atl_provider_conf_t *l = atl_provider_conf(&cfg, "local");
  cr_assert_str_eq(l->base_url, "http://127.0.0.1:11434");
  cr_assert_eq(l->timeout_ms, 5000);
  cr_assert_eq(l->max_tokens, 100);
  atl_config_free(&cfg);
  cr_assert_null(cfg.providers);
}

Test(config, provider_errors) {
  expect_error("[provider.a]\ntype = cohere\n", ATL_ECONFIG,
               "%s:2: [provider.a] type: expected gemini, anthropic, openai or "
               "replay, got 'cohere'");
  expect_error("[provider.a]\ntype = openai\nbase_url = ftp://x\n", ATL_ECONFIG,
               "%s:3: [provider.a] base_url: expected an http:// or https:// "
               "URL, got 'ftp://x'");
  expect_error("[provider.a]\ntype = openai\napi_key = sk-123\n", ATL_ECONFIG,
               "%s:3: unknown key 'api_key' in [provider.a] (known: type, "
               "base_url, api_key_env, models, cassette, timeout_ms, "
               "max_tokens, thinking_budget, context_tokens, "
               "max_tokens_param)");
  expect_error("[provider.Big Name]\ntype = openai\n", ATL_ECONFIG,
               "%s:1: [provider.Big Name]: a provider's name is 1 to 32 of "
               "a-z, 0-9, '_' and '-'");
  expect_error("[provider.a]\nmodels = m\n", ATL_ECONFIG,
               "%s: [provider.a] has no type (gemini, anthropic, openai or "
               "replay)");
  expect_error("[agent]\nprovider = claude\n", ATL_ECONFIG,
               "%s: [agent] provider: there is no section [provider.claude] "
               "(add one, or name another)");
  expect_error("[provider.r]\ntype = replay\n", ATL_ECONFIG,
               "%s: [provider.r] is a replay without a cassette");
  expect_error("[agent]\nmax_turns = 0\n", ATL_ECONFIG,
               "%s:2: [agent] max_turns: expected a whole number of turns "
               "between 1 and 1000, got '0'");
  expect_error("[agent]\nmax_turn_bytes = 100\n", ATL_ECONFIG,
               "%s:2: [agent] max_turn_bytes: expected a whole number of "
               "bytes between 1024 and 1073741824, got '100'");
  expect_error("[provider.a]\ntype = anthropic\nthinking_budget = 100\n",
               ATL_ECONFIG,
               "%s:3: [provider.a] thinking_budget: expected 0 (no extended "
               "thinking) or a whole number of tokens between 1024 and "
               "1000000, got '100'");
  expect_error("[provider.a]\ntype = anthropic\nthinking_budget = 8192\n",
               ATL_ECONFIG,
               "%s: [provider.a] thinking_budget (8192) must be less than "
               "max_tokens (8192): the thinking counts against max_tokens");
  expect_error("[provider.a]\ntype = openai\nthinking_budget = 0\n",
               ATL_ECONFIG,
               "%s: [provider.a] thinking_budget is for type = anthropic or "
               "gemini (OpenAI's reasoning models set their own)");
  expect_error("[provider.a]\ntype = openai\ncontext_tokens = 10\n",
               ATL_ECONFIG,
               "%s:3: [provider.a] context_tokens: expected 0 (the model's "
               "window) or a whole number of tokens between 1000 and "
               "100000000, got '10'");
  expect_error("[provider.a]\ntype = openai\nmax_tokens_param = max\n",
               ATL_ECONFIG,
               "%s:3: [provider.a] max_tokens_param: expected auto, max_tokens "
               "or max_completion_tokens, got 'max'");
  expect_error("[provider.a]\ntype = gemini\nmax_tokens_param = max_tokens\n",
               ATL_ECONFIG,
               "%s: [provider.a] max_tokens_param is for type = openai");
}

Test(config, http_auth_defaults_on_and_turns_off) {
  atl_config_t cfg;
  atl_config_defaults(&cfg);
  cr_assert_eq(cfg.http_auth, 1);
  char path[] = "/tmp/atl-config-http-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, "[http]\nauth = off\n", 18), 18);
  close(fd);
  char *err = NULL;
  cr_assert_eq(atl_config_load(&cfg, path, &err), 0, "%s", err ? err : "");
  cr_assert_eq(cfg.http_auth, 0);
  unlink(path);
  atl_config_free(&cfg);
}
