/*
 * interpose.c: the malloc family's entry points, interposed (LD_PRELOAD of
 * libheapprof.so, or libheapprof.a linked into the program). Only the fast
 * path lives here; everything else is a tail call.
 *
 * Cost on the unsampled path: an allocation adds a thread-local load,
 * compare, subtract and store (the sampler's byte counter in initial-exec
 * TLS) to the forwarding jump; free adds two compares (is the pointer in
 * the profiler's range?). Nothing shared is touched, no lock is taken,
 * errno is untouched, no frame is set up: this file is compiled without
 * frame pointers, and each function ends in a jump either to the next
 * allocator or to its slow path (slowpath.c), whose return address is then
 * the program's call site.
 *
 * The jump to the next allocator goes through `fwd`, which holds the next
 * allocator's functions, or, with the exact count that times the peak
 * (HEAPPROF_PEAK_EXACT=1, peak.c), the *_counted functions below, which
 * call them and add each block's chunk size to the thread's count
 * (heapprof__exact_in / _out): the count costs nothing when it is off.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>

#include "collect.h"

/* Before the constructor sets `fwd`: the next allocator, whatever
 * heapprof__next holds then (bootstrap.c's lazy functions at first). */
static void *
t_malloc(size_t n)
{
	return heapprof__next.malloc(n);
}

static void
t_free(void *p)
{
	heapprof__next.free(p);
}

static void *
t_calloc(size_t n, size_t s)
{
	return heapprof__next.calloc(n, s);
}

static void *
t_realloc(void *p, size_t n)
{
	return heapprof__next.realloc(p, n);
}

static int
t_posix_memalign(void **pp, size_t a, size_t n)
{
	return heapprof__next.posix_memalign(pp, a, n);
}

static void *
t_aligned_alloc(size_t a, size_t n)
{
	return heapprof__next.aligned_alloc(a, n);
}

static void *
t_memalign(size_t a, size_t n)
{
	return heapprof__next.memalign(a, n);
}

static void *
t_valloc(size_t n)
{
	return heapprof__next.valloc(n);
}

static void *
t_pvalloc(size_t n)
{
	return heapprof__next.pvalloc(n);
}

/* What the fast paths jump to (see the header). Written by
 * heapprof__interpose_count in the constructor, each pointer at once; a
 * thread that reads an older one reaches the same allocator. */
static hp_next fwd = {
	t_malloc, t_free, t_calloc, t_realloc, t_posix_memalign,
	t_aligned_alloc, t_memalign, t_valloc, t_pvalloc, NULL,
};

/* p, from the next allocator, into the exact count. */
static void *
counted(void *p)
{
	if (HP_LIKELY(p != NULL))
		heapprof__exact_in(&heapprof__tls, heapprof__exact_on(), hp_chunk(p));
	return p;
}

static void *
malloc_counted(size_t n)
{
	return counted(heapprof__next.malloc(n));
}

static void
free_counted(void *p)
{
	if (p)
		heapprof__exact_out(&heapprof__tls, heapprof__exact_on(), hp_chunk(p));
	heapprof__next.free(p);
}

static void *
calloc_counted(size_t n, size_t size)
{
	return counted(heapprof__next.calloc(n, size));
}

/* realloc's fast path: p is not NULL and n is not 0. The old chunk goes
 * out and the new one in, if it succeeded. */
static void *
realloc_counted(void *p, size_t n)
{
	int64_t old = hp_chunk(p);
	void *q = heapprof__next.realloc(p, n);
	if (q)
		heapprof__exact_add(&heapprof__tls, heapprof__exact_on(),
		                    hp_chunk(q) - old);
	return q;
}

static int
posix_memalign_counted(void **pp, size_t align, size_t n)
{
	int rc = heapprof__next.posix_memalign(pp, align, n);
	if (!rc)
		(void)counted(*pp);
	return rc;
}

static void *
aligned_alloc_counted(size_t align, size_t n)
{
	return counted(heapprof__next.aligned_alloc(align, n));
}

static void *
memalign_counted(size_t align, size_t n)
{
	return counted(heapprof__next.memalign(align, n));
}

static void *
valloc_counted(size_t n)
{
	return counted(heapprof__next.valloc(n));
}

static void *
pvalloc_counted(size_t n)
{
	return counted(heapprof__next.pvalloc(n));
}

HP_RARE void
heapprof__interpose_count(int on)
{
	hp_next f = heapprof__next;
	if (on) {
		f.malloc = malloc_counted;
		f.free = free_counted;
		f.calloc = calloc_counted;
		f.realloc = realloc_counted;
		f.posix_memalign = posix_memalign_counted;
		f.aligned_alloc = aligned_alloc_counted;
		f.memalign = memalign_counted;
		f.valloc = valloc_counted;
		f.pvalloc = pvalloc_counted;
	}
	__atomic_store_n(&fwd.malloc, f.malloc, __ATOMIC_RELAXED);
	__atomic_store_n(&fwd.free, f.free, __ATOMIC_RELAXED);
	__atomic_store_n(&fwd.calloc, f.calloc, __ATOMIC_RELAXED);
	__atomic_store_n(&fwd.realloc, f.realloc, __ATOMIC_RELAXED);
	__atomic_store_n(&fwd.posix_memalign, f.posix_memalign, __ATOMIC_RELAXED);
	__atomic_store_n(&fwd.aligned_alloc, f.aligned_alloc, __ATOMIC_RELAXED);
	__atomic_store_n(&fwd.memalign, f.memalign, __ATOMIC_RELAXED);
	__atomic_store_n(&fwd.valloc, f.valloc, __ATOMIC_RELAXED);
	__atomic_store_n(&fwd.pvalloc, f.pvalloc, __ATOMIC_RELAXED);
}

