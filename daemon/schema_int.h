/* Internals shared by the parts of the JSON Schema validator:
 * schema_compile.c (a schema into a tree of nodes), schema.c (validating
 * and defaults, walking the nodes) and schema_msg.c (the growable string
 * buffer, the phrases error messages are made of, and JSON numbers).
 *
 * Nothing here is part of the module's interface (that is schema.h) and
 * only the schema files include it; the functions carry a schema_ prefix
 * so that they cannot collide with other modules linked into the same
 * library.
 */
#ifndef ATL_SCHEMA_INT_H
#define ATL_SCHEMA_INT_H

#include <stdarg.h>
#include <stddef.h>

#include <json-c/json.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* A growable NUL-terminated string. An allocation failure is remembered in
 * oom rather than reported by every call, so that a message can be built
 * with a run of appends and checked once at the end. */
typedef struct {
  char *buf;
  size_t len;
  size_t cap;
  int oom;
} schema_sb_t;

void schema_sb_init(schema_sb_t *sb);
void schema_sb_free(schema_sb_t *sb);
void schema_sb_putn(schema_sb_t *sb, const char *s, size_t n);
void schema_sb_puts(schema_sb_t *sb, const char *s);
void schema_sb_putc(schema_sb_t *sb, char c);
void schema_sb_printf(schema_sb_t *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Cuts the string back to len bytes (to pop a pointer token). */
void schema_sb_truncate(schema_sb_t *sb, size_t len);
/* The string ("" if nothing was written), owned by the buffer. */
const char *schema_sb_str(const schema_sb_t *sb);
/* Hands the string over to the caller (NULL after an allocation failure)
 * and leaves the buffer empty. */
char *schema_sb_take(schema_sb_t *sb);

/* Appends "/" and a JSON pointer reference token, with '~' and '/'
 * escaped as ~0 and ~1 (RFC 6901). */
void schema_sb_put_pointer_token(schema_sb_t *sb, const char *token);
void schema_sb_put_pointer_index(schema_sb_t *sb, size_t index);

/* "a string", "an array", ...: the kind of a JSON value, with an article,
 * for "got ..." in compile errors. */
const char *schema_kind_phrase(json_object *v);

/* A number as short as it can be written without changing its value. */
void schema_sb_put_number(schema_sb_t *sb, json_object *v);

/* A value as given by the caller, for "got ...": strings quoted and cut
 * after about 60 characters, numbers, booleans and null as JSON, objects
 * and arrays described ("an object", "an array of 3 items"). */
void schema_sb_describe(schema_sb_t *sb, json_object *v);

/* A value the schema expects (an enum member, a const) as compact JSON,
 * cut after about 60 characters. */
void schema_sb_put_expected(schema_sb_t *sb, json_object *v);

/* The number of Unicode code points in a UTF-8 string. */
size_t schema_utf8_length(const char *s, size_t n);

/* The optimal-string-alignment edit distance between a and b (insertions,
 * deletions, substitutions and swaps of neighbours each cost 1), or a
 * value above max when it is larger than max, so that long unrelated names
 * cost little to reject. */
size_t schema_edit_distance(const char *a, const char *b, size_t max);

/* "1 item" / "3 items". */
void schema_sb_put_count(schema_sb_t *sb, long long n, const char *singular,
                         const char *plural);

/* ---- The compiled schema (schema_compile.c builds it, schema.c walks it) */

/* How deep validation may recurse (subschemas and "$ref"s). A "$ref"
 * cycle that does not consume the instance would otherwise recurse
 * forever; no reasonable tool schema comes close. */
#define SCHEMA_MAX_DEPTH 64

enum {
  T_NULL = 1u << 0,
  T_BOOLEAN = 1u << 1,
  T_OBJECT = 1u << 2,
  T_ARRAY = 1u << 3,
  T_NUMBER = 1u << 4,
  T_STRING = 1u << 5,
  T_INTEGER = 1u << 6
};

typedef struct {
  const char *name;
  unsigned bit;
  const char *phrase; /* "an integer", for messages */
} schema_type_t;

#define SCHEMA_NTYPES 7
extern const schema_type_t schema_types[SCHEMA_NTYPES];

/* Bounds of a number, indexes into node.bound. */
enum { B_MIN, B_EMIN, B_MAX, B_EMAX, NBOUNDS };

typedef struct node node_t;

typedef struct {
  const char *name; /* borrowed from the schema document */
  node_t *schema;
} prop_t;

typedef struct {
  node_t **v;
  size_t n;
} node_list_t;

struct node {
  json_object *json;
  int boolean; /* -1: an object schema; 0 or 1: the schema false or true */
  unsigned types;
  /* The type bits in the order the schema lists them, for messages. */
  unsigned type_order[SCHEMA_NTYPES];
  size_t ntypes;

  prop_t *props;
  size_t nprops;
  const char **required;
  size_t nrequired;
  node_t *additional;
  long long min_props, max_props; /* -1: absent */

  node_list_t prefix;
  node_t *items;
  long long min_items, max_items;
  int unique;

  json_object *enum_values; /* an array, or NULL */
  json_object *const_value;
  int has_const;

  json_object *bound[NBOUNDS]; /* numbers, or NULL */
  json_object *multiple_of;

  long long min_len, max_len;
  pcre2_code *pattern;
  const char *pattern_src;

  node_list_t all_of, any_of, one_of;
  node_t *not_, *if_, *then_, *else_;

  node_t *ref;
  const char *ref_text;
  json_object *default_value;
  int has_default;
};

struct atl_schema_s {
  json_object *doc;
  node_t *root;
  node_t **nodes; /* every node, for freeing */
  size_t nnodes, cap_nodes;
};

/* ---- Numbers --------------------------------------------------------- */

int schema_is_number(json_object *v);
/* A number with no fractional part (1 and 1.0, not 1.5). */
int schema_is_integer(json_object *v);
/* A JSON number as a long double, which holds every int64, uint64 and
 * double exactly on the platforms we build for. */
long double schema_num_value(json_object *v);
/* Compares two numbers: -1, 0 or 1, and 2 if either is NaN. */
int schema_num_cmp(json_object *a, json_object *b);

#endif
