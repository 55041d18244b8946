/*
 * libs.c: heapprof__lazy_libs for libheapprof.so only (see
 * src/pprof/lazylibs.h). The shared profiler is linked without libz and
 * libm, whose functions the format code calls through heapprof__libfns;
 * this loads both (RTLD_LOCAL: nothing changes for the program's own
 * lookups) and fills the table, before the first such call. Where:
 *   - at start-up (init.c) when HEAPPROF_SIGNAL, HEAPPROF_INTERVAL, the
 *     endpoint or push is on: their dumps may run in a signal handler or
 *     inside malloc, where dlopen must not be called;
 *   - otherwise at the first exit dump or API call that encodes, decodes or
 *     unsamples: the program's own context (an exit() from a signal handler
 *     that interrupted the dynamic loader would be the exception).
 * Once: pthread_once; a failure warns once and those paths fail cleanly.
 */
#include <dlfcn.h>
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
