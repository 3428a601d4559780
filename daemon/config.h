/* atelierd's configuration: built-in defaults, then the INI file (libinih),
 * then command-line flags, each overriding the one before.
 *
 * Every key, its meaning and its default is documented in
 * conf/atelierd.conf.sample; keep the two in step (test_config checks that
 * the sample loads and that it mentions every key the parser knows).
 */
#ifndef ATL_CONFIG_H
#define ATL_CONFIG_H

#include <stdint.h>

#include <atelier/plugin.h>

/* A [provider.NAME] section: one LLM endpoint. */
typedef struct {
  char *name;          /* NAME: a-z, 0-9, '_' and '-', at most 32 */
  char *type;          /* gemini, anthropic, openai or replay */
  char *base_url;      /* NULL: the type's public endpoint */
  char *api_key_env;   /* the environment variable that holds the key */
  char *models;        /* comma-separated; the first is the default */
  char *cassette;      /* replay: the recorded turns */
  uint32_t timeout_ms; /* per model call; default 120000 */
  uint32_t max_tokens; /* output tokens per model call; default 8192 */
  /* Thinking (anthropic, gemini): its budget in tokens (at least 1024,
   * less than max_tokens), or 0 for none or the least the model allows;
   * thinking_set says whether the file set it (gemini then chooses half
   * of max_tokens, so that the answer keeps the rest). */
  uint32_t thinking_budget;
  int thinking_set;
  /* The context window to keep each request within, in tokens; 0: the
   * model's, from the daemon's table (providers/models.c), else 128000. */
  uint32_t context_tokens;
  /* openai: which field carries max_tokens: ATL_TOKEN_PARAM_AUTO (by the
   * model: max_completion_tokens for reasoning models), or always the one
   * named. */
  int max_tokens_param;
} atl_provider_conf_t;

enum {
  ATL_TOKEN_PARAM_AUTO = 0,
  ATL_TOKEN_PARAM_MAX_TOKENS,
  ATL_TOKEN_PARAM_MAX_COMPLETION_TOKENS
};

typedef struct {
  /* [daemon] */
  char *socket_dir; /* api.sock and admin.sock; default /run/atelier */
  char *data_dir;   /* the store; default /var/lib/atelier */
  char *plugin_dir; /* *.so plugins; default $(pkglibdir)/plugins */
  char *pid_file;   /* NULL: none */
  int foreground;   /* 0: detach (daemonize) */
  uint32_t shutdown_timeout_ms; /* wait for in-flight calls; default 10000 */
  /* [log] */
  atl_log_level_t log_level; /* default info */
  char *log_file;            /* NULL: stderr */
  /* [api] */
  uint32_t max_frame;   /* bytes per JSON-RPC frame; default 8 MiB */
  uint32_t max_clients; /* default 4096 */
  /* [plugins] */
  int plugins_strict;    /* a plugin that fails to load stops the daemon */
  char *plugins_disable; /* comma-separated plugin names not to load */
  /* [tools] */
  uint32_t tool_timeout_ms;      /* default 30000 */
  uint32_t tool_long_timeout_ms; /* ATL_TOOL_LONG_RUNNING; default 600000 */
  uint32_t tool_threads;         /* handler threads; default 4 */
  int check_results;             /* validate results against result schemas */
  int inline_fast;               /* run ATL_TOOL_FAST handlers on the loop */
  /* [store] */
  int store_synchronous;  /* 1 normal, 2 full; default 2 (full) */
  uint32_t session_cache; /* sessions kept in memory; default 1024 */
  uint32_t max_batch;     /* transactions per group commit; default 1024 */
  /* [agent] */
  char *agent_provider;     /* the [provider.*] used; NULL: chosen from the
                               environment, else offline */
  uint32_t max_turns;       /* model calls per user message; default 10 */
  uint32_t queue_max;       /* messages waiting for a busy session; 4 */
  uint32_t max_turn_bytes;  /* text, thinking and call arguments a model
                               answer may stream; 1 MiB */
  char *system_prompt_file; /* NULL: the built-in template */
  /* [render] */
  uint32_t render_workers; /* farm processes; default: one per core; 0: off */
  char *render_worker;     /* NULL: atelier-render-worker, found as
                              render/farm.h says */
  uint32_t render_nice;    /* the workers' nice value; default 10 */
  /* Live previews (preview.c): on (1) or off; how many sessions keep
   * their newest preview in memory, and for how long. */
  int render_previews;
  uint32_t render_preview_sessions; /* default 64 */
  uint32_t render_preview_ttl_s;    /* default 3600 */
  uint32_t render_preview_grace_ms; /* a replaced one is served; 10000 */
  /* [http] */
  int http_auth; /* /api/ requests need the token (daemon/token.h); 1 */
  /* [admin] */
  char *admin_secret_file;    /* NULL: admin.sock needs no secret */
  uint32_t admin_slowlog_ms;  /* slower work goes to the slow log; 0: off */
  uint32_t admin_slowlog_max; /* entries it keeps; default 128 */
  /* [provider.NAME] sections, in file order; owned by the configuration. */
  atl_provider_conf_t *providers;
  size_t n_providers;
} atl_config_t;

/* Fills cfg with the built-in defaults (strings malloc()ed). */
void atl_config_defaults(atl_config_t *cfg);
/* Frees the strings. */
void atl_config_free(atl_config_t *cfg);

/* Loads an INI file over cfg. An unknown section or key, or a bad value, is
 * an error: returns ATL_ECONFIG with *err (malloc()ed) like
 * "atelierd.conf:12: [tools] timeout_ms: expected a whole number of
 * milliseconds between 1 and 86400000, got 'soon'". A missing file is
 * ATL_ENOENT with a message naming it. */
int atl_config_load(atl_config_t *cfg, const char *path, char **err);

/* Parses argv: --config FILE, --foreground, --socket-dir DIR, --data-dir DIR,
 * --plugin-dir DIR, --log-level LEVEL, --version, --help (both forms
 * "--x v" and "--x=v"). Defaults first, then the config file (if --config
 * was given), then the other flags. Returns 0 to run, 1 if --help or
 * --version was handled (text printed to stdout; exit 0), or a negative
 * ATL_E* code with *err set (exit 2). */
int atl_config_from_args(atl_config_t *cfg, int argc, char **argv, char **err);
/* (On any return other than 0, cfg has already been freed; calling
 * atl_config_free() on it again is harmless: it sets the strings to NULL.
 * A failed atl_config_load() leaves cfg as it was.) */

/* [provider.*] sections (config_provider.c). */
int atl_provider_name_ok(const char *name);
atl_provider_conf_t *atl_provider_conf(const atl_config_t *cfg,
                                       const char *name);
/* Sets key of section [provider.name] from value. Returns 0 or ATL_ENOMEM;
 * on a bad value sets *expected to what was expected, on an unknown key
 * *unknown to the known keys (both malloc()ed; the caller frees them). */
int atl_provider_conf_set(atl_config_t *cfg, const char *name, const char *key,
                          const char *value, char **expected, char **unknown);
void atl_providers_free(atl_config_t *cfg);
int atl_providers_copy(atl_config_t *dst, const atl_config_t *src);
/* What is wrong with the sections taken together (a provider without a
 * type, [agent] provider naming no section), as a malloc()ed message, or
 * NULL if nothing is. */
char *atl_providers_check(const atl_config_t *cfg);

/* The --help text. */
const char *atl_config_usage(void);

/* The names of every key, "section.key", NULL-terminated (for tests). */
extern const char *const atl_config_keys[];

#endif
