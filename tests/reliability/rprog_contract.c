/*
 * rprog_contract.c: the malloc family's contract, printed as one line per
 * check so that a run under the profiler can be compared byte for byte
 * with a run without it (tests/reliability/rel_contract.sh). Nothing
 * printed depends on addresses or on whether a block was sampled: NULL or
 * not, errno, alignment, contents, usable size >= request.
 * Mirrors glibc tst-malloc-too-large, tst-realloc, tst-reallocarray,
 * tst-memalign, tst-posix_memalign, tst-free-errno, tst-malloc-usable,
 * mimalloc test-api and jemalloc overflow/zero_realloc (plan T1-T4, T6).
 * A line starting with "BAD " is a violated invariant (also a failure in
 * the baseline, so the test compares and also greps for it).
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SENTINEL ((void *)0x1234)

/* Called through volatile pointers so that the compiler neither warns
 * about the deliberately impossible requests nor folds them. */
static void *(*volatile v_realloc)(void *, size_t) = realloc;
static void *(*volatile v_reallocarray)(void *, size_t, size_t) = reallocarray;
static void *(*volatile v_calloc)(size_t, size_t) = calloc;
static void *(*volatile v_memalign)(size_t, size_t) = memalign;

static void
fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed + i * 7);
}

static int
check(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed + i * 7))
			return 0;
	return 1;
}

static const char *
res(const void *p)
{
	return p ? "ptr" : "NULL";
}

/* realloc in every form, with a pattern carried across. */
static void
test_realloc(void)
{
	errno = 777;
	void *p = realloc(NULL, 10);
	printf("realloc(NULL,10): %s errno=%d\n", res(p), errno);
	errno = 777;
	void *q = realloc(p, 0); /* glibc 2.36: frees, returns NULL */
	printf("realloc(p,0): %s errno=%d\n", res(q), errno);
	free(q);
	errno = 777;
	p = realloc(NULL, 0);
	printf("realloc(NULL,0): %s errno=%d\n", res(p), errno);
	free(p);

	/* Grow and shrink through every size class, sampled or not. */
	static const size_t sizes[] = {1, 16, 100, 4000, 5000, 70000, 600000,
	                               3 << 20, 64 << 20, 200, 8, 1 << 20, 33};
	size_t n = 5;
	unsigned char *b = malloc(n);
	fill(b, n, 1);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t m = sizes[i];
		errno = 777;
		unsigned char *c = realloc(b, m);
		int ok = c && check(c, n < m ? n : m, 1);
		printf("realloc %zu->%zu: %s kept=%d errno=%d usable_ok=%d\n", n,
		       m, res(c), ok, errno, c && malloc_usable_size(c) >= m);
		if (!c)
			break;
		fill(c, m, 1);
		b = c;
		n = m;
	}
	free(b);

	/* An unsampled block (memalign with a non-power-of-two alignment is
	 * forwarded unsampled even at rate 1; a 100-byte block is almost
	 * never sampled at the default rate) moved into a block of 64 MiB
	 * (sampled with certainty at the default rate) and back. */
	unsigned char *u = v_memalign(24, 100);
	printf("memalign(24,100): %s\n", res(u));
	if (u) {
		fill(u, 100, 9);
		unsigned char *v = realloc(u, 64 << 20);
		printf("realloc unsampled->64MiB: %s kept=%d\n", res(v),
		       v && check(v, 100, 9));
		if (v) {
			fill(v, 64 << 20, 9);
			unsigned char *w = realloc(v, 100);
			printf("realloc 64MiB->100: %s kept=%d\n", res(w),
			       w && check(w, 100, 9));
			v = w ? w : v;
		}
		free(v ? v : u);
	}
	/* A failed realloc leaves the block alone. */
	unsigned char *k = malloc(64);
	fill(k, 64, 3);
	errno = 0;
	void *f = v_realloc(k, SIZE_MAX - 4096);
	printf("realloc(p,SIZE_MAX-4096): %s errno=%d kept=%d\n", res(f), errno,
	       check(k, 64, 3));
	errno = 0;
	f = v_realloc(k, PTRDIFF_MAX);
	printf("realloc(p,PTRDIFF_MAX): %s errno=%d kept=%d\n", res(f), errno,
	       check(k, 64, 3));
	v_realloc(k, 0);
}

