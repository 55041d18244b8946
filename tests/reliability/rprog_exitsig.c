/*
 * rprog_exitsig: exit() from a signal handler that may have interrupted
 * malloc (rel_exitsig.sh). A common idiom, though not async-signal-safe:
 * without the profiler glibc's exit runs no allocator code and the program
 * ends. A second thread exists, so glibc's malloc takes the arena lock.
 *   rprog_exitsig handler   SIGALRM after 0.2 s of malloc/free churn; its
 *                           handler calls exit(0)
 *   rprog_exitsig normal    the same churn for 0.2 s, then exit(0) from main
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static void
on_alrm(int s)
{
	(void)s;
	exit(0);
}

static void *
idle(void *a)
{
	(void)a;
	for (;;)
		pause();
	return NULL;
}

int
main(int argc, char **argv)
{
	int handler = argc > 1 && !strcmp(argv[1], "handler");
	pthread_t th;
	pthread_create(&th, NULL, idle, NULL);
	if (handler) {
		signal(SIGALRM, on_alrm);
		struct itimerval it = {{0, 0}, {0, 200000}};
		setitimer(ITIMER_REAL, &it, NULL);
	}
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	static void *keep[256];
	for (unsigned i = 0;; i++) {
		unsigned k = (i * 2654435761u) >> 24;
		free(keep[k]);
		keep[k] = malloc(200 + (i % 5000));
		memset(keep[k], 1, 8);
		if (!handler && (i & 1023) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if ((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec - t0.tv_nsec > 200000000L)
				exit(0);
		}
	}
}
