/*
 * rprog_traps: page-fault traps (the software perf counter of page
 * faults, which counts traps and not pages a system call makes present)
 * taken by this thread during one phase, printed as "traps T":
 *
 *   rprog_traps samples N   N mallocs of 100 bytes, kept live, from the
 *                           process's first (run at HEAPPROF_RATE=1:
 *                           every one a sample)
 *   rprog_traps dump FILE   heapprof_dump_file(FILE) (looked up with
 *                           dlsym), after 50 samples
 *   rprog_traps sigdump 0   raise(SIGUSR2) and one malloc, in which a
 *                           profiler started with HEAPPROF_SIGNAL=USR2
 *                           writes a profile, on its own dump stack
 *
 * What the profiler's first touch of its own fresh pages costs: a trap is
 * 15-40 us on this project's VM, a page made present by madvise ~1 us.
 * "no counter" (status 3) where perf events are not allowed.
 */
#include <dlfcn.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int
counter(void)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.size = sizeof(a);
	a.config = PERF_COUNT_SW_PAGE_FAULTS;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}

static uint64_t
stop(int fd)
{
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	uint64_t v = 0;
	if (read(fd, &v, sizeof(v)) != sizeof(v))
		return UINT64_MAX;
	return v;
}

int
main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int fd = counter();
	if (fd < 0) {
		printf("no counter\n");
		return 3;
	}
	static void *keep[100000];
	int n = atoi(argv[2]);
	if (strcmp(argv[1], "dump") && (n < 0 || n > 100000))
		return 2;
	if (!strcmp(argv[1], "samples")) {
		memset(keep, 1, (size_t)n * sizeof(keep[0])); /* our own pages */
		ioctl(fd, PERF_EVENT_IOC_RESET, 0);
		ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
		for (int i = 0; i < n; i++)
			keep[i] = malloc(100);
		uint64_t t = stop(fd);
		for (int i = 0; i < n; i++)
			free(keep[i]);
		printf("traps %llu\n", (unsigned long long)t);
		return 0;
	}
	if (!strcmp(argv[1], "dump")) {
		int (*dump)(const char *) =
			(int (*)(const char *))dlsym(RTLD_DEFAULT, "heapprof_dump_file");
		if (!dump) {
			printf("no heapprof_dump_file\n");
			return 1;
		}
		for (int i = 0; i < 50; i++)
			keep[i] = malloc(100);
		ioctl(fd, PERF_EVENT_IOC_RESET, 0);
		ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
		int rc = dump(argv[2]);
		uint64_t t = stop(fd);
		printf("dump %d traps %llu\n", rc, (unsigned long long)t);
		return rc != 0;
	}
	if (!strcmp(argv[1], "sigdump")) {
		for (int i = 0; i < 50; i++)
			keep[i] = malloc(100);
		ioctl(fd, PERF_EVENT_IOC_RESET, 0);
		ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
		raise(SIGUSR2);
		keep[50] = malloc(100); /* the dump is taken here */
		uint64_t t = stop(fd);
		printf("traps %llu\n", (unsigned long long)t);
		return 0;
	}
	return 2;
}
