/* The plugin loader and the tool registry.
 *
 * Loading follows the order of DESIGN.md §4: dlopen, read the descriptor,
 * check the ABI and the struct sizes, check every tool (name, handler,
 * schemas) and only then run the plugin's init(). Nothing of a plugin that
 * fails a check stays registered, and the daemon goes on without it. The
 * one check that refuses a single tool rather than its plugin is the wire
 * lint (providers/wire_schema.h): a schema that some LLM provider would
 * refuse.
 */
#include "atl-build.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "log.h"
#include "providers/wire_schema.h"
#include "stats.h"

/* The sizes of the ABI 1.0 structs: a plugin's struct may be larger (built
 * against a newer minor) but never smaller. */
#define ATL_PLUGIN_V1_0_SIZE                                                   \
  (offsetof(atl_plugin_t, describe) + sizeof(((atl_plugin_t *)0)->describe))
#define ATL_TOOL_V1_0_SIZE                                                     \
  (offsetof(atl_tool_t, handler) + sizeof(((atl_tool_t *)0)->handler))

static int valid_name(const char *s, size_t max) {
  if (s == NULL || !(s[0] >= 'a' && s[0] <= 'z'))
    return 0;
  size_t n = 0;
  for (; s[n]; n++) {
    char c = s[n];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
      return 0;
  }
  return n <= max;
}

static int tool_cmp(const void *a, const void *b) {
  const atl_tool_entry_t *x = *(atl_tool_entry_t *const *)a;
  const atl_tool_entry_t *y = *(atl_tool_entry_t *const *)b;
  return strcmp(x->tool.name, y->tool.name);
}

const atl_tool_entry_t *atl_registry_find(const atl_registry_t *reg,
                                          const char *name) {
  size_t lo = 0, hi = reg->n_tools;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(name, reg->tools[mid]->tool.name);
    if (c == 0)
      return reg->tools[mid];
    if (c < 0)
      hi = mid;
    else
      lo = mid + 1;
  }
  return NULL;
}

static void free_tool_entries(atl_tool_entry_t **t, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (t[i] == NULL)
      continue;
    atl_schema_free(t[i]->input);
    atl_schema_free(t[i]->result);
    free(t[i]);
  }
  free(t);
}

