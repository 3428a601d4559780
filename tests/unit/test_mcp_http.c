/* mcp/mcp_http.c: the Streamable HTTP transport's header checks and the
 * session ids legacy clients are given. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "mcp.h"

static const char key[] =
    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
static const char sid[] = "0123456789abcdef0123456789abcdef";

static json_object *parse(const char *text) {
  json_object *o = json_tokener_parse(text);
  cr_assert_not_null(o, "%s", text);
  return o;
}

#define MODERN_CALL                                                            \
  "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{"       \
  "\"name\":\"render_scene\",\"_meta\":{\"io.modelcontextprotocol/"            \
  "protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/"                \
  "clientCapabilities\":{}}}}"

/* The check's answer for msg under h: its error code, or 0 for none;
 * *status and the message into msg_out. */
static int check(const atl_mcp_http_t *h, const char *text, int *status,
                 char *msg_out, size_t size) {
  json_object *msg = parse(text), *e = NULL, *code = NULL, *m = NULL;
  json_object *err = atl_mcp_http_check(h, msg, status);
  int c = 0;
  if (err != NULL) {
    cr_assert(json_object_object_get_ex(err, "error", &e));
    cr_assert(json_object_object_get_ex(e, "code", &code));
    cr_assert(json_object_object_get_ex(e, "message", &m));
    c = json_object_get_int(code);
    snprintf(msg_out, size, "%s", json_object_get_string(m));
  }
  json_object_put(err);
  json_object_put(msg);
  return c;
}

Test(mcp_http, modern_headers_that_agree_pass) {
  atl_mcp_http_t h = {.accept = "application/json, text/event-stream",
                      .protocol_version = "2026-07-28",
                      .method = "tools/call",
                      .name = "render_scene"};
  int status;
  char m[512];
  cr_assert_eq(check(&h, MODERN_CALL, &status, m, sizeof(m)), 0);
  /* A value may come as =?base64?...?=. */
  h.name = "=?base64?cmVuZGVyX3NjZW5l?=";
  cr_assert_eq(check(&h, MODERN_CALL, &status, m, sizeof(m)), 0);
}

Test(mcp_http, a_modern_header_absent_or_disagreeing_is_32020) {
  static const struct {
    atl_mcp_http_t h;
    const char *says;
  } cases[] = {
      {{NULL, NULL, "tools/call", "render_scene"},
       "MCP-Protocol-Version header is absent"},
      {{NULL, "2025-11-25", "tools/call", "render_scene"},
       "MCP-Protocol-Version is \"2025-11-25\""},
      {{NULL, "2026-07-28", NULL, "render_scene"},
       "Mcp-Method header is absent"},
      {{NULL, "2026-07-28", "tools/list", "render_scene"},
       "Mcp-Method is \"tools/list\""},
      {{NULL, "2026-07-28", "tools/call", NULL}, "Mcp-Name header is absent"},
      {{NULL, "2026-07-28", "tools/call", "create_shape"},
       "Mcp-Name is \"create_shape\""},
      /* Broken base64 is not the name. */
      {{NULL, "2026-07-28", "tools/call", "=?base64?!!!?="}, "Mcp-Name is"},
      /* Nor is a name with a NUL in it (base64 of "render_scene\0"). */
      {{NULL, "2026-07-28", "tools/call", "=?base64?cmVuZGVyX3NjZW5lAA==?="},
       "Mcp-Name is"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    int status = 0;
    char m[512] = "";
    cr_assert_eq(check(&cases[i].h, MODERN_CALL, &status, m, sizeof(m)), -32020,
                 "case %zu: %s", i, m);
    cr_assert_eq(status, 400);
    cr_assert(strstr(m, cases[i].says) != NULL, "case %zu: %s", i, m);
  }
}

Test(mcp_http, legacy_version_headers) {
  int status;
  char m[512];
  const char *list = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}";
  atl_mcp_http_t h = {.protocol_version = "2025-06-18"};
  cr_assert_eq(check(&h, list, &status, m, sizeof(m)), 0);
  h.protocol_version = NULL; /* taken for 2025-03-26 */
  cr_assert_eq(check(&h, list, &status, m, sizeof(m)), 0);
  h.protocol_version = "1999-01-01";
  cr_assert_eq(check(&h, list, &status, m, sizeof(m)), -32022);
  cr_assert_eq(status, 400);
  /* The modern version without its envelope: the envelope's error. */
  h.protocol_version = "2026-07-28";
  cr_assert_eq(check(&h, list, &status, m, sizeof(m)), -32602);
  cr_assert(strstr(m, "_meta") != NULL, "%s", m);
  /* Headers a legacy client need not send must not disagree if sent. */
  h.protocol_version = NULL;
  h.method = "tools/call";
  cr_assert_eq(check(&h, list, &status, m, sizeof(m)), -32020);
}

