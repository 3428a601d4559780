/* Live previews: a picture of a session's scene (or bench) after every
 * change, for the page only (issue 21).
 *
 * When a tool call that changes a namespace commits, every plugin whose
 * preview_of names that namespace (plugin.h, ABI 1.5) is asked for a
 * preview on the previews' own thread, with a snapshot of the namespace.
 * A newer change cancels the preview in flight and queues one of the newer
 * snapshot, so a burst of ten edits costs one preview, not ten. Previews
 * run one at a time across the daemon, sessions taking turns, and never on
 * the tool-call pool: a tool call's answer and the agent's next turn never
 * wait for one.
 *
 * Pictures are kept in memory only, the newest per session and view: at
 * most render.preview_sessions of them, each for render.preview_ttl_s
 * after it was made. A replaced or expired picture's id answers ATL_ENOENT.
 * Each picture is announced by a "preview" event (doc/events.md).
 */
#ifndef ATL_PREVIEW_H
#define ATL_PREVIEW_H

#include "daemon.h"

/* Starts the previews' thread (nothing when render.previews is off).
 * Loop thread, at start-up, after the plugins are loaded. */
int atl_previews_start(atl_daemon_t *d);
/* Cancels the preview in flight and drops what waits: the daemon is
 * stopping. Loop thread; never blocks. */
void atl_previews_shutdown(atl_daemon_t *d);
/* 1 while a preview runs or its last work on the loop has not: the
 * shutdown waits for 0. Loop thread. */
int atl_previews_busy(atl_daemon_t *d);
/* Joins the thread (at most 2 s) and frees everything. After the loop has
 * stopped. Returns 1 when a preview did not return and was left running
 * (the plugins must then stay loaded), else 0. */
int atl_previews_free(atl_daemon_t *d);

/* Whether a change to namespace ns would be previewed: previews are on
 * and a plugin previews ns. Loop thread; cheap. */
int atl_previews_watch(atl_daemon_t *d, const char *ns);
/* The namespaces the plugins preview, as "\"scene\", \"optics\"" for a
 * message (malloc'd; "" when none does). */
char *atl_previews_views(atl_daemon_t *d);
/* The namespace ns of session s has changed, in the commit whose event
 * seq is revision: preview it again. Loop thread. */
void atl_previews_changed(atl_daemon_t *d, atl_session_t *s, const char *ns,
                          int64_t revision);
/* Asks for a preview now (the page found its picture gone, or changed
 * the quality) of view, a previewed namespace, or with view NULL of every
 * previewed namespace s has (all of them while it has none); quality is
 * "fast", "hq" or NULL for the session's current one. Returns the number
 * of previews asked for. Loop thread. */
int atl_previews_request(atl_daemon_t *d, atl_session_t *s, const char *quality,
                         const char *view);
/* A call of plugin's flagged ATL_TOOL_HOLDS_PREVIEWS (render_scene)
 * starts in the session: cancel the previews that plugin makes of it and
 * drop what waits, keeping their pictures. The plugin's own previews
 * only: they are what shares its resources (the render farm) and what
 * its call will show anyway; another plugin's view goes on. Loop
 * thread. */
void atl_previews_hold(atl_daemon_t *d, const char *session_id,
                       const atl_plugin_entry_t *plugin);
/* The session is gone: cancel its previews and drop its pictures. Loop
 * thread. */
void atl_previews_forget(atl_daemon_t *d, const char *session_id);

/* A copy of the picture with this id: 0 with *data (malloc()ed, the caller
 * frees it), *len and its MIME type in mime (at least 32 bytes); or
 * ATL_ENOENT (replaced, expired, or never made). Any thread. */
int atl_previews_get(atl_daemon_t *d, const char *id, void **data, size_t *len,
                     char *mime, size_t mime_size);

/* The host function preview_put (plugin.h); see there. */
int atl__preview_put(atl_call_t *call, const char *mime, const void *data,
                     size_t len, json_object *info);

/* What the admin socket's info shows: on/off, pictures kept, bytes,
 * previews made and cancelled. A new object. Loop thread. */
json_object *atl_previews_status(atl_daemon_t *d);

#endif
