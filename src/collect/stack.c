/*
 * stack.c: the call stack of a sampled allocation.
 *
 * Default: libunwind's unw_backtrace (DWARF CFI, so it works on Debian's
 * binaries, which have no frame pointers; about 20x faster than glibc's
 * backtrace()). libunwind is loaded with dlopen(RTLD_LOCAL) and only
 * unw_backtrace is looked up: linking it normally would put its
 * _Unwind_Backtrace and _Unwind_RaiseException into the global scope, ahead
 * of libgcc_s, and C++ exceptions of the host would run through it.
 *
 * Option (HEAPPROF_UNWIND=fp, or libunwind missing): a frame-pointer walk,
 * bounded by the thread's stack, for programs built with
 * -fno-omit-frame-pointer.
 *
 * The profiler's own frames are dropped by finding the interposed
 * function's return address in the captured frames and keeping everything
 * from there. Addresses are return address - 1, the call instruction, as
 * pprof expects. Called from malloc with the busy flag set: what libunwind
 * allocates on its first use in a thread goes to the real allocator.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>

#include "collect.h"

typedef int (*unw_backtrace_fn)(void **, int);
static unw_backtrace_fn unw_bt; /* written once at init */

int
heapprof__stack_init(void)
{
	if (heapprof__cfg.unwind_fp)
		return 0;
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		h = dlopen("libunwind.so", RTLD_NOW | RTLD_LOCAL);
	if (h)
		unw_bt = (unw_backtrace_fn)dlsym(h, "unw_backtrace");
	if (!unw_bt) {
		heapprof__cfg.unwind_fp = 1;
		return -ENOENT;
	}
	return 0;
}

const char *
heapprof__stack_unwinder(void)
{
	return unw_bt && !heapprof__cfg.unwind_fp ? "libunwind" : "frame-pointer";
}

static void
stack_bounds(hp_tls *t)
{
	pthread_attr_t a;
	void *lo;
	size_t sz;
	t->stack_lo = 1;
	t->stack_hi = 1;
	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return;
	if (pthread_attr_getstack(&a, &lo, &sz) == 0) {
		t->stack_lo = (uintptr_t)lo;
		t->stack_hi = (uintptr_t)lo + sz;
	}
	pthread_attr_destroy(&a);
}

static int
fp_walk(hp_tls *t, void **buf, int max)
{
	if (!t->stack_hi)
		stack_bounds(t);
	uintptr_t *fp = __builtin_frame_address(0);
	int n = 0;
	while (n < max) {
		uintptr_t f = (uintptr_t)fp;
		if (f < t->stack_lo || f + 16 > t->stack_hi || (f & 7))
			break;
		uintptr_t ret = fp[1];
		if (ret < 4096)
			break;
		buf[n++] = (void *)ret;
		uintptr_t *next = (uintptr_t *)fp[0];
		if ((uintptr_t)next <= f)
			break;
		fp = next;
	}
	return n;
}

HP_NOINLINE int
heapprof__stack_capture(hp_tls *t, uintptr_t skip_to, uint64_t *out, int max)
{
	void *buf[HP_MAX_DEPTH + 16];
	int cap = max + 16;
	if (cap > (int)HP_ARRAY_LEN(buf))
		cap = (int)HP_ARRAY_LEN(buf);
	int n = unw_bt && !heapprof__cfg.unwind_fp ? unw_bt(buf, cap)
	                                           : fp_walk(t, buf, cap);
	int start = 0;
	for (int i = 0; i < n && i < 16; i++) {
		if ((uintptr_t)buf[i] == skip_to) {
			start = i;
			break;
		}
	}
	int d = 0;
	for (int i = start; i < n && d < max; i++)
		out[d++] = (uint64_t)(uintptr_t)buf[i] - 1;
	return d;
}
