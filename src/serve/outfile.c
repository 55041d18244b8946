/*
 * outfile.c: the profile files themselves: the name a template gives
 * (%p, %n), and writing one so that readers never see a torn profile
 * (hp_out_file, see serve.h). Used by dump.c with dump_lock held.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "../collect/collect.h"
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
	 * that was run, so no process overwrites another's profile. */
	if (!has_pid && mainpid > 0 && pid != mainpid) {
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
		if (w < 0)
			return -errno;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int
heapprof__out_open(hp_out_file *f, const char *path)
{
	memset(f, 0, sizeof(*f));
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
	if (f->in_place)
		return rc;
	if (rc == 0 && rename(f->tmp, path) != 0)
		rc = -errno;
	if (rc != 0 && !f->unnamed)
		unlink(f->tmp);
	return rc;
}

