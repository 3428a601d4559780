/* The copies of a secret call's arguments that go everywhere but to the
 * handler (daemon/redact.c). */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"

static json_object *parse(const char *text) {
  json_object *o = json_tokener_parse(text);
  cr_assert_not_null(o, "%s", text);
  return o;
}

static const char *plain(json_object *o) {
  return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
}

Test(redact, args_keep_their_shape_not_their_values) {
  json_object *args = parse("{\"api_key\": \"sk-1234\", \"n\": 5, "
                            "\"nested\": {\"user\": \"ann\", \"list\": [1]}}");
  json_object *r = atl_redact_args(args);
  cr_assert_str_eq(plain(r), "{\"api_key\":\"(redacted)\",\"n\":\"(redacted)\","
                             "\"nested\":{\"user\":\"(redacted)\",\"list\":"
                             "\"(redacted)\"}}");
  json_object_put(r);
  /* Not an object: an empty one, which every provider takes as input. */
  r = atl_redact_args(NULL);
  cr_assert_str_eq(plain(r), "{}");
  json_object_put(r);
  json_object_put(args);
}

Test(redact, text_loses_every_value_raw_or_escaped) {
  json_object *args =
      parse("{\"k\": \"sk-\\\"quoted\\\"-9\", \"pin\": 123456, "
            "\"short\": \"abc\", \"deep\": [{\"x\": \"hunter22\"}]}");
  char *t = atl_redact_text("raw sk-\"quoted\"-9, escaped sk-\\\"quoted\\\"-9, "
                            "pin 123456, short abc, deep hunter22hunter22",
                            args);
  cr_assert_str_eq(t, "raw (redacted), escaped (redacted), pin (redacted), "
                      "short abc, deep (redacted)(redacted)");
  free(t);
  cr_assert_null(atl_redact_text(NULL, args));
  json_object_put(args);
}

Test(redact, json_strings_are_scrubbed_in_place) {
  json_object *args = parse("{\"api_key\": \"sk-LEAK-1\"}");
  json_object *res =
      parse("{\"echo\": \"key sk-LEAK-1 used\", \"n\": 3, "
            "\"list\": [\"sk-LEAK-1\", {\"a\": \"sk-LEAK-1\"}]}");
  atl_redact_json(res, args);
  cr_assert_str_eq(plain(res), "{\"echo\":\"key (redacted) used\",\"n\":3,"
                               "\"list\":[\"(redacted)\",{\"a\":\"(redacted)\"}"
                               "]}");
  atl_redact_json(NULL, args);
  json_object_put(res);
  json_object_put(args);
}
