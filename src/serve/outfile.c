/*
 * outfile.c: the profile files themselves: the name a template gives
 * (%p, %n), and writing one so that readers never see a torn profile
 * (hp_out_file, see serve.h); a stream (/dev/null, a FIFO, /dev/stdout:
 * common/outpath.c) is written as given, one whole profile after another.
 * Used by dump.c with dump_lock held.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "../collect/collect.h"
#include "parse.h"
#include "serve.h"

int
heapprof__serve_path(const char *tmpl, long pid, long mainpid, uint64_t sq,
                     char *buf, size_t cap)
{
	size_t n = 0;
	int has_pid = 0;
	char num[32];
	for (const char *p = tmpl; *p; p++) {
		const char *ins = NULL;
		if (p[0] == '%' && p[1] == 'p') {
			snprintf(num, sizeof(num), "%ld", pid);
			ins = num, has_pid = 1, p++;
		} else if (p[0] == '%' && p[1] == 'n') {
			snprintf(num, sizeof(num), "%llu", (unsigned long long)sq);
			ins = num, p++;
		} else if (p[0] == '%' && p[1] == 'P') { /* gperftools' names */
			snprintf(num, sizeof(num), "%05ld", pid);
			ins = num, has_pid = 1, p++;
		} else if (p[0] == '%' && p[1] == 'N') {
			snprintf(num, sizeof(num), "%04llu", (unsigned long long)sq + 1);
			ins = num, p++;
		} else if (p[0] == '%' && p[1] == '%') {
			ins = "%", p++;
		}
		size_t len = ins ? strlen(ins) : 1;
		if (n + len + 1 > cap)
			return -ENAMETOOLONG;
		memcpy(buf + n, ins ? ins : p, len);
		n += len;
	}
	buf[n] = 0;
	/* Children of `heapprof run` share its template: a template without
	 * %p gets ".PID" before the extension in every process but the one
	 * that was run, so no process overwrites another's profile. A
	 * stream takes every process's profiles as they come. */
	if (!has_pid && mainpid > 0 && pid != mainpid &&
	    heapprof__out_stream(buf) == HP_OUT_FILE) {
		char *base = strrchr(buf, '/');
		base = base ? base + 1 : buf;
		char *dot = strchr(base, '.');
		size_t at = dot ? (size_t)(dot - buf) : n;
		int k = snprintf(num, sizeof(num), ".%ld", pid);
		if (n + (size_t)k + 1 > cap)
			return -ENAMETOOLONG;
		memmove(buf + at + k, buf + at, n - at + 1);
		memcpy(buf + at, num, (size_t)k);
	}
	return 0;
}


#define STREAM_STALL_MS 10000 /* a stream's reader may take this long */
#define STREAM_LOCK_MS 10000  /* another process's profile, this long */

