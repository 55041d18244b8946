/*
 * prog_sleep.c: allocates, then sleeps for the given milliseconds in short
 * naps (so periodic and signal-triggered dumps can happen), optionally
 * sending itself a signal first. usage: prog_sleep MS [SIGNAL_NUMBER]
 * Prints "done" on success: signals must not disturb the program.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void *volatile sink;

int
main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 1000;
	for (int i = 0; i < 1000; i++)
		sink = malloc(4096);
	if (argc > 2)
		raise(atoi(argv[2]));
	struct timespec ts = {0, 10 * 1000 * 1000};
	for (long t = 0; t < ms; t += 10) {
		nanosleep(&ts, NULL);
		free(sink = malloc(65536));
	}
	puts("done");
	return 0;
}
