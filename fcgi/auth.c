/* Who may use the API: every /api/ request passes here before its route.
 *
 * The API drives sessions that spend the user's LLM key, and it listens
 * on an address every web page the user visits can send requests to. So
 * a request must (in this order):
 *   1. name one of our hosts in Host (421 otherwise): a DNS-rebinding page
 *      reaches 127.0.0.1 under its own name, and is refused here even if
 *      nginx in front was configured without our default server;
 *   2. not come from another origin: an Origin header that is not this
 *      host's, or a Sec-Fetch-Site other than same-origin or none, is 403
 *      (cross-site form posts, no-cors fetches, <img> probes);
 *   3. if it is a POST, be Content-Type: application/json (415), which no
 *      form and no no-cors fetch can send, so a browser must ask first
 *      with a CORS preflight, which this API never grants;
 *   4. carry the token (401): "Authorization: Bearer <token>" or the
 *      cookie the page got from POST /api/auth. With [http] auth = off in
 *      atelierd.conf, the request must instead have come in on a loopback
 *      address (SERVER_ADDR, 403 otherwise).
 * The token and whether it is required come from atelierd (http.auth on
 * api.sock), asked once per connection to it: a restarted daemon may
 * have a new configuration.
 */
#include "atl-build.h"

#include <arpa/inet.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bridge.h"
#include "match.h"

#define TOKEN_LEN 64

/* The answer of http.auth on this thread's connection to atelierd. */
static __thread struct {
  int known;
  int required;
  char token[TOKEN_LEN + 1];
  char mcp_key[TOKEN_LEN + 1]; /* "" from an atelierd without one */
} cache;

const char *fcgi_mcp_key(void) {
  return cache.known && cache.mcp_key[0] ? cache.mcp_key : NULL;
}

void fcgi_auth_forget(void) {
  cache.known = 0;
}

/* The connection the cache was learnt on is idle between requests, so
 * if it reads as ready the daemon has closed it: it restarted, perhaps
 * with a new token (the old one revoked) or another [http] auth, and what
 * it said no longer holds. Without this, the next request would pass on
 * the old answer and its route would reconnect to the new daemon. */
static void forget_if_closed(fcgi_ctx_t *x) {
  if (!cache.known)
    return;
  struct pollfd p = {.fd = x->rpc->fd, .events = POLLIN | POLLRDHUP};
  if (x->rpc->fd < 0 || poll(&p, 1, 0) != 0) {
    atl_rpcc_close(x->rpc);
    cache.known = 0;
  }
}

/* Asks atelierd unless this connection already did. 0, or the status
 * answered (quiet: the status, nothing answered). */
static int load(fcgi_ctx_t *x, int quiet) {
  forget_if_closed(x);
  if (cache.known)
    return 0;
  json_object *r = NULL, *v;
  int rc = fcgi_call_quiet(x, "http.auth", NULL, 5000, &r);
  if (rc == ATL_RPCC_TRANSPORT && quiet)
    return 503;
  if (rc != ATL_RPCC_OK && rc != ATL_RPCC_TRANSPORT && quiet) {
    json_object_put(r);
    return 500;
  }
  if (rc == ATL_RPCC_TRANSPORT) {
    /* "status" as in /api/health's own answer while atelierd is away. */
    json_object *o = json_object_new_object();
    json_object_object_add(o, "status", json_object_new_string("unavailable"));
    json_object_object_add(
        o, "error",
        json_object_new_string("atelierd is not reachable, so the request "
                               "cannot be checked; try again"));
    fcgi_reply_json(x, 503, o);
    json_object_put(o);
    return 503;
  }
  if (rc != ATL_RPCC_OK) {
    fcgi_reply_error(x, 500,
                     "atelierd refused http.auth (%s): run an atelierd as "
                     "new as this atelier-fcgi",
                     x->rpc->err_message ? x->rpc->err_message : "?");
    return 500;
  }
  int required = !json_object_object_get_ex(r, "required", &v) ||
                 json_object_get_boolean(v);
  const char *tok = json_object_object_get_ex(r, "token", &v)
                        ? json_object_get_string(v)
                        : NULL;
  if (required && (tok == NULL || strlen(tok) != TOKEN_LEN)) {
    json_object_put(r);
    if (quiet)
      return 500;
    fcgi_reply_error(x, 500, "atelierd's http.auth answer has no token");
    return 500;
  }
  cache.required = required;
  if (required)
    memcpy(cache.token, tok, TOKEN_LEN + 1);
  const char *key = json_object_object_get_ex(r, "mcp_key", &v)
                        ? json_object_get_string(v)
                        : NULL;
  if (key != NULL && strlen(key) == TOKEN_LEN &&
      strspn(key, "0123456789abcdef") == TOKEN_LEN)
    memcpy(cache.mcp_key, key, TOKEN_LEN + 1);
  else
    cache.mcp_key[0] = '\0';
  cache.known = 1;
  json_object_put(r);
  return 0;
}

