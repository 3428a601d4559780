/* The Streamable HTTP transport's own rules, kept apart from the bridge's
 * I/O so that they can be unit-tested and fuzzed: the header checks of
 * 2026-07-28 and the session ids legacy clients are given. See mcp.h and
 * ../shared/anchors/mcp.md §7. */
#include "atl-build.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "mcp_int.h"

/* ---- Accept ---- */

/* 1 when the Accept value takes type ("application/json"): the type
 * itself, its family's wildcard, or any. Parameters (q=...) are read as
 * the media range's, and q=0 refuses it. */
static int accepts(const char *accept, const char *type) {
  size_t family = strcspn(type, "/");
  for (const char *p = accept; *p;) {
    p += strspn(p, " \t,");
    size_t n = strcspn(p, ",;");
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
      n--;
    int match = (n == strlen(type) && strncasecmp(p, type, n) == 0) ||
                (n == 3 && strncmp(p, "*/*", 3) == 0) ||
                (n == family + 2 && strncasecmp(p, type, family + 1) == 0 &&
                 p[family + 1] == '*');
    const char *end = p + strcspn(p, ",");
    const char *q = strstr(p, "q=");
    if (match && q != NULL && q < end) {
      double v = strtod(q + 2, NULL);
      match = v > 0.0;
    }
    if (match)
      return 1;
    p = *end ? end + 1 : end;
  }
  return 0;
}

/* ---- header values ---- */

/* A header value as the body's text: "=?base64?...?=" is decoded (how a
 * client sends a value that is not plain ASCII). A new string, or NULL
 * when the encoding is broken. */
static char *header_text(const char *v) {
  size_t n = strlen(v);
  if (n >= 12 && strncasecmp(v, "=?base64?", 9) == 0 &&
      strcmp(v + n - 2, "?=") == 0) {
    size_t len = 0;
    unsigned char *raw = atl_base64_decode(v + 9, n - 11, &len);
    if (raw == NULL)
      return NULL;
    char *s = malloc(len + 1);
    if (s != NULL) {
      memcpy(s, raw, len);
      s[len] = '\0';
      /* A NUL inside cannot equal any JSON string we compare to. */
      if (strlen(s) != len) {
        free(s);
        s = NULL;
      }
    }
    free(raw);
    return s;
  }
  return strdup(v);
}

/* 1 when the header h (NULL: absent) carries body's value. */
static int header_is(const char *h, const char *body) {
  if (h == NULL || body == NULL)
    return 0;
  char *t = header_text(h);
  int same = t != NULL && strcmp(t, body) == 0;
  free(t);
  return same;
}

