/*
 * prog_busy.c: a host that keeps allocating on two threads (a ring of live
 * blocks of many sizes) until the file STOP exists, then sorts a
 * deterministic array through malloc'd nodes and prints its checksum: the
 * output must not depend on the profiler. usage: prog_busy STOP
 */
#include <pthread.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *stop;
static _Atomic int done;

static void *
churn(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	void *ring[256] = {0};
	for (unsigned long i = 0; !atomic_load(&done); i++) {
		seed = seed * 1103515245u + 12345u;
		size_t n = 16 + (seed >> 8) % 8192;
		free(ring[i % 256]);
		ring[i % 256] = malloc(n);
		memset(ring[i % 256], (int)i, 16);
		if (i % 4096 == 0 && access(stop, F_OK) == 0)
			atomic_store(&done, 1);
	}
	for (int i = 0; i < 256; i++)
		free(ring[i]);
	return NULL;
}

static int
cmp(const void *a, const void *b)
{
	long x = **(long *const *)a, y = **(long *const *)b;
	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	stop = argv[1];
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, churn, (void *)(i + 1));
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	long **v = malloc(100000 * sizeof(*v));
	unsigned s = 7;
	for (int i = 0; i < 100000; i++) {
		v[i] = malloc(sizeof(long));
		s = s * 1664525u + 1013904223u;
		*v[i] = (long)(s >> 4);
	}
	qsort(v, 100000, sizeof(*v), cmp);
	unsigned long sum = 0;
	for (int i = 0; i < 100000; i++)
		sum = sum * 31 + (unsigned long)*v[i];
	printf("checksum %lu\n", sum);
	return 0;
}
