/* The admin socket (doc/admin.md): introspection, statistics, tracing and
 * control of a running daemon, modelled on redis (INFO, CLIENT LIST,
 * MONITOR) and janus-gateway's Admin API.
 *
 * Who may use it. admin.sock is made with mode 0600 in the socket
 * directory, and a peer whose uid (SO_PEERCRED) is neither the daemon's nor
 * root is refused at accept, with its pid and uid logged (server.c). Where
 * several services share the daemon's uid, [admin] secret_file names a
 * secret that a connection must give first (auth {secret}); the comparison
 * is of SHA-256 digests with CRYPTO_memcmp, so it takes the same time
 * whatever the guess. None of these methods exists on api.sock, and api.sock
 * methods are not reachable here except session.cancel and session.delete,
 * which are forwarded to it.
 */
#include "atl-build.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "admin.h"
#include "agent/agent.h"
#include "log.h"
#include "render_host.h"
#include "slowlog.h"
#include "stats.h"
#include "trace.h"

/* Failed auth attempts a connection may make before it is closed. */
#define AUTH_TRIES 3

typedef void (*admin_fn)(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p);

static void reply_take(atl_daemon_t *d, atl_rpc_call_t *c, json_object *r) {
  atl_rpc_reply(d, c, r);
  json_object_put(r);
}

/* ---- auth ---- */

int atl_admin_load_secret(atl_daemon_t *d) {
  const char *path = d->cfg->admin_secret_file;
  d->admin_secret[0] = '\0';
  if (path == NULL || path[0] == '\0')
    return 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  struct stat sb;
  const char *why = NULL;
  if (fd < 0)
    why = "cannot open it";
  else if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
    why = "it is not a regular file";
  else if (sb.st_mode & 077)
    why = "others may read it: make it mode 0600 (chmod 600)";
  else if (sb.st_uid != geteuid() && sb.st_uid != 0)
    why = "it belongs to another user";
  char buf[sizeof(d->admin_secret) + 1];
  ssize_t n = 0;
  if (why == NULL && (n = read(fd, buf, sizeof(buf) - 1)) < 0)
    why = "cannot read it";
  if (fd >= 0)
    close(fd);
  if (why == NULL) {
    /* The first line: what atelierctl sends from the same file. */
    buf[n] = '\0';
    n = (ssize_t)strcspn(buf, "\r\n");
    buf[n] = '\0';
    if (n < 16)
      why = "the secret must be 16 to 128 bytes on its first line";
    else if ((size_t)n >= sizeof(d->admin_secret))
      why = "the secret must be at most 128 bytes";
  }
  if (why != NULL) {
    atl_log_kv(ATL_LOG_ERROR, "admin.secret_file refused", "path", path,
               "reason", why, NULL);
    OPENSSL_cleanse(buf, sizeof(buf));
    return ATL_ECONFIG;
  }
  memcpy(d->admin_secret, buf, (size_t)n + 1);
  OPENSSL_cleanse(buf, sizeof(buf));
  atl_log_add_secret(d->admin_secret);
  return 0;
}

/* Whether guess is the secret, in a time that does not depend on where
 * they differ or on their lengths: their digests are compared. */
static int secret_matches(const char *secret, const char *guess) {
  unsigned char a[32], b[32];
  unsigned int la = 0, lb = 0;
  EVP_Digest(secret, strlen(secret), a, &la, EVP_sha256(), NULL);
  EVP_Digest(guess, strlen(guess), b, &lb, EVP_sha256(), NULL);
  return la == 32 && lb == 32 && CRYPTO_memcmp(a, b, 32) == 0;
}

