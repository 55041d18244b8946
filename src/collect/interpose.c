/*
 * interpose.c: the malloc family, interposed (LD_PRELOAD of
 * libheapprof.so, or libheapprof.a linked into the program), forwarding to
 * the next allocator found with dlsym(RTLD_NEXT).
 *
 * Cost on the unsampled path: malloc adds one thread-local subtraction and
 * one branch (the sampler's byte counter); free adds two compares (is the
 * pointer in the profiler's range?). Nothing shared is touched, no lock is
 * taken, errno is untouched. Everything else happens on the sampled path.
 *
 * Rules inside these functions: no locks on the fast path, no allocation
 * but the one forwarded, no stdio, errno preserved, re-entrancy guarded
 * (the profiler's own allocations, and libunwind's or dlsym's, go straight
 * to the next allocator), initial-exec TLS.
 *
 * If a sample cannot be recorded (range exhausted, profiler memory
 * exhausted) the allocation is forwarded unsampled and counted in
 * heapprof__dropped_samples: the program's allocation never fails because
 * of the profiler.
 *
 * Bootstrap: until dlsym has resolved the next allocator, requests are
 * served from the profiler's range with a "boot" header; free ignores those
 * objects (they are few and tiny: dlsym's own buffers).
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

#define BOOT_MAGIC 0x626f6f74626f6f74ULL /* "bootboot" */

/* ------------------------------------------------------------- bootstrap */

static _Atomic int resolve_state; /* 0 none, 1 in progress, 2 done */

