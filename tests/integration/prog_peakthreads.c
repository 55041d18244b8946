/* prog_peakthreads: threads that allocate and exit, whose blocks another
 * thread frees, between two spikes (issue 31.1, HEAPPROF_PEAK_EXACT=1).
 * main: a 48 MiB spike, freed; 400 threads each allocate 240 KiB in 4 KiB
 * blocks (less than the exact count's step, so nothing is flushed before
 * the thread ends) and exit, and main frees them; then a 64 MiB spike.
 * The peak is the second spike: a count that lost what each thread had
 * not flushed at its exit (96 MB in all) would stay below the first
 * spike's high and choose it. Prints "peak BYTES" (the second spike). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

enum { PER = 60, THREADS = 400 };

static void *
work(void *a)
{
	void **v = a;
	for (int i = 0; i < PER; i++)
		v[i] = malloc(4096);
	return NULL;
}

static void
spike(size_t mb)
{
	size_t n = mb * 256;
	void **v = malloc(n * sizeof(*v));
	if (!v)
		exit(1);
	for (size_t i = 0; i < n; i++) {
		v[i] = malloc(4096);
		if (!v[i])
			exit(1);
		*(char *)v[i] = 1;
	}
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int
main(void)
{
	static void *v[PER];
	spike(48);
	for (int t = 0; t < THREADS; t++) {
		pthread_t th;
		if (pthread_create(&th, NULL, work, v) != 0)
			return 1;
		pthread_join(th, NULL);
		for (int i = 0; i < PER; i++)
			free(v[i]);
	}
	spike(64);
	printf("peak %zu\n", (size_t)64 << 20);
	return 0;
}
