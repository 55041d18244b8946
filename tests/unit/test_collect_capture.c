/*
 * test_collect_capture.c: unit tests of the capture modules that run
 * inside malloc: the sampler (sampler.c), the sampled-object range
 * (range.c), the bucket table (bucket.c, arena.c) and stack capture
 * (stack.c). Linked without interpose.c and init.c: this file defines the
 * globals they read.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
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

TEST(sampler_exponential_law)
{
	/* Distances are exponential with mean R: mean R, sd R, and
	 * P(X > kR) = e^-k. 200k draws: the mean's sd is R/447. */
	hp_tls t = {0};
	const int n = 200000;
	const double R = 524288;
	double sum = 0, sum2 = 0;
	int over1 = 0, over3 = 0;
	for (int i = 0; i < n; i++) {
		double x = (double)heapprof__sampler_next(&t, (int64_t)R);
		sum += x;
		sum2 += x * x;
		over1 += x > R;
		over3 += x > 3 * R;
	}
	double mean = sum / n, sd = sqrt(sum2 / n - mean * mean);
	CHECK(fabs(mean / R - 1) < 0.01);
	CHECK(fabs(sd / R - 1) < 0.02);
	CHECK(fabs((double)over1 / n - exp(-1)) < 0.005);
	CHECK(fabs((double)over3 / n - exp(-3)) < 0.003);
	CHECK_EQ(heapprof__sampler_next(&t, 1), 1);
	CHECK_EQ(heapprof__sampler_next(&t, 0), (int64_t)1 << 20);
}

TEST(sampler_probability_per_allocation)
{
	/* The counter as interpose.c runs it: an allocation of S bytes is
	 * sampled with probability 1 - exp(-S/R), whatever came before. */
	hp_tls t = {0};
	const int64_t R = 65536;
	const int64_t sizes[3] = {R / 4, R, 3 * R};
	for (int k = 0; k < 3; k++) {
		int64_t S = sizes[k];
		long sampled = 0, n = 200000;
		t.left = heapprof__sampler_next(&t, R);
		for (long i = 0; i < n; i++) {
			if ((t.left -= S) <= 0) {
				sampled++;
				t.left = heapprof__sampler_next(&t, R);
			}
		}
		double p = 1 - exp(-(double)S / (double)R);
		double got = (double)sampled / (double)n;
		if (fabs(got - p) > 4 * sqrt(p * (1 - p) / (double)n) + 1e-4)
			T_FAIL("S=%lld: sampled %.4f, expected %.4f", (long long)S, got, p);
	}
}

TEST(range_alloc_free_reuse)
{
	REQUIRE_OK(heapprof__range_init());
	CHECK(heapprof__range_span > 0);
	size_t aligns[] = {16, 64, 128, 4096, 65536};
	for (size_t a = 0; a < HP_ARRAY_LEN(aligns); a++) {
		for (size_t size = 0; size < 300000; size = size * 3 + 7) {
			char *p = heapprof__range_alloc(size, aligns[a], true);
			REQUIRE(p != NULL);
			CHECK(heapprof__range_owns(p));
			CHECK((uintptr_t)p % aligns[a] == 0);
			hp_obj *o = heapprof__range_obj(p);
			CHECK_EQ(o->magic, HP_OBJ_MAGIC);
			CHECK_EQ(o->size, size);
			for (size_t i = 0; i < size; i += 997)
				if (p[i]) {
					T_FAIL("not zeroed at %zu", i);
					break;
				}
			memset(p, 0x5a, size);
			heapprof__range_free(o);
			CHECK(o->magic != HP_OBJ_MAGIC);
		}
	}
	/* A freed run is reused, and zeroed again when asked. */
	char *p = heapprof__range_alloc(100, 16, false);
	REQUIRE(p);
	memset(p, 1, 100);
	heapprof__range_free(heapprof__range_obj(p));
	char *q = heapprof__range_alloc(100, 16, true);
	CHECK(q == p);
	CHECK(q && q[0] == 0 && q[99] == 0);
	uint64_t live, mapped, exh;
	heapprof__range_stats(&live, &mapped, &exh);
	CHECK_EQ(live, 1);
	CHECK(mapped > 0);
	heapprof__range_free(heapprof__range_obj(q));
	CHECK(!heapprof__range_owns(&live));
	CHECK(!heapprof__range_owns(NULL));
	/* Too large for the range: refused, not crashed. */
	CHECK(heapprof__range_alloc((size_t)PTRDIFF_MAX + 1, 16, false) == NULL);
	CHECK(heapprof__range_alloc(SIZE_MAX - 8, 16, false) == NULL);
}

