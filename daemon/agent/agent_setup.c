/* The agent's set-up: which provider the daemon talks to (from the
 * configuration and the environment), the tools it offers the model,
 * cassettes, and the system prompt. The loop itself is agent.c. */
#include "atl-build.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"

/* ---- the provider ---- */

static const struct {
  const char *type, *url, *env, *model;
} defaults[] = {
    {"anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY",
     "claude-sonnet-4-5"},
    {"gemini", "https://generativelanguage.googleapis.com", "GEMINI_API_KEY",
     "gemini-2.5-flash"},
    {"openai", "https://api.openai.com", "OPENAI_API_KEY", "gpt-4.1-mini"},
};
#define NDEFAULTS (sizeof(defaults) / sizeof(defaults[0]))

static int default_of(const char *type) {
  for (size_t i = 0; i < NDEFAULTS; i++)
    if (strcmp(defaults[i].type, type) == 0)
      return (int)i;
  return -1;
}

int atl_provider_defaults(const char *type, const char **url,
                          const char **env) {
  int i = type ? default_of(type) : -1;
  if (i < 0)
    return -1;
  *url = defaults[i].url;
  *env = defaults[i].env;
  return 0;
}

/* The first model of "a, b, c". */
static char *first_model(const char *models) {
  if (models == NULL)
    return NULL;
  while (*models == ' ')
    models++;
  size_t n = strcspn(models, ", ");
  return n ? strndup(models, n) : NULL;
}

static void offline(atl_agent_provider_t *p, const char *why) {
  p->ops = NULL;
  free(p->why_offline);
  p->why_offline = strdup(why);
}

void atl_agent_provider_resolve(atl_daemon_t *d, const char *name,
                                atl_agent_provider_t *p) {
  const atl_config_t *cfg = d->cfg;
  const atl_provider_conf_t *conf = NULL;
  int def = -1;
  if (name == NULL)
    name = cfg->agent_provider;
  if (name != NULL) {
    conf = atl_provider_conf(cfg, name);
    def = conf ? default_of(conf->type) : -1;
    if (conf == NULL) {
      char msg[160];
      snprintf(msg, sizeof(msg),
               "There is no [provider.%.40s] in atelierd.conf.", name);
      offline(p, msg);
      return;
    }
  } else {
    /* No provider chosen: the first whose key is in the environment. */
    for (size_t i = 0; i < NDEFAULTS && def < 0; i++)
      if (getenv(defaults[i].env) != NULL && *getenv(defaults[i].env))
        def = (int)i;
  }
  if (conf == NULL && def < 0) {
    offline(p, "No LLM provider is configured, so I cannot think for "
               "myself yet. Set ANTHROPIC_API_KEY, GEMINI_API_KEY or "
               "OPENAI_API_KEY in atelierd's environment, or add a "
               "[provider.NAME] section and [agent] provider = NAME to "
               "atelierd.conf (conf/atelierd.conf.sample shows how), then "
               "restart atelierd. Meanwhile, a message like /create_shape "
               "{\"id\": \"ball\", \"type\": \"sphere\", \"properties\": "
               "{\"center\": [0, 1, 0], \"radius\": 1}} calls a tool "
               "directly, and /demo replays a recorded session that builds a "
               "snowman.");
    return;
  }
  const char *type = conf ? conf->type : defaults[def].type;
  if (strcmp(type, "replay") == 0) {
    /* The cassette stands in for the model: no HTTP, no key. */
    p->ops = NULL;
    p->replay = 1;
    p->cfg.name = conf->name;
    p->cfg.type = type;
    p->model = strdup("replay");
    return;
  }
  p->ops = atl_provider_find(type);
  if (p->ops == NULL) {
    char msg[256];
    snprintf(msg, sizeof(msg),
             "The configured provider type '%s' is not available in this "
             "build of atelierd.",
             type);
    offline(p, msg);
    atl_log_kv(ATL_LOG_ERROR, "provider type not available", "type", type,
               NULL);
    return;
  }
  const char *env = conf && conf->api_key_env ? conf->api_key_env
                    : def >= 0                ? defaults[def].env
                                              : NULL;
  const char *key = env ? getenv(env) : NULL;
  p->api_key = key && *key ? strdup(key) : NULL;
  p->base_url = strdup(conf && conf->base_url ? conf->base_url
                       : def >= 0             ? defaults[def].url
                                              : "http://127.0.0.1");
  p->model = first_model(conf ? conf->models : NULL);
  if (p->model == NULL && def >= 0)
    p->model = strdup(defaults[def].model);
  p->cfg.name = conf ? conf->name : defaults[def].type;
  p->cfg.type = type;
  p->cfg.base_url = p->base_url;
  p->cfg.api_key = p->api_key;
  p->cfg.max_tokens = conf ? conf->max_tokens : 8192;
  p->cfg.thinking_budget = conf ? conf->thinking_budget : 0;
  p->cfg.thinking_set = conf ? conf->thinking_set : 0;
  p->cfg.timeout_ms = conf ? conf->timeout_ms : 120000;
  p->cfg.context_tokens = conf ? conf->context_tokens : 0;
  p->cfg.max_tokens_param = conf ? conf->max_tokens_param : 0;
  atl_log_kv(ATL_LOG_INFO, "agent provider", "provider", p->cfg.name, "type",
             type, "model", p->model ? p->model : "(none)", "key",
             p->api_key ? "(set)" : "(none)", NULL);
}