static void
test_reallocarray(void)
{
	unsigned char *p = reallocarray(NULL, 10, 10);
	printf("reallocarray(NULL,10,10): %s\n", res(p));
	fill(p, 100, 5);
	errno = 0;
	void *q = v_reallocarray(p, SIZE_MAX / 2, 3);
	printf("reallocarray overflow: %s errno=%d kept=%d\n", res(q), errno,
	       check(p, 100, 5));
	errno = 0;
	q = v_reallocarray(p, (size_t)1 << 32, (size_t)1 << 32);
	printf("reallocarray 2^32*2^32: %s errno=%d kept=%d\n", res(q), errno,
	       check(p, 100, 5));
	q = v_reallocarray(p, 1000, 10);
	printf("reallocarray grow: %s kept=%d\n", res(q), q && check(q, 100, 5));
	errno = 777;
	void *z = reallocarray(q, 0, 10); /* as realloc(q, 0) */
	printf("reallocarray(q,0,10): %s errno=%d\n", res(z), errno);
	free(z);
	z = reallocarray(NULL, 0, 0);
	printf("reallocarray(NULL,0,0): %s\n", res(z));
	free(z);
}

/* tst-malloc-too-large, in part: requests that cannot succeed. */
static void
test_too_large(void)
{
	static const size_t big[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 4095,
	                             SIZE_MAX - 65536, (size_t)PTRDIFF_MAX + 1,
	                             (size_t)PTRDIFF_MAX, (size_t)1 << 62};
	for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
		size_t n = big[i];
		void *small = malloc(17); /* as the glibc test, between calls */
		free(small);
		void *p;
		errno = 0;
		p = malloc(n);
		printf("too_large[%zu] malloc: %s errno=%d\n", i, res(p), errno);
		free(p);
		for (size_t k = 1; k <= 8; k *= 2) {
			errno = 0;
			p = calloc(k, n / k + 1);
			printf("too_large[%zu] calloc(%zu,..): %s errno=%d\n", i, k,
			       res(p), errno);
			free(p);
		}
		errno = 0;
		p = realloc(NULL, n);
		printf("too_large[%zu] realloc(NULL): %s errno=%d\n", i, res(p), errno);
		free(p);
		errno = 0;
		p = reallocarray(NULL, n, 1);
		printf("too_large[%zu] reallocarray: %s errno=%d\n", i, res(p), errno);
		free(p);
		errno = 0;
		p = memalign(64, n);
		printf("too_large[%zu] memalign: %s errno=%d\n", i, res(p), errno);
		free(p);
		errno = 0;
		p = aligned_alloc(64, n);
		printf("too_large[%zu] aligned_alloc: %s errno=%d\n", i, res(p), errno);
		free(p);
		errno = 0;
		p = valloc(n);
		printf("too_large[%zu] valloc: %s errno=%d\n", i, res(p), errno);
		free(p);
		errno = 0;
		p = pvalloc(n);
		printf("too_large[%zu] pvalloc: %s errno=%d\n", i, res(p), errno);
		free(p);
		p = SENTINEL;
		errno = 0;
		int rc = posix_memalign(&p, 64, n);
		printf("too_large[%zu] posix_memalign: rc=%d p_untouched=%d errno=%d\n",
		       i, rc, p == SENTINEL, errno);
		if (rc == 0)
			free(p);
	}
	errno = 0;
	void *p = v_calloc(SIZE_MAX / 2, 3);
	printf("calloc overflow: %s errno=%d\n", res(p), errno);
	errno = 0;
	p = v_calloc((size_t)1 << 32, (size_t)1 << 32);
	printf("calloc 2^32*2^32: %s errno=%d\n", res(p), errno);
	p = calloc(0, 0);
	printf("calloc(0,0): %s\n", res(p));
	free(p);
}

