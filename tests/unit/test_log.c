#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

/* A logfmt pair as read back by parse_line(). */
typedef struct {
  char key[64];
  char value[20000];
} pair_t;

/* A strict logfmt reader, written independently of log.c so that the
 * tests check the format rather than the implementation: pairs separated
 * by single spaces, bare or quoted values, \" \\ \n \r \t \uXXXX escapes.
 * Returns the number of pairs, or -1 if the line is malformed. */
static int parse_line(const char *s, pair_t *out, int max) {
  int n = 0;
  while (*s) {
    if (n >= max)
      return -1;
    pair_t *p = &out[n];
    size_t k = 0;
    while (*s && *s != '=' && *s != ' ' && *s != '"') {
      if (k + 1 >= sizeof(p->key))
        return -1;
      p->key[k++] = *s++;
    }
    p->key[k] = '\0';
    if (k == 0 || *s != '=')
      return -1;
    s++;
    size_t v = 0;
    if (*s == '"') {
      s++;
      while (*s && *s != '"') {
        char c = *s++;
        if (c == '\\') {
          c = *s++;
          switch (c) {
          case 'n':
            c = '\n';
            break;
          case 'r':
            c = '\r';
            break;
          case 't':
            c = '\t';
            break;
          case '"':
          case '\\':
            break;
          case 'u': {
            unsigned code;
            if (sscanf(s, "%4x", &code) != 1)
              return -1;
            c = (char)code;
            s += 4;
            break;
          }
          default:
            return -1;
          }
        } else if ((unsigned char)c < 0x20) {
          return -1;
        }
        if (v + 1 >= sizeof(p->value))
          return -1;
        p->value[v++] = c;
      }
      if (*s != '"')
        return -1;
      s++;
    } else {
      while (*s && *s != ' ') {
        if (*s == '"' || *s == '=' || (unsigned char)*s < 0x20)
          return -1;
        if (v + 1 >= sizeof(p->value))
          return -1;
        p->value[v++] = *s++;
      }
      if (v == 0)
        return -1;
    }
    p->value[v] = '\0';
    n++;
    if (*s == ' ') {
      s++;
      if (*s == '\0')
        return -1;
    } else if (*s != '\0') {
      return -1;
    }
  }
  return n;
}

static pair_t pairs[16];

/* Skips "ts=... " and returns the rest, after checking the timestamp. */
static const char *after_ts(const char *line) {
  cr_assert(strncmp(line, "ts=", 3) == 0, "line: %s", line);
  const char *ts = line + 3;
  cr_assert_eq(strlen(ts) > 25, 1);
  cr_assert(ts[4] == '-' && ts[7] == '-' && ts[10] == 'T' && ts[13] == ':' &&
                ts[19] == '.' && ts[23] == 'Z' && ts[24] == ' ',
            "timestamp: %s", line);
  return ts + 25;
}

Test(log, format_fields_in_order_msg_last) {
  char buf[1024];
  size_t n = atl_log_format(buf, sizeof(buf), ATL_LOG_INFO, "tool call",
                            "session", "3f9a", "tool", "create_shape", "ms",
                            "3", (const char *)NULL);
  cr_assert_eq(n, strlen(buf));
  cr_assert_str_eq(after_ts(buf),
                   "level=info session=3f9a tool=create_shape ms=3 "
                   "msg=\"tool call\"");
  cr_assert_eq(parse_line(buf, pairs, 16), 6);
  cr_assert_str_eq(pairs[0].key, "ts");
  cr_assert_str_eq(pairs[5].key, "msg");
  cr_assert_str_eq(pairs[5].value, "tool call");
}

Test(log, bare_message_and_null_values_skipped) {
  char buf[256];
  atl_log_format(buf, sizeof(buf), ATL_LOG_WARN, "ready", "a",
                 (const char *)NULL, "b", "2", (const char *)NULL);
  cr_assert_str_eq(after_ts(buf), "level=warn b=2 msg=ready");
}

Test(log, quoting_and_escaping) {
  char buf[1024];
  atl_log_format(buf, sizeof(buf), ATL_LOG_ERROR, "line1\nline2", "empty", "",
                 "space", "a b", "quote", "say \"hi\"", "eq", "a=b", "bs",
                 "c:\\dir", "ctl", "x\x01y\tz", (const char *)NULL);
  cr_assert_str_eq(after_ts(buf),
                   "level=error empty=\"\" space=\"a b\" "
                   "quote=\"say \\\"hi\\\"\" eq=\"a=b\" bs=c:\\dir "
                   "ctl=\"x\\u0001y\\tz\" msg=\"line1\\nline2\"");
  cr_assert_eq(parse_line(buf, pairs, 16), 9);
  cr_assert_str_eq(pairs[2].value, "");
  cr_assert_str_eq(pairs[4].value, "say \"hi\"");
  cr_assert_str_eq(pairs[6].value, "c:\\dir");
  cr_assert_str_eq(pairs[7].value, "x\x01y\tz");
  cr_assert_str_eq(pairs[8].value, "line1\nline2");
}

