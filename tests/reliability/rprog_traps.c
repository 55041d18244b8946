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
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../trapcount.h"

int
main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int fd = trap_counter();
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
		trap_start(fd);
		for (int i = 0; i < n; i++)
			keep[i] = malloc(100);
		uint64_t t = trap_stop(fd);
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
		trap_start(fd);
		int rc = dump(argv[2]);
		uint64_t t = trap_stop(fd);
		printf("dump %d traps %llu\n", rc, (unsigned long long)t);
		return rc != 0;
	}
	if (!strcmp(argv[1], "sigdump")) {
		for (int i = 0; i < 50; i++)
			keep[i] = malloc(100);
		trap_start(fd);
		raise(SIGUSR2);
		keep[50] = malloc(100); /* the dump is taken here */
		uint64_t t = trap_stop(fd);
		printf("traps %llu\n", (unsigned long long)t);
		return 0;
	}
	return 2;
}