/* Every alignment function, valid and invalid alignments, several sizes. */
static void
test_alignment(void)
{
	static const size_t aligns[] = {0, 1, 2, 3, 4, 8, 16, 24, 32, 64,
	                                3 * sizeof(void *), 128, 4096, 65536,
	                                1 << 20, (size_t)1 << 63, SIZE_MAX};
	static const size_t sizes[] = {0, 1, 7, 4095, 4097, 1 << 20};
	for (size_t ai = 0; ai < sizeof(aligns) / sizeof(aligns[0]); ai++) {
		size_t a = aligns[ai];
		int pow2 = a && !(a & (a - 1));
		for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
			size_t n = sizes[si];
			for (int fn = 0; fn < 3; fn++) {
				void *p = SENTINEL;
				int rc = 0;
				errno = 0;
				const char *name = fn == 0 ? "posix_memalign"
				                 : fn == 1 ? "aligned_alloc" : "memalign";
				if (fn == 0)
					rc = posix_memalign(&p, a, n);
				else if (fn == 1)
					p = aligned_alloc(a, n);
				else
					p = memalign(a, n);
				int err = errno;
				int ok = fn == 0 ? rc == 0 : p != NULL;
				printf("%s(%zu,%zu): rc=%d %s errno=%d", name, a, n, rc,
				       fn == 0 ? (p == SENTINEL ? "untouched" : res(p))
				               : res(p),
				       err);
				if (ok) {
					int al = !pow2 || (uintptr_t)p % a == 0;
					memset(p, 0x5a, n);
					printf(" aligned=%d usable_ok=%d", al,
					       malloc_usable_size(p) >= n);
					if (!al)
						printf("\nBAD misaligned %s(%zu,%zu)", name, a, n);
					/* realloc of an aligned block keeps its contents */
					fill(p, n, 11);
					unsigned char *q = realloc(p, n + 100);
					printf(" realloc=%s kept=%d", res(q),
					       q && check(q, n, 11));
					free(q ? (void *)q : p);
				}
				printf("\n");
			}
		}
	}
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		size_t n = sizes[si];
		long pg = sysconf(_SC_PAGESIZE);
		void *p = valloc(n);
		printf("valloc(%zu): %s aligned=%d usable_ok=%d\n", n, res(p),
		       p && (uintptr_t)p % (uintptr_t)pg == 0,
		       p && malloc_usable_size(p) >= n);
		if (p)
			memset(p, 1, n);
		free(p);
		p = pvalloc(n);
		printf("pvalloc(%zu): %s aligned=%d usable_ok=%d\n", n, res(p),
		       p && (uintptr_t)p % (uintptr_t)pg == 0,
		       p && malloc_usable_size(p) >= n);
		if (p)
			memset(p, 1, n);
		free(p);
	}
}

/* calloc memory is zero, also when it re-uses a dirty block. */
static void
test_calloc_zero(void)
{
	static const size_t sizes[] = {1, 24, 100, 1000, 4000, 5000, 70000,
	                               300000, 1 << 20, 5 << 20};
	int bad = 0;
	for (int round = 0; round < 20; round++) {
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			size_t n = sizes[i];
			unsigned char *d = malloc(n);
			memset(d, 0xee, n);
			free(d);
			unsigned char *z = calloc(1, n);
			for (size_t k = 0; k < n; k++)
				if (z[k]) {
					bad++;
					break;
				}
			memset(z, 0xee, n);
			free(z);
			z = calloc(n, 1);
			for (size_t k = 0; k < n; k++)
				if (z[k]) {
					bad++;
					break;
				}
			free(z);
		}
	}
	printf("calloc zeroed: %s\n", bad ? "BAD" : "ok");
	if (bad)
		printf("BAD calloc returned %d dirty blocks\n", bad);
}

static void
test_zero_and_null(void)
{
	void *p = malloc(0);
	printf("malloc(0): %s\n", res(p));
	free(p);
	errno = 4242;
	free(NULL);
	printf("free(NULL) errno=%d\n", errno);
	printf("malloc_usable_size(NULL)=%zu\n", malloc_usable_size(NULL));
	int bad = 0;
	for (size_t n = 0; n < 70000; n = n * 3 + 1) {
		unsigned char *b = malloc(n);
		size_t u = malloc_usable_size(b);
		if (u < n)
			bad++;
		memset(b, 0x11, u); /* writing up to the usable size is valid */
		free(b);
	}
	printf("usable >= requested: %s\n", bad ? "BAD" : "ok");
}

/* errno survives successful calls and every free (tst-free-errno). */
static void
test_errno(void)
{
	int bad = 0;
	void *keep[64];
	for (int round = 0; round < 2000; round++) {
		size_t n = (size_t)(round * 37 % 9000) + (round % 50 == 0 ? 1 << 20 : 0);
		errno = 12345;
		void *p = malloc(n);
		bad += errno != 12345;
		p = realloc(p, n * 2 + 1);
		bad += errno != 12345;
		void *c = calloc(3, n + 1);
		bad += errno != 12345;
		void *a = NULL;
		if (posix_memalign(&a, 64, n) != 0)
			bad++;
		bad += errno != 12345;
		void *b = aligned_alloc(256, n);
		bad += errno != 12345;
		keep[round % 64] = memalign(4096, n);
		bad += errno != 12345;
		free(p);
		bad += errno != 12345;
		free(c);
		free(a);
		free(b);
		bad += errno != 12345;
		if (round % 64 == 63)
			for (int i = 0; i < 64; i++) {
				errno = 999;
				free(keep[i]);
				bad += errno != 999;
			}
	}
	printf("errno preserved: %s\n", bad ? "BAD" : "ok");
	if (bad)
		printf("BAD errno changed %d times\n", bad);
}

int
main(void)
{
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	test_zero_and_null();
	test_realloc();
	test_reallocarray();
	test_too_large();
	test_alignment();
	test_calloc_zero();
	test_errno();
	printf("done\n");
	return 0;
}
