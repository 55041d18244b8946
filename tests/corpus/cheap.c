/*
 * cheap.c: a small C program whose heap the generated test corpus
 * (tests/corpus/gen.sh) profiles with other tools' profilers:
 *   cheap api PREFIX  gperftools' API (linked with -ltcmalloc):
 *                     HeapProfilerStart(PREFIX), three HeapProfilerDump
 *                     calls between allocation phases (PREFIX.000N.heap)
 *   cheap run         allocates and exits: gperftools' HEAPPROFILE under
 *                     LD_PRELOAD=libtcmalloc.so.4 writes the dump
 *   cheap je FILE     jemalloc's mallctl("prof.dump") into FILE, under
 *                     LD_PRELOAD=libjemalloc.so.2 and MALLOC_CONF=prof:true
 * Every allocation site is a separate function, so stacks differ.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *keep[4096];
static int nkeep;

__attribute__((noinline)) static void *site_small(size_t n)
{
	void *p = malloc(n);
	if (p)
		memset(p, 1, n);
	return p;
}

__attribute__((noinline)) static void *site_big(size_t n)
{
	void *p = malloc(n);
	if (p)
		memset(p, 2, n);
	return p;
}

__attribute__((noinline)) static void *site_calloc(size_t n)
{
	return calloc(n, 4);
}

__attribute__((noinline)) static void phase(int k)
{
	for (int i = 0; i < 400 && nkeep < 4096; i++)
		keep[nkeep++] = site_small(32 + (size_t)(i % 7) * 16 * k);
	for (int i = 0; i < k && nkeep < 4096; i++)
		keep[nkeep++] = site_big((size_t)1 << 20);
	for (int i = 0; i < 50 && nkeep < 4096; i++)
		keep[nkeep++] = site_calloc(1000 + (size_t)i);
	for (int i = 0; i < nkeep; i += 3) { /* some are freed */
		free(keep[i]);
		keep[i] = NULL;
	}
}

typedef void (*start_fn)(const char *);
typedef void (*dump_fn)(const char *);
typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (strcmp(argv[1], "api") == 0 && argc == 3) {
		start_fn start = (start_fn)dlsym(RTLD_DEFAULT, "HeapProfilerStart");
		dump_fn dump = (dump_fn)dlsym(RTLD_DEFAULT, "HeapProfilerDump");
		void (*stop)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "HeapProfilerStop");
		if (!start || !dump || !stop) {
			fprintf(stderr, "cheap: no gperftools heap profiler\n");
			return 1;
		}
		start(argv[2]);
		for (int k = 1; k <= 3; k++) {
			phase(k);
			dump("phase");
		}
		stop();
		return 0;
	}
	if (strcmp(argv[1], "run") == 0) {
		phase(1);
		phase(2);
		return 0;
	}
	if (strcmp(argv[1], "je") == 0 && argc == 3) {
		mallctl_fn m = (mallctl_fn)dlsym(RTLD_DEFAULT, "mallctl");
		const char *f = argv[2];
		if (!m) {
			fprintf(stderr, "cheap: not running under jemalloc\n");
			return 1;
		}
		phase(1);
		phase(2);
		int rc = m("prof.dump", NULL, NULL, &f, sizeof(f));
		if (rc != 0)
			fprintf(stderr, "cheap: prof.dump: %d (jemalloc built without --enable-prof?)\n", rc);
		return rc != 0;
	}
	return 2;
}
