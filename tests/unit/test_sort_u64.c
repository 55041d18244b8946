/*
 * test_sort_u64.c: src/common/sort_u64.h against qsort, on the shapes the
 * exit dump gives it (few distinct PCs, many copies) and on the classic
 * hard ones: sorted, reversed, all equal, organ pipe, sawtooth, random
 * over a small and a full range, every length up to 300 and some large
 * ones; the heapsort fallback and the quicksort without it separately.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sort_u64.h"
#include "test.h"

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint64_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void
fill(uint64_t *v, size_t n, int shape)
{
	for (size_t i = 0; i < n; i++) {
		switch (shape) {
		case 0: v[i] = next(); break;
		case 1: v[i] = 0x7f0000000000ull + next() % 300; break; /* PCs */
		case 2: v[i] = i; break;
		case 3: v[i] = n - i; break;
		case 4: v[i] = 42; break;
		case 5: v[i] = i < n / 2 ? i : n - i; break;
		case 6: v[i] = i % 17; break;
		case 7: v[i] = next() % 2 ? UINT64_MAX : 0; break;
		default: v[i] = (i & 1) ? i : n - i; break;
		}
	}
}

/* 0 if sort(v) equals qsort's order of the same values. */
static int
check(size_t n, int shape, int how)
{
	uint64_t *v = malloc((n + 1) * sizeof(*v));
	uint64_t *w = malloc((n + 1) * sizeof(*w));
	if (!v || !w)
		abort();
	fill(v, n, shape);
	memcpy(w, v, n * sizeof(*v));
	qsort(w, n, sizeof(*w), cmp_u64);
	if (how == 0)
		hp_sort_u64(v, n);
	else if (how == 1)
		hp_sort_u64_heap(v, n);
	else
		hp_sort_u64_quick(v, n, 1000); /* never falls back */
	int bad = memcmp(v, w, n * sizeof(*v)) != 0;
	if (bad)
		printf("  n=%zu shape=%d how=%d: wrong order\n", n, shape, how);
	free(v);
	free(w);
	return bad;
}

TEST(sort_matches_qsort)
{
	int bad = 0;
	for (int how = 0; how < 3; how++)
		for (int shape = 0; shape < 9; shape++) {
			for (size_t n = 0; n <= 300; n++)
				bad += check(n, shape, how);
			bad += check(2000, shape, how);
			bad += check(100000, shape, how);
		}
	CHECK_EQ(bad, 0);
}

int
main(void)
{
	RUN(sort_matches_qsort);
	TEST_MAIN_END();
}