Test(log, backslash_in_quoted_value_is_escaped) {
  char buf[256];
  atl_log_format(buf, sizeof(buf), ATL_LOG_INFO, "m", "path", "C:\\a b",
                 (const char *)NULL);
  cr_assert_str_eq(after_ts(buf), "level=info path=\"C:\\\\a b\" msg=m");
}

Test(log, bad_keys_are_sanitized) {
  char buf[256];
  atl_log_format(buf, sizeof(buf), ATL_LOG_INFO, "m", "two words", "1", "a=b",
                 "2", "q\"", "3", "", "4", (const char *)NULL);
  cr_assert_str_eq(after_ts(buf),
                   "level=info two_words=1 a_b=2 q_=3 _=4 msg=m");
  cr_assert_eq(parse_line(buf, pairs, 16), 7);
}

Test(log, format_truncates_to_buffer) {
  char buf[16];
  size_t n = atl_log_format(buf, sizeof(buf), ATL_LOG_INFO, "hello",
                            (const char *)NULL);
  cr_assert_eq(n, 15);
  cr_assert_eq(strlen(buf), 15);
}

Test(log, level_names) {
  cr_assert_str_eq(atl_log_level_name(ATL_LOG_ERROR), "error");
  cr_assert_str_eq(atl_log_level_name(ATL_LOG_WARN), "warn");
  cr_assert_str_eq(atl_log_level_name(ATL_LOG_INFO), "info");
  cr_assert_str_eq(atl_log_level_name(ATL_LOG_DEBUG), "debug");
  cr_assert_str_eq(atl_log_level_name(ATL_LOG_TRACE), "trace");
  cr_assert_eq(atl_log_level_parse("trace"), ATL_LOG_TRACE);
  cr_assert_eq(atl_log_level_parse("WARN"), ATL_LOG_WARN);
  cr_assert_eq(atl_log_level_parse("loud"), -1);
  cr_assert_eq(atl_log_level_parse(""), -1);
  cr_assert_eq(atl_log_level_parse(NULL), -1);
}

Test(log, secret_keys_are_redacted) {
  char buf[1024];
  atl_log_format(buf, sizeof(buf), ATL_LOG_INFO, "request", "api_key",
                 "sk-live-1234", "Authorization", "Bearer abc.def", "PassWord",
                 "hunter2", "x-api-key", "k1", "X-Goog-Api-Key", "k2", "token",
                 "t", "secret", "s", "apikey", "k3", "user", "ann",
                 (const char *)NULL);
  cr_assert_str_eq(after_ts(buf),
                   "level=info api_key=(redacted) Authorization=(redacted) "
                   "PassWord=(redacted) x-api-key=(redacted) "
                   "X-Goog-Api-Key=(redacted) token=(redacted) "
                   "secret=(redacted) apikey=(redacted) user=ann "
                   "msg=request");
}

Test(log, registered_secrets_are_scrubbed_everywhere) {
  char buf[1024];
  atl_log_add_secret("sk-abcdef123456");
  atl_log_add_secret("abc"); /* too short: ignored */
  atl_log_add_secret("sk-abcdef");
  atl_log_format(buf, sizeof(buf), ATL_LOG_INFO,
                 "calling with key sk-abcdef123456 now", "url",
                 "https://x/?k=sk-abcdef123456&abc=1", "other", "sk-abcdefXY",
                 (const char *)NULL);
  cr_assert_null(strstr(buf, "sk-abcdef"), "leaked: %s", buf);
  cr_assert_str_eq(after_ts(buf),
                   "level=info url=\"https://x/?k=(redacted)&abc=1\" "
                   "other=(redacted)XY "
                   "msg=\"calling with key (redacted) now\"");
}

Test(log, secret_containing_quote_is_scrubbed_before_escaping) {
  char buf[512];
  atl_log_add_secret("pa\"ss word");
  atl_log_format(buf, sizeof(buf), ATL_LOG_INFO, "x pa\"ss word y",
                 (const char *)NULL);
  cr_assert_str_eq(after_ts(buf), "level=info msg=\"x (redacted) y\"");
}

/* Values are copied a run at a time: a secret inside a long run, at its
 * start and at its end is found all the same, and what is around it is
 * kept whole. */
