/*
 * attach_http.c: `heapprof attach --http ADDR`: the /debug/pprof endpoint
 * (http.c, the one HEAPPROF_HTTP starts in a normal run) in a process
 * that heapprof attach loaded the library into, for the time of the
 * attach only. cli/cmd_attach.c calls these two remotely, on a thread of
 * the program it stopped at a safe point:
 *
 *   heapprof_attach_http(addr)   after the dlopen, before
 *                                heapprof_attach_start: binds ADDR and
 *                                starts the endpoint's thread; the port, or
 *                                -errno (nothing is left behind then)
 *   heapprof_attach_http_stop()  at the detach (and if the attach fails
 *                                after the endpoint started): ends the
 *                                thread, joins it, closes every descriptor
 *
 * The remote call only binds and creates the thread; the serving runs on
 * that thread (every signal blocked, descriptors kept high and
 * close-on-exec: fdkeep.c), never in the ptrace stop. After the stop the
 * process has the threads and descriptors it had before the attach.
 *
 * glibc's first thread. The first pthread_create of a process (glibc
 * 2.34 and later: late_init) installs glibc's handler of SIGSETXID (33;
 * SIGCANCEL's too in some versions) and clears __libc_single_threaded
 * for good. In a program that never made a thread our endpoint's thread
 * is that first one: the stop puts both back (the two signals'
 * dispositions as they were, the flag's two copies to 1: libc's, and the
 * program's copy-relocated one) if the process was single-threaded before
 * and is again, its only thread being the one in the remote call (nothing
 * else runs then). A process that made a thread of its own meanwhile
 * keeps glibc's state, as it would have without us.
 *
 * Shared state: `lock` serialises the two calls (two attach commands may
 * call them on two threads of the program) and guards `first`.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"

/* The kernel's struct sigaction (rt_sigaction with an 8-byte mask). */
typedef struct ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	unsigned long mask;
} ksigaction;

static struct {
	int single;          /* never a thread before ours: undo at the stop */
	char *flag, *flag_copy; /* __libc_single_threaded: libc's, the lookup's */
	ksigaction act[2];   /* signals 32 and 33 before */
} first;

/* Threads: of /proc/self/status, or -1 (no allocation: open, read). */
static int
threads_now(void)
{
	char b[2048];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	b[n] = 0;
	char *p = strstr(b, "\nThreads:");
	return p ? atoi(p + 9) : -1;
}

static void
first_note(void)
{
	memset(&first, 0, sizeof(first));
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	if (!libc)
		return;
	/* dlsym in libc's own scope: its definition, not the copy */
	first.flag = dlsym(libc, "__libc_single_threaded");
	dlclose(libc);
	first.flag_copy = dlsym(RTLD_DEFAULT, "__libc_single_threaded");
	if (!first.flag || !*first.flag || threads_now() != 1)
		return;
	for (int i = 0; i < 2; i++)
		if (syscall(SYS_rt_sigaction, 32 + i, NULL, &first.act[i], 8) != 0)
			return;
	first.single = 1;
}

static void
first_undo(void)
{
	if (!first.single)
		return;
	first.single = 0;
	/* the joined thread leaves the count a moment after the join */
	int n;
	for (int i = 0; (n = threads_now()) > 1 && i < 50; i++)
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	if (n != 1)
		return;
	for (int i = 0; i < 2; i++)
		syscall(SYS_rt_sigaction, 32 + i, &first.act[i], NULL, 8);
	*first.flag = 1;
	if (first.flag_copy)
		*first.flag_copy = 1;
}

HP_EXPORT int heapprof_attach_http(const char *addr);
HP_EXPORT int heapprof_attach_http_stop(void);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* -EPERM: not loaded by attach (a preloaded or linked profiler has its
 * own HEAPPROF_HTTP); -EALREADY: another attach is on, or its endpoint;
 * -EACCES: ADDR is not a loopback address; else bind's or
 * pthread_create's error. */
HP_RARE HP_EXPORT int
heapprof_attach_http(const char *addr)
{
	if (!heapprof__attach_loaded())
		return -EPERM;
	pthread_mutex_lock(&lock);
	int rc;
	if (atomic_load(&heapprof__attach_on) || heapprof__http_running()) {
		rc = -EALREADY;
	} else if ((rc = heapprof__http_init(addr, 0)) == -EPERM) {
		rc = -EACCES;
	} else if (rc == 0) {
		first_note();
		if ((rc = heapprof__http_start()) != 0) {
			first_undo();
		} else if ((rc = heapprof__http_port()) <= 0) {
			heapprof__http_stop();
			first_undo();
			rc = -EADDRNOTAVAIL;
		}
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

/* 1 if an endpoint was stopped, 0 if none ran. */
HP_RARE HP_EXPORT int
heapprof_attach_http_stop(void)
{
	if (!heapprof__attach_loaded())
		return -EPERM;
	pthread_mutex_lock(&lock);
	int rc = heapprof__http_running();
	if (rc) {
		heapprof__http_stop();
		first_undo();
	}
	pthread_mutex_unlock(&lock);
	return rc;
}
