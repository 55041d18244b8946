/*
 * prog_pattern.c: a program with a known allocation pattern, for checking
 * profiles against the truth. Each site_* function allocates through one
 * member of the malloc family; the program prints what it did as lines
 *   EXPECT site alloc_objects alloc_bytes inuse_objects inuse_bytes
 * (the truth, counted as it happens) and checks on its own that every
 * result is aligned, usable, and leaves errno alone. Exit 1 on a violation.
 *
 * usage: prog_pattern [scale]   (scale multiplies the counts, default 1)
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int bad;
static long scale = 1;

struct truth {
	const char *site;
	long ao, ab, fo, fb;
};
static struct truth truths[16];
static int ntruths;

static struct truth *
truth(const char *site)
{
	for (int i = 0; i < ntruths; i++)
		if (!strcmp(truths[i].site, site))
			return &truths[i];
	truths[ntruths].site = site;
	return &truths[ntruths++];
}

static void
check(void *p, size_t size, size_t align, const char *what)
{
	if (!p) {
		fprintf(stderr, "%s: NULL\n", what);
		bad = 1;
		return;
	}
	if ((uintptr_t)p % align) {
		fprintf(stderr, "%s: %p not aligned to %zu\n", what, p, align);
		bad = 1;
	}
	if (malloc_usable_size(p) < size) {
		fprintf(stderr, "%s: usable size %zu < %zu\n", what,
		        malloc_usable_size(p), size);
		bad = 1;
	}
	memset(p, 0xab, size); /* the whole block must be writable */
	if (errno != 4242) {
		fprintf(stderr, "%s: errno changed to %d\n", what, errno);
		bad = 1;
	}
}

#define KEEP 4096
static void *keep[KEEP];
static int nkeep;

static void
hold(void *p)
{
	if (nkeep < KEEP)
		keep[nkeep++] = p;
}

__attribute__((noinline)) static void
site_malloc(void)
{
	struct truth *t = truth("site_malloc");
	for (long i = 0; i < 1000 * scale; i++) {
		void *p = malloc(100);
		check(p, 100, 16, "malloc");
		t->ao++, t->ab += 100;
		if (i % 5 < 2) {
			free(p);
			t->fo++, t->fb += 100;
		}
	}
}

__attribute__((noinline)) static void
site_calloc(void)
{
	struct truth *t = truth("site_calloc");
	for (long i = 0; i < 500 * scale; i++) {
		unsigned char *p = calloc(10, 30);
		for (int k = 0; k < 300; k++)
			if (p && p[k]) {
				fprintf(stderr, "calloc: not zeroed\n");
				bad = 1;
				break;
			}
		check(p, 300, 16, "calloc");
		t->ao++, t->ab += 300;
		free(p);
		t->fo++, t->fb += 300;
	}
}

__attribute__((noinline)) static void *
site_realloc_first(void)
{
	struct truth *t = truth("site_realloc_first");
	void *p = malloc(50);
	check(p, 50, 16, "malloc for realloc");
	memcpy(p, "0123456789", 10);
	t->ao++, t->ab += 50;
	return p;
}

__attribute__((noinline)) static void
site_realloc(void)
{
	struct truth *t0 = truth("site_realloc_first");
	struct truth *t = truth("site_realloc");
	for (long i = 0; i < 200 * scale; i++) {
		char *p = site_realloc_first();
		char *q = realloc(p, 5000);
		if (!q || memcmp(q, "0123456789", 10) != 0) {
			fprintf(stderr, "realloc: contents lost\n");
			bad = 1;
		}
		check(q, 5000, 16, "realloc");
		t0->fo++, t0->fb += 50; /* a realloc frees the old block */
		t->ao++, t->ab += 5000;
		hold(q);
	}
}

