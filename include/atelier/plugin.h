/* Atelier tool plugin API, ABI version 1.
 *
 * A plugin is a shared object that exports exactly one data symbol, named
 * "atl_plugin", of type atl_plugin_t. The daemon dlopen()s the object with
 * RTLD_NOW | RTLD_LOCAL and reads that descriptor *before* running any of
 * the plugin's code: it checks the ABI version and the struct sizes, parses
 * every tool's input schema, and only then calls init(). A plugin that fails
 * any check is unloaded with a logged reason and the daemon goes on without
 * it (or exits, when plugins.strict = yes).
 *
 * Versioning. abi_major changes when a struct member moves or changes type;
 * the daemon loads only its own major. abi_minor grows when members are
 * appended; a plugin built against minor N runs on any host with minor >= N
 * because the host reads struct_size / tool_size to know which members the
 * plugin has, and a plugin reads host->struct_size to know which host
 * functions exist. New members are only ever appended.
 *
 * Threads. init(), destroy(), session_open(), session_close() and describe()
 * run on the daemon's event loop thread and must not block. Tool handlers run
 * on a worker thread, several at once (never two for the same session), so a
 * handler may block for as long as its timeout allows, but any state it
 * shares with other handlers needs its own locking.
 *
 * Ownership is stated on every pointer below: "host owns" means the plugin
 * must neither free nor keep it past the call without taking a reference
 * (json_object_get); "takes ownership" means the host frees it, even when
 * the function fails.
 */
#ifndef ATELIER_PLUGIN_H
#define ATELIER_PLUGIN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include <atelier/error.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATL_PLUGIN_ABI_MAJOR 1
#define ATL_PLUGIN_ABI_MINOR 6

/* The name of the one symbol a plugin exports. */
#define ATL_PLUGIN_SYMBOL "atl_plugin"

/* Image ids are the lowercase hex SHA-256 of the image bytes. */
#define ATL_IMAGE_ID_LEN 64

#if defined(__GNUC__)
#define ATL_PLUGIN_EXPORT __attribute__((visibility("default")))
#define ATL_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define ATL_PLUGIN_EXPORT
#define ATL_PRINTF(fmt, args)
#endif

typedef enum {
  ATL_LOG_ERROR = 0,
  ATL_LOG_WARN = 1,
  ATL_LOG_INFO = 2,
  ATL_LOG_DEBUG = 3,
  ATL_LOG_TRACE = 4
} atl_log_level_t;

/* Tool flags. */
enum {
  /* The tool may take seconds (a render): the host gives it its own longer
   * default timeout (tools.long_timeout_ms) and reports progress events. */
  ATL_TOOL_LONG_RUNNING = 1u << 0,
  /* The tool's arguments are secret: logs, traces and events show
   * "(redacted)" in their place. */
  ATL_TOOL_REDACT_ARGS = 1u << 1,
  /* The tool never changes the document; the host skips writing it back. */
  ATL_TOOL_READ_ONLY = 1u << 2,
  /* The handler never blocks and returns in well under a millisecond: it
   * only computes on its arguments and the document (scene edits, echo).
   * The host may then run it on its event-loop thread instead of a worker,
   * which saves two thread hand-offs per call; the tool's timeout cannot
   * interrupt it there, and the host logs a warning when it takes more
   * than 2 ms. Everything in the host table may be used as usual. A host
   * that does not know this flag (ABI 1.0 before it existed) ignores it and
   * runs the handler on a worker, so a plugin may set it unconditionally. */
  ATL_TOOL_FAST = 1u << 3,
  /* ABI 1.3: the tool is for people, not for models: the page and API
   * clients call it (tool.call), and the host never offers it to a model
   * (the drawing plugin's add_human_stroke: a model must not draw as the
   * human). An older host ignores the flag and offers it. */
  ATL_TOOL_NOT_FOR_MODEL = 1u << 4,
  /* ABI 1.5: the call shows the session a picture of what its plugin
   * previews (render_scene, render_optics; atl_plugin_t.preview): while
   * it runs, the plugin's live previews of that session are cancelled and
   * what waits for a start is dropped, so that a preview neither shares
   * the call's resources (the render farm) nor covers its picture. An
   * older host ignores the flag. */
  ATL_TOOL_HOLDS_PREVIEWS = 1u << 5,
  /* ABI 1.6: what a call does, for clients that ask a person before they
   * call (MCP's tool annotations, doc/mcp.md). DESTRUCTIVE: it may delete
   * or overwrite what the session holds (remove_shape, import_scene,
   * update_shape). IDEMPOTENT: a second call with the same arguments
   * changes nothing more (update_shape, set_camera). OPEN_WORLD: it
   * reaches a service outside atelierd (generate_image). A tool with
   * none of them only adds to the session (create_shape) or, with
   * ATL_TOOL_READ_ONLY, only reads it. An older host ignores them. */
  ATL_TOOL_DESTRUCTIVE = 1u << 6,
  ATL_TOOL_IDEMPOTENT = 1u << 7,
  ATL_TOOL_OPEN_WORLD = 1u << 8
};

