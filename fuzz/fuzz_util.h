/*
 * fuzz_util.h: helpers shared by the libFuzzer targets in fuzz/: splitting
 * one input into two profiles, a growable output sink, and FUZZ_ASSERT
 * (abort with a message, which libFuzzer and the replay driver report as a
 * crash). Header-only so each target stays one translation unit.
 *
 * Two-profile inputs: if the first 4 bytes, little-endian, are a length N
 * with N <= size - 4, the profiles are data[4, 4+N) and the rest; otherwise
 * both are the whole input (a profile against itself). Plain profiles in
 * the seed corpus therefore run in "self" mode, and the pair seeds written
 * by fuzz/gen_seeds.py in "split" mode.
 */
#ifndef HEAPPROF_FUZZ_UTIL_H
#define HEAPPROF_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Inflated-size cap for every decode in the targets (a gzip bomb must stop
 * here with HEAPPROF_ETOOBIG, well under libFuzzer's rss limit). */
#define FUZZ_LIMIT ((size_t)8 << 20)

#define FUZZ_ASSERT(cond, ...)                                                 \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "fuzz assertion failed: %s: ", #cond); \
			fprintf(stderr, __VA_ARGS__);                          \
			fprintf(stderr, "\n");                                 \
			abort();                                               \
		}                                                              \
	} while (0)

static inline void
fuzz_split(const uint8_t *data, size_t size, const uint8_t **a, size_t *na,
           const uint8_t **b, size_t *nb)
{
	if (size >= 4) {
		uint32_t n = (uint32_t)data[0] | (uint32_t)data[1] << 8 |
		             (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
		if (n <= size - 4) {
			*a = data + 4;
			*na = n;
			*b = data + 4 + n;
			*nb = size - 4 - n;
			return;
		}
	}
	*a = *b = data;
	*na = *nb = size;
}

typedef struct fuzz_buf {
	uint8_t *p;
	size_t n, cap;
} fuzz_buf;

static inline int
fuzz_buf_write(void *arg, const void *p, size_t n)
{
	fuzz_buf *b = arg;
	if (b->cap - b->n < n) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap - b->n < n)
			cap *= 2;
		uint8_t *q = realloc(b->p, cap);
		if (!q)
			return -12;
		b->p = q;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->n, p, n);
	b->n += n;
	return 0;
}

static inline void
fuzz_buf_free(fuzz_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

#endif