TEST(range_small_objects_share_slabs)
{
	REQUIRE_OK(heapprof__range_init());
	/* 1000 live 64-byte samples take 128-byte slots: about 128 KB of
	 * the range, not 1000 pages. */
	static char *p[1000];
	uint64_t live0, mapped0, exh;
	heapprof__range_stats(&live0, &mapped0, &exh);
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < 1000; i++) {
		p[i] = heapprof__range_alloc(64, 16, i % 2);
		REQUIRE(p[i]);
		CHECK((uintptr_t)p[i] % 64 == 0);
		CHECK_EQ(heapprof__range_obj(p[i])->size, 64);
		memset(p[i], i & 0xff, 64);
		if ((uintptr_t)p[i] < lo)
			lo = (uintptr_t)p[i];
		if ((uintptr_t)p[i] > hi)
			hi = (uintptr_t)p[i];
	}
	for (int i = 0; i < 1000; i++)
		for (int k = 0; k < 64; k++)
			if ((unsigned char)p[i][k] != (i & 0xff)) {
				T_FAIL("slot %d overwritten", i);
				break;
			}
	/* Distinct pages holding them: 1000 * 128 B is 32 pages, plus at
	 * most the slack of two slabs. */
	int pages = 0;
	for (int i = 0; i < 1000; i++) {
		int seen = 0;
		for (int k = 0; k < i && !seen; k++)
			seen = ((uintptr_t)p[k] >> 12) == ((uintptr_t)p[i] >> 12);
		pages += !seen;
	}
	CHECK(pages <= 32 + 32);
	(void)lo;
	(void)hi;
	uint64_t live, mapped;
	heapprof__range_stats(&live, &mapped, &exh);
	CHECK_EQ(live, live0 + 1000);
	for (int i = 0; i < 1000; i++)
		heapprof__range_free(heapprof__range_obj(p[i]));
	heapprof__range_stats(&live, &mapped, &exh);
	CHECK_EQ(live, live0);
	/* A freed slot comes back, zeroed on request; sizes in different
	 * classes never share a slot. */
	char *a = heapprof__range_alloc(1000, 16, false);
	char *b = heapprof__range_alloc(100, 16, false);
	REQUIRE(a && b);
	CHECK(heapprof__range_obj(a)->run_class != heapprof__range_obj(b)->run_class);
	memset(b, 7, 100);
	heapprof__range_free(heapprof__range_obj(b));
	char *c = heapprof__range_alloc(90, 16, true);
	CHECK(c == b);
	CHECK(c && c[0] == 0 && c[89] == 0);
	heapprof__range_free(heapprof__range_obj(a));
	heapprof__range_free(heapprof__range_obj(c));
}

