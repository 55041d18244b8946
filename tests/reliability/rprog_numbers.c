/*
 * rprog_numbers.c: program patterns whose profile numbers were wrong
 * (issue 13: defects 2, 10, 11 and the fork RNG). Each mode prints the
 * truth as "EXPECT site ao ab io ib" lines (tests/integration/profsum.py)
 * and leaves its blocks live for the exit dump. Built plain (run under
 * LD_PRELOAD) and linked with libheapprof.a (rprog_numbers_linked).
 *
 *   threads N          N short threads, 8 at a time, each keeping 16 B
 *   rates R2 [R3]      100 MB live (1600 x 64 KiB), then
 *                      heapprof_set_sample_rate(R2); with R3, then set(R3)
 *                      and another 100 MB at site_after
 *   zero N             N live malloc(0) blocks
 *   fork N             forks two children that each allocate N blocks of
 *                      distinct sizes (1000 + 8 i) at site_forked and exit
 *                      (each writes its own exit profile)
 *   errno              at rate 1: a second free() of a sampled block makes
 *                      the profiler warn (stderr is /dev/full or closed):
 *                      free() must leave errno as it was
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Weak: resolved to the preloaded library's or the linked one's. */
extern int heapprof_set_sample_rate(uint64_t bytes) __attribute__((weak));

static void **keep;

__attribute__((noinline)) static void *
site_thread(void)
{
	return malloc(16);
}

static void *
thread_main(void *arg)
{
	void **slot = arg;
	*slot = site_thread();
	return NULL;
}

static int
run_threads(long n)
{
	keep = calloc((size_t)n, sizeof(*keep));
	if (!keep)
		return 1;
	for (long i = 0; i < n; i += 8) {
		pthread_t th[8];
		int k = 0;
		for (; k < 8 && i + k < n; k++)
			if (pthread_create(&th[k], NULL, thread_main, &keep[i + k])) {
				perror("pthread_create");
				return 1;
			}
		for (int j = 0; j < k; j++)
			pthread_join(th[j], NULL);
	}
	for (long i = 0; i < n; i++)
		if (!keep[i])
			return 1;
	printf("EXPECT site_thread %ld %ld %ld %ld\n", n, 16 * n, n, 16 * n);
	return 0;
}

#define BLOCKS 1600
#define BLOCK (64 * 1024)

__attribute__((noinline)) static void *
site_big(void)
{
	return malloc(BLOCK);
}

__attribute__((noinline)) static void *
site_after(void)
{
	return malloc(BLOCK);
}

static int
set_rate(long r)
{
	if (!heapprof_set_sample_rate) {
		fprintf(stderr, "heapprof_set_sample_rate not found\n");
		return 1;
	}
	return heapprof_set_sample_rate((uint64_t)r) != 0;
}

__attribute__((noinline)) static void *
site_off(void)
{
	return malloc(BLOCK);
}

static int
run_rates(long r2, long r3)
{
	static void *big[BLOCKS], *after[BLOCKS];
	for (int i = 0; i < BLOCKS; i++) {
		big[i] = site_big();
		memset(big[i], 1, 64);
	}
	if (set_rate(r2))
		return 1;
	long b = BLOCKS, s = (long)BLOCKS * BLOCK;
	printf("EXPECT site_big %ld %ld %ld %ld\n", b, s, b, s);
	if (r3 < 0)
		return 0;
	/* 10 MB allocated and freed at rate R2 (0: the distance drawn before
	 * runs out, the last sample at the old rate, and the thread draws
	 * its next while sampling is off). */
	for (int i = 0; i < BLOCKS / 10; i++)
		free(site_off());
	if (set_rate(r3))
		return 1;
	for (int i = 0; i < BLOCKS; i++) {
		after[i] = site_after();
		memset(after[i], 1, 64);
	}
	printf("EXPECT site_after %ld %ld %ld %ld\n", b, s, b, s);
	return 0;
}

__attribute__((noinline)) static void *
site_zero(void)
{
	return malloc(0);
}

static int
run_zero(long n)
{
	keep = calloc((size_t)n, sizeof(*keep));
	if (!keep)
		return 1;
	for (long i = 0; i < n; i++)
		if (!(keep[i] = site_zero()))
			return 1;
	printf("EXPECT site_zero %ld 0 %ld 0\n", n, n);
	return 0;
}

__attribute__((noinline)) static void *
site_forked(size_t n)
{
	return malloc(n);
}

static int
run_fork(long n)
{
	/* The parent has drawn its distance and seeded its generator. */
	for (int i = 0; i < 1000; i++)
		free(site_forked(4096));
	fflush(stdout);
	pid_t pid[2];
	for (int c = 0; c < 2; c++) {
		pid[c] = fork();
		if (pid[c] < 0)
			return 1;
		if (pid[c] == 0) {
			void **k = calloc((size_t)n, sizeof(*k));
			for (long i = 0; k && i < n; i++)
				k[i] = site_forked(1000 + 8 * (size_t)i);
			exit(0);
		}
	}
	int bad = 0;
	for (int c = 0; c < 2; c++) {
		int st;
		if (waitpid(pid[c], &st, 0) != pid[c] || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			bad = 1;
	}
	printf("children %d %d\n", (int)pid[0], (int)pid[1]);
	return bad;
}

static int
run_errno(void)
{
	/* Through a volatile pointer: gcc assumes free() keeps errno and
	 * would read it before the call; and the second free is deliberate
	 * (-Wuse-after-free). */
	void (*volatile release)(void *) = free;
	char *p = malloc(100);
	if (!p)
		return 1;
	release(p);
	errno = 4242;
	release(p); /* the profiler's range: ignored, with a warning */
	int e = errno;
	printf("errno %s %d\n", e == 4242 ? "kept" : "changed", e);
	return e != 4242;
}

int
main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "threads"))
		return run_threads(atol(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "rates"))
		return run_rates(atol(argv[2]), argc >= 4 ? atol(argv[3]) : -1);
	if (argc >= 3 && !strcmp(argv[1], "zero"))
		return run_zero(atol(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "fork"))
		return run_fork(atol(argv[2]));
	if (argc >= 2 && !strcmp(argv[1], "errno"))
		return run_errno();
	fprintf(stderr, "usage: rprog_numbers threads N | rates R2 [R3] | "
	                "zero N | fork N | errno\n");
	return 2;
}
