/* Making every open descriptor close-on-exec, for code that starts
 * programs while libraries it does not control hold descriptors. */
#ifndef ATL_COMMON_CLOEXEC_H
#define ATL_COMMON_CLOEXEC_H

/* Sets FD_CLOEXEC on every descriptor of this process above stderr, read
 * from /proc/self/fd. Our own code opens everything close-on-exec, but
 * Debian 12's libcurl (7.88) does not: curl_multi_init() makes a socket
 * pair for curl_multi_wakeup(), and its threaded resolver one per lookup,
 * both inheritable, so a program started afterwards held them until its
 * main() could close them. Call it after such a library call and just
 * before starting a child, on the thread that starts it; a descriptor
 * another thread opens inheritable in between is not covered (none of
 * ours does). Returns how many descriptors it changed, or -1 when
 * /proc/self/fd cannot be read. Never fails otherwise. */
int atl_cloexec_all(void);

#endif