/* Checks the tools of a descriptor and compiles their schemas. */
static int check_tools(const atl_registry_t *reg, atl_plugin_entry_t *p,
                       const atl_load_options_t *opt, atl_tool_entry_t ***out,
                       char **reason) {
  const atl_plugin_t *desc = &p->desc;
  if (desc->n_tools > 0 && desc->tools == NULL) {
    *reason = atl_printf_new("n_tools is %u but tools is NULL", desc->n_tools);
    return ATL_EPLUGIN;
  }
  if (desc->n_tools > 1024) {
    *reason = atl_printf_new("n_tools is %u; at most 1024 tools per plugin",
                             desc->n_tools);
    return ATL_EPLUGIN;
  }
  atl_tool_entry_t **tools = calloc(desc->n_tools + 1, sizeof(*tools));
  if (tools == NULL)
    return ATL_ENOMEM;
  for (uint32_t i = 0; i < desc->n_tools; i++) {
    /* Walk the array with the plugin's own stride: a plugin built against
     * a newer minor has larger tool structs. */
    const atl_tool_t *src = (const atl_tool_t *)((const char *)desc->tools +
                                                 (size_t)i * desc->tool_size);
    atl_tool_entry_t *e = calloc(1, sizeof(*e));
    if (e == NULL) {
      free_tool_entries(tools, desc->n_tools);
      return ATL_ENOMEM;
    }
    tools[i] = e;
    memcpy(&e->tool, src,
           desc->tool_size < sizeof(atl_tool_t) ? desc->tool_size
                                                : sizeof(atl_tool_t));
    e->plugin = p;
    const atl_tool_t *t = &e->tool;
    const char *tname = t->name ? t->name : "(null)";
    if (!valid_name(t->name, 63)) {
      *reason = atl_printf_new("tool %u: invalid name '%s' (expected "
                               "[a-z][a-z0-9_]{0,63})",
                               i, tname);
      goto fail;
    }
    if (t->handler == NULL) {
      *reason = atl_printf_new("tool '%s': handler is NULL", tname);
      goto fail;
    }
    if (t->description == NULL || t->description[0] == '\0') {
      *reason = atl_printf_new("tool '%s': description is empty", tname);
      goto fail;
    }
    if (atl_registry_find(reg, t->name) != NULL) {
      *reason =
          atl_printf_new("tool '%s': name already taken by plugin '%s'", tname,
                         atl_registry_find(reg, t->name)->plugin->desc.name);
      goto fail;
    }
    for (uint32_t j = 0; j < i; j++) {
      if (tools[j] != NULL && strcmp(tools[j]->tool.name, t->name) == 0) {
        *reason = atl_printf_new("tool '%s': declared twice", tname);
        goto fail;
      }
    }
    char *err = NULL;
    if (t->input_schema == NULL) {
      *reason = atl_printf_new("tool '%s': input_schema is NULL", tname);
      goto fail;
    }
    if (atl_schema_compile_text(t->input_schema, ATL_SCHEMA_STRICT, &e->input,
                                &err) != 0) {
      *reason = atl_printf_new("tool '%s': invalid input schema: %s", tname,
                               err ? err : "unknown error");
      free(err);
      goto fail;
    }
    json_object *root = atl_schema_json(e->input), *ty = NULL;
    if (!json_object_is_type(root, json_type_object) ||
        !json_object_object_get_ex(root, "type", &ty) ||
        !json_object_is_type(ty, json_type_string) ||
        strcmp(json_object_get_string(ty), "object") != 0) {
      *reason = atl_printf_new("tool '%s': the input schema's root must be "
                               "{\"type\": \"object\", ...}",
                               tname);
      goto fail;
    }
    /* A tool some provider would refuse would fail every request to that
     * provider (one refused tool fails them all): it is not loaded, and
     * the plugin's other tools are. */
    char *bad = atl_wire_check_tool(t->name, root);
    if (bad != NULL) {
      atl_log_kv(ATL_LOG_ERROR,
                 "tool refused: an LLM provider would refuse its schema",
                 "plugin", desc->name, "tool", tname, "reason", bad, NULL);
      free(bad);
      atl_schema_free(e->input);
      free(e);
      tools[i] = NULL;
      continue;
    }
    if (t->result_schema != NULL &&
        atl_schema_compile_text(t->result_schema, ATL_SCHEMA_STRICT, &e->result,
                                &err) != 0) {
      *reason = atl_printf_new("tool '%s': invalid result schema: %s", tname,
                               err ? err : "unknown error");
      free(err);
      goto fail;
    }
    e->timeout_ms = t->timeout_ms                        ? t->timeout_ms
                    : (t->flags & ATL_TOOL_LONG_RUNNING) ? opt->long_timeout_ms
                                                         : opt->timeout_ms;
    /* Series outlive a plugin unloaded and loaded again: the same tool
     * keeps counting. */
    e->stats = atl_stats_series(ATL_FAM_TOOL, tname);
  }
  *out = tools;
  return 0;
fail:
  free_tool_entries(tools, desc->n_tools);
  return ATL_EPLUGIN;
}

