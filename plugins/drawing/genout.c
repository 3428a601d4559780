/* generate_svg's output reader (genout.h). */
#include "genout.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char **err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int fail(char **err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(err, fmt, ap) < 0)
    *err = NULL;
  va_end(ap);
  return -1;
}

int genout_read(const char *buf, size_t len, json_object **paths, char **err) {
  *paths = NULL;
  *err = NULL;
  json_object *out = json_object_new_array();
  json_tokener *tok = json_tokener_new_ex(64);
  if (out == NULL || tok == NULL) {
    json_object_put(out);
    if (tok)
      json_tokener_free(tok);
    return fail(err, "out of memory");
  }
  size_t line = 0, i = 0;
  int rc = 0;
  while (i < len && rc == 0) {
    const char *nl = memchr(buf + i, '\n', len - i);
    size_t end = nl ? (size_t)(nl - buf) : len;
    line++;
    size_t a = i;
    while (a < end && (buf[a] == ' ' || buf[a] == '\t' || buf[a] == '\r'))
      a++;
    if (a == end) {
      i = end + 1;
      continue;
    }
    json_tokener_reset(tok);
    json_object *o = json_tokener_parse_ex(tok, buf + a, (int)(end - a));
    enum json_tokener_error je = json_tokener_get_error(tok);
    if (o == NULL || je != json_tokener_success ||
        json_tokener_get_parse_end(tok) < end - a) {
      json_object_put(o);
      rc = fail(err,
                "output line %zu is not one JSON object (%s); write output "
                "only through output_paths() or output_svg_paths()",
                line,
                je == json_tokener_success ? "text after it"
                                           : json_tokener_error_desc(je));
      break;
    }
    json_object *p = NULL, *s = NULL;
    int has_p = json_object_is_type(o, json_type_object) &&
                json_object_object_get_ex(o, "paths", &p);
    int has_s = json_object_is_type(o, json_type_object) &&
                json_object_object_get_ex(o, "svg_paths", &s);
    if (!has_p && !has_s) {
      rc = fail(err, "output line %zu has neither paths nor svg_paths", line);
    } else if ((has_p && !json_object_is_type(p, json_type_array)) ||
               (has_s && !json_object_is_type(s, json_type_array))) {
      rc = fail(err,
                "output line %zu: output_paths() takes a list of path "
                "dicts and output_svg_paths() a list of d strings",
                line);
    } else {
      size_t np = has_p ? json_object_array_length(p) : 0;
      size_t ns = has_s ? json_object_array_length(s) : 0;
      if (json_object_array_length(out) + np + ns > GENOUT_MAX_PATHS)
        rc = fail(err,
                  "the code output more than %d paths; output fewer, "
                  "longer paths (a polyline or an svg path can hold "
                  "many segments)",
                  GENOUT_MAX_PATHS);
      for (size_t k = 0; k < np && rc == 0; k++)
        json_object_array_add(out,
                              json_object_get(json_object_array_get_idx(p, k)));
      for (size_t k = 0; k < ns && rc == 0; k++) {
        json_object *d = json_object_array_get_idx(s, k);
        json_object *path = json_object_new_object();
        json_object_object_add(path, "type", json_object_new_string("svg"));
        /* A d that is not a string is kept as it is, so that draw_paths's
         * checks refuse it with their message. */
        json_object_object_add(path, "d", json_object_get(d));
        json_object_array_add(out, path);
      }
    }
    json_object_put(o);
    i = end + 1;
  }
  json_tokener_free(tok);
  if (rc != 0) {
    json_object_put(out);
    return -1;
  }
  *paths = out;
  return 0;
}
