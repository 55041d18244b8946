/*
 * rprog_allocators: the malloc family as a program whose allocator is not
 * glibc's calls it (rel_allocators.sh runs it with jemalloc or tcmalloc
 * preloaded ahead of the profiler or after it, linked, or linked into the
 * executable). Each block is written, checked and freed by the program's
 * free; the output is checksums and counts only, the same whichever
 * allocator serves it.
 *
 *   rprog_allocators family ROUNDS   every standard entry point, and
 *                                    reallocarray growing a block (the
 *                                    first reallocarray aborted, issue 29)
 *   rprog_allocators pages ROUNDS    pvalloc and valloc blocks freed with
 *                                    free: jemalloc has no pvalloc, so
 *                                    without the profiler this one is
 *                                    glibc's and its block is not the
 *                                    allocator's; the profiler's must be
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t sum;

static void
fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i += 61)
		p[i] = (unsigned char)(seed + i);
	if (n)
		p[n - 1] = (unsigned char)seed;
}

static int
check(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i += 61)
		if (p[i] != (unsigned char)(seed + i) && i != n - 1)
			return 0;
	if (n && p[n - 1] != (unsigned char)seed)
		return 0;
	for (size_t i = 0; i < n; i += 61)
		sum += p[i];
	return 1;
}

static int bad;

static void
usable(void *p, size_t n, const char *what)
{
	if (malloc_usable_size(p) < n) {
		printf("usable %s %zu < %zu\n", what, malloc_usable_size(p), n);
		bad++;
	}
}

static void
family(int rounds)
{
	for (int r = 0; r < rounds; r++) {
		size_t n = 16 + (size_t)(r * 7919) % 70000;
		unsigned char *a = malloc(n);
		fill(a, n, r);
		usable(a, n, "malloc");
		/* reallocarray growing, then shrinking */
		unsigned char *g = NULL;
		size_t gn = 0;
		for (size_t k = 1; k <= 40; k++) {
			unsigned char *q = reallocarray(g, k, 1024 + (size_t)r % 512);
			if (!q) {
				printf("reallocarray failed\n");
				exit(3);
			}
			if (g && !check(q, gn, r)) {
				printf("reallocarray lost contents\n");
				bad++;
			}
			g = q;
			gn = k * (1024 + (size_t)r % 512);
			fill(g, gn, r);
		}
		g = reallocarray(g, 3, 100);
		errno = 0;
		volatile size_t huge = SIZE_MAX / 2; /* the overflow, unseen by gcc */
		void *(*volatile ra)(void *, size_t, size_t) = reallocarray;
		if (ra(g, huge, 4) != NULL || errno != ENOMEM) {
			printf("reallocarray overflow\n");
			bad++;
		}
		free(g);
		unsigned char *c = calloc(n / 8 + 1, 8);
		for (size_t i = 0; i < n / 8 + 1; i += 97)
			if (c[i * 8])
				bad++;
		unsigned char *b = realloc(a, n * 3);
		if (!check(b, n, r)) {
			printf("realloc lost contents\n");
			bad++;
		}
		void *pm = NULL;
		if (posix_memalign(&pm, 64 << (r % 6), n) != 0 ||
		    ((uintptr_t)pm & ((64u << (r % 6)) - 1))) {
			printf("posix_memalign\n");
			bad++;
		}
		fill(pm, n, r + 1);
		usable(pm, n, "posix_memalign");
		unsigned char *al = aligned_alloc(256, 256 * (1 + (size_t)r % 20));
		unsigned char *ma = memalign(128, n);
		unsigned char *va = valloc(n);
		if (((uintptr_t)al & 255) || ((uintptr_t)ma & 127) ||
		    ((uintptr_t)va & (size_t)(getpagesize() - 1))) {
			printf("alignment\n");
			bad++;
		}
		fill(ma, n, r + 2);
		fill(va, n, r + 3);
		usable(va, n, "valloc");
		char *s = strdup("a string libc copies with the program's malloc");
		if (!check(pm, n, r + 1) || !check(ma, n, r + 2) || !check(va, n, r + 3))
			bad++;
		sum += strlen(s);
		free(s);
		free(va);
		free(ma);
		free(al);
		free(pm);
		free(c);
		free(b);
	}
	printf("family %d rounds, %d bad, sum %llu\n", rounds, bad,
	       (unsigned long long)sum);
}

static void
pages(int rounds)
{
	size_t pg = (size_t)getpagesize();
	for (int r = 0; r < rounds; r++) {
		size_t n = 1 + (size_t)(r * 331) % 20000;
		unsigned char *p = pvalloc(n);
		unsigned char *v = valloc(n);
		if (!p || !v || ((uintptr_t)p & (pg - 1)) || ((uintptr_t)v & (pg - 1)) ||
		    malloc_usable_size(p) < n || malloc_usable_size(v) < n) {
			printf("pvalloc/valloc round %d\n", r);
			bad++;
		}
		fill(p, n, r);
		fill(v, n, r + 1);
		if (!check(p, n, r) || !check(v, n, r + 1))
			bad++;
		p = realloc(p, n + 100000);
		if (!check(p, n, r))
			bad++;
		free(p);
		free(v);
	}
	printf("pages %d rounds, %d bad, sum %llu\n", rounds, bad,
	       (unsigned long long)sum);
}

int
main(int argc, char **argv)
{
	int rounds = argc > 2 ? atoi(argv[2]) : 200;
	if (argc > 1 && !strcmp(argv[1], "pages"))
		pages(rounds);
	else
		family(rounds);
	return bad ? 1 : 0;
}
