#include <atelier/plugin.h>
static int hello(atl_call_t *call) {
  const char *who =
      json_object_get_string(json_object_object_get(call->args, "name"));
  json_object *r = json_object_new_object();
  json_object_object_add(r, "greeting", json_object_new_string(who));
  return call->host->call_result(call, r);
}
static const atl_tool_t tools[] = {
    {.name = "hello",
     .description = "Greets someone by name.",
     .input_schema =
         "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\","
         "\"default\":\"world\"}},\"additionalProperties\":false}",
     .handler = hello}};
ATL_PLUGIN_DEFINE(.name = "hello", .version = "1.0.0",
                  .description = "Says hello.", .tools = tools, .n_tools = 1);