Test(log, secrets_inside_long_runs_are_scrubbed) {
  char buf[8192], v[3001];
  atl_log_add_secret("Zq-secret-0123456789");
  memset(v, 'a', 3000);
  v[3000] = '\0';
  v[500] = ' '; /* quoted */
  memcpy(v, "Zq-secret-0123456789", 20);
  memcpy(v + 1000, "Zq-secret-0123456789", 20);
  memcpy(v + 2980, "Zq-secret-0123456789", 20);
  v[1500] = '"';
  atl_log_format(buf, sizeof(buf), ATL_LOG_INFO, "m", "v", v,
                 (const char *)NULL);
  cr_assert_null(strstr(buf, "Zq-secret"), "leaked: %.200s", buf);
  cr_assert_eq(parse_line(buf, pairs, 16), 4);
  const char *got = pairs[2].value;
  cr_assert_eq(strncmp(got, "(redacted)", 10), 0);
  cr_assert_eq(strlen(got), 3000 - 3 * 20 + 3 * strlen("(redacted)"));
  cr_assert_str_eq(got + strlen(got) - 10, "(redacted)");
  /* Everything else is the value as it was. */
  cr_assert_eq(strspn(got + 10, "a"), 480);
  cr_assert_eq(got[490], ' ');
}

/* Wherever the line's limit falls (in a bare value, on the space, in a
 * key, on a value's opening quote, inside it), the cut line has as many
 * quotes as it opens and ends with the mark. */
Test(log, a_cut_anywhere_leaves_quotes_balanced) {
  static char buf[20000], big[16500];
  int truncated = 0;
  for (size_t len = 16250; len < 16400; len++) {
    memset(big, 'x', len);
    big[len] = '\0';
    atl_log_format(buf, sizeof(buf), ATL_LOG_INFO, "m", "a", big, "key",
                   "two words", (const char *)NULL);
    size_t quotes = 0;
    for (const char *p = buf; *p; p++) {
      if (*p == '\\' && p[1] != '\0')
        p++;
      else if (*p == '"')
        quotes++;
    }
    cr_assert_eq(quotes % 2, 0, "len %zu: unbalanced: ...%s", len,
                 buf + strlen(buf) - 40);
    const char *mark = strstr(buf, "\xe2\x80\xa6(truncated)");
    if (mark == NULL) {
      /* Short enough to fit whole. */
      cr_assert_str_eq(buf + strlen(buf) - 6, " msg=m", "len %zu", len);
      continue;
    }
    truncated++;
    cr_assert(strcmp(mark, "\xe2\x80\xa6(truncated)") == 0 ||
                  strcmp(mark, "\xe2\x80\xa6(truncated)\"") == 0,
              "len %zu: ends %s", len, mark);
  }
  /* The window spans lines that fit and lines cut at each place. */
  cr_assert_gt(truncated, 60);
  cr_assert_lt(truncated, 150);
}

/* A fresh directory for a test's files. */
static char *tmpdir(void) {
  char *d = strdup("/tmp/atl_test_log.XXXXXX");
  cr_assert_not_null(mkdtemp(d));
  return d;
}

static char *read_all(const char *path) {
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *s = malloc((size_t)n + 1);
  cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = '\0';
  fclose(f);
  return s;
}