TEST(range_exact_runs_coalesce)
{
	REQUIRE_OK(heapprof__range_init());
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	/* Three 3 MiB blocks: runs of exactly the pages they need, one
	 * after the other. */
	size_t sz = ((size_t)3 << 20) - 64 - 16;
	char *a = heapprof__range_alloc(sz, 16, false);
	char *b = heapprof__range_alloc(sz, 16, false);
	char *c = heapprof__range_alloc(sz, 16, false);
	REQUIRE(a && b && c);
	CHECK(heapprof__range_usable(heapprof__range_obj(a)) >= sz);
	CHECK(heapprof__range_usable(heapprof__range_obj(a)) < sz + pg + 64);
	memset(a, 1, sz);
	memset(c, 3, sz);
	/* a and b freed: one free extent of both, which a block of twice
	 * the size fills exactly (power-of-two runs never merged: the block
	 * came from fresh space). */
	heapprof__range_free(heapprof__range_obj(b));
	heapprof__range_free(heapprof__range_obj(a));
	char *d = heapprof__range_alloc(2 * ((size_t)3 << 20) - 64 - 16, 16, true);
	REQUIRE(d);
	CHECK(d == a);
	CHECK(d[0] == 0 && d[sz] == 0); /* freed runs come back zeroed */
	CHECK(c[0] == 3 && c[sz - 1] == 3);
	heapprof__range_free(heapprof__range_obj(d));
	heapprof__range_free(heapprof__range_obj(c));
	/* Larger than the reservation so far: the range grows for it. */
	size_t big = (size_t)300 << 20;
	char *e = heapprof__range_alloc(big, 4096, false);
	REQUIRE(e);
	CHECK(heapprof__range_owns(e) && heapprof__range_owns(e + big - 1));
	CHECK((uintptr_t)e % 4096 == 0);
	e[big - 1] = 1;
	heapprof__range_free(heapprof__range_obj(e));
}

TEST(range_private_blocks_are_not_samples)
{
	REQUIRE_OK(heapprof__range_init());
	uint64_t live0, live, mapped, exh;
	heapprof__range_stats(&live0, &mapped, &exh);
	void *p = heapprof__range_private(100, 16, true);
	void *q = heapprof__range_private(100000, 4096, false);
	REQUIRE(p && q);
	CHECK_EQ(heapprof__range_obj(p)->magic, HP_PRIV_MAGIC);
	CHECK(heapprof__range_owns(p) && heapprof__range_owns(q));
	CHECK(((char *)p)[99] == 0);
	CHECK(heapprof__range_usable(heapprof__range_obj(q)) % 4096 == 0);
	heapprof__range_stats(&live, &mapped, &exh);
	CHECK_EQ(live, live0);
	heapprof__range_free(heapprof__range_obj(p));
	heapprof__range_free(heapprof__range_obj(q));
	heapprof__range_stats(&live, &mapped, &exh);
	CHECK_EQ(live, live0);
}

/* Random large blocks allocated and freed: no two live blocks overlap,
 * none is corrupted, and the free-run list stays consistent; once without
 * a limit and once (in a child) under an address-space limit, where free
 * runs are unmapped. */
static int
big_churn(unsigned seed)
{
	char *p[16] = {0};
	size_t n[16] = {0};
	for (int it = 0; it < 400; it++) {
		seed = seed * 1103515245u + 12345u;
		int k = (int)((seed >> 8) % 16);
		if (p[k]) {
			if (p[k][0] != (char)k || p[k][n[k] - 1] != (char)k)
				return 1;
			heapprof__range_free(heapprof__range_obj(p[k]));
			p[k] = NULL;
			continue;
		}
		n[k] = ((size_t)600 << 10) + (seed >> 12) % ((size_t)8 << 20);
		p[k] = heapprof__range_alloc(n[k], 16, (seed & 1) != 0);
		if (!p[k])
			return 2;
		if ((seed & 1) && (p[k][0] || p[k][n[k] - 1]))
			return 3;
		for (int j = 0; j < 16; j++)
			if (j != k && p[j] && p[j] < p[k] + n[k] && p[k] < p[j] + n[j])
				return 4;
		p[k][0] = p[k][n[k] - 1] = (char)k;
	}
	for (int k = 0; k < 16; k++)
		if (p[k])
			heapprof__range_free(heapprof__range_obj(p[k]));
	return 0;
}

TEST(range_big_churn)
{
	REQUIRE_OK(heapprof__range_init());
	CHECK_EQ(big_churn(1), 0);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = {(rlim_t)2 << 30, (rlim_t)2 << 30};
		setrlimit(RLIMIT_AS, &rl);
		/* What the library's setrlimit does (sandbox.c): this test
		 * links range.c without it. */
		heapprof__range_limit_note(rl.rlim_cur);
		int rc = big_churn(2) * 10 + big_churn(3);
		/* Everything freed: the range gave its address space back. */
		if (heapprof__range_span > ((size_t)64 << 20))
			rc = 99;
		_exit(rc);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
}

