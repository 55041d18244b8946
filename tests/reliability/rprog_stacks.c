/*
 * rprog_stacks [N]: allocates and frees from N (default 30) distinct call
 * stacks (recursion depths 1..N), three sizes each, and exits. Under
 * HEAPPROF_RATE=1 every allocation is sampled: N*3 buckets, a process with
 * a few dozen stacks as most of a build's are. rel_cost.sh counts its page
 * faults (through rprog_execfaults) against no profiler.
 */
#include <stdlib.h>

static __attribute__((noinline)) void *
down(int d, size_t size)
{
	void *p = d > 1 ? down(d - 1, size) : malloc(size);
	__asm__ volatile("" : : "r"(p) : "memory"); /* no tail call */
	return p;
}

int
main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 30;
	for (int k = 0; k < 3; k++)
		for (int d = 1; d <= n; d++)
			free(down(d, (size_t)(48 + 32 * k)));
	return 0;
}
