/*
 * bench_exitsym.c: the exit dump's symbolization replayed on a saved
 * profile, so before/after figures come from the same PCs (a real dump's
 * PCs change with every run: the sampling is random). Each round does what
 * snapshot.c and the encoder do with a fresh symbol cache: every location
 * announced (heapprof__symcache_want, in address order), then looked up,
 * and each name read (strlen, as the encoder's demangler would). The files
 * are the profile's mappings, so the profile must come from this machine.
 *
 * usage: bench_exitsym PROFILE [ROUNDS]   (default 200)
 * prints: locations, names, page faults of the first round and per round
 * (getrusage), and the mean and best time of a round. Under callgrind,
 * --toggle-collect=bench_round counts the instructions of the rounds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "elffile.h"
#include "heapprof.h"
#include "pprof_dec.h"
#include "bench_profile.h"

static double
now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long
faults(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt + ru.ru_majflt;
}

typedef struct loc {
	uint64_t addr;
	long map;
} loc;

static int
by_addr(const void *a, const void *b)
{
	uint64_t x = ((const loc *)a)->addr, y = ((const loc *)b)->addr;
	return x < y ? -1 : x > y;
}

/* One round: announce, look up, read the names. Not inlined, so that
 * callgrind can count it alone. */
__attribute__((noinline)) size_t
bench_round(const loc *l, size_t n, const heapprof_mapping *ms)
{
	heapprof_symcache *c = heapprof__symcache_new();
	for (size_t i = 0; i < n; i++)
		heapprof__symcache_want(c, &ms[l[i].map], l[i].addr);
	size_t len = 0;
	for (size_t i = 0; i < n; i++) {
		const char *s = heapprof__symcache_lookup(c, &ms[l[i].map],
		                                          l[i].addr);
		len += s ? strlen(s) + 1 : 0;
	}
	heapprof__symcache_free(c);
	return len;
}

int
main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_exitsym PROFILE [ROUNDS]\n");
		return 2;
	}
	int rounds = argc > 2 ? atoi(argv[2]) : 200;
	pprof_dec d;
	uint8_t *buf;
	heapprof_mapping *ms;
	if (bench_load_profile("bench_exitsym", argv[1], &d, &buf, &ms) != 0)
		return 1;
	loc *l = calloc(d.nlocs + 1, sizeof(*l));
	size_t n = 0;
	for (size_t i = 0; i < d.nlocs; i++) {
		pprof_location pl;
		heapprof__pprof_location(&d, i, &pl);
		long mi = heapprof__pprof_find_mapping(&d, pl.mapping_id);
		if (mi >= 0)
			l[n++] = (loc){pl.address, mi};
	}
	qsort(l, n, sizeof(*l), by_addr);
	long f0 = faults();
	double t0 = now(), best = 1e9, sum = 0;
	size_t names = bench_round(l, n, ms);
	long first = faults() - f0;
	double t1 = now();
	for (int i = 1; i < rounds; i++) {
		double a = now();
		bench_round(l, n, ms);
		double b = now() - a;
		sum += b;
		best = b < best ? b : best;
	}
	long all = faults() - f0;
	printf("locations %zu, name bytes %zu; first round %.0f us, %ld page "
	       "faults; later rounds mean %.0f us, best %.0f us, %.1f faults\n",
	       n, names, (t1 - t0) * 1e6, first,
	       rounds > 1 ? sum / (rounds - 1) * 1e6 : 0.0,
	       rounds > 1 ? best * 1e6 : 0.0,
	       rounds > 1 ? (double)(all - first) / (rounds - 1) : 0.0);
	for (size_t i = 0; i < d.nmaps; i++) {
		free((char *)ms[i].file);
		free((char *)ms[i].build_id);
	}
	free(ms);
	free(l);
	heapprof__pprof_dec_free(&d);
	free(buf);
	return 0;
}