TEST(buckets_by_stack_and_size)
{
	REQUIRE_OK(heapprof__bucket_init());
	uint64_t s1[3] = {1, 2, 3}, s2[3] = {1, 2, 4};
	hp_bucket *a = heapprof__bucket_get(s1, 3, 100, 524288, NULL);
	hp_bucket *b = heapprof__bucket_get(s1, 3, 100, 524288, NULL);
	hp_bucket *c = heapprof__bucket_get(s1, 3, 200, 524288, NULL);
	hp_bucket *d = heapprof__bucket_get(s2, 3, 100, 524288, NULL);
	hp_bucket *e = heapprof__bucket_get(s1, 2, 100, 524288, NULL);
	REQUIRE(a && c && d && e);
	CHECK(a == b);
	CHECK(a != c && a != d && a != e && c != d);
	/* A label set is part of the key (issue 33): same stack, size and
	 * rate under two sets, two buckets; the same set again, the same. */
	static const char ls1[16] = "a", ls2[16] = "b";
	const struct heapprof_labels *l1 = (const void *)ls1, *l2 = (const void *)ls2;
	hp_bucket *f = heapprof__bucket_get(s1, 3, 100, 524288, l1);
	hp_bucket *g = heapprof__bucket_get(s1, 3, 100, 524288, l2);
	REQUIRE(f && g);
	CHECK(f != a && g != a && f != g);
	CHECK(heapprof__bucket_get(s1, 3, 100, 524288, l1) == f);
	CHECK(f->labels == l1 && a->labels == NULL);
	CHECK_EQ(a->depth, 3);
	CHECK_EQ(a->stack[2], 3);
	uint64_t before = heapprof__bucket_count();
	/* 70,000 distinct stacks, each found again. */
	uint64_t st[16];
	for (int i = 0; i < 70000; i++) {
		for (int k = 0; k < 16; k++)
			st[k] = ((uint64_t)i << 8) | (uint64_t)k;
		hp_bucket *x = heapprof__bucket_get(st, 16, 64, 524288, NULL);
		REQUIRE(x);
		atomic_fetch_add(&x->alloc_objects, 1);
	}
	for (int i = 0; i < 70000; i += 7) {
		for (int k = 0; k < 16; k++)
			st[k] = ((uint64_t)i << 8) | (uint64_t)k;
		hp_bucket *x = heapprof__bucket_get(st, 16, 64, 524288, NULL);
		REQUIRE(x);
		CHECK_EQ(atomic_load(&x->alloc_objects), 1);
	}
	CHECK_EQ(heapprof__bucket_count(), before + 70000);
	uint64_t listed = 0;
	for (hp_bucket *x = heapprof__bucket_list(); x; x = x->all_next)
		listed++;
	CHECK_EQ(listed, heapprof__bucket_count());
}

TEST(sampler_first_allocation_is_not_certain)
{
	/* A thread without a distance (new, fork child, main after init)
	 * draws one first: a 16-byte allocation is a sample with
	 * probability 1 - exp(-16/R), not 1 (2000 short threads each
	 * keeping 16 B were reported as 1000 MB). 100,000 fresh threads at
	 * R = 512 KiB: about 3 samples expected. */
	const int64_t R = 524288;
	long sampled = 0;
	for (int i = 0; i < 100000; i++) {
		hp_tls t = {0};
		int64_t at = heapprof__sampler_take(&t, R, 16);
		if (at) {
			sampled++;
			CHECK_EQ(at, R);
		} else {
			CHECK(t.left > 0);
		}
		CHECK_EQ(t.rate, R);
		CHECK_EQ(t.seeded, 1);
	}
	if (sampled > 30)
		T_FAIL("%ld of 100000 first allocations sampled", sampled);
	/* At rate 1 every allocation is, the first included. */
	hp_tls t = {0};
	for (int i = 0; i < 100; i++)
		CHECK_EQ(heapprof__sampler_take(&t, 1, i % 2 ? 1 : 16), 1);
	/* Off: nothing, and the thread comes back within 1 MiB. */
	hp_tls u = {0};
	CHECK_EQ(heapprof__sampler_take(&u, 0, 16), 0);
	CHECK(u.left > 0 && u.left <= (int64_t)1 << 20);
}

