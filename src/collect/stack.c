/*
 * stack.c: the call stack of a sampled allocation: picks the unwinder,
 * knows the thread's stack bounds, and drops the profiler's own frames.
 *
 * Default (HEAPPROF_UNWIND=dwarf): unwind.c, DWARF CFI read in place with
 * a per-address rule cache, so it works on Debian's binaries, which have
 * no frame pointers.
 * HEAPPROF_UNWIND=fp: a frame-pointer walk, bounded by the thread's stack,
 * for programs built with -fno-omit-frame-pointer; its first stacks are
 * checked against the CFI unwinder's, and a mismatch warns once.
 * HEAPPROF_UNWIND=libunwind: an explicit opt-in, never the default, loaded
 * only then (dlopen, RTLD_LOCAL, only unw_backtrace looked up: linked
 * normally its _Unwind_* would come ahead of libgcc_s for the host's C++
 * exceptions). libunwind 1.6 validates addresses through a pipe it keeps
 * on the lowest free fds: a program that reuses fds 3 and 4 then gets
 * corrupted I/O (issue 13). Missing: the default unwinder, one warning.
 *
 * The profiler's own frames are dropped by finding the interposed
 * function's return address in the captured frames and keeping everything
 * from there. Addresses are return address - 1, the call instruction, as
 * pprof expects. Called from malloc with the busy flag set: what
 * pthread_getattr_np allocates on a thread's first capture goes to the
 * real allocator.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <unistd.h>

#include "collect.h"

typedef int (*unw_backtrace_fn)(void **, int);
static int main_text(struct dl_phdr_info *info, size_t size, void *arg);
static unw_backtrace_fn unw_bt; /* written once at init */
static void stack_bounds(hp_tls *t);
/* RLIMIT_STACK as it was at start-up, read by stack_init: the main
 * thread's stack was laid out with it, and a thread's first sample must
 * make no system call glibc's malloc would not (sandbox.c). 0: unknown or
 * unusable. Written once at start-up. */
static rlim_t stack_limit;


static int
load_libunwind(void)
{
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		h = dlopen("libunwind.so", RTLD_NOW | RTLD_LOCAL);
	if (h)
		unw_bt = (unw_backtrace_fn)dlsym(h, "unw_backtrace");
	if (!unw_bt) {
		heapprof__cfg.unwind = HP_UNWIND_DWARF;
		return -ENOENT;
	}
	return 0;
}

/* At start-up, on the thread that loaded the library: its stack bounds
 * (cheap for the main thread, see main_stack_bounds; otherwise
 * pthread_getattr_np, which reads /proc/self/maps for the main thread:
 * not in a signal handler later), and libunwind loaded and warmed up if
 * it was asked for (its first use allocates and loads). Nothing else:
 * the DWARF unwinder needs no set-up. */
HP_RARE int
heapprof__stack_init(hp_tls *t)
{
	heapprof__getattr_next();
	struct rlimit rl;
	if (getrlimit(RLIMIT_STACK, &rl) == 0)
		stack_limit = rl.rlim_cur;
	if (!t->stack_hi)
		stack_bounds(t);
	if (heapprof__cfg.unwind == HP_UNWIND_FP)
		dl_iterate_phdr(main_text, NULL); /* for fp_check */
	if (heapprof__cfg.unwind != HP_UNWIND_LIBUNWIND)
		return 0;
	int rc = load_libunwind();
	uint64_t warm[4];
	heapprof__stack_capture(t, 0, warm, 4);
	return rc;
}

const char *
heapprof__stack_unwinder(void)
{
	switch (heapprof__cfg.unwind) {
	case HP_UNWIND_FP: return "frame-pointer";
	case HP_UNWIND_LIBUNWIND: if (unw_bt) return "libunwind"; break;
	default: break;
	}
	return "dwarf";
}