int atl_registry_load(atl_registry_t *reg, const char *path,
                      const atl_load_options_t *opt, char **reason) {
  *reason = NULL;
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (dl == NULL) {
    *reason = atl_printf_new("dlopen failed: %s (check its dependencies with "
                             "ldd)",
                             dlerror());
    return ATL_EPLUGIN;
  }
  const atl_plugin_t *src = dlsym(dl, ATL_PLUGIN_SYMBOL);
  if (src == NULL) {
    *reason = atl_printf_new("no '%s' symbol: not an Atelier plugin (define it "
                             "with ATL_PLUGIN_DEFINE)",
                             ATL_PLUGIN_SYMBOL);
    dlclose(dl);
    return ATL_EABI;
  }
  if (src->abi_major != ATL_PLUGIN_ABI_MAJOR) {
    *reason =
        atl_printf_new("built for plugin ABI %u.%u; this daemon speaks ABI "
                       "%d.x: rebuild it against this atelier's plugin.h",
                       src->abi_major, src->abi_minor, ATL_PLUGIN_ABI_MAJOR);
    dlclose(dl);
    return ATL_EABI;
  }
  if (src->abi_minor < opt->min_minor) {
    *reason = atl_printf_new("built for plugin ABI %u.%u; this daemon needs at "
                             "least %d.%u",
                             src->abi_major, src->abi_minor,
                             ATL_PLUGIN_ABI_MAJOR, opt->min_minor);
    dlclose(dl);
    return ATL_EABI;
  }
  if (src->struct_size < ATL_PLUGIN_V1_0_SIZE) {
    *reason =
        atl_printf_new("descriptor struct_size is %u bytes, smaller than the "
                       "%zu bytes of ABI 1.0",
                       src->struct_size, (size_t)ATL_PLUGIN_V1_0_SIZE);
    dlclose(dl);
    return ATL_EABI;
  }
  if (src->tool_size < ATL_TOOL_V1_0_SIZE) {
    *reason =
        atl_printf_new("tool_size is %u bytes, smaller than the %zu bytes of "
                       "ABI 1.0",
                       src->tool_size, (size_t)ATL_TOOL_V1_0_SIZE);
    dlclose(dl);
    return ATL_EABI;
  }

  atl_plugin_entry_t *p = calloc(1, sizeof(*p));
  if (p == NULL) {
    dlclose(dl);
    return ATL_ENOMEM;
  }
  memcpy(&p->desc, src,
         src->struct_size < sizeof(atl_plugin_t) ? src->struct_size
                                                 : sizeof(atl_plugin_t));
  p->dl = dl;
  p->path = strdup(path);
  int rc = ATL_EPLUGIN;
  atl_tool_entry_t **tools = NULL;
  if (!valid_name(p->desc.name, 31)) {
    *reason = atl_printf_new("invalid plugin name '%s' (expected "
                             "[a-z][a-z0-9_]{0,31})",
                             p->desc.name ? p->desc.name : "(null)");
    goto fail;
  }
  for (size_t i = 0; i < reg->n_plugins; i++) {
    if (strcmp(reg->plugins[i]->desc.name, p->desc.name) == 0) {
      *reason = atl_printf_new("a plugin named '%s' is already loaded from %s",
                               p->desc.name, reg->plugins[i]->path);
      goto fail;
    }
  }
  /* A preview hook without a namespace to watch (or the reverse) would
   * never run, or run for nothing: refuse it where the author sees it. */
  if ((p->desc.preview == NULL) != (p->desc.preview_of == NULL) ||
      (p->desc.preview_of != NULL && !valid_name(p->desc.preview_of, 31))) {
    *reason = atl_printf_new(
        "preview and preview_of go together, and preview_of is a namespace "
        "name ([a-z][a-z0-9_]{0,31}); got preview %s and preview_of '%s'",
        p->desc.preview ? "set" : "NULL",
        p->desc.preview_of ? p->desc.preview_of : "(null)");
    goto fail;
  }
  rc = check_tools(reg, p, opt, &tools, reason);
  if (rc != 0)
    goto fail;

  p->host = *opt->host_template;
  p->host.host_private = p;
  if (p->desc.init != NULL) {
    rc = p->desc.init(&p->host, &p->state);
    if (rc != 0) {
      *reason = atl_printf_new("init failed: %s (%d)", atl_strerror(rc), rc);
      if (rc > 0)
        rc = ATL_EPLUGIN;
      goto fail;
    }
  }
  p->initialized = 1;

  atl_plugin_entry_t **np =
      realloc(reg->plugins, (reg->n_plugins + 1) * sizeof(*np));
  atl_tool_entry_t **nt =
      realloc(reg->tools, (reg->n_tools + p->desc.n_tools + 1) * sizeof(*nt));
  if (np)
    reg->plugins = np;
  if (nt)
    reg->tools = nt;
  if (np == NULL || nt == NULL) {
    rc = ATL_ENOMEM;
    goto fail;
  }
  reg->plugins[reg->n_plugins++] = p;
  for (uint32_t i = 0; i < p->desc.n_tools; i++) {
    if (tools[i] == NULL)
      continue;
    reg->tools[reg->n_tools++] = tools[i];
    reg->n_redacting += (tools[i]->tool.flags & ATL_TOOL_REDACT_ARGS) != 0;
  }
  free(tools);
  qsort(reg->tools, reg->n_tools, sizeof(*reg->tools), tool_cmp);
  return 0;

fail:
  if (p->initialized && p->desc.destroy)
    p->desc.destroy(p->state);
  if (tools)
    free_tool_entries(tools, p->desc.n_tools);
  free(p->path);
  free(p);
  dlclose(dl);
  return rc;
}

