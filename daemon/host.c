/* The host API table handed to every plugin (include/atelier/plugin.h).
 *
 * Functions that may be called from any thread hand their work to the loop
 * with atl_daemon_post(); the only state they touch directly is the call
 * the calling handler owns.
 */
#include "atl-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "log.h"
#include "schema.h"
#include "agent/agent.h"
#include "preview.h"
#include "toolcall.h"

/* The daemon is a process-wide singleton; plugins reach it through their
 * host table, whose host_private is their plugin entry. */
static atl_daemon_t *g_daemon;

static const char *plugin_name(const atl_host_t *h) {
  const atl_plugin_entry_t *p = h ? h->host_private : NULL;
  return p && p->desc.name ? p->desc.name : "?";
}

static void host_log(const atl_host_t *h, atl_log_level_t level,
                     const char *fmt, ...) {
  if (!atl_log_enabled(level))
    return;
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  atl_log_kv(level, msg, "plugin", plugin_name(h), NULL);
}

typedef struct {
  atl_daemon_t *d;
  char id[ATL_SESSION_ID_LEN + 1];
  char *type;
  char *data;
} emit_req_t;

static void emit_free(emit_req_t *e) {
  free(e->type);
  free(e->data);
  free(e);
}

static void emit_done(void *arg) {
  emit_free(arg);
}

static void emit_got_session(atl_daemon_t *d, atl_session_t *s, int status,
                             void *user) {
  emit_req_t *e = user;
  if (status != 0 || s == NULL) {
    atl_log_kv(ATL_LOG_WARN, "event for an unknown session dropped", "session",
               e->id, "type", e->type, NULL);
    emit_free(e);
    return;
  }
  if (atl_session_emit(d, s, e->type, e->data, emit_done, e) != 0)
    emit_free(e);
}

static void emit_loop(void *arg) {
  emit_req_t *e = arg;
  atl_session_get(e->d, e->id, emit_got_session, e);
}

int atl_host_emit_text(atl_daemon_t *d, const char *session_id,
                       const char *type, char *data_text) {
  if (!atl_is_session_id(session_id) || type == NULL || type[0] == '\0') {
    free(data_text);
    return ATL_EINVAL;
  }
  emit_req_t *e = calloc(1, sizeof(*e));
  if (e == NULL) {
    free(data_text);
    return ATL_ENOMEM;
  }
  e->d = d;
  memcpy(e->id, session_id, sizeof(e->id));
  e->type = strdup(type);
  e->data = data_text;
  return atl_daemon_post(d, emit_loop, e);
}