json_object *atl_agent_models(atl_daemon_t *d) {
  const atl_agent_provider_t *p = d->agent;
  json_object *o = json_object_new_object(), *list = json_object_new_array();
  int offline = p == NULL || (p->ops == NULL && !p->replay);
  const atl_provider_conf_t *conf =
      offline || d->cfg->agent_provider == NULL
          ? NULL
          : atl_provider_conf(d->cfg, d->cfg->agent_provider);
  /* The configured list, in order; without one, the default alone. */
  const char *m = conf && conf->models ? conf->models : NULL;
  while (m != NULL && *m) {
    m += strspn(m, ", ");
    size_t n = strcspn(m, ", ");
    if (n > 0)
      json_object_array_add(list, json_object_new_string_len(m, (int)n));
    m += n;
  }
  if (json_object_array_length(list) == 0 && !offline && p->model != NULL)
    json_object_array_add(list, json_object_new_string(p->model));
  json_object_object_add(o, "provider",
                         offline ? NULL : json_object_new_string(p->cfg.name));
  json_object_object_add(o, "type",
                         offline ? NULL : json_object_new_string(p->cfg.type));
  json_object_object_add(o, "models", list);
  json_object_object_add(
      o, "default",
      offline || p->model == NULL ? NULL : json_object_new_string(p->model));
  json_object_object_add(o, "offline", json_object_new_boolean(offline));
  if (offline && p != NULL && p->why_offline != NULL)
    json_object_object_add(o, "why", json_object_new_string(p->why_offline));
  return o;
}

json_object *atl_cassette_load(const char *path, char **err) {
  *err = NULL;
  json_object *o = json_object_from_file(path), *f, *v, *turns;
  const char *why = NULL;
  if (o == NULL)
    why = "cannot be read as JSON";
  else if (!json_object_object_get_ex(o, "format", &f) ||
           strcmp(json_object_get_string(f), "atelier-cassette") != 0)
    why = "is not a cassette (\"format\": \"atelier-cassette\" missing)";
  else if (!json_object_object_get_ex(o, "version", &v) ||
           json_object_get_int(v) != 1)
    why = "has a version other than 1";
  else if (!json_object_object_get_ex(o, "turns", &turns) ||
           !json_object_is_type(turns, json_type_array))
    why = "has no \"turns\" array";
  for (size_t i = 0; why == NULL && i < json_object_array_length(turns); i++) {
    json_object *t = json_object_array_get_idx(turns, i), *role, *parts;
    if (!json_object_object_get_ex(t, "role", &role) ||
        strcmp(json_object_get_string(role), "model") != 0 ||
        !json_object_object_get_ex(t, "parts", &parts) ||
        !json_object_is_type(parts, json_type_array))
      why = "has a turn that is not {\"role\": \"model\", \"parts\": [...]}";
  }
  if (why != NULL) {
    if (asprintf(err, "%s %s", path, why) < 0)
      *err = NULL;
    json_object_put(o);
    return NULL;
  }
  json_object *out = json_object_get(turns);
  json_object_put(o);
  return out;
}

