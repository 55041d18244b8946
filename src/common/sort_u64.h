/*
 * sort_u64.h: an in-place sort of uint64_t values with no call per
 * comparison, for the exit dump's PCs (snapshot.c) and the symbol cache's
 * wanted addresses (symcache.c). qsort's merge sort through a comparison
 * function was 0.9 M of the 10 M instructions of cc1's exit dump, for
 * ~2,000 PCs of which most are copies (every stack repeats main's frames).
 *
 * Already sorted input costs one pass. Otherwise a quicksort with
 * three-way partitions (all copies of the pivot are placed at once), the
 * median of three as pivot, insertion sort below 16 values and heapsort
 * past a depth of 2 log2 n, so no input is quadratic. No allocation, no
 * recursion deeper than log2 n (the smaller side recurses).
 */
#ifndef HEAPPROF_SORT_U64_H
#define HEAPPROF_SORT_U64_H

#include <stddef.h>
#include <stdint.h>

static inline void
hp_sort_u64_sift(uint64_t *v, size_t i, size_t n)
{
	uint64_t x = v[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && v[c + 1] > v[c])
			c++;
		if (v[c] <= x)
			break;
		v[i] = v[c];
		i = c;
	}
	v[i] = x;
}

static inline void
hp_sort_u64_heap(uint64_t *v, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		hp_sort_u64_sift(v, i, n);
	for (size_t k = n; k-- > 1;) {
		uint64_t t = v[0];
		v[0] = v[k];
		v[k] = t;
		hp_sort_u64_sift(v, 0, k);
	}
}

static inline void
hp_sort_u64_quick(uint64_t *v, size_t n, unsigned depth)
{
	while (n > 16) {
		if (depth == 0) {
			hp_sort_u64_heap(v, n);
			return;
		}
		depth--;
		uint64_t a = v[0], b = v[n / 2], c = v[n - 1];
		uint64_t p = a < b ? (b < c ? b : a < c ? c : a)
		                   : (a < c ? a : b < c ? c : b);
		/* v[0, lt) < p, v[lt, i) == p, v[gt, n) > p */
		size_t lt = 0, i = 0, gt = n;
		while (i < gt) {
			uint64_t x = v[i];
			if (x < p) {
				v[i++] = v[lt];
				v[lt++] = x;
			} else if (x > p) {
				v[i] = v[--gt];
				v[gt] = x;
			} else {
				i++;
			}
		}
		if (lt < n - gt) {
			hp_sort_u64_quick(v, lt, depth);
			v += gt;
			n -= gt;
		} else {
			hp_sort_u64_quick(v + gt, n - gt, depth);
			n = lt;
		}
	}
	for (size_t i = 1; i < n; i++) {
		uint64_t x = v[i];
		size_t j = i;
		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/* Sorts v[0, n) ascending. */
static inline void
hp_sort_u64(uint64_t *v, size_t n)
{
	size_t i = 1;
	while (i < n && v[i - 1] <= v[i])
		i++;
	if (i >= n)
		return;
	unsigned depth = 0;
	for (size_t m = n; m > 1; m >>= 1)
		depth += 2;
	hp_sort_u64_quick(v, n, depth);
}

#endif