static void m_auth(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {"secret", NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  json_object *v = NULL;
  if (p == NULL || !json_object_object_get_ex(p, "secret", &v) ||
      !json_object_is_type(v, json_type_string)) {
    atl_rpc_invalid(d, c,
                    "missing \"secret\" (a string: the contents of "
                    "the daemon's [admin] secret_file)");
    return;
  }
  atl_conn_t *conn = atl_rpc_conn(c);
  if (d->admin_secret[0] == '\0' ||
      secret_matches(d->admin_secret, json_object_get_string(v))) {
    atl_conn_set_authed(conn);
    json_object *r = json_object_new_object();
    json_object_object_add(r, "authenticated", json_object_new_boolean(1));
    reply_take(d, c, r);
    return;
  }
  long pid, uid;
  atl_conn_peer(conn, &pid, &uid);
  char spid[24], suid[24];
  snprintf(spid, sizeof(spid), "%ld", pid);
  snprintf(suid, sizeof(suid), "%ld", uid);
  atl_log_kv(ATL_LOG_WARN, "admin authentication failed: wrong secret", "pid",
             spid, "uid", suid, NULL);
  atl_rpc_reply_error(d, c, ATL_RPC_UNAUTHORIZED,
                      "wrong secret (the connection is closed after 3)", NULL);
  if (atl_conn_auth_failed(conn) >= AUTH_TRIES)
    atl_conn_end(conn);
}

/* ---- info, plugins, clients ---- */

static json_object *plugins_json(atl_daemon_t *d) {
  json_object *a = json_object_new_array();
  for (size_t i = 0; i < d->registry.n_plugins; i++) {
    atl_plugin_entry_t *pe = d->registry.plugins[i];
    json_object *o = json_object_new_object();
    json_object_object_add(o, "name", json_object_new_string(pe->desc.name));
    json_object_object_add(
        o, "version",
        json_object_new_string(pe->desc.version ? pe->desc.version : ""));
    json_object_object_add(o, "path", json_object_new_string(pe->path));
    json_object_object_add(o, "abi_minor",
                           json_object_new_int(pe->desc.abi_minor));
    json_object *tools = json_object_new_array();
    uint64_t calls = 0, errors = 0, sum_us = 0;
    for (size_t k = 0; k < d->registry.n_tools; k++) {
      atl_tool_entry_t *te = d->registry.tools[k];
      if (te->plugin != pe)
        continue;
      json_object *t = json_object_new_object();
      json_object_object_add(t, "name", json_object_new_string(te->tool.name));
      uint64_t n = 0, e = 0, s = 0;
      if (te->stats != NULL) {
        n = atomic_load(&te->stats->h.count);
        e = atomic_load(&te->stats->h.errors);
        s = atomic_load(&te->stats->h.sum);
      }
      json_object_object_add(t, "calls", json_object_new_int64((int64_t)n));
      json_object_object_add(t, "failures", json_object_new_int64((int64_t)e));
      json_object_object_add(t, "ms",
                             json_object_new_int64((int64_t)(s / 1000)));
      json_object_object_add(t, "timeout_ms",
                             json_object_new_int64(te->timeout_ms));
      json_object_array_add(tools, t);
      calls += n;
      errors += e;
      sum_us += s;
    }
    json_object_object_add(o, "tools", tools);
    json_object_object_add(o, "calls", json_object_new_int64((int64_t)calls));
    json_object_object_add(o, "failures",
                           json_object_new_int64((int64_t)errors));
    json_object_object_add(o, "ms",
                           json_object_new_int64((int64_t)(sum_us / 1000)));
    json_object_array_add(a, o);
  }
  return a;
}

static json_object *set_unset(int set) {
  return json_object_new_string(set ? "set" : "unset");
}

static json_object *config_json(atl_daemon_t *d) {
  const atl_config_t *cfg = d->cfg;
  json_object *o = json_object_new_object();
  json_object_object_add(o, "socket_dir",
                         json_object_new_string(cfg->socket_dir));
  json_object_object_add(o, "data_dir", json_object_new_string(cfg->data_dir));
  json_object_object_add(o, "plugin_dir",
                         json_object_new_string(cfg->plugin_dir));
  json_object_object_add(
      o, "log_level",
      json_object_new_string(atl_log_level_name(atl_log_get_level())));
  json_object_object_add(o, "tool_threads",
                         json_object_new_int64(cfg->tool_threads));
  json_object_object_add(o, "tool_timeout_ms",
                         json_object_new_int64(cfg->tool_timeout_ms));
  json_object_object_add(o, "render_workers",
                         json_object_new_int64(cfg->render_workers));
  json_object_object_add(o, "session_cache",
                         json_object_new_int64(cfg->session_cache));
  json_object_object_add(o, "http_auth",
                         json_object_new_boolean(cfg->http_auth));
  json_object_object_add(o, "admin_secret",
                         set_unset(d->admin_secret[0] != '\0'));
  json_object_object_add(o, "slowlog_ms",
                         json_object_new_int64(cfg->admin_slowlog_ms));
  /* Providers: where their keys come from, and whether they are there;
   * never the keys. */
  json_object *pa = json_object_new_array();
  for (size_t i = 0; i < cfg->n_providers; i++) {
    const atl_provider_conf_t *pc = &cfg->providers[i];
    json_object *po = json_object_new_object();
    json_object_object_add(po, "name", json_object_new_string(pc->name));
    json_object_object_add(po, "type",
                           json_object_new_string(pc->type ? pc->type : ""));
    json_object_object_add(
        po, "api_key_env",
        pc->api_key_env ? json_object_new_string(pc->api_key_env) : NULL);
    const char *k = pc->api_key_env ? getenv(pc->api_key_env) : NULL;
    json_object_object_add(po, "api_key", set_unset(k != NULL && k[0] != 0));
    json_object_array_add(pa, po);
  }
  json_object_object_add(o, "providers", pa);
  return o;
}

json_object *atl_admin_store_json(atl_daemon_t *d) {
  atl_store_stats_t st;
  atl_store_stats(d->store, &st);
  json_object *so = json_object_new_object();
  char path[4096];
  struct stat sb;
  snprintf(path, sizeof(path), "%s/atelier.db", d->cfg->data_dir);
  json_object_object_add(
      so, "bytes",
      json_object_new_int64(stat(path, &sb) == 0 ? (int64_t)sb.st_size : -1));
  snprintf(path, sizeof(path), "%s/atelier.db-wal", d->cfg->data_dir);
  json_object_object_add(
      so, "wal_bytes",
      json_object_new_int64(stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0));
  json_object_object_add(so, "wal_pages", json_object_new_int64(st.wal_pages));
  json_object_object_add(so, "commits",
                         json_object_new_int64((int64_t)st.commits));
  json_object_object_add(so, "transactions",
                         json_object_new_int64((int64_t)st.transactions));
  json_object_object_add(so, "failures",
                         json_object_new_int64((int64_t)st.failures));
  json_object_object_add(so, "checkpoints",
                         json_object_new_int64((int64_t)st.checkpoints));
  json_object_object_add(so, "writer_checkpoints",
                         json_object_new_int64((int64_t)st.writer_checkpoints));
  return so;
}

static void m_info(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  /* api.sock's daemon.info (version, abi, pid, uptime_ms, render, ...),
   * with more of everything. */
  json_object *r = atl_rpc_daemon_info(d);
  json_object_object_del(r, "sessions_loaded");
  json_object_object_del(r, "clients");
  json_object_object_add(
      r, "uptime_s",
      json_object_new_double(
          (double)((atl_mono_ns() - d->started_ns) / 1000000u) / 1000.0));
  json_object_object_add(r, "config", config_json(d));
  json_object_object_add(r, "plugins", plugins_json(d));
  json_object_object_add(r, "render", atl_render_host_status(d));
  json_object_object_add(r, "store", atl_admin_store_json(d));
  json_object *n = json_object_new_object();
  json_object_object_add(
      n, "sessions_loaded",
      json_object_new_int64((int64_t)atl_sessions_loaded(d)));
  json_object_object_add(n, "tools",
                         json_object_new_int64((int64_t)d->registry.n_tools));
  json_object_object_add(
      n, "api_clients",
      json_object_new_int((int)(d->api ? atl_server_clients(d->api) : 0)));
  json_object_object_add(
      n, "admin_clients",
      json_object_new_int((int)(d->admin ? atl_server_clients(d->admin) : 0)));
  json_object_object_add(n, "tool_calls_in_flight",
                         json_object_new_int((int)d->calls_in_flight));
  json_object_object_add(n, "trace_subscribers",
                         json_object_new_int((int)atl_trace_subscribers()));
  json_object_object_add(r, "counts", n);
  json_object_object_add(r, "accepting_sessions",
                         json_object_new_boolean(!d->refuse_sessions));
  json_object_object_add(r, "shutting_down",
                         json_object_new_boolean(d->shutting_down));
  reply_take(d, c, r);
}

static void m_plugins(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {NULL};
  if (atl_rpc_only(d, c, p, names))
    reply_take(d, c, plugins_json(d));
}

static void client_row(const atl_conn_info_t *in, void *user) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "id", json_object_new_int64((int64_t)in->id));
  json_object_object_add(o, "socket", json_object_new_string(in->kind));
  json_object_object_add(o, "fd", json_object_new_int(in->fd));
  json_object_object_add(o, "pid", json_object_new_int64(in->pid));
  json_object_object_add(o, "uid", json_object_new_int64(in->uid));
  json_object_object_add(
      o, "age_s",
      json_object_new_double((double)(atl_now_ms() - in->created_ms) / 1000.0));
  json_object_object_add(o, "requests",
                         json_object_new_int64((int64_t)in->requests));
  json_object_object_add(o, "pending", json_object_new_int64(in->pending));
  json_object_object_add(o, "bytes_in",
                         json_object_new_int64((int64_t)in->bytes_in));
  json_object_object_add(o, "bytes_out",
                         json_object_new_int64((int64_t)in->bytes_out));
  json_object_object_add(o, "last_method",
                         json_object_new_string(in->last_method));
  json_object_object_add(o, "tracing", json_object_new_boolean(in->streaming));
  json_object_array_add(user, o);
}