typedef struct atl_host_s atl_host_t;
typedef struct atl_call_s atl_call_t;
typedef struct atl_tool_s atl_tool_t;
typedef struct atl_plugin_s atl_plugin_t;
typedef struct atl_http_request_s atl_http_request_t;
typedef struct atl_http_response_s atl_http_response_t;
/* A compiled JSON Schema (ABI 1.1); opaque. */
typedef struct atl_schema_s atl_schema_t;
/* The render farm's table (include/atelier/render.h). */
typedef struct atl_render_api_s atl_render_api_t;

/* One tool call, as the handler sees it. The host allocates and owns the
 * struct and everything it points to; all of it is valid until the handler
 * returns, and none of it after.
 */
struct atl_call_s {
  uint32_t struct_size;   /* sizeof(atl_call_t) as the host knows it */
  const char *session_id; /* 32 lowercase hex digits */
  const char *tool;       /* the tool's name */
  /* The arguments, already validated against the tool's input schema, with
   * every schema "default" filled in. Read-only. */
  json_object *args;
  /* The plugin's own namespace of the session document (a JSON object,
   * empty the first time). The handler may change it in place; the host
   * commits the change only if the call succeeds (atl_host_t.call_result),
   * so a failed call leaves the document as it was. */
  json_object *ns;
  /* The whole document, for reading other plugins' namespaces. Read-only:
   * it is a snapshot, changes to it are discarded. */
  json_object *document;
  void *plugin_state; /* what init() stored in *state */
  const atl_host_t *host;
  void *host_private; /* the host's; do not touch */
};

/* A tool handler. It reports its outcome through host->call_result() or
 * host->call_error() (exactly one of them, once) and returns 0. A negative
 * ATL_E* return means the plugin itself failed; the host then answers the
 * call with an error envelope naming the plugin and the code. A handler that
 * returns 0 without reporting an outcome gets the same treatment.
 */
typedef int (*atl_tool_handler_fn)(atl_call_t *call);

struct atl_tool_s {
  /* [a-z][a-z0-9_]{0,63}; unique across all loaded plugins. */
  const char *name;
  /* What the tool does, for the model: units, defaults, ranges. */
  const char *description;
  /* The input JSON Schema, as JSON text (embedded at build time). Its root
   * must be {"type": "object", ...}. Only the keywords listed in
   * doc/plugin-guide.md are allowed; others make the plugin fail to load. */
  const char *input_schema;
  /* Optional JSON Schema of the "result" member of a successful envelope.
   * The host checks results against it when tools.check_results = yes (the
   * test suite turns it on). NULL: no result schema. */
  const char *result_schema;
  uint32_t flags;      /* ATL_TOOL_* */
  uint32_t timeout_ms; /* 0: the host default for the tool's kind */
  atl_tool_handler_fn handler;
};

/* The plugin descriptor: the one exported data symbol. Use ATL_PLUGIN_DEFINE
 * so that the version and size fields are always right. */
struct atl_plugin_s {
  uint16_t abi_major;   /* ATL_PLUGIN_ABI_MAJOR the plugin was built with */
  uint16_t abi_minor;   /* ATL_PLUGIN_ABI_MINOR the plugin was built with */
  uint32_t struct_size; /* sizeof(atl_plugin_t) */
  uint32_t tool_size;   /* sizeof(atl_tool_t) */
  const char *name;     /* [a-z][a-z0-9_]{0,31}; also the namespace key */
  const char *version;
  const char *description;
  const atl_tool_t *tools;
  uint32_t n_tools;

