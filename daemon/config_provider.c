/* The [provider.NAME] sections of the configuration: any number of them,
 * each one LLM endpoint the agent may use (see config.h). Kept apart from
 * config.c's table of fixed keys because these sections are named by the
 * user. */
#include "atl-build.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

static const char *const provider_keys =
    "type, base_url, api_key_env, models, cassette, timeout_ms, max_tokens, "
    "thinking_budget, context_tokens, max_tokens_param";

int atl_provider_name_ok(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n > 32)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-'))
      return 0;
  }
  return 1;
}

static void conf_free(atl_provider_conf_t *p) {
  free(p->name);
  free(p->type);
  free(p->base_url);
  free(p->api_key_env);
  free(p->models);
  free(p->cassette);
}

void atl_providers_free(atl_config_t *cfg) {
  for (size_t i = 0; i < cfg->n_providers; i++)
    conf_free(&cfg->providers[i]);
  free(cfg->providers);
  cfg->providers = NULL;
  cfg->n_providers = 0;
}

static char *dup_or_null(const char *s, int *fail) {
  if (s == NULL)
    return NULL;
  char *d = strdup(s);
  if (d == NULL)
    *fail = 1;
  return d;
}

int atl_providers_copy(atl_config_t *dst, const atl_config_t *src) {
  dst->providers = NULL;
  dst->n_providers = 0;
  if (src->n_providers == 0)
    return 0;
  dst->providers = calloc(src->n_providers, sizeof(*dst->providers));
  if (dst->providers == NULL)
    return ATL_ENOMEM;
  int fail = 0;
  for (size_t i = 0; i < src->n_providers; i++) {
    const atl_provider_conf_t *s = &src->providers[i];
    atl_provider_conf_t *d = &dst->providers[i];
    *d = *s;
    d->name = dup_or_null(s->name, &fail);
    d->type = dup_or_null(s->type, &fail);
    d->base_url = dup_or_null(s->base_url, &fail);
    d->api_key_env = dup_or_null(s->api_key_env, &fail);
    d->models = dup_or_null(s->models, &fail);
    d->cassette = dup_or_null(s->cassette, &fail);
    dst->n_providers = i + 1;
  }
  if (fail) {
    atl_providers_free(dst);
    return ATL_ENOMEM;
  }
  return 0;
}

atl_provider_conf_t *atl_provider_conf(const atl_config_t *cfg,
                                       const char *name) {
  for (size_t i = 0; i < cfg->n_providers; i++)
    if (strcmp(cfg->providers[i].name, name) == 0)
      return &cfg->providers[i];
  return NULL;
}

/* The section's entry, created with its defaults on first use. */
static atl_provider_conf_t *entry(atl_config_t *cfg, const char *name) {
  atl_provider_conf_t *p = atl_provider_conf(cfg, name);
  if (p != NULL)
    return p;
  atl_provider_conf_t *v =
      realloc(cfg->providers, (cfg->n_providers + 1) * sizeof(*v));
  if (v == NULL)
    return NULL;
  cfg->providers = v;
  p = &v[cfg->n_providers];
  memset(p, 0, sizeof(*p));
  if ((p->name = strdup(name)) == NULL)
    return NULL;
  p->timeout_ms = 120000;
  p->max_tokens = 8192;
  cfg->n_providers++;
  return p;
}

static int set_str(char **field, const char *value) {
  char *copy = *value ? strdup(value) : NULL;
  if (*value && copy == NULL)
    return ATL_ENOMEM;
  free(*field);
  *field = copy;
  return 0;
}

static int parse_ms(const char *v, uint32_t min, uint32_t max, uint32_t *out) {
  char *end;
  if (*v < '0' || *v > '9')
    return -1;
  unsigned long long n = strtoull(v, &end, 10);
  if (*end != '\0' || n < min || n > max)
    return -1;
  *out = (uint32_t)n;
  return 0;
}

