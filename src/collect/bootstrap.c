/*
 * bootstrap.c: finding the next allocator. Until dlsym(RTLD_NEXT) has
 * resolved it (dlsym itself may call calloc), requests are served from the
 * profiler's range with a "boot" header, which free ignores: they are few
 * and tiny. The "next" function table starts out pointing at lazy_*
 * functions that resolve on first use, so no entry point needs a NULL check.
 *
 * Also defines the thread state, which only the owning thread touches.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect.h"

__thread hp_tls heapprof__tls __attribute__((tls_model("initial-exec")));
_Atomic uint64_t heapprof__dropped_samples;

/* ------------------------------------------------------------- bootstrap */

static _Atomic int resolve_state; /* 0 none, 1 in progress, 2 done */

static void *
boot_alloc(size_t size, size_t align, bool zero)
{
	if (!heapprof__range_span && heapprof__range_init() != 0)
		return NULL;
	void *p = heapprof__range_alloc(size, align < 16 ? 16 : align, zero);
	if (p)
		heapprof__range_obj(p)->magic = HP_BOOT_MAGIC;
	return p;
}

static void *lazy_malloc(size_t n);
static void lazy_free(void *p);
static void *lazy_calloc(size_t n, size_t s);
static void *lazy_realloc(void *p, size_t n);
static int lazy_posix_memalign(void **pp, size_t a, size_t n);
static void *lazy_aligned_alloc(size_t a, size_t n);
static void *lazy_memalign(size_t a, size_t n);
static void *lazy_valloc(size_t n);
static void *lazy_pvalloc(size_t n);
static size_t lazy_usable(void *p);

/* Until resolution the "next" functions are these, so no entry point needs
 * a NULL check. Written by resolve() only, before heapprof__ready. */
/* The next allocator's nallocx (jemalloc, tcmalloc), or NULL (glibc has
 * none): what its malloc_usable_size says of a size without allocating.
 * Written by resolve() only, before heapprof__ready. */
size_t (*heapprof__next_nallocx)(size_t, int);

hp_next heapprof__next = {
	lazy_malloc, lazy_free, lazy_calloc, lazy_realloc, lazy_posix_memalign,
	lazy_aligned_alloc, lazy_memalign, lazy_valloc, lazy_pvalloc, lazy_usable,
};

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

/* Is f one of ours? Our own names may resolve to another library's
 * functions (the library loaded with dlopen after libc), so compare f with
 * the section our entry points live in (interpose.c): two compares, where
 * dladdr() cost 1.8 M instructions at start-up (issue 15). */
static int
is_self(void *f)
{
	return (const char *)f >= __start_heapprof_entry &&
	       (const char *)f < __stop_heapprof_entry;
}

HP_RARE static void *
find(const char *name, void *fallback)
{
	void *f = dlsym(RTLD_NEXT, name);
	/* Linked into a program whose libc is not next in line, or loaded
	 * with dlopen after libc (nothing comes after us then), RTLD_NEXT
	 * finds nothing, or ourselves: then the process's own definition,
	 * unless that is ourselves too. */
	if (!f || is_self(f))
		f = dlsym(RTLD_DEFAULT, name);
	return f && !is_self(f) ? f : fallback;
}

