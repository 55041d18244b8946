/*
 * rprog_mallocinit.c: threads whose first call into glibc's malloc is
 * their process's first. glibc initialises its malloc lazily, at the first
 * call (ptmalloc_init), and that is not thread-safe: the initialising
 * thread is attached to the main arena (thread_arena = &main_arena)
 * without a count (main_arena.attached_threads starts at 1, for the main
 * thread), so two threads that both see it uninitialised are both
 * attached and the second to exit aborts: "malloc assertion failure in
 * __malloc_arena_thread_freeres: a->attached_threads > 0". glibc counts
 * on its malloc being called before a second thread exists
 * (pthread_create allocates). Under the profiler at rate 1 nothing
 * reaches glibc before main, and the first calls came from worker threads
 * at once when a fork fence made the range refuse (rel.forkrange.children
 * died so in CI once). The profiler initialises glibc's malloc in its
 * constructor.
 *
 *   rprog_mallocinit first     one thread's first call, next allocator
 *                              directly: prints "heap 1" when its block
 *                              came from the main arena's brk heap (the
 *                              thread ran the initialisation), else
 *                              "heap 0"
 *   rprog_mallocinit race N    N threads released together make that
 *                              first call, then exit (aborts when two
 *                              raced through the initialisation); prints
 *                              "race ok"
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* glibc's own entry points: what the profiler forwards an allocation to. */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

static void *first_block;
static _Atomic int go, ready;

static void *
first(void *a)
{
	(void)a;
	first_block = __libc_malloc(64);
	return NULL;
}

static void *
racer(void *a)
{
	(void)a;
	atomic_fetch_add(&ready, 1);
	while (!atomic_load(&go))
		;
	__libc_free(__libc_malloc(100));
	return NULL;
}

/* Whether p lies in the [heap] mapping (the brk heap: the main arena's). */
static int
in_brk_heap(const void *p)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return -1;
	char line[512];
	int r = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (strstr(line, "[heap]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2 &&
		    (uintptr_t)p >= lo && (uintptr_t)p < hi)
			r = 1;
	}
	fclose(f);
	return r;
}

int
main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "first")) {
		pthread_t t;
		if (pthread_create(&t, NULL, first, NULL) != 0)
			return 2;
		pthread_join(t, NULL);
		if (!first_block)
			return 2;
		printf("heap %d\n", in_brk_heap(first_block));
		__libc_free(first_block);
		return 0;
	}
	if (argc > 2 && !strcmp(argv[1], "race")) {
		int n = atoi(argv[2]);
		pthread_t t[64];
		if (n < 2 || n > 64)
			return 2;
		for (int i = 0; i < n; i++)
			if (pthread_create(&t[i], NULL, racer, NULL) != 0)
				return 2;
		while (atomic_load(&ready) < n)
			;
		atomic_store(&go, 1);
		for (int i = 0; i < n; i++)
			pthread_join(t[i], NULL);
		printf("race ok\n");
		return 0;
	}
	fprintf(stderr, "usage: rprog_mallocinit first | race N\n");
	return 2;
}
