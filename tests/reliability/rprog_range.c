/*
 * rprog_range: large blocks and address-space limits (rel_range.sh).
 *
 *   rprog_range big GIB      one live block of GIB GiB (never touched)
 *   rprog_range four GIB     four live blocks of GIB GiB each
 *   rprog_range cycle GIB    blocks of GIB, GIB+1, ... GIB+5 GiB, each
 *                            freed before the next (run under ulimit -v)
 *   rprog_range limit MIB    blocks a program under `ulimit -v` can have:
 *                            MIB MiB, then two of MIB/2 MiB, and small ones
 *   rprog_range usable       valloc / pvalloc / memalign usable sizes,
 *                            against glibc's own functions
 *
 * Each prints what libc made visible (NULL or not), so the output with
 * and without the profiler must be the same, and "EXPECT site ao ab io ib"
 * lines (tests/integration/profsum.py) for what stays live at exit.
 */
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GIB ((size_t)1 << 30)
#define MIB ((size_t)1 << 20)

__attribute__((noinline)) static void *
site_big(size_t n)
{
	return malloc(n);
}

__attribute__((noinline)) static void *
site_four(size_t n)
{
	return malloc(n);
}

__attribute__((noinline)) static void *
site_cycle(size_t n)
{
	return malloc(n);
}

__attribute__((noinline)) static void *
site_limit(size_t n)
{
	return malloc(n);
}

static void *volatile keep[8];

static int
usable(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	if (!libc)
		libc = dlopen("libc.so.6", RTLD_NOW);
	void *(*g_valloc)(size_t) = (void *(*)(size_t))dlsym(libc, "valloc");
	void *(*g_pvalloc)(size_t) = (void *(*)(size_t))dlsym(libc, "pvalloc");
	void *(*g_memalign)(size_t, size_t) =
		(void *(*)(size_t, size_t))dlsym(libc, "memalign");
	size_t (*g_usable)(void *) = (size_t(*)(void *))dlsym(libc,
	                                                      "malloc_usable_size");
	void (*g_free)(void *) = (void (*)(void *))dlsym(libc, "free");
	if (!g_valloc || !g_pvalloc || !g_memalign || !g_usable || !g_free) {
		printf("no libc symbols\n");
		return 1;
	}
	size_t pg = (size_t)getpagesize();
	size_t sizes[] = {0, 1, 100, 4000, 4096, 4097, 10000, 70000, 600000};
	int bad = 0;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		for (int k = 0; k < 3; k++) {
			/* The interposed function (sampled or not at rate 1)
			 * against glibc's own, called directly. */
			void *p = k == 0 ? valloc(n) : k == 1 ? pvalloc(n)
			                                     : memalign(pg, n);
			void *g = k == 0 ? g_valloc(n) : k == 1 ? g_pvalloc(n)
			                                       : g_memalign(pg, n);
			const char *what = k == 0 ? "valloc" : k == 1 ? "pvalloc"
			                                             : "memalign";
			size_t u = p ? malloc_usable_size(p) : 0;
			size_t gu = g ? g_usable(g) : 0;
			/* pvalloc gives whole pages: at least n rounded up. */
			size_t want = k == 1 ? (n + pg - 1) / pg * pg : n;
			/* pvalloc: whole pages (glibc's chunk has slack past
			 * them: 8 bytes, or a page when mmap'd). */
			if (k == 1)
				gu = want;
			int ok = p && (uintptr_t)p % pg == 0 && u >= want && u >= gu;
			if (p)
				memset(p, 0xa5, u); /* all of it is the program's */
			printf("%s(%zu): usable_ok=%d\n", what, n, ok);
			if (!ok) {
				fprintf(stderr, "BAD %s(%zu): usable %zu, glibc %zu, "
				        "want >= %zu\n", what, n, u, gu, want);
				bad = 1;
			}
			free(p);
			g_free(g);
		}
	}
	return bad;
}

int
main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	const char *mode = argv[1];
	size_t a = argc > 2 ? strtoull(argv[2], NULL, 10) : 0;
	if (!strcmp(mode, "usable"))
		return usable();
	if (!strcmp(mode, "big")) {
		keep[0] = site_big(a * GIB);
		printf("big %zu GiB: %s\n", a, keep[0] ? "ok" : "NULL");
		if (keep[0])
			printf("EXPECT site_big 1 %zu 1 %zu\n", a * GIB, a * GIB);
		return 0;
	}
	if (!strcmp(mode, "four")) {
		int n = 0;
		for (int i = 0; i < 4; i++) {
			keep[i] = site_four(a * GIB);
			printf("four %d: %s\n", i, keep[i] ? "ok" : "NULL");
			n += keep[i] != NULL;
		}
		printf("EXPECT site_four %d %zu %d %zu\n", n, n * a * GIB, n,
		       n * a * GIB);
		return 0;
	}
	if (!strcmp(mode, "cycle")) {
		int n = 0;
		size_t total = 0;
		for (size_t i = 0; i < 6; i++) {
			void *p = site_cycle((a + i) * GIB);
			printf("cycle %zu GiB: %s\n", a + i, p ? "ok" : "NULL");
			if (p) {
				n++;
				total += (a + i) * GIB;
			}
			free(p);
		}
		printf("EXPECT site_cycle %d %zu 0 0\n", n, total);
		return 0;
	}
	if (!strcmp(mode, "limit")) {
		void *p = site_limit(a * MIB);
		printf("limit %zu MiB: %s\n", a, p ? "ok" : "NULL");
		free(p);
		keep[0] = site_limit(a / 2 * MIB);
		keep[1] = site_limit(a / 2 * MIB);
		printf("limit 2 x %zu MiB: %s %s\n", a / 2, keep[0] ? "ok" : "NULL",
		       keep[1] ? "ok" : "NULL");
		free(keep[0]);
		free(keep[1]);
		int fails = 0;
		for (int i = 0; i < 100000; i++) {
			void *q = malloc((size_t)(i % 4000) + 1);
			fails += !q;
			free(q);
		}
		printf("limit small: %d failed\n", fails);
		return 0;
	}
	return 2;
}