  /* Called once after the descriptor checks pass. host stays valid until
   * destroy() returns; keep the pointer. *state is handed back to every
   * other hook and to handlers (call->plugin_state). Return 0 or a negative
   * ATL_E* code, in which case the plugin is unloaded (destroy is not
   * called). Optional. */
  int (*init)(const atl_host_t *host, void **state);
  /* Called once at shutdown, in reverse load order. Optional. */
  void (*destroy)(void *state);
  /* Called when a session is created or first loaded after a restart, and
   * when it is deleted. Optional. */
  int (*session_open)(void *state, const char *session_id);
  void (*session_close)(void *state, const char *session_id);
  /* Returns this plugin's section of the system prompt's CURRENT SCENE for
   * the namespace ns (host owns ns, read-only), as a malloc()ed string the
   * host frees with free(); NULL for nothing. Runs on the daemon's loop
   * thread before every model call, so it must be quick and never block:
   * a summary of ns, nothing more. Optional. */
  char *(*describe)(void *state, json_object *ns);
  /* ABI 1.4: this plugin's part of one session as the admin socket's
   * "session" method shows it (doc/admin.md): a new JSON object (the host
   * takes ownership) of counts, names and sizes, or NULL for nothing. ns
   * is the session's namespace (host owns, read-only; NULL when the session
   * has none). Runs on the loop thread, like describe(): quick, never
   * blocking. Optional. */
  json_object *(*admin_summary)(void *state, const char *session_id,
                                json_object *ns);
  /* ABI 1.5: a live preview, for the page only. preview_of names the
   * namespace whose changes this plugin shows (the render plugin: "scene";
   * a plugin may name its own). After a tool call that changes that
   * namespace commits, the host calls preview() with a call of its own:
   * call->tool is NULL, call->ns and call->document are a snapshot of that
   * namespace alone (host owns; the handler may read and change them),
   * call->args is {"quality": "fast" | "hq"} (the page's choice), and
   * call->session_id is the session's. It shows pictures with
   * host->preview_put(), any number of times, each replacing the last,
   * and returns 0 (or a negative ATL_E* code, logged). call_result() and
   * the other call_* outcome functions do nothing on such a call.
   *
   * A newer change cancels the preview in flight: call_cancelled() turns 1,
   * render() returns ATL_ECANCELED, preview_put() refuses, and the host
   * calls preview() again with the newer snapshot once this one returns.
   * A tool call of this plugin's flagged ATL_TOOL_HOLDS_PREVIEWS holds
   * its previews of the session the same way: it shows its own picture.
   * Previews run on a thread of the host's own, one at a time across the
   * daemon and possibly while a tool handler of the same session runs:
   * they never hold up a tool call, and they read nothing but their
   * snapshot. Optional (both NULL: no preview). */
  const char *preview_of;
  atl_tool_handler_fn preview;
};

#define ATL_PLUGIN_DEFINE(...)                                                 \
  ATL_PLUGIN_EXPORT const atl_plugin_t atl_plugin = {                          \
      .abi_major = ATL_PLUGIN_ABI_MAJOR,                                       \
      .abi_minor = ATL_PLUGIN_ABI_MINOR,                                       \
      .struct_size = sizeof(atl_plugin_t),                                     \
      .tool_size = sizeof(atl_tool_t),                                         \
      __VA_ARGS__}

/* An HTTP request made through the daemon's libcurl. The host copies
 * everything it needs before http_request() returns. */
struct atl_http_request_s {
  uint32_t struct_size; /* sizeof(atl_http_request_t) */
  const char *method;   /* "GET", "POST", ...; NULL means GET */
  const char *url;      /* http:// or https:// */
  const char *const
      *headers;     /* "Name: value" strings, NULL-terminated; or NULL */
  const void *body; /* may be NULL */
  size_t body_len;
  uint32_t timeout_ms; /* 0: 60 s */
  size_t max_response; /* 0: 32 MiB; a longer response fails with E2BIG */
  /* ABI 1.3: a provider type ("gemini", "anthropic", "openai"). The host
   * adds that provider's API key to the request's headers, in the header
   * the provider expects, when url starts with the provider's base URL
   * (provider_endpoint); the plugin never sees the key. NULL: none. */
  const char *auth;
};