int atl_agent_init(atl_daemon_t *d) {
  atl_agent_provider_t *p = calloc(1, sizeof(*p));
  json_object *tools = json_object_new_array();
  if (p == NULL || tools == NULL) {
    free(p);
    json_object_put(tools);
    return ATL_ENOMEM;
  }
  atl_agent_provider_resolve(d, NULL, p);
  d->agent = p;
  const atl_provider_conf_t *conf =
      d->cfg->agent_provider ? atl_provider_conf(d->cfg, d->cfg->agent_provider)
                             : NULL;
  if (conf != NULL && strcmp(conf->type, "replay") == 0) {
    char *err = NULL;
    p->cassette = atl_cassette_load(conf->cassette, &err);
    if (p->cassette == NULL) {
      atl_log_kv(ATL_LOG_ERROR, "cannot load the cassette", "error", err, NULL);
      free(err);
      json_object_put(tools);
      return ATL_ECONFIG;
    }
  }
  if (d->cfg->system_prompt_file != NULL) {
    FILE *f = fopen(d->cfg->system_prompt_file, "re");
    size_t cap = 0;
    if (f == NULL || getdelim(&p->prompt, &cap, '\0', f) < 0) {
      atl_log_kv(ATL_LOG_ERROR, "cannot read agent.system_prompt_file", "path",
                 d->cfg->system_prompt_file, "error",
                 f ? "read error" : strerror(errno), NULL);
      if (f != NULL)
        fclose(f);
      json_object_put(tools);
      return ATL_ECONFIG;
    }
    fclose(f);
  }
  for (size_t i = 0; i < d->registry.n_tools; i++) {
    const atl_tool_entry_t *te = d->registry.tools[i];
    if (te->tool.flags & ATL_TOOL_NOT_FOR_MODEL)
      continue;
    json_object *t = json_object_new_object();
    json_object_object_add(t, "name", json_object_new_string(te->tool.name));
    if (te->tool.description)
      json_object_object_add(t, "description",
                             json_object_new_string(te->tool.description));
    json_object_object_add(t, "input_schema",
                           json_tokener_parse(te->tool.input_schema));
    json_object_array_add(tools, t);
  }
  d->tools_json = tools;
  /* The tools are the same for every request of the daemon's life (about
   * 30 KB of the scene plugin's schemas): rendered once. */
  if (p->ops != NULL && json_object_array_length(tools) > 0 &&
      (p->tools_text = p->ops->tools_text(tools)) == NULL)
    return ATL_ENOMEM;
  return 0;
}

void atl_agent_provider_clear(atl_agent_provider_t *p) {
  free(p->model);
  free(p->base_url);
  free(p->api_key);
  free(p->why_offline);
  free(p->prompt);
  free(p->tools_text);
  json_object_put(p->cassette);
  for (int i = 0; i < ATL_N_DEMOS; i++)
    json_object_put(p->demo[i]);
  memset(p, 0, sizeof(*p));
}

void atl_agent_free(atl_daemon_t *d) {
  atl_agent_provider_t *p = d->agent;
  if (p != NULL) {
    atl_agent_provider_clear(p);
    free(p);
  }
  d->agent = NULL;
  json_object_put(d->tools_json);
  d->tools_json = NULL;
}

