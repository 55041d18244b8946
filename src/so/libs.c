/*
 * libs.c: heapprof__lazy_libs for libheapprof.so only (see
 * src/pprof/lazylibs.h). The shared profiler is linked without libz and
 * libm, whose functions the format code calls through heapprof__libfns;
 * this loads both (RTLD_LOCAL: nothing changes for the program's own
 * lookups) and fills the table, before the first such call. Where:
 *   - at start-up (init.c) when HEAPPROF_SIGNAL, HEAPPROF_INTERVAL, the
 *     endpoint or push is on: their dumps may run in a signal handler or
 *     inside malloc, where dlopen must not be called;
 *   - at the program's first pthread_create or thrd_create (interposed
 *     here; not in a process that samples nothing and never dumps on its
 *     own: libs_wanted), while the
 *     process still has one thread: no other thread can hold the loader's
 *     locks then. glibc 2.36 does not reset the loader's write lock in a
 *     fork child, so a child whose parent had another thread inside
 *     dl_iterate_phdr at the fork would wait for ever in its first dlopen
 *     (RELIABILITY.md); a threaded process's children find them loaded;
 *   - otherwise at the first exit dump or API call that encodes, decodes or
 *     unsamples: the program's own context (an exit() from a signal handler
 *     that interrupted the dynamic loader would be the exception).
 * Once: pthread_once; a failure warns once and those paths fail cleanly
 * (not the first thread's: before_first_thread).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <threads.h>

#include "../collect/collect.h"
#include "../pprof/lazylibs.h"

hp_libfns heapprof__libfns; /* filled by load(), under `once` */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int state; /* 0 loaded, -1 not (written once, under `once`) */
static _Atomic int tried; /* load() has run: no dlopen left to do */

#define LIBZ "libz.so.1"
#define LIBM "libm.so.6"
#define LIB_FLAGS (RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)

static void
load(void)
{
	void *z = dlopen(LIBZ, LIB_FLAGS);
	void *m = dlopen(LIBM, LIB_FLAGS);
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

/* ------------------------------------------------------ thread creation */

/* Whether the first thread must load libz and libm: unless the constructor
 * has run and found a process that samples nothing and will never dump on
 * its own (not one HEAPPROF_ONLY names; HEAPPROF_RATE=0 with
 * HEAPPROF_EXIT=0; the other dumps loaded them at start-up). Such a
 * process's only encodings are the program's own heapprof_ calls, which
 * load them as before. HEAPPROF_EXIT=0 alone still loads: its program's
 * heapprof_dump_file() in a fork child must not need the loader. Before
 * the constructor (a library's constructor starting a thread): load. */
static int
libs_wanted(void)
{
	if (!atomic_load_explicit(&heapprof__ready, memory_order_acquire))
		return 1;
	return heapprof__cfg.at_exit || heapprof__cfg.push[0] ||
	       atomic_load_explicit(&heapprof__cfg.rate, memory_order_relaxed);
}

/* Before the process's first thread (see the top). The loader's
 * allocations are the profiler's, not the program's: unsampled, as
 * inside every dump. */
static void
before_first_thread(void)
{
	if (!libs_wanted() || atomic_load(&tried))
		return; /* not wanted, or loaded already (at start-up) */
	hp_tls *t = &heapprof__tls;
	hp_enter(t);
	/* Not final if it fails (no fd left: a server at RLIMIT_NOFILE;
	 * RLIMIT_AS), nor a warning: the first dump tries again, once fds
	 * are free, and warns if it fails then (a failure here lost the
	 * exit profile). Opened here, both stay (RTLD_NODELETE): load()
	 * finds them loaded, without a file to open. */
	void *z = dlopen(LIBZ, LIB_FLAGS);
	void *m = z ? dlopen(LIBM, LIB_FLAGS) : NULL;
	if (m) {
		heapprof__lazy_libs();
		dlclose(m);
	}
	if (z)
		dlclose(z);
	hp_leave(t);
}

/* The next definition of NAME after ours (RTLD_NEXT), else libc's own
 * (a fallback that cannot name ours again: no recursion). */
static void *
next_fn(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);
	if (!f) {
		void *c = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
		if (c) {
			f = dlsym(c, name);
			dlclose(c);
		}
	}
	return f;
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *,
                         void *(*)(void *), void *);
typedef int (*thrd_create_fn)(thrd_t *, thrd_start_t, void *);
/* The next definitions, as dlsym gives them. Set once, by the first call,
 * after libz and libm are loaded (so that a concurrent first call waits
 * for them in heapprof__lazy_libs): atomic. */
static _Atomic(void *) create_next, thrd_create_next;

/* The first call of either wrapper: the next function (0 if none), libz
 * and libm loaded first. */
static HP_NOINLINE HP_RARE void *
first_call(const char *name, _Atomic(void *) *slot)
{
	int saved = errno;
	void *next = next_fn(name);
	before_first_thread();
	atomic_store_explicit(slot, next, memory_order_release);
	errno = saved;
	return next;
}

/* Threads the program creates start as they would without the profiler;
 * the first call loads libz and libm first. A tail call: no frame of ours
 * in the new thread's stacks nor in those of what pthread_create
 * allocates. */
static HP_NOINLINE HP_RARE int
create_slow(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
            void *arg)
{
	void *next = first_call("pthread_create", &create_next);
	return next ? ((create_fn)next)(th, attr, fn, arg) : EAGAIN;
}

HP_EXPORT int
pthread_create(pthread_t *th, const pthread_attr_t *attr,
               void *(*fn)(void *), void *arg)
{
	void *next = atomic_load_explicit(&create_next, memory_order_acquire);
	if (__builtin_expect(!next, 0))
		return create_slow(th, attr, fn, arg);
	return ((create_fn)next)(th, attr, fn, arg);
}

/* C11 threads: glibc's thrd_create calls its pthread_create internally,
 * not through the PLT, so it is interposed as well (a C11 program's fork
 * children hung in their exit dump's dlopen otherwise). Threads glibc
 * makes for itself (timer_create's SIGEV_THREAD, mq_notify, AIO,
 * getaddrinfo_a) still come through neither. */
static HP_NOINLINE HP_RARE int
thrd_create_slow(thrd_t *th, thrd_start_t fn, void *arg)
{
	void *next = first_call("thrd_create", &thrd_create_next);
	return next ? ((thrd_create_fn)next)(th, fn, arg) : thrd_error;
}

HP_EXPORT int
thrd_create(thrd_t *th, thrd_start_t fn, void *arg)
{
	void *next = atomic_load_explicit(&thrd_create_next, memory_order_acquire);
	if (__builtin_expect(!next, 0))
		return thrd_create_slow(th, fn, arg);
	return ((thrd_create_fn)next)(th, fn, arg);
}
