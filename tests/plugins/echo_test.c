/* The echo_test plugin: the daemon's tests' double, a real plugin loaded
 * the real way from the tests' own plugin directory (never from the
 * build's plugins, which a stack loads: a model must not be offered
 * these). Its tools:
 *   echo_image  {"width"?, "height"?} -> an image (a PNG made with libpng)
 *   echo_sleep  {"ms": int} -> waits, honouring cancellation (timeouts)
 *   echo_fail   {"message"?: string, "internal"?: bool} -> an error
 *   echo_store  {"key": string, "value": any} -> writes the namespace,
 *               reporting before/after (document changes and events)
 *   echo_secret {"api_key": string} -> redacted arguments
 *   echo_vault  {"label": string, "api_key": string} -> redacted arguments
 *               that the tool keeps: the namespace's "vault" object holds
 *               the label, and is handed back by reference as the
 *               operation's after, with the label as its target
 * echo_fail, echo_store and echo_secret are flagged ATL_TOOL_FAST (they
 * run on the daemon's loop); echo_image and echo_sleep run on its workers.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "png_encode.h"

#include <atelier/plugin.h>

static const atl_host_t *host;

static int echo_test_init(const atl_host_t *h, void **state) {
  host = h;
  *state = NULL;
  return 0;
}

/* A gradient, so that two sizes give two different images. */
static int make_png(int w, int h, void **png, size_t *len) {
  uint8_t *rgb = malloc((size_t)w * (size_t)h * 3);
  if (rgb == NULL)
    return ATL_ENOMEM;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      uint8_t *px = rgb + ((size_t)y * (size_t)w + (size_t)x) * 3;
      px[0] = (uint8_t)(255 * x / (w > 1 ? w - 1 : 1));
      px[1] = (uint8_t)(255 * y / (h > 1 ? h - 1 : 1));
      px[2] = 128;
    }
  int rc = atl_png_encode(rgb, w, h, -1, png, len);
  free(rgb);
  return rc == 0 ? 0 : ATL_ENOMEM;
}

static int echo_image(atl_call_t *call) {
  int w = json_object_get_int(json_object_object_get(call->args, "width"));
  int h = json_object_get_int(json_object_object_get(call->args, "height"));
  void *png = NULL;
  size_t len = 0;
  int rc = make_png(w, h, &png, &len);
  if (rc != 0)
    return rc;
  rc = call->host->call_image(call, "image/png", png, len, "echo.png");
  free(png);
  if (rc != 0)
    return rc;
  json_object *r = json_object_new_object();
  json_object_object_add(r, "width", json_object_new_int(w));
  json_object_object_add(r, "height", json_object_new_int(h));
  return call->host->call_result(call, r);
}

static int echo_sleep(atl_call_t *call) {
  int ms = json_object_get_int(json_object_object_get(call->args, "ms"));
  /* Sleep in small steps so that a cancelled call ends promptly, as a
   * well-behaved long handler should. */
  for (int t = 0; t < ms; t += 10) {
    if (call->host->call_cancelled(call))
      return call->host->call_error(call, "cancelled after %d ms", t);
    struct timespec ts = {0, 10 * 1000000L};
    nanosleep(&ts, NULL);
  }
  json_object *r = json_object_new_object();
  json_object_object_add(r, "slept_ms", json_object_new_int(ms));
  return call->host->call_result(call, r);
}

static int echo_fail(atl_call_t *call) {
  json_object *internal = json_object_object_get(call->args, "internal");
  if (json_object_get_boolean(internal))
    return ATL_EIO; /* a plugin failure, not a user error */
  const char *msg =
      json_object_get_string(json_object_object_get(call->args, "message"));
  return call->host->call_error(call, "%s", msg);
}

static int echo_store(atl_call_t *call) {
  const char *key =
      json_object_get_string(json_object_object_get(call->args, "key"));
  json_object *value = json_object_object_get(call->args, "value");
  json_object *before = NULL, *old = NULL;
  if (json_object_object_get_ex(call->ns, key, &old))
    json_object_deep_copy(old, &before, NULL);
  json_object *after = NULL;
  json_object_deep_copy(value, &after, NULL);
  json_object_object_add(call->ns, key, json_object_get(value));
  call->host->call_operation(call, key, before, after);
  json_object *r = json_object_new_object();
  json_object_object_add(r, "key", json_object_new_string(key));
  json_object_object_add(r, "value", json_object_get(value));
  json_object_object_add(
      r, "keys", json_object_new_int(json_object_object_length(call->ns)));
  return call->host->call_result(call, r);
}

static int echo_secret(atl_call_t *call) {
  const char *k =
      json_object_get_string(json_object_object_get(call->args, "api_key"));
  json_object *r = json_object_new_object();
  json_object_object_add(r, "length", json_object_new_int((int)strlen(k)));
  return call->host->call_result(call, r);
}