int
heapprof__fd_write(void *arg, const void *p, size_t n)
{
	hp_fd_out *o = arg;
	const char *c = p;
	if (getpid() != o->pid)
		return -ECANCELED; /* see out_commit */
	while (n) {
		ssize_t w = write(o->fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			/* A stream opened non-blocking (or the program's own
			 * non-blocking fd): wait for its reader, a bounded
			 * time without progress (a reader that stopped
			 * reading costs the profile, not the program). */
			struct pollfd pf = {o->fd, POLLOUT, 0};
			int r = poll(&pf, 1, STREAM_STALL_MS);
			if (r == 0)
				return -EAGAIN;
			if (r < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		if (w < 0)
			return -errno;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Another process may be writing a profile to the same stream (a fork
 * child, the program run again): each profile is written under an
 * open-file-description lock on the stream's inode, so that two are never
 * interleaved; fd must be a description of our own (OFD locks of one
 * description, shared with a fork child, would not exclude each other).
 * Waits a bounded time, then writes anyway. Not for character devices
 * (/dev/null: nothing to keep whole). */
static void
stream_lock(int fd)
{
	struct flock l;
	memset(&l, 0, sizeof(l));
	l.l_type = F_WRLCK;
	l.l_whence = SEEK_SET;
	for (int waited = 0; waited < STREAM_LOCK_MS; waited += 5) {
		if (fcntl(fd, F_OFD_SETLK, &l) == 0 ||
		    (errno != EAGAIN && errno != EACCES && errno != EINTR))
			return;
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

/* A stream: the program's descriptor `n` (a dup: the same offset and
 * flags as the program's writes, so a profile on stdout redirected to a
 * file lands after what the program wrote), or the path opened as it is
 * (n < 0): O_WRONLY without O_CREAT or O_TRUNC, non-blocking so that a
 * FIFO without a reader fails (ENXIO, one warning) instead of stopping
 * the program; writes wait for a slow reader (fd_write). */
static int
open_stream(hp_out_file *f, const char *path, int n)
{
	f->in_place = 1;
	f->lock_fd = -1;
	if (n >= 0)
		f->fd = fcntl(n, F_DUPFD_CLOEXEC, 3);
	else
		f->fd = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (f->fd < 0)
		return -errno;
	struct stat st;
	if (fstat(f->fd, &st) != 0 || S_ISCHR(st.st_mode))
		return 0;
	int lfd = f->fd;
	if (n >= 0) {
		/* A description of our own on the same inode (a pipe's
		 * too), for the lock alone. */
		char proc[64];
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", n);
		lfd = f->lock_fd =
			open(proc, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	}
	if (lfd >= 0)
		stream_lock(lfd);
	return 0;
}

int
heapprof__out_open(hp_out_file *f, const char *path)
{
	memset(f, 0, sizeof(*f));
	f->lock_fd = -1;
	int n = heapprof__out_stream(path);
	if (n != HP_OUT_FILE)
		return open_stream(f, path, n);
	struct stat st;
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
		f->in_place = 1;
		f->fd = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		return f->fd < 0 ? -errno : 0;
	}
	if (snprintf(f->tmp, sizeof(f->tmp), "%s.tmp.%ld", path, (long)getpid()) >=
	    (int)sizeof(f->tmp))
		return -ENAMETOOLONG;
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash == dir)
		dir[1] = 0;
	else if (slash)
		*slash = 0;
	else
		strcpy(dir, ".");
	f->fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (f->fd >= 0) {
		/* The unnamed file gets its name through /proc/self/fd
		 * (out_commit). Without /proc (a chroot, a sandbox), or with
		 * a /proc of another PID namespace (`unshare -pf
		 * --mount-proc`'s parent), that link is missing or names
		 * another file: the named temporary file instead, or the
		 * whole dump would be lost at its end. */
		char proc[64];
		struct stat mine, seen;
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f->fd);
		if (fstat(f->fd, &mine) == 0 && stat(proc, &seen) == 0 &&
		    mine.st_dev == seen.st_dev && mine.st_ino == seen.st_ino) {
			f->unnamed = 1;
			return 0;
		}
		close(f->fd);
		f->fd = -1;
	}
	for (int attempt = 0; attempt < 2; attempt++) {
		f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		             0600);
		if (f->fd >= 0 || errno != EEXIST)
			break;
		unlink(f->tmp); /* a leftover or planted file: never reuse it */
	}
	return f->fd < 0 ? -errno : 0;
}

int
heapprof__out_commit(hp_out_file *f, const char *path, int rc, pid_t pid)
{
	if (getpid() != pid) {
		/* A child forked (in a signal handler) in the middle of its
		 * parent's dump: the file, named after the parent, is the
		 * parent's to finish. */
		close(f->fd);
		if (f->lock_fd >= 0)
			close(f->lock_fd);
		return -ECANCELED;
	}
	/* The rename makes the file appear whole or not at all to readers
	 * and after the process's crash; surviving the machine's crash too
	 * takes an fsync first, ~5 ms per file on this machine's ext4 disk
	 * (issue 15): only when asked (HEAPPROF_FSYNC=1). */
	if (rc == 0 && !f->in_place && heapprof__cfg.fsync && fsync(f->fd) != 0)
		rc = -errno;
	if (rc == 0 && f->unnamed) {
		char proc[64];
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f->fd);
		for (int attempt = 0; attempt < 2; attempt++) {
			if (linkat(AT_FDCWD, proc, AT_FDCWD, f->tmp,
			           AT_SYMLINK_FOLLOW) == 0) {
				f->unnamed = 0;
				break;
			}
			if (errno != EEXIST) {
				rc = -errno;
				break;
			}
			unlink(f->tmp);
		}
		if (rc == 0 && f->unnamed)
			rc = -EEXIST;
	}
	if (close(f->fd) != 0 && rc == 0 && !f->in_place)
		rc = -errno;
	if (f->lock_fd >= 0)
		close(f->lock_fd); /* the stream's lock with it */
	if (f->in_place)
		return rc;
	if (rc == 0 && rename(f->tmp, path) != 0)
		rc = -errno;
	if (rc != 0 && !f->unnamed)
		unlink(f->tmp);
	return rc;
}

