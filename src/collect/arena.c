/*
 * arena.c: the profiler's own memory for buckets and stacks: bump
 * allocation from 1 MiB mmap'd chunks, never returned. The profiler never
 * allocates through the malloc it interposes, so it cannot recurse into
 * itself or perturb the program's heap.
 *
 * Shared state: `chunk`, `used` and `total` are protected by `lock`, a
 * spinlock-free pthread mutex taken only on the sampled path when a new
 * bucket is created (rare: once per distinct stack and size).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "collect.h"

#define CHUNK (1u << 20)

static pthread_mutex_t lock HP_FORK_BSS = PTHREAD_MUTEX_INITIALIZER;
static char *chunk;        /* current chunk (lock) */
static size_t used;        /* bytes used in it (lock) */
static _Atomic size_t total; /* bytes mapped so far */

void *
heapprof__arena_alloc(size_t n)
{
	n = (n + 15) & ~(size_t)15;
	pthread_mutex_lock(&lock);
	if (!chunk || CHUNK - used < n) {
		size_t sz = n > CHUNK ? (n + 4095) & ~(size_t)4095 : CHUNK;
		void *c = mmap(NULL, sz, PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c == MAP_FAILED) {
			pthread_mutex_unlock(&lock);
			return NULL;
		}
		atomic_fetch_add_explicit(&total, sz, memory_order_relaxed);
		if (sz > CHUNK) {
			/* A one-off oversized block: keep the current chunk. */
			pthread_mutex_unlock(&lock);
			return c;
		}
		chunk = c;
		used = 0;
	}
	void *p = chunk + used;
	/* The pages this block starts, made present before it is written:
	 * one system call, not a page fault (15-40 us on this VM) each. */
	size_t from = (used + 4095) & ~(size_t)4095;
	used += n;
	if (used > from)
		heapprof__range_populate(chunk + from, used - from);
	pthread_mutex_unlock(&lock);
	return p;
}

size_t
heapprof__arena_bytes(void)
{
	return atomic_load_explicit(&total, memory_order_relaxed);
}

HP_RARE void
heapprof__arena_atfork_prepare(void)
{
	pthread_mutex_lock(&lock);
}

HP_RARE void
heapprof__arena_atfork_release(void)
{
	pthread_mutex_unlock(&lock);
}

HP_RARE void
heapprof__arena_atfork_child(void)
{
	hp_mutex_reset(&lock);
}
