/*
 * test_collect_fork.c: the bucket table across fork (issue 13's "bucket
 * half-inserted at fork"). Two threads create buckets for new stacks while
 * the main thread forks repeatedly, running the fork handlers the way
 * init.c does; each child checks that the table it inherited is whole:
 * every bucket listed once, ids 0..count-1, contents written, each bucket
 * found again by its key, every insert the threads had finished present.
 * Linked like test_collect_capture (no interpose.c, no init.c).
 */
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collect.h"
#include "test.h"

__thread hp_tls heapprof__tls __attribute__((tls_model("initial-exec")));
hp_config heapprof__cfg = {.rate = 524288, .depth = HP_MAX_DEPTH};
/* init.c is not linked: warnings are dropped. */
void
heapprof__warn(const char *msg)
{
	(void)msg;
}

#define DEPTH 8
#define PER_THREAD 200000

static _Atomic long done[2]; /* inserts each thread has finished */
static _Atomic int stop;

static void
key(int k, long i, uint64_t *st)
{
	for (int d = 0; d < DEPTH; d++)
		st[d] = ((uint64_t)(k + 1) << 40) | ((uint64_t)i << 8) |
		        (uint64_t)d;
}

static void *
inserter(void *arg)
{
	int k = (int)(intptr_t)arg;
	uint64_t st[DEPTH];
	for (long i = 0; i < PER_THREAD && !atomic_load(&stop); i++) {
		key(k, i, st);
		/* NULL while a fork is being prepared: try again. */
		while (!heapprof__bucket_get(st, DEPTH, 64, 4096, NULL))
			if (atomic_load(&stop))
				return NULL;
		atomic_store(&done[k], i + 1);
	}
	return NULL;
}

/* In the child: 0 if the table is whole, else a code saying what broke.
 * Only the newest buckets are checked (the ones a fork can catch half
 * made), so a child costs little whatever the table's size. */
#define NEWEST 2048
static int
child_check(void)
{
	uint64_t n = heapprof__bucket_count();
	uint64_t lo = n > NEWEST ? n - NEWEST : 0;
	static hp_bucket *byid[NEWEST];
	uint64_t want = n;
	for (hp_bucket *b = heapprof__bucket_list(); b && want > lo;
	     b = b->all_next) {
		if (b->depth != DEPTH || b->rate != 4096 || b->size != 64)
			return 3; /* a bucket whose contents were not written */
		if (b->id != want - 1)
			return 4; /* ids not n-1, n-2, ... from the newest */
		byid[b->id - lo] = b;
		want--;
	}
	if (want != lo)
		return 5; /* counted but not listed */
	for (uint64_t i = lo; i < n; i++) {
		hp_bucket *b = byid[i - lo];
		if (heapprof__bucket_get(b->stack, DEPTH, 64, 4096, NULL) != b)
			return 6; /* listed, not in its hash chain */
	}
	/* The last inserts each thread finished, and the one it was making:
	 * found, and listed (a bucket made here gets id n or more). */
	uint64_t st[DEPTH];
	for (int k = 0; k < 2; k++) {
		long d = atomic_load(&done[k]);
		for (long i = d > 64 ? d - 64 : 0; i <= d; i++) {
			key(k, i, st);
			uint64_t before = heapprof__bucket_count();
			hp_bucket *b = heapprof__bucket_get(st, DEPTH, 64, 4096, NULL);
			if (!b)
				return 7;
			if (heapprof__bucket_count() != before) {
				if (i < d)
					return 7; /* a finished insert lost */
				continue; /* the one in flight was not chained */
			}
			/* Found: it must be counted and listed under its id. */
			if (b->id >= n || (b->id >= lo && byid[b->id - lo] != b))
				return 2; /* chained, not listed or not counted */
		}
	}
	/* The re-initialised lock works: a new bucket gets the next id. */
	key(5, 0, st);
	uint64_t m = heapprof__bucket_count();
	hp_bucket *nb = heapprof__bucket_get(st, DEPTH, 64, 4096, NULL);
	if (!nb || nb->id != m || heapprof__bucket_count() != m + 1)
		return 8;
	return 0;
}

TEST(buckets_whole_in_fork_children)
{
	REQUIRE_OK(heapprof__bucket_init());
	pthread_t th[2];
	for (int k = 0; k < 2; k++)
		REQUIRE(pthread_create(&th[k], NULL, inserter,
		                       (void *)(intptr_t)k) == 0);
	/* Forks while the inserts run (at least 20 of them, whatever the
	 * machine's load), then up to 100 in all on the finished table. */
	int forks = 0, during = 0, bad = 0, codes[10] = {0};
	for (;;) {
		int running = atomic_load(&done[0]) < PER_THREAD ||
		              atomic_load(&done[1]) < PER_THREAD;
		if (forks >= 300 || (!running && forks >= 100))
			break;
		during += running;
		heapprof__bucket_atfork_prepare();
		pid_t pid = fork();
		if (pid == 0) {
			heapprof__arena_atfork_child();
			heapprof__bucket_atfork_child();
			_exit(child_check());
		}
		heapprof__bucket_atfork_release();
		if (pid < 0)
			break;
		int st;
		waitpid(pid, &st, 0);
		forks++;
		int code = WIFEXITED(st) ? WEXITSTATUS(st) : 10;
		if (code) {
			bad++;
			codes[code < 10 ? code : 9]++;
		}
	}
	atomic_store(&stop, 1);
	for (int k = 0; k < 2; k++)
		pthread_join(th[k], NULL);
	printf("  %d forks, %d during %ld + %ld inserts; %d children saw a "
	       "broken table (codes 2-8: %d %d %d %d %d %d %d)\n",
	       forks, during, atomic_load(&done[0]), atomic_load(&done[1]), bad,
	       codes[2], codes[3], codes[4], codes[5], codes[6], codes[7],
	       codes[8]);
	CHECK(during >= 20);
	CHECK_EQ(bad, 0);
}

int
main(void)
{
	RUN(buckets_whole_in_fork_children);
	TEST_MAIN_END();
}
