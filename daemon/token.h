/* The HTTP API's token: a secret kept in <data dir>/token that the web
 * bridge asks for over api.sock (http.auth, doc/api.md) and that every
 * /api/ request must carry (doc/deploy.md). The unix sockets need no
 * token: their permissions are their authentication.
 */
#ifndef ATL_TOKEN_H
#define ATL_TOKEN_H

/* 32 random bytes as lowercase hex. */
#define ATL_TOKEN_LEN 64

/* Reads the token in dir/token, or makes one there (getrandom, written
 * 0600 to a new file and linked into place, so that two daemons starting
 * at once agree on one token and a reader never sees half of it).
 * On success returns 0 with out filled (65 bytes, NUL-terminated). A file
 * that is not the daemon's own regular file, is readable by others, or
 * does not hold exactly 64 lowercase hex digits (and an optional newline)
 * is an error: returns a negative ATL_E* code with *err (malloc()ed, for
 * the caller to free) saying what was wrong and what to do. */
int atl_token_load(const char *dir, char out[ATL_TOKEN_LEN + 1], char **err);

/* The same for any secret of 32 random bytes kept in dir/name (what names
 * it in messages: "the MCP session key"). atl_token_load() is this for
 * "token". */
int atl_secret_load(const char *dir, const char *name, const char *what,
                    char out[ATL_TOKEN_LEN + 1], char **err);

/* The key that signs the session ids the bridge gives legacy MCP clients
 * over HTTP (doc/mcp.md): kept in dir/mcp.key, so that a client's MCP
 * session outlives restarts of atelierd and the bridge. Loaded whether or
 * not the HTTP API asks for its token. */
#define ATL_MCP_KEY_FILE "mcp.key"

#endif
