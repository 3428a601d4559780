/* Tiny plugins for test_loader: one source, one variant per VARIANT_*
 * macro, each breaking one rule the loader must enforce. */
#include <atelier/plugin.h>

__attribute__((unused)) static int handler(atl_call_t *call) {
  return call->host->call_result(call, NULL);
}

#define GOOD_SCHEMA                                                            \
  "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"number\"}}}"

#if defined(VARIANT_BAD_SCHEMA_JSON)
#define SCHEMA "{\"type\": \"object\", "
#elif defined(VARIANT_BAD_SCHEMA_KEYWORD)
#define SCHEMA "{\"type\":\"object\",\"patternProperties\":{\"^a\":{}}}"
#elif defined(VARIANT_BAD_SCHEMA_VALUE)
#define SCHEMA                                                                 \
  "{\"type\":\"object\",\"properties\":{\"r\":{\"minimum\":\"0\"}}}"
#elif defined(VARIANT_BAD_SCHEMA_ROOT)
#define SCHEMA "{\"type\":\"string\"}"
#else
#define SCHEMA GOOD_SCHEMA
#endif

#if defined(VARIANT_DUP_OTHER)
#define TOOL_NAME "lt_good_tool"
#else
#define TOOL_NAME PLUGIN_NAME "_tool"
#endif

#if defined(VARIANT_INIT_FAIL)
__attribute__((unused)) static int init(const atl_host_t *h, void **state) {
  (void)h;
  (void)state;
  return ATL_EIO;
}
#else
__attribute__((unused)) static int init(const atl_host_t *h, void **state) {
  (void)h;
  *state = (void *)0x1;
  return 0;
}
#endif

/* Unused by the variants without a plugin struct. */
__attribute__((unused)) static const atl_tool_t tools[] = {
    {.name = TOOL_NAME,
     .description = "A test tool.",
     .input_schema = SCHEMA,
#if defined(VARIANT_NULL_HANDLER)
     .handler = 0
#else
     .handler = handler
#endif
    },
#if defined(VARIANT_WIRE_REFUSED)
    /* Valid JSON Schema the validator takes, but a reference to itself,
     * which the providers' resolvers recurse on without end: refused by
     * the wire lint, while the plugin's other tool loads. */
    {.name = PLUGIN_NAME "_cyclic",
     .description = "A tool no provider would take.",
     .input_schema =
         "{\"type\":\"object\",\"$defs\":{\"a\":{\"$ref\":\"#/$defs/a\","
         "\"description\":\"a loop\"}},\"properties\":{\"x\":{\"$ref\":"
         "\"#/$defs/a\"}}}",
     .handler = handler},
#endif
#if defined(VARIANT_DUP_SELF)
    {.name = TOOL_NAME,
     .description = "The same name again.",
     .input_schema = GOOD_SCHEMA,
     .handler = handler},
#endif
};

#if defined(VARIANT_NO_SYMBOL)
const int not_a_plugin = 1;
#else
ATL_PLUGIN_EXPORT const atl_plugin_t atl_plugin = {
#if defined(VARIANT_BAD_MAJOR)
    .abi_major = ATL_PLUGIN_ABI_MAJOR + 1,
#else
    .abi_major = ATL_PLUGIN_ABI_MAJOR,
#endif
    .abi_minor = ATL_PLUGIN_ABI_MINOR,
#if defined(VARIANT_SMALL_STRUCT)
    .struct_size = 16,
#else
    .struct_size = sizeof(atl_plugin_t),
#endif
#if defined(VARIANT_SMALL_TOOL)
    .tool_size = 8,
#else
    .tool_size = sizeof(atl_tool_t),
#endif
    .name = PLUGIN_NAME,
    .version = "0.0.1",
    .description = "a loader test plugin",
    .tools = tools,
    .n_tools = sizeof(tools) / sizeof(tools[0]),
    .init = init,
#if defined(VARIANT_PREVIEW_ALONE)
    .preview = handler,
#elif defined(VARIANT_PREVIEW_BAD_NS)
    .preview = handler,
    .preview_of = "Scene!",
#endif
};
#endif
