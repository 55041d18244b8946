/*
 * bench_delta.c: benchmark of the delta computer (heapprof_delta_*).
 *
 *   bench_delta [-n N] [--gzip] [--read] OLD NEW
 *       N (default 200) timed deltas: each iteration computes OLD then NEW
 *       on one reused computer and times the NEW call (steady state). Prints
 *       median/min per delta, MB/s of NEW's input, allocations per call
 *       (counted through the allocator hook), state bytes, output size and
 *       peak RSS of the process (inputs included). --read: the inputs stay
 *       in their files, read by heapprof_delta_compute_read through
 *       pread(2) (the page cache, not this process, holds them).
 *   bench_delta --gen R IN OUT_BEFORE OUT_AFTER
 *       writes IN replicated R times with distinct addresses (and location
 *       ids); OUT_AFTER has the alloc_* values of every third sample raised,
 *       so the pair has a real delta.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "heapprof.h"
#include "pb.h"
#include "pprof_dec.h"

static long n_allocs;

static void *
count_realloc(void *ctx, void *p, size_t old_size, size_t new_size)
{
	(void)ctx;
	(void)old_size;
	if (new_size == 0) {
		free(p);
		return NULL;
	}
	n_allocs++;
	return realloc(p, new_size);
}

static uint8_t *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(2);
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	uint8_t *p = malloc((size_t)n + 1);
	if (fread(p, 1, (size_t)n, f) != (size_t)n) {
		perror(path);
		exit(2);
	}
	fclose(f);
	*len = (size_t)n;
	return p;
}

static double
now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static size_t out_len;

static int
count_write(void *arg, const void *p, size_t n)
{
	(void)arg;
	(void)p;
	out_len += n;
	return 0;
}

/* ------------------------------------------------------------ generator */

static int
file_sink(void *ctx, const uint8_t *p, size_t n)
{
	return fwrite(p, 1, n, ctx) == n ? 0 : -5;
}

static void
copy_field(pb_writer *w, uint32_t num, const pprof_dec *d, const pprof_rec *r)
{
	heapprof__pb_bytes_field(w, num, d->buf + r->off, r->len);
}

static int
generate(int reps, const char *in, const char *out, int after)
{
	size_t len;
	uint8_t *buf = slurp(in, &len);
	pprof_dec d;
	heapprof__pprof_dec_init(&d, NULL, NULL);
	int rc = heapprof__pprof_dec_open(&d, buf, len);
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", in, heapprof_strerror(rc));
		return 1;
	}
	FILE *f = fopen(out, "wb");
	pb_writer w;
	heapprof__pb_init(&w, NULL, NULL, file_sink, f);
	uint64_t maxid = 0;
	for (size_t i = 0; i < d.nlocs; i++)
		if (d.locs[i].id > maxid)
			maxid = d.locs[i].id;
	for (size_t t = 0; t < d.ntypes; t++) {
		heapprof__pb_begin(&w, PPROF_SAMPLE_TYPE);
		heapprof__pb_uint_opt(&w, 1, d.types[t].type);
		heapprof__pb_uint_opt(&w, 2, d.types[t].unit);
		heapprof__pb_end(&w);
	}
	uint64_t ids[512];
	int64_t vals[16];
	size_t k = 0;
	for (int r = 0; r < reps; r++) {
		pprof_sample_iter it;
		pprof_sample s;
		heapprof__pprof_samples(&d, &it);
		while (heapprof__pprof_sample_next(&d, &it, &s) == 0) {
			size_t n = s.nlocations < 512 ? s.nlocations : 512;
			for (size_t i = 0; i < n; i++)
				ids[i] = s.location_ids[i] + (uint64_t)r * maxid;
			for (size_t t = 0; t < s.nvalues && t < 16; t++) {
				vals[t] = s.values[t];
				if (after && k % 3 == 0 &&
				    heapprof__pprof_string_eq(&d, d.types[t].type,
				                              t % 2 ? "alloc_space"
				                                    : "alloc_objects"))
					vals[t] += 1 + (int64_t)(k % 7);
			}
			k++;
			heapprof__pb_begin(&w, PPROF_SAMPLE);
			heapprof__pb_packed_u64(&w, 1, ids, n);
			heapprof__pb_packed_i64(&w, 2, vals, s.nvalues);
			for (size_t l = 0; l < s.nlabels; l++) {
				heapprof__pb_begin(&w, 3);
				heapprof__pb_uint_opt(&w, 1, s.labels[l].key);
				heapprof__pb_uint_opt(&w, 2, s.labels[l].str);
				heapprof__pb_uint_opt(&w, 3, (uint64_t)s.labels[l].num);
				heapprof__pb_uint_opt(&w, 4, s.labels[l].num_unit);
				heapprof__pb_end(&w);
			}
			heapprof__pb_end(&w);
		}
		for (size_t i = 0; i < d.nlocs; i++) {
			pprof_location l;
			heapprof__pprof_location(&d, i, &l);
			heapprof__pb_begin(&w, PPROF_LOCATION);
			heapprof__pb_uint_opt(&w, 1, l.id + (uint64_t)r * maxid);
			heapprof__pb_uint_opt(&w, 2, l.mapping_id);
			heapprof__pb_uint_opt(&w, 3,
			                      l.address + ((uint64_t)r << 40));
			for (size_t j = 0; j < l.nlines; j++) {
				heapprof__pb_begin(&w, 4);
				heapprof__pb_uint_opt(&w, 1, l.lines[j].function_id);
				heapprof__pb_uint_opt(&w, 2, (uint64_t)l.lines[j].line);
				heapprof__pb_end(&w);
			}
			heapprof__pb_end(&w);
		}
	}
	for (size_t i = 0; i < d.nmaps; i++)
		copy_field(&w, PPROF_MAPPING, &d, &d.maps[i]);
	for (size_t i = 0; i < d.nfuncs; i++)
		copy_field(&w, PPROF_FUNCTION, &d, &d.funcs[i]);
	heapprof__pb_uint_opt(&w, PPROF_TIME_NANOS,
	                      (uint64_t)d.time_nanos + (after ? 60000000000ull : 0));
	heapprof__pb_begin(&w, PPROF_PERIOD_TYPE);
	heapprof__pb_uint_opt(&w, 1, d.period_type.type);
	heapprof__pb_uint_opt(&w, 2, d.period_type.unit);
	heapprof__pb_end(&w);
	heapprof__pb_uint_opt(&w, PPROF_PERIOD, (uint64_t)d.period);
	for (size_t i = 0; i < d.nstrings; i++) {
		size_t l;
		const char *s = heapprof__pprof_string(&d, i, &l);
		heapprof__pb_bytes_field(&w, PPROF_STRING_TABLE, s, l);
	}
	rc = heapprof__pb_finish(&w);
	heapprof__pb_free(&w);
	fclose(f);
	heapprof__pprof_dec_free(&d);
	free(buf);
	return rc < 0;
}

