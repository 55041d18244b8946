/*
 * rprog_cancel.c: pthread_cancel and the profiler. malloc and free are not
 * cancellation points (POSIX), so a thread with a cancel request pending
 * that only allocates must not be cancelled inside them, even when a
 * periodic dump runs in its malloc (the dump's write(2) is one); and a
 * thread cancelled while it calls heapprof_dump_file() must not leave the
 * profiler's dump lock held (every later dump, the exit one included,
 * would wait for it).
 *   rprog_cancel malloc   a worker holding a mutex allocates for 3 s with
 *                         a cancel pending, then unlocks and tests for it:
 *                         "mutex=free" when it was cancelled there
 *   rprog_cancel dump     a worker dumps in a loop and is cancelled; then
 *                         main dumps (heapprof_dump_file via dlsym; "dump
 *                         n/a" without the profiler); the worker spends
 *                         nearly all its time inside the dump
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile int started;
static int (*dump_file)(const char *);
static const char *dump_path;

static double
now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *
allocator(void *a)
{
	(void)a;
	pthread_mutex_lock(&m);
	started = 1;
	double end = now() + 3.0;
	void *keep[64] = {0};
	unsigned i = 0;
	while (now() < end) {
		free(keep[i % 64]);
		keep[i % 64] = malloc(100 + i % 5000);
		i++;
	}
	for (int k = 0; k < 64; k++)
		free(keep[k]);
	pthread_mutex_unlock(&m);
	pthread_testcancel();
	return NULL;
}

static void *
dumper(void *a)
{
	(void)a;
	for (;;) {
		started = 1;
		dump_file(dump_path);
		pthread_testcancel(); /* where the cancel belongs */
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	pthread_t t;
	void *r;
	if (!strcmp(argv[1], "malloc")) {
		pthread_create(&t, NULL, allocator, NULL);
		while (!started)
			usleep(1000);
		pthread_cancel(t);
		pthread_join(t, &r);
		int rc = pthread_mutex_trylock(&m);
		printf("cancelled=%d mutex=%s\n", r == PTHREAD_CANCELED,
		       rc == 0 ? "free" : "held (cancelled inside malloc)");
		return rc == 0 ? 0 : 1;
	}
	if (!strcmp(argv[1], "dump") && argc == 3) {
		*(void **)&dump_file = dlsym(RTLD_DEFAULT, "heapprof_dump_file");
		if (!dump_file) {
			printf("dump n/a\n");
			return 0;
		}
		dump_path = argv[2];
		void *keep[1000];
		for (int i = 0; i < 1000; i++)
			keep[i] = malloc(1000 + (size_t)i);
		pthread_create(&t, NULL, dumper, NULL);
		while (!started)
			usleep(1000);
		usleep(50000);
		pthread_cancel(t);
		pthread_join(t, &r);
		int rc = dump_file(dump_path);
		printf("cancelled=%d dump after it: %d\n", r == PTHREAD_CANCELED, rc);
		for (int i = 0; i < 1000; i++)
			free(keep[i]);
		return rc == 0 ? 0 : 1;
	}
	return 2;
}