TEST(sampler_sample_keeps_the_rate_it_was_drawn_at)
{
	/* The rate changes while a distance drawn at R1 runs: the sample
	 * at its end is an R1 sample, the next distance is at R2. */
	hp_tls t = {0};
	t.left = heapprof__sampler_next(&t, 4096);
	t.seeded = 1;
	CHECK_EQ(t.rate, 4096);
	CHECK_EQ(heapprof__sampler_take(&t, 1, 100), 4096);
	CHECK_EQ(t.rate, 1);
	CHECK_EQ(heapprof__sampler_take(&t, 0, 100), 1);
	CHECK_EQ(t.rate, 0);
	/* A distance drawn while off is no sample; the first crossing after
	 * sampling is back on draws at the new rate and charges this
	 * allocation against it. */
	CHECK_EQ(heapprof__sampler_take(&t, 0, 100), 0);
	CHECK_EQ(heapprof__sampler_take(&t, 1, 100), 1);
	heapprof__sampler_reset(&t);
	CHECK_EQ(t.left, 0);
	CHECK_EQ(t.seeded, 0);
}

TEST(buckets_keyed_by_rate)
{
	REQUIRE_OK(heapprof__bucket_init());
	uint64_t s1[3] = {9, 8, 7};
	hp_bucket *a = heapprof__bucket_get(s1, 3, 100, 4096, NULL);
	hp_bucket *b = heapprof__bucket_get(s1, 3, 100, 524288, NULL);
	REQUIRE(a && b);
	CHECK(a != b);
	CHECK_EQ(a->rate, 4096);
	CHECK_EQ(b->rate, 524288);
	CHECK(heapprof__bucket_get(s1, 3, 100, 4096, NULL) == a);
}

/* Readers of the bucket table while it grows (bucket.c replaces it by a
 * four times larger copy when half full): every bucket made before a
 * lookup starts is found, and is the same one, from any thread. Enough
 * new buckets for at least one growth, whatever earlier tests made. */
static hp_bucket **grow_made;
static _Atomic int grow_done;
static _Atomic int grow_bad;

static void *
grow_reader(void *arg)
{
	(void)arg;
	unsigned x = 1;
	while (!atomic_load(&grow_done)) {
		x = x * 1103515245u + 12345u;
		int i = (int)(x >> 8) % 64; /* the first 64, made before */
		uint64_t st[2] = {0x5000 + (uint64_t)i, 77};
		if (heapprof__bucket_get(st, 2, 48, 4096, NULL) != grow_made[i])
			atomic_fetch_add(&grow_bad, 1);
	}
	return NULL;
}

