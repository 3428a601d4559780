/* Request routing without I/O (fcgi/match.c): what routes.c dispatches
 * on, and what tests/fuzz/fuzz_fcgi.c feeds anything to. */
#ifndef ATL_FCGI_MATCH_H
#define ATL_FCGI_MATCH_H

enum {
  FCGI_R_NONE = 0, /* no such path: why says which rule it broke */
  FCGI_R_HEALTH,
  FCGI_R_MODELS,
  FCGI_R_TOOLS,
  FCGI_R_SESSIONS,        /* /api/sessions */
  FCGI_R_SESSION,         /* /api/sessions/{id} */
  FCGI_R_MESSAGES,        /* …/{id}/messages */
  FCGI_R_CANCEL,          /* …/{id}/cancel */
  FCGI_R_EVENTS,          /* …/{id}/events */
  FCGI_R_TOOL_CALL,       /* …/{id}/tools/{name} */
  FCGI_R_IMAGE,           /* /api/images/{id}.png */
  FCGI_R_AUTH,            /* /api/auth: the token for a cookie (fcgi/auth.c) */
  FCGI_R_METRICS,         /* /metrics: atelierd's counters for Prometheus */
  FCGI_R_PREVIEW,         /* /api/previews/{id}.png: a live preview (memory) */
  FCGI_R_PREVIEW_REQUEST, /* …/{id}/preview: a new one, at a quality */
  FCGI_R_MCP,             /* /mcp: MCP over Streamable HTTP (fcgi/mcp.c) */
  FCGI_R_SESSION_MCP      /* …/{id}/mcp: the same, bound to one session */
};

typedef struct {
  int route;
  int method_ok;     /* the method is one the path allows */
  const char *allow; /* the methods the path allows (static) */
  const char *why;   /* for FCGI_R_NONE (static) */
  char session[33];  /* 32 lowercase hex digits, when the path has one */
  char tool[65];     /* [a-z0-9_]{1,64} */
  char image[65];    /* 64 lowercase hex digits (an image or a preview) */
} fcgi_match_t;

/* method and path (REQUEST_URI without the query) may be anything. */
void fcgi_match(const char *method, const char *path, fcgi_match_t *m);

/* Where an event stream resumes: after Last-Event-ID, else after
 * ?after=N in query, else 0. -1 when the one given is not a whole number
 * >= 0. Either argument may be NULL. */
long long fcgi_resume_point(const char *last_event_id, const char *query);

#endif
