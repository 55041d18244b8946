/*
 * alloc_hook.h: one allocator hook (heapprof_realloc_fn) for the tests of
 * the toolkit objects. It counts allocations and growths (hook_allocs),
 * keeps the number of live blocks (hook_live), and fails the
 * hook_fail_at-th allocation (counted in hook_calls; 0: never). And a
 * write callback that discards.
 */
#ifndef HEAPPROF_TEST_ALLOC_HOOK_H
#define HEAPPROF_TEST_ALLOC_HOOK_H

#include <stdlib.h>

static long hook_allocs, hook_live, hook_calls, hook_fail_at;

static inline void *
hook_realloc(void *ctx, void *p, size_t old_size, size_t new_size)
{
	(void)ctx;
	(void)old_size;
	if (new_size == 0) {
		if (p)
			hook_live--;
		free(p);
		return NULL;
	}
	if (++hook_calls == hook_fail_at)
		return NULL;
	void *q = realloc(p, new_size);
	if (q) {
		hook_allocs++;
		hook_live += p == NULL;
	}
	return q;
}

static inline int
null_write(void *arg, const void *p, size_t n)
{
	(void)arg;
	(void)p;
	(void)n;
	return 0;
}

#endif