struct atl_http_response_s {
  int status;        /* 0 or a negative ATL_E* code if no response came */
  long http_code;    /* e.g. 200; 0 if none */
  const char *error; /* curl's message when status < 0, else NULL */
  const char *body;  /* NUL-terminated for convenience; body_len excludes it */
  size_t body_len;
  const char *content_type; /* may be NULL */
  /* ABI 1.1: the Retry-After header in seconds, or -1 without one. */
  long retry_after_s;
};

/* Called on the daemon's loop thread when the request finishes. resp and
 * everything in it is the host's and is freed when the callback returns.
 * Must not block. */
typedef void (*atl_http_done_cb)(const atl_http_response_t *resp, void *user);

/* The host's API table, passed to init(). The host owns it. Every function
 * takes the table itself first, which tells the host which plugin calls.
 * Functions marked "any thread" may be called from handlers and from other
 * threads the plugin starts. */
struct atl_host_s {
  uint32_t struct_size; /* sizeof(atl_host_t) as the host knows it */
  uint16_t abi_major;
  uint16_t abi_minor;
  const char *daemon_version;
  void *host_private; /* the host's; do not touch */

  /* Logs one line (logfmt, plugin=<name> added). Any thread. */
  void (*log)(const atl_host_t *h, atl_log_level_t level, const char *fmt, ...)
      ATL_PRINTF(3, 4);

  /* Appends an event to a session's event log; it is committed and
   * delivered to readers in order. Takes ownership of data (may be NULL).
   * Any thread. Returns 0 once queued, or ATL_EINVAL if session_id is not
   * a session id; an event for a session that does not exist is dropped
   * with a warning in the log. */
  int (*emit)(const atl_host_t *h, const char *session_id, const char *type,
              json_object *data);

  /* Stores an image once by content (SHA-256), writing its id (64 hex
   * digits and a NUL) to id_out. data is copied. Any thread. */
  int (*image_put)(const atl_host_t *h, const void *data, size_t len,
                   const char *mime, char id_out[ATL_IMAGE_ID_LEN + 1]);

  /* Starts an HTTP request on the daemon's libcurl multi handle; cb runs
   * on the loop thread when it ends. Any thread. */
  int (*http_request)(const atl_host_t *h, const atl_http_request_t *req,
                      atl_http_done_cb cb, void *user);

  /* The text of an ATL_E* code. Any thread. */
  const char *(*strerror)(int err);

  /* The call's outcome: success with a result (takes ownership; NULL means
   * an empty object). Handler thread. */
  int (*call_result)(atl_call_t *call, json_object *result);
  /* The call's outcome: failure with a message a model can act on (what
   * was wrong, what would be right). Handler thread. */
  int (*call_error)(atl_call_t *call, const char *fmt, ...) ATL_PRINTF(2, 3);
  /* Attaches an image to the call's result (data is copied; name may be
   * NULL). The envelope lists it by id; it is stored once by content. */
  int (*call_image)(atl_call_t *call, const char *mime, const void *data,
                    size_t len, const char *name);
  /* What the call did, for the tool.finished event: target id and the
   * object before and after. Takes ownership of before and after (either
   * may be NULL). */
  int (*call_operation)(atl_call_t *call, const char *target,
                        json_object *before, json_object *after);
  /* 1 once the call has timed out or been cancelled (the host no longer
   * waits for it; the handler should return soon), else 0. */
  int (*call_cancelled)(const atl_call_t *call);
  /* Reports progress (fraction in [0,1], message may be NULL) as a
   * tool.progress event. */
  int (*call_progress)(atl_call_t *call, double fraction, const char *message);

  /* The render farm (include/atelier/render.h); the host owns it. NULL
   * when the daemon runs without a farm (its worker program could not be
   * started, or render.workers = 0). */
  const atl_render_api_t *render;