int atl_provider_conf_set(atl_config_t *cfg, const char *name, const char *key,
                          const char *value, char **expected, char **unknown) {
  *expected = NULL;
  *unknown = NULL;
  atl_provider_conf_t *p = entry(cfg, name);
  if (p == NULL)
    return ATL_ENOMEM;
  if (strcmp(key, "type") == 0) {
    if (strcmp(value, "gemini") != 0 && strcmp(value, "anthropic") != 0 &&
        strcmp(value, "openai") != 0 && strcmp(value, "replay") != 0) {
      *expected = strdup("gemini, anthropic, openai or replay");
      return 0;
    }
    return set_str(&p->type, value);
  }
  if (strcmp(key, "base_url") == 0) {
    if (strncmp(value, "http://", 7) != 0 &&
        strncmp(value, "https://", 8) != 0) {
      *expected = strdup("an http:// or https:// URL");
      return 0;
    }
    int rc = set_str(&p->base_url, value);
    /* "https://api.x.com/" and "https://api.x.com" are the same server. */
    size_t n = p->base_url ? strlen(p->base_url) : 0;
    while (n > 0 && p->base_url[n - 1] == '/')
      p->base_url[--n] = '\0';
    return rc;
  }
  if (strcmp(key, "api_key_env") == 0)
    return set_str(&p->api_key_env, value);
  if (strcmp(key, "models") == 0)
    return set_str(&p->models, value);
  if (strcmp(key, "cassette") == 0)
    return set_str(&p->cassette, value);
  if (strcmp(key, "timeout_ms") == 0) {
    if (parse_ms(value, 1000, 3600000, &p->timeout_ms) < 0)
      *expected = strdup("a whole number of milliseconds between 1000 and "
                         "3600000");
    return 0;
  }
  if (strcmp(key, "max_tokens") == 0) {
    if (parse_ms(value, 1, 1000000, &p->max_tokens) < 0)
      *expected = strdup("a whole number of tokens between 1 and 1000000");
    return 0;
  }
  if (strcmp(key, "thinking_budget") == 0) {
    if (strcmp(value, "0") != 0 &&
        parse_ms(value, 1024, 1000000, &p->thinking_budget) < 0)
      *expected = strdup("0 (no extended thinking) or a whole number of "
                         "tokens between 1024 and 1000000");
    else if (strcmp(value, "0") == 0)
      p->thinking_budget = 0;
    p->thinking_set = *expected == NULL;
    return 0;
  }
  if (strcmp(key, "context_tokens") == 0) {
    if (strcmp(value, "0") == 0)
      p->context_tokens = 0;
    else if (parse_ms(value, 1000, 100000000, &p->context_tokens) < 0)
      *expected = strdup("0 (the model's window) or a whole number of tokens "
                         "between 1000 and 100000000");
    return 0;
  }
  if (strcmp(key, "max_tokens_param") == 0) {
    if (strcmp(value, "auto") == 0)
      p->max_tokens_param = ATL_TOKEN_PARAM_AUTO;
    else if (strcmp(value, "max_tokens") == 0)
      p->max_tokens_param = ATL_TOKEN_PARAM_MAX_TOKENS;
    else if (strcmp(value, "max_completion_tokens") == 0)
      p->max_tokens_param = ATL_TOKEN_PARAM_MAX_COMPLETION_TOKENS;
    else
      *expected = strdup("auto, max_tokens or max_completion_tokens");
    return 0;
  }
  *unknown = strdup(provider_keys);
  return 0;
}

char *atl_providers_check(const atl_config_t *cfg) {
  char *msg = NULL;
  for (size_t i = 0; i < cfg->n_providers && msg == NULL; i++) {
    const atl_provider_conf_t *p = &cfg->providers[i];
    if (p->type == NULL && asprintf(&msg,
                                    "[provider.%s] has no type (gemini, "
                                    "anthropic, openai or replay)",
                                    p->name) < 0)
      msg = NULL;
    else if (p->thinking_set &&
             (p->type == NULL || (strcmp(p->type, "anthropic") != 0 &&
                                  strcmp(p->type, "gemini") != 0)) &&
             asprintf(&msg,
                      "[provider.%s] thinking_budget is for type = anthropic "
                      "or gemini (OpenAI's reasoning models set their own)",
                      p->name) < 0)
      msg = NULL;
    else if (p->max_tokens_param != ATL_TOKEN_PARAM_AUTO &&
             (p->type == NULL || strcmp(p->type, "openai") != 0) &&
             asprintf(&msg,
                      "[provider.%s] max_tokens_param is for type = openai",
                      p->name) < 0)
      msg = NULL;
    else if (p->thinking_budget > 0 && p->thinking_budget >= p->max_tokens &&
             p->type != NULL && strcmp(p->type, "anthropic") == 0 &&
             asprintf(&msg,
                      "[provider.%s] thinking_budget (%" PRIu32
                      ") must be less than max_tokens (%" PRIu32
                      "): the thinking counts against max_tokens",
                      p->name, p->thinking_budget, p->max_tokens) < 0)
      msg = NULL;
    else if (p->type != NULL && strcmp(p->type, "replay") == 0 &&
             p->cassette == NULL &&
             asprintf(&msg, "[provider.%s] is a replay without a cassette",
                      p->name) < 0)
      msg = NULL;
  }
  if (msg == NULL && cfg->agent_provider != NULL &&
      atl_provider_conf(cfg, cfg->agent_provider) == NULL &&
      asprintf(&msg,
               "[agent] provider: there is no section [provider.%s] (add "
               "one, or name another)",
               cfg->agent_provider) < 0)
    msg = NULL;
  return msg;
}
