/*
 * prog_usdtre.c: the otel_memory probes' pairing (issue 33 review,
 * tests/integration/usdt_review.sh). Prints "READY", waits for a line on
 * stdin (the tracer is attached), then, with nothing else allocating:
 * 1,500 blocks from malloc, calloc and aligned_alloc(64) of 1..6,000
 * bytes; each realloc'd once (grown, shrunk a little, or to 0, which
 * frees it); then 8 blocks of 600 KiB and more (past 512 KiB a sampled
 * block is resized in place or its pages moved), grown by 1 MiB and shrunk
 * by 100 KiB; every block left freed. Calls done_marker() (where the
 * tracer stops) and prints "TRUTH CALLS" (allocating calls, a realloc
 * counting once).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 1500

static __attribute__((noinline)) void *
site_a(int i, size_t n)
{
	switch (i % 3) {
	case 0:
		return malloc(n);
	case 1:
		return calloc(1, n);
	default:
		return aligned_alloc(64, (n + 63) & ~(size_t)63);
	}
}

static __attribute__((noinline)) void *
site_r(void *p, size_t n)
{
	return realloc(p, n);
}

__attribute__((noinline)) void
done_marker(void)
{
	__asm__ volatile("" ::: "memory");
}

int
main(void)
{
	static void *b[N];
	char c;
	printf("READY\n");
	fflush(stdout);
	while (read(0, &c, 1) == 1 && c != '\n')
		;
	long calls = 0;
	for (int i = 0; i < N; i++) {
		b[i] = site_a(i, 1 + (size_t)(i * 7919) % 6000);
		calls++;
	}
	for (int i = 0; i < N; i++) {
		size_t n = 1 + (size_t)(i * 7919) % 6000;
		size_t m = i % 5 == 4 ? 0 : i % 2 ? n + 3000 : n - n / 8;
		void *q = site_r(b[i], m);
		if (m) {
			if (!q)
				return 1;
			b[i] = q;
			calls++;
		} else {
			b[i] = NULL; /* realloc(p, 0) freed it (glibc) */
		}
	}
	for (int i = 0; i < N; i++)
		free(b[i]);
	for (int i = 0; i < 8; i++) {
		size_t n = (600u << 10) + (size_t)i * (50u << 10);
		void *p = site_a(0, n);
		void *q = site_r(p, n + (1u << 20));
		void *r = q ? site_r(q, n + (1u << 20) - (100u << 10)) : NULL;
		if (!r)
			return 1;
		free(r);
		calls += 3;
	}
	done_marker();
	printf("TRUTH %ld\n", calls);
	return 0;
}