TEST(buckets_table_grows)
{
	REQUIRE_OK(heapprof__bucket_init());
	uint64_t before = heapprof__bucket_count();
	const int GROW_N = (int)(4 * before + 10000);
	grow_made = calloc((size_t)GROW_N, sizeof(*grow_made));
	REQUIRE(grow_made);
	for (int i = 0; i < 64; i++) {
		uint64_t st[2] = {0x5000 + (uint64_t)i, 77};
		grow_made[i] = heapprof__bucket_get(st, 2, 48, 4096, NULL);
		REQUIRE(grow_made[i]);
	}
	pthread_t th[2];
	for (int k = 0; k < 2; k++)
		REQUIRE(pthread_create(&th[k], NULL, grow_reader, NULL) == 0);
	for (int i = 64; i < GROW_N; i++) {
		uint64_t st[2] = {0x5000 + (uint64_t)i, 77};
		grow_made[i] = heapprof__bucket_get(st, 2, 48, 4096, NULL);
		REQUIRE(grow_made[i]);
	}
	atomic_store(&grow_done, 1);
	for (int k = 0; k < 2; k++)
		pthread_join(th[k], NULL);
	CHECK_EQ(atomic_load(&grow_bad), 0);
	CHECK_EQ(heapprof__bucket_count() - before, (uint64_t)GROW_N);
	int wrong = 0;
	for (int i = 0; i < GROW_N; i++) {
		uint64_t st[2] = {0x5000 + (uint64_t)i, 77};
		hp_bucket *b = heapprof__bucket_get(st, 2, 48, 4096, NULL);
		wrong += b != grow_made[i] || b->stack[0] != st[0];
		for (int j = 0; j < 3 && i >= j + 1; j++)
			wrong += grow_made[i] == grow_made[i - j - 1];
	}
	CHECK_EQ(wrong, 0);
	int listed = 0;
	for (hp_bucket *b = heapprof__bucket_list(); b; b = b->all_next)
		listed++;
	CHECK_EQ((uint64_t)listed, heapprof__bucket_count());
	free(grow_made);
}

/* The helpers below must be frames of their own: a use of the result
 * after the call keeps clang from making it a tail call (a jump that
 * leaves no frame for the walk to see). */
#define KEEP_FRAME(n) __asm__ volatile("" : "+r"(n))

__attribute__((noinline)) static int
capture_here(uint64_t *out, int max)
{
	int n = heapprof__stack_capture(&heapprof__tls, 0, out, max);
	KEEP_FRAME(n);
	return n;
}

__attribute__((noinline)) static int
capture_from_child(uint64_t *out, int max, uintptr_t *ra)
{
	*ra = (uintptr_t)__builtin_return_address(0);
	int n = heapprof__stack_capture(&heapprof__tls, *ra, out, max);
	KEEP_FRAME(n);
	return n;
}

/* Frame 0 is this function's call of heapprof__stack_capture, frame 1
 * the test's call site of it, frames 2.. the same for every call (one
 * more frame first where the capture's helper is not inlined). */
__attribute__((noinline)) static int
capture_with(uint64_t *out, int max, uintptr_t skip_to)
{
	int n = heapprof__stack_capture(&heapprof__tls, skip_to, out, max);
	KEEP_FRAME(n);
	return n;
}

TEST(stack_capture_every_unwinder)
{
	static const char *const names[] = {"dwarf", "fp", "libunwind"};
	for (int u = HP_UNWIND_DWARF; u <= HP_UNWIND_LIBUNWIND; u++) {
		heapprof__cfg.unwind = u;
		if (heapprof__stack_init(&heapprof__tls) != 0 || heapprof__cfg.unwind != u) {
			printf("  (libunwind missing: not tested)\n");
			continue;
		}
		uint64_t out[64];
		int n = capture_here(out, 64);
		if (n < 3) /* capture_here, the test, main at least */
			T_FAIL("%s: %d frames", names[u], n);
		/* Skipping to a known return address: the first frame is
		 * that call site (return address - 1). */
		uintptr_t ra;
		n = capture_from_child(out, 64, &ra);
		REQUIRE(n >= 1);
		CHECK_EQ(out[0], (uint64_t)ra - 1);
		CHECK_EQ(capture_here(out, 1), 1);
		/* A skip_to among none of the frames keeps them all, the
		 * same as no skip_to; depth 1 still finds a deeper one. */
		uint64_t all[64], bogus[64];
		int na = capture_with(all, 64, 0), nb = capture_with(bogus, 64, 1);
		CHECK_EQ(na, nb);
		REQUIRE(na >= 3 && na == nb);
		/* Below the test's two call sites (frame 1, or 2 where the
		 * compiler left a helper of the capture its own frame, as
		 * clang does), the frames are the same; the deepest one is
		 * found at depth 1. (clang's fp walk ends at main: 3 frames.) */
		for (int i = 3; i < na; i++)
			CHECK_EQ(all[i], bogus[i]);
		if (na >= 4) {
			CHECK_EQ(capture_with(out, 1, (uintptr_t)all[na - 1] + 1), 1);
			CHECK_EQ(out[0], all[na - 1]);
		}
	}
	heapprof__cfg.unwind = HP_UNWIND_DWARF;
}