/* 1 if given (n bytes) is the token. The time taken depends on neither
 * the token nor how much of it given matches. */
static int token_eq(const char *given, size_t n) {
  unsigned diff = n != TOKEN_LEN;
  for (size_t i = 0; i < TOKEN_LEN; i++)
    diff |=
        (unsigned char)(i < n ? given[i] : 0) ^ (unsigned char)cache.token[i];
  return diff == 0;
}

/* The cookie's name carries the port: cookies ignore ports, and two
 * stacks on one host would otherwise log each other out. */
static void cookie_name(fcgi_ctx_t *x, char *out, size_t cap) {
  const char *port = fcgi_param(x, "SERVER_PORT");
  if (port != NULL && port[0] != '\0' && strlen(port) <= 5 &&
      strspn(port, "0123456789") == strlen(port))
    snprintf(out, cap, "atelier_token_%s", port);
  else
    snprintf(out, cap, "atelier_token");
}

static int has_token(fcgi_ctx_t *x) {
  const char *a = fcgi_param(x, "HTTP_AUTHORIZATION");
  if (a != NULL && strncasecmp(a, "Bearer ", 7) == 0) {
    a += 7 + strspn(a + 7, " ");
    if (token_eq(a, strcspn(a, " ")))
      return 1;
  }
  const char *c = fcgi_param(x, "HTTP_COOKIE");
  char name[40];
  cookie_name(x, name, sizeof(name));
  size_t nl = strlen(name);
  while (c != NULL && *c) {
    c += strspn(c, " ;");
    size_t len = strcspn(c, ";");
    if (len > nl && strncmp(c, name, nl) == 0 && c[nl] == '=') {
      size_t vl = len - nl - 1;
      while (vl > 0 && c[nl + 1 + vl - 1] == ' ')
        vl--;
      if (token_eq(c + nl + 1, vl))
        return 1;
    }
    c += len;
  }
  return 0;
}

/* The host part of a Host header value when it is one of the loopback
 * names, with or without a port. */
static int loopback_host(const char *h) {
  static const char *const names[] = {"127.0.0.1", "localhost", "[::1]"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    size_t n = strlen(names[i]);
    if (strncasecmp(h, names[i], n) != 0)
      continue;
    const char *p = h + n;
    if (*p == '\0')
      return 1;
    if (*p == ':' && p[1] != '\0' && strlen(p + 1) <= 5 &&
        strspn(p + 1, "0123456789") == strlen(p + 1))
      return 1;
  }
  return 0;
}

int fcgi_host_allowed(const char *host) {
  if (host == NULL || host[0] == '\0')
    return 0;
  if (fcgi_opt.n_hosts == 0)
    return loopback_host(host);
  for (int i = 0; i < fcgi_opt.n_hosts; i++)
    if (strcasecmp(host, fcgi_opt.hosts[i]) == 0)
      return 1;
  return 0;
}

int fcgi_addr_is_loopback(const char *addr) {
  if (addr == NULL)
    return 0;
  struct in_addr a4;
  struct in6_addr a6;
  if (inet_pton(AF_INET, addr, &a4) == 1)
    return (ntohl(a4.s_addr) >> 24) == 127;
  if (inet_pton(AF_INET6, addr, &a6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&a6))
      return 1;
    return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
  }
  return 0;
}

/* Origin, when sent, must be this very host (either scheme: the host and
 * port are what an attacker cannot have). */
static int same_origin(const char *origin, const char *host) {
  const char *p = NULL;
  if (strncasecmp(origin, "http://", 7) == 0)
    p = origin + 7;
  else if (strncasecmp(origin, "https://", 8) == 0)
    p = origin + 8;
  return p != NULL && strcasecmp(p, host) == 0;
}

static int is_json_type(const char *ct) {
  if (ct == NULL || strncasecmp(ct, "application/json", 16) != 0)
    return 0;
  char next = ct[16];
  return next == '\0' || next == ';' || next == ' ' || next == '\t';
}

