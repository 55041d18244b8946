/*
 * bench_merge.c: benchmark of heapprof_merge() in process.
 *
 *   bench_merge [-n N] [--gzip] FILE...
 *       reads the files once, then merges them N times (default 20) into a
 *       counting sink; prints median and min wall time per merge, median
 *       CPU time (robust on a busy machine), MB/s of input (by median wall),
 *       output size and the peak RSS of the process (inputs included).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "heapprof.h"

static int
count(void *arg, const void *p, size_t n)
{
	(void)p;
	*(size_t *)arg += n;
	return 0;
}

static void *
slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(2);
	}
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	rewind(f);
	void *p = malloc(len > 0 ? (size_t)len : 1);
	if (!p || fread(p, 1, (size_t)len, f) != (size_t)len) {
		perror(path);
		exit(2);
	}
	fclose(f);
	*n = (size_t)len;
	return p;
}

static double
now_ms(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	int n = 20, i = 1;
	unsigned flags = 0;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--gzip"))
			flags |= HEAPPROF_MERGE_GZIP;
		else
			break;
	}
	if (i >= argc || n < 1) {
		fprintf(stderr, "usage: bench_merge [-n N] [--gzip] FILE...\n");
		return 2;
	}
	size_t nin = (size_t)(argc - i), total = 0;
	heapprof_merge_input *in = calloc(nin, sizeof(*in));
	for (size_t k = 0; k < nin; k++) {
		in[k].data = slurp(argv[i + (int)k], &in[k].len);
		in[k].scale = 1;
		total += in[k].len;
	}
	double *t = calloc((size_t)n, sizeof(double));
	double *cpu = calloc((size_t)n, sizeof(double));
	size_t out = 0;
	for (int k = 0; k < n; k++) {
		out = 0;
		double t0 = now_ms(CLOCK_MONOTONIC);
		double c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
		int rc = heapprof_merge(in, nin, flags, count, &out);
		t[k] = now_ms(CLOCK_MONOTONIC) - t0;
		cpu[k] = now_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
		if (rc) {
			fprintf(stderr, "merge: %s\n", heapprof_strerror(rc));
			return 1;
		}
	}
	qsort(t, (size_t)n, sizeof(double), cmp_d);
	qsort(cpu, (size_t)n, sizeof(double), cmp_d);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double med = t[n / 2];
	printf("median %.3f ms, min %.3f ms, cpu %.3f ms, %.1f MB/s, out %zu bytes, "
	       "peak RSS %.1f MB\n",
	       med, t[0], cpu[n / 2], total / 1e6 / (med / 1e3), out,
	       ru.ru_maxrss / 1024.0);
	return 0;
}
