/* The admin socket's methods (doc/admin.md): what admin.c and
 * admin_sessions.c share. Loop thread only.
 */
#ifndef ATL_ADMIN_H
#define ATL_ADMIN_H

#include "daemon.h"

/* The store's figures (size, WAL, commits, checkpoints): a new object,
 * also daemon.info's "store". */
json_object *atl_admin_store_json(atl_daemon_t *d);

/* sessions, session {session} (admin_sessions.c). */
void atl_admin_sessions(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p);
void atl_admin_session(atl_daemon_t *d, atl_rpc_call_t *c, json_object *p);

/* The Prometheus text exposition of the daemon's counters (metrics.c):
 * a malloc()ed string. */
char *atl_metrics_text(atl_daemon_t *d);
/* Serves that text on the unix socket at path (mode 0660), one answer a
 * connection, through listener (closed with the loop's other handles).
 * 0 or ATL_EIO (logged). */
int atl_metrics_listen(atl_daemon_t *d, const char *path, uv_pipe_t *listener);
/* Closes the scrapes still being written (at shutdown). */
void atl_metrics_close_all(void);

/* Reads [admin] secret_file into d->admin_secret: 0, or a negative code
 * with the reason logged (a file others may read, too short, missing). */
int atl_admin_load_secret(atl_daemon_t *d);

#endif
