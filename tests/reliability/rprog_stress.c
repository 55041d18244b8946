/*
 * rprog_stress.c: mimalloc test-stress.c's pattern (plan T9, T17): rounds
 * of threads that allocate blocks carrying a cookie, keep some, hand 25%
 * through a shared 1000-slot atomic transfer array (so blocks are freed by
 * other threads, and survive their allocating thread), realloc some, and
 * check every cookie before freeing. Threads are recreated each round.
 * The blocks left in the transfer array at the end stay live: the program
 * prints them, per allocating site, as EXPECT lines for profsum.py (exact
 * at rate 1 even with dumps running concurrently).
 *
 * usage: rprog_stress THREADS OPS_PER_THREAD ROUNDS [storm]
 *   storm: a child process sends SIGUSR2 (run with HEAPPROF_SIGNAL=USR2)
 *   1000 times a second until this process exits (plan T17).
 * Prints "BAD ..." and exits 1 on a corrupted block.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#define NSLOTS 1000
#define NKEEP 64
#define NSITES 3

/* Block layout: header {cookie, size, site}, payload, cookie at the end. */
typedef struct blk {
	uint64_t cookie;
	size_t size; /* whole block, as asked of malloc */
	int site;
} blk;

static _Atomic(blk *) slots[NSLOTS];
static _Atomic long ao[NSITES], ab[NSITES], fo[NSITES], fb[NSITES];
static long ops = 10000;
static _Atomic int bad;

static uint64_t
cookie_of(const blk *b)
{
	return ((uintptr_t)b * 0x9e3779b97f4a7c15ULL) ^ b->size;
}

static void
seal(blk *b, size_t size, int site)
{
	b->size = size;
	b->site = site;
	b->cookie = cookie_of(b);
	memcpy((char *)b + size - 8, &b->cookie, 8);
	atomic_fetch_add(&ao[site], 1);
	atomic_fetch_add(&ab[site], (long)size);
}

static void
verify(blk *b)
{
	uint64_t tail;
	memcpy(&tail, (char *)b + b->size - 8, 8);
	if (b->cookie != cookie_of(b) || tail != b->cookie) {
		if (!atomic_exchange(&bad, 1))
			printf("BAD cookie mismatch at a block of %zu bytes\n", b->size);
	}
}

static void
release(blk *b)
{
	if (!b)
		return;
	verify(b);
	atomic_fetch_add(&fo[b->site], 1);
	atomic_fetch_add(&fb[b->site], (long)b->size);
	free(b);
}

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static size_t
pick_size(uint64_t *s)
{
	uint64_t r = rnd(s);
	size_t n = 32 + (r >> 8) % 480;
	if (r % 100 == 0)
		n = 4096 + (r >> 16) % 60000;
	return n & ~(size_t)7;
}

__attribute__((noinline)) static blk *
site_stress_alloc(size_t n)
{
	blk *b = malloc(n);
	if (b)
		seal(b, n, 0);
	return b;
}

__attribute__((noinline)) static blk *
site_stress_calloc(size_t n)
{
	blk *b = calloc(1, n);
	if (b)
		seal(b, n, 1);
	return b;
}

__attribute__((noinline)) static blk *
site_stress_realloc(blk *b, size_t n)
{
	verify(b);
	int site = b->site;
	size_t old = b->size;
	blk *c = realloc(b, n);
	if (!c)
		return NULL;
	atomic_fetch_add(&fo[site], 1);
	atomic_fetch_add(&fb[site], (long)old);
	seal(c, n, 2);
	return c;
}

static void *
worker(void *arg)
{
	uint64_t s = (uintptr_t)arg * 2654435761u + 1;
	blk *keep[NKEEP] = {0};
	for (long i = 0; i < ops; i++) {
		uint64_t r = rnd(&s) % 100;
		int k = (int)(rnd(&s) % NKEEP);
		if (r < 50) {
			release(keep[k]);
			keep[k] = r < 40 ? site_stress_alloc(pick_size(&s))
			                 : site_stress_calloc(pick_size(&s));
		} else if (r < 75) {
			/* hand a block over: take whatever is in the slot */
			blk *mine = keep[k];
			keep[k] = NULL;
			if (!mine)
				mine = site_stress_alloc(pick_size(&s));
			blk *theirs = atomic_exchange(&slots[rnd(&s) % NSLOTS], mine);
			release(theirs);
		} else if (r < 85) {
			if (keep[k])
				keep[k] = site_stress_realloc(keep[k], pick_size(&s));
		} else {
			release(keep[k]);
			keep[k] = NULL;
		}
	}
	for (int k = 0; k < NKEEP; k++)
		release(keep[k]);
	return NULL;
}

static pid_t storm_pid;

static void
start_storm(void)
{
	pid_t parent = getpid();
	storm_pid = fork();
	if (storm_pid == 0) {
		struct timespec ms = {0, 1000000};
		while (getppid() == parent) {
			if (kill(parent, SIGUSR2) != 0)
				_exit(0);
			nanosleep(&ms, NULL);
		}
		_exit(0);
	}
}

int
main(int argc, char **argv)
{
	int nthreads = argc > 1 ? atoi(argv[1]) : 8;
	ops = argc > 2 ? atol(argv[2]) : 10000;
	int rounds = argc > 3 ? atoi(argv[3]) : 3;
	if (argc > 4 && !strcmp(argv[4], "storm"))
		start_storm();
	if (nthreads > 64)
		nthreads = 64;
	for (int r = 0; r < rounds; r++) {
		pthread_t th[64];
		for (int i = 0; i < nthreads; i++)
			if (pthread_create(&th[i], NULL, worker,
			                   (void *)(uintptr_t)(r * 64 + i + 1)) != 0) {
				printf("BAD pthread_create\n");
				return 1;
			}
		for (int i = 0; i < nthreads; i++)
			pthread_join(th[i], NULL);
	}
	if (storm_pid > 0) {
		kill(storm_pid, SIGKILL);
		waitpid(storm_pid, NULL, 0);
	}
	long live = 0;
	for (int i = 0; i < NSLOTS; i++) {
		blk *b = atomic_load(&slots[i]);
		if (b) {
			verify(b);
			live++;
		}
	}
	static const char *names[NSITES] = {"site_stress_alloc",
	                                    "site_stress_calloc",
	                                    "site_stress_realloc"};
	for (int i = 0; i < NSITES; i++)
		printf("EXPECT %s %ld %ld %ld %ld\n", names[i], ao[i], ab[i],
		       ao[i] - fo[i], ab[i] - fb[i]);
	printf("live %ld bad %d\n", live, atomic_load(&bad));
	return atomic_load(&bad) ? 1 : 0;
}