/* Answers status with the message; returns status. */
static int refuse(fcgi_ctx_t *x, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(fcgi_ctx_t *x, int status, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  fcgi_reply_error(x, status, "%s", msg);
  return status;
}

/* POST /api/auth {"token": "..."}: the page trades the token of its link
 * for a cookie that scripts cannot read (HttpOnly) and that no other
 * site's request carries (SameSite=Strict). */
static int login(fcgi_ctx_t *x) {
  json_object *body = NULL, *v;
  if (fcgi_read_json(x, &body) != 0)
    return 400;
  const char *tok = NULL;
  if (body != NULL && json_object_object_get_ex(body, "token", &v) &&
      json_object_is_type(v, json_type_string))
    tok = json_object_get_string(v);
  if (tok == NULL) {
    json_object_put(body);
    fcgi_reply_error(x, 400,
                     "the body must be {\"token\": \"the token of the "
                     "link atelier-stack printed\"}");
    return 400;
  }
  int ok = !cache.required || token_eq(tok, strlen(tok));
  json_object_put(body);
  if (!ok) {
    fcgi_reply_error(x, 401,
                     "that is not this server's token: open the link that "
                     "atelier-stack (./bootstrap run) printed, "
                     "http://HOST:PORT/?token=..., again");
    return 401;
  }
  json_object *o = json_object_new_object();
  json_object_object_add(o, "authenticated", json_object_new_boolean(1));
  json_object_object_add(o, "required",
                         json_object_new_boolean(cache.required));
  if (!cache.required) {
    fcgi_reply_json(x, 200, o);
    json_object_put(o);
    return 200;
  }
  char name[40], h[256];
  cookie_name(x, name, sizeof(name));
  const char *https = fcgi_param(x, "HTTPS");
  int secure = https != NULL && https[0] != '\0' && strcmp(https, "off");
  /* A year: the token outlives restarts, and deleting its file revokes
   * every cookie at once. */
  snprintf(h, sizeof(h),
           "Set-Cookie: %s=%s; Path=/; Max-Age=31536000; HttpOnly; "
           "SameSite=Strict%s\r\n",
           name, cache.token, secure ? "; Secure" : "");
  fcgi_reply_json_h(x, 200, h, o);
  json_object_put(o);
  return 200;
}

int fcgi_guard(fcgi_ctx_t *x, int route) {
  const char *host = fcgi_param(x, "HTTP_HOST");
  if (!fcgi_host_allowed(host))
    return refuse(x, 421,
                  "this server does not answer for the host '%.100s'; open "
                  "it by its own address (http://127.0.0.1:PORT/ or the "
                  "name given to atelier-fcgi --host)",
                  host ? host : "(none)");
  const char *site = fcgi_param(x, "HTTP_SEC_FETCH_SITE");
  if (site != NULL && strcmp(site, "same-origin") != 0 &&
      strcmp(site, "none") != 0)
    return refuse(x, 403,
                  "a request from another site (Sec-Fetch-Site: %.40s) may "
                  "not use this API; use the page at http://%.100s/",
                  site, host);
  const char *origin = fcgi_param(x, "HTTP_ORIGIN");
  if (origin != NULL && !same_origin(origin, host))
    return refuse(x, 403,
                  "a request from another origin (%.100s) may not use this "
                  "API; use the page at http://%.100s/",
                  origin, host);
  if (x->method != NULL && strcmp(x->method, "POST") == 0 &&
      !is_json_type(fcgi_param(x, "CONTENT_TYPE")))
    return refuse(x, 415,
                  "a POST must be JSON (Content-Type: application/json, "
                  "with a JSON body or none), not '%.60s'",
                  fcgi_param(x, "CONTENT_TYPE") ? fcgi_param(x, "CONTENT_TYPE")
                                                : "(none)");
  int rc = load(x, 0);
  if (rc != 0)
    return rc;
  if (!cache.required) {
    const char *addr = fcgi_param(x, "SERVER_ADDR");
    if (!fcgi_addr_is_loopback(addr))
      return refuse(x, 403,
                    "atelierd runs with [http] auth = off, which is only "
                    "for loopback: this request came in on %.60s; turn auth "
                    "on (remove the line)",
                    addr ? addr : "an unknown address");
    return route == FCGI_R_AUTH ? login(x) : 0;
  }
  if (route == FCGI_R_AUTH)
    return login(x);
  if (!has_token(x)) {
    fcgi_reply_error_h(x, 401, "WWW-Authenticate: Bearer realm=\"atelier\"\r\n",
                       "this API needs the token: open the link that "
                       "atelier-stack (./bootstrap run) printed, "
                       "http://%.100s/?token=..., or send 'Authorization: "
                       "Bearer <token>' (the token is the file 'token' in "
                       "atelierd's data directory)",
                       host);
    return 401;
  }
  return 0;
}

int fcgi_auth_recheck(fcgi_ctx_t *x) {
  /* Costs nothing while this thread's connection to the daemon is open:
   * the daemon that answered is still the one running. */
  int rc = load(x, 1);
  if (rc == 503)
    return -1;
  if (rc != 0)
    return 0;
  if (!cache.required)
    return fcgi_addr_is_loopback(fcgi_param(x, "SERVER_ADDR"));
  return has_token(x);
}