/* The bundled demo: installed with atelierd, or in the source tree when
 * atelierd runs from its build directory. */
static const struct { const char *name, *file; } demos[ATL_N_DEMOS] = ATL_DEMOS;

const char *atl_agent_demo_names(void) {
  return "scene, drawing, optics";
}

json_object *atl_agent_demo_turns(atl_daemon_t *d, const char *name,
                                  int *known) {
  atl_agent_provider_t *p = d->agent;
  int k = -1;
  for (int i = 0; i < ATL_N_DEMOS; i++)
    if (strcmp(demos[i].name, name && *name ? name : "scene") == 0)
      k = i;
  *known = k >= 0;
  if (k < 0)
    return NULL;
  if (p->demo[k] != NULL)
    return p->demo[k];
  /* Installed first, then the source tree's (a build run in place). */
  const char *dirs[] = {ATL_DEFAULT_CASSETTE_DIR, ATL_SOURCE_CASSETTE_DIR};
  for (size_t i = 0; i < 2 && p->demo[k] == NULL; i++) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s.json", dirs[i], demos[k].file);
    if (access(path, R_OK) != 0)
      continue;
    char *err = NULL;
    p->demo[k] = atl_cassette_load(path, &err);
    if (p->demo[k] == NULL)
      atl_log_kv(ATL_LOG_ERROR, "cannot load a demo cassette", "path", path,
                 "error", err, NULL);
    free(err);
  }
  return p->demo[k];
}

/* ---- the system prompt ---- */

static const char template[] =
    "You are an autonomous assistant that builds things in Atelier by "
    "calling tools: 3D scenes, optical benches, drawings.\n"
    "\n"
    "AVAILABLE TOOLS:\n"
    "You have tools for creating, updating and removing what the session "
    "holds. Each tool call returns a JSON result showing what happened. You "
    "may call several tools in one response; they run in order.\n"
    "\n"
    "WORKFLOW:\n"
    "1. Explain to the user what you are doing as you work\n"
    "2. Call tools to create or modify things\n"
    "3. Review the tool results: if there are errors, retry with "
    "corrections\n"
    "4. Iterate until the result matches the user's request\n"
    "5. When satisfied, give a final answer with text only, no tool calls\n"
    "\n"
    "TOOL RESULTS:\n"
    "- Success: {\"success\": true, \"result\": {<the complete object>}}\n"
    "- Error: {\"success\": false, \"error\": \"<what was wrong>\"}\n"
    "\n"
    "The results show the complete state of each object, with every default "
    "filled in. Use them to track what exists and to check your work.\n"
    "\n"
    "CURRENT SCENE:\n"
    "%s\n";

char *atl_agent_system_prompt(atl_daemon_t *d, json_object *doc) {
  char *scene = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&scene, &len);
  for (size_t i = 0; f != NULL && i < d->registry.n_plugins; i++) {
    atl_plugin_entry_t *pe = d->registry.plugins[i];
    if (pe->desc.describe == NULL)
      continue;
    json_object *ns = NULL;
    json_object_object_get_ex(doc, pe->desc.name, &ns);
    char *text = pe->desc.describe(pe->state, ns);
    if (text != NULL)
      fputs(text, f);
    free(text);
  }
  if (f != NULL)
    fclose(f);
  /* The scene replaces the first "%s" of the template. A custom file is
   * not a format string: nothing else in it is interpreted. */
  const char *tpl = d->agent->prompt ? d->agent->prompt : template;
  const char *at = strstr(tpl, "%s");
  const char *sc = scene && *scene ? scene : "(empty)";
  char *out = NULL;
  if (at == NULL)
    out = strdup(tpl);
  else if (asprintf(&out, "%.*s%s%s", (int)(at - tpl), tpl, sc, at + 2) < 0)
    out = NULL;
  free(scene);
  return out;
}