static int host_emit(const atl_host_t *h, const char *session_id,
                     const char *type, json_object *data) {
  (void)h;
  char *text = NULL;
  if (data != NULL) {
    text = strdup(json_object_to_json_string_ext(
        data, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(data);
  }
  return atl_host_emit_text(g_daemon, session_id, type, text);
}

static void image_done(int status, void *user) {
  (void)user;
  if (status != 0)
    atl_log_kv(ATL_LOG_ERROR, "image could not be stored", NULL);
}

static int host_image_put(const atl_host_t *h, const void *data, size_t len,
                          const char *mime, char id_out[ATL_IMAGE_ID_LEN + 1]) {
  (void)h;
  if (data == NULL || len == 0 || mime == NULL)
    return ATL_EINVAL;
  atl_sha256_hex(data, len, id_out);
  atl_txn_t *t = atl_txn_new();
  if (t == NULL)
    return ATL_ENOMEM;
  atl_txn_image_put(t, id_out, mime, data, len, atl_now_ms());
  /* The commit is asynchronous; anything that later refers to the id is
   * committed after it, since the store commits in submission order. */
  return atl_store_submit(g_daemon->store, t, image_done, NULL);
}

/* A provider type's base URL and key: the first [provider.NAME] of that
 * type, else the type's public endpoint and key variable. 0, or
 * ATL_EINVAL for an unknown type. *key may be NULL (none set). */
static int provider_of(const char *type, const char **base, const char **key) {
  const char *url = NULL, *env = NULL;
  if (atl_provider_defaults(type, &url, &env) != 0)
    return ATL_EINVAL;
  const atl_config_t *cfg = g_daemon->cfg;
  for (size_t i = 0; cfg && i < cfg->n_providers; i++) {
    const atl_provider_conf_t *p = &cfg->providers[i];
    if (p->type && strcmp(p->type, type) == 0) {
      if (p->base_url)
        url = p->base_url;
      if (p->api_key_env)
        env = p->api_key_env;
      break;
    }
  }
  const char *k = env ? getenv(env) : NULL;
  *base = url;
  *key = k && *k ? k : NULL;
  return 0;
}

static int host_provider_endpoint(const atl_host_t *h, const char *type,
                                  char *base_out, size_t size) {
  (void)h;
  const char *base, *key;
  if (provider_of(type, &base, &key) != 0)
    return ATL_EINVAL;
  size_t n = strlen(base);
  while (n > 0 && base[n - 1] == '/')
    n--;
  if (base_out && size)
    snprintf(base_out, size, "%.*s", (int)n, base);
  return key != NULL;
}

static int host_http_request(const atl_host_t *h, const atl_http_request_t *req,
                             atl_http_done_cb cb, void *user) {
  (void)h;
  if (g_daemon->http == NULL)
    return ATL_ESHUTDOWN;
  int has_auth = req->struct_size >=
                     offsetof(atl_http_request_t, auth) + sizeof(req->auth) &&
                 req->auth != NULL;
  if (!has_auth)
    return atl_http_request(g_daemon->http, req, NULL, cb, user);
  /* The key goes only to the provider's own base URL: a plugin cannot
   * have it sent elsewhere, nor read it back from a request of its own. */
  const char *base, *key;
  if (provider_of(req->auth, &base, &key) != 0)
    return ATL_EINVAL;
  if (key == NULL)
    return ATL_EPERM;
  size_t n = strlen(base);
  while (n > 0 && base[n - 1] == '/')
    n--;
  if (req->url == NULL || strncmp(req->url, base, n) != 0 ||
      (req->url[n] != '/' && req->url[n] != '\0'))
    return ATL_EPERM;
  const char *prefix = strcmp(req->auth, "gemini") == 0 ? "x-goog-api-key: "
                       : strcmp(req->auth, "anthropic") == 0
                           ? "x-api-key: "
                           : "Authorization: Bearer ";
  size_t nh = 0;
  while (req->headers && req->headers[nh])
    nh++;
  const char **hdrs = calloc(nh + 2, sizeof(*hdrs));
  char *line = NULL;
  if (hdrs == NULL || asprintf(&line, "%s%s", prefix, key) < 0) {
    free(hdrs);
    return ATL_ENOMEM;
  }
  for (size_t i = 0; i < nh; i++)
    hdrs[i] = req->headers[i];
  hdrs[nh] = line;
  atl_http_request_t copy = *req;
  copy.headers = hdrs;
  /* atl_http_request copies what it keeps before it returns. */
  int rc = atl_http_request(g_daemon->http, &copy, NULL, cb, user);
  explicit_bzero(line, strlen(line));
  free(line);
  free(hdrs);
  return rc;
}

static int host_image_get(const atl_host_t *h, const char *id, void **data,
                          size_t *len, char *mime_out, size_t mime_size) {
  (void)h;
  *data = NULL;
  *len = 0;
  if (id == NULL || strlen(id) != ATL_IMAGE_ID_LEN)
    return ATL_EINVAL;
  atl_store_reader_t *r = atl_daemon_reader_take(g_daemon);
  if (r == NULL)
    return ATL_ESTORE;
  char *mime = NULL;
  int rc = atl_store_image_get(r, id, &mime, data, len);
  atl_daemon_reader_give(g_daemon, r);
  if (rc == 0 && mime_out && mime_size)
    snprintf(mime_out, mime_size, "%s", mime);
  free(mime);
  return rc;
}

static int host_call_error(atl_call_t *call, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = atl__call_errorv(call, fmt, ap);
  va_end(ap);
  return rc;
}

static int host_call_progress(atl_call_t *call, double fraction,
                              const char *message) {
  atl_call_job_t *j = atl__job_of(call);
  if (j == NULL || j->preview != NULL)
    return ATL_EINVAL;
  if (!(fraction >= 0.0))
    fraction = 0.0;
  if (fraction > 1.0)
    fraction = 1.0;
  json_object *data = json_object_new_object();
  json_object_object_add(data, "tool", json_object_new_string(call->tool));
  json_object_object_add(data, "fraction", json_object_new_double(fraction));
  if (message)
    json_object_object_add(data, "message", json_object_new_string(message));
  char *text = strdup(json_object_to_json_string_ext(
      data, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(data);
  return atl_host_emit_text(j->d, call->session_id, "tool.progress", text);
}

/* Plugins' schemas are held to the same strict subset as tool schemas, so
 * that a keyword the validator does not know is an error at init, not a
 * check silently skipped. */
static int host_schema_compile(const atl_host_t *h, const char *schema_json,
                               atl_schema_t **out, char **err) {
  (void)h;
  if (err != NULL)
    *err = NULL;
  if (schema_json == NULL || out == NULL)
    return ATL_EINVAL;
  char *msg = NULL;
  int rc = atl_schema_compile_text(schema_json, ATL_SCHEMA_STRICT, out, &msg);
  if (err != NULL)
    *err = msg;
  else
    free(msg);
  return rc;
}

void atl_host_table_init(atl_daemon_t *d, atl_host_t *h) {
  g_daemon = d;
  memset(h, 0, sizeof(*h));
  h->struct_size = sizeof(*h);
  h->abi_major = ATL_PLUGIN_ABI_MAJOR;
  h->abi_minor = ATL_PLUGIN_ABI_MINOR;
  h->daemon_version = PACKAGE_VERSION;
  h->log = host_log;
  h->emit = host_emit;
  h->image_put = host_image_put;
  h->http_request = host_http_request;
  h->strerror = atl_strerror;
  h->call_result = atl__call_result;
  h->call_error = host_call_error;
  h->call_image = atl__call_image;
  h->call_operation = atl__call_operation;
  h->call_cancelled = atl__call_cancelled;
  h->call_progress = host_call_progress;
  h->render = NULL;
  h->schema_compile = host_schema_compile;
  h->schema_validate = atl_schema_validate;
  h->schema_apply_defaults = atl_schema_apply_defaults;
  h->schema_free = atl_schema_free;
  h->call_emit = atl__call_emit;
  h->provider_endpoint = host_provider_endpoint;
  h->image_get = host_image_get;
  h->preview_put = atl__preview_put;
}
