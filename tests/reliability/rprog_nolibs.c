/*
 * rprog_nolibs: prints which of libz and libm /proc/self/maps shows
 * ("start 0 0": neither), allocates 32 MiB in blocks of 1 KiB .. 64 KiB
 * (at the default rate some 60 samples in many buckets), frees half, and
 * prints it again ("end 0 0"). The program links neither: under the
 * profiler, sampling must not load them, nor a dump inside malloc (a
 * dlopen there waits for the loader's lock, which a thread inside dlopen
 * holds while it waits for the profiler's): they are loaded by the first
 * dump outside malloc, or at start-up when dumps may run inside it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
libs(const char *when)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		exit(2);
	char line[4096];
	int z = 0, m = 0;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "/libz.so"))
			z = 1;
		if (strstr(line, "/libm.so"))
			m = 1;
	}
	fclose(f);
	printf("%s %d %d\n", when, z, m);
	fflush(stdout);
}

int
main(void)
{
	libs("start");
	enum { N = 2048 };
	static void *keep[N];
	size_t total = 0;
	for (int i = 0; i < N && total < ((size_t)32 << 20); i++) {
		size_t n = (size_t)1024 << (i % 7);
		keep[i] = malloc(n);
		if (keep[i])
			memset(keep[i], 1, 16);
		total += n;
	}
	for (int i = 0; i < N; i += 2)
		free(keep[i]);
	libs("end");
	return 0;
}
