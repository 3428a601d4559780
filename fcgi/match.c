/* Which route a request is, from its method and path alone: kept apart
 * from the routes' I/O so that it can be fuzzed (tests/fuzz/fuzz_fcgi.c).
 * Every identifier is checked here, before anything is asked of the
 * daemon: a malformed URL is a 404 with the rule it broke. */
#include "atl-build.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "match.h"

static int is_hex(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return 0;
  return 1;
}

/* The next path segment after *p, into seg (NUL-terminated); *p moves past
 * it. Returns its length, 0 at the end, -1 when it is too long. */
static int next_segment(const char **p, char *seg, size_t cap) {
  const char *s = *p;
  if (*s == '/')
    s++;
  size_t n = strcspn(s, "/");
  if (n >= cap)
    return -1;
  memcpy(seg, s, n);
  seg[n] = '\0';
  *p = s + n;
  return (int)n;
}

static int is(const char *method, const char *m) {
  return method != NULL && strcmp(method, m) == 0;
}

/* Sets the route when the method is one of allow's (GET implies HEAD). */
static void accept_route(fcgi_match_t *m, const char *method, int route,
                         const char *allow) {
  m->route = route;
  m->allow = allow;
  m->method_ok = 0;
  if (method == NULL)
    return;
  const char *a = allow;
  size_t n = strlen(method);
  while (*a) {
    size_t k = strcspn(a, ", ");
    if (k == n && strncmp(a, method, n) == 0)
      m->method_ok = 1;
    a += k;
    a += strspn(a, ", ");
  }
  if (is(method, "HEAD") && strstr(allow, "GET") != NULL)
    m->method_ok = 1;
}

static void session_routes(fcgi_match_t *m, const char *method,
                           const char *rest) {
  char id[40], sub[40], name[80];
  int n = next_segment(&rest, id, sizeof(id));
  if (n != 32 || !is_hex(id, 32)) {
    m->why = "no such session: a session id is 32 lowercase hex digits";
    return;
  }
  memcpy(m->session, id, 33);
  n = next_segment(&rest, sub, sizeof(sub));
  if (n == 0 && *rest == '\0') {
    accept_route(m, method, FCGI_R_SESSION, "GET, HEAD, DELETE");
    return;
  }
  if (n > 0 && *rest == '\0') {
    if (strcmp(sub, "messages") == 0) {
      accept_route(m, method, FCGI_R_MESSAGES, "POST");
      return;
    }
    if (strcmp(sub, "cancel") == 0) {
      accept_route(m, method, FCGI_R_CANCEL, "POST");
      return;
    }
    if (strcmp(sub, "events") == 0) {
      accept_route(m, method, FCGI_R_EVENTS, "GET");
      return;
    }
    if (strcmp(sub, "preview") == 0) {
      accept_route(m, method, FCGI_R_PREVIEW_REQUEST, "POST");
      return;
    }
  }
  /* A session's MCP endpoint, with or without a closing slash (a URL
   * pasted into a client's settings often has one). */
  if (n > 0 && strcmp(sub, "mcp") == 0 &&
      (*rest == '\0' || strcmp(rest, "/") == 0)) {
    accept_route(m, method, FCGI_R_SESSION_MCP, "POST");
    return;
  }
  if (n > 0 && strcmp(sub, "tools") == 0) {
    int k = next_segment(&rest, name, sizeof(name));
    if (k > 0 && k <= 64 && *rest == '\0' &&
        strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") == (size_t)k) {
      memcpy(m->tool, name, (size_t)k + 1);
      accept_route(m, method, FCGI_R_TOOL_CALL, "POST");
      return;
    }
  }
  m->why = "no such resource";
}

void fcgi_match(const char *method, const char *path, fcgi_match_t *m) {
  memset(m, 0, sizeof(*m));
  m->route = FCGI_R_NONE;
  m->why = "no such resource";
  if (path != NULL && strcmp(path, "/metrics") == 0) {
    accept_route(m, method, FCGI_R_METRICS, "GET, HEAD");
    return;
  }
  /* MCP's endpoint: one path, POST only (GET and DELETE, a legacy
   * client's server stream and session end, are 405 as the spec allows). */
  if (path != NULL &&
      (strcmp(path, "/mcp") == 0 || strcmp(path, "/mcp/") == 0)) {
    accept_route(m, method, FCGI_R_MCP, "POST");
    return;
  }
  if (path == NULL || strncmp(path, "/api/", 5) != 0) {
    m->why = "no such resource (the API is under /api/)";
    return;
  }
  const char *p = path + 4;
  char seg[40];
  int n = next_segment(&p, seg, sizeof(seg));
  int end = *p == '\0' || strcmp(p, "/") == 0;
  if (n <= 0)
    return;
  if (end && strcmp(seg, "auth") == 0)
    accept_route(m, method, FCGI_R_AUTH, "POST");
  else if (end && strcmp(seg, "health") == 0)
    accept_route(m, method, FCGI_R_HEALTH, "GET, HEAD");
  else if (end && strcmp(seg, "models") == 0)
    accept_route(m, method, FCGI_R_MODELS, "GET, HEAD");
  else if (end && strcmp(seg, "tools") == 0)
    accept_route(m, method, FCGI_R_TOOLS, "GET, HEAD");
  else if (end && strcmp(seg, "sessions") == 0)
    accept_route(m, method, FCGI_R_SESSIONS, "GET, HEAD, POST");
  else if (strcmp(seg, "sessions") == 0)
    session_routes(m, method, p);
  else if (strcmp(seg, "images") == 0 || strcmp(seg, "previews") == 0) {
    int preview = seg[0] == 'p';
    char file[80];
    int k = next_segment(&p, file, sizeof(file));
    if (k == 68 && *p == '\0' && strcmp(file + 64, ".png") == 0 &&
        is_hex(file, 64)) {
      memcpy(m->image, file, 64);
      m->image[64] = '\0';
      accept_route(m, method, preview ? FCGI_R_PREVIEW : FCGI_R_IMAGE,
                   "GET, HEAD");
    } else {
      m->why = preview ? "no such preview: a preview is "
                         "/api/previews/<64 lowercase hex digits>.png"
                       : "no such image: an image is /api/images/<64 "
                         "lowercase hex digits>.png";
    }
  }
}

long long fcgi_resume_point(const char *last_event_id, const char *query) {
  const char *v = last_event_id;
  char buf[32] = "";
  if (v == NULL || v[0] == '\0') {
    v = NULL;
    const char *q = query;
    while (q != NULL && *q) {
      if (strncmp(q, "after=", 6) == 0) {
        size_t n = strcspn(q + 6, "&");
        if (n >= sizeof(buf))
          return -1;
        memcpy(buf, q + 6, n);
        buf[n] = '\0';
        v = buf;
        break;
      }
      q = strchr(q, '&');
      q = q ? q + 1 : NULL;
    }
  }
  if (v == NULL || v[0] == '\0')
    return 0;
  if (v[0] < '0' || v[0] > '9')
    return -1;
  char *end;
  errno = 0;
  long long n = strtoll(v, &end, 10);
  if (errno != 0 || *end != '\0' || n < 0)
    return -1;
  return n;
}
