/*
 * unload_hook.c: the program's dlclose (libheapprof.so only: a static
 * link would define it twice, as ending.c's _exit). Forwards to the next
 * dlclose; around it, unloaded.c keeps what the sampled frames of the
 * objects it unmaps belong to (their mapping, build id and names), so
 * later profiles still name them. Nothing of this runs on the malloc path.
 */
#include <dlfcn.h>
#include <errno.h>

#include "collect.h"
#include "unloaded.h"

typedef int dlclose_fn(void *);

/* The next dlclose (libc's), looked up on the first call. */
static _Atomic(dlclose_fn *) next_dlclose;

HP_EXPORT int
dlclose(void *handle)
{
	dlclose_fn *next = atomic_load_explicit(&next_dlclose,
	                                        memory_order_acquire);
	if (!next) {
		void *f = dlsym(RTLD_NEXT, "dlclose");
		__builtin_memcpy(&next, &f, sizeof(next));
		if (!next)
			return -1;
		atomic_store_explicit(&next_dlclose, next, memory_order_release);
	}
	hp_tls *t = &heapprof__tls;
	/* Not profiling, nothing sampled yet, or called from inside the
	 * profiler: only the real one. */
	if (!atomic_load_explicit(&heapprof__ready, memory_order_acquire) ||
	    t->busy || heapprof__bucket_count() == 0)
		return next(handle);
	int e = errno;
	hp_enter(t);
	hp_ul_pending *p = heapprof__unloaded_before(handle);
	hp_leave(t);
	errno = e;
	int rc = next(handle);
	if (p) {
		e = errno;
		hp_enter(t);
		heapprof__unloaded_after(p);
		hp_leave(t);
		errno = e;
	}
	return rc;
}
