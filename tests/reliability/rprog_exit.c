/*
 * rprog_exit.c: ways a process ends under the profiler (plan T23):
 *
 *   thread     a non-main thread calls exit(3) while 4 threads allocate
 *   atexit     atexit handlers (registered after the profiler's) and a
 *              destructor that allocate and free; 4 threads keep
 *              allocating during exit(); exit status 4
 *   quick      quick_exit(5) with an at_quick_exit handler that allocates
 *   _exit      _exit(6) while threads allocate
 *   main       return 7 from main while threads allocate
 * Blocks allocated at site_exit_keep stay live (EXPECT line). The script
 * checks the exit status, the absence of a hang, and the profile (one in
 * every mode: quick_exit and _exit write it too).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *keep[50];

__attribute__((noinline)) static void
site_exit_keep(void)
{
	for (int i = 0; i < 50; i++) {
		keep[i] = malloc(2000);
		memset(keep[i], 1, 2000);
	}
}

static void *
churn(void *arg)
{
	uint64_t s = (uintptr_t)arg + 7;
	void *slot[64] = {0};
	for (;;) {
		s = s * 6364136223846793005ULL + 1;
		int k = (int)(s >> 58);
		free(slot[k]);
		slot[k] = malloc((s >> 30) % 3000);
	}
	return NULL;
}

static void
at_exit_alloc(void)
{
	void *p = malloc(12345);
	memset(p, 2, 12345);
	free(p);
	p = calloc(10, 100);
	free(p);
}

__attribute__((destructor)) static void
dtor_alloc(void)
{
	void *p = malloc(777);
	free(p);
}

static void *
exit_from_thread(void *arg)
{
	(void)arg;
	struct timespec ms = {0, 50 * 1000000};
	nanosleep(&ms, NULL);
	exit(3);
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "main";
	site_exit_keep();
	printf("EXPECT site_exit_keep 50 100000 50 100000\n");
	fflush(stdout);
	pthread_t th;
	for (int i = 0; i < 4; i++)
		pthread_create(&th, NULL, churn, (void *)(uintptr_t)i);
	struct timespec ms = {0, 100 * 1000000};
	if (!strcmp(mode, "thread")) {
		pthread_create(&th, NULL, exit_from_thread, NULL);
		for (;;)
			pause();
	}
	if (!strcmp(mode, "atexit")) {
		atexit(at_exit_alloc);
		nanosleep(&ms, NULL);
		exit(4);
	}
	if (!strcmp(mode, "quick")) {
		at_quick_exit(at_exit_alloc);
		nanosleep(&ms, NULL);
		quick_exit(5);
	}
	if (!strcmp(mode, "_exit")) {
		nanosleep(&ms, NULL);
		_exit(6);
	}
	nanosleep(&ms, NULL);
	return 7;
}
