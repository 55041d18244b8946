/*
 * watch.c: the watcher's thread, started only for --dump-usage FRAC
 * (HEAPPROF_DUMP_USAGE) or --dump-pressure MS (HEAPPROF_DUMP_PRESSURE):
 * what the kernel will end the process for, watched from outside the
 * malloc path.
 *
 *   --dump-usage: every WATCH_MS, what the limit is measured against
 *   (limits.c: the limiting cgroup's memory.usage_in_bytes (v1) or
 *   memory.current (v2), or the address space for RLIMIT_AS), against
 *   the limit, re-read every LIMIT_MS (a limit lowered at run time is
 *   seen). One file when usage reaches FRAC of it. Unlike --dump-limit's
 *   in-use estimate, usage counts all the group is charged for: code,
 *   stacks, malloc's slack, page cache, the group's other processes.
 *
 *   --dump-pressure: a PSI trigger, "some MS*2000 2000000" (MS ms of
 *   stall a second, over a 2 s window: without CAP_SYS_RESOURCE, as root
 *   in a container, the kernel takes only windows of whole 2 s), on the
 *   own v2 group's memory.pressure if its
 *   memory controller is on, else /proc/pressure/memory (the whole
 *   machine: cgroup v1 has no per-group PSI). The kernel wakes poll() with
 *   POLLPRI at most once per window while the stall exceeds it; a file is
 *   written at the first, then at most one per PRESSURE_GAP_MS while the
 *   pressure stays high.
 *
 * The thread asks for a template dump (dump.c's request) and takes it
 * itself if dump_lock is free (heapprof__serve_thread_due, as the
 * endpoint's thread does), else the next sampled allocation or its next
 * round does. It starts with every signal blocked, is busy for good
 * (nothing it allocates is the program's), and exists in the process that
 * started it only: a fork child has no watcher. All its state is its own
 * (static, this thread only).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../collect/collect.h"
#include "serve.h"

#define WATCH_MS 100           /* usage read this often */
#define LIMIT_MS 1000          /* the limit, this often */
#define PRESSURE_GAP_MS 10000  /* at most one pressure file per 10 s */
#define RETRY_MS 20            /* a requested dump not taken yet */

static hp_memlimit lim; /* this thread only */

/* The PSI trigger's fd, or -1 (said once why). */
static int
trigger_on(const char *path)
{
	int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0) {
		char t[64];
		int n = snprintf(t, sizeof(t), "some %d 2000000",
		                 heapprof__cfg.dump_pressure_ms * 2000);
		if (write(fd, t, (size_t)n + 1) == n + 1)
			return fd;
		int e = errno;
		close(fd);
		errno = e;
	}
	return -1;
}

/* The group's file, else the machine's. */
static int
open_trigger(void)
{
	const char *path = "/proc/pressure/memory";
	int fd = lim.pressure[0] ? trigger_on(lim.pressure) : -1;
	if (fd >= 0)
		return fd;
	fd = trigger_on(path);
	if (fd >= 0)
		return fd;
	char msg[4400];
	snprintf(msg, sizeof(msg),
	         "HEAPPROF_DUMP_PRESSURE: cannot set a trigger on %s: %s (a kernel "
	         "without PSI, or psi=0): no pressure dump", path, strerror(errno));
	heapprof__warn_dup(msg);
	return -1;
}

/* Asks for one file and takes it now if the lock is free. */
static void
dump_now(void)
{
	heapprof__serve_request();
	heapprof__serve_thread_due();
}

static void *
watch_main(void *arg)
{
	(void)arg;
	hp_tls *t = &heapprof__tls;
	hp_enter(t); /* nothing this thread allocates is the program's */
	int pfd = heapprof__cfg.dump_pressure_ms > 0 ? open_trigger() : -1;
	int usage = heapprof__cfg.dump_usage > 0 && lim.limit != INT64_MAX;
	int64_t limit_read = heapprof__mono_ms(), last_pressure = INT64_MIN / 2;
	while (usage || pfd >= 0) {
		int64_t now = heapprof__mono_ms();
		if (usage && now - limit_read >= LIMIT_MS) {
			hp_memlimit l;
			if (heapprof__mem_limit_ex(&l) != INT64_MAX)
				lim = l; /* a limit set or lowered since */
			limit_read = now;
		}
		if (usage) {
			int64_t u = heapprof__mem_usage(&lim);
			if (u >= 0 && (double)u >= (double)lim.limit * heapprof__cfg.dump_usage) {
				usage = 0;
				dump_now();
			}
		}
		/* A dump asked for and not taken yet (dump_lock was held):
		 * again soon. */
		int timeout = heapprof__serve_thread_due();
		if (timeout < 0 || timeout > WATCH_MS)
			timeout = usage ? WATCH_MS : -1;
		if (timeout >= 0 && timeout < RETRY_MS)
			timeout = RETRY_MS;
		if (!usage && pfd < 0)
			break;
		struct pollfd p = {pfd, POLLPRI, 0};
		int r = poll(&p, pfd >= 0 ? 1 : 0, timeout);
		if (r < 0 && errno != EINTR && errno != ENOMEM)
			break;
		if (r > 0 && (p.revents & (POLLERR | POLLNVAL))) {
			close(pfd); /* the group went away */
			pfd = -1;
		} else if (r > 0 && (p.revents & POLLPRI)) {
			now = heapprof__mono_ms();
			if (now - last_pressure >= PRESSURE_GAP_MS) {
				last_pressure = now;
				dump_now();
			}
		}
	}
	/* Dumps asked for and still not taken: the program's next sampled
	 * allocation takes them. */
	return NULL;
}

HP_RARE void
heapprof__watch_start(void)
{
	if (heapprof__cfg.dump_usage <= 0 && heapprof__cfg.dump_pressure_ms <= 0)
		return;
	heapprof__mem_limit_ex(&lim);
	if (heapprof__cfg.dump_usage > 0 && lim.limit == INT64_MAX)
		heapprof__warn("HEAPPROF_DUMP_USAGE: no memory limit found (cgroup "
		               "memory.max, memory.high or memory.limit_in_bytes, "
		               "RLIMIT_AS): no usage dump");
	if (heapprof__cfg.dump_pressure_ms <= 0 && lim.limit == INT64_MAX)
		return;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t th;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 256 * 1024); /* dumps: the dump stack */
	int rc = pthread_create(&th, &a, watch_main, NULL);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		heapprof__warn("cannot start the watcher's thread: no usage or "
		               "pressure dumps");
}