static void *
boot_alloc(size_t size, size_t align, bool zero)
{
	if (!heapprof__range_span && heapprof__range_init() != 0)
		return NULL;
	void *p = heapprof__range_alloc(size, align < 16 ? 16 : align, zero);
	if (p)
		heapprof__range_obj(p)->magic = BOOT_MAGIC;
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

static void *
find(const char *name, void *fallback, void *self)
{
	void *f = dlsym(RTLD_NEXT, name);
	/* Statically linked into a program whose libc is not next in line,
	 * dlsym may find nothing, or ourselves. */
	return f && f != self ? f : fallback;
}

void
heapprof__interpose_resolve(void)
{
	int expect = 0;
	if (!atomic_compare_exchange_strong(&resolve_state, &expect, 1))
		return; /* done, or in progress (dlsym re-entering us) */
	int saved = errno;
	if (!heapprof__range_span)
		heapprof__range_init();
	hp_next n;
	n.malloc = find("malloc", (void *)__libc_malloc, (void *)malloc);
	n.free = find("free", (void *)__libc_free, (void *)free);
	n.calloc = find("calloc", (void *)__libc_calloc, (void *)calloc);
	n.realloc = find("realloc", (void *)__libc_realloc, (void *)realloc);
	n.posix_memalign = find("posix_memalign", NULL, (void *)posix_memalign);
	n.aligned_alloc = find("aligned_alloc", (void *)__libc_memalign,
	                       (void *)aligned_alloc);
	n.memalign = find("memalign", (void *)__libc_memalign, (void *)memalign);
	n.valloc = find("valloc", (void *)__libc_valloc, (void *)valloc);
	n.pvalloc = find("pvalloc", (void *)__libc_pvalloc, (void *)pvalloc);
	n.malloc_usable_size = find("malloc_usable_size", NULL,
	                            (void *)malloc_usable_size);
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

/* ------------------------------------------------------------ the sample */

/* The byte counter crossed zero. Decides whether this allocation is a
 * sample and draws the next distance. */
static HP_NOINLINE bool
sample_decide(hp_tls *t)
{
	if (t->busy || !atomic_load_explicit(&heapprof__ready, memory_order_acquire))
		return false; /* counter stays <= 0: decide again next time */
	int64_t rate = atomic_load_explicit(&heapprof__cfg.rate,
	                                    memory_order_relaxed);
	t->left = heapprof__sampler_next(t, rate);
	return rate > 0;
}

/* Serves a sampled allocation from the range and records it. NULL: could
 * not (the caller forwards the request unsampled). */
static HP_NOINLINE void *
sampled_alloc(hp_tls *t, size_t size, size_t align, bool zero, uintptr_t ra)
{
	if (size > heapprof__range_span / 4)
		return NULL; /* fails in the next allocator too, or is unmappable here */
	int saved = errno;
	t->busy++;
	void *p = heapprof__range_alloc(size, align, zero);
	if (p) {
		uint64_t stack[HP_MAX_DEPTH];
		int d = heapprof__stack_capture(t, ra, stack, heapprof__cfg.depth);
		hp_bucket *b = heapprof__bucket_get(stack, d, size);
		if (b) {
			atomic_fetch_add_explicit(&b->alloc_objects, 1,
			                          memory_order_relaxed);
			atomic_fetch_add_explicit(&b->alloc_bytes, (int64_t)size,
			                          memory_order_relaxed);
			heapprof__range_obj(p)->bucket = b;
		} else {
			heapprof__range_free(heapprof__range_obj(p));
			p = NULL;
		}
	}
	if (!p)
		atomic_fetch_add_explicit(&heapprof__dropped_samples, 1,
		                          memory_order_relaxed);
	t->busy--;
	errno = saved;
	return p;
}

static HP_NOINLINE void
sampled_free(void *p)
{
	hp_obj *o = heapprof__range_obj(p);
	if (o->magic != HP_OBJ_MAGIC) {
		if (o->magic != BOOT_MAGIC)
			heapprof__warn("free() of an invalid or already freed pointer "
			               "in the profiler's range: ignored");
		return;
	}
	int saved = errno;
	hp_bucket *b = o->bucket;
	atomic_fetch_add_explicit(&b->free_objects, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&b->free_bytes, (int64_t)o->size,
	                          memory_order_relaxed);
	heapprof__range_free(o);
	errno = saved;
}

/* The sampler's view of a request: zero-byte requests count as one byte,
 * so that they can be sampled too (as tcmalloc does), and requests of 2^63
 * bytes or more (which fail anyway) must not wrap the counter around and
 * silence the sampler for the allocations that follow. */
HP_INLINE int64_t
weight(size_t n)
{
	int64_t w = (int64_t)n;
	return HP_LIKELY(w > 0) ? w : (n == 0 ? 1 : INT64_MAX / 4);
}

#define RA() ((uintptr_t)__builtin_return_address(0))

/* ------------------------------------------------------------ entry points */

HP_INLINE void *
malloc_at(hp_tls *t, size_t n, uintptr_t ra)
{
	if (HP_LIKELY((t->left -= weight(n)) > 0))
		return heapprof__next.malloc(n);
	if (sample_decide(t)) {
		void *p = sampled_alloc(t, n, 16, false, ra);
		if (p)
			return p;
	}
	return heapprof__next.malloc(n);
}

HP_EXPORT void *
malloc(size_t n)
{
	return malloc_at(&heapprof__tls, n, RA());
}

HP_EXPORT void
free(void *p)
{
	if (HP_UNLIKELY(heapprof__range_owns(p))) {
		sampled_free(p);
		return;
	}
	heapprof__next.free(p);
}

HP_EXPORT void *
calloc(size_t n, size_t size)
{
	hp_tls *t = &heapprof__tls;
	size_t total;
	if (HP_UNLIKELY(__builtin_mul_overflow(n, size, &total)))
		return heapprof__next.calloc(n, size); /* ENOMEM, as glibc */
	if (HP_LIKELY((t->left -= weight(total)) > 0))
		return heapprof__next.calloc(n, size);
	if (sample_decide(t)) {
		void *p = sampled_alloc(t, total, 16, true, RA());
		if (p)
			return p;
	}
	return heapprof__next.calloc(n, size);
}

/* realloc of a pointer from the range: a sampled free plus a (possibly
 * sampled) allocation plus a copy. */
static HP_NOINLINE void *
realloc_owned(hp_tls *t, void *p, size_t n, uintptr_t ra)
{
	hp_obj *o = heapprof__range_obj(p);
	if (o->magic != HP_OBJ_MAGIC && o->magic != BOOT_MAGIC) {
		heapprof__warn("realloc() of an invalid or freed pointer in the "
		               "profiler's range");
		errno = EINVAL;
		return NULL;
	}
	if (n == 0) { /* glibc: realloc(p, 0) frees p and returns NULL */
		sampled_free(p);
		return NULL;
	}
	void *q = NULL;
	if ((t->left -= weight(n)) <= 0 && sample_decide(t))
		q = sampled_alloc(t, n, 16, false, ra);
	if (!q)
		q = heapprof__next.malloc(n);
	if (!q)
		return NULL; /* errno is ENOMEM; p is untouched */
	memcpy(q, p, o->size < n ? o->size : n);
	sampled_free(p);
	return q;
}

HP_INLINE void *
realloc_at(hp_tls *t, void *p, size_t n, uintptr_t ra)
{
	if (HP_UNLIKELY(heapprof__range_owns(p)))
		return realloc_owned(t, p, n, ra);
	if (!p)
		return malloc_at(t, n, ra);
	if (n == 0)
		return heapprof__next.realloc(p, n); /* frees p */
	if (HP_LIKELY((t->left -= weight(n)) > 0))
		return heapprof__next.realloc(p, n);
	if (sample_decide(t)) {
		/* The new block is sampled: move the data into the range. */
		void *q = sampled_alloc(t, n, 16, false, ra);
		if (q) {
			size_t old = heapprof__next.malloc_usable_size(p);
			memcpy(q, p, old < n ? old : n);
			heapprof__next.free(p);
			return q;
		}
	}
	return heapprof__next.realloc(p, n);
}

HP_EXPORT void *
realloc(void *p, size_t n)
{
	return realloc_at(&heapprof__tls, p, n, RA());
}

HP_EXPORT void *
reallocarray(void *p, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc_at(&heapprof__tls, p, total, RA());
}

HP_INLINE bool
pow2(size_t a)
{
	return a && !(a & (a - 1));
}

HP_EXPORT int
posix_memalign(void **pp, size_t align, size_t n)
{
	hp_tls *t = &heapprof__tls;
	if (HP_LIKELY((t->left -= weight(n)) > 0))
		return heapprof__next.posix_memalign(pp, align, n);
	/* Invalid alignments go to the next allocator, which reports them. */
	if (pow2(align) && align % sizeof(void *) == 0 && sample_decide(t)) {
		void *p = sampled_alloc(t, n, align < 16 ? 16 : align, false, RA());
		if (p) {
			*pp = p;
			return 0;
		}
	}
	return heapprof__next.posix_memalign(pp, align, n);
}

HP_EXPORT void *
aligned_alloc(size_t align, size_t n)
{
	hp_tls *t = &heapprof__tls;
	if (HP_LIKELY((t->left -= weight(n)) > 0))
		return heapprof__next.aligned_alloc(align, n);
	if (pow2(align) && sample_decide(t)) {
		void *p = sampled_alloc(t, n, align < 16 ? 16 : align, false, RA());
		if (p)
			return p;
	}
	return heapprof__next.aligned_alloc(align, n);
}

HP_EXPORT void *
memalign(size_t align, size_t n)
{
	hp_tls *t = &heapprof__tls;
	if (HP_LIKELY((t->left -= weight(n)) > 0))
		return heapprof__next.memalign(align, n);
	if (pow2(align) && sample_decide(t)) {
		void *p = sampled_alloc(t, n, align < 16 ? 16 : align, false, RA());
		if (p)
			return p;
	}
	return heapprof__next.memalign(align, n);
}

HP_EXPORT void *
valloc(size_t n)
{
	hp_tls *t = &heapprof__tls;
	if (HP_LIKELY((t->left -= weight(n)) > 0))
		return heapprof__next.valloc(n);
	if (sample_decide(t)) {
		void *p = sampled_alloc(t, n, (size_t)getpagesize(), false, RA());
		if (p)
			return p;
	}
	return heapprof__next.valloc(n);
}

HP_EXPORT void *
pvalloc(size_t n)
{
	hp_tls *t = &heapprof__tls;
	if (HP_LIKELY((t->left -= weight(n)) > 0))
		return heapprof__next.pvalloc(n);
	size_t pg = (size_t)getpagesize();
	if (n <= SIZE_MAX - pg && sample_decide(t)) {
		/* pvalloc rounds the block up to whole pages; the program
		 * asked for n bytes, which is what is recorded. */
		void *p = sampled_alloc(t, n, pg, false, RA());
		if (p) {
			heapprof__range_obj(p)->size = n;
			return p;
		}
	}
	return heapprof__next.pvalloc(n);
}

HP_EXPORT size_t
malloc_usable_size(void *p)
{
	if (HP_UNLIKELY(heapprof__range_owns(p))) {
		hp_obj *o = heapprof__range_obj(p);
		return o->magic == HP_OBJ_MAGIC || o->magic == BOOT_MAGIC
		           ? o->size : 0;
	}
	return heapprof__next.malloc_usable_size(p);
}
