/*
 * rprog_pid1: run as the first process of a PID namespace (unshare -pf),
 * where the kernel ignores a signal whose action is the default one, so
 * SIGTERM and SIGINT do not end it. It keeps a block from before_signals,
 * sends itself SIGTERM and SIGINT, then keeps a block from after_signals
 * and exits 0 ("alive" on stdout). rel_pid1.sh checks that the profiler
 * changed nothing of that and that the last profile saw after_signals.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *keep[2];

static __attribute__((noinline)) void *
before_signals(void)
{
	void *p = malloc(3 << 20);
	if (p)
		memset(p, 1, 4096);
	return p;
}

static __attribute__((noinline)) void *
after_signals(void)
{
	void *p = malloc(5 << 20);
	if (p)
		memset(p, 2, 4096);
	return p;
}

int
main(void)
{
	keep[0] = before_signals();
	raise(SIGTERM);
	kill(getpid(), SIGINT);
	usleep(20000);
	keep[1] = after_signals();
	printf("alive %d\n", (int)getpid());
	return keep[0] && keep[1] ? 0 : 1;
}
