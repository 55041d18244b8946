/*
 * bench_unwind.c: nanoseconds per stack capture (heapprof__stack_capture,
 * what a sampled malloc calls) of a 30-frame stack, with each unwinder in
 * the same run: dwarf (the default, unwind.c), libunwind (the opt-in,
 * unw_backtrace) and fp (frame pointers; this program has them, so all
 * three walk the same frames). Linked with the capture's stack.o and
 * unwind.o; defines the globals they read.
 *
 *   bench_unwind [CAPTURES] [ROUNDS]     (default 200000, 5)
 *
 * Prints, per unwinder, the frames captured and the median over the rounds
 * of ns per capture; for dwarf also the first capture (every rule a cache
 * miss: _dl_find_object and a CFI parse per frame).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collect.h"

__thread hp_tls heapprof__tls __attribute__((tls_model("initial-exec")));
hp_config heapprof__cfg = {.rate = 524288, .depth = HP_MAX_DEPTH};

/* stack.c's frame-pointer check may warn (the library's is in init.c). */
void
heapprof__warn(const char *msg)
{
	fprintf(stderr, "bench_unwind: %s\n", msg);
}

static long captures = 200000;
static int rounds = 5;
static volatile int sink;

static double
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static const char *const names[] = {"dwarf", "fp", "libunwind"};
static double results[3][16];
static int frames[3];
static double first_dwarf;

__attribute__((noinline)) static void
measure(int round)
{
	uint64_t out[HP_MAX_DEPTH];
	const char *only = getenv("BENCH_UNWIND_ONLY");
	for (int u = 0; u < 3; u++) {
		if (only && strcmp(only, names[u])) {
			results[u][round] = -1;
			continue;
		}
		heapprof__cfg.unwind = u;
		if (heapprof__stack_init(&heapprof__tls) != 0 || heapprof__cfg.unwind != u) {
			results[u][round] = -1;
			continue;
		}
		double t0 = now_ns();
		int n = heapprof__stack_capture(&heapprof__tls, 0, out, HP_MAX_DEPTH);
		double t1 = now_ns();
		if (u == HP_UNWIND_DWARF && round == 0)
			first_dwarf = t1 - t0;
		t0 = now_ns();
		for (long i = 0; i < captures; i++)
			n = heapprof__stack_capture(&heapprof__tls, 0, out,
			                            HP_MAX_DEPTH);
		results[u][round] = (now_ns() - t0) / (double)captures;
		frames[u] = n;
		if (getenv("BENCH_UNWIND_PRINT") && round == 0)
			for (int i = 0; i < n; i++)
				printf("%s %2d %#llx\n", names[u], i,
				       (unsigned long long)out[i]);
	}
}

/* 30 frames in all: measure, 24 of these, main and libc's three. */
__attribute__((noinline)) static void
rec(int depth, int round)
{
	if (depth == 0)
		measure(round);
	else
		rec(depth - 1, round);
	sink++; /* not a tail call */
}

int
main(int argc, char **argv)
{
	if (argc > 1)
		captures = atol(argv[1]);
	if (argc > 2)
		rounds = atoi(argv[2]);
	if (rounds < 1 || rounds > 16 || captures < 1)
		return 64;
	for (int r = 0; r < rounds; r++)
		rec(23, r);
	for (int u = 0; u < 3; u++) {
		if (results[u][0] < 0) {
			printf("%-9s not available\n", names[u]);
			continue;
		}
		qsort(results[u], (size_t)rounds, sizeof(double), cmp_double);
		printf("%-9s %2d frames  %7.1f ns per capture (median of %d "
		       "rounds, %.1f..%.1f)\n",
		       names[u], frames[u], results[u][rounds / 2], rounds,
		       results[u][0], results[u][rounds - 1]);
	}
	printf("dwarf first capture (all misses): %.0f ns\n", first_dwarf);
	return 0;
}
