/*
 * bench_profile.h: reading a pprof profile and its mappings, for the
 * symbolization benchmarks (bench_symbolize.c, bench_exitsym.c). Header
 * only: each benchmark is one file.
 */
#ifndef HEAPPROF_BENCH_PROFILE_H
#define HEAPPROF_BENCH_PROFILE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapprof.h"
#include "pprof_dec.h"

/* String i of the profile, copied (NULL if empty). */
static char *
bench_str(const pprof_dec *d, uint32_t i)
{
	size_t n;
	const char *p = heapprof__pprof_string(d, i, &n);
	return n ? strndup(p, n) : NULL;
}

/* Reads `path` whole into *bufp (freed by the caller after d) and opens it
 * in *d; *maps gets its mappings (d->nmaps of them). 0, or 1 after saying
 * why on stderr (`who` names the program). */
static int
bench_load_profile(const char *who, const char *path, pprof_dec *d,
                   uint8_t **bufp, heapprof_mapping **maps)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return 1;
	}
	size_t cap = 1 << 20, len = 0, r;
	uint8_t *buf = malloc(cap);
	while (buf && (r = fread(buf + len, 1, cap - len, f)) > 0)
		if ((len += r) == cap)
			buf = realloc(buf, cap *= 2);
	fclose(f);
	*bufp = buf;
	heapprof__pprof_dec_init(d, NULL, NULL);
	if (!buf || heapprof__pprof_dec_open(d, buf, len) < 0) {
		fprintf(stderr, "%s: cannot read %s\n", who, path);
		return 1;
	}
	heapprof_mapping *ms = calloc(d->nmaps + 1, sizeof(*ms));
	if (!ms)
		return 1;
	for (size_t i = 0; i < d->nmaps; i++) {
		pprof_mapping m;
		heapprof__pprof_mapping(d, i, &m);
		ms[i] = (heapprof_mapping){m.memory_start, m.memory_limit,
		                           m.file_offset, bench_str(d, m.filename),
		                           bench_str(d, m.build_id)};
	}
	*maps = ms;
	return 0;
}

#endif
