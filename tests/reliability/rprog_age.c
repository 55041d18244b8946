/*
 * rprog_age.c: a server that leaks slowly among short-lived churn, for
 * rel_age.sh. For SECS seconds (argv[1], default 6), every 20 ms: the
 * request handler allocates a few short-lived buffers (churn_small,
 * churn_big: freed within about 0.2 s) and one that it leaks
 * (leak_session: 1 KiB kept for ever). At the end the exit dump writes
 * the profile; it prints the number of leaked blocks.
 *   rprog_age SECS DIR   the same, and after SECS seconds it creates
 *                        DIR/aged and runs on until DIR/stop exists
 *                        (10 minutes at most): a test asks its endpoint
 *                        for a profile in between.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RING 10

static void *ring[RING][3];

__attribute__((noinline)) static void *
churn_small(void)
{
	return memset(malloc(4096), 1, 4096);
}

__attribute__((noinline)) static void *
churn_big(void)
{
	return memset(malloc(65536), 2, 65536);
}

void *leaked[100000]; /* global: the compiler must keep the leak */
size_t nleaked;

__attribute__((noinline)) static void
leak_session(void)
{
	void *p = malloc(1024);
	memset(p, 3, 1024);
	if (nleaked < sizeof(leaked) / sizeof(leaked[0]))
		leaked[nleaked++] = p; /* kept: the leak */
}

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 6;
	const char *dir = argc > 2 ? argv[2] : NULL;
	char aged[4096], stop[4096];
	if (dir) {
		snprintf(aged, sizeof(aged), "%s/aged", dir);
		snprintf(stop, sizeof(stop), "%s/stop", dir);
	}
	double t0 = now_s();
	size_t tick = 0;
	int told = 0;
	for (;;) {
		double t = now_s() - t0;
		if (t >= secs) {
			if (!dir || access(stop, F_OK) == 0 || t > 600)
				break;
			if (!told) {
				FILE *f = fopen(aged, "w");
				if (f)
					fclose(f);
				told = 1;
			}
		}
		size_t k = tick % RING;
		for (int j = 0; j < 3; j++)
			free(ring[k][j]);
		ring[k][0] = churn_small();
		ring[k][1] = churn_big();
		ring[k][2] = churn_small();
		leak_session();
		tick++;
		struct timespec d = {0, 20 * 1000 * 1000};
		nanosleep(&d, NULL);
	}
	printf("%zu\n", nleaked);
	return 0;
}
