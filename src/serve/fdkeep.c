/*
 * fdkeep.c: file descriptors the profiler keeps open across the program's
 * own code (the HTTP listening socket and its connections, the push
 * socket). The program must neither see nor reuse them: each is
 * close-on-exec, moved well above the low numbers a program opens first,
 * and remembered with its identity (st_dev, st_ino), so that a descriptor
 * the program closed (a daemon's closefrom(3)) or closed and reused is
 * detected before we poll, read, write or close it: the feature is then
 * turned off instead of spinning on POLLNVAL or taking over the program's
 * own socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serve.h"

/* The lowest number a kept descriptor gets: near the soft RLIMIT_NOFILE
 * when it is small (the program's descriptors come from the bottom), at
 * most 1000 (a higher number would grow every fd table to match). */
static int
high_base(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur > 1200)
		return 1000;
	long b = (long)rl.rlim_cur - 128;
	return b < 64 ? 3 : (int)b;
}

int
heapprof__fd_keep(int fd, hp_kept_fd *k)
{
	k->fd = -1;
	if (fd < 0)
		return -EBADF;
	int hi = fcntl(fd, F_DUPFD_CLOEXEC, high_base());
	if (hi >= 0) {
		close(fd);
		fd = hi;
	} else {
		/* No room up there: keep the number, close-on-exec anyway. */
		fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	k->fd = fd;
	k->dev = st.st_dev;
	k->ino = st.st_ino;
	return 0;
}

int
heapprof__fd_ours(const hp_kept_fd *k)
{
	struct stat st;
	return k->fd >= 0 && fstat(k->fd, &st) == 0 && st.st_dev == k->dev &&
	       st.st_ino == k->ino;
}

HP_RARE void
heapprof__fd_release(hp_kept_fd *k)
{
	if (k->fd < 0)
		return; /* nothing kept: no write (fork children share the page) */
	if (heapprof__fd_ours(k))
		close(k->fd);
	k->fd = -1;
}