/* The main thread's stack as glibc's pthread_getattr_np gives it, without
 * the /proc/self/maps read (110 k instructions at every start-up, issue
 * 15). glibc's top is the end of the page holding __libc_stack_end (the
 * stack pointer at the program's entry); its bottom is RLIMIT_STACK below
 * the end of the stack's mapping, which lies above that page by the
 * arguments and environment. The kernel copies the program's file name
 * (AT_EXECFN) last, 8 bytes below that end, so the page after the name is
 * the end. glibc also stops at the end of the mapping below the stack;
 * the kernel maps nothing closer than the limit (mmap_base lies at least
 * RLIMIT_STACK plus a random gap below the stack's top) when the limit is
 * at most the 128 MiB minimum gap, so no other thread's stack lies in it
 * (unless placed there with pthread_attr_setstack: it is then inside the
 * main stack's bounds, which stay safe to read). 0 (glibc's way, once, at
 * start-up) if this is not the main thread (the stack pointer is outside
 * the window), the limit is unlimited or above 120 MiB, or the numbers do
 * not fit that layout. */
extern void *__libc_stack_end;

HP_RARE static int
main_stack_bounds(hp_tls *t)
{
	struct rlimit rl = {stack_limit, stack_limit};
	const char *fn = (const char *)getauxval(AT_EXECFN);
	/* No gettid() == getpid() test (two system calls at every start):
	 * another thread's stack lies outside the window checked below. */
	if (!fn || rl.rlim_cur == 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur > (120u << 20))
		return 0;
	uintptr_t pg = (uintptr_t)getpagesize();
	uintptr_t hi = ((uintptr_t)__libc_stack_end | (pg - 1)) + 1;
	uintptr_t end = ((uintptr_t)fn + strlen(fn) + 1 + 8 + pg - 1) & ~(pg - 1);
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	size_t lim = rl.rlim_cur & ~(pg - 1);
	if (end < hi || end - hi >= lim / 2 || end < lim || here >= hi ||
	    here < end - lim)
		return 0;
	t->stack_lo = end - lim;
	t->stack_hi = hi;
	return 1;
}

/*
 * pthread_getattr_np takes the thread's descriptor lock and, holding it,
 * allocates (glibc 2.36: the cpuset, realloc(NULL, 32)). A program that
 * calls it on a new thread (Rust's std does for every thread it starts)
 * and whose first sample on that thread is that allocation hung for ever:
 * the capture asked pthread_getattr_np for the thread's stack, which
 * waited for the lock its own thread held (rel.getattr.*). So interpose.c
 * wraps the function and raises heapprof__in_getattr around it; a capture
 * inside it goes without the thread's bounds (each read of the stack
 * checked with mincore, unwind.c) and asks again at the next sample. The
 * real function is looked up once, at start-up (never inside malloc:
 * dlsym takes the loader's lock).
 */
HP_HIDDEN __thread int heapprof__in_getattr __attribute__((tls_model("initial-exec")));
static _Atomic(hp_getattr_fn) getattr_next;

HP_RARE hp_getattr_fn
heapprof__getattr_next(void)
{
	hp_getattr_fn f = atomic_load_explicit(&getattr_next, memory_order_acquire);
	if (!f) {
		/* In .data, not a literal: ending.c's dlsym names. */
		static char name[] = "pthread_getattr_np";
		f = (hp_getattr_fn)dlsym(RTLD_NEXT, name);
		if (!f) /* loaded after libc (dlopen): nothing follows us */
			f = (hp_getattr_fn)dlsym(RTLD_DEFAULT, name);
		atomic_store_explicit(&getattr_next, f, memory_order_release);
	}
	return f;
}

/* Out of line: its pthread_attr_t is on the stack only on a thread's
 * first capture. Called with the thread's busy flag set (what
 * pthread_getattr_np allocates goes to the real allocator). */