__attribute__((noinline)) static void
site_aligned(void)
{
	struct truth *t = truth("site_aligned");
	for (long i = 0; i < 100 * scale; i++) {
		void *p;
		if (posix_memalign(&p, 64, 1000) != 0)
			p = NULL;
		check(p, 1000, 64, "posix_memalign");
		void *q = aligned_alloc(256, 512);
		check(q, 512, 256, "aligned_alloc");
		void *r = memalign(128, 300);
		check(r, 300, 128, "memalign");
		t->ao += 3, t->ab += 1000 + 512 + 300;
		free(q);
		t->fo++, t->fb += 512;
	}
	for (long i = 0; i < 50 * scale; i++) {
		void *p = valloc(4000);
		check(p, 4000, 4096, "valloc");
		void *q = pvalloc(100);
		check(q, 100, 4096, "pvalloc");
		t->ao += 2, t->ab += 4000 + 100;
	}
}

__attribute__((noinline)) static void
site_reallocarray(void)
{
	struct truth *t = truth("site_reallocarray");
	for (long i = 0; i < 100 * scale; i++) {
		void *p = reallocarray(NULL, 10, 40);
		check(p, 400, 16, "reallocarray");
		t->ao++, t->ab += 400;
		hold(p);
	}
}

__attribute__((noinline)) static void
site_big(void)
{
	struct truth *t = truth("site_big");
	size_t n = (size_t)64 << 20;
	char *p = malloc(n);
	if (!p) {
		fprintf(stderr, "malloc(64 MiB) failed\n");
		bad = 1;
		return;
	}
	p[0] = 1;
	p[n - 1] = 2;
	if (errno != 4242) {
		fprintf(stderr, "big: errno changed\n");
		bad = 1;
	}
	t->ao++, t->ab += (long)n;
	hold(p);
}

static void
contract(void)
{
	/* Failures look exactly as without the profiler. */
	/* volatile: keep the compiler from flagging the sizes we mean. */
	volatile size_t huge = SIZE_MAX - 4096, half = SIZE_MAX / 2;
	/* Called through volatile pointers: compilers may fold a failing
	 * malloc whose result is only compared with NULL. */
	void *(*volatile vmalloc)(size_t) = malloc;
	void *(*volatile vcalloc)(size_t, size_t) = calloc;
	void *(*volatile vreallocarray)(void *, size_t, size_t) = reallocarray;
	errno = 0;
	void *p = vmalloc(huge);
	if (p || errno != ENOMEM) {
		fprintf(stderr, "huge malloc: %p errno %d\n", p, errno);
		bad = 1;
	}
	errno = 0;
	p = vcalloc(half, 3);
	if (p || errno != ENOMEM) {
		fprintf(stderr, "overflowing calloc: %p errno %d\n", p, errno);
		bad = 1;
	}
	errno = 0;
	p = vreallocarray(NULL, half, 3);
	if (p || errno != ENOMEM) {
		fprintf(stderr, "overflowing reallocarray: %p errno %d\n", p, errno);
		bad = 1;
	}
	void *q = (void *)1;
	if (posix_memalign(&q, 3, 16) != EINVAL) {
		fprintf(stderr, "posix_memalign(3) did not fail with EINVAL\n");
		bad = 1;
	}
	free(NULL);
	if (malloc_usable_size(NULL) != 0) {
		fprintf(stderr, "malloc_usable_size(NULL) != 0\n");
		bad = 1;
	}
	p = malloc(10);
	p = realloc(p, 0); /* glibc: frees, returns NULL */
	free(p);
}

int
main(int argc, char **argv)
{
	if (argc > 1)
		scale = atol(argv[1]);
	contract();
	errno = 4242;
	site_malloc();
	site_calloc();
	site_realloc();
	site_aligned();
	site_reallocarray();
	site_big();
	for (int i = 0; i < ntruths; i++) {
		struct truth *t = &truths[i];
		printf("EXPECT %s %ld %ld %ld %ld\n", t->site, t->ao, t->ab,
		       t->ao - t->fo, t->ab - t->fb);
	}
	fflush(stdout);
	return bad;
}