HP_RARE void
heapprof__interpose_resolve(void)
{
	int expect = 0;
	if (!atomic_compare_exchange_strong(&resolve_state, &expect, 1))
		return; /* done, or in progress (dlsym re-entering us) */
	int saved = errno;
	if (!heapprof__range_span)
		heapprof__range_init();
	/* The names in .data, not string literals: dlsym reads them, and
	 * .data's pages are faulted in by the loader anyway, the constants'
	 * page is not (one page fault in every process). */
	static char nm_malloc[] = "malloc", nm_free[] = "free",
	            nm_calloc[] = "calloc", nm_realloc[] = "realloc",
	            nm_memalign[] = "memalign", nm_valloc[] = "valloc",
	            nm_pvalloc[] = "pvalloc", nm_posix_memalign[] = "posix_memalign",
	            nm_aligned_alloc[] = "aligned_alloc",
	            nm_usable[] = "malloc_usable_size";
	hp_next n;
	n.malloc = find(nm_malloc, (void *)__libc_malloc);
	if (n.malloc == (void *)__libc_malloc) {
		/* glibc's malloc is next, so its free, calloc, ... are too:
		 * glibc defines them as aliases of the __libc_ names, which
		 * the loader bound already. Six dlsym calls fewer (~6 k
		 * instructions of every start-up, issue 15). */
		n.free = __libc_free;
		n.calloc = __libc_calloc;
		n.realloc = __libc_realloc;
		n.memalign = __libc_memalign;
		n.valloc = __libc_valloc;
		n.pvalloc = __libc_pvalloc;
	} else {
		n.free = find(nm_free, (void *)__libc_free);
		n.calloc = find(nm_calloc, (void *)__libc_calloc);
		n.realloc = find(nm_realloc, (void *)__libc_realloc);
		n.memalign = find(nm_memalign, (void *)__libc_memalign);
		n.valloc = find(nm_valloc, (void *)__libc_valloc);
		n.pvalloc = find(nm_pvalloc, (void *)__libc_pvalloc);
	}
	n.posix_memalign = find(nm_posix_memalign, NULL);
	n.aligned_alloc = find(nm_aligned_alloc, (void *)__libc_memalign);
	n.malloc_usable_size = find(nm_usable, NULL);
	if (!n.posix_memalign || !n.malloc_usable_size) {
		/* No libc to forward to: nothing sane is possible. */
		static const char m[] = "heapprof: cannot find the next allocator\n";
		ssize_t w = write(2, m, sizeof(m) - 1);
		(void)w;
		abort();
	}
	heapprof__next = n;
	atomic_store_explicit(&resolve_state, 2, memory_order_release);
	errno = saved;
}

static bool
resolved(void)
{
	if (atomic_load_explicit(&resolve_state, memory_order_acquire) == 2)
		return true;
	heapprof__interpose_resolve();
	return atomic_load_explicit(&resolve_state, memory_order_acquire) == 2;
}

static void *
lazy_malloc(size_t n)
{
	return resolved() ? heapprof__next.malloc(n) : boot_alloc(n, 16, false);
}
static void
lazy_free(void *p)
{
	if (p && resolved())
		heapprof__next.free(p);
}
static void *
lazy_calloc(size_t n, size_t s)
{
	size_t t;
	if (resolved())
		return heapprof__next.calloc(n, s);
	if (__builtin_mul_overflow(n, s, &t)) {
		errno = ENOMEM;
		return NULL;
	}
	return boot_alloc(t, 16, true);
}
static void *
lazy_realloc(void *p, size_t n)
{
	return resolved() ? heapprof__next.realloc(p, n) : NULL;
}
static int
lazy_posix_memalign(void **pp, size_t a, size_t n)
{
	if (resolved())
		return heapprof__next.posix_memalign(pp, a, n);
	*pp = boot_alloc(n, a, false);
	return *pp ? 0 : ENOMEM;
}
static void *
lazy_aligned_alloc(size_t a, size_t n)
{
	return resolved() ? heapprof__next.aligned_alloc(a, n) : boot_alloc(n, a, false);
}
static void *
lazy_memalign(size_t a, size_t n)
{
	return resolved() ? heapprof__next.memalign(a, n) : boot_alloc(n, a, false);
}
static void *
lazy_valloc(size_t n)
{
	return resolved() ? heapprof__next.valloc(n) : boot_alloc(n, 4096, false);
}
static void *
lazy_pvalloc(size_t n)
{
	return resolved() ? heapprof__next.pvalloc(n) : boot_alloc(n, 4096, false);
}
static size_t
lazy_usable(void *p)
{
	return resolved() ? heapprof__next.malloc_usable_size(p) : 0;
}