Test(mcp_http, accept_must_take_json_and_events) {
  int status;
  char m[512];
  static const char *const ok[] = {NULL,
                                   "application/json, text/event-stream",
                                   "*/*",
                                   "application/*, text/*",
                                   "text/event-stream;q=0.9, application/json",
                                   "APPLICATION/JSON, Text/Event-Stream"};
  static const char *const refused[] = {
      "application/json", "text/event-stream", "text/html",
      "application/json, text/event-stream;q=0", ""};
  for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
    atl_mcp_http_t h = {.accept = ok[i],
                        .protocol_version = "2026-07-28",
                        .method = "tools/call",
                        .name = "render_scene"};
    cr_assert_eq(check(&h, MODERN_CALL, &status, m, sizeof(m)), 0, "%s",
                 ok[i] ? ok[i] : "(none)");
  }
  for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
    atl_mcp_http_t h = {.accept = refused[i]};
    cr_assert_neq(check(&h, MODERN_CALL, &status, m, sizeof(m)), 0, "%s",
                  refused[i]);
    cr_assert_eq(status, 406, "%s", refused[i]);
  }
}

Test(mcp_http, notifications_and_non_requests_are_not_checked) {
  int status;
  char m[512];
  atl_mcp_http_t h = {.protocol_version = "bogus", .method = "x"};
  cr_assert_eq(check(&h,
                     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
                     "initialized\"}",
                     &status, m, sizeof(m)),
               0);
  cr_assert_eq(check(&h, "[1,2]", &status, m, sizeof(m)), 0);
  cr_assert_eq(check(&h, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
                     &status, m, sizeof(m)),
               0);
}

Test(mcp_http, legacy_initialize_and_requests) {
  json_object *init = parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
                            "\"initialize\",\"params\":{}}");
  json_object *note = parse("{\"jsonrpc\":\"2.0\",\"method\":\"initialize\"}");
  json_object *modern = parse(MODERN_CALL);
  cr_assert(atl_mcp_is_legacy_initialize(init));
  cr_assert(atl_mcp_is_legacy_request(init));
  cr_assert_not(atl_mcp_is_legacy_initialize(note));
  cr_assert_not(atl_mcp_is_legacy_request(note));
  cr_assert_not(atl_mcp_is_legacy_request(modern));
  json_object_put(init);
  json_object_put(note);
  json_object_put(modern);
}

Test(mcp_http, a_session_id_reads_back_and_only_with_its_key) {
  char id[ATL_MCP_SID_MAX + 1], id2[ATL_MCP_SID_MAX + 1], s[33], c[33];
  cr_assert_eq(atl_mcp_sid_make(key, sid, "claude-code", id), 0);
  cr_assert_eq(atl_mcp_sid_make(key, sid, "claude-code", id2), 0);
  cr_assert_str_neq(id, id2, "a nonce: each initialize its own id");
  cr_assert_eq(strncmp(id, sid, 32), 0);
  for (const char *p = id; *p; p++)
    cr_assert(*p >= 0x21 && *p <= 0x7e, "visible ASCII only");
  cr_assert_eq(atl_mcp_sid_read(key, id, s, c), 0);
  cr_assert_str_eq(s, sid);
  cr_assert_str_eq(c, "claude-code");
  /* Another key, one digit changed anywhere, another session's id in
   * front of this MAC: none reads. */
  char other[] =
      "10112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
  cr_assert_neq(atl_mcp_sid_read(other, id, s, c), 0);
  for (size_t i = 0; id[i]; i++) {
    char bad[ATL_MCP_SID_MAX + 1];
    strcpy(bad, id);
    bad[i] = bad[i] == '0' ? '1' : '0';
    cr_assert_neq(atl_mcp_sid_read(key, bad, s, c), 0, "digit %zu", i);
  }
  char moved[ATL_MCP_SID_MAX + 1];
  strcpy(moved, id);
  memcpy(moved, "fedcba9876543210fedcba9876543210", 32);
  cr_assert_neq(atl_mcp_sid_read(key, moved, s, c), 0);
  cr_assert_neq(atl_mcp_sid_read(key, "", s, c), 0);
  cr_assert_neq(atl_mcp_sid_read(key, NULL, s, c), 0);
  cr_assert_neq(atl_mcp_sid_read(key, sid, s, c), 0);
}

Test(mcp_http, the_client_name_is_cut_and_any_bytes_survive) {
  char id[ATL_MCP_SID_MAX + 1], s[33], c[33];
  const char *longname = "a client whose name goes on and on and on";
  cr_assert_eq(atl_mcp_sid_make(key, sid, longname, id), 0);
  cr_assert_leq(strlen(id), ATL_MCP_SID_MAX);
  cr_assert_eq(atl_mcp_sid_read(key, id, s, c), 0);
  cr_assert_eq(strlen(c), 32);
  cr_assert_eq(strncmp(c, longname, 32), 0);
  cr_assert_eq(atl_mcp_sid_make(key, sid, "new\nline\r\x7f", id), 0);
  cr_assert_eq(atl_mcp_sid_read(key, id, s, c), 0);
  cr_assert_str_eq(c, "new\nline\r\x7f");
  cr_assert_eq(atl_mcp_sid_make(key, sid, NULL, id), 0);
  cr_assert_eq(atl_mcp_sid_read(key, id, s, c), 0);
  cr_assert_str_eq(c, "");
  /* A malformed session or key makes nothing. */
  cr_assert_neq(atl_mcp_sid_make(key, "not-a-session", NULL, id), 0);
  cr_assert_neq(atl_mcp_sid_make("short", sid, NULL, id), 0);
}