static int count_lines(const char *s) {
  int n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

Test(log, file_output_and_level_filter) {
  char *d = tmpdir(), path[512];
  snprintf(path, sizeof(path), "%s/atelierd.log", d);
  cr_assert_eq(atl_log_open(ATL_LOG_WARN, path), 0);
  cr_assert_eq(atl_log_get_level(), ATL_LOG_WARN);
  cr_assert(atl_log_enabled(ATL_LOG_ERROR));
  cr_assert(atl_log_enabled(ATL_LOG_WARN));
  cr_assert_not(atl_log_enabled(ATL_LOG_INFO));
  atl_log_kv(ATL_LOG_INFO, "hidden", "a", "1", (const char *)NULL);
  ATL_DEBUG("hidden %d", 2);
  atl_log_kv(ATL_LOG_WARN, "shown", "a", "1", (const char *)NULL);
  ATL_ERROR("failed: %s (%d)", "disk", 5);
  atl_log_set_level(ATL_LOG_TRACE);
  ATL_DEBUG("now %s", "visible");
  atl_log_close();

  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  mode_t um = umask(0);
  umask(um);
  /* The log may hold what a session did: its user's alone. */
  cr_assert_eq(st.st_mode & 0777, 0600 & ~um, "mode %o", st.st_mode & 0777);
  char *text = read_all(path);
  cr_assert_eq(count_lines(text), 3, "%s", text);
  cr_assert_null(strstr(text, "hidden"));
  char *l1 = strtok(text, "\n"), *l2 = strtok(NULL, "\n"),
       *l3 = strtok(NULL, "\n");
  cr_assert_str_eq(after_ts(l1), "level=warn a=1 msg=shown");
  cr_assert_str_eq(after_ts(l2), "level=error msg=\"failed: disk (5)\"");
  cr_assert_str_eq(after_ts(l3), "level=debug msg=\"now visible\"");
  free(text);
  unlink(path);
  rmdir(d);
  free(d);
}

Test(log, open_bad_path_fails) {
  cr_assert_lt(atl_log_open(ATL_LOG_INFO, "/nonexistent-dir/x/atelierd.log"),
               0);
  /* Still usable (on stderr). */
  cr_assert_eq(atl_log_reopen(), 0);
}

Test(log, reopen_after_rotation) {
  char *d = tmpdir(), path[512], rotated[512];
  snprintf(path, sizeof(path), "%s/atelierd.log", d);
  snprintf(rotated, sizeof(rotated), "%s/atelierd.log.1", d);
  cr_assert_eq(atl_log_open(ATL_LOG_INFO, path), 0);
  ATL_INFO("before");
  cr_assert_eq(rename(path, rotated), 0);
  ATL_INFO("still old");
  cr_assert_eq(atl_log_reopen(), 0);
  ATL_INFO("after");
  atl_log_close();

  char *old = read_all(rotated), *cur = read_all(path);
  cr_assert_eq(count_lines(old), 2);
  cr_assert_not_null(strstr(old, "msg=before\n"));
  cr_assert_not_null(strstr(old, "msg=\"still old\"\n"));
  cr_assert_eq(count_lines(cur), 1);
  cr_assert_not_null(strstr(cur, "msg=after\n"));
  free(old);
  free(cur);
  unlink(path);
  unlink(rotated);
  rmdir(d);
  free(d);
}

Test(log, open_again_switches_file_and_back_to_stderr) {
  char *d = tmpdir(), a[512], b[512];
  snprintf(a, sizeof(a), "%s/a.log", d);
  snprintf(b, sizeof(b), "%s/b.log", d);
  cr_assert_eq(atl_log_open(ATL_LOG_INFO, a), 0);
  ATL_INFO("one");
  cr_assert_eq(atl_log_open(ATL_LOG_INFO, b), 0);
  ATL_INFO("two");
  cr_assert_eq(atl_log_open(ATL_LOG_ERROR, NULL), 0);
  cr_assert_eq(atl_log_get_level(), ATL_LOG_ERROR);
  ATL_ERROR("three (stderr)");
  char *ta = read_all(a), *tb = read_all(b);
  cr_assert_eq(count_lines(ta), 1);
  cr_assert_not_null(strstr(ta, "msg=one"));
  cr_assert_eq(count_lines(tb), 1);
  cr_assert_not_null(strstr(tb, "msg=two"));
  free(ta);
  free(tb);
  unlink(a);
  unlink(b);
  rmdir(d);
  free(d);
}

#define THREADS 8
#define PER_THREAD 400

static void *writer(void *arg) {
  int id = (int)(intptr_t)arg;
  char tid[16], i_s[16], pad[300];
  /* A long value makes each write large enough that any interleaving of
   * partial writes would show. */
  memset(pad, 'a' + id, sizeof(pad) - 1);
  pad[sizeof(pad) - 1] = '\0';
  snprintf(tid, sizeof(tid), "%d", id);
  for (int i = 0; i < PER_THREAD; i++) {
    snprintf(i_s, sizeof(i_s), "%d", i);
    atl_log_kv(ATL_LOG_INFO, "concurrent line", "thread", tid, "i", i_s, "pad",
               pad, (const char *)NULL);
    if (id == 0 && i % 100 == 50)
      atl_log_reopen(); /* Same file: must lose nothing. */
  }
  return NULL;
}

Test(log, concurrent_writers_never_interleave) {
  char *d = tmpdir(), path[512];
  snprintf(path, sizeof(path), "%s/atelierd.log", d);
  cr_assert_eq(atl_log_open(ATL_LOG_INFO, path), 0);
  pthread_t t[THREADS];
  for (int i = 0; i < THREADS; i++)
    cr_assert_eq(pthread_create(&t[i], NULL, writer, (void *)(intptr_t)i), 0);
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  atl_log_close();

  char *text = read_all(path);
  cr_assert_eq(count_lines(text), THREADS * PER_THREAD);
  static int seen[THREADS][PER_THREAD];
  char *save = NULL;
  for (char *l = strtok_r(text, "\n", &save); l;
       l = strtok_r(NULL, "\n", &save)) {
    cr_assert_eq(parse_line(l, pairs, 16), 6, "bad line: %s", l);
    cr_assert_str_eq(pairs[1].value, "info");
    cr_assert_str_eq(pairs[2].key, "thread");
    int id = atoi(pairs[2].value), i = atoi(pairs[3].value);
    cr_assert(id >= 0 && id < THREADS && i >= 0 && i < PER_THREAD);
    cr_assert_eq(strlen(pairs[4].value), 299);
    cr_assert_eq(pairs[4].value[0], 'a' + id);
    cr_assert_eq(pairs[4].value[298], 'a' + id);
    cr_assert_str_eq(pairs[5].value, "concurrent line");
    seen[id][i]++;
  }
  for (int id = 0; id < THREADS; id++)
    for (int i = 0; i < PER_THREAD; i++)
      cr_assert_eq(seen[id][i], 1, "thread %d line %d seen %d times", id, i,
                   seen[id][i]);
  free(text);
  unlink(path);
  rmdir(d);
  free(d);
}

Test(log, long_lines_are_truncated_and_still_parse) {
  char *d = tmpdir(), path[512];
  snprintf(path, sizeof(path), "%s/atelierd.log", d);
  cr_assert_eq(atl_log_open(ATL_LOG_INFO, path), 0);
  size_t big = 40000;
  char *v = malloc(big + 1);
  memset(v, 'x', big);
  v[big] = '\0';
  /* A quoted value (with a space) and a bare one. */
  v[10] = ' ';
  atl_log_kv(ATL_LOG_INFO, "big quoted", "blob", v, (const char *)NULL);
  v[10] = 'x';
  atl_log_kv(ATL_LOG_INFO, "big bare", "blob", v, (const char *)NULL);
  /* A multi-byte character must not be cut in half. */
  for (size_t i = 0; i + 3 <= big; i += 3)
    memcpy(v + i, "\xe2\x82\xac", 3); /* the euro sign */
  v[big - big % 3] = '\0';
  atl_log_kv(ATL_LOG_INFO, "big utf8", "blob", v, (const char *)NULL);
  ATL_INFO("small after");
  atl_log_close();

  char *text = read_all(path);
  cr_assert_eq(count_lines(text), 4);
  char *save = NULL;
  int n = 0;
  for (char *l = strtok_r(text, "\n", &save); l;
       l = strtok_r(NULL, "\n", &save), n++) {
    cr_assert_leq(strlen(l) + 1, 16384);
    if (n == 3) {
      cr_assert_str_eq(after_ts(l), "level=info msg=\"small after\"");
      break;
    }
    cr_assert_geq(strlen(l), 16000);
    cr_assert_not_null(strstr(l, "\xe2\x80\xa6(truncated)"), "line %d", n);
    int np = parse_line(l, pairs, 16);
    cr_assert_eq(np, 3, "line %d does not parse", n);
    cr_assert_str_eq(pairs[2].key, "blob");
    const char *val = pairs[2].value;
    const char *mark = strstr(val, "\xe2\x80\xa6(truncated)");
    cr_assert_not_null(mark);
    cr_assert_str_eq(mark, "\xe2\x80\xa6(truncated)");
    if (n == 2) {
      /* Only whole euro signs before the mark. */
      cr_assert_eq((size_t)(mark - val) % 3, 0);
    }
  }
  free(text);
  free(v);
  unlink(path);
  rmdir(d);
  free(d);
}

Test(log, msg_printf_is_scrubbed_too) {
  char *d = tmpdir(), path[512];
  snprintf(path, sizeof(path), "%s/atelierd.log", d);
  cr_assert_eq(atl_log_open(ATL_LOG_INFO, path), 0);
  atl_log_add_secret("hunter2-hunter2");
  ATL_WARN("login with %s failed", "hunter2-hunter2");
  atl_log_close();
  char *text = read_all(path);
  cr_assert_null(strstr(text, "hunter2"));
  cr_assert_not_null(strstr(text, "msg=\"login with (redacted) failed\""));
  free(text);
  unlink(path);
  rmdir(d);
  free(d);
}

Test(log, secrets_survive_close) {
  char buf[256];
  atl_log_add_secret("correct-horse-battery");
  atl_log_close();
  atl_log_format(buf, sizeof(buf), ATL_LOG_INFO, "correct-horse-battery",
                 (const char *)NULL);
  cr_assert_str_eq(after_ts(buf), "level=info msg=(redacted)");
}