static void m_clients(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  json_object *a = json_object_new_array();
  if (d->api)
    atl_server_each(d->api, client_row, a);
  if (d->admin)
    atl_server_each(d->admin, client_row, a);
  reply_take(d, c, a);
}

static void m_client_kill(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {"id", NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  json_object *v = NULL;
  if (p == NULL || !json_object_object_get_ex(p, "id", &v) ||
      !json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 1) {
    atl_rpc_invalid(d, c,
                    "\"id\" must be a client's id (a positive "
                    "integer; see clients)");
    return;
  }
  uint64_t id = (uint64_t)json_object_get_int64(v);
  if (id == atl_conn_id(atl_rpc_conn(c))) {
    atl_rpc_invalid(d, c, "%llu is this connection; close it instead",
                    (unsigned long long)id);
    return;
  }
  int rc = ATL_ENOENT;
  if (d->api)
    rc = atl_server_kill(d->api, id);
  if (rc != 0 && d->admin)
    rc = atl_server_kill(d->admin, id);
  if (rc != 0) {
    char msg[96];
    snprintf(msg, sizeof(msg), "no such client: %llu (see clients)",
             (unsigned long long)id);
    atl_rpc_reply_error(d, c, ATL_RPC_NO_CLIENT, msg, NULL);
    return;
  }
  char sid[24];
  snprintf(sid, sizeof(sid), "%llu", (unsigned long long)id);
  atl_log_kv(ATL_LOG_INFO, "client killed through the admin socket", "client",
             sid, NULL);
  json_object *r = json_object_new_object();
  json_object_object_add(r, "killed", json_object_new_boolean(1));
  reply_take(d, c, r);
}

/* ---- stats, metrics ---- */

static void m_stats(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  json_object *r = json_object_new_object();
  json_object_object_add(
      r, "uptime_s",
      json_object_new_double(
          (double)((atl_mono_ns() - d->started_ns) / 1000000u) / 1000.0));
  json_object_object_add(r, "series", atl_stats_json());
  json_object *ev = json_object_new_object();
  json_object_object_add(
      ev, "emitted",
      json_object_new_int64((int64_t)atomic_load(&atl_stats.events_emitted)));
  json_object_object_add(
      ev, "delivered",
      json_object_new_int64((int64_t)atomic_load(&atl_stats.events_delivered)));
  json_object_object_add(
      ev, "polls_waiting",
      json_object_new_int64(atomic_load(&atl_stats.polls_waiting)));
  json_object_object_add(r, "events", ev);
  json_object *se = json_object_new_object();
  json_object_object_add(
      se, "created",
      json_object_new_int64((int64_t)atomic_load(&atl_stats.sessions_created)));
  json_object_object_add(
      se, "deleted",
      json_object_new_int64((int64_t)atomic_load(&atl_stats.sessions_deleted)));
  json_object_object_add(
      se, "loaded", json_object_new_int64((int64_t)atl_sessions_loaded(d)));
  json_object_object_add(r, "sessions", se);
  json_object *tr = json_object_new_object();
  json_object_object_add(tr, "subscribers",
                         json_object_new_int((int)atl_trace_subscribers()));
  json_object_object_add(
      tr, "lines",
      json_object_new_int64((int64_t)atomic_load(&atl_stats.trace_lines)));
  json_object_object_add(
      tr, "dropped",
      json_object_new_int64((int64_t)atomic_load(&atl_stats.trace_dropped)));
  json_object_object_add(r, "trace", tr);
  json_object_object_add(r, "store", atl_admin_store_json(d));
  json_object_object_add(r, "render", atl_render_host_status(d));
  reply_take(d, c, r);
}

static void m_metrics(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  char *text = atl_metrics_text(d);
  json_object *r = json_object_new_object();
  json_object_object_add(r, "content_type",
                         json_object_new_string("text/plain; version=0.0.4"));
  json_object_object_add(r, "text", json_object_new_string(text ? text : ""));
  free(text);
  reply_take(d, c, r);
}

/* ---- log.level, trace ---- */

static void m_log_level(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {"level", NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  json_object *v = NULL;
  const char *old = atl_log_level_name(atl_log_get_level());
  if (p != NULL && json_object_object_get_ex(p, "level", &v)) {
    int level = json_object_is_type(v, json_type_string)
                    ? atl_log_level_parse(json_object_get_string(v))
                    : -1;
    if (level < 0) {
      atl_rpc_invalid(d, c,
                      "\"level\" must be one of error, warn, info, "
                      "debug, trace");
      return;
    }
    atl_log_set_level((atl_log_level_t)level);
    atl_log_kv(ATL_LOG_INFO, "log level changed through the admin socket",
               "from", old, "to", atl_log_level_name((atl_log_level_t)level),
               NULL);
  }
  json_object *r = json_object_new_object();
  json_object_object_add(r, "previous", json_object_new_string(old));
  json_object_object_add(
      r, "level",
      json_object_new_string(atl_log_level_name(atl_log_get_level())));
  reply_take(d, c, r);
}

static void m_trace(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {"session", "kinds", "seconds", "level",
                                      NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  json_object *v = NULL;
  const char *session = NULL;
  if (p && json_object_object_get_ex(p, "session", &v)) {
    session = json_object_get_string(v);
    if (!json_object_is_type(v, json_type_string) ||
        !atl_is_session_id(session)) {
      atl_rpc_invalid(d, c,
                      "\"session\" must be a 32-digit lowercase hex "
                      "session id");
      return;
    }
  }
  unsigned mask = ATL_TR_ALL & ~ATL_TR_LOG;
  if (p && json_object_object_get_ex(p, "kinds", &v)) {
    mask = 0;
    size_t n = json_object_is_type(v, json_type_array)
                   ? json_object_array_length(v)
                   : 0;
    for (size_t i = 0; i < n; i++) {
      json_object *k = json_object_array_get_idx(v, i);
      unsigned kind = json_object_is_type(k, json_type_string)
                          ? atl_trace_kind_parse(json_object_get_string(k))
                          : 0;
      if (kind == 0) {
        n = 0;
        break;
      }
      mask |= kind;
    }
    if (mask == 0) {
      atl_rpc_invalid(d, c,
                      "\"kinds\" must be a non-empty array of rpc, "
                      "run, turn, tool, commit, render, event, log");
      return;
    }
  }
  double seconds = 0;
  if (p && json_object_object_get_ex(p, "seconds", &v)) {
    seconds = json_object_get_double(v);
    if ((!json_object_is_type(v, json_type_int) &&
         !json_object_is_type(v, json_type_double)) ||
        !(seconds > 0 && seconds <= 86400)) {
      atl_rpc_invalid(d, c,
                      "\"seconds\" must be a number above 0 and at "
                      "most 86400 (leave it out to trace until the "
                      "connection closes)");
      return;
    }
  }
  int level = ATL_LOG_INFO;
  if (p && json_object_object_get_ex(p, "level", &v)) {
    level = json_object_is_type(v, json_type_string)
                ? atl_log_level_parse(json_object_get_string(v))
                : -1;
    if (level < 0) {
      atl_rpc_invalid(d, c,
                      "\"level\" (of the log lines traced) must be "
                      "one of error, warn, info, debug, trace");
      return;
    }
  }
  atl_conn_t *conn = atl_rpc_conn(c);
  if (atl_conn_pending(conn) > 1) {
    atl_rpc_reply_error(d, c, ATL_RPC_INVALID_REQUEST,
                        "trace must be the only request in flight on its "
                        "connection: wait for the others' answers first",
                        NULL);
    return;
  }
  json_object *r = json_object_new_object();
  json_object_object_add(r, "tracing", json_object_new_boolean(1));
  json_object *kinds = json_object_new_array();
  for (unsigned k = 1; k & ATL_TR_ALL; k <<= 1)
    if (mask & k)
      json_object_array_add(kinds,
                            json_object_new_string(atl_trace_kind_name(k)));
  json_object_object_add(r, "kinds", kinds);
  if (session)
    json_object_object_add(r, "session", json_object_new_string(session));
  if (seconds > 0)
    json_object_object_add(r, "seconds", json_object_new_double(seconds));
  /* The answer goes first; every later line on this connection is a trace
   * line. */
  reply_take(d, c, r);
  int rc = atl_trace_subscribe(d, conn, mask, session, level, seconds);
  if (rc == ATL_ENOMEM)
    atl_conn_close(conn);
}

/* ---- slowlog ---- */

static void m_slowlog_get(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {"count", NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  json_object *v = NULL;
  int64_t count = 10;
  if (p && json_object_object_get_ex(p, "count", &v)) {
    if (!json_object_is_type(v, json_type_int) ||
        json_object_get_int64(v) < 1 || json_object_get_int64(v) > 100000) {
      atl_rpc_invalid(d, c,
                      "\"count\" must be a whole number from 1 to "
                      "100000 (the newest entries; default 10)");
      return;
    }
    count = json_object_get_int64(v);
  }
  json_object *r = json_object_new_object();
  json_object_object_add(r, "entries", atl_slowlog_get((size_t)count));
  json_object_object_add(
      r, "threshold_ms",
      json_object_new_int64((int64_t)(atomic_load(&atl_slowlog_us) / 1000)));
  reply_take(d, c, r);
}

static void m_slowlog_len(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  json_object *r = json_object_new_object();
  json_object_object_add(r, "len",
                         json_object_new_int64((int64_t)atl_slowlog_len()));
  reply_take(d, c, r);
}

static void m_slowlog_reset(atl_daemon_t *d, atl_rpc_call_t *c,
                            json_object *p) {
  static const char *const names[] = {NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  json_object *r = json_object_new_object();
  json_object_object_add(r, "removed",
                         json_object_new_int64((int64_t)atl_slowlog_reset()));
  reply_take(d, c, r);
}

/* ---- accept_sessions, shutdown, forwarded session methods ---- */

static void m_accept_sessions(atl_daemon_t *d, atl_rpc_call_t *c,
                              json_object *p) {
  static const char *const names[] = {"accept", NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  json_object *v = NULL;
  if (p && json_object_object_get_ex(p, "accept", &v)) {
    if (!json_object_is_type(v, json_type_boolean)) {
      atl_rpc_invalid(d, c, "\"accept\" must be true or false");
      return;
    }
    d->refuse_sessions = !json_object_get_boolean(v);
    atl_log_kv(ATL_LOG_INFO,
               d->refuse_sessions ? "new sessions and runs refused (drain)"
                                  : "new sessions and runs accepted again",
               NULL);
  }
  json_object *r = json_object_new_object();
  json_object_object_add(r, "accepting",
                         json_object_new_boolean(!d->refuse_sessions));
  json_object_object_add(r, "tool_calls_in_flight",
                         json_object_new_int((int)d->calls_in_flight));
  reply_take(d, c, r);
}

static void m_shutdown(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  static const char *const names[] = {"timeout", NULL};
  if (!atl_rpc_only(d, c, p, names))
    return;
  json_object *v = NULL;
  if (p && json_object_object_get_ex(p, "timeout", &v)) {
    double t = json_object_get_double(v);
    if ((!json_object_is_type(v, json_type_int) &&
         !json_object_is_type(v, json_type_double)) ||
        !(t >= 0 && t <= 3600)) {
      atl_rpc_invalid(d, c,
                      "\"timeout\" must be seconds from 0 to 3600 "
                      "(how long in-flight calls may finish)");
      return;
    }
    d->cfg->shutdown_timeout_ms = (uint32_t)(t * 1000.0);
  }
  json_object *r = json_object_new_object();
  json_object_object_add(r, "shutting_down", json_object_new_boolean(1));
  json_object_object_add(
      r, "timeout_s",
      json_object_new_double(d->cfg->shutdown_timeout_ms / 1000.0));
  reply_take(d, c, r);
  atl_log_kv(ATL_LOG_INFO, "shutdown asked through the admin socket", NULL);
  atl_daemon_shutdown(d);
}

/* session.cancel and session.delete are api.sock's own, unchanged. */
static void m_forward(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p) {
  (void)d;
  (void)c;
  (void)p;
}

static const struct {
  const char *name;
  admin_fn fn;
} methods[] = {
    {"accept_sessions", m_accept_sessions},
    {"auth", m_auth},
    {"client.kill", m_client_kill},
    {"clients", m_clients},
    {"info", m_info},
    {"log.level", m_log_level},
    {"metrics", m_metrics},
    {"plugins", m_plugins},
    {"session", atl_admin_session},
    {"session.cancel", m_forward},
    {"session.delete", m_forward},
    {"sessions", atl_admin_sessions},
    {"shutdown", m_shutdown},
    {"slowlog.get", m_slowlog_get},
    {"slowlog.len", m_slowlog_len},
    {"slowlog.reset", m_slowlog_reset},
    {"stats", m_stats},
    {"trace", m_trace},
};
#define N_METHODS (sizeof(methods) / sizeof(methods[0]))

static void admin_dispatch(atl_daemon_t *d, atl_rpc_call_t *c,
                           atl_rpc_request_t *req) {
  size_t i;
  for (i = 0; i < N_METHODS; i++)
    if (strcmp(methods[i].name, req->method) == 0)
      break;
  if (i == N_METHODS) {
    atl_rpc_not_found(d, c, req->method, "admin methods", methods, N_METHODS,
                      sizeof(methods[0]));
    atl_rpc_request_free(req);
    return;
  }
  if (!atl_conn_authed(atl_rpc_conn(c)) && methods[i].fn != m_auth) {
    atl_rpc_reply_error(d, c, ATL_RPC_UNAUTHORIZED,
                        "authentication required: call auth {\"secret\": ...} "
                        "first (the daemon has an [admin] secret_file)",
                        NULL);
    atl_rpc_request_free(req);
    return;
  }
  static atl_series_t *series[N_METHODS];
  if (series[i] == NULL)
    series[i] = atl_stats_series(ATL_FAM_ADMIN, methods[i].name);
  atl_rpc_call_measure(c, series[i]);
  if (methods[i].fn == m_forward)
    atl_rpc_dispatch(d, c, req); /* takes req */
  else {
    methods[i].fn(d, c, req->params);
    atl_rpc_request_free(req);
  }
}

const atl_server_kind_t atl_admin_kind = {.name = "admin",
                                          .umask = 0177,
                                          .check_peer = 1,
                                          .needs_auth = 1,
                                          .dispatch = admin_dispatch};