#ifndef HP_ENTRY_RENAMED
/* The profiler's own calls to the malloc family reach these entry points,
 * whose slow path serves a thread inside the profiler from private memory
 * (slowpath.c), never from the next allocator unless the range is
 * exhausted: serve/dump.c may then take a dump inside a signal handler,
 * which could have interrupted glibc's malloc mid-update. Not so in the
 * sanitizer build (tests/sanitize/hp_entry.c), whose renamed entry points
 * the profiler's own calls do not reach. */
HP_HIDDEN const int heapprof__busy_alloc_private = 1;
#endif

HP_ENTRY void *
malloc(size_t n)
{
	if (HP_LIKELY(heapprof__fast(&heapprof__tls, heapprof__weight(n))))
		return fwd.malloc(n);
	return heapprof__slow_malloc(n);
}

HP_ENTRY void
free(void *p)
{
	if (HP_UNLIKELY(heapprof__range_owns(p)))
		return heapprof__slow_free(p);
	fwd.free(p);
}

HP_ENTRY void *
calloc(size_t n, size_t size)
{
	size_t total;
	if (HP_LIKELY(!__builtin_mul_overflow(n, size, &total) &&
	              heapprof__fast(&heapprof__tls, heapprof__weight(total))))
		return fwd.calloc(n, size);
	return heapprof__slow_calloc(n, size);
}

HP_ENTRY void *
realloc(void *p, size_t n)
{
	if (HP_LIKELY(!heapprof__range_owns(p) && p && n &&
	              heapprof__fast(&heapprof__tls, n)))
		return fwd.realloc(p, n);
	return heapprof__slow_realloc(p, n);
}

HP_ENTRY void *
reallocarray(void *p, size_t n, size_t size)
{
	size_t total;
	if (HP_UNLIKELY(__builtin_mul_overflow(n, size, &total))) {
		/* As glibc's: ENOMEM here, p untouched. Not realloc(p,
		 * SIZE_MAX): jemalloc's fails without setting errno. */
		errno = ENOMEM;
		return NULL;
	}
	if (HP_LIKELY(!heapprof__range_owns(p) && p && total &&
	              heapprof__fast(&heapprof__tls, total)))
		return fwd.realloc(p, total);
	return heapprof__slow_realloc(p, total);
}

HP_ENTRY int
posix_memalign(void **pp, size_t align, size_t n)
{
	if (HP_LIKELY(heapprof__fast(&heapprof__tls, heapprof__weight(n))))
		return fwd.posix_memalign(pp, align, n);
	return heapprof__slow_posix_memalign(pp, align, n);
}

HP_ENTRY void *
aligned_alloc(size_t align, size_t n)
{
	if (HP_LIKELY(heapprof__fast(&heapprof__tls, heapprof__weight(n))))
		return fwd.aligned_alloc(align, n);
	return heapprof__slow_aligned_alloc(align, n);
}

HP_ENTRY void *
memalign(size_t align, size_t n)
{
	if (HP_LIKELY(heapprof__fast(&heapprof__tls, heapprof__weight(n))))
		return fwd.memalign(align, n);
	return heapprof__slow_memalign(align, n);
}

HP_ENTRY void *
valloc(size_t n)
{
	if (HP_LIKELY(heapprof__fast(&heapprof__tls, heapprof__weight(n))))
		return fwd.valloc(n);
	return heapprof__slow_valloc(n);
}

HP_ENTRY void *
pvalloc(size_t n)
{
	if (HP_LIKELY(heapprof__fast(&heapprof__tls, heapprof__weight(n))))
		return fwd.pvalloc(n);
	return heapprof__slow_pvalloc(n);
}

HP_ENTRY size_t
malloc_usable_size(void *p)
{
	if (HP_UNLIKELY(heapprof__range_owns(p)))
		return heapprof__slow_usable_size(p);
	return heapprof__next.malloc_usable_size(p);
}

#ifndef HP_ENTRY_RENAMED
/* Not an allocator entry point, so outside their section: glibc's
 * pthread_getattr_np allocates while it holds the thread's descriptor
 * lock, which a sample's first look at its thread's stack would take
 * again (stack.c). This says when a thread is inside it. */
HP_EXPORT int
pthread_getattr_np(pthread_t th, pthread_attr_t *attr)
{
	hp_getattr_fn real = heapprof__getattr_next();
	if (!real)
		return ENOSYS;
	heapprof__in_getattr++;
	int rc = real(th, attr);
	heapprof__in_getattr--;
	return rc;
}
#endif

/* Whether the program's malloc is this one: not so when the library was
 * loaded with dlopen after start-up (libc's malloc comes first in every
 * lookup scope, so nothing reaches these entry points). For
 * heapprof_active(); asked once, the answer cannot change afterwards. */
HP_HIDDEN int
heapprof__interposing(void)
{
#ifdef HP_ENTRY_RENAMED
	return 1; /* the sanitizer build's driver calls hp_malloc itself */
#else
	static _Atomic int known; /* 0 not asked yet, 1 yes, 2 no */
	int k = atomic_load_explicit(&known, memory_order_relaxed);
	if (!k) {
		const char *f = dlsym(RTLD_DEFAULT, "malloc");
		k = f >= __start_heapprof_entry && f < __stop_heapprof_entry ? 1 : 2;
		atomic_store_explicit(&known, k, memory_order_relaxed);
	}
	return k == 1;
#endif
}
