/*
 * libs.c: heapprof__lazy_libs for libheapprof.so only (see
 * src/format/lazylibs.h). The shared profiler is linked without libz and
 * libm, whose calls are all made by the format code through lazily bound
 * PLT slots; this loads both, RTLD_GLOBAL so those slots resolve to them,
 * before the first such call. Where that happens:
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
#include "../format/lazylibs.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int state; /* 0 loaded, -1 not (written once, under `once`) */

static void
load(void)
{
	void *z = dlopen("libz.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
	void *m = dlopen("libm.so.6", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
	if (!z || !m) {
		state = -1;
		heapprof__warn("cannot load libz.so.1 or libm.so.6: no profile "
		               "can be written");
	}
}

int
heapprof__lazy_libs(void)
{
	pthread_once(&once, load);
	return state;
}