static json_object *mismatch(json_object *id, int *status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static json_object *mismatch(json_object *id, int *status, const char *fmt,
                             ...) {
  char why[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof(why), fmt, ap);
  va_end(ap);
  *status = 400;
  return atl_mcp_error(id, -32020, NULL,
                       "Bad Request: the request headers and body disagree: "
                       "%s",
                       why);
}

/* ---- the checks ---- */

static json_object *envelope_version(json_object *params) {
  json_object *meta = NULL, *v = NULL;
  if (params == NULL || !json_object_is_type(params, json_type_object) ||
      !json_object_object_get_ex(params, "_meta", &meta) ||
      !json_object_is_type(meta, json_type_object) ||
      !json_object_object_get_ex(meta, ATL_MCP_META_VERSION, &v))
    return NULL;
  return v;
}

/* The value a request's Mcp-Name carries, for the methods that need one
 * (NULL for the others). */
static const char *name_source(const char *method, json_object *params,
                               int *needed) {
  *needed = 0;
  if (strcmp(method, "tools/call") == 0 || strcmp(method, "prompts/get") == 0) {
    *needed = 1;
    return atl__mcp_str(params, "name");
  }
  if (strcmp(method, "resources/read") == 0) {
    *needed = 1;
    return atl__mcp_str(params, "uri");
  }
  return NULL;
}

json_object *atl_mcp_http_check(const atl_mcp_http_t *h, json_object *msg,
                                int *status) {
  *status = 200;
  json_object *id = NULL, *mv = NULL, *params = NULL;
  /* The client "MUST include an Accept header listing both": an absent
   * one takes anything (RFC 9110), a present one must take both. */
  if (h->accept != NULL && (!accepts(h->accept, "application/json") ||
                            !accepts(h->accept, "text/event-stream"))) {
    *status = 406;
    return atl_mcp_error(NULL, -32600, NULL,
                         "Not Acceptable: the answer may be JSON or an event "
                         "stream, so Accept must take both "
                         "(\"application/json, text/event-stream\"), not "
                         "\"%.100s\"",
                         h->accept);
  }
  /* Only requests are checked: a malformed message is the protocol's to
   * refuse, and notifications carry no Mcp-Method from the SDKs. */
  if (!json_object_is_type(msg, json_type_object) ||
      !json_object_object_get_ex(msg, "id", &id) ||
      !json_object_object_get_ex(msg, "method", &mv) ||
      !json_object_is_type(mv, json_type_string))
    return NULL;
  if (!json_object_is_type(id, json_type_string) &&
      !json_object_is_type(id, json_type_int))
    id = NULL;
  const char *method = json_object_get_string(mv);
  json_object_object_get_ex(msg, "params", &params);
  json_object *ev = envelope_version(params);
  const char *version = ev && json_object_is_type(ev, json_type_string)
                            ? json_object_get_string(ev)
                            : NULL;
  int needed = 0;
  const char *name = name_source(method, params, &needed);

  if (ev != NULL) {
    /* Modern: "MCP-Protocol-Version ... MUST match", Mcp-Method on every
     * request, Mcp-Name where the method has a name. A version we do not
     * speak is the envelope's to refuse (-32022), once they agree. */
    if (h->protocol_version == NULL)
      return mismatch(id, status,
                      "the MCP-Protocol-Version header is absent (send "
                      "\"%s\", the version in _meta)",
                      version ? version : "?");
    if (version == NULL || strcmp(h->protocol_version, version) != 0)
      return mismatch(id, status,
                      "MCP-Protocol-Version is \"%.40s\" but _meta's "
                      "protocolVersion is \"%.40s\"",
                      h->protocol_version, version ? version : "not a string");
    if (h->method == NULL)
      return mismatch(id, status,
                      "the Mcp-Method header is absent (send \"%.80s\", the "
                      "body's method)",
                      method);
    if (!header_is(h->method, method))
      return mismatch(id, status,
                      "Mcp-Method is \"%.80s\" but the body's method is "
                      "\"%.80s\"",
                      h->method, method);
    if (needed && h->name == NULL)
      return mismatch(id, status,
                      "the Mcp-Name header is absent (a %s request sends its "
                      "params' name, \"%.80s\")",
                      method, name ? name : "");
    if (needed && !header_is(h->name, name))
      return mismatch(id, status,
                      "Mcp-Name is \"%.80s\" but the body names \"%.80s\"",
                      h->name, name ? name : "nothing");
    return NULL;
  }

  /* Legacy: the version header, when sent, must be one we speak; the
   * modern one without its envelope is the envelope's error, as the
   * official server answers it. */
  if (h->protocol_version != NULL) {
    if (strcmp(h->protocol_version, ATL_MCP_MODERN) == 0) {
      *status = 400;
      return atl_mcp_error(
          id, -32602, NULL,
          "Invalid params: MCP-Protocol-Version is %s, but the request is "
          "missing the required per-request envelope key(s): _meta[\"%s\"] "
          "and _meta[\"%s\"]",
          ATL_MCP_MODERN, ATL_MCP_META_VERSION, ATL_MCP_META_CAPS);
    }
    int known = 0;
    for (size_t i = 0; atl__mcp_legacy_versions[i] != NULL; i++)
      known |= strcmp(h->protocol_version, atl__mcp_legacy_versions[i]) == 0;
    if (!known) {
      json_object *data = json_object_new_object();
      json_object *supported = json_object_new_array();
      json_object_array_add(supported, json_object_new_string(ATL_MCP_MODERN));
      for (size_t i = 0; atl__mcp_legacy_versions[i] != NULL; i++)
        json_object_array_add(
            supported, json_object_new_string(atl__mcp_legacy_versions[i]));
      json_object_object_add(data, "supported", supported);
      json_object_object_add(data, "requested",
                             json_object_new_string(h->protocol_version));
      *status = 400;
      return atl_mcp_error(id, -32022, data,
                           "Unsupported protocol version: %.40s (this server "
                           "speaks %s, and %s and earlier through initialize)",
                           h->protocol_version, ATL_MCP_MODERN,
                           ATL_MCP_LEGACY_LATEST);
    }
  }
  /* Legacy clients send neither; one that does must not disagree (a proxy
   * may route on them). */
  if (h->method != NULL && !header_is(h->method, method))
    return mismatch(id, status,
                    "Mcp-Method is \"%.80s\" but the body's method is "
                    "\"%.80s\"",
                    h->method, method);
  if (h->name != NULL && needed && !header_is(h->name, name))
    return mismatch(id, status,
                    "Mcp-Name is \"%.80s\" but the body names \"%.80s\"",
                    h->name, name ? name : "nothing");
  return NULL;
}

int atl_mcp_is_legacy_initialize(json_object *msg) {
  json_object *params = NULL;
  const char *method = atl__mcp_str(msg, "method");
  if (method == NULL || strcmp(method, "initialize") != 0 ||
      !json_object_object_get_ex(msg, "id", NULL))
    return 0;
  json_object_object_get_ex(msg, "params", &params);
  return envelope_version(params) == NULL;
}

int atl_mcp_is_legacy_request(json_object *msg) {
  json_object *params = NULL;
  if (atl__mcp_str(msg, "method") == NULL ||
      !json_object_object_get_ex(msg, "id", NULL))
    return 0;
  json_object_object_get_ex(msg, "params", &params);
  return envelope_version(params) == NULL;
}

/* ---- session ids ---- */

#define SID_NONCE_HEX 16
#define SID_MAC_HEX 32
#define SID_CLIENT_MAX 32 /* bytes of the client's name, hex in the id */

static int hex_value(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

static int all_hex(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (hex_value((unsigned char)s[i]) < 0)
      return 0;
  return 1;
}

static void to_hex(const unsigned char *b, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[b[i] >> 4];
    out[2 * i + 1] = digits[b[i] & 15];
  }
  out[2 * n] = '\0';
}

/* The MAC of body (the id without its MAC) as SID_MAC_HEX hex digits. */
static int sid_mac(const char *key, const char *body, size_t body_len,
                   char out[SID_MAC_HEX + 1]) {
  unsigned char k[32], md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (strlen(key) != 64 || !all_hex(key, 64))
    return -1;
  for (int i = 0; i < 32; i++)
    k[i] =
        (unsigned char)(hex_value(key[2 * i]) * 16 + hex_value(key[2 * i + 1]));
  /* A label ties the key's use to this one purpose. */
  static const char label[] = "atelier mcp session v1\n";
  char *text = malloc(sizeof(label) + body_len);
  if (text == NULL)
    return -1;
  memcpy(text, label, sizeof(label) - 1);
  memcpy(text + sizeof(label) - 1, body, body_len);
  unsigned char *ok =
      HMAC(EVP_sha256(), k, (int)sizeof(k), (const unsigned char *)text,
           sizeof(label) - 1 + body_len, md, &mdlen);
  OPENSSL_cleanse(k, sizeof(k));
  free(text);
  if (ok == NULL || mdlen < SID_MAC_HEX / 2)
    return -1;
  to_hex(md, SID_MAC_HEX / 2, out);
  return 0;
}

void atl_mcp_thread_done(void) {
  OPENSSL_thread_stop();
}

/* The layout: session (32 hex), nonce (16 hex), the client's name (hex,
 * even, at most 64), and the MAC (32 hex) at the end. */
int atl_mcp_sid_make(const char *key, const char *session, const char *client,
                     char out[ATL_MCP_SID_MAX + 1]) {
  unsigned char nonce[SID_NONCE_HEX / 2];
  if (strlen(session) != 32 || !all_hex(session, 32) ||
      getrandom(nonce, sizeof(nonce), 0) != (ssize_t)sizeof(nonce))
    return -1;
  size_t cn = client ? strlen(client) : 0;
  if (cn > SID_CLIENT_MAX)
    cn = SID_CLIENT_MAX;
  char body[ATL_MCP_SID_MAX + 1];
  memcpy(body, session, 32);
  to_hex(nonce, sizeof(nonce), body + 32);
  to_hex((const unsigned char *)(client ? client : ""), cn, body + 32 + 16);
  size_t len = 32 + 16 + 2 * cn;
  char mac[SID_MAC_HEX + 1];
  if (sid_mac(key, body, len, mac) != 0)
    return -1;
  memcpy(out, body, len);
  memcpy(out + len, mac, SID_MAC_HEX + 1);
  return 0;
}

int atl_mcp_sid_read(const char *key, const char *text, char session[33],
                     char client[33]) {
  size_t n = text ? strlen(text) : 0;
  if (n < 32 + SID_NONCE_HEX + SID_MAC_HEX ||
      n > 32 + SID_NONCE_HEX + 2 * SID_CLIENT_MAX + SID_MAC_HEX ||
      (n - 32 - SID_NONCE_HEX - SID_MAC_HEX) % 2 != 0 || !all_hex(text, n))
    return -1;
  size_t body = n - SID_MAC_HEX;
  char mac[SID_MAC_HEX + 1];
  if (sid_mac(key, text, body, mac) != 0 ||
      CRYPTO_memcmp(mac, text + body, SID_MAC_HEX) != 0)
    return -1;
  memcpy(session, text, 32);
  session[32] = '\0';
  size_t cn = (body - 32 - SID_NONCE_HEX) / 2;
  for (size_t i = 0; i < cn; i++) {
    const char *h = text + 32 + SID_NONCE_HEX + 2 * i;
    client[i] = (char)(hex_value(h[0]) * 16 + hex_value(h[1]));
  }
  client[cn] = '\0';
  return 0;
}
