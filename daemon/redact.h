/* The arguments of a tool flagged ATL_TOOL_REDACT_ARGS are secret: they go
 * to the tool's handler and nowhere else. These helpers make the copies
 * that go everywhere else (events, the history, the model's next request,
 * logs, error messages, results): the arguments' shape with every value
 * replaced, and any text or JSON with the arguments' values scrubbed out.
 */
#ifndef ATL_REDACT_H
#define ATL_REDACT_H

#include <json-c/json.h>

#define ATL_REDACTED "(redacted)"

/* A new object (the caller owns it) with the keys of args, nested objects
 * keeping theirs, and every other value the string "(redacted)": the
 * history keeps a call the model can read back (providers want an object
 * there) without the values. args NULL or not an object gives {}. */
json_object *atl_redact_args(json_object *args);

/* A copy of text (malloc'd; the caller frees it) in which every value of
 * args is replaced by "(redacted)": each string of 4 bytes or more found
 * anywhere in args, as written and as JSON escapes it, and each number's
 * text of 4 characters or more. Shorter values are kept, so that ordinary
 * words are not scrubbed (as atl_log_add_secret does). NULL when text is
 * NULL or memory runs out. */
char *atl_redact_text(const char *text, json_object *args);

/* Scrubs the values of args, as atl_redact_text does, from every string
 * in obj (in place; keys are kept). obj may be NULL. */
void atl_redact_json(json_object *obj, json_object *args);

#endif
