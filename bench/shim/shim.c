/*
 * shim.c: a bare forwarding LD_PRELOAD malloc shim, the floor for the
 * capture benchmarks (build/bench/libshim.so; `make bench` builds it).
 *
 * Every allocation function forwards to the next definition found with
 * dlsym(RTLD_NEXT) and does nothing else. Until the pointers are resolved
 * (dlsym itself may call calloc), requests are served from a static bump
 * buffer, whose blocks free() ignores and realloc() copies out of.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static void *(*next_malloc)(size_t);
static void (*next_free)(void *);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static void *(*next_reallocarray)(void *, size_t, size_t);
static int (*next_posix_memalign)(void **, size_t, size_t);
static void *(*next_aligned_alloc)(size_t, size_t);
static void *(*next_memalign)(size_t, size_t);
static void *(*next_valloc)(size_t);
static void *(*next_pvalloc)(size_t);
static size_t (*next_malloc_usable_size)(void *);

/* Bootstrap arena: 16-byte aligned bump allocation, never reused. Each block
 * is preceded by its size so realloc can copy it out. */
static _Alignas(16) unsigned char boot_buf[64 * 1024];
static size_t boot_used;
static int resolving;

static int in_boot(const void *p)
{
	return (uintptr_t)p - (uintptr_t)boot_buf < sizeof boot_buf;
}

static void *boot_alloc(size_t n)
{
	size_t need = ((n + 15) & ~(size_t)15) + 16;
	if (n > sizeof boot_buf || need > sizeof boot_buf - boot_used)
		return NULL;
	unsigned char *p = boot_buf + boot_used;
	boot_used += need;
	memcpy(p, &n, sizeof n);
	return p + 16;
}

static size_t boot_size(const void *p)
{
	size_t n;
	memcpy(&n, (const unsigned char *)p - 16, sizeof n);
	return n;
}

#define RESOLVE(name) \
	*(void **)(&next_##name) = dlsym(RTLD_NEXT, #name)

static void resolve(void)
{
	if (resolving)
		return;
	resolving = 1;
	RESOLVE(malloc);
	RESOLVE(free);
	RESOLVE(calloc);
	RESOLVE(realloc);
	RESOLVE(reallocarray);
	RESOLVE(posix_memalign);
	RESOLVE(aligned_alloc);
	RESOLVE(memalign);
	RESOLVE(valloc);
	RESOLVE(pvalloc);
	RESOLVE(malloc_usable_size);
	resolving = 0;
}

__attribute__((constructor)) static void shim_init(void)
{
	if (!next_free)
		resolve();
}

EXPORT void *malloc(size_t n)
{
	if (__builtin_expect(!next_malloc, 0)) {
		resolve();
		if (!next_malloc)
			return boot_alloc(n);
	}
	return next_malloc(n);
}

EXPORT void free(void *p)
{
	if (__builtin_expect(in_boot(p), 0))
		return;
	if (__builtin_expect(!next_free, 0)) {
		resolve();
		if (!next_free)
			return; /* leak rather than crash */
	}
	next_free(p);
}

EXPORT void *calloc(size_t n, size_t size)
{
	if (__builtin_expect(!next_calloc, 0)) {
		resolve();
		if (!next_calloc) {
			size_t total;
			if (__builtin_mul_overflow(n, size, &total)) {
				errno = ENOMEM;
				return NULL;
			}
			return boot_alloc(total); /* static: already zero */
		}
	}
	return next_calloc(n, size);
}

EXPORT void *realloc(void *p, size_t n)
{
	if (__builtin_expect(in_boot(p), 0)) {
		void *q = malloc(n);
		if (q) {
			size_t old = boot_size(p);
			memcpy(q, p, old < n ? old : n);
		}
		return q;
	}
	if (__builtin_expect(!next_realloc, 0)) {
		resolve();
		if (!next_realloc)
			return p ? NULL : boot_alloc(n);
	}
	return next_realloc(p, n);
}

EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
	if (__builtin_expect(in_boot(p), 0)) {
		size_t total;
		if (__builtin_mul_overflow(n, size, &total)) {
			errno = ENOMEM;
			return NULL;
		}
		return realloc(p, total);
	}
	if (__builtin_expect(!next_reallocarray, 0))
		resolve();
	return next_reallocarray(p, n, size);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (__builtin_expect(!next_posix_memalign, 0))
		resolve();
	return next_posix_memalign(out, align, n);
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	if (__builtin_expect(!next_aligned_alloc, 0))
		resolve();
	return next_aligned_alloc(align, n);
}

EXPORT void *memalign(size_t align, size_t n)
{
	if (__builtin_expect(!next_memalign, 0))
		resolve();
	return next_memalign(align, n);
}

EXPORT void *valloc(size_t n)
{
	if (__builtin_expect(!next_valloc, 0))
		resolve();
	return next_valloc(n);
}

EXPORT void *pvalloc(size_t n)
{
	if (__builtin_expect(!next_pvalloc, 0))
		resolve();
	return next_pvalloc(n);
}

EXPORT size_t malloc_usable_size(void *p)
{
	if (__builtin_expect(in_boot(p), 0))
		return boot_size(p);
	if (__builtin_expect(!next_malloc_usable_size, 0))
		resolve();
	return next_malloc_usable_size(p);
}
