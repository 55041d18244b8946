/*
 * prog_phases.c: allocates in phases separated by sleeps (so that periodic
 * dumps fall between them), frees some, and prints the truth for the whole
 * run as an EXPECT line. usage: prog_phases PHASES MS_BETWEEN
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void *keep[100000];
static int nkeep;

__attribute__((noinline)) static void
site_phase(int phase, long *ao, long *ab, long *fo, long *fb)
{
	for (int i = 0; i < 200 + phase * 50; i++) {
		size_t n = 1000 + (size_t)phase * 100;
		char *p = malloc(n);
		p[0] = 1;
		*ao += 1, *ab += (long)n;
		if (i % 3 == 0) {
			free(p);
			*fo += 1, *fb += (long)n;
		} else if (nkeep < 100000) {
			keep[nkeep++] = p;
		}
	}
}

int
main(int argc, char **argv)
{
	int phases = argc > 1 ? atoi(argv[1]) : 4;
	long ms = argc > 2 ? atol(argv[2]) : 700;
	long ao = 0, ab = 0, fo = 0, fb = 0;
	for (int k = 0; k < phases; k++) {
		site_phase(k, &ao, &ab, &fo, &fb);
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
		nanosleep(&ts, NULL);
	}
	printf("EXPECT site_phase %ld %ld %ld %ld\n", ao, ab, ao - fo, ab - fb);
	return 0;
}