static int name_in_list(const char *name, const char *list) {
  if (list == NULL)
    return 0;
  size_t n = strlen(name);
  const char *s = list;
  while (*s) {
    while (*s == ' ' || *s == ',')
      s++;
    const char *e = s;
    while (*e && *e != ',' && *e != ' ')
      e++;
    if ((size_t)(e - s) == n && strncmp(s, name, n) == 0)
      return 1;
    s = e;
  }
  return 0;
}

static int so_filter(const struct dirent *e) {
  size_t n = strlen(e->d_name);
  return n > 3 && strcmp(e->d_name + n - 3, ".so") == 0;
}

int atl_registry_load_dir(atl_registry_t *reg, const char *dir,
                          const char *disable, int strict,
                          const atl_load_options_t *opt) {
  struct dirent **list = NULL;
  int n = scandir(dir, &list, so_filter, alphasort);
  if (n < 0) {
    atl_log_kv(strict ? ATL_LOG_ERROR : ATL_LOG_WARN,
               "cannot read the plugin directory", "dir", dir, "error",
               strerror(errno), NULL);
    return strict ? ATL_ENOENT : 0;
  }
  int rc = 0;
  for (int i = 0; i < n; i++) {
    char path[4096], stem[256];
    snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name);
    snprintf(stem, sizeof(stem), "%.*s", (int)strlen(list[i]->d_name) - 3,
             list[i]->d_name);
    if (name_in_list(stem, disable)) {
      atl_log_kv(ATL_LOG_INFO, "plugin disabled by configuration", "path", path,
                 NULL);
      continue;
    }
    char *reason = NULL;
    int lrc = atl_registry_load(reg, path, opt, &reason);
    if (lrc != 0) {
      atl_log_kv(ATL_LOG_ERROR, "plugin rejected", "path", path, "reason",
                 reason ? reason : atl_strerror(lrc), NULL);
      free(reason);
      if (strict && rc == 0)
        rc = lrc;
      continue;
    }
    atl_plugin_entry_t *p = reg->plugins[reg->n_plugins - 1];
    char nt[16];
    unsigned loaded = 0;
    for (size_t k = 0; k < reg->n_tools; k++)
      loaded += reg->tools[k]->plugin == p;
    snprintf(nt, sizeof(nt), "%u", loaded);
    atl_log_kv(ATL_LOG_INFO, "plugin loaded", "plugin", p->desc.name, "version",
               p->desc.version, "tools", nt, "path", path, NULL);
  }
  for (int i = 0; i < n; i++)
    free(list[i]);
  free(list);
  if (rc != 0)
    atl_log_kv(ATL_LOG_ERROR,
               "plugins.strict is set and a plugin failed to load", NULL);
  return rc;
}

void atl_registry_unload(atl_registry_t *reg) {
  for (size_t i = reg->n_plugins; i-- > 0;) {
    atl_plugin_entry_t *p = reg->plugins[i];
    if (p->initialized && p->desc.destroy)
      p->desc.destroy(p->state);
  }
  free_tool_entries(reg->tools, reg->n_tools);
  for (size_t i = 0; i < reg->n_plugins; i++) {
    atl_plugin_entry_t *p = reg->plugins[i];
    dlclose(p->dl);
    free(p->path);
    free(p);
  }
  free(reg->plugins);
  memset(reg, 0, sizeof(*reg));
}
