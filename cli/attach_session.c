/*
 * attach_session.c: the rendezvous between a running `heapprof attach PID`
 * (the session) and `heapprof detach PID`, which asks it to end as -d or
 * Ctrl-C would: write the profile, detach, exit 0.
 *
 * Design. The session listens on an abstract unix socket (no file to
 * create or leave behind) named "heapprof-attach.PID.START", START being
 * the target's start time (field 22 of /proc/PID/stat), so that a PID
 * reused by another process never reaches an old session. The name also
 * keeps two sessions off one process (the second's bind fails).
 * - Who may end a session: the session reads its peer's credentials
 *   (SO_PEERCRED, set by the kernel) and obeys only its own effective uid
 *   or root; anyone else gets "error: ..." and the session goes on.
 * - Who may answer a detach: abstract names are not protected by file
 *   permissions, so another user could bind the name first. detach checks
 *   the listener's credentials the same way (the owner must be itself or
 *   root) and refuses to believe anyone else; a session that finds its
 *   name taken refuses to attach (before touching the target) and says so.
 * - The exchange (SOCK_SEQPACKET, one message each way): detach sends
 *   "detach"; once the detach is over, the session replies "ok TEXT"
 *   (TEXT: its last line, the profile's path) or "error TEXT" and exits.
 * Abstract sockets belong to a network namespace: detach must run in the
 * session's (it says so when it finds none).
 */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "attach_session.h"
#include "cli.h"

/* The target's start time (clock ticks after boot), or -errno. */
static long long
start_time(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the name may hold spaces and ')' */
	if (!p)
		return -EINVAL;
	/* after ")": state is field 3, starttime field 22 */
	int field = 2;
	for (p++; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	return field == 22 ? strtoll(p, NULL, 10) : -EINVAL;
}

/* The session's address for pid: its length, or -errno. */
static int
session_addr(pid_t pid, struct sockaddr_un *a, socklen_t *len)
{
	long long st = start_time(pid);
	if (st < 0)
		return (int)st;
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	/* sun_path[0] = 0: the abstract namespace */
	int n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1,
	                 "heapprof-attach.%d.%lld", (int)pid, st);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	return 0;
}

/* 1 if the credentials' owner may deal with us: ourselves or root. */
static int
trusted(int fd, uid_t *uid)
{
	struct ucred cr;
	socklen_t l = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l) != 0)
		return 0;
	*uid = cr.uid;
	return cr.uid == geteuid() || cr.uid == 0;
}

int
as_listen(pid_t pid)
{
	struct sockaddr_un a;
	socklen_t len = 0;
	int rc = session_addr(pid, &a, &len);
	if (rc != 0)
		return rc;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, len) != 0 || listen(fd, 8) != 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

int
as_accept(int lfd)
{
	int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		return -1;
	/* the request comes with the connection; a client that sends
	 * nothing within a second is not detach */
	struct pollfd p = {c, POLLIN, 0};
	char buf[16];
	ssize_t n = poll(&p, 1, 1000) == 1 ? recv(c, buf, sizeof(buf), 0) : -1;
	if (n != 6 || memcmp(buf, "detach", 6) != 0) {
		close(c);
		return -1;
	}
	uid_t uid = (uid_t)-1;
	if (!trusted(c, &uid)) {
		char msg[128];
		snprintf(msg, sizeof(msg), "the session belongs to uid %ld, not to "
		         "uid %ld: only its owner or root may end it",
		         (long)geteuid(), (long)uid);
		as_reply(c, 0, msg);
		return -1;
	}
	return c;
}

void
as_reply(int c, int ok, const char *text)
{
	char msg[1024];
	int n = snprintf(msg, sizeof(msg), "%s %s", ok ? "ok" : "error", text);
	if (n > (int)sizeof(msg) - 1)
		n = (int)sizeof(msg) - 1;
	if (send(c, msg, (size_t)n, MSG_NOSIGNAL) < 0) {
		/* the detach command went away: nothing to tell */
	}
	close(c);
}

static void
usage(FILE *f)
{
	fprintf(f,
	        "usage: heapprof detach PID\n"
	        "\n"
	        "Ends the `heapprof attach PID` session running for process PID (one\n"
	        "started without -d, or with a long one), as its Ctrl-C would: it\n"
	        "writes its profile, detaches, and exits. Only the session's user (or\n"
	        "root) may end it. Exits 0 once the profile is written.\n"
	        "\n"
	        "  -h, --help  this help\n");
}

int
cli_detach(int argc, char **argv)
{
	pid_t pid = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		char *end;
		long p = a[0] != '-' && !pid ? strtol(a, &end, 10) : 0;
		if (p <= 0 || *end) {
			usage(stderr);
			return 2;
		}
		pid = (pid_t)p;
	}
	if (!pid) {
		usage(stderr);
		return 2;
	}
	struct sockaddr_un a;
	socklen_t len = 0;
	if (session_addr(pid, &a, &len) != 0) {
		cli_err("detach: no process %d", (int)pid);
		return 1;
	}
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		cli_err("detach: socket: %s", strerror(errno));
		return 1;
	}
	if (connect(fd, (struct sockaddr *)&a, len) != 0) {
		int e = errno;
		close(fd);
		if (e == ECONNREFUSED || e == ENOENT)
			cli_err("detach: process %d has no heapprof attach session "
			        "(none runs, or it runs in another network namespace)",
			        (int)pid);
		else
			cli_err("detach: process %d: %s", (int)pid, strerror(e));
		return 1;
	}
	uid_t uid = (uid_t)-1;
	if (!trusted(fd, &uid)) {
		close(fd);
		cli_err("detach: the session name of process %d is held by uid %ld, "
		        "which is neither you nor root: not a session of yours; "
		        "nothing was ended", (int)pid, (long)uid);
		return 1;
	}
	if (send(fd, "detach", 6, MSG_NOSIGNAL) != 6) {
		cli_err("detach: process %d's session: %s", (int)pid, strerror(errno));
		close(fd);
		return 1;
	}
	/* (the session reads the request, then checks who sent it) */
	/* the session writes the profile first (seconds for a big one) */
	char msg[1025];
	struct pollfd p = {fd, POLLIN, 0};
	ssize_t n = -1;
	int pr;
	while ((pr = poll(&p, 1, 600 * 1000)) < 0 && errno == EINTR) {
	}
	if (pr == 1)
		n = recv(fd, msg, sizeof(msg) - 1, 0);
	close(fd);
	if (n <= 0) {
		cli_err("detach: process %d's session ended without an answer%s",
		        (int)pid, pr == 0 ? " within 600 s" : " (see its own output)");
		return 1;
	}
	msg[n] = 0;
	if (strncmp(msg, "ok ", 3) == 0) {
		fprintf(stderr, "heapprof: %s\n", msg + 3);
		return 0;
	}
	cli_err("detach: process %d's session: %s", (int)pid,
	        strncmp(msg, "error ", 6) == 0 ? msg + 6 : msg);
	return 1;
}