/* Keeps what a secret call was given, the way a stateful tool keeps its
 * objects: the daemon must send the event and the log no value of it, and
 * must not change what the tool kept while scrubbing what leaves. */
static int echo_vault(atl_call_t *call) {
  const char *label =
      json_object_get_string(json_object_object_get(call->args, "label"));
  const char *k =
      json_object_get_string(json_object_object_get(call->args, "api_key"));
  json_object *v = json_object_new_object();
  json_object_object_add(v, "label", json_object_new_string(label));
  json_object_object_add(v, "key_length", json_object_new_int((int)strlen(k)));
  json_object_object_add(call->ns, "vault", v);
  call->host->call_operation(call, label, NULL, json_object_get(v));
  json_object *r = json_object_new_object();
  json_object_object_add(r, "label", json_object_new_string(label));
  return call->host->call_result(call, r);
}

static const atl_tool_t echo_test_tools[] = {
    {.name = "echo_image",
     .description = "Returns a small PNG gradient of the given size in "
                    "pixels (default 16 x 16, at most 1024 x 1024).",
     .input_schema =
         "{\"type\":\"object\",\"properties\":{\"width\":{\"type\":"
         "\"integer\",\"minimum\":1,\"maximum\":1024,\"default\":16},"
         "\"height\":{\"type\":\"integer\",\"minimum\":1,"
         "\"maximum\":1024,\"default\":16}},"
         "\"additionalProperties\":false}",
     .flags = ATL_TOOL_READ_ONLY,
     .handler = echo_image},
    {.name = "echo_sleep",
     .description = "Waits for ms milliseconds (0 to 600000) and returns; "
                    "stops early when cancelled. Times out after 2 s.",
     .input_schema = "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":"
                     "\"integer\",\"minimum\":0,\"maximum\":600000}},"
                     "\"required\":[\"ms\"],\"additionalProperties\":false}",
     .flags = ATL_TOOL_READ_ONLY,
     .timeout_ms = 2000,
     .handler = echo_sleep},
    {.name = "echo_fail",
     .description = "Fails: with the given message as a tool error, or as an "
                    "internal plugin failure when internal is true.",
     .input_schema = "{\"type\":\"object\",\"properties\":{\"message\":{"
                     "\"type\":\"string\",\"default\":\"failed on purpose\"},"
                     "\"internal\":{\"type\":\"boolean\",\"default\":false}},"
                     "\"additionalProperties\":false}",
     .flags = ATL_TOOL_READ_ONLY | ATL_TOOL_FAST,
     .handler = echo_fail},
    {.name = "echo_store",
     .description = "Stores value under key in the session document's echo "
                    "namespace and reports the value before and after.",
     .input_schema =
         "{\"type\":\"object\",\"properties\":{\"key\":{\"type\":"
         "\"string\",\"minLength\":1,\"maxLength\":64},\"value\":{}},"
         "\"required\":[\"key\",\"value\"],"
         "\"additionalProperties\":false}",
     .flags = ATL_TOOL_FAST,
     .handler = echo_store},
    {.name = "echo_secret",
     .description = "Takes an API key and returns its length; its arguments "
                    "never appear in logs or events.",
     .input_schema = "{\"type\":\"object\",\"properties\":{\"api_key\":{"
                     "\"type\":\"string\"}},\"required\":[\"api_key\"],"
                     "\"additionalProperties\":false}",
     .flags = ATL_TOOL_READ_ONLY | ATL_TOOL_REDACT_ARGS | ATL_TOOL_FAST,
     .handler = echo_secret},
    {.name = "echo_vault",
     .description = "Keeps a label and the length of an API key in the "
                    "session document; its arguments never appear in logs "
                    "or events.",
     .input_schema = "{\"type\":\"object\",\"properties\":{\"label\":{"
                     "\"type\":\"string\"},\"api_key\":{\"type\":"
                     "\"string\"}},\"required\":[\"label\",\"api_key\"],"
                     "\"additionalProperties\":false}",
     .flags = ATL_TOOL_REDACT_ARGS | ATL_TOOL_FAST,
     .handler = echo_vault},
};

/* The admin socket's view of a session's echo_test namespace (plugin ABI
 * 1.4): how many keys it holds. */
static json_object *echo_test_summary(void *state, const char *session_id,
                                      json_object *ns) {
  (void)state;
  (void)session_id;
  json_object *o = json_object_new_object();
  json_object_object_add(
      o, "keys", json_object_new_int(ns ? json_object_object_length(ns) : 0));
  return o;
}

ATL_PLUGIN_DEFINE(.name = "echo_test", .version = "1.0.0",
                  .description = "The tests' tools: images, timeouts, "
                                 "errors, document changes, secrets.",
                  .tools = echo_test_tools,
                  .n_tools = sizeof(echo_test_tools) /
                             sizeof(echo_test_tools[0]),
                  .init = echo_test_init, .admin_summary = echo_test_summary);
