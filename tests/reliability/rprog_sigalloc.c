/*
 * rprog_sigalloc.c: a program whose SIGUSR1 handler allocates and frees
 * (as many programs' handlers do, async-signal-safe or not), while the
 * main thread allocates. rel_sigalloc.sh delivers the signal from gdb at
 * chosen instructions of the profiler's first sample. Prints "done K"
 * (K: handler runs) after N allocations. Usage: rprog_sigalloc N
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *volatile sink;
static volatile sig_atomic_t runs;

static void
on_usr1(int sig)
{
	(void)sig;
	for (int i = 0; i < 4; i++) {
		char *p = malloc(24 + (size_t)i * 1000);
		if (p)
			p[0] = 1;
		sink = p;
		free(p);
	}
	runs++;
}

int
main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < n; i++) {
		char *p = malloc(16 + (size_t)(i % 50) * 40);
		if (p)
			p[0] = 1;
		sink = p;
		free(p);
	}
	printf("done %d\n", (int)runs);
	return 0;
}
