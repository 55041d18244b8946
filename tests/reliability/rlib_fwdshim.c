/*
 * rlib_fwdshim.c: built by rel_allocators.sh as a shared object and
 * preloaded ahead of the profiler. An allocator selector: each entry point
 * forwards through a pointer the program may switch (shim_select), so at
 * -O2 it is one `jmp *ptr(%rip)`, the code of a PLT entry. bootstrap.c took
 * that for a non-PIE executable's canonical PLT entry, concluded that its
 * own malloc came first, bound glibc's as the next allocator, and the
 * profiler's reallocarray handed the shim's pointers to glibc's realloc
 * (SIGSEGV in arena_for_chunk). The shim's blocks are glibc's with a
 * 16-byte header in front (the pointer glibc returned), so glibc's own
 * functions do not know them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

#define HDR 16

/* A block of n bytes aligned to a (a power of two, at least HDR). */
static void *
b_alloc(size_t a, size_t n)
{
	if (n > SIZE_MAX - a - HDR) {
		errno = ENOMEM;
		return NULL;
	}
	char *o = __libc_malloc(n + a + HDR);
	if (!o)
		return NULL;
	char *q = (char *)(((uintptr_t)o + HDR + a - 1) & ~(uintptr_t)(a - 1));
	((void **)q)[-1] = o;
	((size_t *)q)[-2] = n;
	return q;
}
static void *b_malloc(size_t n) { return b_alloc(HDR, n); }
static void b_free(void *p) { if (p) __libc_free(((void **)p)[-1]); }
static size_t b_usable(void *p) { return p ? ((size_t *)p)[-2] : 0; }
static void *
b_calloc(size_t n, size_t s)
{
	size_t t;
	if (__builtin_mul_overflow(n, s, &t)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = b_malloc(t);
	if (p)
		memset(p, 0, t);
	return p;
}
static void *
b_realloc(void *p, size_t n)
{
	if (!p)
		return b_malloc(n);
	void *q = b_malloc(n);
	if (q) {
		size_t o = b_usable(p);
		memcpy(q, p, o < n ? o : n);
		b_free(p);
	}
	return q;
}
static void *
b_memalign(size_t a, size_t n)
{
	if (a & (a - 1)) {
		errno = EINVAL;
		return NULL;
	}
	return b_alloc(a < HDR ? HDR : a, n);
}
static int
b_posix_memalign(void **pp, size_t a, size_t n)
{
	if (a < sizeof(void *) || (a & (a - 1)))
		return EINVAL;
	void *p = b_memalign(a, n);
	if (!p)
		return ENOMEM;
	*pp = p;
	return 0;
}
static void *b_valloc(size_t n) { return b_memalign(4096, n); }
static void *b_pvalloc(size_t n) { return b_memalign(4096, (n + 4095) & ~(size_t)4095); }

/* Hidden: reached RIP-relative, so each entry point is `jmp *ptr(%rip)`. */
#define SEL __attribute__((visibility("hidden")))
SEL void *(*shim_m)(size_t) = b_malloc;
SEL void (*shim_f)(void *) = b_free;
SEL void *(*shim_c)(size_t, size_t) = b_calloc;
SEL void *(*shim_r)(void *, size_t) = b_realloc;
SEL int (*shim_pm)(void **, size_t, size_t) = b_posix_memalign;
SEL void *(*shim_ma)(size_t, size_t) = b_memalign;
SEL void *(*shim_aa)(size_t, size_t) = b_memalign;
SEL void *(*shim_v)(size_t) = b_valloc;
SEL void *(*shim_pv)(size_t) = b_pvalloc;
SEL size_t (*shim_us)(void *) = b_usable;

/* The selector (never called here: it keeps the pointers variables). */
void
shim_select(void *(*m)(size_t), void (*f)(void *))
{
	shim_m = m;
	shim_f = f;
}

void *malloc(size_t n) { return shim_m(n); }
void free(void *p) { shim_f(p); }
void *calloc(size_t n, size_t s) { return shim_c(n, s); }
void *realloc(void *p, size_t n) { return shim_r(p, n); }
int posix_memalign(void **pp, size_t a, size_t n) { return shim_pm(pp, a, n); }
void *memalign(size_t a, size_t n) { return shim_ma(a, n); }
void *aligned_alloc(size_t a, size_t n) { return shim_aa(a, n); }
void *valloc(size_t n) { return shim_v(n); }
void *pvalloc(size_t n) { return shim_pv(n); }
size_t malloc_usable_size(void *p) { return shim_us(p); }
