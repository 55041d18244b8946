/*
 * prog_threads.c: threads that allocate, free their own blocks and free
 * blocks allocated by other threads (a ring hand-off), then exit while
 * others go on. Prints the truth as EXPECT lines (per site, all threads).
 * usage: prog_threads [threads] [per_thread]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define MAXT 16
static int nthreads = 4;
static long per = 20000;
static _Atomic(void *) slots[MAXT][64];
static _Atomic long ao, ab, fo, fb;

__attribute__((noinline)) static void *
site_thread_alloc(size_t n)
{
	void *p = malloc(n);
	((char *)p)[0] = 1;
	atomic_fetch_add(&ao, 1);
	atomic_fetch_add(&ab, (long)n);
	return p;
}

static void *
worker(void *arg)
{
	long id = (long)arg;
	for (long i = 0; i < per; i++) {
		size_t n = 32 + (size_t)((i * 7 + id) % 50) * 16;
		void *p = site_thread_alloc(n);
		/* Hand the block to the next thread's slot; free what was
		 * there (allocated by some other thread, most likely). */
		void *old = atomic_exchange(&slots[(id + 1) % nthreads][i % 64], p);
		if (old) {
			atomic_fetch_add(&fo, 1);
			atomic_fetch_add(&fb, (long)((unsigned char *)old)[1] * 16);
			free(old);
		}
		((unsigned char *)p)[1] = (unsigned char)(n / 16);
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	if (argc > 1)
		nthreads = atoi(argv[1]);
	if (argc > 2)
		per = atol(argv[2]);
	if (nthreads < 1 || nthreads > MAXT)
		return 2;
	pthread_t th[MAXT];
	for (long i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)i) != 0)
			return 1;
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	printf("EXPECT site_thread_alloc %ld %ld %ld %ld\n", atomic_load(&ao),
	       atomic_load(&ab), atomic_load(&ao) - atomic_load(&fo),
	       atomic_load(&ab) - atomic_load(&fb));
	return 0;
}
