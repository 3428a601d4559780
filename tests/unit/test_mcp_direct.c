/* mcp/mcp_direct.c: which tools/call atelierd may run itself for a
 * handed-off atelierctl mcp, and the answer it gives, which must be the
 * one atelierctl's whole way gives. */
#include <criterion/criterion.h>
#include <string.h>

#include <json-c/json.h>

#include "mcp.h"

static const char sid[] = "0123456789abcdef0123456789abcdef";

#define MODERN_META                                                            \
  "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","     \
  "\"io.modelcontextprotocol/clientCapabilities\":{},"                         \
  "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"probe\"}}"

/* atl_mcp_direct() of text: 1 or 0, the call in *out (msg kept in *keep). */
static int direct(const char *text, atl_mcp_direct_t *out, json_object **keep) {
  json_object *msg = json_tokener_parse(text);
  cr_assert_not_null(msg, "%s", text);
  int rc = atl_mcp_direct(msg, out);
  if (keep != NULL)
    *keep = msg;
  else
    json_object_put(msg);
  return rc;
}

Test(mcp_direct, takes_a_plain_call_in_either_era) {
  atl_mcp_direct_t c;
  json_object *keep = NULL;
  cr_assert_eq(direct("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
                      "\"params\":{\"name\":\"echo\",\"arguments\":{\"a\":1}}}",
                      &c, &keep),
               1);
  cr_assert_str_eq(c.name, "echo");
  cr_assert_eq(c.modern, 0);
  cr_assert_null(c.client);
  cr_assert_eq(json_object_get_int(c.id), 3);
  cr_assert(json_object_is_type(c.args, json_type_object));
  json_object_put(keep);
  cr_assert_eq(direct("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"tools/"
                      "call\",\"params\":{\"name\":\"echo\"," MODERN_META "}}",
                      &c, &keep),
               1);
  cr_assert_eq(c.modern, 1);
  cr_assert_str_eq(c.client, "probe");
  cr_assert_null(c.args);
  json_object_put(keep);
}

Test(mcp_direct, leaves_the_rest_to_the_whole_way) {
  atl_mcp_direct_t c;
  static const char *const rest[] = {
      /* not a call */
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}",
      /* malformed: the whole way answers them */
      "{\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}",
      "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"tools/call\","
      "\"params\":{\"name\":\"echo\"}}",
      "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"tools/call\","
      "\"params\":{\"name\":\"echo\"}}",
      "{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\","
      "\"params\":{\"name\":\"echo\"}}",
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}",
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":[]}",
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
      "\"params\":{\"name\":7}}",
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
      "\"params\":{\"name\":\"echo\",\"arguments\":[1]}}",
      /* progress is followed by atelierctl */
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
      "\"params\":{\"name\":\"echo\",\"_meta\":{\"progressToken\":1}}}",
      /* a session named: the whole way checks and follows it */
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
      "\"params\":{\"name\":\"echo\",\"_meta\":{\"io.modelcontextprotocol/"
      "protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/"
      "clientCapabilities\":{},\"dev.atelier/session\":\"new\"}}}",
      /* a version we do not speak: -32022 comes from the whole way */
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
      "\"params\":{\"name\":\"echo\",\"_meta\":{\"io.modelcontextprotocol/"
      "protocolVersion\":\"2030-01-01\",\"io.modelcontextprotocol/"
      "clientCapabilities\":{}}}}",
      "[1]", "\"tools/call\"", NULL};
  for (int i = 0; rest[i] != NULL; i++)
    cr_assert_eq(direct(rest[i], &c, NULL), 0, "%s", rest[i]);
}

/* The answer for env, as compact JSON. */
static char *answer(const char *call, const char *env) {
  atl_mcp_direct_t c;
  json_object *keep = NULL, *e = json_tokener_parse(env);
  cr_assert_eq(direct(call, &c, &keep), 1);
  cr_assert_not_null(e);
  json_object *a = atl_mcp_direct_answer(&c, e, sid);
  char *s = strdup(json_object_to_json_string_ext(
      a, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(a);
  json_object_put(e);
  json_object_put(keep);
  return s;
}

Test(mcp_direct, answers_as_the_whole_way_does) {
  char *s = answer("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\","
                   "\"params\":{\"name\":\"echo\"}}",
                   "{\"success\":true,\"result\":{\"a\":\"b/c\"}}");
  cr_assert_str_eq(
      s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"content\":[{\"type\":"
         "\"text\",\"text\":\"{\\\"a\\\":\\\"b/c\\\"}\"}],"
         "\"structuredContent\":{\"a\":\"b/c\"},\"_meta\":{\"dev.atelier/"
         "session\":\"0123456789abcdef0123456789abcdef\"}}}");
  free(s);
  s = answer("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\","
             "\"params\":{\"name\":\"echo\"}}",
             "{\"success\":false,\"error\":\"radius must be > 0\"}");
  cr_assert_str_eq(s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"content\":"
                      "[{\"type\":\"text\",\"text\":\"radius must be > 0\"}],"
                      "\"isError\":true}}");
  free(s);
  /* A modern answer says it is complete and who the server is. */
  s = answer("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\","
             "\"params\":{\"name\":\"echo\"," MODERN_META "}}",
             "{\"success\":true,\"result\":[1,2]}");
  cr_assert(strstr(s, "\"resultType\":\"complete\"") != NULL, "%s", s);
  cr_assert(strstr(s, "\"io.modelcontextprotocol/serverInfo\"") != NULL, "%s",
            s);
  /* A result that is not an object has no structuredContent. */
  cr_assert(strstr(s, "structuredContent") == NULL, "%s", s);
  free(s);
}

Test(mcp_direct, via_is_printable_and_short) {
  char via[ATL_MCP_VIA_MAX + 1];
  atl_mcp_via("MCP over stdio", NULL, via);
  cr_assert_str_eq(via, "MCP over stdio");
  atl_mcp_via("MCP over stdio", "", via);
  cr_assert_str_eq(via, "MCP over stdio");
  atl_mcp_via("MCP over stdio", "claude\x1b[31m\xe2\x80\xae", via);
  cr_assert_str_eq(via, "MCP over stdio (claude?[31m?"
                        "?"
                        "?)");
  char longname[400];
  memset(longname, 'n', sizeof(longname) - 1);
  longname[sizeof(longname) - 1] = '\0';
  atl_mcp_via("MCP over stdio", longname, via);
  cr_assert_eq(strlen(via), ATL_MCP_VIA_MAX);
}
