/*
 * rprog_nolibs: prints which of libz and libm /proc/self/maps shows
 * ("start 0 0": neither), allocates 32 MiB in blocks of 1 KiB .. 64 KiB
 * (at the default rate some 60 samples in many buckets), frees half, and
 * prints it again ("end 0 0"). The program links neither: under the
 * profiler, sampling must not load them, nor a dump inside malloc (a
 * dlopen there waits for the loader's lock, which a thread inside dlopen
 * holds while it waits for the profiler's): they are loaded by the first
 * dump outside malloc, or at start-up when dumps may run inside it.
 * With "raise" it sends itself SIGUSR2 after "start". With "pthread" or
 * "c11" it starts and joins a thread after "start" (pthread_create, or
 * C11 thrd_create, which glibc runs without the PLT's pthread_create) and
 * prints "thread Z M": a profiled process loads both there (src/so/libs.c),
 * one that will never dump on its own neither. "nofd" is "pthread" with
 * every file descriptor in use (RLIMIT_NOFILE reached) during the
 * pthread_create, closed after it: the load there fails, and the exit
 * dump must still load them and write the profile.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
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
	int nofd = argc > 1 && !strcmp(argv[1], "nofd");
	if (nofd || (argc > 1 && !strcmp(argv[1], "pthread"))) {
		enum { MAXFD = 64 };
		int fds[MAXFD], n = 0, fd;
		struct rlimit was, r;
		if (nofd) {
			if (getrlimit(RLIMIT_NOFILE, &was))
				return 3;
			r = was;
			r.rlim_cur = MAXFD;
			if (setrlimit(RLIMIT_NOFILE, &r))
				return 3;
			while (n < MAXFD && (fd = open("/dev/null", O_RDONLY)) >= 0)
				fds[n++] = fd;
		}
		pthread_t t;
		int rc = pthread_create(&t, NULL, thread_main, NULL);
		if (nofd) {
			while (n)
				close(fds[--n]);
			setrlimit(RLIMIT_NOFILE, &was);
		}
		if (rc || pthread_join(t, NULL))
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