/* ------------------------------------------------------------ benchmark */

/* An input: its bytes, or (--read) its file. */
typedef struct input {
	uint8_t *p;
	size_t len;
	int fd;
} input;

static long
pread_at(void *arg, uint64_t at, void *buf, size_t n)
{
	ssize_t r = pread(((const input *)arg)->fd, buf, n, (off_t)at);
	return r < 0 ? -errno : (long)r;
}

static int
delta_of(heapprof_delta *d, input *in, unsigned flags)
{
	if (in->fd >= 0)
		return heapprof_delta_compute_read(d, pread_at, in, flags,
		                                   count_write, NULL);
	return heapprof_delta_compute(d, in->p, in->len, flags, count_write,
	                              NULL);
}

static int
input_open(input *in, const char *path, int by_read)
{
	in->p = NULL;
	in->fd = -1;
	if (!by_read) {
		in->p = slurp(path, &in->len);
		return in->p ? 0 : -1;
	}
	in->fd = open(path, O_RDONLY);
	off_t end = in->fd < 0 ? -1 : lseek(in->fd, 0, SEEK_END);
	in->len = end < 0 ? 0 : (size_t)end;
	return end < 0 ? -1 : 0;
}

int
main(int argc, char **argv)
{
	int n = 200;
	unsigned flags = 0;
	int i = 1, by_read = 0;
	if (argc == 6 && !strcmp(argv[1], "--gen")) {
		int reps = atoi(argv[2]);
		return generate(reps, argv[3], argv[4], 0) ||
		       generate(reps, argv[3], argv[5], 1);
	}
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--gzip"))
			flags |= HEAPPROF_DELTA_GZIP;
		else if (!strcmp(argv[i], "--read"))
			by_read = 1;
		else
			break;
	}
	if (argc - i != 2 || n < 1) {
		fprintf(stderr, "usage: bench_delta [-n N] [--gzip] [--read] OLD NEW\n"
		                "       bench_delta --gen R IN OUT_BEFORE OUT_AFTER\n");
		return 2;
	}
	input a, b;
	if (input_open(&a, argv[i], by_read) < 0 ||
	    input_open(&b, argv[i + 1], by_read) < 0) {
		perror("bench_delta: input");
		return 1;
	}
	size_t lb = b.len;
	heapprof_delta_options opt = {0};
	opt.realloc_fn = count_realloc;
	heapprof_delta *d;
	if (heapprof_delta_new(&d, &opt) < 0)
		return 1;
	/* warm-up: state and scratch reach their size */
	for (int k = 0; k < 3; k++) {
		delta_of(d, &a, flags);
		delta_of(d, &b, flags);
	}
	double *t = malloc(sizeof(double) * (size_t)n);
	long allocs0 = n_allocs;
	for (int k = 0; k < n; k++) {
		int rc = delta_of(d, &a, flags);
		out_len = 0;
		double t0 = now();
		rc |= delta_of(d, &b, flags);
		t[k] = now() - t0;
		if (rc < 0) {
			fprintf(stderr, "delta: %s\n", heapprof_strerror(rc));
			return 1;
		}
	}
	double allocs = (double)(n_allocs - allocs0) / (2.0 * n);
	qsort(t, (size_t)n, sizeof(double), cmp_d);
	heapprof_delta_stats st;
	heapprof_delta_get_stats(d, &st);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double med = t[n / 2];
	printf("input %zu B, %d deltas%s%s: median %.3f ms, min %.3f ms, "
	       "%.0f MB/s, %.2f allocs/call, samples %zu in / %zu out, "
	       "output %zu B, state %.2f MB, keys %zu (%.0f B/key), "
	       "peak RSS %.1f MB\n",
	       lb, n, flags ? " (gzip out)" : "",
	       by_read ? " (read from the file)" : "", med * 1e3, t[0] * 1e3,
	       (double)lb / med / 1e6, allocs, st.last_samples_in,
	       st.last_samples_out, out_len, (double)st.state_bytes / 1e6,
	       st.keys, st.keys ? (double)st.state_bytes / (double)st.keys : 0.0,
	       (double)ru.ru_maxrss / 1024.0);
	heapprof_delta_free(d);
	free(t);
	free(a.p);
	free(b.p);
	return 0;
}
