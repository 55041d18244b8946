/*
 * dump.c: profile files from inside the process: at exit, every
 * HEAPPROF_INTERVAL seconds, when HEAPPROF_SIGNAL arrives, and through
 * heapprof_dump_file(). A file is written to PATH.tmp.PID and renamed over
 * PATH, so readers never see a torn profile; a failed write warns once on
 * stderr and the program runs on.
 *
 * The signal handler only writes a byte to a pipe; a background thread
 * with every signal blocked reads it (or times out for periodic dumps) and
 * writes the profile. Dumps are serialised by dump_lock; the snapshot they
 * take copies the counters without stopping allocations.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "../collect/collect.h"
#include "serve.h"

static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t seq;            /* next %n (dump_lock) */
static int pipe_fd[2] = {-1, -1}; /* signal -> thread; written once at start */
static _Atomic int exiting;     /* the exit dump has run */
static _Atomic int write_warned;
static struct sigaction prev_action; /* chained (written once at start) */

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

struct fd_out {
	int fd;
};

static int
fd_write(void *arg, const void *p, size_t n)
{
	struct fd_out *o = arg;
	const char *c = p;
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

/* The process whose files carry no ".PID" when the template has no %p:
 * the one `heapprof run` started, else the one the library was loaded in
 * (its forked children then get their own names). */
static long
main_pid(void)
{
	const char *v = getenv("HEAPPROF_MAINPID");
	long p = v ? strtol(v, NULL, 10) : 0;
	return p > 0 ? p : heapprof__init_pid;
}

/* Writes the profile to `path` atomically. Called with dump_lock held and
 * the thread's busy flag set. */
/* In HEAPPROF_MODE=delta, where the last periodic file ended (dump_lock). */
static hp_baseline period_base;

/* Where a profile goes: normally an unnamed file in PATH's directory
 * (O_TMPFILE), which gets the name PATH.tmp.PID only once complete and on
 * disk, and is then renamed over PATH: readers never see a torn profile,
 * and a process killed mid-dump leaves nothing behind. Without O_TMPFILE
 * (some filesystems) PATH.tmp.PID is created exclusively (a file planted
 * there is removed, never reused). An existing PATH that is not a regular
 * file (a device such as /dev/null, a FIFO) is written in place, never
 * replaced. Nothing follows a symbolic link. */
typedef struct out_file {
	int fd;
	int unnamed;  /* O_TMPFILE */
	int in_place; /* PATH itself */
	char tmp[4200];
} out_file;

static int
out_open(out_file *f, const char *path)
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
		f->unnamed = 1;
		return 0;
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

/* Makes the written file PATH (rc: the writing's result). */
static int
out_commit(out_file *f, const char *path, int rc)
{
	if (rc == 0 && !f->in_place && fsync(f->fd) != 0)
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

static int
write_file(const char *path, int periodic)
{
	out_file f;
	int rc = out_open(&f, path);
	if (rc != 0)
		return rc;
	struct fd_out o = {f.fd};
	hp_snap_opts so;
	memset(&so, 0, sizeof(so));
	so.text = heapprof__cfg.text;
	if (periodic && heapprof__cfg.mode_delta && !so.text) {
		/* Each file: the allocations since the previous one, and
		 * the in-use state now. */
		so.kind = HP_SNAP_DELTA_ALLOC;
		so.base = &period_base;
		so.next_base = &period_base;
	}
	rc = heapprof__snapshot_write_ex(fd_write, &o, &so);
	return out_commit(&f, path, rc);
}

static int
dump_locked(const char *path_or_null)
{
	char path[4200];
	int rc = 0;
	if (path_or_null) {
		if (strlen(path_or_null) >= sizeof(path))
			rc = -ENAMETOOLONG;
		else
			strcpy(path, path_or_null);
	} else {
		rc = heapprof__serve_path(heapprof__cfg.out, (long)getpid(),
		                          main_pid(), seq, path, sizeof(path));
		if (rc == 0)
			seq++;
	}
	if (rc == 0)
		rc = write_file(path, path_or_null == NULL);
	if (rc != 0 && !atomic_exchange(&write_warned, 1)) {
		char msg[4400];
		snprintf(msg, sizeof(msg),
		         "heapprof[%ld]: cannot write profile %s: %s (further "
		         "failures are silent)\n",
		         (long)getpid(), path_or_null ? path_or_null : heapprof__cfg.out,
		         heapprof_strerror(rc));
		ssize_t w = write(2, msg, strlen(msg));
		(void)w;
	}
	return rc;
}

/* Serialised with every other dump. SIGXFSZ is blocked meanwhile, so a
 * file-size limit fails the write with EFBIG (one warning) instead of
 * killing the program; a SIGXFSZ our write raised is discarded, one that
 * was already pending for the program is left alone. */
static int
dump(const char *path, int from_thread)
{
	sigset_t xfsz, old, pend;
	sigemptyset(&xfsz);
	sigaddset(&xfsz, SIGXFSZ);
	pthread_sigmask(SIG_BLOCK, &xfsz, &old);
	int was_pending = sigpending(&pend) == 0 && sigismember(&pend, SIGXFSZ);
	pthread_mutex_lock(&dump_lock);
	int rc = 0;
	/* After the exit dump, the background thread writes no more: its
	 * dump would be cut off by the process ending. */
	if (!(from_thread && atomic_load(&exiting)))
		rc = dump_locked(path);
	pthread_mutex_unlock(&dump_lock);
	if (!was_pending) {
		struct timespec zero = {0, 0};
		while (sigtimedwait(&xfsz, NULL, &zero) == SIGXFSZ)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* ------------------------------------------------------ background thread */

static void
on_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	char b = 1;
	ssize_t w = write(pipe_fd[1], &b, 1); /* async-signal-safe */
	(void)w;
	errno = saved;
	(void)sig, (void)si, (void)uc;
}

static int64_t
mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
heapprof__serve_snapshot(heapprof_write_fn *write_fn, void *arg,
                         const hp_snap_opts *o)
{
	pthread_mutex_lock(&dump_lock);
	int rc = heapprof__snapshot_write_ex(write_fn, arg, o);
	pthread_mutex_unlock(&dump_lock);
	return rc;
}

/* The background thread: periodic dumps, signal-triggered dumps and the
 * HTTP endpoint, multiplexed with poll(). */
static void *
thread_main(void *arg)
{
	(void)arg;
	hp_tls *t = &heapprof__tls;
	hp_enter(t); /* nothing this thread allocates is the program's */
	int64_t period = heapprof__cfg.interval > 0
	                     ? (int64_t)heapprof__cfg.interval * 1000 : -1;
	int64_t next_dump = period > 0 ? mono_ms() + period : -1;
	struct pollfd pfd[64];
	for (;;) {
		int64_t now = mono_ms();
		int timeout = next_dump < 0 ? -1
		              : next_dump > now ? (int)(next_dump - now) : 0;
		pfd[0] = (struct pollfd){pipe_fd[0], POLLIN, 0};
		int n = 1 + heapprof__http_fds(pfd + 1, 63, now, &timeout);
		int r = poll(pfd, (nfds_t)n, timeout);
		if (r < 0 && errno != EINTR)
			break;
		if (atomic_load(&exiting))
			break;
		now = mono_ms();
		int want_dump = 0;
		if (r > 0 && (pfd[0].revents & POLLIN)) {
			char b[64];
			while (read(pipe_fd[0], b, sizeof(b)) > 0)
				; /* one dump for any number of signals */
			want_dump = 1;
		}
		if (next_dump >= 0 && now >= next_dump) {
			want_dump = 1;
			next_dump += period;
			if (next_dump <= now)
				next_dump = now + period; /* fell behind: skip */
		}
		if (want_dump)
			dump(NULL, 1);
		if (r > 0)
			heapprof__http_process(pfd + 1, n - 1, now);
		else
			heapprof__http_process(pfd + 1, 0, now); /* deadlines */
	}
	return NULL;
}

void
heapprof__serve_start(void)
{
	if (heapprof__cfg.http[0]) {
		int rc = heapprof__http_init(heapprof__cfg.http,
		                             heapprof__cfg.http_allow_remote);
		if (rc != 0) {
			char msg[512];
			snprintf(msg, sizeof(msg),
			         "HEAPPROF_HTTP=%s: %s; the endpoint is off%s",
			         heapprof__cfg.http,
			         rc == -EPERM ? "not a loopback address" : heapprof_strerror(rc),
			         rc == -EPERM ? " (HEAPPROF_HTTP_ALLOW_REMOTE=1 allows it)" : "");
			heapprof__warn_dup(msg);
		}
	}
	if (heapprof__cfg.push[0])
		heapprof__push_start();
	if (heapprof__cfg.interval <= 0 && heapprof__cfg.signal <= 0 &&
	    heapprof__http_port() < 0)
		return;
	if (pipe2(pipe_fd, O_CLOEXEC | O_NONBLOCK) != 0) {
		heapprof__warn("cannot create a pipe: no periodic or signal dumps");
		return;
	}
	/* The thread starts with every signal blocked, so the program's
	 * signals are never delivered to it. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t th;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&th, &a, thread_main, NULL);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		heapprof__warn("cannot start the dump thread: no periodic or "
		               "signal dumps");
		return;
	}
	if (heapprof__cfg.signal > 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_signal;
		sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
		sigfillset(&sa.sa_mask);
		sigaction(heapprof__cfg.signal, &sa, &prev_action);
	}
}

void
heapprof__serve_exit(void)
{
	if (atomic_exchange(&exiting, 1))
		return;
	dump(NULL, 0);
}

void
heapprof__serve_atfork_prepare(void)
{
	pthread_mutex_lock(&dump_lock);
}

void
heapprof__serve_atfork_release(int child)
{
	if (child) {
		/* The dump thread did not survive the fork: periodic and
		 * signal dumps stop in the child; its exit dump still runs.
		 * The pipe is the parent's: a signal to the child must not
		 * make the parent dump. */
		if (pipe_fd[0] >= 0) {
			close(pipe_fd[0]);
			close(pipe_fd[1]);
			pipe_fd[0] = pipe_fd[1] = -1;
		}
		seq = 0;
		atomic_store(&write_warned, 0);
	}
	pthread_mutex_unlock(&dump_lock);
}

/* ------------------------------------------------------------ public API */

HP_EXPORT int
heapprof_dump_file(const char *path)
{
	if (!atomic_load_explicit(&heapprof__ready, memory_order_acquire))
		return HEAPPROF_ENOTINIT;
	hp_tls *t = &heapprof__tls;
	hp_enter(t);
	int saved = errno;
	int rc = dump(path, 0);
	errno = saved;
	hp_leave(t);
	return rc;
}

HP_EXPORT int
heapprof_dump(heapprof_write_fn *write_fn, void *arg, int text)
{
	if (!write_fn)
		return -EINVAL;
	if (!atomic_load_explicit(&heapprof__ready, memory_order_acquire))
		return HEAPPROF_ENOTINIT;
	hp_tls *t = &heapprof__tls;
	hp_enter(t);
	pthread_mutex_lock(&dump_lock);
	int rc = heapprof__snapshot_write(write_fn, arg, text);
	pthread_mutex_unlock(&dump_lock);
	hp_leave(t);
	return rc;
}

HP_EXPORT int
heapprof_dump_profile(heapprof_write_fn *write_fn, void *arg, int kind)
{
	if (!write_fn || (kind != HEAPPROF_PROFILE_HEAP &&
	                  kind != HEAPPROF_PROFILE_INUSE))
		return -EINVAL;
	if (!atomic_load_explicit(&heapprof__ready, memory_order_acquire))
		return HEAPPROF_ENOTINIT;
	hp_tls *t = &heapprof__tls;
	hp_enter(t);
	int saved = errno;
	hp_snap_opts o;
	memset(&o, 0, sizeof(o));
	o.kind = kind == HEAPPROF_PROFILE_INUSE ? HP_SNAP_INUSE : HP_SNAP_FULL;
	int rc = heapprof__serve_snapshot(write_fn, arg, &o);
	errno = saved;
	hp_leave(t);
	return rc;
}

HP_EXPORT int
heapprof_active(void)
{
	return atomic_load_explicit(&heapprof__ready, memory_order_acquire) &&
	       atomic_load_explicit(&heapprof__cfg.rate, memory_order_relaxed) > 0;
}

HP_EXPORT int
heapprof_set_sample_rate(uint64_t bytes)
{
	if (bytes > (uint64_t)INT64_MAX / 2)
		return -EINVAL;
	atomic_store_explicit(&heapprof__cfg.rate, (int64_t)bytes,
	                      memory_order_relaxed);
	return 0;
}

HP_EXPORT uint64_t
heapprof_sample_rate(void)
{
	return (uint64_t)atomic_load_explicit(&heapprof__cfg.rate,
	                                      memory_order_relaxed);
}
