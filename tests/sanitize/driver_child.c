/*
 * driver_child.c: the forked children of the sanitizer build's driver
 * (tests/sanitize/driver.c): each child's stderr in a file of its own, a
 * bounded wait for it, and what a child that does not exit was doing.
 *
 * A child that does not exit within SAN_CHILD_SECS (default 120; a child
 * takes seconds, 7 s seen under load), or that uses no CPU for
 * SAN_CHILD_IDLE seconds (default 10: it never waits for anything, so it
 * is blocked), gets SIGABRT, on which the sanitizer prints its stack (the
 * script sets handle_abort=1), then SIGKILL if that does not end it. The
 * idle test matters: while the main thread waits, the workers go on, and
 * every new size is a new bucket (7,000 after a normal 5 s; 313,000 in two
 * runs that crawled past 200 s, each periodic dump taking seconds; a child
 * of the main thread held for 60 s made the endpoint answer 500, busy,
 * and the next child take over 60 s). A stuck child fails the run, with
 * its stack, whatever it was doing. Its stack only words the failure:
 * blocked inside the sanitizer runtime's allocator, under TSan, the
 * message says so: LLVM 14's TSan holds only its internal allocator's
 * locks across fork (ForkBefore -> AllocatorLock -> InternalAllocatorLock),
 * not the user allocator's, so a child that allocates while another thread
 * was in SizeClassAllocator64's region lock waits for ever, with or without
 * the profiler (seen once: FutexWait <- Semaphore::Wait <- GetFromAllocator
 * <- realloc <- heapprof__pb_libc_realloc in a child's dump; the parent's
 * worker 0 in waitpid, main in pthread_join, the run idle until the
 * script's timeout). Such a child used to be counted and the run passed
 * (issue 34): a child that never finished its dump is not a pass, whoever
 * is to blame.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ALLOC_NOT_FORK_SAFE 1 /* see above */
#endif
#endif

void
child_stderr(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		dup2(fd, 2);
		close(fd);
	}
}

static double
mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The CPU time (clock ticks) process c has used, -1 if unknown. */
static long long
cpu_ticks(pid_t c)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)c);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	const char *p = strrchr(buf, ')'); /* after the command's name */
	unsigned long long ut, stt;
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
	                 &ut, &stt) != 2)
		return -1;
	return (long long)(ut + stt);
}

/* 1 when c was reaped (its status in *st), 0 after secs or once it has
 * used no CPU for idle seconds (blocked: a child never waits for
 * anything), -1 on error. */
