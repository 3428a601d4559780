/* The reader of generate_svg's output: what the sandboxed code wrote to
 * its output channel (fd 3) through output_paths() and
 * output_svg_paths(), one JSON object per line:
 *
 *     {"paths": [path objects as draw_paths takes them]}
 *     {"svg_paths": ["M 0 0 L 10 10", ...]}
 *
 * The text comes from code a model wrote, so the reader trusts nothing:
 * any line may be malformed, huge or hostile. */
#ifndef ATL_DRAWING_GENOUT_H
#define ATL_DRAWING_GENOUT_H

#include <stddef.h>

#include <json-c/json.h>

/* The most paths one run may output. */
#define GENOUT_MAX_PATHS 100000

/* Reads len bytes of buf (no NUL needed). Returns 0 with *paths a new
 * array of path objects (svg_paths entries become {"type": "svg", "d":
 * ...}; the caller puts it), or -1 with a malloc()ed message in *err
 * naming the line and what is wrong with it. An output with no lines is
 * not an error: *paths is then empty. */
int genout_read(const char *buf, size_t len, json_object **paths, char **err);

#endif
