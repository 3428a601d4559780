/* The echo plugin: the reference plugin for writers of plugins, loaded
 * by every stack of the build tree. Its one tool:
 *   echo        {"text": string} -> {"text": ...}
 * flagged ATL_TOOL_FAST (it runs on the daemon's loop). The tools the
 * daemon's tests need beyond it (images, sleeps, failures, document
 * changes, secret arguments) are in the echo_test plugin
 * (tests/plugins/echo_test.c), which only the tests load: a model must
 * never be offered them.
 */
#include <atelier/plugin.h>

static int echo_init(const atl_host_t *h, void **state) {
  (void)h;
  *state = NULL;
  return 0;
}

static int echo_echo(atl_call_t *call) {
  json_object *text = json_object_object_get(call->args, "text");
  json_object *r = json_object_new_object();
  json_object_object_add(r, "text", json_object_get(text));
  return call->host->call_result(call, r);
}

static const atl_tool_t echo_tools[] = {
    {.name = "echo",
     .description = "Returns the text it is given. Use it to test the "
                    "connection to the daemon.",
     .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":"
                     "\"string\",\"description\":\"The text to echo back.\","
                     "\"maxLength\":1048576}},\"required\":[\"text\"],"
                     "\"additionalProperties\":false}",
     .result_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":"
                      "\"string\"}},\"required\":[\"text\"]}",
     .flags = ATL_TOOL_READ_ONLY | ATL_TOOL_FAST,
     .handler = echo_echo},
};

ATL_PLUGIN_DEFINE(.name = "echo", .version = "1.0.0",
                  .description = "The reference plugin: echoes its text.",
                  .tools = echo_tools,
                  .n_tools = sizeof(echo_tools) / sizeof(echo_tools[0]),
                  .init = echo_init);
