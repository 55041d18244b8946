/*
 * prog_usdt.c: the otel_memory USDT probes seen from outside (issue 33).
 * Prints "READY", waits for a line on stdin (the tracer is attached),
 * then allocates 2,000 blocks of 1..4,000 bytes at site_usdt, frees every
 * other one, calls done_marker() (where the tracer stops) and prints
 *   TRUTH ALLOCS BYTES FREES
 * Nothing else allocates between the line and done_marker (read(2), not
 * stdio).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static __attribute__((noinline)) void *
site_usdt(size_t n)
{
	return malloc(n);
}

__attribute__((noinline)) void
done_marker(void)
{
	__asm__ volatile("" ::: "memory");
}

int
main(void)
{
	static void *keep[2000];
	char c;
	printf("READY\n");
	fflush(stdout);
	while (read(0, &c, 1) == 1 && c != '\n')
		;
	long long bytes = 0, frees = 0;
	for (int i = 0; i < 2000; i++) {
		size_t n = 1 + (size_t)(i * 7919) % 4000;
		keep[i] = site_usdt(n);
		bytes += (long long)n;
		if (i % 2) {
			free(keep[i]);
			keep[i] = NULL;
			frees++;
		}
	}
	done_marker();
	printf("TRUTH 2000 %lld %lld\n", bytes, frees);
	return 0;
}
