/* Raising the open-file limit, for the daemon and the bridge. */
#ifndef ATL_COMMON_FDLIMIT_H
#define ATL_COMMON_FDLIMIT_H

/* Raises the soft RLIMIT_NOFILE to the hard limit, at most 65536: every
 * client of the daemon, and every event stream of the bridge (two), is a
 * descriptor, and the usual soft limit of 1024 would cap both far below
 * what they serve. Failures are ignored: the limit stays as it was. */
void atl_raise_fd_limit(void);

#endif
