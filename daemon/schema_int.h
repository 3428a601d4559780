/* Internals shared by the two halves of the JSON Schema validator:
 * schema.c (compiling and validating) and schema_msg.c (the growable
 * string buffer and the phrases that error messages are made of).
 *
 * Nothing here is part of the module's interface (that is schema.h); the
 * names carry a schema_ prefix only so that they cannot collide with other
 * modules linked into the same library.
 */
#ifndef ATL_SCHEMA_INT_H
#define ATL_SCHEMA_INT_H

#include <stdarg.h>
#include <stddef.h>

#include <json-c/json.h>

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

#endif