static HP_NOINLINE void
stack_bounds(hp_tls *t)
{
	if (main_stack_bounds(t))
		return;
	hp_getattr_fn getattr =
		atomic_load_explicit(&getattr_next, memory_order_acquire);
	if (heapprof__in_getattr || !getattr)
		return; /* unknown for now (0): see above */
	/* pthread_getattr_np makes system calls (sched_getaffinity; the
	 * maps for the main thread) that a seccomp filter may forbid: not
	 * once one is in force (sandbox.c; nothing is sampled then, but a
	 * sample may have begun as the filter went in). Unknown bounds: each
	 * read of the stack is checked (unwind.c), or not made. */
	if (atomic_load_explicit(&heapprof__sandbox, memory_order_relaxed))
		return;
	pthread_attr_t a;
	void *lo;
	size_t sz;
	t->stack_lo = 1;
	t->stack_hi = 1;
	if (getattr(pthread_self(), &a) != 0)
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

/*
 * HEAPPROF_UNWIND=fp on a program built without frame pointers gives
 * stacks cut short (or made of whatever the frame-pointer register held).
 * The first FP_CHECKS stacks are therefore also unwound from the
 * call-frame information, which says, for each of the program's own call
 * sites (main_lo..main_hi, the executable's text), whether its function
 * computes its frame from rbp (a frame pointer) or from rsp (none). More
 * call sites without one than with, FP_BAD at least: one warning.
 * Libraries are not counted: Debian's libc and libstdc++ have no frame
 * pointers, which costs an fp build a frame here and there (their
 * internal allocations lose their callers), not its whole stacks.
 * The counters are shared by all threads (atomics); main_lo and main_hi
 * are written once by stack_init.
 */
#define FP_CHECKS 64
#define FP_BAD 3
static _Atomic int fp_checked, fp_without, fp_with;
static uintptr_t main_lo, main_hi;

static int
main_text(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size, (void)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			main_lo = info->dlpi_addr + ph->p_vaddr;
			main_hi = main_lo + ph->p_memsz;
			break;
		}
	}
	return 1; /* the first object is the executable */
}

static HP_NOINLINE void
fp_check(hp_tls *t, uintptr_t skip_to, int max)
{
	uint64_t d[HP_MAX_DEPTH];
	if (max > HP_MAX_DEPTH)
		max = HP_MAX_DEPTH;
	int nd = heapprof__unwind_dwarf(d, max, skip_to, t->stack_lo, t->stack_hi);
	int with = 0, without = 0;
	for (int i = 0; i < nd; i++) {
		if (d[i] < main_lo || d[i] >= main_hi)
			continue;
		int fp = heapprof__unwind_uses_fp(d[i]);
		with += fp == 1;
		without += fp == 0;
	}
	int w = atomic_fetch_add(&fp_with, with) + with;
	int wo = atomic_fetch_add(&fp_without, without) + without;
	if (wo >= FP_BAD && wo > w) /* heapprof__warn prints it once */
		heapprof__warn("HEAPPROF_UNWIND=fp: the program is built without "
		               "frame pointers (its call-frame information says "
		               "so): its stacks are cut short or wrong; the default "
		               "unwinder (dwarf) needs none");
}

/* fp and libunwind: into a buffer, then the profiler's frames dropped.
 * Not inlined: the buffer is on the stack only when these are used. */
static HP_NOINLINE int
capture_buffered(hp_tls *t, uintptr_t skip_to, uint64_t *out, int max)
{
	void *buf[HP_MAX_DEPTH + 16];
	int cap = max + 16;
	if (cap > (int)HP_ARRAY_LEN(buf))
		cap = (int)HP_ARRAY_LEN(buf);
	int n = heapprof__cfg.unwind == HP_UNWIND_FP ? fp_walk(t, buf, cap)
	                                             : unw_bt(buf, cap);
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
	if (heapprof__cfg.unwind == HP_UNWIND_FP &&
	    HP_UNLIKELY(atomic_load_explicit(&fp_checked, memory_order_relaxed) <
	                FP_CHECKS) &&
	    atomic_fetch_add(&fp_checked, 1) < FP_CHECKS)
		fp_check(t, skip_to, max);
	return d;
}

HP_NOINLINE int
heapprof__stack_capture(hp_tls *t, uintptr_t skip_to, uint64_t *out, int max)
{
	if (HP_UNLIKELY(!t->stack_hi))
		stack_bounds(t);
	if (HP_LIKELY(heapprof__cfg.unwind == HP_UNWIND_DWARF) ||
	    (heapprof__cfg.unwind == HP_UNWIND_LIBUNWIND && !unw_bt))
		return heapprof__unwind_dwarf(out, max, skip_to, t->stack_lo,
		                              t->stack_hi);
	return capture_buffered(t, skip_to, out, max);
}
