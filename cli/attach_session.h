/*
 * attach_session.h: the rendezvous of `heapprof attach PID` (the session)
 * and `heapprof detach PID` (attach_session.c says how and why).
 */
#ifndef HEAPPROF_ATTACH_SESSION_H
#define HEAPPROF_ATTACH_SESSION_H

#include <sys/types.h>

/* The session's listening socket for pid (non-blocking), or -errno
 * (-EADDRINUSE: a session, or someone, has the name). */
int as_listen(pid_t pid);
/* Accepts one connection on the listening socket: its descriptor if it is
 * a detach request from the session's user or root (answer it with
 * as_reply), else -1 (refused and answered, or not a request). */
int as_accept(int lfd);
/* Answers a request ("ok TEXT" or "error TEXT") and closes it. */
void as_reply(int c, int ok, const char *text);

#endif
