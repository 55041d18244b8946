/*
 * rprog_nolibs: prints which of libz and libm /proc/self/maps shows
 * ("start 0 0": neither), allocates 32 MiB in blocks of 1 KiB .. 64 KiB
 * (at the default rate some 60 samples in many buckets), frees half, and
 * prints it again ("end 0 0"). The program links neither: under the
 * profiler, sampling must not load them, nor a dump inside malloc (a
 * dlopen there waits for the loader's lock, which a thread inside dlopen
 * holds while it waits for the profiler's). No dump loads them either:
 * libheapprof.so has zlib inside and does not use libm.
 * With "raise" it sends itself SIGUSR2 after "start". With "pthread" or
 * "c11" it starts and joins a thread after "start" (pthread_create, or
 * C11 thrd_create, which glibc runs without the PLT's pthread_create) and
 * prints "thread Z M" (the first thread once loaded both).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <threads.h>
#include <pthread.h>

/* A C++-mangled name (alloc_site(unsigned long)), so that the profile has
 * one for the encoder to demangle. */
void *alloc_site(size_t n) __asm__("_Z10alloc_sitem");
__attribute__((noinline)) void *
alloc_site(size_t n)
{
	return malloc(n);
}

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

static void *
thread_main(void *arg)
{
	return arg;
}

static int
thread_main_c11(void *arg)
{
	(void)arg;
	return 0;
}

int
main(int argc, char **argv)
{
	libs("start");
	if (argc > 1 && !strcmp(argv[1], "pthread")) {
		pthread_t t;
		if (pthread_create(&t, NULL, thread_main, NULL) ||
		    pthread_join(t, NULL))
			return 3;
		libs("thread");
	}
	if (argc > 1 && !strcmp(argv[1], "c11")) {
		thrd_t t;
		if (thrd_create(&t, thread_main_c11, NULL) != thrd_success ||
		    thrd_join(t, NULL) != thrd_success)
			return 3;
		libs("thread");
	}
	/* "raise": a dump signal now (HEAPPROF_SIGNAL=USR2: a dump in the
	 * handler). */
	if (argc > 1 && !strcmp(argv[1], "raise")) {
		for (int i = 0; i < 64; i++) /* certain samples at rate 1 */
			free(alloc_site(100));
		raise(SIGUSR2);
	}
	enum { N = 2048 };
	static void *keep[N];
	size_t total = 0;
	for (int i = 0; i < N && total < ((size_t)32 << 20); i++) {
		size_t n = (size_t)1024 << (i % 7);
		keep[i] = alloc_site(n);
		if (keep[i])
			memset(keep[i], 1, 16);
		total += n;
	}
	for (int i = 0; i < N; i += 2)
		free(keep[i]);
	libs("end");
	return 0;
}
