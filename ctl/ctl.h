/* What atelierctl's commands share (atelierctl.c): the options, the
 * connection to atelierd and one request on it, and printing. The
 * commands that live in files of their own (ctl_provider.c) use these.
 */
#ifndef ATL_CTL_H
#define ATL_CTL_H

#include <stdio.h>

#include <json-c/json.h>

#define EXIT_TOOL_FAILED 1
#define EXIT_USAGE 2

/* The command line's options that commands read. */
int ctl_timeout_ms(void);
const char *ctl_model(void); /* --model, or NULL */
int ctl_json_output(void);   /* --json */

/* Prints "atelierctl: <message>" and the hint to --help; EXIT_USAGE. */
int ctl_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Connects to api.sock; 0, or -1 after printing why. */
int ctl_connect(void);
/* One request (params taken); 0 with *out (the caller puts it), or -1
 * after printing why. */
int ctl_request(const char *method, json_object *params, json_object **out);
/* The same, waiting timeout_ms unless --timeout said otherwise: for a
 * request that waits on something slower than atelierd. */
int ctl_request_wait(const char *method, json_object *params, int timeout_ms,
                     json_object **out);
void ctl_print_json(FILE *f, json_object *o);

/* ctl_mcp.c: "mcp [--session ID | --new]": an MCP server on stdio for
 * the session (or a new one) of atelierd at socket_path. */
int ctl_cmd_mcp(int argc, char **argv, const char *socket_path,
                const char *session, int new_session);

/* ctl_provider.c: "provider check [NAME]". */
int ctl_cmd_provider(int argc, char **argv);

/* Connects to admin.sock (beside api.sock, or --admin-socket) and, with a
 * secret file (--secret-file or $ATELIER_ADMIN_SECRET_FILE), gives its
 * first line (auth); 0, or -1 after printing why. */
int ctl_connect_admin(void);
/* The next line of a stream (atl_rpcc_read_line): 1 with *line (free it),
 * 0 at its end, -1 on a time-out (ctl_last_error() "") or an error. */
int ctl_read_line(int timeout_ms, char **line);
int ctl_has_line(void);
/* atl_rpcc_pass on the connection, to stdout. */
int ctl_pass(int timeout_ms);
const char *ctl_last_error(void);

/* ctl_admin.c: "admin ..." and "trace [SESSION]". */
int ctl_cmd_admin(int argc, char **argv);
int ctl_cmd_trace(int argc, char **argv, const char *kinds, double seconds,
                  const char *level);
/* ctl_top.c: "top". */
int ctl_cmd_top(int argc, char **argv);

#endif
