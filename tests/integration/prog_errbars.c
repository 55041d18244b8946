/*
 * prog_errbars.c: known heaps for `heapprof top --error` (tests/integration/
 * top_error.sh). Every block is written to (touched), so it is resident.
 *
 *   sites        keeps, until exit, at four leaf functions:
 *                  site_small  200000 x 200 B    (p ~ 0.0004 at 512 KiB)
 *                  site_mid    2000 x 16 KiB     (p ~ 0.03)
 *                  site_big    300 x 128 KiB     (p ~ 0.22)
 *                  site_huge   40 x 1 MiB        (p ~ 0.86: (1-p) matters)
 *                and prints "TRUTH site bytes" for each
 *   memory PATH  keeps 64 MiB (site_mid x 4096) and 20 MiB (site_huge x
 *                20) of heap, and 32 MiB of touched anonymous memory
 *                outside the heap (mmap), reads its VmRSS from
 *                /proc/self/status and at once writes a profile to PATH
 *                (heapprof_dump_file); prints "VMRSS bytes" (read just
 *                before the dump)
 *   storm N      a second (idle) thread, so glibc's malloc takes its arena
 *                locks; then malloc/free for N milliseconds while SIGUSR1
 *                arrives every millisecond (a dump in the handler must not
 *                ask the allocator for its statistics: the interrupted
 *                malloc holds the lock they take); prints "done"
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

extern int heapprof_dump_file(const char *path) __attribute__((weak));

static void *volatile keep;

static void *
touch(void *p, size_t n)
{
	if (!p) {
		perror("malloc");
		exit(1);
	}
	memset(p, 0x5a, n);
	return p;
}

/* Each block's pointer is kept in a list made of the blocks themselves,
 * so nothing else of the program's is allocated. */
static void
keep_block(void **b)
{
	*b = keep;
	keep = b;
}

__attribute__((noinline)) static void
site_small(size_t n)
{
	for (size_t i = 0; i < n; i++)
		keep_block(touch(malloc(200), 200));
}

__attribute__((noinline)) static void
site_mid(size_t n)
{
	for (size_t i = 0; i < n; i++)
		keep_block(touch(malloc(16384), 16384));
}

__attribute__((noinline)) static void
site_big(size_t n)
{
	for (size_t i = 0; i < n; i++)
		keep_block(touch(malloc(131072), 131072));
}

__attribute__((noinline)) static void
site_huge(size_t n)
{
	for (size_t i = 0; i < n; i++)
		keep_block(touch(malloc(1048576), 1048576));
}

static long long
vmrss(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long long kb = -1;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = atoll(line + 6);
	if (f)
		fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

static void *
idle(void *arg)
{
	pause();
	return arg;
}

static long long
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int
storm(long ms)
{
	pthread_t t;
	pthread_create(&t, NULL, idle, NULL);
	timer_t tm;
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = SIGUSR1;
	if (timer_create(CLOCK_MONOTONIC, &sev, &tm) != 0) {
		perror("timer_create");
		return 1;
	}
	struct itimerspec its = {{0, 1000000}, {0, 1000000}};
	timer_settime(tm, 0, &its, NULL);
	void *slot[64] = {0};
	unsigned x = 1;
	long long end = now_ms() + ms;
	while (now_ms() < end)
		for (int i = 0; i < 10000; i++) {
			x = x * 1103515245u + 12345u;
			unsigned k = (x >> 8) % 64;
			free(slot[k]);
			slot[k] = malloc(16 + (x >> 16) % 4000);
		}
	memset(&its, 0, sizeof(its));
	timer_settime(tm, 0, &its, NULL);
	printf("done\n");
	fflush(stdout);
	_exit(0);
}

int
main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "storm"))
		return storm(atol(argv[2]));
	if (argc >= 2 && !strcmp(argv[1], "sites")) {
		site_small(200000);
		site_mid(2000);
		site_big(300);
		site_huge(40);
		printf("TRUTH site_small %d\nTRUTH site_mid %d\n"
		       "TRUTH site_big %d\nTRUTH site_huge %d\n",
		       200000 * 200, 2000 * 16384, 300 * 131072, 40 * 1048576);
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "memory")) {
		if (!heapprof_dump_file) {
			fprintf(stderr, "not profiled\n");
			return 2;
		}
		site_mid(4096);
		site_huge(20);
		void *m = mmap(NULL, 32 << 20, PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		memset(m, 1, 32 << 20);
		long long rss = vmrss();
		int rc = heapprof_dump_file(argv[2]);
		printf("VMRSS %lld\n", rss);
		return rc != 0;
	}
	fprintf(stderr, "usage: prog_errbars sites | memory PATH\n");
	return 2;
}
