/*
 * vmcost.c: what the kernel charges on this machine for the things a
 * short process pays per start, exit and fork: a system call, opening a
 * /proc file, a page fault (and a page made present without one), an
 * mmap, a fork. The per-process costs of
 * BENCHMARKS.md ("Cost per process") are counted in these units.
 *
 *   make build/bench/vmcost && build/bench/vmcost
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double
now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

int
main(void)
{
	enum { N = 20000, M = 2000 };
	double t = now_ns();
	for (int i = 0; i < N; i++)
		syscall(SYS_getpid);
	printf("getpid                        %7.0f ns\n", (now_ns() - t) / N);
	t = now_ns();
	for (int i = 0; i < M; i++) {
		char b[512];
		int fd = open("/proc/self/cmdline", O_RDONLY);
		if (fd >= 0) {
			if (read(fd, b, sizeof(b) - 1) < 0)
				return 1;
			close(fd);
		}
	}
	printf("/proc/self/cmdline open+read  %7.0f ns\n", (now_ns() - t) / M);
	size_t len = (size_t)4096 * M;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	t = now_ns();
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
	printf("anonymous page fault          %7.0f ns\n", (now_ns() - t) / M);
	munmap(p, len);
	/* The same pages made present by one madvise (range.c does so for
	 * the profiler's own blocks); EINVAL before Linux 5.14. */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	         -1, 0);
	if (p == MAP_FAILED)
		return 1;
	t = now_ns();
	int rc = madvise(p, len, 23 /* MADV_POPULATE_WRITE */);
	double pop = (now_ns() - t) / M;
	t = now_ns();
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
	if (rc == 0)
		printf("page by MADV_POPULATE_WRITE   %7.0f ns (then touched: %.0f ns)\n",
		       pop, (now_ns() - t) / M);
	else
		printf("MADV_POPULATE_WRITE           unknown to this kernel\n");
	munmap(p, len);
	t = now_ns();
	for (int i = 0; i < M; i++) {
		void *q = mmap(NULL, (size_t)4 << 20, PROT_NONE,
		               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		munmap(q, (size_t)4 << 20);
	}
	printf("mmap+munmap 4 MiB PROT_NONE   %7.0f ns\n", (now_ns() - t) / M);
	t = now_ns();
	for (int i = 0; i < 500; i++) {
		pid_t c = fork();
		if (c == 0)
			_exit(0);
		int st;
		waitpid(c, &st, 0);
	}
	printf("fork+_exit+wait               %7.0f ns\n", (now_ns() - t) / 500);
	return 0;
}
