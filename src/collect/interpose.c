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
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>

#include "collect.h"

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
		return heapprof__next.malloc(n);
	return heapprof__slow_malloc(n);
}

HP_ENTRY void
free(void *p)
{
	if (HP_UNLIKELY(heapprof__range_owns(p)))
		return heapprof__slow_free(p);
	heapprof__next.free(p);
}

HP_ENTRY void *
calloc(size_t n, size_t size)
{
	size_t total;
	if (HP_LIKELY(!__builtin_mul_overflow(n, size, &total) &&
	              heapprof__fast(&heapprof__tls, heapprof__weight(total))))
		return heapprof__next.calloc(n, size);
	return heapprof__slow_calloc(n, size);
}

HP_ENTRY void *
realloc(void *p, size_t n)
{
	if (HP_LIKELY(!heapprof__range_owns(p) && p && n &&
	              heapprof__fast(&heapprof__tls, n)))
		return heapprof__next.realloc(p, n);
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
		return heapprof__next.realloc(p, total);
	return heapprof__slow_realloc(p, total);
}

HP_ENTRY int
posix_memalign(void **pp, size_t align, size_t n)
{
	if (HP_LIKELY(heapprof__fast(&heapprof__tls, heapprof__weight(n))))
		return heapprof__next.posix_memalign(pp, align, n);
	return heapprof__slow_posix_memalign(pp, align, n);
}

HP_ENTRY void *
aligned_alloc(size_t align, size_t n)
{
	if (HP_LIKELY(heapprof__fast(&heapprof__tls, heapprof__weight(n))))
		return heapprof__next.aligned_alloc(align, n);
	return heapprof__slow_aligned_alloc(align, n);
}

HP_ENTRY void *
memalign(size_t align, size_t n)
{
	if (HP_LIKELY(heapprof__fast(&heapprof__tls, heapprof__weight(n))))
		return heapprof__next.memalign(align, n);
	return heapprof__slow_memalign(align, n);
}

HP_ENTRY void *
valloc(size_t n)
{
	if (HP_LIKELY(heapprof__fast(&heapprof__tls, heapprof__weight(n))))
		return heapprof__next.valloc(n);
	return heapprof__slow_valloc(n);
}

HP_ENTRY void *
pvalloc(size_t n)
{
	if (HP_LIKELY(heapprof__fast(&heapprof__tls, heapprof__weight(n))))
		return heapprof__next.pvalloc(n);
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