  /* ---- ABI 1.1: check h->struct_size before using these. ---- */

  /* The daemon's JSON Schema validator, the one that checks tool
   * arguments, for JSON a plugin puts together itself: an update merged
   * into a stored object, an imported file. Its messages read exactly like
   * those the model gets for bad arguments ("/radius: expected a number >
   * 0, got -1"). The keywords are those of doc/plugin-guide.md; unknown
   * keywords are errors.
   *
   * schema_compile: 0 and *out (free it with schema_free), or ATL_ESCHEMA
   * and, if err is not NULL, a malloc()ed message in *err (free() it). A
   * compiled schema is immutable: any thread may use it at any time. */
  int (*schema_compile)(const atl_host_t *h, const char *schema_json,
                        atl_schema_t **out, char **err);
  /* The number of problems in instance (0: valid), all of them. If errors
   * is not NULL and there are problems, *errors is a new JSON array of
   * message strings; the caller releases it with json_object_put(). */
  int (*schema_validate)(const atl_schema_t *s, json_object *instance,
                         json_object **errors);
  /* Fills in the schema's "default" values of absent properties, in
   * place. Use it on a valid instance. */
  int (*schema_apply_defaults)(const atl_schema_t *s, json_object *instance);
  void (*schema_free)(atl_schema_t *s);

  /* ---- ABI 1.3: check h->struct_size before using this. ---- */

  /* An event that belongs to the call: it is committed in the call's own
   * transaction, just before its tool.finished event, and only if the call
   * succeeds, so a reader never sees an event of a change that was not
   * made (emit() commits on its own, at once, whatever the call's fate).
   * The drawing plugin's canvas.strokes is one. type is [a-z][a-z0-9_.]*,
   * at most 63 characters. Takes ownership of data (may be NULL). Handler
   * thread; returns 0, ATL_EINVAL or ATL_ENOMEM. */
  int (*call_emit)(atl_call_t *call, const char *type, json_object *data);

  /* Where requests to a provider of type ("gemini", ...) go: its base URL
   * (no trailing slash) in base_out, from the first [provider.NAME] of that
   * type in the configuration, else the provider's public endpoint. Returns
   * 1 when the host holds a key for it (atl_http_request_t.auth then adds
   * it), 0 when it does not, ATL_EINVAL for an unknown type. Any thread. */
  int (*provider_endpoint)(const atl_host_t *h, const char *type,
                           char *base_out, size_t size);

  /* A stored image by id: 0 and a malloc()ed copy of its bytes in *data
   * (*len bytes; free() it) and its MIME type in mime_out, ATL_ENOENT, or
   * another negative ATL_E* code. It reads the store: handler threads
   * only, never the loop. */
  int (*image_get)(const atl_host_t *h, const char *id, void **data,
                   size_t *len, char *mime_out, size_t mime_size);

  /* ---- ABI 1.5: check h->struct_size before using this. ---- */

  /* From a preview() call only (atl_plugin_t.preview): makes data (len
   * bytes of type mime, "image/png"; copied) the session's newest preview
   * of preview_of, replacing the one before (whose id then answers "not
   * found"), and emits a "preview" event with info's members (takes
   * ownership; may be NULL) plus the view, the image id and the revision
   * (the event seq of the tool call the snapshot follows). data NULL
   * with len 0 clears the picture and emits the event without an image:
   * for a namespace with nothing to show, or one that failed (say why in
   * info's "message"). Previews are kept in memory only, the newest per
   * session and view, for a bounded number of sessions and for
   * preview_ttl. Returns 0, ATL_ECANCELED (a newer change superseded
   * this preview: stop), ATL_EINVAL (not a preview call, or a bad mime),
   * or ATL_ENOMEM. Preview thread. */
  int (*preview_put)(atl_call_t *call, const char *mime, const void *data,
                     size_t len, json_object *info);
};

/* Whether the host table h has member m (a host older than the plugin's
 * header lacks the members added since). */
#define ATL_HOST_HAS(h, m)                                                     \
  ((h)->struct_size >= offsetof(atl_host_t, m) + sizeof((h)->m))

#ifdef __cplusplus
}
#endif

#endif /* ATELIER_PLUGIN_H */