/* The main thread's stack bounds without /proc/self/maps (stack.c,
 * issue 15): glibc's, from the page of __libc_stack_end, the end of the
 * stack's mapping (after AT_EXECFN) and RLIMIT_STACK; a thread gets
 * glibc's own bounds. */
static void *
thread_bounds(void *arg)
{
	hp_tls *t = arg;
	heapprof__stack_init(t);
	return NULL;
}

TEST(stack_bounds_main_thread_without_maps)
{
	pthread_attr_t a;
	void *lo;
	size_t sz;
	REQUIRE(pthread_getattr_np(pthread_self(), &a) == 0);
	REQUIRE(pthread_attr_getstack(&a, &lo, &sz) == 0);
	pthread_attr_destroy(&a);
	hp_tls t = {0};
	CHECK_EQ(heapprof__stack_init(&t), 0);
	CHECK_EQ(t.stack_hi, (uintptr_t)lo + sz);
	CHECK_EQ(t.stack_lo, (uintptr_t)lo);
	CHECK(t.stack_lo < (uintptr_t)&t && (uintptr_t)&t < t.stack_hi);
	struct rlimit rl;
	REQUIRE(getrlimit(RLIMIT_STACK, &rl) == 0);
	(void)rl;
	hp_tls u = {0};
	pthread_t th;
	REQUIRE(pthread_create(&th, NULL, thread_bounds, &u) == 0);
	pthread_join(th, NULL);
	CHECK(u.stack_hi != 0 && u.stack_hi != 1);
	CHECK(u.stack_hi <= t.stack_lo || u.stack_lo >= t.stack_hi);
}

/* The capture's weight of one sampled object (sampler.c, without libm)
 * is the encoder's heapprof_scale_heap_sample for one object, to within a
 * byte, over sizes 0 .. 1 GiB and rates 2 .. 64 MiB. */
TEST(sampler_weight_is_the_encoders)
{
	static const int64_t rates[] = {1, 2, 4096, 524288, 1 << 20, 64 << 20};
	int bad = 0;
	for (size_t ri = 0; ri < sizeof(rates) / sizeof(rates[0]); ri++) {
		for (uint64_t size = 0; size < ((uint64_t)1 << 30);
		     size = size < 16 ? size + 1 : size * 3 / 2 + 7) {
			int64_t c, want;
			heapprof_scale_heap_sample(1, (int64_t)size, rates[ri], &c,
			                           &want);
			int64_t got = heapprof__sampler_weight(size, rates[ri]);
			int64_t d = got > want ? got - want : want - got;
			if (d > 1 && bad++ < 5)
				fprintf(stderr, "size %llu rate %lld: %lld, encoder %lld\n",
				        (unsigned long long)size, (long long)rates[ri],
				        (long long)got, (long long)want);
		}
	}
	CHECK_EQ(bad, 0);
}

int
main(void)
{
	RUN(sampler_exponential_law);
	RUN(sampler_probability_per_allocation);
	RUN(range_alloc_free_reuse);
	RUN(range_small_objects_share_slabs);
	RUN(sampler_first_allocation_is_not_certain);
	RUN(sampler_sample_keeps_the_rate_it_was_drawn_at);
	RUN(range_exact_runs_coalesce);
	RUN(range_private_blocks_are_not_samples);
	RUN(range_big_churn);
	RUN(buckets_by_stack_and_size);
	RUN(stack_capture_every_unwinder);
	RUN(stack_bounds_main_thread_without_maps);
	RUN(buckets_keyed_by_rate);
	RUN(buckets_table_grows);
	RUN(sampler_weight_is_the_encoders);
	TEST_MAIN_END();
}