static int
wait_bounded(pid_t c, int *st, double secs, double idle)
{
	double start = mono_s(), end = start + secs, busy_at = start;
	long long ticks = cpu_ticks(c);
	for (int i = 1;; i++) {
		pid_t r = waitpid(c, st, WNOHANG);
		if (r == c)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
		double now = mono_s();
		if (now >= end)
			return 0;
		if (i % 50 == 0) { /* twice a second */
			long long t = cpu_ticks(c);
			if (t != ticks || t < 0)
				busy_at = now;
			ticks = t;
			if (now - busy_at >= idle)
				return 0;
		}
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

#ifdef ALLOC_NOT_FORK_SAFE
/* 1 if `rep`, the sanitizer's report of the SIGABRT, shows a thread
 * blocked inside the sanitizer runtime's allocator: its top frames are
 * all the runtime's (__sanitizer::, __tsan::), the first two waiting for
 * a lock (a futex or a spin), and one of them is an allocator's. */
static int
in_runtime_allocator(const char *rep)
{
	static const char *const waits[] = {
		"FutexWait", "Semaphore::Wait", "Mutex::Lock", "LockSlow",
		"internal_sched_yield",
	};
	const char *p = strstr(rep, ": ABRT");
	int alloc = 0, waiting = 0;
	for (int f = 0; p; f++) {
		char tag[16];
		snprintf(tag, sizeof(tag), "#%d ", f);
		const char *l = strstr(p, tag);
		if (!l)
			break;
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		if (!memmem(l, n, "__sanitizer::", 13) && !memmem(l, n, "__tsan::", 8))
			return waiting && alloc;
		for (size_t i = 0; f < 2 && i < sizeof(waits) / sizeof(waits[0]); i++)
			if (memmem(l, n, waits[i], strlen(waits[i])))
				waiting = 1;
		if (memmem(l, n, "Alloc", 5))
			alloc = 1;
		p = l + n;
	}
	return 0;
}

/* The names of the report's first frames, "a <- b <- c <- d". */
static void
top_frames(const char *rep, char *out, size_t cap)
{
	out[0] = 0;
	const char *f = strstr(rep, ": ABRT");
	f = f ? strstr(f, "#0 ") : NULL;
	for (int i = 0; f && i < 4; i++) {
		const char *name = f + strcspn(f, " ") + 1; /* after "#N " */
		size_t l = strlen(out);
		snprintf(out + l, cap - l, "%s%.*s", i ? " <- " : "",
		         (int)strcspn(name, " (\n"), name);
		f = strchr(f, '\n');
		f = f ? strchr(f, '#') : NULL;
	}
}

/* `driver classify`: the rule above on four reports, as TSan prints
 * them: the stuck child seen here (its frames as gdb showed them), a
 * child in pause(), a child busy (not waiting) in the allocator, and one
 * waiting for a runtime lock that is not the allocator's. */
int
child_classify_selftest(void)
{
	static const char known[] =
		"==1==ERROR: ThreadSanitizer: ABRT on unknown address 0x1 (pc 0x1)\n"
		"    #0 __sanitizer::FutexWait(__sanitizer::atomic_uint32_t*, unsigned int) <null> (driver+0x1)\n"
		"    #1 __sanitizer::Semaphore::Wait() <null> (driver+0x2)\n"
		"    #2 __sanitizer::SizeClassAllocator64<__tsan::AP64>::GetFromAllocator(__sanitizer::AllocatorStats*, unsigned long, unsigned int*, unsigned long) <null> (driver+0x3)\n"
		"    #3 __sanitizer::SizeClassAllocator64LocalCache<__sanitizer::SizeClassAllocator64<__tsan::AP64> >::Refill(x) <null> (driver+0x4)\n"
		"    #4 __tsan::user_realloc(__tsan::ThreadState*, unsigned long, void*, unsigned long) <null> (driver+0x5)\n"
		"    #5 realloc <null> (driver+0x6)\n"
		"    #6 heapprof__pb_libc_realloc src/pprof/pb_write.c:29 (driver+0x7)\n";
	static const char paused[] =
		"==1==ERROR: ThreadSanitizer: ABRT on unknown address 0x1 (pc 0x1)\n"
		"    #0 pause posix/../sysdeps/unix/sysv/linux/pause.c:29:10 (libc.so.6+0xd3df2)\n"
		"    #1 pause <null> (driver+0x50f40)\n"
		"    #2 child tests/sanitize/driver.c:505:3 (driver+0xd3f54)\n";
	static const char busy[] =
		"==1==ERROR: ThreadSanitizer: ABRT on unknown address 0x1 (pc 0x1)\n"
		"    #0 __sanitizer::internal_memset(void*, int, unsigned long) <null> (driver+0x2e410)\n"
		"    #1 __sanitizer::SizeClassAllocator64<__tsan::AP64>::PopulateFreeArray(x) <null> (driver+0x1)\n"
		"    #2 __tsan::user_calloc(__tsan::ThreadState*, unsigned long, unsigned long, unsigned long) <null> (driver+0xafdc2)\n"
		"    #3 __interceptor_calloc <null> (driver+0x52015)\n"
		"    #4 collect_records src/collect/snapshot.c:231:26 (driver+0x1011e3)\n";
	static const char runtime_lock[] =
		"==1==ERROR: ThreadSanitizer: ABRT on unknown address 0x1 (pc 0x1)\n"
		"    #0 __sanitizer::FutexWait(__sanitizer::atomic_uint32_t*, unsigned int) <null> (driver+0x1)\n"
		"    #1 __sanitizer::Semaphore::Wait() <null> (driver+0x2)\n"
		"    #2 __sanitizer::Mutex::Lock() <null> (driver+0x3)\n"
		"    #3 __tsan::MetaMap::GetSync(x) <null> (driver+0x4)\n"
		"    #4 pthread_mutex_lock <null> (driver+0x5)\n";
	char top[600];
	top_frames(known, top, sizeof(top));
	int ok = in_runtime_allocator(known) && !in_runtime_allocator(paused) &&
	         !in_runtime_allocator(busy) && !in_runtime_allocator(runtime_lock) &&
	         !strncmp(top, "__sanitizer::FutexWait <- __sanitizer::Semaphore::Wait <- ", 58);
	printf("classify: %s (%s)\n", ok ? "ok" : "FAILED", top);
	return ok ? 0 : 1;
}
#else
int
child_classify_selftest(void)
{
	printf("classify: not under TSan\n");
	return 0;
}
#endif

void
child_wait(pid_t c, int k, const char *errpath)
{
	const char *v = getenv("SAN_CHILD_SECS");
	double secs = v && atof(v) > 0 ? atof(v) : 120;
	v = getenv("SAN_CHILD_IDLE");
	double idle = v && atof(v) > 0 ? atof(v) : 10;
	int st = 0, stuck = 0;
	double t0 = mono_s();
	int r = wait_bounded(c, &st, secs, idle);
	if (r == 1 && mono_s() - t0 > secs / 4) /* how close to the bound */
		fprintf(stderr, "driver: child %d took %.1f s\n", k, mono_s() - t0);
	if (r == 0) {
		stuck = 1;
		t0 = mono_s() - t0;
		kill(c, SIGABRT); /* the sanitizer prints the stack */
		r = wait_bounded(c, &st, 60, 60);
		if (r == 0) {
			kill(c, SIGKILL);
			r = waitpid(c, &st, 0) == c ? 1 : -1;
		}
	}
	/* Its stderr into ours, where the script looks for reports. */
	char rep[32768];
	size_t n = 0;
	int fd = open(errpath, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t got;
		while (n < sizeof(rep) - 1 &&
		       (got = read(fd, rep + n, sizeof(rep) - 1 - n)) > 0)
			n += (size_t)got;
		close(fd);
	}
	rep[n] = 0;
	if (n)
		fprintf(stderr, "%s", rep);
	if (r < 0) {
		failf("wait for child %d: %s", k, strerror(errno));
	} else if (stuck) {
		const char *why = "";
#ifdef ALLOC_NOT_FORK_SAFE
		if (in_runtime_allocator(rep))
			why = " in the sanitizer runtime's allocator, whose locks "
			      "LLVM 14's TSan does not hold across fork";
#endif
		const char *s = strstr(rep, ": ABRT");
		failf("child %d (pid %ld) stuck%s (no exit in %.0f s, or no CPU "
		      "used for %.0f s); %s%.600s", k, (long)c, why, t0, idle,
		      s ? "its stack" : "no stack printed", s ? s : "");
	} else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		failf("child %d: status %#x", k, st);
	}
}
