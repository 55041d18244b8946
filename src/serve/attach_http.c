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
 * close-on-exec: fdkeep.c), never in the ptrace stop. No signal
 * disposition is touched, so after the stop the process has the threads
 * and descriptors it had before the attach.
 *
 * Shared state: `lock` serialises the two calls (two attach commands may
 * call them on two threads of the program).
 */
#include <errno.h>
#include <pthread.h>

#include "serve.h"

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
	} else if (rc == 0 && (rc = heapprof__http_start()) == 0) {
		rc = heapprof__http_port();
		if (rc <= 0) {
			heapprof__http_stop();
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
	if (rc)
		heapprof__http_stop();
	pthread_mutex_unlock(&lock);
	return rc;
}
