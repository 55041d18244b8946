/*
 * libs.c: heapprof__lazy_libs for libheapprof.so only (see
 * src/pprof/lazylibs.h). The shared profiler is linked without libz and
 * libm, whose functions the format code calls through heapprof__libfns;
 * this loads both (RTLD_LOCAL: nothing changes for the program's own
 * lookups) and fills the table, before the first such call. Where:
 *   - at start-up (init.c) when HEAPPROF_SIGNAL, HEAPPROF_INTERVAL, the
 *     endpoint or push is on: their dumps may run in a signal handler or
 *     inside malloc, where dlopen must not be called;
 *   - at the program's first pthread_create (interposed here), while the
 *     process still has one thread: no other thread can hold the loader's
 *     locks then. glibc 2.36 does not reset the loader's write lock in a
 *     fork child, so a child whose parent had another thread inside
 *     dl_iterate_phdr at the fork would wait for ever in its first dlopen
 *     (RELIABILITY.md); a threaded process's children find them loaded;
 *   - otherwise at the first exit dump or API call that encodes, decodes or
 *     unsamples: the program's own context (an exit() from a signal handler
 *     that interrupted the dynamic loader would be the exception).
 * Once: pthread_once; a failure warns once and those paths fail cleanly.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>

#include "../collect/collect.h"
#include "../pprof/lazylibs.h"

hp_libfns heapprof__libfns; /* filled by load(), under `once` */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int state; /* 0 loaded, -1 not (written once, under `once`) */
static _Atomic int tried; /* load() has run: no dlopen left to do */

static void
load(void)
{
	void *z = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	void *m = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	hp_libfns f;
	int ok = z && m;
	if (ok) {
		*(void **)&f.deflateInit2_ = dlsym(z, "deflateInit2_");
		*(void **)&f.deflate = dlsym(z, "deflate");
		*(void **)&f.deflateEnd = dlsym(z, "deflateEnd");
		*(void **)&f.deflateReset = dlsym(z, "deflateReset");
		*(void **)&f.inflateInit2_ = dlsym(z, "inflateInit2_");
		*(void **)&f.inflate = dlsym(z, "inflate");
		*(void **)&f.inflateEnd = dlsym(z, "inflateEnd");
		*(void **)&f.inflateReset = dlsym(z, "inflateReset");
		*(void **)&f.exp = dlsym(m, "exp");
		*(void **)&f.round = dlsym(m, "round");
		ok = f.deflateInit2_ && f.deflate && f.deflateEnd && f.deflateReset &&
		     f.inflateInit2_ && f.inflate && f.inflateEnd &&
		     f.inflateReset && f.exp && f.round;
	}
	if (!ok) {
		state = -1;
		atomic_store(&tried, 1);
		heapprof__warn("cannot load libz.so.1 or libm.so.6: no profile "
		               "can be written");
		return;
	}
	heapprof__libfns = f;
	atomic_store(&tried, 1);
}

/* Whether heapprof__lazy_libs() would call dlopen (ending.c: not from a
 * signal handler that interrupted the dynamic loader). */
int
heapprof__lazy_libs_pending(void)
{
	return !atomic_load(&tried);
}

int
heapprof__lazy_libs(void)
{
	pthread_once(&once, load);
	return state;
}

/* ------------------------------------------------------ pthread_create */

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *,
                         void *(*)(void *), void *);
static _Atomic(create_fn) create_next; /* set once, first call (atomic) */

/* The next pthread_create, after loading libz and libm (see the top); 0
 * if there is none. */
static HP_NOINLINE HP_RARE create_fn
create_first(void)
{
	int saved = errno;
	create_fn next = atomic_load_explicit(&create_next, memory_order_acquire);
	if (!next) {
		next = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
		if (!next) /* loaded after libc (dlopen) */
			next = (create_fn)dlsym(RTLD_DEFAULT, "pthread_create");
		atomic_store_explicit(&create_next, next, memory_order_release);
	}
	/* The loader's allocations are the profiler's, not the program's:
	 * unsampled, as inside every dump. */
	hp_tls *t = &heapprof__tls;
	hp_enter(t);
	heapprof__lazy_libs();
	hp_leave(t);
	errno = saved;
	return next;
}

/* Threads the program creates start as they would without the profiler;
 * the first call loads libz and libm first. Threads glibc makes for
 * itself (timer_create's SIGEV_THREAD, AIO) do not come here. A tail
 * call: no frame of ours in the new thread's stacks nor in those of what
 * pthread_create allocates. */
HP_EXPORT int
pthread_create(pthread_t *th, const pthread_attr_t *attr,
               void *(*fn)(void *), void *arg)
{
	create_fn next = atomic_load_explicit(&create_next, memory_order_acquire);
	if (__builtin_expect(!next || !atomic_load_explicit(&tried,
	                     memory_order_relaxed), 0)) {
		next = create_first();
		if (!next)
			return EAGAIN;
	}
	return next(th, attr, fn, arg);
}
